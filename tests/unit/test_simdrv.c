/* SPDX-License-Identifier: Apache-2.0 */
/* test_simdrv.c - unit tests of xgpu's simulated CUDA driver.
 *
 * Linked statically against libxgpu-simdrv.a, so the cu* entry points are
 * called directly; the last tests also load the built libxgpu-simdrv.so with
 * dlopen, as xgpud does, and check its exported names and a second,
 * independently configured instance. Kernels come from
 * $XGPU_BUILD/tests/data/simdrv_kernels.{fatbin,cubin,ptx} with host
 * implementations in $XGPU_BUILD/tests/data/simk/simdrv_kernels.so.
 *
 * The static instance runs with 2 devices: 0 is the default H100-like one
 * with 4 GiB, 1 has 66 SMs, 1 GiB and its own name.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cuda.h>

#include "driver.h"
#include "fatbin.h"
#include "simdrv/simdrv_int.h" /* internals tested directly: sim_ptx_vars */

#define CU(x) assert_int_equal((x), CUDA_SUCCESS)
#define CUERR(x, e) assert_int_equal((x), (e))

#define MS 1000000ull

static uint8_t *fatbin;
static size_t fatbin_len;

static char *build_path(const char *rel)
{
	static char buf[4][1024];
	static int k;
	const char *b = getenv("XGPU_BUILD");
	char *out = buf[k++ % 4];
	snprintf(out, sizeof buf[0], "%s/%s", b ? b : "build/san", rel);
	return out;
}

static uint8_t *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	uint8_t *d = malloc((size_t)n + 1);
	if (d && fread(d, 1, (size_t)n, f) != (size_t)n) {
		free(d);
		d = NULL;
	}
	if (d)
		d[n] = 0;
	fclose(f);
	*len = (size_t)n;
	return d;
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* A kernel's fault is the whole process's, as on NVIDIA's driver: every
 * context fails with it, and no new one can be made. A test that faults ends
 * with this, once its contexts are destroyed: the next test runs as in a new
 * process. */
static void unpoison(void)
{
	atomic_store(&sim.poisoned, 0);
}

static CUcontext new_ctx(int dev)
{
	CUcontext c = NULL;
	CU(cuCtxCreate(&c, NULL, 0, dev));
	assert_non_null(c);
	return c;
}

static CUmodule load_module(void)
{
	CUmodule m = NULL;
	CU(cuModuleLoadData(&m, fatbin));
	assert_non_null(m);
	return m;
}

static CUfunction get_func(CUmodule m, const char *name)
{
	CUfunction f = NULL;
	CU(cuModuleGetFunction(&f, m, name));
	assert_non_null(f);
	return f;
}

/* fill_u32(p, v, n, ns) on a 1-D grid covering n (at least one block). */
static CUresult launch_fill(CUfunction f, CUdeviceptr p, unsigned v, unsigned long long n,
			    unsigned long long ns, CUstream s)
{
	void *args[] = {&p, &v, &n, &ns};
	unsigned blocks = (unsigned)((n + 255) / 256);
	return cuLaunchKernel(f, blocks ? blocks : 1, 1, 1, 256, 1, 1, 0, s, args, NULL);
}

static CUresult launch_store(CUfunction f, CUdeviceptr p, int v, CUstream s)
{
	void *args[] = {&p, &v};
	return cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, args, NULL);
}

static CUresult launch_saxpy(CUfunction f, int n, float a, CUdeviceptr x, CUdeviceptr y, CUstream s)
{
	void *args[] = {&n, &a, &x, &y};
	return cuLaunchKernel(f, (unsigned)(n + 127) / 128, 1, 1, 128, 1, 1, 0, s, args, NULL);
}

/* ---- before cuInit ---------------------------------------------------------------- */

static void test_before_init(void **state)
{
	int n;
	CUcontext c;
	CUdeviceptr p;
	const char *s;
	CUERR(cuDeviceGetCount(&n), CUDA_ERROR_NOT_INITIALIZED);
	CUERR(cuCtxCreate(&c, NULL, 0, 0), CUDA_ERROR_NOT_INITIALIZED);
	CUERR(cuMemAlloc(&p, 16), CUDA_ERROR_NOT_INITIALIZED);
	CUERR(cuCtxGetCurrent(&c), CUDA_ERROR_NOT_INITIALIZED);
	CUERR(cuStreamSynchronize(NULL), CUDA_ERROR_NOT_INITIALIZED);
	/* These work without cuInit, as in the real driver. */
	CU(cuDriverGetVersion(&n));
	assert_int_equal(n, CUDA_VERSION);
	CU(cuGetErrorName(CUDA_ERROR_NOT_INITIALIZED, &s));
	assert_string_equal(s, "CUDA_ERROR_NOT_INITIALIZED");
	CUERR(cuInit(1), CUDA_ERROR_INVALID_VALUE);
}

/* ---- devices ------------------------------------------------------------------------ */

static void test_devices(void **state)
{
	CU(cuInit(0));
	CU(cuInit(0));
	int n;
	CU(cuDeviceGetCount(&n));
	assert_int_equal(n, 2);
	CUdevice d;
	CU(cuDeviceGet(&d, 1));
	assert_int_equal(d, 1);
	CUERR(cuDeviceGet(&d, 2), CUDA_ERROR_INVALID_DEVICE);
	CUERR(cuDeviceGet(&d, -1), CUDA_ERROR_INVALID_DEVICE);
	CUERR(cuDeviceGet(NULL, 0), CUDA_ERROR_INVALID_VALUE);

	char name[64];
	CU(cuDeviceGetName(name, sizeof name, 0));
	assert_string_equal(name, "xgpu simulated GPU 0");
	CU(cuDeviceGetName(name, sizeof name, 1));
	assert_string_equal(name, "small");
	CU(cuDeviceGetName(name, 5, 0));
	assert_string_equal(name, "xgpu");
	CUERR(cuDeviceGetName(name, sizeof name, 7), CUDA_ERROR_INVALID_DEVICE);

	size_t total;
	CU(cuDeviceTotalMem(&total, 0));
	assert_int_equal(total, 4ull << 30);
	CU(cuDeviceTotalMem(&total, 1));
	assert_int_equal(total, 1ull << 30);

	int v;
	CU(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 0));
	assert_int_equal(v, 9);
	CU(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 0));
	assert_int_equal(v, 0);
	CU(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0));
	assert_int_equal(v, 132);
	CU(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 1));
	assert_int_equal(v, 66);
	CU(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, 0));
	assert_int_equal(v, 2048);
	CU(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, 0));
	assert_int_equal(v, 1024);
	CU(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, 0));
	assert_int_equal(v, 48 * 1024);
	CU(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, 0));
	assert_int_equal(v, 227 * 1024);
	CU(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_WARP_SIZE, 0));
	assert_int_equal(v, 32);
	CU(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, 0));
	assert_int_equal(v, 2147483647);
	CU(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z, 0));
	assert_int_equal(v, 65535);
	CU(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_CLOCK_RATE, 0));
	assert_true(v > 1000000);
	CU(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, 0));
	assert_true(v > 0);
	/* Every attribute cuda.h names has a value; others are refused. */
	for (int a = 1; a < CU_DEVICE_ATTRIBUTE_MAX; a++) {
		v = -12345;
		CU(cuDeviceGetAttribute(&v, (CUdevice_attribute)a, 0));
		assert_true(v != -12345 || a == 0);
	}
	CUERR(cuDeviceGetAttribute(&v, (CUdevice_attribute)0, 0), CUDA_ERROR_INVALID_VALUE);
	CUERR(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MAX, 0), CUDA_ERROR_INVALID_VALUE);
	CUERR(cuDeviceGetAttribute(&v, (CUdevice_attribute)100000, 0), CUDA_ERROR_INVALID_VALUE);
	CUERR(cuDeviceGetAttribute(NULL, CU_DEVICE_ATTRIBUTE_WARP_SIZE, 0), CUDA_ERROR_INVALID_VALUE);
	CUERR(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_WARP_SIZE, 2), CUDA_ERROR_INVALID_DEVICE);

	/* Stable, distinct UUIDs. */
	CUuuid u0, u0b, u1;
	CU(cuDeviceGetUuid(&u0, 0));
	CU(cuDeviceGetUuid(&u0b, 0));
	CU(cuDeviceGetUuid(&u1, 1));
	assert_memory_equal(u0.bytes, u0b.bytes, 16);
	assert_memory_not_equal(u0.bytes, u1.bytes, 16);
}

static void test_errors(void **state)
{
	const char *s;
	CU(cuGetErrorName(CUDA_SUCCESS, &s));
	assert_string_equal(s, "CUDA_SUCCESS");
	CU(cuGetErrorName(CUDA_ERROR_ILLEGAL_ADDRESS, &s));
	assert_string_equal(s, "CUDA_ERROR_ILLEGAL_ADDRESS");
	CU(cuGetErrorString(CUDA_ERROR_ILLEGAL_ADDRESS, &s));
	assert_string_equal(s, "an illegal memory access was encountered");
	CU(cuGetErrorString(CUDA_ERROR_OUT_OF_MEMORY, &s));
	assert_string_equal(s, "out of memory");
	CU(cuGetErrorName(CUDA_ERROR_UNKNOWN, &s));
	assert_string_equal(s, "CUDA_ERROR_UNKNOWN");
	CU(cuGetErrorName(CUDA_ERROR_KEY_ROTATION, &s));
	/* Every value from 0 to 1000 either has both a name and a text or neither. */
	int named = 0;
	for (int r = 0; r <= 1000; r++) {
		const char *n = NULL, *t = NULL;
		CUresult a = cuGetErrorName((CUresult)r, &n), b = cuGetErrorString((CUresult)r, &t);
		assert_int_equal(a, b);
		if (a == CUDA_SUCCESS) {
			assert_non_null(n);
			assert_non_null(t);
			assert_true(strncmp(n, "CUDA_", 5) == 0);
			named++;
		} else
			assert_null(n);
	}
	assert_int_equal(named, 101);
	s = "x";
	CUERR(cuGetErrorName((CUresult)12345, &s), CUDA_ERROR_INVALID_VALUE);
	assert_null(s);
	CUERR(cuGetErrorString(CUDA_SUCCESS, NULL), CUDA_ERROR_INVALID_VALUE);
}

/* ---- contexts ----------------------------------------------------------------------- */

static void *destroy_thread(void *arg)
{
	return (void *)(intptr_t)cuCtxDestroy((CUcontext)arg);
}

static void test_contexts(void **state)
{
	CUdeviceptr p;
	CUcontext cur = (CUcontext)1;
	CU(cuCtxSetCurrent(NULL));
	CU(cuCtxGetCurrent(&cur));
	assert_null(cur);
	CUERR(cuMemAlloc(&p, 16), CUDA_ERROR_INVALID_CONTEXT);
	CUERR(cuCtxSynchronize(), CUDA_ERROR_INVALID_CONTEXT);

	CUcontext a = new_ctx(0);
	CU(cuCtxGetCurrent(&cur));
	assert_ptr_equal(cur, a);
	CUcontext b = new_ctx(1);
	CU(cuCtxGetCurrent(&cur));
	assert_ptr_equal(cur, b);
	CU(cuCtxSetCurrent(a));
	CU(cuCtxGetCurrent(&cur));
	assert_ptr_equal(cur, a);
	CU(cuCtxSynchronize());

	/* Bad arguments. */
	CUcontext x;
	CUERR(cuCtxCreate(NULL, NULL, 0, 0), CUDA_ERROR_INVALID_VALUE);
	CUERR(cuCtxCreate(&x, NULL, 0, 5), CUDA_ERROR_INVALID_DEVICE);
	CUERR(cuCtxCreate(&x, NULL, 0x1000, 0), CUDA_ERROR_INVALID_VALUE);
	CUERR(cuCtxCreate(&x, NULL, 3, 0), CUDA_ERROR_INVALID_VALUE); /* no such scheduling mode */
	CUERR(cuCtxSetCurrent((CUcontext)&x), CUDA_ERROR_INVALID_CONTEXT);
	CUERR(cuCtxDestroy((CUcontext)&x), CUDA_ERROR_INVALID_CONTEXT);
	CUctxCreateParams cp = {0};
	CUERR(cuCtxCreate(&x, &cp, 0, 0), CUDA_ERROR_INVALID_VALUE);
	CUctxCigParam cig = {CIG_DATA_TYPE_D3D12_COMMAND_QUEUE, NULL};
	cp.cigParams = &cig;
	CUERR(cuCtxCreate(&x, &cp, 0, 0), CUDA_ERROR_NOT_SUPPORTED);
	CUexecAffinityParam aff = {.type = CU_EXEC_AFFINITY_TYPE_SM_COUNT};
	aff.param.smCount.val = 16;
	cp = (CUctxCreateParams){.execAffinityParams = &aff, .numExecAffinityParams = 1};
	CU(cuCtxCreate(&x, &cp, CU_CTX_SCHED_BLOCKING_SYNC, 0));
	CU(cuCtxDestroy(x));
	/* Destroying the current context leaves none current. */
	CU(cuCtxGetCurrent(&cur));
	assert_null(cur);
	CU(cuCtxSetCurrent(a));

	/* Limits. */
	size_t lim;
	CU(cuCtxGetLimit(&lim, CU_LIMIT_STACK_SIZE));
	assert_int_equal(lim, 1024);
	CU(cuCtxSetLimit(CU_LIMIT_STACK_SIZE, 4096));
	CU(cuCtxGetLimit(&lim, CU_LIMIT_STACK_SIZE));
	assert_int_equal(lim, 4096);
	CU(cuCtxGetLimit(&lim, CU_LIMIT_MALLOC_HEAP_SIZE));
	assert_int_equal(lim, 8 << 20);
	CU(cuCtxGetLimit(&lim, CU_LIMIT_PRINTF_FIFO_SIZE));
	assert_int_equal(lim, 1 << 20);
	CU(cuCtxSetLimit(CU_LIMIT_MAX_L2_FETCH_GRANULARITY, 128));
	CUERR(cuCtxSetLimit(CU_LIMIT_MAX_L2_FETCH_GRANULARITY, 129), CUDA_ERROR_INVALID_VALUE);
	CUERR(cuCtxSetLimit(CU_LIMIT_SHMEM_SIZE, 1), CUDA_ERROR_INVALID_VALUE);
	CUERR(cuCtxSetLimit(CU_LIMIT_MAX, 1), CUDA_ERROR_INVALID_VALUE);
	CUERR(cuCtxGetLimit(&lim, CU_LIMIT_MAX), CUDA_ERROR_INVALID_VALUE);
	CUERR(cuCtxGetLimit(NULL, CU_LIMIT_STACK_SIZE), CUDA_ERROR_INVALID_VALUE);
	/* Limits are per context. */
	CU(cuCtxSetCurrent(b));
	CU(cuCtxGetLimit(&lim, CU_LIMIT_STACK_SIZE));
	assert_int_equal(lim, 1024);

	/* Another thread destroys the context current here. */
	pthread_t t;
	CU(cuCtxSetCurrent(a));
	assert_int_equal(pthread_create(&t, NULL, destroy_thread, a), 0);
	void *rv;
	pthread_join(t, &rv);
	assert_int_equal((intptr_t)rv, CUDA_SUCCESS);
	CUERR(cuMemAlloc(&p, 16), CUDA_ERROR_CONTEXT_IS_DESTROYED);
	CU(cuCtxGetCurrent(&cur));
	assert_null(cur);
	CUERR(cuCtxDestroy(a), CUDA_ERROR_INVALID_CONTEXT);
	CUERR(cuCtxSetCurrent(a), CUDA_ERROR_INVALID_CONTEXT);
	CU(cuCtxDestroy(b));
}

/* ---- memory ------------------------------------------------------------------------- */

