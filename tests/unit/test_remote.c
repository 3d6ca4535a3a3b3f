/* SPDX-License-Identifier: Apache-2.0 */
/* test_remote.c - remote channels' plain connections (common/remote.c): the
 * read-ahead that lets a frame's header, a short payload and the frames
 * after them come in one receive, checked over a real socket pair against a
 * writer whose chunks fall anywhere across the reads: every byte in order,
 * short reads served from what was read ahead, long ones past it, and
 * xgpu_rconn_pending true exactly while read-ahead bytes wait (where polling
 * the socket would not see them); and the same over TLS 1.3 with a
 * pre-shared key, where records are read ahead under GnuTLS. And bulk bytes
 * that skip the ring each way (xgpu_remote_send_direct, struct
 * xgpu_rdirect), between two relays over a socket pair, across sizes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "remote.h"

#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define TOTAL (3u << 20)

static uint8_t byte_at(size_t i)
{
	return (uint8_t)(i * 2654435761u >> 13);
}

struct writer {
	int fd;
	unsigned seed;
};

/* Writes TOTAL pattern bytes in chunks of 1 byte to 20 KiB, then closes. */
static void *writer_main(void *arg)
{
	struct writer *w = arg;
	static uint8_t buf[20 << 10];
	size_t at = 0;
	while (at < TOTAL) {
		w->seed = w->seed * 1103515245u + 12345u;
		size_t n = 1 + (w->seed >> 8) % sizeof buf;
		if (n > TOTAL - at)
			n = TOTAL - at;
		for (size_t i = 0; i < n; i++)
			buf[i] = byte_at(at + i);
		for (size_t done = 0; done < n;) {
			ssize_t k = write(w->fd, buf + done, n - done);
			if (k <= 0)
				return NULL;
			done += (size_t)k;
		}
		at += n;
	}
	close(w->fd);
	return NULL;
}

/* Whether the socket itself has bytes to read now. */
static bool socket_readable(int fd)
{
	struct pollfd p = {fd, POLLIN, 0};
	return poll(&p, 1, 0) == 1;
}

/* A plain connection over a socket pair: the client's end, and the raw
 * other end in sv[1] (sv[0] is the connection's). */
static struct xgpu_rconn *plain_pair(int sv[2])
{
	char err[256];
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	struct xgpu_rconn *c = xgpu_rconn_client(sv[0], NULL, NULL, 0, 1000, err, sizeof err);
	if (!c)
		fail_msg("client: %s", err);
	return c;
}

static void reads_in_order_across_the_read_ahead(void **state)
{
	(void)state;
	int sv[2];
	char err[256];
	struct xgpu_rconn *c = plain_pair(sv);
	struct writer w = {sv[1], 7};
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, writer_main, &w), 0);
	/* Frame-like reads: headers, slots, short and long bulk runs. */
	static const size_t sizes[] = {16, 64, 16, 1, 4095, 16, 4096, 70000, 16, 300, 9000, 3};
	static uint8_t buf[70000];
	size_t at = 0, served_ahead = 0;
	for (unsigned k = 0; at < TOTAL; k++) {
		size_t n = sizes[k % (sizeof sizes / sizeof sizes[0])];
		if (n > TOTAL - at)
			n = TOTAL - at;
		bool pending = xgpu_rconn_pending(c);
		assert_int_equal(xgpu_rconn_recv(c, buf, n, err, sizeof err), 0);
		for (size_t i = 0; i < n; i++)
			if (buf[i] != byte_at(at + i))
				fail_msg("byte %zu: %u, expected %u", at + i, buf[i], byte_at(at + i));
		at += n;
		served_ahead += pending;
	}
	/* Short reads did come from bytes read ahead. */
	assert_true(served_ahead > 0);
	assert_false(xgpu_rconn_pending(c));
	assert_int_equal(xgpu_rconn_recv(c, buf, 16, err, sizeof err), -1);
	assert_string_equal(err, "the connection was closed");
	pthread_join(t, NULL);
	xgpu_rconn_free(c);
}

/* Frames that arrived together: after the first is read, the rest wait
 * read ahead, where the socket shows nothing. */
