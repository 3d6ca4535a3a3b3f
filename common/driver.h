/* SPDX-License-Identifier: Apache-2.0 */
/* driver.h - the subset of the CUDA driver API that xgpud's executor uses,
 * loaded with dlopen from either NVIDIA's libcuda.so.1 (--executor cuda) or
 * xgpu's simulated driver libxgpu-simdrv.so (--executor sim).
 *
 * This list is also the simulated driver's contract: it exports exactly these
 * entry points under the same (versioned) names the real driver exports, so
 * the executor has one code path for real and simulated GPUs.
 */
#ifndef XGPU_DRIVER_H
#define XGPU_DRIVER_H

#include "proto.h"

#include <cuda.h>
#include <stdint.h>

/* X(fn): fn is the API name; cuda.h maps it to the versioned symbol
 * (cuMemAlloc -> cuMemAlloc_v2), which is what dlsym must look up. */
#define XGPU_DRIVER_FUNCS(X)                                                                                 \
	X(cuInit)                                                                                            \
	X(cuDriverGetVersion)                                                                                \
	X(cuGetErrorName)                                                                                    \
	X(cuGetErrorString)                                                                                  \
	X(cuDeviceGetCount)                                                                                  \
	X(cuDeviceGet)                                                                                       \
	X(cuDeviceGetName)                                                                                   \
	X(cuDeviceGetUuid)                                                                                   \
	X(cuDeviceTotalMem)                                                                                  \
	X(cuDeviceGetAttribute)                                                                              \
	X(cuCtxCreate)                                                                                       \
	X(cuCtxDestroy)                                                                                      \
	X(cuCtxSetCurrent)                                                                                   \
	X(cuCtxGetCurrent)                                                                                   \
	X(cuCtxSynchronize)                                                                                  \
	X(cuCtxSetLimit)                                                                                     \
	X(cuCtxGetLimit)                                                                                     \
	X(cuMemAlloc)                                                                                        \
	X(cuMemFree)                                                                                         \
	X(cuMemAllocManaged)                                                                                 \
	X(cuMemGetInfo)                                                                                      \
	X(cuMemAllocHost)                                                                                    \
	X(cuMemFreeHost)                                                                                     \
	X(cuMemHostRegister)                                                                                 \
	X(cuMemHostUnregister)                                                                               \
	X(cuMemcpyHtoDAsync)                                                                                 \
	X(cuMemcpyDtoHAsync)                                                                                 \
	X(cuMemcpyDtoDAsync)                                                                                 \
	X(cuMemsetD8Async)                                                                                   \
	X(cuMemcpy2DAsync)                                                                                   \
	X(cuMemsetD2D8Async)                                                                                 \
	X(cuArray3DCreate)                                                                                   \
	X(cuArrayDestroy)                                                                                    \
	X(cuMemcpy3DAsync)                                                                                   \
	X(cuTexObjectCreate)                                                                                 \
	X(cuTexObjectDestroy)                                                                                \
	X(cuSurfObjectCreate)                                                                                \
	X(cuSurfObjectDestroy)                                                                               \
	X(cuModuleLoadData)                                                                                  \
	X(cuModuleUnload)                                                                                    \
	X(cuModuleGetFunction)                                                                               \
	X(cuModuleGetGlobal)                                                                                 \
	X(cuPointerGetAttribute)                                                                             \
	X(cuFuncGetAttribute)                                                                                \
	X(cuFuncSetAttribute)                                                                                \
	X(cuFuncGetParamInfo)                                                                                \
	X(cuLaunchKernel)                                                                                    \
	X(cuLaunchHostFunc)                                                                                  \
	X(cuLaunchKernelEx)                                                                                  \
	X(cuCtxGetStreamPriorityRange)                                                                       \
	X(cuStreamGetPriority)                                                                               \
	X(cuOccupancyMaxActiveBlocksPerMultiprocessor)                                                       \
	X(cuStreamCreate)                                                                                    \
	X(cuStreamCreateWithPriority)                                                                        \
	X(cuStreamDestroy)                                                                                   \
	X(cuStreamSynchronize)                                                                               \
	X(cuStreamQuery)                                                                                     \
	X(cuStreamWaitEvent)                                                                                 \
	X(cuEventCreate)                                                                                     \
	X(cuEventDestroy)                                                                                    \
	X(cuEventRecord)                                                                                     \
	X(cuEventQuery)                                                                                      \
	X(cuEventSynchronize)                                                                                \
	X(cuEventElapsedTime)                                                                                \
	X(cuGraphCreate)                                                                                     \
	X(cuGraphDestroy)                                                                                    \
	X(cuGraphAddEmptyNode)                                                                               \
	X(cuGraphAddKernelNode)                                                                              \
	X(cuGraphAddMemcpyNode)                                                                              \
	X(cuGraphAddMemsetNode)                                                                              \
	X(cuGraphAddEventRecordNode)                                                                         \
	X(cuGraphAddEventWaitNode)                                                                           \
	X(cuGraphConditionalHandleCreate)                                                                    \
	X(cuGraphAddNode)                                                                                    \
	X(cuGraphInstantiateWithFlags)                                                                       \
	X(cuGraphLaunch)                                                                                     \
	X(cuGraphExecDestroy)                                                                                \
	X(cuMemGetAllocationGranularity)                                                                     \
	X(cuMemCreate)                                                                                       \
	X(cuMemRelease)                                                                                      \
	X(cuMemAddressReserve)                                                                               \
	X(cuMemAddressFree)                                                                                  \
	X(cuMemMap)                                                                                          \
	X(cuMemUnmap)                                                                                        \
	X(cuMemSetAccess)

struct xgpu_driver {
	void *dl;
	char path[256];
#define XGPU_DRIVER_MEMBER(fn) __typeof__(fn) *fn;
	XGPU_DRIVER_FUNCS(XGPU_DRIVER_MEMBER)
#undef XGPU_DRIVER_MEMBER
};

/* Loads the library at path and resolves every entry point. Returns 0, or -1
 * with the library or the missing symbol named in err. */
int xgpu_driver_load(struct xgpu_driver *drv, const char *path, char *err, size_t errlen);
void xgpu_driver_unload(struct xgpu_driver *drv);

/* A GPU as its driver describes it: every attribute the driver knows, so
 * that the frontend answers device queries from one copy, field by field. */
struct xgpu_gpu_desc {
	int index;
	CUdevice dev;
	char name[256];
	uint8_t uuid[16];
	uint64_t total_mem;
	int32_t attrs[XGPU_MAX_DEVICE_ATTRS];
	uint32_t nattrs;
};
/* Describes device ordinal index of a loaded, initialised driver; 0, or -1
 * if the driver has no such device. */
int xgpu_driver_describe(const struct xgpu_driver *drv, int index, struct xgpu_gpu_desc *g);

/* "CUDA_ERROR_OUT_OF_MEMORY" etc., never NULL. */
const char *xgpu_driver_error_name(const struct xgpu_driver *drv, CUresult r);

#endif
