/* SPDX-License-Identifier: Apache-2.0 */
/* xenif_real.c - the xenif.h ops tables over real Xen: Debian 12's
 * libxenstore, libxenevtchn and libxengnttab (xengntshr_* shares pages,
 * xengnttab_* maps them). Each op is the libxen call it is named after; the
 * work here is translating types, making the event channel's pending() and
 * xenstore's read_watch() non-blocking, and explaining a failed open: with no
 * hypervisor the device nodes simply are not there, and the message must say
 * which node and what to do about it.
 *
 * libxen*'s own logging goes through a logger that passes it to xgpu's log at
 * debug level: by default the libraries print to stderr, and a refused map
 * from a lying guest must not put libxen lines in front of xgpu's own. */
#include "xenif.h"
#include "xenvgpu.h"
#include "log.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <xenevtchn.h>
#include <xengnttab.h>
#include <xenstore.h>
#include <xentoollog.h>

/* gntdev's per-handle limit where the kernel still has one: every channel's
 * region (up to XGPU_XEN_MAX_REGION_PAGES) plus directories and segments.
 * Newer kernels drop the ioctl and use the module's global limit instead. */
#define GNTTAB_MAX_GRANTS (4u * XGPU_XEN_MAX_REGION_PAGES)

/* ---- logging ----------------------------------------------------------------- */

static void quiet_vmessage(struct xentoollog_logger *lg, xentoollog_level level, int errnoval,
			   const char *context, const char *format, va_list al)
{
	if (!xgpu_log_enabled(XGPU_LOG_DEBUG))
		return;
	char msg[512];
	vsnprintf(msg, sizeof msg, format, al);
	xgpu_log(XGPU_LOG_DEBUG, "libxen %s: %s%s%s", context ? context : "", msg, errnoval >= 0 ? ": " : "",
		 errnoval >= 0 ? strerror(errnoval) : "");
}

static void quiet_destroy(struct xentoollog_logger *lg)
{
}

static struct xentoollog_logger quiet_logger = {
    .vmessage = quiet_vmessage,
    .progress = NULL,
    .destroy = quiet_destroy,
};

/* ---- open failures ------------------------------------------------------------ */

static bool node_exists(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0;
}

/* what: the service; node: its device; fix: what makes the node appear. */
static void explain(char *err, size_t errlen, const char *what, const char *node, const char *fix, int e)
{
	if (!node_exists("/dev/xen"))
		snprintf(
		    err, errlen,
		    "cannot open Xen %s: %s does not exist, nor does /dev/xen: not running in a Xen domain "
		    "(run xgpu in a Xen domain, %s; or use XGPU_XEN_STUB=SOCKET for xgpu-xenstub)",
		    what, node, fix);
	else if (!node_exists(node))
		snprintf(err, errlen, "cannot open Xen %s: %s does not exist (%s)", what, node, fix);
	else if (e == EACCES || e == EPERM)
		snprintf(err, errlen,
			 "cannot open Xen %s: %s: %s (run as root or give this user access to %s)", what,
			 node, strerror(e), node);
	else
		snprintf(err, errlen, "cannot open Xen %s: %s: %s (%s)", what, node, strerror(e), fix);
}

/* ---- xenstore ------------------------------------------------------------------- */

struct real_xs {
	struct xgpu_xs base;
	struct xs_handle *h;
};

static struct xs_handle *XS(struct xgpu_xs *xs)
{
	return ((struct real_xs *)xs)->h;
}

static int ok(bool b)
{
	return b ? 0 : -1;
}

static void rxs_close(struct xgpu_xs *xs)
{
	if (!xs)
		return;
	xs_close(XS(xs));
	free(xs);
}

static char *rxs_read(struct xgpu_xs *xs, xgpu_xs_tx tx, const char *path, unsigned *len)
{
	unsigned n = 0;
	char *v = xs_read(XS(xs), tx, path, &n);
	if (v && len)
		*len = n;
	return v;
}

