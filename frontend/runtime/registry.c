/* SPDX-License-Identifier: Apache-2.0 */
/* registry.c - what nvcc's host code registers (fatbins, kernels, device
 * variables) and everything that names a kernel or a symbol: launches,
 * cudaMemcpyTo/FromSymbol, function attributes, occupancy.
 *
 * Modules load lazily, on the first use of one of their kernels or
 * variables, like CUDA's own lazy loading. A kernel's parameter layout comes
 * from parsing the registered fatbin, so `void **args` can be marshalled
 * into the kernel's parameter buffer; the backend checks the buffer's size
 * against its own parse of the module it loaded.
 */
#include "allocs.h"
#include "devprop.h"
#include "fatbin.h"
#include "managed.h"
#include "launchattr.h"
#include "runtime.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct fe_module {
	const void *image; /* the fatbin container */
	size_t size;
	struct xgpu_fatbin_info info;
	bool parsed;
	xgpu_handle_t remote;
	unsigned epoch;
	struct fe_module *next;
};

struct fe_func {
	const void *host_fun;
	struct fe_module *mod;
	char *name;
	const struct xgpu_kernel_info *kinfo;
	xgpu_handle_t remote;
	unsigned epoch;
};

struct fe_var {
	const void *host_var;
	struct fe_module *mod;
	char *name;
	size_t size;
	uint64_t dptr;
	unsigned epoch;
	void **managed_ptr; /* a __managed__ variable: where host code finds it */
};

/* Everything here is written at registration (static constructors, one
 * thread) and read under the lock afterwards. */
static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static struct fe_module *modules;
static struct fe_func **funcs;
static size_t nfuncs, capfuncs;
static struct fe_var **vars;
static size_t nvars, capvars;

static struct fe_var *find_var(const void *host_var);
static cudaError_t resolve_var(const void *host_var, struct xgpu_client **c, struct fe_var *out);

/* Module loads hold reg_lock across a round trip; a fork in the middle must
 * not leave the child's copy locked. */
static void registry_child(void)
{
	pthread_mutex_init(&reg_lock, NULL);
}

__attribute__((constructor)) static void registry_setup(void)
{
	pthread_atfork(NULL, NULL, registry_child);
}

static bool grow(void *vp, size_t *cap, size_t n)
{
	void ***v = vp;
	if (n < *cap)
		return true;
	size_t nc = *cap ? *cap * 2 : 32;
	void **nv = realloc(*v, nc * sizeof **v);
	if (!nv)
		return false;
	*v = nv;
	*cap = nc;
	return true;
}

/* ---- registration ------------------------------------------------------- */

XGPU_EXPORT void **__cudaRegisterFatBinary(void *fat_cubin)
{
	struct {
		int magic, version;
		const void *data;
		void *filename_or_fatbins;
	} wrapper;
	struct fe_module *m = calloc(1, sizeof *m);
	if (!m)
		return NULL;
	memcpy(&wrapper, fat_cubin, sizeof wrapper);
	/* Version 1 holds a whole program's device code. Version 2 is
	 * relocatable device code (-rdc=true): nvcc's device link step has
	 * already linked every object's code into the fatbin it registers (its
	 * per-object fatbins come beside it only for a runtime that would link
	 * again), so the module loads as version 1's does. */
	if (wrapper.magic == (int)XGPU_FATBIN_WRAPPER_MAGIC &&
	    (wrapper.version == 1 || wrapper.version == 2) && wrapper.data) {
		m->image = wrapper.data;
		m->size = xgpu_fatbin_size(wrapper.data, XGPU_MAX_MODULE_BYTES);
	}
	if (!m->size)
		xgpu_fe_warn_once("fatbin-wrapper",
				  "a registered fatbin is not in a form xgpu reads (wrapper version "
				  "%d); its kernels cannot be launched",
				  wrapper.version);
	pthread_mutex_lock(&reg_lock);
	m->next = modules;
	modules = m;
	pthread_mutex_unlock(&reg_lock);
	return (void **)m;
}

XGPU_EXPORT void __cudaRegisterFatBinaryEnd(void **handle)
{
}

XGPU_EXPORT void __cudaRegisterFunction(void **handle, const char *host_fun, char *device_fun,
					const char *device_name, int thread_limit, uint3 *tid, uint3 *bid,
					dim3 *bdim, dim3 *gdim, int *wsize)
{
	struct fe_func *f = calloc(1, sizeof *f);
	if (!f)
		return;
	f->host_fun = host_fun;
	f->mod = (struct fe_module *)handle;
	f->name = strdup(device_name);
	pthread_mutex_lock(&reg_lock);
	if (f->name && grow(&funcs, &capfuncs, nfuncs))
		funcs[nfuncs++] = f;
	else {
		free(f->name);
		free(f);
	}
	pthread_mutex_unlock(&reg_lock);
}

