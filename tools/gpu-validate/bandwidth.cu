/* SPDX-License-Identifier: Apache-2.0 */
/* bandwidth.cu - bulk copy bandwidth for `make gpu-validate`: cudaMemcpy host
 * to device and device to host, from pageable (malloc) and pinned
 * (cudaMallocHost) memory, at a list of sizes. Each point is one untimed copy
 * and then as many timed copies as fill the time given (at least three),
 * wall-clock timed (clock_gettime) from the first call to the end of a
 * cudaDeviceSynchronize; afterwards the bytes that came back must be the ones
 * that went. One "BW ..." line per point and one RESULT line.
 *
 * Plain CUDA runtime code; nothing here knows about xgpu.
 */
#include <cuda_runtime.h>

#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *kWorkload = "bandwidth";

#include "../workloads/workload.h"

/* "4096", "64K", "16M", "1G": a byte count in [1, 1<<40]; -1 if malformed. */
static int parse_size(const char *s, size_t *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || end == s || v < 1 || *s == '-')
		return -1;
	unsigned long long unit = 1;
	switch (*end) {
	case 'k':
	case 'K':
		unit = 1ULL << 10;
		break;
	case 'm':
	case 'M':
		unit = 1ULL << 20;
		break;
	case 'g':
	case 'G':
		unit = 1ULL << 30;
		break;
	}
	if (unit > 1)
		end++;
	if (*end || v > (1ULL << 40) / unit)
		return -1;
	*out = (size_t)(v * unit);
	return 0;
}

/* The pattern of the point seeded with seed: xorshift64 words, so bytes that
 * stayed behind from another point or another size never match. */
