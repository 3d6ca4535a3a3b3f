/* SPDX-License-Identifier: Apache-2.0 */
/* xenliar.c - a lying guest for the vgpu split device: runs as a domU (on
 * xgpu-xenstub with XGPU_XEN_STUB and XGPU_XEN_DOMID, or on real Xen), walks
 * the channel handshake of xenvgpu.h through xenif.h directly and lies in
 * one way per mode. It prints what it did and how xgpud reacted (the
 * backend's channel state and error key) and exits 0 only when xgpud
 * refused or closed the channel with an error, 1 when it did not, 2 when
 * the test could not be set up.
 *
 *   xenliar MODE      bad-ref-count huge-ref-count foreign-port out-of-order
 *                     rewrite-ring-ref vanish bad-protocol
 *   xenliar ls PATH   (for tests) the children of a xenstore node
 */
#include "proto.h"
#include "shm.h"
#include "util.h"
#include "xenif.h"
#include "xenvgpu.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define DEV_DIR "device/vgpu/0"

static int timeout_ms = 10000;

struct liar {
	struct xgpu_xs *xs;
	struct xgpu_evtchn *ev;
	struct xgpu_gntshr *gs;
	uint32_t domid;
	char be_dev[96];
	unsigned n;
	char fe_dir[64];
	char be_chan[128];
	int port;
	void *pages;
	unsigned npages;
	uint32_t *dirs;
	unsigned ndir;
	struct xgpu_xen_root *root;
	uint32_t root_ref;
};

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("xenliar: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(2);
}

static int read_state(struct liar *l, const char *path)
{
	uint64_t v;
	if (xgpu_xs_read_u64(l->xs, 0, path, 255, &v) < 0)
		return -1;
	return (int)v;
}

static bool exists(struct liar *l, const char *path)
{
	unsigned len;
	char *v = l->xs->ops->read(l->xs, 0, path, &len);
	free(v);
	return v != NULL;
}

/* Polls path until its state is in mask (bit per state; bit 31: absent). */
static int wait_state(struct liar *l, const char *path, unsigned mask, int ms)
{
	uint64_t until = xgpu_now_ns() + (uint64_t)ms * 1000000u;
	for (;;) {
		int s = read_state(l, path);
		if (s < 0 ? (mask & (1u << 31)) : (s < 31 && (mask & (1u << s))))
			return s;
		if (xgpu_now_ns() >= until)
			return s;
		usleep(20000);
	}
}

static void open_handles(struct liar *l)
{
	char err[256];
	if (!(l->xs = xgpu_xs_open(err, sizeof err)) || !(l->ev = xgpu_evtchn_open(err, sizeof err)) ||
	    !(l->gs = xgpu_gntshr_open(err, sizeof err)))
		die("%s", err);
	uint64_t v;
	if (xgpu_xs_read_u64(l->xs, 0, "domid", XGPU_XEN_DOMID_MAX, &v) < 0)
		die("cannot read domid: %s", strerror(errno));
	l->domid = (uint32_t)v;
	snprintf(l->be_dev, sizeof l->be_dev, XGPU_XS_BACKEND_ROOT "/%u/0", l->domid);
	char path[160];
	snprintf(path, sizeof path, "%s/state", l->be_dev);
	int s = wait_state(l, path, 1u << XGPU_XB_INITWAIT | 1u << XGPU_XB_CONNECTED, timeout_ms);
	if (s != XGPU_XB_INITWAIT && s != XGPU_XB_CONNECTED)
		die("domain %u: %s is %d; attach the device and start xgpud first", l->domid, path, s);
	l->port = -1;
}

