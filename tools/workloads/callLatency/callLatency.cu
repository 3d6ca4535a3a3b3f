/* SPDX-License-Identifier: Apache-2.0 */
/* callLatency.cu - how long single CUDA runtime calls take: (a) an empty
 * kernel launch followed by cudaStreamSynchronize, (b) cudaStreamQuery on an
 * idle stream, (c) a 4-byte cudaMemcpy host-to-device and device-to-host,
 * (d) cudaEventRecord + cudaEventSynchronize. Prints mean, p50 and p99 in
 * microseconds per call and one RESULT line. A bundled workload: -i calls per
 * test and round, -t seconds of rounds.
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

static const char *kWorkload = "callLatency";

#include "../workload.h"

__global__ void emptyKernel()
{
}

/* Every thread adds one: after the check phase the counter holds the number
 * of threads launched. */
__global__ void bump(unsigned int *counter)
{
	atomicAdd(counter, 1u);
}

static double now_us(void)
{
	return now_s() * 1e6;
}

/* A growing array of samples in microseconds. */
struct samples {
	const char *key;   /* RESULT key prefix */
	const char *title; /* for the table */
	double *v;
	size_t n, cap;
};

static void add_sample(struct samples *s, double us)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 4096;
		double *v = (double *)realloc(s->v, cap * sizeof(double));
		if (!v) {
			fprintf(stderr, "out of memory for samples\n");
			printf("RESULT workload=%s verified=no error=host_oom\n", kWorkload);
			exit(EXIT_FAILURE);
		}
		s->v = v;
		s->cap = cap;
	}
	s->v[s->n++] = us;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

struct stats {
	double mean, p50, p99;
};

/* Nearest-rank percentiles over the sorted samples. */
static struct stats summarize(struct samples *s)
{
	struct stats st = {0, 0, 0};
	if (!s->n)
		return st;
	qsort(s->v, s->n, sizeof(double), cmp_double);
	double sum = 0;
	for (size_t i = 0; i < s->n; i++)
		sum += s->v[i];
	st.mean = sum / (double)s->n;
	size_t r50 = (s->n * 50 + 99) / 100, r99 = (s->n * 99 + 99) / 100;
	st.p50 = s->v[(r50 ? r50 : 1) - 1];
	st.p99 = s->v[(r99 ? r99 : 1) - 1];
	return st;
}

static void usage(FILE *f, const char *prog)
{
	fprintf(f,
		"usage: %s [-i ITERATIONS] [-t SECONDS]\n"
		"  -i N    timed calls per test and round (default 2000)\n"
		"  -t S    repeat rounds for at least S seconds (default: one round)\n"
		"  --help  this text\n"
		"Tests: launch+sync (empty kernel, cudaStreamSynchronize), stream query (idle stream),\n"
		"memcpy H2D and D2H (4 bytes each), event record+sync.\n",
		prog);
}

