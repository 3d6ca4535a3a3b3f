/* SPDX-License-Identifier: Apache-2.0 */
/* util.c - clocks, size parsing and formatting, socket path resolution. */
#include "util.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

uint64_t xgpu_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int xgpu_parse_size(const char *s, uint64_t *out)
{
	if (!s || !*s || *s == '-' || *s == '+')
		return -1;
	errno = 0;
	char *end;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || end == s)
		return -1;
	unsigned shift = 0;
	switch (*end) {
	case 'k':
	case 'K':
		shift = 10;
		end++;
		break;
	case 'm':
	case 'M':
		shift = 20;
		end++;
		break;
	case 'g':
	case 'G':
		shift = 30;
		end++;
		break;
	case 't':
	case 'T':
		shift = 40;
		end++;
		break;
	default:
		break;
	}
	if (shift && (!strcasecmp(end, "ib") || !strcasecmp(end, "b")))
		end += strlen(end);
	else if (!shift && !strcasecmp(end, "b"))
		end++;
	if (*end)
		return -1;
	if (shift && v > (ULLONG_MAX >> shift))
		return -1;
	*out = (uint64_t)v << shift;
	return 0;
}

void xgpu_format_size(uint64_t bytes, char *buf, size_t len)
{
	static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
	double v = (double)bytes;
	unsigned u = 0;
	while (v >= 1024 && u + 1 < XGPU_ARRAY_SIZE(units)) {
		v /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(buf, len, "%llu B", (unsigned long long)bytes);
	else
		snprintf(buf, len, "%.1f %s", v, units[u]);
}

int xgpu_parse_long(const char *s, long min, long max, long *out)
{
	if (!s || !*s)
		return -1;
	errno = 0;
	char *end;
	long v = strtol(s, &end, 10);
	if (errno || *end || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

ptrdiff_t xgpu_floor_search(const void *v, size_t n, size_t stride, size_t key_off, uint64_t key)
{
	ptrdiff_t lo = 0, hi = (ptrdiff_t)n - 1, found = -1;
	while (lo <= hi) {
		ptrdiff_t mid = lo + (hi - lo) / 2;
		uint64_t k;
		memcpy(&k, (const char *)v + (size_t)mid * stride + key_off, sizeof k);
		if (k <= key) {
			found = mid;
			lo = mid + 1;
		} else {
			hi = mid - 1;
		}
	}
	return found;
}

size_t xgpu_strlcpy(char *dst, const char *src, size_t size)
{
	size_t n = strlen(src);
	if (size) {
		size_t c = n < size - 1 ? n : size - 1;
		memcpy(dst, src, c);
		dst[c] = '\0';
	}
	return n;
}

const char *xgpu_socket_path(const char *explicit_path, char *buf, size_t len)
{
	if (explicit_path && *explicit_path)
		return explicit_path;
	const char *env = getenv("XGPU_SOCKET");
	if (env && *env)
		return env;
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	if (xdg && *xdg) {
		snprintf(buf, len, "%s/xgpu.sock", xdg);
		return buf;
	}
	return "/run/xgpu/xgpud.sock";
}

int xgpu_fail(struct xgpu_errbuf *e, const char *fmt, ...)
{
	if (e->buf && e->len) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(e->buf, e->len, fmt, ap);
		va_end(ap);
	}
	return -1;
}
