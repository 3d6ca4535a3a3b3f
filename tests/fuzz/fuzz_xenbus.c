/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz_xenbus.c - libFuzzer harness for xgpud's xenbus side
 * (backend/transport/xenbus.c) over the in-memory Xen (tools/xenstub,
 * in-process): a real struct xgpud (sim executors: xgpu-executor processes
 * beside the harness, stopped when it exits) adopts a vgpu device of
 * guest domain 5, attached as `xl-gpu attach` does, and the input is a script
 * of what the guest (and the toolstack) then do to xenstore, with xgpud's
 * watch handling run between every two steps. At the end the domain dies and
 * xgpud must have dropped it and its backend directory within 2 s.
 *
 * Script lines ("\n"-separated; N is one digit, a channel number):
 *   f KEY=VAL     the guest writes its device directory's KEY
 *   c N KEY=VAL   the guest writes channel/N/KEY
 *   r KEY         the guest removes KEY (under its device directory)
 *   b KEY=VAL     the toolstack writes the backend device directory's KEY
 *   t KEY=VAL     the toolstack writes KEY under /local/domain/0/backend/vgpu
 *   S N           the guest shares a region for channel N as the frontend
 *                 does and writes ring-ref, ring-pages, event-channel, task
 *                 and protocol (not state)
 *   k N           the guest kicks channel N's event channel
 *   x N           the guest process of channel N dies (unshares the root page)
 *   p             wait up to 5 ms for xgpud to act
 *   d             the domain dies now */
#include "daemon.h"
#include "executors.h"
#include "log.h"
#include "proto.h"
#include "shm.h"
#include "util.h"
#include "xenif.h"
#include "xenvgpu.h"
#include "transport/xenbus.h"
#include "../../tools/xenstub/xenstub.h"

#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define DOMID 5u
#define CHANNELS 10u
#define BE_DEV XGPU_XS_BACKEND_ROOT "/5/0"
#define FE_DEV "/local/domain/5/device/vgpu/0"

static struct {
	char dir[256], sock[300];
	struct xgpu_xenstub *stub;
	struct xgpu_xs *xs0;
	struct xgpud d;
	struct xgpu_transport_host host;
	struct xgpu_xenbus *xb;
} T;

struct channel {
	bool shared;
	void *region, *dirs;
	struct xgpu_xen_root *root;
	uint32_t npages, refs[64], dirref, rootref;
	int port;
};

struct guest {
	struct xgpu_xs *xs;
	struct xgpu_evtchn *evt;
	struct xgpu_gntshr *gs;
	bool dead;
	bool be_written_dead; /* the toolstack wrote backend keys after the death */
	struct channel ch[CHANNELS];
};

static void pump(int ms)
{
	int fds[2];
	xgpu_xenbus_fds(T.xb, fds);
	struct pollfd p[3] = {{.fd = fds[0], .events = POLLIN},
			      {.fd = fds[1], .events = POLLIN},
			      {.fd = xgpu_executors_fd(&T.d), .events = POLLIN}};
	poll(p, 3, ms);
	/* As xgpud's main loop: the executors' links and exits, then xenstore. */
	xgpu_executors_event(&T.d);
	xgpu_executors_tick(&T.d, xgpu_now_ns());
	xgpu_xenbus_process(T.xb);
}

/* The executors stop, and the stub's socket and its folder (in $TMPDIR,
 * else /tmp) go when the fuzzer exits (at the end of -max_total_time, -runs
 * or a seed replay): every run used to leave one in /tmp. A crash exits
 * without this. */
