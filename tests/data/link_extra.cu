/* SPDX-License-Identifier: Apache-2.0 */
// link_extra.cu - a second input for tests/cuda/drvapi13.c's JIT link
// (cuLinkAddData of this PTX beside drvapi_kernels.cu's relocatable cubin):
// a kernel that calls a device function the other input defines.
extern "C" __device__ int drv_twice(int x);

extern "C" __global__ void link_twice(int *out, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		out[i] = drv_twice(out[i]);
}
