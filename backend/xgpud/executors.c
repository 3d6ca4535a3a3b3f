/* SPDX-License-Identifier: Apache-2.0 */
/* executors.c - the domains' executor processes (executors.h).
 *
 * An executor is started when its domain gets a channel and has none: two
 * pages (control, status), two eventfds, a SOCK_SEQPACKET link, a listening
 * socket where a restarted xgpud will find it, and a pipe for its log; then
 * posix_spawn of xgpu-executor in a session of its own (so that a signal to
 * xgpud's process group does not reach it) and a START on the link. From
 * then on this file reads its link (channels closed, a fault), its log
 * (relayed line by line into xgpud's, bounded and cleaned), and its pidfd.
 *
 * When an executor ends, whatever the reason, every channel it still served
 * gets the reason's CUDA error in its region's header before xgpud closes
 * its copy of the guest's socket: the guest's process sees the hang-up only
 * after the code is there, and fails its calls with it from then on
 * (frontend/client.c). A fault is cudaErrorIllegalAddress or whatever the
 * executor's driver said, a kernel timeout cudaErrorLaunchTimeout, any other
 * death cudaErrorLaunchFailure, a stop cudaErrorDevicesUnavailable.
 *
 * Everything an executor says is hostile: its messages are checked and a bad
 * one ends it, its log lines are cut to printable text under the domain's
 * budget, its status page is read as numbers only.
 */
#include "executors.h"

#include "cuerr.h"
#include "fdpass.h"
#include "log.h"
#include "shm.h"
#include "util.h"
#include "xenif.h"
#include "xenvgpu.h"

#include <cuda_runtime_api.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#define STOP_GRACE_NS 1000000000ull /* a stopped executor's time to exit before SIGKILL */
#define ADOPT_TIMEOUT_MS 3000
#define DEFAULT_TAKE_MS 30000 /* an adopted Xen channel's wait for its device (XGPU_ADOPT_TAKE_MS) */
#define EXEC_LOG_BURST 200    /* an executor's lines per 10 s in xgpud's log */

/* What an event of the executors' epoll is about: the executor's address
 * with the kind in its low bits. */
enum { EV_LINK = 0, EV_EXIT = 1, EV_LOG = 2, EV_MASK = 3 };

struct xgpud_executors {
	int epfd;
	char dir[256];
	/* Executors whose domain moved on (a new one serves it, or the domain
	 * left) and that have not exited yet. */
	struct xgpud_executor *leaving;
	/* How long an adopted Xen channel waits for its device to come back
	 * (the Xen transport to take it) before it is closed. */
	uint64_t take_ns;
};

static struct xgpud_executors *S(struct xgpud *d)
{
	return d->executors;
}

static int pidfd_open_(pid_t pid)
{
	return (int)syscall(SYS_pidfd_open, pid, 0);
}

static int pidfd_kill(int pidfd, int sig)
{
	return (int)syscall(SYS_pidfd_send_signal, pidfd, sig, NULL, 0);
}

/* ---- set-up -------------------------------------------------------------------- */

