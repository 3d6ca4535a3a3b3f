/* SPDX-License-Identifier: Apache-2.0 */
/* hypsrc_xentrace.c - the `xentrace` hypervisor schedule source, for stock
 * (unpatched) Xen hosts that want more than polling: it consumes the
 * scheduler's TRC_SCHED_SWITCH* records from Xen's trace buffers, as
 * tools/xentrace/xentrace.c does (xc_tbuf_enable, the event mask set to
 * TRC_SCHED, t_info and the per-CPU rings mapped, VIRQ_TBUF bound), and so
 * knows per PCPU who runs now, since when and how long the previous unit ran
 * (xgpu_hyp_xentrace_pcpu) - not only who happens to run at the poll.
 *
 * Every refresh drains every CPU's ring (xt_ring_drain copies each window
 * out before parsing it) and feeds the per-PCPU state machine. Weights and
 * caps, and domains coming and going, come from an embedded `xen` source
 * (hypsrc_xen.c) refreshed alongside; a PCPU the trace has not yet told about
 * (no switch since we started, e.g. one VCPU spinning alone) takes that
 * source's polled running VCPUs. Snapshot entries are running VCPUs of
 * tracked domains, one per PCPU at most, credit 0 (the trace carries none).
 *
 * This source is the trace buffers' only consumer: do not run xentrace or
 * xenbaked beside it. It disables tracing on close, as xentrace does. */
#include "hypsrc_xentrace.h"
#include "log.h"

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <xenctrl.h>
#include <xenevtchn.h>
#include <xenforeignmemory.h>

struct xt_src {
	const struct xgpu_xt_ops *ops;
	void *b;
	struct xgpu_hyp *xen; /* embedded `xen` source: weights, caps, presence, fallback */
	unsigned ncpu;
	uint32_t data_size;
	uint8_t *scratch;
	struct xt_state st;
	uint32_t *tracked;
	size_t ntracked, tracked_cap;
	uint64_t xen_seq;
	bool xen_seq_known, warned_xen, warned_lost;
	uint64_t lost_seen;
	struct xgpu_hyp_published view; /* what the last refresh published */
	struct xgpu_hyp_snapshot polled;
};

static struct xt_src *S(struct xgpu_hyp *h)
{
	return (struct xt_src *)h;
}

static int parse_args(const char *args, unsigned *pages, char *err, size_t errlen)
{
	*pages = XGPU_XT_DEFAULT_PAGES;
	if (!args || !*args)
		return 0;
	if (strncmp(args, "pages=", 6) != 0) {
		snprintf(err, errlen,
			 "xentrace: unknown argument '%s' (takes pages=N: trace buffer pages per CPU)", args);
		return -1;
	}
	char *end;
	errno = 0;
	unsigned long v = strtoul(args + 6, &end, 10);
	if (errno || end == args + 6 || *end || v < 2 || v > XGPU_XT_MAX_PAGES) {
		snprintf(err, errlen, "xentrace: pages must be a number from 2 to %u (got '%s')",
			 XGPU_XT_MAX_PAGES, args + 6);
		return -1;
	}
	*pages = (unsigned)v;
	return 0;
}

static void xt_close(struct xgpu_hyp *h);

