/* SPDX-License-Identifier: Apache-2.0 */
/* api_memory.c - device memory and copies: cudaMalloc/Free, cudaMemcpy of
 * every kind (sync and async), cudaMemset, cudaMemGetInfo.
 *
 * Pageable host memory streams through the channel's data areas; memory
 * from cudaMallocHost is already shared with the backend, so its copies move
 * no bytes through the guest at all.
 */
#include "allocs.h"
#include "ipchandle.h"
#include "managed.h"
#include "mempool.h"
#include "runtime.h"

#include <string.h>

XGPU_EXPORT cudaError_t cudaMalloc(void **ptr, size_t size)
{
	if (!ptr)
		return xgpu_rt_ret(cudaErrorInvalidValue);
	struct xgpu_client *c;
	cudaError_t e = xgpu_rt_client(&c);
	if (e)
		return e;
	*ptr = NULL;
	if (size == 0)
		return cudaSuccess;
	struct xgpu_req_MEM_ALLOC req = {.size = size};
	struct xgpu_rsp_MEM_ALLOC rsp;
	e = xgpu_call_MEM_ALLOC(c, &req, &rsp);
	/* What memory pools cache goes back before an allocation fails. */
	if (e == cudaErrorMemoryAllocation && xgpu_pool_release_cached(c))
		e = xgpu_call_MEM_ALLOC(c, &req, &rsp);
	if (e)
		return xgpu_rt_ret(e);
	xgpu_rt_devmem_add(rsp.dptr, size);
	*ptr = (void *)(uintptr_t)rsp.dptr;
	return cudaSuccess;
}

XGPU_EXPORT cudaError_t cudaFree(void *ptr)
{
	/* cudaFree(0) is the idiom for "initialise now". */
	struct xgpu_client *c;
	cudaError_t e = xgpu_rt_client(&c);
	if (e || !ptr)
		return e;
	int managed_status;
	if (xgpu_managed_free(c, (uintptr_t)ptr, &managed_status)) {
		/* Gone from the daemon even where waiting for the device failed. */
		if (!xgpu_managed_find((uintptr_t)ptr, 0, NULL, NULL))
			xgpu_alloc_del((uintptr_t)ptr, XGPU_ALLOC_MANAGED);
		return xgpu_rt_ret(managed_status);
	}
	if (xgpu_pool_graph_memory((uintptr_t)ptr))
		return cudaSuccess;
	struct xgpu_req_MEM_FREE req = {.dptr = (uintptr_t)ptr};
	struct xgpu_rsp_MEM_FREE rsp;
	e = xgpu_call_MEM_FREE(c, &req, &rsp);
	if (!e) {
		xgpu_rt_devmem_del((uintptr_t)ptr);
		xgpu_pool_forget((uintptr_t)ptr);
	}
	return xgpu_rt_ret(e);
}

XGPU_EXPORT cudaError_t cudaMemGetInfo(size_t *free_b, size_t *total)
{
	if (!free_b || !total)
		return xgpu_rt_ret(cudaErrorInvalidValue);
	struct xgpu_client *c;
	cudaError_t e = xgpu_rt_client(&c);
	if (e)
		return e;
	struct xgpu_req_MEM_GET_INFO req = {0};
	struct xgpu_rsp_MEM_GET_INFO rsp;
	e = xgpu_call_MEM_GET_INFO(c, &req, &rsp);
	if (e)
		return xgpu_rt_ret(e);
	*free_b = rsp.free;
	*total = rsp.total;
	return cudaSuccess;
}

static bool is_device(const void *p)
{
	return xgpu_alloc_on_device((uintptr_t)p);
}

/* cudaMemcpyDefault: infer the direction from who owns each pointer, as
 * unified addressing does. Managed memory is copied as device memory whatever
 * the kind says: the device's copy is the current one once its host-written
 * pages are pushed, and a copy into it must reach the device. */
static enum cudaMemcpyKind resolve_kind(void *dst, const void *src, enum cudaMemcpyKind kind)
{
	if (kind != cudaMemcpyDefault && kind >= cudaMemcpyHostToHost && kind <= cudaMemcpyDeviceToDevice &&
	    (xgpu_alloc_is_managed((uintptr_t)dst) || xgpu_alloc_is_managed((uintptr_t)src)))
		kind = cudaMemcpyDefault;
	if (kind != cudaMemcpyDefault)
		return kind;
	bool d = is_device(dst), s = is_device(src);
	return d ? (s ? cudaMemcpyDeviceToDevice : cudaMemcpyHostToDevice)
		 : (s ? cudaMemcpyDeviceToHost : cudaMemcpyHostToHost);
}