XGPU_EXPORT void __cudaRegisterVar(void **handle, char *host_var, char *device_address,
				   const char *device_name, int ext, size_t size, int constant, int global)
{
	struct fe_var *v = calloc(1, sizeof *v);
	if (!v)
		return;
	v->host_var = host_var;
	v->mod = (struct fe_module *)handle;
	v->name = strdup(device_name);
	v->size = size;
	pthread_mutex_lock(&reg_lock);
	if (v->name && grow(&vars, &capvars, nvars))
		vars[nvars++] = v;
	else {
		free(v->name);
		free(v);
	}
	pthread_mutex_unlock(&reg_lock);
}

/* Host code reaches a __managed__ variable through *host_var_ptr, which
 * __cudaInitModule sets (nvcc's code calls it before the first host access). */
XGPU_EXPORT void __cudaRegisterManagedVar(void **handle, void **host_var_ptr, char *device_address,
					  const char *device_name, int ext, size_t size, int constant,
					  int global)
{
	__cudaRegisterVar(handle, (char *)host_var_ptr, device_address, device_name, ext, size, constant,
			  global);
	pthread_mutex_lock(&reg_lock);
	struct fe_var *v = find_var(host_var_ptr);
	if (v)
		v->managed_ptr = host_var_ptr;
	pthread_mutex_unlock(&reg_lock);
}

XGPU_EXPORT void __cudaRegisterHostVar(void **handle, const char *device_name, char *host_var, size_t size)
{
	xgpu_fe_warn_once("host-var", "host variable %s: not supported by xgpu", device_name);
}

XGPU_EXPORT void __cudaRegisterUnifiedTable(void *table)
{
	xgpu_fe_warn_once("unified-table", "unified function tables are not supported by xgpu");
}

XGPU_EXPORT void *__cudaGetProcAddress(const char *symbol, unsigned long long flags)
{
	xgpu_unsupported("__cudaGetProcAddress");
	return NULL;
}

/* Loads the module and maps each of its __managed__ variables into this
 * process (frontend/channel/managed.c); 0 tells nvcc's code to call again. */
XGPU_EXPORT char __cudaInitModule(void **handle)
{
	struct fe_module *m = (struct fe_module *)handle;
	char ok = 1;
	for (size_t i = 0;; i++) {
		pthread_mutex_lock(&reg_lock);
		struct fe_var *v = i < nvars ? vars[i] : NULL;
		bool wanted = v && v->mod == m && v->managed_ptr;
		const void *key = v ? v->host_var : NULL;
		pthread_mutex_unlock(&reg_lock);
		if (!v)
			break;
		if (!wanted)
			continue;
		struct xgpu_client *c;
		struct fe_var got;
		void *host = NULL;
		cudaError_t e = resolve_var(key, &c, &got);
		if (!e)
			e = xgpu_rt_ret(xgpu_managed_map_var(c, got.dptr, got.size, &host));
		if (e) {
			xgpu_fe_warn_once(got.name ? got.name : "managed-var",
					  "__managed__ variable %s: cannot map it into this process: %s",
					  v->name, cudaGetErrorName(e));
			ok = 0;
			continue;
		}
		*got.managed_ptr = host;
		xgpu_alloc_add_managed_var(got.dptr, host, got.size);
	}
	return ok;
}

XGPU_EXPORT void __cudaUnregisterFatBinary(void **handle)
{
	struct fe_module *m = (struct fe_module *)handle;
	if (!m)
		return;
	/* Called from atexit: the daemon releases the module with the
	 * channel, so only our own bookkeeping goes. */
	pthread_mutex_lock(&reg_lock);
	size_t k = 0;
	for (size_t i = 0; i < nfuncs; i++) {
		if (funcs[i]->mod == m) {
			free(funcs[i]->name);
			free(funcs[i]);
		} else {
			funcs[k++] = funcs[i];
		}
	}
	nfuncs = k;
	k = 0;
	for (size_t i = 0; i < nvars; i++) {
		if (vars[i]->mod == m) {
			free(vars[i]->name);
			free(vars[i]);
		} else {
			vars[k++] = vars[i];
		}
	}
	nvars = k;
	for (struct fe_module **pp = &modules; *pp; pp = &(*pp)->next)
		if (*pp == m) {
			*pp = m->next;
			break;
		}
	pthread_mutex_unlock(&reg_lock);
	xgpu_fatbin_free(&m->info);
	free(m);
	if (!modules) {
		free(funcs);
		free(vars);
		funcs = NULL;
		vars = NULL;
		capfuncs = capvars = 0;
	}
}

