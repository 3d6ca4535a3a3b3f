/* SPDX-License-Identifier: Apache-2.0 */
/* chan_xen.c - a Xen guest's channel as its executor serves it: the region
 * the guest granted (root page, directory pages, ring pages) mapped here,
 * signals on the event channel xgpud bound, and host segments (pinned
 * memory) mapped by their root page's ref when a request names them.
 *
 * xgpud read the guest's xenstore keys, bound its event channel, mapped and
 * checked its root page and region, answered it, and handed over handles
 * that reach this one domain's ports and grants and nothing else (xenif.h):
 * the executor holds no Xen privilege of its own. Everything in a granted
 * page is still the guest's: the root header and every directory ref are
 * copied out before they are checked or used (xgpu_xen_map_shared), and the
 * region is laid out anew (xgpu_shm_attach).
 *
 * This process's map of the root page carries the unmap notification that
 * clears be_alive: when the executor goes, whatever the reason, the guest
 * sees its backend go; when xgpud alone goes, it does not.
 */
#include "chan_xen.h"

#include "fdpass.h"
#include "log.h"
#include "xenif.h"
#include "xenvgpu.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Pending ports consumed per wake-up: a guest that floods its port costs
 * only its own executor's time, in bounded slices. */
#define SERVICE_BUDGET 256

struct xen_be {
	struct xgpu_evtchn *evt;
	struct xgpu_gnttab *gnt;
	uint32_t domid, lport;
	struct xgpu_xen_root *root;
};

static struct xen_be *xb(struct xgpu_channel *ch)
{
	return ch->tpriv;
}

static void be_kick(struct xgpu_channel *ch)
{
	struct xen_be *b = xb(ch);
	b->evt->ops->notify(b->evt, b->lport);
}

static int be_wait_fd(struct xgpu_channel *ch)
{
	struct xen_be *b = xb(ch);
	return b->evt->ops->fd(b->evt);
}

static bool be_service(struct xgpu_channel *ch)
{
	struct xen_be *b = xb(ch);
	for (int budget = SERVICE_BUDGET; budget > 0; budget--) {
		int port = b->evt->ops->pending(b->evt);
		if (port < 0) {
			if (errno == EAGAIN || errno == EINTR)
				break;
			dlog_warn(ch->dom, "domain %s: channel %u: event channel failed: %s", ch->dom->name,
				  ch->id, strerror(errno));
			return false;
		}
		b->evt->ops->unmask(b->evt, (uint32_t)port);
	}
	/* fe_alive goes 0 when the guest's process goes (its share's unmap
	 * notification). */
	return __atomic_load_n(&b->root->fe_alive, __ATOMIC_ACQUIRE) != 0;
}

static int be_import_segment(struct xgpu_channel *ch, uint64_t token, uint64_t size, void **ptr, char *err,
			     size_t errlen)
{
	struct xen_be *b = xb(ch);
	if (token > UINT32_MAX || size == 0 || size % XGPU_XEN_PAGE_SIZE ||
	    size / XGPU_XEN_PAGE_SIZE > XGPU_XEN_MAX_REGION_PAGES) {
		snprintf(
		    err, errlen,
		    "segment token %llu or size %llu is not a grant ref and a whole number of pages up to "
		    "1 GiB",
		    (unsigned long long)token, (unsigned long long)size);
		return -1;
	}
	struct xgpu_xen_root hdr;
	void *m = xgpu_xen_map_shared(b->gnt, b->domid, (uint32_t)token,
				      (uint32_t)(size / XGPU_XEN_PAGE_SIZE), -1, NULL, &hdr, err, errlen);
	if (!m)
		return -1;
	*ptr = m;
	return 0;
}

static void be_drop_segment(struct xgpu_channel *ch, uint64_t token)
{
	/* Nothing is held for a segment until it is imported. */
	(void)ch;
	(void)token;
}

static void be_release_segment(struct xgpu_channel *ch, void *ptr, uint64_t size)
{
	struct xen_be *b = xb(ch);
	b->gnt->ops->unmap(b->gnt, ptr, (unsigned)(size / XGPU_XEN_PAGE_SIZE));
}

