/* SPDX-License-Identifier: Apache-2.0 */
/* test_hypsrc_xen.c - the `xen` hypervisor schedule source driven by a fake
 * hypervisor behind its xenctl ops: weights and caps (credit, credit2, a
 * scheduler with neither), which VCPUs run where, untracked and offline
 * VCPUs left out, seq moving only when the view does, a domain vanishing,
 * dying and coming back, failing calls (one VCPU, one weight, the whole
 * hypervisor), the snapshot and per-domain VCPU bounds, arguments; and the
 * real libxenctrl open failing with a message naming the privcmd nodes when
 * there is no hypervisor. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "schedsrc/hypsrc.h"
#include "schedsrc/hypsrc_xen.h"
#include "util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MS 1000000ull
#define FAKE_DOMS 8
#define FAKE_VCPUS 200

struct fake_dom {
	uint32_t domid;
	bool exists, dying;
	uint32_t weight, cap;
	uint32_t max_vcpu_id; /* UINT32_MAX: none */
	bool online[FAKE_VCPUS], running[FAKE_VCPUS];
	uint32_t pcpu[FAKE_VCPUS];
	int fail_vcpu; /* this VCPU's call fails with EIO; -1 none */
	int fail_weight_errno;
};

static struct fake {
	int sched;
	int sched_id_errno;
	int domain_errno; /* every domain call fails with it (0: none) */
	bool open_fails;
	bool opened, closed;
	unsigned vcpu_calls, last_sched_asked;
	struct fake_dom d[FAKE_DOMS];
} F;

static struct fake_dom *fdom(uint32_t domid)
{
	for (unsigned i = 0; i < FAKE_DOMS; i++)
		if (F.d[i].exists && F.d[i].domid == domid)
			return &F.d[i];
	return NULL;
}

static void *f_open(char *err, size_t errlen)
{
	if (F.open_fails) {
		snprintf(err, errlen, "fake: no hypervisor here");
		return NULL;
	}
	F.opened = true;
	return &F;
}

static void f_close(void *x)
{
	assert_ptr_equal(x, &F);
	F.closed = true;
}

static int f_sched_id(void *x, int *id)
{
	if (F.sched_id_errno) {
		errno = F.sched_id_errno;
		return -1;
	}
	*id = F.sched;
	return 0;
}

static int f_sched_get(void *x, int sched, uint32_t domid, uint32_t *weight, uint32_t *cap)
{
	F.last_sched_asked = (unsigned)sched;
	struct fake_dom *d = fdom(domid);
	if (!d) {
		errno = ESRCH;
		return -1;
	}
	if (d->fail_weight_errno) {
		errno = d->fail_weight_errno;
		return -1;
	}
	*weight = d->weight;
	*cap = d->cap;
	return 0;
}

static int f_domain(void *x, uint32_t domid, bool *dying, uint32_t *max_vcpu_id)
{
	if (F.domain_errno) {
		errno = F.domain_errno;
		return -1;
	}
	struct fake_dom *d = fdom(domid);
	if (!d) {
		errno = ESRCH;
		return -1;
	}
	*dying = d->dying;
	*max_vcpu_id = d->max_vcpu_id;
	return 0;
}

static int f_vcpu(void *x, uint32_t domid, uint32_t vcpu, bool *online, bool *running, uint32_t *pcpu)
{
	F.vcpu_calls++;
	struct fake_dom *d = fdom(domid);
	if (!d || (d->max_vcpu_id != UINT32_MAX && vcpu > d->max_vcpu_id)) {
		errno = d ? EINVAL : ESRCH;
		return -1;
	}
	if (d->fail_vcpu == (int)vcpu || vcpu >= FAKE_VCPUS) {
		errno = EIO;
		return -1;
	}
	*online = d->online[vcpu];
	*running = d->running[vcpu];
	*pcpu = d->pcpu[vcpu];
	return 0;
}

static const struct xgpu_xenctl_ops fake_ops = {
    .open = f_open,
    .close = f_close,
    .sched_id = f_sched_id,
    .sched_get = f_sched_get,
    .domain = f_domain,
    .vcpu = f_vcpu,
};

