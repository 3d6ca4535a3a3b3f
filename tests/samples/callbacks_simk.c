/* SPDX-License-Identifier: Apache-2.0 */
/* callbacks_simk.c - the host implementation of tests/samples/callbacks.cu's
 * cb_work, kept for its modeled time: it occupies the device for its spin
 * parameter in nanoseconds at once, where the interpreter would spin each warp
 * in turn on real time. cb_add comes from its PTX. */
#include "simdrv/simkernel.h"

#define N 256

static int work(const struct xgpu_simk_launch *l)
{
	uint64_t out;
	int32_t v;
	int64_t spin;
	if (xgpu_simk_param(l, 0, &out, 8) || xgpu_simk_param(l, 1, &v, 4) || xgpu_simk_param(l, 2, &spin, 8))
		return XGPU_SIMK_ERR_INVALID_VALUE;
	uint64_t n = xgpu_simk_threads(l) < N ? xgpu_simk_threads(l) : N;
	int32_t *p = l->map(l, out, n * 4);
	if (!p)
		return XGPU_SIMK_ERR_ILLEGAL_ADDRESS;
	for (uint64_t i = 0; i < n; i++)
		p[i] = v + (int32_t)i;
	return XGPU_SIMK_OK;
}

static uint64_t work_cost(const struct xgpu_simk_launch *l)
{
	int64_t spin;
	if (xgpu_simk_param(l, 2, &spin, 8) || spin < 0)
		return 0;
	return (uint64_t)spin;
}

static const struct xgpu_simk_kernel kernels[] = {
    {"_Z7cb_workPiix", work, work_cost},
};
XGPU_SIMK_EXPORT(kernels);
