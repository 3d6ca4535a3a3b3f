/* SPDX-License-Identifier: Apache-2.0 */
/* xgpu-ptx-bench.c - the PTX interpreter's speed (backend/simdrv/ptx_exec.c)
 * in thread-instructions per second, on three kernels that stand for what
 * samples run: saxpy (straight-line global loads and stores), a shared-memory
 * tree reduction (barriers, divergence that halves each step) and a loop
 * whose trip count differs per lane (divergence the whole way). Each kernel
 * runs with the decode-time fast forms off (the general path alone, what the
 * interpreter had before them) and on, on one worker thread and on N, so the
 * figures in one table come from the same machine at the same time.
 *
 * Usage: xgpu-ptx-bench [-t threads] [-s scale] [-k kernel] [-m mode]
 * (-k and -m run only the kernel or mode of that name, for profiling).
 * Prints one line per (kernel, mode): "RESULT kernel=K mode=M threads=T
 * thread_insns=I seconds=S rate=R per_core=P" (R and P in M/s).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cuda.h>

#include "simdrv/ptx.h"

static const char bench_ptx[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry saxpy(.param .u64 px, .param .u64 py, .param .u32 pn)\n{\n"
    "\t.reg .pred %p<2>;\n\t.reg .b32 %r<6>;\n\t.reg .f32 %f<4>;\n\t.reg .b64 %rd<8>;\n"
    "\tld.param.u64 %rd1, [px];\n\tld.param.u64 %rd2, [py];\n\tld.param.u32 %r2, [pn];\n"
    "\tmov.u32 %r3, %ctaid.x;\n\tmov.u32 %r4, %ntid.x;\n\tmov.u32 %r5, %tid.x;\n"
    "\tmad.lo.s32 %r1, %r3, %r4, %r5;\n\tsetp.ge.s32 %p1, %r1, %r2;\n\t@%p1 bra $L__end;\n"
    "\tcvta.to.global.u64 %rd3, %rd1;\n\tcvta.to.global.u64 %rd4, %rd2;\n"
    "\tmul.wide.s32 %rd5, %r1, 4;\n\tadd.s64 %rd6, %rd3, %rd5;\n\tld.global.nc.f32 %f1, [%rd6];\n"
    "\tadd.s64 %rd7, %rd4, %rd5;\n\tld.global.f32 %f2, [%rd7];\n"
    "\tfma.rn.f32 %f3, %f1, 0f40000000, %f2;\n\tst.global.f32 [%rd7], %f3;\n"
    "$L__end:\n\tret;\n}\n"
    /* out[block] = sum of in[block * 256 .. +256) */
    ".visible .entry reduce(.param .u64 pin, .param .u64 pout)\n{\n"
    "\t.reg .pred %p<3>;\n\t.reg .b32 %r<12>;\n\t.reg .b64 %rd<6>;\n"
    "\t.shared .align 4 .b8 sm[1024];\n"
    "\tld.param.u64 %rd1, [pin];\n\tld.param.u64 %rd2, [pout];\n"
    "\tmov.u32 %r1, %tid.x;\n\tmov.u32 %r2, %ctaid.x;\n\tmov.u32 %r3, %ntid.x;\n"
    "\tmad.lo.s32 %r4, %r2, %r3, %r1;\n\tmul.wide.u32 %rd3, %r4, 4;\n\tadd.s64 %rd4, %rd1, %rd3;\n"
    "\tld.global.u32 %r5, [%rd4];\n\tshl.b32 %r6, %r1, 2;\n\tmov.u32 %r7, sm;\n"
    "\tadd.s32 %r8, %r7, %r6;\n\tst.shared.u32 [%r8], %r5;\n\tbar.sync 0;\n\tshr.u32 %r9, %r3, 1;\n"
    "$L__loop:\n\tsetp.ge.u32 %p1, %r1, %r9;\n\t@%p1 bra $L__skip;\n"
    "\tshl.b32 %r10, %r9, 2;\n\tadd.s32 %r10, %r8, %r10;\n\tld.shared.u32 %r11, [%r10];\n"
    "\tld.shared.u32 %r5, [%r8];\n\tadd.s32 %r5, %r5, %r11;\n\tst.shared.u32 [%r8], %r5;\n"
    "$L__skip:\n\tbar.sync 0;\n\tshr.u32 %r9, %r9, 1;\n\tsetp.ne.s32 %p2, %r9, 0;\n"
    "\t@%p2 bra $L__loop;\n\tsetp.ne.s32 %p1, %r1, 0;\n\t@%p1 bra $L__done;\n"
    "\tld.shared.u32 %r5, [sm];\n\tmul.wide.u32 %rd3, %r2, 4;\n\tadd.s64 %rd5, %rd2, %rd3;\n"
    "\tst.global.u32 [%rd5], %r5;\n$L__done:\n\texit;\n}\n"
    /* out[i] = sum over j < (i % 64) + 16 of (i * j) ^ j, as floats and ints */
    ".visible .entry divloop(.param .u64 pout)\n{\n"
    "\t.reg .pred %p<3>;\n\t.reg .b32 %r<12>;\n\t.reg .f32 %f<4>;\n\t.reg .b64 %rd<6>;\n"
    "\tld.param.u64 %rd1, [pout];\n\tmov.u32 %r1, %tid.x;\n\tmov.u32 %r2, %ctaid.x;\n"
    "\tmov.u32 %r3, %ntid.x;\n\tmad.lo.s32 %r4, %r2, %r3, %r1;\n\tand.b32 %r5, %r4, 63;\n"
    "\tadd.s32 %r5, %r5, 16;\n\tmov.u32 %r6, 0;\n\tmov.u32 %r7, 0;\n\tmov.f32 %f1, 0f00000000;\n"
    "$L__top:\n\tmul.lo.s32 %r8, %r4, %r6;\n\txor.b32 %r8, %r8, %r6;\n\tadd.s32 %r7, %r7, %r8;\n"
    "\tcvt.rn.f32.s32 %f2, %r8;\n\tfma.rn.f32 %f1, %f2, 0f3F000000, %f1;\n"
    "\tadd.s32 %r6, %r6, 1;\n\tsetp.lt.u32 %p1, %r6, %r5;\n\t@%p1 bra $L__top;\n"
    "\tcvt.rzi.s32.f32 %r9, %f1;\n\tadd.s32 %r7, %r7, %r9;\n"
    "\tcvta.to.global.u64 %rd2, %rd1;\n\tmul.wide.u32 %rd3, %r4, 4;\n\tadd.s64 %rd4, %rd2, %rd3;\n"
    "\tst.global.u32 [%rd4], %r7;\n\tret;\n}\n";

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

