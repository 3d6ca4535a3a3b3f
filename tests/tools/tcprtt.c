/* SPDX-License-Identifier: Apache-2.0 */
/* tcprtt.c - the TCP round-trip floor that remote channels are measured
 * against (tests/e2e/remote.sh): one byte there and back over one TCP
 * connection with TCP_NODELAY, as a remote null call's request and answer
 * would go with nothing else in the way.
 *
 *   tcprtt serve ADDR PORT        echo every byte of one connection, then exit
 *   tcprtt ping ADDR PORT COUNT   print "tcp_rtt_p50_us=... mean_us=..."
 *   tcprtt sink ADDR PORT         read one connection to its end, answer one byte
 *   tcprtt stream ADDR PORT MIB   send MIB MiB to a sink: "tcp_stream_gbps=..."
 * (the stream floor is plain TCP, without encryption) */
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

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
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
		if (sink) {
			static char buf[1 << 16];
			while (read(c, buf, sizeof buf) > 0)
				;
			return write(c, "k", 1) == 1 ? 0 : 1;
		}
		char b;
		while (read(c, &b, 1) == 1)
			if (write(c, &b, 1) != 1)
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
	if (stream) {
		static char buf[1 << 16];
		size_t left = (size_t)n << 20;
		double t0 = now_us();
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
		printf("tcp_stream_gbps=%.3f\n", (double)((size_t)n << 20) / (now_us() - t0) / 1e3);
		return 0;
	}
	double *t = malloc(sizeof *t * (size_t)n), sum = 0;
	if (!t)
		return 1;
	for (int i = 0; i < n; i++) {
		char b = 'x';
		double t0 = now_us();
		if (write(fd, &b, 1) != 1 || read(fd, &b, 1) != 1) {
			perror("tcprtt: ping");
			return 1;
		}
		t[i] = now_us() - t0;
		sum += t[i];
	}
	qsort(t, (size_t)n, sizeof *t, cmp);
	printf("tcp_rtt_p50_us=%.1f mean_us=%.1f\n", t[n / 2], sum / n);
	free(t);
	close(fd);
	return 0;
}