/* ---- lookups and lazy loading ---------------------------------------------- */

static struct fe_func *find_func(const void *host_fun)
{
	for (size_t i = 0; i < nfuncs; i++)
		if (funcs[i]->host_fun == host_fun)
			return funcs[i];
	return NULL;
}

static struct fe_var *find_var(const void *host_var)
{
	for (size_t i = 0; i < nvars; i++)
		if (vars[i]->host_var == host_var)
			return vars[i];
	return NULL;
}

/* reg_lock held. */
static cudaError_t ensure_module(struct xgpu_client *c, struct fe_module *m)
{
	if (!m->size)
		return cudaErrorInvalidKernelImage;
	if (!m->parsed) {
		char why[160];
		if (xgpu_fatbin_parse(m->image, m->size, &m->info, why, sizeof why) < 0) {
			xgpu_fe_warn_once(why, "cannot read a registered fatbin: %s", why);
			return cudaErrorInvalidKernelImage;
		}
		m->parsed = true;
	}
	if (m->remote && m->epoch == xgpu_rt_epoch())
		return cudaSuccess;
	struct xgpu_req_MODULE_LOAD req = {0};
	struct xgpu_rsp_MODULE_LOAD rsp;
	struct xgpu_rpc r = xgpu_rpc_MODULE_LOAD(&req, &rsp);
	r.out = m->image;
	r.out_len = m->size;
	cudaError_t e = xgpu_rpc(c, &r);
	if (e)
		return e;
	m->remote = rsp.module;
	m->epoch = xgpu_rt_epoch();
	return cudaSuccess;
}

static cudaError_t name_call(struct xgpu_client *c, struct xgpu_rpc *r, const char *name)
{
	r->out = name;
	r->out_len = strlen(name) + 1;
	if (r->out_len > XGPU_MAX_NAME_BYTES)
		return cudaErrorInvalidSymbol;
	return xgpu_rpc(c, r);
}

/* Resolves a registered kernel to its remote handle; reg_lock held. */
static cudaError_t ensure_func(struct xgpu_client *c, struct fe_func *f)
{
	if (f->remote && f->epoch == xgpu_rt_epoch())
		return cudaSuccess;
	cudaError_t e = ensure_module(c, f->mod);
	if (e)
		return e;
	f->kinfo = xgpu_fatbin_find(&f->mod->info, f->name);
	if (!f->kinfo)
		return cudaErrorInvalidDeviceFunction;
	struct xgpu_req_MODULE_GET_FUNCTION req = {.module = f->mod->remote};
	struct xgpu_rsp_MODULE_GET_FUNCTION rsp;
	struct xgpu_rpc r = xgpu_rpc_MODULE_GET_FUNCTION(&req, &rsp);
	e = name_call(c, &r, f->name);
	if (e)
		return e;
	/* Both sides parsed the same image; disagreement means one of us would
	 * marshal the wrong bytes. */
	if (rsp.param_bytes != f->kinfo->param_bytes || rsp.nparams != f->kinfo->nparams)
		return cudaErrorInvalidKernelImage;
	f->remote = rsp.func;
	f->epoch = xgpu_rt_epoch();
	return cudaSuccess;
}

static cudaError_t resolve_func(const void *host_fun, struct xgpu_client **c, struct fe_func **out)
{
	cudaError_t e = xgpu_rt_client(c);
	if (e)
		return e;
	pthread_mutex_lock(&reg_lock);
	struct fe_func *f = find_func(host_fun);
	e = f ? ensure_func(*c, f) : cudaErrorInvalidDeviceFunction;
	pthread_mutex_unlock(&reg_lock);
	*out = f;
	return xgpu_rt_ret(e);
}

static cudaError_t resolve_var(const void *host_var, struct xgpu_client **c, struct fe_var *out)
{
	cudaError_t e = xgpu_rt_client(c);
	if (e)
		return e;
	pthread_mutex_lock(&reg_lock);
	struct fe_var *v = find_var(host_var);
	if (!v) {
		e = cudaErrorInvalidSymbol;
	} else if (!v->dptr || v->epoch != xgpu_rt_epoch()) {
		e = ensure_module(*c, v->mod);
		if (!e) {
			struct xgpu_req_MODULE_GET_GLOBAL req = {.module = v->mod->remote};
			struct xgpu_rsp_MODULE_GET_GLOBAL rsp;
			struct xgpu_rpc r = xgpu_rpc_MODULE_GET_GLOBAL(&req, &rsp);
			e = name_call(*c, &r, v->name);
			if (e == cudaErrorSymbolNotFound || e == cudaErrorInvalidValue)
				e = cudaErrorInvalidSymbol;
			if (!e) {
				v->dptr = rsp.dptr;
				v->size = rsp.size;
				v->epoch = xgpu_rt_epoch();
				xgpu_rt_devmem_add(rsp.dptr, rsp.size);
			}
		}
	}
	if (!e)
		*out = *v;
	pthread_mutex_unlock(&reg_lock);
	return xgpu_rt_ret(e);
}

