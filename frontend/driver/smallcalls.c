/* SPDX-License-Identifier: Apache-2.0 */
/* smallcalls.c - the small driver calls programs make in passing, answered
 * for the one device a guest sees: peer access (no peer exists), PCI bus
 * ids, peer copies (within the device), stream ids and devices, copying
 * stream attributes, the shared-memory bank configuration (a no-op since
 * Volta) and resetting persisting L2 lines (the access policy window is not
 * applied, so nothing persists). The runtime frontend answers its forms the
 * same way (frontend/runtime/api_smallcalls.c). */
#include "driver.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define XGPU_ALIAS(name) __attribute__((alias(#name)))

static CUresult valid_device(CUdevice dev)
{
	struct xgpu_client *c;
	CUresult r = xgpu_drv_client(&c);
	if (r)
		return r;
	return dev == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

CUresult cuDeviceCanAccessPeer(int *canAccessPeer, CUdevice dev, CUdevice peerDev)
{
	if (!canAccessPeer)
		return CUDA_ERROR_INVALID_VALUE;
	CUresult r = valid_device(dev);
	if (!r)
		r = valid_device(peerDev);
	if (!r)
		*canAccessPeer = 0; /* a device is not its own peer */
	return r;
}

CUresult cuDeviceGetP2PAttribute(int *value, CUdevice_P2PAttribute attrib, CUdevice srcDevice,
				 CUdevice dstDevice)
{
	(void)attrib;
	if (!value)
		return CUDA_ERROR_INVALID_VALUE;
	CUresult r = valid_device(srcDevice);
	if (!r)
		r = valid_device(dstDevice);
	/* The only pair is a device with itself, which CUDA refuses. */
	return r ? r : CUDA_ERROR_INVALID_DEVICE;
}

CUresult cuCtxEnablePeerAccess(CUcontext peerContext, unsigned int flags)
{
	struct xgpu_client *c;
	CUresult r = xgpu_drv_client_ctx(&c);
	if (r)
		return r;
	if (flags)
		return CUDA_ERROR_INVALID_VALUE;
	if (!xgpu_drv_ctx_valid(peerContext))
		return CUDA_ERROR_INVALID_CONTEXT;
	/* Every context is on the one device, which is not its own peer:
	 * PEER_ACCESS_UNSUPPORTED, which NVIDIA's runtime hands on unchanged
	 * for cudaDeviceEnablePeerAccess(own device) on an H100. */
	return CUDA_ERROR_PEER_ACCESS_UNSUPPORTED;
}

CUresult cuCtxDisablePeerAccess(CUcontext peerContext)
{
	struct xgpu_client *c;
	CUresult r = xgpu_drv_client_ctx(&c);
	if (r)
		return r;
	if (!xgpu_drv_ctx_valid(peerContext))
		return CUDA_ERROR_INVALID_CONTEXT;
	return CUDA_ERROR_PEER_ACCESS_NOT_ENABLED;
}

CUresult cuDeviceGetPCIBusId(char *pciBusId, int len, CUdevice dev)
{
	if (!pciBusId || len <= 0)
		return CUDA_ERROR_INVALID_VALUE;
	int dom = 0, bus = 0, slot = 0;
	CUresult r = cuDeviceGetAttribute(&dom, CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, dev);
	if (!r)
		r = cuDeviceGetAttribute(&bus, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, dev);
	if (!r)
		r = cuDeviceGetAttribute(&slot, CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, dev);
	if (!r)
		snprintf(pciBusId, (size_t)len, "%08x:%02x:%02x.0", (unsigned)dom, (unsigned)bus,
			 (unsigned)slot);
	return r;
}

/* One hexadecimal field of a PCI bus id, up to the separator sep ('\0':
 * the end); false if empty, not hexadecimal or too large. */
static bool hex_field(const char **s, char sep, unsigned long max, unsigned long *out)
{
	const char *p = *s;
	unsigned long v = 0;
	int digits = 0;
	for (; *p && *p != sep; p++, digits++) {
		int d = *p >= '0' && *p <= '9'   ? *p - '0'
			: *p >= 'a' && *p <= 'f' ? *p - 'a' + 10
			: *p >= 'A' && *p <= 'F' ? *p - 'A' + 10
						 : -1;
		if (d < 0 || digits >= 8)
			return false;
		v = v * 16 + (unsigned long)d;
	}
	if (!digits || v > max || *p != sep)
		return false;
	*s = sep ? p + 1 : p;
	*out = v;
	return true;
}

CUresult cuDeviceGetByPCIBusId(CUdevice *dev, const char *pciBusId)
{
	struct xgpu_client *c;
	if (!dev || !pciBusId)
		return CUDA_ERROR_INVALID_VALUE;
	CUresult r = xgpu_drv_client(&c);
	if (r)
		return r;
	/* CUDA's forms: domain:bus:device.function, domain:bus:device and
	 * bus:device.function, in hexadecimal. */
	int colons = 0;
	bool dot = strchr(pciBusId, '.') != NULL;
	for (const char *p = pciBusId; *p; p++)
		colons += *p == ':';
	unsigned long dom = 0, bus, slot, fn = 0;
	const char *p = pciBusId;
	bool ok;
	if (colons == 2)
		ok = hex_field(&p, ':', 0xffffffffu, &dom) && hex_field(&p, ':', 0xff, &bus) &&
		     (dot ? hex_field(&p, '.', 0x1f, &slot) && hex_field(&p, '\0', 7, &fn)
			  : hex_field(&p, '\0', 0x1f, &slot));
	else if (colons == 1 && dot)
		ok = hex_field(&p, ':', 0xff, &bus) && hex_field(&p, '.', 0x1f, &slot) &&
		     hex_field(&p, '\0', 7, &fn);
	else
		ok = false;
	if (!ok)
		return CUDA_ERROR_INVALID_VALUE;
	int want_dom = 0, want_bus = 0, want_slot = 0;
	r = cuDeviceGetAttribute(&want_dom, CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, 0);
	if (!r)
		r = cuDeviceGetAttribute(&want_bus, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, 0);
	if (!r)
		r = cuDeviceGetAttribute(&want_slot, CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, 0);
	if (r)
		return r;
	if (dom != (unsigned)want_dom || bus != (unsigned)want_bus || slot != (unsigned)want_slot || fn)
		return CUDA_ERROR_INVALID_DEVICE;
	*dev = 0;
	return CUDA_SUCCESS;
}

/* ---- peer copies: within the one device ----------------------------- */

CUresult cuMemcpyPeer(CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice,
		      CUcontext srcContext, size_t ByteCount)
{
	if (!xgpu_drv_ctx_valid(dstContext) || !xgpu_drv_ctx_valid(srcContext))
		return CUDA_ERROR_INVALID_CONTEXT;
	return cuMemcpyDtoD(dstDevice, srcDevice, ByteCount);
}
CUresult cuMemcpyPeer_ptds(CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice,
			   CUcontext srcContext, size_t ByteCount) XGPU_ALIAS(cuMemcpyPeer);

CUresult cuMemcpyPeerAsync(CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice,
			   CUcontext srcContext, size_t ByteCount, CUstream hStream)
{
	if (!xgpu_drv_ctx_valid(dstContext) || !xgpu_drv_ctx_valid(srcContext))
		return CUDA_ERROR_INVALID_CONTEXT;
	return cuMemcpyDtoDAsync(dstDevice, srcDevice, ByteCount, hStream);
}
CUresult cuMemcpyPeerAsync_ptsz(CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice,
				CUcontext srcContext, size_t ByteCount, CUstream hStream)
    XGPU_ALIAS(cuMemcpyPeerAsync);

/* ---- streams -------------------------------------------------------- */

/* The wire handle of a stream of this process (proved by asking the daemon
 * its priority); the default stream's is 0. */
static CUresult stream_checked(CUstream s, struct xgpu_client **c, xgpu_handle_t *h)
{
	CUresult r = xgpu_drv_client_ctx(c);
	if (r)
		return r;
	*h = xgpu_drv_stream(s);
	return xgpu_drv_result(xgpu_stream_get_priority(*c, *h, NULL, NULL, NULL));
}

CUresult cuStreamGetId(CUstream hStream, unsigned long long *streamId)
{
	struct xgpu_client *c;
	xgpu_handle_t h;
	if (!streamId)
		return CUDA_ERROR_INVALID_VALUE;
	CUresult r = stream_checked(hStream, &c, &h);
	if (!r)
		*streamId = h; /* unique among the process's live streams */
	return r;
}
CUresult cuStreamGetId_ptsz(CUstream hStream, unsigned long long *streamId) XGPU_ALIAS(cuStreamGetId);

CUresult cuStreamGetDevice(CUstream hStream, CUdevice *device)
{
	struct xgpu_client *c;
	xgpu_handle_t h;
	if (!device)
		return CUDA_ERROR_INVALID_VALUE;
	CUresult r = stream_checked(hStream, &c, &h);
	if (!r)
		*device = 0;
	return r;
}
CUresult cuStreamGetDevice_ptsz(CUstream hStream, CUdevice *device) XGPU_ALIAS(cuStreamGetDevice);

CUresult cuStreamCopyAttributes(CUstream dst, CUstream src)
{
	struct xgpu_client *c;
	xgpu_handle_t hd, hs;
	CUresult r = stream_checked(dst, &c, &hd);
	if (!r)
		r = stream_checked(src, &c, &hs);
	/* Every attribute a stream has (the others are refused by get). */
	for (int attr = 0; attr < 32 && !r; attr++) {
		CUlaunchAttributeValue v;
		if (xgpu_stream_attr_get(c, hs, attr, &v) == cudaSuccess)
			r = xgpu_drv_result(xgpu_stream_attr_set(c, hd, attr, &v));
	}
	return r;
}
CUresult cuStreamCopyAttributes_ptsz(CUstream dst, CUstream src) XGPU_ALIAS(cuStreamCopyAttributes);

/* ---- configuration without effect ----------------------------------- */

CUresult cuCtxResetPersistingL2Cache(void)
{
	struct xgpu_client *c;
	return xgpu_drv_client_ctx(&c);
}

CUresult cuCtxGetSharedMemConfig(CUsharedconfig *pConfig)
{
	struct xgpu_client *c;
	if (!pConfig)
		return CUDA_ERROR_INVALID_VALUE;
	CUresult r = xgpu_drv_client_ctx(&c);
	if (!r)
		*pConfig = CU_SHARED_MEM_CONFIG_FOUR_BYTE_BANK_SIZE;
	return r;
}

CUresult cuCtxSetSharedMemConfig(CUsharedconfig config)
{
	struct xgpu_client *c;
	CUresult r = xgpu_drv_client_ctx(&c);
	if (r)
		return r;
	return (unsigned)config <= CU_SHARED_MEM_CONFIG_EIGHT_BYTE_BANK_SIZE ? CUDA_SUCCESS
									     : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuFuncSetSharedMemConfig(CUfunction hfunc, CUsharedconfig config)
{
	struct xgpu_client *c;
	CUresult r = xgpu_drv_client_ctx(&c);
	if (r)
		return r;
	if (!hfunc)
		return CUDA_ERROR_INVALID_HANDLE;
	return (unsigned)config <= CU_SHARED_MEM_CONFIG_EIGHT_BYTE_BANK_SIZE ? CUDA_SUCCESS
									     : CUDA_ERROR_INVALID_VALUE;
}
