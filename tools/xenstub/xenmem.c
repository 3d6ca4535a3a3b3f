/* SPDX-License-Identifier: Apache-2.0 */
/* xenmem.c - xgpu-xenstub's model: a xenstore tree with C xenstored's
 * permission, watch and transaction rules, domains, per-domain event channel
 * ports, and grant tables whose pages are memfd pages. The server (server.c)
 * owns the sockets and calls in here under its mutex. */
#include "xenmem.h"
#include "wire.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#define PATHBUF (XSW_PATH_MAX + 64)

void xm_log(struct xm *m, const char *fmt, ...)
{
	if (!m->log)
		return;
	va_list ap;
	va_start(ap, fmt);
	fprintf(m->log, "xgpu-xenstub: ");
	vfprintf(m->log, fmt, ap);
	fprintf(m->log, "\n");
	fflush(m->log);
	va_end(ap);
}

/* ---- nodes ------------------------------------------------------------- */
static struct xm_node *node_new(const char *name, size_t nl)
{
	struct xm_node *n = calloc(1, sizeof *n);
	if (!n)
		return NULL;
	n->name = strndup(name, nl);
	n->value = strdup("");
	if (!n->name || !n->value) {
		free(n->name);
		free(n->value);
		free(n);
		return NULL;
	}
	return n;
}

static void node_free(struct xm_node *n)
{
	if (!n)
		return;
	for (unsigned i = 0; i < n->nkids; i++)
		node_free(n->kids[i]);
	free(n->kids);
	free(n->name);
	free(n->value);
	free(n);
}

static struct xm_node *node_clone(const struct xm_node *n)
{
	struct xm_node *c = calloc(1, sizeof *c);
	if (!c)
		return NULL;
	*c = *n;
	c->kids = NULL;
	c->nkids = c->capkids = 0;
	c->name = strdup(n->name);
	c->value = malloc(n->vlen + 1);
	if (c->value)
		memcpy(c->value, n->value, n->vlen + 1);
	if (n->nkids)
		c->kids = calloc(n->nkids, sizeof *c->kids);
	if (!c->name || !c->value || (n->nkids && !c->kids)) {
		node_free(c);
		return NULL;
	}
	c->capkids = n->nkids;
	for (unsigned i = 0; i < n->nkids; i++) {
		c->kids[i] = node_clone(n->kids[i]);
		if (!c->kids[i]) {
			node_free(c);
			return NULL;
		}
		c->nkids++;
	}
	return c;
}

