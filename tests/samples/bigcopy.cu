/* SPDX-License-Identifier: Apache-2.0 */
// bigcopy.cu - copies of pageable memory far larger than the channel's data
// areas, one after another as cuda-samples' dmmaTensorCoreGemm does its
// matrices: each goes through the daemon in chunks and outlasts the domain's
// GPU slot several times. The program checks every byte came back and
// reports its slowest copy, which tests/e2e/samples_regress.sh bounds (a
// slot end mid-copy once stalled it for a second each time).
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda_runtime.h>

#define CHECK(call)                                                                                          \
	do {                                                                                                 \
		cudaError_t e_ = (call);                                                                     \
		if (e_ != cudaSuccess) {                                                                     \
			fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,                        \
				cudaGetErrorString(e_));                                                     \
			exit(1);                                                                             \
		}                                                                                            \
	} while (0)

static uint32_t pattern(size_t i, uint32_t seed)
{
	uint32_t x = (uint32_t)i * 2654435761u ^ seed;
	return x ^ (x >> 15);
}

static double ms_since(std::chrono::steady_clock::time_point t0)
{
	return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

int main(int argc, char **argv)
{
	size_t mib = argc > 1 ? strtoul(argv[1], NULL, 10) : 128;
	if (mib == 0 || mib > 4096) {
		fprintf(stderr, "usage: bigcopy [MiB, 1..4096]\n");
		return 2;
	}
	size_t words = mib << 18, bytes = words * 4;
	uint32_t *src = (uint32_t *)malloc(bytes), *back = (uint32_t *)malloc(bytes);
	if (!src || !back) {
		fprintf(stderr, "bigcopy: cannot allocate 2 x %zu MiB of host memory\n", mib);
		return 1;
	}
	uint32_t *dev;
	CHECK(cudaMalloc(&dev, bytes));
	// Device work in flight before the first copy, as a program's earlier
	// copies and memsets leave it.
	CHECK(cudaMemset(dev, 0, bytes));
	double slowest = 0;
	uint32_t sum = 0;
	for (uint32_t rep = 0; rep < 3; rep++) {
		for (size_t i = 0; i < words; i++)
			src[i] = pattern(i, rep);
		memset(back, 0, bytes);
		auto t0 = std::chrono::steady_clock::now();
		CHECK(cudaMemcpy(dev, src, bytes, cudaMemcpyHostToDevice));
		double h2d = ms_since(t0);
		t0 = std::chrono::steady_clock::now();
		CHECK(cudaMemcpy(back, dev, bytes, cudaMemcpyDeviceToHost));
		double d2h = ms_since(t0);
		printf("rep %u: %zu MiB host-to-device %.0f ms, device-to-host %.0f ms\n", rep, mib, h2d,
		       d2h);
		slowest = h2d > slowest ? h2d : slowest;
		slowest = d2h > slowest ? d2h : slowest;
		for (size_t i = 0; i < words; i++) {
			if (back[i] != pattern(i, rep)) {
				printf("RESULT bigcopy verified=no word=%zu got=%08x want=%08x\n", i, back[i],
				       pattern(i, rep));
				return 1;
			}
			sum = sum * 31u + back[i];
		}
	}
	CHECK(cudaFree(dev));
	free(src);
	free(back);
	printf("RESULT bigcopy verified=yes checksum=%08x slowest_ms=%.0f\n", sum, slowest);
	return 0;
}
