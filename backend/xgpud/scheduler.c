/* SPDX-License-Identifier: Apache-2.0 */
/* scheduler.c - the per-GPU scheduler core (see scheduler.h): slots, ticks,
 * gating, accounting, the hypervisor snapshot, live policy and credit
 * changes, and the thread that drives it all in real time.
 *
 * Gating is cooperative but real: a poller runs no gated call while its
 * grant's may_issue flag is clear, and sleeps until wake() tells it the slot
 * is its. A poller in another process (the domain's executor) reaches the
 * core only through its report and an eventfd (xgpu_sched_relay,
 * xgpu_sched_watch); one in this process calls the poller-side functions.
 */
#include "scheduler.h"

#include "heap.h"
#include "log.h"
#include "util.h"

#include <errno.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The real-time driver's epoll events name a domain by domid, not by
 * pointer (it collects them without the lock, and the domain may leave
 * before it looks); this one is its own eventfd. */
#define WAKE_EVENT UINT64_MAX

/* Wakes the real-time driver's thread, if one runs (xgpu_sched_start) and
 * waits: under the lock, so that it either sees kicked before it sleeps or
 * is asleep and gets the write. A busy thread costs no system call. */
static void signal_thread(struct xgpu_sched *s)
{
	uint64_t one = 1;
	if (!s->sleeping)
		return;
	if (s->wake_fd >= 0 && write(s->wake_fd, &one, sizeof one) < 0 && errno != EAGAIN)
		xlog_err("%s: cannot wake the scheduler thread: %s", s->label, strerror(errno));
}

/* ---- the FIFO helper (rr) --------------------------------------------- */

void xgpu_rq_push(struct xgpu_sched *s, struct xgpu_sched_dom *sd)
{
	if (sd->queued)
		return;
	sd->queued = true;
	sd->next_ready = NULL;
	if (s->rq_tail)
		s->rq_tail->next_ready = sd;
	else
		s->rq_head = sd;
	s->rq_tail = sd;
}

struct xgpu_sched_dom *xgpu_rq_pop(struct xgpu_sched *s)
{
	struct xgpu_sched_dom *sd = s->rq_head;
	if (!sd)
		return NULL;
	s->rq_head = sd->next_ready;
	if (!s->rq_head)
		s->rq_tail = NULL;
	sd->queued = false;
	sd->next_ready = NULL;
	return sd;
}

/* O(n), but only when a domain leaves while waiting. */
void xgpu_rq_remove(struct xgpu_sched *s, struct xgpu_sched_dom *sd)
{
	struct xgpu_sched_dom **pp = &s->rq_head, *prev = NULL;
	while (*pp && *pp != sd) {
		prev = *pp;
		pp = &(*pp)->next_ready;
	}
	if (!*pp)
		return;
	*pp = sd->next_ready;
	if (s->rq_tail == sd)
		s->rq_tail = prev;
	sd->queued = false;
	sd->next_ready = NULL;
}

/* ---- domid lookup ------------------------------------------------------- */

static uint32_t hash_domid(uint32_t domid)
{
	return domid * 2654435761u;
}

static void hash_insert(struct xgpu_sched *s, struct xgpu_sched_dom *sd)
{
	uint32_t b = hash_domid(sd->domid) & s->hmask;
	sd->hnext = s->htab[b];
	s->htab[b] = sd;
}

static int hash_grow(struct xgpu_sched *s)
{
	uint32_t size = (s->hmask + 1) * 2;
	struct xgpu_sched_dom **t = calloc(size, sizeof *t);
	if (!t)
		return -1;
	struct xgpu_sched_dom **old = s->htab;
	uint32_t oldsize = s->hmask + 1;
	s->htab = t;
	s->hmask = size - 1;
	for (uint32_t i = 0; i < oldsize; i++)
		for (struct xgpu_sched_dom *sd = old[i], *next; sd; sd = next) {
			next = sd->hnext;
			hash_insert(s, sd);
		}
	free(old);
	return 0;
}

static void hash_remove(struct xgpu_sched *s, struct xgpu_sched_dom *sd)
{
	struct xgpu_sched_dom **pp = &s->htab[hash_domid(sd->domid) & s->hmask];
	while (*pp && *pp != sd)
		pp = &(*pp)->hnext;
	if (*pp)
		*pp = sd->hnext;
	sd->hnext = NULL;
}

struct xgpu_sched_dom *xgpu_sched_find(struct xgpu_sched *s, uint32_t domid)
{
	for (struct xgpu_sched_dom *sd = s->htab[hash_domid(domid) & s->hmask]; sd; sd = sd->hnext)
		if (sd->domid == domid)
			return sd;
	return NULL;
}

/* ---- helpers for policies ------------------------------------------------ */

