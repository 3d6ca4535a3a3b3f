/* SPDX-License-Identifier: Apache-2.0 */
/* test_ptx_ext.c - unit tests of the PTX interpreter's larger instruction
 * families (backend/simdrv/ptx_ext.c, ptx_half.c, ptx_tex.c): redux and
 * match over member masks (with divergence), f16/bf16 arithmetic against
 * hand-computed bit patterns, texture fetches and surface loads/stores over
 * objects the launch resolves (and faults for a handle that names none),
 * cp.async and mbarrier phases across warps. Each kernel is hand-written
 * PTX of the shape nvcc emits, run over host memory and checked against a
 * reference computed here.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h>

#include "simdrv/ptx.h"
#include "ptx_testlib.h"

#define HDR ".version 8.0\n.target sm_90\n.address_size 64\n"

static const struct ptx_kernel *kernel(const struct ptx_module *m, const char *name)
{
	const struct ptx_kernel *k = ptx_find(m, name);
	assert_non_null(k);
	if (k->unsupported[0])
		fprintf(stderr, "%s: unsupported: %s\n", name, k->unsupported);
	assert_int_equal(k->unsupported[0], 0);
	return k;
}

/* Objects the launch knows: handle 0x7e0 + i is objs[i]; surfaces 0x5f0 + i. */
static struct ptx_tex objs[4];
static bool lookup(void *arg, uint64_t h, int surface, struct ptx_tex *out)
{
	(void)arg;
	uint64_t b = surface ? 0x5f0 : 0x7e0;
	if (h < b || h >= b + 4 || !objs[h - b].width)
		return false;
	*out = objs[h - b];
	return true;
}

static CUresult run(const struct ptx_kernel *k, uint32_t grid, uint32_t block, const void *params,
		    uint32_t pbytes, struct ptx_region *mem, size_t nmem)
{
	struct ptx_launch l = {
	    .grid = {grid, 1, 1},
	    .block = {block, 1, 1},
	    .params = params,
	    .param_bytes = pbytes,
	    .mem = mem,
	    .nmem = nmem,
	    .object = lookup,
	};
	CUresult r = ptx_run(k, &l);
	if (r)
		fprintf(stderr, "ptx_run: %d: %s\n", (int)r, l.fault);
	return r;
}

/* ---- redux / match ------------------------------------------------------------------ */

/* out[4 tid + 0..3]: redux.add over the lanes of the same parity, redux.min.s32
 * of (16 - lane) over them, match.any of lane / 4 over all, and redux.or of
 * 1 << lane over lanes < 20 only (a divergent branch). */
static const char warp_ptx[] = HDR ".visible .entry warp(.param .u64 out)\n{\n"
				   "\t.reg .pred %p<3>;\n\t.reg .b32 %r<20>;\n\t.reg .b64 %rd<4>;\n"
				   "\tld.param.u64 %rd1, [out];\n"
				   "\tmov.u32 %r1, %tid.x;\n"
				   "\tmov.u32 %r2, %laneid;\n"
				   "\tmul.wide.u32 %rd2, %r1, 16;\n"
				   "\tadd.s64 %rd3, %rd1, %rd2;\n"
				   "\tand.b32 %r3, %r2, 1;\n"
				   "\tsetp.eq.u32 %p1, %r3, 1;\n"
				   "\tselp.b32 %r4, -1431655766, 1431655765, %p1;\n"
				   "\tmad.lo.s32 %r5, %r2, 3, 1;\n"
				   "\tredux.sync.add.s32 %r6, %r5, %r4;\n"
				   "\tst.global.u32 [%rd3], %r6;\n"
				   "\tsub.s32 %r7, 16, %r2;\n"
				   "\tredux.sync.min.s32 %r8, %r7, %r4;\n"
				   "\tst.global.u32 [%rd3+4], %r8;\n"
				   "\tshr.u32 %r9, %r2, 2;\n"
				   "\tmatch.any.sync.b32 %r10, %r9, -1;\n"
				   "\tst.global.u32 [%rd3+8], %r10;\n"
				   "\tmov.u32 %r11, 0;\n"
				   "\tsetp.ge.u32 %p2, %r2, 20;\n"
				   "\t@%p2 bra $L__skip;\n"
				   "\tshl.b32 %r12, 1, %r2;\n"
				   "\tredux.sync.or.b32 %r11, %r12, 1048575;\n"
				   "$L__skip:\n"
				   "\tst.global.u32 [%rd3+12], %r11;\n"
				   "\tret;\n}\n";

static void test_redux_match(void **state)
{
	(void)state;
	struct ptx_module *m = parse_ok(warp_ptx);
	const struct ptx_kernel *k = kernel(m, "warp");
	enum { T = 64 };
	static uint32_t out[T * 4];
	memset(out, 0xee, sizeof out);
	struct ptx_region mem[1] = {{0x10000, sizeof out, (uint8_t *)out}};
	uint64_t p = 0x10000;
	assert_int_equal(run(k, 1, T, &p, 8, mem, 1), CUDA_SUCCESS);
	for (uint32_t t = 0; t < T; t++) {
		uint32_t lane = t % 32, sum = 0;
		int32_t mn = INT32_MAX;
		for (uint32_t j = lane & 1; j < 32; j += 2) {
			sum += j * 3 + 1;
			if (16 - (int32_t)j < mn)
				mn = 16 - (int32_t)j;
		}
		assert_int_equal(out[t * 4], sum);
		assert_int_equal((int32_t)out[t * 4 + 1], mn);
		assert_int_equal(out[t * 4 + 2], 0xfu << (lane & ~3u));
		assert_int_equal(out[t * 4 + 3], lane < 20 ? 0xfffffu : 0);
	}
	ptx_free(m);
}

/* ---- half precision ---------------------------------------------------------------- */

