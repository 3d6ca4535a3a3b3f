/* SPDX-License-Identifier: Apache-2.0 */
/* ptx_call.c - device printf's formatting for the PTX interpreter (vprintf,
 * which nvcc calls for printf: a format string and a buffer of the
 * arguments, each aligned to its size, floats promoted to double).
 *
 * The format and the arguments are guest memory: everything is read through
 * the caller's bounded reader, the format is cut at PTX_PRINTF_FMT bytes,
 * each conversion's output is bounded, and what does not fit the output
 * buffer is dropped (as the device's printf FIFO drops it).
 *
 * Device malloc and free: a heap per context, its size the context's
 * CU_LIMIT_MALLOC_HEAP_SIZE when a kernel first needs it; its blocks are
 * kept in a sorted table on the host (first fit), so a kernel writing past
 * its block corrupts data but never the allocator.
 *
 * Also the bit-mask instruction bmsk, as PTX's ISA defines it.
 */
#include "ptx_call.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PTX_PRINTF_FMT 4096u /* format bytes read */
#define PTX_PRINTF_STR 4096u /* bytes of one %s */

static void put(struct ptx_out *o, const char *s, size_t n)
{
	if (o->len >= o->cap)
		return;
	if (n > o->cap - o->len)
		n = o->cap - o->len;
	memcpy(o->buf + o->len, s, n);
	o->len += n;
}

int ptx_vprintf(struct ptx_out *o, uint64_t fmt, uint64_t args, ptx_read_fn rd, void *ctx)
{
	char f[PTX_PRINTF_FMT + 1];
	size_t n = 0;
	for (; n < PTX_PRINTF_FMT; n++) {
		if (!rd(ctx, fmt + n, &f[n], 1))
			return -1;
		if (!f[n])
			break;
	}
	f[n] = 0;
	uint64_t at = 0; /* offset in the argument buffer */
	int nargs = 0;
	for (size_t i = 0; i < n;) {
		if (f[i] != '%') {
			size_t j = i;
			while (j < n && f[j] != '%')
				j++;
			put(o, f + i, j - i);
			i = j;
			continue;
		}
		if (i + 1 < n && f[i + 1] == '%') {
			put(o, "%", 1);
			i += 2;
			continue;
		}
		/* A conversion: flags, width, precision, length, then the letter. */
		size_t j = i + 1;
		while (j < n && strchr("-+ #0", f[j]))
			j++;
		/* Width and precision: at most 3 digits each, so that one
		 * conversion's output stays small (glibc would build a
		 * precision of 10^8 digits). */
		size_t d0 = j;
		while (j < n && f[j] >= '0' && f[j] <= '9')
			j++;
		bool big = j - d0 > 3;
		if (j < n && f[j] == '.') {
			j++;
			d0 = j;
			while (j < n && f[j] >= '0' && f[j] <= '9')
				j++;
			big |= j - d0 > 3;
		}
		/* '*' widths take an argument on a GPU too; not supported: printed as is. */
		size_t lenstart = j;
		while (j < n && strchr("hlLqjzt", f[j]))
			j++;
		if (j >= n || (j - i) > 24 || big) {
			put(o, f + i, n - i);
			break;
		}
		char c = f[j];
		char spec[32];
		/* The spec without its length modifiers; ours is added per kind. */
		size_t sl = lenstart - i;
		memcpy(spec, f + i, sl);
		bool longlong = false;
		for (size_t q = lenstart; q < j; q++)
			longlong |= f[q] == 'l' || f[q] == 'L' || f[q] == 'q' || f[q] == 'j' || f[q] == 'z' ||
				    f[q] == 't';
		char tmp[512];
		int w = 0;
		uint32_t size;
		switch (c) {
		case 'd':
		case 'i':
		case 'u':
		case 'x':
		case 'X':
		case 'o':
		case 'c':
			size = longlong ? 8 : 4;
			break;
		case 'f':
		case 'F':
		case 'e':
		case 'E':
		case 'g':
		case 'G':
		case 'a':
		case 'A':
		case 's':
		case 'p':
			size = 8;
			break;
		default:
			/* Not a conversion printf knows: printed as is. */
			put(o, f + i, j + 1 - i);
			i = j + 1;
			continue;
		}
		at = (at + size - 1) / size * size;
		uint64_t v = 0;
		if (!rd(ctx, args + at, &v, size))
			return -1;
		at += size;
		nargs++;
		switch (c) {
		case 'f':
		case 'F':
		case 'e':
		case 'E':
		case 'g':
		case 'G':
		case 'a':
		case 'A': {
			double d;
			memcpy(&d, &v, 8);
			memcpy(spec + sl, &c, 1);
			spec[sl + 1] = 0;
			w = snprintf(tmp, sizeof tmp, spec, d);
			break;
		}
		case 's': {
			char str[PTX_PRINTF_STR + 1];
			size_t m = 0;
			if (!v) {
				memcpy(str, "(null)", 7);
			} else {
				for (; m < PTX_PRINTF_STR; m++) {
					if (!rd(ctx, v + m, &str[m], 1))
						return -1;
					if (!str[m])
						break;
				}
				str[m] = 0;
			}
			memcpy(spec + sl, "s", 2);
			/* A long string goes out whole, a width pads it within tmp. */
			if (sl == 1) {
				put(o, str, strlen(str));
				w = 0;
			} else
				w = snprintf(tmp, sizeof tmp, spec, str);
			break;
		}
		case 'p':
			memcpy(spec + sl, "llx", 4);
			put(o, "0x", 2);
			w = snprintf(tmp, sizeof tmp, spec, (unsigned long long)v);
			break;
		case 'c':
			memcpy(spec + sl, "c", 2);
			w = snprintf(tmp, sizeof tmp, spec, (int)(unsigned char)v);
			break;
		default: {
			bool sgn = c == 'd' || c == 'i';
			memcpy(spec + sl, "ll", 2);
			spec[sl + 2] = c;
			spec[sl + 3] = 0;
			if (sgn)
				w = snprintf(tmp, sizeof tmp, spec,
					     longlong ? (long long)v : (long long)(int32_t)(uint32_t)v);
			else
				w = snprintf(tmp, sizeof tmp, spec,
					     longlong ? (unsigned long long)v
						      : (unsigned long long)(uint32_t)v);
			break;
		}
		}
		if (w > 0)
			put(o, tmp, (size_t)w < sizeof tmp ? (size_t)w : sizeof tmp - 1);
		i = j + 1;
	}
	return nargs;
}

