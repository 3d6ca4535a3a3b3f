/* SPDX-License-Identifier: Apache-2.0 */
/* test_xentrace.c - the `xentrace` schedule source and its parser: records
 * decoded from hand-built bytes (with and without TSC, every extra count,
 * every short prefix, garbage event ids); recorded buffers from
 * tests/data/xentrace/ (gen.py writes them in Xen's layout): one CPU's
 * records, xentrace's file format with CPU-change markers, a record cut at
 * the end, garbage in the middle, lost-records markers, and a real recording
 * of Xen 4.17 (record-real.sh); the per-PCPU switch
 * state machine; draining a fake t_buf whose indexes wrap many times (with
 * Xen's wrap-padding records), bogus indexes and garbage in a ring; the
 * source's refresh over fake rings and a fake hypervisor; the real open
 * failing without Xen with a message naming /dev/xen/privcmd. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "schedsrc/hypsrc.h"
#include "schedsrc/hypsrc_xen.h"
#include "schedsrc/hypsrc_xentrace.h"
#include "schedsrc/xentrace_parse.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define KHZ 2000000u            /* the recordings' TSC: 2 GHz */
#define BASE_TSC (5ull << 32)   /* gen.py's BASE_TSC */
#define BASE_NS (BASE_TSC / 2u) /* that TSC in ns at 2 GHz */

/* ---- building records the way Xen writes them --------------------------------- */

static size_t put_rec(uint8_t *p, uint32_t ev, const uint32_t *extra, unsigned n, bool tsc, uint64_t t)
{
	uint32_t hdr = ev | (uint32_t)n << TRACE_EXTRA_SHIFT | (tsc ? 0x80000000u : 0);
	size_t off = 0;
	memcpy(p, &hdr, 4);
	off += 4;
	if (tsc) {
		uint32_t lo = (uint32_t)t, hi = (uint32_t)(t >> 32);
		memcpy(p + off, &lo, 4);
		memcpy(p + off + 4, &hi, 4);
		off += 8;
	}
	if (n)
		memcpy(p + off, extra, 4u * n);
	return off + 4u * n;
}

/* INFPREV, INFNEXT and SWITCH as sched/core.c writes them, at TSC t. */
static size_t put_switch(uint8_t *p, uint64_t t, uint32_t pd, uint32_t pv, uint32_t ran, uint32_t nd,
			 uint32_t nv, uint32_t slice)
{
	size_t off = 0;
	off += put_rec(p + off, TRC_SCHED_SWITCH_INFPREV, (uint32_t[]){pd, pv, ran}, 3, true, t);
	off += put_rec(p + off, TRC_SCHED_SWITCH_INFNEXT, (uint32_t[]){nd, nv, 0, slice}, 4, true, t);
	off += put_rec(p + off, TRC_SCHED_SWITCH, (uint32_t[]){pd, pv, nd, nv}, 4, true, t);
	return off;
}

static uint8_t *read_data(const char *name, size_t *len)
{
	const char *src = getenv("XGPU_SRC");
	char path[1024];
	snprintf(path, sizeof path, "%s/tests/data/xentrace/%s", src ? src : ".", name);
	FILE *f = fopen(path, "rb");
	if (!f)
		fail_msg("cannot open %s (run from tests/run.sh, or set XGPU_SRC)", path);
	uint8_t *buf = malloc(65536);
	assert_non_null(buf);
	*len = fread(buf, 1, 65536, f);
	fclose(f);
	return buf;
}

/* ---- decoding ------------------------------------------------------------------------- */

static void test_decode_layouts(void **state)
{
	uint8_t b[64];
	struct xt_rec r;
	/* no TSC, no extra */
	size_t n = put_rec(b, TRC_SCHED_CTL, NULL, 0, false, 0);
	assert_int_equal(n, 4);
	assert_int_equal(xt_decode(b, n, &r), XT_OK);
	assert_int_equal(r.event, TRC_SCHED_CTL);
	assert_int_equal(r.size, 4);
	assert_false(r.has_tsc);
	assert_int_equal(r.nextra, 0);
	/* TSC with both words, seven extras */
	uint32_t ex[7] = {1, 2, 3, 4, 5, 6, 0xffffffffu};
	n = put_rec(b, TRC_SCHED_SWITCH, ex, 7, true, 0x123456789abcdef0ull);
	assert_int_equal(n, XT_MAX_REC_BYTES);
	assert_int_equal(xt_decode(b, sizeof b, &r), XT_OK);
	assert_int_equal(r.size, 40);
	assert_true(r.has_tsc);
	assert_true(r.tsc == 0x123456789abcdef0ull);
	assert_int_equal(r.nextra, 7);
	assert_memory_equal(r.extra, ex, sizeof ex);
	/* extras without TSC */
	n = put_rec(b, TRC_SCHED_WAKE, ex, 2, false, 0);
	assert_int_equal(xt_decode(b, n, &r), XT_OK);
	assert_int_equal(r.size, 12);
	assert_int_equal(r.extra[1], 2);
	/* unaligned input is fine (copied, not cast) */
	uint8_t u[64];
	n = put_rec(u + 1, TRC_SCHED_SWITCH, ex, 4, true, 77);
	assert_int_equal(xt_decode(u + 1, n, &r), XT_OK);
	assert_true(r.tsc == 77);
}

