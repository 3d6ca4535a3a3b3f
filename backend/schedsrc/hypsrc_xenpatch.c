/* SPDX-License-Identifier: Apache-2.0 */
/* hypsrc_xenpatch.c - the `xenpatch` hypervisor schedule source: the
 * schedule the patched Xen credit scheduler exports (xen-sched-patch/),
 * read from pages mapped once, so a refresh costs no hypercall.
 *
 * Same semantics as `xen` and `sim`: tracked ids are Xen domids; each
 * refresh gives, per PCPU, the tracked VCPU running there (running, with the
 * credit it has left) and the tracked VCPUs at the head of its run queue
 * (upcoming, in run-queue order), which is what augc weighs; idle and
 * untracked domains are left out. Weight and cap come from the domain
 * slots, as of the last refresh or track (which reads the pages too, so a
 * domain's weight is known as soon as it is added); a domain without a slot
 * is unknown (-1). seq changes whenever an
 * entry (credit included) or a tracked domain's weight does. A record the
 * reader could not copy consistently keeps its last copy (the reader
 * reports it stale).
 *
 * When the export is absent (no privcmd, an unpatched or non-credit Xen),
 * open says so in a log line and falls back to the stock `xen` source,
 * whose ops then serve every call. */
#include "hypsrc_xenpatch.h"
#include "log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct xp_dom {
	uint32_t domid;
	bool known;
	uint32_t weight, cap;
};

struct xp_src {
	struct xgpu_schedexp_reader *r;
	struct xgpu_hyp *fb; /* the `xen` source when the export is absent */
	struct xgpu_schedexp_snapshot *snap;
	struct xgpu_hyp_domset doms; /* struct xp_dom, sorted by domid */
	bool warned_stale;
	bool weights_dirty;             /* weights changed outside a refresh (track) */
	struct xgpu_hyp_published view; /* what the last refresh published */
};

static struct xp_src *P(struct xgpu_hyp *h)
{
	return (struct xp_src *)h;
}

static struct xp_dom *dom_find(struct xp_src *s, uint32_t domid)
{
	return xgpu_hyp_domset_find(&s->doms, domid);
}

static int args_ok(const char *args, char *err, size_t errlen)
{
	if (args && *args) {
		snprintf(err, errlen, "xenpatch: takes no arguments (got '%s')", args);
		return -1;
	}
	return 0;
}

static int with_reader(struct xgpu_schedexp_reader *r, struct xgpu_hyp **out, char *err, size_t errlen)
{
	struct xp_src *s = calloc(1, sizeof *s);
	if (s)
		s->snap = calloc(1, sizeof *s->snap);
	if (!s || !s->snap) {
		if (s)
			free(s);
		xgpu_schedexp_close(r);
		snprintf(err, errlen, "xenpatch: out of memory");
		return -1;
	}
	s->r = r;
	s->doms.elem_size = sizeof(struct xp_dom);
	const struct xgpu_schedexp_header *h = xgpu_schedexp_header(r);
	xlog_info(
	    "xenpatch: reading the credit scheduler's export: %u PCPUs, %u domain slots, %u frames, tick "
	    "%u us, slice %u us",
	    h->npcpus, h->ndoms, h->nr_frames, h->tick_us, h->tslice_us);
	*out = (struct xgpu_hyp *)s;
	return 0;
}

int xgpu_hyp_xenpatch_open_with(const struct xgpu_schedexp_map_ops *map, void *ctx,
				const struct xgpu_xenctl_ops *xenctl, const char *args, struct xgpu_hyp **out,
				char *err, size_t errlen)
{
	if (args_ok(args, err, errlen))
		return -1;
	bool absent = false;
	char why[512];
	struct xgpu_schedexp_reader *r = xgpu_schedexp_open_with(map, ctx, &absent, why, sizeof why);
	if (r)
		return with_reader(r, out, err, errlen);
	if (!absent) {
		snprintf(err, errlen, "xenpatch: %s", why);
		return -1;
	}
	xlog_warn("xenpatch: %s; falling back to the stock `xen` source (libxenctrl polling: running VCPUs "
		  "only, no run queues or credit)",
		  why);
	struct xp_src *s = calloc(1, sizeof *s);
	if (!s) {
		snprintf(err, errlen, "xenpatch: out of memory");
		return -1;
	}
	s->doms.elem_size = sizeof(struct xp_dom);
	char fberr[512];
	if (xgpu_hyp_xen_open_with(xenctl, NULL, &s->fb, fberr, sizeof fberr)) {
		snprintf(err, errlen, "xenpatch: %s; and the fallback failed too: %s", why, fberr);
		free(s);
		return -1;
	}
	*out = (struct xgpu_hyp *)s;
	return 0;
}

int xgpu_hyp_xenpatch_open_mem(const void *base, size_t len, struct xgpu_hyp **out, char *err, size_t errlen)
{
	char why[512];
	struct xgpu_schedexp_reader *r = xgpu_schedexp_open_mem(base, len, why, sizeof why);
	if (!r) {
		snprintf(err, errlen, "xenpatch: %s", why);
		return -1;
	}
	return with_reader(r, out, err, errlen);
}

bool xgpu_hyp_xenpatch_fell_back(struct xgpu_hyp *h)
{
	return P(h)->fb != NULL;
}

