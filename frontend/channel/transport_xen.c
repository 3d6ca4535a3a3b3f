/* SPDX-License-Identifier: Apache-2.0 */
/* transport_xen.c - the frontend's Xen transport (the guest side of the vgpu
 * split device, see xenvgpu.h): one channel per process under
 * device/vgpu/0/channel/<n>, the region and host segments shared as grant
 * pages described by a root page, and one event channel to dom0 carrying the
 * signals both ways. The root page's unmap notification tells xgpud when
 * this process dies; its be_alive byte and the backend's channel state tell
 * us when xgpud is gone.
 *
 * Everything the backend writes (its xenstore keys, the ack and be_alive in
 * the root page) is copied before use; the backend path is checked against
 * the one the ABI prescribes so a guest cannot be steered elsewhere. */
#include "remote.h"
#include "transport.h"

#include "util.h"
#include "xenif.h"
#include "xenvgpu.h"

#include <cuda_runtime_api.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DEV_DIR "device/vgpu/0"
#define WATCH_TOKEN "xgpu-fe"

/* A shared area: npages region pages, the directory pages listing their
 * refs and the root page listing the directories. */
struct xen_share {
	void *pages;
	unsigned npages;
	uint32_t *dirs;
	unsigned ndir;
	struct xgpu_xen_root *root;
	uint32_t root_ref;
	struct xen_share *next; /* host segments only */
};

struct xen_chan {
	pthread_mutex_t lock; /* xenstore handle and the segment list */
	struct xgpu_xs *xs;
	struct xgpu_evtchn *ev;
	struct xgpu_gntshr *gs;
	uint32_t domid;
	int port;
	unsigned n;
	bool have_dir; /* our channel/<n> exists */
	bool watching;
	bool be_alive_seen;
	bool gone;
	char fe_dir[64];    /* DEV_DIR/channel/<n>, relative */
	char be_dev[96];    /* the backend's device directory */
	char be_state[128]; /* be_dev/channel/<n>/state */
	struct xen_share region;
	struct xen_share *segs;
	struct xen_chan *next_abandoned;
};

static int timeout_ms(void)
{
	const char *s = getenv("XGPU_XEN_TIMEOUT_MS");
	long v;
	if (s && xgpu_parse_long(s, 1, 600000, &v) == 0)
		return (int)v;
	return 10000;
}

static void share_free(struct xen_chan *xc, struct xen_share *s)
{
	if (s->root)
		xc->gs->ops->unshare(xc->gs, s->root, 1);
	if (s->dirs)
		xc->gs->ops->unshare(xc->gs, s->dirs, s->ndir);
	if (s->pages)
		xc->gs->ops->unshare(xc->gs, s->pages, s->npages);
	memset(s, 0, sizeof *s);
}

/* Shares npages zeroed pages writable to dom0 with their directories and a
 * root page (with the unmap notification when notify_port >= 0). Everything
 * is writable: xgpud may map directories either way, and a writable grant
 * may be mapped read-only. */
static int share_area(struct xen_chan *xc, unsigned npages, int notify_port, struct xen_share *s)
{
	memset(s, 0, sizeof *s);
	if (!npages || npages > XGPU_XEN_MAX_REGION_PAGES) {
		errno = EINVAL;
		return -1;
	}
	unsigned ndir = (npages + XGPU_XEN_REFS_PER_DIR - 1) / XGPU_XEN_REFS_PER_DIR;
	uint32_t *refs = calloc(npages, sizeof *refs);
	uint32_t dir_refs[XGPU_XEN_ROOT_MAX_DIRS];
	if (!refs)
		return -1;
	s->pages = xc->gs->ops->share_pages(xc->gs, 0, npages, refs, true);
	if (!s->pages)
		goto fail;
	s->npages = npages;
	s->dirs = xc->gs->ops->share_pages(xc->gs, 0, ndir, dir_refs, true);
	if (!s->dirs)
		goto fail;
	s->ndir = ndir;
	memcpy(s->dirs, refs, (size_t)npages * sizeof *refs);
	if (notify_port >= 0)
		s->root = xc->gs->ops->share_page_notify(xc->gs, 0, true, XGPU_XEN_ROOT_FE_ALIVE_OFFSET,
							 notify_port, &s->root_ref);
	else
		s->root = xc->gs->ops->share_pages(xc->gs, 0, 1, &s->root_ref, true);
	if (!s->root)
		goto fail;
	s->root->magic = XGPU_XEN_ROOT_MAGIC;
	s->root->version = XGPU_PROTO_VERSION;
	s->root->npages = npages;
	s->root->ndir = ndir;
	s->root->fe_alive = 1;
	memcpy(s->root->dir_refs, dir_refs, (size_t)ndir * sizeof *dir_refs);
	free(refs);
	return 0;
fail : {
	int e = errno;
	free(refs);
	share_free(xc, s);
	errno = e ? e : ENOMEM;
	return -1;
}
}

