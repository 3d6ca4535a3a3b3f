/* SPDX-License-Identifier: Apache-2.0 */
/* queue.c - shared-memory queues with event thresholds (see queue.h). */
#include "queue.h"
#include "util.h"

#include <string.h>

void xgpu_qend_init(struct xgpu_qend *e, struct xgpu_queue *q, void *buf, uint32_t size, uint32_t unit,
		    uint32_t start_idx)
{
	e->q = q;
	e->buf = buf;
	e->size = size;
	e->unit = unit;
	e->idx = start_idx;
	e->peer = start_idx;
	e->tag_flip = 0;
	e->checked = start_idx;
}

int64_t xgpu_q_space_for(struct xgpu_qend *p, uint32_t want)
{
	uint32_t used = p->idx - p->peer;
	if (used <= p->size && p->size - used >= want)
		return (int64_t)(p->size - used);
	uint32_t cons = atomic_load_explicit(&p->q->cons, memory_order_acquire);
	used = p->idx - cons;
	if (used > p->size)
		return -1;
	p->peer = cons;
	return (int64_t)(p->size - used);
}

int64_t xgpu_q_avail(const struct xgpu_qend *c)
{
	uint32_t prod = atomic_load_explicit(&c->q->prod, memory_order_acquire);
	/* A slot consumer that goes by tags may take a packet before its
	 * producer has published the index that covers it, so the index may
	 * lag ours by up to a queue length; beyond that, either way, it is
	 * corrupt. */
	int64_t ahead = (int32_t)(prod - c->idx);
	if (ahead > (int64_t)c->size || ahead < -(int64_t)c->size)
		return -1;
	return ahead > 0 ? ahead : 0;
}

/* The peer wants a kick if its threshold lies in (old, new]. */
static bool crossed(uint32_t old_idx, uint32_t new_idx, uint32_t event)
{
	return (uint32_t)(new_idx - event) < (uint32_t)(new_idx - old_idx);
}

/* Moves our index on by n and publishes it. With `now`: the store and a
 * barrier in one (a sequentially consistent exchange, cheaper than a store
 * and an mfence), then the peer's threshold is read (threshold_crossed):
 * the barrier pairs with the one in the peer's arming (xgpu_q_arm_data,
 * xgpu_q_arm_space), so either we see its threshold or it sees our index.
 * Without, a plain release store, and the threshold waits for the caller's
 * later check. */
static void advance(struct xgpu_qend *e, uint32_t n, _Atomic uint32_t *index, bool now)
{
	e->idx += n;
	if (now)
		atomic_exchange_explicit(index, e->idx, memory_order_seq_cst);
	else
		atomic_store_explicit(index, e->idx, memory_order_release);
}

/* Whether the peer's threshold lies in what we published since the last
 * read of it (deferred publishes and releases count), after a barrier
 * unless the caller's exchange was one. */
static bool threshold_crossed(struct xgpu_qend *e, _Atomic uint32_t *event, bool fence)
{
	if (e->checked == e->idx)
		return false;
	if (fence)
		atomic_thread_fence(memory_order_seq_cst);
	uint32_t ev = atomic_load_explicit(event, memory_order_relaxed);
	bool kick = crossed(e->checked, e->idx, ev);
	e->checked = e->idx;
	return kick;
}

bool xgpu_q_publish(struct xgpu_qend *p, uint32_t n)
{
	advance(p, n, &p->q->prod, true);
	return threshold_crossed(p, &p->q->prod_event, false);
}

void xgpu_q_publish_deferred(struct xgpu_qend *p, uint32_t n)
{
	advance(p, n, &p->q->prod, false);
}

bool xgpu_q_kick_due(struct xgpu_qend *p)
{
	return threshold_crossed(p, &p->q->prod_event, true);
}

bool xgpu_q_release(struct xgpu_qend *c, uint32_t n)
{
	advance(c, n, &c->q->cons, true);
	return threshold_crossed(c, &c->q->cons_event, false);
}

