/* SPDX-License-Identifier: Apache-2.0 */
/* copy2d.h - pitched (2D) and 3D copies and the pitched memset, marshalled
 * the same way for both API layers (implemented in our libcuda.so.1, which
 * exports them to our libcudart.so.13). Host rows travel packed through the
 * data areas (MEMCPY_2D_HTOD / DTOH); device-to-device copies and memsets
 * are one request each, which the daemon bounds-checks row by row. */
#ifndef XGPU_FE_COPY2D_H
#define XGPU_FE_COPY2D_H

#include "client.h"

#include <stdbool.h>
#include <stdint.h>

enum xgpu_copy_kind { XGPU_COPY_HTOH, XGPU_COPY_HTOD, XGPU_COPY_DTOH, XGPU_COPY_DTOD };

/* height rows of width bytes; each side's rows are its pitch apart. dst and
 * src are host addresses or device pointers as kind says. */
struct xgpu_copy2d {
	int kind;
	uint64_t dst, dst_pitch, src, src_pitch;
	uint64_t width, height;
	xgpu_handle_t stream;
	bool async;
};

/* Returns cudaError_t (cudaErrorInvalidPitchValue for a pitch below the
 * width). */
int xgpu_copy2d(struct xgpu_client *c, const struct xgpu_copy2d *p);

/* depth slices of p's rows; each side's slices are its slice pitch apart. */
int xgpu_copy3d(struct xgpu_client *c, const struct xgpu_copy2d *p, uint64_t depth, uint64_t dst_slice,
		uint64_t src_slice);

/* Sets height rows of width bytes at dst, pitch apart, to the byte value. */
int xgpu_memset2d(struct xgpu_client *c, uint64_t dst, uint64_t pitch, uint8_t value, uint64_t width,
		  uint64_t height, xgpu_handle_t stream, bool async);

#endif
