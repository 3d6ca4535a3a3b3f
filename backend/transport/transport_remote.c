/* SPDX-License-Identifier: Apache-2.0 */
/* transport_remote.c - xgpud's remote transport (--remote-listen): guests on
 * other hosts connect over TCP, TLS 1.3 with a pre-shared key or X.509
 * certificates both ways (common/remote.h).
 *
 * For each connection, once the TLS handshake has authenticated the guest,
 * a session thread makes what a local guest would have made: a sealed memfd
 * region laid out from the guest's parameters, and a connection to this
 * daemon's own local socket carrying the guest's hello (its domain renamed
 * into the "remote-" namespace) and the region. The local transport then
 * checks and hands both to the domain's executor as for any local guest, and
 * the session relays the region's queues to and from the network:
 *
 *   reader: frames from the network into the region, kicking the executor;
 *   writer: what the executor published, to the network; sleeps on the
 *           executor's kicks (one-byte messages on the local socket).
 *
 * When the network side ends (closed, reset, or silent beyond
 * XGPU_REMOTE_DEAD_MS), the session closes its local socket and the executor
 * sees its guest gone, as when a local process dies. When the executor ends,
 * the guest gets an END frame with the status xgpud left in the region.
 *
 * Threads: the acceptor and two per connection (at most MAX_SESSIONS); none
 * touches the daemon's core, which they reach only through its socket.
 */
#include "transport_remote.h"

#include "fdpass.h"
#include "log.h"
#include "remote.h"
#include "shm.h"
#include "util.h"

#include <cuda_runtime_api.h>
#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define MAX_SESSIONS 64
#define HANDSHAKE_TIMEOUT_MS 5000
#define ACK_TIMEOUT_MS 15000
#define WRITE_BUF (XGPU_REMOTE_MAX_PAYLOAD + 4096)
#define REMOTE_PREFIX "remote-"
/* The GPU host pays for a remote guest's region (a local guest brings its
 * own memfd): data areas of at most this much per direction. */
#define REMOTE_MAX_DATA (32u << 20)

struct session;

struct xgpu_remote_listener {
	int fd;
	int stop_fd;
	pthread_t acceptor;
	char local_socket[108];
	bool plain, psk, zerocopy;
	/* Both under lock: xgpu_remote_reload replaces them. */
	struct xgpu_psk_table keys;
	struct xgpu_rcert *cert; /* NULL: pre-shared keys only */
	pthread_mutex_t lock;
	pthread_cond_t idle;
	struct session *sessions[MAX_SESSIONS];
	unsigned active;
	struct xgpu_ratelimit rl;
};

struct session {
	struct xgpu_remote_listener *l;
	int slot;
	int tcp; /* until conn takes it */
	struct xgpu_rconn *conn;
	int local; /* our end of the channel's local socket */
	int stop_fd;
	void *region;
	size_t region_size;
	struct xgpu_relay relay;
	_Atomic bool dead;
	char peer[80];
	char domain[XGPU_DOMAIN_NAME_MAX];
	char why[256];
	uint8_t *rbuf, *wbuf;
};

/* ---- one connection ------------------------------------------------------------ */

static void refuse(struct session *s, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void refuse(struct session *s, int status, const char *fmt, ...)
{
	struct {
		struct xgpu_rframe h;
		struct xgpu_hello_ack ack;
	} msg = {
	    .h = {.type = XGPU_RF_ACK, .len = sizeof(struct xgpu_hello_ack)},
	    .ack = {.magic = XGPU_PROTO_MAGIC, .version = XGPU_PROTO_VERSION, .status = status},
	};
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg.ack.message, sizeof msg.ack.message, fmt, ap);
	va_end(ap);
	char err[128];
	xgpu_rconn_send(s->conn, &msg, sizeof msg, err, sizeof err);
	xgpu_log_limited(&s->l->rl, XGPU_LOG_WARN, "remote: refused %s: %s", s->peer, msg.ack.message);
}

