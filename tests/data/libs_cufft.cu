/* SPDX-License-Identifier: Apache-2.0 */
// libs_cufft.cu - cuFFT's plan and execution through xgpu's libcuda.so.1:
// a 1-D complex-to-complex plan, a stream, one forward transform, destroy;
// built with nvcc's default static runtime and linked to NVIDIA's
// libcufft. Each step prints "libs_cufft: STEP STATUS" and the program
// exits 1 at the first that is not CUFFT_SUCCESS (tests/e2e/driver_libs.sh).
// The transform's numbers are not judged: on the simulated driver NVIDIA's
// kernels take their modelled time and compute nothing.
#include <cstdio>
#include <cufft.h>

static int step(const char *what, cufftResult r)
{
	printf("libs_cufft: %s %d\n", what, (int)r);
	return r != CUFFT_SUCCESS;
}

int main()
{
	const int n = 256;
	cufftHandle plan;
	if (step("plan1d", cufftPlan1d(&plan, n, CUFFT_C2C, 1)))
		return 1;
	cudaStream_t stream;
	if (cudaStreamCreate(&stream) != cudaSuccess) {
		printf("libs_cufft: cudaStreamCreate failed\n");
		return 1;
	}
	if (step("set_stream", cufftSetStream(plan, stream)))
		return 1;
	cufftComplex *data;
	if (cudaMalloc(&data, n * sizeof *data) != cudaSuccess ||
	    cudaMemset(data, 0, n * sizeof *data) != cudaSuccess) {
		printf("libs_cufft: device buffer failed\n");
		return 1;
	}
	if (step("exec_c2c", cufftExecC2C(plan, data, data, CUFFT_FORWARD)))
		return 1;
	cudaError_t e = cudaStreamSynchronize(stream);
	printf("libs_cufft: synchronize %d\n", (int)e);
	if (e != cudaSuccess)
		return 1;
	if (step("destroy", cufftDestroy(plan)))
		return 1;
	cudaFree(data);
	cudaStreamDestroy(stream);
	return 0;
}
