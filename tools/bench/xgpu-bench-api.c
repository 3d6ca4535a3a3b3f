/* SPDX-License-Identifier: Apache-2.0 */
/* xgpu-bench-api.c - null-call and launch round trips as a CUDA program sees
 * them, through one of xgpu's two frontends, so that `make bench` can put the
 * driver frontend (libcuda.so.1) beside the runtime frontend
 * (libcudart.so.13) measured in the same run on the same daemon:
 *
 *   xgpu-bench-api runtime|driver LIBDIR FATBIN [COUNT]
 *
 * LIBDIR holds the frontend (loaded by path, so no other CUDA library can
 * answer); FATBIN is tools/bench/null_kernel.cu built, one empty kernel.
 *   runtime  registers FATBIN as nvcc's generated code does
 *            (__cudaRegisterFatBinary, __cudaRegisterFunction) and calls
 *            cudaStreamQuery(0) and cudaLaunchKernel
 *   driver   cuInit, the primary context, cuModuleLoadData(FATBIN),
 *            cuModuleGetFunction, then cuStreamQuery(0) and cuLaunchKernel
 *
 * The null call is cudaStreamQuery / cuStreamQuery of the default stream:
 * neither API has a public no-op, and this is the cheapest call each
 * forwards every time, as exactly one STREAM_QUERY round trip (exempt from
 * scheduling, like NOP; an idle stream answers at once). A launch of the
 * empty kernel <<<1, 1>>> is one LAUNCH round trip (the call returns once
 * the daemon has queued the kernel, not once it has run); every 1000
 * launches the device is synchronised, outside the timed calls, so the queue
 * stays short.
 *
 * COUNT (a multiple of 1000, or fewer) replaces the 100000 null calls and
 * 30000 launches per pass, and caps the 2000 untimed warm-up launches.
 *
 * Prints "key value" lines (api_<frontend>_<null|launch>_<batch|p50|p99>_us)
 * for tools/bench/run.sh. It is linked with nothing of xgpu's, as a guest
 * program would be. */
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Calls of each kind timed per pass, unless COUNT says (the e2e test's few). */
static unsigned null_calls = 100000, launches = 30000, launch_chunk = 1000, warmup = 2000;

typedef int result_t; /* cudaError_t and CUresult alike: 0 is success */
struct dim3_t {
	unsigned x, y, z;
};

/* The runtime API, as nvcc's generated code and a program call it. */
static void **(*rt_register_fatbin)(void *wrapper);
static void (*rt_register_fatbin_end)(void **handle);
static void (*rt_register_function)(void **handle, const char *host_fun, char *device_fun,
				    const char *device_name, int thread_limit, void *tid, void *bid,
				    void *bdim, void *gdim, int *wsize);
static result_t (*rt_launch)(const void *func, struct dim3_t grid, struct dim3_t block, void **args,
			     size_t shared, void *stream);
static result_t (*rt_stream_query)(void *stream);
static result_t (*rt_sync)(void);

/* The driver API. */
static result_t (*cu_init)(unsigned flags);
static result_t (*cu_device_get)(int *dev, int ordinal);
static result_t (*cu_primary_retain)(void **ctx, int dev);
static result_t (*cu_ctx_set_current)(void *ctx);
static result_t (*cu_module_load_data)(void **mod, const void *image);
static result_t (*cu_module_get_function)(void **fn, void *mod, const char *name);
static result_t (*cu_launch)(void *fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
			     unsigned bz, unsigned shared, void *stream, void **params, void **extra);
static result_t (*cu_stream_query)(void *stream);
static result_t (*cu_ctx_sync)(void);

static const char *frontend;
static void *cu_fn;

/* The host-side stub nvcc would generate; only its address matters. */
static void host_stub(void)
{
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void *sym(void *lib, const char *name)
{
	void *p = dlsym(lib, name);
	if (!p) {
		fprintf(stderr, "xgpu-bench-api: %s has no %s\n", frontend, name);
		exit(1);
	}
	return p;
}

static void check(result_t r, const char *what)
{
	if (r) {
		fprintf(stderr, "xgpu-bench-api: %s: %s failed (error %d)\n", frontend, what, r);
		exit(1);
	}
}

static uint8_t *read_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f || fseek(f, 0, SEEK_END) || ftell(f) <= 0) {
		fprintf(stderr, "xgpu-bench-api: cannot read %s\n", path);
		exit(1);
	}
	long n = ftell(f);
	rewind(f);
	uint8_t *b = malloc((size_t)n);
	if (!b || fread(b, 1, (size_t)n, f) != (size_t)n) {
		fprintf(stderr, "xgpu-bench-api: cannot read %s\n", path);
		exit(1);
	}
	fclose(f);
	return b;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static void report(const char *what, double batch_us, uint64_t *ns, unsigned n)
{
	qsort(ns, n, sizeof *ns, cmp_u64);
	printf("api_%s_%s_batch_us %.3f\napi_%s_%s_p50_us %.3f\napi_%s_%s_p99_us %.3f\n", frontend, what,
	       batch_us, frontend, what, (double)ns[n / 2] / 1e3, frontend, what,
	       (double)ns[(size_t)n * 99 / 100] / 1e3);
}

static bool is_runtime;

static result_t null_call(void)
{
	return is_runtime ? rt_stream_query(NULL) : cu_stream_query(NULL);
}

static result_t launch(void)
{
	struct dim3_t one = {1, 1, 1};
	return is_runtime ? rt_launch((const void *)host_stub, one, one, NULL, 0, NULL)
			  : cu_launch(cu_fn, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL);
}

static result_t sync_all(void)
{
	return is_runtime ? rt_sync() : cu_ctx_sync();
}

/* The batch mean from one clock reading around each run of calls, as
 * xgpu-bench's rtt does; p50 and p99 from a second pass timing each call. */
static void time_null_calls(void)
{
	uint64_t *ns = malloc(null_calls * sizeof *ns);
	for (unsigned i = 0; i < warmup; i++)
		check(null_call(), "the null call");
	uint64_t t0 = now_ns();
	for (unsigned i = 0; i < null_calls; i++)
		check(null_call(), "the null call");
	double batch = (double)(now_ns() - t0) / null_calls / 1e3;
	for (unsigned i = 0; i < null_calls; i++) {
		uint64_t t1 = now_ns();
		check(null_call(), "the null call");
		ns[i] = now_ns() - t1;
	}
	report("null", batch, ns, null_calls);
	free(ns);
}

static void time_launches(void)
{
	uint64_t *ns = malloc(launches * sizeof *ns);
	for (unsigned i = 0; i < warmup; i++)
		check(launch(), "a launch");
	check(sync_all(), "synchronising");
	uint64_t total = 0;
	for (unsigned i = 0; i < launches; i += launch_chunk) {
		uint64_t t0 = now_ns();
		for (unsigned j = 0; j < launch_chunk; j++)
			check(launch(), "a launch");
		total += now_ns() - t0;
		check(sync_all(), "synchronising");
	}
	double batch = (double)total / launches / 1e3;
	for (unsigned i = 0; i < launches; i++) {
		uint64_t t1 = now_ns();
		check(launch(), "a launch");
		ns[i] = now_ns() - t1;
		if ((i + 1) % launch_chunk == 0)
			check(sync_all(), "synchronising");
	}
	check(sync_all(), "synchronising");
	report("launch", batch, ns, launches);
	free(ns);
}

int main(int argc, char **argv)
{
	unsigned count = argc == 5 ? (unsigned)strtoul(argv[4], NULL, 10) : 0;
	if (argc < 4 || argc > 5 || (strcmp(argv[1], "runtime") && strcmp(argv[1], "driver")) ||
	    (argc == 5 && (count == 0 || (count > 1000 && count % 1000)))) {
		fprintf(stderr, "usage: xgpu-bench-api runtime|driver LIBDIR FATBIN [COUNT]\n");
		return 2;
	}
	if (count) {
		null_calls = launches = count;
		launch_chunk = count < 1000 ? count : 1000;
		warmup = count < warmup ? count : warmup;
	}
	frontend = argv[1];
	is_runtime = !strcmp(frontend, "runtime");
	char path[4096];
	snprintf(path, sizeof path, "%s/%s", argv[2], is_runtime ? "libcudart.so.13" : "libcuda.so.1");
	void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		fprintf(stderr, "xgpu-bench-api: %s\n", dlerror());
		return 1;
	}
	uint8_t *image = read_file(argv[3]);
	/* Client on CPU 0, as xgpu-bench's rtt (run.sh puts the daemon on 1). */
	if (sysconf(_SC_NPROCESSORS_ONLN) > 1) {
		cpu_set_t set;
		CPU_ZERO(&set);
		CPU_SET(0, &set);
		pthread_setaffinity_np(pthread_self(), sizeof set, &set);
	}
	if (is_runtime) {
		*(void **)&rt_register_fatbin = sym(lib, "__cudaRegisterFatBinary");
		*(void **)&rt_register_fatbin_end = sym(lib, "__cudaRegisterFatBinaryEnd");
		*(void **)&rt_register_function = sym(lib, "__cudaRegisterFunction");
		*(void **)&rt_launch = sym(lib, "cudaLaunchKernel");
		*(void **)&rt_stream_query = sym(lib, "cudaStreamQuery");
		*(void **)&rt_sync = sym(lib, "cudaDeviceSynchronize");
		/* nvcc's __fatBinC_Wrapper_t around the image. */
		static struct {
			int magic, version;
			const void *data, *filename;
		} wrapper = {0x466243b1, 1, NULL, NULL};
		wrapper.data = image;
		void **handle = rt_register_fatbin(&wrapper);
		rt_register_function(handle, (const char *)host_stub, (char *)"xgpu_bench_null",
				     "xgpu_bench_null", -1, NULL, NULL, NULL, NULL, NULL);
		rt_register_fatbin_end(handle);
	} else {
		*(void **)&cu_init = sym(lib, "cuInit");
		*(void **)&cu_device_get = sym(lib, "cuDeviceGet");
		*(void **)&cu_primary_retain = sym(lib, "cuDevicePrimaryCtxRetain");
		*(void **)&cu_ctx_set_current = sym(lib, "cuCtxSetCurrent");
		*(void **)&cu_module_load_data = sym(lib, "cuModuleLoadData");
		*(void **)&cu_module_get_function = sym(lib, "cuModuleGetFunction");
		*(void **)&cu_launch = sym(lib, "cuLaunchKernel");
		*(void **)&cu_stream_query = sym(lib, "cuStreamQuery");
		*(void **)&cu_ctx_sync = sym(lib, "cuCtxSynchronize");
		int dev;
		void *ctx, *mod;
		check(cu_init(0), "cuInit");
		check(cu_device_get(&dev, 0), "cuDeviceGet");
		check(cu_primary_retain(&ctx, dev), "cuDevicePrimaryCtxRetain");
		check(cu_ctx_set_current(ctx), "cuCtxSetCurrent");
		check(cu_module_load_data(&mod, image), "cuModuleLoadData");
		check(cu_module_get_function(&cu_fn, mod, "xgpu_bench_null"), "cuModuleGetFunction");
	}
	time_null_calls();
	time_launches();
	free(image);
	return 0;
}
