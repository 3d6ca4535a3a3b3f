/* SPDX-License-Identifier: Apache-2.0 */
/* rt_state.c - the frontend's shared runtime state (see runtime.h): last
 * errors, the remote-handle epoch, the device description cache, the
 * shadow tables of device allocations and pinned segments, and reporting of
 * unsupported calls. */
#include "allocs.h"
#include "errors.h"
#include "runtime.h"
#include "util.h"

#include <cuda.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

static _Thread_local cudaError_t last_error = cudaSuccess;
/* An error that broke the context stays the answer for every thread: CUDA
 * does not let cudaGetLastError clear it. */
static _Atomic int sticky_error;

cudaError_t xgpu_rt_ret(cudaError_t err)
{
	if (err != cudaSuccess && err != cudaErrorNotReady) {
		last_error = err;
		if (xgpu_rt_error_is_sticky(err)) {
			int none = cudaSuccess;
			atomic_compare_exchange_strong(&sticky_error, &none, (int)err);
		}
	}
	return err;
}

XGPU_EXPORT cudaError_t cudaGetLastError(void)
{
	/* A pipelined launch's failure belongs to this answer. */
	xgpu_rt_ret(xgpu_client_settle());
	int sticky = atomic_load(&sticky_error);
	if (sticky)
		return (cudaError_t)sticky;
	cudaError_t e = last_error;
	last_error = cudaSuccess;
	return e;
}

XGPU_EXPORT cudaError_t cudaPeekAtLastError(void)
{
	xgpu_rt_ret(xgpu_client_settle());
	int sticky = atomic_load(&sticky_error);
	return sticky ? (cudaError_t)sticky : last_error;
}

/* ---- the primary context ------------------------------------------------ */

/* As NVIDIA's runtime does, the runtime works in device 0's primary context
 * and makes it current on each thread it initialises (unless the thread has
 * a context of its own current), so libraries that call the driver API
 * directly (cuFFT: cuCtxGetCurrent, cuLaunchKernel) find the program's
 * context. The runtime retains it once per process; cudaDeviceReset
 * releases that. */
static pthread_mutex_t primary_lock = PTHREAD_MUTEX_INITIALIZER;
static CUcontext primary;
static bool primary_retained;
static unsigned primary_generation;             /* xgpu_fork_generation when retained */
static _Thread_local unsigned thread_ctx_epoch; /* xgpu_rt_epoch() + 1 once done */

cudaError_t xgpu_rt_primary_current(bool force)
{
	unsigned epoch = xgpu_rt_epoch() + 1;
	if (!force && thread_ctx_epoch == epoch)
		return cudaSuccess;
	CUresult r = cuInit(0);
	pthread_mutex_lock(&primary_lock);
	if (!r && (!primary_retained || primary_generation != xgpu_fork_generation)) {
		r = cuDevicePrimaryCtxRetain(&primary, 0);
		primary_retained = r == CUDA_SUCCESS;
		primary_generation = xgpu_fork_generation;
	}
	CUcontext ctx = primary;
	pthread_mutex_unlock(&primary_lock);
	if (r)
		return cudaErrorInitializationError;
	CUcontext cur = NULL;
	if (force || (cuCtxGetCurrent(&cur) == CUDA_SUCCESS && !cur))
		r = cuCtxSetCurrent(ctx);
	if (r)
		return cudaErrorInitializationError;
	thread_ctx_epoch = epoch;
	return cudaSuccess;
}

void xgpu_rt_primary_release(void)
{
	pthread_mutex_lock(&primary_lock);
	if (primary_retained && primary_generation == xgpu_fork_generation)
		cuDevicePrimaryCtxRelease(0);
	primary_retained = false;
	pthread_mutex_unlock(&primary_lock);
}

cudaError_t xgpu_rt_client(struct xgpu_client **c)
{
	cudaError_t e = xgpu_client_get(c);
	if (!e)
		e = xgpu_rt_primary_current(false);
	return xgpu_rt_ret(e);
}

static unsigned epoch_reset;

unsigned xgpu_rt_epoch(void)
{
	/* A fork bumps xgpu_fork_generation in the child; a reset bumps ours. */
	return __atomic_load_n(&epoch_reset, __ATOMIC_ACQUIRE) * 65536u + xgpu_fork_generation;
}

void xgpu_rt_new_epoch(void)
{
	__atomic_add_fetch(&epoch_reset, 1, __ATOMIC_ACQ_REL);
}

/* ---- device description ---------------------------------------------------- */

static pthread_mutex_t devinfo_lock = PTHREAD_MUTEX_INITIALIZER;
static struct xgpu_device_info devinfo;
static unsigned devinfo_epoch;
static bool devinfo_ok;