static void test_memory_accounting(void **state)
{
	CUcontext c = new_ctx(0);
	size_t free0, total, free1;
	CU(cuMemGetInfo(&free0, &total));
	assert_int_equal(total, 4ull << 30);
	assert_true(free0 <= total);
	CUERR(cuMemGetInfo(NULL, &total), CUDA_ERROR_INVALID_VALUE);

	CUdeviceptr a, b, d;
	CU(cuMemAlloc(&a, 1ull << 30));
	CU(cuMemGetInfo(&free1, &total));
	assert_int_equal(free0 - free1, 1ull << 30);
	CU(cuMemAlloc(&b, 100));
	CU(cuMemGetInfo(&free1, &total));
	assert_int_equal(free0 - free1, (1ull << 30) + 256); /* 256-byte granularity */
	/* Addresses: non-zero, 256-aligned, increasing, not host memory. */
	assert_true(a != 0 && a % 256 == 0 && b % 256 == 0 && b > a);
	assert_true(a >= (1ull << 48));

	CUERR(cuMemAlloc(&d, 0), CUDA_ERROR_INVALID_VALUE);
	CUERR(cuMemAlloc(NULL, 16), CUDA_ERROR_INVALID_VALUE);
	CUERR(cuMemAlloc(&d, free1 + 1), CUDA_ERROR_OUT_OF_MEMORY);
	CUERR(cuMemAlloc(&d, (size_t)-1), CUDA_ERROR_OUT_OF_MEMORY);
	/* Exactly what is left fits (MAP_NORESERVE: costs nothing untouched). */
	CU(cuMemAlloc(&d, free1));
	CU(cuMemGetInfo(&free1, &total));
	assert_int_equal(free1, 0);
	CUdeviceptr e;
	CUERR(cuMemAlloc(&e, 1), CUDA_ERROR_OUT_OF_MEMORY);
	CU(cuMemFree(d));

	/* Another context on the same device sees the same device memory. */
	CUcontext c2 = new_ctx(0);
	CU(cuMemGetInfo(&free1, &total));
	assert_int_equal(free0 - free1, (1ull << 30) + 256);
	/* ... but cannot free this context's memory. */
	CUERR(cuMemFree(a), CUDA_ERROR_INVALID_VALUE);
	CU(cuCtxDestroy(c2));
	CU(cuCtxSetCurrent(c));

	CU(cuMemFree(a));
	CU(cuMemFree(b));
	CUERR(cuMemFree(a), CUDA_ERROR_INVALID_VALUE); /* double free */
	CUERR(cuMemFree(b + 256), CUDA_ERROR_INVALID_VALUE);
	CU(cuMemFree(0));
	CU(cuMemGetInfo(&free1, &total));
	assert_int_equal(free1, free0);
	/* Freed addresses are never handed out again. */
	CU(cuMemAlloc(&d, 100));
	assert_true(d > b);

	/* The small device. */
	CUcontext s = new_ctx(1);
	CUERR(cuMemAlloc(&e, 2ull << 30), CUDA_ERROR_OUT_OF_MEMORY);
	CU(cuMemAlloc(&e, 512ull << 20));
	/* Destroying a context releases its memory. */
	CU(cuCtxDestroy(s));
	s = new_ctx(1);
	CU(cuMemGetInfo(&free1, &total));
	assert_int_equal(free1, 1ull << 30);
	CU(cuCtxDestroy(s));
	CU(cuCtxDestroy(c));
}

static void test_copy_checks(void **state)
{
	CUcontext c = new_ctx(0);
	CUdeviceptr a, b;
	CU(cuMemAlloc(&a, 4096));
	CU(cuMemAlloc(&b, 4096));
	uint8_t in[8192], out[8192];
	for (int i = 0; i < 8192; i++)
		in[i] = (uint8_t)(i * 7);
	CU(cuMemcpyHtoDAsync(a, in, 4096, NULL));
	CU(cuMemcpyDtoDAsync(b, a, 4096, NULL));
	CU(cuMemcpyDtoHAsync(out, b, 4096, NULL));
	assert_memory_equal(in, out, 4096);
	/* Inner ranges are fine. */
	CU(cuMemcpyDtoHAsync(out, a + 4000, 96, NULL));
	assert_memory_equal(in + 4000, out, 96);
	CU(cuMemsetD8Async(a + 100, 0xab, 50, NULL));
	CU(cuMemcpyDtoHAsync(out, a, 4096, NULL));
	for (int i = 0; i < 4096; i++)
		assert_int_equal(out[i], i >= 100 && i < 150 ? 0xab : (uint8_t)(i * 7));
	CU(cuStreamSynchronize(NULL));

	/* Out of bounds, in a gap, spanning two allocations, unallocated. */
	CUERR(cuMemcpyHtoDAsync(a + 4000, in, 97, NULL), CUDA_ERROR_INVALID_VALUE);
	CUERR(cuMemcpyHtoDAsync(a, in, 4097, NULL), CUDA_ERROR_INVALID_VALUE);
	CUERR(cuMemcpyDtoHAsync(out, a + 4096, 1, NULL), CUDA_ERROR_INVALID_VALUE);
	CUERR(cuMemcpyDtoHAsync(out, a - 1, 2, NULL), CUDA_ERROR_INVALID_VALUE);
	CUERR(cuMemcpyDtoHAsync(out, a, (b - a) + 16, NULL), CUDA_ERROR_INVALID_VALUE);
	CUERR(cuMemcpyDtoDAsync(b, a, 4097, NULL), CUDA_ERROR_INVALID_VALUE);
	CUERR(cuMemcpyDtoDAsync(b + 1, a, 4096, NULL), CUDA_ERROR_INVALID_VALUE);
	CUERR(cuMemsetD8Async(b + 4095, 0, 2, NULL), CUDA_ERROR_INVALID_VALUE);
	CUERR(cuMemsetD8Async(0x1234, 0, 2, NULL), CUDA_ERROR_INVALID_VALUE);
	CUERR(cuMemcpyHtoDAsync((CUdeviceptr)(uintptr_t)in, in, 16, NULL), CUDA_ERROR_INVALID_VALUE);
	CUERR(cuMemcpyHtoDAsync(a, NULL, 16, NULL), CUDA_ERROR_INVALID_VALUE);
	CUERR(cuMemcpyDtoHAsync(NULL, a, 16, NULL), CUDA_ERROR_INVALID_VALUE);
	CUERR(cuMemcpyHtoDAsync(a + (UINT64_MAX - a), in, 16, NULL), CUDA_ERROR_INVALID_VALUE);
	CUERR(cuMemcpyHtoDAsync(a + 16, in, SIZE_MAX, NULL), CUDA_ERROR_INVALID_VALUE);
	/* A freed allocation is no longer reachable. */
	CU(cuMemFree(b));
	CUERR(cuMemcpyDtoHAsync(out, b, 16, NULL), CUDA_ERROR_INVALID_VALUE);
	/* Bad streams. */
	CUERR(cuMemcpyHtoDAsync(a, in, 16, (CUstream)in), CUDA_ERROR_INVALID_HANDLE);
	CU(cuMemcpyHtoDAsync(a, in, 16, CU_STREAM_LEGACY));
	CU(cuMemcpyHtoDAsync(a, in, 16, CU_STREAM_PER_THREAD));
	CU(cuCtxSynchronize());
	CU(cuCtxDestroy(c));
}

/* Pitched copies and memsets: rows land at their pitch, the bytes between
 * rows stay, offsets apply, and an extent past the allocation, a pitch
 * below the width, one that overflows, or a host memory type is refused. */
static void test_pitched(void **state)
{
	CUcontext c = new_ctx(0);
	CUdeviceptr a, b;
	CU(cuMemAlloc(&a, 4096));
	CU(cuMemAlloc(&b, 4096));
	uint8_t in[4096], out[4096];
	for (int i = 0; i < 4096; i++)
		in[i] = (uint8_t)(i * 5 + 1);
	CU(cuMemcpyHtoDAsync(a, in, 4096, NULL));
	CU(cuMemsetD8Async(b, 0xee, 4096, NULL));
	CU(cuMemsetD2D8Async(b + 512, 256, 0x42, 10, 3, NULL));
	CUDA_MEMCPY2D p = {.srcMemoryType = CU_MEMORYTYPE_DEVICE,
			   .srcDevice = a,
			   .srcXInBytes = 3,
			   .srcY = 2,
			   .srcPitch = 100,
			   .dstMemoryType = CU_MEMORYTYPE_DEVICE,
			   .dstDevice = b,
			   .dstPitch = 300,
			   .WidthInBytes = 20,
			   .Height = 4};
	CU(cuMemcpy2DAsync(&p, NULL));
	CU(cuMemcpyDtoHAsync(out, b, 4096, NULL));
	for (int i = 0; i < 4096; i++) {
		int row = i / 300, col = i % 300;
		uint8_t want = 0xee;
		if (i >= 512 && (i - 512) % 256 < 10 && (i - 512) / 256 < 3)
			want = 0x42;
		if (row < 4 && col < 20)
			want = in[(row + 2) * 100 + 3 + col];
		assert_int_equal(out[i], want);
	}
	/* The last row ends exactly at the end: fine; one more byte is not. */
	p.srcY = 0;
	p.srcXInBytes = 0;
	p.srcPitch = 1000;
	p.dstPitch = 1000;
	p.Height = 5;
	p.WidthInBytes = 1096;
	CUERR(cuMemcpy2DAsync(&p, NULL), CUDA_ERROR_INVALID_VALUE); /* pitch below the width */
	p.WidthInBytes = 96;
	CU(cuMemcpy2DAsync(&p, NULL));
	p.WidthInBytes = 97;
	CUERR(cuMemcpy2DAsync(&p, NULL), CUDA_ERROR_INVALID_VALUE);
	p.WidthInBytes = 8;
	p.srcPitch = SIZE_MAX / 2;
	CUERR(cuMemcpy2DAsync(&p, NULL), CUDA_ERROR_INVALID_VALUE);
	p.srcPitch = 100;
	p.srcMemoryType = CU_MEMORYTYPE_HOST;
	p.srcHost = in;
	CUERR(cuMemcpy2DAsync(&p, NULL), CUDA_ERROR_NOT_SUPPORTED);
	CUERR(cuMemsetD2D8Async(b + 4000, 32, 1, 16, 4, NULL), CUDA_ERROR_INVALID_VALUE);
	CUERR(cuMemsetD2D8Async(b, 8, 1, 16, 4, NULL), CUDA_ERROR_INVALID_VALUE);
	CUERR(cuMemsetD2D8Async(b, SIZE_MAX / 2, 1, 16, 4, NULL), CUDA_ERROR_INVALID_VALUE);
	CU(cuCtxSynchronize());
	CU(cuCtxDestroy(c));
}

/* Managed memory comes from a canonical user-space range (the guest maps its
 * copy at the same address), page-aligned, interleaved with ordinary
 * allocations in the context's table; __managed__ variables of a module go
 * there too. */
static void test_managed(void **state)
{
	CUcontext c = new_ctx(0);
	CUdeviceptr plain, m1, m2;
	CU(cuMemAlloc(&plain, 4096));
	CU(cuMemAllocManaged(&m1, 5000, CU_MEM_ATTACH_GLOBAL));
	CU(cuMemAllocManaged(&m2, 64, CU_MEM_ATTACH_HOST));
	assert_true(m1 % 4096 == 0 && m2 % 4096 == 0);
	assert_true(m1 >= 0x300000000000ull && m2 > m1 && m2 < (1ull << 47));
	assert_true(plain > (1ull << 47));
	CUERR(cuMemAllocManaged(&m2, 64, 0), CUDA_ERROR_INVALID_VALUE);
	CUERR(cuMemAllocManaged(&m2, 64, 7), CUDA_ERROR_INVALID_VALUE);
	CUERR(cuMemAllocManaged(NULL, 64, CU_MEM_ATTACH_GLOBAL), CUDA_ERROR_INVALID_VALUE);
	CUERR(cuMemAllocManaged(&m2, 0, CU_MEM_ATTACH_GLOBAL), CUDA_ERROR_INVALID_VALUE);
	/* Both kinds stay reachable and bounded after the out-of-order insert. */
	uint8_t in[5000], out[5000];
	for (int i = 0; i < 5000; i++)
		in[i] = (uint8_t)(i * 3);
	CU(cuMemcpyHtoDAsync(m1, in, 5000, NULL));
	CU(cuMemcpyDtoDAsync(plain, m1, 4096, NULL));
	CU(cuMemcpyDtoHAsync(out, plain, 4096, NULL));
	assert_memory_equal(in, out, 4096);
	CUERR(cuMemcpyDtoHAsync(out, m1, 5001, NULL), CUDA_ERROR_INVALID_VALUE);
	CU(cuMemFree(m1));
	CUERR(cuMemcpyDtoHAsync(out, m1, 1, NULL), CUDA_ERROR_INVALID_VALUE);
	CU(cuMemFree(plain));

	static const char ptx[] = ".version 8.0\n.target sm_90\n.address_size 64\n"
				  ".global .attribute(.managed) .align 4 .u32 mv = 7;\n"
				  ".global .align 4 .u32 dv;\n";
	CUmodule mod;
	CU(cuModuleLoadData(&mod, ptx));
	CUdeviceptr mv, dv;
	size_t size;
	CU(cuModuleGetGlobal(&mv, &size, mod, "mv"));
	assert_int_equal(size, 4);
	assert_true(mv % 4096 == 0 && mv >= 0x300000000000ull && mv < (1ull << 47));
	uint32_t v = 0;
	CU(cuMemcpyDtoHAsync(&v, mv, 4, NULL));
	assert_int_equal(v, 7);
	CU(cuModuleGetGlobal(&dv, &size, mod, "dv"));
	assert_true(dv > (1ull << 47));
	CU(cuModuleUnload(mod));
	CU(cuCtxSynchronize());
	CU(cuCtxDestroy(c));
}

/* ---- isolation ----------------------------------------------------------------------- */

static void test_context_isolation(void **state)
{
	CUcontext a = new_ctx(0);
	CUmodule ma = load_module();
	CUfunction store_a = get_func(ma, "_Z5storePii");
	CUdeviceptr pa;
	CU(cuMemAlloc(&pa, 4096));
	CU(cuMemsetD8Async(pa, 0x11, 4096, NULL));
	CUstream sa;
	CU(cuStreamCreate(&sa, 0));
	CU(cuCtxSynchronize());

	CUcontext b = new_ctx(0);
	CUmodule mb = load_module();
	CUfunction store_b = get_func(mb, "_Z5storePii");
	uint8_t buf[64];
	/* B cannot read, write or set A's memory ... */
	CUERR(cuMemcpyDtoHAsync(buf, pa, 16, NULL), CUDA_ERROR_INVALID_VALUE);
	CUERR(cuMemcpyHtoDAsync(pa, buf, 16, NULL), CUDA_ERROR_INVALID_VALUE);
	CUERR(cuMemsetD8Async(pa, 0, 16, NULL), CUDA_ERROR_INVALID_VALUE);
	CUdeviceptr pb;
	CU(cuMemAlloc(&pb, 4096));
	CUERR(cuMemcpyDtoDAsync(pb, pa, 16, NULL), CUDA_ERROR_INVALID_VALUE);
	/* ... nor use A's handles. */
	CUERR(launch_store(store_a, pb, 1, NULL), CUDA_ERROR_INVALID_HANDLE);
	CUERR(cuMemcpyHtoDAsync(pb, buf, 16, sa), CUDA_ERROR_INVALID_HANDLE);

	CU(cuCtxSetCurrent(a));
	CU(cuCtxSynchronize());
	CU(cuMemcpyDtoHAsync(buf, pa, 64, NULL));
	for (int i = 0; i < 64; i++)
		assert_int_equal(buf[i], 0x11);
	/* A kernel of A may write there. */
	CU(launch_store(store_a, pa + 8, 0x01020304, sa));
	CU(cuStreamSynchronize(sa));
	CU(cuMemcpyDtoHAsync(buf, pa, 16, NULL));
	int32_t v;
	memcpy(&v, buf + 8, 4);
	assert_int_equal(v, 0x01020304);

	/* A kernel of B touching A's memory faults, and a fault is the whole
	 * process's, as on NVIDIA's driver: A fails with it too, and no new
	 * context can be made. A's memory was not written. */
	CU(cuCtxSetCurrent(b));
	CU(launch_store(store_b, pa, 42, NULL));
	CUERR(cuCtxSynchronize(), CUDA_ERROR_ILLEGAL_ADDRESS);
	CU(cuCtxSetCurrent(a));
	CUERR(cuCtxSynchronize(), CUDA_ERROR_ILLEGAL_ADDRESS);
	CUERR(cuMemcpyDtoHAsync(buf, pa, 16, NULL), CUDA_ERROR_ILLEGAL_ADDRESS);
	CUERR(launch_store(store_a, pa, 1, sa), CUDA_ERROR_ILLEGAL_ADDRESS);
	CUcontext c = NULL;
	CUERR(cuCtxCreate(&c, NULL, 0, 0), CUDA_ERROR_ILLEGAL_ADDRESS);
	assert_null(c);
	struct CUctx_st *ca = (struct CUctx_st *)a;
	assert_int_equal(atomic_load(&ca->sticky), CUDA_ERROR_ILLEGAL_ADDRESS);
	/* Destroying still works. */
	CU(cuCtxDestroy(b));
	CU(cuCtxDestroy(a));
	unpoison();
}