static void pending_covers_what_poll_cannot_see(void **state)
{
	(void)state;
	int sv[2];
	char err[256];
	struct xgpu_rconn *c = plain_pair(sv);
	struct xgpu_rframe f[3] = {
	    {.type = XGPU_RF_PING},
	    {.type = XGPU_RF_CONS, .queue = XGPU_RQ_REQ, .idx = 5},
	    {.type = XGPU_RF_END, .idx = 2},
	};
	assert_int_equal(write(sv[1], f, sizeof f), (ssize_t)sizeof f);
	struct xgpu_rframe h;
	uint8_t payload[64];
	assert_false(xgpu_rconn_pending(c));
	assert_int_equal(xgpu_rconn_recv_frame(c, true, &h, payload, err, sizeof err), 0);
	assert_int_equal(h.type, XGPU_RF_PING);
	assert_false(socket_readable(sv[0]));
	assert_true(xgpu_rconn_pending(c));
	assert_int_equal(xgpu_rconn_recv_frame(c, true, &h, payload, err, sizeof err), 0);
	assert_int_equal(h.type, XGPU_RF_CONS);
	assert_int_equal(h.idx, 5);
	assert_true(xgpu_rconn_pending(c));
	assert_int_equal(xgpu_rconn_recv_frame(c, true, &h, payload, err, sizeof err), 0);
	assert_int_equal(h.type, XGPU_RF_END);
	assert_false(xgpu_rconn_pending(c));
	close(sv[1]);
	xgpu_rconn_free(c);
}

struct tls_server {
	int fd;
	struct xgpu_psk_table keys;
	struct xgpu_rconn *c;
	char err[256];
};

static void *tls_server_main(void *arg)
{
	struct tls_server *t = arg;
	t->c = xgpu_rconn_server(t->fd, &t->keys, NULL, 5000, t->err, sizeof t->err);
	return NULL;
}

/* A TLS pair over a socket pair: *client, and the server's end. */
static struct xgpu_rconn *tls_pair(struct xgpu_rconn **client)
{
	int sv[2];
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	static struct tls_server t;
	memset(&t, 0, sizeof t);
	t.fd = sv[1];
	t.keys.n = 1;
	strcpy(t.keys.e[0].identity, "unit");
	for (unsigned i = 0; i < 32; i++)
		t.keys.e[0].key[i] = (uint8_t)(i * 7 + 1);
	t.keys.e[0].keylen = 32;
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, tls_server_main, &t), 0);
	char err[256];
	*client = xgpu_rconn_client(sv[0], "unit", t.keys.e[0].key, 32, 5000, err, sizeof err);
	pthread_join(th, NULL);
	if (!*client)
		fail_msg("client: %s", err);
	if (!t.c)
		fail_msg("server: %s", t.err);
	return t.c;
}

/* Records sent one by one arrive together: the first read takes the first
 * record and reads the next ones ahead; pending covers them, the socket shows
 * nothing, and every frame comes out whole and in order, then a bulk run
 * larger than a record. */
static void tls_reads_ahead_across_records(void **state)
{
	(void)state;
	struct xgpu_rconn *cl, *sv = tls_pair(&cl);
	char err[256];
	struct xgpu_rframe f[3] = {
	    {.type = XGPU_RF_PING},
	    {.type = XGPU_RF_CONS, .queue = XGPU_RQ_REQ, .idx = 9},
	    {.type = XGPU_RF_END, .idx = 4},
	};
	for (int i = 0; i < 3; i++)
		assert_int_equal(xgpu_rconn_send(sv, &f[i], sizeof f[i], err, sizeof err), 0);
	static uint8_t big[100000], got[100000];
	for (size_t i = 0; i < sizeof big; i++)
		big[i] = byte_at(i);
	assert_int_equal(xgpu_rconn_send(sv, big, sizeof big, err, sizeof err), 0);
	struct xgpu_rframe h;
	uint8_t payload[64];
	assert_int_equal(xgpu_rconn_recv_frame(cl, true, &h, payload, err, sizeof err), 0);
	assert_int_equal(h.type, XGPU_RF_PING);
	assert_true(xgpu_rconn_pending(cl));
	assert_int_equal(xgpu_rconn_recv_frame(cl, true, &h, payload, err, sizeof err), 0);
	assert_int_equal(h.type, XGPU_RF_CONS);
	assert_int_equal(h.idx, 9);
	assert_true(xgpu_rconn_pending(cl));
	assert_int_equal(xgpu_rconn_recv_frame(cl, true, &h, payload, err, sizeof err), 0);
	assert_int_equal(h.type, XGPU_RF_END);
	assert_int_equal(xgpu_rconn_recv(cl, got, sizeof got, err, sizeof err), 0);
	assert_memory_equal(got, big, sizeof big);
	assert_false(xgpu_rconn_pending(cl));
	assert_false(socket_readable(xgpu_rconn_fd(cl)));
	xgpu_rconn_free(sv);
	assert_int_equal(xgpu_rconn_recv(cl, got, 16, err, sizeof err), -1);
	xgpu_rconn_free(cl);
}

