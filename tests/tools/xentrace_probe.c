/* SPDX-License-Identifier: Apache-2.0 */
/* xentrace_probe.c - runs the real `xentrace` schedule source in a Xen dom0
 * (the testbed, tests/xen/): tracks the domids given, refreshes every 10 ms
 * for the given seconds, and prints what it saw: per PCPU who ran last,
 * since when and how long the previous run was; how many snapshots showed
 * each tracked domain running; the source's counters.
 *
 *   xentrace_probe SECONDS DOMID...
 *
 * Lines: "pcpu N dom D vcpu V since_ns S prev_dom P prev_ran_ns R switches K",
 * "seen DOMID COUNT", "stats records R sched S lost L garbage G bogus B", and
 * "weight DOMID W CAP". Beside it a plain `xen` source polls xc_vcpu_getinfo
 * right after each refresh: "agree A of P" counts the polled running VCPUs
 * the trace's snapshot also had on the same PCPU; "refresh_us" is the mean
 * cost of one refresh. Exit 0 when the source opened and refreshed. */
#include "schedsrc/hypsrc.h"
#include "schedsrc/hypsrc_xentrace.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: xentrace_probe SECONDS DOMID...\n");
		return 2;
	}
	double secs = atof(argv[1]);
	int nd = argc - 2;
	if (nd > 16)
		nd = 16;
	uint32_t dom[16];
	unsigned seen[16] = {0};
	char err[512];
	struct xgpu_hyp *h = NULL;
	if (xgpu_hyp_xentrace.open(NULL, &h, err, sizeof err)) {
		fprintf(stderr, "xentrace_probe: %s\n", err);
		return 1;
	}
	struct xgpu_hyp *x = NULL;
	if (xgpu_hyp_xen.open(NULL, &x, err, sizeof err)) {
		fprintf(stderr, "xentrace_probe: %s\n", err);
		return 1;
	}
	for (int i = 0; i < nd; i++) {
		dom[i] = (uint32_t)strtoul(argv[2 + i], NULL, 10);
		xgpu_hyp_xentrace.track(h, dom[i]);
		xgpu_hyp_xen.track(x, dom[i]);
	}
	static struct xgpu_hyp_snapshot snap, polled;
	uint64_t agree = 0, npolled = 0, spent = 0;
	uint64_t end = now_ns() + (uint64_t)(secs * 1e9), refreshes = 0, seq_changes = 0, last_seq = 0;
	int rc = 0;
	while (now_ns() < end) {
		uint64_t t0 = now_ns();
		if (xgpu_hyp_xentrace.refresh(h, t0, &snap)) {
			rc = 1;
			break;
		}
		spent += now_ns() - t0;
		refreshes++;
		if (xgpu_hyp_xen.refresh(x, now_ns(), &polled) == 0) {
			for (unsigned i = 0; i < polled.n; i++) {
				npolled++;
				for (unsigned e = 0; e < snap.n; e++)
					if (snap.e[e].domid == polled.e[i].domid &&
					    snap.e[e].vcpu == polled.e[i].vcpu &&
					    snap.e[e].pcpu == polled.e[i].pcpu) {
						agree++;
						break;
					}
			}
		}
		if (snap.seq != last_seq)
			seq_changes++;
		last_seq = snap.seq;
		for (unsigned e = 0; e < snap.n; e++)
			for (int i = 0; i < nd; i++)
				if (snap.e[e].domid == dom[i] && snap.e[e].running)
					seen[i]++;
		struct timespec ts = {0, 10 * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
	for (unsigned c = 0;; c++) {
		struct xt_pcpu p;
		if (xgpu_hyp_xentrace_pcpu(h, c, &p))
			break;
		printf("pcpu %u known %d dom %u vcpu %u since_ns %llu prev_dom %u prev_ran_ns %llu switches "
		       "%llu "
		       "stale %d\n",
		       c, p.known, p.domid, p.vcpu, (unsigned long long)p.since_ns, p.prev_domid,
		       (unsigned long long)p.prev_ran_ns, (unsigned long long)p.switches, p.stale);
	}
	for (int i = 0; i < nd; i++) {
		uint32_t w = 0, cap = 0;
		int wr = xgpu_hyp_xentrace.weight(h, dom[i], &w, &cap);
		printf("seen %u %u\n", dom[i], seen[i]);
		printf("weight %u %d %u %u\n", dom[i], wr, w, cap);
	}
	printf("agree %llu of %llu\n", (unsigned long long)agree, (unsigned long long)npolled);
	printf("refresh_us %.1f\n", refreshes ? (double)spent / (double)refreshes / 1000.0 : 0.0);
	const struct xt_stats *st = xgpu_hyp_xentrace_stats(h);
	printf("stats refreshes %llu seq_changes %llu records %llu sched %llu lost %llu garbage %llu "
	       "truncated %llu "
	       "bogus %llu bytes %llu\n",
	       (unsigned long long)refreshes, (unsigned long long)seq_changes,
	       (unsigned long long)st->records, (unsigned long long)st->sched_records,
	       (unsigned long long)st->lost_records, (unsigned long long)st->garbage,
	       (unsigned long long)st->truncated, (unsigned long long)st->bogus_index,
	       (unsigned long long)st->bytes);
	xgpu_hyp_xentrace.close(h);
	xgpu_hyp_xen.close(x);
	return rc;
}
