/* SPDX-License-Identifier: Apache-2.0 */
/* test_ptx.c - unit tests of the simulated driver's PTX interpreter
 * (backend/simdrv/ptx_parse.c, ptx_exec.c): hand-written kernels decoded and
 * run over host memory, faults, what it refuses by name, malformed and
 * mutated text (which must never crash it), the driver's use of it
 * (cuModuleLoadData of PTX text, XGPU_SIM_PTX=strict and off), and its speed
 * in thread-instructions per second.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda.h>

#include "simdrv/ptx.h"

static const char saxpy_ptx[] =
    ".version 8.0\n"
    ".target sm_90\n"
    ".address_size 64\n"
    "\n"
    "\t// y = 2 x + y\n"
    ".visible .entry saxpy(\n"
    "\t.param .u64 .ptr .global .align 4 saxpy_param_0,\n"
    "\t.param .u64 saxpy_param_1,\n"
    "\t.param .u32 saxpy_param_2\n"
    ")\n"
    ".maxntid 1024, 1, 1\n"
    "{\n"
    "\t.reg .pred %p<2>;\n"
    "\t.reg .b32 %r<6>;\n"
    "\t.reg .f32 %f<4>;\n"
    "\t.reg .b64 %rd<8>;\n"
    "\n"
    "\tld.param.u64 %rd1, [saxpy_param_0];\n"
    "\tld.param.u64 %rd2, [saxpy_param_1];\n"
    "\tld.param.u32 %r2, [saxpy_param_2];\n"
    "\tmov.u32 %r3, %ctaid.x;\n"
    "\tmov.u32 %r4, %ntid.x;\n"
    "\tmov.u32 %r5, %tid.x;\n"
    "\tmad.lo.s32 %r1, %r3, %r4, %r5;\n"
    "\tsetp.ge.s32 %p1, %r1, %r2;\n"
    "\t@%p1 bra $L__end;\n"
    "\tcvta.to.global.u64 %rd3, %rd1;\n"
    "\tcvta.to.global.u64 %rd4, %rd2;\n"
    "\tmul.wide.s32 %rd5, %r1, 4;\n"
    "\tadd.s64 %rd6, %rd3, %rd5;\n"
    "\tld.global.nc.f32 %f1, [%rd6];\n"
    "\tadd.s64 %rd7, %rd4, %rd5;\n"
    "\tld.global.f32 %f2, [%rd7];\n"
    "\tfma.rn.f32 %f3, %f1, 0f40000000, %f2;\n"
    "\tst.global.f32 [%rd7], %f3;\n"
    "$L__end:\n"
    "\tret;\n"
    "}\n"
    "\n"
    ".visible .entry reduce(.param .u64 reduce_param_0, .param .u64 reduce_param_1)\n"
    "{\n"
    "\t.reg .pred %p<3>;\n"
    "\t.reg .b32 %r<12>;\n"
    "\t.reg .b64 %rd<6>;\n"
    "\t.shared .align 4 .b8 sm[1024];\n"
    "\tld.param.u64 %rd1, [reduce_param_0];\n"
    "\tld.param.u64 %rd2, [reduce_param_1];\n"
    "\tmov.u32 %r1, %tid.x;\n"
    "\tmov.u32 %r2, %ctaid.x;\n"
    "\tmov.u32 %r3, %ntid.x;\n"
    "\tmad.lo.s32 %r4, %r2, %r3, %r1;\n"
    "\tmul.wide.u32 %rd3, %r4, 4;\n"
    "\tadd.s64 %rd4, %rd1, %rd3;\n"
    "\tld.global.u32 %r5, [%rd4];\n"
    "\tshl.b32 %r6, %r1, 2;\n"
    "\tmov.u32 %r7, sm;\n"
    "\tadd.s32 %r8, %r7, %r6;\n"
    "\tst.shared.u32 [%r8], %r5;\n"
    "\tbar.sync 0;\n"
    "\tshr.u32 %r9, %r3, 1;\n"
    "$L__loop:\n"
    "\tsetp.ge.u32 %p1, %r1, %r9;\n"
    "\t@%p1 bra $L__skip;\n"
    "\tshl.b32 %r10, %r9, 2;\n"
    "\tadd.s32 %r10, %r8, %r10;\n"
    "\tld.shared.u32 %r11, [%r10];\n"
    "\tld.shared.u32 %r5, [%r8];\n"
    "\tadd.s32 %r5, %r5, %r11;\n"
    "\tst.shared.u32 [%r8], %r5;\n"
    "$L__skip:\n"
    "\tbar.sync 0;\n"
    "\tshr.u32 %r9, %r9, 1;\n"
    "\tsetp.ne.s32 %p2, %r9, 0;\n"
    "\t@%p2 bra $L__loop;\n"
    "\tsetp.ne.s32 %p1, %r1, 0;\n"
    "\t@%p1 bra $L__done;\n"
    "\tld.shared.u32 %r5, [sm];\n"
    "\tmul.wide.u32 %rd3, %r2, 4;\n"
    "\tadd.s64 %rd5, %rd2, %rd3;\n"
    "\tst.global.u32 [%rd5], %r5;\n"
    "$L__done:\n"
    "\texit;\n"
    "}\n";

static const char unsupported_ptx[] = ".version 8.0\n.target sm_90\n.address_size 64\n"
				      ".extern .func (.param .b32 r) helper(.param .b32 a);\n"
				      ".visible .entry calls(.param .u64 p)\n{\n"
				      "\t.reg .b32 %r<3>;\n"
				      "\t{\n\t.param .b32 param0;\n\tst.param.b32 [param0], %r1;\n"
				      "\t.param .b32 retval0;\n"
				      "\tcall.uni (retval0), helper, (param0);\n\t}\n"
				      "\tret;\n}\n"
				      ".visible .entry carries(.param .u64 p)\n{\n"
				      "\t.reg .b32 %r<3>;\n"
				      "\tadd.cc.u32 %r1, %r1, %r2;\n"
				      "\tret;\n}\n"
				      ".visible .entry fine()\n{\n\tret;\n}\n";

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

static CUresult run1(const struct ptx_kernel *k, uint32_t grid, uint32_t block, const void *params,
		     uint32_t pbytes, struct ptx_region *mem, size_t nmem, uint64_t *insns)
{
	struct ptx_launch l = {
	    .grid = {grid, 1, 1},
	    .block = {block, 1, 1},
	    .params = params,
	    .param_bytes = pbytes,
	    .mem = mem,
	    .nmem = nmem,
	};
	CUresult r = ptx_run(k, &l);
	if (insns)
		*insns = l.insns;
	if (r)
		fprintf(stderr, "ptx_run: %d: %s\n", (int)r, l.fault);
	return r;
}

struct saxpy_params {
	uint64_t x, y;
	uint32_t n;
	uint32_t pad;
};

static void test_saxpy(void **state)
{
	(void)state;
	struct ptx_module *m = parse_ok(saxpy_ptx);
	const struct ptx_kernel *k = ptx_find(m, "saxpy");
	assert_non_null(k);
	assert_int_equal(k->unsupported[0], 0);
	assert_int_equal(k->param_bytes, 20);
	enum { N = 1000 };
	static float x[N], y[N];
	for (int i = 0; i < N; i++)
		x[i] = (float)i, y[i] = 1.0f;
	struct ptx_region mem[2] = {{0x10000, sizeof x, (uint8_t *)x}, {0x20000, sizeof y, (uint8_t *)y}};
	struct saxpy_params p = {0x10000, 0x20000, N, 0};
	uint64_t insns;
	assert_int_equal(run1(k, (N + 127) / 128, 128, &p, 20, mem, 2, &insns), CUDA_SUCCESS);
	for (int i = 0; i < N; i++)
		assert_true(y[i] == 2.0f * (float)i + 1.0f);
	assert_true(insns >= (uint64_t)N * 15);
	/* One element too many: the last thread reads past y's allocation. */
	p.n = N + 1;
	assert_int_equal(run1(k, (N + 128) / 128, 128, &p, 20, mem, 2, NULL), CUDA_ERROR_ILLEGAL_ADDRESS);
	/* A misaligned pointer. */
	p.n = N - 1;
	p.y = 0x20002;
	assert_int_equal(run1(k, 1, 32, &p, 20, mem, 2, NULL), CUDA_ERROR_MISALIGNED_ADDRESS);
	/* A parameter buffer shorter than the kernel reads. */
	p.y = 0x20000;
	assert_int_equal(run1(k, 1, 32, &p, 16, mem, 2, NULL), CUDA_ERROR_ILLEGAL_ADDRESS);
	ptx_free(m);
}

