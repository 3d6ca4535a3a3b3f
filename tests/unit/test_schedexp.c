/* SPDX-License-Identifier: Apache-2.0 */
/* test_schedexp.c - the reader of the patched credit scheduler's export and
 * the `xenpatch` source, without a hypervisor: a test writer lays out pages
 * exactly as the patch does (header, PCPU records, domain slots) and updates
 * them with the seqlock protocol, from another thread where it matters.
 *
 * Covered: snapshots always consistent under a concurrent writer (every field
 * of a record derives from one counter), torn reads detected (a writer stuck
 * mid-update leaves the record stale after the retries; seq moving between
 * the two reads), sequence wrap, bad headers and records refused, mapping
 * failures and the fallback to the `xen` source, the source's entries,
 * weights and seq; and augc and cosched driven in virtual time over the
 * `xenpatch` source whose pages mirror the `sim` credit scheduler: the same
 * grants as over `sim` itself, cosched never grants an off-CPU domain while
 * an on-CPU one waits, augc follows the upcoming entries. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "schedsrc/hypsrc.h"
#include "schedsrc/hypsrc_sim.h"
#include "schedsrc/hypsrc_xenpatch.h"
#include "reader.h"
#include "scheduler.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- the test writer --------------------------------------------------------- */

struct writer {
	void *mem;
	size_t len;
	struct xgpu_schedexp_header *hdr;
};

static struct xgpu_schedexp_pcpu *w_pcpu(struct writer *w, unsigned i)
{
	return (struct xgpu_schedexp_pcpu *)((char *)w->mem + w->hdr->pcpu_off) + i;
}

static struct xgpu_schedexp_dom *w_dom(struct writer *w, unsigned i)
{
	return (struct xgpu_schedexp_dom *)((char *)w->mem + w->hdr->dom_off) + i;
}

/* As the patch sets it up: header, PCPU records right after it (index
 * filled in, idle), domain slots free. */
static void w_init(struct writer *w, unsigned npcpus, unsigned ndoms)
{
	size_t pcpu_off = 64, dom_off = pcpu_off + (size_t)npcpus * XGPU_SCHEDEXP_PCPU_SIZE;
	size_t bytes = dom_off + (size_t)ndoms * XGPU_SCHEDEXP_DOM_SIZE;
	unsigned frames = (unsigned)((bytes + XGPU_SCHEDEXP_PAGE - 1) / XGPU_SCHEDEXP_PAGE);
	w->len = (size_t)frames * XGPU_SCHEDEXP_PAGE;
	w->mem = aligned_alloc(XGPU_SCHEDEXP_PAGE, w->len);
	assert_non_null(w->mem);
	memset(w->mem, 0, w->len);
	w->hdr = w->mem;
	*w->hdr = (struct xgpu_schedexp_header){.magic = XGPU_SCHEDEXP_MAGIC,
						.version = XGPU_SCHEDEXP_VERSION,
						.nr_frames = frames,
						.npcpus = npcpus,
						.ndoms = ndoms,
						.pcpu_off = (uint32_t)pcpu_off,
						.dom_off = (uint32_t)dom_off,
						.tick_us = 10000,
						.tslice_us = 30000,
						.boot_ns = 12345};
	for (unsigned i = 0; i < npcpus; i++) {
		w_pcpu(w, i)->pcpu = i;
		w_pcpu(w, i)->cur.domid = XGPU_SCHEDEXP_DOMID_IDLE;
		w_pcpu(w, i)->cur.pri = XGPU_SCHEDEXP_PRI_IDLE;
	}
	for (unsigned i = 0; i < ndoms; i++)
		w_dom(w, i)->domid = XGPU_SCHEDEXP_DOMID_FREE;
}

static void w_free(struct writer *w)
{
	free(w->mem);
}

/* The patch's protocol: seq odd, release fence, the fields (32-bit relaxed
 * stores, all but seq), seq even with release. spin: busy work between the
 * stores, so a reader on another core catches the record mid-update. */
static void w_store(void *rec, const void *val, size_t len, unsigned spin)
{
	uint32_t *seq = rec;
	uint32_t s = __atomic_load_n(seq, __ATOMIC_RELAXED);
	__atomic_store_n(seq, s + 1, __ATOMIC_RELAXED);
	atomic_thread_fence(memory_order_release);
	const uint32_t *v = val;
	for (size_t i = 1; i < len / 4; i++) {
		__atomic_store_n((uint32_t *)rec + i, v[i], __ATOMIC_RELAXED);
		for (volatile unsigned k = 0; k < spin; k++)
			;
	}
	__atomic_store_n(seq, s + 2, __ATOMIC_RELEASE);
}

static void w_set_pcpu(struct writer *w, unsigned i, const struct xgpu_schedexp_pcpu *p)
{
	w_store(w_pcpu(w, i), p, sizeof *p, 0);
}

static void w_set_dom(struct writer *w, uint16_t domid, uint32_t weight, uint32_t cap)
{
	struct xgpu_schedexp_dom d = {.domid = domid, .nr_vcpus = 1, .weight = weight, .cap = cap};
	w_store(w_dom(w, domid % w->hdr->ndoms), &d, sizeof d, 0);
}

static struct xgpu_schedexp_unit unit(uint16_t domid, uint16_t vcpu, int32_t credit)
{
	return (struct xgpu_schedexp_unit){
	    .domid = domid, .vcpu = vcpu, .credit = credit, .pri = XGPU_SCHEDEXP_PRI_TS_UNDER};
}

