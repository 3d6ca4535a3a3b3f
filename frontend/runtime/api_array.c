/* SPDX-License-Identifier: Apache-2.0 */
/* api_array.c - CUDA arrays of the runtime API: cudaMallocArray,
 * cudaMalloc3DArray, cudaFreeArray, cudaArrayGetInfo, cudaGetChannelDesc
 * and the copies into, out of and between arrays. A cudaArray_t is the
 * driver layer's CUarray (our libcuda.so.1, array.c), which implements
 * them; this file translates channel descriptors and copy kinds. Texture
 * and surface objects likewise (cudaCreateTextureObject: arrays, linear and
 * pitch2D memory; cudaCreateSurfaceObject). */
#include "runtime.h"

#include <cuda.h>

/* The driver's format and channel count for a channel descriptor: the
 * channels are the nonzero sizes, which must be equal (8, 16 or 32 bits). */
static bool format_of(const struct cudaChannelFormatDesc *d, CUarray_format *format, unsigned *channels)
{
	int bits[4] = {d->x, d->y, d->z, d->w}, n = 0;
	while (n < 4 && bits[n])
		n++;
	for (int i = 0; i < 4; i++)
		if ((i < n && bits[i] != d->x) || (i >= n && bits[i]))
			return false;
	if (n == 0 || n == 3)
		return false;
	*channels = (unsigned)n;
	switch (d->f) {
	case cudaChannelFormatKindSigned:
		*format = d->x == 8    ? CU_AD_FORMAT_SIGNED_INT8
			  : d->x == 16 ? CU_AD_FORMAT_SIGNED_INT16
			  : d->x == 32 ? CU_AD_FORMAT_SIGNED_INT32
				       : 0;
		break;
	case cudaChannelFormatKindUnsigned:
		*format = d->x == 8    ? CU_AD_FORMAT_UNSIGNED_INT8
			  : d->x == 16 ? CU_AD_FORMAT_UNSIGNED_INT16
			  : d->x == 32 ? CU_AD_FORMAT_UNSIGNED_INT32
				       : 0;
		break;
	case cudaChannelFormatKindFloat:
		*format = d->x == 16 ? CU_AD_FORMAT_HALF : d->x == 32 ? CU_AD_FORMAT_FLOAT : 0;
		break;
	default:
		return false;
	}
	return *format != 0;
}

static struct cudaChannelFormatDesc desc_of(CUarray_format format, unsigned channels)
{
	int bits;
	enum cudaChannelFormatKind kind;
	switch (format) {
	case CU_AD_FORMAT_SIGNED_INT8:
	case CU_AD_FORMAT_SIGNED_INT16:
	case CU_AD_FORMAT_SIGNED_INT32:
		kind = cudaChannelFormatKindSigned;
		break;
	case CU_AD_FORMAT_HALF:
	case CU_AD_FORMAT_FLOAT:
		kind = cudaChannelFormatKindFloat;
		break;
	default:
		kind = cudaChannelFormatKindUnsigned;
	}
	switch (format) {
	case CU_AD_FORMAT_SIGNED_INT8:
	case CU_AD_FORMAT_UNSIGNED_INT8:
		bits = 8;
		break;
	case CU_AD_FORMAT_SIGNED_INT16:
	case CU_AD_FORMAT_UNSIGNED_INT16:
	case CU_AD_FORMAT_HALF:
		bits = 16;
		break;
	default:
		bits = 32;
	}
	return (struct cudaChannelFormatDesc){.x = bits,
					      .y = channels > 1 ? bits : 0,
					      .z = channels > 2 ? bits : 0,
					      .w = channels > 3 ? bits : 0,
					      .f = kind};
}

static cudaError_t create(cudaArray_t *array, const struct cudaChannelFormatDesc *desc, size_t width,
			  size_t height, size_t depth, unsigned flags)
{
	struct xgpu_client *c;
	CUDA_ARRAY3D_DESCRIPTOR d = {.Width = width, .Height = height, .Depth = depth, .Flags = flags};
	unsigned channels;
	if (!array || !desc || !format_of(desc, &d.Format, &channels))
		return xgpu_rt_ret(cudaErrorInvalidValue);
	d.NumChannels = channels;
	cudaError_t e = xgpu_rt_client(&c);
	if (e)
		return e;
	CUarray a;
	e = (cudaError_t)cuArray3DCreate(&a, &d);
	if (!e)
		*array = (cudaArray_t)a;
	return xgpu_rt_ret(e);
}

