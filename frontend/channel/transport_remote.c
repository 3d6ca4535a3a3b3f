/* SPDX-License-Identifier: Apache-2.0 */
/* transport_remote.c - the frontend's remote transport (XGPU_REMOTE=host:port):
 * the channel region lives in this process's memory and two relay threads
 * (common/remote.h) mirror its queues over one TCP connection to the GPU
 * host's xgpud, TLS 1.3 with the key in XGPU_REMOTE_PSK_FILE, or with
 * certificates both ways (XGPU_REMOTE_CERT, XGPU_REMOTE_CERT_KEY: this
 * host's; XGPU_REMOTE_CA: the CA that must have signed the GPU host's, whose
 * certificate must also name the host or address in XGPU_REMOTE):
 *
 *   writer: sends what the client published (requests, bulk out) and how far
 *           it has read (responses, bulk in), and pings a silent link;
 *   reader: applies what arrives, kicking the client when it asked, while
 *           no client is reading in person: a client that waits takes the
 *           reading role when free, so its answer wakes it directly.
 *
 * A client's kick sends inline when the writer is idle: a call's request
 * then leaves in the calling thread, without waking the writer (a wake-up
 * is a large share of a round trip beside the network's). The writer takes
 * over when busy. A call's bulk bytes skip the ring both ways: the calling
 * thread sends them from the caller's buffer (remote_write_bulk), and
 * receives them into it while it waits for them (remote_read_bulk).
 *
 * A dead link is noticed within XGPU_REMOTE_DEAD_MS (TCP keepalive and
 * TCP_USER_TIMEOUT); the channel then reports its peer gone, so a waiting
 * call returns cudaErrorDevicesUnavailable and stderr names the remote. Host
 * segments (pinned memory shared with the executor) cannot cross a network:
 * share_segment says cudaErrorNotSupported. */
#include "client.h"
#include "remote.h"
#include "transport.h"
#include "util.h"
#include "xenif.h"

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
#include <unistd.h>

#define CONNECT_TIMEOUT_MS 5000
/* The first channel of a domain starts its executor. */
#define ACK_TIMEOUT_MS 15000
#define WRITE_BUF (XGPU_REMOTE_MAX_PAYLOAD + 4096)

struct remote_chan {
	struct xgpu_rconn *conn;
	struct xgpu_relay relay;
	int kick_fd; /* client -> writer */
	int wake_fd; /* reader -> client */
	int ctl_fd;  /* -> reader: the channel is lost */
	pthread_t reader, writer;
	/* Whoever reads frames (the reader thread, or a client reading in
	 * person while it waits) holds it. in_person: a client holds the
	 * role, so the reader thread leaves the socket alone; waiters: the
	 * clients in remote_wait; last_heard: when a frame last arrived. */
	pthread_mutex_t recv_lock;
	_Atomic bool in_person;
	_Atomic int waiters;
	_Atomic bool reader_parked; /* the reader thread sleeps off the socket */
	_Atomic uint64_t last_heard;
	/* Whoever sends (the writer, or a client's kick inline) holds it, with
	 * the sending state below. */
	pthread_mutex_t send_lock;
	bool armed;
	/* Bulk bytes out are copied into the ring and sent from there, not
	 * from the caller's buffer (remote_write_bulk): with MSG_ZEROCOPY, whose
	 * pages must stay unchanged until the kernel is done with them. */
	bool bulk_via_ring;
	uint64_t last_sent;
	_Atomic bool dead, stop;
	char peer[300];
	uint8_t *rbuf, *wbuf;
	/* A Xen guest's: its xenstore, where remote-state says what became of
	 * the channel (dom0's xl-gpu list shows it); NULL otherwise. */
	struct xgpu_xs *xs;
	pthread_mutex_t xs_lock;
};

/* The key, in the guest's own frontend directory (it owns it; dom0 reads
 * it): the latest event of the latest remote channel of any process. */
#define REMOTE_STATE_KEY "device/vgpu/0/remote-state"

