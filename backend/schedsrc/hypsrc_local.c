/* SPDX-License-Identifier: Apache-2.0 */
/* hypsrc_local.c - the `local` hypervisor schedule source: in local mode a
 * domain is a group of client processes and its VCPUs are their threads.
 * Entries are its threads in state R in /proc; which of them is on a CPU
 * now comes from the sched_switch tracepoint (oncpu.c) where it can be read,
 * and the others are upcoming (running=false), as a VCPU waiting in Xen's
 * run queue. Without sched_switch, every thread in state R counts as
 * running, on a CPU or waiting for one. Arguments: `switch` requires
 * sched_switch, `proc` never uses it; none uses it when it can (opened at
 * the first refresh).
 * Weights come from the cgroup v2 cpu.weight of the domain's first live
 * process, else its nice level, both put on Xen's scale (256 = default).
 * Credit is always 0: Linux has no such budget.
 *
 * Everything read from /proc may vanish between two reads (threads and
 * processes exit at any time); such reads are skipped, never fatal. */
#include "hypsrc.h"
#include "log.h"
#include "oncpu.h"
#include "util.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LOCAL_MAX_PIDS 256u    /* per domain */
#define LOCAL_MAX_THREADS 256u /* per process */
#define LOCAL_WEIGHT_PERIOD_NS 1000000000ull
#define CGROUP_DEFAULT_WEIGHT 100u

/* Linux's sched_prio_to_weight, nice -20..19 (nice 0 = 1024). */
static const uint32_t nice_weight[40] = {
    88761, 71755, 56483, 46273, 36291, 29154, 23254, 18705, 14949, 11916, 9548, 7620, 6100, 4904,
    3906,  3121,  2501,  1991,  1586,  1277,  1024,  820,   655,   526,   423,  335,  272,  215,
    172,   137,   110,   87,    70,    56,    45,    36,    29,    23,    18,   15,
};

struct local_dom {
	uint32_t domid;
	unsigned npids;
	pid_t pids[LOCAL_MAX_PIDS];
	bool weight_known; /* read from a live process at least once */
	uint32_t weight;
};

struct local {
	struct local_dom **dom; /* sorted by domid */
	size_t ndom, dom_cap;
	bool weights_read;
	uint64_t weights_ns;
	struct xgpu_oncpu *oncpu;       /* NULL: state R is all we know */
	bool view_decided;              /* oncpu opened, or known not to be */
	struct xgpu_hyp_published view; /* what the last refresh published */
};

static struct local *L(struct xgpu_hyp *h)
{
	return (struct local *)h;
}

static size_t dom_index(const struct local *l, uint32_t domid)
{
	size_t lo = 0, hi = l->ndom;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (l->dom[mid]->domid < domid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static struct local_dom *dom_find(const struct local *l, uint32_t domid)
{
	size_t i = dom_index(l, domid);
	return i < l->ndom && l->dom[i]->domid == domid ? l->dom[i] : NULL;
}

/* Reads a small file whole (procfs files must be read in one go to be
 * consistent); -1 if it is gone or unreadable. */
static ssize_t read_small(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, size - 1);
	close(fd);
	if (n < 0)
		return -1;
	buf[n] = '\0';
	return n;
}

/* Splits a stat line into fields 3.. (state onwards). The comm field may hold
 * spaces and ')', so parsing starts after the last ')'. Returns how many
 * fields were found; field N lands in f[N - 3]. */
static unsigned stat_fields(char *line, char **f, unsigned max)
{
	char *p = strrchr(line, ')');
	if (!p)
		return 0;
	unsigned n = 0;
	char *save = NULL;
	for (char *tok = strtok_r(p + 1, " \n", &save); tok && n < max; tok = strtok_r(NULL, " \n", &save))
		f[n++] = tok;
	return n;
}

#define STAT_FIELD(f, n) ((f)[(n)-3])

static int read_thread(pid_t pid, pid_t tid, char *state, uint32_t *cpu)
{
	char path[64], buf[1024];
	snprintf(path, sizeof path, "/proc/%d/task/%d/stat", (int)pid, (int)tid);
	if (read_small(path, buf, sizeof buf) < 0)
		return -1;
	char *f[40];
	if (stat_fields(buf, f, 40) < 39 - 2)
		return -1;
	long v;
	*state = STAT_FIELD(f, 3)[0];
	*cpu = xgpu_parse_long(STAT_FIELD(f, 39), 0, INT32_MAX, &v) ? 0 : (uint32_t)v;
	return 0;
}

static int cmp_pid(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;
	return (x > y) - (x < y);
}

/* The process's thread ids in ascending order, so a thread keeps its VCPU
 * number from one refresh to the next while no older thread exits. */
static unsigned list_threads(pid_t pid, pid_t *tids, unsigned max)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
	DIR *d = opendir(path);
	if (!d)
		return 0;
	unsigned n = 0;
	struct dirent *de;
	while (n < max && (de = readdir(d))) {
		long v;
		if (!xgpu_parse_long(de->d_name, 1, INT32_MAX, &v))
			tids[n++] = (pid_t)v;
	}
	closedir(d);
	qsort(tids, n, sizeof *tids, cmp_pid);
	return n;
}

