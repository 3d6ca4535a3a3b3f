/* SPDX-License-Identifier: Apache-2.0 */
/* module.c - modules, functions and kernel launches of the simulated driver.
 *
 * cuModuleLoadData takes what nvcc embeds (a fatbin container, possibly
 * behind its __fatBinC_Wrapper_t) and, like the real driver, a bare cubin or
 * PTX text. The kernels and their parameter layouts come from the fatbin
 * parser (common/fatbin.c); device variables and per-kernel resource figures
 * from the cubin (cubin.c). Variables get zeroed (or initialised) device
 * memory in the loading context at load time, freed at unload.
 *
 * A launch is checked against the device's limits, its parameters are
 * copied into a buffer laid out as the kernel expects, and it is queued.
 * When it runs, a host implementation from a plugin (plugins.c) computes
 * the results through map(), which translates device addresses with the
 * same check every API call gets; a kernel without one only takes its
 * modeled time.
 */
#include "simdrv_int.h"
#include "cuerr.h"
#include "cuimage.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SIM_IMAGE_MAX ((size_t)1 << 30)
#define SIM_PTX_MAX ((size_t)64 << 20)
#define SIM_EXTRA_MAX 64 /* entries of cuLaunchKernel's extra array we read */

/* Default kernel model (H100, 132 SMs): a fixed launch cost on the device,
 * then threads retired at a rate proportional to the SMs the context runs
 * on. The bundled workloads' plugins use the same figures. */
#define SIM_LAUNCH_NS 3000.0
#define SIM_THREADS_PER_NS_132SM 500.0

/* ---- images ---------------------------------------------------------------------- */

struct image {
	const uint8_t *fb; /* fatbin container */
	size_t fblen;
	uint8_t *owned;     /* a container built around a bare cubin or PTX */
	const uint8_t *elf; /* the bare cubin, if that was the image */
	size_t elflen;
	uint32_t elf_arch;
};

static bool looks_like_ptx(const char *s, size_t *len)
{
	size_t n = strnlen(s, SIM_PTX_MAX);
	if (n == SIM_PTX_MAX)
		return false;
	const char *p = s;
	while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
		p++;
	if (*p != '.' && *p != '/')
		return false;
	*len = n;
	return strstr(s, ".version") != NULL;
}

static CUresult resolve_image(const void *image, uint32_t dev_arch, struct image *img)
{
	memset(img, 0, sizeof *img);
	const uint8_t *p = image;
	uint32_t magic;
	memcpy(&magic, p, sizeof magic);
	if (magic == XGPU_FATBIN_WRAPPER_MAGIC) {
		/* __fatBinC_Wrapper_t: int magic, int version, const void *data, ... */
		memcpy(&p, (const uint8_t *)image + 8, sizeof p);
		if (!p)
			return CUDA_ERROR_INVALID_IMAGE;
		memcpy(&magic, p, sizeof magic);
	}
	if (magic == XGPU_FATBIN_MAGIC) {
		img->fb = p;
		img->fblen = xgpu_fatbin_size(p, SIM_IMAGE_MAX);
		return img->fblen ? CUDA_SUCCESS : CUDA_ERROR_INVALID_IMAGE;
	}
	if (!memcmp(p,
		    "\x7f"
		    "ELF",
		    4)) {
		size_t n = xgpu_cuimage_elf_size(p, SIM_IMAGE_MAX);
		if (!n)
			return CUDA_ERROR_INVALID_IMAGE;
		uint32_t flags;
		memcpy(&flags, p + 0x30, sizeof flags);
		/* EF_CUDA_SM: the SM version sits in bits 8-15 of e_flags. */
		uint32_t arch = (flags >> 8) & 0xff;
		img->elf = p;
		img->elflen = n;
		img->elf_arch = arch ? arch : dev_arch;
		img->owned =
		    xgpu_cuimage_wrap(XGPU_CUIMAGE_ENTRY_ELF, p, n, img->elf_arch, 1, 8, &img->fblen);
		img->fb = img->owned;
		return img->owned ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
	}
	size_t n;
	if (looks_like_ptx((const char *)p, &n)) {
		unsigned major = 9, minor = 0, sm = dev_arch;
		const char *v = strstr((const char *)p, ".version");
		if (v && sscanf(v, ".version %u.%u", &major, &minor) != 2)
			major = 9, minor = 0;
		const char *t = strstr((const char *)p, ".target sm_");
		if (t && sscanf(t, ".target sm_%u", &sm) != 1)
			sm = dev_arch;
		img->owned = xgpu_cuimage_wrap(XGPU_CUIMAGE_ENTRY_PTX, p, n + 1, sm, (uint16_t)major,
					       (uint16_t)minor, &img->fblen);
		img->fb = img->owned;
		return img->owned ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
	}
	return CUDA_ERROR_INVALID_IMAGE;
}

/* ---- modules --------------------------------------------------------------------- */

static void func_release(struct sim_obj *o)
{
	struct CUfunc_st *f = (struct CUfunc_st *)o;
	free(f->layout);
	sim_obj_put(&f->mod->obj);
	free(f);
}

static void module_release(struct sim_obj *o)
{
	struct CUmod_st *m = (struct CUmod_st *)o;
	xgpu_fatbin_free(&m->info);
	ptx_free(m->ptx);
	for (uint32_t i = 0; i < m->nglobals; i++)
		free(m->globals[i].name);
	free(m->globals);
	free(m->funcs);
	sim_ctx_put(m->ctx);
	free(m);
}

/* Drops the handles of functions (an array taken out of their module). */
static void put_funcs(struct CUfunc_st **funcs, uint32_t n)
{
	for (uint32_t i = 0; funcs && i < n; i++)
		if (funcs[i] && sim_obj_unregister(&funcs[i]->obj))
			sim_obj_put(&funcs[i]->obj);
	free(funcs);
}

