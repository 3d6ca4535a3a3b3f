/* SPDX-License-Identifier: Apache-2.0 */
/* transport_xen.c - the dom0 end of a vgpu channel (xenvgpu.h) as xgpud
 * keeps it: binding the guest's event channel, mapping the root page it
 * granted, the directory pages and the region, validating all of it,
 * answering in the root page, and handing the channel to its domain's
 * executor (backend/executor/chan_xen.c serves it there) on handles that
 * reach that one domain's ports and grants (xenif.h open_for): the
 * executor holds no Xen privilege of its own.
 *
 * Everything in a granted page is the guest's: the root header and every
 * directory ref are copied out before they are checked or used, and the
 * region is mapped only from refs of that one domain, only as many as
 * ring-pages says. xgpud keeps its own map of the root page and region (to
 * write why the executor ended before the guest sees its backend go) and
 * its copies of the executor's handles; the executor's map of the root page
 * carries the be_alive unmap notification. A channel ends when its
 * executor says so or ends itself (executors.c calls chan_ended); the xenbus
 * logic learns of it from the notice queue.
 *
 * On real Xen each channel also has a grant record in xgpud's own directory
 * (host record_dir): how many pages its executor holds mapped through the
 * grant broker, written before every map. A restarted xgpud counts an
 * adopted channel's allowance from it, so that no restart gives an
 * executor a fresh one.
 */
#include "transport_xen.h"

#include "fdpass.h"
#include "log.h"
#include "shm.h"
#include "util.h"
#include "xenif.h"
#include "xenvgpu.h"

#include <cuda_runtime_api.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

struct xgpu_xen_transport {
	const struct xgpu_transport_host *host;
	int notify_fd;
	int epfd; /* notify_fd and the channels' grant brokers (real Xen) */
	pthread_mutex_t lock;
	struct xgpu_xen_chan *closed, **closed_tail; /* notices, oldest first */
};

struct xgpu_xen_chan {
	struct xgpu_xen_transport *t;
	void *cookie;
	struct xgpu_xen_chan_params p;
	struct xgpud_domain *dom;
	struct xgpud_channel *ch; /* the domain's while its executor serves it */
	/* Handles reaching domain p.domid alone (xenif.h): evt with the
	 * guest's port bound and gnt_x, both handed to the executor (our
	 * copies keep them until the channel ends, so that the guest sees
	 * its backend go only after xgpud wrote why); gnt, xgpud's own, for
	 * the root page (the answer, be_alive) and the region (the end code). */
	struct xgpu_evtchn *evt;
	struct xgpu_gnttab *gnt, *gnt_x;
	int lport;     /* our end of the event channel; -1 before binding */
	int broker_fd; /* gnt_x's grant broker while watched, else -1 */
	int record_fd; /* its grant record, or -1 */
	struct xgpu_xen_root *root;
	void *region;
	size_t region_size;
	bool killed;    /* the xenbus logic asked */
	bool ended;     /* gone from its domain; the notice is posted */
	bool torn_down; /* resources released */
	enum xgpu_xen_end why;
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
	t->epfd = epoll_create1(EPOLL_CLOEXEC);
	struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
	if (t->epfd < 0 || epoll_ctl(t->epfd, EPOLL_CTL_ADD, t->notify_fd, &ev) < 0) {
		snprintf(err, errlen, "epoll: %s", strerror(errno));
		if (t->epfd >= 0)
			close(t->epfd);
		close(t->notify_fd);
		free(t);
		return NULL;
	}
	pthread_mutex_init(&t->lock, NULL);
	t->closed_tail = &t->closed;
	return t;
}

int xgpu_xen_transport_fd(const struct xgpu_xen_transport *t)
{
	return t->epfd;
}

static void unwatch_broker(struct xgpu_xen_chan *c)
{
	if (c->broker_fd >= 0)
		epoll_ctl(c->t->epfd, EPOLL_CTL_DEL, c->broker_fd, NULL);
	c->broker_fd = -1;
}