static int rxs_write(struct xgpu_xs *xs, xgpu_xs_tx tx, const char *path, const void *data, unsigned len)
{
	return ok(xs_write(XS(xs), tx, path, data, len));
}

static int rxs_mkdir(struct xgpu_xs *xs, xgpu_xs_tx tx, const char *path)
{
	return ok(xs_mkdir(XS(xs), tx, path));
}

static int rxs_rm(struct xgpu_xs *xs, xgpu_xs_tx tx, const char *path)
{
	return ok(xs_rm(XS(xs), tx, path));
}

static char **rxs_directory(struct xgpu_xs *xs, xgpu_xs_tx tx, const char *path, unsigned *num)
{
	unsigned n = 0;
	char **d = xs_directory(XS(xs), tx, path, &n);
	if (d && num)
		*num = n;
	return d;
}

/* More entries than the caller has room for is E2BIG: a truncated list
 * would silently drop a grant. */
static int rxs_get_perms(struct xgpu_xs *xs, xgpu_xs_tx tx, const char *path, struct xgpu_xs_perm *perms,
			 unsigned max, unsigned *num)
{
	unsigned n = 0;
	struct xs_permissions *p = xs_get_permissions(XS(xs), tx, path, &n);
	if (!p)
		return -1;
	if (n > max) {
		free(p);
		errno = E2BIG;
		return -1;
	}
	for (unsigned i = 0; i < n; i++)
		perms[i] = (struct xgpu_xs_perm){.id = p[i].id, .perm = p[i].perms & XGPU_XS_PERM_BOTH};
	free(p);
	*num = n;
	return 0;
}

static int rxs_set_perms(struct xgpu_xs *xs, xgpu_xs_tx tx, const char *path,
			 const struct xgpu_xs_perm *perms, unsigned num)
{
	if (num == 0 || num > XGPU_XS_PERMS_MAX) {
		errno = EINVAL;
		return -1;
	}
	struct xs_permissions p[XGPU_XS_PERMS_MAX];
	for (unsigned i = 0; i < num; i++) {
		if (perms[i].perm > XGPU_XS_PERM_BOTH) {
			errno = EINVAL;
			return -1;
		}
		p[i] = (struct xs_permissions){.id = perms[i].id, .perms = perms[i].perm};
	}
	return ok(xs_set_permissions(XS(xs), tx, path, p, num));
}

static int rxs_watch(struct xgpu_xs *xs, const char *path, const char *token)
{
	return ok(xs_watch(XS(xs), path, token));
}

static int rxs_unwatch(struct xgpu_xs *xs, const char *path, const char *token)
{
	return ok(xs_unwatch(XS(xs), path, token));
}

static int rxs_watch_fd(struct xgpu_xs *xs)
{
	return xs_fileno(XS(xs));
}

/* xs_check_watch may leave the fd unreadable while events remain queued:
 * callers drain until EAGAIN (as they must with the stub too). */
static int rxs_read_watch(struct xgpu_xs *xs, char **path, char **token)
{
	char **v = xs_check_watch(XS(xs));
	if (!v) {
		if (!errno)
			errno = EAGAIN;
		return -1;
	}
	*path = strdup(v[XS_WATCH_PATH]);
	*token = strdup(v[XS_WATCH_TOKEN]);
	free(v);
	if (!*path || !*token) {
		free(*path);
		free(*token);
		*path = *token = NULL;
		errno = ENOMEM;
		return -1;
	}
	return 0;
}

static xgpu_xs_tx rxs_transaction_start(struct xgpu_xs *xs)
{
	return xs_transaction_start(XS(xs));
}

static int rxs_transaction_end(struct xgpu_xs *xs, xgpu_xs_tx tx, bool abort)
{
	return ok(xs_transaction_end(XS(xs), tx, abort));
}

/* libxenstore answers false both for "not introduced" and for a failed
 * request, so this never says -1. */
