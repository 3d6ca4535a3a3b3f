/* SPDX-License-Identifier: Apache-2.0 */
/* largeparam_simk.c - host implementations of tests/samples/largeparam.cu's
 * kernels. Each checks that its whole struct arrived with the pattern the
 * program wrote (a launch whose bytes were cut or shifted fails with
 * CUDA_ERROR_INVALID_VALUE, and the program sees it), then copies it out. */
#include "simdrv/simkernel.h"

#include <stdlib.h>

static int pattern(int i, int seed)
{
	return i * 7919 + seed;
}

static int copy_struct(const struct xgpu_simk_launch *l, uint32_t struct_index, uint32_t ptr_index, int n,
		       int seed)
{
	uint64_t out;
	uint32_t bytes = (uint32_t)n * 4u;
	int32_t *v = malloc(bytes);
	if (!v)
		return XGPU_SIMK_ERR_INVALID_VALUE;
	int r = XGPU_SIMK_OK;
	if (xgpu_simk_param(l, ptr_index, &out, 8) || xgpu_simk_param(l, struct_index, v, bytes))
		r = XGPU_SIMK_ERR_INVALID_VALUE;
	for (int i = 0; !r && i < n; i++)
		if (v[i] != pattern(i, seed))
			r = XGPU_SIMK_ERR_INVALID_VALUE;
	int32_t *p = r ? NULL : l->map(l, out, bytes);
	if (!r && !p)
		r = XGPU_SIMK_ERR_ILLEGAL_ADDRESS;
	if (!r)
		memcpy(p, v, bytes);
	free(v);
	return r;
}

static int copy8k(const struct xgpu_simk_launch *l)
{
	return l->param_bytes == 8200 ? copy_struct(l, 0, 1, 2048, 1) : XGPU_SIMK_ERR_INVALID_VALUE;
}

static int copymax(const struct xgpu_simk_launch *l)
{
	return l->param_bytes == 32764 ? copy_struct(l, 1, 0, 8189, 2) : XGPU_SIMK_ERR_INVALID_VALUE;
}

static const struct xgpu_simk_kernel kernels[] = {
    {"_Z9lp_copy8k5Big8kPi", copy8k, NULL},
    {"_Z10lp_copymaxPi6BigMax", copymax, NULL},
};
XGPU_SIMK_EXPORT(kernels);
