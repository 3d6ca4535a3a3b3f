/* SPDX-License-Identifier: Apache-2.0 */
/* test_ptx_call.c - unit tests of what the PTX interpreter gained for the
 * cuda-samples: registers declared in a brace scope (inline asm's,
 * cuda_fp16.hpp's) and WARP_SZ; bfind, bmsk, griddepcontrol, bar.warp.sync,
 * membar.gl, cooperative groups' reserved shared memory; .func calls with
 * their parameters, recursion and its bound, device printf and assert;
 * grid sync; register compaction and its refusal; long kernel names. Each
 * kernel is checked against values worked out by hand.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cuda.h>

#include "simdrv/ptx.h"
#include "ptx_testlib.h"

#define HDR ".version 8.0\n.target sm_90\n.address_size 64\n"

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
	"\tgriddepcontrol.wait;\n"
	"\tgriddepcontrol.launch_dependents;\n"
	"\tbmsk.wrap.b32 %r5, 1, 2;\n\tst.global.u32 [%rd1+36], %r5;\n"
	"\tmov.u32 %r4, 40;\n"
	"\tbmsk.clamp.b32 %r5, 4, %r4;\n\tst.global.u32 [%rd1+40], %r5;\n"
	"\tbmsk.wrap.b32 %r5, 4, %r4;\n\tst.global.u32 [%rd1+44], %r5;\n"
	"\tbmsk.clamp.b32 %r5, 33, 2;\n\tst.global.u32 [%rd1+48], %r5;\n"
	"\tret;\n}\n";

static void test_small(void **state)
{
	(void)state;
	struct ptx_module *m = parse_ok(small_ptx);
	uint32_t out[13] = {0};
	assert_int_equal(run_out(m, "small", 1, 1, out, 13, NULL), CUDA_SUCCESS);
	assert_int_equal(out[0], 32);
	assert_int_equal(out[1], 8);
	assert_int_equal(out[2], 11);
	assert_int_equal(out[3], 23);
	assert_int_equal(out[4], 8);
	assert_int_equal(out[5], 1);
	assert_int_equal(out[6], 0xffffffffu);
	assert_int_equal(out[7], 32); /* after the 20 static bytes, aligned to 16 */
	assert_int_equal(out[8], 32);
	assert_int_equal(out[9], 6);            /* PTX's own example */
	assert_int_equal(out[10], 0xfffffff0u); /* clamp: a width past 32 reaches the top */
	assert_int_equal(out[11], 0xff0u);      /* wrap: 40 is 8 */
	assert_int_equal(out[12], 0);           /* clamp: a start past 31 */
	/* Declared: 8 + 4, two for the scopes, the sink; compacted below that. */
	assert_true(ptx_find(m, "small")->nregs <= 15);
	ptx_free(m);
}

/* A recursive .func (sum of 0..n) called by the odd lanes only: recursion
 * depths differ per lane, the caller's registers survive the callee. */