static void test_reduce(void **state)
{
	(void)state;
	struct ptx_module *m = parse_ok(saxpy_ptx);
	const struct ptx_kernel *k = ptx_find(m, "reduce");
	assert_non_null(k);
	assert_int_equal(k->unsupported[0], 0);
	assert_int_equal(k->shared_static, 1024);
	enum { B = 256, NB = 5 };
	static uint32_t in[B * NB], out[NB];
	for (int i = 0; i < B * NB; i++)
		in[i] = (uint32_t)(i * 7 + 3);
	struct ptx_region mem[2] = {{0x10000, sizeof in, (uint8_t *)in},
				    {0x40000, sizeof out, (uint8_t *)out}};
	uint64_t p[2] = {0x10000, 0x40000};
	assert_int_equal(run1(k, NB, B, p, 16, mem, 2, NULL), CUDA_SUCCESS);
	for (int b = 0; b < NB; b++) {
		uint32_t s = 0;
		for (int i = 0; i < B; i++)
			s += in[b * B + i];
		assert_int_equal(out[b], s);
	}
	ptx_free(m);
}

static void test_unsupported_named(void **state)
{
	(void)state;
	struct ptx_module *m = parse_ok(unsupported_ptx);
	const struct ptx_kernel *k = ptx_find(m, "calls");
	assert_non_null(k);
	assert_true(k->unsupported[0] != 0);
	assert_non_null(strstr(k->unsupported, "call to helper")); /* an extern the driver lacks */
	k = ptx_find(m, "carries");
	assert_non_null(k);
	assert_true(k->unsupported[0] != 0);
	assert_non_null(strstr(k->unsupported, "add.cc"));
	k = ptx_find(m, "fine");
	assert_non_null(k);
	assert_int_equal(k->unsupported[0], 0);
	assert_null(ptx_find(m, "helper")); /* a .func is no kernel */
	assert_int_equal(run1(ptx_find(m, "calls"), 1, 1, NULL, 0, NULL, 0, NULL), CUDA_ERROR_NOT_SUPPORTED);
	ptx_free(m);
}

