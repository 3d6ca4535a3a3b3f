/* SPDX-License-Identifier: Apache-2.0 */
/* main.c - the xgpu-xenstub command: serves an in-memory Xen on a socket in
 * the foreground, or (ctl ...) sends one control request to a running one. */
#include "xenstub.h"
#include "wire.h"
#include "fdpass.h"
#include "xenif.h"

#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static void usage(FILE *f)
{
	fprintf(
	    f,
	    "usage: xgpu-xenstub --socket PATH [--domain ID:NAME]...\n"
	    "       xgpu-xenstub --socket PATH ctl introduce ID NAME | release ID | fail-tx N | dump PATH\n"
	    "Serves an in-memory Xen (xenstore, event channels, grant tables) for xgpu's\n"
	    "--socket defaults to $XGPU_XEN_STUB.\n"
	    "xenif stub clients (XGPU_XEN_STUB=PATH) until SIGTERM or SIGINT.\n");
}

static int parse_u32(const char *s, uint32_t max, uint32_t *out)
{
	char *end;
	errno = 0;
	unsigned long v = strtoul(s, &end, 10);
	if (errno || end == s || *end || v > max || s[0] == '-')
		return -1;
	*out = (uint32_t)v;
	return 0;
}

static int full_io(int fd, void *buf, size_t len, bool wr)
{
	char *p = buf;
	while (len) {
		ssize_t n = wr ? write(fd, p, len) : read(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int request(int fd, uint32_t op, const void *body, uint32_t len, char **out, uint32_t *outlen)
{
	struct xsw_hdr h = {op, len};
	struct xsw_rep rep;
	if (full_io(fd, &h, sizeof h, true) || (len && full_io(fd, (void *)body, len, true)) ||
	    full_io(fd, &rep, sizeof rep, false) || rep.len > (64u << 20))
		return -EPIPE;
	char *b = malloc(rep.len + 1u);
	if (!b || full_io(fd, b, rep.len, false)) {
		free(b);
		return -EPIPE;
	}
	b[rep.len] = '\0';
	if (out) {
		*out = b;
		*outlen = rep.len;
	} else {
		free(b);
	}
	return -rep.err;
}

static int ctl(const char *sock, int argc, char **argv)
{
	uint32_t op, a = 0;
	const char *str = "";
	if (argc >= 3 && !strcmp(argv[0], "introduce") && !parse_u32(argv[1], XGPU_XEN_DOMID_MAX, &a)) {
		op = XSW_CTL_INTRODUCE;
		str = argv[2];
	} else if (argc >= 2 && !strcmp(argv[0], "release") && !parse_u32(argv[1], XGPU_XEN_DOMID_MAX, &a)) {
		op = XSW_CTL_RELEASE;
	} else if (argc >= 2 && !strcmp(argv[0], "fail-tx") && !parse_u32(argv[1], 1u << 30, &a)) {
		op = XSW_CTL_FAILTX;
	} else if (argc >= 2 && !strcmp(argv[0], "dump")) {
		op = XSW_CTL_DUMP;
		str = argv[1];
	} else {
		usage(stderr);
		return 2;
	}
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	if (strlen(sock) >= sizeof sa.sun_path) {
		fprintf(stderr, "xgpu-xenstub: socket path %s is too long\n", sock);
		return 1;
	}
	strcpy(sa.sun_path, sock);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa)) {
		fprintf(stderr, "xgpu-xenstub: cannot connect to %s: %s\n", sock, strerror(errno));
		return 1;
	}
	struct xsw_hello h = {XSW_MAGIC, XSW_CTL, 0};
	int r = request(fd, XSW_HELLO, &h, sizeof h, NULL, NULL);
	size_t sl = strlen(str);
	char *body = malloc(sizeof(struct xsw_xs) + sl);
	char *out = NULL;
	uint32_t outlen = 0;
	if (!r && body) {
		struct xsw_xs q = {.a = a, .la = (uint32_t)sl};
		memcpy(body, &q, sizeof q);
		memcpy(body + sizeof q, str, sl);
		r = request(fd, op, body, (uint32_t)(sizeof q + sl), &out, &outlen);
	}
	free(body);
	close(fd);
	if (r) {
		fprintf(stderr, "xgpu-xenstub: ctl %s %s: %s\n", argv[0], argv[1], strerror(-r));
		free(out);
		return 1;
	}
	if (out && outlen)
		fwrite(out, 1, outlen, stdout);
	free(out);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"socket", required_argument, NULL, 's'},
	    {"domain", required_argument, NULL, 'd'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	const char *sock = NULL;
	char **doms = calloc((size_t)argc + 1, sizeof *doms);
	int ndoms = 0, c;
	if (!doms)
		return 1;
	while ((c = getopt_long(argc, argv, "+s:d:h", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			sock = optarg;
			break;
		case 'd':
			doms[ndoms++] = optarg;
			break;
		case 'h':
			usage(stdout);
			free(doms);
			return 0;
		default:
			usage(stderr);
			free(doms);
			return 2;
		}
	}
	if (!sock && getenv("XGPU_XEN_STUB") && *getenv("XGPU_XEN_STUB"))
		sock = getenv("XGPU_XEN_STUB");
	if (!sock) {
		fprintf(stderr, "xgpu-xenstub: --socket PATH (or XGPU_XEN_STUB) is required\n");
		usage(stderr);
		free(doms);
		return 2;
	}
	if (optind < argc) {
		free(doms);
		if (strcmp(argv[optind], "ctl")) {
			fprintf(stderr, "xgpu-xenstub: unknown argument %s\n", argv[optind]);
			usage(stderr);
			return 2;
		}
		return ctl(sock, argc - optind - 1, argv + optind + 1);
	}
	/* Block the stop signals before the server thread starts so that only
	 * sigwait below sees them. */
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);
	char err[256];
	struct xgpu_xenstub *s = xgpu_xenstub_start(sock, err, sizeof err);
	if (!s) {
		fprintf(stderr, "xgpu-xenstub: %s\n", err);
		free(doms);
		return 1;
	}
	xgpu_xenstub_set_log(s, stderr);
	int rc = 0;
	for (int i = 0; i < ndoms; i++) {
		char *colon = strchr(doms[i], ':');
		uint32_t id;
		if (colon)
			*colon = '\0';
		if (!colon || parse_u32(doms[i], XGPU_XEN_DOMID_MAX, &id) ||
		    xgpu_xenstub_introduce(s, id, colon + 1)) {
			fprintf(stderr,
				"xgpu-xenstub: --domain %s%s%s: want ID:NAME with a new ID in 1..%u and a "
				"NAME of 1..63 characters\n",
				doms[i], colon ? ":" : "", colon ? colon + 1 : "", XGPU_XEN_DOMID_MAX);
			rc = 2;
			break;
		}
	}
	free(doms);
	if (!rc) {
		fprintf(stderr, "xgpu-xenstub: serving on %s\n", sock);
		int sig;
		sigwait(&set, &sig);
		fprintf(stderr, "xgpu-xenstub: %s, stopping\n", strsignal(sig));
	}
	xgpu_xenstub_stop(s);
	return rc;
}