static void test_decode_short_prefixes(void **state)
{
	uint8_t b[64];
	uint32_t ex[7] = {0};
	size_t n = put_rec(b, TRC_SCHED_SWITCH, ex, 7, true, 1);
	struct xt_rec r;
	for (size_t len = 0; len < n; len++) {
		/* a copy exactly len long, so ASan sees any read past it */
		uint8_t *c = malloc(len ? len : 1);
		memcpy(c, b, len);
		assert_int_equal(xt_decode(c, len, &r), XT_SHORT);
		free(c);
	}
	assert_int_equal(xt_decode(b, n, &r), XT_OK);
}

static void test_decode_garbage(void **state)
{
	struct xt_rec r;
	uint32_t bad[] = {
	    0x00000000u, /* zeroed memory */
	    0x00000005u, /* no class */
	    0x80000000u, /* only the TSC flag */
	    0x00020001u, /* scheduler class, no subclass */
	    0x70001000u, /* subclass, no class, 7 extras */
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		uint8_t b[64] = {0};
		memcpy(b, &bad[i], 4);
		assert_int_equal(xt_decode(b, sizeof b, &r), XT_GARBAGE);
	}
	/* unknown but well-formed events are records (skipped by the state machine) */
	uint8_t b[8] = {0};
	uint32_t odd = 0x08001234u;
	memcpy(b, &odd, 4);
	assert_int_equal(xt_decode(b, sizeof b, &r), XT_OK);
}

/* ---- recorded buffers ----------------------------------------------------------------- */

static void test_recorded_cpu0_records(void **state)
{
	size_t len;
	uint8_t *buf = read_data("cpu0.bin", &len);
	assert_int_equal(len, 200);
	struct xt_rec r[16];
	size_t used;
	enum xt_status how;
	size_t n = xt_decode_all(buf, len, r, 16, &used, &how);
	assert_int_equal(how, XT_OK);
	assert_int_equal(used, len);
	assert_int_equal(n, 9);
	const uint32_t ev[] = {TRC_SCHED_SWITCH_INFPREV,
			       TRC_SCHED_SWITCH_INFNEXT,
			       TRC_SCHED_SWITCH,
			       TRC_SCHED_WAKE,
			       TRC_SCHED_CTL,
			       TRC_TRACE_WRAP_BUFFER,
			       TRC_SCHED_SWITCH_INFPREV,
			       TRC_SCHED_SWITCH_INFNEXT,
			       TRC_SCHED_SWITCH};
	for (size_t i = 0; i < n; i++)
		assert_int_equal(r[i].event, ev[i]);
	assert_true(r[0].tsc == BASE_TSC + 2000);
	assert_int_equal(r[0].extra[0], XT_DOMID_IDLE);
	assert_int_equal(r[0].extra[2], 5000);
	assert_false(r[4].has_tsc);
	assert_int_equal(r[5].nextra, 3);
	assert_int_equal(r[8].extra[2], 2);
	/* max bounds the output */
	n = xt_decode_all(buf, len, r, 2, &used, &how);
	assert_int_equal(n, 2);
	assert_int_equal(used, 24 + 28);

	struct xt_state s;
	assert_int_equal(xt_state_init(&s, 1, KHZ), 0);
	assert_int_equal(xt_feed_bytes(&s, 0, buf, len, false, &how), len);
	assert_int_equal(how, XT_OK);
	const struct xt_pcpu *p = &s.pcpu[0];
	assert_true(p->known);
	assert_int_equal(p->domid, 2);
	assert_int_equal(p->vcpu, 1);
	assert_true(p->since_ns == BASE_NS + 31000);
	assert_true(p->prev_known);
	assert_int_equal(p->prev_domid, 1);
	assert_int_equal(p->prev_vcpu, 0);
	assert_true(p->prev_ran_ns == 30000);
	assert_true(p->slice_ns == 30000000);
	assert_true(p->switches == 2);
	assert_false(p->stale);
	assert_true(s.st.records == 9);
	assert_true(s.st.sched_records == 6);
	assert_true(s.newest_ns == BASE_NS + 31000);
	xt_state_free(&s);
	free(buf);
}

static void test_recorded_xentrace_file(void **state)
{
	size_t len;
	uint8_t *buf = read_data("trace_3cpu.bin", &len);
	struct xt_state s;
	assert_int_equal(xt_state_init(&s, 3, KHZ), 0);
	enum xt_status how;
	assert_int_equal(xt_feed_bytes(&s, 0, buf, len, true, &how), len);
	assert_int_equal(how, XT_OK);
	/* CPU 0 as in cpu0.bin */
	assert_int_equal(s.pcpu[0].domid, 2);
	assert_true(s.pcpu[0].since_ns == BASE_NS + 31000);
	/* CPU 1: continued, lost records, then a switch */
	const struct xt_pcpu *p = &s.pcpu[1];
	assert_true(p->known);
	assert_int_equal(p->domid, 3);
	assert_int_equal(p->vcpu, 0);
	assert_true(p->since_ns == BASE_NS + 9500);
	assert_true(p->prev_known);
	assert_true(p->prev_ran_ns == 9400);
	assert_int_equal(p->prev_domid, 0);
	assert_int_equal(p->prev_vcpu, 1);
	assert_true(p->slice_ns == 20000000);
	assert_false(p->stale);
	assert_true(s.st.lost_markers == 1);
	assert_true(s.st.lost_records == 7);
	/* CPU 2: idle now */
	assert_true(s.pcpu[2].known);
	assert_int_equal(s.pcpu[2].domid, XT_DOMID_IDLE);
	assert_true(s.pcpu[2].prev_ran_ns == 2000);
	assert_int_equal(s.pcpu[2].prev_domid, 1);
	assert_true(s.st.bad_pcpu == 0);
	xt_state_free(&s);

	/* The same file with room for 2 PCPUs: CPU 2's records are counted, not stored. */
	assert_int_equal(xt_state_init(&s, 2, KHZ), 0);
	assert_int_equal(xt_feed_bytes(&s, 0, buf, len, true, &how), len);
	assert_true(s.st.bad_pcpu == 3);
	xt_state_free(&s);
	free(buf);
}

