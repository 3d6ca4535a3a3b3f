/* SPDX-License-Identifier: Apache-2.0 */
/* main.c - xgpu-executor: one domain's accelerator VCPU in a process of its
 * own, started by xgpud (never by hand: it expects xgpud's link on fd 3 and
 * its listening socket on fd 4, execlink.h).
 *
 * Start-up, in order: xgpud's START (the domain, the shared pages), the
 * driver (NVIDIA's libcuda.so.1 or xgpu's simulated one, which loads its
 * plugins in cuInit) and the GPU, then the sandbox (sandbox.h), then READY;
 * the poller serves the domain until xgpud stops
 * the executor or a fault ends its context. Exit status: 0 when stopped, 1
 * when it could not start, 3 after a fault (the domain's context failed; on
 * NVIDIA's driver the process can use the GPU no more).
 */
#include "fatbin.h"
#include "link.h"
#include "log.h"
#include "poller.h"
#include "fastclock.h"
#include "sandbox.h"
#include "util.h"

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#define XGPU_VERSION_STRING "0.1.0"
/* The fast clock's rate is measured over at least this: a clock reading's
 * own jitter (tens of ns) then errs by under 1e-4. */
#define FASTCLOCK_MIN_NS 2000000u

struct opts {
	const char *domain;
	const char *driver;
	const char *driver_kind;
	int log_level;
	long uid; /* -1: keep xgpud's */
	int sandbox; /* enum xgpu_sandbox_mode */
	uint64_t fatbin_inflate_limit; /* 0: fatbin.h's default */
};

static void usage(FILE *f)
{
	fprintf(f, "Usage: xgpu-executor --domain NAME --driver PATH --driver-kind cuda|sim [--log-level LEVEL]\n"
		   "One domain's accelerator VCPU for xgpud, which starts it with its link on fd %d and its\n"
		   "listening socket on fd %d; not meant to be run by hand.\n"
		   "\n"
		   "  --domain NAME          the domain it serves (for ps; xgpud's START names it)\n"
		   "  --driver PATH          the CUDA driver library to load\n"
		   "  --driver-kind KIND     cuda (NVIDIA's) or sim (xgpu's simulated driver)\n"
		   "  --log-level LEVEL      error, warn, info or debug (default info)\n"
		   "  --uid UID              run as UID (and gid UID) once the driver is loaded\n"
		   "  --sandbox MODE         enforce, log or off (default: enforce on sim, log on cuda)\n"
		   "  --fatbin-inflate-limit BYTES  most a module's compressed fatbin entries inflate to\n"
		   "  --help, --version\n",
		   XGPU_EXEC_FD_LINK, XGPU_EXEC_FD_LISTEN);
}

static int parse(int argc, char **argv, struct opts *o)
{
	static const struct option longopts[] = {
	    {"domain", required_argument, 0, 'd'},
	    {"driver", required_argument, 0, 'p'},
	    {"driver-kind", required_argument, 0, 'k'},
	    {"log-level", required_argument, 0, 'l'},
	    {"uid", required_argument, 0, 'u'},
	    {"help", no_argument, 0, 'h'},
	    {"fatbin-inflate-limit", required_argument, 0, 'f'},
	    {"version", no_argument, 0, 'V'},
	    {"sandbox", required_argument, 0, 's'},
	    {0, 0, 0, 0},
	};
	int c;
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 'd':
			o->domain = optarg;
			break;
		case 'p':
			o->driver = optarg;
			break;
		case 'k':
			o->driver_kind = optarg;
			break;
		case 'l':
			if ((o->log_level = xgpu_log_parse_level(optarg)) < 0) {
				fprintf(stderr, "xgpu-executor: --log-level %s: need error, warn, info or debug\n",
					optarg);
				return -1;
			}
			break;
		case 'u':
			if (xgpu_parse_long(optarg, 1, 4294967294l, &o->uid) < 0) {
				fprintf(stderr, "xgpu-executor: --uid %s: need a uid other than 0\n", optarg);
				return -1;
			}
			break;
		case 's':
			if ((o->sandbox = xgpu_sandbox_parse(optarg)) < 0) {
				fprintf(stderr, "xgpu-executor: --sandbox %s: need enforce, log or off\n", optarg);
				return -1;
			}
			break;
		case 'f':
			if (xgpu_parse_size(optarg, &o->fatbin_inflate_limit) < 0 ||
			    !o->fatbin_inflate_limit) {
				fprintf(stderr, "xgpu-executor: --fatbin-inflate-limit %s: need a size\n",
					optarg);
				return -1;
			}
			break;
		case 'h':
			usage(stdout);
			exit(0);
		case 'V':
			printf("xgpu-executor %s (xgpu protocol %u, executor link %u)\n", XGPU_VERSION_STRING,
			       XGPU_PROTO_VERSION, XGPU_EXEC_VERSION);
			exit(0);
		default:
			usage(stderr);
			return -1;
		}
	}
	if (!o->driver || !o->driver_kind || (strcmp(o->driver_kind, "cuda") && strcmp(o->driver_kind, "sim"))) {
		fprintf(stderr, "xgpu-executor: need --driver PATH and --driver-kind cuda|sim (xgpud starts it)\n");
		return -1;
	}
	return 0;
}