struct job {
	const char *kernel;
	uint32_t grid, block;
	uint64_t params[3];
	uint32_t pbytes;
};

int main(int argc, char **argv)
{
	unsigned threads = 0, scale = 4;
	const char *only_k = NULL, *only_m = NULL;
	int c;
	while ((c = getopt(argc, argv, "t:s:k:m:")) != -1) {
		if (c == 't')
			threads = (unsigned)atoi(optarg);
		else if (c == 'k')
			only_k = optarg;
		else if (c == 'm')
			only_m = optarg;
		else if (c == 's')
			scale = (unsigned)atoi(optarg);
		else {
			fprintf(stderr, "usage: %s [-t threads] [-s scale] [-k kernel] [-m mode]\n", argv[0]);
			return 2;
		}
	}
	if (!scale)
		scale = 1;
	if (!threads) {
		long n = sysconf(_SC_NPROCESSORS_ONLN);
		threads = n < 1 ? 1 : n > 16 ? 16 : (unsigned)n;
	}
	struct ptx_module *m = NULL;
	char err[160];
	if (ptx_parse(bench_ptx, sizeof bench_ptx - 1, NULL, NULL, &m, err, sizeof err)) {
		fprintf(stderr, "parse: %s\n", err);
		return 1;
	}
	const uint32_t n = scale << 18; /* elements */
	uint32_t *a = calloc(n, 4), *b = calloc(n, 4);
	if (!a || !b)
		return 1;
	struct ptx_region mem[2] = {{0x10000000, (uint64_t)n * 4, (uint8_t *)a},
				    {0x20000000, (uint64_t)n * 4, (uint8_t *)b}};
	const struct job jobs[] = {
	    {"saxpy", n / 256, 256, {0x10000000, 0x20000000, n}, 20},
	    {"reduce", n / 256, 256, {0x10000000, 0x20000000}, 16},
	    {"divloop", n / 4 / 256, 256, {0x20000000}, 8},
	};
	static const struct {
		const char *name;
		bool slow;
		bool many;
	} modes[] = {{"general-1", true, false}, {"fast-1", false, false}, {"fast-N", false, true}};
	int rc = 0;
	for (size_t j = 0; j < sizeof jobs / sizeof *jobs; j++) {
		if (only_k && strcmp(only_k, jobs[j].kernel))
			continue;
		const struct ptx_kernel *k = ptx_find(m, jobs[j].kernel);
		uint32_t ref = 0;
		bool have_ref = false;
		for (size_t md = 0; md < sizeof modes / sizeof *modes; md++) {
			if (only_m && strcmp(only_m, modes[md].name))
				continue;
			/* Small whole numbers as floats: saxpy on denormals would
			 * time the FPU's microcode assists, not the interpreter. */
			for (uint32_t i = 0; i < n; i++) {
				float x = (float)(i & 1023), y = (float)(i & 4095);
				memcpy(&a[i], &x, 4);
				memcpy(&b[i], &y, 4);
			}
			struct ptx_launch l = {
			    .grid = {jobs[j].grid, 1, 1},
			    .block = {jobs[j].block, 1, 1},
			    .params = (const uint8_t *)jobs[j].params,
			    .param_bytes = jobs[j].pbytes,
			    .mem = mem,
			    .nmem = 2,
			    .threads = modes[md].many ? threads : 1,
			    .slow = modes[md].slow,
			};
			double t0 = now();
			CUresult r = ptx_run(k, &l);
			double s = now() - t0;
			if (r) {
				fprintf(stderr, "%s: %d %s\n", jobs[j].kernel, (int)r, l.fault);
				rc = 1;
				continue;
			}
			/* Every mode must compute the same thing. */
			uint32_t sum = 0;
			for (uint32_t i = 0; i < n; i++)
				sum = sum * 31 + b[i];
			if (!have_ref)
				ref = sum, have_ref = true;
			else if (sum != ref) {
				fprintf(stderr, "%s: mode %s computed a different result\n", jobs[j].kernel,
					modes[md].name);
				rc = 1;
			}
			unsigned t = modes[md].many ? threads : 1;
			printf("RESULT kernel=%s mode=%s threads=%u thread_insns=%llu seconds=%.3f rate=%.1f "
			       "per_core=%.1f\n",
			       jobs[j].kernel, modes[md].name, t, (unsigned long long)l.insns, s,
			       (double)l.insns / s / 1e6, (double)l.insns / s / 1e6 / t);
			fflush(stdout);
		}
	}
	ptx_free(m);
	free(a);
	free(b);
	return rc;
}
