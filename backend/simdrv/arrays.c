/* SPDX-License-Identifier: Apache-2.0 */
/* arrays.c - CUDA arrays of the simulated driver: an array is an ordinary
 * allocation of its context holding the elements packed (rows of width x
 * element bytes, slices of height rows), described in a registry here. The
 * CUarray is the registry's id, so a destroyed or made-up one is not found;
 * copies resolve each array side to its allocation and go through the
 * pitched device copy, which checks the addresses like every other copy.
 * Texture and surface objects live here too: what a host implementation
 * of a kernel sees of them (simkernel.h) and, again, ids as handles. */
#include "simdrv_int.h"

#include "ptx.h"
#include "simkernel.h"

#include <stdlib.h>
#include <string.h>

/* A live object; the id is the CUtexObject / CUsurfObject value kernels
 * receive, so a made-up or destroyed one is not found. */
struct sim_object {
	uint64_t id;
	const struct CUctx_st *ctx;
	int surface;
	struct xgpu_simk_texture t;
	uint32_t tex_flags;   /* CU_TRSF_* */
	uint32_t array_flags; /* CUDA_ARRAY3D_* of an array resource */
};

struct sim_array {
	uint64_t id;
	const struct CUctx_st *ctx;
	CUdeviceptr base;
	uint64_t width_bytes, height, depth; /* height, depth >= 1 */
	CUDA_ARRAY3D_DESCRIPTOR desc;
};

static pthread_mutex_t arrays_lock = PTHREAD_MUTEX_INITIALIZER;
static struct sim_array *arrays;
static size_t narrays, arrays_cap;
static uint64_t next_array_id = 0x4152000000000001ull; /* never a small integer */
static struct sim_object *objects;
static size_t nobjects, objects_cap;
static uint64_t next_object_id = 0x5458000000000001ull;

static uint64_t format_bytes(CUarray_format f)
{
	switch (f) {
	case CU_AD_FORMAT_UNSIGNED_INT8:
	case CU_AD_FORMAT_SIGNED_INT8:
		return 1;
	case CU_AD_FORMAT_UNSIGNED_INT16:
	case CU_AD_FORMAT_SIGNED_INT16:
	case CU_AD_FORMAT_HALF:
		return 2;
	case CU_AD_FORMAT_UNSIGNED_INT32:
	case CU_AD_FORMAT_SIGNED_INT32:
	case CU_AD_FORMAT_FLOAT:
		return 4;
	default:
		return 0;
	}
}

/* The array id names, copied out under the lock; false if none. */
bool sim_array_find(CUarray h, struct sim_array_info *out)
{
	bool found = false;
	pthread_mutex_lock(&arrays_lock);
	for (size_t i = 0; i < narrays; i++)
		if (arrays[i].id == (uint64_t)(uintptr_t)h) {
			*out = (struct sim_array_info){.base = arrays[i].base,
						       .width_bytes = arrays[i].width_bytes,
						       .height = arrays[i].height,
						       .depth = arrays[i].depth,
						       .desc = arrays[i].desc};
			found = true;
			break;
		}
	pthread_mutex_unlock(&arrays_lock);
	return found;
}

void sim_arrays_fini(void)
{
	pthread_mutex_lock(&arrays_lock);
	free(arrays);
	arrays = NULL;
	narrays = arrays_cap = 0;
	free(objects);
	objects = NULL;
	nobjects = objects_cap = 0;
	pthread_mutex_unlock(&arrays_lock);
}

void sim_arrays_release_ctx(const struct CUctx_st *ctx)
{
	pthread_mutex_lock(&arrays_lock);
	for (size_t i = narrays; i-- > 0;)
		if (arrays[i].ctx == ctx)
			arrays[i] = arrays[--narrays];
	for (size_t i = nobjects; i-- > 0;)
		if (objects[i].ctx == ctx)
			objects[i] = objects[--nobjects];
	pthread_mutex_unlock(&arrays_lock);
}

