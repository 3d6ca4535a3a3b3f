/* SPDX-License-Identifier: Apache-2.0 */
/* BlackScholes.cu - European call and put prices for N options with the
 * Black-Scholes formula, in the style of the CUDA sample: a batch of kernel
 * launches timed with events, a double-precision CPU reference, and an error
 * check against a tolerance. A bundled workload: -n options, -i launches per
 * pass, -t seconds of passes (for demos); ends with one RESULT line (with a
 * checksum of the prices).
 *
 * Plain CUDA runtime code; nothing here knows about xgpu.
 */
#include <cuda_runtime.h>

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *kWorkload = "BlackScholes";

#include "../workload.h"

static const float RISKFREE = 0.02f;
static const float VOLATILITY = 0.30f;
/* Averaged relative error (L1 norm) and largest absolute error accepted
 * against the double-precision reference. */
static const double L1_TOLERANCE = 1e-6;
static const double MAX_ABS_TOLERANCE = 1e-3;

/* Polynomial approximation of the cumulative normal distribution
 * (Abramowitz and Stegun 26.2.17). */
__device__ inline float cndGPU(float d)
{
	const float A1 = 0.31938153f;
	const float A2 = -0.356563782f;
	const float A3 = 1.781477937f;
	const float A4 = -1.821255978f;
	const float A5 = 1.330274429f;
	const float RSQRT2PI = 0.39894228040143267793994605993438f;

	float K = __fdividef(1.0f, (1.0f + 0.2316419f * fabsf(d)));
	float cnd = RSQRT2PI * __expf(-0.5f * d * d) * (K * (A1 + K * (A2 + K * (A3 + K * (A4 + K * A5)))));
	if (d > 0)
		cnd = 1.0f - cnd;
	return cnd;
}

__device__ inline void BlackScholesBodyGPU(float &callResult, float &putResult, float S, float X, float T,
					   float R, float V)
{
	float sqrtT = __fdividef(1.0f, rsqrtf(T));
	float d1 = __fdividef(__logf(S / X) + (R + 0.5f * V * V) * T, V * sqrtT);
	float d2 = d1 - V * sqrtT;
	float cndd1 = cndGPU(d1);
	float cndd2 = cndGPU(d2);
	float expRT = __expf(-R * T);
	callResult = S * cndd1 - X * expRT * cndd2;
	putResult = X * expRT * (1.0f - cndd2) - S * (1.0f - cndd1);
}

/* One option per thread: stock price S, strike X, years to expiry T. */
__global__ void __launch_bounds__(128)
    BlackScholesGPU(float *__restrict__ d_CallResult, float *__restrict__ d_PutResult,
		    const float *__restrict__ d_StockPrice, const float *__restrict__ d_OptionStrike,
		    const float *__restrict__ d_OptionYears, float Riskfree, float Volatility, int optN)
{
	const int opt = blockDim.x * blockIdx.x + threadIdx.x;
	if (opt < optN) {
		float callResult, putResult;
		BlackScholesBodyGPU(callResult, putResult, d_StockPrice[opt], d_OptionStrike[opt],
				    d_OptionYears[opt], Riskfree, Volatility);
		d_CallResult[opt] = callResult;
		d_PutResult[opt] = putResult;
	}
}

/* ---- CPU reference, in double precision ---------------------------------- */

static double cndCPU(double d)
{
	const double A1 = 0.31938153;
	const double A2 = -0.356563782;
	const double A3 = 1.781477937;
	const double A4 = -1.821255978;
	const double A5 = 1.330274429;
	const double RSQRT2PI = 0.39894228040143267793994605993438;

	double K = 1.0 / (1.0 + 0.2316419 * fabs(d));
	double cnd = RSQRT2PI * exp(-0.5 * d * d) * (K * (A1 + K * (A2 + K * (A3 + K * (A4 + K * A5)))));
	if (d > 0)
		cnd = 1.0 - cnd;
	return cnd;
}

static void BlackScholesCPU(double *call, double *put, const float *S, const float *X, const float *T,
			    double R, double V, int optN)
{
	for (int i = 0; i < optN; i++) {
		double s = S[i], x = X[i], t = T[i];
		double sqrtT = sqrt(t);
		double d1 = (log(s / x) + (R + 0.5 * V * V) * t) / (V * sqrtT);
		double d2 = d1 - V * sqrtT;
		double cndd1 = cndCPU(d1);
		double cndd2 = cndCPU(d2);
		double expRT = exp(-R * t);
		call[i] = s * cndd1 - x * expRT * cndd2;
		put[i] = x * expRT * (1.0 - cndd2) - s * (1.0 - cndd1);
	}
}

/* ---- driver ---------------------------------------------------------------- */

static float randFloat(uint64_t *state, float low, float high)
{
	/* xorshift64*, so inputs are the same on every host */
	*state ^= *state >> 12;
	*state ^= *state << 25;
	*state ^= *state >> 27;
	uint64_t r = *state * 0x2545F4914F6CDD1DULL;
	float t = (float)(r >> 40) / (float)(1 << 24);
	return (1.0f - t) * low + t * high;
}