/* A record whose every field derives from k, so a mix of two writes shows. */
static struct xgpu_schedexp_pcpu derived(unsigned pcpu, uint64_t k)
{
	struct xgpu_schedexp_pcpu p = {.pcpu = pcpu};
	p.cur = unit((uint16_t)(1 + k % 7), (uint16_t)(k % 3), (int32_t)(k * 7));
	p.slice_start_ns = k * 1000;
	p.slice_len_ns = k * 3 + pcpu;
	p.nrunq = (uint32_t)(k % (XGPU_SCHEDEXP_RUNQ + 1));
	for (unsigned i = 0; i < p.nrunq; i++)
		p.runq[i] = unit((uint16_t)(1 + (k + i) % 7), (uint16_t)i, (int32_t)(k + i));
	return p;
}

static bool derived_ok(const struct xgpu_schedexp_pcpu *p, unsigned pcpu)
{
	uint64_t k = p->slice_start_ns / 1000;
	struct xgpu_schedexp_pcpu want = derived(pcpu, k);
	want.seq = p->seq;
	return !memcmp(&want, p, sizeof want);
}

/* ---- the reader --------------------------------------------------------------- */

static struct xgpu_schedexp_reader *open_mem(struct writer *w)
{
	char err[256] = "";
	struct xgpu_schedexp_reader *r = xgpu_schedexp_open_mem(w->mem, w->len, err, sizeof err);
	if (!r)
		fail_msg("open: %s", err);
	return r;
}

static void reads_fresh_export(void **state)
{
	(void)state;
	struct writer w;
	w_init(&w, 4, 16);
	struct xgpu_schedexp_reader *r = open_mem(&w);
	assert_int_equal(xgpu_schedexp_header(r)->npcpus, 4);
	assert_int_equal(xgpu_schedexp_header(r)->tslice_us, 30000);
	struct xgpu_schedexp_snapshot *s = calloc(1, sizeof *s);
	xgpu_schedexp_read(r, s);
	for (unsigned i = 0; i < 4; i++) {
		assert_true(s->pcpu_valid[i]);
		assert_false(s->pcpu_stale[i]);
		assert_int_equal(s->pcpu[i].cur.domid, XGPU_SCHEDEXP_DOMID_IDLE);
	}
	for (unsigned i = 0; i < 16; i++)
		assert_true(s->dom_valid[i] && s->dom[i].domid == XGPU_SCHEDEXP_DOMID_FREE);
	assert_int_equal(s->torn + s->stale + s->invalid, 0);

	struct xgpu_schedexp_pcpu p = derived(2, 41);
	w_set_pcpu(&w, 2, &p);
	w_set_dom(&w, 17, 512, 50);
	xgpu_schedexp_read(r, s);
	assert_true(derived_ok(&s->pcpu[2], 2));
	assert_int_equal(s->pcpu[2].seq, 2);
	assert_int_equal(s->dom[1].domid, 17);
	assert_int_equal(s->dom[1].weight, 512);
	assert_int_equal(s->dom[1].cap, 50);
	free(s);
	xgpu_schedexp_close(r);
	w_free(&w);
}

struct churn {
	struct writer *w;
	atomic_bool stop;
	bool only_seq; /* move seq by 2 (never odd) over unchanged fields */
	uint64_t writes;
};

static void *churn_main(void *arg)
{
	struct churn *c = arg;
	uint64_t k = 0;
	while (!atomic_load(&c->stop)) {
		for (unsigned i = 0; i < c->w->hdr->npcpus; i++) {
			struct xgpu_schedexp_pcpu *rec = w_pcpu(c->w, i);
			if (c->only_seq) {
				__atomic_fetch_add(&rec->seq, 2, __ATOMIC_RELEASE);
			} else {
				struct xgpu_schedexp_pcpu p = derived(i, k);
				w_store(rec, &p, sizeof p, 3);
			}
		}
		k++;
		c->writes++;
	}
	return NULL;
}

static double mono_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Reads while another thread writes: every kept copy is one write's, never
 * a mix; torn attempts are seen (and retried). Seqs start near the wrap, so
 * they wrap under the reader too. */
static void consistent_under_concurrent_writer(void **state)
{
	(void)state;
	struct writer w;
	w_init(&w, 8, 4);
	for (unsigned i = 0; i < 8; i++) {
		w_pcpu(&w, i)->seq = 0xffffff00u;
		struct xgpu_schedexp_pcpu p = derived(i, 0);
		w_set_pcpu(&w, i, &p);
	}
	struct xgpu_schedexp_reader *r = open_mem(&w);
	struct xgpu_schedexp_snapshot *s = calloc(1, sizeof *s);
	struct churn c = {.w = &w};
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, churn_main, &c), 0);
	uint64_t reads = 0, torn = 0, fresh = 0;
	bool wrapped = false, ever_valid[8] = {false};
	double t0 = mono_s();
	while (mono_s() - t0 < 10 && (reads < 20000 || !torn || !wrapped)) {
		xgpu_schedexp_read(r, s);
		reads++;
		torn += s->torn;
		assert_int_equal(s->invalid, 0);
		for (unsigned i = 0; i < 8; i++) {
			/* A reader preempted mid-copy while this writer never
			 * pauses can give up on a record in its first reads
			 * (a loaded 2-CPU host did); once a copy came through,
			 * a give-up keeps it, stale. */
			if (!s->pcpu_valid[i]) {
				assert_false(ever_valid[i]);
				continue;
			}
			ever_valid[i] = true;
			if (!derived_ok(&s->pcpu[i], i))
				fail_msg("read %llu: PCPU %u's copy mixes two writes (seq %u)",
					 (unsigned long long)reads, i, s->pcpu[i].seq);
			assert_int_equal(s->pcpu[i].seq % 2, 0);
			fresh += !s->pcpu_stale[i];
			wrapped |= s->pcpu[i].seq < 0x80000000u;
		}
	}
	atomic_store(&c.stop, true);
	pthread_join(t, NULL);
	uint64_t total_torn;
	xgpu_schedexp_counters(r, &total_torn, NULL);
	print_message("%llu reads, %llu writer passes, %llu torn attempts, %llu fresh copies\n",
		      (unsigned long long)reads, (unsigned long long)c.writes, (unsigned long long)torn,
		      (unsigned long long)fresh);
	for (unsigned i = 0; i < 8; i++)
		assert_true(ever_valid[i]);
	assert_true(torn > 0);
	assert_true(wrapped);
	assert_int_equal(total_torn, torn);
	assert_true(fresh > reads); /* most records came through fresh */
	free(s);
	xgpu_schedexp_close(r);
	w_free(&w);
}

