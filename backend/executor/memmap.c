/* SPDX-License-Identifier: Apache-2.0 */
/* memmap.c - a domain's device allocations, sorted by address, so every
 * device pointer a guest names is checked to lie inside one of its own
 * channel's allocations before the driver sees it. */
#include "util.h"
#include "memmap.h"

#include <stddef.h>

#include <stdlib.h>
#include <string.h>

/* Index of the last allocation with base <= addr, or -1. */
static int64_t floor_index(const struct xgpu_memmap *m, uint64_t addr)
{
	return xgpu_floor_search(m->v, m->n, sizeof *m->v, offsetof(struct xgpu_alloc, base), addr);
}

int xgpu_memmap_add(struct xgpu_memmap *m, uint64_t base, uint64_t size, struct xgpu_channel *owner,
		    xgpu_handle_t module)
{
	if (m->n == m->cap) {
		uint32_t cap = m->cap ? m->cap * 2 : 64;
		struct xgpu_alloc *v = realloc(m->v, cap * sizeof *v);
		if (!v)
			return -1;
		m->v = v;
		m->cap = cap;
	}
	int64_t at = floor_index(m, base) + 1;
	memmove(&m->v[at + 1], &m->v[at], (m->n - (uint64_t)at) * sizeof *m->v);
	m->v[at] = (struct xgpu_alloc){base, size, owner, module};
	m->n++;
	return 0;
}

/* Allocations do not overlap, but an allocation and the IPC aliases of it
 * other processes opened share one range: the entries at v[i]'s base run
 * back from i. The one of owner (and, unless any_tag, with tag), or -1. */
static int64_t in_run(const struct xgpu_memmap *m, int64_t i, const struct xgpu_channel *owner, bool any_tag,
		      xgpu_handle_t tag)
{
	for (int64_t j = i; j >= 0 && m->v[j].base == m->v[i].base; j--)
		if ((!owner || m->v[j].owner == owner) && (any_tag || m->v[j].module == tag))
			return j;
	return -1;
}

const struct xgpu_alloc *xgpu_memmap_find(const struct xgpu_memmap *m, uint64_t addr, uint64_t len,
					  const struct xgpu_channel *owner)
{
	int64_t i = floor_index(m, addr);
	if (i < 0 || (i = in_run(m, i, owner, true, 0)) < 0)
		return NULL;
	const struct xgpu_alloc *a = &m->v[i];
	uint64_t off = addr - a->base;
	if (off >= a->size || len > a->size - off)
		return NULL;
	return a;
}

uint64_t xgpu_memmap_del(struct xgpu_memmap *m, uint64_t base, const struct xgpu_channel *owner)
{
	int64_t i = floor_index(m, base);
	if (i < 0 || m->v[i].base != base || (i = in_run(m, i, owner, false, 0)) < 0)
		return 0;
	uint64_t size = m->v[i].size;
	memmove(&m->v[i], &m->v[i + 1], (m->n - (uint64_t)i - 1) * sizeof *m->v);
	m->n--;
	return size;
}

bool xgpu_memmap_del_tagged(struct xgpu_memmap *m, uint64_t base, xgpu_handle_t module,
			    const struct xgpu_channel *owner)
{
	int64_t i = floor_index(m, base);
	if (i < 0 || m->v[i].base != base || (i = in_run(m, i, owner, false, module)) < 0)
		return false;
	memmove(&m->v[i], &m->v[i + 1], (m->n - (uint64_t)i - 1) * sizeof *m->v);
	m->n--;
	return true;
}

void xgpu_memmap_drop_module(struct xgpu_memmap *m, xgpu_handle_t module)
{
	uint32_t kept = 0;
	for (uint32_t i = 0; i < m->n; i++)
		if (m->v[i].module != module)
			m->v[kept++] = m->v[i];
	m->n = kept;
}

void xgpu_memmap_free(struct xgpu_memmap *m)
{
	free(m->v);
	memset(m, 0, sizeof *m);
}