static bool name_ok(const char *n)
{
	for (; *n; n++)
		if (!((*n >= 'a' && *n <= 'z') || (*n >= 'A' && *n <= 'Z') || (*n >= '0' && *n <= '9') ||
		      *n == '-' || *n == '_' || *n == '.'))
			return false;
	return true;
}

static void kick_executor(void *arg)
{
	static const char kick = 'k';
	send(((struct session *)arg)->local, &kick, 1, MSG_DONTWAIT | MSG_NOSIGNAL);
}

static void end_session(struct session *s, const char *why)
{
	if (atomic_exchange(&s->dead, true))
		return;
	if (why)
		snprintf(s->why, sizeof s->why, "%s", why);
	uint64_t one = 1;
	ssize_t n = write(s->stop_fd, &one, sizeof one);
	(void)n;
}

static void *reader_main(void *arg)
{
	struct session *s = arg;
	char err[256];
	int32_t end;
	for (;;) {
		if (xgpu_remote_receive(&s->relay, xgpu_rconn_read, s->conn, s->rbuf, NULL, &end, err,
					sizeof err) < 0)
			break;
	}
	if (!strcmp(err, "timed out"))
		snprintf(err, sizeof err, "nothing heard for %d s", XGPU_REMOTE_DEAD_MS / 1000);
	end_session(s, err);
	return NULL;
}

