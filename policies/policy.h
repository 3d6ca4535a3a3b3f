/* SPDX-License-Identifier: Apache-2.0 */
/* policy.h - the scheduling policy interface and registry.
 *
 * One scheduler per GPU asks its policy which ready domain holds the GPU slot
 * next and for how many ticks, in the manner of Xen's struct scheduler: the
 * core (backend/xgpud/scheduler.c) owns time, slots, gating and accounting; a
 * policy owns only its ordering. All ops run under the scheduler's lock, and
 * every op but the rare ones (init, fini, domain_add/remove, params) must
 * cost no more than O(log n) in the number of domains.
 */
#ifndef XGPU_POLICY_H
#define XGPU_POLICY_H

#include <stdbool.h>
#include <stdint.h>

struct xgpu_sched;
struct xgpu_sched_dom;

struct xgpu_policy_ops {
	const char *name;
	const char *description;
	/* false: no gating at all; every domain issues work at once (none). */
	bool gates;
	/* Reads the hypervisor schedule (the core refreshes it every tick). */
	bool uses_hyp;
	/* Pollers share their domain's slot among its tasks by weight (wfq). */
	bool task_fair;
	/* Turn-based: a domain whose work ran past the end of its slot (a long
	 * kernel draining, or still running after the drain cap) owes that
	 * device time, and the core passes over its turns, each paying what
	 * the turn would have granted, until it is paid. Without this a
	 * domain's kernel length, not its credit, decides its share. Policies
	 * that charge measured busy time themselves (wfq) leave it off. */
	bool pays_overrun;
	int (*init)(struct xgpu_sched *s);
	void (*fini)(struct xgpu_sched *s);
	void (*domain_add)(struct xgpu_sched *s, struct xgpu_sched_dom *sd);
	void (*domain_remove)(struct xgpu_sched *s, struct xgpu_sched_dom *sd);
	/* sd has gated work and does not hold the slot. */
	void (*domain_ready)(struct xgpu_sched *s, struct xgpu_sched_dom *sd);
	/* The next holder among ready domains and its ticks, or NULL. The
	 * domain returned is no longer ready as far as the policy goes. */
	struct xgpu_sched_dom *(*pick_next)(struct xgpu_sched *s, unsigned *ticks);
	/* Optional: sd's slot ended after held_ns (before domain_ready, if it
	 * still has work); under a policy with would_repick, also at each tick
	 * after which the holder keeps the slot. */
	void (*slot_end)(struct xgpu_sched *s, struct xgpu_sched_dom *sd, uint64_t held_ns);
	/* Optional: measured device busy time of sd's work. */
	void (*charge)(struct xgpu_sched *s, struct xgpu_sched_dom *sd, uint64_t busy_ns);
	/* Optional: sd's credit or SLO changed. */
	void (*params_changed)(struct xgpu_sched *s, struct xgpu_sched_dom *sd);
	/* Optional: once per tick while any domain is attached (after the
	 * hypervisor schedule was refreshed). */
	void (*tick)(struct xgpu_sched *s);
	/* Optional: when a ready domain should cut the holder's slot short:
	 * a time <= s->now_ns for now, UINT64_MAX for not unless something
	 * changes, else when to ask again. The core then ends the slot as if
	 * it had run out: the holder's work on the device drains, and the
	 * next pick decides. While a heavier domain wants the slot, lighter
	 * holders keep one operation on the device, not two, so the drain it
	 * waits for is short (xgpu_sched_inflight_cap). */
	uint64_t (*preempt_at)(struct xgpu_sched *s, struct xgpu_sched_dom *holder);
	/* Optional: at the end of a busy holder's tick (after slot_end),
	 * whether pick_next would choose it again before every ready domain.
	 * The core then renews its slot for a tick instead of draining its
	 * work on the device only to grant it the slot again. */
	bool (*would_repick)(struct xgpu_sched *s, struct xgpu_sched_dom *holder);
};

/* The policy named name, or NULL. */
const struct xgpu_policy_ops *xgpu_policy_find(const char *name);
/* Comma-separated names of all policies, for --help and errors. */
const char *xgpu_policy_names(void);
/* Each policy in turn: i from 0 until NULL. */
const struct xgpu_policy_ops *xgpu_policy_at(unsigned i);

extern const struct xgpu_policy_ops xgpu_policy_none;
extern const struct xgpu_policy_ops xgpu_policy_rr;
extern const struct xgpu_policy_ops xgpu_policy_accc;
extern const struct xgpu_policy_ops xgpu_policy_xc;
extern const struct xgpu_policy_ops xgpu_policy_slaf;
extern const struct xgpu_policy_ops xgpu_policy_augc;
extern const struct xgpu_policy_ops xgpu_policy_cosched;
extern const struct xgpu_policy_ops xgpu_policy_wfq;

#endif