/* ---- modules and launches ---------------------------------------------------------------- */

static void check_saxpy(CUmodule m)
{
	CUfunction f = get_func(m, "saxpy");
	enum { N = 1000 };
	float x[N], y[N], r[N];
	for (int i = 0; i < N; i++) {
		x[i] = (float)i;
		y[i] = 1.0f;
	}
	CUdeviceptr dx, dy;
	CU(cuMemAlloc(&dx, sizeof x));
	CU(cuMemAlloc(&dy, sizeof y));
	CU(cuMemcpyHtoDAsync(dx, x, sizeof x, NULL));
	CU(cuMemcpyHtoDAsync(dy, y, sizeof y, NULL));
	CU(launch_saxpy(f, N, 2.0f, dx, dy, NULL));
	CU(cuMemcpyDtoHAsync(r, dy, sizeof r, NULL));
	for (int i = 0; i < N; i++)
		assert_true(r[i] == 2.0f * (float)i + 1.0f);
	CU(cuMemFree(dx));
	CU(cuMemFree(dy));
}

static void check_globals(CUmodule m)
{
	CUdeviceptr d;
	size_t sz;
	float t[4];
	CU(cuModuleGetGlobal(&d, &sz, m, "dev_table"));
	assert_int_equal(sz, 16);
	CU(cuMemcpyDtoHAsync(t, d, 16, NULL));
	assert_true(t[0] == 1.0f && t[1] == 2.0f && t[2] == 3.0f && t[3] == 4.0f);
	CU(cuModuleGetGlobal(&d, &sz, m, "dev_scale"));
	assert_int_equal(sz, 4);
	CU(cuMemcpyDtoHAsync(t, d, 4, NULL));
	assert_true(t[0] == 2.5f);
	int32_t cnt = -1;
	CU(cuModuleGetGlobal(&d, NULL, m, "dev_counter"));
	CU(cuMemcpyDtoHAsync(&cnt, d, 4, NULL));
	assert_int_equal(cnt, 0);
	/* Variables are device memory of the context: writable, bounded. */
	cnt = 7;
	CU(cuMemcpyHtoDAsync(d, &cnt, 4, NULL));
	CUERR(cuMemcpyHtoDAsync(d, t, 8, NULL), CUDA_ERROR_INVALID_VALUE);
	CUERR(cuMemFree(d), CUDA_ERROR_INVALID_VALUE); /* not cuMemAlloc's */
	CU(cuModuleGetGlobal(NULL, &sz, m, "dev_counter"));
	assert_int_equal(sz, 4);
	CUERR(cuModuleGetGlobal(&d, &sz, m, "nope"), CUDA_ERROR_NOT_FOUND);
	CUERR(cuModuleGetGlobal(&d, &sz, m, NULL), CUDA_ERROR_INVALID_VALUE);
}

static void test_modules(void **state)
{
	CUcontext c = new_ctx(0);
	size_t free0, free1, total;
	CU(cuMemGetInfo(&free0, &total));
	CUmodule m = load_module();
	CU(cuMemGetInfo(&free1, &total));
	assert_true(free1 < free0); /* the variables */

	CUfunction f;
	CUERR(cuModuleGetFunction(&f, m, "missing"), CUDA_ERROR_NOT_FOUND);
	CUERR(cuModuleGetFunction(&f, m, NULL), CUDA_ERROR_INVALID_VALUE);
	CUERR(cuModuleGetFunction(NULL, m, "saxpy"), CUDA_ERROR_INVALID_VALUE);
	CUERR(cuModuleGetFunction(&f, (CUmodule)&f, "saxpy"), CUDA_ERROR_INVALID_HANDLE);

	/* Parameter layout from the fatbin. */
	f = get_func(m, "saxpy");
	size_t off, sz;
	const size_t want_off[] = {0, 4, 8, 16}, want_sz[] = {4, 4, 8, 8};
	for (size_t i = 0; i < 4; i++) {
		CU(cuFuncGetParamInfo(f, i, &off, &sz));
		assert_int_equal(off, want_off[i]);
		assert_int_equal(sz, want_sz[i]);
	}
	CU(cuFuncGetParamInfo(f, 3, &off, NULL));
	CUERR(cuFuncGetParamInfo(f, 4, &off, &sz), CUDA_ERROR_INVALID_VALUE);
	CUERR(cuFuncGetParamInfo(f, 0, NULL, &sz), CUDA_ERROR_INVALID_VALUE);

	/* Attributes from the cubin. */
	int v;
	CU(cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_NUM_REGS, f));
	assert_true(v > 0 && v < 255);
	CU(cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, f));
	assert_int_equal(v, 1024);
	CU(cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_BINARY_VERSION, f));
	assert_int_equal(v, 90);
	CU(cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, f));
	assert_int_equal(v, 0);
	CU(cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, f));
	assert_int_equal(v, 48 * 1024);
	CU(cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, f));
	assert_int_equal(v, -1);
	for (int a = 0; a < CU_FUNC_ATTRIBUTE_MAX; a++)
		CU(cuFuncGetAttribute(&v, (CUfunction_attribute)a, f));
	CUERR(cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_MAX, f), CUDA_ERROR_INVALID_VALUE);
	CUfunction bounded = get_func(m, "bounded");
	CU(cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, bounded));
	assert_int_equal(v, 256);
	CUfunction sk = get_func(m, "shared_k");
	CU(cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, sk));
	assert_int_equal(v, 4096);
	int static_shared = v;
	CU(cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, sk));
	assert_int_equal(v, 48 * 1024 - static_shared);
	CU(cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES, sk));
	assert_int_equal(v, 4); /* dev_scale */
	CU(cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 100 * 1024));
	CU(cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, f));
	assert_int_equal(v, 100 * 1024);
	CUERR(cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 228 * 1024),
	      CUDA_ERROR_INVALID_VALUE);
	CUERR(cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_NUM_REGS, 3), CUDA_ERROR_INVALID_VALUE);
	CU(cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, 50));
	CUERR(cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, 101),
	      CUDA_ERROR_INVALID_VALUE);

	/* Occupancy: threads, registers and shared memory per SM. */
	int nb;
	CU(cuOccupancyMaxActiveBlocksPerMultiprocessor(&nb, f, 256, 0));
	assert_int_equal(nb, 8);
	CU(cuOccupancyMaxActiveBlocksPerMultiprocessor(&nb, f, 1024, 0));
	assert_int_equal(nb, 2);
	CU(cuOccupancyMaxActiveBlocksPerMultiprocessor(&nb, f, 32, 0));
	assert_int_equal(nb, 32);
	CU(cuOccupancyMaxActiveBlocksPerMultiprocessor(&nb, f, 64, 100 * 1024));
	assert_int_equal(nb, 2);
	CU(cuOccupancyMaxActiveBlocksPerMultiprocessor(&nb, bounded, 512, 0));
	assert_int_equal(nb, 0);
	CUERR(cuOccupancyMaxActiveBlocksPerMultiprocessor(&nb, f, 0, 0), CUDA_ERROR_INVALID_VALUE);

	check_saxpy(m);
	check_globals(m);

	/* A second load is a separate module with its own variables. */
	CUmodule m2 = load_module();
	CUdeviceptr g1, g2;
	CU(cuModuleGetGlobal(&g1, NULL, m, "dev_counter"));
	CU(cuModuleGetGlobal(&g2, NULL, m2, "dev_counter"));
	assert_true(g1 != g2);
	CU(cuModuleUnload(m2));

	/* Unload: handles die, variables are freed. */
	CU(cuModuleUnload(m));
	CUERR(cuModuleUnload(m), CUDA_ERROR_INVALID_HANDLE);
	CUERR(cuModuleGetFunction(&f, m, "saxpy"), CUDA_ERROR_INVALID_HANDLE);
	CUERR(launch_store(f, 0, 0, NULL), CUDA_ERROR_INVALID_HANDLE);
	CUERR(cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_NUM_REGS, f), CUDA_ERROR_INVALID_HANDLE);
	uint8_t b;
	CUERR(cuMemcpyDtoHAsync(&b, g1, 1, NULL), CUDA_ERROR_INVALID_VALUE);
	CU(cuMemGetInfo(&free1, &total));
	assert_int_equal(free1, free0);

	/* Not images. */
	CUmodule bad;
	uint32_t junk[32] = {0xdeadbeef};
	CUERR(cuModuleLoadData(&bad, junk), CUDA_ERROR_INVALID_IMAGE);
	CUERR(cuModuleLoadData(&bad, NULL), CUDA_ERROR_INVALID_VALUE);
	CUERR(cuModuleLoadData(NULL, fatbin), CUDA_ERROR_INVALID_VALUE);
	/* A container whose cubin is garbage. */
	uint8_t *cut = malloc(fatbin_len);
	memcpy(cut, fatbin, fatbin_len);
	memset(cut + 16 + 64, 0xff, 256);
	CUresult r = cuModuleLoadData(&bad, cut);
	assert_true(r == CUDA_ERROR_INVALID_IMAGE || r == CUDA_SUCCESS);
	if (r == CUDA_SUCCESS)
		CU(cuModuleUnload(bad));
	/* One whose size field overruns every bound. */
	memcpy(cut, fatbin, fatbin_len);
	uint64_t huge = UINT64_MAX - 8;
	memcpy(cut + 8, &huge, 8);
	CUERR(cuModuleLoadData(&bad, cut), CUDA_ERROR_INVALID_IMAGE);
	free(cut);
	CU(cuCtxDestroy(c));
}

/* The other forms of image cuModuleLoadData takes. */
static void test_image_forms(void **state)
{
	CUcontext c = new_ctx(0);
	/* Compressed entries (zstd, LZ4), and PTX only (JIT on a real GPU). */
	const char *fatbins[] = {"tests/data/simdrv_kernels_zstd.fatbin",
				 "tests/data/simdrv_kernels_lz4.fatbin",
				 "tests/data/simdrv_kernels_ptx.fatbin"};
	for (size_t i = 0; i < 3; i++) {
		size_t n;
		uint8_t *img = read_file(build_path(fatbins[i]), &n);
		assert_non_null(img);
		CUmodule m;
		CU(cuModuleLoadData(&m, img));
		free(img);
		check_saxpy(m);
		check_globals(m);
		CU(cuModuleUnload(m));
	}
	/* Behind a __fatBinC_Wrapper_t, as a program embeds it. */
	struct {
		int magic, version;
		const void *data;
		void *unused;
	} wrapper = {(int)XGPU_FATBIN_WRAPPER_MAGIC, 1, fatbin, NULL};
	CUmodule m;
	CU(cuModuleLoadData(&m, &wrapper));
	check_saxpy(m);
	CU(cuModuleUnload(m));
	/* A bare cubin. */
	size_t n;
	uint8_t *cubin = read_file(build_path("tests/data/simdrv_kernels.cubin"), &n);
	assert_non_null(cubin);
	CU(cuModuleLoadData(&m, cubin));
	check_saxpy(m);
	check_globals(m);
	CU(cuModuleUnload(m));
	free(cubin);
	/* PTX text. */
	char *ptx = (char *)read_file(build_path("tests/data/simdrv_kernels.ptx"), &n);
	assert_non_null(ptx);
	CU(cuModuleLoadData(&m, ptx));
	check_saxpy(m);
	check_globals(m);
	CU(cuModuleUnload(m));
	free(ptx);
	CU(cuCtxDestroy(c));
}

static void test_launch_checks(void **state)
{
	CUcontext c = new_ctx(0);
	CUmodule m = load_module();
	CUfunction f = get_func(m, "saxpy");
	CUdeviceptr x, y;
	enum { N = 256 };
	CU(cuMemAlloc(&x, N * 4));
	CU(cuMemAlloc(&y, N * 4));
	float one[N], r[N];
	for (int i = 0; i < N; i++)
		one[i] = 1.0f;
	CU(cuMemcpyHtoDAsync(x, one, sizeof one, NULL));
	CU(cuMemcpyHtoDAsync(y, one, sizeof one, NULL));

	/* Parameters as one buffer in `extra`, as xgpud passes them. */
	struct {
		int n;
		float a;
		CUdeviceptr x, y;
	} pb = {N, 3.0f, x, y};
	size_t pbsz = sizeof pb;
	assert_int_equal(pbsz, 24);
	void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &pb, CU_LAUNCH_PARAM_BUFFER_SIZE, &pbsz,
			 CU_LAUNCH_PARAM_END};
	CU(cuLaunchKernel(f, 2, 1, 1, 128, 1, 1, 0, NULL, NULL, extra));
	/* The buffer is copied at launch: changing it now changes nothing. */
	pb.a = 100.0f;
	CU(cuMemcpyDtoHAsync(r, y, sizeof r, NULL));
	for (int i = 0; i < N; i++)
		assert_true(r[i] == 4.0f);
	size_t bad = 16;
	void *extra_bad[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &pb, CU_LAUNCH_PARAM_BUFFER_SIZE, &bad,
			     CU_LAUNCH_PARAM_END};
	CUERR(cuLaunchKernel(f, 2, 1, 1, 128, 1, 1, 0, NULL, NULL, extra_bad), CUDA_ERROR_INVALID_VALUE);
	void *extra_nosize[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &pb, CU_LAUNCH_PARAM_END};
	CUERR(cuLaunchKernel(f, 2, 1, 1, 128, 1, 1, 0, NULL, NULL, extra_nosize), CUDA_ERROR_INVALID_VALUE);
	void *extra_unknown[] = {(void *)0x77, &pb, CU_LAUNCH_PARAM_END};
	CUERR(cuLaunchKernel(f, 2, 1, 1, 128, 1, 1, 0, NULL, NULL, extra_unknown), CUDA_ERROR_INVALID_VALUE);
	int n = N;
	float a = 1.0f;
	void *args[] = {&n, &a, &x, &y};
	CUERR(cuLaunchKernel(f, 2, 1, 1, 128, 1, 1, 0, NULL, args, extra), CUDA_ERROR_INVALID_VALUE);
	CUERR(cuLaunchKernel(f, 2, 1, 1, 128, 1, 1, 0, NULL, NULL, NULL), CUDA_ERROR_INVALID_VALUE);
	void *args_null[] = {&n, NULL, &x, &y};
	CUERR(cuLaunchKernel(f, 2, 1, 1, 128, 1, 1, 0, NULL, args_null, NULL), CUDA_ERROR_INVALID_VALUE);

	/* Geometry and resources against the device's limits. */
	CUERR(cuLaunchKernel(f, 0, 1, 1, 128, 1, 1, 0, NULL, args, NULL), CUDA_ERROR_INVALID_VALUE);
	CUERR(cuLaunchKernel(f, 1, 1, 1, 0, 1, 1, 0, NULL, args, NULL), CUDA_ERROR_INVALID_VALUE);
	CUERR(cuLaunchKernel(f, 1, 65536, 1, 128, 1, 1, 0, NULL, args, NULL), CUDA_ERROR_INVALID_VALUE);
	CUERR(cuLaunchKernel(f, 0x80000000u, 1, 1, 128, 1, 1, 0, NULL, args, NULL), CUDA_ERROR_INVALID_VALUE);
	CUERR(cuLaunchKernel(f, 1, 1, 1, 1025, 1, 1, 0, NULL, args, NULL), CUDA_ERROR_INVALID_VALUE);
	CUERR(cuLaunchKernel(f, 1, 1, 1, 1, 1, 65, 0, NULL, args, NULL), CUDA_ERROR_INVALID_VALUE);
	CUERR(cuLaunchKernel(f, 1, 1, 1, 64, 32, 1, 0, NULL, args, NULL), CUDA_ERROR_INVALID_VALUE);
	CU(cuLaunchKernel(f, 1, 1, 1, 32, 32, 1, 0, NULL, args, NULL));
	CUERR(cuLaunchKernel(f, 1, 1, 1, 128, 1, 1, 48 * 1024 + 1, NULL, args, NULL),
	      CUDA_ERROR_INVALID_VALUE);
	CU(cuLaunchKernel(f, 1, 1, 1, 128, 1, 1, 48 * 1024, NULL, args, NULL));
	CU(cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 200 * 1024));
	CU(cuLaunchKernel(f, 1, 1, 1, 128, 1, 1, 200 * 1024, NULL, args, NULL));
	CUfunction bounded = get_func(m, "bounded");
	void *bargs[] = {&x};
	CU(cuLaunchKernel(bounded, 1, 1, 1, 256, 1, 1, 0, NULL, bargs, NULL));
	CUERR(cuLaunchKernel(bounded, 1, 1, 1, 512, 1, 1, 0, NULL, bargs, NULL), CUDA_ERROR_INVALID_VALUE);
	CUERR(cuLaunchKernel((CUfunction)&pb, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL),
	      CUDA_ERROR_INVALID_HANDLE);
	/* A kernel with no host implementation runs (and computes nothing). */
	CUfunction noimpl = get_func(m, "no_impl");
	CU(cuLaunchKernel(noimpl, 1, 1, 1, 64, 1, 1, 0, NULL, bargs, NULL));
	CU(cuLaunchKernel(noimpl, 1, 1, 1, 64, 1, 1, 0, NULL, bargs, NULL));
	CU(cuCtxSynchronize());
	CU(cuCtxDestroy(c));
}

