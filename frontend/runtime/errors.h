/* SPDX-License-Identifier: Apache-2.0 */
/* errors.h - the frontend's cudaError_t knowledge: the exported
 * cudaGetErrorName/cudaGetErrorString (declared by cuda_runtime_api.h, defined
 * in errors.c) and which errors leave a context unusable ("sticky").
 */
#ifndef XGPU_FRONTEND_ERRORS_H
#define XGPU_FRONTEND_ERRORS_H

#include <stdbool.h>

#include <cuda_runtime_api.h>

/* What the real runtime returns, from both functions, for a value that is not
 * an enumerator of enum cudaError. */
#define XGPU_RT_UNRECOGNIZED_ERROR "unrecognized error code"

/* True for the errors after which the CUDA context is corrupt and every later
 * call in the process fails the same way (the header documents these as
 * needing the process to be terminated and relaunched), plus uncorrectable
 * ECC/NVLink faults, which leave device memory in an unknown state. */
bool xgpu_rt_error_is_sticky(cudaError_t error);

#endif
