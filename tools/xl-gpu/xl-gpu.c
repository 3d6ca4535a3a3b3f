/* SPDX-License-Identifier: Apache-2.0 */
/* xl-gpu.c - the xgpu command-line tool, in the style of xl: asks the local
 * xgpud (over its socket, found as the daemon and the frontend find it) for
 * its domains and statistics; the Xen-mode commands live in xen.c. */
#include "proto.h"
#include "top.h"
#include "util.h"
#include "xen.h"

#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static const char *socket_opt;
static enum xlgpu_mode mode = XLGPU_MODE_AUTO;

static void usage(FILE *f)
{
	fprintf(f, "Usage: xl-gpu [--socket PATH] [--xen | --local] COMMAND [ARGS]\n"
		   "Inspect and control xgpu's GPU sharing daemon (xgpud).\n"
		   "\n"
		   "Commands:\n"
		   "  list              domains: GPU, processes, credit, calls, memory\n"
		   "  stats [--json | --prometheus]\n"
		   "                    per-domain statistics; --json prints the daemon's JSON object,\n"
		   "                    --prometheus the same in Prometheus's text exposition format\n"
		   "  top [-b] [-n N] [-d SECONDS] [-s COLUMN] [-r]\n"
		   "                    a refreshing view of the domains, as xentop: credit, GPU slot\n"
		   "                    and busy share, memory, calls/s, p99 queue wait ('top -h')\n"
		   "  policy [NAME] [-g GPU]\n"
		   "                    show the scheduling policy of each GPU, or switch GPU (default:\n"
		   "                    all) to NAME live: none, rr, accc, xc, slaf, augc, cosched, wfq\n"
		   "  credit DOMAIN [-w CREDIT] [-s SLA]\n"
		   "                    show or set a domain's (name or domid) GPU credit, 1-65535\n"
		   "                    (default 256), and SLO, the GPU share it expects, 0-1\n"
		   "  attach DOMID [CFGFILE]\n"
		   "                    give Xen domain DOMID a GPU device, set up as CFGFILE's\n"
		   "                    gpu = [ \"gpus=0, credit=512, sla=0.5, mem=4G\" ] says (defaults:\n"
		   "                    gpus=all, credit 256, no SLA, no memory limit)\n"
		   "  detach DOMID [-t SECS]\n"
		   "                    remove it, once xgpud has closed it (waits up to SECS, 10)\n"
		   "  create CFGFILE [XL CREATE OPTIONS] [VAR=VALUE]...\n"
		   "                    check CFGFILE's gpu line (VAR=VALUE overriding it as for\n"
		   "                    xl), run 'xl create', then attach ($XL names the xl binary)\n"
		   "  help              this text\n"
		   "\n"
		   "Modes: list, stats and top always ask xgpud over its socket. credit and policy do\n"
		   "too in local mode; in Xen mode they write xenstore keys that xgpud applies.\n"
		   "Xen mode is --xen, or (unless --local) when $XGPU_XEN_STUB is set or this is\n"
		   "dom0 (/proc/xen/capabilities says control_d, or XENFEAT_dom0 in\n"
		   "/sys/hypervisor/properties/features without xenfs). attach, detach and create\n"
		   "always use xenstore.\n"
		   "\n"
		   "The socket is --socket, else $XGPU_SOCKET, else $XDG_RUNTIME_DIR/xgpu.sock,\n"
		   "else /run/xgpu/xgpud.sock.\n");
}

/* Sends one control request (a JSON object) and returns the daemon's whole
 * reply. */