XGPU_EXPORT cudaError_t cudaMallocArray(cudaArray_t *array, const struct cudaChannelFormatDesc *desc,
					size_t width, size_t height, unsigned int flags)
{
	/* cudaArrayDefault, SurfaceLoadStore and TextureGather are the flags
	 * of a 2D array. */
	if (flags & ~(unsigned)(cudaArraySurfaceLoadStore | cudaArrayTextureGather))
		return xgpu_rt_ret(cudaErrorInvalidValue);
	return create(array, desc, width, height, 0, flags);
}

XGPU_EXPORT cudaError_t cudaMalloc3DArray(cudaArray_t *array, const struct cudaChannelFormatDesc *desc,
					  struct cudaExtent extent, unsigned int flags)
{
	return create(array, desc, extent.width, extent.height, extent.depth, flags);
}

XGPU_EXPORT cudaError_t cudaFreeArray(cudaArray_t array)
{
	struct xgpu_client *c;
	if (!array)
		return cudaSuccess;
	cudaError_t e = xgpu_rt_client(&c);
	if (e)
		return e;
	return xgpu_rt_ret((cudaError_t)cuArrayDestroy((CUarray)array));
}

XGPU_EXPORT cudaError_t cudaArrayGetInfo(struct cudaChannelFormatDesc *desc, struct cudaExtent *extent,
					 unsigned int *flags, cudaArray_t array)
{
	CUDA_ARRAY3D_DESCRIPTOR d;
	CUresult r = cuArray3DGetDescriptor(&d, (CUarray)array);
	if (r)
		return xgpu_rt_ret(r == CUDA_ERROR_INVALID_HANDLE ? cudaErrorInvalidResourceHandle
								  : (cudaError_t)r);
	if (desc)
		*desc = desc_of(d.Format, d.NumChannels);
	if (extent)
		*extent = (struct cudaExtent){.width = d.Width, .height = d.Height, .depth = d.Depth};
	if (flags)
		*flags = d.Flags;
	return cudaSuccess;
}

XGPU_EXPORT cudaError_t cudaGetChannelDesc(struct cudaChannelFormatDesc *desc, cudaArray_const_t array)
{
	if (!desc)
		return xgpu_rt_ret(cudaErrorInvalidValue);
	return cudaArrayGetInfo(desc, NULL, NULL, (cudaArray_t)array);
}

/* The driver's memory type of the linear side of an array copy, from the
 * kind (to_array: that side is the source). */
static bool memtype_of(enum cudaMemcpyKind kind, bool to_array, CUmemorytype *t)
{
	switch (kind) {
	case cudaMemcpyDefault:
		*t = CU_MEMORYTYPE_UNIFIED;
		return true;
	case cudaMemcpyDeviceToDevice:
		*t = CU_MEMORYTYPE_DEVICE;
		return true;
	case cudaMemcpyHostToDevice:
		*t = CU_MEMORYTYPE_HOST;
		return to_array;
	case cudaMemcpyDeviceToHost:
		*t = CU_MEMORYTYPE_HOST;
		return !to_array;
	default:
		return false;
	}
}

static cudaError_t run3d(const CUDA_MEMCPY3D *p, cudaStream_t stream, bool async)
{
	struct xgpu_client *c;
	cudaError_t e = xgpu_rt_client(&c);
	if (e)
		return e;
	CUresult r = async ? cuMemcpy3DAsync(p, (CUstream)stream) : cuMemcpy3D(p);
	return xgpu_rt_ret(r == CUDA_ERROR_INVALID_HANDLE ? cudaErrorInvalidResourceHandle : (cudaError_t)r);
}

/* A pitched 2D copy with an array on one side: the array at (x bytes,
 * row y), the memory mem with rows pitch apart. */