cudaError_t xgpu_rt_memcpy(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind,
			   cudaStream_t stream, bool async)
{
	struct xgpu_client *c;
	cudaError_t e = xgpu_rt_client(&c);
	if (e)
		return e;
	if (count == 0)
		return cudaSuccess;
	if (!dst || !src)
		return xgpu_rt_ret(cudaErrorInvalidValue);
	xgpu_handle_t s = xgpu_rt_stream(stream);
	uint32_t flags = async ? XGPU_COPY_ASYNC : 0;
	struct xgpu_rt_seg seg;
	/* A capture records copies from the wire (frontend/driver/graph.c). */
	bool capturing = async && xgpu_graph_capturing(s);
	switch (kind) {
	case cudaMemcpyHostToHost:
		/* Ordered after the stream's work, as CUDA orders it. */
		if (async) {
			struct xgpu_req_STREAM_SYNC rq = {.stream = s};
			struct xgpu_rsp_STREAM_SYNC rs;
			e = xgpu_call_STREAM_SYNC(c, &rq, &rs);
			if (e)
				return xgpu_rt_ret(e);
		}
		memmove(dst, src, count);
		return cudaSuccess;
	case cudaMemcpyHostToDevice:
		if (!capturing && xgpu_rt_seg_find(src, count, &seg)) {
			struct xgpu_req_MEMCPY_HTOD_SEG rq = {.dst = (uintptr_t)dst,
							      .seg = seg.handle,
							      .offset = (uintptr_t)src - (uintptr_t)seg.ptr,
							      .size = count,
							      .stream = s,
							      .flags = flags};
			struct xgpu_rsp_MEMCPY_HTOD_SEG rs;
			return xgpu_rt_ret(xgpu_call_MEMCPY_HTOD_SEG(c, &rq, &rs));
		} else {
			struct xgpu_req_MEMCPY_HTOD rq = {
			    .dst = (uintptr_t)dst, .size = count, .stream = s, .flags = flags};
			struct xgpu_rsp_MEMCPY_HTOD rs;
			struct xgpu_rpc r = xgpu_rpc_MEMCPY_HTOD(&rq, &rs);
			r.out = src;
			r.out_len = count;
			return xgpu_rt_ret(xgpu_rpc(c, &r));
		}
	case cudaMemcpyDeviceToHost:
		if (!capturing && xgpu_rt_seg_find(dst, count, &seg)) {
			struct xgpu_req_MEMCPY_DTOH_SEG rq = {.seg = seg.handle,
							      .offset = (uintptr_t)dst - (uintptr_t)seg.ptr,
							      .src = (uintptr_t)src,
							      .size = count,
							      .stream = s,
							      .flags = flags};
			struct xgpu_rsp_MEMCPY_DTOH_SEG rs;
			return xgpu_rt_ret(xgpu_call_MEMCPY_DTOH_SEG(c, &rq, &rs));
		} else {
			/* Into pageable memory the copy completes before we
			 * return, async or not, as in CUDA. */
			struct xgpu_req_MEMCPY_DTOH rq = {
			    .src = (uintptr_t)src, .size = count, .stream = s, .flags = flags};
			struct xgpu_rsp_MEMCPY_DTOH rs;
			struct xgpu_rpc r = xgpu_rpc_MEMCPY_DTOH(&rq, &rs);
			r.in = dst;
			r.in_max = count;
			return xgpu_rt_ret(xgpu_rpc(c, &r));
		}
	case cudaMemcpyDeviceToDevice: {
		struct xgpu_req_MEMCPY_DTOD rq = {
		    .dst = (uintptr_t)dst, .src = (uintptr_t)src, .size = count, .stream = s, .flags = flags};
		struct xgpu_rsp_MEMCPY_DTOD rs;
		return xgpu_rt_ret(xgpu_call_MEMCPY_DTOD(c, &rq, &rs));
	}
	default:
		return xgpu_rt_ret(cudaErrorInvalidMemcpyDirection);
	}
}

XGPU_EXPORT cudaError_t cudaMemcpy(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind)
{
	return xgpu_rt_memcpy(dst, src, count, resolve_kind(dst, src, kind), NULL, false);
}

XGPU_EXPORT cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind,
					cudaStream_t stream)
{
	return xgpu_rt_memcpy(dst, src, count, resolve_kind(dst, src, kind), stream, true);
}

XGPU_EXPORT cudaError_t cudaMemcpy_ptds(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind)
{
	return cudaMemcpy(dst, src, count, kind);
}

XGPU_EXPORT cudaError_t cudaMemcpyAsync_ptsz(void *dst, const void *src, size_t count,
					     enum cudaMemcpyKind kind, cudaStream_t stream)
{
	return cudaMemcpyAsync(dst, src, count, kind, stream);
}

static cudaError_t memset_common(void *dst, int value, size_t count, cudaStream_t stream, bool async)
{
	struct xgpu_client *c;
	cudaError_t e = xgpu_rt_client(&c);
	if (e || count == 0)
		return e;
	struct xgpu_req_MEMSET req = {.dst = (uintptr_t)dst,
				      .value = (uint32_t)(value & 0xff),
				      .size = count,
				      .stream = xgpu_rt_stream(stream),
				      .flags = async ? XGPU_COPY_ASYNC : 0};
	struct xgpu_rsp_MEMSET rsp;
	return xgpu_rt_ret(xgpu_call_MEMSET(c, &req, &rsp));
}

