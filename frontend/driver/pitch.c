/* SPDX-License-Identifier: Apache-2.0 */
/* pitch.c - pitched memory and the copies of the driver API that name
 * their memory types: cuMemAllocPitch, cuMemcpy2D (and Unaligned, Async),
 * cuMemcpy3D(Async) and cuMemsetD2D8/16/32 (and Async), over the 2D
 * marshalling both layers share (copy2d.h). The unified cuMemcpy(Async) is
 * memory.c's.
 *
 * Memory types HOST, DEVICE and UNIFIED (whose side the registry of both
 * layers' allocations decides, allocs.h) are handled here; a copy with a
 * CUDA array on either side goes to array.c. */
#include "allocs.h"
#include "copy2d.h"
#include "driver.h"

#include <stdio.h>
#include <string.h>

#define XGPU_ALIAS(name) __attribute__((alias(#name)))

CUresult cuMemAllocPitch(CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes, size_t Height,
			 unsigned int ElementSizeBytes)
{
	if (!dptr || !pPitch || !WidthInBytes || !Height ||
	    (ElementSizeBytes != 4 && ElementSizeBytes != 8 && ElementSizeBytes != 16))
		return CUDA_ERROR_INVALID_VALUE;
	const struct xgpu_device_info *di;
	struct xgpu_client *c;
	CUresult r = xgpu_drv_client_ctx(&c);
	if (!r)
		r = xgpu_drv_devinfo(&di);
	if (r)
		return r;
	/* The width rounded up to the device's texture pitch alignment. */
	uint64_t align = CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT < di->nattrs
			     ? (uint64_t)di->attrs[CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT]
			     : 0;
	if (!align || (align & (align - 1)))
		align = 512;
	size_t pitch, bytes;
	if (WidthInBytes > SIZE_MAX - (align - 1))
		return CUDA_ERROR_OUT_OF_MEMORY;
	pitch = (WidthInBytes + align - 1) & ~(size_t)(align - 1);
	if (__builtin_mul_overflow(pitch, Height, &bytes))
		return CUDA_ERROR_OUT_OF_MEMORY;
	r = cuMemAlloc(dptr, bytes);
	if (!r)
		*pPitch = pitch;
	return r;
}

/* One side of a copy: where its first byte is and whether that is device
 * memory. (x bytes, y rows, z slices of height rows) from the base. */
static CUresult side_of(CUmemorytype type, const void *host, CUdeviceptr dev, size_t x, size_t y, size_t z,
			size_t pitch, size_t height, uint64_t *addr, bool *device)
{
	uint64_t base, rows, off;
	switch (type) {
	case CU_MEMORYTYPE_HOST:
		/* Managed memory named as host memory is copied as the device's:
		 * its device copy is current once managed.c pushed the host's
		 * writes, and a copy into it must reach the device. */
		base = (uintptr_t)host;
		*device = xgpu_alloc_is_managed(base);
		break;
	case CU_MEMORYTYPE_DEVICE:
		base = dev;
		*device = true;
		break;
	case CU_MEMORYTYPE_UNIFIED:
		base = dev;
		*device = xgpu_alloc_on_device(dev);
		break;
	case CU_MEMORYTYPE_ARRAY: /* copy2d and copy3d hand these to array.c */
	default:
		return CUDA_ERROR_INVALID_VALUE;
	}
	if (__builtin_mul_overflow((uint64_t)z, (uint64_t)height, &rows) ||
	    __builtin_add_overflow(rows, (uint64_t)y, &rows) ||
	    __builtin_mul_overflow(rows, (uint64_t)pitch, &off) ||
	    __builtin_add_overflow(off, (uint64_t)x, &off) || __builtin_add_overflow(base, off, addr))
		return CUDA_ERROR_INVALID_VALUE;
	return CUDA_SUCCESS;
}

static int kind_of(bool dst_device, bool src_device)
{
	return dst_device ? (src_device ? XGPU_COPY_DTOD : XGPU_COPY_HTOD)
			  : (src_device ? XGPU_COPY_DTOH : XGPU_COPY_HTOH);
}