/* out[i] = op(a[i], b[i], c[i]) for ops in a fixed order, each on b32 regs. */
static const char half_ptx[] =
    HDR ".visible .entry half(.param .u64 in, .param .u64 out)\n{\n"
	"\t.reg .pred %p<3>;\n\t.reg .b16 %h<8>;\n\t.reg .b32 %r<20>;\n\t.reg .b64 %rd<4>;\n"
	"\tld.param.u64 %rd1, [in];\n"
	"\tld.param.u64 %rd2, [out];\n"
	"\tld.global.u32 %r1, [%rd1];\n"
	"\tld.global.u32 %r2, [%rd1+4];\n"
	"\tld.global.u32 %r3, [%rd1+8];\n"
	"\tadd.f16x2 %r4, %r1, %r2;\n"
	"\tst.global.u32 [%rd2], %r4;\n"
	"\tmul.rn.f16x2 %r5, %r1, %r2;\n"
	"\tst.global.u32 [%rd2+4], %r5;\n"
	"\tfma.rn.f16x2 %r6, %r1, %r2, %r3;\n"
	"\tst.global.u32 [%rd2+8], %r6;\n"
	"\tsub.bf16x2 %r7, %r1, %r2;\n"
	"\tst.global.u32 [%rd2+12], %r7;\n"
	"\tsetp.lt.f16x2 %p1|%p2, %r1, %r2;\n"
	"\tselp.u32 %r8, 1, 0, %p1;\n"
	"\tselp.u32 %r9, 2, 0, %p2;\n"
	"\tor.b32 %r10, %r8, %r9;\n"
	"\tst.global.u32 [%rd2+16], %r10;\n"
	"\tmov.b32 {%h1, %h2}, %r1;\n"
	"\tmov.b32 {%h3, %h4}, %r2;\n"
	"\tneg.f16 %h5, %h1;\n"
	"\tmax.f16 %h6, %h2, %h4;\n"
	"\tmov.b32 %r11, {%h5, %h6};\n"
	"\tst.global.u32 [%rd2+20], %r11;\n"
	"\tmul.bf16 %h7, %h1, %h3;\n"
	"\tst.global.u16 [%rd2+24], %h7;\n"
	"\tret;\n}\n";

static void test_half(void **state)
{
	(void)state;
	struct ptx_module *m = parse_ok(half_ptx);
	const struct ptx_kernel *k = kernel(m, "half");
	struct {
		uint32_t a, b, c;
		uint32_t add, mul, fma, lt, negmax;
	} cases[] = {
	    /* lo: 1 + 2, 1 * 2, fma(1, 2, 0.5), hi: the same of 1.5, 2.5, 0.5 */
	    {0x3e003c00, 0x41004000, 0x38003800, 0x44004200, 0x43804000, 0x44404100, 3, 0x4100bc00},
	    /* lo: 2048 + 1 ties to even (2048); hi: 2048 + 3 ties to even (2052) */
	    {0x68006800, 0x42003c00, 0, 0x68026800, 0x6e006800, 0x6e006800, 0, 0x6800e800},
	    /* lo: NaN (canonical result, compares false); hi: 65504 + 2 rounds
	     * back, 65504 * 2 overflows to infinity */
	    {0x7bff7e00, 0x40003c00, 0, 0x7bff7fff, 0x7c007fff, 0x7c007fff, 0, 0x7bfffe00},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		uint32_t in[3] = {cases[i].a, cases[i].b, cases[i].c}, out[7] = {0};
		struct ptx_region mem[2] = {{0x10000, sizeof in, (uint8_t *)in},
					    {0x20000, sizeof out, (uint8_t *)out}};
		uint64_t p[2] = {0x10000, 0x20000};
		assert_int_equal(run(k, 1, 1, p, 16, mem, 2), CUDA_SUCCESS);
		assert_int_equal(out[0], cases[i].add);
		assert_int_equal(out[1], cases[i].mul);
		assert_int_equal(out[2], cases[i].fma);
		assert_int_equal(out[4], cases[i].lt);
		assert_int_equal(out[5], cases[i].negmax);
		/* bf16: reference in float, which holds bf16 sums and products of
		 * these exactly before the one rounding. */
		for (int h = 0; h < 2; h++) {
			uint32_t ua = (cases[i].a >> (16 * h) & 0xffff) << 16,
				 ub = (cases[i].b >> (16 * h) & 0xffff) << 16;
			float fa, fb;
			memcpy(&fa, &ua, 4);
			memcpy(&fb, &ub, 4);
			double d = (double)fa - (double)fb, pr = (double)fa * (double)fb;
			float r = (float)d, q = (float)pr;
			uint32_t ur, uq;
			memcpy(&ur, &r, 4);
			memcpy(&uq, &q, 4);
			/* round to nearest even at bit 16 */
			uint32_t exp = isnan(r) ? 0x7fff : (ur + 0x7fff + (ur >> 16 & 1)) >> 16;
			uint32_t expq = isnan(q) ? 0x7fff : (uq + 0x7fff + (uq >> 16 & 1)) >> 16;
			assert_int_equal(out[3] >> (16 * h) & 0xffff, exp);
			if (h == 0)
				assert_int_equal(out[6] & 0xffff, expq);
		}
	}
	ptx_free(m);
}

/* ---- textures and surfaces ------------------------------------------------------------ */

/* out[tid]: four results of one fetch per kernel, coordinates from in. */
#define TEXK(name, insn, ncrd)                                                                               \
	".visible .entry " name "(.param .u64 h, .param .u64 in, .param .u64 out)\n{\n"                      \
	"\t.reg .f32 %f<12>;\n\t.reg .b32 %r<12>;\n\t.reg .b64 %rd<8>;\n"                                    \
	"\tld.param.u64 %rd1, [h];\n"                                                                        \
	"\tld.param.u64 %rd2, [in];\n"                                                                       \
	"\tld.param.u64 %rd3, [out];\n"                                                                      \
	"\tmov.u32 %r1, %tid.x;\n"                                                                           \
	"\tmul.wide.u32 %rd4, %r1, 16;\n"                                                                    \
	"\tadd.s64 %rd5, %rd2, %rd4;\n"                                                                      \
	"\tadd.s64 %rd6, %rd3, %rd4;\n"                                                                      \
	"\tld.global.v4.f32 {%f1, %f2, %f3, %f4}, [%rd5];\n"                                                 \
	"\tld.global.v4.u32 {%r2, %r3, %r4, %r5}, [%rd5];\n" insn                                            \
	"\tst.global.v4.f32 [%rd6], {%f5, %f6, %f7, %f8};\n"                                                 \
	"\tret;\n}\n"