int xgpu_executors_init(struct xgpud *d, char *err, size_t errlen)
{
	struct xgpud_executors *s = calloc(1, sizeof *s);
	if (!s) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	s->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (s->epfd < 0 || xgpu_exec_socket_dir(d->socket_path, s->dir, sizeof s->dir) < 0) {
		snprintf(err, errlen, "cannot set up the executors' epoll or socket directory (%s)",
			 d->socket_path);
		free(s);
		return -1;
	}
	/* Only xgpud may connect to an executor's socket: a guest that could
	 * would adopt it. */
	if (mkdir(s->dir, 0700) < 0 && errno != EEXIST) {
		snprintf(err, errlen, "cannot create %s: %s", s->dir, strerror(errno));
		close(s->epfd);
		free(s);
		return -1;
	}
	struct stat st;
	if (lstat(s->dir, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() ||
	    chmod(s->dir, 0700) < 0) {
		snprintf(err, errlen, "%s is not a directory of xgpud's own (uid %u)", s->dir,
			 (unsigned)geteuid());
		close(s->epfd);
		free(s);
		return -1;
	}
	/* XGPU_ADOPT_TAKE_MS lets tests wait less than a slow xenstore may. */
	const char *ms = getenv("XGPU_ADOPT_TAKE_MS");
	long v;
	s->take_ns = (ms && *ms && xgpu_parse_long(ms, 1, 3600000, &v) == 0 ? (uint64_t)v : DEFAULT_TAKE_MS) *
		     1000000ull;
	d->executors = s;
	return 0;
}

int xgpu_executors_fd(struct xgpud *d)
{
	return S(d)->epfd;
}

/* ---- channels' ends ------------------------------------------------------------ */

static void end_channel(struct xgpud_channel *ch, bool handed_on)
{
	if (ch->ended)
		ch->ended(ch, handed_on);
	else if (ch->region)
		munmap(ch->region, ch->region_size);
	xgpu_close_fds(ch->xfds, ch->nxfds);
	if (ch->sock >= 0)
		close(ch->sock);
	free(ch);
}

/* Writes code where the guest looks once its end hangs up. */
static void mark_end(struct xgpud_channel *ch, int code)
{
	if (ch->region && code)
		atomic_store(&((struct xgpu_shm_header *)ch->region)->backend_end, code);
}

static int end_code(const struct xgpud_executor *ex)
{
	switch (ex->end) {
	case XGPU_END_FAULT:
		return ex->end_code;
	case XGPU_END_TIMEOUT:
		return cudaErrorLaunchTimeout;
	case XGPU_END_STOPPED:
		return cudaErrorDevicesUnavailable;
	default:
		return cudaErrorLaunchFailure;
	}
}

/* Tells the local hypervisor schedule source which processes the domain is. */
static void publish_pids(struct xgpud_domain *dom)
{
	pid_t pids[XGPU_SCHED_PIDS_MAX];
	unsigned n = 0;
	for (struct xgpud_channel *ch = dom->channels; ch && n < XGPU_SCHED_PIDS_MAX; ch = ch->next) {
		bool seen = !ch->pid;
		for (unsigned i = 0; i < n && !seen; i++)
			seen = pids[i] == ch->pid;
		if (!seen)
			pids[n++] = ch->pid;
	}
	xgpu_sched_set_pids(dom->gpu->sched, &dom->sd, pids, n);
}

static void drop_channel(struct xgpud_domain *dom, uint32_t id, const char *why)
{
	for (struct xgpud_channel **pp = &dom->channels; *pp; pp = &(*pp)->next) {
		struct xgpud_channel *ch = *pp;
		if (ch->id != id)
			continue;
		*pp = ch->next;
		dlog_info(dom, "domain %s: channel %u (pid %d) closed (%s)", dom->name, id, (int)ch->pid,
			  why);
		end_channel(ch, false);
		atomic_fetch_sub(&dom->nchannels, 1);
		publish_pids(dom);
		return;
	}
}

/* ---- an executor's end ------------------------------------------------------------- */

static void unwatch(struct xgpud *d, struct xgpud_executor *ex)
{
	int fds[] = {ex->link_fd, ex->pidfd, ex->log_fd};
	for (size_t i = 0; i < XGPU_ARRAY_SIZE(fds); i++)
		if (fds[i] >= 0)
			epoll_ctl(S(d)->epfd, EPOLL_CTL_DEL, fds[i], NULL);
}

/* The domain stops using ex: the scheduler lets go of its pages, its
 * counters join the domain's. */
static void detach(struct xgpud_domain *dom, struct xgpud_executor *ex)
{
	struct xgpu_sched *s = dom->gpu->sched;
	xgpu_sched_unwatch(s, &dom->sd);
	xgpu_sched_remove(s, &dom->sd, xgpu_now_ns());
	/* The next executor's pages come with the next attach. */
	dom->sd.grant = NULL;
	dom->sd.report = NULL;
	const struct xgpu_dom_stats *st = &ex->st->stats;
	struct xgpud_counters *c = &dom->c;
#define RETIRE(f) atomic_fetch_add(&c->f, atomic_load_explicit(&st->f, memory_order_relaxed))
	RETIRE(calls);
	RETIRE(errors);
	RETIRE(h2d_bytes);
	RETIRE(d2h_bytes);
	RETIRE(kernels);
	RETIRE(queue_wait_ns);
	RETIRE(queue_waits);
	for (unsigned b = 0; b < XGPU_LAT_BUCKETS; b++) {
		RETIRE(lat[b]);
		RETIRE(wait[b]);
	}
#undef RETIRE
	atomic_fetch_add(&dom->sd.held_ns,
			 atomic_load_explicit(&ex->st->slot.ungated_ns, memory_order_relaxed));
	pthread_mutex_lock(&dom->d->domains_lock);
	if (dom->ex == ex)
		dom->ex = NULL;
	ex->dom = NULL;
	pthread_mutex_unlock(&dom->d->domains_lock);
}

static void free_executor(struct xgpud *d, struct xgpud_executor *ex)
{
	unwatch(d, ex);
	int fds[] = {ex->link_fd,   ex->pidfd,  ex->log_fd,   ex->wake_fd,
		     ex->notify_fd, ex->ctl_fd, ex->status_fd};
	for (size_t i = 0; i < XGPU_ARRAY_SIZE(fds); i++)
		if (fds[i] >= 0)
			close(fds[i]);
	if (ex->ctl)
		munmap(ex->ctl, XGPU_EXEC_PAGE_BYTES);
	if (ex->st)
		munmap((void *)ex->st, XGPU_EXEC_PAGE_BYTES);
	pthread_mutex_destroy(&ex->log_rl.lock);
	free(ex);
}

static void log_line(struct xgpud_executor *ex, char *line);
static void drain_log(struct xgpud *d, struct xgpud_executor *ex);
static void read_link(struct xgpud *d, struct xgpud_executor *ex);

/* ex has exited: what it said last, why it ended, its channels' ends. */
static void reap(struct xgpud *d, struct xgpud_executor *ex)
{
	/* Messages and lines it wrote before it went come first. */
	if (ex->link_fd >= 0)
		read_link(d, ex);
	drain_log(d, ex);
	if (ex->loglen) {
		ex->logbuf[ex->loglen] = '\0';
		log_line(ex, ex->logbuf);
		ex->loglen = 0;
	}
	int status = 0;
	char how[64] = "exited";
	if (ex->child && waitpid(ex->pid, &status, WNOHANG) == ex->pid) {
		if (WIFEXITED(status))
			snprintf(how, sizeof how, "exited with status %d", WEXITSTATUS(status));
		else if (WIFSIGNALED(status))
			snprintf(how, sizeof how, "was killed by signal %d", WTERMSIG(status));
	}
	if (ex->end == XGPU_END_NONE) {
		ex->end = XGPU_END_DIED;
		snprintf(ex->end_why, sizeof ex->end_why, "its executor %s", how);
	}
	struct xgpud_domain *dom = ex->dom;
	char sock[300];
	if (dom && xgpu_exec_socket_path(d->socket_path, dom->domid, sock, sizeof sock) == 0)
		unlink(sock);
	if (dom) {
		int code = end_code(ex);
		unsigned n = 0;
		while (dom->channels) {
			struct xgpud_channel *ch = dom->channels;
			dom->channels = ch->next;
			mark_end(ch, code);
			end_channel(ch, false);
			n++;
		}
		atomic_store(&dom->nchannels, 0);
		if (ex->end == XGPU_END_STOPPED && !n)
			xlog_info("domain %s: executor pid %d %s (%s)", dom->name, (int)ex->pid, how,
				  ex->end_why);
		else
			xlog_warn("domain %s: executor pid %d %s: %s; %u process%s of the domain get%s %s",
				  dom->name, (int)ex->pid, how, ex->end_why, n, n == 1 ? "" : "es",
				  n == 1 ? "s" : "", xgpu_rt_error_name(code));
		detach(dom, ex);
		publish_pids(dom);
	}
	free_executor(d, ex);
}

static void forget_leaving(struct xgpud *d, struct xgpud_executor *ex)
{
	for (struct xgpud_executor **pp = &S(d)->leaving; *pp; pp = &(*pp)->next_dead)
		if (*pp == ex) {
			*pp = ex->next_dead;
			return;
		}
}

/* ---- the link and the log ----------------------------------------------------------- */

/* The codes a fault may report: a context's sticky errors. Anything else an
 * executor says becomes a launch failure. */
static int fault_code(int code)
{
	switch (code) {
	case cudaErrorIllegalAddress:
	case cudaErrorLaunchTimeout:
	case cudaErrorHardwareStackError:
	case cudaErrorIllegalInstruction:
	case cudaErrorMisalignedAddress:
	case cudaErrorInvalidAddressSpace:
	case cudaErrorInvalidPc:
	case cudaErrorLaunchFailure:
	case cudaErrorECCUncorrectable:
	case cudaErrorAssert:
		return code;
	default:
		return cudaErrorLaunchFailure;
	}
}

static void kill_ex(struct xgpud_executor *ex, enum xgpu_exec_end end, const char *why)
{
	if (ex->end == XGPU_END_NONE || ex->end == XGPU_END_STOPPED) {
		ex->end = end;
		snprintf(ex->end_why, sizeof ex->end_why, "%s", why);
	}
	if (ex->pidfd >= 0 && pidfd_kill(ex->pidfd, SIGKILL) < 0 && errno != ESRCH)
		xlog_err("cannot kill executor pid %d: %s", (int)ex->pid, strerror(errno));
}

static void read_link(struct xgpud *d, struct xgpud_executor *ex)
{
	struct xgpud_domain *dom = ex->dom;
	for (int budget = 256; budget > 0 && ex->link_fd >= 0; budget--) {
		struct xgpu_link_msg m;
		int fds[XGPU_MAX_PASSED_FDS], nfds = 0;
		int r = xgpu_link_recv(ex->link_fd, &m, fds, &nfds, XGPU_MAX_PASSED_FDS, true);
		if (r < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		xgpu_close_fds(fds, nfds); /* an executor sends none */
		if (r < 0 && errno == ECONNRESET)
			r = 0; /* it exited with messages unread: an end like any */
		if (r <= 0) {
			/* Gone, or it broke the protocol: either way it ends. */
			if (r < 0 && dom)
				xlog_warn("domain %s: executor pid %d broke its link (%s); ending it",
					  dom->name, (int)ex->pid, strerror(errno));
			epoll_ctl(S(d)->epfd, EPOLL_CTL_DEL, ex->link_fd, NULL);
			close(ex->link_fd);
			ex->link_fd = -1;
			if (r < 0)
				kill_ex(ex, XGPU_END_DIED, "its executor broke its link");
			return;
		}
		if (!dom)
			continue;
		switch (m.type) {
		case XGPU_LINK_READY:
			ex->ready = true;
			xlog_info("domain %s: executor pid %d serves it on the %s", dom->name, (int)ex->pid,
				  xgpu_log_clean(m.text));
			break;
		case XGPU_LINK_CLOSED:
			drop_channel(dom, m.chan_id, xgpu_log_clean(m.text));
			if (!dom->channels && !ex->idle_since_ns)
				ex->idle_since_ns = xgpu_now_ns();
			break;
		case XGPU_LINK_FAULT: {
			int code = fault_code(m.code);
			if (ex->end == XGPU_END_NONE) {
				ex->end = XGPU_END_FAULT;
				ex->end_code = code;
				snprintf(ex->end_why, sizeof ex->end_why, "its context failed with %s",
					 xgpu_log_clean(m.text));
				atomic_fetch_add(&dom->c.faults, 1);
			}
			/* Before the executor's channels hang up one by one. */
			for (struct xgpud_channel *ch = dom->channels; ch; ch = ch->next)
				mark_end(ch, code);
			xlog_err("domain %s: %s; its processes get %s, its next process a new executor",
				 dom->name, ex->end_why, xgpu_rt_error_name(code));
			break;
		}
		default:
			xlog_warn("domain %s: executor pid %d sent message %u, which it may not; ending it",
				  dom->name, (int)ex->pid, m.type);
			kill_ex(ex, XGPU_END_DIED, "its executor broke its link");
			return;
		}
	}
}

/* One line of an executor's log, "<E|W|I|D> text" (log.c's relay form);
 * anything else (a sanitizer's report, the driver's own output) as a
 * warning. Cut to printable text under the domain's budget. */
static void log_line(struct xgpud_executor *ex, char *line)
{
	enum xgpu_log_level level = XGPU_LOG_WARN;
	char *text = line;
	const char *lv = strchr("EWID", line[0]);
	if (line[0] && lv && line[1] == ' ') {
		level = (enum xgpu_log_level)(lv - "EWID");
		text = line + 2;
	}
	if (!xgpu_log_enabled(level) || !*text)
		return;
	xgpu_log_limited(&ex->log_rl, level, "executor %d: %s", (int)ex->pid, xgpu_log_clean(text));
}

static void drain_log(struct xgpud *d, struct xgpud_executor *ex)
{
	for (int budget = 64; budget > 0 && ex->log_fd >= 0; budget--) {
		ssize_t n = read(ex->log_fd, ex->logbuf + ex->loglen, sizeof ex->logbuf - 1 - ex->loglen);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		if (n <= 0) {
			/* Its end is closed (it exited, or is exiting): a hung-up
			 * pipe stays readable, so it leaves the epoll set, or the
			 * main loop would spin until the exit is reaped. */
			epoll_ctl(S(d)->epfd, EPOLL_CTL_DEL, ex->log_fd, NULL);
			close(ex->log_fd);
			ex->log_fd = -1;
			return;
		}
		ex->loglen += (size_t)n;
		char *start = ex->logbuf, *nl;
		while ((nl = memchr(start, '\n', ex->loglen - (size_t)(start - ex->logbuf)))) {
			*nl = '\0';
			log_line(ex, start);
			start = nl + 1;
		}
		ex->loglen -= (size_t)(start - ex->logbuf);
		memmove(ex->logbuf, start, ex->loglen);
		if (ex->loglen == sizeof ex->logbuf - 1) {
			/* A line longer than the buffer: log what there is. */
			ex->logbuf[ex->loglen] = '\0';
			log_line(ex, ex->logbuf);
			ex->loglen = 0;
		}
	}
}

void xgpu_executors_event(struct xgpud *d)
{
	struct epoll_event ev[16];
	int n = epoll_wait(S(d)->epfd, ev, 16, 0);
	/* Exits last: an executor's last messages and lines come first. */
	for (int pass = 0; pass < 2; pass++)
		for (int i = 0; i < n; i++) {
			struct xgpud_executor *ex = (void *)(uintptr_t)(ev[i].data.u64 & ~(uint64_t)EV_MASK);
			unsigned kind = (unsigned)(ev[i].data.u64 & EV_MASK);
			if (!ex)
				continue;
			if (pass == 0 && kind == EV_LINK && ex->link_fd >= 0)
				read_link(d, ex);
			else if (pass == 0 && kind == EV_LOG)
				drain_log(d, ex);
			else if (pass == 1 && kind == EV_EXIT) {
				for (int k = i + 1; k < n; k++)
					if ((ev[k].data.u64 & ~(uint64_t)EV_MASK) == (uintptr_t)ex)
						ev[k].data.u64 = 0; /* freed below */
				forget_leaving(d, ex);
				reap(d, ex);
			}
		}
}

/* ---- starting one ------------------------------------------------------------------ */

static bool passes_env(const char *e)
{
	static const char *const keep[] = {
	    "XGPU_SIM_",        "XGPU_EXECUTOR_", "ASAN_OPTIONS=", "UBSAN_OPTIONS=", "LSAN_OPTIONS=",
	    "LD_LIBRARY_PATH=", "CUDA_",          "NVIDIA_",       "__GL_",          "TZ="};
	for (size_t i = 0; i < XGPU_ARRAY_SIZE(keep); i++)
		if (!strncmp(e, keep[i], strlen(keep[i])))
			return true;
	return false;
}

static int bind_at(const char *path, char *err, size_t errlen)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	if (strlen(path) >= sizeof sa.sun_path) {
		snprintf(err, errlen, "socket path %s is too long", path);
		return -1;
	}
	strcpy(sa.sun_path, path);
	unlink(path);
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	/* Bound only: the executor listens, so that whoever connects sees
	 * its credentials (SO_PEERCRED), not ours. */
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
		snprintf(err, errlen, "cannot listen on %s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

static int watch(struct xgpud *d, struct xgpud_executor *ex, int fd, unsigned kind)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.u64 = (uint64_t)(uintptr_t)ex | kind};
	return epoll_ctl(S(d)->epfd, EPOLL_CTL_ADD, fd, &ev);
}

static void wake_executor(struct xgpu_sched_dom *sd)
{
	struct xgpud_domain *dom = sd->owner;
	struct xgpud_executor *ex = dom->ex;
	uint64_t one = 1;
	if (ex && write(ex->wake_fd, &one, sizeof one) < 0 && errno != EAGAIN)
		xlog_err("domain %s: cannot wake its executor: %s", dom->name, strerror(errno));
}

/* The values an executor reads from its control page. */
static void fill_ctl(struct xgpud *d, struct xgpud_domain *dom, struct xgpu_exec_ctl *ctl)
{
	atomic_store(&ctl->mem_limit, atomic_load(&dom->mem_limit));
	atomic_store(&ctl->pinned_limit, d->o.pinned_limit);
	atomic_store(&ctl->spin_ns, d->o.spin_ns);
	atomic_store(&ctl->stall_timeout_s, d->o.stall_timeout_s);
	atomic_store(&ctl->log_level, (uint32_t)d->o.log_level);
}

/* Puts the domain's scheduler side on ex's pages. */
static int attach(struct xgpud_domain *dom, struct xgpud_executor *ex)
{
	struct xgpu_sched *s = dom->gpu->sched;
	dom->sd.grant = &ex->ctl->slot;
	dom->sd.report = &ex->st->slot;
	dom->sd.wake = wake_executor;
	pthread_mutex_lock(&dom->d->domains_lock);
	dom->ex = ex;
	ex->dom = dom;
	pthread_mutex_unlock(&dom->d->domains_lock);
	xgpu_sched_add(s, &dom->sd, xgpu_now_ns());
	if (xgpu_sched_watch(s, &dom->sd, ex->notify_fd) < 0)
		return -1;
	/* A request it made before we watched (an adopted executor's). */
	xgpu_sched_relay(s, &dom->sd, xgpu_now_ns());
	return 0;
}

/* The argument vector; what xgpud's uid and the domain's slot decide. */
static void spawn_args(struct xgpud *d, struct xgpud_domain *dom, char **argv, char *bufs, size_t buflen)
{
	size_t off = 0;
	int n = 0;
#define ARG(...)                                                                                             \
	do {                                                                                                 \
		argv[n++] = bufs + off;                                                                      \
		off += (size_t)snprintf(bufs + off, buflen - off, __VA_ARGS__) + 1;                          \
	} while (0)
	ARG("%s", d->executor_path);
	ARG("--domain");
	ARG("%s", dom->name);
	ARG("--driver");
	ARG("%s", d->driver_path);
	ARG("--driver-kind");
	ARG("%s", d->executor_name);
	ARG("--log-level");
	ARG("%s", (const char *[]){"error", "warn", "info", "debug"}[d->o.log_level & 3]);
	if (d->o.fatbin_inflate_limit) {
		ARG("--fatbin-inflate-limit");
		ARG("%llu", (unsigned long long)d->o.fatbin_inflate_limit);
	}
	if (geteuid() == 0 && d->o.executor_uid_base) {
		ARG("--uid");
		ARG("%u", d->o.executor_uid_base + dom->domid);
	}
	if (d->o.executor_sandbox) {
		ARG("--sandbox");
		ARG("%s", d->o.executor_sandbox);
	}
#undef ARG
	argv[n] = NULL;
}

static struct xgpud_executor *spawn(struct xgpud *d, struct xgpud_domain *dom, char *err, size_t errlen)
{
	struct xgpud_executor *ex = calloc(1, sizeof *ex);
	int sv[2] = {-1, -1}, logp[2] = {-1, -1}, lfd = -1;
	void *ctl = NULL, *st_rw = NULL;
	if (!ex) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	ex->link_fd = ex->pidfd = ex->log_fd = ex->wake_fd = ex->notify_fd = ex->ctl_fd = ex->status_fd = -1;
	xgpu_ratelimit_init(&ex->log_rl, EXEC_LOG_BURST, 10000);
	ex->ctl_fd = xgpu_exec_page_create("xgpu-exec-ctl", true, &ctl);
	ex->status_fd = xgpu_exec_page_create("xgpu-exec-status", false, &st_rw);
	ex->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	ex->notify_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	char sock[300];
	if (ex->ctl_fd < 0 || ex->status_fd < 0 || ex->wake_fd < 0 || ex->notify_fd < 0 ||
	    socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0 || pipe2(logp, O_CLOEXEC) < 0) {
		snprintf(err, errlen, "cannot set up its pages and link: %s", strerror(errno));
		goto fail;
	}
	ex->ctl = ctl;
	/* Ours to read only. */
	munmap(st_rw, XGPU_EXEC_PAGE_BYTES);
	st_rw = NULL;
	ex->st = xgpu_exec_page_map(ex->status_fd, false);
	if (!ex->st || xgpu_exec_socket_path(d->socket_path, dom->domid, sock, sizeof sock) < 0 ||
	    (lfd = bind_at(sock, err, errlen)) < 0) {
		if (!ex->st)
			snprintf(err, errlen, "cannot map its status page: %s", strerror(errno));
		goto fail;
	}
	fill_ctl(d, dom, ex->ctl);
	ex->link_fd = sv[0];
	ex->log_fd = logp[0];
	fcntl(ex->log_fd, F_SETFL, O_NONBLOCK);

	char *argv[16], argbuf[1024];
	spawn_args(d, dom, argv, argbuf, sizeof argbuf);
	char *envp[64];
	int ne = 0;
	for (char **e = environ; *e && ne < 63; e++)
		if (passes_env(*e))
			envp[ne++] = *e;
	envp[ne] = NULL;
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	posix_spawn_file_actions_init(&fa);
	posix_spawnattr_init(&at);
	posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, logp[1], STDOUT_FILENO);
	posix_spawn_file_actions_adddup2(&fa, logp[1], STDERR_FILENO);
	posix_spawn_file_actions_adddup2(&fa, sv[1], XGPU_EXEC_FD_LINK);
	posix_spawn_file_actions_adddup2(&fa, lfd, XGPU_EXEC_FD_LISTEN);
	posix_spawn_file_actions_addclosefrom_np(&fa, XGPU_EXEC_FD_LISTEN + 1);
	sigset_t none, all;
	sigemptyset(&none);
	sigfillset(&all);
	posix_spawnattr_setsigmask(&at, &none);
	posix_spawnattr_setsigdefault(&at, &all);
	/* A session of its own: ^C at xgpud's terminal, or a signal to its
	 * process group, must not end the guests' executors. */
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSID);
	int rc = posix_spawn(&ex->pid, d->executor_path, &fa, &at, argv, envp);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	close(sv[1]);
	close(logp[1]);
	close(lfd);
	sv[1] = logp[1] = lfd = -1;
	if (rc) {
		snprintf(err, errlen, "cannot start %s: %s", d->executor_path, strerror(rc));
		goto fail;
	}
	ex->child = true;
	ex->pidfd = pidfd_open_(ex->pid);
	struct xgpu_link_msg m = {0};
	struct xgpu_link_start *s = &m.u.start;
	snprintf(s->domain, sizeof s->domain, "%s", dom->name);
	s->domid = dom->domid;
	s->gpu = dom->gpu->index;
	s->xgpud_uid = geteuid();
	for (unsigned i = 0; dom->spec && i < dom->spec->ntasks && i < XGPU_ARRAY_SIZE(s->tasks); i++) {
		s->tasks[i].task = dom->spec->tasks[i].task;
		s->tasks[i].weight = dom->spec->tasks[i].weight;
		s->ntasks = i + 1;
	}
	int fds[4] = {ex->ctl_fd, ex->status_fd, ex->wake_fd, ex->notify_fd};
	if (ex->pidfd < 0 || xgpu_link_send(ex->link_fd, XGPU_LINK_START, &m, fds, 4) < 0 ||
	    watch(d, ex, ex->link_fd, EV_LINK) < 0 || watch(d, ex, ex->pidfd, EV_EXIT) < 0 ||
	    watch(d, ex, ex->log_fd, EV_LOG) < 0) {
		snprintf(err, errlen, "cannot start its link: %s", strerror(errno));
		kill(ex->pid, SIGKILL);
		waitpid(ex->pid, NULL, 0);
		goto fail;
	}
	if (attach(dom, ex) < 0) {
		snprintf(err, errlen, "cannot watch its reports: %s", strerror(errno));
		/* Its exit is watched now: it goes the usual way. */
		kill_ex(ex, XGPU_END_DIED, "it could not be attached to its GPU's scheduler");
		return NULL;
	}
	atomic_fetch_add(&dom->c.executors, 1);
	xlog_info("domain %s: executor pid %d started%s", dom->name, (int)ex->pid,
		  geteuid() == 0 && d->o.executor_uid_base ? "" : " (as xgpud's own uid)");
	return ex;