static cudaError_t copy2d_array(cudaArray_const_t array, size_t x, size_t y, const void *mem, size_t pitch,
				size_t width, size_t height, enum cudaMemcpyKind kind, bool to_array,
				cudaStream_t stream, bool async)
{
	CUmemorytype t;
	if (!memtype_of(kind, to_array, &t))
		return xgpu_rt_ret(cudaErrorInvalidMemcpyDirection);
	if (height > 1 && pitch < width)
		return xgpu_rt_ret(cudaErrorInvalidPitchValue);
	CUDA_MEMCPY3D p = {.WidthInBytes = width, .Height = height, .Depth = 1};
	if (to_array) {
		p.dstMemoryType = CU_MEMORYTYPE_ARRAY;
		p.dstArray = (CUarray)array;
		p.dstXInBytes = x;
		p.dstY = y;
		p.srcMemoryType = t;
		p.srcHost = mem;
		p.srcDevice = (CUdeviceptr)(uintptr_t)mem;
		p.srcPitch = pitch;
		p.srcHeight = height;
	} else {
		p.srcMemoryType = CU_MEMORYTYPE_ARRAY;
		p.srcArray = (CUarray)array;
		p.srcXInBytes = x;
		p.srcY = y;
		p.dstMemoryType = t;
		p.dstHost = (void *)mem;
		p.dstDevice = (CUdeviceptr)(uintptr_t)mem;
		p.dstPitch = pitch;
		p.dstHeight = height;
	}
	return run3d(&p, stream, async);
}

XGPU_EXPORT cudaError_t cudaMemcpy2DToArray(cudaArray_t dst, size_t wOffset, size_t hOffset, const void *src,
					    size_t spitch, size_t width, size_t height,
					    enum cudaMemcpyKind kind)
{
	return copy2d_array(dst, wOffset, hOffset, src, spitch, width, height, kind, true, NULL, false);
}

XGPU_EXPORT cudaError_t cudaMemcpy2DToArrayAsync(cudaArray_t dst, size_t wOffset, size_t hOffset,
						 const void *src, size_t spitch, size_t width, size_t height,
						 enum cudaMemcpyKind kind, cudaStream_t stream)
{
	return copy2d_array(dst, wOffset, hOffset, src, spitch, width, height, kind, true, stream, true);
}

XGPU_EXPORT cudaError_t cudaMemcpy2DFromArray(void *dst, size_t dpitch, cudaArray_const_t src, size_t wOffset,
					      size_t hOffset, size_t width, size_t height,
					      enum cudaMemcpyKind kind)
{
	return copy2d_array(src, wOffset, hOffset, dst, dpitch, width, height, kind, false, NULL, false);
}

XGPU_EXPORT cudaError_t cudaMemcpy2DFromArrayAsync(void *dst, size_t dpitch, cudaArray_const_t src,
						   size_t wOffset, size_t hOffset, size_t width,
						   size_t height, enum cudaMemcpyKind kind,
						   cudaStream_t stream)
{
	return copy2d_array(src, wOffset, hOffset, dst, dpitch, width, height, kind, false, stream, true);
}

/* count bytes from (wOffset bytes, row hOffset) on, the array's rows taken
 * end to end: one row piece at a time. */
static cudaError_t copy_linear(cudaArray_const_t array, size_t w, size_t h, const void *mem, size_t count,
			       enum cudaMemcpyKind kind, bool to_array, cudaStream_t stream, bool async)
{
	CUDA_ARRAY3D_DESCRIPTOR d;
	if (cuArray3DGetDescriptor(&d, (CUarray)array))
		return xgpu_rt_ret(cudaErrorInvalidResourceHandle);
	struct cudaChannelFormatDesc cd = desc_of(d.Format, d.NumChannels);
	uint64_t row = (uint64_t)d.Width * (uint64_t)(cd.x / 8) * d.NumChannels;
	if (!row || w >= row)
		return xgpu_rt_ret(cudaErrorInvalidValue);
	cudaError_t e = cudaSuccess;
	for (size_t done = 0; done < count && !e;) {
		uint64_t len = row - w < count - done ? row - w : count - done;
		const char *at = (const char *)mem + done;
		e = copy2d_array(array, w, h, at, len, len, 1, kind, to_array, stream, async);
		done += len;
		w = 0;
		h++;
	}
	return e;
}

XGPU_EXPORT cudaError_t cudaMemcpyToArray(cudaArray_t dst, size_t wOffset, size_t hOffset, const void *src,
					  size_t count, enum cudaMemcpyKind kind)
{
	return copy_linear(dst, wOffset, hOffset, src, count, kind, true, NULL, false);
}

XGPU_EXPORT cudaError_t cudaMemcpyToArrayAsync(cudaArray_t dst, size_t wOffset, size_t hOffset,
					       const void *src, size_t count, enum cudaMemcpyKind kind,
					       cudaStream_t stream)
{
	return copy_linear(dst, wOffset, hOffset, src, count, kind, true, stream, true);
}

