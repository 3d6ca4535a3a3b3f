/* SPDX-License-Identifier: Apache-2.0 */
/* guestload_simk.c - host implementations of tests/cuda/guestload.cu's kernels.
 *
 *   spin(unsigned long long *count, unsigned long long ns): count @0 (8), ns @8 (8);
 *       adds 1 to *count; modeled as ns, or one nanosecond per thread with ns 0
 *   poke(int *p, long long offset): p @0 (8), offset @8 (8); writes p[offset]
 *   trap_k(int *p): p @0 (8); traps when *p is 0
 */
#include "simdrv/simkernel.h"

#include <stdint.h>

static int spin(const struct xgpu_simk_launch *l)
{
	uint64_t count;
	if (xgpu_simk_param(l, 0, &count, 8))
		return XGPU_SIMK_ERR_INVALID_VALUE;
	uint64_t *c;
	int rc = xgpu_simk_map(l, count, sizeof *c, 8, (void **)&c);
	if (rc)
		return rc;
	++*c;
	return XGPU_SIMK_OK;
}

static uint64_t spin_cost(const struct xgpu_simk_launch *l)
{
	uint64_t ns = 0;
	xgpu_simk_param(l, 1, &ns, 8);
	return ns ? ns : xgpu_simk_threads(l);
}

static int poke(const struct xgpu_simk_launch *l)
{
	uint64_t p;
	int64_t offset;
	if (xgpu_simk_param(l, 0, &p, 8) || xgpu_simk_param(l, 1, &offset, 8))
		return XGPU_SIMK_ERR_INVALID_VALUE;
	int32_t *q;
	int rc = xgpu_simk_map(l, p + (uint64_t)offset * 4, sizeof *q, 4, (void **)&q);
	if (rc)
		return rc;
	*q = 1;
	return XGPU_SIMK_OK;
}

static int trap_k(const struct xgpu_simk_launch *l)
{
	uint64_t p;
	if (xgpu_simk_param(l, 0, &p, 8))
		return XGPU_SIMK_ERR_INVALID_VALUE;
	int32_t *q;
	int rc = xgpu_simk_map(l, p, sizeof *q, 4, (void **)&q);
	if (rc)
		return rc;
	return *q == 0 ? XGPU_SIMK_ERR_TRAP : XGPU_SIMK_OK;
}

static const struct xgpu_simk_kernel kernels[] = {
    {"_Z4spinPyy", spin, spin_cost},
    {"_Z4pokePix", poke, NULL},
    {"_Z6trap_kPi", trap_k, NULL},
};
XGPU_SIMK_EXPORT(kernels);
