/* SPDX-License-Identifier: Apache-2.0 */
/* array.c - CUDA arrays of the driver API (cuArrayCreate, cuArray3DCreate,
 * cuArrayDestroy, the descriptors, cuMemcpyHtoA/AtoH and the array sides of
 * cuMemcpy2D/3D), which our libcudart.so.13 uses as well.
 *
 * A CUarray is the daemon's handle of kind array, which the daemon checks on
 * every use; this library keeps each one's descriptor so that the
 * descriptor queries cost no round trip. The daemon copies only between
 * arrays and device memory: a host side is staged here through a temporary
 * device buffer, so such a copy waits for its data even in its Async form.
 * Texture and surface objects (cuTexObjectCreate, cuSurfObjectCreate) are
 * here too: their value is the one kernels receive. */
#include "allocs.h"
#include "copy2d.h"
#include "driver.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct known_array {
	xgpu_handle_t handle;
	CUDA_ARRAY3D_DESCRIPTOR desc;
};

static pthread_mutex_t arrays_lock = PTHREAD_MUTEX_INITIALIZER;
static struct known_array *arrays;
static size_t narrays, arrays_cap;

static bool array_lookup(CUarray a, CUDA_ARRAY3D_DESCRIPTOR *desc)
{
	bool found = false;
	pthread_mutex_lock(&arrays_lock);
	for (size_t i = 0; i < narrays && !found; i++)
		if (arrays[i].handle == (xgpu_handle_t)(uintptr_t)a) {
			if (desc)
				*desc = arrays[i].desc;
			found = true;
		}
	pthread_mutex_unlock(&arrays_lock);
	return found;
}

static bool array_remember(xgpu_handle_t h, const CUDA_ARRAY3D_DESCRIPTOR *d)
{
	bool ok = true;
	pthread_mutex_lock(&arrays_lock);
	if (narrays == arrays_cap) {
		size_t cap = arrays_cap ? arrays_cap * 2 : 16;
		struct known_array *v = realloc(arrays, cap * sizeof *v);
		if (v) {
			arrays = v;
			arrays_cap = cap;
		}
		ok = v != NULL;
	}
	if (ok)
		arrays[narrays++] = (struct known_array){h, *d};
	pthread_mutex_unlock(&arrays_lock);
	return ok;
}

static void array_forget(CUarray a)
{
	pthread_mutex_lock(&arrays_lock);
	for (size_t i = 0; i < narrays; i++)
		if (arrays[i].handle == (xgpu_handle_t)(uintptr_t)a) {
			arrays[i] = arrays[--narrays];
			break;
		}
	pthread_mutex_unlock(&arrays_lock);
}

/* Bytes of one element (every channel) of d; 0 for a format not offered. */
static uint64_t element_bytes(const CUDA_ARRAY3D_DESCRIPTOR *d)
{
	switch (d->Format) {
	case CU_AD_FORMAT_UNSIGNED_INT8:
	case CU_AD_FORMAT_SIGNED_INT8:
		return d->NumChannels;
	case CU_AD_FORMAT_UNSIGNED_INT16:
	case CU_AD_FORMAT_SIGNED_INT16:
	case CU_AD_FORMAT_HALF:
		return 2ull * d->NumChannels;
	case CU_AD_FORMAT_UNSIGNED_INT32:
	case CU_AD_FORMAT_SIGNED_INT32:
	case CU_AD_FORMAT_FLOAT:
		return 4ull * d->NumChannels;
	default:
		return 0;
	}
}