/* A state key as a number, or -1 if absent or not a state. */
static int read_state(struct xen_chan *xc, const char *path)
{
	uint64_t v;
	if (xgpu_xs_read_u64(xc->xs, 0, path, XGPU_XB_CLOSED, &v) < 0)
		return -1;
	return (int)v;
}

/* Copies the backend's error key for channel n into buf (empty if none). */
static void read_error(struct xen_chan *xc, char *buf, size_t len)
{
	char path[160];
	snprintf(path, sizeof path, "%s/channel/%u/error", xc->be_dev, xc->n);
	unsigned l = 0;
	char *e = xc->xs->ops->read(xc->xs, 0, path, &l);
	buf[0] = '\0';
	if (!e)
		return;
	size_t i = 0;
	/* The backend's words reach the user's terminal: printable only. */
	for (; i + 1 < len && i < l && e[i]; i++)
		buf[i] = (e[i] >= 0x20 && e[i] < 0x7f) ? e[i] : '?';
	buf[i] = '\0';
	free(e);
}

static void drain_watch(struct xen_chan *xc)
{
	char *p, *t;
	while (xc->xs->ops->read_watch(xc->xs, &p, &t) == 0) {
		free(p);
		free(t);
	}
}

/* Waits until the state at path is one of the states in mask (bit per
 * state), re-reading on every watch event and at least every 100 ms.
 * Returns the state, or the last state seen (-1: absent) on timeout with
 * *timed_out set. */
static int wait_state(struct xen_chan *xc, const char *path, unsigned mask, int ms, bool *timed_out)
{
	uint64_t until = xgpu_now_ns() + (uint64_t)ms * 1000000u;
	int fd = xc->xs->ops->watch_fd(xc->xs);
	*timed_out = false;
	for (;;) {
		int s = read_state(xc, path);
		if (s >= 0 && (mask & (1u << s)))
			return s;
		uint64_t now = xgpu_now_ns();
		if (now >= until) {
			*timed_out = true;
			return s;
		}
		uint64_t left = (until - now) / 1000000u;
		struct pollfd pfd = {fd, POLLIN, 0};
		poll(&pfd, fd >= 0 ? 1 : 0, left < 100 ? (int)left + 1 : 100);
		drain_watch(xc);
	}
}

/* Picks the lowest channel number free on both sides and creates our
 * channel/<n>/state = Initialising, atomically against other processes of
 * this domain. */
