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
#include "ptx_testlib.h"

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

/* Worker threads for run1's launches: 0, the default (XGPU_SIM_PTX_THREADS
 * or the CPUs), but test_speed measures one core. */
static uint32_t run1_threads;

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
	    .threads = run1_threads,
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

/* Shared addresses are 32-bit: a base that wrapped below zero plus an
 * offset reaches a valid word, as on a GPU (cuSOLVER's ipiv_lower_small
 * computes its shared addresses so). Thread t stores t at sm[t], then reads
 * it back as [base + 32] with base = 4t - 32, which wraps below zero for
 * t < 8. */
static const char wrap_ptx[] = ".version 8.0\n.target sm_90\n.address_size 64\n"
			       ".visible .entry wrap(.param .u64 out)\n{\n"
			       "\t.reg .b32 %r<8>;\n\t.reg .b64 %rd<4>;\n"
			       "\t.shared .align 4 .b8 sm[128];\n"
			       "\tmov.u32 %r1, %tid.x;\n"
			       "\tmov.u32 %r2, sm;\n"
			       "\tshl.b32 %r3, %r1, 2;\n"
			       "\tadd.s32 %r4, %r2, %r3;\n"
			       "\tst.shared.u32 [%r4], %r1;\n"
			       "\tbar.sync 0;\n"
			       "\tadd.s32 %r5, %r4, -32;\n"
			       "\tld.shared.u32 %r6, [%r5+32];\n"
			       "\tld.param.u64 %rd1, [out];\n"
			       "\tcvta.to.global.u64 %rd2, %rd1;\n"
			       "\tmul.wide.u32 %rd3, %r1, 4;\n"
			       "\tadd.s64 %rd2, %rd2, %rd3;\n"
			       "\tst.global.u32 [%rd2], %r6;\n"
			       "\tret;\n}\n";