XGPU_EXPORT cudaError_t cudaMemcpyFromArray(void *dst, cudaArray_const_t src, size_t wOffset, size_t hOffset,
					    size_t count, enum cudaMemcpyKind kind)
{
	return copy_linear(src, wOffset, hOffset, dst, count, kind, false, NULL, false);
}

XGPU_EXPORT cudaError_t cudaMemcpyFromArrayAsync(void *dst, cudaArray_const_t src, size_t wOffset,
						 size_t hOffset, size_t count, enum cudaMemcpyKind kind,
						 cudaStream_t stream)
{
	return copy_linear(src, wOffset, hOffset, dst, count, kind, false, stream, true);
}

XGPU_EXPORT cudaError_t cudaMemcpy2DArrayToArray(cudaArray_t dst, size_t wOffsetDst, size_t hOffsetDst,
						 cudaArray_const_t src, size_t wOffsetSrc, size_t hOffsetSrc,
						 size_t width, size_t height, enum cudaMemcpyKind kind)
{
	if (kind != cudaMemcpyDeviceToDevice && kind != cudaMemcpyDefault)
		return xgpu_rt_ret(cudaErrorInvalidMemcpyDirection);
	CUDA_MEMCPY3D p = {.srcMemoryType = CU_MEMORYTYPE_ARRAY,
			   .srcArray = (CUarray)src,
			   .srcXInBytes = wOffsetSrc,
			   .srcY = hOffsetSrc,
			   .dstMemoryType = CU_MEMORYTYPE_ARRAY,
			   .dstArray = (CUarray)dst,
			   .dstXInBytes = wOffsetDst,
			   .dstY = hOffsetDst,
			   .WidthInBytes = width,
			   .Height = height,
			   .Depth = 1};
	return run3d(&p, NULL, false);
}

/* count bytes of one row (the whole of a 1D array's copy). */
XGPU_EXPORT cudaError_t cudaMemcpyArrayToArray(cudaArray_t dst, size_t wOffsetDst, size_t hOffsetDst,
					       cudaArray_const_t src, size_t wOffsetSrc, size_t hOffsetSrc,
					       size_t count, enum cudaMemcpyKind kind)
{
	return cudaMemcpy2DArrayToArray(dst, wOffsetDst, hOffsetDst, src, wOffsetSrc, hOffsetSrc, count, 1,
					kind);
}

XGPU_EXPORT cudaError_t cudaMemcpy2DToArray_ptds(cudaArray_t dst, size_t wOffset, size_t hOffset,
						 const void *src, size_t spitch, size_t width, size_t height,
						 enum cudaMemcpyKind kind)
{
	return cudaMemcpy2DToArray(dst, wOffset, hOffset, src, spitch, width, height, kind);
}

XGPU_EXPORT cudaError_t cudaMemcpy2DToArrayAsync_ptsz(cudaArray_t dst, size_t wOffset, size_t hOffset,
						      const void *src, size_t spitch, size_t width,
						      size_t height, enum cudaMemcpyKind kind,
						      cudaStream_t stream)
{
	return cudaMemcpy2DToArrayAsync(dst, wOffset, hOffset, src, spitch, width, height, kind, stream);
}

XGPU_EXPORT cudaError_t cudaMemcpy2DFromArray_ptds(void *dst, size_t dpitch, cudaArray_const_t src,
						   size_t wOffset, size_t hOffset, size_t width,
						   size_t height, enum cudaMemcpyKind kind)
{
	return cudaMemcpy2DFromArray(dst, dpitch, src, wOffset, hOffset, width, height, kind);
}

XGPU_EXPORT cudaError_t cudaMemcpy2DFromArrayAsync_ptsz(void *dst, size_t dpitch, cudaArray_const_t src,
							size_t wOffset, size_t hOffset, size_t width,
							size_t height, enum cudaMemcpyKind kind,
							cudaStream_t stream)
{
	return cudaMemcpy2DFromArrayAsync(dst, dpitch, src, wOffset, hOffset, width, height, kind, stream);
}

XGPU_EXPORT cudaError_t cudaMemcpyToArray_ptds(cudaArray_t dst, size_t wOffset, size_t hOffset,
					       const void *src, size_t count, enum cudaMemcpyKind kind)
{
	return copy_linear(dst, wOffset, hOffset, src, count, kind, true, NULL, false);
}

