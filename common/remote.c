/* SPDX-License-Identifier: Apache-2.0 */
/* remote.c - remote channels (remote.h): the frame checks, the relay that
 * mirrors a region's queues, and connections over TCP with TLS 1.3 and a
 * pre-shared key.
 *
 * GnuTLS is loaded with dlopen when a remote channel is first made, so that
 * libcuda.so.1 and xgpud need it only where remote channels are used (a
 * domU image, for one, need not carry it). */
#include "remote.h"

#include "util.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <arpa/inet.h>
#include <linux/errqueue.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

/* ---- frames ------------------------------------------------------------------ */

static bool is_slots(unsigned q)
{
	return q == XGPU_RQ_REQ || q == XGPU_RQ_RSP;
}

/* The queues a guest's end produces into (requests, bulk out). */
static bool guest_outbound(unsigned q)
{
	return q == XGPU_RQ_REQ || q == XGPU_RQ_TX;
}

int xgpu_rframe_check(const struct xgpu_rframe *h, bool guest, char *err, size_t errlen)
{
	if (h->zero || h->zero2) {
		snprintf(err, errlen, "frame with reserved bits set");
		return -1;
	}
	switch (h->type) {
	case XGPU_RF_HELLO:
		if (guest || h->queue || h->idx || h->len != sizeof(struct xgpu_remote_hello))
			goto bad;
		return 0;
	case XGPU_RF_ACK:
		if (!guest || h->queue || h->idx || h->len != sizeof(struct xgpu_hello_ack))
			goto bad;
		return 0;
	case XGPU_RF_END:
		if (!guest || h->queue || h->len)
			goto bad;
		return 0;
	case XGPU_RF_PING:
		if (h->queue || h->len || h->idx)
			goto bad;
		return 0;
	case XGPU_RF_DATA:
		/* Data arrives on the queues the far end produces into. */
		if (h->queue >= XGPU_RQ_COUNT || guest_outbound(h->queue) == guest || h->len == 0 ||
		    h->len > XGPU_REMOTE_MAX_PAYLOAD || (is_slots(h->queue) && h->len % XGPU_SLOT_SIZE))
			goto bad;
		return 0;
	case XGPU_RF_CONS:
		/* Reports on the queues we produce into. */
		if (h->queue >= XGPU_RQ_COUNT || guest_outbound(h->queue) != guest || h->len)
			goto bad;
		return 0;
	default:
		break;
	}
bad:
	snprintf(err, errlen, "malformed frame (type %u, queue %u, %u bytes)", h->type, h->queue, h->len);
	return -1;
}

/* ---- the relay ----------------------------------------------------------------- */

int xgpu_relay_init(struct xgpu_relay *r, bool guest, void *region, size_t size, char *err, size_t errlen)
{
	struct xgpu_shm_view v;
	if (xgpu_shm_attach(region, size, &v, err, errlen) < 0)
		return -1;
	memset(r->qs, 0, sizeof r->qs);
	r->guest = guest;
	r->hdr = region;
	const struct xgpu_qend *e[XGPU_RQ_COUNT] = {&v.req, &v.rsp, &v.tx, &v.rx};
	for (unsigned i = 0; i < XGPU_RQ_COUNT; i++) {
		struct xgpu_rqueue *q = &r->qs[i];
		q->q = e[i]->q;
		q->buf = e[i]->buf;
		q->size = e[i]->size;
		q->unit = e[i]->unit;
		q->tag_flip = e[i]->tag_flip;
		q->outbound = guest_outbound(i) == guest;
	}
	return 0;
}

/* The peer wants a kick if its threshold lies in (old, new]. */
static bool crossed(uint32_t old_idx, uint32_t new_idx, uint32_t event)
{
	return (uint32_t)(new_idx - event) < (uint32_t)(new_idx - old_idx);
}

/* Checks DATA of n units for queue q at h->idx against the relay's state:
 * 0, or -1 with the reason. */
static int check_data(struct xgpu_rqueue *q, const struct xgpu_rframe *h, uint32_t *prod_out, char *err,
		      size_t errlen)
{
	uint32_t prod = atomic_load_explicit(&q->prod, memory_order_relaxed);
	if (h->idx != prod) {
		snprintf(err, errlen, "data for queue %u at index %u, expected %u", h->queue, h->idx, prod);
		return -1;
	}
	uint32_t n = h->len / q->unit;
	uint32_t cons = atomic_load_explicit(&q->q->cons, memory_order_acquire);
	uint32_t used = prod - cons;
	if (used > q->size) {
		snprintf(err, errlen, "the local consumer of queue %u moved its index out of range",
			 h->queue);
		return -1;
	}
	if (n > q->size - used) {
		snprintf(err, errlen, "the peer sent %u units to queue %u, which has room for %u", n,
			 h->queue, q->size - used);
		return -1;
	}
	*prod_out = prod;
	return 0;
}

/* Publishes n units written at prod, kicking the local consumer if it asked. */
static void publish_data(struct xgpu_relay *r, struct xgpu_rqueue *q, uint32_t prod, uint32_t n)
{
	atomic_exchange_explicit(&q->q->prod, prod + n, memory_order_seq_cst);
	uint32_t ev = atomic_load_explicit(&q->q->prod_event, memory_order_relaxed);
	if (crossed(prod, prod + n, ev))
		r->kick(r->kick_arg);
}

static int apply_data(struct xgpu_relay *r, struct xgpu_rqueue *q, const struct xgpu_rframe *h,
		      const uint8_t *payload, char *err, size_t errlen)
{
	uint32_t prod;
	if (check_data(q, h, &prod, err, errlen) < 0)
		return -1;
	uint32_t n = h->len / q->unit;
	/* Ours before the slots are sealed: a consumer that goes by tags may
	 * release them before the shared index below is published. */
	atomic_store_explicit(&q->prod, prod + n, memory_order_release);
	if (q->unit == 1) {
		uint32_t off = prod & (q->size - 1);
		uint32_t first = q->size - off < n ? q->size - off : n;
		memcpy(q->buf + off, payload, first);
		memcpy(q->buf, payload + first, n - first);
	} else {
		for (uint32_t i = 0; i < n; i++) {
			uint8_t *slot = q->buf + (size_t)((prod + i) & (q->size - 1)) * q->unit;
			/* The tag is ours to write, after the body. */
			memcpy(slot + 4, payload + (size_t)i * q->unit + 4, q->unit - 4);
			__atomic_store_n((uint32_t *)slot, xgpu_slot_tag(prod + i) ^ q->tag_flip,
					 __ATOMIC_RELEASE);
		}
	}
	publish_data(r, q, prod, n);
	return 0;
}

int xgpu_remote_receive(struct xgpu_relay *r, xgpu_remote_read_fn read, void *ctx, uint8_t *scratch,
			struct xgpu_rdirect *direct, int32_t *end_status, char *err, size_t errlen)
{
	struct xgpu_rframe h;
	if (read(ctx, &h, sizeof h, err, errlen) < 0 || xgpu_rframe_check(&h, r->guest, err, errlen) < 0)
		return -1;
	struct xgpu_rqueue *q = h.type == XGPU_RF_DATA ? &r->qs[h.queue] : NULL;
	if (!q || q->unit != 1) {
		if (h.len && read(ctx, scratch, h.len, err, errlen) < 0)
			return -1;
		return xgpu_remote_apply(r, &h, scratch, end_status, err, errlen);
	}
	/* Bulk bytes go straight into the ring, once their frame is known to
	 * fit: the consumer reads only what is published after them. */
	uint32_t prod;
	if (check_data(q, &h, &prod, err, errlen) < 0)
		return -1;
	if (direct && direct->queue == h.queue && prod == direct->at + (uint32_t)direct->got &&
	    h.len <= direct->len - direct->got) {
		if (read(ctx, direct->dst + direct->got, h.len, err, errlen) < 0)
			return -1;
		direct->got += h.len;
	} else {
		uint32_t off = prod & (q->size - 1);
		uint32_t first = q->size - off < h.len ? q->size - off : h.len;
		if (read(ctx, q->buf + off, first, err, errlen) < 0 ||
		    (h.len > first && read(ctx, q->buf, h.len - first, err, errlen) < 0))
			return -1;
	}
	atomic_store_explicit(&q->prod, prod + h.len, memory_order_release);
	publish_data(r, q, prod, h.len);
	return 0;
}

