/* SPDX-License-Identifier: Apache-2.0 */
/* test_xenstub.c - xgpu-xenstub through the real client (xenif_stub.c):
 * store operations and relative paths, permissions, watches, transactions,
 * event channels, grants with their death notifications (a forked child
 * that dies), and domain release. The server runs in-process on a socket
 * in $XGPU_TMP. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "xenif.h"
#include "../../tools/xenstub/xenstub.h"
#include "../../tools/xenstub/wire.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

static char dir[256];
static char sock[320];
static struct xgpu_xenstub *S;
static char err[256];

static int setup(void **state)
{
	static int n;
	const char *t = getenv("XGPU_TMP");
	if (!dir[0]) {
		if (t && *t) {
			snprintf(dir, sizeof dir, "%s", t);
		} else {
			strcpy(dir, "/tmp/xenstub-test.XXXXXX");
			if (!mkdtemp(dir))
				return -1;
		}
	}
	snprintf(sock, sizeof sock, "%s/xs%d-%d.sock", dir, (int)getpid(), n++);
	S = xgpu_xenstub_start(sock, err, sizeof err);
	if (!S) {
		fprintf(stderr, "start: %s\n", err);
		return -1;
	}
	if (getenv("XENSTUB_LOG"))
		xgpu_xenstub_set_log(S, stderr);
	if (xgpu_xenstub_introduce(S, 5, "guest5") || xgpu_xenstub_introduce(S, 7, "guest7"))
		return -1;
	return 0;
}

static int teardown(void **state)
{
	xgpu_xenstub_stop(S);
	S = NULL;
	return 0;
}

static struct xgpu_xs *xs_open(uint32_t domid)
{
	struct xgpu_xs *xs = xgpu_xs_open_stub(sock, domid, err, sizeof err);
	if (!xs)
		fail_msg("xs open dom%u: %s", domid, err);
	return xs;
}

static struct xgpu_evtchn *ev_open(uint32_t domid)
{
	struct xgpu_evtchn *e = xgpu_evtchn_open_stub(sock, domid, err, sizeof err);
	if (!e)
		fail_msg("evtchn open dom%u: %s", domid, err);
	return e;
}

static bool readable(int fd, int ms)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	return poll(&p, 1, ms) == 1 && (p.revents & POLLIN);
}

/* The next watch event within ms, or false. */
static bool next_watch(struct xgpu_xs *xs, int ms, char *path, size_t pl, char *tok, size_t tl)
{
	if (!readable(xs->ops->watch_fd(xs), ms))
		return false;
	char *p, *t;
	if (xs->ops->read_watch(xs, &p, &t))
		return false;
	snprintf(path, pl, "%s", p);
	snprintf(tok, tl, "%s", t);
	free(p);
	free(t);
	return true;
}

static void expect_watch(struct xgpu_xs *xs, const char *path, const char *tok)
{
	char p[512], t[128];
	assert_true(next_watch(xs, 2000, p, sizeof p, t, sizeof t));
	assert_string_equal(p, path);
	assert_string_equal(t, tok);
}

static void expect_no_watch(struct xgpu_xs *xs)
{
	char p[512], t[128];
	/* Events are queued before the RPC that caused them replies, so a
	 * short wait suffices. */
	if (next_watch(xs, 50, p, sizeof p, t, sizeof t))
		fail_msg("unexpected watch event %s %s", p, t);
	char *pp, *tt;
	assert_int_equal(xs->ops->read_watch(xs, &pp, &tt), -1);
	assert_int_equal(errno, EAGAIN);
}

