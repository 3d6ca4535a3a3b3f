/* cuerr.h - translation of CUDA driver results (CUresult) into the runtime
 * errors (cudaError_t) that the real libcudart reports for them. The backend
 * executes calls with the driver API and answers with runtime errors, so this
 * sits in common/ for both sides and the tests.
 */
#ifndef XGPU_CUERR_H
#define XGPU_CUERR_H

/* The cudaError_t value for a CUresult value; cudaErrorUnknown for values
 * that are not CUresult enumerators. */
int xgpu_cuerr_to_rt(int curesult);

#endif
