/* SPDX-License-Identifier: Apache-2.0 */
/* stream.c - streams and events of the driver API. A CUstream or CUevent is
 * the daemon's handle on this process's channel (as the runtime frontend's
 * cudaStream_t and cudaEvent_t are, so the two APIs' objects mix). */
#include "allocs.h"
#include "driver.h"
#include "mempool.h"

#include <cudaProfiler.h>

#define XGPU_ALIAS(name) __attribute__((alias(#name)))

static inline xgpu_handle_t event_handle(CUevent e)
{
	return (xgpu_handle_t)(uintptr_t)e;
}

CUresult cuStreamCreateWithPriority(CUstream *phStream, unsigned int flags, int priority)
{
	struct xgpu_client *c;
	if (!phStream || (flags & ~(unsigned)CU_STREAM_NON_BLOCKING))
		return CUDA_ERROR_INVALID_VALUE;
	CUresult r = xgpu_drv_client_ctx(&c);
	if (r)
		return r;
	struct xgpu_req_STREAM_CREATE req = {.flags = flags, .priority = priority};
	struct xgpu_rsp_STREAM_CREATE rsp;
	r = xgpu_drv_result(xgpu_call_STREAM_CREATE(c, &req, &rsp));
	if (!r)
		*phStream = (CUstream)(uintptr_t)rsp.stream;
	return r;
}

CUresult cuStreamCreate(CUstream *phStream, unsigned int flags)
{
	return cuStreamCreateWithPriority(phStream, flags, 0);
}

CUresult cuStreamDestroy(CUstream hStream)
{
	struct xgpu_client *c;
	CUresult r = xgpu_drv_client_ctx(&c);
	if (r)
		return r;
	if (xgpu_drv_stream(hStream) == XGPU_STREAM_DEFAULT)
		return CUDA_ERROR_INVALID_HANDLE;
	struct xgpu_req_STREAM_DESTROY req = {.stream = xgpu_drv_stream(hStream)};
	struct xgpu_rsp_STREAM_DESTROY rsp;
	return xgpu_drv_result(xgpu_call_STREAM_DESTROY(c, &req, &rsp));
}

CUresult cuStreamSynchronize(CUstream hStream)
{
	struct xgpu_client *c;
	CUresult r = xgpu_drv_client_ctx(&c);
	if (r)
		return r;
	struct xgpu_req_STREAM_SYNC req = {.stream = xgpu_drv_stream(hStream)};
	struct xgpu_rsp_STREAM_SYNC rsp;
	int e = xgpu_call_STREAM_SYNC(c, &req, &rsp);
	if (!e)
		xgpu_pool_synced(c, false, req.stream);
	return xgpu_drv_result(e);
}
CUresult cuStreamSynchronize_ptsz(CUstream hStream) XGPU_ALIAS(cuStreamSynchronize);

CUresult cuStreamQuery(CUstream hStream)
{
	struct xgpu_client *c;
	CUresult r = xgpu_drv_client_ctx(&c);
	if (r)
		return r;
	struct xgpu_req_STREAM_QUERY req = {.stream = xgpu_drv_stream(hStream)};
	struct xgpu_rsp_STREAM_QUERY rsp;
	return xgpu_drv_result(xgpu_call_STREAM_QUERY(c, &req, &rsp));
}
CUresult cuStreamQuery_ptsz(CUstream hStream) XGPU_ALIAS(cuStreamQuery);

CUresult cuStreamWaitEvent(CUstream hStream, CUevent hEvent, unsigned int flags)
{
	struct xgpu_client *c;
	CUresult r = xgpu_drv_client_ctx(&c);
	if (r)
		return r;
	struct xgpu_req_STREAM_WAIT_EVENT req = {
	    .stream = xgpu_drv_stream(hStream), .event = event_handle(hEvent), .flags = flags};
	struct xgpu_rsp_STREAM_WAIT_EVENT rsp;
	return xgpu_drv_result(xgpu_call_STREAM_WAIT_EVENT(c, &req, &rsp));
}
CUresult cuStreamWaitEvent_ptsz(CUstream hStream, CUevent hEvent, unsigned int flags)
    XGPU_ALIAS(cuStreamWaitEvent);

