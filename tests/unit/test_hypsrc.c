/* SPDX-License-Identifier: Apache-2.0 */
/* test_hypsrc.c - hypervisor schedule sources: the registry's lookups and
 * messages; the simulated credit scheduler's determinism, weight-
 * proportional shares, caps, duty cycles, snapshot bounds, credit burn,
 * cheap time jumps and argument checking; the local source finding a busy
 * child process's thread running, surviving dead pids, and reading weights
 * from cpu.weight or the nice level. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "schedsrc/hypsrc.h"
#include "schedsrc/hypsrc_xenpatch.h"
#include "schedsrc/hypsrc_sim.h"
#include "schedsrc/oncpu.h"
#include "util.h"

#include <errno.h>
#include <linux/perf_event.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MS 1000000ull

static struct xgpu_hyp *open_ok(const struct xgpu_hyp_ops *ops, const char *args)
{
	struct xgpu_hyp *h = NULL;
	char err[256] = "";
	int rc = ops->open(args, &h, err, sizeof err);
	if (rc)
		print_error("open(%s) failed: %s\n", args ? args : "NULL", err);
	assert_int_equal(rc, 0);
	assert_non_null(h);
	return h;
}

/* ---- registry ------------------------------------------------------------ */

static void registry_finds_sources_and_explains_misses(void **state)
{
	char err[256];
	const char *args = "untouched";
	assert_string_equal(xgpu_hyp_names(), "sim, local, xen, xenpatch, xentrace");

	assert_ptr_equal(xgpu_hyp_find("sim", &args, err, sizeof err), &xgpu_hyp_sim);
	assert_null(args);
	assert_ptr_equal(xgpu_hyp_find("sim:pcpus=4,weight.1=512", &args, err, sizeof err), &xgpu_hyp_sim);
	assert_string_equal(args, "pcpus=4,weight.1=512");
	assert_ptr_equal(xgpu_hyp_find("local", &args, err, sizeof err), &xgpu_hyp_local);
	assert_null(args);
	assert_ptr_equal(xgpu_hyp_find("local:", &args, err, sizeof err), &xgpu_hyp_local);
	assert_string_equal(args, "");
	assert_string_equal(xgpu_hyp_sim.name, "sim");
	assert_string_equal(xgpu_hyp_local.name, "local");

	assert_ptr_equal(xgpu_hyp_find("xen", &args, err, sizeof err), &xgpu_hyp_xen);
	assert_null(args);
	assert_string_equal(xgpu_hyp_xen.name, "xen");

	assert_ptr_equal(xgpu_hyp_find("xenpatch", &args, err, sizeof err), &xgpu_hyp_xenpatch);
	assert_ptr_equal(xgpu_hyp_find("xentrace:pages=8", &args, err, sizeof err), &xgpu_hyp_xentrace);
	assert_string_equal(args, "pages=8");

	/* Names match whole, not by prefix. */
	const char *bad[] = {"bogus", "si", "simx", "simulator:pcpus=1", "Sim", ":sim"};
	for (size_t i = 0; i < XGPU_ARRAY_SIZE(bad); i++) {
		err[0] = '\0';
		assert_null(xgpu_hyp_find(bad[i], &args, err, sizeof err));
		assert_non_null(strstr(err, bad[i]));
		assert_non_null(strstr(err, "available: sim, local, xen"));
		assert_null(strstr(err, "not available"));
	}
	assert_null(xgpu_hyp_find("", &args, err, sizeof err));
	assert_non_null(strstr(err, "sim, local"));
	assert_null(xgpu_hyp_find(NULL, NULL, err, sizeof err));
}

/* ---- sim ------------------------------------------------------------------- */

