/* SPDX-License-Identifier: Apache-2.0 */
/* api_pitch.c - pitched memory of the runtime API: cudaMallocPitch and
 * cudaMalloc3D, the 2D and 3D copies of linear memory (every kind, sync and
 * async) and the 2D/3D memsets, marshalled by the code the driver layer
 * shares (copy2d.h). A 3D copy with a CUDA array side goes to the driver
 * layer's arrays (array.c). */
#include "allocs.h"
#include "copy2d.h"
#include "runtime.h"

#include <cuda.h>

/* The pitch CUDA's allocator would choose: the width rounded up to the
 * device's texture pitch alignment. */
static cudaError_t pitch_for(size_t width, size_t *pitch)
{
	const struct xgpu_device_info *di;
	cudaError_t e = xgpu_rt_devinfo(&di);
	if (e)
		return e;
	uint64_t align = CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT < di->nattrs
			     ? (uint64_t)di->attrs[CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT]
			     : 0;
	if (!align || (align & (align - 1)))
		align = 512; /* what NVIDIA's GPUs ask, should the daemon not say */
	if (width > SIZE_MAX - (align - 1))
		return cudaErrorMemoryAllocation;
	*pitch = (width + align - 1) & ~(size_t)(align - 1);
	return cudaSuccess;
}

static cudaError_t malloc_pitched(void **ptr, size_t *pitch, size_t width, size_t rows)
{
	size_t p = 0, bytes;
	cudaError_t e = pitch_for(width, &p);
	if (e)
		return xgpu_rt_ret(e);
	if (__builtin_mul_overflow(p, rows, &bytes))
		return xgpu_rt_ret(cudaErrorMemoryAllocation);
	e = cudaMalloc(ptr, bytes);
	if (!e)
		*pitch = p;
	return e;
}

XGPU_EXPORT cudaError_t cudaMallocPitch(void **ptr, size_t *pitch, size_t width, size_t height)
{
	if (!ptr || !pitch)
		return xgpu_rt_ret(cudaErrorInvalidValue);
	return malloc_pitched(ptr, pitch, width, height);
}

XGPU_EXPORT cudaError_t cudaMalloc3D(struct cudaPitchedPtr *pitched, struct cudaExtent extent)
{
	size_t rows;
	if (!pitched)
		return xgpu_rt_ret(cudaErrorInvalidValue);
	if (__builtin_mul_overflow(extent.height, extent.depth, &rows))
		return xgpu_rt_ret(cudaErrorMemoryAllocation);
	void *p = NULL;
	size_t pitch = 0;
	cudaError_t e = malloc_pitched(&p, &pitch, extent.width, rows);
	if (!e)
		*pitched = (struct cudaPitchedPtr){
		    .ptr = p, .pitch = pitch, .xsize = extent.width, .ysize = extent.height};
	return e;
}

/* cudaMemcpyDefault: the direction from the registry both layers share.
 * Managed memory is copied as device memory whatever the kind says, as
 * cudaMemcpy does (api_memory.c). */
static int copy_kind(const void *dst, const void *src, enum cudaMemcpyKind kind)
{
	if (kind >= cudaMemcpyHostToHost && kind <= cudaMemcpyDeviceToDevice &&
	    (xgpu_alloc_is_managed((uintptr_t)dst) || xgpu_alloc_is_managed((uintptr_t)src)))
		kind = cudaMemcpyDefault;
	if (kind == cudaMemcpyDefault) {
		bool d = xgpu_alloc_on_device((uintptr_t)dst);
		bool s = xgpu_alloc_on_device((uintptr_t)src);
		return d ? (s ? XGPU_COPY_DTOD : XGPU_COPY_HTOD) : (s ? XGPU_COPY_DTOH : XGPU_COPY_HTOH);
	}
	switch (kind) {
	case cudaMemcpyHostToHost:
		return XGPU_COPY_HTOH;
	case cudaMemcpyHostToDevice:
		return XGPU_COPY_HTOD;
	case cudaMemcpyDeviceToHost:
		return XGPU_COPY_DTOH;
	case cudaMemcpyDeviceToDevice:
		return XGPU_COPY_DTOD;
	default:
		return -1;
	}
}

