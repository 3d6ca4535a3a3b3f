// exptab_cublas.cu - cuBLAS's start-up and first calls (create a handle, set
// a stream, set and get matrices, Sgemm, Snrm2, destroy), built with nvcc's
// default static runtime: what NVIDIA's libraries ask libcuda.so.1 for,
// their own embedded runtimes included. tests/e2e/driver_exptab.sh traces
// the private tables requested; each status is printed, not judged here.
#include <cstdio>
#include <cublas_v2.h>

int main()
{
	cublasHandle_t h;
	cublasStatus_t s = cublasCreate(&h);
	printf("exptab_cublas: create %d\n", (int)s);
	if (s != CUBLAS_STATUS_SUCCESS)
		return 0;
	cudaStream_t stream;
	cudaStreamCreate(&stream);
	printf("exptab_cublas: set_stream %d\n", (int)cublasSetStream(h, stream));
	float a[4] = {1, 2, 3, 4}, identity[4] = {1, 0, 0, 1}, c[4] = {0};
	float *da, *db, *dc;
	cudaMalloc(&da, sizeof a);
	cudaMalloc(&db, sizeof identity);
	cudaMalloc(&dc, sizeof c);
	printf("exptab_cublas: set_matrix %d\n", (int)cublasSetMatrix(2, 2, sizeof(float), a, 2, da, 2));
	cublasSetMatrix(2, 2, sizeof(float), identity, 2, db, 2);
	const float one = 1, zero = 0;
	printf("exptab_cublas: sgemm %d\n",
	       (int)cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 2, &one, da, 2, db, 2, &zero, dc, 2));
	printf("exptab_cublas: get_matrix %d\n", (int)cublasGetMatrix(2, 2, sizeof(float), dc, 2, c, 2));
	float norm = 0;
	printf("exptab_cublas: snrm2 %d\n", (int)cublasSnrm2(h, 4, da, 1, &norm));
	cudaFree(da);
	cudaFree(db);
	cudaFree(dc);
	cudaStreamDestroy(stream);
	printf("exptab_cublas: destroy %d\n", (int)cublasDestroy(h));
	return 0;
}