/* A domain with nvcpus online VCPUs, none running. */
static struct fake_dom *add_dom(unsigned slot, uint32_t domid, uint32_t weight, uint32_t cap, unsigned nvcpus)
{
	struct fake_dom *d = &F.d[slot];
	memset(d, 0, sizeof *d);
	d->domid = domid;
	d->exists = true;
	d->weight = weight;
	d->cap = cap;
	d->max_vcpu_id = nvcpus ? nvcpus - 1 : UINT32_MAX;
	d->fail_vcpu = -1;
	for (unsigned v = 0; v < nvcpus && v < FAKE_VCPUS; v++)
		d->online[v] = true;
	return d;
}

static void run_on(struct fake_dom *d, uint32_t vcpu, uint32_t pcpu)
{
	d->running[vcpu] = true;
	d->pcpu[vcpu] = pcpu;
}

static int reset(void **state)
{
	memset(&F, 0, sizeof F);
	F.sched = XGPU_XEN_SCHED_CREDIT;
	return 0;
}

static struct xgpu_hyp *open_fake(void)
{
	struct xgpu_hyp *h = NULL;
	char err[256] = "";
	int rc = xgpu_hyp_xen_open_with(&fake_ops, NULL, &h, err, sizeof err);
	if (rc)
		print_error("open failed: %s\n", err);
	assert_int_equal(rc, 0);
	assert_non_null(h);
	return h;
}

static struct xgpu_hyp_snapshot snap;

static void refresh_ok(struct xgpu_hyp *h, uint64_t t)
{
	memset(&snap, 0xa5, sizeof snap);
	assert_int_equal(xgpu_hyp_xen.refresh(h, t, &snap), 0);
	assert_true(snap.n <= XGPU_HYP_MAX_ENTRIES);
	assert_true(snap.now_ns == t);
}

static void expect_entry(unsigned i, uint32_t domid, uint32_t vcpu, uint32_t pcpu)
{
	assert_true(i < snap.n);
	assert_int_equal(snap.e[i].domid, domid);
	assert_int_equal(snap.e[i].vcpu, vcpu);
	assert_int_equal(snap.e[i].pcpu, pcpu);
	assert_int_equal(snap.e[i].credit, 0);
	assert_true(snap.e[i].running);
}

static void expect_weight(struct xgpu_hyp *h, uint32_t domid, uint32_t weight, uint32_t cap)
{
	uint32_t w = 0xdead, c = 0xdead;
	assert_int_equal(xgpu_hyp_xen.weight(h, domid, &w, &c), 0);
	assert_int_equal(w, weight);
	assert_int_equal(c, cap);
}

static void expect_no_weight(struct xgpu_hyp *h, uint32_t domid)
{
	uint32_t w, c;
	assert_int_equal(xgpu_hyp_xen.weight(h, domid, &w, &c), -1);
}

/* ---- the view ------------------------------------------------------------------ */

static void weights_caps_and_running_vcpus(void **state)
{
	struct fake_dom *a = add_dom(0, 3, 512, 0, 4);
	struct fake_dom *b = add_dom(1, 7, 128, 50, 1);
	struct fake_dom *c = add_dom(2, 9, 1024, 0, 2); /* not tracked */
	run_on(a, 0, 2);
	run_on(a, 3, 0);
	a->online[2] = false;
	a->running[2] = true; /* offline: must not count, whatever the flag says */
	run_on(b, 0, 1);
	run_on(c, 0, 3);
	run_on(c, 1, 4);

	struct xgpu_hyp *h = open_fake();
	assert_true(F.opened);
	xgpu_hyp_xen.track(h, 7);
	xgpu_hyp_xen.track(h, 3);
	xgpu_hyp_xen.track(h, 3);
	/* Before any refresh nothing is known. */
	expect_no_weight(h, 3);
	refresh_ok(h, 10 * MS);
	assert_int_equal(snap.n, 3);
	expect_entry(0, 3, 0, 2);
	expect_entry(1, 3, 3, 0);
	expect_entry(2, 7, 0, 1);
	assert_int_equal(F.last_sched_asked, XGPU_XEN_SCHED_CREDIT);
	expect_weight(h, 3, 512, 0);
	expect_weight(h, 7, 128, 50);
	expect_no_weight(h, 9);
	expect_no_weight(h, 4);
	/* NULL outputs are allowed. */
	assert_int_equal(xgpu_hyp_xen.weight(h, 3, NULL, NULL), 0);

	/* Untracked: gone from the view at the next refresh. */
	xgpu_hyp_xen.untrack(h, 3);
	xgpu_hyp_xen.untrack(h, 42);
	refresh_ok(h, 20 * MS);
	assert_int_equal(snap.n, 1);
	expect_entry(0, 7, 0, 1);
	expect_no_weight(h, 3);
	xgpu_hyp_xen.set_pids(h, 7, NULL, 0); /* meaningless here, harmless */
	xgpu_hyp_xen.close(h);
	assert_true(F.closed);
}

