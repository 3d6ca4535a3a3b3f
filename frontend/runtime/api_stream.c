/* SPDX-License-Identifier: Apache-2.0 */
/* api_stream.c - streams and events. Their handles are the backend's, which
 * it checks against this process's own table on every use; the flags and
 * priorities the program asked for are remembered here so the Get calls
 * need no round trip. */
#include "mempool.h"
#include "runtime.h"

#include <cuda.h>
#include <cuda_profiler_api.h>

#include <pthread.h>
#include <stdlib.h>

struct stream_info {
	xgpu_handle_t h;
	unsigned flags;
	int priority;
};

static pthread_mutex_t streams_lock = PTHREAD_MUTEX_INITIALIZER;
static struct stream_info *streams;
static size_t nstreams, capstreams;

static void streams_child(void)
{
	pthread_mutex_init(&streams_lock, NULL);
}

__attribute__((constructor)) static void streams_setup(void)
{
	pthread_atfork(NULL, NULL, streams_child);
}

static void remember_stream(xgpu_handle_t h, unsigned flags, int priority)
{
	pthread_mutex_lock(&streams_lock);
	if (nstreams == capstreams) {
		size_t cap = capstreams ? capstreams * 2 : 16;
		struct stream_info *v = realloc(streams, cap * sizeof *v);
		if (v) {
			streams = v;
			capstreams = cap;
		}
	}
	if (nstreams < capstreams)
		streams[nstreams++] = (struct stream_info){h, flags, priority};
	pthread_mutex_unlock(&streams_lock);
}

static bool lookup_stream(xgpu_handle_t h, struct stream_info *out, bool remove)
{
	pthread_mutex_lock(&streams_lock);
	bool found = false;
	for (size_t i = 0; i < nstreams; i++)
		if (streams[i].h == h) {
			*out = streams[i];
			if (remove)
				streams[i] = streams[--nstreams];
			found = true;
			break;
		}
	pthread_mutex_unlock(&streams_lock);
	return found;
}

XGPU_EXPORT cudaError_t cudaStreamCreateWithPriority(cudaStream_t *stream, unsigned int flags, int priority)
{
	if (!stream || (flags & ~(unsigned)cudaStreamNonBlocking))
		return xgpu_rt_ret(cudaErrorInvalidValue);
	struct xgpu_client *c;
	cudaError_t e = xgpu_rt_client(&c);
	if (e)
		return e;
	struct xgpu_req_STREAM_CREATE req = {.flags = flags, .priority = priority};
	struct xgpu_rsp_STREAM_CREATE rsp;
	e = xgpu_call_STREAM_CREATE(c, &req, &rsp);
	if (e)
		return xgpu_rt_ret(e);
	remember_stream(rsp.stream, flags, priority);
	*stream = (cudaStream_t)(uintptr_t)rsp.stream;
	return cudaSuccess;
}

XGPU_EXPORT cudaError_t cudaStreamCreateWithFlags(cudaStream_t *stream, unsigned int flags)
{
	return cudaStreamCreateWithPriority(stream, flags, 0);
}

XGPU_EXPORT cudaError_t cudaStreamCreate(cudaStream_t *stream)
{
	return cudaStreamCreateWithPriority(stream, cudaStreamDefault, 0);
}

XGPU_EXPORT cudaError_t cudaStreamDestroy(cudaStream_t stream)
{
	struct xgpu_client *c;
	cudaError_t e = xgpu_rt_client(&c);
	if (e)
		return e;
	xgpu_handle_t h = xgpu_rt_stream(stream);
	if (h == XGPU_STREAM_DEFAULT)
		return xgpu_rt_ret(cudaErrorInvalidResourceHandle);
	struct xgpu_req_STREAM_DESTROY req = {.stream = h};
	struct xgpu_rsp_STREAM_DESTROY rsp;
	e = xgpu_call_STREAM_DESTROY(c, &req, &rsp);
	struct stream_info si;
	lookup_stream(h, &si, true);
	return xgpu_rt_ret(e);
}

