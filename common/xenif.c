/* SPDX-License-Identifier: Apache-2.0 */
/* xenif.c - which Xen the xgpu_*_open() calls reach (xgpu-xenstub when
 * XGPU_XEN_STUB names its socket, else real Xen), and the xenstore helpers
 * every caller shares: a strict unsigned-decimal reader and a formatted
 * writer. Values read from xenstore may come from a guest, so the reader
 * accepts digits only, bounded, and says ENOENT or EINVAL. */
#include "xenif.h"
#include "xenvgpu.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Longer than any canonical u64 (20 digits) plus some leading zeros; a value
 * longer than this is not a number anyone meant. */
#define XS_U64_MAX_CHARS 32u
/* XENSTORE_PAYLOAD_MAX: a write must fit one message with its path. */
#define XS_VALUE_MAX 4096u

static const char *stub_path(void)
{
	const char *p = getenv("XGPU_XEN_STUB");
	return p && *p ? p : NULL;
}

bool xgpu_xen_stub_selected(void)
{
	return stub_path() != NULL;
}

/* XGPU_XEN_DOMID: unset or empty is dom0; anything else must be a plain
 * decimal domid a real Xen could hand out. */
static int stub_domid(uint32_t *domid, char *err, size_t errlen)
{
	const char *s = getenv("XGPU_XEN_DOMID");
	*domid = 0;
	if (!s || !*s)
		return 0;
	uint64_t v = 0;
	size_t i = 0;
	for (; s[i]; i++) {
		if (s[i] < '0' || s[i] > '9' || i >= 8)
			break;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	if (s[i] || v > XGPU_XEN_DOMID_MAX) {
		snprintf(err, errlen, "XGPU_XEN_DOMID='%s' is not a domain id (a decimal number 0..%u)", s,
			 XGPU_XEN_DOMID_MAX);
		errno = EINVAL;
		return -1;
	}
	*domid = (uint32_t)v;
	return 0;
}

#define OPEN_BY_ENV(kind)                                                                                    \
	struct xgpu_##kind *xgpu_##kind##_open(char *err, size_t errlen)                                     \
	{                                                                                                    \
		const char *path = stub_path();                                                              \
		if (!path)                                                                                   \
			return xgpu_##kind##_open_real(err, errlen);                                         \
		uint32_t domid;                                                                              \
		if (stub_domid(&domid, err, errlen))                                                         \
			return NULL;                                                                         \
		return xgpu_##kind##_open_stub(path, domid, err, errlen);                                    \
	}

OPEN_BY_ENV(xs)
OPEN_BY_ENV(evtchn)
OPEN_BY_ENV(gntshr)
OPEN_BY_ENV(gnttab)

enum xgpu_xen_impl xgpu_xen_impl(void)
{
	return stub_path() ? XGPU_XEN_IMPL_STUB : XGPU_XEN_IMPL_REAL;
}

#define OPEN_FOR(kind)                                                                                       \
	struct xgpu_##kind *xgpu_##kind##_open_for(uint32_t domid, char *err, size_t errlen)                 \
	{                                                                                                    \
		const char *path = stub_path();                                                              \
		if (!path)                                                                                   \
			return xgpu_##kind##_open_for_real(domid, err, errlen);                              \
		uint32_t self;                                                                               \
		if (stub_domid(&self, err, errlen))                                                          \
			return NULL;                                                                         \
		return xgpu_##kind##_open_for_stub(path, self, domid, err, errlen);                          \
	}                                                                                                    \
	struct xgpu_##kind *xgpu_##kind##_import(uint32_t impl, uint32_t domid, const int *fds, int nfds,    \
						 char *err, size_t errlen)                                   \
	{                                                                                                    \
		if (impl == XGPU_XEN_IMPL_REAL)                                                              \
			return xgpu_##kind##_import_real(domid, fds, nfds, err, errlen);                     \
		if (impl == XGPU_XEN_IMPL_STUB)                                                              \
			return xgpu_##kind##_import_stub(domid, fds, nfds, err, errlen);                     \
		snprintf(err, errlen, "no Xen implementation %u", impl);                                     \
		errno = EINVAL;                                                                              \
		return NULL;                                                                                 \
	}

OPEN_FOR(evtchn)
OPEN_FOR(gnttab)

#define ADOPT(kind)                                                                                          \
	struct xgpu_##kind *xgpu_##kind##_adopt(uint32_t impl, uint32_t domid, const int *fds, int nfds,     \
						char *err, size_t errlen)                                    \
	{                                                                                                    \
		if (impl == XGPU_XEN_IMPL_REAL)                                                              \
			return xgpu_##kind##_adopt_real(domid, fds, nfds, err, errlen);                      \
		if (impl == XGPU_XEN_IMPL_STUB)                                                              \
			return xgpu_##kind##_import_stub(domid, fds, nfds, err, errlen);                     \
		snprintf(err, errlen, "no Xen implementation %u", impl);                                     \
		errno = EINVAL;                                                                              \
		return NULL;                                                                                 \
	}

ADOPT(evtchn)
ADOPT(gnttab)

