/* SPDX-License-Identifier: Apache-2.0 */
/* slot.c - a poller's side of the GPU slot (slot.h): asking, yielding and
 * reporting drains through the shared report, each told once. */
#include "slot.h"

void xgpu_slot_ask(struct xgpu_slot_client *c)
{
	const struct xgpu_slot_grant *g = c->grant;
	if (xgpu_slot_may_issue(g) || atomic_load_explicit(&g->wants_slot, memory_order_acquire))
		return;
	uint64_t asked = atomic_load_explicit(&c->report->requests, memory_order_relaxed);
	if (atomic_load_explicit(&g->requests_seen, memory_order_acquire) != asked)
		return; /* told already; the scheduler has not looked yet */
	xgpu_slot_count(&c->report->requests, 1);
	c->notify(c->arg);
}

void xgpu_slot_idle(struct xgpu_slot_client *c)
{
	const struct xgpu_slot_grant *g = c->grant;
	if (!xgpu_slot_may_issue(g) || !(xgpu_slot_policy(g) & XGPU_SLOT_GATES))
		return;
	uint64_t slot = atomic_load_explicit(&g->grants, memory_order_acquire) + 1;
	if (c->idle_told == slot)
		return;
	c->idle_told = slot;
	xgpu_slot_count(&c->report->idles, 1);
	c->notify(c->arg);
}

void xgpu_slot_drained(struct xgpu_slot_client *c)
{
	xgpu_slot_count(&c->report->drains, 1);
	c->notify(c->arg);
}

void xgpu_slot_charge(struct xgpu_slot_client *c, uint64_t busy_ns)
{
	xgpu_slot_count(&c->report->busy_ns, busy_ns);
}
