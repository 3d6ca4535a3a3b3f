/* SPDX-License-Identifier: Apache-2.0 */
// managed.cu - managed memory touched alternately by the host and by kernels:
// cudaMallocManaged memory over several rounds (host writes some or all
// pages, a kernel increments, the host checks after each kind of
// synchronisation point and writes again), copies and memsets into managed
// memory, a kernel on a non-blocking stream, prefetches both ways and
// advice, __managed__ variables used on both sides, and the driver API's
// cuMemAllocManaged, cuMemPrefetchAsync and cuMemAdvise (through
// cudaGetDriverEntryPointByVersion, so both builds reach the same libcuda).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda.h>
#include <cuda_runtime.h>
#include <sys/mman.h>

#include "sample.h"

#define CU(call)                                                                                             \
	do {                                                                                                 \
		CUresult r_ = (call);                                                                        \
		if (r_ != CUDA_SUCCESS) {                                                                    \
			fprintf(stderr, "%s:%d: %s: CUresult %d\n", __FILE__, __LINE__, #call, (int)r_);     \
			exit(1);                                                                             \
		}                                                                                            \
	} while (0)

static int failures;
// Not sample.h's EXPECT: a condition with a printf-style message.
#undef EXPECT
#define EXPECT(cond, ...)                                                                                    \
	do {                                                                                                 \
		if (!(cond)) {                                                                               \
			fprintf(stderr, "managed: " __VA_ARGS__);                                            \
			fputc('\n', stderr);                                                                 \
			failures++;                                                                          \
		}                                                                                            \
	} while (0)

__managed__ int mg_counter = 5; // with an initializer: the device's value comes first
__managed__ int mg_table[3000]; // more than two pages

__global__ void mg_inc(int *p, int n, int by)
{
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
		p[i] += by;
}

__global__ void mg_add(int *var, int v)
{
	if (blockIdx.x == 0 && threadIdx.x == 0)
		*var += v;
}

static unsigned long long checksum;

static void check_all(const int *a, int n, const int *want, const char *when)
{
	int bad = 0;
	for (int i = 0; i < n; i++) {
		if (a[i] != want[i] && bad++ < 3)
			fprintf(stderr, "managed: %s: a[%d] = %d, want %d\n", when, i, a[i], want[i]);
		checksum = checksum * 31 + (unsigned)a[i];
	}
	if (bad)
		failures++;
}

// Host and kernels take turns on one allocation; each round ends with a
// different synchronisation point.
static void rounds(int *a, int n, int *want)
{
	cudaStream_t s;
	cudaEvent_t ev;
	CHECK(cudaStreamCreate(&s));
	CHECK(cudaEventCreate(&ev));
	int *copy = (int *)malloc(n * sizeof *copy);
	for (int r = 0; r < 8; r++) {
		// Odd rounds write every element, even ones only the second page,
		// so pages the host left alone must keep the kernels' values.
		int from = r % 2 ? 0 : 1024, to = r % 2 ? n : 2048;
		for (int i = from; i < to && i < n; i++)
			a[i] = want[i] = i * (r + 1);
		int by = r + 1;
		switch (r % 4) {
		case 0:
			mg_inc<<<4, 128>>>(a, n, by);
			CHECK(cudaGetLastError());
			CHECK(cudaDeviceSynchronize());
			break;
		case 1:
			mg_inc<<<4, 128, 0, s>>>(a, n, by);
			CHECK(cudaStreamSynchronize(s));
			break;
		case 2:
			mg_inc<<<4, 128, 0, s>>>(a, n, by);
			CHECK(cudaEventRecord(ev, s));
			CHECK(cudaEventSynchronize(ev));
			break;
		case 3:
			mg_inc<<<4, 128>>>(a, n, by);
			// A blocking copy out of managed memory is a synchronisation
			// point too; it must see the kernel's result.
			CHECK(cudaMemcpy(copy, a, n * sizeof *a, cudaMemcpyDeviceToHost));
			break;
		}
		for (int i = 0; i < n; i++)
			want[i] += by;
		char when[32];
		snprintf(when, sizeof when, "round %d", r);
		check_all(a, n, want, when);
		if (r % 4 == 3)
			check_all(copy, n, want, "round 3's copy");
	}
	free(copy);
	CHECK(cudaEventDestroy(ev));
	CHECK(cudaStreamDestroy(s));
}

static void copies_and_memset(int *a, int n, int *want)
{
	// A copy into managed memory reaches both the device and the host.
	int *src = (int *)malloc(n * sizeof *src);
	for (int i = 0; i < n; i++)
		src[i] = want[i] = 1000 + i;
	CHECK(cudaMemcpy(a, src, n * sizeof *a, cudaMemcpyHostToDevice));
	check_all(a, n, want, "after cudaMemcpy into managed memory");
	mg_inc<<<2, 64>>>(a, n, 1);
	CHECK(cudaDeviceSynchronize());
	for (int i = 0; i < n; i++)
		want[i]++;
	check_all(a, n, want, "kernel after the copy");
	// cudaMemcpyDefault between managed memory and a device buffer.
	int *dev;
	CHECK(cudaMalloc(&dev, n * sizeof *dev));
	CHECK(cudaMemcpy(dev, a, n * sizeof *a, cudaMemcpyDefault));
	CHECK(cudaMemset(a, 0, n * sizeof *a));
	CHECK(cudaDeviceSynchronize());
	memset(want, 0, n * sizeof *want);
	check_all(a, n, want, "after cudaMemset");
	CHECK(cudaMemcpy(a, dev, n * sizeof *a, cudaMemcpyDefault));
	for (int i = 0; i < n; i++)
		want[i] = 1001 + i;
	check_all(a, n, want, "copied back from device memory");
	CHECK(cudaFree(dev));
	// The host's writes must reach a kernel on a non-blocking stream.
	cudaStream_t nb;
	CHECK(cudaStreamCreateWithFlags(&nb, cudaStreamNonBlocking));
	for (int i = 0; i < n; i++)
		a[i] = want[i] = -i;
	mg_inc<<<3, 32, 0, nb>>>(a, n, 5);
	CHECK(cudaStreamSynchronize(nb));
	for (int i = 0; i < n; i++)
		want[i] += 5;
	check_all(a, n, want, "non-blocking stream");
	CHECK(cudaStreamDestroy(nb));
	free(src);
}

static void prefetch_and_advise(int *a, int n, int *want)
{
	int dev = 0;
	CHECK(cudaGetDevice(&dev));
	cudaMemLocation on_device = {cudaMemLocationTypeDevice, dev};
	cudaMemLocation on_host = {cudaMemLocationTypeHost, 0};
	CHECK(cudaMemAdvise(a, n * sizeof *a, cudaMemAdviseSetPreferredLocation, on_device));
	CHECK(cudaMemAdvise(a, n * sizeof *a, cudaMemAdviseSetAccessedBy, on_device));
	CHECK(cudaMemAdvise(a, n * sizeof *a, cudaMemAdviseSetReadMostly, on_device));
	CHECK(cudaMemAdvise(a, n * sizeof *a, cudaMemAdviseUnsetReadMostly, on_device));
	for (int i = 0; i < n; i++)
		a[i] = want[i] = 3 * i;
	CHECK(cudaMemPrefetchAsync(a, n * sizeof *a, on_device, 0, 0));
	mg_inc<<<4, 64>>>(a, n, 2);
	CHECK(cudaGetLastError());
	CHECK(cudaMemPrefetchAsync(a, n * sizeof *a, on_host, 0, 0));
	CHECK(cudaDeviceSynchronize());
	for (int i = 0; i < n; i++)
		want[i] += 2;
	check_all(a, n, want, "after prefetches");
	// Not managed memory: refused as CUDA refuses it.
	int local[4];
	EXPECT(cudaMemAdvise(local, sizeof local, cudaMemAdviseSetReadMostly, on_device) ==
		   cudaErrorInvalidValue,
	       "cudaMemAdvise accepted host memory");
	EXPECT(cudaMemPrefetchAsync(local, sizeof local, on_device, 0, 0) == cudaErrorInvalidValue,
	       "cudaMemPrefetchAsync accepted host memory");
	cudaGetLastError();
}

static void managed_variables()
{
	EXPECT(mg_counter == 5, "__managed__ initializer: %d, want 5", mg_counter);
	int want = mg_counter;
	for (int r = 0; r < 4; r++) {
		mg_counter += 10 * r; // host side
		want += 10 * r;
		mg_add<<<1, 1>>>(&mg_counter, r + 1);
		CHECK(cudaDeviceSynchronize());
		want += r + 1;
		EXPECT(mg_counter == want, "__managed__ round %d: %d, want %d", r, mg_counter, want);
	}
	checksum = checksum * 31 + (unsigned)mg_counter;
	static int twant[3000];
	for (int i = 0; i < 3000; i++)
		mg_table[i] = twant[i] = i;
	mg_inc<<<2, 128>>>(mg_table, 3000, 4);
	CHECK(cudaDeviceSynchronize());
	for (int i = 0; i < 3000; i++)
		twant[i] += 4;
	check_all(mg_table, 3000, twant, "__managed__ array");
}

typedef CUresult (*init_fn)(unsigned);
typedef CUresult (*retain_fn)(CUcontext *, CUdevice);
typedef CUresult (*set_current_fn)(CUcontext);
typedef CUresult (*alloc_managed_fn)(CUdeviceptr *, size_t, unsigned);
typedef CUresult (*free_fn)(CUdeviceptr);
typedef CUresult (*ctx_sync_fn)(CUcontext); // CUDA 13: cuCtxSynchronize_v2
typedef CUresult (*prefetch_fn)(CUdeviceptr, size_t, CUmemLocation, unsigned, CUstream);
typedef CUresult (*advise_fn)(CUdeviceptr, size_t, CUmem_advise, CUmemLocation);
typedef CUresult (*attr_fn)(void *, CUpointer_attribute, CUdeviceptr);

typedef CUresult (*prefetch_v1_fn)(CUdeviceptr, size_t, CUdevice, CUstream);

static void *entry_version(const char *name, unsigned version)
{
	void *fn = NULL;
	cudaDriverEntryPointQueryResult q;
	CHECK(cudaGetDriverEntryPointByVersion(name, &fn, version, cudaEnableDefault, &q));
	if (!fn || q != cudaDriverEntryPointSuccess) {
		fprintf(stderr, "managed: no driver entry point %s\n", name);
		exit(1);
	}
	return fn;
}

static void *entry(const char *name)
{
	return entry_version(name, 13000);
}

// The driver API's managed memory, in the same process as the runtime's.
static void driver_api()
{
	// Both runtimes make the primary context current for the driver API;
	// a program may always do it itself as well.
	CUcontext primary;
	CU(((init_fn)entry("cuInit"))(0));
	CU(((retain_fn)entry("cuDevicePrimaryCtxRetain"))(&primary, 0));
	CU(((set_current_fn)entry("cuCtxSetCurrent"))(primary));
	alloc_managed_fn alloc = (alloc_managed_fn)entry("cuMemAllocManaged");
	free_fn mfree = (free_fn)entry("cuMemFree");
	ctx_sync_fn sync = (ctx_sync_fn)entry("cuCtxSynchronize");
	prefetch_fn prefetch = (prefetch_fn)entry("cuMemPrefetchAsync");
	advise_fn advise = (advise_fn)entry("cuMemAdvise");
	attr_fn attr = (attr_fn)entry("cuPointerGetAttribute");
	// The CUDA 8 form, which names the host as CU_DEVICE_CPU.
	prefetch_v1_fn prefetch_v1 = (prefetch_v1_fn)entry_version("cuMemPrefetchAsync", 8000);
	const int n = 5000;
	CUdeviceptr d;
	CU(alloc(&d, n * sizeof(int), CU_MEM_ATTACH_GLOBAL));
	int *h = (int *)(uintptr_t)d;
	unsigned managed = 0;
	CU(attr(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, d));
	EXPECT(managed == 1, "cuPointerGetAttribute: IS_MANAGED %u", managed);
	CUmemLocation dev = {CU_MEM_LOCATION_TYPE_DEVICE, 0}, host = {CU_MEM_LOCATION_TYPE_HOST, 0};
	CU(advise(d, n * sizeof(int), CU_MEM_ADVISE_SET_PREFERRED_LOCATION, dev));
	static int want[5000];
	for (int r = 0; r < 3; r++) {
		for (int i = r * 1000; i < n; i++)
			h[i] = want[i] = i + r;
		if (r == 1)
			CU(prefetch(d, n * sizeof(int), dev, 0, 0));
		mg_inc<<<2, 256>>>(h, n, 7);
		CHECK(cudaGetLastError());
		if (r == 2)
			CU(prefetch(d, n * sizeof(int), host, 0, 0));
		if (r == 0)
			CU(prefetch_v1(d, n * sizeof(int), CU_DEVICE_CPU, 0));
		CU(sync(primary));
		for (int i = 0; i < n; i++)
			want[i] += 7;
		check_all(h, n, want, "driver API round");
	}
	// The allocation registry both API layers share knows managed memory:
	// its host pointer is itself, its memory type the device's, and copies
	// take it as device memory, so that they move what kernels left there
	// and not the guest's copy, which is stale until the next
	// synchronisation point: cuMemcpy, and cuMemcpy2D naming it as host
	// memory.
	typedef CUresult (*mem_alloc_fn)(CUdeviceptr *, size_t);
	typedef CUresult (*memcpy_fn)(CUdeviceptr, CUdeviceptr, size_t);
	typedef CUresult (*memcpy2d_fn)(const CUDA_MEMCPY2D *);
	memcpy_fn copy = (memcpy_fn)entry("cuMemcpy");
	void *host_ptr = NULL;
	unsigned type = 0;
	CU(attr(&host_ptr, CU_POINTER_ATTRIBUTE_HOST_POINTER, d + 8));
	EXPECT(host_ptr == (void *)(uintptr_t)(d + 8), "cuPointerGetAttribute: HOST_POINTER %p", host_ptr);
	CU(attr(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, d));
	EXPECT(type == CU_MEMORYTYPE_DEVICE, "cuPointerGetAttribute: MEMORY_TYPE %u", type);
	CUdeviceptr plain;
	CU(((mem_alloc_fn)entry("cuMemAlloc"))(&plain, n * sizeof(int)));
	static int back[5000];
	for (int i = 0; i < n; i++)
		h[i] = want[i] = 3 * i;
	mg_inc<<<2, 256>>>(h, n, 7);
	CHECK(cudaGetLastError());
	for (int i = 0; i < n; i++)
		want[i] += 7;
	CU(copy(plain, d, n * sizeof(int)));
	CU(copy((CUdeviceptr)(uintptr_t)back, plain, n * sizeof(int)));
	check_all(back, n, want, "cuMemcpy from managed memory after a kernel");
	mg_inc<<<2, 256>>>(h, n, 5);
	CHECK(cudaGetLastError());
	for (int i = 0; i < n; i++)
		want[i] += 5;
	CUDA_MEMCPY2D rows = {};
	rows.srcMemoryType = CU_MEMORYTYPE_HOST;
	rows.srcHost = h;
	rows.srcPitch = 100 * sizeof(int);
	rows.dstMemoryType = CU_MEMORYTYPE_DEVICE;
	rows.dstDevice = plain;
	rows.dstPitch = 100 * sizeof(int);
	rows.WidthInBytes = 100 * sizeof(int);
	rows.Height = n / 100;
	CU(((memcpy2d_fn)entry("cuMemcpy2D"))(&rows));
	CU(copy((CUdeviceptr)(uintptr_t)back, plain, n * sizeof(int)));
	check_all(back, n, want, "cuMemcpy2D from managed memory named as host memory, after a kernel");
	CU(mfree(plain));
	CU(mfree(d));
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "crash")) {
		// A fault outside managed memory must still end the program as
		// it would have (or reach ASan's handler), not be swallowed.
		int *a;
		CHECK(cudaMallocManaged(&a, 4096));
		a[0] = 1;
		volatile int *volatile nowhere = (int *)16;
		printf("writing through a bad pointer\n");
		fflush(stdout);
		*nowhere = 1;
		printf("survived a bad write\n");
		return 0;
	}
	if (argc > 1 && !strcmp(argv[1], "taken")) {
		// The simulated driver's managed addresses start at
		// 0x300000000000; with the first 64 GiB of them taken here, an
		// allocation must fail cleanly, naming the address. (NVIDIA's
		// static runtime also maps this module's __managed__ variables
		// now, elsewhere, and says so.)
		void *want = (void *)0x300000000000ull;
		void *got =
		    mmap(want, 64ull << 30, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (got != want) {
			fprintf(stderr, "managed: cannot take the address range\n");
			return 1;
		}
		int *a = (int *)1;
		cudaError_t e = cudaMallocManaged(&a, 4096);
		EXPECT(e == cudaErrorMemoryAllocation, "cudaMallocManaged over a taken address: %s",
		       cudaGetErrorName(e));
		// Still usable for everything else.
		int *d;
		CHECK(cudaMalloc(&d, 64));
		CHECK(cudaFree(d));
		printf("RESULT managed-taken verified=%s\n", failures ? "no" : "yes");
		return failures ? 1 : 0;
	}
	int managed_memory = -1, concurrent = -1;
	CHECK(cudaDeviceGetAttribute(&managed_memory, cudaDevAttrManagedMemory, 0));
	CHECK(cudaDeviceGetAttribute(&concurrent, cudaDevAttrConcurrentManagedAccess, 0));
	EXPECT(managed_memory == 1, "managedMemory = %d", managed_memory);
	EXPECT(concurrent == 0, "concurrentManagedAccess = %d", concurrent);

	const int n = 3000; // 12000 bytes: a partial last page
	int *a;
	CHECK(cudaMallocManaged(&a, n * sizeof *a));
	cudaPointerAttributes pa;
	CHECK(cudaPointerGetAttributes(&pa, a));
	EXPECT(pa.type == cudaMemoryTypeManaged, "cudaPointerGetAttributes: type %d", (int)pa.type);
	int *want = (int *)calloc(n, sizeof *want);
	check_all(a, n, want, "fresh allocation");
	rounds(a, n, want);
	copies_and_memset(a, n, want);
	prefetch_and_advise(a, n, want);
	CHECK(cudaFree(a));
	managed_variables();
	driver_api();
	free(want);
	printf("RESULT managed verified=%s checksum=%llx\n", failures ? "no" : "yes", checksum);
	return failures ? 1 : 0;
}
