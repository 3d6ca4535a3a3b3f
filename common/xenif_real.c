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
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
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
/* Raw device handles (no libxen*: the descriptors must be plain to travel
 * over SCM_RIGHTS, and the executor must hold nothing else):
 *  - /dev/xen/evtchn restricted with IOCTL_EVTCHN_RESTRICT_DOMID, so that
 *    it binds that domain's ports alone; xgpud binds the guest's port and
 *    hands the descriptor over; the executor notifies, reads and unmasks;
 *  - /dev/xen/gntdev: xgpud's own maps (IOCTL_GNTDEV_MAP_GRANT_REF, then
 *    mmap) and, for the executor, a grant broker: the executor asks over a
 *    SOCK_SEQPACKET pair for refs (in chunks), xgpud maps them on the shared
 *    gntdev file with the domid forced to the domain's, and the executor
 *    only mmaps the offset it is told (with PV's ptemod, the mmap makes the
 *    mapping, from the refs xgpud gave the kernel). gntdev has no
 *    restriction of its own, so its descriptor reaches nothing but the
 *    maps xgpud made on it. */

#include <sys/ioctl.h>
#include <sys/socket.h>
#include <xen/sys/evtchn.h>
#include <xen/sys/gntdev.h>

/* Refs per broker request: an executor maps a larger region chunk by
 * chunk, at consecutive addresses. */
#define BROKER_CHUNK 4096u
#define BROKER_TIMEOUT_S 10
/* How long an executor's map waits for a restarted xgpud's new broker when
 * the previous one went (broker_renew), rather than fail the guest's call. */
#define BROKER_RENEW_WAIT_S 30
/* Pages one executor handle may hold mapped through the broker. */
#define BROKER_MAX_PAGES (4u * XGPU_XEN_MAX_REGION_PAGES)
#define BROKER_BUDGET 64

enum { BROKER_MAP = 1, BROKER_UNMAP = 2 };

struct broker_req {
	uint32_t op, count, writable;
	int32_t notify_off, notify_port;
	uint32_t pad;
	uint64_t index;
	uint32_t refs[]; /* count, for BROKER_MAP */
};

struct broker_rep {
	int32_t err; /* 0 or an errno value */
	uint32_t pad;
	uint64_t index;
};

/* -- event channels -- */

struct raw_ev {
	struct xgpu_evtchn pub;
	int fd;
};

static int RAWEVFD(struct xgpu_evtchn *e)
{
	return ((struct raw_ev *)e)->fd;
}

static void raw_close(struct xgpu_evtchn *e)
{
	if (!e)
		return;
	close(RAWEVFD(e));
	free(e);
}

static int raw_fd(struct xgpu_evtchn *e)
{
	return RAWEVFD(e);
}

static int raw_notify(struct xgpu_evtchn *e, uint32_t port)
{
	struct ioctl_evtchn_notify n = {.port = port};
	return ioctl(RAWEVFD(e), IOCTL_EVTCHN_NOTIFY, &n) < 0 ? -1 : 0;
}

static int raw_bind_unbound(struct xgpu_evtchn *e, uint32_t remote_domid)
{
	struct ioctl_evtchn_bind_unbound_port b = {.remote_domain = remote_domid};
	return ioctl(RAWEVFD(e), IOCTL_EVTCHN_BIND_UNBOUND_PORT, &b);
}

static int raw_bind_interdomain(struct xgpu_evtchn *e, uint32_t remote_domid, uint32_t remote_port)
{
	struct ioctl_evtchn_bind_interdomain b = {.remote_domain = remote_domid, .remote_port = remote_port};
	return ioctl(RAWEVFD(e), IOCTL_EVTCHN_BIND_INTERDOMAIN, &b);
}

static int raw_unbind(struct xgpu_evtchn *e, uint32_t port)
{
	struct ioctl_evtchn_unbind u = {.port = port};
	return ioctl(RAWEVFD(e), IOCTL_EVTCHN_UNBIND, &u) < 0 ? -1 : 0;
}