static cudaError_t copy2d(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
			  size_t height, enum cudaMemcpyKind kind, cudaStream_t stream, bool async)
{
	struct xgpu_client *c;
	cudaError_t e = xgpu_rt_client(&c);
	if (e)
		return e;
	int k = copy_kind(dst, src, kind);
	if (k < 0)
		return xgpu_rt_ret(cudaErrorInvalidMemcpyDirection);
	struct xgpu_copy2d p = {.kind = k,
				.dst = (uintptr_t)dst,
				.dst_pitch = dpitch,
				.src = (uintptr_t)src,
				.src_pitch = spitch,
				.width = width,
				.height = height,
				.stream = xgpu_rt_stream(stream),
				.async = async};
	return xgpu_rt_ret(xgpu_copy2d(c, &p));
}

XGPU_EXPORT cudaError_t cudaMemcpy2D(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
				     size_t height, enum cudaMemcpyKind kind)
{
	return copy2d(dst, dpitch, src, spitch, width, height, kind, NULL, false);
}

XGPU_EXPORT cudaError_t cudaMemcpy2DAsync(void *dst, size_t dpitch, const void *src, size_t spitch,
					  size_t width, size_t height, enum cudaMemcpyKind kind,
					  cudaStream_t stream)
{
	return copy2d(dst, dpitch, src, spitch, width, height, kind, stream, true);
}

XGPU_EXPORT cudaError_t cudaMemcpy2D_ptds(void *dst, size_t dpitch, const void *src, size_t spitch,
					  size_t width, size_t height, enum cudaMemcpyKind kind)
{
	return cudaMemcpy2D(dst, dpitch, src, spitch, width, height, kind);
}

XGPU_EXPORT cudaError_t cudaMemcpy2DAsync_ptsz(void *dst, size_t dpitch, const void *src, size_t spitch,
					       size_t width, size_t height, enum cudaMemcpyKind kind,
					       cudaStream_t stream)
{
	return cudaMemcpy2DAsync(dst, dpitch, src, spitch, width, height, kind, stream);
}

/* A pitched pointer and a position in it: the address of (x bytes, y rows,
 * z slices), the slices being ysize rows apart. Overflow is the caller's
 * error, refused. */
static bool position(const struct cudaPitchedPtr *p, const struct cudaPos *pos, uint64_t *addr,
		     uint64_t *slice)
{
	uint64_t rows, off;
	if (__builtin_mul_overflow(p->pitch, p->ysize, slice) ||
	    __builtin_mul_overflow((uint64_t)pos->z, (uint64_t)p->ysize, &rows) ||
	    __builtin_add_overflow(rows, (uint64_t)pos->y, &rows) ||
	    __builtin_mul_overflow(rows, p->pitch, &off) ||
	    __builtin_add_overflow(off, (uint64_t)pos->x, &off) ||
	    __builtin_add_overflow((uint64_t)(uintptr_t)p->ptr, off, addr))
		return false;
	return true;
}

/* cudaMemcpy3D with an array side: the driver layer's (array.c). A
 * linear side is a pitched pointer at its position; an array side's
 * position and extent are in elements, which the driver wants in bytes. */