CUresult cuArray3DCreate(CUarray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *d)
{
	if (!pHandle || !d)
		return CUDA_ERROR_INVALID_VALUE;
	uint64_t elem = format_bytes(d->Format);
	if (!elem || (d->NumChannels != 1 && d->NumChannels != 2 && d->NumChannels != 4) || !d->Width)
		return CUDA_ERROR_INVALID_VALUE;
	uint64_t height = d->Height ? d->Height : 1, depth = d->Depth ? d->Depth : 1, row, bytes;
	if (__builtin_mul_overflow((uint64_t)d->Width, elem * d->NumChannels, &row) ||
	    __builtin_mul_overflow(row, height, &bytes) || __builtin_mul_overflow(bytes, depth, &bytes) ||
	    bytes > SIZE_MAX)
		return CUDA_ERROR_OUT_OF_MEMORY;
	CUdeviceptr base;
	CUresult r = cuMemAlloc(&base, (size_t)bytes);
	if (r)
		return r;
	struct CUctx_st *c;
	if ((r = sim_ctx_enter(&c, false))) {
		cuMemFree(base);
		return r;
	}
	sim_ctx_put(c); /* only its address is kept, to forget the array with it */
	pthread_mutex_lock(&arrays_lock);
	if (narrays == arrays_cap) {
		size_t cap = arrays_cap ? arrays_cap * 2 : 16;
		struct sim_array *v = realloc(arrays, cap * sizeof *v);
		if (!v) {
			pthread_mutex_unlock(&arrays_lock);
			cuMemFree(base);
			return CUDA_ERROR_OUT_OF_MEMORY;
		}
		arrays = v;
		arrays_cap = cap;
	}
	uint64_t id = next_array_id++;
	arrays[narrays++] = (struct sim_array){.id = id,
					       .ctx = c,
					       .base = base,
					       .width_bytes = row,
					       .height = height,
					       .depth = depth,
					       .desc = *d};
	pthread_mutex_unlock(&arrays_lock);
	*pHandle = (CUarray)(uintptr_t)id;
	return CUDA_SUCCESS;
}

/* cuMemFree waits for the work queued on the memory before releasing it. */
CUresult cuArrayDestroy(CUarray h)
{
	CUdeviceptr base = 0;
	pthread_mutex_lock(&arrays_lock);
	for (size_t i = 0; i < narrays; i++)
		if (arrays[i].id == (uint64_t)(uintptr_t)h) {
			base = arrays[i].base;
			arrays[i] = arrays[--narrays];
			break;
		}
	pthread_mutex_unlock(&arrays_lock);
	return base ? cuMemFree(base) : CUDA_ERROR_INVALID_HANDLE;
}

/* Where a side of a 3D copy starts in device memory, with its row and slice
 * pitches; an array side's box must lie inside the array. */
static CUresult copy_side(CUmemorytype type, CUdeviceptr dev, CUarray array, size_t pitch, size_t slice_rows,
			  size_t x, size_t y, size_t z, const CUDA_MEMCPY3D *p, CUdeviceptr *at,
			  uint64_t *row_pitch, uint64_t *slice_pitch)
{
	uint64_t off;
	if (type == CU_MEMORYTYPE_ARRAY) {
		struct sim_array_info a;
		if (!sim_array_find(array, &a))
			return CUDA_ERROR_INVALID_HANDLE;
		if (x > a.width_bytes || p->WidthInBytes > a.width_bytes - x || y > a.height ||
		    p->Height > a.height - y || z > a.depth || p->Depth > a.depth - z)
			return CUDA_ERROR_INVALID_VALUE;
		*row_pitch = a.width_bytes;
		*slice_pitch = a.width_bytes * a.height;
		*at = a.base + z * *slice_pitch + y * a.width_bytes + x;
		return CUDA_SUCCESS;
	}
	if (type != CU_MEMORYTYPE_DEVICE)
		return CUDA_ERROR_NOT_SUPPORTED; /* xgpud stages host memory itself */
	if (__builtin_mul_overflow((uint64_t)pitch, (uint64_t)slice_rows, slice_pitch) ||
	    __builtin_mul_overflow((uint64_t)z, (uint64_t)slice_rows, &off) ||
	    __builtin_add_overflow(off, (uint64_t)y, &off) ||
	    __builtin_mul_overflow(off, (uint64_t)pitch, &off) ||
	    __builtin_add_overflow(off, (uint64_t)x, &off) || __builtin_add_overflow(dev, off, at))
		return CUDA_ERROR_INVALID_VALUE;
	if (p->Depth > 1 && slice_rows < p->Height)
		return CUDA_ERROR_INVALID_VALUE;
	*row_pitch = pitch;
	return CUDA_SUCCESS;
}

/* Between arrays and device memory, one pitched copy per slice. */
CUresult cuMemcpy3DAsync(const CUDA_MEMCPY3D *p, CUstream hStream)
{
	if (!p || p->srcLOD || p->dstLOD || p->reserved0 || p->reserved1)
		return CUDA_ERROR_INVALID_VALUE;
	CUdeviceptr src, dst;
	uint64_t spitch, dpitch, sslice, dslice;
	CUresult r = copy_side(p->srcMemoryType, p->srcDevice, p->srcArray, p->srcPitch, p->srcHeight,
			       p->srcXInBytes, p->srcY, p->srcZ, p, &src, &spitch, &sslice);
	if (!r)
		r = copy_side(p->dstMemoryType, p->dstDevice, p->dstArray, p->dstPitch, p->dstHeight,
			      p->dstXInBytes, p->dstY, p->dstZ, p, &dst, &dpitch, &dslice);
	for (size_t slice = 0; !r && slice < p->Depth; slice++) {
		CUDA_MEMCPY2D q = {.srcMemoryType = CU_MEMORYTYPE_DEVICE,
				   .srcDevice = src + slice * sslice,
				   .srcPitch = spitch,
				   .dstMemoryType = CU_MEMORYTYPE_DEVICE,
				   .dstDevice = dst + slice * dslice,
				   .dstPitch = dpitch,
				   .WidthInBytes = p->WidthInBytes,
				   .Height = p->Height};
		r = cuMemcpy2DAsync(&q, hStream);
	}
	return r;
}

