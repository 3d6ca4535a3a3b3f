/* SPDX-License-Identifier: Apache-2.0 */
/* nvml.c - libnvidia-ml.so.1: the part of NVIDIA's management library that
 * CUDA clients ask before they use a device, answered for the devices xgpu
 * gives this guest.
 *
 * XLA (JAX's CUDA plugin) will not use a GPU unless nvmlInit_v2 succeeds, and
 * then matches NVML devices to CUDA devices by PCI bus id; tools ask names,
 * UUIDs, memory and compute capability. A guest has no NVIDIA driver, so
 * every answer comes from xgpu's libcuda.so.1 (the same channel, the same
 * virtual devices): the two libraries can never disagree about a device.
 * What a virtual GPU has no meaning for (PCIe links, NVLink, fabric, clocks,
 * power) is NVML_ERROR_NOT_SUPPORTED, which NVML's clients handle; functions
 * not here are not exported, so a client that needs one fails to resolve it
 * by name rather than getting a wrong answer. */
#include "nvml.h"

#include <cuda.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#define MAX_DEVICES 16
#define DEVICE_MAGIC 0x6e766d6cu /* "nvml" */

/* The NVIDIA driver branch that ships CUDA 13.0, the version xgpu's
 * libcuda.so.1 reports: clients compare it against the CUDA they were built
 * for. */
#define DRIVER_VERSION "580.0"
#define NVML_VERSION "13.580.0"