#define STREAM_CALL(NAME, h)                                                                                 \
	struct xgpu_client *c;                                                                               \
	cudaError_t e = xgpu_rt_client(&c);                                                                  \
	if (e)                                                                                               \
		return e;                                                                                    \
	struct xgpu_req_##NAME req = {.stream = (h)};                                                        \
	struct xgpu_rsp_##NAME rsp;                                                                          \
	return xgpu_rt_ret(xgpu_call_##NAME(c, &req, &rsp))

XGPU_EXPORT cudaError_t cudaStreamSynchronize(cudaStream_t stream)
{
	struct xgpu_client *c;
	cudaError_t e = xgpu_rt_client(&c);
	if (e)
		return e;
	struct xgpu_req_STREAM_SYNC req = {.stream = xgpu_rt_stream(stream)};
	struct xgpu_rsp_STREAM_SYNC rsp;
	e = xgpu_call_STREAM_SYNC(c, &req, &rsp);
	if (!e)
		xgpu_pool_synced(c, false, req.stream);
	return xgpu_rt_ret(e);
}

XGPU_EXPORT cudaError_t cudaStreamQuery(cudaStream_t stream)
{
	STREAM_CALL(STREAM_QUERY, xgpu_rt_stream(stream));
}

XGPU_EXPORT cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t stream)
{
	return cudaStreamSynchronize(stream);
}

XGPU_EXPORT cudaError_t cudaStreamQuery_ptsz(cudaStream_t stream)
{
	return cudaStreamQuery(stream);
}

XGPU_EXPORT cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags)
{
	struct xgpu_client *c;
	cudaError_t e = xgpu_rt_client(&c);
	if (e)
		return e;
	/* cudaEventWaitDefault is the only flag a local event can take. */
	if (flags)
		return xgpu_rt_ret(cudaErrorInvalidValue);
	struct xgpu_req_STREAM_WAIT_EVENT req = {.stream = xgpu_rt_stream(stream), .event = (uintptr_t)event};
	struct xgpu_rsp_STREAM_WAIT_EVENT rsp;
	return xgpu_rt_ret(xgpu_call_STREAM_WAIT_EVENT(c, &req, &rsp));
}

XGPU_EXPORT cudaError_t cudaStreamWaitEvent_ptsz(cudaStream_t stream, cudaEvent_t event, unsigned int flags)
{
	return cudaStreamWaitEvent(stream, event, flags);
}

XGPU_EXPORT cudaError_t cudaStreamGetFlags(cudaStream_t stream, unsigned int *flags)
{
	struct stream_info si;
	xgpu_handle_t h = xgpu_rt_stream(stream);
	if (!flags)
		return xgpu_rt_ret(cudaErrorInvalidValue);
	if (h == XGPU_STREAM_DEFAULT) {
		*flags = cudaStreamDefault;
		return cudaSuccess;
	}
	if (!lookup_stream(h, &si, false))
		return xgpu_rt_ret(cudaErrorInvalidResourceHandle);
	*flags = si.flags;
	return cudaSuccess;
}

/* The priority as the device clamped it (or as a priority attribute set
 * it), from the daemon: what the device reports, not what was asked. */
XGPU_EXPORT cudaError_t cudaStreamGetPriority(cudaStream_t stream, int *priority)
{
	if (!priority)
		return xgpu_rt_ret(cudaErrorInvalidValue);
	struct xgpu_client *c;
	cudaError_t e = xgpu_rt_client(&c);
	if (e)
		return e;
	return xgpu_rt_ret(xgpu_stream_get_priority(c, xgpu_rt_stream(stream), priority, NULL, NULL));
}

XGPU_EXPORT cudaError_t cudaDeviceGetStreamPriorityRange(int *leastPriority, int *greatestPriority)
{
	struct xgpu_client *c;
	cudaError_t e = xgpu_rt_client(&c);
	if (e)
		return e;
	return xgpu_rt_ret(
	    xgpu_stream_get_priority(c, XGPU_STREAM_DEFAULT, NULL, leastPriority, greatestPriority));
}

XGPU_EXPORT cudaError_t cudaStreamSetAttribute(cudaStream_t stream, cudaStreamAttrID attr,
					       const cudaStreamAttrValue *value)
{
	struct xgpu_client *c;
	cudaError_t e = xgpu_rt_client(&c);
	if (e)
		return e;
	_Static_assert(sizeof(cudaStreamAttrValue) == sizeof(CUlaunchAttributeValue),
		       "the runtime's and the driver's attribute values share one layout");
	return xgpu_rt_ret(xgpu_stream_attr_set(c, xgpu_rt_stream(stream), (int)attr, value));
}

