/* SPDX-License-Identifier: Apache-2.0 */
/* util.h - small helpers shared by every xgpu binary: clocks, sizes, strings. */
#ifndef XGPU_UTIL_H
#define XGPU_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define XGPU_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

uint64_t xgpu_now_ns(void); /* CLOCK_MONOTONIC */
/* memcpy with non-temporal stores (SSE2 on x86-64; plain memcpy elsewhere):
 * the destination's lines are written without being read first and without
 * displacing the cache, which suits a large destination not read again at
 * once. Ends with a store fence, so the bytes are ordered before whatever the
 * caller publishes next. */
void xgpu_memcpy_nt(void *dst, const void *src, size_t n);

static inline void xgpu_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#else
	__asm__ __volatile__("" ::: "memory");
#endif
}

/* Where a parser writes why it failed: a caller's buffer, which may be NULL
 * or empty when the caller does not want the reason. */
struct xgpu_errbuf {
	char *buf;
	size_t len;
};
/* Formats the reason into e (if it has room) and returns -1, so parsers
 * can `return xgpu_fail(e, ...)`. */
__attribute__((format(printf, 2, 3))) int xgpu_fail(struct xgpu_errbuf *e, const char *fmt, ...);

/* "4096", "64K", "512M", "4G" (binary units, optional trailing 'B' or 'iB').
 * Returns 0 and sets *out, or -1 for malformed or overflowing text. */
int xgpu_parse_size(const char *s, uint64_t *out);
/* Formats bytes as "1.5 GiB" etc. */
void xgpu_format_size(uint64_t bytes, char *buf, size_t len);
/* Parses a decimal integer in [min, max]; -1 if not. */
int xgpu_parse_long(const char *s, long min, long max, long *out);

/* In an array of n elements of `stride` bytes sorted by a uint64_t key at
 * byte `key_off` of each element: the index of the last element whose key is
 * <= key, or -1. (Range tables use it to find the range that may hold an
 * address.) */
ptrdiff_t xgpu_floor_search(const void *v, size_t n, size_t stride, size_t key_off, uint64_t key);

/* Copies with truncation, always terminating; returns strlen(src). */
size_t xgpu_strlcpy(char *dst, const char *src, size_t size);

/* Socket path as BRIEF section 4 orders it: explicit, $XGPU_SOCKET,
 * $XDG_RUNTIME_DIR/xgpu.sock, /run/xgpu/xgpud.sock. */
const char *xgpu_socket_path(const char *explicit_path, char *buf, size_t len);

#endif