CUresult cuArray3DCreate(CUarray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *d)
{
	if (!pHandle || !d)
		return CUDA_ERROR_INVALID_VALUE;
	if (d->Format != CU_AD_FORMAT_UNSIGNED_INT8 && d->Format != CU_AD_FORMAT_SIGNED_INT8 &&
	    d->Format != CU_AD_FORMAT_UNSIGNED_INT16 && d->Format != CU_AD_FORMAT_SIGNED_INT16 &&
	    d->Format != CU_AD_FORMAT_HALF && d->Format != CU_AD_FORMAT_UNSIGNED_INT32 &&
	    d->Format != CU_AD_FORMAT_SIGNED_INT32 && d->Format != CU_AD_FORMAT_FLOAT)
		return xgpu_drv_unsupported("cuArray3DCreate (block-compressed or video formats)");
	if (d->Flags & (CUDA_ARRAY3D_SPARSE | CUDA_ARRAY3D_DEFERRED_MAPPING | CUDA_ARRAY3D_COLOR_ATTACHMENT |
			CUDA_ARRAY3D_DEPTH_TEXTURE))
		return xgpu_drv_unsupported("cuArray3DCreate (sparse, deferred, depth or color arrays)");
	struct xgpu_client *c;
	CUresult r = xgpu_drv_client_ctx(&c);
	if (r)
		return r;
	struct xgpu_req_ARRAY_CREATE req = {.format = d->Format,
					    .channels = d->NumChannels,
					    .width = d->Width,
					    .height = d->Height,
					    .depth = d->Depth,
					    .flags = d->Flags};
	struct xgpu_rsp_ARRAY_CREATE rsp;
	r = xgpu_drv_result(xgpu_call_ARRAY_CREATE(c, &req, &rsp));
	if (r)
		return r;
	if (!array_remember(rsp.array, d)) {
		struct xgpu_req_ARRAY_DESTROY dq = {.array = rsp.array};
		struct xgpu_rsp_ARRAY_DESTROY ds;
		xgpu_call_ARRAY_DESTROY(c, &dq, &ds);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	*pHandle = (CUarray)(uintptr_t)rsp.array;
	return CUDA_SUCCESS;
}

CUresult cuArrayCreate(CUarray *pHandle, const CUDA_ARRAY_DESCRIPTOR *d)
{
	if (!d)
		return CUDA_ERROR_INVALID_VALUE;
	CUDA_ARRAY3D_DESCRIPTOR d3 = {
	    .Width = d->Width, .Height = d->Height, .Format = d->Format, .NumChannels = d->NumChannels};
	return cuArray3DCreate(pHandle, &d3);
}

CUresult cuArrayDestroy(CUarray a)
{
	struct xgpu_client *c;
	CUresult r = xgpu_drv_client_ctx(&c);
	if (r)
		return r;
	struct xgpu_req_ARRAY_DESTROY req = {.array = (xgpu_handle_t)(uintptr_t)a};
	struct xgpu_rsp_ARRAY_DESTROY rsp;
	r = xgpu_drv_result(xgpu_call_ARRAY_DESTROY(c, &req, &rsp));
	if (r != CUDA_ERROR_INVALID_HANDLE)
		array_forget(a);
	return r;
}

CUresult cuArray3DGetDescriptor(CUDA_ARRAY3D_DESCRIPTOR *out, CUarray a)
{
	if (!out)
		return CUDA_ERROR_INVALID_VALUE;
	return array_lookup(a, out) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

CUresult cuArrayGetDescriptor(CUDA_ARRAY_DESCRIPTOR *out, CUarray a)
{
	CUDA_ARRAY3D_DESCRIPTOR d;
	if (!out)
		return CUDA_ERROR_INVALID_VALUE;
	if (!array_lookup(a, &d))
		return CUDA_ERROR_INVALID_HANDLE;
	*out = (CUDA_ARRAY_DESCRIPTOR){
	    .Width = d.Width, .Height = d.Height, .Format = d.Format, .NumChannels = d.NumChannels};
	return CUDA_SUCCESS;
}

/* One side of a copy as the wire carries it; host is set for host memory
 * (addr its first byte, pitch and slice_rows its layout). */
struct array_side {
	bool array, host;
	uint64_t ref, a, b; /* array: handle, x, y; device: address, pitch, slice rows */
	uint32_t z;
};

static CUresult side_of(CUmemorytype type, const void *host, CUdeviceptr dev, CUarray array, size_t x,
			size_t y, size_t z, size_t pitch, size_t slice_rows, struct array_side *s)
{
	uint64_t rows, off, base;
	*s = (struct array_side){0};
	switch (type) {
	case CU_MEMORYTYPE_ARRAY:
		if (!array_lookup(array, NULL))
			return CUDA_ERROR_INVALID_HANDLE;
		if (z > UINT32_MAX)
			return CUDA_ERROR_INVALID_VALUE;
		*s = (struct array_side){
		    .array = true, .ref = (xgpu_handle_t)(uintptr_t)array, .a = x, .b = y, .z = (uint32_t)z};
		return CUDA_SUCCESS;
	case CU_MEMORYTYPE_HOST:
		/* Managed memory is copied as the device's, as pitch.c does. */
		base = (uintptr_t)host;
		s->host = !xgpu_alloc_is_managed(base);
		break;
	case CU_MEMORYTYPE_DEVICE:
		base = dev;
		break;
	case CU_MEMORYTYPE_UNIFIED:
		base = dev;
		s->host = !xgpu_alloc_on_device(dev);
		break;
	default:
		return CUDA_ERROR_INVALID_VALUE;
	}
	if (__builtin_mul_overflow((uint64_t)z, (uint64_t)slice_rows, &rows) ||
	    __builtin_add_overflow(rows, (uint64_t)y, &rows) ||
	    __builtin_mul_overflow(rows, (uint64_t)pitch, &off) ||
	    __builtin_add_overflow(off, (uint64_t)x, &off) || __builtin_add_overflow(base, off, &s->ref))
		return CUDA_ERROR_INVALID_VALUE;
	s->a = pitch;
	s->b = slice_rows;
	return CUDA_SUCCESS;
}

static CUresult wire_copy(struct xgpu_client *c, const struct array_side *dst, const struct array_side *src,
			  uint64_t width, uint32_t height, uint32_t depth, CUstream stream, bool async)
{
	struct xgpu_req_ARRAY_COPY req = {.dst = dst->ref,
					  .dst_a = dst->a,
					  .dst_b = dst->b,
					  .dst_z = dst->z,
					  .src = src->ref,
					  .src_a = src->a,
					  .src_b = src->b,
					  .src_z = src->z,
					  .width = width,
					  .height = height,
					  .depth = depth,
					  .stream = xgpu_drv_stream(stream),
					  .flags = (async ? XGPU_COPY_ASYNC : 0) |
						   (dst->array ? XGPU_ARRAY_COPY_DST_ARRAY : 0) |
						   (src->array ? XGPU_ARRAY_COPY_SRC_ARRAY : 0)};
	struct xgpu_rsp_ARRAY_COPY rsp;
	return xgpu_drv_result(xgpu_call_ARRAY_COPY(c, &req, &rsp));
}

CUresult xgpu_drv_array_copy3d(const CUDA_MEMCPY3D *p, CUstream stream, bool async)
{
	struct xgpu_client *c;
	CUresult r = xgpu_drv_client_ctx(&c);
	if (r)
		return r;
	if (p->srcLOD || p->dstLOD || p->reserved0 || p->reserved1)
		return CUDA_ERROR_INVALID_VALUE;
	struct array_side dst, src;
	if ((r = side_of(p->srcMemoryType, p->srcHost, p->srcDevice, p->srcArray, p->srcXInBytes, p->srcY,
			 p->srcZ, p->srcPitch, p->srcHeight, &src)) ||
	    (r = side_of(p->dstMemoryType, p->dstHost, p->dstDevice, p->dstArray, p->dstXInBytes, p->dstY,
			 p->dstZ, p->dstPitch, p->dstHeight, &dst)))
		return r;
	size_t width = p->WidthInBytes, height = p->Height ? p->Height : 1, depth = p->Depth ? p->Depth : 1;
	if (height > UINT32_MAX || depth > UINT32_MAX)
		return CUDA_ERROR_INVALID_VALUE;
	if (!width)
		return CUDA_SUCCESS;
	if (!src.host && !dst.host)
		return wire_copy(c, &dst, &src, width, (uint32_t)height, (uint32_t)depth, stream, async);
	if (src.host && dst.host)
		return CUDA_ERROR_INVALID_VALUE;
	/* Host memory goes through a packed device buffer. */
	size_t bytes;
	if (__builtin_mul_overflow(width, height, &bytes) || __builtin_mul_overflow(bytes, depth, &bytes))
		return CUDA_ERROR_INVALID_VALUE;
	CUdeviceptr tmp;
	if ((r = cuMemAlloc(&tmp, bytes)))
		return r;
	struct array_side packed = {.ref = tmp, .a = width, .b = height};
	struct array_side *host = src.host ? &src : &dst;
	struct xgpu_copy2d rows = {.kind = src.host ? XGPU_COPY_HTOD : XGPU_COPY_DTOH,
				   .dst = src.host ? tmp : dst.ref,
				   .dst_pitch = src.host ? width : host->a,
				   .src = src.host ? src.ref : tmp,
				   .src_pitch = src.host ? host->a : width,
				   .width = width,
				   .height = height,
				   .stream = xgpu_drv_stream(stream),
				   .async = false};
	uint64_t host_slice, tmp_slice = (uint64_t)width * height;
	if (__builtin_mul_overflow(host->a, host->b, &host_slice))
		r = CUDA_ERROR_INVALID_VALUE;
	else if (src.host) {
		r = xgpu_drv_result(xgpu_copy3d(c, &rows, depth, tmp_slice, host_slice));
		if (!r)
			r = wire_copy(c, &dst, &packed, width, (uint32_t)height, (uint32_t)depth, stream,
				      false);
	} else {
		r = wire_copy(c, &packed, &src, width, (uint32_t)height, (uint32_t)depth, stream, false);
		if (!r)
			r = xgpu_drv_result(xgpu_copy3d(c, &rows, depth, host_slice, tmp_slice));
	}
	CUresult f = cuMemFree(tmp);
	return r ? r : f;
}

/* A byte range of an array's first row (cuMemcpyHtoA, cuMemcpyAtoH and the
 * like): NVIDIA's driver 580 refuses one reaching past it with
 * CUDA_ERROR_INVALID_VALUE (seen on an H100; the copy functions with a
 * linear offset are for 1D arrays). mem is host or device memory as type
 * says. */
CUresult xgpu_drv_array_linear(CUarray a, size_t offset, CUmemorytype type, uint64_t mem, size_t count,
			       bool to_array, CUstream stream, bool async)
{
	CUDA_ARRAY3D_DESCRIPTOR d;
	if (!array_lookup(a, &d))
		return CUDA_ERROR_INVALID_HANDLE;
	uint64_t row = d.Width * element_bytes(&d);
	if (!row || offset > row || count > row - offset)
		return CUDA_ERROR_INVALID_VALUE;
	if (!count)
		return CUDA_SUCCESS;
	CUDA_MEMCPY3D p = {.WidthInBytes = count, .Height = 1, .Depth = 1};
	if (to_array) {
		p.dstMemoryType = CU_MEMORYTYPE_ARRAY;
		p.dstArray = a;
		p.dstXInBytes = offset;
		p.srcMemoryType = type;
		p.srcHost = (const void *)(uintptr_t)mem;
		p.srcDevice = mem;
		p.srcPitch = count;
	} else {
		p.srcMemoryType = CU_MEMORYTYPE_ARRAY;
		p.srcArray = a;
		p.srcXInBytes = offset;
		p.dstMemoryType = type;
		p.dstHost = (void *)(uintptr_t)mem;
		p.dstDevice = mem;
		p.dstPitch = count;
	}
	return xgpu_drv_array_copy3d(&p, stream, async);
}

CUresult cuMemcpyHtoA(CUarray dstArray, size_t dstOffset, const void *srcHost, size_t ByteCount)
{
	return xgpu_drv_array_linear(dstArray, dstOffset, CU_MEMORYTYPE_HOST, (uintptr_t)srcHost, ByteCount,
				     true, NULL, false);
}

CUresult cuMemcpyAtoH(void *dstHost, CUarray srcArray, size_t srcOffset, size_t ByteCount)
{
	return xgpu_drv_array_linear(srcArray, srcOffset, CU_MEMORYTYPE_HOST, (uintptr_t)dstHost, ByteCount,
				     false, NULL, false);
}

CUresult cuMemcpyHtoAAsync(CUarray dstArray, size_t dstOffset, const void *srcHost, size_t ByteCount,
			   CUstream hStream)
{
	return xgpu_drv_array_linear(dstArray, dstOffset, CU_MEMORYTYPE_HOST, (uintptr_t)srcHost, ByteCount,
				     true, hStream, true);
}

CUresult cuMemcpyAtoHAsync(void *dstHost, CUarray srcArray, size_t srcOffset, size_t ByteCount,
			   CUstream hStream)
{
	return xgpu_drv_array_linear(srcArray, srcOffset, CU_MEMORYTYPE_HOST, (uintptr_t)dstHost, ByteCount,
				     false, hStream, true);
}

CUresult cuMemcpyDtoA(CUarray dstArray, size_t dstOffset, CUdeviceptr srcDevice, size_t ByteCount)
{
	return xgpu_drv_array_linear(dstArray, dstOffset, CU_MEMORYTYPE_DEVICE, srcDevice, ByteCount, true,
				     NULL, false);
}

CUresult cuMemcpyAtoD(CUdeviceptr dstDevice, CUarray srcArray, size_t srcOffset, size_t ByteCount)
{
	return xgpu_drv_array_linear(srcArray, srcOffset, CU_MEMORYTYPE_DEVICE, dstDevice, ByteCount, false,
				     NULL, false);
}

/* ---- texture and surface objects ---------------------------------------------- */

/* The value kernels receive is the daemon's driver's; destroying one names
 * the daemon's handle, and the descriptions are kept for the queries. */
struct known_object {
	uint64_t value;
	xgpu_handle_t handle;
	bool surface;
	CUDA_RESOURCE_DESC res;
	CUDA_TEXTURE_DESC tex;
};

static struct known_object *objects;
static size_t nobjects, objects_cap;

static bool object_remember(const struct known_object *o)
{
	bool ok = true;
	pthread_mutex_lock(&arrays_lock);
	if (nobjects == objects_cap) {
		size_t cap = objects_cap ? objects_cap * 2 : 16;
		struct known_object *v = realloc(objects, cap * sizeof *v);
		if (v) {
			objects = v;
			objects_cap = cap;
		}
		ok = v != NULL;
	}
	if (ok)
		objects[nobjects++] = *o;
	pthread_mutex_unlock(&arrays_lock);
	return ok;
}

/* The object value names (removed when take), or false. */
static bool object_lookup(uint64_t value, bool surface, bool take, struct known_object *out)
{
	bool found = false;
	pthread_mutex_lock(&arrays_lock);
	for (size_t i = 0; i < nobjects && !found; i++)
		if (objects[i].value == value && objects[i].surface == surface) {
			*out = objects[i];
			if (take)
				objects[i] = objects[--nobjects];
			found = true;
		}
	pthread_mutex_unlock(&arrays_lock);
	return found;
}

CUresult cuTexObjectCreate(CUtexObject *pTexObject, const CUDA_RESOURCE_DESC *pResDesc,
			   const CUDA_TEXTURE_DESC *pTexDesc, const CUDA_RESOURCE_VIEW_DESC *pResViewDesc)
{
	if (!pTexObject || !pResDesc || !pTexDesc)
		return CUDA_ERROR_INVALID_VALUE;
	if (pResViewDesc)
		return xgpu_drv_unsupported("cuTexObjectCreate (resource views)");
	if (pTexDesc->maxAnisotropy > 1 || pTexDesc->mipmapLevelBias != 0 ||
	    pTexDesc->maxMipmapLevelClamp != 0)
		return xgpu_drv_unsupported("cuTexObjectCreate (anisotropy or mipmaps)");
	struct xgpu_client *c;
	CUresult r = xgpu_drv_client_ctx(&c);
	if (r)
		return r;
	struct xgpu_req_TEXOBJ_CREATE req = {.res_type = pResDesc->resType,
					     .filter = pTexDesc->filterMode,
					     .flags = pTexDesc->flags,
					     .border0 = pTexDesc->borderColor[0],
					     .border1 = pTexDesc->borderColor[1],
					     .border2 = pTexDesc->borderColor[2],
					     .border3 = pTexDesc->borderColor[3]};
	for (int i = 0; i < 3; i++) {
		if ((unsigned)pTexDesc->addressMode[i] > 0xff)
			return CUDA_ERROR_INVALID_VALUE;
		req.address_modes |= (uint32_t)pTexDesc->addressMode[i] << (8 * i);
	}
	CUDA_ARRAY3D_DESCRIPTOR fd = {0};
	switch (pResDesc->resType) {
	case CU_RESOURCE_TYPE_ARRAY:
		if (!array_lookup(pResDesc->res.array.hArray, NULL))
			return CUDA_ERROR_INVALID_HANDLE;
		req.res = (xgpu_handle_t)(uintptr_t)pResDesc->res.array.hArray;
		break;
	case CU_RESOURCE_TYPE_LINEAR:
		fd = (CUDA_ARRAY3D_DESCRIPTOR){.Format = pResDesc->res.linear.format,
					       .NumChannels = pResDesc->res.linear.numChannels};
		if (!element_bytes(&fd))
			return CUDA_ERROR_INVALID_VALUE;
		req.res = pResDesc->res.linear.devPtr;
		req.width = pResDesc->res.linear.sizeInBytes / element_bytes(&fd);
		req.format = fd.Format;
		req.channels = fd.NumChannels;
		break;
	case CU_RESOURCE_TYPE_PITCH2D:
		req.res = pResDesc->res.pitch2D.devPtr;
		req.width = pResDesc->res.pitch2D.width;
		req.height = pResDesc->res.pitch2D.height;
		req.pitch = pResDesc->res.pitch2D.pitchInBytes;
		req.format = pResDesc->res.pitch2D.format;
		req.channels = pResDesc->res.pitch2D.numChannels;
		break;
	case CU_RESOURCE_TYPE_MIPMAPPED_ARRAY:
		return xgpu_drv_unsupported("cuTexObjectCreate (mipmapped arrays)");
	default:
		return CUDA_ERROR_INVALID_VALUE;
	}
	struct xgpu_rsp_TEXOBJ_CREATE rsp;
	r = xgpu_drv_result(xgpu_call_TEXOBJ_CREATE(c, &req, &rsp));
	if (r)
		return r;
	struct known_object o = {
	    .value = rsp.object, .handle = rsp.handle, .res = *pResDesc, .tex = *pTexDesc};
	if (!object_remember(&o)) {
		struct xgpu_req_TEXOBJ_DESTROY dq = {.handle = rsp.handle};
		struct xgpu_rsp_TEXOBJ_DESTROY ds;
		xgpu_call_TEXOBJ_DESTROY(c, &dq, &ds);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	*pTexObject = rsp.object;
	return CUDA_SUCCESS;
}

CUresult cuTexObjectDestroy(CUtexObject texObject)
{
	struct xgpu_client *c;
	CUresult r = xgpu_drv_client_ctx(&c);
	if (r)
		return r;
	struct known_object o;
	if (!object_lookup(texObject, false, true, &o))
		return CUDA_ERROR_INVALID_VALUE;
	struct xgpu_req_TEXOBJ_DESTROY req = {.handle = o.handle};
	struct xgpu_rsp_TEXOBJ_DESTROY rsp;
	return xgpu_drv_result(xgpu_call_TEXOBJ_DESTROY(c, &req, &rsp));
}

CUresult cuTexObjectGetResourceDesc(CUDA_RESOURCE_DESC *pResDesc, CUtexObject texObject)
{
	struct known_object o;
	if (!pResDesc || !object_lookup(texObject, false, false, &o))
		return CUDA_ERROR_INVALID_VALUE;
	*pResDesc = o.res;
	return CUDA_SUCCESS;
}

CUresult cuTexObjectGetTextureDesc(CUDA_TEXTURE_DESC *pTexDesc, CUtexObject texObject)
{
	struct known_object o;
	if (!pTexDesc || !object_lookup(texObject, false, false, &o))
		return CUDA_ERROR_INVALID_VALUE;
	*pTexDesc = o.tex;
	return CUDA_SUCCESS;
}

CUresult cuSurfObjectCreate(CUsurfObject *pSurfObject, const CUDA_RESOURCE_DESC *pResDesc)
{
	if (!pSurfObject || !pResDesc || pResDesc->resType != CU_RESOURCE_TYPE_ARRAY)
		return CUDA_ERROR_INVALID_VALUE;
	if (!array_lookup(pResDesc->res.array.hArray, NULL))
		return CUDA_ERROR_INVALID_HANDLE;
	struct xgpu_client *c;
	CUresult r = xgpu_drv_client_ctx(&c);
	if (r)
		return r;
	struct xgpu_req_SURFOBJ_CREATE req = {.array = (xgpu_handle_t)(uintptr_t)pResDesc->res.array.hArray};
	struct xgpu_rsp_SURFOBJ_CREATE rsp;
	r = xgpu_drv_result(xgpu_call_SURFOBJ_CREATE(c, &req, &rsp));
	if (r)
		return r;
	struct known_object o = {
	    .value = rsp.object, .handle = rsp.handle, .surface = true, .res = *pResDesc};
	if (!object_remember(&o)) {
		struct xgpu_req_SURFOBJ_DESTROY dq = {.handle = rsp.handle};
		struct xgpu_rsp_SURFOBJ_DESTROY ds;
		xgpu_call_SURFOBJ_DESTROY(c, &dq, &ds);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	*pSurfObject = rsp.object;
	return CUDA_SUCCESS;
}

CUresult cuSurfObjectDestroy(CUsurfObject surfObject)
{
	struct xgpu_client *c;
	CUresult r = xgpu_drv_client_ctx(&c);
	if (r)
		return r;
	struct known_object o;
	if (!object_lookup(surfObject, true, true, &o))
		return CUDA_ERROR_INVALID_VALUE;
	struct xgpu_req_SURFOBJ_DESTROY req = {.handle = o.handle};
	struct xgpu_rsp_SURFOBJ_DESTROY rsp;
	return xgpu_drv_result(xgpu_call_SURFOBJ_DESTROY(c, &req, &rsp));
}

CUresult cuSurfObjectGetResourceDesc(CUDA_RESOURCE_DESC *pResDesc, CUsurfObject surfObject)
{
	struct known_object o;
	if (!pResDesc || !object_lookup(surfObject, true, false, &o))
		return CUDA_ERROR_INVALID_VALUE;
	*pResDesc = o.res;
	return CUDA_SUCCESS;
}