void xgpu_xen_transport_serve(struct xgpu_xen_transport *t)
{
	struct epoll_event ev[16];
	int n = epoll_wait(t->epfd, ev, 16, 0);
	for (int i = 0; i < n; i++) {
		struct xgpu_xen_chan *c = ev[i].data.ptr;
		if (!c || c->broker_fd < 0 || !c->gnt_x)
			continue;
		if (c->gnt_x->ops->broker_serve(c->gnt_x) < 0) {
			/* Its executor left, or broke the broker's rules: it
			 * gets no more grants; the channel's end follows. */
			bool left = errno == EPIPE;
			unwatch_broker(c);
			if (!left)
				dlog_warn(
				    c->dom,
				    "domain %s: vgpu channel %u: its executor broke the grant broker's rules",
				    c->dom->name, c->p.n);
		}
	}
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
	close(t->epfd);
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
		*why = c->why;
		/* More may wait: keep the fd readable for the next round. */
		uint64_t one = 1;
		if (t->closed && write(t->notify_fd, &one, sizeof one) < 0)
			xlog_warn("xen transport: notice fd: %s", strerror(errno));
	}
	return c;
}

/* ---- grant records (real Xen) -------------------------------------------------- */

#define GRANT_RECORD_MAGIC 0x31746e6775706778ull /* "xgpugnt1" */

/* What the file holds: whose channel it counts, and the count. */
struct grant_record {
	uint64_t magic;
	uint32_t domid, n, ring_ref, ring_pages;
	uint64_t pages;
};

static int grant_record_path(const struct xgpu_xen_chan *c, char *buf, size_t len)
{
	const char *dir = c->t->host->record_dir;
	int k = snprintf(buf, len, "%s/grants-%u-%u", dir, c->p.domid, c->p.n);
	return dir[0] && k > 0 && (size_t)k < len ? 0 : -1;
}

/* The broker's record hook: the count, before a map or after an unmap. */
static int grant_record_write(void *arg, uint64_t pages)
{
	const struct xgpu_xen_chan *c = arg;
	struct grant_record r = {.magic = GRANT_RECORD_MAGIC,
				 .domid = c->p.domid,
				 .n = c->p.n,
				 .ring_ref = c->p.ring_ref,
				 .ring_pages = c->p.ring_pages,
				 .pages = pages};
	return pwrite(c->record_fd, &r, sizeof r, 0) == (ssize_t)sizeof r ? 0 : -1;
}

/* Opens (adopted: reads first) the channel's record and has its broker keep
 * it. Returns what the broker counts as held: 0 for a new channel; for an
 * adopted one the record's count where the record names this channel, else
 * the broker's limit. -1 with the reason in err where the record cannot be
 * kept: the channel is then refused, since a map it could not account for
 * would outlive a restart. */
static int64_t grant_record_open(struct xgpu_xen_chan *c, bool adopted, char *err, size_t errlen)
{
	char path[320];
	if (grant_record_path(c, path, sizeof path) < 0) {
		snprintf(err, errlen, "no directory for the channel's grant record");
		return -1;
	}
	c->record_fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC | (adopted ? 0 : O_TRUNC), 0600);
	if (c->record_fd < 0) {
		snprintf(err, errlen, "cannot open the channel's grant record %s: %s", path, strerror(errno));
		return -1;
	}
	uint64_t held = 0;
	if (adopted) {
		struct grant_record r;
		held = UINT64_MAX;
		if (pread(c->record_fd, &r, sizeof r, 0) == (ssize_t)sizeof r &&
		    r.magic == GRANT_RECORD_MAGIC && r.domid == c->p.domid && r.n == c->p.n &&
		    r.ring_ref == c->p.ring_ref && r.ring_pages == c->p.ring_pages)
			held = r.pages;
		else
			dlog_warn(
			    c->dom,
			    "domain %s: vgpu channel %u: no grant record of the previous xgpud (%s); its "
			    "executor may map no more grants until it unmaps some",
			    c->dom->name, c->p.n, path);
	}
	c->gnt_x->ops->broker_account(c->gnt_x, held, grant_record_write, c);
	held = c->gnt_x->ops->broker_held(c->gnt_x);
	if (grant_record_write(c, held) < 0) {
		snprintf(err, errlen, "cannot write the channel's grant record %s: %s", path,
			 strerror(errno));
		return -1;
	}
	return (int64_t)held;
}

