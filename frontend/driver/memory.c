/* memory.c - device memory of the driver API: allocation, the copy and
 * memset families (synchronous, async, and their per-thread-stream forms)
 * and cuMemGetInfo, over the same wire calls as the runtime frontend.
 *
 * Host memory here is always pageable: copies stream through the channel's
 * data areas. cuMemsetD16/D32 with a pattern whose bytes differ have no wire
 * call of their own; they upload the pattern, which is correct but costs a
 * host-to-device copy of the range. */
#include "driver.h"
#include "managed.h"
#include "mempool.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The per-thread-default-stream entry points (_ptds, _ptsz) behave as the
 * legacy ones: the channel has one default stream. */
#define XGPU_ALIAS(name) __attribute__((alias(#name)))

/* ---- what cuPointerGetAttribute needs to know of allocations ---------- */

/* The daemon knows the allocations; cuPointerGetAttribute is answered here
 * from this list of what cuMemAlloc handed out instead of a round trip.
 * Libraries ask it about a few buffers (cuFFT, each buffer of a plan), so a
 * list searched from the newest is enough. */
struct allocation {
	CUdeviceptr base;
	size_t size;
	unsigned long long buffer_id; /* never reused within the process */
	CUcontext ctx;
	bool managed;
	struct allocation *next;
};
static pthread_mutex_t allocations_lock = PTHREAD_MUTEX_INITIALIZER;
static struct allocation *allocations;
static unsigned long long last_buffer_id;

static void remember_allocation(CUdeviceptr base, size_t size, bool managed)
{
	struct allocation *a = calloc(1, sizeof *a);
	if (!a)
		return; /* cuPointerGetAttribute will not know it: INVALID_VALUE */
	pthread_mutex_lock(&allocations_lock);
	*a = (struct allocation){base, size, ++last_buffer_id, xgpu_drv_current_ctx(), managed, allocations};
	allocations = a;
	pthread_mutex_unlock(&allocations_lock);
}

void xgpu_drv_remember_allocation(CUdeviceptr base, size_t size)
{
	remember_allocation(base, size, false);
}

void xgpu_drv_forget_allocation(CUdeviceptr base)
{
	pthread_mutex_lock(&allocations_lock);
	for (struct allocation **a = &allocations; *a; a = &(*a)->next)
		if ((*a)->base == base) {
			struct allocation *gone = *a;
			*a = gone->next;
			free(gone);
			break;
		}
	pthread_mutex_unlock(&allocations_lock);
}

static bool find_allocation(CUdeviceptr p, struct allocation *out)
{
	bool found = false;
	pthread_mutex_lock(&allocations_lock);
	for (struct allocation *a = allocations; a && !found; a = a->next)
		if (p >= a->base && p - a->base < a->size) {
			*out = *a;
			found = true;
		}
	pthread_mutex_unlock(&allocations_lock);
	return found;
}

CUresult cuMemAlloc(CUdeviceptr *dptr, size_t bytesize)
{
	struct xgpu_client *c;
	if (!dptr)
		return CUDA_ERROR_INVALID_VALUE;
	CUresult r = xgpu_drv_client_ctx(&c);
	if (r)
		return r;
	if (!bytesize)
		return CUDA_ERROR_INVALID_VALUE;
	struct xgpu_req_MEM_ALLOC req = {.size = bytesize};
	struct xgpu_rsp_MEM_ALLOC rsp;
	int e = xgpu_call_MEM_ALLOC(c, &req, &rsp);
	/* What memory pools cache goes back before an allocation fails. */
	if (e == cudaErrorMemoryAllocation && xgpu_pool_release_cached(c))
		e = xgpu_call_MEM_ALLOC(c, &req, &rsp);
	r = xgpu_drv_result(e);
	if (!r) {
		*dptr = (CUdeviceptr)rsp.dptr;
		remember_allocation(*dptr, bytesize, false);
	}
	return r;
}

/* Managed memory: one address valid in this process and on the device, kept
 * coherent by frontend/managed.c at launches and synchronisation points. */
CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags)
{
	struct xgpu_client *c;
	if (!dptr)
		return CUDA_ERROR_INVALID_VALUE;
	CUresult r = xgpu_drv_client_ctx(&c);
	if (r)
		return r;
	uint64_t d;
	r = xgpu_drv_result(xgpu_managed_alloc(c, bytesize, flags, &d));
	if (!r) {
		*dptr = (CUdeviceptr)d;
		remember_allocation(*dptr, bytesize, true);
	}
	return r;
}

CUresult cuMemFree(CUdeviceptr dptr)
{
	struct xgpu_client *c;
	CUresult r = xgpu_drv_client_ctx(&c);
	if (r)
		return r;
	if (!dptr)
		return CUDA_SUCCESS;
	int managed_status;
	if (xgpu_managed_free(c, dptr, &managed_status)) {
		r = xgpu_drv_result(managed_status);
		if (!r)
			xgpu_drv_forget_allocation(dptr);
		return r;
	}
	struct xgpu_req_MEM_FREE req = {.dptr = dptr};
	struct xgpu_rsp_MEM_FREE rsp;
	r = xgpu_drv_result(xgpu_call_MEM_FREE(c, &req, &rsp));
	if (!r) {
		xgpu_drv_forget_allocation(dptr);
		xgpu_pool_forget(dptr);
	}
	return r;
}

CUresult cuMemGetInfo(size_t *free_bytes, size_t *total)
{
	struct xgpu_client *c;
	if (!free_bytes || !total)
		return CUDA_ERROR_INVALID_VALUE;
	CUresult r = xgpu_drv_client_ctx(&c);
	if (r)
		return r;
	struct xgpu_req_MEM_GET_INFO req = {0};
	struct xgpu_rsp_MEM_GET_INFO rsp;
	r = xgpu_drv_result(xgpu_call_MEM_GET_INFO(c, &req, &rsp));
	if (!r) {
		*free_bytes = rsp.free;
		*total = rsp.total;
	}
	return r;
}

/* ---- copies ------------------------------------------------------------- */

static CUresult dtod(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream stream, bool async);

/* A managed pointer given as host memory is copied as device memory: the
 * device's copy is the current one once the host's writes are pushed, and
 * a copy into it must reach the device. */
static bool is_managed(const void *p)
{
	return xgpu_managed_find((uintptr_t)p, 0, NULL, NULL);
}

static CUresult htod(CUdeviceptr dst, const void *src, size_t n, CUstream stream, bool async)
{
	if (is_managed(src))
		return dtod(dst, (uintptr_t)src, n, stream, async);
	struct xgpu_client *c;
	CUresult r = xgpu_drv_client_ctx(&c);
	if (r || !n)
		return r;
	if (!src)
		return CUDA_ERROR_INVALID_VALUE;
	struct xgpu_req_MEMCPY_HTOD req = {
	    .dst = dst, .size = n, .stream = xgpu_drv_stream(stream), .flags = async ? XGPU_COPY_ASYNC : 0};
	struct xgpu_rsp_MEMCPY_HTOD rsp;
	struct xgpu_rpc rpc = xgpu_rpc_MEMCPY_HTOD(&req, &rsp);
	rpc.out = src;
	rpc.out_len = n;
	return xgpu_drv_result(xgpu_rpc(c, &rpc));
}

static CUresult dtoh(void *dst, CUdeviceptr src, size_t n, CUstream stream, bool async)
{
	if (is_managed(dst))
		return dtod((uintptr_t)dst, src, n, stream, false);
	struct xgpu_client *c;
	CUresult r = xgpu_drv_client_ctx(&c);
	if (r || !n)
		return r;
	if (!dst)
		return CUDA_ERROR_INVALID_VALUE;
	/* Into pageable memory a copy has landed when it returns, async or
	 * not, as in CUDA. */
	struct xgpu_req_MEMCPY_DTOH req = {
	    .src = src, .size = n, .stream = xgpu_drv_stream(stream), .flags = async ? XGPU_COPY_ASYNC : 0};
	struct xgpu_rsp_MEMCPY_DTOH rsp;
	struct xgpu_rpc rpc = xgpu_rpc_MEMCPY_DTOH(&req, &rsp);
	rpc.in = dst;
	rpc.in_max = n;
	r = xgpu_drv_result(xgpu_rpc(c, &rpc));
	if (!r && rpc.in_len != n)
		r = CUDA_ERROR_UNKNOWN;
	return r;
}

