/* cooperative_simk.c - host implementation of tests/samples/cooperative.cu's
 * kernel: both phases over the whole grid, as its grid barrier orders them. */
#include "simdrv/simkernel.h"

static int neighbours(const struct xgpu_simk_launch *l)
{
	uint64_t slots_a, sums_a;
	int32_t blocks;
	if (xgpu_simk_param(l, 0, &slots_a, 8) || xgpu_simk_param(l, 1, &sums_a, 8) ||
	    xgpu_simk_param(l, 2, &blocks, 4))
		return XGPU_SIMK_ERR_INVALID_VALUE;
	uint64_t n = (uint64_t)l->grid[0] * l->grid[1] * l->grid[2];
	if (blocks <= 0 || (uint64_t)blocks != n)
		return XGPU_SIMK_ERR_TRAP; /* the modulo would read a slot no block wrote */
	int32_t *slots = l->map(l, slots_a, n * 4), *sums = l->map(l, sums_a, n * 4);
	if (!slots || !sums)
		return XGPU_SIMK_ERR_ILLEGAL_ADDRESS;
	for (uint64_t b = 0; b < n; b++)
		slots[b] = (int32_t)b + 1;
	for (uint64_t b = 0; b < n; b++)
		sums[b] = slots[b] + slots[(b + 1) % n];
	return XGPU_SIMK_OK;
}

static const struct xgpu_simk_kernel kernels[] = {
    {"_Z15coop_neighboursPiS_i", neighbours, NULL},
};
XGPU_SIMK_EXPORT(kernels);
