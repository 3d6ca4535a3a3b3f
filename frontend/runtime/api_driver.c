/* SPDX-License-Identifier: Apache-2.0 */
/* api_driver.c - the runtime's door to the driver API:
 * cudaGetDriverEntryPoint(ByVersion) answer with xgpu's own libcuda.so.1
 * entry points (cuGetProcAddress there), which share this runtime's channel,
 * so a program may mix both APIs on the same memory, streams and events. */
#include "runtime.h"

#include <cuda.h>

XGPU_EXPORT cudaError_t cudaGetDriverEntryPointByVersion(const char *symbol, void **funcPtr,
							 unsigned int cudaVersion, unsigned long long flags,
							 enum cudaDriverEntryPointQueryResult *driverStatus)
{
	if (!symbol || !funcPtr || cudaVersion > CUDART_VERSION)
		return xgpu_rt_ret(cudaErrorInvalidValue);
	CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
	/* The flags' values are the driver's (cudaEnable* = CU_GET_PROC_ADDRESS_*). */
	CUresult r = cuGetProcAddress_v2(symbol, funcPtr, (int)cudaVersion, flags, &st);
	if (r == CUDA_ERROR_INVALID_VALUE)
		return xgpu_rt_ret(cudaErrorInvalidValue);
	if (r != CUDA_SUCCESS)
		*funcPtr = NULL;
	if (driverStatus)
		*driverStatus = (enum cudaDriverEntryPointQueryResult)st;
	/* A symbol not found is an answer, not an error (the header's contract). */
	return cudaSuccess;
}

XGPU_EXPORT cudaError_t cudaGetDriverEntryPointByVersion_ptsz(
    const char *symbol, void **funcPtr, unsigned int cudaVersion, unsigned long long flags,
    enum cudaDriverEntryPointQueryResult *driverStatus)
{
	return cudaGetDriverEntryPointByVersion(symbol, funcPtr, cudaVersion, flags, driverStatus);
}

XGPU_EXPORT cudaError_t cudaGetDriverEntryPoint(const char *symbol, void **funcPtr, unsigned long long flags,
						enum cudaDriverEntryPointQueryResult *driverStatus)
{
	return cudaGetDriverEntryPointByVersion(symbol, funcPtr, CUDART_VERSION, flags, driverStatus);
}

XGPU_EXPORT cudaError_t cudaGetDriverEntryPoint_ptsz(const char *symbol, void **funcPtr,
						     unsigned long long flags,
						     enum cudaDriverEntryPointQueryResult *driverStatus)
{
	return cudaGetDriverEntryPointByVersion(symbol, funcPtr, CUDART_VERSION, flags, driverStatus);
}
