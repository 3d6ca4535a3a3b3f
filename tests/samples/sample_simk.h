/* SPDX-License-Identifier: Apache-2.0 */
/* sample_simk.h - host implementations of kernels that more than one sample
 * launches, for their tests/samples/ *_simk.c. Static inline: each simkernel
 * library takes only the ones it names. */
#pragma once

#include "simdrv/simkernel.h"

/* A one-block fill, (int *p, int v): thread i writes v + i * step. */
static inline int simk_fill_block(const struct xgpu_simk_launch *l, int32_t step)
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
		p[i] = v + (int32_t)i * step;
	return XGPU_SIMK_OK;
}

/* The cooperative sample's kernel, (int *slots, int *sums, int blocks): each
 * block writes its index + 1 to its slot, passes a grid barrier, then sums
 * its slot and its neighbour's. Both phases run over the whole grid, as the
 * barrier orders them. */
static inline int simk_coop_neighbours(const struct xgpu_simk_launch *l)
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
