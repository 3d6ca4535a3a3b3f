/* SPDX-License-Identifier: Apache-2.0 */
/* test_fatbin.c - the fatbin parser (common/fatbin.c): exact parameter
 * layouts from the fatbins nvcc builds out of tests/data/fatbin_kernels.cu
 * (into $XGPU_BUILD/tests/data/), and hostile input of every kind. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <lz4.h>
#include <zstd.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cuimage.h"
#include "fatbin.h"

/* ---- expected layouts --------------------------------------------------------
 *
 * Read from the cubins' .nv.info EIATTR_KPARAM_INFO records with an
 * independent dumper (Python, decoding the records by hand) for sm_75, sm_80,
 * sm_90, sm_100 and sm_120, and equal to the .param declarations of the PTX
 * and to EIATTR_CBANK_PARAM_SIZE for every kernel. cuobjdump is not installed
 * on the machines this was written on (the CUDA 13 toolkit there has nvcc,
 * ptxas and fatbinary only), so it could not serve as the reference. Kernel
 * parameters follow the host ABI, which the mirror structs below check with
 * offsetof. */

#define MAXP 32

struct expect {
	const char *name;
	uint32_t nparams;
	uint32_t param_bytes;
	struct xgpu_kparam p[MAXP];
};

#define K_MANY "_Z6k_manyiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiPi"

static const struct expect expected[] = {
    {"_Z6k_ptrsPKfS0_Pfi", 4, 28, {{0, 8}, {8, 8}, {16, 8}, {24, 4}}},
    {"_Z7k_mixedcdsifcxsPd",
     9,
     56,
     {{0, 1}, {8, 8}, {16, 2}, {20, 4}, {24, 4}, {28, 1}, {32, 8}, {40, 2}, {48, 8}}},
    {"_Z8k_structi3s40cPd", 4, 64, {{0, 4}, {8, 40}, {48, 1}, {56, 8}}},
    {"_Z5k_big3bigiPh", 3, 4112, {{0, 4096}, {4096, 4}, {4104, 8}}},
    {"_Z6k_hugec4hugesPd", 4, 20016, {{0, 1}, {1, 20000}, {20002, 2}, {20008, 8}}},
    {"_Z10k_noparamsv", 0, 0, {{0, 0}}},
    {K_MANY, 32, 136, {{0, 0}}}, /* 31 ints at 4 * i, then a pointer at 128 */
    {"_Z7k_templIdLi3EEv6holderIT_XT0_EEPS1_h", 3, 33, {{0, 24}, {24, 8}, {32, 1}}},
    {"_Z7k_templIsLi5EEv6holderIT_XT0_EEPS1_h", 3, 25, {{0, 10}, {16, 8}, {24, 1}}},
    {"k_extern_c", 3, 24, {{0, 8}, {8, 4}, {16, 8}}},
};
#define NKERNELS (sizeof(expected) / sizeof(expected[0]))

struct m_mixed {
	char c;
	double d;
	short s;
	int i;
	float f;
	char c2;
	long long ll;
	short s2;
	double *out;
};
_Static_assert(offsetof(struct m_mixed, d) == 8 && offsetof(struct m_mixed, s) == 16 &&
		   offsetof(struct m_mixed, i) == 20 && offsetof(struct m_mixed, f) == 24 &&
		   offsetof(struct m_mixed, c2) == 28 && offsetof(struct m_mixed, ll) == 32 &&
		   offsetof(struct m_mixed, s2) == 40 && offsetof(struct m_mixed, out) == 48,
	       "k_mixed layout");
struct m_s40 {
	double d;
	int i;
	char c;
	double e[3];
};
struct m_struct {
	int a;
	struct m_s40 s;
	char tail;
	double *out;
};
_Static_assert(sizeof(struct m_s40) == 40 && offsetof(struct m_struct, s) == 8 &&
		   offsetof(struct m_struct, tail) == 48 && offsetof(struct m_struct, out) == 56,
	       "k_struct layout");
struct m_huge {
	char c;
	struct {
		unsigned char b[20000];
	} h;
	short s;
	double *out;
};
_Static_assert(offsetof(struct m_huge, h) == 1 && offsetof(struct m_huge, s) == 20002 &&
		   offsetof(struct m_huge, out) == 20008,
	       "k_huge layout");
struct m_templ_s {
	struct {
		short v[5];
	} h;
	short *out;
	uint8_t flag;
};
_Static_assert(sizeof(((struct m_templ_s *)0)->h) == 10 && offsetof(struct m_templ_s, out) == 16 &&
		   offsetof(struct m_templ_s, flag) == 24,
	       "k_templ<short, 5> layout");

static struct xgpu_kparam expected_param(const struct expect *e, uint32_t i)
{
	if (strcmp(e->name, K_MANY) == 0)
		return i < 31 ? (struct xgpu_kparam){4 * i, 4} : (struct xgpu_kparam){128, 8};
	return e->p[i];
}

static void check_kernel(const struct xgpu_fatbin_info *info, const struct expect *e)
{
	const struct xgpu_kernel_info *k = xgpu_fatbin_find(info, e->name);
	if (!k)
		fail_msg("kernel %s not found", e->name);
	assert_string_equal(k->name, e->name);
	assert_int_equal(k->nparams, e->nparams);
	assert_int_equal(k->param_bytes, e->param_bytes);
	if (!e->nparams)
		assert_null(k->params);
	for (uint32_t i = 0; i < e->nparams; i++) {
		struct xgpu_kparam x = expected_param(e, i);
		if (k->params[i].offset != x.offset || k->params[i].size != x.size)
			fail_msg("%s param %u: got %u/%u, want %u/%u", e->name, i, k->params[i].offset,
				 k->params[i].size, x.offset, x.size);
	}
}

static void check_all(const struct xgpu_fatbin_info *info)
{
	assert_int_equal(info->nkernels, NKERNELS);
	for (size_t i = 0; i < NKERNELS; i++)
		check_kernel(info, &expected[i]);
}

/* Whatever a successful parse of hostile input returns must be coherent. */
static void check_sane(const struct xgpu_fatbin_info *info)
{
	assert_true(info->nkernels <= XGPU_FATBIN_MAX_KERNELS);
	assert_true(info->nkernels == 0 || info->kernels);
	for (uint32_t i = 0; i < info->nkernels; i++) {
		const struct xgpu_kernel_info *k = &info->kernels[i];
		assert_non_null(k->name);
		assert_true(strlen(k->name) > 0);
		assert_true(k->nparams <= XGPU_FATBIN_MAX_PARAMS);
		assert_true((k->nparams == 0) == (k->params == NULL));
		uint32_t end = 0;
		for (uint32_t j = 0; j < k->nparams; j++) {
			assert_true(k->params[j].offset >= end);
			end = k->params[j].offset + k->params[j].size;
		}
		assert_int_equal(end, k->param_bytes);
		assert_ptr_equal(xgpu_fatbin_find(info, k->name), k);
	}
}

/* ---- test data ---------------------------------------------------------------- */

struct buf {
	uint8_t *d;
	size_t len;
};

static const char *const variants[] = {"none",    "all", "default", "lz4",  "size",
				       "balance", "ptx", "2arch",   "sm100"};
#define NVARIANTS (sizeof(variants) / sizeof(variants[0]))
static struct buf data[NVARIANTS];

static struct buf *variant(const char *name)
{
	for (size_t i = 0; i < NVARIANTS; i++)
		if (strcmp(variants[i], name) == 0) {
			if (!data[i].d)
				fail_msg(
				    "fatbin_%s.fatbin not loaded (is XGPU_BUILD set and the data built?)",
				    name);
			return &data[i];
		}
	fail_msg("no variant %s", name);
	return NULL;
}

/* tests/data/fatbin_globals.cu, built as the Makefile's GLOBALS_VARIANTS. */
static const char *const gvariants[] = {"sm90", "ptx", "sm100", "huge", "hugeptx"};
#define NGVARIANTS (sizeof(gvariants) / sizeof(gvariants[0]))
static struct buf gdata[NGVARIANTS];

static struct buf *gvariant(const char *name)
{
	for (size_t i = 0; i < NGVARIANTS; i++)
		if (strcmp(gvariants[i], name) == 0) {
			if (!gdata[i].d)
				fail_msg(
				    "globals_%s.fatbin not loaded (is XGPU_BUILD set and the data built?)",
				    name);
			return &gdata[i];
		}
	fail_msg("no variant %s", name);
	return NULL;
}

static void load(const char *dir, const char *fmt, const char *name, struct buf *b)
{
	char file[256], path[4096];
	snprintf(file, sizeof(file), fmt, name);
	snprintf(path, sizeof(path), "%s/tests/data/%s", dir, file);
	FILE *f = fopen(path, "rb");
	if (!f) {
		fprintf(stderr, "cannot open %s\n", path);
		return;
	}
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	b->d = malloc(n > 0 ? (size_t)n : 1);
	b->len = fread(b->d, 1, (size_t)n, f);
	fclose(f);
}

static int load_all(void **state)
{
	const char *dir = getenv("XGPU_BUILD");
	if (!dir) {
		fprintf(stderr, "XGPU_BUILD is not set\n");
		return 0; /* the tests that need the data fail one by one */
	}
	for (size_t i = 0; i < NVARIANTS; i++)
		load(dir, "fatbin_%s.fatbin", variants[i], &data[i]);
	for (size_t i = 0; i < NGVARIANTS; i++)
		load(dir, "globals_%s.fatbin", gvariants[i], &gdata[i]);
	return 0;
}

static int free_all(void **state)
{
	for (size_t i = 0; i < NVARIANTS; i++)
		free(data[i].d);
	for (size_t i = 0; i < NGVARIANTS; i++)
		free(gdata[i].d);
	return 0;
}

static uint16_t rd16(const uint8_t *p)
{
	return (uint16_t)(p[0] | (p[1] << 8));
}

static uint32_t rd32(const uint8_t *p)
{
	return (uint32_t)rd16(p) | ((uint32_t)rd16(p + 2) << 16);
}

static uint64_t rd64(const uint8_t *p)
{
	return (uint64_t)rd32(p) | ((uint64_t)rd32(p + 4) << 32);
}

static void wr16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static void wr32(uint8_t *p, uint32_t v)
{
	wr16(p, (uint16_t)v);
	wr16(p + 2, (uint16_t)(v >> 16));
}

static void wr64(uint8_t *p, uint64_t v)
{
	wr32(p, (uint32_t)v);
	wr32(p + 4, (uint32_t)(v >> 32));
}

