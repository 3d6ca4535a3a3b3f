/* SPDX-License-Identifier: Apache-2.0 */
/* cuerr.c - CUresult -> cudaError_t, one entry per CUresult enumerator of
 * CUDA 13's cuda.h.
 *
 * The runtime's error numbers equal the driver's wherever both name the same
 * condition (older runtimes numbered some differently), and CUDA 13's
 * libcudart converts a driver result by returning it unchanged: its
 * conversion routine (the one cudaDeviceGetAttribute passes the driver's
 * result through) is a bare move of its argument, and with a stand-in
 * libcuda.so.1 whose cuInit fails with each CUresult in turn,
 * cudaGetDeviceCount returns that same number, unknown values included.
 * Every CUresult below therefore maps to the cudaError_t of the same
 * number, whose documentation describes the same condition, even where the
 * names differ, e.g.
 *   CUDA_ERROR_NOT_INITIALIZED   (3)   -> cudaErrorInitializationError
 *   CUDA_ERROR_DEINITIALIZED     (4)   -> cudaErrorCudartUnloading
 *   CUDA_ERROR_INVALID_IMAGE     (200) -> cudaErrorInvalidKernelImage
 *   CUDA_ERROR_INVALID_CONTEXT   (201) -> cudaErrorDeviceUninitialized
 *   CUDA_ERROR_NO_BINARY_FOR_GPU (209) -> cudaErrorNoKernelImageForDevice
 *   CUDA_ERROR_NOT_FOUND         (500) -> cudaErrorSymbolNotFound
 *   CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE (708) -> cudaErrorSetOnActiveProcess
 * Two CUresults have no cudaError_t of their number; the real runtime passes
 * them through, which applications can only print as "unrecognized error
 * code". We answer cudaErrorUnknown instead so that every error a guest sees
 * is one it can name:
 *   CUDA_ERROR_CONTEXT_ALREADY_CURRENT (202, deprecated, never returned)
 *   CUDA_ERROR_KEY_ROTATION            (916, confidential-computing key
 *                                       rotation failed)
 * Naming both enumerators on every line, instead of returning the number,
 * makes the compiler check that both names still exist, and keeps values that
 * are not CUresults (from a newer or misbehaving driver) from reaching the
 * guest as errors nobody can name.
 */
#include "cuerr.h"

#include <cuda.h>
#include <driver_types.h>
#include <stdio.h>