/* ---- bulk bytes that skip the ring ------------------------------------------ */

/* One end of a remote channel: its region, its relay, the local peer's view
 * of the region (the guest's client, or the GPU host's executor) and the
 * connection. */
struct end {
	uint8_t *region;
	size_t size;
	struct xgpu_relay r;
	struct xgpu_shm_view v;
	struct xgpu_rconn *c;
	uint8_t *buf;
	bool armed;
	uint64_t last_sent;
};

#define END_BUF (XGPU_REMOTE_MAX_PAYLOAD + 4096)

static void no_kick(void *arg)
{
	(void)arg;
}

static void end_init(struct end *e, bool guest, struct xgpu_rconn *c)
{
	const struct xgpu_shm_params p = {.nr_slots = 8, .data_size = XGPU_SHM_MIN_DATA};
	char err[256];
	memset(e, 0, sizeof *e);
	e->size = xgpu_shm_region_size(&p);
	e->region = aligned_alloc(4096, e->size);
	e->buf = malloc(END_BUF);
	assert_non_null(e->region);
	assert_non_null(e->buf);
	memset(e->region, 0, e->size);
	assert_int_equal(xgpu_shm_init(e->region, e->size, &p), 0);
	if (xgpu_relay_init(&e->r, guest, e->region, e->size, err, sizeof err) < 0)
		fail_msg("relay: %s", err);
	e->r.kick = no_kick;
	if (guest)
		xgpu_shm_view_frontend(e->region, &e->v);
	else if (xgpu_shm_attach(e->region, e->size, &e->v, err, sizeof err) < 0)
		fail_msg("attach: %s", err);
	e->c = c;
}

static void end_free(struct end *e)
{
	xgpu_rconn_free(e->c);
	free(e->region);
	free(e->buf);
}

/* Everything the end's rings hold for the network, sent. */
static void send_all(struct end *e)
{
	char err[256];
	int turn;
	while ((turn = xgpu_remote_send_turn(&e->r, e->c, e->buf, END_BUF, &e->last_sent, &e->armed, err,
					     sizeof err)) > 0)
		;
	if (turn < 0)
		fail_msg("send: %s", err);
	e->armed = false;
}

/* Every frame that has arrived, applied (bulk bytes into d when given and
 * they are the ones it waits for). */
static void receive_all(struct end *e, struct xgpu_rdirect *d)
{
	char err[256];
	int32_t end;
	while (xgpu_rconn_pending(e->c) || socket_readable(xgpu_rconn_fd(e->c)))
		if (xgpu_remote_receive(&e->r, xgpu_rconn_read, e->c, e->buf, d, &end, err, sizeof err) != 0)
			fail_msg("receive: %s", err);
}

/* A guest's end and the GPU host's, joined by a plain connection. */
static void ends_over_a_socket_pair(struct end *g, struct end *h)
{
	int sv[2];
	char err[256];
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	struct xgpu_rconn *gc = xgpu_rconn_client(sv[0], NULL, NULL, 0, 1000, err, sizeof err);
	struct xgpu_rconn *hc = xgpu_rconn_server(sv[1], NULL, NULL, 1000, err, sizeof err);
	assert_non_null(gc);
	assert_non_null(hc);
	end_init(g, true, gc);
	end_init(h, false, hc);
}

static const size_t bulk_sizes[] = {
    1, 2, 63, 64, 65, 4095, 4096, 4097, 65535, 65536, 65537, 200003, (256u << 10) + 1, (1u << 20) + 7};

/* End e's local consumer reads what its ring q holds (want bytes at most)
 * into dst, and e reports it to the far end. Returns the bytes read. */
static size_t take_and_report(struct end *e, struct xgpu_qend *q, struct end *far, uint8_t *dst, size_t want)
{
	bool kick;
	int64_t k = xgpu_stream_read(q, dst, want, &kick);
	assert_true(k >= 0);
	send_all(e);
	receive_all(far, NULL);
	return (size_t)k;
}

static uint8_t bulk_src[(1u << 20) + 7], bulk_dst[sizeof bulk_src];

/* A copy of size bytes: the source's pattern (by seed) and a clean
 * destination. */
static void fresh_copy(size_t size, size_t seed)
{
	for (size_t i = 0; i < size; i++)
		bulk_src[i] = byte_at(i + seed);
	memset(bulk_dst, 0, size);
}

