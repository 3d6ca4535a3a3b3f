/* scheduler.h - the per-GPU scheduler core: ticks, the GPU slot, and gating of
 * aVCPU pollers. Policies (policies/) decide only who is next. */
#ifndef XGPU_SCHEDULER_H
#define XGPU_SCHEDULER_H

#include "policy.h"
#include "xgpud.h"

struct xgpu_sched {
	struct xgpud *d;
	struct xgpu_gpu *gpu;
	const struct xgpu_policy_ops *ops;
	void *priv; /* the policy's */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	pthread_t thread;
	bool thread_started;
	bool stop;
	uint64_t tick_ns;
	struct xgpu_sched_dom *holder;
	uint64_t holder_until_ns;
	bool holder_idle;
	/* A FIFO of ready domains that simple policies use (rr). */
	struct xgpu_sched_dom *rq_head, *rq_tail;
};

int xgpu_sched_start(struct xgpud *d, struct xgpu_gpu *gpu, const struct xgpu_policy_ops *ops,
		     uint64_t tick_ns, struct xgpu_sched **out);
void xgpu_sched_stop(struct xgpu_sched *s);
void xgpu_sched_add(struct xgpu_sched *s, struct xgpu_sched_dom *sd);
void xgpu_sched_remove(struct xgpu_sched *s, struct xgpu_sched_dom *sd);

/* Poller: sd has gated work and may not issue it; it will be woken through
 * its domain's wake fd when granted the slot. */
void xgpu_sched_request(struct xgpu_sched *s, struct xgpu_sched_dom *sd);
/* Poller: sd has nothing left to do; if it holds the slot, the slot ends now
 * (work-conserving). */
void xgpu_sched_idle(struct xgpu_sched *s, struct xgpu_sched_dom *sd);

static inline bool xgpu_sched_may_issue(const struct xgpu_sched_dom *sd)
{
	return atomic_load_explicit(&sd->may_issue, memory_order_acquire);
}

/* Ready-queue helpers for policies (scheduler lock held). */
void xgpu_rq_push(struct xgpu_sched *s, struct xgpu_sched_dom *sd);
struct xgpu_sched_dom *xgpu_rq_pop(struct xgpu_sched *s);
void xgpu_rq_remove(struct xgpu_sched *s, struct xgpu_sched_dom *sd);

#endif
