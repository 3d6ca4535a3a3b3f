/* SPDX-License-Identifier: Apache-2.0 */
/* xgpu-ring-variants.c - ways of moving bulk bytes through a 4 MiB data area,
 * compared alternately in one run (issue 26, Speed): a shared 2-vCPU host's
 * seconds swing by 2-3x between runs, so variants measured apart tell
 * nothing. Each variant is a slice size and a copy routine for each side;
 * each side's stream calls are timed in CPU time (CLOCK_THREAD_CPUTIME_ID),
 * which, unlike the wall clock, the host's other load barely moves, and
 * each thread's run-queue wait (schedstat) says how loaded the run was.
 *
 *   xgpu-ring-variants MIB ROUNDS SLICE_KIB,PRODUCER,CONSUMER[,AREA_KIB] ...
 *
 * AREA_KIB: the data area's size, a power of two (the frontend's default,
 * 4096, unless given; XGPU_DATA_SIZE sets a program's).
 * PRODUCER and CONSUMER: memcpy (glibc), nt (xgpu_memcpy_nt, as the
 * frontend's rx reads large transfers), nt32 (32-byte non-temporal stores,
 * where the CPU has AVX2) or movsb (rep movsb). Prints, per variant, the
 * median and best wall-clock GB/s, each side's median CPU-time GB/s, and
 * the mean share of the run either thread waited for a CPU; then memcpy's.
 * Each round runs memcpy, then every variant, starting one further along.
 */
#include "queue.h"
#include "threadstat.h"
#include "util.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

enum copy_kind { C_MEMCPY, C_NT, C_NT32, C_MOVSB };
static const char *const copy_names[] = {"memcpy", "nt", "nt32", "movsb"};

struct variant {
	char name[48];
	uint32_t slice, area;
	enum copy_kind prod, cons;
};

struct run {
	struct xgpu_queue q;
	struct xgpu_qend p, c;
	const uint8_t *src;
	uint8_t *dst;
	size_t n;
	const struct variant *v;
	uint64_t cpu_ns[2], rq_ns[2];
	/* Timed from when both threads run on their CPUs (moving there may
	 * wait a time slice) to the consumer's last byte. */
	struct bench_gate gate;
	uint64_t t_end;
};

#define MAX_VARIANTS 16
#define MAX_ROUNDS 64

#if defined(__x86_64__)
__attribute__((target("avx2"))) static void copy_nt32(void *dst, const void *src, size_t n)
{
	uint8_t *d = dst;
	const uint8_t *s = src;
	size_t head = (32 - ((uintptr_t)d & 31)) & 31;
	if (n < head + 256 || !__builtin_cpu_supports("avx2")) {
		xgpu_memcpy_nt(dst, src, n);
		return;
	}
	memcpy(d, s, head);
	d += head;
	s += head;
	n -= head;
	for (; n >= 128; n -= 128, d += 128, s += 128) {
		__m256i a = _mm256_loadu_si256((const __m256i *)s),
			b = _mm256_loadu_si256((const __m256i *)(s + 32)),
			c = _mm256_loadu_si256((const __m256i *)(s + 64)),
			e = _mm256_loadu_si256((const __m256i *)(s + 96));
		_mm256_stream_si256((__m256i *)d, a);
		_mm256_stream_si256((__m256i *)(d + 32), b);
		_mm256_stream_si256((__m256i *)(d + 64), c);
		_mm256_stream_si256((__m256i *)(d + 96), e);
	}
	memcpy(d, s, n);
	_mm_sfence();
}

static void copy_movsb(void *dst, const void *src, size_t n)
{
	__asm__ volatile("rep movsb" : "+D"(dst), "+S"(src), "+c"(n) : : "memory");
}
#else
#define copy_nt32 xgpu_memcpy_nt
#define copy_movsb memcpy
#endif

static void copy(enum copy_kind k, void *dst, const void *src, size_t n)
{
	switch (k) {
	case C_MEMCPY:
		memcpy(dst, src, n);
		break;
	case C_NT:
		xgpu_memcpy_nt(dst, src, n);
		break;
	case C_NT32:
		copy_nt32(dst, src, n);
		break;
	case C_MOVSB:
		copy_movsb(dst, src, n);
		break;
	}
}