static cudaError_t copy3d_array(const struct cudaMemcpy3DParms *p, cudaStream_t stream, bool async)
{
	struct xgpu_client *c;
	cudaError_t e = xgpu_rt_client(&c);
	if (e)
		return e;
	CUDA_ARRAY3D_DESCRIPTOR ad;
	cudaArray_const_t a = p->srcArray ? p->srcArray : p->dstArray;
	if (cuArray3DGetDescriptor(&ad, (CUarray)a))
		return xgpu_rt_ret(cudaErrorInvalidResourceHandle);
	struct cudaChannelFormatDesc cd;
	if ((e = cudaGetChannelDesc(&cd, a)))
		return e;
	size_t elem = (size_t)(cd.x / 8) * ad.NumChannels, width;
	CUmemorytype linear =
	    p->kind == cudaMemcpyDefault ? CU_MEMORYTYPE_UNIFIED
	    : (p->srcArray ? p->kind == cudaMemcpyDeviceToHost : p->kind == cudaMemcpyHostToDevice)
		? CU_MEMORYTYPE_HOST
		: CU_MEMORYTYPE_DEVICE;
	if (__builtin_mul_overflow(p->extent.width, elem, &width))
		return xgpu_rt_ret(cudaErrorInvalidValue);
	CUDA_MEMCPY3D q = {.WidthInBytes = width, .Height = p->extent.height, .Depth = p->extent.depth};
	if (p->srcArray) {
		q.srcMemoryType = CU_MEMORYTYPE_ARRAY;
		q.srcArray = (CUarray)p->srcArray;
		q.srcXInBytes = p->srcPos.x * elem;
		q.srcY = p->srcPos.y;
		q.srcZ = p->srcPos.z;
	} else {
		q.srcMemoryType = linear;
		q.srcHost = p->srcPtr.ptr;
		q.srcDevice = (CUdeviceptr)(uintptr_t)p->srcPtr.ptr;
		q.srcXInBytes = p->srcPos.x;
		q.srcY = p->srcPos.y;
		q.srcZ = p->srcPos.z;
		q.srcPitch = p->srcPtr.pitch;
		q.srcHeight = p->srcPtr.ysize;
	}
	if (p->dstArray) {
		q.dstMemoryType = CU_MEMORYTYPE_ARRAY;
		q.dstArray = (CUarray)p->dstArray;
		q.dstXInBytes = p->dstPos.x * elem;
		q.dstY = p->dstPos.y;
		q.dstZ = p->dstPos.z;
	} else {
		q.dstMemoryType = linear;
		q.dstHost = p->dstPtr.ptr;
		q.dstDevice = (CUdeviceptr)(uintptr_t)p->dstPtr.ptr;
		q.dstXInBytes = p->dstPos.x;
		q.dstY = p->dstPos.y;
		q.dstZ = p->dstPos.z;
		q.dstPitch = p->dstPtr.pitch;
		q.dstHeight = p->dstPtr.ysize;
	}
	CUresult r = async ? cuMemcpy3DAsync(&q, (CUstream)stream) : cuMemcpy3D(&q);
	return xgpu_rt_ret(r == CUDA_ERROR_INVALID_HANDLE ? cudaErrorInvalidResourceHandle : (cudaError_t)r);
}

static cudaError_t copy3d(const struct cudaMemcpy3DParms *p, cudaStream_t stream, bool async)
{
	if (!p)
		return xgpu_rt_ret(cudaErrorInvalidValue);
	if (p->srcArray || p->dstArray)
		return copy3d_array(p, stream, async);
	struct xgpu_client *c;
	cudaError_t e = xgpu_rt_client(&c);
	if (e)
		return e;
	int k = copy_kind(p->dstPtr.ptr, p->srcPtr.ptr, p->kind);
	if (k < 0)
		return xgpu_rt_ret(cudaErrorInvalidMemcpyDirection);
	uint64_t dst, src, dst_slice, src_slice;
	if (!position(&p->dstPtr, &p->dstPos, &dst, &dst_slice) ||
	    !position(&p->srcPtr, &p->srcPos, &src, &src_slice))
		return xgpu_rt_ret(cudaErrorInvalidValue);
	struct xgpu_copy2d rows = {.kind = k,
				   .dst = dst,
				   .dst_pitch = p->dstPtr.pitch,
				   .src = src,
				   .src_pitch = p->srcPtr.pitch,
				   .width = p->extent.width,
				   .height = p->extent.height,
				   .stream = xgpu_rt_stream(stream),
				   .async = async};
	return xgpu_rt_ret(xgpu_copy3d(c, &rows, p->extent.depth, dst_slice, src_slice));
}

XGPU_EXPORT cudaError_t cudaMemcpy3D(const struct cudaMemcpy3DParms *p)
{
	return copy3d(p, NULL, false);
}

