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
 * are serialised on the channel. */
int xgpu_rpc(struct xgpu_client *c, struct xgpu_rpc *r);

/* Stream capture (frontend/driver/graph.c) sees every request before it is
 * sent: it returns -1 to send it, or the result of a request it took (stream
 * work on a capturing stream becomes a graph node). NULL until the process
 * first begins a capture. */
extern int (*xgpu_rpc_capture_hook)(struct xgpu_rpc *r);

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

/* Bumped in every forked child: state keyed to the parent's channel (remote
 * handles, registered segments) is stale when this differs. */
extern unsigned xgpu_fork_generation;

/* Prints a message to stderr once per distinct key, unless XGPU_LOG=error. */
void xgpu_fe_warn_once(const char *key, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