static char *request(const char *req)
{
	char pathbuf[256];
	const char *path = xgpu_socket_path(socket_opt, pathbuf, sizeof pathbuf);
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	if (strlen(path) >= sizeof sa.sun_path) {
		fprintf(stderr, "xl-gpu: socket path %s is too long\n", path);
		return NULL;
	}
	strcpy(sa.sun_path, path);
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
		fprintf(stderr, "xl-gpu: cannot reach xgpud at %s: %s\n", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	struct xgpu_hello h = {
	    .magic = XGPU_PROTO_MAGIC, .version = XGPU_PROTO_VERSION, .kind = XGPU_CONN_CONTROL};
	if (send(fd, &h, sizeof h, MSG_NOSIGNAL) != (ssize_t)sizeof h ||
	    send(fd, req, strlen(req), MSG_NOSIGNAL) < 0) {
		fprintf(stderr, "xl-gpu: cannot send to xgpud: %s\n", strerror(errno));
		close(fd);
		return NULL;
	}
	size_t len = 0, cap = 65536;
	char *buf = malloc(cap + 1);
	for (;;) {
		if (!buf) {
			fprintf(stderr, "xl-gpu: out of memory\n");
			close(fd);
			return NULL;
		}
		if (cap - len < 32768) {
			char *nb = realloc(buf, cap * 2 + 1);
			if (!nb) {
				free(buf);
				buf = NULL;
				continue;
			}
			buf = nb;
			cap *= 2;
		}
		ssize_t n = recv(fd, buf + len, cap - len, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			fprintf(stderr, "xl-gpu: reading from xgpud: %s\n", strerror(errno));
			free(buf);
			close(fd);
			return NULL;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	buf[len] = '\0';
	return buf;
}

/* Sends req (taken) and returns the parsed reply, or NULL after saying why. */
static json_t *fetch_req(json_t *req)
{
	char *reqtext = json_dumps(req, JSON_COMPACT);
	json_decref(req);
	char *text = reqtext ? request(reqtext) : NULL;
	free(reqtext);
	if (!text)
		return NULL;
	json_error_t err;
	json_t *root = json_loads(text, 0, &err);
	if (!root) {
		/* A refused handshake answers with a binary ack, not JSON. */
		const struct xgpu_hello_ack *ack = (const void *)text;
		if (strlen(text) >= 8 && ack->magic == XGPU_PROTO_MAGIC && ack->version != XGPU_PROTO_VERSION)
			fprintf(stderr, "xl-gpu: xgpud speaks protocol %u, xl-gpu speaks %u\n", ack->version,
				XGPU_PROTO_VERSION);
		else
			fprintf(stderr, "xl-gpu: xgpud sent an unreadable reply: %s\n", err.text);
		free(text);
		return NULL;
	}
	free(text);
	const char *e = json_string_value(json_object_get(root, "error"));
	if (e) {
		fprintf(stderr, "xl-gpu: xgpud: %s\n", e);
		json_decref(root);
		return NULL;
	}
	return root;
}

static json_t *fetch(const char *cmd)
{
	return fetch_req(json_pack("{s:s}", "cmd", cmd));
}

static long long num(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);
	return json_is_integer(v) ? (long long)json_integer_value(v) : (long long)json_number_value(v);
}

static double real(json_t *o, const char *key)
{
	return json_number_value(json_object_get(o, key));
}

static int cmd_list(enum xlgpu_mode mode)
{
	json_t *root = fetch("list");
	/* A remote GPU host serves some guests: their channels are listed
	 * from xenstore, with or without this host's xgpud (the status still
	 * says whether xgpud answered: scripts probe it with list). */
	if (!root) {
		if (xlgpu_xen_selected(mode))
			xlgpu_xen_list_remote();
		return 1;
	}
	printf("%-20s %5s %4s %6s %7s %10s %10s  %s\n", "Name", "ID", "GPU", "Procs", "Credit", "Calls",
	       "Mem(MiB)", "Executor");
	size_t i;
	json_t *d;
	json_array_foreach(json_object_get(root, "domains"), i, d)
	{
		/* "serving (pid 1234)", or "none" while the domain has no process. */
		const char *state = json_string_value(json_object_get(d, "executor"));
		char ex[48];
		if (num(d, "executor_pid") > 0)
			snprintf(ex, sizeof ex, "%s (pid %lld)", state ? state : "?", num(d, "executor_pid"));
		else
			snprintf(ex, sizeof ex, "%s", state ? state : "none");
		printf("%-20s %5lld %4lld %6lld %7lld %10lld %10.1f  %s\n",
		       json_string_value(json_object_get(d, "name")), num(d, "domid"), num(d, "gpu"),
		       num(d, "channels"), num(d, "credit"), num(d, "calls"),
		       (double)num(d, "mem_bytes") / 1048576.0, ex);
	}
	json_decref(root);
	if (xlgpu_xen_selected(mode))
		xlgpu_xen_list_remote();
	return 0;
}

static json_t *fetch_stats(void)
{
	return fetch("stats");
}

enum stats_format { STATS_TABLE, STATS_JSON, STATS_PROMETHEUS };

static int cmd_stats(enum stats_format format)
{
	json_t *root = fetch("stats");
	if (!root)
		return 1;
	if (format == STATS_PROMETHEUS) {
		xlgpu_print_prometheus(stdout, root);
		json_decref(root);
		return 0;
	}
	if (format == STATS_JSON) {
		char *text = json_dumps(root, JSON_COMPACT);
		puts(text);
		free(text);
		json_decref(root);
		return 0;
	}
	printf("policy %s, tick %lld ms\n", json_string_value(json_object_get(root, "policy")),
	       num(root, "tick_ms"));
	size_t i;
	json_t *g;
	json_array_foreach(json_object_get(root, "gpus"), i, g)
	{
		printf("GPU %lld: %s (%s)\n", num(g, "id"), json_string_value(json_object_get(g, "name")),
		       json_string_value(json_object_get(g, "executor")));
	}
	double total = 0;
	json_t *d;
	json_array_foreach(json_object_get(root, "domains"), i, d) total += (double)num(d, "gpu_time_ns");
	printf("%-20s %10s %10s %7s %10s %10s %9s %9s %7s %9s %9s\n", "Domain", "Calls", "Errors", "Share",
	       "GPU(s)", "Busy(s)", "H2D(MiB)", "D2H(MiB)", "Mem(MiB)", "p50(us)", "p99(us)");
	json_array_foreach(json_object_get(root, "domains"), i, d)
	{
		double gt = (double)num(d, "gpu_time_ns");
		printf("%-20s %10lld %10lld %6.1f%% %10.3f %10.3f %9.1f %9.1f %7.1f %9.1f %9.1f\n",
		       json_string_value(json_object_get(d, "name")), num(d, "calls"), num(d, "errors"),
		       total > 0 ? 100.0 * gt / total : 0.0, gt / 1e9, (double)num(d, "busy_ns") / 1e9,
		       (double)num(d, "h2d_bytes") / 1048576.0, (double)num(d, "d2h_bytes") / 1048576.0,
		       (double)num(d, "mem_bytes") / 1048576.0, real(d, "lat_p50_us"), real(d, "lat_p99_us"));
	}
	json_decref(root);
	return 0;
}

static int cmd_policy(int argc, char **argv)
{
	const char *name = NULL;
	long gpu = -1;
	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "-g") && i + 1 < argc) {
			if (xgpu_parse_long(argv[++i], 0, 4095, &gpu) < 0) {
				fprintf(stderr, "xl-gpu: policy: -g %s: need a GPU number\n", argv[i]);
				return 2;
			}
		} else if (argv[i][0] != '-' && !name) {
			name = argv[i];
		} else {
			fprintf(stderr,
				"xl-gpu: policy: unexpected argument '%s' (usage: policy [NAME] [-g GPU])\n",
				argv[i]);
			return 2;
		}
	}
	if (xlgpu_xen_selected(mode))
		return xlgpu_xen_policy(name, gpu);
	json_t *req = json_pack("{s:s}", "cmd", "policy");
	if (name)
		json_object_set_new(req, "name", json_string(name));
	if (gpu >= 0)
		json_object_set_new(req, "gpu", json_integer(gpu));
	json_t *root = fetch_req(req);
	if (!root)
		return 1;
	size_t i;
	json_t *g;
	json_array_foreach(json_object_get(root, "gpus"), i, g)
	{
		printf("GPU %lld: %s\n", num(g, "id"), json_string_value(json_object_get(g, "policy")));
	}
	json_decref(root);
	return 0;
}

