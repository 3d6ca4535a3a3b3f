/* SPDX-License-Identifier: Apache-2.0 */
/* xgpud.c - the xgpu control plane: options, start-up (adopting the
 * executors a previous xgpud left running), the main loop that accepts
 * channels and control requests and watches the executors, an orderly stop
 * on SIGINT or SIGTERM (the executors end with it) and a restart in place on
 * SIGUSR2 (they go on serving, and the new xgpud adopts them). */
#include "log.h"
#include "config.h"
#include "schedsrc/hypsrc.h"
#include "policy.h"
#include "transport/transport_local.h"
#include "transport/transport_remote.h"
#include "util.h"
#include "transport/xenbus.h"
#include "xenif.h"
#include "xenrole.h"
#include "xenvgpu.h"
#include "daemon.h"
#include "control.h"
#include "executors.h"
#include "sdnotify.h"
#include "state.h"

#include <errno.h>
#include <limits.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <unistd.h>

#define XGPU_VERSION_STRING "0.1.0"

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: xgpud [OPTION]...\n"
		"Share NVIDIA GPUs between Xen guests or local processes through xgpu's\n"
		"libcudart.so.13 frontend.\n"
		"\n"
		"  --transport local|xen   how guests connect (default: xen in a Xen Dom0, else local)\n"
		"  --executor cuda|sim     run calls on NVIDIA's driver or the simulated one\n"
		"                          (default: cuda when a GPU is usable, else sim)\n"
		"  --policy NAME           GPU scheduling policy: %s (default rr)\n"
		"  --tick-ms N             scheduler tick, 1-1000 ms (default 10)\n"
		"  --hyp-source NAME[:ARGS]  hypervisor schedule for xc, augc, cosched: %s\n"
		"                          (default: local in local mode and over xgpu-xenstub, xen\n"
		"                          in Xen mode; sim:pcpus=N,weight.DOMID=W,...)\n"
		"  --socket PATH           local transport socket (default $XGPU_SOCKET, else\n"
		"                          $XDG_RUNTIME_DIR/xgpu.sock, else /run/xgpu/xgpud.sock)\n"
		"  --remote-listen ADDR:PORT  serve guests on other hosts over TCP, TLS 1.3 with the\n"
		"                          keys in --remote-psk and/or the certificates of --remote-cert;\n"
		"                          each guest lands in domain remote-IDENTITY, its key's identity\n"
		"                          or its certificate's CN (docs/operations.md)\n"
		"  --remote-psk FILE       the pre-shared keys of --remote-listen, a line per tenant\n"
		"                          (psktool's format, mode 600)\n"
		"  --remote-cert FILE      this host's certificate (PEM, its chain after it) for\n"
		"                          --remote-listen; needs --remote-cert-key and --remote-ca\n"
		"  --remote-cert-key FILE  the certificate's private key (PEM, mode 600)\n"
		"  --remote-ca FILE        the CA(s) whose signature a guest's certificate must carry\n"
		"  --remote-insecure       --remote-listen without TLS: plain TCP, for tests only\n"
		"  --remote-zerocopy       plain TCP: send bulk bytes with MSG_ZEROCOPY (off by default:\n"
		"                          docs/results/bench-remote.md)\n"
		"  --mem-limit SIZE        device memory per domain, e.g. 4G (default: the GPU's)\n"
		"  --fatbin-inflate-limit SIZE  most a module's compressed fatbin entries may\n"
		"                          inflate to in all (default 512M; NCCL's need about 1G)\n"
		"  --config FILE           defaults and per-domain credit, SLO, GPUs, memory, task\n"
		"                          weights, in xl syntax (see docs/operations.md)\n"
		"  --sim-driver PATH       simulated driver library (default ../lib/libxgpu-simdrv.so\n"
		"                          beside this binary, else ../lib/xgpu/libxgpu-simdrv.so)\n"
		"  --cuda-driver PATH      NVIDIA driver library (default libcuda.so.1)\n"
		"  --spin-us N             pollers spin this long before sleeping (default 50)\n"
		"  --stall-timeout S       close a channel whose guest stalls a transfer this long\n"
		"                          (default 60)\n"
		"  --max-channels N        channels (processes) per domain (default 256)\n"
		"  --max-domains N         domains in all (default 1024)\n"
		"  --max-domains-per-user N  domains one user other than root may own (default 16)\n"
		"  --pinned-limit SIZE     pinned host memory (cudaMallocHost) per domain (default 16G)\n"
		"  --kernel-timeout S      end a domain's executor (and its work on the GPU) when one of\n"
		"                          its kernels or copies runs longer than S seconds; its\n"
		"                          processes get cudaErrorLaunchTimeout; 0 for none (default 30)\n"
		"  --executor-path PATH    the executor program (default xgpu-executor beside this\n"
		"                          binary, else ../lib/xgpu/xgpu-executor)\n"
		"  --executor-uid-base UID when run as root, each domain's executor runs as uid and\n"
		"                          gid UID + its domid (default 1879048192); 0: as xgpud\n"
		"  --executor-linger MS    an executor with no processes left ends after MS (default 5000)\n"
		"  --executor-sandbox MODE enforce, log or off: the executors' system call filter refuses,\n"
		"                          only logs, or is not applied (default enforce on sim, log on cuda)\n"
		"  --log-level LEVEL       error, warn, info or debug (default info)\n"
		"  --log-file PATH         log here instead of stderr (or syslog once detached)\n"
		"  --foreground            stay in the foreground\n"
		"  --help, --version\n"
		"\n"
		"Signals: SIGTERM or SIGINT stop xgpud and every domain's executor (running CUDA\n"
		"processes then fail with cudaErrorDevicesUnavailable). SIGUSR2 restarts xgpud in\n"
		"place (an upgrade): the executors go on serving their guests and the new xgpud\n"
		"adopts them; new processes are refused for the moment it takes.\n",
		xgpu_policy_names(), xgpu_hyp_names());
	fputs("SIGHUP reads the remote transport's key, certificate and CA files again (a rotated\n"
	      "certificate, a new revocation list): new connections use them, open ones keep theirs.\n",
	      f);
}

