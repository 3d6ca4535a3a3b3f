/* SPDX-License-Identifier: Apache-2.0 */
/* userapp_simk.c - host implementations of userapp.cu's kernels for the
 * simulated driver, bit for bit what the device code computes (fused
 * multiply-adds where nvcc contracts, the same reduction tree), and their
 * modeled H100 device time.
 *
 * __global__ void scaleOffset(int n, const float *in, float *out, float scale, float offset)
 *   _Z11scaleOffsetiPKfPfff: n @0 (4), in @8 (8), out @16 (8), scale @24 (4),
 *   offset @28 (4); 32 bytes.
 * __global__ void stencil3(const float *in, float *out, StencilParams p)
 *   _Z8stencil3PKfPf13StencilParams: in @0 (8), out @8 (8), p @16 (32); 48 bytes.
 *   struct StencilParams { int n @0; double bias @8; float w[3] @16; }, 32 bytes.
 * __global__ void blockSum(const float *in, float *partial, int n)
 *   _Z8blockSumPKfPfi: in @0 (8), partial @8 (8), n @16 (4); 20 bytes.
 *   Needs blockDim.x floats of dynamic shared memory.
 */
#include "simdrv/simkernel.h"

#include <math.h>
#include <stdint.h>

#define LAUNCH_NS 3000u
#define HBM_BYTES_PER_NS 2500u /* ~2.5 TB/s */
#define THREADS_PER_NS 500u
#define MAX_BLOCK_THREADS 1024u
static uint64_t streaming_cost(const struct xgpu_simk_launch *l, uint64_t bytes)
{
	uint64_t mem_ns = bytes / HBM_BYTES_PER_NS;
	uint64_t thr_ns = xgpu_simk_threads(l) / THREADS_PER_NS;
	return LAUNCH_NS + (mem_ns > thr_ns ? mem_ns : thr_ns);
}

/* ---- scaleOffset -------------------------------------------------------- */

static int scale_offset(const struct xgpu_simk_launch *l)
{
	int32_t n;
	uint64_t in_a, out_a;
	float scale, offset;
	if (xgpu_simk_param(l, 0, &n, 4) || xgpu_simk_param(l, 1, &in_a, 8) ||
	    xgpu_simk_param(l, 2, &out_a, 8) || xgpu_simk_param(l, 3, &scale, 4) ||
	    xgpu_simk_param(l, 4, &offset, 4))
		return XGPU_SIMK_ERR_INVALID_VALUE;
	uint64_t count = xgpu_simk_covered(l, n);
	if (!count)
		return XGPU_SIMK_OK;
	void *pi, *po;
	int r;
	if ((r = xgpu_simk_map(l, in_a, count * 4, 4, &pi)) ||
	    (r = xgpu_simk_map(l, out_a, count * 4, 4, &po)))
		return r;
	const float *in = pi;
	float *out = po;
	for (uint64_t i = 0; i < count; i++)
		out[i] = fmaf(in[i], scale, offset);
	return XGPU_SIMK_OK;
}

static uint64_t scale_offset_cost(const struct xgpu_simk_launch *l)
{
	int32_t n = 0;
	uint64_t count = xgpu_simk_param(l, 0, &n, 4) ? xgpu_simk_threads(l) : xgpu_simk_covered(l, n);
	return streaming_cost(l, count * 2 * sizeof(float));
}

/* ---- stencil3 ----------------------------------------------------------- */

struct stencil_params {
	int32_t n;
	double bias;
	float w[3];
};

/* The 32-byte struct as nvcc lays it out, read field by field. */
static void stencil_params_read(const uint8_t raw[32], struct stencil_params *p)
{
	memcpy(&p->n, raw + 0, 4);
	memcpy(&p->bias, raw + 8, 8);
	memcpy(p->w, raw + 16, 12);
}