XGPU_EXPORT cudaError_t cudaMemcpyToArrayAsync_ptsz(cudaArray_t dst, size_t wOffset, size_t hOffset,
						    const void *src, size_t count, enum cudaMemcpyKind kind,
						    cudaStream_t stream)
{
	return copy_linear(dst, wOffset, hOffset, src, count, kind, true, stream, true);
}

XGPU_EXPORT cudaError_t cudaMemcpyFromArray_ptds(void *dst, cudaArray_const_t src, size_t wOffset,
						 size_t hOffset, size_t count, enum cudaMemcpyKind kind)
{
	return copy_linear(src, wOffset, hOffset, dst, count, kind, false, NULL, false);
}

XGPU_EXPORT cudaError_t cudaMemcpyFromArrayAsync_ptsz(void *dst, cudaArray_const_t src, size_t wOffset,
						      size_t hOffset, size_t count, enum cudaMemcpyKind kind,
						      cudaStream_t stream)
{
	return copy_linear(src, wOffset, hOffset, dst, count, kind, false, stream, true);
}

XGPU_EXPORT cudaError_t cudaMemcpy2DArrayToArray_ptds(cudaArray_t dst, size_t wOffsetDst, size_t hOffsetDst,
						      cudaArray_const_t src, size_t wOffsetSrc,
						      size_t hOffsetSrc, size_t width, size_t height,
						      enum cudaMemcpyKind kind)
{
	return cudaMemcpy2DArrayToArray(dst, wOffsetDst, hOffsetDst, src, wOffsetSrc, hOffsetSrc, width,
					height, kind);
}

XGPU_EXPORT cudaError_t cudaMemcpyArrayToArray_ptds(cudaArray_t dst, size_t wOffsetDst, size_t hOffsetDst,
						    cudaArray_const_t src, size_t wOffsetSrc,
						    size_t hOffsetSrc, size_t count, enum cudaMemcpyKind kind)
{
	return cudaMemcpy2DArrayToArray(dst, wOffsetDst, hOffsetDst, src, wOffsetSrc, hOffsetSrc, count, 1,
					kind);
}

/* ---- texture and surface objects ---------------------------------------------- */

static cudaError_t from_driver(CUresult r)
{
	return xgpu_rt_ret(r == CUDA_ERROR_INVALID_HANDLE ? cudaErrorInvalidResourceHandle : (cudaError_t)r);
}

static bool resource_to_driver(const struct cudaResourceDesc *in, CUDA_RESOURCE_DESC *out)
{
	CUarray_format f;
	unsigned ch;
	*out = (CUDA_RESOURCE_DESC){.resType = (CUresourcetype)in->resType};
	switch (in->resType) {
	case cudaResourceTypeArray:
		out->res.array.hArray = (CUarray)in->res.array.array;
		return true;
	case cudaResourceTypeLinear:
		if (!format_of(&in->res.linear.desc, &f, &ch))
			return false;
		out->res.linear.devPtr = (CUdeviceptr)(uintptr_t)in->res.linear.devPtr;
		out->res.linear.format = f;
		out->res.linear.numChannels = ch;
		out->res.linear.sizeInBytes = in->res.linear.sizeInBytes;
		return true;
	case cudaResourceTypePitch2D:
		if (!format_of(&in->res.pitch2D.desc, &f, &ch))
			return false;
		out->res.pitch2D.devPtr = (CUdeviceptr)(uintptr_t)in->res.pitch2D.devPtr;
		out->res.pitch2D.format = f;
		out->res.pitch2D.numChannels = ch;
		out->res.pitch2D.width = in->res.pitch2D.width;
		out->res.pitch2D.height = in->res.pitch2D.height;
		out->res.pitch2D.pitchInBytes = in->res.pitch2D.pitchInBytes;
		return true;
	default:
		return false;
	}
}

static void resource_from_driver(const CUDA_RESOURCE_DESC *in, struct cudaResourceDesc *out)
{
	*out = (struct cudaResourceDesc){.resType = (enum cudaResourceType)in->resType};
	switch (in->resType) {
	case CU_RESOURCE_TYPE_ARRAY:
		out->res.array.array = (cudaArray_t)in->res.array.hArray;
		break;
	case CU_RESOURCE_TYPE_LINEAR:
		out->res.linear.devPtr = (void *)(uintptr_t)in->res.linear.devPtr;
		out->res.linear.desc = desc_of(in->res.linear.format, in->res.linear.numChannels);
		out->res.linear.sizeInBytes = in->res.linear.sizeInBytes;
		break;
	case CU_RESOURCE_TYPE_PITCH2D:
		out->res.pitch2D.devPtr = (void *)(uintptr_t)in->res.pitch2D.devPtr;
		out->res.pitch2D.desc = desc_of(in->res.pitch2D.format, in->res.pitch2D.numChannels);
		out->res.pitch2D.width = in->res.pitch2D.width;
		out->res.pitch2D.height = in->res.pitch2D.height;
		out->res.pitch2D.pitchInBytes = in->res.pitch2D.pitchInBytes;
		break;
	default:
		break;
	}
}

