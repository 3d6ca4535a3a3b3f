/* SPDX-License-Identifier: Apache-2.0 */
/* module.c - modules, libraries, kernels and launches of the driver API.
 *
 * An image is turned into a whole fatbin (common/cuimage.c) and parsed here
 * as the runtime frontend parses its registered fatbins (common/fatbin.c):
 * kernelParams is an array of pointers without sizes, so the parameter
 * buffer a launch sends is laid out from the kernel's KPARAM_INFO, and the
 * daemon, which parsed the same image, checks it again.
 *
 * A CUlibrary is a module loaded at once (CUDA may load lazily; the effect
 * is the same), and a CUkernel is the same object as the CUfunction it
 * yields: CUDA lets a CUkernel be passed wherever a CUfunction is expected. */
#include "allocs.h"
#include "cuimage.h"
#include "devprop.h"
#include "driver.h"
#include "launchattr.h"
#include "fatbin.h"
#include "managed.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#define XGPU_ALIAS(name) __attribute__((alias(#name)))
#define MODULE_MAGIC 0x786d6f64u  /* "xmod" */
#define FUNC_MAGIC 0x7866756eu    /* "xfun" */
#define LIBRARY_MAGIC 0x786c6962u /* "xlib" */
#define EXTRA_MAX 64              /* entries of cuLaunchKernel's extra we read */

struct drv_func;

struct CUmod_st {
	uint32_t magic;
	xgpu_handle_t remote;
	unsigned generation; /* xgpu_fork_generation remote belongs to */
	struct xgpu_fatbin_info info;
	struct drv_func *funcs; /* resolved so far, freed with the module */
	/* The image, to load again in a forked child (its own channel): the
	 * program's (checked against hash before use) or our own conversion. */
	const uint8_t *image;
	size_t len;
	uint64_t hash;
	uint8_t *owned;
	/* Its __managed__ variables mapped here (host addresses; dev too when
	 * they are one), unmapped with it. Under module_lock. */
	struct {
		uint64_t host, dev;
	} * mvars;
	uint32_t nmvars, capmvars;
	struct CUmod_st *prev, *next; /* loaded_modules */
};

/* One answer of the daemon to an occupancy query of a function. */
struct occ_memo {
	int block_size;
	size_t dynamic_smem;
	unsigned flags;
	int blocks; /* 0: this slot is empty (a real answer of 0 is not kept) */
};
#define OCC_MEMOS 4

struct drv_func {
	uint32_t magic;
	struct CUmod_st *mod;
	const struct xgpu_kernel_info *kinfo;
	xgpu_handle_t remote;
	unsigned generation;
	struct drv_func *next;
	/* The last occupancy answers (occ_lock): cuBLAS and cuDNN ask for the
	 * same kernel and block size at every call, two round trips per PyTorch
	 * training step. The answer depends only on the function, its attributes
	 * and the channel's one device, so it is kept until cuFuncSetAttribute. */
	struct occ_memo occ[OCC_MEMOS];
	unsigned occ_next;
	unsigned occ_gen; /* counts cuFuncSetAttribute calls */
};
static pthread_mutex_t occ_lock = PTHREAD_MUTEX_INITIALIZER;

struct CUlib_st {
	uint32_t magic;
	struct CUmod_st *mod;
	struct CUlib_st *prev, *next; /* libraries, as a driver keeps them */
};

/* Every module and library loaded and not unloaded. NVIDIA's libraries load
 * theirs and never unload them (cuBLASLt and cuDNN drop their handles,
 * expecting the driver to own what they loaded until the process ends, as
 * NVIDIA's does); so do these lists, which also keep them visible to a leak
 * checker. */
static pthread_mutex_t loaded_lock = PTHREAD_MUTEX_INITIALIZER;
static struct CUlib_st *libraries;
static struct CUmod_st *loaded_modules;

/* LIST_INSERT and LIST_REMOVE for the two lists, under loaded_lock. */
#define LOADED_INSERT(head, e)                                                                               \
	do {                                                                                                 \
		pthread_mutex_lock(&loaded_lock);                                                            \
		(e)->prev = NULL;                                                                            \
		(e)->next = (head);                                                                          \
		if (head)                                                                                    \
			(head)->prev = (e);                                                                  \
		(head) = (e);                                                                                \
		pthread_mutex_unlock(&loaded_lock);                                                          \
	} while (0)
#define LOADED_REMOVE(head, e)                                                                               \
	do {                                                                                                 \
		pthread_mutex_lock(&loaded_lock);                                                            \
		if ((e)->prev)                                                                               \
			(e)->prev->next = (e)->next;                                                         \
		else                                                                                         \
			(head) = (e)->next;                                                                  \
		if ((e)->next)                                                                               \
			(e)->next->prev = (e)->prev;                                                         \
		pthread_mutex_unlock(&loaded_lock);                                                          \
	} while (0)

static pthread_mutex_t module_lock = PTHREAD_MUTEX_INITIALIZER;
/* Held while a forked child loads its parent's modules again. */
static pthread_mutex_t refork_lock = PTHREAD_MUTEX_INITIALIZER;

static uint64_t image_hash(const uint8_t *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */
	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return h;
}

static bool valid_module(CUmodule m)
{
	return m && m->magic == MODULE_MAGIC;
}

static struct drv_func *as_func(const void *f)
{
	const struct drv_func *fn = f;
	return fn && fn->magic == FUNC_MAGIC ? (struct drv_func *)fn : NULL;
}

