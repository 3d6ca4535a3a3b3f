/* SPDX-License-Identifier: Apache-2.0 */
/* slot.h - the GPU slot as a domain's scheduler and its poller share it.
 *
 * The scheduler (xgpud) and the poller (the domain's executor, a process of
 * its own) each write one small structure and only read the other's: the
 * grant says whether the poller may issue gated work and what the policy
 * wants of it; the report says what the poller has on the device and counts
 * the events the scheduler must act on (asked for the slot, went idle,
 * drained). Between processes the two live in pages shared one way each
 * (execlink.h); in a test both point at memory inside the scheduler's own
 * struct, and the same code runs.
 *
 * The scheduler reads a report as hostile: flags as "nonzero", counters as
 * numbers to compare with what it saw last, never as sizes or indexes.
 */
#ifndef XGPU_SLOT_H
#define XGPU_SLOT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/* The GPU's policy, as far as a poller acts on it. */
enum {
	XGPU_SLOT_GATES = 1u << 0,     /* gated calls need the slot (every policy but none) */
	XGPU_SLOT_TASK_FAIR = 1u << 1, /* share the slot among the domain's tasks by weight (wfq) */
	XGPU_SLOT_PREEMPTS = 1u << 2,  /* a heavier domain may cut the holder's slot short */
};

/* Written by the scheduler only. */
struct xgpu_slot_grant {
	_Atomic uint32_t may_issue;      /* holds the slot, or the policy does not gate */
	_Atomic uint32_t wants_slot;     /* in line for the slot (the poller need not ask) */
	_Atomic uint32_t policy;         /* XGPU_SLOT_* of the GPU's policy */
	_Atomic uint32_t others_waiting; /* another domain waits for the slot */
	_Atomic uint64_t requests_seen;  /* the report's requests as last acted on */
	_Atomic uint64_t grants;         /* slots granted so far */
	/* While the holder: when a domain with more credit last wanted the
	 * slot (0: none lately), and for how long after that the holder keeps
	 * one operation on the device instead of its usual few. */
	_Atomic uint64_t heavier_seen_ns;
	_Atomic uint64_t heavy_window_ns;
};

/* Written by the poller only. */
struct xgpu_slot_report {
	_Atomic uint32_t context;  /* holds device state (Pegasus's ContextEstablished) */
	_Atomic uint32_t inflight; /* has work on the device that has not completed */
	/* Events, counted: the scheduler acts on each change it sees. */
	_Atomic uint64_t requests; /* has gated work and may not issue it */
	_Atomic uint64_t idles;    /* holds the slot with nothing queued or on the device */
	_Atomic uint64_t drains;   /* its work completed while it had no right to issue */
	/* Totals. */
	_Atomic uint64_t busy_ns;    /* measured device busy time of its work */
	_Atomic uint64_t ungated_ns; /* time its calls ran while the policy did not gate */
};

static inline bool xgpu_slot_may_issue(const struct xgpu_slot_grant *g)
{
	return atomic_load_explicit(&g->may_issue, memory_order_acquire) != 0;
}

static inline uint32_t xgpu_slot_policy(const struct xgpu_slot_grant *g)
{
	return atomic_load_explicit(&g->policy, memory_order_relaxed);
}

static inline bool xgpu_slot_inflight(const struct xgpu_slot_report *r)
{
	return atomic_load_explicit(&r->inflight, memory_order_acquire) != 0;
}

static inline bool xgpu_slot_context(const struct xgpu_slot_report *r)
{
	return atomic_load_explicit(&r->context, memory_order_relaxed) != 0;
}

static inline void xgpu_slot_set_inflight(struct xgpu_slot_report *r, bool v)
{
	atomic_store_explicit(&r->inflight, v, memory_order_release);
}

static inline void xgpu_slot_set_context(struct xgpu_slot_report *r, bool v)
{
	atomic_store_explicit(&r->context, v, memory_order_relaxed);
}

/* Only the poller writes its counters: a relaxed add without a locked
 * instruction. */
static inline void xgpu_slot_count(_Atomic uint64_t *counter, uint64_t v)
{
	atomic_store_explicit(counter, atomic_load_explicit(counter, memory_order_relaxed) + v,
			      memory_order_release);
}

/* The poller's side, in one place for the executor and the tests: it reads
 * the grant and counts into the report, then calls notify (the executor
 * writes its eventfd to xgpud; a test relays at once or later). Each call is
 * cheap when there is nothing to tell, so a poller may call them on every
 * pass. Only the poller's thread uses a client. */
struct xgpu_slot_client {
	const struct xgpu_slot_grant *grant;
	struct xgpu_slot_report *report;
	void (*notify)(void *arg);
	void *arg;
	uint64_t idle_told; /* grants when it last said it was idle, +1 (0: never) */
};

/* Has gated work and may not issue it: asks for the slot unless it is in
 * line or its last request has not been looked at yet. */
void xgpu_slot_ask(struct xgpu_slot_client *c);
/* Holds the slot (may issue) with nothing queued and nothing on the device:
 * says so once per slot. */
void xgpu_slot_idle(struct xgpu_slot_client *c);
/* Its work on the device completed while it held no right to issue. */
void xgpu_slot_drained(struct xgpu_slot_client *c);
/* Measured device busy time; the scheduler picks it up with the next event. */
void xgpu_slot_charge(struct xgpu_slot_client *c, uint64_t busy_ns);

/* How many operations the holder may have on the device at once: max, or 1
 * while a heavier domain wanted the slot within the window, so that its
 * preemption waits for at most one operation to drain. */
static inline unsigned xgpu_slot_inflight_cap(const struct xgpu_slot_grant *g, unsigned max, uint64_t now)
{
	if (max <= 1 || !(xgpu_slot_policy(g) & XGPU_SLOT_PREEMPTS))
		return max;
	uint64_t seen = atomic_load_explicit(&g->heavier_seen_ns, memory_order_relaxed);
	uint64_t window = atomic_load_explicit(&g->heavy_window_ns, memory_order_relaxed);
	return seen && now >= seen && now - seen <= window ? 1 : max;
}

#endif