/* Relays until either side ends; returns why. */
static void relay(struct session *s)
{
	char err[256];
	pthread_t reader;
	if (pthread_create(&reader, NULL, reader_main, s) != 0) {
		snprintf(s->why, sizeof s->why, "cannot start a thread");
		return;
	}
	bool armed = false;
	uint64_t last_sent = xgpu_now_ns();
	while (!atomic_load(&s->dead)) {
		int turn = xgpu_remote_send_turn(&s->relay, s->conn, s->wbuf, WRITE_BUF, &last_sent, &armed,
						 err, sizeof err);
		if (turn < 0) {
			end_session(s, err);
			break;
		}
		if (turn > 0)
			continue;
		armed = false;
		struct pollfd pfd[2] = {{s->local, POLLIN, 0}, {s->stop_fd, POLLIN, 0}};
		if (poll(pfd, 2, XGPU_REMOTE_PING_MS / 2) <= 0 || !pfd[0].revents)
			continue;
		/* What the kick announced (an answer, most often) goes out
		 * before the kicks are drained: the drain's receives are not in
		 * the round trip's way. */
		if (xgpu_remote_send_turn(&s->relay, s->conn, s->wbuf, WRITE_BUF, &last_sent, &armed, err,
					  sizeof err) < 0) {
			end_session(s, err);
			break;
		}
		bool gone = false;
		for (int budget = 256; budget > 0; budget--) {
			char buf[16];
			ssize_t got = recv(s->local, buf, sizeof buf, MSG_DONTWAIT);
			if (got == 0 ||
			    (got < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
				gone = true;
				break;
			}
			if (got < 0)
				break;
		}
		if (gone) {
			/* Anything the executor published before it went
			 * still goes out, then why it ended. */
			bool more;
			struct iovec iov[XGPU_REMOTE_TURN_IOV];
			size_t total;
			int n = xgpu_remote_collect(&s->relay, s->wbuf, WRITE_BUF, XGPU_REMOTE_TURN_BULK, iov,
						    XGPU_REMOTE_TURN_IOV, &total, &more, err, sizeof err);
			if (n > 0)
				xgpu_rconn_sendv(s->conn, iov, n, err, sizeof err);
			int32_t status = atomic_load(&s->relay.hdr->backend_end);
			struct xgpu_rframe end = {.type = XGPU_RF_END, .idx = (uint32_t)status};
			xgpu_rconn_send(s->conn, &end, sizeof end, err, sizeof err);
			snprintf(err, sizeof err, "its executor ended (status %d)", status);
			end_session(s, err);
		}
	}
	xgpu_rconn_shutdown(s->conn);
	pthread_join(reader, NULL);
}

static int make_region(struct session *s, const struct xgpu_shm_params *p, size_t size, int *memfd)
{
	int fd = memfd_create("xgpu-remote", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return -1;
	void *m = MAP_FAILED;
	if (ftruncate(fd, (off_t)size) < 0 ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0 ||
	    (m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED ||
	    xgpu_shm_init(m, size, p) < 0) {
		if (m != MAP_FAILED)
			munmap(m, size);
		close(fd);
		return -1;
	}
	s->region = m;
	s->region_size = size;
	*memfd = fd;
	return 0;
}

/* Hands the channel to xgpud as a local guest would; forwards its answer.
 * Returns 0 when the channel was accepted. */
static int join_locally(struct session *s, struct xgpu_hello *hello, int memfd)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	xgpu_strlcpy(sa.sun_path, s->l->local_socket, sizeof sa.sun_path);
	s->local = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (s->local < 0 || connect(s->local, (struct sockaddr *)&sa, sizeof sa) < 0) {
		refuse(s, cudaErrorDevicesUnavailable, "the GPU host's xgpud cannot take the channel: %s",
		       strerror(errno));
		return -1;
	}
	if (xgpu_send_fds(s->local, hello, sizeof *hello, &memfd, 1) != (ssize_t)sizeof *hello) {
		refuse(s, cudaErrorDevicesUnavailable, "the GPU host's xgpud cannot take the channel: %s",
		       strerror(errno));
		return -1;
	}
	struct {
		struct xgpu_rframe h;
		struct xgpu_hello_ack ack;
	} msg = {.h = {.type = XGPU_RF_ACK, .len = sizeof(struct xgpu_hello_ack)}};
	struct pollfd pfd = {s->local, POLLIN, 0};
	ssize_t n = -1;
	if (poll(&pfd, 1, ACK_TIMEOUT_MS) == 1)
		n = recv(s->local, &msg.ack, sizeof msg.ack, MSG_DONTWAIT);
	if (n != (ssize_t)sizeof msg.ack) {
		refuse(s, cudaErrorDevicesUnavailable, "the GPU host's xgpud did not answer");
		return -1;
	}
	char err[128];
	if (xgpu_rconn_send(s->conn, &msg, sizeof msg, err, sizeof err) < 0)
		return -1;
	if (msg.ack.status != 0) {
		msg.ack.message[sizeof msg.ack.message - 1] = '\0';
		xgpu_log_limited(&s->l->rl, XGPU_LOG_WARN, "remote: %s refused: %s", s->peer,
				 msg.ack.message);
		return -1;
	}
	xlog_info("remote: %s joined domain %s (channel %u, %s)", s->peer, s->domain, msg.ack.channel_id,
		  xgpu_rconn_protocol(s->conn));
	return 0;
}

static void serve(struct session *s)
{
	struct xgpu_remote_listener *l = s->l;
	char err[256];
	xgpu_remote_tune_socket(s->tcp);
	int tcp = s->tcp;
	s->tcp = -1;
	/* The credentials as they are now; the connection copies the keys
	 * and holds its own reference to the certificate. */
	struct xgpu_psk_table keys;
	pthread_mutex_lock(&l->lock);
	keys = l->keys;
	struct xgpu_rcert *cert = xgpu_rcert_ref(l->cert);
	pthread_mutex_unlock(&l->lock);
	s->conn = xgpu_rconn_server(tcp, l->psk ? &keys : NULL, cert, HANDSHAKE_TIMEOUT_MS, err, sizeof err);
	explicit_bzero(&keys, sizeof keys);
	xgpu_rcert_free(cert);
	if (!s->conn) {
		xgpu_log_limited(&l->rl, XGPU_LOG_WARN, "remote: %s not admitted: %s", s->peer, err);
		return;
	}
	if (l->zerocopy && xgpu_rconn_set_zerocopy(s->conn, err, sizeof err) < 0)
		xgpu_log_limited(&l->rl, XGPU_LOG_WARN, "remote: %s: sending without MSG_ZEROCOPY: %s",
				 s->peer, err);
	struct xgpu_rframe h;
	struct xgpu_remote_hello rh;
	struct timeval tv = {.tv_sec = HANDSHAKE_TIMEOUT_MS / 1000};
	setsockopt(xgpu_rconn_fd(s->conn), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	if (xgpu_rconn_recv_frame(s->conn, false, &h, s->rbuf, err, sizeof err) < 0) {
		xgpu_log_limited(&l->rl, XGPU_LOG_WARN, "remote: %s sent no hello: %s", s->peer, err);
		return;
	}
	xgpu_remote_set_silence_limit(xgpu_rconn_fd(s->conn));
	if (h.type != XGPU_RF_HELLO) {
		refuse(s, cudaErrorInvalidValue, "expected a hello, got frame type %u", h.type);
		return;
	}
	memcpy(&rh, s->rbuf, sizeof rh);
	if (rh.magic != XGPU_REMOTE_MAGIC || rh.hello.magic != XGPU_PROTO_MAGIC) {
		refuse(s, cudaErrorInvalidValue, "not an xgpu remote hello");
		return;
	}
	if (rh.version != XGPU_PROTO_VERSION || rh.hello.version != XGPU_PROTO_VERSION) {
		refuse(s, cudaErrorInsufficientDriver,
		       "protocol version mismatch: the client speaks xgpu protocol %u, xgpud speaks %u",
		       rh.version, XGPU_PROTO_VERSION);
		return;
	}
	struct xgpu_shm_params p = {.nr_slots = rh.nr_slots, .data_size = rh.data_size};
	size_t size = xgpu_shm_region_size(&p);
	if (!size || size != rh.region_size || rh.hello.kind != XGPU_CONN_CHANNEL ||
	    rh.data_size > REMOTE_MAX_DATA) {
		refuse(s, cudaErrorInvalidValue,
		       "channel parameters refused (%u slots, %u-byte data areas; remote data areas are at "
		       "most %u MiB: XGPU_DATA_SIZE)",
		       rh.nr_slots, rh.data_size, REMOTE_MAX_DATA >> 20);
		return;
	}
	/* The domain is the one its key or certificate names, in the remote
	 * namespace (a remote guest cannot join a local domain, nor another
	 * tenant's). A guest
	 * may name it too, as XGPU_DOMAIN does locally, but only the same. On
	 * plain TCP (tests only) the guest's name, else "default". */
	char name[XGPU_DOMAIN_NAME_MAX], asked[XGPU_DOMAIN_NAME_MAX];
	memcpy(asked, rh.hello.domain, sizeof asked);
	asked[sizeof asked - 1] = '\0';
	xgpu_strlcpy(name, l->plain ? (*asked ? asked : "default") : xgpu_rconn_identity(s->conn),
		     sizeof name);
	if (*asked && strcmp(asked, name) != 0) {
		refuse(
		    s, cudaErrorInvalidValue,
		    "domain %.40s refused: this %s belongs to domain %s%s (XGPU_DOMAIN must be unset or %s)",
		    name_ok(asked) ? asked : "(not a name)",
		    strcmp(xgpu_rconn_protocol(s->conn), "TLS1.3-X509") ? "key" : "certificate",
		    REMOTE_PREFIX, name, name);
		return;
	}
	if (!name_ok(name) || strlen(REMOTE_PREFIX) + strlen(name) >= sizeof s->domain) {
		refuse(s, cudaErrorInvalidValue,
		       "domain name refused: up to %zu letters, digits, '-', '_', '.'",
		       sizeof s->domain - 1 - strlen(REMOTE_PREFIX));
		return;
	}
	memcpy(s->domain, REMOTE_PREFIX, strlen(REMOTE_PREFIX));
	xgpu_strlcpy(s->domain + strlen(REMOTE_PREFIX), name, sizeof s->domain - strlen(REMOTE_PREFIX));
	int memfd = -1;
	if (make_region(s, &p, size, &memfd) < 0) {
		refuse(s, cudaErrorMemoryAllocation, "the GPU host cannot make a channel region");
		return;
	}
	if (xgpu_relay_init(&s->relay, false, s->region, size, err, sizeof err) < 0) {
		close(memfd);
		refuse(s, cudaErrorInvalidValue, "%s", err);
		return;
	}
	s->relay.kick = kick_executor;
	s->relay.kick_arg = s;
	struct xgpu_hello hello = rh.hello;
	memset(hello.domain, 0, sizeof hello.domain);
	xgpu_strlcpy(hello.domain, s->domain, sizeof hello.domain);
	int r = join_locally(s, &hello, memfd);
	close(memfd);
	if (r < 0)
		return;
	relay(s);
	uint64_t zs, zd, zcopied;
	xgpu_rconn_zerocopy_stats(s->conn, &zs, &zd, &zcopied);
	char zc[128] = "";
	if (l->zerocopy)
		snprintf(zc, sizeof zc,
			 " (MSG_ZEROCOPY: %" PRIu64 " sends, %" PRIu64 " completed, %" PRIu64
			 " of them copied by the kernel)",
			 zs, zd, zcopied);
	xlog_info("remote: %s left domain %s: %s%s", s->peer, s->domain, s->why, zc);
}

static void *session_main(void *arg)
{
	struct session *s = arg;
	struct xgpu_remote_listener *l = s->l;
	serve(s);
	/* Closing our end of the local socket tells the executor its guest
	 * is gone; it frees what the guest held. */
	if (s->local >= 0)
		close(s->local);
	pthread_mutex_lock(&l->lock);
	l->sessions[s->slot] = NULL;
	l->active--;
	pthread_cond_broadcast(&l->idle);
	pthread_mutex_unlock(&l->lock);
	xgpu_rconn_free(s->conn);
	if (s->tcp >= 0)
		close(s->tcp);
	if (s->region)
		munmap(s->region, s->region_size);
	close(s->stop_fd);
	free(s->rbuf);
	free(s->wbuf);
	free(s);
	return NULL;
}

/* ---- accepting -------------------------------------------------------------------- */

static void start_session(struct xgpu_remote_listener *l, int fd, const struct sockaddr_storage *ss,
			  socklen_t sl)
{
	struct session *s = calloc(1, sizeof *s);
	if (!s) {
		close(fd);
		return;
	}
	s->l = l;
	s->tcp = fd;
	s->local = -1;
	s->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	s->rbuf = malloc(XGPU_REMOTE_MAX_PAYLOAD);
	s->wbuf = malloc(WRITE_BUF);
	snprintf(s->why, sizeof s->why, "ended");
	char host[64] = "?", port[16] = "?";
	getnameinfo((const struct sockaddr *)ss, sl, host, sizeof host, port, sizeof port,
		    NI_NUMERICHOST | NI_NUMERICSERV);
	snprintf(s->peer, sizeof s->peer, "%s:%s", host, port);
	pthread_mutex_lock(&l->lock);
	int slot = -1;
	for (int i = 0; i < MAX_SESSIONS && slot < 0; i++)
		if (!l->sessions[i])
			slot = i;
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_t t;
	bool ok = slot >= 0 && s->stop_fd >= 0 && s->rbuf && s->wbuf;
	if (ok) {
		s->slot = slot;
		l->sessions[slot] = s;
		l->active++;
		if (pthread_create(&t, &attr, session_main, s) != 0) {
			l->sessions[slot] = NULL;
			l->active--;
			ok = false;
		}
	}
	pthread_attr_destroy(&attr);
	pthread_mutex_unlock(&l->lock);
	if (!ok) {
		xgpu_log_limited(&l->rl, XGPU_LOG_WARN, "remote: refused %s: %d connections already", s->peer,
				 MAX_SESSIONS);
		close(fd);
		if (s->stop_fd >= 0)
			close(s->stop_fd);
		free(s->rbuf);
		free(s->wbuf);
		free(s);
	}
}

static void *acceptor_main(void *arg)
{
	struct xgpu_remote_listener *l = arg;
	for (;;) {
		struct pollfd pfd[2] = {{l->fd, POLLIN, 0}, {l->stop_fd, POLLIN, 0}};
		if (poll(pfd, 2, -1) < 0 && errno != EINTR)
			break;
		if (pfd[1].revents)
			break;
		if (!pfd[0].revents)
			continue;
		struct sockaddr_storage ss;
		socklen_t sl = sizeof ss;
		int fd = accept4(l->fd, (struct sockaddr *)&ss, &sl, SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EMFILE || errno == ENFILE)
				nanosleep(&(struct timespec){0, 100000000}, NULL);
			continue;
		}
		start_session(l, fd, &ss, sl);
	}
	return NULL;
}

unsigned xgpu_remote_key_count(const struct xgpu_remote_listener *l)
{
	return l->keys.n;
}

bool xgpu_remote_has_cert(const struct xgpu_remote_listener *l)
{
	return l->cert != NULL;
}

struct xgpu_remote_listener *xgpu_remote_listen(const char *addr, const struct xgpu_remote_auth *auth,
						const char *local_socket, char *err, size_t errlen)
{
	char host[256] = "", port[32];
	const char *colon = strrchr(addr, ':');
	if (!colon || !colon[1]) {
		snprintf(err, errlen, "--remote-listen %s: need ADDRESS:PORT (or :PORT for every address)",
			 addr);
		return NULL;
	}
	size_t hl = (size_t)(colon - addr);
	if (hl >= sizeof host) {
		snprintf(err, errlen, "--remote-listen %s: address too long", addr);
		return NULL;
	}
	memcpy(host, addr, hl);
	host[hl] = '\0';
	if (hl >= 2 && host[0] == '[' && host[hl - 1] == ']') {
		memmove(host, host + 1, hl - 2);
		host[hl - 2] = '\0';
	}
	xgpu_strlcpy(port, colon + 1, sizeof port);
	if (strlen(local_socket) >= sizeof((struct xgpu_remote_listener *)0)->local_socket) {
		snprintf(err, errlen, "socket path %s is too long", local_socket);
		return NULL;
	}
	struct xgpu_remote_listener *l = calloc(1, sizeof *l);
	if (!l) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	l->fd = -1;
	l->stop_fd = -1;
	l->psk = auth->psk_file != NULL;
	l->plain = !l->psk && !auth->cert_file;
	l->zerocopy = l->plain && auth->zerocopy;
	xgpu_strlcpy(l->local_socket, local_socket, sizeof l->local_socket);
	char why[400];
	if (l->psk && xgpu_remote_read_psk_table(auth->psk_file, &l->keys, why, sizeof why) < 0) {
		snprintf(err, errlen, "--remote-psk: %s", why);
		free(l);
		return NULL;
	}
	/* Loaded once, here, so that a bad file stops xgpud at its start. */
	if (auth->cert_file &&
	    !(l->cert = xgpu_rcert_load(auth->cert_file, auth->key_file, auth->ca_file, why, sizeof why))) {
		snprintf(err, errlen, "--remote-cert: %s", why);
		explicit_bzero(&l->keys, sizeof l->keys);
		free(l);
		return NULL;
	}
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE},
			*res = NULL;
	int g = getaddrinfo(*host ? host : NULL, port, &hints, &res);
	if (g) {
		snprintf(err, errlen, "--remote-listen %s: %s", addr, gai_strerror(g));
		xgpu_rcert_free(l->cert);
		free(l);
		return NULL;
	}
	int one = 1;
	l->fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (l->fd >= 0)
		setsockopt(l->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (l->fd < 0 || bind(l->fd, res->ai_addr, res->ai_addrlen) < 0 || listen(l->fd, 64) < 0) {
		snprintf(err, errlen, "--remote-listen %s: %s", addr, strerror(errno));
		freeaddrinfo(res);
		if (l->fd >= 0)
			close(l->fd);
		xgpu_rcert_free(l->cert);
		free(l);
		return NULL;
	}
	freeaddrinfo(res);
	pthread_mutex_init(&l->lock, NULL);
	pthread_cond_init(&l->idle, NULL);
	xgpu_ratelimit_init(&l->rl, 20, 10000);
	l->stop_fd = eventfd(0, EFD_CLOEXEC);
	if (l->stop_fd < 0 || pthread_create(&l->acceptor, NULL, acceptor_main, l) != 0) {
		snprintf(err, errlen, "cannot start the remote transport's thread");
		if (l->stop_fd >= 0)
			close(l->stop_fd);
		close(l->fd);
		pthread_mutex_destroy(&l->rl.lock);
		xgpu_rcert_free(l->cert);
		free(l);
		return NULL;
	}
	return l;
}

int xgpu_remote_reload(struct xgpu_remote_listener *l, const struct xgpu_remote_auth *auth, char *err,
		       size_t errlen)
{
	if (l->psk != (auth->psk_file != NULL) || (l->cert != NULL) != (auth->cert_file != NULL)) {
		snprintf(err, errlen,
			 "the kinds of credentials are fixed at the start (a restart changes them)");
		return -1;
	}
	struct xgpu_psk_table keys = {0};
	struct xgpu_rcert *cert = NULL;
	char why[400];
	if (auth->psk_file && xgpu_remote_read_psk_table(auth->psk_file, &keys, why, sizeof why) < 0) {
		snprintf(err, errlen, "--remote-psk: %s", why);
		return -1;
	}
	if (auth->cert_file &&
	    !(cert = xgpu_rcert_load(auth->cert_file, auth->key_file, auth->ca_file, why, sizeof why))) {
		snprintf(err, errlen, "--remote-cert: %s", why);
		explicit_bzero(&keys, sizeof keys);
		return -1;
	}
	pthread_mutex_lock(&l->lock);
	struct xgpu_rcert *old = l->cert;
	l->cert = cert;
	struct xgpu_psk_table old_keys = l->keys;
	l->keys = keys;
	pthread_mutex_unlock(&l->lock);
	explicit_bzero(&keys, sizeof keys);
	explicit_bzero(&old_keys, sizeof old_keys);
	/* Connections made with it hold references of their own. */
	xgpu_rcert_free(old);
	return 0;
}

void xgpu_remote_close(struct xgpu_remote_listener *l)
{
	if (!l)
		return;
	uint64_t one = 1;
	ssize_t n = write(l->stop_fd, &one, sizeof one);
	(void)n;
	pthread_join(l->acceptor, NULL);
	close(l->fd);
	pthread_mutex_lock(&l->lock);
	for (int i = 0; i < MAX_SESSIONS; i++) {
		struct session *s = l->sessions[i];
		if (!s)
			continue;
		if (s->conn)
			xgpu_rconn_shutdown(s->conn);
		else if (s->tcp >= 0)
			shutdown(s->tcp, SHUT_RDWR);
		end_session(s, "xgpud is stopping");
	}
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 5;
	while (l->active && pthread_cond_timedwait(&l->idle, &l->lock, &until) == 0)
		;
	bool idle = l->active == 0;
	pthread_mutex_unlock(&l->lock);
	if (!idle) {
		xlog_warn("remote: %u connections did not end in time", l->active);
		return; /* their threads still use l */
	}
	close(l->stop_fd);
	explicit_bzero(&l->keys, sizeof l->keys);
	pthread_cond_destroy(&l->idle);
	pthread_mutex_destroy(&l->lock);
	pthread_mutex_destroy(&l->rl.lock);
	xgpu_rcert_free(l->cert);
	free(l);
}
