/* SPDX-License-Identifier: Apache-2.0 */
/* xc.c - Xen credits (Pegasus XC): accc with each domain's CPU weight from the
 * hypervisor schedule source in place of its accelerator credit, so a VM's
 * GPU share follows its CPU share. The weights are read when a domain joins
 * a round (a cached lookup in every source); the smallest weight, the unit
 * of a tick, comes from a sweep over all domains done a few per tick
 * (XC_SWEEP_PER_TICK), so no single decision pays O(n).
 * Without a source, or for a domain it does not know, the accelerator credit
 * stands in. O(log n) per decision. */
#include "rounds.h"

#include <stdlib.h>

#define XC_SWEEP_PER_TICK 16

struct xc {
	struct xgpu_rounds r; /* first: xgpu_rounds_of works on it */
	uint32_t min_weight;
	struct xgpu_sched_dom *cursor; /* the next domain the sweep looks at */
	uint32_t sweep_min;            /* smallest weight seen in this sweep */
};

/* A whole sweep at once: when the policy starts, or credits change. */
static void refresh_min(struct xgpu_sched *s, struct xc *x)
{
	uint32_t m = XGPU_CREDIT_MAX;
	for (struct xgpu_sched_dom *sd = s->all; sd; sd = sd->next_all) {
		uint32_t w = xgpu_sched_cpu_weight(s, sd);
		if (w < m)
			m = w;
	}
	x->min_weight = m ? m : 1;
	x->cursor = s->all;
	x->sweep_min = XGPU_CREDIT_MAX;
}

static int xc_init(struct xgpu_sched *s)
{
	struct xc *x = calloc(1, sizeof *x);
	if (!x)
		return -1;
	x->r.round = 1;
	s->priv = x;
	refresh_min(s, x);
	return 0;
}

static void xc_ready(struct xgpu_sched *s, struct xgpu_sched_dom *sd)
{
	xgpu_rounds_push(xgpu_rounds_of(s), sd, xgpu_sched_cpu_weight(s, sd));
}

static struct xgpu_sched_dom *xc_pick(struct xgpu_sched *s, unsigned *ticks)
{
	struct xc *x = s->priv;
	struct xgpu_sched_dom *sd = xgpu_rounds_pop(&x->r);
	if (sd) {
		uint32_t w = xgpu_sched_cpu_weight(s, sd);
		/* A weight below the cached minimum (it changed since): it is the new unit. */
		if (w < x->min_weight)
			x->min_weight = w;
		*ticks = xgpu_sched_ratio_ticks(sd, w, x->min_weight);
	}
	return sd;
}

static void xc_add(struct xgpu_sched *s, struct xgpu_sched_dom *sd)
{
	struct xc *x = s->priv;
	uint32_t w = xgpu_sched_cpu_weight(s, sd);
	if (w < x->min_weight)
		x->min_weight = w;
}

/* Weights change in the hypervisor without telling us: a few domains a
 * tick are looked at, and a finished sweep's minimum becomes the unit. */
static void xc_tick(struct xgpu_sched *s)
{
	struct xc *x = s->priv;
	for (unsigned i = 0; i < XC_SWEEP_PER_TICK; i++) {
		if (!x->cursor) {
			if (x->sweep_min != XGPU_CREDIT_MAX || !s->all)
				x->min_weight = x->sweep_min ? x->sweep_min : 1;
			x->sweep_min = XGPU_CREDIT_MAX;
			x->cursor = s->all;
			break;
		}
		uint32_t w = xgpu_sched_cpu_weight(s, x->cursor);
		if (w < x->sweep_min)
			x->sweep_min = w;
		x->cursor = x->cursor->next_all;
	}
}

static void xc_remove(struct xgpu_sched *s, struct xgpu_sched_dom *sd)
{
	struct xc *x = s->priv;
	if (x && x->cursor == sd)
		x->cursor = sd->next_all;
	xgpu_rounds_op_remove(s, sd);
}

static void xc_params(struct xgpu_sched *s, struct xgpu_sched_dom *sd)
{
	/* The credit stands in for domains the source does not know. */
	xgpu_rounds_rekey(xgpu_rounds_of(s), sd, xgpu_sched_cpu_weight(s, sd));
	refresh_min(s, s->priv);
}

const struct xgpu_policy_ops xgpu_policy_xc = {
    .name = "xc",
    .description = "Xen credits: as accc, with each domain's CPU weight from the hypervisor as its credit",
    .gates = true,
    .pays_overrun = true,
    .uses_hyp = true,
    .init = xc_init,
    .fini = xgpu_rounds_fini,
    .domain_add = xc_add,
    .domain_remove = xc_remove,
    .domain_ready = xc_ready,
    .pick_next = xc_pick,
    .params_changed = xc_params,
    .tick = xc_tick,
};
