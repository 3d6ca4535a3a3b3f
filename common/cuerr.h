/* SPDX-License-Identifier: Apache-2.0 */
/* cuerr.h - translation of CUDA driver results (CUresult) into the runtime
 * errors (cudaError_t) that the real libcudart reports for them. The backend
 * executes calls with the driver API and answers with runtime errors, so this
 * sits in common/ for both sides and the tests.
 */
#ifndef XGPU_CUERR_H
#define XGPU_CUERR_H

#include <stdbool.h>

/* The cudaError_t value for a CUresult value; cudaErrorUnknown for values
 * that are not CUresult enumerators. */
int xgpu_cuerr_to_rt(int curesult);

/* The enumerator's name ("CUDA_ERROR_INVALID_VALUE") for a CUresult value,
 * or NULL for values that are not CUresult enumerators: cuGetErrorName. */
const char *xgpu_cuerr_name(int curesult);

/* Whether curesult is one a kernel fails with when it faults on the device
 * (CUDA_ERROR_ILLEGAL_ADDRESS, _LAUNCH_TIMEOUT, _HARDWARE_STACK_ERROR,
 * _ILLEGAL_INSTRUCTION, _MISALIGNED_ADDRESS, _INVALID_ADDRESS_SPACE,
 * _INVALID_PC, _LAUNCH_FAILED, and _ASSERT for a failed device assert),
 * after which its context is unusable. Shared
 * so that the simulated driver, which picks the error a failed kernel
 * reports, and xgpud, which takes such errors as a context's sticky one,
 * agree on the set. */
bool xgpu_cuerr_is_launch_failure(int curesult);

/* The runtime's name for the errors a context's end can give its processes
 * ("cudaErrorIllegalAddress"), or "cudaError N" for others; never NULL. */
const char *xgpu_rt_error_name(int error);

#endif