/* Whether a resource's elements are integers (which cudaReadModeElementType
 * reads as such) rather than float or half. */
static CUresult resource_is_integer(const CUDA_RESOURCE_DESC *rd, bool *integer)
{
	CUarray_format f;
	if (rd->resType == CU_RESOURCE_TYPE_ARRAY) {
		CUDA_ARRAY3D_DESCRIPTOR ad;
		CUresult r = cuArray3DGetDescriptor(&ad, rd->res.array.hArray);
		if (r)
			return r;
		f = ad.Format;
	} else
		f = rd->resType == CU_RESOURCE_TYPE_LINEAR ? rd->res.linear.format : rd->res.pitch2D.format;
	*integer = f != CU_AD_FORMAT_FLOAT && f != CU_AD_FORMAT_HALF;
	return CUDA_SUCCESS;
}

XGPU_EXPORT cudaError_t cudaCreateTextureObject(cudaTextureObject_t *pTexObject,
						const struct cudaResourceDesc *pResDesc,
						const struct cudaTextureDesc *pTexDesc,
						const struct cudaResourceViewDesc *pResViewDesc)
{
	struct xgpu_client *c;
	CUDA_RESOURCE_DESC rd;
	if (!pTexObject || !pResDesc || !pTexDesc)
		return xgpu_rt_ret(cudaErrorInvalidValue);
	if (pResDesc->resType == cudaResourceTypeMipmappedArray || pResViewDesc)
		return xgpu_unsupported("cudaCreateTextureObject (mipmapped arrays or resource views)");
	if (!resource_to_driver(pResDesc, &rd))
		return xgpu_rt_ret(cudaErrorInvalidValue);
	cudaError_t e = xgpu_rt_client(&c);
	if (e)
		return e;
	/* cudaReadModeElementType reads integer formats as integers. */
	bool integer;
	CUresult r = resource_is_integer(&rd, &integer);
	if (r)
		return from_driver(r);
	CUDA_TEXTURE_DESC td = {.filterMode = (CUfilter_mode)pTexDesc->filterMode,
				.maxAnisotropy = pTexDesc->maxAnisotropy,
				.mipmapFilterMode = (CUfilter_mode)pTexDesc->mipmapFilterMode,
				.mipmapLevelBias = pTexDesc->mipmapLevelBias,
				.minMipmapLevelClamp = pTexDesc->minMipmapLevelClamp,
				.maxMipmapLevelClamp = pTexDesc->maxMipmapLevelClamp};
	for (int i = 0; i < 3; i++)
		td.addressMode[i] = (CUaddress_mode)pTexDesc->addressMode[i];
	for (int i = 0; i < 4; i++)
		td.borderColor[i] = pTexDesc->borderColor[i];
	if (integer && pTexDesc->readMode == cudaReadModeElementType)
		td.flags |= CU_TRSF_READ_AS_INTEGER;
	if (pTexDesc->normalizedCoords)
		td.flags |= CU_TRSF_NORMALIZED_COORDINATES;
	if (pTexDesc->sRGB)
		td.flags |= CU_TRSF_SRGB;
	if (pTexDesc->disableTrilinearOptimization)
		td.flags |= CU_TRSF_DISABLE_TRILINEAR_OPTIMIZATION;
	if (pTexDesc->seamlessCubemap)
		td.flags |= CU_TRSF_SEAMLESS_CUBEMAP;
	CUtexObject t;
	r = cuTexObjectCreate(&t, &rd, &td, NULL);
	if (!r)
		*pTexObject = (cudaTextureObject_t)t;
	return from_driver(r);
}

XGPU_EXPORT cudaError_t cudaDestroyTextureObject(cudaTextureObject_t texObject)
{
	struct xgpu_client *c;
	cudaError_t e = xgpu_rt_client(&c);
	if (e)
		return e;
	return from_driver(cuTexObjectDestroy((CUtexObject)texObject));
}