#define XGPU_CU_TO_RT(X)                                                                                     \
	X(CUDA_SUCCESS, cudaSuccess)                                                                         \
	X(CUDA_ERROR_INVALID_VALUE, cudaErrorInvalidValue)                                                   \
	X(CUDA_ERROR_OUT_OF_MEMORY, cudaErrorMemoryAllocation)                                               \
	X(CUDA_ERROR_NOT_INITIALIZED, cudaErrorInitializationError)                                          \
	X(CUDA_ERROR_DEINITIALIZED, cudaErrorCudartUnloading)                                                \
	X(CUDA_ERROR_PROFILER_DISABLED, cudaErrorProfilerDisabled)                                           \
	X(CUDA_ERROR_PROFILER_NOT_INITIALIZED, cudaErrorProfilerNotInitialized)                              \
	X(CUDA_ERROR_PROFILER_ALREADY_STARTED, cudaErrorProfilerAlreadyStarted)                              \
	X(CUDA_ERROR_PROFILER_ALREADY_STOPPED, cudaErrorProfilerAlreadyStopped)                              \
	X(CUDA_ERROR_STUB_LIBRARY, cudaErrorStubLibrary)                                                     \
	X(CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER, cudaErrorCallRequiresNewerDriver)                           \
	X(CUDA_ERROR_DEVICE_UNAVAILABLE, cudaErrorDevicesUnavailable)                                        \
	X(CUDA_ERROR_NO_DEVICE, cudaErrorNoDevice)                                                           \
	X(CUDA_ERROR_INVALID_DEVICE, cudaErrorInvalidDevice)                                                 \
	X(CUDA_ERROR_DEVICE_NOT_LICENSED, cudaErrorDeviceNotLicensed)                                        \
	X(CUDA_ERROR_INVALID_IMAGE, cudaErrorInvalidKernelImage)                                             \
	X(CUDA_ERROR_INVALID_CONTEXT, cudaErrorDeviceUninitialized)                                          \
	X(CUDA_ERROR_CONTEXT_ALREADY_CURRENT, cudaErrorUnknown)                                              \
	X(CUDA_ERROR_MAP_FAILED, cudaErrorMapBufferObjectFailed)                                             \
	X(CUDA_ERROR_UNMAP_FAILED, cudaErrorUnmapBufferObjectFailed)                                         \
	X(CUDA_ERROR_ARRAY_IS_MAPPED, cudaErrorArrayIsMapped)                                                \
	X(CUDA_ERROR_ALREADY_MAPPED, cudaErrorAlreadyMapped)                                                 \
	X(CUDA_ERROR_NO_BINARY_FOR_GPU, cudaErrorNoKernelImageForDevice)                                     \
	X(CUDA_ERROR_ALREADY_ACQUIRED, cudaErrorAlreadyAcquired)                                             \
	X(CUDA_ERROR_NOT_MAPPED, cudaErrorNotMapped)                                                         \
	X(CUDA_ERROR_NOT_MAPPED_AS_ARRAY, cudaErrorNotMappedAsArray)                                         \
	X(CUDA_ERROR_NOT_MAPPED_AS_POINTER, cudaErrorNotMappedAsPointer)                                     \
	X(CUDA_ERROR_ECC_UNCORRECTABLE, cudaErrorECCUncorrectable)                                           \
	X(CUDA_ERROR_UNSUPPORTED_LIMIT, cudaErrorUnsupportedLimit)                                           \
	X(CUDA_ERROR_CONTEXT_ALREADY_IN_USE, cudaErrorDeviceAlreadyInUse)                                    \
	X(CUDA_ERROR_PEER_ACCESS_UNSUPPORTED, cudaErrorPeerAccessUnsupported)                                \
	X(CUDA_ERROR_INVALID_PTX, cudaErrorInvalidPtx)                                                       \
	X(CUDA_ERROR_INVALID_GRAPHICS_CONTEXT, cudaErrorInvalidGraphicsContext)                              \
	X(CUDA_ERROR_NVLINK_UNCORRECTABLE, cudaErrorNvlinkUncorrectable)                                     \
	X(CUDA_ERROR_JIT_COMPILER_NOT_FOUND, cudaErrorJitCompilerNotFound)                                   \
	X(CUDA_ERROR_UNSUPPORTED_PTX_VERSION, cudaErrorUnsupportedPtxVersion)                                \
	X(CUDA_ERROR_JIT_COMPILATION_DISABLED, cudaErrorJitCompilationDisabled)                              \
	X(CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY, cudaErrorUnsupportedExecAffinity)                            \
	X(CUDA_ERROR_UNSUPPORTED_DEVSIDE_SYNC, cudaErrorUnsupportedDevSideSync)                              \
	X(CUDA_ERROR_CONTAINED, cudaErrorContained)                                                          \
	X(CUDA_ERROR_INVALID_SOURCE, cudaErrorInvalidSource)                                                 \
	X(CUDA_ERROR_FILE_NOT_FOUND, cudaErrorFileNotFound)                                                  \
	X(CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND, cudaErrorSharedObjectSymbolNotFound)                    \
	X(CUDA_ERROR_SHARED_OBJECT_INIT_FAILED, cudaErrorSharedObjectInitFailed)                             \
	X(CUDA_ERROR_OPERATING_SYSTEM, cudaErrorOperatingSystem)                                             \
	X(CUDA_ERROR_INVALID_HANDLE, cudaErrorInvalidResourceHandle)                                         \
	X(CUDA_ERROR_ILLEGAL_STATE, cudaErrorIllegalState)                                                   \
	X(CUDA_ERROR_LOSSY_QUERY, cudaErrorLossyQuery)                                                       \
	X(CUDA_ERROR_NOT_FOUND, cudaErrorSymbolNotFound)                                                     \
	X(CUDA_ERROR_NOT_READY, cudaErrorNotReady)                                                           \
	X(CUDA_ERROR_ILLEGAL_ADDRESS, cudaErrorIllegalAddress)                                               \
	X(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, cudaErrorLaunchOutOfResources)                                 \
	X(CUDA_ERROR_LAUNCH_TIMEOUT, cudaErrorLaunchTimeout)                                                 \
	X(CUDA_ERROR_LAUNCH_INCOMPATIBLE_TEXTURING, cudaErrorLaunchIncompatibleTexturing)                    \
	X(CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED, cudaErrorPeerAccessAlreadyEnabled)                         \
	X(CUDA_ERROR_PEER_ACCESS_NOT_ENABLED, cudaErrorPeerAccessNotEnabled)                                 \
	X(CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE, cudaErrorSetOnActiveProcess)                                    \
	X(CUDA_ERROR_CONTEXT_IS_DESTROYED, cudaErrorContextIsDestroyed)                                      \
	X(CUDA_ERROR_ASSERT, cudaErrorAssert)                                                                \
	X(CUDA_ERROR_TOO_MANY_PEERS, cudaErrorTooManyPeers)                                                  \
	X(CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED, cudaErrorHostMemoryAlreadyRegistered)                   \
	X(CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED, cudaErrorHostMemoryNotRegistered)                           \
	X(CUDA_ERROR_HARDWARE_STACK_ERROR, cudaErrorHardwareStackError)                                      \
	X(CUDA_ERROR_ILLEGAL_INSTRUCTION, cudaErrorIllegalInstruction)                                       \
	X(CUDA_ERROR_MISALIGNED_ADDRESS, cudaErrorMisalignedAddress)                                         \
	X(CUDA_ERROR_INVALID_ADDRESS_SPACE, cudaErrorInvalidAddressSpace)                                    \
	X(CUDA_ERROR_INVALID_PC, cudaErrorInvalidPc)                                                         \
	X(CUDA_ERROR_LAUNCH_FAILED, cudaErrorLaunchFailure)                                                  \
	X(CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE, cudaErrorCooperativeLaunchTooLarge)                       \
	X(CUDA_ERROR_TENSOR_MEMORY_LEAK, cudaErrorTensorMemoryLeak)                                          \
	X(CUDA_ERROR_NOT_PERMITTED, cudaErrorNotPermitted)                                                   \
	X(CUDA_ERROR_NOT_SUPPORTED, cudaErrorNotSupported)                                                   \
	X(CUDA_ERROR_SYSTEM_NOT_READY, cudaErrorSystemNotReady)                                              \
	X(CUDA_ERROR_SYSTEM_DRIVER_MISMATCH, cudaErrorSystemDriverMismatch)                                  \
	X(CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE, cudaErrorCompatNotSupportedOnDevice)                    \
	X(CUDA_ERROR_MPS_CONNECTION_FAILED, cudaErrorMpsConnectionFailed)                                    \
	X(CUDA_ERROR_MPS_RPC_FAILURE, cudaErrorMpsRpcFailure)                                                \
	X(CUDA_ERROR_MPS_SERVER_NOT_READY, cudaErrorMpsServerNotReady)                                       \
	X(CUDA_ERROR_MPS_MAX_CLIENTS_REACHED, cudaErrorMpsMaxClientsReached)                                 \
	X(CUDA_ERROR_MPS_MAX_CONNECTIONS_REACHED, cudaErrorMpsMaxConnectionsReached)                         \
	X(CUDA_ERROR_MPS_CLIENT_TERMINATED, cudaErrorMpsClientTerminated)                                    \
	X(CUDA_ERROR_CDP_NOT_SUPPORTED, cudaErrorCdpNotSupported)                                            \
	X(CUDA_ERROR_CDP_VERSION_MISMATCH, cudaErrorCdpVersionMismatch)                                      \
	X(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, cudaErrorStreamCaptureUnsupported)                          \
	X(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, cudaErrorStreamCaptureInvalidated)                          \
	X(CUDA_ERROR_STREAM_CAPTURE_MERGE, cudaErrorStreamCaptureMerge)                                      \
	X(CUDA_ERROR_STREAM_CAPTURE_UNMATCHED, cudaErrorStreamCaptureUnmatched)                              \
	X(CUDA_ERROR_STREAM_CAPTURE_UNJOINED, cudaErrorStreamCaptureUnjoined)                                \
	X(CUDA_ERROR_STREAM_CAPTURE_ISOLATION, cudaErrorStreamCaptureIsolation)                              \
	X(CUDA_ERROR_STREAM_CAPTURE_IMPLICIT, cudaErrorStreamCaptureImplicit)                                \
	X(CUDA_ERROR_CAPTURED_EVENT, cudaErrorCapturedEvent)                                                 \
	X(CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD, cudaErrorStreamCaptureWrongThread)                         \
	X(CUDA_ERROR_TIMEOUT, cudaErrorTimeout)                                                              \
	X(CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE, cudaErrorGraphExecUpdateFailure)                             \
	X(CUDA_ERROR_EXTERNAL_DEVICE, cudaErrorExternalDevice)                                               \
	X(CUDA_ERROR_INVALID_CLUSTER_SIZE, cudaErrorInvalidClusterSize)                                      \
	X(CUDA_ERROR_FUNCTION_NOT_LOADED, cudaErrorFunctionNotLoaded)                                        \
	X(CUDA_ERROR_INVALID_RESOURCE_TYPE, cudaErrorInvalidResourceType)                                    \
	X(CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION, cudaErrorInvalidResourceConfiguration)                  \
	X(CUDA_ERROR_KEY_ROTATION, cudaErrorUnknown)                                                         \
	X(CUDA_ERROR_UNKNOWN, cudaErrorUnknown)

