/* SPDX-License-Identifier: Apache-2.0 */
/* tcprtt.c - the TCP round-trip floor that remote channels are measured
 * against (tests/e2e/remote.sh): one byte there and back over one TCP
 * connection with TCP_NODELAY, as a remote null call's request and answer
 * would go with nothing else in the way.
 *
 *   tcprtt serve ADDR PORT        echo every byte of one connection, then exit
 *   tcprtt ping ADDR PORT COUNT   print "tcp_rtt_p50_us=... mean_us=..."
 *   tcprtt sink ADDR PORT         read one connection to its end, answer one byte
 *   tcprtt stream ADDR PORT MIB   send MIB MiB to a sink: "tcp_stream_gbps=...
 *                                 cpu_s_per_gb=...", the second the whole
 *                                 machine's CPU time per GB moved (both ends
 *                                 run here: cpustat.h)
 * (the stream floor is plain TCP, without encryption). With TCPRTT_PSK_FILE
 * set (a "identity:hexkey" file) at both ends, the same over TLS 1.3 with
 * that key, through common/remote.c's connections (the GnuTLS settings and
 * ciphers of remote channels), printed as tls_rtt_p50_us and tls_stream_gbps:
 * the floor of an encrypted channel, where the crypto's own cost is paid. */
#include "remote.h"
#include "../../tools/bench/cpustat.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static double now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/* Plain (c NULL) or TLS. */
static struct xgpu_rconn *tls_wrap(int fd, bool server)
{
	const char *file = getenv("TCPRTT_PSK_FILE");
	char err[256], id[128];
	uint8_t key[64];
	size_t keylen = sizeof key;
	struct xgpu_rconn *c;
	if (!file || !*file)
		return NULL;
	if (server) {
		static struct xgpu_psk_table t;
		if (xgpu_remote_read_psk_table(file, &t, err, sizeof err) < 0)
			goto fail;
		c = xgpu_rconn_server(fd, &t, NULL, 5000, err, sizeof err);
	} else {
		if (xgpu_remote_read_psk(file, id, sizeof id, key, &keylen, err, sizeof err) < 0)
			goto fail;
		c = xgpu_rconn_client(fd, id, key, keylen, 5000, err, sizeof err);
	}
	if (c)
		return c;
fail:
	fprintf(stderr, "tcprtt: TLS: %s\n", err);
	exit(1);
}

static bool put(int fd, struct xgpu_rconn *c, const void *buf, size_t len)
{
	char err[128];
	if (c)
		return xgpu_rconn_send(c, buf, len, err, sizeof err) == 0;
	return write(fd, buf, len) == (ssize_t)len;
}

static bool get(int fd, struct xgpu_rconn *c, void *buf, size_t len)
{
	char err[128];
	if (c)
		return xgpu_rconn_recv(c, buf, len, err, sizeof err) == 0;
	return read(fd, buf, len) == (ssize_t)len;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static void report_stream(const char *kind, int mib, double t0_us, double busy0)
{
	double us = now_us() - t0_us, busy = machine_busy_s() - busy0, bytes = (double)((size_t)mib << 20);
	printf("%s_stream_gbps=%.3f cpu_s_per_gb=%.3f\n", kind, bytes / us / 1e3,
	       busy0 < 0 ? -1.0 : busy / (bytes / 1e9));
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: tcprtt serve|sink ADDR PORT | tcprtt ping ADDR PORT COUNT | tcprtt "
				"stream ADDR PORT MIB\n");
		return 2;
	}
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((unsigned short)atoi(argv[3]))};
	if (inet_pton(AF_INET, argv[2], &sa.sin_addr) != 1) {
		fprintf(stderr, "tcprtt: %s is not an IPv4 address\n", argv[2]);
		return 2;
	}
	int one = 1;
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	if (!strcmp(argv[1], "serve") || !strcmp(argv[1], "sink")) {
		bool sink = !strcmp(argv[1], "sink");
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
		if (bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(fd, 1) < 0) {
			perror("tcprtt: listen");
			return 1;
		}
		int c = accept(fd, NULL, NULL);
		setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
		struct xgpu_rconn *tls = tls_wrap(c, true);
		if (sink && tls) {
			/* TLS reads take exact lengths: the stream says how many. */
			static char buf[1 << 16];
			uint64_t left;
			if (!get(c, tls, &left, sizeof left))
				return 1;
			for (; left; left -= left < sizeof buf ? left : sizeof buf)
				if (!get(c, tls, buf, left < sizeof buf ? left : sizeof buf))
					return 1;
			return put(c, tls, "k", 1) ? 0 : 1;
		}
		if (sink) {
			static char buf[1 << 16];
			while (read(c, buf, sizeof buf) > 0)
				;
			return write(c, "k", 1) == 1 ? 0 : 1;
		}
		char b;
		while (get(c, tls, &b, 1))
			if (!put(c, tls, &b, 1))
				break;
		return 0;
	}
	bool stream = !strcmp(argv[1], "stream");
	if (argc < 5 || (strcmp(argv[1], "ping") && !stream)) {
		fprintf(stderr, "usage: tcprtt serve|sink ADDR PORT | tcprtt ping ADDR PORT COUNT | tcprtt "
				"stream ADDR PORT MIB\n");
		return 2;
	}
	int n = atoi(argv[4]);
	if (n < 1 || n > 10000000)
		return 2;
	/* The server may still be starting. */
	int tries = 0;
	while (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
		if (++tries > 50) {
			perror("tcprtt: connect");
			return 1;
		}
		close(fd);
		fd = socket(AF_INET, SOCK_STREAM, 0);
		usleep(100000);
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	struct xgpu_rconn *tls = tls_wrap(fd, false);
	const char *kind = tls ? "tls" : "tcp";
	if (stream && tls) {
		static char buf[1 << 16];
		uint64_t left = (uint64_t)n << 20;
		double busy0 = machine_busy_s(), t0 = now_us();
		if (!put(fd, tls, &left, sizeof left))
			return 1;
		for (; left; left -= left < sizeof buf ? left : sizeof buf)
			if (!put(fd, tls, buf, left < sizeof buf ? left : sizeof buf))
				return 1;
		char b;
		if (!get(fd, tls, &b, 1))
			return 1;
		report_stream("tls", n, t0, busy0);
		return 0;
	}
	if (stream) {
		static char buf[1 << 16];
		size_t left = (size_t)n << 20;
		double busy0 = machine_busy_s(), t0 = now_us();
		while (left) {
			ssize_t w = write(fd, buf, left < sizeof buf ? left : sizeof buf);
			if (w <= 0) {
				perror("tcprtt: stream");
				return 1;
			}
			left -= (size_t)w;
		}
		shutdown(fd, SHUT_WR);
		char b;
		if (read(fd, &b, 1) != 1)
			return 1;
		report_stream("tcp", n, t0, busy0);
		return 0;
	}
	double *t = malloc(sizeof *t * (size_t)n), sum = 0;
	if (!t)
		return 1;
	for (int i = 0; i < n; i++) {
		char b = 'x';
		double t0 = now_us();
		if (!put(fd, tls, &b, 1) || !get(fd, tls, &b, 1)) {
			perror("tcprtt: ping");
			return 1;
		}
		t[i] = now_us() - t0;
		sum += t[i];
	}
	qsort(t, (size_t)n, sizeof *t, cmp);
	printf("%s_rtt_p50_us=%.1f mean_us=%.1f\n", kind, t[n / 2], sum / n);
	free(t);
	close(fd);
	return 0;
}