/* Both sides spin rather than sleep: with a CPU each, as measured here, a
 * side with nothing to do has nothing else to run. */
static void *producer(void *arg)
{
	struct run *r = arg;
	struct xgpu_qend *p = &r->p;
	bench_gate_enter(&r->gate, 0);
	uint64_t rq0 = thread_rq_ns();
	for (size_t sent = 0; sent < r->n;) {
		size_t want = r->n - sent < r->v->slice ? r->n - sent : r->v->slice;
		int64_t space = xgpu_q_space_for(p, (uint32_t)want);
		if (space < (int64_t)want) {
			xgpu_cpu_relax();
			continue;
		}
		uint64_t t0 = thread_cpu_ns();
		uint32_t off = p->idx & (p->size - 1);
		size_t first = p->size - off < want ? p->size - off : want;
		copy(r->v->prod, p->buf + off, r->src + sent, first);
		copy(r->v->prod, p->buf, r->src + sent + first, want - first);
		xgpu_q_publish(p, (uint32_t)want);
		r->cpu_ns[0] += thread_cpu_ns() - t0;
		sent += want;
	}
	r->rq_ns[0] = thread_rq_ns() - rq0;
	return NULL;
}

static void *consumer(void *arg)
{
	struct run *r = arg;
	struct xgpu_qend *c = &r->c;
	bench_gate_enter(&r->gate, 1);
	uint64_t rq0 = thread_rq_ns();
	for (size_t got = 0; got < r->n;) {
		size_t want = r->n - got < r->v->slice ? r->n - got : r->v->slice;
		int64_t avail = xgpu_q_avail(c);
		if (avail <= 0) {
			xgpu_cpu_relax();
			continue;
		}
		size_t n = want < (size_t)avail ? want : (size_t)avail;
		uint64_t t0 = thread_cpu_ns();
		uint32_t off = c->idx & (c->size - 1);
		size_t first = c->size - off < n ? c->size - off : n;
		copy(r->v->cons, r->dst + got, c->buf + off, first);
		copy(r->v->cons, r->dst + got + first, c->buf, n - first);
		xgpu_q_release(c, (uint32_t)n);
		r->cpu_ns[1] += thread_cpu_ns() - t0;
		got += n;
	}
	r->t_end = xgpu_now_ns();
	r->rq_ns[1] = thread_rq_ns() - rq0;
	return NULL;
}

static int parse_copy(const char *s, size_t len, enum copy_kind *k)
{
	for (unsigned i = 0; i < sizeof copy_names / sizeof copy_names[0]; i++)
		if (strlen(copy_names[i]) == len && !strncmp(s, copy_names[i], len)) {
			*k = (enum copy_kind)i;
			return 0;
		}
	return -1;
}

static int parse_variant(const char *arg, struct variant *v)
{
	char *end;
	unsigned long kib = strtoul(arg, &end, 10);
	if (*end != ',' || kib < 4 || kib > 2048)
		return -1;
	const char *p = end + 1, *comma = strchr(p, ',');
	if (!comma || parse_copy(p, (size_t)(comma - p), &v->prod))
		return -1;
	p = comma + 1;
	comma = strchr(p, ',');
	if (parse_copy(p, comma ? (size_t)(comma - p) : strlen(p), &v->cons))
		return -1;
	unsigned long area_kib = 4096;
	if (comma) {
		area_kib = strtoul(comma + 1, &end, 10);
		if (*end || area_kib < 64 || area_kib > (256u << 10) || (area_kib & (area_kib - 1)) ||
		    area_kib < kib)
			return -1;
	}
	v->slice = (uint32_t)kib << 10;
	v->area = (uint32_t)area_kib << 10;
	snprintf(v->name, sizeof v->name, "%s", arg);
	return 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof *v, cmp_double);
	return v[n / 2];
}