static const char tex_ptx[] =
    HDR TEXK("t2d", "\ttex.2d.v4.f32.f32 {%f5, %f6, %f7, %f8}, [%rd1, {%f1, %f2}];\n", 2)
	TEXK("t1di",
	     "\ttex.1d.v4.s32.s32 {%r6, %r7, %r8, %r9}, [%rd1, {%r2}];\n"
	     "\tmov.b32 %f5, %r6;\n\tmov.b32 %f6, %r7;\n\tmov.b32 %f7, %r8;\n\tmov.b32 %f8, %r9;\n",
	     1) TEXK("g2d", "\ttld4.r.2d.v4.f32.f32 {%f5, %f6, %f7, %f8}, [%rd1, {%f1, %f2}];\n", 2)
	    TEXK("a2d", "\ttex.a2d.v4.f32.f32 {%f5, %f6, %f7, %f8}, [%rd1, {%r2, %f2, %f3, %f3}];\n", 3)
		TEXK("q",
		     "\ttxq.width.b32 %r6, [%rd1];\n\ttxq.height.b32 %r7, [%rd1];\n"
		     "\tmov.b32 %f5, %r6;\n\tmov.b32 %f6, %r7;\n\tmov.b32 %f7, %r6;\n\tmov.b32 %f8, %r7;\n",
		     0);

static float texels[2][4][4]; /* two layers of 4 x 4 */

static void fetch(const struct ptx_kernel *k, uint64_t h, float crd[][4], float res[][4], int n,
		  CUresult want)
{
	static float out[16][4];
	memset(out, 0, sizeof out);
	struct ptx_region mem[3] = {{0x10000, sizeof texels, (uint8_t *)texels},
				    {0x20000, 16 * 16, (uint8_t *)crd},
				    {0x30000, sizeof out, (uint8_t *)out}};
	uint64_t p[3] = {h, 0x20000, 0x30000};
	assert_int_equal(run(k, 1, (uint32_t)n, p, 24, mem, 3), want);
	memcpy(res, out, (size_t)n * 16);
}

static void test_tex(void **state)
{
	(void)state;
	struct ptx_module *m = parse_ok(tex_ptx);
	for (int l = 0; l < 2; l++)
		for (int y = 0; y < 4; y++)
			for (int x = 0; x < 4; x++)
				texels[l][y][x] = (float)(100 * l + 10 * y + x);
	objs[0] = (struct ptx_tex){.base = 0x10000,
				   .pitch = 16,
				   .slice = 64,
				   .width = 4,
				   .height = 4,
				   .depth = 1,
				   .format = CU_AD_FORMAT_FLOAT,
				   .channels = 1,
				   .element_bytes = 4,
				   .address_mode = {CU_TR_ADDRESS_MODE_CLAMP, CU_TR_ADDRESS_MODE_CLAMP}};
	float crd[16][4], res[16][4];
	/* Point sampling, unnormalized, clamped. */
	const struct ptx_kernel *t2d = kernel(m, "t2d");
	float pts[][3] = {{0.5f, 0.5f, 0}, {3.9f, 1.2f, 13}, {-5, 2.5f, 20}, {9, 9, 33}};
	for (int i = 0; i < 4; i++)
		crd[i][0] = pts[i][0], crd[i][1] = pts[i][1];
	fetch(t2d, 0x7e0, crd, res, 4, CUDA_SUCCESS);
	for (int i = 0; i < 4; i++) {
		assert_true(res[i][0] == pts[i][2]);
		assert_true(res[i][1] == 0 && res[i][2] == 0);
	}
	/* Linear filtering: halfway between texels (1,1) and (2,1), then a
	 * bilinear point; border outside. */
	objs[0].linear_filter = true;
	crd[0][0] = 2.0f, crd[0][1] = 1.5f;
	crd[1][0] = 1.75f, crd[1][1] = 2.25f;
	fetch(t2d, 0x7e0, crd, res, 2, CUDA_SUCCESS);
	assert_true(fabsf(res[0][0] - 11.5f) < 1e-5f);
	assert_true(fabsf(res[1][0] - (1.25f + 17.5f)) < 1e-4f); /* x 1.25, y 1.75 */
	/* Normalized coordinates with wrap, point sampled. */
	objs[0].linear_filter = false;
	objs[0].normalized = true;
	objs[0].address_mode[0] = objs[0].address_mode[1] = CU_TR_ADDRESS_MODE_WRAP;
	crd[0][0] = 1.3f, crd[0][1] = -0.2f; /* x 0.3 -> 1, y 0.8 -> 3 */
	fetch(t2d, 0x7e0, crd, res, 1, CUDA_SUCCESS);
	assert_true(res[0][0] == 31);
	/* Border: the border colour. */
	objs[0].normalized = false;
	objs[0].address_mode[0] = objs[0].address_mode[1] = CU_TR_ADDRESS_MODE_BORDER;
	objs[0].border[0] = -7;
	crd[0][0] = -0.5f, crd[0][1] = 1;
	fetch(t2d, 0x7e0, crd, res, 1, CUDA_SUCCESS);
	assert_true(res[0][0] == -7);
	/* An object with no rows (a guest's pitch2D of height 0) faults, never
	 * divides by zero. */
	objs[2] = objs[0];
	objs[2].height = 0;
	objs[2].normalized = true;
	objs[2].address_mode[0] = objs[2].address_mode[1] = CU_TR_ADDRESS_MODE_WRAP;
	fetch(t2d, 0x7e2, crd, res, 1, CUDA_ERROR_ILLEGAL_ADDRESS);
	memset(&objs[2], 0, sizeof objs[2]);
	/* A handle that names no texture faults. */
	fetch(t2d, 0x7e3, crd, res, 1, CUDA_ERROR_ILLEGAL_ADDRESS);
	fetch(t2d, 0, crd, res, 1, CUDA_ERROR_ILLEGAL_ADDRESS);

	/* u8 texels read as normalized floats, and as integers by index. */
	static const uint8_t u8[8] = {0, 51, 255, 7, 1, 2, 3, 4};
	memcpy(texels, u8, sizeof u8);
	objs[1] = (struct ptx_tex){.base = 0x10000,
				   .pitch = 8,
				   .width = 2,
				   .height = 1,
				   .depth = 1,
				   .format = CU_AD_FORMAT_UNSIGNED_INT8,
				   .channels = 4,
				   .element_bytes = 4};
	crd[0][0] = 0.5f, crd[0][1] = 0;
	fetch(t2d, 0x7e1, crd, res, 1, CUDA_SUCCESS);
	assert_true(res[0][0] == 0 && fabsf(res[0][1] - 0.2f) < 1e-6f && res[0][2] == 1.0f);
	objs[1].read_int = true;
	uint32_t idx[2][4] = {{1, 0, 0, 0}, {5, 0, 0, 0}};
	fetch(kernel(m, "t1di"), 0x7e1, (float(*)[4])idx, res, 2, CUDA_SUCCESS);
	uint32_t got[4];
	memcpy(got, res[0], 16);
	assert_true(got[0] == 1 && got[1] == 2 && got[2] == 3 && got[3] == 4);
	memcpy(got, res[1], 16);
	assert_true(got[0] == 1 && got[3] == 4); /* clamped to the last texel */

	/* tld4 gathers the footprint's red channel. */
	for (int y = 0; y < 4; y++)
		for (int x = 0; x < 4; x++)
			texels[0][y][x] = (float)(10 * y + x);
	objs[0].address_mode[0] = objs[0].address_mode[1] = CU_TR_ADDRESS_MODE_CLAMP;
	crd[0][0] = 2.0f, crd[0][1] = 2.0f; /* footprint x 1..2, y 1..2 */
	fetch(kernel(m, "g2d"), 0x7e0, crd, res, 1, CUDA_SUCCESS);
	assert_true(res[0][0] == 21 && res[0][1] == 22 && res[0][2] == 12 && res[0][3] == 11);

	/* Layered: layer 1 of two. */
	for (int l = 0; l < 2; l++)
		for (int y = 0; y < 4; y++)
			for (int x = 0; x < 4; x++)
				texels[l][y][x] = (float)(100 * l + 10 * y + x);
	objs[0].depth = 2;
	objs[0].layered = true;
	uint32_t one = 1;
	memcpy(&crd[0][0], &one, 4);
	crd[0][1] = 2.5f, crd[0][2] = 3.5f;
	fetch(kernel(m, "a2d"), 0x7e0, crd, res, 1, CUDA_SUCCESS);
	assert_true(res[0][0] == 132);

	fetch(kernel(m, "q"), 0x7e0, crd, res, 1, CUDA_SUCCESS);
	memcpy(got, res[0], 16);
	assert_true(got[0] == 4 && got[1] == 4);
	ptx_free(m);
}