static CUresult dtod(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream stream, bool async)
{
	struct xgpu_client *c;
	CUresult r = xgpu_drv_client_ctx(&c);
	if (r || !n)
		return r;
	struct xgpu_req_MEMCPY_DTOD req = {.dst = dst,
					   .src = src,
					   .size = n,
					   .stream = xgpu_drv_stream(stream),
					   .flags = async ? XGPU_COPY_ASYNC : 0};
	struct xgpu_rsp_MEMCPY_DTOD rsp;
	return xgpu_drv_result(xgpu_call_MEMCPY_DTOD(c, &req, &rsp));
}

/* cuMemcpy / cuMemcpyAsync: unified addressing, so the direction comes from
 * what each pointer is: memory of cuMemAlloc or managed memory is the
 * device's, anything else the host's. */
static bool is_device(CUdeviceptr p)
{
	struct allocation a;
	return find_allocation(p, &a) || is_managed((const void *)(uintptr_t)p);
}

static CUresult unified_copy(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream stream, bool async)
{
	bool d = is_device(dst), s = is_device(src);
	if (d && s)
		return dtod(dst, src, n, stream, async);
	if (d)
		return htod(dst, (const void *)(uintptr_t)src, n, stream, async);
	if (s)
		return dtoh((void *)(uintptr_t)dst, src, n, stream, async);
	/* Host to host, ordered after the stream's work as CUDA orders it. */
	struct xgpu_client *c;
	CUresult r = xgpu_drv_client_ctx(&c);
	if (r || !n)
		return r;
	if (!dst || !src)
		return CUDA_ERROR_INVALID_VALUE;
	struct xgpu_req_STREAM_SYNC rq = {.stream = xgpu_drv_stream(stream)};
	struct xgpu_rsp_STREAM_SYNC rs;
	if ((r = xgpu_drv_result(xgpu_call_STREAM_SYNC(c, &rq, &rs))))
		return r;
	memmove((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n);
	return CUDA_SUCCESS;
}

CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t n)
{
	return unified_copy(dst, src, n, NULL, false);
}
CUresult cuMemcpy_ptds(CUdeviceptr dst, CUdeviceptr src, size_t n) XGPU_ALIAS(cuMemcpy);

CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream stream)
{
	return unified_copy(dst, src, n, stream, true);
}
CUresult cuMemcpyAsync_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream stream)
    XGPU_ALIAS(cuMemcpyAsync);

CUresult cuMemcpyHtoD(CUdeviceptr dst, const void *src, size_t n)
{
	return htod(dst, src, n, NULL, false);
}
CUresult cuMemcpyHtoD_v2_ptds(CUdeviceptr dst, const void *src, size_t n) XGPU_ALIAS(cuMemcpyHtoD_v2);

CUresult cuMemcpyDtoH(void *dst, CUdeviceptr src, size_t n)
{
	return dtoh(dst, src, n, NULL, false);
}
CUresult cuMemcpyDtoH_v2_ptds(void *dst, CUdeviceptr src, size_t n) XGPU_ALIAS(cuMemcpyDtoH_v2);

CUresult cuMemcpyDtoD(CUdeviceptr dst, CUdeviceptr src, size_t n)
{
	return dtod(dst, src, n, NULL, false);
}
CUresult cuMemcpyDtoD_v2_ptds(CUdeviceptr dst, CUdeviceptr src, size_t n) XGPU_ALIAS(cuMemcpyDtoD_v2);

CUresult cuMemcpyHtoDAsync(CUdeviceptr dst, const void *src, size_t n, CUstream stream)
{
	return htod(dst, src, n, stream, true);
}
CUresult cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr dst, const void *src, size_t n, CUstream stream)
    XGPU_ALIAS(cuMemcpyHtoDAsync_v2);

CUresult cuMemcpyDtoHAsync(void *dst, CUdeviceptr src, size_t n, CUstream stream)
{
	return dtoh(dst, src, n, stream, true);
}
CUresult cuMemcpyDtoHAsync_v2_ptsz(void *dst, CUdeviceptr src, size_t n, CUstream stream)
    XGPU_ALIAS(cuMemcpyDtoHAsync_v2);