/* A seq that moves between the reader's two loads (even both times) is torn
 * too: the fields did not change here, but the reader cannot know. */
static void seq_moving_between_reads_is_torn(void **state)
{
	(void)state;
	struct writer w;
	w_init(&w, 2, 1);
	struct xgpu_schedexp_pcpu p = derived(0, 5);
	w_set_pcpu(&w, 0, &p);
	struct xgpu_schedexp_reader *r = open_mem(&w);
	struct xgpu_schedexp_snapshot *s = calloc(1, sizeof *s);
	struct churn c = {.w = &w, .only_seq = true};
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, churn_main, &c), 0);
	uint64_t torn = 0, reads = 0;
	double t0 = mono_s();
	while (mono_s() - t0 < 10 && (reads < 1000 || !torn)) {
		xgpu_schedexp_read(r, s);
		torn += s->torn;
		reads++;
		assert_true(s->pcpu_valid[0]);
		assert_true(derived_ok(&s->pcpu[0], 0));
	}
	atomic_store(&c.stop, true);
	pthread_join(t, NULL);
	assert_true(torn > 0);
	free(s);
	xgpu_schedexp_close(r);
	w_free(&w);
}

/* A writer stuck mid-update (odd seq): after the retries the record keeps
 * its previous copy and is stale; the others stay fresh. */
static void stuck_writer_leaves_record_stale(void **state)
{
	(void)state;
	struct writer w;
	w_init(&w, 3, 4);
	struct xgpu_schedexp_pcpu p = derived(1, 9);
	w_set_pcpu(&w, 1, &p);
	w_set_dom(&w, 2, 300, 0);
	struct xgpu_schedexp_reader *r = open_mem(&w);
	struct xgpu_schedexp_snapshot *s = calloc(1, sizeof *s);
	xgpu_schedexp_read(r, s);
	assert_true(derived_ok(&s->pcpu[1], 1));

	/* Begins the next write and never finishes it. */
	__atomic_store_n(&w_pcpu(&w, 1)->seq, w_pcpu(&w, 1)->seq + 1, __ATOMIC_RELAXED);
	w_pcpu(&w, 1)->slice_start_ns = 999999;
	__atomic_store_n(&w_dom(&w, 2)->seq, w_dom(&w, 2)->seq + 1, __ATOMIC_RELAXED);
	w_dom(&w, 2)->weight = 7;
	xgpu_schedexp_read(r, s);
	assert_int_equal(s->torn, 2 * XGPU_SCHEDEXP_RETRIES);
	assert_int_equal(s->stale, 2);
	assert_true(s->pcpu_valid[1] && s->pcpu_stale[1]);
	assert_true(derived_ok(&s->pcpu[1], 1)); /* the previous copy */
	assert_int_equal(s->pcpu[1].slice_start_ns, 9000);
	assert_true(s->dom_valid[2] && s->dom_stale[2]);
	assert_int_equal(s->dom[2].weight, 300);
	assert_false(s->pcpu_stale[0] || s->pcpu_stale[2]);

	/* Never read before and stuck: not valid at all. */
	struct xgpu_schedexp_snapshot *s2 = calloc(1, sizeof *s2);
	xgpu_schedexp_read(r, s2);
	assert_false(s2->pcpu_valid[1]);
	assert_true(s2->pcpu_valid[0]);
	assert_int_equal(s2->stale, 0);

	/* The writer finishes: fresh again. */
	p = derived(1, 10);
	memcpy((char *)w_pcpu(&w, 1) + 4, (char *)&p + 4, sizeof p - 4);
	__atomic_store_n(&w_pcpu(&w, 1)->seq, w_pcpu(&w, 1)->seq + 1, __ATOMIC_RELEASE);
	xgpu_schedexp_read(r, s);
	assert_false(s->pcpu_stale[1]);
	assert_int_equal(s->pcpu[1].slice_start_ns, 10000);
	uint64_t torn, stale;
	xgpu_schedexp_counters(r, &torn, &stale);
	assert_true(torn >= 4 * XGPU_SCHEDEXP_RETRIES);
	assert_int_equal(stale, 3); /* the domain slot is still stuck */
	free(s2);
	free(s);
	xgpu_schedexp_close(r);
	w_free(&w);
}

/* seq is 32 bits and wraps: 0xfffffffe, then 0 and 2 read fine. */
static void sequence_wraps(void **state)
{
	(void)state;
	struct writer w;
	w_init(&w, 1, 1);
	w_pcpu(&w, 0)->seq = 0xfffffffcu;
	struct xgpu_schedexp_reader *r = open_mem(&w);
	struct xgpu_schedexp_snapshot *s = calloc(1, sizeof *s);
	uint32_t want[] = {0xfffffffeu, 0, 2};
	for (unsigned i = 0; i < 3; i++) {
		struct xgpu_schedexp_pcpu p = derived(0, 100 + i);
		w_set_pcpu(&w, 0, &p);
		xgpu_schedexp_read(r, s);
		assert_true(s->pcpu_valid[0]);
		assert_false(s->pcpu_stale[0]);
		assert_int_equal(s->pcpu[0].seq, want[i]);
		assert_int_equal(s->pcpu[0].slice_start_ns, (100 + i) * 1000);
		assert_int_equal(s->torn, 0);
	}
	free(s);
	xgpu_schedexp_close(r);
	w_free(&w);
}