/* Each thread x, y: reads byte column 4 x of row y, stores it plus 1 to the
 * second surface; .trap outside, .zero reads zero. */
static const char surf_ptx[] = HDR ".visible .entry surf(.param .u64 s, .param .u64 d, .param .u32 off)\n{\n"
				   "\t.reg .b32 %r<12>;\n\t.reg .b64 %rd<4>;\n"
				   "\tld.param.u64 %rd1, [s];\n"
				   "\tld.param.u64 %rd2, [d];\n"
				   "\tld.param.u32 %r9, [off];\n"
				   "\tmov.u32 %r1, %tid.x;\n"
				   "\tmov.u32 %r2, %tid.y;\n"
				   "\tshl.b32 %r3, %r1, 2;\n"
				   "\tadd.s32 %r3, %r3, %r9;\n"
				   "\tsuld.b.2d.b32.zero {%r4}, [%rd1, {%r3, %r2}];\n"
				   "\tadd.s32 %r5, %r4, 1;\n"
				   "\tsust.b.2d.b32.trap [%rd2, {%r3, %r2}], {%r5};\n"
				   "\tsuq.width.b32 %r6, [%rd1];\n"
				   "\tret;\n}\n";

static void test_surf(void **state)
{
	(void)state;
	struct ptx_module *m = parse_ok(surf_ptx);
	const struct ptx_kernel *k = kernel(m, "surf");
	static uint32_t a[3][4], b[3][4];
	for (int y = 0; y < 3; y++)
		for (int x = 0; x < 4; x++)
			a[y][x] = (uint32_t)(10 * y + x);
	memset(b, 0, sizeof b);
	memset(objs, 0, sizeof objs);
	struct ptx_tex s = {.pitch = 16,
			    .slice = 48,
			    .width = 4,
			    .height = 3,
			    .depth = 1,
			    .format = CU_AD_FORMAT_UNSIGNED_INT32,
			    .channels = 1,
			    .element_bytes = 4};
	objs[0] = s, objs[0].base = 0x10000;
	objs[1] = s, objs[1].base = 0x20000;
	struct ptx_region mem[2] = {{0x10000, sizeof a, (uint8_t *)a}, {0x20000, sizeof b, (uint8_t *)b}};
	uint64_t p[3] = {0x5f0, 0x5f1, 0};
	struct ptx_launch l = {.grid = {1, 1, 1},
			       .block = {4, 3, 1},
			       .params = (const uint8_t *)p,
			       .param_bytes = 20,
			       .mem = mem,
			       .nmem = 2,
			       .object = lookup};
	assert_int_equal(ptx_run(k, &l), CUDA_SUCCESS);
	for (int y = 0; y < 3; y++)
		for (int x = 0; x < 4; x++)
			assert_int_equal(b[y][x], a[y][x] + 1);
	/* Shifted by one element: the last column's store is outside, .trap. */
	p[2] = 4;
	assert_int_equal(ptx_run(k, &l), CUDA_ERROR_ILLEGAL_ADDRESS);
	/* A texture handle is no surface. */
	p[2] = 0;
	p[0] = 0x7e0;
	assert_int_equal(ptx_run(k, &l), CUDA_ERROR_ILLEGAL_ADDRESS);
	ptx_free(m);
}

/* ---- cp.async and mbarrier -------------------------------------------------------------- */

