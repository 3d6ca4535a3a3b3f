/* SPDX-License-Identifier: Apache-2.0 */
/* heap.h - a binary min-heap of scheduled domains ordered by their `key`,
 * the O(log n) ready queue that the credit, co-scheduling and fair-queueing
 * policies share. A domain is in at most one heap at a time; its heap_idx
 * says where (UINT32_MAX: in none), so removal from the middle is O(log n). */
#ifndef XGPU_HEAP_H
#define XGPU_HEAP_H

#include "scheduler.h"

#include <stdbool.h>
#include <stdint.h>

#define XGPU_HEAP_NONE UINT32_MAX

struct xgpu_heap {
	struct xgpu_sched_dom **v;
	uint32_t n, cap;
};

/* 0, or -1 when out of memory (sd is then not queued). */
int xgpu_heap_push(struct xgpu_heap *h, struct xgpu_sched_dom *sd);
struct xgpu_sched_dom *xgpu_heap_pop(struct xgpu_heap *h);
static inline struct xgpu_sched_dom *xgpu_heap_top(const struct xgpu_heap *h)
{
	return h->n ? h->v[0] : NULL;
}
/* Whether sd is in h. */
static inline bool xgpu_heap_has(const struct xgpu_heap *h, const struct xgpu_sched_dom *sd)
{
	return sd->heap_idx < h->n && h->v[sd->heap_idx] == sd;
}
void xgpu_heap_remove(struct xgpu_heap *h, struct xgpu_sched_dom *sd);
/* sd's key changed while in h. */
void xgpu_heap_update(struct xgpu_heap *h, struct xgpu_sched_dom *sd);
void xgpu_heap_free(struct xgpu_heap *h);

#endif
