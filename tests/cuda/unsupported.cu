/* SPDX-License-Identifier: Apache-2.0 */
// unsupported.cu - a program calling runtime functions xgpu does not
// implement: each must fail with cudaErrorNotSupported (never crash, never
// succeed silently), and the program must go on working afterwards.
#include <cstdio>

int main()
{
	int failures = 0;
	void *ipc_buf = nullptr;
	if (cudaMalloc(&ipc_buf, 256) != cudaSuccess) {
		printf("FAIL: cudaMalloc\n");
		return 1;
	}
	// Graphics interop is not offered (a guest has no display to share).
	cudaError_t e = cudaGraphicsUnregisterResource(nullptr);
	if (e != cudaErrorNotSupported) {
		printf("FAIL: cudaGraphicsUnregisterResource returned %s\n", cudaGetErrorName(e));
		failures++;
	}
	if (cudaGetLastError() != cudaErrorNotSupported) {
		printf("FAIL: the error was not recorded\n");
		failures++;
	}
	void *d = nullptr;
	if (cudaMalloc(&d, 256) != cudaSuccess || cudaFree(d) != cudaSuccess || cudaFree(ipc_buf) != cudaSuccess) {
		printf("FAIL: ordinary calls failed after unsupported ones\n");
		failures++;
	}
	printf("RESULT workload=unsupported verified=%s\n", failures ? "no" : "yes");
	return failures ? 1 : 0;
}