/* Claims the lowest channel number free on both sides with state. */
static void claim(struct liar *l, int state)
{
	char be[128];
	snprintf(be, sizeof be, "%s/channel", l->be_dev);
	for (int attempt = 0; attempt < 100; attempt++) {
		xgpu_xs_tx tx = l->xs->ops->transaction_start(l->xs);
		if (!tx)
			die("transaction_start: %s", strerror(errno));
		bool used[XGPU_XEN_MAX_CHANNELS] = {false};
		const char *dirs[2] = {DEV_DIR "/channel", be};
		for (int d = 0; d < 2; d++) {
			unsigned num = 0;
			char **names = l->xs->ops->directory(l->xs, tx, dirs[d], &num);
			for (unsigned i = 0; names && i < num; i++) {
				long v;
				if (xgpu_parse_long(names[i], 0, XGPU_XEN_MAX_CHANNELS - 1, &v) == 0)
					used[v] = true;
			}
			free(names);
		}
		unsigned n = 0;
		while (n < XGPU_XEN_MAX_CHANNELS && used[n])
			n++;
		if (n == XGPU_XEN_MAX_CHANNELS)
			die("no free channel");
		char path[64];
		snprintf(path, sizeof path, DEV_DIR "/channel/%u/state", n);
		if (xgpu_xs_printf(l->xs, tx, path, "%d", state) < 0)
			die("write %s: %s", path, strerror(errno));
		if (l->xs->ops->transaction_end(l->xs, tx, false) == 0) {
			l->n = n;
			snprintf(l->fe_dir, sizeof l->fe_dir, DEV_DIR "/channel/%u", n);
			snprintf(l->be_chan, sizeof l->be_chan, "%s/channel/%u", l->be_dev, n);
			printf("claimed channel %u (state %d)\n", n, state);
			return;
		}
		if (errno != EAGAIN)
			die("transaction_end: %s", strerror(errno));
	}
	die("xenstore stays busy");
}

static void fe_write(struct liar *l, const char *key, const char *fmt, unsigned long long v)
{
	char path[128];
	snprintf(path, sizeof path, "%s/%s", l->fe_dir, key);
	if (xgpu_xs_printf(l->xs, 0, path, fmt, v) < 0)
		die("write %s: %s", path, strerror(errno));
	printf("wrote %s = ", path);
	printf(fmt, v);
	printf("\n");
}

/* An honest channel region (a valid ring layout) with its directories and
 * a root page carrying the unmap notification. */
static void share_region(struct liar *l)
{
	struct xgpu_shm_params p = {.nr_slots = 64, .data_size = XGPU_SHM_MIN_DATA};
	size_t size = xgpu_shm_region_size(&p);
	l->npages = (unsigned)((size + XGPU_XEN_PAGE_SIZE - 1) / XGPU_XEN_PAGE_SIZE);
	l->ndir = (l->npages + XGPU_XEN_REFS_PER_DIR - 1) / XGPU_XEN_REFS_PER_DIR;
	uint32_t *refs = calloc(l->npages, sizeof *refs);
	uint32_t dref[8];
	if (!refs || l->ndir > 8)
		die("out of memory");
	if (l->port < 0 && (l->port = l->ev->ops->bind_unbound_port(l->ev, 0)) < 0)
		die("bind_unbound_port(0): %s", strerror(errno));
	if (!(l->pages = l->gs->ops->share_pages(l->gs, 0, l->npages, refs, true)) ||
	    !(l->dirs = l->gs->ops->share_pages(l->gs, 0, l->ndir, dref, true)) ||
	    !(l->root = l->gs->ops->share_page_notify(l->gs, 0, true, XGPU_XEN_ROOT_FE_ALIVE_OFFSET, l->port,
						      &l->root_ref)))
		die("share_pages: %s", strerror(errno));
	memcpy(l->dirs, refs, l->npages * sizeof *refs);
	free(refs);
	if (xgpu_shm_init(l->pages, (size_t)l->npages * XGPU_XEN_PAGE_SIZE, &p) < 0)
		die("xgpu_shm_init failed");
	l->root->magic = XGPU_XEN_ROOT_MAGIC;
	l->root->version = XGPU_PROTO_VERSION;
	l->root->npages = l->npages;
	l->root->ndir = l->ndir;
	l->root->fe_alive = 1;
	l->root->hello = (struct xgpu_hello){.magic = XGPU_PROTO_MAGIC,
					     .version = XGPU_PROTO_VERSION,
					     .kind = XGPU_CONN_CHANNEL,
					     .runtime_version = 13000,
					     .task = (uint32_t)getpid()};
	memcpy(l->root->dir_refs, dref, l->ndir * sizeof *dref);
	printf("shared %u region pages, %u directory page(s), root ref %u; port %d offered to dom0\n",
	       l->npages, l->ndir, l->root_ref, l->port);
}

struct keys {
	unsigned long long ring_ref, ring_pages, port;
	const char *protocol;
};

