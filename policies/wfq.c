/* SPDX-License-Identifier: Apache-2.0 */
/* wfq.c - weighted fair queueing in virtual time, charged with measured GPU
 * busy time (xgpu's own policy; after NEON/LoGA's fair queueing and Fleig's
 * weights for tasks inside VMs).
 *
 * Each domain has a virtual time that advances by its measured device busy
 * time divided by its weight (its credit; 256 is 1). The ready domain with
 * the smallest virtual time gets the next one-tick slot. Charging busy time
 * rather than slot time makes a domain pay for what it ran on the GPU, not
 * for how long it was allowed to; but a slot is exclusive, so a holder whose
 * work keeps the GPU mostly idle still pays for at least half of the time it
 * kept others out (WFQ_HELD_FLOOR), or a latency-bound domain would hold the
 * GPU nearly all the time at little cost.
 *
 * The system virtual time is that of the last domain picked; a domain that
 * becomes ready with a smaller one after being idle is moved up to it, so
 * idleness banks no credit and a returning domain cannot monopolize the GPU.
 * (One that merely lost the slot with work left keeps its place.)
 * Domains are ordered by finish tag, the virtual time at which a one-tick
 * slot of theirs would end (vtime + tick / weight), as in WFQ proper: at
 * equal virtual times the heavier domain goes first.
 * A ready domain preempts the holder (whose slot then ends after its
 * operations on the device drain) when its finish tag is before the
 * holder's and it is heavier, or a whole tick before it otherwise. Without
 * this, a heavy domain that alternates CPU work and short batches of
 * kernels (Pegasus's coupled loop) waits out another's turn every time it
 * comes back, and its weight buys it little over the others (make
 * experiment's credit case: 350 loops in 8 s against 181 under none; a tick
 * of margin for every domain: 392 against 227). The margin keeps domains of
 * equal weight from taking the GPU from each other at every call, and a
 * lighter one takes it back from a heavier one only a tick later.
 * Inside a domain, the poller shares the slot among its tasks the same way
 * (policies/taskq.c), with the domain's share split by task weight, so
 * weights multiply down the domain -> task tree.
 *
 * O(log n) per decision and per charge (one heap). */
#include "heap.h"

#include <stdlib.h>

#define WFQ_HELD_FLOOR_NUM 1
#define WFQ_HELD_FLOOR_DEN 2

struct wfq {
	struct xgpu_heap h;
	uint64_t vnow; /* system virtual time */
};

static int wfq_init(struct xgpu_sched *s)
{
	s->priv = calloc(1, sizeof(struct wfq));
	return s->priv ? 0 : -1;
}

static void wfq_fini(struct xgpu_sched *s)
{
	struct wfq *w = s->priv;
	if (w)
		xgpu_heap_free(&w->h);
	free(w);
	s->priv = NULL;
}

static uint64_t scaled(uint64_t ns, uint32_t weight)
{
	return ns * XGPU_CREDIT_DEFAULT / (weight ? weight : 1);
}

/* The virtual time at which a one-tick slot of sd would end: its heap key. */
static uint64_t finish_tag(const struct xgpu_sched *s, const struct xgpu_sched_dom *sd)
{
	return sd->vtime + scaled(s->tick_ns, sd->credit);
}

static void wfq_add(struct xgpu_sched *s, struct xgpu_sched_dom *sd)
{
	struct wfq *w = s->priv;
	sd->vtime = w->vnow;
}

/* Whether sd has had work ever since its last slot ran out: it asks again
 * within a tick of losing the slot (its poller only notices at its next
 * call) without having given the slot back idle. */
static bool still_backlogged(const struct xgpu_sched *s, const struct xgpu_sched_dom *sd)
{
	return sd->slot_expired && s->now_ns - sd->slot_end_ns <= s->tick_ns;
}

static void wfq_ready(struct xgpu_sched *s, struct xgpu_sched_dom *sd)
{
	struct wfq *w = s->priv;
	if (xgpu_heap_has(&w->h, sd))
		return;
	if (sd->vtime < w->vnow && !still_backlogged(s, sd))
		sd->vtime = w->vnow;
	sd->key = finish_tag(s, sd);
	xgpu_heap_push(&w->h, sd);
}