/* The channel with a current context, and the function behind handle f. */
static CUresult client_and_func(const void *handle, struct xgpu_client **c, struct drv_func **f)
{
	CUresult r = xgpu_drv_client_ctx(c);
	if (r)
		return r;
	*f = as_func(handle);
	return *f ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

/* Modules belong to the current context; libraries (CUDA 12) to none, and
 * NVIDIA's runtime loads them before it makes a context current. The
 * daemon's side is the channel's one context either way. */
static CUresult load(CUmodule *out, const void *image, bool needs_context)
{
	struct xgpu_client *c;
	if (!out || !image)
		return CUDA_ERROR_INVALID_VALUE;
	CUresult r = needs_context ? xgpu_drv_client_ctx(&c) : xgpu_drv_client(&c);
	if (r)
		return r;
	struct xgpu_cuimage img;
	char why[160];
	if (xgpu_cuimage_read(image, XGPU_MAX_MODULE_BYTES, &img, why, sizeof why) < 0) {
		xgpu_fe_warn_once(why, "cannot load a module: %s", why);
		return CUDA_ERROR_INVALID_IMAGE;
	}
	CUmodule m = calloc(1, sizeof *m);
	if (!m) {
		free(img.owned);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	if (xgpu_fatbin_parse(img.fatbin, img.len, &m->info, why, sizeof why) < 0) {
		xgpu_fe_warn_once(why, "cannot read a module's image: %s", why);
		free(img.owned);
		free(m);
		return CUDA_ERROR_INVALID_IMAGE;
	}
	struct xgpu_req_MODULE_LOAD req = {0};
	struct xgpu_rsp_MODULE_LOAD rsp;
	struct xgpu_rpc rpc = xgpu_rpc_MODULE_LOAD(&req, &rsp);
	rpc.out = img.fatbin;
	rpc.out_len = img.len;
	r = xgpu_drv_result(xgpu_rpc(c, &rpc));
	if (r) {
		free(img.owned);
		xgpu_fatbin_free(&m->info);
		free(m);
		return r;
	}
	m->magic = MODULE_MAGIC;
	m->remote = rsp.module;
	m->generation = xgpu_fork_generation;
	m->image = img.fatbin;
	m->len = img.len;
	m->hash = image_hash(img.fatbin, img.len);
	m->owned = img.owned;
	LOADED_INSERT(loaded_modules, m);
	*out = m;
	return CUDA_SUCCESS;
}

/* The daemon's handle for m on this process's channel. A forked child has a
 * channel of its own (as with the runtime frontend), so a module its parent
 * loaded is loaded again there, from the image if the program still has
 * it unchanged: read with process_vm_readv, which fails instead of
 * faulting when the memory is gone. */
static CUresult module_remote(struct xgpu_client *c, CUmodule m, xgpu_handle_t *out)
{
	CUresult r = CUDA_SUCCESS;
	pthread_mutex_lock(&refork_lock);
	if (m->generation != xgpu_fork_generation) {
		uint8_t *copy = malloc(m->len);
		struct iovec local = {copy, m->len}, remote = {(void *)m->image, m->len};
		if (!copy) {
			r = CUDA_ERROR_OUT_OF_MEMORY;
		} else if (process_vm_readv(getpid(), &local, 1, &remote, 1, 0) != (ssize_t)m->len ||
			   image_hash(copy, m->len) != m->hash) {
			xgpu_fe_warn_once("refork",
					  "a module loaded before fork() cannot be used in the child: "
					  "its image is no longer in memory; load it again in the child");
			r = CUDA_ERROR_INVALID_HANDLE;
		} else {
			struct xgpu_req_MODULE_LOAD req = {0};
			struct xgpu_rsp_MODULE_LOAD rsp;
			struct xgpu_rpc rpc = xgpu_rpc_MODULE_LOAD(&req, &rsp);
			rpc.out = copy;
			rpc.out_len = m->len;
			r = xgpu_drv_result(xgpu_rpc(c, &rpc));
			if (!r) {
				m->remote = rsp.module;
				m->generation = xgpu_fork_generation;
			}
		}
		free(copy);
	}
	*out = m->remote;
	pthread_mutex_unlock(&refork_lock);
	return r;
}

/* The daemon's handle for f, resolved again in a forked child. */
static CUresult func_remote(struct xgpu_client *c, struct drv_func *f, xgpu_handle_t *out)
{
	pthread_mutex_lock(&refork_lock);
	bool stale = f->generation != xgpu_fork_generation;
	pthread_mutex_unlock(&refork_lock);
	if (stale) {
		xgpu_handle_t module;
		CUresult r = module_remote(c, f->mod, &module);
		if (r)
			return r;
		struct xgpu_req_MODULE_GET_FUNCTION req = {.module = module};
		struct xgpu_rsp_MODULE_GET_FUNCTION rsp;
		struct xgpu_rpc rpc = xgpu_rpc_MODULE_GET_FUNCTION(&req, &rsp);
		rpc.out = f->kinfo->name;
		rpc.out_len = strlen(f->kinfo->name) + 1;
		r = xgpu_drv_result(xgpu_rpc(c, &rpc));
		if (r)
			return r;
		pthread_mutex_lock(&refork_lock);
		f->remote = rsp.func;
		f->generation = xgpu_fork_generation;
		pthread_mutex_unlock(&refork_lock);
	}
	pthread_mutex_lock(&refork_lock);
	*out = f->remote;
	pthread_mutex_unlock(&refork_lock);
	return CUDA_SUCCESS;
}

CUresult cuModuleLoadData(CUmodule *module, const void *image)
{
	return load(module, image, true);
}

CUresult cuModuleLoadDataEx(CUmodule *module, const void *image, unsigned int numOptions,
			    CUjit_option *options, void **optionValues)
{
	/* JIT options tune or report a PTX compile the daemon's driver does;
	 * none changes what the module contains. */
	return load(module, image, true);
}

CUresult cuModuleLoadFatBinary(CUmodule *module, const void *fatCubin)
{
	return load(module, fatCubin, true);
}

static CUresult unload(CUmodule m)
{
	struct xgpu_client *c;
	CUresult r = xgpu_drv_client(&c);
	if (r)
		return r;
	if (!valid_module(m))
		return CUDA_ERROR_INVALID_HANDLE;
	/* A module of the parent's, never loaded again here, has nothing to
	 * unload on this channel. */
	if (m->generation == xgpu_fork_generation) {
		struct xgpu_req_MODULE_UNLOAD req = {.module = m->remote};
		struct xgpu_rsp_MODULE_UNLOAD rsp;
		r = xgpu_drv_result(xgpu_call_MODULE_UNLOAD(c, &req, &rsp));
	}
	pthread_mutex_lock(&module_lock);
	for (struct drv_func *f = m->funcs, *next; f; f = next) {
		next = f->next;
		f->magic = 0;
		free(f);
	}
	for (uint32_t i = 0; i < m->nmvars; i++) {
		xgpu_managed_unmap_var(m->mvars[i].host);
		if (m->mvars[i].host == m->mvars[i].dev)
			xgpu_alloc_del(m->mvars[i].dev, XGPU_ALLOC_MANAGED);
	}
	free(m->mvars);
	pthread_mutex_unlock(&module_lock);
	LOADED_REMOVE(loaded_modules, m);
	m->magic = 0;
	xgpu_fatbin_free(&m->info);
	free(m->owned);
	free(m);
	return r;
}

CUresult cuModuleUnload(CUmodule hmod)
{
	return unload(hmod);
}

static CUresult name_rpc(struct xgpu_client *c, struct xgpu_rpc *rpc, const char *name)
{
	rpc->out = name;
	rpc->out_len = strnlen(name, XGPU_MAX_NAME_BYTES) + 1;
	if (rpc->out_len > XGPU_MAX_NAME_BYTES)
		return CUDA_ERROR_NOT_FOUND;
	return xgpu_drv_result(xgpu_rpc(c, rpc));
}

static CUresult get_function(struct drv_func **out, CUmodule m, const char *name, bool needs_context)
{
	struct xgpu_client *c;
	if (!out || !name)
		return CUDA_ERROR_INVALID_VALUE;
	CUresult r = needs_context ? xgpu_drv_client_ctx(&c) : xgpu_drv_client(&c);
	if (r)
		return r;
	if (!valid_module(m))
		return CUDA_ERROR_INVALID_HANDLE;
	const struct xgpu_kernel_info *k = xgpu_fatbin_find(&m->info, name);
	if (!k)
		return CUDA_ERROR_NOT_FOUND;
	pthread_mutex_lock(&module_lock);
	for (struct drv_func *f = m->funcs; f; f = f->next)
		if (f->kinfo == k) {
			*out = f;
			pthread_mutex_unlock(&module_lock);
			return CUDA_SUCCESS;
		}
	pthread_mutex_unlock(&module_lock);
	struct xgpu_req_MODULE_GET_FUNCTION req = {0};
	r = module_remote(c, m, &req.module);
	if (r)
		return r;
	struct xgpu_rsp_MODULE_GET_FUNCTION rsp;
	struct xgpu_rpc rpc = xgpu_rpc_MODULE_GET_FUNCTION(&req, &rsp);
	r = name_rpc(c, &rpc, name);
	if (r)
		return r;
	/* Both sides parsed the same image; disagreement means one of us would
	 * marshal the wrong bytes. */
	if (rsp.param_bytes != k->param_bytes || rsp.nparams != k->nparams)
		return CUDA_ERROR_INVALID_IMAGE;
	struct drv_func *f = calloc(1, sizeof *f);
	if (!f)
		return CUDA_ERROR_OUT_OF_MEMORY;
	*f = (struct drv_func){.magic = FUNC_MAGIC,
			       .mod = m,
			       .kinfo = k,
			       .remote = rsp.func,
			       .generation = xgpu_fork_generation};
	pthread_mutex_lock(&module_lock);
	f->next = m->funcs;
	m->funcs = f;
	pthread_mutex_unlock(&module_lock);
	*out = f;
	return CUDA_SUCCESS;
}

CUresult cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name)
{
	struct drv_func *f = NULL;
	if (!hfunc)
		return CUDA_ERROR_INVALID_VALUE;
	CUresult r = get_function(&f, hmod, name, true);
	if (!r)
		*hfunc = (CUfunction)f;
	return r;
}

CUresult cuModuleGetFunctionCount(unsigned int *count, CUmodule mod)
{
	struct xgpu_client *c;
	if (!count)
		return CUDA_ERROR_INVALID_VALUE;
	CUresult r = xgpu_drv_client_ctx(&c);
	if (r)
		return r;
	if (!valid_module(mod))
		return CUDA_ERROR_INVALID_HANDLE;
	*count = mod->info.nkernels;
	return CUDA_SUCCESS;
}

/* The module's kernels in the order of its image, each resolved as
 * cuModuleGetFunction resolves it by name. */
CUresult cuModuleEnumerateFunctions(CUfunction *functions, unsigned int numFunctions, CUmodule mod)
{
	if (!functions)
		return CUDA_ERROR_INVALID_VALUE;
	unsigned count;
	CUresult r = cuModuleGetFunctionCount(&count, mod);
	if (r)
		return r;
	if (numFunctions > count)
		numFunctions = count;
	for (unsigned i = 0; i < numFunctions && !r; i++)
		r = cuModuleGetFunction(&functions[i], mod, mod->info.kernels[i].name);
	return r;
}

/* cuModuleGetGlobal without its context check: managed variables are
 * asked for without one. *managed (may be NULL): whether the daemon's driver
 * says the variable is __managed__. */
static CUresult module_get_global(struct xgpu_client *c, CUdeviceptr *dptr, size_t *bytes, CUmodule hmod,
				  const char *name, bool *managed)
{
	if (!valid_module(hmod))
		return CUDA_ERROR_INVALID_HANDLE;
	struct xgpu_req_MODULE_GET_GLOBAL req = {0};
	CUresult r = module_remote(c, hmod, &req.module);
	if (r)
		return r;
	struct xgpu_rsp_MODULE_GET_GLOBAL rsp;
	struct xgpu_rpc rpc = xgpu_rpc_MODULE_GET_GLOBAL(&req, &rsp);
	r = name_rpc(c, &rpc, name);
	if (r == CUDA_ERROR_INVALID_VALUE)
		r = CUDA_ERROR_NOT_FOUND;
	if (!r) {
		if (dptr)
			*dptr = rsp.dptr;
		if (bytes)
			*bytes = rsp.size;
		if (managed)
			*managed = rsp.managed != 0;
	}
	return r;
}

/* A __managed__ variable at device address global: mapped into this process
 * as cuLibraryGetManaged maps it (the host can read and write it after a
 * synchronisation, as with cuMemAllocManaged); *dptr is its address here. */
static CUresult map_managed_var(struct xgpu_client *c, CUmodule mod, CUdeviceptr global, size_t size,
				CUdeviceptr *dptr)
{
	void *host;
	CUresult r = xgpu_drv_result(xgpu_managed_map_var(c, global, size, &host));
	if (r)
		return r;
	xgpu_alloc_add_managed_var(global, host, size);
	uint64_t h = (uint64_t)(uintptr_t)host;
	pthread_mutex_lock(&module_lock);
	bool known = false;
	for (uint32_t i = 0; i < mod->nmvars && !known; i++)
		known = mod->mvars[i].host == h;
	if (!known && mod->nmvars == mod->capmvars) {
		uint32_t cap = mod->capmvars ? mod->capmvars * 2 : 4;
		void *v = realloc(mod->mvars, cap * sizeof *mod->mvars);
		if (v) {
			mod->mvars = v;
			mod->capmvars = cap;
		}
	}
	/* (Out of memory: the variable stays mapped after the unload.) */
	if (!known && mod->nmvars < mod->capmvars) {
		mod->mvars[mod->nmvars].host = h;
		mod->mvars[mod->nmvars++].dev = global;
	}
	pthread_mutex_unlock(&module_lock);
	*dptr = (CUdeviceptr)h;
	return CUDA_SUCCESS;
}

/* A __managed__ variable asked for here (a driver-API program's module, as
 * libNVVM's uvmlite sample does) is managed memory as through the runtime. */
CUresult cuModuleGetGlobal(CUdeviceptr *dptr, size_t *bytes, CUmodule hmod, const char *name)
{
	struct xgpu_client *c;
	if (!name || (!dptr && !bytes))
		return CUDA_ERROR_INVALID_VALUE;
	CUresult r = xgpu_drv_client_ctx(&c);
	if (r)
		return r;
	CUdeviceptr global;
	size_t size;
	bool managed = false;
	if ((r = module_get_global(c, &global, &size, hmod, name, &managed)))
		return r;
	if (managed && (r = map_managed_var(c, hmod, global, size, &global)))
		return r;
	if (dptr)
		*dptr = global;
	if (bytes)
		*bytes = size;
	return CUDA_SUCCESS;
}

/* Modules are sent whole when loaded, and functions resolved on first
 * request, which is what CUDA's lazy mode (its default since 12.2) promises
 * the program; CUDA_MODULE_LOADING=EAGER is reported as asked. */
CUresult cuModuleGetLoadingMode(CUmoduleLoadingMode *mode)
{
	if (!mode)
		return CUDA_ERROR_INVALID_VALUE;
	struct xgpu_client *c;
	CUresult r = xgpu_drv_client(&c);
	if (r)
		return r;
	const char *env = getenv("CUDA_MODULE_LOADING");
	*mode = env && !strcmp(env, "EAGER") ? CU_MODULE_EAGER_LOADING : CU_MODULE_LAZY_LOADING;
	return CUDA_SUCCESS;
}

/* ---- libraries ---------------------------------------------------------- */

static bool valid_library(CUlibrary l)
{
	return l && l->magic == LIBRARY_MAGIC;
}

CUresult cuLibraryLoadData(CUlibrary *library, const void *code, CUjit_option *jitOptions,
			   void **jitOptionsValues, unsigned int numJitOptions,
			   CUlibraryOption *libraryOptions, void **libraryOptionValues,
			   unsigned int numLibraryOptions)
{
	if (!library)
		return CUDA_ERROR_INVALID_VALUE;
	CUlibrary l = calloc(1, sizeof *l);
	if (!l)
		return CUDA_ERROR_OUT_OF_MEMORY;
	CUresult r = load(&l->mod, code, false);
	if (r) {
		free(l);
		return r;
	}
	l->magic = LIBRARY_MAGIC;
	LOADED_INSERT(libraries, l);
	*library = l;
	return CUDA_SUCCESS;
}

CUresult cuLibraryUnload(CUlibrary library)
{
	if (!valid_library(library))
		return CUDA_ERROR_INVALID_HANDLE;
	CUresult r = unload(library->mod);
	LOADED_REMOVE(libraries, library);
	library->magic = 0;
	free(library);
	return r;
}

CUresult cuLibraryGetModule(CUmodule *pMod, CUlibrary library)
{
	if (!pMod)
		return CUDA_ERROR_INVALID_VALUE;
	if (!valid_library(library))
		return CUDA_ERROR_INVALID_HANDLE;
	*pMod = library->mod;
	return CUDA_SUCCESS;
}

CUresult cuLibraryGetKernel(CUkernel *pKernel, CUlibrary library, const char *name)
{
	struct drv_func *f = NULL;
	if (!pKernel)
		return CUDA_ERROR_INVALID_VALUE;
	if (!valid_library(library))
		return CUDA_ERROR_INVALID_HANDLE;
	CUresult r = get_function(&f, library->mod, name, false);
	if (!r)
		*pKernel = (CUkernel)f;
	return r;
}

CUresult cuLibraryGetGlobal(CUdeviceptr *dptr, size_t *bytes, CUlibrary library, const char *name)
{
	if (!valid_library(library))
		return CUDA_ERROR_INVALID_HANDLE;
	return cuModuleGetGlobal_v2(dptr, bytes, library->mod, name);
}

/* A __managed__ variable, as NVIDIA's runtime asks for it to give host code
 * its address: mapped into this process by frontend/channel/managed.c, at the
 * device's address where it can be (then the two are one pointer). */
CUresult cuLibraryGetManaged(CUdeviceptr *dptr, size_t *bytes, CUlibrary library, const char *name)
{
	if (!name)
		return CUDA_ERROR_INVALID_VALUE;
	if (!valid_library(library))
		return CUDA_ERROR_INVALID_HANDLE;
	struct xgpu_client *c;
	CUresult r = xgpu_drv_client(&c);
	if (r)
		return r;
	CUdeviceptr global;
	size_t size;
	if ((r = module_get_global(c, &global, &size, library->mod, name, NULL)) ||
	    (r = map_managed_var(c, library->mod, global, size, &global)))
		return r;
	if (dptr)
		*dptr = global;
	if (bytes)
		*bytes = size;
	return CUDA_SUCCESS;
}

CUresult cuKernelGetFunction(CUfunction *pFunc, CUkernel kernel)
{
	if (!pFunc)
		return CUDA_ERROR_INVALID_VALUE;
	struct drv_func *f = as_func(kernel);
	if (!f)
		return CUDA_ERROR_INVALID_HANDLE;
	*pFunc = (CUfunction)f;
	return CUDA_SUCCESS;
}

/* ---- functions ---------------------------------------------------------- */

CUresult cuFuncGetAttribute(int *pi, CUfunction_attribute attrib, CUfunction hfunc)
{
	struct xgpu_client *c;
	if (!pi)
		return CUDA_ERROR_INVALID_VALUE;
	struct drv_func *f;
	CUresult r = client_and_func(hfunc, &c, &f);
	if (r)
		return r;
	struct xgpu_req_FUNC_GET_ATTRIBUTE req = {.attr = attrib};
	if ((r = func_remote(c, f, &req.func)))
		return r;
	struct xgpu_rsp_FUNC_GET_ATTRIBUTE rsp;
	r = xgpu_drv_result(xgpu_call_FUNC_GET_ATTRIBUTE(c, &req, &rsp));
	if (!r)
		*pi = rsp.value;
	return r;
}

CUresult cuFuncSetAttribute(CUfunction hfunc, CUfunction_attribute attrib, int value)
{
	struct xgpu_client *c;
	struct drv_func *f;
	CUresult r = client_and_func(hfunc, &c, &f);
	if (r)
		return r;
	struct xgpu_req_FUNC_SET_ATTRIBUTE req = {.attr = attrib, .value = value};
	if ((r = func_remote(c, f, &req.func)))
		return r;
	struct xgpu_rsp_FUNC_SET_ATTRIBUTE rsp;
	r = xgpu_drv_result(xgpu_call_FUNC_SET_ATTRIBUTE(c, &req, &rsp));
	/* Shared memory sizes and carve-outs change the occupancy: forget it
	 * whatever the daemon answered, and keep no answer of a query that
	 * was under way meanwhile. */
	pthread_mutex_lock(&occ_lock);
	memset(f->occ, 0, sizeof f->occ);
	f->occ_gen++;
	pthread_mutex_unlock(&occ_lock);
	return r;
}

/* Cache configuration is a hint Hopper ignores, as the runtime frontend
 * treats it (cudaFuncSetCacheConfig). */
CUresult cuFuncSetCacheConfig(CUfunction hfunc, CUfunc_cache config)
{
	if (!as_func(hfunc))
		return CUDA_ERROR_INVALID_HANDLE;
	return (unsigned)config <= CU_FUNC_CACHE_PREFER_EQUAL ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* A CUkernel is its CUfunction here, on the channel's one device; dev
 * names which device's copy the program means, and must be a device. */
static CUresult kernel_device(CUdevice dev)
{
	int n;
	CUresult r = cuDeviceGetCount(&n);
	return r ? r : dev >= 0 && dev < n ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

CUresult cuKernelGetAttribute(int *pi, CUfunction_attribute attrib, CUkernel kernel, CUdevice dev)
{
	CUresult r = kernel_device(dev);
	return r ? r : cuFuncGetAttribute(pi, attrib, (CUfunction)kernel);
}

CUresult cuKernelSetAttribute(CUfunction_attribute attrib, int val, CUkernel kernel, CUdevice dev)
{
	CUresult r = kernel_device(dev);
	return r ? r : cuFuncSetAttribute((CUfunction)kernel, attrib, val);
}

CUresult cuKernelSetCacheConfig(CUkernel kernel, CUfunc_cache config, CUdevice dev)
{
	CUresult r = kernel_device(dev);
	return r ? r : cuFuncSetCacheConfig((CUfunction)kernel, config);
}

CUresult cuFuncGetName(const char **name, CUfunction hfunc)
{
	if (!name)
		return CUDA_ERROR_INVALID_VALUE;
	struct drv_func *f = as_func(hfunc);
	if (!f)
		return CUDA_ERROR_INVALID_HANDLE;
	*name = f->kinfo->name;
	return CUDA_SUCCESS;
}

CUresult cuKernelGetName(const char **name, CUkernel kernel)
{
	return cuFuncGetName(name, (CUfunction)kernel);
}

CUresult cuFuncGetParamInfo(CUfunction func, size_t paramIndex, size_t *paramOffset, size_t *paramSize)
{
	struct drv_func *f = as_func(func);
	if (!f)
		return CUDA_ERROR_INVALID_HANDLE;
	if (paramIndex >= f->kinfo->nparams || (!paramOffset && !paramSize))
		return CUDA_ERROR_INVALID_VALUE;
	if (paramOffset)
		*paramOffset = f->kinfo->params[paramIndex].offset;
	if (paramSize)
		*paramSize = f->kinfo->params[paramIndex].size;
	return CUDA_SUCCESS;
}

CUresult cuKernelGetParamInfo(CUkernel kernel, size_t paramIndex, size_t *paramOffset, size_t *paramSize)
{
	return cuFuncGetParamInfo((CUfunction)kernel, paramIndex, paramOffset, paramSize);
}

CUresult cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int *numBlocks, CUfunction func, int blockSize,
							      size_t dynamicSMemSize, unsigned int flags)
{
	struct xgpu_client *c;
	if (!numBlocks)
		return CUDA_ERROR_INVALID_VALUE;
	struct drv_func *f;
	CUresult r = client_and_func(func, &c, &f);
	if (r)
		return r;
	struct xgpu_req_OCCUPANCY req = {
	    .block_size = blockSize, .dynamic_smem = dynamicSMemSize, .flags = flags};
	if ((r = func_remote(c, f, &req.func)))
		return r;
	pthread_mutex_lock(&occ_lock);
	unsigned gen = f->occ_gen;
	for (unsigned i = 0; i < OCC_MEMOS; i++) {
		const struct occ_memo *m = &f->occ[i];
		if (m->blocks > 0 && m->block_size == blockSize && m->dynamic_smem == dynamicSMemSize &&
		    m->flags == flags) {
			*numBlocks = m->blocks;
			pthread_mutex_unlock(&occ_lock);
			return CUDA_SUCCESS;
		}
	}
	pthread_mutex_unlock(&occ_lock);
	struct xgpu_rsp_OCCUPANCY rsp;
	r = xgpu_drv_result(xgpu_call_OCCUPANCY(c, &req, &rsp));
	if (!r) {
		*numBlocks = rsp.blocks;
		pthread_mutex_lock(&occ_lock);
		if (f->occ_gen == gen)
			f->occ[f->occ_next++ % OCC_MEMOS] = (struct occ_memo){.block_size = blockSize,
									      .dynamic_smem = dynamicSMemSize,
									      .flags = flags,
									      .blocks = rsp.blocks};
		pthread_mutex_unlock(&occ_lock);
	}
	return r;
}

/* The dynamic shared memory each of numBlocks blocks of blockSize threads
 * may have on one multiprocessor: its shared memory split between them, less
 * what the hardware reserves per block and the kernel's static share, within
 * the per-block maximum. */
CUresult cuOccupancyAvailableDynamicSMemPerBlock(size_t *dynamicSmemSize, CUfunction func, int numBlocks,
						 int blockSize)
{
	if (!dynamicSmemSize || numBlocks <= 0 || blockSize <= 0)
		return CUDA_ERROR_INVALID_VALUE;
	const struct xgpu_device_info *di;
	CUresult r = xgpu_drv_devinfo(&di);
	if (r)
		return r;
	int static_smem = 0;
	if ((r = cuFuncGetAttribute(&static_smem, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, func)))
		return r;
	int per_sm = 0, reserved = 0, optin = 0, threads_per_sm = 0;
	CUdevice dev = 0;
	if ((r = cuDeviceGetAttribute(&per_sm, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR,
				      dev)) ||
	    (r = cuDeviceGetAttribute(&reserved, CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK,
				      dev)) ||
	    (r = cuDeviceGetAttribute(&optin, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, dev)) ||
	    (r = cuDeviceGetAttribute(&threads_per_sm, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR,
				      dev)))
		return r;
	int64_t avail = 0;
	if ((int64_t)numBlocks * blockSize <= threads_per_sm) {
		avail = per_sm / numBlocks - reserved;
		if (avail > optin)
			avail = optin;
		avail -= static_smem;
	}
	*dynamicSmemSize = avail > 0 ? (size_t)avail : 0;
	return CUDA_SUCCESS;
}

/* Clusters that fit on the device at once: the blocks that fit per
 * multiprocessor over all of them, in clusters of the launch's size (an
 * upper bound: a cluster must also fit within one GPC). */
CUresult cuOccupancyMaxActiveClusters(int *numClusters, CUfunction func, const CUlaunchConfig *config)
{
	if (!numClusters || !config || (config->numAttrs && !config->attrs))
		return CUDA_ERROR_INVALID_VALUE;
	uint64_t cluster = 1;
	for (unsigned i = 0; i < config->numAttrs; i++)
		if (config->attrs[i].id == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION) {
			const CUlaunchAttributeValue *v = &config->attrs[i].value;
			cluster = (uint64_t)v->clusterDim.x * v->clusterDim.y * v->clusterDim.z;
		}
	uint64_t threads = (uint64_t)config->blockDimX * config->blockDimY * config->blockDimZ;
	if (!cluster || !threads || threads > INT32_MAX)
		return CUDA_ERROR_INVALID_VALUE;
	int per_sm = 0, sms = 0;
	CUresult r = cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(&per_sm, func, (int)threads,
									  config->sharedMemBytes, 0);
	if (!r)
		r = cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0);
	if (!r)
		*numClusters = (int)((uint64_t)per_sm * (uint64_t)sms / cluster);
	return r;
}

/* The largest cluster at least one of which fits: the kernel's compile-time
 * or required shape where it has one, else 8 blocks (16 where it allows
 * non-portable sizes), bounded by the blocks that fit on the device at once
 * (0 when none does). */
CUresult cuOccupancyMaxPotentialClusterSize(int *clusterSize, CUfunction func, const CUlaunchConfig *config)
{
	if (!clusterSize || !config || (config->numAttrs && !config->attrs))
		return CUDA_ERROR_INVALID_VALUE;
	uint64_t threads = (uint64_t)config->blockDimX * config->blockDimY * config->blockDimZ;
	if (!threads || threads > INT32_MAX)
		return CUDA_ERROR_INVALID_VALUE;
	int req[3] = {0, 0, 0}, nonportable = 0, can = 0, per_sm = 0, sms = 0;
	CUresult r = CUDA_SUCCESS;
	for (int i = 0; i < 3 && !r; i++)
		r = cuFuncGetAttribute(
		    &req[i], (CUfunction_attribute)(CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH + i), func);
	if (!r)
		r = cuFuncGetAttribute(&nonportable, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED,
				       func);
	if (!r)
		r = cuDeviceGetAttribute(&can, CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH, 0);
	if (!r)
		r = cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(&per_sm, func, (int)threads,
									 config->sharedMemBytes, 0);
	if (!r)
		r = cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0);
	if (r)
		return r;
	if (!can)
		return CUDA_ERROR_NOT_SUPPORTED;
	uint64_t fit = (uint64_t)(per_sm > 0 ? per_sm : 0) * (uint64_t)(sms > 0 ? sms : 0);
	uint64_t most = nonportable ? XGPU_CLUSTER_MAX_NONPORTABLE : XGPU_CLUSTER_MAX_PORTABLE;
	if (req[0] > 0 && req[1] > 0 && req[2] > 0) {
		most = (uint64_t)req[0] * (uint64_t)req[1] * (uint64_t)req[2];
		*clusterSize = (int)(most <= fit ? most : 0);
	} else
		*clusterSize = (int)(most <= fit ? most : fit);
	return CUDA_SUCCESS;
}

CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int *numBlocks, CUfunction func, int blockSize,
						     size_t dynamicSMemSize)
{
	return cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(numBlocks, func, blockSize,
								    dynamicSMemSize, 0);
}

/* The block size with the most resident threads per multiprocessor, as
 * CUDA's own search does it: every multiple of the warp size up to the
 * kernel's (and the caller's) limit, largest first, each one occupancy query;
 * the dynamic shared memory of each size from the callback where one is
 * given. */
CUresult cuOccupancyMaxPotentialBlockSizeWithFlags(int *minGridSize, int *blockSize, CUfunction func,
						   CUoccupancyB2DSize blockSizeToDynamicSMemSize,
						   size_t dynamicSMemSize, int blockSizeLimit,
						   unsigned int flags)
{
	if (!minGridSize || !blockSize)
		return CUDA_ERROR_INVALID_VALUE;
	int max_threads = 0, warp = 0, sms = 0;
	CUdevice dev;
	CUresult r = cuFuncGetAttribute(&max_threads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, func);
	if (!r)
		r = cuCtxGetDevice(&dev);
	if (!r)
		r = cuDeviceGetAttribute(&warp, CU_DEVICE_ATTRIBUTE_WARP_SIZE, dev);
	if (!r)
		r = cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev);
	if (r)
		return r;
	if (warp <= 0)
		warp = 32;
	int limit = max_threads;
	if (blockSizeLimit > 0 && blockSizeLimit < limit)
		limit = blockSizeLimit;
	int best_threads = 0, best_size = 0, best_blocks = 0;
	for (int bs = limit / warp * warp; bs > 0; bs -= warp) {
		size_t smem = blockSizeToDynamicSMemSize ? blockSizeToDynamicSMemSize(bs) : dynamicSMemSize;
		int blocks = 0;
		r = cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(&blocks, func, bs, smem, flags);
		if (r)
			return r;
		if (blocks * bs > best_threads) {
			best_threads = blocks * bs;
			best_size = bs;
			best_blocks = blocks;
		}
		if (best_threads == limit / warp * warp * best_blocks && best_size == limit / warp * warp)
			break; /* the largest size already fills its blocks */
	}
	*blockSize = best_size;
	*minGridSize = best_blocks * sms;
	return CUDA_SUCCESS;
}