static void recompute_min_credit(struct xgpu_sched *s)
{
	uint32_t m = XGPU_CREDIT_MAX;
	for (struct xgpu_sched_dom *sd = s->all; sd; sd = sd->next_all)
		if (sd->credit < m)
			m = sd->credit;
	s->min_credit = s->all ? m : XGPU_CREDIT_DEFAULT;
}

unsigned xgpu_sched_credit_ticks(struct xgpu_sched *s, struct xgpu_sched_dom *sd)
{
	return xgpu_sched_ratio_ticks(sd, sd->credit, s->min_credit);
}

unsigned xgpu_sched_ratio_ticks(struct xgpu_sched_dom *sd, uint32_t x, uint32_t xmin)
{
	if (!xgpu_slot_context(sd->report)) {
		sd->carry = 0;
		return 1;
	}
	uint64_t m = xmin ? xmin : 1;
	uint64_t q = x + sd->carry;
	uint64_t t = q / m;
	sd->carry = q % m;
	if (t < 1)
		t = 1;
	if (t > XGPU_MAX_SLOT_TICKS) {
		t = XGPU_MAX_SLOT_TICKS;
		sd->carry = 0;
	}
	return (unsigned)t;
}

struct xgpu_hyp_view xgpu_sched_hyp_view(struct xgpu_sched *s, uint32_t domid)
{
	struct xgpu_hyp_view v = {0};
	if (!s->snap_valid)
		return v;
	for (unsigned i = 0; i < s->snap->n; i++) {
		const struct xgpu_hyp_entry *e = &s->snap->e[i];
		if (e->domid != domid)
			continue;
		v.scheduled = true;
		v.running |= e->running;
		if (e->credit > 0)
			v.credit += e->credit;
	}
	return v;
}

uint32_t xgpu_sched_cpu_weight(struct xgpu_sched *s, struct xgpu_sched_dom *sd)
{
	uint32_t w, cap;
	if (s->hyp && s->hyp_ops->weight(s->hyp, sd->domid, &w, &cap) == 0 && w > 0)
		return w > XGPU_CREDIT_MAX ? XGPU_CREDIT_MAX : w;
	return sd->credit;
}

/* ---- slots ---------------------------------------------------------------- */

/* Two ticks cover a heavy domain's return from a CPU phase of up to a tick
 * after its slot (Pegasus's coupled loop comes back within one). */
#define HEAVY_WINDOW_TICKS 2

/* The policy's flags as a poller acts on them, into sd's grant. */
static void publish_policy(struct xgpu_sched *s, struct xgpu_sched_dom *sd)
{
	uint32_t f = (s->ops->gates ? XGPU_SLOT_GATES : 0) | (s->ops->task_fair ? XGPU_SLOT_TASK_FAIR : 0) |
		     (s->ops->preempt_at ? XGPU_SLOT_PREEMPTS : 0);
	atomic_store_explicit(&sd->grant->heavy_window_ns, HEAVY_WINDOW_TICKS * s->tick_ns,
			      memory_order_relaxed);
	atomic_store_explicit(&sd->grant->policy, f, memory_order_relaxed);
}

/* What the holder's poller reads to pace itself: whether anyone waits (its
 * grace before yielding) and when a heavier domain last wanted the slot
 * (its operations in flight). */
static void publish_holder_hints(struct xgpu_sched *s)
{
	struct xgpu_sched_dom *h = s->holder;
	if (!h)
		return;
	atomic_store_explicit(&h->grant->others_waiting, s->nready > 0, memory_order_relaxed);
	uint32_t heavy = atomic_load_explicit(&s->heavy_credit, memory_order_relaxed);
	uint64_t seen = atomic_load_explicit(&s->heavy_seen_ns, memory_order_relaxed);
	atomic_store_explicit(&h->grant->heavier_seen_ns, heavy > h->credit ? seen : 0, memory_order_relaxed);
}

/* sd wants or had the slot at now: the heaviest such domain lately. */
static void note_active(struct xgpu_sched *s, const struct xgpu_sched_dom *sd, uint64_t now)
{
	uint32_t heavy = atomic_load_explicit(&s->heavy_credit, memory_order_relaxed);
	uint64_t seen = atomic_load_explicit(&s->heavy_seen_ns, memory_order_relaxed);
	if (sd->credit >= heavy || now - seen > HEAVY_WINDOW_TICKS * s->tick_ns) {
		atomic_store_explicit(&s->heavy_credit, sd->credit, memory_order_relaxed);
		atomic_store_explicit(&s->heavy_seen_ns, now, memory_order_relaxed);
	}
	publish_holder_hints(s);
}

unsigned xgpu_sched_inflight_cap(struct xgpu_sched *s, const struct xgpu_sched_dom *sd, unsigned max,
				 uint64_t now)
{
	(void)s;
	return xgpu_slot_inflight_cap(sd->grant, max, now);
}

