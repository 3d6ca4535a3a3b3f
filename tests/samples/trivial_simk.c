/* SPDX-License-Identifier: Apache-2.0 */
/* trivial_simk.c - host implementation of tests/samples/trivial.cu's kernel. */
#include "sample_simk.h"

static int fill(const struct xgpu_simk_launch *l)
{
	return simk_fill_block(l, 0);
}

static const struct xgpu_simk_kernel kernels[] = {
    {"_Z7tr_fillPii", fill, NULL},
};
XGPU_SIMK_EXPORT(kernels);