CUresult cuOccupancyMaxPotentialBlockSize(int *minGridSize, int *blockSize, CUfunction func,
					  CUoccupancyB2DSize blockSizeToDynamicSMemSize,
					  size_t dynamicSMemSize, int blockSizeLimit)
{
	return cuOccupancyMaxPotentialBlockSizeWithFlags(
	    minGridSize, blockSize, func, blockSizeToDynamicSMemSize, dynamicSMemSize, blockSizeLimit, 0);
}

/* ---- launches ----------------------------------------------------------- */

/* The parameter buffer from cuLaunchKernel's extra array: BUFFER_POINTER
 * and a pointer to its BUFFER_SIZE, up to CU_LAUNCH_PARAM_END. */
static CUresult params_from_extra(void **extra, const void **buf, size_t *size)
{
	*buf = NULL;
	*size = SIZE_MAX;
	for (unsigned i = 0;; i += 2) {
		if (i >= EXTRA_MAX)
			return CUDA_ERROR_INVALID_VALUE;
		void *key = extra[i];
		if (key == CU_LAUNCH_PARAM_END)
			break;
		if (key == CU_LAUNCH_PARAM_BUFFER_POINTER)
			*buf = extra[i + 1];
		else if (key == CU_LAUNCH_PARAM_BUFFER_SIZE)
			*size = extra[i + 1] ? *(size_t *)extra[i + 1] : SIZE_MAX;
		else
			return CUDA_ERROR_INVALID_VALUE;
	}
	return *buf && *size != SIZE_MAX ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult xgpu_drv_kernel_wire(CUfunction func, const unsigned grid[3], const unsigned block[3],
			      unsigned shared, void **kernelParams, void **extra, xgpu_handle_t *remote,
			      uint8_t *params, uint32_t *len)
{
	struct xgpu_client *c;
	struct drv_func *f;
	CUresult r = client_and_func(func, &c, &f);
	if (r)
		return r;
	const struct xgpu_kernel_info *k = f->kinfo;
	/* A configuration no kernel can run with on this device is
	 * CUDA_ERROR_INVALID_VALUE, as NVIDIA's driver answers it (and its
	 * runtime hands on as cudaErrorInvalidValue). */
	const struct xgpu_device_info *di;
	r = xgpu_drv_devinfo(&di);
	if (r)
		return r;
	if (xgpu_launch_config_check(di->attrs, di->nattrs, grid, block, shared))
		return CUDA_ERROR_INVALID_VALUE;
	if (k->param_bytes > XGPU_MAX_PARAM_BYTES || (kernelParams && extra))
		return CUDA_ERROR_INVALID_VALUE;
	memset(params, 0, k->param_bytes);
	if (extra) {
		const void *buf;
		size_t size;
		r = params_from_extra(extra, &buf, &size);
		if (r)
			return r;
		if (size > k->param_bytes)
			return CUDA_ERROR_INVALID_VALUE;
		memcpy(params, buf, size);
	} else {
		if (k->nparams && !kernelParams)
			return CUDA_ERROR_INVALID_VALUE;
		/* The layout comes from the program's own image, but a damaged
		 * one must not make us write outside the buffer. */
		if (xgpu_fatbin_pack_params(k, kernelParams, params, XGPU_MAX_PARAM_BYTES))
			return CUDA_ERROR_INVALID_IMAGE;
	}
	*len = k->param_bytes;
	return func_remote(c, f, remote);
}

static CUresult launch(CUfunction func, unsigned int gridX, unsigned int gridY, unsigned int gridZ,
		       unsigned int blockX, unsigned int blockY, unsigned int blockZ,
		       unsigned int sharedMemBytes, CUstream hStream, void **kernelParams, void **extra,
		       const struct xgpu_launch_attrs *la)
{
	struct xgpu_client *c;
	CUresult r = xgpu_drv_client_ctx(&c);
	if (r)
		return r;
	const unsigned grid[3] = {gridX, gridY, gridZ}, block[3] = {blockX, blockY, blockZ};
	uint8_t params[XGPU_MAX_PARAM_BYTES];
	uint32_t len;
	xgpu_handle_t remote_func;
	if ((r = xgpu_drv_kernel_wire(func, grid, block, sharedMemBytes, kernelParams, extra, &remote_func,
				      params, &len)))
		return r;
	struct xgpu_req_LAUNCH req = {.func = remote_func,
				      .grid = {gridX, gridY, gridZ},
				      .block = {blockX, blockY, blockZ},
				      .shared_bytes = sharedMemBytes,
				      .stream = xgpu_drv_stream(hStream)};
	struct xgpu_rsp_LAUNCH rsp;
	struct xgpu_req_LAUNCH_EX req_ex = {.func = req.func,
					    .grid = req.grid,
					    .block = req.block,
					    .shared_bytes = req.shared_bytes,
					    .stream = req.stream,
					    .flags = la->flags,
					    .cluster = {la->cluster[0], la->cluster[1], la->cluster[2]},
					    .cluster_policy = la->cluster_policy};
	struct xgpu_rsp_LAUNCH_EX rsp_ex;
	struct xgpu_rpc rpc =
	    xgpu_launch_attrs_ex(la) ? xgpu_rpc_LAUNCH_EX(&req_ex, &rsp_ex) : xgpu_rpc_LAUNCH(&req, &rsp);
	rpc.out = params;
	rpc.out_len = len;
	int e = xgpu_rpc(c, &rpc);
	return xgpu_drv_result(e);
}
CUresult cuLaunchKernel(CUfunction func, unsigned int gridX, unsigned int gridY, unsigned int gridZ,
			unsigned int blockX, unsigned int blockY, unsigned int blockZ,
			unsigned int sharedMemBytes, CUstream hStream, void **kernelParams, void **extra)
{
	const struct xgpu_launch_attrs none = {0};
	return launch(func, gridX, gridY, gridZ, blockX, blockY, blockZ, sharedMemBytes, hStream,
		      kernelParams, extra, &none);
}
CUresult cuLaunchKernel_ptsz(CUfunction func, unsigned int gridX, unsigned int gridY, unsigned int gridZ,
			     unsigned int blockX, unsigned int blockY, unsigned int blockZ,
			     unsigned int sharedMemBytes, CUstream hStream, void **kernelParams, void **extra)
    XGPU_ALIAS(cuLaunchKernel);

/* Every block of a cooperative launch is resident at once; the daemon
 * checks the grid against occupancy x SMs
 * (CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE) and the device's support. */
CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
				   unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
				   unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
				   void **kernelParams)
{
	const struct xgpu_launch_attrs coop = {.flags = XGPU_LAUNCH_COOPERATIVE};
	return launch(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes,
		      hStream, kernelParams, NULL, &coop);
}
CUresult cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
					unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
					unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
					void **kernelParams) XGPU_ALIAS(cuLaunchCooperativeKernel);

