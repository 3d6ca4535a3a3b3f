/* SPDX-License-Identifier: Apache-2.0 */
/* api_device.c - devices, versions and whole-device calls. A guest sees one
 * device, the GPU its domain is bound to; its properties come from the
 * daemon once, field by field, and are answered locally afterwards. */
#include "devprop.h"
#include "mempool.h"
#include "runtime.h"

#include <stdio.h>
#include <string.h>

static _Thread_local unsigned device_flags;

XGPU_EXPORT cudaError_t cudaGetDeviceCount(int *count)
{
	if (!count)
		return xgpu_rt_ret(cudaErrorInvalidValue);
	struct xgpu_client *c;
	cudaError_t e = xgpu_rt_client(&c);
	*count = e ? 0 : (int)xgpu_client_ack(c)->device_count;
	return e;
}

XGPU_EXPORT cudaError_t cudaGetDevice(int *device)
{
	if (!device)
		return xgpu_rt_ret(cudaErrorInvalidValue);
	*device = 0;
	return cudaSuccess;
}

static cudaError_t check_device(int device)
{
	struct xgpu_client *c;
	cudaError_t e = xgpu_rt_client(&c);
	if (e)
		return e;
	if (device < 0 || (unsigned)device >= xgpu_client_ack(c)->device_count)
		return xgpu_rt_ret(cudaErrorInvalidDevice);
	return cudaSuccess;
}

/* Both make the device's primary context current on the calling thread,
 * as NVIDIA's runtime does (every device of a domain is served by the
 * channel's one context; the runtime works in device 0's). */
static cudaError_t init_device(int device)
{
	cudaError_t e = check_device(device);
	return e ? e : xgpu_rt_ret(xgpu_rt_primary_current(true));
}

XGPU_EXPORT cudaError_t cudaSetDevice(int device)
{
	return init_device(device);
}

XGPU_EXPORT cudaError_t cudaInitDevice(int device, unsigned int deviceFlags, unsigned int flags)
{
	return init_device(device);
}

XGPU_EXPORT cudaError_t cudaSetValidDevices(int *devices, int len)
{
	if (len < 0 || (len > 0 && !devices))
		return xgpu_rt_ret(cudaErrorInvalidValue);
	for (int i = 0; i < len; i++) {
		cudaError_t e = check_device(devices[i]);
		if (e)
			return e;
	}
	return cudaSuccess;
}

XGPU_EXPORT cudaError_t cudaChooseDevice(int *device, const struct cudaDeviceProp *prop)
{
	if (!device || !prop)
		return xgpu_rt_ret(cudaErrorInvalidValue);
	cudaError_t e = check_device(0);
	if (!e)
		*device = 0;
	return e;
}

XGPU_EXPORT cudaError_t cudaSetDeviceFlags(unsigned int flags)
{
	const unsigned known =
	    cudaDeviceScheduleMask | cudaDeviceMapHost | cudaDeviceLmemResizeToMax | cudaDeviceSyncMemops;
	if (flags & ~known)
		return xgpu_rt_ret(cudaErrorInvalidValue);
	/* Scheduling hints concern how the host thread waits; ours spins,
	 * then sleeps, whatever the hint. */
	device_flags = flags;
	return cudaSuccess;
}

XGPU_EXPORT cudaError_t cudaGetDeviceFlags(unsigned int *flags)
{
	if (!flags)
		return xgpu_rt_ret(cudaErrorInvalidValue);
	*flags = device_flags;
	return cudaSuccess;
}

XGPU_EXPORT cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *prop, int device)
{
	if (!prop)
		return xgpu_rt_ret(cudaErrorInvalidValue);
	cudaError_t e = check_device(device);
	const struct xgpu_device_info *di;
	if (!e)
		e = xgpu_rt_devinfo(&di);
	if (e)
		return e;
	xgpu_devprop_fill(prop, &di->blob, di->attrs, di->nattrs);
	return cudaSuccess;
}

XGPU_EXPORT cudaError_t cudaDeviceGetAttribute(int *value, enum cudaDeviceAttr attr, int device)
{
	cudaError_t e = check_device(device);
	const struct xgpu_device_info *di;
	if (!e)
		e = xgpu_rt_devinfo(&di);
	if (e)
		return e;
	return xgpu_rt_ret(xgpu_devattr_lookup((int)attr, di->attrs, di->nattrs, value));
}

XGPU_EXPORT cudaError_t cudaDeviceGetPCIBusId(char *buf, int len, int device)
{
	int dom, bus, dev;
	if (!buf || len <= 0)
		return xgpu_rt_ret(cudaErrorInvalidValue);
	cudaError_t e = cudaDeviceGetAttribute(&dom, cudaDevAttrPciDomainId, device);
	if (!e)
		e = cudaDeviceGetAttribute(&bus, cudaDevAttrPciBusId, device);
	if (!e)
		e = cudaDeviceGetAttribute(&dev, cudaDevAttrPciDeviceId, device);
	if (!e)
		snprintf(buf, (size_t)len, "%08x:%02x:%02x.0", (unsigned)dom, (unsigned)bus, (unsigned)dev);
	return e;
}

