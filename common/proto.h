/* SPDX-License-Identifier: Apache-2.0 */
/* proto.h - the xgpu wire protocol: versions, packet headers, limits, and the
 * per-call request/response structures generated from calls.def.
 *
 * Both sides run on the same machine architecture (x86-64 Dom0 and guests), so
 * fields travel in host byte order with fixed widths and explicit padding.
 */
#ifndef XGPU_PROTO_H
#define XGPU_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define XGPU_PROTO_MAGIC 0x55504758u /* "XGPU" little-endian */
/* Bump on any change to the wire format or calls.def; the handshake refuses a
 * mismatch on both sides with a message naming both versions. */
#define XGPU_PROTO_VERSION 8u

/* Ring slots carry a header and fixed-size arguments; variable-length data
 * (names, images, parameters, copies) always streams through a data area. */
#define XGPU_SLOT_SIZE 128u
#define XGPU_MAX_NAME_BYTES 4096u
#define XGPU_MAX_PARAM_BYTES 32768u
#define XGPU_MAX_MODULE_BYTES (256u << 20)
#define XGPU_BULK_STREAMED UINT64_MAX
#define XGPU_DOMAIN_NAME_MAX 64u

/* Call flags (calls.def). */
#define XF_EXEMPT 0x1u  /* may run while the domain does not hold the GPU slot */
#define XF_CONTEXT 0x2u /* needs the domain's device context */
#define XF_BULK_IN 0x4u /* the response may stream data through the rx area */

/* Copy flags. */
#define XGPU_COPY_ASYNC 0x1u
/* ARRAY_COPY: which sides are CUDA arrays. */
#define XGPU_ARRAY_COPY_DST_ARRAY 0x2u
#define XGPU_ARRAY_COPY_SRC_ARRAY 0x4u

/* LAUNCH_EX flags. */
#define XGPU_LAUNCH_COOPERATIVE 0x1u
/* LAUNCH_EX clusters: at most this many blocks, or XGPU_CLUSTER_MAX_NONPORTABLE
 * where the kernel sets CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED. */
#define XGPU_CLUSTER_MAX_PORTABLE 8u
#define XGPU_CLUSTER_MAX_NONPORTABLE 16u

/* Stream handle 0 is the context's legacy default stream. */
#define XGPU_STREAM_DEFAULT 0u

typedef uint64_t xgpu_handle_t;
struct xgpu_dim3 {
	uint32_t x, y, z;
};

/* Wire types named in calls.def. */
#define XGPU_WT_U32 uint32_t
#define XGPU_WT_I32 int32_t
#define XGPU_WT_U64 uint64_t
#define XGPU_WT_F32 float
#define XGPU_WT_DIM3 struct xgpu_dim3
#define XGPU_WT_DPTR uint64_t
#define XGPU_WT_STREAM xgpu_handle_t
#define XGPU_WT_EVENT xgpu_handle_t
#define XGPU_WT_MODULE xgpu_handle_t
#define XGPU_WT_FUNC xgpu_handle_t
#define XGPU_WT_SEG xgpu_handle_t

enum xgpu_call_id {
#define XGPU_CALL(name, flags, bulk, fields) XGPU_CALL_##name,
#include "calls.def"
#undef XGPU_CALL
	XGPU_CALL_COUNT
};

/* Request and response structs: struct xgpu_req_NAME, struct xgpu_rsp_NAME. */
#define IN(type, name) XGPU_WT_##type name;
#define OUT(type, name)
#define XGPU_CALL(name, flags, bulk, fields)                                                                 \
	struct xgpu_req_##name {                                                                             \
		fields                                                                                       \
	};
#include "calls.def"
#undef XGPU_CALL
#undef IN
#undef OUT

#define IN(type, name)
#define OUT(type, name) XGPU_WT_##type name;
#define XGPU_CALL(name, flags, bulk, fields)                                                                 \
	struct xgpu_rsp_##name {                                                                             \
		fields                                                                                       \
	};
