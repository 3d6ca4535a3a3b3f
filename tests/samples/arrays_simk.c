/* SPDX-License-Identifier: Apache-2.0 */
/* arrays_simk.c - host implementations of tests/samples/arrays.cu's
 * kernels, reading textures and writing surfaces through simkernel.h's
 * sampling helpers as the GPU's texture unit would. */
#include "simdrv/simkernel.h"

/* The threads of a 2D launch that fall inside w x h. */
static uint64_t extent(const struct xgpu_simk_launch *l, int dim, int32_t n)
{
	uint64_t threads = (uint64_t)l->grid[dim] * l->block[dim];
	return n <= 0 ? 0 : threads < (uint64_t)n ? threads : (uint64_t)n;
}

static int tex_transform(const struct xgpu_simk_launch *l)
{
	uint64_t tex, out;
	int32_t w, h, normalized;
	float shift;
	if (xgpu_simk_param(l, 0, &tex, 8) || xgpu_simk_param(l, 1, &out, 8) ||
	    xgpu_simk_param(l, 2, &w, 4) || xgpu_simk_param(l, 3, &h, 4) ||
	    xgpu_simk_param(l, 4, &shift, 4) || xgpu_simk_param(l, 5, &normalized, 4))
		return XGPU_SIMK_ERR_INVALID_VALUE;
	uint64_t nx = extent(l, 0, w), ny = extent(l, 1, h);
	for (uint64_t y = 0; y < ny; y++)
		for (uint64_t x = 0; x < nx; x++) {
			float u = (float)x + 0.5f + shift, v = (float)y + 0.5f, t;
			if (normalized) {
				u /= (float)w;
				v /= (float)h;
			}
			int r = xgpu_simk_tex2D_float(l, tex, u, v, &t);
			void *p;
			if (!r)
				r = xgpu_simk_map(l, out + (y * (uint64_t)w + x) * 4, 4, 4, &p);
			if (r)
				return r;
			float result = 2.0f * t + 1.0f;
			memcpy(p, &result, 4);
		}
	return XGPU_SIMK_OK;
}

static int surf_fill(const struct xgpu_simk_launch *l)
{
	uint64_t surf;
	int32_t w, h;
	if (xgpu_simk_param(l, 0, &surf, 8) || xgpu_simk_param(l, 1, &w, 4) || xgpu_simk_param(l, 2, &h, 4))
		return XGPU_SIMK_ERR_INVALID_VALUE;
	uint64_t nx = extent(l, 0, w), ny = extent(l, 1, h);
	for (uint64_t y = 0; y < ny; y++)
		for (uint64_t x = 0; x < nx; x++) {
			float in;
			int r = xgpu_simk_surf2Dread_float(l, surf, (int64_t)x * 4, (int64_t)y, &in);
			if (!r)
				r = xgpu_simk_surf2Dwrite_float(l, surf,
								in * 0.5f + (float)(x * 3 + y * 1000),
								(int64_t)x * 4, (int64_t)y);
			if (r)
				return r;
		}
	return XGPU_SIMK_OK;
}

static const struct xgpu_simk_kernel kernels[] = {
    {"tex_transform", tex_transform, NULL},
    {"surf_fill", surf_fill, NULL},
};
XGPU_SIMK_EXPORT(kernels);
