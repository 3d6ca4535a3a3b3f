/* SPDX-License-Identifier: Apache-2.0 */
/* fatbin.c - the fatbin parser (see fatbin.h): walks the container, inflates
 * compressed entries (zstd or LZ4), reads kernel parameter layouts from the
 * cubins' .nv.info sections and, for kernels no cubin describes, from PTX,
 * and bounds the device memory the module's variables need.
 *
 * Layout facts below were established with nvcc 13.0 by dumping fatbins built
 * with every -Xfatbin -compress-mode and with several architectures; the
 * numbers are not documented by NVIDIA.
 *
 * Container header (16 bytes): u32 magic, u16 version (1), u16 header size,
 * u64 size of the entries that follow.
 *
 * Entry header (64 bytes or more; all offsets from the entry's start):
 *   0 u16 kind (1 PTX, 2 ELF cubin)     2 u16 version (0x0101)
 *   4 u32 header size                   8 u64 payload size (padded to 8)
 *  16 u32 compressed size (0 if not)   20 u32 offset of the options descriptor
 *  24 u16 minor, 26 u16 major          28 u32 arch (sm_XY as XY)
 *  32 u32 name offset, 36 u32 length   40 u64 flags
 *  48 u64 reserved                     56 u64 uncompressed size (0 if not)
 * Flags: 0x1 64-bit, 0x2 debug, 0x10 Linux host, 0x2000 LZ4 block,
 * 0x8000 zstd frame, 0x100000 arch-specific ("sm_90a"), 0x1000000 seen on
 * sm_100+ cubins. compress-mode=speed gives LZ4, default/size/balance zstd,
 * none nothing; only the first compressed size bytes of a payload are data.
 */
#include "fatbin.h"
#include "le.h"
#include "proto.h"

#include "util.h"

#include <lz4.h>
#include <zstd.h>

#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FATBIN_HDR_SIZE 16u
#define ENTRY_HDR_MIN 64u
#define KIND_PTX 1u
#define KIND_ELF 2u
#define FLAG_LZ4 0x2000u
#define FLAG_ZSTD 0x8000u

/* Cubin ELF. */
#define EM_CUDA 190u
#define SHT_SYMTAB 2u
#define SHT_NOBITS 8u
#define SHT_SYMTAB_SHNDX 18u
#define SHT_CUDA_MERC_SYMTAB 0x70000085u /* .nv.merc.symtab of sm_100+ cubins */
#define SHF_ALLOC 0x2u
#define SHN_COMMON 0xfff2u
#define STT_FUNC 2u
#define STO_CUDA_ENTRY 0x10u /* st_other bit of kernel entry symbols */
#define SHN_XINDEX 0xffffu

/* .nv.info records: u8 format, u8 attribute, then a u16 value (NVAL, BVAL,
 * HVAL: 4 bytes in all) or a u16 length and that many bytes (SVAL). */
#define EIFMT_NVAL 1u
#define EIFMT_BVAL 2u
#define EIFMT_HVAL 3u
#define EIFMT_SVAL 4u
#define EIATTR_PARAM_CBANK 0x0au      /* SVAL: u32 sym, u16 cbank offset, u16 size */
#define EIATTR_KPARAM_INFO 0x17u      /* SVAL, see nvinfo_kparam() */
#define EIATTR_CBANK_PARAM_SIZE 0x19u /* HVAL: parameter buffer size */
#define EIATTR_KPARAM_INFO_V2 0x45u   /* SVAL, kernels with > 16 KiB of parameters */

/* Bounds of our own, beyond fatbin.h's: CUDA caps a parameter buffer at
 * 32764 bytes; names may be long (templates) but not unboundedly so in sum. */
#define PARAM_BUF_MAX (1u << 20)
#define NAME_BYTES_MAX ((size_t)64 << 20)
/* Symbol tables (and their extended index tables) per cubin: nvcc writes
 * one, sm_100+ cubins a second (.nv.merc.symtab). Each may span the whole
 * image, so they are capped to keep reading them cheap. */
#define SYMTABS_MAX 4u

_Static_assert(XGPU_FATBIN_DEFAULT_MAX_INFLATED == 2ull * XGPU_MAX_MODULE_BYTES,
	       "fatbin.h documents the inflation budget as twice the module cap");

static _Atomic uint64_t max_inflated; /* 0: not set */

void xgpu_fatbin_set_max_inflated(uint64_t bytes)
{
	atomic_store(&max_inflated, bytes);
}

uint64_t xgpu_fatbin_max_inflated(void)
{
	uint64_t v = atomic_load(&max_inflated);
	if (v)
		return v;
	const char *e = getenv(XGPU_FATBIN_INFLATE_ENV);
	uint64_t parsed;
	if (e && xgpu_parse_size(e, &parsed) == 0 && parsed)
		return parsed;
	return XGPU_FATBIN_DEFAULT_MAX_INFLATED;
}

/* printf arguments for a name that need not be NUL-terminated. */
#define NAME_ARG(s, len) (int)((len) < 200 ? (len) : 200), (s)

/* Sizes from the input are hostile: sums and products saturate, so that a
 * bound computed from them stays a bound. */
