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
#include "util.h"
#include "xgpud.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#define CHUNK 32768

static json_t *domain_json(const struct xgpu_domain *dom)
{
	const struct xgpu_dom_stats *s = &dom->stats;
	json_t *o = json_object();
	json_object_set_new(o, "name", json_string(dom->name));
	json_object_set_new(o, "domid", json_integer(dom->domid));
	json_object_set_new(o, "gpu", json_integer(dom->gpu->index));
	json_object_set_new(o, "credit", json_integer(dom->credit));
	/* The CPU weight comes from the hypervisor schedule source; local mode
	 * reports 0 until one is configured. */
	json_object_set_new(o, "cpu_weight", json_integer(0));
	json_object_set_new(o, "sla", json_real(dom->sla));
	json_object_set_new(o, "channels", json_integer(atomic_load(&s->channels)));
	json_object_set_new(o, "calls", json_integer((json_int_t)atomic_load(&s->calls)));
	json_object_set_new(o, "gpu_time_ns", json_integer((json_int_t)atomic_load(&s->gpu_time_ns)));
	json_object_set_new(o, "busy_ns", json_integer((json_int_t)atomic_load(&s->busy_ns)));
	json_object_set_new(o, "h2d_bytes", json_integer((json_int_t)atomic_load(&s->h2d_bytes)));
	json_object_set_new(o, "d2h_bytes", json_integer((json_int_t)atomic_load(&s->d2h_bytes)));
	json_object_set_new(o, "mem_bytes", json_integer((json_int_t)atomic_load(&s->mem_bytes)));
	json_object_set_new(o, "errors", json_integer((json_int_t)atomic_load(&s->errors)));
	json_object_set_new(o, "lat_p50_us", json_real(xgpu_stats_latency_us(s, 50)));
	json_object_set_new(o, "lat_p99_us", json_real(xgpu_stats_latency_us(s, 99)));
	json_object_set_new(o, "uid", json_integer(dom->owner_uid));
	json_object_set_new(o, "mem_limit", json_integer((json_int_t)dom->mem_limit));
	json_object_set_new(o, "kernels", json_integer((json_int_t)atomic_load(&s->kernels)));
	json_object_set_new(o, "ticks", json_integer((json_int_t)atomic_load(&s->ticks)));
	json_object_set_new(o, "channels_total", json_integer((json_int_t)atomic_load(&s->channels_total)));
	return o;
}

char *xgpu_control_stats_json(struct xgpud *d, uid_t viewer)
{
	bool all = viewer == 0 || viewer == geteuid();
	json_t *root = json_object();
	json_object_set_new(root, "policy", json_string(d->policy->name));
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
		json_array_append_new(gpus, g);
	}
	json_object_set_new(root, "gpus", gpus);
	json_t *doms = json_array();
	pthread_mutex_lock(&d->domains_lock);
	for (struct xgpu_domain *dom = d->domains; dom; dom = dom->next)
		if (all || dom->owner_uid == viewer)
			json_array_append_new(doms, domain_json(dom));
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
	} else {
		char msg[128];
		snprintf(msg, sizeof msg, "unknown command '%.64s' (known: stats, list)", cmd);
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
