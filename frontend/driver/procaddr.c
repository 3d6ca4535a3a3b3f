/* SPDX-License-Identifier: Apache-2.0 */
/* procaddr.c - how programs find the driver's entry points without naming
 * them at link time: cuGetProcAddress (by name, CUDA version and stream
 * flavour, from the table tools/gen-cuda-stubs.sh generates out of
 * cuda13.procs) and the report of unimplemented ones; cuGetExportTable is
 * in exptab.c. */
#include "cuerr.h"
#include "driver.h"
#include "procs.h"

#include <stdio.h>
#include <string.h>

int xgpu_drv_unsupported(const char *name)
{
	xgpu_client_note_unsupported(name, "CUDA_ERROR_NOT_SUPPORTED");
	return CUDA_ERROR_NOT_SUPPORTED;
}

/* The first row for name in the sorted table, or -1. */
static int first_row(const char *name)
{
	int lo = 0, hi = (int)xgpu_drv_nprocs;
	while (lo < hi) {
		int mid = lo + (hi - lo) / 2;
		if (strcmp(xgpu_drv_procs[mid].name, name) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < (int)xgpu_drv_nprocs && !strcmp(xgpu_drv_procs[lo].name, name) ? lo : -1;
}

/* Resolves symbol as a program built for cudaVersion sees it: the newest ABI
 * introduced at or before that version, in its per-thread-default-stream
 * form when flags ask for one and it has one. */
static CUresult lookup(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
		       CUdriverProcAddressQueryResult *status)
{
	CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
	/* cuda.h: a symbol that is not found, or has no ABI for cudaVersion, is
	 * CUDA_SUCCESS with *pfn NULL, and the status says which; a version newer
	 * than this driver's is CUDA_ERROR_INVALID_VALUE. NVIDIA's runtime passes
	 * the result on from cudaGetDriverEntryPoint. */
	CUresult r = CUDA_SUCCESS;
	if (!symbol || !pfn ||
	    (flags & ~(cuuint64_t)(CU_GET_PROC_ADDRESS_LEGACY_STREAM |
				   CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM))) {
		r = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	*pfn = NULL;
	if (cudaVersion > XGPU_DRV_VERSION) {
		r = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	int row = first_row(symbol);
	if (row < 0)
		goto out;
	const struct xgpu_drv_proc *best = NULL;
	for (unsigned i = (unsigned)row; i < xgpu_drv_nprocs && !strcmp(xgpu_drv_procs[i].name, symbol); i++)
		if (xgpu_drv_procs[i].version <= cudaVersion)
			best = &xgpu_drv_procs[i];
	if (!best) {
		st = CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
		goto out;
	}
	bool per_thread = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) && best->per_thread;
	*pfn = (void *)(per_thread ? best->per_thread : best->fn);
	st = CU_GET_PROC_ADDRESS_SUCCESS;
out:
	if (status)
		*status = st;
	return r;
}

CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
			  CUdriverProcAddressQueryResult *symbolStatus)
{
	return lookup(symbol, pfn, cudaVersion, flags, symbolStatus);
}

/* CUDA 11.3's form, without the status. */
#undef cuGetProcAddress
CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags);
CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags)
{
	return lookup(symbol, pfn, cudaVersion, flags, NULL);
}

/* ---- error descriptions ------------------------------------------------- */

/* The runtime's description of the same number (frontend/runtime/errors.c, linked
 * into this library too): CUDA 13 numbers both APIs' errors alike. */
const char *cudaGetErrorString(cudaError_t error);

CUresult cuGetErrorName(CUresult error, const char **pStr)
{
	if (!pStr)
		return CUDA_ERROR_INVALID_VALUE;
	*pStr = xgpu_cuerr_name((int)error);
	return *pStr ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuGetErrorString(CUresult error, const char **pStr)
{
	if (!pStr)
		return CUDA_ERROR_INVALID_VALUE;
	const char *name = xgpu_cuerr_name((int)error);
	if (!name) {
		*pStr = NULL;
		return CUDA_ERROR_INVALID_VALUE;
	}
	/* Two CUresults have no runtime twin (cuerr.c); their name says it. */
	*pStr = xgpu_cuerr_to_rt((int)error) == (int)error ? cudaGetErrorString((cudaError_t)error) : name;
	return CUDA_SUCCESS;
}