#include "calls.def"
#undef XGPU_CALL
#undef IN
#undef OUT

/* Every packet starts with a header; len counts the argument bytes after it.
 * The tag comes first in both: the producer writes it last, with release
 * order, as xgpu_slot_tag(index), so a consumer spinning on the slot sees a
 * whole packet with one cache-line transfer (queue.h). */
struct xgpu_req_hdr {
	uint32_t tag;
	uint32_t call; /* enum xgpu_call_id */
	uint32_t len;  /* sizeof(struct xgpu_req_NAME) */
	uint32_t reserved;
	uint64_t seq;      /* chosen by the frontend, echoed in the response */
	uint64_t bulk_len; /* bytes this request streams through the tx area */
};

struct xgpu_rsp_hdr {
	uint32_t tag;
	uint32_t call;
	int32_t status; /* cudaError_t */
	uint32_t len;   /* sizeof(struct xgpu_rsp_NAME), or 0 when status != 0 */
	uint64_t seq;
	uint64_t bulk_len; /* bytes streamed through the rx area before this response */
};

#define XGPU_SLOT_ARGS (XGPU_SLOT_SIZE - sizeof(struct xgpu_req_hdr))

/* Static description of each call, for both sides. */
struct xgpu_call_desc {
	const char *name;
	uint32_t flags;
	uint32_t req_len;
	uint32_t rsp_len;
	uint64_t bulk_out_max;
};
extern const struct xgpu_call_desc xgpu_calls[XGPU_CALL_COUNT];

/* Name of a call id, or "unknown" for ids outside the table. */
const char *xgpu_call_name(uint32_t call);

/* The request's STREAM field into *stream (generated from calls.def); false
 * when the call has none or req_len does not cover it. */
bool xgpu_req_stream(uint32_t call, const void *req, uint32_t req_len, xgpu_handle_t *stream);

/* Formats a request's fields for logs ("size=4096 stream=0x100000001");
 * req must hold at least xgpu_calls[call].req_len bytes. */
void xgpu_format_req(uint32_t call, const void *req, char *buf, size_t buflen);

/* DEVICE_INFO's bulk payload; attr_count int32 attribute values follow. */
struct xgpu_device_blob {
	char name[256];
	uint8_t uuid[16];
	uint64_t total_mem;
};
#define XGPU_MAX_DEVICE_ATTRS 512u

/* Graphs (GRAPH_INSTANTIATE's bulk): a struct xgpu_graph_desc, nnodes
 * struct xgpu_graph_node, nedges struct xgpu_graph_edge, nconds struct
 * xgpu_graph_cond, then param_bytes of kernel parameters that kernel nodes
 * point into. Child graphs are flattened by the frontend; host memory of copy
 * nodes travels with each launch (GRAPH_LAUNCH streams the host-to-device
 * nodes' bytes in node order and gets the device-to-host nodes' bytes back in
 * node order).
 *
 * Conditional nodes keep their bodies as graphs of their own: every node
 * names the graph it is in (0 the graph itself, k body k of some conditional
 * node, bodies numbered from 1), edges join nodes of one graph, and a
 * conditional node owns bodies src .. src + size - 1. Its handle is an index
 * into the conditional handle table, whose entries belong to one graph (a
 * conditional node uses one of its own graph's); a kernel receives the
 * handle as the guest's value (guest) among its parameters, which the
 * daemon replaces with its driver's handle. */
#define XGPU_MAX_GRAPH_NODES 4096u
#define XGPU_MAX_GRAPH_EDGES 65536u
#define XGPU_MAX_GRAPH_PARAM_BYTES (4u << 20)
#define XGPU_MAX_GRAPH_BYTES (8u << 20)
#define XGPU_MAX_GRAPH_CONDS 128u    /* conditional handles of one graph */
#define XGPU_MAX_GRAPH_BODIES 1024u  /* conditional bodies, all levels together */
#define XGPU_MAX_GRAPH_COND_DEPTH 8u /* conditional nodes within bodies within ... */
/* Host bytes one instantiated graph may copy per launch (its staging, also
 * charged to the domain's pinned limit): 64 MiB refused the 2 x 64 MiB copies
 * of cuda-samples' simpleCudaGraphs. */