/* An entry of a real fatbin, as found. */
struct entry {
	uint16_t kind;
	uint32_t hsize;
	uint64_t flags;
	const uint8_t *hdr, *payload;
	uint64_t psize;
};

static size_t entries(const struct buf *b, struct entry *out, size_t max)
{
	size_t n = 0, off = rd16(b->d + 6), end = off + rd64(b->d + 8);
	assert_true(end <= b->len);
	while (off < end && n < max) {
		const uint8_t *e = b->d + off;
		out[n] = (struct entry){rd16(e), rd32(e + 4), rd64(e + 40), e, e + rd32(e + 4), rd64(e + 8)};
		off += out[n].hsize + out[n].psize;
		n++;
	}
	return n;
}

/* Builds fatbin containers. */
struct fb {
	uint8_t *d;
	size_t len;
};

static void fb_init(struct fb *f)
{
	f->d = calloc(1, 16);
	f->len = 16;
	wr32(f->d, XGPU_FATBIN_MAGIC);
	wr16(f->d + 4, 1);
	wr16(f->d + 6, 16);
}

/* Appends an entry with a 64-byte header; csize is the payload's length when
 * a codec flag is set. */
static void fb_add(struct fb *f, uint16_t kind, uint64_t flags, const void *payload, size_t plen,
		   uint64_t usize)
{
	size_t padded = (plen + 7) & ~(size_t)7;
	f->d = realloc(f->d, f->len + 64 + padded);
	uint8_t *e = f->d + f->len;
	memset(e, 0, 64 + padded);
	wr16(e, kind);
	wr16(e + 2, 0x101);
	wr32(e + 4, 64);
	wr64(e + 8, padded);
	wr32(e + 16, (flags & 0xa000) ? (uint32_t)plen : 0);
	wr32(e + 28, 90);
	wr64(e + 40, flags | 0x11);
	wr64(e + 56, usize);
	memcpy(e + 64, payload, plen);
	f->len += 64 + padded;
	wr64(f->d + 8, f->len - 16);
}

/* Copies a real entry, header and all. */
static void fb_copy(struct fb *f, const struct entry *e)
{
	f->d = realloc(f->d, f->len + e->hsize + e->psize);
	memcpy(f->d + f->len, e->hdr, e->hsize + e->psize);
	f->len += e->hsize + e->psize;
	wr64(f->d + 8, f->len - 16);
}

static int parse(const void *d, size_t len, struct xgpu_fatbin_info *info)
{
	char err[256];
	int r = xgpu_fatbin_parse(d, len, info, err, sizeof(err));
	if (r == 0)
		check_sane(info);
	else
		assert_true(err[0] != '\0');
	return r;
}

/* Parses hostile input: a failure or a coherent result, nothing else. */
static void parse_any(const void *d, size_t len)
{
	struct xgpu_fatbin_info info;
	if (parse(d, len, &info) == 0)
		xgpu_fatbin_free(&info);
	else
		assert_null(info.kernels);
}

static void fb_expect(struct fb *f, int want)
{
	struct xgpu_fatbin_info info;
	int r = parse(f->d, f->len, &info);
	assert_int_equal(r, want);
	if (r == 0)
		xgpu_fatbin_free(&info);
}

/* The uncompressed cubin (sm_90) and PTX of the "none" variant. */
static struct buf cubin(void)
{
	struct entry es[8];
	size_t n = entries(variant("none"), es, 8);
	for (size_t i = 0; i < n; i++)
		if (es[i].kind == 2) {
			assert_int_equal(es[i].flags & 0xa000, 0);
			struct buf b = {malloc(es[i].psize), es[i].psize};
			memcpy(b.d, es[i].payload, b.len);
			return b;
		}
	fail_msg("no cubin");
	return (struct buf){NULL, 0};
}

static struct buf ptx_text(void)
{
	struct entry es[8];
	size_t n = entries(variant("none"), es, 8);
	for (size_t i = 0; i < n; i++)
		if (es[i].kind == 1) {
			size_t len = strnlen((const char *)es[i].payload, es[i].psize);
			struct buf b = {malloc(len + 1), len};
			memcpy(b.d, es[i].payload, len);
			b.d[len] = 0;
			return b;
		}
	fail_msg("no PTX");
	return (struct buf){NULL, 0};
}

/* ---- real fatbins -------------------------------------------------------------- */

static void test_layouts(void **state)
{
	struct buf *b = variant(*state);
	struct xgpu_fatbin_info info;
	assert_int_equal(parse(b->d, b->len, &info), 0);
	check_all(&info);
	/* No variables: parameter banks (.nv.constant0.<kernel>), shared
	 * memory and code are not counted. */
	assert_int_equal(info.global_bytes, 0);
	assert_null(xgpu_fatbin_find(&info, "k_nonexistent"));
	assert_null(xgpu_fatbin_find(&info, "_Z6k_ptrsPKfS0_Pf"));
	assert_null(xgpu_fatbin_find(&info, NULL));
	xgpu_fatbin_free(&info);
	assert_null(info.kernels);
	assert_int_equal(info.nkernels, 0);
	xgpu_fatbin_free(&info);
}

/* What nvcc 13 puts in each variant: codec flags per entry kind. */
static void test_variant_codecs(void **state)
{
	static const struct {
		const char *v;
		uint64_t elf, ptx; /* codec flags, or ~0 for no such entry */
	} want[] = {
	    {"none", 0, 0},          {"all", 0x8000, 0x8000},  {"default", 0, 0x8000},
	    {"lz4", 0x2000, 0x2000}, {"size", 0x8000, 0x8000}, {"balance", 0x8000, 0x8000},
	    {"ptx", ~0ull, 0x8000},  {"2arch", 0, ~0ull},      {"sm100", 0, 0x8000},
	};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		struct entry es[8];
		size_t n = entries(variant(want[i].v), es, 8);
		bool seen_elf = false, seen_ptx = false;
		for (size_t j = 0; j < n; j++) {
			uint64_t codec = es[j].flags & 0xa000;
			if (es[j].kind == 2) {
				seen_elf = true;
				assert_int_equal(codec, want[i].elf);
			} else if (es[j].kind == 1) {
				seen_ptx = true;
				assert_int_equal(codec, want[i].ptx);
			}
			if (codec == 0x8000)
				assert_memory_equal(es[j].payload, "\x28\xb5\x2f\xfd", 4);
		}
		assert_int_equal(seen_elf, want[i].elf != ~0ull);
		assert_int_equal(seen_ptx, want[i].ptx != ~0ull);
	}
}

/* Each kind of entry alone describes every kernel, whatever its codec. */
static void test_entries_alone(void **state)
{
	for (size_t v = 0; v < NVARIANTS; v++) {
		struct entry es[8];
		size_t n = entries(variant(variants[v]), es, 8);
		for (uint16_t kind = 1; kind <= 2; kind++) {
			struct fb f;
			fb_init(&f);
			size_t copied = 0;
			for (size_t i = 0; i < n; i++)
				if (es[i].kind == kind) {
					fb_copy(&f, &es[i]);
					copied++;
				}
			struct xgpu_fatbin_info info;
			assert_int_equal(parse(f.d, f.len, &info), 0);
			if (copied)
				check_all(&info);
			else
				assert_int_equal(info.nkernels, 0);
			xgpu_fatbin_free(&info);
			free(f.d);
		}
	}
}

static void test_size(void **state)
{
	for (size_t v = 0; v < NVARIANTS; v++) {
		struct buf *b = variant(variants[v]);
		assert_int_equal(xgpu_fatbin_size(b->d, b->len), b->len);
		assert_int_equal(xgpu_fatbin_size(b->d, SIZE_MAX), b->len);
		assert_int_equal(xgpu_fatbin_size(b->d, b->len - 1), 0);
	}
	struct buf c = cubin();
	assert_int_equal(xgpu_fatbin_size(c.d, c.len), 0);
	free(c.d);
	uint8_t h[64] = {0};
	assert_int_equal(xgpu_fatbin_size(h, sizeof(h)), 0);
	assert_int_equal(xgpu_fatbin_size(NULL, 100), 0);
	wr32(h, XGPU_FATBIN_MAGIC);
	wr16(h + 4, 1);
	wr16(h + 6, 16);
	wr64(h + 8, 48);
	assert_int_equal(xgpu_fatbin_size(h, sizeof(h)), 64);
	assert_int_equal(xgpu_fatbin_size(h, 15), 0);
	assert_int_equal(xgpu_fatbin_size(h, 63), 0);
	wr64(h + 8, UINT64_MAX);
	assert_int_equal(xgpu_fatbin_size(h, SIZE_MAX), 0);
	wr64(h + 8, UINT64_MAX - 8);
	assert_int_equal(xgpu_fatbin_size(h, SIZE_MAX), 0);
	wr64(h + 8, 0);
	wr16(h + 6, 8); /* header smaller than a header */
	assert_int_equal(xgpu_fatbin_size(h, sizeof(h)), 0);
	wr16(h + 6, 0xffff);
	assert_int_equal(xgpu_fatbin_size(h, sizeof(h)), 0);
}

static void test_api_edges(void **state)
{
	struct buf *b = variant("none");
	struct xgpu_fatbin_info info;
	assert_int_equal(xgpu_fatbin_parse(b->d, b->len, NULL, NULL, 0), -1);
	assert_int_equal(xgpu_fatbin_parse(NULL, 100, &info, NULL, 0), -1);
	assert_int_equal(xgpu_fatbin_parse(b->d, b->len, &info, NULL, 0), 0);
	check_all(&info);
	xgpu_fatbin_free(&info);
	char tiny[4];
	assert_int_equal(xgpu_fatbin_parse(b->d, 10, &info, tiny, sizeof(tiny)), -1);
	assert_int_equal(strlen(tiny), 3);
	xgpu_fatbin_free(NULL);
	assert_null(xgpu_fatbin_find(NULL, "x"));
	/* Trailing bytes after the container are not part of it. */
	uint8_t *big = calloc(1, b->len + 100);
	memcpy(big, b->d, b->len);
	assert_int_equal(parse(big, b->len + 100, &info), 0);
	check_all(&info);
	xgpu_fatbin_free(&info);
	free(big);
	/* A table built by hand, unsorted, is searched too. */
	struct xgpu_kernel_info ks[3] = {{"zz", 0, NULL, 0}, {"aa", 0, NULL, 0}, {"mm", 0, NULL, 0}};
	struct xgpu_fatbin_info hand = {ks, 3, 0};
	assert_ptr_equal(xgpu_fatbin_find(&hand, "aa"), &ks[1]);
	assert_ptr_equal(xgpu_fatbin_find(&hand, "zz"), &ks[0]);
	assert_null(xgpu_fatbin_find(&hand, "bb"));
}