XGPU_EXPORT cudaError_t cudaStreamGetAttribute(cudaStream_t stream, cudaStreamAttrID attr,
					       cudaStreamAttrValue *value)
{
	struct xgpu_client *c;
	cudaError_t e = xgpu_rt_client(&c);
	if (e)
		return e;
	return xgpu_rt_ret(xgpu_stream_attr_get(c, xgpu_rt_stream(stream), (int)attr, value));
}

XGPU_EXPORT cudaError_t cudaStreamSetAttribute_ptsz(cudaStream_t stream, cudaStreamAttrID attr,
						    const cudaStreamAttrValue *value)
{
	return cudaStreamSetAttribute(stream, attr, value);
}

XGPU_EXPORT cudaError_t cudaStreamGetAttribute_ptsz(cudaStream_t stream, cudaStreamAttrID attr,
						    cudaStreamAttrValue *value)
{
	return cudaStreamGetAttribute(stream, attr, value);
}

/* ---- host callbacks (run by streamstate.c in libcuda.so.1) ---------------- */

/* cudaLaunchHostFunc: not called once the context has failed, as in CUDA. */
static void run_host_func(void (*fn)(void), void *api_stream, int status, void *user)
{
	(void)api_stream;
	if (!status)
		((cudaHostFn_t)fn)(user);
}

/* cudaStreamAddCallback: called with the stream's error state. */
static void run_stream_callback(void (*fn)(void), void *api_stream, int status, void *user)
{
	((cudaStreamCallback_t)fn)((cudaStream_t)api_stream, (cudaError_t)status, user);
}

XGPU_EXPORT cudaError_t cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn, void *userData)
{
	if (!fn)
		return xgpu_rt_ret(cudaErrorInvalidValue);
	struct xgpu_client *c;
	cudaError_t e = xgpu_rt_client(&c);
	if (e)
		return e;
	int cap = xgpu_graph_capture_hostfn(xgpu_rt_stream(stream), fn, userData);
	if (cap >= 0)
		return xgpu_rt_ret((cudaError_t)cap);
	return xgpu_rt_ret(xgpu_hostfn_enqueue(c, xgpu_rt_stream(stream), run_host_func, (void (*)(void))fn,
					       stream, userData));
}

XGPU_EXPORT cudaError_t cudaStreamAddCallback(cudaStream_t stream, cudaStreamCallback_t callback,
					      void *userData, unsigned int flags)
{
	/* flags is reserved and must be 0. */
	if (!callback || flags)
		return xgpu_rt_ret(cudaErrorInvalidValue);
	struct xgpu_client *c;
	cudaError_t e = xgpu_rt_client(&c);
	if (e)
		return e;
	return xgpu_rt_ret(xgpu_hostfn_enqueue(c, xgpu_rt_stream(stream), run_stream_callback,
					       (void (*)(void))callback, stream, userData));
}

XGPU_EXPORT cudaError_t cudaLaunchHostFunc_ptsz(cudaStream_t stream, cudaHostFn_t fn, void *userData)
{
	return cudaLaunchHostFunc(stream, fn, userData);
}

XGPU_EXPORT cudaError_t cudaStreamAddCallback_ptsz(cudaStream_t stream, cudaStreamCallback_t callback,
						   void *userData, unsigned int flags)
{
	return cudaStreamAddCallback(stream, callback, userData, flags);
}

/* Profiling is the host's business (Nsight on Dom0 sees xgpud): the
 * program's start/stop markers are accepted and change nothing. */
XGPU_EXPORT cudaError_t cudaProfilerStart(void)
{
	return cudaSuccess;
}

XGPU_EXPORT cudaError_t cudaProfilerStop(void)
{
	return cudaSuccess;
}

XGPU_EXPORT cudaError_t cudaStreamGetFlags_ptsz(cudaStream_t stream, unsigned int *flags)
{
	return cudaStreamGetFlags(stream, flags);
}

XGPU_EXPORT cudaError_t cudaStreamGetPriority_ptsz(cudaStream_t stream, int *priority)
{
	return cudaStreamGetPriority(stream, priority);
}

/* Forget streams of a previous channel (cudaDeviceReset). */
void xgpu_rt_streams_forget(void);
void xgpu_rt_streams_forget(void)
{
	pthread_mutex_lock(&streams_lock);
	nstreams = 0;
	pthread_mutex_unlock(&streams_lock);
}