static void test_recorded_truncated(void **state)
{
	size_t len;
	uint8_t *buf = read_data("truncated.bin", &len);
	assert_int_equal(len, 210);
	/* exactly len bytes on the heap, so a read past the cut trips ASan */
	uint8_t *c = malloc(len);
	memcpy(c, buf, len);
	struct xt_state s;
	assert_int_equal(xt_state_init(&s, 1, KHZ), 0);
	enum xt_status how;
	assert_int_equal(xt_feed_bytes(&s, 0, c, len, false, &how), 200);
	assert_int_equal(how, XT_SHORT);
	assert_true(s.st.truncated == 1);
	assert_int_equal(s.pcpu[0].domid, 2); /* everything before the cut counts */
	assert_true(s.pcpu[0].switches == 2);
	xt_state_free(&s);
	free(c);
	free(buf);
}

static void test_recorded_garbage(void **state)
{
	size_t len;
	uint8_t *buf = read_data("garbage.bin", &len);
	struct xt_state s;
	assert_int_equal(xt_state_init(&s, 1, KHZ), 0);
	enum xt_status how;
	assert_int_equal(xt_feed_bytes(&s, 0, buf, len, false, &how), 80);
	assert_int_equal(how, XT_GARBAGE);
	assert_true(s.st.garbage == 1);
	/* the switch before the garbage holds; nothing after it is believed */
	assert_int_equal(s.pcpu[0].domid, 1);
	assert_true(s.pcpu[0].switches == 1);
	assert_true(s.pcpu[0].prev_ran_ns == 5000);
	xt_state_free(&s);
	free(buf);
}

/* A real recording: Debian's xentrace on Xen 4.17 (credit, 2 CPUs, QEMU) with
 * a spinning PV domU (domid 1), made by record-real.sh. */
static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static void test_recorded_real_xen(void **state)
{
	size_t len;
	uint8_t *buf = read_data("real_credit_2cpu.bin", &len);
	assert_true(len > 1000);
	size_t max = len / 4;
	struct xt_rec *r = malloc(max * sizeof *r);
	size_t used;
	enum xt_status how;
	size_t n = xt_decode_all(buf, len, r, max, &used, &how);
	assert_int_equal(how, XT_OK);
	assert_int_equal(used, len);

	/* Walk it as xt_feed_bytes does, checking facts along the way. */
	struct xt_state s;
	assert_int_equal(xt_state_init(&s, 2, 0), 0); /* TSC ticks: the frequency is estimated below */
	unsigned cpu = 0, chunks = 0, dom1_runs[2] = {0, 0};
	uint64_t last_tsc[2] = {0, 0}, switch_tsc[2] = {0, 0};
	bool have_switch[2] = {false, false};
	uint32_t run_dom[2] = {0, 0}, run_v[2] = {0, 0};
	/* (Xen's ns for a run, our TSC ticks for it) for the same run */
	size_t npairs = 0;
	uint64_t *ran_ns = malloc(n * sizeof *ran_ns), *ran_tsc = malloc(n * sizeof *ran_tsc);
	for (size_t i = 0; i < n; i++) {
		if (r[i].event == TRC_TRACE_CPU_CHANGE) {
			assert_true(r[i].nextra >= 2);
			cpu = r[i].extra[0];
			assert_true(cpu < 2);
			chunks++;
			continue;
		}
		assert_true(r[i].has_tsc); /* every scheduler record is timestamped */
		assert_true(r[i].tsc >= last_tsc[cpu]);
		last_tsc[cpu] = r[i].tsc;
		assert_true((r[i].event & 0x0fff0000u) == 0x00020000u || r[i].event == TRC_LOST_RECORDS);
		if (r[i].event == TRC_SCHED_SWITCH_INFPREV && have_switch[cpu] &&
		    r[i].extra[0] == run_dom[cpu] && r[i].extra[1] == run_v[cpu]) {
			ran_ns[npairs] = r[i].extra[2];
			ran_tsc[npairs] = r[i].tsc - switch_tsc[cpu];
			npairs++;
		}
		xt_state_feed(&s, cpu, &r[i]);
		if (r[i].event == TRC_SCHED_SWITCH) {
			const struct xt_pcpu *p = &s.pcpu[cpu];
			assert_true(p->known && p->domid == r[i].extra[2] && p->vcpu == r[i].extra[3]);
			assert_true(p->since_ns == r[i].tsc);
			have_switch[cpu] = true;
			switch_tsc[cpu] = r[i].tsc;
			run_dom[cpu] = p->domid;
			run_v[cpu] = p->vcpu;
			dom1_runs[cpu] += p->domid == 1;
		}
	}
	assert_true(chunks >= 2);
	assert_true(s.st.bad_pcpu == 0 && s.st.garbage == 0 && s.st.lost_markers == 0);
	assert_true(s.pcpu[0].known && s.pcpu[1].known);
	assert_true(s.pcpu[0].switches > 0 && s.pcpu[1].switches > 0);
	assert_true(s.pcpu[0].switches + s.pcpu[1].switches > 40);
	/* the spinning domU was switched to (on either PCPU; it may stay on one) */
	assert_true(dom1_runs[0] + dom1_runs[1] > 0);
	/* Xen's own run lengths (INFPREV, ns) agree with the TSC between our
	 * switch records: estimate the TSC frequency from the long runs, then
	 * nine in ten runs must match within 50 us. */
	assert_true(npairs > 100);
	uint64_t *khz = malloc(npairs * sizeof *khz);
	size_t nk = 0;
	for (size_t i = 0; i < npairs; i++)
		if (ran_ns[i] > 1000000)
			khz[nk++] = ran_tsc[i] * 1000000u / ran_ns[i];
	assert_true(nk > 10);
	qsort(khz, nk, sizeof *khz, cmp_u64);
	uint64_t est = khz[nk / 2];
	assert_true(est > 100000 && est < 10000000); /* 0.1 to 10 GHz */
	size_t close = 0;
	for (size_t i = 0; i < npairs; i++) {
		uint64_t t = xt_tsc_to_ns(ran_tsc[i], (uint32_t)est);
		uint64_t d = t > ran_ns[i] ? t - ran_ns[i] : ran_ns[i] - t;
		close += d < 50000;
	}
	print_message("real recording: %zu records, %zu run pairs, TSC ~%llu kHz, %zu within 50 us\n", n,
		      npairs, (unsigned long long)est, close);
	assert_true(close * 10 >= npairs * 9);

	/* The file mode of xt_feed_bytes reaches the same end state. */
	struct xt_state f;
	assert_int_equal(xt_state_init(&f, 2, 0), 0);
	assert_int_equal(xt_feed_bytes(&f, 0, buf, len, true, &how), len);
	for (int c = 0; c < 2; c++) {
		assert_int_equal(f.pcpu[c].domid, s.pcpu[c].domid);
		assert_true(f.pcpu[c].since_ns == s.pcpu[c].since_ns);
		assert_true(f.pcpu[c].switches == s.pcpu[c].switches);
	}
	xt_state_free(&f);
	xt_state_free(&s);
	free(khz);
	free(ran_ns);
	free(ran_tsc);
	free(r);
	free(buf);
}