static int raw_pending(struct xgpu_evtchn *e)
{
	unsigned int port;
	ssize_t n = read(RAWEVFD(e), &port, sizeof port);
	if (n == (ssize_t)sizeof port)
		return (int)port;
	if (n >= 0)
		errno = EAGAIN;
	return -1;
}

static int raw_unmask(struct xgpu_evtchn *e, uint32_t port)
{
	unsigned int p = port;
	return write(RAWEVFD(e), &p, sizeof p) == (ssize_t)sizeof p ? 0 : -1;
}

static int raw_export(struct xgpu_evtchn *e, int fds[XGPU_XEN_EXPORT_FDS])
{
	fds[0] = fcntl(RAWEVFD(e), F_DUPFD_CLOEXEC, 0);
	return fds[0] < 0 ? -1 : 1;
}

static const struct xgpu_evtchn_ops raw_ev_ops = {
    .close = raw_close,
    .fd = raw_fd,
    .notify = raw_notify,
    .bind_unbound_port = raw_bind_unbound,
    .bind_interdomain = raw_bind_interdomain,
    .unbind = raw_unbind,
    .pending = raw_pending,
    .unmask = raw_unmask,
    .export_fds = raw_export,
};

static struct xgpu_evtchn *raw_ev_new(int fd, char *err, size_t errlen)
{
	struct raw_ev *r = calloc(1, sizeof *r);
	if (!r) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0) {
		snprintf(err, errlen, "event channel descriptor: %s", strerror(errno));
		free(r);
		return NULL;
	}
	r->pub.ops = &raw_ev_ops;
	r->fd = fd;
	return &r->pub;
}

struct xgpu_evtchn *xgpu_evtchn_open_for_real(uint32_t domid, char *err, size_t errlen)
{
	const char *node = "/dev/xen/evtchn";
	int fd = open(node, O_RDWR | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		int e = errno;
		explain(err, errlen, "event channels", node,
			"load the xen-evtchn module: modprobe xen-evtchn", e);
		errno = e;
		return NULL;
	}
	struct ioctl_evtchn_restrict_domid r = {.domid = (domid_t)domid};
	if (domid > XGPU_XEN_DOMID_MAX || ioctl(fd, IOCTL_EVTCHN_RESTRICT_DOMID, &r) < 0) {
		int e = domid > XGPU_XEN_DOMID_MAX ? EINVAL : errno;
		snprintf(err, errlen, "cannot restrict an event-channel handle to domain %u: %s", domid,
			 strerror(e));
		close(fd);
		errno = e;
		return NULL;
	}
	struct xgpu_evtchn *ev = raw_ev_new(fd, err, errlen);
	if (!ev)
		close(fd);
	return ev;
}

struct xgpu_evtchn *xgpu_evtchn_import_real(uint32_t domid, const int *fds, int nfds, char *err,
					    size_t errlen)
{
	(void)domid; /* the handle was restricted to it by xgpud */
	struct stat st;
	if (nfds != 1 || fstat(fds[0], &st) < 0 || !S_ISCHR(st.st_mode)) {
		snprintf(err, errlen, "an event-channel handle is one character device, not %d descriptors",
			 nfds);
		errno = EINVAL;
		return NULL;
	}
	return raw_ev_new(fds[0], err, errlen);
}

/* Whether fd is the character device at node: what an adopted executor
 * hands back must be what xgpud gave it, not any descriptor it holds. */
static bool is_node(int fd, const char *node)
{
	struct stat a, b;
	return fstat(fd, &a) == 0 && stat(node, &b) == 0 && S_ISCHR(a.st_mode) && S_ISCHR(b.st_mode) &&
	       a.st_rdev == b.st_rdev;
}

struct xgpu_evtchn *xgpu_evtchn_adopt_real(uint32_t domid, const int *fds, int nfds, char *err, size_t errlen)
{
	(void)domid; /* restricted to it by the previous xgpud */
	if (nfds != 1 || !is_node(fds[0], "/dev/xen/evtchn")) {
		snprintf(err, errlen, "the executor's event-channel handle is not /dev/xen/evtchn");
		errno = EINVAL;
		return NULL;
	}
	return raw_ev_new(fds[0], err, errlen);
}