static int cmd_credit(int argc, char **argv)
{
	const char *dom = NULL;
	long credit = -1;
	double sla = -1;
	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "-w") && i + 1 < argc) {
			if (xgpu_parse_long(argv[++i], 1, 65535, &credit) < 0) {
				fprintf(
				    stderr,
				    "xl-gpu: credit: -w %s: credit must be a whole number from 1 to 65535\n",
				    argv[i]);
				return 2;
			}
		} else if (!strcmp(argv[i], "-s") && i + 1 < argc) {
			char *end;
			errno = 0;
			sla = strtod(argv[++i], &end);
			if (errno || end == argv[i] || *end || !(sla >= 0 && sla <= 1)) {
				fprintf(stderr, "xl-gpu: credit: -s %s: SLA must be a number from 0 to 1\n",
					argv[i]);
				return 2;
			}
		} else if (argv[i][0] != '-' && !dom) {
			dom = argv[i];
		} else {
			fprintf(stderr,
				"xl-gpu: credit: unexpected argument '%s' (usage: credit DOMAIN [-w CREDIT] "
				"[-s SLA])\n",
				argv[i]);
			return 2;
		}
	}
	if (!dom) {
		fprintf(stderr,
			"xl-gpu: credit: which domain? (usage: credit DOMAIN [-w CREDIT] [-s SLA])\n");
		return 2;
	}
	if (xlgpu_xen_selected(mode))
		return xlgpu_xen_credit(dom, credit, sla);
	json_t *req = json_pack("{s:s}", "cmd", "credit");
	long domid;
	/* A number is a domid, as with xl; anything else a name. */
	if (xgpu_parse_long(dom, 0, UINT32_MAX, &domid) == 0)
		json_object_set_new(req, "domain", json_integer(domid));
	else
		json_object_set_new(req, "domain", json_string(dom));
	if (credit > 0)
		json_object_set_new(req, "credit", json_integer(credit));
	if (sla >= 0)
		json_object_set_new(req, "sla", json_real(sla));
	json_t *root = fetch_req(req);
	if (!root)
		return 1;
	printf("%-20s %5s %7s %6s\n", "Name", "ID", "Credit", "SLA");
	printf("%-20s %5lld %7lld %6.3f\n", json_string_value(json_object_get(root, "name")),
	       num(root, "domid"), num(root, "credit"), real(root, "sla"));
	json_decref(root);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {{"socket", required_argument, 0, 's'},
					     {"help", no_argument, 0, 'h'},
					     {"xen", no_argument, 0, 'X'},
					     {"local", no_argument, 0, 'L'},
					     {0, 0, 0, 0}};
	int c;
	while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
		if (c == 's')
			socket_opt = optarg;
		else if (c == 'X' || c == 'L') {
			enum xlgpu_mode m = c == 'X' ? XLGPU_MODE_XEN : XLGPU_MODE_LOCAL;
			if (mode != XLGPU_MODE_AUTO && mode != m) {
				fprintf(stderr, "xl-gpu: --xen and --local cannot both be given\n");
				return 2;
			}
			mode = m;
		} else if (c == 'h') {
			usage(stdout);
			return 0;
		} else {
			usage(stderr);
			return 2;
		}
	}
	if (optind >= argc) {
		usage(stderr);
		return 2;
	}
	const char *cmd = argv[optind];
	int rest = argc - optind - 1;
	char **args = argv + optind + 1;
	if (!strcmp(cmd, "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(cmd, "list") && rest == 0)
		return cmd_list(mode);
	if (!strcmp(cmd, "stats") && rest == 0)
		return cmd_stats(STATS_TABLE);
	if (!strcmp(cmd, "stats") && rest == 1 && !strcmp(args[0], "--json"))
		return cmd_stats(STATS_JSON);
	if (!strcmp(cmd, "stats") && rest == 1 && !strcmp(args[0], "--prometheus"))
		return cmd_stats(STATS_PROMETHEUS);
	if (!strcmp(cmd, "top"))
		return xlgpu_top(rest, args, fetch_stats);
	if (!strcmp(cmd, "policy"))
		return cmd_policy(rest, args);
	if (!strcmp(cmd, "credit"))
		return cmd_credit(rest, args);
	if (!strcmp(cmd, "attach") || !strcmp(cmd, "detach") || !strcmp(cmd, "create")) {
		if (mode == XLGPU_MODE_LOCAL) {
			fprintf(stderr, "xl-gpu: %s works on Xen's xenstore; not with --local\n", cmd);
			return 2;
		}
		if (!strcmp(cmd, "attach"))
			return xlgpu_xen_attach(rest, args);
		if (!strcmp(cmd, "detach"))
			return xlgpu_xen_detach(rest, args);
		return xlgpu_xen_create(rest, args);
	}
	if (!strcmp(cmd, "list") || !strcmp(cmd, "stats"))
		fprintf(stderr, "xl-gpu: %s: unexpected argument '%s'\n", cmd, args[rest == 1 ? 0 : 1]);
	else
		fprintf(stderr, "xl-gpu: unknown command '%s' (try 'xl-gpu help')\n", cmd);
	return 2;
}
