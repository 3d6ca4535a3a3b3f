/* SPDX-License-Identifier: Apache-2.0 */
/* api_managed.c - the runtime's managed memory: cudaMallocManaged,
 * cudaMemPrefetchAsync and cudaMemAdvise (CUDA 13's forms, with a
 * cudaMemLocation). The memory and its coherence are frontend/channel/managed.c's,
 * shared with the driver API. */
#include "allocs.h"
#include "managed.h"
#include "runtime.h"

XGPU_EXPORT cudaError_t cudaMallocManaged(void **ptr, size_t size, unsigned int flags)
{
	if (!ptr)
		return xgpu_rt_ret(cudaErrorInvalidValue);
	*ptr = NULL;
	struct xgpu_client *c;
	cudaError_t e = xgpu_rt_client(&c);
	if (e)
		return e;
	if (size == 0)
		return xgpu_rt_ret(cudaErrorInvalidValue);
	uint64_t d;
	e = xgpu_managed_alloc(c, size, flags, &d);
	if (e)
		return xgpu_rt_ret(e);
	*ptr = (void *)(uintptr_t)d;
	xgpu_alloc_add(d, size, XGPU_ALLOC_MANAGED, flags);
	return cudaSuccess;
}

/* Where a location sends the data: the host (true), the device (false), or
 * nowhere valid (-1). */
static int location_is_host(struct cudaMemLocation loc)
{
	switch (loc.type) {
	case cudaMemLocationTypeDevice:
		if (loc.id == cudaCpuDeviceId)
			return 1;
		return loc.id == 0 ? 0 : -1;
	case cudaMemLocationTypeHost:
	case cudaMemLocationTypeHostNuma:
	case cudaMemLocationTypeHostNumaCurrent:
		return 1;
	default:
		return -1;
	}
}

/* Done at once rather than in stream order: stricter, never weaker, since
 * the copy to the device waits for nothing the stream had queued that could
 * change the host's copy. */
XGPU_EXPORT cudaError_t cudaMemPrefetchAsync(const void *ptr, size_t count, struct cudaMemLocation location,
					     unsigned int flags, cudaStream_t stream)
{
	(void)stream;
	struct xgpu_client *c;
	cudaError_t e = xgpu_rt_client(&c);
	if (e)
		return e;
	int to_host = location_is_host(location);
	if (to_host < 0 || flags != 0 || count == 0)
		return xgpu_rt_ret(cudaErrorInvalidValue);
	return xgpu_rt_ret(xgpu_managed_prefetch(c, (uintptr_t)ptr, count, to_host));
}

XGPU_EXPORT cudaError_t cudaMemPrefetchAsync_ptsz(const void *ptr, size_t count,
						  struct cudaMemLocation location, unsigned int flags,
						  cudaStream_t stream)
{
	return cudaMemPrefetchAsync(ptr, count, location, flags, stream);
}

/* Advice is checked and remembered; none changes what xgpu does: read-mostly
 * copies, preferred locations and access-by mappings are placement hints for
 * page migration, and here the data is always copied whole at launches and
 * synchronisation points (docs/design.md, "Managed memory"). */
XGPU_EXPORT cudaError_t cudaMemAdvise(const void *ptr, size_t count, enum cudaMemoryAdvise advice,
				      struct cudaMemLocation location)
{
	struct xgpu_client *c;
	cudaError_t e = xgpu_rt_client(&c);
	if (e)
		return e;
	bool needs_location =
	    advice == cudaMemAdviseSetPreferredLocation || advice == cudaMemAdviseSetAccessedBy;
	if (count == 0 || (needs_location && location_is_host(location) < 0))
		return xgpu_rt_ret(cudaErrorInvalidValue);
	return xgpu_rt_ret(xgpu_managed_advise((uintptr_t)ptr, count, (int)advice));
}

/* The attachment is checked and recorded; it changes nothing else, as the
 * guest's one host copy is kept coherent whatever it is (see xgpu_attach_mem
 * in frontend/driver/stream.c). */
XGPU_EXPORT cudaError_t cudaStreamAttachMemAsync(cudaStream_t stream, void *devPtr, size_t length,
						 unsigned int flags)
{
	struct xgpu_client *c;
	cudaError_t e = xgpu_rt_client(&c);
	if (e)
		return e;
	return xgpu_rt_ret(
	    (cudaError_t)xgpu_attach_mem(xgpu_rt_stream(stream), (uint64_t)(uintptr_t)devPtr, length, flags));
}

XGPU_EXPORT cudaError_t cudaStreamAttachMemAsync_ptsz(cudaStream_t stream, void *devPtr, size_t length,
						      unsigned int flags)
{
	return cudaStreamAttachMemAsync(stream, devPtr, length, flags);
}