static int rxs_domain_exists(struct xgpu_xs *xs, uint32_t domid)
{
	return xs_is_domain_introduced(XS(xs), domid) ? 1 : 0;
}

static const struct xgpu_xs_ops real_xs_ops = {
    .close = rxs_close,
    .read = rxs_read,
    .write = rxs_write,
    .mkdir = rxs_mkdir,
    .rm = rxs_rm,
    .directory = rxs_directory,
    .get_perms = rxs_get_perms,
    .set_perms = rxs_set_perms,
    .watch = rxs_watch,
    .unwatch = rxs_unwatch,
    .watch_fd = rxs_watch_fd,
    .read_watch = rxs_read_watch,
    .transaction_start = rxs_transaction_start,
    .transaction_end = rxs_transaction_end,
    .domain_exists = rxs_domain_exists,
};

struct xgpu_xs *xgpu_xs_open_real(char *err, size_t errlen)
{
	struct real_xs *r = calloc(1, sizeof *r);
	if (!r) {
		snprintf(err, errlen, "cannot open xenstore: out of memory");
		return NULL;
	}
	errno = 0;
	r->h = xs_open(0);
	if (!r->h) {
		int e = errno ? errno : ENOENT;
		free(r);
		/* xs_open tries xenstored's socket (dom0), then the xenbus
		 * device (any domain); name both and say why each is absent. */
		const char *sock = getenv("XENSTORED_PATH");
		if (!sock || !*sock)
			sock = "/run/xenstored/socket";
		bool have_sock = node_exists(sock), have_bus = node_exists("/dev/xen/xenbus");
		if (!have_sock && !have_bus)
			snprintf(
			    err, errlen,
			    "cannot open xenstore: neither %s (xenstored, in dom0) nor /dev/xen/xenbus "
			    "exists; is this a Xen domain? (mount xenfs: mount -t xenfs xenfs /proc/xen, "
			    "and in dom0 start xenstored; use XGPU_XEN_STUB=SOCKET for xgpu-xenstub)",
			    sock);
		else
			snprintf(err, errlen,
				 "cannot open xenstore via %s or /dev/xen/xenbus: %s (run as root or give "
				 "this user access to them; in dom0 check that xenstored runs)",
				 sock, strerror(e));
		errno = e;
		return NULL;
	}
	r->base.ops = &real_xs_ops;
	return &r->base;
}

/* ---- event channels ------------------------------------------------------------- */

struct real_evtchn {
	struct xgpu_evtchn base;
	xenevtchn_handle *h;
};

static xenevtchn_handle *EV(struct xgpu_evtchn *e)
{
	return ((struct real_evtchn *)e)->h;
}

static void rev_close(struct xgpu_evtchn *e)
{
	if (!e)
		return;
	xenevtchn_close(EV(e));
	free(e);
}

static int rev_fd(struct xgpu_evtchn *e)
{
	return xenevtchn_fd(EV(e));
}

static int rev_notify(struct xgpu_evtchn *e, uint32_t port)
{
	return xenevtchn_notify(EV(e), port);
}

static int rev_bind_unbound_port(struct xgpu_evtchn *e, uint32_t remote_domid)
{
	return xenevtchn_bind_unbound_port(EV(e), remote_domid);
}

static int rev_bind_interdomain(struct xgpu_evtchn *e, uint32_t remote_domid, uint32_t remote_port)
{
	return xenevtchn_bind_interdomain(EV(e), remote_domid, remote_port);
}

static int rev_unbind(struct xgpu_evtchn *e, uint32_t port)
{
	return xenevtchn_unbind(EV(e), port);
}

/* The fd is non-blocking (set at open), so an empty queue is EAGAIN. */
static int rev_pending(struct xgpu_evtchn *e)
{
	return xenevtchn_pending(EV(e));
}

static int rev_unmask(struct xgpu_evtchn *e, uint32_t port)
{
	return xenevtchn_unmask(EV(e), port);
}

