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

/* CUDA_ERROR_MISALIGNED_ADDRESS: what a GPU reports for a misaligned access. */
#define ERR_MISALIGNED_ADDRESS 716

/* Host view of device range [addr, addr + bytes) holding elements of the
 * given alignment, or the CUresult the access would fault with on a GPU. */
static int map_range(const struct xgpu_simk_launch *l, uint64_t addr, uint64_t bytes, uintptr_t align,
		     void **out)
{
	if (addr % align)
		return ERR_MISALIGNED_ADDRESS;
	void *p = l->map(l, addr, bytes);
	if (!p)
		return XGPU_SIMK_ERR_ILLEGAL_ADDRESS;
	if ((uintptr_t)p % align)
		return ERR_MISALIGNED_ADDRESS;
	*out = p;
	return XGPU_SIMK_OK;
}

/* Elements the grid covers: thread i = blockDim.x * blockIdx.x + threadIdx.x
 * computes element i when i < n (blocks along y and z repeat the same i). */
static uint64_t covered(const struct xgpu_simk_launch *l, int32_t n)
{
	uint64_t threads_x = (uint64_t)l->grid[0] * l->block[0];
	if (n <= 0)
		return 0;
	return threads_x < (uint64_t)n ? threads_x : (uint64_t)n;
}

static int vector_add(const struct xgpu_simk_launch *l)
{
	uint64_t a, b, c;
	int32_t n;
	if (xgpu_simk_param(l, 0, &a, 8) || xgpu_simk_param(l, 1, &b, 8) || xgpu_simk_param(l, 2, &c, 8) ||
	    xgpu_simk_param(l, 3, &n, 4))
		return XGPU_SIMK_ERR_INVALID_VALUE;
	uint64_t count = covered(l, n);
	if (!count)
		return XGPU_SIMK_OK;
	uint64_t bytes = count * sizeof(float);
	void *pa, *pb, *pc;
	int r;
	if ((r = map_range(l, a, bytes, sizeof(float), &pa)) ||
	    (r = map_range(l, b, bytes, sizeof(float), &pb)) ||
	    (r = map_range(l, c, bytes, sizeof(float), &pc)))
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
	uint64_t count = xgpu_simk_param(l, 3, &n, 4) ? xgpu_simk_threads(l) : covered(l, n);
	uint64_t mem_ns = count * 3 * sizeof(float) / HBM_BYTES_PER_NS;
	uint64_t thr_ns = xgpu_simk_threads(l) / THREADS_PER_NS;
	return LAUNCH_NS + (mem_ns > thr_ns ? mem_ns : thr_ns);
}

static const struct xgpu_simk_kernel kernels[] = {
    {"_Z9vectorAddPKfS0_Pfi", vector_add, vector_add_cost},
};

XGPU_SIMK_EXPORT(kernels);
