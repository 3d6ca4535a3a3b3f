/* SPDX-License-Identifier: Apache-2.0 */
/* api_smallcalls.c - the small runtime calls programs make in passing,
 * answered for the one device a guest sees, as the driver frontend answers
 * its forms (frontend/driver/smallcalls.c): peer access (no peer exists),
 * the device by PCI bus id, peer copies (within the device), stream ids and
 * devices, copying stream attributes, the shared-memory bank configuration
 * (a no-op since Volta) and resetting persisting L2 lines (nothing
 * persists: the access policy window is not applied). */
#include "runtime.h"

#include <cuda.h>

static cudaError_t valid_device(int dev)
{
	struct xgpu_client *c;
	cudaError_t e = xgpu_rt_client(&c);
	if (e)
		return e;
	return dev == 0 ? cudaSuccess : xgpu_rt_ret(cudaErrorInvalidDevice);
}

XGPU_EXPORT cudaError_t cudaDeviceCanAccessPeer(int *canAccessPeer, int device, int peerDevice)
{
	if (!canAccessPeer)
		return xgpu_rt_ret(cudaErrorInvalidValue);
	cudaError_t e = valid_device(device);
	if (!e)
		e = valid_device(peerDevice);
	if (!e)
		*canAccessPeer = 0; /* a device is not its own peer */
	return e;
}

XGPU_EXPORT cudaError_t cudaDeviceEnablePeerAccess(int peerDevice, unsigned int flags)
{
	cudaError_t e = valid_device(peerDevice);
	if (e)
		return e;
	if (flags)
		return xgpu_rt_ret(cudaErrorInvalidValue);
	/* The peer would be the current device itself: NVIDIA's runtime
	 * answers cudaErrorPeerAccessUnsupported (seen on an H100). */
	return xgpu_rt_ret(cudaErrorPeerAccessUnsupported);
}

XGPU_EXPORT cudaError_t cudaDeviceDisablePeerAccess(int peerDevice)
{
	cudaError_t e = valid_device(peerDevice);
	return e ? e : xgpu_rt_ret(cudaErrorPeerAccessNotEnabled);
}

XGPU_EXPORT cudaError_t cudaDeviceGetP2PAttribute(int *value, enum cudaDeviceP2PAttr attr, int srcDevice,
						  int dstDevice)
{
	(void)attr;
	if (!value)
		return xgpu_rt_ret(cudaErrorInvalidValue);
	cudaError_t e = valid_device(srcDevice);
	if (!e)
		e = valid_device(dstDevice);
	/* The only pair is a device with itself, which CUDA refuses. */
	return e ? e : xgpu_rt_ret(cudaErrorInvalidDevice);
}

XGPU_EXPORT cudaError_t cudaDeviceGetByPCIBusId(int *device, const char *pciBusId)
{
	if (!device || !pciBusId)
		return xgpu_rt_ret(cudaErrorInvalidValue);
	struct xgpu_client *c;
	cudaError_t e = xgpu_rt_client(&c);
	if (e)
		return e;
	/* One parser, the driver frontend's; CUDA_ERROR_INVALID_VALUE and
	 * _INVALID_DEVICE have the runtime's numbers. */
	CUdevice dev = 0;
	CUresult r = cuInit(0);
	if (!r)
		r = cuDeviceGetByPCIBusId(&dev, pciBusId);
	if (!r)
		*device = dev;
	return xgpu_rt_ret((cudaError_t)r);
}

XGPU_EXPORT cudaError_t cudaMemcpyPeer(void *dst, int dstDevice, const void *src, int srcDevice, size_t count)
{
	cudaError_t e = valid_device(dstDevice);
	if (!e)
		e = valid_device(srcDevice);
	return e ? e : xgpu_rt_memcpy(dst, src, count, cudaMemcpyDeviceToDevice, NULL, false);
}

XGPU_EXPORT cudaError_t cudaMemcpyPeerAsync(void *dst, int dstDevice, const void *src, int srcDevice,
					    size_t count, cudaStream_t stream)
{
	cudaError_t e = valid_device(dstDevice);
	if (!e)
		e = valid_device(srcDevice);
	return e ? e : xgpu_rt_memcpy(dst, src, count, cudaMemcpyDeviceToDevice, stream, true);
}