CUresult cuMemcpyDtoDAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream stream)
{
	return dtod(dst, src, n, stream, true);
}
CUresult cuMemcpyDtoDAsync_v2_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream stream)
    XGPU_ALIAS(cuMemcpyDtoDAsync_v2);

/* ---- memset ------------------------------------------------------------- */

/* Fills count elements of elem_size bytes (1, 2 or 4) at dst with value. */
static CUresult fill(CUdeviceptr dst, uint32_t value, unsigned elem_size, size_t count, CUstream stream,
		     bool async)
{
	struct xgpu_client *c;
	CUresult r = xgpu_drv_client_ctx(&c);
	if (r || !count)
		return r;
	if (count > SIZE_MAX / elem_size)
		return CUDA_ERROR_INVALID_VALUE;
	size_t bytes = count * elem_size;
	uint8_t b[4];
	memcpy(b, &value, sizeof b);
	bool bytewise =
	    elem_size == 1 || (b[0] == b[1] && (elem_size == 2 || (b[0] == b[2] && b[0] == b[3])));
	if (bytewise) {
		struct xgpu_req_MEMSET req = {.dst = dst,
					      .value = b[0],
					      .size = bytes,
					      .stream = xgpu_drv_stream(stream),
					      .flags = async ? XGPU_COPY_ASYNC : 0};
		struct xgpu_rsp_MEMSET rsp;
		return xgpu_drv_result(xgpu_call_MEMSET(c, &req, &rsp));
	}
	/* A pattern: upload it, a bounded buffer at a time. */
	size_t chunk = bytes < ((size_t)1 << 20) ? bytes : ((size_t)1 << 20);
	uint8_t *pattern = malloc(chunk);
	if (!pattern)
		return CUDA_ERROR_OUT_OF_MEMORY;
	for (size_t i = 0; i < chunk; i += elem_size)
		memcpy(pattern + i, &value, elem_size);
	for (size_t done = 0; done < bytes && !r; done += chunk) {
		size_t n = bytes - done < chunk ? bytes - done : chunk;
		r = htod(dst + done, pattern, n, stream, async);
	}
	free(pattern);
	return r;
}

CUresult cuMemsetD8(CUdeviceptr dst, unsigned char uc, size_t n)
{
	return fill(dst, uc, 1, n, NULL, false);
}
CUresult cuMemsetD8_v2_ptds(CUdeviceptr dst, unsigned char uc, size_t n) XGPU_ALIAS(cuMemsetD8_v2);

CUresult cuMemsetD16(CUdeviceptr dst, unsigned short us, size_t n)
{
	return fill(dst, us, 2, n, NULL, false);
}
CUresult cuMemsetD16_v2_ptds(CUdeviceptr dst, unsigned short us, size_t n) XGPU_ALIAS(cuMemsetD16_v2);

CUresult cuMemsetD32(CUdeviceptr dst, unsigned int ui, size_t n)
{
	return fill(dst, ui, 4, n, NULL, false);
}
CUresult cuMemsetD32_v2_ptds(CUdeviceptr dst, unsigned int ui, size_t n) XGPU_ALIAS(cuMemsetD32_v2);

CUresult cuMemsetD8Async(CUdeviceptr dst, unsigned char uc, size_t n, CUstream stream)
{
	return fill(dst, uc, 1, n, stream, true);
}
CUresult cuMemsetD8Async_ptsz(CUdeviceptr dst, unsigned char uc, size_t n, CUstream stream)
    XGPU_ALIAS(cuMemsetD8Async);

CUresult cuMemsetD16Async(CUdeviceptr dst, unsigned short us, size_t n, CUstream stream)
{
	return fill(dst, us, 2, n, stream, true);
}
CUresult cuMemsetD16Async_ptsz(CUdeviceptr dst, unsigned short us, size_t n, CUstream stream)
    XGPU_ALIAS(cuMemsetD16Async);