static const char *const malformed[] = {
    "",
    ".entry",
    ".entry k(",
    ".entry k( .param .u64 p",
    ".entry k( .param .u64",
    ".entry k() {",
    ".entry k() { .reg .b32 %r<99999999999>; ret; }",
    ".entry k() { .reg .b32 %r<0>; ret; }",
    ".entry k() { .reg .b32 %r<5>; mov.u32 %r9, 1; }",
    ".entry k() { bra nowhere; }",
    ".entry k() { .reg .b32 %r<2>; ld.global.u32 %r1, [%r1+; }",
    ".entry k() { .reg .pred %p<2>; @%p1 }",
    ".entry k() {{{{",
    ".entry k() }}}}",
    ".entry k() { .shared .b8 s[99999999999]; ret; }",
    ".entry k() { .local .b8 l[99999999]; ret; }",
    ".entry k() { .reg .b32 %r<2>; mov.u32 %r1, %r1, %r1, %r1, %r1, %r1, %r1; }",
    ".entry k() { .reg .b32 %r<2>; add.u32 %r1; }",
    ".entry k() { .reg .b32 %r<2>; st.global.v4.u32 [%r1], {%r1, %r1}; }",
    ".entry k() { .reg .b32 %r<2>; ld.global.v2.u32 %r1, [%r1]; }",
    ".entry k() { .reg .b32 %r<2>; shfl.sync.idx.b32 %r1|%r1, %r1; }",
    ".entry k() { .reg .b64 %rd<2>; ld.param.u64 %rd1, [nosuchparam]; }",
    ".entry k(.param .align 99999 .b8 p[4]) { ret; }",
    ".entry k(.param .b8 p[99999999]) { ret; }",
    "/* unterminated",
    "\"unterminated string",
    ".version 8.0 .target sm_90, texmode_independent .address_size 64 .entry k() { exit; }",
    ".entry k() { mov.u32 %r1, 0f; }",
    ".entry k() { .reg .f32 %f<2>; mov.f32 %f1, 0fZZ; add.f32 %f1, %f1, 1.5e; }",
    ".entry k() { .reg .b32 %r<2>; @!%r1 bra.uni $L; $L: $L: ret; }",
    ".entry k() { .reg .b32 %r<2>; ld.shared::cluster.u32 %r1, [%r1]; }",
    ".global .align 4 .b8 g[4] = {1, 2, {3, {4}}}; .entry k() { ret; }",
    ".entry k() { .reg .b32 %r<2>; prmt.b32.f4e %r1, %r1, %r1, %r1; }",
    ".entry k() { .reg .b32 %r<2>; set.lt.u32 %r1, %r1, %r1; }",
    ".entry k() { .reg .b16 %h<2>; add.f16 %h1, %h1, %h1; }",
    ".entry k() { .reg .b32 %r<2>; atom.global.cas.b32 %r1, [%r1], %r1; }",
    ".entry k() { .reg .b32 %r<2>; lop3.b32 %r1, %r1, %r1, %r1; }",
};