int xgpu_hyp_xentrace_open_with(const struct xgpu_xt_ops *xt, const struct xgpu_xenctl_ops *xc,
				const char *args, struct xgpu_hyp **out, char *err, size_t errlen)
{
	unsigned pages;
	if (parse_args(args, &pages, err, errlen))
		return -1;
	struct xt_src *s = calloc(1, sizeof *s);
	if (!s) {
		snprintf(err, errlen, "xentrace: out of memory");
		return -1;
	}
	s->ops = xt;
	char xerr[256] = "";
	if (xgpu_hyp_xen_open_with(xc, NULL, &s->xen, xerr, sizeof xerr)) {
		snprintf(err, errlen, "xentrace: %s", xerr);
		free(s);
		return -1;
	}
	uint32_t khz = 0;
	s->b = xt->open(pages, &s->ncpu, &khz, &s->data_size, err, errlen);
	if (!s->b) {
		xt_close((struct xgpu_hyp *)s);
		return -1;
	}
	if (!s->ncpu || s->ncpu > XGPU_XT_MAX_CPUS || s->data_size < 4 || (s->data_size & 3) ||
	    s->data_size > XGPU_XT_MAX_PAGES * 4096u) {
		snprintf(err, errlen, "xentrace: implausible trace buffers (%u CPUs, %u data bytes each)",
			 s->ncpu, s->data_size);
		xt_close((struct xgpu_hyp *)s);
		return -1;
	}
	s->scratch = malloc(s->data_size);
	if (!s->scratch || xt_state_init(&s->st, s->ncpu, khz)) {
		snprintf(err, errlen, "xentrace: out of memory");
		xt_close((struct xgpu_hyp *)s);
		return -1;
	}
	if (!khz)
		xlog_warn("xentrace: the TSC frequency is unknown; run lengths are in TSC ticks, not ns");
	xlog_info(
	    "xentrace: reading scheduler records from %u CPUs' trace buffers (%u bytes each, %u kHz TSC)",
	    s->ncpu, s->data_size, khz);
	*out = (struct xgpu_hyp *)s;
	return 0;
}

static int xt_open(const char *args, struct xgpu_hyp **out, char *err, size_t errlen)
{
	return xgpu_hyp_xentrace_open_with(&xgpu_xt_real, &xgpu_xenctl_real, args, out, err, errlen);
}

static void xt_close(struct xgpu_hyp *h)
{
	struct xt_src *s = S(h);
	if (!s)
		return;
	if (s->b)
		s->ops->close(s->b);
	if (s->xen)
		xgpu_hyp_xen.close(s->xen);
	xt_state_free(&s->st);
	free(s->scratch);
	free(s->tracked);
	free(s);
}

static bool is_tracked(const struct xt_src *s, uint32_t domid)
{
	for (size_t i = 0; i < s->ntracked; i++)
		if (s->tracked[i] == domid)
			return true;
	return false;
}

static void xt_track(struct xgpu_hyp *h, uint32_t domid)
{
	struct xt_src *s = S(h);
	xgpu_hyp_xen.track(s->xen, domid);
	if (is_tracked(s, domid))
		return;
	if (s->ntracked == s->tracked_cap) {
		size_t cap = s->tracked_cap ? s->tracked_cap * 2 : 8;
		uint32_t *n = realloc(s->tracked, cap * sizeof *n);
		if (!n)
			return;
		s->tracked = n;
		s->tracked_cap = cap;
	}
	s->tracked[s->ntracked++] = domid;
}

static void xt_untrack(struct xgpu_hyp *h, uint32_t domid)
{
	struct xt_src *s = S(h);
	xgpu_hyp_xen.untrack(s->xen, domid);
	for (size_t i = 0; i < s->ntracked; i++) {
		if (s->tracked[i] == domid) {
			s->tracked[i] = s->tracked[--s->ntracked];
			return;
		}
	}
}

static void xt_set_pids(struct xgpu_hyp *h, uint32_t domid, const pid_t *pids, unsigned n)
{
}

