/* SPDX-License-Identifier: Apache-2.0 */
/* hypsrc_xen.c - the `xen` hypervisor schedule source for stock Xen, polled
 * through libxenctrl on every refresh (every scheduler tick): each tracked
 * domain's weight and cap from its credit scheduler (credit2 when the host
 * runs that), and which of its VCPUs are on a PCPU now (xc_vcpu_getinfo).
 * Tracked ids are Xen domids. Stock Xen exports neither run queues nor
 * credit, so entries are running VCPUs only, with credit 0.
 *
 * Domains come and go under us: one that no longer exists (or is dying)
 * drops out of the snapshot and its weight becomes unknown until it is back;
 * a call that fails otherwise keeps the last weight and skips that VCPU. A
 * refresh fails (the scheduler keeps its previous snapshot) only when the
 * hypervisor answered for no tracked domain at all.
 *
 * The hypervisor calls sit behind struct xgpu_xenctl_ops (hypsrc_xen.h) so
 * tests can run this source against a fake hypervisor. */
#include "hypsrc_xen.h"
#include "log.h"
#include "util.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <xenctrl.h>

/* VCPUs looked at per domain and refresh: bounds the hypercalls a domain
 * with a huge max_vcpus costs each tick (HVM guests have at most 128). */
#define XEN_SRC_MAX_VCPUS 512u

struct xen_dom {
	uint32_t domid;
	bool present;      /* existed and was not dying at the last refresh */
	bool weight_known; /* read at least once while present */
	uint32_t weight, cap;
	bool warned_gone, warned_weight;
};

struct xen_src {
	const struct xgpu_xenctl_ops *ops;
	void *x;
	int sched;                   /* XGPU_XEN_SCHED_CREDIT(2), or another: weights unknown */
	struct xgpu_hyp_domset doms; /* struct xen_dom, sorted by domid */
	bool warned_down;
	struct xgpu_hyp_published view; /* what the last refresh published */
};

static struct xen_src *X(struct xgpu_hyp *h)
{
	return (struct xen_src *)h;
}

static struct xen_dom *dom_find(struct xen_src *s, uint32_t domid)
{
	return xgpu_hyp_domset_find(&s->doms, domid);
}

static const char *sched_name(int id)
{
	switch (id) {
	case 7:
		return "arinc653";
	case 8:
		return "rtds";
	case 9:
		return "null";
	default:
		return "unknown";
	}
}

int xgpu_hyp_xen_open_with(const struct xgpu_xenctl_ops *ops, const char *args, struct xgpu_hyp **out,
			   char *err, size_t errlen)
{
	if (args && *args) {
		snprintf(err, errlen, "xen: takes no arguments (got '%s')", args);
		return -1;
	}
	struct xen_src *s = calloc(1, sizeof *s);
	if (!s) {
		snprintf(err, errlen, "xen: out of memory");
		return -1;
	}
	s->doms.elem_size = sizeof(struct xen_dom);
	s->ops = ops;
	s->x = ops->open(err, errlen);
	if (!s->x) {
		free(s);
		return -1;
	}
	if (ops->sched_id(s->x, &s->sched)) {
		snprintf(err, errlen, "xen: cannot ask Xen which CPU scheduler it runs (xc_sched_id): %s",
			 strerror(errno));
		ops->close(s->x);
		free(s);
		return -1;
	}
	if (s->sched == XGPU_XEN_SCHED_CREDIT2)
		xlog_info("xen: the host runs the credit2 scheduler; CPU weights and caps come from "
			  "xc_sched_credit2_domain_get");
	else if (s->sched != XGPU_XEN_SCHED_CREDIT)
		xlog_warn("xen: the host runs Xen's %s scheduler (id %d), neither credit nor credit2: no CPU "
			  "weights, policies use each domain's accelerator credit instead",
			  sched_name(s->sched), s->sched);
	*out = (struct xgpu_hyp *)s;
	return 0;
}

static int xen_open(const char *args, struct xgpu_hyp **out, char *err, size_t errlen)
{
	return xgpu_hyp_xen_open_with(&xgpu_xenctl_real, args, out, err, errlen);
}

static void xen_close(struct xgpu_hyp *h)
{
	struct xen_src *s = X(h);
	if (!s)
		return;
	s->ops->close(s->x);
	xgpu_hyp_domset_free(&s->doms);
	free(s);
}

static void xen_track(struct xgpu_hyp *h, uint32_t domid)
{
	xgpu_hyp_domset_add(&X(h)->doms, domid);
}