static void put_state(struct xgpu_xs *xs, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put_state(struct xgpu_xs *xs, const char *fmt, ...)
{
	char buf[400];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	xs->ops->write(xs, 0, REMOTE_STATE_KEY, buf, (unsigned)strlen(buf)); /* best effort */
}

static void chan_state(struct remote_chan *rc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void chan_state(struct remote_chan *rc, const char *fmt, ...)
{
	if (!rc->xs)
		return;
	char buf[400];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	pthread_mutex_lock(&rc->xs_lock);
	put_state(rc->xs, "%s", buf);
	pthread_mutex_unlock(&rc->xs_lock);
}

/* The latest Xen guest channel, for the exit below. */
static struct remote_chan *_Atomic xen_latest;

static void wake(int fd)
{
	uint64_t one = 1;
	ssize_t n = write(fd, &one, sizeof one);
	(void)n; /* a full counter means a wake-up is pending */
}

static void drain(int fd)
{
	uint64_t v;
	ssize_t n = read(fd, &v, sizeof v);
	(void)n;
}

/* Set in a client reading frames in person: its own answers need no
 * kick. */
static _Thread_local bool reading_here;

static void kick_client(void *arg)
{
	struct remote_chan *rc = arg;
	if (reading_here && atomic_load(&rc->waiters) <= 1)
		return; /* the only waiter is this thread, awake */
	wake(rc->wake_fd);
}

/* The link or the far end is gone: the client learns it at its next wait. */
static void lost(struct remote_chan *rc, const char *why)
{
	if (atomic_exchange(&rc->dead, true))
		return;
	if (!atomic_load(&rc->stop) && why)
		xgpu_fe_warn_once("remote-lost", "lost the connection to remote xgpud at %s: %s", rc->peer,
				  why);
	if (!atomic_load(&rc->stop))
		chan_state(rc, "lost %s: %s (pid %d)", rc->peer, why ? why : "the GPU host ended the channel",
			   (int)getpid());
	xgpu_rconn_shutdown(rc->conn);
	wake(rc->wake_fd);
	wake(rc->kick_fd);
	wake(rc->ctl_fd);
}

/* A reader polls the socket and reads a frame only once one has begun to
 * arrive, so that a waiting client can take the role (remote_wait); silence
 * is timed here, against last_heard, rather than by a blocking receive.
 * While a client reads in person the reader thread leaves the socket alone
 * (a frame's arrival then wakes the client only, not both) and looks again
 * this often, for silence and for frames that come once no client waits. */
#define READER_PARK_MS 10

/* Reads a frame and any others the TLS layer already holds, under
 * recv_lock, bulk bytes into direct's buffer when it waits for them. 0, or
 * -1 when the channel is lost (lost() called). */
static int read_frames(struct remote_chan *rc, struct xgpu_rdirect *direct)
{
	char err[256];
	int32_t end = 0;
	do {
		int r = xgpu_remote_receive(&rc->relay, xgpu_rconn_read, rc->conn, rc->rbuf, direct, &end,
					    err, sizeof err);
		if (r == 1) {
			/* The far executor ended; backend_end says why. */
			lost(rc, NULL);
			return -1;
		}
		if (r < 0) {
			if (!strcmp(err, "timed out"))
				snprintf(err, sizeof err, "nothing heard for %d s",
					 XGPU_REMOTE_DEAD_MS / 1000);
			lost(rc, err);
			return -1;
		}
		atomic_store_explicit(&rc->last_heard, xgpu_now_ns(), memory_order_relaxed);
	} while (xgpu_rconn_pending(rc->conn));
	return 0;
}

static void *reader_main(void *arg)
{
	struct remote_chan *rc = arg;
	bool skip = false; /* a client took the role as the socket woke us */
	while (!atomic_load(&rc->dead)) {
		/* Parked only while the one waiter reads in person: a client
		 * waiting otherwise (ring space, bulk bytes) needs this thread,
		 * and wakes it if it came while it was parked (remote_wait). */
		bool parked = skip || (atomic_load(&rc->in_person) && atomic_load(&rc->waiters) <= 1);
		if (parked) {
			atomic_store(&rc->reader_parked, true);
			if (!skip && !(atomic_load(&rc->in_person) && atomic_load(&rc->waiters) <= 1))
				parked = false;
		}
		atomic_store(&rc->reader_parked, parked);
		/* A negative fd is left out (events 0 would still report an error). */
		struct pollfd pfd[2] = {{parked ? -1 : xgpu_rconn_fd(rc->conn), POLLIN, 0},
					{rc->ctl_fd, POLLIN, 0}};
		uint64_t heard = atomic_load_explicit(&rc->last_heard, memory_order_relaxed);
		uint64_t now = xgpu_now_ns(), dead_at = heard + XGPU_REMOTE_DEAD_MS * 1000000ull;
		if (now >= dead_at) {
			char why[64];
			snprintf(why, sizeof why, "nothing heard for %d s", XGPU_REMOTE_DEAD_MS / 1000);
			lost(rc, why);
			break;
		}
		int ms = (int)((dead_at - now) / 1000000u) + 1;
		int n = poll(pfd, 2, parked && ms > READER_PARK_MS ? READER_PARK_MS : ms);
		skip = false;
		if (n > 0 && pfd[1].revents)
			drain(rc->ctl_fd);
		if (atomic_load(&rc->dead))
			break;
		if (n > 0 && pfd[0].revents) {
			if (pthread_mutex_trylock(&rc->recv_lock) != 0) {
				skip = true;
				continue;
			}
			int r = read_frames(rc, NULL);
			pthread_mutex_unlock(&rc->recv_lock);
			if (r < 0)
				break;
			continue;
		}
	}
	return NULL;
}

/* Turns of sending until nothing is left (0: the relay is armed for the
 * next kick) or max_turns have sent (1); -1 when the link failed. */
static int send_turns(struct remote_chan *rc, int max_turns, char *err, size_t errlen)
{
	int turn = 1;
	for (int i = 0; i < max_turns && turn > 0; i++)
		turn = xgpu_remote_send_turn(&rc->relay, rc->conn, rc->wbuf, WRITE_BUF, &rc->last_sent,
					     &rc->armed, err, errlen);
	return turn;
}

static void *writer_main(void *arg)
{
	struct remote_chan *rc = arg;
	char err[256];
	while (!atomic_load(&rc->dead)) {
		pthread_mutex_lock(&rc->send_lock);
		int turn = send_turns(rc, 64, err, sizeof err);
		pthread_mutex_unlock(&rc->send_lock);
		if (turn < 0) {
			lost(rc, err);
			break;
		}
		if (turn > 0)
			continue;
		struct pollfd pfd = {rc->kick_fd, POLLIN, 0};
		if (poll(&pfd, 1, XGPU_REMOTE_PING_MS / 2) > 0)
			drain(rc->kick_fd);
		pthread_mutex_lock(&rc->send_lock);
		rc->armed = false;
		pthread_mutex_unlock(&rc->send_lock);
	}
	return NULL;
}

/* host:port, [v6]:port, or host (the default port). */
static int split_hostport(const char *s, char *host, size_t hostlen, char *port, size_t portlen)
{
	const char *colon;
	if (*s == '[') {
		const char *close = strchr(s, ']');
		if (!close || (size_t)(close - s - 1) >= hostlen || (close[1] && close[1] != ':'))
			return -1;
		memcpy(host, s + 1, (size_t)(close - s - 1));
		host[close - s - 1] = '\0';
		colon = close[1] ? close + 1 : NULL;
	} else {
		colon = strrchr(s, ':');
		size_t hl = colon ? (size_t)(colon - s) : strlen(s);
		if (hl == 0 || hl >= hostlen)
			return -1;
		memcpy(host, s, hl);
		host[hl] = '\0';
	}
	if (colon)
		xgpu_strlcpy(port, colon + 1, portlen);
	else
		snprintf(port, portlen, "%d", XGPU_REMOTE_DEFAULT_PORT);
	return *port ? 0 : -1;
}

static int dial(const char *host, const char *port, char *err, size_t errlen)
{
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res = NULL;
	int g = getaddrinfo(host, port, &hints, &res);
	if (g) {
		snprintf(err, errlen, "%s", gai_strerror(g));
		return -1;
	}
	int fd = -1;
	for (struct addrinfo *a = res; a; a = a->ai_next) {
		fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
		if (fd < 0)
			continue;
		int r = connect(fd, a->ai_addr, a->ai_addrlen);
		if (r < 0 && errno == EINPROGRESS) {
			struct pollfd pfd = {fd, POLLOUT, 0};
			int soerr = ETIMEDOUT;
			socklen_t sl = sizeof soerr;
			if (poll(&pfd, 1, CONNECT_TIMEOUT_MS) == 1)
				getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl);
			errno = soerr;
			r = soerr ? -1 : 0;
		}
		if (r == 0) {
			fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
			break;
		}
		snprintf(err, errlen, "%s", strerror(errno));
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	return fd;
}

static void free_chan(struct remote_chan *rc, size_t region_size, void *region)
{
	xgpu_rconn_free(rc->conn);
	if (rc->kick_fd >= 0)
		close(rc->kick_fd);
	if (rc->wake_fd >= 0)
		close(rc->wake_fd);
	if (rc->ctl_fd >= 0)
		close(rc->ctl_fd);
	free(rc->rbuf);
	free(rc->wbuf);
	if (region)
		munmap(region, region_size);
	pthread_mutex_destroy(&rc->send_lock);
	pthread_mutex_destroy(&rc->recv_lock);
	if (rc->xs) {
		struct remote_chan *self = rc;
		atomic_compare_exchange_strong(&xen_latest, &self, NULL);
		rc->xs->ops->close(rc->xs);
	}
	pthread_mutex_destroy(&rc->xs_lock);
	free(rc);
}

/* Where to connect, with what key: from XGPU_REMOTE and the file in
 * XGPU_REMOTE_PSK_FILE, or under Xen from the backend's remote and
 * remote-psk keys (xl-gpu attach wrote them from the gpu line). */
struct remote_settings {
	const char *spec; /* host:port */
	bool plain;
	struct xgpu_rcert *cert; /* certificates instead of a PSK; freed by connect_remote */
	char identity[128];
	uint8_t key[64];
	size_t keylen;
	struct xgpu_xs *xs; /* a Xen guest's; the channel takes it */
};

static int connect_remote(struct xgpu_fe_chan *ch, size_t region_size, int (*init)(void *, size_t, void *),
			  void *init_arg, const struct xgpu_hello *hello, struct xgpu_hello_ack *ack,
			  struct remote_settings *rs, char *err, size_t errlen);

static int remote_open(struct xgpu_fe_chan *ch, size_t region_size, int (*init)(void *, size_t, void *),
		       void *init_arg, const struct xgpu_hello *hello, struct xgpu_hello_ack *ack, char *err,
		       size_t errlen)
{
	const char *spec = getenv("XGPU_REMOTE");
	const char *keyfile = getenv("XGPU_REMOTE_PSK_FILE");
	const char *insecure = getenv("XGPU_REMOTE_INSECURE");
	const char *cert = getenv("XGPU_REMOTE_CERT"), *cert_key = getenv("XGPU_REMOTE_CERT_KEY"),
		   *ca = getenv("XGPU_REMOTE_CA");
	char why[400];
	bool psk = keyfile && *keyfile;
	bool x509 = (cert && *cert) || (cert_key && *cert_key) || (ca && *ca);
	struct remote_settings rs = {.spec = spec, .plain = !psk && !x509, .keylen = sizeof rs.key};
	if (!spec || !*spec) {
		snprintf(err, errlen, "XGPU_REMOTE=: need host:port");
		return cudaErrorInvalidValue;
	}
	if (psk && x509) {
		snprintf(
		    err, errlen,
		    "XGPU_REMOTE: set XGPU_REMOTE_PSK_FILE or XGPU_REMOTE_CERT (with _CERT_KEY and _CA), "
		    "not both");
		return cudaErrorInvalidValue;
	}
	if (x509 && !(cert && *cert && cert_key && *cert_key && ca && *ca)) {
		snprintf(err, errlen,
			 "XGPU_REMOTE_CERT, XGPU_REMOTE_CERT_KEY and XGPU_REMOTE_CA go together (this host's "
			 "certificate, its key, and the CA that signs the GPU host's)");
		return cudaErrorInvalidValue;
	}
	if (rs.plain && !(insecure && !strcmp(insecure, "1"))) {
		snprintf(
		    err, errlen,
		    "XGPU_REMOTE needs XGPU_REMOTE_PSK_FILE, the GPU host's key, or XGPU_REMOTE_CERT, "
		    "XGPU_REMOTE_CERT_KEY and XGPU_REMOTE_CA (plain TCP only with XGPU_REMOTE_INSECURE=1, "
		    "against xgpud --remote-insecure)");
		return cudaErrorInvalidValue;
	}
	if (x509) {
		if (!(rs.cert = xgpu_rcert_load(cert, cert_key, ca, why, sizeof why))) {
			snprintf(err, errlen, "XGPU_REMOTE_CERT: %s", why);
			return cudaErrorInvalidValue;
		}
	} else if (psk && xgpu_remote_read_psk(keyfile, rs.identity, sizeof rs.identity, rs.key, &rs.keylen,
					       why, sizeof why) < 0) {
		snprintf(err, errlen, "XGPU_REMOTE_PSK_FILE: %s", why);
		return cudaErrorInvalidValue;
	}
	return connect_remote(ch, region_size, init, init_arg, hello, ack, &rs, err, errlen);
}

int xgpu_fe_remote_open_xen(struct xgpu_fe_chan *ch, size_t region_size, int (*init)(void *, size_t, void *),
			    void *init_arg, const struct xgpu_hello *hello, struct xgpu_hello_ack *ack,
			    const char *spec, const struct xgpu_fe_remote_creds *creds, char *err,
			    size_t errlen)
{
	char why[400];
	struct remote_settings rs = {.spec = spec, .keylen = sizeof rs.key, .xs = creds->xs};
	put_state(creds->xs, "connecting %s (pid %d)", spec, (int)getpid());
	if (!creds->psk) {
		if (!(rs.cert =
			  xgpu_rcert_load_mem(creds->cert, creds->cert_key, creds->ca, why, sizeof why))) {
			snprintf(err, errlen,
				 "the remote GPU's certificates in xenstore (remote-cert...) are not "
				 "usable: %s",
				 why);
			put_state(creds->xs, "failed %s: %s (pid %d)", spec, err, (int)getpid());
			creds->xs->ops->close(creds->xs);
			return cudaErrorInvalidValue;
		}
	} else if (xgpu_remote_parse_psk(creds->psk, rs.identity, sizeof rs.identity, rs.key, &rs.keylen, why,
					 sizeof why) < 0) {
		snprintf(err, errlen, "the remote GPU's key in xenstore (remote-psk) is not usable: %s", why);
		return cudaErrorInvalidValue;
	}
	int r = connect_remote(ch, region_size, init, init_arg, hello, ack, &rs, err, errlen);
	if (r == 0)
		ch->ops = &xgpu_fe_transport_remote;
	if (rs.xs) {
		/* Not taken by a channel: the attempt failed. */
		put_state(rs.xs, "failed %s: %s (pid %d)", spec, err, (int)getpid());
		rs.xs->ops->close(rs.xs);
	}
	return r;
}

static int connect_remote(struct xgpu_fe_chan *ch, size_t region_size, int (*init)(void *, size_t, void *),
			  void *init_arg, const struct xgpu_hello *hello, struct xgpu_hello_ack *ack,
			  struct remote_settings *rs, char *err, size_t errlen)
{
	const char *spec = rs->spec;
	char host[256], port[32], why[512];
	bool plain = rs->plain;
	if (split_hostport(spec, host, sizeof host, port, sizeof port) < 0) {
		explicit_bzero(rs->key, sizeof rs->key);
		xgpu_rcert_free(rs->cert);
		snprintf(err, errlen, "remote GPU %s: need host:port", spec);
		return cudaErrorInvalidValue;
	}
	struct remote_chan *rc = calloc(1, sizeof *rc);
	void *region = NULL;
	int status = cudaErrorDevicesUnavailable;
	if (!rc) {
		explicit_bzero(rs->key, sizeof rs->key);
		xgpu_rcert_free(rs->cert);
		snprintf(err, errlen, "out of memory");
		return cudaErrorMemoryAllocation;
	}
	pthread_mutex_init(&rc->send_lock, NULL);
	pthread_mutex_init(&rc->recv_lock, NULL);
	pthread_mutex_init(&rc->xs_lock, NULL);
	rc->last_sent = xgpu_now_ns();
	rc->kick_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	rc->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	rc->ctl_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	rc->rbuf = malloc(XGPU_REMOTE_MAX_PAYLOAD);
	rc->wbuf = malloc(WRITE_BUF);
	snprintf(rc->peer, sizeof rc->peer, "%s", spec);
	region = mmap(NULL, region_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (region == MAP_FAILED)
		region = NULL;
	if (rc->kick_fd < 0 || rc->wake_fd < 0 || rc->ctl_fd < 0 || !rc->rbuf || !rc->wbuf || !region) {
		snprintf(err, errlen, "out of memory or descriptors");
		status = cudaErrorMemoryAllocation;
		goto fail;
	}
	if (init(region, region_size, init_arg) < 0 ||
	    xgpu_relay_init(&rc->relay, true, region, region_size, why, sizeof why) < 0) {
		snprintf(err, errlen, "cannot lay out a channel region of %zu bytes", region_size);
		status = cudaErrorInvalidValue;
		goto fail;
	}
	rc->relay.kick = kick_client;
	rc->relay.kick_arg = rc;
	int fd = dial(host, port, why, sizeof why);
	if (fd < 0) {
		snprintf(err, errlen, "cannot reach remote xgpud at %s: %s", spec, why);
		goto fail;
	}
	xgpu_remote_tune_socket(fd);
	if (rs->cert)
		rc->conn = xgpu_rconn_client_cert(fd, rs->cert, host, CONNECT_TIMEOUT_MS, why, sizeof why);
	else if (plain)
		rc->conn = xgpu_rconn_client(fd, NULL, NULL, 0, CONNECT_TIMEOUT_MS, why, sizeof why);
	else
		rc->conn = xgpu_rconn_client(fd, rs->identity, rs->key, rs->keylen, CONNECT_TIMEOUT_MS, why,
					     sizeof why);
	explicit_bzero(rs->key, sizeof rs->key);
	if (!rc->conn) {
		snprintf(err, errlen, "the TLS handshake with remote xgpud at %s failed: %s%s", spec, why,
			 rs->cert ? "" : " (is the key the one of that host's --remote-psk?)");
		goto fail;
	}
	const char *zc = getenv("XGPU_REMOTE_ZEROCOPY");
	if (plain && zc && !strcmp(zc, "1")) {
		if (xgpu_rconn_set_zerocopy(rc->conn, why, sizeof why) < 0)
			xgpu_fe_warn_once("remote-zerocopy",
					  "XGPU_REMOTE_ZEROCOPY=1: sending without MSG_ZEROCOPY: %s", why);
		else
			rc->bulk_via_ring = true;
	}
	/* The credentials are needed only for the handshake. TLS 1.3 ends a
	 * client's handshake before the server has checked its certificate:
	 * a refusal arrives as an alert in place of the first answer. */
	bool x509 = rs->cert != NULL;
	xgpu_rcert_free(rs->cert);
	rs->cert = NULL;
	const struct xgpu_shm_header *hdr = region;
	struct {
		struct xgpu_rframe h;
		struct xgpu_remote_hello rh;
	} msg = {
	    .h = {.type = XGPU_RF_HELLO, .len = sizeof(struct xgpu_remote_hello)},
	    .rh = {.magic = XGPU_REMOTE_MAGIC,
		   .version = XGPU_PROTO_VERSION,
		   .nr_slots = hdr->nr_slots,
		   .data_size = (uint32_t)hdr->tx_size,
		   .region_size = region_size,
		   .hello = *hello},
	};
	struct xgpu_rframe ah;
	struct timeval tv = {.tv_sec = ACK_TIMEOUT_MS / 1000};
	setsockopt(xgpu_rconn_fd(rc->conn), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	if (xgpu_rconn_send(rc->conn, &msg, sizeof msg, why, sizeof why) < 0 ||
	    xgpu_rconn_recv_frame(rc->conn, true, &ah, rc->rbuf, why, sizeof why) < 0) {
		if (x509 && strstr(why, "TLS alert"))
			snprintf(err, errlen,
				 "remote xgpud at %s refused this host's certificate: %s (the GPU host's log "
				 "says why; the CA of its --remote-ca must sign XGPU_REMOTE_CERT)",
				 spec, why);
		else
			snprintf(err, errlen, "remote xgpud at %s did not answer the handshake: %s", spec,
				 why);
		goto fail;
	}
	if (ah.type != XGPU_RF_ACK) {
		snprintf(err, errlen, "remote xgpud at %s answered the handshake with frame type %u", spec,
			 ah.type);
		goto fail;
	}
	xgpu_remote_set_silence_limit(xgpu_rconn_fd(rc->conn));
	atomic_store(&rc->last_heard, xgpu_now_ns());
	memcpy(ack, rc->rbuf, sizeof *ack);
	char peer[340];
	snprintf(peer, sizeof peer, "remote %s is not an xgpud", spec);
	if ((status = xgpu_fe_check_ack(ack, peer, err, errlen)) != 0)
		goto fail;
	ch->region = region;
	ch->region_size = region_size;
	ch->priv = rc;
	if (pthread_create(&rc->reader, NULL, reader_main, rc) != 0) {
		snprintf(err, errlen, "cannot start the remote channel's threads");
		status = cudaErrorMemoryAllocation;
		goto fail;
	}
	if (pthread_create(&rc->writer, NULL, writer_main, rc) != 0) {
		atomic_store(&rc->stop, true);
		xgpu_rconn_shutdown(rc->conn);
		pthread_join(rc->reader, NULL);
		snprintf(err, errlen, "cannot start the remote channel's threads");
		status = cudaErrorMemoryAllocation;
		goto fail;
	}
	if (rs->xs) {
		rc->xs = rs->xs;
		rs->xs = NULL;
		chan_state(rc, "connected %s (%s, pid %d)", spec, xgpu_rconn_protocol(rc->conn),
			   (int)getpid());
		atomic_store(&xen_latest, rc);
	}
	return 0;
fail:
	explicit_bzero(rs->key, sizeof rs->key);
	xgpu_rcert_free(rs->cert);
	rs->cert = NULL;
	ch->priv = NULL;
	ch->region = NULL;
	free_chan(rc, region_size, region);
	return status;
}

static void remote_kick(struct xgpu_fe_chan *ch)
{
	struct remote_chan *rc = ch->priv;
	if (!atomic_load(&rc->dead) && pthread_mutex_trylock(&rc->send_lock) == 0) {
		char err[256];
		/* One buffer's send, then the arm and the look before sleeping:
		 * three turns when a call's request is all there is. */
		int turn = send_turns(rc, 3, err, sizeof err);
		pthread_mutex_unlock(&rc->send_lock);
		if (turn < 0) {
			lost(rc, err);
			return;
		}
		if (turn == 0)
			return;
	}
	wake(rc->kick_fd);
}

/* A call's bulk bytes go onto the network from the caller's buffer, in the
 * calling thread: copying them into the ring first, for the writer to send
 * from there, cost a copy of every byte and a wake-up per buffer (host to
 * device copies ran at 41-46 % of a plain TCP stream). What was published
 * before them (the call's request) is sent first. -1: the channel is lost. */
static int64_t remote_write_bulk(struct xgpu_fe_chan *ch, struct xgpu_qend *tx, const void *src, size_t len)
{
	struct remote_chan *rc = ch->priv;
	if (atomic_load(&rc->dead))
		return -1;
	if (rc->bulk_via_ring)
		return XGPU_BULK_VIA_RING;
	char err[256];
	pthread_mutex_lock(&rc->send_lock);
	int64_t n = send_turns(rc, 64, err, sizeof err);
	if (n >= 0)
		n = xgpu_remote_send_direct(&rc->relay, rc->conn, XGPU_RQ_TX, tx, src, len, err, sizeof err);
	pthread_mutex_unlock(&rc->send_lock);
	if (n < 0)
		lost(rc, err);
	return n;
}

/* A client waiting for an answer reads in person when no one else is
 * reading: the frame that answers it then wakes this thread, not the reader
 * thread, which would wake this one in turn (a wake-up is a large share of a
 * remote round trip). One batch of frames, then the caller looks at its
 * rings again; bulk bytes into direct's buffer when it waits for them
 * (remote_read_bulk). A client waiting for ring space leaves reading to the
 * reader thread. */
static enum xgpu_wait_result read_in_person(struct remote_chan *rc, int timeout_ms,
					    struct xgpu_rdirect *direct)
{
	if (!xgpu_rconn_pending(rc->conn)) {
		struct pollfd pfd[2] = {{xgpu_rconn_fd(rc->conn), POLLIN, 0}, {rc->wake_fd, POLLIN, 0}};
		int n = poll(pfd, 2, timeout_ms);
		if (n == 0)
			return XGPU_WAIT_TIMEOUT;
		if (n < 0)
			return XGPU_WAIT_KICKED;
		if (pfd[1].revents)
			drain(rc->wake_fd);
		if (!pfd[0].revents)
			return XGPU_WAIT_KICKED;
	}
	read_frames(rc, direct);
	return XGPU_WAIT_KICKED;
}

/* The wait, reading in person when answer or direct is given; direct
 * receives bulk bytes (remote_read_bulk). */
static enum xgpu_wait_result wait_frames(struct remote_chan *rc, int timeout_ms, bool answer,
					 struct xgpu_rdirect *direct)
{
	if (atomic_load(&rc->dead))
		return XGPU_WAIT_PEER_GONE;
	enum xgpu_wait_result r;
	atomic_fetch_add(&rc->waiters, 1);
	if ((answer || direct) && pthread_mutex_trylock(&rc->recv_lock) == 0) {
		atomic_store(&rc->in_person, true);
		reading_here = true;
		r = read_in_person(rc, timeout_ms, direct);
		reading_here = false;
		atomic_store(&rc->in_person, false);
		pthread_mutex_unlock(&rc->recv_lock);
		/* Another thread that came to wait meanwhile may have found the
		 * role taken and slept on wake_fd: it takes over. */
		if (atomic_load(&rc->waiters) > 1)
			wake(rc->wake_fd);
	} else {
		if (atomic_load(&rc->reader_parked))
			wake(rc->ctl_fd); /* frames for this waiter must be read */
		struct pollfd pfd = {rc->wake_fd, POLLIN, 0};
		int n = poll(&pfd, 1, timeout_ms);
		if (n > 0)
			drain(rc->wake_fd);
		r = n == 0 ? XGPU_WAIT_TIMEOUT : XGPU_WAIT_KICKED;
	}
	atomic_fetch_sub(&rc->waiters, 1);
	if (atomic_load(&rc->dead))
		return XGPU_WAIT_PEER_GONE;
	return r;
}

static enum xgpu_wait_result remote_wait(struct xgpu_fe_chan *ch, int timeout_ms, bool answer)
{
	return wait_frames(ch->priv, timeout_ms, answer, NULL);
}

/* A call's bulk bytes from the GPU host go from the socket into the
 * caller's buffer, read by the calling thread: through the ring they cost a
 * copy of every byte more, and the reader thread's wake-ups. Frames that are
 * not those bytes (the answer, reports, bytes the ring holds already) are
 * applied as the reader thread would. Another thread reading already: a wait
 * as remote_wait's. */
static int64_t remote_read_bulk(struct xgpu_fe_chan *ch, struct xgpu_qend *rx, void *dst, size_t len,
				int timeout_ms)
{
	struct xgpu_rdirect d = {.queue = XGPU_RQ_RX, .at = rx->idx, .dst = dst, .len = len};
	if (wait_frames(ch->priv, timeout_ms, false, &d) == XGPU_WAIT_PEER_GONE && !d.got)
		return -1;
	return (int64_t)d.got;
}

static int remote_share_segment(struct xgpu_fe_chan *ch, size_t size, void **ptr, uint64_t *token)
{
	(void)ch;
	(void)size;
	(void)ptr;
	(void)token;
	return cudaErrorNotSupported; /* host memory cannot be shared across a network */
}

static void remote_unshare_segment(struct xgpu_fe_chan *ch, void *ptr, size_t size)
{
	(void)ch;
	munmap(ptr, size);
}

/* XGPU_REMOTE_ZEROCOPY=1 is an experiment's setting: at exit (channels
 * are not closed then), say what the kernel did with the sends. */
/* A program that exits leaves its channels open (the OS ends them): a
 * Xen guest's last says so, or "connected" would outlive it. */
__attribute__((destructor)) static void xen_state_at_exit(void)
{
	struct remote_chan *rc = atomic_exchange(&xen_latest, NULL);
	if (rc && !atomic_load(&rc->dead))
		chan_state(rc, "ended %s: pid %d exited", rc->peer, (int)getpid());
}

__attribute__((destructor)) static void zerocopy_report(void)
{
	uint64_t sends, done, copied;
	xgpu_rconn_zerocopy_totals(&sends, &done, &copied);
	if (sends)
		fprintf(stderr,
			"xgpu: remote channels: MSG_ZEROCOPY: %" PRIu64 " sends, %" PRIu64
			" completed, %" PRIu64 " of them copied by the kernel\n",
			sends, done, copied);
}

static void remote_close(struct xgpu_fe_chan *ch)
{
	struct remote_chan *rc = ch->priv;
	if (!rc)
		return;
	atomic_store(&rc->stop, true);
	lost(rc, NULL);
	pthread_join(rc->reader, NULL);
	pthread_join(rc->writer, NULL);
	chan_state(rc, "closed %s (pid %d)", rc->peer, (int)getpid());
	free_chan(rc, ch->region_size, ch->region);
	ch->priv = NULL;
	ch->region = NULL;
}

static void remote_abandon(struct xgpu_fe_chan *ch)
{
	/* A forked child has neither thread; closing its copy of the socket
	 * leaves the parent's connection up. */
	struct remote_chan *rc = ch->priv;
	if (!rc)
		return;
	free_chan(rc, ch->region_size, ch->region);
	ch->priv = NULL;
	ch->region = NULL;
}

const struct xgpu_fe_transport_ops xgpu_fe_transport_remote = {
    .name = "remote",
    .open = remote_open,
    .kick = remote_kick,
    .wait = remote_wait,
    .write_bulk = remote_write_bulk,
    .read_bulk = remote_read_bulk,
    .share_segment = remote_share_segment,
    .unshare_segment = remote_unshare_segment,
    .host_memory_private = true,
    .close = remote_close,
    .abandon = remote_abandon,
};