/* ---- the state machine ---------------------------------------------------------------- */

static void feed_buf(struct xt_state *s, unsigned pcpu, const uint8_t *b, size_t n)
{
	enum xt_status how;
	assert_int_equal(xt_feed_bytes(s, pcpu, b, n, false, &how), n);
	assert_int_equal(how, XT_OK);
}

static void test_state_machine(void **state)
{
	struct xt_state s;
	assert_int_equal(xt_state_init(&s, 2, 0), 0); /* khz 0: ticks are ns */
	uint8_t b[512];
	size_t n;
	/* SWITCH alone (INFPREV lost or filtered): the run length comes from our own times */
	n = put_rec(b, TRC_SCHED_SWITCH, (uint32_t[]){XT_DOMID_IDLE, 1, 4, 0}, 4, true, 1000);
	feed_buf(&s, 1, b, n);
	const struct xt_pcpu *p = &s.pcpu[1];
	assert_true(p->known && p->domid == 4 && p->vcpu == 0 && p->since_ns == 1000);
	assert_false(p->prev_known); /* nothing known about idle before */
	assert_true(p->slice_ns == 0);
	n = put_rec(b, TRC_SCHED_SWITCH, (uint32_t[]){4, 0, 5, 2}, 4, true, 1600);
	feed_buf(&s, 1, b, n);
	assert_true(p->prev_known && p->prev_ran_ns == 600 && p->domid == 5 && p->vcpu == 2);
	/* INFPREV for another unit than SWITCH's prev is not believed */
	n = put_rec(b, TRC_SCHED_SWITCH_INFPREV, (uint32_t[]){9, 9, 12345}, 3, true, 2000);
	n += put_rec(b + n, TRC_SCHED_SWITCH, (uint32_t[]){5, 2, 6, 0}, 4, true, 2000);
	feed_buf(&s, 1, b, n);
	assert_true(p->prev_known && p->prev_ran_ns == 400);
	/* INFPREV's 32-bit run length wraps after 4.3 s; our times do not */
	n = put_switch(b, 2000 + 5000000000ull, 6, 0, (uint32_t)5000000000ull, 6, 0, 0);
	feed_buf(&s, 1, b, n);
	assert_true(p->prev_known && p->prev_ran_ns == 5000000000ull);
	n = put_switch(b, 2000, 6, 0, 0, 6, 0, 0); /* a TSC going back: no own length, since = 2000 */
	feed_buf(&s, 1, b, n);
	/* records without TSC take the last time */
	n = put_rec(b, TRC_SCHED_SWITCH, (uint32_t[]){6, 0, 7, 0}, 4, false, 0);
	feed_buf(&s, 1, b, n);
	assert_true(p->since_ns == 2000 && p->domid == 7);
	/* lost records make the PCPU stale until the next switch, and its own
	 * times are not used across the gap */
	uint32_t lost[4] = {3, 0, 0, 0};
	n = put_rec(b, TRC_LOST_RECORDS, lost, 4, true, 5000);
	feed_buf(&s, 1, b, n);
	assert_true(p->stale);
	assert_true(s.st.lost_records == 3 && s.st.lost_markers == 1);
	n = put_rec(b, TRC_SCHED_SWITCH, (uint32_t[]){7, 0, 8, 1}, 4, true, 6000);
	feed_buf(&s, 1, b, n);
	assert_false(p->stale);
	assert_false(p->prev_known);
	assert_true(p->domid == 8 && p->since_ns == 6000);
	/* INFCONT on an unknown PCPU: since = now - how long it has run */
	n = put_rec(b, TRC_SCHED_SWITCH_INFCONT, (uint32_t[]){3, 1, 700, 30000}, 4, true, 10000);
	feed_buf(&s, 0, b, n);
	assert_true(s.pcpu[0].known && s.pcpu[0].domid == 3 && s.pcpu[0].vcpu == 1);
	assert_true(s.pcpu[0].since_ns == 9300 && s.pcpu[0].slice_ns == 30000);
	/* ... and on a known one it keeps the start of the run */
	n = put_rec(b, TRC_SCHED_SWITCH_INFCONT, (uint32_t[]){3, 1, 30700, 30000}, 4, true, 40000);
	feed_buf(&s, 0, b, n);
	assert_true(s.pcpu[0].since_ns == 9300);
	/* too few words: counted, ignored */
	n = put_rec(b, TRC_SCHED_SWITCH, (uint32_t[]){3, 1}, 2, true, 50000);
	feed_buf(&s, 0, b, n);
	assert_true(s.pcpu[0].domid == 3 && s.pcpu[0].switches == 0);
	/* TSC conversion: 2 GHz, and large values without overflow */
	assert_true(xt_tsc_to_ns(2000000000ull, KHZ) == 1000000000ull);
	/* 2.5 GHz after 27 hours: tsc * 1e6 alone would overflow 64 bits */
	assert_true(xt_tsc_to_ns(250000000000000ull, 2500000u) == 100000000000000ull);
	assert_true(xt_tsc_to_ns(3000000000000ull, 3000000u) == 1000000000000ull);
	xt_state_free(&s);
}