#define XGPU_MAX_GRAPH_HOST_BYTES (1u << 30)

enum xgpu_graph_node_type {
	XGPU_GN_EMPTY = 1,
	XGPU_GN_KERNEL,
	XGPU_GN_HTOD,         /* dst; size bytes from the launch's bulk */
	XGPU_GN_DTOH,         /* src; size bytes into the launch's response */
	XGPU_GN_DTOD,         /* dst, src, size */
	XGPU_GN_MEMSET,       /* dst, value (a byte), size */
	XGPU_GN_EVENT_RECORD, /* handle: an event */
	XGPU_GN_EVENT_WAIT,   /* handle: an event */
	XGPU_GN_COND,         /* handle: a conditional handle's index; value: its
			       * CUgraphConditionalNodeType; src: first body; size: bodies */
};

struct xgpu_graph_desc {
	uint32_t nnodes, nedges;
	uint32_t param_bytes;
	uint32_t flags; /* 0 */
	uint32_t nconds, nbodies;
};

struct xgpu_graph_cond {
	uint64_t guest;         /* the value the guest's kernels pass */
	uint32_t default_value; /* cuGraphConditionalHandleCreate's */
	uint32_t flags;         /* 0 or CU_GRAPH_COND_ASSIGN_DEFAULT */
	uint32_t graph;         /* the graph it belongs to (0, or a body) */
	uint32_t reserved;
};

struct xgpu_graph_node {
	uint32_t type; /* enum xgpu_graph_node_type */
	uint32_t value;
	uint64_t handle; /* kernel: FUNC; events: EVENT */
	uint64_t dst, src, size;
	struct xgpu_dim3 grid, block;
	uint32_t shared_bytes;
	uint32_t param_off, param_len; /* into the parameter bytes */
	uint32_t graph;                /* 0: the graph itself; k: body k */
};

struct xgpu_graph_edge {
	uint32_t from, to; /* node indexes: to runs after from */
};

/* Local transport: messages on the daemon's AF_UNIX SOCK_SEQPACKET socket. */
enum xgpu_conn_kind {
	XGPU_CONN_CHANNEL =
	    1, /* a CUDA process: fds = { region memfd, kick-backend eventfd, kick-frontend eventfd } */
	XGPU_CONN_CONTROL = 2, /* xl-gpu: a JSON request follows, JSON reply chunks until EOF */
};

struct xgpu_hello {
	uint32_t magic;   /* XGPU_PROTO_MAGIC */
	uint32_t version; /* XGPU_PROTO_VERSION */
	uint32_t kind;    /* enum xgpu_conn_kind */
	int32_t runtime_version;
	uint32_t task; /* hint for fairness between tasks inside a domain (pid) */
	uint32_t reserved;
	char domain[XGPU_DOMAIN_NAME_MAX]; /* "" = the daemon's default for this uid */
};

struct xgpu_hello_ack {
	uint32_t magic;
	uint32_t version; /* the daemon's protocol version */
	int32_t status;   /* 0, or a cudaError_t explaining the refusal */
	int32_t driver_version;
	uint32_t domid;
	uint32_t channel_id;
	uint32_t device_count;
	uint32_t reserved;
	char message[192]; /* why it was refused, for the user */
};

/* Local transport: a host segment's memfd travels with this message just
 * before the SEG_REGISTER request that names its token. */
struct xgpu_seg_msg {
	uint32_t magic;
	uint32_t reserved;
	uint64_t token;
	uint64_t size;
};

#endif