cudaError_t xgpu_rt_devinfo(const struct xgpu_device_info **out)
{
	struct xgpu_client *c;
	cudaError_t e = xgpu_rt_client(&c);
	if (e)
		return e;
	pthread_mutex_lock(&devinfo_lock);
	if (!devinfo_ok || devinfo_epoch != xgpu_fork_generation) {
		e = xgpu_client_device_info(c, &devinfo);
		if (!e) {
			devinfo_ok = true;
			devinfo_epoch = xgpu_fork_generation;
		}
	}
	pthread_mutex_unlock(&devinfo_lock);
	if (e)
		return xgpu_rt_ret(e);
	*out = &devinfo;
	return cudaSuccess;
}

/* ---- shadow tables ------------------------------------------------------- */

/* A sorted array of ranges, for both tables. */
struct range {
	uint64_t base, size;
	struct xgpu_rt_seg seg; /* segments only */
};
struct ranges {
	pthread_mutex_t lock;
	struct range *v;
	size_t n, cap;
};

static struct ranges segs = {.lock = PTHREAD_MUTEX_INITIALIZER};

static ptrdiff_t floor_of(const struct ranges *t, uint64_t addr)
{
	return xgpu_floor_search(t->v, t->n, sizeof *t->v, offsetof(struct range, base), addr);
}

static void ranges_add(struct ranges *t, const struct range *r)
{
	pthread_mutex_lock(&t->lock);
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 64;
		struct range *v = realloc(t->v, cap * sizeof *v);
		if (!v) {
			/* The shadow is an optimisation for cudaMemcpyDefault;
			 * losing an entry only loses that inference. */
			pthread_mutex_unlock(&t->lock);
			return;
		}
		t->v = v;
		t->cap = cap;
	}
	ptrdiff_t at = floor_of(t, r->base) + 1;
	memmove(&t->v[at + 1], &t->v[at], (t->n - (size_t)at) * sizeof *t->v);
	t->v[at] = *r;
	t->n++;
	pthread_mutex_unlock(&t->lock);
}

static bool ranges_del(struct ranges *t, uint64_t base, struct range *out)
{
	pthread_mutex_lock(&t->lock);
	ptrdiff_t i = floor_of(t, base);
	bool found = i >= 0 && t->v[i].base == base;
	if (found) {
		if (out)
			*out = t->v[i];
		memmove(&t->v[i], &t->v[i + 1], (t->n - (size_t)i - 1) * sizeof *t->v);
		t->n--;
	}
	pthread_mutex_unlock(&t->lock);
	return found;
}

static bool ranges_find(struct ranges *t, uint64_t addr, uint64_t len, struct range *out)
{
	pthread_mutex_lock(&t->lock);
	ptrdiff_t i = floor_of(t, addr);
	bool found = false;
	if (i >= 0) {
		uint64_t off = addr - t->v[i].base;
		found = off < t->v[i].size && len <= t->v[i].size - off;
		if (found)
			*out = t->v[i];
	}
	pthread_mutex_unlock(&t->lock);
	return found;
}

/* Device allocations live in the registry both API layers share (allocs.h,
 * in our libcuda.so.1), so memory from cuMemAlloc counts here too. */
void xgpu_rt_devmem_add(uint64_t base, uint64_t size)
{
	xgpu_alloc_add(base, size, XGPU_ALLOC_DEVICE, 0);
}

void xgpu_rt_devmem_del(uint64_t base)
{
	xgpu_alloc_del(base, XGPU_ALLOC_DEVICE);
}

bool xgpu_rt_devmem_find(uint64_t addr, uint64_t *base, uint64_t *size)
{
	struct xgpu_alloc a;
	if (!xgpu_alloc_find(addr, 0, &a) || a.kind != XGPU_ALLOC_DEVICE)
		return false;
	if (base)
		*base = a.base;
	if (size)
		*size = a.size;
	return true;
}

void xgpu_rt_devmem_clear(void)
{
	xgpu_alloc_clear_device();
}

bool xgpu_rt_seg_find(const void *p, uint64_t len, struct xgpu_rt_seg *out)
{
	struct range r;
	if (!ranges_find(&segs, (uintptr_t)p, len, &r) || r.seg.epoch != xgpu_rt_epoch() || !r.seg.handle)
		return false;
	*out = r.seg;
	return true;
}

static bool seg_lookup_any(const void *p, struct xgpu_rt_seg *out)
{
	struct range r;
	if (!ranges_find(&segs, (uintptr_t)p, 0, &r))
		return false;
	*out = r.seg;
	return true;
}

/* ---- pinned host memory ---------------------------------------------------- */

/* Sharing a segment and registering it are two messages; one allocation at
 * a time keeps the daemon from ever holding more than one unclaimed share of
 * ours. */