/* ---- a ring as Xen fills it ----------------------------------------------------------- */

struct ring {
	struct t_buf *tb;
	uint32_t ds;
	uint64_t wraps_seen; /* prod passed 2*ds back to 0 */
	uint64_t pads;       /* wrap-padding records written */
};

static void ring_init(struct ring *r, uint32_t ds)
{
	r->ds = ds;
	r->tb = calloc(1, sizeof(struct t_buf) + ds);
	assert_non_null(r->tb);
	r->wraps_seen = r->pads = 0;
}

static uint32_t ring_used(const struct ring *r)
{
	uint32_t p = r->tb->prod, c = r->tb->cons;
	return p >= c ? p - c : p + 2 * r->ds - c;
}

static void ring_raw(struct ring *r, const uint8_t *rec, uint32_t size)
{
	uint32_t at = r->tb->prod % r->ds;
	assert_true(at + size <= r->ds);
	memcpy((uint8_t *)(r->tb + 1) + at, rec, size);
	uint32_t np = r->tb->prod + size;
	if (np >= 2 * r->ds) {
		np -= 2 * r->ds;
		r->wraps_seen++;
	}
	r->tb->prod = np;
}

/* __trace_var's placement: a record that does not fit before the end of the
 * data is preceded by a TRC_TRACE_WRAP_BUFFER record filling the rest. */
static bool ring_put(struct ring *r, const uint8_t *rec, uint32_t size)
{
	uint32_t to_wrap = r->ds - r->tb->prod % r->ds;
	uint32_t need = size + (size > to_wrap ? to_wrap : 0);
	if (ring_used(r) + need > r->ds)
		return false;
	if (size > to_wrap) {
		uint8_t pad[XT_MAX_REC_BYTES] = {0};
		uint32_t words = (to_wrap - 4) / 4;
		bool tsc = words > TRACE_EXTRA_MAX;
		if (tsc)
			words -= 2;
		uint32_t zeros[7] = {0};
		size_t n = put_rec(pad, TRC_TRACE_WRAP_BUFFER, zeros, words, tsc, 0);
		assert_int_equal(n, to_wrap);
		ring_raw(r, pad, to_wrap);
		r->pads++;
	}
	ring_raw(r, rec, size);
	return true;
}

/* A put_switch() buffer as Xen writes it: three records, each placed alone. */
static bool ring_put_switch(struct ring *r, const uint8_t *b)
{
	return ring_put(r, b, 24) && ring_put(r, b + 24, 28) && ring_put(r, b + 52, 28);
}

