/* SPDX-License-Identifier: Apache-2.0 */
/* simkernel.h - host implementations of CUDA kernels for xgpu's simulated
 * driver (libxgpu-simdrv.so).
 *
 * A plugin is a shared object exporting `xgpu_simk_table`. When a module
 * loaded into the simulated driver contains a kernel whose mangled name
 * matches an entry, launching that kernel runs the entry's host function on
 * the simulated device's worker thread, in stream order, so programs compute
 * real results without a GPU. Kernels with no entry still occupy the device
 * for their modeled time but compute nothing (the driver logs this once per
 * kernel).
 *
 * The driver looks for plugins in the colon-separated list of files and
 * directories in $XGPU_SIM_KERNELS, then in the `simkernels` directory next to
 * libxgpu-simdrv.so. Every device address a host function touches must go
 * through map(), which checks that the whole range lies inside one live
 * allocation of the launching context, as the GPU's MMU would;
 * xgpu_simk_map() below wraps it with the alignment checks a GPU makes too.
 */
#ifndef XGPU_SIMKERNEL_H
#define XGPU_SIMKERNEL_H

#include <stdint.h>
#include <string.h>

#define XGPU_SIMK_ABI_VERSION 1u

/* CUresult values a host function returns. */
#define XGPU_SIMK_OK 0
#define XGPU_SIMK_ERR_INVALID_VALUE 1
#define XGPU_SIMK_ERR_ILLEGAL_ADDRESS 700
#define XGPU_SIMK_ERR_MISALIGNED_ADDRESS 716 /* CUDA_ERROR_MISALIGNED_ADDRESS */
#define XGPU_SIMK_ERR_TRAP 719               /* CUDA_ERROR_LAUNCH_FAILED: __trap(), assert() */

struct xgpu_simk_param {
	uint32_t offset;
	uint32_t size;
};

/* A texture or surface object as a host implementation sees it: the
 * elements' device address (read through map() like any other memory),
 * their layout and the sampling state. */
struct xgpu_simk_texture {
	uint64_t base;                 /* element (0, 0, 0) */
	uint64_t pitch;                /* bytes between rows */
	uint64_t slice;                /* bytes between slices */
	uint32_t width, height, depth; /* in elements; height, depth >= 1 */
	uint32_t format;               /* CUarray_format: CU_AD_FORMAT_FLOAT = 0x20, ... */
	uint32_t channels;
	uint32_t element_bytes;   /* every channel */
	uint32_t address_mode[3]; /* XGPU_SIMK_ADDRESS_* per dimension */
	uint32_t linear_filter;   /* 0: point sampling */
	uint32_t normalized;      /* coordinates in [0, 1) */
	float border[4];
};

#define XGPU_SIMK_ADDRESS_WRAP 0
#define XGPU_SIMK_ADDRESS_CLAMP 1
#define XGPU_SIMK_ADDRESS_MIRROR 2
#define XGPU_SIMK_ADDRESS_BORDER 3

struct xgpu_simk_launch {
	uint32_t grid[3];
	uint32_t block[3];
	uint32_t shared_bytes;
	const uint8_t *params; /* the kernel's parameter buffer */
	uint32_t param_bytes;
	const struct xgpu_simk_param *layout; /* from the module's fatbin, by ordinal */
	uint32_t nparams;
	/* Host address of device range [addr, addr + bytes) in the launching
	 * context, or NULL if the range is not inside one live allocation of it. */
	void *(*map)(const struct xgpu_simk_launch *l, uint64_t addr, uint64_t bytes);
	void *priv; /* the driver's */
	/* The texture (surface: 1) object a kernel parameter names, or -1 when
	 * obj is not a live object of that kind in the launching context. */
	int (*object)(const struct xgpu_simk_launch *l, uint64_t obj, int surface,
		      struct xgpu_simk_texture *out);
};

/* Runs the kernel; returns XGPU_SIMK_OK or a CUresult (a failed map() must
 * return XGPU_SIMK_ERR_ILLEGAL_ADDRESS, which makes the context's error sticky
 * as on a real GPU). */
typedef int (*xgpu_simk_run_fn)(const struct xgpu_simk_launch *l);
/* Modeled device time of one launch in nanoseconds; NULL selects the driver's
 * default model (proportional to the number of threads). A launch modeled to
 * take longer than the driver's watchdog (XGPU_SIM_WATCHDOG_MS, 10 s unless
 * set) occupies the device that long and then fails its context with
 * CUDA_ERROR_LAUNCH_TIMEOUT, as a GPU's watchdog does. */