static void xen_untrack(struct xgpu_hyp *h, uint32_t domid)
{
	xgpu_hyp_domset_remove(&X(h)->doms, domid);
}

/* Xen's VCPUs belong to Xen domains, not to processes. */
static void xen_set_pids(struct xgpu_hyp *h, uint32_t domid, const pid_t *pids, unsigned n)
{
}

static void dom_gone(struct xen_dom *d, const char *why)
{
	if (d->present || !d->warned_gone)
		xlog_info("xen: domain %u %s; it has no CPU weight or running VCPUs until it is back",
			  d->domid, why);
	d->warned_gone = true;
	d->present = false;
	d->weight_known = false;
}

static bool weight_of(struct xen_src *s, struct xen_dom *d)
{
	if (s->sched != XGPU_XEN_SCHED_CREDIT && s->sched != XGPU_XEN_SCHED_CREDIT2)
		return false;
	uint32_t w, cap;
	if (s->ops->sched_get(s->x, s->sched, d->domid, &w, &cap)) {
		if (!d->warned_weight)
			xlog_warn("xen: domain %u: cannot read its CPU weight (%s): %s%s", d->domid,
				  s->sched == XGPU_XEN_SCHED_CREDIT2 ? "xc_sched_credit2_domain_get"
								     : "xc_sched_credit_domain_get",
				  strerror(errno), d->weight_known ? "; keeping the last one" : "");
		d->warned_weight = true;
		return false;
	}
	d->warned_weight = false;
	bool changed = !d->weight_known || d->weight != w || d->cap != cap;
	d->weight = w;
	d->cap = cap;
	d->weight_known = true;
	return changed;
}

static int xen_refresh(struct xgpu_hyp *h, uint64_t now_ns, struct xgpu_hyp_snapshot *snap)
{
	struct xen_src *s = X(h);
	unsigned n = 0, answered = 0;
	bool weights_changed = false;
	int last_errno = 0;
	for (size_t i = 0; i < s->doms.n; i++) {
		struct xen_dom *d = (struct xen_dom *)s->doms.v + i;
		bool dying = false;
		uint32_t max_vcpu = UINT32_MAX;
		if (s->ops->domain(s->x, d->domid, &dying, &max_vcpu)) {
			if (errno == ESRCH) {
				answered++;
				if (d->present || !d->warned_gone)
					weights_changed = true;
				dom_gone(d, "does not exist");
			} else {
				last_errno = errno;
			}
			continue;
		}
		answered++;
		if (dying) {
			if (d->present || !d->warned_gone)
				weights_changed = true;
			dom_gone(d, "is dying");
			continue;
		}
		if (!d->present) {
			d->present = true;
			d->warned_gone = false;
			weights_changed = true;
		}
		weights_changed |= weight_of(s, d);
		uint32_t nv = max_vcpu == UINT32_MAX ? 0 : max_vcpu + 1;
		if (nv > XEN_SRC_MAX_VCPUS)
			nv = XEN_SRC_MAX_VCPUS;
		for (uint32_t v = 0; v < nv && n < XGPU_HYP_MAX_ENTRIES; v++) {
			bool online = false, running = false;
			uint32_t pcpu = 0;
			if (s->ops->vcpu(s->x, d->domid, v, &online, &running, &pcpu))
				continue; /* a VCPU being hot-unplugged, or the domain going: next time */
			if (!online || !running)
				continue;
			snap->e[n++] = (struct xgpu_hyp_entry){
			    .domid = d->domid, .vcpu = v, .pcpu = pcpu, .credit = 0, .running = true};
		}
	}
	if (s->doms.n && !answered) {
		if (!s->warned_down)
			xlog_warn(
			    "xen: the hypervisor answered for none of %zu domains: %s; keeping the last "
			    "schedule",
			    s->doms.n, strerror(last_errno));
		s->warned_down = true;
		errno = last_errno;
		return -1;
	}
	s->warned_down = false;
	xgpu_hyp_publish(&s->view, snap, n, weights_changed, now_ns);
	return 0;
}

static int xen_weight(struct xgpu_hyp *h, uint32_t domid, uint32_t *weight, uint32_t *cap)
{
	const struct xen_dom *d = dom_find(X(h), domid);
	if (!d || !d->present || !d->weight_known)
		return -1;
	if (weight)
		*weight = d->weight;
	if (cap)
		*cap = d->cap;
	return 0;
}

