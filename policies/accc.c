/* SPDX-License-Identifier: Apache-2.0 */
/* accc.c - accelerator credits (Pegasus AccC, Algorithm 1): ready domains are
 * served in rounds ordered by credit, each getting credit / min_credit ticks
 * once it has context on the GPU (1 tick before), so held time is
 * proportional to credit. The fraction of a tick is carried to the domain's
 * next slot, so credits that are not multiples of the smallest keep their
 * ratio too. O(log n) per decision. */
#include "rounds.h"

static struct xgpu_sched_dom *accc_pick(struct xgpu_sched *s, unsigned *ticks)
{
	struct xgpu_sched_dom *sd = xgpu_rounds_pop(xgpu_rounds_of(s));
	if (sd)
		*ticks = xgpu_sched_credit_ticks(s, sd);
	return sd;
}

const struct xgpu_policy_ops xgpu_policy_accc = {
    .name = "accc",
    .description = "accelerator credits: rounds in credit order, credit/min_credit ticks each",
    .gates = true,
    .pays_overrun = true,
    .init = xgpu_rounds_init,
    .fini = xgpu_rounds_fini,
    .domain_remove = xgpu_rounds_op_remove,
    .domain_ready = xgpu_rounds_op_ready,
    .pick_next = accc_pick,
    .params_changed = xgpu_rounds_op_params,
};