fail:
	if (st_rw)
		munmap(st_rw, XGPU_EXEC_PAGE_BYTES);
	xgpu_close_fds(sv, 2);
	xgpu_close_fds(logp, 2);
	if (lfd >= 0)
		close(lfd);
	unlink(sock);
	free_executor(d, ex);
	return NULL;
}

/* Sends STOP and gives ex a second before SIGKILL. */
static void stop_ex(struct xgpud_executor *ex, const char *why)
{
	if (ex->stopping)
		return;
	ex->stopping = true;
	ex->stop_at_ns = xgpu_now_ns() + STOP_GRACE_NS;
	if (ex->end == XGPU_END_NONE) {
		ex->end = XGPU_END_STOPPED;
		snprintf(ex->end_why, sizeof ex->end_why, "%s", why);
	}
	struct xgpu_link_msg m = {0};
	snprintf(m.text, sizeof m.text, "%s", why);
	if (ex->link_fd < 0 || xgpu_link_send(ex->link_fd, XGPU_LINK_STOP, &m, NULL, 0) < 0)
		kill_ex(ex, XGPU_END_STOPPED, why);
}

/* dom's executor goes; a new one will serve the domain. */
static void let_go(struct xgpud *d, struct xgpud_domain *dom)
{
	struct xgpud_executor *ex = dom->ex;
	if (!ex)
		return;
	for (struct xgpud_channel *ch = dom->channels; ch; ch = ch->next)
		mark_end(ch, end_code(ex));
	while (dom->channels) {
		struct xgpud_channel *ch = dom->channels;
		dom->channels = ch->next;
		end_channel(ch, false);
	}
	atomic_store(&dom->nchannels, 0);
	detach(dom, ex);
	ex->next_dead = S(d)->leaving;
	S(d)->leaving = ex;
}