static void sim_same_inputs_same_schedule(void **state)
{
	const char *args = "pcpus=2,weight.1=512,duty.2=60,vcpus.3=2,cap.3=50,duty.4=35";
	struct xgpu_hyp *a = open_ok(&xgpu_hyp_sim, args);
	struct xgpu_hyp *b = open_ok(&xgpu_hyp_sim, args);
	struct xgpu_hyp *c = open_ok(&xgpu_hyp_sim, args);
	/* Tracking order must not matter either. */
	for (uint32_t d = 1; d <= 4; d++) {
		xgpu_hyp_sim.track(a, d);
		xgpu_hyp_sim.track(b, 5 - d);
		xgpu_hyp_sim.track(c, d);
	}
	static struct xgpu_hyp_snapshot sa, sb, sc;
	unsigned seen[5] = {0}, seq_changes = 0;
	uint64_t prev_seq = 0;
	for (uint64_t t = 0; t <= 10000; t++) {
		assert_int_equal(xgpu_hyp_sim.refresh(a, t * MS, &sa), 0);
		assert_int_equal(xgpu_hyp_sim.refresh(b, t * MS, &sb), 0);
		assert_int_equal(sa.seq, sb.seq);
		assert_int_equal(sa.n, sb.n);
		assert_int_equal(sa.now_ns, t * MS);
		for (unsigned i = 0; i < sa.n; i++) {
			assert_int_equal(sa.e[i].domid, sb.e[i].domid);
			assert_int_equal(sa.e[i].vcpu, sb.e[i].vcpu);
			assert_int_equal(sa.e[i].pcpu, sb.e[i].pcpu);
			assert_int_equal(sa.e[i].credit, sb.e[i].credit);
			assert_int_equal(sa.e[i].running, sb.e[i].running);
			if (sa.e[i].running)
				seen[sa.e[i].domid]++;
		}
		seq_changes += sa.seq != prev_seq;
		prev_seq = sa.seq;
		/* Refreshing less often gives the same schedule at the same times. */
		if (t % 7 == 0) {
			assert_int_equal(xgpu_hyp_sim.refresh(c, t * MS, &sc), 0);
			assert_int_equal(sc.n, sa.n);
			for (unsigned i = 0; i < sa.n; i++) {
				assert_int_equal(sc.e[i].domid, sa.e[i].domid);
				assert_int_equal(sc.e[i].vcpu, sa.e[i].vcpu);
				assert_int_equal(sc.e[i].credit, sa.e[i].credit);
				assert_int_equal(sc.e[i].running, sa.e[i].running);
			}
		}
	}
	/* A real schedule: every domain ran and the view kept changing. */
	for (uint32_t d = 1; d <= 4; d++)
		assert_true(seen[d] > 100);
	assert_true(seq_changes > 100);
	xgpu_hyp_sim.close(a);
	xgpu_hyp_sim.close(b);
	xgpu_hyp_sim.close(c);
}

/* Milliseconds each domain held a PCPU over [from, to) ms, sampled every ms. */
static void run_time(struct xgpu_hyp *h, uint64_t from, uint64_t to, const uint32_t *doms, unsigned n,
		     uint64_t *ms)
{
	static struct xgpu_hyp_snapshot s;
	memset(ms, 0, n * sizeof *ms);
	for (uint64_t t = from; t < to; t++) {
		assert_int_equal(xgpu_hyp_sim.refresh(h, t * MS, &s), 0);
		for (unsigned i = 0; i < n; i++)
			ms[i] += xgpu_hyp_sim_running(h, doms[i]);
	}
}

static void sim_shares_follow_weights(void **state)
{
	struct xgpu_hyp *h = open_ok(&xgpu_hyp_sim, "pcpus=1,weight.1=512,weight.2=256");
	const uint32_t doms[] = {1, 2};
	uint64_t ms[2];
	xgpu_hyp_sim.track(h, 1);
	xgpu_hyp_sim.track(h, 2);
	run_time(h, 0, 30000, doms, 2, ms);
	double ratio = (double)ms[0] / (double)ms[1];
	print_message("weights 512:256 on 1 PCPU: %llu ms vs %llu ms (%.3f)\n", (unsigned long long)ms[0],
		      (unsigned long long)ms[1], ratio);
	assert_true(ratio > 2.0 * 0.97 && ratio < 2.0 * 1.03);
	/* Work-conserving: the PCPU is never idle while both want it. */
	assert_int_equal(ms[0] + ms[1], 30000);

	/* A weight changed at run time takes over within a few periods. */
	xgpu_hyp_sim_set_weight(h, 2, 768, 0);
	run_time(h, 30000, 60000, doms, 2, ms);
	ratio = (double)ms[1] / (double)ms[0];
	assert_true(ratio > 1.5 * 0.97 && ratio < 1.5 * 1.03);
	xgpu_hyp_sim.close(h);
}

static void sim_caps_and_duty_cycles_limit_running(void **state)
{
	/* Alone on a PCPU, a 50 % cap leaves it idle half the time. */
	struct xgpu_hyp *h = open_ok(&xgpu_hyp_sim, "pcpus=1,cap.1=50");
	const uint32_t one[] = {1};
	uint64_t ms[3];
	xgpu_hyp_sim.track(h, 1);
	run_time(h, 0, 3000, one, 1, ms);
	assert_true(ms[0] > 1350 && ms[0] < 1650);
	xgpu_hyp_sim.close(h);

	/* duty=0 never runs; duty=30 runs at most 30 % even with PCPUs to spare. */
	h = open_ok(&xgpu_hyp_sim, "pcpus=2,duty.5=0,duty.6=30");
	const uint32_t doms[] = {5, 6, 7};
	xgpu_hyp_sim.track(h, 5);
	xgpu_hyp_sim.track(h, 6);
	xgpu_hyp_sim.track(h, 7);
	static struct xgpu_hyp_snapshot s;
	for (uint64_t t = 0; t < 5000; t++) {
		assert_int_equal(xgpu_hyp_sim.refresh(h, t * MS, &s), 0);
		for (unsigned i = 0; i < s.n; i++)
			assert_int_not_equal(s.e[i].domid, 5);
	}
	run_time(h, 5000, 10000, doms, 3, ms);
	assert_int_equal(ms[0], 0);
	assert_int_equal(ms[1], 1500);
	assert_int_equal(ms[2], 5000);

	/* The hook switches a domain off and on. */
	xgpu_hyp_sim_set_duty(h, 7, 0);
	run_time(h, 10000, 11000, doms, 3, ms);
	assert_int_equal(ms[2], 0);
	xgpu_hyp_sim_set_duty(h, 5, 100);
	run_time(h, 11000, 12000, doms, 3, ms);
	assert_true(ms[0] > 900);
	xgpu_hyp_sim.close(h);
}

