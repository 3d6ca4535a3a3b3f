/* SPDX-License-Identifier: Apache-2.0 */
/* mempool.h - stream-ordered allocation (memory pools), one implementation
 * for both API frontends: frontend/driver/mempool.c, linked into
 * libcuda.so.1 and exported to our libcudart.so.13 like the channel client.
 *
 * A pool handle (CUmemoryPool, cudaMemPool_t) is the address of a pool
 * here; handles the program passes are looked up, never dereferenced. Every
 * function returns a cudaError_t number (the wire's results); the driver
 * frontend turns it into a CUresult. Streams are wire handles. */
#ifndef XGPU_FE_MEMPOOL_H
#define XGPU_FE_MEMPOOL_H

#include "client.h"

#include <stdbool.h>
#include <stdint.h>

/* What cudaMemPoolProps / CUmemPoolProps say, field by field (the two
 * enums have the same numbers). */
struct xgpu_pool_props {
	int alloc_type;   /* must be pinned (1) */
	int handle_types; /* must be none (0): no IPC export */
	int location_type;
	int location_id;
	uint64_t max_size;      /* 0: the domain's limit bounds it */
	int has_reserved_bytes; /* the reserved fields are not all zero */
};

int xgpu_pool_default(int device, void **pool);
int xgpu_pool_current(int device, void **pool);
int xgpu_pool_set_current(int device, void *pool);
int xgpu_pool_create(const struct xgpu_pool_props *props, void **pool);
int xgpu_pool_destroy(struct xgpu_client *c, void *pool);
/* pool NULL: the device's current pool. */
int xgpu_pool_alloc(struct xgpu_client *c, void *pool, uint64_t size, xgpu_handle_t stream, uint64_t *dptr);
/* A pointer no pool handed out is freed once the stream's work before the
 * call is done (synchronously). */
int xgpu_pool_free(struct xgpu_client *c, uint64_t dptr, xgpu_handle_t stream);
/* cudaFree/cuMemFree of a pool's allocation: the pool stops counting it
 * (the caller frees it). True when it was one. */
bool xgpu_pool_forget(uint64_t dptr);
/* Whether dptr is a graph's memory (a memory allocation node's): a free by
 * the program then succeeds and leaves it to the graph, which CUDA would
 * allocate again at its next launch. */
bool xgpu_pool_graph_memory(uint64_t dptr);
/* attr: the CU_MEMPOOL_ATTR_* number (cudaMemPoolAttr has the same). */
int xgpu_pool_set_attr(void *pool, int attr, const void *value);
int xgpu_pool_get_attr(void *pool, int attr, void *value);
int xgpu_pool_trim(struct xgpu_client *c, void *pool, uint64_t keep);
/* A synchronisation point returned: the whole device's work (device), one
 * stream's, or an event's (stream XGPU_POOL_ANY_STREAM: cached blocks are
 * asked whether their frees completed); pools give back what is above their
 * release threshold. */
#define XGPU_POOL_ANY_STREAM ((xgpu_handle_t)-1)
void xgpu_pool_synced(struct xgpu_client *c, bool device, xgpu_handle_t stream);
/* An ordinary allocation failed for memory: gives back every cached block
 * (waiting for its free to complete); true if anything went back, so the
 * allocation is worth retrying. */
bool xgpu_pool_release_cached(struct xgpu_client *c);
/* The daemon released everything (cudaDeviceReset): forget all blocks. */
void xgpu_pool_reset(void);

#endif
