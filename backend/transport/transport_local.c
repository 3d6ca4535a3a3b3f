/* SPDX-License-Identifier: Apache-2.0 */
/* transport_local.c - xgpud's local transport: the listening AF_UNIX
 * SOCK_SEQPACKET socket and the handshake, after which a channel's socket
 * and region go to its domain's executor (backend/executor/chan_local.c
 * serves them there).
 *
 * Everything a client sends is checked before use: the region must be a
 * sealed memfd (so it cannot shrink under a mapping and fault the process
 * that maps it), sizes and layout must match, and the client's identity
 * comes from SO_PEERCRED, not from anything it says. New connections wait
 * in a bounded table, read only when epoll says they are readable and
 * dropped after a second of silence, so a client that connects and says
 * nothing holds up nobody.
 */
#include "transport_local.h"

#include "fdpass.h"
#include "log.h"
#include "shm.h"
#include "util.h"

#include <cuda_runtime_api.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#define MAX_PENDING_CONNECTIONS 256
#define HELLO_TIMEOUT_NS 1000000000ull

/* ---- the handshake --------------------------------------------------------- */

static void refuse(int conn, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void refuse(int conn, int status, const char *fmt, ...)
{
	struct xgpu_hello_ack ack = {
	    .magic = XGPU_PROTO_MAGIC, .version = XGPU_PROTO_VERSION, .status = status};
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(ack.message, sizeof ack.message, fmt, ap);
	va_end(ap);
	send(conn, &ack, sizeof ack, MSG_NOSIGNAL | MSG_DONTWAIT);
	/* Before a domain is known the budget is shared by all clients. */
	static struct xgpu_ratelimit rl = XGPU_RATELIMIT_INIT(50, 10000);
	xgpu_log_limited(&rl, XGPU_LOG_WARN, "refused a client: %s", ack.message);
}

/* Returns true when the channel took conn and the region fd (handed to the
 * domain's executor), false when the caller must close them. */
static bool accept_channel(const struct xgpu_transport_host *host, int conn, const struct xgpu_hello *h,
			   int memfd, const struct ucred *cred)
{
	char err[192];
	struct stat st;
	if (fstat(memfd, &st) < 0 || st.st_size <= 0 || (uint64_t)st.st_size > XGPU_SHM_MAX_REGION) {
		refuse(conn, cudaErrorInvalidValue, "channel region refused: %s",
		       st.st_size > 0 ? "larger than a region may be" : "empty");
		return false;
	}
	if (xgpu_shm_check_memfd(memfd, (uint64_t)st.st_size, err, sizeof err) < 0) {
		refuse(conn, cudaErrorInvalidValue, "channel region refused: %s", err);
		return false;
	}
	size_t size = (size_t)st.st_size;
	/* Mapped here too: to check its layout before any executor sees it,
	 * and to tell the guest why, should its executor end. */
	void *region = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
	if (region == MAP_FAILED) {
		refuse(conn, cudaErrorMemoryAllocation, "cannot map the channel region: %s", strerror(errno));
		return false;
	}
	struct xgpud_channel *ch = calloc(1, sizeof *ch);
	struct xgpu_shm_view v;
	if (!ch) {
		refuse(conn, cudaErrorMemoryAllocation, "out of memory");
		munmap(region, size);
		return false;
	}
	ch->sock = -1;
	ch->region = region;
	ch->region_size = size;
	if (xgpu_shm_attach(region, size, &v, err, sizeof err) < 0) {
		refuse(conn, cudaErrorInvalidValue, "channel region refused: %s", err);
		goto fail;
	}
	char name[XGPU_DOMAIN_NAME_MAX];
	memcpy(name, h->domain, sizeof name);
	name[sizeof name - 1] = '\0';
	struct xgpud_domain *dom = host->join_domain(host->core, name, cred->uid, err, sizeof err);
	if (!dom) {
		refuse(conn, cudaErrorDevicesUnavailable, "%s", err);
		goto fail;
	}
	struct xgpu_hello_ack ack;
	int status;
	if (host->admit_channel(host->core, dom, ch, &ack, &status, err, sizeof err) < 0) {
		refuse(conn, status, "%s", err);
		goto fail;
	}
	ch->task = h->task;
	ch->pid = cred->pid;
	ch->uid = cred->uid;
	/* The executor gets copies; our conn stays in ch, so that the guest
	 * sees its hang-up only after we wrote why its executor ended
	 * (executors.c). */
	struct xgpud_handover ho = {.kind = XGPU_CHAN_LOCAL, .ch = ch, .nfds = 2};
	ho.fds[0] = fcntl(conn, F_DUPFD_CLOEXEC, 0);
	ho.fds[1] = fcntl(memfd, F_DUPFD_CLOEXEC, 0);
	if (ho.fds[0] < 0 || ho.fds[1] < 0) {
		xgpu_close_fds(ho.fds, 2);
		refuse(conn, cudaErrorMemoryAllocation, "out of descriptors: %s", strerror(errno));
		goto fail;
	}
	uint32_t id = ch->id;
	ch->sock = conn;
	if (host->add_channel(host->core, dom, &ho, err, sizeof err) < 0) {
		ch->sock = -1;
		refuse(conn, cudaErrorDevicesUnavailable, "%s", err);
		goto fail;
	}
	/* The domain holds ch now; its executor serves the guest. */
	if (send(conn, &ack, sizeof ack, MSG_NOSIGNAL | MSG_DONTWAIT) != (ssize_t)sizeof ack)
		dlog_warn(dom, "domain %s: pid %d left during the handshake", dom->name, (int)cred->pid);
	close(memfd);
	dlog_info(dom, "domain %s: channel %u opened by pid %d (uid %u, task %u, runtime %d)", dom->name, id,
		  (int)cred->pid, (unsigned)cred->uid, h->task, h->runtime_version);
	return true;
fail:
	munmap(region, size);
	free(ch);
	return false;
}

/* A connection that sent its hello: a channel, a control request, or junk. */
static void handshake(const struct xgpu_transport_host *host, int conn)
{
	struct ucred cred;
	socklen_t cl = sizeof cred;
	struct xgpu_hello h;
	int fds[XGPU_MAX_PASSED_FDS], nfds = 0;
	memset(&h, 0, sizeof h);
	ssize_t n = xgpu_recv_fds(conn, &h, sizeof h, fds, &nfds, 1, MSG_DONTWAIT);
	if (n < 0 || getsockopt(conn, SOL_SOCKET, SO_PEERCRED, &cred, &cl) < 0) {
		xgpu_close_fds(fds, nfds);
		close(conn);
		return;
	}
	bool kept = false;
	if (n < 8 || h.magic != XGPU_PROTO_MAGIC) {
		refuse(conn, cudaErrorInvalidValue, "pid %d sent no xgpu handshake", (int)cred.pid);
	} else if (h.version != XGPU_PROTO_VERSION) {
		refuse(conn, cudaErrorInsufficientDriver,
		       "protocol version mismatch: client (pid %d) speaks xgpu protocol %u, xgpud speaks %u",
		       (int)cred.pid, h.version, XGPU_PROTO_VERSION);
	} else if (n != (ssize_t)sizeof h) {
		refuse(conn, cudaErrorInvalidValue, "pid %d sent a malformed handshake", (int)cred.pid);
	} else if (h.kind == XGPU_CONN_CONTROL && nfds == 0) {
		host->control_request(host->core, conn, cred.uid);
		kept = true;
	} else if (h.kind == XGPU_CONN_CHANNEL && nfds == 1) {
		kept = accept_channel(host, conn, &h, fds[0], &cred);
		if (kept)
			nfds = 0; /* accept_channel closed the region fd */
	} else {
		refuse(conn, cudaErrorInvalidValue, "pid %d asked for connection kind %u with %d descriptors",
		       (int)cred.pid, h.kind, nfds);
	}
	xgpu_close_fds(fds, nfds);
	if (!kept)
		close(conn);
}

/* ---- listening --------------------------------------------------------------- */

struct pending_conn {
	int fd; /* -1: free */
	uint64_t deadline_ns;
};

struct xgpu_local_listener {
	const struct xgpu_transport_host *host;
	int fd;
	int epfd;
	struct pending_conn pending[MAX_PENDING_CONNECTIONS];
	struct xgpu_ratelimit full_rl;
};

struct xgpu_local_listener *xgpu_local_listen(const struct xgpu_transport_host *host, const char *path,
					      int epfd, char *err, size_t errlen)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	if (strlen(path) >= sizeof sa.sun_path) {
		snprintf(err, errlen, "socket path %s is too long", path);
		return NULL;
	}
	strcpy(sa.sun_path, path);
	/* A socket file nobody answers on is left from a crash: replace it.
	 * One somebody answers on belongs to a running xgpud. */
	int probe = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (probe >= 0 && connect(probe, (struct sockaddr *)&sa, sizeof sa) == 0) {
		close(probe);
		snprintf(err, errlen, "another xgpud is already listening on %s", path);
		return NULL;
	}
	if (probe >= 0)
		close(probe);
	struct xgpu_local_listener *l = calloc(1, sizeof *l);
	if (!l) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	for (int i = 0; i < MAX_PENDING_CONNECTIONS; i++)
		l->pending[i].fd = -1;
	xgpu_ratelimit_init(&l->full_rl, 10, 10000);
	l->host = host;
	l->epfd = epfd;
	l->fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	unlink(path);
	/* /run/xgpu may need creating when running as root with defaults. */
	char dir[sizeof sa.sun_path];
	snprintf(dir, sizeof dir, "%s", path);
	char *slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = '\0';
		mkdir(dir, 0755);
	}
	struct epoll_event ev = {.events = EPOLLIN, .data.ptr = l};
	if (l->fd < 0 || bind(l->fd, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(l->fd, 128) < 0 ||
	    epoll_ctl(epfd, EPOLL_CTL_ADD, l->fd, &ev) < 0) {
		snprintf(err, errlen, "cannot listen on %s: %s", path, strerror(errno));
		if (l->fd >= 0)
			close(l->fd);
		pthread_mutex_destroy(&l->full_rl.lock);
		free(l);
		return NULL;
	}
	/* Any local user may connect: each lands in a domain of its own uid
	 * unless it names one it may join. */
	chmod(path, 0666);
	return l;
}

