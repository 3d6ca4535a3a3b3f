/* SPDX-License-Identifier: Apache-2.0 */
/* taskq.c - weighted fair sharing among a domain's tasks (see taskq.h). The
 * table is small and fixed: a domain has few tasks, and a linear scan of 16
 * entries costs less than any structure. */
#include "taskq.h"

#include <string.h>

#define DEFAULT_WEIGHT 256u
#define OVERFLOW (XGPU_TASKQ_MAX - 1)

struct xgpu_task *xgpu_taskq_get(struct xgpu_taskq *q, uint32_t id)
{
	struct xgpu_task *free_slot = NULL;
	for (unsigned i = 0; i < OVERFLOW; i++) {
		if (q->t[i].used && q->t[i].id == id)
			return &q->t[i];
		if (!q->t[i].used && !free_slot)
			free_slot = &q->t[i];
	}
	struct xgpu_task *t = free_slot ? free_slot : &q->t[OVERFLOW];
	if (!t->used) {
		*t = (struct xgpu_task){.id = free_slot ? id : UINT32_MAX,
					.weight = DEFAULT_WEIGHT,
					.vtime = q->vnow,
					.used = true};
	}
	return t;
}

void xgpu_taskq_set_weight(struct xgpu_taskq *q, uint32_t id, uint32_t weight)
{
	xgpu_taskq_get(q, id)->weight = weight ? weight : 1;
}

void xgpu_taskq_wake(struct xgpu_taskq *q, struct xgpu_task *t)
{
	if (t->vtime < q->vnow)
		t->vtime = q->vnow;
}

void xgpu_taskq_picked(struct xgpu_taskq *q, struct xgpu_task *t)
{
	if (t->vtime > q->vnow)
		q->vnow = t->vtime;
}

void xgpu_taskq_charge(struct xgpu_task *t, uint64_t ns)
{
	t->vtime += ns * DEFAULT_WEIGHT / (t->weight ? t->weight : 1);
}

void xgpu_taskq_put(struct xgpu_taskq *q, uint32_t id)
{
	for (unsigned i = 0; i < OVERFLOW; i++)
		if (q->t[i].used && q->t[i].id == id)
			memset(&q->t[i], 0, sizeof q->t[i]);
}
