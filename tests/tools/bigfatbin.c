/* SPDX-License-Identifier: Apache-2.0 */
/* bigfatbin.c - a fatbin whose compressed entries inflate to a lot, as
 * NCCL's do: the entries of a real fatbin (its kernels still load and run),
 * then N zstd entries of 64 MiB each of an empty sm_50 ELF (16 KiB on disk
 * each), which every parser inflates and none loads.
 *
 *   bigfatbin IN.fatbin N OUT.fatbin */
#include "fatbin.h"
#include "le.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#define EACH (64u << 20)

static void *read_all(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	void *p = n > 0 ? malloc((size_t)n) : NULL;
	if (p && fread(p, 1, (size_t)n, f) != (size_t)n) {
		free(p);
		p = NULL;
	}
	fclose(f);
	*len = (size_t)n;
	return p;
}

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static void put32(uint8_t *p, uint32_t v)
{
	put16(p, (uint16_t)v);
	put16(p + 2, (uint16_t)(v >> 16));
}

static void put64(uint8_t *p, uint64_t v)
{
	put32(p, (uint32_t)v);
	put32(p + 4, (uint32_t)(v >> 32));
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: %s IN.fatbin N OUT.fatbin\n", argv[0]);
		return 2;
	}
	size_t len;
	uint8_t *in = read_all(argv[1], &len);
	unsigned n = (unsigned)strtoul(argv[2], NULL, 0);
	if (!in || len < 16 || xgpu_ld32(in) != XGPU_FATBIN_MAGIC || xgpu_ld16(in + 6) != 16 ||
	    xgpu_ld64(in + 8) != len - 16 || n > 64) {
		fprintf(stderr, "bigfatbin: %s is not one bare fatbin container\n", argv[1]);
		return 2;
	}
	uint8_t *raw = calloc(1, EACH);
	size_t cap = ZSTD_compressBound(EACH);
	uint8_t *z = malloc(cap);
	if (!raw || !z)
		return 2;
	memcpy(raw, "\177ELF\2\1\1", 7);
	put16(raw + 18, 190);
	size_t zlen = ZSTD_compress(z, cap, raw, EACH, 1);
	if (ZSTD_isError(zlen))
		return 2;
	size_t padded = (zlen + 7) & ~(size_t)7, total = len + (size_t)n * (64 + padded);
	uint8_t *out = calloc(1, total);
	if (!out)
		return 2;
	memcpy(out, in, len);
	for (unsigned i = 0; i < n; i++) {
		uint8_t *e = out + len + (size_t)i * (64 + padded);
		put16(e, 2); /* an ELF entry */
		put16(e + 2, 0x101);
		put32(e + 4, 64);              /* header size */
		put64(e + 8, padded);          /* payload size */
		put32(e + 16, (uint32_t)zlen); /* compressed size */
		put32(e + 28, 50);             /* sm_50: no simulated GPU loads it */
		put64(e + 40, 0x8000 | 0x11);  /* zstd */
		put64(e + 56, EACH);           /* inflated size */
		memcpy(e + 64, z, zlen);
	}
	put64(out + 8, total - 16);
	FILE *f = fopen(argv[3], "wb");
	if (!f || fwrite(out, 1, total, f) != total || fclose(f)) {
		perror(argv[3]);
		return 2;
	}
	free(out);
	free(z);
	free(raw);
	free(in);
	printf("bigfatbin: %zu bytes, inflating to %u MiB more\n", total, n * (EACH >> 20));
	return 0;
}