static int claim_channel(struct xen_chan *xc, char *err, size_t errlen)
{
	char be_chan[128];
	snprintf(be_chan, sizeof be_chan, "%s/channel", xc->be_dev);
	for (int attempt = 0; attempt < 100; attempt++) {
		xgpu_xs_tx tx = xc->xs->ops->transaction_start(xc->xs);
		if (!tx) {
			snprintf(err, errlen, "cannot start a xenstore transaction: %s", strerror(errno));
			return -1;
		}
		bool used[XGPU_XEN_MAX_CHANNELS] = {false};
		const char *dirs[2] = {DEV_DIR "/channel", be_chan};
		for (int d = 0; d < 2; d++) {
			unsigned num = 0;
			char **names = xc->xs->ops->directory(xc->xs, tx, dirs[d], &num);
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
		if (n == XGPU_XEN_MAX_CHANNELS) {
			xc->xs->ops->transaction_end(xc->xs, tx, true);
			snprintf(err, errlen,
				 "all %u channels of the vgpu device of domain %u are in use (one per CUDA "
				 "process)",
				 XGPU_XEN_MAX_CHANNELS, xc->domid);
			return -1;
		}
		char path[64];
		snprintf(path, sizeof path, DEV_DIR "/channel/%u/state", n);
		if (xgpu_xs_printf(xc->xs, tx, path, "%d", XGPU_XB_INITIALISING) < 0) {
			int e = errno;
			xc->xs->ops->transaction_end(xc->xs, tx, true);
			snprintf(err, errlen, "cannot write %s of domain %u: %s", path, xc->domid,
				 strerror(e));
			return -1;
		}
		if (xc->xs->ops->transaction_end(xc->xs, tx, false) == 0) {
			xc->n = n;
			snprintf(xc->fe_dir, sizeof xc->fe_dir, DEV_DIR "/channel/%u", n);
			snprintf(xc->be_state, sizeof xc->be_state, "%s/channel/%u/state", xc->be_dev, n);
			xc->have_dir = true;
			return 0;
		}
		if (errno != EAGAIN) {
			snprintf(err, errlen, "cannot claim a vgpu channel of domain %u: %s", xc->domid,
				 strerror(errno));
			return -1;
		}
	}
	snprintf(err, errlen, "cannot claim a vgpu channel of domain %u: xenstore stays busy", xc->domid);
	return -1;
}

/* Writes the channel's keys and Initialised in one transaction. */
static int publish(struct xen_chan *xc, uint32_t task, char *err, size_t errlen)
{
	for (int attempt = 0; attempt < 100; attempt++) {
		xgpu_xs_tx tx = xc->xs->ops->transaction_start(xc->xs);
		if (!tx)
			break;
		char p[5][96];
		static const char *const keys[5] = {"ring-ref", "ring-pages", "event-channel", "task",
						    "protocol"};
		const unsigned vals[5] = {xc->region.root_ref, xc->region.npages, (unsigned)xc->port, task,
					  XGPU_PROTO_VERSION};
		int bad = 0;
		for (int i = 0; i < 5 && !bad; i++) {
			snprintf(p[i], sizeof p[i], "%s/%s", xc->fe_dir, keys[i]);
			bad = xgpu_xs_printf(xc->xs, tx, p[i], "%u", vals[i]) < 0;
		}
		char sp[96];
		snprintf(sp, sizeof sp, "%s/state", xc->fe_dir);
		if (!bad)
			bad = xgpu_xs_printf(xc->xs, tx, sp, "%d", XGPU_XB_INITIALISED) < 0;
		if (bad) {
			int e = errno;
			xc->xs->ops->transaction_end(xc->xs, tx, true);
			snprintf(err, errlen, "cannot write the keys of %s of domain %u: %s", xc->fe_dir,
				 xc->domid, strerror(e));
			return -1;
		}
		if (xc->xs->ops->transaction_end(xc->xs, tx, false) == 0)
			return 0;
		if (errno != EAGAIN)
			break;
	}
	snprintf(err, errlen, "cannot write the keys of %s of domain %u: %s", xc->fe_dir, xc->domid,
		 strerror(errno));
	return -1;
}

static void set_state(struct xen_chan *xc, int state)
{
	char sp[96];
	snprintf(sp, sizeof sp, "%s/state", xc->fe_dir);
	xgpu_xs_printf(xc->xs, 0, sp, "%d", state);
}

/* Finds our domain and its vgpu device. */
static int find_device(struct xen_chan *xc, char *err, size_t errlen)
{
	uint64_t v;
	if (xgpu_xs_read_u64(xc->xs, 0, "domid", XGPU_XEN_DOMID_MAX, &v) < 0) {
		snprintf(err, errlen, "cannot read this domain's id from xenstore (domid): %s",
			 strerror(errno));
		return -1;
	}
	xc->domid = (uint32_t)v;
	unsigned len = 0;
	char *be = xc->xs->ops->read(xc->xs, 0, DEV_DIR "/backend", &len);
	if (!be) {
		if (errno == ENOENT)
			snprintf(err, errlen,
				 "this domain has no vgpu device; run xl-gpu attach %u in dom0 (no %s in "
				 "/local/domain/%u)",
				 xc->domid, DEV_DIR, xc->domid);
		else
			snprintf(err, errlen, "cannot read /local/domain/%u/%s/backend: %s", xc->domid,
				 DEV_DIR, strerror(errno));
		return -1;
	}
	snprintf(xc->be_dev, sizeof xc->be_dev, XGPU_XS_BACKEND_ROOT "/%u/0", xc->domid);
	bool ok = len == strlen(xc->be_dev) && !memcmp(be, xc->be_dev, len);
	free(be);
	if (!ok) {
		snprintf(err, errlen,
			 "/local/domain/%u/%s/backend does not name %s; the vgpu device was not set "
			 "up by xl-gpu attach",
			 xc->domid, DEV_DIR, xc->be_dev);
		return -1;
	}
	if (xgpu_xs_read_u64(xc->xs, 0, DEV_DIR "/backend-id", XGPU_XEN_DOMID_MAX, &v) == 0 && v != 0) {
		snprintf(err, errlen, "the vgpu device of domain %u has backend-id %llu; xgpud runs in dom0",
			 xc->domid, (unsigned long long)v);
		return -1;
	}
	return 0;
}

/* A string key of the backend's device directory: 1 when there, 0 when
 * absent, -1 when unreadable or longer than len - 1. */
static int read_be_key(struct xen_chan *xc, const char *key, char *buf, size_t len, char *err, size_t errlen)
{
	char path[160];
	unsigned n = 0;
	snprintf(path, sizeof path, "%s/%s", xc->be_dev, key);
	char *v = xc->xs->ops->read(xc->xs, 0, path, &n);
	if (!v) {
		if (errno == ENOENT)
			return 0;
		snprintf(err, errlen, "cannot read %s: %s", path, strerror(errno));
		return -1;
	}
	bool ok = n < len && memchr(v, '\0', n) == NULL;
	if (ok) {
		memcpy(buf, v, n);
		buf[n] = '\0';
	}
	explicit_bzero(v, n);
	free(v);
	if (!ok)
		snprintf(err, errlen, "%s is not a string of at most %zu bytes", path, len - 1);
	return ok ? 1 : -1;
}

/* Waits until xgpud in dom0 adopted the device. */
static int wait_adopted(struct xen_chan *xc, char *err, size_t errlen)
{
	char path[128];
	snprintf(path, sizeof path, "%s/state", xc->be_dev);
	bool to;
	int s = wait_state(xc, path,
			   1u << XGPU_XB_INITWAIT | 1u << XGPU_XB_CONNECTED | 1u << XGPU_XB_CLOSING |
			       1u << XGPU_XB_CLOSED,
			   timeout_ms(), &to);
	if (to) {
		snprintf(err, errlen,
			 "xgpud in dom0 has not picked up the vgpu device of domain %u (%s is %d, not 2 or "
			 "4); is xgpud running with --transport xen?",
			 xc->domid, path, s);
		return -1;
	}
	if (s == XGPU_XB_CLOSING || s == XGPU_XB_CLOSED) {
		snprintf(err, errlen, "the vgpu device of domain %u is being detached (%s is %d)", xc->domid,
			 path, s);
		return -1;
	}
	/* Connected: a guest library is present (the device's state). */
	if (read_state(xc, DEV_DIR "/state") == XGPU_XB_INITIALISING)
		xgpu_xs_printf(xc->xs, 0, DEV_DIR "/state", "%d", XGPU_XB_CONNECTED);
	return 0;
}

static void xen_release(struct xen_chan *xc)
{
	struct xen_share *s = xc->segs;
	while (s) {
		struct xen_share *next = s->next;
		share_free(xc, s);
		free(s);
		s = next;
	}
	if (xc->gs)
		share_free(xc, &xc->region);
	if (xc->xs) {
		if (xc->watching)
			xc->xs->ops->unwatch(xc->xs, xc->be_state, WATCH_TOKEN);
		if (xc->have_dir)
			xc->xs->ops->rm(xc->xs, 0, xc->fe_dir);
	}
	if (xc->ev) {
		if (xc->port >= 0)
			xc->ev->ops->unbind(xc->ev, (uint32_t)xc->port);
		xc->ev->ops->close(xc->ev);
	}
	if (xc->gs)
		xc->gs->ops->close(xc->gs);
	if (xc->xs)
		xc->xs->ops->close(xc->xs);
	pthread_mutex_destroy(&xc->lock);
	free(xc);
}

static int xen_open(struct xgpu_fe_chan *ch, size_t region_size, int (*init)(void *, size_t, void *),
		    void *init_arg, const struct xgpu_hello *hello, struct xgpu_hello_ack *ack, char *err,
		    size_t errlen)
{
	struct xen_chan *xc = calloc(1, sizeof *xc);
	int status = cudaErrorNoDevice;
	char why[200];
	if (!xc) {
		snprintf(err, errlen, "out of memory");
		return cudaErrorMemoryAllocation;
	}
	pthread_mutex_init(&xc->lock, NULL);
	xc->port = -1;
	if (!(xc->xs = xgpu_xs_open(why, sizeof why))) {
		snprintf(err, errlen, "cannot reach xenstore: %s", why);
		goto fail;
	}
	if (find_device(xc, err, errlen) < 0)
		goto fail;
	/* gpu = [ "remote=HOST:PORT, remote-key=FILE" ] (or remote-cert=...):
	 * a GPU host's xgpud serves this domain over the network, not dom0's. */
	char remote[300], psk[400];
	int r = read_be_key(xc, "remote", remote, sizeof remote, err, errlen);
	if (r > 0) {
		int k = read_be_key(xc, "remote-psk", psk, sizeof psk, err, errlen);
		if (k < 0)
			goto fail;
		struct xgpu_fe_remote_creds creds = {.psk = k > 0 ? psk : NULL};
		char *pem = NULL;
		if (k == 0) {
			/* Certificates: the domain's, its key, the GPU host's CA. */
			static const char *const keys[] = {"remote-cert", "remote-cert-key", "remote-ca"};
			const size_t one = XGPU_REMOTE_PEM_MAX + 1;
			if (!(pem = calloc(3, one))) {
				snprintf(err, errlen, "out of memory");
				goto fail;
			}
			for (unsigned i = 0; i < 3; i++) {
				int c = read_be_key(xc, keys[i], pem + i * one, one, err, errlen);
				if (c == 0)
					snprintf(
					    err, errlen,
					    "%s/remote names a GPU host but %s/remote-psk holds no key, and "
					    "%s/%s no certificate",
					    xc->be_dev, xc->be_dev, xc->be_dev, keys[i]);
				if (c <= 0) {
					explicit_bzero(pem, 3 * one);
					free(pem);
					goto fail;
				}
			}
			creds.cert = pem;
			creds.cert_key = pem + one;
			creds.ca = pem + 2 * one;
		}
		/* The xenstore handle goes with the channel, which says what
		 * became of it there (remote-state). */
		creds.xs = xc->xs;
		xc->xs = NULL;
		xen_release(xc);
		r = xgpu_fe_remote_open_xen(ch, region_size, init, init_arg, hello, ack, remote, &creds, err,
					    errlen);
		explicit_bzero(psk, sizeof psk);
		if (pem) {
			explicit_bzero(pem, 3 * (XGPU_REMOTE_PEM_MAX + 1));
			free(pem);
		}
		return r;
	}
	if (r < 0 || wait_adopted(xc, err, errlen) < 0)
		goto fail;
	if (!(xc->ev = xgpu_evtchn_open(why, sizeof why)) || !(xc->gs = xgpu_gntshr_open(why, sizeof why))) {
		snprintf(err, errlen, "cannot open Xen's %s: %s", xc->ev ? "grant sharing" : "event channels",
			 why);
		goto fail;
	}
	if (claim_channel(xc, err, errlen) < 0)
		goto fail;
	if (xc->xs->ops->watch(xc->xs, xc->be_state, WATCH_TOKEN) < 0) {
		snprintf(err, errlen, "cannot watch %s: %s", xc->be_state, strerror(errno));
		goto fail;
	}
	xc->watching = true;
	bool to;
	int s =
	    wait_state(xc, xc->be_state, 1u << XGPU_XB_INITWAIT | 1u << XGPU_XB_CLOSED, timeout_ms(), &to);
	if (to || s != XGPU_XB_INITWAIT) {
		read_error(xc, why, sizeof why);
		if (to)
			snprintf(err, errlen,
				 "xgpud in dom0 did not take up channel %u of domain %u (%s is %d)", xc->n,
				 xc->domid, xc->be_state, s);
		else
			snprintf(err, errlen, "xgpud refused channel %u of domain %u: %s", xc->n, xc->domid,
				 why[0] ? why : "(no reason given)");
		goto fail;
	}

	xc->port = xc->ev->ops->bind_unbound_port(xc->ev, 0);
	if (xc->port < 0) {
		snprintf(err, errlen, "cannot allocate an event channel for dom0: %s", strerror(errno));
		goto fail;
	}
	size_t npages = (region_size + XGPU_XEN_PAGE_SIZE - 1) / XGPU_XEN_PAGE_SIZE;
	if (npages > XGPU_XEN_MAX_REGION_PAGES ||
	    share_area(xc, (unsigned)npages, xc->port, &xc->region) < 0) {
		snprintf(err, errlen,
			 "cannot share a channel region of %zu pages with dom0: %s (the gntalloc grant "
			 "limit? a smaller XGPU_DATA_SIZE needs fewer)",
			 npages, strerror(errno));
		status = cudaErrorMemoryAllocation;
		goto fail;
	}
	region_size = npages * XGPU_XEN_PAGE_SIZE;
	if (init(xc->region.pages, region_size, init_arg) < 0) {
		snprintf(err, errlen, "cannot lay out a channel region of %zu bytes", region_size);
		status = cudaErrorInvalidValue;
		goto fail;
	}
	xc->region.root->hello = *hello;
	if (publish(xc, hello->task, err, errlen) < 0)
		goto fail;

	s = wait_state(xc, xc->be_state,
		       1u << XGPU_XB_CONNECTED | 1u << XGPU_XB_CLOSING | 1u << XGPU_XB_CLOSED, timeout_ms(),
		       &to);
	if (to || s != XGPU_XB_CONNECTED) {
		read_error(xc, why, sizeof why);
		if (to)
			snprintf(err, errlen,
				 "xgpud in dom0 did not answer the handshake on channel %u of domain %u (%s "
				 "is %d)",
				 xc->n, xc->domid, xc->be_state, s);
		else
			snprintf(err, errlen, "xgpud refused channel %u of domain %u: %s", xc->n, xc->domid,
				 why[0] ? why : "(no reason given)");
		goto fail;
	}
	memcpy(ack, &xc->region.root->ack, sizeof *ack);
	char peer[96];
	snprintf(peer, sizeof peer, "the root page of domain %u's channel holds no xgpud answer", xc->domid);
	if ((status = xgpu_fe_check_ack(ack, peer, err, errlen)) != 0)
		goto fail;
	xc->be_alive_seen = __atomic_load_n(&xc->region.root->be_alive, __ATOMIC_ACQUIRE) != 0;
	set_state(xc, XGPU_XB_CONNECTED);
	ch->region = xc->region.pages;
	ch->region_size = region_size;
	ch->priv = xc;
	return 0;
fail:
	if (xc->have_dir && xc->watching) {
		/* Tell xgpud we give up before the directory goes. */
		set_state(xc, XGPU_XB_CLOSED);
	}
	xen_release(xc);
	return status;
}

static void xen_kick(struct xgpu_fe_chan *ch)
{
	struct xen_chan *xc = ch->priv;
	xc->ev->ops->notify(xc->ev, (uint32_t)xc->port);
}

static bool backend_gone(struct xen_chan *xc)
{
	uint8_t alive = __atomic_load_n(&xc->region.root->be_alive, __ATOMIC_ACQUIRE);
	if (alive)
		xc->be_alive_seen = true;
	return xc->be_alive_seen && !alive;
}

static enum xgpu_wait_result xen_wait(struct xgpu_fe_chan *ch, int timeout_ms, bool answer)
{
	(void)answer;
	struct xen_chan *xc = ch->priv;
	if (xc->gone || backend_gone(xc))
		return XGPU_WAIT_PEER_GONE;
	struct pollfd pfd[2] = {{xc->ev->ops->fd(xc->ev), POLLIN, 0}, {-1, POLLIN, 0}};
	/* Only one thread at a time looks at xenstore. */
	bool xs_locked = pthread_mutex_trylock(&xc->lock) == 0;
	if (xs_locked)
		pfd[1].fd = xc->xs->ops->watch_fd(xc->xs);
	int r = poll(pfd, pfd[1].fd >= 0 ? 2 : 1, timeout_ms);
	if (r > 0 && (pfd[0].revents & (POLLERR | POLLHUP | POLLNVAL)))
		xc->gone = true;
	if (r > 0 && (pfd[0].revents & POLLIN)) {
		/* Bounded: a backend that keeps signalling cannot hold us here. */
		int p;
		for (int budget = 256; budget > 0 && (p = xc->ev->ops->pending(xc->ev)) >= 0; budget--)
			xc->ev->ops->unmask(xc->ev, (uint32_t)p);
	}
	if (xs_locked) {
		if (r > 0 && pfd[1].fd >= 0 && (pfd[1].revents & POLLIN)) {
			drain_watch(xc);
			int s = read_state(xc, xc->be_state);
			if (s != XGPU_XB_CONNECTED)
				xc->gone = true;
		}
		pthread_mutex_unlock(&xc->lock);
	}
	if (xc->gone || backend_gone(xc))
		return XGPU_WAIT_PEER_GONE;
	if (r < 0)
		return errno == EINTR ? XGPU_WAIT_KICKED : XGPU_WAIT_PEER_GONE;
	return r == 0 ? XGPU_WAIT_TIMEOUT : XGPU_WAIT_KICKED;
}

static int xen_share_segment(struct xgpu_fe_chan *ch, size_t size, void **ptr, uint64_t *token)
{
	struct xen_chan *xc = ch->priv;
	size_t npages = (size + XGPU_XEN_PAGE_SIZE - 1) / XGPU_XEN_PAGE_SIZE;
	if (!npages || npages > XGPU_XEN_MAX_REGION_PAGES)
		return cudaErrorMemoryAllocation;
	struct xen_share *s = calloc(1, sizeof *s);
	if (!s)
		return cudaErrorMemoryAllocation;
	pthread_mutex_lock(&xc->lock);
	int r = share_area(xc, (unsigned)npages, -1, s);
	if (r == 0) {
		s->next = xc->segs;
		xc->segs = s;
	}
	pthread_mutex_unlock(&xc->lock);
	if (r < 0) {
		free(s);
		return cudaErrorMemoryAllocation;
	}
	*ptr = s->pages;
	*token = s->root_ref;
	return 0;
}

static void xen_unshare_segment(struct xgpu_fe_chan *ch, void *ptr, size_t size)
{
	struct xen_chan *xc = ch->priv;
	pthread_mutex_lock(&xc->lock);
	struct xen_share **pp = &xc->segs;
	while (*pp && (*pp)->pages != ptr)
		pp = &(*pp)->next;
	struct xen_share *s = *pp;
	if (s) {
		*pp = s->next;
		share_free(xc, s);
	}
	pthread_mutex_unlock(&xc->lock);
	free(s);
}

static void xen_close(struct xgpu_fe_chan *ch)
{
	struct xen_chan *xc = ch->priv;
	if (!xc)
		return;
	pthread_mutex_lock(&xc->lock);
	if (!xc->gone && read_state(xc, xc->be_state) == XGPU_XB_CONNECTED) {
		set_state(xc, XGPU_XB_CLOSING);
		bool to;
		wait_state(xc, xc->be_state, 1u << XGPU_XB_CLOSED, 2000, &to);
	}
	pthread_mutex_unlock(&xc->lock);
	xen_release(xc);
	ch->priv = NULL;
	ch->region = NULL;
}

/* Channels a forked child dropped: kept reachable, never used again. */
static struct xen_chan *abandoned;
static pthread_mutex_t abandoned_lock = PTHREAD_MUTEX_INITIALIZER;

static void xen_abandon(struct xgpu_fe_chan *ch)
{
	struct xen_chan *xc = ch->priv;
	if (!xc)
		return;
	/* The handles are the parent's too: closing or unsharing through
	 * them would unbind its port or revoke its grants, and its xenstore
	 * connection may carry a reader thread that does not exist here. The
	 * event channel descriptor is the one copy that keeps the parent's
	 * port bound after the parent closes it, so that one goes. */
	close(xc->ev->ops->fd(xc->ev));
	pthread_mutex_init(&abandoned_lock, NULL);
	pthread_mutex_lock(&abandoned_lock);
	xc->next_abandoned = abandoned;
	abandoned = xc;
	pthread_mutex_unlock(&abandoned_lock);
	ch->priv = NULL;
	ch->region = NULL;
}

const struct xgpu_fe_transport_ops xgpu_fe_transport_xen = {
    .name = "xen",
    .open = xen_open,
    .kick = xen_kick,
    .wait = xen_wait,
    .share_segment = xen_share_segment,
    .unshare_segment = xen_unshare_segment,
    .close = xen_close,
    .abandon = xen_abandon,
};
