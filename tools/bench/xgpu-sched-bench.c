/* SPDX-License-Identifier: Apache-2.0 */
/* xgpu-sched-bench.c - the cost of one scheduling decision for every policy
 * at 4, 64 and 1024 domains (BRIEF's target: <= 1 us at 64 domains, growing
 * no faster than log n to 1024), to set beside Pegasus Table 2.
 *
 * It drives the daemon's own scheduler core in virtual time, as
 * tests/unit/test_sched.c does: every domain is saturating (it always wants
 * the slot), so each xgpu_sched_run at the holder's slot end does exactly one
 * decision: end the slot (the policy's slot_end), re-queue the holder
 * (domain_ready), the policy tick, pick the next holder (pick_next) and grant
 * it. Wall time comes from CLOCK_MONOTONIC around batches of many decisions;
 * each figure is the median of several batches.
 *
 * The hypervisor schedule is the `sim` source (a model of Xen's credit
 * scheduler), but its refresh, which the core makes once per tick for the
 * policies that read it, is the model's cost, not the scheduler's: the
 * decisions run against a replay of snapshots recorded from the sim (real
 * running and upcoming entries), the replay's copy cost is measured alone and
 * subtracted, and the sim's own refresh cost is reported separately.
 *
 * Output is Markdown for tools/bench/run.sh (docs/results/bench-sched.md).
 */
#include "schedsrc/hypsrc.h"
#include "policy.h"
#include "scheduler.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define TICK_NS 10000000ull /* the daemon's default tick */
#define HYP_ARGS "pcpus=16,vcpus=8"
#define WARM_TICKS 30u /* sim ticks before recording: a few accounting periods */
#define NREC 64u       /* recorded snapshots the replay cycles through */
#define MAX_POLICIES 16u

static const unsigned sizes[] = {4, 64, 1024};
#define NSIZES (sizeof sizes / sizeof sizes[0])