void xgpu_q_release_deferred(struct xgpu_qend *c, uint32_t n)
{
	advance(c, n, &c->q->cons, false);
}

bool xgpu_q_release_kick_due(struct xgpu_qend *c)
{
	return threshold_crossed(c, &c->q->cons_event, true);
}

void xgpu_q_arm_data(struct xgpu_qend *c)
{
	xgpu_q_arm_data_for(c, 1);
}

void xgpu_q_arm_data_for(struct xgpu_qend *c, uint32_t need)
{
	if (need == 0)
		need = 1;
	if (need > c->size)
		need = c->size;
	atomic_store_explicit(&c->q->prod_event, c->idx + need, memory_order_relaxed);
	atomic_thread_fence(memory_order_seq_cst);
}

void xgpu_q_arm_space(struct xgpu_qend *p, uint32_t need)
{
	if (need > p->size)
		need = p->size;
	atomic_store_explicit(&p->q->cons_event, p->idx + need - p->size, memory_order_relaxed);
	atomic_thread_fence(memory_order_seq_cst);
}

bool xgpu_slot_ready(const struct xgpu_qend *c)
{
	const uint32_t *tag = xgpu_q_unit(c, c->idx);
	return __atomic_load_n(tag, __ATOMIC_ACQUIRE) == xgpu_qend_tag(c, c->idx);
}

void xgpu_slot_seal(struct xgpu_qend *p)
{
	uint32_t *tag = xgpu_q_unit(p, p->idx);
	__atomic_store_n(tag, xgpu_qend_tag(p, p->idx), __ATOMIC_RELEASE);
}

int64_t xgpu_stream_write(struct xgpu_qend *p, const void *src, size_t len, bool *kick)
{
	int64_t space = xgpu_q_space_for(p, len < p->size ? (uint32_t)len : p->size);
	*kick = false;
	if (space < 0)
		return -1;
	size_t n = len < (size_t)space ? len : (size_t)space;
	if (n == 0)
		return 0;
	uint32_t off = p->idx & (p->size - 1);
	size_t first = p->size - off;
	if (first > n)
		first = n;
	memcpy(p->buf + off, src, first);
	memcpy(p->buf, (const uint8_t *)src + first, n - first);
	*kick = xgpu_q_publish(p, (uint32_t)n);
	return (int64_t)n;
}

static void plain_copy(void *dst, const void *src, size_t n)
{
	memcpy(dst, src, n);
}

/* Both reads, by the copy they use (inlined into each). */
static inline int64_t stream_read(struct xgpu_qend *c, void *dst, size_t len, bool *kick,
				  void (*copy)(void *, const void *, size_t))
{
	int64_t avail = xgpu_q_avail(c);
	*kick = false;
	if (avail < 0)
		return -1;
	size_t n = len < (size_t)avail ? len : (size_t)avail;
	if (n == 0)
		return 0;
	uint32_t off = c->idx & (c->size - 1);
	size_t first = c->size - off;
	if (first > n)
		first = n;
	copy(dst, c->buf + off, first);
	copy((uint8_t *)dst + first, c->buf, n - first);
	*kick = xgpu_q_release(c, (uint32_t)n);
	return (int64_t)n;
}

int64_t xgpu_stream_read(struct xgpu_qend *c, void *dst, size_t len, bool *kick)
{
	return stream_read(c, dst, len, kick, plain_copy);
}

int64_t xgpu_stream_read_nt(struct xgpu_qend *c, void *dst, size_t len, bool *kick)
{
	return stream_read(c, dst, len, kick, xgpu_memcpy_nt);
}

int64_t xgpu_stream_peek(const struct xgpu_qend *c, const void **ptr, size_t max)
{
	int64_t avail = xgpu_q_avail(c);
	if (avail <= 0)
		return avail;
	uint32_t off = c->idx & (c->size - 1);
	size_t n = c->size - off;
	if (n > (size_t)avail)
		n = (size_t)avail;
	if (n > max)
		n = max;
	*ptr = c->buf + off;
	return (int64_t)n;
}
