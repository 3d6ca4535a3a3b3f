/* SPDX-License-Identifier: Apache-2.0 */
/* devprop.h - cudaGetDeviceProperties and cudaDeviceGetAttribute answers
 * built from what the daemon's DEVICE_INFO reply carries: the device blob
 * (name, uuid, total memory) and the driver's attribute values indexed by
 * CUdevice_attribute number.
 */
#ifndef XGPU_FRONTEND_DEVPROP_H
#define XGPU_FRONTEND_DEVPROP_H

#include <stdint.h>

#include <driver_types.h>

#include "proto.h"

/* Fills every field of *p. attrs[i] is the value of CUdevice_attribute i;
 * attributes at or beyond nattrs read as 0 (attrs may be NULL when nattrs is
 * 0). */
void xgpu_devprop_fill(struct cudaDeviceProp *p, const struct xgpu_device_blob *b, const int32_t *attrs,
		       uint32_t nattrs);

/* cudaDeviceGetAttribute for a cudaDeviceAttr (equal to its
 * CUdevice_attribute number). Returns cudaSuccess and sets *value, or
 * cudaErrorInvalidValue for a number that names no attribute or a NULL value.
 * An attribute the daemon did not report (>= nattrs) reads as 0. */
int xgpu_devattr_lookup(int cuda_device_attr, const int32_t *attrs, uint32_t nattrs, int *value);

/* What NVIDIA's driver decides about a launch configuration, checked before
 * anything is sent: cudaErrorInvalidValue (CUDA 13's runtime and driver both
 * answer that, seen on an H100 with driver 580; docs/results/gpu-validation)
 * when a grid or block dimension is 0 or
 * over the device's maximum, the block has more threads than the device's
 * maxThreadsPerBlock, or the dynamic shared memory exceeds what any kernel
 * may opt in to (sharedMemPerBlockOptin); cudaSuccess otherwise. Limits the
 * kernel itself sets (registers, __launch_bounds__, its maximum dynamic
 * shared size) are the driver's to check. A limit the daemon did not report
 * (0 or beyond nattrs) is not checked here. */
int xgpu_launch_config_check(const int32_t *attrs, uint32_t nattrs, const uint32_t grid[3],
			     const uint32_t block[3], uint64_t shared_bytes);

#endif
