/* SPDX-License-Identifier: Apache-2.0 */
/* domain.c - the domain registry: a domain is a guest VM (or, in local mode,
 * a group of processes named by XGPU_DOMAIN, by default one per user). Each
 * is bound to one GPU when it is created; while it has processes, an
 * executor of its own serves them (executors.c). */
#include "config.h"
#include "executors.h"
#include "state.h"
#include "xenif.h"
#include "log.h"
#include "scheduler.h"
#include "util.h"
#include "fdpass.h"
#include "domain.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static bool valid_name(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n >= XGPU_DOMAIN_NAME_MAX)
		return false;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && !strchr("_.:-", *s))
			return false;
	return true;
}

/* A GPU's throughput as Pegasus's accelerator profile sees it: SMs times
 * clock (both from the device's attributes; 1 if the driver gives neither). */
static double capability(const struct xgpu_gpu *g)
{
	double sms = g->attrs[CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT];
	double khz = g->attrs[CU_DEVICE_ATTRIBUTE_CLOCK_RATE];
	return sms > 0 && khz > 0 ? sms * khz : 1.0;
}

/* The allowed GPU that would give the new domain the most capability:
 * capability / (bound domains + 1), so a GPU twice as fast takes twice the
 * domains; more memory breaks ties (Pegasus's accelerator queue ordered by
 * profile and load). NULL if none is allowed. */
static struct xgpu_gpu *pick_gpu(struct xgpud *d, uint64_t allowed)
{
	struct xgpu_gpu *best = NULL;
	double best_score = 0;
	for (int i = 0; i < d->ngpus && i < 64; i++) {
		if (!(allowed >> i & 1))
			continue;
		struct xgpu_gpu *g = &d->gpus[i];
		double score = capability(g) / (double)(atomic_load(&g->ndomains) + 1);
		if (!best || score > best_score * 1.0000001 ||
		    (score >= best_score * 0.9999999 && g->total_mem > best->total_mem)) {
			best = g;
			best_score = score;
		}
	}
	return best;
}

/* domid 0: the next local one. xen: domid is a Xen guest's. spec: the
 * domain's settings (a Xen domain's from xenstore), or NULL for its --config
 * entry. */
static struct xgpud_domain *domain_create(struct xgpud *d, const char *name, uid_t uid, uint32_t domid, bool xen,
					 const struct xgpu_gpuspec *spec, char *err, size_t errlen)
{
	struct xgpud_domain *dom = calloc(1, sizeof *dom);
	if (!dom) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	dom->d = d;
	snprintf(dom->name, sizeof dom->name, "%s", name);
	dom->owner_uid = uid;
	/* Settings for this domain from --config, else the defaults. */
	bool from_config = !spec;
	if (!spec)
		spec = d->conf ? xgpud_config_domain(d->conf, name) : NULL;
	dom->allowed_gpus = spec && spec->has_gpus ? spec->gpus : ~UINT64_C(0);
	dom->gpu = pick_gpu(d, dom->allowed_gpus);
	if (!dom->gpu) {
		snprintf(err, errlen,
			 "domain %s may use no GPU this daemon has (--config gpus=; %d GPU%s here)", name,
			 d->ngpus, d->ngpus == 1 ? "" : "s");
		free(dom);
		return NULL;
	}
	dom->domid = domid ? domid : ++d->next_domid;
	dom->xen = xen;
	uint64_t mem = spec && spec->has_mem ? spec->mem : d->o.mem_limit;
	dom->mem_default = !(spec && spec->has_mem);
	if (!mem || mem > dom->gpu->total_mem)
		mem = dom->gpu->total_mem;
	atomic_init(&dom->mem_limit, mem);
	dom->sd.owner = dom;
	dom->sd.domid = dom->domid;
	dom->sd.name = dom->name;
	dom->sd.credit = spec && spec->has_credit ? spec->credit : XGPU_CREDIT_DEFAULT;
	dom->sd.sla = spec && spec->has_sla ? spec->sla : 0;
	dom->spec = spec;
	atomic_init(&dom->kernel_timeout_s,
		    spec && spec->has_ktimeout ? spec->ktimeout : d->o.kernel_timeout_s);
	xgpu_ratelimit_init(&dom->log_rl, 50, 10000);
	atomic_fetch_add(&dom->gpu->ndomains, 1);
	char lim[32];
	xgpu_format_size(mem, lim, sizeof lim);
	xlog_info(
	    "domain %s (domid %u, uid %u) created on GPU %d (%s): credit %u, SLO %.2f, memory limit %s%s",
	    dom->name, dom->domid, (unsigned)uid, dom->gpu->index, dom->gpu->name, dom->sd.credit,
	    dom->sd.sla, lim,
	    spec && from_config ? " (from --config)"
	    : spec              ? " (from xenstore)"
				: "");
	return dom;
}

