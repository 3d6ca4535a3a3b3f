/* SPDX-License-Identifier: Apache-2.0 */
// exptab_cublas.cu - cuBLAS's start-up and first calls through xgpu's
// libcuda.so.1 (create a handle, set a stream, set and get matrices, Sgemm,
// Snrm2, destroy), built with nvcc's default static runtime: what NVIDIA's
// libraries ask libcuda.so.1 for, their own embedded runtimes included.
// Each step prints "exptab_cublas: STEP STATUS"; the program exits 1 at the
// first that is not CUBLAS_STATUS_SUCCESS, or when a matrix does not come
// back as it was set (tests/e2e/driver_libs.sh, which also traces the
// private tables requested). The products are not judged: on the simulated
// driver NVIDIA's kernels take their modelled time and compute nothing.
#include <cstdio>
#include <cstring>
#include <cublas_v2.h>

static int step(const char *what, cublasStatus_t s)
{
	printf("exptab_cublas: %s %d\n", what, (int)s);
	return s != CUBLAS_STATUS_SUCCESS;
}

int main()
{
	cublasHandle_t h;
	if (step("create", cublasCreate(&h)))
		return 1;
	cudaStream_t stream;
	if (cudaStreamCreate(&stream) != cudaSuccess) {
		printf("exptab_cublas: cudaStreamCreate failed\n");
		return 1;
	}
	if (step("set_stream", cublasSetStream(h, stream)))
		return 1;
	float a[4] = {1, 2, 3, 4}, identity[4] = {1, 0, 0, 1}, c[4] = {0}, back[4] = {0};
	float *da, *db, *dc;
	if (cudaMalloc(&da, sizeof a) != cudaSuccess || cudaMalloc(&db, sizeof identity) != cudaSuccess ||
	    cudaMalloc(&dc, sizeof c) != cudaSuccess) {
		printf("exptab_cublas: cudaMalloc failed\n");
		return 1;
	}
	if (step("set_matrix", cublasSetMatrix(2, 2, sizeof(float), a, 2, da, 2)) ||
	    step("set_matrix", cublasSetMatrix(2, 2, sizeof(float), identity, 2, db, 2)))
		return 1;
	const float one = 1, zero = 0;
	if (step("sgemm", cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 2, &one, da, 2, db, 2, &zero, dc, 2)) ||
	    step("get_matrix", cublasGetMatrix(2, 2, sizeof(float), dc, 2, c, 2)))
		return 1;
	float norm = 0;
	if (step("snrm2", cublasSnrm2(h, 4, da, 1, &norm)))
		return 1;
	if (step("get_matrix", cublasGetMatrix(2, 2, sizeof(float), da, 2, back, 2)))
		return 1;
	bool same = !memcmp(a, back, sizeof a);
	printf("exptab_cublas: roundtrip %s\n", same ? "same" : "differs");
	if (!same)
		return 1;
	cudaFree(da);
	cudaFree(db);
	cudaFree(dc);
	if (cudaStreamSynchronize(stream) != cudaSuccess || cudaStreamDestroy(stream) != cudaSuccess) {
		printf("exptab_cublas: stream failed\n");
		return 1;
	}
	if (step("destroy", cublasDestroy(h)))
		return 1;
	return 0;
}