static CUresult stop_soon(void *arg)
{
	int *n = arg;
	return ++*n > 4 ? CUDA_ERROR_LAUNCH_TIMEOUT : CUDA_SUCCESS;
}

/* Parses text; if a kernel comes out runnable, runs it a little over one
 * region (every pointer parameter pointing into it). */
static void parse_and_poke(const char *text, size_t len)
{
	struct ptx_module *m = NULL;
	char err[160];
	if (ptx_parse(text, len, NULL, NULL, &m, err, sizeof err) < 0) {
		assert_null(m);
		return;
	}
	static uint8_t buf[4096];
	struct ptx_region mem = {0x10000, sizeof buf, buf};
	uint64_t params[8];
	for (int i = 0; i < 8; i++)
		params[i] = 0x10000 + 64 * (uint64_t)i;
	((uint32_t *)params)[4] = 100;
	for (uint32_t i = 0; i < m->nkernels; i++) {
		const struct ptx_kernel *k = &m->kernels[i];
		int polls = 0;
		struct ptx_launch l = {.grid = {2, 1, 1},
				       .block = {40, 1, 1},
				       .shared_dyn = 64,
				       .params = (const uint8_t *)params,
				       .param_bytes = sizeof params,
				       .mem = &mem,
				       .nmem = 1,
				       .cancelled = stop_soon,
				       .arg = &polls};
		(void)ptx_run(k, &l);
	}
	ptx_free(m);
}

static void test_malformed(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof malformed / sizeof *malformed; i++)
		parse_and_poke(malformed[i], strlen(malformed[i]));
	/* Unknown registers and labels mark the kernel, not the module. */
	struct ptx_module *m = parse_ok(".entry k() { .reg .b32 %r<5>; mov.u32 %r9, 1; }");
	assert_true(m->kernels[0].unsupported[0] != 0);
	ptx_free(m);
	/* Text that is not PTX at all is refused with a reason. */
	char err[160] = "";
	assert_int_equal(ptx_parse(".entry k() {{{{", 15, NULL, NULL, &m, err, sizeof err), -1);
	assert_true(err[0] != 0);
	/* Not NUL-terminated: the parser reads only len bytes. */
	char *exact = malloc(sizeof saxpy_ptx - 1);
	memcpy(exact, saxpy_ptx, sizeof saxpy_ptx - 1);
	parse_and_poke(exact, sizeof saxpy_ptx - 1);
	parse_and_poke(exact, 200);
	free(exact);
}