/* -- grants -- */

struct raw_map {
	struct raw_map *next;
	void *addr;
	unsigned count;
	unsigned nchunks;
	uint64_t index[]; /* one per chunk of BROKER_CHUNK pages (xgpud's own maps: one) */
};

struct raw_gnt {
	struct xgpu_gnttab pub;
	int fd;              /* /dev/xen/gntdev */
	uint32_t domid;      /* the only domain whose grants it maps */
	int broker;          /* xgpud: its end of the broker (-1 before export); executor: its end */
	bool executor;       /* maps through the broker */
	int32_t notify_port; /* the broker's only port for unmap notifications, -1: none */
	uint64_t broker_pages;
	int (*record)(void *arg, uint64_t pages); /* xgpud's record of broker_pages, or NULL */
	void *record_arg;
	pthread_mutex_t mu;
	pthread_cond_t renewed; /* executor: broker replaced */
	struct raw_map *maps;
};

static struct raw_gnt *RG(struct xgpu_gnttab *g)
{
	return (struct raw_gnt *)g;
}

/* IOCTL_GNTDEV_MAP_GRANT_REF of count refs of domid on fd: the offset to
 * mmap, and with a notification (count 1) on it. */
static int gntdev_map(int fd, uint32_t domid, const uint32_t *refs, unsigned count, int32_t noff,
		      int32_t nport, uint64_t *index)
{
	struct ioctl_gntdev_map_grant_ref *op = malloc(sizeof *op + count * sizeof op->refs[0]);
	if (!op) {
		errno = ENOMEM;
		return -1;
	}
	op->count = count;
	for (unsigned i = 0; i < count; i++)
		op->refs[i] = (struct ioctl_gntdev_grant_ref){.domid = domid, .ref = refs[i]};
	int r = ioctl(fd, IOCTL_GNTDEV_MAP_GRANT_REF, op);
	*index = op->index;
	free(op);
	if (r < 0)
		return -1;
	if (noff >= 0 || nport >= 0) {
		struct ioctl_gntdev_unmap_notify n = {.index = *index + (uint64_t)(noff >= 0 ? noff : 0),
						      .action = (noff >= 0 ? UNMAP_NOTIFY_CLEAR_BYTE : 0) |
								(nport >= 0 ? UNMAP_NOTIFY_SEND_EVENT : 0),
						      .event_channel_port = nport >= 0 ? (uint32_t)nport : 0};
		if (count != 1 || noff >= (int32_t)XGPU_XEN_PAGE_SIZE ||
		    ioctl(fd, IOCTL_GNTDEV_SET_UNMAP_NOTIFY, &n) < 0) {
			int e = count != 1 || noff >= (int32_t)XGPU_XEN_PAGE_SIZE ? EINVAL : errno;
			struct ioctl_gntdev_unmap_grant_ref u = {.index = *index, .count = count};
			ioctl(fd, IOCTL_GNTDEV_UNMAP_GRANT_REF, &u);
			errno = e;
			return -1;
		}
	}
	return 0;
}

static void gntdev_unmap(int fd, uint64_t index, unsigned count)
{
	struct ioctl_gntdev_unmap_grant_ref u = {.index = index, .count = count};
	ioctl(fd, IOCTL_GNTDEV_UNMAP_GRANT_REF, &u);
}

/* One broker round trip (executor). */
static int broker_call(struct raw_gnt *g, struct broker_req *q, size_t qlen, uint64_t *index)
{
	struct broker_rep rep;
	if (send(g->broker, q, qlen, MSG_NOSIGNAL) != (ssize_t)qlen)
		return -1;
	ssize_t n;
	do
		n = recv(g->broker, &rep, sizeof rep, 0);
	while (n < 0 && errno == EINTR);
	if (n != (ssize_t)sizeof rep) {
		errno = n < 0 ? errno : n == 0 ? EPIPE : EPROTO;
		return -1;
	}
	if (rep.err) {
		errno = rep.err > 0 && rep.err < 4096 ? rep.err : EPROTO;
		return -1;
	}
	if (index)
		*index = rep.index;
	return 0;
}

