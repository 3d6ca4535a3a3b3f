/* SPDX-License-Identifier: Apache-2.0 */
/* client.h - the frontend's one channel to xgpud: lazy connection, the
 * request/response exchange with bulk data in both directions, and the
 * process-wide state that must be reset in a forked child. */
#ifndef XGPU_FE_CLIENT_H
#define XGPU_FE_CLIENT_H

#include "proto.h"

#include <stdbool.h>
#include <stdint.h>

struct xgpu_client;

/* One exchange: a request with optional bulk data out, a response with
 * optional bulk data in. */
struct xgpu_rpc {
	uint32_t call;
	const void *req;
	uint32_t req_len;
	void *rsp;
	uint32_t rsp_len;
	const void *out; /* streamed to the backend after the request */
	uint64_t out_len;
	void *in; /* filled from the backend's stream before the response */
	uint64_t in_max;
	uint64_t in_len; /* set: bytes received */
};

/* The connected channel, connecting on first use. Returns cudaSuccess, or the
 * (sticky) error that connecting produced; the reason was printed once. */
int xgpu_client_get(struct xgpu_client **c);

/* Runs one exchange; returns the call's cudaError_t. Calls from many threads
 * are serialised on the channel. With pipelining on, an asynchronous call
 * whose answer is only its status returns once sent, and a failure of it is
 * returned by the next call that waits for its answer (or by
 * xgpu_client_settle). */
int xgpu_rpc(struct xgpu_client *c, struct xgpu_rpc *r);

/* At most this many answers wait unread. */
#define XGPU_MAX_DEFERRED 32
/* Slots of a channel: more than the requests that may await their answers
 * (the deferred ones and one more), since a slot is reused only once its
 * answer is read. */
#define XGPU_CLIENT_SLOTS 64u
_Static_assert(XGPU_CLIENT_SLOTS > XGPU_MAX_DEFERRED + 1, "a free slot for every call");

/* Takes every answer still outstanding: cudaSuccess, or the first failure
 * of a pipelined call not yet reported (cudaGetLastError asks this). */
int xgpu_client_settle(void);

/* Stream capture (frontend/driver/graph.c) sees every request before it is
 * sent: it returns -1 to send it, or the result of a request it took (stream
 * work on a capturing stream becomes a graph node). NULL until the process
 * first begins a capture. */
extern int (*xgpu_rpc_capture_hook)(struct xgpu_rpc *r);
/* Asked by xgpu_hostfn_enqueue before it enqueues a host function on stream
 * (set by frontend/driver/graph.c with the hook above): a host function on a
 * capturing stream would be a host node, which xgpu's graphs do not offer, so
 * the capture is invalidated and cudaErrorStreamCaptureUnsupported returned
 * (cudaErrorStreamCaptureInvalidated once it already is); 0 when the stream
 * is not capturing. */
extern int (*xgpu_hostfn_capture_hook)(xgpu_handle_t stream);

/* xgpu_rpc_NAME(&req, &rsp): a type-checked exchange descriptor for NAME;
 * xgpu_call_NAME(c, &req, &rsp): the exchange without bulk data. */
#define IN(type, name)
#define OUT(type, name)
#define XGPU_CALL(name, flags, bulk, fields)                                                                 \
	static inline struct xgpu_rpc xgpu_rpc_##name(const struct xgpu_req_##name *req,                     \
						      struct xgpu_rsp_##name *rsp)                           \
	{                                                                                                    \
		struct xgpu_rpc r = {.call = XGPU_CALL_##name,                                               \
				     .req = req,                                                             \
				     .req_len = sizeof *req,                                                 \
				     .rsp = rsp,                                                             \
				     .rsp_len = sizeof *rsp};                                                \
		return r;                                                                                    \
	}                                                                                                    \
	static inline int xgpu_call_##name(struct xgpu_client *c, const struct xgpu_req_##name *req,         \
					   struct xgpu_rsp_##name *rsp)                                      \
	{                                                                                                    \
		struct xgpu_rpc r = xgpu_rpc_##name(req, rsp);                                               \
		return xgpu_rpc(c, &r);                                                                      \
	}
#include "calls.def"
#undef XGPU_CALL
#undef IN
#undef OUT