static int parse_opts(int argc, char **argv, struct xgpud_opts *o)
{
	enum {
		O_TRANSPORT = 256,
		O_EXECUTOR,
		O_POLICY,
		O_TICK,
		O_HYP,
		O_SOCKET,
		O_MEMLIMIT,
		O_FATBIN,
		O_CONFIG,
		O_SIMDRV,
		O_CUDADRV,
		O_SPIN,
		O_STALL,
		O_KTIMEOUT,
		O_EXECPATH,
		O_EXECUID,
		O_EXECLINGER,
		O_EXECSANDBOX,
		O_MAXCH,
		O_MAXDOM,
		O_MAXDOMUID,
		O_PINNED,
		O_LOGLEVEL,
		O_LOGFILE,
		O_FG,
		O_RLISTEN,
		O_RPSK,
		O_RINSECURE,
		O_RCERT,
		O_RCERTKEY,
		O_RCA,
		O_RZEROCOPY,
		O_HELP,
		O_VERSION
	};
	static const struct option longopts[] = {
	    {"transport", required_argument, 0, O_TRANSPORT},
	    {"executor", required_argument, 0, O_EXECUTOR},
	    {"policy", required_argument, 0, O_POLICY},
	    {"tick-ms", required_argument, 0, O_TICK},
	    {"hyp-source", required_argument, 0, O_HYP},
	    {"socket", required_argument, 0, O_SOCKET},
	    {"mem-limit", required_argument, 0, O_MEMLIMIT},
	    {"fatbin-inflate-limit", required_argument, 0, O_FATBIN},
	    {"config", required_argument, 0, O_CONFIG},
	    {"sim-driver", required_argument, 0, O_SIMDRV},
	    {"cuda-driver", required_argument, 0, O_CUDADRV},
	    {"spin-us", required_argument, 0, O_SPIN},
	    {"stall-timeout", required_argument, 0, O_STALL},
	    {"kernel-timeout", required_argument, 0, O_KTIMEOUT},
	    {"executor-path", required_argument, 0, O_EXECPATH},
	    {"executor-uid-base", required_argument, 0, O_EXECUID},
	    {"executor-linger", required_argument, 0, O_EXECLINGER},
	    {"executor-sandbox", required_argument, 0, O_EXECSANDBOX},
	    {"max-channels", required_argument, 0, O_MAXCH},
	    {"max-domains", required_argument, 0, O_MAXDOM},
	    {"max-domains-per-user", required_argument, 0, O_MAXDOMUID},
	    {"pinned-limit", required_argument, 0, O_PINNED},
	    {"log-level", required_argument, 0, O_LOGLEVEL},
	    {"log-file", required_argument, 0, O_LOGFILE},
	    {"foreground", no_argument, 0, O_FG},
	    {"remote-listen", required_argument, 0, O_RLISTEN},
	    {"remote-psk", required_argument, 0, O_RPSK},
	    {"remote-cert", required_argument, 0, O_RCERT},
	    {"remote-cert-key", required_argument, 0, O_RCERTKEY},
	    {"remote-ca", required_argument, 0, O_RCA},
	    {"remote-insecure", no_argument, 0, O_RINSECURE},
	    {"remote-zerocopy", no_argument, 0, O_RZEROCOPY},
	    {"help", no_argument, 0, O_HELP},
	    {"version", no_argument, 0, O_VERSION},
	    {0, 0, 0, 0},
	};
	long v;
	int c;
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case O_TRANSPORT:
			o->transport = optarg;
			break;
		case O_EXECUTOR:
			o->executor = optarg;
			break;
		case O_POLICY:
			o->policy = optarg;
			break;
		case O_TICK:
			if (xgpu_parse_long(optarg, 1, 1000, &v) < 0) {
				fprintf(stderr,
					"xgpud: --tick-ms %s: need a whole number of ms from 1 to 1000\n",
					optarg);
				return -1;
			}
			o->tick_ms = (unsigned)v;
			break;
		case O_HYP:
			o->hyp_source = optarg;
			break;
		case O_SOCKET:
			o->socket_path = optarg;
			break;
		case O_MEMLIMIT:
			if (xgpu_parse_size(optarg, &o->mem_limit) < 0 || o->mem_limit == 0) {
				fprintf(stderr, "xgpud: --mem-limit %s: need a size such as 512M or 4G\n",
					optarg);
				return -1;
			}
			break;
		case O_FATBIN:
			if (xgpu_parse_size(optarg, &o->fatbin_inflate_limit) < 0 ||
			    o->fatbin_inflate_limit < (1u << 20)) {
				fprintf(stderr,
					"xgpud: --fatbin-inflate-limit %s: need a size of at least 1M, such "
					"as 2G\n",
					optarg);
				return -1;
			}
			break;
		case O_CONFIG:
			o->config_path = optarg;
			break;
		case O_SIMDRV:
			o->sim_driver = optarg;
			break;
		case O_CUDADRV:
			o->cuda_driver = optarg;
			break;
		case O_SPIN:
			if (xgpu_parse_long(optarg, 0, 100000, &v) < 0) {
				fprintf(stderr, "xgpud: --spin-us %s: need 0 to 100000\n", optarg);
				return -1;
			}
			o->spin_ns = (uint64_t)v * 1000;
			break;
		case O_KTIMEOUT:
			if (xgpu_parse_long(optarg, 0, XGPU_GPUSPEC_KTIMEOUT_MAX, &v) < 0) {
				fprintf(stderr, "xgpud: --kernel-timeout %s: need 0 (none) to %u seconds\n",
					optarg, XGPU_GPUSPEC_KTIMEOUT_MAX);
				return -1;
			}
			o->kernel_timeout_s = (unsigned)v;
			break;
		case O_EXECPATH:
			o->executor_path = optarg;
			break;
		case O_EXECUID:
			if (xgpu_parse_long(optarg, 0, 4000000000l, &v) < 0) {
				fprintf(stderr,
					"xgpud: --executor-uid-base %s: need a uid, or 0 for xgpud's own\n",
					optarg);
				return -1;
			}
			o->executor_uid_base = (uint32_t)v;
			break;
		case O_EXECSANDBOX:
			if (strcmp(optarg, "enforce") && strcmp(optarg, "log") && strcmp(optarg, "off")) {
				fprintf(stderr, "xgpud: --executor-sandbox %s: need enforce, log or off\n",
					optarg);
				return -1;
			}
			o->executor_sandbox = optarg;
			break;
		case O_EXECLINGER:
			if (xgpu_parse_long(optarg, 0, 3600000, &v) < 0) {
				fprintf(stderr, "xgpud: --executor-linger %s: need 0 to 3600000 ms\n",
					optarg);
				return -1;
			}
			o->executor_linger_ms = (unsigned)v;
			break;
		case O_STALL:
			if (xgpu_parse_long(optarg, 1, 86400, &v) < 0) {
				fprintf(stderr, "xgpud: --stall-timeout %s: need 1 to 86400 seconds\n",
					optarg);
				return -1;
			}
			o->stall_timeout_s = (unsigned)v;
			break;
		case O_MAXCH:
			if (xgpu_parse_long(optarg, 1, 65536, &v) < 0) {
				fprintf(stderr, "xgpud: --max-channels %s: need 1 to 65536\n", optarg);
				return -1;
			}
			o->max_channels_per_domain = (unsigned)v;
			break;
		case O_MAXDOM:
			if (xgpu_parse_long(optarg, 1, 65536, &v) < 0) {
				fprintf(stderr, "xgpud: --max-domains %s: need 1 to 65536\n", optarg);
				return -1;
			}
			o->max_domains = (unsigned)v;
			break;
		case O_MAXDOMUID:
			if (xgpu_parse_long(optarg, 1, 65536, &v) < 0) {
				fprintf(stderr, "xgpud: --max-domains-per-user %s: need 1 to 65536\n",
					optarg);
				return -1;
			}
			o->max_domains_per_uid = (unsigned)v;
			break;
		case O_PINNED:
			if (xgpu_parse_size(optarg, &o->pinned_limit) < 0 || o->pinned_limit == 0) {
				fprintf(stderr, "xgpud: --pinned-limit %s: need a size such as 4G\n", optarg);
				return -1;
			}
			break;
		case O_LOGLEVEL:
			if ((o->log_level = xgpu_log_parse_level(optarg)) < 0) {
				fprintf(stderr, "xgpud: --log-level %s: need error, warn, info or debug\n",
					optarg);
				return -1;
			}
			break;
		case O_LOGFILE:
			o->log_file = optarg;
			break;
		case O_FG:
			o->foreground = true;
			break;
		case O_RLISTEN:
			o->remote_listen = optarg;
			break;
		case O_RPSK:
			o->remote_psk = optarg;
			break;
		case O_RINSECURE:
			o->remote_insecure = true;
			break;
		case O_RCERT:
			o->remote_cert = optarg;
			break;
		case O_RCERTKEY:
			o->remote_cert_key = optarg;
			break;
		case O_RCA:
			o->remote_ca = optarg;
			break;
		case O_RZEROCOPY:
			o->remote_zerocopy = true;
			break;
		case O_HELP:
			usage(stdout);
			exit(0);
		case O_VERSION:
			printf("xgpud %s (xgpu protocol %u)\n", XGPU_VERSION_STRING, XGPU_PROTO_VERSION);
			exit(0);
		default:
			usage(stderr);
			return -1;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "xgpud: unexpected argument '%s'\n", argv[optind]);
		return -1;
	}
	bool cert = o->remote_cert || o->remote_cert_key || o->remote_ca;
	if (cert && !(o->remote_cert && o->remote_cert_key && o->remote_ca)) {
		fprintf(stderr, "xgpud: --remote-cert, --remote-cert-key and --remote-ca go together (this "
				"host's certificate, its key, and the CA that signs the guests')\n");
		return -1;
	}
	if (o->remote_listen && !(o->remote_psk || cert) == !o->remote_insecure) {
		fprintf(stderr, "xgpud: --remote-listen needs --remote-psk FILE or --remote-cert FILE "
				"--remote-cert-key FILE --remote-ca FILE, or both (or, for tests only, "
				"--remote-insecure alone)\n");
		return -1;
	}
	if (o->remote_zerocopy && !o->remote_insecure) {
		fprintf(stderr, "xgpud: --remote-zerocopy needs --remote-insecure (TLS encrypts into "
				"buffers of its own)\n");
		return -1;
	}
	if (!o->remote_listen && (o->remote_psk || o->remote_insecure || cert)) {
		fprintf(stderr, "xgpud: --remote-psk, --remote-cert and --remote-insecure go with "
				"--remote-listen\n");
		return -1;
	}
	return 0;
}

