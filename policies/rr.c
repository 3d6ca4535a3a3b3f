/* SPDX-License-Identifier: Apache-2.0 */
/* rr.c - round robin: ready domains take equal one-tick slots in turn.
 * O(1) per decision (a FIFO of ready domains). */
#include "policy.h"
#include "scheduler.h"

static void rr_ready(struct xgpu_sched *s, struct xgpu_sched_dom *sd)
{
	xgpu_rq_push(s, sd);
}

static struct xgpu_sched_dom *rr_pick(struct xgpu_sched *s, unsigned *ticks)
{
	*ticks = 1;
	return xgpu_rq_pop(s);
}

const struct xgpu_policy_ops xgpu_policy_rr = {
    .name = "rr",
    .description = "round robin: equal one-tick slots in turn among domains with work",
    .gates = true,
    .pays_overrun = true,
    .domain_ready = rr_ready,
    .pick_next = rr_pick,
};