static void store_basics(void **state)
{
	struct xgpu_xs *xs = xs_open(0);
	const struct xgpu_xs_ops *o = xs->ops;
	assert_int_equal(o->write(xs, 0, "/a/b/c", "hello", 5), 0);
	unsigned len = 0;
	char *v = o->read(xs, 0, "/a/b/c", &len);
	assert_non_null(v);
	assert_int_equal(len, 5);
	assert_string_equal(v, "hello");
	free(v);
	v = o->read(xs, 0, "/a/b", &len); /* parents were created empty */
	assert_non_null(v);
	assert_int_equal(len, 0);
	free(v);
	assert_null(o->read(xs, 0, "/a/nope", &len));
	assert_int_equal(errno, ENOENT);
	assert_int_equal(o->write(xs, 0, "/a/b/d", "", 0), 0);
	assert_int_equal(o->mkdir(xs, 0, "/a/b/a"), 0);
	unsigned n = 0;
	char **d = o->directory(xs, 0, "/a/b", &n);
	assert_non_null(d);
	assert_int_equal(n, 3);
	assert_string_equal(d[0], "a");
	assert_string_equal(d[1], "c");
	assert_string_equal(d[2], "d");
	free(d);
	/* binary values keep their length */
	assert_int_equal(o->write(xs, 0, "/a/bin", "x\0y", 3), 0);
	v = o->read(xs, 0, "/a/bin", &len);
	assert_int_equal(len, 3);
	assert_memory_equal(v, "x\0y", 3);
	free(v);
	/* relative paths are under /local/domain/<own> */
	assert_int_equal(o->write(xs, 0, "rel/key", "1", 1), 0);
	v = o->read(xs, 0, "/local/domain/0/rel/key", NULL);
	assert_string_equal(v, "1");
	free(v);
	/* recursive rm; rm of a missing child of an existing node is fine */
	assert_int_equal(o->rm(xs, 0, "/a/b"), 0);
	assert_null(o->read(xs, 0, "/a/b/c", NULL));
	assert_int_equal(errno, ENOENT);
	assert_int_equal(o->rm(xs, 0, "/a/b"), 0);
	assert_int_equal(o->rm(xs, 0, "/a/x/y"), -1);
	assert_int_equal(errno, ENOENT);
	/* bad paths and values */
	assert_int_equal(o->write(xs, 0, "/a//b", "1", 1), -1);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(o->write(xs, 0, "/a/b/", "1", 1), -1);
	assert_int_equal(o->write(xs, 0, "/a/b c", "1", 1), -1);
	char big[5000];
	memset(big, 'v', sizeof big);
	assert_int_equal(o->write(xs, 0, "/a/big", big, 4097), -1);
	assert_int_equal(o->write(xs, 0, "/a/big", big, 4096), 0);
	char longp[3200] = "/";
	memset(longp + 1, 'p', 3100);
	longp[3101] = '\0';
	assert_int_equal(o->write(xs, 0, longp, "1", 1), -1);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(o->domain_exists(xs, 5), 1);
	assert_int_equal(o->domain_exists(xs, 6), 0);
	assert_int_equal(o->domain_exists(xs, 0), 1);
	char *dump = xgpu_xenstub_dump(S, "/local/domain/5");
	assert_non_null(dump);
	assert_string_equal(dump, "/local/domain/5 = \"\" (n5)\n"
				  "/local/domain/5/domid = \"5\" (n5)\n"
				  "/local/domain/5/name = \"guest5\" (n5)\n");
	free(dump);
	o->close(xs);
}