/* Each channel holds a socket and each domain an epoll and an eventfd; the
 * common soft limit of 1024 descriptors would cap a busy host long before the
 * configured limits do. */
static void raise_fd_limit(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

static bool in_xen_dom0(void)
{
	return xgpu_xen_role("", NULL, 0) == XGPU_XEN_DOM0;
}

/* SIGHUP: the remote transport's credentials, read again. */
static void reload_credentials(struct xgpu_remote_listener *remote, const struct xgpu_remote_auth *auth)
{
	char err[512];
	if (!remote)
		xlog_info("signal %u: no remote transport, nothing to reload", SIGHUP);
	else if (auth->psk_file == NULL && auth->cert_file == NULL)
		xlog_info("signal %u: the remote transport is plain TCP, nothing to reload", SIGHUP);
	else if (xgpu_remote_reload(remote, auth, err, sizeof err) < 0)
		xlog_err("signal %u: remote credentials not reloaded, the old ones stay: %s", SIGHUP, err);
	else if (auth->psk_file)
		xlog_info("signal %u: remote credentials reloaded (pre-shared keys of %u tenant%s%s); new "
			  "connections use them",
			  SIGHUP, xgpu_remote_key_count(remote),
			  xgpu_remote_key_count(remote) == 1 ? "" : "s",
			  auth->cert_file ? ", certificates and CA file" : "");
	else
		xlog_info("signal %u: remote credentials reloaded (certificate, key and CA file %s); new "
			  "connections use them",
			  SIGHUP, auth->ca_file);
}

int main(int argc, char **argv)
{
	static struct xgpud d;
	static struct xgpud_config conf;
	d.o = (struct xgpud_opts){
	    .log_level = XGPU_LOG_INFO,
	    .spin_ns = 50000,
	    .stall_timeout_s = 60,
	    .kernel_timeout_s = 30,
	    .max_channels_per_domain = 256,
	    .max_domains_per_uid = 16,
	    .max_domains = 1024,
	    .pinned_limit = 16ull << 30,
	    .executor_linger_ms = 5000,
	    .executor_uid_base = 1879048192u,
	};
	/* The binary to run again on SIGUSR2: the path it was started from,
	 * where an upgrade puts the new one. */
	char self[PATH_MAX];
	ssize_t sl = readlink("/proc/self/exe", self, sizeof self - 1);
	self[sl > 0 ? sl : 0] = '\0';
	bool reexec = getenv("XGPU_REEXEC") != NULL;
	unsetenv("XGPU_REEXEC");
	if (parse_opts(argc, argv, &d.o) < 0)
		return 2;
	/* Block the stop signals before any thread exists, so every thread
	 * inherits the mask and they arrive only through the signalfd. */
	sigset_t mask;
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGUSR2);
	sigaddset(&mask, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &mask, NULL);
	signal(SIGPIPE, SIG_IGN);
	if (!d.o.transport)
		d.o.transport = in_xen_dom0() ? "xen" : "local";
	bool xen = !strcmp(d.o.transport, "xen");
	if (!xen && strcmp(d.o.transport, "local")) {
		fprintf(stderr, "xgpud: unknown transport '%s' (known: local, xen)\n", d.o.transport);
		return 2;
	}
	/* The command line wins over the file, the file over the defaults. */
	if (d.o.config_path) {
		char cerr[512];
		if (xgpud_config_load(d.o.config_path, &conf, cerr, sizeof cerr) < 0) {
			fprintf(stderr, "xgpud: %s\n", cerr);
			return 2;
		}
		d.conf = &conf;
		if (!d.o.policy && conf.policy[0])
			d.o.policy = conf.policy;
		if (!d.o.tick_ms && conf.tick_ms)
			d.o.tick_ms = conf.tick_ms;
		if (!d.o.hyp_source && conf.hyp_source[0])
			d.o.hyp_source = conf.hyp_source;
	}
	if (!d.o.policy)
		d.o.policy = "rr";
	if (!d.o.tick_ms)
		d.o.tick_ms = 10;
	if (!xgpu_policy_find(d.o.policy)) {
		fprintf(stderr, "xgpud: unknown policy '%s' (known: %s)\n", d.o.policy, xgpu_policy_names());
		return 2;
	}
	if (!d.o.hyp_source)
		d.o.hyp_source = xen && !xgpu_xen_stub_selected() ? "xen" : "local";
	char herr[256];
	d.hyp_ops = xgpu_hyp_find(d.o.hyp_source, &d.hyp_args, herr, sizeof herr);
	if (!d.hyp_ops) {
		fprintf(stderr, "xgpud: --hyp-source: %s\n", herr);
		return 2;
	}
	if (d.o.log_file && !freopen(d.o.log_file, "a", stderr)) {
		fprintf(stderr, "xgpud: cannot open log file %s: %s\n", d.o.log_file, strerror(errno));
		return 1;
	}
	setvbuf(stderr, NULL, _IOLBF, 0);
	xgpu_log_init("xgpud", (enum xgpu_log_level)d.o.log_level, false);

	char pathbuf[256], err[768];
	raise_fd_limit();
	int ep = epoll_create1(EPOLL_CLOEXEC);
	const char *path = xgpu_socket_path(d.o.socket_path, pathbuf, sizeof pathbuf);
	snprintf(d.socket_path, sizeof d.socket_path, "%s", path);
	/* The transports reach the daemon only through host's up-calls. */
	struct xgpu_transport_host host;
	xgpud_transport_host(&d, &host);
	struct xgpu_local_listener *listener =
	    ep >= 0 ? xgpu_local_listen(&host, path, ep, err, sizeof err) : NULL;
	if (!listener) {
		xlog_err("%s", ep >= 0 ? err : "cannot create the main loop's epoll");
		return 1;
	}
	if (xen && !d.o.foreground) {
		/* Say now, on the terminal, if Xen cannot be reached; the real
		 * connection is made after detaching (libxenstore's watch thread
		 * would not survive the fork). */
		struct xgpu_xs *probe = xgpu_xs_open(err, sizeof err);
		if (!probe) {
			xlog_err("Xen transport: %s", err);
			xgpu_local_close(listener);
			unlink(path);
			return 1;
		}
		probe->ops->close(probe);
	}
	if (!d.o.foreground && !reexec) {
		if (daemon(0, d.o.log_file != NULL) < 0) {
			xlog_err("cannot detach: %s", strerror(errno));
			return 1;
		}
		if (!d.o.log_file)
			xgpu_log_init("xgpud", (enum xgpu_log_level)d.o.log_level, true);
	} else if (!d.o.foreground && !d.o.log_file) {
		xgpu_log_init("xgpud", (enum xgpu_log_level)d.o.log_level, true);
	}
	if (xgpud_init(&d, err, sizeof err) < 0) {
		xlog_err("%s", err);
		xgpu_local_close(listener);
		unlink(path);
		xgpud_shutdown(&d, false);
		return 1;
	}
	int adopted = xgpud_adopt(&d);
	if (adopted > 0)
		xlog_info("adopted %d executor%s of the previous xgpud", adopted, adopted == 1 ? "" : "s");
	struct epoll_event xev = {.events = EPOLLIN, .data.ptr = &d.executors};
	if (epoll_ctl(ep, EPOLL_CTL_ADD, xgpu_executors_fd(&d), &xev) < 0) {
		xlog_err("cannot watch the executors: %s", strerror(errno));
		return 1;
	}
	xlog_info("listening on %s (local transport%s)", path, xen ? "; control requests" : "");
	struct xgpu_xenbus *xb = NULL;
	if (xen) {
		xb = xgpu_xenbus_open(&host, err, sizeof err);
		int xfds[2];
		int nx = xb ? xgpu_xenbus_fds(xb, xfds) : 0;
		struct epoll_event xe = {.events = EPOLLIN, .data.ptr = &xb};
		for (int i = 0; i < nx; i++)
			if (epoll_ctl(ep, EPOLL_CTL_ADD, xfds[i], &xe) < 0) {
				snprintf(err, sizeof err, "Xen transport: cannot watch its fds: %s",
					 strerror(errno));
				xgpu_xenbus_close(xb);
				xb = NULL;
				break;
			}
		if (!xb) {
			xlog_err("%s", err);
			xgpu_local_close(listener);
			unlink(path);
			xgpud_shutdown(&d, false);
			return 1;
		}
		xlog_info("Xen transport: serving vgpu devices under %s%s", XGPU_XS_BACKEND_ROOT,
			  xgpu_xen_stub_selected() ? " (xgpu-xenstub)" : "");
		xgpu_xenbus_process(xb);
	}

	/* After detaching (threads do not survive the fork) and with the
	 * signals blocked (they go to the main loop's signalfd). */
	struct xgpu_remote_listener *remote = NULL;
	struct xgpu_remote_auth auth = {.psk_file = d.o.remote_psk,
					.cert_file = d.o.remote_cert,
					.key_file = d.o.remote_cert_key,
					.ca_file = d.o.remote_ca,
					.zerocopy = d.o.remote_zerocopy};
	if (d.o.remote_listen) {
		remote = xgpu_remote_listen(d.o.remote_listen, &auth, path, err, sizeof err);
		if (!remote) {
			xlog_err("%s", err);
			xgpu_local_close(listener);
			unlink(path);
			xgpud_shutdown(&d, false);
			return 1;
		}
		char keys[64] = "";
		if (d.o.remote_psk)
			snprintf(keys, sizeof keys, "pre-shared keys of %u tenant%s",
				 xgpu_remote_key_count(remote),
				 xgpu_remote_key_count(remote) == 1 ? "" : "s");
		if (d.o.remote_psk || d.o.remote_cert)
			xlog_info("remote transport: listening on %s (TLS 1.3, %s%s%s, each its own domain "
				  "remote-IDENTITY)",
				  d.o.remote_listen, keys, *keys && d.o.remote_cert ? " and " : "",
				  d.o.remote_cert ? "certificates signed by the CA of --remote-ca" : "");
		else
			xlog_info(
			    "remote transport: listening on %s (PLAIN TCP: --remote-insecure, for tests "
			    "only%s)",
			    d.o.remote_listen, d.o.remote_zerocopy ? "; MSG_ZEROCOPY" : "");
	}

	int sfd = signalfd(-1, &mask, SFD_CLOEXEC);
	struct epoll_event se = {.events = EPOLLIN, .data.ptr = &sfd};
	if (sfd < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, sfd, &se) < 0) {
		xlog_err("cannot set up the main loop: %s", strerror(errno));
		return 1;
	}
	/* Ready: the socket listens and the loop below answers it at once. */
	char ready[320];
	snprintf(ready, sizeof ready, "READY=1\nSTATUS=listening on %s", path);
	if (xgpu_sd_notify(ready) < 0)
		xlog_warn("cannot notify the service manager at $NOTIFY_SOCKET: %s", strerror(errno));
	bool restart = false;
	uint64_t next_tick = 0;
	for (bool stop = false; !stop;) {
		struct epoll_event ev[16];
		/* Wake at least every 250 ms: connections that never said
		 * hello, the executors' kernel timeouts and idle ones. */
		int n = epoll_wait(ep, ev, 16, 250);
		if (n < 0 && errno != EINTR) {
			xlog_err("epoll_wait: %s", strerror(errno));
			break;
		}
		for (int i = 0; i < n; i++) {
			if (ev[i].data.ptr == &sfd) {
				struct signalfd_siginfo si;
				ssize_t got = read(sfd, &si, sizeof si);
				if (got == (ssize_t)sizeof si && si.ssi_signo == SIGHUP) {
					reload_credentials(remote, &auth);
					continue;
				}
				if (got == (ssize_t)sizeof si && si.ssi_signo == SIGUSR2) {
					xlog_info(
					    "signal %u: restarting in place; the executors go on serving",
					    si.ssi_signo);
					restart = true;
				} else if (got == (ssize_t)sizeof si) {
					xlog_info("signal %u: stopping", si.ssi_signo);
				}
				stop = true;
			} else if (ev[i].data.ptr == &xb) {
				xgpu_xenbus_process(xb);
			} else if (ev[i].data.ptr == &d.executors) {
				xgpu_executors_event(&d);
			} else if (xgpu_local_owns(listener, ev[i].data.ptr)) {
				xgpu_local_event(listener, ev[i].data.ptr);
			}
		}
		uint64_t now = xgpu_now_ns();
		if (now >= next_tick) {
			xgpu_local_expire(listener);
			xgpu_executors_tick(&d, now);
			xgpu_state_tick(&d, now, xgpu_executor_pid);
			next_tick = now + 250000000ull;
		}
	}
	xgpu_sd_notify(restart ? "RELOADING=1" : "STOPPING=1");
	xgpu_remote_close(remote);
	xgpu_local_close(listener);
	unlink(path);
	atomic_store(&d.stopping, true);
	xgpu_control_drain();
	xgpud_shutdown(&d, restart);
	/* After the executors closed every channel: their notices tidy xenstore. */
	if (!restart)
		xgpu_xenbus_close(xb);
	close(ep);
	close(sfd);
	xgpud_config_free(&conf);
	if (restart) {
		setenv("XGPU_REEXEC", "1", 1);
		execv(self, argv);
		xlog_err("cannot restart %s: %s; the executors go on serving until an xgpud starts", self,
			 strerror(errno));
		return 1;
	}
	xlog_info("stopped");
	return 0;
}
