/* SPDX-License-Identifier: Apache-2.0 */
/* xenif.h - the three Xen services xgpu uses (xenstore, grant tables, event
 * channels) behind small ops tables, so that everything above them runs the
 * same against real Xen (xenif_real.c: libxenstore, libxengnttab,
 * libxenevtchn) and against xgpu-xenstub, an in-memory hypervisor and store
 * with the same semantics (xenif_stub.c, tools/xenstub/).
 *
 * Semantics are those of the libxen* call each op is named after. Errors are
 * -1 or NULL with errno set (EACCES: permission, ENOENT: no such node or
 * ref, EAGAIN: transaction conflict or nothing pending, EINVAL: bad port or
 * argument).
 *
 * Which implementation the xgpu_*_open() calls pick: XGPU_XEN_STUB=PATH in
 * the environment names an xgpu-xenstub socket, and XGPU_XEN_DOMID=N the
 * domain this process plays there (default 0, dom0); otherwise real Xen.
 */
#ifndef XGPU_XENIF_H
#define XGPU_XENIF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define XGPU_XEN_PAGE_SIZE 4096u
#define XGPU_XEN_EXPORT_FDS 2      /* descriptors an exported handle takes at most */
#define XGPU_XEN_DOMID_MAX 0x7fefu /* DOMID_FIRST_RESERVED - 1 */

/* ---- xenstore ------------------------------------------------------------ */
typedef uint32_t xgpu_xs_tx; /* 0: no transaction (XBT_NULL) */

/* XS_PERM_* values of xenstore.h */
enum { XGPU_XS_PERM_NONE = 0, XGPU_XS_PERM_READ = 1, XGPU_XS_PERM_WRITE = 2, XGPU_XS_PERM_BOTH = 3 };
/* A node's permissions as xenstore keeps them: perms[0].id owns the node and
 * perms[0].perm is what every other domain may do; later entries grant
 * domain id their perm. Domain 0 may do everything. */
struct xgpu_xs_perm {
	uint32_t id;
	uint32_t perm;
};
#define XGPU_XS_PERMS_MAX 16

struct xgpu_xs {
	const struct xgpu_xs_ops *ops;
};

struct xgpu_xs_ops {
	void (*close)(struct xgpu_xs *xs);
	/* A relative path is relative to /local/domain/<own domid>. */
	char *(*read)(struct xgpu_xs *xs, xgpu_xs_tx tx, const char *path,
		      unsigned *len); /* malloc'd, NUL-terminated */
	int (*write)(struct xgpu_xs *xs, xgpu_xs_tx tx, const char *path, const void *data, unsigned len);
	int (*mkdir)(struct xgpu_xs *xs, xgpu_xs_tx tx, const char *path);
	int (*rm)(struct xgpu_xs *xs, xgpu_xs_tx tx, const char *path); /* recursive */
	/* Child names; one free() releases the array and the strings. */
	char **(*directory)(struct xgpu_xs *xs, xgpu_xs_tx tx, const char *path, unsigned *num);
	int (*get_perms)(struct xgpu_xs *xs, xgpu_xs_tx tx, const char *path, struct xgpu_xs_perm *perms,
			 unsigned max, unsigned *num);
	int (*set_perms)(struct xgpu_xs *xs, xgpu_xs_tx tx, const char *path,
			 const struct xgpu_xs_perm *perms, unsigned num);
	/* Fires once at once, then on every change of path or below it (and
	 * for "@releaseDomain" / "@introduceDomain" on those events). */
	int (*watch)(struct xgpu_xs *xs, const char *path, const char *token);
	int (*unwatch)(struct xgpu_xs *xs, const char *path, const char *token);
	int (*watch_fd)(struct xgpu_xs *xs); /* readable while events are queued */
	/* The next queued event without blocking: 0 with malloc'd *path and
	 * *token, or -1 with EAGAIN when none is queued. */
	int (*read_watch)(struct xgpu_xs *xs, char **path, char **token);
	xgpu_xs_tx (*transaction_start)(struct xgpu_xs *xs); /* 0 on failure */
	/* -1 with EAGAIN: another writer got in first; start again. */
	int (*transaction_end)(struct xgpu_xs *xs, xgpu_xs_tx tx, bool abort);
	/* 1 if domid is a live domain, 0 if not, -1 on error (dom0 only). */
	int (*domain_exists)(struct xgpu_xs *xs, uint32_t domid);
};