/* ---- PTX -------------------------------------------------------------------------- */

static int parse_ptx(const char *text, struct xgpu_fatbin_info *info)
{
	struct fb f;
	fb_init(&f);
	fb_add(&f, 1, 0, text, strlen(text) + 1, 0);
	int r = parse(f.d, f.len, info);
	free(f.d);
	return r;
}

static void expect_ptx(const char *text, const char *name, uint32_t n, uint32_t bytes, const uint32_t *offsz)
{
	struct xgpu_fatbin_info info;
	if (parse_ptx(text, &info) != 0)
		fail_msg("PTX for %s did not parse", name);
	const struct xgpu_kernel_info *k = xgpu_fatbin_find(&info, name);
	if (!k)
		fail_msg("%s not found", name);
	assert_int_equal(k->nparams, n);
	assert_int_equal(k->param_bytes, bytes);
	for (uint32_t i = 0; i < n; i++) {
		assert_int_equal(k->params[i].offset, offsz[2 * i]);
		assert_int_equal(k->params[i].size, offsz[2 * i + 1]);
	}
	xgpu_fatbin_free(&info);
}

static void test_ptx_syntax(void **state)
{
	/* Comments, line breaks and odd spacing anywhere; decoys in comments
	 * and strings; .weak; pointer attributes whose .align is the
	 * pointee's; explicit alignment; arrays of scalars; vectors. */
	const char *text =
	    "//\n// Generated by hand\n.version 9.0\n.target sm_90\n.address_size 64\n"
	    ".file 1 \"/tmp/.entry fake(.param .u8 x)\"\n"
	    "// .entry commented( .param .u8 a )\n"
	    "/* .entry blockcommented( .param .u8 a ) */\n"
	    ".weak .entry w1 (\n"
	    "  .param .u8 w1_p0, // a char\n"
	    "  .param /* inline */ .u64 .ptr .global .align 16 w1_p1,\n"
	    "  .param\n.align\n16\n.b8\nw1_p2[\n24\n],\n"
	    "  .param .u16 w1_p3\n,.param .u32 w1_p4[3], .param .v2 .f32 w1_p5, .param .b128 w1_p6,"
	    "  .param .align 4 .b8 w1_p7[0x6]\n"
	    ")\n.maxntid 128, 1, 1\n{\n\tret;\n}\n"
	    ".visible.entry w2(.param .f64 a,.param .s8 b){ret;}\n"
	    ".entry w3 { ret; }\n"
	    ".visible .entry w4()\n{\n}\n";
	/* w1: u8 at 0; u64 at 8 (pointee .align 16 ignored); [24] aligned 16
	 * at 16; u16 at 40; u32[3] at 44; v2.f32 (8, aligned 8) at 56;
	 * b128 at 64; [6] aligned 4 at 80, ending at 86. */
	const uint32_t w1[] = {0, 1, 8, 8, 16, 24, 40, 2, 44, 12, 56, 8, 64, 16, 80, 6};
	expect_ptx(text, "w1", 8, 86, w1);
	const uint32_t w2[] = {0, 8, 8, 1};
	expect_ptx(text, "w2", 2, 9, w2);
	expect_ptx(text, "w3", 0, 0, NULL);
	expect_ptx(text, "w4", 0, 0, NULL);
	struct xgpu_fatbin_info info;
	assert_int_equal(parse_ptx(text, &info), 0);
	assert_int_equal(info.nkernels, 4);
	assert_null(xgpu_fatbin_find(&info, "fake"));
	assert_null(xgpu_fatbin_find(&info, "commented"));
	assert_null(xgpu_fatbin_find(&info, "blockcommented"));
	xgpu_fatbin_free(&info);

	/* The real PTX, uncompressed, describes every kernel. */
	struct buf p = ptx_text();
	assert_int_equal(parse_ptx((const char *)p.d, &info), 0);
	check_all(&info);
	xgpu_fatbin_free(&info);
	/* ... also with CRLF line ends and each newline doubled. */
	char *crlf = malloc(p.len * 3 + 1), *o = crlf;
	for (size_t i = 0; i < p.len; i++) {
		if (p.d[i] == '\n') {
			memcpy(o, "\r\n\n", 3);
			o += 3;
		} else {
			*o++ = (char)p.d[i];
		}
	}
	*o = 0;
	assert_int_equal(parse_ptx(crlf, &info), 0);
	check_all(&info);
	xgpu_fatbin_free(&info);
	free(crlf);
	free(p.d);
}

static void test_ptx_malformed(void **state)
{
	static const char *const bad[] = {
	    ".entry k( .param .u32 )",
	    ".entry k( .param .foo x )",
	    ".entry k( .param x )",
	    ".entry k( .param .u32 x",
	    ".entry k( .param .u32 x .param .u32 y )",
	    ".entry k( .u32 x )",
	    ".entry ( .param .u32 x )",
	    ".entry",
	    ".entry k( .param .u32 x[99999999999] )",
	    ".entry k( .param .u32 x[] )",
	    ".entry k( .param .u32 x[4 )",
	    ".entry k( .param .align 3 .b8 x[4] )",
	    ".entry k( .param .align 0 .b8 x[4] )",
	    ".entry k( .param .align .b8 x[4] )",
	    ".entry k( .param .u32 .u32 x )",
	    ".entry k( .param .b8 x[1048576], .param .u8 y )",
	    ".entry k( .param .b8 x[1024][1024][1024] )",
	};
	struct xgpu_fatbin_info info;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (parse_ptx(bad[i], &info) != -1)
			fail_msg("accepted: %s", bad[i]);
	/* Unterminated comments and strings just end the text. */
	assert_int_equal(parse_ptx(".entry k1() /* .entry k2(", &info), 0);
	assert_int_equal(info.nkernels, 1);
	xgpu_fatbin_free(&info);
	assert_int_equal(parse_ptx(".entry k1() .file \"abc", &info), 0);
	assert_int_equal(info.nkernels, 1);
	xgpu_fatbin_free(&info);
	assert_int_equal(parse_ptx("", &info), 0);
	assert_int_equal(info.nkernels, 0);
	xgpu_fatbin_free(&info);
}

static char *many_text(const char *prefix, unsigned n, const char *each, const char *suffix)
{
	size_t cap = strlen(prefix) + strlen(suffix) + (size_t)n * (strlen(each) + 24) + 1, len = 0;
	char *s = malloc(cap);
	len += (size_t)snprintf(s + len, cap - len, "%s", prefix);
	for (unsigned i = 0; i < n; i++)
		len += (size_t)snprintf(s + len, cap - len, each, i, i);
	snprintf(s + len, cap - len, "%s", suffix);
	return s;
}

static void test_limits(void **state)
{
	struct xgpu_fatbin_info info;
	char *s = many_text(".entry k(", XGPU_FATBIN_MAX_PARAMS, ".param .u8 p%u_%u,", ".param .u8 last)");
	assert_int_equal(parse_ptx(s, &info), -1); /* one more than allowed */
	free(s);
	s = many_text(".entry k(", XGPU_FATBIN_MAX_PARAMS - 1, ".param .u8 p%u_%u,", ".param .u8 last)");
	assert_int_equal(parse_ptx(s, &info), 0);
	assert_int_equal(info.kernels[0].nparams, XGPU_FATBIN_MAX_PARAMS);
	assert_int_equal(info.kernels[0].param_bytes, XGPU_FATBIN_MAX_PARAMS);
	xgpu_fatbin_free(&info);
	free(s);
	s = many_text("", XGPU_FATBIN_MAX_KERNELS, ".entry k%u_%u()\n", "");
	assert_int_equal(parse_ptx(s, &info), 0);
	assert_int_equal(info.nkernels, XGPU_FATBIN_MAX_KERNELS);
	assert_non_null(xgpu_fatbin_find(&info, "k12345_12345"));
	xgpu_fatbin_free(&info);
	free(s);
	s = many_text("", XGPU_FATBIN_MAX_KERNELS, ".entry k%u_%u()\n", ".entry one_more()");
	assert_int_equal(parse_ptx(s, &info), -1);
	free(s);
}

/* Cubins win over PTX wherever the entries sit; the first description of a
 * kernel wins among equals; PTX adds what no cubin has. */
static void test_precedence(void **state)
{
	struct buf c = cubin();
	const char *decoy = ".visible .entry _Z6k_ptrsPKfS0_Pfi( .param .u32 x )\n"
			    ".visible .entry k_extra( .param .u16 a, .param .u64 b )\n"
			    ".entry k_twice( .param .u8 a )\n";
	const char *second = ".entry k_twice( .param .u64 a, .param .u64 b )\n";
	struct fb f;
	fb_init(&f);
	fb_add(&f, 1, 0, decoy, strlen(decoy) + 1, 0);
	fb_add(&f, 1, 0, second, strlen(second) + 1, 0);
	fb_add(&f, 2, 0, c.d, c.len, 0);
	struct xgpu_fatbin_info info;
	assert_int_equal(parse(f.d, f.len, &info), 0);
	assert_int_equal(info.nkernels, NKERNELS + 2);
	for (size_t i = 0; i < NKERNELS; i++)
		check_kernel(&info, &expected[i]);
	const struct xgpu_kernel_info *k = xgpu_fatbin_find(&info, "k_extra");
	assert_non_null(k);
	assert_int_equal(k->nparams, 2);
	assert_int_equal(k->params[1].offset, 8);
	assert_int_equal(k->param_bytes, 16);
	k = xgpu_fatbin_find(&info, "k_twice");
	assert_non_null(k);
	assert_int_equal(k->nparams, 1);
	xgpu_fatbin_free(&info);
	free(f.d);

	/* PTX a cubin already covers may hold what we cannot read. */
	const char *odd =
	    ".entry _Z6k_ptrsPKfS0_Pfi( .param .u64 .newthing x )\n.entry k_after( .param .u8 a )\n";
	fb_init(&f);
	fb_add(&f, 2, 0, c.d, c.len, 0);
	fb_add(&f, 1, 0, odd, strlen(odd) + 1, 0);
	assert_int_equal(parse(f.d, f.len, &info), 0);
	check_kernel(&info, &expected[0]);
	assert_non_null(xgpu_fatbin_find(&info, "k_after"));
	xgpu_fatbin_free(&info);
	free(f.d);

	/* Our own compressed entries, both codecs. */
	size_t zcap = ZSTD_compressBound(c.len);
	uint8_t *z = malloc(zcap);
	size_t zlen = ZSTD_compress(z, zcap, c.d, c.len, 3);
	assert_false(ZSTD_isError(zlen));
	fb_init(&f);
	fb_add(&f, 2, 0x8000, z, zlen, c.len);
	assert_int_equal(parse(f.d, f.len, &info), 0);
	check_all(&info);
	xgpu_fatbin_free(&info);
	free(f.d);
	int lcap = LZ4_compressBound((int)c.len);
	char *l4 = malloc((size_t)lcap);
	int llen = LZ4_compress_default((const char *)c.d, l4, (int)c.len, lcap);
	assert_true(llen > 0);
	fb_init(&f);
	fb_add(&f, 2, 0x2000, l4, (size_t)llen, c.len);
	assert_int_equal(parse(f.d, f.len, &info), 0);
	check_all(&info);
	xgpu_fatbin_free(&info);
	free(f.d);

	/* Uncompressed size disagreeing with the data, either way. */
	for (int codec = 0; codec < 2; codec++) {
		uint64_t claims[] = {c.len - 1, c.len + 1, 1, XGPU_FATBIN_MAX_UNCOMPRESSED + 1ull, 0};
		for (size_t i = 0; i < sizeof(claims) / sizeof(claims[0]); i++) {
			fb_init(&f);
			if (codec == 0)
				fb_add(&f, 2, 0x8000, z, zlen, claims[i]);
			else
				fb_add(&f, 2, 0x2000, l4, (size_t)llen, claims[i]);
			fb_expect(&f, -1);
			free(f.d);
		}
	}
	free(z);
	free(l4);
	free(c.d);
}

