/* SPDX-License-Identifier: Apache-2.0 */
/* xgpu-bench.c - the measurements behind `make bench`, each reported next to
 * a floor measured in the same run on the same machine, since absolute
 * figures from a shared VM mean little:
 *
 *   floors          two-thread cache-line ping-pong and eventfd ping-pong
 *   rtt MODE        null-call (NOP) round trips through a running xgpud
 *   ring            bulk bytes through a channel's data area between two
 *                   threads, and single-thread memcpy of the same sizes
 *   copy [MIB]      cudaMemcpy-sized transfers through xgpud (pageable and
 *                   pinned), against memcpy; MIB: one size instead of two
 *   cpu MIB REPS    the machine's CPU time per byte over REPS pageable
 *                   copies each way, and their aggregate rate
 *
 * Output is "key value" lines for tools/bench/run.sh to tabulate.
 */
#include "client.h"
#include "cpustat.h"
#include "queue.h"
#include "shm.h"
#include "threadstat.h"
#include "util.h"

#include <cuda_runtime_api.h>
#include <poll.h>
#include <sched.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static void report_samples(const char *key, uint64_t *ns, size_t n)
{
	qsort(ns, n, sizeof *ns, cmp_u64);
	double sum = 0;
	for (size_t i = 0; i < n; i++)
		sum += (double)ns[i];
	printf("%s_mean_us %.3f\n%s_p50_us %.3f\n%s_p99_us %.3f\n", key, sum / (double)n / 1e3, key,
	       (double)ns[n / 2] / 1e3, key, (double)ns[n * 99 / 100] / 1e3);
}

/* ---- floors ------------------------------------------------------------- */

static _Alignas(64) _Atomic uint64_t ball;
#define pingpong_iters_max 100000u
static const unsigned pingpong_iters = pingpong_iters_max;

static void *spin_partner(void *arg)
{
	for (uint64_t i = 1; i <= pingpong_iters; i++) {
		while (atomic_load_explicit(&ball, memory_order_acquire) != 2 * i - 1)
			xgpu_cpu_relax();
		atomic_store_explicit(&ball, 2 * i, memory_order_release);
	}
	return NULL;
}

static int efd_ping, efd_pong;
static const unsigned eventfd_iters = 50000;

static void *eventfd_partner(void *arg)
{
	uint64_t v;
	/* On the other CPU, as the daemon is from the client. */
	bench_pin(1);
	for (unsigned i = 0; i < eventfd_iters; i++) {
		if (read(efd_ping, &v, sizeof v) != sizeof v || write(efd_pong, &v, sizeof v) != sizeof v)
			return NULL;
	}
	return NULL;
}

static void *spin_partner_on1(void *arg)
{
	bench_pin(1);
	return spin_partner(arg);
}

/* Round trips are also timed in runs of this many, and the median run's
 * mean per round reported: on a shared host a preempted thread stalls a few
 * runs by milliseconds and swamps the whole batch's mean, while the median run
 * shows what the path itself costs, for the floor and the null call alike,
 * with one clock reading per run rather than two per call. */
#define RUN 100u

/* Median of n run times (ns), as microseconds per round. */
static double median_run_us(uint64_t *runs, size_t n)
{
	qsort(runs, n, sizeof *runs, cmp_u64);
	return (double)runs[n / 2] / RUN / 1e3;
}

static uint64_t floor_runs[pingpong_iters_max / RUN];

/* After round trip i (counting from 1): when it ends a run of RUN, the run's
 * time goes into runs, timed from *tr, which moves on. */
static void end_of_run(uint64_t *runs, uint64_t i, uint64_t *tr)
{
	if (i % RUN)
		return;
	uint64_t now = xgpu_now_ns();
	runs[i / RUN - 1] = now - *tr;
	*tr = now;
}

/* One ping-pong run, the partner on CPU 1 and us on CPU 0 (where the daemon's
 * poller and the client run in the rtt test), in microseconds per round;
 * *med: the median run's. */
