// mixed.cu - a -cudart shared program that also calls the driver API, the
// way PyTorch does (cudaGetDriverEntryPointByVersion): both APIs must share
// one channel and one handle space, so memory and streams from either work
// with the other. Its RESULT line says verified=yes when every check passes.
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cstdio>
#include <cstring>

static int failures;

#define CHECK(call)                                                                                          \
	do {                                                                                                 \
		int r_ = (int)(call);                                                                        \
		if (r_) {                                                                                    \
			printf("mixed: line %d: %s returned %d\n", __LINE__, #call, r_);                     \
			failures++;                                                                          \
		}                                                                                            \
	} while (0)

template <typename T> static T entry(const char *name)
{
	void *fn = nullptr;
	cudaDriverEntryPointQueryResult st = cudaDriverEntryPointSymbolNotFound;
	CHECK(cudaGetDriverEntryPointByVersion(name, &fn, 13000, cudaEnableDefault, &st));
	if (st != cudaDriverEntryPointSuccess || !fn) {
		printf("mixed: no driver entry point %s (status %d)\n", name, (int)st);
		failures++;
	}
	return (T)fn;
}

int main()
{
	// The runtime initialises first, as in a real program.
	CHECK(cudaFree(nullptr));
	auto memAlloc = entry<PFN_cuMemAlloc_v3020>("cuMemAlloc");
	auto memFree = entry<PFN_cuMemFree_v3020>("cuMemFree");
	auto htod = entry<PFN_cuMemcpyHtoD_v3020>("cuMemcpyHtoD");
	auto dtoh = entry<PFN_cuMemcpyDtoH_v3020>("cuMemcpyDtoH");
	auto htodAsync = entry<PFN_cuMemcpyHtoDAsync_v3020>("cuMemcpyHtoDAsync");
	auto memsetD32 = entry<PFN_cuMemsetD32_v3020>("cuMemsetD32");
	auto ctxGetCurrent = entry<PFN_cuCtxGetCurrent_v4000>("cuCtxGetCurrent");
	auto ctxSetCurrent = entry<PFN_cuCtxSetCurrent_v4000>("cuCtxSetCurrent");
	auto retain = entry<PFN_cuDevicePrimaryCtxRetain_v7000>("cuDevicePrimaryCtxRetain");
	auto release = entry<PFN_cuDevicePrimaryCtxRelease_v11000>("cuDevicePrimaryCtxRelease");
	auto init = entry<PFN_cuInit_v2000>("cuInit");
	void *missing = &missing;
	cudaDriverEntryPointQueryResult st;
	CHECK(cudaGetDriverEntryPointByVersion("cuNoSuchCall", &missing, 13000, cudaEnableDefault, &st));
	if (missing || st != cudaDriverEntryPointSymbolNotFound) {
		printf("mixed: an unknown name was answered\n");
		failures++;
	}
	if (failures) {
		printf("RESULT workload=mixed verified=no failures=%d\n", failures);
		return 1;
	}

	// NVIDIA's runtime makes the primary context current; a program mixing
	// the APIs does the same before its driver calls.
	CHECK(init(0));
	CUcontext ctx = nullptr, cur = nullptr;
	CHECK(retain(&ctx, 0));
	CHECK(ctxGetCurrent(&cur));
	if (!cur)
		CHECK(ctxSetCurrent(ctx));

	const int n = 4096;
	static int host[n], back[n];
	for (int i = 0; i < n; i++)
		host[i] = i * 7;

	// Runtime memory, written by the driver, read by the runtime.
	int *rt_mem = nullptr;
	CHECK(cudaMalloc(&rt_mem, sizeof host));
	CHECK(htod((CUdeviceptr)rt_mem, host, sizeof host));
	CHECK(cudaMemcpy(back, rt_mem, sizeof back, cudaMemcpyDeviceToHost));
	if (memcmp(host, back, sizeof host)) {
		printf("mixed: runtime memory written through the driver reads back wrong\n");
		failures++;
	}

	// Driver memory, written by the runtime on a runtime stream, filled by
	// the driver, read by both.
	CUdeviceptr drv_mem = 0;
	CHECK(memAlloc(&drv_mem, sizeof host));
	cudaStream_t stream;
	CHECK(cudaStreamCreate(&stream));
	CHECK(cudaMemcpyAsync((void *)drv_mem, host, sizeof host, cudaMemcpyHostToDevice, stream));
	CHECK(cudaStreamSynchronize(stream));
	memset(back, 0, sizeof back);
	CHECK(dtoh(back, drv_mem, sizeof back));
	if (memcmp(host, back, sizeof host)) {
		printf("mixed: driver memory written through the runtime reads back wrong\n");
		failures++;
	}
	CHECK(htodAsync(drv_mem, host, sizeof host, (CUstream)stream));
	CHECK(cudaStreamSynchronize(stream));
	CHECK(memsetD32(drv_mem, 0x5a5a0101u, n / 2));
	CHECK(cudaMemcpy(back, (void *)drv_mem, sizeof back, cudaMemcpyDeviceToHost));
	int bad = 0;
	for (int i = 0; i < n; i++)
		bad += back[i] != (i < n / 2 ? 0x5a5a0101 : host[i]);
	if (bad) {
		printf("mixed: %d words wrong after the driver's memset\n", bad);
		failures++;
	}

	CHECK(cudaStreamDestroy(stream));
	CHECK(memFree(drv_mem));
	CHECK(cudaFree(rt_mem));
	CHECK(release(0));
	printf("RESULT workload=mixed verified=%s failures=%d\n", failures ? "no" : "yes", failures);
	return failures ? 1 : 0;
}