static void wfq_remove(struct xgpu_sched *s, struct xgpu_sched_dom *sd)
{
	struct wfq *w = s->priv;
	if (w)
		xgpu_heap_remove(&w->h, sd);
}

static struct xgpu_sched_dom *wfq_pick(struct xgpu_sched *s, unsigned *ticks)
{
	struct wfq *w = s->priv;
	struct xgpu_sched_dom *sd = xgpu_heap_pop(&w->h);
	if (sd && sd->vtime > w->vnow)
		w->vnow = sd->vtime;
	*ticks = 1;
	return sd;
}

static void advance(struct xgpu_sched *s, struct xgpu_sched_dom *sd, uint64_t ns)
{
	struct wfq *w = s->priv;
	sd->vtime += scaled(ns, sd->credit);
	if (xgpu_heap_has(&w->h, sd)) {
		sd->key = finish_tag(s, sd);
		xgpu_heap_update(&w->h, sd);
	}
}

static void wfq_charge(struct xgpu_sched *s, struct xgpu_sched_dom *sd, uint64_t busy_ns)
{
	if (s->holder == sd)
		sd->slot_busy_ns += busy_ns;
	advance(s, sd, busy_ns);
}

static void wfq_slot_end(struct xgpu_sched *s, struct xgpu_sched_dom *sd, uint64_t held)
{
	uint64_t floor = held * WFQ_HELD_FLOOR_NUM / WFQ_HELD_FLOOR_DEN;
	if (sd->slot_busy_ns < floor)
		advance(s, sd, floor - sd->slot_busy_ns);
}

/* The holder's virtual time advances at most 256 / weight ns per ns of its
 * slot, so the earliest it can pass the preemption mark is that far ahead;
 * charges arrive as its work completes, so look again then, at least every
 * 100 us. */
static uint64_t wfq_preempt_at(struct xgpu_sched *s, struct xgpu_sched_dom *holder)
{
	struct wfq *w = s->priv;
	struct xgpu_sched_dom *top = xgpu_heap_top(&w->h);
	if (!top)
		return UINT64_MAX;
	uint64_t mark = finish_tag(s, top) + (top->credit > holder->credit ? 0 : s->tick_ns);
	uint64_t held = finish_tag(s, holder);
	if (held > mark)
		return s->now_ns;
	uint64_t wall = (mark - held) * (holder->credit ? holder->credit : 1) / XGPU_CREDIT_DEFAULT;
	return s->now_ns + (wall > 100000 ? wall : 100000);
}

/* At a tick's end, the holder goes on if its finish tag comes before every
 * ready domain's (at a tie it hands over, so domains of equal weight still
 * take turns of a tick, as without renewal). Going on is a pick: the system
 * virtual time moves up to the holder's, or a domain that arrives while one
 * holder keeps the slot would start far behind it and have the GPU to itself
 * until it caught up. */
static bool wfq_would_repick(struct xgpu_sched *s, struct xgpu_sched_dom *holder)
{
	struct wfq *w = s->priv;
	struct xgpu_sched_dom *top = xgpu_heap_top(&w->h);
	if (top && finish_tag(s, holder) >= finish_tag(s, top))
		return false;
	if (holder->vtime > w->vnow)
		w->vnow = holder->vtime;
	return true;
}

const struct xgpu_policy_ops xgpu_policy_wfq = {
    .name = "wfq",
    .description = "weighted fair queueing on measured GPU busy time, weights split domain -> task",
    .gates = true,
    .task_fair = true,
    .init = wfq_init,
    .fini = wfq_fini,
    .domain_add = wfq_add,
    .domain_remove = wfq_remove,
    .domain_ready = wfq_ready,
    .pick_next = wfq_pick,
    .charge = wfq_charge,
    .slot_end = wfq_slot_end,
    .preempt_at = wfq_preempt_at,
    .would_repick = wfq_would_repick,
};