CUresult cuMemsetD32Async(CUdeviceptr dst, unsigned int ui, size_t n, CUstream stream)
{
	return fill(dst, ui, 4, n, stream, true);
}
CUresult cuMemsetD32Async_ptsz(CUdeviceptr dst, unsigned int ui, size_t n, CUstream stream)
    XGPU_ALIAS(cuMemsetD32Async);

/* ---- page-locked host memory -------------------------------------------- */

/* Page-locked memory is a segment shared with the daemon, registered there
 * as the runtime's cudaHostAlloc does, so it counts against the domain's
 * pinned budget (xgpud --pinned-limit). Copies from it go through the
 * channel's data areas like any other: correct, if not zero-copy. Memory the
 * program registers (cuMemHostRegister) stays its own and is only tracked,
 * so that freeing, unregistering and asking for flags answer as CUDA's do. */
struct host_block {
	void *ptr;
	size_t size;
	unsigned flags;
	bool registered;     /* the program's own memory (cuMemHostRegister) */
	xgpu_handle_t seg;   /* the daemon's registration of a shared segment */
	unsigned generation; /* xgpu_fork_generation it was registered in */
	struct host_block *next;
};
static pthread_mutex_t host_lock = PTHREAD_MUTEX_INITIALIZER;
static struct host_block *host_blocks;
static pthread_mutex_t share_lock = PTHREAD_MUTEX_INITIALIZER;

static CUresult host_track(void *ptr, size_t size, unsigned flags, bool registered, xgpu_handle_t seg)
{
	struct host_block *b = calloc(1, sizeof *b);
	if (!b)
		return CUDA_ERROR_OUT_OF_MEMORY;
	*b = (struct host_block){.ptr = ptr,
				 .size = size,
				 .flags = flags,
				 .registered = registered,
				 .seg = seg,
				 .generation = xgpu_fork_generation};
	pthread_mutex_lock(&host_lock);
	b->next = host_blocks;
	host_blocks = b;
	pthread_mutex_unlock(&host_lock);
	return CUDA_SUCCESS;
}

/* Removes the block starting at ptr (registered or not, as asked) into
 * *out; false if there is none. */
static bool host_untrack(void *ptr, bool registered, struct host_block *out)
{
	pthread_mutex_lock(&host_lock);
	struct host_block **b = &host_blocks;
	while (*b && ((*b)->ptr != ptr || (*b)->registered != registered))
		b = &(*b)->next;
	struct host_block *gone = *b;
	if (gone)
		*b = gone->next;
	pthread_mutex_unlock(&host_lock);
	if (gone)
		*out = *gone;
	free(gone);
	return gone != NULL;
}

CUresult cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags)
{
	struct xgpu_client *c;
	if (!pp || (Flags & ~(unsigned)(CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP |
					CU_MEMHOSTALLOC_WRITECOMBINED)))
		return CUDA_ERROR_INVALID_VALUE;
	CUresult r = xgpu_drv_client_ctx(&c);
	if (r)
		return r;
	if (!bytesize)
		return CUDA_ERROR_INVALID_VALUE;
	void *p = NULL;
	uint64_t token;
	size_t rounded = (bytesize + 4095) & ~(size_t)4095;
	if (rounded < bytesize)
		return CUDA_ERROR_OUT_OF_MEMORY;
	/* Sharing and registering are two messages; one allocation at a time
	 * keeps the daemon from holding more than one unclaimed share of ours. */
	pthread_mutex_lock(&share_lock);
	int e = xgpu_client_share(c, rounded, &p, &token);
	struct xgpu_rsp_SEG_REGISTER rsp = {0};
	if (!e) {
		struct xgpu_req_SEG_REGISTER req = {.token = token, .size = rounded};
		e = xgpu_call_SEG_REGISTER(c, &req, &rsp);
		if (e)
			xgpu_client_unshare(c, p, rounded);
	}
	pthread_mutex_unlock(&share_lock);
	if (e)
		return e == cudaErrorInvalidValue || e == cudaErrorMemoryAllocation ? CUDA_ERROR_OUT_OF_MEMORY
										    : xgpu_drv_result(e);
	r = host_track(p, rounded, Flags, false, rsp.seg);
	if (r) {
		struct xgpu_req_SEG_UNREGISTER req = {.seg = rsp.seg};
		struct xgpu_rsp_SEG_UNREGISTER ursp;
		xgpu_call_SEG_UNREGISTER(c, &req, &ursp);
		xgpu_client_unshare(c, p, rounded);
		return r;
	}
	*pp = p;
	return CUDA_SUCCESS;
}