static void expect_refused(struct writer *w, const char *what)
{
	char err[256] = "";
	struct xgpu_schedexp_reader *r = xgpu_schedexp_open_mem(w->mem, w->len, err, sizeof err);
	if (r)
		fail_msg("header accepted; expected '%s'", what);
	if (!strstr(err, what))
		fail_msg("message '%s' lacks '%s'", err, what);
}

static void bad_headers_refused(void **state)
{
	(void)state;
	struct writer w;
	w_init(&w, 4, 8);
	struct xgpu_schedexp_header good = *w.hdr;
#define BAD(field, value, what)                                                                              \
	do {                                                                                                 \
		*w.hdr = good;                                                                               \
		w.hdr->field = (value);                                                                      \
		expect_refused(&w, what);                                                                    \
	} while (0)
	BAD(magic, 0x12345678, "bad magic");
	BAD(version, 2, "ABI version 2");
	BAD(npcpus, XGPU_SCHEDEXP_MAX_PCPUS + 1, "npcpus 257");
	BAD(npcpus, 0, "npcpus 0");
	BAD(ndoms, XGPU_SCHEDEXP_MAX_DOMS + 1, "ndoms 1025");
	BAD(nr_frames, 0, "nr_frames 0");
	BAD(nr_frames, XGPU_SCHEDEXP_MAX_FRAMES + 1, "nr_frames 65");
	BAD(nr_frames, 2, "frames"); /* more than the region holds */
	BAD(pcpu_off, 4096 - 64, "PCPU records");
	BAD(pcpu_off, 0xfffffff0u, "PCPU records");
	BAD(pcpu_off, 0, "PCPU records"); /* over the header */
	BAD(pcpu_off, 66, "misaligned");
	BAD(dom_off, 4096 - 16, "domain slots");
	BAD(dom_off, 64 + 128, "overlap");
	BAD(npcpus, 40, "PCPU records"); /* 40 records end past the one frame */
#undef BAD
	*w.hdr = good;
	char err[256];
	/* A region shorter than one frame, or misaligned. */
	assert_null(xgpu_schedexp_open_mem(w.mem, 100, err, sizeof err));
	assert_null(xgpu_schedexp_open_mem((char *)w.mem + 4, w.len - 4, err, sizeof err));
	struct xgpu_schedexp_reader *r = xgpu_schedexp_open_mem(w.mem, w.len, err, sizeof err);
	assert_non_null(r);
	xgpu_schedexp_close(r);
	w_free(&w);
}

/* Copies that are consistent but wrong are refused and keep the last good
 * copy; zeroed records (never written) are simply not there. */
static void bad_records_refused(void **state)
{
	(void)state;
	struct writer w;
	w_init(&w, 3, 4);
	memset(w_pcpu(&w, 2), 0, XGPU_SCHEDEXP_PCPU_SIZE); /* never written */
	memset(w_dom(&w, 3), 0, XGPU_SCHEDEXP_DOM_SIZE);
	struct xgpu_schedexp_reader *r = open_mem(&w);
	struct xgpu_schedexp_snapshot *s = calloc(1, sizeof *s);
	xgpu_schedexp_read(r, s);
	assert_false(s->pcpu_valid[2]);
	assert_false(s->dom_valid[3]);
	assert_int_equal(s->invalid, 0);

	struct xgpu_schedexp_pcpu p = derived(0, 3);
	p.pcpu = 1; /* another PCPU's index */
	w_set_pcpu(&w, 0, &p);
	p = derived(1, 4);
	p.nrunq = XGPU_SCHEDEXP_RUNQ + 1;
	w_set_pcpu(&w, 1, &p);
	p = derived(2, 4);
	p.cur.domid = 0x7ff5; /* reserved, not a domain */
	w_set_pcpu(&w, 2, &p);
	w_set_dom(&w, 0x7ff4, 256, 0);
	struct xgpu_schedexp_dom d = {.domid = 6, .weight = 1}; /* 6 % 4 == 2, not slot 1 */
	w_store(w_dom(&w, 1), &d, sizeof d, 0);
	xgpu_schedexp_read(r, s);
	assert_int_equal(s->invalid, 5);
	assert_true(s->pcpu_valid[0] && s->pcpu_stale[0]);
	assert_int_equal(s->pcpu[0].cur.domid, XGPU_SCHEDEXP_DOMID_IDLE);
	assert_true(s->pcpu_stale[1]);
	assert_false(s->pcpu_valid[2]);
	assert_true(s->dom_stale[1]);
	assert_int_equal(s->dom[1].domid, XGPU_SCHEDEXP_DOMID_FREE);
	free(s);
	xgpu_schedexp_close(r);
	w_free(&w);
}

/* ---- mapping failures and the fallback ----------------------------------------- */

static int fake_map_errno;

static void *fake_open(void *ctx, char *err, size_t errlen)
{
	return ctx ? ctx : (void *)&fake_map_errno;
}

static void fake_close(void *h)
{
}

static const void *fake_map(void *h, unsigned nr_frames, void **res)
{
	errno = fake_map_errno;
	return NULL;
}