/* The uid N of a name "uid-N", or -1 for other names. */
static long reserved_uid(const char *name)
{
	long n;
	if (strncmp(name, "uid-", 4) || xgpu_parse_long(name + 4, 0, UINT32_MAX, &n) < 0)
		return -1;
	return n;
}

static uint32_t domains_of(struct xgpud *d, uid_t uid)
{
	uint32_t n = 0;
	for (struct xgpud_domain *dom = d->domains; dom; dom = dom->next)
		n += dom->owner_uid == uid;
	return n;
}

struct xgpud_domain *xgpu_domain_get(struct xgpud *d, const char *name, uid_t uid, char *err, size_t errlen)
{
	char dflt[32];
	if (!name || !*name) {
		snprintf(dflt, sizeof dflt, "uid-%u", (unsigned)uid);
		name = dflt;
	}
	if (!valid_name(name)) {
		snprintf(err, errlen,
			 "domain name '%.64s' is not 1-63 characters of letters, digits, '_', '.', ':', '-'",
			 name);
		return NULL;
	}
	/* uid-N is N's default domain: nobody else may create it first and
	 * have N's processes land in a context shared with theirs. */
	long owner = reserved_uid(name);
	if (owner >= 0 && (uid_t)owner != uid && uid != 0) {
		snprintf(err, errlen, "domain %s is reserved for uid %ld", name, owner);
		return NULL;
	}
	pthread_mutex_lock(&d->domains_lock);
	struct xgpud_domain *dom = d->domains;
	while (dom && strcmp(dom->name, name))
		dom = dom->next;
	if (dom && dom->xen) {
		/* Its channels come through xenbus (xenbus.c). */
		snprintf(err, errlen, "domain %s is a Xen guest; local processes may not join it", name);
		dom = NULL;
	} else if (dom && uid != dom->owner_uid && uid != 0) {
		snprintf(err, errlen, "domain %s belongs to uid %u", name, (unsigned)dom->owner_uid);
		dom = NULL;
	} else if (!dom && atomic_load(&d->stopping)) {
		snprintf(err, errlen, "xgpud is stopping");
	} else if (!dom && d->ndomains >= d->o.max_domains) {
		snprintf(err, errlen, "xgpud already serves %u domains", d->o.max_domains);
	} else if (!dom && uid != 0 && domains_of(d, uid) >= d->o.max_domains_per_uid) {
		snprintf(err, errlen, "uid %u already owns %u domains", (unsigned)uid,
			 d->o.max_domains_per_uid);
	} else if (!dom) {
		dom = domain_create(d, name, owner >= 0 ? (uid_t)owner : uid, 0, false, NULL, err, errlen);
		if (dom) {
			dom->next = d->domains;
			d->domains = dom;
			d->ndomains++;
		}
	}
	pthread_mutex_unlock(&d->domains_lock);
	return dom;
}

struct xgpud_domain *xgpu_domain_get_xen(struct xgpud *d, uint32_t domid, const char *name,
					const struct xgpu_gpuspec *spec, char *err, size_t errlen)
{
	char dflt[32];
	snprintf(dflt, sizeof dflt, "dom%u", (unsigned)domid);
	pthread_mutex_lock(&d->domains_lock);
	struct xgpud_domain *dom = d->domains;
	while (dom && !(dom->xen && dom->domid == domid))
		dom = dom->next;
	if (!dom) {
		/* A guest's name is the toolstack's, but another domain may hold
		 * it (a local one, or a Xen domain that died and came back):
		 * then the domid names it. */
		bool taken = !name || !valid_name(name);
		for (struct xgpud_domain *o = d->domains; o && !taken; o = o->next)
			taken = !strcmp(o->name, name);
		if (taken)
			name = dflt;
		for (struct xgpud_domain *o = d->domains; o && name == dflt; o = o->next)
			if (!strcmp(o->name, name)) {
				snprintf(err, errlen, "a domain named %s exists already", name);
				pthread_mutex_unlock(&d->domains_lock);
				return NULL;
			}
		if (atomic_load(&d->stopping)) {
			snprintf(err, errlen, "xgpud is stopping");
		} else if (d->ndomains >= d->o.max_domains) {
			snprintf(err, errlen, "xgpud already serves %u domains", d->o.max_domains);
		} else {
			dom = domain_create(d, name, 0, domid, true, spec, err, errlen);
			if (dom) {
				dom->next = d->domains;
				d->domains = dom;
				d->ndomains++;
			}
		}
	}
	pthread_mutex_unlock(&d->domains_lock);
	return dom;
}