int xgpu_cuerr_to_rt(int curesult)
{
	switch (curesult) {
#define XGPU_CU_CASE(cu, rt)                                                                                 \
	case cu:                                                                                             \
		return rt;
		XGPU_CU_TO_RT(XGPU_CU_CASE)
#undef XGPU_CU_CASE
	default:
		return cudaErrorUnknown;
	}
}

const char *xgpu_cuerr_name(int curesult)
{
	switch (curesult) {
#define XGPU_CU_NAME(cu, rt)                                                                                 \
	case cu:                                                                                             \
		return #cu;
		XGPU_CU_TO_RT(XGPU_CU_NAME)
#undef XGPU_CU_NAME
	default:
		return NULL;
	}
}

bool xgpu_cuerr_is_launch_failure(int curesult)
{
	switch (curesult) {
	case CUDA_ERROR_ILLEGAL_ADDRESS:
	case CUDA_ERROR_LAUNCH_TIMEOUT:
	case CUDA_ERROR_HARDWARE_STACK_ERROR:
	case CUDA_ERROR_ILLEGAL_INSTRUCTION:
	case CUDA_ERROR_MISALIGNED_ADDRESS:
	case CUDA_ERROR_INVALID_ADDRESS_SPACE:
	case CUDA_ERROR_INVALID_PC:
	case CUDA_ERROR_LAUNCH_FAILED:
	case CUDA_ERROR_ASSERT:
		return true;
	default:
		return false;
	}
}

const char *xgpu_rt_error_name(int error)
{
	switch (error) {
#define NAME(e)                                                                                              \
	case e:                                                                                              \
		return #e
		NAME(cudaErrorIllegalAddress);
		NAME(cudaErrorLaunchTimeout);
		NAME(cudaErrorHardwareStackError);
		NAME(cudaErrorIllegalInstruction);
		NAME(cudaErrorMisalignedAddress);
		NAME(cudaErrorInvalidAddressSpace);
		NAME(cudaErrorInvalidPc);
		NAME(cudaErrorLaunchFailure);
		NAME(cudaErrorECCUncorrectable);
		NAME(cudaErrorAssert);
		NAME(cudaErrorDevicesUnavailable);
#undef NAME
	default: {
		static _Thread_local char buf[32];
		snprintf(buf, sizeof buf, "cudaError %d", error);
		return buf;
	}
	}
}
