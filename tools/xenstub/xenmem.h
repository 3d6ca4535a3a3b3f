/* SPDX-License-Identifier: Apache-2.0 */
/* xenmem.h - xgpu-xenstub's model (internal): the store, domains, event
 * channels and grant tables, and the per-connection state they hang on.
 * Every function here runs under the server's one mutex. */
#ifndef XGPU_XENMEM_H
#define XGPU_XENMEM_H

#include "xenif.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define XM_PORTS 1024u          /* per domain; port 0 is never used */
#define XM_WATCHES 256u         /* per connection */
#define XM_REGIONS 65536u       /* shares or maps per connection */
#define XM_NODE_QUOTA 2000u     /* nodes a guest domain may own */
#define XM_TXS 32u              /* open transactions per connection */
#define XM_OBUF_MAX (16u << 20) /* queued event bytes before a watcher is dropped */
#define XM_GRANTS (1u << 21)    /* live refs per granting domain */

struct xm_node {
	char *name;
	char *value;
	unsigned vlen;
	unsigned nperms;
	struct xgpu_xs_perm perms[XGPU_XS_PERMS_MAX];
	struct xm_node **kids; /* sorted by name */
	unsigned nkids, capkids;
};

struct xm_event {
	char *path;
	bool prefix; /* fires watches at or above path, else only at path */
	unsigned nperms;
	struct xgpu_xs_perm perms[XGPU_XS_PERMS_MAX];
};

struct xm_tx {
	uint32_t id;
	uint64_t gen;
	struct xm_node *root;
	struct xm_event *evs;
	unsigned nevs, capevs;
	bool changed;
};

struct xm_watch {
	char *path; /* as given */
	char *abs;  /* absolute (or @special) */
	char *token;
	bool rel;
};

struct xm_seg {
	int fd;
	unsigned npages;
	unsigned refs;
};

struct xm_share {
	struct xm_share *next;
	uint32_t id, count;
	uint32_t *refs;
	struct xm_seg *seg;
	int32_t notify_off, notify_port;
};

struct xm_map {
	struct xm_map *next;
	uint32_t id;
	struct xm_seg *seg; /* the notify page's */
	unsigned page;
	int32_t notify_off, notify_port;
};

struct xm_conn {
	struct xm_conn *next;
	int fd, evfd;
	uint32_t kind, domid;
	bool hello, dead, overflow;
	bool restricted; /* XSW_RESTRICT: binds and maps of only_domid's alone */
	uint32_t only_domid;
	char *obuf; /* event bytes the socket did not take yet */
	size_t olen, ocap;
	struct xm_watch *watches;
	unsigned nwatches;
	struct xm_tx txs[XM_TXS];
	unsigned ntxs;
	unsigned nregions;
	struct xm_share *shares;
	struct xm_map *maps;
};

struct xm_port {
	uint8_t state; /* XM_FREE, XM_UNBOUND, XM_INTER */
	bool masked, pending, closing;
	unsigned holds; /* grant notifications that will signal it */
	struct xm_conn *owner;
	uint32_t rdom, rport;
};
enum { XM_FREE = 0, XM_UNBOUND, XM_INTER };

struct xm_grant {
	struct xm_seg *seg;
	unsigned page;
	uint32_t grantee;
	bool writable;
};

struct xm_dom {
	uint32_t domid;
	char name[64];
	struct xm_port ports[XM_PORTS];
	struct xm_grant **gt; /* indexed by ref */
	uint32_t gtcap, nextref, ngrants;
};

struct xm {
	struct xm_node *root;
	uint64_t gen;
	unsigned fail_tx;
	uint32_t next_id;
	struct xm_dom *doms[XGPU_XEN_DOMID_MAX + 1];
	struct xm_conn *conns;
	FILE *log;
};

void xm_init(struct xm *m);
void xm_fini(struct xm *m);
void xm_log(struct xm *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Store; path as the client gave it. Return 0 or -errno. */
int xm_abs_path(uint32_t domid, const char *in, size_t len, char *out, bool special_ok);
int xm_read(struct xm *m, struct xm_conn *c, uint32_t tx, const char *path, char **val, unsigned *len);
int xm_write(struct xm *m, struct xm_conn *c, uint32_t tx, const char *path, const char *val, unsigned len,
	     bool mkdir);
int xm_rm(struct xm *m, struct xm_conn *c, uint32_t tx, const char *path);
int xm_directory(struct xm *m, struct xm_conn *c, uint32_t tx, const char *path, char **names, unsigned *len);
int xm_get_perms(struct xm *m, struct xm_conn *c, uint32_t tx, const char *path, struct xgpu_xs_perm *p,
		 unsigned *n);
int xm_set_perms(struct xm *m, struct xm_conn *c, uint32_t tx, const char *path, const struct xgpu_xs_perm *p,
		 unsigned n);
int xm_watch(struct xm *m, struct xm_conn *c, const char *path, const char *token);
int xm_unwatch(struct xm *m, struct xm_conn *c, const char *path, const char *token);
int xm_tx_start(struct xm *m, struct xm_conn *c, uint32_t *id);
int xm_tx_end(struct xm *m, struct xm_conn *c, uint32_t id, bool abort);
int xm_dump(struct xm *m, const char *path, char **text);

/* Domains. */
int xm_introduce(struct xm *m, uint32_t domid, const char *name);
int xm_release(struct xm *m, uint32_t domid);
bool xm_dom_live(struct xm *m, uint32_t domid);

/* Event channels. */
int xm_ev_bind_unbound(struct xm *m, struct xm_conn *c, uint32_t rdom);
int xm_ev_bind_inter(struct xm *m, struct xm_conn *c, uint32_t rdom, uint32_t rport);
int xm_ev_unbind(struct xm *m, struct xm_conn *c, uint32_t port);
int xm_ev_notify(struct xm *m, struct xm_conn *c, uint32_t port);
int xm_ev_unmask(struct xm *m, struct xm_conn *c, uint32_t port);

/* Grants. */
int xm_share(struct xm *m, struct xm_conn *c, uint32_t domid, uint32_t count, bool writable, int32_t noff,
	     int32_t nport, struct xm_share **out);
int xm_unshare(struct xm *m, struct xm_conn *c, uint32_t id);
/* *fds: the distinct memfds (not dup'd), pairs: (fd index, page) per ref. */
int xm_map(struct xm *m, struct xm_conn *c, uint32_t domid, uint32_t count, const uint32_t *refs,
	   bool writable, int32_t noff, int32_t nport, uint32_t *id, int **fds, unsigned *nfds,
	   uint32_t *pairs);
int xm_unmap(struct xm *m, struct xm_conn *c, uint32_t id);

/* A connection going away (closed, died, or its domain released): undoes
 * what Xen undoes when those handles close. Leaves the struct to the server. */
void xm_conn_gone(struct xm *m, struct xm_conn *c);
/* Queues one event frame on c's event stream (and tries to send it). */
void xm_push_event(struct xm *m, struct xm_conn *c, const void *body, uint32_t len);
void xm_flush(struct xm_conn *c);

#endif
