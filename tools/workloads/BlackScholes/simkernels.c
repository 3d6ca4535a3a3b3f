/* SPDX-License-Identifier: Apache-2.0 */
/* simkernels.c - host implementation of BlackScholes.cu's kernel for the
 * simulated driver (the same float formulas and CND polynomial as the device
 * code), and its modeled H100 device time.
 *
 * __global__ void BlackScholesGPU(float *call, float *put, const float *S, const float *X,
 *                                 const float *T, float R, float V, int optN)
 *   _Z15BlackScholesGPUPfS_PKfS1_S1_ffi: call @0 (8), put @8 (8), S @16 (8),
 *   X @24 (8), T @32 (8), R @40 (4), V @44 (4), optN @48 (4); 52 bytes.
 */
#include "simdrv/simkernel.h"

#include <math.h>
#include <stdint.h>

/* H100 figures: fixed device cost of a launch, effective HBM3 bandwidth, and
 * FP32 throughput (about 60 flop-equivalents per option, counting the
 * special-function unit's exp/log/rsqrt, at ~50 Tflop/s sustained). */
#define LAUNCH_NS 3000u
#define HBM_BYTES_PER_NS 2500u                /* ~2.5 TB/s */
#define BYTES_PER_OPTION (5u * sizeof(float)) /* S, X, T read; call, put written */
#define OPTIONS_PER_US 800000u                /* 60 flop / option at 48 Tflop/s */
#define THREADS_PER_NS 500u

static float cnd(float d)
{
	const float A1 = 0.31938153f;
	const float A2 = -0.356563782f;
	const float A3 = 1.781477937f;
	const float A4 = -1.821255978f;
	const float A5 = 1.330274429f;
	const float RSQRT2PI = 0.39894228040143267793994605993438f;

	float K = 1.0f / (1.0f + 0.2316419f * fabsf(d));
	float c = RSQRT2PI * expf(-0.5f * d * d) * (K * (A1 + K * (A2 + K * (A3 + K * (A4 + K * A5)))));
	if (d > 0)
		c = 1.0f - c;
	return c;
}

static void body(float *call, float *put, float S, float X, float T, float R, float V)
{
	float sqrtT = sqrtf(T);
	float d1 = (logf(S / X) + (R + 0.5f * V * V) * T) / (V * sqrtT);
	float d2 = d1 - V * sqrtT;
	float cndd1 = cnd(d1);
	float cndd2 = cnd(d2);
	float expRT = expf(-R * T);
	*call = S * cndd1 - X * expRT * cndd2;
	*put = X * expRT * (1.0f - cndd2) - S * (1.0f - cndd1);
}

static int black_scholes(const struct xgpu_simk_launch *l)
{
	uint64_t call_a, put_a, s_a, x_a, t_a;
	float R, V;
	int32_t n;
	if (xgpu_simk_param(l, 0, &call_a, 8) || xgpu_simk_param(l, 1, &put_a, 8) ||
	    xgpu_simk_param(l, 2, &s_a, 8) || xgpu_simk_param(l, 3, &x_a, 8) ||
	    xgpu_simk_param(l, 4, &t_a, 8) || xgpu_simk_param(l, 5, &R, 4) || xgpu_simk_param(l, 6, &V, 4) ||
	    xgpu_simk_param(l, 7, &n, 4))
		return XGPU_SIMK_ERR_INVALID_VALUE;
	/* thread opt = blockDim.x * blockIdx.x + threadIdx.x prices option opt
	 * when opt < optN */
	uint64_t count = xgpu_simk_covered(l, n);
	if (!count)
		return XGPU_SIMK_OK;
	uint64_t bytes = count * sizeof(float);
	void *pc, *pp, *ps, *px, *pt;
	int r;
	if ((r = xgpu_simk_map(l, call_a, bytes, sizeof(float), &pc)) ||
	    (r = xgpu_simk_map(l, put_a, bytes, sizeof(float), &pp)) ||
	    (r = xgpu_simk_map(l, s_a, bytes, sizeof(float), &ps)) ||
	    (r = xgpu_simk_map(l, x_a, bytes, sizeof(float), &px)) ||
	    (r = xgpu_simk_map(l, t_a, bytes, sizeof(float), &pt)))
		return r;
	float *call = pc, *put = pp;
	const float *S = ps, *X = px, *T = pt;
	for (uint64_t i = 0; i < count; i++) {
		float c, p;
		body(&c, &p, S[i], X[i], T[i], R, V);
		call[i] = c;
		put[i] = p;
	}
	return XGPU_SIMK_OK;
}

static uint64_t black_scholes_cost(const struct xgpu_simk_launch *l)
{
	int32_t n = 0;
	uint64_t count = xgpu_simk_param(l, 7, &n, 4) ? xgpu_simk_threads(l) : xgpu_simk_covered(l, n);
	uint64_t mem_ns = count * BYTES_PER_OPTION / HBM_BYTES_PER_NS;
	uint64_t fp_ns = count * 1000u / OPTIONS_PER_US;
	uint64_t thr_ns = xgpu_simk_threads(l) / THREADS_PER_NS;
	uint64_t ns = mem_ns > fp_ns ? mem_ns : fp_ns;
	return LAUNCH_NS + (ns > thr_ns ? ns : thr_ns);
}

static const struct xgpu_simk_kernel kernels[] = {
    {"_Z15BlackScholesGPUPfS_PKfS1_S1_ffi", black_scholes, black_scholes_cost},
};

XGPU_SIMK_EXPORT(kernels);
