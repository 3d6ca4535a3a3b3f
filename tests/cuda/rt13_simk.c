/* SPDX-License-Identifier: Apache-2.0 */
/* rt13_simk.c - host implementation of tests/cuda/rt13.cu's kernels. */
#include "simdrv/simkernel.h"

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
    {"rt13_iota", iota, NULL},
    {"rt13_iota_cluster", iota, NULL},
};
XGPU_SIMK_EXPORT(kernels);