static int xp_open(const char *args, struct xgpu_hyp **out, char *err, size_t errlen)
{
	return xgpu_hyp_xenpatch_open_with(&xgpu_schedexp_map_real, NULL, &xgpu_xenctl_real, args, out, err,
					   errlen);
}

static void xp_close(struct xgpu_hyp *h)
{
	struct xp_src *s = P(h);
	if (!s)
		return;
	if (s->fb)
		xgpu_hyp_xen.close(s->fb);
	xgpu_schedexp_close(s->r);
	free(s->snap);
	xgpu_hyp_domset_free(&s->doms);
	free(s);
}

static bool weights(struct xp_src *s);

static void xp_track(struct xgpu_hyp *h, uint32_t domid)
{
	struct xp_src *s = P(h);
	if (s->fb) {
		xgpu_hyp_xen.track(s->fb, domid);
		return;
	}
	if (xgpu_hyp_domset_add(&s->doms, domid) <= 0)
		return;
	/* Its weight from now, as `sim` answers at once: a read costs no
	 * hypercall. */
	xgpu_schedexp_read(s->r, s->snap);
	s->weights_dirty |= weights(s);
}

static void xp_untrack(struct xgpu_hyp *h, uint32_t domid)
{
	struct xp_src *s = P(h);
	if (s->fb) {
		xgpu_hyp_xen.untrack(s->fb, domid);
		return;
	}
	xgpu_hyp_domset_remove(&s->doms, domid);
}

/* Xen's VCPUs belong to Xen domains, not to processes. */
static void xp_set_pids(struct xgpu_hyp *h, uint32_t domid, const pid_t *pids, unsigned n)
{
}

static void add(struct xp_src *s, struct xgpu_hyp_snapshot *snap, unsigned *n,
		const struct xgpu_schedexp_unit *u, uint32_t pcpu, bool running)
{
	if (*n >= XGPU_HYP_MAX_ENTRIES || u->domid == XGPU_SCHEDEXP_DOMID_IDLE || !dom_find(s, u->domid))
		return;
	snap->e[(*n)++] = (struct xgpu_hyp_entry){
	    .domid = u->domid, .vcpu = u->vcpu, .pcpu = pcpu, .credit = u->credit, .running = running};
}

static bool weights(struct xp_src *s)
{
	const struct xgpu_schedexp_snapshot *x = s->snap;
	unsigned ndoms = x->hdr.ndoms;
	bool changed = false;
	for (size_t i = 0; i < s->doms.n; i++) {
		struct xp_dom *d = (struct xp_dom *)s->doms.v + i;
		unsigned slot = ndoms ? d->domid % ndoms : 0;
		bool known = ndoms && x->dom_valid[slot] && x->dom[slot].domid == d->domid;
		if (!known) {
			changed |= d->known;
			d->known = false;
			continue;
		}
		uint32_t w = x->dom[slot].weight, cap = x->dom[slot].cap;
		changed |= !d->known || d->weight != w || d->cap != cap;
		d->known = true;
		d->weight = w;
		d->cap = cap;
	}
	return changed;
}

static int xp_refresh(struct xgpu_hyp *h, uint64_t now_ns, struct xgpu_hyp_snapshot *snap)
{
	struct xp_src *s = P(h);
	if (s->fb)
		return xgpu_hyp_xen.refresh(s->fb, now_ns, snap);
	struct xgpu_schedexp_snapshot *x = s->snap;
	xgpu_schedexp_read(s->r, x);
	if (x->stale && !s->warned_stale)
		xlog_warn("xenpatch: %u records of the export could not be read consistently in %u tries (or "
			  "were invalid: %u); using their last copies",
			  x->stale, XGPU_SCHEDEXP_RETRIES, x->invalid);
	s->warned_stale = x->stale != 0;
	unsigned n = 0;
	for (unsigned p = 0; p < x->hdr.npcpus && p < XGPU_SCHEDEXP_MAX_PCPUS; p++) {
		if (!x->pcpu_valid[p])
			continue;
		const struct xgpu_schedexp_pcpu *rec = &x->pcpu[p];
		add(s, snap, &n, &rec->cur, p, true);
		for (unsigned i = 0; i < rec->nrunq && i < XGPU_SCHEDEXP_RUNQ; i++)
			add(s, snap, &n, &rec->runq[i], p, false);
	}
	bool changed = weights(s) || s->weights_dirty;
	s->weights_dirty = false;
	xgpu_hyp_publish(&s->view, snap, n, changed, now_ns);
	return 0;
}

static int xp_weight(struct xgpu_hyp *h, uint32_t domid, uint32_t *weight, uint32_t *cap)
{
	struct xp_src *s = P(h);
	if (s->fb)
		return xgpu_hyp_xen.weight(s->fb, domid, weight, cap);
	const struct xp_dom *d = dom_find(s, domid);
	if (!d || !d->known)
		return -1;
	if (weight)
		*weight = d->weight;
	if (cap)
		*cap = d->cap;
	return 0;
}

const struct xgpu_hyp_ops xgpu_hyp_xenpatch = {
    .name = "xenpatch",
    .description = "patched Xen credit scheduler's exported schedule (xen-sched-patch/): running and "
		   "queued VCPUs with credit, weights and caps, no hypercall per tick; falls back to `xen`",
    .open = xp_open,
    .close = xp_close,
    .track = xp_track,
    .untrack = xp_untrack,
    .set_pids = xp_set_pids,
    .refresh = xp_refresh,
    .weight = xp_weight,
};
