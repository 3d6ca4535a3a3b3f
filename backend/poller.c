/* poller.c - a domain's accelerator VCPU: one thread that serves all of the
 * domain's channels, executing their calls in order while the domain's GPU
 * scheduler lets it, spinning briefly when work just stopped and otherwise
 * sleeping in epoll on the channels' wait fds and its own wake fd.
 *
 * The thread exists only while the domain has processes: when the last one
 * is gone it releases the device context and exits, and the next channel
 * starts a new one (domain.c), so idle domains hold no thread and no GPU
 * state, only their statistics.
 */
#include "log.h"
#include "scheduler.h"
#include "util.h"
#include "xgpud.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#define BATCH 16 /* requests served from one channel before looking at the next */

static void take_incoming(struct xgpu_domain *dom)
{
	/* A racy peek keeps the lock off the busy loop; a channel missed now
	 * is taken on the next pass, and its arrival wakes us anyway. */
	if (!__atomic_load_n(&dom->incoming, __ATOMIC_RELAXED))
		return;
	pthread_mutex_lock(&dom->incoming_lock);
	struct xgpu_channel *list = dom->incoming;
	dom->incoming = NULL;
	pthread_mutex_unlock(&dom->incoming_lock);
	while (list) {
		struct xgpu_channel *ch = list;
		list = ch->next;
		struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP, .data.ptr = ch};
		if (epoll_ctl(dom->epfd, EPOLL_CTL_ADD, ch->ops->wait_fd(ch), &ev) < 0) {
			xlog_err("domain %s: cannot watch channel %u: %s", dom->name, ch->id,
				 strerror(errno));
			ch->dead = true;
			ch->dead_reason = "cannot be watched";
		}
		ch->next = dom->channels;
		dom->channels = ch;
	}
}

static void reap(struct xgpu_domain *dom)
{
	struct xgpu_channel **pp = &dom->channels;
	bool any = false;
	while (*pp) {
		struct xgpu_channel *ch = *pp;
		if (!ch->dead) {
			pp = &ch->next;
			continue;
		}
		*pp = ch->next;
		epoll_ctl(dom->epfd, EPOLL_CTL_DEL, ch->ops->wait_fd(ch), NULL);
		xgpu_channel_teardown(ch);
		any = true;
	}
	/* The last process gone: give the device context back, so an idle
	 * domain holds nothing on the GPU. */
	if (any && !dom->channels)
		xgpu_exec_release(dom);
}

/* Serves up to BATCH requests of one channel; returns whether any ran. */
static bool serve_channel(struct xgpu_domain *dom, struct xgpu_channel *ch)
{
	bool did = false;
	for (int k = 0; k < BATCH && !ch->dead; k++) {
		if (!ch->have_pending) {
			int64_t avail = xgpu_q_avail(&ch->v.req);
			if (avail < 0) {
				dlog_warn(
				    dom,
				    "domain %s: channel %u (pid %d) corrupted its request ring; closing it",
				    dom->name, ch->id, (int)ch->pid);
				ch->dead = true;
				ch->dead_reason = "corrupt request ring";
				return did;
			}
			if (avail == 0)
				return did;
			const uint8_t *shared = xgpu_q_unit(&ch->v.req, ch->v.req.idx);
			struct xgpu_req_hdr h;
			memcpy(&h, shared, sizeof h);
			/* One copy out of shared memory, of only the bytes the
			 * request uses (usually one cache line): the guest may
			 * rewrite the slot as soon as we read it. The length
			 * is checked against the call table in dispatch. */
			uint32_t len = h.len <= XGPU_SLOT_ARGS ? h.len : XGPU_SLOT_ARGS;
			memcpy(ch->pending, &h, sizeof h);
			memcpy(ch->pending + sizeof h, shared + sizeof h, len);
			memset(ch->pending + sizeof h + len, 0, XGPU_SLOT_ARGS - len);
			if (xgpu_q_release(&ch->v.req, 1))
				ch->ops->kick(ch);
			ch->have_pending = true;
			ch->pending_since_ns = xgpu_now_ns();
		}
		if (!xgpu_dispatch_exempt(ch->pending) && !xgpu_sched_may_issue(&dom->sd)) {
			xgpu_sched_request(dom->gpu->sched, &dom->sd);
			return did;
		}
		ch->have_pending = false;
		xgpu_dispatch(ch, ch->pending);
		did = true;
	}
	return did;
}