static const char call_ptx[] =
    HDR ".func (.param .b32 func_retval0) sum(.param .b32 sum_param_0)\n{\n"
	"\t.reg .pred %p<2>;\n\t.reg .b32 %r<5>;\n"
	"\tld.param.u32 %r1, [sum_param_0];\n"
	"\tsetp.eq.s32 %p1, %r1, 0;\n"
	"\tmov.u32 %r4, 0;\n"
	"\t@%p1 bra $L__done;\n"
	"\tadd.s32 %r2, %r1, -1;\n"
	"\t{ // callseq 0, 0\n\t.param .b32 param0;\n\tst.param.b32 [param0+0], %r2;\n"
	"\t.param .b32 retval0;\n\tcall.uni (retval0), \n\tsum, \n\t(\n\tparam0\n\t);\n"
	"\tld.param.b32 %r3, [retval0+0];\n\t} // callseq 0\n"
	"\tadd.s32 %r4, %r3, %r1;\n"
	"$L__done:\n"
	"\tst.param.b32 [func_retval0+0], %r4;\n"
	"\tret;\n}\n"
	".visible .entry callsum(.param .u64 out)\n{\n"
	"\t.reg .pred %p<2>;\n\t.reg .b32 %r<4>;\n\t.reg .b64 %rd<4>;\n"
	"\tld.param.u64 %rd1, [out];\n"
	"\tmov.u32 %r1, %tid.x;\n"
	"\tmul.wide.u32 %rd2, %r1, 4;\n"
	"\tadd.s64 %rd3, %rd1, %rd2;\n"
	"\tand.b32 %r2, %r1, 1;\n"
	"\tsetp.eq.s32 %p1, %r2, 0;\n"
	"\t@%p1 bra $L__even;\n"
	"\t{\n\t.param .b32 param0;\n\tst.param.b32 [param0], %r1;\n\t.param .b32 retval0;\n"
	"\tcall.uni (retval0), sum, (param0);\n\tld.param.b32 %r3, [retval0];\n\t}\n"
	"\tst.global.u32 [%rd3], %r3;\n"
	"\tbra.uni $L__end;\n"
	"$L__even:\n"
	"\tst.global.u32 [%rd3], %r1;\n"
	"$L__end:\n"
	"\tret;\n}\n";

static void test_call_recursive(void **state)
{
	(void)state;
	struct ptx_module *m = parse_ok(call_ptx);
	assert_null(ptx_find(m, "sum")); /* a .func is no kernel */
	uint32_t out[64] = {0};
	assert_int_equal(run_out(m, "callsum", 1, 64, out, 64, NULL), CUDA_SUCCESS);
	for (uint32_t t = 0; t < 64; t++)
		assert_int_equal(out[t], t & 1 ? t * (t + 1) / 2 : t);
	ptx_free(m);
}

/* A call deeper than the bound faults instead of growing without end. */
static void test_call_depth(void **state)
{
	(void)state;
	struct ptx_module *m = parse_ok(call_ptx);
	uint32_t out[1024] = {0};
	/* Lane 1023 recurses 1023 deep. */
	assert_int_equal(run_out(m, "callsum", 1, 1024, out, 1024, NULL), CUDA_ERROR_ILLEGAL_ADDRESS);
	ptx_free(m);
}

static bool resolve_fmt(void *arg, const char *name, uint64_t *addr)
{
	(void)arg;
	if (strcmp(name, "fmtstr"))
		return false;
	*addr = 0x10000 + 64;
	return true;
}

static const char printf_ptx[] =
    HDR ".extern .func (.param .b32 func_retval0) vprintf(.param .b64 a, .param .b64 b);\n"
	".extern .func __assertfail(.param .b64 a, .param .b64 b, .param .b32 c, .param .b64 d,"
	" .param .b64 e);\n"
	".global .align 1 .b8 fmtstr[20] = {116, 37, 100, 61};\n"
	".visible .entry pr(.param .u64 out)\n{\n"
	"\t.local .align 8 .b8 __local_depot0[24];\n"
	"\t.reg .b64 %SP;\n\t.reg .b64 %SPL;\n\t.reg .b32 %r<3>;\n\t.reg .b64 %rd<6>;\n"
	"\t.reg .f64 %fd<2>;\n"
	"\tmov.u64 %SPL, __local_depot0;\n"
	"\tcvta.local.u64 %SP, %SPL;\n"
	"\tmov.u32 %r1, %tid.x;\n"
	"\tst.local.u32 [%SPL], %r1;\n"
	"\tmov.f64 %fd1, 0d400C000000000000;\n"
	"\tst.local.f64 [%SPL+8], %fd1;\n"
	"\tmov.u64 %rd1, 0x1234abcd5678;\n"
	"\tst.local.u64 [%SPL+16], %rd1;\n"
	"\tmov.u64 %rd2, fmtstr;\n"
	"\tcvta.global.u64 %rd3, %rd2;\n"
	"\tadd.u64 %rd4, %SP, 0;\n"
	"\t{\n\t.param .b64 param0;\n\tst.param.b64 [param0], %rd3;\n"
	"\t.param .b64 param1;\n\tst.param.b64 [param1], %rd4;\n\t.param .b32 retval0;\n"
	"\tcall.uni (retval0), vprintf, (param0, param1);\n"
	"\tld.param.b32 %r2, [retval0];\n\t}\n"
	"\tld.param.u64 %rd5, [out];\n"
	"\tst.global.u32 [%rd5], %r2;\n"
	"\tret;\n}\n"
	".visible .entry asrt(.param .u64 out)\n{\n"
	"\t.reg .b64 %rd<3>;\n"
	"\tmov.u64 %rd1, fmtstr;\n"
	"\tcvta.global.u64 %rd2, %rd1;\n"
	"\t{\n\t.param .b64 param0;\n\tst.param.b64 [param0], %rd2;\n"
	"\t.param .b64 param1;\n\tst.param.b64 [param1], %rd2;\n"
	"\t.param .b32 param2;\n\tst.param.b32 [param2], 42;\n"
	"\t.param .b64 param3;\n\tst.param.b64 [param3], %rd2;\n"
	"\t.param .b64 param4;\n\tst.param.b64 [param4], 1;\n"
	"\tcall.uni __assertfail, (param0, param1, param2, param3, param4);\n\t}\n"
	"\tret;\n}\n";