XGPU_EXPORT cudaError_t cudaGetTextureObjectResourceDesc(struct cudaResourceDesc *pResDesc,
							 cudaTextureObject_t texObject)
{
	CUDA_RESOURCE_DESC rd;
	if (!pResDesc)
		return xgpu_rt_ret(cudaErrorInvalidValue);
	CUresult r = cuTexObjectGetResourceDesc(&rd, (CUtexObject)texObject);
	if (!r)
		resource_from_driver(&rd, pResDesc);
	return from_driver(r);
}

XGPU_EXPORT cudaError_t cudaGetTextureObjectTextureDesc(struct cudaTextureDesc *pTexDesc,
							cudaTextureObject_t texObject)
{
	CUDA_TEXTURE_DESC td;
	if (!pTexDesc)
		return xgpu_rt_ret(cudaErrorInvalidValue);
	CUDA_RESOURCE_DESC rd;
	CUresult r = cuTexObjectGetTextureDesc(&td, (CUtexObject)texObject);
	if (!r)
		r = cuTexObjectGetResourceDesc(&rd, (CUtexObject)texObject);
	if (r)
		return from_driver(r);
	bool integer;
	if ((r = resource_is_integer(&rd, &integer)))
		return from_driver(r);
	*pTexDesc = (struct cudaTextureDesc){
	    .filterMode = (enum cudaTextureFilterMode)td.filterMode,
	    .readMode = !integer || (td.flags & CU_TRSF_READ_AS_INTEGER) ? cudaReadModeElementType
									 : cudaReadModeNormalizedFloat,
	    .sRGB = (td.flags & CU_TRSF_SRGB) != 0,
	    .normalizedCoords = (td.flags & CU_TRSF_NORMALIZED_COORDINATES) != 0,
	    .maxAnisotropy = td.maxAnisotropy,
	    .mipmapFilterMode = (enum cudaTextureFilterMode)td.mipmapFilterMode,
	    .mipmapLevelBias = td.mipmapLevelBias,
	    .minMipmapLevelClamp = td.minMipmapLevelClamp,
	    .maxMipmapLevelClamp = td.maxMipmapLevelClamp,
	    .disableTrilinearOptimization = (td.flags & CU_TRSF_DISABLE_TRILINEAR_OPTIMIZATION) != 0,
	    .seamlessCubemap = (td.flags & CU_TRSF_SEAMLESS_CUBEMAP) != 0};
	for (int i = 0; i < 3; i++)
		pTexDesc->addressMode[i] = (enum cudaTextureAddressMode)td.addressMode[i];
	for (int i = 0; i < 4; i++)
		pTexDesc->borderColor[i] = td.borderColor[i];
	return cudaSuccess;
}

XGPU_EXPORT cudaError_t cudaCreateSurfaceObject(cudaSurfaceObject_t *pSurfObject,
						const struct cudaResourceDesc *pResDesc)
{
	struct xgpu_client *c;
	CUDA_RESOURCE_DESC rd;
	if (!pSurfObject || !pResDesc || pResDesc->resType != cudaResourceTypeArray ||
	    !resource_to_driver(pResDesc, &rd))
		return xgpu_rt_ret(cudaErrorInvalidValue);
	cudaError_t e = xgpu_rt_client(&c);
	if (e)
		return e;
	CUsurfObject s;
	CUresult r = cuSurfObjectCreate(&s, &rd);
	if (!r)
		*pSurfObject = (cudaSurfaceObject_t)s;
	return from_driver(r);
}

XGPU_EXPORT cudaError_t cudaDestroySurfaceObject(cudaSurfaceObject_t surfObject)
{
	struct xgpu_client *c;
	cudaError_t e = xgpu_rt_client(&c);
	if (e)
		return e;
	return from_driver(cuSurfObjectDestroy((CUsurfObject)surfObject));
}

XGPU_EXPORT cudaError_t cudaGetSurfaceObjectResourceDesc(struct cudaResourceDesc *pResDesc,
							 cudaSurfaceObject_t surfObject)
{
	CUDA_RESOURCE_DESC rd;
	if (!pResDesc)
		return xgpu_rt_ret(cudaErrorInvalidValue);
	CUresult r = cuSurfObjectGetResourceDesc(&rd, (CUsurfObject)surfObject);
	if (!r)
		resource_from_driver(&rd, pResDesc);
	return from_driver(r);
}