static int apply_cons(struct xgpu_relay *r, struct xgpu_rqueue *q, const struct xgpu_rframe *h, char *err,
		      size_t errlen)
{
	uint32_t sent = atomic_load_explicit(&q->sent, memory_order_acquire);
	uint32_t old = q->acked;
	if ((uint32_t)(h->idx - old) > (uint32_t)(sent - old)) {
		snprintf(err, errlen, "the peer consumed queue %u to %u, outside [%u, %u]", h->queue, h->idx,
			 old, sent);
		return -1;
	}
	__atomic_store_n(&q->acked, h->idx, __ATOMIC_RELAXED);
	atomic_exchange_explicit(&q->q->cons, h->idx, memory_order_seq_cst);
	uint32_t ev = atomic_load_explicit(&q->q->cons_event, memory_order_relaxed);
	if (crossed(old, h->idx, ev))
		r->kick(r->kick_arg);
	return 0;
}

int xgpu_remote_apply(struct xgpu_relay *r, const struct xgpu_rframe *h, const uint8_t *payload,
		      int32_t *end_status, char *err, size_t errlen)
{
	if (xgpu_rframe_check(h, r->guest, err, errlen) < 0)
		return -1;
	switch (h->type) {
	case XGPU_RF_DATA:
		return apply_data(r, &r->qs[h->queue], h, payload, err, errlen);
	case XGPU_RF_CONS:
		return apply_cons(r, &r->qs[h->queue], h, err, errlen);
	case XGPU_RF_PING:
		return 0;
	case XGPU_RF_END:
		*end_status = (int32_t)h->idx;
		atomic_store(&r->hdr->backend_end, (int32_t)h->idx);
		return 1;
	default:
		snprintf(err, errlen, "frame type %u after the handshake", h->type);
		return -1;
	}
}

static uint8_t *put_header(uint8_t *p, uint8_t type, uint8_t queue, uint32_t len, uint32_t idx)
{
	struct xgpu_rframe h = {.type = type, .queue = queue, .len = len, .idx = idx};
	memcpy(p, &h, sizeof h);
	return p + sizeof h;
}

/* The frames of a turn as iovecs: headers and slots copied into out, bulk
 * bytes referred to where they lie in the ring (sent from there). */
struct frames {
	uint8_t *out, *p, *end, *seg; /* seg: where the current out iovec starts */
	struct iovec *iov;
	int niov, max_iov;
	size_t bulk, bulk_cap, total;
};

static void cut_segment(struct frames *f)
{
	if (f->p > f->seg) {
		f->iov[f->niov++] = (struct iovec){f->seg, (size_t)(f->p - f->seg)};
		f->total += (size_t)(f->p - f->seg);
		f->seg = f->p;
	}
}

/* Room for a header and what follows it: 2 iovecs (the header's segment and
 * a bulk reference) are kept for each frame. */
static bool frame_fits(struct frames *f, size_t inline_bytes)
{
	return (size_t)(f->end - f->p) >= sizeof(struct xgpu_rframe) + inline_bytes &&
	       f->niov + 3 <= f->max_iov;
}

int xgpu_remote_collect(struct xgpu_relay *r, uint8_t *out, size_t cap, size_t bulk_cap, struct iovec *iov,
			int max_iov, size_t *total, bool *more, char *err, size_t errlen)
{
	struct frames f = {out, out, out + cap, out, iov, 0, max_iov, 0, bulk_cap, 0};
	*more = false;
	/* A packet may refer to bulk bytes its producer wrote before it, so
	 * the packets' indexes are read first and the bytes go out before
	 * them: the far consumer never sees a packet before its data. */
	static const unsigned order[XGPU_RQ_COUNT] = {XGPU_RQ_TX, XGPU_RQ_RX, XGPU_RQ_REQ, XGPU_RQ_RSP};
	uint32_t slot_prod[XGPU_RQ_COUNT] = {0};
	for (unsigned i = 0; i < XGPU_RQ_COUNT; i++)
		if (is_slots(i) && r->qs[i].outbound)
			slot_prod[i] = atomic_load_explicit(&r->qs[i].q->prod, memory_order_acquire);
	for (unsigned k = 0; k < XGPU_RQ_COUNT; k++) {
		unsigned i = order[k];
		struct xgpu_rqueue *q = &r->qs[i];
		if (q->outbound) {
			if (is_slots(i) && *more)
				continue; /* its bytes did not all fit */
			uint32_t prod = is_slots(i) ? slot_prod[i]
						    : atomic_load_explicit(&q->q->prod, memory_order_acquire);
			uint32_t sent = atomic_load_explicit(&q->sent, memory_order_relaxed);
			/* q->acked is the reader's; a stale value only makes
			 * the check looser by what was acknowledged since. */
			uint32_t acked = __atomic_load_n(&q->acked, __ATOMIC_RELAXED);
			if ((uint32_t)(prod - acked) > q->size ||
			    (uint32_t)(sent - acked) > (uint32_t)(prod - acked)) {
				snprintf(err, errlen,
					 "the local producer of queue %u moved its index out of range", i);
				return -1;
			}
			bool bulk = q->unit == 1;
			while (sent != prod) {
				uint32_t run = prod - sent;
				uint32_t to_wrap = q->size - (sent & (q->size - 1));
				if (run > to_wrap)
					run = to_wrap;
				if (run > XGPU_REMOTE_MAX_PAYLOAD / q->unit)
					run = XGPU_REMOTE_MAX_PAYLOAD / q->unit;
				if (bulk && run > f.bulk_cap - f.bulk)
					run = (uint32_t)(f.bulk_cap - f.bulk);
				if (run == 0 || !frame_fits(&f, bulk ? 0 : q->unit)) {
					*more = true;
					break;
				}
				if (!bulk) {
					size_t room = (size_t)(f.end - f.p) - sizeof(struct xgpu_rframe);
					if (run > room / q->unit)
						run = (uint32_t)(room / q->unit);
				}
				const uint8_t *src = q->buf + (size_t)(sent & (q->size - 1)) * q->unit;
				size_t bytes = (size_t)run * q->unit;
				f.p = put_header(f.p, XGPU_RF_DATA, (uint8_t)i, (uint32_t)bytes, sent);
				if (bulk) {
					cut_segment(&f);
					f.iov[f.niov++] = (struct iovec){(void *)src, bytes};
					f.total += bytes;
					f.bulk += bytes;
				} else {
					memcpy(f.p, src, bytes);
					f.p += bytes;
				}
				sent += run;
			}
			atomic_store_explicit(&q->sent, sent, memory_order_release);
		} else {
			uint32_t cons = atomic_load_explicit(&q->q->cons, memory_order_acquire);
			uint32_t prod = atomic_load_explicit(&q->prod, memory_order_acquire);
			if ((uint32_t)(cons - q->reported) > (uint32_t)(prod - q->reported)) {
				snprintf(err, errlen,
					 "the local consumer of queue %u moved its index out of range", i);
				return -1;
			}
			if (cons != q->reported) {
				if (!frame_fits(&f, 0)) {
					*more = true;
					continue;
				}
				f.p = put_header(f.p, XGPU_RF_CONS, (uint8_t)i, 0, cons);
				q->reported = cons;
			}
		}
	}
	cut_segment(&f);
	*total = f.total;
	return f.niov;
}

/* How far the local consumer may read before the far producer must hear of
 * it. Reports also ride on every frame sent anyway, so this only bounds the
 * wake-ups spent on them: a producer waits for at most one slot, or a quarter
 * of a data area (client.c, dispatch.c), and a stalled far producer sees at
 * least size - report_every free, so it never waits on a report not sent. */
static uint32_t report_every(const struct xgpu_rqueue *q)
{
	return q->unit == 1 ? q->size / 4 : q->size / 2;
}