static void mark_ready(struct xgpu_sched *s, struct xgpu_sched_dom *sd, uint64_t now)
{
	if (sd->ready || s->holder == sd)
		return;
	note_active(s, sd, now);
	sd->ready = true;
	s->nready++;
	sd->ready_since_ns = now;
	sd->seq = ++s->seq;
	s->ops->domain_ready(s, sd);
	publish_holder_hints(s);
}

/* Device time sd's work took past the end of its slot. */
static void owe(struct xgpu_sched_dom *sd, uint64_t ns)
{
	if (!ns)
		return;
	atomic_fetch_add(&sd->overrun_ns, ns);
	sd->debt_ns = ns > XGPU_DEBT_MAX_NS - sd->debt_ns ? XGPU_DEBT_MAX_NS : sd->debt_ns + ns;
}

/* requeue: a holder whose slot ran out with work left goes straight back
 * in line; it need not wait for its poller's next call to say so. */
static void end_slot(struct xgpu_sched *s, uint64_t now, bool requeue)
{
	struct xgpu_sched_dom *sd = s->holder;
	atomic_store_explicit(&sd->grant->may_issue, 0, memory_order_release);
	uint64_t held = now > sd->slot_start_ns ? now - sd->slot_start_ns : 0;
	atomic_fetch_add(&sd->held_ns, held);
	/* A drain past the slot's length is device time the slot did not
	 * grant; work still on the device after it (the drain cap, a policy
	 * switch) is charged when it completes (xgpu_sched_drained). */
	if (held > sd->slot_len_ns)
		owe(sd, held - sd->slot_len_ns);
	sd->tail_pending = xgpu_slot_inflight(sd->report);
	sd->slot_end_ns = now;
	note_active(s, sd, now);
	sd->slot_expired = s->draining || !s->holder_idle;
	if (!sd->slot_expired && now < s->holder_until_ns)
		atomic_fetch_add(&sd->yields, 1);
	__atomic_store_n(&s->holder, NULL, __ATOMIC_RELAXED);
	s->holder_idle = false;
	s->draining = false;
	if (s->ops->slot_end)
		s->ops->slot_end(s, sd, held);
	if (requeue && sd->slot_expired)
		atomic_store(&sd->grant->wants_slot, 1);
	if (atomic_load(&sd->grant->wants_slot))
		mark_ready(s, sd, now);
}

/* A busy holder whose tick ran out keeps the slot for another tick when the
 * policy would pick it again anyway (would_repick): ending the slot would
 * drain its work only to grant it the slot again (make experiment's credit
 * case under wfq: the 1024-credit domain's batch spanned a tick boundary in
 * a fifth of its loops, each then losing a drain and a hand-over). The tick is accounted as a slot that ended
 * (slot_end, so wfq's floor on held time applies tick by tick). Returns whether the slot was renewed; if not,
 * the slot goes on to end from now. */
static bool renew_slot(struct xgpu_sched *s, uint64_t now)
{
	struct xgpu_sched_dom *sd = s->holder;
	uint64_t held = now > sd->slot_start_ns ? now - sd->slot_start_ns : 0;
	atomic_fetch_add(&sd->held_ns, held);
	if (s->ops->slot_end)
		s->ops->slot_end(s, sd, held);
	sd->slot_start_ns = now;
	sd->slot_busy_ns = 0;
	sd->slot_len_ns = s->tick_ns;
	if (!s->ops->would_repick(s, sd))
		return false;
	s->holder_until_ns = now + s->tick_ns;
	atomic_fetch_add(&sd->ticks, 1);
	note_active(s, sd, now);
	return true;
}

/* A slot covers the device running the holder's work, not just its issue:
 * kernels and copies it queued keep the GPU busy after it stops issuing, and
 * the next holder's work would only queue behind them. So a slot that runs
 * out with work on the device first drains it (no new issue, the next domain
 * not yet granted), and the drain counts as the holder's time. A holder that
 * never reports draining is cut off after XGPU_DRAIN_MAX_NS. */
static void check_slot(struct xgpu_sched *s, uint64_t now)
{
	struct xgpu_sched_dom *sd = s->holder;
	if (s->draining) {
		/* Cut off by the drain cap: its work outlasts any slot (a long
		 * kernel its poller may be waiting for inside the driver), so it
		 * goes back in line only when its poller asks again; requeued
		 * now, it would be granted while still unable to issue and drain
		 * for another second in every turn, keeping everyone else out. */
		bool capped = xgpu_slot_inflight(sd->report) && !s->holder_idle && now >= s->holder_until_ns;
		if (!xgpu_slot_inflight(sd->report) || s->holder_idle || capped)
			end_slot(s, now, !capped);
		return;
	}
	if (!s->holder_idle && now < s->holder_until_ns)
		return;
	if (!s->holder_idle && s->ops->would_repick && renew_slot(s, now))
		return;
	if (!s->holder_idle && xgpu_slot_inflight(sd->report)) {
		atomic_store_explicit(&sd->grant->may_issue, 0, memory_order_release);
		s->draining = true;
		s->holder_until_ns = now + XGPU_DRAIN_MAX_NS;
		return;
	}
	end_slot(s, now, true);
}

