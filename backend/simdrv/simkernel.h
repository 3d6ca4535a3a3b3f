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

/* One texel coordinate after addressing, or -1 for the border. */
static inline int64_t xgpu_simk__address(int64_t i, uint32_t n, uint32_t mode)
{
	if (i >= 0 && i < (int64_t)n)
		return i;
	switch (mode) {
	case XGPU_SIMK_ADDRESS_WRAP:
		return ((i % (int64_t)n) + n) % n;
	case XGPU_SIMK_ADDRESS_MIRROR: {
		int64_t period = 2 * (int64_t)n, m = ((i % period) + period) % period;
		return m < n ? m : period - 1 - m;
	}
	case XGPU_SIMK_ADDRESS_BORDER:
		return -1;
	default:
		return i < 0 ? 0 : (int64_t)n - 1;
	}
}

/* Texel (i, j) of a one-channel float texture after addressing. */
static inline int xgpu_simk__texel(const struct xgpu_simk_launch *l, const struct xgpu_simk_texture *t,
				   int64_t i, int64_t j, float *out)
{
	i = xgpu_simk__address(i, t->width, t->address_mode[0]);
	j = xgpu_simk__address(j, t->height, t->address_mode[1]);
	if (i < 0 || j < 0) {
		*out = t->border[0];
		return XGPU_SIMK_OK;
	}
	void *p;
	int r = xgpu_simk_map(l, t->base + (uint64_t)j * t->pitch + (uint64_t)i * 4, 4, 4, &p);
	if (!r)
		memcpy(out, p, 4);
	return r;
}

/* tex2D<float>(tex, x, y): one-channel float textures, point or linear
 * filtering, every address mode, normalized coordinates or not, as the
 * GPU's texture unit computes them (linear filtering in full float rather
 * than the GPU's 8-bit fraction, so results agree to about 1/256). */
static inline int xgpu_simk_tex2D_float(const struct xgpu_simk_launch *l, uint64_t tex, float x, float y,
					float *out)
{
	struct xgpu_simk_texture t;
	if (!l->object || l->object(l, tex, 0, &t) || t.format != 0x20 || t.channels != 1)
		return XGPU_SIMK_ERR_ILLEGAL_ADDRESS;
	if (t.normalized) {
		x *= (float)t.width;
		y *= (float)t.height;
	}
	if (!t.linear_filter) {
		float fx = x < -1e18f ? -1e18f : x > 1e18f ? 1e18f : x;
		float fy = y < -1e18f ? -1e18f : y > 1e18f ? 1e18f : y;
		return xgpu_simk__texel(l, &t, (int64_t)__builtin_floorf(fx), (int64_t)__builtin_floorf(fy),
					out);
	}
	float fx = x - 0.5f, fy = y - 0.5f;
	fx = fx < -1e18f ? -1e18f : fx > 1e18f ? 1e18f : fx;
	fy = fy < -1e18f ? -1e18f : fy > 1e18f ? 1e18f : fy;
	float ix = __builtin_floorf(fx), iy = __builtin_floorf(fy), a = fx - ix, b = fy - iy;
	float v[4];
	for (int k = 0; k < 4; k++) {
		int r = xgpu_simk__texel(l, &t, (int64_t)ix + (k & 1), (int64_t)iy + (k >> 1), &v[k]);
		if (r)
			return r;
	}
	*out = (1 - a) * (1 - b) * v[0] + a * (1 - b) * v[1] + (1 - a) * b * v[2] + a * b * v[3];
	return XGPU_SIMK_OK;
}

/* The element at (x bytes, row y) of a surface, as surf2Dread/surf2Dwrite
 * with cudaBoundaryModeTrap see it: outside the surface, or not on an
 * element boundary, the access faults. */
static inline int xgpu_simk_surf2D(const struct xgpu_simk_launch *l, uint64_t surf, int64_t x_bytes,
				   int64_t y, uint32_t bytes, void **elem)
{
	struct xgpu_simk_texture t;
	if (!l->object || l->object(l, surf, 1, &t) || bytes != t.element_bytes)
		return XGPU_SIMK_ERR_ILLEGAL_ADDRESS;
	if (x_bytes < 0 || y < 0 || (uint64_t)x_bytes >= (uint64_t)t.width * t.element_bytes ||
	    (uint64_t)y >= t.height)
		return XGPU_SIMK_ERR_ILLEGAL_ADDRESS;
	if (x_bytes % bytes)
		return XGPU_SIMK_ERR_MISALIGNED_ADDRESS;
	return xgpu_simk_map(l, t.base + (uint64_t)y * t.pitch + (uint64_t)x_bytes, bytes, 1, elem);
}

static inline int xgpu_simk_surf2Dread_float(const struct xgpu_simk_launch *l, uint64_t surf, int64_t x_bytes,
					     int64_t y, float *out)
{
	void *p;
	int r = xgpu_simk_surf2D(l, surf, x_bytes, y, 4, &p);
	if (!r)
		memcpy(out, p, 4);
	return r;
}

static inline int xgpu_simk_surf2Dwrite_float(const struct xgpu_simk_launch *l, uint64_t surf, float v,
					      int64_t x_bytes, int64_t y)
{
	void *p;
	int r = xgpu_simk_surf2D(l, surf, x_bytes, y, 4, &p);
	if (!r)
		memcpy(p, &v, 4);
	return r;
}

#endif