void *xgpu_xen_map_shared(struct xgpu_gnttab *g, uint32_t domid, uint32_t root_ref, uint32_t npages,
			  int32_t notify_port, struct xgpu_xen_root **root_out, struct xgpu_xen_root *hdr,
			  char *err, size_t errlen)
{
	struct xgpu_xen_root *root =
	    !root_out ? g->ops->map_domain_grant_refs(g, 1, domid, &root_ref, false)
	    : notify_port >= 0
		? g->ops->map_grant_ref_notify(g, domid, root_ref, true,
					       (int32_t)XGPU_XEN_ROOT_BE_ALIVE_OFFSET, notify_port)
		: g->ops->map_domain_grant_refs(g, 1, domid, &root_ref, true);
	if (!root) {
		snprintf(err, errlen, "cannot map root page grant %u of domain %u: %s", root_ref, domid,
			 strerror(errno));
		return NULL;
	}
	uint32_t *refs = NULL, *dirs = NULL;
	void *region = NULL;
	int e = EINVAL;
	memcpy(hdr, root, sizeof *hdr);
	if (hdr->magic != XGPU_XEN_ROOT_MAGIC) {
		snprintf(err, errlen, "root page has magic 0x%08x, not 0x%08x", hdr->magic,
			 XGPU_XEN_ROOT_MAGIC);
		goto out;
	}
	if (hdr->version != XGPU_PROTO_VERSION) {
		snprintf(err, errlen,
			 "protocol version mismatch: the guest's root page speaks xgpu protocol %u, xgpud "
			 "speaks %u",
			 hdr->version, XGPU_PROTO_VERSION);
		e = ESTALE;
		goto out;
	}
	if (hdr->npages != npages) {
		snprintf(err, errlen, "root page lists %u pages, %u announced", hdr->npages, npages);
		goto out;
	}
	uint32_t ndir = (npages + XGPU_XEN_REFS_PER_DIR - 1) / XGPU_XEN_REFS_PER_DIR;
	if (hdr->ndir != ndir || ndir > XGPU_XEN_ROOT_MAX_DIRS) {
		snprintf(err, errlen, "root page has %u directory pages, %u pages need %u", hdr->ndir, npages,
			 ndir);
		goto out;
	}
	dirs = malloc(ndir * sizeof *dirs);
	refs = malloc((size_t)npages * sizeof *refs);
	if (!dirs || !refs) {
		snprintf(err, errlen, "out of memory for %u refs", npages);
		e = ENOMEM;
		goto out;
	}
	memcpy(dirs, root->dir_refs, ndir * sizeof *dirs);
	for (uint32_t i = 0; i < ndir; i++) {
		const uint32_t *dp = g->ops->map_domain_grant_refs(g, 1, domid, &dirs[i], false);
		if (!dp) {
			e = errno;
			snprintf(err, errlen, "cannot map directory page %u (grant %u) of domain %u: %s", i,
				 dirs[i], domid, strerror(errno));
			goto out;
		}
		uint32_t first = i * XGPU_XEN_REFS_PER_DIR;
		uint32_t cnt =
		    npages - first < XGPU_XEN_REFS_PER_DIR ? npages - first : XGPU_XEN_REFS_PER_DIR;
		memcpy(refs + first, dp, cnt * sizeof *refs);
		g->ops->unmap(g, (void *)dp, 1);
	}
	region = g->ops->map_domain_grant_refs(g, npages, domid, refs, true);
	if (!region) {
		e = errno;
		snprintf(err, errlen, "cannot map the %u region pages domain %u listed: %s", npages, domid,
			 strerror(errno));
	}
out:
	free(dirs);
	free(refs);
	if (root_out)
		*root_out = root; /* even on failure: the caller answers there */
	else
		g->ops->unmap(g, root, 1);
	if (!region)
		errno = e;
	return region;
}

int xgpu_xs_read_u64(struct xgpu_xs *xs, xgpu_xs_tx tx, const char *path, uint64_t max, uint64_t *out)
{
	unsigned len = 0;
	char *s = xs->ops->read(xs, tx, path, &len);
	if (!s)
		return -1; /* errno from the read: ENOENT when absent */
	int rc = -1;
	uint64_t v = 0;
	/* len, not strlen: a value with a NUL inside is junk, not a prefix. */
	if (len == 0 || len > XS_U64_MAX_CHARS)
		goto out;
	for (unsigned i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			goto out;
		unsigned d = (unsigned)(s[i] - '0');
		if (v > (UINT64_MAX - d) / 10)
			goto out;
		v = v * 10 + d;
	}
	if (v > max)
		goto out;
	*out = v;
	rc = 0;
out:
	free(s);
	if (rc)
		errno = EINVAL;
	return rc;
}

int xgpu_xs_printf(struct xgpu_xs *xs, xgpu_xs_tx tx, const char *path, const char *fmt, ...)
{
	char buf[XS_VALUE_MAX + 1];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	if (n < 0 || (unsigned)n > XS_VALUE_MAX) {
		errno = E2BIG;
		return -1;
	}
	return xs->ops->write(xs, tx, path, buf, (unsigned)n);
}
