/* policy.h - the scheduling policy interface and registry.
 *
 * One scheduler per GPU asks its policy which ready domain holds the GPU slot
 * next and for how many ticks, in the manner of Xen's struct scheduler: the
 * core owns time, slots and gating; a policy owns only its ordering. All ops
 * run under the scheduler's lock.
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
	/* false: no gating at all; every domain issues work at once (None). */
	bool gates;
	int (*init)(struct xgpu_sched *s);
	void (*fini)(struct xgpu_sched *s);
	void (*domain_add)(struct xgpu_sched *s, struct xgpu_sched_dom *sd);
	void (*domain_remove)(struct xgpu_sched *s, struct xgpu_sched_dom *sd);
	/* sd has gated work and does not hold the slot. */
	void (*domain_ready)(struct xgpu_sched *s, struct xgpu_sched_dom *sd);
	/* The next holder among ready domains and its ticks, or NULL. */
	struct xgpu_sched_dom *(*pick_next)(struct xgpu_sched *s, unsigned *ticks);
};

/* The policy named name, or NULL. */
const struct xgpu_policy_ops *xgpu_policy_find(const char *name);
/* Comma-separated names of all policies, for --help and errors. */
const char *xgpu_policy_names(void);

extern const struct xgpu_policy_ops xgpu_policy_none;
extern const struct xgpu_policy_ops xgpu_policy_rr;

#endif
