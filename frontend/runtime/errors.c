/* SPDX-License-Identifier: Apache-2.0 */
/* errors.c - cudaGetErrorName, cudaGetErrorString and the sticky-error set
 * for every enumerator of CUDA 13's enum cudaError (driver_types.h).
 *
 * The table is written by hand; each entry names its enumerator, so a typo or
 * an enumerator CUDA removes fails the build, and tests/unit/test_errors.c
 * parses driver_types.h to fail when CUDA adds one we do not name. The
 * descriptions are our own wording. Values outside the enum get the real
 * runtime's answer for them, "unrecognized error code", from both functions.
 */
#include "errors.h"

/* X(enumerator, description) for every enumerator of enum cudaError. */
#define XGPU_RT_ERRORS(X)                                                                                    \
	X(cudaSuccess, "the call succeeded")                                                                 \
	X(cudaErrorInvalidValue, "an argument is invalid or out of range")                                   \
	X(cudaErrorMemoryAllocation, "not enough memory to complete the allocation")                         \
	X(cudaErrorInitializationError, "the CUDA driver or runtime could not be initialized")               \
	X(cudaErrorCudartUnloading, "the CUDA runtime is shutting down")                                     \
	X(cudaErrorProfilerDisabled, "profiling is disabled because an external profiler is attached")       \
	X(cudaErrorProfilerNotInitialized, "the profiler was not initialized (deprecated)")                  \
	X(cudaErrorProfilerAlreadyStarted, "profiling was already started (deprecated)")                     \
	X(cudaErrorProfilerAlreadyStopped, "profiling was already stopped (deprecated)")                     \
	X(cudaErrorInvalidConfiguration, "the launch configuration is not valid for this device")            \
	X(cudaErrorInvalidPitchValue, "the pitch is larger than the device allows")                          \
	X(cudaErrorInvalidSymbol, "the symbol is not a valid device symbol")                                 \
	X(cudaErrorInvalidHostPointer, "the host pointer is not valid (deprecated)")                         \
	X(cudaErrorInvalidDevicePointer, "the device pointer is not valid (deprecated)")                     \
	X(cudaErrorInvalidTexture, "the texture is not valid")                                               \
	X(cudaErrorInvalidTextureBinding, "the texture binding is invalid")                                  \
	X(cudaErrorInvalidChannelDescriptor, "the channel format descriptor is not valid")                   \
	X(cudaErrorInvalidMemcpyDirection, "the copy direction is not a cudaMemcpyKind")                     \
	X(cudaErrorAddressOfConstant, "took the address of a constant variable (deprecated)")                \
	X(cudaErrorTextureFetchFailed, "a texture fetch could not be performed (deprecated)")                \
	X(cudaErrorTextureNotBound, "the texture is not bound for access (deprecated)")                      \
	X(cudaErrorSynchronizationError, "a thread synchronization failed (deprecated)")                     \
	X(cudaErrorInvalidFilterSetting, "linear filtering is not supported for this format")                \
	X(cudaErrorInvalidNormSetting, "normalized reads are not supported for this format")                 \
	X(cudaErrorMixedDeviceExecution, "emulation and device execution were mixed (deprecated)")           \
	X(cudaErrorNotYetImplemented, "the call is not implemented (deprecated)")                            \
	X(cudaErrorMemoryValueTooLarge, "a size or pointer does not fit in 32 bits (deprecated)")            \
	X(cudaErrorStubLibrary, "the CUDA driver found is a stub, not the real driver")                      \
	X(cudaErrorInsufficientDriver, "the installed CUDA driver is older than this runtime")               \
	X(cudaErrorCallRequiresNewerDriver, "this call needs a newer CUDA driver")                           \
	X(cudaErrorInvalidSurface, "the surface is not valid")                                               \
	X(cudaErrorDuplicateVariableName, "two global variables share the same name")                        \
	X(cudaErrorDuplicateTextureName, "two textures share the same name")                                 \
	X(cudaErrorDuplicateSurfaceName, "two surfaces share the same name")                                 \
	X(cudaErrorDevicesUnavailable, "every CUDA device is busy or unavailable")                           \
	X(cudaErrorIncompatibleDriverContext, "the current driver context cannot be used by the runtime")    \
	X(cudaErrorMissingConfiguration, "the kernel launch has no configuration")                           \
	X(cudaErrorPriorLaunchFailure, "an earlier kernel launch failed (deprecated)")                       \
	X(cudaErrorLaunchMaxDepthExceeded, "the nested launch exceeds the maximum depth")                    \
	X(cudaErrorLaunchFileScopedTex, "the kernel uses file-scoped textures, which are unsupported")       \
	X(cudaErrorLaunchFileScopedSurf, "the kernel uses file-scoped surfaces, which are unsupported")      \
	X(cudaErrorSyncDepthExceeded, "device-side synchronization is nested too deeply")                    \
	X(cudaErrorLaunchPendingCountExceeded, "too many device-side launches are pending")                  \
	X(cudaErrorInvalidDeviceFunction, "the device function is missing or built for another GPU")         \
	X(cudaErrorNoDevice, "no CUDA device was found")                                                     \
	X(cudaErrorInvalidDevice, "the device ordinal does not name a CUDA device")                          \
	X(cudaErrorDeviceNotLicensed, "the device has no valid license")                                     \
	X(cudaErrorSoftwareValidityNotEstablished, "the runtime failed its integrity self-checks")           \
	X(cudaErrorStartupFailure, "the CUDA runtime failed to start")                                       \
	X(cudaErrorInvalidKernelImage, "the kernel image is not valid")                                      \
	X(cudaErrorDeviceUninitialized, "there is no valid context for this call")                           \
	X(cudaErrorMapBufferObjectFailed, "mapping the buffer object failed")                                \
	X(cudaErrorUnmapBufferObjectFailed, "unmapping the buffer object failed")                            \
	X(cudaErrorArrayIsMapped, "the array is mapped and cannot be destroyed")                             \
	X(cudaErrorAlreadyMapped, "the resource is mapped already")                                          \
	X(cudaErrorNoKernelImageForDevice, "no kernel image in the binary runs on this device")              \
	X(cudaErrorAlreadyAcquired, "the resource is already acquired")                                      \
	X(cudaErrorNotMapped, "the resource is not mapped")                                                  \
	X(cudaErrorNotMappedAsArray, "the resource is not mapped as an array")                               \
	X(cudaErrorNotMappedAsPointer, "the resource is not mapped as a pointer")                            \
	X(cudaErrorECCUncorrectable, "the device detected an uncorrectable ECC error")                       \
	X(cudaErrorUnsupportedLimit, "this device does not support that limit")                              \
	X(cudaErrorDeviceAlreadyInUse, "another thread already uses this exclusive device")                  \
	X(cudaErrorPeerAccessUnsupported, "these two devices cannot access each other's memory")             \
	X(cudaErrorInvalidPtx, "compiling the PTX failed")                                                   \
	X(cudaErrorInvalidGraphicsContext, "the OpenGL or DirectX context is not valid")                     \
	X(cudaErrorNvlinkUncorrectable, "an uncorrectable NVLink error occurred")                            \
	X(cudaErrorJitCompilerNotFound, "the PTX JIT compiler library is missing")                           \
	X(cudaErrorUnsupportedPtxVersion, "the PTX was built by an unsupported toolchain")                   \
	X(cudaErrorJitCompilationDisabled, "PTX JIT compilation is disabled")                                \
	X(cudaErrorUnsupportedExecAffinity, "the execution affinity is not supported")                       \
	X(cudaErrorUnsupportedDevSideSync, "the PTX calls cudaDeviceSynchronize from device code")           \
	X(cudaErrorContained, "the GPU contained a device exception; the process must restart")              \
	X(cudaErrorInvalidSource, "the device kernel source is not valid")                                   \
	X(cudaErrorFileNotFound, "the file was not found")                                                   \
	X(cudaErrorSharedObjectSymbolNotFound, "a shared object symbol could not be resolved")               \
	X(cudaErrorSharedObjectInitFailed, "a shared object failed to initialize")                           \
	X(cudaErrorOperatingSystem, "an operating system call failed")                                       \
	X(cudaErrorInvalidResourceHandle, "the resource handle is not valid")                                \
	X(cudaErrorIllegalState, "the call is not allowed in the current state")                             \
	X(cudaErrorLossyQuery, "the query would lose information")                                           \
	X(cudaErrorSymbolNotFound, "the named symbol was not found")                                         \
	X(cudaErrorNotReady, "the asynchronous work has not completed yet")                                  \
	X(cudaErrorIllegalAddress, "the kernel accessed an illegal memory address")                          \
	X(cudaErrorLaunchOutOfResources, "the launch needs more resources than the device has")              \
	X(cudaErrorLaunchTimeout, "the kernel ran too long and was stopped")                                 \
	X(cudaErrorLaunchIncompatibleTexturing, "the launch uses an incompatible texturing mode")            \
	X(cudaErrorPeerAccessAlreadyEnabled, "peer access between these devices is already on")              \
	X(cudaErrorPeerAccessNotEnabled, "peer access was never enabled")                                    \
	X(cudaErrorSetOnActiveProcess, "the setting cannot change while the device is active")               \
	X(cudaErrorContextIsDestroyed, "the current context was destroyed or not yet initialized")           \
	X(cudaErrorAssert, "an assertion failed in device code")                                             \
	X(cudaErrorTooManyPeers, "no more peer mappings are available")                                      \
	X(cudaErrorHostMemoryAlreadyRegistered, "the host memory range is already registered")               \
	X(cudaErrorHostMemoryNotRegistered, "the host pointer is not in a registered range")                 \
	X(cudaErrorHardwareStackError, "a device thread overflowed or corrupted its stack")                  \
	X(cudaErrorIllegalInstruction, "the kernel executed an illegal instruction")                         \
	X(cudaErrorMisalignedAddress, "the kernel accessed a misaligned address")                            \
	X(cudaErrorInvalidAddressSpace, "the kernel used an address in the wrong address space")             \
	X(cudaErrorInvalidPc, "the kernel jumped to an invalid program counter")                             \
	X(cudaErrorLaunchFailure, "the kernel failed for an unspecified reason")                             \
	X(cudaErrorCooperativeLaunchTooLarge, "the cooperative launch has more blocks than fit at once")     \
	X(cudaErrorTensorMemoryLeak, "the kernel exited without freeing its tensor memory")                  \
	X(cudaErrorNotPermitted, "this operation is not permitted")                                          \
	X(cudaErrorNotSupported, "the operation is not supported")                                           \
	X(cudaErrorSystemNotReady, "the system is not ready for CUDA work")                                  \
	X(cudaErrorSystemDriverMismatch, "the display driver and CUDA driver versions do not match")         \
	X(cudaErrorCompatNotSupportedOnDevice, "forward compatibility is not supported on this device")      \
	X(cudaErrorMpsConnectionFailed, "could not connect to the MPS control daemon or server")             \
	X(cudaErrorMpsRpcFailure, "a call between the MPS client and server failed")                         \
	X(cudaErrorMpsServerNotReady, "the MPS server is not ready for new clients")                         \
	X(cudaErrorMpsMaxClientsReached, "the MPS server has no room for another client")                    \
	X(cudaErrorMpsMaxConnectionsReached, "the MPS server has no room for another device connection")     \
	X(cudaErrorMpsClientTerminated, "the MPS server terminated this client")                             \
	X(cudaErrorCdpNotSupported, "dynamic parallelism is not supported in this configuration")            \
	X(cudaErrorCdpVersionMismatch, "mixed dynamic parallelism versions cannot interact")                 \
	X(cudaErrorStreamCaptureUnsupported, "the operation is not allowed while the stream is capturing")   \
	X(cudaErrorStreamCaptureInvalidated, "the stream capture was invalidated by an earlier error")       \
	X(cudaErrorStreamCaptureMerge, "the operation would merge two separate captures")                    \
	X(cudaErrorStreamCaptureUnmatched, "the capture did not end in the stream that began it")            \
	X(cudaErrorStreamCaptureUnjoined, "the capture forked work that was never joined back")              \
	X(cudaErrorStreamCaptureIsolation, "the capture would depend on work outside it")                    \
	X(cudaErrorStreamCaptureImplicit, "the operation would implicitly sync with a capturing stream")     \
	X(cudaErrorCapturedEvent, "the event was last recorded in a capturing stream")                       \
	X(cudaErrorStreamCaptureWrongThread, "the capture must end in the thread that began it")             \
	X(cudaErrorTimeout, "the wait timed out")                                                            \
	X(cudaErrorGraphExecUpdateFailure, "the graph update breaks the rules for instantiated graphs")      \
	X(cudaErrorExternalDevice, "an external device reported an asynchronous error")                      \
	X(cudaErrorInvalidClusterSize, "the cluster configuration of the launch is not valid")               \
	X(cudaErrorFunctionNotLoaded, "the function is not loaded")                                          \
	X(cudaErrorInvalidResourceType, "a resource has the wrong type for this operation")                  \
	X(cudaErrorInvalidResourceConfiguration, "a resource is insufficient or unsuitable")                 \
	X(cudaErrorUnknown, "an unknown internal error occurred")                                            \
	X(cudaErrorApiFailureBase, "base of unmapped driver errors (deprecated)")

