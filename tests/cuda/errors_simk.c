/* SPDX-License-Identifier: Apache-2.0 */
/* errors_simk.c - host implementations of tests/cuda/errors.cu's kernels. */
#include "simdrv/simkernel.h"

static int fill(const struct xgpu_simk_launch *l)
{
	uint64_t out;
	int32_t n, value;
	if (xgpu_simk_param(l, 0, &out, 8) || xgpu_simk_param(l, 1, &n, 4) ||
	    xgpu_simk_param(l, 2, &value, 4))
		return XGPU_SIMK_ERR_INVALID_VALUE;
	/* Not xgpu_simk_covered(): this counts every thread of the launch, y and
	 * z included, not just the x extent; the tests launch only 1-D grids,
	 * where the two agree, and this keeps what the plugin always did. */
	uint64_t threads = xgpu_simk_threads(l), count = n > 0 ? (uint64_t)n : 0;
	if (count > threads)
		count = threads;
	if (!count)
		return XGPU_SIMK_OK;
	int32_t *p = l->map(l, out, count * sizeof *p);
	if (!p)
		return XGPU_SIMK_ERR_ILLEGAL_ADDRESS;
	for (uint64_t i = 0; i < count; i++)
		p[i] = value;
	return XGPU_SIMK_OK;
}

static int poke(const struct xgpu_simk_launch *l)
{
	uint64_t out;
	int32_t where;
	if (xgpu_simk_param(l, 0, &out, 8) || xgpu_simk_param(l, 1, &where, 4))
		return XGPU_SIMK_ERR_INVALID_VALUE;
	int32_t *p = l->map(l, out + (uint64_t)(int64_t)where * 4, 4);
	if (!p)
		return XGPU_SIMK_ERR_ILLEGAL_ADDRESS;
	*p = 1;
	return XGPU_SIMK_OK;
}

static int bounded(const struct xgpu_simk_launch *l)
{
	uint64_t out;
	if (xgpu_simk_param(l, 0, &out, 8))
		return XGPU_SIMK_ERR_INVALID_VALUE;
	/* Every thread of the 1-D launches the test makes writes its element. */
	uint64_t threads = xgpu_simk_threads(l);
	int32_t *p = l->map(l, out, threads * sizeof *p);
	if (!p)
		return XGPU_SIMK_ERR_ILLEGAL_ADDRESS;
	for (uint64_t i = 0; i < threads; i++)
		p[i] = 5;
	return XGPU_SIMK_OK;
}

static const struct xgpu_simk_kernel kernels[] = {
    {"_Z4fillPiii", fill, NULL},
    {"_Z4pokePii", poke, NULL},
    {"_Z7boundedPi", bounded, NULL},
};
XGPU_SIMK_EXPORT(kernels);
