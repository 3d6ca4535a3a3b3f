/* SPDX-License-Identifier: Apache-2.0 */
/* hypsrc_sim.c - the `sim` hypervisor schedule source: a deterministic,
 * simplified model of Xen's credit scheduler (xen/common/sched/credit.c)
 * stepped in 1 ms of virtual time by refresh(), so the coordinated GPU
 * policies can be tested and compared without Xen.
 *
 * Modelled: per-PCPU run queues ordered UNDER before OVER (FIFO within a
 * priority), 30 ms time slices, 10 ms ticks that preempt an OVER VCPU when
 * UNDER work waits, accounting every 30 ms that hands out 300 credits per
 * PCPU among active domains by weight (and caps), 10 credits burnt per ms on
 * a PCPU (100 per tick), wake-up placement on an idle PCPU, preemption on
 * wake-up by a better priority, and idle PCPUs stealing queued VCPUs. Left
 * out: BOOST priority, the extra-credit redistribution pass, soft affinity,
 * migration costs. Load is a duty cycle per domain instead of real guests.
 *
 * The same arguments and the same sequence of calls give the same snapshots.
 * How often refresh() is called does not change the schedule, as long as
 * calls are at most 10 s of virtual time apart (a longer jump restarts the
 * model at the new time, which costs nothing and is itself deterministic).
 */
#include "hypsrc.h"
#include "hypsrc_sim.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SIM_MAX_PCPUS 64u
#define SIM_MAX_VCPUS 16u
#define SIM_DEFAULT_PCPUS 2u
#define SIM_TICK_MS 10u
#define SIM_TSLICE_MS 30u
#define SIM_ACCT_MS 30u
#define SIM_CREDITS_PER_MS 10
#define SIM_CREDITS_PER_ACCT (SIM_CREDITS_PER_MS * (int)SIM_ACCT_MS)
/* Xen stops crediting a VCPU past one slice's worth (it is not using its
 * share); the lower bound only keeps a long-starved model from drifting. */
#define SIM_CREDIT_MAX SIM_CREDITS_PER_ACCT
#define SIM_CREDIT_MIN (-2 * SIM_CREDITS_PER_ACCT)
#define SIM_DUTY_WINDOW_MS 100u
/* Beyond this, catching up step by step costs more than it tells: restart
 * the model at the target time instead. */
#define SIM_MAX_CATCHUP_MS 10000u
#define SIM_NONE UINT64_MAX

_Static_assert(SIM_MAX_PCPUS * 2 <= XGPU_HYP_MAX_ENTRIES, "a snapshot holds two entries per PCPU");
_Static_assert(SIM_ACCT_MS % SIM_TICK_MS == 0, "a restart lands on a tick");

enum vstate { V_BLOCKED, V_QUEUED, V_RUNNING, V_PARKED };
enum { PRI_UNDER = 0, PRI_OVER = 1 }; /* lower runs first */

struct sim_dom;

struct sim_vcpu {
	struct sim_dom *dom;
	uint32_t id;
	int32_t credit;
	uint8_t state, pri;
	bool active;   /* wanted a PCPU during this accounting period */
	uint32_t pcpu; /* where it runs or queues, else where it last did */
	struct sim_vcpu *next, *prev;
};

struct sim_dom {
	uint32_t domid;
	uint32_t weight, cap, duty, nvcpus, phase;
	struct sim_vcpu v[SIM_MAX_VCPUS];
};

/* Settings from the arguments or the hooks, kept for domains not (yet)
 * tracked; -1 = not set. */
struct sim_cfg {
	uint32_t domid;
	long weight, cap, vcpus, duty;
};

struct sim_pcpu {
	struct sim_vcpu *curr;
	struct sim_vcpu *head, *tail;
	unsigned len;
	uint64_t slice_end;
	bool resched;
};

struct sim {
	unsigned npcpus, def_vcpus;
	struct sim_cfg *cfg;
	size_t ncfg, cfg_cap;
	struct sim_dom **dom; /* sorted by domid, so tracking order does not matter */
	size_t ndom, dom_cap;
	struct sim_pcpu pcpu[SIM_MAX_PCPUS];
	uint64_t now_ms;
	uint64_t periodic_ms; /* the last ms whose tick and accounting ran */
	uint64_t last_ns;
	struct xgpu_hyp_published view; /* what the last refresh published */
};

static struct sim *S(struct xgpu_hyp *h)
{
	return (struct sim *)h;
}

/* ---- configuration ---------------------------------------------------- */

static struct sim_cfg *cfg_find(struct sim *s, uint32_t domid)
{
	for (size_t i = 0; i < s->ncfg; i++)
		if (s->cfg[i].domid == domid)
			return &s->cfg[i];
	return NULL;
}

static struct sim_cfg *cfg_get(struct sim *s, uint32_t domid)
{
	struct sim_cfg *c = cfg_find(s, domid);
	if (c)
		return c;
	if (s->ncfg == s->cfg_cap) {
		size_t cap = s->cfg_cap ? s->cfg_cap * 2 : 8;
		struct sim_cfg *n = realloc(s->cfg, cap * sizeof *n);
		if (!n)
			return NULL;
		s->cfg = n;
		s->cfg_cap = cap;
	}
	c = &s->cfg[s->ncfg++];
	*c = (struct sim_cfg){.domid = domid, .weight = -1, .cap = -1, .vcpus = -1, .duty = -1};
	return c;
}

static struct sim_dom *dom_find(struct sim *s, uint32_t domid)
{
	size_t lo = 0, hi = s->ndom;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (s->dom[mid]->domid < domid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < s->ndom && s->dom[lo]->domid == domid ? s->dom[lo] : NULL;
}

/* ---- run queues --------------------------------------------------------- */

static void runq_insert(struct sim_pcpu *p, struct sim_vcpu *v)
{
	struct sim_vcpu *at = p->head;
	while (at && at->pri <= v->pri)
		at = at->next;
	v->next = at;
	v->prev = at ? at->prev : p->tail;
	if (v->prev)
		v->prev->next = v;
	else
		p->head = v;
	if (at)
		at->prev = v;
	else
		p->tail = v;
	p->len++;
}

static void runq_remove(struct sim_pcpu *p, struct sim_vcpu *v)
{
	if (v->prev)
		v->prev->next = v->next;
	else
		p->head = v->next;
	if (v->next)
		v->next->prev = v->prev;
	else
		p->tail = v->prev;
	v->next = v->prev = NULL;
	p->len--;
}

/* Credit changes reorder queued VCPUs (Xen's runq_sort); reinserting in the
 * old order keeps FIFO order within a priority. */
static void runq_sort(struct sim_pcpu *p)
{
	struct sim_vcpu *v = p->head;
	p->head = p->tail = NULL;
	p->len = 0;
	while (v) {
		struct sim_vcpu *next = v->next;
		v->next = v->prev = NULL;
		runq_insert(p, v);
		v = next;
	}
}

static void set_credit(struct sim_vcpu *v, long credit)
{
	if (credit > SIM_CREDIT_MAX)
		credit = SIM_CREDIT_MAX;
	if (credit < SIM_CREDIT_MIN)
		credit = SIM_CREDIT_MIN;
	v->credit = (int32_t)credit;
	v->pri = v->credit > 0 ? PRI_UNDER : PRI_OVER;
}

/* ---- VCPU state changes ------------------------------------------------- */

static bool pcpu_idle(const struct sim_pcpu *p)
{
	return !p->curr && !p->len;
}

static void vcpu_wake(struct sim *s, struct sim_vcpu *v)
{
	if (v->dom->cap && v->credit < 0) {
		v->state = V_PARKED;
		return;
	}
	unsigned p = v->pcpu;
	/* Like csched_cpu_pick: a busy home PCPU loses to any idle one. */
	if (!pcpu_idle(&s->pcpu[p]))
		for (unsigned q = 0; q < s->npcpus; q++)
			if (pcpu_idle(&s->pcpu[q])) {
				p = q;
				break;
			}
	struct sim_pcpu *pc = &s->pcpu[p];
	v->pcpu = p;
	v->state = V_QUEUED;
	runq_insert(pc, v);
	if (!pc->curr || v->pri < pc->curr->pri)
		pc->resched = true;
}

static void vcpu_block(struct sim *s, struct sim_vcpu *v, enum vstate to)
{
	struct sim_pcpu *pc = &s->pcpu[v->pcpu];
	if (v->state == V_QUEUED) {
		runq_remove(pc, v);
	} else if (v->state == V_RUNNING) {
		pc->curr = NULL;
		pc->resched = true;
	}
	v->state = (uint8_t)to;
}

static bool duty_runnable(const struct sim_dom *d, uint64_t t)
{
	if (d->duty >= 100)
		return true;
	return (t + d->phase) % SIM_DUTY_WINDOW_MS < d->duty;
}

/* ---- one millisecond ---------------------------------------------------- */

static void events(struct sim *s, uint64_t t)
{
	for (size_t i = 0; i < s->ndom; i++) {
		struct sim_dom *d = s->dom[i];
		bool r = duty_runnable(d, t);
		for (uint32_t k = 0; k < d->nvcpus; k++) {
			struct sim_vcpu *v = &d->v[k];
			if (!r) {
				if (v->state != V_BLOCKED)
					vcpu_block(s, v, V_BLOCKED);
				continue;
			}
			v->active = true;
			if (v->state == V_BLOCKED || (v->state == V_PARKED && (!d->cap || v->credit >= 0)))
				vcpu_wake(s, v);
		}
	}
}

static void accounting(struct sim *s)
{
	uint64_t weight_total = 0;
	for (size_t i = 0; i < s->ndom; i++) {
		struct sim_dom *d = s->dom[i];
		for (uint32_t k = 0; k < d->nvcpus; k++)
			weight_total += d->v[k].active ? d->weight : 0;
	}
	uint64_t credit_total = (uint64_t)SIM_CREDITS_PER_ACCT * s->npcpus;
	for (size_t i = 0; weight_total && i < s->ndom; i++) {
		struct sim_dom *d = s->dom[i];
		uint64_t nact = 0;
		for (uint32_t k = 0; k < d->nvcpus; k++)
			nact += d->v[k].active;
		if (!nact)
			continue;
		/* A domain cannot use more than its VCPUs or its cap allow. */
		uint64_t peak = nact * SIM_CREDITS_PER_ACCT;
		if (d->cap) {
			uint64_t capc = ((uint64_t)d->cap * SIM_CREDITS_PER_ACCT + 99) / 100;
			if (capc < peak)
				peak = capc;
		}
		uint64_t fair = (credit_total * d->weight * nact + weight_total - 1) / weight_total;
		if (fair > peak)
			fair = peak;
		long per = (long)((fair + nact - 1) / nact);
		for (uint32_t k = 0; k < d->nvcpus; k++) {
			struct sim_vcpu *v = &d->v[k];
			if (!v->active)
				continue;
			set_credit(v, (long)v->credit + per);
			if (v->state == V_PARKED && v->credit >= 0)
				vcpu_wake(s, v);
		}
	}
	/* What wants a PCPU now belongs to the next period too. */
	for (size_t i = 0; i < s->ndom; i++) {
		struct sim_dom *d = s->dom[i];
		for (uint32_t k = 0; k < d->nvcpus; k++)
			d->v[k].active = d->v[k].state != V_BLOCKED;
	}
	for (unsigned p = 0; p < s->npcpus; p++)
		runq_sort(&s->pcpu[p]);
}

/* A peer's queued VCPU may be taken unless the peer is about to run it. */
static bool stealable(const struct sim_pcpu *p)
{
	return p->head && (p->curr || p->len >= 2);
}

/* The peer queue to steal from: the longest whose head has priority at most
 * max_pri, searching from the next PCPU on so ties spread. */
static struct sim_pcpu *steal_from(struct sim *s, unsigned self, unsigned max_pri)
{
	struct sim_pcpu *best = NULL;
	for (unsigned i = 1; i < s->npcpus; i++) {
		struct sim_pcpu *q = &s->pcpu[(self + i) % s->npcpus];
		if (stealable(q) && q->head->pri <= max_pri && (!best || q->len > best->len))
			best = q;
	}
	return best;
}

static bool under_waiting(struct sim *s, unsigned self)
{
	struct sim_pcpu *p = &s->pcpu[self];
	return (p->head && p->head->pri == PRI_UNDER) || steal_from(s, self, PRI_UNDER);
}

static void periodic(struct sim *s, uint64_t t)
{
	if (t % SIM_ACCT_MS == 0)
		accounting(s);
	if (t % SIM_TICK_MS == 0)
		for (unsigned p = 0; p < s->npcpus; p++) {
			struct sim_pcpu *pc = &s->pcpu[p];
			if (pc->curr && pc->curr->pri == PRI_OVER && under_waiting(s, p))
				pc->resched = true;
		}
}

static void schedule(struct sim *s, uint64_t t)
{
	for (unsigned p = 0; p < s->npcpus; p++) {
		struct sim_pcpu *pc = &s->pcpu[p];
		if (pc->curr && t >= pc->slice_end)
			pc->resched = true;
		if (!pc->curr && (pc->len || steal_from(s, p, PRI_OVER)))
			pc->resched = true;
		if (!pc->resched)
			continue;
		pc->resched = false;
		if (pc->curr) {
			pc->curr->state = V_QUEUED;
			runq_insert(pc, pc->curr);
			pc->curr = NULL;
		}
		struct sim_pcpu *from = pc;
		if (!pc->head || pc->head->pri == PRI_OVER) {
			struct sim_pcpu *q = steal_from(s, p, pc->head ? PRI_UNDER : PRI_OVER);
			if (q)
				from = q;
		}
		struct sim_vcpu *next = from->head;
		if (!next)
			continue;
		runq_remove(from, next);
		next->state = V_RUNNING;
		next->pcpu = p;
		pc->curr = next;
		pc->slice_end = t + SIM_TSLICE_MS;
	}
}

static void burn(struct sim *s)
{
	for (unsigned p = 0; p < s->npcpus; p++) {
		struct sim_vcpu *v = s->pcpu[p].curr;
		if (!v)
			continue;
		set_credit(v, (long)v->credit - SIM_CREDITS_PER_MS);
		if (v->dom->cap && v->credit < 0)
			vcpu_block(s, v, V_PARKED);
	}
}

static void vcpu_reset(struct sim *s, struct sim_vcpu *v)
{
	v->state = V_BLOCKED;
	v->active = false;
	v->next = v->prev = NULL;
	v->pcpu = (v->dom->domid + v->id) % s->npcpus;
	set_credit(v, 0);
}

/* Forgets everything that happened, as if the model had been opened with
 * the same domains at `at_ms`, which is a multiple of the accounting period. */
static void restart(struct sim *s, uint64_t at_ms)
{
	for (unsigned p = 0; p < s->npcpus; p++)
		s->pcpu[p] = (struct sim_pcpu){0};
	for (size_t i = 0; i < s->ndom; i++)
		for (uint32_t k = 0; k < s->dom[i]->nvcpus; k++)
			vcpu_reset(s, &s->dom[i]->v[k]);
	s->now_ms = at_ms;
	s->periodic_ms = SIM_NONE;
}

static void advance(struct sim *s, uint64_t target_ms)
{
	if (target_ms > s->now_ms + SIM_MAX_CATCHUP_MS)
		restart(s, target_ms - target_ms % SIM_ACCT_MS);
	for (;;) {
		uint64_t t = s->now_ms;
		events(s, t);
		if (s->periodic_ms != t) {
			periodic(s, t);
			s->periodic_ms = t;
		}
		schedule(s, t);
		if (t >= target_ms)
			break;
		burn(s);
		s->now_ms = t + 1;
	}
}

/* ---- the source ----------------------------------------------------------- */

enum sim_field { F_PCPUS, F_VCPUS, F_WEIGHT, F_CAP, F_DOM_VCPUS, F_DUTY };

static const struct sim_key {
	const char *name;
	bool per_domain; /* NAME.<domid> */
	long lo, hi;
	enum sim_field field;
} sim_keys[] = {
    {"pcpus", false, 1, SIM_MAX_PCPUS, F_PCPUS},
    {"vcpus", false, 1, SIM_MAX_VCPUS, F_VCPUS},
    {"weight", true, 1, XGPU_HYP_MAX_WEIGHT, F_WEIGHT},
    {"cap", true, 0, 100 * SIM_MAX_PCPUS, F_CAP}, /* checked against pcpus once all are read */
    {"vcpus", true, 1, SIM_MAX_VCPUS, F_DOM_VCPUS},
    {"duty", true, 0, 100, F_DUTY},
};

static const char known_keys[] = "pcpus, vcpus, weight.<domid>, cap.<domid>, vcpus.<domid>, duty.<domid>";

static const struct sim_key *key_find(const char *key, const char **dot)
{
	*dot = strchr(key, '.');
	size_t len = *dot ? (size_t)(*dot - key) : strlen(key);
	for (size_t i = 0; i < XGPU_ARRAY_SIZE(sim_keys); i++)
		if (sim_keys[i].per_domain == (*dot != NULL) && strlen(sim_keys[i].name) == len &&
		    !strncmp(sim_keys[i].name, key, len))
			return &sim_keys[i];
	return NULL;
}

/* One KEY=VALUE; tok is modified. */
static int parse_one(struct sim *s, char *tok, char *err, size_t errlen)
{
	char *eq = strchr(tok, '=');
	if (!eq) {
		snprintf(err, errlen, "sim: '%s' is not KEY=VALUE (keys: %s)", tok, known_keys);
		return -1;
	}
	*eq = '\0';
	const char *key = tok, *val = eq + 1, *dot;
	const struct sim_key *k = key_find(key, &dot);
	if (!k) {
		snprintf(err, errlen, "sim: unknown key '%s' (keys: %s)", key, known_keys);
		return -1;
	}
	long v;
	if (xgpu_parse_long(val, k->lo, k->hi, &v)) {
		snprintf(err, errlen, "sim: bad value '%s' for '%s' (allowed %ld..%ld)", val, key, k->lo,
			 k->hi);
		return -1;
	}
	struct sim_cfg *c = NULL;
	if (k->per_domain) {
		long domid;
		if (xgpu_parse_long(dot + 1, 0, (long)UINT32_MAX, &domid)) {
			snprintf(err, errlen, "sim: bad domid '%s' in key '%s' (allowed 0..%u)", dot + 1, key,
				 UINT32_MAX);
			return -1;
		}
		if (!(c = cfg_get(s, (uint32_t)domid))) {
			snprintf(err, errlen, "sim: out of memory");
			return -1;
		}
	}
	switch (k->field) {
	case F_PCPUS:
		s->npcpus = (unsigned)v;
		break;
	case F_VCPUS:
		s->def_vcpus = (unsigned)v;
		break;
	case F_WEIGHT:
		c->weight = v;
		break;
	case F_CAP:
		c->cap = v;
		break;
	case F_DOM_VCPUS:
		c->vcpus = v;
		break;
	case F_DUTY:
		c->duty = v;
		break;
	}
	return 0;
}

static int parse_args(struct sim *s, const char *args, char *err, size_t errlen)
{
	if (!args || !*args)
		return 0;
	char *buf = strdup(args);
	if (!buf) {
		snprintf(err, errlen, "sim: out of memory");
		return -1;
	}
	int rc = 0;
	char *save = NULL;
	for (char *tok = strtok_r(buf, ",", &save); tok && !rc; tok = strtok_r(NULL, ",", &save))
		rc = parse_one(s, tok, err, errlen);
	free(buf);
	if (rc)
		return rc;
	/* Caps are in percent of one PCPU, so their range depends on pcpus,
	 * which may come later in the list. */
	for (size_t i = 0; i < s->ncfg; i++)
		if (s->cfg[i].cap > 100L * s->npcpus) {
			snprintf(err, errlen,
				 "sim: bad value '%ld' for 'cap.%u' (allowed 0..%u with pcpus=%u)",
				 s->cfg[i].cap, s->cfg[i].domid, 100 * s->npcpus, s->npcpus);
			return -1;
		}
	return 0;
}

static int sim_open(const char *args, struct xgpu_hyp **out, char *err, size_t errlen)
{
	struct sim *s = calloc(1, sizeof *s);
	if (!s) {
		snprintf(err, errlen, "sim: out of memory");
		return -1;
	}
	s->npcpus = SIM_DEFAULT_PCPUS;
	s->def_vcpus = 1;
	if (parse_args(s, args, err, errlen)) {
		free(s->cfg);
		free(s);
		return -1;
	}
	restart(s, 0);
	*out = (struct xgpu_hyp *)s;
	return 0;
}

static void sim_close(struct xgpu_hyp *h)
{
	struct sim *s = S(h);
	if (!s)
		return;
	for (size_t i = 0; i < s->ndom; i++)
		free(s->dom[i]);
	free(s->dom);
	free(s->cfg);
	free(s);
}

static void dom_apply(struct sim_dom *d, const struct sim_cfg *c)
{
	d->weight = c && c->weight >= 0 ? (uint32_t)c->weight : XGPU_HYP_DEFAULT_WEIGHT;
	d->cap = c && c->cap >= 0 ? (uint32_t)c->cap : 0;
	d->duty = c && c->duty >= 0 ? (uint32_t)c->duty : 100;
}

static void sim_track(struct xgpu_hyp *h, uint32_t domid)
{
	struct sim *s = S(h);
	if (dom_find(s, domid))
		return;
	if (s->ndom == s->dom_cap) {
		size_t cap = s->dom_cap ? s->dom_cap * 2 : 8;
		struct sim_dom **n = realloc(s->dom, cap * sizeof *n);
		if (!n)
			return;
		s->dom = n;
		s->dom_cap = cap;
	}
	struct sim_dom *d = calloc(1, sizeof *d);
	if (!d)
		return;
	const struct sim_cfg *c = cfg_find(s, domid);
	d->domid = domid;
	d->nvcpus = c && c->vcpus > 0 ? (uint32_t)c->vcpus : s->def_vcpus;
	/* A multiplier coprime to the window spreads consecutive domids. */
	d->phase = (uint32_t)(((uint64_t)domid * 37) % SIM_DUTY_WINDOW_MS);
	dom_apply(d, c);
	for (uint32_t k = 0; k < d->nvcpus; k++) {
		d->v[k].dom = d;
		d->v[k].id = k;
		vcpu_reset(s, &d->v[k]);
	}
	size_t at = 0;
	while (at < s->ndom && s->dom[at]->domid < domid)
		at++;
	memmove(&s->dom[at + 1], &s->dom[at], (s->ndom - at) * sizeof *s->dom);
	s->dom[at] = d;
	s->ndom++;
}

static void sim_untrack(struct xgpu_hyp *h, uint32_t domid)
{
	struct sim *s = S(h);
	struct sim_dom *d = dom_find(s, domid);
	if (!d)
		return;
	for (uint32_t k = 0; k < d->nvcpus; k++)
		vcpu_block(s, &d->v[k], V_BLOCKED);
	size_t at = 0;
	while (s->dom[at] != d)
		at++;
	memmove(&s->dom[at], &s->dom[at + 1], (s->ndom - at - 1) * sizeof *s->dom);
	s->ndom--;
	free(d);
}

static void sim_set_pids(struct xgpu_hyp *h, uint32_t domid, const pid_t *pids, unsigned n)
{
	/* Simulated domains have no processes. */
}

static int sim_refresh(struct xgpu_hyp *h, uint64_t now_ns, struct xgpu_hyp_snapshot *snap)
{
	struct sim *s = S(h);
	if (now_ns > s->last_ns)
		s->last_ns = now_ns;
	advance(s, s->last_ns / 1000000u);

	unsigned n = 0;
	for (unsigned p = 0; p < s->npcpus; p++) {
		const struct sim_pcpu *pc = &s->pcpu[p];
		const struct sim_vcpu *list[2] = {pc->curr, pc->head};
		for (unsigned i = 0; i < 2; i++) {
			const struct sim_vcpu *v = list[i];
			if (!v)
				continue;
			snap->e[n++] = (struct xgpu_hyp_entry){.domid = v->dom->domid,
							       .vcpu = v->id,
							       .pcpu = p,
							       .credit = v->credit,
							       .running = i == 0};
		}
	}
	xgpu_hyp_publish(&s->view, snap, n, false, s->last_ns);
	return 0;
}

static int sim_weight(struct xgpu_hyp *h, uint32_t domid, uint32_t *weight, uint32_t *cap)
{
	struct sim *s = S(h);
	const struct sim_dom *d = dom_find(s, domid);
	uint32_t w, c;
	if (d) {
		w = d->weight;
		c = d->cap;
	} else {
		const struct sim_cfg *cf = cfg_find(s, domid);
		if (!cf)
			return -1;
		w = cf->weight >= 0 ? (uint32_t)cf->weight : XGPU_HYP_DEFAULT_WEIGHT;
		c = cf->cap >= 0 ? (uint32_t)cf->cap : 0;
	}
	if (weight)
		*weight = w;
	if (cap)
		*cap = c;
	return 0;
}

void xgpu_hyp_sim_set_duty(struct xgpu_hyp *h, uint32_t domid, unsigned duty)
{
	struct sim *s = S(h);
	struct sim_cfg *c = cfg_get(s, domid);
	if (duty > 100)
		duty = 100;
	if (c)
		c->duty = duty;
	struct sim_dom *d = dom_find(s, domid);
	if (d)
		d->duty = duty;
}

void xgpu_hyp_sim_set_weight(struct xgpu_hyp *h, uint32_t domid, uint32_t weight, uint32_t cap)
{
	struct sim *s = S(h);
	if (weight < 1)
		weight = 1;
	if (weight > XGPU_HYP_MAX_WEIGHT)
		weight = XGPU_HYP_MAX_WEIGHT;
	if (cap > 100 * s->npcpus)
		cap = 100 * s->npcpus;
	struct sim_cfg *c = cfg_get(s, domid);
	if (c) {
		c->weight = weight;
		c->cap = cap;
	}
	struct sim_dom *d = dom_find(s, domid);
	if (d) {
		d->weight = weight;
		d->cap = cap;
	}
}

bool xgpu_hyp_sim_running(struct xgpu_hyp *h, uint32_t domid)
{
	const struct sim_dom *d = dom_find(S(h), domid);
	for (uint32_t k = 0; d && k < d->nvcpus; k++)
		if (d->v[k].state == V_RUNNING)
			return true;
	return false;
}

const struct xgpu_hyp_ops xgpu_hyp_sim = {
    .name = "sim",
    .description = "deterministic simulated Xen credit scheduler (virtual time)",
    .open = sim_open,
    .close = sim_close,
    .track = sim_track,
    .untrack = sim_untrack,
    .set_pids = sim_set_pids,
    .refresh = sim_refresh,
    .weight = sim_weight,
};