static void grant(struct xgpu_sched *s, struct xgpu_sched_dom *sd, unsigned ticks, uint64_t now)
{
	if (ticks < 1)
		ticks = 1;
	if (ticks > XGPU_MAX_SLOT_TICKS)
		ticks = XGPU_MAX_SLOT_TICKS;
	__atomic_store_n(&s->holder, sd, __ATOMIC_RELAXED);
	s->holder_idle = false;
	s->holder_until_ns = now + (uint64_t)ticks * s->tick_ns;
	sd->slot_len_ns = (uint64_t)ticks * s->tick_ns;
	sd->slot_start_ns = now;
	sd->slot_busy_ns = 0;
	if (sd->ready)
		s->nready--;
	sd->ready = false;
	uint64_t wait = now - sd->ready_since_ns;
	atomic_fetch_add(&sd->wait_ns, wait);
	if (wait > atomic_load(&sd->max_wait_ns))
		atomic_store(&sd->max_wait_ns, wait);
	atomic_fetch_add(&sd->ticks, ticks);
	atomic_store(&sd->grant->grants, atomic_fetch_add(&sd->grants, 1) + 1);
	atomic_store(&sd->grant->wants_slot, 0);
	publish_holder_hints(s);
	atomic_store_explicit(&sd->grant->may_issue, 1, memory_order_release);
	sd->wake(sd);
}

/* Under the lock: the sources are cheap (a local one reads a few /proc
 * files for the domains on this GPU) and this keeps them single-threaded. */
static void refresh_hyp(struct xgpu_sched *s, uint64_t now)
{
	if (s->hyp_ops->refresh(s->hyp, now, s->snap_spare) < 0)
		return;
	struct xgpu_hyp_snapshot *t = s->snap;
	s->snap = s->snap_spare;
	s->snap_spare = t;
	s->snap_valid = true;
}

/* Grants the slot to the policy's choice, except that under a policy that
 * pays_overrun a domain that owes at least the turn it would get is passed
 * over while another one waits: the turn's length comes off the debt and
 * the domain goes back in line.
 * Passes are bounded, so domains that are all in debt cannot keep the
 * scheduler here; one of them then gets the slot. */
static void grant_next(struct xgpu_sched *s, uint64_t now)
{
	unsigned passes = 2 * s->nready + 2;
	for (;;) {
		unsigned ticks = 1;
		struct xgpu_sched_dom *next = s->ops->pick_next(s, &ticks);
		if (!next)
			return;
		/* Less than a turn stays owed: drains of a kernel or two at the
		 * end of each slot add up to turns over time. */
		uint64_t turn = (uint64_t)(ticks ? ticks : 1) * s->tick_ns;
		if (!s->ops->pays_overrun || next->debt_ns < turn || s->nready < 2 || !passes--) {
			grant(s, next, ticks, now);
			return;
		}
		next->debt_ns -= turn;
		atomic_fetch_add(&next->turns_skipped, 1);
		uint64_t since = next->ready_since_ns;
		next->ready = false;
		s->nready--;
		mark_ready(s, next, now);
		next->ready_since_ns = since; /* its wait goes on */
	}
}
/* The policy's preemption (preempt_at): a slot cut short ends like one that
 * ran out, drained, so the preemptor waits for at most the holder's few
 * operations in flight, not for the rest of its turn. Returns when to look
 * again. */
static uint64_t check_preempt(struct xgpu_sched *s, uint64_t now)
{
	if (!s->holder || s->draining || !s->nready || !s->ops->preempt_at || now >= s->holder_until_ns)
		return UINT64_MAX;
	uint64_t at = s->ops->preempt_at(s, s->holder);
	if (at > now)
		return at;
	s->holder_until_ns = now;
	atomic_fetch_add(&s->holder->preempted, 1);
	check_slot(s, now);
	return UINT64_MAX;
}