uint32_t ptx_bmsk(uint32_t a, uint32_t b, bool clamp)
{
	uint32_t a1 = a & 0x1f, b1 = b & 0x1f, sum = a1 + b1;
	uint32_t mask0 = ~0u << a1;
	bool over = sum >= 32;
	if (clamp) {
		if (a >= 32)
			mask0 = 0, over = true;
		if (b >= 32)
			over = true;
	}
	uint32_t mask1 = over ? 0 : b1 == 0 ? ~0u : ~0u << sum;
	return mask0 & ~mask1;
}

struct ptx_heap {
	pthread_mutex_t mu;
	uint8_t *bytes;
	uint64_t size;
	struct hblock {
		uint64_t off, size;
	} * v; /* by offset */
	size_t n, cap;
};

struct ptx_heap *ptx_heap_new(size_t size)
{
	struct ptx_heap *h = calloc(1, sizeof *h);
	if (!h)
		return NULL;
	h->size = size;
	h->bytes = calloc(1, size ? size : 1);
	if (!h->bytes) {
		free(h);
		return NULL;
	}
	pthread_mutex_init(&h->mu, NULL);
	return h;
}

void ptx_heap_free(struct ptx_heap *h)
{
	if (!h)
		return;
	pthread_mutex_destroy(&h->mu);
	free(h->bytes);
	free(h->v);
	free(h);
}

uint64_t ptx_heap_malloc(struct ptx_heap *h, uint64_t size)
{
	if (!h || !size || size > h->size)
		return 0;
	size = (size + 15) & ~(uint64_t)15;
	uint64_t at = UINT64_MAX;
	pthread_mutex_lock(&h->mu);
	uint64_t prev = 0;
	size_t i = 0;
	for (; i <= h->n; i++) {
		uint64_t next = i < h->n ? h->v[i].off : h->size;
		if (next - prev >= size) {
			at = prev;
			break;
		}
		if (i < h->n)
			prev = h->v[i].off + h->v[i].size;
	}
	if (at != UINT64_MAX && h->n == h->cap) {
		size_t nc = h->cap ? h->cap * 2 : 64;
		struct hblock *nv = realloc(h->v, nc * sizeof *nv);
		if (nv) {
			h->v = nv;
			h->cap = nc;
		} else
			at = UINT64_MAX;
	}
	if (at != UINT64_MAX) {
		memmove(&h->v[i + 1], &h->v[i], (h->n - i) * sizeof *h->v);
		h->v[i] = (struct hblock){at, size};
		h->n++;
	}
	pthread_mutex_unlock(&h->mu);
	return at == UINT64_MAX ? 0 : PTX_WIN_HEAP + at;
}

void ptx_heap_release(struct ptx_heap *h, uint64_t addr)
{
	if (!h || addr < PTX_WIN_HEAP || addr - PTX_WIN_HEAP >= h->size)
		return;
	uint64_t off = addr - PTX_WIN_HEAP;
	pthread_mutex_lock(&h->mu);
	size_t lo = 0, hi = h->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (h->v[mid].off < off)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < h->n && h->v[lo].off == off) {
		memmove(&h->v[lo], &h->v[lo + 1], (h->n - lo - 1) * sizeof *h->v);
		h->n--;
	}
	pthread_mutex_unlock(&h->mu);
}

uint8_t *ptx_heap_ptr(struct ptx_heap *h, uint64_t addr, uint32_t n)
{
	if (!h || addr < PTX_WIN_HEAP || addr - PTX_WIN_HEAP > h->size || n > h->size - (addr - PTX_WIN_HEAP))
		return NULL;
	return h->bytes + (addr - PTX_WIN_HEAP);
}