static void release(struct xen_be *b, void *region, size_t region_size)
{
	if (region)
		b->gnt->ops->unmap(b->gnt, region, (unsigned)(region_size / XGPU_XEN_PAGE_SIZE));
	if (b->root) {
		/* The unmap notification clears it too; this covers a stub or
		 * kernel that signals only. */
		__atomic_store_n(&b->root->be_alive, 0, __ATOMIC_RELEASE);
		b->gnt->ops->unmap(b->gnt, b->root, 1);
	}
	/* The port stays bound until the handle's last descriptor goes
	 * (xgpud's copy for an adopting xgpud is closed with the channel). */
	if (b->evt)
		b->evt->ops->close(b->evt);
	if (b->gnt)
		b->gnt->ops->close(b->gnt);
	free(b);
}

static void be_close(struct xgpu_channel *ch)
{
	release(xb(ch), ch->region, ch->region_size);
	ch->region = NULL;
	ch->tpriv = NULL;
}

static const struct xgpu_be_transport_ops xen_ops = {
    .name = "xen",
    .kick = be_kick,
    .wait_fd = be_wait_fd,
    .service = be_service,
    .import_segment = be_import_segment,
    .drop_segment = be_drop_segment,
    .release_segment = be_release_segment,
    .close = be_close,
};

struct xgpu_channel *xgpu_chan_xen_open(struct xgpu_domain *dom, uint32_t id,
					const struct xgpu_link_channel *lc, int *fds, int nfds, char *err,
					size_t errlen)
{
	uint32_t nevt = lc->xen.evt_fds;
	struct xgpu_channel *ch = calloc(1, sizeof *ch);
	struct xen_be *b = calloc(1, sizeof *b);
	void *region = NULL;
	char why[256];
	if (!ch || !b) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	if (nevt < 1 || nevt >= (uint32_t)nfds || lc->xen.domid != dom->domid || lc->xen.ring_pages == 0 ||
	    lc->xen.ring_pages > XGPU_XEN_MAX_REGION_PAGES) {
		snprintf(err, errlen,
			 "channel of domain %u with %u ring pages and %u of %d descriptors for events",
			 lc->xen.domid, lc->xen.ring_pages, nevt, nfds);
		goto fail;
	}
	b->domid = lc->xen.domid;
	b->lport = lc->xen.port;
	b->evt = xgpu_evtchn_import(lc->xen.impl, b->domid, fds, (int)nevt, why, sizeof why);
	if (!b->evt) {
		snprintf(err, errlen, "its event channel: %s", why);
		goto fail;
	}
	for (uint32_t i = 0; i < nevt; i++)
		fds[i] = -1;
	b->gnt = xgpu_gnttab_import(lc->xen.impl, b->domid, fds + nevt, nfds - (int)nevt, why, sizeof why);
	if (!b->gnt) {
		snprintf(err, errlen, "its grants: %s", why);
		goto fail;
	}
	for (int i = (int)nevt; i < nfds; i++)
		fds[i] = -1;
	struct xgpu_xen_root hdr;
	region = xgpu_xen_map_shared(b->gnt, b->domid, lc->xen.ring_ref, lc->xen.ring_pages,
				     (int32_t)b->lport, &b->root, &hdr, why, sizeof why);
	if (!region) {
		snprintf(err, errlen, "its region: %s", why);
		goto fail;
	}
	size_t size = (size_t)lc->xen.ring_pages * XGPU_XEN_PAGE_SIZE;
	if (xgpu_shm_attach(region, size, &ch->v, why, sizeof why) < 0) {
		snprintf(err, errlen, "region refused: %s", why);
		goto fail;
	}
	ch->dom = dom;
	ch->id = id;
	ch->task = lc->task;
	ch->pid = 0; /* a guest's process: no pid of ours */
	ch->uid = 0;
	ch->ops = &xen_ops;
	ch->tpriv = b;
	ch->region = region;
	ch->region_size = size;
	return ch;
fail:
	if (b && (b->evt || b->gnt))
		release(b, region, (size_t)lc->xen.ring_pages * XGPU_XEN_PAGE_SIZE);
	else
		free(b);
	free(ch);
	return NULL;
}

int xgpu_chan_xen_renew_broker(struct xgpu_channel *ch, int fd)
{
	struct xen_be *b = xb(ch);
	if (!b || !b->gnt || !b->gnt->ops->broker_renew) {
		errno = ENOTSUP;
		return -1;
	}
	return b->gnt->ops->broker_renew(b->gnt, fd);
}
