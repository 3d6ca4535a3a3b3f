/* SPDX-License-Identifier: Apache-2.0 */
/* cuimage.c - device-code images to whole fatbin containers (see cuimage.h).
 * A bare cubin or PTX text is wrapped in a one-entry container laid out as
 * nvcc writes them (the layout common/fatbin.c documents). */
#include "cuimage.h"
#include "le.h"

#include "fatbin.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ELF_EHDR 64u
#define ELF_SHDR 64u
#define SHT_NOBITS 8u

size_t xgpu_cuimage_elf_size(const uint8_t *d, size_t max)
{
	if (!d || max < ELF_EHDR || memcmp(d, "\177ELF", 4) || d[4] != 2 || d[5] != 1)
		return 0;
	uint64_t shoff = xgpu_ld64(d + 0x28), phoff = xgpu_ld64(d + 0x20);
	uint64_t shnum = xgpu_ld16(d + 0x3c), phnum = xgpu_ld16(d + 0x38);
	uint64_t shent = xgpu_ld16(d + 0x3a), phent = xgpu_ld16(d + 0x36);
	if (shent != ELF_SHDR || shoff > max || shnum * ELF_SHDR > max - shoff || phoff > max ||
	    phnum * phent > max - phoff)
		return 0;
	uint64_t end = ELF_EHDR;
	if (shoff + shnum * ELF_SHDR > end)
		end = shoff + shnum * ELF_SHDR;
	if (phoff + phnum * phent > end)
		end = phoff + phnum * phent;
	for (uint64_t i = 0; i < shnum; i++) {
		const uint8_t *h = d + shoff + i * ELF_SHDR;
		uint64_t off = xgpu_ld64(h + 24), size = xgpu_ld64(h + 32);
		if (xgpu_ld32(h + 4) == SHT_NOBITS)
			continue;
		if (off > max || size > max - off)
			return 0;
		if (off + size > end)
			end = off + size;
	}
	return (size_t)end;
}

uint8_t *xgpu_cuimage_wrap(uint16_t kind, const void *payload, size_t len, uint32_t arch, uint16_t major,
			   uint16_t minor, size_t *outlen)
{
	size_t padded = (len + 7) & ~(size_t)7;
	size_t total = 16 + 64 + padded;
	uint8_t *b = calloc(1, total);
	if (!b)
		return NULL;
	xgpu_st32(b, XGPU_FATBIN_MAGIC);
	xgpu_st16(b + 4, 1);
	xgpu_st16(b + 6, 16);
	xgpu_st64(b + 8, 64 + padded);
	uint8_t *e = b + 16;
	xgpu_st16(e, kind);
	xgpu_st16(e + 2, 0x0101);
	xgpu_st32(e + 4, 64);
	xgpu_st64(e + 8, padded);
	xgpu_st16(e + 24, minor);
	xgpu_st16(e + 26, major);
	xgpu_st32(e + 28, arch);
	xgpu_st64(e + 40, 0x11); /* 64-bit, Linux */
	memcpy(e + 64, payload, len);
	*outlen = total;
	return b;
}

/* PTX: text starting (after comments and blanks) with a directive, naming
 * its ISA .version and .target sm_NN. */
static bool read_ptx(const char *s, size_t max, size_t *len, unsigned *arch, unsigned *major, unsigned *minor)
{
	size_t n = strnlen(s, max);
	if (n == max || !strstr(s, ".version") || !strstr(s, ".target"))
		return false;
	const char *v = strstr(s, ".version");
	const char *t = strstr(s, ".target");
	if (sscanf(v, ".version %u.%u", major, minor) != 2 || sscanf(t, ".target sm_%u", arch) != 1)
		return false;
	*len = n;
	return true;
}

int xgpu_cuimage_read(const void *image, size_t max, struct xgpu_cuimage *out, char *err, size_t errlen)
{
	memset(out, 0, sizeof *out);
	if (!image) {
		snprintf(err, errlen, "no image");
		return -1;
	}
	/* Every form starts with at least a 4-byte magic (PTX with more); a
	 * shorter image must not be read past. */
	if (max < 4) {
		snprintf(err, errlen, "image of fewer than 4 bytes");
		return -1;
	}
	const uint8_t *p = image;
	uint32_t magic = xgpu_ld32(p);
	if (magic == XGPU_FATBIN_WRAPPER_MAGIC) {
		/* __fatBinC_Wrapper_t: int magic, int version, const void *data, ... */
		memcpy(&p, p + 8, sizeof p);
		if (!p) {
			snprintf(err, errlen, "fatbin wrapper without data");
			return -1;
		}
		magic = xgpu_ld32(p);
	}
	if (magic == XGPU_FATBIN_MAGIC) {
		out->fatbin = p;
		out->len = xgpu_fatbin_size(p, max);
		if (!out->len) {
			snprintf(err, errlen, "fatbin larger than %zu bytes or damaged", max);
			return -1;
		}
		return 0;
	}
	if (!memcmp(p, "\177ELF", 4)) {
		size_t n = xgpu_cuimage_elf_size(p, max);
		if (!n) {
			snprintf(err, errlen, "cubin larger than %zu bytes or damaged", max);
			return -1;
		}
		/* EF_CUDA_SM: the SM version in bits 8-15 of e_flags. */
		uint32_t arch = (xgpu_ld32(p + 0x30) >> 8) & 0xff;
		out->owned = xgpu_cuimage_wrap(XGPU_CUIMAGE_ENTRY_ELF, p, n, arch, 1, 8, &out->len);
	} else {
		size_t n;
		unsigned arch, major, minor;
		if (!read_ptx((const char *)p, max, &n, &arch, &major, &minor)) {
			snprintf(err, errlen, "neither a fatbin, a cubin nor PTX text");
			return -1;
		}
		out->owned = xgpu_cuimage_wrap(XGPU_CUIMAGE_ENTRY_PTX, p, n + 1, arch, (uint16_t)major,
					       (uint16_t)minor, &out->len);
	}
	if (!out->owned) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	out->fatbin = out->owned;
	return 0;
}
