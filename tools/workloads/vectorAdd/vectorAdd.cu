/* SPDX-License-Identifier: Apache-2.0 */
/* vectorAdd.cu - the classic CUDA vector addition C = A + B, as a bundled
 * workload: repeats the launch (-i) and whole passes (-t, for demos), checks
 * every element against the CPU and ends with one RESULT line (with a checksum
 * of the output).
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

static const char *kWorkload = "vectorAdd";

#include "../workload.h"

/* C[i] = A[i] + B[i] for the elements this grid covers. */
__global__ void vectorAdd(const float *A, const float *B, float *C, int numElements)
{
	int i = blockDim.x * blockIdx.x + threadIdx.x;

	if (i < numElements)
		C[i] = A[i] + B[i];
}

static void usage(FILE *f, const char *prog)
{
	fprintf(f,
		"usage: %s [-n ELEMENTS] [-i ITERATIONS] [-t SECONDS]\n"
		"  -n N    elements per vector (default 1M; suffixes K, M allowed)\n"
		"  -i N    kernel launches per pass (default 1)\n"
		"  -t S    repeat passes for at least S seconds (default: one pass)\n"
		"  --help  this text\n"
		"Each pass launches the kernel N times, copies C back and checks every element.\n",
		prog);
}

int main(int argc, char **argv)
{
	long n = 1L << 20, iters = 1;
	double duration = 0;
	static const struct option longopts[] = {{"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
	int c;
	while ((c = getopt_long(argc, argv, "n:i:t:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'n':
			if (parse_count(optarg, 0x7fffffffL, &n)) {
				fprintf(stderr, "%s: bad element count '%s'\n", argv[0], optarg);
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

	int numElements = (int)n;
	size_t size = (size_t)numElements * sizeof(float);
	printf("[Vector addition of %d elements, %ld launch(es) per pass]\n", numElements, iters);

	float *h_A = (float *)malloc(size);
	float *h_B = (float *)malloc(size);
	float *h_C = (float *)malloc(size);
	if (!h_A || !h_B || !h_C) {
		fprintf(stderr, "failed to allocate host vectors\n");
		printf("RESULT workload=%s verified=no error=host_oom\n", kWorkload);
		return 1;
	}
	srand(1234);
	for (int i = 0; i < numElements; ++i) {
		h_A[i] = rand() / (float)RAND_MAX;
		h_B[i] = rand() / (float)RAND_MAX;
	}

	float *d_A = NULL, *d_B = NULL, *d_C = NULL;
	CHECK(cudaMalloc((void **)&d_A, size));
	CHECK(cudaMalloc((void **)&d_B, size));
	CHECK(cudaMalloc((void **)&d_C, size));
	CHECK(cudaMemcpy(d_A, h_A, size, cudaMemcpyHostToDevice));
	CHECK(cudaMemcpy(d_B, h_B, size, cudaMemcpyHostToDevice));

	cudaEvent_t start, stop;
	CHECK(cudaEventCreate(&start));
	CHECK(cudaEventCreate(&stop));

	int threadsPerBlock = 256;
	int blocksPerGrid = (numElements + threadsPerBlock - 1) / threadsPerBlock;
	printf("CUDA kernel launch with %d blocks of %d threads\n", blocksPerGrid, threadsPerBlock);

	bool ok = true;
	long passes = 0, kernels = 0, bad_index = -1;
	double gpu_ms_total = 0;
	double t0 = now_s();
	do {
		/* All-ones bytes are NaN: stale output can never pass the check. */
		CHECK(cudaMemset(d_C, 0xff, size));
		CHECK(cudaEventRecord(start, 0));
		for (long it = 0; it < iters; ++it) {
			vectorAdd<<<blocksPerGrid, threadsPerBlock>>>(d_A, d_B, d_C, numElements);
			CHECK(cudaGetLastError());
		}
		CHECK(cudaEventRecord(stop, 0));
		CHECK(cudaMemcpy(h_C, d_C, size, cudaMemcpyDeviceToHost));
		float ms = 0;
		CHECK(cudaEventElapsedTime(&ms, start, stop));
		gpu_ms_total += ms;
		kernels += iters;
		passes++;

		for (int i = 0; i < numElements; ++i) {
			if (!(fabsf(h_A[i] + h_B[i] - h_C[i]) <= 1e-5f)) {
				bad_index = i;
				ok = false;
				break;
			}
		}
	} while (ok && now_s() - t0 < duration);
	double elapsed = now_s() - t0;

	if (!ok)
		fprintf(stderr, "Result verification failed at element %ld: %f + %f != %f\n", bad_index,
			h_A[bad_index], h_B[bad_index], h_C[bad_index]);

	/* Of the last pass's C, as copied back. */
	uint64_t checksum = fnv1a64(h_C, size, 0xcbf29ce484222325ULL);

	CHECK(cudaEventDestroy(start));
	CHECK(cudaEventDestroy(stop));
	CHECK(cudaFree(d_A));
	CHECK(cudaFree(d_B));
	CHECK(cudaFree(d_C));
	free(h_A);
	free(h_B);
	free(h_C);

	double gpu_s = gpu_ms_total / 1e3;
	double bytes = 3.0 * (double)size * (double)kernels;
	double gbps = gpu_s > 0 ? bytes / gpu_s / 1e9 : 0;
	printf("%ld pass(es), %ld kernel(s) in %.3f s; GPU time %.3f ms (%.3f ms per kernel, %.1f GB/s)\n",
	       passes, kernels, elapsed, gpu_ms_total, gpu_ms_total / (double)kernels, gbps);
	printf("%s\n", ok ? "Test PASSED" : "Test FAILED");
	printf("RESULT workload=%s verified=%s n=%d iterations=%ld passes=%ld kernels=%ld elapsed_s=%.6f "
	       "gpu_s=%.6f gbytes_per_s=%.3f checksum=%016llx\n",
	       kWorkload, ok ? "yes" : "no", numElements, iters, passes, kernels, elapsed, gpu_s, gbps,
	       (unsigned long long)checksum);
	return ok ? 0 : 1;
}