int xgpu_executors_add_channel(struct xgpud_domain *dom, struct xgpud_handover *h, char *err, size_t errlen)
{
	struct xgpud *d = dom->d;
	int r = -1;
	/* One on its way out (stopped, faulted, or gone with its link while
	 * its exit is not yet reaped) serves no new process. */
	if (dom->ex && (dom->ex->stopping || dom->ex->end != XGPU_END_NONE || dom->ex->link_fd < 0))
		let_go(d, dom);
	if (!dom->ex && !spawn(d, dom, err, errlen))
		goto out;
	struct xgpud_executor *ex = dom->ex;
	struct xgpu_link_msg m = {.chan_id = h->ch->id};
	m.u.channel = (struct xgpu_link_channel){.kind = h->kind,
						 .task = h->ch->task,
						 .pid = h->ch->pid,
						 .uid = h->ch->uid,
						 .region_size = h->ch->region_size,
						 .xen = h->xen};
	if (xgpu_link_send(ex->link_fd, XGPU_LINK_CHANNEL, &m, h->fds, h->nfds) < 0) {
		snprintf(err, errlen, "cannot hand the channel to executor pid %d: %s", (int)ex->pid,
			 strerror(errno));
		goto out;
	}
	h->ch->next = dom->channels;
	dom->channels = h->ch;
	atomic_fetch_add(&dom->nchannels, 1);
	atomic_fetch_add(&dom->c.channels_total, 1);
	ex->idle_since_ns = 0;
	publish_pids(dom);
	r = 0;
out:
	xgpu_close_fds(h->fds, h->nfds);
	h->nfds = 0;
	return r;
}

