/* SPDX-License-Identifier: Apache-2.0 */
/* test_xenbus.c - xgpud's Xen transport against the in-memory Xen
 * (xgpu-xenstub, in-process): a real struct xgpud with the simulated driver
 * adopts devices written as `xl-gpu attach` writes them; an honest guest
 * written here (sharing pages with gntshr, binding an unbound port, walking
 * the channel states) gets Connected, an ack with status 0 and a working
 * ring (a NOP round trip with kicks both ways); lying guests (wrong page
 * counts, refs not granted to dom0, foreign ports, states out of order, a
 * rewritten ring-ref, a bad protocol version, vanishing mid-handshake, out
 * of range channel numbers) are refused or closed with an error key and a
 * log line while the honest guest in another domain is still served; guest
 * process death, guest Closing, detach and domain death clean up xenstore
 * and xgpud's state; credit/sla/mem-limit/kernel-timeout and policy keys apply live. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "log.h"
#include "policy.h"
#include "proto.h"
#include "scheduler.h"
#include "shm.h"
#include "util.h"
#include "transport/xenbus.h"
#include "xenif.h"
#include "xenvgpu.h"
#include "daemon.h"
#include "executors.h"
#include "../../tools/xenstub/xenstub.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static struct {
	char dir[256], sock[300], logpath[300];
	struct xgpu_xenstub *stub;
	struct xgpu_xs *xs0; /* the toolstack's (dom0) */
	struct xgpud d;
	struct xgpu_transport_host host;
	struct xgpu_xenbus *xb;
} T;

/* ---- the daemon side ----------------------------------------------------------- */

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

