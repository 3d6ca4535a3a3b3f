/* SPDX-License-Identifier: Apache-2.0 */
/* simdrv_kernels_simk.c - host implementations of simdrv_kernels.cu for the
 * simulated driver, loaded by test_simdrv through XGPU_SIM_KERNELS.
 *
 *   saxpy(int n, float a, const float *x, float *y)
 *       n @0 (4), a @4 (4), x @8 (8), y @16 (8); 24 bytes
 *   fill_u32(unsigned *p, unsigned v, unsigned long long n, unsigned long long ns)
 *       p @0 (8), v @8 (4), n @16 (8), ns @24 (8); 32 bytes; modeled time ns
 *   _Z5storePii: store(int *p, int v)
 *       p @0 (8), v @8 (4); 12 bytes
 *
 * Device ranges go through l->map() directly, not xgpu_simk_map(): these
 * kernels check that a range is mapped but have never checked alignment, and
 * test_simdrv exercises the driver, not misaligned-access faults.
 */
#include "simdrv/simkernel.h"

#include <stdint.h>

static int saxpy(const struct xgpu_simk_launch *l)
{
	int32_t n;
	float a;
	uint64_t x, y;
	if (xgpu_simk_param(l, 0, &n, 4) || xgpu_simk_param(l, 1, &a, 4) || xgpu_simk_param(l, 2, &x, 8) ||
	    xgpu_simk_param(l, 3, &y, 8))
		return XGPU_SIMK_ERR_INVALID_VALUE;
	uint64_t count = xgpu_simk_covered(l, n);
	if (!count)
		return XGPU_SIMK_OK;
	const float *X = l->map(l, x, count * sizeof(float));
	float *Y = l->map(l, y, count * sizeof(float));
	if (!X || !Y)
		return XGPU_SIMK_ERR_ILLEGAL_ADDRESS;
	for (uint64_t i = 0; i < count; i++)
		Y[i] = a * X[i] + Y[i];
	return XGPU_SIMK_OK;
}

static int fill_u32(const struct xgpu_simk_launch *l)
{
	uint64_t p, n, ns;
	uint32_t v;
	if (xgpu_simk_param(l, 0, &p, 8) || xgpu_simk_param(l, 1, &v, 4) || xgpu_simk_param(l, 2, &n, 8) ||
	    xgpu_simk_param(l, 3, &ns, 8))
		return XGPU_SIMK_ERR_INVALID_VALUE;
	/* n is unsigned here: clamping it to INT64_MAX keeps the count, as no
	 * grid the driver launches reaches 2^63 threads along x (gridDim.x <
	 * 2^31, blockDim.x <= 1024). */
	uint64_t count = xgpu_simk_covered(l, n > INT64_MAX ? INT64_MAX : (int64_t)n);
	if (!count)
		return XGPU_SIMK_OK;
	uint32_t *P = l->map(l, p, count * sizeof(uint32_t));
	if (!P)
		return XGPU_SIMK_ERR_ILLEGAL_ADDRESS;
	for (uint64_t i = 0; i < count; i++)
		P[i] = v;
	return XGPU_SIMK_OK;
}

static uint64_t fill_u32_cost(const struct xgpu_simk_launch *l)
{
	uint64_t ns = 0;
	xgpu_simk_param(l, 3, &ns, 8);
	return ns ? ns : 3000 + xgpu_simk_threads(l) / 500;
}

static int store(const struct xgpu_simk_launch *l)
{
	uint64_t p;
	int32_t v;
	if (xgpu_simk_param(l, 0, &p, 8) || xgpu_simk_param(l, 1, &v, 4))
		return XGPU_SIMK_ERR_INVALID_VALUE;
	int32_t *P = l->map(l, p, sizeof *P);
	if (!P)
		return XGPU_SIMK_ERR_ILLEGAL_ADDRESS;
	*P = v;
	return XGPU_SIMK_OK;
}

static const struct xgpu_simk_kernel kernels[] = {
    {"saxpy", saxpy, NULL},
    {"fill_u32", fill_u32, fill_u32_cost},
    {"_Z5storePii", store, NULL},
};

XGPU_SIMK_EXPORT(kernels);