/* The guest sends a copy's bytes from the caller's buffer (as the remote
 * client does for host-to-device copies), never through its ring: the GPU
 * host's executor reads them from its ring in order, through every wrap of
 * a 64 KiB data area and every split into frames, and the guest's writer,
 * which runs between, never sends them again (the host would refuse bytes
 * at an index it has had). */
static void bulk_out_skips_the_ring(void **state)
{
	(void)state;
	char err[256];
	struct end g, h;
	ends_over_a_socket_pair(&g, &h);
	uint8_t *src = bulk_src, *dst = bulk_dst;
	for (size_t s = 0; s < sizeof bulk_sizes / sizeof bulk_sizes[0]; s++) {
		size_t size = bulk_sizes[s], sent = 0, got = 0;
		fresh_copy(size, s);
		for (int rounds = 0; got < size; rounds++) {
			assert_true(rounds < 100000);
			if (sent < size) {
				int64_t n = xgpu_remote_send_direct(&g.r, g.c, XGPU_RQ_TX, &g.v.tx,
								    src + sent, size - sent, err, sizeof err);
				if (n < 0)
					fail_msg("direct send: %s", err);
				sent += (size_t)n;
			}
			send_all(&g);
			receive_all(&h, NULL);
			got += take_and_report(&h, &h.v.tx, &g, dst + got, size - got);
		}
		assert_memory_equal(dst, src, size);
		assert_int_equal(atomic_load(&g.r.qs[XGPU_RQ_TX].sent), g.v.tx.idx);
	}
	/* The far consumer must have room: a full ring takes nothing. */
	uint8_t one = 1;
	size_t filled = 0;
	for (;;) {
		int64_t n = xgpu_remote_send_direct(&g.r, g.c, XGPU_RQ_TX, &g.v.tx, src, sizeof bulk_src, err,
						    sizeof err);
		assert_true(n >= 0);
		if (n == 0)
			break;
		filled += (size_t)n;
		receive_all(&h, NULL);
	}
	assert_int_equal(filled, g.v.data_size_tx);
	assert_int_equal(xgpu_remote_send_direct(&g.r, g.c, XGPU_RQ_TX, &g.v.tx, &one, 1, err, sizeof err),
			 0);
	end_free(&g);
	end_free(&h);
}

/* The GPU host's executor writes a copy's bytes into its ring; the guest
 * takes them from the connection straight into the caller's buffer (as the
 * remote client does for device-to-host copies) and releases them from its
 * ring unread. Offered the whole copy, every byte comes that way; offered
 * part of it, frames that do not fit go to the ring and are read from
 * there, in order. */
static void bulk_in_skips_the_ring(void **state)
{
	(void)state;
	struct end g, h;
	ends_over_a_socket_pair(&g, &h);
	uint8_t *src = bulk_src, *dst = bulk_dst;
	for (int partial = 0; partial < 2; partial++)
		for (size_t s = 0; s < sizeof bulk_sizes / sizeof bulk_sizes[0]; s++) {
			size_t size = bulk_sizes[s], put = 0, got = 0, direct = 0;
			size_t offer = partial ? size / 2 : size;
			fresh_copy(size, 3 * s + (size_t)partial);
			for (int rounds = 0; got < size; rounds++) {
				assert_true(rounds < 100000);
				bool kick;
				if (put < size) {
					int64_t k = xgpu_stream_write(&h.v.rx, src + put, size - put, &kick);
					assert_true(k >= 0);
					put += (size_t)k;
				}
				send_all(&h);
				if (got < offer && xgpu_q_avail(&g.v.rx) == 0) {
					struct xgpu_rdirect d = {.queue = XGPU_RQ_RX,
								 .at = g.v.rx.idx,
								 .dst = dst + got,
								 .len = offer - got};
					receive_all(&g, &d);
					assert_true(d.got <= d.len);
					assert_true(xgpu_q_avail(&g.v.rx) >= (int64_t)d.got);
					xgpu_q_release(&g.v.rx, (uint32_t)d.got);
					got += d.got;
					direct += d.got;
				} else {
					receive_all(&g, NULL);
				}
				got += take_and_report(&g, &g.v.rx, &h, dst + got, size - got);
			}
			assert_memory_equal(dst, src, size);
			if (partial)
				assert_true(direct <= offer);
			else
				assert_int_equal(direct, size);
		}
	end_free(&g);
	end_free(&h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(reads_in_order_across_the_read_ahead),
	    cmocka_unit_test(pending_covers_what_poll_cannot_see),
	    cmocka_unit_test(tls_reads_ahead_across_records),
	    cmocka_unit_test(bulk_out_skips_the_ring),
	    cmocka_unit_test(bulk_in_skips_the_ring),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