bool xgpu_local_owns(const struct xgpu_local_listener *l, const void *ptr)
{
	const char *p = ptr;
	return ptr == l ||
	       (p >= (const char *)l->pending && p < (const char *)(l->pending + MAX_PENDING_CONNECTIONS));
}

static void forget(struct xgpu_local_listener *l, struct pending_conn *pc)
{
	epoll_ctl(l->epfd, EPOLL_CTL_DEL, pc->fd, NULL);
	pc->fd = -1;
}

static void accept_all(struct xgpu_local_listener *l)
{
	for (;;) {
		int conn = accept4(l->fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (conn < 0) {
			if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
				xlog_err("accept: %s", strerror(errno));
			return;
		}
		struct pending_conn *free_slot = NULL;
		for (int i = 0; i < MAX_PENDING_CONNECTIONS && !free_slot; i++)
			if (l->pending[i].fd < 0)
				free_slot = &l->pending[i];
		struct epoll_event ev = {.events = EPOLLIN, .data.ptr = free_slot};
		if (!free_slot || epoll_ctl(l->epfd, EPOLL_CTL_ADD, conn, &ev) < 0) {
			xgpu_log_limited(&l->full_rl, XGPU_LOG_WARN,
					 "%d connections are waiting to say hello; refusing more",
					 MAX_PENDING_CONNECTIONS);
			close(conn);
			continue;
		}
		free_slot->fd = conn;
		free_slot->deadline_ns = xgpu_now_ns() + HELLO_TIMEOUT_NS;
	}
}

void xgpu_local_event(struct xgpu_local_listener *l, void *ptr)
{
	if (ptr == l) {
		accept_all(l);
		return;
	}
	struct pending_conn *pc = ptr;
	if (pc->fd < 0)
		return;
	int conn = pc->fd;
	forget(l, pc);
	handshake(l->host, conn);
}

void xgpu_local_expire(struct xgpu_local_listener *l)
{
	uint64_t now = xgpu_now_ns();
	for (int i = 0; i < MAX_PENDING_CONNECTIONS; i++) {
		struct pending_conn *pc = &l->pending[i];
		if (pc->fd >= 0 && now > pc->deadline_ns) {
			int fd = pc->fd;
			forget(l, pc);
			close(fd);
		}
	}
}

void xgpu_local_close(struct xgpu_local_listener *l)
{
	for (int i = 0; i < MAX_PENDING_CONNECTIONS; i++)
		if (l->pending[i].fd >= 0) {
			int fd = l->pending[i].fd;
			forget(l, &l->pending[i]);
			close(fd);
		}
	epoll_ctl(l->epfd, EPOLL_CTL_DEL, l->fd, NULL);
	close(l->fd);
	pthread_mutex_destroy(&l->full_rl.lock);
	free(l);
}