static uint64_t run_locked(struct xgpu_sched *s, uint64_t now)
{
	if (now > s->now_ns)
		s->now_ns = now;
	if (s->holder)
		check_slot(s, now);
	bool periodic = s->ops->tick || (s->ops->uses_hyp && s->hyp);
	if (periodic && (s->holder || s->nready) && now >= s->next_tick_ns) {
		s->next_tick_ns = now + s->tick_ns;
		if (s->ops->uses_hyp && s->hyp)
			refresh_hyp(s, now);
		if (s->ops->tick)
			s->ops->tick(s);
	}
	uint64_t preempt = check_preempt(s, now);
	if (!s->holder && s->ops->gates)
		grant_next(s, now);
	uint64_t deadline = s->holder ? s->holder_until_ns : UINT64_MAX;
	if (preempt < deadline)
		deadline = preempt;
	/* Ticks only while there is contention to decide: an idle GPU's
	 * scheduler sleeps until a domain reports work. */
	if (periodic && (s->holder || s->nready) && s->next_tick_ns < deadline)
		deadline = s->next_tick_ns;
	return deadline;
}

uint64_t xgpu_sched_run(struct xgpu_sched *s, uint64_t now)
{
	pthread_mutex_lock(&s->lock);
	s->kicked = false;
	uint64_t deadline = run_locked(s, now);
	pthread_mutex_unlock(&s->lock);
	return deadline;
}

/* ---- set-up --------------------------------------------------------------- */

int xgpu_sched_init(struct xgpu_sched *s, const struct xgpu_policy_ops *ops, uint64_t tick_ns,
		    const struct xgpu_hyp_ops *hyp_ops, struct xgpu_hyp *hyp, const char *label)
{
	memset(s, 0, sizeof *s);
	s->epfd = s->wake_fd = -1;
	s->ops = ops;
	s->tick_ns = tick_ns ? tick_ns : 10000000u;
	s->label = label ? label : "GPU";
	s->hyp_ops = hyp ? hyp_ops : NULL;
	s->hyp = hyp;
	s->min_credit = XGPU_CREDIT_DEFAULT;
	s->hmask = 63;
	s->htab = calloc(s->hmask + 1, sizeof *s->htab);
	s->snap = calloc(1, sizeof *s->snap);
	s->snap_spare = calloc(1, sizeof *s->snap_spare);
	if (!s->htab || !s->snap || !s->snap_spare)
		goto fail;
	s->epfd = epoll_create1(EPOLL_CLOEXEC);
	s->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	struct epoll_event ev = {.events = EPOLLIN, .data.u64 = WAKE_EVENT};
	if (s->epfd < 0 || s->wake_fd < 0 || epoll_ctl(s->epfd, EPOLL_CTL_ADD, s->wake_fd, &ev) < 0)
		goto fail;
	pthread_mutex_init(&s->lock, NULL);
	if (ops->init && ops->init(s) < 0) {
		pthread_mutex_destroy(&s->lock);
		goto fail;
	}
	return 0;
fail:
	if (s->epfd >= 0)
		close(s->epfd);
	if (s->wake_fd >= 0)
		close(s->wake_fd);
	free(s->htab);
	free(s->snap);
	free(s->snap_spare);
	return -1;
}

void xgpu_sched_fini(struct xgpu_sched *s)
{
	if (s->ops->fini)
		s->ops->fini(s);
	close(s->epfd);
	close(s->wake_fd);
	pthread_mutex_destroy(&s->lock);
	free(s->htab);
	free(s->snap);
	free(s->snap_spare);
}

static void reset_policy_state(struct xgpu_sched_dom *sd)
{
	sd->heap_idx = XGPU_HEAP_NONE;
	sd->key = sd->round = sd->vtime = sd->carry = 0;
	sd->extra = 0;
	sd->window_held_ns = sd->window_start_ns = 0;
	sd->share_ewma = 0;
	sd->slot_busy_ns = 0;
	sd->queued = false;
	sd->next_ready = NULL;
}

void xgpu_sched_add(struct xgpu_sched *s, struct xgpu_sched_dom *sd, uint64_t now)
{
	if (!sd->grant)
		sd->grant = &sd->own_grant;
	if (!sd->report)
		sd->report = &sd->own_report;
	pthread_mutex_lock(&s->lock);
	if (!sd->attached)
		sd->notify_fd = -1;
	/* A poller's past idles and drains are moot now; a request the
	 * scheduler had not looked at (an adopted executor's) is not. */
	sd->seen_requests = atomic_load(&sd->grant->requests_seen);
	sd->seen_idles = atomic_load(&sd->report->idles);
	sd->seen_drains = atomic_load(&sd->report->drains);
	sd->seen_busy_ns = atomic_load(&sd->report->busy_ns);
	if (sd->credit < XGPU_CREDIT_MIN || sd->credit > XGPU_CREDIT_MAX)
		sd->credit = XGPU_CREDIT_DEFAULT;
	reset_policy_state(sd);
	sd->ready = false;
	sd->debt_ns = 0;
	sd->tail_pending = false;
	sd->slot_len_ns = 0;
	sd->attached = true;
	sd->prev_all = NULL;
	sd->next_all = s->all;
	if (s->all)
		s->all->prev_all = sd;
	s->all = sd;
	s->ndoms++;
	if (s->ndoms > s->hmask + 1)
		hash_grow(s); /* on failure the chains just grow longer */
	hash_insert(s, sd);
	recompute_min_credit(s);
	atomic_store(&sd->grant->may_issue, !s->ops->gates);
	publish_policy(s, sd);
	atomic_store(&sd->grant->wants_slot, 0);
	if (s->ops->domain_add)
		s->ops->domain_add(s, sd);
	if (s->hyp)
		s->hyp_ops->track(s->hyp, sd->domid);
	if (s->hyp && sd->npids)
		s->hyp_ops->set_pids(s->hyp, sd->domid, sd->pids, sd->npids);
	(void)now;
	pthread_mutex_unlock(&s->lock);
}

