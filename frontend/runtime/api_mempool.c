/* SPDX-License-Identifier: Apache-2.0 */
/* api_mempool.c - the runtime's stream-ordered allocation: cudaMallocAsync,
 * cudaFreeAsync, cudaMallocFromPoolAsync and the cudaMemPool family, over the
 * one implementation in our libcuda.so.1 (frontend/driver/mempool.c), so a
 * pool, its allocations and its statistics are the same whichever API names
 * them. What is added here: the runtime's error recording and the shadow of
 * device allocations that cudaMemcpyDefault consults. */
#include "mempool.h"
#include "runtime.h"

#include <string.h>

static cudaError_t malloc_from(void **ptr, size_t size, void *pool, cudaStream_t stream)
{
	if (!ptr)
		return xgpu_rt_ret(cudaErrorInvalidValue);
	struct xgpu_client *c;
	cudaError_t e = xgpu_rt_client(&c);
	if (e)
		return e;
	uint64_t dptr = 0;
	e = xgpu_pool_alloc(c, pool, size, xgpu_rt_stream(stream), &dptr);
	if (e)
		return xgpu_rt_ret(e);
	xgpu_rt_devmem_add(dptr, size);
	*ptr = (void *)(uintptr_t)dptr;
	return cudaSuccess;
}

XGPU_EXPORT cudaError_t cudaMallocAsync(void **ptr, size_t size, cudaStream_t stream)
{
	return malloc_from(ptr, size, NULL, stream);
}

XGPU_EXPORT cudaError_t cudaMallocAsync_ptsz(void **ptr, size_t size, cudaStream_t stream)
{
	return malloc_from(ptr, size, NULL, stream);
}

XGPU_EXPORT cudaError_t cudaMallocFromPoolAsync(void **ptr, size_t size, cudaMemPool_t pool,
						cudaStream_t stream)
{
	if (!pool)
		return xgpu_rt_ret(cudaErrorInvalidValue);
	return malloc_from(ptr, size, pool, stream);
}

XGPU_EXPORT cudaError_t cudaMallocFromPoolAsync_ptsz(void **ptr, size_t size, cudaMemPool_t pool,
						     cudaStream_t stream)
{
	return cudaMallocFromPoolAsync(ptr, size, pool, stream);
}

XGPU_EXPORT cudaError_t cudaFreeAsync(void *ptr, cudaStream_t stream)
{
	struct xgpu_client *c;
	cudaError_t e = xgpu_rt_client(&c);
	if (e)
		return e;
	e = xgpu_pool_free(c, (uintptr_t)ptr, xgpu_rt_stream(stream));
	/* A graph's memory stays the graph's (xgpu_pool_graph_memory). */
	if (!e && !xgpu_pool_graph_memory((uintptr_t)ptr))
		xgpu_rt_devmem_del((uintptr_t)ptr);
	return xgpu_rt_ret(e);
}

XGPU_EXPORT cudaError_t cudaFreeAsync_ptsz(void *ptr, cudaStream_t stream)
{
	return cudaFreeAsync(ptr, stream);
}

XGPU_EXPORT cudaError_t cudaDeviceGetDefaultMemPool(cudaMemPool_t *pool, int device)
{
	struct xgpu_client *c;
	cudaError_t e = xgpu_rt_client(&c);
	if (e)
		return e;
	return xgpu_rt_ret(xgpu_pool_default(device, (void **)pool));
}

XGPU_EXPORT cudaError_t cudaDeviceGetMemPool(cudaMemPool_t *pool, int device)
{
	struct xgpu_client *c;
	cudaError_t e = xgpu_rt_client(&c);
	if (e)
		return e;
	return xgpu_rt_ret(xgpu_pool_current(device, (void **)pool));
}

XGPU_EXPORT cudaError_t cudaDeviceSetMemPool(int device, cudaMemPool_t pool)
{
	struct xgpu_client *c;
	cudaError_t e = xgpu_rt_client(&c);
	if (e)
		return e;
	return xgpu_rt_ret(xgpu_pool_set_current(device, pool));
}

XGPU_EXPORT cudaError_t cudaMemPoolCreate(cudaMemPool_t *pool, const struct cudaMemPoolProps *props)
{
	if (!pool || !props)
		return xgpu_rt_ret(cudaErrorInvalidValue);
	struct xgpu_client *c;
	cudaError_t e = xgpu_rt_client(&c);
	if (e)
		return e;
	static const unsigned char zero[sizeof props->reserved];
	struct xgpu_pool_props p = {
	    .alloc_type = props->allocType,
	    .handle_types = props->handleTypes,
	    .location_type = props->location.type,
	    .location_id = props->location.id,
	    .max_size = props->maxSize,
	    .has_reserved_bytes =
		memcmp(props->reserved, zero, sizeof zero) != 0 || props->win32SecurityAttributes != NULL,
	};
	return xgpu_rt_ret(xgpu_pool_create(&p, (void **)pool));
}

XGPU_EXPORT cudaError_t cudaMemPoolDestroy(cudaMemPool_t pool)
{
	struct xgpu_client *c;
	cudaError_t e = xgpu_rt_client(&c);
	if (e)
		return e;
	return xgpu_rt_ret(xgpu_pool_destroy(c, pool));
}

XGPU_EXPORT cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t pool, enum cudaMemPoolAttr attr, void *value)
{
	return xgpu_rt_ret(xgpu_pool_set_attr(pool, (int)attr, value));
}

XGPU_EXPORT cudaError_t cudaMemPoolGetAttribute(cudaMemPool_t pool, enum cudaMemPoolAttr attr, void *value)
{
	return xgpu_rt_ret(xgpu_pool_get_attr(pool, (int)attr, value));
}

XGPU_EXPORT cudaError_t cudaMemPoolTrimTo(cudaMemPool_t pool, size_t keep)
{
	struct xgpu_client *c;
	cudaError_t e = xgpu_rt_client(&c);
	if (e)
		return e;
	return xgpu_rt_ret(xgpu_pool_trim(c, pool, keep));
}