static uint8_t *fresh(size_t n)
{
	uint8_t *p = aligned_alloc(4096, n);
	if (!p) {
		fprintf(stderr, "xgpu-ring-variants: cannot allocate %zu bytes\n", n);
		exit(1);
	}
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(i * 7 + 1);
	return p;
}

int main(int argc, char **argv)
{
	int mib = argc > 3 ? atoi(argv[1]) : 0, rounds = argc > 3 ? atoi(argv[2]) : 0, nv = argc - 3;
	static struct variant vs[MAX_VARIANTS];
	if (mib < 4 || mib > 4096 || rounds < 1 || rounds > MAX_ROUNDS || nv > MAX_VARIANTS) {
		fprintf(stderr,
			"usage: xgpu-ring-variants MIB ROUNDS SLICE_KIB,PRODUCER,CONSUMER[,AREA_KIB] ...\n"
			"  (copies: memcpy nt nt32 movsb; MIB 4-4096, ROUNDS 1-64, 16 variants at most)\n");
		return 2;
	}
	for (int k = 0; k < nv; k++)
		if (parse_variant(argv[3 + k], &vs[k])) {
			fprintf(stderr, "xgpu-ring-variants: bad variant %s\n", argv[3 + k]);
			return 2;
		}
	size_t n = (size_t)mib << 20;
	uint32_t area = 0;
	for (int k = 0; k < nv; k++)
		area = vs[k].area > area ? vs[k].area : area;
	uint8_t *buf = fresh(area), *src = fresh(n), *dst = fresh(n);
	static double wall[MAX_VARIANTS + 1][MAX_ROUNDS], pcpu[MAX_VARIANTS][MAX_ROUNDS],
	    ccpu[MAX_VARIANTS][MAX_ROUNDS], rq[MAX_VARIANTS][MAX_ROUNDS];
	for (int round = 0; round < rounds; round++) {
		uint64_t t0 = xgpu_now_ns();
		memcpy(dst, src, n);
		wall[nv][round] = (double)n / (double)(xgpu_now_ns() - t0);
		/* Each round starts at another variant: the one after memcpy
		 * finds the caches as memcpy left them. */
		for (int j = 0; j < nv; j++) {
			int k = (round + j) % nv;
			struct run r = {.src = src, .dst = dst, .n = n, .v = &vs[k]};
			xgpu_qend_init(&r.p, &r.q, buf, vs[k].area, 1, 0);
			xgpu_qend_init(&r.c, &r.q, buf, vs[k].area, 1, 0);
			memset(dst, 0, n);
			t0 = bench_run_pair(&r.gate, producer, consumer, &r);
			uint64_t ns = r.t_end - t0;
			if (memcmp(src, dst, n)) {
				fprintf(stderr, "xgpu-ring-variants: %s corrupted the data\n", vs[k].name);
				return 1;
			}
			wall[k][round] = (double)n / (double)ns;
			pcpu[k][round] = (double)n / (double)(r.cpu_ns[0] ? r.cpu_ns[0] : 1);
			ccpu[k][round] = (double)n / (double)(r.cpu_ns[1] ? r.cpu_ns[1] : 1);
			rq[k][round] =
			    (double)(r.rq_ns[0] > r.rq_ns[1] ? r.rq_ns[0] : r.rq_ns[1]) / (double)ns;
		}
	}
	printf("%-24s %8s %8s %10s %10s %8s\n", "variant", "median", "best", "prod_cpu", "cons_cpu", "rq");
	for (int k = 0; k <= nv; k++) {
		double mean_rq = 0;
		for (int i = 0; k < nv && i < rounds; i++)
			mean_rq += rq[k][i] / rounds;
		double med = median(wall[k], rounds), best = wall[k][rounds - 1];
		if (k == nv)
			printf("%-24s %8.2f %8.2f\n", "memcpy (one thread)", med, best);
		else
			printf("%-24s %8.2f %8.2f %10.2f %10.2f %7.0f%%\n", vs[k].name, med, best,
			       median(pcpu[k], rounds), median(ccpu[k], rounds), 100 * mean_rq);
	}
	free(buf);
	free(src);
	free(dst);
	return 0;
}
