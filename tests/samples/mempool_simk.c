/* SPDX-License-Identifier: Apache-2.0 */
/* mempool_simk.c - the host implementation of tests/samples/mempool.cu's
 * mp_slow, kept for its modeled time: it occupies the device for the
 * microseconds its last parameter says, so the reuse checks have work in
 * flight on the stream that freed a block. (Its other kernels, and mp_slow's
 * results, come from their PTX through the interpreter; an interpreted kernel
 * takes only its modeled time, which here would be too short.) */
#include "simdrv/simkernel.h"

static int slow_fill(const struct xgpu_simk_launch *l)
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

static uint64_t slow_cost(const struct xgpu_simk_launch *l)
{
	int32_t us = 0;
	if (xgpu_simk_param(l, 3, &us, 4) || us < 0)
		return 1000;
	return (uint64_t)us * 1000;
}

static const struct xgpu_simk_kernel kernels[] = {
    {"_Z7mp_slowPiiii", slow_fill, slow_cost},
};
XGPU_SIMK_EXPORT(kernels);