CUresult cuMemAllocHost(void **pp, size_t bytesize)
{
	return cuMemHostAlloc(pp, bytesize, 0);
}

CUresult cuMemFreeHost(void *p)
{
	struct xgpu_client *c;
	CUresult r = xgpu_drv_client(&c);
	if (r)
		return r;
	struct host_block b;
	if (!p || !host_untrack(p, false, &b))
		return CUDA_ERROR_INVALID_VALUE;
	/* After a fork the registration is the parent's, on its channel. */
	if (b.generation == xgpu_fork_generation) {
		struct xgpu_req_SEG_UNREGISTER req = {.seg = b.seg};
		struct xgpu_rsp_SEG_UNREGISTER rsp;
		r = xgpu_drv_result(xgpu_call_SEG_UNREGISTER(c, &req, &rsp));
	}
	xgpu_client_unshare(c, b.ptr, b.size);
	return r;
}

CUresult cuMemHostGetFlags(unsigned int *pFlags, void *p)
{
	if (!pFlags)
		return CUDA_ERROR_INVALID_VALUE;
	CUresult r = CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&host_lock);
	for (struct host_block *b = host_blocks; b; b = b->next)
		if ((uintptr_t)p >= (uintptr_t)b->ptr && (uintptr_t)p - (uintptr_t)b->ptr < b->size) {
			*pFlags = b->flags;
			r = CUDA_SUCCESS;
			break;
		}
	pthread_mutex_unlock(&host_lock);
	return r;
}

/* Pinned memory lives in the guest; the GPU can address only Dom0's mapping
 * of it, which no guest pointer can name. The device reports
 * CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY = 0, and for memory the device
 * has no mapping of the driver answers CUDA_ERROR_INVALID_VALUE. Nothing is
 * written to *pdptr: the pre-v2 ABI (aliased below) has a 32-bit one. */
CUresult cuMemHostGetDevicePointer(CUdeviceptr *pdptr, void *p, unsigned int Flags)
{
	if (!pdptr || !p || Flags)
		return CUDA_ERROR_INVALID_VALUE;
	xgpu_fe_warn_once("hostdevptr",
			  "cuMemHostGetDevicePointer: host memory cannot be mapped into the device's address "
			  "space under xgpu (it lives in the guest); returning CUDA_ERROR_INVALID_VALUE");
	return CUDA_ERROR_INVALID_VALUE;
}
#undef cuMemHostGetDevicePointer
CUresult cuMemHostGetDevicePointer(CUdeviceptr *pdptr, void *p, unsigned int Flags)
    XGPU_ALIAS(cuMemHostGetDevicePointer_v2);

CUresult cuMemHostRegister(void *p, size_t bytesize, unsigned int Flags)
{
	struct xgpu_client *c;
	if (!p || !bytesize)
		return CUDA_ERROR_INVALID_VALUE;
	CUresult r = xgpu_drv_client_ctx(&c);
	if (r)
		return r;
	pthread_mutex_lock(&host_lock);
	for (struct host_block *b = host_blocks; b; b = b->next)
		if ((uintptr_t)p < (uintptr_t)b->ptr + b->size && (uintptr_t)b->ptr < (uintptr_t)p + bytesize)
			r = CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
	pthread_mutex_unlock(&host_lock);
	return r ? r : host_track(p, bytesize, Flags, true, 0);
}

CUresult cuMemHostUnregister(void *p)
{
	struct xgpu_client *c;
	CUresult r = xgpu_drv_client(&c);
	if (r)
		return r;
	struct host_block b;
	return p && host_untrack(p, true, &b) ? CUDA_SUCCESS : CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
}

/* cuda.h renames these to their current ABI; the old names take the same
 * arguments. */
#undef cuMemAllocHost
#undef cuMemHostRegister
CUresult cuMemAllocHost(void **pp, unsigned int bytesize);
CUresult cuMemHostRegister(void *p, size_t bytesize, unsigned int Flags);