/* ---- event channels ------------------------------------------------------ */
struct xgpu_evtchn {
	const struct xgpu_evtchn_ops *ops;
};

struct xgpu_evtchn_ops {
	void (*close)(struct xgpu_evtchn *e); /* unbinds every port */
	int (*fd)(struct xgpu_evtchn *e);     /* readable while a port is pending */
	int (*notify)(struct xgpu_evtchn *e, uint32_t port);
	/* A new local port that domain remote_domid may bind to. */
	int (*bind_unbound_port)(struct xgpu_evtchn *e, uint32_t remote_domid);
	/* Binds to remote_port of remote_domid (which must be unbound and
	 * offered to us); returns the local port. */
	int (*bind_interdomain)(struct xgpu_evtchn *e, uint32_t remote_domid, uint32_t remote_port);
	int (*unbind)(struct xgpu_evtchn *e, uint32_t port);
	/* A pending port (masked until unmask), or -1 with EAGAIN if none. */
	int (*pending)(struct xgpu_evtchn *e);
	int (*unmask)(struct xgpu_evtchn *e, uint32_t port);
	/* Dups of the descriptors another process needs to use this handle
	 * (xgpu_evtchn_import there): their count, or -1 with errno. NULL
	 * where a handle cannot be handed over. */
	int (*export_fds)(struct xgpu_evtchn *e, int fds[XGPU_XEN_EXPORT_FDS]);
};

/* ---- grants: the sharing side (guest) ------------------------------------ */
struct xgpu_gntshr {
	const struct xgpu_gntshr_ops *ops;
};

struct xgpu_gntshr_ops {
	void (*close)(struct xgpu_gntshr *g);
	/* count zeroed pages granted to domid; their refs in refs[]. */
	void *(*share_pages)(struct xgpu_gntshr *g, uint32_t domid, unsigned count, uint32_t *refs,
			     bool writable);
	/* One page; when this process unshares it or dies, the byte at
	 * notify_offset is cleared and notify_port is signalled (either may be
	 * -1 for none). */
	void *(*share_page_notify)(struct xgpu_gntshr *g, uint32_t domid, bool writable,
				   int32_t notify_offset, int32_t notify_port, uint32_t *ref);
	int (*unshare)(struct xgpu_gntshr *g, void *addr, unsigned count);
};

/* ---- grants: the mapping side (dom0) ------------------------------------- */
struct xgpu_gnttab {
	const struct xgpu_gnttab_ops *ops;
};

struct xgpu_gnttab_ops {
	void (*close)(struct xgpu_gnttab *g);
	/* Maps count refs that domid granted to us, contiguously. Fails (ENOENT
	 * or EACCES) unless every ref is one domid granted to this domain
	 * (writable, for a writable map). */
	void *(*map_domain_grant_refs)(struct xgpu_gnttab *g, unsigned count, uint32_t domid,
				       const uint32_t *refs, bool writable);
	/* One ref; when this process unmaps it or dies, the byte at
	 * notify_offset is cleared and notify_port signalled (-1: none). */
	void *(*map_grant_ref_notify)(struct xgpu_gnttab *g, uint32_t domid, uint32_t ref, bool writable,
				      int32_t notify_offset, int32_t notify_port);
	int (*unmap)(struct xgpu_gnttab *g, void *addr, unsigned count);
	/* As for event channels; NULL where a handle cannot be handed over. */
	int (*export_fds)(struct xgpu_gnttab *g, int fds[XGPU_XEN_EXPORT_FDS]);
	/* A handle open_for made on real Xen answers the process it was
	 * exported to on a socket (its grant broker): broker_fd is readable
	 * while requests wait (-1: no broker), broker_serve answers them
	 * without blocking and returns -1 once the peer left (EPIPE) or broke
	 * the rules (EPROTO). NULL for none. */
	int (*broker_fd)(struct xgpu_gnttab *g);
	int (*broker_serve)(struct xgpu_gnttab *g);
	/* The one event-channel port the broker lets an unmap notification
	 * signal (the channel's own); -1: none. NULL where there is no broker. */
	void (*broker_notify_port)(struct xgpu_gnttab *g, int32_t port);
	/* The executor's end: a new broker socket from an xgpud that adopted
	 * it (the previous xgpud's end went with that xgpud); takes fd on
	 * success. NULL where there is no broker. */
	int (*broker_renew)(struct xgpu_gnttab *g, int fd);
	/* xgpud's record of what the executor holds mapped through the
	 * broker, which must outlive xgpud so that a restart cannot hand an
	 * adopted executor a fresh allowance: the broker counts from held
	 * pages (an adopted handle's last record; more than its limit counts
	 * as the limit) and calls record with the new count before every map,
	 * refusing the map if it fails, and after every unmap, so that the
	 * record is never below what is mapped. NULL where there is no
	 * broker. */
	void (*broker_account)(struct xgpu_gnttab *g, uint64_t held, int (*record)(void *arg, uint64_t pages),
			       void *arg);
	/* Pages the executor holds mapped through the broker, as counted. */
	uint64_t (*broker_held)(struct xgpu_gnttab *g);
};

