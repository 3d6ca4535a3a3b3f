/* transport_local.c - xgpud's local transport: the listening AF_UNIX
 * SOCK_SEQPACKET socket, the channel handshake, and the per-channel
 * operations over memfd regions, eventfds and the channel socket.
 *
 * Everything a client sends is checked before use: the region must be a
 * sealed memfd (so it cannot shrink under our mapping and fault the daemon),
 * the signals must be eventfds, sizes must match, and the client's identity
 * comes from SO_PEERCRED, not from anything it says.
 */
#include "transport_local.h"

#include "fdpass.h"
#include "log.h"
#include "util.h"

#include <cuda_runtime_api.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#define MAX_UNCLAIMED_SEGMENTS 16

struct seg_pending {
	uint64_t token, size;
	int fd;
};

struct local_be {
	int sock;
	int kick_us;   /* the frontend writes, we wait */
	int kick_peer; /* we write */
	struct seg_pending pending[MAX_UNCLAIMED_SEGMENTS];
	int npending;
};

static struct local_be *lb(struct xgpu_channel *ch)
{
	return ch->tpriv;
}

static void be_kick(struct xgpu_channel *ch)
{
	uint64_t one = 1;
	if (write(lb(ch)->kick_peer, &one, sizeof one) < 0 && errno != EAGAIN)
		xlog_debug("domain %s: kick of channel %u failed: %s", ch->dom->name, ch->id,
			   strerror(errno));
}

static void be_drain(struct xgpu_channel *ch)
{
	uint64_t v;
	while (read(lb(ch)->kick_us, &v, sizeof v) > 0)
		;
}

static int be_kick_fd(struct xgpu_channel *ch)
{
	return lb(ch)->kick_us;
}

static int be_event_fd(struct xgpu_channel *ch)
{
	return lb(ch)->sock;
}

static const unsigned required_seals = F_SEAL_SHRINK | F_SEAL_GROW;

/* A memfd of exactly size bytes that can neither shrink nor grow. */
static int check_memfd(int fd, uint64_t size, char *err, size_t errlen)
{
	int seals = fcntl(fd, F_GET_SEALS);
	struct stat st;
	if (seals < 0 || (seals & required_seals) != required_seals) {
		snprintf(err, errlen, "shared memory is not a memfd sealed against resizing");
		return -1;
	}
	if (fstat(fd, &st) < 0 || (uint64_t)st.st_size != size) {
		snprintf(err, errlen, "shared memory has %lld bytes, %llu announced", (long long)st.st_size,
			 (unsigned long long)size);
		return -1;
	}
	return 0;
}

static bool be_service(struct xgpu_channel *ch)
{
	struct local_be *b = lb(ch);
	for (;;) {
		struct xgpu_seg_msg msg;
		int fds[1], nfds = 0;
		ssize_t n = xgpu_recv_fds(b->sock, &msg, sizeof msg, fds, &nfds, 1, MSG_DONTWAIT);
		if (n < 0)
			return errno == EAGAIN || errno == EWOULDBLOCK;
		if (n == 0)
			return false; /* the process is gone */
		if (n != (ssize_t)sizeof msg || nfds != 1 || msg.magic != XGPU_PROTO_MAGIC ||
		    b->npending == MAX_UNCLAIMED_SEGMENTS) {
			xgpu_close_fds(fds, nfds);
			dlog_warn(ch->dom,
				  "domain %s: channel %u sent an invalid out-of-band message; closing it",
				  ch->dom->name, ch->id);
			return false;
		}
		b->pending[b->npending++] = (struct seg_pending){msg.token, msg.size, fds[0]};
	}
}

static int be_import_segment(struct xgpu_channel *ch, uint64_t token, uint64_t size, void **ptr, char *err,
			     size_t errlen)
{
	struct local_be *b = lb(ch);
	/* The frontend sends the fd before the request that names it, so it
	 * is in the socket already if we have not read it yet. */
	be_service(ch);
	for (int i = 0; i < b->npending; i++) {
		if (b->pending[i].token != token)
			continue;
		struct seg_pending p = b->pending[i];
		b->pending[i] = b->pending[--b->npending];
		int r = -1;
		if (p.size != size)
			snprintf(err, errlen, "segment announced %llu bytes, request says %llu",
				 (unsigned long long)p.size, (unsigned long long)size);
		else if (check_memfd(p.fd, size, err, errlen) == 0) {
			void *m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, p.fd, 0);
			if (m == MAP_FAILED)
				snprintf(err, errlen, "cannot map it: %s", strerror(errno));
			else {
				*ptr = m;
				r = 0;
			}
		}
		close(p.fd);
		return r;
	}
	snprintf(err, errlen, "no segment with that token was shared");
	return -1;
}