/* Random mutations of valid kernels: whatever comes out, nothing may crash
 * (ASan and UBSan watch), and a runnable kernel must end. */
static void test_mutations(void **state)
{
	(void)state;
	uint32_t s = 0x9e3779b9;
	size_t n = strlen(saxpy_ptx);
	char *t = malloc(n + 64);
	static const char *const inserts[] = {
	    "%r1",           "[", "]",          "{",   "}", ";",      ",",  "@%p1 ",
	    "bra $L__loop;", "-", "0f7F800000", ".v4", "|", "%tid.x", "sm", "99999999999999999999"};
	for (int iter = 0; iter < 3000; iter++) {
		memcpy(t, saxpy_ptx, n + 1);
		size_t len = n;
		int edits = 1 + (int)(s % 4);
		for (int e = 0; e < edits; e++) {
			s ^= s << 13, s ^= s >> 17, s ^= s << 5;
			size_t at = s % len;
			switch ((s >> 20) % 4) {
			case 0:
				t[at] = (char)(s >> 8);
				break;
			case 1:
				len = at; /* truncate */
				t[len] = 0;
				break;
			case 2: {
				const char *ins = inserts[(s >> 12) % (sizeof inserts / sizeof *inserts)];
				size_t il = strlen(ins);
				if (len + il < n + 60) {
					memmove(t + at + il, t + at, len - at + 1);
					memcpy(t + at, ins, il);
					len += il;
				}
				break;
			}
			default: {
				size_t cut = 1 + (s >> 8) % 16;
				if (at + cut < len) {
					memmove(t + at, t + at + cut, len - at - cut + 1);
					len -= cut;
				}
				break;
			}
			}
			if (!len)
				break;
		}
		parse_and_poke(t, len);
	}
	free(t);
}

/* The driver: a PTX text module without host implementations computes;
 * strict refuses a module naming what it lacks; off computes nothing. */
