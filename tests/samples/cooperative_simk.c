/* SPDX-License-Identifier: Apache-2.0 */
/* cooperative_simk.c - host implementation of tests/samples/cooperative.cu's
 * kernel: both phases over the whole grid, as its grid barrier orders them. */
#include "sample_simk.h"

static const struct xgpu_simk_kernel kernels[] = {
    {"_Z15coop_neighboursPiS_i", simk_coop_neighbours, NULL},
};
XGPU_SIMK_EXPORT(kernels);