static struct CUfunc_st *make_func(struct CUmod_st *m, const struct xgpu_kernel_info *ki,
				   const struct sim_cubin *cb)
{
	struct CUfunc_st *f = calloc(1, sizeof *f);
	if (!f)
		return NULL;
	f->ki = ki;
	if (ki->nparams) {
		f->layout = calloc(ki->nparams, sizeof *f->layout);
		if (!f->layout) {
			free(f);
			return NULL;
		}
		for (uint32_t i = 0; i < ki->nparams; i++)
			f->layout[i] = (struct xgpu_simk_param){ki->params[i].offset, ki->params[i].size};
	}
	f->impl = sim_plugin_find(ki->name);
	const struct sim_cubin_func *cf = sim_cubin_func(cb, ki->name);
	f->max_threads = SIM_MAX_THREADS_PER_BLOCK;
	if (cf) {
		f->regs = cf->regs;
		f->static_shared = cf->static_shared;
		f->local_bytes = cf->local_bytes;
		if (cf->max_threads)
			f->max_threads = cf->max_threads;
	}
	/* Registers bound the block size: a warp takes regs x 32, allocated in
	 * units of 256, from the SM's 64 Ki registers. */
	if (f->regs) {
		uint32_t per_warp = (f->regs * 32 + 255) / 256 * 256;
		uint32_t by_regs = SIM_REGS_PER_SM / per_warp * 32;
		if (by_regs < f->max_threads)
			f->max_threads = by_regs;
	}
	f->const_bytes = cb->const_bytes;
	int dyn = SIM_SHARED_PER_BLOCK -
		  (int)(f->static_shared > SIM_SHARED_PER_BLOCK ? SIM_SHARED_PER_BLOCK : f->static_shared);
	atomic_init(&f->max_dynamic_shared, dyn);
	atomic_init(&f->carveout, -1);
	for (int i = 0; i < 3; i++)
		atomic_init(&f->cluster[i], 0);
	atomic_init(&f->non_portable_cluster, 0);
	atomic_init(&f->cluster_policy, 0);
	f->mod = m;
	sim_obj_ref(&m->obj);
	if (sim_obj_register(&f->obj, SIM_FUNC, func_release) < 0) {
		func_release(&f->obj);
		return NULL;
	}
	return f;
}

/* Takes globals [0, n) of m out of ctx's table (ctx->lock held); returns
 * them in out for release once earlier work is done. */
static size_t remove_globals_locked(struct CUctx_st *ctx, struct CUmod_st *m, uint32_t n,
				    struct sim_alloc *out)
{
	size_t k = 0;
	for (uint32_t i = 0; i < n; i++)
		if (m->globals[i].addr && m->globals[i].owns &&
		    sim_mem_remove_locked(ctx, m->globals[i].addr, SIM_ALLOC_GLOBAL, &out[k]))
			k++;
	return k;
}

/* Releases allocations taken out of ctx's table once the work queued before
 * that is done: what was queued later cannot reach them (kernels translate
 * addresses through the table when they run, copies when they are queued),
 * so only earlier work can still be using them. */
static void release_allocs(struct CUctx_st *ctx, uint64_t fence, struct sim_alloc *a, size_t n)
{
	if (!n)
		return;
	sim_wait_ctx_seq(ctx, fence);
	for (size_t i = 0; i < n; i++)
		sim_mem_release(ctx->dev, &a[i]);
}

/* The room a __managed__ variable of size bytes takes in its module's shared
 * allocation (cuModuleLoadData). */
static uint64_t managed_step(size_t size)
{
	return ((uint64_t)(size ? size : 1) + 255) / 256 * 256;
}

/* ---- the PTX interpreter's view of a module ----------------------------------------- */

atomic_uint_least64_t sim_ptx_insns, sim_ptx_ns;

enum sim_ptx_mode sim_ptx_mode(void)
{
	const char *e = getenv("XGPU_SIM_PTX");
	if (!e || !*e || !strcmp(e, "on") || !strcmp(e, "1"))
		return SIM_PTX_ON;
	if (!strcmp(e, "strict"))
		return SIM_PTX_STRICT;
	if (!strcmp(e, "off") || !strcmp(e, "0"))
		return SIM_PTX_OFF;
	static atomic_bool warned;
	if (!atomic_exchange(&warned, true))
		sim_log("XGPU_SIM_PTX=\"%s\" is not on, strict or off; taken as on", e);
	return SIM_PTX_ON;
}

static bool resolve_global(void *arg, const char *name, uint64_t *addr)
{
	const struct CUmod_st *m = arg;
	for (uint32_t i = 0; i < m->nglobals; i++)
		if (!strcmp(m->globals[i].name, name)) {
			*addr = m->globals[i].addr;
			return true;
		}
	return false;
}

/* Decodes the module's PTX for the kernels that have no host implementation
 * (ctx->lock held: its variables have their addresses). Kernels it cannot
 * run are named in the log and keep today's behaviour (modeled time, no
 * results), or with XGPU_SIM_PTX=strict fail the load. */
static CUresult load_ptx(struct CUmod_st *m, const struct sim_cubin *cb)
{
	enum sim_ptx_mode mode = sim_ptx_mode();
	if (mode == SIM_PTX_OFF || !cb->ptx)
		return CUDA_SUCCESS;
	bool needed = false;
	for (uint32_t i = 0; i < m->nfuncs; i++)
		needed |= !m->funcs[i]->impl;
	if (!needed)
		return CUDA_SUCCESS;
	char err[160];
	if (ptx_parse(cb->ptx, cb->ptxlen, resolve_global, m, &m->ptx, err, sizeof err) < 0) {
		sim_log("PTX interpreter: cannot read the module's PTX (%s)%s", err,
			mode == SIM_PTX_STRICT ? "; refused (XGPU_SIM_PTX=strict)"
					       : ": its kernels take their modeled time and compute nothing");
		return mode == SIM_PTX_STRICT ? CUDA_ERROR_INVALID_PTX : CUDA_SUCCESS;
	}
	CUresult r = CUDA_SUCCESS;
	for (uint32_t i = 0; i < m->nfuncs; i++) {
		struct CUfunc_st *f = m->funcs[i];
		if (f->impl)
			continue;
		const struct ptx_kernel *pk = ptx_find(m->ptx, f->ki->name);
		if (!pk)
			continue;
		if (pk->unsupported[0]) {
			sim_log("PTX interpreter: kernel %s uses %s, which it does not support%s",
				f->ki->name, pk->unsupported,
				mode == SIM_PTX_STRICT ? "; module refused (XGPU_SIM_PTX=strict)"
						       : ": it takes its modeled time and computes nothing");
			if (mode == SIM_PTX_STRICT)
				r = CUDA_ERROR_NOT_SUPPORTED;
			continue;
		}
		f->pk = pk;
	}
	return r;
}

