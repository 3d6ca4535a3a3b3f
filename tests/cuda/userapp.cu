/* SPDX-License-Identifier: Apache-2.0 */
/* userapp.cu - a CUDA program written the way users write them, to run
 * unchanged through xgpu: two streams ordered with an event, pinned host
 * buffers with async copies both ways, three kernels (scale-and-offset, a
 * 3-point stencil taking a struct by value, a shared-memory block reduction),
 * cudaMemset, event timing, and a __device__ variable written and read back
 * through cudaMemcpyToSymbol / cudaMemcpyFromSymbol. Everything is checked on
 * the CPU; prints "RESULT workload=userapp verified=yes ..." and exits 0 only
 * if all of it is right.
 */
#include <cuda_runtime.h>

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CHECK(call)                                                                                          \
	do {                                                                                                 \
		cudaError_t err_ = (call);                                                                   \
		if (err_ != cudaSuccess) {                                                                   \
			fprintf(stderr, "%s:%d: %s failed: %s (%s)\n", __FILE__, __LINE__, #call,            \
				cudaGetErrorString(err_), cudaGetErrorName(err_));                           \
			printf("RESULT workload=userapp verified=no error=%s\n", cudaGetErrorName(err_));    \
			exit(EXIT_FAILURE);                                                                  \
		}                                                                                            \
	} while (0)

/* Passed by value: the int before the double makes nvcc pad inside it. */
struct StencilParams {
	int n;       /* elements */
	double bias; /* added to every output */
	float w[3];  /* weights of the left, centre and right neighbour */
};

/* Run bookkeeping the host keeps in device memory. */
__device__ unsigned int g_runInfo[4];

__global__ void scaleOffset(int n, const float *in, float *out, float scale, float offset)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		out[i] = in[i] * scale + offset;
}

/* Interior points only: out[0] and out[n - 1] keep what was there. */
__global__ void stencil3(const float *in, float *out, StencilParams p)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i > 0 && i < p.n - 1)
		out[i] = (float)(p.w[0] * in[i - 1] + p.w[1] * in[i] + p.w[2] * in[i + 1] + p.bias);
}

/* One partial sum per block; blockDim.x floats of dynamic shared memory. */
__global__ void blockSum(const float *in, float *partial, int n)
{
	extern __shared__ float sdata[];
	unsigned int tid = threadIdx.x;
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	sdata[tid] = i < n ? in[i] : 0.0f;
	__syncthreads();
	for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1) {
		if (tid < s)
			sdata[tid] += sdata[tid + s];
		__syncthreads();
	}
	if (tid == 0)
		partial[blockIdx.x] = sdata[0];
}

static bool close_enough(double got, double want, double rel)
{
	return fabs(got - want) <= rel * fmax(1.0, fabs(want));
}