static void permissions(void **state)
{
	struct xgpu_xs *d0 = xs_open(0), *g = xs_open(5), *g7 = xs_open(7);
	assert_int_equal(g->ops->write(g, 0, "/local/domain/0/x", "1", 1), -1);
	assert_int_equal(errno, EACCES);
	assert_int_equal(g->ops->mkdir(g, 0, "/local/domain/0"), -1);
	assert_int_equal(errno, EACCES);
	assert_int_equal(g->ops->mkdir(g, 0, "/local/domain/5"), 0);
	assert_int_equal(d0->ops->write(d0, 0, "/local/domain/0/secret", "s", 1), 0);
	assert_null(g->ops->read(g, 0, "/local/domain/0/secret", NULL));
	assert_int_equal(errno, EACCES);
	assert_null(g->ops->directory(g, 0, "/local/domain/0", NULL));
	assert_int_equal(errno, EACCES);
	assert_int_equal(g->ops->domain_exists(g, 0), -1);
	/* its own home: a node it creates is its own, and others cannot read it */
	assert_int_equal(g->ops->write(g, 0, "device/vgpu/0/state", "1", 1), 0);
	struct xgpu_xs_perm p[XGPU_XS_PERMS_MAX];
	unsigned n = 0;
	assert_int_equal(
	    d0->ops->get_perms(d0, 0, "/local/domain/5/device/vgpu/0/state", p, XGPU_XS_PERMS_MAX, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(p[0].id, 5);
	assert_int_equal(p[0].perm, XGPU_XS_PERM_NONE);
	assert_null(g7->ops->read(g7, 0, "/local/domain/5/device/vgpu/0/state", NULL));
	assert_int_equal(errno, EACCES);
	/* dom0's backend dir readable by 5: children inherit, a node dom0
	 * creates stays dom0's, one domain 5 cannot write */
	struct xgpu_xs_perm bp[2] = {{0, XGPU_XS_PERM_NONE}, {5, XGPU_XS_PERM_READ}};
	assert_int_equal(d0->ops->mkdir(d0, 0, "/local/domain/0/backend/vgpu/5"), 0);
	assert_int_equal(d0->ops->set_perms(d0, 0, "/local/domain/0/backend/vgpu/5", bp, 2), 0);
	assert_int_equal(d0->ops->write(d0, 0, "/local/domain/0/backend/vgpu/5/0/state", "1", 1), 0);
	char *v = g->ops->read(g, 0, "/local/domain/0/backend/vgpu/5/0/state", NULL);
	assert_non_null(v);
	assert_string_equal(v, "1");
	free(v);
	assert_null(g7->ops->read(g7, 0, "/local/domain/0/backend/vgpu/5/0/state", NULL));
	assert_int_equal(errno, EACCES);
	assert_int_equal(g->ops->write(g, 0, "/local/domain/0/backend/vgpu/5/0/state", "2", 1), -1);
	assert_int_equal(errno, EACCES);
	assert_int_equal(d0->ops->get_perms(d0, 0, "/local/domain/0/backend/vgpu/5/0/state", p, 16, &n), 0);
	assert_int_equal(n, 2);
	assert_int_equal(p[0].id, 0);
	assert_int_equal(p[1].id, 5);
	assert_int_equal(p[1].perm, XGPU_XS_PERM_READ);
	/* a writable dir owned by dom0: a node 5 creates there becomes 5's */
	struct xgpu_xs_perm wp[2] = {{0, XGPU_XS_PERM_NONE}, {5, XGPU_XS_PERM_BOTH}};
	assert_int_equal(d0->ops->mkdir(d0, 0, "/shared"), 0);
	assert_int_equal(d0->ops->set_perms(d0, 0, "/shared", wp, 2), 0);
	assert_int_equal(g->ops->write(g, 0, "/shared/k", "v", 1), 0);
	assert_int_equal(d0->ops->get_perms(d0, 0, "/shared/k", p, 16, &n), 0);
	assert_int_equal(p[0].id, 5);
	assert_int_equal(n, 2);
	/* only the owner or dom0 sets perms */
	assert_int_equal(g->ops->set_perms(g, 0, "/shared", bp, 2), -1);
	assert_int_equal(errno, EACCES);
	assert_int_equal(g->ops->set_perms(g, 0, "/shared/k", bp, 1), 0);
	/* a guest's node quota */
	int made = 0;
	for (int i = 0; i < 2100; i++) {
		char k[32];
		snprintf(k, sizeof k, "q/%d", i);
		if (g7->ops->write(g7, 0, k, "", 0)) {
			assert_int_equal(errno, ENOSPC);
			break;
		}
		made++;
	}
	assert_true(made > 1000 && made < 2000);
	assert_int_equal(g7->ops->rm(g7, 0, "q"), 0);
	assert_int_equal(g7->ops->write(g7, 0, "q/again", "", 0), 0);
	char *dump = xgpu_xenstub_dump(S, "/shared");
	assert_string_equal(dump, "/shared = \"\" (n0,b5)\n/shared/k = \"v\" (n0)\n");
	free(dump);
	d0->ops->close(d0);
	g->ops->close(g);
	g7->ops->close(g7);
}

static void watches(void **state)
{
	struct xgpu_xs *d0 = xs_open(0), *g = xs_open(5), *w = xs_open(0);
	assert_int_equal(w->ops->watch(w, "/local/domain/5/device", "tok"), 0);
	expect_watch(w, "/local/domain/5/device", "tok"); /* fires once at once */
	expect_no_watch(w);
	assert_int_equal(g->ops->write(g, 0, "device/vgpu/0/state", "1", 1), 0);
	expect_watch(w, "/local/domain/5/device/vgpu/0/state", "tok");
	assert_int_equal(g->ops->write(g, 0, "devices", "1", 1), 0); /* a sibling with a common prefix */
	assert_int_equal(g->ops->write(g, 0, "name2", "1", 1), 0);
	expect_no_watch(w);
	assert_int_equal(g->ops->rm(g, 0, "device/vgpu"), 0);
	expect_watch(w, "/local/domain/5/device/vgpu", "tok");
	expect_no_watch(w);
	assert_int_equal(w->ops->unwatch(w, "/local/domain/5/device", "tok"), 0);
	assert_int_equal(g->ops->write(g, 0, "device/x", "1", 1), 0);
	expect_no_watch(w);
	/* a guest watching a relative path gets relative events, and none for
	 * nodes it may not read */
	assert_int_equal(g->ops->watch(g, "device", "g"), 0);
	expect_watch(g, "device", "g");
	assert_int_equal(g->ops->write(g, 0, "device/y", "1", 1), 0);
	expect_watch(g, "device/y", "g");
	assert_int_equal(d0->ops->write(d0, 0, "/local/domain/5/device/priv", "1", 1), 0);
	struct xgpu_xs_perm np = {0, XGPU_XS_PERM_NONE};
	assert_int_equal(d0->ops->set_perms(d0, 0, "/local/domain/5/device/priv", &np, 1), 0);
	expect_watch(g, "device/priv", "g"); /* written as 5's (inherited), readable */
	assert_int_equal(d0->ops->write(d0, 0, "/local/domain/5/device/priv", "2", 1), 0);
	expect_no_watch(g);
	/* watch on a watched node's ancestor removal */
	assert_int_equal(g->ops->watch(g, "/local/domain/5/device/y", "y"), 0);
	expect_watch(g, "/local/domain/5/device/y", "y");
	assert_int_equal(d0->ops->rm(d0, 0, "/local/domain/5/device"), 0);
	char p[512], t[64];
	bool sawy = false, sawdev = false;
	while (next_watch(g, 200, p, sizeof p, t, sizeof t)) {
		if (!strcmp(t, "y") && !strcmp(p, "/local/domain/5/device/y"))
			sawy = true;
		if (!strcmp(t, "g") && !strcmp(p, "device"))
			sawdev = true;
	}
	assert_true(sawy);
	assert_true(sawdev);
	/* special watches */
	assert_int_equal(w->ops->watch(w, "@releaseDomain", "rel"), 0);
	expect_watch(w, "@releaseDomain", "rel");
	assert_int_equal(w->ops->watch(w, "@introduceDomain", "intro"), 0);
	expect_watch(w, "@introduceDomain", "intro");
	assert_int_equal(xgpu_xenstub_introduce(S, 9, "nine"), 0);
	expect_watch(w, "@introduceDomain", "intro");
	assert_int_equal(xgpu_xenstub_release(S, 9), 0);
	expect_watch(w, "@releaseDomain", "rel");
	expect_no_watch(w);
	assert_int_equal(w->ops->watch(w, "@bogus", "b"), -1);
	assert_int_equal(errno, EINVAL);
	d0->ops->close(d0);
	g->ops->close(g);
	w->ops->close(w);
}

static void transactions(void **state)
{
	struct xgpu_xs *a = xs_open(0), *b = xs_open(0), *w = xs_open(0);
	assert_int_equal(a->ops->write(a, 0, "/t/n", "0", 1), 0);
	assert_int_equal(w->ops->watch(w, "/t", "t"), 0);
	expect_watch(w, "/t", "t");
	xgpu_xs_tx tx = a->ops->transaction_start(a);
	assert_true(tx != 0);
	assert_int_equal(a->ops->write(a, tx, "/t/n", "1", 1), 0);
	char *v = b->ops->read(b, 0, "/t/n", NULL); /* not visible outside yet */
	assert_string_equal(v, "0");
	free(v);
	v = a->ops->read(a, tx, "/t/n", NULL);
	assert_string_equal(v, "1");
	free(v);
	expect_no_watch(w);
	assert_int_equal(b->ops->write(b, 0, "/t/other", "x", 1), 0); /* a concurrent writer */
	expect_watch(w, "/t/other", "t");
	assert_int_equal(a->ops->transaction_end(a, tx, false), -1);
	assert_int_equal(errno, EAGAIN);
	v = b->ops->read(b, 0, "/t/n", NULL);
	assert_string_equal(v, "0");
	free(v);
	/* the usual retry loop, with two forced failures on the way */
	xgpu_xenstub_fail_transactions(S, 2);
	int tries = 0;
	for (;;) {
		tries++;
		tx = a->ops->transaction_start(a);
		assert_true(tx != 0);
		v = a->ops->read(a, tx, "/t/n", NULL);
		int n = atoi(v);
		free(v);
		char buf[16];
		snprintf(buf, sizeof buf, "%d", n + 1);
		assert_int_equal(a->ops->write(a, tx, "/t/n", buf, (unsigned)strlen(buf)), 0);
		assert_int_equal(a->ops->write(a, tx, "/t/m", "m", 1), 0);
		if (a->ops->transaction_end(a, tx, false) == 0)
			break;
		assert_int_equal(errno, EAGAIN);
		assert_true(tries < 10);
	}
	assert_int_equal(tries, 3);
	v = b->ops->read(b, 0, "/t/n", NULL);
	assert_string_equal(v, "1");
	free(v);
	expect_watch(w, "/t/n", "t"); /* fired at commit, in order */
	expect_watch(w, "/t/m", "t");
	expect_no_watch(w);
	/* abort discards; ending an unknown transaction fails */
	tx = a->ops->transaction_start(a);
	assert_int_equal(a->ops->rm(a, tx, "/t"), 0);
	assert_int_equal(a->ops->transaction_end(a, tx, true), 0);
	v = b->ops->read(b, 0, "/t/n", NULL);
	assert_string_equal(v, "1");
	free(v);
	assert_int_equal(a->ops->transaction_end(a, tx, false), -1);
	assert_int_equal(errno, ENOENT);
	assert_null(a->ops->read(a, 12345, "/t/n", NULL));
	assert_int_equal(errno, ENOENT);
	expect_no_watch(w);
	a->ops->close(a);
	b->ops->close(b);
	w->ops->close(w);
}

static int pending_within(struct xgpu_evtchn *e, int ms)
{
	if (!readable(e->ops->fd(e), ms))
		return -1;
	return e->ops->pending(e);
}

static void event_channels(void **state)
{
	struct xgpu_evtchn *g = ev_open(5), *d = ev_open(0), *g7 = ev_open(7);
	int gp = g->ops->bind_unbound_port(g, 0);
	assert_true(gp >= 1);
	/* offered to dom0 only; wrong domain or port fail */
	assert_int_equal(g7->ops->bind_interdomain(g7, 5, (uint32_t)gp), -1);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(d->ops->bind_interdomain(d, 7, (uint32_t)gp), -1);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(d->ops->bind_interdomain(d, 5, (uint32_t)gp + 1), -1);
	int dp = d->ops->bind_interdomain(d, 5, (uint32_t)gp);
	assert_true(dp >= 1);
	assert_int_equal(d->ops->bind_interdomain(d, 5, (uint32_t)gp), -1); /* bound now */
	assert_false(readable(d->ops->fd(d), 0));
	assert_int_equal(d->ops->pending(d), -1);
	assert_int_equal(errno, EAGAIN);
	/* guest -> dom0 */
	assert_int_equal(g->ops->notify(g, (uint32_t)gp), 0);
	assert_int_equal(pending_within(d, 2000), dp);
	assert_false(readable(d->ops->fd(d), 0));
	/* masked until unmask: notifications coalesce and come back then */
	assert_int_equal(g->ops->notify(g, (uint32_t)gp), 0);
	assert_int_equal(g->ops->notify(g, (uint32_t)gp), 0);
	assert_false(readable(d->ops->fd(d), 50));
	assert_int_equal(d->ops->unmask(d, (uint32_t)dp), 0);
	assert_int_equal(pending_within(d, 2000), dp);
	assert_false(readable(d->ops->fd(d), 50));
	assert_int_equal(d->ops->unmask(d, (uint32_t)dp), 0);
	/* dom0 -> guest */
	assert_int_equal(d->ops->notify(d, (uint32_t)dp), 0);
	assert_int_equal(pending_within(g, 2000), gp);
	assert_int_equal(g->ops->unmask(g, (uint32_t)gp), 0);
	/* another handle cannot use a port it did not bind */
	assert_int_equal(g7->ops->notify(g7, (uint32_t)gp), -1);
	assert_int_equal(g7->ops->unbind(g7, (uint32_t)gp), -1);
	/* peer closes: notify is dropped silently */
	g->ops->close(g);
	usleep(20000);
	assert_int_equal(d->ops->notify(d, (uint32_t)dp), 0);
	assert_false(readable(d->ops->fd(d), 50));
	assert_int_equal(d->ops->unbind(d, (uint32_t)dp), 0);
	assert_int_equal(d->ops->notify(d, (uint32_t)dp), -1);
	assert_int_equal(errno, EINVAL);
	/* unbind of one end leaves the other unbound, offered back */
	int a = g7->ops->bind_unbound_port(g7, 0);
	int b = d->ops->bind_interdomain(d, 7, (uint32_t)a);
	assert_true(b > 0);
	assert_int_equal(g7->ops->unbind(g7, (uint32_t)a), 0);
	assert_int_equal(d->ops->notify(d, (uint32_t)b), 0);
	assert_int_equal(g7->ops->bind_unbound_port(g7, 99999), -1);
	assert_int_equal(errno, ESRCH);
	d->ops->close(d);
	g7->ops->close(g7);
}

static void grants(void **state)
{
	struct xgpu_gntshr *gs = xgpu_gntshr_open_stub(sock, 5, err, sizeof err);
	struct xgpu_gnttab *gt = xgpu_gnttab_open_stub(sock, 0, err, sizeof err);
	struct xgpu_gnttab *gt7 = xgpu_gnttab_open_stub(sock, 7, err, sizeof err);
	assert_non_null(gs);
	assert_non_null(gt);
	assert_non_null(gt7);
	uint32_t refs[3];
	uint8_t *p = gs->ops->share_pages(gs, 0, 3, refs, true);
	assert_non_null(p);
	for (int i = 0; i < 3 * 4096; i++)
		assert_int_equal(p[i], 0);
	memcpy(p + 4096 + 10, "guest", 6);
	/* map out of order: pages land where the refs say */
	uint32_t order[3] = {refs[2], refs[1], refs[0]};
	uint8_t *m = gt->ops->map_domain_grant_refs(gt, 3, 5, order, true);
	assert_non_null(m);
	assert_string_equal((char *)m + 4096 + 10, "guest");
	memcpy(m + 2 * 4096, "dom0", 5); /* = page 0 of the share */
	assert_string_equal((char *)p, "dom0");
	assert_int_equal(gt->ops->unmap(gt, m, 3), 0);
	m = gt->ops->map_domain_grant_refs(gt, 3, 5, refs, true);
	assert_non_null(m);
	assert_string_equal((char *)m, "dom0");
	assert_int_equal(gt->ops->unmap(gt, m, 3), 0);
	assert_int_equal(gt->ops->unmap(gt, m, 3), -1);
	/* wrong grantee; unknown ref; wrong granting domain; count bounds */
	assert_null(gt7->ops->map_domain_grant_refs(gt7, 1, 5, refs, false));
	assert_int_equal(errno, EACCES);
	uint32_t bad[2] = {refs[0], 4000};
	assert_null(gt->ops->map_domain_grant_refs(gt, 2, 5, bad, false));
	assert_int_equal(errno, ENOENT);
	assert_null(gt->ops->map_domain_grant_refs(gt, 1, 7, refs, false));
	assert_int_equal(errno, ENOENT);
	assert_null(gt->ops->map_domain_grant_refs(gt, 0, 5, refs, false));
	assert_int_equal(errno, EINVAL);
	/* read-only grants map read-only only */
	uint32_t ro;
	uint8_t *rp = gs->ops->share_pages(gs, 0, 1, &ro, false);
	assert_non_null(rp);
	assert_null(gt->ops->map_domain_grant_refs(gt, 1, 5, &ro, true));
	assert_int_equal(errno, EACCES);
	uint8_t *rm = gt->ops->map_domain_grant_refs(gt, 1, 5, &ro, false);
	assert_non_null(rm);
	rp[0] = 42;
	assert_int_equal(rm[0], 42);
	assert_int_equal(gt->ops->unmap(gt, rm, 1), 0);
	/* unshared refs are gone for new maps; an existing map stays valid */
	m = gt->ops->map_domain_grant_refs(gt, 3, 5, refs, true);
	assert_non_null(m);
	assert_int_equal(gs->ops->unshare(gs, p, 3), 0);
	assert_null(gt->ops->map_domain_grant_refs(gt, 1, 5, refs, false));
	assert_int_equal(errno, ENOENT);
	assert_string_equal((char *)m, "dom0");
	assert_int_equal(gt->ops->unmap(gt, m, 3), 0);
	gs->ops->close(gs);
	gt->ops->close(gt);
	gt7->ops->close(gt7);
}

/* A child plays a guest process: binds a port for dom0, shares a page
 * carrying a death notification, sends the refs through a pipe, dies. */
static void notify_on_sharer_death(void **state)
{
	struct xgpu_evtchn *d = ev_open(0);
	struct xgpu_gnttab *gt = xgpu_gnttab_open_stub(sock, 0, err, sizeof err);
	assert_non_null(gt);
	int pfd[2], go[2];
	assert_int_equal(pipe(pfd), 0);
	assert_int_equal(pipe(go), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char e[256];
		struct xgpu_evtchn *ce = xgpu_evtchn_open_stub(sock, 5, e, sizeof e);
		struct xgpu_gntshr *cs = xgpu_gntshr_open_stub(sock, 5, e, sizeof e);
		if (!ce || !cs)
			_exit(2);
		int port = ce->ops->bind_unbound_port(ce, 0);
		uint32_t ref;
		uint8_t *pg = cs->ops->share_page_notify(cs, 0, true, 16, port, &ref);
		if (port < 0 || !pg)
			_exit(3);
		pg[16] = 1;
		pg[17] = 1;
		uint32_t msg[2] = {(uint32_t)port, ref};
		if (write(pfd[1], msg, sizeof msg) != sizeof msg)
			_exit(4);
		char c;
		if (read(go[0], &c, 1) != 1)
			_exit(5);
		_exit(0); /* no cleanup: the process just dies */
	}
	close(pfd[1]);
	close(go[0]);
	uint32_t msg[2];
	assert_int_equal(read(pfd[0], msg, sizeof msg), sizeof msg);
	int dp = d->ops->bind_interdomain(d, 5, msg[0]);
	assert_true(dp > 0);
	uint8_t *pg = gt->ops->map_domain_grant_refs(gt, 1, 5, &msg[1], true);
	assert_non_null(pg);
	assert_int_equal(pg[16], 1);
	assert_false(readable(d->ops->fd(d), 0));
	assert_int_equal(write(go[1], "x", 1), 1);
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	assert_int_equal(pending_within(d, 2000), dp);
	assert_int_equal(pg[16], 0); /* cleared */
	assert_int_equal(pg[17], 1); /* only that byte; the memory stays mapped */
	/* the child's port closed after the notification */
	assert_int_equal(d->ops->unmask(d, (uint32_t)dp), 0);
	assert_int_equal(d->ops->notify(d, (uint32_t)dp), 0);
	assert_int_equal(gt->ops->unmap(gt, pg, 1), 0);
	close(pfd[0]);
	close(go[1]);
	d->ops->close(d);
	gt->ops->close(gt);
}

/* The mapper's notification: dom0 maps with a notify, a guest watches the
 * byte and its port. */
static void notify_on_unmap(void **state)
{
	struct xgpu_evtchn *g = ev_open(5), *d = ev_open(0);
	struct xgpu_gntshr *gs = xgpu_gntshr_open_stub(sock, 5, err, sizeof err);
	struct xgpu_gnttab *gt = xgpu_gnttab_open_stub(sock, 0, err, sizeof err);
	int gp = g->ops->bind_unbound_port(g, 0);
	int dp = d->ops->bind_interdomain(d, 5, (uint32_t)gp);
	assert_true(dp > 0);
	uint32_t ref;
	uint8_t *p = gs->ops->share_pages(gs, 0, 1, &ref, true);
	uint8_t *m = gt->ops->map_grant_ref_notify(gt, 5, ref, true, 17, dp);
	assert_non_null(m);
	m[17] = 1;
	assert_int_equal(p[17], 1);
	assert_null(gt->ops->map_grant_ref_notify(gt, 5, ref, true, 4096, -1));
	assert_int_equal(errno, EINVAL);
	gt->ops->close(gt); /* as if xgpud died */
	assert_int_equal(pending_within(g, 2000), gp);
	assert_int_equal(p[17], 0);
	assert_int_equal(gs->ops->unshare(gs, p, 1), 0);
	gs->ops->close(gs);
	g->ops->close(g);
	d->ops->close(d);
}

static void domain_release(void **state)
{
	struct xgpu_xs *w = xs_open(0);
	struct xgpu_evtchn *g = ev_open(7), *d = ev_open(0);
	struct xgpu_xs *gx = xs_open(7);
	assert_int_equal(w->ops->watch(w, "@releaseDomain", "r"), 0);
	expect_watch(w, "@releaseDomain", "r");
	int gp = g->ops->bind_unbound_port(g, 0);
	int dp = d->ops->bind_interdomain(d, 7, (uint32_t)gp);
	assert_true(dp > 0);
	assert_int_equal(xgpu_xenstub_release(S, 7), 0);
	expect_watch(w, "@releaseDomain", "r");
	assert_int_equal(w->ops->domain_exists(w, 7), 0);
	assert_null(w->ops->read(w, 0, "/local/domain/7", NULL));
	assert_int_equal(errno, ENOENT);
	/* its handles are dead; its channel is gone */
	assert_int_equal(g->ops->notify(g, (uint32_t)gp), -1);
	assert_null(gx->ops->read(gx, 0, "name", NULL));
	assert_int_equal(d->ops->notify(d, (uint32_t)dp), 0);
	assert_false(readable(d->ops->fd(d), 50));
	assert_null(xgpu_xs_open_stub(sock, 7, err, sizeof err));
	assert_non_null(strstr(err, "domain 7"));
	assert_int_equal(xgpu_xenstub_release(S, 7), -1);
	g->ops->close(g);
	gx->ops->close(gx);
	d->ops->close(d);
	w->ops->close(w);
}

static int raw_connect(void)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	strcpy(sa.sun_path, sock);
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);
	assert_true(fd >= 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
	return fd;
}

static void raw_send(int fd, uint32_t op, const void *body, uint32_t len, uint32_t claimed)
{
	/* One write: the server may drop us as soon as it reads the header. */
	struct xsw_hdr h = {op, claimed};
	char buf[sizeof h + 64];
	assert_true(len <= 64);
	memcpy(buf, &h, sizeof h);
	if (len)
		memcpy(buf + sizeof h, body, len);
	assert_int_equal(write(fd, buf, sizeof h + len), (ssize_t)(sizeof h + len));
}

/* The server drops the connection: EOF after any reply. */
static void expect_dropped(int fd)
{
	char buf[256];
	struct pollfd p = {.fd = fd, .events = POLLIN};
	for (;;) {
		assert_int_equal(poll(&p, 1, 5000), 1);
		ssize_t n = read(fd, buf, sizeof buf);
		if (n <= 0)
			break;
	}
	close(fd);
}

static void still_serving(void)
{
	struct xgpu_xs *xs = xs_open(0);
	char *v = xs->ops->read(xs, 0, "/local/domain/5/name", NULL);
	assert_non_null(v);
	assert_string_equal(v, "guest5");
	free(v);
	xs->ops->close(xs);
}

static void malformed_clients(void **state)
{
	struct xsw_hello bad = {0x1234, XSW_XS, 0}, tab = {XSW_MAGIC, XSW_GNTTAB, 0},
			 xsh = {XSW_MAGIC, XSW_XS, 0};
	int fd = raw_connect();
	assert_int_equal(write(fd, "abc", 3), 3);
	close(fd);
	fd = raw_connect();
	raw_send(fd, 999, NULL, 0, 0);
	expect_dropped(fd);
	fd = raw_connect();
	raw_send(fd, XSW_HELLO, &bad, sizeof bad, sizeof bad);
	expect_dropped(fd);
	fd = raw_connect(); /* a request before hello */
	raw_send(fd, XSW_READ, "xxxxxxxxxxxxxxxx", 16, 16);
	expect_dropped(fd);
	fd = raw_connect(); /* xenstore without its event stream */
	raw_send(fd, XSW_HELLO, &xsh, sizeof xsh, sizeof xsh);
	expect_dropped(fd);
	fd = raw_connect(); /* a body over the bound */
	raw_send(fd, XSW_HELLO, &tab, sizeof tab, sizeof tab);
	struct xsw_rep rep;
	assert_int_equal(read(fd, &rep, sizeof rep), sizeof rep);
	assert_int_equal(rep.err, 0);
	raw_send(fd, XSW_GT_MAP, NULL, 0, (uint32_t)XSW_BODY_MAX + 1);
	expect_dropped(fd);
	fd = raw_connect(); /* a count the body does not hold; an op of another kind */
	raw_send(fd, XSW_HELLO, &tab, sizeof tab, sizeof tab);
	assert_int_equal(read(fd, &rep, sizeof rep), sizeof rep);
	struct xsw_grant g = {.domid = 5, .count = 0, .notify_off = -1, .notify_port = -1};
	raw_send(fd, XSW_GT_MAP, &g, sizeof g, sizeof g);
	assert_int_equal(read(fd, &rep, sizeof rep), sizeof rep);
	assert_int_equal(rep.err, EINVAL);
	g.count = 1u << 20;
	raw_send(fd, XSW_GT_MAP, &g, sizeof g, sizeof g);
	expect_dropped(fd);
	fd = raw_connect();
	raw_send(fd, XSW_HELLO, &tab, sizeof tab, sizeof tab);
	assert_int_equal(read(fd, &rep, sizeof rep), sizeof rep);
	raw_send(fd, XSW_READ, "xxxxxxxxxxxxxxxx", 16, 16);
	expect_dropped(fd);
	/* a client that stalls mid-request loses its connection, not the server */
	fd = raw_connect();
	raw_send(fd, XSW_HELLO, &tab, sizeof tab, sizeof tab);
	assert_int_equal(read(fd, &rep, sizeof rep), sizeof rep);
	raw_send(fd, XSW_GT_UNMAP, "abc", 3, 8);
	expect_dropped(fd);
	still_serving();
	/* a hello for a domain that does not exist */
	assert_null(xgpu_gnttab_open_stub(sock, 42, err, sizeof err));
	assert_int_equal(errno, ESRCH);
	assert_non_null(strstr(err, "domain 42"));
	still_serving();
}

/* xenif.c's selection reaches the stub by the environment. */
static void open_by_environment(void **state)
{
	setenv("XGPU_XEN_STUB", sock, 1);
	setenv("XGPU_XEN_DOMID", "5", 1);
	assert_true(xgpu_xen_stub_selected());
	struct xgpu_xs *xs = xgpu_xs_open(err, sizeof err);
	assert_non_null(xs);
	char *v = xs->ops->read(xs, 0, "name", NULL);
	assert_string_equal(v, "guest5");
	free(v);
	uint64_t id = 0;
	assert_int_equal(xgpu_xs_read_u64(xs, 0, "domid", 100, &id), 0);
	assert_int_equal(id, 5);
	xs->ops->close(xs);
	struct xgpu_evtchn *e = xgpu_evtchn_open(err, sizeof err);
	struct xgpu_gntshr *gs = xgpu_gntshr_open(err, sizeof err);
	struct xgpu_gnttab *gt = xgpu_gnttab_open(err, sizeof err);
	assert_non_null(e);
	assert_non_null(gs);
	assert_non_null(gt);
	e->ops->close(e);
	gs->ops->close(gs);
	gt->ops->close(gt);
	setenv("XGPU_XEN_DOMID", "6", 1); /* not introduced */
	assert_null(xgpu_xs_open(err, sizeof err));
	assert_non_null(strstr(err, "domain 6"));

	/* The domid each handle plays: unset or empty is dom0; up to the last
	 * domain id. Read back from the store's relative "domid". */
	const char *domids[] = {NULL, "", "7", "32751"};
	const uint64_t want[] = {0, 0, 7, XGPU_XEN_DOMID_MAX};
	assert_int_equal(xgpu_xenstub_introduce(S, XGPU_XEN_DOMID_MAX, "last"), 0);
	for (unsigned i = 0; i < 4; i++) {
		if (domids[i])
			setenv("XGPU_XEN_DOMID", domids[i], 1);
		else
			unsetenv("XGPU_XEN_DOMID");
		xs = xgpu_xs_open(err, sizeof err);
		assert_non_null(xs);
		assert_int_equal(xgpu_xs_read_u64(xs, 0, "domid", XGPU_XEN_DOMID_MAX, &id), 0);
		assert_int_equal(id, want[i]);
		xs->ops->close(xs);
		e = xgpu_evtchn_open(err, sizeof err);
		assert_non_null(e);
		e->ops->close(e);
		gs = xgpu_gntshr_open(err, sizeof err);
		assert_non_null(gs);
		gs->ops->close(gs);
		gt = xgpu_gnttab_open(err, sizeof err);
		assert_non_null(gt);
		gt->ops->close(gt);
	}
	/* The stub's socket is what XGPU_XEN_STUB names. */
	setenv("XGPU_XEN_STUB", "/nonexistent/xgpu-stub.sock", 1);
	assert_null(xgpu_xs_open(err, sizeof err));
	assert_non_null(strstr(err, "/nonexistent/xgpu-stub.sock"));
	unsetenv("XGPU_XEN_STUB");
	unsetenv("XGPU_XEN_DOMID");
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(store_basics, setup, teardown),
	    cmocka_unit_test_setup_teardown(permissions, setup, teardown),
	    cmocka_unit_test_setup_teardown(watches, setup, teardown),
	    cmocka_unit_test_setup_teardown(transactions, setup, teardown),
	    cmocka_unit_test_setup_teardown(event_channels, setup, teardown),
	    cmocka_unit_test_setup_teardown(grants, setup, teardown),
	    cmocka_unit_test_setup_teardown(notify_on_sharer_death, setup, teardown),
	    cmocka_unit_test_setup_teardown(notify_on_unmap, setup, teardown),
	    cmocka_unit_test_setup_teardown(domain_release, setup, teardown),
	    cmocka_unit_test_setup_teardown(malformed_clients, setup, teardown),
	    cmocka_unit_test_setup_teardown(open_by_environment, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