/* 64 threads: each copies in[tid] to shared with cp.async (odd threads with
 * src-size 0: zero-filled), waits, then thread 0 inits an mbarrier for 64,
 * everyone arrives and waits for the phase; warp 1 sleeps on the barrier
 * while warp 0 has not arrived. Then thread 0 bulk-copies 256 bytes
 * guarded by the barrier's transaction count (phase 1). out[tid]: the
 * neighbour's shared value (after the barrier) plus the bulk copy's word. */
static const char async_ptx[] =
    HDR ".visible .entry async(.param .u64 in, .param .u64 out)\n{\n"
	"\t.reg .pred %p<4>;\n\t.reg .b32 %r<20>;\n\t.reg .b64 %rd<12>;\n"
	"\t.shared .align 16 .b8 sm[256];\n"
	"\t.shared .align 16 .b8 bulk[256];\n"
	"\t.shared .align 8 .b64 bar;\n"
	"\tld.param.u64 %rd1, [in];\n"
	"\tld.param.u64 %rd2, [out];\n"
	"\tmov.u32 %r1, %tid.x;\n"
	"\tmul.wide.u32 %rd3, %r1, 4;\n"
	"\tadd.s64 %rd4, %rd1, %rd3;\n"
	"\tmov.u32 %r2, sm;\n"
	"\tshl.b32 %r3, %r1, 2;\n"
	"\tadd.s32 %r4, %r2, %r3;\n"
	"\tand.b32 %r5, %r1, 1;\n"
	"\txor.b32 %r5, %r5, 1;\n"
	"\tshl.b32 %r5, %r5, 2;\n"
	"\tcp.async.ca.shared.global [%r4], [%rd4], 4, %r5;\n"
	"\tcp.async.commit_group;\n"
	"\tcp.async.wait_group 0;\n"
	"\tmov.u32 %r6, bar;\n"
	"\tsetp.ne.s32 %p1, %r1, 0;\n"
	"\t@%p1 bra $L__a;\n"
	"\tmbarrier.init.shared.b64 [%r6], 64;\n"
	"$L__a:\n"
	"\tbar.sync 0;\n"
	"\tsetp.lt.u32 %p2, %r1, 32;\n"
	"\t@%p2 bra $L__arrive;\n"
	"\tmbarrier.arrive.shared.b64 %rd5, [%r6];\n"
	"\tbra.uni $L__wait;\n"
	"$L__arrive:\n"
	"\tmbarrier.arrive.shared.b64 %rd5, [%r6];\n"
	"$L__wait:\n"
	"\tmbarrier.try_wait.shared.b64 %p3, [%r6], %rd5;\n"
	"\t@!%p3 bra $L__wait;\n"
	"\txor.b32 %r7, %r1, 1;\n"
	"\tshl.b32 %r7, %r7, 2;\n"
	"\tadd.s32 %r7, %r2, %r7;\n"
	"\tld.shared.u32 %r8, [%r7];\n"
	/* phase 1: thread 0 arrives with 256 expected bytes and copies them */
	"\t@%p1 bra $L__b;\n"
	"\tmbarrier.arrive.expect_tx.shared.b64 %rd6, [%r6], 256;\n"
	"\tmov.u32 %r9, bulk;\n"
	"\tcp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r9], [%rd1], 256, [%r6];\n"
	"\tbra.uni $L__c;\n"
	"$L__b:\n"
	"\tmbarrier.arrive.shared.b64 %rd6, [%r6];\n"
	"$L__c:\n"
	"\tmbarrier.try_wait.parity.shared.b64 %p3, [%r6], 1;\n"
	"\t@!%p3 bra $L__c;\n"
	"\tmov.u32 %r10, bulk;\n"
	"\tadd.s32 %r10, %r10, %r3;\n"
	"\tld.shared.u32 %r11, [%r10];\n"
	"\tadd.s32 %r8, %r8, %r11;\n"
	"\tadd.s64 %rd7, %rd2, %rd3;\n"
	"\tst.global.u32 [%rd7], %r8;\n"
	"\tret;\n}\n";

static void test_async(void **state)
{
	(void)state;
	struct ptx_module *m = parse_ok(async_ptx);
	const struct ptx_kernel *k = kernel(m, "async");
	static uint32_t in[64], out[64];
	for (int i = 0; i < 64; i++)
		in[i] = (uint32_t)(1000 + i);
	struct ptx_region mem[2] = {{0x10000, sizeof in, (uint8_t *)in},
				    {0x20000, sizeof out, (uint8_t *)out}};
	uint64_t p[2] = {0x10000, 0x20000};
	assert_int_equal(run(k, 2, 64, p, 16, mem, 2), CUDA_SUCCESS);
	for (uint32_t t = 0; t < 64; t++) {
		uint32_t nb = t ^ 1, sh = (nb & 1) ? 0 : in[nb];
		assert_int_equal(out[t], sh + in[t]);
	}
	ptx_free(m);
}

/* ---- wmma --------------------------------------------------------------------------------- */

#define R8(p) "{" p "1, " p "2, " p "3, " p "4, " p "5, " p "6, " p "7, " p "8}"
#define R8B(p) "{" p "9, " p "10, " p "11, " p "12, " p "13, " p "14, " p "15, " p "16}"
#define MMA_HEAD(name)                                                                                       \
	".visible .entry " name "(.param .u64 a, .param .u64 b, .param .u64 c, .param .u64 d)\n{\n"          \
	"\t.reg .b32 %r<24>;\n\t.reg .f32 %f<20>;\n\t.reg .f64 %fd<8>;\n\t.reg .b64 %rd<6>;\n"               \
	"\tld.param.u64 %rd1, [a];\n\tld.param.u64 %rd2, [b];\n\tld.param.u64 %rd3, [c];\n"                  \
	"\tld.param.u64 %rd4, [d];\n"

/* D = 2 (A B + C): f16 inputs, f32 accumulator, scaled element-wise in the
 * fragment (what wmma programs do with x[i]); B column-major. */