static const struct xgpu_evtchn_ops real_evtchn_ops = {
    .close = rev_close,
    .fd = rev_fd,
    .notify = rev_notify,
    .bind_unbound_port = rev_bind_unbound_port,
    .bind_interdomain = rev_bind_interdomain,
    .unbind = rev_unbind,
    .pending = rev_pending,
    .unmask = rev_unmask,
};

struct xgpu_evtchn *xgpu_evtchn_open_real(char *err, size_t errlen)
{
	static const char node[] = "/dev/xen/evtchn";
	struct real_evtchn *r = calloc(1, sizeof *r);
	if (!r) {
		snprintf(err, errlen, "cannot open Xen event channels: out of memory");
		return NULL;
	}
	r->h = xenevtchn_open(&quiet_logger, 0);
	if (!r->h) {
		int e = errno;
		free(r);
		explain(err, errlen, "event channels", node,
			"load the xen-evtchn module: modprobe xen-evtchn", e);
		errno = e;
		return NULL;
	}
	int fd = xenevtchn_fd(r->h);
	int fl = fd >= 0 ? fcntl(fd, F_GETFL) : -1;
	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0) {
		int e = errno;
		snprintf(err, errlen, "cannot make %s non-blocking: %s", node, strerror(e));
		xenevtchn_close(r->h);
		free(r);
		errno = e;
		return NULL;
	}
	r->base.ops = &real_evtchn_ops;
	return &r->base;
}

/* ---- grants: sharing -------------------------------------------------------------- */

struct real_gntshr {
	struct xgpu_gntshr base;
	xengntshr_handle *h;
};

static xengntshr_handle *GS(struct xgpu_gntshr *g)
{
	return ((struct real_gntshr *)g)->h;
}

static void rgs_close(struct xgpu_gntshr *g)
{
	if (!g)
		return;
	xengntshr_close(GS(g));
	free(g);
}

static void *rgs_share_pages(struct xgpu_gntshr *g, uint32_t domid, unsigned count, uint32_t *refs,
			     bool writable)
{
	if (count == 0 || count > INT_MAX) {
		errno = EINVAL;
		return NULL;
	}
	return xengntshr_share_pages(GS(g), domid, (int)count, refs, writable);
}

static void *rgs_share_page_notify(struct xgpu_gntshr *g, uint32_t domid, bool writable,
				   int32_t notify_offset, int32_t notify_port, uint32_t *ref)
{
	/* libxengnttab's "none" for either is (uint32_t)-1. */
	return xengntshr_share_page_notify(GS(g), domid, ref, writable, (uint32_t)notify_offset,
					   (evtchn_port_t)notify_port);
}

static int rgs_unshare(struct xgpu_gntshr *g, void *addr, unsigned count)
{
	return xengntshr_unshare(GS(g), addr, count);
}

static const struct xgpu_gntshr_ops real_gntshr_ops = {
    .close = rgs_close,
    .share_pages = rgs_share_pages,
    .share_page_notify = rgs_share_page_notify,
    .unshare = rgs_unshare,
};

struct xgpu_gntshr *xgpu_gntshr_open_real(char *err, size_t errlen)
{
	struct real_gntshr *r = calloc(1, sizeof *r);
	if (!r) {
		snprintf(err, errlen, "cannot open Xen grant sharing: out of memory");
		return NULL;
	}
	r->h = xengntshr_open(&quiet_logger, 0);
	if (!r->h) {
		int e = errno;
		free(r);
		explain(err, errlen, "grant sharing", "/dev/xen/gntalloc",
			"load the xen-gntalloc module: modprobe xen-gntalloc", e);
		errno = e;
		return NULL;
	}
	r->base.ops = &real_gntshr_ops;
	return &r->base;
}

/* ---- grants: mapping ---------------------------------------------------------------- */

struct real_gnttab {
	struct xgpu_gnttab base;
	xengnttab_handle *h;
};