static uint32_t clamp_weight(uint64_t w)
{
	return w < 1 ? 1 : w > XGPU_HYP_MAX_WEIGHT ? XGPU_HYP_MAX_WEIGHT : (uint32_t)w;
}

/* cgroup v2 cpu.weight of the process's cgroup, on the unified mount or, on
 * hybrid hosts, under unified/. */
static int cgroup_weight(pid_t pid, uint32_t *out)
{
	char path[4352], buf[4096];
	snprintf(path, sizeof path, "/proc/%d/cgroup", (int)pid);
	if (read_small(path, buf, sizeof buf) < 0)
		return -1;
	char *line = buf;
	if (strncmp(line, "0::", 3))
		line = strstr(buf, "\n0::");
	if (!line)
		return -1;
	line += line[0] == '\n' ? 4 : 3;
	line[strcspn(line, "\n")] = '\0';
	static const char *const mounts[] = {"/sys/fs/cgroup", "/sys/fs/cgroup/unified"};
	for (size_t i = 0; i < XGPU_ARRAY_SIZE(mounts); i++) {
		char val[32];
		long w;
		int len = snprintf(path, sizeof path, "%s%s/cpu.weight", mounts[i], line);
		if (len < 0 || (size_t)len >= sizeof path)
			return -1;
		if (read_small(path, val, sizeof val) < 0)
			continue;
		val[strcspn(val, "\n")] = '\0';
		if (xgpu_parse_long(val, 1, 10000, &w))
			continue;
		*out = clamp_weight((uint64_t)w * XGPU_HYP_DEFAULT_WEIGHT / CGROUP_DEFAULT_WEIGHT);
		return 0;
	}
	return -1;
}

/* -1 if the process is gone. */
static int process_weight(pid_t pid, uint32_t *out)
{
	char path[64], buf[1024];
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	if (read_small(path, buf, sizeof buf) < 0)
		return -1;
	char *f[20];
	long nice;
	if (stat_fields(buf, f, 20) < 19 - 2 || xgpu_parse_long(STAT_FIELD(f, 19), -20, 19, &nice))
		return -1;
	if (!cgroup_weight(pid, out))
		return 0;
	uint64_t w = nice_weight[nice + 20];
	*out = clamp_weight((w * XGPU_HYP_DEFAULT_WEIGHT + 512) / 1024);
	return 0;
}

static void dom_read_weight(struct local_dom *d)
{
	for (unsigned i = 0; i < d->npids; i++) {
		uint32_t w;
		if (!process_weight(d->pids[i], &w)) {
			d->weight = w;
			d->weight_known = true;
			return;
		}
	}
}

static int local_open(const char *args, struct xgpu_hyp **out, char *err, size_t errlen)
{
	bool need = args && !strcmp(args, "switch"), never = args && !strcmp(args, "proc");
	if (args && *args && !need && !never) {
		snprintf(err, errlen, "local: the argument is 'switch' or 'proc' (got '%s')", args);
		return -1;
	}
	struct local *l = calloc(1, sizeof *l);
	if (!l) {
		snprintf(err, errlen, "local: out of memory");
		return -1;
	}
	l->view_decided = never;
	if (never)
		xlog_info("local: every thread in state R counts as running (local:proc)");
	if (need) {
		char why[256];
		l->oncpu = xgpu_oncpu_open(why, sizeof why);
		if (!l->oncpu) {
			snprintf(err, errlen, "local:switch: %s", why);
			free(l);
			return -1;
		}
		l->view_decided = true;
		xlog_info("local: threads on a CPU from sched_switch, others in state R upcoming");
	}
	*out = (struct xgpu_hyp *)l;
	return 0;
}

/* Without an argument, sched_switch is opened at the first refresh, which
 * only a policy that reads the schedule asks for: tracing every switch on
 * the host costs the kernel a record each, for nothing under rr or wfq. */
static void decide_view(struct local *l)
{
	char why[256];
	l->view_decided = true;
	l->oncpu = xgpu_oncpu_open(why, sizeof why);
	if (l->oncpu)
		xlog_info("local: threads on a CPU from sched_switch, others in state R upcoming");
	else
		xlog_info("local: every thread in state R counts as running; sched_switch: %s", why);
}