void xgpu_remote_arm(struct xgpu_relay *r)
{
	for (unsigned i = 0; i < XGPU_RQ_COUNT; i++) {
		struct xgpu_rqueue *q = &r->qs[i];
		if (q->outbound)
			atomic_store_explicit(&q->q->prod_event, atomic_load(&q->sent) + 1,
					      memory_order_relaxed);
		else
			atomic_store_explicit(&q->q->cons_event, q->reported + report_every(q),
					      memory_order_relaxed);
	}
	atomic_thread_fence(memory_order_seq_cst);
}

/* ---- the key ------------------------------------------------------------------- */

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* "identity:hex" or "hex" in text (changed in place), described as what in
 * messages. */
static int parse_psk(char *text, const char *what, char *identity, size_t idlen, uint8_t *key, size_t *keylen,
		     char *err, size_t errlen)
{
	text[strcspn(text, "\r\n")] = '\0';
	const char *hex = text;
	char *colon = strchr(text, ':');
	if (colon) {
		*colon = '\0';
		hex = colon + 1;
		if (!*text || strlen(text) >= idlen) {
			snprintf(err, errlen, "%s names an empty or overlong identity", what);
			return -1;
		}
		xgpu_strlcpy(identity, text, idlen);
	} else {
		xgpu_strlcpy(identity, "xgpu", idlen);
	}
	size_t len = strlen(hex), cap = *keylen;
	if (len % 2 || len / 2 < 16 || len / 2 > cap) {
		snprintf(err, errlen,
			 "%s holds no key of 16 to %zu bytes in hex (psktool -u NAME -p FILE makes one)",
			 what, cap);
		return -1;
	}
	for (size_t i = 0; i < len / 2; i++) {
		int hi = hexval(hex[2 * i]), lo = hexval(hex[2 * i + 1]);
		if (hi < 0 || lo < 0) {
			explicit_bzero(key, cap);
			snprintf(err, errlen, "%s: the key is not hexadecimal", what);
			return -1;
		}
		key[i] = (uint8_t)(hi << 4 | lo);
	}
	*keylen = len / 2;
	return 0;
}

/* Opens a key file that only its owner may read: the fd, or -1 with the
 * reason. */
static int open_key_file(const char *path, char *err, size_t errlen)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0) {
		snprintf(err, errlen, "cannot read the key file %s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	if (st.st_mode & (S_IRWXG | S_IRWXO)) {
		close(fd);
		snprintf(err, errlen, "the key file %s is open to other users (mode %03o); chmod 600 it",
			 path, (unsigned)(st.st_mode & 0777));
		return -1;
	}
	return fd;
}

int xgpu_remote_read_psk(const char *path, char *identity, size_t idlen, uint8_t *key, size_t *keylen,
			 char *err, size_t errlen)
{
	char buf[1024], what[300];
	int fd = open_key_file(path, err, errlen);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n < 0) {
		snprintf(err, errlen, "cannot read the key file %s: %s", path, strerror(errno));
		return -1;
	}
	buf[n] = '\0';
	snprintf(what, sizeof what, "the key file %s", path);
	int r = parse_psk(buf, what, identity, idlen, key, keylen, err, errlen);
	explicit_bzero(buf, sizeof buf);
	return r;
}

int xgpu_remote_read_psk_table(const char *path, struct xgpu_psk_table *t, char *err, size_t errlen)
{
	memset(t, 0, sizeof *t);
	int fd = open_key_file(path, err, errlen);
	if (fd < 0)
		return -1;
	FILE *f = fdopen(fd, "r");
	if (!f) {
		close(fd);
		snprintf(err, errlen, "cannot read the key file %s: %s", path, strerror(errno));
		return -1;
	}
	char line[512], what[340];
	int rc = 0;
	for (unsigned no = 1; rc == 0 && fgets(line, sizeof line, f); no++) {
		if (!strchr(line, '\n') && !feof(f)) {
			snprintf(err, errlen, "the key file %s: line %u is too long", path, no);
			rc = -1;
			break;
		}
		if (line[0] == '#' || line[strspn(line, " \t\r\n")] == '\0')
			continue;
		if (t->n == XGPU_REMOTE_MAX_KEYS) {
			snprintf(err, errlen, "the key file %s holds more than %d keys", path,
				 XGPU_REMOTE_MAX_KEYS);
			rc = -1;
			break;
		}
		snprintf(what, sizeof what, "the key file %s, line %u,", path, no);
		t->e[t->n].keylen = sizeof t->e[t->n].key;
		rc = parse_psk(line, what, t->e[t->n].identity, sizeof t->e[t->n].identity, t->e[t->n].key,
			       &t->e[t->n].keylen, err, errlen);
		for (unsigned i = 0; rc == 0 && i < t->n; i++)
			if (!strcmp(t->e[i].identity, t->e[t->n].identity)) {
				snprintf(err, errlen, "the key file %s, line %u, names identity %s twice",
					 path, no, t->e[i].identity);
				rc = -1;
			}
		if (rc == 0)
			t->n++;
	}
	explicit_bzero(line, sizeof line);
	fclose(f);
	if (rc == 0 && t->n == 0) {
		snprintf(err, errlen, "the key file %s holds no key (psktool -u NAME -p FILE makes one)",
			 path);
		rc = -1;
	}
	if (rc < 0)
		explicit_bzero(t, sizeof *t);
	return rc;
}

int xgpu_remote_parse_psk(const char *text, char *identity, size_t idlen, uint8_t *key, size_t *keylen,
			  char *err, size_t errlen)
{
	char buf[512];
	if (strlen(text) >= sizeof buf) {
		snprintf(err, errlen, "the key text is longer than %zu bytes", sizeof buf - 1);
		return -1;
	}
	xgpu_strlcpy(buf, text, sizeof buf);
	int r = parse_psk(buf, "the key", identity, idlen, key, keylen, err, errlen);
	explicit_bzero(buf, sizeof buf);
	return r;
}

void xgpu_remote_tune_socket(int fd)
{
	int one = 1, idle = 2, intvl = 1, cnt = 4;
	unsigned user_timeout = XGPU_REMOTE_DEAD_MS;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof intvl);
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof cnt);
	setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user_timeout, sizeof user_timeout);
}

void xgpu_remote_set_silence_limit(int fd)
{
	struct timeval tv = {.tv_sec = XGPU_REMOTE_DEAD_MS / 1000,
			     .tv_usec = XGPU_REMOTE_DEAD_MS % 1000 * 1000};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
}

/* ---- GnuTLS, loaded on first use ------------------------------------------------ */

#define TLS_FUNCS(X)                                                                                         \
	X(gnutls_init)                                                                                       \
	X(gnutls_deinit)                                                                                     \
	X(gnutls_priority_set_direct)                                                                        \
	X(gnutls_psk_allocate_client_credentials)                                                            \
	X(gnutls_psk_set_client_credentials)                                                                 \
	X(gnutls_psk_free_client_credentials)                                                                \
	X(gnutls_psk_allocate_server_credentials)                                                            \
	X(gnutls_psk_set_server_credentials_function)                                                        \
	X(gnutls_psk_free_server_credentials)                                                                \
	X(gnutls_credentials_set)                                                                            \
	X(gnutls_transport_set_int2)                                                                         \
	X(gnutls_transport_set_ptr2)                                                                         \
	X(gnutls_transport_set_pull_function)                                                                \
	X(gnutls_transport_set_pull_timeout_function)                                                        \
	X(gnutls_handshake)                                                                                  \
	X(gnutls_handshake_set_timeout)                                                                      \
	X(gnutls_record_send)                                                                                \
	X(gnutls_record_recv)                                                                                \
	X(gnutls_record_check_pending)                                                                       \
	X(gnutls_strerror)                                                                                   \
	X(gnutls_error_is_fatal)                                                                             \
	X(gnutls_protocol_get_version)                                                                       \
	X(gnutls_session_set_ptr)                                                                            \
	X(gnutls_session_get_ptr)                                                                            \
	X(gnutls_certificate_allocate_credentials)                                                           \
	X(gnutls_certificate_free_credentials)                                                               \
	X(gnutls_certificate_set_x509_key_mem)                                                               \
	X(gnutls_certificate_set_x509_trust_mem)                                                             \
	X(gnutls_certificate_set_x509_crl_mem)                                                               \
	X(gnutls_certificate_server_set_request)                                                             \
	X(gnutls_session_set_verify_cert2)                                                                   \
	X(gnutls_session_get_verify_cert_status)                                                             \
	X(gnutls_certificate_verification_status_print)                                                      \
	X(gnutls_certificate_get_peers)                                                                      \
	X(gnutls_auth_get_type)                                                                              \
	X(gnutls_alert_get)                                                                                  \
	X(gnutls_alert_get_name)                                                                             \
	X(gnutls_server_name_set)                                                                            \
	X(gnutls_x509_crt_init)                                                                              \
	X(gnutls_x509_crt_import)                                                                            \
	X(gnutls_x509_crt_get_dn_by_oid)                                                                     \
	X(gnutls_x509_crt_deinit)                                                                            \
	X(gnutls_alert_send_appropriate)