struct nvmlDevice_st {
	unsigned magic;
	unsigned index;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned init_count;
static unsigned ndevices;
static struct nvmlDevice_st devices[MAX_DEVICES];

static nvmlReturn_t from_cuda(CUresult r)
{
	switch (r) {
	case CUDA_SUCCESS:
		return NVML_SUCCESS;
	case CUDA_ERROR_INVALID_VALUE:
	case CUDA_ERROR_INVALID_DEVICE:
		return NVML_ERROR_INVALID_ARGUMENT;
	case CUDA_ERROR_NO_DEVICE:
	case CUDA_ERROR_NOT_INITIALIZED:
	case CUDA_ERROR_DEVICE_UNAVAILABLE:
		return NVML_ERROR_DRIVER_NOT_LOADED;
	case CUDA_ERROR_NOT_SUPPORTED:
		return NVML_ERROR_NOT_SUPPORTED;
	case CUDA_ERROR_OUT_OF_MEMORY:
		return NVML_ERROR_MEMORY;
	default:
		return NVML_ERROR_UNKNOWN;
	}
}

static bool initialised(void)
{
	pthread_mutex_lock(&lock);
	bool ok = init_count > 0;
	pthread_mutex_unlock(&lock);
	return ok;
}

/* The device a handle names, or NULL: handles are checked, never trusted. */
static const struct nvmlDevice_st *device_of(nvmlDevice_t d)
{
	for (unsigned i = 0; i < ndevices; i++)
		if (d == &devices[i] && d->magic == DEVICE_MAGIC)
			return d;
	return NULL;
}

/* The common prologue: initialised, a valid handle, and out not NULL. */
static nvmlReturn_t check(nvmlDevice_t d, const void *out, const struct nvmlDevice_st **dev)
{
	if (!initialised())
		return NVML_ERROR_UNINITIALIZED;
	*dev = device_of(d);
	if (!*dev || !out)
		return NVML_ERROR_INVALID_ARGUMENT;
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlInitWithFlags(unsigned int flags)
{
	(void)flags; /* NO_GPUS and NO_ATTACH: nothing here attaches a GPU */
	pthread_mutex_lock(&lock);
	nvmlReturn_t r = NVML_SUCCESS;
	if (!init_count) {
		int n = 0;
		CUresult c = cuInit(0);
		if (!c)
			c = cuDeviceGetCount(&n);
		if (c) {
			r = from_cuda(c);
			if (r == NVML_ERROR_INVALID_ARGUMENT || r == NVML_ERROR_UNKNOWN)
				r = NVML_ERROR_DRIVER_NOT_LOADED;
		} else {
			ndevices = n < 0 ? 0 : n > MAX_DEVICES ? MAX_DEVICES : (unsigned)n;
			for (unsigned i = 0; i < ndevices; i++)
				devices[i] = (struct nvmlDevice_st){DEVICE_MAGIC, i};
		}
	}
	if (r == NVML_SUCCESS)
		init_count++;
	pthread_mutex_unlock(&lock);
	return r;
}

nvmlReturn_t nvmlInit_v2(void)
{
	return nvmlInitWithFlags(0);
}

nvmlReturn_t nvmlInit(void)
{
	return nvmlInitWithFlags(0);
}

nvmlReturn_t nvmlShutdown(void)
{
	pthread_mutex_lock(&lock);
	nvmlReturn_t r = init_count ? NVML_SUCCESS : NVML_ERROR_UNINITIALIZED;
	if (init_count)
		init_count--;
	pthread_mutex_unlock(&lock);
	return r;
}

const char *nvmlErrorString(nvmlReturn_t r)
{
	switch (r) {
	case NVML_SUCCESS:
		return "Success";
	case NVML_ERROR_UNINITIALIZED:
		return "Uninitialized";
	case NVML_ERROR_INVALID_ARGUMENT:
		return "Invalid Argument";
	case NVML_ERROR_NOT_SUPPORTED:
		return "Not Supported";
	case NVML_ERROR_INSUFFICIENT_SIZE:
		return "Insufficient Size";
	case NVML_ERROR_DRIVER_NOT_LOADED:
		return "Driver Not Loaded (xgpu: no xgpud answers this guest)";
	case NVML_ERROR_NOT_FOUND:
		return "Not Found";
	case NVML_ERROR_MEMORY:
		return "Insufficient Memory";
	default:
		return "Unknown Error";
	}
}

/* Copies s into buf of len bytes, or says it does not fit. */
static nvmlReturn_t put_string(char *buf, unsigned int len, const char *s)
{
	if (!buf)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (strlen(s) + 1 > len)
		return NVML_ERROR_INSUFFICIENT_SIZE;
	memcpy(buf, s, strlen(s) + 1);
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length)
{
	if (!initialised())
		return NVML_ERROR_UNINITIALIZED;
	return put_string(version, length, DRIVER_VERSION);
}

nvmlReturn_t nvmlSystemGetNVMLVersion(char *version, unsigned int length)
{
	return put_string(version, length, NVML_VERSION);
}

nvmlReturn_t nvmlSystemGetCudaDriverVersion(int *cudaDriverVersion)
{
	if (!cudaDriverVersion)
		return NVML_ERROR_INVALID_ARGUMENT;
	return from_cuda(cuDriverGetVersion(cudaDriverVersion));
}

nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *cudaDriverVersion)
{
	return nvmlSystemGetCudaDriverVersion(cudaDriverVersion);
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *deviceCount)
{
	if (!initialised())
		return NVML_ERROR_UNINITIALIZED;
	if (!deviceCount)
		return NVML_ERROR_INVALID_ARGUMENT;
	*deviceCount = ndevices;
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetCount(unsigned int *deviceCount)
{
	return nvmlDeviceGetCount_v2(deviceCount);
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device)
{
	if (!initialised())
		return NVML_ERROR_UNINITIALIZED;
	if (!device || index >= ndevices)
		return NVML_ERROR_INVALID_ARGUMENT;
	*device = &devices[index];
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int index, nvmlDevice_t *device)
{
	return nvmlDeviceGetHandleByIndex_v2(index, device);
}

nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char *pciBusId, nvmlDevice_t *device)
{
	if (!initialised())
		return NVML_ERROR_UNINITIALIZED;
	if (!pciBusId || !device)
		return NVML_ERROR_INVALID_ARGUMENT;
	CUdevice d;
	CUresult r = cuDeviceGetByPCIBusId(&d, pciBusId);
	if (r == CUDA_ERROR_INVALID_DEVICE)
		return NVML_ERROR_NOT_FOUND;
	if (r)
		return from_cuda(r);
	if (d < 0 || (unsigned)d >= ndevices)
		return NVML_ERROR_NOT_FOUND;
	*device = &devices[d];
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetHandleByPciBusId(const char *pciBusId, nvmlDevice_t *device)
{
	return nvmlDeviceGetHandleByPciBusId_v2(pciBusId, device);
}

nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *uuid, nvmlDevice_t *device)
{
	if (!initialised())
		return NVML_ERROR_UNINITIALIZED;
	if (!uuid || !device)
		return NVML_ERROR_INVALID_ARGUMENT;
	for (unsigned i = 0; i < ndevices; i++) {
		char mine[NVML_DEVICE_UUID_BUFFER_SIZE];
		nvmlReturn_t r = nvmlDeviceGetUUID(&devices[i], mine, sizeof mine);
		if (r)
			return r;
		if (!strncmp(uuid, mine, sizeof mine)) {
			*device = &devices[i];
			return NVML_SUCCESS;
		}
	}
	return NVML_ERROR_NOT_FOUND;
}

nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t device, unsigned int *index)
{
	const struct nvmlDevice_st *d;
	nvmlReturn_t r = check(device, index, &d);
	if (!r)
		*index = d->index;
	return r;
}

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned int length)
{
	const struct nvmlDevice_st *d;
	nvmlReturn_t r = check(device, name, &d);
	if (r)
		return r;
	char buf[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
	r = from_cuda(cuDeviceGetName(buf, sizeof buf, (CUdevice)d->index));
	return r ? r : put_string(name, length, buf);
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid, unsigned int length)
{
	const struct nvmlDevice_st *d;
	nvmlReturn_t r = check(device, uuid, &d);
	if (r)
		return r;
	CUuuid u;
	r = from_cuda(cuDeviceGetUuid(&u, (CUdevice)d->index));
	if (r)
		return r;
	const unsigned char *b = (const unsigned char *)u.bytes;
	char buf[NVML_DEVICE_UUID_BUFFER_SIZE];
	snprintf(buf, sizeof buf, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		 b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
		 b[14], b[15]);
	return put_string(uuid, length, buf);
}

nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t device, int *major, int *minor)
{
	const struct nvmlDevice_st *d;
	nvmlReturn_t r = check(device, major, &d);
	if (r || !minor)
		return r ? r : NVML_ERROR_INVALID_ARGUMENT;
	CUresult c =
	    cuDeviceGetAttribute(major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, (CUdevice)d->index);
	if (!c)
		c = cuDeviceGetAttribute(minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
					 (CUdevice)d->index);
	return from_cuda(c);
}

