/* SPDX-License-Identifier: Apache-2.0 */
/* xenif_stub.c - the client side of every xenif.h ops table, talking to
 * xgpu-xenstub (tools/xenstub/) over its AF_UNIX socket. Each handle is its
 * own connection claiming a domid; closing it (or dying) is what closing
 * the Xen device would be. Xenstore and event-channel handles also get an
 * event stream (a socketpair whose other end the server holds), which is the
 * fd they hand out for poll. */
#include "xenif.h"
#include "fdpass.h"
#include "../tools/xenstub/wire.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

struct sconn {
	int fd, evfd;
	uint32_t domid;
	pthread_mutex_t mu;
};

static int full_io(int fd, void *buf, size_t len, bool wr)
{
	char *p = buf;
	while (len) {
		ssize_t n = wr ? send(fd, p, len, MSG_NOSIGNAL) : read(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (n == 0)
				errno = EPIPE;
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* A reply header (with up to max_fds descriptors) and its body. */
static int recv_reply(struct sconn *c, struct xsw_rep *rep, char **body, int *fds, int max_fds, int *nfds)
{
	int n_fds = 0, tmp[XGPU_MAX_PASSED_FDS];
	ssize_t n = xgpu_recv_fds(c->fd, rep, sizeof *rep, tmp, &n_fds, max_fds, 0);
	if (n <= 0) {
		if (n == 0)
			errno = EPIPE;
		return -1;
	}
	if ((size_t)n < sizeof *rep && full_io(c->fd, (char *)rep + n, sizeof *rep - (size_t)n, false)) {
		xgpu_close_fds(tmp, n_fds);
		return -1;
	}
	if (rep->len > XSW_BODY_MAX + 4096u) {
		xgpu_close_fds(tmp, n_fds);
		errno = EPROTO;
		return -1;
	}
	char *b = malloc(rep->len + 1u);
	if (!b || full_io(c->fd, b, rep->len, false)) {
		free(b);
		xgpu_close_fds(tmp, n_fds);
		if (!b)
			errno = ENOMEM;
		return -1;
	}
	b[rep->len] = '\0';
	if (body)
		*body = b;
	else
		free(b);
	for (int i = 0; i < n_fds; i++)
		fds[i] = tmp[i];
	if (nfds)
		*nfds = n_fds;
	else
		xgpu_close_fds(tmp, n_fds);
	return 0;
}

/* One request (three parts concatenated) and its reply; 0, or -1 with errno
 * (the server's error, or EPIPE/EPROTO when the connection failed). With
 * fd non-NULL, *fd gets the reply's descriptor (or -1). Caller holds c->mu. */
static int rpc_locked(struct sconn *c, uint32_t op, const void *a, size_t la, const void *b, size_t lb,
		      const void *d, size_t ld, char **out, uint32_t *outlen, int *fd, const int *sendfd)
{
	size_t len = la + lb + ld;
	if (len > XSW_BODY_MAX) {
		errno = EINVAL;
		return -1;
	}
	struct xsw_hdr h = {.op = op, .len = (uint32_t)len};
	char *buf = malloc(sizeof h + len);
	if (!buf) {
		errno = ENOMEM;
		return -1;
	}
	memcpy(buf, &h, sizeof h);
	if (la)
		memcpy(buf + sizeof h, a, la);
	if (lb)
		memcpy(buf + sizeof h + la, b, lb);
	if (ld)
		memcpy(buf + sizeof h + la + lb, d, ld);
	ssize_t n = xgpu_send_fds(c->fd, buf, sizeof h + len, sendfd, sendfd ? 1 : 0);
	int r = n < 0 ? -1 : full_io(c->fd, buf + n, sizeof h + len - (size_t)n, true);
	free(buf);
	if (r)
		return -1;
	struct xsw_rep rep;
	char *body = NULL;
	int nfds = 0, rfd = -1;
	if (recv_reply(c, &rep, &body, &rfd, 1, &nfds))
		return -1;
	if (fd)
		*fd = nfds ? rfd : -1;
	else if (nfds)
		close(rfd);
	if (rep.err) {
		free(body);
		if (fd && *fd >= 0) {
			close(*fd);
			*fd = -1;
		}
		errno = rep.err > 0 ? rep.err : EPROTO;
		return -1;
	}
	if (out) {
		*out = body;
		if (outlen)
			*outlen = rep.len;
	} else {
		free(body);
	}
	return 0;
}

static int rpc(struct sconn *c, uint32_t op, const void *a, size_t la, const void *b, size_t lb,
	       const void *d, size_t ld, char **out, uint32_t *outlen)
{
	pthread_mutex_lock(&c->mu);
	int r = rpc_locked(c, op, a, la, b, lb, d, ld, out, outlen, NULL, NULL);
	pthread_mutex_unlock(&c->mu);
	return r;
}

static int sc_open(struct sconn *c, const char *path, uint32_t domid, uint32_t kind, char *err, size_t errlen)
{
	static const char *const names[] = {"", "xenstore", "evtchn", "gntshr", "gnttab", "control"};
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	c->fd = c->evfd = -1;
	c->domid = domid;
	if (!path || strlen(path) >= sizeof sa.sun_path || domid > XGPU_XEN_DOMID_MAX) {
		snprintf(err, errlen, "xenstub socket '%s' or domain %u is invalid", path ? path : "", domid);
		errno = EINVAL;
		return -1;
	}
	strcpy(sa.sun_path, path);
	int sv[2] = {-1, -1};
	c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c->fd < 0 || connect(c->fd, (struct sockaddr *)&sa, sizeof sa)) {
		int e = errno;
		snprintf(err, errlen, "xenstub socket %s: %s", path, strerror(e));
		if (c->fd >= 0)
			close(c->fd);
		errno = e;
		return -1;
	}
	if ((kind == XSW_XS || kind == XSW_EVTCHN) &&
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv)) {
		int e = errno;
		snprintf(err, errlen, "xenstub %s event stream: %s", names[kind], strerror(e));
		close(c->fd);
		errno = e;
		return -1;
	}
	pthread_mutex_init(&c->mu, NULL);
	c->evfd = sv[0];
	struct xsw_hello h = {.magic = XSW_MAGIC, .kind = kind, .domid = domid};
	int r = rpc_locked(c, XSW_HELLO, &h, sizeof h, NULL, 0, NULL, 0, NULL, NULL, NULL,
			   sv[1] >= 0 ? &sv[1] : NULL);
	int e = errno;
	if (sv[1] >= 0)
		close(sv[1]);
	if (r) {
		if (e == ESRCH)
			snprintf(err, errlen, "xenstub at %s: domain %u does not exist (introduce it first)",
				 path, domid);
		else
			snprintf(err, errlen, "xenstub at %s: opening a %s handle for domain %u: %s", path,
				 names[kind], domid, strerror(e));
		close(c->fd);
		if (c->evfd >= 0)
			close(c->evfd);
		pthread_mutex_destroy(&c->mu);
		errno = e;
		return -1;
	}
	return 0;
}

static void sc_close(struct sconn *c)
{
	close(c->fd);
	if (c->evfd >= 0)
		close(c->evfd);
	pthread_mutex_destroy(&c->mu);
}

/* The next event frame on the event stream without blocking: malloc'd body
 * (NUL-terminated), or -1 with EAGAIN (none) or EPIPE (stream ended). */
static int next_event(struct sconn *c, char **body, uint32_t *len, uint32_t max)
{
	uint32_t l;
	ssize_t n;
	do
		n = recv(c->evfd, &l, sizeof l, MSG_DONTWAIT);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -1;
	if (n == 0) {
		errno = EPIPE;
		return -1;
	}
	/* The server writes whole frames; a partial one completes at once. */
	if ((size_t)n < sizeof l && full_io(c->evfd, (char *)&l + n, sizeof l - (size_t)n, false))
		return -1;
	if (l > max) {
		errno = EPROTO;
		return -1;
	}
	char *b = malloc(l + 1u);
	if (!b) {
		errno = ENOMEM;
		return -1;
	}
	if (full_io(c->evfd, b, l, false)) {
		free(b);
		return -1;
	}
	b[l] = '\0';
	*body = b;
	*len = l;
	return 0;
}

/* ---- xenstore ------------------------------------------------------------ */
struct stub_xs {
	struct xgpu_xs pub;
	struct sconn c;
};

#define XSC(xs) (&((struct stub_xs *)(xs))->c)

static int xs_req(struct xgpu_xs *xs, uint32_t op, xgpu_xs_tx tx, uint32_t a, const char *path, const void *b,
		  size_t lb, char **out, uint32_t *outlen)
{
	size_t la = path ? strlen(path) : 0;
	if (la > XSW_PATH_MAX || lb > XSW_VALUE_MAX + 64) {
		errno = la > XSW_PATH_MAX ? EINVAL : E2BIG;
		return -1;
	}
	struct xsw_xs q = {.tx = tx, .a = a, .la = (uint32_t)la, .lb = (uint32_t)lb};
	return rpc(XSC(xs), op, &q, sizeof q, path, la, b, lb, out, outlen);
}

static void xs_close(struct xgpu_xs *xs)
{
	if (!xs)
		return;
	sc_close(XSC(xs));
	free(xs);
}

static char *xs_read(struct xgpu_xs *xs, xgpu_xs_tx tx, const char *path, unsigned *len)
{
	char *out;
	uint32_t l;
	if (xs_req(xs, XSW_READ, tx, 0, path, NULL, 0, &out, &l))
		return NULL;
	if (len)
		*len = l;
	return out;
}

static int xs_write(struct xgpu_xs *xs, xgpu_xs_tx tx, const char *path, const void *data, unsigned len)
{
	if (len > XSW_VALUE_MAX) {
		errno = E2BIG;
		return -1;
	}
	return xs_req(xs, XSW_WRITE, tx, 0, path, data, len, NULL, NULL);
}

static int xs_mkdir(struct xgpu_xs *xs, xgpu_xs_tx tx, const char *path)
{
	return xs_req(xs, XSW_MKDIR, tx, 0, path, NULL, 0, NULL, NULL);
}

static int xs_rm(struct xgpu_xs *xs, xgpu_xs_tx tx, const char *path)
{
	return xs_req(xs, XSW_RM, tx, 0, path, NULL, 0, NULL, NULL);
}

static char **xs_directory(struct xgpu_xs *xs, xgpu_xs_tx tx, const char *path, unsigned *num)
{
	char *out;
	uint32_t l;
	if (xs_req(xs, XSW_DIRECTORY, tx, 0, path, NULL, 0, &out, &l))
		return NULL;
	unsigned n = 0;
	for (uint32_t i = 0; i < l; i++)
		n += out[i] == '\0';
	char **v = malloc((n + 1) * sizeof *v + l + 1);
	if (!v) {
		free(out);
		errno = ENOMEM;
		return NULL;
	}
	char *s = (char *)(v + n + 1);
	memcpy(s, out, l + 1);
	free(out);
	for (unsigned i = 0; i < n; i++) {
		v[i] = s;
		s += strlen(s) + 1;
	}
	v[n] = NULL;
	if (num)
		*num = n;
	return v;
}

static int xs_get_perms(struct xgpu_xs *xs, xgpu_xs_tx tx, const char *path, struct xgpu_xs_perm *perms,
			unsigned max, unsigned *num)
{
	char *out;
	uint32_t l;
	if (xs_req(xs, XSW_GET_PERMS, tx, 0, path, NULL, 0, &out, &l))
		return -1;
	unsigned n = l / (unsigned)sizeof *perms;
	if (n > max) {
		free(out);
		errno = E2BIG;
		return -1;
	}
	memcpy(perms, out, n * sizeof *perms);
	free(out);
	*num = n;
	return 0;
}

static int xs_set_perms(struct xgpu_xs *xs, xgpu_xs_tx tx, const char *path, const struct xgpu_xs_perm *perms,
			unsigned num)
{
	if (num == 0 || num > XGPU_XS_PERMS_MAX) {
		errno = EINVAL;
		return -1;
	}
	return xs_req(xs, XSW_SET_PERMS, tx, 0, path, perms, num * sizeof *perms, NULL, NULL);
}

static int xs_watch(struct xgpu_xs *xs, const char *path, const char *token)
{
	size_t tl = strlen(token);
	if (tl > XSW_TOKEN_MAX) {
		errno = EINVAL;
		return -1;
	}
	return xs_req(xs, XSW_WATCH, 0, 0, path, token, tl, NULL, NULL);
}

static int xs_unwatch(struct xgpu_xs *xs, const char *path, const char *token)
{
	size_t tl = strlen(token);
	if (tl > XSW_TOKEN_MAX) {
		errno = EINVAL;
		return -1;
	}
	return xs_req(xs, XSW_UNWATCH, 0, 0, path, token, tl, NULL, NULL);
}

static int xs_watch_fd(struct xgpu_xs *xs)
{
	return XSC(xs)->evfd;
}

static int xs_read_watch(struct xgpu_xs *xs, char **path, char **token)
{
	struct sconn *c = XSC(xs);
	char *b;
	uint32_t l;
	pthread_mutex_lock(&c->mu);
	int r = next_event(c, &b, &l, XSW_PATH_MAX + XSW_TOKEN_MAX + 2);
	pthread_mutex_unlock(&c->mu);
	if (r)
		return -1;
	size_t pl = strnlen(b, l);
	if (pl >= l || strnlen(b + pl + 1, l - pl - 1) >= l - pl - 1) {
		free(b);
		errno = EPROTO;
		return -1;
	}
	*path = strdup(b);
	*token = strdup(b + pl + 1);
	free(b);
	if (!*path || !*token) {
		free(*path);
		free(*token);
		errno = ENOMEM;
		return -1;
	}
	return 0;
}

static xgpu_xs_tx xs_transaction_start(struct xgpu_xs *xs)
{
	char *out;
	uint32_t l, id = 0;
	if (xs_req(xs, XSW_TX_START, 0, 0, NULL, NULL, 0, &out, &l))
		return 0;
	if (l == sizeof id)
		memcpy(&id, out, sizeof id);
	free(out);
	if (!id)
		errno = EPROTO;
	return id;
}

static int xs_transaction_end(struct xgpu_xs *xs, xgpu_xs_tx tx, bool abort)
{
	return xs_req(xs, XSW_TX_END, tx, abort, NULL, NULL, 0, NULL, NULL);
}

static int xs_domain_exists(struct xgpu_xs *xs, uint32_t domid)
{
	char *out;
	uint32_t l, v = 0;
	if (xs_req(xs, XSW_DOMAIN_EXISTS, 0, domid, NULL, NULL, 0, &out, &l))
		return -1;
	if (l == sizeof v)
		memcpy(&v, out, sizeof v);
	free(out);
	return v ? 1 : 0;
}

static const struct xgpu_xs_ops stub_xs_ops = {
    .close = xs_close,
    .read = xs_read,
    .write = xs_write,
    .mkdir = xs_mkdir,
    .rm = xs_rm,
    .directory = xs_directory,
    .get_perms = xs_get_perms,
    .set_perms = xs_set_perms,
    .watch = xs_watch,
    .unwatch = xs_unwatch,
    .watch_fd = xs_watch_fd,
    .read_watch = xs_read_watch,
    .transaction_start = xs_transaction_start,
    .transaction_end = xs_transaction_end,
    .domain_exists = xs_domain_exists,
};

struct xgpu_xs *xgpu_xs_open_stub(const char *path, uint32_t domid, char *err, size_t errlen)
{
	struct stub_xs *x = calloc(1, sizeof *x);
	if (!x) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	if (sc_open(&x->c, path, domid, XSW_XS, err, errlen)) {
		int e = errno;
		free(x);
		errno = e;
		return NULL;
	}
	x->pub.ops = &stub_xs_ops;
	return &x->pub;
}

/* ---- event channels -------------------------------------------------------- */
struct stub_ev {
	struct xgpu_evtchn pub;
	struct sconn c;
};

#define EVC(e) (&((struct stub_ev *)(e))->c)

static int ev_req(struct xgpu_evtchn *e, uint32_t op, uint32_t a, uint32_t b)
{
	struct xsw_ev q = {.a = a, .b = b};
	char *out;
	uint32_t l;
	int32_t port = 0;
	if (rpc(EVC(e), op, &q, sizeof q, NULL, 0, NULL, 0, &out, &l))
		return -1;
	if (l == sizeof port)
		memcpy(&port, out, sizeof port);
	free(out);
	return port;
}

static void ev_close(struct xgpu_evtchn *e)
{
	if (!e)
		return;
	sc_close(EVC(e));
	free(e);
}

static int ev_fd(struct xgpu_evtchn *e)
{
	return EVC(e)->evfd;
}

static int ev_notify(struct xgpu_evtchn *e, uint32_t port)
{
	return ev_req(e, XSW_EV_NOTIFY, port, 0) < 0 ? -1 : 0;
}

static int ev_bind_unbound(struct xgpu_evtchn *e, uint32_t remote_domid)
{
	return ev_req(e, XSW_EV_BIND_UNBOUND, remote_domid, 0);
}

static int ev_bind_interdomain(struct xgpu_evtchn *e, uint32_t remote_domid, uint32_t remote_port)
{
	return ev_req(e, XSW_EV_BIND_INTERDOMAIN, remote_domid, remote_port);
}

static int ev_unbind(struct xgpu_evtchn *e, uint32_t port)
{
	return ev_req(e, XSW_EV_UNBIND, port, 0) < 0 ? -1 : 0;
}

static int ev_unmask(struct xgpu_evtchn *e, uint32_t port)
{
	return ev_req(e, XSW_EV_UNMASK, port, 0) < 0 ? -1 : 0;
}

static int ev_pending(struct xgpu_evtchn *e)
{
	struct sconn *c = EVC(e);
	char *b;
	uint32_t l, port;
	pthread_mutex_lock(&c->mu);
	int r = next_event(c, &b, &l, sizeof port);
	pthread_mutex_unlock(&c->mu);
	if (r)
		return -1;
	if (l != sizeof port) {
		free(b);
		errno = EPROTO;
		return -1;
	}
	memcpy(&port, b, sizeof port);
	free(b);
	return (int)port;
}

/* The connection and its event stream: whoever holds them is the handle. */
static int export_conn(struct sconn *c, int *fds)
{
	int n = 0;
	fds[n] = fcntl(c->fd, F_DUPFD_CLOEXEC, 0);
	if (fds[n++] < 0)
		return -1;
	if (c->evfd >= 0) {
		fds[n] = fcntl(c->evfd, F_DUPFD_CLOEXEC, 0);
		if (fds[n++] < 0) {
			int e = errno;
			xgpu_close_fds(fds, n - 1);
			errno = e;
			return -1;
		}
	}
	return n;
}

static int ev_export(struct xgpu_evtchn *e, int fds[XGPU_XEN_EXPORT_FDS])
{
	return export_conn(EVC(e), fds);
}

static const struct xgpu_evtchn_ops stub_ev_ops = {
    .export_fds = ev_export,
    .close = ev_close,
    .fd = ev_fd,
    .notify = ev_notify,
    .bind_unbound_port = ev_bind_unbound,
    .bind_interdomain = ev_bind_interdomain,
    .unbind = ev_unbind,
    .pending = ev_pending,
    .unmask = ev_unmask,
};

struct xgpu_evtchn *xgpu_evtchn_open_stub(const char *path, uint32_t domid, char *err, size_t errlen)
{
	struct stub_ev *x = calloc(1, sizeof *x);
	if (!x) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	if (sc_open(&x->c, path, domid, XSW_EVTCHN, err, errlen)) {
		int e = errno;
		free(x);
		errno = e;
		return NULL;
	}
	x->pub.ops = &stub_ev_ops;
	return &x->pub;
}

/* ---- grants ---------------------------------------------------------------- */
/* A region this handle shared or mapped, and the server's id for it. */
struct region {
	struct region *next;
	void *addr;
	unsigned count;
	uint32_t id;
};

struct stub_gnt {
	union {
		struct xgpu_gntshr shr;
		struct xgpu_gnttab tab;
	} pub;
	struct sconn c;
	struct region *regions;
};

static int region_add(struct stub_gnt *g, void *addr, unsigned count, uint32_t id)
{
	struct region *r = malloc(sizeof *r);
	if (!r)
		return -1;
	*r = (struct region){g->regions, addr, count, id};
	g->regions = r;
	return 0;
}

/* Removes the region at addr of count pages; its id, or -1 with EINVAL. */
static int64_t region_take(struct stub_gnt *g, void *addr, unsigned count)
{
	for (struct region **pp = &g->regions; *pp; pp = &(*pp)->next)
		if ((*pp)->addr == addr && (*pp)->count == count) {
			struct region *r = *pp;
			uint32_t id = r->id;
			*pp = r->next;
			free(r);
			return id;
		}
	errno = EINVAL;
	return -1;
}

static void gnt_close(struct stub_gnt *g)
{
	if (!g)
		return;
	while (g->regions) {
		struct region *r = g->regions;
		g->regions = r->next;
		munmap(r->addr, (size_t)r->count * XGPU_XEN_PAGE_SIZE);
		free(r);
	}
	sc_close(&g->c);
	free(g);
}

static int gnt_end(struct stub_gnt *g, uint32_t op, void *addr, unsigned count)
{
	pthread_mutex_lock(&g->c.mu);
	int64_t id = region_take(g, addr, count);
	pthread_mutex_unlock(&g->c.mu);
	if (id < 0)
		return -1;
	munmap(addr, (size_t)count * XGPU_XEN_PAGE_SIZE);
	struct xsw_ev q = {.a = (uint32_t)id};
	return rpc(&g->c, op, &q, sizeof q, NULL, 0, NULL, 0, NULL, NULL);
}

static void gntshr_close(struct xgpu_gntshr *g)
{
	gnt_close((struct stub_gnt *)g);
}

static void *share(struct xgpu_gntshr *gs, uint32_t domid, unsigned count, uint32_t *refs, bool writable,
		   int32_t noff, int32_t nport)
{
	struct stub_gnt *g = (struct stub_gnt *)gs;
	if (count == 0 || count > XSW_GRANT_MAX) {
		errno = EINVAL;
		return NULL;
	}
	struct xsw_grant q = {
	    .domid = domid, .count = count, .writable = writable, .notify_off = noff, .notify_port = nport};
	char *out;
	uint32_t l;
	int fd = -1;
	pthread_mutex_lock(&g->c.mu);
	int r = rpc_locked(&g->c, XSW_GS_SHARE, &q, sizeof q, NULL, 0, NULL, 0, &out, &l, &fd, NULL);
	if (r) {
		pthread_mutex_unlock(&g->c.mu);
		return NULL;
	}
	uint32_t id = 0;
	void *addr = MAP_FAILED;
	if (l == (count + 1) * sizeof(uint32_t) && fd >= 0) {
		memcpy(&id, out, sizeof id);
		memcpy(refs, out + sizeof id, count * sizeof *refs);
		addr =
		    mmap(NULL, (size_t)count * XGPU_XEN_PAGE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	} else {
		errno = EPROTO;
	}
	int e = errno;
	free(out);
	if (fd >= 0)
		close(fd);
	if (addr != MAP_FAILED && region_add(g, addr, count, id)) {
		munmap(addr, (size_t)count * XGPU_XEN_PAGE_SIZE);
		addr = MAP_FAILED;
		e = ENOMEM;
	}
	pthread_mutex_unlock(&g->c.mu);
	if (addr == MAP_FAILED) {
		if (id) {
			struct xsw_ev u = {.a = id};
			rpc(&g->c, XSW_GS_UNSHARE, &u, sizeof u, NULL, 0, NULL, 0, NULL, NULL);
		}
		errno = e;
		return NULL;
	}
	return addr;
}

static void *gntshr_share_pages(struct xgpu_gntshr *g, uint32_t domid, unsigned count, uint32_t *refs,
				bool writable)
{
	return share(g, domid, count, refs, writable, -1, -1);
}

static void *gntshr_share_page_notify(struct xgpu_gntshr *g, uint32_t domid, bool writable,
				      int32_t notify_offset, int32_t notify_port, uint32_t *ref)
{
	return share(g, domid, 1, ref, writable, notify_offset, notify_port);
}

static int gntshr_unshare(struct xgpu_gntshr *g, void *addr, unsigned count)
{
	return gnt_end((struct stub_gnt *)g, XSW_GS_UNSHARE, addr, count);
}

static const struct xgpu_gntshr_ops stub_gntshr_ops = {
    .close = gntshr_close,
    .share_pages = gntshr_share_pages,
    .share_page_notify = gntshr_share_page_notify,
    .unshare = gntshr_unshare,
};

static void gnttab_close(struct xgpu_gnttab *g)
{
	gnt_close((struct stub_gnt *)g);
}

static void *map(struct xgpu_gnttab *gt, unsigned count, uint32_t domid, const uint32_t *refs, bool writable,
		 int32_t noff, int32_t nport)
{
	struct stub_gnt *g = (struct stub_gnt *)gt;
	if (count == 0 || count > XSW_GRANT_MAX) {
		errno = EINVAL;
		return NULL;
	}
	struct xsw_grant q = {
	    .domid = domid, .count = count, .writable = writable, .notify_off = noff, .notify_port = nport};
	char *out = NULL;
	uint32_t l, id = 0, nfds = 0;
	int *fds = NULL, e = 0;
	void *addr = MAP_FAILED;
	pthread_mutex_lock(&g->c.mu);
	if (rpc_locked(&g->c, XSW_GT_MAP, &q, sizeof q, refs, count * sizeof *refs, NULL, 0, &out, &l, NULL,
		       NULL)) {
		e = errno;
		goto out;
	}
	uint32_t *o = (uint32_t *)out;
	if (l != (2 + 2 * (size_t)count) * sizeof *o || o[1] == 0 || o[1] > count) {
		e = EPROTO;
		goto out;
	}
	id = o[0];
	nfds = o[1];
	fds = malloc(nfds * sizeof *fds);
	if (!fds) {
		e = ENOMEM;
		goto out;
	}
	for (uint32_t i = 0; i < nfds; i += XGPU_MAX_PASSED_FDS) {
		struct xsw_rep rep;
		int k = 0;
		int want = nfds - i < XGPU_MAX_PASSED_FDS ? (int)(nfds - i) : XGPU_MAX_PASSED_FDS;
		if (recv_reply(&g->c, &rep, NULL, fds + i, want, &k) || k != want) {
			e = errno ? errno : EPROTO;
			if (!e || k != want)
				e = EPROTO;
			xgpu_close_fds(fds + i, k);
			nfds = i;
			goto out;
		}
	}
	size_t len = (size_t)count * XGPU_XEN_PAGE_SIZE;
	int prot = PROT_READ | (writable ? PROT_WRITE : 0);
	addr = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (addr == MAP_FAILED) {
		e = errno;
		goto out;
	}
	for (uint32_t i = 0; i < count;) {
		uint32_t fi = o[2 + 2 * i], pg = o[3 + 2 * i], run = 1;
		if (fi >= nfds) {
			e = EPROTO;
			break;
		}
		while (i + run < count && o[2 + 2 * (i + run)] == fi && o[3 + 2 * (i + run)] == pg + run)
			run++;
		void *p =
		    mmap((char *)addr + (size_t)i * XGPU_XEN_PAGE_SIZE, (size_t)run * XGPU_XEN_PAGE_SIZE,
			 prot, MAP_SHARED | MAP_FIXED, fds[fi], (off_t)pg * XGPU_XEN_PAGE_SIZE);
		if (p == MAP_FAILED) {
			e = errno;
			break;
		}
		i += run;
	}
	if (!e && region_add(g, addr, count, id))
		e = ENOMEM;
	if (e) {
		munmap(addr, len);
		addr = MAP_FAILED;
	}
out:
	if (fds)
		xgpu_close_fds(fds, (int)nfds);
	free(fds);
	free(out);
	pthread_mutex_unlock(&g->c.mu);
	if (addr == MAP_FAILED) {
		if (id) {
			struct xsw_ev u = {.a = id};
			rpc(&g->c, XSW_GT_UNMAP, &u, sizeof u, NULL, 0, NULL, 0, NULL, NULL);
		}
		errno = e;
		return NULL;
	}
	return addr;
}

static void *gnttab_map_domain_grant_refs(struct xgpu_gnttab *g, unsigned count, uint32_t domid,
					  const uint32_t *refs, bool writable)
{
	return map(g, count, domid, refs, writable, -1, -1);
}

static void *gnttab_map_grant_ref_notify(struct xgpu_gnttab *g, uint32_t domid, uint32_t ref, bool writable,
					 int32_t notify_offset, int32_t notify_port)
{
	return map(g, 1, domid, &ref, writable, notify_offset, notify_port);
}

static int gnttab_unmap(struct xgpu_gnttab *g, void *addr, unsigned count)
{
	return gnt_end((struct stub_gnt *)g, XSW_GT_UNMAP, addr, count);
}

static int gnttab_export(struct xgpu_gnttab *g, int fds[XGPU_XEN_EXPORT_FDS])
{
	return export_conn(&((struct stub_gnt *)g)->c, fds);
}

static const struct xgpu_gnttab_ops stub_gnttab_ops = {
    .export_fds = gnttab_export,
    .close = gnttab_close,
    .map_domain_grant_refs = gnttab_map_domain_grant_refs,
    .map_grant_ref_notify = gnttab_map_grant_ref_notify,
    .unmap = gnttab_unmap,
};

static struct stub_gnt *gnt_open(const char *path, uint32_t domid, uint32_t kind, char *err, size_t errlen)
{
	struct stub_gnt *x = calloc(1, sizeof *x);
	if (!x) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	if (sc_open(&x->c, path, domid, kind, err, errlen)) {
		int e = errno;
		free(x);
		errno = e;
		return NULL;
	}
	return x;
}

struct xgpu_gntshr *xgpu_gntshr_open_stub(const char *path, uint32_t domid, char *err, size_t errlen)
{
	struct stub_gnt *x = gnt_open(path, domid, XSW_GNTSHR, err, errlen);
	if (!x)
		return NULL;
	x->pub.shr.ops = &stub_gntshr_ops;
	return &x->pub.shr;
}

struct xgpu_gnttab *xgpu_gnttab_open_stub(const char *path, uint32_t domid, char *err, size_t errlen)
{
	struct stub_gnt *x = gnt_open(path, domid, XSW_GNTTAB, err, errlen);
	if (!x)
		return NULL;
	x->pub.tab.ops = &stub_gnttab_ops;
	return &x->pub.tab;
}

/* ---- one domain's handles, for another process -------------------------------- */

static int restrict_to(struct sconn *c, uint32_t domid, const char *what, char *err, size_t errlen)
{
	struct xsw_ev q = {.a = domid};
	if (rpc(c, XSW_RESTRICT, &q, sizeof q, NULL, 0, NULL, 0, NULL, NULL) == 0)
		return 0;
	snprintf(err, errlen, "xenstub: cannot restrict a %s handle to domain %u: %s", what, domid,
		 strerror(errno));
	return -1;
}

struct xgpu_evtchn *xgpu_evtchn_open_for_stub(const char *path, uint32_t self, uint32_t domid, char *err,
					      size_t errlen)
{
	struct xgpu_evtchn *e = xgpu_evtchn_open_stub(path, self, err, errlen);
	if (e && restrict_to(EVC(e), domid, "event-channel", err, errlen)) {
		ev_close(e);
		return NULL;
	}
	return e;
}

struct xgpu_gnttab *xgpu_gnttab_open_for_stub(const char *path, uint32_t self, uint32_t domid, char *err,
					      size_t errlen)
{
	struct xgpu_gnttab *g = xgpu_gnttab_open_stub(path, self, err, errlen);
	if (g && restrict_to(&((struct stub_gnt *)g)->c, domid, "grant-table", err, errlen)) {
		gnttab_close(g);
		return NULL;
	}
	return g;
}

/* A handle over a connection another process opened (and restricted). The
 * server knows which domain it plays; domid is only the one it was
 * restricted to, which the server enforces. */
static int import_conn(struct sconn *c, uint32_t domid, const int *fds, int nfds, int want, char *err,
		       size_t errlen)
{
	if (nfds != want) {
		snprintf(err, errlen, "a stub handle comes as %d descriptors, not %d", want, nfds);
		errno = EINVAL;
		return -1;
	}
	for (int i = 0; i < nfds; i++) {
		int type = 0;
		socklen_t tl = sizeof type;
		if (getsockopt(fds[i], SOL_SOCKET, SO_TYPE, &type, &tl) < 0 || type != SOCK_STREAM) {
			snprintf(err, errlen, "a stub handle's descriptor %d is not a stream socket", i);
			errno = EINVAL;
			return -1;
		}
	}
	c->fd = fds[0];
	c->evfd = nfds > 1 ? fds[1] : -1;
	c->domid = domid;
	pthread_mutex_init(&c->mu, NULL);
	return 0;
}

struct xgpu_evtchn *xgpu_evtchn_import_stub(uint32_t domid, const int *fds, int nfds, char *err,
					    size_t errlen)
{
	struct stub_ev *x = calloc(1, sizeof *x);
	if (!x || import_conn(&x->c, domid, fds, nfds, 2, err, errlen)) {
		if (!x)
			snprintf(err, errlen, "out of memory");
		free(x);
		return NULL;
	}
	x->pub.ops = &stub_ev_ops;
	return &x->pub;
}

struct xgpu_gnttab *xgpu_gnttab_import_stub(uint32_t domid, const int *fds, int nfds, char *err,
					    size_t errlen)
{
	struct stub_gnt *x = calloc(1, sizeof *x);
	if (!x || import_conn(&x->c, domid, fds, nfds, 1, err, errlen)) {
		if (!x)
			snprintf(err, errlen, "out of memory");
		free(x);
		return NULL;
	}
	x->pub.tab.ops = &stub_gnttab_ops;
	return &x->pub.tab;
}