/* ---- hostile input ------------------------------------------------------------------- */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static void test_truncated(void **state)
{
	for (size_t v = 0; v < NVARIANTS; v++) {
		struct buf *b = variant(variants[v]);
		size_t lim = b->len < 4096 ? b->len : 4096;
		uint8_t *copy = malloc(b->len);
		for (size_t len = 0; len < lim; len++) {
			/* As is: the header claims more than there is. */
			memcpy(copy, b->d, len);
			struct xgpu_fatbin_info info;
			assert_int_equal(xgpu_fatbin_parse(copy, len, &info, NULL, 0), -1);
			/* With the header's size cut to match, entries overrun. */
			if (len >= 16) {
				wr64(copy + 8, len - 16);
				parse_any(copy, len);
			}
		}
		free(copy);
	}
	/* The cubin and the PTX themselves cut short at every length of their
	 * first 4 KiB and at a stride through the rest. */
	struct buf parts[2] = {cubin(), ptx_text()};
	for (int i = 0; i < 2; i++) {
		for (size_t len = 0; len < parts[i].len; len += len < 4096 ? 1 : 61) {
			struct fb f;
			fb_init(&f);
			fb_add(&f, i == 0 ? 2 : 1, 0, parts[i].d, len, 0);
			parse_any(f.d, f.len);
			free(f.d);
		}
		free(parts[i].d);
	}
}

static void test_bad_headers(void **state)
{
	struct buf *b = variant("none");
	struct fb f = {malloc(b->len), b->len};
	const size_t e0 = 16; /* the first entry */
	struct {
		size_t off;
		int width;
		uint64_t val;
	} cases[] = {
	    {6, 2, 0},                    /* container header size 0 */
	    {6, 2, 8},                    /* smaller than a header */
	    {6, 2, 0xffff},               /* past the end */
	    {8, 8, UINT64_MAX},           /* container size */
	    {8, 8, UINT64_MAX - 15},      /* container size wrapping */
	    {e0 + 4, 4, 0},               /* entry header size */
	    {e0 + 4, 4, 16},              /* entry header too small */
	    {e0 + 4, 4, 0xffffffff},      /* entry header size past the end */
	    {e0 + 8, 8, UINT64_MAX},      /* payload size */
	    {e0 + 8, 8, UINT64_MAX - 63}, /* payload size wrapping */
	    {e0 + 8, 8, 1ull << 40},      /* huge payload */
	    {e0 + 40, 8, 0x8011},         /* uncompressed ELF marked zstd, size 0 */
	    {e0 + 40, 8, 0x2011},         /* ... and LZ4 */
	    {e0 + 40, 8, 0xa011},         /* both codecs */
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		memcpy(f.d, b->d, b->len);
		if (cases[i].width == 2)
			wr16(f.d + cases[i].off, (uint16_t)cases[i].val);
		else if (cases[i].width == 4)
			wr32(f.d + cases[i].off, (uint32_t)cases[i].val);
		else
			wr64(f.d + cases[i].off, cases[i].val);
		struct xgpu_fatbin_info info;
		if (parse(f.d, f.len, &info) != -1)
			fail_msg("case %zu accepted", i);
	}
	/* Compressed entries with nonsense sizes. */
	struct buf *a = variant("all");
	free(f.d);
	f.d = malloc(a->len);
	f.len = a->len;
	struct {
		size_t off;
		int width;
		uint64_t val;
	} zc[] = {
	    {e0 + 16, 4, 0},                                   /* compressed size 0 */
	    {e0 + 16, 4, 0xffffffff},                          /* past the payload */
	    {e0 + 56, 8, 0},                                   /* uncompressed size 0 */
	    {e0 + 56, 8, XGPU_FATBIN_MAX_UNCOMPRESSED + 1ull}, /* too large */
	    {e0 + 56, 8, UINT64_MAX},
	    {e0 + 56, 8, 100}, /* smaller than the frame says */
	    {e0 + 40, 8, 0xa011},
	    {e0 + 40, 8, 0x2011}, /* zstd data as LZ4 */
	};
	for (size_t i = 0; i < sizeof(zc) / sizeof(zc[0]); i++) {
		memcpy(f.d, a->d, a->len);
		if (zc[i].width == 4)
			wr32(f.d + zc[i].off, (uint32_t)zc[i].val);
		else
			wr64(f.d + zc[i].off, zc[i].val);
		struct xgpu_fatbin_info info;
		if (parse(f.d, f.len, &info) != -1)
			fail_msg("compressed case %zu accepted", i);
	}
	free(f.d);
	/* Unknown entry kinds are skipped; an empty container is valid. */
	fb_init(&f);
	fb_add(&f, 7, 0, "junk", 4, 0);
	struct xgpu_fatbin_info info;
	assert_int_equal(parse(f.d, f.len, &info), 0);
	assert_int_equal(info.nkernels, 0);
	free(f.d);
	/* Bytes left over after the last entry are not an entry. */
	fb_init(&f);
	f.d = realloc(f.d, 16 + 8);
	memset(f.d + 16, 0, 8);
	f.len = 24;
	wr64(f.d + 8, 8);
	fb_expect(&f, -1);
	free(f.d);
}

/* A zstd frame whose header claims content it does not carry. */
static void test_zstd_lies(void **state)
{
	uint8_t frame[32];
	size_t n = 0;
	memcpy(frame, "\x28\xb5\x2f\xfd", 4);
	n = 4;
	frame[n++] = 0xe0; /* 8-byte content size, single segment */
	wr64(frame + n, 1ull << 40);
	n += 8;
	frame[n++] = (uint8_t)((4 << 3) | 1); /* last block, raw, 4 bytes */
	frame[n++] = 0;
	frame[n++] = 0;
	memcpy(frame + n, "abcd", 4);
	n += 4;
	uint64_t claims[] = {4, 1000, XGPU_FATBIN_MAX_UNCOMPRESSED, 1ull << 40};
	for (size_t i = 0; i < sizeof(claims) / sizeof(claims[0]); i++) {
		for (uint16_t kind = 1; kind <= 2; kind++) {
			struct fb f;
			fb_init(&f);
			fb_add(&f, kind, 0x8000, frame, n, claims[i]);
			fb_expect(&f, -1);
			free(f.d);
		}
	}
	/* Honest frame, honest header, but a header's worth of garbage after
	 * the frame inside the compressed size. */
	uint8_t honest[64];
	size_t hn = ZSTD_compress(honest, sizeof(honest), ".entry k()", 11, 1);
	assert_false(ZSTD_isError(hn));
	struct fb f;
	fb_init(&f);
	fb_add(&f, 1, 0x8000, honest, hn, 11);
	struct xgpu_fatbin_info info;
	assert_int_equal(parse(f.d, f.len, &info), 0);
	assert_int_equal(info.nkernels, 1);
	xgpu_fatbin_free(&info);
	free(f.d);
	memset(honest + hn, 0x55, 8);
	fb_init(&f);
	fb_add(&f, 1, 0x8000, honest, hn + 8, 11);
	fb_expect(&f, -1);
	free(f.d);
	/* A frame of a megabyte of zeros where the header says 4 KiB. */
	uint8_t *zeros = calloc(1, 1 << 20), zf[1024];
	size_t zn = ZSTD_compress(zf, sizeof(zf), zeros, 1 << 20, 1);
	assert_false(ZSTD_isError(zn));
	fb_init(&f);
	fb_add(&f, 2, 0x8000, zf, zn, 4096);
	fb_expect(&f, -1);
	free(f.d);
	/* ... and the LZ4 equivalent. */
	int lcap = LZ4_compressBound(1 << 20);
	char *lz = malloc((size_t)lcap);
	int ln = LZ4_compress_default((const char *)zeros, lz, 1 << 20, lcap);
	assert_true(ln > 0);
	fb_init(&f);
	fb_add(&f, 2, 0x2000, lz, (size_t)ln, 4096);
	fb_expect(&f, -1);
	free(f.d);
	free(lz);
	free(zeros);
}

/* Byte flips inside the compressed payloads. */
static void test_corrupt_compressed(void **state)
{
	static const char *const v[] = {"all", "lz4", "default", "size", "ptx"};
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		struct buf *b = variant(v[i]);
		struct entry es[8];
		size_t n = entries(b, es, 8);
		uint8_t *copy = malloc(b->len);
		for (size_t j = 0; j < n; j++) {
			if (!(es[j].flags & 0xa000))
				continue;
			size_t start = (size_t)(es[j].payload - b->d);
			for (size_t k = 0; k < es[j].psize; k += 1 + k / 64) {
				memcpy(copy, b->d, b->len);
				copy[start + k] ^= (uint8_t)(1u << (k % 8));
				parse_any(copy, b->len);
				copy[start + k] = (uint8_t)rng();
				parse_any(copy, b->len);
			}
		}
		free(copy);
	}
}

