/* SPDX-License-Identifier: Apache-2.0 */
/* managed_simk.c - host implementations of tests/samples/managed.cu's
 * kernels. */
#include "simdrv/simkernel.h"

/* p[i] += by for i < n. */
static int inc(const struct xgpu_simk_launch *l)
{
	uint64_t addr;
	int32_t n, by;
	if (xgpu_simk_param(l, 0, &addr, 8) || xgpu_simk_param(l, 1, &n, 4) ||
	    xgpu_simk_param(l, 2, &by, 4) || n < 0)
		return XGPU_SIMK_ERR_INVALID_VALUE;
	if (n == 0)
		return XGPU_SIMK_OK;
	int32_t *p = l->map(l, addr, (uint64_t)n * 4);
	if (!p)
		return XGPU_SIMK_ERR_ILLEGAL_ADDRESS;
	for (int32_t i = 0; i < n; i++)
		p[i] += by;
	return XGPU_SIMK_OK;
}

/* *var += v. */
static int add(const struct xgpu_simk_launch *l)
{
	uint64_t addr;
	int32_t v;
	if (xgpu_simk_param(l, 0, &addr, 8) || xgpu_simk_param(l, 1, &v, 4))
		return XGPU_SIMK_ERR_INVALID_VALUE;
	int32_t *p = l->map(l, addr, 4);
	if (!p)
		return XGPU_SIMK_ERR_ILLEGAL_ADDRESS;
	*p += v;
	return XGPU_SIMK_OK;
}

static const struct xgpu_simk_kernel kernels[] = {
    {"_Z6mg_incPiii", inc, NULL},
    {"_Z6mg_addPii", add, NULL},
};
XGPU_SIMK_EXPORT(kernels);