static CUresult copy2d(const char *fn, const CUDA_MEMCPY2D *p, CUstream stream, bool async)
{
	struct xgpu_client *c;
	if (!p)
		return CUDA_ERROR_INVALID_VALUE;
	if (p->srcMemoryType == CU_MEMORYTYPE_ARRAY || p->dstMemoryType == CU_MEMORYTYPE_ARRAY) {
		CUDA_MEMCPY3D q = {.srcXInBytes = p->srcXInBytes,
				   .srcY = p->srcY,
				   .srcMemoryType = p->srcMemoryType,
				   .srcHost = p->srcHost,
				   .srcDevice = p->srcDevice,
				   .srcArray = p->srcArray,
				   .srcPitch = p->srcPitch,
				   .srcHeight = p->Height,
				   .dstXInBytes = p->dstXInBytes,
				   .dstY = p->dstY,
				   .dstMemoryType = p->dstMemoryType,
				   .dstHost = p->dstHost,
				   .dstDevice = p->dstDevice,
				   .dstArray = p->dstArray,
				   .dstPitch = p->dstPitch,
				   .dstHeight = p->Height,
				   .WidthInBytes = p->WidthInBytes,
				   .Height = p->Height,
				   .Depth = 1};
		return xgpu_drv_array_copy3d(&q, stream, async);
	}
	CUresult r = xgpu_drv_client_ctx(&c);
	if (r)
		return r;
	uint64_t dst, src;
	bool dst_dev, src_dev;
	if ((r = side_of(p->srcMemoryType, p->srcHost, p->srcDevice, p->srcXInBytes, p->srcY, 0, p->srcPitch,
			 0, &src, &src_dev)) ||
	    (r = side_of(p->dstMemoryType, p->dstHost, p->dstDevice, p->dstXInBytes, p->dstY, 0, p->dstPitch,
			 0, &dst, &dst_dev)))
		return r;
	struct xgpu_copy2d q = {.kind = kind_of(dst_dev, src_dev),
				.dst = dst,
				.dst_pitch = p->dstPitch,
				.src = src,
				.src_pitch = p->srcPitch,
				.width = p->WidthInBytes,
				.height = p->Height,
				.stream = xgpu_drv_stream(stream),
				.async = async};
	return xgpu_drv_result(xgpu_copy2d(c, &q));
}

CUresult cuMemcpy2D(const CUDA_MEMCPY2D *pCopy)
{
	return copy2d("cuMemcpy2D", pCopy, NULL, false);
}
CUresult cuMemcpy2D_v2_ptds(const CUDA_MEMCPY2D *pCopy) XGPU_ALIAS(cuMemcpy2D_v2);

/* xgpu's copies have no alignment requirement to relax. */
CUresult cuMemcpy2DUnaligned(const CUDA_MEMCPY2D *pCopy)
{
	return copy2d("cuMemcpy2DUnaligned", pCopy, NULL, false);
}
CUresult cuMemcpy2DUnaligned_v2_ptds(const CUDA_MEMCPY2D *pCopy) XGPU_ALIAS(cuMemcpy2DUnaligned_v2);

CUresult cuMemcpy2DAsync(const CUDA_MEMCPY2D *pCopy, CUstream hStream)
{
	return copy2d("cuMemcpy2DAsync", pCopy, hStream, true);
}
CUresult cuMemcpy2DAsync_v2_ptsz(const CUDA_MEMCPY2D *pCopy, CUstream hStream) XGPU_ALIAS(cuMemcpy2DAsync_v2);

static CUresult copy3d(const char *fn, const CUDA_MEMCPY3D *p, CUstream stream, bool async)
{
	struct xgpu_client *c;
	if (!p)
		return CUDA_ERROR_INVALID_VALUE;
	if (p->srcMemoryType == CU_MEMORYTYPE_ARRAY || p->dstMemoryType == CU_MEMORYTYPE_ARRAY)
		return xgpu_drv_array_copy3d(p, stream, async);
	CUresult r = xgpu_drv_client_ctx(&c);
	if (r)
		return r;
	/* Mipmap levels belong to arrays; the reserved fields must be 0. */
	if (p->srcLOD || p->dstLOD || p->reserved0 || p->reserved1)
		return CUDA_ERROR_INVALID_VALUE;
	uint64_t dst, src, dst_slice, src_slice;
	bool dst_dev, src_dev;
	if ((r = side_of(p->srcMemoryType, p->srcHost, p->srcDevice, p->srcXInBytes, p->srcY, p->srcZ,
			 p->srcPitch, p->srcHeight, &src, &src_dev)) ||
	    (r = side_of(p->dstMemoryType, p->dstHost, p->dstDevice, p->dstXInBytes, p->dstY, p->dstZ,
			 p->dstPitch, p->dstHeight, &dst, &dst_dev)))
		return r;
	if (__builtin_mul_overflow((uint64_t)p->dstPitch, (uint64_t)p->dstHeight, &dst_slice) ||
	    __builtin_mul_overflow((uint64_t)p->srcPitch, (uint64_t)p->srcHeight, &src_slice) ||
	    (p->Depth > 1 && (p->Height > p->dstHeight || p->Height > p->srcHeight)))
		return CUDA_ERROR_INVALID_VALUE;
	struct xgpu_copy2d q = {.kind = kind_of(dst_dev, src_dev),
				.dst = dst,
				.dst_pitch = p->dstPitch,
				.src = src,
				.src_pitch = p->srcPitch,
				.width = p->WidthInBytes,
				.height = p->Height,
				.stream = xgpu_drv_stream(stream),
				.async = async};
	return xgpu_drv_result(xgpu_copy3d(c, &q, p->Depth, dst_slice, src_slice));
}

CUresult cuMemcpy3D(const CUDA_MEMCPY3D *pCopy)
{
	return copy3d("cuMemcpy3D", pCopy, NULL, false);
}
CUresult cuMemcpy3D_v2_ptds(const CUDA_MEMCPY3D *pCopy) XGPU_ALIAS(cuMemcpy3D_v2);

