/* SPDX-License-Identifier: Apache-2.0 */
/* workload.h - what the bundled CUDA programs (tools/workloads/<name>/ and
 * tools/gpu-validate/bandwidth.cu) share: failing a CUDA call with a RESULT
 * line, the clock, the output checksum and the option parsers. Header-only,
 * so each program stays one nvcc command and plain CUDA runtime code that
 * knows nothing about xgpu.
 *
 * The including file defines `static const char *kWorkload` (the RESULT
 * line's workload name) first.
 */
#ifndef XGPU_WORKLOAD_H
#define XGPU_WORKLOAD_H

#include <cuda_runtime.h>

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* Reports a failed CUDA call, prints the RESULT line and exits 1. */
static void cuda_fail(cudaError_t err, const char *what, const char *file, int line)
{
	fprintf(stderr, "%s:%d: %s failed: %s (%s)\n", file, line, what, cudaGetErrorString(err),
		cudaGetErrorName(err));
	printf("RESULT workload=%s verified=no error=%s\n", kWorkload, cudaGetErrorName(err));
	exit(EXIT_FAILURE);
}

#define CHECK(call)                                                                                          \
	do {                                                                                                 \
		cudaError_t err_ = (call);                                                                   \
		if (err_ != cudaSuccess)                                                                     \
			cuda_fail(err_, #call, __FILE__, __LINE__);                                          \
	} while (0)

static inline double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* FNV-1a (64-bit) over n bytes, continuing from h: the RESULT line's checksum
 * of the output, equal wherever the kernel computed the same bits. */
static inline uint64_t fnv1a64(const void *p, size_t n, uint64_t h)
{
	const unsigned char *b = (const unsigned char *)p;
	for (size_t i = 0; i < n; i++) {
		h ^= b[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

/* "1000", "64K", "1M": a count in [1, max]; -1 if malformed. */
static inline int parse_count(const char *s, long max, long *out)
{
	char *end;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (errno || end == s || v < 1)
		return -1;
	long long unit = 1;
	if (*end == 'k' || *end == 'K')
		unit = 1024;
	else if (*end == 'm' || *end == 'M')
		unit = 1024 * 1024;
	if (unit > 1)
		end++;
	if (*end || v > max / unit)
		return -1;
	*out = (long)(v * unit);
	return 0;
}

/* Seconds in [0, max] (decimal); -1 if malformed. */
static inline int parse_seconds(const char *s, double max, double *out)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || end == s || *end || !(v >= 0) || v > max)
		return -1;
	*out = v;
	return 0;
}

#endif