CUresult cuModuleLoadData(CUmodule *module, const void *image)
{
	struct CUctx_st *c;
	CUresult r = sim_ctx_enter(&c, false);
	if (r)
		return r;
	if (!module || !image) {
		sim_ctx_put(c);
		return CUDA_ERROR_INVALID_VALUE;
	}
	uint32_t dev_arch = (uint32_t)(c->dev->p.cc_major * 10 + c->dev->p.cc_minor);
	struct image img;
	r = resolve_image(image, dev_arch, &img);
	if (r) {
		sim_ctx_put(c);
		return r;
	}
	struct CUmod_st *m = calloc(1, sizeof *m);
	if (!m) {
		free(img.owned);
		sim_ctx_put(c);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	m->ctx = c;         /* takes over the reference */
	m->unloaded = true; /* until published below */
	sim_list_init(&m->link);
	if (sim_obj_register(&m->obj, SIM_MODULE, module_release) < 0) {
		free(img.owned);
		module_release(&m->obj);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	struct sim_cubin cb;
	memset(&cb, 0, sizeof cb);
	char err[256];
	struct sim_alloc *undo = NULL;
	size_t nundo = 0;
	uint64_t fence = 0; /* what undo waits for */
	if (xgpu_fatbin_parse(img.fb, img.fblen, &m->info, err, sizeof err) < 0 ||
	    (img.elf ? sim_cubin_parse_elf(img.elf, img.elflen, &cb, err, sizeof err)
		     : sim_cubin_from_fatbin(img.fb, img.fblen, dev_arch, &cb, err, sizeof err)) < 0) {
		sim_log("cuModuleLoadData: invalid image: %s", err);
		r = cb.bad_ptx ? CUDA_ERROR_INVALID_PTX : CUDA_ERROR_INVALID_IMAGE;
		goto fail;
	}
	if (img.elf) {
		cb.arch = img.elf_arch;
		if (cb.arch > dev_arch) {
			r = CUDA_ERROR_NO_BINARY_FOR_GPU;
			goto fail;
		}
	} else if (!cb.arch && !cb.has_ptx) {
		r = CUDA_ERROR_NO_BINARY_FOR_GPU; /* only code for newer GPUs */
		goto fail;
	}
	m->arch = cb.arch ? cb.arch : dev_arch;
	m->nfuncs = m->info.nkernels;
	m->funcs = calloc(m->nfuncs ? m->nfuncs : 1, sizeof *m->funcs);
	m->globals = calloc(cb.nvars ? cb.nvars : 1, sizeof *m->globals);
	undo = calloc(cb.nvars ? cb.nvars : 1, sizeof *undo);
	if (!m->funcs || !m->globals || !undo) {
		r = CUDA_ERROR_OUT_OF_MEMORY;
		goto fail;
	}
	for (uint32_t i = 0; i < m->nfuncs; i++)
		if (!(m->funcs[i] = make_func(m, &m->info.kernels[i], &cb))) {
			r = CUDA_ERROR_OUT_OF_MEMORY;
			goto fail;
		}
	for (uint32_t i = 0; i < cb.nvars; i++) {
		if (!(m->globals[i].name = strdup(cb.vars[i].name))) {
			r = CUDA_ERROR_OUT_OF_MEMORY;
			goto fail;
		}
		m->globals[i].size = (size_t)cb.vars[i].size;
		m->nglobals = i + 1;
	}
	/* The __managed__ variables share one allocation, each at a multiple
	 * of 256 bytes, as NVIDIA's driver lays them out (on an H100 a second
	 * variable sat 0x200 bytes into the first one's page): the frontend
	 * must map variables that share a page. The first owns it. */
	uint64_t managed_bytes = 0;
	for (uint32_t i = 0; i < m->nglobals; i++)
		if (cb.vars[i].managed)
			managed_bytes += managed_step(m->globals[i].size);
	pthread_mutex_lock(&c->lock);
	unsigned char *managed_host = NULL;
	CUdeviceptr managed_base = 0;
	if (managed_bytes) {
		void *h;
		r = sim_mem_alloc_managed_locked(c, managed_bytes, SIM_ALLOC_GLOBAL, &managed_base, &h);
		managed_host = h;
		uint64_t at = 0;
		for (uint32_t i = 0; !r && i < m->nglobals; i++)
			if (cb.vars[i].managed) {
				m->globals[i].addr = managed_base + at;
				m->globals[i].owns = at == 0;
				at += managed_step(m->globals[i].size);
			}
	}
	for (uint32_t i = 0; !r && i < m->nglobals; i++) {
		void *host;
		size_t sz = m->globals[i].size ? m->globals[i].size : 1;
		if (cb.vars[i].managed) {
			host = managed_host + (m->globals[i].addr - managed_base);
		} else {
			r = sim_mem_alloc_locked(c, sz, SIM_ALLOC_GLOBAL, &m->globals[i].addr, &host);
			m->globals[i].owns = true;
		}
		/* New device memory reads as zeroes past what the image gives. */
		if (!r && cb.vars[i].init)
			memcpy(host, cb.vars[i].init,
			       (size_t)(cb.vars[i].init_len < m->globals[i].size ? cb.vars[i].init_len
										 : m->globals[i].size));
	}
	if (!r)
		r = load_ptx(m, &cb);
	if (r) {
		nundo = remove_globals_locked(c, m, m->nglobals, undo);
		fence = sim_ctx_fence(c);
	} else {
		m->unloaded = false;
		sim_list_add(&c->modules, &m->link);
	}
	pthread_mutex_unlock(&c->lock);
	if (r)
		goto fail;
	sim_cubin_free(&cb);
	free(img.owned);
	free(undo);
	*module = m;
	return CUDA_SUCCESS;
fail:
	release_allocs(c, fence, undo, nundo);
	free(undo);
	sim_cubin_free(&cb);
	free(img.owned);
	put_funcs(m->funcs, m->nfuncs);
	m->funcs = NULL;
	if (sim_obj_unregister(&m->obj))
		sim_obj_put(&m->obj);
	return r;
}

CUresult cuModuleUnload(CUmodule hmod)
{
	if (!atomic_load(&sim.initialized))
		return CUDA_ERROR_NOT_INITIALIZED;
	struct CUmod_st *m = sim_obj_get(hmod, SIM_MODULE);
	if (!m)
		return CUDA_ERROR_INVALID_HANDLE;
	if (!sim_obj_unregister(&m->obj)) {
		sim_obj_put(&m->obj);
		return CUDA_ERROR_INVALID_HANDLE;
	}
	struct CUctx_st *c = m->ctx;
	struct sim_alloc *gone = calloc(m->nglobals ? m->nglobals : 1, sizeof *gone);
	size_t ngone = 0;
	/* As on a GPU, kernels queued before the unload still see the module's
	 * variables: wait for them before the variables leave the table. */
	if (m->nglobals)
		sim_wait_ctx_seq(c, sim_ctx_fence(c));
	pthread_mutex_lock(&c->lock);
	struct CUfunc_st **funcs = m->funcs;
	m->funcs = NULL;
	m->unloaded = true;
	sim_list_del(&m->link);
	/* Without memory for the list, the variables stay until the context
	 * goes (they are in its table); nothing is lost. */
	if (gone)
		ngone = remove_globals_locked(c, m, m->nglobals, gone);
	/* Work queued since the wait above (by another thread) may still use
	 * them: usually none, so this wait is usually free. */
	uint64_t fence = sim_ctx_fence(c);
	pthread_mutex_unlock(&c->lock);
	release_allocs(c, fence, gone, ngone);
	free(gone);
	put_funcs(funcs, m->nfuncs);
	CUresult r = (CUresult)atomic_load(&c->sticky);
	sim_obj_put(&m->obj); /* the registry's */
	sim_obj_put(&m->obj);
	return r;
}

void sim_module_release_ctx(struct CUctx_st *ctx)
{
	/* The context's memory, variables included, is released by the caller. */
	for (;;) {
		struct CUmod_st *victim = NULL;
		struct CUfunc_st **funcs = NULL;
		pthread_mutex_lock(&ctx->lock);
		for (struct sim_link *l = ctx->modules.next; l != &ctx->modules; l = l->next) {
			struct CUmod_st *m = sim_container_of(l, struct CUmod_st, link);
			if (sim_obj_unregister(&m->obj)) {
				sim_list_del(l);
				m->unloaded = true;
				funcs = m->funcs;
				m->funcs = NULL;
				victim = m;
				break;
			}
		}
		pthread_mutex_unlock(&ctx->lock);
		if (!victim)
			break;
		put_funcs(funcs, victim->nfuncs);
		sim_obj_put(&victim->obj);
	}
}

/* Looks up a module for a query; fails with its context's sticky error. */
static CUresult module_get(CUmodule h, struct CUmod_st **out)
{
	if (!atomic_load(&sim.initialized))
		return CUDA_ERROR_NOT_INITIALIZED;
	struct CUmod_st *m = sim_obj_get(h, SIM_MODULE);
	if (!m)
		return CUDA_ERROR_INVALID_HANDLE;
	CUresult r = (CUresult)atomic_load(&m->ctx->sticky);
	if (r) {
		sim_obj_put(&m->obj);
		return r;
	}
	*out = m;
	return CUDA_SUCCESS;
}

CUresult cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name)
{
	struct CUmod_st *m;
	CUresult r = module_get(hmod, &m);
	if (r)
		return r;
	if (!hfunc || !name) {
		sim_obj_put(&m->obj);
		return CUDA_ERROR_INVALID_VALUE;
	}
	pthread_mutex_lock(&m->ctx->lock);
	if (m->unloaded)
		r = CUDA_ERROR_INVALID_HANDLE;
	else {
		const struct xgpu_kernel_info *ki = xgpu_fatbin_find(&m->info, name);
		if (ki)
			*hfunc = m->funcs[ki - m->info.kernels];
		else
			r = CUDA_ERROR_NOT_FOUND;
	}
	pthread_mutex_unlock(&m->ctx->lock);
	sim_obj_put(&m->obj);
	return r;
}

CUresult cuModuleGetGlobal(CUdeviceptr *dptr, size_t *bytes, CUmodule hmod, const char *name)
{
	struct CUmod_st *m;
	CUresult r = module_get(hmod, &m);
	if (r)
		return r;
	if (!name) {
		sim_obj_put(&m->obj);
		return CUDA_ERROR_INVALID_VALUE;
	}
	r = CUDA_ERROR_NOT_FOUND;
	pthread_mutex_lock(&m->ctx->lock);
	for (uint32_t i = 0; !m->unloaded && i < m->nglobals; i++)
		if (!strcmp(m->globals[i].name, name)) {
			/* Both outputs are optional. */
			if (dptr)
				*dptr = m->globals[i].addr;
			if (bytes)
				*bytes = m->globals[i].size;
			r = CUDA_SUCCESS;
			break;
		}
	if (m->unloaded)
		r = CUDA_ERROR_INVALID_HANDLE;
	pthread_mutex_unlock(&m->ctx->lock);
	sim_obj_put(&m->obj);
	return r;
}

/* ---- functions --------------------------------------------------------------------- */

static CUresult func_get(CUfunction h, struct CUfunc_st **out)
{
	if (!atomic_load(&sim.initialized))
		return CUDA_ERROR_NOT_INITIALIZED;
	struct CUfunc_st *f = sim_obj_get(h, SIM_FUNC);
	if (!f)
		return CUDA_ERROR_INVALID_HANDLE;
	*out = f;
	return CUDA_SUCCESS;
}

CUresult cuFuncGetAttribute(int *pi, CUfunction_attribute attrib, CUfunction hfunc)
{
	struct CUfunc_st *f;
	CUresult r = func_get(hfunc, &f);
	if (r)
		return r;
	int v = 0;
	switch (attrib) {
	case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
		v = (int)f->max_threads;
		break;
	case CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES:
		v = (int)f->static_shared;
		break;
	case CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES:
		v = (int)f->const_bytes;
		break;
	case CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES:
		v = (int)f->local_bytes;
		break;
	case CU_FUNC_ATTRIBUTE_NUM_REGS:
		v = (int)f->regs;
		break;
	case CU_FUNC_ATTRIBUTE_PTX_VERSION:
	case CU_FUNC_ATTRIBUTE_BINARY_VERSION:
		v = (int)f->mod->arch;
		break;
	case CU_FUNC_ATTRIBUTE_CACHE_MODE_CA:
	case CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET:
		v = 0;
		break;
	case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
		v = atomic_load(&f->max_dynamic_shared);
		break;
	case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
		v = atomic_load(&f->carveout);
		break;
	case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH:
	case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT:
	case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH:
		v = atomic_load(&f->cluster[attrib - CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH]);
		break;
	case CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED:
		v = atomic_load(&f->non_portable_cluster);
		break;
	case CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
		v = atomic_load(&f->cluster_policy);
		break;
	default:
		r = CUDA_ERROR_INVALID_VALUE;
		break;
	}
	if (!pi)
		r = CUDA_ERROR_INVALID_VALUE;
	else if (!r)
		*pi = v;
	sim_obj_put(&f->obj);
	return r;
}

CUresult cuFuncSetAttribute(CUfunction hfunc, CUfunction_attribute attrib, int value)
{
	struct CUfunc_st *f;
	CUresult r = func_get(hfunc, &f);
	if (r)
		return r;
	switch (attrib) {
	case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
		if (value < 0 || (uint64_t)value + f->static_shared > SIM_SHARED_PER_BLOCK_OPTIN)
			r = CUDA_ERROR_INVALID_VALUE;
		else
			atomic_store(&f->max_dynamic_shared, value);
		break;
	case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
		if (value < -1 || value > 100)
			r = CUDA_ERROR_INVALID_VALUE;
		else
			atomic_store(&f->carveout, value);
		break;
	case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH:
	case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT:
	case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH:
		if (value < 0 || value > 16)
			r = CUDA_ERROR_INVALID_VALUE;
		else
			atomic_store(&f->cluster[attrib - CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH], value);
		break;
	case CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED:
		if (value != 0 && value != 1)
			r = CUDA_ERROR_INVALID_VALUE;
		else
			atomic_store(&f->non_portable_cluster, value);
		break;
	case CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
		if (value < CU_CLUSTER_SCHEDULING_POLICY_DEFAULT ||
		    value > CU_CLUSTER_SCHEDULING_POLICY_LOAD_BALANCING)
			r = CUDA_ERROR_INVALID_VALUE;
		else
			atomic_store(&f->cluster_policy, value);
		break;
	default:
		r = CUDA_ERROR_INVALID_VALUE; /* read-only or unknown */
		break;
	}
	sim_obj_put(&f->obj);
	return r;
}

CUresult cuFuncGetParamInfo(CUfunction func, size_t paramIndex, size_t *paramOffset, size_t *paramSize)
{
	struct CUfunc_st *f;
	CUresult r = func_get(func, &f);
	if (r)
		return r;
	if (!paramOffset || paramIndex >= f->ki->nparams)
		r = CUDA_ERROR_INVALID_VALUE;
	else {
		*paramOffset = f->ki->params[paramIndex].offset;
		if (paramSize)
			*paramSize = f->ki->params[paramIndex].size;
	}
	sim_obj_put(&f->obj);
	return r;
}

CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int *numBlocks, CUfunction func, int blockSize,
						     size_t dynamicSMemSize)
{
	struct CUfunc_st *f;
	CUresult r = func_get(func, &f);
	if (r)
		return r;
	if (!numBlocks || blockSize <= 0) {
		sim_obj_put(&f->obj);
		return CUDA_ERROR_INVALID_VALUE;
	}
	const struct sim_devprops *p = &f->mod->ctx->dev->p;
	uint64_t warps = ((uint64_t)blockSize + 31) / 32;
	uint64_t blocks = SIM_MAX_BLOCKS_PER_SM;
	uint64_t by_threads = (uint64_t)p->threads_per_sm / (warps * 32);
	if (by_threads < blocks)
		blocks = by_threads;
	if (f->regs) {
		uint64_t per_warp = ((uint64_t)f->regs * 32 + 255) / 256 * 256;
		uint64_t by_regs = SIM_REGS_PER_SM / per_warp / warps;
		if (by_regs < blocks)
			blocks = by_regs;
	}
	uint64_t smem = (uint64_t)f->static_shared + dynamicSMemSize;
	if (smem > SIM_SHARED_PER_BLOCK_OPTIN || (uint64_t)blockSize > f->max_threads)
		blocks = 0;
	else if (smem) {
		uint64_t by_smem = SIM_SHARED_PER_SM / (smem + SIM_SHARED_RESERVED);
		if (by_smem < blocks)
			blocks = by_smem;
	}
	*numBlocks = (int)blocks;
	sim_obj_put(&f->obj);
	return CUDA_SUCCESS;
}