static void seq_moves_only_with_the_view(void **state)
{
	struct fake_dom *a = add_dom(0, 1, 256, 0, 2);
	run_on(a, 1, 5);
	struct xgpu_hyp *h = open_fake();
	xgpu_hyp_xen.track(h, 1);
	refresh_ok(h, 0);
	uint64_t s0 = snap.seq;
	refresh_ok(h, 1 * MS);
	assert_true(snap.seq == s0);

	/* The VCPU moves to another PCPU. */
	a->pcpu[1] = 6;
	refresh_ok(h, 2 * MS);
	assert_true(snap.seq > s0);
	expect_entry(0, 1, 1, 6);
	uint64_t s1 = snap.seq;

	/* It stops running. */
	a->running[1] = false;
	refresh_ok(h, 3 * MS);
	assert_int_equal(snap.n, 0);
	assert_true(snap.seq > s1);
	uint64_t s2 = snap.seq;

	/* xl sched-credit -d 1 -w 1000 -c 25: seen at the next refresh. */
	a->weight = 1000;
	a->cap = 25;
	refresh_ok(h, 4 * MS);
	expect_weight(h, 1, 1000, 25);
	assert_true(snap.seq > s2);
	uint64_t s3 = snap.seq;
	refresh_ok(h, 5 * MS);
	assert_true(snap.seq == s3);
	xgpu_hyp_xen.close(h);
}

static void domain_vanishes_dies_and_returns(void **state)
{
	struct fake_dom *a = add_dom(0, 4, 300, 10, 1);
	struct fake_dom *b = add_dom(1, 5, 200, 0, 1);
	run_on(a, 0, 0);
	run_on(b, 0, 1);
	struct xgpu_hyp *h = open_fake();
	xgpu_hyp_xen.track(h, 4);
	xgpu_hyp_xen.track(h, 5);
	refresh_ok(h, 0);
	assert_int_equal(snap.n, 2);

	/* Domain 4 is destroyed: no entries, no weight; the other carries on. */
	a->exists = false;
	refresh_ok(h, 1 * MS);
	assert_int_equal(snap.n, 1);
	expect_entry(0, 5, 0, 1);
	expect_no_weight(h, 4);
	expect_weight(h, 5, 200, 0);
	uint64_t s = snap.seq;
	refresh_ok(h, 2 * MS);
	assert_true(snap.seq == s);

	/* A domain with that id again (Xen reuses ids only much later, but
	 * it may): picked up with its own weight. */
	a->exists = true;
	a->weight = 700;
	refresh_ok(h, 3 * MS);
	assert_int_equal(snap.n, 2);
	expect_entry(0, 4, 0, 0);
	expect_weight(h, 4, 700, 10);

	/* Dying counts as gone even while Xen still lists it. */
	b->dying = true;
	refresh_ok(h, 4 * MS);
	assert_int_equal(snap.n, 1);
	expect_entry(0, 4, 0, 0);
	expect_no_weight(h, 5);

	/* A domain with no VCPUs at all is present with a weight and no entries. */
	b->dying = false;
	b->max_vcpu_id = UINT32_MAX;
	refresh_ok(h, 5 * MS);
	assert_int_equal(snap.n, 1);
	expect_weight(h, 5, 200, 0);
	xgpu_hyp_xen.close(h);
}