/* cuLaunchKernelEx: a cooperative launch fits on the device at once or is
 * refused; stream priorities come clamped, with the device's range. */
static void test_cooperative_priorities(void **state)
{
	CUcontext c = new_ctx(0);
	CUmodule m = load_module();
	CUfunction f = get_func(m, "saxpy");
	CUdeviceptr x, y;
	enum { N = 128 };
	CU(cuMemAlloc(&x, N * 4));
	CU(cuMemAlloc(&y, N * 4));
	int n = N, per_sm = 0, sms = 0;
	float a = 2.0f;
	void *args[] = {&n, &a, &x, &y};
	CU(cuOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, f, 128, 0));
	CU(cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0));
	assert_true(per_sm > 0 && sms > 0);
	CUlaunchAttribute coop = {.id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE, .value.cooperative = 1};
	CUlaunchConfig cfg = {.gridDimX = (unsigned)(per_sm * sms),
			      .gridDimY = 1,
			      .gridDimZ = 1,
			      .blockDimX = 128,
			      .blockDimY = 1,
			      .blockDimZ = 1,
			      .attrs = &coop,
			      .numAttrs = 1};
	CU(cuLaunchKernelEx(&cfg, f, args, NULL));
	cfg.gridDimX++;
	CUERR(cuLaunchKernelEx(&cfg, f, args, NULL), CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE);
	coop.value.cooperative = 0; /* an ordinary launch may have more blocks */
	CU(cuLaunchKernelEx(&cfg, f, args, NULL));
	/* Thread block clusters: the shape checked as NVIDIA's driver checks
	 * it, the blocks run as usual. */
	CUlaunchAttribute cluster = {.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION};
	cfg.attrs = &cluster;
	CUERR(cuLaunchKernelEx(&cfg, f, args, NULL), CUDA_ERROR_INVALID_VALUE); /* 0x0x0 */
	cfg.gridDimX = 16;
	cluster.value.clusterDim.x = 2;
	cluster.value.clusterDim.y = cluster.value.clusterDim.z = 1;
	CU(cuLaunchKernelEx(&cfg, f, args, NULL));
	cluster.value.clusterDim.x = 3; /* does not divide the grid */
	CUERR(cuLaunchKernelEx(&cfg, f, args, NULL), CUDA_ERROR_INVALID_CLUSTER_SIZE);
	cluster.value.clusterDim.x = 16; /* more than 8, not allowed non-portable sizes */
	CUERR(cuLaunchKernelEx(&cfg, f, args, NULL), CUDA_ERROR_INVALID_CLUSTER_SIZE);
	CU(cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1));
	CU(cuLaunchKernelEx(&cfg, f, args, NULL));
	CU(cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 0));
	cluster.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE;
	cluster.value.clusterSchedulingPolicyPreference = CU_CLUSTER_SCHEDULING_POLICY_SPREAD;
	CU(cuLaunchKernelEx(&cfg, f, args, NULL));
	cluster.value.clusterSchedulingPolicyPreference = (CUclusterSchedulingPolicy)5;
	CUERR(cuLaunchKernelEx(&cfg, f, args, NULL), CUDA_ERROR_INVALID_VALUE);
	cluster.id = CU_LAUNCH_ATTRIBUTE_PRIORITY; /* no meaning to the simulated device */
	CUERR(cuLaunchKernelEx(&cfg, f, args, NULL), CUDA_ERROR_NOT_SUPPORTED);
	CUERR(cuLaunchKernelEx(NULL, f, args, NULL), CUDA_ERROR_INVALID_VALUE);
	CU(cuCtxSynchronize());

	int least = 9, greatest = 9, prio = 9;
	CU(cuCtxGetStreamPriorityRange(&least, &greatest));
	assert_int_equal(least, 0);
	assert_int_equal(greatest, -5);
	CUstream hi, lo;
	CU(cuStreamCreateWithPriority(&hi, 0, -100));
	CU(cuStreamCreateWithPriority(&lo, 0, 7));
	CU(cuStreamGetPriority(hi, &prio));
	assert_int_equal(prio, -5);
	CU(cuStreamGetPriority(lo, &prio));
	assert_int_equal(prio, 0);
	CU(cuStreamGetPriority(NULL, &prio));
	assert_int_equal(prio, 0);
	CUERR(cuStreamGetPriority(hi, NULL), CUDA_ERROR_INVALID_VALUE);
	CUERR(cuStreamGetPriority((CUstream)&prio, &prio), CUDA_ERROR_INVALID_HANDLE);
	CU(cuStreamDestroy(hi));
	CU(cuStreamDestroy(lo));
	CU(cuCtxDestroy(c));
}

/* ---- execution --------------------------------------------------------------------------- */

static void test_stream_order(void **state)
{
	CUcontext c = new_ctx(0);
	CUmodule m = load_module();
	CUfunction fill = get_func(m, "fill_u32");
	enum { N = 1024 };
	CUdeviceptr p;
	CU(cuMemAlloc(&p, N * 4));
	uint32_t *h;
	CU(cuMemAllocHost((void **)&h, N * 4));
	memset(h, 0, N * 4);
	CUstream s, nb;
	CU(cuStreamCreate(&s, 0));
	CU(cuStreamCreate(&nb, CU_STREAM_NON_BLOCKING));
	CU(cuStreamDestroy(nb));
	CUERR(cuStreamCreate(&s, 0x10), CUDA_ERROR_INVALID_VALUE);
	CUERR(cuStreamCreate(NULL, 0), CUDA_ERROR_INVALID_VALUE);

	/* A long kernel, then a copy on the same stream: the copy sees its result. */
	uint64_t t0 = now_ns();
	CU(launch_fill(fill, p, 7, N, 100 * MS, s));
	CU(cuMemcpyDtoHAsync(h, p, N * 4, s)); /* pinned: returns at once */
	uint64_t t1 = now_ns();
	assert_true(t1 - t0 < 50 * MS);
	/* Queries do not block. */
	CUERR(cuStreamQuery(s), CUDA_ERROR_NOT_READY);
	assert_true(now_ns() - t1 < 20 * MS);
	CU(cuStreamQuery(NULL)); /* nothing on the NULL stream */
	assert_int_equal(h[0], 0);
	CU(cuStreamSynchronize(s));
	assert_true(now_ns() - t0 >= 100 * MS);
	CU(cuStreamQuery(s));
	for (int i = 0; i < N; i++)
		assert_int_equal(h[i], 7);

	/* The legacy NULL stream waits for work queued before it in other streams. */
	CU(launch_fill(fill, p, 8, N, 50 * MS, s));
	CU(cuMemcpyDtoHAsync(h, p, N * 4, NULL));
	CUERR(cuStreamQuery(NULL), CUDA_ERROR_NOT_READY);
	CU(cuStreamSynchronize(NULL));
	assert_int_equal(h[N - 1], 8);

	/* Priorities are clamped, not refused. */
	CUstream hp;
	CU(cuStreamCreateWithPriority(&hp, 0, -100));
	CU(cuStreamDestroy(hp));
	CUERR(cuStreamDestroy(hp), CUDA_ERROR_INVALID_HANDLE);
	CUERR(cuStreamDestroy(NULL), CUDA_ERROR_INVALID_HANDLE);

	/* Destroying a stream lets its queued work finish. */
	CU(launch_fill(fill, p, 9, N, 50 * MS, s));
	CU(cuMemcpyDtoHAsync(h, p, N * 4, s));
	t0 = now_ns();
	CU(cuStreamDestroy(s));
	assert_true(now_ns() - t0 < 30 * MS);
	CUERR(cuStreamQuery(s), CUDA_ERROR_INVALID_HANDLE);
	CU(cuCtxSynchronize());
	assert_int_equal(h[0], 9);
	CU(cuMemFreeHost(h));
	CU(cuCtxDestroy(c));
}

static void test_graphs(void **state)
{
	CUcontext c = new_ctx(0);
	CUmodule m = load_module();
	CUfunction fill = get_func(m, "fill_u32");
	enum { N = 256 };
	CUdeviceptr a, b;
	CU(cuMemAlloc(&a, N * 4));
	CU(cuMemAlloc(&b, N * 4));
	uint32_t *h;
	CU(cuMemAllocHost((void **)&h, 2 * N * 4));
	CUstream s;
	CU(cuStreamCreate(&s, 0));
	CUevent e;
	CU(cuEventCreate(&e, 0));

	/* memset a = 0x01..; fill a = 5 (20 ms); a -> b; b -> h; h -> a + record. */
	CUgraph g;
	CUgraphNode ms, k, d2d, d2h, h2d, rec, w;
	CU(cuGraphCreate(&g, 0));
	CUDA_MEMSET_NODE_PARAMS mp = {.dst = a, .value = 1, .elementSize = 1, .width = N * 4, .height = 1};
	CU(cuGraphAddMemsetNode(&ms, g, NULL, 0, &mp, c));
	struct {
		uint64_t p;
		uint32_t v, pad;
		uint64_t n, ns;
	} params = {a, 5, 0, N, 20 * MS};
	size_t size = sizeof params;
	void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &params, CU_LAUNCH_PARAM_BUFFER_SIZE, &size,
			 CU_LAUNCH_PARAM_END};
	CUDA_KERNEL_NODE_PARAMS kp = {.func = fill,
				      .gridDimX = 1,
				      .gridDimY = 1,
				      .gridDimZ = 1,
				      .blockDimX = 256,
				      .blockDimY = 1,
				      .blockDimZ = 1,
				      .extra = extra};
	CU(cuGraphAddKernelNode(&k, g, &ms, 1, &kp));
	params.v = 99; /* copied at add time */
	CUDA_MEMCPY3D cp = {.srcMemoryType = CU_MEMORYTYPE_DEVICE,
			    .srcDevice = a,
			    .dstMemoryType = CU_MEMORYTYPE_DEVICE,
			    .dstDevice = b,
			    .WidthInBytes = N * 4,
			    .Height = 1,
			    .Depth = 1};
	CU(cuGraphAddMemcpyNode(&d2d, g, &k, 1, &cp, c));
	cp = (CUDA_MEMCPY3D){.srcMemoryType = CU_MEMORYTYPE_DEVICE,
			     .srcDevice = b,
			     .dstMemoryType = CU_MEMORYTYPE_HOST,
			     .dstHost = h,
			     .WidthInBytes = N * 4,
			     .Height = 1,
			     .Depth = 1};
	CU(cuGraphAddMemcpyNode(&d2h, g, &d2d, 1, &cp, c));
	cp = (CUDA_MEMCPY3D){.srcMemoryType = CU_MEMORYTYPE_HOST,
			     .srcHost = h + N,
			     .dstMemoryType = CU_MEMORYTYPE_DEVICE,
			     .dstDevice = a,
			     .WidthInBytes = N * 4,
			     .Height = 1,
			     .Depth = 1};
	CU(cuGraphAddMemcpyNode(&h2d, g, &d2h, 1, &cp, c));
	CU(cuGraphAddEventRecordNode(&rec, g, &h2d, 1, e));
	CU(cuGraphAddEventWaitNode(&w, g, &rec, 1, e));
	/* Dependencies must be nodes of the graph; 2D memsets are not offered. */
	CUgraph other;
	CUgraphNode x;
	CU(cuGraphCreate(&other, 0));
	CUERR(cuGraphAddEmptyNode(&x, other, &k, 1), CUDA_ERROR_INVALID_VALUE);
	mp.height = 2;
	CUERR(cuGraphAddMemsetNode(&x, g, NULL, 0, &mp, c), CUDA_ERROR_NOT_SUPPORTED);
	CU(cuGraphDestroy(other));

	CUgraphExec ge;
	CU(cuGraphInstantiate(&ge, g, 0));
	CU(cuGraphDestroy(g)); /* the exec keeps its own copy */
	for (int it = 0; it < 2; it++) {
		for (int i = 0; i < N; i++)
			h[N + i] = 1000u + (uint32_t)(i + it);
		memset(h, 0, N * 4);
		uint64_t t0 = now_ns();
		CU(cuGraphLaunch(ge, s));
		CU(cuStreamSynchronize(s));
		/* The kernel's modeled time is the graph's. */
		assert_true(now_ns() - t0 >= 20 * MS);
		CU(cuEventQuery(e));
		for (int i = 0; i < N; i++)
			assert_int_equal(h[i], 5);
		uint32_t back[N];
		CU(cuMemcpyDtoHAsync(back, a, sizeof back, s));
		CU(cuStreamSynchronize(s));
		for (int i = 0; i < N; i++)
			assert_int_equal(back[i], 1000u + (uint32_t)(i + it));
	}
	CU(cuGraphExecDestroy(ge));
	CUERR(cuGraphExecDestroy(ge), CUDA_ERROR_INVALID_VALUE);
	CUERR(cuGraphLaunch(NULL, s), CUDA_ERROR_INVALID_VALUE);
	CU(cuEventDestroy(e));
	CU(cuStreamDestroy(s));
	CU(cuMemFreeHost(h));
	CU(cuCtxDestroy(c));
}

