/* SPDX-License-Identifier: Apache-2.0 */
/* driver.h - state the driver-API frontend's files share: initialisation,
 * contexts, the device description, and the translation between the wire's
 * results (cudaError_t numbers, see common/cuerr.c) and CUresult.
 *
 * The frontend keeps no remote state of its own beyond what the runtime
 * frontend keeps: a CUdeviceptr, CUstream, CUevent or CUfunction is the
 * daemon's handle on this process's one channel, the same channel our
 * libcudart.so.13 uses (it links the client from this library), so the two
 * APIs share one handle space as they do in NVIDIA's stack. */
#ifndef XGPU_DRV_DRIVER_H
#define XGPU_DRV_DRIVER_H

#include "client.h"
#include "proto.h"

#include <cuda.h>
#include <driver_types.h> /* cudaError_t: the wire's results */
#include <stdbool.h>
#include <stdint.h>

/* The driver API version we claim: CUDA 13.0, the toolkit the tables are
 * pinned to (cuda13.symbols, cuda13.procs). */
#define XGPU_DRV_VERSION 13000

/* CUresult for a cudaError_t number from the client or the daemon: the same
 * number wherever it is a CUresult (cuerr.c), else the closest driver error. */
CUresult xgpu_drv_result(int rt_error);

/* The channel, once cuInit succeeded; CUDA_ERROR_NOT_INITIALIZED before. */
CUresult xgpu_drv_client(struct xgpu_client **c);

/* The channel, for calls that also need a current context (CUDA requires
 * one for memory, modules, streams and launches). */
CUresult xgpu_drv_client_ctx(struct xgpu_client **c);

/* Reports an entry point xgpu does not implement, by name (once on stderr,
 * and to the daemon's log); returns CUDA_ERROR_NOT_SUPPORTED. */
int xgpu_drv_unsupported(const char *name);

/* The device description from DEVICE_INFO, fetched once per channel. */
CUresult xgpu_drv_devinfo(const struct xgpu_device_info **out);

/* CUstream <-> wire handle. NULL, CU_STREAM_LEGACY and CU_STREAM_PER_THREAD
 * all mean the channel's default stream. */
static inline xgpu_handle_t xgpu_drv_stream(CUstream s)
{
	uintptr_t v = (uintptr_t)s;
	return v <= 2 ? XGPU_STREAM_DEFAULT : (xgpu_handle_t)v;
}

/* The calling thread's current context, or NULL. */
CUcontext xgpu_drv_current_ctx(void);
bool xgpu_drv_ctx_valid(CUcontext ctx);
/* The device of a valid context; CUDA_ERROR_INVALID_CONTEXT otherwise. */
CUresult xgpu_drv_ctx_device(CUcontext ctx, CUdevice *dev);

/* dev's primary context, without retaining it (what NVIDIA's runtime asks
 * the private CUDART_INTERFACE table for, exptab.c). */
CUresult xgpu_drv_primary_ctx(CUdevice dev, CUcontext *pctx);

/* Drops the context-local storage of a context being destroyed (exptab.c). */
void xgpu_drv_cls_forget(CUcontext ctx);

/* Waits for the channel's work (cuCtxSynchronize and the synchronous copies
 * that follow launches). */
CUresult xgpu_drv_sync(struct xgpu_client *c);

/* Copies with a CUDA array on at least one side (array.c); the 2D forms
 * come as 3D ones of depth 1. */
CUresult xgpu_drv_array_copy3d(const CUDA_MEMCPY3D *p, CUstream stream, bool async);
/* count bytes at offset of array a, its rows taken end to end, to or from
 * host or device memory mem (type). */
CUresult xgpu_drv_array_linear(CUarray a, size_t offset, CUmemorytype type, uint64_t mem, size_t count,
			       bool to_array, CUstream stream, bool async);

/* A kernel launch in wire form (module.c): the daemon's function handle and
 * the parameter buffer laid out from kernelParams or extra, as cuLaunchKernel
 * sends them; params holds XGPU_MAX_PARAM_BYTES. */
CUresult xgpu_drv_kernel_wire(CUfunction func, const unsigned grid[3], const unsigned block[3],
			      unsigned shared, void **kernelParams, void **extra, xgpu_handle_t *remote,
			      uint8_t *params, uint32_t *len);

/* Graph nodes from wire form, for both frontends (graph.c). */
CUresult xgpu_graph_add_kernel(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, size_t ndeps,
			       xgpu_handle_t func, const uint32_t grid[3], const uint32_t block[3],
			       uint32_t shared, const void *params, uint32_t param_len);
CUresult xgpu_graph_add_copy(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, size_t ndeps,
			     bool dst_host, uint64_t dst, bool src_host, uint64_t src, uint64_t size);
CUresult xgpu_graph_exec_set_kernel(CUgraphExec hGraphExec, CUgraphNode node, xgpu_handle_t func,
				    const uint32_t grid[3], const uint32_t block[3], uint32_t shared,
				    const void *params, uint32_t param_len);
/* A host function (cuLaunchHostFunc, cudaLaunchHostFunc) on stream: a host
 * node of the capture when the stream is capturing (0, or a cudaError_t
 * number that invalidated the capture); -1 when it is not capturing, and the
 * caller enqueues it. Stream callbacks (cuStreamAddCallback) are not host
 * nodes: CUDA refuses them in a capture, as xgpu_graph_capture_refuse does. */
int xgpu_graph_capture_hostfn(xgpu_handle_t stream, void (*fn)(void *), void *user);
/* Whether stream is capturing: copies then go through the wire, where
 * capture sees them, rather than through a pinned segment. */
bool xgpu_graph_capturing(xgpu_handle_t stream);
/* A stream-ordered allocation or free on stream: a memory allocation or free
 * node of the capture when the stream is capturing (0, or a cudaError_t);
 * -1 when it is not, and the caller's pool serves it. The allocation's
 * memory is made at once (struct graph_mem in graph.c). */
int xgpu_graph_capture_alloc(xgpu_handle_t stream, uint64_t size, uint64_t *dptr);
int xgpu_graph_capture_free(xgpu_handle_t stream, uint64_t dptr);
/* Whether dptr is memory a graph's allocation node made and still holds:
 * a free by the program then leaves it to the graph (graph.c). */
bool xgpu_graph_mem_keep(CUdeviceptr dptr);
/* Work a capture cannot take on stream (a stream callback): if the stream
 * is capturing, the capture is invalidated and the answer is
 * cudaErrorStreamCaptureUnsupported (cudaErrorStreamCaptureInvalidated once it
 * already was); cudaSuccess otherwise. Also client.h's xgpu_hostfn_capture_hook. */
int xgpu_graph_capture_refuse(xgpu_handle_t stream);
/* Non-zero while our runtime calls the graph functions (api_graph.c): they
 * then need neither cuInit nor a current context, as in CUDA's runtime. */
extern _Thread_local int xgpu_graph_from_runtime;

#endif
