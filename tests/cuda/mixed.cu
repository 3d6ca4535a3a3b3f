/* SPDX-License-Identifier: Apache-2.0 */
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
	auto ptrAttr = entry<PFN_cuPointerGetAttribute_v4000>("cuPointerGetAttribute");
	auto memcpyUnified = entry<PFN_cuMemcpy_v4000>("cuMemcpy");
	auto memcpyUnifiedAsync = entry<PFN_cuMemcpyAsync_v4000>("cuMemcpyAsync");
	auto hostAlloc = entry<PFN_cuMemHostAlloc_v2020>("cuMemHostAlloc");
	auto freeHost = entry<PFN_cuMemFreeHost_v2000>("cuMemFreeHost");
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

	// The runtime has made device 0's primary context current on this
	// thread, as NVIDIA's does: driver calls need no set-up of their own.
	CHECK(init(0));
	CUcontext ctx = nullptr, cur = nullptr;
	CHECK(retain(&ctx, 0));
	CHECK(ctxGetCurrent(&cur));
	if (cur != ctx) {
		printf("mixed: the runtime did not make the primary context current (%p, primary %p)\n",
		       (void *)cur, (void *)ctx);
		failures++;
		CHECK(ctxSetCurrent(ctx));
	}

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

	// One registry of allocations: each API knows the other's memory.
	unsigned type = 0;
	CUdeviceptr start = 0;
	size_t range = 0;
	CUcontext owner = nullptr;
	CHECK(ptrAttr(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)(rt_mem + 5)));
	CHECK(ptrAttr(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, (CUdeviceptr)(rt_mem + 5)));
	CHECK(ptrAttr(&range, CU_POINTER_ATTRIBUTE_RANGE_SIZE, (CUdeviceptr)(rt_mem + 5)));
	CHECK(ptrAttr(&owner, CU_POINTER_ATTRIBUTE_CONTEXT, (CUdeviceptr)rt_mem));
	if (type != CU_MEMORYTYPE_DEVICE || start != (CUdeviceptr)rt_mem || range != sizeof host || owner != ctx) {
		printf("mixed: cuPointerGetAttribute on cudaMalloc memory: type %u start %#llx size %zu\n", type,
		       (unsigned long long)start, range);
		failures++;
	}
	cudaPointerAttributes pa;
	CHECK(cudaPointerGetAttributes(&pa, (void *)(drv_mem + 8)));
	if (pa.type != cudaMemoryTypeDevice || pa.devicePointer != (void *)(drv_mem + 8)) {
		printf("mixed: cudaPointerGetAttributes on cuMemAlloc memory: type %d\n", (int)pa.type);
		failures++;
	}
	int *rt_pinned = nullptr;
	void *drv_pinned = nullptr;
	CHECK(cudaMallocHost(&rt_pinned, sizeof host));
	CHECK(hostAlloc(&drv_pinned, sizeof host, 0));
	CHECK(ptrAttr(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)rt_pinned));
	CHECK(cudaPointerGetAttributes(&pa, drv_pinned));
	if (type != CU_MEMORYTYPE_HOST || pa.type != cudaMemoryTypeHost || pa.hostPointer != drv_pinned) {
		printf("mixed: page-locked memory of one API unknown to the other (%u, %d)\n", type, (int)pa.type);
		failures++;
	}
	CHECK(cudaPointerGetAttributes(&pa, back));
	if (pa.type != cudaMemoryTypeUnregistered) {
		printf("mixed: pageable memory reported as type %d\n", (int)pa.type);
		failures++;
	}
	if (ptrAttr(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)back) != CUDA_ERROR_INVALID_VALUE) {
		printf("mixed: cuPointerGetAttribute knew pageable memory\n");
		failures++;
	}

	// Unified copies: cudaMemcpyDefault on the driver's memory and cuMemcpy
	// on the runtime's, every direction, through page-locked memory of the
	// other API too.
	for (int i = 0; i < n; i++)
		host[i] = i * 13 + 1;
	CHECK(cudaMemcpy((void *)drv_mem, host, sizeof host, cudaMemcpyDefault));
	CHECK(cudaMemcpy(rt_mem, (void *)drv_mem, sizeof host, cudaMemcpyDefault));
	CHECK(memcpyUnified((CUdeviceptr)drv_pinned, (CUdeviceptr)rt_mem, sizeof host));
	memset(back, 0, sizeof back);
	CHECK(cudaMemcpy(back, drv_pinned, sizeof back, cudaMemcpyDefault));
	if (memcmp(host, back, sizeof host)) {
		printf("mixed: cudaMemcpyDefault / cuMemcpy round trip reads back wrong\n");
		failures++;
	}
	CHECK(memsetD32(drv_mem, 0, n));
	CHECK(memcpyUnifiedAsync((CUdeviceptr)rt_mem, (CUdeviceptr)host, sizeof host, (CUstream)stream));
	CHECK(memcpyUnifiedAsync(drv_mem, (CUdeviceptr)rt_mem, sizeof host, (CUstream)stream));
	CHECK(cudaStreamSynchronize(stream));
	memset(rt_pinned, 0, sizeof host);
	CHECK(memcpyUnified((CUdeviceptr)rt_pinned, drv_mem, sizeof host));
	if (memcmp(host, rt_pinned, sizeof host)) {
		printf("mixed: cuMemcpy(Async) between the APIs' memory reads back wrong\n");
		failures++;
	}
	CHECK(cudaFreeHost(rt_pinned));
	CHECK(freeHost(drv_pinned));

	CHECK(cudaStreamDestroy(stream));
	CHECK(memFree(drv_mem));
	CHECK(cudaFree(rt_mem));
	CHECK(release(0));
	printf("RESULT workload=mixed verified=%s failures=%d\n", failures ? "no" : "yes", failures);
	return failures ? 1 : 0;
}
