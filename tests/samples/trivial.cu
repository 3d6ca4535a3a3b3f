/* SPDX-License-Identifier: Apache-2.0 */
// trivial.cu - the small calls programs make in passing: profiler markers,
// stream priorities (the device's range, clamped requests), stream
// attributes (remembered; bad values refused), and
// cudaHostGetDevicePointer, which xgpu refuses (pinned memory lives in the
// guest, and the device says it cannot map host memory).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda_profiler_api.h>
#include <cuda_runtime.h>

#include "sample.h"

static bool ok = true;
static int checks;

__global__ void tr_fill(int *p, int v)
{
	p[threadIdx.x] = v;
}

int main()
{
	EXPECT(cudaProfilerStart(), cudaSuccess);

	int least = 99, greatest = 99;
	EXPECT(cudaDeviceGetStreamPriorityRange(&least, &greatest), cudaSuccess);
	TRUE(greatest <= least && least == 0);
	EXPECT(cudaDeviceGetStreamPriorityRange(NULL, &greatest), cudaSuccess);

	// Requests outside the range are clamped into it.
	cudaStream_t hi, lo, plain;
	int prio = 99;
	EXPECT(cudaStreamCreateWithPriority(&hi, cudaStreamNonBlocking, greatest - 100), cudaSuccess);
	EXPECT(cudaStreamCreateWithPriority(&lo, cudaStreamDefault, least + 100), cudaSuccess);
	EXPECT(cudaStreamCreate(&plain), cudaSuccess);
	EXPECT(cudaStreamGetPriority(hi, &prio), cudaSuccess);
	TRUE(prio == greatest);
	EXPECT(cudaStreamGetPriority(lo, &prio), cudaSuccess);
	TRUE(prio == least);
	EXPECT(cudaStreamGetPriority(0, &prio), cudaSuccess);
	TRUE(prio == 0);
	EXPECT(cudaStreamGetPriority(hi, NULL), cudaErrorInvalidValue);

	// Attributes: remembered, read back, bad values refused.
	cudaStreamAttrValue v, got;
	memset(&v, 0, sizeof v);
	memset(&got, 0, sizeof got);
	EXPECT(cudaStreamGetAttribute(plain, cudaStreamAttributeSynchronizationPolicy, &got), cudaSuccess);
	TRUE(got.syncPolicy == cudaSyncPolicyAuto);
	v.syncPolicy = cudaSyncPolicyBlockingSync;
	EXPECT(cudaStreamSetAttribute(plain, cudaStreamAttributeSynchronizationPolicy, &v), cudaSuccess);
	EXPECT(cudaStreamGetAttribute(plain, cudaStreamAttributeSynchronizationPolicy, &got), cudaSuccess);
	TRUE(got.syncPolicy == cudaSyncPolicyBlockingSync);
	v.syncPolicy = (cudaSynchronizationPolicy)9;
	EXPECT(cudaStreamSetAttribute(plain, cudaStreamAttributeSynchronizationPolicy, &v),
	       cudaErrorInvalidValue);
	EXPECT(cudaStreamGetAttribute(plain, cudaStreamAttributeSynchronizationPolicy, &got), cudaSuccess);
	TRUE(got.syncPolicy == cudaSyncPolicyBlockingSync);

	int *d;
	EXPECT(cudaMalloc(&d, 1 << 20), cudaSuccess);
	memset(&v, 0, sizeof v);
	v.accessPolicyWindow.base_ptr = d;
	v.accessPolicyWindow.num_bytes = 1 << 20;
	v.accessPolicyWindow.hitRatio = 0.6f;
	v.accessPolicyWindow.hitProp = cudaAccessPropertyPersisting;
	v.accessPolicyWindow.missProp = cudaAccessPropertyStreaming;
	EXPECT(cudaStreamSetAttribute(plain, cudaStreamAttributeAccessPolicyWindow, &v), cudaSuccess);
	EXPECT(cudaStreamGetAttribute(plain, cudaStreamAttributeAccessPolicyWindow, &got), cudaSuccess);
	TRUE(got.accessPolicyWindow.base_ptr == d && got.accessPolicyWindow.num_bytes == (1 << 20) &&
	     got.accessPolicyWindow.hitRatio == 0.6f);
	v.accessPolicyWindow.hitRatio = 2.0f;
	EXPECT(cudaStreamSetAttribute(plain, cudaStreamAttributeAccessPolicyWindow, &v),
	       cudaErrorInvalidValue);

	v.priority = greatest;
	EXPECT(cudaStreamSetAttribute(plain, cudaStreamAttributePriority, &v), cudaSuccess);
	EXPECT(cudaStreamGetAttribute(plain, cudaStreamAttributePriority, &got), cudaSuccess);
	TRUE(got.priority == greatest);
	EXPECT(cudaStreamGetPriority(plain, &prio), cudaSuccess);
	TRUE(prio == greatest);
	// Not a stream attribute.
	EXPECT(cudaStreamSetAttribute(plain, (cudaStreamAttrID)cudaLaunchAttributeCooperative, &v),
	       cudaErrorInvalidValue);

	// The streams still run work, in their order.
	int h[32];
	tr_fill<<<1, 32, 0, hi>>>(d, 3);
	tr_fill<<<1, 32, 0, plain>>>(d + 32, 4);
	EXPECT(cudaDeviceSynchronize(), cudaSuccess);
	EXPECT(cudaMemcpy(h, d + 32, sizeof h, cudaMemcpyDeviceToHost), cudaSuccess);
	int sum = 0;
	for (int i = 0; i < 32; i++)
		sum += h[i];
	TRUE(sum == 4 * 32);

	EXPECT(cudaStreamDestroy(lo), cudaSuccess);

	// Mapped host memory: the device cannot address the guest's pages.
	int can_map = 1;
	EXPECT(cudaDeviceGetAttribute(&can_map, cudaDevAttrCanMapHostMemory, 0), cudaSuccess);
	TRUE(can_map == 0);
	void *host, *dev = NULL;
	EXPECT(cudaMallocHost(&host, 4096), cudaSuccess);
	EXPECT(cudaHostGetDevicePointer(&dev, host, 0), cudaErrorInvalidValue);
	EXPECT(cudaFreeHost(host), cudaSuccess);

	EXPECT(cudaStreamDestroy(hi), cudaSuccess);
	EXPECT(cudaStreamDestroy(plain), cudaSuccess);
	EXPECT(cudaFree(d), cudaSuccess);
	EXPECT(cudaProfilerStop(), cudaSuccess);
	printf("RESULT trivial verified=%s checksum=%d\n", ok ? "yes" : "no", checks);
	return ok ? 0 : 1;
}