static void test_printf_assert(void **state)
{
	(void)state;
	struct ptx_module *m = NULL;
	char err[160];
	assert_int_equal(ptx_parse(printf_ptx, strlen(printf_ptx), resolve_fmt, NULL, &m, err, sizeof err),
			 0);
	uint32_t out[32] = {0};
	static const char fmt[] = "t%d=%5.2f %llx|%%\n";
	memcpy((char *)out + 64, fmt, sizeof fmt);
	/* The device's output goes to stdout when the kernel ends: catch it. */
	fflush(stdout);
	FILE *cap = tmpfile();
	assert_non_null(cap);
	int saved = dup(1);
	dup2(fileno(cap), 1);
	CUresult r = run_out(m, "pr", 1, 2, out, 32, NULL);
	fflush(stdout);
	dup2(saved, 1);
	close(saved);
	assert_int_equal(r, CUDA_SUCCESS);
	char got[256] = "";
	rewind(cap);
	size_t n = fread(got, 1, sizeof got - 1, cap);
	got[n] = 0;
	fclose(cap);
	assert_string_equal(got, "t0= 3.50 1234abcd5678|%\nt1= 3.50 1234abcd5678|%\n");
	assert_int_equal(out[0], 3); /* the arguments it used */

	struct ptx_launch l;
	static const char msg[] = "x > 0";
	memcpy((char *)out + 64, msg, sizeof msg);
	assert_int_equal(run_out(m, "asrt", 2, 32, out, 32, &l), CUDA_ERROR_ASSERT);
	assert_non_null(strstr(l.fault, "Assertion `x > 0` failed"));
	ptx_free(m);
}

/* Cooperative groups' grid.sync as nvcc emits it: the workspace from
 * %envreg1:%envreg2, an atomic per block, a spin until the top bit flips.
 * Each block writes its word, syncs the grid, then sums every block's. */