/* ---- events ------------------------------------------------------------- */

XGPU_EXPORT cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned int flags)
{
	if (!event)
		return xgpu_rt_ret(cudaErrorInvalidValue);
	struct xgpu_client *c;
	cudaError_t e = xgpu_rt_client(&c);
	if (e)
		return e;
	struct xgpu_req_EVENT_CREATE req = {.flags = flags};
	struct xgpu_rsp_EVENT_CREATE rsp;
	e = xgpu_call_EVENT_CREATE(c, &req, &rsp);
	if (e)
		return xgpu_rt_ret(e);
	*event = (cudaEvent_t)(uintptr_t)rsp.event;
	return cudaSuccess;
}

XGPU_EXPORT cudaError_t cudaEventCreate(cudaEvent_t *event)
{
	return cudaEventCreateWithFlags(event, cudaEventDefault);
}

#define EVENT_CALL(NAME, ev)                                                                                 \
	struct xgpu_client *c;                                                                               \
	cudaError_t e = xgpu_rt_client(&c);                                                                  \
	if (e)                                                                                               \
		return e;                                                                                    \
	struct xgpu_req_##NAME req = {.event = (uintptr_t)(ev)};                                             \
	struct xgpu_rsp_##NAME rsp;                                                                          \
	return xgpu_rt_ret(xgpu_call_##NAME(c, &req, &rsp))

XGPU_EXPORT cudaError_t cudaEventDestroy(cudaEvent_t event)
{
	EVENT_CALL(EVENT_DESTROY, event);
}

XGPU_EXPORT cudaError_t cudaEventSynchronize(cudaEvent_t event)
{
	struct xgpu_client *c;
	cudaError_t e = xgpu_rt_client(&c);
	if (e)
		return e;
	struct xgpu_req_EVENT_SYNC req = {.event = (uintptr_t)event};
	struct xgpu_rsp_EVENT_SYNC rsp;
	e = xgpu_call_EVENT_SYNC(c, &req, &rsp);
	if (!e)
		xgpu_pool_synced(c, false, XGPU_POOL_ANY_STREAM);
	return xgpu_rt_ret(e);
}

XGPU_EXPORT cudaError_t cudaEventQuery(cudaEvent_t event)
{
	EVENT_CALL(EVENT_QUERY, event);
}

XGPU_EXPORT cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream)
{
	struct xgpu_client *c;
	cudaError_t e = xgpu_rt_client(&c);
	if (e)
		return e;
	struct xgpu_req_EVENT_RECORD req = {.event = (uintptr_t)event, .stream = xgpu_rt_stream(stream)};
	struct xgpu_rsp_EVENT_RECORD rsp;
	return xgpu_rt_ret(xgpu_call_EVENT_RECORD(c, &req, &rsp));
}

XGPU_EXPORT cudaError_t cudaEventRecordWithFlags(cudaEvent_t event, cudaStream_t stream, unsigned int flags)
{
	/* cudaEventRecordExternal only matters inside graph capture. */
	if (flags & ~(unsigned)cudaEventRecordExternal)
		return xgpu_rt_ret(cudaErrorInvalidValue);
	return cudaEventRecord(event, stream);
}

XGPU_EXPORT cudaError_t cudaEventRecord_ptsz(cudaEvent_t event, cudaStream_t stream)
{
	return cudaEventRecord(event, stream);
}

XGPU_EXPORT cudaError_t cudaEventRecordWithFlags_ptsz(cudaEvent_t event, cudaStream_t stream,
						      unsigned int flags)
{
	return cudaEventRecordWithFlags(event, stream, flags);
}

XGPU_EXPORT cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end)
{
	if (!ms)
		return xgpu_rt_ret(cudaErrorInvalidValue);
	struct xgpu_client *c;
	cudaError_t e = xgpu_rt_client(&c);
	if (e)
		return e;
	struct xgpu_req_EVENT_ELAPSED req = {.start = (uintptr_t)start, .end = (uintptr_t)end};
	struct xgpu_rsp_EVENT_ELAPSED rsp;
	e = xgpu_call_EVENT_ELAPSED(c, &req, &rsp);
	if (!e)
		*ms = rsp.ms;
	return xgpu_rt_ret(e);
}