/* Pumps xgpud's xenbus logic until cond holds (5 s at most). */
#define WAIT_UNTIL(cond)                                                                                     \
	do {                                                                                                 \
		for (int i_ = 0; i_ < 500 && !(cond); i_++)                                                  \
			pump(10);                                                                            \
		if (!(cond))                                                                                 \
			fail_msg("timed out waiting for %s", #cond);                                         \
	} while (0)

static char *rd(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *rd(const char *fmt, ...)
{
	char path[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(path, sizeof path, fmt, ap);
	va_end(ap);
	unsigned len;
	return T.xs0->ops->read(T.xs0, 0, path, &len);
}

static bool exists(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static bool exists(const char *fmt, ...)
{
	char path[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(path, sizeof path, fmt, ap);
	va_end(ap);
	unsigned len;
	char *v = T.xs0->ops->read(T.xs0, 0, path, &len);
	free(v);
	return v != NULL;
}

static long num(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static long num(const char *fmt, ...)
{
	char path[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(path, sizeof path, fmt, ap);
	va_end(ap);
	uint64_t v;
	return xgpu_xs_read_u64(T.xs0, 0, path, 1u << 30, &v) < 0 ? -1 : (long)v;
}

static void wr(const char *path, const char *val)
{
	assert_int_equal(T.xs0->ops->write(T.xs0, 0, path, val, (unsigned)strlen(val)), 0);
}

#define BE "/local/domain/0/backend/vgpu"

static long be_chan_state(uint32_t domid, uint32_t n)
{
	return num(BE "/%u/0/channel/%u/state", domid, n);
}

static bool be_chan_error_has(uint32_t domid, uint32_t n, const char *what)
{
	char *e = rd(BE "/%u/0/channel/%u/error", domid, n);
	bool ok = e && strstr(e, what);
	if (!ok)
		print_message("channel %u/%u error: %s (want %s)\n", domid, n, e ? e : "(none)", what);
	free(e);
	return ok;
}

static bool log_has_now(const char *what)
{
	FILE *f = fopen(T.logpath, "r");
	if (!f)
		return false;
	char line[1024];
	bool found = false;
	while (!found && fgets(line, sizeof line, f))
		found = strstr(line, what) != NULL;
	fclose(f);
	return found;
}

/* Whether a line of the log starts with what (a line a guest forged). */
static bool log_line_starts(const char *what)
{
	FILE *f = fopen(T.logpath, "r");
	if (!f)
		return false;
	char line[1024];
	bool found = false;
	while (!found && fgets(line, sizeof line, f))
		found = !strncmp(line, what, strlen(what));
	fclose(f);
	return found;
}

/* The tee thread may be a moment behind, and an executor's lines reach
 * xgpud's log as xgpud reads them. */
static bool log_has(const char *what)
{
	for (int i = 0; i < 100; i++) {
		if (log_has_now(what))
			return true;
		pump(10);
	}
	print_message("no log line with '%s'\n", what);
	return false;
}

/* stderr (xgpud's log and cmocka's messages) goes to the terminal and to
 * the log file the tests read. */
static int tee_in = -1, tee_out = -1, tee_err = -1;
static pthread_t tee_thread;

static void *tee_main(void *arg)
{
	(void)arg;
	char buf[4096];
	ssize_t n;
	while ((n = read(tee_in, buf, sizeof buf)) > 0) {
		if (write(tee_out, buf, (size_t)n) < 0 || write(tee_err, buf, (size_t)n) < 0)
			break;
	}
	return NULL;
}

static struct xgpud_domain *xdom(uint32_t domid)
{
	pthread_mutex_lock(&T.d.domains_lock);
	struct xgpud_domain *dom = T.d.domains;
	while (dom && !(dom->xen && dom->domid == domid))
		dom = dom->next;
	pthread_mutex_unlock(&T.d.domains_lock);
	return dom;
}

/* As `xl-gpu attach` does: both directories, owned so each side may write its own. */
static void attach(uint32_t domid, const char *credit)
{
	char be[128], fe[128], path[192], val[128];
	snprintf(be, sizeof be, BE "/%u/0", domid);
	snprintf(fe, sizeof fe, "/local/domain/%u/device/vgpu/0", domid);
	assert_int_equal(T.xs0->ops->mkdir(T.xs0, 0, fe), 0);
	struct xgpu_xs_perm fp[1] = {{domid, XGPU_XS_PERM_NONE}};
	assert_int_equal(T.xs0->ops->set_perms(T.xs0, 0, fe, fp, 1), 0);
	snprintf(path, sizeof path, "%s/backend", fe);
	wr(path, be);
	snprintf(path, sizeof path, "%s/backend-id", fe);
	wr(path, "0");
	snprintf(path, sizeof path, "%s/state", fe);
	wr(path, "1");
	assert_int_equal(T.xs0->ops->mkdir(T.xs0, 0, be), 0);
	struct xgpu_xs_perm bp[2] = {{0, XGPU_XS_PERM_NONE}, {domid, XGPU_XS_PERM_READ}};
	assert_int_equal(T.xs0->ops->set_perms(T.xs0, 0, be, bp, 2), 0);
	snprintf(path, sizeof path, "%s/frontend", be);
	wr(path, fe);
	snprintf(path, sizeof path, "%s/frontend-id", be);
	snprintf(val, sizeof val, "%u", domid);
	wr(path, val);
	snprintf(path, sizeof path, "%s/credit", be);
	wr(path, credit);
	snprintf(path, sizeof path, "%s/state", be);
	wr(path, "1");
}

/* ---- guests ------------------------------------------------------------------------ */

struct guest {
	uint32_t domid, n;
	struct xgpu_xs *xs;
	struct xgpu_evtchn *evt;
	struct xgpu_gntshr *gs;
	void *region, *dirs;
	uint32_t npages, ndir;
	uint32_t refs[64], dirrefs[1];
	struct xgpu_xen_root *root;
	uint32_t rootref;
	int port;
	struct xgpu_shm_view v;
	uint64_t seq;
};

struct lie {
	uint32_t grant_to;   /* whom the region is granted to (0: dom0) */
	uint32_t port_for;   /* whom the port is offered to (0: dom0) */
	int32_t ring_pages;  /* published ring-pages; 0: the true count */
	const char *pages_s; /* published ring-pages as text, wins */
	int port_override;   /* published event-channel; 0: the true port */
	uint32_t root_version;
	uint32_t protocol; /* 0: ours */
	uint32_t task;     /* published task key; 0: 77 */
	bool task_zero;    /* publish task 0 */
};

static void guest_open(struct guest *g, uint32_t domid, uint32_t n)
{
	char err[256];
	memset(g, 0, sizeof *g);
	g->domid = domid;
	g->n = n;
	g->xs = xgpu_xs_open_stub(T.sock, domid, err, sizeof err);
	g->evt = xgpu_evtchn_open_stub(T.sock, domid, err, sizeof err);
	g->gs = xgpu_gntshr_open_stub(T.sock, domid, err, sizeof err);
	if (!g->xs || !g->evt || !g->gs)
		fail_msg("guest %u: %s", domid, err);
}

static void guest_close(struct guest *g)
{
	if (g->gs)
		g->gs->ops->close(g->gs);
	if (g->evt)
		g->evt->ops->close(g->evt);
	if (g->xs)
		g->xs->ops->close(g->xs);
	g->gs = NULL;
	g->evt = NULL;
	g->xs = NULL;
}

static void gkey(struct guest *g, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void gkey(struct guest *g, const char *key, const char *fmt, ...)
{
	char path[192], val[64];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(val, sizeof val, fmt, ap);
	va_end(ap);
	snprintf(path, sizeof path, "/local/domain/%u/device/vgpu/0/channel/%u/%s", g->domid, g->n, key);
	assert_int_equal(g->xs->ops->write(g->xs, 0, path, val, (unsigned)strlen(val)), 0);
}

/* Shares a region, its directory and root page, and binds a port, as the
 * frontend does (or as a liar does). */
static void guest_share(struct guest *g, const struct lie *l)
{
	struct xgpu_shm_params sp = {.nr_slots = 8, .data_size = 64u << 10};
	size_t size = xgpu_shm_region_size(&sp);
	g->npages = (uint32_t)(size / XGPU_XEN_PAGE_SIZE);
	assert_true(g->npages <= 64);
	g->region = g->gs->ops->share_pages(g->gs, l->grant_to, g->npages, g->refs, true);
	assert_non_null(g->region);
	assert_int_equal(xgpu_shm_init(g->region, size, &sp), 0);
	xgpu_shm_view_frontend(g->region, &g->v);
	g->ndir = 1;
	g->dirs = g->gs->ops->share_pages(g->gs, l->grant_to, 1, g->dirrefs, false);
	assert_non_null(g->dirs);
	memcpy(g->dirs, g->refs, g->npages * sizeof(uint32_t));
	g->port = g->evt->ops->bind_unbound_port(g->evt, l->port_for);
	assert_true(g->port > 0);
	g->root = g->gs->ops->share_page_notify(g->gs, l->grant_to, true,
						(int32_t)XGPU_XEN_ROOT_FE_ALIVE_OFFSET, g->port, &g->rootref);
	assert_non_null(g->root);
	g->root->magic = XGPU_XEN_ROOT_MAGIC;
	g->root->version = l->root_version ? l->root_version : XGPU_PROTO_VERSION;
	g->root->npages = g->npages;
	g->root->ndir = 1;
	g->root->fe_alive = 1;
	g->root->hello = (struct xgpu_hello){
	    .magic = XGPU_PROTO_MAGIC, .version = XGPU_PROTO_VERSION, .kind = XGPU_CONN_CHANNEL, .task = 77};
	g->root->dir_refs[0] = g->dirrefs[0];
}

static void guest_publish(struct guest *g, const struct lie *l)
{
	gkey(g, "ring-ref", "%u", g->rootref);
	if (l->pages_s)
		gkey(g, "ring-pages", "%s", l->pages_s);
	else
		gkey(g, "ring-pages", "%d", l->ring_pages ? l->ring_pages : (int32_t)g->npages);
	gkey(g, "event-channel", "%d", l->port_override ? l->port_override : g->port);
	gkey(g, "task", "%u", l->task_zero ? 0 : l->task ? l->task : 77);
	gkey(g, "protocol", "%u", l->protocol ? l->protocol : XGPU_PROTO_VERSION);
	gkey(g, "state", "3");
}

/* The whole handshake; returns the backend's final channel state. */
static long guest_connect(struct guest *g, const struct lie *l)
{
	guest_share(g, l);
	gkey(g, "state", "1");
	WAIT_UNTIL(be_chan_state(g->domid, g->n) == 2);
	guest_publish(g, l);
	WAIT_UNTIL(be_chan_state(g->domid, g->n) >= 4);
	return be_chan_state(g->domid, g->n);
}

/* A NOP through the ring: the request slot, a kick to xgpud, its response and
 * its kick back. */
static void drain_kicks(struct guest *g)
{
	int port;
	while ((port = g->evt->ops->pending(g->evt)) >= 0)
		g->evt->ops->unmask(g->evt, (uint32_t)port);
}

static void roundtrip(struct guest *g)
{
	drain_kicks(g);
	xgpu_q_arm_data(&g->v.rsp);
	uint8_t *slot = xgpu_q_unit(&g->v.req, g->v.req.idx);
	struct xgpu_req_hdr h = {.call = XGPU_CALL_NOP, .len = sizeof(struct xgpu_req_NOP), .seq = ++g->seq};
	memcpy(slot, &h, sizeof h);
	memset(slot + sizeof h, 0, sizeof(struct xgpu_req_NOP));
	xgpu_slot_seal(&g->v.req);
	xgpu_q_publish(&g->v.req, 1);
	assert_int_equal(g->evt->ops->notify(g->evt, (uint32_t)g->port), 0);
	struct pollfd p = {.fd = g->evt->ops->fd(g->evt), .events = POLLIN};
	bool kicked = false;
	for (int i = 0; i < 500 && !kicked; i++) {
		if (poll(&p, 1, 10) > 0) {
			int port = g->evt->ops->pending(g->evt);
			if (port >= 0) {
				g->evt->ops->unmask(g->evt, (uint32_t)port);
				kicked = port == g->port;
			}
		}
	}
	assert_true(kicked);
	/* The kick follows the response's publication. */
	assert_true(xgpu_slot_ready(&g->v.rsp));
	struct xgpu_rsp_hdr r;
	memcpy(&r, xgpu_q_unit(&g->v.rsp, g->v.rsp.idx), sizeof r);
	assert_int_equal(r.status, 0);
	assert_int_equal(r.seq, g->seq);
	assert_int_equal(r.call, XGPU_CALL_NOP);
	xgpu_q_release(&g->v.rsp, 1);
}

/* One call through the ring; returns its status, the response body in rsp. */
static int call(struct guest *g, uint32_t id, const void *req, uint32_t req_len, void *rsp, uint32_t rsp_len)
{
	xgpu_q_arm_data(&g->v.rsp);
	uint8_t *slot = xgpu_q_unit(&g->v.req, g->v.req.idx);
	struct xgpu_req_hdr h = {.call = id, .len = req_len, .seq = ++g->seq};
	memcpy(slot, &h, sizeof h);
	memcpy(slot + sizeof h, req, req_len);
	xgpu_slot_seal(&g->v.req);
	xgpu_q_publish(&g->v.req, 1);
	assert_int_equal(g->evt->ops->notify(g->evt, (uint32_t)g->port), 0);
	for (int i = 0; i < 500 && !xgpu_slot_ready(&g->v.rsp); i++)
		usleep(10000);
	assert_true(xgpu_slot_ready(&g->v.rsp));
	const uint8_t *shared = xgpu_q_unit(&g->v.rsp, g->v.rsp.idx);
	struct xgpu_rsp_hdr r;
	memcpy(&r, shared, sizeof r);
	if (r.status == 0 && rsp)
		memcpy(rsp, shared + sizeof r, rsp_len);
	assert_int_equal(r.seq, g->seq);
	xgpu_q_release(&g->v.rsp, 1);
	drain_kicks(g);
	return r.status;
}

/* A host segment shared as a channel region is: pages, a directory, a root
 * page whose ref is the token. */
struct seg {
	void *mem, *dir;
	struct xgpu_xen_root *root;
	uint32_t refs[8], dirref, rootref, npages;
};

static void seg_share(struct guest *g, struct seg *s, uint32_t npages, uint32_t claimed)
{
	s->npages = npages;
	s->mem = g->gs->ops->share_pages(g->gs, 0, npages, s->refs, true);
	s->dir = g->gs->ops->share_pages(g->gs, 0, 1, &s->dirref, false);
	s->root = g->gs->ops->share_pages(g->gs, 0, 1, &s->rootref, false);
	assert_non_null(s->mem);
	assert_non_null(s->dir);
	assert_non_null(s->root);
	memcpy(s->dir, s->refs, npages * sizeof(uint32_t));
	s->root->magic = XGPU_XEN_ROOT_MAGIC;
	s->root->version = XGPU_PROTO_VERSION;
	s->root->npages = claimed;
	s->root->ndir = 1;
	s->root->dir_refs[0] = s->dirref;
}

static void seg_unshare(struct guest *g, struct seg *s)
{
	g->gs->ops->unshare(g->gs, s->mem, s->npages);
	g->gs->ops->unshare(g->gs, s->dir, 1);
	g->gs->ops->unshare(g->gs, s->root, 1);
}

static struct guest honest;

/* ---- tests ---------------------------------------------------------------------------- */

static void test_adopt_and_connect(void **state)
{
	(void)state;
	assert_int_equal(xgpu_xenstub_introduce(T.stub, 1, "honest1"), 0);
	attach(1, "512");
	WAIT_UNTIL(num(BE "/1/0/state") == 2);
	struct xgpud_domain *dom = xdom(1);
	assert_non_null(dom);
	assert_string_equal(dom->name, "honest1");
	assert_int_equal(dom->domid, 1);
	assert_int_equal(dom->sd.credit, 512);

	guest_open(&honest, 1, 0);
	struct lie none = {0};
	assert_int_equal(guest_connect(&honest, &none), 4);
	assert_int_equal(honest.root->ack.status, 0);
	assert_int_equal(honest.root->ack.domid, 1);
	assert_int_equal(honest.root->ack.version, XGPU_PROTO_VERSION);
	assert_int_equal(__atomic_load_n(&honest.root->be_alive, __ATOMIC_ACQUIRE), 1);
	gkey(&honest, "state", "4");
	/* The guest library says Connected on first use: so does the backend. */
	wr("/local/domain/1/device/vgpu/0/state", "4");
	WAIT_UNTIL(num(BE "/1/0/state") == 4);
	roundtrip(&honest);
	roundtrip(&honest);
	assert_int_equal(atomic_load(&dom->nchannels), 1);
	assert_true(log_has("channel"));
}

/* One lying channel n of domain 2: refused with an error naming what, a log
 * line, and the honest guest still served. */
static void liar(uint32_t n, const struct lie *l, const char *what, bool nacked)
{
	struct guest g;
	guest_open(&g, 2, n);
	long st = guest_connect(&g, l);
	if (st != 6)
		fail_msg("channel %u (%s): backend state %ld, not 6", n, what, st);
	assert_true(be_chan_error_has(2, n, what));
	assert_true(log_has(what));
	/* Refused after its root page was mapped: the guest learns why there too. */
	if (nacked) {
		assert_int_not_equal(g.root->ack.status, 0);
		assert_non_null(strstr(g.root->ack.message, what));
	}
	guest_close(&g);
	roundtrip(&honest);
}

static void test_liars(void **state)
{
	(void)state;
	assert_int_equal(xgpu_xenstub_introduce(T.stub, 2, "liar2"), 0);
	assert_int_equal(xgpu_xenstub_introduce(T.stub, 3, "bystander3"), 0);
	attach(2, "256");
	WAIT_UNTIL(num(BE "/2/0/state") == 2);

	liar(0, &(struct lie){.ring_pages = 5}, "lists", true);
	liar(1, &(struct lie){.pages_s = "99999999"}, "ring-pages", false);
	liar(2, &(struct lie){.grant_to = 3}, "cannot map root page", false);
	liar(3, &(struct lie){.port_for = 3}, "cannot bind event channel", false);
	liar(4, &(struct lie){.port_override = 4000}, "cannot bind event channel 4000", false);
	liar(5, &(struct lie){.protocol = 999}, "protocol version mismatch", false);
	liar(6, &(struct lie){.root_version = 999}, "root page speaks xgpu protocol 999", true);
	liar(7, &(struct lie){.task_zero = true}, "task", false);
	liar(8, &(struct lie){.pages_s = "12abc"}, "ring-pages = '12abc'", false);
	liar(9, &(struct lie){.task = 5}, "names task 77, the task key 5", true);
	/* A value's bytes reach the log printable only: no forged lines. */
	liar(15, &(struct lie){.pages_s = "1\nFORGED xgpud line"}, "ring-pages = '1?FORGED", false);
	assert_false(log_line_starts("FORGED"));
}

static void test_out_of_order(void **state)
{
	(void)state;
	struct guest g;
	struct lie none = {0};
	/* Initialised before the backend said InitWait. */
	guest_open(&g, 2, 10);
	guest_share(&g, &none);
	guest_publish(&g, &none);
	WAIT_UNTIL(be_chan_state(2, 10) == 6);
	assert_true(be_chan_error_has(2, 10, "before the backend said InitWait"));
	guest_close(&g);
	/* Connected before the backend said Connected. */
	guest_open(&g, 2, 11);
	gkey(&g, "state", "1");
	WAIT_UNTIL(be_chan_state(2, 11) == 2);
	gkey(&g, "state", "4");
	WAIT_UNTIL(be_chan_state(2, 11) == 6);
	assert_true(be_chan_error_has(2, 11, "while the backend waits"));
	guest_close(&g);
	/* Garbage state. */
	guest_open(&g, 2, 12);
	gkey(&g, "state", "x1");
	WAIT_UNTIL(be_chan_state(2, 12) == 6);
	assert_true(be_chan_error_has(2, 12, "not a number"));
	guest_close(&g);
	/* Channel numbers out of range are never written for. */
	guest_open(&g, 2, 99);
	gkey(&g, "state", "1");
	for (int i = 0; i < 20; i++)
		pump(5);
	assert_false(exists(BE "/2/0/channel/99"));
	assert_true(log_has("ignoring channel '99'"));
	guest_close(&g);
	roundtrip(&honest);
}

/* Host segments: bytes written by the guest reach the device through
 * xgpud's mapping and come back into another segment; a segment whose root
 * page lies about its size is refused. */
static void test_segments(void **state)
{
	(void)state;
	struct guest *g = &honest;
	struct seg a, b, bad;
	seg_share(g, &a, 4, 4);
	seg_share(g, &b, 4, 4);
	seg_share(g, &bad, 2, 3);
	uint64_t size = 4 * XGPU_XEN_PAGE_SIZE;
	for (uint64_t i = 0; i < size; i++)
		((uint8_t *)a.mem)[i] = (uint8_t)(i * 7 + 3);
	struct xgpu_req_SEG_REGISTER rr = {.token = a.rootref, .size = size};
	struct xgpu_rsp_SEG_REGISTER ra, rb;
	assert_int_equal(call(g, XGPU_CALL_SEG_REGISTER, &rr, sizeof rr, &ra, sizeof ra), 0);
	rr.token = b.rootref;
	assert_int_equal(call(g, XGPU_CALL_SEG_REGISTER, &rr, sizeof rr, &rb, sizeof rb), 0);
	rr = (struct xgpu_req_SEG_REGISTER){.token = bad.rootref, .size = 2 * XGPU_XEN_PAGE_SIZE};
	assert_int_not_equal(call(g, XGPU_CALL_SEG_REGISTER, &rr, sizeof rr, NULL, 0), 0);
	assert_true(log_has("root page lists 3 pages, 2 announced"));
	rr = (struct xgpu_req_SEG_REGISTER){.token = 999999, .size = XGPU_XEN_PAGE_SIZE};
	assert_int_not_equal(call(g, XGPU_CALL_SEG_REGISTER, &rr, sizeof rr, NULL, 0), 0);

	struct xgpu_req_MEM_ALLOC ma = {.size = size};
	struct xgpu_rsp_MEM_ALLOC mr;
	assert_int_equal(call(g, XGPU_CALL_MEM_ALLOC, &ma, sizeof ma, &mr, sizeof mr), 0);
	struct xgpu_req_MEMCPY_HTOD_SEG up = {.dst = mr.dptr, .seg = ra.seg, .size = size};
	assert_int_equal(call(g, XGPU_CALL_MEMCPY_HTOD_SEG, &up, sizeof up, NULL, 0), 0);
	struct xgpu_req_MEMCPY_DTOH_SEG down = {.seg = rb.seg, .src = mr.dptr, .size = size};
	assert_int_equal(call(g, XGPU_CALL_MEMCPY_DTOH_SEG, &down, sizeof down, NULL, 0), 0);
	struct xgpu_req_DEVICE_SYNC ds = {0};
	assert_int_equal(call(g, XGPU_CALL_DEVICE_SYNC, &ds, sizeof ds, NULL, 0), 0);
	assert_memory_equal(a.mem, b.mem, size);

	struct xgpu_req_SEG_UNREGISTER su = {.seg = ra.seg};
	assert_int_equal(call(g, XGPU_CALL_SEG_UNREGISTER, &su, sizeof su, NULL, 0), 0);
	su.seg = rb.seg;
	assert_int_equal(call(g, XGPU_CALL_SEG_UNREGISTER, &su, sizeof su, NULL, 0), 0);
	struct xgpu_req_MEM_FREE mf = {.dptr = mr.dptr};
	assert_int_equal(call(g, XGPU_CALL_MEM_FREE, &mf, sizeof mf, NULL, 0), 0);
	seg_unshare(g, &a);
	seg_unshare(g, &b);
	seg_unshare(g, &bad);
	roundtrip(g);
}

static void test_rewrite_after_connected(void **state)
{
	(void)state;
	struct guest g;
	struct lie none = {0};
	guest_open(&g, 2, 13);
	assert_int_equal(guest_connect(&g, &none), 4);
	gkey(&g, "state", "4");
	roundtrip(&g);
	gkey(&g, "ring-ref", "%u", g.rootref + 1);
	WAIT_UNTIL(be_chan_state(2, 13) == 6);
	assert_true(be_chan_error_has(2, 13, "ring-ref changed after Initialised"));
	assert_true(log_has("ring-ref changed after Initialised"));
	WAIT_UNTIL(__atomic_load_n(&g.root->be_alive, __ATOMIC_ACQUIRE) == 0);
	guest_close(&g);
	roundtrip(&honest);
}

static void test_vanish_mid_handshake(void **state)
{
	(void)state;
	struct guest g;
	struct lie none = {0};
	guest_open(&g, 2, 14);
	guest_share(&g, &none);
	gkey(&g, "state", "1");
	WAIT_UNTIL(be_chan_state(2, 14) == 2);
	guest_publish(&g, &none);
	/* The process dies before xgpud looks: its grants and port go. */
	g.gs->ops->close(g.gs);
	g.gs = NULL;
	g.evt->ops->close(g.evt);
	g.evt = NULL;
	WAIT_UNTIL(be_chan_state(2, 14) == 6);
	char *e = rd(BE "/2/0/channel/14/error");
	assert_non_null(e);
	assert_true(strstr(e, "cannot bind") || strstr(e, "cannot map"));
	free(e);
	guest_close(&g);
	roundtrip(&honest);
}

static void test_process_death(void **state)
{
	(void)state;
	struct guest g;
	struct lie none = {0};
	guest_open(&g, 1, 1);
	assert_int_equal(guest_connect(&g, &none), 4);
	gkey(&g, "state", "4");
	roundtrip(&g);
	struct xgpud_domain *dom = xdom(1);
	assert_int_equal(atomic_load(&dom->nchannels), 2);
	/* Its grants end with the process: fe_alive clears, the port fires. */
	g.gs->ops->close(g.gs);
	g.gs = NULL;
	WAIT_UNTIL(!exists("/local/domain/1/device/vgpu/0/channel/1") && !exists(BE "/1/0/channel/1"));
	WAIT_UNTIL(atomic_load(&dom->nchannels) == 1);
	assert_true(log_has("guest process is gone"));
	guest_close(&g);
	roundtrip(&honest);
}

static void test_guest_close(void **state)
{
	(void)state;
	struct guest g;
	struct lie none = {0};
	guest_open(&g, 1, 2);
	assert_int_equal(guest_connect(&g, &none), 4);
	gkey(&g, "state", "4");
	roundtrip(&g);
	gkey(&g, "state", "5");
	WAIT_UNTIL(be_chan_state(1, 2) == 6);
	assert_false(exists(BE "/1/0/channel/2/error"));
	assert_int_equal(__atomic_load_n(&g.root->be_alive, __ATOMIC_ACQUIRE), 0);
	assert_int_equal(g.xs->ops->rm(g.xs, 0, "/local/domain/1/device/vgpu/0/channel/2"), 0);
	WAIT_UNTIL(!exists(BE "/1/0/channel/2"));
	/* n is free again. */
	guest_close(&g);
	guest_open(&g, 1, 2);
	assert_int_equal(guest_connect(&g, &none), 4);
	roundtrip(&g);
	gkey(&g, "state", "5");
	WAIT_UNTIL(be_chan_state(1, 2) == 6);
	guest_close(&g);
}

static void test_live_keys(void **state)
{
	(void)state;
	struct xgpud_domain *dom = xdom(1);
	wr(BE "/1/0/credit", "1024");
	WAIT_UNTIL(dom->sd.credit == 1024);
	assert_true(log_has("credit 512 -> 1024"));
	wr(BE "/1/0/credit", "lots");
	WAIT_UNTIL(log_has_now("credit = 'lots'"));
	assert_int_equal(dom->sd.credit, 1024);
	wr(BE "/1/0/credit", "70000");
	WAIT_UNTIL(log_has_now("credit = '70000'"));
	assert_int_equal(dom->sd.credit, 1024);
	wr(BE "/1/0/sla", "0.25");
	WAIT_UNTIL(dom->sd.sla > 0.2);
	wr(BE "/1/0/mem-limit", "1G");
	WAIT_UNTIL(__atomic_load_n(&dom->mem_limit, __ATOMIC_RELAXED) == (1ull << 30) ||
		   dom->gpu->total_mem < (1ull << 30));
	/* "0" (xl-gpu's "no limit") restores the default, without a warning. */
	wr(BE "/1/0/mem-limit", "0");
	WAIT_UNTIL(log_has_now("memory limit back to the default"));
	assert_true(__atomic_load_n(&dom->mem_limit, __ATOMIC_RELAXED) == dom->gpu->total_mem);
	assert_false(log_has("mem-limit = '0'"));
	wr(BE "/1/0/kernel-timeout", "5");
	WAIT_UNTIL(atomic_load(&dom->kernel_timeout_s) == 5);
	assert_true(log_has("kernel timeout 0 s -> 5 s"));
	wr(BE "/1/0/kernel-timeout", "forever");
	WAIT_UNTIL(log_has_now("kernel-timeout = 'forever'"));
	assert_int_equal(atomic_load(&dom->kernel_timeout_s), 5);
	wr(BE "/1/0/kernel-timeout", "0");
	WAIT_UNTIL(atomic_load(&dom->kernel_timeout_s) == 0);

	struct xgpu_sched *s = T.d.gpus[0].sched;
	wr(BE "/policy", "accc");
	WAIT_UNTIL(!strcmp(xgpu_sched_policy(s)->name, "accc"));
	assert_true(log_has("policy rr -> accc"));
	wr(BE "/policy", "fastest");
	WAIT_UNTIL(log_has_now("'fastest': unknown policy"));
	assert_string_equal(xgpu_sched_policy(s)->name, "accc");
	wr(BE "/gpu/0/policy", "wfq");
	WAIT_UNTIL(!strcmp(xgpu_sched_policy(s)->name, "wfq"));
	assert_int_equal(T.xs0->ops->rm(T.xs0, 0, BE "/gpu/0/policy"), 0);
	WAIT_UNTIL(!strcmp(xgpu_sched_policy(s)->name, "accc"));
	roundtrip(&honest);
}

/* Answers the flood has had so far. */
static _Atomic uint64_t flood_got;

/* Keeps a channel's poller busy with NOPs, never letting it sleep, until
 * xgpud lets go of the root page (or 10 s pass). */
static void *flood(void *arg)
{
	struct guest *g = arg;
	uint64_t sent = 0, got = 0;
	for (uint64_t until = xgpu_now_ns() + 10000000000ull; xgpu_now_ns() < until;) {
		if (!__atomic_load_n(&g->root->be_alive, __ATOMIC_ACQUIRE))
			break;
		while (xgpu_slot_ready(&g->v.rsp)) {
			xgpu_q_release(&g->v.rsp, 1);
			atomic_store(&flood_got, ++got);
		}
		if (sent - got < 8 && xgpu_q_space_for(&g->v.req, 1) > 0) {
			uint8_t *slot = xgpu_q_unit(&g->v.req, g->v.req.idx);
			struct xgpu_req_hdr h = {
			    .call = XGPU_CALL_NOP, .len = sizeof(struct xgpu_req_NOP), .seq = ++sent};
			memcpy(slot, &h, sizeof h);
			memset(slot + sizeof h, 0, sizeof(struct xgpu_req_NOP));
			xgpu_slot_seal(&g->v.req);
			if (xgpu_q_publish(&g->v.req, 1))
				g->evt->ops->notify(g->evt, (uint32_t)g->port);
		}
	}
	return (void *)(uintptr_t)got;
}

static void test_detach(void **state)
{
	(void)state;
	struct guest g;
	struct lie none = {0};
	guest_open(&g, 2, 20);
	assert_int_equal(guest_connect(&g, &none), 4);
	roundtrip(&g);
	/* A guest that keeps its poller busy is detached all the same. */
	pthread_t t;
	atomic_store(&flood_got, 0);
	assert_int_equal(pthread_create(&t, NULL, flood, &g), 0);
	/* Its executor busy with it (however long a loaded host takes). */
	for (int i = 0; i < 500 && atomic_load(&flood_got) <= 10; i++)
		usleep(10000);
	wr(BE "/2/0/state", "5");
	WAIT_UNTIL(num(BE "/2/0/state") == 6);
	void *got;
	pthread_join(t, &got);
	assert_true((uintptr_t)got > 10);
	assert_false(exists(BE "/2/0/channel"));
	assert_int_equal(__atomic_load_n(&g.root->be_alive, __ATOMIC_ACQUIRE), 0);
	guest_close(&g);
	assert_non_null(xdom(2)); /* its statistics stay until the domain goes */
	roundtrip(&honest);
}

/* A guest writing in its device directory while the toolstack detaches
 * cannot write Connected over the backend's Closing. */
static void test_detach_under_guest_writes(void **state)
{
	(void)state;
	assert_int_equal(xgpu_xenstub_introduce(T.stub, 4, "busy4"), 0);
	attach(4, "256");
	WAIT_UNTIL(num(BE "/4/0/state") == 2);
	struct guest g;
	guest_open(&g, 4, 0);
	const char *fst = "/local/domain/4/device/vgpu/0/state";
	assert_int_equal(g.xs->ops->write(g.xs, 0, fst, "4", 1), 0);
	WAIT_UNTIL(num(BE "/4/0/state") == 4);
	/* More writes than xgpud handles in one round, queued before the
	 * toolstack's Closing. */
	for (int i = 0; i < 600; i++)
		assert_int_equal(g.xs->ops->write(g.xs, 0, fst, "4", 1), 0);
	wr(BE "/4/0/state", "5");
	usleep(100000);
	WAIT_UNTIL(num(BE "/4/0/state") == 6);
	guest_close(&g);
	assert_int_equal(xgpu_xenstub_release(T.stub, 4), 0);
	WAIT_UNTIL(!exists(BE "/4") && xdom(4) == NULL);
	roundtrip(&honest);
}

static void test_release_sweeps(void **state)
{
	(void)state;
	/* Attach again, then the domain dies with a channel mid-handshake and
	 * one connected. */
	assert_int_equal(T.xs0->ops->rm(T.xs0, 0, "/local/domain/2/device/vgpu/0/channel"), 0);
	wr(BE "/2/0/state", "1");
	WAIT_UNTIL(num(BE "/2/0/state") == 2);
	struct guest a, b;
	struct lie none = {0};
	guest_open(&a, 2, 0);
	assert_int_equal(guest_connect(&a, &none), 4);
	guest_open(&b, 2, 1);
	gkey(&b, "state", "1");
	WAIT_UNTIL(be_chan_state(2, 1) == 2);
	assert_int_equal(xgpu_xenstub_release(T.stub, 2), 0);
	WAIT_UNTIL(!exists(BE "/2") && xdom(2) == NULL);
	assert_true(log_has("domain 2: gone"));
	guest_close(&a);
	guest_close(&b);
	/* A stale directory of a dead domain is swept too. */
	wr(BE "/9/0/state", "4");
	assert_int_equal(xgpu_xenstub_release(T.stub, 3), 0);
	WAIT_UNTIL(!exists(BE "/9"));
	roundtrip(&honest);
	/* Honest's domain goes last: its connected channel is closed. */
	assert_int_equal(xgpu_xenstub_release(T.stub, 1), 0);
	WAIT_UNTIL(!exists(BE "/1") && xdom(1) == NULL);
	guest_close(&honest);
}

/* ---- setup ------------------------------------------------------------------------------ */

static int setup(void **state)
{
	(void)state;
	const char *tmp = getenv("XGPU_TMP");
	snprintf(T.dir, sizeof T.dir, "%s/xenbusXXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(T.dir))
		return -1;
	snprintf(T.sock, sizeof T.sock, "%s/xs.sock", T.dir);
	snprintf(T.logpath, sizeof T.logpath, "%s/xgpud.log", T.dir);
	char err[512];
	T.stub = xgpu_xenstub_start(T.sock, err, sizeof err);
	if (!T.stub) {
		fprintf(stderr, "xenstub: %s\n", err);
		return -1;
	}
	setenv("XGPU_XEN_STUB", T.sock, 1);
	unsetenv("XGPU_XEN_DOMID");
	T.xs0 = xgpu_xs_open_stub(T.sock, 0, err, sizeof err);
	if (!T.xs0)
		return -1;
	/* xgpud's log goes to a file the tests read. */
	int p[2];
	tee_out = open(T.logpath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	tee_err = dup(2);
	if (tee_out < 0 || tee_err < 0 || pipe2(p, O_CLOEXEC) < 0 || dup2(p[1], 2) < 0)
		return -1;
	close(p[1]);
	tee_in = p[0];
	if (pthread_create(&tee_thread, NULL, tee_main, NULL))
		return -1;
	setvbuf(stderr, NULL, _IONBF, 0);
	xgpu_log_init("xgpud", XGPU_LOG_DEBUG, false);

	static char simdrv[512], executor[512];
	const char *build = getenv("XGPU_BUILD");
	snprintf(simdrv, sizeof simdrv, "%s/lib/libxgpu-simdrv.so", build && *build ? build : "build");
	snprintf(executor, sizeof executor, "%s/bin/xgpu-executor", build && *build ? build : "build");
	T.d.o = (struct xgpud_opts){
	    .transport = "xen",
	    .executor = "sim",
	    .policy = "rr",
	    .tick_ms = 10,
	    .sim_driver = simdrv,
	    .executor_path = executor,
	    .log_level = XGPU_LOG_DEBUG,
	    .spin_ns = 0,
	    .stall_timeout_s = 60,
	    .max_channels_per_domain = 32,
	    .max_domains_per_uid = 16,
	    .max_domains = 64,
	    .pinned_limit = 1ull << 30,
	};
	/* The executors' sockets go beside it. */
	snprintf(T.d.socket_path, sizeof T.d.socket_path, "%.200s/xgpud.sock", T.dir);
	if (xgpud_init(&T.d, err, sizeof err) < 0) {
		fprintf(stderr, "xgpud_init: %s\n", err);
		return -1;
	}
	xgpud_transport_host(&T.d, &T.host);
	T.xb = xgpu_xenbus_open(&T.host, err, sizeof err);
	if (!T.xb) {
		fprintf(stderr, "xenbus: %s\n", err);
		return -1;
	}
	for (int i = 0; i < 5; i++)
		pump(5);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	xgpud_shutdown(&T.d, false);
	xgpu_xenbus_close(T.xb);
	T.xs0->ops->close(T.xs0);
	xgpu_xenstub_stop(T.stub);
	/* The tee ends when the last writer of its pipe (fd 2) is gone. */
	dup2(tee_err, 2);
	pthread_join(tee_thread, NULL);
	close(tee_in);
	close(tee_out);
	close(tee_err);
	char cmd[600];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", T.dir);
	if (system(cmd) != 0)
		return -1;
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_adopt_and_connect),
	    cmocka_unit_test(test_liars),
	    cmocka_unit_test(test_out_of_order),
	    cmocka_unit_test(test_segments),
	    cmocka_unit_test(test_rewrite_after_connected),
	    cmocka_unit_test(test_vanish_mid_handshake),
	    cmocka_unit_test(test_process_death),
	    cmocka_unit_test(test_guest_close),
	    cmocka_unit_test(test_live_keys),
	    cmocka_unit_test(test_detach),
	    cmocka_unit_test(test_detach_under_guest_writes),
	    cmocka_unit_test(test_release_sweeps),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
