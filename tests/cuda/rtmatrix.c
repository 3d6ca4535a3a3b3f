/* SPDX-License-Identifier: Apache-2.0 */
/* rtmatrix.c - one of NVIDIA's CUDA runtimes (libcudart.so.12 or .13, any
 * release) over whichever libcuda.so.1 the loader finds (xgpu's in
 * tests/e2e/runtime_matrix.sh), as a program built with -cudart shared uses
 * it, but without being built against that release's headers: the runtime
 * is dlopen()ed and the program's device code is registered the way nvcc's
 * generated host code does (__cudaRegisterFatBinary, __cudaRegisterFunction,
 * __cudaRegisterVar, __cudaRegisterFatBinaryEnd), so every runtime from 12.0
 * on runs its whole start-up (the driver's private tables, the integrity
 * check, cuGetProcAddress of its entry points, the module load) and its
 * launch path.
 *
 *   rtmatrix LIBCUDART FATBIN
 *
 * FATBIN is tests/data/simdrv_kernels.cu built with nvcc -fatbin (kernels
 * saxpy, fill_u32 and store, variables dev_table and dev_scale), whose host
 * implementations the simulated driver runs (XGPU_SIM_KERNELS), so results
 * are checked. It sweeps saxpy over sizes and block shapes, on the default
 * stream and on a created one, copies through pinned memory, reads and
 * writes a __device__ array by symbol, and asks for an occupancy. Prints
 * "rtmatrix: runtime V driver D: OK (N checks)" and exits 0 when every call
 * succeeded and every result is right; the first failed call ends it with
 * its name and error. Only the runtime API's C ABI, stable since CUDA 10,
 * is used: no structure whose layout changes between releases. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int cudaError_t;
typedef void *cudaStream_t;
typedef void *cudaEvent_t;
typedef struct {
	unsigned x, y, z;
} dim3;

/* nvcc's fatbin wrapper (crt/host_runtime.h, __fatBinC_Wrapper_t). */
struct fatbin_wrapper {
	int magic;
	int version;
	const void *data;
	void *filename_or_fatbins;
};
#define FATBIN_WRAPPER_MAGIC 0x466243b1

enum { H2D = 1, D2H = 2 }; /* cudaMemcpyKind */

/* The runtime's entry points this program calls, by name. */
#define RUNTIME_CALLS(X)                                                                                     \
	X(cudaError_t, cudaRuntimeGetVersion, (int *))                                                       \
	X(cudaError_t, cudaDriverGetVersion, (int *))                                                        \
	X(cudaError_t, cudaGetDeviceCount, (int *))                                                          \
	X(cudaError_t, cudaSetDevice, (int))                                                                 \
	X(cudaError_t, cudaDeviceGetAttribute, (int *, int, int))                                            \
	X(cudaError_t, cudaMalloc, (void **, size_t))                                                        \
	X(cudaError_t, cudaFree, (void *))                                                                   \
	X(cudaError_t, cudaMallocHost, (void **, size_t))                                                    \
	X(cudaError_t, cudaFreeHost, (void *))                                                               \
	X(cudaError_t, cudaMemcpy, (void *, const void *, size_t, int))                                      \
	X(cudaError_t, cudaMemcpyAsync, (void *, const void *, size_t, int, cudaStream_t))                   \
	X(cudaError_t, cudaMemset, (void *, int, size_t))                                                    \
	X(cudaError_t, cudaMemcpyToSymbol, (const void *, const void *, size_t, size_t, int))                \
	X(cudaError_t, cudaMemcpyFromSymbol, (void *, const void *, size_t, size_t, int))                    \
	X(cudaError_t, cudaGetSymbolSize, (size_t *, const void *))                                          \
	X(cudaError_t, cudaLaunchKernel, (const void *, dim3, dim3, void **, size_t, cudaStream_t))          \
	X(cudaError_t, cudaOccupancyMaxActiveBlocksPerMultiprocessor, (int *, const void *, int, size_t))    \
	X(cudaError_t, cudaStreamCreate, (cudaStream_t *))                                                   \
	X(cudaError_t, cudaStreamSynchronize, (cudaStream_t))                                                \
	X(cudaError_t, cudaStreamDestroy, (cudaStream_t))                                                    \
	X(cudaError_t, cudaEventCreate, (cudaEvent_t *))                                                     \
	X(cudaError_t, cudaEventRecord, (cudaEvent_t, cudaStream_t))                                         \
	X(cudaError_t, cudaEventSynchronize, (cudaEvent_t))                                                  \
	X(cudaError_t, cudaEventElapsedTime, (float *, cudaEvent_t, cudaEvent_t))                            \
	X(cudaError_t, cudaEventDestroy, (cudaEvent_t))                                                      \
	X(cudaError_t, cudaDeviceSynchronize, (void))                                                        \
	X(cudaError_t, cudaGetLastError, (void))                                                             \
	X(const char *, cudaGetErrorName, (cudaError_t))                                                     \
	X(void **, __cudaRegisterFatBinary, (void *))                                                        \
	X(void, __cudaRegisterFatBinaryEnd, (void **))                                                       \
	X(void, __cudaUnregisterFatBinary, (void **))                                                        \
	X(void, __cudaRegisterFunction,                                                                      \
	  (void **, const char *, char *, const char *, int, void *, void *, void *, void *, int *))         \
	X(void, __cudaRegisterVar, (void **, char *, char *, const char *, int, size_t, int, int))