const struct xgpu_hyp_ops xgpu_hyp_xen = {
    .name = "xen",
    .description =
	"stock Xen via libxenctrl: credit/credit2 weights and caps, running VCPUs, polled each tick",
    .open = xen_open,
    .close = xen_close,
    .track = xen_track,
    .untrack = xen_untrack,
    .set_pids = xen_set_pids,
    .refresh = xen_refresh,
    .weight = xen_weight,
};

/* ---- over libxenctrl ---------------------------------------------------------- */

static void quiet_vmessage(struct xentoollog_logger *lg, xentoollog_level level, int errnoval,
			   const char *context, const char *format, va_list al)
{
	if (!xgpu_log_enabled(XGPU_LOG_DEBUG))
		return;
	char msg[512];
	vsnprintf(msg, sizeof msg, format, al);
	xgpu_log(XGPU_LOG_DEBUG, "libxenctrl %s: %s%s%s", context ? context : "", msg,
		 errnoval >= 0 ? ": " : "", errnoval >= 0 ? strerror(errnoval) : "");
}

static void quiet_destroy(struct xentoollog_logger *lg)
{
}

/* libxenctrl logs to stderr by default; xgpud's message is the one to read. */
static struct xentoollog_logger quiet_logger = {.vmessage = quiet_vmessage, .destroy = quiet_destroy};

static bool exists(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0;
}

static void *real_open(char *err, size_t errlen)
{
	xc_interface *xch = xc_interface_open(&quiet_logger, &quiet_logger, 0);
	if (xch)
		return xch;
	int e = errno;
	if (!exists("/dev/xen/privcmd") && !exists("/proc/xen/privcmd"))
		snprintf(err, errlen,
			 "xen: cannot open the Xen control interface: neither /dev/xen/privcmd nor "
			 "/proc/xen/privcmd exists: not running in a Xen dom0 (run xgpud in dom0 with the "
			 "xen-privcmd module loaded or xenfs mounted on /proc/xen; or choose another "
			 "--hyp-source)");
	else
		snprintf(
		    err, errlen,
		    "xen: cannot open the Xen control interface (/dev/xen/privcmd, /proc/xen/privcmd): %s "
		    "(run xgpud as root in dom0)",
		    strerror(e ? e : EIO));
	return NULL;
}

static void real_close(void *x)
{
	xc_interface_close(x);
}

static int real_sched_id(void *x, int *id)
{
	return xc_sched_id(x, id);
}

static int real_sched_get(void *x, int sched, uint32_t domid, uint32_t *weight, uint32_t *cap)
{
	int rc;
	if (sched == XGPU_XEN_SCHED_CREDIT2) {
		struct xen_domctl_sched_credit2 c = {0};
		rc = xc_sched_credit2_domain_get(x, domid, &c);
		*weight = c.weight;
		*cap = c.cap;
	} else {
		struct xen_domctl_sched_credit c = {0};
		rc = xc_sched_credit_domain_get(x, domid, &c);
		*weight = c.weight;
		*cap = c.cap;
	}
	return rc ? -1 : 0;
}

/* Xen 4.17 has no xc_domain_getinfo_single: the list from domid on, one
 * entry long, is this domain only if the first id matches. */
static int real_domain(void *x, uint32_t domid, bool *dying, uint32_t *max_vcpu_id)
{
	xc_domaininfo_t info;
	memset(&info, 0, sizeof info);
	int n = xc_domain_getinfolist(x, domid, 1, &info);
	if (n < 0)
		return -1;
	if (n == 0 || info.domain != domid) {
		errno = ESRCH;
		return -1;
	}
	*dying = (info.flags & XEN_DOMINF_dying) != 0;
	*max_vcpu_id = info.max_vcpu_id;
	return 0;
}

static int real_vcpu(void *x, uint32_t domid, uint32_t vcpu, bool *online, bool *running, uint32_t *pcpu)
{
	xc_vcpuinfo_t info;
	memset(&info, 0, sizeof info);
	if (xc_vcpu_getinfo(x, domid, vcpu, &info))
		return -1;
	*online = info.online;
	*running = info.running;
	*pcpu = info.cpu;
	return 0;
}

const struct xgpu_xenctl_ops xgpu_xenctl_real = {
    .open = real_open,
    .close = real_close,
    .sched_id = real_sched_id,
    .sched_get = real_sched_get,
    .domain = real_domain,
    .vcpu = real_vcpu,
};