static uint64_t sat_add(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static uint64_t sat_mul(uint64_t a, uint64_t b)
{
	return b && a > UINT64_MAX / b ? UINT64_MAX : a * b;
}

/* ---- result table --------------------------------------------------------- */

struct ctx {
	struct xgpu_kernel_info *k;
	uint32_t n, cap;
	uint32_t *hash; /* index + 1 into k, 0 = empty; open addressing */
	uint32_t hcap;  /* power of two */
	size_t name_bytes;
	uint64_t inflated;     /* bytes inflated so far, see xgpu_fatbin_max_inflated */
	uint64_t global_bytes; /* see struct xgpu_fatbin_info */
	struct xgpu_errbuf err;
};

static uint32_t name_hash(const char *s, size_t len)
{
	uint32_t h = 2166136261u;
	for (size_t i = 0; i < len; i++)
		h = (h ^ (uint8_t)s[i]) * 16777619u;
	return h;
}

static bool name_eq(const char *a, const char *b, size_t blen)
{
	return strncmp(a, b, blen) == 0 && a[blen] == '\0';
}

static bool ctx_has(const struct ctx *c, const char *name, size_t len)
{
	if (!c->hcap)
		return false;
	for (uint32_t i = name_hash(name, len) & (c->hcap - 1);; i = (i + 1) & (c->hcap - 1)) {
		uint32_t v = c->hash[i];
		if (!v)
			return false;
		if (name_eq(c->k[v - 1].name, name, len))
			return true;
	}
}

static int ctx_grow(struct ctx *c)
{
	if (c->n == c->cap) {
		uint32_t ncap = c->cap ? c->cap * 2 : 64;
		struct xgpu_kernel_info *nk = realloc(c->k, (size_t)ncap * sizeof(*nk));
		if (!nk)
			return xgpu_fail(&c->err, "out of memory");
		c->k = nk;
		c->cap = ncap;
	}
	if ((c->n + 1) * 2 > c->hcap) {
		uint32_t nh = c->hcap ? c->hcap * 2 : 128;
		uint32_t *h = calloc(nh, sizeof(*h));
		if (!h)
			return xgpu_fail(&c->err, "out of memory");
		for (uint32_t j = 0; j < c->n; j++) {
			uint32_t i = name_hash(c->k[j].name, strlen(c->k[j].name)) & (nh - 1);
			while (h[i])
				i = (i + 1) & (nh - 1);
			h[i] = j + 1;
		}
		free(c->hash);
		c->hash = h;
		c->hcap = nh;
	}
	return 0;
}

/* Takes ownership of params. The first description of a name wins, so a
 * later one is dropped. */
static int ctx_add(struct ctx *c, const char *name, size_t len, struct xgpu_kparam *params, uint32_t nparams,
		   uint32_t param_bytes)
{
	if (ctx_has(c, name, len)) {
		free(params);
		return 0;
	}
	int rc = 0;
	if (len > XGPU_FATBIN_MAX_NAME)
		rc = xgpu_fail(&c->err, "kernel name %.*s... longer than %u bytes", NAME_ARG(name, len),
			       XGPU_FATBIN_MAX_NAME);
	else if (c->n >= XGPU_FATBIN_MAX_KERNELS)
		rc = xgpu_fail(&c->err, "more than %u kernels", XGPU_FATBIN_MAX_KERNELS);
	else if (len > NAME_BYTES_MAX - c->name_bytes)
		rc = xgpu_fail(&c->err, "kernel names too long in sum");
	else
		rc = ctx_grow(c);
	if (rc < 0) {
		free(params);
		return -1;
	}
	char *s = malloc(len + 1);
	if (!s) {
		free(params);
		return xgpu_fail(&c->err, "out of memory");
	}
	memcpy(s, name, len);
	s[len] = '\0';
	c->name_bytes += len;
	struct xgpu_kernel_info *k = &c->k[c->n];
	k->name = s;
	k->nparams = nparams;
	k->params = nparams ? params : NULL;
	if (!nparams)
		free(params);
	k->param_bytes = param_bytes;
	uint32_t i = name_hash(name, len) & (c->hcap - 1);
	while (c->hash[i])
		i = (i + 1) & (c->hcap - 1);
	c->hash[i] = ++c->n;
	return 0;
}

/* ---- ELF cubins ------------------------------------------------------------ */

struct elf {
	const uint8_t *d;
	size_t len;
	uint64_t shoff;
	uint32_t shnum;
	uint32_t shentsize;
};

struct shdr {
	uint32_t name, type;
	uint64_t flags, offset, size;
	uint32_t link;
	uint64_t entsize;
};

static void elf_shdr(const struct elf *e, uint32_t i, struct shdr *s)
{
	const uint8_t *p = e->d + e->shoff + (uint64_t)i * e->shentsize;
	s->name = xgpu_ld32(p);
	s->type = xgpu_ld32(p + 4);
	s->flags = xgpu_ld64(p + 8);
	s->offset = xgpu_ld64(p + 24);
	s->size = xgpu_ld64(p + 32);
	s->link = xgpu_ld32(p + 40);
	s->entsize = xgpu_ld64(p + 56);
}

/* The section's bytes, or NULL if they are not all inside the image. */
static const uint8_t *sec_data(const struct elf *e, const struct shdr *s, size_t *len)
{
	if (s->type == SHT_NOBITS || s->offset > e->len || s->size > e->len - s->offset)
		return NULL;
	*len = (size_t)s->size;
	return e->d + s->offset;
}

/* Whether the name at off in a string table starts with the n bytes of pfx
 * (n may count pfx's NUL, to match a whole name). Reads n bytes at most, so
 * that looking at a section costs the same however long its name is. */
static bool name_starts(const uint8_t *tab, size_t tablen, uint64_t off, const char *pfx, size_t n)
{
	return tab && off < tablen && tablen - off >= n && memcmp(tab + off, pfx, n) == 0;
}

/* The NUL-terminated name at off in a string table, looking at no more than
 * XGPU_FATBIN_MAX_NAME + 1 bytes. Returns 1 with it, 0 if there is none (off
 * outside the table, no NUL before its end), -1 if it is too long. */
static int name_at(const uint8_t *tab, size_t tablen, uint64_t off, const char **s, size_t *len)
{
	if (!tab || off >= tablen)
		return 0;
	size_t avail = tablen - (size_t)off;
	size_t scan = avail <= XGPU_FATBIN_MAX_NAME ? avail : (size_t)XGPU_FATBIN_MAX_NAME + 1;
	const uint8_t *nul = memchr(tab + off, 0, scan);
	if (!nul)
		return avail > XGPU_FATBIN_MAX_NAME ? -1 : 0;
	*s = (const char *)tab + off;
	*len = (size_t)(nul - (tab + off));
	return 1;
}

/* ---- device variables ---- */

/* What a section is to the device memory a cubin's variables take. Cubins
 * for sm_100+ also carry "mercury" copies of the initialised data and the
 * constant banks (.nv.merc.nv.global.init, .nv.merc.nv.constant.user,
 * .nv.merc.nv.constant.pic), at the very file offsets of .nv.global.init,
 * .nv.constant3 and .nv.constant4, for the driver to finalise the code
 * again; both sets place uninitialised variables in .nv.global. So a cubin
 * needs BOTH + max(SASS, MERC) bytes, not the sum, which would charge its
 * initialised data twice. */
enum { VS_NONE, VS_BOTH, VS_SASS, VS_MERC };

static int var_class(const uint8_t *shstr, size_t shstr_len, const struct shdr *s)
{
#define STARTS(pfx) name_starts(shstr, shstr_len, s->name, pfx, sizeof(pfx) - 1)
	if (name_starts(shstr, shstr_len, s->name, ".nv.global", sizeof(".nv.global")))
		return VS_BOTH; /* uninitialised: NOBITS, costs the image nothing */
	/* .nv.global.init; the module's constant banks: .nv.constant3
	 * (__constant__ variables), .nv.constant4 (the addresses of variables),
	 * .nv.constant2.<kernel> (the compiler's constants before sm_80). Not
	 * .nv.constant0.<kernel>, a kernel's parameter bank, which the driver
	 * fills at each launch. */
	if (STARTS(".nv.global.") || (STARTS(".nv.constant") && !STARTS(".nv.constant0.")))
		return VS_SASS;
	if (STARTS(".nv.merc.nv.global") ||
	    (STARTS(".nv.merc.nv.constant") && !STARTS(".nv.merc.nv.constant0.")))
		return VS_MERC;
	/* Memory the image does not carry, under a name nvcc does not use:
	 * assume the driver backs it, unless it is on-chip shared memory. */
	if (s->type == SHT_NOBITS && (s->flags & SHF_ALLOC) && !STARTS(".nv.shared."))
		return VS_BOTH;
	return VS_NONE;
#undef STARTS
}

struct vsec {
	uint32_t cls;
	uint64_t size;
};

/* The device memory one cubin's variables need (see struct
 * xgpu_fatbin_info). A section counts as large as the furthest end of the
 * symbols placed in it where that is beyond its size: ptxas keeps section
 * sizes to 32 bits (nvcc 13 gives `__device__ char a[1ull << 32]` a
 * .nv.global of a few bytes) but symbol sizes to 64, and the driver may go
 * by either. Common symbols count too, in case the driver allocates them. */
static int elf_globals(struct ctx *c, const struct elf *e, const uint8_t *shstr, size_t shstr_len,
		       uint64_t *out)
{
	struct shdr sh;
	uint32_t nv = 0, nsymtab = 0, nxtab = 0, symtab[SYMTABS_MAX], xtab[SYMTABS_MAX];
	for (uint32_t i = 0; i < e->shnum; i++) {
		elf_shdr(e, i, &sh);
		if (var_class(shstr, shstr_len, &sh) != VS_NONE)
			nv++;
		/* A cap, so that pairing the tables below stays cheap. */
		if ((sh.type == SHT_SYMTAB || sh.type == SHT_CUDA_MERC_SYMTAB) && nsymtab++ == SYMTABS_MAX)
			return xgpu_fail(&c->err, "ELF has more than %u symbol tables", SYMTABS_MAX);
		if (sh.type == SHT_SYMTAB_SHNDX && nxtab++ == SYMTABS_MAX)
			return xgpu_fail(&c->err, "ELF has more than %u extended index tables", SYMTABS_MAX);
	}
	/* The variable sections, and for each section its index + 1 in them
	 * (0: none), so that placing a symbol costs the same however many
	 * sections a hostile cubin has. */
	struct vsec *vs = calloc(nv ? nv : 1, sizeof(*vs));
	uint32_t *slot = calloc(e->shnum, sizeof(*slot));
	if (!vs || !slot) {
		free(vs);
		free(slot);
		return xgpu_fail(&c->err, "out of memory");
	}
	nv = nsymtab = nxtab = 0;
	for (uint32_t i = 0; i < e->shnum; i++) {
		elf_shdr(e, i, &sh);
		int cls = var_class(shstr, shstr_len, &sh);
		if (cls != VS_NONE) {
			vs[nv++] = (struct vsec){(uint32_t)cls, sh.size};
			slot[i] = nv;
		}
		if (sh.type == SHT_SYMTAB || sh.type == SHT_CUDA_MERC_SYMTAB)
			symtab[nsymtab++] = i;
		if (sh.type == SHT_SYMTAB_SHNDX)
			xtab[nxtab++] = i;
	}
	uint64_t common = 0;
	for (uint32_t t = 0; t < nsymtab; t++) {
		size_t len, xlen = 0;
		elf_shdr(e, symtab[t], &sh);
		const uint8_t *sym = sec_data(e, &sh, &len), *xi = NULL;
		uint64_t entsize = sh.entsize;
		if (!sym || entsize < 24) {
			free(vs);
			free(slot);
			return xgpu_fail(&c->err, "ELF symbol table malformed");
		}
		/* Section indexes past 0xff00 live in a table of their own. */
		for (uint32_t x = 0; x < nxtab && !xi; x++) {
			elf_shdr(e, xtab[x], &sh);
			if (sh.link == symtab[t])
				xi = sec_data(e, &sh, &xlen);
		}
		for (uint64_t j = 0; j < len / entsize; j++) {
			const uint8_t *s = sym + j * entsize;
			uint32_t shndx = xgpu_ld16(s + 6);
			uint64_t size = xgpu_ld64(s + 16);
			if (shndx == SHN_COMMON) {
				common = sat_add(common, size);
				continue;
			}
			if (shndx == SHN_XINDEX) {
				if (!xi || j >= xlen / 4)
					continue;
				shndx = xgpu_ld32(xi + 4 * j);
			} else if (shndx >= 0xff00u) {
				continue; /* absolute and other reserved indexes */
			}
			if (shndx >= e->shnum || !slot[shndx])
				continue;
			struct vsec *v = &vs[slot[shndx] - 1];
			uint64_t end = sat_add(xgpu_ld64(s + 8), size);
			if (end > v->size)
				v->size = end;
		}
	}
	uint64_t both = common, sass = 0, merc = 0;
	for (uint32_t i = 0; i < nv; i++) {
		uint64_t *acc = vs[i].cls == VS_BOTH ? &both : vs[i].cls == VS_SASS ? &sass : &merc;
		*acc = sat_add(*acc, vs[i].size);
	}
	free(vs);
	free(slot);
	*out = sat_add(both, sass > merc ? sass : merc);
	return 0;
}

/* ---- kernels ---- */

struct ekernel {
	const char *name;
	size_t len;
	const uint8_t *info; /* its .nv.info.<name> section, if any */
	size_t info_len;
};

static int ekernel_cmp(const void *a, const void *b)
{
	const struct ekernel *x = a, *y = b;
	if (x->name == y->name) /* the same string, as repeated symbols are */
		return x->len < y->len ? -1 : x->len > y->len;
	size_t n = x->len < y->len ? x->len : y->len;
	int r = memcmp(x->name, y->name, n);
	if (r)
		return r;
	return x->len < y->len ? -1 : x->len > y->len;
}

/* EIATTR_KPARAM_INFO payload (12 bytes): u32 index (0), u16 ordinal,
 * u16 offset, u32 packed: bits 0-7 and 8-11 flags (bits 8-11 are 5 for
 * pointers on sm_100+), bits 12-16 cbank (0x1f), bits 18-31 size in bytes.
 * EIATTR_KPARAM_INFO_V2 (nvcc's choice once the parameters pass 16 KiB, where
 * 14 bits no longer hold a size) has the same first 8 bytes, then u16 size
 * in bytes and u16 flags (0x0500 for pointers on sm_100+). */
static void nvinfo_kparam(uint8_t attr, const uint8_t *pl, uint32_t *ord, uint32_t *off, uint32_t *size)
{
	*ord = xgpu_ld16(pl + 4);
	*off = xgpu_ld16(pl + 6);
	*size = attr == EIATTR_KPARAM_INFO ? xgpu_ld32(pl + 8) >> 18 : xgpu_ld16(pl + 8);
}

struct nvinfo_walk {
	const uint8_t *p, *end;
	uint8_t fmt, attr;
	uint16_t val;      /* NVAL/BVAL/HVAL value, SVAL length */
	const uint8_t *pl; /* SVAL payload */
};

/* 1 with the next record in w, 0 at the end, -1 if malformed. */
static int nvinfo_next(struct nvinfo_walk *w)
{
	if (w->p == w->end)
		return 0;
	if (w->end - w->p < 4)
		return -1;
	w->fmt = w->p[0];
	w->attr = w->p[1];
	w->val = xgpu_ld16(w->p + 2);
	w->pl = w->p + 4;
	switch (w->fmt) {
	case EIFMT_NVAL:
	case EIFMT_BVAL:
	case EIFMT_HVAL:
		w->p += 4;
		return 1;
	case EIFMT_SVAL:
		if (w->end - w->pl < w->val)
			return -1;
		w->p = w->pl + w->val;
		return 1;
	default:
		return -1;
	}
}

/* Parameter layout of one kernel from its .nv.info section. Returns 1 with
 * the layout, 0 if the section does not describe the parameters (no
 * KPARAM_INFO although a parameter buffer is declared), -1 if malformed. */
static int nvinfo_params(struct ctx *c, const struct ekernel *ek, struct xgpu_kparam **pp, uint32_t *np,
			 uint32_t *pbytes)
{
	struct nvinfo_walk w = {ek->info, ek->info + ek->info_len, 0, 0, 0, NULL};
	uint32_t count = 0;
	int64_t cbank_size = -1, cbank_param = -1;
	int r;
	while ((r = nvinfo_next(&w)) > 0) {
		if (w.attr == EIATTR_KPARAM_INFO || w.attr == EIATTR_KPARAM_INFO_V2) {
			if (w.fmt != EIFMT_SVAL || w.val < 12)
				return xgpu_fail(&c->err, "%.*s: malformed KPARAM_INFO",
						 NAME_ARG(ek->name, ek->len));
			if (++count > XGPU_FATBIN_MAX_PARAMS)
				return xgpu_fail(&c->err, "%.*s: more than %u parameters",
						 NAME_ARG(ek->name, ek->len), XGPU_FATBIN_MAX_PARAMS);
		} else if (w.attr == EIATTR_CBANK_PARAM_SIZE && w.fmt == EIFMT_HVAL) {
			cbank_size = w.val;
		} else if (w.attr == EIATTR_PARAM_CBANK && w.fmt == EIFMT_SVAL && w.val >= 8) {
			cbank_param = xgpu_ld16(w.pl + 6);
		}
	}
	if (r < 0)
		return xgpu_fail(&c->err, "%.*s: malformed .nv.info section", NAME_ARG(ek->name, ek->len));
	if (!count && (cbank_size > 0 || cbank_param > 0))
		return 0;

	struct xgpu_kparam *p = NULL;
	uint8_t *seen = NULL;
	if (count) {
		p = calloc(count, sizeof(*p));
		seen = calloc(count, 1);
		if (!p || !seen) {
			free(p);
			free(seen);
			return xgpu_fail(&c->err, "out of memory");
		}
	}
	w.p = ek->info;
	while (nvinfo_next(&w) > 0) {
		if (w.attr != EIATTR_KPARAM_INFO && w.attr != EIATTR_KPARAM_INFO_V2)
			continue;
		uint32_t ord, off, size;
		nvinfo_kparam(w.attr, w.pl, &ord, &off, &size);
		if (ord >= count || seen[ord]) {
			xgpu_fail(&c->err, "%.*s: bad or repeated parameter ordinal %u",
				  NAME_ARG(ek->name, ek->len), ord);
			goto bad;
		}
		seen[ord] = 1;
		p[ord].offset = off;
		p[ord].size = size;
	}
	/* Every ordinal is present (count records, none repeated, all < count).
	 * The ABI lays parameters out in order, so anything else is corrupt. */
	uint32_t end = 0;
	for (uint32_t i = 0; i < count; i++) {
		if (p[i].offset < end) {
			xgpu_fail(&c->err, "%.*s: parameter %u overlaps its predecessor",
				  NAME_ARG(ek->name, ek->len), i);
			goto bad;
		}
		end = p[i].offset + p[i].size;
	}
	if ((cbank_size >= 0 && cbank_size != end) || (cbank_param >= 0 && cbank_param != end)) {
		xgpu_fail(&c->err, "%.*s: parameters end at %u but the cbank holds %lld",
			  NAME_ARG(ek->name, ek->len), end,
			  (long long)(cbank_size >= 0 ? cbank_size : cbank_param));
		goto bad;
	}
	free(seen);
	*pp = p;
	*np = count;
	*pbytes = end;
	return 1;
bad:
	free(p);
	free(seen);
	return -1;
}

static int parse_elf(struct ctx *c, const uint8_t *d, size_t len)
{
	if (len < 64 || memcmp(d, "\177ELF", 4) != 0)
		return xgpu_fail(&c->err, "ELF entry has no ELF header");
	if (d[4] != 2 || d[5] != 1 || xgpu_ld16(d + 18) != EM_CUDA)
		return xgpu_fail(&c->err, "ELF entry is not a 64-bit little-endian CUDA cubin");
	struct elf e = {d, len, xgpu_ld64(d + 0x28), xgpu_ld16(d + 0x3c), xgpu_ld16(d + 0x3a)};
	uint32_t shstrndx = xgpu_ld16(d + 0x3e);
	if (e.shoff == 0 && e.shnum == 0)
		return 0; /* no sections, no kernels */
	if (e.shentsize < 64 || e.shoff > len || (len - e.shoff) / e.shentsize < 1)
		return xgpu_fail(&c->err, "ELF section headers outside the image");
	if (e.shnum == 0 || shstrndx == SHN_XINDEX) {
		/* More than 0xff00 sections: the real numbers live in section 0. */
		const uint8_t *s0 = d + e.shoff;
		if (e.shnum == 0)
			e.shnum = xgpu_ld64(s0 + 32) > UINT32_MAX ? UINT32_MAX : (uint32_t)xgpu_ld64(s0 + 32);
		if (shstrndx == SHN_XINDEX)
			shstrndx = xgpu_ld32(s0 + 40);
	}
	if (e.shnum > (len - e.shoff) / e.shentsize)
		return xgpu_fail(&c->err, "ELF section headers outside the image");
	if (shstrndx >= e.shnum)
		return xgpu_fail(&c->err, "ELF section name table index out of range");

	struct shdr sh;
	size_t shstr_len = 0, sym_len = 0, str_len = 0;
	elf_shdr(&e, shstrndx, &sh);
	const uint8_t *shstr = sec_data(&e, &sh, &shstr_len);
	if (!shstr)
		return xgpu_fail(&c->err, "ELF section name table outside the image");

	uint64_t globals = 0;
	if (elf_globals(c, &e, shstr, shstr_len, &globals) < 0)
		return -1;
	if (globals > c->global_bytes)
		c->global_bytes = globals;

	const uint8_t *sym = NULL, *str = NULL;
	uint64_t symentsize = 0;
	for (uint32_t i = 0; i < e.shnum; i++) {
		elf_shdr(&e, i, &sh);
		if (sh.type != SHT_SYMTAB)
			continue;
		sym = sec_data(&e, &sh, &sym_len);
		symentsize = sh.entsize;
		if (!sym || symentsize < 24 || sh.link >= e.shnum)
			return xgpu_fail(&c->err, "ELF symbol table malformed");
		elf_shdr(&e, sh.link, &sh);
		str = sec_data(&e, &sh, &str_len);
		if (!str)
			return xgpu_fail(&c->err, "ELF string table outside the image");
		break;
	}
	if (!sym)
		return 0;

	/* Kernels are the function symbols marked as CUDA entries. */
	uint64_t nsym = sym_len / symentsize, nk = 0;
	for (uint64_t i = 0; i < nsym; i++) {
		const uint8_t *s = sym + i * symentsize;
		if ((s[4] & 0xf) == STT_FUNC && (s[5] & STO_CUDA_ENTRY) && xgpu_ld16(s + 6) != 0)
			nk++;
	}
	if (nk > XGPU_FATBIN_MAX_KERNELS)
		return xgpu_fail(&c->err, "more than %u kernels", XGPU_FATBIN_MAX_KERNELS);
	if (!nk)
		return 0;
	struct ekernel *ks = calloc(nk, sizeof(*ks));
	if (!ks)
		return xgpu_fail(&c->err, "out of memory");
	/* nvcc's string tables hold each name once and share no tails (so on
	 * sm_75 to sm_120 cubins, nvlink's output included), so the kernels'
	 * names fit in the table. Holding hostile symbols to that keeps reading,
	 * sorting and matching names near linear in the image, whatever they
	 * point at. */
	size_t left = str_len;
	nk = 0;
	for (uint64_t i = 0; i < nsym; i++) {
		const uint8_t *s = sym + i * symentsize;
		if ((s[4] & 0xf) != STT_FUNC || !(s[5] & STO_CUDA_ENTRY) || xgpu_ld16(s + 6) == 0)
			continue;
		struct ekernel *k = &ks[nk++];
		int r = name_at(str, str_len, xgpu_ld32(s), &k->name, &k->len);
		if (r <= 0 || !k->len || k->len >= left) {
			bool bad = r == 0 || !k->len;
			free(ks);
			if (r < 0)
				return xgpu_fail(&c->err, "ELF kernel symbol name longer than %u bytes",
						 XGPU_FATBIN_MAX_NAME);
			return xgpu_fail(&c->err,
					 bad ? "ELF kernel symbol has a bad name"
					     : "ELF kernel symbol names overlap in the string table");
		}
		left -= k->len + 1;
	}
	qsort(ks, nk, sizeof(*ks), ekernel_cmp);
	/* One entry per name, so that a name repeated (only a hostile cubin
	 * does) costs one search below, not one per copy. */
	uint64_t uniq = 0;
	for (uint64_t i = 0; i < nk; i++)
		if (!uniq || ekernel_cmp(&ks[uniq - 1], &ks[i]) != 0)
			ks[uniq++] = ks[i];
	nk = uniq;

	/* Match each kernel to its first .nv.info.<name> section by name,
	 * holding the section names to their table's size as the symbols'. */
	static const char pfx[] = ".nv.info.";
	const size_t plen = sizeof(pfx) - 1;
	left = shstr_len;
	for (uint32_t i = 0; i < e.shnum; i++) {
		elf_shdr(&e, i, &sh);
		if (!name_starts(shstr, shstr_len, sh.name, pfx, plen))
			continue;
		struct ekernel key = {NULL, 0, NULL, 0};
		int r = name_at(shstr, shstr_len, (uint64_t)sh.name + plen, &key.name, &key.len);
		/* A name running off its table is refused rather than skipped:
		 * skipping would let every section rescan it for free. */
		if (r <= 0 || plen + key.len >= left) {
			free(ks);
			if (r < 0)
				return xgpu_fail(&c->err, "ELF section name longer than %u bytes",
						 XGPU_FATBIN_MAX_NAME);
			return xgpu_fail(&c->err, r == 0 ? "ELF section name runs past its table"
							 : "ELF section names overlap in the name table");
		}
		left -= plen + key.len + 1;
		if (!key.len)
			continue;
		struct ekernel *k = bsearch(&key, ks, nk, sizeof(*ks), ekernel_cmp);
		if (!k || k->info)
			continue;
		size_t dlen;
		const uint8_t *data = sec_data(&e, &sh, &dlen);
		if (!data) {
			free(ks);
			return xgpu_fail(&c->err, "ELF section .nv.info.%.*s outside the image",
					 NAME_ARG(key.name, key.len));
		}
		k->info = data;
		k->info_len = dlen;
	}

	int rc = 0;
	for (uint64_t i = 0; i < nk && rc == 0; i++) {
		if (ctx_has(c, ks[i].name, ks[i].len))
			continue;
		struct xgpu_kparam *p = NULL;
		uint32_t np = 0, pb = 0;
		/* Without its .nv.info section a cubin says nothing about a
		 * kernel's parameters (even one without any has the section). */
		int r = ks[i].info ? nvinfo_params(c, &ks[i], &p, &np, &pb) : 0;
		if (r < 0)
			rc = -1;
		else if (r > 0)
			rc = ctx_add(c, ks[i].name, ks[i].len, p, np, pb);
	}
	free(ks);
	return rc;
}

/* ---- PTX ------------------------------------------------------------------- */

enum tok_kind { TK_EOF, TK_DIR, TK_ID, TK_NUM, TK_STR, TK_PUNCT };

struct tok {
	enum tok_kind kind;
	const char *s;
	size_t len;
};

struct lex {
	const char *p, *end;
};

static bool is_follow(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
	       ch == '_' || ch == '$';
}

static void lex_next(struct lex *l, struct tok *t)
{
	const char *p = l->p, *end = l->end;
	for (;;) {
		while (p < end &&
		       (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r' || *p == '\f' || *p == '\v'))
			p++;
		if (end - p >= 2 && p[0] == '/' && p[1] == '/') {
			while (p < end && *p != '\n')
				p++;
		} else if (end - p >= 2 && p[0] == '/' && p[1] == '*') {
			p += 2;
			while (end - p >= 2 && !(p[0] == '*' && p[1] == '/'))
				p++;
			p = end - p >= 2 ? p + 2 : end;
		} else {
			break;
		}
	}
	t->s = p;
	if (p == end) {
		t->kind = TK_EOF;
	} else if (*p == '"') {
		/* As ptxas reads strings: to the next quote, across lines, with no
		 * escapes (it takes "a\" as the whole string a\). Reading them any
		 * other way would let text hide declarations from us. */
		t->kind = TK_STR;
		const char *q = memchr(p + 1, '"', (size_t)(end - p - 1));
		p = q ? q + 1 : end;
	} else if (*p == '.') {
		t->kind = TK_DIR;
		for (p++; p < end && is_follow(*p); p++)
			;
	} else if (*p >= '0' && *p <= '9') {
		t->kind = TK_NUM;
		for (p++; p < end && (is_follow(*p) || *p == '.'); p++)
			;
	} else if (is_follow(*p) || *p == '%') {
		t->kind = TK_ID;
		for (p++; p < end && is_follow(*p); p++)
			;
	} else {
		t->kind = TK_PUNCT;
		p++;
	}
	t->len = (size_t)(p - t->s);
	l->p = p;
}

static bool tok_is(const struct tok *t, const char *s)
{
	size_t n = strlen(s);
	return t->len == n && memcmp(t->s, s, n) == 0;
}

/* A decimal or 0x hex integer no larger than max, or -1. */
static int64_t tok_num(const struct tok *t, uint64_t max)
{
	if (t->kind != TK_NUM)
		return -1;
	const char *p = t->s, *end = t->s + t->len;
	unsigned base = 10;
	if (end - p > 2 && p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
		base = 16;
		p += 2;
	}
	uint64_t v = 0;
	for (; p < end; p++) {
		unsigned dgt;
		if (*p >= '0' && *p <= '9')
			dgt = (unsigned)(*p - '0');
		else if (base == 16 && *p >= 'a' && *p <= 'f')
			dgt = (unsigned)(*p - 'a' + 10);
		else if (base == 16 && *p >= 'A' && *p <= 'F')
			dgt = (unsigned)(*p - 'A' + 10);
		else
			return -1;
		if (dgt >= base)
			return -1;
		v = v * base + dgt;
		if (v > max)
			return -1;
	}
	return (int64_t)v;
}

static uint32_t ptx_type_size(const struct tok *t)
{
	static const struct {
		const char *name;
		uint32_t size;
	} types[] = {
	    {".b8", 1},    {".u8", 1},     {".s8", 1},         {".b16", 2},     {".u16", 2}, {".s16", 2},
	    {".f16", 2},   {".bf16", 2},   {".b32", 4},        {".u32", 4},     {".s32", 4}, {".f32", 4},
	    {".f16x2", 4}, {".bf16x2", 4}, {".b64", 8},        {".u64", 8},     {".s64", 8}, {".f64", 8},
	    {".b128", 16}, {".texref", 8}, {".samplerref", 8}, {".surfref", 8},
	};
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if (tok_is(t, types[i].name))
			return types[i].size;
	return 0;
}

/* One parameter list, the '(' already taken. Returns 0 with the layout in
 * pp, np and pbytes, -1 with a reason in why if it cannot be read. */
static int ptx_params(struct lex *l, struct xgpu_kparam **pp, uint32_t *np, uint32_t *pbytes,
		      const char **why)
{
	struct xgpu_kparam *p = NULL;
	uint32_t n = 0, cap = 0, off = 0;
	struct tok t;
	lex_next(l, &t);
	if (t.kind == TK_PUNCT && tok_is(&t, ")"))
		goto done;
	for (;;) {
		if (!tok_is(&t, ".param")) {
			*why = "expected .param";
			goto bad;
		}
		uint32_t elem = 0, vec = 1, align = 0;
		bool ptr = false;
		for (lex_next(l, &t); t.kind == TK_DIR; lex_next(l, &t)) {
			uint32_t sz;
			if (tok_is(&t, ".align")) {
				lex_next(l, &t);
				int64_t a = tok_num(&t, 1u << 16);
				if (a <= 0 || (a & (a - 1))) {
					*why = "bad .align";
					goto bad;
				}
				if (!ptr) /* after .ptr it is the pointee's alignment */
					align = (uint32_t)a;
			} else if (tok_is(&t, ".ptr")) {
				ptr = true;
			} else if (ptr && (tok_is(&t, ".global") || tok_is(&t, ".const") ||
					   tok_is(&t, ".shared") || tok_is(&t, ".local"))) {
				/* pointee's state space */
			} else if (tok_is(&t, ".v2") || tok_is(&t, ".v4") || tok_is(&t, ".v8")) {
				vec = (uint32_t)(t.s[2] - '0');
			} else if ((sz = ptx_type_size(&t)) != 0 && !elem) {
				elem = sz;
			} else {
				*why = "unknown parameter attribute";
				goto bad;
			}
		}
		if (!elem || t.kind != TK_ID) {
			*why = "parameter without type or name";
			goto bad;
		}
		uint64_t size = (uint64_t)elem * vec;
		if (!align)
			align = (uint32_t)size;
		for (lex_next(l, &t); tok_is(&t, "["); lex_next(l, &t)) {
			lex_next(l, &t);
			int64_t cnt = tok_num(&t, PARAM_BUF_MAX);
			lex_next(l, &t);
			if (cnt < 0 || !tok_is(&t, "]")) {
				*why = "bad array size";
				goto bad;
			}
			size *= (uint64_t)cnt;
			if (size > PARAM_BUF_MAX) {
				*why = "parameter buffer too large";
				goto bad;
			}
		}
		uint64_t start = ((uint64_t)off + align - 1) & ~(uint64_t)(align - 1);
		if (start + size > PARAM_BUF_MAX) {
			*why = "parameter buffer too large";
			goto bad;
		}
		if (n == XGPU_FATBIN_MAX_PARAMS) {
			*why = "too many parameters";
			goto bad;
		}
		if (n == cap) {
			uint32_t ncap = cap ? cap * 2 : 8;
			struct xgpu_kparam *np2 = realloc(p, ncap * sizeof(*p));
			if (!np2) {
				*why = "out of memory";
				goto bad;
			}
			p = np2;
			cap = ncap;
		}
		p[n].offset = (uint32_t)start;
		p[n].size = (uint32_t)size;
		n++;
		off = (uint32_t)(start + size);
		if (tok_is(&t, ")"))
			break;
		if (!tok_is(&t, ",")) {
			*why = "expected ',' or ')'";
			goto bad;
		}
		lex_next(l, &t);
	}
done:
	*pp = p;
	*np = n;
	*pbytes = off;
	return 0;
bad:
	free(p);
	return -1;
}

/* A PTX integer as ptxas reads one (decimal, 0x hex, 0b binary, octal
 * after a leading 0, an optional U suffix), saturating at UINT64_MAX: false
 * if t is none. */
static bool tok_u64(const struct tok *t, uint64_t *v)
{
	if (t->kind != TK_NUM)
		return false;
	const char *p = t->s, *end = t->s + t->len;
	if (end[-1] == 'U')
		end--;
	unsigned base = 10;
	if (end - p > 2 && p[0] == '0' && (p[1] == 'x' || p[1] == 'X' || p[1] == 'b' || p[1] == 'B')) {
		base = p[1] == 'x' || p[1] == 'X' ? 16 : 2;
		p += 2;
	} else if (end - p > 1 && p[0] == '0') {
		base = 8;
		p++;
	}
	if (p == end)
		return false;
	uint64_t x = 0;
	for (; p < end; p++) {
		unsigned dgt;
		if (*p >= '0' && *p <= '9')
			dgt = (unsigned)(*p - '0');
		else if (*p >= 'a' && *p <= 'f')
			dgt = (unsigned)(*p - 'a' + 10);
		else if (*p >= 'A' && *p <= 'F')
			dgt = (unsigned)(*p - 'A' + 10);
		else
			return false;
		if (dgt >= base)
			return false;
		x = sat_add(sat_mul(x, base), dgt);
	}
	*v = x;
	return true;
}

static bool tok_punct(const struct tok *t, char ch)
{
	return t->kind == TK_PUNCT && *t->s == ch;
}

/* Skips a variable's initializer, the '=' taken, leaving *t on the ',' or
 * ';' after it. *items: how many elements its outermost braces hold (1 for a
 * single value), which sizes an array declared with [] . */
static int ptx_init(struct lex *l, struct tok *t, uint64_t *items)
{
	size_t depth = 0;
	uint64_t commas = 0;
	lex_next(l, t);
	bool list = tok_punct(t, '{');
	for (;; lex_next(l, t)) {
		if (t->kind == TK_EOF)
			return -1;
		if (t->kind != TK_PUNCT)
			continue;
		if (tok_punct(t, '{') || tok_punct(t, '('))
			depth++;
		else if ((tok_punct(t, '}') || tok_punct(t, ')')) && depth-- == 0)
			return -1;
		else if (depth == 0 && (tok_punct(t, ',') || tok_punct(t, ';')))
			break;
		else if (depth == 1 && list && tok_punct(t, ','))
			commas++;
	}
	*items = list ? commas + 1 : 1;
	return 0;
}

/* The bytes one .global or .const declaration reserves, its state space
 * taken: every variable it declares (a, b[4], c<8> for c0 to c7),
 * element size times vector length times the product of the dimensions.
 * Returns -1 with a reason in why for what it cannot read, rather than
 * guessing low: this figure is charged to a guest. */
static int ptx_var(struct lex *l, uint64_t *bytes, const char **why)
{
	struct tok t;
	uint64_t elem = 0, vec = 1, total = 0, v;
	for (lex_next(l, &t); t.kind == TK_DIR; lex_next(l, &t)) {
		uint32_t sz;
		if (tok_is(&t, ".align")) {
			lex_next(l, &t);
			if (!tok_u64(&t, &v)) {
				*why = "bad .align";
				return -1;
			}
		} else if (tok_is(&t, ".attribute")) { /* .attribute(.managed) */
			lex_next(l, &t);
			for (size_t depth = 0;; lex_next(l, &t)) {
				if (t.kind == TK_EOF || (depth == 0 && !tok_punct(&t, '('))) {
					*why = "bad .attribute";
					return -1;
				}
				if (tok_punct(&t, '('))
					depth++;
				else if (tok_punct(&t, ')') && --depth == 0)
					break;
			}
		} else if (tok_is(&t, ".v2") || tok_is(&t, ".v4") || tok_is(&t, ".v8")) {
			vec = (uint64_t)(t.s[2] - '0');
		} else if ((sz = ptx_type_size(&t)) != 0 && !elem) {
			elem = sz;
		} else {
			*why = "unknown attribute or type";
			return -1;
		}
	}
	if (!elem) {
		*why = "no type";
		return -1;
	}
	for (;;) {
		if (t.kind != TK_ID) {
			*why = "no name";
			return -1;
		}
		uint64_t n = 1;
		lex_next(l, &t);
		if (tok_punct(&t, '<')) { /* a parameterized name: that many variables */
			lex_next(l, &t);
			bool ok = tok_u64(&t, &n);
			lex_next(l, &t);
			if (!ok || !tok_punct(&t, '>')) {
				*why = "bad <count>";
				return -1;
			}
			lex_next(l, &t);
		}
		bool open = false; /* [] first: the initializer says how many */
		for (bool first = true; tok_punct(&t, '['); first = false) {
			lex_next(l, &t);
			if (first && tok_punct(&t, ']')) {
				open = true;
			} else {
				bool ok = tok_u64(&t, &v);
				lex_next(l, &t);
				if (!ok || !tok_punct(&t, ']')) {
					*why = "bad array size";
					return -1;
				}
				n = sat_mul(n, v);
			}
			lex_next(l, &t);
		}
		uint64_t items = 0; /* what [] without an initializer holds */
		if (tok_punct(&t, '=') && ptx_init(l, &t, &items) < 0) {
			*why = "bad initializer";
			return -1;
		}
		if (open)
			n = sat_mul(n, items);
		total = sat_add(total, sat_mul(n, sat_mul(elem, vec)));
		if (tok_punct(&t, ';'))
			break;
		if (!tok_punct(&t, ',')) {
			*why = "expected ',' or ';'";
			return -1;
		}
		lex_next(l, &t);
	}
	*bytes = total;
	return 0;
}

/* Whether a .global or .const token t, after prev, declares variables
 * rather than being an instruction's state space (ld.global.u32) or a
 * pointer parameter's (.ptr .global). ptxas accepts declarations both at
 * module scope and inside a function's body, never inside parentheses; in
 * a body, an instruction's state space is glued to its opcode. */
static bool ptx_decl_starts(const struct tok *prev, const struct tok *t, size_t braces, size_t parens)
{
	if (parens)
		return false;
	if (!braces || !prev->s || prev->s + prev->len != t->s)
		return true;
	if (prev->kind == TK_DIR)
		return tok_is(prev, ".visible") || tok_is(prev, ".extern") || tok_is(prev, ".weak") ||
		       tok_is(prev, ".common");
	return prev->kind != TK_ID && prev->kind != TK_NUM;
}

static int parse_ptx(struct ctx *c, const uint8_t *d, size_t len)
{
	const uint8_t *nul = memchr(d, 0, len);
	struct lex l = {(const char *)d, (const char *)(nul ? nul : d + len)};
	struct tok t, prev = {TK_EOF, NULL, 0};
	size_t braces = 0, parens = 0; /* unbalanced ones only make us count more */
	uint64_t vars = 0;
	for (lex_next(&l, &t); t.kind != TK_EOF; prev = t, lex_next(&l, &t)) {
		if (t.kind == TK_PUNCT) {
			if (*t.s == '{')
				braces++;
			else if (*t.s == '}' && braces)
				braces--;
			else if (*t.s == '(')
				parens++;
			else if (*t.s == ')' && parens)
				parens--;
			continue;
		}
		if (t.kind != TK_DIR)
			continue;
		if ((tok_is(&t, ".global") || tok_is(&t, ".const")) &&
		    ptx_decl_starts(&prev, &t, braces, parens)) {
			uint64_t bytes;
			const char *why = NULL;
			if (ptx_var(&l, &bytes, &why) < 0)
				return xgpu_fail(&c->err, "PTX %.*s declaration: %s", (int)t.len, t.s, why);
			vars = sat_add(vars, bytes);
			continue;
		}
		if (!tok_is(&t, ".entry"))
			continue;
		struct tok name;
		lex_next(&l, &name);
		if (name.kind != TK_ID)
			return xgpu_fail(&c->err, "PTX .entry without a name");
		bool known = ctx_has(c, name.s, name.len);
		struct lex save = l;
		lex_next(&l, &t);
		struct xgpu_kparam *p = NULL;
		uint32_t np = 0, pb = 0;
		if (!tok_is(&t, "(")) {
			l = save; /* no parameter list at all */
		} else {
			const char *why = NULL;
			if (ptx_params(&l, &p, &np, &pb, &why) < 0) {
				if (!known)
					return xgpu_fail(&c->err, "PTX .entry %.*s: %s",
							 NAME_ARG(name.s, name.len), why);
				/* Already described by a cubin: skip what we cannot read,
				 * but never past the next kernel or into its body (whose
				 * braces count above). */
				for (;;) {
					save = l;
					lex_next(&l, &t);
					if (t.kind == TK_EOF || tok_is(&t, ")"))
						break;
					if (tok_is(&t, ".entry") || tok_is(&t, "{")) {
						l = save;
						break;
					}
				}
				continue;
			}
		}
		if (known) {
			free(p);
			continue;
		}
		if (ctx_add(c, name.s, name.len, p, np, pb) < 0)
			return -1;
	}
	if (vars > c->global_bytes)
		c->global_bytes = vars;
	return 0;
}

/* ---- container ------------------------------------------------------------- */

size_t xgpu_fatbin_size(const void *data, size_t max)
{
	const uint8_t *d = data;
	if (!d || max < FATBIN_HDR_SIZE || xgpu_ld32(d) != XGPU_FATBIN_MAGIC)
		return 0;
	uint64_t hsz = xgpu_ld16(d + 6), fsz = xgpu_ld64(d + 8);
	if (hsz < FATBIN_HDR_SIZE || hsz > max || fsz > max - hsz)
		return 0;
	return (size_t)(hsz + fsz);
}

/* The entry's payload, inflated into *owned if compressed. */
static int entry_payload(struct ctx *c, const uint8_t *e, const uint8_t *pl, uint64_t psz,
			 const uint8_t **out, size_t *outlen, uint8_t **owned)
{
	uint64_t flags = xgpu_ld64(e + 40);
	uint64_t csz = xgpu_ld32(e + 16), usz = xgpu_ld64(e + 56);
	*owned = NULL;
	if (!(flags & (FLAG_LZ4 | FLAG_ZSTD))) {
		*out = pl;
		*outlen = (size_t)psz;
		return 0;
	}
	if ((flags & FLAG_LZ4) && (flags & FLAG_ZSTD))
		return xgpu_fail(&c->err, "entry claims two codecs");
	if (csz == 0 || csz > psz || csz > INT32_MAX)
		return xgpu_fail(&c->err, "compressed size %llu outside the payload",
				 (unsigned long long)csz);
	if (usz == 0 || usz > XGPU_FATBIN_MAX_UNCOMPRESSED)
		return xgpu_fail(&c->err, "uncompressed size %llu out of range", (unsigned long long)usz);
	/* One budget for the whole container: each entry may claim 512 MiB,
	 * and many small bombs would otherwise cost minutes. The claim is
	 * charged before inflating (an entry must inflate to exactly it), so
	 * nothing past the budget is ever inflated. */
	uint64_t budget = xgpu_fatbin_max_inflated();
	if (c->inflated > budget || usz > budget - c->inflated)
		return xgpu_fail(&c->err,
				 "compressed entries inflate to more than %llu MiB in all (the bound is "
				 "xgpud's --fatbin-inflate-limit, " XGPU_FATBIN_INFLATE_ENV " in a guest)",
				 (unsigned long long)(budget >> 20));
	c->inflated += usz;
	if (flags & FLAG_ZSTD) {
		unsigned long long fcs = ZSTD_getFrameContentSize(pl, (size_t)csz);
		if (fcs == ZSTD_CONTENTSIZE_ERROR || (fcs != ZSTD_CONTENTSIZE_UNKNOWN && fcs > usz))
			return xgpu_fail(&c->err, "zstd frame does not match the entry header");
	}
	uint8_t *buf = malloc((size_t)usz);
	if (!buf)
		return xgpu_fail(&c->err, "out of memory");
	size_t got;
	if (flags & FLAG_ZSTD) {
		got = ZSTD_decompress(buf, (size_t)usz, pl, (size_t)csz);
		if (ZSTD_isError(got)) {
			free(buf);
			return xgpu_fail(&c->err, "zstd: %s", ZSTD_getErrorName(got));
		}
	} else {
		int r = LZ4_decompress_safe((const char *)pl, (char *)buf, (int)csz, (int)usz);
		if (r < 0) {
			free(buf);
			return xgpu_fail(&c->err, "lz4: corrupt block");
		}
		got = (size_t)r;
	}
	if (got != usz) {
		free(buf);
		return xgpu_fail(&c->err, "entry inflates to %zu bytes, header says %llu", got,
				 (unsigned long long)usz);
	}
	*out = buf;
	*outlen = got;
	*owned = buf;
	return 0;
}

/* Walks the entries, parsing those of the given kind. */
static int parse_entries(struct ctx *c, const uint8_t *d, uint64_t start, uint64_t end, unsigned kind)
{
	uint64_t off = start;
	while (off < end) {
		const uint8_t *e = d + off;
		if (end - off < ENTRY_HDR_MIN)
			return xgpu_fail(&c->err, "truncated entry header at %llu", (unsigned long long)off);
		uint64_t ehsz = xgpu_ld32(e + 4), psz = xgpu_ld64(e + 8);
		if (ehsz < ENTRY_HDR_MIN || ehsz > end - off || psz > end - off - ehsz)
			return xgpu_fail(&c->err, "entry at %llu overruns the container",
					 (unsigned long long)off);
		if (xgpu_ld16(e) == kind && psz) {
			const uint8_t *pl = NULL;
			size_t plen = 0;
			uint8_t *owned;
			if (entry_payload(c, e, e + ehsz, psz, &pl, &plen, &owned) < 0)
				return -1;
			int r = kind == KIND_ELF ? parse_elf(c, pl, plen) : parse_ptx(c, pl, plen);
			free(owned);
			if (r < 0)
				return -1;
		}
		off += ehsz + psz;
	}
	return 0;
}

static int kinfo_cmp(const void *a, const void *b)
{
	return strcmp(((const struct xgpu_kernel_info *)a)->name, ((const struct xgpu_kernel_info *)b)->name);
}

int xgpu_fatbin_parse(const void *data, size_t len, struct xgpu_fatbin_info *out, char *err, size_t errlen)
{
	struct ctx c = {.err = {err, errlen}};
	if (err && errlen)
		err[0] = '\0';
	if (!out)
		return xgpu_fail(&c.err, "no output");
	out->kernels = NULL;
	out->nkernels = 0;
	out->global_bytes = 0;
	const uint8_t *d = data;
	size_t total = xgpu_fatbin_size(d, len);
	if (!total)
		return xgpu_fail(&c.err, d && len >= FATBIN_HDR_SIZE && xgpu_ld32(d) == XGPU_FATBIN_MAGIC
					     ? "fatbin header claims more than the buffer holds"
					     : "not a fatbin");
	uint64_t hsz = xgpu_ld16(d + 6);
	/* Cubins first: whichever architecture, they carry the compiler's own
	 * layout; PTX only fills in kernels that no cubin has. */
	if (parse_entries(&c, d, hsz, total, KIND_ELF) < 0 ||
	    parse_entries(&c, d, hsz, total, KIND_PTX) < 0) {
		struct xgpu_fatbin_info tmp = {c.k, c.n, 0};
		xgpu_fatbin_free(&tmp);
		free(c.hash);
		return -1;
	}
	free(c.hash);
	/* Sorted by name so that xgpu_fatbin_find can search in log time. */
	if (c.n)
		qsort(c.k, c.n, sizeof(*c.k), kinfo_cmp);
	out->kernels = c.k;
	out->nkernels = c.n;
	out->global_bytes = c.global_bytes;
	return 0;
}

const struct xgpu_kernel_info *xgpu_fatbin_find(const struct xgpu_fatbin_info *info, const char *name)
{
	if (!info || !name || !info->kernels)
		return NULL;
	uint32_t lo = 0, hi = info->nkernels;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		int r = strcmp(name, info->kernels[mid].name);
		if (!r)
			return &info->kernels[mid];
		if (r < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	/* A table not built by xgpu_fatbin_parse need not be sorted. */
	for (uint32_t i = 0; i < info->nkernels; i++)
		if (strcmp(name, info->kernels[i].name) == 0)
			return &info->kernels[i];
	return NULL;
}

void xgpu_fatbin_free(struct xgpu_fatbin_info *info)
{
	if (!info)
		return;
	for (uint32_t i = 0; i < info->nkernels; i++) {
		free(info->kernels[i].name);
		free(info->kernels[i].params);
	}
	free(info->kernels);
	info->kernels = NULL;
	info->nkernels = 0;
	info->global_bytes = 0;
}

int xgpu_fatbin_pack_params(const struct xgpu_kernel_info *k, void *const *args, uint8_t *buf, size_t bufsize)
{
	if (k->param_bytes > bufsize)
		return XGPU_KPARAMS_TOO_BIG;
	memset(buf, 0, k->param_bytes);
	for (uint32_t i = 0; i < k->nparams; i++) {
		if (k->params[i].offset > k->param_bytes ||
		    k->params[i].size > k->param_bytes - k->params[i].offset)
			return XGPU_KPARAMS_DAMAGED;
		memcpy(buf + k->params[i].offset, args[i], k->params[i].size);
	}
	return 0;
}