#define XGPU_CASE_NAME(name, desc)                                                                           \
	case name:                                                                                           \
		return #name;
#define XGPU_CASE_DESC(name, desc)                                                                           \
	case name:                                                                                           \
		return desc;

/* Both switches keep a default label so that the build keeps working when a
 * newer CUDA adds an enumerator; test_errors reports the gap instead. */
const char *cudaGetErrorName(cudaError_t error)
{
	switch (error) {
		XGPU_RT_ERRORS(XGPU_CASE_NAME)
	default:
		return XGPU_RT_UNRECOGNIZED_ERROR;
	}
}

const char *cudaGetErrorString(cudaError_t error)
{
	switch (error) {
		XGPU_RT_ERRORS(XGPU_CASE_DESC)
	default:
		return XGPU_RT_UNRECOGNIZED_ERROR;
	}
}

bool xgpu_rt_error_is_sticky(cudaError_t error)
{
	switch (error) {
	/* Documented as "the process must be terminated and relaunched". */
	case cudaErrorContained:
	case cudaErrorIllegalAddress:
	case cudaErrorLaunchTimeout:
	case cudaErrorAssert:
	case cudaErrorHardwareStackError:
	case cudaErrorIllegalInstruction:
	case cudaErrorMisalignedAddress:
	case cudaErrorInvalidAddressSpace:
	case cudaErrorInvalidPc:
	case cudaErrorLaunchFailure:
	case cudaErrorTensorMemoryLeak:
	case cudaErrorMpsClientTerminated:
	case cudaErrorExternalDevice:
	/* Hardware faults during execution: the context's memory can no longer
	 * be trusted, so treat them as fatal to it too. */
	case cudaErrorECCUncorrectable:
	case cudaErrorNvlinkUncorrectable:
		return true;
	default:
		return false;
	}
}