static void usage(FILE *f, const char *prog)
{
	fprintf(f,
		"usage: %s [-n OPTIONS] [-i ITERATIONS] [-t SECONDS]\n"
		"  -n N    options to price (default 1M; suffixes K, M allowed)\n"
		"  -i N    kernel launches per pass (default 8)\n"
		"  -t S    repeat passes for at least S seconds (default: one pass)\n"
		"  --help  this text\n"
		"Each pass prices all options N times on the GPU, copies the prices back and checks\n"
		"them against a double-precision CPU reference.\n",
		prog);
}

int main(int argc, char **argv)
{
	long n = 1L << 20, iters = 8;
	double duration = 0;
	static const struct option longopts[] = {{"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
	int c;
	while ((c = getopt_long(argc, argv, "n:i:t:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'n':
			/* Sizes of the five arrays must fit comfortably in memory and in int. */
			if (parse_count(optarg, 1L << 28, &n)) {
				fprintf(stderr, "%s: bad option count '%s'\n", argv[0], optarg);
				return 2;
			}
			break;
		case 'i':
			if (parse_count(optarg, 1L << 30, &iters)) {
				fprintf(stderr, "%s: bad iteration count '%s'\n", argv[0], optarg);
				return 2;
			}
			break;
		case 't':
			if (parse_seconds(optarg, 1e7, &duration)) {
				fprintf(stderr, "%s: bad duration '%s'\n", argv[0], optarg);
				return 2;
			}
			break;
		case 'h':
			usage(stdout, argv[0]);
			return 0;
		default:
			usage(stderr, argv[0]);
			return 2;
		}
	}
	if (optind != argc) {
		usage(stderr, argv[0]);
		return 2;
	}

	const int optN = (int)n;
	const size_t optSz = (size_t)optN * sizeof(float);
	printf("[BlackScholes: %d options, %ld launch(es) per pass]\n", optN, iters);

	float *h_CallResultGPU = (float *)malloc(optSz);
	float *h_PutResultGPU = (float *)malloc(optSz);
	float *h_StockPrice = (float *)malloc(optSz);
	float *h_OptionStrike = (float *)malloc(optSz);
	float *h_OptionYears = (float *)malloc(optSz);
	double *h_CallResultCPU = (double *)malloc((size_t)optN * sizeof(double));
	double *h_PutResultCPU = (double *)malloc((size_t)optN * sizeof(double));
	if (!h_CallResultGPU || !h_PutResultGPU || !h_StockPrice || !h_OptionStrike || !h_OptionYears ||
	    !h_CallResultCPU || !h_PutResultCPU) {
		fprintf(stderr, "failed to allocate host arrays\n");
		printf("RESULT workload=%s verified=no error=host_oom\n", kWorkload);
		return 1;
	}

	uint64_t seed = 5347;
	for (int i = 0; i < optN; i++) {
		h_StockPrice[i] = randFloat(&seed, 5.0f, 30.0f);
		h_OptionStrike[i] = randFloat(&seed, 1.0f, 100.0f);
		h_OptionYears[i] = randFloat(&seed, 0.25f, 10.0f);
	}
	BlackScholesCPU(h_CallResultCPU, h_PutResultCPU, h_StockPrice, h_OptionStrike, h_OptionYears,
			RISKFREE, VOLATILITY, optN);

	float *d_CallResult, *d_PutResult, *d_StockPrice, *d_OptionStrike, *d_OptionYears;
	CHECK(cudaMalloc((void **)&d_CallResult, optSz));
	CHECK(cudaMalloc((void **)&d_PutResult, optSz));
	CHECK(cudaMalloc((void **)&d_StockPrice, optSz));
	CHECK(cudaMalloc((void **)&d_OptionStrike, optSz));
	CHECK(cudaMalloc((void **)&d_OptionYears, optSz));
	CHECK(cudaMemcpy(d_StockPrice, h_StockPrice, optSz, cudaMemcpyHostToDevice));
	CHECK(cudaMemcpy(d_OptionStrike, h_OptionStrike, optSz, cudaMemcpyHostToDevice));
	CHECK(cudaMemcpy(d_OptionYears, h_OptionYears, optSz, cudaMemcpyHostToDevice));

	cudaEvent_t start, stop;
	CHECK(cudaEventCreate(&start));
	CHECK(cudaEventCreate(&stop));

	const int threads = 128;
	const int blocks = (optN + threads - 1) / threads;

	bool ok = true;
	long passes = 0, kernels = 0;
	double gpu_ms_total = 0, kernel_wall_s = 0, max_abs = 0, l1 = 0;
	double t0 = now_s();
	do {
		/* All-ones bytes are NaN: stale prices can never pass the check. */
		CHECK(cudaMemset(d_CallResult, 0xff, optSz));
		CHECK(cudaMemset(d_PutResult, 0xff, optSz));
		CHECK(cudaDeviceSynchronize());

		double k0 = now_s();
		CHECK(cudaEventRecord(start, 0));
		for (long it = 0; it < iters; it++) {
			BlackScholesGPU<<<blocks, threads>>>(d_CallResult, d_PutResult, d_StockPrice,
							     d_OptionStrike, d_OptionYears, RISKFREE,
							     VOLATILITY, optN);
			CHECK(cudaGetLastError());
		}
		CHECK(cudaEventRecord(stop, 0));
		CHECK(cudaEventSynchronize(stop));
		kernel_wall_s += now_s() - k0;
		float ms = 0;
		CHECK(cudaEventElapsedTime(&ms, start, stop));
		gpu_ms_total += ms;
		kernels += iters;
		passes++;

		CHECK(cudaMemcpy(h_CallResultGPU, d_CallResult, optSz, cudaMemcpyDeviceToHost));
		CHECK(cudaMemcpy(h_PutResultGPU, d_PutResult, optSz, cudaMemcpyDeviceToHost));

		double sum_delta = 0, sum_ref = 0;
		max_abs = 0;
		for (int i = 0; i < optN; i++) {
			double dc = fabs(h_CallResultCPU[i] - (double)h_CallResultGPU[i]);
			double dp = fabs(h_PutResultCPU[i] - (double)h_PutResultGPU[i]);
			if (!(dc <= MAX_ABS_TOLERANCE) || !(dp <= MAX_ABS_TOLERANCE)) {
				if (ok)
					fprintf(stderr,
						"option %d: call %.6f (expected %.6f), put %.6f (expected "
						"%.6f)\n",
						i, h_CallResultGPU[i], h_CallResultCPU[i], h_PutResultGPU[i],
						h_PutResultCPU[i]);
				ok = false;
			}
			if (dc != dc || dp != dp)
				max_abs = INFINITY;
			if (dc > max_abs)
				max_abs = dc;
			if (dp > max_abs)
				max_abs = dp;
			sum_delta += dc + dp;
			sum_ref += fabs(h_CallResultCPU[i]) + fabs(h_PutResultCPU[i]);
		}
		l1 = sum_ref > 0 ? sum_delta / sum_ref : sum_delta;
		if (!(l1 <= L1_TOLERANCE))
			ok = false;
	} while (ok && now_s() - t0 < duration);
	double elapsed = now_s() - t0;

	/* Of the last pass's call prices, then put prices, as copied back. */
	uint64_t checksum =
	    fnv1a64(h_PutResultGPU, optSz, fnv1a64(h_CallResultGPU, optSz, 0xcbf29ce484222325ULL));

	CHECK(cudaEventDestroy(start));
	CHECK(cudaEventDestroy(stop));
	CHECK(cudaFree(d_OptionYears));
	CHECK(cudaFree(d_OptionStrike));
	CHECK(cudaFree(d_StockPrice));
	CHECK(cudaFree(d_PutResult));
	CHECK(cudaFree(d_CallResult));
	free(h_PutResultCPU);
	free(h_CallResultCPU);
	free(h_OptionYears);
	free(h_OptionStrike);
	free(h_StockPrice);
	free(h_PutResultGPU);
	free(h_CallResultGPU);

	double options = (double)optN * (double)kernels;
	double gpu_s = gpu_ms_total / 1e3;
	double opts_per_s = gpu_s > 0 ? options / gpu_s : 0;
	double wall_opts_per_s = kernel_wall_s > 0 ? options / kernel_wall_s : 0;
	/* three inputs read, two prices written per option */
	double gbps = gpu_s > 0 ? options * 5 * sizeof(float) / gpu_s / 1e9 : 0;
	printf("BlackScholesGPU() time    : %f msec per launch (%ld launches in %ld passes)\n",
	       gpu_ms_total / (double)kernels, kernels, passes);
	printf("Effective memory bandwidth: %f GB/s\n", gbps);
	printf("Gigaoptions per second    : %f (GPU time), %f (wall time)\n", opts_per_s * 1e-9,
	       wall_opts_per_s * 1e-9);
	printf("L1 norm                   : %E (tolerance %E)\n", l1, L1_TOLERANCE);
	printf("Max absolute error        : %E (tolerance %E)\n", max_abs, MAX_ABS_TOLERANCE);
	printf("%s\n", ok ? "Test passed" : "Test failed!");
	printf("RESULT workload=%s verified=%s n=%d iterations=%ld passes=%ld kernels=%ld elapsed_s=%.6f "
	       "gpu_s=%.6f options_per_s=%.0f wall_options_per_s=%.0f l1_norm=%.3e max_abs_err=%.3e "
	       "checksum=%016llx\n",
	       kWorkload, ok ? "yes" : "no", optN, iters, passes, kernels, elapsed, gpu_s, opts_per_s,
	       wall_opts_per_s, l1, max_abs, (unsigned long long)checksum);
	return ok ? 0 : 1;
}