/* cuLaunchKernelEx: the attributes are checked as for cudaLaunchKernelExC
 * (frontend/channel/launchattr.c, which lists each and what xgpu does). */
CUresult cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f, void **kernelParams, void **extra)
{
	if (!config || (config->numAttrs && !config->attrs))
		return CUDA_ERROR_INVALID_VALUE;
	struct xgpu_launch_attrs la;
	int e = xgpu_launch_attrs_check(config->attrs, config->numAttrs, "cuLaunchKernelEx", &la);
	if (e)
		return xgpu_drv_result(e);
	CUresult r = launch(f, config->gridDimX, config->gridDimY, config->gridDimZ, config->blockDimX,
			    config->blockDimY, config->blockDimZ, config->sharedMemBytes, config->hStream,
			    kernelParams, extra, &la);
	for (unsigned i = 0; i < 2 && !r; i++)
		if (la.after[i])
			r = cuEventRecord((CUevent)(uintptr_t)la.after[i], config->hStream);
	return r;
}
CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig *config, CUfunction f, void **kernelParams, void **extra)
    XGPU_ALIAS(cuLaunchKernelEx);

/* A guest's own bound on inflating fatbins (fatbin.h): the cost is its own,
 * so large libraries' fatbins (NCCL's) pass unless XGPU_FATBIN_MAX_INFLATED
 * says otherwise; the daemon applies its own setting again. */
__attribute__((constructor)) static void guest_fatbin_bound(void)
{
	if (!getenv(XGPU_FATBIN_INFLATE_ENV))
		xgpu_fatbin_set_max_inflated(XGPU_FATBIN_GUEST_MAX_INFLATED);
}