static void be_release_segment(struct xgpu_channel *ch, void *ptr, uint64_t size)
{
	munmap(ptr, size);
}

static void be_close(struct xgpu_channel *ch)
{
	struct local_be *b = lb(ch);
	for (int i = 0; i < b->npending; i++)
		close(b->pending[i].fd);
	int fds[3] = {b->sock, b->kick_us, b->kick_peer};
	xgpu_close_fds(fds, 3);
	if (ch->region)
		munmap(ch->region, ch->region_size);
	free(b);
	ch->tpriv = NULL;
}

static const struct xgpu_be_transport_ops local_ops = {
    .name = "local",
    .kick = be_kick,
    .drain = be_drain,
    .kick_fd = be_kick_fd,
    .event_fd = be_event_fd,
    .service = be_service,
    .import_segment = be_import_segment,
    .release_segment = be_release_segment,
    .close = be_close,
};

/* ---- listening and the handshake ---------------------------------------------- */

int xgpu_local_listen(const char *path, char *err, size_t errlen)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	if (strlen(path) >= sizeof sa.sun_path) {
		snprintf(err, errlen, "socket path %s is too long", path);
		return -1;
	}
	strcpy(sa.sun_path, path);
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		snprintf(err, errlen, "socket: %s", strerror(errno));
		return -1;
	}
	/* A socket file nobody answers on is left from a crash: replace it.
	 * One somebody answers on belongs to a running xgpud. */
	int probe = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (probe >= 0 && connect(probe, (struct sockaddr *)&sa, sizeof sa) == 0) {
		close(probe);
		close(fd);
		snprintf(err, errlen, "another xgpud is already listening on %s", path);
		return -1;
	}
	if (probe >= 0)
		close(probe);
	unlink(path);
	/* /run/xgpu may need creating when running as root with defaults. */
	char dir[sizeof sa.sun_path];
	snprintf(dir, sizeof dir, "%s", path);
	char *slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = '\0';
		mkdir(dir, 0755);
	}
	if (bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(fd, 128) < 0) {
		snprintf(err, errlen, "cannot listen on %s: %s", path, strerror(errno));
		close(fd);
		return -1;
	}
	/* Any local user may connect: each lands in a domain of its own uid
	 * unless it names one it owns. */
	chmod(path, 0666);
	return fd;
}

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

static bool is_eventfd(int fd)
{
	char link[64], target[64];
	snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
	ssize_t n = readlink(link, target, sizeof target - 1);
	if (n <= 0)
		return false;
	target[n] = '\0';
	return !strcmp(target, "anon_inode:[eventfd]");
}

/* Returns true when the channel took conn and fds, false when the caller
 * must close them. */