/* Memory as the guest's domain sees it: its limit on the device, and what
 * its context has left (read through the primary context, which this
 * retains only for the question). */
nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory)
{
	const struct nvmlDevice_st *d;
	nvmlReturn_t r = check(device, memory, &d);
	if (r)
		return r;
	CUcontext ctx;
	CUresult c = cuDevicePrimaryCtxRetain(&ctx, (CUdevice)d->index);
	if (c)
		return from_cuda(c);
	size_t free_b = 0, total_b = 0;
	c = cuCtxPushCurrent(ctx);
	if (!c) {
		c = cuMemGetInfo(&free_b, &total_b);
		CUcontext popped;
		cuCtxPopCurrent(&popped);
	}
	cuDevicePrimaryCtxRelease((CUdevice)d->index);
	if (c)
		return from_cuda(c);
	*memory = (nvmlMemory_t){.total = total_b, .free = free_b, .used = total_b - free_b};
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t *pci)
{
	const struct nvmlDevice_st *d;
	nvmlReturn_t r = check(device, pci, &d);
	if (r)
		return r;
	int dom = 0, bus = 0, slot = 0;
	CUresult c = cuDeviceGetAttribute(&dom, CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, (CUdevice)d->index);
	if (!c)
		c = cuDeviceGetAttribute(&bus, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, (CUdevice)d->index);
	if (!c)
		c = cuDeviceGetAttribute(&slot, CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, (CUdevice)d->index);
	if (c)
		return from_cuda(c);
	memset(pci, 0, sizeof *pci);
	pci->domain = (unsigned)dom;
	pci->bus = (unsigned)bus;
	pci->device = (unsigned)slot;
	pci->pciDeviceId = 0x10de; /* NVIDIA's vendor id; the device id is not the guest's to know */
	c = cuDeviceGetPCIBusId(pci->busId, (int)sizeof pci->busId, (CUdevice)d->index);
	if (c)
		return from_cuda(c);
	snprintf(pci->busIdLegacy, sizeof pci->busIdLegacy, "%04x:%02x:%02x.0", pci->domain & 0xffff,
		 pci->bus, pci->device);
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPciInfo_v2(nvmlDevice_t device, nvmlPciInfo_t *pci)
{
	return nvmlDeviceGetPciInfo_v3(device, pci);
}

nvmlReturn_t nvmlDeviceGetPciInfo(nvmlDevice_t device, nvmlPciInfo_t *pci)
{
	return nvmlDeviceGetPciInfo_v3(device, pci);
}

/* A virtual GPU has no PCIe link, NVLink or fabric of its own to describe. */
static nvmlReturn_t not_supported(nvmlDevice_t device, const void *out)
{
	const struct nvmlDevice_st *d;
	nvmlReturn_t r = check(device, out, &d);
	return r ? r : NVML_ERROR_NOT_SUPPORTED;
}

nvmlReturn_t nvmlDeviceGetCurrPcieLinkGeneration(nvmlDevice_t device, unsigned int *currLinkGen)
{
	return not_supported(device, currLinkGen);
}

nvmlReturn_t nvmlDeviceGetCurrPcieLinkWidth(nvmlDevice_t device, unsigned int *currLinkWidth)
{
	return not_supported(device, currLinkWidth);
}

nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t device, unsigned int link, nvmlEnableState_t *isActive)
{
	(void)link;
	return not_supported(device, isActive);
}

