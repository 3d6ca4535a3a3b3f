/* SPDX-License-Identifier: Apache-2.0 */
/* util.c - clocks, size parsing and formatting, socket path resolution, an
 * uncached memcpy. */
#include "util.h"

#if defined(__x86_64__)
#include <emmintrin.h>
#endif

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

/* See util.h. glibc's memcpy streams only copies beyond a threshold derived
 * from the last-level cache (114 MiB on this project's VM, which reports the
 * host's L3), while a stream moves a large transfer a slice at a time. */
void xgpu_memcpy_nt(void *dst, const void *src, size_t n)
{
#if defined(__x86_64__)
	uint8_t *d = dst;
	const uint8_t *s = src;
	size_t head = (16 - ((uintptr_t)d & 15)) & 15;
	/* Copies this large glibc streams itself, with wider vectors than
	 * this loop's (a 256 MiB copy into the simulated device ran at 0.7 of
	 * glibc's through it). */
	if (n < head + 256 || n >= (64u << 20)) {
		memcpy(dst, src, n);
		return;
	}
	memcpy(d, s, head);
	d += head;
	s += head;
	n -= head;
	for (; n >= 64; n -= 64, d += 64, s += 64) {
		__m128i a = _mm_loadu_si128((const __m128i *)s),
			b = _mm_loadu_si128((const __m128i *)(s + 16)),
			c = _mm_loadu_si128((const __m128i *)(s + 32)),
			e = _mm_loadu_si128((const __m128i *)(s + 48));
		_mm_stream_si128((__m128i *)d, a);
		_mm_stream_si128((__m128i *)(d + 16), b);
		_mm_stream_si128((__m128i *)(d + 32), c);
		_mm_stream_si128((__m128i *)(d + 48), e);
	}
	memcpy(d, s, n);
	_mm_sfence();
#else
	memcpy(dst, src, n);
#endif
}