static void test_ring_wraps(void **state)
{
	struct ring r;
	ring_init(&r, 124); /* not a multiple of any record size */
	uint8_t *scratch = malloc(r.ds);
	struct xt_state s;
	assert_int_equal(xt_state_init(&s, 1, 0), 0);
	uint64_t t = 100, switches = 0, recs = 0;
	uint32_t dom = 1;
	for (int round = 0; round < 200; round++) {
		/* Xen writes 1-3 switches (80 bytes each) between drains, plus a
		 * record without TSC now and then; what does not fit is lost. */
		int k = 1 + round % 3;
		for (int i = 0; i < k; i++) {
			uint8_t b[128];
			put_switch(b, t, dom, 0, 10, dom % 3 + 1, 0, 30);
			/* one switch is three records; the reader drains before the rest fits */
			bool all = true;
			for (int j = 0; j < 3 && all; j++) {
				all = ring_put(&r, b + (j ? 24 + 28 * (j - 1) : 0), j ? 28 : 24);
				recs += all;
			}
			if (!all)
				break;
			dom = dom % 3 + 1;
			switches++;
			t += 10;
		}
		if (round % 5 == 0) {
			uint8_t b[8];
			size_t n = put_rec(b, TRC_SCHED_CTL, NULL, 0, false, 0);
			if (ring_put(&r, b, (uint32_t)n))
				recs++;
		}
		uint32_t before = ring_used(&r);
		long got = xt_ring_drain(&s, 0, r.tb, r.ds, scratch);
		assert_int_equal(got, before);
		assert_int_equal(r.tb->cons, r.tb->prod);
		assert_true(s.pcpu[0].known);
		assert_int_equal(s.pcpu[0].domid, dom);
		assert_true(s.pcpu[0].since_ns == t - 10);
		assert_true(s.st.garbage == 0 && s.st.truncated == 0);
	}
	assert_true(r.wraps_seen >= 10); /* prod and cons went round 2*ds many times */
	assert_true(r.pads >= 10);       /* and Xen's padding records were skipped */
	assert_true(s.pcpu[0].switches == switches);
	assert_true(s.st.records == recs + r.pads);
	/* an empty ring drains nothing */
	assert_int_equal(xt_ring_drain(&s, 0, r.tb, r.ds, scratch), 0);
	xt_state_free(&s);
	free(scratch);
	free(r.tb);
}

static void test_ring_bogus_and_garbage(void **state)
{
	struct ring r;
	ring_init(&r, 120);
	uint8_t *scratch = malloc(r.ds);
	struct xt_state s;
	assert_int_equal(xt_state_init(&s, 1, 0), 0);
	const uint32_t bad[][2] = {
	    {0, 240},  /* prod at 2*ds */
	    {0, 6},    /* prod not u32-aligned */
	    {2, 8},    /* cons not aligned */
	    {0, 124},  /* more than ds unconsumed */
	    {200, 90}, /* wrapped: also more than ds */
	    {4000, 8}, /* cons out of range */
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		r.tb->cons = bad[i][0];
		r.tb->prod = bad[i][1];
		assert_int_equal(xt_ring_drain(&s, 0, r.tb, r.ds, scratch), -1);
		assert_int_equal(r.tb->cons, bad[i][0]); /* left alone */
	}
	assert_true(s.st.bogus_index == 6);
	assert_int_equal(xt_ring_drain(&s, 0, r.tb, 0, scratch), -1);
	assert_int_equal(xt_ring_drain(&s, 0, r.tb, 122, scratch), -1);

	/* exactly ds unconsumed is legal (a full ring), wrapped across the end */
	r.tb->cons = r.tb->prod = 200; /* both in the second lap */
	uint8_t b[128];
	put_switch(b, 50, XT_DOMID_IDLE, 0, 1, 4, 0, 30);
	assert_true(ring_put_switch(&r, b));
	/* Garbage after a good switch: the rest of the window is dropped */
	uint8_t junk[8] = {0};
	assert_true(ring_put(&r, junk, 8));
	uint32_t before = ring_used(&r);
	assert_true(r.pads == 1); /* the switch straddled the end of the data */
	assert_int_equal(xt_ring_drain(&s, 0, r.tb, r.ds, scratch), before);
	assert_int_equal(r.tb->cons, r.tb->prod);
	assert_true(s.st.garbage == 1);
	assert_int_equal(s.pcpu[0].domid, 4);
	assert_true(s.pcpu[0].stale);
	/* the next switch is believed again */
	put_switch(b, 90, 4, 0, 40, 5, 1, 30);
	assert_true(ring_put_switch(&r, b));
	assert_true(xt_ring_drain(&s, 0, r.tb, r.ds, scratch) > 0);
	assert_int_equal(s.pcpu[0].domid, 5);
	assert_false(s.pcpu[0].stale);
	xt_state_free(&s);
	free(scratch);
	free(r.tb);
}

/* ---- the source over fake rings and a fake hypervisor --------------------------------- */

#define NCPU 4
#define DS (2u * 4096u - 8u)

static struct {
	struct ring r[NCPU];
	bool nobuf[NCPU];
	bool open_fails;
	unsigned acks, opens, closes, pages;
	/* the hypervisor behind the embedded `xen` source */
	int run_pcpu[8][2]; /* [domid][vcpu] -> PCPU it runs on, or -1 */
	bool exists[8];
	int domain_errno;
} F;

static void *fx_open(unsigned pages, unsigned *ncpu, uint32_t *khz, uint32_t *ds, char *err, size_t errlen)
{
	if (F.open_fails) {
		snprintf(err, errlen, "fake: no trace buffers");
		return NULL;
	}
	F.opens++;
	F.pages = pages;
	*ncpu = NCPU;
	*khz = KHZ;
	*ds = DS;
	return &F;
}

static void fx_close(void *b)
{
	assert_ptr_equal(b, &F);
	F.closes++;
}

static struct t_buf *fx_buf(void *b, unsigned cpu)
{
	return cpu < NCPU && !F.nobuf[cpu] ? F.r[cpu].tb : NULL;
}

static int fx_ack(void *b)
{
	F.acks++;
	return 0;
}

static const struct xgpu_xt_ops fake_xt = {.open = fx_open, .close = fx_close, .buf = fx_buf, .ack = fx_ack};