static void test_random_flips(void **state)
{
	struct buf p = ptx_text();
	struct fb plain;
	fb_init(&plain);
	fb_add(&plain, 1, 0, p.d, p.len + 1, 0);
	free(p.d);
	for (int iter = 0; iter < 4000; iter++) {
		size_t which = (size_t)iter % (NVARIANTS + 1);
		struct buf src =
		    which == NVARIANTS ? (struct buf){plain.d, plain.len} : *variant(variants[which]);
		uint8_t *copy = malloc(src.len);
		memcpy(copy, src.d, src.len);
		int flips = 1 + (int)(rng() % 8);
		for (int i = 0; i < flips; i++) {
			/* Half the flips land in the first 256 bytes: the headers. */
			size_t span = (rng() & 1) && src.len > 256 ? 256 : src.len;
			size_t at = (size_t)(rng() % span);
			if (rng() & 1)
				copy[at] ^= (uint8_t)(1u << (rng() % 8));
			else
				copy[at] = (uint8_t)rng();
		}
		parse_any(copy, src.len);
		free(copy);
	}
	free(plain.d);
}

/* ---- crafted cubins ---------------------------------------------------------------------- */

struct sec {
	size_t hdr; /* offset of the section header */
	size_t off; /* of the data */
	size_t size;
};

static bool find_sec(const uint8_t *e, const char *name, struct sec *s)
{
	uint64_t shoff = rd64(e + 0x28);
	uint16_t ent = rd16(e + 0x3a), n = rd16(e + 0x3c), stri = rd16(e + 0x3e);
	size_t strtab = rd64(e + shoff + (uint64_t)stri * ent + 24);
	for (uint16_t i = 0; i < n; i++) {
		const uint8_t *h = e + shoff + (uint64_t)i * ent;
		if (strcmp((const char *)e + strtab + rd32(h), name) == 0) {
			*s = (struct sec){shoff + (uint64_t)i * ent, rd64(h + 24), rd64(h + 32)};
			return true;
		}
	}
	return false;
}

/* The offsets of the first record with attribute attr in a .nv.info section. */
static size_t find_attr(const uint8_t *e, const struct sec *s, uint8_t attr, unsigned nth)
{
	size_t p = s->off, end = s->off + s->size;
	while (p < end) {
		uint8_t fmt = e[p], a = e[p + 1];
		if (a == attr && nth-- == 0)
			return p;
		p += fmt == 4 ? 4 + rd16(e + p + 2) : 4;
	}
	fail_msg("attribute 0x%x not found", attr);
	return 0;
}

static int parse_cubin(const struct buf *c, bool with_ptx, struct xgpu_fatbin_info *info)
{
	struct fb f;
	fb_init(&f);
	fb_add(&f, 2, 0, c->d, c->len, 0);
	if (with_ptx) {
		struct buf p = ptx_text();
		fb_add(&f, 1, 0, p.d, p.len + 1, 0);
		free(p.d);
	}
	int r = parse(f.d, f.len, info);
	free(f.d);
	return r;
}

static void expect_cubin_fail(const struct buf *c, const char *what)
{
	struct xgpu_fatbin_info info;
	if (parse_cubin(c, false, &info) != -1)
		fail_msg("accepted: %s", what);
}

static void test_crafted_cubins(void **state)
{
	struct buf orig = cubin();
	struct buf c = {malloc(orig.len), orig.len};
	struct xgpu_fatbin_info info;
	struct sec info_mixed, symtab, strtab;
	assert_true(find_sec(orig.d, ".nv.info._Z7k_mixedcdsifcxsPd", &info_mixed));
	assert_true(find_sec(orig.d, ".symtab", &symtab));
	assert_true(find_sec(orig.d, ".strtab", &strtab));
	size_t kp0 = find_attr(orig.d, &info_mixed, 0x17, 0);
	size_t kp1 = find_attr(orig.d, &info_mixed, 0x17, 1);
	size_t cb = find_attr(orig.d, &info_mixed, 0x19, 0);
	uint16_t shnum = rd16(orig.d + 0x3c);
	uint64_t shoff = rd64(orig.d + 0x28);

#define RESET() memcpy(c.d, orig.d, orig.len)
#define EXPECT_FAIL(what) expect_cubin_fail(&c, what)

	RESET();
	assert_int_equal(parse_cubin(&c, false, &info), 0);
	check_all(&info);
	xgpu_fatbin_free(&info);

	RESET();
	c.d[4] = 1;
	EXPECT_FAIL("ELF32");
	RESET();
	c.d[5] = 2;
	EXPECT_FAIL("big-endian");
	RESET();
	wr16(c.d + 18, 62);
	EXPECT_FAIL("x86-64 machine");
	RESET();
	wr64(c.d + 0x28, c.len);
	EXPECT_FAIL("e_shoff at the end");
	RESET();
	wr64(c.d + 0x28, UINT64_MAX - 10);
	EXPECT_FAIL("e_shoff huge");
	RESET();
	wr16(c.d + 0x3c, 0xfff0);
	EXPECT_FAIL("e_shnum huge");
	RESET();
	wr16(c.d + 0x3a, 8);
	EXPECT_FAIL("e_shentsize small");
	RESET();
	wr16(c.d + 0x3e, shnum);
	EXPECT_FAIL("e_shstrndx out of range");
	RESET();
	wr64(c.d + symtab.hdr + 24, c.len - 8);
	EXPECT_FAIL("symtab past the end");
	RESET();
	wr64(c.d + symtab.hdr + 32, UINT64_MAX);
	EXPECT_FAIL("symtab size huge");
	RESET();
	wr64(c.d + symtab.hdr + 56, 4);
	EXPECT_FAIL("symtab entsize small");
	RESET();
	wr32(c.d + symtab.hdr + 40, 0xffff);
	EXPECT_FAIL("symtab link out of range");
	RESET();
	wr64(c.d + strtab.hdr + 32, 1);
	EXPECT_FAIL("names outside strtab");
	RESET();
	wr64(c.d + info_mixed.hdr + 32, UINT64_MAX - 2);
	EXPECT_FAIL(".nv.info size huge");
	RESET();
	wr16(c.d + kp0 + 8, 100);
	EXPECT_FAIL("ordinal out of range");
	RESET();
	wr16(c.d + kp0 + 8, rd16(c.d + kp1 + 8));
	EXPECT_FAIL("ordinal repeated");
	/* KPARAM_INFO payload: u32 index, u16 ordinal, u16 offset, u32 size
	 * word; the first record is the last parameter's, moved here onto
	 * the first. */
	RESET();
	wr16(c.d + kp0 + 10, 0);
	EXPECT_FAIL("parameters overlap");
	RESET();
	wr16(c.d + cb + 2, 57);
	EXPECT_FAIL("cbank size mismatch");
	RESET();
	wr16(c.d + kp0 + 2, 0xfff0);
	EXPECT_FAIL("record past the section");
	RESET();
	c.d[kp0] = 9;
	EXPECT_FAIL("unknown record format");
	RESET();
	wr16(c.d + kp0 + 2, 4);
	EXPECT_FAIL("KPARAM_INFO too short");

	/* A kernel whose cubin lists no parameters but declares a buffer is
	 * not described there; the PTX then describes it. */
	RESET();
	for (unsigned i = 0; i < expected[1].nparams; i++)
		c.d[find_attr(orig.d, &info_mixed, 0x17, i) + 1] = 0x7f;
	assert_int_equal(parse_cubin(&c, false, &info), 0);
	assert_int_equal(info.nkernels, NKERNELS - 1);
	assert_null(xgpu_fatbin_find(&info, expected[1].name));
	xgpu_fatbin_free(&info);
	assert_int_equal(parse_cubin(&c, true, &info), 0);
	check_all(&info);
	xgpu_fatbin_free(&info);

	/* Nor is one without a .nv.info section. */
	RESET();
	struct sec shstr;
	assert_true(find_sec(orig.d, ".shstrtab", &shstr));
	uint8_t *nm = memmem(c.d + shstr.off, shstr.size, ".nv.info._Z7k_mixed", 19);
	assert_non_null(nm);
	nm[1] = 'X';
	assert_int_equal(parse_cubin(&c, false, &info), 0);
	assert_int_equal(info.nkernels, NKERNELS - 1);
	assert_null(xgpu_fatbin_find(&info, expected[1].name));
	xgpu_fatbin_free(&info);
	assert_int_equal(parse_cubin(&c, true, &info), 0);
	check_all(&info);
	xgpu_fatbin_free(&info);

	/* No entry marks: no kernels. */
	RESET();
	for (size_t s = symtab.off; s + 24 <= symtab.off + symtab.size; s += 24)
		c.d[s + 5] &= (uint8_t)~0x10;
	assert_int_equal(parse_cubin(&c, false, &info), 0);
	assert_int_equal(info.nkernels, 0);
	xgpu_fatbin_free(&info);

	/* Extended numbering (section count and name table index in section
	 * 0) reads the same. */
	RESET();
	wr16(c.d + 0x3c, 0);
	wr64(c.d + shoff + 32, shnum);
	wr32(c.d + shoff + 40, rd16(orig.d + 0x3e));
	wr16(c.d + 0x3e, 0xffff);
	assert_int_equal(parse_cubin(&c, false, &info), 0);
	check_all(&info);
	xgpu_fatbin_free(&info);
	wr64(c.d + shoff + 32, 0xffffffffffull);
	EXPECT_FAIL("extended section count huge");

	/* Byte flips all over the cubin, uncompressed so they reach the ELF
	 * parser. */
	for (int iter = 0; iter < 3000; iter++) {
		RESET();
		int flips = 1 + (int)(rng() % 4);
		for (int i = 0; i < flips; i++) {
			size_t at;
			switch (rng() % 3) {
			case 0: /* headers */
				at = rng() % (rng() & 1 ? 64 : (size_t)(shnum * 64)) +
				     (rng() & 1 ? 0 : (size_t)shoff);
				break;
			case 1: /* the .nv.info records */
				at = info_mixed.off + rng() % info_mixed.size;
				break;
			default:
				at = rng() % c.len;
			}
			if (at < c.len)
				c.d[at] ^= (uint8_t)(1u << (rng() % 8));
		}
		if (parse_cubin(&c, false, &info) == 0)
			xgpu_fatbin_free(&info);
	}
#undef RESET
#undef EXPECT_FAIL
	free(c.d);
	free(orig.d);
}