int xgpu_domain_restore(struct xgpud *d, const struct xgpu_state_record *r)
{
	char err[256];
	int r_ok = -1;
	pthread_mutex_lock(&d->domains_lock);
	bool taken = false;
	for (struct xgpud_domain *o = d->domains; o && !taken; o = o->next)
		taken = o->domid == r->domid || !strcmp(o->name, r->name);
	struct xgpud_domain *dom = NULL;
	if (taken)
		snprintf(err, sizeof err, "a domain with its name or domid exists already");
	else if (!valid_name(r->name) || !r->domid)
		snprintf(err, sizeof err, "its name or domid is not valid");
	else
		dom = domain_create(d, r->name, r->owner_uid, r->domid, r->xen, NULL, err, sizeof err);
	if (dom) {
		/* The settings as the operator left them, not as the
		 * defaults would make them. */
		if (r->gpu < d->ngpus && r->gpu != dom->gpu->index) {
			atomic_fetch_sub(&dom->gpu->ndomains, 1);
			dom->gpu = &d->gpus[r->gpu];
			atomic_fetch_add(&dom->gpu->ndomains, 1);
		}
		if (r->credit >= XGPU_CREDIT_MIN && r->credit <= XGPU_CREDIT_MAX)
			dom->sd.credit = r->credit;
		if (r->sla >= 0 && r->sla <= 1)
			dom->sd.sla = r->sla;
		if (r->mem_limit && r->mem_limit <= dom->gpu->total_mem)
			atomic_store(&dom->mem_limit, r->mem_limit);
		dom->mem_default = r->mem_default;
		atomic_store(&dom->kernel_timeout_s, r->kernel_timeout_s);
		dom->adopt_pid = r->executor_pid;
		xgpu_state_apply(r, dom);
		dom->next = d->domains;
		d->domains = dom;
		d->ndomains++;
		if (!r->xen && r->domid > d->next_domid && r->domid < XGPU_XEN_DOMID_MAX)
			d->next_domid = r->domid;
		r_ok = 0;
	}
	pthread_mutex_unlock(&d->domains_lock);
	if (r_ok < 0)
		xlog_warn("domain %s (domid %u) of the previous xgpud not restored: %s", r->name, r->domid, err);
	return r_ok;
}

void xgpu_domain_remove(struct xgpud *d, struct xgpud_domain *dom)
{
	pthread_mutex_lock(&d->domains_lock);
	struct xgpud_domain **pp = &d->domains;
	while (*pp && *pp != dom)
		pp = &(*pp)->next;
	bool found = *pp != NULL;
	if (found) {
		*pp = dom->next;
		d->ndomains--;
	}
	pthread_mutex_unlock(&d->domains_lock);
	if (!found)
		return;
	xlog_info("domain %s (domid %u) removed", dom->name, dom->domid);
	xgpu_executors_forget(dom);
	atomic_fetch_sub(&dom->gpu->ndomains, 1);
	pthread_mutex_destroy(&dom->log_rl.lock);
	free(dom);
}

int xgpu_domain_add_channel(struct xgpud_domain *dom, struct xgpud_handover *h, char *err, size_t errlen)
{
	if (atomic_load(&dom->d->stopping)) {
		xgpu_close_fds(h->fds, h->nfds);
		snprintf(err, errlen, "xgpud is stopping");
		return -1;
	}
	return xgpu_executors_add_channel(dom, h, err, errlen);
}

void xgpu_domain_free_all(struct xgpud *d)
{
	pthread_mutex_lock(&d->domains_lock);
	struct xgpud_domain *list = d->domains;
	d->domains = NULL;
	d->ndomains = 0;
	pthread_mutex_unlock(&d->domains_lock);
	while (list) {
		struct xgpud_domain *next = list->next;
		atomic_fetch_sub(&list->gpu->ndomains, 1);
		pthread_mutex_destroy(&list->log_rl.lock);
		free(list);
		list = next;
	}
}
