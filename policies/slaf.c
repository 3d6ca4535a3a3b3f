/* SPDX-License-Identifier: Apache-2.0 */
/* slaf.c - SLA feedback (Pegasus SLAF): accc plus a feedback loop on each
 * domain's SLO, its expected share of the GPU (`sla`, e.g. 0.5 s per s).
 *
 * Each domain's recent held share is an exponentially weighted average over
 * SLAF_WINDOW_NS, kept lazily (updated when its slot ends, decayed when read),
 * so no periodic scan of all domains is needed: O(log n) per decision. When a
 * domain is picked while its share is below its SLO (plus a little headroom,
 * so the average lands above the SLO rather than on it), it gets one more
 * extra tick than last cycle; while it is above, one fewer. In overload the
 * extra ticks come out of everyone else's rounds, as in Pegasus. */
#include "rounds.h"

#include <math.h>

#define SLAF_WINDOW_NS 500000000.0
#define SLAF_HEADROOM 0.02

/* The share estimate decayed to now (no holding since its last update). */
static double share_now(const struct xgpu_sched_dom *sd, uint64_t now)
{
	if (now <= sd->window_start_ns)
		return sd->share_ewma;
	return sd->share_ewma * exp(-(double)(now - sd->window_start_ns) / SLAF_WINDOW_NS);
}

static struct xgpu_sched_dom *slaf_pick(struct xgpu_sched *s, unsigned *ticks)
{
	struct xgpu_sched_dom *sd = xgpu_rounds_pop(xgpu_rounds_of(s));
	if (!sd)
		return NULL;
	*ticks = xgpu_sched_credit_ticks(s, sd);
	if (sd->sla > 0 && xgpu_slot_context(sd->report)) {
		if (share_now(sd, s->now_ns) < sd->sla + SLAF_HEADROOM) {
			if (sd->extra < XGPU_MAX_SLOT_TICKS)
				sd->extra++;
		} else if (sd->extra > 0) {
			sd->extra--;
		}
	} else {
		sd->extra = 0;
	}
	*ticks += sd->extra;
	return sd;
}

/* The average over a held interval [now - held, now] preceded by idleness:
 * decay to its start, then move towards 1 for its length. */
static void slaf_slot_end(struct xgpu_sched *s, struct xgpu_sched_dom *sd, uint64_t held)
{
	uint64_t start = s->now_ns - held;
	double y = share_now(sd, start);
	y = 1.0 - (1.0 - y) * exp(-(double)held / SLAF_WINDOW_NS);
	sd->share_ewma = y;
	sd->window_start_ns = s->now_ns;
}

const struct xgpu_policy_ops xgpu_policy_slaf = {
    .name = "slaf",
    .description = "SLA feedback: accc, plus extra ticks per cycle for domains below their SLO share",
    .gates = true,
    .pays_overrun = true,
    .init = xgpu_rounds_init,
    .fini = xgpu_rounds_fini,
    .domain_remove = xgpu_rounds_op_remove,
    .domain_ready = xgpu_rounds_op_ready,
    .pick_next = slaf_pick,
    .slot_end = slaf_slot_end,
    .params_changed = xgpu_rounds_op_params,
};