static void sim_is_work_conserving_across_pcpus(void **state)
{
	/* Domains 2 and 4 start on PCPU 0 and 3 on PCPU 1; when 3 sleeps, PCPU 1
	 * must take queued work from PCPU 0 rather than idle. */
	struct xgpu_hyp *h = open_ok(&xgpu_hyp_sim, "pcpus=2,duty.3=50");
	const uint32_t doms[] = {2, 3, 4};
	uint64_t ms[3];
	for (uint32_t i = 0; i < 3; i++)
		xgpu_hyp_sim.track(h, doms[i]);
	run_time(h, 1000, 6000, doms, 3, ms);
	assert_int_equal(ms[0] + ms[1] + ms[2], 2 * 5000);
	assert_int_equal(ms[1], 2500);
	/* The two always-runnable equal domains share the rest evenly. */
	assert_true(ms[0] > 3700 && ms[0] < 3800);
	xgpu_hyp_sim.close(h);
}

static void sim_snapshot_is_bounded_by_pcpus(void **state)
{
	struct xgpu_hyp *h = open_ok(&xgpu_hyp_sim, "pcpus=3,vcpus=4");
	for (uint32_t d = 0; d < 10; d++)
		xgpu_hyp_sim.track(h, 100 + d);
	static struct xgpu_hyp_snapshot s;
	unsigned with_next = 0;
	for (uint64_t t = 0; t < 3000; t++) {
		assert_int_equal(xgpu_hyp_sim.refresh(h, t * MS, &s), 0);
		assert_true(s.n <= 2 * 3);
		unsigned running[3] = {0}, upcoming[3] = {0};
		for (unsigned i = 0; i < s.n; i++) {
			assert_true(s.e[i].pcpu < 3);
			assert_true(s.e[i].vcpu < 4);
			assert_true(s.e[i].domid >= 100 && s.e[i].domid < 110);
			(s.e[i].running ? running : upcoming)[s.e[i].pcpu]++;
		}
		/* 40 runnable VCPUs: every PCPU busy, and (steals aside) one next in line. */
		for (unsigned p = 0; p < 3; p++) {
			assert_int_equal(running[p], 1);
			assert_true(upcoming[p] <= 1);
			with_next += upcoming[p];
		}
	}
	assert_true(with_next > 3 * 3000 * 9 / 10);
	/* Untracking removes a domain from the schedule at once. */
	for (uint32_t d = 0; d < 9; d++)
		xgpu_hyp_sim.untrack(h, 100 + d);
	assert_int_equal(xgpu_hyp_sim.refresh(h, 3000 * MS, &s), 0);
	for (unsigned i = 0; i < s.n; i++)
		assert_int_equal(s.e[i].domid, 109);
	assert_int_equal(s.n, 4); /* four VCPUs on three PCPUs: three run, one waits */
	xgpu_hyp_sim.close(h);
}

static void sim_survives_churn(void **state)
{
	/* Domains come and go and change weight, cap and load at random
	 * (fixed seed); the snapshot must stay well formed throughout. */
	struct xgpu_hyp *h = open_ok(&xgpu_hyp_sim, "pcpus=5,vcpus=3,vcpus.7=16,cap.8=120");
	bool tracked[32] = {false};
	uint32_t rng = 12345;
	static struct xgpu_hyp_snapshot s;
	for (uint64_t t = 0; t < 20000; t += 1 + rng % 5) {
		rng = rng * 1103515245u + 12345u;
		uint32_t d = (rng >> 8) % 32, op = (rng >> 16) % 16;
		if (op == 0 && !tracked[d]) {
			xgpu_hyp_sim.track(h, d);
			tracked[d] = true;
		} else if (op == 1 && tracked[d]) {
			xgpu_hyp_sim.untrack(h, d);
			tracked[d] = false;
		} else if (op == 2) {
			xgpu_hyp_sim_set_duty(h, d, (rng >> 20) % 130);
		} else if (op == 3) {
			xgpu_hyp_sim_set_weight(h, d, (rng >> 4) % 2000, (rng >> 12) % 300);
		}
		assert_int_equal(xgpu_hyp_sim.refresh(h, t * MS, &s), 0);
		assert_true(s.n <= 2 * 5);
		bool busy[5] = {false};
		for (unsigned i = 0; i < s.n; i++) {
			const struct xgpu_hyp_entry *e = &s.e[i];
			assert_true(e->domid < 32 && tracked[e->domid]);
			assert_true(e->pcpu < 5);
			assert_true(e->vcpu < (e->domid == 7 ? 16u : 3u));
			assert_true(e->credit >= -600 && e->credit <= 300);
			if (e->running) {
				assert_false(busy[e->pcpu]);
				busy[e->pcpu] = true;
				assert_true(xgpu_hyp_sim_running(h, e->domid));
			}
			/* A VCPU is in one place at a time. */
			for (unsigned j = 0; j < i; j++)
				assert_false(s.e[j].domid == e->domid && s.e[j].vcpu == e->vcpu);
		}
	}
	xgpu_hyp_sim.close(h); /* with domains still tracked: no leaks */
}