static const char wmma_ptx[] = HDR MMA_HEAD("f16") "\twmma.load.a.sync.aligned.row.m16n16k16.global.f16 " R8(
    "%r") ", [%rd1], 16;\n"
	  "\twmma.load.b.sync.aligned.col.m16n16k16.global.f16 {%r9, %r10, %r11, %r12, %r13, %r14, %r15, "
	  "%r16}, "
	  "[%rd2], 16;\n"
	  "\twmma.load.c.sync.aligned.row.m16n16k16.global.f32 " R8(
	      "%f") ", [%rd3], 16;\n"
		    "\twmma.mma.sync.aligned.row.col.m16n16k16.f32.f32 " R8B("%f") ", " R8(
			"%r") ", "
			      "{%r9, %r10, %r11, %r12, %r13, %r14, %r15, %r16}, " R8(
				  "%f") ";\n"
					"\tmul.f32 %f9, %f9, 0f40000000;\n\tmul.f32 %f10, %f10, 0f40000000;\n"
					"\tmul.f32 %f11, %f11, 0f40000000;\n\tmul.f32 %f12, %f12, "
					"0f40000000;\n"
					"\tmul.f32 %f13, %f13, 0f40000000;\n\tmul.f32 %f14, %f14, "
					"0f40000000;\n"
					"\tmul.f32 %f15, %f15, 0f40000000;\n\tmul.f32 %f16, %f16, "
					"0f40000000;\n"
					"\twmma.store.d.sync.aligned.row.m16n16k16.global.f32 [%rd4], " R8B(
					    "%f") ", 16;\n"
						  "\tret;\n}\n" MMA_HEAD(
						      "u8") "\twmma.load.a.sync.aligned.row.m16n16k16.global."
							    "u8 {%r1, %r2}, [%rd1], 16;\n"
							    "\twmma.load.b.sync.aligned.col.m16n16k16.global."
							    "u8 {%r3, %r4}, [%rd2], 16;\n"
							    "\twmma.load.c.sync.aligned.row.m16n16k16.global."
							    "s32 {%r5, %r6, %r7, %r8, %r9, %r10, %r11, "
							    "%r12}, "
							    "[%rd3], 16;\n"
							    "\twmma.mma.sync.aligned.row.col.m16n16k16.s32."
							    "u8.u8.s32 {%r13, %r14, %r15, %r16, %r17, %r18, "
							    "%r19, "
							    "%r20}, {%r1, %r2}, {%r3, %r4}, {%r5, %r6, %r7, "
							    "%r8, %r9, %r10, %r11, %r12};\n"
							    "\twmma.store.d.sync.aligned.row.m16n16k16."
							    "global.s32 [%rd4], {%r13, %r14, %r15, %r16, "
							    "%r17, %r18, "
							    "%r19, %r20}, 16;\n"
							    "\tret;\n}\n" MMA_HEAD(
								"f64") "\twmma.load.a.sync.aligned.row."
								       "m8n8k4.f64 {%fd1}, [%rd1], 4;\n"
								       "\twmma.load.b.sync.aligned.col."
								       "m8n8k4.f64 {%fd2}, [%rd2], 4;\n"
								       "\twmma.load.c.sync.aligned.row."
								       "m8n8k4.f64 {%fd3, %fd4}, [%rd3], 8;\n"
								       "\twmma.mma.sync.aligned.row.col."
								       "m8n8k4.f64.f64.f64.f64.rn {%fd5, "
								       "%fd6}, {%fd1}, {%fd2}, {%fd3, "
								       "%fd4};\n"
								       "\twmma.store.d.sync.aligned.row."
								       "m8n8k4.f64 [%rd4], {%fd5, %fd6}, 8;\n"
								       "\tret;\n}\n";

static uint16_t half_of(int v) /* small integers, exactly */
{
	if (!v)
		return 0;
	int a = v < 0 ? -v : v, e = 0;
	while ((1 << (e + 1)) <= a)
		e++;
	return (uint16_t)((v < 0 ? 0x8000 : 0) | (e + 15) << 10 | ((a << (10 - e)) & 0x3ff));
}

static void mma_run(const struct ptx_kernel *k, void *a, size_t as, void *b, size_t bs, void *c, size_t cs,
		    void *d, size_t ds)
{
	struct ptx_region mem[4] = {{0x10000, as, a}, {0x20000, bs, b}, {0x30000, cs, c}, {0x40000, ds, d}};
	uint64_t p[4] = {0x10000, 0x20000, 0x30000, 0x40000};
	assert_int_equal(run(k, 1, 32, p, 32, mem, 4), CUDA_SUCCESS);
}

static void test_wmma(void **state)
{
	(void)state;
	struct ptx_module *m = parse_ok(wmma_ptx);
	static uint16_t ha[256], hb[256];
	static float fc[256], fd[256];
	for (int i = 0; i < 16; i++)
		for (int j = 0; j < 16; j++) {
			ha[i * 16 + j] = half_of((i + 2 * j) % 7 - 3);
			hb[j * 16 + i] = half_of((3 * i + j) % 5 - 2); /* B(i, j), column-major */
			fc[i * 16 + j] = (float)(i - j);
		}
	mma_run(kernel(m, "f16"), ha, sizeof ha, hb, sizeof hb, fc, sizeof fc, fd, sizeof fd);
	for (int i = 0; i < 16; i++)
		for (int j = 0; j < 16; j++) {
			int acc = i - j;
			for (int q = 0; q < 16; q++)
				acc += ((i + 2 * q) % 7 - 3) * ((3 * q + j) % 5 - 2);
			assert_true(fd[i * 16 + j] == 2.0f * (float)acc);
		}
	static uint8_t ua[256], ub[256];
	static int32_t ic[256], id[256];
	for (int i = 0; i < 256; i++)
		ua[i] = (uint8_t)(i * 37), ub[i] = (uint8_t)(i * 11 + 5), ic[i] = 1000 - i;
	mma_run(kernel(m, "u8"), ua, sizeof ua, ub, sizeof ub, ic, sizeof ic, id, sizeof id);
	for (int i = 0; i < 16; i++)
		for (int j = 0; j < 16; j++) {
			int32_t acc = ic[i * 16 + j];
			for (int q = 0; q < 16; q++)
				acc += ua[i * 16 + q] * ub[j * 16 + q];
			assert_int_equal(id[i * 16 + j], acc);
		}
	static double da[32], db[32], dc[64], dd[64];
	for (int i = 0; i < 32; i++)
		da[i] = 0.5 * i - 3, db[i] = 1.0 / (i + 1);
	for (int i = 0; i < 64; i++)
		dc[i] = i;
	mma_run(kernel(m, "f64"), da, sizeof da, db, sizeof db, dc, sizeof dc, dd, sizeof dd);
	for (int i = 0; i < 8; i++)
		for (int j = 0; j < 8; j++) {
			double acc = dc[i * 8 + j];
			for (int q = 0; q < 4; q++)
				acc += da[i * 4 + q] * db[j * 4 + q];
			assert_true(fabs(dd[i * 8 + j] - acc) < 1e-12);
		}
	/* A fragment of the wrong register count is refused by name. */
	struct ptx_module *bad =
	    parse_ok(HDR MMA_HEAD("bad") "\twmma.load.a.sync.aligned.row.m16n16k16.global.f16 "
					 "{%r1, %r2}, [%rd1], 16;\n\tret;\n}\n");
	assert_string_equal(ptx_find(bad, "bad")->unsupported, "wmma operands");
	ptx_free(bad);
	ptx_free(m);
}