static void test_events(void **state)
{
	CUcontext c = new_ctx(0);
	CUmodule m = load_module();
	CUfunction fill = get_func(m, "fill_u32");
	CUdeviceptr p;
	CU(cuMemAlloc(&p, 4096));
	CUstream s;
	CU(cuStreamCreate(&s, 0));
	CUevent a, b, nt;
	CU(cuEventCreate(&a, CU_EVENT_DEFAULT));
	CU(cuEventCreate(&b, CU_EVENT_BLOCKING_SYNC));
	CU(cuEventCreate(&nt, CU_EVENT_DISABLE_TIMING));
	CUevent x;
	CUERR(cuEventCreate(&x, 0x100), CUDA_ERROR_INVALID_VALUE);
	CUERR(cuEventCreate(&x, CU_EVENT_INTERPROCESS), CUDA_ERROR_INVALID_VALUE);
	CUERR(cuEventCreate(NULL, 0), CUDA_ERROR_INVALID_VALUE);

	float ms = -1;
	/* Never recorded: complete, but no time. */
	CU(cuEventQuery(a));
	CU(cuEventSynchronize(a));
	CUERR(cuEventElapsedTime(&ms, a, b), CUDA_ERROR_INVALID_HANDLE);

	/* Modeled kernel times show in the events: 30 + 20 ms. */
	CU(cuEventRecord(a, s));
	CU(launch_fill(fill, p, 1, 1024, 30 * MS, s));
	CU(launch_fill(fill, p, 2, 1024, 20 * MS, s));
	CU(cuEventRecord(b, s));
	CUERR(cuEventQuery(b), CUDA_ERROR_NOT_READY);
	CUERR(cuEventElapsedTime(&ms, a, b), CUDA_ERROR_NOT_READY);
	CU(cuEventSynchronize(b));
	CU(cuEventQuery(b));
	CU(cuEventElapsedTime(&ms, a, b));
	assert_true(ms >= 49.9f && ms < 80.0f);
	float back;
	CU(cuEventElapsedTime(&back, b, a));
	assert_true(back == -ms);
	CUERR(cuEventElapsedTime(NULL, a, b), CUDA_ERROR_INVALID_VALUE);

	/* Re-recording moves the event. */
	CU(cuEventRecord(a, s));
	CU(launch_fill(fill, p, 3, 1024, 10 * MS, NULL));
	CU(cuEventRecord(b, NULL));
	CU(cuEventSynchronize(b));
	CU(cuEventElapsedTime(&ms, a, b));
	assert_true(ms >= 9.9f && ms < 40.0f);

	CU(cuEventRecord(nt, s));
	CU(cuEventSynchronize(nt));
	CUERR(cuEventElapsedTime(&ms, a, nt), CUDA_ERROR_INVALID_HANDLE);

	/* A stream waits for an event (same device: in order anyway). */
	CU(cuStreamWaitEvent(s, b, 0));
	CUERR(cuStreamWaitEvent(s, b, 1), CUDA_ERROR_INVALID_VALUE);
	CUERR(cuStreamWaitEvent(s, (CUevent)&ms, 0), CUDA_ERROR_INVALID_HANDLE);

	/* Events of another context cannot be recorded here. */
	CUcontext c2 = new_ctx(0);
	CUERR(cuEventRecord(a, NULL), CUDA_ERROR_INVALID_HANDLE);
	CU(cuEventQuery(a)); /* but can be queried */
	CU(cuCtxDestroy(c2));
	CU(cuCtxSetCurrent(c));

	/* A stream that waited for another's event is not done before that
	 * event's work: its synchronize covers it, and the other stream is
	 * done after it (nothing queued on s2 itself). */
	CUstream s2;
	CU(cuStreamCreate(&s2, 0));
	CUevent w;
	CU(cuEventCreate(&w, CU_EVENT_DISABLE_TIMING));
	CU(launch_fill(fill, p, 5, 1024, 30 * MS, s));
	CU(cuEventRecord(w, s));
	CU(cuStreamWaitEvent(s2, w, 0));
	CU(cuStreamWaitEvent(NULL, w, 0));
	CUERR(cuStreamQuery(s2), CUDA_ERROR_NOT_READY);
	CU(cuStreamSynchronize(s2));
	CU(cuStreamQuery(s));
	CU(cuEventQuery(w));
	CU(launch_fill(fill, p, 6, 1024, 30 * MS, s));
	CU(cuEventRecord(w, s));
	CU(cuStreamWaitEvent(NULL, w, 0));
	CU(cuStreamSynchronize(NULL));
	CU(cuStreamQuery(s));
	CU(cuEventDestroy(w));
	CU(cuStreamDestroy(s2));

	/* Destroying an event with a record pending is fine. */
	CU(launch_fill(fill, p, 4, 1024, 30 * MS, s));
	CU(cuEventRecord(a, s));
	CU(cuEventDestroy(a));
	CUERR(cuEventQuery(a), CUDA_ERROR_INVALID_HANDLE);
	CUERR(cuEventDestroy(a), CUDA_ERROR_INVALID_HANDLE);
	CU(cuEventDestroy(b));
	CU(cuEventDestroy(nt));
	CU(cuCtxDestroy(c));
}

struct hf_log {
	pthread_mutex_t lock;
	int order[16];
	uint32_t seen[16];
	int n;
};

struct hf_arg {
	struct hf_log *log;
	int tag;
	const uint32_t *watch;
	uint64_t when;
};

static void host_fn(void *p)
{
	struct hf_arg *a = p;
	a->when = now_ns();
	pthread_mutex_lock(&a->log->lock);
	a->log->order[a->log->n] = a->tag;
	a->log->seen[a->log->n] = a->watch ? *a->watch : 0;
	a->log->n++;
	pthread_mutex_unlock(&a->log->lock);
}