static const struct xgpu_hyp_entry *running_entry(const struct xgpu_hyp_snapshot *s, uint32_t pcpu)
{
	for (unsigned i = 0; i < s->n; i++)
		if (s->e[i].running && s->e[i].pcpu == pcpu)
			return &s->e[i];
	return NULL;
}

static void sim_running_vcpu_burns_credit(void **state)
{
	struct xgpu_hyp *h = open_ok(&xgpu_hyp_sim, "pcpus=1");
	xgpu_hyp_sim.track(h, 1);
	static struct xgpu_hyp_snapshot s;
	/* Accounting at 3000 ms; ticks at 3010 and 3020 fall in one period. */
	assert_int_equal(xgpu_hyp_sim.refresh(h, 3001 * MS, &s), 0);
	const struct xgpu_hyp_entry *e = running_entry(&s, 0);
	assert_non_null(e);
	int32_t c0 = e->credit;
	assert_int_equal(xgpu_hyp_sim.refresh(h, 3011 * MS, &s), 0);
	assert_non_null(e = running_entry(&s, 0));
	int32_t c1 = e->credit;
	assert_int_equal(xgpu_hyp_sim.refresh(h, 3021 * MS, &s), 0);
	assert_non_null(e = running_entry(&s, 0));
	int32_t c2 = e->credit;
	assert_int_equal(c1, c0 - 100);
	assert_int_equal(c2, c1 - 100);
	xgpu_hyp_sim.close(h);
}

static void sim_time_jumps_are_cheap_and_never_go_back(void **state)
{
	struct xgpu_hyp *a = open_ok(&xgpu_hyp_sim, "pcpus=4,vcpus=2");
	struct xgpu_hyp *b = open_ok(&xgpu_hyp_sim, "pcpus=4,vcpus=2");
	for (uint32_t d = 0; d < 6; d++) {
		xgpu_hyp_sim.track(a, d);
		xgpu_hyp_sim.track(b, d);
	}
	static struct xgpu_hyp_snapshot sa, sb;
	assert_int_equal(xgpu_hyp_sim.refresh(a, 500 * MS, &sa), 0);
	/* A monotonic clock reading (days) as the first or a later time. */
	uint64_t far = 1000000ull * 1000000000ull + 12345678;
	uint64_t t0 = xgpu_now_ns();
	assert_int_equal(xgpu_hyp_sim.refresh(a, far, &sa), 0);
	assert_int_equal(xgpu_hyp_sim.refresh(b, far, &sb), 0);
	assert_true(xgpu_now_ns() - t0 < 1000 * MS);
	assert_int_equal(sa.now_ns, far);
	assert_int_equal(sa.n, 8);
	/* A jump restarts the model the same way whatever came before. */
	assert_int_equal(sa.n, sb.n);
	for (unsigned i = 0; i < sa.n; i++) {
		assert_int_equal(sa.e[i].domid, sb.e[i].domid);
		assert_int_equal(sa.e[i].credit, sb.e[i].credit);
	}
	/* Going back leaves the view as it is. */
	uint64_t seq = sa.seq;
	assert_int_equal(xgpu_hyp_sim.refresh(a, 5 * MS, &sa), 0);
	assert_int_equal(sa.now_ns, far);
	assert_int_equal(sa.seq, seq);
	assert_int_equal(sa.n, sb.n);
	xgpu_hyp_sim.close(a);
	xgpu_hyp_sim.close(b);
}

static void sim_reports_weights(void **state)
{
	struct xgpu_hyp *h = open_ok(&xgpu_hyp_sim, "weight.3=512,cap.3=50,weight.7=1000,pcpus=1");
	xgpu_hyp_sim.track(h, 3);
	xgpu_hyp_sim.track(h, 4);
	uint32_t w = 0, c = 99;
	assert_int_equal(xgpu_hyp_sim.weight(h, 3, &w, &c), 0);
	assert_int_equal(w, 512);
	assert_int_equal(c, 50);
	assert_int_equal(xgpu_hyp_sim.weight(h, 4, &w, &c), 0);
	assert_int_equal(w, XGPU_HYP_DEFAULT_WEIGHT);
	assert_int_equal(c, 0);
	assert_int_equal(xgpu_hyp_sim.weight(h, 7, &w, &c), 0); /* configured, not tracked yet */
	assert_int_equal(w, 1000);
	assert_int_equal(xgpu_hyp_sim.weight(h, 99, &w, &c), -1);
	xgpu_hyp_sim_set_weight(h, 4, 100000, 500);
	assert_int_equal(xgpu_hyp_sim.weight(h, 4, &w, &c), 0);
	assert_int_equal(w, XGPU_HYP_MAX_WEIGHT);
	assert_int_equal(c, 100); /* one PCPU */
	xgpu_hyp_sim.set_pids(h, 4, NULL, 0);
	xgpu_hyp_sim.close(h);
}