static bool accept_channel(struct xgpud *d, int conn, const struct xgpu_hello *h, int *fds, int nfds,
			   const struct ucred *cred)
{
	char err[192];
	if (nfds != 3 || !is_eventfd(fds[1]) || !is_eventfd(fds[2])) {
		refuse(conn, cudaErrorInvalidValue, "a channel needs a memfd and two eventfds");
		return false;
	}
	struct stat st;
	if (fstat(fds[0], &st) < 0 || st.st_size <= 0 || (uint64_t)st.st_size > XGPU_SHM_MAX_REGION ||
	    check_memfd(fds[0], (uint64_t)st.st_size, err, sizeof err) < 0) {
		refuse(conn, cudaErrorInvalidValue, "channel region refused: %s",
		       st.st_size > 0 && (uint64_t)st.st_size > XGPU_SHM_MAX_REGION ? "too large" : err);
		return false;
	}
	size_t size = (size_t)st.st_size;
	void *region = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fds[0], 0);
	if (region == MAP_FAILED) {
		refuse(conn, cudaErrorMemoryAllocation, "cannot map the channel region: %s", strerror(errno));
		return false;
	}
	struct xgpu_channel *ch = calloc(1, sizeof *ch);
	struct local_be *b = calloc(1, sizeof *b);
	if (!ch || !b) {
		refuse(conn, cudaErrorMemoryAllocation, "out of memory");
		goto fail;
	}
	if (xgpu_shm_attach(region, size, &ch->v, err, sizeof err) < 0) {
		refuse(conn, cudaErrorInvalidValue, "channel region refused: %s", err);
		goto fail;
	}
	char name[XGPU_DOMAIN_NAME_MAX];
	memcpy(name, h->domain, sizeof name);
	name[sizeof name - 1] = '\0';
	struct xgpu_domain *dom = xgpu_domain_get(d, name, cred->uid, err, sizeof err);
	if (!dom) {
		refuse(conn, cudaErrorDevicesUnavailable, "%s", err);
		goto fail;
	}
	if (atomic_load(&dom->stats.channels) >= d->o.max_channels_per_domain) {
		refuse(conn, cudaErrorDevicesUnavailable, "domain %s already has %u channels", dom->name,
		       d->o.max_channels_per_domain);
		goto fail;
	}
	b->sock = conn;
	b->kick_us = fds[1];
	b->kick_peer = fds[2];
	fcntl(b->kick_us, F_SETFL, O_NONBLOCK);
	fcntl(b->kick_peer, F_SETFL, O_NONBLOCK);
	close(fds[0]);
	ch->dom = dom;
	ch->id = atomic_fetch_add(&d->next_channel_id, 1) + 1;
	ch->task = h->task;
	ch->pid = cred->pid;
	ch->uid = cred->uid;
	ch->ops = &local_ops;
	ch->tpriv = b;
	ch->region = region;
	ch->region_size = size;
	struct xgpu_hello_ack ack = {.magic = XGPU_PROTO_MAGIC,
				     .version = XGPU_PROTO_VERSION,
				     .driver_version = d->driver_version,
				     .domid = dom->domid,
				     .channel_id = ch->id,
				     .device_count = 1};
	if (send(conn, &ack, sizeof ack, MSG_NOSIGNAL | MSG_DONTWAIT) != (ssize_t)sizeof ack) {
		dlog_warn(dom, "domain %s: pid %d left during the handshake", dom->name, (int)cred->pid);
		be_close(ch);
		free(ch);
		return true;
	}
	dlog_info(dom, "domain %s: channel %u opened by pid %d (uid %u, task %u, runtime %d)", dom->name,
		  ch->id, (int)cred->pid, (unsigned)cred->uid, h->task, h->runtime_version);
	xgpu_domain_add_channel(dom, ch);
	return true;
fail:
	munmap(region, size);
	free(ch);
	free(b);
	return false;
}

void xgpu_local_accept(struct xgpud *d, int lfd)
{
	for (;;) {
		int conn = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (conn < 0) {
			if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
				xlog_err("accept: %s", strerror(errno));
			return;
		}
		/* A client that connects and says nothing must not hold up the
		 * main thread for long; honest clients send their hello at once. */
		struct timeval tv = {0, 500000};
		setsockopt(conn, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
		struct ucred cred;
		socklen_t cl = sizeof cred;
		struct xgpu_hello h;
		int fds[XGPU_MAX_PASSED_FDS], nfds = 0;
		memset(&h, 0, sizeof h);
		ssize_t n = xgpu_recv_fds(conn, &h, sizeof h, fds, &nfds, 3, 0);
		if (n < 0 || getsockopt(conn, SOL_SOCKET, SO_PEERCRED, &cred, &cl) < 0) {
			xgpu_close_fds(fds, nfds);
			close(conn);
			continue;
		}
		bool kept = false;
		if (n < 8 || h.magic != XGPU_PROTO_MAGIC) {
			refuse(conn, cudaErrorInvalidValue, "pid %d sent no xgpu handshake", (int)cred.pid);
		} else if (h.version != XGPU_PROTO_VERSION) {
			refuse(conn, cudaErrorInsufficientDriver,
			       "protocol version mismatch: client (pid %d) speaks xgpu protocol %u, xgpud "
			       "speaks %u",
			       (int)cred.pid, h.version, XGPU_PROTO_VERSION);
		} else if (n != (ssize_t)sizeof h) {
			refuse(conn, cudaErrorInvalidValue, "pid %d sent a malformed handshake",
			       (int)cred.pid);
		} else if (h.kind == XGPU_CONN_CONTROL && nfds == 0) {
			xgpu_control_serve(d, conn, cred.uid);
			continue; /* it closed conn */
		} else if (h.kind == XGPU_CONN_CHANNEL) {
			kept = accept_channel(d, conn, &h, fds, nfds, &cred);
		} else {
			refuse(conn, cudaErrorInvalidValue, "pid %d asked for connection kind %u",
			       (int)cred.pid, h.kind);
		}
		if (!kept) {
			xgpu_close_fds(fds, nfds);
			close(conn);
		}
	}
}
