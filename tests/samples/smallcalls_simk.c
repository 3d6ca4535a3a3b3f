/* smallcalls_simk.c - host implementation of tests/samples/smallcalls.cu's
 * kernel. */
#include "simdrv/simkernel.h"

static int fill(const struct xgpu_simk_launch *l)
{
	uint64_t out;
	int32_t v;
	if (xgpu_simk_param(l, 0, &out, 8) || xgpu_simk_param(l, 1, &v, 4))
		return XGPU_SIMK_ERR_INVALID_VALUE;
	uint64_t n = l->block[0];
	int32_t *p = l->map(l, out, n * 4);
	if (!p)
		return XGPU_SIMK_ERR_ILLEGAL_ADDRESS;
	for (uint64_t i = 0; i < n; i++)
		p[i] = v + (int32_t)i;
	return XGPU_SIMK_OK;
}

static const struct xgpu_simk_kernel kernels[] = {
    {"_Z7sc_fillPii", fill, NULL},
};
XGPU_SIMK_EXPORT(kernels);
