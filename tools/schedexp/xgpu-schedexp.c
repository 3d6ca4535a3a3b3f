/* SPDX-License-Identifier: Apache-2.0 */
/* xgpu-schedexp.c - dumps the schedule the patched Xen credit scheduler
 * exports (xen-sched-patch/) as JSON, one snapshot per line: the header,
 * every PCPU record and every used domain slot. Run in dom0 as root; the
 * real-Xen test uses it to check that the export is live. */
#include "reader.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void usage(FILE *f)
{
	fprintf(f,
		"usage: xgpu-schedexp [--watch N] [--interval MS]\n"
		"\n"
		"Maps the xgpu schedule export of a patched Xen (XENMEM_acquire_resource type 0x%x of\n"
		"DOMID_XEN) read-only and prints one snapshot as a JSON object on one line.\n"
		"  --watch N       print N snapshots, one per line\n"
		"  --interval MS   time between snapshots with --watch (default 100)\n"
		"  --help          this text\n"
		"Exit status: 0, 1 on a usage error, 2 when the export cannot be mapped.\n",
		XGPU_SCHEDEXP_RESOURCE);
}

static void print_unit(const struct xgpu_schedexp_unit *u)
{
	printf("{\"domid\":%u,\"vcpu\":%u,\"credit\":%d,\"pri\":%d%s}", u->domid, u->vcpu, u->credit, u->pri,
	       u->domid == XGPU_SCHEDEXP_DOMID_IDLE ? ",\"idle\":true" : "");
}

static void print_snapshot(const struct xgpu_schedexp_snapshot *s, uint64_t torn_total)
{
	const struct xgpu_schedexp_header *h = &s->hdr;
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	printf(
	    "{\"read_ns\":%llu,\"header\":{\"magic\":%u,\"version\":%u,\"nr_frames\":%u,\"npcpus\":%u,"
	    "\"ndoms\":%u,\"pcpu_off\":%u,\"dom_off\":%u,\"tick_us\":%u,\"tslice_us\":%u,\"boot_ns\":%llu},",
	    (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec, h->magic,
	    h->version, h->nr_frames, h->npcpus, h->ndoms, h->pcpu_off, h->dom_off, h->tick_us, h->tslice_us,
	    (unsigned long long)h->boot_ns);
	printf("\"torn\":%u,\"torn_total\":%llu,\"stale\":%u,\"invalid\":%u,\"pcpus\":[", s->torn,
	       (unsigned long long)torn_total, s->stale, s->invalid);
	bool first = true;
	for (unsigned i = 0; i < h->npcpus && i < XGPU_SCHEDEXP_MAX_PCPUS; i++) {
		if (!s->pcpu_valid[i])
			continue;
		const struct xgpu_schedexp_pcpu *p = &s->pcpu[i];
		printf("%s{\"pcpu\":%u,\"seq\":%u,\"stale\":%s,\"cur\":", first ? "" : ",", p->pcpu, p->seq,
		       s->pcpu_stale[i] ? "true" : "false");
		print_unit(&p->cur);
		printf(",\"slice_start_ns\":%llu,\"slice_len_ns\":%llu,\"runq\":[",
		       (unsigned long long)p->slice_start_ns, (unsigned long long)p->slice_len_ns);
		for (unsigned k = 0; k < p->nrunq && k < XGPU_SCHEDEXP_RUNQ; k++) {
			if (k)
				putchar(',');
			print_unit(&p->runq[k]);
		}
		printf("]}");
		first = false;
	}
	printf("],\"doms\":[");
	first = true;
	for (unsigned i = 0; i < h->ndoms && i < XGPU_SCHEDEXP_MAX_DOMS; i++) {
		const struct xgpu_schedexp_dom *d = &s->dom[i];
		if (!s->dom_valid[i] || d->domid == XGPU_SCHEDEXP_DOMID_FREE)
			continue;
		printf("%s{\"slot\":%u,\"domid\":%u,\"weight\":%u,\"cap\":%u,\"nr_vcpus\":%u,\"seq\":%u,"
		       "\"stale\":%s}",
		       first ? "" : ",", i, d->domid, d->weight, d->cap, d->nr_vcpus, d->seq,
		       s->dom_stale[i] ? "true" : "false");
		first = false;
	}
	printf("]}\n");
	fflush(stdout);
}

static long number(const char *opt, const char *v, long min, long max)
{
	char *end;
	errno = 0;
	long n = v ? strtol(v, &end, 10) : 0;
	if (!v || errno || *end || end == v || n < min || n > max) {
		fprintf(stderr, "xgpu-schedexp: %s wants a number in %ld..%ld (got '%s')\n", opt, min, max,
			v ? v : "");
		exit(1);
	}
	return n;
}

int main(int argc, char **argv)
{
	long watch = 1, interval_ms = 100;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			usage(stdout);
			return 0;
		} else if (!strcmp(argv[i], "--watch")) {
			watch = number("--watch", i + 1 < argc ? argv[++i] : NULL, 1, 1000000);
		} else if (!strcmp(argv[i], "--interval")) {
			interval_ms = number("--interval", i + 1 < argc ? argv[++i] : NULL, 0, 3600000);
		} else {
			fprintf(stderr, "xgpu-schedexp: unknown argument '%s'\n", argv[i]);
			usage(stderr);
			return 1;
		}
	}
	char err[512];
	struct xgpu_schedexp_reader *r = xgpu_schedexp_open(NULL, err, sizeof err);
	if (!r) {
		fprintf(stderr, "xgpu-schedexp: %s\n", err);
		return 2;
	}
	struct xgpu_schedexp_snapshot *snap = calloc(1, sizeof *snap);
	if (!snap) {
		fprintf(stderr, "xgpu-schedexp: out of memory\n");
		xgpu_schedexp_close(r);
		return 2;
	}
	for (long n = 0; n < watch; n++) {
		if (n) {
			struct timespec d = {interval_ms / 1000, (interval_ms % 1000) * 1000000L};
			nanosleep(&d, NULL);
		}
		xgpu_schedexp_read(r, snap);
		uint64_t torn;
		xgpu_schedexp_counters(r, &torn, NULL);
		print_snapshot(snap, torn);
	}
	free(snap);
	xgpu_schedexp_close(r);
	return 0;
}
