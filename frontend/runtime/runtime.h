/* SPDX-License-Identifier: Apache-2.0 */
/* runtime.h - state the frontend's runtime API files share: CUDA's
 * per-thread error semantics, the device description cache, host-side
 * shadows of the process's device allocations and pinned segments (so
 * cudaMemcpyDefault and cudaPointerGetAttributes need no round trip), and
 * handle conversions. */
#ifndef XGPU_FE_RUNTIME_H
#define XGPU_FE_RUNTIME_H

#include "client.h"
#include "proto.h"

#include <cuda_runtime_api.h>
#include <stdbool.h>
#include <stdint.h>

#define XGPU_EXPORT __attribute__((visibility("default")))

/* Records err as the calling thread's last error (CUDA does not record
 * cudaSuccess or cudaErrorNotReady) and returns it. */
cudaError_t xgpu_rt_ret(cudaError_t err);

/* The connected client, or the (recorded) reason there is none. The first
 * call on a thread (and after cudaDeviceReset) also makes device 0's
 * primary context current there, as NVIDIA's runtime does. */
cudaError_t xgpu_rt_client(struct xgpu_client **c);

/* Makes the primary context current on this thread (force: even over a
 * context the thread made current itself; cudaSetDevice). Not recorded. */
cudaError_t xgpu_rt_primary_current(bool force);
/* cudaDeviceReset: releases the runtime's retain of the primary context. */
void xgpu_rt_primary_release(void);

/* Remote handles (modules, functions, globals) belong to one channel; this
 * changes in a forked child and on cudaDeviceReset, so cached handles from
 * an older epoch are stale. */
unsigned xgpu_rt_epoch(void);
void xgpu_rt_new_epoch(void);

/* The device description from DEVICE_INFO, fetched once. */
cudaError_t xgpu_rt_devinfo(const struct xgpu_device_info **out);

/* cudaStream_t <-> wire handle. NULL, cudaStreamLegacy and
 * cudaStreamPerThread all mean the legacy default stream here. */
static inline xgpu_handle_t xgpu_rt_stream(cudaStream_t s)
{
	uintptr_t v = (uintptr_t)s;
	return v <= 2 ? XGPU_STREAM_DEFAULT : (xgpu_handle_t)v;
}

/* Host-side shadow of device allocations (including module globals whose
 * address the program asked for). */
void xgpu_rt_devmem_add(uint64_t base, uint64_t size);
void xgpu_rt_devmem_del(uint64_t base);
bool xgpu_rt_devmem_find(uint64_t addr, uint64_t *base, uint64_t *size);
void xgpu_rt_devmem_clear(void);

/* Pinned host segments: memory shared with the backend. */
struct xgpu_rt_seg {
	void *ptr;
	uint64_t size;
	xgpu_handle_t handle; /* 0 when not registered in the current epoch */
	unsigned epoch;
	unsigned flags; /* cudaHostAlloc flags */
};
/* The segment wholly containing [p, p + len) with a live registration, copied
 * into *out; false if none. */
bool xgpu_rt_seg_find(const void *p, uint64_t len, struct xgpu_rt_seg *out);

/* Copies between host and device, choosing the zero-copy path for pinned
 * segments and the data areas otherwise. kind is resolved (no Default). */
cudaError_t xgpu_rt_memcpy(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind,
			   cudaStream_t stream, bool async);

/* A kernel launch in wire form (registry.c), for graph kernel nodes: the
 * daemon's function handle and the laid-out parameters (params holds
 * XGPU_MAX_PARAM_BYTES). */
cudaError_t xgpu_rt_kernel_wire(const void *func, dim3 grid, dim3 block, void **args, size_t shared,
				xgpu_handle_t *remote, uint8_t *params, uint32_t *len);

/* Whether stream is capturing (our libcuda.so.1, frontend/driver/graph.c). */
bool xgpu_graph_capturing(xgpu_handle_t stream);
/* A host function on a capturing stream becomes a host node (driver.h). */
int xgpu_graph_capture_hostfn(xgpu_handle_t stream, void (*fn)(void *), void *user);

/* Reports a runtime function xgpu does not implement; returns
 * cudaErrorNotSupported (recorded). */
cudaError_t xgpu_unsupported(const char *name);

#endif