/* ---- opening -------------------------------------------------------------- */
/* By the environment (see the top of this file). On failure NULL with a
 * message that names what is missing (a device node such as /dev/xen/gntdev,
 * or the stub's socket). */
struct xgpu_xs *xgpu_xs_open(char *err, size_t errlen);
struct xgpu_evtchn *xgpu_evtchn_open(char *err, size_t errlen);
struct xgpu_gntshr *xgpu_gntshr_open(char *err, size_t errlen);
struct xgpu_gnttab *xgpu_gnttab_open(char *err, size_t errlen);
/* Whether the environment selects the stub. */
bool xgpu_xen_stub_selected(void);

/* Real Xen (xenif_real.c). */
struct xgpu_xs *xgpu_xs_open_real(char *err, size_t errlen);
struct xgpu_evtchn *xgpu_evtchn_open_real(char *err, size_t errlen);
struct xgpu_gntshr *xgpu_gntshr_open_real(char *err, size_t errlen);
struct xgpu_gnttab *xgpu_gnttab_open_real(char *err, size_t errlen);

/* xgpu-xenstub at socket path, playing domain domid (xenif_stub.c). */
struct xgpu_xs *xgpu_xs_open_stub(const char *path, uint32_t domid, char *err, size_t errlen);
struct xgpu_evtchn *xgpu_evtchn_open_stub(const char *path, uint32_t domid, char *err, size_t errlen);
struct xgpu_gntshr *xgpu_gntshr_open_stub(const char *path, uint32_t domid, char *err, size_t errlen);
struct xgpu_gnttab *xgpu_gnttab_open_stub(const char *path, uint32_t domid, char *err, size_t errlen);

/* ---- one domain's handles, for another process ------------------------------ */
/* xgpud binds and maps a guest's event channel and grants; the domain's
 * executor, which holds no Xen privilege, gets handles that reach that one
 * domain's ports and grants and nothing else:
 *  - event channels: a handle restricted to domid (real Xen:
 *    IOCTL_EVTCHN_RESTRICT_DOMID on its own /dev/xen/evtchn; the stub:
 *    XSW_RESTRICT), on which xgpud binds the guest's port before handing it
 *    over; the executor notifies, reads and unmasks it;
 *  - grants: the stub's handle restricted the same way; on real Xen the
 *    executor gets /dev/xen/gntdev and a socket to xgpud's grant broker,
 *    which maps (IOCTL_GNTDEV_MAP_GRANT_REF, domid forced) what the
 *    executor asks for and answers the offset the executor mmaps.
 * open_for makes such a handle (xgpud); export_fds (the ops) gives the
 * descriptors for the link; import makes the handle in the executor from
 * them, taking them on success. impl says which Xen made them. */