static const char gsync_ptx[] =
    HDR ".visible .entry gsync(.param .u64 out)\n{\n"
	"\t.reg .pred %p<4>;\n\t.reg .b32 %r<20>;\n\t.reg .b64 %rd<10>;\n"
	"\tld.param.u64 %rd1, [out];\n"
	"\tmov.u32 %r1, %envreg2;\n\tcvt.u64.u32 %rd2, %r1;\n"
	"\tmov.u32 %r2, %envreg1;\n\tcvt.u64.u32 %rd3, %r2;\n"
	"\tbfi.b64 %rd4, %rd3, %rd2, 32, 32;\n"
	"\tmov.u32 %r3, %ctaid.x;\n\tmov.u32 %r4, %nctaid.x;\n\tmov.u32 %r5, %tid.x;\n"
	"\tsetp.ne.s32 %p1, %r5, 0;\n"
	"\t@%p1 bra $L__w;\n"
	"\tadd.s32 %r6, %r3, 1;\n"
	"\tmul.wide.u32 %rd5, %r3, 4;\n\tadd.s64 %rd6, %rd1, %rd5;\n"
	"\tst.global.u32 [%rd6], %r6;\n"
	"$L__w:\n"
	"\tbarrier.sync 0;\n"
	"\t@%p1 bra $L__after;\n"
	"\tadd.s64 %rd7, %rd4, 4;\n"
	"\tsetp.eq.s32 %p2, %r3, 0;\n"
	"\tmov.u32 %r16, -2147483647;\n"
	"\tsub.s32 %r7, %r16, %r4;\n"
	"\tselp.b32 %r8, %r7, 1, %p2;\n"
	"\tatom.add.release.gpu.u32 %r9, [%rd7], %r8;\n"
	"$L__spin:\n"
	"\tld.acquire.gpu.u32 %r10, [%rd7];\n"
	"\txor.b32 %r11, %r10, %r9;\n"
	"\tsetp.gt.s32 %p3, %r11, -1;\n"
	"\t@%p3 bra $L__spin;\n"
	"$L__after:\n"
	"\tbarrier.sync 0;\n"
	"\t@%p1 bra $L__end;\n"
	"\tmov.u32 %r12, 0;\n\tmov.u32 %r13, 0;\n"
	"$L__sum:\n"
	"\tmul.wide.u32 %rd8, %r13, 4;\n\tadd.s64 %rd9, %rd1, %rd8;\n"
	"\tld.global.u32 %r14, [%rd9];\n\tadd.s32 %r12, %r12, %r14;\n"
	"\tadd.s32 %r13, %r13, 1;\n\tsetp.lt.u32 %p3, %r13, %r4;\n\t@%p3 bra $L__sum;\n"
	"\tadd.s32 %r15, %r3, %r4;\n"
	"\tmul.wide.u32 %rd8, %r15, 4;\n\tadd.s64 %rd9, %rd1, %rd8;\n"
	"\tst.global.u32 [%rd9], %r12;\n"
	"$L__end:\n"
	"\tret;\n}\n";

static void test_grid_sync(void **state)
{
	(void)state;
	struct ptx_module *m = parse_ok(gsync_ptx);
	assert_true(ptx_find(m, "gsync")->grid_sync);
	uint32_t out[16] = {0};
	assert_int_equal(run_out(m, "gsync", 8, 64, out, 16, NULL), CUDA_SUCCESS);
	for (int i = 0; i < 8; i++) {
		assert_int_equal(out[i], i + 1);
		assert_int_equal(out[8 + i], 36); /* every block's word, after the sync */
	}
	ptx_free(m);
}

/* Register compaction: a loop whose accumulator and counter live across
 * its back edge among 50 temporaries, then a chain of 9000 more: more
 * registers than PTX_MAX_REGS declared, a handful live. Then a kernel that
 * keeps 9000 live at once, refused by name. */
static char *chain_ptx(bool all_live)
{
	size_t cap = 1 << 20, n = 0;
	char *t = malloc(cap);
	assert_non_null(t);
#define ADD(...) (n += (size_t)snprintf(t + n, cap - n, __VA_ARGS__), assert_true(n < cap))
	ADD(HDR ".visible .entry chain(.param .u64 out)\n{\n\t.reg .pred %%p<2>;\n"
		"\t.reg .b32 %%r<10100>;\n\t.reg .b64 %%rd<2>;\n\tld.param.u64 %%rd1, [out];\n");
	if (all_live) {
		for (int j = 0; j < 9000; j++)
			ADD("\tmov.u32 %%r%d, %%tid.x;\n", 1000 + j);
		ADD("\tmov.u32 %%r1, 0;\n");
		for (int j = 0; j < 9000; j++)
			ADD("\tadd.s32 %%r1, %%r1, %%r%d;\n", 1000 + j);
	} else {
		ADD("\tmov.u32 %%r1, 0;\n\tmov.u32 %%r2, 0;\n$L__loop:\n\tadd.s32 %%r100, %%r2, 0;\n");
		for (int j = 1; j <= 50; j++)
			ADD("\tadd.s32 %%r%d, %%r%d, 1;\n", 100 + j, 99 + j);
		ADD("\tadd.s32 %%r1, %%r1, %%r150;\n\tadd.s32 %%r2, %%r2, 1;\n"
		    "\tsetp.lt.u32 %%p1, %%r2, 10;\n\t@%%p1 bra $L__loop;\n\tadd.s32 %%r1000, %%r1, 0;\n");
		for (int j = 1; j <= 9000; j++)
			ADD("\tadd.s32 %%r%d, %%r%d, 1;\n", 1000 + j, 999 + j);
		ADD("\tmov.u32 %%r1, %%r10000;\n");
	}
	ADD("\tst.global.u32 [%%rd1], %%r1;\n\tret;\n}\n");
#undef ADD
	return t;
}