static void test_driver(void **state)
{
	(void)state;
	unsetenv("XGPU_SIM_KERNELS");
	unsetenv("XGPU_SIM_PTX");
	assert_int_equal(cuInit(0), CUDA_SUCCESS);
	CUcontext ctx;
	assert_int_equal(cuCtxCreate(&ctx, NULL, 0, 0), CUDA_SUCCESS);
	CUmodule mod;
	assert_int_equal(cuModuleLoadData(&mod, saxpy_ptx), CUDA_SUCCESS);
	CUfunction f;
	assert_int_equal(cuModuleGetFunction(&f, mod, "saxpy"), CUDA_SUCCESS);
	enum { N = 4096 };
	static float x[N], y[N];
	for (int i = 0; i < N; i++)
		x[i] = (float)i, y[i] = 0.5f;
	CUdeviceptr dx, dy;
	assert_int_equal(cuMemAlloc(&dx, sizeof x), CUDA_SUCCESS);
	assert_int_equal(cuMemAlloc(&dy, sizeof y), CUDA_SUCCESS);
	assert_int_equal(cuMemcpyHtoDAsync(dx, x, sizeof x, NULL), CUDA_SUCCESS);
	assert_int_equal(cuMemcpyHtoDAsync(dy, y, sizeof y, NULL), CUDA_SUCCESS);
	int n = N;
	void *args[] = {&dx, &dy, &n};
	assert_int_equal(cuLaunchKernel(f, N / 256, 1, 1, 256, 1, 1, 0, NULL, args, NULL), CUDA_SUCCESS);
	assert_int_equal(cuMemcpyDtoHAsync(y, dy, sizeof y, NULL), CUDA_SUCCESS);
	assert_int_equal(cuCtxSynchronize(), CUDA_SUCCESS);
	for (int i = 0; i < N; i++)
		assert_true(y[i] == 2.0f * (float)i + 0.5f);
	/* Off: the same launch takes its time and computes nothing. */
	setenv("XGPU_SIM_PTX", "off", 1);
	CUmodule off;
	assert_int_equal(cuModuleLoadData(&off, saxpy_ptx), CUDA_SUCCESS);
	CUfunction foff;
	assert_int_equal(cuModuleGetFunction(&foff, off, "saxpy"), CUDA_SUCCESS);
	assert_int_equal(cuLaunchKernel(foff, N / 256, 1, 1, 256, 1, 1, 0, NULL, args, NULL), CUDA_SUCCESS);
	assert_int_equal(cuMemcpyDtoHAsync(y, dy, sizeof y, NULL), CUDA_SUCCESS);
	assert_int_equal(cuCtxSynchronize(), CUDA_SUCCESS);
	for (int i = 0; i < N; i++)
		assert_true(y[i] == 2.0f * (float)i + 0.5f);
	assert_int_equal(cuModuleUnload(off), CUDA_SUCCESS);
	/* Strict: a module with a kernel it cannot run is refused; default:
	 * loaded, that kernel uncomputed. */
	setenv("XGPU_SIM_PTX", "strict", 1);
	CUmodule um;
	assert_int_equal(cuModuleLoadData(&um, unsupported_ptx), CUDA_ERROR_NOT_SUPPORTED);
	unsetenv("XGPU_SIM_PTX");
	assert_int_equal(cuModuleLoadData(&um, unsupported_ptx), CUDA_SUCCESS);
	assert_int_equal(cuModuleUnload(um), CUDA_SUCCESS);
	/* A guest kernel's own out-of-bounds read is the context's fault. */
	n = N + 1;
	assert_int_equal(cuLaunchKernel(f, N / 256 + 1, 1, 1, 256, 1, 1, 0, NULL, args, NULL), CUDA_SUCCESS);
	assert_int_equal(cuCtxSynchronize(), CUDA_ERROR_ILLEGAL_ADDRESS);
	cuModuleUnload(mod);
	cuCtxDestroy(ctx);
}

/* Thread-instructions per second on one core, for a simple kernel. */
static void test_speed(void **state)
{
	(void)state;
	struct ptx_module *m = parse_ok(saxpy_ptx);
	const struct ptx_kernel *k = ptx_find(m, "saxpy");
	enum { N = 1 << 20 };
	float *x = calloc(N, sizeof *x), *y = calloc(N, sizeof *y);
	assert_non_null(x);
	assert_non_null(y);
	struct ptx_region mem[2] = {{0x10000000, N * 4, (uint8_t *)x}, {0x20000000, N * 4, (uint8_t *)y}};
	struct saxpy_params p = {0x10000000, 0x20000000, N, 0};
	struct timespec a, b;
	uint64_t insns = 0, total = 0;
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (int rep = 0; rep < 2; rep++) {
		assert_int_equal(run1(k, N / 256, 256, &p, 20, mem, 2, &insns), CUDA_SUCCESS);
		total += insns;
	}
	clock_gettime(CLOCK_MONOTONIC, &b);
	double s = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
	printf("RESULT ptx_speed kernel=saxpy threads=%d thread_insns=%llu seconds=%.3f rate=%.1fM/s\n", N,
	       (unsigned long long)total, s, (double)total / s / 1e6);
	free(x);
	free(y);
	ptx_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_saxpy),
	    cmocka_unit_test(test_reduce),
	    cmocka_unit_test(test_unsupported_named),
	    cmocka_unit_test(test_malformed),
	    cmocka_unit_test(test_mutations),
	    cmocka_unit_test(test_driver),
	    cmocka_unit_test(test_speed),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
