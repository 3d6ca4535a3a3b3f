/* SPDX-License-Identifier: Apache-2.0 */
/* poller.c - the domain's accelerator VCPU, the executor's main thread: it
 * serves all of the domain's channels, executing their calls in order while
 * the domain's GPU scheduler (in xgpud) lets it, spinning briefly when work
 * just stopped and otherwise sleeping in epoll on the channels' wait fds and
 * its wake fd.
 *
 * The slot is asked for, given back and reported through the pages shared
 * with xgpud (slot.h): a grant xgpud writes, a report this thread writes.
 * When the last channel closes the device context is released, so an idle
 * domain holds nothing on the GPU; xgpud ends an executor that stays idle.
 * A call that breaks the context (a kernel's fault) ends the executor once
 * its answer is out: on NVIDIA's driver the process can use the GPU no more,
 * and xgpud tells the domain's other processes why (execlink.h).
 */
#include "fastclock.h"
#include "log.h"
#include "util.h"
#include "poller.h"
#include "channel.h"
#include "dispatch.h"
#include "exec.h"
#include "inbox.h"
#include "link.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#define BATCH 16 /* requests served from one channel before looking at the next */
/* Under a gating policy, operations a domain may have on the device at once:
 * enough to hide launch latency, few enough that when its slot runs out the
 * GPU is free again within two operations (the drain, scheduler.c). */
#define GATED_INFLIGHT_MAX 2
#define YIELD_GRACE_NS 2000000ull
/* The grace while another domain waits: the GPU idles through it at every
 * hand-over, so it only covers a process answering a completion on a busy
 * host (with no grace, 1 ms-kernel domains beside a 500 ms one held 0.22 of
 * the GPU instead of 0.25 under accc in e2e/long_kernels; with 2 ms, the
 * coupled loop lost about 4 %). */
#define YIELD_GRACE_CONTENDED_NS 500000ull
#define INFLIGHT_LOOK_NS 100000ll /* how often a gated poller looks at work on the device */
#define SPIN_BURST 64 /* ring polls between passes of the loop while spinning */
#define HARVEST_NS 20000u /* while busy, how often completed device work is looked for */

/* Whether a gated request must wait for the domain's work on the device. */
static bool queue_full(struct xgpu_domain *dom)
{
	if (!dom->marks_count || !(xgpu_slot_flags(dom) & XGPU_SLOT_GATES))
		return false;
	unsigned cap = xgpu_slot_inflight_cap(dom->slot.grant, GATED_INFLIGHT_MAX, xgpu_now_ns());
	if (dom->marks_count < cap)
		return false;
	xgpu_exec_busy_harvest(dom, false);
	return dom->marks_count >= cap;
}

/* The task entry for a channel, with its configured weight. */
static struct xgpu_task *task_of(struct xgpu_domain *dom, uint32_t task)
{
	struct xgpu_task *t = xgpu_taskq_get(&dom->tasks, task);
	for (unsigned i = 0; i < dom->ntask_weights; i++)
		if (dom->task_weights[i].task == task)
			t->weight = dom->task_weights[i].weight;
	return t;
}

static void take_incoming(struct xgpu_domain *dom)
{
	struct xgpu_channel *list = xgpu_inbox_take(dom);
	while (list) {
		struct xgpu_channel *ch = list;
		list = ch->next;
		struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP, .data.ptr = ch};
		if (epoll_ctl(dom->epfd, EPOLL_CTL_ADD, ch->ops->wait_fd(ch), &ev) < 0) {
			xlog_err("domain %s: cannot watch channel %u: %s", dom->name, ch->id, strerror(errno));
			ch->dead = true;
			ch->dead_reason = "cannot be watched";
		}
		ch->task_entry = task_of(dom, ch->task);
		ch->next = dom->channels;
		dom->channels = ch;
		atomic_fetch_add(&dom->x->status->channels, 1);
	}
}