static void test_compaction(void **state)
{
	(void)state;
	char *t = chain_ptx(false);
	struct ptx_module *m = parse_ok(t);
	const struct ptx_kernel *k = ptx_find(m, "chain");
	if (k->nregs >= 16)
		fprintf(stderr, "nregs %u: %s\n", k->nregs, k->unsupported);
	assert_true(k->nregs < 16);
	uint32_t out[1] = {0};
	assert_int_equal(run_out(m, "chain", 1, 1, out, 1, NULL), CUDA_SUCCESS);
	assert_int_equal(out[0], 45 + 10 * 50 + 9000);
	ptx_free(m);
	free(t);

	t = chain_ptx(true);
	m = parse_ok(t);
	k = ptx_find(m, "chain");
	assert_non_null(strstr(k->unsupported, "too many registers"));
	ptx_free(m);
	free(t);
}

/* cub's and thrust's kernel names run to thousands of characters. */
static void test_long_names(void **state)
{
	(void)state;
	char name[3001];
	memset(name, 'x', sizeof name - 1);
	memcpy(name, "_ZN3cub", 7);
	name[sizeof name - 1] = 0;
	size_t cap = 16384;
	char *t = malloc(cap);
	assert_non_null(t);
	snprintf(t, cap,
		 HDR ".visible .entry %s(\n\t.param .u64 %s_param_0\n)\n{\n\t.reg .b32 %%r<2>;\n"
		     "\t.reg .b64 %%rd<2>;\n\tld.param.u64 %%rd1, [%s_param_0];\n"
		     "\tmov.u32 %%r1, 5;\n\tst.global.u32 [%%rd1], %%r1;\n\tret;\n}\n",
		 name, name, name);
	struct ptx_module *m = parse_ok(t);
	uint32_t out[1] = {0};
	assert_int_equal(run_out(m, name, 1, 1, out, 1, NULL), CUDA_SUCCESS);
	assert_int_equal(out[0], 5);
	ptx_free(m);
	free(t);
}

/* Device malloc and free on the context's heap: each thread's block holds
 * its own value; a size past the heap gives NULL. */
static const char heap_ptx[] =
    HDR ".extern .func (.param .b64 func_retval0) malloc(.param .b64 malloc_param_0);\n"
	".extern .func free(.param .b64 free_param_0);\n"
	".visible .entry heap(.param .u64 out)\n{\n"
	"\t.reg .pred %p<2>;\n\t.reg .b32 %r<4>;\n\t.reg .b64 %rd<10>;\n"
	"\tld.param.u64 %rd1, [out];\n"
	"\tmov.u32 %r1, %tid.x;\n"
	"\t{\n\t.param .b64 param0;\n\tst.param.b64 [param0], 16;\n\t.param .b64 retval0;\n"
	"\tcall.uni (retval0), malloc, (param0);\n\tld.param.b64 %rd2, [retval0];\n\t}\n"
	"\tcvta.to.global.u64 %rd3, %rd2;\n"
	"\tst.global.u32 [%rd3], %r1;\n"
	"\tmul.wide.u32 %rd4, %r1, 4;\n\tadd.s64 %rd5, %rd1, %rd4;\n"
	"\tbar.sync 0;\n"
	"\tld.global.u32 %r2, [%rd3];\n"
	"\tadd.s32 %r3, %r2, 100;\n"
	"\tst.global.u32 [%rd5], %r3;\n"
	"\t{\n\t.param .b64 param0;\n\tst.param.b64 [param0], %rd2;\n\tcall.uni free, (param0);\n\t}\n"
	"\t{\n\t.param .b64 param0;\n\tst.param.b64 [param0], 0x7fffffffffff;\n\t.param .b64 retval0;\n"
	"\tcall.uni (retval0), malloc, (param0);\n\tld.param.b64 %rd6, [retval0];\n\t}\n"
	"\tsetp.eq.s64 %p1, %rd6, 0;\n"
	"\tselp.u32 %r3, 1, 0, %p1;\n"
	"\tst.global.u32 [%rd5+128], %r3;\n"
	"\tret;\n}\n";