CUresult cuMemcpy3DAsync(const CUDA_MEMCPY3D *pCopy, CUstream hStream)
{
	return copy3d("cuMemcpy3DAsync", pCopy, hStream, true);
}
CUresult cuMemcpy3DAsync_v2_ptsz(const CUDA_MEMCPY3D *pCopy, CUstream hStream) XGPU_ALIAS(cuMemcpy3DAsync_v2);

/* ---- 2D memset ------------------------------------------------------------ */

/* Height rows of width elements of elem_size bytes. A pattern whose bytes
 * are all equal is one request; another is set row by row through the 1D
 * memsets (which upload it). */
static CUresult fill2d(CUdeviceptr dst, size_t pitch, uint32_t value, unsigned elem_size, size_t width,
		       size_t height, CUstream stream, bool async)
{
	struct xgpu_client *c;
	CUresult r = xgpu_drv_client_ctx(&c);
	if (r || !width || !height)
		return r;
	size_t bytes;
	if (__builtin_mul_overflow(width, (size_t)elem_size, &bytes) || (height > 1 && pitch < bytes) ||
	    (dst | pitch) % elem_size)
		return CUDA_ERROR_INVALID_VALUE;
	uint8_t b[4];
	memcpy(b, &value, sizeof b);
	bool bytewise =
	    elem_size == 1 || (b[0] == b[1] && (elem_size == 2 || (b[0] == b[2] && b[0] == b[3])));
	if (bytewise)
		return xgpu_drv_result(
		    xgpu_memset2d(c, dst, pitch, b[0], bytes, height, xgpu_drv_stream(stream), async));
	for (size_t row = 0; row < height && !r; row++) {
		CUdeviceptr at = dst + row * pitch;
		if (elem_size == 2)
			r = async ? cuMemsetD16Async(at, (unsigned short)value, width, stream)
				  : cuMemsetD16(at, (unsigned short)value, width);
		else
			r = async ? cuMemsetD32Async(at, value, width, stream)
				  : cuMemsetD32(at, value, width);
	}
	return r;
}

CUresult cuMemsetD2D8(CUdeviceptr dst, size_t pitch, unsigned char uc, size_t Width, size_t Height)
{
	return fill2d(dst, pitch, uc, 1, Width, Height, NULL, false);
}
CUresult cuMemsetD2D8_v2_ptds(CUdeviceptr dst, size_t pitch, unsigned char uc, size_t Width, size_t Height)
    XGPU_ALIAS(cuMemsetD2D8_v2);

CUresult cuMemsetD2D16(CUdeviceptr dst, size_t pitch, unsigned short us, size_t Width, size_t Height)
{
	return fill2d(dst, pitch, us, 2, Width, Height, NULL, false);
}
CUresult cuMemsetD2D16_v2_ptds(CUdeviceptr dst, size_t pitch, unsigned short us, size_t Width, size_t Height)
    XGPU_ALIAS(cuMemsetD2D16_v2);

CUresult cuMemsetD2D32(CUdeviceptr dst, size_t pitch, unsigned int ui, size_t Width, size_t Height)
{
	return fill2d(dst, pitch, ui, 4, Width, Height, NULL, false);
}
CUresult cuMemsetD2D32_v2_ptds(CUdeviceptr dst, size_t pitch, unsigned int ui, size_t Width, size_t Height)
    XGPU_ALIAS(cuMemsetD2D32_v2);

CUresult cuMemsetD2D8Async(CUdeviceptr dst, size_t pitch, unsigned char uc, size_t Width, size_t Height,
			   CUstream hStream)
{
	return fill2d(dst, pitch, uc, 1, Width, Height, hStream, true);
}
CUresult cuMemsetD2D8Async_ptsz(CUdeviceptr dst, size_t pitch, unsigned char uc, size_t Width, size_t Height,
				CUstream hStream) XGPU_ALIAS(cuMemsetD2D8Async);

CUresult cuMemsetD2D16Async(CUdeviceptr dst, size_t pitch, unsigned short us, size_t Width, size_t Height,
			    CUstream hStream)
{
	return fill2d(dst, pitch, us, 2, Width, Height, hStream, true);
}
CUresult cuMemsetD2D16Async_ptsz(CUdeviceptr dst, size_t pitch, unsigned short us, size_t Width,
				 size_t Height, CUstream hStream) XGPU_ALIAS(cuMemsetD2D16Async);

CUresult cuMemsetD2D32Async(CUdeviceptr dst, size_t pitch, unsigned int ui, size_t Width, size_t Height,
			    CUstream hStream)
{
	return fill2d(dst, pitch, ui, 4, Width, Height, hStream, true);
}
CUresult cuMemsetD2D32Async_ptsz(CUdeviceptr dst, size_t pitch, unsigned int ui, size_t Width, size_t Height,
				 CUstream hStream) XGPU_ALIAS(cuMemsetD2D32Async);