XGPU_EXPORT cudaError_t cudaDriverGetVersion(int *version)
{
	if (!version)
		return xgpu_rt_ret(cudaErrorInvalidValue);
	/* Like the real runtime: 0, not an error, when there is no driver. */
	struct xgpu_client *c;
	*version = xgpu_client_get(&c) == cudaSuccess ? xgpu_client_ack(c)->driver_version : 0;
	return cudaSuccess;
}

XGPU_EXPORT cudaError_t cudaRuntimeGetVersion(int *version)
{
	if (!version)
		return xgpu_rt_ret(cudaErrorInvalidValue);
	*version = CUDART_VERSION;
	return cudaSuccess;
}

XGPU_EXPORT cudaError_t cudaDeviceSynchronize(void)
{
	struct xgpu_client *c;
	cudaError_t e = xgpu_rt_client(&c);
	if (e)
		return e;
	struct xgpu_req_DEVICE_SYNC req = {0};
	struct xgpu_rsp_DEVICE_SYNC rsp;
	e = xgpu_call_DEVICE_SYNC(c, &req, &rsp);
	if (!e)
		xgpu_pool_synced(c, true, 0);
	return xgpu_rt_ret(e);
}

void xgpu_rt_segs_forget(void);
void xgpu_rt_streams_forget(void);

XGPU_EXPORT cudaError_t cudaDeviceReset(void)
{
	struct xgpu_client *c;
	cudaError_t e = xgpu_rt_client(&c);
	if (e)
		return e;
	struct xgpu_req_DEVICE_RESET req = {0};
	struct xgpu_rsp_DEVICE_RESET rsp;
	e = xgpu_call_DEVICE_RESET(c, &req, &rsp);
	/* Everything the backend held for us is gone: modules reload lazily,
	 * pinned memory stays mapped but is plain host memory now. */
	xgpu_rt_primary_release();
	xgpu_rt_new_epoch();
	xgpu_rt_devmem_clear();
	xgpu_rt_segs_forget();
	xgpu_rt_streams_forget();
	xgpu_pool_reset();
	return xgpu_rt_ret(e);
}

XGPU_EXPORT cudaError_t cudaDeviceGetLimit(size_t *value, enum cudaLimit limit)
{
	if (!value)
		return xgpu_rt_ret(cudaErrorInvalidValue);
	struct xgpu_client *c;
	cudaError_t e = xgpu_rt_client(&c);
	if (e)
		return e;
	struct xgpu_req_LIMIT_GET req = {.limit = (uint32_t)limit};
	struct xgpu_rsp_LIMIT_GET rsp;
	e = xgpu_call_LIMIT_GET(c, &req, &rsp);
	if (!e)
		*value = rsp.value;
	return xgpu_rt_ret(e == cudaErrorNotSupported ? cudaErrorUnsupportedLimit : e);
}

XGPU_EXPORT cudaError_t cudaDeviceSetLimit(enum cudaLimit limit, size_t value)
{
	struct xgpu_client *c;
	cudaError_t e = xgpu_rt_client(&c);
	if (e)
		return e;
	struct xgpu_req_LIMIT_SET req = {.limit = (uint32_t)limit, .value = value};
	struct xgpu_rsp_LIMIT_SET rsp;
	e = xgpu_call_LIMIT_SET(c, &req, &rsp);
	return xgpu_rt_ret(e == cudaErrorNotSupported ? cudaErrorUnsupportedLimit : e);
}

/* Cache and shared-memory configuration are hints the hardware may ignore;
 * Hopper ignores them, and so do we. */
XGPU_EXPORT cudaError_t cudaDeviceSetCacheConfig(enum cudaFuncCache config)
{
	return config <= cudaFuncCachePreferEqual ? cudaSuccess : xgpu_rt_ret(cudaErrorInvalidValue);
}

XGPU_EXPORT cudaError_t cudaDeviceGetCacheConfig(enum cudaFuncCache *config)
{
	if (!config)
		return xgpu_rt_ret(cudaErrorInvalidValue);
	*config = cudaFuncCachePreferNone;
	return cudaSuccess;
}

XGPU_EXPORT struct cudaChannelFormatDesc cudaCreateChannelDesc(int x, int y, int z, int w,
							       enum cudaChannelFormatKind f)
{
	struct cudaChannelFormatDesc d = {.x = x, .y = y, .z = z, .w = w, .f = f};
	return d;
}