static xengnttab_handle *GT(struct xgpu_gnttab *g)
{
	return ((struct real_gnttab *)g)->h;
}

static int prot(bool writable)
{
	return writable ? PROT_READ | PROT_WRITE : PROT_READ;
}

static void rgt_close(struct xgpu_gnttab *g)
{
	if (!g)
		return;
	xengnttab_close(GT(g));
	free(g);
}

static void *rgt_map_domain_grant_refs(struct xgpu_gnttab *g, unsigned count, uint32_t domid,
				       const uint32_t *refs, bool writable)
{
	if (count == 0) {
		errno = EINVAL;
		return NULL;
	}
	/* The library's refs are not const but it only reads them. */
	return xengnttab_map_domain_grant_refs(GT(g), count, domid, (uint32_t *)refs, prot(writable));
}

static void *rgt_map_grant_ref_notify(struct xgpu_gnttab *g, uint32_t domid, uint32_t ref, bool writable,
				      int32_t notify_offset, int32_t notify_port)
{
	return xengnttab_map_grant_ref_notify(GT(g), domid, ref, prot(writable), (uint32_t)notify_offset,
					      (evtchn_port_t)notify_port);
}

static int rgt_unmap(struct xgpu_gnttab *g, void *addr, unsigned count)
{
	return xengnttab_unmap(GT(g), addr, count);
}

static const struct xgpu_gnttab_ops real_gnttab_ops = {
    .close = rgt_close,
    .map_domain_grant_refs = rgt_map_domain_grant_refs,
    .map_grant_ref_notify = rgt_map_grant_ref_notify,
    .unmap = rgt_unmap,
};

struct xgpu_gnttab *xgpu_gnttab_open_real(char *err, size_t errlen)
{
	struct real_gnttab *r = calloc(1, sizeof *r);
	if (!r) {
		snprintf(err, errlen, "cannot open Xen grant mapping: out of memory");
		return NULL;
	}
	r->h = xengnttab_open(&quiet_logger, 0);
	if (!r->h) {
		int e = errno;
		free(r);
		explain(err, errlen, "grant mapping", "/dev/xen/gntdev",
			"load the xen-gntdev module: modprobe xen-gntdev", e);
		errno = e;
		return NULL;
	}
	/* Failure is normal on kernels without the per-handle limit. */
	if (xengnttab_set_max_grants(r->h, GNTTAB_MAX_GRANTS))
		xlog_debug("xengnttab_set_max_grants(%u): %s (kernel uses gntdev's global limit)",
			   GNTTAB_MAX_GRANTS, strerror(errno));
	r->base.ops = &real_gnttab_ops;
	return &r->base;
}

/* ---- one domain's handles, for another process -------------------------------- */

struct xgpu_evtchn *xgpu_evtchn_open_for_real(uint32_t domid, char *err, size_t errlen)
{
	(void)domid;
	snprintf(err, errlen, "handing a real Xen event channel to an executor is not built yet");
	errno = ENOTSUP;
	return NULL;
}

struct xgpu_gnttab *xgpu_gnttab_open_for_real(uint32_t domid, char *err, size_t errlen)
{
	(void)domid;
	snprintf(err, errlen, "handing real Xen grants to an executor is not built yet");
	errno = ENOTSUP;
	return NULL;
}

struct xgpu_evtchn *xgpu_evtchn_import_real(uint32_t domid, const int *fds, int nfds, char *err, size_t errlen)
{
	(void)domid, (void)fds, (void)nfds;
	snprintf(err, errlen, "real Xen event channels from xgpud are not built yet");
	errno = ENOTSUP;
	return NULL;
}

struct xgpu_gnttab *xgpu_gnttab_import_real(uint32_t domid, const int *fds, int nfds, char *err, size_t errlen)
{
	(void)domid, (void)fds, (void)nfds;
	snprintf(err, errlen, "real Xen grants from xgpud are not built yet");
	errno = ENOTSUP;
	return NULL;
}