/* A map's round trip (executor, g->mu held). When xgpud went (EPIPE), it
 * waits for the next xgpud's broker: an xgpud restarting under the guest is
 * a pause, not an error. A map the dead xgpud made but never answered stays
 * in the gntdev file until the file goes. */
static int broker_map_call(struct raw_gnt *g, struct broker_req *q, size_t qlen, uint64_t *index)
{
	for (;;) {
		int old = g->broker;
		if (broker_call(g, q, qlen, index) == 0)
			return 0;
		if (errno != EPIPE && errno != ECONNRESET)
			return -1;
		struct timespec dl;
		clock_gettime(CLOCK_REALTIME, &dl);
		dl.tv_sec += BROKER_RENEW_WAIT_S;
		while (g->broker == old && pthread_cond_timedwait(&g->renewed, &g->mu, &dl) == 0)
			;
		if (g->broker == old) {
			errno = EPIPE;
			return -1;
		}
	}
}

static void *rg_map(struct xgpu_gnttab *gt, unsigned count, uint32_t domid, const uint32_t *refs,
		    bool writable, int32_t noff, int32_t nport)
{
	struct raw_gnt *g = RG(gt);
	if (domid != g->domid) {
		errno = EACCES;
		return NULL;
	}
	if (count == 0 || count > XGPU_XEN_MAX_REGION_PAGES) {
		errno = EINVAL;
		return NULL;
	}
	unsigned nchunks = g->executor ? (count + BROKER_CHUNK - 1) / BROKER_CHUNK : 1;
	struct raw_map *m = calloc(1, sizeof *m + nchunks * sizeof m->index[0]);
	size_t len = (size_t)count * XGPU_XEN_PAGE_SIZE;
	int prot = PROT_READ | (writable ? PROT_WRITE : 0), e = 0;
	if (!m) {
		errno = ENOMEM;
		return NULL;
	}
	void *addr = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (addr == MAP_FAILED) {
		free(m);
		return NULL;
	}
	pthread_mutex_lock(&g->mu);
	for (unsigned c = 0; c < nchunks && !e; c++) {
		unsigned first = c * BROKER_CHUNK,
			 n = g->executor && count - first > BROKER_CHUNK ? BROKER_CHUNK : count - first;
		uint64_t index = 0;
		int r;
		if (g->executor) {
			size_t qlen = sizeof(struct broker_req) + n * sizeof(uint32_t);
			struct broker_req *q = malloc(qlen);
			if (!q) {
				e = ENOMEM;
				break;
			}
			*q = (struct broker_req){.op = BROKER_MAP,
						 .count = n,
						 .writable = writable,
						 .notify_off = noff,
						 .notify_port = nport};
			memcpy(q->refs, refs + first, n * sizeof(uint32_t));
			r = broker_map_call(g, q, qlen, &index);
			free(q);
		} else {
			r = gntdev_map(g->fd, domid, refs + first, n, noff, nport, &index);
		}
		if (r < 0) {
			e = errno;
			break;
		}
		m->index[m->nchunks++] = index;
		void *p =
		    mmap((char *)addr + (size_t)first * XGPU_XEN_PAGE_SIZE, (size_t)n * XGPU_XEN_PAGE_SIZE,
			 prot, MAP_SHARED | MAP_FIXED, g->fd, (off_t)index);
		if (p == MAP_FAILED)
			e = errno;
	}
	if (e) {
		munmap(addr, len);
		for (unsigned c = 0; c < m->nchunks; c++) {
			unsigned first = c * BROKER_CHUNK, n = g->executor && count - first > BROKER_CHUNK
								   ? BROKER_CHUNK
								   : count - first;
			if (g->executor) {
				struct broker_req q = {.op = BROKER_UNMAP, .count = n, .index = m->index[c]};
				broker_call(g, &q, sizeof q, NULL);
			} else {
				gntdev_unmap(g->fd, m->index[c], n);
			}
		}
		pthread_mutex_unlock(&g->mu);
		free(m);
		errno = e;
		return NULL;
	}
	m->addr = addr;
	m->count = count;
	m->next = g->maps;
	g->maps = m;
	pthread_mutex_unlock(&g->mu);
	return addr;
}