static void publish(struct liar *l, const struct keys *k)
{
	fe_write(l, "ring-ref", "%llu", k->ring_ref);
	fe_write(l, "ring-pages", "%llu", k->ring_pages);
	fe_write(l, "event-channel", "%llu", k->port);
	fe_write(l, "task", "%llu", (unsigned long long)getpid());
	char path[128];
	snprintf(path, sizeof path, "%s/protocol", l->fe_dir);
	if (xgpu_xs_printf(l->xs, 0, path, "%s", k->protocol) < 0)
		die("write %s: %s", path, strerror(errno));
	printf("wrote %s = %s\n", path, k->protocol);
	fe_write(l, "state", "%llu", XGPU_XB_INITIALISED);
}

static struct keys honest_keys(struct liar *l)
{
	static char proto[16];
	snprintf(proto, sizeof proto, "%u", XGPU_PROTO_VERSION);
	return (struct keys){l->root_ref, l->npages, (unsigned)l->port, proto};
}

static void wait_initwait(struct liar *l)
{
	char path[160];
	snprintf(path, sizeof path, "%s/state", l->be_chan);
	int s = wait_state(l, path, 1u << XGPU_XB_INITWAIT | 1u << XGPU_XB_CLOSED, timeout_ms);
	if (s != XGPU_XB_INITWAIT)
		die("%s is %d, not InitWait", path, s);
}

/* Reports the backend's reaction; true when it refused or closed the
 * channel with an error key. With ack_ok, a Connected answer whose ack
 * refuses also counts. */
static bool reaction(struct liar *l, bool ack_ok)
{
	char path[160], epath[160];
	snprintf(path, sizeof path, "%s/state", l->be_chan);
	snprintf(epath, sizeof epath, "%s/error", l->be_chan);
	/* Not "absent": the backend's directory may not exist yet, and it
	 * goes only after ours does. */
	unsigned mask = 1u << XGPU_XB_CLOSING | 1u << XGPU_XB_CLOSED;
	if (ack_ok)
		mask |= 1u << XGPU_XB_CONNECTED;
	int s = wait_state(l, path, mask, timeout_ms);
	unsigned len = 0;
	char *e = l->xs->ops->read(l->xs, 0, epath, &len);
	printf("backend: %s = %d, error = %s%s%s\n", path, s, e ? "\"" : "", e ? e : "(none)", e ? "\"" : "");
	bool ok = (s == XGPU_XB_CLOSING || s == XGPU_XB_CLOSED) && e && len > 0;
	if (ack_ok && s == XGPU_XB_CONNECTED && l->root) {
		struct xgpu_hello_ack ack;
		memcpy(&ack, &l->root->ack, sizeof ack);
		ack.message[sizeof ack.message - 1] = '\0';
		printf("backend: ack status %d version %u message \"%s\"\n", ack.status, ack.version,
		       ack.message);
		ok = ack.magic == XGPU_PROTO_MAGIC && ack.status != 0;
	}
	free(e);
	return ok;
}

/* Leaves as the ABI asks: Closed, our directory removed, then xgpud
 * removes its own. */
static void leave(struct liar *l)
{
	char path[160];
	snprintf(path, sizeof path, "%s/state", l->fe_dir);
	xgpu_xs_printf(l->xs, 0, path, "%d", XGPU_XB_CLOSED);
	l->xs->ops->rm(l->xs, 0, l->fe_dir);
	snprintf(path, sizeof path, "%s/state", l->be_chan);
	int s = wait_state(l, path, 1u << 31, 3000);
	printf("left: %s %s\n", l->be_chan, s < 0 ? "removed by xgpud" : "still there");
	if (l->root)
		l->gs->ops->unshare(l->gs, l->root, 1);
	if (l->dirs)
		l->gs->ops->unshare(l->gs, l->dirs, l->ndir);
	if (l->pages)
		l->gs->ops->unshare(l->gs, l->pages, l->npages);
	l->ev->ops->close(l->ev);
	l->gs->ops->close(l->gs);
	l->xs->ops->close(l->xs);
}

static bool handshake_to_initwait(struct liar *l)
{
	claim(l, XGPU_XB_INITIALISING);
	wait_initwait(l);
	share_region(l);
	return true;
}

static bool mode_ref_count(struct liar *l, unsigned long long pages)
{
	handshake_to_initwait(l);
	struct keys k = honest_keys(l);
	if (!pages) /* one more than the root page describes */
		pages = l->npages + 1ull;
	k.ring_pages = pages;
	printf("lie: ring-pages %llu, root page says npages %u\n", pages, l->npages);
	publish(l, &k);
	return reaction(l, false);
}