/* ---- launches ------------------------------------------------------------------------ */

/* Lays the kernel's arguments out in a new buffer of its parameter size. */
static CUresult build_params(const struct CUfunc_st *f, void **kernelParams, void **extra, uint8_t **out)
{
	const struct xgpu_kernel_info *ki = f->ki;
	uint32_t n = ki->param_bytes;
	*out = NULL;
	if (kernelParams && extra)
		return CUDA_ERROR_INVALID_VALUE;
	uint8_t *buf = calloc(1, n ? n : 1);
	if (!buf)
		return CUDA_ERROR_OUT_OF_MEMORY;
	if (extra) {
		const void *ptr = NULL;
		const size_t *size = NULL;
		int i = 0;
		for (; i < SIM_EXTRA_MAX && extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
			if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER)
				ptr = extra[i + 1];
			else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE)
				size = extra[i + 1];
			else
				break;
		}
		bool ok = i < SIM_EXTRA_MAX && extra[i] == CU_LAUNCH_PARAM_END;
		/* The buffer must be exactly the kernel's parameter buffer. */
		if (ok && n)
			ok = ptr && size && *size == n;
		else if (ok && size)
			ok = *size == 0;
		if (!ok) {
			free(buf);
			return CUDA_ERROR_INVALID_VALUE;
		}
		if (n)
			memcpy(buf, ptr, n);
	} else if (ki->nparams) {
		if (!kernelParams) {
			free(buf);
			return CUDA_ERROR_INVALID_VALUE;
		}
		for (uint32_t i = 0; i < ki->nparams; i++) {
			uint32_t off = ki->params[i].offset, sz = ki->params[i].size;
			if (!kernelParams[i] || off > n || sz > n - off) {
				free(buf);
				return CUDA_ERROR_INVALID_VALUE;
			}
			memcpy(buf + off, kernelParams[i], sz);
		}
	}
	*out = buf;
	return CUDA_SUCCESS;
}