nvmlReturn_t nvmlDeviceGetNvLinkCapability(nvmlDevice_t device, unsigned int link,
					   nvmlNvLinkCapability_t capability, unsigned int *capResult)
{
	(void)link;
	(void)capability;
	return not_supported(device, capResult);
}

nvmlReturn_t nvmlDeviceGetNvLinkRemoteDeviceType(nvmlDevice_t device, unsigned int link, int *type)
{
	(void)link;
	return not_supported(device, type);
}

nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo_v2(nvmlDevice_t device, unsigned int link, nvmlPciInfo_t *pci)
{
	(void)link;
	return not_supported(device, pci);
}

/* The processes on the GPU are other guests' too, which a guest may not
 * learn. */
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t device, unsigned int *infoCount, void *infos)
{
	(void)infos;
	return not_supported(device, infoCount);
}

/* As cuDeviceCanAccessPeer answers under xgpu: no peer access. */
nvmlReturn_t nvmlDeviceGetP2PStatus(nvmlDevice_t device1, nvmlDevice_t device2, int p2pIndex, int *p2pStatus)
{
	(void)p2pIndex;
	const struct nvmlDevice_st *d;
	nvmlReturn_t r = check(device1, p2pStatus, &d);
	if (r)
		return r;
	if (!device_of(device2))
		return NVML_ERROR_INVALID_ARGUMENT;
	*p2pStatus = NVML_P2P_STATUS_NOT_SUPPORTED;
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetGpuFabricInfoV(nvmlDevice_t device, void *gpuFabricInfo)
{
	return not_supported(device, gpuFabricInfo);
}