CUresult cuMemAllocHost(void **pp, unsigned int bytesize)
{
	return cuMemAllocHost_v2(pp, bytesize);
}

CUresult cuMemHostRegister(void *p, size_t bytesize, unsigned int Flags)
{
	return cuMemHostRegister_v2(p, bytesize, Flags);
}

/* Device memory from cuMemAlloc only: xgpu's host memory is pageable and
 * not mapped into the device's address space, so any other pointer is
 * CUDA_ERROR_INVALID_VALUE, as the driver answers for memory it does not
 * know. (Memory from xgpu's own libcudart.so.13 is not in this list: a
 * program built with -cudart shared that hands such memory to a library
 * with a runtime of its own gets "not known" here.) */
CUresult cuPointerGetAttribute(void *data, CUpointer_attribute attribute, CUdeviceptr ptr)
{
	struct xgpu_client *c;
	if (!data)
		return CUDA_ERROR_INVALID_VALUE;
	CUresult r = xgpu_drv_client(&c);
	if (r)
		return r;
	struct allocation a;
	if (!find_allocation(ptr, &a))
		return CUDA_ERROR_INVALID_VALUE;
	CUdevice dev = 0;
	switch (attribute) {
	case CU_POINTER_ATTRIBUTE_CONTEXT:
		*(CUcontext *)data = a.ctx;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
		*(unsigned *)data = CU_MEMORYTYPE_DEVICE;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
		*(CUdeviceptr *)data = ptr;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_BUFFER_ID:
		*(unsigned long long *)data = a.buffer_id;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_IS_MANAGED:
		*(unsigned *)data = a.managed;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_HOST_POINTER:
		if (!a.managed)
			return CUDA_ERROR_INVALID_VALUE; /* device memory has no host address */
		*(void **)data = (void *)(uintptr_t)ptr;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_MAPPED:
		*(unsigned *)data = 1;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS:
		*(unsigned *)data = 0; /* never set: cuPointerSetAttribute is not offered */
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
		/* A context destroyed since is the program's error; its memory went
		 * with it in CUDA. */
		if (a.ctx && (r = xgpu_drv_ctx_device(a.ctx, &dev)))
			return r;
		*(int *)data = (int)dev;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
		*(CUdeviceptr *)data = a.base;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
		*(size_t *)data = a.size;
		return CUDA_SUCCESS;
	default: {
		char name[64];
		snprintf(name, sizeof name, "cuPointerGetAttribute (attribute %d)", (int)attribute);
		return xgpu_drv_unsupported(name);
	}
	}
}

/* Each attribute as cuPointerGetAttribute answers it, except that memory
 * xgpu does not know is not an error: its attributes take the values CUDA
 * documents for it (NULL, 0; the device ordinal -2, as NVIDIA's runtime
 * reports for unregistered memory). */
CUresult cuPointerGetAttributes(unsigned int numAttributes, CUpointer_attribute *attributes, void **data,
				CUdeviceptr ptr)
{
	struct xgpu_client *c;
	if (!attributes || !data)
		return CUDA_ERROR_INVALID_VALUE;
	CUresult r = xgpu_drv_client(&c);
	if (r)
		return r;
	struct allocation a;
	bool known = find_allocation(ptr, &a);
	for (unsigned i = 0; i < numAttributes; i++) {
		if (!data[i])
			return CUDA_ERROR_INVALID_VALUE;
		if (known) {
			if ((r = cuPointerGetAttribute(data[i], attributes[i], ptr)))
				return r;
			continue;
		}
		switch (attributes[i]) {
		case CU_POINTER_ATTRIBUTE_CONTEXT:
		case CU_POINTER_ATTRIBUTE_HOST_POINTER:
			*(void **)data[i] = NULL;
			break;
		case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
		case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
			*(CUdeviceptr *)data[i] = 0;
			break;
		case CU_POINTER_ATTRIBUTE_BUFFER_ID:
			*(unsigned long long *)data[i] = 0;
			break;
		case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
			*(size_t *)data[i] = 0;
			break;
		case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
			*(int *)data[i] = -2;
			break;
		case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
		case CU_POINTER_ATTRIBUTE_IS_MANAGED:
		case CU_POINTER_ATTRIBUTE_MAPPED:
		case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS:
			*(unsigned *)data[i] = 0;
			break;
		default: {
			char name[64];
			snprintf(name, sizeof name, "cuPointerGetAttributes (attribute %d)",
				 (int)attributes[i]);
			return xgpu_drv_unsupported(name);
		}
		}
	}
	return CUDA_SUCCESS;
}