static struct {
#define X(f) __typeof__(f) *f;
	TLS_FUNCS(X)
#undef X
	gnutls_alloc_function *malloc_fn;
	gnutls_free_function *free_fn;
	bool ok;
	char why[256];
} tls;

static pthread_once_t tls_once = PTHREAD_ONCE_INIT;

static void tls_load(void)
{
	void *h = dlopen("libgnutls.so.30", RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		snprintf(tls.why, sizeof tls.why, "cannot load GnuTLS (libgnutls.so.30): %s", dlerror());
		return;
	}
	void *p;
#define X(f)                                                                                                 \
	if (!(p = dlsym(h, #f))) {                                                                           \
		snprintf(tls.why, sizeof tls.why, "GnuTLS lacks %s", #f);                                    \
		return;                                                                                      \
	}                                                                                                    \
	memcpy(&tls.f, &p, sizeof p);
	TLS_FUNCS(X)
#undef X
	/* A variable holding the allocator the PSK callback must use. */
	if (!(p = dlsym(h, "gnutls_malloc"))) {
		snprintf(tls.why, sizeof tls.why, "GnuTLS lacks gnutls_malloc");
		return;
	}
	tls.malloc_fn = p;
	if (!(p = dlsym(h, "gnutls_free"))) {
		snprintf(tls.why, sizeof tls.why, "GnuTLS lacks gnutls_free");
		return;
	}
	tls.free_fn = p;
	tls.ok = true;
}

/* TLS 1.3 only, and only key exchanges with forward secrecy: over the PSK
 * (ECDHE-PSK, DHE-PSK) or, with certificates, (EC)DHE signed by each end's
 * key; the plain PSK exchange stays off. AES-GCM first: GnuTLS's own order
 * may put ChaCha20 ahead (where it thinks AES has no hardware help), which on
 * x86 with AES-NI moves bulk data some fifteen times slower (measured: 64 MiB
 * copies, 0.06 against 0.9 GB/s). */
#define TLS_CIPHERS "-CIPHER-ALL:+AES-128-GCM:+AES-256-GCM:+CHACHA20-POLY1305"
static const char tls_priority_psk[] =
    "NORMAL:-VERS-ALL:+VERS-TLS1.3:-KX-ALL:+ECDHE-PSK:+DHE-PSK:" TLS_CIPHERS;
static const char tls_priority_x509[] = "NORMAL:-VERS-ALL:+VERS-TLS1.3:" TLS_CIPHERS;
static const char tls_priority_both[] = "NORMAL:-VERS-ALL:+VERS-TLS1.3:+ECDHE-PSK:+DHE-PSK:" TLS_CIPHERS;

struct xgpu_rcert {
	gnutls_certificate_credentials_t cred;
	atomic_uint refs; /* the loader's, and one per connection made with it */
};

/* Reads a whole PEM file of at most 64 KiB; a private key's only when no
 * other user may read it. */
static int read_pem(const char *path, bool secret, gnutls_datum_t *d, char *err, size_t errlen)
{
	int fd = secret ? open_key_file(path, err, errlen) : open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		if (!secret)
			snprintf(err, errlen, "cannot read %s: %s", path, strerror(errno));
		return -1;
	}
	size_t cap = 64u << 10, n = 0;
	uint8_t *buf = malloc(cap + 1);
	if (!buf) {
		close(fd);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	for (;;) {
		ssize_t k = read(fd, buf + n, cap - n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0) {
			snprintf(err, errlen, "cannot read %s: %s", path, strerror(errno));
			break;
		}
		if (k == 0) {
			close(fd);
			buf[n] = '\0';
			d->data = buf;
			d->size = (unsigned)n;
			return 0;
		}
		n += (size_t)k;
		if (n == cap) {
			snprintf(err, errlen, "%s is larger than 64 KiB: not a PEM certificate or key", path);
			break;
		}
	}
	close(fd);
	explicit_bzero(buf, n);
	free(buf);
	return -1;
}

int xgpu_remote_read_pem(const char *path, bool secret, char *buf, size_t len, char *err, size_t errlen)
{
	gnutls_datum_t d = {0};
	if (read_pem(path, secret, &d, err, errlen) < 0)
		return -1;
	int r = -1;
	if (strlen((char *)d.data) != d.size)
		snprintf(err, errlen, "%s is not PEM text", path);
	else if (d.size >= len)
		snprintf(err, errlen,
			 "%s holds %u bytes, more than the %zu that fit (an EC key's certificate does)", path,
			 d.size, len - 1);
	else {
		memcpy(buf, d.data, (size_t)d.size + 1);
		r = 0;
	}
	explicit_bzero(d.data, d.size);
	free(d.data);
	return r;
}

static void free_pem(gnutls_datum_t *d)
{
	if (d->data) {
		explicit_bzero(d->data, d->size);
		free(d->data);
	}
	d->data = NULL;
}

struct xgpu_rcert *xgpu_rcert_load_mem(const char *cert, const char *key, const char *ca, char *err,
				       size_t errlen)
{
	pthread_once(&tls_once, tls_load);
	if (!tls.ok) {
		snprintf(err, errlen, "%s", tls.why);
		return NULL;
	}
	struct xgpu_rcert *rc = calloc(1, sizeof *rc);
	if (!rc) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	atomic_init(&rc->refs, 1);
	gnutls_datum_t c = {(unsigned char *)cert, (unsigned)strlen(cert)},
		       k = {(unsigned char *)key, (unsigned)strlen(key)},
		       a = {(unsigned char *)ca, (unsigned)strlen(ca)};
	int r = tls.gnutls_certificate_allocate_credentials(&rc->cred);
	if (r < 0) {
		rc->cred = NULL;
		snprintf(err, errlen, "TLS: %s", tls.gnutls_strerror(r));
		goto fail;
	}
	if ((r = tls.gnutls_certificate_set_x509_key_mem(rc->cred, &c, &k, GNUTLS_X509_FMT_PEM)) < 0) {
		snprintf(err, errlen, "the certificate and its key: %s", tls.gnutls_strerror(r));
		goto fail;
	}
	if ((r = tls.gnutls_certificate_set_x509_trust_mem(rc->cred, &a, GNUTLS_X509_FMT_PEM)) <= 0) {
		snprintf(err, errlen, "the CA: %s", r < 0 ? tls.gnutls_strerror(r) : "no certificate in it");
		goto fail;
	}
	/* Revocation lists the CA's file carries after its certificates: a
	 * peer's certificate one of them names is refused as revoked. */
	if (strstr(ca, "-----BEGIN X509 CRL-----") &&
	    (r = tls.gnutls_certificate_set_x509_crl_mem(rc->cred, &a, GNUTLS_X509_FMT_PEM)) <= 0) {
		snprintf(err, errlen, "the CA's revocation list: %s",
			 r < 0 ? tls.gnutls_strerror(r) : "none could be read");
		goto fail;
	}
	return rc;
fail:
	xgpu_rcert_free(rc);
	return NULL;
}

struct xgpu_rcert *xgpu_rcert_load(const char *cert, const char *key, const char *ca, char *err,
				   size_t errlen)
{
	gnutls_datum_t c = {0}, k = {0}, a = {0};
	char why[256];
	struct xgpu_rcert *rc = NULL;
	if (read_pem(cert, false, &c, err, errlen) < 0 || read_pem(key, true, &k, err, errlen) < 0 ||
	    read_pem(ca, false, &a, err, errlen) < 0)
		goto out;
	if (strlen((char *)c.data) != c.size || strlen((char *)k.data) != k.size ||
	    strlen((char *)a.data) != a.size) {
		snprintf(err, errlen, "%s, %s and %s must be PEM text", cert, key, ca);
		goto out;
	}
	rc = xgpu_rcert_load_mem((char *)c.data, (char *)k.data, (char *)a.data, why, sizeof why);
	if (!rc)
		snprintf(err, errlen, "%s (%s, %s, %s)", why, cert, key, ca);
out:
	free_pem(&c);
	free_pem(&k);
	free_pem(&a);
	return rc;
}

struct xgpu_rcert *xgpu_rcert_ref(struct xgpu_rcert *rc)
{
	if (rc)
		atomic_fetch_add(&rc->refs, 1);
	return rc;
}

void xgpu_rcert_free(struct xgpu_rcert *rc)
{
	if (!rc || atomic_fetch_sub(&rc->refs, 1) > 1)
		return;
	if (rc->cred)
		tls.gnutls_certificate_free_credentials(rc->cred);
	free(rc);
}

/* A call's frames, a header and a slot each, fit several times over. */
#define AHEAD 512

struct xgpu_rconn {
	int fd;
	gnutls_session_t s; /* NULL: plain */
	gnutls_psk_client_credentials_t cc;
	gnutls_psk_server_credentials_t sc;
	bool x509; /* the handshake authenticated with certificates */
	/* MSG_ZEROCOPY (plain TCP only): zerocopy sends made, and of their
	 * completions those reaped, and those where the kernel copied anyway. */
	bool zc;
	uint64_t zc_sends, zc_done, zc_copied;
	/* Bytes read ahead of the frame (plain) or record (TLS) being read,
	 * so that a header and a short payload (and the frames after them)
	 * come in one receive; bulk payloads are read past it into their
	 * ring. Small: what is read ahead of a bulk payload is copied once
	 * more, and measured, reading 4 KiB ahead cost plain copies to the
	 * GPU host a tenth of their speed. */
	uint8_t ahead[AHEAD];
	size_t ahead_off, ahead_len;
	char identity[128]; /* the client's; the server's once a key or certificate proved it */
	uint8_t key[64];
	size_t keylen;
	struct xgpu_psk_table *keys; /* the server's */
	struct xgpu_rcert *cert;     /* a reference, held until freed */
};

static int server_key(gnutls_session_t s, const char *username, gnutls_datum_t *key)
{
	struct xgpu_rconn *c = tls.gnutls_session_get_ptr(s);
	if (!c || !c->keys)
		return -1;
	for (unsigned i = 0; i < c->keys->n; i++) {
		if (strcmp(username, c->keys->e[i].identity) != 0)
			continue;
		key->data = (*tls.malloc_fn)(c->keys->e[i].keylen);
		if (!key->data)
			return -1;
		memcpy(key->data, c->keys->e[i].key, c->keys->e[i].keylen);
		key->size = (unsigned)c->keys->e[i].keylen;
		/* Proved only if the handshake then succeeds. */
		xgpu_strlcpy(c->identity, username, sizeof c->identity);
		return 0;
	}
	return -1;
}

static void set_timeouts(int fd, int ms)
{
	struct timeval tv = {.tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

/* The client certificate's identity, its subject's one common name. */
static int peer_common_name(struct xgpu_rconn *c, char *err, size_t errlen)
{
	unsigned n = 0;
	const gnutls_datum_t *peers = tls.gnutls_certificate_get_peers(c->s, &n);
	gnutls_x509_crt_t crt;
	if (!peers || !n) {
		snprintf(err, errlen, "the client presented no certificate");
		return -1;
	}
	if (tls.gnutls_x509_crt_init(&crt) < 0) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	char cn[128], extra[128];
	size_t cnlen = sizeof cn, extralen = sizeof extra;
	int r = tls.gnutls_x509_crt_import(crt, &peers[0], GNUTLS_X509_FMT_DER);
	if (r >= 0)
		r = tls.gnutls_x509_crt_get_dn_by_oid(crt, GNUTLS_OID_X520_COMMON_NAME, 0, 0, cn, &cnlen);
	/* Two common names would leave the domain to whichever one reads first. */
	bool two =
	    r >= 0 && tls.gnutls_x509_crt_get_dn_by_oid(crt, GNUTLS_OID_X520_COMMON_NAME, 1, 0, extra,
							&extralen) != GNUTLS_E_REQUESTED_DATA_NOT_AVAILABLE;
	tls.gnutls_x509_crt_deinit(crt);
	if (r < 0 || two || cnlen == 0 || strlen(cn) != cnlen) {
		snprintf(err, errlen,
			 "the client's certificate names no single common name (CN), its identity");
		return -1;
	}
	xgpu_strlcpy(c->identity, cn, sizeof c->identity);
	return 0;
}

/* Why a handshake failed, in words an operator can act on. */
static void handshake_error(struct xgpu_rconn *c, bool server, int r, char *err, size_t errlen)
{
	if (r == GNUTLS_E_AGAIN) {
		snprintf(err, errlen, "TLS: timed out");
	} else if (r == GNUTLS_E_CERTIFICATE_VERIFICATION_ERROR) {
		gnutls_datum_t out = {0};
		unsigned st = tls.gnutls_session_get_verify_cert_status(c->s);
		if (tls.gnutls_certificate_verification_status_print(st, GNUTLS_CRT_X509, &out, 0) < 0)
			out.data = NULL;
		size_t n = out.data ? strlen((char *)out.data) : 0;
		while (n && out.data[n - 1] == ' ')
			out.data[--n] = '\0';
		snprintf(err, errlen, "TLS: the %s's certificate was refused: %s",
			 server ? "client" : "GPU host", out.data ? (char *)out.data : "it does not verify");
		if (out.data)
			(*tls.free_fn)(out.data);
	} else if ((r == GNUTLS_E_NO_CERTIFICATE_FOUND || r == GNUTLS_E_CERTIFICATE_REQUIRED) && server) {
		/* A GnuTLS client keeps back a certificate that none of the
		 * CAs this end named signed. */
		snprintf(err, errlen,
			 "TLS: the client presented no certificate (none, or none signed by the "
			 "CA of --remote-ca)");
	} else if (r == GNUTLS_E_SRP_PWD_ERROR && server) {
		/* What GnuTLS makes of server_key's refusal. */
		snprintf(err, errlen, "TLS: the client's pre-shared key identity is not one of --remote-psk");
	} else if (r == GNUTLS_E_FATAL_ALERT_RECEIVED) {
		const char *a = tls.gnutls_alert_get_name(tls.gnutls_alert_get(c->s));
		snprintf(err, errlen, "TLS: the %s refused the handshake: %s", server ? "client" : "GPU host",
			 a ? a : "fatal alert");
	} else {
		snprintf(err, errlen, "TLS: %s", tls.gnutls_strerror(r));
	}
}

/* After the handshake GnuTLS reads through these: a record's 5-byte header
 * and a short record's body (and the records after it) come in one receive
 * into the read-ahead buffer, as plain TCP's frames do (xgpu_rconn_recv). */
static ssize_t tls_pull(gnutls_transport_ptr_t p, void *buf, size_t len)
{
	struct xgpu_rconn *c = p;
	if (!c->ahead_len) {
		if (len >= sizeof c->ahead)
			return recv(c->fd, buf, len, 0);
		ssize_t n = recv(c->fd, c->ahead, sizeof c->ahead, 0);
		if (n <= 0)
			return n;
		c->ahead_off = 0;
		c->ahead_len = (size_t)n;
	}
	size_t n = len < c->ahead_len ? len : c->ahead_len;
	memcpy(buf, c->ahead + c->ahead_off, n);
	c->ahead_off += n;
	c->ahead_len -= n;
	return (ssize_t)n;
}

static int tls_pull_timeout(gnutls_transport_ptr_t p, unsigned ms)
{
	struct xgpu_rconn *c = p;
	if (c->ahead_len)
		return 1;
	struct pollfd pfd = {c->fd, POLLIN, 0};
	return poll(&pfd, 1, ms == GNUTLS_INDEFINITE_TIMEOUT ? -1 : (int)ms);
}

struct rauth {
	const char *identity; /* PSK client */
	const uint8_t *key;
	size_t keylen;
	const struct xgpu_psk_table *keys; /* PSK server */
	struct xgpu_rcert *cert;           /* certificates, either end */
	const char *host;                  /* client: the name or address dialled */
};

static struct xgpu_rconn *rconn_new(bool server, int fd, const struct rauth *a, int timeout_ms, char *err,
				    size_t errlen)
{
	struct xgpu_rconn *c = calloc(1, sizeof *c);
	if (!c) {
		snprintf(err, errlen, "out of memory");
		close(fd);
		return NULL;
	}
	c->fd = fd;
	bool psk = server ? a->keys != NULL : a->key != NULL;
	if (!psk && !a->cert)
		return c;
	pthread_once(&tls_once, tls_load);
	if (!tls.ok) {
		snprintf(err, errlen, "%s", tls.why);
		goto fail;
	}
	if (server && psk) {
		if (!(c->keys = malloc(sizeof *c->keys))) {
			snprintf(err, errlen, "out of memory");
			goto fail;
		}
		memcpy(c->keys, a->keys, sizeof *a->keys);
	} else if (psk) {
		if (a->keylen > sizeof c->key || strlen(a->identity) >= sizeof c->identity) {
			snprintf(err, errlen, "key or identity too long");
			goto fail;
		}
		memcpy(c->key, a->key, a->keylen);
		c->keylen = a->keylen;
		xgpu_strlcpy(c->identity, a->identity, sizeof c->identity);
	}
	int r = tls.gnutls_init(&c->s, (server ? GNUTLS_SERVER : GNUTLS_CLIENT) | GNUTLS_NO_SIGNAL);
	if (r < 0) {
		c->s = NULL;
		goto tls_fail;
	}
	const char *prio = !a->cert ? tls_priority_psk : psk ? tls_priority_both : tls_priority_x509;
	if ((r = tls.gnutls_priority_set_direct(c->s, prio, NULL)) < 0)
		goto tls_fail;
	if (server && psk) {
		if ((r = tls.gnutls_psk_allocate_server_credentials(&c->sc)) < 0)
			goto tls_fail;
		tls.gnutls_psk_set_server_credentials_function(c->sc, server_key);
		tls.gnutls_session_set_ptr(c->s, c);
		r = tls.gnutls_credentials_set(c->s, GNUTLS_CRD_PSK, c->sc);
	} else if (psk) {
		gnutls_datum_t k = {c->key, (unsigned)c->keylen};
		if ((r = tls.gnutls_psk_allocate_client_credentials(&c->cc)) < 0 ||
		    (r = tls.gnutls_psk_set_client_credentials(c->cc, c->identity, &k, GNUTLS_PSK_KEY_RAW)) <
			0)
			goto tls_fail;
		r = tls.gnutls_credentials_set(c->s, GNUTLS_CRD_PSK, c->cc);
	}
	if (r < 0)
		goto tls_fail;
	if (a->cert) {
		/* Each end checks the other's chain against its CA during the
		 * handshake, for the other's role (key purpose), and the client
		 * the name or address it dialled, so a failure is the
		 * handshake's, with an alert the other end can name. */
		static char client_kp[] = GNUTLS_KP_TLS_WWW_CLIENT, server_kp[] = GNUTLS_KP_TLS_WWW_SERVER;
		gnutls_typed_vdata_st v[2] = {
		    {GNUTLS_DT_KEY_PURPOSE_OID, (unsigned char *)(server ? client_kp : server_kp), 0},
		    {GNUTLS_DT_DNS_HOSTNAME, (unsigned char *)a->host, 0},
		};
		c->cert = xgpu_rcert_ref(a->cert);
		if ((r = tls.gnutls_credentials_set(c->s, GNUTLS_CRD_CERTIFICATE, a->cert->cred)) < 0)
			goto tls_fail;
		if (server) {
			/* A PSK client is not asked (TLS 1.3 PSK handshakes carry no certificates). */
			tls.gnutls_certificate_server_set_request(c->s, GNUTLS_CERT_REQUIRE);
		} else if (a->host) {
			/* A name (not an address) goes in SNI too. */
			struct in6_addr ip6;
			struct in_addr ip4;
			if (inet_pton(AF_INET, a->host, &ip4) != 1 && inet_pton(AF_INET6, a->host, &ip6) != 1)
				tls.gnutls_server_name_set(c->s, GNUTLS_NAME_DNS, a->host, strlen(a->host));
		}
		tls.gnutls_session_set_verify_cert2(c->s, v, !server && a->host ? 2 : 1, 0);
	}
	tls.gnutls_transport_set_int2(c->s, fd, fd);
	tls.gnutls_handshake_set_timeout(c->s, (unsigned)timeout_ms);
	set_timeouts(fd, timeout_ms);
	do
		r = tls.gnutls_handshake(c->s);
	while (r < 0 && !tls.gnutls_error_is_fatal(r) && r != GNUTLS_E_AGAIN);
	if (r < 0) {
		handshake_error(c, server, r, err, errlen);
		/* In TLS 1.3 a client's handshake is over before the server has
		 * checked its certificate: the alert is how it learns why. */
		if (r != GNUTLS_E_FATAL_ALERT_RECEIVED && r != GNUTLS_E_AGAIN) {
			tls.gnutls_alert_send_appropriate(c->s, r);
			/* Closing with the client's first frame unread would
			 * reset the connection, and a reset can overtake the
			 * alert: let the client close first (briefly). */
			if (server) {
				shutdown(fd, SHUT_WR);
				set_timeouts(fd, 200);
				char sink[4096];
				for (int i = 0; i < 16 && recv(fd, sink, sizeof sink, 0) > 0; i++)
					;
			}
		}
		goto fail;
	}
	if (tls.gnutls_protocol_get_version(c->s) != GNUTLS_TLS1_3) {
		snprintf(err, errlen, "the TLS handshake did not settle on TLS 1.3");
		goto fail;
	}
	c->x509 = tls.gnutls_auth_get_type(c->s) == GNUTLS_CRD_CERTIFICATE;
	if (server && c->x509 && peer_common_name(c, err, errlen) < 0)
		goto fail;
	set_timeouts(fd, 0);
	tls.gnutls_transport_set_ptr2(c->s, c, (gnutls_transport_ptr_t)(intptr_t)fd);
	tls.gnutls_transport_set_pull_function(c->s, tls_pull);
	tls.gnutls_transport_set_pull_timeout_function(c->s, tls_pull_timeout);
	if (c->keys) {
		/* The handshake is over: no key stays in this connection. */
		explicit_bzero(c->keys, sizeof *c->keys);
		free(c->keys);
		c->keys = NULL;
	}
	return c;
tls_fail:
	snprintf(err, errlen, "TLS: %s", tls.gnutls_strerror(r));
fail:
	xgpu_rconn_free(c);
	return NULL;
}

struct xgpu_rconn *xgpu_rconn_client(int fd, const char *identity, const uint8_t *key, size_t keylen,
				     int timeout_ms, char *err, size_t errlen)
{
	struct rauth a = {.identity = identity, .key = key, .keylen = keylen};
	return rconn_new(false, fd, &a, timeout_ms, err, errlen);
}

struct xgpu_rconn *xgpu_rconn_client_cert(int fd, struct xgpu_rcert *cert, const char *host, int timeout_ms,
					  char *err, size_t errlen)
{
	struct rauth a = {.cert = cert, .host = host};
	return rconn_new(false, fd, &a, timeout_ms, err, errlen);
}

struct xgpu_rconn *xgpu_rconn_server(int fd, const struct xgpu_psk_table *keys, struct xgpu_rcert *cert,
				     int timeout_ms, char *err, size_t errlen)
{
	struct rauth a = {.keys = keys, .cert = cert};
	return rconn_new(true, fd, &a, timeout_ms, err, errlen);
}

const char *xgpu_rconn_identity(const struct xgpu_rconn *c)
{
	return c->s ? c->identity : "";
}

/* GnuTLS says "Error in the pull function" where the socket said why. */
static void tls_error(const struct xgpu_rconn *c, char *err, size_t errlen, int r)
{
	int e = errno;
	const char *alert;
	if (r == GNUTLS_E_FATAL_ALERT_RECEIVED &&
	    (alert = tls.gnutls_alert_get_name(tls.gnutls_alert_get(c->s))))
		snprintf(err, errlen, "the other end sent TLS alert \"%s\"", alert);
	else if (r == GNUTLS_E_AGAIN)
		snprintf(err, errlen, "timed out");
	else if ((r == GNUTLS_E_PULL_ERROR || r == GNUTLS_E_PUSH_ERROR) && e)
		snprintf(err, errlen, "%s", strerror(e));
	else
		snprintf(err, errlen, "TLS: %s", tls.gnutls_strerror(r));
}

int xgpu_rconn_send(struct xgpu_rconn *c, const void *buf, size_t len, char *err, size_t errlen)
{
	const uint8_t *p = buf;
	while (len) {
		ssize_t n;
		if (c->s) {
			n = tls.gnutls_record_send(c->s, p, len);
			if (n == GNUTLS_E_INTERRUPTED)
				continue;
			if (n < 0) {
				tls_error(c, err, errlen, (int)n);
				return -1;
			}
		} else {
			n = send(c->fd, p, len, MSG_NOSIGNAL);
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0) {
				snprintf(err, errlen, "send: %s", strerror(errno));
				return -1;
			}
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int xgpu_rconn_sendv(struct xgpu_rconn *c, struct iovec *iov, int n, char *err, size_t errlen)
{
	if (c->s) {
		/* TLS: short pieces (headers, slots) are gathered into records of
		 * their own; bulk bytes are encrypted from where they lie. */
		uint8_t gather[4096];
		size_t g = 0;
		for (int i = 0; i < n; i++) {
			if (iov[i].iov_len <= sizeof gather - g) {
				memcpy(gather + g, iov[i].iov_base, iov[i].iov_len);
				g += iov[i].iov_len;
				continue;
			}
			if (g && xgpu_rconn_send(c, gather, g, err, errlen) < 0)
				return -1;
			g = 0;
			if (iov[i].iov_len <= sizeof gather) {
				memcpy(gather, iov[i].iov_base, iov[i].iov_len);
				g = iov[i].iov_len;
			} else if (xgpu_rconn_send(c, iov[i].iov_base, iov[i].iov_len, err, errlen) < 0) {
				return -1;
			}
		}
		return g ? xgpu_rconn_send(c, gather, g, err, errlen) : 0;
	}
	while (n > 0) {
		struct msghdr m = {.msg_iov = iov, .msg_iovlen = (size_t)n};
		ssize_t k = sendmsg(c->fd, &m, MSG_NOSIGNAL);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0) {
			snprintf(err, errlen, "send: %s", strerror(errno));
			return -1;
		}
		while (n > 0 && (size_t)k >= iov->iov_len) {
			k -= (ssize_t)iov->iov_len;
			iov++;
			n--;
		}
		if (n > 0) {
			iov->iov_base = (uint8_t *)iov->iov_base + k;
			iov->iov_len -= (size_t)k;
		}
	}
	return 0;
}

/* ---- MSG_ZEROCOPY ----------------------------------------------------------------- */

/* Below this a copy costs less than pinning pages and a completion (the
 * kernel's msg_zerocopy notes put the break-even near 10 KB). */
#define ZC_MIN (16u << 10)

int xgpu_rconn_set_zerocopy(struct xgpu_rconn *c, char *err, size_t errlen)
{
	if (c->s) {
		snprintf(err, errlen, "TLS encrypts into buffers of its own: no zero-copy send");
		return -1;
	}
	int one = 1;
	if (setsockopt(c->fd, SOL_SOCKET, SO_ZEROCOPY, &one, sizeof one) < 0) {
		snprintf(err, errlen, "SO_ZEROCOPY: %s", strerror(errno));
		return -1;
	}
	c->zc = true;
	return 0;
}

/* The same over every connection of this process. */
static _Atomic uint64_t zc_total_sends, zc_total_done, zc_total_copied;

void xgpu_rconn_zerocopy_totals(uint64_t *sends, uint64_t *done, uint64_t *copied)
{
	*sends = atomic_load(&zc_total_sends);
	*done = atomic_load(&zc_total_done);
	*copied = atomic_load(&zc_total_copied);
}

void xgpu_rconn_zerocopy_stats(const struct xgpu_rconn *c, uint64_t *sends, uint64_t *done, uint64_t *copied)
{
	*sends = c->zc_sends;
	*done = c->zc_done;
	*copied = c->zc_copied;
}

/* Takes the completions the kernel queued on the socket's error queue.
 * Nothing waits on them: a bulk unit's ring space is released to its
 * producer only when the far consumer reports reading it (CONS), by which
 * time TCP has delivered those bytes, and a page the kernel still holds can
 * then only go out again as a retransmission of sequence numbers the far
 * end already has, which it discards. They are reaped so that the queue
 * (charged to the socket's option memory) never fills, which would make
 * further zerocopy sends fail with ENOBUFS. */
static void zc_reap(struct xgpu_rconn *c)
{
	for (;;) {
		char control[128];
		struct msghdr m = {.msg_control = control, .msg_controllen = sizeof control};
		if (recvmsg(c->fd, &m, MSG_ERRQUEUE | MSG_DONTWAIT) < 0)
			return;
		for (struct cmsghdr *cm = CMSG_FIRSTHDR(&m); cm; cm = CMSG_NXTHDR(&m, cm)) {
			if (!((cm->cmsg_level == SOL_IP && cm->cmsg_type == IP_RECVERR) ||
			      (cm->cmsg_level == SOL_IPV6 && cm->cmsg_type == IPV6_RECVERR)))
				continue;
			struct sock_extended_err e;
			memcpy(&e, CMSG_DATA(cm), sizeof e);
			if (e.ee_origin != SO_EE_ORIGIN_ZEROCOPY || e.ee_errno != 0)
				continue;
			uint64_t n = (uint32_t)(e.ee_data - e.ee_info) + 1ull;
			c->zc_done += n;
			atomic_fetch_add(&zc_total_done, n);
			if (e.ee_code & SO_EE_CODE_ZEROCOPY_COPIED) {
				c->zc_copied += n;
				atomic_fetch_add(&zc_total_copied, n);
			}
		}
	}
}

/* sendmsg of the n iovecs, all of one kind; 0 or -1 (err). */
static int send_run(struct xgpu_rconn *c, struct iovec *iov, int n, int flags, char *err, size_t errlen)
{
	while (n > 0) {
		struct msghdr m = {.msg_iov = iov, .msg_iovlen = (size_t)n};
		ssize_t k = sendmsg(c->fd, &m, MSG_NOSIGNAL | flags);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0 && errno == ENOBUFS && (flags & MSG_ZEROCOPY)) {
			/* Out of option memory for completions: this time, copy. */
			zc_reap(c);
			flags &= ~MSG_ZEROCOPY;
			continue;
		}
		if (k < 0) {
			snprintf(err, errlen, "send: %s", strerror(errno));
			return -1;
		}
		if (flags & MSG_ZEROCOPY) {
			c->zc_sends++;
			atomic_fetch_add(&zc_total_sends, 1);
		}
		while (n > 0 && (size_t)k >= iov->iov_len) {
			k -= (ssize_t)iov->iov_len;
			iov++;
			n--;
		}
		if (n > 0) {
			iov->iov_base = (uint8_t *)iov->iov_base + k;
			iov->iov_len -= (size_t)k;
		}
	}
	return 0;
}

/* The iovecs in order: those in buf (headers and slots, rewritten next
 * turn) copied, the large ones outside it (bulk bytes in the ring, which
 * stay put until the far side has read them) with MSG_ZEROCOPY. */
static int sendv_zerocopy(struct xgpu_rconn *c, struct iovec *iov, int n, const uint8_t *buf, size_t cap,
			  char *err, size_t errlen)
{
	int i = 0;
	while (i < n) {
		bool zc = false;
		int j = i;
		for (; j < n; j++) {
			const uint8_t *b = iov[j].iov_base;
			bool ring = (b < buf || b >= buf + cap) && iov[j].iov_len >= ZC_MIN;
			if (j == i)
				zc = ring;
			else if (ring != zc)
				break;
		}
		if (send_run(c, iov + i, j - i, (zc ? MSG_ZEROCOPY : 0) | (j < n ? MSG_MORE : 0), err,
			     errlen) < 0)
			return -1;
		i = j;
	}
	zc_reap(c);
	return 0;
}

int xgpu_rconn_recv(struct xgpu_rconn *c, void *buf, size_t len, char *err, size_t errlen)
{
	uint8_t *p = buf;
	while (len) {
		ssize_t n;
		if (c->s) {
			n = tls.gnutls_record_recv(c->s, p, len);
			if (n == GNUTLS_E_INTERRUPTED)
				continue;
			if (n == GNUTLS_E_PREMATURE_TERMINATION)
				n = 0; /* the peer closed without close_notify: framing is ours */
			if (n < 0) {
				tls_error(c, err, errlen, (int)n);
				return -1;
			}
		} else if (c->ahead_len) {
			n = (ssize_t)(len < c->ahead_len ? len : c->ahead_len);
			memcpy(p, c->ahead + c->ahead_off, (size_t)n);
			c->ahead_off += (size_t)n;
			c->ahead_len -= (size_t)n;
		} else {
			/* A short read goes through the read-ahead buffer. */
			bool ahead = len < sizeof c->ahead;
			n = recv(c->fd, ahead ? c->ahead : p, ahead ? sizeof c->ahead : len, 0);
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0) {
				snprintf(err, errlen, "%s",
					 errno == EAGAIN || errno == EWOULDBLOCK ? "timed out"
										 : strerror(errno));
				return -1;
			}
			if (n > 0 && ahead) {
				c->ahead_off = 0;
				c->ahead_len = (size_t)n;
				continue;
			}
		}
		if (n == 0) {
			snprintf(err, errlen, "the connection was closed");
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int xgpu_rconn_read(void *conn, void *buf, size_t len, char *err, size_t errlen)
{
	return xgpu_rconn_recv(conn, buf, len, err, errlen);
}

int xgpu_rconn_recv_frame(struct xgpu_rconn *c, bool guest, struct xgpu_rframe *h, uint8_t *buf, char *err,
			  size_t errlen)
{
	if (xgpu_rconn_recv(c, h, sizeof *h, err, errlen) < 0 || xgpu_rframe_check(h, guest, err, errlen) < 0)
		return -1;
	return h->len ? xgpu_rconn_recv(c, buf, h->len, err, errlen) : 0;
}

bool xgpu_rconn_pending(struct xgpu_rconn *c)
{
	return c->ahead_len > 0 || (c->s && tls.gnutls_record_check_pending(c->s) > 0);
}

int xgpu_rconn_fd(const struct xgpu_rconn *c)
{
	return c->fd;
}

void xgpu_rconn_shutdown(struct xgpu_rconn *c)
{
	shutdown(c->fd, SHUT_RDWR);
}

void xgpu_rconn_free(struct xgpu_rconn *c)
{
	if (!c)
		return;
	if (c->s)
		tls.gnutls_deinit(c->s);
	if (c->cc)
		tls.gnutls_psk_free_client_credentials(c->cc);
	if (c->sc)
		tls.gnutls_psk_free_server_credentials(c->sc);
	close(c->fd);
	explicit_bzero(c->key, sizeof c->key);
	if (c->keys) {
		explicit_bzero(c->keys, sizeof *c->keys);
		free(c->keys);
	}
	/* After the session that used its credentials. */
	xgpu_rcert_free(c->cert);
	free(c);
}

const char *xgpu_rconn_protocol(const struct xgpu_rconn *c)
{
	return !c->s ? "plain TCP" : c->x509 ? "TLS1.3-X509" : "TLS1.3-PSK";
}

int64_t xgpu_remote_send_direct(struct xgpu_relay *r, struct xgpu_rconn *c, unsigned queue,
				struct xgpu_qend *p, const void *src, size_t len, char *err, size_t errlen)
{
	struct xgpu_rqueue *q = queue < XGPU_RQ_COUNT ? &r->qs[queue] : NULL;
	if (!q || !q->outbound || q->unit != 1 || p->q != q->q) {
		snprintf(err, errlen, "queue %u is not an outbound byte queue of this relay", queue);
		return -1;
	}
	uint32_t sent = atomic_load_explicit(&q->sent, memory_order_relaxed);
	if (sent != p->idx)
		return 0;
	if (len > XGPU_REMOTE_TURN_BULK)
		len = XGPU_REMOTE_TURN_BULK;
	int64_t space = xgpu_q_space_for(p, (uint32_t)len);
	if (space < 0) {
		snprintf(err, errlen, "the far consumer of queue %u moved its index out of range", queue);
		return -1;
	}
	size_t n = len < (size_t)space ? len : (size_t)space;
	if (n == 0)
		return 0;
	/* One frame per payload's worth, each header in hdrs. */
	struct xgpu_rframe hdrs[XGPU_REMOTE_TURN_BULK / XGPU_REMOTE_MAX_PAYLOAD + 1];
	struct iovec iov[2 * (sizeof hdrs / sizeof hdrs[0])];
	int niov = 0;
	for (size_t done = 0, k = 0; done < n; k++) {
		uint32_t run =
		    n - done < XGPU_REMOTE_MAX_PAYLOAD ? (uint32_t)(n - done) : XGPU_REMOTE_MAX_PAYLOAD;
		hdrs[k] = (struct xgpu_rframe){
		    .type = XGPU_RF_DATA, .queue = (uint8_t)queue, .len = run, .idx = sent + (uint32_t)done};
		iov[niov++] = (struct iovec){&hdrs[k], sizeof hdrs[k]};
		iov[niov++] = (struct iovec){(uint8_t *)src + done, run};
		done += run;
	}
	/* Published and sent before the bytes leave: a CONS report for them may
	 * arrive as soon as they have, and is checked against q->sent. The
	 * producer's index moves as a publish would move it, without a kick:
	 * the only local consumer is this relay, which has nothing to send. */
	xgpu_q_publish_deferred(p, (uint32_t)n);
	atomic_store_explicit(&q->sent, p->idx, memory_order_release);
	if (xgpu_rconn_sendv(c, iov, niov, err, errlen) < 0)
		return -1;
	return (int64_t)n;
}

int xgpu_remote_send_turn(struct xgpu_relay *r, struct xgpu_rconn *c, uint8_t *buf, size_t cap,
			  uint64_t *last_sent, bool *armed, char *err, size_t errlen)
{
	bool more;
	struct iovec iov[XGPU_REMOTE_TURN_IOV];
	size_t total;
	int n = xgpu_remote_collect(r, buf, cap, XGPU_REMOTE_TURN_BULK, iov, XGPU_REMOTE_TURN_IOV, &total,
				    &more, err, errlen);
	if (n < 0)
		return -1;
	if (n == 0 && xgpu_now_ns() - *last_sent >= XGPU_REMOTE_PING_MS * 1000000ull) {
		struct xgpu_rframe ping = {.type = XGPU_RF_PING};
		memcpy(buf, &ping, sizeof ping);
		iov[0] = (struct iovec){buf, sizeof ping};
		n = 1;
	}
	if (n > 0 && (c->zc ? sendv_zerocopy(c, iov, n, buf, cap, err, errlen)
			    : xgpu_rconn_sendv(c, iov, n, err, errlen)) < 0)
		return -1;
	if (n > 0)
		*last_sent = xgpu_now_ns();
	if (n > 0 || more) {
		*armed = false;
		return 1;
	}
	if (!*armed) {
		/* Ask for a kick, then look once more before sleeping. */
		xgpu_remote_arm(r);
		*armed = true;
		return 1;
	}
	return 0;
}