static CUresult launch(CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
		       unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
		       unsigned int sharedMemBytes, CUstream hStream, void **kernelParams, void **extra,
		       struct sim_cond_state *cond)
{
	struct CUctx_st *c;
	CUresult r = sim_ctx_enter(&c, false);
	if (r)
		return r;
	struct CUfunc_st *fn = sim_obj_get(f, SIM_FUNC);
	if (!fn || fn->mod->ctx != c) {
		if (fn)
			sim_obj_put(&fn->obj);
		sim_ctx_put(c);
		return CUDA_ERROR_INVALID_HANDLE;
	}
	struct CUstream_st *s = NULL;
	struct sim_op *op = NULL;
	uint8_t *params = NULL;
	uint64_t threads = (uint64_t)blockDimX * blockDimY * blockDimZ;
	r = sim_stream_get(hStream, c, &s);
	if (r)
		goto out;
	if (!gridDimX || !gridDimY || !gridDimZ || !blockDimX || !blockDimY || !blockDimZ ||
	    gridDimX > 2147483647u || gridDimY > 65535 || gridDimZ > 65535 || blockDimX > 1024 ||
	    blockDimY > 1024 || blockDimZ > 64 || threads > SIM_MAX_THREADS_PER_BLOCK) {
		r = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	if (threads > fn->max_threads) {
		/* Over the kernel's maxThreadsPerBlock (__launch_bounds__):
		 * driver 580 answers INVALID_VALUE (seen on an H100). */
		r = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	if (sharedMemBytes > (unsigned)atomic_load(&fn->max_dynamic_shared) ||
	    (uint64_t)sharedMemBytes + fn->static_shared > SIM_SHARED_PER_BLOCK_OPTIN) {
		r = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	r = build_params(fn, kernelParams, extra, &params);
	if (r)
		goto out;
	op = sim_op_new(c, SIM_OP_KERNEL);
	if (!op) {
		r = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	op->u.kernel.func = fn; /* the op takes our reference */
	fn = NULL;
	op->u.kernel.params = params;
	params = NULL;
	op->u.kernel.param_bytes = op->u.kernel.func->ki->param_bytes;
	op->u.kernel.grid[0] = gridDimX;
	op->u.kernel.grid[1] = gridDimY;
	op->u.kernel.grid[2] = gridDimZ;
	op->u.kernel.block[0] = blockDimX;
	op->u.kernel.block[1] = blockDimY;
	op->u.kernel.block[2] = blockDimZ;
	op->u.kernel.shared = sharedMemBytes;
	if (cond) {
		atomic_fetch_add(&cond->refs, 1);
		op->u.kernel.cond = cond;
	}
	r = sim_submit_live(op, s);
	op = NULL;
out:
	sim_op_free(op);
	free(params);
	if (fn)
		sim_obj_put(&fn->obj);
	sim_stream_put(s);
	sim_ctx_put(c);
	return r;
}

CUresult cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
			unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
			unsigned int sharedMemBytes, CUstream hStream, void **kernelParams, void **extra)
{
	return launch(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes,
		      hStream, kernelParams, extra, NULL);
}

CUresult sim_launch_kernel(CUfunction f, const unsigned grid[3], const unsigned block[3], unsigned shared,
			   CUstream hStream, void **extra, struct sim_cond_state *st)
{
	return launch(f, grid[0], grid[1], grid[2], block[0], block[1], block[2], shared, hStream, NULL,
		      extra, st);
}

/* ---- running kernels (on the worker) -------------------------------------------------- */

static void *kernel_map(const struct xgpu_simk_launch *l, uint64_t addr, uint64_t bytes)
{
	const struct sim_op *op = l->priv;
	if (bytes > SIZE_MAX)
		return NULL;
	pthread_mutex_lock(&op->ctx->lock);
	void *p = sim_mem_translate_locked(op->ctx, (CUdeviceptr)addr, (size_t)bytes);
	pthread_mutex_unlock(&op->ctx->lock);
	return p;
}

static int kernel_object(const struct xgpu_simk_launch *l, uint64_t obj, int surface,
			 struct xgpu_simk_texture *out)
{
	const struct sim_op *op = l->priv;
	return sim_object_find(op->ctx, obj, surface, out) ? 0 : -1;
}

static pthread_mutex_t warned_lock = PTHREAD_MUTEX_INITIALIZER;
static char **warned;
static size_t nwarned;

/* Says once per kernel name how its results are computed: not at all
 * (interpreted false), or by the PTX interpreter. */
static void note_kernel(const char *name, bool interpreted)
{
	pthread_mutex_lock(&warned_lock);
	bool seen = false;
	for (size_t i = 0; i < nwarned && !seen; i++)
		seen = warned[i][0] == (interpreted ? 'i' : 'u') && !strcmp(warned[i] + 1, name);
	if (!seen) {
		char **nw = realloc(warned, (nwarned + 1) * sizeof *nw);
		size_t len = strlen(name);
		char *copy = malloc(len + 2);
		if (nw && copy) {
			copy[0] = interpreted ? 'i' : 'u';
			memcpy(copy + 1, name, len + 1);
			warned = nw;
			warned[nwarned++] = copy;
		} else {
			if (nw)
				warned = nw;
			free(copy);
		}
		if (interpreted)
			sim_log("kernel %s has no host implementation: computed from its PTX", name);
		else
			sim_log(
			    "kernel %s has no host implementation: it takes its modeled time but computes "
			    "nothing",
			    name);
	}
	pthread_mutex_unlock(&warned_lock);
}

void sim_module_fini(void)
{
	pthread_mutex_lock(&warned_lock);
	for (size_t i = 0; i < nwarned; i++)
		free(warned[i]);
	free(warned);
	warned = NULL;
	nwarned = 0;
	pthread_mutex_unlock(&warned_lock);
}

struct interp_cancel {
	struct sim_op *op;
	uint64_t deadline; /* 0: none */
};

static CUresult interp_cancelled(void *arg)
{
	struct interp_cancel *c = arg;
	struct CUctx_st *ctx = c->op->ctx;
	if (atomic_load(&ctx->sticky) || atomic_load(&ctx->dying))
		return CUDA_ERROR_LAUNCH_FAILED;
	if (c->deadline && xgpu_now_ns() > c->deadline)
		return CUDA_ERROR_LAUNCH_TIMEOUT;
	pthread_mutex_lock(&ctx->dev->lock);
	bool stop = ctx->dev->stop;
	pthread_mutex_unlock(&ctx->dev->lock);
	return stop ? CUDA_ERROR_LAUNCH_FAILED : CUDA_SUCCESS;
}

static bool interp_object(void *arg, uint64_t h, int surface, struct ptx_tex *out)
{
	const struct interp_cancel *c = arg;
	return sim_object_find_ptx(c->op->ctx, h, surface, out);
}

/* Runs kernel op's PTX over the context's memory; *spent_ns: the wall time it
 * took. */
static CUresult interpret(struct sim_op *op, uint64_t *spent_ns)
{
	const struct CUfunc_st *f = op->u.kernel.func;
	struct CUctx_st *ctx = op->ctx;
	uint64_t t0 = xgpu_now_ns();
	/* The allocations it may reach: those live when it starts. Memory freed
	 * later is released only once this kernel is done (release_allocs and
	 * cuMemFree wait for the work queued before them). */
	pthread_mutex_lock(&ctx->lock);
	size_t n = 0;
	struct ptx_region *mem = malloc((ctx->allocs.n ? ctx->allocs.n : 1) * sizeof *mem);
	for (size_t i = 0; mem && i < ctx->allocs.n; i++) {
		const struct sim_alloc *a = &ctx->allocs.v[i];
		if (!a->dead)
			mem[n++] = (struct ptx_region){a->base, a->size, a->host};
	}
	if (f->pk->heap && !ctx->heap) {
		/* The limit as the guest set it, up to 1 GiB of the executor's memory. */
		size_t hs = ctx->limits[CU_LIMIT_MALLOC_HEAP_SIZE];
		ctx->heap = ptx_heap_new(hs < ((size_t)1 << 30) ? hs : (size_t)1 << 30);
	}
	struct ptx_heap *heap = ctx->heap;
	pthread_mutex_unlock(&ctx->lock);
	if (!mem)
		return CUDA_ERROR_OUT_OF_MEMORY;
	/* A kernel that loops for ever is cut by the watchdog, given room for
	 * the interpreter's slowness. */
	struct interp_cancel cancel = {op, 0};
	if (sim.watchdog_ns) {
		uint64_t limit = sim.watchdog_ns < 30000000000ull ? 30000000000ull : sim.watchdog_ns;
		cancel.deadline = t0 + limit;
	}
	struct ptx_launch l = {
	    .grid = {op->u.kernel.grid[0], op->u.kernel.grid[1], op->u.kernel.grid[2]},
	    .block = {op->u.kernel.block[0], op->u.kernel.block[1], op->u.kernel.block[2]},
	    .shared_dyn = op->u.kernel.shared,
	    .params = op->u.kernel.params,
	    .param_bytes = op->u.kernel.param_bytes,
	    .mem = mem,
	    .nmem = n,
	    .cancelled = interp_cancelled,
	    .object = interp_object,
	    .arg = &cancel,
	    .heap = heap,
	    .set_conditional = op->u.kernel.cond ? sim_cond_set : NULL,
	    .cond_arg = op->u.kernel.cond,
	};
	CUresult r = ptx_run(f->pk, &l);
	free(mem);
	*spent_ns = xgpu_now_ns() - t0;
	atomic_fetch_add(&sim_ptx_insns, l.insns);
	atomic_fetch_add(&sim_ptx_ns, *spent_ns);
	if (*spent_ns >= 100000000u)
		sim_log("kernel %s: %llu thread-instructions interpreted in %.3f s (%.1f M/s)", f->ki->name,
			(unsigned long long)l.insns, (double)*spent_ns / 1e9,
			(double)l.insns / ((double)*spent_ns / 1e3));
	if (r == CUDA_ERROR_ILLEGAL_ADDRESS || r == CUDA_ERROR_MISALIGNED_ADDRESS ||
	    r == CUDA_ERROR_ILLEGAL_INSTRUCTION || r == CUDA_ERROR_LAUNCH_TIMEOUT)
		sim_log("kernel %s faulted: %s (%s)", f->ki->name, l.fault[0] ? l.fault : "interpreter",
			r == CUDA_ERROR_ILLEGAL_ADDRESS      ? "CUDA_ERROR_ILLEGAL_ADDRESS"
			: r == CUDA_ERROR_MISALIGNED_ADDRESS ? "CUDA_ERROR_MISALIGNED_ADDRESS"
			: r == CUDA_ERROR_LAUNCH_TIMEOUT     ? "CUDA_ERROR_LAUNCH_TIMEOUT"
							     : "CUDA_ERROR_ILLEGAL_INSTRUCTION");
	else if (r == CUDA_ERROR_LAUNCH_FAILED && l.fault[0]) /* a call the kernel made wrongly */
		sim_log("kernel %s faulted: %s (CUDA_ERROR_LAUNCH_FAILED)", f->ki->name, l.fault);
	else if (r && !atomic_load(&ctx->sticky) && !atomic_load(&ctx->dying))
		sim_log("kernel %s: the PTX interpreter failed with error %d", f->ki->name, (int)r);
	if (r && (atomic_load(&ctx->dying) || r == CUDA_ERROR_OUT_OF_MEMORY))
		r = r == CUDA_ERROR_OUT_OF_MEMORY ? CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES : CUDA_SUCCESS;
	return r;
}

static uint64_t default_cost(const struct sim_op *op)
{
	const uint32_t *g = op->u.kernel.grid, *b = op->u.kernel.block;
	double threads = (double)g[0] * g[1] * g[2] * b[0] * b[1] * b[2];
	double ns = SIM_LAUNCH_NS + threads / (SIM_THREADS_PER_NS_132SM * op->ctx->sm_count / 132.0);
	return ns > 1e15 ? (uint64_t)1e15 : (uint64_t)ns;
}

/* The sticky error of a kernel whose host implementation returned rc. A GPU
 * fails a launch only with an error of the launch-failure class, which is
 * what callers (xgpud included) take as a context's sticky error, so any
 * other code a plugin returns (INVALID_VALUE for parameters it cannot read,
 * say) reads as the generic one. */
static CUresult launch_error(int rc)
{
	return xgpu_cuerr_is_launch_failure(rc) ? (CUresult)rc : CUDA_ERROR_LAUNCH_FAILED;
}

CUresult sim_kernel_run(struct sim_op *op, uint64_t *cost_ns)
{
	const struct CUfunc_st *f = op->u.kernel.func;
	struct xgpu_simk_launch l = {
	    .grid = {op->u.kernel.grid[0], op->u.kernel.grid[1], op->u.kernel.grid[2]},
	    .block = {op->u.kernel.block[0], op->u.kernel.block[1], op->u.kernel.block[2]},
	    .shared_bytes = op->u.kernel.shared,
	    .params = op->u.kernel.params,
	    .param_bytes = op->u.kernel.param_bytes,
	    .layout = f->layout,
	    .nparams = f->ki->nparams,
	    .map = kernel_map,
	    .priv = op,
	    .object = kernel_object,
	};
	CUresult r = CUDA_SUCCESS;
	uint64_t spent = 0;
	if (f->impl) {
		int rc = f->impl->run(&l);
		if (rc)
			r = launch_error(rc);
	} else if (f->pk) {
		note_kernel(f->ki->name, true);
		/* Whatever stopped it (the log says what), a kernel that did not
		 * finish fails its context as a GPU's would: with a launch failure,
		 * which callers take as sticky. */
		r = interpret(op, &spent);
		if (r)
			r = launch_error(r);
	} else
		note_kernel(f->ki->name, false);
	*cost_ns = f->impl && f->impl->cost_ns ? f->impl->cost_ns(&l) : default_cost(op);
	/* An interpreted kernel occupies the device for its modeled time in
	 * all: the interpretation's own time counts towards it. */
	double spent_model = (double)spent * sim.speed;
	*cost_ns = spent_model >= (double)*cost_ns ? 0 : *cost_ns - (uint64_t)spent_model;
	return r;
}

/* cuLaunchKernelEx: the attributes the simulated device gives meaning to.
 * A cooperative launch must fit on the device at once (every block
 * resident, so that grid-wide synchronisation cannot deadlock): more blocks
 * than occupancy x SMs is refused as the real driver refuses it. */
CUresult cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f, void **kernelParams, void **extra)
{
	if (!config || (config->numAttrs && !config->attrs))
		return CUDA_ERROR_INVALID_VALUE;
	bool cooperative = false;
	CUlaunchAttributeValue cl = {.clusterDim = {1, 1, 1}};
	for (unsigned i = 0; i < config->numAttrs; i++) {
		const CUlaunchAttribute *a = &config->attrs[i];
		if (a->id == CU_LAUNCH_ATTRIBUTE_COOPERATIVE)
			cooperative = a->value.cooperative != 0;
		else if (a->id == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION)
			cl = a->value;
		else if (a->id == CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE) {
			if ((unsigned)a->value.clusterSchedulingPolicyPreference >
			    CU_CLUSTER_SCHEDULING_POLICY_LOAD_BALANCING)
				return CUDA_ERROR_INVALID_VALUE;
		} else if (a->id != CU_LAUNCH_ATTRIBUTE_IGNORE)
			return CUDA_ERROR_NOT_SUPPORTED;
	}
	if (cl.clusterDim.x != 1 || cl.clusterDim.y != 1 || cl.clusterDim.z != 1) {
		/* Thread block clusters: the blocks run as usual (the simulated
		 * device has no distributed shared memory to give them), after
		 * the checks NVIDIA's driver makes. */
		if (!cl.clusterDim.x || !cl.clusterDim.y || !cl.clusterDim.z)
			return CUDA_ERROR_INVALID_VALUE;
		struct CUfunc_st *fn;
		CUresult r = func_get(f, &fn);
		if (r)
			return r;
		bool can = fn->mod->ctx->dev->p.cc_major >= 9;
		unsigned most = atomic_load(&fn->non_portable_cluster) ? 16 : 8;
		sim_obj_put(&fn->obj);
		if (!can)
			return CUDA_ERROR_NOT_SUPPORTED;
		uint64_t blocks = (uint64_t)cl.clusterDim.x * cl.clusterDim.y * cl.clusterDim.z;
		if (blocks > most || config->gridDimX % cl.clusterDim.x ||
		    config->gridDimY % cl.clusterDim.y || config->gridDimZ % cl.clusterDim.z)
			return CUDA_ERROR_INVALID_CLUSTER_SIZE;
	}
	if (cooperative) {
		struct CUfunc_st *fn;
		CUresult r = func_get(f, &fn);
		if (r)
			return r;
		int sms = fn->mod->ctx->dev->p.sms;
		sim_obj_put(&fn->obj);
		uint64_t threads = (uint64_t)config->blockDimX * config->blockDimY * config->blockDimZ;
		uint64_t blocks = (uint64_t)config->gridDimX * config->gridDimY * config->gridDimZ;
		int per_sm = 0;
		if (threads && threads <= INT32_MAX) {
			r = cuOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, f, (int)threads,
									config->sharedMemBytes);
			if (r)
				return r;
		}
		if (blocks > (uint64_t)per_sm * (uint64_t)sms)
			return CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE;
	}
	return cuLaunchKernel(f, config->gridDimX, config->gridDimY, config->gridDimZ, config->blockDimX,
			      config->blockDimY, config->blockDimZ, config->sharedMemBytes, config->hStream,
			      kernelParams, extra);
}
