/* SPDX-License-Identifier: Apache-2.0 */
/* simkernels.c - host implementations of callLatency.cu's kernels for the
 * simulated driver, and their modeled H100 device time.
 *
 * __global__ void emptyKernel()          _Z11emptyKernelv: no parameters; 0 bytes.
 * __global__ void bump(unsigned *count)  _Z4bumpPj: count @0 (8); 8 bytes.
 *   Every thread atomically adds 1 to *count.
 */
#include "simdrv/simkernel.h"

#include <stdint.h>

/* Device time of an empty launch on an H100 (the launch's fixed cost), and
 * how fast the block scheduler retires threads that do little. */
#define LAUNCH_NS 3000u
#define THREADS_PER_NS 500u
/* Atomics to one address serialize in L2: about one per ns. */
#define SAME_ADDRESS_ATOMICS_PER_NS 1u

static int empty_kernel(const struct xgpu_simk_launch *l)
{
	(void)l;
	return XGPU_SIMK_OK;
}

static uint64_t empty_kernel_cost(const struct xgpu_simk_launch *l)
{
	return LAUNCH_NS + xgpu_simk_threads(l) / THREADS_PER_NS;
}

static int bump(const struct xgpu_simk_launch *l)
{
	uint64_t addr;
	if (xgpu_simk_param(l, 0, &addr, 8))
		return XGPU_SIMK_ERR_INVALID_VALUE;
	uint64_t threads = xgpu_simk_threads(l);
	if (!threads)
		return XGPU_SIMK_OK;
	/* Not xgpu_simk_map(): that would also fail a host mapping that is
	 * misaligned, which this kernel tolerates by reading and writing the
	 * counter with memcpy; only the device address must be aligned. */
	if (addr % sizeof(uint32_t))
		return XGPU_SIMK_ERR_MISALIGNED_ADDRESS;
	uint8_t *count = l->map(l, addr, sizeof(uint32_t));
	if (!count)
		return XGPU_SIMK_ERR_ILLEGAL_ADDRESS;
	uint32_t v;
	memcpy(&v, count, sizeof(v)); /* whatever the host mapping's alignment */
	v += (uint32_t)threads;       /* wraps modulo 2^32 as the device's atomicAdd does */
	memcpy(count, &v, sizeof(v));
	return XGPU_SIMK_OK;
}

static uint64_t bump_cost(const struct xgpu_simk_launch *l)
{
	return LAUNCH_NS + xgpu_simk_threads(l) / SAME_ADDRESS_ATOMICS_PER_NS;
}

static const struct xgpu_simk_kernel kernels[] = {
    {"_Z11emptyKernelv", empty_kernel, empty_kernel_cost},
    {"_Z4bumpPj", bump, bump_cost},
};

XGPU_SIMK_EXPORT(kernels);