enum xgpu_xen_impl { XGPU_XEN_IMPL_REAL = 1, XGPU_XEN_IMPL_STUB = 2 };
enum xgpu_xen_impl xgpu_xen_impl(void);
struct xgpu_evtchn *xgpu_evtchn_open_for(uint32_t domid, char *err, size_t errlen);
struct xgpu_gnttab *xgpu_gnttab_open_for(uint32_t domid, char *err, size_t errlen);
struct xgpu_evtchn *xgpu_evtchn_import(uint32_t impl, uint32_t domid, const int *fds, int nfds, char *err,
				       size_t errlen);
struct xgpu_gnttab *xgpu_gnttab_import(uint32_t impl, uint32_t domid, const int *fds, int nfds, char *err,
				       size_t errlen);
/* A restarted xgpud takes an adopted executor's handles back from the
 * copies that executor kept (descriptors as export_fds gave them, every one
 * checked: the executor is not trusted): the stub's as import does; on real
 * Xen each must be the device node's own (/dev/xen/evtchn, /dev/xen/gntdev),
 * and the grant handle comes back as xgpud's end with no broker: export_fds
 * then makes a new one, whose other end goes to the executor
 * (broker_renew). Takes the descriptors on success. */
struct xgpu_evtchn *xgpu_evtchn_adopt(uint32_t impl, uint32_t domid, const int *fds, int nfds, char *err,
				      size_t errlen);
struct xgpu_gnttab *xgpu_gnttab_adopt(uint32_t impl, uint32_t domid, const int *fds, int nfds, char *err,
				      size_t errlen);
/* The implementations' own (xenif_real.c, xenif_stub.c). */
struct xgpu_evtchn *xgpu_evtchn_adopt_real(uint32_t domid, const int *fds, int nfds, char *err,
					   size_t errlen);
struct xgpu_gnttab *xgpu_gnttab_adopt_real(uint32_t domid, const int *fds, int nfds, char *err,
					   size_t errlen);
struct xgpu_evtchn *xgpu_evtchn_open_for_real(uint32_t domid, char *err, size_t errlen);
struct xgpu_gnttab *xgpu_gnttab_open_for_real(uint32_t domid, char *err, size_t errlen);
struct xgpu_evtchn *xgpu_evtchn_import_real(uint32_t domid, const int *fds, int nfds, char *err,
					    size_t errlen);
struct xgpu_gnttab *xgpu_gnttab_import_real(uint32_t domid, const int *fds, int nfds, char *err,
					    size_t errlen);
/* A stub handle of domain self, restricted to domid. */
struct xgpu_evtchn *xgpu_evtchn_open_for_stub(const char *path, uint32_t self, uint32_t domid, char *err,
					      size_t errlen);
struct xgpu_gnttab *xgpu_gnttab_open_for_stub(const char *path, uint32_t self, uint32_t domid, char *err,
					      size_t errlen);
struct xgpu_evtchn *xgpu_evtchn_import_stub(uint32_t domid, const int *fds, int nfds, char *err,
					    size_t errlen);
struct xgpu_gnttab *xgpu_gnttab_import_stub(uint32_t domid, const int *fds, int nfds, char *err,
					    size_t errlen);

/* ---- shared regions (xenvgpu.h) ---------------------------------------------- */
struct xgpu_xen_root;
/* Maps the npages region pages that domid listed through the root page it
 * granted as root_ref: the root header (copied to *hdr) and the directory
 * refs are copied before they are checked or used. With root_out, the root
 * page stays mapped there, writable, even on failure (with the be_alive
 * unmap notification on notify_port, or none at all for -1); otherwise it
 * is unmapped.
 * NULL with the reason in err (ESTALE in errno for a protocol version
 * mismatch). */
void *xgpu_xen_map_shared(struct xgpu_gnttab *g, uint32_t domid, uint32_t root_ref, uint32_t npages,
			  int32_t notify_port, struct xgpu_xen_root **root_out, struct xgpu_xen_root *hdr,
			  char *err, size_t errlen);

/* ---- helpers ---------------------------------------------------------------- */
/* Reads path as an unsigned decimal in [0, max]: 0, or -1 with errno
 * (ENOENT: absent, EINVAL: not such a number). */
int xgpu_xs_read_u64(struct xgpu_xs *xs, xgpu_xs_tx tx, const char *path, uint64_t max, uint64_t *out);
int xgpu_xs_printf(struct xgpu_xs *xs, xgpu_xs_tx tx, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif
