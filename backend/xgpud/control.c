/* SPDX-License-Identifier: Apache-2.0 */
/* control.c - xgpud's control requests from xl-gpu: a JSON request on a
 * control connection, answered with JSON (BRIEF section 4's stats object)
 * streamed in packets until the daemon closes the connection.
 *
 * Each request is served on a short-lived thread of its own, with send and
 * receive timeouts, so a client that never reads its answer cannot stall the
 * main loop; a user sees only the domains it owns (root and the daemon's own
 * user see all). */
#include "log.h"
#include "policy.h"
#include "scheduler.h"
#include "util.h"
#include "control.h"
#include "core.h"
#include "executors.h"
#include "state.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#define CHUNK 32768

static json_t *domain_json(const struct xgpud_domain *dom, uint32_t cpu_weight)
{
	static _Thread_local struct xgpu_dom_stats stats;
	xgpu_executor_stats(dom, &stats);
	const struct xgpu_dom_stats *s = &stats;
	json_t *o = json_object();
	json_object_set_new(o, "name", json_string(dom->name));
	json_object_set_new(o, "domid", json_integer(dom->domid));
	json_object_set_new(o, "gpu", json_integer(dom->gpu->index));
	const struct xgpu_sched_dom *sd = &dom->sd;
	json_object_set_new(o, "credit", json_integer(sd->credit));
	json_object_set_new(o, "cpu_weight", json_integer(cpu_weight));
	json_object_set_new(o, "sla", json_real(sd->sla));
	json_object_set_new(o, "channels", json_integer(atomic_load(&s->channels)));
	json_object_set_new(o, "calls", json_integer((json_int_t)atomic_load(&s->calls)));
	/* Slot time, and under a policy that does not gate, the time the
	 * executor's calls ran (what its status page says). */
	uint64_t ungated = dom->ex ? atomic_load(&dom->ex->st->slot.ungated_ns) : 0;
	json_object_set_new(o, "gpu_time_ns",
			    json_integer((json_int_t)(atomic_load(&sd->held_ns) + ungated)));
	json_object_set_new(o, "busy_ns", json_integer((json_int_t)atomic_load(&sd->busy_ns)));
	json_object_set_new(o, "h2d_bytes", json_integer((json_int_t)atomic_load(&s->h2d_bytes)));
	json_object_set_new(o, "d2h_bytes", json_integer((json_int_t)atomic_load(&s->d2h_bytes)));
	json_object_set_new(o, "mem_bytes", json_integer((json_int_t)atomic_load(&s->mem_bytes)));
	json_object_set_new(o, "errors", json_integer((json_int_t)atomic_load(&s->errors)));
	json_object_set_new(o, "lat_p50_us", json_real(xgpu_stats_latency_us(s, 50)));
	json_object_set_new(o, "lat_p99_us", json_real(xgpu_stats_latency_us(s, 99)));
	json_object_set_new(o, "uid", json_integer(dom->owner_uid));
	json_object_set_new(o, "mem_limit", json_integer((json_int_t)atomic_load(&dom->mem_limit)));
	json_object_set_new(o, "executor_pid", json_integer(xgpu_executor_pid(dom)));
	json_object_set_new(o, "executor", json_string(xgpu_executor_state(dom)));
	json_object_set_new(o, "executors", json_integer((json_int_t)atomic_load(&dom->c.executors)));
	json_object_set_new(o, "faults", json_integer((json_int_t)atomic_load(&dom->c.faults)));
	json_object_set_new(o, "kernels", json_integer((json_int_t)atomic_load(&s->kernels)));
	json_object_set_new(o, "kernel_timeout_s", json_integer(atomic_load(&dom->kernel_timeout_s)));
	json_object_set_new(o, "timeouts", json_integer((json_int_t)atomic_load(&s->timeouts)));
	json_object_set_new(o, "ticks", json_integer((json_int_t)atomic_load(&sd->ticks)));
	json_object_set_new(o, "grants", json_integer((json_int_t)atomic_load(&sd->grants)));
	json_object_set_new(o, "yields", json_integer((json_int_t)atomic_load(&sd->yields)));
	json_object_set_new(o, "overrun_ns", json_integer((json_int_t)atomic_load(&sd->overrun_ns)));
	json_object_set_new(o, "turns_skipped", json_integer((json_int_t)atomic_load(&sd->turns_skipped)));
	json_object_set_new(o, "preempted", json_integer((json_int_t)atomic_load(&sd->preempted)));
	json_object_set_new(o, "slot_wait_ns", json_integer((json_int_t)atomic_load(&sd->wait_ns)));
	json_object_set_new(o, "slot_wait_max_ns", json_integer((json_int_t)atomic_load(&sd->max_wait_ns)));
	json_object_set_new(o, "queue_wait_ns", json_integer((json_int_t)atomic_load(&s->queue_wait_ns)));
	json_object_set_new(o, "queue_waits", json_integer((json_int_t)atomic_load(&s->queue_waits)));
	json_object_set_new(o, "wait_p50_us", json_real(xgpu_stats_wait_us(s, 50)));
	json_object_set_new(o, "wait_p99_us", json_real(xgpu_stats_wait_us(s, 99)));
	/* The queue-wait histogram itself, [upper edge us, count] for each
	 * non-empty bucket in ascending order: top's p99 over its interval and
	 * Prometheus's histogram are computed from it. */
	json_t *hist = json_array();
	for (unsigned b = 0; b < XGPU_LAT_BUCKETS; b++) {
		uint64_t n = atomic_load_explicit(&s->wait[b], memory_order_relaxed);
		if (n)
			json_array_append_new(
			    hist, json_pack("[f,I]", xgpu_stats_bucket_edge_us(b), (json_int_t)n));
	}
	json_object_set_new(o, "wait_hist", hist);
	json_object_set_new(o, "channels_total", json_integer((json_int_t)atomic_load(&s->channels_total)));
	return o;
}

/* The CPU weight the hypervisor schedule source reports for the domain, 0
 * when it does not know it. */
static uint32_t domain_cpu_weight(struct xgpud_domain *dom)
{
	struct xgpu_sched *s = dom->gpu->sched;
	uint32_t w = 0, cap;
	pthread_mutex_lock(&s->lock);
	if (s->hyp && s->hyp_ops->weight(s->hyp, dom->domid, &w, &cap) < 0)
		w = 0;
	pthread_mutex_unlock(&s->lock);
	return w;
}

char *xgpu_control_stats_json(struct xgpud *d, uid_t viewer)
{
	bool all = viewer == 0 || viewer == geteuid();
	json_t *root = json_object();
	/* The top-level policy is GPU 0's; each GPU says its own. */
	json_object_set_new(
	    root, "policy",
	    json_string(d->ngpus ? xgpu_sched_policy(d->gpus[0].sched)->name : d->policy->name));
	json_object_set_new(root, "hyp_source", json_string(d->hyp_ops ? d->hyp_ops->name : ""));
	json_object_set_new(root, "tick_ms", json_integer(d->o.tick_ms));
	json_object_set_new(root, "executor", json_string(d->executor_name));
	json_object_set_new(root, "uptime_ns", json_integer((json_int_t)(xgpu_now_ns() - d->start_ns)));
	json_t *gpus = json_array();
	for (int i = 0; i < d->ngpus; i++) {
		json_t *g = json_object();
		json_object_set_new(g, "id", json_integer(i));
		json_object_set_new(g, "name", json_string(d->gpus[i].name));
		json_object_set_new(g, "executor", json_string(d->executor_name));
		json_object_set_new(g, "total_mem", json_integer((json_int_t)d->gpus[i].total_mem));
		json_object_set_new(g, "domains", json_integer(atomic_load(&d->gpus[i].ndomains)));
		json_object_set_new(g, "policy", json_string(xgpu_sched_policy(d->gpus[i].sched)->name));
		json_array_append_new(gpus, g);
	}
	json_object_set_new(root, "gpus", gpus);
	json_t *doms = json_array();
	pthread_mutex_lock(&d->domains_lock);
	for (struct xgpud_domain *dom = d->domains; dom; dom = dom->next)
		if (all || dom->owner_uid == viewer)
			json_array_append_new(doms, domain_json(dom, domain_cpu_weight(dom)));
	pthread_mutex_unlock(&d->domains_lock);
	json_object_set_new(root, "domains", doms);
	char *text = json_dumps(root, JSON_COMPACT);
	json_decref(root);
	return text;
}

static void reply(int conn, const char *text)
{
	size_t len = strlen(text), off = 0;
	while (off < len) {
		size_t n = len - off < CHUNK ? len - off : CHUNK;
		if (send(conn, text + off, n, MSG_NOSIGNAL) < 0)
			return;
		off += n;
	}
}

static void reply_error(int conn, const char *msg)
{
	json_t *o = json_pack("{s:s}", "error", msg);
	char *text = json_dumps(o, JSON_COMPACT);
	reply(conn, text);
	free(text);
	json_decref(o);
}

static void reply_ok(int conn, json_t *o)
{
	char *text = json_dumps(o, JSON_COMPACT);
	if (text)
		reply(conn, text);
	else
		reply_error(conn, "out of memory");
	free(text);
	json_decref(o);
}

/* Only the host's administrator (root, or the user xgpud runs as) changes
 * how the GPUs are shared; a guest's owner could otherwise raise its own
 * share. */
static bool may_administer(int conn, uid_t uid, const char *what)
{
	if (uid == 0 || uid == geteuid())
		return true;
	char msg[160];
	snprintf(msg, sizeof msg, "changing %s needs root or the user xgpud runs as (uid %u); you are uid %u",
		 what, (unsigned)geteuid(), (unsigned)uid);
	reply_error(conn, msg);
	return false;
}

/* {"cmd":"policy"[,"name":NAME][,"gpu":N]}: without a name, the current
 * policies; with one, switch GPU N (default all) live. */
static void control_policy(struct xgpud *d, int conn, uid_t uid, json_t *req)
{
	json_t *jname = json_object_get(req, "name"), *jgpu = json_object_get(req, "gpu");
	const char *name = json_string_value(jname);
	if ((jname && !name) || (jgpu && !json_is_integer(jgpu))) {
		reply_error(conn, "policy: \"name\" must be a string and \"gpu\" an integer");
		return;
	}
	json_int_t gpu = jgpu ? json_integer_value(jgpu) : -1;
	if (jgpu && (gpu < 0 || gpu >= d->ngpus)) {
		char msg[96];
		snprintf(msg, sizeof msg, "GPU %lld does not exist (this daemon has GPUs 0 to %d)",
			 (long long)gpu, d->ngpus - 1);
		reply_error(conn, msg);
		return;
	}
	const struct xgpu_policy_ops *ops = NULL;
	if (name) {
		ops = xgpu_policy_find(name);
		if (!ops) {
			char msg[256];
			snprintf(msg, sizeof msg, "unknown policy '%.32s' (known: %s)", name,
				 xgpu_policy_names());
			reply_error(conn, msg);
			return;
		}
		if (!may_administer(conn, uid, "the scheduling policy"))
			return;
	}
	json_t *out = json_object(), *gpus = json_array();
	for (int i = 0; i < d->ngpus; i++) {
		if (gpu >= 0 && i != gpu)
			continue;
		struct xgpu_sched *s = d->gpus[i].sched;
		const char *old = xgpu_sched_policy(s)->name;
		if (ops && ops != xgpu_sched_policy(s)) {
			xgpu_sched_set_policy(s, ops, xgpu_now_ns());
			xlog_info("GPU %d: policy %s -> %s (uid %u)", i, old, xgpu_sched_policy(s)->name,
				  (unsigned)uid);
		}
		json_array_append_new(gpus,
				      json_pack("{s:i,s:s}", "id", i, "policy", xgpu_sched_policy(s)->name));
	}
	json_object_set_new(out, "gpus", gpus);
	reply_ok(conn, out);
}

static struct xgpud_domain *find_domain(struct xgpud *d, const char *name, json_int_t domid)
{
	for (struct xgpud_domain *dom = d->domains; dom; dom = dom->next)
		if (name ? !strcmp(dom->name, name) : dom->domid == domid)
			return dom;
	return NULL;
}

/* {"cmd":"credit","domain":NAME|DOMID[,"credit":N][,"sla":X]}: without
 * values, the current ones; with them, applied live. */
static void control_credit(struct xgpud *d, int conn, uid_t uid, json_t *req)
{
	json_t *jdom = json_object_get(req, "domain"), *jcredit = json_object_get(req, "credit"),
	       *jsla = json_object_get(req, "sla");
	if (!json_is_string(jdom) && !json_is_integer(jdom)) {
		reply_error(conn, "credit: \"domain\" must name a domain or give its domid");
		return;
	}
	char msg[192];
	if (jcredit && (!json_is_integer(jcredit) || json_integer_value(jcredit) < XGPU_CREDIT_MIN ||
			json_integer_value(jcredit) > XGPU_CREDIT_MAX)) {
		snprintf(msg, sizeof msg, "credit must be a whole number from %u to %u", XGPU_CREDIT_MIN,
			 XGPU_CREDIT_MAX);
		reply_error(conn, msg);
		return;
	}
	if (jsla &&
	    (!json_is_number(jsla) || !(json_number_value(jsla) >= 0) || json_number_value(jsla) > 1)) {
		reply_error(conn,
			    "sla must be a number from 0 to 1 (the share of the GPU the domain expects)");
		return;
	}
	if ((jcredit || jsla) && !may_administer(conn, uid, "credits"))
		return;
	pthread_mutex_lock(&d->domains_lock);
	struct xgpud_domain *dom =
	    find_domain(d, json_string_value(jdom), json_is_integer(jdom) ? json_integer_value(jdom) : -1);
	if (!dom || (uid != 0 && uid != geteuid() && uid != dom->owner_uid)) {
		pthread_mutex_unlock(&d->domains_lock);
		if (json_is_string(jdom))
			snprintf(msg, sizeof msg, "no domain named '%.64s'", json_string_value(jdom));
		else
			snprintf(msg, sizeof msg, "no domain with domid %lld",
				 (long long)json_integer_value(jdom));
		reply_error(conn, msg);
		return;
	}
	struct xgpu_sched_dom *sd = &dom->sd;
	uint32_t credit = jcredit ? (uint32_t)json_integer_value(jcredit) : sd->credit;
	double sla = jsla ? json_number_value(jsla) : sd->sla;
	if (jcredit || jsla) {
		uint32_t old_credit = sd->credit;
		double old_sla = sd->sla;
		xgpu_sched_set_params(dom->gpu->sched, sd, credit, sla);
		xlog_info("domain %s: credit %u -> %u, SLO %.3f -> %.3f (uid %u)", dom->name, old_credit,
			  credit, old_sla, sla, (unsigned)uid);
	}
	json_t *out = json_pack("{s:s,s:i,s:i,s:f}", "name", dom->name, "domid", (json_int_t)dom->domid,
				"credit", (json_int_t)sd->credit, "sla", sd->sla);
	pthread_mutex_unlock(&d->domains_lock);
	if (jcredit || jsla)
		xgpu_state_save(d, xgpu_executor_pid);
	reply_ok(conn, out);
}

static void serve(struct xgpud *d, int conn, uid_t uid)
{
	char buf[4096];
	ssize_t n = recv(conn, buf, sizeof buf - 1, 0);
	if (n <= 0)
		return;
	buf[n] = '\0';
	json_error_t jerr;
	json_t *req = json_loads(buf, 0, &jerr);
	const char *cmd = req ? json_string_value(json_object_get(req, "cmd")) : NULL;
	if (!cmd) {
		reply_error(conn, "request is not a JSON object with a \"cmd\" string");
	} else if (!strcmp(cmd, "stats") || !strcmp(cmd, "list")) {
		char *text = xgpu_control_stats_json(d, uid);
		if (text)
			reply(conn, text);
		else
			reply_error(conn, "out of memory");
		free(text);
	} else if (!strcmp(cmd, "policy")) {
		control_policy(d, conn, uid, req);
	} else if (!strcmp(cmd, "credit")) {
		control_credit(d, conn, uid, req);
	} else {
		char msg[128];
		snprintf(msg, sizeof msg, "unknown command '%.64s' (known: stats, list, policy, credit)",
			 cmd);
		reply_error(conn, msg);
	}
	json_decref(req);
}

#define MAX_CONTROL_THREADS 8

static pthread_mutex_t active_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t active_cv = PTHREAD_COND_INITIALIZER;
static unsigned active;

struct control_job {
	struct xgpud *d;
	int conn;
	uid_t uid;
};

static void *control_thread(void *arg)
{
	struct control_job *job = arg;
	serve(job->d, job->conn, job->uid);
	close(job->conn);
	free(job);
	pthread_mutex_lock(&active_lock);
	active--;
	pthread_cond_broadcast(&active_cv);
	pthread_mutex_unlock(&active_lock);
	return NULL;
}

void xgpu_control_spawn(struct xgpud *d, int conn, uid_t uid)
{
	/* Bounded waits: a request arrives at once, and a client that stops
	 * reading its answer loses it. */
	struct timeval rcv = {1, 0}, snd = {5, 0};
	int blocking = fcntl(conn, F_GETFL);
	if (blocking >= 0)
		fcntl(conn, F_SETFL, blocking & ~O_NONBLOCK);
	setsockopt(conn, SOL_SOCKET, SO_RCVTIMEO, &rcv, sizeof rcv);
	setsockopt(conn, SOL_SOCKET, SO_SNDTIMEO, &snd, sizeof snd);
	struct control_job *job = malloc(sizeof *job);
	pthread_mutex_lock(&active_lock);
	bool room = job && active < MAX_CONTROL_THREADS && !atomic_load(&d->stopping);
	if (room)
		active++;
	pthread_mutex_unlock(&active_lock);
	pthread_t t;
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	if (room) {
		*job = (struct control_job){d, conn, uid};
		if (pthread_create(&t, &attr, control_thread, job) == 0) {
			pthread_attr_destroy(&attr);
			return;
		}
		pthread_mutex_lock(&active_lock);
		active--;
		pthread_mutex_unlock(&active_lock);
	}
	pthread_attr_destroy(&attr);
	free(job);
	close(conn);
}

void xgpu_control_drain(void)
{
	pthread_mutex_lock(&active_lock);
	while (active)
		pthread_cond_wait(&active_cv, &active_lock);
	pthread_mutex_unlock(&active_lock);
}
