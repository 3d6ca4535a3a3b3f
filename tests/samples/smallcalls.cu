/* SPDX-License-Identifier: Apache-2.0 */
// smallcalls.cu - more of the small calls programs make in passing, for the
// one device a guest sees: peer access queries (no peer), the device by PCI
// bus id, peer copies within the device, stream ids, devices and attribute
// copies, the shared-memory bank configuration and the persisting-L2 reset;
// a kernel's name and parameter layout; the driver API's forms through
// cudaGetDriverEntryPoint.
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cstdio>
#include <cstring>
#include <cuda_runtime.h>

#include "sample.h"

static bool ok = true;
static int checks;

__global__ void sc_fill(int *p, int v)
{
	p[threadIdx.x] = v + threadIdx.x;
}

template <typename T> static T entry(const char *name)
{
	void *fn = nullptr;
	cudaDriverEntryPointQueryResult st = cudaDriverEntryPointSymbolNotFound;
	EXPECT(cudaGetDriverEntryPointByVersion(name, &fn, 13000, cudaEnableDefault, &st), cudaSuccess);
	TRUE(st == cudaDriverEntryPointSuccess && fn);
	return (T)fn;
}

int main()
{
	// Peers: the device cannot access itself as a peer; others do not exist.
	int can = 7;
	EXPECT(cudaDeviceCanAccessPeer(&can, 0, 0), cudaSuccess);
	TRUE(can == 0);
	EXPECT(cudaDeviceCanAccessPeer(&can, 0, 1), cudaErrorInvalidDevice);
	EXPECT(cudaDeviceEnablePeerAccess(0, 0), cudaErrorPeerAccessUnsupported);
	EXPECT(cudaDeviceEnablePeerAccess(1, 0), cudaErrorInvalidDevice);
	EXPECT(cudaDeviceDisablePeerAccess(0), cudaErrorPeerAccessNotEnabled);
	int value = 0;
	EXPECT(cudaDeviceGetP2PAttribute(&value, cudaDevP2PAttrAccessSupported, 0, 0),
	       cudaErrorInvalidDevice);

	// The device by its PCI bus id, in CUDA's forms.
	char busid[64], other[64];
	EXPECT(cudaDeviceGetPCIBusId(busid, sizeof busid, 0), cudaSuccess);
	int dev = 5;
	EXPECT(cudaDeviceGetByPCIBusId(&dev, busid), cudaSuccess);
	TRUE(dev == 0);
	unsigned dom = 0, bus = 0, slot = 0;
	TRUE(sscanf(busid, "%x:%x:%x.0", &dom, &bus, &slot) == 3);
	snprintf(other, sizeof other, "%02x:%02x.0", bus, slot); // bus:device.function, domain 0
	dev = 5;
	EXPECT(cudaDeviceGetByPCIBusId(&dev, other), dom == 0 ? cudaSuccess : cudaErrorInvalidDevice);
	snprintf(other, sizeof other, "%04X:%02X:%02X", dom, bus, slot); // upper case, no function
	dev = 5;
	EXPECT(cudaDeviceGetByPCIBusId(&dev, other), cudaSuccess);
	TRUE(dev == 0);
	snprintf(other, sizeof other, "%04x:%02x:%02x.0", dom, (bus + 1) & 0xff, slot);
	EXPECT(cudaDeviceGetByPCIBusId(&dev, other), cudaErrorInvalidDevice);
	EXPECT(cudaDeviceGetByPCIBusId(&dev, "0000:zz:00.0"), cudaErrorInvalidValue);
	EXPECT(cudaDeviceGetByPCIBusId(&dev, "0000:01:00.0:9"), cudaErrorInvalidValue);
	EXPECT(cudaDeviceGetByPCIBusId(&dev, ""), cudaErrorInvalidValue);
	EXPECT(cudaDeviceGetByPCIBusId(NULL, busid), cudaErrorInvalidValue);

	// Peer copies within the device.
	int *a, *b, h[32];
	EXPECT(cudaMalloc(&a, sizeof h), cudaSuccess);
	EXPECT(cudaMalloc(&b, sizeof h), cudaSuccess);
	sc_fill<<<1, 32>>>(a, 40);
	EXPECT(cudaMemcpyPeer(b, 0, a, 0, sizeof h), cudaSuccess);
	EXPECT(cudaMemcpy(h, b, sizeof h, cudaMemcpyDeviceToHost), cudaSuccess);
	long long checksum = 0;
	for (int i = 0; i < 32; i++) {
		TRUE(h[i] == 40 + i);
		checksum += h[i];
	}
	EXPECT(cudaMemcpyPeer(b, 1, a, 0, sizeof h), cudaErrorInvalidDevice);

	// Streams: ids, devices, attribute copies.
	cudaStream_t s1, s2;
	EXPECT(cudaStreamCreate(&s1), cudaSuccess);
	EXPECT(cudaStreamCreate(&s2), cudaSuccess);
	unsigned long long id1 = 0, id2 = 0;
	EXPECT(cudaStreamGetId(s1, &id1), cudaSuccess);
	EXPECT(cudaStreamGetId(s2, &id2), cudaSuccess);
	TRUE(id1 != id2);
	EXPECT(cudaStreamGetId(s1, NULL), cudaErrorInvalidValue);
	dev = 5;
	EXPECT(cudaStreamGetDevice(s2, &dev), cudaSuccess);
	TRUE(dev == 0);
	cudaStreamAttrValue v, got;
	memset(&v, 0, sizeof v);
	memset(&got, 0, sizeof got);
	v.syncPolicy = cudaSyncPolicySpin;
	EXPECT(cudaStreamSetAttribute(s1, cudaStreamAttributeSynchronizationPolicy, &v), cudaSuccess);
	EXPECT(cudaStreamCopyAttributes(s2, s1), cudaSuccess);
	EXPECT(cudaStreamGetAttribute(s2, cudaStreamAttributeSynchronizationPolicy, &got), cudaSuccess);
	TRUE(got.syncPolicy == cudaSyncPolicySpin);
	sc_fill<<<1, 32, 0, s1>>>(a, 50);
	EXPECT(cudaMemcpyPeerAsync(b, 0, a, 0, sizeof h, s1), cudaSuccess);
	EXPECT(cudaStreamSynchronize(s1), cudaSuccess);
	EXPECT(cudaMemcpy(h, b, sizeof h, cudaMemcpyDeviceToHost), cudaSuccess);
	for (int i = 0; i < 32; i++) {
		TRUE(h[i] == 50 + i);
		checksum += h[i];
	}

	// Configuration without effect.
	EXPECT(cudaCtxResetPersistingL2Cache(), cudaSuccess);

	// A kernel's name and parameters, and its driver handle.
	const char *name = NULL;
	EXPECT(cudaFuncGetName(&name, (const void *)sc_fill), cudaSuccess);
	TRUE(name && strcmp(name, "_Z7sc_fillPii") == 0);
	// Not a kernel: refused (NVIDIA's runtime answers cudaErrorInvalidResourceHandle,
	// ours cudaErrorInvalidDeviceFunction).
	TRUE(cudaFuncGetName(&name, (const void *)&checks) != cudaSuccess);
	cudaGetLastError();
	size_t offset = 99, size = 99;
	EXPECT(cudaFuncGetParamInfo((const void *)sc_fill, 1, &offset, &size), cudaSuccess);
	TRUE(offset == 8 && size == 4);
	EXPECT(cudaFuncGetParamInfo((const void *)sc_fill, 2, &offset, &size), cudaErrorInvalidValue);

	// The driver's forms.
	auto init = entry<PFN_cuInit_v2000>("cuInit");
	auto retain = entry<PFN_cuDevicePrimaryCtxRetain_v7000>("cuDevicePrimaryCtxRetain");
	auto ctxGetCurrent = entry<PFN_cuCtxGetCurrent_v4000>("cuCtxGetCurrent");
	auto ctxSetCurrent = entry<PFN_cuCtxSetCurrent_v4000>("cuCtxSetCurrent");
	auto canAccessPeer = entry<PFN_cuDeviceCanAccessPeer_v4000>("cuDeviceCanAccessPeer");
	auto enablePeer = entry<PFN_cuCtxEnablePeerAccess_v4000>("cuCtxEnablePeerAccess");
	auto disablePeer = entry<PFN_cuCtxDisablePeerAccess_v4000>("cuCtxDisablePeerAccess");
	auto getBusId = entry<PFN_cuDeviceGetPCIBusId_v4010>("cuDeviceGetPCIBusId");
	auto byBusId = entry<PFN_cuDeviceGetByPCIBusId_v4010>("cuDeviceGetByPCIBusId");
	auto memcpyPeer = entry<PFN_cuMemcpyPeer_v4000>("cuMemcpyPeer");
	auto streamGetId = entry<PFN_cuStreamGetId_v12000>("cuStreamGetId");
	auto streamGetDevice = entry<PFN_cuStreamGetDevice_v12080>("cuStreamGetDevice");
	auto resetL2 = entry<PFN_cuCtxResetPersistingL2Cache_v11000>("cuCtxResetPersistingL2Cache");
	if (ok) {
		EXPECT(init(0), CUDA_SUCCESS);
		CUcontext ctx = nullptr, cur = nullptr;
		EXPECT(retain(&ctx, 0), CUDA_SUCCESS);
		EXPECT(ctxGetCurrent(&cur), CUDA_SUCCESS);
		if (!cur)
			EXPECT(ctxSetCurrent(ctx), CUDA_SUCCESS);
		EXPECT(canAccessPeer(&can, 0, 0), CUDA_SUCCESS);
		TRUE(can == 0);
		EXPECT(enablePeer(ctx, 0), CUDA_ERROR_PEER_ACCESS_UNSUPPORTED);
		EXPECT(disablePeer(ctx), CUDA_ERROR_PEER_ACCESS_NOT_ENABLED);
		char drv_busid[64];
		EXPECT(getBusId(drv_busid, sizeof drv_busid, 0), CUDA_SUCCESS);
		TRUE(strcasecmp(drv_busid, busid) == 0);
		CUdevice d = 5;
		EXPECT(byBusId(&d, drv_busid), CUDA_SUCCESS);
		TRUE(d == 0);
		sc_fill<<<1, 32>>>(a, 60);
		EXPECT(memcpyPeer((CUdeviceptr)b, ctx, (CUdeviceptr)a, ctx, sizeof h), CUDA_SUCCESS);
		EXPECT(cudaMemcpy(h, b, sizeof h, cudaMemcpyDeviceToHost), cudaSuccess);
		for (int i = 0; i < 32; i++) {
			TRUE(h[i] == 60 + i);
			checksum += h[i];
		}
		unsigned long long drv_id = 0;
		EXPECT(streamGetId((CUstream)s1, &drv_id), CUDA_SUCCESS);
		TRUE(drv_id == id1);
		EXPECT(streamGetDevice((CUstream)s2, &d), CUDA_SUCCESS);
		TRUE(d == 0);
		EXPECT(resetL2(), CUDA_SUCCESS);
	}

	EXPECT(cudaStreamDestroy(s1), cudaSuccess);
	EXPECT(cudaStreamDestroy(s2), cudaSuccess);
	EXPECT(cudaFree(a), cudaSuccess);
	EXPECT(cudaFree(b), cudaSuccess);
	printf("RESULT smallcalls verified=%s checksum=%lld checks=%d\n", ok ? "yes" : "no", checksum,
	       checks);
	return ok ? 0 : 1;
}