static int stencil3(const struct xgpu_simk_launch *l)
{
	uint64_t in_a, out_a;
	uint8_t raw[32];
	if (xgpu_simk_param(l, 0, &in_a, 8) || xgpu_simk_param(l, 1, &out_a, 8) ||
	    xgpu_simk_param(l, 2, raw, sizeof(raw)))
		return XGPU_SIMK_ERR_INVALID_VALUE;
	struct stencil_params p;
	stencil_params_read(raw, &p);
	/* Threads 1 <= i < min(n - 1, grid x extent) write out[i] from in[i - 1 .. i + 1]. */
	uint64_t end = xgpu_simk_covered(l, (int64_t)p.n - 1);
	if (end <= 1)
		return XGPU_SIMK_OK;
	void *pi, *po;
	int r;
	if ((r = xgpu_simk_map(l, in_a, (end + 1) * 4, 4, &pi)) ||
	    (r = xgpu_simk_map(l, out_a + 4, (end - 1) * 4, 4, &po)))
		return r;
	const float *in = pi;
	float *out1 = po; /* out1[k] is out[k + 1] */
	for (uint64_t i = 1; i < end; i++) {
		float t = fmaf(p.w[2], in[i + 1], fmaf(p.w[1], in[i], p.w[0] * in[i - 1]));
		out1[i - 1] = (float)((double)t + p.bias);
	}
	return XGPU_SIMK_OK;
}

static uint64_t stencil3_cost(const struct xgpu_simk_launch *l)
{
	uint8_t raw[32];
	struct stencil_params p;
	if (xgpu_simk_param(l, 2, raw, sizeof(raw)))
		return streaming_cost(l, xgpu_simk_threads(l) * 2 * sizeof(float));
	stencil_params_read(raw, &p);
	/* neighbours come from L1/L2: one read and one write per point in HBM */
	return streaming_cost(l, xgpu_simk_covered(l, p.n) * 2 * sizeof(float));
}

/* ---- blockSum ----------------------------------------------------------- */

static int block_sum(const struct xgpu_simk_launch *l)
{
	uint64_t in_a, part_a;
	int32_t n;
	if (xgpu_simk_param(l, 0, &in_a, 8) || xgpu_simk_param(l, 1, &part_a, 8) ||
	    xgpu_simk_param(l, 2, &n, 4))
		return XGPU_SIMK_ERR_INVALID_VALUE;
	uint32_t bd = l->block[0], blocks = l->grid[0];
	if (!bd || !blocks || !l->block[1] || !l->block[2] || !l->grid[1] || !l->grid[2])
		return XGPU_SIMK_OK;
	if (bd > MAX_BLOCK_THREADS)
		return XGPU_SIMK_ERR_INVALID_VALUE;
	/* sdata[tid] for every thread: past the dynamic shared memory it faults */
	if ((uint64_t)l->shared_bytes < (uint64_t)bd * sizeof(float))
		return XGPU_SIMK_ERR_ILLEGAL_ADDRESS;
	uint64_t count = xgpu_simk_covered(l, n);
	void *pi = NULL, *pp;
	int r;
	if (count && (r = xgpu_simk_map(l, in_a, count * 4, 4, &pi)))
		return r;
	if ((r = xgpu_simk_map(l, part_a, (uint64_t)blocks * 4, 4, &pp)))
		return r;
	const float *in = pi;
	float *partial = pp;
	float sdata[MAX_BLOCK_THREADS];
	for (uint64_t b = 0; b < blocks; b++) {
		for (uint32_t tid = 0; tid < bd; tid++) {
			uint64_t i = b * bd + tid;
			sdata[tid] = i < count ? in[i] : 0.0f;
		}
		for (uint32_t s = bd / 2; s > 0; s >>= 1)
			for (uint32_t tid = 0; tid < s; tid++)
				sdata[tid] += sdata[tid + s];
		partial[b] = sdata[0];
	}
	return XGPU_SIMK_OK;
}

static uint64_t block_sum_cost(const struct xgpu_simk_launch *l)
{
	int32_t n = 0;
	uint64_t count = xgpu_simk_param(l, 2, &n, 4) ? xgpu_simk_threads(l) : xgpu_simk_covered(l, n);
	return streaming_cost(l, count * sizeof(float) + (uint64_t)l->grid[0] * sizeof(float));
}

static const struct xgpu_simk_kernel kernels[] = {
    {"_Z11scaleOffsetiPKfPfff", scale_offset, scale_offset_cost},
    {"_Z8stencil3PKfPf13StencilParams", stencil3, stencil3_cost},
    {"_Z8blockSumPKfPfi", block_sum, block_sum_cost},
};

XGPU_SIMK_EXPORT(kernels);