/* Additional channels, for tools and tests that speak the protocol directly:
 * a channel of its own into domain (NULL: the daemon's default) with the
 * given task hint. Returns cudaError_t. */
int xgpu_client_open(const char *domain, uint32_t task, struct xgpu_client **out);
void xgpu_client_close(struct xgpu_client *c);
/* The raw queues and the kick, for tests that misbehave on purpose. */
struct xgpu_shm_view *xgpu_client_view(struct xgpu_client *c);
void xgpu_client_kick(struct xgpu_client *c);
/* Waits up to timeout_ms for the daemon to hang up; true if it did. */
bool xgpu_client_wait_closed(struct xgpu_client *c, int timeout_ms);

/* What the handshake told us. */
const struct xgpu_hello_ack *xgpu_client_ack(struct xgpu_client *c);

/* Pinned host memory shared with the backend: a segment mapped here and
 * registered there. Returns cudaError_t. */
int xgpu_client_share(struct xgpu_client *c, size_t size, void **ptr, uint64_t *token);
/* False where no host memory can be shared with the backend (a remote
 * channel: the GPU host is across a network). Page-locked memory is then
 * the program's own, and its copies go through the data areas. */
bool xgpu_client_shares_host_memory(const struct xgpu_client *c);
void xgpu_client_unshare(struct xgpu_client *c, void *ptr, size_t size);

/* Device 0 as the daemon describes it (DEVICE_INFO), for both API layers. */
struct xgpu_device_info {
	struct xgpu_device_blob blob;
	int32_t attrs[XGPU_MAX_DEVICE_ATTRS];
	uint32_t nattrs;
	int driver_version;
};
/* Fills out from the daemon, whose answer is checked like any other input.
 * Returns cudaError_t; out is untouched on failure. */
int xgpu_client_device_info(struct xgpu_client *c, struct xgpu_device_info *out);

/* Warns once that the API call name is not supported and tells the daemon,
 * which counts such calls, if the channel is up. */
void xgpu_client_note_unsupported(const char *name, const char *returns);

/* Only tells the daemon (for callers that have warned in their own words). */
void xgpu_client_tell_unsupported(const char *name);

/* Bumped in every forked child: state keyed to the parent's channel (remote
 * handles, registered segments) is stale when this differs. */
extern unsigned xgpu_fork_generation;

/* Prints a message to stderr once per distinct key, unless XGPU_LOG=error. */
void xgpu_fe_warn_once(const char *key, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- per-stream state both APIs share (streamstate.c) ---- */

/* Runs one host callback: fn as the API named it, the stream as the program
 * passed it, status the stream's state when reached (a cudaError_t). */
typedef void (*xgpu_hostfn_run_t)(void (*fn)(void), void *api_stream, int status, void *user);
/* Enqueues a host callback at the current end of stream (a wire handle):
 * returns once it is queued; run is called on the process's callback thread
 * once the stream reaches that point, and later work on the stream waits for
 * it to return. Returns cudaError_t. */
int xgpu_hostfn_enqueue(struct xgpu_client *c, xgpu_handle_t stream, xgpu_hostfn_run_t run, void (*fn)(void),
			void *api_stream, void *user);
/* Called by xgpu_rpc before each request: holds back stream work that must
 * follow outstanding callbacks. Returns cudaSuccess, or the answer to give
 * without sending (cudaErrorNotReady for a stream query). */
int xgpu_stream_gate(struct xgpu_client *c, const struct xgpu_rpc *r);
/* Stream attributes (CUlaunchAttributeID numbers, which cudaLaunchAttributeID
 * shares; value a CUlaunchAttributeValue): checked, then remembered per
 * stream. Return cudaError_t. */
int xgpu_stream_attr_set(struct xgpu_client *c, xgpu_handle_t stream, int attr, const void *value);
int xgpu_stream_attr_get(struct xgpu_client *c, xgpu_handle_t stream, int attr, void *value);
/* A stream's priority (as clamped, or as set by attribute) and the device's
 * priority range; any pointer may be NULL. Returns cudaError_t. */
int xgpu_stream_get_priority(struct xgpu_client *c, xgpu_handle_t stream, int *priority, int *least,
			     int *greatest);

#endif