/* Inline asm's blocks declare registers without '%' ("{ .reg .pred p; ...}"),
 * which must read as registers, not as symbols. */
static void test_bare_registers(void **state)
{
	(void)state;
	struct ptx_module *m = parse_ok(
	    HDR ".visible .entry inl(.param .u64 out)\n{\n"
		"\t.reg .b32 %r<3>;\n\t.reg .f32 %f<2>;\n\t.reg .b64 %rd<2>;\n"
		"\tld.param.u64 %rd1, [out];\n"
		"\tmov.f32 %f1, 0f3FC00000;\n"
		"\t{\n\t.reg .f16 low;\n\tcvt.rn.f16.f32 low, %f1;\n\tmov.b32 %r1, {low, low};\n\t}\n"
		"\t{\n\t.reg .pred p;\n\tsetp.ne.s32 p, %r1, 0;\n\tselp.b32 %r2, 7, 0, p;\n\t}\n"
		"\tst.global.u32 [%rd1], %r1;\n\tst.global.u32 [%rd1+4], %r2;\n"
		"\tmov.u32 %r2, WARP_SZ;\n\tst.global.u32 [%rd1+8], %r2;\n\tret;\n}\n");
	uint32_t out[3] = {0, 0, 0};
	struct ptx_region mem[1] = {{0x10000, sizeof out, (uint8_t *)out}};
	uint64_t p = 0x10000;
	assert_int_equal(run(kernel(m, "inl"), 1, 1, &p, 8, mem, 1), CUDA_SUCCESS);
	assert_int_equal(out[0], 0x3e003e00);
	assert_int_equal(out[1], 7);
	assert_int_equal(out[2], 32); /* PTX's predefined WARP_SZ */
	ptx_free(m);
}

/* cvt.rna.tf32.f32 as nvcc emits it for wmma::__float_to_tf32: 10 fraction
 * bits, half away from zero. */
static void test_tf32(void **state)
{
	(void)state;
	struct ptx_module *m =
	    parse_ok(HDR ".visible .entry t(.param .u64 io)\n{\n"
			 "\t.reg .b32 %r<3>;\n\t.reg .f32 %f<2>;\n\t.reg .b64 %rd<3>;\n"
			 "\tld.param.u64 %rd1, [io];\n"
			 "\tmov.u32 %r1, %tid.x;\n"
			 "\tmul.wide.u32 %rd2, %r1, 4;\n"
			 "\tadd.s64 %rd1, %rd1, %rd2;\n"
			 "\tld.global.f32 %f1, [%rd1];\n"
			 "\t{\n\t.reg .b32 __$1;\n\tcvt.rna.tf32.f32 __$1, %f1;\n\tmov.b32 %r2, __$1;\n\t}\n"
			 "\tst.global.u32 [%rd1], %r2;\n\tret;\n}\n");
	uint32_t io[5] = {0x3f801000, 0x3f800fff, 0xbf803000, 0x7f7ff000, 0x7fc00001};
	const uint32_t want[5] = {0x3f802000, 0x3f800000, 0xbf804000, 0x7f800000, 0x7fffffff};
	struct ptx_region mem[1] = {{0x10000, sizeof io, (uint8_t *)io}};
	uint64_t p = 0x10000;
	assert_int_equal(run(kernel(m, "t"), 1, 5, &p, 8, mem, 1), CUDA_SUCCESS);
	for (int i = 0; i < 5; i++)
		assert_int_equal(io[i], want[i]);
	ptx_free(m);
}

/* vabsdiff4 ... .add, as stereoDisparity's __vabsdiff4 sums emit it. */
static void test_vabsdiff4(void **state)
{
	(void)state;
	struct ptx_module *m =
	    parse_ok(HDR ".visible .entry v(.param .u64 io)\n{\n"
			 "\t.reg .b32 %r<6>;\n\t.reg .b64 %rd<2>;\n"
			 "\tld.param.u64 %rd1, [io];\n"
			 "\tld.global.u32 %r1, [%rd1];\n\tld.global.u32 %r2, [%rd1+4];\n"
			 "\tld.global.u32 %r3, [%rd1+8];\n"
			 "\tvabsdiff4.u32.u32.u32.add %r4, %r1, %r2, %r3;\n"
			 "\tvabsdiff4.s32.s32.s32.add %r5, %r1, %r2, 0;\n"
			 "\tst.global.u32 [%rd1+12], %r4;\n\tst.global.u32 [%rd1+16], %r5;\n"
			 "\tret;\n}\n"
			 ".visible .entry bytes(.param .u64 io)\n{\n\t.reg .b32 %r<4>;\n"
			 "\tvabsdiff4.u32.u32.u32 %r1, %r2, %r3, %r1;\n\tret;\n}\n");
	uint32_t io[5] = {0x10ff0305, 0x20017f01, 1000, 0, 0};
	struct ptx_region mem[1] = {{0x10000, sizeof io, (uint8_t *)io}};
	uint64_t p = 0x10000;
	assert_int_equal(run(kernel(m, "v"), 1, 1, &p, 8, mem, 1), CUDA_SUCCESS);
	/* bytes (lo first): 05/01, 03/7f, ff/01, 10/20 */
	assert_int_equal(io[3], 1000 + 4 + 124 + 254 + 16);
	assert_int_equal(io[4], 4 + 124 + 2 + 16); /* signed: ff is -1 */
	assert_string_equal(ptx_find(m, "bytes")->unsupported, "vabsdiff4 without .add");
	ptx_free(m);
}

