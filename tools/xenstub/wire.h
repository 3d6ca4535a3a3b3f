/* SPDX-License-Identifier: Apache-2.0 */
/* wire.h - the protocol between xenif_stub.c (the client side of every
 * xenif.h ops table) and xgpu-xenstub (the in-memory hypervisor and store).
 *
 * Each handle is one SOCK_STREAM connection. Requests are a wire_hdr plus
 * len body bytes; replies a wire_rep plus len body bytes; descriptors ride
 * with the header bytes (SCM_RIGHTS). The first request is OP_HELLO, which
 * claims a domid and, for xenstore and event-channel handles, passes the
 * server's end of a socketpair that carries asynchronous events as frames of
 * a uint32_t length plus that many bytes (a watch event: path NUL token NUL;
 * an event channel: the uint32_t port), so the client's end is readable
 * exactly while events are queued and replies never mix with events.
 */
#ifndef XGPU_XENSTUB_WIRE_H
#define XGPU_XENSTUB_WIRE_H

#include <stdint.h>

#define XSW_MAGIC 0x7873746eu /* "xstn" */

enum xsw_kind { XSW_XS = 1, XSW_EVTCHN, XSW_GNTSHR, XSW_GNTTAB, XSW_CTL };

enum xsw_op {
	XSW_HELLO = 1,
	XSW_READ,
	XSW_WRITE,
	XSW_MKDIR,
	XSW_RM,
	XSW_DIRECTORY,
	XSW_GET_PERMS,
	XSW_SET_PERMS,
	XSW_WATCH,
	XSW_UNWATCH,
	XSW_TX_START,
	XSW_TX_END,
	XSW_DOMAIN_EXISTS,
	XSW_EV_NOTIFY,
	XSW_EV_BIND_UNBOUND,
	XSW_EV_BIND_INTERDOMAIN,
	XSW_EV_UNBIND,
	XSW_EV_UNMASK,
	XSW_GS_SHARE,
	XSW_GS_UNSHARE,
	XSW_GT_MAP,
	XSW_GT_UNMAP,
	XSW_CTL_INTRODUCE,
	XSW_CTL_RELEASE,
	XSW_CTL_FAILTX,
	XSW_CTL_DUMP,
	XSW_FDS,      /* server -> client: more descriptors of the previous reply */
	XSW_RESTRICT, /* evtchn or gnttab handle: from now on only domain a's ports or grants */
	XSW_OP_MAX,
};

struct xsw_hdr {
	uint32_t op;
	uint32_t len;
};

struct xsw_rep {
	int32_t err; /* 0 or an errno value */
	uint32_t len;
};

struct xsw_hello {
	uint32_t magic, kind, domid;
};

/* Xenstore requests: a, b, then la bytes (a path or name) and lb bytes (the
 * value, token or perms array). a is the transaction for store ops, the
 * abort flag for XSW_TX_END (tx in b), the domid for XSW_DOMAIN_EXISTS. */
struct xsw_xs {
	uint32_t tx, a, la, lb;
};

/* Event channel requests. */
struct xsw_ev {
	uint32_t a, b;
};

/* XSW_GS_SHARE and XSW_GT_MAP (followed by count refs for a map). Replies:
 * share: uint32_t id, count refs, the memfd; map: uint32_t id, nfds, then
 * count (fd index, page) pairs, and the nfds descriptors in XSW_FDS frames
 * of at most XGPU_MAX_PASSED_FDS. */
struct xsw_grant {
	uint32_t domid, count, writable;
	int32_t notify_off, notify_port;
};

#define XSW_PATH_MAX 3072u
#define XSW_VALUE_MAX 4096u
#define XSW_TOKEN_MAX 1024u
#define XSW_GRANT_MAX (1u << 20)
#define XSW_BODY_MAX (sizeof(struct xsw_grant) + XSW_GRANT_MAX * 8u + 64u)

#endif