/* Unmaps, unbinds and closes what the channel holds (once). handed_on: the
 * executor goes on serving it for the next xgpud, so the guest must see
 * nothing: only our copies and our own maps go. */
static void release(struct xgpu_xen_chan *c, bool handed_on)
{
	if (c->torn_down)
		return;
	c->torn_down = true;
	if (c->region)
		c->gnt->ops->unmap(c->gnt, c->region, (unsigned)(c->region_size / XGPU_XEN_PAGE_SIZE));
	if (c->root) {
		/* The executor's map of it carries the unmap notification
		 * that clears it; this covers one that never mapped it. */
		if (!handed_on)
			__atomic_store_n(&c->root->be_alive, 0, __ATOMIC_RELEASE);
		c->gnt->ops->unmap(c->gnt, c->root, 1);
	}
	/* The executor's grant handle before the port: with the last copy
	 * of it goes its root map, whose notification signals the port. */
	unwatch_broker(c);
	if (c->gnt_x)
		c->gnt_x->ops->close(c->gnt_x);
	if (c->record_fd >= 0) {
		/* The next xgpud reads the record of a channel handed on. */
		char path[320];
		close(c->record_fd);
		c->record_fd = -1;
		if (!handed_on && grant_record_path(c, path, sizeof path) == 0)
			unlink(path);
	}
	if (c->lport >= 0 && !handed_on) {
		c->evt->ops->notify(c->evt, (uint32_t)c->lport);
		c->evt->ops->unbind(c->evt, (uint32_t)c->lport);
	}
	if (c->evt)
		c->evt->ops->close(c->evt);
	if (c->gnt)
		c->gnt->ops->close(c->gnt);
	c->region = NULL;
	c->root = NULL;
	c->lport = -1;
	c->evt = NULL;
	c->gnt = c->gnt_x = NULL;
}

void xgpu_xen_chan_free(struct xgpu_xen_chan *c)
{
	if (!c)
		return;
	if (c->ch) /* still its domain's: it forgets the channel */
		c->ch->ended = NULL, c->ch->tpriv = NULL, c->ch->region = NULL;
	release(c, false);
	free(c);
}

static void post_closed(struct xgpu_xen_chan *c)
{
	struct xgpu_xen_transport *t = c->t;
	pthread_mutex_lock(&t->lock);
	c->next_closed = NULL;
	*t->closed_tail = c;
	t->closed_tail = &c->next_closed;
	pthread_mutex_unlock(&t->lock);
	uint64_t one = 1;
	if (write(t->notify_fd, &one, sizeof one) < 0 && errno != EAGAIN)
		xlog_err("xen transport: cannot post a closed channel: %s", strerror(errno));
}

/* The channel left its domain (core.h): its executor closed it, or ended. */
static void chan_ended(struct xgpud_channel *ch, bool handed_on)
{
	struct xgpu_xen_chan *c = ch->tpriv;
	c->ch = NULL;
	c->ended = true;
	if (handed_on) {
		/* xgpud restarts in place: the xenbus logic is not told (the
		 * next xgpud finds the channel in its executor). */
		release(c, true);
		return;
	}
	/* Ours to read, whatever the executor said: fe_alive is cleared by
	 * the guest's own unmap notification when its process goes. */
	bool fe_dead = c->root && __atomic_load_n(&c->root->fe_alive, __ATOMIC_ACQUIRE) == 0;
	c->why = c->killed ? XGPU_XEN_END_KILLED : fe_dead ? XGPU_XEN_END_FE_DEAD : XGPU_XEN_END_BROKEN;
	release(c, false);
	/* xenstore is the xenbus logic's: it learns of the end from the notice. */
	post_closed(c);
}

