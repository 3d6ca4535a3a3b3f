/* SPDX-License-Identifier: Apache-2.0 */
/* transport.h - how the frontend reaches the backend: the operations a
 * transport (local: memfd + eventfd over a UNIX socket; Xen: grant pages +
 * event channel via xenstore) provides to the channel client. The ring code
 * above it is the same for every transport. */
#ifndef XGPU_FE_TRANSPORT_H
#define XGPU_FE_TRANSPORT_H

#include "proto.h"

#include <stddef.h>
#include <stdint.h>

struct xgpu_qend;

/* write_bulk: the transport leaves these bytes to the ring. */
#define XGPU_BULK_VIA_RING (-2)

struct xgpu_fe_chan {
	const struct xgpu_fe_transport_ops *ops;
	void *region; /* shared with the backend, region_size bytes */
	size_t region_size;
	void *priv; /* the transport's */
};

enum xgpu_wait_result { XGPU_WAIT_KICKED = 0, XGPU_WAIT_TIMEOUT = 1, XGPU_WAIT_PEER_GONE = -1 };

struct xgpu_fe_transport_ops {
	const char *name;
	/* Shares a zeroed region of region_size bytes, lets init() lay it out,
	 * then connects and handshakes. On failure returns a cudaError_t and a
	 * message for the user in err. */
	int (*open)(struct xgpu_fe_chan *ch, size_t region_size,
		    int (*init)(void *region, size_t size, void *arg), void *init_arg,
		    const struct xgpu_hello *hello, struct xgpu_hello_ack *ack, char *err, size_t errlen);
	/* Signals the backend. */
	void (*kick)(struct xgpu_fe_chan *ch);
	/* Sleeps until the backend kicks, timeout_ms passes (-1: forever) or the
	 * backend is gone. answer: the caller waits for a call's answer alone
	 * (not ring space or bulk bytes), a round trip's latency (the remote
	 * transport then reads the answer in person). */
	enum xgpu_wait_result (*wait)(struct xgpu_fe_chan *ch, int timeout_ms, bool answer);
	/* Optional: takes up to len bulk bytes for the backend from src
	 * itself, where the client would copy them into the tx ring (tx): the
	 * remote transport sends them from src, as the ring would only be
	 * copied onto the network. Returns the bytes taken, 0 when the ring has
	 * no room for them (the client waits for space as for a copy), -1 when
	 * the channel is lost, or XGPU_BULK_VIA_RING when this channel's bytes
	 * must go through the ring after all (the client copies them in). */
	int64_t (*write_bulk)(struct xgpu_fe_chan *ch, struct xgpu_qend *tx, const void *src, size_t len);
	/* Optional, the other way: waits up to timeout_ms for the backend and
	 * takes bulk bytes for the rx ring (rx, empty) straight into dst, at
	 * most len. The caller has armed the rsp and rx queues as for wait(). The ring's producer index moves
	 * past them as if they had been written there, so the caller releases them unread. Returns the bytes
	 * put in dst (0: none came, though other things may have), or -1 when the backend is gone. */
	int64_t (*read_bulk)(struct xgpu_fe_chan *ch, struct xgpu_qend *rx, void *dst, size_t len,
			     int timeout_ms);
	/* Allocates size bytes shared with the backend (pinned host memory) and
	 * sends the share out of band; *token names it in SEG_REGISTER. */
	int (*share_segment)(struct xgpu_fe_chan *ch, size_t size, void **ptr, uint64_t *token);
	void (*unshare_segment)(struct xgpu_fe_chan *ch, void *ptr, size_t size);
	/* No host memory can be shared (share_segment always refuses). */
	bool host_memory_private;
	void (*close)(struct xgpu_fe_chan *ch);
	/* In a forked child: drop the parent's channel without telling anyone. */
	void (*abandon)(struct xgpu_fe_chan *ch);
};

/* Checks xgpud's answer to the handshake for every transport: 0, or a
 * cudaError_t with a message for the user in err (peer names where the
 * answer came from, for the bad-magic case). */
int xgpu_fe_check_ack(struct xgpu_hello_ack *ack, const char *peer, char *err, size_t errlen);

/* A Xen guest whose vgpu device names a remote GPU host (the backend's
 * remote key, and remote-psk or remote-cert, remote-cert-key and remote-ca):
 * opens a remote channel there, and ch->ops
 * becomes the remote transport's. */
struct xgpu_fe_remote_creds {
	const char *psk;                  /* "identity:hex", or NULL: */
	const char *cert, *cert_key, *ca; /* PEM texts */
	/* The guest's xenstore, for remote-state; the callee closes it. */
	struct xgpu_xs *xs;
};
int xgpu_fe_remote_open_xen(struct xgpu_fe_chan *ch, size_t region_size, int (*init)(void *, size_t, void *),
			    void *init_arg, const struct xgpu_hello *hello, struct xgpu_hello_ack *ack,
			    const char *spec, const struct xgpu_fe_remote_creds *creds, char *err,
			    size_t errlen);

extern const struct xgpu_fe_transport_ops xgpu_fe_transport_local;
extern const struct xgpu_fe_transport_ops xgpu_fe_transport_xen;
extern const struct xgpu_fe_transport_ops xgpu_fe_transport_remote;

#endif
