/* SPDX-License-Identifier: Apache-2.0 */
/* domain.c - the domain registry: a domain is a guest VM (or, in local mode,
 * a group of processes named by XGPU_DOMAIN, by default one per user). Each
 * is bound to one GPU when it is created and gets its own aVCPU poller. */
#include "config.h"
#include "log.h"
#include "scheduler.h"
#include "util.h"
#include "domain.h"
#include "poller.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
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

static void wake_poller(struct xgpu_sched_dom *sd)
{
	xgpu_domain_wake(sd->owner);
}

/* domid 0: the next local one. spec: the domain's settings (a Xen domain's
 * from xenstore), or NULL for its --config entry. */
static struct xgpu_domain *domain_create(struct xgpud *d, const char *name, uid_t uid, uint32_t domid,
					 const struct xgpu_gpuspec *spec, char *err, size_t errlen)
{
	struct xgpu_domain *dom = calloc(1, sizeof *dom);
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
	dom->xen = domid != 0;
	dom->mem_limit = spec && spec->has_mem ? spec->mem : d->o.mem_limit;
	if (!dom->mem_limit || dom->mem_limit > dom->gpu->total_mem)
		dom->mem_limit = dom->gpu->total_mem;
	dom->sd.owner = dom;
	dom->sd.domid = dom->domid;
	dom->sd.name = dom->name;
	dom->sd.wake = wake_poller;
	dom->sd.credit = spec && spec->has_credit ? spec->credit : XGPU_CREDIT_DEFAULT;
	dom->sd.sla = spec && spec->has_sla ? spec->sla : 0;
	dom->spec = spec;
	atomic_init(&dom->kernel_timeout_s,
		    spec && spec->has_ktimeout ? spec->ktimeout : d->o.kernel_timeout_s);
	xgpu_ratelimit_init(&dom->log_rl, 50, 10000);
	pthread_mutex_init(&dom->incoming_lock, NULL);
	pthread_mutex_init(&dom->wd_lock, NULL);
	dom->epfd = epoll_create1(EPOLL_CLOEXEC);
	dom->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
	if (dom->epfd < 0 || dom->wake_fd < 0 || epoll_ctl(dom->epfd, EPOLL_CTL_ADD, dom->wake_fd, &ev) < 0) {
		snprintf(err, errlen, "cannot create the domain's poller: %s", strerror(errno));
		if (dom->epfd >= 0)
			close(dom->epfd);
		if (dom->wake_fd >= 0)
			close(dom->wake_fd);
		pthread_mutex_destroy(&dom->incoming_lock);
		pthread_mutex_destroy(&dom->wd_lock);
		pthread_mutex_destroy(&dom->log_rl.lock);
		free(dom);
		return NULL;
	}
	xgpu_sched_add(dom->gpu->sched, &dom->sd, xgpu_now_ns());
	atomic_fetch_add(&dom->gpu->ndomains, 1);
	char lim[32];
	xgpu_format_size(dom->mem_limit, lim, sizeof lim);
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
	for (struct xgpu_domain *dom = d->domains; dom; dom = dom->next)
		n += dom->owner_uid == uid;
	return n;
}

struct xgpu_domain *xgpu_domain_get(struct xgpud *d, const char *name, uid_t uid, char *err, size_t errlen)
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
	struct xgpu_domain *dom = d->domains;
	while (dom && strcmp(dom->name, name))
		dom = dom->next;
	if (dom && dom->xen) {
		/* Its poller's life follows the guest's channels (xenbus.c). */
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
		dom = domain_create(d, name, owner >= 0 ? (uid_t)owner : uid, 0, NULL, err, errlen);
		if (dom) {
			dom->next = d->domains;
			d->domains = dom;
			d->ndomains++;
		}
	}
	pthread_mutex_unlock(&d->domains_lock);
	return dom;
}

struct xgpu_domain *xgpu_domain_get_xen(struct xgpud *d, uint32_t domid, const char *name,
					const struct xgpu_gpuspec *spec, char *err, size_t errlen)
{
	char dflt[32];
	snprintf(dflt, sizeof dflt, "dom%u", (unsigned)domid);
	pthread_mutex_lock(&d->domains_lock);
	struct xgpu_domain *dom = d->domains;
	while (dom && !(dom->xen && dom->domid == domid))
		dom = dom->next;
	if (!dom) {
		/* A guest's name is the toolstack's, but another domain may hold
		 * it (a local one, or a Xen domain that died and came back):
		 * then the domid names it. */
		bool taken = !name || !valid_name(name);
		for (struct xgpu_domain *o = d->domains; o && !taken; o = o->next)
			taken = !strcmp(o->name, name);
		if (taken)
			name = dflt;
		for (struct xgpu_domain *o = d->domains; o && name == dflt; o = o->next)
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
			dom = domain_create(d, name, 0, domid, spec, err, errlen);
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

void xgpu_domain_remove(struct xgpud *d, struct xgpu_domain *dom)
{
	pthread_mutex_lock(&d->domains_lock);
	struct xgpu_domain **pp = &d->domains;
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
	xgpu_domain_stop(dom);
	xgpu_domain_free(dom);
}

void xgpu_domain_wake(struct xgpu_domain *dom)
{
	uint64_t one = 1;
	if (write(dom->wake_fd, &one, sizeof one) < 0 && errno != EAGAIN)
		xlog_err("domain %s: cannot wake its poller: %s", dom->name, strerror(errno));
}

int xgpu_domain_add_channel(struct xgpu_domain *dom, struct xgpu_channel *ch)
{
	int r = 0;
	pthread_mutex_lock(&dom->incoming_lock);
	if (!dom->thread_running) {
		/* The previous poller found the domain empty and ended; it took
		 * no lock after saying so, so joining it here is quick. */
		if (dom->thread_started)
			pthread_join(dom->thread, NULL);
		dom->thread_started = false;
		if (atomic_load(&dom->d->stopping) ||
		    pthread_create(&dom->thread, NULL, xgpu_poller_main, dom)) {
			r = -1;
		} else {
			dom->thread_started = true;
			dom->thread_running = true;
		}
	}
	if (!r) {
		ch->next = dom->incoming;
		dom->incoming = ch;
		atomic_fetch_add(&dom->stats.channels, 1);
		atomic_fetch_add(&dom->stats.channels_total, 1);
	}
	pthread_mutex_unlock(&dom->incoming_lock);
	if (!r)
		xgpu_domain_wake(dom);
	return r;
}

void xgpu_domain_stop(struct xgpu_domain *dom)
{
	xgpu_domain_wake(dom);
	pthread_mutex_lock(&dom->incoming_lock);
	bool joinable = dom->thread_started;
	dom->thread_started = false;
	pthread_mutex_unlock(&dom->incoming_lock);
	if (joinable)
		pthread_join(dom->thread, NULL);
	xgpu_sched_remove(dom->gpu->sched, &dom->sd, xgpu_now_ns());
	atomic_fetch_sub(&dom->gpu->ndomains, 1);
}

void xgpu_domain_free(struct xgpu_domain *dom)
{
	xgpu_objtab_free(&dom->objs);
	xgpu_memmap_free(&dom->mem);
	close(dom->epfd);
	close(dom->wake_fd);
	pthread_mutex_destroy(&dom->incoming_lock);
	pthread_mutex_destroy(&dom->wd_lock);
	pthread_mutex_destroy(&dom->log_rl.lock);
	free(dom);
}