static void forget_ready(struct xgpu_sched *s, struct xgpu_sched_dom *sd)
{
	xgpu_rq_remove(s, sd);
	if (s->ops->domain_remove)
		s->ops->domain_remove(s, sd);
	if (sd->ready)
		s->nready--;
	sd->ready = false;
}

void xgpu_sched_remove(struct xgpu_sched *s, struct xgpu_sched_dom *sd, uint64_t now)
{
	pthread_mutex_lock(&s->lock);
	if (!sd->attached) {
		pthread_mutex_unlock(&s->lock);
		return;
	}
	atomic_store(&sd->grant->wants_slot, 0);
	if (s->holder == sd)
		end_slot(s, now, false);
	forget_ready(s, sd);
	if (sd->prev_all)
		sd->prev_all->next_all = sd->next_all;
	else
		s->all = sd->next_all;
	if (sd->next_all)
		sd->next_all->prev_all = sd->prev_all;
	sd->prev_all = sd->next_all = NULL;
	hash_remove(s, sd);
	s->ndoms--;
	sd->attached = false;
	recompute_min_credit(s);
	if (s->hyp)
		s->hyp_ops->untrack(s->hyp, sd->domid);
	s->kicked = true;
	signal_thread(s);
	pthread_mutex_unlock(&s->lock);
}

void xgpu_sched_set_pids(struct xgpu_sched *s, struct xgpu_sched_dom *sd, const pid_t *pids, unsigned n)
{
	if (n > XGPU_SCHED_PIDS_MAX)
		n = XGPU_SCHED_PIDS_MAX;
	pthread_mutex_lock(&s->lock);
	memcpy(sd->pids, pids, n * sizeof *pids);
	sd->npids = n;
	if (s->hyp && sd->attached)
		s->hyp_ops->set_pids(s->hyp, sd->domid, sd->pids, n);
	pthread_mutex_unlock(&s->lock);
}

void xgpu_sched_set_params(struct xgpu_sched *s, struct xgpu_sched_dom *sd, uint32_t credit, double sla)
{
	pthread_mutex_lock(&s->lock);
	if (credit >= XGPU_CREDIT_MIN && credit <= XGPU_CREDIT_MAX)
		sd->credit = credit;
	if (sla >= 0 && sla <= 1)
		sd->sla = sla;
	if (sd->attached) {
		recompute_min_credit(s);
		if (s->ops->params_changed)
			s->ops->params_changed(s, sd);
	}
	pthread_mutex_unlock(&s->lock);
}

void xgpu_sched_set_policy(struct xgpu_sched *s, const struct xgpu_policy_ops *ops, uint64_t now)
{
	pthread_mutex_lock(&s->lock);
	if (ops == s->ops) {
		pthread_mutex_unlock(&s->lock);
		return;
	}
	/* Stop gating under the old policy first: nobody issues while the
	 * domains move, and work that was waiting stays in its ring. */
	if (s->holder)
		end_slot(s, now, true);
	for (struct xgpu_sched_dom *sd = s->all; sd; sd = sd->next_all) {
		forget_ready(s, sd);
		atomic_store_explicit(&sd->grant->may_issue, 0, memory_order_release);
	}
	if (s->ops->fini)
		s->ops->fini(s);
	const struct xgpu_policy_ops *old = s->ops;
	__atomic_store_n(&s->ops, ops, __ATOMIC_RELEASE);
	s->priv = NULL;
	if (ops->init && ops->init(s) < 0) {
		xlog_err("%s: cannot start policy %s; keeping %s", s->label, ops->name, old->name);
		__atomic_store_n(&s->ops, old, __ATOMIC_RELEASE);
		if (old->init)
			old->init(s); /* it ran before, with the same memory at hand */
	}
	s->next_tick_ns = 0;
	for (struct xgpu_sched_dom *sd = s->all; sd; sd = sd->next_all) {
		reset_policy_state(sd);
		publish_policy(s, sd);
		if (s->ops->domain_add)
			s->ops->domain_add(s, sd);
		if (!s->ops->gates) {
			atomic_store(&sd->grant->wants_slot, 0);
			atomic_store_explicit(&sd->grant->may_issue, 1, memory_order_release);
			sd->wake(sd);
		} else if (atomic_load(&sd->grant->wants_slot)) {
			mark_ready(s, sd, now);
		} else {
			/* A domain that was issuing freely under `none` asks
			 * again with its next gated call. */
			sd->wake(sd);
		}
	}
	s->kicked = true;
	signal_thread(s);
	pthread_mutex_unlock(&s->lock);
}

