/* SPDX-License-Identifier: Apache-2.0 */
/* none.c - no gating: every domain's poller issues work as it arrives and the
 * driver interleaves it (Pegasus's baseline, first come first served). */
#include "policy.h"

#include <stddef.h>

static void none_ready(struct xgpu_sched *s, struct xgpu_sched_dom *sd)
{
}

static struct xgpu_sched_dom *none_pick(struct xgpu_sched *s, unsigned *ticks)
{
	return NULL;
}

const struct xgpu_policy_ops xgpu_policy_none = {
    .name = "none",
    .description = "no gating: all domains issue work at once; the driver interleaves (baseline)",
    .gates = false,
    .domain_ready = none_ready,
    .pick_next = none_pick,
};