CUresult cuEventCreate(CUevent *phEvent, unsigned int flags)
{
	struct xgpu_client *c;
	if (!phEvent)
		return CUDA_ERROR_INVALID_VALUE;
	CUresult r = xgpu_drv_client_ctx(&c);
	if (r)
		return r;
	struct xgpu_req_EVENT_CREATE req = {.flags = flags};
	struct xgpu_rsp_EVENT_CREATE rsp;
	r = xgpu_drv_result(xgpu_call_EVENT_CREATE(c, &req, &rsp));
	if (!r)
		*phEvent = (CUevent)(uintptr_t)rsp.event;
	return r;
}

CUresult cuEventDestroy(CUevent hEvent)
{
	struct xgpu_client *c;
	CUresult r = xgpu_drv_client_ctx(&c);
	if (r)
		return r;
	struct xgpu_req_EVENT_DESTROY req = {.event = event_handle(hEvent)};
	struct xgpu_rsp_EVENT_DESTROY rsp;
	return xgpu_drv_result(xgpu_call_EVENT_DESTROY(c, &req, &rsp));
}

CUresult cuEventRecord(CUevent hEvent, CUstream hStream)
{
	struct xgpu_client *c;
	CUresult r = xgpu_drv_client_ctx(&c);
	if (r)
		return r;
	struct xgpu_req_EVENT_RECORD req = {.event = event_handle(hEvent),
					    .stream = xgpu_drv_stream(hStream)};
	struct xgpu_rsp_EVENT_RECORD rsp;
	return xgpu_drv_result(xgpu_call_EVENT_RECORD(c, &req, &rsp));
}
CUresult cuEventRecord_ptsz(CUevent hEvent, CUstream hStream) XGPU_ALIAS(cuEventRecord);

/* NVIDIA's runtime records every event through this (flags 0), PyTorch's
 * included. CU_EVENT_RECORD_EXTERNAL only matters inside a stream capture,
 * where the recorded event becomes an event-record node rather than an
 * ordering edge; a capture records the event as an ordinary record, as the
 * runtime frontend does for cudaEventRecordWithFlags. */
CUresult cuEventRecordWithFlags(CUevent hEvent, CUstream hStream, unsigned int flags)
{
	if (flags & ~(unsigned)CU_EVENT_RECORD_EXTERNAL)
		return CUDA_ERROR_INVALID_VALUE;
	return cuEventRecord(hEvent, hStream);
}
CUresult cuEventRecordWithFlags_ptsz(CUevent hEvent, CUstream hStream, unsigned int flags)
    XGPU_ALIAS(cuEventRecordWithFlags);

CUresult cuEventSynchronize(CUevent hEvent)
{
	struct xgpu_client *c;
	CUresult r = xgpu_drv_client_ctx(&c);
	if (r)
		return r;
	struct xgpu_req_EVENT_SYNC req = {.event = event_handle(hEvent)};
	struct xgpu_rsp_EVENT_SYNC rsp;
	int e = xgpu_call_EVENT_SYNC(c, &req, &rsp);
	if (!e)
		xgpu_pool_synced(c, false, XGPU_POOL_ANY_STREAM);
	return xgpu_drv_result(e);
}

CUresult cuEventQuery(CUevent hEvent)
{
	struct xgpu_client *c;
	CUresult r = xgpu_drv_client_ctx(&c);
	if (r)
		return r;
	struct xgpu_req_EVENT_QUERY req = {.event = event_handle(hEvent)};
	struct xgpu_rsp_EVENT_QUERY rsp;
	return xgpu_drv_result(xgpu_call_EVENT_QUERY(c, &req, &rsp));
}

CUresult cuEventElapsedTime(float *pMilliseconds, CUevent hStart, CUevent hEnd)
{
	struct xgpu_client *c;
	if (!pMilliseconds)
		return CUDA_ERROR_INVALID_VALUE;
	CUresult r = xgpu_drv_client_ctx(&c);
	if (r)
		return r;
	struct xgpu_req_EVENT_ELAPSED req = {.start = event_handle(hStart), .end = event_handle(hEnd)};
	struct xgpu_rsp_EVENT_ELAPSED rsp;
	r = xgpu_drv_result(xgpu_call_EVENT_ELAPSED(c, &req, &rsp));
	if (!r)
		*pMilliseconds = rsp.ms;
	return r;
}

