/* SPDX-License-Identifier: Apache-2.0 */
/* taskq.h - fair sharing of one domain's GPU slot among its tasks (the
 * channel's `task` hint), by weight, in virtual time: the inner level of wfq.
 * Owned by one thread (the domain's poller, or a simulation), so no locks. */
#ifndef XGPU_TASKQ_H
#define XGPU_TASKQ_H

#include <stdbool.h>
#include <stdint.h>

#define XGPU_TASKQ_MAX 16

struct xgpu_task {
	uint32_t id;
	uint32_t weight; /* 256 is 1 */
	uint64_t vtime;
	bool used;
};

struct xgpu_taskq {
	struct xgpu_task t[XGPU_TASKQ_MAX];
	uint64_t vnow; /* virtual time of the last task picked */
};

/* The task with that id, created with weight 256 if new; when all entries
 * are taken, the shared overflow entry (tasks beyond the limit share one
 * weight rather than go unserved). Never NULL. */
struct xgpu_task *xgpu_taskq_get(struct xgpu_taskq *q, uint32_t id);
void xgpu_taskq_set_weight(struct xgpu_taskq *q, uint32_t id, uint32_t weight);
/* The task starts wanting service again: it banks no credit from idleness. */
void xgpu_taskq_wake(struct xgpu_taskq *q, struct xgpu_task *t);
/* t was picked to run next. */
void xgpu_taskq_picked(struct xgpu_taskq *q, struct xgpu_task *t);
/* t used ns of service. */
void xgpu_taskq_charge(struct xgpu_task *t, uint64_t ns);
/* Drops a task nobody uses any more. */
void xgpu_taskq_put(struct xgpu_taskq *q, uint32_t id);

#endif