static void sim_rejects_bad_args(void **state)
{
	static const struct {
		const char *args, *want1, *want2;
	} bad[] = {
	    {"pcpus=0", "'pcpus'", "1..64"},
	    {"pcpus=65", "'pcpus'", "1..64"},
	    {"vcpus=abc", "'vcpus'", "1..16"},
	    {"weight.1=0", "'weight.1'", "1..65535"},
	    {"weight.1=70000", "'weight.1'", "1..65535"},
	    {"cap.1=300", "'cap.1'", "0..200"},
	    {"cap.1=300,pcpus=2", "'cap.1'", "0..200"},
	    {"vcpus.2=17", "'vcpus.2'", "1..16"},
	    {"duty.2=101", "'duty.2'", "0..100"},
	    {"duty.2=-1", "'duty.2'", "0..100"},
	    {"duty.2=", "'duty.2'", "0..100"},
	    {"frob=1", "'frob'", "weight.<domid>"},
	    {"weight=5", "'weight'", "pcpus"},
	    {"speed.1=5", "'speed.1'", "duty.<domid>"},
	    {"weight.x=5", "'weight.x'", "domid"},
	    {"weight.=5", "'weight.'", "domid"},
	    {"pcpus", "'pcpus'", "KEY=VALUE"},
	    {"pcpus=2,,weight.1=9,bogus=1", "'bogus'", "keys"},
	};
	for (size_t i = 0; i < XGPU_ARRAY_SIZE(bad); i++) {
		struct xgpu_hyp *h = NULL;
		char err[256] = "";
		assert_int_equal(xgpu_hyp_sim.open(bad[i].args, &h, err, sizeof err), -1);
		if (!strstr(err, bad[i].want1) || !strstr(err, bad[i].want2))
			fail_msg("args '%s': message '%s' lacks %s or %s", bad[i].args, err, bad[i].want1,
				 bad[i].want2);
	}
	/* cap's range follows pcpus wherever it is given; empty args are fine. */
	xgpu_hyp_sim.close(open_ok(&xgpu_hyp_sim, "cap.1=300,pcpus=4"));
	xgpu_hyp_sim.close(open_ok(&xgpu_hyp_sim, ""));
	xgpu_hyp_sim.close(open_ok(&xgpu_hyp_sim, NULL));
}

/* ---- local ------------------------------------------------------------------ */

static pid_t children[4];

/* mode 0: exits at once; 1: spins, named so that stat parsing is tested;
 * 2: sleeps. Returns once the child is set up. */
static pid_t spawn(int mode)
{
	int ready[2];
	assert_int_equal(pipe(ready), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		/* Never outlive the test, even if it fails before killing us. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		alarm(60);
		if (mode == 0)
			_exit(0);
		/* A comm with spaces and ')' (at most 15 bytes). */
		if (mode == 1)
			prctl(PR_SET_NAME, "sp) in (x", 0, 0, 0);
		if (write(ready[1], "x", 1) != 1)
			_exit(1);
		if (mode == 1)
			for (volatile unsigned long i = 0;; i++)
				;
		for (;;)
			pause();
	}
	close(ready[1]);
	char c;
	if (mode != 0)
		assert_int_equal(read(ready[0], &c, 1), 1);
	close(ready[0]);
	for (size_t i = 0; i < XGPU_ARRAY_SIZE(children); i++)
		if (!children[i]) {
			children[i] = pid;
			break;
		}
	return pid;
}

static int reap_children(void **state)
{
	for (size_t i = 0; i < XGPU_ARRAY_SIZE(children); i++)
		if (children[i]) {
			kill(children[i], SIGKILL);
			waitpid(children[i], NULL, 0);
			children[i] = 0;
		}
	return 0;
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000};
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