static void fake_unmap(void *h, void *res, unsigned nr_frames)
{
}

static const struct xgpu_schedexp_map_ops fake_map_ops = {
    .open = fake_open, .close = fake_close, .map = fake_map, .unmap = fake_unmap};

static void *fx_open(char *err, size_t errlen)
{
	return &fake_map_errno;
}
static void fx_close(void *x)
{
}
static int fx_sched_id(void *x, int *id)
{
	*id = XGPU_XEN_SCHED_CREDIT;
	return 0;
}
static int fx_sched_get(void *x, int sched, uint32_t domid, uint32_t *weight, uint32_t *cap)
{
	*weight = 100 * domid;
	*cap = 0;
	return 0;
}
static int fx_domain(void *x, uint32_t domid, bool *dying, uint32_t *max_vcpu_id)
{
	*dying = false;
	*max_vcpu_id = 0;
	return 0;
}
static int fx_vcpu(void *x, uint32_t domid, uint32_t vcpu, bool *online, bool *running, uint32_t *pcpu)
{
	*online = true;
	*running = domid == 3;
	*pcpu = 1;
	return 0;
}
static const struct xgpu_xenctl_ops fake_xenctl = {.open = fx_open,
						   .close = fx_close,
						   .sched_id = fx_sched_id,
						   .sched_get = fx_sched_get,
						   .domain = fx_domain,
						   .vcpu = fx_vcpu};

static void absent_export_falls_back_to_xen(void **state)
{
	(void)state;
	char err[512] = "";
	bool absent = false;
	int none[] = {EOPNOTSUPP, EINVAL, ESRCH};
	for (unsigned i = 0; i < 3; i++) {
		fake_map_errno = none[i];
		assert_null(xgpu_schedexp_open_with(&fake_map_ops, NULL, &absent, err, sizeof err));
		assert_true(absent);
		assert_non_null(
		    strstr(err, "this hypervisor has no xgpu schedule export (unpatched Xen, or not "
				"booted with sched=credit): XENMEM_acquire_resource type 0x7867 failed"));
	}
	fake_map_errno = EPERM;
	assert_null(xgpu_schedexp_open_with(&fake_map_ops, NULL, &absent, err, sizeof err));
	assert_false(absent);
	assert_non_null(strstr(err, "run as root"));

	/* The source: absent export -> the `xen` source answers. */
	fake_map_errno = EOPNOTSUPP;
	struct xgpu_hyp *h = NULL;
	assert_int_equal(
	    xgpu_hyp_xenpatch_open_with(&fake_map_ops, NULL, &fake_xenctl, NULL, &h, err, sizeof err), 0);
	assert_true(xgpu_hyp_xenpatch_fell_back(h));
	xgpu_hyp_xenpatch.track(h, 3);
	xgpu_hyp_xenpatch.track(h, 4);
	static struct xgpu_hyp_snapshot snap;
	assert_int_equal(xgpu_hyp_xenpatch.refresh(h, 5, &snap), 0);
	assert_int_equal(snap.n, 1);
	assert_int_equal(snap.e[0].domid, 3);
	assert_true(snap.e[0].running);
	uint32_t wt, cap;
	assert_int_equal(xgpu_hyp_xenpatch.weight(h, 4, &wt, &cap), 0);
	assert_int_equal(wt, 400);
	xgpu_hyp_xenpatch.untrack(h, 3);
	assert_int_equal(xgpu_hyp_xenpatch.refresh(h, 6, &snap), 0);
	assert_int_equal(snap.n, 0);
	xgpu_hyp_xenpatch.close(h);

	/* A broken (not absent) export does not fall back. */
	fake_map_errno = EPERM;
	assert_int_equal(
	    xgpu_hyp_xenpatch_open_with(&fake_map_ops, NULL, &fake_xenctl, NULL, &h, err, sizeof err), -1);
	assert_non_null(strstr(err, "xenpatch: cannot map"));
	assert_int_equal(xgpu_hyp_xenpatch.open("x=1", &h, err, sizeof err), -1);
	assert_non_null(strstr(err, "takes no arguments"));

	/* Here there is no Xen: the real open says why, and the fallback's reason too. */
	if (xgpu_hyp_xenpatch.open(NULL, &h, err, sizeof err) == 0) {
		print_message("a Xen dom0: the real open worked\n");
		xgpu_hyp_xenpatch.close(h);
	} else {
		assert_non_null(strstr(err, "privcmd"));
	}
}

/* ---- the source over the test writer ------------------------------------------- */

static struct xgpu_hyp *open_src(struct writer *w)
{
	struct xgpu_hyp *h = NULL;
	char err[256] = "";
	if (xgpu_hyp_xenpatch_open_mem(w->mem, w->len, &h, err, sizeof err))
		fail_msg("%s", err);
	assert_false(xgpu_hyp_xenpatch_fell_back(h));
	return h;
}