void xgpu_executors_close_channel(struct xgpud_domain *dom, uint32_t id, const char *why)
{
	struct xgpud_executor *ex = dom->ex;
	struct xgpu_link_msg m = {.chan_id = id};
	snprintf(m.text, sizeof m.text, "%s", why);
	if (ex && ex->link_fd >= 0 && xgpu_link_send(ex->link_fd, XGPU_LINK_CLOSE, &m, NULL, 0) < 0)
		kill_ex(ex, XGPU_END_DIED, "its link failed");
}

void xgpu_executors_set_mem_limit(struct xgpud_domain *dom, uint64_t bytes)
{
	atomic_store(&dom->mem_limit, bytes);
	if (dom->ex)
		atomic_store(&dom->ex->ctl->mem_limit, bytes);
}

void xgpu_executors_kill(struct xgpud_domain *dom, enum xgpu_exec_end end, const char *why)
{
	if (dom->ex)
		kill_ex(dom->ex, end, why);
}

void xgpu_executors_forget(struct xgpud_domain *dom)
{
	struct xgpud *d = dom->d;
	struct xgpud_executor *ex = dom->ex;
	if (!ex)
		return;
	kill_ex(ex, XGPU_END_STOPPED, "its domain was removed");
	let_go(d, dom);
}

/* ---- the tick -------------------------------------------------------------------- */

/* Adopted Xen channels whose device did not come back (the domain's backend
 * directory went while no xgpud ran, or the device was refused): no
 * transport will ever take them, and their guest is served unscheduled
 * until they are closed. */