static unsigned long n_decisions = 200000; /* per batch */
static unsigned n_reps = 7;                /* batches; the median is reported */

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(double *v, unsigned n)
{
	qsort(v, n, sizeof *v, cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void die(const char *what)
{
	fprintf(stderr, "xgpu-sched-bench: %s\n", what);
	exit(1);
}

/* ---- the replayed hypervisor source ------------------------------------- */

/* Stands in for the sim in the scheduler: domains, weights and pids go to
 * the sim, refresh hands out the recorded snapshots in turn. */
struct replay {
	struct xgpu_hyp *sim;
	unsigned next;
	struct xgpu_hyp_snapshot rec[NREC];
};

static struct replay *R(struct xgpu_hyp *h)
{
	return (struct replay *)h;
}

static void replay_track(struct xgpu_hyp *h, uint32_t domid)
{
	xgpu_hyp_sim.track(R(h)->sim, domid);
}

static void replay_untrack(struct xgpu_hyp *h, uint32_t domid)
{
	xgpu_hyp_sim.untrack(R(h)->sim, domid);
}

static void replay_set_pids(struct xgpu_hyp *h, uint32_t domid, const pid_t *pids, unsigned n)
{
	xgpu_hyp_sim.set_pids(R(h)->sim, domid, pids, n);
}

static int replay_refresh(struct xgpu_hyp *h, uint64_t now_ns, struct xgpu_hyp_snapshot *snap)
{
	struct replay *r = R(h);
	const struct xgpu_hyp_snapshot *src = &r->rec[r->next];
	r->next = (r->next + 1) % NREC;
	snap->seq = src->seq;
	snap->now_ns = now_ns;
	snap->n = src->n;
	memcpy(snap->e, src->e, src->n * sizeof *src->e);
	return 0;
}

static int replay_weight(struct xgpu_hyp *h, uint32_t domid, uint32_t *weight, uint32_t *cap)
{
	return xgpu_hyp_sim.weight(R(h)->sim, domid, weight, cap);
}

static const struct xgpu_hyp_ops replay_ops = {
    .name = "replay",
    .description = "snapshots recorded from the sim source, handed out in turn",
    .track = replay_track,
    .untrack = replay_untrack,
    .set_pids = replay_set_pids,
    .refresh = replay_refresh,
    .weight = replay_weight,
};

/* ---- one population of domains ------------------------------------------- */

struct world {
	unsigned n;
	struct replay *rp;
	uint64_t sim_now; /* the sim's virtual time */
	unsigned snap_running, snap_upcoming;
	double sim_refresh_ns; /* one sim refresh, advancing one tick */
	double replay_ns;      /* one replayed refresh */
};

static void nop_wake(struct xgpu_sched_dom *sd)
{
}

/* Opens the sim for n domains, runs it past start-up and records NREC
 * consecutive per-tick snapshots; then times the sim's refresh and the
 * replay's. */
static void world_open(struct world *w, unsigned n)
{
	char err[256];
	memset(w, 0, sizeof *w);
	w->n = n;
	w->rp = calloc(1, sizeof *w->rp);
	if (!w->rp)
		die("out of memory");
	if (xgpu_hyp_sim.open(HYP_ARGS, &w->rp->sim, err, sizeof err) < 0)
		die(err);
	for (unsigned i = 0; i < n; i++)
		xgpu_hyp_sim.track(w->rp->sim, i + 1);
	static struct xgpu_hyp_snapshot scratch;
	for (unsigned t = 0; t < WARM_TICKS; t++, w->sim_now += TICK_NS)
		xgpu_hyp_sim.refresh(w->rp->sim, w->sim_now, &scratch);
	for (unsigned k = 0; k < NREC; k++, w->sim_now += TICK_NS) {
		struct xgpu_hyp_snapshot *sn = &w->rp->rec[k];
		xgpu_hyp_sim.refresh(w->rp->sim, w->sim_now, sn);
		for (unsigned i = 0; i < sn->n; i++) {
			w->snap_running += sn->e[i].running;
			w->snap_upcoming += !sn->e[i].running;
		}
	}
	w->snap_running /= NREC;
	w->snap_upcoming /= NREC;

	/* The sim's refresh per tick: it steps its model 1 ms at a time over
	 * every VCPU, so it grows with the domains. Fewer calls at large n. */
	unsigned calls = n >= 1024 ? 20 : n >= 64 ? 200 : 2000;
	if (n_decisions < 200000)
		calls = calls / 10 ? calls / 10 : 1;
	double v[32];
	for (unsigned r = 0; r < n_reps; r++) {
		uint64_t t0 = mono_ns();
		for (unsigned k = 0; k < calls; k++, w->sim_now += TICK_NS)
			xgpu_hyp_sim.refresh(w->rp->sim, w->sim_now, &scratch);
		v[r] = (double)(mono_ns() - t0) / calls;
	}
	w->sim_refresh_ns = median(v, n_reps);

	/* The replay alone, as the core calls it (into a snapshot of its own). */
	for (unsigned r = 0; r < n_reps; r++) {
		uint64_t t0 = mono_ns();
		for (unsigned long k = 0; k < n_decisions; k++)
			replay_refresh((struct xgpu_hyp *)w->rp, k, &scratch);
		v[r] = (double)(mono_ns() - t0) / (double)n_decisions;
	}
	w->replay_ns = median(v, n_reps);
	w->rp->next = 0;
}

static void world_close(struct world *w)
{
	xgpu_hyp_sim.close(w->rp->sim);
	free(w->rp);
}

/* ---- measurements ------------------------------------------------------------ */

struct result {
	double decide_ns;  /* per decision, refresh excluded */
	double request_ns; /* per xgpu_sched_request that marks a domain ready */
	double charge_ns;  /* per xgpu_sched_charge (policies with a charge op) */
};

static uint64_t grants_total(struct xgpu_sched_dom *d, unsigned n)
{
	uint64_t g = 0;
	for (unsigned i = 0; i < n; i++)
		g += atomic_load(&d[i].grants);
	return g;
}

/* Ends every slot as idle until nobody holds or waits: every domain is then
 * not ready and wants nothing (untimed). */
static void drain(struct xgpu_sched *s, uint64_t *now)
{
	while (s->holder || s->nready) {
		if (s->holder)
			xgpu_sched_idle(s, s->holder);
		*now += TICK_NS;
		xgpu_sched_run(s, *now);
	}
}

static double clock_pair_ns(void)
{
	double v[32];
	for (unsigned r = 0; r < n_reps; r++) {
		uint64_t sum = 0;
		for (unsigned k = 0; k < 10000; k++) {
			uint64_t t0 = mono_ns();
			sum += mono_ns() - t0;
		}
		v[r] = (double)sum / 10000;
	}
	return median(v, n_reps);
}

static struct result measure(const struct xgpu_policy_ops *ops, struct world *w, double clock_ns)
{
	struct result res = {0};
	unsigned n = w->n;
	struct xgpu_sched s;
	if (xgpu_sched_init(&s, ops, TICK_NS, &replay_ops, (struct xgpu_hyp *)w->rp, "bench") < 0)
		die("xgpu_sched_init failed");
	struct xgpu_sched_dom *d = calloc(n, sizeof *d);
	if (!d)
		die("out of memory");
	for (unsigned i = 0; i < n; i++) {
		d[i].domid = i + 1;
		d[i].name = "bench";
		d[i].wake = nop_wake;
		d[i].credit = 256 * (1 + i % 4);
		d[i].sla = 0.5 / n; /* slaf's feedback runs on every pick */
		xgpu_slot_set_context(&d[i].own_report, true);
		xgpu_sched_add(&s, &d[i], 0);
	}
	uint64_t now = TICK_NS;
	for (unsigned i = 0; i < n; i++)
		xgpu_sched_request(&s, &d[i], now);

	/* Decisions: each run is at the holder's slot end. Warm up so every
	 * domain has had slots and the policy's state is steady. */
	unsigned long warm = n_decisions / 10 + 8ul * n;
	for (unsigned long k = 0; k < warm; k++)
		xgpu_sched_run(&s, now = s.holder_until_ns);
	double v[32];
	for (unsigned r = 0; r < n_reps; r++) {
		uint64_t g0 = grants_total(d, n);
		uint64_t t0 = mono_ns();
		for (unsigned long k = 0; k < n_decisions; k++)
			xgpu_sched_run(&s, now = s.holder_until_ns);
		uint64_t t1 = mono_ns();
		if (grants_total(d, n) - g0 != n_decisions || !s.holder || s.nready != n - 1)
			die("a run did not end one slot and grant the next");
		v[r] = (double)(t1 - t0) / (double)n_decisions;
		if (ops->uses_hyp)
			v[r] -= w->replay_ns;
	}
	res.decide_ns = median(v, n_reps);

	/* Charges (wfq): device busy time reported for waiting domains, in
	 * the same saturated state, each re-sorting its domain. */
	if (ops->charge) {
		for (unsigned r = 0; r < n_reps; r++) {
			uint64_t t0 = mono_ns();
			for (unsigned long k = 0; k < n_decisions; k++)
				xgpu_sched_charge(&s, &d[k % n], 100000);
			v[r] = (double)(mono_ns() - t0) / (double)n_decisions;
		}
		res.charge_ns = median(v, n_reps);
	}

	/* Requests: from nobody waiting, every domain asks for the slot in
	 * turn (the policy's queue grows from 0 to n); the drain between
	 * batches is not timed, nor is the clock read around each batch. */
	unsigned long per_rep = n_decisions / 4 > n ? n_decisions / 4 : n;
	for (unsigned r = 0; r < n_reps; r++) {
		double sum = 0;
		unsigned long count = 0;
		while (count < per_rep) {
			drain(&s, &now);
			now += TICK_NS;
			uint64_t t0 = mono_ns();
			for (unsigned i = 0; i < n; i++)
				xgpu_sched_request(&s, &d[i], now);
			sum += (double)(mono_ns() - t0) - clock_ns;
			count += n;
			if (s.nready != n)
				die("a request did not mark its domain ready");
		}
		v[r] = sum / (double)count;
	}
	res.request_ns = median(v, n_reps);

	drain(&s, &now);
	xgpu_sched_fini(&s);
	free(d);
	return res;
}

/* ---- report ------------------------------------------------------------------ */

static void cpu_model(char *buf, size_t len)
{
	snprintf(buf, len, "unknown CPU");
	FILE *f = fopen("/proc/cpuinfo", "r");
	if (!f)
		return;
	char line[512];
	while (fgets(line, sizeof line, f)) {
		if (strncmp(line, "model name", 10))
			continue;
		char *colon = strchr(line, ':');
		if (!colon)
			continue;
		colon++;
		while (*colon == ' ' || *colon == '\t')
			colon++;
		colon[strcspn(colon, "\n")] = '\0';
		snprintf(buf, len, "%s", colon);
		break;
	}
	fclose(f);
}

static void usage(FILE *f)
{
	fprintf(f, "usage: xgpu-sched-bench [--quick] [--decisions N] [--reps R]\n"
		   "  Decision cost of every scheduling policy at 4, 64 and 1024 saturating domains,\n"
		   "  as a Markdown table. --quick: 20000 decisions per batch, 3 batches.\n");
}

int main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--quick")) {
			n_decisions = 20000;
			n_reps = 3;
		} else if (!strcmp(argv[i], "--decisions") && i + 1 < argc) {
			n_decisions = strtoul(argv[++i], NULL, 10);
		} else if (!strcmp(argv[i], "--reps") && i + 1 < argc) {
			n_reps = (unsigned)strtoul(argv[++i], NULL, 10);
		} else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			usage(stdout);
			return 0;
		} else {
			usage(stderr);
			return 2;
		}
	}
	if (n_decisions < 1000 || n_reps < 1 || n_reps > 31) {
		fprintf(stderr, "xgpu-sched-bench: need --decisions >= 1000 and --reps 1..31\n");
		return 2;
	}

	const struct xgpu_policy_ops *pol[MAX_POLICIES];
	unsigned np = 0;
	for (unsigned i = 0; np < MAX_POLICIES && xgpu_policy_at(i); i++)
		pol[np++] = xgpu_policy_at(i);
	static struct result res[MAX_POLICIES][NSIZES];
	struct world w[NSIZES];
	double clock_ns = clock_pair_ns();
	for (unsigned z = 0; z < NSIZES; z++) {
		world_open(&w[z], sizes[z]);
		for (unsigned p = 0; p < np; p++)
			if (pol[p]->gates)
				res[p][z] = measure(pol[p], &w[z], clock_ns);
	}

	char cpu[256];
	cpu_model(cpu, sizeof cpu);
	printf("Host: %s, %ld online CPUs. All figures come from one run on a shared machine; each is the\n"
	       "median of %u batches of %lu decisions (requests: at least %lu per batch).\n\n",
	       cpu, sysconf(_SC_NPROCESSORS_ONLN), n_reps, n_decisions,
	       n_decisions / 4 > 1024 ? n_decisions / 4 : 1024ul);

	printf(
	    "## Decision cost (ns per decision)\n\n"
	    "One decision is one `xgpu_sched_run` at the holder's slot end (virtual time jumps there): end\n"
	    "the slot (slot_end), re-queue the holder, still saturating (domain_ready), one policy tick, "
	    "pick\n"
	    "the next holder (pick_next) and grant it, scheduler lock included. Work a policy does in its\n"
	    "tick is counted once per decision. Credits are 256, 512, 768, 1024 in turn (slots of 1 to 4\n"
	    "ticks where the policy scales them; slaf with an SLO of 0.5/n each). Policies marked (hyp) "
	    "read\n"
	    "the hypervisor snapshot (`sim:%s`; running + upcoming entries at 4, 64, 1024 domains:\n"
	    "%u+%u, %u+%u, %u+%u); their per-tick refresh is excluded (they ran against replayed sim\n"
	    "snapshots, the replay's cost subtracted) and reported below. PASS/FAIL columns are\n"
	    "informational.\n\n",
	    HYP_ARGS, w[0].snap_running, w[0].snap_upcoming, w[1].snap_running, w[1].snap_upcoming,
	    w[2].snap_running, w[2].snap_upcoming);
	printf(
	    "| policy | 4 domains | 64 domains | 1024 domains | 1024/64 | <= 1 us at 64 | 1024/64 <= 2.5 |\n"
	    "|---|---|---|---|---|---|---|\n");
	for (unsigned p = 0; p < np; p++) {
		printf("| %s%s |", pol[p]->name, pol[p]->uses_hyp ? " (hyp)" : "");
		if (!pol[p]->gates) {
			printf(" — | — | — | — | — | — |\n");
			continue;
		}
		for (unsigned z = 0; z < NSIZES; z++)
			printf(" %.0f |", res[p][z].decide_ns);
		double growth = res[p][2].decide_ns / res[p][1].decide_ns;
		printf(" %.2f | %s | %s |\n", growth, res[p][1].decide_ns <= 1000 ? "PASS" : "FAIL",
		       growth <= 2.5 ? "PASS" : "FAIL");
	}
	printf("\n`none` gates nothing and makes no decisions.\n");

	printf(
	    "\n## Poller-side calls (ns per call)\n\n"
	    "`xgpu_sched_request`: a domain with gated work asks for the slot (lock, mark ready, the\n"
	    "policy's domain_ready); timed over batches in which every domain asks in turn, the policy's\n"
	    "queue growing from 0 to n. `xgpu_sched_charge`: measured device busy time reported for a\n"
	    "waiting domain, which wfq re-sorts; for the other policies it is one atomic add, no lock.\n\n");
	printf("| call | policy | 4 domains | 64 domains | 1024 domains | 1024/64 "
	       "|\n|---|---|---|---|---|---|\n");
	for (unsigned p = 0; p < np; p++) {
		if (!pol[p]->gates)
			continue;
		printf("| request | %s |", pol[p]->name);
		for (unsigned z = 0; z < NSIZES; z++)
			printf(" %.0f |", res[p][z].request_ns);
		printf(" %.2f |\n", res[p][2].request_ns / res[p][1].request_ns);
	}
	for (unsigned p = 0; p < np; p++) {
		if (!pol[p]->gates || !pol[p]->charge)
			continue;
		printf("| charge | %s |", pol[p]->name);
		for (unsigned z = 0; z < NSIZES; z++)
			printf(" %.0f |", res[p][z].charge_ns);
		printf(" %.2f |\n", res[p][2].charge_ns / res[p][1].charge_ns);
	}

	printf(
	    "\n## Hypervisor snapshot refresh (ns per tick, excluded above)\n\n"
	    "What the core adds once per tick for (hyp) policies. `sim` is the simulated credit scheduler\n"
	    "(`%s`, 8 VCPUs per domain) stepped 1 ms at a time over every VCPU, so it grows with the\n"
	    "domains: it is the model's cost, not a real source's. The replay is what the decisions above\n"
	    "ran against (a copy of a recorded snapshot), subtracted from them.\n\n",
	    HYP_ARGS);
	printf("| source | 4 domains | 64 domains | 1024 domains |\n|---|---|---|---|\n| sim |");
	for (unsigned z = 0; z < NSIZES; z++)
		printf(" %.0f |", w[z].sim_refresh_ns);
	printf("\n| replay |");
	for (unsigned z = 0; z < NSIZES; z++)
		printf(" %.0f |", w[z].replay_ns);
	printf("\n\nClock read pair (CLOCK_MONOTONIC), subtracted once per request batch: %.0f ns.\n",
	       clock_ns);

	for (unsigned z = 0; z < NSIZES; z++)
		world_close(&w[z]);
	return 0;
}