static bool mode_foreign_port(struct liar *l)
{
	handshake_to_initwait(l);
	uint32_t other = l->domid == 1 ? 2 : 1;
	int fp = l->ev->ops->bind_unbound_port(l->ev, other);
	if (fp < 0) {
		fp = l->port + 17;
		printf("lie: publish port %d, which this domain never allocated\n", fp);
	} else {
		printf("lie: publish port %d, offered to domain %u and not to dom0\n", fp, other);
	}
	struct keys k = honest_keys(l);
	k.port = (unsigned)fp;
	publish(l, &k);
	return reaction(l, false);
}

static bool mode_out_of_order(struct liar *l)
{
	claim(l, XGPU_XB_INITIALISING);
	printf("lie: Connected at once, without waiting for the backend's InitWait\n");
	fe_write(l, "state", "%llu", XGPU_XB_CONNECTED);
	return reaction(l, false);
}

static bool mode_bad_protocol(struct liar *l)
{
	handshake_to_initwait(l);
	struct keys k = honest_keys(l);
	k.protocol = "999";
	printf("lie: protocol 999 (this build speaks %u)\n", XGPU_PROTO_VERSION);
	publish(l, &k);
	return reaction(l, true);
}

static bool mode_rewrite(struct liar *l)
{
	handshake_to_initwait(l);
	struct keys k = honest_keys(l);
	publish(l, &k);
	char path[160];
	snprintf(path, sizeof path, "%s/state", l->be_chan);
	int s = wait_state(l, path, 1u << XGPU_XB_CONNECTED | 1u << XGPU_XB_CLOSED | 1u << 31, timeout_ms);
	if (s != XGPU_XB_CONNECTED) {
		printf("backend did not accept the honest handshake: %s = %d\n", path, s);
		return false;
	}
	if (l->root->ack.status != 0) {
		printf("backend refused the honest handshake in its ack (status %d)\n", l->root->ack.status);
		return false;
	}
	fe_write(l, "state", "%llu", XGPU_XB_CONNECTED);
	usleep(200000);
	uint32_t other;
	void *extra = l->gs->ops->share_pages(l->gs, 0, 1, &other, true);
	if (!extra)
		die("share_pages: %s", strerror(errno));
	printf("lie: ring-ref rewritten after Connected\n");
	fe_write(l, "ring-ref", "%llu", other);
	bool ok = reaction(l, false);
	l->gs->ops->unshare(l->gs, extra, 1);
	return ok;
}

/* A child walks the handshake to Initialised and exits; the parent, with
 * its own handles, checks that xgpud closes the dead channel. */