static void *rg_map_refs(struct xgpu_gnttab *g, unsigned count, uint32_t domid, const uint32_t *refs,
			 bool writable)
{
	return rg_map(g, count, domid, refs, writable, -1, -1);
}

static void *rg_map_notify(struct xgpu_gnttab *g, uint32_t domid, uint32_t ref, bool writable, int32_t noff,
			   int32_t nport)
{
	return rg_map(g, 1, domid, &ref, writable, noff, nport);
}

/* Unmaps m (taken off the list). Caller holds g->mu. */
static void rg_release(struct raw_gnt *g, struct raw_map *m)
{
	munmap(m->addr, (size_t)m->count * XGPU_XEN_PAGE_SIZE);
	for (unsigned c = 0; c < m->nchunks; c++) {
		unsigned first = c * BROKER_CHUNK;
		unsigned n = g->executor && m->count - first > BROKER_CHUNK ? BROKER_CHUNK : m->count - first;
		if (g->executor) {
			struct broker_req q = {.op = BROKER_UNMAP, .count = n, .index = m->index[c]};
			broker_call(g, &q, sizeof q, NULL);
		} else {
			gntdev_unmap(g->fd, m->index[c], n);
		}
	}
	free(m);
}

static int rg_unmap(struct xgpu_gnttab *gt, void *addr, unsigned count)
{
	struct raw_gnt *g = RG(gt);
	pthread_mutex_lock(&g->mu);
	for (struct raw_map **pp = &g->maps; *pp; pp = &(*pp)->next)
		if ((*pp)->addr == addr && (*pp)->count == count) {
			struct raw_map *m = *pp;
			*pp = m->next;
			rg_release(g, m);
			pthread_mutex_unlock(&g->mu);
			return 0;
		}
	pthread_mutex_unlock(&g->mu);
	errno = EINVAL;
	return -1;
}

static void rg_close(struct xgpu_gnttab *gt)
{
	struct raw_gnt *g = RG(gt);
	if (!g)
		return;
	pthread_mutex_lock(&g->mu);
	while (g->maps) {
		struct raw_map *m = g->maps;
		g->maps = m->next;
		rg_release(g, m);
	}
	pthread_mutex_unlock(&g->mu);
	if (g->broker >= 0)
		close(g->broker);
	close(g->fd);
	pthread_mutex_destroy(&g->mu);
	pthread_cond_destroy(&g->renewed);
	free(g);
}

/* xgpud: the executor gets the gntdev file and the other end of a new broker. */
static int rg_export(struct xgpu_gnttab *gt, int fds[XGPU_XEN_EXPORT_FDS])
{
	struct raw_gnt *g = RG(gt);
	int sv[2];
	if (g->executor || g->broker >= 0) {
		errno = EBUSY;
		return -1;
	}
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv) < 0)
		return -1;
	fds[0] = fcntl(g->fd, F_DUPFD_CLOEXEC, 0);
	if (fds[0] < 0) {
		int e = errno;
		close(sv[0]);
		close(sv[1]);
		errno = e;
		return -1;
	}
	/* The executor's end blocks (its requests are calls). */
	int fl = fcntl(sv[1], F_GETFL);
	fcntl(sv[1], F_SETFL, fl & ~O_NONBLOCK);
	g->broker = sv[0];
	fds[1] = sv[1];
	return 2;
}

static int rg_broker_fd(struct xgpu_gnttab *gt)
{
	struct raw_gnt *g = RG(gt);
	return g->executor ? -1 : g->broker;
}

/* Answers what the executor asked: every request is checked (sizes, counts,
 * the total it holds) and every map is of this handle's domain. */