/* The pre-CUDA-4 and pre-12.8 names of the same ABIs. */
#undef cuStreamDestroy
#undef cuEventDestroy
#undef cuEventElapsedTime
CUresult cuStreamDestroy(CUstream hStream) XGPU_ALIAS(cuStreamDestroy_v2);
CUresult cuEventDestroy(CUevent hEvent) XGPU_ALIAS(cuEventDestroy_v2);
CUresult cuEventElapsedTime(float *pMilliseconds, CUevent hStart, CUevent hEnd)
    XGPU_ALIAS(cuEventElapsedTime_v2);

/* ---- priorities and attributes (streamstate.c, shared with the runtime) --- */

CUresult cuStreamGetPriority(CUstream hStream, int *priority)
{
	struct xgpu_client *c;
	if (!priority)
		return CUDA_ERROR_INVALID_VALUE;
	CUresult r = xgpu_drv_client_ctx(&c);
	if (r)
		return r;
	return xgpu_drv_result(xgpu_stream_get_priority(c, xgpu_drv_stream(hStream), priority, NULL, NULL));
}
CUresult cuStreamGetPriority_ptsz(CUstream hStream, int *priority) XGPU_ALIAS(cuStreamGetPriority);

CUresult cuCtxGetStreamPriorityRange(int *leastPriority, int *greatestPriority)
{
	struct xgpu_client *c;
	CUresult r = xgpu_drv_client_ctx(&c);
	if (r)
		return r;
	return xgpu_drv_result(
	    xgpu_stream_get_priority(c, XGPU_STREAM_DEFAULT, NULL, leastPriority, greatestPriority));
}

CUresult cuStreamSetAttribute(CUstream hStream, CUstreamAttrID attr, const CUstreamAttrValue *value)
{
	struct xgpu_client *c;
	CUresult r = xgpu_drv_client_ctx(&c);
	if (r)
		return r;
	return xgpu_drv_result(xgpu_stream_attr_set(c, xgpu_drv_stream(hStream), (int)attr, value));
}
CUresult cuStreamSetAttribute_ptsz(CUstream hStream, CUstreamAttrID attr, const CUstreamAttrValue *value)
    XGPU_ALIAS(cuStreamSetAttribute);

CUresult cuStreamGetAttribute(CUstream hStream, CUstreamAttrID attr, CUstreamAttrValue *value_out)
{
	struct xgpu_client *c;
	CUresult r = xgpu_drv_client_ctx(&c);
	if (r)
		return r;
	return xgpu_drv_result(xgpu_stream_attr_get(c, xgpu_drv_stream(hStream), (int)attr, value_out));
}
CUresult cuStreamGetAttribute_ptsz(CUstream hStream, CUstreamAttrID attr, CUstreamAttrValue *value_out)
    XGPU_ALIAS(cuStreamGetAttribute);

/* ---- host callbacks ------------------------------------------------------- */

/* cuLaunchHostFunc: not called once the context has failed (unlike
 * cuStreamAddCallback), as documented. */
static void run_host_func(void (*fn)(void), void *api_stream, int status, void *user)
{
	(void)api_stream;
	if (!status)
		((CUhostFn)fn)(user);
}

static void run_stream_callback(void (*fn)(void), void *api_stream, int status, void *user)
{
	((CUstreamCallback)fn)((CUstream)api_stream, status ? xgpu_drv_result(status) : CUDA_SUCCESS, user);
}

CUresult cuLaunchHostFunc(CUstream hStream, CUhostFn fn, void *userData)
{
	struct xgpu_client *c;
	if (!fn)
		return CUDA_ERROR_INVALID_VALUE;
	CUresult r = xgpu_drv_client_ctx(&c);
	if (r)
		return r;
	int cap = xgpu_graph_capture_hostfn(xgpu_drv_stream(hStream), fn, userData);
	if (cap >= 0)
		return xgpu_drv_result(cap);
	return xgpu_drv_result(xgpu_hostfn_enqueue(c, xgpu_drv_stream(hStream), run_host_func,
						   (void (*)(void))fn, hStream, userData));
}
CUresult cuLaunchHostFunc_ptsz(CUstream hStream, CUhostFn fn, void *userData) XGPU_ALIAS(cuLaunchHostFunc);

CUresult cuStreamAddCallback(CUstream hStream, CUstreamCallback callback, void *userData, unsigned int flags)
{
	struct xgpu_client *c;
	if (!callback || flags)
		return CUDA_ERROR_INVALID_VALUE;
	CUresult r = xgpu_drv_client_ctx(&c);
	if (r)
		return r;
	return xgpu_drv_result(xgpu_hostfn_enqueue(c, xgpu_drv_stream(hStream), run_stream_callback,
						   (void (*)(void))callback, hStream, userData));
}
CUresult cuStreamAddCallback_ptsz(CUstream hStream, CUstreamCallback callback, void *userData,
				  unsigned int flags) XGPU_ALIAS(cuStreamAddCallback);

/* ---- profiler markers ------------------------------------------------------ */

/* Profiling is the host's business (Nsight on Dom0 sees xgpud): a guest's
 * markers are accepted and change nothing. cuProfilerInitialize, deprecated,
 * is CUDA_ERROR_NOT_SUPPORTED as on NVIDIA's driver 580 (seen on an H100). */
CUresult cuProfilerInitialize(const char *configFile, const char *outputFile, CUoutput_mode outputMode)
{
	return CUDA_ERROR_NOT_SUPPORTED;
}

CUresult cuProfilerStart(void)
{
	return CUDA_SUCCESS;
}

CUresult cuProfilerStop(void)
{
	return CUDA_SUCCESS;
}

/* ---- stream capture: graph.c ------------------------------------------- */

/* ---- managed memory attachment ----------------------------------------------- */

/* cuStreamAttachMemAsync and cudaStreamAttachMemAsync: which streams may
 * touch a managed block while others run. Only one host copy of managed
 * memory exists in the guest, kept coherent with the device's at
 * synchronisation points (frontend/channel/managed.c) whatever the
 * attachment, so the attachment is checked and recorded (the block's flags
 * in the registry) and changes nothing else, on a GPU as on the sim: the
 * executor's own mapping of the memory is not the guest's. ptr must start a
 * managed block (cuMemAllocManaged, cudaMallocManaged, a __managed__
 * variable); length is 0 or the whole block, as CUDA requires of those.
 * Returns a cudaError_t number (the CUresult of the same meaning). */
int xgpu_attach_mem(uint64_t stream, uint64_t ptr, uint64_t length, unsigned flags)
{
	(void)stream; /* checked by its next use, as any stream argument of a queued call */
	if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST && flags != CU_MEM_ATTACH_SINGLE)
		return cudaErrorInvalidValue;
	if (flags == CU_MEM_ATTACH_SINGLE && stream == XGPU_STREAM_DEFAULT)
		return cudaErrorInvalidValue; /* a single stream, not the legacy one */
	struct xgpu_alloc a;
	if (!xgpu_alloc_find(ptr, 0, &a) || a.kind != XGPU_ALLOC_MANAGED || a.base != ptr ||
	    (length && length != a.size))
		return cudaErrorInvalidValue;
	xgpu_alloc_set_flags(a.base, XGPU_ALLOC_MANAGED, flags);
	return cudaSuccess;
}

CUresult cuStreamAttachMemAsync(CUstream hStream, CUdeviceptr dptr, size_t length, unsigned int flags)
{
	struct xgpu_client *c;
	CUresult r = xgpu_drv_client_ctx(&c);
	return r ? r : xgpu_drv_result(xgpu_attach_mem(xgpu_drv_stream(hStream), dptr, length, flags));
}
CUresult cuStreamAttachMemAsync_ptsz(CUstream hStream, CUdeviceptr dptr, size_t length, unsigned int flags)
    XGPU_ALIAS(cuStreamAttachMemAsync);