static void local_close(struct xgpu_hyp *h)
{
	struct local *l = L(h);
	if (!l)
		return;
	for (size_t i = 0; i < l->ndom; i++)
		free(l->dom[i]);
	free(l->dom);
	xgpu_oncpu_close(l->oncpu);
	free(l);
}

static void local_track(struct xgpu_hyp *h, uint32_t domid)
{
	struct local *l = L(h);
	size_t at = dom_index(l, domid);
	if (at < l->ndom && l->dom[at]->domid == domid)
		return;
	if (l->ndom == l->dom_cap) {
		size_t cap = l->dom_cap ? l->dom_cap * 2 : 8;
		struct local_dom **n = realloc(l->dom, cap * sizeof *n);
		if (!n)
			return;
		l->dom = n;
		l->dom_cap = cap;
	}
	struct local_dom *d = calloc(1, sizeof *d);
	if (!d)
		return;
	d->domid = domid;
	memmove(&l->dom[at + 1], &l->dom[at], (l->ndom - at) * sizeof *l->dom);
	l->dom[at] = d;
	l->ndom++;
}

static void local_untrack(struct xgpu_hyp *h, uint32_t domid)
{
	struct local *l = L(h);
	size_t at = dom_index(l, domid);
	if (at >= l->ndom || l->dom[at]->domid != domid)
		return;
	free(l->dom[at]);
	memmove(&l->dom[at], &l->dom[at + 1], (l->ndom - at - 1) * sizeof *l->dom);
	l->ndom--;
}

/* Pids of a domain not tracked are dropped: the caller tracks first. */
static void local_set_pids(struct xgpu_hyp *h, uint32_t domid, const pid_t *pids, unsigned n)
{
	struct local_dom *d = dom_find(L(h), domid);
	if (!d)
		return;
	if (n > LOCAL_MAX_PIDS)
		n = LOCAL_MAX_PIDS;
	if (n)
		memcpy(d->pids, pids, n * sizeof *pids);
	d->npids = n;
}

static int local_refresh(struct xgpu_hyp *h, uint64_t now_ns, struct xgpu_hyp_snapshot *snap)
{
	struct local *l = L(h);
	/* Weights change rarely and cost several file reads per domain. A
	 * clock going backwards counts as due. */
	bool weights_due =
	    !l->weights_read || now_ns < l->weights_ns || now_ns - l->weights_ns >= LOCAL_WEIGHT_PERIOD_NS;
	if (weights_due) {
		l->weights_read = true;
		l->weights_ns = now_ns;
	}
	if (!l->view_decided)
		decide_view(l);
	if (l->oncpu)
		xgpu_oncpu_update(l->oncpu);
	unsigned n = 0;
	pid_t tids[LOCAL_MAX_THREADS];
	for (size_t i = 0; i < l->ndom; i++) {
		struct local_dom *d = l->dom[i];
		uint32_t vcpu = 0;
		for (unsigned p = 0; p < d->npids && n < XGPU_HYP_MAX_ENTRIES; p++) {
			unsigned nt = list_threads(d->pids[p], tids, LOCAL_MAX_THREADS);
			for (unsigned t = 0; t < nt && n < XGPU_HYP_MAX_ENTRIES; t++, vcpu++) {
				char state;
				uint32_t cpu;
				if (read_thread(d->pids[p], tids[t], &state, &cpu) || state != 'R')
					continue;
				bool unknown = true,
				     on_cpu = l->oncpu && xgpu_oncpu_running(l->oncpu, tids[t], &unknown);
				snap->e[n++] = (struct xgpu_hyp_entry){.domid = d->domid,
								       .vcpu = vcpu,
								       .pcpu = cpu,
								       .credit = 0,
								       .running = on_cpu || unknown};
			}
		}
		/* A domain that never had a live process is read as soon as it has one. */
		if (weights_due || !d->weight_known)
			dom_read_weight(d);
	}
	xgpu_hyp_publish(&l->view, snap, n, false, now_ns);
	return 0;
}

/* -1 also for a tracked domain none of whose processes was ever seen alive:
 * there is no weight to report. */
static int local_weight(struct xgpu_hyp *h, uint32_t domid, uint32_t *weight, uint32_t *cap)
{
	const struct local_dom *d = dom_find(L(h), domid);
	if (!d || !d->weight_known)
		return -1;
	if (weight)
		*weight = d->weight;
	if (cap)
		*cap = 0;
	return 0;
}

const struct xgpu_hyp_ops xgpu_hyp_local = {
    .name = "local",
    .description =
	"Linux threads of each domain's client processes (/proc, sched_switch), cgroup cpu.weight or nice",
    .open = local_open,
    .close = local_close,
    .track = local_track,
    .untrack = local_untrack,
    .set_pids = local_set_pids,
    .refresh = local_refresh,
    .weight = local_weight,
};