static void test_host_functions(void **state)
{
	CUcontext c = new_ctx(0);
	CUmodule m = load_module();
	CUfunction fill = get_func(m, "fill_u32");
	CUdeviceptr p;
	CU(cuMemAlloc(&p, 4096));
	uint32_t *h;
	CU(cuMemAllocHost((void **)&h, 4096));
	h[0] = 0;
	CUstream s1, s2;
	CU(cuStreamCreate(&s1, 0));
	CU(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
	struct hf_log log = {.lock = PTHREAD_MUTEX_INITIALIZER};
	struct hf_arg args[4] = {{&log, 1, h, 0}, {&log, 2, h, 0}, {&log, 3, NULL, 0}, {&log, 4, h, 0}};

	CU(launch_fill(fill, p, 1, 1, 20 * MS, s1));
	CU(cuMemcpyDtoHAsync(h, p, 4, s1));
	CU(cuLaunchHostFunc(s1, host_fn, &args[0]));
	CU(launch_fill(fill, p, 2, 1, 10 * MS, s1));
	CU(cuMemcpyDtoHAsync(h, p, 4, s1));
	CU(cuLaunchHostFunc(s1, host_fn, &args[1]));
	CU(cuLaunchHostFunc(s2, host_fn, &args[2]));
	CU(launch_fill(fill, p, 3, 1, 1 * MS, NULL));
	CU(cuMemcpyDtoHAsync(h, p, 4, NULL));
	CU(cuLaunchHostFunc(NULL, host_fn, &args[3]));
	CUERR(cuLaunchHostFunc(s1, NULL, NULL), CUDA_ERROR_INVALID_VALUE);
	CU(cuCtxSynchronize());

	assert_int_equal(log.n, 4);
	/* In order per stream; each sees the copy queued before it. */
	int pos[5] = {0};
	for (int i = 0; i < 4; i++)
		pos[log.order[i]] = i;
	assert_true(pos[1] < pos[2]);
	assert_int_equal(log.seen[pos[1]], 1);
	assert_int_equal(log.seen[pos[2]], 2);
	/* The legacy NULL stream's function comes after everything before it. */
	assert_int_equal(pos[4], 3);
	assert_int_equal(log.seen[3], 3);
	assert_true(args[0].when <= args[1].when && args[1].when <= args[3].when);
	CU(cuMemFreeHost(h));
	CU(cuCtxDestroy(c));
}

static void test_sticky_error(void **state)
{
	CUcontext b = new_ctx(0);
	CUmodule mb = load_module();
	CUfunction fill_b = get_func(mb, "fill_u32");
	CUdeviceptr pb;
	CU(cuMemAlloc(&pb, 4096));

	CUcontext a = new_ctx(0);
	CUmodule ma = load_module();
	CUfunction store_a = get_func(ma, "_Z5storePii");
	CUdeviceptr pa;
	CU(cuMemAlloc(&pa, 4096));
	struct hf_log log = {.lock = PTHREAD_MUTEX_INITIALIZER};
	struct hf_arg arg = {&log, 1, NULL, 0};

	/* One past the end of a live allocation: the kernel faults (after a
	 * long kernel, so that everything below is queued by then). */
	CUfunction fill_a = get_func(ma, "fill_u32");
	CU(launch_fill(fill_a, pa, 0, 1, 50 * MS, NULL));
	CU(launch_store(store_a, pa + 4096, 1, NULL));
	/* Work queued behind the fault is dropped, host functions included. */
	CU(cuMemsetD8Async(pa, 0x55, 4096, NULL));
	CU(cuLaunchHostFunc(NULL, host_fn, &arg));
	CUERR(cuCtxSynchronize(), CUDA_ERROR_ILLEGAL_ADDRESS);
	/* Every later call on the context returns the error ... */
	CUdeviceptr q;
	CUERR(cuMemAlloc(&q, 16), CUDA_ERROR_ILLEGAL_ADDRESS);
	CUERR(cuCtxSynchronize(), CUDA_ERROR_ILLEGAL_ADDRESS);
	CUERR(cuStreamQuery(NULL), CUDA_ERROR_ILLEGAL_ADDRESS);
	CUERR(cuStreamSynchronize(NULL), CUDA_ERROR_ILLEGAL_ADDRESS);
	CUERR(launch_store(store_a, pa, 1, NULL), CUDA_ERROR_ILLEGAL_ADDRESS);
	uint8_t buf[16];
	CUERR(cuMemcpyDtoHAsync(buf, pa, 16, NULL), CUDA_ERROR_ILLEGAL_ADDRESS);
	CUmodule mx;
	CUERR(cuModuleLoadData(&mx, fatbin), CUDA_ERROR_ILLEGAL_ADDRESS);
	size_t fr, tot;
	CUERR(cuMemGetInfo(&fr, &tot), CUDA_ERROR_ILLEGAL_ADDRESS);
	/* ... releases still release, and report it. */
	CUERR(cuMemFree(pa), CUDA_ERROR_ILLEGAL_ADDRESS);
	CUERR(cuModuleUnload(ma), CUDA_ERROR_ILLEGAL_ADDRESS);
	CUcontext cur;
	CU(cuCtxGetCurrent(&cur));
	assert_ptr_equal(cur, a);
	assert_int_equal(log.n, 0);

	/* Another context of the process fails with the same error (on
	 * NVIDIA's driver a fault is the process's), its work included ... */
	CU(cuCtxSetCurrent(b));
	CUERR(launch_fill(fill_b, pb, 5, 1024, 1 * MS, NULL), CUDA_ERROR_ILLEGAL_ADDRESS);
	uint32_t v[1024];
	CUERR(cuMemcpyDtoHAsync(v, pb, sizeof v, NULL), CUDA_ERROR_ILLEGAL_ADDRESS);
	CUERR(cuCtxSynchronize(), CUDA_ERROR_ILLEGAL_ADDRESS);
	/* ... and so does making a new one, for the process's life. */
	CUcontext c = NULL;
	CUERR(cuCtxCreate(&c, NULL, 0, 0), CUDA_ERROR_ILLEGAL_ADDRESS);

	CU(cuCtxDestroy(a));
	CU(cuCtxDestroy(b));
	CUERR(cuCtxCreate(&c, NULL, 0, 0), CUDA_ERROR_ILLEGAL_ADDRESS);
	unpoison();
}

static void set_flag(void *p)
{
	atomic_store((atomic_int *)p, 1);
}

static void test_destroy_pending(void **state)
{
	CUcontext keep = new_ctx(0);
	size_t free0, total, free1;
	CU(cuMemGetInfo(&free0, &total));

	CUcontext c = new_ctx(0);
	CUmodule m = load_module();
	CUfunction fill = get_func(m, "fill_u32");
	CUdeviceptr p;
	CU(cuMemAlloc(&p, 1 << 20));
	CUstream s;
	CU(cuStreamCreate(&s, 0));
	CUevent e;
	CU(cuEventCreate(&e, 0));
	void *pinned;
	CU(cuMemAllocHost(&pinned, 1 << 20));
	atomic_int flag = 0;
	uint64_t t0 = now_ns();
	CU(launch_fill(fill, p, 1, 1024, 100 * MS, s));
	CU(launch_fill(fill, p, 2, 1024, 5000 * MS, s));
	CU(cuMemcpyDtoHAsync(pinned, p, 4096, s));
	CU(cuEventRecord(e, s));
	CU(cuLaunchHostFunc(s, set_flag, &flag));
	usleep(20000); /* the first kernel runs */
	CU(cuCtxDestroy(c));
	/* It waited for the kernel running (as NVIDIA's driver does), then ran
	 * the queued work, in order, without its modeled time (which would
	 * hold up other contexts on the device) ... */
	uint64_t took = now_ns() - t0;
	if (!(took >= 95 * MS && took < 2000 * MS))
		fail_msg("took %llu ms", (unsigned long long)(took / MS));
	assert_int_equal(atomic_load(&flag), 1);
	/* ... then freed everything the context owned. */
	CUERR(cuStreamQuery(s), CUDA_ERROR_INVALID_HANDLE);
	CUERR(cuEventQuery(e), CUDA_ERROR_INVALID_HANDLE);
	CUERR(cuModuleGetFunction(&fill, m, "fill_u32"), CUDA_ERROR_INVALID_HANDLE);
	CUERR(cuMemFreeHost(pinned), CUDA_ERROR_INVALID_VALUE);
	CU(cuCtxSetCurrent(keep));
	CU(cuMemGetInfo(&free1, &total));
	assert_int_equal(free1, free0);
	CU(cuCtxDestroy(keep));
}

static void test_pageable_pinned(void **state)
{
	CUcontext c = new_ctx(0);
	CUmodule m = load_module();
	CUfunction fill = get_func(m, "fill_u32");
	enum { N = 1024 };
	CUdeviceptr p;
	CU(cuMemAlloc(&p, N * 4));
	CUstream s;
	CU(cuStreamCreate(&s, 0));
	uint32_t *pageable = malloc(N * 4), check[N];
	uint32_t *pinned;
	CU(cuMemAllocHost((void **)&pinned, N * 4));

	/* HtoD from pageable memory: the source is taken at the call. */
	for (int i = 0; i < N; i++)
		pageable[i] = 1;
	CU(launch_fill(fill, p, 0, N, 50 * MS, s));
	CU(cuMemcpyHtoDAsync(p, pageable, N * 4, s));
	for (int i = 0; i < N; i++)
		pageable[i] = 2;
	CU(cuStreamSynchronize(s));
	CU(cuMemcpyDtoHAsync(check, p, N * 4, s));
	assert_int_equal(check[0], 1);
	assert_int_equal(check[N - 1], 1);

	/* HtoD from pinned memory: read when the copy runs, like DMA. */
	for (int i = 0; i < N; i++)
		pinned[i] = 1;
	CU(launch_fill(fill, p, 0, N, 50 * MS, s));
	CU(cuMemcpyHtoDAsync(p, pinned, N * 4, s));
	for (int i = 0; i < N; i++)
		pinned[i] = 2;
	CU(cuStreamSynchronize(s));
	CU(cuMemcpyDtoHAsync(check, p, N * 4, s));
	assert_int_equal(check[0], 2);
	assert_int_equal(check[N - 1], 2);

	/* DtoH to pageable memory returns once the copy is done. */
	uint64_t t0 = now_ns();
	CU(launch_fill(fill, p, 9, N, 80 * MS, s));
	CU(cuMemcpyDtoHAsync(pageable, p, N * 4, s));
	assert_true(now_ns() - t0 >= 75 * MS);
	assert_int_equal(pageable[N - 1], 9);

	/* DtoH to pinned memory returns at once; the data lands later. */
	t0 = now_ns();
	CU(launch_fill(fill, p, 10, N, 80 * MS, s));
	CU(cuMemcpyDtoHAsync(pinned, p, N * 4, s));
	assert_true(now_ns() - t0 < 40 * MS);
	assert_int_equal(pinned[0], 2);
	CU(cuStreamSynchronize(s));
	assert_int_equal(pinned[0], 10);

	/* Registered memory counts as pinned, part of it too. */
	uint32_t *reg = aligned_alloc(4096, 2 * N * 4);
	CU(cuMemHostRegister(reg, 2 * N * 4, CU_MEMHOSTREGISTER_PORTABLE));
	t0 = now_ns();
	CU(launch_fill(fill, p, 11, N, 80 * MS, s));
	CU(cuMemcpyDtoHAsync(reg + N, p, N * 4, s));
	assert_true(now_ns() - t0 < 40 * MS);
	CU(cuStreamSynchronize(s));
	assert_int_equal(reg[2 * N - 1], 11);
	/* Overlaps and unknown ranges. */
	CUERR(cuMemHostRegister(reg + 16, 64, 0), CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
	CUERR(cuMemHostRegister(pinned, 64, 0), CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
	CUERR(cuMemHostRegister(reg, 0, 0), CUDA_ERROR_INVALID_VALUE);
	CUERR(cuMemHostRegister(NULL, 64, 0), CUDA_ERROR_INVALID_VALUE);
	CUERR(cuMemHostRegister(pageable, 64, 0x100), CUDA_ERROR_INVALID_VALUE);
	CUERR(cuMemHostUnregister(reg + 16), CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
	CUERR(cuMemHostUnregister(pinned), CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
	CUERR(cuMemFreeHost(reg), CUDA_ERROR_INVALID_VALUE);
	CU(cuMemHostUnregister(reg));
	CUERR(cuMemHostUnregister(reg), CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
	/* Unregistered, it is pageable again: DtoH waits. */
	t0 = now_ns();
	CU(launch_fill(fill, p, 12, N, 50 * MS, s));
	CU(cuMemcpyDtoHAsync(reg, p, N * 4, s));
	assert_true(now_ns() - t0 >= 45 * MS);
	assert_int_equal(reg[0], 12);
	free(reg);

	CU(cuMemFreeHost(pinned));
	CUERR(cuMemFreeHost(pinned), CUDA_ERROR_INVALID_VALUE);
	CUERR(cuMemAllocHost((void **)&pinned, 0), CUDA_ERROR_INVALID_VALUE);
	free(pageable);
	CU(cuCtxDestroy(c));
}

static void test_worker_sleeps(void **state)
{
	CUcontext c = new_ctx(0);
	CUmodule m = load_module();
	CUfunction fill = get_func(m, "fill_u32");
	CUdeviceptr p;
	CU(cuMemAlloc(&p, 16));
	uint64_t w0 = now_ns(), c0 = cpu_ns();
	CU(launch_fill(fill, p, 0, 0, 200 * MS, NULL));
	CU(cuStreamSynchronize(NULL));
	uint64_t wall = now_ns() - w0, cpu = cpu_ns() - c0;
	assert_true(wall >= 200 * MS);
	/* Neither the worker nor the waiting thread burns a core. */
	assert_true(cpu * 10 < wall);
	CU(cuCtxDestroy(c));
}

/* Contexts made with fewer SMs (execution affinity) run the default model
 * proportionally slower. */
static void test_default_model(void **state)
{
	CUexecAffinityParam aff = {.type = CU_EXEC_AFFINITY_TYPE_SM_COUNT};
	aff.param.smCount.val = 66;
	CUctxCreateParams cp = {.execAffinityParams = &aff, .numExecAffinityParams = 1};
	float ms[2];
	for (int k = 0; k < 2; k++) {
		CUcontext c;
		CU(cuCtxCreate(&c, k ? &cp : NULL, 0, 0));
		CUmodule m = load_module();
		CUfunction f = get_func(m, "no_impl");
		CUdeviceptr p;
		CU(cuMemAlloc(&p, 4));
		void *args[] = {&p};
		CUevent a, b;
		CU(cuEventCreate(&a, 0));
		CU(cuEventCreate(&b, 0));
		CU(cuEventRecord(a, NULL));
		/* 10^10 threads: 3 us + 20 ms at 132 SMs. */
		CU(cuLaunchKernel(f, 9765625, 1, 1, 1024, 1, 1, 0, NULL, args, NULL));
		CU(cuEventRecord(b, NULL));
		CU(cuEventSynchronize(b));
		CU(cuEventElapsedTime(&ms[k], a, b));
		CU(cuCtxDestroy(c));
	}
	assert_true(ms[0] >= 19.9f && ms[0] < 40.0f);
	assert_true(ms[1] >= 39.9f && ms[1] < 70.0f);
}

/* A stream on device 0 waits for an event of device 1. */
static void test_cross_device_wait(void **state)
{
	CUcontext c1 = new_ctx(1);
	CUmodule m = load_module();
	CUfunction fill = get_func(m, "fill_u32");
	CUdeviceptr p;
	CU(cuMemAlloc(&p, 16));
	CUevent e;
	CU(cuEventCreate(&e, 0));
	uint64_t t0 = now_ns();
	CU(launch_fill(fill, p, 1, 1, 100 * MS, NULL));
	CU(cuEventRecord(e, NULL));

	CUcontext c0 = new_ctx(0);
	struct hf_log log = {.lock = PTHREAD_MUTEX_INITIALIZER};
	struct hf_arg before = {&log, 1, NULL, 0}, after = {&log, 2, NULL, 0};
	CU(cuLaunchHostFunc(NULL, host_fn, &before));
	CU(cuStreamWaitEvent(NULL, e, 0));
	CU(cuLaunchHostFunc(NULL, host_fn, &after));
	CU(cuCtxSynchronize());
	assert_true(before.when - t0 < 50 * MS);
	assert_true(after.when - t0 >= 100 * MS);
	CU(cuCtxDestroy(c0));
	CU(cuCtxDestroy(c1));
}

/* ---- concurrency --------------------------------------------------------------------------- */

struct worker_result {
	int id;
	int failures;
	char what[128];
};

#define WCHECK(cond)                                                                                         \
	do {                                                                                                 \
		if (!(cond)) {                                                                               \
			if (!res->failures++)                                                                \
				snprintf(res->what, sizeof res->what, "line %d: %s", __LINE__, #cond);       \
			goto out;                                                                            \
		}                                                                                            \
	} while (0)

static void *hammer(void *arg)
{
	struct worker_result *res = arg;
	CUcontext c = NULL;
	float *x = NULL, *y = NULL;
	WCHECK(cuCtxCreate(&c, NULL, 0, res->id % 2) == CUDA_SUCCESS);
	CUmodule m;
	WCHECK(cuModuleLoadData(&m, fatbin) == CUDA_SUCCESS);
	CUfunction f;
	WCHECK(cuModuleGetFunction(&f, m, "saxpy") == CUDA_SUCCESS);
	x = malloc(4096 * sizeof *x);
	y = malloc(4096 * sizeof *y);
	WCHECK(x && y);
	unsigned seed = (unsigned)res->id * 7919u;
	for (int it = 0; it < 60; it++) {
		int n = 1 + (int)(rand_r(&seed) % 4096);
		for (int i = 0; i < n; i++) {
			x[i] = (float)(i + res->id);
			y[i] = (float)it;
		}
		CUstream s = NULL;
		if (it % 5 == 0)
			WCHECK(cuStreamCreate(&s, 0) == CUDA_SUCCESS);
		CUdeviceptr dx, dy;
		WCHECK(cuMemAlloc(&dx, (size_t)n * 4) == CUDA_SUCCESS);
		WCHECK(cuMemAlloc(&dy, (size_t)n * 4) == CUDA_SUCCESS);
		WCHECK(cuMemcpyHtoDAsync(dx, x, (size_t)n * 4, s) == CUDA_SUCCESS);
		WCHECK(cuMemcpyHtoDAsync(dy, y, (size_t)n * 4, s) == CUDA_SUCCESS);
		int nn = n;
		float a = 0.5f;
		void *args[] = {&nn, &a, &dx, &dy};
		WCHECK(cuLaunchKernel(f, (unsigned)(n + 255) / 256, 1, 1, 256, 1, 1, 0, s, args, NULL) ==
		       CUDA_SUCCESS);
		WCHECK(cuMemcpyDtoHAsync(y, dy, (size_t)n * 4, s) == CUDA_SUCCESS);
		for (int i = 0; i < n; i++)
			WCHECK(y[i] == 0.5f * (float)(i + res->id) + (float)it);
		/* Out of bounds stays refused under load. */
		WCHECK(cuMemcpyDtoHAsync(y, dy, (size_t)n * 4 + 1, s) == CUDA_ERROR_INVALID_VALUE);
		WCHECK(cuMemFree(dx) == CUDA_SUCCESS);
		WCHECK(cuMemFree(dy) == CUDA_SUCCESS);
		if (s)
			WCHECK(cuStreamDestroy(s) == CUDA_SUCCESS);
	}
	WCHECK(cuModuleUnload(m) == CUDA_SUCCESS);
out:
	if (c)
		cuCtxDestroy(c);
	free(x);
	free(y);
	return NULL;
}

static void test_concurrent_contexts(void **state)
{
	CUcontext probe = new_ctx(0);
	size_t free0, total, free1;
	CU(cuMemGetInfo(&free0, &total));
	enum { T = 8 };
	pthread_t th[T];
	struct worker_result res[T];
	for (int i = 0; i < T; i++) {
		res[i] = (struct worker_result){.id = i};
		assert_int_equal(pthread_create(&th[i], NULL, hammer, &res[i]), 0);
	}
	for (int i = 0; i < T; i++)
		pthread_join(th[i], NULL);
	for (int i = 0; i < T; i++) {
		if (res[i].failures)
			fail_msg("thread %d: %s", i, res[i].what);
	}
	CU(cuCtxSetCurrent(probe));
	CU(cuMemGetInfo(&free1, &total));
	assert_int_equal(free1, free0);
	CU(cuCtxDestroy(probe));
}

/* Garbage handles are refused, never dereferenced. */
static void test_bad_handles(void **state)
{
	CUcontext c = new_ctx(0);
	char junk[256];
	memset(junk, 0x5a, sizeof junk);
	CUERR(cuStreamDestroy((CUstream)junk), CUDA_ERROR_INVALID_HANDLE);
	CUERR(cuStreamSynchronize((CUstream)junk), CUDA_ERROR_INVALID_HANDLE);
	CUERR(cuStreamQuery((CUstream)junk), CUDA_ERROR_INVALID_HANDLE);
	CUERR(cuEventQuery((CUevent)junk), CUDA_ERROR_INVALID_HANDLE);
	CUERR(cuEventSynchronize((CUevent)junk), CUDA_ERROR_INVALID_HANDLE);
	CUERR(cuEventDestroy((CUevent)junk), CUDA_ERROR_INVALID_HANDLE);
	CUERR(cuEventRecord((CUevent)junk, NULL), CUDA_ERROR_INVALID_HANDLE);
	CUERR(cuModuleUnload((CUmodule)junk), CUDA_ERROR_INVALID_HANDLE);
	CUERR(cuModuleGetGlobal(NULL, NULL, (CUmodule)junk, "x"), CUDA_ERROR_INVALID_HANDLE);
	int v;
	CUERR(cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_NUM_REGS, (CUfunction)junk),
	      CUDA_ERROR_INVALID_HANDLE);
	CUERR(cuFuncSetAttribute((CUfunction)junk, CU_FUNC_ATTRIBUTE_NUM_REGS, 1), CUDA_ERROR_INVALID_HANDLE);
	CUERR(cuCtxDestroy((CUcontext)junk), CUDA_ERROR_INVALID_CONTEXT);
	/* A handle of one kind passed as another. */
	CUstream s;
	CU(cuStreamCreate(&s, 0));
	CUERR(cuEventQuery((CUevent)s), CUDA_ERROR_INVALID_HANDLE);
	CUERR(cuCtxSetCurrent((CUcontext)s), CUDA_ERROR_INVALID_CONTEXT);
	CUERR(cuStreamSynchronize((CUstream)c), CUDA_ERROR_INVALID_HANDLE);
	CU(cuCtxDestroy(c));
}

/* Device variables of PTX-only modules, from the declarations. */
static void test_ptx_vars(void **state)
{
	static const char ptx[] =
	    "// generated\n"
	    ".version 9.0\n"
	    ".target sm_90\n"
	    ".address_size 64\n"
	    ".extern .global .align 4 .u32 ext_var;\n"
	    ".visible .global .align 8 .u64 a = 0x1122334455667788;\n"
	    "/* a comment; with ; inside */\n"
	    ".global .align 4 .f32 f[3] = {1.5, -2.0, 0f40400000};\n"
	    ".const .align 4 .b8 bytes[] = {1, 2, 3};\n"
	    ".global .align 16 .v4 .u32 vec[2];\n"
	    ".global .align 8 .u64 ptr = generic(a);\n"
	    ".shared .align 4 .b8 sh[16];\n"
	    ".visible .entry k(.param .u64 p)\n{\n\t.reg .b32 %r<2>;\n\t.global .u32 inner;\n\tret;\n}\n"
	    ".global .s32 neg[2][2] = {{-1, 2}, {3, -4}};\n"
	    ".global .align 8 .f64 d = 0d4000000000000000;\n";
	struct sim_cubin c;
	memset(&c, 0, sizeof c);
	sim_ptx_vars(ptx, sizeof ptx - 1, &c);
	const char *names[] = {"a", "f", "bytes", "vec", "ptr", "neg", "d"};
	const uint64_t sizes[] = {8, 12, 3, 32, 8, 16, 8};
	assert_int_equal(c.nvars, 7);
	for (int i = 0; i < 7; i++) {
		assert_string_equal(c.vars[i].name, names[i]);
		assert_int_equal(c.vars[i].size, sizes[i]);
	}
	uint64_t a;
	memcpy(&a, c.vars[0].init, 8);
	assert_int_equal(a, 0x1122334455667788ull);
	float f[3];
	memcpy(f, c.vars[1].init, 12);
	assert_true(f[0] == 1.5f && f[1] == -2.0f && f[2] == 3.0f);
	assert_memory_equal(c.vars[2].init, "\1\2\3", 3);
	assert_null(c.vars[3].init);
	memcpy(&a, c.vars[4].init, 8);
	assert_int_equal(a, 0);
	int32_t n[4];
	memcpy(n, c.vars[5].init, 16);
	assert_true(n[0] == -1 && n[1] == 2 && n[2] == 3 && n[3] == -4);
	double d;
	memcpy(&d, c.vars[6].init, 8);
	assert_true(d == 2.0);
	sim_cubin_free(&c);

	/* Garbage and truncation do not upset it. */
	static const char bad[] =
	    ".global .u32 x[99999999999999999999]; .global .b8 y[] = {1, 2, .global .u8";
	memset(&c, 0, sizeof c);
	sim_ptx_vars(bad, sizeof bad - 1, &c);
	sim_cubin_free(&c);
	for (size_t cut = 0; cut < sizeof ptx - 1; cut += 7) {
		memset(&c, 0, sizeof c);
		sim_ptx_vars(ptx, cut, &c);
		sim_cubin_free(&c);
	}
}

/* ---- review regressions -------------------------------------------------------------------- */

/* A module of PTX text: the header, then body. */
static CUresult load_ptx(CUmodule *m, const char *body, size_t body_len)
{
	static const char hdr[] = ".version 8.0\n.target sm_90\n.address_size 64\n";
	char *ptx = malloc(sizeof hdr + body_len);
	assert_non_null(ptx);
	memcpy(ptx, hdr, sizeof hdr - 1);
	memcpy(ptx + sizeof hdr - 1, body, body_len);
	ptx[sizeof hdr - 1 + body_len] = 0;
	CUresult r = cuModuleLoadData(m, ptx);
	free(ptx);
	return r;
}

/* A deeply nested PTX initializer is refused, not parsed by recursing once
 * per brace (a million of them overflowed the stack). */
static void test_ptx_nesting(void **state)
{
	CUcontext c = new_ctx(0);
	enum { DEPTH = 1000000 };
	static const char decl[] = ".global .b8 x[16] = ";
	char *body = malloc(sizeof decl + 2 * DEPTH + 3);
	assert_non_null(body);
	/* Balanced ({{...{1}...}}) and not ({{...{;). */
	for (int balanced = 1; balanced >= 0; balanced--) {
		char *p = body + sizeof decl - 1;
		memcpy(body, decl, sizeof decl - 1);
		memset(p, '{', DEPTH);
		p += DEPTH;
		if (balanced) {
			*p++ = '1';
			memset(p, '}', DEPTH);
			p += DEPTH;
		}
		memcpy(p, ";\n", 3);
		CUmodule m;
		CUresult r = load_ptx(&m, body, strlen(body));
		struct sim_cubin cb;
		memset(&cb, 0, sizeof cb);
		int rc = sim_ptx_vars(body, strlen(body), &cb);
		sim_cubin_free(&cb);
		if (r != CUDA_ERROR_INVALID_PTX && r != CUDA_ERROR_INVALID_IMAGE)
			fail_msg("nesting %d deep (balanced %d): load gave %d", DEPTH, balanced, (int)r);
		assert_int_equal(rc, -1);
	}
	free(body);
	CUmodule m;
	/* Nesting as deep as real initializers is read. */
	static const char ok[] = ".global .u32 n[2][2][2] = {{{1, 2}, {3, 4}}, {{5, 6}, {7, 8}}};\n";
	CU(load_ptx(&m, ok, sizeof ok - 1));
	CUdeviceptr d;
	size_t sz;
	CU(cuModuleGetGlobal(&d, &sz, m, "n"));
	assert_int_equal(sz, 32);
	uint32_t v[8];
	CU(cuMemcpyDtoHAsync(v, d, sizeof v, NULL));
	for (uint32_t i = 0; i < 8; i++)
		assert_int_equal(v[i], i + 1);
	CU(cuModuleUnload(m));
	CU(cuCtxDestroy(c));
}

/* Unsized vector arrays take their size from the initializer once, and the
 * initial bytes copied never exceed what was parsed. */
static void test_ptx_vector_sizes(void **state)
{
	CUcontext c = new_ctx(0);
	CUmodule m;
	CUdeviceptr d;
	size_t sz;
	static const char v2[] = ".global .align 8 .v2 .u32 x[] = {{1, 2}, {3, 4}};\n"
				 ".global .u32 y[][2] = {{1, 2}, {3, 4}, {5}};\n";
	CU(load_ptx(&m, v2, sizeof v2 - 1));
	CU(cuModuleGetGlobal(&d, &sz, m, "x"));
	assert_int_equal(sz, 16);
	uint32_t u[6];
	CU(cuMemcpyDtoHAsync(u, d, 16, NULL));
	for (uint32_t i = 0; i < 4; i++)
		assert_int_equal(u[i], i + 1);
	/* An unsized outer dimension: whole rows, the last one zero-filled. */
	CU(cuModuleGetGlobal(&d, &sz, m, "y"));
	assert_int_equal(sz, 24);
	CU(cuMemcpyDtoHAsync(u, d, 24, NULL));
	for (uint32_t i = 0; i < 5; i++)
		assert_int_equal(u[i], i + 1);
	assert_int_equal(u[5], 0);
	CU(cuModuleUnload(m));

	/* 1001 values of a .v8 .b8 array: 126 vectors. And 1.1 M values of a
	 * .v8 .b64 one, beyond what was read into the initial-value buffer if
	 * the size were counted vector-width times over (an over-read). */
	const size_t counts[] = {1001, 1100000};
	const char *types[] = {".b8", ".b64"};
	const size_t want[] = {1008, (1100000 + 7) / 8 * 64};
	for (int k = 0; k < 2; k++) {
		size_t cap = 64 + 2 * counts[k];
		char *body = malloc(cap), *p = body;
		assert_non_null(body);
		p += sprintf(p, ".global .v8 %s big[] = {", types[k]);
		for (size_t i = 0; i < counts[k]; i++) {
			*p++ = i % 2 ? '2' : '1';
			*p++ = i + 1 < counts[k] ? ',' : '}';
		}
		p += sprintf(p, ";\n");
		CU(load_ptx(&m, body, (size_t)(p - body)));
		free(body);
		CU(cuModuleGetGlobal(&d, &sz, m, "big"));
		assert_int_equal(sz, want[k]);
		uint8_t *got = malloc(sz);
		assert_non_null(got);
		CU(cuMemcpyDtoHAsync(got, d, sz, NULL));
		unsigned esize = k ? 8 : 1;
		for (size_t i = 0; i < sz / esize; i++)
			assert_int_equal(got[i * esize], i < counts[k] ? (i % 2 ? 2 : 1) : 0);
		free(got);
		CU(cuModuleUnload(m));
	}
	CU(cuCtxDestroy(c));
}

/* Work queued before cuMemFree / cuModuleUnload still finds the memory. */
static void test_free_after_launch(void **state)
{
	CUcontext c = new_ctx(0);
	CUmodule m = load_module();
	CUfunction fill = get_func(m, "fill_u32"), store = get_func(m, "_Z5storePii");
	CUdeviceptr p, tmp;
	CU(cuMemAlloc(&p, 4096));
	CU(cuMemAlloc(&tmp, 4096));
	/* kernel<<<>>>(tmp); cudaFree(tmp), with the kernel still queued. */
	CU(launch_fill(fill, p, 1, 1, 50 * MS, NULL));
	CU(launch_store(store, tmp, 7, NULL));
	CU(cuMemFree(tmp));
	CU(cuCtxSynchronize());
	CUERR(cuMemFree(tmp), CUDA_ERROR_INVALID_VALUE);

	/* A module's variable written by a kernel queued before the unload. */
	CUmodule m2 = load_module();
	CUfunction store2 = get_func(m2, "_Z5storePii");
	CUdeviceptr counter;
	CU(cuModuleGetGlobal(&counter, NULL, m2, "dev_counter"));
	CU(launch_fill(fill, p, 1, 1, 50 * MS, NULL));
	CU(launch_store(store2, counter, 3, NULL));
	CU(cuModuleUnload(m2));
	CU(cuCtxSynchronize());
	/* Launched after the free, a kernel faults as on a GPU. */
	CU(cuMemAlloc(&tmp, 16));
	CU(cuMemFree(tmp));
	CU(launch_store(store, tmp, 7, NULL));
	CUERR(cuCtxSynchronize(), CUDA_ERROR_ILLEGAL_ADDRESS);
	CU(cuCtxDestroy(c));
	unpoison();
}

/* Overlapping device-to-device copies move the bytes (memmove). */
static void test_dtod_overlap(void **state)
{
	CUcontext c = new_ctx(0);
	enum { N = 1 << 20 };
	uint8_t *h = malloc(N), *out = malloc(N);
	assert_true(h && out);
	for (size_t i = 0; i < N; i++)
		h[i] = (uint8_t)(i % 251);
	CUdeviceptr p;
	CU(cuMemAlloc(&p, N));
	CU(cuMemcpyHtoDAsync(p, h, N, NULL));
	CU(cuMemcpyDtoDAsync(p + 1, p, N - 1, NULL)); /* up */
	CU(cuMemcpyDtoHAsync(out, p, N, NULL));
	assert_int_equal(out[0], h[0]);
	for (size_t i = 1; i < N; i++)
		if (out[i] != h[i - 1])
			fail_msg("up: byte %zu is %u, not %u", i, out[i], h[i - 1]);
	CU(cuMemcpyHtoDAsync(p, h, N, NULL));
	CU(cuMemcpyDtoDAsync(p, p + 4096, N - 4096, NULL)); /* down */
	CU(cuMemcpyDtoHAsync(out, p, N, NULL));
	for (size_t i = 0; i < N - 4096; i++)
		if (out[i] != h[i + 4096])
			fail_msg("down: byte %zu is %u, not %u", i, out[i], h[i + 4096]);
	CU(cuMemFree(p));
	free(h);
	free(out);
	CU(cuCtxDestroy(c));
}

/* A host implementation's error outside the launch-failure class (here
 * INVALID_VALUE: a kernel named saxpy whose parameters the plugin cannot
 * read) fails the context with CUDA_ERROR_LAUNCH_FAILED. */
static void test_plugin_error_class(void **state)
{
	CUcontext c = new_ctx(0);
	static const char body[] = ".visible .entry saxpy(.param .u32 n)\n{\n\tret;\n}\n";
	CUmodule m;
	CU(load_ptx(&m, body, sizeof body - 1));
	CUfunction f = get_func(m, "saxpy");
	unsigned n = 1;
	void *args[] = {&n};
	CU(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL));
	CUERR(cuCtxSynchronize(), CUDA_ERROR_LAUNCH_FAILED);
	CUERR(cuCtxSynchronize(), CUDA_ERROR_LAUNCH_FAILED);
	CUERR(cuModuleUnload(m), CUDA_ERROR_LAUNCH_FAILED);
	CU(cuCtxDestroy(c));
	unpoison();
}

/* Thread counts of the largest launches saturate instead of wrapping. */
static void test_simk_threads(void **state)
{
	struct xgpu_simk_launch l = {.grid = {2147483647u, 65535, 65535}, .block = {1024, 1, 1}};
	assert_true(xgpu_simk_threads(&l) == UINT64_MAX);
	l = (struct xgpu_simk_launch){.grid = {2147483647u, 65535, 1}, .block = {1024, 1, 1}};
	assert_true(xgpu_simk_threads(&l) == 2147483647ull * 65535 * 1024);
	l = (struct xgpu_simk_launch){.grid = {2, 3, 4}, .block = {5, 6, 7}};
	assert_int_equal(xgpu_simk_threads(&l), 5040);
	l.grid[1] = 0;
	assert_int_equal(xgpu_simk_threads(&l), 0);
}

/* Destroying a context waits for its running operation, as NVIDIA's
 * cuCtxDestroy does for a running kernel, but not for the work queued behind
 * it: another context's work on the device goes on after the running kernel,
 * not when the queued one would have ended. */
static void test_destroy_mid_kernel(void **state)
{
	CUcontext b = new_ctx(0);
	CUdeviceptr q;
	CU(cuMemAlloc(&q, 4096));
	CUcontext a = new_ctx(0);
	CUmodule m = load_module();
	CUfunction fill = get_func(m, "fill_u32");
	CUdeviceptr p;
	CU(cuMemAlloc(&p, 4096));
	CU(launch_fill(fill, p, 1, 1, 400 * MS, NULL));
	CU(launch_fill(fill, p, 1, 1, 5000 * MS, NULL));
	usleep(50000);
	/* b's 100 ms kernel shares the device with a's (time slices), so it
	 * is still running when a goes: a's destroy waits out a's running
	 * 400 ms kernel (what is left of it, shared with b's), not the 5 s one
	 * queued behind it, and b's work then has the device to itself. */
	CU(cuCtxSetCurrent(b));
	CUmodule mb = load_module();
	CU(launch_fill(get_func(mb, "fill_u32"), q, 0, 1, 100 * MS, NULL));
	CU(cuMemsetD8Async(q, 1, 4096, NULL));
	CUERR(cuStreamQuery(NULL), CUDA_ERROR_NOT_READY);
	uint64_t t0 = now_ns();
	CU(cuCtxDestroy(a));
	uint64_t took = now_ns() - t0;
	assert_true(took >= 300 * MS && took < 2500 * MS);
	CU(cuCtxSynchronize());
	assert_true(now_ns() - t0 < 3000 * MS);
	uint8_t v[4096];
	CU(cuMemcpyDtoHAsync(v, q, sizeof v, NULL));
	assert_int_equal(v[4095], 1);
	CU(cuCtxDestroy(b));
}

/* Freeing pinned memory waits for the copies that used it, not for other
 * contexts' work. */
static void test_pinned_free_scope(void **state)
{
	CUcontext a = new_ctx(0);
	CUmodule m = load_module();
	CUfunction fill_a = get_func(m, "fill_u32");
	CUdeviceptr pa;
	CU(cuMemAlloc(&pa, 4096));

	CUcontext b = new_ctx(0);
	CUmodule mb = load_module();
	CUfunction fill_b = get_func(mb, "fill_u32");
	CUdeviceptr pb;
	CU(cuMemAlloc(&pb, 4096));
	uint32_t *pinned, *idle;
	CU(cuMemAllocHost((void **)&pinned, 4096));
	CU(cuMemAllocHost((void **)&idle, 4096));
	uint32_t *reg = aligned_alloc(4096, 4096);
	assert_non_null(reg);
	CU(cuMemHostRegister(reg, 4096, 0));
	CU(cuMemcpyDtoHAsync(reg, pb, 4096, NULL));
	CU(cuCtxSynchronize());

	/* A's long kernel: B's unused (or done with) ranges go at once. */
	CU(cuCtxSetCurrent(a));
	CU(launch_fill(fill_a, pa, 1, 1, 300 * MS, NULL));
	CU(cuCtxSetCurrent(b));
	uint64_t t0 = now_ns();
	CU(cuMemFreeHost(idle));
	CU(cuMemHostUnregister(reg));
	assert_true(now_ns() - t0 < 150 * MS);
	/* A copy into a range queued behind b's kernel: the free waits for
	 * that copy, which time slices end well before a's kernel. */
	uint64_t t1 = now_ns();
	CU(launch_fill(fill_b, pb, 9, 1024, 20 * MS, NULL));
	CU(cuMemcpyDtoHAsync(pinned, pb, 4096, NULL));
	CU(cuMemFreeHost(pinned));
	uint64_t waited = now_ns() - t1;
	if (waited < 20 * MS || waited >= 250 * MS)
		fail_msg("freeing the range waited %.1f ms for b's 20 ms kernel and copy",
			 (double)waited / 1e6);
	free(reg);
	CU(cuCtxDestroy(b));
	CU(cuCtxDestroy(a));
}

/* Cubin section names: each read once with a bounded scan and sorted without
 * shared state; one over 64 KiB, or more than 64 MiB of them, is refused. */
static uint8_t *make_cubin(uint32_t nsh, size_t namelen, size_t *len_out)
{
	size_t shstr_off = 64, shstr_len = namelen + 1;
	size_t sh_off = (shstr_off + shstr_len + 7) & ~(size_t)7;
	size_t len = sh_off + 64 * (size_t)nsh;
	uint8_t *d = calloc(1, len);
	assert_non_null(d);
	d[0] = 0x7f;
	memcpy(d + 1, "ELF", 3);
	d[4] = 2;
	d[5] = 1;
	uint16_t v16 = 190;
	memcpy(d + 18, &v16, 2); /* EM_CUDA */
	uint32_t v32 = 90u << 8;
	memcpy(d + 0x30, &v32, 4); /* sm_90 */
	uint64_t v64 = sh_off;
	memcpy(d + 0x28, &v64, 8);
	v16 = 64;
	memcpy(d + 0x3a, &v16, 2);
	v16 = (uint16_t)nsh;
	memcpy(d + 0x3c, &v16, 2);
	v16 = 1;
	memcpy(d + 0x3e, &v16, 2); /* section 1 holds the names */
	memset(d + shstr_off, 'a', namelen);
	uint8_t *sh = d + sh_off;
	v32 = 3; /* SHT_STRTAB */
	memcpy(sh + 64 + 4, &v32, 4);
	v64 = shstr_off;
	memcpy(sh + 64 + 24, &v64, 8);
	v64 = shstr_len;
	memcpy(sh + 64 + 32, &v64, 8);
	for (uint32_t i = 2; i < nsh; i++) {
		v32 = 1; /* PROGBITS, empty, named like all the others */
		memcpy(sh + 64 * (size_t)i + 4, &v32, 4);
	}
	*len_out = len;
	return d;
}

static void test_cubin_names(void **state)
{
	CUcontext c = new_ctx(0);
	CUmodule m;
	size_t len;
	uint8_t *img = make_cubin(16, 1000, &len);
	CU(cuModuleLoadData(&m, img));
	CU(cuModuleUnload(m));
	free(img);
	img = make_cubin(16, 70000, &len);
	CUERR(cuModuleLoadData(&m, img), CUDA_ERROR_INVALID_IMAGE);
	free(img);
	/* 65535 names of 2 KiB: 128 MiB to sort. */
	uint64_t t0 = now_ns();
	img = make_cubin(65535, 2048, &len);
	CUERR(cuModuleLoadData(&m, img), CUDA_ERROR_INVALID_IMAGE);
	free(img);
	assert_true(now_ns() - t0 < 2000 * MS);
	CU(cuCtxDestroy(c));
}

/* ---- the shared library, through dlopen -------------------------------------------------------- */

#define STR_(x) #x
#define STR(x) STR_(x) /* expands cuda.h's renaming: cuMemAlloc -> "cuMemAlloc_v2" */

static void test_dlopen(void **state)
{
	/* A second, independent instance: its own devices and speed. */
	unsetenv("XGPU_SIM_DEVICES");
	setenv("XGPU_SIM_DEVICE_SPEC", "0:sms=20,name=tiny;2:mem=2G,cc=8.0", 1);
	setenv("XGPU_SIM_SPEED", "4", 1);
	const char *path = build_path("lib/libxgpu-simdrv.so");
	void *dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!dl)
		fail_msg("dlopen %s: %s", path, dlerror());
	struct xgpu_driver d;
	memset(&d, 0, sizeof d);
#define RESOLVE(fn)                                                                                          \
	*(void **)&d.fn = dlsym(dl, STR(fn));                                                                \
	if (!d.fn)                                                                                           \
		fail_msg("%s does not export %s", path, STR(fn));
	XGPU_DRIVER_FUNCS(RESOLVE)
#undef RESOLVE
	/* Internals stay hidden. */
	assert_null(dlsym(dl, "sim_submit"));
	assert_null(dlsym(dl, "xgpu_fatbin_parse"));
	assert_null(dlsym(dl, "cuMemAlloc")); /* only the versioned name, as libcuda */

	CU(d.cuInit(0));
	int n;
	CU(d.cuDeviceGetCount(&n));
	assert_int_equal(n, 3);
	char name[64];
	CU(d.cuDeviceGetName(name, sizeof name, 0));
	assert_string_equal(name, "tiny");
	int v;
	CU(d.cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0));
	assert_int_equal(v, 20);
	CU(d.cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 2));
	assert_int_equal(v, 8);
	size_t total;
	CU(d.cuDeviceTotalMem(&total, 2));
	assert_int_equal(total, 2ull << 30);
	CU(d.cuDeviceTotalMem(&total, 1));
	assert_int_equal(total, 4ull << 30); /* XGPU_SIM_MEM */

	/* Its contexts are not the static instance's. */
	CUcontext c;
	CU(d.cuCtxCreate(&c, NULL, 0, 0));
	CUERR(cuCtxSetCurrent(c), CUDA_ERROR_INVALID_CONTEXT);
	CUmodule m;
	CU(d.cuModuleLoadData(&m, fatbin));
	CUfunction f, fill;
	CU(d.cuModuleGetFunction(&f, m, "saxpy"));
	CU(d.cuModuleGetFunction(&fill, m, "fill_u32"));
	float x[64], y[64];
	for (int i = 0; i < 64; i++)
		x[i] = (float)i, y[i] = 2.0f;
	CUdeviceptr dx, dy;
	CU(d.cuMemAlloc(&dx, sizeof x));
	CU(d.cuMemAlloc(&dy, sizeof y));
	CU(d.cuMemcpyHtoDAsync(dx, x, sizeof x, NULL));
	CU(d.cuMemcpyHtoDAsync(dy, y, sizeof y, NULL));
	struct {
		int n;
		float a;
		CUdeviceptr x, y;
	} pb = {64, 2.0f, dx, dy};
	size_t pbsz = sizeof pb;
	void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &pb, CU_LAUNCH_PARAM_BUFFER_SIZE, &pbsz,
			 CU_LAUNCH_PARAM_END};
	CU(d.cuLaunchKernel(f, 1, 1, 1, 64, 1, 1, 0, NULL, NULL, extra));
	CU(d.cuMemcpyDtoHAsync(y, dy, sizeof y, NULL));
	for (int i = 0; i < 64; i++)
		assert_true(y[i] == 2.0f * (float)i + 2.0f);

	/* XGPU_SIM_SPEED=4: a 200 ms kernel takes 50 ms. */
	CUevent a, b;
	CU(d.cuEventCreate(&a, 0));
	CU(d.cuEventCreate(&b, 0));
	unsigned long long ns = 200 * MS, cnt = 0;
	unsigned val = 0;
	void *args[] = {&dx, &val, &cnt, &ns};
	CU(d.cuEventRecord(a, NULL));
	CU(d.cuLaunchKernel(fill, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL));
	CU(d.cuEventRecord(b, NULL));
	CU(d.cuEventSynchronize(b));
	float ms;
	CU(d.cuEventElapsedTime(&ms, a, b));
	assert_true(ms >= 49.9f && ms < 80.0f);

	/* An sm_80 device cannot run sm_90 SASS nor JIT compute_90 PTX. */
	CUcontext c2;
	CU(d.cuCtxCreate(&c2, NULL, 0, 2));
	CUmodule m2;
	CUERR(d.cuModuleLoadData(&m2, fatbin), CUDA_ERROR_NO_BINARY_FOR_GPU);
	CU(d.cuCtxDestroy(c2));
	/* Leave a context behind, busy for 10 x 500 ms: unloading the library
	 * cleans it up, dropping the queued work rather than running it. */
	CU(d.cuCtxSetCurrent(c));
	ns = 2000 * MS;
	for (int i = 0; i < 10; i++)
		CU(d.cuLaunchKernel(fill, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL));
	uint64_t t0 = now_ns();
	dlclose(dl);
	assert_true(now_ns() - t0 < 2000 * MS);
	setenv("XGPU_SIM_DEVICES", "2", 1);
	unsetenv("XGPU_SIM_DEVICE_SPEC");
	unsetenv("XGPU_SIM_SPEED");
}

/* The watchdog: an operation modeled to take longer than XGPU_SIM_WATCHDOG_MS
 * occupies the device that long, then fails its context with
 * CUDA_ERROR_LAUNCH_TIMEOUT, and with it the process's other contexts (as on
 * NVIDIA's driver). In an instance of its own
 * without time slices (XGPU_SIM_SLICE_MS=0), where the device runs whole
 * operations in submission order: the other context waits for the cut. */
static void test_watchdog(void **state)
{
	const char *path = build_path("lib/libxgpu-simdrv.so");
	const char *bad[][2] = {{"soon", "0"}, {"300", "-1"}, {"300", "2ms"}};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		setenv("XGPU_SIM_WATCHDOG_MS", bad[i][0], 1);
		setenv("XGPU_SIM_SLICE_MS", bad[i][1], 1);
		void *dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
		if (!dl)
			fail_msg("dlopen %s: %s", path, dlerror());
		CUresult (*init)(unsigned) = (CUresult(*)(unsigned))dlsym(dl, "cuInit");
		assert_non_null(init);
		CUERR(init(0), CUDA_ERROR_INVALID_VALUE);
		dlclose(dl);
	}

	setenv("XGPU_SIM_WATCHDOG_MS", "300", 1);
	setenv("XGPU_SIM_SLICE_MS", "0", 1);
	void *dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!dl)
		fail_msg("dlopen %s: %s", path, dlerror());
	struct xgpu_driver d;
	memset(&d, 0, sizeof d);