static void source_entries_weights_seq(void **state)
{
	(void)state;
	struct writer w;
	w_init(&w, 3, 8);
	struct xgpu_hyp *h = open_src(&w);
	static struct xgpu_hyp_snapshot snap;
	xgpu_hyp_xenpatch.track(h, 2);
	xgpu_hyp_xenpatch.track(h, 5);
	assert_int_equal(xgpu_hyp_xenpatch.refresh(h, 100, &snap), 0);
	assert_int_equal(snap.n, 0);
	assert_int_equal(snap.now_ns, 100);
	assert_int_equal(xgpu_hyp_xenpatch.weight(h, 2, NULL, NULL), -1);
	uint64_t seq0 = snap.seq;

	/* PCPU 0 runs 2.0 with 5.1 then 0.0 (untracked) then idle queued;
	 * PCPU 1 runs dom0, 2.1 next; PCPU 2 idle. */
	struct xgpu_schedexp_pcpu p = {.pcpu = 0, .cur = unit(2, 0, 120), .nrunq = 3};
	p.runq[0] = unit(5, 1, 80);
	p.runq[1] = unit(0, 0, 10);
	p.runq[2] = unit(XGPU_SCHEDEXP_DOMID_IDLE, 0, 0);
	w_set_pcpu(&w, 0, &p);
	p = (struct xgpu_schedexp_pcpu){.pcpu = 1, .cur = unit(0, 1, 5), .nrunq = 1};
	p.runq[0] = unit(2, 1, -30);
	w_set_pcpu(&w, 1, &p);
	w_set_dom(&w, 2, 512, 0);
	w_set_dom(&w, 5, 128, 25);
	w_set_dom(&w, 0, 256, 0);
	assert_int_equal(xgpu_hyp_xenpatch.refresh(h, 200, &snap), 0);
	assert_int_equal(snap.n, 3);
	struct xgpu_hyp_entry want[] = {{.domid = 2, .vcpu = 0, .pcpu = 0, .credit = 120, .running = true},
					{.domid = 5, .vcpu = 1, .pcpu = 0, .credit = 80, .running = false},
					{.domid = 2, .vcpu = 1, .pcpu = 1, .credit = -30, .running = false}};
	for (unsigned i = 0; i < 3; i++) {
		assert_int_equal(snap.e[i].domid, want[i].domid);
		assert_int_equal(snap.e[i].vcpu, want[i].vcpu);
		assert_int_equal(snap.e[i].pcpu, want[i].pcpu);
		assert_int_equal(snap.e[i].credit, want[i].credit);
		assert_int_equal(snap.e[i].running, want[i].running);
	}
	uint32_t wt = 0, cap = 0;
	assert_int_equal(xgpu_hyp_xenpatch.weight(h, 5, &wt, &cap), 0);
	assert_int_equal(wt, 128);
	assert_int_equal(cap, 25);
	assert_int_equal(xgpu_hyp_xenpatch.weight(h, 0, &wt, &cap), -1); /* not tracked */
	uint64_t seq1 = snap.seq;
	assert_true(seq1 != seq0);

	/* Nothing changed: same seq, even though the records were rewritten. */
	p = (struct xgpu_schedexp_pcpu){.pcpu = 2, .cur = unit(XGPU_SCHEDEXP_DOMID_IDLE, 0, 0)};
	w_set_pcpu(&w, 2, &p);
	assert_int_equal(xgpu_hyp_xenpatch.refresh(h, 300, &snap), 0);
	assert_int_equal(snap.seq, seq1);
	/* Credit burnt: a new view. */
	p = (struct xgpu_schedexp_pcpu){.pcpu = 0, .cur = unit(2, 0, 20), .nrunq = 1};
	p.runq[0] = unit(5, 1, 80);
	w_set_pcpu(&w, 0, &p);
	assert_int_equal(xgpu_hyp_xenpatch.refresh(h, 400, &snap), 0);
	assert_true(snap.seq != seq1);
	uint64_t seq2 = snap.seq;
	/* A weight change alone: a new view. */
	w_set_dom(&w, 5, 1024, 0);
	assert_int_equal(xgpu_hyp_xenpatch.refresh(h, 500, &snap), 0);
	assert_true(snap.seq != seq2);
	assert_int_equal(xgpu_hyp_xenpatch.weight(h, 5, &wt, &cap), 0);
	assert_int_equal(wt, 1024);
	/* The domain goes: its slot is freed, its weight unknown. */
	struct xgpu_schedexp_dom fr = {.domid = XGPU_SCHEDEXP_DOMID_FREE};
	w_store(w_dom(&w, 5), &fr, sizeof fr, 0);
	xgpu_hyp_xenpatch.untrack(h, 2);
	assert_int_equal(xgpu_hyp_xenpatch.refresh(h, 600, &snap), 0);
	assert_int_equal(xgpu_hyp_xenpatch.weight(h, 5, &wt, &cap), -1);
	assert_int_equal(snap.n, 1);
	assert_int_equal(snap.e[0].domid, 5);
	xgpu_hyp_xenpatch.close(h);
	w_free(&w);
}

/* 256 PCPUs with five tracked units each: the snapshot stops at its bound. */
static void source_snapshot_bounded(void **state)
{
	(void)state;
	struct writer w;
	w_init(&w, XGPU_SCHEDEXP_MAX_PCPUS, XGPU_SCHEDEXP_MAX_DOMS);
	for (unsigned i = 0; i < XGPU_SCHEDEXP_MAX_PCPUS; i++) {
		struct xgpu_schedexp_pcpu p = {.pcpu = i, .cur = unit(1, (uint16_t)i, 1), .nrunq = 4};
		for (unsigned k = 0; k < 4; k++)
			p.runq[k] = unit(1, (uint16_t)k, 1);
		w_set_pcpu(&w, i, &p);
	}
	struct xgpu_hyp *h = open_src(&w);
	xgpu_hyp_xenpatch.track(h, 1);
	static struct xgpu_hyp_snapshot snap;
	assert_int_equal(xgpu_hyp_xenpatch.refresh(h, 1, &snap), 0);
	assert_int_equal(snap.n, XGPU_HYP_MAX_ENTRIES);
	xgpu_hyp_xenpatch.close(h);
	w_free(&w);
}

/* ---- augc and cosched over the source, in virtual time --------------------------- */

#define STEP_NS 50000ull
#define TICK_NS 10000000ull
#define SEC 1000000000ull
#define NDOM 4

