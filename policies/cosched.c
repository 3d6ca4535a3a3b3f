/* SPDX-License-Identifier: Apache-2.0 */
/* cosched.c - strict co-scheduling (Pegasus CoSched, Algorithm 2): the
 * hypervisor leads. Among ready domains with a VCPU running now, the highest
 * credit gets the GPU for one tick (re-decided every tick, as the CPU
 * schedule moves); when none of them runs, the highest credit overall does,
 * so the GPU is kept busy. Equal credits take turns. This trades fairness for
 * latency on purpose: a low-credit domain can wait while higher ones keep
 * their VCPUs busy.
 *
 * Cost per decision: O(p + log n) for p entries in the snapshot. */
#include "heap.h"

#include <stdlib.h>

static int cosched_init(struct xgpu_sched *s)
{
	s->priv = calloc(1, sizeof(struct xgpu_heap));
	return s->priv ? 0 : -1;
}

static void cosched_fini(struct xgpu_sched *s)
{
	if (s->priv)
		xgpu_heap_free(s->priv);
	free(s->priv);
	s->priv = NULL;
}

/* Higher credit first, then the order domains became ready. */
static uint64_t credit_key(const struct xgpu_sched_dom *sd)
{
	return ((uint64_t)(XGPU_CREDIT_MAX - sd->credit) << 48) | (sd->seq & ((UINT64_C(1) << 48) - 1));
}

static void cosched_ready(struct xgpu_sched *s, struct xgpu_sched_dom *sd)
{
	struct xgpu_heap *h = s->priv;
	if (xgpu_heap_has(h, sd))
		return;
	sd->key = credit_key(sd);
	xgpu_heap_push(h, sd);
}

static void cosched_remove(struct xgpu_sched *s, struct xgpu_sched_dom *sd)
{
	if (s->priv)
		xgpu_heap_remove(s->priv, sd);
}

static struct xgpu_sched_dom *cosched_pick(struct xgpu_sched *s, unsigned *ticks)
{
	struct xgpu_heap *h = s->priv;
	struct xgpu_sched_dom *best = NULL;
	if (s->snap_valid)
		for (unsigned i = 0; i < s->snap->n; i++) {
			const struct xgpu_hyp_entry *e = &s->snap->e[i];
			if (!e->running)
				continue;
			struct xgpu_sched_dom *sd = xgpu_sched_find(s, e->domid);
			if (sd && xgpu_heap_has(h, sd) && (!best || sd->key < best->key))
				best = sd;
		}
	if (best)
		xgpu_heap_remove(h, best);
	else
		best = xgpu_heap_pop(h);
	*ticks = 1;
	return best;
}

static void cosched_params(struct xgpu_sched *s, struct xgpu_sched_dom *sd)
{
	sd->key = credit_key(sd);
	xgpu_heap_update(s->priv, sd);
}

const struct xgpu_policy_ops xgpu_policy_cosched = {
    .name = "cosched",
    .description =
	"strict co-scheduling: the highest-credit ready domain whose VCPU runs now, else the highest overall",
    .gates = true,
    .uses_hyp = true,
    .init = cosched_init,
    .fini = cosched_fini,
    .domain_remove = cosched_remove,
    .domain_ready = cosched_ready,
    .pick_next = cosched_pick,
    .params_changed = cosched_params,
};