/* The driver is loaded and initialised (its files read, the simulated
 * one's plugins loaded) before the sandbox, which the simulated driver's
 * worker thread, where the guest's kernels run, inherits: it starts with the
 * first context. */
static int open_driver(struct xgpu_executor *x, const struct opts *o, char *err, size_t errlen)
{
	const char *path = o->driver;
	if (xgpu_driver_load(&x->drv, path, err, errlen) < 0)
		return -1;
	CUresult r = x->drv.cuInit(0);
	if (r != CUDA_SUCCESS) {
		snprintf(err, errlen, "%s: cuInit: %s", path, xgpu_driver_error_name(&x->drv, r));
		return -1;
	}
	x->drv.cuDriverGetVersion(&x->driver_version);
	int index = x->gpu.index;
	if (xgpu_driver_describe(&x->drv, index, &x->gpu) < 0) {
		snprintf(err, errlen, "%s has no GPU %d", path, index);
		return -1;
	}
	struct xgpu_sandbox sb = {.mode = (enum xgpu_sandbox_mode)o->sandbox,
				  .uid = o->uid,
				  .nvidia = !strcmp(o->driver_kind, "cuda"),
				  .driver_path = x->drv.path,
				  .domain = x->dom.name};
	return xgpu_sandbox_apply(&sb, err, errlen);
}

static int setup_domain(struct xgpu_domain *dom, char *err, size_t errlen)
{
	pthread_mutex_init(&dom->incoming_lock, NULL);
	pthread_mutex_init(&dom->marks_lock, NULL);
	xgpu_ratelimit_init(&dom->log_rl, 50, 10000);
	dom->epfd = epoll_create1(EPOLL_CLOEXEC);
	struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
	if (dom->epfd < 0 || epoll_ctl(dom->epfd, EPOLL_CTL_ADD, dom->wake_fd, &ev) < 0) {
		snprintf(err, errlen, "cannot create the poller's epoll: %s", strerror(errno));
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct opts o = {.log_level = XGPU_LOG_INFO, .uid = -1};
	if (parse(argc, argv, &o) < 0)
		return 2;
	signal(SIGPIPE, SIG_IGN);
	setvbuf(stderr, NULL, _IOLBF, 0);
	xgpu_log_init_relay((enum xgpu_log_level)o.log_level);
	/* The fatbin bound for this process's parser and, through the
	 * environment, for the simulated driver's own copy of it. */
	if (o.fatbin_inflate_limit) {
		char v[32];
		snprintf(v, sizeof v, "%llu", (unsigned long long)o.fatbin_inflate_limit);
		setenv(XGPU_FATBIN_INFLATE_ENV, v, 1);
		xgpu_fatbin_set_max_inflated(o.fatbin_inflate_limit);
	} else {
		unsetenv(XGPU_FATBIN_INFLATE_ENV); /* xgpud's own environment does not set it */
	}

	/* The fast clock's rate is measured across the start-up below
	 * (xgpu_link_run waits for xgpud), before the sandbox hides sysfs. */
	xgpu_fastclock_start(true);
	static struct xgpu_executor x;
	char err[512];
	if (xgpu_link_start(&x, err, sizeof err) < 0 || setup_domain(&x.dom, err, sizeof err) < 0 ||
	    open_driver(&x, &o, err, sizeof err) < 0) {
		xlog_err("domain %s: the executor cannot start: %s", x.dom.name[0] ? x.dom.name : "?", err);
		return 1;
	}
	char what[640];
	snprintf(what, sizeof what, "%s driver %s, version %d.%d, GPU %d (%.80s)",
		 !strcmp(o.driver_kind, "sim") ? "simulated" : "NVIDIA's", x.drv.path, x.driver_version / 1000,
		 x.driver_version % 1000 / 10, x.gpu.index, x.gpu.name);
	if (xgpu_link_run(&x, what, err, sizeof err) < 0) {
		xlog_err("domain %s: the executor cannot start: %s", x.dom.name, err);
		return 1;
	}
	xgpu_fastclock_finish(FASTCLOCK_MIN_NS);
	xlog_debug("domain %s: per-call timing by %s", x.dom.name,
		   xgpu_fastclock.tsc ? "the TSC" : "CLOCK_MONOTONIC");
	int rc = xgpu_poller_run(&x.dom);
	xgpu_link_stop(&x);
	xgpu_objtab_free(&x.dom.objs);
	xgpu_memmap_free(&x.dom.mem);
	free(x.dom.ipc);
	xgpu_driver_unload(&x.drv);
	return rc;
}
