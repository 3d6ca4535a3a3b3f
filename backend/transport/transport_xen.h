/* SPDX-License-Identifier: Apache-2.0 */
/* transport_xen.h - xgpud's Xen transport: one channel's grant-mapped region
 * and event channel (the be transport ops), opened by the xenbus logic
 * (xenbus.c) from the values a guest published, and the queue through which
 * a closing channel tells the xenbus logic it is gone.
 *
 * Everything here runs in xgpud's main thread; the channel's I/O is its
 * domain's executor's (backend/executor/chan_xen.c).
 */
#ifndef XGPU_TRANSPORT_XEN_H
#define XGPU_TRANSPORT_XEN_H

#include "host.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What a guest published for channel n, copied out of xenstore. */
struct xgpu_xen_chan_params {
	uint32_t domid, n;
	uint32_t ring_ref, ring_pages, port, task;
};

/* Why a channel ended, as its notice says. */
enum xgpu_xen_end {
	XGPU_XEN_END_KILLED = 1, /* the xenbus logic asked (xgpu_xen_channel_kill) */
	XGPU_XEN_END_FE_DEAD,    /* fe_alive went 0: the guest process died */
	XGPU_XEN_END_BROKEN,     /* its executor closed it or ended (bad ring, stop, fault) */
};

/* The transport's state of one channel. The xenbus logic holds it from
 * open until it reads the channel's notice, then frees it. */
struct xgpu_xen_chan;

struct xgpu_xen_transport;

/* Channels reach the daemon through host, which must outlive the transport.
 * Its fd (an epoll set) is readable while notices or grant requests wait. */
struct xgpu_xen_transport *xgpu_xen_transport_new(const struct xgpu_transport_host *host, char *err,
						  size_t errlen);
int xgpu_xen_transport_fd(const struct xgpu_xen_transport *t);
/* Answers the grant requests executors made (real Xen's grant broker,
 * xenif.h) without blocking; the fd above is readable while some wait. */
void xgpu_xen_transport_serve(struct xgpu_xen_transport *t);
void xgpu_xen_transport_free(struct xgpu_xen_transport *t);

/* Binds, maps and validates channel p of dom, answers the guest in the root
 * page and hands the channel to dom's executor. cookie comes back with the
 * channel's notice. NULL with the reason in err (everything released). */
struct xgpu_xen_chan *xgpu_xen_channel_open(struct xgpu_xen_transport *t, struct xgpud_domain *dom,
					    const struct xgpu_xen_chan_params *p, void *cookie, char *err,
					    size_t errlen);
/* Takes channel ch of dom, which a restarted xgpud's adopted executor serves
 * (host.h take_xen_channel), after checking its executor's record against
 * p (what xenstore says now) and mapping it anew; NULL with the reason in
 * err, ch left as it was. */
struct xgpu_xen_chan *xgpu_xen_channel_adopt(struct xgpu_xen_transport *t, struct xgpud_domain *dom,
					     struct xgpud_channel *ch, const struct xgpu_xen_chan_params *p,
					     void *cookie, char *err, size_t errlen);
/* Asks the channel's executor to close it (never blocks). Its notice
 * follows. */
void xgpu_xen_channel_kill(struct xgpu_xen_chan *c, const char *why);

/* The next notice of a closed channel, or NULL: its cookie and why it
 * ended. The caller then frees it with xgpu_xen_chan_free. */
struct xgpu_xen_chan *xgpu_xen_next_closed(struct xgpu_xen_transport *t, void **cookie,
					   enum xgpu_xen_end *why);
void xgpu_xen_chan_free(struct xgpu_xen_chan *c);

#endif