static void test_heap(void **state)
{
	(void)state;
	struct ptx_module *m = parse_ok(heap_ptx);
	const struct ptx_kernel *k = ptx_find(m, "heap");
	assert_int_equal(k->unsupported[0], 0);
	assert_true(k->heap);
	uint32_t out[64] = {0};
	struct ptx_region mem = {0x10000, sizeof out, (uint8_t *)out};
	uint64_t p = mem.base;
	struct ptx_heap *h = ptx_heap_new(1 << 20);
	assert_non_null(h);
	for (int round = 0; round < 2; round++) {
		struct ptx_launch l = {.grid = {1, 1, 1},
				       .block = {32, 1, 1},
				       .params = (const uint8_t *)&p,
				       .param_bytes = 8,
				       .mem = &mem,
				       .nmem = 1,
				       .heap = h};
		CUresult r = ptx_run(k, &l);
		if (r)
			fprintf(stderr, "heap: %s\n", l.fault);
		assert_int_equal(r, CUDA_SUCCESS);
		for (uint32_t t = 0; t < 32; t++) {
			assert_int_equal(out[t], t + 100);
			assert_int_equal(out[32 + t], 1);
		}
		memset(out, 0, sizeof out);
	}
	/* Without a heap, malloc gives NULL and the store through it faults. */
	struct ptx_launch l = {.grid = {1, 1, 1},
			       .block = {32, 1, 1},
			       .params = (const uint8_t *)&p,
			       .param_bytes = 8,
			       .mem = &mem,
			       .nmem = 1};
	assert_int_equal(ptx_run(k, &l), CUDA_ERROR_ILLEGAL_ADDRESS);
	ptx_heap_free(h);
	ptx_free(m);
}

/* cudaGraphSetConditional from a kernel reaches the launch's graph hook
 * with its handle and value; with no hook the launch is refused. */
static const char setcond_ptx[] =
    HDR ".extern .func cudaGraphSetConditional(.param .b64 p0, .param .b32 p1);\n"
	".visible .entry setc(.param .u64 h)\n{\n"
	"\t.reg .pred %p<2>;\n\t.reg .b32 %r<3>;\n\t.reg .b64 %rd<2>;\n"
	"\tld.param.u64 %rd1, [h];\n"
	"\tmov.u32 %r1, %tid.x;\n"
	"\tsetp.ne.s32 %p1, %r1, 3;\n"
	"\t@%p1 bra $L__end;\n"
	"\tadd.s32 %r2, %r1, 4;\n"
	"\t{\n\t.param .b64 param0;\n\tst.param.b64 [param0], %rd1;\n"
	"\t.param .b32 param1;\n\tst.param.b32 [param1], %r2;\n"
	"\tcall.uni cudaGraphSetConditional, (param0, param1);\n\t}\n"
	"$L__end:\n"
	"\tret;\n}\n";

struct cond_seen {
	int calls;
	uint64_t handle;
	uint32_t value;
};

static int set_cond(void *arg, uint64_t handle, uint32_t value)
{
	struct cond_seen *c = arg;
	c->calls++;
	c->handle = handle;
	c->value = value;
	return handle == 0xbad;
}

