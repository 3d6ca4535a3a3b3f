/* SPDX-License-Identifier: Apache-2.0 */
/* heap.c - the policies' binary min-heap of domains (see heap.h). */
#include "heap.h"

#include <stdlib.h>

static void place(struct xgpu_heap *h, uint32_t i, struct xgpu_sched_dom *sd)
{
	h->v[i] = sd;
	sd->heap_idx = i;
}

static void sift_up(struct xgpu_heap *h, uint32_t i)
{
	struct xgpu_sched_dom *sd = h->v[i];
	while (i > 0) {
		uint32_t parent = (i - 1) / 2;
		if (h->v[parent]->key <= sd->key)
			break;
		place(h, i, h->v[parent]);
		i = parent;
	}
	place(h, i, sd);
}

static void sift_down(struct xgpu_heap *h, uint32_t i)
{
	struct xgpu_sched_dom *sd = h->v[i];
	for (;;) {
		uint32_t child = 2 * i + 1;
		if (child >= h->n)
			break;
		if (child + 1 < h->n && h->v[child + 1]->key < h->v[child]->key)
			child++;
		if (sd->key <= h->v[child]->key)
			break;
		place(h, i, h->v[child]);
		i = child;
	}
	place(h, i, sd);
}

int xgpu_heap_push(struct xgpu_heap *h, struct xgpu_sched_dom *sd)
{
	if (h->n == h->cap) {
		uint32_t cap = h->cap ? 2 * h->cap : 16;
		struct xgpu_sched_dom **v = realloc(h->v, cap * sizeof *v);
		if (!v)
			return -1;
		h->v = v;
		h->cap = cap;
	}
	place(h, h->n++, sd);
	sift_up(h, h->n - 1);
	return 0;
}

void xgpu_heap_remove(struct xgpu_heap *h, struct xgpu_sched_dom *sd)
{
	if (!xgpu_heap_has(h, sd))
		return;
	uint32_t i = sd->heap_idx;
	sd->heap_idx = XGPU_HEAP_NONE;
	struct xgpu_sched_dom *last = h->v[--h->n];
	if (i == h->n)
		return;
	place(h, i, last);
	sift_up(h, i);
	sift_down(h, last->heap_idx);
}

struct xgpu_sched_dom *xgpu_heap_pop(struct xgpu_heap *h)
{
	struct xgpu_sched_dom *top = xgpu_heap_top(h);
	if (top)
		xgpu_heap_remove(h, top);
	return top;
}

void xgpu_heap_update(struct xgpu_heap *h, struct xgpu_sched_dom *sd)
{
	if (!xgpu_heap_has(h, sd))
		return;
	sift_up(h, sd->heap_idx);
	sift_down(h, sd->heap_idx);
}

void xgpu_heap_free(struct xgpu_heap *h)
{
	free(h->v);
	h->v = NULL;
	h->n = h->cap = 0;
}