static void remove_socket_dir(void)
{
	if (T.d.executors)
		xgpu_executors_stop_all(&T.d, "the fuzzer exits");
	char exec_dir[320], exec_sock[340];
	snprintf(exec_dir, sizeof exec_dir, "%.200s/xgpud.sock.exec", T.dir);
	snprintf(exec_sock, sizeof exec_sock, "%s/%u", exec_dir, DOMID);
	unlink(exec_sock);
	rmdir(exec_dir);
	unlink(T.sock);
	rmdir(T.dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	char err[512];
	const char *tmp = getenv("TMPDIR");
	/* The socket's path must fit sun_path (108 bytes). */
	if (!tmp || !*tmp || strlen(tmp) > 64)
		tmp = "/tmp";
	snprintf(T.dir, sizeof T.dir, "%s/fuzz_xenbus.XXXXXX", tmp);
	if (!mkdtemp(T.dir)) {
		fprintf(stderr, "fuzz_xenbus: mkdtemp %s: %s\n", T.dir, strerror(errno));
		exit(1);
	}
	snprintf(T.sock, sizeof T.sock, "%s/xs.sock", T.dir);
	atexit(remove_socket_dir);
	T.stub = xgpu_xenstub_start(T.sock, err, sizeof err);
	if (!T.stub) {
		fprintf(stderr, "fuzz_xenbus: xenstub: %s\n", err);
		exit(1);
	}
	setenv("XGPU_XEN_STUB", T.sock, 1);
	setenv("XGPU_SIM_SPEED", "1000000", 0);
	setenv("XGPU_SIM_WATCHDOG_MS", "100", 0);
	unsetenv("XGPU_XEN_DOMID");
	T.xs0 = xgpu_xs_open_stub(T.sock, 0, err, sizeof err);
	xgpu_log_init("fuzz_xenbus", getenv("FUZZ_LOG") ? XGPU_LOG_DEBUG : XGPU_LOG_ERROR, false);
	T.d.o = (struct xgpud_opts){
	    .transport = "xen",
	    .executor = "sim",
	    .policy = "rr",
	    .tick_ms = 10,
	    .log_level = getenv("FUZZ_LOG") ? XGPU_LOG_DEBUG : XGPU_LOG_ERROR,
	    .mem_limit = 256ull << 20,
	    .spin_ns = 0,
	    .stall_timeout_s = 1,
	    .max_channels_per_domain = 8,
	    .max_domains_per_uid = 16,
	    .max_domains = 16,
	    .pinned_limit = 4ull << 20,
	};
	/* The executors' sockets go beside it (T.dir). */
	snprintf(T.d.socket_path, sizeof T.d.socket_path, "%.200s/xgpud.sock", T.dir);
	if (!T.xs0 || xgpud_init(&T.d, err, sizeof err) < 0) {
		fprintf(stderr, "fuzz_xenbus: xgpud_init: %s\n", err);
		exit(1);
	}
	xgpud_transport_host(&T.d, &T.host);
	T.xb = xgpu_xenbus_open(&T.host, err, sizeof err);
	if (!T.xb) {
		fprintf(stderr, "fuzz_xenbus: xenbus: %s\n", err);
		exit(1);
	}
	return 0;
}

static void wr(struct xgpu_xs *xs, const char *path, const char *val)
{
	(void)xs->ops->write(xs, 0, path, val, (unsigned)strlen(val));
}

static void wrf(struct xgpu_xs *xs, const char *path, const char *fmt, unsigned v)
{
	char val[32];
	snprintf(val, sizeof val, fmt, v);
	wr(xs, path, val);
}

/* As `xl-gpu attach` does: both directories, each side owning its own. */
static void attach(void)
{
	struct xgpu_xs *xs = T.xs0;
	xs->ops->mkdir(xs, 0, FE_DEV);
	struct xgpu_xs_perm fp[1] = {{DOMID, XGPU_XS_PERM_NONE}};
	xs->ops->set_perms(xs, 0, FE_DEV, fp, 1);
	wr(xs, FE_DEV "/backend", BE_DEV);
	wr(xs, FE_DEV "/backend-id", "0");
	wr(xs, FE_DEV "/state", "1");
	xs->ops->mkdir(xs, 0, BE_DEV);
	struct xgpu_xs_perm bp[2] = {{0, XGPU_XS_PERM_NONE}, {DOMID, XGPU_XS_PERM_READ}};
	xs->ops->set_perms(xs, 0, BE_DEV, bp, 2);
	wr(xs, BE_DEV "/frontend", FE_DEV);
	wrf(xs, BE_DEV "/frontend-id", "%u", DOMID);
	wr(xs, BE_DEV "/credit", "512");
	wr(xs, BE_DEV "/state", "1");
}

/* The frontend's sharing of a channel region (common/xenif users). */
static void share(struct guest *g, unsigned n)
{
	struct channel *c = &g->ch[n];
	if (c->shared || g->dead)
		return;
	struct xgpu_shm_params sp = {.nr_slots = 8, .data_size = 64u << 10};
	size_t size = xgpu_shm_region_size(&sp);
	c->npages = (uint32_t)(size / XGPU_XEN_PAGE_SIZE);
	c->region = g->gs->ops->share_pages(g->gs, 0, c->npages, c->refs, true);
	c->dirs = g->gs->ops->share_pages(g->gs, 0, 1, &c->dirref, false);
	c->port = g->evt->ops->bind_unbound_port(g->evt, 0);
	c->root = c->port > 0
		      ? g->gs->ops->share_page_notify(g->gs, 0, true, (int32_t)XGPU_XEN_ROOT_FE_ALIVE_OFFSET,
						      (uint32_t)c->port, &c->rootref)
		      : NULL;
	if (!c->region || !c->dirs || !c->root)
		return;
	c->shared = true;
	xgpu_shm_init(c->region, size, &sp);
	memcpy(c->dirs, c->refs, c->npages * sizeof(uint32_t));
	c->root->magic = XGPU_XEN_ROOT_MAGIC;
	c->root->version = XGPU_PROTO_VERSION;
	c->root->npages = c->npages;
	c->root->ndir = 1;
	c->root->fe_alive = 1;
	c->root->hello = (struct xgpu_hello){
	    .magic = XGPU_PROTO_MAGIC, .version = XGPU_PROTO_VERSION, .kind = XGPU_CONN_CHANNEL, .task = 77};
	c->root->dir_refs[0] = c->dirref;
	char path[128];
	snprintf(path, sizeof path, FE_DEV "/channel/%u/ring-ref", n);
	wrf(g->xs, path, "%u", c->rootref);
	snprintf(path, sizeof path, FE_DEV "/channel/%u/ring-pages", n);
	wrf(g->xs, path, "%u", c->npages);
	snprintf(path, sizeof path, FE_DEV "/channel/%u/event-channel", n);
	wrf(g->xs, path, "%u", (unsigned)c->port);
	snprintf(path, sizeof path, FE_DEV "/channel/%u/task", n);
	wr(g->xs, path, "77");
	snprintf(path, sizeof path, FE_DEV "/channel/%u/protocol", n);
	wrf(g->xs, path, "%u", XGPU_PROTO_VERSION);
}

/* xgpud dropped the domain and swept its backend directory; a directory
 * the toolstack itself wrote to after the death is the toolstack's (found
 * by fuzz_xenbus: the harness used to count its own writes as xgpud's). */
static bool gone(const struct guest *g)
{
	unsigned len;
	char *v = g->be_written_dead ? NULL : T.xs0->ops->read(T.xs0, 0, BE_DEV "/state", &len);
	free(v);
	pthread_mutex_lock(&T.d.domains_lock);
	struct xgpud_domain *dom = T.d.domains;
	while (dom && !(dom->xen && dom->domid == DOMID))
		dom = dom->next;
	pthread_mutex_unlock(&T.d.domains_lock);
	return !v && !dom;
}

/* One script line: op, then its text (NUL-terminated). */
static void step(struct guest *g, char op, char *arg)
{
	char path[512];
	unsigned n = arg[0] >= '0' && arg[0] <= '9' ? (unsigned)(arg[0] - '0') : 0;
	char *eq = strchr(arg, '=');
	const char *key = arg, *val = "";
	if (eq) {
		*eq = '\0';
		val = eq + 1;
	}
	switch (op) {
	case 'f':
		snprintf(path, sizeof path, FE_DEV "/%s", key);
		wr(g->xs, path, val);
		break;
	case 'c':
		snprintf(path, sizeof path, FE_DEV "/channel/%u/%s", n,
			 key[0] && key[1] == ' ' ? key + 2 : key);
		wr(g->xs, path, val);
		break;
	case 'r':
		snprintf(path, sizeof path, FE_DEV "/%s", key);
		g->xs->ops->rm(g->xs, 0, path);
		break;
	case 'b':
		snprintf(path, sizeof path, BE_DEV "/%s", key);
		wr(T.xs0, path, val);
		g->be_written_dead |= g->dead;
		break;
	case 't':
		snprintf(path, sizeof path, XGPU_XS_BACKEND_ROOT "/%s", key);
		wr(T.xs0, path, val);
		break;
	case 'S':
		share(g, n);
		break;
	case 'k':
		if (g->ch[n].shared && !g->dead)
			g->evt->ops->notify(g->evt, (uint32_t)g->ch[n].port);
		break;
	case 'x':
		if (g->ch[n].shared && !g->dead) {
			g->gs->ops->unshare(g->gs, g->ch[n].root, 1);
			g->ch[n].root = NULL;
		}
		break;
	case 'p':
		pump(5);
		break;
	case 'd':
		if (!g->dead)
			xgpu_xenstub_release(T.stub, DOMID);
		g->dead = true;
		break;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 4096)
		return 0;
	char err[256];
	if (xgpu_xenstub_introduce(T.stub, DOMID, "fuzzguest") < 0)
		abort(); /* the last input's domain is still there */
	struct guest g;
	memset(&g, 0, sizeof g);
	g.xs = xgpu_xs_open_stub(T.sock, DOMID, err, sizeof err);
	g.evt = xgpu_evtchn_open_stub(T.sock, DOMID, err, sizeof err);
	g.gs = xgpu_gntshr_open_stub(T.sock, DOMID, err, sizeof err);
	if (!g.xs || !g.evt || !g.gs)
		abort();
	attach();
	pump(0);

	char *text = malloc(size + 1);
	memcpy(text, data, size);
	text[size] = '\0';
	for (char *line = text, *next; line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		if (line[0] && strlen(line) < 400) {
			char *arg = line[1] == ' ' ? line + 2 : line + 1;
			step(&g, line[0], arg);
		}
		pump(0);
	}
	free(text);

	/* The domain dies; xgpud must forget it. */
	if (!g.dead)
		xgpu_xenstub_release(T.stub, DOMID);
	/* 2 s by the clock: a pump returns early whenever something is ready. */
	uint64_t deadline = xgpu_now_ns() + 2000000000ull;
	while (!gone(&g) && xgpu_now_ns() < deadline)
		pump(10);
	if (!gone(&g))
		abort(); /* the domain or its backend directory outlived it */
	if (g.be_written_dead)
		T.xs0->ops->rm(T.xs0, 0, BE_DEV);
	/* The stub ended the guest's grants and ports with the domain; the
	 * toolstack's policy keys go too, so the next input starts alike. */
	T.xs0->ops->rm(T.xs0, 0, XGPU_XS_POLICY);
	T.xs0->ops->rm(T.xs0, 0, XGPU_XS_BACKEND_ROOT "/gpu");
	g.gs->ops->close(g.gs);
	g.evt->ops->close(g.evt);
	g.xs->ops->close(g.xs);
	return 0;
}