static pthread_mutex_t host_alloc_lock = PTHREAD_MUTEX_INITIALIZER;

static cudaError_t host_alloc(struct xgpu_client *c, void **ptr, size_t mapped, unsigned flags);

XGPU_EXPORT cudaError_t cudaHostAlloc(void **ptr, size_t size, unsigned int flags)
{
	const unsigned known = cudaHostAllocPortable | cudaHostAllocMapped | cudaHostAllocWriteCombined;
	if (!ptr || (flags & ~known))
		return xgpu_rt_ret(cudaErrorInvalidValue);
	*ptr = NULL;
	if (size == 0)
		return cudaSuccess;
	struct xgpu_client *c;
	cudaError_t e = xgpu_rt_client(&c);
	if (e)
		return e;
	size_t mapped = (size + 4095) & ~(size_t)4095;
	if (mapped < size)
		return xgpu_rt_ret(cudaErrorMemoryAllocation);
	pthread_mutex_lock(&host_alloc_lock);
	e = host_alloc(c, ptr, mapped, flags);
	pthread_mutex_unlock(&host_alloc_lock);
	return xgpu_rt_ret(e);
}

static cudaError_t host_alloc(struct xgpu_client *c, void **ptr, size_t mapped, unsigned flags)
{
	cudaError_t e;
	void *p;
	uint64_t token;
	if (!xgpu_client_shares_host_memory(c)) {
		/* A remote GPU: the memory stays this process's (no segment,
		 * handle 0), and its copies take the pageable path. */
		p = mmap(NULL, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			return cudaErrorMemoryAllocation;
		struct range r = {
		    .base = (uintptr_t)p,
		    .size = mapped,
		    .seg = {.ptr = p, .size = mapped, .epoch = xgpu_rt_epoch(), .flags = flags}};
		ranges_add(&segs, &r);
		xgpu_alloc_add((uintptr_t)p, mapped, XGPU_ALLOC_HOST, flags);
		*ptr = p;
		return cudaSuccess;
	}
	e = xgpu_client_share(c, mapped, &p, &token);
	if (e)
		return e;
	struct xgpu_req_SEG_REGISTER req = {.token = token, .size = mapped};
	struct xgpu_rsp_SEG_REGISTER rsp;
	e = xgpu_call_SEG_REGISTER(c, &req, &rsp);
	if (e) {
		xgpu_client_unshare(c, p, mapped);
		return e == cudaErrorInvalidValue ? cudaErrorMemoryAllocation : e;
	}
	struct range r = {
	    .base = (uintptr_t)p,
	    .size = mapped,
	    .seg = {.ptr = p, .size = mapped, .handle = rsp.seg, .epoch = xgpu_rt_epoch(), .flags = flags}};
	ranges_add(&segs, &r);
	xgpu_alloc_add((uintptr_t)p, mapped, XGPU_ALLOC_HOST, flags);
	*ptr = p;
	return cudaSuccess;
}

XGPU_EXPORT cudaError_t cudaMallocHost(void **ptr, size_t size)
{
	return cudaHostAlloc(ptr, size, cudaHostAllocDefault);
}

XGPU_EXPORT cudaError_t cudaFreeHost(void *ptr)
{
	if (!ptr)
		return cudaSuccess;
	struct range r;
	if (!ranges_del(&segs, (uintptr_t)ptr, &r))
		return xgpu_rt_ret(cudaErrorInvalidValue);
	xgpu_alloc_del((uintptr_t)ptr, XGPU_ALLOC_HOST);
	struct xgpu_client *c;
	cudaError_t e = xgpu_rt_client(&c);
	if (e)
		return e;
	if (r.seg.handle && r.seg.epoch == xgpu_rt_epoch()) {
		struct xgpu_req_SEG_UNREGISTER req = {.seg = r.seg.handle};
		struct xgpu_rsp_SEG_UNREGISTER rsp;
		e = xgpu_call_SEG_UNREGISTER(c, &req, &rsp);
	}
	if (r.seg.handle)
		xgpu_client_unshare(c, r.seg.ptr, r.seg.size);
	else
		munmap(r.seg.ptr, r.seg.size); /* the program's own (a remote GPU's) */
	return xgpu_rt_ret(e);
}

XGPU_EXPORT cudaError_t cudaHostGetFlags(unsigned int *flags, void *ptr)
{
	struct xgpu_rt_seg s;
	if (!flags || !seg_lookup_any(ptr, &s))
		return xgpu_rt_ret(cudaErrorInvalidValue);
	*flags = s.flags;
	return cudaSuccess;
}

XGPU_EXPORT cudaError_t cudaHostGetDevicePointer(void **pdev, void *host, unsigned int flags)
{
	/* Pinned memory lives in the guest; the GPU can address only Dom0's
	 * mapping of it, which no guest pointer can name. The device reports
	 * canMapHostMemory = 0 (the daemon says so in DEVICE_INFO), and for a
	 * pointer the device has no mapping of CUDA answers
	 * cudaErrorInvalidValue. */
	if (!pdev || !host || flags)
		return xgpu_rt_ret(cudaErrorInvalidValue);
	xgpu_fe_warn_once("hostdevptr",
			  "cudaHostGetDevicePointer: host memory cannot be mapped into the device's "
			  "address space under xgpu (it lives in the guest); returning "
			  "cudaErrorInvalidValue");
	*pdev = NULL;
	return xgpu_rt_ret(cudaErrorInvalidValue);
}

/* cudaHostRegister cannot share memory the program already owns with the
 * backend; the range stays pageable and its copies go through the data
 * areas, which is correct, only not zero-copy. Ranges are remembered so
 * cudaHostUnregister keeps CUDA's semantics. */
static struct ranges registered = {.lock = PTHREAD_MUTEX_INITIALIZER};

XGPU_EXPORT cudaError_t cudaHostRegister(void *ptr, size_t size, unsigned int flags)
{
	if (!ptr || !size)
		return xgpu_rt_ret(cudaErrorInvalidValue);
	if (flags & cudaHostRegisterMapped)
		xgpu_fe_warn_once("cudaHostRegisterMapped",
				  "cudaHostRegister: mapped registrations are treated as plain host memory");
	struct range r;
	if (ranges_find(&registered, (uintptr_t)ptr, size, &r))
		return xgpu_rt_ret(cudaErrorHostMemoryAlreadyRegistered);
	r = (struct range){.base = (uintptr_t)ptr, .size = size};
	ranges_add(&registered, &r);
	return cudaSuccess;
}

XGPU_EXPORT cudaError_t cudaHostUnregister(void *ptr)
{
	if (!ranges_del(&registered, (uintptr_t)ptr, NULL))
		return xgpu_rt_ret(cudaErrorHostMemoryNotRegistered);
	return cudaSuccess;
}

/* From the registry both layers share: cuMemAlloc's, cuMemAllocManaged's and
 * cuMemHostAlloc's memory is known here as well as the runtime's own. */
XGPU_EXPORT cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes *attr, const void *ptr)
{
	if (!attr)
		return xgpu_rt_ret(cudaErrorInvalidValue);
	memset(attr, 0, sizeof *attr);
	struct xgpu_alloc a;
	if (!xgpu_alloc_find((uintptr_t)ptr, 0, &a)) {
		attr->type = cudaMemoryTypeUnregistered;
		attr->device = -2;
	} else if (a.kind == XGPU_ALLOC_MANAGED) {
		attr->type = cudaMemoryTypeManaged;
		attr->device = 0;
		attr->devicePointer = (void *)ptr;
		attr->hostPointer = (void *)ptr;
	} else if (a.kind == XGPU_ALLOC_DEVICE) {
		attr->type = cudaMemoryTypeDevice;
		attr->device = 0;
		attr->devicePointer = (void *)ptr;
	} else {
		attr->type = cudaMemoryTypeHost;
		attr->device = 0;
		attr->hostPointer = (void *)ptr;
	}
	return cudaSuccess;
}