/* ---- launches ----------------------------------------------------------- */

struct launch_config {
	dim3 grid, block;
	size_t shared;
	cudaStream_t stream;
};

#define MAX_CONFIG_DEPTH 16
static _Thread_local struct launch_config config_stack[MAX_CONFIG_DEPTH];
static _Thread_local unsigned config_depth;

XGPU_EXPORT unsigned __cudaPushCallConfiguration(dim3 grid, dim3 block, size_t shared,
						 struct CUstream_st *stream)
{
	if (config_depth == MAX_CONFIG_DEPTH)
		return 1;
	config_stack[config_depth++] = (struct launch_config){grid, block, shared, (cudaStream_t)stream};
	return 0;
}

XGPU_EXPORT cudaError_t __cudaPopCallConfiguration(dim3 *grid, dim3 *block, size_t *shared, void *stream)
{
	if (!config_depth)
		return xgpu_rt_ret(cudaErrorMissingConfiguration);
	struct launch_config *cfg = &config_stack[--config_depth];
	*grid = cfg->grid;
	*block = cfg->block;
	*shared = cfg->shared;
	*(cudaStream_t *)stream = cfg->stream;
	return cudaSuccess;
}

/* Lays out a launch's parameters as the kernel's parameter space, after
 * checking the configuration; *len is the kernel's parameter size. The one
 * marshalling path of the runtime: launches, cooperative launches and graph
 * kernel nodes (xgpu_rt_kernel_wire). */
static cudaError_t marshal(struct fe_func *f, dim3 grid, dim3 block, void **args, size_t shared,
			   uint8_t *params, uint32_t *len)
{
	const struct xgpu_kernel_info *k = f->kinfo;
	if (k->param_bytes > XGPU_MAX_PARAM_BYTES || (k->nparams && !args))
		return xgpu_rt_ret(cudaErrorInvalidValue);
	/* A configuration no kernel could run with is cudaErrorInvalidValue,
	 * as NVIDIA's CUDA 13 runtime reports it (xgpu_launch_config_check);
	 * refused here, before anything is sent. */
	const struct xgpu_device_info *di;
	cudaError_t e = xgpu_rt_devinfo(&di);
	if (e)
		return e;
	const uint32_t grid_dims[3] = {grid.x, grid.y, grid.z}, block_dims[3] = {block.x, block.y, block.z};
	e = xgpu_launch_config_check(di->attrs, di->nattrs, grid_dims, block_dims, shared);
	if (e)
		return xgpu_rt_ret(e);
	/* The layout comes from the program's own fatbin, but a damaged one
	 * must not make us write outside the buffer. */
	if (xgpu_fatbin_pack_params(k, args, params, XGPU_MAX_PARAM_BYTES))
		return xgpu_rt_ret(cudaErrorInvalidKernelImage);
	*len = k->param_bytes;
	return cudaSuccess;
}

static cudaError_t launch_ex(struct xgpu_client *c, struct fe_func *f, dim3 grid, dim3 block, void **args,
			     size_t shared, cudaStream_t stream, const struct xgpu_launch_attrs *la)
{
	uint8_t params[XGPU_MAX_PARAM_BYTES];
	uint32_t len;
	cudaError_t e = marshal(f, grid, block, args, shared, params, &len);
	if (e)
		return e;
	struct xgpu_req_LAUNCH req = {.func = f->remote,
				      .grid = {grid.x, grid.y, grid.z},
				      .block = {block.x, block.y, block.z},
				      .shared_bytes = (uint32_t)shared,
				      .stream = xgpu_rt_stream(stream)};
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
	struct xgpu_rpc r =
	    xgpu_launch_attrs_ex(la) ? xgpu_rpc_LAUNCH_EX(&req_ex, &rsp_ex) : xgpu_rpc_LAUNCH(&req, &rsp);
	r.out = params;
	r.out_len = len;
	return xgpu_rt_ret(xgpu_rpc(c, &r));
}

static cudaError_t launch(struct xgpu_client *c, struct fe_func *f, dim3 grid, dim3 block, void **args,
			  size_t shared, cudaStream_t stream)
{
	const struct xgpu_launch_attrs none = {0};
	return launch_ex(c, f, grid, block, args, shared, stream, &none);
}