static int xt_refresh(struct xgpu_hyp *h, uint64_t now_ns, struct xgpu_hyp_snapshot *snap)
{
	struct xt_src *s = S(h);
	s->ops->ack(s->b);
	for (unsigned c = 0; c < s->ncpu; c++) {
		struct t_buf *tb = s->ops->buf(s->b, c);
		if (tb)
			xt_ring_drain(&s->st, c, tb, s->data_size, s->scratch);
	}
	if (s->st.st.lost_records != s->lost_seen) {
		if (!s->warned_lost)
			xlog_warn("xentrace: Xen dropped %llu trace records (buffers full); the schedule is "
				  "re-learnt at the next switch (pages=N makes the buffers larger)",
				  (unsigned long long)(s->st.st.lost_records - s->lost_seen));
		s->warned_lost = true;
		s->lost_seen = s->st.st.lost_records;
	}
	/* Weights, caps and domains from the hypervisor; the polled running
	 * VCPUs stand in for PCPUs the trace has said nothing about. */
	bool polled = xgpu_hyp_xen.refresh(s->xen, now_ns, &s->polled) == 0;
	if (!polled) {
		if (!s->warned_xen)
			xlog_warn(
			    "xentrace: the hypervisor does not answer for the tracked domains; weights are "
			    "the last known");
		s->warned_xen = true;
		s->polled.n = 0;
	} else {
		s->warned_xen = false;
	}
	bool xen_changed = polled && (!s->xen_seq_known || s->polled.seq != s->xen_seq);
	if (polled) {
		s->xen_seq = s->polled.seq;
		s->xen_seq_known = true;
	}
	unsigned n = 0;
	for (unsigned c = 0; c < s->ncpu && n < XGPU_HYP_MAX_ENTRIES; c++) {
		const struct xt_pcpu *p = &s->st.pcpu[c];
		if (p->known) {
			if (p->domid != XT_DOMID_IDLE && is_tracked(s, p->domid))
				snap->e[n++] = (struct xgpu_hyp_entry){.domid = p->domid,
								       .vcpu = p->vcpu,
								       .pcpu = c,
								       .credit = 0,
								       .running = true};
			continue;
		}
		for (unsigned i = 0; i < s->polled.n && n < XGPU_HYP_MAX_ENTRIES; i++)
			if (s->polled.e[i].pcpu == c && s->polled.e[i].running) {
				snap->e[n++] = s->polled.e[i];
				break;
			}
	}
	xgpu_hyp_publish(&s->view, snap, n, xen_changed, now_ns);
	return 0;
}

static int xt_weight(struct xgpu_hyp *h, uint32_t domid, uint32_t *weight, uint32_t *cap)
{
	return xgpu_hyp_xen.weight(S(h)->xen, domid, weight, cap);
}

int xgpu_hyp_xentrace_pcpu(struct xgpu_hyp *h, unsigned pcpu, struct xt_pcpu *out)
{
	struct xt_src *s = S(h);
	if (pcpu >= s->ncpu)
		return -1;
	*out = s->st.pcpu[pcpu];
	return 0;
}

const struct xt_stats *xgpu_hyp_xentrace_stats(struct xgpu_hyp *h)
{
	return &S(h)->st.st;
}

const struct xgpu_hyp_ops xgpu_hyp_xentrace = {
    .name = "xentrace",
    .description = "stock Xen's trace buffers: who runs on each PCPU and for how long, from the "
		   "scheduler's switch records; weights and caps via libxenctrl",
    .open = xt_open,
    .close = xt_close,
    .track = xt_track,
    .untrack = xt_untrack,
    .set_pids = xt_set_pids,
    .refresh = xt_refresh,
    .weight = xt_weight,
};

/* ---- over libxenctrl, xenforeignmemory and xenevtchn --------------------------- */

struct xt_real {
	xc_interface *xch;
	xenforeignmemory_handle *fmem;
	xenevtchn_handle *xce;
	xenevtchn_port_or_error_t port;
	void *tinfo;
	size_t tinfo_pages;
	unsigned ncpu, pages;
	void **bufs;
	bool enabled;
};

static void rq_vmessage(struct xentoollog_logger *lg, xentoollog_level level, int errnoval,
			const char *context, const char *format, va_list al)
{
	if (!xgpu_log_enabled(XGPU_LOG_DEBUG))
		return;
	char msg[512];
	vsnprintf(msg, sizeof msg, format, al);
	xgpu_log(XGPU_LOG_DEBUG, "libxenctrl %s: %s", context ? context : "", msg);
}