static void *fc_open(char *err, size_t errlen)
{
	return &F;
}
static void fc_close(void *x)
{
}
static int fc_sched_id(void *x, int *id)
{
	*id = XGPU_XEN_SCHED_CREDIT;
	return 0;
}
static int fc_sched_get(void *x, int sched, uint32_t domid, uint32_t *w, uint32_t *cap)
{
	*w = 128u * (domid + 1);
	*cap = domid == 3 ? 50 : 0;
	return 0;
}
static int fc_domain(void *x, uint32_t domid, bool *dying, uint32_t *max_vcpu)
{
	if (F.domain_errno) {
		errno = F.domain_errno;
		return -1;
	}
	if (domid >= 8 || !F.exists[domid]) {
		errno = ESRCH;
		return -1;
	}
	*dying = false;
	*max_vcpu = 1;
	return 0;
}
static int fc_vcpu(void *x, uint32_t domid, uint32_t v, bool *online, bool *running, uint32_t *pcpu)
{
	*online = true;
	*running = F.run_pcpu[domid][v] >= 0;
	*pcpu = F.run_pcpu[domid][v] >= 0 ? (uint32_t)F.run_pcpu[domid][v] : 0;
	return 0;
}
static const struct xgpu_xenctl_ops fake_xc = {.open = fc_open,
					       .close = fc_close,
					       .sched_id = fc_sched_id,
					       .sched_get = fc_sched_get,
					       .domain = fc_domain,
					       .vcpu = fc_vcpu};

static int fake_setup(void **state)
{
	memset(&F, 0, sizeof F);
	for (int c = 0; c < NCPU; c++)
		ring_init(&F.r[c], DS);
	for (int d = 0; d < 8; d++) {
		F.exists[d] = true;
		F.run_pcpu[d][0] = F.run_pcpu[d][1] = -1;
	}
	return 0;
}

static int fake_teardown(void **state)
{
	for (int c = 0; c < NCPU; c++)
		free(F.r[c].tb);
	return 0;
}

static void cpu_switch(unsigned cpu, uint64_t t_ns, uint32_t pd, uint32_t pv, uint32_t ran, uint32_t nd,
		       uint32_t nv)
{
	uint8_t b[128];
	put_switch(b, t_ns * 2, pd, pv, ran, nd, nv, 30000000);
	assert_true(ring_put_switch(&F.r[cpu], b));
}

static bool has(const struct xgpu_hyp_snapshot *s, uint32_t dom, uint32_t v, uint32_t pcpu)
{
	for (unsigned i = 0; i < s->n; i++)
		if (s->e[i].domid == dom && s->e[i].vcpu == v && s->e[i].pcpu == pcpu && s->e[i].running)
			return true;
	return false;
}

static void test_source_refresh(void **state)
{
	char err[512];
	struct xgpu_hyp *h = NULL;
	assert_int_equal(xgpu_hyp_xentrace_open_with(&fake_xt, &fake_xc, NULL, &h, err, sizeof err), 0);
	assert_int_equal(F.pages, XGPU_XT_DEFAULT_PAGES);
	const struct xgpu_hyp_ops *o = &xgpu_hyp_xentrace;
	for (uint32_t d = 1; d <= 3; d++)
		o->track(h, d);
	static struct xgpu_hyp_snapshot snap;

	/* Nothing traced yet: PCPU 3's polled VCPU stands in. */
	F.run_pcpu[3][0] = 3;
	assert_int_equal(o->refresh(h, 1000, &snap), 0);
	assert_int_equal(snap.n, 1);
	assert_true(has(&snap, 3, 0, 3));
	assert_true(snap.now_ns == 1000);
	uint64_t seq0 = snap.seq;

	/* Switches on CPUs 0-2: tracked d1v0, d2v1, untracked d5v0. */
	cpu_switch(0, 1000, XT_DOMID_IDLE, 0, 100, 1, 0);
	cpu_switch(1, 1100, XT_DOMID_IDLE, 1, 100, 2, 1);
	cpu_switch(2, 1200, XT_DOMID_IDLE, 2, 100, 5, 0);
	/* the poll disagrees about PCPU 0: the trace wins there */
	F.run_pcpu[1][1] = 0;
	assert_int_equal(o->refresh(h, 2000, &snap), 0);
	assert_int_equal(snap.n, 3);
	assert_true(has(&snap, 1, 0, 0));
	assert_true(has(&snap, 2, 1, 1));
	assert_true(has(&snap, 3, 0, 3));
	assert_false(has(&snap, 1, 1, 0));
	for (unsigned i = 1; i < snap.n; i++)
		assert_true(snap.e[i - 1].pcpu < snap.e[i].pcpu);
	assert_true(snap.seq != seq0);
	uint64_t seq1 = snap.seq;
	assert_true(F.acks == 2);
	for (int c = 0; c < NCPU; c++)
		assert_int_equal(F.r[c].tb->cons, F.r[c].tb->prod);

	/* Nothing new: same snapshot, same seq */
	assert_int_equal(o->refresh(h, 3000, &snap), 0);
	assert_int_equal(snap.n, 3);
	assert_true(snap.seq == seq1);

	/* Detail per PCPU */
	struct xt_pcpu p;
	assert_int_equal(xgpu_hyp_xentrace_pcpu(h, 1, &p), 0);
	assert_true(p.known && p.domid == 2 && p.vcpu == 1 && p.since_ns == 1100 && p.slice_ns == 30000000);
	assert_int_equal(xgpu_hyp_xentrace_pcpu(h, NCPU, &p), -1);

	/* d1v0 ran 500 ns and PCPU 0 went idle; d2v1 moved from 1 to 3. */
	cpu_switch(0, 1500, 1, 0, 500, XT_DOMID_IDLE, 0);
	cpu_switch(1, 1600, 2, 1, 500, XT_DOMID_IDLE, 1);
	cpu_switch(3, 1650, XT_DOMID_IDLE, 3, 0, 2, 1);
	assert_int_equal(o->refresh(h, 4000, &snap), 0);
	assert_int_equal(snap.n, 1);
	assert_true(has(&snap, 2, 1, 3));
	assert_true(snap.seq != seq1);
	assert_int_equal(xgpu_hyp_xentrace_pcpu(h, 0, &p), 0);
	assert_true(p.domid == XT_DOMID_IDLE && p.prev_known && p.prev_ran_ns == 500 && p.prev_domid == 1);

	/* Weights and caps come from the embedded xen source */
	uint32_t w = 0, cap = 0;
	assert_int_equal(o->weight(h, 3, &w, &cap), 0);
	assert_int_equal(w, 512);
	assert_int_equal(cap, 50);
	assert_int_equal(o->weight(h, 6, &w, &cap), -1); /* not tracked */

	/* Untracking drops a domain's entries */
	o->untrack(h, 2);
	assert_int_equal(o->refresh(h, 5000, &snap), 0);
	assert_int_equal(snap.n, 0);
	o->track(h, 2);

	/* Lost records and a CPU without buffer */
	uint8_t b[64];
	uint32_t lost[4] = {11, 0, 0, 0};
	size_t n = put_rec(b, TRC_LOST_RECORDS, lost, 4, true, 2 * 5000);
	assert_true(ring_put(&F.r[3], b, (uint32_t)n));
	F.nobuf[2] = true;
	cpu_switch(2, 5100, 5, 0, 3900, 1, 1); /* not drained: no buffer */
	assert_int_equal(o->refresh(h, 6000, &snap), 0);
	assert_true(xgpu_hyp_xentrace_stats(h)->lost_records == 11);
	assert_true(has(&snap, 2, 1, 3)); /* stale, still the best knowledge */
	assert_false(has(&snap, 1, 1, 2));

	/* A hypervisor that answers nothing: the trace still gives the schedule */
	F.domain_errno = EIO;
	assert_int_equal(o->refresh(h, 7000, &snap), 0);
	assert_true(has(&snap, 2, 1, 3));
	F.domain_errno = 0;

	o->close(h);
	assert_int_equal(F.closes, 1);
}