/* ---- managed memory hints -------------------------------------------------- */

/* Where a prefetch sends the data: the host (1), the device (0), or nowhere
 * valid (-1). */
static int location_is_host(CUmemLocation loc)
{
	switch (loc.type) {
	case CU_MEM_LOCATION_TYPE_DEVICE:
		return loc.id == CU_DEVICE_CPU ? 1 : loc.id == 0 ? 0 : -1;
	case CU_MEM_LOCATION_TYPE_HOST:
	case CU_MEM_LOCATION_TYPE_HOST_NUMA:
	case CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT:
		return 1;
	default:
		return -1;
	}
}

/* Done at once, not in stream order: stricter, never weaker. */
CUresult cuMemPrefetchAsync_v2(CUdeviceptr devPtr, size_t count, CUmemLocation location, unsigned int flags,
			       CUstream hStream)
{
	(void)hStream;
	struct xgpu_client *c;
	CUresult r = xgpu_drv_client_ctx(&c);
	if (r)
		return r;
	int to_host = location_is_host(location);
	if (to_host < 0 || flags || !count)
		return CUDA_ERROR_INVALID_VALUE;
	return xgpu_drv_result(xgpu_managed_prefetch(c, devPtr, count, to_host));
}
CUresult cuMemPrefetchAsync_v2_ptsz(CUdeviceptr devPtr, size_t count, CUmemLocation location,
				    unsigned int flags, CUstream hStream) XGPU_ALIAS(cuMemPrefetchAsync_v2);

/* The CUDA 8 form, which names a device (CU_DEVICE_CPU for the host); cuda.h
 * renames the plain name to the _v2 form. */
#undef cuMemPrefetchAsync
CUresult cuMemPrefetchAsync(CUdeviceptr devPtr, size_t count, CUdevice dstDevice, CUstream hStream);
CUresult cuMemPrefetchAsync(CUdeviceptr devPtr, size_t count, CUdevice dstDevice, CUstream hStream)
{
	CUmemLocation loc = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = dstDevice};
	return cuMemPrefetchAsync_v2(devPtr, count, loc, 0, hStream);
}
CUresult cuMemPrefetchAsync_ptsz(CUdeviceptr devPtr, size_t count, CUdevice dstDevice, CUstream hStream);
CUresult cuMemPrefetchAsync_ptsz(CUdeviceptr devPtr, size_t count, CUdevice dstDevice, CUstream hStream)
    XGPU_ALIAS(cuMemPrefetchAsync);

/* Advice is checked and remembered; none changes what xgpu does (see the
 * runtime's cudaMemAdvise). */
CUresult cuMemAdvise_v2(CUdeviceptr devPtr, size_t count, CUmem_advise advice, CUmemLocation location)
{
	struct xgpu_client *c;
	CUresult r = xgpu_drv_client_ctx(&c);
	if (r)
		return r;
	bool needs_location =
	    advice == CU_MEM_ADVISE_SET_PREFERRED_LOCATION || advice == CU_MEM_ADVISE_SET_ACCESSED_BY;
	if (!count || (needs_location && location_is_host(location) < 0))
		return CUDA_ERROR_INVALID_VALUE;
	return xgpu_drv_result(xgpu_managed_advise(devPtr, count, (int)advice));
}

/* The CUDA 8 form, which names a device. */
#undef cuMemAdvise
CUresult cuMemAdvise(CUdeviceptr devPtr, size_t count, CUmem_advise advice, CUdevice device);
CUresult cuMemAdvise(CUdeviceptr devPtr, size_t count, CUmem_advise advice, CUdevice device)
{
	CUmemLocation loc = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = device};
	return cuMemAdvise_v2(devPtr, count, advice, loc);
}
