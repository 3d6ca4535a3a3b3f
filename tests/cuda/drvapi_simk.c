/* SPDX-License-Identifier: Apache-2.0 */
/* drvapi_simk.c - host implementations of tests/data/drvapi_kernels.cu's
 * kernels, which tests/cuda/drvapi.c launches through the driver API. */
#include "simdrv/simkernel.h"

static int saxpy(const struct xgpu_simk_launch *l)
{
	float a;
	uint64_t x, y;
	int32_t n;
	if (xgpu_simk_param(l, 0, &a, 4) || xgpu_simk_param(l, 1, &x, 8) || xgpu_simk_param(l, 2, &y, 8) ||
	    xgpu_simk_param(l, 3, &n, 4))
		return XGPU_SIMK_ERR_INVALID_VALUE;
	uint64_t count = xgpu_simk_covered(l, n);
	if (!count)
		return XGPU_SIMK_OK;
	const float *px = l->map(l, x, count * sizeof *px);
	float *py = l->map(l, y, count * sizeof *py);
	if (!px || !py)
		return XGPU_SIMK_ERR_ILLEGAL_ADDRESS;
	for (uint64_t i = 0; i < count; i++)
		py[i] = a * px[i] + py[i];
	return XGPU_SIMK_OK;
}

static int iota(const struct xgpu_simk_launch *l)
{
	uint64_t out;
	int32_t base, n;
	if (xgpu_simk_param(l, 0, &out, 8) || xgpu_simk_param(l, 1, &base, 4) || xgpu_simk_param(l, 2, &n, 4))
		return XGPU_SIMK_ERR_INVALID_VALUE;
	uint64_t count = xgpu_simk_covered(l, n);
	if (!count)
		return XGPU_SIMK_OK;
	int32_t *p = l->map(l, out, count * sizeof *p);
	if (!p)
		return XGPU_SIMK_ERR_ILLEGAL_ADDRESS;
	for (uint64_t i = 0; i < count; i++)
		p[i] = base + (int32_t)i;
	return XGPU_SIMK_OK;
}

static const struct xgpu_simk_kernel kernels[] = {
    {"drv_saxpy", saxpy, NULL},
    {"drv_iota", iota, NULL},
};
XGPU_SIMK_EXPORT(kernels);