/* ---- inflation budget ----------------------------------------------------------- */

/* A zstd frame of n bytes: a cubin header with no sections (ELF) or an
 * entry without parameters (PTX), then zeros. */
static struct buf zeros_frame(uint16_t kind, size_t n)
{
	uint8_t *raw = calloc(1, n);
	if (kind == 2) {
		memcpy(raw, "\177ELF\2\1\1", 7);
		wr16(raw + 18, 190);
	} else {
		strcpy((char *)raw, ".entry k_budget()\n");
	}
	size_t cap = ZSTD_compressBound(n);
	struct buf z = {malloc(cap), 0};
	z.len = ZSTD_compress(z.d, cap, raw, n, 1);
	assert_false(ZSTD_isError(z.len));
	free(raw);
	return z;
}

/* Each entry may inflate to XGPU_FATBIN_MAX_UNCOMPRESSED, but all of them
 * together to xgpu_fatbin_max_inflated() only, ELF and PTX alike: 20 entries
 * of 16 KiB, each inflating to 512 MiB, once took 24 s to parse. The bound
 * is a setting: the default, then one set by the setter (as the executor
 * does from xgpud's --fatbin-inflate-limit), then one from the environment
 * (as the simulated driver's copy reads it). */
static void inflate_budget(uint64_t budget, const char *budget_text)
{
	const size_t each = 64u << 20, fits = budget / each;
	assert_int_equal(xgpu_fatbin_max_inflated(), budget);
	assert_int_equal(fits * each, budget);
	struct buf elf = zeros_frame(2, each), ptx = zeros_frame(1, each);
	struct {
		size_t nelf, nptx;
		int want;
	} cases[] = {
	    {fits, 0, 0},      /* exactly the budget */
	    {fits + 1, 0, -1}, /* one entry past it */
	    {fits - 1, 2, -1}, /* ... the last one PTX */
	    {fits - 1, 1, 0},  /* PTX counts the same */
	    {20, 20, -1},      /* many more */
	    {fits, 0, -1},     /* then a corrupt one, see below */
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct fb f;
		fb_init(&f);
		for (size_t j = 0; j < cases[i].nelf; j++)
			fb_add(&f, 2, 0x8000, elf.d, elf.len, each);
		for (size_t j = 0; j < cases[i].nptx; j++)
			fb_add(&f, 1, 0x8000, ptx.d, ptx.len, each);
		/* The budget is charged before inflating: past it, garbage is
		 * refused for the budget, not found corrupt by inflating it. */
		if (i == sizeof(cases) / sizeof(cases[0]) - 1)
			fb_add(&f, 2, 0x8000, "\x28\xb5\x2f\xfd garbage", 12, each);
		assert_true(f.len < 256 * 1024); /* a few KiB per entry */
		struct xgpu_fatbin_info info;
		char err[256];
		int r = xgpu_fatbin_parse(f.d, f.len, &info, err, sizeof(err));
		if (r != cases[i].want)
			fail_msg("case %zu: got %d (%s)", i, r, r ? err : "");
		if (r == 0) {
			assert_int_equal(info.nkernels, cases[i].nptx ? 1 : 0);
			xgpu_fatbin_free(&info);
		} else {
			char want[64];
			snprintf(want, sizeof want, "inflate to more than %s in all", budget_text);
			if (!strstr(err, want))
				fail_msg("case %zu: %s, not naming %s", i, err, budget_text);
			assert_null(info.kernels);
		}
		free(f.d);
	}
	free(elf.d);
	free(ptx.d);
}

static void test_inflate_budget(void **state)
{
	(void)state;
	unsetenv(XGPU_FATBIN_INFLATE_ENV);
	xgpu_fatbin_set_max_inflated(0);
	inflate_budget(XGPU_FATBIN_DEFAULT_MAX_INFLATED, "512 MiB");
	xgpu_fatbin_set_max_inflated(128u << 20);
	inflate_budget(128u << 20, "128 MiB");
	xgpu_fatbin_set_max_inflated(0);
	setenv(XGPU_FATBIN_INFLATE_ENV, "256M", 1);
	inflate_budget(256u << 20, "256 MiB");
	unsetenv(XGPU_FATBIN_INFLATE_ENV);
	assert_int_equal(xgpu_fatbin_max_inflated(), XGPU_FATBIN_DEFAULT_MAX_INFLATED);
}

/* ---- kernel names ------------------------------------------------------------------ */

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A fatbin holding one minimal cubin: nsym kernel symbols named name and
 * nsec empty sections named .nv.info.<name>, each with its own copy of the
 * name in its string table, or all pointing at one copy if shared. */
static struct fb synth_cubin(const char *name, size_t nsym, size_t nsec, bool shared)
{
	static const char fixed[] = "\0.shstrtab\0.strtab\0.symtab"; /* 27 bytes with the last NUL */
	size_t len = strlen(name), nstr = shared ? 1 : nsym, nshs = shared ? 1 : nsec;
	size_t strtab_len = 1 + nstr * (len + 1), shstr_len = sizeof(fixed) + nshs * (9 + len + 1);
	size_t strtab = 64, shstr = strtab + strtab_len, symtab = (shstr + shstr_len + 7) & ~(size_t)7;
	size_t symtab_len = 24 * (nsym + 1), shoff = symtab + symtab_len, shnum = 4 + nsec;
	assert_true(shnum < 0xff00);
	size_t elen = shoff + 64 * shnum;
	uint8_t *d = calloc(1, elen);
	memcpy(d, "\177ELF\2\1\1", 7);
	wr16(d + 18, 190);
	wr64(d + 0x28, shoff);
	wr16(d + 0x3a, 64);
	wr16(d + 0x3c, (uint16_t)shnum);
	wr16(d + 0x3e, 1);
	for (size_t i = 0; i < nstr; i++)
		memcpy(d + strtab + 1 + i * (len + 1), name, len);
	memcpy(d + shstr, fixed, sizeof(fixed));
	for (size_t i = 0; i < nshs; i++) {
		uint8_t *p = d + shstr + sizeof(fixed) + i * (10 + len);
		memcpy(p, ".nv.info.", 9);
		memcpy(p + 9, name, len);
	}
	for (size_t i = 1; i <= nsym; i++) {
		uint8_t *s = d + symtab + 24 * i;
		wr32(s, (uint32_t)(1 + (shared ? 0 : (i - 1) * (len + 1))));
		s[4] = 0x12; /* global function */
		s[5] = 0x10; /* CUDA entry */
		wr16(s + 6, 1);
	}
	uint8_t *sh = d + shoff;
	wr32(sh + 64, 1); /* .shstrtab */
	wr32(sh + 68, 3);
	wr64(sh + 88, shstr);
	wr64(sh + 96, shstr_len);
	wr32(sh + 128, 11); /* .strtab */
	wr32(sh + 132, 3);
	wr64(sh + 152, strtab);
	wr64(sh + 160, strtab_len);
	wr32(sh + 192, 19); /* .symtab */
	wr32(sh + 196, 2);
	wr64(sh + 216, symtab);
	wr64(sh + 224, symtab_len);
	wr32(sh + 232, 2);
	wr64(sh + 248, 24);
	for (size_t i = 0; i < nsec; i++) {
		uint8_t *h = sh + 64 * (4 + i);
		wr32(h, (uint32_t)(sizeof(fixed) + (shared ? 0 : i * (10 + len))));
		wr32(h + 4, 0x70000000); /* empty .nv.info: no parameters */
	}
	struct fb f;
	fb_init(&f);
	fb_add(&f, 2, 0, d, elen, 0);
	free(d);
	return f;
}

static char *name_of(size_t len, char ch)
{
	char *s = malloc(len + 1);
	memset(s, ch, len);
	s[len] = '\0';
	return s;
}

/* One kernel named many times, and as many .nv.info sections naming it:
 * each section once walked back over every copy of the name (16000
 * sections x 16000 symbols x 256 bytes took 4.6 s; 20000 x 20000 x 60000
 * bytes, all at one name, 250 s). Now the names are deduplicated once and
 * must fit in their tables; names are at most XGPU_FATBIN_MAX_NAME. */
static void test_repeated_names(void **state)
{
	char *name = name_of(256, 'k');
	struct fb f = synth_cubin(name, 16000, 16000, false);
	struct xgpu_fatbin_info info;
	double t0 = now_s();
	assert_int_equal(parse(f.d, f.len, &info), 0);
	double took = now_s() - t0;
	if (took > 1.0)
		fail_msg("repeated names took %.2f s", took);
	assert_int_equal(info.nkernels, 1);
	assert_string_equal(info.kernels[0].name, name);
	assert_int_equal(info.kernels[0].nparams, 0);
	xgpu_fatbin_free(&info);
	free(f.d);
	free(name);

	/* All at one copy of a long name: more name than table, refused. */
	name = name_of(60000, 'k');
	f = synth_cubin(name, 20000, 20000, true);
	char err[256];
	t0 = now_s();
	assert_int_equal(xgpu_fatbin_parse(f.d, f.len, &info, err, sizeof(err)), -1);
	assert_true(now_s() - t0 < 1.0);
	assert_non_null(strstr(err, "overlap"));
	free(f.d);
	/* Only the sections at one copy. */
	f = synth_cubin(name, 1, 3, true);
	assert_int_equal(xgpu_fatbin_parse(f.d, f.len, &info, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "section names overlap"));
	free(f.d);
	free(name);

	/* A section name running off the end of its table. */
	name = name_of(100, 'r');
	f = synth_cubin(name, 1, 1, false);
	uint8_t *elf = f.d + 16 + 64, *shs = elf + rd64(elf + 0x28) + 64; /* .shstrtab */
	wr64(shs + 32, rd64(shs + 32) - 1);
	assert_int_equal(xgpu_fatbin_parse(f.d, f.len, &info, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "runs past its table"));
	free(f.d);
	free(name);

	/* Names up to 64 KiB, in cubins and in PTX. */
	for (int over = 0; over <= 1; over++) {
		name = name_of(XGPU_FATBIN_MAX_NAME + (size_t)over, 'n');
		f = synth_cubin(name, 1, 1, false);
		int r = xgpu_fatbin_parse(f.d, f.len, &info, err, sizeof(err));
		assert_int_equal(r, over ? -1 : 0);
		if (over) {
			assert_non_null(strstr(err, "longer than 65536 bytes"));
		} else {
			assert_int_equal(info.nkernels, 1);
			assert_int_equal(strlen(info.kernels[0].name), XGPU_FATBIN_MAX_NAME);
			xgpu_fatbin_free(&info);
		}
		free(f.d);
		char *text = malloc(strlen(name) + 16);
		sprintf(text, ".entry %s()", name);
		r = parse_ptx(text, &info);
		assert_int_equal(r, over ? -1 : 0);
		if (!over)
			xgpu_fatbin_free(&info);
		free(text);
		free(name);
	}
}