/* The scheduler's domains behave like the test_sched pollers: always work
 * (saturating), 1 ms kernels run one at a time. */
struct vdom {
	struct xgpu_sched_dom sd;
	bool inflight;
	uint64_t done_at;
};

struct vsim {
	struct xgpu_sched s;
	const struct xgpu_hyp_ops *ops;
	struct xgpu_hyp *hyp;   /* what the scheduler reads */
	struct xgpu_hyp *model; /* the `sim` credit scheduler (the "hypervisor") */
	struct writer w;        /* its schedule, exported as the patch does */
	bool over_export, mirror;
	struct vdom d[NDOM];
	uint64_t now, device_free_at;
	uint64_t grants_total, grants_running, contested;
	bool check_cosched;
	uint64_t grant_log[4096];
	unsigned ngrant;
};

static struct vsim *cur_vsim;

static bool vsnap_running(struct vsim *v, uint32_t domid)
{
	return v->s.snap_valid && xgpu_sched_hyp_view(&v->s, domid).running;
}

static void v_wake(struct xgpu_sched_dom *sd)
{
	struct vsim *v = cur_vsim;
	v->grants_total++;
	v->grants_running += xgpu_hyp_sim_running(v->model, sd->domid);
	if (v->ngrant < 4096)
		v->grant_log[v->ngrant++] = v->now * 16 + sd->domid;
	if (!v->check_cosched)
		return;
	bool me = vsnap_running(v, sd->domid);
	for (int i = 0; i < NDOM; i++) {
		struct vdom *o = &v->d[i];
		if (&o->sd == sd || !o->sd.ready)
			continue;
		bool other = vsnap_running(v, o->sd.domid);
		if (other && !me)
			fail_msg("cosched granted domain %u (off-CPU) while domain %u (on-CPU) was ready",
				 sd->domid, o->sd.domid);
		v->contested += !other && me;
	}
}

/* The patch's view of the model's schedule: per PCPU, its running unit and
 * run-queue head; every domain's weight and cap in its slot. */
static void mirror(struct vsim *v)
{
	static struct xgpu_hyp_snapshot ms;
	xgpu_hyp_sim.refresh(v->model, v->now, &ms);
	if (!v->mirror)
		return;
	unsigned np = v->w.hdr->npcpus;
	struct xgpu_schedexp_pcpu p[8];
	assert_true(np <= 8);
	for (unsigned i = 0; i < np; i++)
		p[i] = (struct xgpu_schedexp_pcpu){
		    .pcpu = i, .cur = unit(XGPU_SCHEDEXP_DOMID_IDLE, 0, 0), .slice_start_ns = v->now};
	for (unsigned i = 0; i < ms.n; i++) {
		const struct xgpu_hyp_entry *e = &ms.e[i];
		assert_true(e->pcpu < np);
		struct xgpu_schedexp_unit u = unit((uint16_t)e->domid, (uint16_t)e->vcpu, e->credit);
		if (e->running)
			p[e->pcpu].cur = u;
		else if (p[e->pcpu].nrunq < XGPU_SCHEDEXP_RUNQ)
			p[e->pcpu].runq[p[e->pcpu].nrunq++] = u;
	}
	for (unsigned i = 0; i < np; i++)
		w_set_pcpu(&v->w, i, &p[i]);
	for (uint32_t id = 1; id <= NDOM; id++) {
		uint32_t wt, cap;
		if (xgpu_hyp_sim.weight(v->model, id, &wt, &cap) == 0)
			w_set_dom(&v->w, (uint16_t)id, wt, cap);
	}
}

static struct vsim *vsim_new(const char *policy, const char *model_args, unsigned npcpus, bool over_export)
{
	struct vsim *v = calloc(1, sizeof *v);
	assert_non_null(v);
	cur_vsim = v;
	char err[256];
	assert_int_equal(xgpu_hyp_sim.open(model_args, &v->model, err, sizeof err), 0);
	v->mirror = v->over_export = over_export;
	if (over_export) {
		w_init(&v->w, npcpus, 16);
		v->ops = &xgpu_hyp_xenpatch;
		v->hyp = open_src(&v->w);
	} else {
		v->ops = &xgpu_hyp_sim;
		v->hyp = v->model;
	}
	const struct xgpu_policy_ops *pol = xgpu_policy_find(policy);
	assert_non_null(pol);
	assert_int_equal(xgpu_sched_init(&v->s, pol, TICK_NS, v->ops, v->hyp, "test"), 0);
	/* The hypervisor knows the domains (and exports them) before xgpud
	 * adds them. */
	if (over_export) {
		for (uint32_t id = 1; id <= NDOM; id++)
			xgpu_hyp_sim.track(v->model, id);
		mirror(v);
	}
	for (int i = 0; i < NDOM; i++) {
		struct vdom *d = &v->d[i];
		d->sd.domid = (uint32_t)i + 1;
		d->sd.name = "vdom";
		d->sd.wake = v_wake;
		d->sd.credit = 256;
		xgpu_sched_add(&v->s, &d->sd, 0);
	}
	return v;
}