typedef uint64_t (*xgpu_simk_cost_fn)(const struct xgpu_simk_launch *l);

struct xgpu_simk_kernel {
	const char *name; /* mangled, as it appears in the fatbin */
	xgpu_simk_run_fn run;
	xgpu_simk_cost_fn cost_ns;
};

struct xgpu_simk_table {
	uint32_t abi_version;
	uint32_t count;
	const struct xgpu_simk_kernel *kernels;
};

#define XGPU_SIMK_EXPORT(array)                                                                              \
	__attribute__((visibility("default"))) const struct xgpu_simk_table xgpu_simk_table = {              \
	    XGPU_SIMK_ABI_VERSION, (uint32_t)(sizeof(array) / sizeof((array)[0])), (array)}

/* Copies parameter i (exactly size bytes) out of the parameter buffer.
 * Returns 0, or -1 if the kernel has no such parameter or its size differs. */
static inline int xgpu_simk_param(const struct xgpu_simk_launch *l, uint32_t i, void *out, uint32_t size)
{
	if (i >= l->nparams || l->layout[i].size != size || l->layout[i].offset > l->param_bytes ||
	    size > l->param_bytes - l->layout[i].offset)
		return -1;
	memcpy(out, l->params + l->layout[i].offset, size);
	return 0;
}

/* Threads in the launch. The largest grid of the largest blocks has about
 * 2^73, more than 64 bits hold: the count saturates at UINT64_MAX instead of
 * wrapping to a small number (a cost model built on it then gives a huge
 * time, which the driver's watchdog cuts short, not a tiny one). */
static inline uint64_t xgpu_simk_threads(const struct xgpu_simk_launch *l)
{
	const uint32_t d[6] = {l->grid[0], l->grid[1], l->grid[2], l->block[0], l->block[1], l->block[2]};
	uint64_t t = 1;
	for (int i = 0; i < 6; i++) {
		if (d[i] && t > UINT64_MAX / d[i])
			return UINT64_MAX;
		t *= d[i];
	}
	return t;
}

/* Host view of device range [addr, addr + bytes) holding elements aligned to
 * align bytes (1 checks nothing), or the CUresult the access would fault
 * with on a GPU: XGPU_SIMK_ERR_ILLEGAL_ADDRESS when the range is not inside
 * one live allocation, XGPU_SIMK_ERR_MISALIGNED_ADDRESS when addr is not a
 * multiple of align. The host pointer is checked as well, so that the caller
 * can dereference it as an array of its element type without undefined
 * behaviour whatever map() returns. *out is set only on success. */
static inline int xgpu_simk_map(const struct xgpu_simk_launch *l, uint64_t addr, uint64_t bytes,
				uintptr_t align, void **out)
{
	/* Before map(): a misaligned access reports as misaligned whether or not
	 * its range is also unmapped, without a lookup in the driver. */
	if (addr % align)
		return XGPU_SIMK_ERR_MISALIGNED_ADDRESS;
	void *p = l->map(l, addr, bytes);
	if (!p)
		return XGPU_SIMK_ERR_ILLEGAL_ADDRESS;
	if ((uintptr_t)p % align)
		return XGPU_SIMK_ERR_MISALIGNED_ADDRESS;
	*out = p;
	return XGPU_SIMK_OK;
}

/* Elements [0, count) that a kernel indexing them the usual 1-D way,
 *   i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) ...
 * touches: min(gridDim.x * blockDim.x, n), and 0 for n <= 0. Blocks and
 * threads along y and z repeat the same i, so only the x extent counts. n is
 * signed and 64-bit so that callers can pass an int parameter or an
 * expression on one (n - 1) without it wrapping to a huge count. */
static inline uint64_t xgpu_simk_covered(const struct xgpu_simk_launch *l, int64_t n)
{
	if (n <= 0)
		return 0;
	/* at most (2^32 - 1)^2: no overflow in 64 bits */
	uint64_t threads_x = (uint64_t)l->grid[0] * l->block[0];
	return threads_x < (uint64_t)n ? threads_x : (uint64_t)n;
}

#endif