cudaError_t xgpu_rt_kernel_wire(const void *func, dim3 grid, dim3 block, void **args, size_t shared,
				xgpu_handle_t *remote, uint8_t *params, uint32_t *len)
{
	struct xgpu_client *c;
	struct fe_func *f;
	cudaError_t e = resolve_func(func, &c, &f);
	if (!e)
		e = marshal(f, grid, block, args, shared, params, len);
	if (!e)
		*remote = f->remote;
	return e;
}

XGPU_EXPORT cudaError_t cudaLaunchKernel(const void *func, dim3 grid, dim3 block, void **args, size_t shared,
					 cudaStream_t stream)
{
	struct xgpu_client *c;
	struct fe_func *f;
	cudaError_t e = resolve_func(func, &c, &f);
	return e ? e : launch(c, f, grid, block, args, shared, stream);
}

XGPU_EXPORT cudaError_t cudaLaunchKernel_ptsz(const void *func, dim3 grid, dim3 block, void **args,
					      size_t shared, cudaStream_t stream)
{
	return cudaLaunchKernel(func, grid, block, args, shared, stream);
}

/* Every block of a cooperative launch is resident at once, so grid-wide
 * synchronisation works; the daemon checks the grid against the device's
 * occupancy (cudaErrorCooperativeLaunchTooLarge) and its support. */
XGPU_EXPORT cudaError_t cudaLaunchCooperativeKernel(const void *func, dim3 grid, dim3 block, void **args,
						    size_t shared, cudaStream_t stream)
{
	struct xgpu_client *c;
	struct fe_func *f;
	cudaError_t e = resolve_func(func, &c, &f);
	const struct xgpu_launch_attrs coop = {.flags = XGPU_LAUNCH_COOPERATIVE};
	return e ? e : launch_ex(c, f, grid, block, args, shared, stream, &coop);
}

XGPU_EXPORT cudaError_t cudaLaunchCooperativeKernel_ptsz(const void *func, dim3 grid, dim3 block, void **args,
							 size_t shared, cudaStream_t stream)
{
	return cudaLaunchCooperativeKernel(func, grid, block, args, shared, stream);
}

/* The launch attributes are checked as for cuLaunchKernelEx (the two share
 * ids and value layout; frontend/channel/launchattr.c lists what each does). */
_Static_assert(sizeof(cudaLaunchAttribute) == sizeof(CUlaunchAttribute), "one attribute layout");
XGPU_EXPORT cudaError_t cudaLaunchKernelExC(const cudaLaunchConfig_t *config, const void *func, void **args)
{
	if (!config || (config->numAttrs && !config->attrs))
		return xgpu_rt_ret(cudaErrorInvalidValue);
	struct xgpu_launch_attrs la;
	int le = xgpu_launch_attrs_check((const CUlaunchAttribute *)(const void *)config->attrs,
					 config->numAttrs, "cudaLaunchKernelExC", &la);
	if (le)
		return xgpu_rt_ret((cudaError_t)le);
	struct xgpu_client *c;
	struct fe_func *f;
	cudaError_t e = resolve_func(func, &c, &f);
	if (!e)
		e = launch_ex(c, f, config->gridDim, config->blockDim, args, config->dynamicSmemBytes,
			      config->stream, &la);
	for (unsigned i = 0; i < 2 && !e; i++)
		if (la.after[i])
			e = cudaEventRecord((cudaEvent_t)(uintptr_t)la.after[i], config->stream);
	return e;
}

XGPU_EXPORT cudaError_t cudaLaunchKernelExC_ptsz(const cudaLaunchConfig_t *config, const void *func,
						 void **args)
{
	return cudaLaunchKernelExC(config, func, args);
}

/* nvcc 13's launch stubs ask once per kernel for a handle, then launch
 * through it: our handle is the registration record. */
XGPU_EXPORT cudaError_t __cudaGetKernel(cudaKernel_t *kernel, const void *func)
{
	if (!kernel)
		return xgpu_rt_ret(cudaErrorInvalidValue);
	pthread_mutex_lock(&reg_lock);
	struct fe_func *f = find_func(func);
	pthread_mutex_unlock(&reg_lock);
	*kernel = (cudaKernel_t)f;
	return f ? cudaSuccess : xgpu_rt_ret(cudaErrorInvalidDeviceFunction);
}

XGPU_EXPORT cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 grid, dim3 block, void **args,
					   size_t shared, cudaStream_t stream)
{
	struct fe_func *f = (struct fe_func *)kernel;
	if (!f)
		return xgpu_rt_ret(cudaErrorInvalidDeviceFunction);
	struct xgpu_client *c;
	struct fe_func *same;
	cudaError_t e = resolve_func(f->host_fun, &c, &same);
	return e ? e : launch(c, f, grid, block, args, shared, stream);
}