static void failing_calls(void **state)
{
	struct fake_dom *a = add_dom(0, 2, 400, 0, 3);
	struct fake_dom *b = add_dom(1, 6, 100, 0, 1);
	run_on(a, 0, 0);
	run_on(a, 1, 1);
	run_on(a, 2, 2);
	run_on(b, 0, 3);
	struct xgpu_hyp *h = open_fake();
	xgpu_hyp_xen.track(h, 2);
	xgpu_hyp_xen.track(h, 6);
	refresh_ok(h, 0);
	assert_int_equal(snap.n, 4);

	/* One VCPU's call fails: that VCPU is skipped, the rest stand. */
	a->fail_vcpu = 1;
	refresh_ok(h, 1 * MS);
	assert_int_equal(snap.n, 3);
	expect_entry(0, 2, 0, 0);
	expect_entry(1, 2, 2, 2);
	expect_entry(2, 6, 0, 3);
	a->fail_vcpu = -1;

	/* The weight call fails: the last weight stays; a domain never read
	 * has none. */
	a->fail_weight_errno = EPERM;
	a->weight = 9999;
	refresh_ok(h, 2 * MS);
	expect_weight(h, 2, 400, 0);
	assert_int_equal(snap.n, 4);
	xgpu_hyp_xen.track(h, 8);
	add_dom(2, 8, 50, 0, 1)->fail_weight_errno = EACCES;
	refresh_ok(h, 3 * MS);
	expect_no_weight(h, 8);
	a->fail_weight_errno = 0;
	refresh_ok(h, 4 * MS);
	expect_weight(h, 2, 9999, 0);

	/* The hypervisor answers for nobody: refresh fails and says why, so
	 * the scheduler keeps its last schedule. */
	F.domain_errno = EACCES;
	errno = 0;
	assert_int_equal(xgpu_hyp_xen.refresh(h, 5 * MS, &snap), -1);
	assert_int_equal(errno, EACCES);
	/* ... and comes back. */
	F.domain_errno = 0;
	refresh_ok(h, 6 * MS);
	assert_int_equal(snap.n, 4);

	/* Nothing tracked is not a failure. */
	xgpu_hyp_xen.untrack(h, 2);
	xgpu_hyp_xen.untrack(h, 6);
	xgpu_hyp_xen.untrack(h, 8);
	F.domain_errno = EIO;
	refresh_ok(h, 7 * MS);
	assert_int_equal(snap.n, 0);
	xgpu_hyp_xen.close(h);
}

static void credit2_and_other_schedulers(void **state)
{
	struct fake_dom *a = add_dom(0, 1, 512, 30, 1);
	run_on(a, 0, 0);
	F.sched = XGPU_XEN_SCHED_CREDIT2;
	struct xgpu_hyp *h = open_fake();
	xgpu_hyp_xen.track(h, 1);
	refresh_ok(h, 0);
	assert_int_equal(F.last_sched_asked, XGPU_XEN_SCHED_CREDIT2);
	expect_weight(h, 1, 512, 30);
	xgpu_hyp_xen.close(h);

	/* RTDS (8) has no weights: running VCPUs still come through. */
	F.sched = 8;
	F.last_sched_asked = 0;
	h = open_fake();
	xgpu_hyp_xen.track(h, 1);
	refresh_ok(h, 0);
	assert_int_equal(F.last_sched_asked, 0);
	expect_no_weight(h, 1);
	assert_int_equal(snap.n, 1);
	expect_entry(0, 1, 0, 0);
	xgpu_hyp_xen.close(h);
}

static void bounded_by_entries_and_vcpus(void **state)
{
	/* Three domains with 200 running VCPUs each: 600 > the snapshot. */
	for (unsigned i = 0; i < 3; i++) {
		struct fake_dom *d = add_dom(i, 10 + i, 256, 0, FAKE_VCPUS);
		for (uint32_t v = 0; v < FAKE_VCPUS; v++)
			run_on(d, v, v);
	}
	struct xgpu_hyp *h = open_fake();
	for (unsigned i = 0; i < 3; i++)
		xgpu_hyp_xen.track(h, 10 + i);
	refresh_ok(h, 0);
	assert_int_equal(snap.n, XGPU_HYP_MAX_ENTRIES);
	for (unsigned i = 0; i < snap.n; i++)
		assert_true(snap.e[i].domid == 10 || snap.e[i].domid == 11);
	/* Every weight is still read, even past the full snapshot. */
	expect_weight(h, 12, 256, 0);
	xgpu_hyp_xen.close(h);

	/* A domain claiming 4 billion VCPUs costs a bounded number of calls. */
	reset(NULL);
	add_dom(0, 1, 256, 0, 1)->max_vcpu_id = UINT32_MAX - 1;
	h = open_fake();
	xgpu_hyp_xen.track(h, 1);
	refresh_ok(h, 0);
	assert_true(F.vcpu_calls <= 512);
	assert_true(F.vcpu_calls >= FAKE_VCPUS);
	xgpu_hyp_xen.close(h);
}