static uint64_t next_word(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

static void fill(unsigned char *p, size_t n, uint64_t seed)
{
	uint64_t x = seed | 1;
	size_t i = 0;
	for (; i + 8 <= n; i += 8) {
		uint64_t w = next_word(&x);
		memcpy(p + i, &w, 8);
	}
	uint64_t w = next_word(&x);
	memcpy(p + i, &w, n - i);
}

/* Offset of the first byte that differs from the pattern, or -1. */
static long long check(const unsigned char *p, size_t n, uint64_t seed)
{
	uint64_t x = seed | 1;
	size_t i = 0;
	for (; i + 8 <= n; i += 8) {
		uint64_t w = next_word(&x);
		if (memcmp(p + i, &w, 8))
			return (long long)i;
	}
	uint64_t w = next_word(&x);
	return memcmp(p + i, &w, n - i) ? (long long)i : -1;
}

struct point {
	long reps;
	double seconds;
};

/* One untimed copy, then timed copies until `secs` have passed (at least
 * three, at most max_reps). */
static struct point measure(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind, double secs,
			    long max_reps)
{
	CHECK(cudaMemcpy(dst, src, bytes, kind));
	CHECK(cudaDeviceSynchronize());
	struct point pt = {0, 0};
	double t0 = now_s();
	do {
		CHECK(cudaMemcpy(dst, src, bytes, kind));
		pt.reps++;
	} while (pt.reps < max_reps && (pt.reps < 3 || now_s() - t0 < secs));
	CHECK(cudaDeviceSynchronize());
	pt.seconds = now_s() - t0;
	return pt;
}

static void usage(FILE *f, const char *prog)
{
	fprintf(f,
		"usage: %s [-s SIZE]... [-m MAX] [-t SECONDS] [-r REPS]\n"
		"  -s SIZE  a copy size (4K, 1M, 1G...); repeatable (default 4K 64K 1M 16M 256M 1G)\n"
		"  -m MAX   leave out sizes above MAX\n"
		"  -t S     timed seconds per point (default 0.25; at least 3 copies)\n"
		"  -r N     at most N timed copies per point (default 100000)\n"
		"  --help   this text\n"
		"Prints one line per point: BW dir=h2d|d2h mem=pageable|pinned bytes= reps= seconds=\n"
		"gbps= (1e9 bytes/s) us_per_copy= verified=, then one RESULT line.\n",
		prog);
}

int main(int argc, char **argv)
{
	size_t sizes[32], nsizes = 0, max_bytes = (size_t)-1;
	double secs = 0.25;
	long max_reps = 100000;
	static const struct option longopts[] = {{"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
	int c;
	while ((c = getopt_long(argc, argv, "s:m:t:r:h", longopts, NULL)) != -1) {
		char *end;
		switch (c) {
		case 's':
			if (nsizes == sizeof(sizes) / sizeof(sizes[0]) ||
			    parse_size(optarg, &sizes[nsizes])) {
				fprintf(stderr, "%s: bad or too many sizes at '%s'\n", argv[0], optarg);
				return 2;
			}
			nsizes++;
			break;
		case 'm':
			if (parse_size(optarg, &max_bytes)) {
				fprintf(stderr, "%s: bad maximum size '%s'\n", argv[0], optarg);
				return 2;
			}
			break;
		case 't':
			if (parse_seconds(optarg, 3600, &secs)) {
				fprintf(stderr, "%s: bad seconds '%s'\n", argv[0], optarg);
				return 2;
			}
			break;
		case 'r':
			errno = 0;
			max_reps = strtol(optarg, &end, 10);
			if (errno || end == optarg || *end || max_reps < 3 || max_reps > 100000000L) {
				fprintf(stderr, "%s: bad repetition count '%s' (3 or more)\n", argv[0],
					optarg);
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
	if (!nsizes) {
		static const size_t def[] = {4u << 10, 64u << 10, 1u << 20, 16u << 20, 256u << 20, 1u << 30};
		nsizes = sizeof(def) / sizeof(def[0]);
		memcpy(sizes, def, sizeof(def));
	}
	size_t keep = 0, largest = 0;
	for (size_t i = 0; i < nsizes; i++) {
		if (sizes[i] <= max_bytes) {
			sizes[keep++] = sizes[i];
			if (sizes[i] > largest)
				largest = sizes[i];
		}
	}
	nsizes = keep;
	if (!nsizes) {
		fprintf(stderr, "%s: no size is within the maximum\n", argv[0]);
		return 2;
	}

	int dev = 0;
	cudaDeviceProp prop;
	CHECK(cudaGetDevice(&dev));
	CHECK(cudaGetDeviceProperties(&prop, dev));
	printf("[bandwidth: device %d, %s; %zu size(s) up to %zu bytes, %.2f s per point]\n", dev, prop.name,
	       nsizes, largest, secs);

	void *d_buf = NULL;
	CHECK(cudaMalloc(&d_buf, largest));

	bool ok = true;
	int points = 0;
	for (int pinned = 0; pinned < 2; pinned++) {
		/* One host buffer at a time: the largest point needs it and the device buffer only. */
		unsigned char *h_buf = NULL;
		if (pinned) {
			CHECK(cudaMallocHost((void **)&h_buf, largest));
		} else {
			h_buf = (unsigned char *)malloc(largest);
			if (!h_buf) {
				fprintf(stderr, "cannot allocate %zu bytes of host memory\n", largest);
				printf("RESULT workload=%s verified=no error=host_oom\n", kWorkload);
				return 1;
			}
		}
		const char *mem = pinned ? "pinned" : "pageable";
		for (size_t i = 0; i < nsizes; i++) {
			size_t n = sizes[i];
			uint64_t seed = 0x9e3779b97f4a7c15ULL * (n + 1) + (uint64_t)pinned;
			/* Device bytes cleared, host bytes the pattern: the H2D copies must
			 * deliver it; then host bytes cleared: the D2H copies must bring it back. */
			fill(h_buf, n, seed);
			CHECK(cudaMemset(d_buf, 0, n));
			CHECK(cudaDeviceSynchronize());
			struct point up = measure(d_buf, h_buf, n, cudaMemcpyHostToDevice, secs, max_reps);
			memset(h_buf, 0, n);
			struct point down = measure(h_buf, d_buf, n, cudaMemcpyDeviceToHost, secs, max_reps);
			long long bad = check(h_buf, n, seed);
			if (bad >= 0) {
				fprintf(stderr, "%s %zu bytes: byte %lld differs after the round trip\n", mem,
					n, bad);
				ok = false;
			}
			const struct point *pts[2] = {&up, &down};
			for (int k = 0; k < 2; k++) {
				double bytes = (double)n * (double)pts[k]->reps;
				printf("BW dir=%s mem=%s bytes=%zu reps=%ld seconds=%.6f gbps=%.3f "
				       "us_per_copy=%.3f "
				       "verified=%s\n",
				       k ? "d2h" : "h2d", mem, n, pts[k]->reps, pts[k]->seconds,
				       bytes / pts[k]->seconds / 1e9,
				       pts[k]->seconds / (double)pts[k]->reps * 1e6, bad < 0 ? "yes" : "no");
				points++;
			}
			fflush(stdout);
		}
		if (pinned)
			CHECK(cudaFreeHost(h_buf));
		else
			free(h_buf);
	}
	CHECK(cudaFree(d_buf));
	printf("RESULT workload=%s verified=%s points=%d max_bytes=%zu seconds_per_point=%.3f\n", kWorkload,
	       ok ? "yes" : "no", points, largest, secs);
	return ok ? 0 : 1;
}