static int rg_broker_serve(struct xgpu_gnttab *gt)
{
	struct raw_gnt *g = RG(gt);
	if (g->executor || g->broker < 0)
		return -1;
	size_t cap = sizeof(struct broker_req) + BROKER_CHUNK * sizeof(uint32_t);
	struct broker_req *q = malloc(cap + 1);
	if (!q)
		return 0;
	int rc = 0;
	for (int budget = BROKER_BUDGET; budget > 0; budget--) {
		ssize_t n = recv(g->broker, q, cap + 1, MSG_DONTWAIT);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			break;
		if (n <= 0 || (size_t)n < sizeof *q || (size_t)n > cap) {
			rc = -1; /* gone (EPIPE), or not a request of ours */
			errno = n == 0 ? EPIPE : EPROTO;
			break;
		}
		struct broker_rep rep = {0};
		if (q->op == BROKER_MAP && q->count >= 1 && q->count <= BROKER_CHUNK &&
		    (size_t)n == sizeof *q + q->count * sizeof(uint32_t)) {
			uint64_t after = g->broker_pages + q->count;
			if (after > BROKER_MAX_PAGES)
				rep.err = ENOSPC;
			else if (q->notify_port >= 0 && q->notify_port != g->notify_port)
				rep.err = EPERM; /* another domain's port, perhaps */
			else if (g->record && g->record(g->record_arg, after) < 0)
				rep.err = EIO; /* a map we could not account for after a restart */
			else if (gntdev_map(g->fd, g->domid, q->refs, q->count, q->notify_off, q->notify_port,
					    &rep.index) < 0) {
				rep.err = errno ? errno : EIO;
				if (g->record)
					g->record(g->record_arg, g->broker_pages);
			} else {
				g->broker_pages = after;
			}
		} else if (q->op == BROKER_UNMAP && (size_t)n == sizeof *q && q->count >= 1 &&
			   q->count <= BROKER_CHUNK) {
			struct ioctl_gntdev_unmap_grant_ref u = {.index = q->index, .count = q->count};
			if (ioctl(g->fd, IOCTL_GNTDEV_UNMAP_GRANT_REF, &u) < 0)
				rep.err = errno ? errno : EIO;
			else {
				g->broker_pages -= q->count <= g->broker_pages ? q->count : g->broker_pages;
				if (g->record)
					g->record(g->record_arg, g->broker_pages);
			}
		} else {
			rc = -1;
			errno = EPROTO;
			break;
		}
		if (send(g->broker, &rep, sizeof rep, MSG_DONTWAIT | MSG_NOSIGNAL) != (ssize_t)sizeof rep) {
			rc = -1;
			errno = EPROTO; /* it does not read its answers */
			break;
		}
	}
	free(q);
	return rc;
}

static void rg_broker_notify_port(struct xgpu_gnttab *gt, int32_t port)
{
	RG(gt)->notify_port = port;
}

/* Executor: the adopting xgpud's new broker. Under the lock a map or an
 * unmap holds for its whole round trip, so no request straddles the two. */
static int rg_broker_renew(struct xgpu_gnttab *gt, int fd)
{
	struct raw_gnt *g = RG(gt);
	int type = 0;
	socklen_t tl = sizeof type;
	if (!g->executor || getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tl) < 0 || type != SOCK_SEQPACKET) {
		errno = EINVAL;
		return -1;
	}
	struct timeval tv = {BROKER_TIMEOUT_S, 0};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
	pthread_mutex_lock(&g->mu);
	int old = g->broker;
	g->broker = fd;
	pthread_cond_broadcast(&g->renewed);
	pthread_mutex_unlock(&g->mu);
	if (old >= 0)
		close(old);
	return 0;
}

static void rg_broker_account(struct xgpu_gnttab *gt, uint64_t held, int (*record)(void *arg, uint64_t pages),
			      void *arg)
{
	struct raw_gnt *g = RG(gt);
	g->broker_pages = held < BROKER_MAX_PAGES ? held : BROKER_MAX_PAGES;
	g->record = record;
	g->record_arg = arg;
}

static uint64_t rg_broker_held(struct xgpu_gnttab *gt)
{
	return RG(gt)->broker_pages;
}