static void close_stale_untaken(struct xgpud *d, struct xgpud_domain *dom, uint64_t now)
{
	for (struct xgpud_channel *ch = dom->channels; ch; ch = ch->next) {
		if (!ch->nxfds || ch->ended || !ch->adopted_ns || now - ch->adopted_ns < S(d)->take_ns)
			continue;
		xlog_warn(
		    "domain %s: channel %u (vgpu channel %u) of the adopted executor: its device did not "
		    "come back within %.1f s of xgpud's restart; closing it",
		    dom->name, ch->id, ch->xen.n, (double)S(d)->take_ns / 1e9);
		xgpu_close_fds(ch->xfds, ch->nxfds);
		ch->nxfds = 0;
		xgpu_executors_close_channel(dom, ch->id,
					     "its device did not come back after xgpud restarted");
	}
}

/* The kernel timeout: an operation unfinished for longer than the domain's
 * limit ends its executor, and with it the kernel (NVIDIA's driver ends a
 * context's work with its process, never from another thread). */
static void check_timeout(struct xgpud_domain *dom, uint64_t now)
{
	struct xgpud_executor *ex = dom->ex;
	uint32_t limit = atomic_load(&dom->kernel_timeout_s);
	uint64_t since = atomic_load(&ex->st->busy_since_ns);
	if (!limit || !since || since > now || ex->end != XGPU_END_NONE)
		return;
	uint64_t ran = now - since;
	if (ran < (uint64_t)limit * 1000000000ull)
		return;
	atomic_fetch_add(&dom->c.timeouts, 1);
	char why[160];
	snprintf(why, sizeof why, "an operation ran for %.1f s, past its kernel timeout of %u s",
		 (double)ran / 1e9, limit);
	xlog_warn(
	    "domain %s: %s: its executor (pid %d) is ended, and with it the operation; its processes get "
	    "cudaErrorLaunchTimeout",
	    dom->name, why, (int)ex->pid);
	kill_ex(ex, XGPU_END_TIMEOUT, why);
	/* Before the guests' sockets hang up. */
	for (struct xgpud_channel *ch = dom->channels; ch; ch = ch->next)
		mark_end(ch, cudaErrorLaunchTimeout);
}

void xgpu_executors_tick(struct xgpud *d, uint64_t now)
{
	struct xgpud_executors *s = S(d);
	for (struct xgpud_domain *dom = d->domains; dom; dom = dom->next) {
		struct xgpud_executor *ex = dom->ex;
		if (!ex)
			continue;
		if (ex->stopping) {
			if (now > ex->stop_at_ns) {
				xlog_warn(
				    "domain %s: executor pid %d did not stop within a second; killing it",
				    dom->name, (int)ex->pid);
				kill_ex(ex, XGPU_END_STOPPED, ex->end_why);
				ex->stop_at_ns = UINT64_MAX;
			}
			continue;
		}
		check_timeout(dom, now);
		close_stale_untaken(d, dom, now);
		if (!dom->channels && ex->idle_since_ns && !atomic_load(&d->stopping) &&
		    now - ex->idle_since_ns >= (uint64_t)d->o.executor_linger_ms * 1000000ull)
			stop_ex(ex, "idle");
	}
	for (struct xgpud_executor *ex = s->leaving; ex; ex = ex->next_dead)
		if (!ex->stopping || now > ex->stop_at_ns) {
			kill_ex(ex, XGPU_END_STOPPED, "replaced");
			ex->stopping = true;
			ex->stop_at_ns = UINT64_MAX;
		}
}

/* ---- stopping and restarting xgpud ------------------------------------------------ */

static bool any_running(struct xgpud *d)
{
	if (S(d)->leaving)
		return true;
	for (struct xgpud_domain *dom = d->domains; dom; dom = dom->next)
		if (dom->ex)
			return true;
	return false;
}

/* Reaps what exits within ns. */
static void reap_for(struct xgpud *d, uint64_t ns)
{
	uint64_t until = xgpu_now_ns() + ns;
	while (any_running(d)) {
		uint64_t now = xgpu_now_ns();
		if (now >= until)
			break;
		struct pollfd p = {S(d)->epfd, POLLIN, 0};
		poll(&p, 1, (int)((until - now) / 1000000u) + 1);
		xgpu_executors_event(d);
	}
}

void xgpu_executors_stop_all(struct xgpud *d, const char *why)
{
	for (struct xgpud_domain *dom = d->domains; dom; dom = dom->next)
		if (dom->ex)
			stop_ex(dom->ex, why);
	reap_for(d, 800000000ull);
	for (struct xgpud_domain *dom = d->domains; dom; dom = dom->next)
		if (dom->ex)
			kill_ex(dom->ex, XGPU_END_STOPPED, why);
	for (struct xgpud_executor *ex = S(d)->leaving; ex; ex = ex->next_dead)
		kill_ex(ex, XGPU_END_STOPPED, why);
	reap_for(d, 800000000ull);
	/* One stuck in the kernel (a driver call that SIGKILL cannot cut):
	 * its processes are told now, and init reaps it. */
	for (struct xgpud_domain *dom = d->domains; dom; dom = dom->next)
		if (dom->ex) {
			xlog_warn("domain %s: executor pid %d has not exited; leaving it to the kernel",
				  dom->name, (int)dom->ex->pid);
			dom->ex->child = false;
			reap(d, dom->ex);
		}
	while (S(d)->leaving) {
		struct xgpud_executor *ex = S(d)->leaving;
		S(d)->leaving = ex->next_dead;
		ex->child = false;
		reap(d, ex);
	}
	close(S(d)->epfd);
	rmdir(S(d)->dir);
	free(S(d));
	d->executors = NULL;
}

void xgpu_executors_release_all(struct xgpud *d)
{
	for (struct xgpud_domain *dom = d->domains; dom; dom = dom->next) {
		struct xgpud_executor *ex = dom->ex;
		if (!ex)
			continue;
		xlog_info("domain %s: executor pid %d goes on serving %u process%s for the next xgpud",
			  dom->name, (int)ex->pid, atomic_load(&dom->nchannels),
			  atomic_load(&dom->nchannels) == 1 ? "" : "es");
		/* Its channels stay its own; only our copies go. */
		while (dom->channels) {
			struct xgpud_channel *ch = dom->channels;
			dom->channels = ch->next;
			end_channel(ch, true);
		}
		detach(dom, ex);
		free_executor(d, ex);
	}
	while (S(d)->leaving) {
		struct xgpud_executor *ex = S(d)->leaving;
		S(d)->leaving = ex->next_dead;
		kill_ex(ex, XGPU_END_STOPPED, "replaced");
		free_executor(d, ex);
	}
	close(S(d)->epfd);
	free(S(d));
	d->executors = NULL;
}

/* ---- readers ------------------------------------------------------------------------- */

pid_t xgpu_executor_pid(const struct xgpud_domain *dom)
{
	return dom->ex ? dom->ex->pid : 0;
}

