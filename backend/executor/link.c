/* SPDX-License-Identifier: Apache-2.0 */
/* link.c - the executor's side of its link to xgpud (execlink.h): the START
 * that names its domain and pages, the link thread that receives channels,
 * close and stop requests and hands them to the poller, the hand-over to a
 * restarted xgpud (adoption, on the inherited listening socket), and the
 * oldest unfinished device operation published for xgpud's kernel timeout.
 *
 * When xgpud goes away the executor goes on serving its guests, ungated
 * (nobody grants the slot), until a new xgpud adopts it.
 */
#include "link.h"

#include "chan_local.h"
#include "chan_xen.h"
#include "fdpass.h"
#include "inbox.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#define WATCH_PERIOD_MS 250
/* How long an orphan with no process left waits for a new xgpud. */
#define DEFAULT_ORPHAN_IDLE_MS 60000ull
#define START_TIMEOUT_MS 10000
#define ADOPT_TIMEOUT_S 5
#define MAX_TASK_WEIGHT 65535u

/* A channel as the link thread knows it: enough to hand it to an adopting
 * xgpud (its descriptors) and to ask the poller to close it. */
struct held {
	uint32_t id;
	struct xgpu_channel *ch; /* the poller's; valid while listed */
	struct xgpu_link_channel info;
	int fds[XGPU_LINK_CHAN_FDS]; /* copies of what xgpud handed over, by kind (execlink.h) */
	int nfds;
};

static struct {
	pthread_t thread;
	bool started;
	int epfd, stop_fd;
	pthread_mutex_t lock; /* held[] */
	struct held *held;
	size_t nheld, cap;
	uint64_t wd_mark, wd_since_ns;
	uint64_t idle_orphan_since_ns, orphan_idle_ns;
	char stop_reason[XGPU_LINK_TEXT];
} L = {.lock = PTHREAD_MUTEX_INITIALIZER, .epfd = -1, .stop_fd = -1};

static void close_fds(int *fds, int n)
{
	xgpu_close_fds(fds, n);
}

/* Sends under the link lock; quietly nothing while orphaned. */
static void link_send(struct xgpu_executor *x, uint32_t type, struct xgpu_link_msg *m, const int *fds,
		      int nfds)
{
	pthread_mutex_lock(&x->link_lock);
	if (x->link_fd >= 0 && xgpu_link_send(x->link_fd, type, m, fds, nfds) < 0 && errno != EPIPE)
		xlog_warn("domain %s: cannot tell xgpud (message %u): %s", x->dom.name, type,
			  strerror(errno));
	pthread_mutex_unlock(&x->link_lock);
}

/* Maps a control page from xgpud, read-only, and checks it. */
static const struct xgpu_exec_ctl *map_ctl(int fd, char *err, size_t errlen)
{
	const struct xgpu_exec_ctl *c = xgpu_exec_page_map(fd, false);
	if (!c) {
		snprintf(err, errlen, "cannot map the control page: %s", strerror(errno));
		return NULL;
	}
	if (c->magic != XGPU_EXEC_MAGIC || c->version != XGPU_EXEC_VERSION) {
		snprintf(err, errlen, "the control page speaks version %u, this executor %u", c->version,
			 XGPU_EXEC_VERSION);
		munmap((void *)c, XGPU_EXEC_PAGE_BYTES);
		return NULL;
	}
	return c;
}

static int wait_readable(int fd, int timeout_ms)
{
	struct pollfd p = {fd, POLLIN, 0};
	int r;
	do
		r = poll(&p, 1, timeout_ms);
	while (r < 0 && errno == EINTR);
	return r;
}

