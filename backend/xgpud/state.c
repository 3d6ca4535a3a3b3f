/* SPDX-License-Identifier: Apache-2.0 */
/* state.c - what a restarted xgpud needs to adopt the executors its
 * predecessor left running: every domain's identity, settings, scheduler
 * accounts and counters, and the pid of its executor, in a JSON file of
 * xgpud's own (state.h).
 *
 * Only xgpud writes the file, in a directory only it may enter (the
 * executors' socket directory, mode 0700), so a domain's credit or limits
 * come back as the operator left them and never from an executor's word.
 * It is rewritten whole (a temporary file, then rename) at most every two
 * seconds while something changed, and at a restart in place; a clean stop
 * removes it, so the next xgpud starts afresh.
 */
#include "state.h"

#include "log.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define STATE_VERSION 1
#define SAVE_PERIOD_NS 2000000000ull

static int state_path(const struct xgpud *d, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%s.exec/state.json", d->socket_path);
	return n > 0 && (size_t)n < len ? 0 : -1;
}

/* The fields of a record, once for writing and once for reading. */
#define STATE_U64_FIELDS(X)                                                                                  \
	X(held_ns, dom->sd.held_ns)                                                                          \
	X(ticks, dom->sd.ticks)                                                                              \
	X(grants, dom->sd.grants)                                                                            \
	X(yields, dom->sd.yields)                                                                            \
	X(busy_ns, dom->sd.busy_ns)                                                                          \
	X(slot_wait_ns, dom->sd.wait_ns)                                                                     \
	X(slot_wait_max_ns, dom->sd.max_wait_ns)                                                             \
	X(overrun_ns, dom->sd.overrun_ns)                                                                    \
	X(turns_skipped, dom->sd.turns_skipped)                                                              \
	X(preempted, dom->sd.preempted)                                                                      \
	X(channels_total, dom->c.channels_total)                                                             \
	X(timeouts, dom->c.timeouts)                                                                         \
	X(faults, dom->c.faults)                                                                             \
	X(executors, dom->c.executors)                                                                       \
	X(calls, dom->c.calls)                                                                               \
	X(errors, dom->c.errors)                                                                             \
	X(h2d_bytes, dom->c.h2d_bytes)                                                                       \
	X(d2h_bytes, dom->c.d2h_bytes)                                                                       \
	X(kernels, dom->c.kernels)                                                                           \
	X(queue_wait_ns, dom->c.queue_wait_ns)                                                               \
	X(queue_waits, dom->c.queue_waits)

static json_t *domain_record(const struct xgpud_domain *dom, pid_t executor_pid)
{
	json_t *o = json_pack(
	    "{s:s,s:I,s:I,s:b,s:i,s:I,s:f,s:I,s:b,s:I,s:I}", "name", dom->name, "domid",
	    (json_int_t)dom->domid, "uid", (json_int_t)dom->owner_uid, "xen", dom->xen, "gpu",
	    dom->gpu->index, "credit", (json_int_t)dom->sd.credit, "sla", dom->sd.sla, "mem_limit",
	    (json_int_t)atomic_load(&dom->mem_limit), "mem_default", dom->mem_default, "kernel_timeout_s",
	    (json_int_t)atomic_load(&dom->kernel_timeout_s), "executor_pid", (json_int_t)executor_pid);
#define PUT(name, field) json_object_set_new(o, #name, json_integer((json_int_t)atomic_load(&field)));
	STATE_U64_FIELDS(PUT)
#undef PUT
	return o;
}

/* The text of the last save (under save_lock in xgpu_state_save). */
static char *last;

int xgpu_state_save(struct xgpud *d, pid_t (*executor_pid)(const struct xgpud_domain *))
{
	/* The main thread's tick and a control thread's change may save at
	 * once: one writer of the temporary file at a time. */
	static pthread_mutex_t save_lock = PTHREAD_MUTEX_INITIALIZER;
	char path[320], tmp[330];
	if (state_path(d, path, sizeof path) < 0)
		return -1;
	pthread_mutex_lock(&save_lock);
	snprintf(tmp, sizeof tmp, "%s.tmp", path);
	json_t *doms = json_array();
	pthread_mutex_lock(&d->domains_lock);
	for (struct xgpud_domain *dom = d->domains; dom; dom = dom->next)
		json_array_append_new(doms, domain_record(dom, executor_pid(dom)));
	uint32_t next = d->next_domid;
	pthread_mutex_unlock(&d->domains_lock);
	json_t *root = json_pack("{s:i,s:I,s:o}", "version", STATE_VERSION, "next_domid", (json_int_t)next,
				 "domains", doms);
	/* One write of the whole text (json_dumpfd writes it a token at a
	 * time), and none at all when nothing changed since the last save. */
	char *text = json_dumps(root, JSON_COMPACT);
	int r = -1;
	if (text && last && !strcmp(text, last)) {
		free(text);
		json_decref(root);
		pthread_mutex_unlock(&save_lock);
		return 0;
	}
	int fd = text ? open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600) : -1;
	size_t len = text ? strlen(text) : 0;
	if (fd >= 0 && write(fd, text, len) == (ssize_t)len && close(fd) == 0) {
		fd = -1;
		r = rename(tmp, path);
	}
	if (fd >= 0)
		close(fd);
	if (r < 0) {
		xlog_warn("cannot save xgpud's state in %s: %s (a restart could not adopt the executors)",
			  path, strerror(errno));
		free(text);
	} else {
		free(last);
		last = text;
	}
	json_decref(root);
	pthread_mutex_unlock(&save_lock);
	return r;
}