/* ---- poller side ------------------------------------------------------------- */

static bool request_locked(struct xgpu_sched *s, struct xgpu_sched_dom *sd, uint64_t now)
{
	if (!s->ops->gates) {
		/* The policy changed to `none` after the caller looked. */
		atomic_store_explicit(&sd->grant->may_issue, 1, memory_order_release);
		return false;
	}
	if (s->holder == sd || !sd->attached)
		return false;
	if (now > s->now_ns)
		s->now_ns = now;
	atomic_store(&sd->grant->wants_slot, 1);
	mark_ready(s, sd, now);
	s->kicked = true;
	return true;
}

bool xgpu_sched_request(struct xgpu_sched *s, struct xgpu_sched_dom *sd, uint64_t now)
{
	if (atomic_load(&sd->grant->wants_slot))
		return false;
	pthread_mutex_lock(&s->lock);
	bool run = request_locked(s, sd, now);
	if (run)
		signal_thread(s);
	pthread_mutex_unlock(&s->lock);
	return run;
}

static bool drained_locked(struct xgpu_sched *s, struct xgpu_sched_dom *sd, uint64_t now)
{
	if (sd->tail_pending && s->holder != sd) {
		sd->tail_pending = false;
		owe(sd, now > sd->slot_end_ns ? now - sd->slot_end_ns : 0);
	}
	if (s->holder == sd && s->draining) {
		s->kicked = true;
		return true;
	}
	return false;
}

bool xgpu_sched_drained(struct xgpu_sched *s, struct xgpu_sched_dom *sd, uint64_t now)
{
	pthread_mutex_lock(&s->lock);
	bool run = drained_locked(s, sd, now);
	if (run)
		signal_thread(s);
	pthread_mutex_unlock(&s->lock);
	return run;
}

static bool idle_locked(struct xgpu_sched *s, struct xgpu_sched_dom *sd)
{
	if (s->holder == sd && !s->holder_idle) {
		s->holder_idle = true;
		s->kicked = true;
		return true;
	}
	return false;
}

bool xgpu_sched_idle(struct xgpu_sched *s, struct xgpu_sched_dom *sd)
{
	if (!xgpu_slot_may_issue(sd->grant))
		return false;
	pthread_mutex_lock(&s->lock);
	bool run = idle_locked(s, sd);
	if (run)
		signal_thread(s);
	pthread_mutex_unlock(&s->lock);
	return run;
}

static void charge_locked(struct xgpu_sched *s, struct xgpu_sched_dom *sd, uint64_t busy_ns)
{
	atomic_fetch_add(&sd->busy_ns, busy_ns);
	if (sd->attached && s->ops->charge)
		s->ops->charge(s, sd, busy_ns);
}

void xgpu_sched_charge(struct xgpu_sched *s, struct xgpu_sched_dom *sd, uint64_t busy_ns)
{
	if (!s->ops->charge) {
		atomic_fetch_add(&sd->busy_ns, busy_ns);
		return;
	}
	pthread_mutex_lock(&s->lock);
	charge_locked(s, sd, busy_ns);
	pthread_mutex_unlock(&s->lock);
}

/* Most busy time one look at a report may charge: a report claiming more
 * (it is the executor's word) cannot overflow anyone's accounts. */
#define RELAY_CHARGE_MAX_NS 10000000000ull

static void relay_locked(struct xgpu_sched *s, struct xgpu_sched_dom *sd, uint64_t now)
{
	const struct xgpu_slot_report *r = sd->report;
	uint64_t busy = atomic_load_explicit(&r->busy_ns, memory_order_acquire);
	if (busy != sd->seen_busy_ns) {
		uint64_t d = busy - sd->seen_busy_ns;
		sd->seen_busy_ns = busy;
		if (busy > sd->seen_busy_ns - d) /* counted forward, not wrapped back */
			charge_locked(s, sd, d < RELAY_CHARGE_MAX_NS ? d : RELAY_CHARGE_MAX_NS);
	}
	/* In the order a poller can cause them: it can be idle or drained only
	 * after a grant its earlier request earned, and asks anew after. */
	uint64_t n = atomic_load_explicit(&r->idles, memory_order_acquire);
	if (n != sd->seen_idles) {
		sd->seen_idles = n;
		if (xgpu_slot_may_issue(sd->grant))
			idle_locked(s, sd);
	}
	n = atomic_load_explicit(&r->drains, memory_order_acquire);
	if (n != sd->seen_drains) {
		sd->seen_drains = n;
		drained_locked(s, sd, now);
	}
	n = atomic_load_explicit(&r->requests, memory_order_acquire);
	if (n != sd->seen_requests) {
		sd->seen_requests = n;
		if (!atomic_load(&sd->grant->wants_slot))
			request_locked(s, sd, now);
		/* After the request took effect, so that a poller that sees
		 * it looked at also sees it in line (or granted). */
		atomic_store_explicit(&sd->grant->requests_seen, n, memory_order_release);
	}
}