static double spin_floor_once(double *med)
{
	atomic_store(&ball, 0);
	pthread_t t;
	pthread_create(&t, NULL, spin_partner_on1, NULL);
	uint64_t t0 = xgpu_now_ns(), tr = t0;
	for (uint64_t i = 1; i <= pingpong_iters; i++) {
		atomic_store_explicit(&ball, 2 * i - 1, memory_order_release);
		while (atomic_load_explicit(&ball, memory_order_acquire) != 2 * i)
			xgpu_cpu_relax();
		end_of_run(floor_runs, i, &tr);
	}
	uint64_t dt = xgpu_now_ns() - t0;
	pthread_join(t, NULL);
	*med = median_run_us(floor_runs, pingpong_iters / RUN);
	return (double)dt / pingpong_iters / 1e3;
}

/* The same with one cache line per direction, as a request slot and a
 * response slot are: each side only writes the line the other polls. A
 * line that is written by the core that just read it (the single ball)
 * can travel in exclusive state, so that floor pays about two transfers per
 * round; one-way lines pay about four (one to take ownership from the
 * poller, one for the poller's fetch, each way). This is the floor of any
 * protocol with separate request and response lines, reported beside the
 * BRIEF's floor. */
/* Each alone in a 128-byte block: no other data, and no pair of lines the
 * adjacent-line prefetcher fetches together. */
static struct {
	_Alignas(128) _Atomic uint64_t v;
} fwd, back;

static void *spin2_partner(void *arg)
{
	bench_pin(1);
	for (uint64_t i = 1; i <= pingpong_iters; i++) {
		while (atomic_load_explicit(&fwd.v, memory_order_acquire) != i)
			xgpu_cpu_relax();
		atomic_store_explicit(&back.v, i, memory_order_release);
	}
	return NULL;
}

static double spin2_floor_once(void)
{
	atomic_store(&fwd.v, 0);
	atomic_store(&back.v, 0);
	pthread_t t;
	pthread_create(&t, NULL, spin2_partner, NULL);
	uint64_t tr = xgpu_now_ns();
	for (uint64_t i = 1; i <= pingpong_iters; i++) {
		atomic_store_explicit(&fwd.v, i, memory_order_release);
		while (atomic_load_explicit(&back.v, memory_order_acquire) != i)
			xgpu_cpu_relax();
		end_of_run(floor_runs, i, &tr);
	}
	pthread_join(t, NULL);
	return median_run_us(floor_runs, pingpong_iters / RUN);
}

/* The rings' own floor: a channel region laid out as xgpud's (shm.h), a
 * client loop that writes a NOP into the next slot and waits for its answer
 * there, as the client does, and a responder thread on CPU 1 that answers
 * each request at once with the executor's queue operations, running no
 * call: what the slots and indexes cost before any code of the client's or
 * the executor's. Its variables live apart from everything the client reads. */
static _Alignas(128) struct xgpu_shm_view ring_backend;
static _Alignas(128) _Atomic bool ring_stop;

static void *ring_responder(void *arg)
{
	(void)arg;
	bench_pin(1);
	struct xgpu_shm_view *b = &ring_backend;
	while (!atomic_load_explicit(&ring_stop, memory_order_relaxed)) {
		if (!xgpu_slot_ready(&b->req)) {
			xgpu_cpu_relax();
			continue;
		}
		struct xgpu_req_hdr h;
		memcpy(&h, xgpu_q_unit(&b->req, b->req.idx), sizeof h);
		xgpu_q_release_deferred(&b->req, 1);
		uint8_t *slot = xgpu_q_unit(&b->rsp, b->rsp.idx);
		struct xgpu_rsp_hdr rh = {.call = h.call, .seq = h.seq, .len = sizeof(struct xgpu_rsp_NOP)};
		struct xgpu_rsp_NOP out = {0};
		memcpy(slot, &rh, sizeof rh);
		memcpy(slot + sizeof rh, &out, sizeof out);
		xgpu_slot_seal(&b->rsp);
		xgpu_q_publish_deferred(&b->rsp, 1);
	}
	return NULL;
}