/* The child called name[0..nl), or NULL with *at its insertion index. */
static struct xm_node *kid_find(const struct xm_node *n, const char *name, size_t nl, unsigned *at)
{
	unsigned lo = 0, hi = n->nkids;
	while (lo < hi) {
		unsigned mid = (lo + hi) / 2;
		const char *k = n->kids[mid]->name;
		int c = strncmp(k, name, nl);
		if (c == 0 && k[nl] != '\0')
			c = 1;
		if (c == 0) {
			if (at)
				*at = mid;
			return n->kids[mid];
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (at)
		*at = lo;
	return NULL;
}

static int kid_insert(struct xm_node *n, struct xm_node *kid, unsigned at)
{
	if (n->nkids == n->capkids) {
		unsigned cap = n->capkids ? n->capkids * 2 : 4;
		struct xm_node **k = realloc(n->kids, cap * sizeof *k);
		if (!k)
			return -ENOMEM;
		n->kids = k;
		n->capkids = cap;
	}
	memmove(&n->kids[at + 1], &n->kids[at], (n->nkids - at) * sizeof *n->kids);
	n->kids[at] = kid;
	n->nkids++;
	return 0;
}

/* Walks an absolute path; *parent gets the node above the result (or above
 * the first missing component). */
static struct xm_node *lookup(struct xm_node *root, const char *abs, struct xm_node **parent)
{
	struct xm_node *n = root, *up = NULL;
	const char *p = abs + 1;
	while (*p) {
		const char *e = strchrnul(p, '/');
		struct xm_node *k = kid_find(n, p, (size_t)(e - p), NULL);
		up = n;
		if (!k) {
			if (parent)
				*parent = up;
			return NULL;
		}
		n = k;
		p = *e ? e + 1 : e;
	}
	if (parent)
		*parent = up;
	return n;
}

static unsigned perm_for(const struct xgpu_xs_perm *p, unsigned n, uint32_t dom)
{
	if (dom == 0)
		return XGPU_XS_PERM_BOTH;
	if (n == 0)
		return 0;
	if (p[0].id == dom)
		return XGPU_XS_PERM_BOTH;
	for (unsigned i = 1; i < n; i++)
		if (p[i].id == dom)
			return p[i].perm & XGPU_XS_PERM_BOTH;
	return p[0].perm & XGPU_XS_PERM_BOTH;
}

static unsigned node_perm(const struct xm_node *n, uint32_t dom)
{
	return perm_for(n->perms, n->nperms, dom);
}

static int valid_char(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
	       ch == '-' || ch == '/' || ch == '_' || ch == '@';
}

int xm_abs_path(uint32_t domid, const char *in, size_t len, char *out, bool special_ok)
{
	if (len == 0 || len > XSW_PATH_MAX || memchr(in, '\0', len))
		return -EINVAL;
	if (in[0] == '@') {
		if (!special_ok)
			return -EINVAL;
		if ((len == 14 && !memcmp(in, "@releaseDomain", 14)) ||
		    (len == 16 && !memcmp(in, "@introduceDomain", 16))) {
			memcpy(out, in, len);
			out[len] = '\0';
			return 0;
		}
		return -EINVAL;
	}
	int n;
	if (in[0] == '/')
		n = snprintf(out, PATHBUF, "%.*s", (int)len, in);
	else
		n = snprintf(out, PATHBUF, "/local/domain/%u/%.*s", domid, (int)len, in);
	if (n < 0 || (size_t)n > XSW_PATH_MAX)
		return -EINVAL;
	for (int i = 0; i < n; i++) {
		if (!valid_char(out[i]))
			return -EINVAL;
		if (out[i] == '/' && i > 0 && out[i - 1] == '/')
			return -EINVAL;
	}
	if (n > 1 && out[n - 1] == '/')
		return -EINVAL;
	return 0;
}

/* ---- watches ----------------------------------------------------------- */
static bool under(const char *path, const char *top)
{
	size_t l = strlen(top);
	if (!strcmp(top, "/"))
		return path[0] == '/';
	return !strncmp(path, top, l) && (path[l] == '\0' || path[l] == '/');
}

void xm_flush(struct xm_conn *c)
{
	while (c->olen && c->evfd >= 0) {
		ssize_t n = send(c->evfd, c->obuf, c->olen, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				c->olen = 0; /* the client is gone; its connection will close too */
			return;
		}
		memmove(c->obuf, c->obuf + n, c->olen - (size_t)n);
		c->olen -= (size_t)n;
	}
}

void xm_push_event(struct xm *m, struct xm_conn *c, const void *body, uint32_t len)
{
	if (c->dead || c->evfd < 0 || c->overflow)
		return;
	size_t need = c->olen + sizeof len + len;
	if (need > XM_OBUF_MAX) {
		xm_log(m, "dom%u: event queue over %u bytes, dropping the connection", c->domid, XM_OBUF_MAX);
		c->overflow = true;
		return;
	}
	if (need > c->ocap) {
		size_t cap = c->ocap ? c->ocap : 4096;
		while (cap < need)
			cap *= 2;
		char *b = realloc(c->obuf, cap);
		if (!b) {
			c->overflow = true;
			return;
		}
		c->obuf = b;
		c->ocap = cap;
	}
	memcpy(c->obuf + c->olen, &len, sizeof len);
	memcpy(c->obuf + c->olen + sizeof len, body, len);
	c->olen = need;
	xm_flush(c);
}

static void send_watch_event(struct xm *m, struct xm_conn *c, const char *path, const char *token)
{
	size_t pl = strlen(path), tl = strlen(token);
	char *b = malloc(pl + tl + 2);
	if (!b) {
		c->overflow = true;
		return;
	}
	memcpy(b, path, pl + 1);
	memcpy(b + pl + 1, token, tl + 1);
	xm_push_event(m, c, b, (uint32_t)(pl + tl + 2));
	free(b);
}

static void fire(struct xm *m, const struct xm_event *ev)
{
	const char *path = ev->path;
	for (struct xm_conn *c = m->conns; c; c = c->next) {
		if (c->dead || c->kind != XSW_XS)
			continue;
		for (unsigned i = 0; i < c->nwatches; i++) {
			struct xm_watch *w = &c->watches[i];
			bool hit;
			if (path[0] == '@')
				hit = !strcmp(w->abs, path);
			else if (ev->prefix)
				hit = w->abs[0] == '/' && under(path, w->abs);
			else
				hit = !strcmp(w->abs, path);
			if (!hit)
				continue;
			if (path[0] != '@' &&
			    !(perm_for(ev->perms, ev->nperms, c->domid) & XGPU_XS_PERM_READ))
				continue;
			const char *shown = path;
			char home[48];
			int hl = snprintf(home, sizeof home, "/local/domain/%u/", c->domid);
			if (w->rel && !strncmp(path, home, (size_t)hl))
				shown = path + hl;
			send_watch_event(m, c, shown, w->token);
		}
	}
}

static void fire_special(struct xm *m, const char *name)
{
	struct xm_event ev = {.path = (char *)name};
	fire(m, &ev);
}

/* ---- store contexts ---------------------------------------------------- */
struct sctx {
	struct xm_node **root;
	struct xm_tx *tx;
};

static int get_ctx(struct xm *m, struct xm_conn *c, uint32_t txid, struct sctx *s)
{
	s->tx = NULL;
	s->root = &m->root;
	if (txid == 0)
		return 0;
	for (unsigned i = 0; i < c->ntxs; i++)
		if (c->txs[i].id == txid) {
			s->tx = &c->txs[i];
			s->root = &c->txs[i].root;
			return 0;
		}
	return -ENOENT;
}

static void emit(struct xm *m, struct sctx *s, const char *path, bool prefix, const struct xm_node *n)
{
	struct xm_event ev = {.path = (char *)path, .prefix = prefix, .nperms = n->nperms};
	memcpy(ev.perms, n->perms, sizeof ev.perms);
	if (!s->tx) {
		m->gen++;
		fire(m, &ev);
		return;
	}
	struct xm_tx *t = s->tx;
	t->changed = true;
	if (t->nevs == t->capevs) {
		unsigned cap = t->capevs ? t->capevs * 2 : 8;
		struct xm_event *e = realloc(t->evs, cap * sizeof *e);
		if (!e)
			return;
		t->evs = e;
		t->capevs = cap;
	}
	ev.path = strdup(path);
	if (ev.path)
		t->evs[t->nevs++] = ev;
}

static void tx_free(struct xm_tx *t)
{
	node_free(t->root);
	for (unsigned i = 0; i < t->nevs; i++)
		free(t->evs[i].path);
	free(t->evs);
	memset(t, 0, sizeof *t);
}

/* ---- store operations -------------------------------------------------- */
int xm_read(struct xm *m, struct xm_conn *c, uint32_t tx, const char *path, char **val, unsigned *len)
{
	char abs[PATHBUF];
	struct sctx s;
	int r = xm_abs_path(c->domid, path, strlen(path), abs, false);
	if (r || (r = get_ctx(m, c, tx, &s)))
		return r;
	struct xm_node *n = lookup(*s.root, abs, NULL);
	if (!n)
		return -ENOENT;
	if (!(node_perm(n, c->domid) & XGPU_XS_PERM_READ))
		return -EACCES;
	*val = malloc(n->vlen + 1);
	if (!*val)
		return -ENOMEM;
	memcpy(*val, n->value, n->vlen + 1);
	*len = n->vlen;
	return 0;
}

static unsigned count_owned(const struct xm_node *n, uint32_t domid)
{
	unsigned k = n->nperms && n->perms[0].id == domid;
	for (unsigned i = 0; i < n->nkids; i++)
		k += count_owned(n->kids[i], domid);
	return k;
}

/* Creates abs and missing parents as domid (write on the deepest existing
 * ancestor needed); the node, existing or new, in *out. */
static int create(struct xm_node *root, uint32_t domid, const char *abs, struct xm_node **out, bool *created)
{
	struct xm_node *n = root;
	const char *p = abs + 1;
	*created = false;
	while (*p) {
		const char *e = strchrnul(p, '/');
		unsigned at;
		struct xm_node *k = kid_find(n, p, (size_t)(e - p), &at);
		if (!k) {
			if (!*created && !(node_perm(n, domid) & XGPU_XS_PERM_WRITE))
				return -EACCES;
			/* a guest cannot grow the store without bound (xenstored's node quota) */
			if (!*created && domid != 0 && count_owned(root, domid) >= XM_NODE_QUOTA)
				return -ENOSPC;
			k = node_new(p, (size_t)(e - p));
			if (!k)
				return -ENOMEM;
			k->nperms = n->nperms;
			memcpy(k->perms, n->perms, sizeof k->perms);
			if (domid != 0)
				k->perms[0].id = domid;
			if (kid_insert(n, k, at)) {
				node_free(k);
				return -ENOMEM;
			}
			*created = true;
		}
		n = k;
		p = *e ? e + 1 : e;
	}
	*out = n;
	return 0;
}

int xm_write(struct xm *m, struct xm_conn *c, uint32_t tx, const char *path, const char *val, unsigned len,
	     bool mkdir)
{
	char abs[PATHBUF];
	struct sctx s;
	int r = xm_abs_path(c->domid, path, strlen(path), abs, false);
	if (r || (r = get_ctx(m, c, tx, &s)))
		return r;
	if (len > XSW_VALUE_MAX)
		return -E2BIG;
	struct xm_node *n = lookup(*s.root, abs, NULL);
	bool created = false;
	if (n) {
		/* as xenstored: write access first, then mkdir of an existing node is a no-op */
		if (!(node_perm(n, c->domid) & XGPU_XS_PERM_WRITE))
			return -EACCES;
		if (mkdir)
			return 0;
	} else if ((r = create(*s.root, c->domid, abs, &n, &created))) {
		return r;
	}
	if (!mkdir) {
		char *v = malloc(len + 1);
		if (!v)
			return -ENOMEM;
		memcpy(v, val, len);
		v[len] = '\0';
		free(n->value);
		n->value = v;
		n->vlen = len;
	}
	emit(m, &s, abs, true, n);
	return 0;
}

static void emit_tree(struct xm *m, struct sctx *s, char *path, size_t pl, const struct xm_node *n)
{
	for (unsigned i = 0; i < n->nkids; i++) {
		int k = snprintf(path + pl, PATHBUF - pl, "%s%s", pl > 1 ? "/" : "", n->kids[i]->name);
		if (k < 0 || pl + (size_t)k >= PATHBUF)
			continue;
		emit(m, s, path, false, n->kids[i]);
		emit_tree(m, s, path, pl + (size_t)k, n->kids[i]);
	}
	path[pl] = '\0';
}

static int rm_abs(struct xm *m, struct sctx *s, uint32_t domid, const char *abs)
{
	struct xm_node *parent = NULL;
	struct xm_node *n = lookup(*s->root, abs, &parent);
	if (!strcmp(abs, "/"))
		return -EINVAL;
	if (!n) {
		/* xenstored: removing a missing node whose parent exists is fine */
		const char *slash = strrchr(abs, '/');
		char up[PATHBUF];
		memcpy(up, abs, (size_t)(slash - abs));
		up[slash == abs ? 1 : slash - abs] = '\0';
		if (slash == abs)
			up[0] = '/';
		return lookup(*s->root, up, NULL) ? 0 : -ENOENT;
	}
	if (!(node_perm(n, domid) & XGPU_XS_PERM_WRITE))
		return -EACCES;
	char path[PATHBUF];
	size_t pl = strlen(abs);
	memcpy(path, abs, pl + 1);
	emit(m, s, abs, true, n);
	emit_tree(m, s, path, pl, n);
	unsigned at;
	const char *last = strrchr(abs, '/') + 1;
	kid_find(parent, last, strlen(last), &at);
	memmove(&parent->kids[at], &parent->kids[at + 1], (parent->nkids - at - 1) * sizeof *parent->kids);
	parent->nkids--;
	node_free(n);
	return 0;
}

int xm_rm(struct xm *m, struct xm_conn *c, uint32_t tx, const char *path)
{
	char abs[PATHBUF];
	struct sctx s;
	int r = xm_abs_path(c->domid, path, strlen(path), abs, false);
	if (r || (r = get_ctx(m, c, tx, &s)))
		return r;
	return rm_abs(m, &s, c->domid, abs);
}

int xm_directory(struct xm *m, struct xm_conn *c, uint32_t tx, const char *path, char **names, unsigned *len)
{
	char abs[PATHBUF];
	struct sctx s;
	int r = xm_abs_path(c->domid, path, strlen(path), abs, false);
	if (r || (r = get_ctx(m, c, tx, &s)))
		return r;
	struct xm_node *n = lookup(*s.root, abs, NULL);
	if (!n)
		return -ENOENT;
	if (!(node_perm(n, c->domid) & XGPU_XS_PERM_READ))
		return -EACCES;
	size_t total = 0;
	for (unsigned i = 0; i < n->nkids; i++)
		total += strlen(n->kids[i]->name) + 1;
	char *b = malloc(total + 1);
	if (!b)
		return -ENOMEM;
	size_t o = 0;
	for (unsigned i = 0; i < n->nkids; i++) {
		size_t l = strlen(n->kids[i]->name) + 1;
		memcpy(b + o, n->kids[i]->name, l);
		o += l;
	}
	*names = b;
	*len = (unsigned)total;
	return 0;
}

int xm_get_perms(struct xm *m, struct xm_conn *c, uint32_t tx, const char *path, struct xgpu_xs_perm *p,
		 unsigned *np)
{
	char abs[PATHBUF];
	struct sctx s;
	int r = xm_abs_path(c->domid, path, strlen(path), abs, false);
	if (r || (r = get_ctx(m, c, tx, &s)))
		return r;
	struct xm_node *n = lookup(*s.root, abs, NULL);
	if (!n)
		return -ENOENT;
	if (!(node_perm(n, c->domid) & XGPU_XS_PERM_READ))
		return -EACCES;
	memcpy(p, n->perms, n->nperms * sizeof *p);
	*np = n->nperms;
	return 0;
}

int xm_set_perms(struct xm *m, struct xm_conn *c, uint32_t tx, const char *path, const struct xgpu_xs_perm *p,
		 unsigned np)
{
	char abs[PATHBUF];
	struct sctx s;
	int r = xm_abs_path(c->domid, path, strlen(path), abs, false);
	if (r || (r = get_ctx(m, c, tx, &s)))
		return r;
	if (np < 1 || np > XGPU_XS_PERMS_MAX)
		return -EINVAL;
	for (unsigned i = 0; i < np; i++)
		if (p[i].perm > XGPU_XS_PERM_BOTH || p[i].id > XGPU_XEN_DOMID_MAX)
			return -EINVAL;
	struct xm_node *n = lookup(*s.root, abs, NULL);
	if (!n)
		return -ENOENT;
	if (c->domid != 0 && !(n->nperms && n->perms[0].id == c->domid))
		return -EACCES;
	memset(n->perms, 0, sizeof n->perms);
	memcpy(n->perms, p, np * sizeof *p);
	n->nperms = np;
	emit(m, &s, abs, true, n);
	return 0;
}

int xm_watch(struct xm *m, struct xm_conn *c, const char *path, const char *token)
{
	char abs[PATHBUF];
	int r = xm_abs_path(c->domid, path, strlen(path), abs, true);
	if (r)
		return r;
	if (strlen(token) > XSW_TOKEN_MAX)
		return -EINVAL;
	for (unsigned i = 0; i < c->nwatches; i++)
		if (!strcmp(c->watches[i].path, path) && !strcmp(c->watches[i].token, token))
			return -EEXIST;
	if (c->nwatches >= XM_WATCHES)
		return -ENOSPC;
	if (!c->watches) {
		c->watches = calloc(XM_WATCHES, sizeof *c->watches);
		if (!c->watches)
			return -ENOMEM;
	}
	struct xm_watch *w = &c->watches[c->nwatches];
	w->path = strdup(path);
	w->abs = strdup(abs);
	w->token = strdup(token);
	w->rel = path[0] != '/' && path[0] != '@';
	if (!w->path || !w->abs || !w->token) {
		free(w->path);
		free(w->abs);
		free(w->token);
		return -ENOMEM;
	}
	c->nwatches++;
	send_watch_event(m, c, path, token);
	return 0;
}

int xm_unwatch(struct xm *m, struct xm_conn *c, const char *path, const char *token)
{
	for (unsigned i = 0; i < c->nwatches; i++) {
		struct xm_watch *w = &c->watches[i];
		if (!strcmp(w->path, path) && !strcmp(w->token, token)) {
			free(w->path);
			free(w->abs);
			free(w->token);
			c->watches[i] = c->watches[--c->nwatches];
			return 0;
		}
	}
	return -ENOENT;
}

int xm_tx_start(struct xm *m, struct xm_conn *c, uint32_t *id)
{
	if (c->ntxs >= XM_TXS)
		return -ENOSPC;
	struct xm_tx *t = &c->txs[c->ntxs];
	memset(t, 0, sizeof *t);
	t->root = node_clone(m->root);
	if (!t->root)
		return -ENOMEM;
	t->gen = m->gen;
	do
		t->id = ++m->next_id;
	while (t->id == 0);
	c->ntxs++;
	*id = t->id;
	return 0;
}

int xm_tx_end(struct xm *m, struct xm_conn *c, uint32_t id, bool abort)
{
	struct xm_tx *t = NULL;
	unsigned i;
	for (i = 0; i < c->ntxs; i++)
		if (c->txs[i].id == id) {
			t = &c->txs[i];
			break;
		}
	if (!t)
		return -ENOENT;
	int r = 0;
	if (abort) {
		r = 0;
	} else if (m->fail_tx) {
		m->fail_tx--;
		r = -EAGAIN;
	} else if (t->gen != m->gen) {
		r = -EAGAIN;
	} else if (t->changed) {
		node_free(m->root);
		m->root = t->root;
		t->root = NULL;
		m->gen++;
		for (unsigned k = 0; k < t->nevs; k++)
			fire(m, &t->evs[k]);
	}
	tx_free(t);
	c->txs[i] = c->txs[--c->ntxs];
	return r;
}

/* ---- dump -------------------------------------------------------------- */
struct sbuf {
	char *b;
	size_t len, cap;
	bool oom;
};

static void sb_add(struct sbuf *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_add(struct sbuf *s, const char *fmt, ...)
{
	va_list ap;
	for (;;) {
		va_start(ap, fmt);
		int n = vsnprintf(s->b ? s->b + s->len : NULL, s->b ? s->cap - s->len : 0, fmt, ap);
		va_end(ap);
		if (n < 0) {
			s->oom = true;
			return;
		}
		if (s->b && s->len + (size_t)n < s->cap) {
			s->len += (size_t)n;
			return;
		}
		size_t cap = s->cap ? s->cap * 2 : 4096;
		while (cap < s->len + (size_t)n + 1)
			cap *= 2;
		char *b = realloc(s->b, cap);
		if (!b) {
			s->oom = true;
			return;
		}
		s->b = b;
		s->cap = cap;
	}
}

static void dump_node(struct sbuf *s, char *path, size_t pl, const struct xm_node *n)
{
	sb_add(s, "%s = \"", path);
	for (unsigned i = 0; i < n->vlen; i++) {
		unsigned char ch = (unsigned char)n->value[i];
		if (ch == '\\')
			sb_add(s, "\\\\");
		else if (ch == '"')
			sb_add(s, "\\\"");
		else if (ch < 0x20 || ch >= 0x7f)
			sb_add(s, "\\%03o", ch);
		else
			sb_add(s, "%c", ch);
	}
	sb_add(s, "\" (");
	static const char letters[] = "nrwb";
	for (unsigned i = 0; i < n->nperms; i++)
		sb_add(s, "%s%c%u", i ? "," : "", letters[n->perms[i].perm & 3], n->perms[i].id);
	sb_add(s, ")\n");
	for (unsigned i = 0; i < n->nkids; i++) {
		int k = snprintf(path + pl, PATHBUF - pl, "%s%s", pl > 1 ? "/" : "", n->kids[i]->name);
		if (k < 0 || pl + (size_t)k >= PATHBUF)
			continue;
		dump_node(s, path, pl + (size_t)k, n->kids[i]);
	}
	path[pl] = '\0';
}

int xm_dump(struct xm *m, const char *path, char **text)
{
	char abs[PATHBUF];
	int r = xm_abs_path(0, path, strlen(path), abs, false);
	if (r)
		return r;
	struct xm_node *n = lookup(m->root, abs, NULL);
	if (!n)
		return -ENOENT;
	struct sbuf s = {0};
	sb_add(&s, "%s", "");
	dump_node(&s, abs, strlen(abs), n);
	if (s.oom) {
		free(s.b);
		return -ENOMEM;
	}
	*text = s.b;
	return 0;
}

/* ---- domains ----------------------------------------------------------- */
bool xm_dom_live(struct xm *m, uint32_t domid)
{
	return domid <= XGPU_XEN_DOMID_MAX && m->doms[domid];
}

static struct xm_conn dom0_conn = {.domid = 0, .kind = XSW_XS};

static int dom0_write(struct xm *m, const char *path, const char *val, const struct xgpu_xs_perm *perms,
		      unsigned np)
{
	int r = xm_write(m, &dom0_conn, 0, path, val, (unsigned)strlen(val), false);
	if (!r && perms)
		r = xm_set_perms(m, &dom0_conn, 0, path, perms, np);
	return r;
}

void xm_init(struct xm *m)
{
	memset(m, 0, sizeof *m);
	m->root = node_new("", 0);
	if (m->root) {
		m->root->nperms = 1;
		m->root->perms[0] = (struct xgpu_xs_perm){0, XGPU_XS_PERM_NONE};
	}
	m->doms[0] = calloc(1, sizeof *m->doms[0]);
	if (m->doms[0])
		strcpy(m->doms[0]->name, "Domain-0");
	dom0_write(m, "/local/domain/0/name", "Domain-0", NULL, 0);
	dom0_write(m, "/local/domain/0/domid", "0", NULL, 0);
}

static void dom_free(struct xm_dom *d);

void xm_fini(struct xm *m)
{
	node_free(m->root);
	m->root = NULL;
	for (unsigned i = 0; i <= XGPU_XEN_DOMID_MAX; i++)
		if (m->doms[i]) {
			dom_free(m->doms[i]);
			m->doms[i] = NULL;
		}
}

int xm_introduce(struct xm *m, uint32_t domid, const char *name)
{
	if (domid == 0 || domid > XGPU_XEN_DOMID_MAX || !name || !*name || strlen(name) >= 64)
		return -EINVAL;
	if (m->doms[domid])
		return -EEXIST;
	struct xm_dom *d = calloc(1, sizeof *d);
	if (!d)
		return -ENOMEM;
	d->domid = domid;
	strcpy(d->name, name);
	m->doms[domid] = d;
	char path[64], v[16];
	struct xgpu_xs_perm own = {domid, XGPU_XS_PERM_NONE};
	snprintf(path, sizeof path, "/local/domain/%u", domid);
	int r = dom0_write(m, path, "", &own, 1);
	snprintf(path, sizeof path, "/local/domain/%u/name", domid);
	if (!r)
		r = dom0_write(m, path, name, &own, 1);
	snprintf(path, sizeof path, "/local/domain/%u/domid", domid);
	snprintf(v, sizeof v, "%u", domid);
	if (!r)
		r = dom0_write(m, path, v, &own, 1);
	xm_log(m, "domain %u (%s) introduced", domid, name);
	fire_special(m, "@introduceDomain");
	return r;
}

static void seg_unref(struct xm_seg *s)
{
	if (s && --s->refs == 0) {
		close(s->fd);
		free(s);
	}
}

static void dom_free(struct xm_dom *d)
{
	for (uint32_t i = 0; i < d->gtcap; i++)
		if (d->gt[i]) {
			seg_unref(d->gt[i]->seg);
			free(d->gt[i]);
		}
	free(d->gt);
	free(d);
}

int xm_release(struct xm *m, uint32_t domid)
{
	if (domid == 0 || !xm_dom_live(m, domid))
		return domid == 0 ? -EINVAL : -ENOENT;
	for (struct xm_conn *c = m->conns; c; c = c->next)
		if (c->domid == domid && !c->dead) {
			xm_log(m, "dom%u: connection closed by domain release", domid);
			xm_conn_gone(m, c);
		}
	struct xm_dom *d = m->doms[domid];
	/* Ports another domain's grant notification still holds die with us. */
	m->doms[domid] = NULL;
	for (uint32_t p = 1; p < XM_PORTS; p++) {
		struct xm_port *pp = &d->ports[p];
		if (pp->state == XM_INTER && xm_dom_live(m, pp->rdom) && pp->rport < XM_PORTS) {
			struct xm_port *peer = &m->doms[pp->rdom]->ports[pp->rport];
			if (peer->state == XM_INTER && peer->rdom == domid && peer->rport == p) {
				peer->state = XM_UNBOUND;
			}
		}
	}
	dom_free(d);
	char path[64];
	snprintf(path, sizeof path, "/local/domain/%u", domid);
	struct sctx s = {.root = &m->root};
	rm_abs(m, &s, 0, path);
	xm_log(m, "domain %u released", domid);
	fire_special(m, "@releaseDomain");
	return 0;
}

/* ---- event channels ---------------------------------------------------- */
static struct xm_port *port_get(struct xm *m, uint32_t domid, uint32_t port)
{
	if (!xm_dom_live(m, domid) || port == 0 || port >= XM_PORTS)
		return NULL;
	return &m->doms[domid]->ports[port];
}

static void deliver(struct xm *m, struct xm_port *p, uint32_t port)
{
	if (!p->owner || p->owner->dead)
		return;
	if (p->masked) {
		p->pending = true;
		return;
	}
	p->masked = true;
	xm_push_event(m, p->owner, &port, sizeof port);
}

/* A notification sent by port of domid to its peer (dropped if unbound). */
static void notify_from(struct xm *m, uint32_t domid, uint32_t port)
{
	struct xm_port *p = port_get(m, domid, port);
	if (!p || p->state != XM_INTER)
		return;
	struct xm_port *peer = port_get(m, p->rdom, p->rport);
	if (peer && peer->state == XM_INTER && peer->rdom == domid && peer->rport == port && !peer->closing)
		deliver(m, peer, p->rport);
}

static int port_alloc(struct xm *m, uint32_t domid)
{
	struct xm_dom *d = m->doms[domid];
	for (uint32_t p = 1; p < XM_PORTS; p++)
		if (d->ports[p].state == XM_FREE && !d->ports[p].holds)
			return (int)p;
	return -ENOSPC;
}

static void port_close(struct xm *m, uint32_t domid, uint32_t port)
{
	struct xm_port *p = port_get(m, domid, port);
	if (!p)
		return;
	if (p->holds) {
		p->closing = true;
		p->owner = NULL;
		return;
	}
	if (p->state == XM_INTER) {
		struct xm_port *peer = port_get(m, p->rdom, p->rport);
		if (peer && peer->state == XM_INTER && peer->rdom == domid && peer->rport == port)
			peer->state = XM_UNBOUND; /* offered back to us, as Xen leaves it */
	}
	memset(p, 0, sizeof *p);
}

static void port_unhold(struct xm *m, uint32_t domid, uint32_t port)
{
	struct xm_port *p = port_get(m, domid, port);
	if (!p || !p->holds)
		return;
	if (--p->holds == 0 && p->closing)
		port_close(m, domid, port);
}

static struct xm_port *own_port(struct xm *m, struct xm_conn *c, uint32_t port)
{
	struct xm_port *p = port_get(m, c->domid, port);
	if (!p || p->state == XM_FREE || p->owner != c || p->closing)
		return NULL;
	return p;
}

int xm_ev_bind_unbound(struct xm *m, struct xm_conn *c, uint32_t rdom)
{
	if (c->restricted && rdom != c->only_domid)
		return -EPERM;
	if (!xm_dom_live(m, rdom))
		return -ESRCH;
	int port = port_alloc(m, c->domid);
	if (port < 0)
		return port;
	struct xm_port *p = &m->doms[c->domid]->ports[port];
	memset(p, 0, sizeof *p);
	p->state = XM_UNBOUND;
	p->owner = c;
	p->rdom = rdom;
	return port;
}

int xm_ev_bind_inter(struct xm *m, struct xm_conn *c, uint32_t rdom, uint32_t rport)
{
	if (c->restricted && rdom != c->only_domid)
		return -EPERM;
	struct xm_port *r = port_get(m, rdom, rport);
	if (!r || r->state != XM_UNBOUND || r->rdom != c->domid || r->closing || !r->owner)
		return -EINVAL;
	int port = port_alloc(m, c->domid);
	if (port < 0)
		return port;
	struct xm_port *p = &m->doms[c->domid]->ports[port];
	memset(p, 0, sizeof *p);
	p->state = XM_INTER;
	p->owner = c;
	p->rdom = rdom;
	p->rport = rport;
	r->state = XM_INTER;
	r->rport = (uint32_t)port;
	return port;
}

int xm_ev_unbind(struct xm *m, struct xm_conn *c, uint32_t port)
{
	if (!own_port(m, c, port))
		return -EINVAL;
	port_close(m, c->domid, port);
	return 0;
}

int xm_ev_notify(struct xm *m, struct xm_conn *c, uint32_t port)
{
	if (!own_port(m, c, port))
		return -EINVAL;
	notify_from(m, c->domid, port);
	return 0;
}

int xm_ev_unmask(struct xm *m, struct xm_conn *c, uint32_t port)
{
	struct xm_port *p = own_port(m, c, port);
	if (!p)
		return -EINVAL;
	p->masked = false;
	if (p->pending) {
		p->pending = false;
		deliver(m, p, port);
	}
	return 0;
}

/* ---- grants ------------------------------------------------------------ */
/* A notification port must be bound in domid when it is registered; it then
 * stays alive until the notification is sent, as Linux's evtchn_get does. */
static int notify_check(struct xm *m, uint32_t domid, unsigned count, int32_t noff, int32_t nport)
{
	if (noff < 0 && nport < 0)
		return 0;
	if (count != 1 || noff >= (int32_t)XGPU_XEN_PAGE_SIZE)
		return -EINVAL;
	if (nport >= 0) {
		struct xm_port *p = port_get(m, domid, (uint32_t)nport);
		if (!p || p->state == XM_FREE || p->closing)
			return -EINVAL;
		p->holds++;
	}
	return 0;
}

static void notify_fire(struct xm *m, uint32_t domid, struct xm_seg *seg, unsigned page, int32_t noff,
			int32_t nport)
{
	if (noff >= 0 && seg) {
		uint8_t zero = 0;
		if (pwrite(seg->fd, &zero, 1, (off_t)page * XGPU_XEN_PAGE_SIZE + noff) != 1)
			xm_log(m, "dom%u: clearing the notify byte failed: %s", domid, strerror(errno));
	}
	if (nport >= 0) {
		notify_from(m, domid, (uint32_t)nport);
		port_unhold(m, domid, (uint32_t)nport);
	}
}

static int ref_alloc(struct xm_dom *d)
{
	if (d->ngrants >= XM_GRANTS)
		return -ENOSPC;
	if (d->ngrants + 16 >= d->gtcap) {
		uint32_t cap = d->gtcap ? d->gtcap * 2 : 256;
		struct xm_grant **g = realloc(d->gt, cap * sizeof *g);
		if (!g)
			return -ENOMEM;
		memset(g + d->gtcap, 0, (cap - d->gtcap) * sizeof *g);
		d->gt = g;
		d->gtcap = cap;
	}
	/* Xen reserves the first 8 refs; refs are not reused at once. */
	for (;;) {
		if (d->nextref < 8 || d->nextref >= d->gtcap)
			d->nextref = 8;
		uint32_t r = d->nextref++;
		if (!d->gt[r])
			return (int)r;
	}
}

int xm_share(struct xm *m, struct xm_conn *c, uint32_t domid, uint32_t count, bool writable, int32_t noff,
	     int32_t nport, struct xm_share **out)
{
	if (count == 0 || count > XSW_GRANT_MAX || domid > XGPU_XEN_DOMID_MAX)
		return -EINVAL;
	struct xm_dom *d = m->doms[c->domid];
	if (!d)
		return -ESRCH;
	if (c->nregions >= XM_REGIONS)
		return -ENOSPC;
	if (d->ngrants + count > XM_GRANTS)
		return -ENOSPC;
	struct xm_share *sh = calloc(1, sizeof *sh);
	struct xm_seg *seg = calloc(1, sizeof *seg);
	uint32_t *refs = calloc(count, sizeof *refs);
	int fd = memfd_create("xgpu-xenstub-grant", MFD_CLOEXEC);
	int r = 0;
	if (!sh || !seg || !refs)
		r = -ENOMEM;
	else if (fd < 0 || ftruncate(fd, (off_t)count * XGPU_XEN_PAGE_SIZE))
		r = -errno;
	if (!r)
		r = notify_check(m, c->domid, count, noff, nport);
	if (r) {
		if (fd >= 0)
			close(fd);
		free(sh);
		free(seg);
		free(refs);
		return r;
	}
	seg->fd = fd;
	seg->npages = count;
	for (uint32_t i = 0; i < count; i++) {
		struct xm_grant *g = calloc(1, sizeof *g);
		int ref = g ? ref_alloc(d) : -ENOMEM;
		if (ref < 0) {
			free(g);
			sh->refs = refs;
			sh->count = i;
			sh->seg = seg;
			sh->notify_off = sh->notify_port = -1;
			seg->refs++;
			if (nport >= 0)
				port_unhold(m, c->domid, (uint32_t)nport);
			/* undo the refs made so far */
			for (uint32_t k = 0; k < i; k++) {
				seg_unref(d->gt[refs[k]]->seg);
				free(d->gt[refs[k]]);
				d->gt[refs[k]] = NULL;
				d->ngrants--;
			}
			seg_unref(seg);
			free(refs);
			free(sh);
			return ref;
		}
		g->seg = seg;
		g->page = i;
		g->grantee = domid;
		g->writable = writable;
		seg->refs++;
		d->gt[ref] = g;
		d->ngrants++;
		refs[i] = (uint32_t)ref;
	}
	seg->refs++; /* the share record's */
	do
		sh->id = ++m->next_id;
	while (sh->id == 0);
	sh->count = count;
	sh->refs = refs;
	sh->seg = seg;
	sh->notify_off = noff;
	sh->notify_port = nport;
	c->nregions++;
	sh->next = c->shares;
	c->shares = sh;
	*out = sh;
	return 0;
}

static void share_end(struct xm *m, struct xm_conn *c, struct xm_share *sh)
{
	c->nregions--;
	struct xm_dom *d = m->doms[c->domid];
	notify_fire(m, c->domid, sh->seg, 0, sh->notify_off, sh->notify_port);
	for (uint32_t i = 0; d && i < sh->count; i++) {
		uint32_t r = sh->refs[i];
		if (r < d->gtcap && d->gt[r]) {
			seg_unref(d->gt[r]->seg);
			free(d->gt[r]);
			d->gt[r] = NULL;
			d->ngrants--;
		}
	}
	seg_unref(sh->seg);
	free(sh->refs);
	free(sh);
}

int xm_unshare(struct xm *m, struct xm_conn *c, uint32_t id)
{
	for (struct xm_share **pp = &c->shares; *pp; pp = &(*pp)->next)
		if ((*pp)->id == id) {
			struct xm_share *sh = *pp;
			*pp = sh->next;
			share_end(m, c, sh);
			return 0;
		}
	return -EINVAL;
}

int xm_map(struct xm *m, struct xm_conn *c, uint32_t domid, uint32_t count, const uint32_t *refs,
	   bool writable, int32_t noff, int32_t nport, uint32_t *id, int **fdsp, unsigned *nfdsp,
	   uint32_t *pairs)
{
	if (count == 0 || count > XSW_GRANT_MAX)
		return -EINVAL;
	if (c->nregions >= XM_REGIONS)
		return -ENOSPC;
	if (c->restricted && domid != c->only_domid)
		return -EACCES;
	if (!xm_dom_live(m, domid))
		return -ENOENT;
	struct xm_dom *d = m->doms[domid];
	struct xm_seg **segs = NULL;
	unsigned nsegs = 0, capsegs = 0;
	int r = 0;
	for (uint32_t i = 0; i < count && !r; i++) {
		uint32_t ref = refs[i];
		struct xm_grant *g = ref < d->gtcap ? d->gt[ref] : NULL;
		if (!g)
			r = -ENOENT;
		else if (g->grantee != c->domid || (writable && !g->writable))
			r = -EACCES;
		if (r)
			break;
		unsigned k = nsegs;
		if (nsegs && segs[nsegs - 1] == g->seg)
			k = nsegs - 1;
		else
			for (k = 0; k < nsegs && segs[k] != g->seg; k++)
				;
		if (k == nsegs) {
			if (nsegs == capsegs) {
				capsegs = capsegs ? capsegs * 2 : 8;
				struct xm_seg **ns = realloc(segs, capsegs * sizeof *ns);
				if (!ns) {
					r = -ENOMEM;
					break;
				}
				segs = ns;
			}
			segs[nsegs++] = g->seg;
		}
		pairs[2 * i] = k;
		pairs[2 * i + 1] = g->page;
	}
	struct xm_map *mp = NULL;
	if (!r && !(mp = calloc(1, sizeof *mp)))
		r = -ENOMEM;
	int *fds = NULL;
	if (!r && !(fds = calloc(nsegs, sizeof *fds)))
		r = -ENOMEM;
	if (!r)
		r = notify_check(m, c->domid, count, noff, nport);
	if (r) {
		free(segs);
		free(mp);
		free(fds);
		return r;
	}
	for (unsigned k = 0; k < nsegs; k++)
		fds[k] = segs[k]->fd;
	do
		mp->id = ++m->next_id;
	while (mp->id == 0);
	mp->notify_off = noff;
	mp->notify_port = nport;
	if (noff >= 0 || nport >= 0) {
		struct xm_grant *g = d->gt[refs[0]];
		mp->seg = g->seg;
		mp->page = g->page;
		g->seg->refs++;
	}
	c->nregions++;
	mp->next = c->maps;
	c->maps = mp;
	free(segs);
	*id = mp->id;
	*fdsp = fds;
	*nfdsp = nsegs;
	return 0;
}

static void map_end(struct xm *m, struct xm_conn *c, struct xm_map *mp)
{
	c->nregions--;
	notify_fire(m, c->domid, mp->seg, mp->page, mp->notify_off, mp->notify_port);
	seg_unref(mp->seg);
	free(mp);
}

int xm_unmap(struct xm *m, struct xm_conn *c, uint32_t id)
{
	for (struct xm_map **pp = &c->maps; *pp; pp = &(*pp)->next)
		if ((*pp)->id == id) {
			struct xm_map *mp = *pp;
			*pp = mp->next;
			map_end(m, c, mp);
			return 0;
		}
	return -EINVAL;
}

/* ---- connections ------------------------------------------------------- */
void xm_conn_gone(struct xm *m, struct xm_conn *c)
{
	if (c->dead)
		return;
	c->dead = true;
	for (unsigned i = 0; i < c->nwatches; i++) {
		free(c->watches[i].path);
		free(c->watches[i].abs);
		free(c->watches[i].token);
	}
	free(c->watches);
	c->watches = NULL;
	c->nwatches = 0;
	for (unsigned i = 0; i < c->ntxs; i++)
		tx_free(&c->txs[i]);
	c->ntxs = 0;
	if (c->hello && xm_dom_live(m, c->domid) && c->kind == XSW_EVTCHN) {
		struct xm_dom *d = m->doms[c->domid];
		for (uint32_t p = 1; p < XM_PORTS; p++)
			if (d->ports[p].owner == c)
				port_close(m, c->domid, p);
	}
	while (c->shares) {
		struct xm_share *sh = c->shares;
		c->shares = sh->next;
		share_end(m, c, sh);
	}
	while (c->maps) {
		struct xm_map *mp = c->maps;
		c->maps = mp->next;
		map_end(m, c, mp);
	}
	/* The server thread closes the descriptors; here the peer sees EOF. */
	if (c->fd >= 0)
		shutdown(c->fd, SHUT_RDWR);
	if (c->evfd >= 0)
		shutdown(c->evfd, SHUT_RDWR);
	free(c->obuf);
	c->obuf = NULL;
	c->olen = c->ocap = 0;
}