XGPU_EXPORT cudaError_t __cudaLaunchKernel_ptsz(cudaKernel_t kernel, dim3 grid, dim3 block, void **args,
						size_t shared, cudaStream_t stream)
{
	return __cudaLaunchKernel(kernel, grid, block, args, shared, stream);
}

/* ---- functions ------------------------------------------------------------ */

static cudaError_t func_attr(struct xgpu_client *c, struct fe_func *f, int attr, int *value)
{
	struct xgpu_req_FUNC_GET_ATTRIBUTE req = {.func = f->remote, .attr = attr};
	struct xgpu_rsp_FUNC_GET_ATTRIBUTE rsp;
	cudaError_t e = xgpu_call_FUNC_GET_ATTRIBUTE(c, &req, &rsp);
	*value = e ? 0 : rsp.value;
	return e;
}

XGPU_EXPORT cudaError_t cudaFuncGetAttributes(struct cudaFuncAttributes *attr, const void *func)
{
	if (!attr)
		return xgpu_rt_ret(cudaErrorInvalidValue);
	struct xgpu_client *c;
	struct fe_func *f;
	cudaError_t e = resolve_func(func, &c, &f);
	if (e)
		return e;
	/* CU_FUNC_ATTRIBUTE_* numbers, in the order cuda.h lists them. */
	int v[11];
	for (int a = 0; a <= 10 && !e; a++)
		e = func_attr(c, f, a, &v[a]);
	if (e)
		return xgpu_rt_ret(e);
	memset(attr, 0, sizeof *attr);
	attr->maxThreadsPerBlock = v[0];
	attr->sharedSizeBytes = (size_t)v[1];
	attr->constSizeBytes = (size_t)v[2];
	attr->localSizeBytes = (size_t)v[3];
	attr->numRegs = v[4];
	attr->ptxVersion = v[5];
	attr->binaryVersion = v[6];
	attr->cacheModeCA = v[7];
	attr->maxDynamicSharedSizeBytes = v[8];
	attr->preferredShmemCarveout = v[9];
	return cudaSuccess;
}

XGPU_EXPORT cudaError_t cudaFuncSetAttribute(const void *func, enum cudaFuncAttribute attr, int value)
{
	struct xgpu_client *c;
	struct fe_func *f;
	cudaError_t e = resolve_func(func, &c, &f);
	if (e)
		return e;
	struct xgpu_req_FUNC_SET_ATTRIBUTE req = {.func = f->remote, .attr = (int32_t)attr, .value = value};
	struct xgpu_rsp_FUNC_SET_ATTRIBUTE rsp;
	return xgpu_rt_ret(xgpu_call_FUNC_SET_ATTRIBUTE(c, &req, &rsp));
}

XGPU_EXPORT cudaError_t cudaFuncSetCacheConfig(const void *func, enum cudaFuncCache config)
{
	struct xgpu_client *c;
	struct fe_func *f;
	cudaError_t e = resolve_func(func, &c, &f);
	if (e)
		return e;
	/* A hint Hopper ignores (see cudaDeviceSetCacheConfig). */
	return config <= cudaFuncCachePreferEqual ? cudaSuccess : xgpu_rt_ret(cudaErrorInvalidValue);
}

/* The mangled name, as the driver's cuFuncGetName answers; it lives as long
 * as the registration. */
XGPU_EXPORT cudaError_t cudaFuncGetName(const char **name, const void *func)
{
	if (!name)
		return xgpu_rt_ret(cudaErrorInvalidValue);
	pthread_mutex_lock(&reg_lock);
	struct fe_func *f = find_func(func);
	if (f)
		*name = f->name;
	pthread_mutex_unlock(&reg_lock);
	return f ? cudaSuccess : xgpu_rt_ret(cudaErrorInvalidDeviceFunction);
}

/* A parameter's place in the kernel's parameter buffer, from the image's
 * KPARAM_INFO (what launches lay parameters out by). */
XGPU_EXPORT cudaError_t cudaFuncGetParamInfo(const void *func, size_t paramIndex, size_t *paramOffset,
					     size_t *paramSize)
{
	struct xgpu_client *c;
	struct fe_func *f;
	cudaError_t e = resolve_func(func, &c, &f);
	if (e)
		return e;
	pthread_mutex_lock(&reg_lock);
	const struct xgpu_kernel_info *k = f->kinfo;
	bool found = k && paramIndex < k->nparams;
	if (found) {
		if (paramOffset)
			*paramOffset = k->params[paramIndex].offset;
		if (paramSize)
			*paramSize = k->params[paramIndex].size;
	}
	pthread_mutex_unlock(&reg_lock);
	return found ? cudaSuccess : xgpu_rt_ret(cudaErrorInvalidValue);
}