static void test_source_open_errors(void **state)
{
	char err[512];
	struct xgpu_hyp *h = NULL;
	assert_int_equal(xgpu_hyp_xentrace_open_with(&fake_xt, &fake_xc, "pages=64", &h, err, sizeof err), 0);
	assert_int_equal(F.pages, 64);
	xgpu_hyp_xentrace.close(h);
	const char *bad[] = {"pages=1", "pages=", "pages=12x", "pages=999999", "size=4"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		err[0] = 0;
		assert_int_equal(xgpu_hyp_xentrace_open_with(&fake_xt, &fake_xc, bad[i], &h, err, sizeof err),
				 -1);
		assert_non_null(strstr(err, "xentrace:"));
	}
	F.open_fails = true;
	assert_int_equal(xgpu_hyp_xentrace_open_with(&fake_xt, &fake_xc, NULL, &h, err, sizeof err), -1);
	assert_non_null(strstr(err, "no trace buffers"));
	assert_int_equal(F.opens, 1);

	/* The registry knows the name */
	const char *args = NULL;
	assert_ptr_equal(xgpu_hyp_find("xentrace:pages=8", &args, err, sizeof err), &xgpu_hyp_xentrace);
	assert_string_equal(args, "pages=8");
	assert_non_null(strstr(xgpu_hyp_names(), "xentrace"));
}

static void test_real_open_without_xen(void **state)
{
	struct stat st;
	if (stat("/dev/xen/privcmd", &st) == 0 || stat("/proc/xen/privcmd", &st) == 0)
		skip();
	char err[512] = "";
	struct xgpu_hyp *h = NULL;
	assert_int_equal(xgpu_hyp_xentrace.open(NULL, &h, err, sizeof err), -1);
	assert_null(h);
	assert_non_null(strstr(err, "/dev/xen/privcmd"));
	assert_non_null(strstr(err, "xentrace"));
	/* the trace side alone says the same */
	unsigned ncpu;
	uint32_t khz, ds;
	err[0] = 0;
	assert_null(xgpu_xt_real.open(8, &ncpu, &khz, &ds, err, sizeof err));
	assert_non_null(strstr(err, "/dev/xen/privcmd"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_decode_layouts),
	    cmocka_unit_test(test_decode_short_prefixes),
	    cmocka_unit_test(test_decode_garbage),
	    cmocka_unit_test(test_recorded_cpu0_records),
	    cmocka_unit_test(test_recorded_xentrace_file),
	    cmocka_unit_test(test_recorded_truncated),
	    cmocka_unit_test(test_recorded_garbage),
	    cmocka_unit_test(test_recorded_real_xen),
	    cmocka_unit_test(test_state_machine),
	    cmocka_unit_test(test_ring_wraps),
	    cmocka_unit_test(test_ring_bogus_and_garbage),
	    cmocka_unit_test_setup_teardown(test_source_refresh, fake_setup, fake_teardown),
	    cmocka_unit_test_setup_teardown(test_source_open_errors, fake_setup, fake_teardown),
	    cmocka_unit_test(test_real_open_without_xen),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
