/* SPDX-License-Identifier: Apache-2.0 */
/* copy2d.c - pitched and 3D copies and the pitched memset for both API
 * layers (copy2d.h). Host rows are packed into a bounded buffer (or sent
 * straight from the program's memory when they are already contiguous), so
 * a copy of any size costs a few requests rather than one per row. */
#include "copy2d.h"

#include <cuda_runtime_api.h>
#include <stdlib.h>
#include <string.h>

/* The most packed bytes one request carries: bounds the guest's buffer. */
#define PACK_LIMIT ((uint64_t)64 << 20)

static bool rows_extent(uint64_t pitch, uint64_t width, uint64_t height, uint64_t *span)
{
	return !__builtin_mul_overflow(height - 1, pitch, span) &&
	       !__builtin_add_overflow(*span, width, span);
}

static int host_to_device(struct xgpu_client *c, const struct xgpu_copy2d *p, uint64_t row0, uint64_t rows)
{
	uint64_t total = p->width * rows; /* bounded by PACK_LIMIT or contiguous */
	const uint8_t *src = (const uint8_t *)(uintptr_t)p->src + row0 * p->src_pitch;
	uint8_t *packed = NULL;
	if (p->src_pitch != p->width && rows > 1) {
		packed = malloc(total);
		if (!packed)
			return cudaErrorMemoryAllocation;
		for (uint64_t i = 0; i < rows; i++)
			memcpy(packed + i * p->width, src + i * p->src_pitch, p->width);
	}
	struct xgpu_req_MEMCPY_2D_HTOD req = {.dst = p->dst + row0 * p->dst_pitch,
					      .dst_pitch = p->dst_pitch,
					      .width = p->width,
					      .height = rows,
					      .stream = p->stream,
					      .flags = p->async ? XGPU_COPY_ASYNC : 0};
	struct xgpu_rsp_MEMCPY_2D_HTOD rsp;
	struct xgpu_rpc r = xgpu_rpc_MEMCPY_2D_HTOD(&req, &rsp);
	r.out = packed ? packed : src;
	r.out_len = total;
	int e = xgpu_rpc(c, &r);
	free(packed);
	return e;
}

static int device_to_host(struct xgpu_client *c, const struct xgpu_copy2d *p, uint64_t row0, uint64_t rows)
{
	uint64_t total = p->width * rows;
	uint8_t *dst = (uint8_t *)(uintptr_t)p->dst + row0 * p->dst_pitch;
	uint8_t *packed = NULL;
	if (p->dst_pitch != p->width && rows > 1) {
		packed = malloc(total);
		if (!packed)
			return cudaErrorMemoryAllocation;
	}
	/* Into pageable memory the copy has landed when it returns, async or
	 * not, as in CUDA. */
	struct xgpu_req_MEMCPY_2D_DTOH req = {.src = p->src + row0 * p->src_pitch,
					      .src_pitch = p->src_pitch,
					      .width = p->width,
					      .height = rows,
					      .stream = p->stream};
	struct xgpu_rsp_MEMCPY_2D_DTOH rsp;
	struct xgpu_rpc r = xgpu_rpc_MEMCPY_2D_DTOH(&req, &rsp);
	r.in = packed ? packed : dst;
	r.in_max = total;
	int e = xgpu_rpc(c, &r);
	if (!e && r.in_len != total)
		e = cudaErrorUnknown;
	if (!e && packed)
		for (uint64_t i = 0; i < rows; i++)
			memcpy(dst + i * p->dst_pitch, packed + i * p->width, p->width);
	free(packed);
	return e;
}

