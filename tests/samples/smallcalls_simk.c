/* SPDX-License-Identifier: Apache-2.0 */
/* smallcalls_simk.c - host implementation of tests/samples/smallcalls.cu's
 * kernel. */
#include "sample_simk.h"

static int fill(const struct xgpu_simk_launch *l)
{
	return simk_fill_block(l, 1);
}

static const struct xgpu_simk_kernel kernels[] = {
    {"_Z7sc_fillPii", fill, NULL},
};
XGPU_SIMK_EXPORT(kernels);