/* Median run of 100 round trips, in microseconds per round trip. */
static double ring_floor_once(void)
{
	const struct xgpu_shm_params p = {.nr_slots = 64, .data_size = XGPU_SHM_MIN_DATA};
	size_t size = xgpu_shm_region_size(&p);
	void *region = aligned_alloc(4096, size);
	char err[128];
	struct xgpu_shm_view v;
	if (region)
		memset(region, 0, size);
	if (!region || xgpu_shm_init(region, size, &p) < 0 ||
	    xgpu_shm_attach(region, size, &ring_backend, err, sizeof err) < 0) {
		fprintf(stderr, "xgpu-bench: cannot lay out a channel region for the rings' floor\n");
		exit(1);
	}
	xgpu_shm_view_frontend(region, &v);
	atomic_store(&ring_stop, false);
	pthread_t t;
	pthread_create(&t, NULL, ring_responder, NULL);
	struct xgpu_req_NOP req = {0};
	uint64_t tr = xgpu_now_ns();
	for (uint64_t i = 1; i <= pingpong_iters; i++) {
		uint8_t *slot = xgpu_q_unit(&v.req, v.req.idx);
		struct xgpu_req_hdr h = {.call = XGPU_CALL_NOP, .len = sizeof req, .seq = i};
		memcpy(slot, &h, sizeof h);
		memcpy(slot + sizeof h, &req, sizeof req);
		xgpu_slot_seal(&v.req);
		xgpu_q_publish(&v.req, 1);
		while (!xgpu_slot_ready(&v.rsp))
			xgpu_cpu_relax();
		struct xgpu_rsp_hdr rh;
		memcpy(&rh, xgpu_q_unit(&v.rsp, v.rsp.idx), sizeof rh);
		xgpu_q_release(&v.rsp, 1);
		end_of_run(floor_runs, i, &tr);
	}
	atomic_store(&ring_stop, true);
	pthread_join(t, NULL);
	free(region);
	return median_run_us(floor_runs, pingpong_iters / RUN);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* The median of five runs of once(). */
static double median_of_5(double (*once)(void))
{
	double v[5];
	for (int i = 0; i < 5; i++)
		v[i] = once();
	qsort(v, 5, sizeof v[0], cmp_double);
	return v[2];
}

static void floors(void)
{
	/* The host moves vCPUs between runs: the median of several runs on a
	 * fixed pair of CPUs, the same pair the rtt test uses. */
	bench_pin(0);
	double runs[5], meds[5];
	for (int i = 0; i < 5; i++)
		runs[i] = spin_floor_once(&meds[i]);
	qsort(runs, 5, sizeof runs[0], cmp_double);
	qsort(meds, 5, sizeof meds[0], cmp_double);
	printf("floor_spin_us %.3f\nfloor_spin_run_us %.3f\n", runs[2], meds[2]);
	printf("floor_spin2_run_us %.3f\n", median_of_5(spin2_floor_once));
	printf("floor_ring_run_us %.3f\n", median_of_5(ring_floor_once));

	pthread_t t;
	efd_ping = eventfd(0, 0);
	efd_pong = eventfd(0, 0);
	pthread_create(&t, NULL, eventfd_partner, NULL);
	uint64_t t0 = xgpu_now_ns();
	uint64_t one = 1, v;
	for (unsigned i = 0; i < eventfd_iters; i++) {
		if (write(efd_ping, &one, sizeof one) != sizeof one ||
		    read(efd_pong, &v, sizeof v) != sizeof v)
			break;
	}
	uint64_t dt = xgpu_now_ns() - t0;
	pthread_join(t, NULL);
	close(efd_ping);
	close(efd_pong);
	printf("floor_eventfd_us %.3f\n", (double)dt / eventfd_iters / 1e3);
}

/* ---- null-call round trips ---------------------------------------------------- */

/* Its own domain, unless XGPU_DOMAIN names one (a remote GPU host names
 * a guest's domain by its key, and refuses any other). */
static const char *bench_domain(void)
{
	const char *d = getenv("XGPU_DOMAIN");
	return d && *d ? d : "bench";
}

static int rtt(const char *mode, unsigned iters)
{
	struct xgpu_client *c;
	bench_pin(0);
	int r = xgpu_client_open(bench_domain(), (uint32_t)getpid(), &c);
	if (r) {
		fprintf(stderr, "xgpu-bench: cannot open a channel (error %d); is xgpud running?\n", r);
		return 1;
	}
	uint64_t *ns = malloc(iters * sizeof *ns);
	struct xgpu_req_NOP req = {0};
	struct xgpu_rsp_NOP rsp;
	for (unsigned i = 0; i < 2000; i++)
		xgpu_call_NOP(c, &req, &rsp);
	/* The mean comes from one clock reading around the whole batch, as the
	 * floor's does; per-call readings (two clock reads each) only give the
	 * distribution. */
	uint64_t t0 = xgpu_now_ns(), tr = t0;
	for (unsigned i = 0; i < iters; i++) {
		if (xgpu_call_NOP(c, &req, &rsp)) {
			fprintf(stderr, "xgpu-bench: NOP failed\n");
			return 1;
		}
		end_of_run(ns, i + 1, &tr);
	}
	double batch_mean = (double)(tr - t0) / (iters / RUN * RUN) / 1e3;
	double run_med = median_run_us(ns, iters / RUN);
	for (unsigned i = 0; i < iters; i++) {
		uint64_t t1 = xgpu_now_ns();
		if (xgpu_call_NOP(c, &req, &rsp)) {
			fprintf(stderr, "xgpu-bench: NOP failed\n");
			return 1;
		}
		ns[i] = xgpu_now_ns() - t1;
	}
	if (getenv("RAW")) {
		struct xgpu_shm_view *v = xgpu_client_view(c);
		uint64_t seq = 1000000;
		uint64_t t0r = xgpu_now_ns();
		for (unsigned i = 0; i < iters; i++) {
			uint8_t *slot = xgpu_q_unit(&v->req, v->req.idx);
			struct xgpu_req_hdr h = {.call = XGPU_CALL_NOP, .len = sizeof req, .seq = ++seq};
			memcpy(slot, &h, sizeof h);
			memcpy(slot + sizeof h, &req, sizeof req);
			xgpu_slot_seal(&v->req);
			xgpu_q_publish(&v->req, 1);
			while (!xgpu_slot_ready(&v->rsp))
				xgpu_cpu_relax();
			struct xgpu_rsp_hdr rh;
			memcpy(&rh, xgpu_q_unit(&v->rsp, v->rsp.idx), sizeof rh);
			xgpu_q_release(&v->rsp, 1);
			if (rh.seq != seq) {
				fprintf(stderr, "raw: bad seq\n");
				return 1;
			}
		}
		printf("raw_us %.3f\n", (double)(xgpu_now_ns() - t0r) / iters / 1e3);
		_exit(0);
	}
	char key[32];
	snprintf(key, sizeof key, "rtt_%s", mode);
	report_samples(key, ns, iters);
	printf("%s_batch_us %.3f\n%s_run_us %.3f\n", key, batch_mean, key, run_med);
	free(ns);
	xgpu_client_close(c);
	return 0;
}

/* ---- bulk bandwidth ------------------------------------------------------------ */

static uint8_t *fresh(size_t n)
{
	uint8_t *p = malloc(n);
	if (!p) {
		fprintf(stderr, "xgpu-bench: cannot allocate %zu bytes\n", n);
		exit(1);
	}
	/* Touch every page so no test pays for first faults. */
	for (size_t i = 0; i < n; i += 4096)
		p[i] = (uint8_t)i;
	return p;
}

static double gbps(uint64_t bytes, uint64_t ns)
{
	return (double)bytes / (double)ns;
}

static double memcpy_gbps(uint8_t *dst, const uint8_t *src, size_t n)
{
	double best = 0;
	for (int rep = 0; rep < 3; rep++) {
		uint64_t t0 = xgpu_now_ns();
		memcpy(dst, src, n);
		double g = gbps(n, xgpu_now_ns() - t0);
		best = g > best ? g : best;
	}
	return best;
}

struct ring_run {
	struct xgpu_queue q;
	struct xgpu_qend p, c;
	const uint8_t *src;
	uint8_t *dst;
	size_t n;
	int wake_p, wake_c;
	/* Per thread (0 producer, 1 consumer): CPU time spent in its stream
	 * calls, and time it was runnable but waited for a CPU. */
	uint64_t copy_ns[2], rq_ns[2];
	/* The clock starts once both threads run on their CPUs: a thread
	 * moving to its CPU may wait there behind the other for a time slice,
	 * a third of a 64 MiB run. It stops when the consumer has the last
	 * byte. */
	struct bench_gate gate;
	uint64_t t_end;
};

static void nap(int fd)
{
	struct pollfd pfd = {fd, POLLIN, 0};
	uint64_t v;
	poll(&pfd, 1, 100);
	if (read(fd, &v, sizeof v) < 0) {
		/* spurious: recheck */
	}
}

static void poke(int fd)
{
	uint64_t one = 1;
	if (write(fd, &one, sizeof one) < 0) {
		/* saturated: a wake-up is pending */
	}
}

/* The same loop shape as the frontend (producer) and the daemon (consumer):
 * copy what fits, publish, spin briefly when there is nothing to do, and
 * only then sleep. Copies go in slices so the peer can start early. */
#define SLICE (256u << 10)
#define SPIN_NS 50000u

static bool spin_until(bool (*ready)(struct ring_run *), struct ring_run *r)
{
	uint64_t t0 = xgpu_now_ns();
	while (xgpu_now_ns() - t0 < SPIN_NS)
		if (ready(r))
			return true;
		else
			xgpu_cpu_relax();
	return false;
}

static bool has_space(struct ring_run *r)
{
	return xgpu_q_space(&r->p) >= (int64_t)SLICE;
}

static bool has_data(struct ring_run *r)
{
	return xgpu_q_avail(&r->c) > 0;
}

static void *ring_producer(void *arg)
{
	struct ring_run *r = arg;
	/* The pair on CPUs 0 and 1, as the floors and the round trips are
	 * measured: unpinned, a busy host may put both on one CPU. */
	bench_gate_enter(&r->gate, 0);
	size_t sent = 0;
	uint64_t rq0 = thread_rq_ns();
	while (sent < r->n) {
		bool kick;
		size_t want = r->n - sent < SLICE ? r->n - sent : SLICE;
		uint64_t c0 = thread_cpu_ns();
		int64_t w = xgpu_stream_write(&r->p, r->src + sent, want, &kick);
		r->copy_ns[0] += thread_cpu_ns() - c0;
		if (kick)
			poke(r->wake_c);
		sent += (size_t)w;
		if (w == 0 && !spin_until(has_space, r)) {
			xgpu_q_arm_space(&r->p, SLICE);
			if (!has_space(r))
				nap(r->wake_p);
		}
	}
	r->rq_ns[0] = thread_rq_ns() - rq0;
	return NULL;
}

static void *ring_consumer(void *arg)
{
	struct ring_run *r = arg;
	bench_gate_enter(&r->gate, 1);
	size_t got = 0;
	uint64_t rq0 = thread_rq_ns();
	while (got < r->n) {
		bool kick;
		size_t want = r->n - got < SLICE ? r->n - got : SLICE;
		uint64_t c0 = thread_cpu_ns();
		/* As the frontend reads a large transfer (client.c). */
		int64_t n = r->n >= XGPU_STREAM_NT_MIN ? xgpu_stream_read_nt(&r->c, r->dst + got, want, &kick)
						       : xgpu_stream_read(&r->c, r->dst + got, want, &kick);
		r->copy_ns[1] += thread_cpu_ns() - c0;
		if (kick)
			poke(r->wake_p);
		got += (size_t)n;
		if (n == 0 && !spin_until(has_data, r)) {
			xgpu_q_arm_data(&r->c);
			if (!has_data(r))
				nap(r->wake_c);
		}
	}
	r->t_end = xgpu_now_ns();
	r->rq_ns[1] = thread_rq_ns() - rq0;
	return NULL;
}

/* Ring and memcpy alternate, RING_ROUNDS times each, so a burst of load on
 * the host weighs on both alike; each reports its best. Beside the best
 * ring run: the larger share of its time either thread waited for a CPU
 * (rq), and the rate its busier side's stream calls ran at in CPU time
 * (copy), the ring's rate had both threads a CPU of their own throughout. */
#define RING_ROUNDS 5

static void ring(void)
{
	const size_t sizes[] = {64u << 20, 1u << 30};
	const uint32_t area = 4u << 20; /* the frontend's default data area */
	uint8_t *buf = fresh(area);
	for (int s = 0; s < 2; s++) {
		size_t n = sizes[s];
		uint8_t *src = fresh(n), *dst = fresh(n);
		/* The tail each run checks: cleared in dst before the run. */
		for (size_t i = n - 4096; i < n; i++)
			src[i] = (uint8_t)(i * 7 + 1);
		double base = 0, best = 0, best_rq = 0, best_copy = 0;
		for (int rep = 0; rep < RING_ROUNDS; rep++) {
			uint64_t t0 = xgpu_now_ns();
			memcpy(dst, src, n);
			double g = gbps(n, xgpu_now_ns() - t0);
			base = g > base ? g : base;

			struct ring_run r = {.src = src, .dst = dst, .n = n};
			xgpu_qend_init(&r.p, &r.q, buf, area, 1, 0);
			xgpu_qend_init(&r.c, &r.q, buf, area, 1, 0);
			r.wake_p = eventfd(0, EFD_NONBLOCK);
			r.wake_c = eventfd(0, EFD_NONBLOCK);
			memset(dst + n - 4096, 0, 4096);
			t0 = bench_run_pair(&r.gate, ring_producer, ring_consumer, &r);
			uint64_t wall = r.t_end - t0;
			g = gbps(n, wall);
			if (g > best) {
				uint64_t rq = r.rq_ns[0] > r.rq_ns[1] ? r.rq_ns[0] : r.rq_ns[1];
				uint64_t busy = r.copy_ns[0] > r.copy_ns[1] ? r.copy_ns[0] : r.copy_ns[1];
				best = g;
				best_rq = 100.0 * (double)rq / (double)wall;
				best_copy = busy ? gbps(n, busy) : 0;
			}
			close(r.wake_p);
			close(r.wake_c);
			if (memcmp(src + n - 4096, dst + n - 4096, 4096)) {
				fprintf(stderr, "xgpu-bench: ring corrupted data\n");
				exit(1);
			}
		}
		printf("ring_%zuMiB_gbps %.3f\nmemcpy_%zuMiB_gbps %.3f\nring_%zuMiB_rq_pct %.1f\n"
		       "ring_%zuMiB_copy_gbps %.3f\n",
		       n >> 20, best, n >> 20, base, n >> 20, best_rq, n >> 20, best_copy);
		free(src);
		free(dst);
	}
	free(buf);
}

/* ---- copies through xgpud --------------------------------------------------- */

/* One pageable copy each way, as cudaMemcpy makes them. */
static int h2d_once(struct xgpu_client *c, uint64_t dptr, const uint8_t *src, size_t n)
{
	struct xgpu_req_MEMCPY_HTOD hr = {.dst = dptr, .size = n};
	struct xgpu_rsp_MEMCPY_HTOD hrsp;
	struct xgpu_rpc r = xgpu_rpc_MEMCPY_HTOD(&hr, &hrsp);
	r.out = src;
	r.out_len = n;
	/* The copy returns once staged (pageable semantics): sync so the
	 * figure includes landing on the device. */
	struct xgpu_req_DEVICE_SYNC sr = {0};
	struct xgpu_rsp_DEVICE_SYNC srsp;
	return xgpu_rpc(c, &r) || xgpu_call_DEVICE_SYNC(c, &sr, &srsp);
}

static int d2h_once(struct xgpu_client *c, uint64_t dptr, uint8_t *dst, size_t n)
{
	struct xgpu_req_MEMCPY_DTOH dr = {.src = dptr, .size = n};
	struct xgpu_rsp_MEMCPY_DTOH drsp;
	struct xgpu_rpc r = xgpu_rpc_MEMCPY_DTOH(&dr, &drsp);
	r.in = dst;
	r.in_max = n;
	return xgpu_rpc(c, &r);
}

static int device_alloc(struct xgpu_client *c, size_t n, uint64_t *dptr)
{
	struct xgpu_req_MEM_ALLOC ar = {.size = n};
	struct xgpu_rsp_MEM_ALLOC arsp;
	if (xgpu_call_MEM_ALLOC(c, &ar, &arsp)) {
		fprintf(stderr, "xgpu-bench: cannot allocate %zu device bytes\n", n);
		return 1;
	}
	*dptr = arsp.dptr;
	return 0;
}

/* mib: one transfer size in MiB instead of the two default ones. */
static int copy(unsigned mib)
{
	size_t sizes[] = {64u << 20, 1u << 30};
	int nsizes = 2;
	if (mib) {
		sizes[0] = (size_t)mib << 20;
		nsizes = 1;
	}
	struct xgpu_client *c;
	if (xgpu_client_open(bench_domain(), (uint32_t)getpid(), &c)) {
		fprintf(stderr, "xgpu-bench: cannot open a channel; is xgpud running?\n");
		return 1;
	}
	for (int s = 0; s < nsizes; s++) {
		size_t n = sizes[s];
		uint8_t *src = fresh(n), *dst = fresh(n);
		double base = memcpy_gbps(dst, src, n);
		uint64_t dptr;
		if (device_alloc(c, n, &dptr))
			return 1;
		double h2d = 0, d2h = 0, h2d_pinned = 0;
		for (int rep = 0; rep < 3; rep++) {
			uint64_t t0 = xgpu_now_ns();
			if (h2d_once(c, dptr, src, n))
				return 1;
			double g = gbps(n, xgpu_now_ns() - t0);
			h2d = g > h2d ? g : h2d;
			t0 = xgpu_now_ns();
			if (d2h_once(c, dptr, dst, n))
				return 1;
			g = gbps(n, xgpu_now_ns() - t0);
			d2h = g > d2h ? g : d2h;
		}
		if (memcmp(src, dst, 4096) || memcmp(src + n - 4096, dst + n - 4096, 4096)) {
			fprintf(stderr, "xgpu-bench: data corrupted through xgpud\n");
			return 1;
		}
		/* Pinned memory: shared with the daemon, nothing crosses the ring. */
		void *pinned;
		uint64_t token;
		if (xgpu_client_share(c, n, &pinned, &token) == 0) {
			struct xgpu_req_SEG_REGISTER sr = {.token = token, .size = n};
			struct xgpu_rsp_SEG_REGISTER srsp;
			if (xgpu_call_SEG_REGISTER(c, &sr, &srsp) == 0) {
				memcpy(pinned, src, n);
				for (int rep = 0; rep < 3; rep++) {
					struct xgpu_req_MEMCPY_HTOD_SEG hr = {
					    .dst = dptr, .seg = srsp.seg, .size = n};
					struct xgpu_rsp_MEMCPY_HTOD_SEG hrsp;
					uint64_t t0 = xgpu_now_ns();
					if (xgpu_call_MEMCPY_HTOD_SEG(c, &hr, &hrsp))
						return 1;
					double g = gbps(n, xgpu_now_ns() - t0);
					h2d_pinned = g > h2d_pinned ? g : h2d_pinned;
				}
				struct xgpu_req_SEG_UNREGISTER ur = {.seg = srsp.seg};
				struct xgpu_rsp_SEG_UNREGISTER ursp;
				xgpu_call_SEG_UNREGISTER(c, &ur, &ursp);
			}
			xgpu_client_unshare(c, pinned, n);
		}
		struct xgpu_req_MEM_FREE fr = {.dptr = dptr};
		struct xgpu_rsp_MEM_FREE frsp;
		xgpu_call_MEM_FREE(c, &fr, &frsp);
		printf("copy_%zuMiB_memcpy_gbps %.3f\ncopy_%zuMiB_h2d_gbps %.3f\ncopy_%zuMiB_d2h_gbps %.3f\n"
		       "copy_%zuMiB_h2d_pinned_gbps %.3f\n",
		       n >> 20, base, n >> 20, h2d, n >> 20, d2h, n >> 20, h2d_pinned);
		free(src);
		free(dst);
	}
	xgpu_client_close(c);
	return 0;
}

/* The machine's CPU time per byte over `reps` back-to-back copies each way,
 * beside their aggregate rate: where the program, xgpud and the executor
 * share this machine's CPUs, CPUs / (CPU seconds per byte) is the most any
 * pipelining of the path could reach here (tools/bench/remote.sh sets it
 * beside the stream floor's, measured the same way by tcprtt). */
static int cpu_cost(unsigned mib, unsigned reps)
{
	size_t n = (size_t)mib << 20;
	struct xgpu_client *c;
	if (xgpu_client_open(bench_domain(), (uint32_t)getpid(), &c)) {
		fprintf(stderr, "xgpu-bench: cannot open a channel; is xgpud running?\n");
		return 1;
	}
	uint8_t *src = fresh(n), *dst = fresh(n);
	uint64_t dptr;
	if (device_alloc(c, n, &dptr))
		return 1;
	/* One copy each way first, so that no page of either side is touched
	 * for the first time while measured. */
	if (h2d_once(c, dptr, src, n) || d2h_once(c, dptr, dst, n))
		return 1;
	for (int dir = 0; dir < 2; dir++) {
		double busy0 = machine_busy_s();
		uint64_t t0 = xgpu_now_ns();
		for (unsigned i = 0; i < reps; i++)
			if (dir ? d2h_once(c, dptr, dst, n) : h2d_once(c, dptr, src, n))
				return 1;
		uint64_t ns = xgpu_now_ns() - t0;
		double busy = machine_busy_s() - busy0;
		const char *d = dir ? "d2h" : "h2d";
		printf("cpu_%uMiB_%s_gbps %.3f\ncpu_%uMiB_%s_cpu_s_per_gb %.3f\n", mib, d,
		       gbps((uint64_t)n * reps, ns), mib, d,
		       busy0 < 0 ? -1.0 : busy / ((double)n * reps / 1e9));
	}
	printf("cpu_cpus %ld\n", sysconf(_SC_NPROCESSORS_ONLN));
	struct xgpu_req_MEM_FREE fr = {.dptr = dptr};
	struct xgpu_rsp_MEM_FREE frsp;
	xgpu_call_MEM_FREE(c, &fr, &frsp);
	free(src);
	free(dst);
	xgpu_client_close(c);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "floors")) {
		floors();
		return 0;
	}
	if (argc == 3 && !strcmp(argv[1], "rtt"))
		return rtt(argv[2], !strcmp(argv[2], "spin") ? 100000 : 30000);
	if (argc == 2 && !strcmp(argv[1], "ring")) {
		ring();
		return 0;
	}
	if (argc == 2 && !strcmp(argv[1], "copy"))
		return copy(0);
	if (argc == 3 && !strcmp(argv[1], "copy") && atoi(argv[2]) > 0 && atoi(argv[2]) <= 4096)
		return copy((unsigned)atoi(argv[2]));
	if (argc == 4 && !strcmp(argv[1], "cpu") && atoi(argv[2]) > 0 && atoi(argv[2]) <= 4096 &&
	    atoi(argv[3]) > 0 && atoi(argv[3]) <= 1000)
		return cpu_cost((unsigned)atoi(argv[2]), (unsigned)atoi(argv[3]));
	bool help = argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"));
	fprintf(help ? stdout : stderr,
		"usage: xgpu-bench floors | rtt spin|block | ring | copy [MIB] | cpu MIB REPS\n"
		"  (rtt, copy and cpu need a running xgpud; see tools/bench/run.sh)\n");
	return help ? 0 : 2;
}
