/* SPDX-License-Identifier: Apache-2.0 */
// libs.cu - gpu-validate's check of NVIDIA's libraries through xgpu: a cuBLAS
// Sgemm and a cuFFT transform pair whose results are judged on the host,
// built with nvcc's default static runtime as most CUDA software is (so that
// through xgpu it runs over xgpu's libcuda.so.1, NVIDIA's embedded runtime and
// the libraries' own included).
//
//   gpuval-libs [-n N] [-i ITERS]
//
// Sgemm: C = A * B for N x N matrices of small integers, so that every sum is
// exact in float and C must equal the host's product bit for bit. cuFFT: a
// batch of 1-D complex transforms of length 2^16 of a cosine, forward (two
// peaks of height len/2 where the cosine's frequency says) then inverse
// (the input times len). Prints
//   RESULT workload=libs verified=yes|no checksum=... sgemm_gflops=...
//          sgemm_mismatches=... fft_peak_err=... fft_roundtrip_err=... elapsed_s=...
// and exits 1 when a result is wrong or a call fails.
static const char *const kWorkload = "libs";
#include "../workloads/workload.h"

#include <cmath>
#include <cstring>
#include <cublas_v2.h>
#include <cufft.h>
#include <vector>

static void lib_fail(const char *what, int status)
{
	fprintf(stderr, "gpuval-libs: %s failed with status %d\n", what, status);
	printf("RESULT workload=libs verified=no error=%s:%d\n", what, status);
	exit(EXIT_FAILURE);
}