int xgpu_link_start(struct xgpu_executor *x, char *err, size_t errlen)
{
	struct xgpu_link_msg m;
	int fds[XGPU_MAX_PASSED_FDS], nfds = 0;
	x->link_fd = XGPU_EXEC_FD_LINK;
	x->listen_fd = XGPU_EXEC_FD_LISTEN;
	pthread_mutex_init(&x->link_lock, NULL);
	if (wait_readable(x->link_fd, START_TIMEOUT_MS) <= 0) {
		snprintf(err, errlen, "no START from xgpud on fd %d within %d s", x->link_fd,
			 START_TIMEOUT_MS / 1000);
		return -1;
	}
	int r = xgpu_link_recv(x->link_fd, &m, fds, &nfds, XGPU_MAX_PASSED_FDS, false);
	if (r <= 0 || m.type != XGPU_LINK_START || nfds != 4) {
		snprintf(err, errlen, "xgpud's first message is not a START with 4 descriptors (%s)",
			 r < 0    ? strerror(errno)
			 : r == 0 ? "link closed"
				  : "wrong message");
		close_fds(fds, nfds);
		return -1;
	}
	const struct xgpu_exec_ctl *ctl = map_ctl(fds[0], err, errlen);
	struct xgpu_exec_status *st = ctl ? xgpu_exec_page_map(fds[1], true) : NULL;
	if (!ctl || !st || st->magic != XGPU_EXEC_MAGIC) {
		if (ctl && !st)
			snprintf(err, errlen, "cannot map the status page: %s", strerror(errno));
		else if (st)
			snprintf(err, errlen, "the status page has no executor magic");
		close_fds(fds, nfds);
		return -1;
	}
	atomic_store(&x->ctl, ctl);
	x->status = st;
	x->ctl_fd = fds[0];
	x->status_fd = fds[1];
	x->wake_fd = fds[2];
	x->notify_fd = fds[3];

	struct xgpu_domain *dom = &x->dom;
	const struct xgpu_link_start *s = &m.u.start;
	memcpy(dom->name, s->domain, sizeof dom->name);
	dom->name[sizeof dom->name - 1] = '\0';
	dom->domid = s->domid;
	dom->x = x;
	dom->gpu = &x->gpu;
	x->gpu.index = s->gpu;
	x->xgpud_uid = s->xgpud_uid;
	dom->ntask_weights = 0;
	for (uint32_t i = 0; i < s->ntasks && i < XGPU_ARRAY_SIZE(s->tasks); i++)
		if (s->tasks[i].weight >= 1 && s->tasks[i].weight <= MAX_TASK_WEIGHT) {
			dom->task_weights[dom->ntask_weights].task = s->tasks[i].task;
			dom->task_weights[dom->ntask_weights++].weight = s->tasks[i].weight;
		}
	dom->wake_fd = x->wake_fd;
	dom->stats = &st->stats;
	dom->slot = (struct xgpu_slot_client){.grant = &ctl->slot, .report = &st->slot};
	return 0;
}

static void notify_xgpud(void *arg)
{
	struct xgpu_executor *x = arg;
	uint64_t one = 1;
	/* A full counter means xgpud has a wake-up pending already. */
	if (write(x->notify_fd, &one, sizeof one) < 0 && errno != EAGAIN)
		xlog_err("domain %s: cannot signal xgpud's scheduler: %s", x->dom.name, strerror(errno));
}

/* ---- channels ------------------------------------------------------------- */

static struct held *find_held(uint32_t id)
{
	for (size_t i = 0; i < L.nheld; i++)
		if (L.held[i].id == id)
			return &L.held[i];
	return NULL;
}