void xgpu_xen_channel_kill(struct xgpu_xen_chan *c, const char *why)
{
	if (c->ended || c->killed)
		return;
	c->killed = true;
	const struct xgpu_transport_host *host = c->t->host;
	host->close_channel(host->core, c->dom, c->ch->id, why);
}

/* ---- opening (main thread) ---------------------------------------------------- */

static void answer(struct xgpu_xen_chan *c, const struct xgpu_hello_ack *ack)
{
	if (!c->root)
		return;
	memcpy((uint8_t *)c->root + offsetof(struct xgpu_xen_root, ack), ack, sizeof *ack);
	__atomic_thread_fence(__ATOMIC_RELEASE);
}

/* A channel of dom with nothing bound yet (opened, or adopted from an
 * executor); NULL when out of memory. */
static struct xgpu_xen_chan *new_chan(struct xgpu_xen_transport *t, void *cookie,
				      const struct xgpu_xen_chan_params *p, struct xgpud_domain *dom)
{
	struct xgpu_xen_chan *c = calloc(1, sizeof *c);
	if (!c)
		return NULL;
	c->t = t;
	c->cookie = cookie;
	c->p = *p;
	c->dom = dom;
	c->lport = -1;
	c->broker_fd = -1;
	c->record_fd = -1;
	return c;
}