/* Whether a channel has work we could run now. */
static bool runnable(struct xgpu_domain *dom, bool *waiting_for_slot)
{
	bool any = false;
	*waiting_for_slot = false;
	for (struct xgpu_channel *ch = dom->channels; ch; ch = ch->next) {
		if (ch->dead)
			return true; /* to be reaped */
		if (ch->have_pending) {
			if (xgpu_dispatch_exempt(ch->pending) || xgpu_sched_may_issue(&dom->sd))
				any = true;
			else
				*waiting_for_slot = true;
		} else if (xgpu_q_avail(&ch->v.req) != 0) {
			any = true;
		}
	}
	return any;
}

static void handle_events(struct xgpu_domain *dom, struct epoll_event *evs, int n)
{
	for (int i = 0; i < n; i++) {
		struct xgpu_channel *ch = evs[i].data.ptr;
		if (!ch) {
			uint64_t v;
			if (read(dom->wake_fd, &v, sizeof v) < 0 && errno != EAGAIN)
				xlog_err("domain %s: reading wake fd: %s", dom->name, strerror(errno));
		} else if (!ch->dead && !ch->ops->service(ch)) {
			ch->dead = true;
			ch->dead_reason = "process exited";
		}
	}
}

/* With no channel left and none arriving, the thread ends; domain.c starts
 * another for the next channel. Returns true when this thread must exit. */
static bool park(struct xgpu_domain *dom)
{
	if (dom->channels)
		return false;
	pthread_mutex_lock(&dom->incoming_lock);
	bool idle = !dom->incoming;
	if (idle)
		dom->thread_running = false;
	pthread_mutex_unlock(&dom->incoming_lock);
	if (idle)
		xgpu_sched_idle(dom->gpu->sched, &dom->sd);
	return idle;
}

void *xgpu_poller_main(void *arg)
{
	struct xgpu_domain *dom = arg;
	struct xgpud *d = dom->d;
	/* Thread names hold 15 characters: "avcpu:" and the name's start. */
	char tname[16] = "avcpu:";
	memcpy(tname + 6, dom->name, sizeof tname - 7);
	tname[15] = '\0';
	pthread_setname_np(pthread_self(), tname);
	uint64_t last_work = xgpu_now_ns();

	while (!atomic_load(&d->stopping)) {
		take_incoming(dom);
		bool progress = false;
		for (struct xgpu_channel *ch = dom->channels; ch; ch = ch->next)
			if (!ch->dead)
				progress |= serve_channel(dom, ch);
		reap(dom);
		if (park(dom))
			return NULL;
		if (dom->marks_count)
			xgpu_exec_busy_harvest(dom, false);
		uint64_t now = xgpu_now_ns();
		if (progress) {
			last_work = now;
			continue;
		}
		bool waiting_for_slot;
		if (now - last_work < d->o.spin_ns) {
			if (!runnable(dom, &waiting_for_slot))
				xgpu_cpu_relax();
			continue;
		}
		/* About to sleep: ask every channel to kick us, then look once
		 * more so a request that raced with arming is not missed. */
		for (struct xgpu_channel *ch = dom->channels; ch; ch = ch->next)
			if (!ch->dead)
				xgpu_q_arm_data(&ch->v.req);
		if (runnable(dom, &waiting_for_slot))
			continue;
		/* A slot covers the device running the holder's work, not just
		 * the moment it was issued: the holder is idle once nothing is
		 * queued and nothing it issued is still on the device. */
		bool in_flight = dom->marks_count > 0;
		if (!waiting_for_slot && !in_flight)
			xgpu_sched_idle(dom->gpu->sched, &dom->sd);
		struct epoll_event evs[32];
		/* With work on the device, look again soon: as holder, to give the
		 * slot back when it drains; otherwise to harvest busy time. */
		int timeout = !in_flight ? 1000 : xgpu_sched_may_issue(&dom->sd) ? 1 : 10;
		int n = epoll_wait(dom->epfd, evs, 32, timeout);
		if (n < 0 && errno != EINTR) {
			xlog_err("domain %s: epoll_wait: %s", dom->name, strerror(errno));
			break;
		}
		if (n > 0)
			handle_events(dom, evs, n);
	}

	take_incoming(dom);
	for (struct xgpu_channel *ch = dom->channels; ch; ch = ch->next)
		if (!ch->dead) {
			ch->dead = true;
			ch->dead_reason = "daemon stopping";
		}
	reap(dom);
	xgpu_exec_release(dom);
	pthread_mutex_lock(&dom->incoming_lock);
	dom->thread_running = false;
	pthread_mutex_unlock(&dom->incoming_lock);
	return NULL;
}
