/* SPDX-License-Identifier: Apache-2.0 */
/* graphs_simk.c - host implementations of the kernels of the graph samples
 * (graphs.cu, graphs_capture.cu, graphs_drv.c load them from graphs.cu's
 * fatbin), so the simulated driver computes what a GPU would.
 *
 * extern "C" __global__ void gk_scale(int *x, int f, int n)         x[i] *= f
 *   x @0 (8), f @8 (4), n @12 (4)
 * extern "C" __global__ void gk_axpy(int *y, const int *x, int a, int n)  y[i] += a * x[i]
 *   y @0 (8), x @8 (8), a @16 (4), n @20 (4)
 * extern "C" __global__ void gk_add(int *x, int c, int n)           x[i] += c
 *   x @0 (8), c @8 (4), n @12 (4)
 * Integer arithmetic wraps as on the GPU (computed unsigned).
 */
#include "simdrv/simkernel.h"

#include <stdbool.h>
#include <stdint.h>

/* gk_scale and gk_add, (int *x, int c, int n): x[i] = x[i] * c, or x[i] + c. */
static int scale_or_add(const struct xgpu_simk_launch *l, bool multiply)
{
	uint64_t xa;
	int32_t c, n;
	if (xgpu_simk_param(l, 0, &xa, 8) || xgpu_simk_param(l, 1, &c, 4) || xgpu_simk_param(l, 2, &n, 4))
		return XGPU_SIMK_ERR_INVALID_VALUE;
	uint64_t count = xgpu_simk_covered(l, n);
	void *p;
	int r;
	if (!count)
		return XGPU_SIMK_OK;
	if ((r = xgpu_simk_map(l, xa, count * 4, 4, &p)))
		return r;
	uint32_t *x = p;
	for (uint64_t i = 0; i < count; i++)
		x[i] = multiply ? x[i] * (uint32_t)c : x[i] + (uint32_t)c;
	return XGPU_SIMK_OK;
}

static int scale(const struct xgpu_simk_launch *l)
{
	return scale_or_add(l, true);
}

static int axpy(const struct xgpu_simk_launch *l)
{
	uint64_t ya, xa;
	int32_t a, n;
	if (xgpu_simk_param(l, 0, &ya, 8) || xgpu_simk_param(l, 1, &xa, 8) || xgpu_simk_param(l, 2, &a, 4) ||
	    xgpu_simk_param(l, 3, &n, 4))
		return XGPU_SIMK_ERR_INVALID_VALUE;
	uint64_t count = xgpu_simk_covered(l, n);
	void *py, *px;
	int r;
	if (!count)
		return XGPU_SIMK_OK;
	if ((r = xgpu_simk_map(l, ya, count * 4, 4, &py)) || (r = xgpu_simk_map(l, xa, count * 4, 4, &px)))
		return r;
	uint32_t *y = py;
	const uint32_t *x = px;
	for (uint64_t i = 0; i < count; i++)
		y[i] += (uint32_t)a * x[i];
	return XGPU_SIMK_OK;
}

static int add(const struct xgpu_simk_launch *l)
{
	return scale_or_add(l, false);
}

static const struct xgpu_simk_kernel kernels[] = {
    {"gk_scale", scale, NULL},
    {"gk_axpy", axpy, NULL},
    {"gk_add", add, NULL},
};
XGPU_SIMK_EXPORT(kernels);
