/* SPDX-License-Identifier: Apache-2.0 */
/* server.c - xgpu-xenstub's socket server and in-process API: one thread
 * polls the listening socket and every connection, decodes requests (every
 * length and count bounded; a malformed request drops that connection
 * only), and applies them to the model (xenmem.c) under one mutex that the
 * in-process calls (introduce, release, dump...) take too. */
#include "xenstub.h"
#include "xenmem.h"
#include "wire.h"
#include "fdpass.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#define MAX_CONNS 4096u

struct xgpu_xenstub {
	pthread_mutex_t mu;
	pthread_t thr;
	int lfd, wake[2];
	bool stop, started;
	unsigned nconns;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	struct xm m;
};

static const char *kind_name(uint32_t k)
{
	switch (k) {
	case XSW_XS:
		return "xenstore";
	case XSW_EVTCHN:
		return "evtchn";
	case XSW_GNTSHR:
		return "gntshr";
	case XSW_GNTTAB:
		return "gnttab";
	case XSW_CTL:
		return "control";
	}
	return "new";
}

static int read_full(int fd, void *buf, size_t len)
{
	char *p = buf;
	while (len) {
		ssize_t n = read(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int send_all(int fd, const void *buf, size_t len, const int *fds, int nfds)
{
	const char *p = buf;
	ssize_t n = xgpu_send_fds(fd, p, len, fds, nfds);
	if (n < 0)
		return -1;
	p += n;
	len -= (size_t)n;
	while (len) {
		n = send(fd, p, len, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int reply(int fd, int err, const void *body, uint32_t len, const int *fds, int nfds)
{
	size_t total = sizeof(struct xsw_rep) + len;
	char *b = malloc(total);
	if (!b)
		return -1;
	struct xsw_rep rep = {.err = err, .len = len};
	memcpy(b, &rep, sizeof rep);
	if (len)
		memcpy(b + sizeof rep, body, len);
	int r = send_all(fd, b, total, fds, nfds);
	free(b);
	return r;
}

/* Sends fds in XSW_FDS frames; read-only maps get descriptors reopened
 * read-only so that the mapper cannot map them writable. */
static int send_fds(int fd, const int *fds, unsigned n, bool ro)
{
	for (unsigned i = 0; i < n; i += XGPU_MAX_PASSED_FDS) {
		int batch[XGPU_MAX_PASSED_FDS];
		int k = 0, r;
		for (; k < XGPU_MAX_PASSED_FDS && i + (unsigned)k < n; k++) {
			if (ro) {
				char p[64];
				snprintf(p, sizeof p, "/proc/self/fd/%d", fds[i + (unsigned)k]);
				batch[k] = open(p, O_RDONLY | O_CLOEXEC);
				if (batch[k] < 0) {
					xgpu_close_fds(batch, k);
					return -1;
				}
			} else {
				batch[k] = fds[i + (unsigned)k];
			}
		}
		struct xsw_rep rep = {.err = 0, .len = 0};
		r = send_all(fd, &rep, sizeof rep, batch, k);
		if (ro)
			xgpu_close_fds(batch, k);
		if (r)
			return -1;
	}
	return 0;
}

/* Copies a counted string out of a request into a NUL-terminated one. */
static char *take_str(const char *p, uint32_t len, uint32_t max)
{
	if (len > max || memchr(p, '\0', len))
		return NULL;
	return strndup(p, len);
}

static int handle_xs(struct xgpu_xenstub *s, struct xm_conn *c, uint32_t op, const char *body, uint32_t len)
{
	struct xm *m = &s->m;
	struct xsw_xs q;
	if (len < sizeof q)
		return -1;
	memcpy(&q, body, sizeof q);
	if ((uint64_t)q.la + q.lb != len - sizeof q || q.la > XSW_PATH_MAX || q.lb > XSW_VALUE_MAX + 64)
		return -1;
	const char *a = body + sizeof q, *b = a + q.la;
	char *path = NULL, *val = NULL, *tok = NULL;
	unsigned vlen = 0;
	uint32_t u;
	int r = 0;
	/* Every op but these takes a path. */
	if (op != XSW_TX_START && op != XSW_TX_END && op != XSW_DOMAIN_EXISTS && op != XSW_CTL_RELEASE &&
	    op != XSW_CTL_FAILTX && !(path = take_str(a, q.la, XSW_PATH_MAX)))
		return reply(c->fd, EINVAL, NULL, 0, NULL, 0);
	switch (op) {
	case XSW_READ:
		r = xm_read(m, c, q.tx, path, &val, &vlen);
		break;
	case XSW_WRITE:
		r = q.lb > XSW_VALUE_MAX ? -E2BIG : xm_write(m, c, q.tx, path, b, q.lb, false);
		break;
	case XSW_MKDIR:
		r = xm_write(m, c, q.tx, path, "", 0, true);
		break;
	case XSW_RM:
		r = xm_rm(m, c, q.tx, path);
		break;
	case XSW_DIRECTORY:
		r = xm_directory(m, c, q.tx, path, &val, &vlen);
		break;
	case XSW_GET_PERMS: {
		struct xgpu_xs_perm p[XGPU_XS_PERMS_MAX];
		unsigned n = 0;
		r = xm_get_perms(m, c, q.tx, path, p, &n);
		if (!r) {
			vlen = n * (unsigned)sizeof *p;
			val = malloc(vlen + 1);
			if (val)
				memcpy(val, p, vlen);
			else
				r = -ENOMEM;
		}
		break;
	}
	case XSW_SET_PERMS: {
		struct xgpu_xs_perm p[XGPU_XS_PERMS_MAX];
		if (q.lb % sizeof *p || q.lb / sizeof *p > XGPU_XS_PERMS_MAX || q.lb == 0) {
			r = -EINVAL;
			break;
		}
		memcpy(p, b, q.lb);
		r = xm_set_perms(m, c, q.tx, path, p, q.lb / (unsigned)sizeof *p);
		break;
	}
	case XSW_WATCH:
	case XSW_UNWATCH:
		if (!(tok = take_str(b, q.lb, XSW_TOKEN_MAX)))
			r = -EINVAL;
		else
			r = op == XSW_WATCH ? xm_watch(m, c, path, tok) : xm_unwatch(m, c, path, tok);
		break;
	case XSW_TX_START:
		r = xm_tx_start(m, c, &u);
		if (!r) {
			val = malloc(sizeof u);
			if (!val)
				r = -ENOMEM;
			else
				memcpy(val, &u, vlen = sizeof u);
		}
		break;
	case XSW_TX_END:
		r = xm_tx_end(m, c, q.tx, q.a != 0);
		break;
	case XSW_DOMAIN_EXISTS:
		if (c->domid != 0) {
			r = -EACCES;
			break;
		}
		u = q.a <= XGPU_XEN_DOMID_MAX && xm_dom_live(m, q.a);
		val = malloc(sizeof u);
		if (!val)
			r = -ENOMEM;
		else
			memcpy(val, &u, vlen = sizeof u);
		break;
	default:
		free(path);
		return -1;
	}
	int rc = reply(c->fd, r < 0 ? -r : 0, r < 0 ? NULL : val, r < 0 ? 0 : vlen, NULL, 0);
	free(path);
	free(val);
	free(tok);
	return rc;
}

static int handle_ctl(struct xgpu_xenstub *s, struct xm_conn *c, uint32_t op, const char *body, uint32_t len)
{
	struct xm *m = &s->m;
	struct xsw_xs q;
	if (len < sizeof q)
		return -1;
	memcpy(&q, body, sizeof q);
	if ((uint64_t)q.la + q.lb != len - sizeof q || q.la > XSW_PATH_MAX)
		return -1;
	char *str = take_str(body + sizeof q, q.la, XSW_PATH_MAX), *text = NULL;
	int r;
	if (!str)
		return reply(c->fd, EINVAL, NULL, 0, NULL, 0);
	switch (op) {
	case XSW_CTL_INTRODUCE:
		r = xm_introduce(m, q.a, str);
		break;
	case XSW_CTL_RELEASE:
		r = xm_release(m, q.a);
		break;
	case XSW_CTL_FAILTX:
		m->fail_tx = q.a;
		r = 0;
		break;
	case XSW_CTL_DUMP:
		r = xm_dump(m, str, &text);
		break;
	default:
		free(str);
		return -1;
	}
	int rc = reply(c->fd, r < 0 ? -r : 0, text, text ? (uint32_t)strlen(text) : 0, NULL, 0);
	free(str);
	free(text);
	return rc;
}

static int handle_ev(struct xgpu_xenstub *s, struct xm_conn *c, uint32_t op, const char *body, uint32_t len)
{
	struct xm *m = &s->m;
	struct xsw_ev q;
	if (len != sizeof q)
		return -1;
	memcpy(&q, body, sizeof q);
	int r;
	switch (op) {
	case XSW_EV_NOTIFY:
		r = xm_ev_notify(m, c, q.a);
		break;
	case XSW_EV_BIND_UNBOUND:
		r = xm_ev_bind_unbound(m, c, q.a);
		break;
	case XSW_EV_BIND_INTERDOMAIN:
		r = xm_ev_bind_inter(m, c, q.a, q.b);
		break;
	case XSW_EV_UNBIND:
		r = xm_ev_unbind(m, c, q.a);
		break;
	case XSW_EV_UNMASK:
		r = xm_ev_unmask(m, c, q.a);
		break;
	default:
		return -1;
	}
	int32_t port = r > 0 ? r : 0;
	return reply(c->fd, r < 0 ? -r : 0, &port, sizeof port, NULL, 0);
}

static int handle_gnt(struct xgpu_xenstub *s, struct xm_conn *c, uint32_t op, const char *body, uint32_t len)
{
	struct xm *m = &s->m;
	if (op == XSW_GS_UNSHARE || op == XSW_GT_UNMAP) {
		struct xsw_ev q;
		if (len != sizeof q)
			return -1;
		memcpy(&q, body, sizeof q);
		int r = op == XSW_GS_UNSHARE ? xm_unshare(m, c, q.a) : xm_unmap(m, c, q.a);
		return reply(c->fd, r < 0 ? -r : 0, NULL, 0, NULL, 0);
	}
	struct xsw_grant q;
	if (len < sizeof q)
		return -1;
	memcpy(&q, body, sizeof q);
	if (q.count == 0 || q.count > XSW_GRANT_MAX)
		return reply(c->fd, EINVAL, NULL, 0, NULL, 0);
	if (op == XSW_GS_SHARE) {
		if (len != sizeof q)
			return -1;
		struct xm_share *sh;
		int r = xm_share(m, c, q.domid, q.count, q.writable != 0, q.notify_off, q.notify_port, &sh);
		if (r < 0)
			return reply(c->fd, -r, NULL, 0, NULL, 0);
		uint32_t n = (q.count + 1) * (uint32_t)sizeof(uint32_t);
		uint32_t *b = malloc(n);
		if (!b)
			return -1;
		b[0] = sh->id;
		memcpy(b + 1, sh->refs, q.count * sizeof(uint32_t));
		r = reply(c->fd, 0, b, n, &sh->seg->fd, 1);
		free(b);
		return r;
	}
	/* XSW_GT_MAP */
	if (len != sizeof q + (size_t)q.count * sizeof(uint32_t))
		return -1;
	uint32_t *refs = malloc(q.count * sizeof *refs);
	uint32_t *out = malloc((2 + 2 * (size_t)q.count) * sizeof *out);
	if (!refs || !out) {
		free(refs);
		free(out);
		return -1;
	}
	memcpy(refs, body + sizeof q, q.count * sizeof *refs);
	int *fds = NULL;
	unsigned nfds = 0;
	int r = xm_map(m, c, q.domid, q.count, refs, q.writable != 0, q.notify_off, q.notify_port, &out[0],
		       &fds, &nfds, out + 2);
	int rc;
	if (r < 0) {
		rc = reply(c->fd, -r, NULL, 0, NULL, 0);
	} else {
		out[1] = nfds;
		rc = reply(c->fd, 0, out, (uint32_t)((2 + 2 * (size_t)q.count) * sizeof *out), NULL, 0);
		if (!rc)
			rc = send_fds(c->fd, fds, nfds, !q.writable);
	}
	free(fds);
	free(refs);
	free(out);
	return rc;
}

static int handle_hello(struct xgpu_xenstub *s, struct xm_conn *c, const char *body, uint32_t len, int fd)
{
	struct xsw_hello h;
	if (len != sizeof h)
		return -1;
	memcpy(&h, body, sizeof h);
	if (h.magic != XSW_MAGIC || h.kind < XSW_XS || h.kind > XSW_CTL || h.domid > XGPU_XEN_DOMID_MAX)
		return -1;
	bool wants_ev = h.kind == XSW_XS || h.kind == XSW_EVTCHN;
	if (wants_ev != (fd >= 0))
		return -1;
	if (h.kind != XSW_CTL && !xm_dom_live(&s->m, h.domid)) {
		xm_log(&s->m, "refusing a %s handle for domain %u: no such domain", kind_name(h.kind),
		       h.domid);
		reply(c->fd, ESRCH, NULL, 0, NULL, 0);
		return -1;
	}
	c->kind = h.kind;
	c->domid = h.domid;
	c->hello = true;
	if (fd >= 0) {
		int fl = fcntl(fd, F_GETFL);
		fcntl(fd, F_SETFL, fl | O_NONBLOCK);
		c->evfd = fd;
	}
	if (h.kind != XSW_CTL)
		xm_log(&s->m, "dom%u: %s handle opened", c->domid, kind_name(c->kind));
	return reply(c->fd, 0, NULL, 0, NULL, 0);
}

/* As IOCTL_EVTCHN_RESTRICT_DOMID: the handle binds (or maps) domain a's
 * ports (grants) alone from now on, and cannot be widened again. */
static int handle_restrict(struct xgpu_xenstub *s, struct xm_conn *c, const char *body, uint32_t len)
{
	struct xsw_ev q;
	if (len != sizeof q)
		return -1;
	memcpy(&q, body, sizeof q);
	if (q.a > XGPU_XEN_DOMID_MAX || (c->restricted && c->only_domid != q.a))
		return reply(c->fd, EPERM, NULL, 0, NULL, 0);
	c->restricted = true;
	c->only_domid = q.a;
	xm_log(&s->m, "dom%u: %s handle restricted to domain %u", c->domid, kind_name(c->kind), q.a);
	return reply(c->fd, 0, NULL, 0, NULL, 0);
}

/* One request; -1 drops the connection. */
static int handle(struct xgpu_xenstub *s, struct xm_conn *c)
{
	struct xsw_hdr h;
	int fd = -1, nfds = 0;
	ssize_t n = xgpu_recv_fds(c->fd, &h, sizeof h, &fd, &nfds, 1, 0);
	if (n <= 0)
		return -1;
	if ((size_t)n < sizeof h && read_full(c->fd, (char *)&h + n, sizeof h - (size_t)n)) {
		xgpu_close_fds(&fd, nfds);
		return -1;
	}
	if (h.op == 0 || h.op >= XSW_OP_MAX || h.len > XSW_BODY_MAX || (nfds && h.op != XSW_HELLO) ||
	    (c->hello == (h.op == XSW_HELLO))) {
		xm_log(&s->m, "dom%u: malformed request (op %u, %u bytes), dropping the connection", c->domid,
		       h.op, h.len);
		xgpu_close_fds(&fd, nfds);
		return -1;
	}
	char *body = malloc(h.len + 1);
	if (!body || read_full(c->fd, body, h.len)) {
		free(body);
		xgpu_close_fds(&fd, nfds);
		return -1;
	}
	int r = -1;
	if (h.op == XSW_HELLO) {
		r = handle_hello(s, c, body, h.len, nfds ? fd : -1);
		if (r && nfds && c->evfd != fd)
			close(fd);
	} else if (c->kind == XSW_XS && h.op >= XSW_READ && h.op <= XSW_DOMAIN_EXISTS) {
		r = handle_xs(s, c, h.op, body, h.len);
	} else if (c->kind == XSW_EVTCHN && h.op >= XSW_EV_NOTIFY && h.op <= XSW_EV_UNMASK) {
		r = handle_ev(s, c, h.op, body, h.len);
	} else if (c->kind == XSW_GNTSHR && (h.op == XSW_GS_SHARE || h.op == XSW_GS_UNSHARE)) {
		r = handle_gnt(s, c, h.op, body, h.len);
	} else if (c->kind == XSW_GNTTAB && (h.op == XSW_GT_MAP || h.op == XSW_GT_UNMAP)) {
		r = handle_gnt(s, c, h.op, body, h.len);
	} else if ((c->kind == XSW_EVTCHN || c->kind == XSW_GNTTAB) && h.op == XSW_RESTRICT) {
		r = handle_restrict(s, c, body, h.len);
	} else if (c->kind == XSW_CTL && h.op >= XSW_CTL_INTRODUCE && h.op <= XSW_CTL_DUMP) {
		r = handle_ctl(s, c, h.op, body, h.len);
	}
	if (r)
		xm_log(&s->m, "dom%u: bad %s request (op %u, %u bytes), dropping the connection", c->domid,
		       kind_name(c->kind), h.op, h.len);
	free(body);
	return r;
}

static void conn_drop(struct xgpu_xenstub *s, struct xm_conn *c, const char *why)
{
	if (c->dead)
		return;
	if (c->hello && c->kind != XSW_CTL)
		xm_log(&s->m, "dom%u: %s handle closed (%s)", c->domid, kind_name(c->kind), why);
	xm_conn_gone(&s->m, c);
}

static void sweep(struct xgpu_xenstub *s)
{
	for (struct xm_conn **pp = &s->m.conns; *pp;) {
		struct xm_conn *c = *pp;
		if (c->overflow)
			conn_drop(s, c, "event queue overflow");
		if (!c->dead) {
			pp = &c->next;
			continue;
		}
		*pp = c->next;
		close(c->fd);
		if (c->evfd >= 0)
			close(c->evfd);
		free(c);
		s->nconns--;
	}
}

static void accept_one(struct xgpu_xenstub *s)
{
	int fd = accept4(s->lfd, NULL, NULL, SOCK_CLOEXEC);
	if (fd < 0)
		return;
	if (s->nconns >= MAX_CONNS) {
		xm_log(&s->m, "too many connections, refusing one");
		close(fd);
		return;
	}
	/* A client that stalls mid-request, or never reads its replies, loses
	 * its connection instead of holding the server. */
	struct timeval tv = {.tv_sec = 2};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
	struct xm_conn *c = calloc(1, sizeof *c);
	if (!c) {
		close(fd);
		return;
	}
	c->fd = fd;
	c->evfd = -1;
	c->next = s->m.conns;
	s->m.conns = c;
	s->nconns++;
}

static void *serve(void *arg)
{
	struct xgpu_xenstub *s = arg;
	struct pollfd *pfd = NULL;
	struct xm_conn **who = NULL;
	size_t cap = 0;
	pthread_mutex_lock(&s->mu);
	while (!s->stop) {
		sweep(s);
		size_t need = 2 + 2 * (size_t)s->nconns;
		if (need > cap) {
			cap = need * 2;
			struct pollfd *np = realloc(pfd, cap * sizeof *pfd);
			if (np)
				pfd = np;
			struct xm_conn **nw = realloc(who, cap * sizeof *who);
			if (nw)
				who = nw;
			if (!np || !nw) {
				cap = 0;
				pthread_mutex_unlock(&s->mu);
				usleep(10000);
				pthread_mutex_lock(&s->mu);
				continue;
			}
		}
		size_t n = 0;
		pfd[n++] = (struct pollfd){.fd = s->wake[0], .events = POLLIN};
		pfd[n++] = (struct pollfd){.fd = s->lfd, .events = POLLIN};
		for (struct xm_conn *c = s->m.conns; c; c = c->next) {
			who[n] = c;
			pfd[n++] = (struct pollfd){.fd = c->fd, .events = POLLIN};
			if (c->olen && c->evfd >= 0) {
				who[n] = c;
				pfd[n++] = (struct pollfd){.fd = c->evfd, .events = POLLOUT};
			}
		}
		pthread_mutex_unlock(&s->mu);
		int r = poll(pfd, n, -1);
		pthread_mutex_lock(&s->mu);
		if (r < 0)
			continue;
		if (pfd[0].revents) {
			char b[64];
			while (read(s->wake[0], b, sizeof b) > 0)
				;
		}
		if (pfd[1].revents & POLLIN)
			accept_one(s);
		for (size_t i = 2; i < n; i++) {
			struct xm_conn *c = who[i];
			if (!pfd[i].revents || c->dead)
				continue;
			if (pfd[i].fd == c->evfd && pfd[i].fd != c->fd) {
				xm_flush(c);
				continue;
			}
			if (handle(s, c))
				conn_drop(s, c, "closed or malformed");
		}
	}
	pthread_mutex_unlock(&s->mu);
	free(pfd);
	free(who);
	return NULL;
}

static void wake(struct xgpu_xenstub *s)
{
	char b = 1;
	if (write(s->wake[1], &b, 1) < 0) {
		/* full pipe: the server is awake anyway */
	}
}

struct xgpu_xenstub *xgpu_xenstub_start(const char *socket_path, char *err, size_t errlen)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	if (!socket_path || strlen(socket_path) >= sizeof sa.sun_path) {
		snprintf(err, errlen, "xenstub socket path '%s' is empty or too long",
			 socket_path ? socket_path : "");
		return NULL;
	}
	struct xgpu_xenstub *s = calloc(1, sizeof *s);
	if (!s) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	strcpy(s->path, socket_path);
	strcpy(sa.sun_path, socket_path);
	s->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	s->wake[0] = s->wake[1] = -1;
	if (s->lfd < 0 || pipe2(s->wake, O_CLOEXEC | O_NONBLOCK)) {
		snprintf(err, errlen, "xenstub: socket: %s", strerror(errno));
		goto fail;
	}
	/* Replace a stale socket only: never another file, never a live server. */
	struct stat st;
	if (!lstat(socket_path, &st)) {
		int probe = S_ISSOCK(st.st_mode) ? socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0) : -1;
		bool live = probe >= 0 && !connect(probe, (struct sockaddr *)&sa, sizeof sa);
		if (probe >= 0)
			close(probe);
		if (!S_ISSOCK(st.st_mode) || live) {
			snprintf(err, errlen, "xenstub: %s exists and is %s", socket_path,
				 live ? "served by a running xgpu-xenstub" : "not a socket");
			goto fail;
		}
		unlink(socket_path);
	}
	if (bind(s->lfd, (struct sockaddr *)&sa, sizeof sa) || listen(s->lfd, 64)) {
		snprintf(err, errlen, "xenstub: cannot listen on %s: %s", socket_path, strerror(errno));
		goto fail;
	}
	xm_init(&s->m);
	if (!s->m.root || !s->m.doms[0]) {
		snprintf(err, errlen, "out of memory");
		xm_fini(&s->m);
		unlink(socket_path);
		goto fail;
	}
	pthread_mutex_init(&s->mu, NULL);
	int e = pthread_create(&s->thr, NULL, serve, s);
	if (e) {
		snprintf(err, errlen, "xenstub: pthread_create: %s", strerror(e));
		xm_fini(&s->m);
		pthread_mutex_destroy(&s->mu);
		unlink(socket_path);
		goto fail;
	}
	s->started = true;
	return s;
fail:
	if (s->lfd >= 0)
		close(s->lfd);
	if (s->wake[0] >= 0) {
		close(s->wake[0]);
		close(s->wake[1]);
	}
	free(s);
	return NULL;
}

void xgpu_xenstub_stop(struct xgpu_xenstub *s)
{
	if (!s)
		return;
	pthread_mutex_lock(&s->mu);
	s->stop = true;
	pthread_mutex_unlock(&s->mu);
	wake(s);
	pthread_join(s->thr, NULL);
	for (struct xm_conn *c = s->m.conns; c; c = c->next)
		xm_conn_gone(&s->m, c);
	sweep(s);
	xm_fini(&s->m);
	close(s->lfd);
	close(s->wake[0]);
	close(s->wake[1]);
	unlink(s->path);
	pthread_mutex_destroy(&s->mu);
	free(s);
}

void xgpu_xenstub_set_log(struct xgpu_xenstub *s, FILE *log)
{
	pthread_mutex_lock(&s->mu);
	s->m.log = log;
	pthread_mutex_unlock(&s->mu);
}

static int ret_errno(int r)
{
	if (r < 0) {
		errno = -r;
		return -1;
	}
	return 0;
}

int xgpu_xenstub_introduce(struct xgpu_xenstub *s, uint32_t domid, const char *name)
{
	pthread_mutex_lock(&s->mu);
	int r = xm_introduce(&s->m, domid, name);
	pthread_mutex_unlock(&s->mu);
	wake(s);
	return ret_errno(r);
}

int xgpu_xenstub_release(struct xgpu_xenstub *s, uint32_t domid)
{
	pthread_mutex_lock(&s->mu);
	int r = xm_release(&s->m, domid);
	pthread_mutex_unlock(&s->mu);
	wake(s);
	return ret_errno(r);
}

void xgpu_xenstub_fail_transactions(struct xgpu_xenstub *s, unsigned n)
{
	pthread_mutex_lock(&s->mu);
	s->m.fail_tx = n;
	pthread_mutex_unlock(&s->mu);
}

char *xgpu_xenstub_dump(struct xgpu_xenstub *s, const char *path)
{
	char *text = NULL;
	pthread_mutex_lock(&s->mu);
	int r = xm_dump(&s->m, path, &text);
	pthread_mutex_unlock(&s->mu);
	if (r < 0) {
		errno = -r;
		return NULL;
	}
	return text;
}