static void rq_destroy(struct xentoollog_logger *lg)
{
}

static struct xentoollog_logger rq_logger = {.vmessage = rq_vmessage, .destroy = rq_destroy};

static bool exists(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0;
}

static void real_close(void *v)
{
	struct xt_real *r = v;
	if (!r)
		return;
	for (unsigned i = 0; r->bufs && i < r->ncpu; i++)
		if (r->bufs[i])
			xenforeignmemory_unmap(r->fmem, r->bufs[i], r->pages);
	free(r->bufs);
	if (r->tinfo)
		xenforeignmemory_unmap(r->fmem, r->tinfo, r->tinfo_pages);
	if (r->xce) {
		if (r->port >= 0)
			xenevtchn_unbind(r->xce, (evtchn_port_t)r->port);
		xenevtchn_close(r->xce);
	}
	if (r->fmem)
		xenforeignmemory_close(r->fmem);
	if (r->xch) {
		if (r->enabled)
			xc_tbuf_disable(r->xch);
		xc_interface_close(r->xch);
	}
	free(r);
}

static void *map_pages(struct xt_real *r, int prot, const xen_pfn_t *pfns, size_t n)
{
	return xenforeignmemory_map(r->fmem, DOMID_XEN, prot, n, pfns, NULL);
}

static void *real_open(unsigned pages, unsigned *ncpu, uint32_t *cpu_khz, uint32_t *data_size, char *err,
		       size_t errlen)
{
	struct xt_real *r = calloc(1, sizeof *r);
	if (!r) {
		snprintf(err, errlen, "xentrace: out of memory");
		return NULL;
	}
	r->port = -1;
	r->xch = xc_interface_open(&rq_logger, &rq_logger, 0);
	if (!r->xch) {
		int e = errno;
		if (!exists("/dev/xen/privcmd") && !exists("/proc/xen/privcmd"))
			snprintf(
			    err, errlen,
			    "xentrace: cannot open the Xen control interface: neither /dev/xen/privcmd nor "
			    "/proc/xen/privcmd exists: not running in a Xen dom0 (choose another "
			    "--hyp-source)");
		else
			snprintf(
			    err, errlen,
			    "xentrace: cannot open the Xen control interface (/dev/xen/privcmd): %s (run "
			    "xgpud as root in dom0)",
			    strerror(e ? e : EIO));
		goto fail;
	}
	xc_physinfo_t pi;
	memset(&pi, 0, sizeof pi);
	if (xc_physinfo(r->xch, &pi)) {
		snprintf(err, errlen, "xentrace: xc_physinfo: %s", strerror(errno));
		goto fail;
	}
	r->ncpu = pi.max_cpu_id + 1;
	if (r->ncpu > XGPU_XT_MAX_CPUS)
		r->ncpu = XGPU_XT_MAX_CPUS;
	*cpu_khz = pi.cpu_khz;
	unsigned long mfn = 0, size = 0;
	if (xc_tbuf_enable(r->xch, pages, &mfn, &size)) {
		snprintf(err, errlen, "xentrace: cannot enable Xen's trace buffers (xc_tbuf_enable): %s",
			 strerror(errno));
		goto fail;
	}
	r->enabled = true;
	if (xc_tbuf_set_evt_mask(r->xch, TRC_SCHED)) {
		snprintf(err, errlen, "xentrace: xc_tbuf_set_evt_mask(TRC_SCHED): %s", strerror(errno));
		goto fail;
	}
	if (!size || size % XC_PAGE_SIZE || size > 64u * XC_PAGE_SIZE) {
		snprintf(err, errlen, "xentrace: implausible t_info size %lu", size);
		goto fail;
	}
	r->fmem = xenforeignmemory_open(NULL, 0);
	if (!r->fmem) {
		snprintf(err, errlen, "xentrace: xenforeignmemory_open: %s", strerror(errno));
		goto fail;
	}
	r->tinfo_pages = size / XC_PAGE_SIZE;
	xen_pfn_t tpfn[64];
	for (size_t i = 0; i < r->tinfo_pages; i++)
		tpfn[i] = mfn + i;
	r->tinfo = map_pages(r, PROT_READ, tpfn, r->tinfo_pages);
	if (!r->tinfo) {
		snprintf(err, errlen, "xentrace: cannot map t_info: %s", strerror(errno));
		r->tinfo = NULL;
		goto fail;
	}
	/* t_info is Xen's and read-only: copy what we use, bound every offset. */
	const uint8_t *ti = r->tinfo;
	uint16_t tsize;
	memcpy(&tsize, ti, sizeof tsize);
	size_t words = size / 4;
	if (!tsize || tsize > XGPU_XT_MAX_PAGES) {
		snprintf(err, errlen, "xentrace: t_info says %u pages per CPU", tsize);
		goto fail;
	}
	r->pages = tsize;
	*data_size = (uint32_t)(tsize * (size_t)XC_PAGE_SIZE - sizeof(struct t_buf));
	r->bufs = calloc(r->ncpu, sizeof *r->bufs);
	xen_pfn_t *pfns = calloc(tsize, sizeof *pfns);
	if (!r->bufs || !pfns) {
		free(pfns);
		snprintf(err, errlen, "xentrace: out of memory");
		goto fail;
	}
	unsigned mapped = 0;
	for (unsigned c = 0; c < r->ncpu; c++) {
		size_t at = offsetof(struct t_info, mfn_offset) + (size_t)c * 2;
		if (at + 2 > size)
			break;
		uint16_t off;
		memcpy(&off, ti + at, sizeof off);
		if (!off)
			continue; /* CPU offline when the buffers were made */
		if ((size_t)off + tsize > words)
			continue;
		for (unsigned j = 0; j < tsize; j++) {
			uint32_t m;
			memcpy(&m, ti + ((size_t)off + j) * 4, sizeof m);
			pfns[j] = m;
		}
		/* Read-write like xentrace: the consumer writes cons back. */
		r->bufs[c] = map_pages(r, PROT_READ | PROT_WRITE, pfns, tsize);
		if (r->bufs[c])
			mapped++;
	}
	free(pfns);
	if (!mapped) {
		snprintf(err, errlen, "xentrace: could map no CPU's trace buffer: %s", strerror(errno));
		goto fail;
	}
	r->xce = xenevtchn_open(NULL, 0);
	if (!r->xce) {
		snprintf(err, errlen, "xentrace: xenevtchn_open: %s", strerror(errno));
		goto fail;
	}
	r->port = xenevtchn_bind_virq(r->xce, VIRQ_TBUF);
	if (r->port < 0) {
		snprintf(err, errlen, "xentrace: cannot bind VIRQ_TBUF: %s", strerror(errno));
		goto fail;
	}
	*ncpu = r->ncpu;
	return r;
fail:
	real_close(r);
	return NULL;
}

static struct t_buf *real_buf(void *v, unsigned cpu)
{
	struct xt_real *r = v;
	return cpu < r->ncpu ? r->bufs[cpu] : NULL;
}

static int real_ack(void *v)
{
	struct xt_real *r = v;
	struct pollfd pfd = {.fd = xenevtchn_fd(r->xce), .events = POLLIN};
	if (poll(&pfd, 1, 0) <= 0)
		return 0;
	xenevtchn_port_or_error_t p = xenevtchn_pending(r->xce);
	if (p < 0)
		return 0;
	xenevtchn_unmask(r->xce, (evtchn_port_t)p);
	return 1;
}

const struct xgpu_xt_ops xgpu_xt_real = {
    .open = real_open,
    .close = real_close,
    .buf = real_buf,
    .ack = real_ack,
};