#define RESOLVE(fn)                                                                                          \
	*(void **)&d.fn = dlsym(dl, STR(fn));                                                                \
	if (!d.fn)                                                                                           \
		fail_msg("%s does not export %s", path, STR(fn));
	XGPU_DRIVER_FUNCS(RESOLVE)
	CU(d.cuInit(0));
	CUcontext a, b;
	CU(d.cuCtxCreate(&b, NULL, 0, 0));
	CUdeviceptr q;
	CU(d.cuMemAlloc(&q, 4096));
	CU(d.cuCtxCreate(&a, NULL, 0, 0));
	CUmodule m;
	CU(d.cuModuleLoadData(&m, fatbin));
	CUfunction fill, noimpl;
	CU(d.cuModuleGetFunction(&fill, m, "fill_u32"));
	CU(d.cuModuleGetFunction(&noimpl, m, "no_impl"));
	CUdeviceptr p;
	CU(d.cuMemAlloc(&p, 4096));

	/* A 3 s kernel: cut at 300 ms. */
	unsigned long long ns = 3000 * MS, cnt = 1;
	unsigned val = 1;
	void *args[] = {&p, &val, &cnt, &ns};
	uint64_t t0 = now_ns();
	CU(d.cuLaunchKernel(fill, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL));
	CU(d.cuCtxSetCurrent(b));
	CU(d.cuMemsetD8Async(q, 1, 4096, NULL));
	/* The other context's work waits for the cut, and the timeout is the
	 * process's, as on NVIDIA's driver: that context fails with it too. */
	CUERR(d.cuCtxSynchronize(), CUDA_ERROR_LAUNCH_TIMEOUT);
	uint64_t took = now_ns() - t0;
	assert_true(took >= 290 * MS && took < 1500 * MS);
	CU(d.cuCtxSetCurrent(a));
	CUERR(d.cuCtxSynchronize(), CUDA_ERROR_LAUNCH_TIMEOUT);
	CUdeviceptr x;
	CUERR(d.cuMemAlloc(&x, 16), CUDA_ERROR_LAUNCH_TIMEOUT);
	CU(d.cuCtxDestroy(a));
	/* No new context can be made, for the process's life. */
	CU(d.cuCtxSetCurrent(b));
	CUERR(d.cuMemsetD8Async(q, 2, 4096, NULL), CUDA_ERROR_LAUNCH_TIMEOUT);
	CUERR(d.cuCtxCreate(&a, NULL, 0, 0), CUDA_ERROR_LAUNCH_TIMEOUT);
	CU(d.cuCtxDestroy(b));
	dlclose(dl);

	/* The largest grid under the default model (11 days): cut too (a new
	 * instance of the driver: a new process, as it were). */
	dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!dl)
		fail_msg("dlopen %s: %s", path, dlerror());
	XGPU_DRIVER_FUNCS(RESOLVE)
	CU(d.cuInit(0));
	CU(d.cuCtxCreate(&a, NULL, 0, 0));
	CU(d.cuModuleLoadData(&m, fatbin));
	CU(d.cuModuleGetFunction(&noimpl, m, "no_impl"));
	CU(d.cuMemAlloc(&p, 4096));
	void *args1[] = {&p};
	t0 = now_ns();
	CU(d.cuLaunchKernel(noimpl, 2147483647u, 65535, 65535, 1024, 1, 1, 0, NULL, args1, NULL));
	CUERR(d.cuCtxSynchronize(), CUDA_ERROR_LAUNCH_TIMEOUT);
	took = now_ns() - t0;
	assert_true(took >= 290 * MS && took < 1500 * MS);
	CU(d.cuCtxDestroy(a));
	dlclose(dl);