// A library call that must return ok; anything else ends the program.
#define LIB_CALL(call, ok)                                                                                   \
	do {                                                                                                 \
		auto s_ = (call);                                                                            \
		if (s_ != (ok))                                                                              \
			lib_fail(#call, (int)s_);                                                            \
	} while (0)
#define CUBLAS(call) LIB_CALL(call, CUBLAS_STATUS_SUCCESS)
#define CUFFT(call) LIB_CALL(call, CUFFT_SUCCESS)

int main(int argc, char **argv)
{
	long n = 1024, iters = 20;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-n") && i + 1 < argc && parse_count(argv[i + 1], 8192, &n) == 0)
			i++;
		else if (!strcmp(argv[i], "-i") && i + 1 < argc &&
			 parse_count(argv[i + 1], 100000, &iters) == 0)
			i++;
		else {
			fprintf(stderr, "usage: gpuval-libs [-n N (at most 8192)] [-i ITERS]\n");
			return 2;
		}
	}
	double t0 = now_s();

	// ---- cuBLAS Sgemm, exact on small integers ----
	size_t nn = (size_t)n * (size_t)n;
	std::vector<float> a(nn), b(nn), c(nn);
	for (size_t i = 0; i < nn; i++) {
		a[i] = (float)((int)(i * 7 % 9) - 4); // -4..4
		b[i] = (float)((int)(i * 5 % 7) - 3); // -3..3
	}
	float *da, *db, *dc;
	CHECK(cudaMalloc(&da, nn * sizeof(float)));
	CHECK(cudaMalloc(&db, nn * sizeof(float)));
	CHECK(cudaMalloc(&dc, nn * sizeof(float)));
	cublasHandle_t h;
	CUBLAS(cublasCreate(&h));
	cudaStream_t stream;
	CHECK(cudaStreamCreate(&stream));
	CUBLAS(cublasSetStream(h, stream));
	// Exact products: no TF32 rounding of the inputs (they are small
	// integers, exact in TF32 too, but the sums must stay in float).
	CUBLAS(cublasSetMathMode(h, CUBLAS_PEDANTIC_MATH));
	CUBLAS(cublasSetMatrix((int)n, (int)n, sizeof(float), a.data(), (int)n, da, (int)n));
	CUBLAS(cublasSetMatrix((int)n, (int)n, sizeof(float), b.data(), (int)n, db, (int)n));
	const float one = 1.0f, zero = 0.0f;
	CUBLAS(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, (int)n, (int)n, (int)n, &one, da, (int)n, db, (int)n,
			   &zero, dc, (int)n));
	CHECK(cudaStreamSynchronize(stream));
	double ts = now_s();
	for (long it = 0; it < iters; it++)
		CUBLAS(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, (int)n, (int)n, (int)n, &one, da, (int)n, db,
				   (int)n, &zero, dc, (int)n));
	CHECK(cudaStreamSynchronize(stream));
	double sgemm_s = now_s() - ts;
	CUBLAS(cublasGetMatrix((int)n, (int)n, sizeof(float), dc, (int)n, c.data(), (int)n));
	// Column-major: C[i + j*n] = sum_k A[i + k*n] * B[k + j*n]. Every
	// partial sum is an integer below 2^24, so float is exact.
	long mismatches = 0;
	std::vector<float> col(n);
	for (long j = 0; j < n; j++) {
		for (long i = 0; i < n; i++)
			col[i] = 0;
		for (long k = 0; k < n; k++) {
			float bkj = b[k + j * n];
			const float *ak = &a[k * n];
			for (long i = 0; i < n; i++)
				col[i] += ak[i] * bkj;
		}
		for (long i = 0; i < n; i++)
			mismatches += col[i] != c[i + j * n];
	}
	uint64_t sum = fnv1a64(c.data(), nn * sizeof(float), 0xcbf29ce484222325ULL);
	double gflops = iters > 0 && sgemm_s > 0 ? 2.0 * n * n * n * iters / sgemm_s / 1e9 : 0;

	// ---- cuFFT: forward and inverse of a cosine, batched ----
	const int len = 1 << 16, batch = 16, freq = 1234;
	std::vector<cufftComplex> x((size_t)len * batch), y((size_t)len * batch);
	for (int bi = 0; bi < batch; bi++)
		for (int t = 0; t < len; t++) {
			x[(size_t)bi * len + t].x = (float)cos(2 * M_PI * (double)(freq + bi) * t / len);
			x[(size_t)bi * len + t].y = 0;
		}
	cufftComplex *dx;
	CHECK(cudaMalloc(&dx, x.size() * sizeof(cufftComplex)));
	CHECK(cudaMemcpy(dx, x.data(), x.size() * sizeof(cufftComplex), cudaMemcpyHostToDevice));
	cufftHandle plan;
	CUFFT(cufftPlan1d(&plan, len, CUFFT_C2C, batch));
	CUFFT(cufftSetStream(plan, stream));
	CUFFT(cufftExecC2C(plan, dx, dx, CUFFT_FORWARD));
	CHECK(cudaStreamSynchronize(stream));
	CHECK(cudaMemcpy(y.data(), dx, y.size() * sizeof(cufftComplex), cudaMemcpyDeviceToHost));
	// Spectrum of cos(2 pi f t / len): len/2 at f and len - f, 0 elsewhere.
	double peak_err = 0;
	for (int bi = 0; bi < batch; bi++) {
		int f = freq + bi;
		for (int k = 0; k < len; k++) {
			const cufftComplex &v = y[(size_t)bi * len + k];
			double want = (k == f || k == len - f) ? len / 2.0 : 0.0;
			double e = hypot(v.x - want, v.y) / len;
			if (e > peak_err)
				peak_err = e;
		}
	}
	CUFFT(cufftExecC2C(plan, dx, dx, CUFFT_INVERSE));
	CHECK(cudaStreamSynchronize(stream));
	CHECK(cudaMemcpy(y.data(), dx, y.size() * sizeof(cufftComplex), cudaMemcpyDeviceToHost));
	double round_err = 0;
	for (size_t i = 0; i < x.size(); i++) {
		double e = hypot(y[i].x / len - x[i].x, y[i].y / len - x[i].y);
		if (e > round_err)
			round_err = e;
	}
	CUFFT(cufftDestroy(plan));
	CUBLAS(cublasDestroy(h));
	CHECK(cudaStreamDestroy(stream));
	CHECK(cudaFree(da));
	CHECK(cudaFree(db));
	CHECK(cudaFree(dc));
	CHECK(cudaFree(dx));

	// Float FFTs of this length are good to about 1e-6 of the peak.
	bool ok = mismatches == 0 && peak_err < 1e-4 && round_err < 1e-4;
	printf("RESULT workload=libs verified=%s checksum=%016llx sgemm_n=%ld sgemm_gflops=%.1f "
	       "sgemm_mismatches=%ld "
	       "fft_peak_err=%.3g fft_roundtrip_err=%.3g elapsed_s=%.3f\n",
	       ok ? "yes" : "no", (unsigned long long)sum, n, gflops, mismatches, peak_err, round_err,
	       now_s() - t0);
	return ok ? 0 : 1;
}