static void test_set_conditional(void **state)
{
	(void)state;
	struct ptx_module *m = parse_ok(setcond_ptx);
	const struct ptx_kernel *k = ptx_find(m, "setc");
	assert_int_equal(k->unsupported[0], 0);
	uint64_t h = 0x1234;
	struct cond_seen seen = {0};
	struct ptx_launch l = {.grid = {1, 1, 1},
			       .block = {32, 1, 1},
			       .params = (const uint8_t *)&h,
			       .param_bytes = 8,
			       .set_conditional = set_cond,
			       .cond_arg = &seen};
	assert_int_equal(ptx_run(k, &l), CUDA_SUCCESS);
	assert_int_equal(seen.calls, 1);
	assert_int_equal(seen.handle, 0x1234);
	assert_int_equal(seen.value, 7);
	h = 0xbad;
	assert_int_equal(ptx_run(k, &l), CUDA_ERROR_LAUNCH_FAILED);
	assert_non_null(strstr(l.fault, "is not the launching graph's"));
	l.set_conditional = NULL;
	h = 0x1234;
	l.fault[0] = 0;
	assert_int_equal(ptx_run(k, &l), CUDA_ERROR_LAUNCH_FAILED);
	assert_non_null(strstr(l.fault, "cudaGraphSetConditional"));
	ptx_free(m);
}

/* bar.red: a barrier that counts (popc) or combines (and, or) a predicate
 * over the block's threads; each warp reads the tally after every warp
 * arrived. 96 threads, the predicate true for tid % 3 == 0. */
static const char barred_ptx[] = HDR ".visible .entry barred(.param .u64 out)\n{\n"
				     "\t.reg .pred %p<6>;\n\t.reg .b32 %r<8>;\n\t.reg .b64 %rd<4>;\n"
				     "\tld.param.u64 %rd1, [out];\n"
				     "\tmov.u32 %r1, %tid.x;\n"
				     "\trem.u32 %r2, %r1, 3;\n"
				     "\tsetp.eq.s32 %p1, %r2, 0;\n"
				     "\tbar.red.popc.u32 %r3, 0, %p1;\n"
				     "\tbar.red.and.pred %p2, 0, %p1;\n"
				     "\tbar.red.or.pred %p3, 0, %p1;\n"
				     "\tsetp.lt.u32 %p4, %r1, 1000;\n"
				     "\tbarrier.red.and.pred %p5, 0, %p4;\n"
				     "\tselp.u32 %r4, 1, 0, %p2;\n"
				     "\tselp.u32 %r5, 10, 0, %p3;\n"
				     "\tselp.u32 %r6, 100, 0, %p5;\n"
				     "\tadd.s32 %r7, %r4, %r5;\n\tadd.s32 %r7, %r7, %r6;\n"
				     "\tmul.wide.u32 %rd2, %r1, 8;\n\tadd.s64 %rd3, %rd1, %rd2;\n"
				     "\tst.global.u32 [%rd3], %r3;\n"
				     "\tst.global.u32 [%rd3+4], %r7;\n"
				     "\tret;\n}\n";

static void test_bar_red(void **state)
{
	(void)state;
	struct ptx_module *m = parse_ok(barred_ptx);
	uint32_t out[2 * 96] = {0};
	assert_int_equal(run_out(m, "barred", 2, 96, out, 2 * 96, NULL), CUDA_SUCCESS);
	for (int t = 0; t < 96; t++) {
		assert_int_equal(out[2 * t], 32);      /* popc: 96 / 3 */
		assert_int_equal(out[2 * t + 1], 110); /* and false, or true, and of all-true true */
	}
	ptx_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_small),           cmocka_unit_test(test_call_recursive),
	    cmocka_unit_test(test_call_depth),      cmocka_unit_test(test_printf_assert),
	    cmocka_unit_test(test_grid_sync),       cmocka_unit_test(test_compaction),
	    cmocka_unit_test(test_long_names),      cmocka_unit_test(test_heap),
	    cmocka_unit_test(test_set_conditional), cmocka_unit_test(test_bar_red),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