/* Channels xgpud asked to close (xgpu_link_*): the link thread only marks. */
static void take_closes(struct xgpu_domain *dom)
{
	for (struct xgpu_channel *ch = dom->channels; ch; ch = ch->next)
		if (!ch->dead && __atomic_load_n(&ch->close_asked, __ATOMIC_ACQUIRE)) {
			ch->dead = true;
			ch->dead_reason = "closed by xgpud";
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
		uint32_t task = ch->task, id = ch->id;
		const char *why = ch->dead_reason ? ch->dead_reason : "exit";
		xgpu_link_unlist_channel(dom->x, ch);
		xgpu_channel_teardown(ch);
		xgpu_link_closed(dom->x, id, why);
		atomic_fetch_sub(&dom->x->status->channels, 1);
		bool task_used = false;
		for (struct xgpu_channel *o = dom->channels; o && !task_used; o = o->next)
			task_used = o->task == task;
		if (!task_used)
			xgpu_taskq_put(&dom->tasks, task);
		any = true;
	}
	/* The last process gone: give the device context back, so an idle
	 * domain holds nothing on the GPU. */
	if (any && !dom->channels)
		xgpu_exec_release(dom);
}

/* Whether the request at the channel's index is there: 1, 0, or -1 when the
 * ring is corrupt. A request is there when its slot's tag says so (queue.h):
 * polling the tag alone while spinning costs one cache-line transfer per
 * request, where reading the producer's index as well cost a second one, in
 * series with the first, and made the client's publish wait for a line this
 * thread kept pulling. The index is read only when check is set (before the
 * poller sleeps, and when a kick woke it): a frontend always seals the slot
 * before it publishes the index, so an index ahead of ours over a slot
 * without its tag is a broken ring, as is an index out of range. */
static int req_ready(struct xgpu_channel *ch, bool check)
{
	if (xgpu_slot_ready(&ch->v.req))
		return 1;
	if (!check)
		return 0;
	int64_t avail = xgpu_q_avail(&ch->v.req);
	if (avail == 0)
		return 0;
	/* Published before we looked at the tag, or since: look again. */
	return xgpu_slot_ready(&ch->v.req) ? 1 : -1;
}

static void corrupt_ring(struct xgpu_domain *dom, struct xgpu_channel *ch)
{
	dlog_warn(dom, "domain %s: channel %u (pid %d) corrupted its request ring; closing it", dom->name,
		  ch->id, (int)ch->pid);
	ch->dead = true;
	ch->dead_reason = "corrupt request ring";
}

/* Serves up to BATCH requests of one channel; returns whether any ran. It
 * goes by the tags alone: the ring's index is validated where the poller
 * would sleep (runnable). */
static bool serve_batch(struct xgpu_domain *dom, struct xgpu_channel *ch)
{
	bool did = false;
	for (int k = 0; k < BATCH && !ch->dead && !dom->sticky_error; k++) {
		bool fresh = !ch->have_pending;
		if (fresh) {
			if (!req_ready(ch, false))
				return did;
			const uint8_t *shared = xgpu_q_unit(&ch->v.req, ch->v.req.idx);
			struct xgpu_req_hdr h;
			/* One copy out of shared memory, of the slot's first
			 * cache line and of the second only when the request
			 * reaches into it: the guest may rewrite the slot as
			 * soon as we read it. Copies of a fixed size are a few
			 * vector moves, where a copy of the request's length
			 * was a library call. The bytes past the request's end
			 * are the guest's and unused: dispatch refuses any
			 * length but the call's own. */
			_Static_assert(XGPU_SLOT_SIZE == 128 && sizeof h <= 64, "a slot is two lines");
			memcpy(ch->pending, shared, 64);
			memcpy(&h, ch->pending, sizeof h); /* the copy's length, not the slot's */
			if (h.len > 64 - sizeof h)
				memcpy(ch->pending + 64, shared + 64, 64);
			xgpu_q_release_deferred(&ch->v.req, 1); /* kick: xgpu_dispatch_flush */
			ch->have_pending = true;
			ch->pending_since_ns = xgpu_fast_ns();
		}
		bool exempt = xgpu_dispatch_exempt(ch->pending);
		if (!exempt && !xgpu_may_issue(dom)) {
			/* Pegasus's ContextEstablished: state on the GPU earns a
			 * domain its full credit of ticks. */
			xgpu_slot_set_context(dom->slot.report, dom->mem.n > 0 || dom->objs.live[OBJ_MODULE] > 0);
			xgpu_slot_ask(&dom->slot);
			return did;
		}
		if (!exempt && queue_full(dom))
			return did;
		ch->have_pending = false;
		/* A request run in the pass that took it did not wait: no clock
		 * read for it between taking the request and answering it (the
		 * answer is what the guest spins for). The counters come after
		 * the answer. */
		uint64_t waited = fresh ? 0 : xgpu_fast_ns() - ch->pending_since_ns;
		dom->serving = ch->task_entry;
		xgpu_dispatch(ch, ch->pending);
		xgpu_stat_add(&dom->stats->queue_wait_ns, waited);
		xgpu_stat_add(&dom->stats->queue_waits, 1);
		xgpu_stats_record_wait(dom->stats, waited);
		did = true;
	}
	return did;
}