int main(int argc, char **argv)
{
	long iters = 2000;
	double duration = 0;
	static const struct option longopts[] = {{"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
	int c;
	while ((c = getopt_long(argc, argv, "i:t:h", longopts, NULL)) != -1) {
		char *end;
		switch (c) {
		case 'i':
			errno = 0;
			iters = strtol(optarg, &end, 10);
			if (errno || end == optarg || *end || iters < 1 || iters > 100000000L) {
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

	/* Create the context up front so the first timed call does not pay for it. */
	CHECK(cudaFree(0));
	cudaStream_t stream;
	CHECK(cudaStreamCreate(&stream));
	cudaEvent_t ev;
	CHECK(cudaEventCreate(&ev));
	unsigned int *d_word, *d_counter;
	CHECK(cudaMalloc((void **)&d_word, sizeof(unsigned int)));
	CHECK(cudaMalloc((void **)&d_counter, sizeof(unsigned int)));

	struct samples launch = {"launch_sync", "empty kernel launch + stream sync", NULL, 0, 0};
	struct samples query = {"stream_query", "cudaStreamQuery (idle stream)", NULL, 0, 0};
	struct samples h2d = {"memcpy_h2d", "cudaMemcpy 4 B host to device", NULL, 0, 0};
	struct samples d2h = {"memcpy_d2h", "cudaMemcpy 4 B device to host", NULL, 0, 0};
	struct samples event = {"event_sync", "cudaEventRecord + cudaEventSynchronize", NULL, 0, 0};
	struct samples *all[] = {&launch, &query, &h2d, &d2h, &event};
	const size_t nall = sizeof(all) / sizeof(all[0]);

	/* Warm up: module load, lazy allocations, first copies. */
	for (int i = 0; i < 20; i++) {
		emptyKernel<<<1, 1, 0, stream>>>();
		CHECK(cudaGetLastError());
		CHECK(cudaStreamSynchronize(stream));
		unsigned int v = (unsigned int)i;
		CHECK(cudaMemcpy(d_word, &v, sizeof(v), cudaMemcpyHostToDevice));
		CHECK(cudaMemcpy(&v, d_word, sizeof(v), cudaMemcpyDeviceToHost));
		CHECK(cudaEventRecord(ev, stream));
		CHECK(cudaEventSynchronize(ev));
	}

	bool ok = true;
	long rounds = 0, kernels = 20, mismatches = 0;
	double t0 = now_us();
	do {
		for (long i = 0; i < iters; i++) {
			double a = now_us();
			emptyKernel<<<1, 1, 0, stream>>>();
			CHECK(cudaGetLastError());
			CHECK(cudaStreamSynchronize(stream));
			add_sample(&launch, now_us() - a);
		}
		kernels += iters;

		for (long i = 0; i < iters; i++) {
			double a = now_us();
			cudaError_t r = cudaStreamQuery(stream);
			double b = now_us();
			if (r != cudaSuccess)
				cuda_fail(r, "cudaStreamQuery(idle stream)", __FILE__, __LINE__);
			add_sample(&query, b - a);
		}

		for (long i = 0; i < iters; i++) {
			unsigned int v = 0x9e3779b9u * (unsigned int)(rounds * iters + i + 1), back = ~v;
			double a = now_us();
			CHECK(cudaMemcpy(d_word, &v, sizeof(v), cudaMemcpyHostToDevice));
			double b = now_us();
			CHECK(cudaMemcpy(&back, d_word, sizeof(back), cudaMemcpyDeviceToHost));
			double e = now_us();
			add_sample(&h2d, b - a);
			add_sample(&d2h, e - b);
			if (back != v)
				mismatches++;
		}

		for (long i = 0; i < iters; i++) {
			double a = now_us();
			CHECK(cudaEventRecord(ev, stream));
			CHECK(cudaEventSynchronize(ev));
			add_sample(&event, now_us() - a);
		}
		rounds++;
	} while ((now_us() - t0) * 1e-6 < duration);
	double elapsed = (now_us() - t0) * 1e-6;

	if (mismatches) {
		fprintf(stderr, "%ld of the 4-byte round trips read back a different value\n", mismatches);
		ok = false;
	}

	/* Check that kernels really run: 8 launches of 2 x 64 threads, one atomic add each. */
	const unsigned int bump_launches = 8, bump_blocks = 2, bump_threads = 64;
	CHECK(cudaMemsetAsync(d_counter, 0, sizeof(unsigned int), stream));
	for (unsigned int i = 0; i < bump_launches; i++) {
		bump<<<bump_blocks, bump_threads, 0, stream>>>(d_counter);
		CHECK(cudaGetLastError());
	}
	kernels += bump_launches;
	unsigned int counter = 0;
	CHECK(cudaMemcpyAsync(&counter, d_counter, sizeof(counter), cudaMemcpyDeviceToHost, stream));
	CHECK(cudaStreamSynchronize(stream));
	if (counter != bump_launches * bump_blocks * bump_threads) {
		fprintf(stderr, "kernel check: counter is %u, expected %u\n", counter,
			bump_launches * bump_blocks * bump_threads);
		ok = false;
	}

	CHECK(cudaFree(d_counter));
	CHECK(cudaFree(d_word));
	CHECK(cudaEventDestroy(ev));
	CHECK(cudaStreamDestroy(stream));

	struct stats st[sizeof(all) / sizeof(all[0])];
	printf("%-42s %10s %10s %10s %10s\n", "call (us per call)", "calls", "mean", "p50", "p99");
	for (size_t k = 0; k < nall; k++) {
		st[k] = summarize(all[k]);
		printf("%-42s %10zu %10.2f %10.2f %10.2f\n", all[k]->title, all[k]->n, st[k].mean, st[k].p50,
		       st[k].p99);
	}
	printf("%ld round(s) of %ld calls per test in %.3f s; %s\n", rounds, iters, elapsed,
	       ok ? "all values verified" : "VERIFICATION FAILED");

	printf("RESULT workload=%s verified=%s iterations=%ld rounds=%ld kernels=%ld elapsed_s=%.6f",
	       kWorkload, ok ? "yes" : "no", iters, rounds, kernels, elapsed);
	for (size_t k = 0; k < nall; k++)
		printf(" %s_mean_us=%.3f %s_p50_us=%.3f %s_p99_us=%.3f", all[k]->key, st[k].mean, all[k]->key,
		       st[k].p50, all[k]->key, st[k].p99);
	printf("\n");
	for (size_t k = 0; k < nall; k++)
		free(all[k]->v);
	return ok ? 0 : 1;
}
