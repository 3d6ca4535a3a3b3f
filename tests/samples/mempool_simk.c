/* SPDX-License-Identifier: Apache-2.0 */
/* mempool_simk.c - host implementations of tests/samples/mempool.cu's
 * kernels. mp_slow takes the time its last parameter says, so the reuse
 * checks have work in flight on the stream that freed a block. */
#include "simdrv/simkernel.h"

static int fill_common(const struct xgpu_simk_launch *l)
{
	uint64_t out;
	int32_t n, v;
	if (xgpu_simk_param(l, 0, &out, 8) || xgpu_simk_param(l, 1, &n, 4) || xgpu_simk_param(l, 2, &v, 4) ||
	    n < 0)
		return XGPU_SIMK_ERR_INVALID_VALUE;
	int32_t *p = l->map(l, out, (uint64_t)n * 4);
	if (!p)
		return XGPU_SIMK_ERR_ILLEGAL_ADDRESS;
	for (int32_t i = 0; i < n; i++)
		p[i] = v + i;
	return XGPU_SIMK_OK;
}

static int add(const struct xgpu_simk_launch *l)
{
	uint64_t out, a, b;
	int32_t n;
	if (xgpu_simk_param(l, 0, &out, 8) || xgpu_simk_param(l, 1, &a, 8) || xgpu_simk_param(l, 2, &b, 8) ||
	    xgpu_simk_param(l, 3, &n, 4) || n < 0)
		return XGPU_SIMK_ERR_INVALID_VALUE;
	int32_t *po = l->map(l, out, (uint64_t)n * 4);
	const int32_t *pa = l->map(l, a, (uint64_t)n * 4), *pb = l->map(l, b, (uint64_t)n * 4);
	if (!po || !pa || !pb)
		return XGPU_SIMK_ERR_ILLEGAL_ADDRESS;
	for (int32_t i = 0; i < n; i++)
		po[i] = pa[i] + pb[i];
	return XGPU_SIMK_OK;
}

static uint64_t slow_cost(const struct xgpu_simk_launch *l)
{
	int32_t us = 0;
	if (xgpu_simk_param(l, 3, &us, 4) || us < 0)
		return 1000;
	return (uint64_t)us * 1000;
}

static const struct xgpu_simk_kernel kernels[] = {
    {"_Z7mp_fillPiii", fill_common, NULL},
    {"_Z6mp_addPiPKiS1_i", add, NULL},
    {"_Z7mp_slowPiiii", fill_common, slow_cost},
};
XGPU_SIMK_EXPORT(kernels);