int xgpu_copy2d(struct xgpu_client *c, const struct xgpu_copy2d *p)
{
	if (!p->width || !p->height)
		return cudaSuccess;
	if (p->height > 1 && (p->dst_pitch < p->width || p->src_pitch < p->width))
		return cudaErrorInvalidPitchValue;
	uint64_t dspan, sspan;
	if (!rows_extent(p->dst_pitch, p->width, p->height, &dspan) ||
	    !rows_extent(p->src_pitch, p->width, p->height, &sspan) || !p->dst || !p->src)
		return cudaErrorInvalidValue;
	switch (p->kind) {
	case XGPU_COPY_HTOH: {
		/* Ordered after the stream's work, as CUDA orders it. */
		if (p->async) {
			struct xgpu_req_STREAM_SYNC rq = {.stream = p->stream};
			struct xgpu_rsp_STREAM_SYNC rs;
			int e = xgpu_call_STREAM_SYNC(c, &rq, &rs);
			if (e)
				return e;
		}
		for (uint64_t i = 0; i < p->height; i++)
			memmove((uint8_t *)(uintptr_t)p->dst + i * p->dst_pitch,
				(const uint8_t *)(uintptr_t)p->src + i * p->src_pitch, p->width);
		return cudaSuccess;
	}
	case XGPU_COPY_HTOD:
	case XGPU_COPY_DTOH: {
		bool contiguous =
		    p->kind == XGPU_COPY_HTOD ? p->src_pitch == p->width : p->dst_pitch == p->width;
		uint64_t batch = contiguous ? p->height : PACK_LIMIT / p->width;
		if (!batch)
			batch = 1;
		int e = cudaSuccess;
		for (uint64_t row = 0; row < p->height && !e; row += batch) {
			uint64_t rows = p->height - row < batch ? p->height - row : batch;
			e = p->kind == XGPU_COPY_HTOD ? host_to_device(c, p, row, rows)
						      : device_to_host(c, p, row, rows);
		}
		return e;
	}
	case XGPU_COPY_DTOD: {
		struct xgpu_req_MEMCPY_2D_DTOD req = {.dst = p->dst,
						      .dst_pitch = p->dst_pitch,
						      .src = p->src,
						      .src_pitch = p->src_pitch,
						      .width = p->width,
						      .height = p->height,
						      .stream = p->stream,
						      .flags = p->async ? XGPU_COPY_ASYNC : 0};
		struct xgpu_rsp_MEMCPY_2D_DTOD rsp;
		return xgpu_call_MEMCPY_2D_DTOD(c, &req, &rsp);
	}
	default:
		return cudaErrorInvalidMemcpyDirection;
	}
}

int xgpu_copy3d(struct xgpu_client *c, const struct xgpu_copy2d *p, uint64_t depth, uint64_t dst_slice,
		uint64_t src_slice)
{
	if (!depth || !p->width || !p->height)
		return cudaSuccess;
	uint64_t rows;
	/* Slices that follow on from each other's rows are one 2D copy. */
	if (depth == 1 || (dst_slice == p->dst_pitch * p->height && src_slice == p->src_pitch * p->height &&
			   !__builtin_mul_overflow(p->height, depth, &rows))) {
		struct xgpu_copy2d all = *p;
		all.height = depth == 1 ? p->height : rows;
		return xgpu_copy2d(c, &all);
	}
	uint64_t dspan, sspan;
	if (p->height > 1 && (p->dst_pitch < p->width || p->src_pitch < p->width))
		return cudaErrorInvalidPitchValue;
	if (!rows_extent(p->dst_pitch, p->width, p->height, &dspan) ||
	    !rows_extent(p->src_pitch, p->width, p->height, &sspan) || dst_slice < dspan ||
	    src_slice < sspan || !rows_extent(dst_slice, dspan, depth, &dspan) ||
	    !rows_extent(src_slice, sspan, depth, &sspan))
		return cudaErrorInvalidValue;
	int e = cudaSuccess;
	for (uint64_t z = 0; z < depth && !e; z++) {
		struct xgpu_copy2d slice = *p;
		slice.dst += z * dst_slice;
		slice.src += z * src_slice;
		e = xgpu_copy2d(c, &slice);
	}
	return e;
}

int xgpu_memset2d(struct xgpu_client *c, uint64_t dst, uint64_t pitch, uint8_t value, uint64_t width,
		  uint64_t height, xgpu_handle_t stream, bool async)
{
	if (!width || !height)
		return cudaSuccess;
	if (height > 1 && pitch < width)
		return cudaErrorInvalidPitchValue;
	struct xgpu_req_MEMSET_2D req = {.dst = dst,
					 .pitch = pitch,
					 .value = value,
					 .width = width,
					 .height = height,
					 .stream = stream,
					 .flags = async ? XGPU_COPY_ASYNC : 0};
	struct xgpu_rsp_MEMSET_2D rsp;
	return xgpu_call_MEMSET_2D(c, &req, &rsp);
}