static void vsim_run(struct vsim *v, uint64_t until)
{
	uint64_t deadline = 0;
	while (v->now < until) {
		mirror(v);
		for (int i = 0; i < NDOM; i++) {
			struct vdom *d = &v->d[i];
			if (d->inflight && d->done_at <= v->now) {
				d->inflight = false;
				xgpu_slot_set_inflight(&d->sd.own_report, false);
				if (!xgpu_sched_may_issue(&d->sd))
					xgpu_sched_drained(&v->s, &d->sd, v->now);
				xgpu_sched_charge(&v->s, &d->sd, 1000000);
			}
			if (d->inflight)
				continue;
			if (!xgpu_sched_may_issue(&d->sd)) {
				xgpu_sched_request(&v->s, &d->sd, v->now);
				continue;
			}
			uint64_t start = v->now > v->device_free_at ? v->now : v->device_free_at;
			d->done_at = start + 1000000;
			v->device_free_at = d->done_at;
			d->inflight = true;
			xgpu_slot_set_inflight(&d->sd.own_report, true);
			xgpu_slot_set_context(&d->sd.own_report, true);
		}
		if (v->s.kicked || v->now >= deadline)
			deadline = xgpu_sched_run(&v->s, v->now);
		v->now += STEP_NS;
	}
}

static void vsim_free(struct vsim *v)
{
	for (int i = 0; i < NDOM; i++)
		xgpu_sched_remove(&v->s, &v->d[i].sd, v->now);
	xgpu_sched_fini(&v->s);
	if (v->over_export) {
		xgpu_hyp_xenpatch.close(v->hyp);
		w_free(&v->w);
	}
	xgpu_hyp_sim.close(v->model);
	free(v);
}

/* augc and cosched over the export make exactly the decisions they make over
 * the `sim` source whose schedule the export carries: they run unchanged. */
static void policies_same_over_export_as_over_sim(void **state)
{
	(void)state;
	const char *policies[] = {"augc", "cosched", "xc"};
	const char *model = "pcpus=2,duty.1=50,duty.2=70,duty.3=30,duty.4=60,weight.2=512";
	for (unsigned p = 0; p < 3; p++) {
		struct vsim *a = vsim_new(policies[p], model, 2, false);
		vsim_run(a, 2 * SEC);
		struct vsim *b = vsim_new(policies[p], model, 2, true);
		vsim_run(b, 2 * SEC);
		assert_true(a->ngrant > 100);
		assert_int_equal(a->ngrant, b->ngrant);
		for (unsigned i = 0; i < a->ngrant; i++)
			if (a->grant_log[i] != b->grant_log[i])
				fail_msg("%s: grant %u differs over the export", policies[p], i);
		for (int i = 0; i < NDOM; i++)
			assert_int_equal(atomic_load(&a->d[i].sd.grants), atomic_load(&b->d[i].sd.grants));
		cur_vsim = a;
		vsim_free(a);
		cur_vsim = b;
		vsim_free(b);
	}
}

static void cosched_prefers_on_cpu_over_export(void **state)
{
	(void)state;
	struct vsim *v = vsim_new("cosched", "pcpus=1,duty.1=60,duty.2=60,duty.3=60,duty.4=60", 1, true);
	v->check_cosched = true;
	vsim_run(v, 5 * SEC);
	assert_true(v->grants_total > 100);
	assert_true(v->contested > 50);
	for (int i = 0; i < NDOM; i++)
		assert_true(atomic_load(&v->d[i].sd.grants) > 0);
	vsim_free(v);
}

/* augc over the export follows the CPU side (running and queued units carry
 * credit) more than accc, which ignores it. */
static void augc_uses_upcoming_over_export(void **state)
{
	(void)state;
	const char *model = "pcpus=1,duty.1=50,duty.2=50,duty.3=50,duty.4=50";
	double frac[2];
	const char *policies[] = {"accc", "augc"};
	for (int p = 0; p < 2; p++) {
		struct vsim *v = vsim_new(policies[p], model, 1, true);
		vsim_run(v, 5 * SEC);
		frac[p] = (double)v->grants_running / (double)v->grants_total;
		for (int i = 0; i < NDOM; i++)
			assert_true(atomic_load(&v->d[i].sd.grants) > 10);
		vsim_free(v);
	}
	print_message("grants to an on-CPU domain: accc %.3f, augc %.3f\n", frac[0], frac[1]);
	if (frac[1] < frac[0] + 0.05)
		fail_msg("augc granted on-CPU domains %.3f of the time, accc %.3f", frac[1], frac[0]);

	/* Upcoming entries alone move augc: a domain queued next with credit
	 * beats an equal one the export does not mention. */
	struct vsim *v = vsim_new("augc", model, 1, true);
	v->mirror = false; /* the test sets the pages itself */
	struct xgpu_schedexp_pcpu pc = {.pcpu = 0, .cur = unit(XGPU_SCHEDEXP_DOMID_IDLE, 0, 0), .nrunq = 1};
	pc.runq[0] = unit(3, 0, 200);
	w_set_pcpu(&v->w, 0, &pc);
	for (int i = 0; i < NDOM; i++)
		xgpu_sched_request(&v->s, &v->d[i].sd, 0);
	v->ngrant = 0;
	xgpu_sched_run(&v->s, 0);
	assert_true(v->ngrant >= 1);
	assert_int_equal(v->grant_log[0] % 16, 3);
	vsim_free(v);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(reads_fresh_export),
	    cmocka_unit_test(consistent_under_concurrent_writer),
	    cmocka_unit_test(seq_moving_between_reads_is_torn),
	    cmocka_unit_test(stuck_writer_leaves_record_stale),
	    cmocka_unit_test(sequence_wraps),
	    cmocka_unit_test(bad_headers_refused),
	    cmocka_unit_test(bad_records_refused),
	    cmocka_unit_test(absent_export_falls_back_to_xen),
	    cmocka_unit_test(source_entries_weights_seq),
	    cmocka_unit_test(source_snapshot_bounded),
	    cmocka_unit_test(policies_same_over_export_as_over_sim),
	    cmocka_unit_test(cosched_prefers_on_cpu_over_export),
	    cmocka_unit_test(augc_uses_upcoming_over_export),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
