/* SPDX-License-Identifier: Apache-2.0 */
/* transport_xen.c - the dom0 end of a vgpu channel (xenvgpu.h): binding the
 * guest's event channel, mapping the root page it granted (with an unmap
 * notification that clears be_alive), the directory pages and the region,
 * validating all of it, answering in the root page, and the be transport ops
 * over the result; host segments are shared the same way (root page +
 * directory pages) and imported by the root page's ref.
 *
 * Everything in a granted page is the guest's: the root header and every
 * directory ref are copied out before they are checked or used, and the
 * region is mapped only from refs of that one domain, only as many as
 * ring-pages says. A channel's wait fd is an epoll set of its event-channel
 * fd and an eventfd through which the main thread asks the poller to close
 * it, so closing is always the poller's (it owns the channel).
 */
#include "transport_xen.h"

#include "log.h"
#include "shm.h"
#include "util.h"
#include "xenif.h"
#include "xenvgpu.h"

#include <cuda_runtime_api.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

/* Pending ports consumed per wake-up: a guest that floods its port costs
 * only its own poller's time, in bounded slices. */
#define SERVICE_BUDGET 256

struct xgpu_xen_transport {
	const struct xgpu_transport_host *host;
	int notify_fd;
	pthread_mutex_t lock;
	struct xgpu_xen_chan *closed, **closed_tail; /* notices, oldest first */
};

struct xgpu_xen_chan {
	struct xgpu_xen_transport *t;
	void *cookie;
	struct xgpu_xen_chan_params p;
	struct xgpu_evtchn *evt;
	struct xgpu_gnttab *gnt;
	int lport; /* our end of the event channel; -1 before binding */
	int epfd;  /* the wait fd: evtchn fd + kill_fd */
	int kill_fd;
	struct xgpu_xen_root *root; /* the mapped root page */
	void *region;
	size_t region_size;
	_Atomic bool killed; /* main thread asked */
	bool fe_dead;        /* poller saw fe_alive == 0 */
	bool torn_down;      /* resources released (close ran) */
	struct xgpu_xen_chan *next_closed;
};

struct xgpu_xen_transport *xgpu_xen_transport_new(const struct xgpu_transport_host *host, char *err,
						  size_t errlen)
{
	struct xgpu_xen_transport *t = calloc(1, sizeof *t);
	if (!t) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	t->host = host;
	t->notify_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (t->notify_fd < 0) {
		snprintf(err, errlen, "eventfd: %s", strerror(errno));
		free(t);
		return NULL;
	}
	pthread_mutex_init(&t->lock, NULL);
	t->closed_tail = &t->closed;
	return t;
}

int xgpu_xen_transport_fd(const struct xgpu_xen_transport *t)
{
	return t->notify_fd;
}

void xgpu_xen_transport_free(struct xgpu_xen_transport *t)
{
	if (!t)
		return;
	void *cookie;
	enum xgpu_xen_end why;
	struct xgpu_xen_chan *c;
	while ((c = xgpu_xen_next_closed(t, &cookie, &why)))
		xgpu_xen_chan_free(c);
	close(t->notify_fd);
	pthread_mutex_destroy(&t->lock);
	free(t);
}

struct xgpu_xen_chan *xgpu_xen_next_closed(struct xgpu_xen_transport *t, void **cookie,
					   enum xgpu_xen_end *why)
{
	uint64_t v;
	if (read(t->notify_fd, &v, sizeof v) < 0 && errno != EAGAIN)
		xlog_warn("xen transport: reading its notice fd: %s", strerror(errno));
	pthread_mutex_lock(&t->lock);
	struct xgpu_xen_chan *c = t->closed;
	if (c) {
		t->closed = c->next_closed;
		if (!t->closed)
			t->closed_tail = &t->closed;
	}
	pthread_mutex_unlock(&t->lock);
	if (c) {
		*cookie = c->cookie;
		*why = atomic_load(&c->killed) ? XGPU_XEN_END_KILLED
		       : c->fe_dead            ? XGPU_XEN_END_FE_DEAD
					       : XGPU_XEN_END_BROKEN;
		/* More may wait: keep the fd readable for the next round. */
		uint64_t one = 1;
		if (t->closed && write(t->notify_fd, &one, sizeof one) < 0)
			xlog_warn("xen transport: notice fd: %s", strerror(errno));
	}
	return c;
}