static void open_errors(void **state)
{
	struct xgpu_hyp *h = NULL;
	char err[256] = "";
	assert_int_equal(xgpu_hyp_xen_open_with(&fake_ops, "pcpus=2", &h, err, sizeof err), -1);
	assert_string_equal(err, "xen: takes no arguments (got 'pcpus=2')");
	assert_false(F.opened);
	/* "xen:" with nothing after it is fine. */
	assert_int_equal(xgpu_hyp_xen_open_with(&fake_ops, "", &h, err, sizeof err), 0);
	xgpu_hyp_xen.close(h);

	F.open_fails = true;
	assert_int_equal(xgpu_hyp_xen_open_with(&fake_ops, NULL, &h, err, sizeof err), -1);
	assert_string_equal(err, "fake: no hypervisor here");

	F.open_fails = false;
	F.closed = false;
	F.sched_id_errno = EPERM;
	assert_int_equal(xgpu_hyp_xen_open_with(&fake_ops, NULL, &h, err, sizeof err), -1);
	assert_non_null(strstr(err, "xc_sched_id"));
	assert_non_null(strstr(err, strerror(EPERM)));
	assert_true(F.closed);
}

/* ---- the real one, where there is no Xen ---------------------------------------- */

static void real_open_names_privcmd(void **state)
{
	struct stat st;
	if (stat("/dev/xen", &st) == 0 || stat("/proc/xen/privcmd", &st) == 0) {
		print_message("[ SKIPPED  ] this host has Xen's privcmd: the no-hypervisor message cannot be "
			      "checked\n");
		skip();
	}
	const char *args = "x";
	char err[512] = "";
	const struct xgpu_hyp_ops *ops = xgpu_hyp_find("xen", &args, err, sizeof err);
	assert_ptr_equal(ops, &xgpu_hyp_xen);
	struct xgpu_hyp *h = NULL;
	/* libxencall prints "Could not obtain handle on privileged command
	 * interface" to stderr by default; xgpud's message is the one to read. */
	char tmpl[] = "/tmp/test_hypsrc_xen.stderr.XXXXXX";
	int fd = mkstemp(tmpl);
	assert_true(fd >= 0);
	unlink(tmpl);
	fflush(stderr);
	int saved = dup(STDERR_FILENO);
	assert_int_equal(dup2(fd, STDERR_FILENO), STDERR_FILENO);
	int rc = ops->open(args, &h, err, sizeof err);
	fflush(stderr);
	assert_int_equal(dup2(saved, STDERR_FILENO), STDERR_FILENO);
	close(saved);
	assert_int_equal(rc, -1);
	assert_int_equal(lseek(fd, 0, SEEK_END), 0);
	close(fd);
	print_message("%s\n", err);
	assert_non_null(strstr(err, "/dev/xen/privcmd"));
	assert_non_null(strstr(err, "/proc/xen/privcmd"));
	assert_non_null(strstr(err, "dom0"));
	assert_null(h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup(weights_caps_and_running_vcpus, reset),
	    cmocka_unit_test_setup(seq_moves_only_with_the_view, reset),
	    cmocka_unit_test_setup(domain_vanishes_dies_and_returns, reset),
	    cmocka_unit_test_setup(failing_calls, reset),
	    cmocka_unit_test_setup(credit2_and_other_schedulers, reset),
	    cmocka_unit_test_setup(bounded_by_entries_and_vcpus, reset),
	    cmocka_unit_test_setup(open_errors, reset),
	    cmocka_unit_test(real_open_names_privcmd),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