static void test_shared_wrap(void **state)
{
	(void)state;
	struct ptx_module *m = parse_ok(wrap_ptx);
	const struct ptx_kernel *k = ptx_find(m, "wrap");
	assert_non_null(k);
	assert_int_equal(k->unsupported[0], 0);
	static uint32_t out[32];
	memset(out, 0xff, sizeof out);
	struct ptx_region mem = {0x10000, sizeof out, (uint8_t *)out};
	uint64_t p = 0x10000;
	assert_int_equal(run1(k, 1, 32, &p, 8, &mem, 1, NULL), CUDA_SUCCESS);
	for (uint32_t t = 0; t < 32; t++)
		assert_int_equal(out[t], t);
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

/* Global atomics from many blocks on several workers: each of the 64 x 128
 * threads adds 1 sixteen times (atom.add, red.add, a float atom.add that is
 * a compare-and-swap loop) and offers its index to atom.max; the counts
 * are exact only if the workers' updates are host atomics. */
static const char atomics_ptx[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry count(.param .u64 p)\n{\n"
    "\t.reg .pred %p<2>;\n\t.reg .b32 %r<8>;\n\t.reg .f32 %f<3>;\n\t.reg .b64 %rd<4>;\n"
    "\tld.param.u64 %rd1, [p];\n\tmov.u32 %r1, %tid.x;\n\tmov.u32 %r2, %ctaid.x;\n"
    "\tmov.u32 %r3, %ntid.x;\n\tmad.lo.s32 %r4, %r2, %r3, %r1;\n\tmov.u32 %r5, 0;\n"
    "$L__top:\n\tatom.global.add.u32 %r6, [%rd1], 1;\n\tred.global.add.u64 [%rd1+8], 1;\n"
    "\tatom.global.add.f32 %f1, [%rd1+16], 0f3F800000;\n"
    "\tadd.s32 %r5, %r5, 1;\n\tsetp.lt.u32 %p1, %r5, 16;\n\t@%p1 bra $L__top;\n"
    "\tatom.global.max.s32 %r7, [%rd1+20], %r4;\n\tret;\n}\n";

static void test_atomics_threads(void **state)
{
	(void)state;
	struct ptx_module *m = parse_ok(atomics_ptx);
	const struct ptx_kernel *k = ptx_find(m, "count");
	assert_non_null(k);
	assert_int_equal(k->unsupported[0], 0);
	enum { NB = 64, NT = 128 };
	for (uint32_t threads = 1; threads <= 4; threads += 3) {
		static uint64_t buf[4];
		memset(buf, 0, sizeof buf);
		struct ptx_region mem = {0x10000, sizeof buf, (uint8_t *)buf};
		uint64_t p = 0x10000;
		struct ptx_launch l = {.grid = {NB, 1, 1},
				       .block = {NT, 1, 1},
				       .params = (const uint8_t *)&p,
				       .param_bytes = 8,
				       .mem = &mem,
				       .nmem = 1,
				       .threads = threads};
		assert_int_equal(ptx_run(k, &l), CUDA_SUCCESS);
		uint32_t c32, mx;
		float f;
		memcpy(&c32, buf, 4);
		memcpy(&f, (uint8_t *)buf + 16, 4);
		memcpy(&mx, (uint8_t *)buf + 20, 4);
		assert_int_equal(c32, NB * NT * 16);
		assert_int_equal(buf[1], NB * NT * 16);
		assert_true(f == (float)(NB * NT * 16));
		assert_int_equal(mx, NB * NT - 1);
	}
	ptx_free(m);
}

/* A fault in one block ends the launch with that fault, and stops the
 * other workers: block 3 stores out of bounds at once, the others each
 * loop 2000 times. */
static const char fault_ptx[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry spin(.param .u64 p)\n{\n"
    "\t.reg .pred %p<3>;\n\t.reg .b32 %r<6>;\n\t.reg .b64 %rd<3>;\n"
    "\tld.param.u64 %rd1, [p];\n\tmov.u32 %r1, %ctaid.x;\n\tsetp.ne.s32 %p1, %r1, 3;\n"
    "\t@%p1 bra $L__spin;\n\tst.global.u32 [%rd1+4096], %r1;\n"
    "$L__spin:\n\tmov.u32 %r2, 0;\n"
    "$L__top:\n\tadd.s32 %r2, %r2, 1;\n\tsetp.lt.u32 %p2, %r2, 2000;\n\t@%p2 bra $L__top;\n"
    "\tret;\n}\n";

static void test_fault_stops_workers(void **state)
{
	(void)state;
	struct ptx_module *m = parse_ok(fault_ptx);
	const struct ptx_kernel *k = ptx_find(m, "spin");
	assert_non_null(k);
	enum { NB = 4096, NT = 64 };
	static uint32_t buf[16];
	struct ptx_region mem = {0x10000, sizeof buf, (uint8_t *)buf};
	uint64_t p = 0x10000;
	for (uint32_t threads = 1; threads <= 4; threads += 3) {
		struct ptx_launch l = {.grid = {NB, 1, 1},
				       .block = {NT, 1, 1},
				       .params = (const uint8_t *)&p,
				       .param_bytes = 8,
				       .mem = &mem,
				       .nmem = 1,
				       .threads = threads};
		assert_int_equal(ptx_run(k, &l), CUDA_ERROR_ILLEGAL_ADDRESS);
		assert_non_null(strstr(l.fault, "block (3,0,0)"));
		/* The whole grid would run NB * NT * 6000 thread-instructions;
		 * at most the blocks started before or beside the fault run. */
		assert_true(l.insns < (uint64_t)NB * NT * 6000 / 8);
	}
	ptx_free(m);
}

/* The decode-time fast forms compute what the general path does, bit for
 * bit: a kernel of the forms they cover, over inputs that reach their edges
 * (shifts past the width, negative and NaN operands, float to int out of
 * range), with half the lanes of each warp under a guard, run both ways. */
static const char forms_ptx[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry forms(.param .u64 px, .param .u64 pout)\n{\n"
    "\t.reg .pred %p<6>;\n\t.reg .b32 %r<40>;\n\t.reg .f32 %f<12>;\n\t.reg .f64 %fd<6>;\n"
    "\t.reg .b64 %rd<24>;\n\t.shared .align 4 .b8 fsm[64];\n"
    "\tld.param.u64 %rd1, [px];\n\tld.param.u64 %rd2, [pout];\n"
    "\tcvta.to.global.u64 %rd1, %rd1;\n\tcvta.to.global.u64 %rd2, %rd2;\n"
    "\tmov.u32 %r1, %tid.x;\n\tmov.u32 %r2, %ctaid.x;\n\tmov.u32 %r3, %ntid.x;\n"
    "\tmad.lo.s32 %r4, %r2, %r3, %r1;\n\tmul.wide.u32 %rd3, %r4, 8;\n\tadd.s64 %rd4, %rd1, %rd3;\n"
    "\tld.global.v2.u32 {%r5, %r6}, [%rd4];\n"
    "\tmul.wide.u32 %rd5, %r4, 512;\n\tadd.s64 %rd6, %rd2, %rd5;\n"
    "\tand.b32 %r7, %r1, 1;\n\tsetp.eq.s32 %p5, %r7, 0;\n"
    "\tadd.s32 %r8, %r5, %r6;\n\tsub.s32 %r9, %r5, %r6;\n\tmul.lo.s32 %r10, %r5, %r6;\n"
    "\tmad.lo.s32 %r11, %r5, %r6, %r8;\n\tand.b32 %r12, %r5, %r6;\n\tor.b32 %r13, %r5, %r6;\n"
    "\txor.b32 %r14, %r5, %r6;\n\tand.b32 %r15, %r6, 63;\n\tshl.b32 %r16, %r5, %r15;\n"
    "\tshr.u32 %r17, %r5, %r15;\n\tshr.s32 %r18, %r5, %r15;\n"
    "\t@%p5 add.s32 %r8, %r8, 7;\n\t@!%p5 sub.s32 %r9, %r9, 7;\n"
    "\tst.global.v4.u32 [%rd6], {%r8, %r9, %r10, %r11};\n"
    "\tst.global.v4.u32 [%rd6+16], {%r12, %r13, %r14, %r16};\n"
    "\tst.global.v2.u32 [%rd6+32], {%r17, %r18};\n"
    "\tmul.wide.s32 %rd7, %r5, %r6;\n\tmul.wide.u32 %rd8, %r5, %r6;\n"
    "\tmad.wide.s32 %rd9, %r5, %r6, %rd7;\n\tmad.wide.u32 %rd10, %r5, %r6, %rd8;\n"
    "\tcvt.s64.s32 %rd11, %r5;\n\tcvt.u64.u32 %rd12, %r6;\n\tshl.b64 %rd13, %rd11, %r15;\n"
    "\tshr.s64 %rd14, %rd11, %r15;\n\tshr.u64 %rd15, %rd11, %r15;\n"
    "\tmad.lo.s64 %rd16, %rd11, %rd12, %rd7;\n\txor.b64 %rd17, %rd11, %rd12;\n"
    "\tsub.s64 %rd18, %rd11, %rd12;\n\tcvt.u32.u64 %r19, %rd16;\n"
    "\tst.global.u64 [%rd6+40], %rd7;\n\tst.global.u64 [%rd6+48], %rd8;\n"
    "\tst.global.u64 [%rd6+56], %rd9;\n\tst.global.u64 [%rd6+64], %rd10;\n"
    "\tst.global.u64 [%rd6+72], %rd13;\n\tst.global.u64 [%rd6+80], %rd14;\n"
    "\tst.global.u64 [%rd6+88], %rd15;\n\tst.global.u64 [%rd6+96], %rd16;\n"
    "\tst.global.u64 [%rd6+104], %rd17;\n\tst.global.u64 [%rd6+112], %rd18;\n"
    "\tst.global.u32 [%rd6+120], %r19;\n"
    "\tmov.b32 %f1, %r5;\n\tmov.b32 %f2, %r6;\n\tadd.f32 %f3, %f1, %f2;\n"
    "\tsub.f32 %f4, %f1, %f2;\n\tmul.f32 %f5, %f1, %f2;\n\tfma.rn.f32 %f6, %f1, %f2, %f3;\n"
    "\tcvt.rzi.s32.f32 %r20, %f1;\n\tcvt.rn.f32.s32 %f7, %r5;\n\tcvt.rn.f32.u32 %f8, %r6;\n"
    "\tcvt.f64.f32 %fd1, %f1;\n\tcvt.f64.f32 %fd2, %f2;\n\tadd.f64 %fd3, %fd1, %fd2;\n"
    "\tmul.f64 %fd4, %fd1, %fd2;\n\tfma.rn.f64 %fd5, %fd1, %fd2, %fd3;\n\tcvt.rn.f32.f64 %f9, %fd5;\n"
    "\tst.global.v4.f32 [%rd6+128], {%f3, %f4, %f5, %f6};\n"
    "\tst.global.v2.f32 [%rd6+144], {%f7, %f8};\n\tst.global.u32 [%rd6+152], %r20;\n"
    "\tst.global.f32 [%rd6+156], %f9;\n\tst.global.f64 [%rd6+160], %fd3;\n"
    "\tst.global.f64 [%rd6+168], %fd4;\n"
    "\tsetp.lt.s32 %p1, %r5, %r6;\n\tsetp.lo.s32 %p2, %r5, %r6;\n\tsetp.ne.f32 %p3, %f1, %f2;\n"
    "\tsetp.ge.f64 %p4, %fd1, %fd2;\n"
    "\tselp.u32 %r21, 1, 0, %p1;\n\tselp.u32 %r22, 2, 0, %p2;\n\tselp.u32 %r23, 4, 0, %p3;\n"
    "\tselp.u32 %r24, 8, 0, %p4;\n\tor.b32 %r25, %r21, %r22;\n\tor.b32 %r25, %r25, %r23;\n"
    "\tor.b32 %r25, %r25, %r24;\n\tsetp.gt.u64 %p1|%p2, %rd11, %rd12;\n"
    "\tselp.b64 %rd19, %rd11, %rd12, %p2;\n\tselp.u32 %r26, 16, 0, %p1;\n"
    "\tor.b32 %r25, %r25, %r26;\n\tst.global.u32 [%rd6+176], %r25;\n"
    "\tst.global.u64 [%rd6+184], %rd19;\n"
    "\tld.global.s8 %r27, [%rd4+1];\n\tld.global.u16 %r28, [%rd4+2];\n"
    "\tld.global.s32 %rd20, [%rd4+4];\n"
    "\tst.global.u32 [%rd6+192], %r27;\n\tst.global.u32 [%rd6+196], %r28;\n"
    "\tst.global.u64 [%rd6+200], %rd20;\n\tst.global.u8 [%rd6+208], %r5;\n"
    "\tst.global.u16 [%rd6+210], %r6;\n"
    "\tmin.s32 %r29, %r5, %r6;\n\tmax.s32 %r30, %r5, %r6;\n\tmin.u32 %r31, %r5, %r6;\n"
    "\tmax.u32 %r32, %r5, %r6;\n\tst.global.v4.u32 [%rd6+256], {%r29, %r30, %r31, %r32};\n"
    "\tdiv.s32 %r29, %r5, %r6;\n\trem.s32 %r30, %r5, %r6;\n\tdiv.u32 %r31, %r5, %r6;\n"
    "\trem.u32 %r32, %r5, %r6;\n\tst.global.v4.u32 [%rd6+272], {%r29, %r30, %r31, %r32};\n"
    "\tneg.s32 %r29, %r5;\n\tnot.b32 %r30, %r5;\n\tnot.b64 %rd21, %rd11;\n"
    "\tst.global.v2.u32 [%rd6+288], {%r29, %r30};\n\tst.global.u64 [%rd6+296], %rd21;\n"
    "\tmin.f32 %f3, %f1, %f2;\n\tmax.f32 %f4, %f1, %f2;\n\tdiv.rn.f32 %f5, %f1, %f2;\n"
    "\tneg.f32 %f6, %f1;\n\tst.global.v4.f32 [%rd6+320], {%f3, %f4, %f5, %f6};\n"
    "\tabs.f32 %f3, %f1;\n\tsqrt.rn.f32 %f4, %f1;\n\trcp.rn.f32 %f5, %f2;\n"
    "\tdiv.rn.f64 %fd5, %fd1, %fd2;\n\tst.global.v4.f32 [%rd6+336], {%f3, %f4, %f5, %f6};\n"
    "\tst.global.f64 [%rd6+352], %fd5;\n"
    /* shared atomics, eight lanes to a word: the old values depend on the
     * lane order, which both paths keep */
    "\tand.b32 %r33, %r1, 7;\n\tshl.b32 %r33, %r33, 2;\n\tmov.u32 %r34, fsm;\n"
    "\tadd.s32 %r34, %r34, %r33;\n\tst.shared.u32 [%r34], 0;\n\tbar.sync 0;\n"
    "\t@%p5 atom.shared.add.u32 %r35, [%r34], %r5;\n\tred.shared.add.u32 [%r34+32], %r6;\n"
    "\tbar.sync 0;\n\tld.shared.u32 %r36, [%r34];\n\tld.shared.u32 %r37, [%r34+32];\n"
    "\tst.global.v4.u32 [%rd6+368], {%r35, %r36, %r37, %r33};\n\tret;\n}\n";

static void test_fast_forms_match(void **state)
{
	(void)state;
	struct ptx_module *m = parse_ok(forms_ptx);
	const struct ptx_kernel *k = ptx_find(m, "forms");
	assert_non_null(k);
	if (k->unsupported[0])
		fprintf(stderr, "forms: %s\n", k->unsupported);
	assert_int_equal(k->unsupported[0], 0);
	enum { NB = 4, NT = 96, N = NB * NT };
	static uint32_t in[N * 2];
	static uint8_t out[2][N * 512];
	static const uint32_t edge[] = {0,           1,           0xffffffffu, 0x80000000u, 0x7fffffffu,
					31,          32,          33,          63,          64,
					0x7fc00000u, 0xff800000u, 0x4f000000u, 0xcf000001u, 0x3f800000u,
					0xbfc00000u, 0x00000001u, 0x5f800000u};
	uint32_t s = 12345;
	for (int i = 0; i < N * 2; i++) {
		s = s * 1103515245u + 12345u;
		in[i] = i < 2 * 18 * 18 ? (i & 1 ? edge[i / 2 % 18] : edge[i / 2 / 18]) : s;
	}
	for (int slow = 0; slow < 2; slow++) {
		struct ptx_region mem[2] = {{0x10000, sizeof in, (uint8_t *)in},
					    {0x100000, sizeof out[0], out[slow]}};
		uint64_t p[2] = {0x10000, 0x100000};
		struct ptx_launch l = {.grid = {NB, 1, 1},
				       .block = {NT, 1, 1},
				       .params = (const uint8_t *)p,
				       .param_bytes = 16,
				       .mem = mem,
				       .nmem = 2,
				       .threads = 2,
				       .slow = slow};
		assert_int_equal(ptx_run(k, &l), CUDA_SUCCESS);
	}
	/* A NaN's sign and payload are the host's choice (which operand of
	 * x + y it keeps, which the compiler may swap): in the float slots
	 * (bytes 128 to 175 and 320 to 359) any NaN matches any other. */
	for (int i = 0; i < N * 512; i += 4) {
		uint32_t f, g;
		memcpy(&f, &out[0][i], 4);
		memcpy(&g, &out[1][i], 4);
		int at = i % 512;
		bool nans = (f & 0x7fffffffu) > 0x7f800000u && (g & 0x7fffffffu) > 0x7f800000u;
		if (f != g && !(nans && ((at >= 128 && at < 176) || (at >= 320 && at < 360)))) {
			fprintf(stderr, "thread %d byte %d: fast %08x, general %08x\n", i / 512, at, f, g);
			fail();
		}
	}
	ptx_free(m);
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
	run1_threads = 1;
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (int rep = 0; rep < 2; rep++) {
		assert_int_equal(run1(k, N / 256, 256, &p, 20, mem, 2, &insns), CUDA_SUCCESS);
		total += insns;
	}
	clock_gettime(CLOCK_MONOTONIC, &b);
	double s = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
	run1_threads = 0;
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
	    cmocka_unit_test(test_shared_wrap),
	    cmocka_unit_test(test_unsupported_named),
	    cmocka_unit_test(test_malformed),
	    cmocka_unit_test(test_mutations),
	    cmocka_unit_test(test_driver),
	    cmocka_unit_test(test_atomics_threads),
	    cmocka_unit_test(test_fault_stops_workers),
	    cmocka_unit_test(test_fast_forms_match),
	    cmocka_unit_test(test_speed),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