/* Unmaps, unbinds and closes what the channel holds (either thread, once). */
static void release(struct xgpu_xen_chan *c)
{
	if (c->torn_down)
		return;
	c->torn_down = true;
	if (c->region)
		c->gnt->ops->unmap(c->gnt, c->region, (unsigned)(c->region_size / XGPU_XEN_PAGE_SIZE));
	if (c->root) {
		/* The unmap notification clears it too; this covers a stub or
		 * kernel that signals only. */
		__atomic_store_n(&c->root->be_alive, 0, __ATOMIC_RELEASE);
		c->gnt->ops->unmap(c->gnt, c->root, 1);
	}
	if (c->lport >= 0)
		c->evt->ops->unbind(c->evt, (uint32_t)c->lport);
	if (c->epfd >= 0)
		close(c->epfd);
	if (c->evt)
		c->evt->ops->close(c->evt);
	if (c->gnt)
		c->gnt->ops->close(c->gnt);
	c->region = NULL;
	c->root = NULL;
	c->lport = -1;
	c->epfd = -1;
	c->evt = NULL;
	c->gnt = NULL;
}

void xgpu_xen_chan_free(struct xgpu_xen_chan *c)
{
	if (!c)
		return;
	release(c);
	if (c->kill_fd >= 0)
		close(c->kill_fd);
	free(c);
}

void xgpu_xen_channel_kill(struct xgpu_xen_chan *c, const char *why)
{
	(void)why;
	atomic_store(&c->killed, true);
	uint64_t one = 1;
	if (write(c->kill_fd, &one, sizeof one) < 0 && errno != EAGAIN)
		xlog_err("domain %u: channel %u: cannot ask its poller to close it: %s", c->p.domid, c->p.n,
			 strerror(errno));
}

/* Maps npages region pages that domid listed through a root page it granted
 * as root_ref: the root header and directory refs are copied before use.
 * With root_out, the root page stays mapped there (with the be_alive
 * notification on notify_port), even on failure; otherwise it is unmapped. */
static void *map_shared(struct xgpu_gnttab *g, uint32_t domid, uint32_t root_ref, uint32_t npages,
			int32_t notify_port, struct xgpu_xen_root **root_out, struct xgpu_xen_root *hdr,
			char *err, size_t errlen)
{
	struct xgpu_xen_root *root =
	    root_out ? g->ops->map_grant_ref_notify(g, domid, root_ref, true,
						    (int32_t)XGPU_XEN_ROOT_BE_ALIVE_OFFSET, notify_port)
		     : g->ops->map_domain_grant_refs(g, 1, domid, &root_ref, false);
	if (!root) {
		snprintf(err, errlen, "cannot map root page grant %u of domain %u: %s", root_ref, domid,
			 strerror(errno));
		return NULL;
	}
	uint32_t *refs = NULL, *dirs = NULL;
	void *region = NULL;
	memcpy(hdr, root, sizeof *hdr);
	if (hdr->magic != XGPU_XEN_ROOT_MAGIC) {
		snprintf(err, errlen, "root page has magic 0x%08x, not 0x%08x", hdr->magic,
			 XGPU_XEN_ROOT_MAGIC);
		goto out;
	}
	if (hdr->version != XGPU_PROTO_VERSION) {
		snprintf(err, errlen,
			 "protocol version mismatch: the guest's root page speaks xgpu protocol %u, xgpud "
			 "speaks %u",
			 hdr->version, XGPU_PROTO_VERSION);
		goto out;
	}
	if (hdr->npages != npages) {
		snprintf(err, errlen, "root page lists %u pages, %u announced", hdr->npages, npages);
		goto out;
	}
	uint32_t ndir = (npages + XGPU_XEN_REFS_PER_DIR - 1) / XGPU_XEN_REFS_PER_DIR;
	if (hdr->ndir != ndir || ndir > XGPU_XEN_ROOT_MAX_DIRS) {
		snprintf(err, errlen, "root page has %u directory pages, %u pages need %u", hdr->ndir, npages,
			 ndir);
		goto out;
	}
	dirs = malloc(ndir * sizeof *dirs);
	refs = malloc((size_t)npages * sizeof *refs);
	if (!dirs || !refs) {
		snprintf(err, errlen, "out of memory for %u refs", npages);
		goto out;
	}
	memcpy(dirs, root->dir_refs, ndir * sizeof *dirs);
	for (uint32_t i = 0; i < ndir; i++) {
		const uint32_t *dp = g->ops->map_domain_grant_refs(g, 1, domid, &dirs[i], false);
		if (!dp) {
			snprintf(err, errlen, "cannot map directory page %u (grant %u) of domain %u: %s", i,
				 dirs[i], domid, strerror(errno));
			goto out;
		}
		uint32_t first = i * XGPU_XEN_REFS_PER_DIR;
		uint32_t cnt =
		    npages - first < XGPU_XEN_REFS_PER_DIR ? npages - first : XGPU_XEN_REFS_PER_DIR;
		memcpy(refs + first, dp, cnt * sizeof *refs);
		g->ops->unmap(g, (void *)dp, 1);
	}
	region = g->ops->map_domain_grant_refs(g, npages, domid, refs, true);
	if (!region)
		snprintf(err, errlen, "cannot map the %u region pages domain %u listed: %s", npages, domid,
			 strerror(errno));
out:
	free(dirs);
	free(refs);
	if (root_out)
		*root_out = root; /* even on failure: the caller answers there */
	else
		g->ops->unmap(g, root, 1);
	return region;
}