static bool mode_vanish(void)
{
	int fds[2];
	if (pipe(fds) < 0)
		die("pipe: %s", strerror(errno));
	fflush(stdout);
	pid_t pid = fork();
	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (pid == 0) {
		struct liar c = {0};
		close(fds[0]);
		open_handles(&c);
		handshake_to_initwait(&c);
		struct keys k = honest_keys(&c);
		publish(&c, &k);
		printf("lie: process %d exits right after Initialised\n", (int)getpid());
		fflush(stdout);
		if (write(fds[1], &c.n, sizeof c.n) != sizeof c.n)
			_exit(2);
		_exit(0);
	}
	close(fds[1]);
	unsigned n;
	ssize_t got = read(fds[0], &n, sizeof n);
	int st;
	waitpid(pid, &st, 0);
	close(fds[0]);
	if (got != sizeof n || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		die("the vanishing child failed");
	struct liar l = {0};
	open_handles(&l);
	l.n = n;
	snprintf(l.fe_dir, sizeof l.fe_dir, DEV_DIR "/channel/%u", n);
	snprintf(l.be_chan, sizeof l.be_chan, "%s/channel/%u", l.be_dev, n);
	char fe_state[96], be_state[160];
	snprintf(fe_state, sizeof fe_state, "%s/state", l.fe_dir);
	snprintf(be_state, sizeof be_state, "%s/state", l.be_chan);
	uint64_t until = xgpu_now_ns() + (uint64_t)timeout_ms * 1000000u;
	bool fe = true, be = true;
	int s = -1;
	while (xgpu_now_ns() < until) {
		fe = exists(&l, fe_state);
		s = read_state(&l, be_state);
		be = s >= 0;
		if (!fe && !be)
			break;
		usleep(20000);
	}
	bool ok;
	if (!fe && !be) {
		printf("backend: removed %s and %s after the process died\n", l.fe_dir, l.be_chan);
		ok = true;
	} else {
		/* xgpud may have tried to map the grants after they were gone:
		 * then a refusal with an error is right too. */
		ok = reaction(&l, false);
		printf("backend: %s %s, %s %s\n", l.fe_dir, fe ? "still there" : "removed", l.be_chan,
		       be ? "still there" : "removed");
		if (be && s != XGPU_XB_CLOSED)
			ok = false;
	}
	leave(&l);
	return ok;
}

/* For tests: the children of path, one a line, or "absent" (exit 1). */
static int list(const char *path)
{
	char err[256];
	struct xgpu_xs *xs = xgpu_xs_open(err, sizeof err);
	if (!xs)
		die("%s", err);
	unsigned num = 0;
	char **names = xs->ops->directory(xs, 0, path, &num);
	if (!names) {
		int e = errno;
		xs->ops->close(xs);
		if (e != ENOENT)
			die("%s: %s", path, strerror(e));
		printf("absent\n");
		return 1;
	}
	for (unsigned i = 0; i < num; i++)
		printf("%s\n", names[i]);
	free(names);
	xs->ops->close(xs);
	return 0;
}

/* For tests: a toolstack's stray write (path = value). */
static int write_key(const char *path, const char *value)
{
	char err[256];
	struct xgpu_xs *xs = xgpu_xs_open(err, sizeof err);
	if (!xs)
		die("%s", err);
	int r = xs->ops->write(xs, 0, path, value, (unsigned)strlen(value));
	int e = errno;
	xs->ops->close(xs);
	if (r < 0)
		die("%s: %s", path, strerror(e));
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	const char *t = getenv("XENLIAR_TIMEOUT_MS");
	long v;
	if (t && xgpu_parse_long(t, 1, 600000, &v) == 0)
		timeout_ms = (int)v;
	if (argc != 2 && !(argc == 3 && !strcmp(argv[1], "ls")) &&
	    !(argc == 4 && !strcmp(argv[1], "write"))) {
		fprintf(stderr, "usage: xenliar bad-ref-count|huge-ref-count|foreign-port|out-of-order|"
				"rewrite-ring-ref|vanish|bad-protocol\n       xenliar ls PATH\n"
				"       xenliar write PATH VALUE\n");
		return 2;
	}
	if (argc == 4)
		return write_key(argv[2], argv[3]);
	if (argc == 3 && !strcmp(argv[1], "ls"))
		return list(argv[2]);
	const char *m = argv[1];
	if (!strcmp(m, "vanish")) {
		bool ok = mode_vanish();
		printf("xenliar %s: %s\n", m, ok ? "backend reacted as it should" : "BACKEND DID NOT REACT");
		return ok ? 0 : 1;
	}
	struct liar l = {0};
	bool ok;
	if (!strcmp(m, "bad-ref-count") || !strcmp(m, "huge-ref-count") || !strcmp(m, "foreign-port") ||
	    !strcmp(m, "out-of-order") || !strcmp(m, "rewrite-ring-ref") || !strcmp(m, "bad-protocol"))
		open_handles(&l);
	else {
		fprintf(stderr, "xenliar: unknown mode %s\n", m);
		return 2;
	}
	printf("xenliar %s in domain %u\n", m, l.domid);
	if (!strcmp(m, "bad-ref-count"))
		ok = mode_ref_count(&l, 0);
	else if (!strcmp(m, "huge-ref-count"))
		ok = mode_ref_count(&l, 1ull << 30);
	else if (!strcmp(m, "foreign-port"))
		ok = mode_foreign_port(&l);
	else if (!strcmp(m, "out-of-order"))
		ok = mode_out_of_order(&l);
	else if (!strcmp(m, "rewrite-ring-ref"))
		ok = mode_rewrite(&l);
	else
		ok = mode_bad_protocol(&l);
	leave(&l);
	printf("xenliar %s: %s\n", m, ok ? "backend reacted as it should" : "BACKEND DID NOT REACT");
	return ok ? 0 : 1;
}
