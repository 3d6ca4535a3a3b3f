/* SPDX-License-Identifier: Apache-2.0 */
/* test_ptx_call.c - unit tests of the PTX interpreter's calls and of the
 * smaller constructs nvcc's output for the cuda-samples needs: registers
 * declared in a brace scope (inline asm's, cuda_fp16.hpp's) and WARP_SZ,
 * bfind, bar.warp.sync, membar.gl, cooperative groups' reserved shared
 * memory; .func calls with their parameters, recursion, device printf and
 * assert. Each kernel is checked against values worked out by hand.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h>

#include "simdrv/ptx.h"

#define HDR ".version 8.0\n.target sm_90\n.address_size 64\n"

static struct ptx_module *parse_ok(const char *text)
{
	struct ptx_module *m = NULL;
	char err[160];
	int rc = ptx_parse(text, strlen(text), NULL, NULL, &m, err, sizeof err);
	if (rc)
		fprintf(stderr, "parse: %s\n", err);
	assert_int_equal(rc, 0);
	assert_non_null(m);
	return m;
}

/* Runs kernel name of m over one output buffer of n words at device address
 * 0x10000; returns the result. */
static CUresult run_out(const struct ptx_module *m, const char *name, uint32_t grid, uint32_t block,
			uint32_t *out, size_t n, struct ptx_launch *lp)
{
	const struct ptx_kernel *k = ptx_find(m, name);
	assert_non_null(k);
	if (k->unsupported[0])
		fprintf(stderr, "%s: unsupported: %s\n", name, k->unsupported);
	assert_int_equal(k->unsupported[0], 0);
	struct ptx_region mem = {0x10000, n * 4, (uint8_t *)out};
	uint64_t p = mem.base;
	struct ptx_launch l = {
	    .grid = {grid, 1, 1},
	    .block = {block, 1, 1},
	    .params = (const uint8_t *)&p,
	    .param_bytes = 8,
	    .mem = &mem,
	    .nmem = 1,
	};
	CUresult r = ptx_run(k, &l);
	if (r)
		fprintf(stderr, "ptx_run: %d: %s\n", (int)r, l.fault);
	if (lp)
		*lp = l;
	return r;
}

static const char small_ptx[] =
    HDR ".visible .entry small(.param .u64 out)\n{\n"
	"\t.reg .b32 %r<8>;\n\t.reg .b64 %rd<4>;\n"
	"\t.shared .align 4 .b8 sm[20];\n"
	"\tld.param.u64 %rd1, [out];\n"
	"\tmov.u32 %r1, WARP_SZ;\n"
	"\tst.global.u32 [%rd1], %r1;\n"
	"\t{\n\t.reg .b32 low;\n\tmov.b32 low, 7;\n\tadd.s32 %r2, low, 1;\n\t}\n"
	"\t{\n\t.reg .b32 low;\n\t.reg .b32 hi;\n\tmov.b32 low, 5;\n\tmov.b32 hi, 6;\n"
	"\tadd.s32 %r3, low, hi;\n\t}\n"
	"\tst.global.u32 [%rd1+4], %r2;\n"
	"\tst.global.u32 [%rd1+8], %r3;\n"
	"\tmov.u32 %r4, 0x00f00000;\n"
	"\tbfind.u32 %r5, %r4;\n\tst.global.u32 [%rd1+12], %r5;\n"
	"\tbfind.shiftamt.u32 %r5, %r4;\n\tst.global.u32 [%rd1+16], %r5;\n"
	"\tmov.u32 %r4, -3;\n"
	"\tbfind.s32 %r5, %r4;\n\tst.global.u32 [%rd1+20], %r5;\n"
	"\tmov.u32 %r4, 0;\n"
	"\tbfind.u32 %r5, %r4;\n\tst.global.u32 [%rd1+24], %r5;\n"
	"\tbar.warp.sync -1;\n"
	"\tmembar.gl;\n"
	"\tmov.u32 %r6, %reserved_smem_offset_1;\n"
	"\tst.global.u32 [%rd1+28], %r6;\n"
	"\tst.shared.u32 [%r6+1020], %r1;\n"
	"\tld.shared.u32 %r7, [%r6+1020];\n"
	"\tst.global.u32 [%rd1+32], %r7;\n"
	"\tret;\n}\n";

static void test_small(void **state)
{
	(void)state;
	struct ptx_module *m = parse_ok(small_ptx);
	uint32_t out[9] = {0};
	assert_int_equal(run_out(m, "small", 1, 1, out, 9, NULL), CUDA_SUCCESS);
	assert_int_equal(out[0], 32);
	assert_int_equal(out[1], 8);
	assert_int_equal(out[2], 11);
	assert_int_equal(out[3], 23);
	assert_int_equal(out[4], 8);
	assert_int_equal(out[5], 1);
	assert_int_equal(out[6], 0xffffffffu);
	assert_int_equal(out[7], 32); /* after the 20 static bytes, aligned to 16 */
	assert_int_equal(out[8], 32);
	/* The scopes' registers share slots: 8 + 4, two for the scopes, the sink. */
	assert_int_equal(ptx_find(m, "small")->nregs, 15);
	ptx_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_small),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