/* ---- device variables -------------------------------------------------------------------- */

#define K_GLOBALS "_Z9k_globalsPxi"
/* What fatbin_globals.cu declares, summed by hand: __device__ 4 + 4 + 4000
 * + 24 + 16 + 16 + 48 + 8 + 1 GiB, __managed__ 4 + 400, the static 4,
 * __constant__ 4 + 4 + 1024 + 24. PTX declares exactly these; a cubin adds
 * .nv.constant4 (8 bytes per variable whose address the code loads) and
 * alignment padding. */
#define VARS_BYTES ((1ull << 30) + 5584)
#define HUGE_BYTES (1ull << 32)
#define CUBIN_SLACK 1024

static uint64_t globals_of(const void *d, size_t len)
{
	struct xgpu_fatbin_info info;
	char err[256];
	if (xgpu_fatbin_parse(d, len, &info, err, sizeof(err)) != 0)
		fail_msg("parse failed: %s", err);
	check_sane(&info);
	assert_non_null(xgpu_fatbin_find(&info, K_GLOBALS));
	uint64_t g = info.global_bytes;
	xgpu_fatbin_free(&info);
	return g;
}

static void expect_between(uint64_t got, uint64_t lo, uint64_t hi, const char *what)
{
	if (got < lo || got > hi)
		fail_msg("%s: global_bytes %llu, want %llu to %llu", what, (unsigned long long)got,
			 (unsigned long long)lo, (unsigned long long)hi);
}

/* nvcc-built modules: SASS, PTX, sm_100 SASS (with .nv.merc copies, which
 * must not count twice), and a 4 GiB array: ptxas writes the sm_90 cubin's
 * .nv.global with a size of about 1 GiB (the true size modulo 2^32) but
 * the symbol with its full size. */
static void test_globals_nvcc(void **state)
{
	static const struct {
		const char *v;
		uint64_t lo, hi;
	} want[] = {
	    {"sm90", VARS_BYTES, VARS_BYTES + CUBIN_SLACK},
	    {"ptx", VARS_BYTES, VARS_BYTES},
	    {"sm100", VARS_BYTES, VARS_BYTES + CUBIN_SLACK},
	    {"huge", VARS_BYTES + HUGE_BYTES, VARS_BYTES + HUGE_BYTES + CUBIN_SLACK},
	    {"hugeptx", VARS_BYTES + HUGE_BYTES, VARS_BYTES + HUGE_BYTES},
	};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		struct buf *b = gvariant(want[i].v);
		expect_between(globals_of(b->d, b->len), want[i].lo, want[i].hi, want[i].v);
		/* Each entry alone: the SASS at least what PTX declares. */
		struct entry es[8];
		size_t n = entries(b, es, 8);
		for (size_t j = 0; j < n; j++) {
			struct fb f;
			fb_init(&f);
			fb_copy(&f, &es[j]);
			uint64_t lo = want[i].lo, hi = es[j].kind == 1 ? lo : lo + CUBIN_SLACK;
			expect_between(globals_of(f.d, f.len), lo, hi, want[i].v);
			free(f.d);
		}
	}
	/* The module's figure is its largest entry's, not their sum. */
	struct buf *b = gvariant("sm90");
	const char *small = ".global .b8 a[100];", *large = ".global .b8 b[300];";
	struct fb f;
	fb_init(&f);
	fb_add(&f, 1, 0, small, strlen(small) + 1, 0);
	fb_add(&f, 1, 0, large, strlen(large) + 1, 0);
	fb_add(&f, 1, 0, small, strlen(small) + 1, 0);
	struct xgpu_fatbin_info info;
	assert_int_equal(parse(f.d, f.len, &info), 0);
	assert_int_equal(info.global_bytes, 300);
	xgpu_fatbin_free(&info);
	assert_int_equal(info.global_bytes, 0);
	struct entry es[8];
	size_t n = entries(b, es, 8);
	for (size_t j = 0; j < n; j++)
		fb_copy(&f, &es[j]);
	expect_between(globals_of(f.d, f.len), VARS_BYTES, VARS_BYTES + CUBIN_SLACK, "mixed");
	free(f.d);
}

/* The uncompressed cubin of a globals variant. */
static struct buf gcubin(const char *v)
{
	struct entry es[8];
	size_t n = entries(gvariant(v), es, 8);
	for (size_t i = 0; i < n; i++)
		if (es[i].kind == 2) {
			assert_int_equal(es[i].flags & 0xa000, 0);
			struct buf b = {malloc(es[i].psize), es[i].psize};
			memcpy(b.d, es[i].payload, b.len);
			return b;
		}
	fail_msg("no cubin in globals_%s", v);
	return (struct buf){NULL, 0};
}

/* The offset of the symbol named name in .symtab. */
static size_t find_sym(const uint8_t *e, const char *name)
{
	struct sec sym, str;
	assert_true(find_sec(e, ".symtab", &sym));
	assert_true(find_sec(e, ".strtab", &str));
	for (size_t s = sym.off; s + 24 <= sym.off + sym.size; s += 24)
		if (strcmp((const char *)e + str.off + rd32(e + s), name) == 0)
			return s;
	fail_msg("no symbol %s", name);
	return 0;
}

static uint64_t cubin_globals(const struct buf *c)
{
	struct fb f;
	fb_init(&f);
	fb_add(&f, 2, 0, c->d, c->len, 0);
	uint64_t g = globals_of(f.d, f.len);
	free(f.d);
	return g;
}

/* Hostile section and symbol sizes: saturated, never wrapped; sections
 * renamed or emptied still counted by what their symbols say. */
static void test_globals_crafted(void **state)
{
	struct buf orig = gcubin("sm90");
	struct buf c = {malloc(orig.len), orig.len};
	struct sec glob, init, c3, c0, shstr;
	assert_true(find_sec(orig.d, ".nv.global", &glob));
	assert_true(find_sec(orig.d, ".nv.global.init", &init));
	assert_true(find_sec(orig.d, ".nv.constant3", &c3));
	assert_true(find_sec(orig.d, ".nv.constant0." K_GLOBALS, &c0));
	assert_true(find_sec(orig.d, ".shstrtab", &shstr));
	size_t big = find_sym(orig.d, "big");
	memcpy(c.d, orig.d, c.len);
	const uint64_t base = cubin_globals(&c);
	expect_between(base, VARS_BYTES, VARS_BYTES + CUBIN_SLACK, "base");
	assert_int_equal(rd64(orig.d + big + 16), 1u << 30);

#define RESET() memcpy(c.d, orig.d, orig.len)
	/* .nv.global claiming nothing: its symbols still reach 1 GiB. */
	RESET();
	wr64(c.d + glob.hdr + 32, 0);
	assert_int_equal(cubin_globals(&c), base);
	/* ... and a symbol reaching past the section's end. */
	RESET();
	wr64(c.d + big + 16, 1ull << 40);
	assert_true(cubin_globals(&c) >= (1ull << 40) + rd64(orig.d + big + 8));
	/* Sizes that overflow when added, alone or together. */
	RESET();
	wr64(c.d + glob.hdr + 32, UINT64_MAX);
	assert_true(cubin_globals(&c) == UINT64_MAX);
	RESET();
	wr64(c.d + init.hdr + 32, (1ull << 63) + 1);
	wr64(c.d + c3.hdr + 32, 1ull << 63);
	assert_true(cubin_globals(&c) == UINT64_MAX);
	RESET();
	wr64(c.d + big + 8, UINT64_MAX - 10);
	assert_true(cubin_globals(&c) == UINT64_MAX);
	/* A kernel's parameter bank is not a variable. */
	RESET();
	wr64(c.d + c0.hdr + 32, 1ull << 40);
	assert_int_equal(cubin_globals(&c), base);
	/* .nv.global under a name of its own is still allocated NOBITS. */
	RESET();
	uint8_t *nm = c.d + shstr.off + rd32(orig.d + glob.hdr);
	assert_memory_equal(nm, ".nv.global", 11);
	nm[5] = 'X';
	assert_int_equal(cubin_globals(&c), base);
	/* A common symbol counts on top. */
	RESET();
	wr16(c.d + big + 6, 0xfff2);
	assert_int_equal(cubin_globals(&c), base + (1ull << 30));
	/* Symbols placed in a variable section through the extended index
	 * table count as the others: .nv.global emptied, big's index moved
	 * there (an SHT_SYMTAB_SHNDX made of the .nv.info section, whose
	 * header now links to .symtab). */
	RESET();
	wr64(c.d + glob.hdr + 32, 0);
	wr16(c.d + big + 6, 0xffff);
	struct sec sym;
	assert_true(find_sec(orig.d, ".symtab", &sym));
	size_t nsym = sym.size / 24, xsize = 4 * nsym;
	uint64_t shoff = rd64(orig.d + 0x28);
	uint16_t globi = (uint16_t)((glob.hdr - shoff) / 64), symi = (uint16_t)((sym.hdr - shoff) / 64);
	struct buf x = {malloc(orig.len + xsize), orig.len + xsize};
	memcpy(x.d, c.d, c.len);
	memset(x.d + c.len, 0, xsize);
	wr32(x.d + c.len + 4 * ((big - sym.off) / 24), globi);
	struct sec info;
	assert_true(find_sec(orig.d, ".nv.info", &info));
	wr32(x.d + info.hdr + 4, 18);
	wr64(x.d + info.hdr + 24, c.len);
	wr64(x.d + info.hdr + 32, xsize);
	wr32(x.d + info.hdr + 40, symi);
	assert_true(cubin_globals(&x) >= (1ull << 30));
	/* Without the table, big is placed nowhere. */
	wr32(x.d + info.hdr + 4, 0x70000000);
	assert_true(cubin_globals(&x) < (1ull << 30));
	free(x.d);
#undef RESET

	/* sm_100: the .nv.merc copies are an alternative to what they copy,
	 * so whichever set is larger counts. */
	struct buf m = gcubin("sm100");
	struct sec minit, sinit;
	assert_true(find_sec(m.d, ".nv.merc.nv.global.init", &minit));
	assert_true(find_sec(m.d, ".nv.global.init", &sinit));
	assert_int_equal(minit.off, sinit.off);
	uint64_t mbase = cubin_globals(&m);
	expect_between(mbase, VARS_BYTES, VARS_BYTES + CUBIN_SLACK, "sm100");
	wr64(m.d + minit.hdr + 32, 1ull << 30);
	assert_int_equal(cubin_globals(&m), mbase - sinit.size + (1ull << 30));
	wr64(m.d + minit.hdr + 32, 0);
	assert_int_equal(cubin_globals(&m), mbase);
	free(m.d);
	free(c.d);
	free(orig.d);
}