/* The client and the wire handle of a stream of this process (proved by
 * asking the daemon its priority). */
static cudaError_t stream_checked(cudaStream_t s, struct xgpu_client **c, xgpu_handle_t *h)
{
	cudaError_t e = xgpu_rt_client(c);
	if (e)
		return e;
	*h = xgpu_rt_stream(s);
	return xgpu_rt_ret(xgpu_stream_get_priority(*c, *h, NULL, NULL, NULL));
}

XGPU_EXPORT cudaError_t cudaStreamGetId(cudaStream_t stream, unsigned long long *streamId)
{
	if (!streamId)
		return xgpu_rt_ret(cudaErrorInvalidValue);
	struct xgpu_client *c;
	xgpu_handle_t h;
	cudaError_t e = stream_checked(stream, &c, &h);
	if (!e)
		*streamId = h; /* unique among the process's live streams */
	return e;
}

XGPU_EXPORT cudaError_t cudaStreamGetId_ptsz(cudaStream_t stream, unsigned long long *streamId)
{
	return cudaStreamGetId(stream, streamId);
}

XGPU_EXPORT cudaError_t cudaStreamGetDevice(cudaStream_t stream, int *device)
{
	if (!device)
		return xgpu_rt_ret(cudaErrorInvalidValue);
	struct xgpu_client *c;
	xgpu_handle_t h;
	cudaError_t e = stream_checked(stream, &c, &h);
	if (!e)
		*device = 0;
	return e;
}

XGPU_EXPORT cudaError_t cudaStreamGetDevice_ptsz(cudaStream_t stream, int *device)
{
	return cudaStreamGetDevice(stream, device);
}

XGPU_EXPORT cudaError_t cudaStreamCopyAttributes(cudaStream_t dst, cudaStream_t src)
{
	struct xgpu_client *c;
	xgpu_handle_t hd, hs;
	cudaError_t e = stream_checked(dst, &c, &hd);
	if (!e)
		e = stream_checked(src, &c, &hs);
	/* Every attribute a stream has (the others are refused by get). */
	for (int attr = 0; attr < 32 && !e; attr++) {
		CUlaunchAttributeValue v;
		if (xgpu_stream_attr_get(c, hs, attr, &v) == cudaSuccess)
			e = xgpu_rt_ret(xgpu_stream_attr_set(c, hd, attr, &v));
	}
	return e;
}

XGPU_EXPORT cudaError_t cudaStreamCopyAttributes_ptsz(cudaStream_t dst, cudaStream_t src)
{
	return cudaStreamCopyAttributes(dst, src);
}

XGPU_EXPORT cudaError_t cudaCtxResetPersistingL2Cache(void)
{
	struct xgpu_client *c;
	return xgpu_rt_client(&c);
}

XGPU_EXPORT cudaError_t cudaDeviceGetSharedMemConfig(enum cudaSharedMemConfig *pConfig)
{
	if (!pConfig)
		return xgpu_rt_ret(cudaErrorInvalidValue);
	struct xgpu_client *c;
	cudaError_t e = xgpu_rt_client(&c);
	if (!e)
		*pConfig = cudaSharedMemBankSizeFourByte;
	return e;
}

XGPU_EXPORT cudaError_t cudaDeviceSetSharedMemConfig(enum cudaSharedMemConfig config)
{
	struct xgpu_client *c;
	cudaError_t e = xgpu_rt_client(&c);
	if (e)
		return e;
	return (unsigned)config <= cudaSharedMemBankSizeEightByte ? cudaSuccess
								  : xgpu_rt_ret(cudaErrorInvalidValue);
}

XGPU_EXPORT cudaError_t cudaFuncSetSharedMemConfig(const void *func, enum cudaSharedMemConfig config)
{
	struct xgpu_client *c;
	cudaError_t e = xgpu_rt_client(&c);
	if (e)
		return e;
	if (!func)
		return xgpu_rt_ret(cudaErrorInvalidDeviceFunction);
	return (unsigned)config <= cudaSharedMemBankSizeEightByte ? cudaSuccess
								  : xgpu_rt_ret(cudaErrorInvalidValue);
}