XGPU_EXPORT cudaError_t cudaMemset(void *dst, int value, size_t count)
{
	return memset_common(dst, value, count, NULL, false);
}

XGPU_EXPORT cudaError_t cudaMemsetAsync(void *dst, int value, size_t count, cudaStream_t stream)
{
	return memset_common(dst, value, count, stream, true);
}

XGPU_EXPORT cudaError_t cudaMemset_ptds(void *dst, int value, size_t count)
{
	return cudaMemset(dst, value, count);
}

XGPU_EXPORT cudaError_t cudaMemsetAsync_ptsz(void *dst, int value, size_t count, cudaStream_t stream)
{
	return cudaMemsetAsync(dst, value, count, stream);
}

/* IPC between processes of one domain: the driver frontend's handles
 * (frontend/driver/ipc.c, IPC_* in calls.def). */
XGPU_EXPORT cudaError_t cudaIpcGetMemHandle(cudaIpcMemHandle_t *handle, void *devPtr)
{
	if (!handle || !devPtr)
		return xgpu_rt_ret(cudaErrorInvalidValue);
	struct xgpu_client *c;
	cudaError_t e = xgpu_rt_client(&c);
	if (e)
		return e;
	struct xgpu_req_IPC_EXPORT req = {.ptr = (uint64_t)(uintptr_t)devPtr};
	struct xgpu_rsp_IPC_EXPORT rsp;
	e = xgpu_call_IPC_EXPORT(c, &req, &rsp);
	if (!e)
		xgpu_ipc_handle_put(handle->reserved, rsp.base, rsp.token, rsp.size);
	return xgpu_rt_ret(e);
}

XGPU_EXPORT cudaError_t cudaIpcOpenMemHandle(void **devPtr, cudaIpcMemHandle_t handle, unsigned int flags)
{
	struct xgpu_ipc_handle h;
	if (!devPtr || (flags & ~(unsigned)cudaIpcMemLazyEnablePeerAccess) ||
	    !xgpu_ipc_handle_get(handle.reserved, &h))
		return xgpu_rt_ret(cudaErrorInvalidValue);
	struct xgpu_client *c;
	cudaError_t e = xgpu_rt_client(&c);
	if (e)
		return e;
	struct xgpu_req_IPC_OPEN req = {.base = h.base, .token = h.token};
	struct xgpu_rsp_IPC_OPEN rsp;
	e = xgpu_call_IPC_OPEN(c, &req, &rsp);
	if (!e) {
		*devPtr = (void *)(uintptr_t)rsp.ptr;
		if (!xgpu_alloc_find(rsp.ptr, 0, NULL))
			xgpu_alloc_add(rsp.ptr, rsp.size, XGPU_ALLOC_DEVICE, 0);
	}
	return xgpu_rt_ret(e);
}

XGPU_EXPORT cudaError_t cudaIpcGetEventHandle(cudaIpcEventHandle_t *handle, cudaEvent_t event)
{
	if (!handle || !event)
		return xgpu_rt_ret(cudaErrorInvalidValue);
	struct xgpu_client *c;
	cudaError_t e = xgpu_rt_client(&c);
	if (e)
		return e;
	struct xgpu_req_IPC_EVENT_EXPORT req = {.event = (uint64_t)(uintptr_t)event};
	struct xgpu_rsp_IPC_EVENT_EXPORT rsp;
	e = xgpu_call_IPC_EVENT_EXPORT(c, &req, &rsp);
	if (!e)
		xgpu_ipc_event_handle_put(handle->reserved, req.event, rsp.token);
	return xgpu_rt_ret(e);
}

XGPU_EXPORT cudaError_t cudaIpcOpenEventHandle(cudaEvent_t *event, cudaIpcEventHandle_t handle)
{
	struct xgpu_ipc_event_handle h;
	if (!event || !xgpu_ipc_event_handle_get(handle.reserved, &h))
		return xgpu_rt_ret(cudaErrorInvalidValue);
	struct xgpu_client *c;
	cudaError_t e = xgpu_rt_client(&c);
	if (e)
		return e;
	struct xgpu_req_IPC_EVENT_OPEN req = {.handle = h.event, .token = h.token};
	struct xgpu_rsp_IPC_EVENT_OPEN rsp;
	e = xgpu_call_IPC_EVENT_OPEN(c, &req, &rsp);
	if (!e)
		*event = (cudaEvent_t)(uintptr_t)rsp.event;
	return xgpu_rt_ret(e);
}

XGPU_EXPORT cudaError_t cudaIpcCloseMemHandle(void *devPtr)
{
	struct xgpu_client *c;
	cudaError_t e = xgpu_rt_client(&c);
	if (e)
		return e;
	struct xgpu_req_IPC_CLOSE req = {.ptr = (uint64_t)(uintptr_t)devPtr};
	struct xgpu_rsp_IPC_CLOSE rsp;
	e = xgpu_call_IPC_CLOSE(c, &req, &rsp);
	if (!e)
		xgpu_alloc_del(req.ptr, XGPU_ALLOC_DEVICE);
	return xgpu_rt_ret(e);
}