XGPU_EXPORT cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int *blocks, const void *func,
									       int block_size,
									       size_t dyn_smem,
									       unsigned int flags)
{
	if (!blocks || flags > cudaOccupancyDisableCachingOverride)
		return xgpu_rt_ret(cudaErrorInvalidValue);
	struct xgpu_client *c;
	struct fe_func *f;
	cudaError_t e = resolve_func(func, &c, &f);
	if (e)
		return e;
	struct xgpu_req_OCCUPANCY req = {
	    .func = f->remote, .block_size = block_size, .dynamic_smem = dyn_smem};
	struct xgpu_rsp_OCCUPANCY rsp;
	e = xgpu_call_OCCUPANCY(c, &req, &rsp);
	if (!e)
		*blocks = rsp.blocks;
	return xgpu_rt_ret(e);
}

XGPU_EXPORT cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int *blocks, const void *func,
								      int block_size, size_t dyn_smem)
{
	return cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(blocks, func, block_size, dyn_smem, 0);
}

/* Clusters, as cuOccupancyMaxPotentialClusterSize and
 * cuOccupancyMaxActiveClusters answer them (frontend/driver/module.c): the
 * blocks that fit per SM over all SMs, read from the daemon. */
static cudaError_t cluster_fit(const void *func, const cudaLaunchConfig_t *config, struct xgpu_client **c,
			       struct fe_func **f, uint64_t *fit)
{
	if (!config || (config->numAttrs && !config->attrs))
		return xgpu_rt_ret(cudaErrorInvalidValue);
	uint64_t threads = (uint64_t)config->blockDim.x * config->blockDim.y * config->blockDim.z;
	if (!threads || threads > INT32_MAX)
		return xgpu_rt_ret(cudaErrorInvalidValue);
	cudaError_t e = resolve_func(func, c, f);
	if (e)
		return e;
	const struct xgpu_device_info *di;
	e = xgpu_rt_devinfo(&di);
	if (e)
		return e;
	if (di->nattrs <= CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH ||
	    !di->attrs[CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH])
		return xgpu_rt_ret(cudaErrorNotSupported);
	struct xgpu_req_OCCUPANCY req = {
	    .func = (*f)->remote, .block_size = (int32_t)threads, .dynamic_smem = config->dynamicSmemBytes};
	struct xgpu_rsp_OCCUPANCY rsp;
	e = xgpu_call_OCCUPANCY(*c, &req, &rsp);
	if (e)
		return xgpu_rt_ret(e);
	int sms = di->attrs[CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT];
	*fit = (uint64_t)(rsp.blocks > 0 ? rsp.blocks : 0) * (uint64_t)(sms > 0 ? sms : 0);
	return cudaSuccess;
}

XGPU_EXPORT cudaError_t cudaOccupancyMaxPotentialClusterSize(int *size, const void *func,
							     const cudaLaunchConfig_t *config)
{
	if (!size)
		return xgpu_rt_ret(cudaErrorInvalidValue);
	struct xgpu_client *c;
	struct fe_func *f;
	uint64_t fit;
	cudaError_t e = cluster_fit(func, config, &c, &f, &fit);
	int req[3] = {0, 0, 0}, nonportable = 0;
	for (int i = 0; i < 3 && !e; i++)
		e = func_attr(c, f, cudaFuncAttributeRequiredClusterWidth + i, &req[i]);
	if (!e)
		e = func_attr(c, f, cudaFuncAttributeNonPortableClusterSizeAllowed, &nonportable);
	if (e)
		return xgpu_rt_ret(e);
	uint64_t most = nonportable ? XGPU_CLUSTER_MAX_NONPORTABLE : XGPU_CLUSTER_MAX_PORTABLE;
	if (req[0] > 0 && req[1] > 0 && req[2] > 0) {
		most = (uint64_t)req[0] * (uint64_t)req[1] * (uint64_t)req[2];
		*size = (int)(most <= fit ? most : 0);
	} else
		*size = (int)(most <= fit ? most : fit);
	return cudaSuccess;
}

