/* SPDX-License-Identifier: Apache-2.0 */
/* memory.c - device memory of the driver API: allocation, the copy and
 * memset families (synchronous, async, and their per-thread-stream forms)
 * and cuMemGetInfo, over the same wire calls as the runtime frontend.
 *
 * Host memory here is always pageable: copies stream through the channel's
 * data areas. cuMemsetD16/D32 with a pattern whose bytes differ have no wire
 * call of their own; they upload the pattern, which is correct but costs a
 * host-to-device copy of the range. */
#include "allocs.h"
#include "driver.h"
#include "managed.h"
#include "mempool.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* The per-thread-default-stream entry points (_ptds, _ptsz) behave as the
 * legacy ones: the channel has one default stream. */
#define XGPU_ALIAS(name) __attribute__((alias(#name)))

/* ---- what cuPointerGetAttribute needs to know of allocations ---------- */

/* The daemon knows the allocations; pointer attributes and the direction of
 * a unified copy are answered from the registry both API layers share
 * (allocs.h) instead of a round trip. */
static bool find_allocation(CUdeviceptr p, struct xgpu_alloc *out)
{
	return xgpu_alloc_find(p, 0, out);
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
		xgpu_alloc_add(*dptr, bytesize, XGPU_ALLOC_DEVICE, 0);
	}
	return r;
}

/* Managed memory: one address valid in this process and on the device, kept
 * coherent by frontend/channel/managed.c at launches and synchronisation points. */
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
		xgpu_alloc_add(d, bytesize, XGPU_ALLOC_MANAGED, flags);
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
		/* Gone from the daemon even where waiting for the device failed. */
		if (!xgpu_managed_find(dptr, 0, NULL, NULL))
			xgpu_alloc_del(dptr, XGPU_ALLOC_MANAGED);
		return xgpu_drv_result(managed_status);
	}
	if (xgpu_graph_mem_keep(dptr))
		return CUDA_SUCCESS;
	struct xgpu_req_MEM_FREE req = {.dptr = dptr};
	struct xgpu_rsp_MEM_FREE rsp;
	r = xgpu_drv_result(xgpu_call_MEM_FREE(c, &req, &rsp));
	if (!r) {
		xgpu_alloc_del(dptr, XGPU_ALLOC_DEVICE);
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
	return xgpu_alloc_is_managed((uintptr_t)p);
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
 * the registry both layers share (allocs.h): device and managed memory are
 * the device's, anything else the host's. */
static CUresult unified_copy(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream stream, bool async)
{
	bool d = xgpu_alloc_on_device(dst), s = xgpu_alloc_on_device(src);
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
	if (!registered)
		xgpu_alloc_add((uintptr_t)ptr, size, XGPU_ALLOC_HOST, flags);
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
	if (gone && !registered)
		xgpu_alloc_del((uintptr_t)ptr, XGPU_ALLOC_HOST);
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
	if (!xgpu_client_shares_host_memory(c)) {
		/* A remote GPU: the program's own memory, copied like any other. */
		p = mmap(NULL, rounded, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			return CUDA_ERROR_OUT_OF_MEMORY;
		r = host_track(p, rounded, Flags, false, 0);
		if (r)
			munmap(p, rounded);
		else
			*pp = p;
		return r;
	}
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
	if (!b.seg) {
		munmap(b.ptr, b.size); /* the program's own (a remote GPU's) */
		return CUDA_SUCCESS;
	}
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

/* What a pointer's attribute is. Managed memory is device memory whose host
 * pointer is the same address. Memory neither layer allocated is unknown:
 * cuPointerGetAttribute answers CUDA_ERROR_INVALID_VALUE for it (strict),
 * cuPointerGetAttributes the values CUDA documents for it (NULL, 0; the
 * device ordinal -2, as NVIDIA's runtime reports for unregistered memory).
 * Page-locked host memory is not mapped into the device's address space
 * (xgpu's guests cannot name the daemon's mapping): its device pointer is
 * an error when asked alone and NULL among others, as is the host pointer of
 * device memory. */
static CUresult attribute_of(const struct xgpu_alloc *a, CUpointer_attribute attribute, CUdeviceptr ptr,
			     void *data, bool strict)
{
	bool host = a && a->kind == XGPU_ALLOC_HOST;
	bool managed = a && a->kind == XGPU_ALLOC_MANAGED;
	CUresult r;
	CUdevice dev = 0;
	if (!a && strict)
		return CUDA_ERROR_INVALID_VALUE;
	switch (attribute) {
	case CU_POINTER_ATTRIBUTE_CONTEXT:
		*(CUcontext *)data = a ? a->ctx : NULL;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
		*(unsigned *)data = !a ? 0 : host ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
		if (host && strict)
			return CUDA_ERROR_INVALID_VALUE;
		*(CUdeviceptr *)data = a && !host ? ptr : 0;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_HOST_POINTER:
		if (a && !host && !managed && strict)
			return CUDA_ERROR_INVALID_VALUE; /* device memory has no host address */
		*(void **)data = host || managed ? (void *)(uintptr_t)ptr : NULL;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_BUFFER_ID:
		*(unsigned long long *)data = a ? a->buffer_id : 0;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_IS_MANAGED:
		*(unsigned *)data = managed;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_MAPPED:
		*(unsigned *)data = a && !host;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS:
		*(unsigned *)data = 0; /* never set: cuPointerSetAttribute is not offered */
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
		/* A context destroyed since is the program's error; its memory went
		 * with it in CUDA. */
		if (a && a->ctx && (r = xgpu_drv_ctx_device(a->ctx, &dev)))
			return r;
		*(int *)data = a ? (int)dev : -2;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
		*(CUdeviceptr *)data = a ? a->base : 0;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
		*(size_t *)data = a ? a->size : 0;
		return CUDA_SUCCESS;
	default: {
		char name[64];
		snprintf(name, sizeof name, "cuPointerGetAttribute (attribute %d)", (int)attribute);
		return xgpu_drv_unsupported(name);
	}
	}
}

/* Memory from either API layer (allocs.h): cuMemAlloc's and cudaMalloc's,
 * managed memory of either, and page-locked host memory from cuMemHostAlloc
 * and cudaHostAlloc. */
CUresult cuPointerGetAttribute(void *data, CUpointer_attribute attribute, CUdeviceptr ptr)
{
	struct xgpu_client *c;
	if (!data)
		return CUDA_ERROR_INVALID_VALUE;
	CUresult r = xgpu_drv_client(&c);
	if (r)
		return r;
	struct xgpu_alloc a;
	return attribute_of(find_allocation(ptr, &a) ? &a : NULL, attribute, ptr, data, true);
}

CUresult cuPointerGetAttributes(unsigned int numAttributes, CUpointer_attribute *attributes, void **data,
				CUdeviceptr ptr)
{
	struct xgpu_client *c;
	if (!attributes || !data)
		return CUDA_ERROR_INVALID_VALUE;
	CUresult r = xgpu_drv_client(&c);
	if (r)
		return r;
	struct xgpu_alloc a;
	bool known = find_allocation(ptr, &a);
	for (unsigned i = 0; i < numAttributes; i++) {
		if (!data[i])
			return CUDA_ERROR_INVALID_VALUE;
		if ((r = attribute_of(known ? &a : NULL, attributes[i], ptr, data[i], false)))
			return r;
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