struct xgpu_xen_chan *xgpu_xen_channel_open(struct xgpu_xen_transport *t, struct xgpud_domain *dom,
					    const struct xgpu_xen_chan_params *p, void *cookie, char *err,
					    size_t errlen)
{
	const struct xgpu_transport_host *host = t->host;
	struct xgpu_xen_chan *c = new_chan(t, cookie, p, dom);
	struct xgpud_channel *ch = calloc(1, sizeof *ch);
	int status = cudaErrorInvalidValue;
	struct xgpud_handover ho = {.kind = XGPU_CHAN_XEN, .ch = ch};
	if (!c || !ch) {
		free(c);
		free(ch);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	ch->sock = -1;
	char why[256];
	c->evt = xgpu_evtchn_open_for(p->domid, why, sizeof why);
	c->gnt = c->evt ? xgpu_gnttab_open_for(p->domid, why, sizeof why) : NULL;
	c->gnt_x = c->gnt ? xgpu_gnttab_open_for(p->domid, why, sizeof why) : NULL;
	if (!c->gnt_x) {
		snprintf(err, errlen, "%s", why);
		status = errno == ENOTSUP ? cudaErrorNotSupported : cudaErrorMemoryAllocation;
		goto fail;
	}
	if (c->gnt_x->ops->broker_account && grant_record_open(c, false, err, errlen) < 0) {
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
	c->region = xgpu_xen_map_shared(c->gnt, p->domid, p->ring_ref, p->ring_pages, -1, &c->root, &hdr, err,
					errlen);
	if (!c->region) {
		if (errno == ESTALE)
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
	int nevt = c->evt->ops->export_fds ? c->evt->ops->export_fds(c->evt, ho.fds) : -1;
	int ngnt =
	    nevt > 0 && c->gnt_x->ops->export_fds ? c->gnt_x->ops->export_fds(c->gnt_x, ho.fds + nevt) : -1;
	if (nevt <= 0 || ngnt <= 0 || nevt + ngnt > XGPU_LINK_CHAN_FDS) {
		snprintf(err, errlen, "cannot hand the channel's event channel and grants over: %s",
			 strerror(errno));
		if (nevt > 0)
			xgpu_close_fds(ho.fds, nevt);
		if (ngnt > 0)
			xgpu_close_fds(ho.fds + nevt, ngnt);
		status = cudaErrorMemoryAllocation;
		goto fail;
	}
	ho.nfds = nevt + ngnt;
	int bfd = c->gnt_x->ops->broker_fd ? c->gnt_x->ops->broker_fd(c->gnt_x) : -1;
	if (c->gnt_x->ops->broker_notify_port)
		c->gnt_x->ops->broker_notify_port(c->gnt_x, lport);
	struct epoll_event bev = {.events = EPOLLIN, .data.ptr = c};
	if (bfd >= 0) {
		if (epoll_ctl(t->epfd, EPOLL_CTL_ADD, bfd, &bev) < 0) {
			snprintf(err, errlen, "cannot watch the channel's grant broker: %s", strerror(errno));
			xgpu_close_fds(ho.fds, ho.nfds);
			status = cudaErrorMemoryAllocation;
			goto fail;
		}
		c->broker_fd = bfd;
	}
	ho.xen = (struct xgpu_link_xen){.impl = xgpu_xen_impl(),
					.domid = p->domid,
					.ring_ref = p->ring_ref,
					.ring_pages = p->ring_pages,
					.port = (uint32_t)lport,
					.evt_fds = (uint32_t)nevt,
					.n = p->n,
					.guest_port = p->port,
					.task = p->task};
	struct xgpu_hello_ack ack;
	if (host->admit_channel(host->core, dom, ch, &ack, &status, err, errlen) < 0) {
		xgpu_close_fds(ho.fds, ho.nfds);
		goto fail;
	}
	ch->task = p->task;
	ch->pid = 0; /* a guest's process: no pid of ours */
	ch->uid = 0;
	ch->region = c->region;
	ch->region_size = c->region_size;
	ch->ended = chan_ended;
	ch->tpriv = c;
	c->ch = ch;
	answer(c, &ack);
	__atomic_store_n(&c->root->be_alive, 1, __ATOMIC_RELEASE);
	uint32_t id = ch->id;
	if (host->add_channel(host->core, dom, &ho, err, errlen) < 0) {
		ch->ended = NULL;
		ch->region = NULL;
		c->ch = NULL;
		status = cudaErrorDevicesUnavailable;
		goto fail;
	}
	/* The domain holds ch now; its executor serves the guest. */
	dlog_info(dom, "domain %s: channel %u opened as vgpu channel %u (task %u, %u ring pages, runtime %d)",
		  dom->name, id, p->n, p->task, p->ring_pages, h.runtime_version);
	return c;
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

/* Real Xen: the grant broker's end in the previous xgpud went with it; a new
 * one, watched here, its other end to the executor. Until it arrives the
 * executor serves on with the grants it has mapped (a new segment waits). The
 * port that unmap notifications may signal is the one the executor says it
 * bound, which adoption checked is bound in the handle it passed. */
static int renew_broker(struct xgpu_xen_chan *c, uint32_t id, char *err, size_t errlen)
{
	const struct xgpu_transport_host *host = c->t->host;
	int bf[XGPU_XEN_EXPORT_FDS], n = c->gnt_x->ops->export_fds(c->gnt_x, bf);
	if (n != 2) {
		if (n > 0)
			xgpu_close_fds(bf, n);
		snprintf(err, errlen, "cannot make a new grant broker: %s", strerror(errno));
		return -1;
	}
	close(bf[0]); /* a copy of the gntdev file, which the executor has */
	c->gnt_x->ops->broker_notify_port(c->gnt_x, c->lport);
	int bfd = c->gnt_x->ops->broker_fd(c->gnt_x);
	struct epoll_event bev = {.events = EPOLLIN, .data.ptr = c};
	if (epoll_ctl(c->t->epfd, EPOLL_CTL_ADD, bfd, &bev) < 0) {
		snprintf(err, errlen, "cannot watch the channel's grant broker: %s", strerror(errno));
		close(bf[1]);
		return -1;
	}
	c->broker_fd = bfd;
	int r = host->hand_broker(host->core, c->dom, id, bf[1]);
	if (r < 0)
		snprintf(err, errlen, "cannot hand the executor its new grant broker: %s", strerror(errno));
	close(bf[1]);
	return r;
}

struct xgpu_xen_chan *xgpu_xen_channel_adopt(struct xgpu_xen_transport *t, struct xgpud_domain *dom,
					     struct xgpud_channel *ch, const struct xgpu_xen_chan_params *p,
					     void *cookie, char *err, size_t errlen)
{
	const struct xgpu_link_xen *x = &ch->xen;
	if (x->ring_ref != p->ring_ref || x->ring_pages != p->ring_pages || x->guest_port != p->port ||
	    x->task != p->task || (int)x->evt_fds >= ch->nxfds) {
		snprintf(err, errlen,
			 "its executor's record of it (ring-ref %u, %u pages, port %u) is not xenstore's",
			 x->ring_ref, x->ring_pages, x->guest_port);
		return NULL;
	}
	struct xgpu_xen_chan *c = new_chan(t, cookie, p, dom);
	if (!c) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	char why[256];
	int nevt = (int)x->evt_fds;
	c->evt = xgpu_evtchn_adopt(x->impl, p->domid, ch->xfds, nevt, why, sizeof why);
	if (c->evt) {
		for (int i = 0; i < nevt; i++)
			ch->xfds[i] = -1;
		c->lport = (int)x->port;
		/* The executor's word for its port is checked: a notify on a handle
		 * succeeds only for a port bound in it, and xgpud bound only this
		 * domain's in it. Unmap notifications may then signal no other
		 * domain's port. The guest sees one spurious event, which it
		 * tolerates. */
		if (c->evt->ops->notify(c->evt, x->port) < 0) {
			snprintf(why, sizeof why,
				 "its executor's event-channel port %u is not bound in the handle it passed",
				 x->port);
			c->lport = -1;
			c->evt->ops->close(c->evt);
			c->evt = NULL;
		}
	}
	if (c->evt) {
		c->gnt_x =
		    xgpu_gnttab_adopt(x->impl, p->domid, ch->xfds + nevt, ch->nxfds - nevt, why, sizeof why);
	}
	if (c->gnt_x) {
		for (int i = nevt; i < ch->nxfds; i++)
			ch->xfds[i] = -1;
		c->gnt = xgpu_gnttab_open_for(p->domid, why, sizeof why);
	}
	if (!c->gnt) {
		snprintf(err, errlen, "%s", why);
		goto fail;
	}
	struct xgpu_xen_root hdr;
	c->region = xgpu_xen_map_shared(c->gnt, p->domid, p->ring_ref, p->ring_pages, -1, &c->root, &hdr, err,
					errlen);
	if (!c->region)
		goto fail;
	c->region_size = (size_t)p->ring_pages * XGPU_XEN_PAGE_SIZE;
	struct xgpu_shm_view v;
	if (xgpu_shm_attach(c->region, c->region_size, &v, why, sizeof why) < 0) {
		snprintf(err, errlen, "channel region refused: %s", why);
		goto fail;
	}
	int64_t held = 0;
	if (c->gnt_x->ops->broker_account && (held = grant_record_open(c, true, err, errlen)) < 0)
		goto fail;
	if (c->gnt_x->ops->broker_fd && renew_broker(c, ch->id, err, errlen) < 0)
		goto fail;
	ch->nxfds = 0;
	ch->region = c->region;
	ch->region_size = c->region_size;
	ch->ended = chan_ended;
	ch->tpriv = c;
	c->ch = ch;
	if (c->gnt_x->ops->broker_account)
		dlog_info(
		    dom,
		    "domain %s: channel %u (vgpu channel %u) adopted with its executor, which holds %lld "
		    "grant pages mapped through the broker",
		    dom->name, ch->id, p->n, (long long)held);
	else
		dlog_info(dom, "domain %s: channel %u (vgpu channel %u) adopted with its executor", dom->name,
			  ch->id, p->n);
	return c;
fail:
	/* Its executor is asked to close it (close_untaken): the port stays. */
	c->lport = -1;
	xgpu_xen_chan_free(c);
	return NULL;
}
