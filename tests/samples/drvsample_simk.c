/* SPDX-License-Identifier: Apache-2.0 */
/* drvsample_simk.c - host implementations of tests/data/drvsample_kernels.cu,
 * for tests/samples/drvsample.c. */
#include "sample_simk.h"

static int work(const struct xgpu_simk_launch *l)
{
	uint64_t out;
	int32_t n, v;
	int64_t spin;
	if (xgpu_simk_param(l, 0, &out, 8) || xgpu_simk_param(l, 1, &n, 4) || xgpu_simk_param(l, 2, &v, 4) ||
	    xgpu_simk_param(l, 3, &spin, 8))
		return XGPU_SIMK_ERR_INVALID_VALUE;
	uint64_t count = n > 0 ? (uint64_t)n : 0;
	if (count > xgpu_simk_threads(l))
		count = xgpu_simk_threads(l);
	int32_t *p = count ? l->map(l, out, count * 4) : NULL;
	if (count && !p)
		return XGPU_SIMK_ERR_ILLEGAL_ADDRESS;
	for (uint64_t i = 0; i < count; i++)
		p[i] = v + (int32_t)i;
	return XGPU_SIMK_OK;
}

static uint64_t work_cost(const struct xgpu_simk_launch *l)
{
	int64_t spin;
	return xgpu_simk_param(l, 3, &spin, 8) || spin < 0 ? 0 : (uint64_t)spin;
}

static int tex(const struct xgpu_simk_launch *l)
{
	uint64_t t, out;
	int32_t w, h;
	if (xgpu_simk_param(l, 0, &t, 8) || xgpu_simk_param(l, 1, &out, 8) || xgpu_simk_param(l, 2, &w, 4) ||
	    xgpu_simk_param(l, 3, &h, 4) || w < 0 || h < 0)
		return XGPU_SIMK_ERR_INVALID_VALUE;
	uint64_t nx = (uint64_t)l->grid[0] * l->block[0], ny = (uint64_t)l->grid[1] * l->block[1];
	nx = nx < (uint64_t)w ? nx : (uint64_t)w;
	ny = ny < (uint64_t)h ? ny : (uint64_t)h;
	for (uint64_t y = 0; y < ny; y++)
		for (uint64_t x = 0; x < nx; x++) {
			float v;
			void *p;
			int r = xgpu_simk_tex2D_float(l, t, (float)x + 0.5f, (float)y + 0.5f, &v);
			if (!r)
				r = xgpu_simk_map(l, out + (y * (uint64_t)w + x) * 4, 4, 4, &p);
			if (r)
				return r;
			memcpy(p, &v, 4);
		}
	return XGPU_SIMK_OK;
}

static const struct xgpu_simk_kernel kernels[] = {
    {"ds_tex", tex, NULL},
    {"ds_work", work, work_cost},
    {"ds_coop", simk_coop_neighbours, NULL},
};
XGPU_SIMK_EXPORT(kernels);