#define DECLARE(ret, name, args) static ret(*p_##name) args;
RUNTIME_CALLS(DECLARE)

static unsigned checks;

static void fail_call(const char *what, cudaError_t e, int line)
{
	const char *name = p_cudaGetErrorName ? p_cudaGetErrorName(e) : "?";
	fprintf(stderr, "rtmatrix: line %d: %s returned %s (%d)\n", line, what, name ? name : "?", e);
	exit(1);
}

#define CHECK(call)                                                                                          \
	do {                                                                                                 \
		cudaError_t e_ = (p_##call);                                                                 \
		checks++;                                                                                    \
		if (e_)                                                                                      \
			fail_call(#call, e_, __LINE__);                                                      \
	} while (0)

#define EXPECT(cond, ...)                                                                                    \
	do {                                                                                                 \
		checks++;                                                                                    \
		if (!(cond)) {                                                                               \
			fprintf(stderr, "rtmatrix: line %d: expected %s: ", __LINE__, #cond);                \
			fprintf(stderr, __VA_ARGS__);                                                        \
			fputc('\n', stderr);                                                                 \
			exit(1);                                                                             \
		}                                                                                            \
	} while (0)

/* The host-side handles nvcc would emit: their addresses are the kernels'
 * and variables' identities for the runtime. */
static char saxpy_stub, fill_stub;
static float host_dev_table[4];
static float host_dev_scale;

static void *read_whole(const char *path, size_t *size)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		perror(path);
		exit(2);
	}
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	/* The runtime reads the fatbin in place: 8-byte aligned, as nvcc's is. */
	void *buf = n <= 0 ? NULL : aligned_alloc(16, ((size_t)n + 15) & ~(size_t)15);
	if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) {
		perror(path);
		exit(2);
	}
	fclose(f);
	*size = (size_t)n;
	return buf;
}

static void saxpy(int n, float a, const float *x, float *y, unsigned block, cudaStream_t stream)
{
	dim3 grid = {(unsigned)((n + (int)block - 1) / (int)block), 1, 1}, threads = {block, 1, 1};
	if (!grid.x)
		grid.x = 1;
	void *args[] = {&n, &a, &x, &y};
	CHECK(cudaLaunchKernel(&saxpy_stub, grid, threads, args, 0, stream));
}

/* saxpy over n elements with a block of `block` threads: y = 2x + y twice
 * (the second on `stream`), checked element by element. */