/* cub's and thrust's kernels have names of hundreds of characters: the
 * module still decodes and the kernel is found by its name. */
static void test_long_name(void **state)
{
	(void)state;
	static char text[4096], name[1201];
	memset(name, 'x', 1200);
	memcpy(name, "_ZN3cub", 7);
	snprintf(text, sizeof text, HDR ".visible .entry %s()\n{\n\tret;\n}\n", name);
	struct ptx_module *m = parse_ok(text);
	kernel(m, name);
	ptx_free(m);
}

/* Warp 0 waits on mbarrier b1, which warp 2 completes; warp 2 then waits
 * on b2, which warp 0 completes once it is through, and writes val; warp 1
 * waits at bar.sync and then reads val: the barrier must hold warp 1 until
 * the waiting warps arrive too (run in warp order, a barrier released
 * while warp 2 still waits lets warp 1 read val before it is written). */
static const char spin_ptx[] =
    HDR ".visible .entry spin(.param .u64 out)\n{\n"
	"\t.reg .pred %p<4>;\n\t.reg .b32 %r<12>;\n\t.reg .b64 %rd<6>;\n"
	"\t.shared .align 8 .b64 b1;\n\t.shared .align 8 .b64 b2;\n\t.shared .align 4 .b32 val;\n"
	"\tld.param.u64 %rd1, [out];\n"
	"\tmov.u32 %r1, %tid.x;\n"
	"\tshr.u32 %r2, %r1, 5;\n"
	"\tmov.u32 %r3, b1;\n"
	"\tmov.u32 %r6, b2;\n"
	"\tsetp.ne.s32 %p1, %r1, 0;\n"
	"\t@%p1 bra $L__i;\n"
	"\tmbarrier.init.shared.b64 [%r3], 32;\n"
	"\tmbarrier.init.shared.b64 [%r6], 32;\n"
	"$L__i:\n"
	"\tbar.sync 0;\n"
	"\tsetp.eq.s32 %p2, %r2, 1;\n"
	"\t@%p2 bra $L__sync;\n"
	"\tsetp.eq.s32 %p3, %r2, 2;\n"
	"\t@%p3 bra $L__w2;\n"
	"$L__w0:\n"
	"\tmbarrier.try_wait.parity.shared.b64 %p1, [%r3], 0;\n"
	"\t@!%p1 bra $L__w0;\n"
	"\tmbarrier.arrive.shared.b64 %rd2, [%r6];\n"
	"\tbra.uni $L__sync;\n"
	"$L__w2:\n"
	"\tmbarrier.arrive.shared.b64 %rd2, [%r3];\n"
	"$L__w2b:\n"
	"\tmbarrier.try_wait.parity.shared.b64 %p1, [%r6], 0;\n"
	"\t@!%p1 bra $L__w2b;\n"
	"\tmov.u32 %r4, 42;\n"
	"\tst.shared.u32 [val], %r4;\n"
	"$L__sync:\n"
	"\tbar.sync 0;\n"
	"\tld.shared.u32 %r5, [val];\n"
	"\tmul.wide.u32 %rd3, %r1, 4;\n"
	"\tadd.s64 %rd4, %rd1, %rd3;\n"
	"\tst.global.u32 [%rd4], %r5;\n"
	"\tret;\n}\n";

static void test_spin_barrier(void **state)
{
	(void)state;
	struct ptx_module *m = parse_ok(spin_ptx);
	static uint32_t out[96];
	struct ptx_region mem[1] = {{0x10000, sizeof out, (uint8_t *)out}};
	uint64_t p = 0x10000;
	assert_int_equal(run(kernel(m, "spin"), 1, 96, &p, 8, mem, 1), CUDA_SUCCESS);
	for (int t = 0; t < 96; t++)
		assert_int_equal(out[t], 42);
	ptx_free(m);
}

/* What it still refuses, it refuses by name at load (and tex.grad it now takes). */
static void test_refused(void **state)
{
	(void)state;
	struct ptx_module *m = parse_ok(
	    HDR ".visible .entry g(.param .u64 h)\n{\n\t.reg .f32 %f<9>;\n\t.reg .b64 %rd<2>;\n"
		"\ttex.grad.2d.v4.f32.f32 {%f1, %f2, %f3, %f4}, [%rd1, {%f5, %f6}], {%f7, %f8}, {%f7, %f8};\n"
		"\tret;\n}\n"
		".visible .entry g3(.param .u64 h)\n{\n\t.reg .f32 %f<9>;\n\t.reg .b64 %rd<2>;\n"
		"\ttld4.r.3d.v4.f32.f32 {%f1, %f2, %f3, %f4}, [%rd1, {%f5, %f6, %f7, %f8}];\n"
		"\tret;\n}\n"
		".visible .entry p(.param .u64 h)\n{\n\t.reg .b32 %r<3>;\n\t.reg .b64 %rd<2>;\n"
		"\tsust.p.2d.b32.trap [%rd1, {%r1, %r2}], {%r1};\n\tret;\n}\n");
	assert_string_equal(ptx_find(m, "g")->unsupported, ""); /* one level: the gradients select it */
	assert_string_equal(ptx_find(m, "g3")->unsupported, "tex geometry");
	assert_string_equal(ptx_find(m, "p")->unsupported, "sust.p");
	ptx_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_redux_match),
	    cmocka_unit_test(test_half),
	    cmocka_unit_test(test_tex),
	    cmocka_unit_test(test_surf),
	    cmocka_unit_test(test_async),
	    cmocka_unit_test(test_wmma),
	    cmocka_unit_test(test_bare_registers),
	    cmocka_unit_test(test_tf32),
	    cmocka_unit_test(test_vabsdiff4),
	    cmocka_unit_test(test_long_name),
	    cmocka_unit_test(test_spin_barrier),
	    cmocka_unit_test(test_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