XGPU_EXPORT cudaError_t cudaOccupancyMaxActiveClusters(int *clusters, const void *func,
						       const cudaLaunchConfig_t *config)
{
	if (!clusters)
		return xgpu_rt_ret(cudaErrorInvalidValue);
	struct xgpu_client *c;
	struct fe_func *f;
	uint64_t fit;
	cudaError_t e = cluster_fit(func, config, &c, &f, &fit);
	if (e)
		return e;
	uint64_t cluster = 1;
	for (unsigned i = 0; i < config->numAttrs; i++)
		if (config->attrs[i].id == cudaLaunchAttributeClusterDimension)
			cluster = (uint64_t)config->attrs[i].val.clusterDim.x *
				  config->attrs[i].val.clusterDim.y * config->attrs[i].val.clusterDim.z;
	if (!cluster)
		return xgpu_rt_ret(cudaErrorInvalidValue);
	*clusters = (int)(fit / cluster);
	return cudaSuccess;
}

/* ---- symbols -------------------------------------------------------------- */

XGPU_EXPORT cudaError_t cudaGetSymbolAddress(void **dev_ptr, const void *symbol)
{
	struct xgpu_client *c;
	struct fe_var v;
	if (!dev_ptr)
		return xgpu_rt_ret(cudaErrorInvalidValue);
	cudaError_t e = resolve_var(symbol, &c, &v);
	if (!e)
		*dev_ptr = (void *)(uintptr_t)v.dptr;
	return e;
}

XGPU_EXPORT cudaError_t cudaGetSymbolSize(size_t *size, const void *symbol)
{
	struct xgpu_client *c;
	struct fe_var v;
	if (!size)
		return xgpu_rt_ret(cudaErrorInvalidValue);
	cudaError_t e = resolve_var(symbol, &c, &v);
	if (!e)
		*size = v.size;
	return e;
}

static cudaError_t symbol_copy(const void *symbol, size_t count, size_t offset, void *host, bool to_symbol,
			       enum cudaMemcpyKind kind, cudaStream_t stream, bool async)
{
	struct xgpu_client *c;
	struct fe_var v;
	cudaError_t e = resolve_var(symbol, &c, &v);
	if (e)
		return e;
	if (offset > v.size || count > v.size - offset)
		return xgpu_rt_ret(cudaErrorInvalidValue);
	void *dev = (void *)(uintptr_t)(v.dptr + offset);
	if (to_symbol) {
		if (kind == cudaMemcpyDefault)
			kind = xgpu_rt_devmem_find((uintptr_t)host, NULL, NULL) ? cudaMemcpyDeviceToDevice
										: cudaMemcpyHostToDevice;
		if (kind != cudaMemcpyHostToDevice && kind != cudaMemcpyDeviceToDevice)
			return xgpu_rt_ret(cudaErrorInvalidMemcpyDirection);
		return xgpu_rt_memcpy(dev, host, count, kind, stream, async);
	}
	if (kind == cudaMemcpyDefault)
		kind = xgpu_rt_devmem_find((uintptr_t)host, NULL, NULL) ? cudaMemcpyDeviceToDevice
									: cudaMemcpyDeviceToHost;
	if (kind != cudaMemcpyDeviceToHost && kind != cudaMemcpyDeviceToDevice)
		return xgpu_rt_ret(cudaErrorInvalidMemcpyDirection);
	return xgpu_rt_memcpy(host, dev, count, kind, stream, async);
}

XGPU_EXPORT cudaError_t cudaMemcpyToSymbol(const void *symbol, const void *src, size_t count, size_t offset,
					   enum cudaMemcpyKind kind)
{
	return symbol_copy(symbol, count, offset, (void *)src, true, kind, NULL, false);
}

XGPU_EXPORT cudaError_t cudaMemcpyFromSymbol(void *dst, const void *symbol, size_t count, size_t offset,
					     enum cudaMemcpyKind kind)
{
	return symbol_copy(symbol, count, offset, dst, false, kind, NULL, false);
}

XGPU_EXPORT cudaError_t cudaMemcpyToSymbolAsync(const void *symbol, const void *src, size_t count,
						size_t offset, enum cudaMemcpyKind kind, cudaStream_t stream)
{
	return symbol_copy(symbol, count, offset, (void *)src, true, kind, stream, true);
}

XGPU_EXPORT cudaError_t cudaMemcpyFromSymbolAsync(void *dst, const void *symbol, size_t count, size_t offset,
						  enum cudaMemcpyKind kind, cudaStream_t stream)
{
	return symbol_copy(symbol, count, offset, dst, false, kind, stream, true);
}

/* A guest's own bound on inflating fatbins (fatbin.h): the cost is its own,
 * so large libraries' fatbins (NCCL's) pass unless XGPU_FATBIN_MAX_INFLATED
 * says otherwise; the daemon applies its own setting again. */
__attribute__((constructor)) static void guest_fatbin_bound(void)
{
	if (!getenv(XGPU_FATBIN_INFLATE_ENV))
		xgpu_fatbin_set_max_inflated(XGPU_FATBIN_GUEST_MAX_INFLATED);
}