#undef RESOLVE
	unsetenv("XGPU_SIM_WATCHDOG_MS");
	unsetenv("XGPU_SIM_SLICE_MS");
}

/* Time slices (the static instance: the default 2 ms, watchdog 10 s): a
 * context's long kernel delays another context's work by a slice or so, not
 * by the kernel's length; two long kernels of two contexts share the device
 * and both end after their sum; work of one context still runs in order;
 * and an event of another context is waited for. */
static void test_time_slicing(void **state)
{
	CUcontext b = new_ctx(0);
	CUmodule mb = load_module();
	CUfunction fill_b = get_func(mb, "fill_u32");
	CUdeviceptr q;
	CU(cuMemAlloc(&q, 4096));
	CUcontext a = new_ctx(0);
	CUmodule ma = load_module();
	CUfunction fill_a = get_func(ma, "fill_u32");
	CUdeviceptr p;
	CU(cuMemAlloc(&p, 4096));

	uint64_t t0 = now_ns();
	CU(launch_fill(fill_a, p, 1, 1024, 400 * MS, NULL));
	CUevent a_done;
	CU(cuEventCreate(&a_done, 0));
	CU(cuEventRecord(a_done, NULL));
	CU(cuCtxSetCurrent(b));
	usleep(20000); /* a is well into its kernel */
	uint64_t t1 = now_ns();
	CU(launch_fill(fill_b, q, 2, 1024, 1 * MS, NULL));
	CU(cuMemsetD8Async(q + 4096 - 1, 7, 1, NULL));
	CU(cuCtxSynchronize());
	uint64_t b_took = now_ns() - t1;
	uint8_t v[4096];
	CU(cuMemcpyDtoHAsync(v, q, sizeof v, NULL));
	assert_int_equal(v[0], 2);
	assert_int_equal(v[4095], 7);
	/* About a slice of waiting and a millisecond of work: far below a's
	 * 400 ms, with room for a loaded machine. */
	if (b_took >= 150 * MS)
		fail_msg("b's 1 ms kernel took %.1f ms behind a's 400 ms one", (double)b_took / 1e6);
	CUERR(cuEventQuery(a_done), CUDA_ERROR_NOT_READY);

	/* A wait for a's event holds b's next work until a's kernel ends, which
	 * the time b used pushed past 400 ms. */
	CU(cuStreamWaitEvent(NULL, a_done, 0));
	CU(cuMemsetD8Async(q, 9, 1, NULL));
	CU(cuCtxSynchronize());
	uint64_t a_took = now_ns() - t0;
	assert_true(a_took >= 400 * MS);
	CU(cuEventQuery(a_done));
	CU(cuMemcpyDtoHAsync(v, q, 1, NULL));
	assert_int_equal(v[0], 9);

	/* Two 200 ms kernels side by side each end after about 400 ms. On a
	 * loaded machine the second launch can come late: b runs alone until
	 * then, so it ends that much before 400 ms (400 - late). */
	t0 = now_ns();
	CU(launch_fill(fill_b, q, 3, 1, 200 * MS, NULL));
	CU(cuCtxSetCurrent(a));
	CU(launch_fill(fill_a, p, 4, 1, 200 * MS, NULL));
	uint64_t late = now_ns() - t0;
	CU(cuCtxSetCurrent(b));
	CU(cuCtxSynchronize());
	uint64_t first = now_ns() - t0;
	CU(cuCtxSetCurrent(a));
	CU(cuCtxSynchronize());
	uint64_t second = now_ns() - t0;
	if (first + late < 380 * MS || second < 390 * MS || second > 1000 * MS)
		fail_msg("two 200 ms kernels ended after %.1f and %.1f ms (second launched %.1f ms late)",
			 (double)first / 1e6, (double)second / 1e6, (double)late / 1e6);
	CU(cuEventDestroy(a_done));
	CU(cuCtxDestroy(a));
	CU(cuCtxDestroy(b));
}

/* cuInit refuses a bad configuration, and keeps refusing. */
static void test_bad_config(void **state)
{
	setenv("XGPU_SIM_MEM", "lots", 1);
	const char *path = build_path("lib/libxgpu-simdrv.so");
	void *dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	assert_non_null(dl);
	CUresult (*init)(unsigned) = (CUresult(*)(unsigned))dlsym(dl, "cuInit");
	CUresult (*count)(int *) = (CUresult(*)(int *))dlsym(dl, "cuDeviceGetCount");
	assert_non_null(init);
	CUresult r = init(0);
	int n;
	if (r == CUDA_SUCCESS) {
		/* The loader kept the earlier instance: nothing to check here. */
		dlclose(dl);
		setenv("XGPU_SIM_MEM", "4G", 1);
		skip();
	}
	assert_int_equal(r, CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(init(0), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(count(&n), CUDA_ERROR_NOT_INITIALIZED);
	dlclose(dl);
	setenv("XGPU_SIM_MEM", "4G", 1);
}

int main(void)
{
	/* The static instance's configuration (read by cuInit). */
	setenv("XGPU_SIM_DEVICES", "2", 1);
	setenv("XGPU_SIM_MEM", "4G", 1);
	setenv("XGPU_SIM_DEVICE_SPEC", "1:sms=66,mem=1G,name=small", 1);
	unsetenv("XGPU_SIM_SPEED");
	setenv("XGPU_SIM_KERNELS", build_path("tests/data/simk"), 1);
	/* Its kernels without host implementations (no_impl) stand for work
	 * that only takes modeled time, with grids far larger than their
	 * buffers: the PTX interpreter stays off (test_ptx tests it). */
	setenv("XGPU_SIM_PTX", "off", 1);
	fatbin = read_file(build_path("tests/data/simdrv_kernels.fatbin"), &fatbin_len);
	if (!fatbin) {
		fprintf(stderr, "cannot read %s\n", build_path("tests/data/simdrv_kernels.fatbin"));
		return 1;
	}
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_before_init),
	    cmocka_unit_test(test_devices),
	    cmocka_unit_test(test_errors),
	    cmocka_unit_test(test_contexts),
	    cmocka_unit_test(test_memory_accounting),
	    cmocka_unit_test(test_copy_checks),
	    cmocka_unit_test(test_pitched),
	    cmocka_unit_test(test_managed),
	    cmocka_unit_test(test_context_isolation),
	    cmocka_unit_test(test_modules),
	    cmocka_unit_test(test_image_forms),
	    cmocka_unit_test(test_ptx_vars),
	    cmocka_unit_test(test_launch_checks),
	    cmocka_unit_test(test_cooperative_priorities),
	    cmocka_unit_test(test_stream_order),
	    cmocka_unit_test(test_events),
	    cmocka_unit_test(test_graphs),
	    cmocka_unit_test(test_host_functions),
	    cmocka_unit_test(test_sticky_error),
	    cmocka_unit_test(test_destroy_pending),
	    cmocka_unit_test(test_pageable_pinned),
	    cmocka_unit_test(test_worker_sleeps),
	    cmocka_unit_test(test_default_model),
	    cmocka_unit_test(test_cross_device_wait),
	    cmocka_unit_test(test_concurrent_contexts),
	    cmocka_unit_test(test_bad_handles),
	    cmocka_unit_test(test_ptx_nesting),
	    cmocka_unit_test(test_ptx_vector_sizes),
	    cmocka_unit_test(test_free_after_launch),
	    cmocka_unit_test(test_dtod_overlap),
	    cmocka_unit_test(test_plugin_error_class),
	    cmocka_unit_test(test_simk_threads),
	    cmocka_unit_test(test_destroy_mid_kernel),
	    cmocka_unit_test(test_pinned_free_scope),
	    cmocka_unit_test(test_cubin_names),
	    cmocka_unit_test(test_dlopen),
	    cmocka_unit_test(test_watchdog),
	    cmocka_unit_test(test_time_slicing),
	    cmocka_unit_test(test_bad_config),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	free(fatbin);
	return rc;
}