static void sweep_saxpy(int n, unsigned block, cudaStream_t stream, float *pinned_x, float *pinned_y)
{
	float *dx, *dy;
	size_t bytes = (size_t)n * sizeof(float);
	CHECK(cudaMalloc((void **)&dx, bytes));
	CHECK(cudaMalloc((void **)&dy, bytes));
	for (int i = 0; i < n; i++) {
		pinned_x[i] = (float)(i % 1000);
		pinned_y[i] = (float)(n - i % 7);
	}
	CHECK(cudaMemcpy(dx, pinned_x, bytes, H2D));
	CHECK(cudaMemcpyAsync(dy, pinned_y, bytes, H2D, stream));
	CHECK(cudaStreamSynchronize(stream));
	saxpy(n, 2.0f, dx, dy, block, NULL);
	saxpy(n, 2.0f, dx, dy, block, stream);
	CHECK(cudaMemcpyAsync(pinned_y, dy, bytes, D2H, stream));
	CHECK(cudaStreamSynchronize(stream));
	int i = 0;
	float want = 0;
	for (; i < n; i++) {
		want = (float)(n - i % 7) + 4.0f * (float)(i % 1000);
		if (pinned_y[i] != want)
			break;
	}
	EXPECT(i == n, "n %d block %u: y[%d] = %g, want %g", n, block, i, i < n ? pinned_y[i] : 0, want);
	CHECK(cudaFree(dx));
	CHECK(cudaFree(dy));
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: rtmatrix LIBCUDART FATBIN\n");
		return 2;
	}
	void *rt = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!rt) {
		fprintf(stderr, "rtmatrix: %s\n", dlerror());
		return 2;
	}
