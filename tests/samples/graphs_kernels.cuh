/* SPDX-License-Identifier: Apache-2.0 */
// graphs_kernels.cuh - the kernels of the graph samples (the simulated driver
// runs them from their PTX). extern "C" so that graphs_drv.c finds them by name.
extern "C" __global__ void gk_scale(int *x, int f, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		x[i] *= f;
}

extern "C" __global__ void gk_axpy(int *y, const int *x, int a, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		y[i] += a * x[i];
}

extern "C" __global__ void gk_add(int *x, int c, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		x[i] += c;
}