/* After cudaDeviceReset the backend forgot our segments; the memory stays
 * mapped for the program, as plain host memory. */
void xgpu_rt_segs_forget(void);
void xgpu_rt_segs_forget(void)
{
	pthread_mutex_lock(&segs.lock);
	for (size_t i = 0; i < segs.n; i++)
		segs.v[i].seg.handle = 0;
	pthread_mutex_unlock(&segs.lock);
}

/* ---- fork --------------------------------------------------------------- */

/* A forked child has only the forking thread: locks another thread held at
 * the fork would never be released. The child starts over with its own
 * channel, so its sticky error is gone too. */
static void rt_state_child(void)
{
	pthread_mutex_init(&devinfo_lock, NULL);
	pthread_mutex_init(&primary_lock, NULL);
	pthread_mutex_init(&segs.lock, NULL);
	pthread_mutex_init(&registered.lock, NULL);
	pthread_mutex_init(&host_alloc_lock, NULL);
	atomic_store(&sticky_error, cudaSuccess);
	last_error = cudaSuccess;
}

__attribute__((constructor)) static void rt_state_setup(void)
{
	pthread_atfork(NULL, NULL, rt_state_child);
}

/* ---- unsupported calls ----------------------------------------------------- */

cudaError_t xgpu_unsupported(const char *name)
{
	xgpu_client_note_unsupported(name, "cudaErrorNotSupported");
	return xgpu_rt_ret(cudaErrorNotSupported);
}
