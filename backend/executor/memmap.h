/* SPDX-License-Identifier: Apache-2.0 */
/* memmap.h - a domain's device allocations, for checking every device
 * address a guest passes. */
#ifndef XGPU_EXEC_MEMMAP_H
#define XGPU_EXEC_MEMMAP_H

#include "proto.h"

#include <stdbool.h>
#include <stdint.h>

struct xgpu_channel;

struct xgpu_alloc {
	uint64_t base, size;
	struct xgpu_channel *owner;
	xgpu_handle_t module; /* a module global's module, a VMM mapping's
			       * reservation, 0 for cuMemAlloc memory */
};

struct xgpu_memmap {
	struct xgpu_alloc *v; /* sorted by base */
	uint32_t n, cap;
};

int xgpu_memmap_add(struct xgpu_memmap *m, uint64_t base, uint64_t size, struct xgpu_channel *owner,
		    xgpu_handle_t module);
/* Drops the module's globals from the map. */
void xgpu_memmap_drop_module(struct xgpu_memmap *m, xgpu_handle_t module);
/* The allocation owned by owner that contains all of [addr, addr + len), or
 * NULL (len 0 means just addr). */
const struct xgpu_alloc *xgpu_memmap_find(const struct xgpu_memmap *m, uint64_t addr, uint64_t len,
					  const struct xgpu_channel *owner);
/* Removes the allocation starting exactly at base owned by owner; returns its
 * size, or 0 if there is none. */
uint64_t xgpu_memmap_del(struct xgpu_memmap *m, uint64_t base, const struct xgpu_channel *owner);
/* Removes the entry starting exactly at base that module (a module, a VMM
 * reservation for its mappings, XGPU_MEMMAP_IPC for an IPC alias) put there
 * for owner (NULL: any); false if there is none. */
bool xgpu_memmap_del_tagged(struct xgpu_memmap *m, uint64_t base, xgpu_handle_t module,
			    const struct xgpu_channel *owner);
/* The tag of another process's allocation that this one opened with
 * cuIpcOpenMemHandle: the same range, never freed through this entry. (No
 * handle is 1.) */
#define XGPU_MEMMAP_IPC ((xgpu_handle_t)1)
void xgpu_memmap_free(struct xgpu_memmap *m);

#endif
