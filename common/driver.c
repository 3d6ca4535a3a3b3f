/* SPDX-License-Identifier: Apache-2.0 */
/* driver.c - loads a CUDA driver library (real or simulated) with dlopen and
 * resolves the entry points the executor uses (driver.h). */
#include "driver.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#define XGPU_STR_(x) #x
/* Expands cuda.h's renaming first: cuMemAlloc -> "cuMemAlloc_v2". */
#define XGPU_STR(x) XGPU_STR_(x)

int xgpu_driver_load(struct xgpu_driver *drv, const char *path, char *err, size_t errlen)
{
	memset(drv, 0, sizeof *drv);
	drv->dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!drv->dl) {
		snprintf(err, errlen, "cannot load CUDA driver %s: %s", path, dlerror());
		return -1;
	}
	/* xgpu's own libcuda.so.1 (the guest frontend) found first on the
	 * library path would turn every call back into an xgpu request. */
	if (dlsym(drv->dl, "xgpu_rpc")) {
		snprintf(err, errlen,
			 "%s is xgpu's guest frontend, not NVIDIA's driver (take xgpu's build/lib "
			 "out of LD_LIBRARY_PATH for xgpud, or name the driver with --cuda-driver)",
			 path);
		dlclose(drv->dl);
		drv->dl = NULL;
		return -1;
	}
	snprintf(drv->path, sizeof drv->path, "%s", path);
#define XGPU_DRIVER_RESOLVE(fn)                                                                              \
	*(void **)&drv->fn = dlsym(drv->dl, XGPU_STR(fn));                                                   \
	if (!drv->fn) {                                                                                      \
		snprintf(err, errlen, "CUDA driver %s lacks %s (too old for CUDA 13?)", path, XGPU_STR(fn)); \
		dlclose(drv->dl);                                                                            \
		drv->dl = NULL;                                                                              \
		return -1;                                                                                   \
	}
	XGPU_DRIVER_FUNCS(XGPU_DRIVER_RESOLVE)
#undef XGPU_DRIVER_RESOLVE
	return 0;
}

void xgpu_driver_unload(struct xgpu_driver *drv)
{
	if (drv->dl)
		dlclose(drv->dl);
	drv->dl = NULL;
}

const char *xgpu_driver_error_name(const struct xgpu_driver *drv, CUresult r)
{
	const char *name = NULL;
	if (drv->cuGetErrorName && drv->cuGetErrorName(r, &name) == CUDA_SUCCESS && name)
		return name;
	return "CUDA_ERROR_UNKNOWN_CODE";
}

int xgpu_driver_describe(const struct xgpu_driver *drv, int index, struct xgpu_gpu_desc *g)
{
	memset(g, 0, sizeof *g);
	g->index = index;
	if (drv->cuDeviceGet(&g->dev, index) != CUDA_SUCCESS)
		return -1;
	drv->cuDeviceGetName(g->name, sizeof g->name, g->dev);
	CUuuid uuid;
	if (drv->cuDeviceGetUuid(&uuid, g->dev) == CUDA_SUCCESS)
		memcpy(g->uuid, uuid.bytes, sizeof g->uuid);
	size_t total = 0;
	drv->cuDeviceTotalMem(&total, g->dev);
	g->total_mem = total;
	g->nattrs = CU_DEVICE_ATTRIBUTE_MAX < XGPU_MAX_DEVICE_ATTRS ? CU_DEVICE_ATTRIBUTE_MAX : XGPU_MAX_DEVICE_ATTRS;
	for (uint32_t a = 1; a < g->nattrs; a++) {
		int v = 0;
		if (drv->cuDeviceGetAttribute(&v, (CUdevice_attribute)a, g->dev) != CUDA_SUCCESS)
			v = 0;
		g->attrs[a] = v;
	}
	return 0;
}