XGPU_EXPORT cudaError_t cudaMemcpy3DAsync(const struct cudaMemcpy3DParms *p, cudaStream_t stream)
{
	return copy3d(p, stream, true);
}

XGPU_EXPORT cudaError_t cudaMemcpy3D_ptds(const struct cudaMemcpy3DParms *p)
{
	return copy3d(p, NULL, false);
}

XGPU_EXPORT cudaError_t cudaMemcpy3DAsync_ptsz(const struct cudaMemcpy3DParms *p, cudaStream_t stream)
{
	return copy3d(p, stream, true);
}

static cudaError_t memset2d(void *dst, size_t pitch, int value, size_t width, size_t height, size_t depth,
			    size_t slice, cudaStream_t stream, bool async)
{
	struct xgpu_client *c;
	cudaError_t e = xgpu_rt_client(&c);
	if (e)
		return e;
	/* Slices that follow on from each other's rows are one request. */
	size_t rows;
	if (depth == 1 || (slice == pitch * height && !__builtin_mul_overflow(height, depth, &rows)))
		return xgpu_rt_ret(xgpu_memset2d(c, (uintptr_t)dst, pitch, (uint8_t)value, width,
						 depth == 1 ? height : rows, xgpu_rt_stream(stream), async));
	for (size_t z = 0; z < depth && !e; z++)
		e = xgpu_memset2d(c, (uintptr_t)dst + z * slice, pitch, (uint8_t)value, width, height,
				  xgpu_rt_stream(stream), async);
	return xgpu_rt_ret(e);
}

XGPU_EXPORT cudaError_t cudaMemset2D(void *dst, size_t pitch, int value, size_t width, size_t height)
{
	return memset2d(dst, pitch, value, width, height, 1, 0, NULL, false);
}

XGPU_EXPORT cudaError_t cudaMemset2DAsync(void *dst, size_t pitch, int value, size_t width, size_t height,
					  cudaStream_t stream)
{
	return memset2d(dst, pitch, value, width, height, 1, 0, stream, true);
}

XGPU_EXPORT cudaError_t cudaMemset2D_ptds(void *dst, size_t pitch, int value, size_t width, size_t height)
{
	return cudaMemset2D(dst, pitch, value, width, height);
}

XGPU_EXPORT cudaError_t cudaMemset2DAsync_ptsz(void *dst, size_t pitch, int value, size_t width,
					       size_t height, cudaStream_t stream)
{
	return cudaMemset2DAsync(dst, pitch, value, width, height, stream);
}

static cudaError_t memset3d(struct cudaPitchedPtr p, int value, struct cudaExtent extent, cudaStream_t stream,
			    bool async)
{
	size_t slice;
	if (!extent.depth)
		return cudaSuccess;
	if (__builtin_mul_overflow(p.pitch, p.ysize, &slice) || (extent.depth > 1 && extent.height > p.ysize))
		return xgpu_rt_ret(cudaErrorInvalidValue);
	return memset2d(p.ptr, p.pitch, value, extent.width, extent.height, extent.depth, slice, stream,
			async);
}

XGPU_EXPORT cudaError_t cudaMemset3D(struct cudaPitchedPtr p, int value, struct cudaExtent extent)
{
	return memset3d(p, value, extent, NULL, false);
}

XGPU_EXPORT cudaError_t cudaMemset3DAsync(struct cudaPitchedPtr p, int value, struct cudaExtent extent,
					  cudaStream_t stream)
{
	return memset3d(p, value, extent, stream, true);
}

XGPU_EXPORT cudaError_t cudaMemset3D_ptds(struct cudaPitchedPtr p, int value, struct cudaExtent extent)
{
	return memset3d(p, value, extent, NULL, false);
}

XGPU_EXPORT cudaError_t cudaMemset3DAsync_ptsz(struct cudaPitchedPtr p, int value, struct cudaExtent extent,
					       cudaStream_t stream)
{
	return memset3d(p, value, extent, stream, true);
}