/* The answers' kicks go before the next channel is served (its calls may
 * block). */
static bool serve_channel(struct xgpu_domain *dom, struct xgpu_channel *ch)
{
	bool did = serve_batch(dom, ch);
	xgpu_dispatch_flush(ch);
	return did;
}

static bool has_work(struct xgpu_channel *ch)
{
	return !ch->dead && (ch->have_pending || req_ready(ch, false));
}

/* wfq inside a domain: the channel whose task has used the least of its
 * weighted share goes next; a task that had no work banks nothing. */
static bool serve_fair(struct xgpu_domain *dom)
{
	struct xgpu_channel *best = NULL;
	for (struct xgpu_channel *ch = dom->channels; ch; ch = ch->next) {
		bool work = has_work(ch);
		if (work && !ch->had_work)
			xgpu_taskq_wake(&dom->tasks, ch->task_entry);
		ch->had_work = work;
		if (work && (!best || ch->task_entry->vtime < best->task_entry->vtime))
			best = ch;
	}
	if (!best)
		return false;
	xgpu_taskq_picked(&dom->tasks, best->task_entry);
	return serve_channel(dom, best);
}

/* Whether a channel has work we could run now. check: validate each ring's
 * index too (req_ready), as the poller does before it sleeps; a broken ring
 * marks its channel dead, to be reaped. */
static bool runnable(struct xgpu_domain *dom, bool *waiting_for_slot, bool check)
{
	bool any = false;
	*waiting_for_slot = false;
	for (struct xgpu_channel *ch = dom->channels; ch; ch = ch->next) {
		if (ch->dead)
			return true; /* to be reaped */
		if (ch->have_pending) {
			if (xgpu_dispatch_exempt(ch->pending) || (xgpu_may_issue(dom) && !queue_full(dom)))
				any = true;
			else
				*waiting_for_slot = true;
		} else {
			int ready = req_ready(ch, check);
			if (ready < 0)
				corrupt_ring(dom, ch);
			if (ready != 0)
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
			/* A wake-up may be a grant that dropped our place in
			 * line (a policy switch): ask again if still waiting. */
		} else if (!ch->dead && !ch->ops->service(ch)) {
			ch->dead = true;
			ch->dead_reason = "process exited";
		}
	}
}