static void add_channel(struct xgpu_executor *x, const struct xgpu_link_msg *m, int *fds, int nfds)
{
	struct xgpu_link_msg reply = {.chan_id = m->chan_id};
	char err[256] = "";
	struct xgpu_channel *ch = NULL;
	int keep[XGPU_LINK_CHAN_FDS] = {-1, -1, -1, -1};
	uint32_t kind = m->u.channel.kind;
	pthread_mutex_lock(&L.lock);
	bool dup_id = find_held(m->chan_id) != NULL;
	pthread_mutex_unlock(&L.lock);
	bool known = (kind == XGPU_CHAN_LOCAL && nfds == 2) ||
		     (kind == XGPU_CHAN_XEN && nfds >= 2 && nfds <= XGPU_LINK_CHAN_FDS);
	bool dups = known;
	/* Copies for an adopting xgpud: the channel takes the originals. */
	for (int i = 0; dups && i < nfds; i++)
		dups = (keep[i] = fcntl(fds[i], F_DUPFD_CLOEXEC, 0)) >= 0;
	if (dup_id)
		snprintf(err, sizeof err, "channel %u exists already", m->chan_id);
	else if (!known)
		snprintf(err, sizeof err,
			 "channel kind %u with %d descriptors is not one this executor serves", kind, nfds);
	else if (!dups)
		snprintf(err, sizeof err, "dup: %s", strerror(errno));
	else if (kind == XGPU_CHAN_LOCAL && (ch = xgpu_chan_local_open(&x->dom, m->chan_id, &m->u.channel,
								       fds[0], fds[1], err, sizeof err)))
		fds[0] = -1; /* the channel took the socket */
	else if (kind == XGPU_CHAN_XEN)
		ch = xgpu_chan_xen_open(&x->dom, m->chan_id, &m->u.channel, fds, nfds, err, sizeof err);
	if (ch) {
		pthread_mutex_lock(&L.lock);
		if (L.nheld == L.cap) {
			size_t cap = L.cap ? 2 * L.cap : 16;
			struct held *h = realloc(L.held, cap * sizeof *h);
			if (h) {
				L.held = h;
				L.cap = cap;
			}
		}
		if (L.nheld < L.cap) {
			struct held *h = &L.held[L.nheld++];
			*h = (struct held){.id = m->chan_id, .ch = ch, .info = m->u.channel, .nfds = nfds};
			memcpy(h->fds, keep, sizeof keep);
			for (int i = 0; i < XGPU_LINK_CHAN_FDS; i++)
				keep[i] = -1;
		}
		pthread_mutex_unlock(&L.lock);
		/* Without a record an adopting xgpud would not know it, but
		 * the guest is served all the same. */
		close_fds(keep, XGPU_LINK_CHAN_FDS);
		xgpu_inbox_add_channel(&x->dom, ch);
	} else {
		close_fds(keep, XGPU_LINK_CHAN_FDS);
		xlog_warn("domain %s: channel %u refused: %s", x->dom.name, m->chan_id, err);
		snprintf(reply.text, sizeof reply.text, "refused by the executor: %.200s", err);
		link_send(x, XGPU_LINK_CLOSED, &reply, NULL, 0);
	}
	close_fds(fds, nfds);
}

void xgpu_link_unlist_channel(struct xgpu_executor *x, struct xgpu_channel *ch)
{
	(void)x;
	pthread_mutex_lock(&L.lock);
	for (size_t i = 0; i < L.nheld; i++)
		if (L.held[i].ch == ch) {
			close_fds(L.held[i].fds, L.held[i].nfds);
			L.held[i] = L.held[--L.nheld];
			break;
		}
	pthread_mutex_unlock(&L.lock);
}

static void close_channel(struct xgpu_executor *x, uint32_t id)
{
	pthread_mutex_lock(&L.lock);
	struct held *h = find_held(id);
	if (h)
		__atomic_store_n(&h->ch->close_asked, true, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&L.lock);
	if (h)
		xgpu_inbox_wake(&x->dom);
}

void xgpu_link_closed(struct xgpu_executor *x, uint32_t id, const char *why)
{
	struct xgpu_link_msg m = {.chan_id = id};
	snprintf(m.text, sizeof m.text, "%s", why);
	link_send(x, XGPU_LINK_CLOSED, &m, NULL, 0);
}

void xgpu_link_fault(struct xgpu_executor *x, int code, const char *what)
{
	struct xgpu_link_msg m = {.code = code};
	snprintf(m.text, sizeof m.text, "%s", what);
	link_send(x, XGPU_LINK_FAULT, &m, NULL, 0);
}

/* ---- xgpud going and coming ------------------------------------------------- */

static void orphan(struct xgpu_executor *x, const char *why)
{
	pthread_mutex_lock(&x->link_lock);
	if (x->link_fd >= 0) {
		epoll_ctl(L.epfd, EPOLL_CTL_DEL, x->link_fd, NULL);
		close(x->link_fd);
		x->link_fd = -1;
	}
	pthread_mutex_unlock(&x->link_lock);
	if (!atomic_exchange(&x->dom.orphan, true))
		xlog_warn(
		    "domain %s: xgpud went away (%s); serving the domain's %u processes ungated until a new "
		    "xgpud adopts this executor",
		    x->dom.name, why, atomic_load(&x->status->channels));
	xgpu_inbox_wake(&x->dom);
}