static void local_sees_busy_child_running(void **state)
{
	struct xgpu_hyp *h = open_ok(&xgpu_hyp_local, NULL);
	pid_t child = spawn(1);
	/* The child first, so its only thread is VCPU 0. */
	pid_t pids[] = {child, getpid()};
	xgpu_hyp_local.track(h, 9);
	xgpu_hyp_local.set_pids(h, 9, pids, 2);
	static struct xgpu_hyp_snapshot s;
	long ncpu = sysconf(_SC_NPROCESSORS_CONF);
	bool found = false;
	uint64_t start = xgpu_now_ns();
	while (!found && xgpu_now_ns() - start < 5000 * MS) {
		assert_int_equal(xgpu_hyp_local.refresh(h, xgpu_now_ns(), &s), 0);
		for (unsigned i = 0; i < s.n; i++) {
			assert_int_equal(s.e[i].domid, 9);
			assert_int_equal(s.e[i].credit, 0);
			assert_true(ncpu <= 0 || s.e[i].pcpu < (uint32_t)ncpu);
			/* With sched_switch a runnable thread may be waiting for a
			 * CPU (upcoming); the spinning child is on one at times. */
			found |= s.e[i].vcpu == 0 && s.e[i].running;
		}
		if (!found)
			sleep_ms(10);
	}
	assert_true(found);
	assert_true(s.seq > 0);

	/* Once it is gone, it is no longer reported. */
	reap_children(state);
	xgpu_hyp_local.set_pids(h, 9, &child, 1);
	assert_int_equal(xgpu_hyp_local.refresh(h, xgpu_now_ns(), &s), 0);
	assert_int_equal(s.n, 0);
	/* Our own (running) thread is reported while its domain is tracked. */
	xgpu_hyp_local.set_pids(h, 9, &pids[1], 1);
	assert_int_equal(xgpu_hyp_local.refresh(h, xgpu_now_ns(), &s), 0);
	assert_true(s.n >= 1);
	xgpu_hyp_local.untrack(h, 9);
	assert_int_equal(xgpu_hyp_local.refresh(h, xgpu_now_ns(), &s), 0);
	assert_int_equal(s.n, 0);
	assert_int_equal(xgpu_hyp_local.weight(h, 9, NULL, NULL), -1);
	xgpu_hyp_local.close(h);
}

static void local_dead_pids_give_nothing(void **state)
{
	struct xgpu_hyp *h = open_ok(&xgpu_hyp_local, "");
	pid_t a = spawn(0), b = spawn(0);
	reap_children(state);
	pid_t pids[] = {a, b};
	xgpu_hyp_local.track(h, 10);
	xgpu_hyp_local.set_pids(h, 10, pids, 2);
	xgpu_hyp_local.track(h, 11);             /* no pids at all */
	xgpu_hyp_local.set_pids(h, 12, pids, 2); /* not tracked: ignored */
	static struct xgpu_hyp_snapshot s;
	assert_int_equal(xgpu_hyp_local.refresh(h, 1, &s), 0);
	assert_int_equal(s.n, 0);
	uint64_t seq = s.seq;
	assert_int_equal(xgpu_hyp_local.refresh(h, 2, &s), 0);
	assert_int_equal(s.n, 0);
	assert_int_equal(s.seq, seq);
	uint32_t w, c;
	assert_int_equal(xgpu_hyp_local.weight(h, 10, &w, &c), -1);
	assert_int_equal(xgpu_hyp_local.weight(h, 11, &w, &c), -1);
	assert_int_equal(xgpu_hyp_local.weight(h, 12, &w, &c), -1);
	assert_int_equal(xgpu_hyp_local.weight(h, 4242, &w, &c), -1);
	xgpu_hyp_local.close(h);
}

/* What the source should find for pid: cpu.weight scaled, or 0 if the
 * process's cgroup has none. */
