/* SPDX-License-Identifier: Apache-2.0 */
// largeparam.cu - kernel parameters beyond the old 4 KiB limit (CUDA 12.1
// allows 32764 bytes on Volta and later): an 8 KiB struct passed by value,
// and one filling the whole parameter space. Each kernel copies its struct
// out; the program checks every byte came through (on the simulated driver
// the kernels run from their PTX, reading the parameter space as a GPU does).
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#include "sample.h"

struct Big8k {
	int v[2048];
};
// With the 8-byte pointer in front: 8 + 32756 = 32764 bytes, the maximum.
struct BigMax {
	int v[8189];
};

__global__ void lp_copy8k(Big8k big, int *out)
{
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < 2048; i += gridDim.x * blockDim.x)
		out[i] = big.v[i];
}

__global__ void lp_copymax(int *out, BigMax big)
{
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < 8189; i += gridDim.x * blockDim.x)
		out[i] = big.v[i];
}

static int pattern(int i, int seed)
{
	return i * 7919 + seed;
}

int main()
{
	static Big8k b8;
	static BigMax bm;
	for (int i = 0; i < 2048; i++)
		b8.v[i] = pattern(i, 1);
	for (int i = 0; i < 8189; i++)
		bm.v[i] = pattern(i, 2);
	int *d;
	CHECK(cudaMalloc(&d, sizeof bm));
	static int h[8189];
	bool ok = true;

	lp_copy8k<<<4, 128>>>(b8, d);
	CHECK(cudaGetLastError());
	CHECK(cudaMemcpy(h, d, sizeof b8, cudaMemcpyDeviceToHost));
	for (int i = 0; i < 2048; i++)
		if (h[i] != pattern(i, 1)) {
			printf("8 KiB struct: element %d is %d, expected %d\n", i, h[i], pattern(i, 1));
			ok = false;
			break;
		}

	CHECK(cudaMemset(d, 0, sizeof bm));
	lp_copymax<<<8, 128>>>(d, bm);
	CHECK(cudaGetLastError());
	CHECK(cudaMemcpy(h, d, sizeof bm, cudaMemcpyDeviceToHost));
	for (int i = 0; i < 8189; i++)
		if (h[i] != pattern(i, 2)) {
			printf("32764-byte parameters: element %d is %d, expected %d\n", i, h[i],
			       pattern(i, 2));
			ok = false;
			break;
		}
	long long sum = 0;
	for (int i = 0; i < 8189; i++)
		sum += h[i];
	CHECK(cudaFree(d));
	printf("RESULT largeparam verified=%s checksum=%lld\n", ok ? "yes" : "no", sum);
	return ok ? 0 : 1;
}