static uint64_t ptx_globals(const char *text)
{
	struct xgpu_fatbin_info info;
	char err[256];
	struct fb f;
	fb_init(&f);
	fb_add(&f, 1, 0, text, strlen(text) + 1, 0);
	if (xgpu_fatbin_parse(f.d, f.len, &info, err, sizeof(err)) != 0)
		fail_msg("PTX did not parse: %s\n%s", err, text);
	free(f.d);
	uint64_t g = info.global_bytes;
	xgpu_fatbin_free(&info);
	return g;
}

/* PTX declarations in the forms ptxas accepts (checked with ptxas 13.0),
 * at module scope and in a body, and instructions that only mention a
 * state space; a string ending in a backslash (ptxas knows no escapes, so
 * it ends there) must not hide what follows. */
static void test_globals_ptx(void **state)
{
	const char *text = ".version 9.0\n.target sm_90\n.address_size 64\n"
			   ".file 1 \"a\\\"\n"
			   ".global .b8 hidden[1000]; // \"\n"                        /* 1000 */
			   ".global .u32 a;\n"                                        /* 4 */
			   ".visible .global .align 8 .b8 b[100];\n"                  /* 100 */
			   ".const .v4 .f32 c[2];\n"                                  /* 32 */
			   ".global .u32 p<10>;\n"                                    /* 40 */
			   ".global .b8 d[] = {1, 2, 3};\n"                           /* 3 */
			   ".global .s32 e[][2] = {{1, 2}, {3, 4}, {5, 6}};\n"        /* 24 */
			   ".global .b8 f[2][3][4];\n"                                /* 24 */
			   ".global .u64 g = generic(a), h[2] = {a, generic(b)+8};\n" /* 24 */
			   ".visible.global .b16 i;\n"                                /* 2 */
			   ".extern .global .b8 j[];\n"                               /* 0 */
			   ".global .attribute(.managed) .align 4 .u32 m[5];\n"       /* 20 */
			   ".global .b8 o[010], q[0x10], r[0b11], s[7U];\n"           /* 34 */
			   ".global .align 4 .v2 .u32 t[3];\n"                        /* 24 */
			   ".global .f32 fl = 0f3F800000;\n"                          /* 4 */
			   ".shared .align 4 .b8 sh[4096];\n"                         /* on chip */
			   "/* .global .b8 commented[1000]; */\n"
			   ".visible .entry k(.param .u64 .ptr .global .align 16 k_p0, .param .u32 k_p1)\n"
			   "{\n"
			   "\t.reg .b64 %rd<4>;\n\t.reg .b32 %r<4>;\n\t.reg .f32 %f<5>;\n"
			   "\t.global .align 4 .b8 inner[12];\n" /* 12 */
			   "\t.const .u32 cinner;\n"             /* 4 */
			   "\t.shared .align 4 .b8 sh2[64];\n"
			   "\tld.param.u64 %rd1, [k_p0];\n"
			   "\tcvta.to.global.u64 %rd2, %rd1;\n"
			   "\tld.global.u32 %r1, [%rd2];\n"
			   "\tst.global.v4.f32 [%rd2], {%f1, %f2, %f3, %f4};\n"
			   "\tld.const.u32 %r2, [cinner];\n"
			   "\tret;\n"
			   "}\n"
			   ".func (.param .b32 rv) fn(.param .b64 fp)\n{\n\tret;\n}\n";
	assert_int_equal(ptx_globals(text), 1351);

	/* Sizes that do not fit in 64 bits saturate. */
	static const char *const sat[] = {
	    ".global .b8 x[0xffffffffffffffff][2];",
	    ".global .b8 x[99999999999999999999999];",
	    ".global .v4 .b32 x<4294967296>[4294967296];",
	    ".global .b8 x[0x8000000000000000]; .const .b8 y[0x8000000000000000];",
	    ".global .b8 x[0x8000000000000000], y[0x8000000000000000];",
	    ".global .b8 x[] = {1, 2}; .global .b8 y[0xffffffffffffffff];",
	};
	for (size_t i = 0; i < sizeof(sat) / sizeof(sat[0]); i++)
		if (ptx_globals(sat[i]) != UINT64_MAX)
			fail_msg("not saturated: %s", sat[i]);

	/* What cannot be sized is refused, not guessed. */
	static const char *const bad[] = {
	    ".global .u32;",
	    ".global x;",
	    ".global .u32 x[a];",
	    ".global .u32 x",
	    ".global .foo x;",
	    ".global .u32 x[2][];",
	    ".global .u32 x = {1, 2;",
	    ".global .u32 x = 1) ;",
	    ".global .attribute .u32 x;",
	    ".global .attribute(.managed .u32 x;",
	    ".global .u32 x<>;",
	    ".global .u32 x<3;",
	    ".global .u32 x[-1];",
	    ".global .u32 x y;",
	    ".const .u32 .u64 x;",
	    ".global .align x .u32 y;",
	    ".global .u32 x[1",
	    ".entry k() { .global .u32 [x]; }",
	};
	struct xgpu_fatbin_info info;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (parse_ptx(bad[i], &info) != -1)
			fail_msg("accepted: %s", bad[i]);
	/* State spaces that declare nothing. */
	static const char *const none[] = {
	    ".entry k() { ld.global.u32 %r1, [%rd1]; cvta.to.global.u64 %rd2, %rd1; ld.const.f32 %f1, [c]; }",
	    ".entry k(.param .u64 .ptr .global .align 8 p) { ret; }",
	    ".extern .func (.param .b32 r) f(.param .u64 .ptr .global p);",
	    ".entry k() { isspacep.global %p1, %rd1; prefetch.global.L2 [%rd1]; }",
	};
	for (size_t i = 0; i < sizeof(none) / sizeof(none[0]); i++)
		if (ptx_globals(none[i]) != 0)
			fail_msg("counted: %s", none[i]);
}

/* The frontends' argument layout: each parameter where the image says,
 * zeros between, and a layout reaching outside its own size refused before
 * anything is written past it. */
static void test_pack_params(void **state)
{
	struct xgpu_kparam params[] = {{0, 4}, {8, 8}};
	struct xgpu_kernel_info k = {.name = (char *)"k", .nparams = 2, .params = params, .param_bytes = 16};
	uint32_t a = 0x11223344;
	uint64_t b = 0x5566778899aabbccull;
	void *args[] = {&a, &b};
	uint8_t buf[17];
	memset(buf, 0xee, sizeof buf);
	assert_int_equal(xgpu_fatbin_pack_params(&k, args, buf, 16), 0);
	assert_memory_equal(buf, &a, 4);
	assert_memory_equal(buf + 4, "\0\0\0\0", 4);
	assert_memory_equal(buf + 8, &b, 8);
	assert_int_equal(buf[16], 0xee);
	assert_int_equal(xgpu_fatbin_pack_params(&k, args, buf, 15), XGPU_KPARAMS_TOO_BIG);
	params[1].offset = 12; /* 12 + 8 > 16 */
	memset(buf, 0xee, sizeof buf);
	assert_int_equal(xgpu_fatbin_pack_params(&k, args, buf, sizeof buf), XGPU_KPARAMS_DAMAGED);
	assert_int_equal(buf[16], 0xee);
	params[1] = (struct xgpu_kparam){17, 0}; /* past the end, even empty */
	assert_int_equal(xgpu_fatbin_pack_params(&k, args, buf, sizeof buf), XGPU_KPARAMS_DAMAGED);
	struct xgpu_kernel_info none = {.name = (char *)"n"};
	assert_int_equal(xgpu_fatbin_pack_params(&none, NULL, buf, 0), 0);
}

/* cuModuleLoadData's image takes no length: cuimage reads at most max
 * bytes, even to find the magic (fuzz_drvimage's short-image-magic-overread). */
static void test_cuimage_short(void **state)
{
	char err[128];
	struct xgpu_cuimage img;
	for (size_t n = 0; n < 4; n++) {
		uint8_t *b = malloc(n ? n : 1);
		memcpy(b, "\x50\xed\x55\xba", n);
		err[0] = 0;
		assert_int_equal(xgpu_cuimage_read(b, n, &img, err, sizeof err), -1);
		assert_true(strlen(err) > 0);
		free(b);
	}
}

int main(void)
{
#define V(name)                                                                                              \
	{                                                                                                    \
		"layouts_" name, test_layouts, NULL, NULL, (void *)name                                      \
	}
	const struct CMUnitTest tests[] = {
	    V("none"),
	    V("all"),
	    V("default"),
	    V("lz4"),
	    V("size"),
	    V("balance"),
	    V("ptx"),
	    V("2arch"),
	    V("sm100"),
	    cmocka_unit_test(test_variant_codecs),
	    cmocka_unit_test(test_entries_alone),
	    cmocka_unit_test(test_size),
	    cmocka_unit_test(test_api_edges),
	    cmocka_unit_test(test_ptx_syntax),
	    cmocka_unit_test(test_ptx_malformed),
	    cmocka_unit_test(test_limits),
	    cmocka_unit_test(test_precedence),
	    cmocka_unit_test(test_truncated),
	    cmocka_unit_test(test_bad_headers),
	    cmocka_unit_test(test_zstd_lies),
	    cmocka_unit_test(test_corrupt_compressed),
	    cmocka_unit_test(test_random_flips),
	    cmocka_unit_test(test_crafted_cubins),
	    cmocka_unit_test(test_inflate_budget),
	    cmocka_unit_test(test_repeated_names),
	    cmocka_unit_test(test_globals_nvcc),
	    cmocka_unit_test(test_globals_crafted),
	    cmocka_unit_test(test_globals_ptx),
	    cmocka_unit_test(test_pack_params),
	    cmocka_unit_test(test_cuimage_short),
	};
#undef V
	return cmocka_run_group_tests_name("fatbin", tests, load_all, free_all);
}