/* ---- texture and surface objects ------------------------------------------------ */

bool sim_object_find(const struct CUctx_st *ctx, uint64_t id, int surface, struct xgpu_simk_texture *out)
{
	bool found = false;
	pthread_mutex_lock(&arrays_lock);
	for (size_t i = 0; i < nobjects && !found; i++)
		if (objects[i].id == id && objects[i].ctx == ctx && objects[i].surface == surface) {
			*out = objects[i].t;
			found = true;
		}
	pthread_mutex_unlock(&arrays_lock);
	return found;
}

bool sim_object_find_ptx(const struct CUctx_st *ctx, uint64_t id, int surface, struct ptx_tex *out)
{
	bool found = false;
	pthread_mutex_lock(&arrays_lock);
	for (size_t i = 0; i < nobjects && !found; i++)
		if (objects[i].id == id && objects[i].ctx == ctx && objects[i].surface == surface) {
			const struct sim_object *o = &objects[i];
			const struct xgpu_simk_texture *t = &o->t;
			*out = (struct ptx_tex){
			    .base = t->base,
			    .pitch = t->pitch,
			    .slice = t->slice ? t->slice : t->pitch * t->height,
			    .width = t->width,
			    .height = t->height,
			    .depth = t->depth,
			    .format = t->format,
			    .channels = t->channels,
			    .element_bytes = t->element_bytes,
			    .address_mode = {t->address_mode[0], t->address_mode[1], t->address_mode[2]},
			    .linear_filter = t->linear_filter,
			    .normalized = t->normalized,
			    .read_int = (o->tex_flags & CU_TRSF_READ_AS_INTEGER) != 0,
			    .layered = (o->array_flags & CUDA_ARRAY3D_LAYERED) != 0,
			    .cubemap = (o->array_flags & CUDA_ARRAY3D_CUBEMAP) != 0,
			};
			memcpy(out->border, t->border, sizeof out->border);
			found = true;
		}
	pthread_mutex_unlock(&arrays_lock);
	return found;
}

static CUresult object_add(int surface, const struct xgpu_simk_texture *t, uint32_t tex_flags,
			   uint32_t array_flags, uint64_t *id)
{
	struct CUctx_st *c;
	CUresult r = sim_ctx_enter(&c, false);
	if (r)
		return r;
	pthread_mutex_lock(&arrays_lock);
	if (nobjects == objects_cap) {
		size_t cap = objects_cap ? objects_cap * 2 : 16;
		struct sim_object *v = realloc(objects, cap * sizeof *v);
		if (!v)
			r = CUDA_ERROR_OUT_OF_MEMORY;
		else {
			objects = v;
			objects_cap = cap;
		}
	}
	if (!r) {
		*id = next_object_id++;
		objects[nobjects++] = (struct sim_object){.id = *id,
							  .ctx = c,
							  .surface = surface,
							  .t = *t,
							  .tex_flags = tex_flags,
							  .array_flags = array_flags};
	}
	pthread_mutex_unlock(&arrays_lock);
	sim_ctx_put(c);
	return r;
}

static CUresult object_del(uint64_t id, int surface)
{
	CUresult r = CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&arrays_lock);
	for (size_t i = 0; i < nobjects; i++)
		if (objects[i].id == id && objects[i].surface == surface) {
			objects[i] = objects[--nobjects];
			r = CUDA_SUCCESS;
			break;
		}
	pthread_mutex_unlock(&arrays_lock);
	return r;
}