const char *xgpu_executor_state(const struct xgpud_domain *dom)
{
	const struct xgpud_executor *ex = dom->ex;
	if (!ex)
		return "none";
	if (ex->stopping || ex->end != XGPU_END_NONE)
		return "stopping";
	return ex->ready ? "serving" : "starting";
}

void xgpu_executor_stats(const struct xgpud_domain *dom, struct xgpu_dom_stats *out)
{
	memset(out, 0, sizeof *out);
	const struct xgpud_counters *c = &dom->c;
	const struct xgpu_dom_stats *st = dom->ex ? &dom->ex->st->stats : NULL;
#define SUM(f)                                                                                               \
	atomic_store_explicit(&out->f, atomic_load(&c->f) + (st ? atomic_load(&st->f) : 0),                  \
			      memory_order_relaxed)
	SUM(calls);
	SUM(errors);
	SUM(h2d_bytes);
	SUM(d2h_bytes);
	SUM(kernels);
	SUM(queue_wait_ns);
	SUM(queue_waits);
	for (unsigned b = 0; b < XGPU_LAT_BUCKETS; b++) {
		SUM(lat[b]);
		SUM(wait[b]);
	}
#undef SUM
	atomic_store(&out->mem_bytes, st ? atomic_load(&st->mem_bytes) : 0);
	atomic_store(&out->channels, atomic_load(&dom->nchannels));
	atomic_store(&out->channels_total, atomic_load(&c->channels_total));
	atomic_store(&out->timeouts, atomic_load(&c->timeouts));
}

/* ---- adoption ----------------------------------------------------------------------- */

/* One of the adopted executor's channels, as xgpud keeps it: who the guest
 * is comes from its socket (SO_PEERCRED), not from the executor. */
/* A Xen channel: only its handles' copies and what the executor says of it,
 * all checked again by the Xen transport against xenstore when it takes the
 * channel (take_xen_channel); until then the channel is the domain's but no
 * transport's, and it is closed if none takes it in time (the tick). On
 * real Xen the grant broker's xgpud end went with the previous xgpud: the
 * transport makes a new one and hands its other end over (hand_broker). */
static struct xgpud_channel *adopt_xen_channel(struct xgpud_domain *dom, const struct xgpu_link_msg *m,
					       int *fds, int nfds)
{
	const struct xgpu_link_xen *x = &m->u.channel.xen;
	if (!dom->xen || x->domid != dom->domid ||
	    (x->impl != XGPU_XEN_IMPL_STUB && x->impl != XGPU_XEN_IMPL_REAL) || xgpu_xen_impl() != x->impl ||
	    x->evt_fds < 1 || (int)x->evt_fds >= nfds || nfds > XGPU_LINK_CHAN_FDS || x->ring_pages == 0 ||
	    x->ring_pages > XGPU_XEN_MAX_REGION_PAGES || x->n >= XGPU_XEN_MAX_CHANNELS)
		return NULL;
	for (struct xgpud_channel *o = dom->channels; o; o = o->next)
		if (o->nxfds && o->xen.n == x->n)
			return NULL;
	struct xgpud_channel *ch = calloc(1, sizeof *ch);
	if (!ch)
		return NULL;
	*ch = (struct xgpud_channel){.id = m->chan_id,
				     .task = x->task,
				     .sock = -1,
				     .xen = *x,
				     .nxfds = nfds,
				     .adopted_ns = xgpu_now_ns()};
	for (int i = 0; i < nfds; i++) {
		ch->xfds[i] = fds[i];
		fds[i] = -1;
	}
	return ch;
}

static struct xgpud_channel *adopt_channel(struct xgpud_domain *dom, const struct xgpu_link_msg *m, int *fds,
					   int nfds)
{
	if (m->u.channel.kind == XGPU_CHAN_XEN)
		return adopt_xen_channel(dom, m, fds, nfds);
	struct ucred cred;
	socklen_t cl = sizeof cred;
	struct stat st;
	uint64_t size = m->u.channel.region_size;
	if (m->u.channel.kind != XGPU_CHAN_LOCAL || nfds != 2 ||
	    getsockopt(fds[0], SOL_SOCKET, SO_PEERCRED, &cred, &cl) < 0 || fstat(fds[1], &st) < 0 ||
	    (uint64_t)st.st_size != size || size == 0 || size > XGPU_SHM_MAX_REGION ||
	    (fcntl(fds[1], F_GET_SEALS) & (F_SEAL_SHRINK | F_SEAL_GROW)) != (F_SEAL_SHRINK | F_SEAL_GROW))
		return NULL;
	void *region = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fds[1], 0);
	struct xgpud_channel *ch = region != MAP_FAILED ? calloc(1, sizeof *ch) : NULL;
	if (!ch) {
		if (region != MAP_FAILED)
			munmap(region, size);
		return NULL;
	}
	*ch = (struct xgpud_channel){.id = m->chan_id,
				     .task = m->u.channel.task,
				     .pid = cred.pid,
				     .uid = cred.uid,
				     .region = region,
				     .region_size = size,
				     .sock = fds[0]};
	fds[0] = -1;
	(void)dom;
	return ch;
}

/* Takes over the executor listening at path for dom, whose previous xgpud
 * recorded it as pid dom->adopt_pid. 0, or -1 with the reason in err. */