/* ---- opening (main thread) ---------------------------------------------------- */

static void answer(struct xgpu_xen_chan *c, const struct xgpu_hello_ack *ack)
{
	if (!c->root)
		return;
	memcpy((uint8_t *)c->root + offsetof(struct xgpu_xen_root, ack), ack, sizeof *ack);
	__atomic_thread_fence(__ATOMIC_RELEASE);
}

struct xgpu_xen_chan *xgpu_xen_channel_open(struct xgpu_xen_transport *t, struct xgpud_domain *dom,
					    const struct xgpu_xen_chan_params *p, void *cookie, char *err,
					    size_t errlen)
{
	const struct xgpu_transport_host *host = t->host;
	struct xgpu_xen_chan *c = calloc(1, sizeof *c);
	struct xgpud_channel *ch = calloc(1, sizeof *ch);
	int status = cudaErrorInvalidValue;
	if (!c || !ch) {
		free(c);
		free(ch);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	c->t = t;
	c->cookie = cookie;
	c->p = *p;
	c->lport = -1;
	c->epfd = -1;
	c->kill_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	char why[256];
	c->evt = xgpu_evtchn_open(why, sizeof why);
	c->gnt = c->evt ? xgpu_gnttab_open(why, sizeof why) : NULL;
	if (c->kill_fd < 0 || !c->evt || !c->gnt) {
		snprintf(err, errlen, "%s", c->kill_fd < 0 ? strerror(errno) : why);
		status = cudaErrorMemoryAllocation;
		goto fail;
	}
	int lport = c->evt->ops->bind_interdomain(c->evt, p->domid, p->port);
	if (lport < 0) {
		snprintf(err, errlen, "cannot bind event channel %u of domain %u: %s", p->port, p->domid,
			 strerror(errno));
		goto fail;
	}
	c->lport = lport;
	struct xgpu_xen_root hdr;
	c->region =
	    map_shared(c->gnt, p->domid, p->ring_ref, p->ring_pages, lport, &c->root, &hdr, err, errlen);
	if (!c->region) {
		if (strstr(err, "version mismatch"))
			status = cudaErrorInsufficientDriver;
		goto fail;
	}
	c->region_size = (size_t)p->ring_pages * XGPU_XEN_PAGE_SIZE;
	struct xgpu_hello h;
	memcpy(&h, &hdr.hello, sizeof h);
	if (h.magic != XGPU_PROTO_MAGIC || h.version != XGPU_PROTO_VERSION) {
		snprintf(err, errlen, "root page's hello has magic 0x%08x version %u (xgpud speaks %u)",
			 h.magic, h.version, XGPU_PROTO_VERSION);
		goto fail;
	}
	if (h.task != p->task) {
		snprintf(err, errlen, "root page's hello names task %u, the task key %u", h.task, p->task);
		goto fail;
	}
	char serr[192];
	struct xgpu_shm_view v;
	if (xgpu_shm_attach(c->region, c->region_size, &v, serr, sizeof serr) < 0) {
		snprintf(err, errlen, "channel region refused: %s", serr);
		goto fail;
	}
	/* Serving a Xen channel from the domain's executor (the event channel
	 * and grants handed over on the domain's own handles) is not built
	 * yet: refuse it by name rather than serve it from here. */
	(void)host;
	snprintf(err, errlen, "Xen channels are not yet served by executors");
	status = cudaErrorNotSupported;
	goto fail;
fail : {
	struct xgpu_hello_ack nack = {
	    .magic = XGPU_PROTO_MAGIC, .version = XGPU_PROTO_VERSION, .status = status};
	snprintf(nack.message, sizeof nack.message, "%s", err);
	answer(c, &nack);
	free(ch);
	xgpu_xen_chan_free(c);
	return NULL;
}
}