/* The elements a resource description names. */
static CUresult resource_of(const CUDA_RESOURCE_DESC *d, struct xgpu_simk_texture *t)
{
	uint64_t elem;
	*t = (struct xgpu_simk_texture){.height = 1, .depth = 1};
	switch (d->resType) {
	case CU_RESOURCE_TYPE_ARRAY: {
		struct sim_array_info a;
		if (!sim_array_find(d->res.array.hArray, &a))
			return CUDA_ERROR_INVALID_HANDLE;
		t->base = a.base;
		t->pitch = a.width_bytes;
		t->slice = a.width_bytes * a.height;
		t->width = (uint32_t)a.desc.Width;
		t->height = (uint32_t)a.height;
		t->depth = (uint32_t)a.depth;
		t->format = a.desc.Format;
		t->channels = a.desc.NumChannels;
		break;
	}
	case CU_RESOURCE_TYPE_LINEAR:
		elem = format_bytes(d->res.linear.format) * d->res.linear.numChannels;
		if (!elem || d->res.linear.sizeInBytes / elem > UINT32_MAX)
			return CUDA_ERROR_INVALID_VALUE;
		t->base = d->res.linear.devPtr;
		t->width = (uint32_t)(d->res.linear.sizeInBytes / elem);
		t->pitch = d->res.linear.sizeInBytes;
		t->format = d->res.linear.format;
		t->channels = d->res.linear.numChannels;
		break;
	case CU_RESOURCE_TYPE_PITCH2D:
		elem = format_bytes(d->res.pitch2D.format) * d->res.pitch2D.numChannels;
		if (!elem || d->res.pitch2D.width > UINT32_MAX || d->res.pitch2D.height > UINT32_MAX)
			return CUDA_ERROR_INVALID_VALUE;
		t->base = d->res.pitch2D.devPtr;
		t->width = (uint32_t)d->res.pitch2D.width;
		t->height = (uint32_t)d->res.pitch2D.height;
		t->pitch = d->res.pitch2D.pitchInBytes;
		t->format = d->res.pitch2D.format;
		t->channels = d->res.pitch2D.numChannels;
		break;
	default:
		return CUDA_ERROR_NOT_SUPPORTED;
	}
	t->element_bytes = (uint32_t)(format_bytes((CUarray_format)t->format) * t->channels);
	if (!t->element_bytes || !t->width)
		return CUDA_ERROR_INVALID_VALUE;
	return CUDA_SUCCESS;
}

CUresult cuTexObjectCreate(CUtexObject *pTexObject, const CUDA_RESOURCE_DESC *pResDesc,
			   const CUDA_TEXTURE_DESC *pTexDesc, const CUDA_RESOURCE_VIEW_DESC *pResViewDesc)
{
	if (!pTexObject || !pResDesc || !pTexDesc)
		return CUDA_ERROR_INVALID_VALUE;
	if (pResViewDesc)
		return CUDA_ERROR_NOT_SUPPORTED;
	struct xgpu_simk_texture t;
	CUresult r = resource_of(pResDesc, &t);
	if (r)
		return r;
	for (int i = 0; i < 3; i++) {
		if ((unsigned)pTexDesc->addressMode[i] > CU_TR_ADDRESS_MODE_BORDER)
			return CUDA_ERROR_INVALID_VALUE;
		t.address_mode[i] = pTexDesc->addressMode[i];
	}
	t.linear_filter = pTexDesc->filterMode == CU_TR_FILTER_MODE_LINEAR;
	t.normalized = (pTexDesc->flags & CU_TRSF_NORMALIZED_COORDINATES) != 0;
	memcpy(t.border, pTexDesc->borderColor, sizeof t.border);
	struct sim_array_info a;
	uint32_t aflags =
	    pResDesc->resType == CU_RESOURCE_TYPE_ARRAY && sim_array_find(pResDesc->res.array.hArray, &a)
		? a.desc.Flags
		: 0;
	uint64_t id;
	r = object_add(0, &t, pTexDesc->flags, aflags, &id);
	if (!r)
		*pTexObject = id;
	return r;
}

CUresult cuTexObjectDestroy(CUtexObject texObject)
{
	return object_del(texObject, 0);
}

/* Surfaces are arrays made for load/store. */
CUresult cuSurfObjectCreate(CUsurfObject *pSurfObject, const CUDA_RESOURCE_DESC *pResDesc)
{
	if (!pSurfObject || !pResDesc || pResDesc->resType != CU_RESOURCE_TYPE_ARRAY)
		return CUDA_ERROR_INVALID_VALUE;
	struct sim_array_info a;
	if (!sim_array_find(pResDesc->res.array.hArray, &a))
		return CUDA_ERROR_INVALID_HANDLE;
	if (!(a.desc.Flags & CUDA_ARRAY3D_SURFACE_LDST))
		return CUDA_ERROR_INVALID_VALUE;
	struct xgpu_simk_texture t;
	CUresult r = resource_of(pResDesc, &t);
	uint64_t id;
	if (!r)
		r = object_add(1, &t, 0, a.desc.Flags, &id);
	if (!r)
		*pSurfObject = id;
	return r;
}

CUresult cuSurfObjectDestroy(CUsurfObject surfObject)
{
	return object_del(surfObject, 1);
}