static int adopt_one(struct xgpud *d, struct xgpud_domain *dom, const char *path, char *err, size_t errlen)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	if (strlen(path) >= sizeof sa.sun_path) {
		snprintf(err, errlen, "its socket path is too long");
		return -1;
	}
	memcpy(sa.sun_path, path, strlen(path) + 1);
	int conn = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	struct xgpud_executor *ex = calloc(1, sizeof *ex);
	struct xgpud_channel *held = NULL;
	int logp[2] = {-1, -1}, fds[XGPU_MAX_PASSED_FDS], nfds = 0;
	struct timeval tv = {ADOPT_TIMEOUT_MS / 1000, 0};
	struct ucred cred;
	socklen_t cl = sizeof cred;
	if (!ex) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	ex->link_fd = ex->pidfd = ex->log_fd = ex->wake_fd = ex->notify_fd = ex->ctl_fd = ex->status_fd = -1;
	xgpu_ratelimit_init(&ex->log_rl, EXEC_LOG_BURST, 10000);
	if (conn < 0 || connect(conn, (struct sockaddr *)&sa, sizeof sa) < 0) {
		snprintf(err, errlen, "it does not answer (%s)", strerror(errno));
		goto fail;
	}
	setsockopt(conn, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	setsockopt(conn, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
	if (getsockopt(conn, SOL_SOCKET, SO_PEERCRED, &cred, &cl) < 0 || cred.pid != dom->adopt_pid) {
		snprintf(err, errlen, "pid %d answers, the previous xgpud recorded pid %d", (int)cred.pid,
			 (int)dom->adopt_pid);
		goto fail;
	}
	struct xgpu_link_msg m = {0};
	if (xgpu_link_send(conn, XGPU_LINK_ADOPT, &m, NULL, 0) < 0 ||
	    xgpu_link_recv(conn, &m, fds, &nfds, XGPU_MAX_PASSED_FDS, false) != 1 ||
	    m.type != XGPU_LINK_ADOPTING || nfds != 3) {
		snprintf(err, errlen, "it did not hand itself over");
		xgpu_close_fds(fds, nfds);
		goto fail;
	}
	ex->status_fd = fds[0];
	ex->wake_fd = fds[1];
	ex->notify_fd = fds[2];
	ex->st = xgpu_exec_page_map(ex->status_fd, false);
	if (!ex->st || ex->st->magic != XGPU_EXEC_MAGIC || ex->st->version != XGPU_EXEC_VERSION) {
		snprintf(err, errlen, "its status page is not one of this version");
		goto fail;
	}
	for (uint32_t n = 0;; n++) {
		if (xgpu_link_recv(conn, &m, fds, &nfds, XGPU_MAX_PASSED_FDS, false) != 1) {
			snprintf(err, errlen, "it stopped handing over its channels");
			goto fail;
		}
		if (m.type == XGPU_LINK_HELD_DONE)
			break;
		struct xgpud_channel *ch = m.type == XGPU_LINK_HELD && n < d->o.max_channels_per_domain
					       ? adopt_channel(dom, &m, fds, nfds)
					       : NULL;
		xgpu_close_fds(fds, nfds);
		if (!ch) {
			snprintf(err, errlen, "it handed over a channel that is not one");
			goto fail;
		}
		ch->next = held;
		held = ch;
		if (ch->id > atomic_load(&d->next_channel_id))
			atomic_store(&d->next_channel_id, ch->id);
	}
	void *ctl = NULL;
	ex->ctl_fd = xgpu_exec_page_create("xgpu-exec-ctl", true, &ctl);
	if (ex->ctl_fd < 0 || pipe2(logp, O_CLOEXEC) < 0) {
		snprintf(err, errlen, "cannot make its pages: %s", strerror(errno));
		goto fail;
	}
	ex->ctl = ctl;
	fill_ctl(d, dom, ex->ctl);
	/* What it asked for before now was asked of the previous xgpud:
	 * it asks again if it still needs the slot. */
	atomic_store(&ex->ctl->slot.requests_seen, atomic_load(&ex->st->slot.requests));
	int start_fds[2] = {ex->ctl_fd, logp[1]};
	m = (struct xgpu_link_msg){0};
	if (xgpu_link_send(conn, XGPU_LINK_START, &m, start_fds, 2) < 0) {
		snprintf(err, errlen, "cannot send it its control page: %s", strerror(errno));
		goto fail;
	}
	close(logp[1]);
	logp[1] = -1;
	tv = (struct timeval){0, 0};
	setsockopt(conn, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	ex->pid = cred.pid;
	ex->pidfd = pidfd_open_(ex->pid);
	ex->link_fd = conn;
	conn = -1;
	ex->log_fd = logp[0];
	logp[0] = -1;
	fcntl(ex->log_fd, F_SETFL, O_NONBLOCK);
	ex->ready = true;
	if (ex->pidfd < 0 || watch(d, ex, ex->link_fd, EV_LINK) < 0 || watch(d, ex, ex->pidfd, EV_EXIT) < 0 ||
	    watch(d, ex, ex->log_fd, EV_LOG) < 0) {
		snprintf(err, errlen, "cannot watch it: %s", strerror(errno));
		goto fail;
	}
	unsigned n = 0;
	while (held) {
		struct xgpud_channel *ch = held;
		held = ch->next;
		ch->next = dom->channels;
		dom->channels = ch;
		n++;
	}
	atomic_store(&dom->nchannels, n);
	if (!n)
		ex->idle_since_ns = xgpu_now_ns();
	if (attach(dom, ex) < 0) {
		kill_ex(ex, XGPU_END_DIED, "it could not be attached to its GPU's scheduler");
		return 0; /* its exit is watched: it goes the usual way */
	}
	publish_pids(dom);
	xlog_info("domain %s: adopted executor pid %d, serving %u process%s", dom->name, (int)ex->pid, n,
		  n == 1 ? "" : "es");
	return 0;
fail:
	while (held) {
		struct xgpud_channel *ch = held;
		held = ch->next;
		end_channel(ch, false);
	}
	xgpu_close_fds(logp, 2);
	if (conn >= 0)
		close(conn);
	if (ex)
		free_executor(d, ex);
	return -1;
}

int xgpu_executors_adopt(struct xgpud *d)
{
	DIR *dir = opendir(S(d)->dir);
	if (!dir)
		return 0;
	int adopted = 0;
	struct dirent *e;
	while ((e = readdir(dir))) {
		long domid;
		char path[320], err[256];
		if (xgpu_parse_long(e->d_name, 1, UINT32_MAX, &domid) < 0 ||
		    xgpu_exec_socket_path(d->socket_path, (uint32_t)domid, path, sizeof path) < 0)
			continue;
		struct xgpud_domain *dom = d->domains;
		while (dom && dom->domid != (uint32_t)domid)
			dom = dom->next;
		if (!dom || !dom->adopt_pid) {
			xlog_warn(
			    "an executor's socket for domid %ld has no record of the previous xgpud; "
			    "removing it (that executor, if it runs, serves on unscheduled until it ends)",
			    domid);
			unlink(path);
			continue;
		}
		if (adopt_one(d, dom, path, err, sizeof err) == 0) {
			adopted++;
		} else {
			xlog_warn("domain %s: cannot adopt its executor (pid %d): %s", dom->name,
				  (int)dom->adopt_pid, err);
			unlink(path);
		}
		dom->adopt_pid = 0;
	}
	closedir(dir);
	return adopted;
}

/* ---- adopted Xen channels ---------------------------------------------------------- */

struct xgpud_channel *xgpu_executors_take_xen_channel(struct xgpud_domain *dom, uint32_t n)
{
	for (struct xgpud_channel *ch = dom->channels; ch; ch = ch->next)
		if (ch->nxfds && ch->xen.n == n)
			return ch;
	return NULL;
}

void xgpu_executors_close_untaken(struct xgpud_domain *dom, const char *why)
{
	for (struct xgpud_channel *ch = dom->channels; ch; ch = ch->next)
		if (ch->nxfds && !ch->ended) {
			xgpu_close_fds(ch->xfds, ch->nxfds);
			ch->nxfds = 0;
			xgpu_executors_close_channel(dom, ch->id, why);
		}
}

int xgpu_executors_hand_broker(struct xgpud_domain *dom, uint32_t id, int fd)
{
	struct xgpud_executor *ex = dom->ex;
	struct xgpu_link_msg m = {.chan_id = id};
	if (!ex || ex->link_fd < 0) {
		errno = ESRCH;
		return -1;
	}
	return xgpu_link_send(ex->link_fd, XGPU_LINK_BROKER, &m, &fd, 1);
}