/* A restarted xgpud on the listening socket: hand over what it needs to
 * adopt the domain (the pages, the eventfds, every channel), then take its
 * START: a control page of its own and a new log pipe. */
static void adopt(struct xgpu_executor *x)
{
	int conn = accept4(x->listen_fd, NULL, NULL, SOCK_CLOEXEC);
	if (conn < 0)
		return;
	struct ucred cred;
	socklen_t cl = sizeof cred;
	struct timeval tv = {ADOPT_TIMEOUT_S, 0};
	setsockopt(conn, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	setsockopt(conn, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
	struct xgpu_link_msg m;
	int fds[XGPU_MAX_PASSED_FDS], nfds = 0;
	if (getsockopt(conn, SOL_SOCKET, SO_PEERCRED, &cred, &cl) < 0 ||
	    (cred.uid != 0 && cred.uid != x->xgpud_uid)) {
		xlog_warn("domain %s: refused an adoption by uid %u", x->dom.name, (unsigned)cred.uid);
		close(conn);
		return;
	}
	if (xgpu_link_recv(conn, &m, fds, &nfds, XGPU_MAX_PASSED_FDS, false) != 1 ||
	    m.type != XGPU_LINK_ADOPT) {
		close_fds(fds, nfds);
		close(conn);
		return;
	}
	close_fds(fds, nfds);
	struct xgpu_link_msg a = {.code = x->dom.sticky_error};
	pthread_mutex_lock(&L.lock);
	a.u.adopting = (struct xgpu_link_adopting){
	    .pid = getpid(), .nchannels = (uint32_t)L.nheld, .sticky_error = x->dom.sticky_error};
	int pages[3] = {x->status_fd, x->wake_fd, x->notify_fd};
	bool ok = xgpu_link_send(conn, XGPU_LINK_ADOPTING, &a, pages, 3) == 0;
	for (size_t i = 0; ok && i < L.nheld; i++) {
		struct xgpu_link_msg h = {.chan_id = L.held[i].id};
		h.u.channel = L.held[i].info;
		ok = xgpu_link_send(conn, XGPU_LINK_HELD, &h, L.held[i].fds, L.held[i].nfds) == 0;
	}
	pthread_mutex_unlock(&L.lock);
	struct xgpu_link_msg done = {0};
	ok = ok && xgpu_link_send(conn, XGPU_LINK_HELD_DONE, &done, NULL, 0) == 0;
	ok = ok && xgpu_link_recv(conn, &m, fds, &nfds, XGPU_MAX_PASSED_FDS, false) == 1 &&
	     m.type == XGPU_LINK_START && nfds >= 1;
	char err[160];
	const struct xgpu_exec_ctl *ctl = ok ? map_ctl(fds[0], err, sizeof err) : NULL;
	if (!ctl) {
		if (ok)
			xlog_warn("domain %s: adoption failed: %s", x->dom.name, err);
		close_fds(fds, nfds);
		close(conn);
		return;
	}
	/* Its log pipe becomes our stderr. */
	if (nfds >= 2 && fds[1] >= 0)
		dup2(fds[1], STDERR_FILENO);
	int old_ctl = x->ctl_fd;
	x->ctl_fd = fds[0];
	fds[0] = -1;
	close_fds(fds, nfds);
	close(old_ctl);
	/* The old page stays mapped: the poller may be reading it now. */
	atomic_store_explicit(&x->next_ctl, ctl, memory_order_release);
	pthread_mutex_lock(&x->link_lock);
	if (x->link_fd >= 0) {
		epoll_ctl(L.epfd, EPOLL_CTL_DEL, x->link_fd, NULL);
		close(x->link_fd);
	}
	tv = (struct timeval){0, 0};
	setsockopt(conn, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	x->link_fd = conn;
	struct epoll_event ev = {.events = EPOLLIN, .data.fd = conn};
	epoll_ctl(L.epfd, EPOLL_CTL_ADD, conn, &ev);
	pthread_mutex_unlock(&x->link_lock);
	atomic_store(&x->dom.orphan, false);
	xgpu_inbox_wake(&x->dom);
	unsigned n = atomic_load(&x->status->channels);
	xlog_info("domain %s: adopted by a new xgpud (pid %d); %u process%s served on", x->dom.name,
		  (int)cred.pid, n, n == 1 ? "" : "es");
}

/* ---- the link thread ------------------------------------------------------- */

static void stop(struct xgpu_executor *x, const char *why)
{
	snprintf(L.stop_reason, sizeof L.stop_reason, "%s", why);
	x->stop_reason = L.stop_reason;
	atomic_store(&x->status->state, XGPU_EXEC_STOPPING);
	atomic_store(&x->stopping, true);
	xgpu_inbox_wake(&x->dom);
}

/* An orphan keeps serving its processes, but one with none left has nobody
 * to serve and nobody to end it: it ends itself unless adopted in time. */
static void end_idle_orphan(struct xgpu_executor *x)
{
	uint64_t now = xgpu_now_ns();
	if (!atomic_load(&x->dom.orphan) || atomic_load(&x->status->channels) > 0) {
		L.idle_orphan_since_ns = 0;
		return;
	}
	if (!L.idle_orphan_since_ns) {
		L.idle_orphan_since_ns = now;
		return;
	}
	if (now - L.idle_orphan_since_ns >= L.orphan_idle_ns && !atomic_load(&x->stopping)) {
		xlog_info(
		    "domain %s: no xgpud adopted this executor and no process is left after %.1f s; ending",
		    x->dom.name, (double)L.orphan_idle_ns / 1e9);
		stop(x, "orphaned with no process left");
	}
}

/* A new grant broker for a held Xen channel, from the xgpud that adopted
 * us; on failure the channel goes on with the grants it has mapped. */
static void renew_broker(struct xgpu_executor *x, uint32_t id, int *fds, int nfds)
{
	int r = -1;
	pthread_mutex_lock(&L.lock);
	struct held *h = find_held(id);
	if (h && nfds == 1 && h->info.kind == XGPU_CHAN_XEN)
		r = xgpu_chan_xen_renew_broker(h->ch, fds[0]);
	pthread_mutex_unlock(&L.lock);
	if (r == 0) {
		fds[0] = -1;
		xlog_info("domain %s: channel %u: grant broker of the new xgpud taken", x->dom.name, id);
	} else {
		xlog_warn("domain %s: channel %u: new grant broker refused (%s)", x->dom.name, id,
			  h ? strerror(errno) : "no such channel");
	}
}

static void handle_message(struct xgpu_executor *x)
{
	struct xgpu_link_msg m;
	int fds[XGPU_MAX_PASSED_FDS], nfds = 0;
	int r = xgpu_link_recv(x->link_fd, &m, fds, &nfds, XGPU_MAX_PASSED_FDS, true);
	if (r < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (r <= 0) {
		orphan(x, r == 0 ? "link closed" : strerror(errno));
		return;
	}
	switch (m.type) {
	case XGPU_LINK_CHANNEL:
		add_channel(x, &m, fds, nfds);
		return;
	case XGPU_LINK_CLOSE:
		close_channel(x, m.chan_id);
		break;
	case XGPU_LINK_STOP:
		stop(x, m.text[0] ? m.text : "stopped by xgpud");
		break;
	case XGPU_LINK_BROKER:
		renew_broker(x, m.chan_id, fds, nfds);
		break;
	default:
		xlog_warn("domain %s: ignored message %u from xgpud", x->dom.name, m.type);
		break;
	}
	close_fds(fds, nfds);
}

/* The domain's oldest unfinished operation, and since when this thread has
 * seen it unfinished, for xgpud's kernel timeout. */
static void publish_busy(struct xgpu_executor *x)
{
	struct xgpu_domain *dom = &x->dom;
	uint64_t now = xgpu_now_ns(), unfinished = UINT64_MAX;
	pthread_mutex_lock(&dom->marks_lock);
	for (uint32_t i = 0; dom->marks && i < dom->marks_count; i++) {
		const struct xgpu_busy_mark *m = &dom->marks[(dom->marks_head + i) % dom->marks_cap];
		if (x->drv.cuEventQuery(m->end) == CUDA_ERROR_NOT_READY) {
			unfinished = dom->marks_done + i;
			break;
		}
	}
	pthread_mutex_unlock(&dom->marks_lock);
	/* No mark unfinished, but an operation still being issued: named by
	 * its issue count, above every mark's index. */
	uint64_t issuing = atomic_load_explicit(&dom->issuing, memory_order_relaxed);
	if (unfinished == UINT64_MAX && (issuing & 1))
		unfinished = (1ull << 63) | issuing;
	if (unfinished != L.wd_mark) {
		L.wd_mark = unfinished;
		L.wd_since_ns = now;
	}
	atomic_store(&x->status->busy_since_ns, unfinished == UINT64_MAX ? 0 : L.wd_since_ns);
}

static void *link_main(void *arg)
{
	struct xgpu_executor *x = arg;
	pthread_setname_np(pthread_self(), "xgpu-link");
	for (;;) {
		struct epoll_event ev[8];
		int n = epoll_wait(L.epfd, ev, 8, WATCH_PERIOD_MS);
		if (n < 0 && errno != EINTR)
			break;
		for (int i = 0; i < n; i++) {
			int fd = ev[i].data.fd;
			if (fd == L.stop_fd)
				return NULL;
			if (fd == x->listen_fd)
				adopt(x);
			else if (fd == x->link_fd)
				handle_message(x);
		}
		publish_busy(x);
		end_idle_orphan(x);
	}
	return NULL;
}

int xgpu_link_run(struct xgpu_executor *x, const char *what, char *err, size_t errlen)
{
	x->dom.slot.notify = notify_xgpud;
	x->dom.slot.arg = x;
	L.epfd = epoll_create1(EPOLL_CLOEXEC);
	L.stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	L.wd_mark = UINT64_MAX;
	/* XGPU_EXECUTOR_ORPHAN_MS (xgpud passes XGPU_EXECUTOR_* on) lets tests
	 * wait less than a real restart may take. */
	const char *ms = getenv("XGPU_EXECUTOR_ORPHAN_MS");
	L.orphan_idle_ns = (ms && *ms ? strtoull(ms, NULL, 10) : DEFAULT_ORPHAN_IDLE_MS) * 1000000ull;
	struct epoll_event a = {.events = EPOLLIN, .data.fd = x->link_fd};
	struct epoll_event b = {.events = EPOLLIN, .data.fd = x->listen_fd};
	struct epoll_event c = {.events = EPOLLIN, .data.fd = L.stop_fd};
	if (L.epfd < 0 || L.stop_fd < 0 || epoll_ctl(L.epfd, EPOLL_CTL_ADD, x->link_fd, &a) < 0 ||
	    epoll_ctl(L.epfd, EPOLL_CTL_ADD, L.stop_fd, &c) < 0) {
		snprintf(err, errlen, "cannot watch the link: %s", strerror(errno));
		return -1;
	}
	/* Without the listening socket a restarted xgpud cannot adopt us, but
	 * everything else works. We listen (xgpud only bound it), so that it
	 * sees our pid as the one answering. */
	if (listen(x->listen_fd, 4) < 0 || epoll_ctl(L.epfd, EPOLL_CTL_ADD, x->listen_fd, &b) < 0)
		xlog_warn("domain %s: no listening socket for a restarted xgpud (%s)", x->dom.name,
			  strerror(errno));
	atomic_store(&x->status->state, XGPU_EXEC_SERVING);
	struct xgpu_link_msg m = {0};
	snprintf(m.text, sizeof m.text, "%s", what);
	link_send(x, XGPU_LINK_READY, &m, NULL, 0);
	if (pthread_create(&L.thread, NULL, link_main, x)) {
		snprintf(err, errlen, "cannot start the link thread");
		return -1;
	}
	L.started = true;
	return 0;
}

void xgpu_link_stop(struct xgpu_executor *x)
{
	(void)x;
	if (!L.started)
		return;
	uint64_t one = 1;
	if (write(L.stop_fd, &one, sizeof one) < 0)
		xlog_err("cannot stop the link thread: %s", strerror(errno));
	pthread_join(L.thread, NULL);
	L.started = false;
	pthread_mutex_lock(&L.lock);
	for (size_t i = 0; i < L.nheld; i++)
		close_fds(L.held[i].fds, L.held[i].nfds);
	free(L.held);
	L.held = NULL;
	L.nheld = L.cap = 0;
	pthread_mutex_unlock(&L.lock);
	close(L.epfd);
	close(L.stop_fd);
}