static uint32_t cgroup_weight_of(pid_t pid)
{
	char path[4400], buf[4096];
	snprintf(path, sizeof path, "/proc/%d/cgroup", (int)pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	uint32_t w = 0;
	while (!w && fgets(buf, sizeof buf, f)) {
		if (strncmp(buf, "0::", 3))
			continue;
		buf[strcspn(buf, "\n")] = '\0';
		const char *mounts[] = {"/sys/fs/cgroup", "/sys/fs/cgroup/unified"};
		for (size_t i = 0; !w && i < 2; i++) {
			snprintf(path, sizeof path, "%s%s/cpu.weight", mounts[i], buf + 3);
			FILE *g = fopen(path, "r");
			long v;
			if (g && fscanf(g, "%ld", &v) == 1 && v >= 1 && v <= 10000)
				w = (uint32_t)(v * 256 / 100);
			if (g)
				fclose(g);
		}
	}
	fclose(f);
	return w;
}

static void local_weights_follow_nice_or_cgroup(void **state)
{
	struct xgpu_hyp *h = open_ok(&xgpu_hyp_local, NULL);
	pid_t child = spawn(2);
	xgpu_hyp_local.track(h, 20);
	xgpu_hyp_local.set_pids(h, 20, &child, 1);
	assert_int_equal(xgpu_hyp_local.weight(h, 20, NULL, NULL), -1); /* nothing read yet */
	static struct xgpu_hyp_snapshot s;
	uint64_t t = 1000 * MS;
	assert_int_equal(xgpu_hyp_local.refresh(h, t, &s), 0);
	uint32_t w0 = 0, c = 99;
	assert_int_equal(xgpu_hyp_local.weight(h, 20, &w0, &c), 0);
	assert_int_equal(c, 0);

	errno = 0;
	int nice0 = getpriority(PRIO_PROCESS, (id_t)child);
	assert_int_equal(errno, 0);
	if (nice0 > 9)
		skip();
	assert_int_equal(setpriority(PRIO_PROCESS, (id_t)child, nice0 + 10), 0);

	/* Weights are re-read at most once a second. */
	assert_int_equal(xgpu_hyp_local.refresh(h, t + 500 * MS, &s), 0);
	uint32_t w;
	assert_int_equal(xgpu_hyp_local.weight(h, 20, &w, NULL), 0);
	assert_int_equal(w, w0);
	assert_int_equal(xgpu_hyp_local.refresh(h, t + 1500 * MS, &s), 0);
	uint32_t w1 = 0;
	assert_int_equal(xgpu_hyp_local.weight(h, 20, &w1, NULL), 0);

	uint32_t cg = cgroup_weight_of(child);
	print_message("weight at nice %d: %u, at nice %d: %u (cgroup cpu.weight: %s)\n", nice0, w0,
		      nice0 + 10, w1, cg ? "yes" : "no");
	if (cg) {
		assert_int_equal(w0, cg);
		assert_int_equal(w1, cg);
	} else {
		if (nice0 == 0) {
			assert_int_equal(w0, XGPU_HYP_DEFAULT_WEIGHT);
			assert_int_equal(w1, (110 * 256 + 512) / 1024); /* nice 10 */
		}
		assert_true(w1 < w0);
		assert_true(w1 >= 1);
	}
	xgpu_hyp_local.close(h);
}

static void local_rejects_args(void **state)
{
	struct xgpu_hyp *h = NULL;
	char err[256] = "";
	assert_int_equal(xgpu_hyp_local.open("pcpus=2", &h, err, sizeof err), -1);
	assert_non_null(strstr(err, "pcpus=2"));
	assert_null(h);
	/* proc never needs the tracepoint. */
	assert_int_equal(xgpu_hyp_local.open("proc", &h, err, sizeof err), 0);
	xgpu_hyp_local.close(h);
}

/* ---- oncpu: the sched_switch ring ---------------------------------------------- */

#define RING_SIZE 256u
#define NEXT_PID_OFF 56u

struct fake_ring {
	uint64_t head, tail;
	uint8_t data[RING_SIZE];
	struct xgpu_oncpu_ring r;
};

static void fake_init(struct fake_ring *f, uint64_t start)
{
	memset(f, 0, sizeof *f);
	f->head = f->tail = start;
	f->r = (struct xgpu_oncpu_ring){
	    .head = &f->head, .tail = &f->tail, .data = f->data, .data_size = RING_SIZE};
}

static void fake_put(struct fake_ring *f, const void *src, size_t len)
{
	for (size_t i = 0; i < len; i++)
		f->data[(f->head + i) % RING_SIZE] = ((const uint8_t *)src)[i];
	f->head += len;
}

/* A PERF_RECORD_SAMPLE of a sched_switch to next (raw data of raw bytes). */
static void fake_switch(struct fake_ring *f, int32_t next, uint32_t raw)
{
	uint8_t rec[128] = {0};
	uint32_t size = (uint32_t)(sizeof(struct perf_event_header) + sizeof raw + raw + 7) & ~7u;
	struct perf_event_header h = {.type = PERF_RECORD_SAMPLE, .size = (uint16_t)size};
	memcpy(rec, &h, sizeof h);
	memcpy(rec + sizeof h, &raw, sizeof raw);
	if (raw >= NEXT_PID_OFF + 4)
		memcpy(rec + sizeof h + sizeof raw + NEXT_PID_OFF, &next, sizeof next);
	fake_put(f, rec, size);
}

static void oncpu_drain_reads_switches(void **state)
{
	(void)state;
	static struct fake_ring f;
	pid_t cur = 0;
	bool known = false;
	/* Records that wrap around the end of the ring. */
	fake_init(&f, RING_SIZE - 20);
	fake_switch(&f, 101, 68);
	fake_switch(&f, 202, 68);
	assert_int_equal(xgpu_oncpu_drain(&f.r, NEXT_PID_OFF, &cur, &known), 2);
	assert_int_equal(cur, 202);
	assert_true(known);
	assert_int_equal(f.tail, f.head);
	/* Nothing new: nothing changes. */
	assert_int_equal(xgpu_oncpu_drain(&f.r, NEXT_PID_OFF, &cur, &known), 0);
	assert_int_equal(cur, 202);
	/* Lost records: unknown until the next switch. */
	struct {
		struct perf_event_header h;
		uint64_t id, lost;
	} lost = {.h = {.type = PERF_RECORD_LOST, .size = sizeof lost}, .lost = 9};
	fake_put(&f, &lost, sizeof lost);
	xgpu_oncpu_drain(&f.r, NEXT_PID_OFF, &cur, &known);
	assert_false(known);
	fake_switch(&f, 303, 68);
	assert_int_equal(xgpu_oncpu_drain(&f.r, NEXT_PID_OFF, &cur, &known), 1);
	assert_true(known);
	assert_int_equal(cur, 303);
	/* A raw record too short to hold next_pid is skipped, not read past. */
	fake_switch(&f, 404, 20);
	assert_int_equal(xgpu_oncpu_drain(&f.r, NEXT_PID_OFF, &cur, &known), 0);
	assert_int_equal(cur, 303);
	/* A header claiming more than was written ends the read. */
	struct perf_event_header bad = {.type = PERF_RECORD_SAMPLE, .size = 200};
	fake_put(&f, &bad, sizeof bad);
	assert_int_equal(xgpu_oncpu_drain(&f.r, NEXT_PID_OFF, &cur, &known), 0);
	assert_int_equal(f.tail, f.head);
	/* A head further ahead than the ring holds is not trusted. */
	f.head += 4 * RING_SIZE;
	assert_int_equal(xgpu_oncpu_drain(&f.r, NEXT_PID_OFF, &cur, &known), 0);
	assert_false(known);
	assert_int_equal(f.tail, f.head);
}

static pid_t gettid_(void)
{
	return (pid_t)syscall(SYS_gettid);
}

/* The real tracepoint, where it can be read: this thread is on a CPU while
 * it runs, a child asleep in pause() never is. Skipped (with the reason)
 * without tracefs or the right to trace. */
static void oncpu_sees_this_thread_on_a_cpu(void **state)
{
	char err[256] = "";
	struct xgpu_oncpu *o = xgpu_oncpu_open(err, sizeof err);
	if (!o) {
		print_message("skipped: %s\n", err);
		skip();
	}
	pid_t sleeper = spawn(2);
	bool me = false, unknown = true;
	uint64_t start = xgpu_now_ns();
	/* Our own switches onto the CPU are what make us known: yield so
	 * there is one. */
	while (!me && xgpu_now_ns() - start < 2000 * MS) {
		sched_yield();
		sleep_ms(1);
		xgpu_oncpu_update(o);
		me = xgpu_oncpu_running(o, gettid_(), &unknown);
	}
	assert_true(me);
	for (int i = 0; i < 20; i++) {
		sleep_ms(5);
		xgpu_oncpu_update(o);
		assert_false(xgpu_oncpu_running(o, sleeper, &unknown));
	}
	xgpu_oncpu_close(o);
	reap_children(state);
}

/* The tracked-domain set the xen and xenpatch sources keep: sorted, one
 * element per domid, new ones zeroed, removal keeps the rest. */
static void domset_keeps_sorted_unique_elements(void **state)
{
	(void)state;
	struct el {
		uint32_t domid;
		uint32_t payload;
	};
	struct xgpu_hyp_domset set = {.elem_size = sizeof(struct el)};
	const uint32_t ids[] = {7, 3, 12, 1, 9, 3, 20, 5, 7, 15, 2, 11};
	for (size_t i = 0; i < XGPU_ARRAY_SIZE(ids); i++) {
		struct el *had = xgpu_hyp_domset_find(&set, ids[i]);
		int r = xgpu_hyp_domset_add(&set, ids[i]);
		assert_int_equal(r, had ? 0 : 1);
		struct el *e = xgpu_hyp_domset_find(&set, ids[i]);
		assert_non_null(e);
		assert_int_equal(e->domid, ids[i]);
		if (r == 1)
			assert_int_equal(e->payload, 0);
		e->payload = ids[i] * 10;
	}
	assert_int_equal(set.n, 10);
	for (size_t i = 1; i < set.n; i++)
		assert_true(((struct el *)set.v)[i - 1].domid < ((struct el *)set.v)[i].domid);
	xgpu_hyp_domset_remove(&set, 9);
	xgpu_hyp_domset_remove(&set, 100); /* absent: nothing happens */
	assert_int_equal(set.n, 9);
	assert_null(xgpu_hyp_domset_find(&set, 9));
	for (size_t i = 0; i < set.n; i++) {
		struct el *e = (struct el *)set.v + i;
		assert_int_equal(e->payload, e->domid * 10);
	}
	xgpu_hyp_domset_free(&set);
	assert_int_equal(set.n, 0);
	assert_null(xgpu_hyp_domset_find(&set, 7));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(registry_finds_sources_and_explains_misses),
	    cmocka_unit_test(domset_keeps_sorted_unique_elements),
	    cmocka_unit_test(sim_same_inputs_same_schedule),
	    cmocka_unit_test(sim_shares_follow_weights),
	    cmocka_unit_test(sim_caps_and_duty_cycles_limit_running),
	    cmocka_unit_test(sim_is_work_conserving_across_pcpus),
	    cmocka_unit_test(sim_snapshot_is_bounded_by_pcpus),
	    cmocka_unit_test(sim_survives_churn),
	    cmocka_unit_test(sim_running_vcpu_burns_credit),
	    cmocka_unit_test(sim_time_jumps_are_cheap_and_never_go_back),
	    cmocka_unit_test(sim_reports_weights),
	    cmocka_unit_test(sim_rejects_bad_args),
	    cmocka_unit_test_teardown(local_sees_busy_child_running, reap_children),
	    cmocka_unit_test_teardown(local_dead_pids_give_nothing, reap_children),
	    cmocka_unit_test_teardown(local_weights_follow_nice_or_cgroup, reap_children),
	    cmocka_unit_test(local_rejects_args),
	    cmocka_unit_test(oncpu_drain_reads_switches),
	    cmocka_unit_test_teardown(oncpu_sees_this_thread_on_a_cpu, reap_children),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