void xgpu_state_remove(struct xgpud *d)
{
	char path[320];
	if (state_path(d, path, sizeof path) == 0)
		unlink(path);
	free(last);
	last = NULL;
}

static bool get_u64(json_t *o, const char *key, uint64_t max, uint64_t *out)
{
	json_t *v = json_object_get(o, key);
	if (!json_is_integer(v) || json_integer_value(v) < 0 || (uint64_t)json_integer_value(v) > max)
		return false;
	*out = (uint64_t)json_integer_value(v);
	return true;
}

int xgpu_state_load(struct xgpud *d, xgpu_state_restore_fn restore)
{
	char path[320];
	if (state_path(d, path, sizeof path) < 0)
		return -1;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return errno == ENOENT ? 0 : -1;
	struct stat st;
	json_error_t jerr;
	json_t *root = NULL;
	/* Ours alone, or it is not ours to believe. */
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() && !(st.st_mode & 077))
		root = json_loadfd(fd, 0, &jerr);
	close(fd);
	json_t *doms = root ? json_object_get(root, "domains") : NULL;
	json_t *ver = root ? json_object_get(root, "version") : NULL;
	if (!json_is_array(doms) || !json_is_integer(ver) || json_integer_value(ver) != STATE_VERSION) {
		xlog_warn("ignoring %s: not a state file of this xgpud (version %d)", path, STATE_VERSION);
		json_decref(root);
		return -1;
	}
	uint64_t next = 0;
	if (get_u64(root, "next_domid", UINT32_MAX, &next) && next > d->next_domid)
		d->next_domid = (uint32_t)next;
	int n = 0;
	size_t i;
	json_t *o;
	json_array_foreach(doms, i, o)
	{
		struct xgpu_state_record r = {0};
		const char *name = json_string_value(json_object_get(o, "name"));
		uint64_t domid, uid, gpu, credit, mem, ktimeout, pid;
		json_t *sla = json_object_get(o, "sla");
		if (!name || strlen(name) >= sizeof r.name || !get_u64(o, "domid", UINT32_MAX, &domid) ||
		    !get_u64(o, "uid", UINT32_MAX, &uid) || !get_u64(o, "gpu", 63, &gpu) ||
		    !get_u64(o, "credit", 65535, &credit) || !get_u64(o, "mem_limit", UINT64_MAX, &mem) ||
		    !get_u64(o, "kernel_timeout_s", UINT32_MAX, &ktimeout) ||
		    !get_u64(o, "executor_pid", INT32_MAX, &pid) || !json_is_number(sla)) {
			xlog_warn("%s: domain record %zu is malformed; skipped", path, i);
			continue;
		}
		snprintf(r.name, sizeof r.name, "%s", name);
		r.domid = (uint32_t)domid;
		r.owner_uid = (uid_t)uid;
		r.xen = json_is_true(json_object_get(o, "xen"));
		r.gpu = (int)gpu;
		r.credit = (uint32_t)credit;
		r.sla = json_number_value(sla);
		r.mem_limit = mem;
		r.mem_default = json_is_true(json_object_get(o, "mem_default"));
		r.kernel_timeout_s = (uint32_t)ktimeout;
		r.executor_pid = (pid_t)pid;
#define GET(name, field) get_u64(o, #name, UINT64_MAX, &r.name);
		STATE_U64_FIELDS(GET)
#undef GET
		if (restore(d, &r) == 0)
			n++;
	}
	json_decref(root);
	return n;
}

void xgpu_state_apply(const struct xgpu_state_record *r, struct xgpud_domain *dom)
{
#define SET(name, field) atomic_store(&field, r->name);
	STATE_U64_FIELDS(SET)
#undef SET
}

void xgpu_state_tick(struct xgpud *d, uint64_t now, pid_t (*executor_pid)(const struct xgpud_domain *))
{
	static uint64_t next;
	if (now < next || !d->domains)
		return;
	next = now + SAVE_PERIOD_NS;
	xgpu_state_save(d, executor_pid);
}