int xgpu_poller_run(struct xgpu_domain *dom)
{
	struct xgpu_executor *x = dom->x;
	uint64_t last_work = xgpu_fast_ns(), last_look = last_work, last_harvest = last_work;

	while (!atomic_load(&x->stopping)) {
		xgpu_exec_take_ctl(dom);
		take_incoming(dom);
		take_closes(dom);
		bool progress = false;
		if ((xgpu_slot_flags(dom) & XGPU_SLOT_TASK_FAIR) && dom->channels && dom->channels->next) {
			progress = serve_fair(dom);
		} else {
			for (struct xgpu_channel *ch = dom->channels; ch && !dom->sticky_error; ch = ch->next)
				if (!ch->dead)
					progress |= serve_channel(dom, ch);
		}
		if (dom->sticky_error) {
			/* The faulting call has its answer; the process is
			 * done with the GPU (NVIDIA's driver makes it so).
			 * xgpud hears of the fault before any channel's end,
			 * so that it gives every process of the domain the
			 * fault's code. */
			xgpu_link_fault(x, dom->sticky_error, dom->fault_what);
			x->stop_reason = "device context failed";
			break;
		}
		reap(dom);
		uint64_t now = xgpu_fast_ns();
		/* Completions are looked for at most every HARVEST_NS while
		 * requests keep coming: each look is a driver call that may
		 * contend with the driver's own threads (the simulated GPU's
		 * worker takes the device lock for it), and with a long queue
		 * of launches looking on every pass cost a context switch every
		 * few launches. Idle or sleeping, the poller looks every pass. */
		if (dom->marks_count && (!progress || now - last_harvest >= HARVEST_NS ||
					 dom->marks_count >= dom->marks_cap / 2)) {
			xgpu_exec_busy_harvest(dom, false);
			last_harvest = now;
		}
		if (progress) {
			last_work = now;
			/* A channel that never lets its poller sleep still gets
			 * its wait fd looked at (a close xgpud asked for, the
			 * guest's end going away). */
			if (now - last_look >= 1000000u) {
				struct epoll_event evs[32];
				int n = epoll_wait(dom->epfd, evs, 32, 0);
				if (n > 0)
					handle_events(dom, evs, n);
				last_look = now;
			}
			continue;
		}
		bool waiting_for_slot;
		if (now - last_work < xgpu_spin_ns(dom)) {
			/* Spin on the rings alone for a while before the loop's
			 * bookkeeping (new channels, closes, the clock) comes
			 * round again: a request is seen within a pause of its
			 * arrival rather than within a whole pass of the loop,
			 * and the bookkeeping is late by a few microseconds at
			 * most. */
			for (int i = 0; i < SPIN_BURST && !runnable(dom, &waiting_for_slot, false); i++)
				xgpu_cpu_relax();
			continue;
		}
		/* About to sleep: ask every channel to kick us, then look once
		 * more so a request that raced with arming is not missed. */
		for (struct xgpu_channel *ch = dom->channels; ch; ch = ch->next)
			if (!ch->dead)
				xgpu_q_arm_data(&ch->v.req);
		if (runnable(dom, &waiting_for_slot, true))
			continue;
		/* A slot covers the device running the holder's work, not just
		 * the moment it was issued: the holder is idle once nothing is
		 * queued and nothing it issued is still on the device. */
		bool in_flight = dom->marks_count > 0;
		bool gates = xgpu_slot_flags(dom) & XGPU_SLOT_GATES;
		/* With work on the device, look again soon: under a gating
		 * policy its completion lets the next gated call issue, and ends
		 * a slot that is draining or idle, so each late look leaves the
		 * GPU idle (looking every 1 ms cost the gating policies about
		 * 8 % of the coupled loop's throughput, docs/results/
		 * pegasus-local.md). Otherwise the look only harvests
		 * measurements. */
		int64_t timeout_ns = !in_flight ? 1000000000 : gates ? INFLIGHT_LOOK_NS : 1000000;
		if (waiting_for_slot) {
			/* Still in line? A wake-up that was not our grant may
			 * have dropped us (a policy switch). */
			xgpu_slot_ask(&dom->slot);
		} else if (!in_flight) {
			/* A holder gives the slot back only after a short grace:
			 * its process is often just about to send the next call,
			 * and yielding then would cost it the rest of its turn.
			 * A shorter one while another domain waits. */
			uint64_t grace = atomic_load_explicit(&dom->slot.grant->others_waiting, memory_order_relaxed)
					     ? YIELD_GRACE_CONTENDED_NS
					     : YIELD_GRACE_NS;
			if (!xgpu_slot_may_issue(dom->slot.grant) || now - last_work >= grace)
				xgpu_slot_idle(&dom->slot);
			else
				timeout_ns = (int64_t)(grace - (now - last_work));
		}
		struct epoll_event evs[32];
		struct timespec ts = {.tv_sec = timeout_ns / 1000000000, .tv_nsec = timeout_ns % 1000000000};
		int n = epoll_pwait2(dom->epfd, evs, 32, &ts, NULL);
		if (n < 0 && errno != EINTR) {
			xlog_err("domain %s: epoll_wait: %s", dom->name, strerror(errno));
			break;
		}
		if (n > 0)
			handle_events(dom, evs, n);
	}

	take_incoming(dom);
	const char *why = x->stop_reason ? x->stop_reason : "executor stopping";
	for (struct xgpu_channel *ch = dom->channels; ch; ch = ch->next)
		if (!ch->dead) {
			ch->dead = true;
			ch->dead_reason = why;
		}
	reap(dom);
	xgpu_exec_release(dom);
	return dom->sticky_error ? 3 : 0;
}