#define RESOLVE(ret, name, args)                                                                             \
	if (!(*(void **)&p_##name = dlsym(rt, #name))) {                                                     \
		fprintf(stderr, "rtmatrix: %s has no %s\n", argv[1], #name);                                 \
		return 2;                                                                                    \
	}
	RUNTIME_CALLS(RESOLVE)

	size_t fatbin_size;
	struct fatbin_wrapper wrapper = {FATBIN_WRAPPER_MAGIC, 1, read_whole(argv[2], &fatbin_size), NULL};

	/* What nvcc's generated constructor does before main(). */
	void **module = p___cudaRegisterFatBinary(&wrapper);
	EXPECT(module != NULL, "__cudaRegisterFatBinary answered NULL");
	p___cudaRegisterFunction(module, &saxpy_stub, (char *)"saxpy", "saxpy", -1, NULL, NULL, NULL, NULL,
				 NULL);
	p___cudaRegisterFunction(module, &fill_stub, (char *)"fill_u32", "fill_u32", -1, NULL, NULL, NULL,
				 NULL, NULL);
	p___cudaRegisterVar(module, (char *)host_dev_table, (char *)"dev_table", "dev_table", 0,
			    sizeof host_dev_table, 0, 0);
	p___cudaRegisterVar(module, (char *)&host_dev_scale, (char *)"dev_scale", "dev_scale", 0,
			    sizeof host_dev_scale, 1, 0);
	p___cudaRegisterFatBinaryEnd(module);

	int runtime = 0, driver = 0, count = 0;
	CHECK(cudaRuntimeGetVersion(&runtime));
	CHECK(cudaDriverGetVersion(&driver));
	CHECK(cudaGetDeviceCount(&count)); /* the runtime's initialisation: private tables, integrity */
	EXPECT(count >= 1, "%d devices", count);
	CHECK(cudaSetDevice(0));
	int sms = 0, major = 0;
	CHECK(cudaDeviceGetAttribute(&sms, 16 /* cudaDevAttrMultiProcessorCount */, 0));
	CHECK(cudaDeviceGetAttribute(&major, 75 /* cudaDevAttrComputeCapabilityMajor */, 0));
	EXPECT(sms > 0 && major > 0, "%d SMs, compute capability %d", sms, major);

	/* A __device__ array and a __constant__ by symbol: initial values from the
	 * fatbin, then written and read back. */
	float table[4];
	size_t symbol_size = 0;
	CHECK(cudaGetSymbolSize(&symbol_size, host_dev_table));
	EXPECT(symbol_size == sizeof table, "dev_table is %zu bytes", symbol_size);
	CHECK(cudaMemcpyFromSymbol(table, host_dev_table, sizeof table, 0, D2H));
	EXPECT(table[0] == 1.0f && table[3] == 4.0f, "dev_table = {%g, .., %g}", table[0], table[3]);
	float scale = 0;
	CHECK(cudaMemcpyFromSymbol(&scale, &host_dev_scale, sizeof scale, 0, D2H));
	EXPECT(scale == 2.5f, "dev_scale = %g", scale);
	float nine = 9.0f;
	CHECK(cudaMemcpyToSymbol(host_dev_table, &nine, sizeof nine, 2 * sizeof(float), H2D));
	CHECK(cudaMemcpyFromSymbol(table, host_dev_table, sizeof table, 0, D2H));
	EXPECT(table[2] == 9.0f && table[1] == 2.0f, "dev_table = {%g, %g, %g, %g}", table[0], table[1],
	       table[2], table[3]);

	int blocks = 0;
	CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, &saxpy_stub, 256, 0));
	EXPECT(blocks > 0, "%d blocks of 256 threads per SM", blocks);

	/* fill_u32 over a range, then memset and check. */
	enum { FILL = 4099 };
	unsigned *dfill;
	static unsigned hfill[FILL];
	CHECK(cudaMalloc((void **)&dfill, sizeof hfill));
	CHECK(cudaMemset(dfill, 0xff, sizeof hfill));
	{
		unsigned *p = dfill, v = 0xabcd0123u;
		unsigned long long n = FILL - 3, ns = 1000;
		void *args[] = {&p, &v, &n, &ns};
		dim3 grid = {(FILL + 127) / 128, 1, 1}, block = {128, 1, 1};
		CHECK(cudaLaunchKernel(&fill_stub, grid, block, args, 0, NULL));
	}
	CHECK(cudaDeviceSynchronize());
	CHECK(cudaMemcpy(hfill, dfill, sizeof hfill, D2H));
	EXPECT(hfill[0] == 0xabcd0123u && hfill[FILL - 4] == 0xabcd0123u && hfill[FILL - 3] == 0xffffffffu,
	       "fill: %x %x %x", hfill[0], hfill[FILL - 4], hfill[FILL - 3]);
	CHECK(cudaFree(dfill));

	/* saxpy over sizes around block and warp boundaries and block shapes. */
	static const int sizes[] = {1, 31, 32, 33, 255, 256, 257, 1000, 4097, 65536 + 3, 1 << 20};
	static const unsigned blocksz[] = {32, 128, 256, 1024};
	enum { MAX = 1 << 20 };
	float *px, *py;
	CHECK(cudaMallocHost((void **)&px, MAX * sizeof(float)));
	CHECK(cudaMallocHost((void **)&py, MAX * sizeof(float)));
	cudaStream_t stream;
	cudaEvent_t start, stop;
	CHECK(cudaStreamCreate(&stream));
	CHECK(cudaEventCreate(&start));
	CHECK(cudaEventCreate(&stop));
	CHECK(cudaEventRecord(start, stream));
	unsigned launches = 0;
	for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
		for (size_t b = 0; b < sizeof blocksz / sizeof blocksz[0]; b++) {
			if (sizes[s] > (1 << 16) && b)
				continue; /* the big sizes once: this is about shapes, not bandwidth */
			sweep_saxpy(sizes[s], blocksz[b], stream, px, py);
			launches += 2;
		}
	CHECK(cudaEventRecord(stop, stream));
	CHECK(cudaEventSynchronize(stop));
	float ms = -1;
	CHECK(cudaEventElapsedTime(&ms, start, stop));
	EXPECT(ms >= 0, "elapsed %g ms", ms);
	CHECK(cudaEventDestroy(start));
	CHECK(cudaEventDestroy(stop));
	CHECK(cudaStreamDestroy(stream));
	CHECK(cudaFreeHost(px));
	CHECK(cudaFreeHost(py));
	CHECK(cudaGetLastError());
	CHECK(cudaDeviceSynchronize());
	p___cudaUnregisterFatBinary(module);
	free((void *)wrapper.data);
	printf("rtmatrix: runtime %d driver %d: OK (%u checks, %u saxpy launches)\n", runtime, driver, checks,
	       launches);
	return 0;
}
