/* SPDX-License-Identifier: Apache-2.0 */
/* augc.c - augmented credits (Pegasus AugC, Algorithm 2): accc's rounds, but
 * within a round the next domain is the one with the highest credit plus
 * augmented credit, the CPU credit its VCPUs have left if the hypervisor runs
 * them now or next (0 otherwise). So a domain tends to get the GPU while its
 * CPU side runs, yet each ready domain is still served once per round: the
 * boost reorders a round, it never skips anyone, and no wait exceeds one
 * round.
 *
 * Cost per decision: O(p + log n) for p entries in the hypervisor snapshot
 * (bounded by the host's PCPUs, not by the number of domains). */
#include "rounds.h"

static struct xgpu_sched_dom *augc_pick(struct xgpu_sched *s, unsigned *ticks)
{
	struct xgpu_rounds *r = xgpu_rounds_of(s);
	if (!xgpu_rounds_prepare(r))
		return NULL;
	struct xgpu_sched_dom *best = xgpu_heap_top(&r->cur);
	int64_t best_score = best->credit;
	if (s->snap_valid) {
		/* Sum each scheduled domain's remaining credit over its entries
		 * (one per VCPU), stamped so stale sums from an older pass do
		 * not count. */
		uint64_t stamp = ++r->pass;
		for (unsigned i = 0; i < s->snap->n; i++) {
			const struct xgpu_hyp_entry *e = &s->snap->e[i];
			struct xgpu_sched_dom *sd = xgpu_sched_find(s, e->domid);
			if (!sd || !xgpu_heap_has(&r->cur, sd))
				continue;
			if (sd->aug_stamp != stamp) {
				sd->aug_stamp = stamp;
				sd->aug = 0;
			}
			if (e->credit > 0)
				sd->aug += e->credit;
		}
		for (unsigned i = 0; i < s->snap->n; i++) {
			struct xgpu_sched_dom *sd = xgpu_sched_find(s, s->snap->e[i].domid);
			if (!sd || !xgpu_heap_has(&r->cur, sd) || sd->aug_stamp != stamp)
				continue;
			int64_t score = (int64_t)sd->credit + sd->aug;
			if (score > best_score || (score == best_score && sd->key < best->key)) {
				best = sd;
				best_score = score;
			}
		}
	}
	xgpu_rounds_take(r, best);
	*ticks = xgpu_sched_credit_ticks(s, best);
	return best;
}

const struct xgpu_policy_ops xgpu_policy_augc = {
    .name = "augc",
    .description = "augmented credits: accc rounds, ordered by credit plus the CPU credit of domains the "
		   "hypervisor runs next",
    .gates = true,
    .pays_overrun = true,
    .uses_hyp = true,
    .init = xgpu_rounds_init,
    .fini = xgpu_rounds_fini,
    .domain_remove = xgpu_rounds_op_remove,
    .domain_ready = xgpu_rounds_op_ready,
    .pick_next = augc_pick,
    .params_changed = xgpu_rounds_op_params,
};