void xgpu_sched_relay(struct xgpu_sched *s, struct xgpu_sched_dom *sd, uint64_t now)
{
	pthread_mutex_lock(&s->lock);
	if (sd->attached)
		relay_locked(s, sd, now);
	pthread_mutex_unlock(&s->lock);
}

/* ---- the real-time driver --------------------------------------------------- */

int xgpu_sched_watch(struct xgpu_sched *s, struct xgpu_sched_dom *sd, int fd)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.u64 = sd->domid};
	pthread_mutex_lock(&s->lock);
	sd->notify_fd = fd;
	int r = epoll_ctl(s->epfd, EPOLL_CTL_ADD, fd, &ev);
	if (r < 0)
		sd->notify_fd = -1;
	pthread_mutex_unlock(&s->lock);
	return r;
}

void xgpu_sched_unwatch(struct xgpu_sched *s, struct xgpu_sched_dom *sd)
{
	pthread_mutex_lock(&s->lock);
	if (sd->notify_fd >= 0)
		epoll_ctl(s->epfd, EPOLL_CTL_DEL, sd->notify_fd, NULL);
	sd->notify_fd = -1;
	pthread_mutex_unlock(&s->lock);
}

#define SCHED_EVENTS 64

static void *sched_main(void *arg)
{
	struct xgpu_sched *s = arg;
	char name[16];
	snprintf(name, sizeof name, "sched:%.9s", s->label);
	pthread_setname_np(pthread_self(), name);
	struct epoll_event ev[SCHED_EVENTS];
	pthread_mutex_lock(&s->lock);
	while (!s->stop) {
		s->kicked = false;
		uint64_t now = xgpu_now_ns();
		/* Busy time is reported without a wake-up (it comes with every
		 * completed kernel): pick it up at each run, with anything
		 * else a report says. */
		for (struct xgpu_sched_dom *sd = s->all; sd; sd = sd->next_all)
			if (sd->notify_fd >= 0)
				relay_locked(s, sd, now);
		uint64_t deadline = run_locked(s, now);
		if (s->kicked)
			continue;
		s->sleeping = true;
		pthread_mutex_unlock(&s->lock);
		/* Signals that come while the lock is free stay readable in
		 * the eventfds, so none is lost before the wait. */
		struct timespec ts, *tsp = NULL;
		if (deadline != UINT64_MAX) {
			uint64_t left = deadline > now ? deadline - now : 0;
			ts = (struct timespec){(time_t)(left / 1000000000u), (long)(left % 1000000000u)};
			tsp = &ts;
		}
		int n = epoll_pwait2(s->epfd, ev, SCHED_EVENTS, tsp, NULL);
		if (n < 0 && errno != EINTR)
			xlog_err("%s: epoll_wait: %s", s->label, strerror(errno));
		pthread_mutex_lock(&s->lock);
		s->sleeping = false;
		now = xgpu_now_ns();
		for (int i = 0; i < n; i++) {
			struct xgpu_sched_dom *sd = NULL;
			int fd = s->wake_fd;
			if (ev[i].data.u64 != WAKE_EVENT) {
				sd = xgpu_sched_find(s, (uint32_t)ev[i].data.u64);
				if (!sd || sd->notify_fd < 0)
					continue;
				fd = sd->notify_fd;
			}
			uint64_t v;
			if (read(fd, &v, sizeof v) < 0 && errno != EAGAIN)
				xlog_err("%s: reading a wake-up: %s", s->label, strerror(errno));
			if (sd)
				relay_locked(s, sd, now);
		}
	}
	if (s->holder)
		end_slot(s, xgpu_now_ns(), false);
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

int xgpu_sched_start(struct xgpu_sched *s)
{
	if (pthread_create(&s->thread, NULL, sched_main, s))
		return -1;
	s->thread_started = true;
	return 0;
}

void xgpu_sched_stop(struct xgpu_sched *s)
{
	pthread_mutex_lock(&s->lock);
	s->stop = true;
	signal_thread(s);
	pthread_mutex_unlock(&s->lock);
	if (s->thread_started)
		pthread_join(s->thread, NULL);
	s->thread_started = false;
}
