/* SPDX-License-Identifier: Apache-2.0 */
// drvapi_kernels.cu - the device code tests/cuda/drvapi.c loads through the
// driver API, built into a fatbin and a bare cubin (Makefile). The host
// implementations the simulated driver runs are tests/cuda/drvapi_simk.c.

// Parameters of mixed sizes, so that kernelParams must be laid out with the
// padding the fatbin describes (a at 0, x at 8, y at 16, n at 24).
extern "C" __global__ void drv_saxpy(float a, const float *x, float *y, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		y[i] = a * x[i] + y[i];
}

// Launched through cuLaunchKernel's extra buffer.
extern "C" __global__ void drv_iota(int *out, int base, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		out[i] = base + i;
}

__device__ int drv_table[256];

// Called from tests/data/link_extra.cu, linked with this file's relocatable
// cubin by cuLinkComplete (tests/cuda/drvapi13.c).
extern "C" __device__ int drv_twice(int x)
{
	return 2 * x;
}
