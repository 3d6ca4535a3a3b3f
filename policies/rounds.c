/* SPDX-License-Identifier: Apache-2.0 */
/* rounds.c - credit-ordered scheduling rounds (see rounds.h). */
#include "rounds.h"

#include "log.h"

#include <stdlib.h>

int xgpu_rounds_init(struct xgpu_sched *s)
{
	struct xgpu_rounds *r = calloc(1, sizeof *r);
	if (!r)
		return -1;
	r->round = 1;
	s->priv = r;
	return 0;
}

void xgpu_rounds_fini(struct xgpu_sched *s)
{
	struct xgpu_rounds *r = s->priv;
	if (!r)
		return;
	xgpu_heap_free(&r->cur);
	xgpu_heap_free(&r->next);
	free(r);
	s->priv = NULL;
}

/* Higher credit first, then the order domains became ready. */
static uint64_t round_key(const struct xgpu_sched_dom *sd, uint32_t x)
{
	if (x > XGPU_CREDIT_MAX)
		x = XGPU_CREDIT_MAX;
	return ((uint64_t)(XGPU_CREDIT_MAX - x) << 48) | (sd->seq & ((UINT64_C(1) << 48) - 1));
}

void xgpu_rounds_push(struct xgpu_rounds *r, struct xgpu_sched_dom *sd, uint32_t x)
{
	if (xgpu_heap_has(&r->cur, sd) || xgpu_heap_has(&r->next, sd))
		return;
	sd->key = round_key(sd, x);
	struct xgpu_heap *h = sd->round >= r->round ? &r->next : &r->cur;
	if (xgpu_heap_push(h, sd) < 0)
		xlog_err("scheduler: out of memory queueing domain %s; it waits for its next request",
			 sd->name);
}

bool xgpu_rounds_prepare(struct xgpu_rounds *r)
{
	if (!r->cur.n) {
		if (!r->next.n)
			return false;
		struct xgpu_heap t = r->cur;
		r->cur = r->next;
		r->next = t;
		r->round++;
	}
	return true;
}

void xgpu_rounds_take(struct xgpu_rounds *r, struct xgpu_sched_dom *sd)
{
	xgpu_heap_remove(&r->cur, sd);
	sd->round = r->round;
}

struct xgpu_sched_dom *xgpu_rounds_pop(struct xgpu_rounds *r)
{
	if (!xgpu_rounds_prepare(r))
		return NULL;
	struct xgpu_sched_dom *sd = xgpu_heap_top(&r->cur);
	xgpu_rounds_take(r, sd);
	return sd;
}

void xgpu_rounds_remove(struct xgpu_rounds *r, struct xgpu_sched_dom *sd)
{
	xgpu_heap_remove(&r->cur, sd);
	xgpu_heap_remove(&r->next, sd);
}

void xgpu_rounds_rekey(struct xgpu_rounds *r, struct xgpu_sched_dom *sd, uint32_t x)
{
	sd->key = round_key(sd, x);
	xgpu_heap_update(&r->cur, sd);
	xgpu_heap_update(&r->next, sd);
}

void xgpu_rounds_op_remove(struct xgpu_sched *s, struct xgpu_sched_dom *sd)
{
	if (s->priv)
		xgpu_rounds_remove(s->priv, sd);
}

void xgpu_rounds_op_ready(struct xgpu_sched *s, struct xgpu_sched_dom *sd)
{
	xgpu_rounds_push(s->priv, sd, sd->credit);
}

void xgpu_rounds_op_params(struct xgpu_sched *s, struct xgpu_sched_dom *sd)
{
	xgpu_rounds_rekey(s->priv, sd, sd->credit);
}
