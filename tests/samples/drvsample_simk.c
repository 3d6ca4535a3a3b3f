/* SPDX-License-Identifier: Apache-2.0 */
/* drvsample_simk.c - the host implementation of tests/data/drvsample_kernels.cu's
 * ds_work, kept for its modeled time: it occupies the device for its spin
 * parameter at once, where the interpreter runs its blocks of one thread one
 * after another, each spinning on real time (256 x 50 ms). ds_coop and ds_tex
 * come from their PTX. */
#include "simdrv/simkernel.h"

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

static const struct xgpu_simk_kernel kernels[] = {
    {"ds_work", work, work_cost},
};
XGPU_SIMK_EXPORT(kernels);
