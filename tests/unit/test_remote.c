/* SPDX-License-Identifier: Apache-2.0 */
/* test_remote.c - remote channels' plain connections (common/remote.c): the
 * read-ahead that lets a frame's header, a short payload and the frames
 * after them come in one receive, checked over a real socket pair against a
 * writer whose chunks fall anywhere across the reads: every byte in order,
 * short reads served from what was read ahead, long ones past it, and
 * xgpu_rconn_pending true exactly while read-ahead bytes wait (where polling
 * the socket would not see them); and the same over TLS 1.3 with a
 * pre-shared key, where records are read ahead under GnuTLS. */
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

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(reads_in_order_across_the_read_ahead),
	    cmocka_unit_test(pending_covers_what_poll_cannot_see),
	    cmocka_unit_test(tls_reads_ahead_across_records),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
