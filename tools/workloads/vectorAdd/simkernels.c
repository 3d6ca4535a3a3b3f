/* SPDX-License-Identifier: Apache-2.0 */
/* simkernels.c - host implementation of vectorAdd.cu's kernel for the
 * simulated driver, and its modeled H100 device time.
 *
 * __global__ void vectorAdd(const float *A, const float *B, float *C, int n)
 *   _Z9vectorAddPKfS0_Pfi: A @0 (8), B @8 (8), C @16 (8), n @24 (4); 28 bytes.
 */
#include "simdrv/simkernel.h"

#include <stdint.h>

/* H100 figures the model uses: fixed cost of a launch on the device, the
 * effective HBM3 bandwidth a streaming kernel reaches, and how fast the
 * block scheduler retires threads that do little. */
#define LAUNCH_NS 3000u
#define HBM_BYTES_PER_NS 2500u /* ~2.5 TB/s */
#define THREADS_PER_NS 500u    /* ~0.5 T threads/s */

static int vector_add(const struct xgpu_simk_launch *l)
{
	uint64_t a, b, c;
	int32_t n;
	if (xgpu_simk_param(l, 0, &a, 8) || xgpu_simk_param(l, 1, &b, 8) || xgpu_simk_param(l, 2, &c, 8) ||
	    xgpu_simk_param(l, 3, &n, 4))
		return XGPU_SIMK_ERR_INVALID_VALUE;
	uint64_t count = xgpu_simk_covered(l, n);
	if (!count)
		return XGPU_SIMK_OK;
	uint64_t bytes = count * sizeof(float);
	void *pa, *pb, *pc;
	int r;
	if ((r = xgpu_simk_map(l, a, bytes, sizeof(float), &pa)) ||
	    (r = xgpu_simk_map(l, b, bytes, sizeof(float), &pb)) ||
	    (r = xgpu_simk_map(l, c, bytes, sizeof(float), &pc)))
		return r;
	const float *A = pa, *B = pb;
	float *C = pc;
	for (uint64_t i = 0; i < count; i++)
		C[i] = A[i] + B[i];
	return XGPU_SIMK_OK;
}

static uint64_t vector_add_cost(const struct xgpu_simk_launch *l)
{
	int32_t n = 0;
	uint64_t count = xgpu_simk_param(l, 3, &n, 4) ? xgpu_simk_threads(l) : xgpu_simk_covered(l, n);
	uint64_t mem_ns = count * 3 * sizeof(float) / HBM_BYTES_PER_NS;
	uint64_t thr_ns = xgpu_simk_threads(l) / THREADS_PER_NS;
	return LAUNCH_NS + (mem_ns > thr_ns ? mem_ns : thr_ns);
}

static const struct xgpu_simk_kernel kernels[] = {
    {"_Z9vectorAddPKfS0_Pfi", vector_add, vector_add_cost},
};

XGPU_SIMK_EXPORT(kernels);
