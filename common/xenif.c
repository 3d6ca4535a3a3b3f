/* SPDX-License-Identifier: Apache-2.0 */
/* xenif.c - which Xen the xgpu_*_open() calls reach (xgpu-xenstub when
 * XGPU_XEN_STUB names its socket, else real Xen), and the xenstore helpers
 * every caller shares: a strict unsigned-decimal reader and a formatted
 * writer. Values read from xenstore may come from a guest, so the reader
 * accepts digits only, bounded, and says ENOENT or EINVAL. */
#include "xenif.h"

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