int main(int argc, char **argv)
{
	int n = 1 << 20;
	for (int a = 1; a < argc; a++) {
		if (!strcmp(argv[a], "--help") || !strcmp(argv[a], "-h")) {
			printf("usage: %s [-n ELEMENTS]\n"
			       "  -n N    elements (default 1048576, at least 3)\n",
			       argv[0]);
			return 0;
		} else if (!strcmp(argv[a], "-n") && a + 1 < argc) {
			char *end;
			errno = 0;
			long v = strtol(argv[++a], &end, 10);
			if (errno || *end || v < 3 || v > (1 << 28)) {
				fprintf(stderr, "%s: bad element count '%s'\n", argv[0], argv[a]);
				return 2;
			}
			n = (int)v;
		} else {
			fprintf(stderr, "usage: %s [-n ELEMENTS]\n", argv[0]);
			return 2;
		}
	}
	struct timespec ts0, ts1;
	clock_gettime(CLOCK_MONOTONIC, &ts0);

	int devices = 0;
	CHECK(cudaGetDeviceCount(&devices));
	CHECK(cudaSetDevice(0));
	cudaDeviceProp prop;
	CHECK(cudaGetDeviceProperties(&prop, 0));
	printf("userapp: %d element(s) on device 0 of %d: %s (sm_%d%d, %d SMs)\n", n, devices, prop.name,
	       prop.major, prop.minor, prop.multiProcessorCount);

	const int threads = 256;
	const int blocks = (n + threads - 1) / threads;
	const size_t bytes = (size_t)n * sizeof(float);
	const float scale = 2.5f, offset = 0.75f;
	StencilParams sp;
	sp.n = n;
	sp.bias = 0.125;
	sp.w[0] = 0.25f;
	sp.w[1] = 0.5f;
	sp.w[2] = -0.125f;

	float *h_in, *h_mid, *h_out, *h_partial;
	CHECK(cudaMallocHost((void **)&h_in, bytes));
	CHECK(cudaMallocHost((void **)&h_mid, bytes));
	CHECK(cudaMallocHost((void **)&h_out, bytes));
	CHECK(cudaMallocHost((void **)&h_partial, (size_t)blocks * sizeof(float)));
	for (int i = 0; i < n; i++)
		h_in[i] = (float)(((long long)i * 7919) % 1000) * 0.001f - 0.5f;

	float *d_in, *d_mid, *d_out, *d_partial;
	CHECK(cudaMalloc((void **)&d_in, bytes));
	CHECK(cudaMalloc((void **)&d_mid, bytes));
	CHECK(cudaMalloc((void **)&d_out, bytes));
	CHECK(cudaMalloc((void **)&d_partial, (size_t)blocks * sizeof(float)));
	/* Every byte 0x40: the stencil leaves both ends as 0x40404040 (3.00392f). */
	CHECK(cudaMemset(d_out, 0x40, bytes));
	CHECK(cudaMemset(d_partial, 0, (size_t)blocks * sizeof(float)));

	cudaStream_t s1, s2;
	CHECK(cudaStreamCreate(&s1));
	CHECK(cudaStreamCreate(&s2));
	cudaEvent_t evStart, evScaled, evSummed, evStop;
	CHECK(cudaEventCreate(&evStart));
	CHECK(cudaEventCreate(&evScaled));
	CHECK(cudaEventCreate(&evSummed));
	CHECK(cudaEventCreate(&evStop));

	/* s1: upload, scale, then reduce and download the scaled data and sums. */
	CHECK(cudaEventRecord(evStart, s1));
	CHECK(cudaMemcpyAsync(d_in, h_in, bytes, cudaMemcpyHostToDevice, s1));
	scaleOffset<<<blocks, threads, 0, s1>>>(n, d_in, d_mid, scale, offset);
	CHECK(cudaGetLastError());
	CHECK(cudaEventRecord(evScaled, s1));
	blockSum<<<blocks, threads, threads * sizeof(float), s1>>>(d_mid, d_partial, n);
	CHECK(cudaGetLastError());
	CHECK(cudaMemcpyAsync(h_partial, d_partial, (size_t)blocks * sizeof(float), cudaMemcpyDeviceToHost,
			      s1));
	CHECK(cudaMemcpyAsync(h_mid, d_mid, bytes, cudaMemcpyDeviceToHost, s1));
	CHECK(cudaEventRecord(evSummed, s1));

	/* s2: the stencil needs the scaled data, so it waits for evScaled. */
	CHECK(cudaStreamWaitEvent(s2, evScaled, 0));
	stencil3<<<blocks, threads, 0, s2>>>(d_mid, d_out, sp);
	CHECK(cudaGetLastError());
	CHECK(cudaMemcpyAsync(h_out, d_out, bytes, cudaMemcpyDeviceToHost, s2));
	CHECK(cudaStreamWaitEvent(s2, evSummed, 0));
	CHECK(cudaEventRecord(evStop, s2));

	CHECK(cudaEventSynchronize(evStop));
	float ms = -1;
	CHECK(cudaEventElapsedTime(&ms, evStart, evStop));
	CHECK(cudaStreamSynchronize(s1));
	CHECK(cudaStreamSynchronize(s2));

	/* __device__ variable: whole write, a partial write at an offset, read back. */
	unsigned int info[4] = {0xC0FFEEu, (unsigned int)n, (unsigned int)blocks, 0u};
	CHECK(cudaMemcpyToSymbol(g_runInfo, info, sizeof(info)));
	unsigned int third = 0xABCDu;
	CHECK(cudaMemcpyToSymbol(g_runInfo, &third, sizeof(third), 3 * sizeof(unsigned int)));
	unsigned int back[4] = {0, 0, 0, 0};
	CHECK(cudaMemcpyFromSymbol(back, g_runInfo, sizeof(back)));
	unsigned int second = 0;
	CHECK(cudaMemcpyFromSymbol(&second, g_runInfo, sizeof(second), 1 * sizeof(unsigned int),
				   cudaMemcpyDeviceToHost));

	/* ---- verify on the CPU -------------------------------------------------- */
	long bad = 0;
	for (int i = 0; i < n; i++) {
		float want = h_in[i] * scale + offset;
		if (!close_enough(h_mid[i], want, 1e-6)) {
			if (bad++ < 5)
				fprintf(stderr, "scaleOffset: mid[%d] = %.8g, expected %.8g\n", i, h_mid[i],
					want);
		}
	}
	/* The stencil is checked against the scaled values the GPU produced. */
	uint32_t edge_bits = 0x40404040u, got0, gotn;
	memcpy(&got0, &h_out[0], 4);
	memcpy(&gotn, &h_out[n - 1], 4);
	if (got0 != edge_bits || gotn != edge_bits) {
		fprintf(stderr, "cudaMemset: edges are 0x%08x and 0x%08x, expected 0x%08x\n", got0, gotn,
			edge_bits);
		bad++;
	}
	for (int i = 1; i < n - 1; i++) {
		double want = (double)sp.w[0] * h_mid[i - 1] + (double)sp.w[1] * h_mid[i] +
			      (double)sp.w[2] * h_mid[i + 1] + sp.bias;
		if (!close_enough(h_out[i], want, 1e-5)) {
			if (bad++ < 10)
				fprintf(stderr, "stencil3: out[%d] = %.8g, expected %.8g\n", i, h_out[i],
					want);
		}
	}
	double total = 0, total_gpu = 0;
	for (int b = 0; b < blocks; b++) {
		double want = 0, mag = 0;
		for (int i = b * threads; i < n && i < (b + 1) * threads; i++) {
			want += h_mid[i];
			mag += fabs(h_mid[i]);
		}
		/* float rounding of up to 256 terms: bound by their magnitudes */
		if (fabs(h_partial[b] - want) > 1e-5 * fmax(1.0, mag)) {
			if (bad++ < 15)
				fprintf(stderr, "blockSum: partial[%d] = %.8g, expected %.8g\n", b,
					h_partial[b], want);
		}
		total += want;
		total_gpu += h_partial[b];
	}
	if (back[0] != info[0] || back[1] != info[1] || back[2] != info[2] || back[3] != third ||
	    second != info[1]) {
		fprintf(stderr,
			"g_runInfo read back {%#x, %u, %u, %#x} and %u, expected {%#x, %u, %u, %#x} and %u\n",
			back[0], back[1], back[2], back[3], second, info[0], info[1], info[2], third,
			info[1]);
		bad++;
	}
	if (!(ms >= 0.0f)) {
		fprintf(stderr, "cudaEventElapsedTime gave %f ms\n", ms);
		bad++;
	}

	CHECK(cudaEventDestroy(evStop));
	CHECK(cudaEventDestroy(evSummed));
	CHECK(cudaEventDestroy(evScaled));
	CHECK(cudaEventDestroy(evStart));
	CHECK(cudaStreamDestroy(s2));
	CHECK(cudaStreamDestroy(s1));
	CHECK(cudaFree(d_partial));
	CHECK(cudaFree(d_out));
	CHECK(cudaFree(d_mid));
	CHECK(cudaFree(d_in));
	CHECK(cudaFreeHost(h_partial));
	CHECK(cudaFreeHost(h_out));
	CHECK(cudaFreeHost(h_mid));
	CHECK(cudaFreeHost(h_in));

	clock_gettime(CLOCK_MONOTONIC, &ts1);
	double elapsed = (double)(ts1.tv_sec - ts0.tv_sec) + (double)(ts1.tv_nsec - ts0.tv_nsec) * 1e-9;
	printf("pipeline: %.3f ms GPU time (events), sum of scaled data %.6f (GPU %.6f)\n", ms, total,
	       total_gpu);
	printf("%s: %ld mismatch(es)\n", bad ? "FAILED" : "all results verified", bad);
	printf(
	    "RESULT workload=userapp verified=%s n=%d kernels=3 elapsed_s=%.6f gpu_ms=%.6f checksum=%.6f\n",
	    bad ? "no" : "yes", n, elapsed, ms, total);
	return bad ? 1 : 0;
}
