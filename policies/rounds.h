/* SPDX-License-Identifier: Apache-2.0 */
/* rounds.h - scheduling rounds ordered by credit, the ready queue of Pegasus
 * Algorithm 1 (accc, xc, slaf, augc): within a round, domains are served in
 * order of decreasing credit (FIFO among equals), each once; a domain that
 * is served and becomes ready again waits for the next round. So no domain
 * waits longer than one round, whatever the credits, and every operation is
 * O(log n): two heaps, the current round and the next. */
#ifndef XGPU_ROUNDS_H
#define XGPU_ROUNDS_H

#include "heap.h"

struct xgpu_rounds {
	struct xgpu_heap cur, next;
	uint64_t round; /* the current round's number; domains record the last one they were served in */
	uint64_t pass;  /* augc: numbers its passes over the hypervisor snapshot */
};

/* Allocates a rounds structure as the policy's private state. */
int xgpu_rounds_init(struct xgpu_sched *s);
void xgpu_rounds_fini(struct xgpu_sched *s);
static inline struct xgpu_rounds *xgpu_rounds_of(struct xgpu_sched *s)
{
	return s->priv;
}
/* Queues sd with credit x in the round it belongs to. */
void xgpu_rounds_push(struct xgpu_rounds *r, struct xgpu_sched_dom *sd, uint32_t x);
/* Starts the next round if the current one is empty; false if nobody is queued. */
bool xgpu_rounds_prepare(struct xgpu_rounds *r);
/* Takes sd out of the current round, as served in it. */
void xgpu_rounds_take(struct xgpu_rounds *r, struct xgpu_sched_dom *sd);
/* The highest-credit domain of the round, taken as served; NULL if none. */
struct xgpu_sched_dom *xgpu_rounds_pop(struct xgpu_rounds *r);
void xgpu_rounds_remove(struct xgpu_rounds *r, struct xgpu_sched_dom *sd);
/* sd's credit is now x. */
void xgpu_rounds_rekey(struct xgpu_rounds *r, struct xgpu_sched_dom *sd, uint32_t x);

/* Shared ops of the credit-round policies; ready and params key a domain by
 * its accelerator credit. */
void xgpu_rounds_op_remove(struct xgpu_sched *s, struct xgpu_sched_dom *sd);
void xgpu_rounds_op_ready(struct xgpu_sched *s, struct xgpu_sched_dom *sd);
void xgpu_rounds_op_params(struct xgpu_sched *s, struct xgpu_sched_dom *sd);

#endif