static const struct xgpu_gnttab_ops raw_gnt_ops = {
    .broker_account = rg_broker_account,
    .broker_held = rg_broker_held,
    .broker_notify_port = rg_broker_notify_port,
    .broker_renew = rg_broker_renew,
    .close = rg_close,
    .map_domain_grant_refs = rg_map_refs,
    .map_grant_ref_notify = rg_map_notify,
    .unmap = rg_unmap,
    .export_fds = rg_export,
    .broker_fd = rg_broker_fd,
    .broker_serve = rg_broker_serve,
};

static struct raw_gnt *raw_gnt_new(int fd, uint32_t domid, int broker, bool executor)
{
	struct raw_gnt *g = calloc(1, sizeof *g);
	if (!g)
		return NULL;
	g->pub.ops = &raw_gnt_ops;
	g->fd = fd;
	g->domid = domid;
	g->broker = broker;
	g->executor = executor;
	g->notify_port = -1;
	pthread_mutex_init(&g->mu, NULL);
	pthread_cond_init(&g->renewed, NULL);
	return g;
}

struct xgpu_gnttab *xgpu_gnttab_open_for_real(uint32_t domid, char *err, size_t errlen)
{
	const char *node = "/dev/xen/gntdev";
	int fd = open(node, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		explain(err, errlen, "grant mapping", node, "load the xen-gntdev module: modprobe xen-gntdev",
			e);
		errno = e;
		return NULL;
	}
	/* Failure is normal on kernels without the per-handle limit. */
	struct ioctl_gntdev_set_max_grants mg = {.count = GNTTAB_MAX_GRANTS};
	ioctl(fd, IOCTL_GNTDEV_SET_MAX_GRANTS, &mg);
	struct raw_gnt *g = raw_gnt_new(fd, domid, -1, false);
	if (!g) {
		close(fd);
		snprintf(err, errlen, "out of memory");
		errno = ENOMEM;
		return NULL;
	}
	return &g->pub;
}

struct xgpu_gnttab *xgpu_gnttab_import_real(uint32_t domid, const int *fds, int nfds, char *err,
					    size_t errlen)
{
	struct stat st;
	int type = 0;
	socklen_t tl = sizeof type;
	if (nfds != 2 || fstat(fds[0], &st) < 0 || !S_ISCHR(st.st_mode) ||
	    getsockopt(fds[1], SOL_SOCKET, SO_TYPE, &type, &tl) < 0 || type != SOCK_SEQPACKET) {
		snprintf(err, errlen,
			 "a grant handle is gntdev and a broker socket, not these %d descriptors", nfds);
		errno = EINVAL;
		return NULL;
	}
	struct timeval tv = {BROKER_TIMEOUT_S, 0};
	setsockopt(fds[1], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	setsockopt(fds[1], SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
	struct raw_gnt *g = raw_gnt_new(fds[0], domid, fds[1], true);
	if (!g) {
		snprintf(err, errlen, "out of memory");
		errno = ENOMEM;
		return NULL;
	}
	return &g->pub;
}

/* The adopted executor's copies: its gntdev file (the one xgpud mapped its
 * grants on, holding their maps) and its end of the previous xgpud's broker,
 * dead with that xgpud and closed here. The handle is xgpud's, with no
 * broker yet: export_fds makes the new one. It counts the whole allowance
 * as held until broker_account gives it the previous xgpud's record (gntdev
 * cannot list a file's maps), and so where there is no record: the
 * executor then maps nothing more until it unmaps. */
struct xgpu_gnttab *xgpu_gnttab_adopt_real(uint32_t domid, const int *fds, int nfds, char *err, size_t errlen)
{
	if (nfds != 2 || !is_node(fds[0], "/dev/xen/gntdev")) {
		snprintf(err, errlen,
			 "the executor's grant handle is not /dev/xen/gntdev and a broker socket");
		errno = EINVAL;
		return NULL;
	}
	struct raw_gnt *g = raw_gnt_new(fds[0], domid, -1, false);
	if (!g) {
		snprintf(err, errlen, "out of memory");
		errno = ENOMEM;
		return NULL;
	}
	g->broker_pages = BROKER_MAX_PAGES;
	close(fds[1]);
	return &g->pub;
}
