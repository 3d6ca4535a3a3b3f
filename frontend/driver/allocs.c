/* SPDX-License-Identifier: Apache-2.0 */
/* allocs.c - the registry of allocations shared by both API layers
 * (allocs.h): a sorted array of non-overlapping ranges, searched by
 * bisection, since copies consult it on every cudaMemcpyDefault and cuMemcpy. */
#include "allocs.h"
#include "driver.h"
#include "util.h"

#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

static pthread_mutex_t allocs_lock = PTHREAD_MUTEX_INITIALIZER;
static struct xgpu_alloc *allocs;
static size_t nallocs, capallocs;
static unsigned long long last_buffer_id;

static ptrdiff_t floor_of(uint64_t addr)
{
	return xgpu_floor_search(allocs, nallocs, sizeof *allocs, offsetof(struct xgpu_alloc, base), addr);
}

void xgpu_alloc_add(uint64_t base, uint64_t size, int kind, unsigned flags)
{
	CUcontext ctx = xgpu_drv_current_ctx();
	pthread_mutex_lock(&allocs_lock);
	if (nallocs == capallocs) {
		size_t cap = capallocs ? capallocs * 2 : 64;
		struct xgpu_alloc *v = realloc(allocs, cap * sizeof *v);
		if (!v) {
			pthread_mutex_unlock(&allocs_lock);
			return;
		}
		allocs = v;
		capallocs = cap;
	}
	ptrdiff_t at = floor_of(base) + 1;
	memmove(&allocs[at + 1], &allocs[at], (nallocs - (size_t)at) * sizeof *allocs);
	allocs[at] = (struct xgpu_alloc){.base = base,
					 .size = size,
					 .kind = kind,
					 .flags = flags,
					 .buffer_id = ++last_buffer_id,
					 .ctx = ctx};
	nallocs++;
	pthread_mutex_unlock(&allocs_lock);
}

bool xgpu_alloc_del(uint64_t base, int kind)
{
	pthread_mutex_lock(&allocs_lock);
	ptrdiff_t i = floor_of(base);
	bool found = i >= 0 && allocs[i].base == base && allocs[i].kind == kind;
	if (found) {
		memmove(&allocs[i], &allocs[i + 1], (nallocs - (size_t)i - 1) * sizeof *allocs);
		nallocs--;
	}
	pthread_mutex_unlock(&allocs_lock);
	return found;
}

bool xgpu_alloc_set_flags(uint64_t base, int kind, unsigned flags)
{
	pthread_mutex_lock(&allocs_lock);
	ptrdiff_t i = floor_of(base);
	bool found = i >= 0 && allocs[i].base == base && allocs[i].kind == kind;
	if (found)
		allocs[i].flags = flags;
	pthread_mutex_unlock(&allocs_lock);
	return found;
}

bool xgpu_alloc_find(uint64_t addr, uint64_t len, struct xgpu_alloc *out)
{
	pthread_mutex_lock(&allocs_lock);
	ptrdiff_t i = floor_of(addr);
	bool found = false;
	if (i >= 0) {
		uint64_t off = addr - allocs[i].base;
		found = off < allocs[i].size && len <= allocs[i].size - off;
		if (found && out)
			*out = allocs[i];
	}
	pthread_mutex_unlock(&allocs_lock);
	return found;
}

void xgpu_alloc_clear_device(void)
{
	pthread_mutex_lock(&allocs_lock);
	size_t k = 0;
	for (size_t i = 0; i < nallocs; i++)
		if (allocs[i].kind == XGPU_ALLOC_HOST)
			allocs[k++] = allocs[i];
	nallocs = k;
	pthread_mutex_unlock(&allocs_lock);
}

/* A forked child has only the forking thread; the lock may have been held.
 * Its managed memory is plain memory of its own (managed.c), which its
 * channel's device never had. */
static void allocs_child(void)
{
	pthread_mutex_init(&allocs_lock, NULL);
	size_t k = 0;
	for (size_t i = 0; i < nallocs; i++)
		if (allocs[i].kind != XGPU_ALLOC_MANAGED)
			allocs[k++] = allocs[i];
	nallocs = k;
}

__attribute__((constructor)) static void allocs_setup(void)
{
	pthread_atfork(NULL, NULL, allocs_child);
}
