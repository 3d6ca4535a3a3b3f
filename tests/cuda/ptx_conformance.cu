/* SPDX-License-Identifier: Apache-2.0 */
// ptx_conformance.cu - small kernels, one or more per PTX instruction family,
// each checked against a host reference. No host implementations exist for
// them: on the sim they compute only through the simulated driver's PTX
// interpreter (tests/e2e/ptx_conformance.sh); on a GPU they check the suite
// itself. Prints "RESULT ptx_conformance ... verified=yes" when every check
// passes.
//
//   ptx_conformance            run every check
//   ptx_conformance --fault    write out of bounds: expect an illegal address
//   ptx_conformance --assert   a failing device assert: expect cudaErrorAssert
//   ptx_conformance --bench N  time a simple kernel over N elements
#include <cuda_fp16.h>
#include <cuda_pipeline.h>
#include <mma.h>
#include <cuda_runtime.h>
#include <assert.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;

#define CK(call)                                                                                             \
	do {                                                                                                 \
		cudaError_t e_ = (call);                                                                     \
		if (e_ != cudaSuccess) {                                                                     \
			fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,                        \
				cudaGetErrorString(e_));                                                     \
			exit(2);                                                                             \
		}                                                                                            \
	} while (0)

static void check(bool ok, const char *what, int i, double got, double want)
{
	if (!ok) {
		if (failures < 40)
			fprintf(stderr, "MISMATCH %s[%d]: got %.9g want %.9g\n", what, i, got, want);
		failures++;
	}
}

static bool close_f(double a, double b, double rel)
{
	if (isnan(a) && isnan(b))
		return true;
	return fabs(a - b) <= rel * fmax(1.0, fmax(fabs(a), fabs(b)));
}

static uint32_t rng = 12345;
static uint32_t rnd32(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 17;
	rng ^= rng << 5;
	return rng;
}

template <typename T> static T *dev(size_t n)
{
	T *p;
	CK(cudaMalloc(&p, n * sizeof(T)));
	CK(cudaMemset(p, 0, n * sizeof(T)));
	return p;
}
template <typename T> static void up(T *d, const T *h, size_t n)
{
	CK(cudaMemcpy(d, h, n * sizeof(T), cudaMemcpyHostToDevice));
}
template <typename T> static void down(T *h, const T *d, size_t n)
{
	CK(cudaMemcpy(h, d, n * sizeof(T), cudaMemcpyDeviceToHost));
}

// ---- integer arithmetic -----------------------------------------------------------------

#define NI 20
__global__ void k_int32(const int *a, const int *b, int *out, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	int x = a[i], y = b[i];
	unsigned ux = (unsigned)x, uy = (unsigned)y;
	int *o = out + i * NI;
	o[0] = x + y;
	o[1] = x - y;
	o[2] = x * y;
	o[3] = __mulhi(x, y);
	o[4] = (int)__umulhi(ux, uy);
	o[5] = x / y;
	o[6] = x % y;
	o[7] = (int)(ux / uy);
	o[8] = (int)(ux % uy);
	o[9] = min(x, y);
	o[10] = max(x, y);
	o[11] = (int)min(ux, uy);
	o[12] = x & y;
	o[13] = x | y;
	o[14] = x ^ ~y;
	o[15] = x << (y & 31);
	o[16] = x >> (y & 31);
	o[17] = (int)(ux >> (y & 31));
	o[18] = abs(x) + __popc(ux) + __clz(x) + __brev(ux);
	o[19] = (x < y) + 2 * (ux < uy) + 4 * (x == y) + 8 * (x >= 0) + 16 * (ux <= uy) + 32 * (x != y);
}

static void host_int32(int x, int y, int *o)
{
	unsigned ux = (unsigned)x, uy = (unsigned)y;
	o[0] = (int)(ux + uy);
	o[1] = (int)(ux - uy);
	o[2] = (int)(ux * uy);
	o[3] = (int)(((int64_t)x * y) >> 32);
	o[4] = (int)(((uint64_t)ux * uy) >> 32);
	o[5] = x / y;
	o[6] = x % y;
	o[7] = (int)(ux / uy);
	o[8] = (int)(ux % uy);
	o[9] = x < y ? x : y;
	o[10] = x > y ? x : y;
	o[11] = (int)(ux < uy ? ux : uy);
	o[12] = x & y;
	o[13] = x | y;
	o[14] = x ^ ~y;
	o[15] = (int)(ux << (y & 31));
	o[16] = x >> (y & 31);
	o[17] = (int)(ux >> (y & 31));
	unsigned br = 0;
	for (int b = 0; b < 32; b++)
		if (ux >> b & 1)
			br |= 1u << (31 - b);
	o[18] = (int)((unsigned)abs(x) + (unsigned)__builtin_popcount(ux) +
		      (unsigned)(x ? __builtin_clz(ux) : 32) + br);
	o[19] = (x < y) + 2 * (ux < uy) + 4 * (x == y) + 8 * (x >= 0) + 16 * (ux <= uy) + 32 * (x != y);
}

#define NL 8
__global__ void k_int64(const long long *a, const long long *b, const int *c, long long *out, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	long long x = a[i], y = b[i];
	unsigned long long ux = x, uy = y;
	long long *o = out + i * NL;
	o[0] = x + y * 3;
	o[1] = x / y;
	o[2] = x % y;
	o[3] = (long long)(ux / uy);
	o[4] = (long long)(ux % uy);
	o[5] = (long long)c[i] * c[n - 1 - i]; // mul.wide.s32
	o[6] = (long long)__umul64hi(ux, uy);
	o[7] = min(x, y) ^ (x >> 7) ^ (long long)(ux >> 9) ^ (x << 3);
}

static void host_int64(long long x, long long y, int c0, int c1, long long *o)
{
	unsigned long long ux = x, uy = y;
	o[0] = (long long)(ux + uy * 3);
	o[1] = x / y;
	o[2] = x % y;
	o[3] = (long long)(ux / uy);
	o[4] = (long long)(ux % uy);
	o[5] = (long long)c0 * c1;
	o[6] = (long long)(((unsigned __int128)ux * uy) >> 64);
	o[7] = (x < y ? x : y) ^ (x >> 7) ^ (long long)(ux >> 9) ^ (long long)(ux << 3);
}

// ---- floating point ---------------------------------------------------------------------

#define NF 16
__global__ void k_float(const float *a, const float *b, float *out, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	float x = a[i], y = b[i];
	float *o = out + i * NF;
	o[0] = x + y;
	o[1] = x - y;
	o[2] = x * y;
	o[3] = x / y;
	o[4] = fmaf(x, y, 1.5f);
	o[5] = sqrtf(fabsf(x));
	o[6] = rsqrtf(fabsf(x) + 1.0f);
	o[7] = __expf(y * 0.1f);
	o[8] = __logf(fabsf(x) + 1.0f);
	o[9] = __sinf(y);
	o[10] = __cosf(y);
	o[11] = fminf(x, y);
	o[12] = fmaxf(x, y);
	o[13] = -fabsf(x);
	o[14] = x > y ? x : y * 2.0f;
	o[15] = __fdividef(1.0f, y);
}

static void host_float(float x, float y, double *o)
{
	o[0] = x + y;
	o[1] = x - y;
	o[2] = x * y;
	o[3] = x / y;
	o[4] = fmaf(x, y, 1.5f);
	o[5] = sqrtf(fabsf(x));
	o[6] = 1.0 / sqrt(fabs(x) + 1.0);
	o[7] = exp(y * 0.1);
	o[8] = log(fabs(x) + 1.0);
	o[9] = sin(y);
	o[10] = cos(y);
	o[11] = fminf(x, y);
	o[12] = fmaxf(x, y);
	o[13] = -fabsf(x);
	o[14] = x > y ? x : y * 2.0f;
	o[15] = 1.0 / y;
}
static const double float_tol[NF] = {1e-7, 1e-7, 1e-7, 1e-6, 1e-7, 1e-6, 1e-5, 1e-5,
				     1e-5, 1e-5, 1e-5, 0,    0,    0,    1e-7, 1e-5};

#define ND 8
__global__ void k_double(const double *a, const double *b, double *out, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	double x = a[i], y = b[i];
	double *o = out + i * ND;
	o[0] = x + y;
	o[1] = x * y - x;
	o[2] = x / y;
	o[3] = fma(x, y, 0.25);
	o[4] = sqrt(fabs(x));
	o[5] = fmin(x, y) + fmax(x, y) * 2.0;
	o[6] = -fabs(y);
	o[7] = 1.0 / y;
}

// ---- conversions ------------------------------------------------------------------------

#define NC 14
__global__ void k_cvt(const float *a, const double *d, const int *s, double *out, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	float x = a[i];
	double *o = out + i * NC;
	o[0] = (int)x;                         // cvt.rzi.s32.f32
	o[1] = __float2int_rn(x);              // cvt.rni
	o[2] = __float2int_rd(x);              // cvt.rmi
	o[3] = __float2int_ru(x);              // cvt.rpi
	o[4] = (unsigned)fabsf(x);             // cvt.rzi.u32.f32
	o[5] = (float)s[i];                    // cvt.rn.f32.s32
	o[6] = (double)(unsigned)s[i];         // cvt.rn.f64.u32
	o[7] = (float)d[i];                    // cvt.rn.f32.f64
	o[8] = (long long)d[i];                // cvt.rzi.s64.f64
	o[9] = rintf(x);                       // cvt.rni.f32.f32
	o[10] = __half2float(__float2half(x)); // f16 round trip
	o[11] = (signed char)s[i];             // cvt.s8.s32
	o[12] = (unsigned short)s[i];          // cvt.u16.u32
	o[13] = truncf(x) + floorf(x) + ceilf(x);
}

// ---- control flow -----------------------------------------------------------------------

__global__ void k_diverge(const int *a, int *out, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	int v = a[i], acc = 0;
	for (int k = 0; k < (v & 15); k++) {
		if ((k ^ v) & 1)
			acc += k * v;
		else if (k % 3 == 0)
			acc -= k;
		else {
			if (v < 0)
				break;
			acc ^= k << 3;
		}
	}
	switch (v & 3) {
	case 0:
		acc += 100;
		break;
	case 1:
		acc *= 3;
		break;
	case 2:
		acc = -acc;
		break;
	default:
		break;
	}
	out[i] = acc;
}

static int host_diverge(int v)
{
	int acc = 0;
	for (int k = 0; k < (v & 15); k++) {
		if ((k ^ v) & 1)
			acc = (int)((unsigned)acc + (unsigned)k * (unsigned)v);
		else if (k % 3 == 0)
			acc -= k;
		else {
			if (v < 0)
				break;
			acc ^= k << 3;
		}
	}
	switch (v & 3) {
	case 0:
		acc += 100;
		break;
	case 1:
		acc = (int)((unsigned)acc * 3u);
		break;
	case 2:
		acc = -acc;
		break;
	default:
		break;
	}
	return acc;
}

// ---- shared memory, barriers, indices ----------------------------------------------------

__global__ void k_reduce_static(const float *a, float *out, int n)
{
	__shared__ float s[256];
	int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
	s[t] = i < n ? a[i] : 0.0f;
	__syncthreads();
	for (int stride = blockDim.x / 2; stride > 0; stride >>= 1) {
		if (t < stride)
			s[t] += s[t + stride];
		__syncthreads();
	}
	if (t == 0)
		out[blockIdx.x] = s[0];
}

__global__ void k_reduce_dynamic(const int *a, long long *out, int n)
{
	extern __shared__ long long ds[];
	int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
	ds[t] = i < n ? a[i] : 0;
	__syncthreads();
	for (int stride = blockDim.x / 2; stride > 0; stride >>= 1) {
		if (t < stride)
			ds[t] += ds[t + stride];
		__syncthreads();
	}
	if (t == 0)
		out[blockIdx.x] = ds[0];
}

__global__ void k_index2d(int *out, int w)
{
	int x = blockIdx.x * blockDim.x + threadIdx.x;
	int y = blockIdx.y * blockDim.y + threadIdx.y;
	int z = threadIdx.z + blockIdx.z * blockDim.z;
	int idx = (z * gridDim.y * blockDim.y + y) * w + x;
	out[idx] = x * 1000000 + y * 1000 + z + (int)(gridDim.x * blockDim.x == (unsigned)w);
}

// ---- atomics ---------------------------------------------------------------------------------

__device__ unsigned dev_counter;

__global__ void k_atomics(const int *a, int *iout, float *fout, double *dout, unsigned long long *uout,
			  int *hist, int n)
{
	__shared__ int sh[16];
	int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
	if (t < 16)
		sh[t] = 0;
	__syncthreads();
	if (i < n) {
		int v = a[i];
		atomicAdd(&iout[0], v);
		atomicMin(&iout[1], v);
		atomicMax(&iout[2], v);
		atomicAnd(&iout[3], v | 0x10000);
		atomicOr(&iout[4], v & 0xff);
		atomicXor(&iout[5], v);
		atomicMax((unsigned *)&iout[6], (unsigned)v);
		atomicAdd(&fout[0], 0.5f);
		atomicAdd(&dout[0], 0.25);
		atomicAdd(&uout[0], (unsigned long long)(v & 0xffff));
		atomicInc((unsigned *)&iout[7], 1000000);
		int old = atomicCAS(&iout[8], i, i + 1); // a chain: only thread i succeeds at value i
		(void)old;
		atomicAdd(&sh[v & 15], 1);
		atomicAdd(&dev_counter, 1u);
	}
	__syncthreads();
	if (t < 16)
		atomicAdd(&hist[t], sh[t]);
}

// ---- warp-level operations --------------------------------------------------------------

__global__ void k_warp(const int *a, int *out, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	int lane = threadIdx.x & 31;
	int v = i < n ? a[i] : 0;
	int sum = v;
	for (int o = 16; o > 0; o >>= 1)
		sum += __shfl_down_sync(0xffffffff, sum, o);
	int bfly = v;
	for (int o = 1; o < 32; o <<= 1)
		bfly = max(bfly, __shfl_xor_sync(0xffffffff, bfly, o));
	int scan = v;
	for (int o = 1; o < 32; o <<= 1) {
		int y = __shfl_up_sync(0xffffffff, scan, o);
		if (lane >= o)
			scan += y;
	}
	int bcast = __shfl_sync(0xffffffff, v, 5);
	unsigned ballot = __ballot_sync(0xffffffff, v & 1);
	int all = __all_sync(0xffffffff, v > -1000000);
	int any = __any_sync(0xffffffff, v == 7);
	unsigned active = 0;
	if (v & 2)
		active = __activemask();
	double dv = v * 0.5;
	dv = __shfl_down_sync(0xffffffff, dv, 1, 16); // 64-bit shuffle with a width
	if (i < n) {
		int *o = out + i * 9;
		o[0] = sum;
		o[1] = bfly;
		o[2] = scan;
		o[3] = bcast;
		o[4] = (int)ballot;
		o[5] = all;
		o[6] = any;
		o[7] = (int)active;
		o[8] = (int)(dv * 2.0);
	}
}

// ---- memory spaces ----------------------------------------------------------------------

__constant__ float c_coef[8] = {1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f, 7.0f, 8.0f};

struct Params {
	int scale;
	float bias;
	double extra;
	char tag;
};

__global__ void k_spaces(const float4 *in4, float4 *out4, const int2 *in2, int2 *out2, const int *idx,
			 float *out, Params p, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	float4 v = in4[i];
	v.x += c_coef[i & 7];
	v.w *= (float)p.scale;
	out4[i] = v;
	int2 w = in2[i];
	out2[i] = make_int2(w.y, w.x + p.tag);
	// A dynamically indexed local array.
	float loc[24];
	for (int k = 0; k < 24; k++)
		loc[k] = (float)(k * i) + p.bias;
	out[i] = loc[idx[i] % 24] + (float)p.extra;
}

// ---- fault and bench -----------------------------------------------------------------------

__global__ void k_oob(int *p, int n)
{
	p[n + 4096 * 1024] = 1; // far past the allocation
}

// A device assert that fails in one thread of the block.
__global__ void k_assert(const int *p)
{
	assert(p[threadIdx.x] != 7);
}

__global__ void k_saxpy(const float *x, float *y, float a, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		y[i] = a * x[i] + y[i];
}

// ---- driver ----------------------------------------------------------------------------------

static void test_int(void)
{
	const int n = 1000;
	int ha[n], hb[n];
	for (int i = 0; i < n; i++) {
		ha[i] = (int)rnd32() >> (rnd32() & 15);
		hb[i] = (int)rnd32() >> (rnd32() & 15);
		if (hb[i] == 0 || (ha[i] == INT32_MIN && hb[i] == -1))
			hb[i] = 3;
	}
	ha[0] = INT32_MIN, hb[0] = 7;
	ha[1] = -7, hb[1] = 2;
	int *da = dev<int>(n), *db = dev<int>(n), *dout = dev<int>(n * NI);
	up(da, ha, n);
	up(db, hb, n);
	k_int32<<<(n + 127) / 128, 128>>>(da, db, dout, n);
	CK(cudaGetLastError());
	static int hout[n * NI];
	down(hout, dout, n * NI);
	for (int i = 0; i < n; i++) {
		int want[NI];
		host_int32(ha[i], hb[i], want);
		for (int k = 0; k < NI; k++) {
			char what[32];
			snprintf(what, sizeof what, "int32 op %d", k);
			check(hout[i * NI + k] == want[k], what, i, hout[i * NI + k], want[k]);
		}
	}
	long long la[n], lb[n];
	for (int i = 0; i < n; i++) {
		la[i] = (long long)((uint64_t)rnd32() << 32 | rnd32()) >> (rnd32() & 31);
		lb[i] = (long long)((uint64_t)rnd32() << 32 | rnd32()) >> (rnd32() & 63);
		if (lb[i] == 0 || lb[i] == -1)
			lb[i] = 5;
	}
	long long *dla = dev<long long>(n), *dlb = dev<long long>(n), *dlo = dev<long long>(n * NL);
	up(dla, la, n);
	up(dlb, lb, n);
	k_int64<<<(n + 255) / 256, 256>>>(dla, dlb, da, dlo, n);
	static long long lo[n * NL];
	down(lo, dlo, n * NL);
	for (int i = 0; i < n; i++) {
		long long want[NL];
		host_int64(la[i], lb[i], ha[i], ha[n - 1 - i], want);
		for (int k = 0; k < NL; k++) {
			char what[32];
			snprintf(what, sizeof what, "int64 op %d", k);
			check(lo[i * NL + k] == want[k], what, i, (double)lo[i * NL + k], (double)want[k]);
		}
	}
	cudaFree(da), cudaFree(db), cudaFree(dout), cudaFree(dla), cudaFree(dlb), cudaFree(dlo);
	printf("int: checked\n");
}

static void test_float(void)
{
	const int n = 777;
	float ha[n], hb[n];
	for (int i = 0; i < n; i++) {
		ha[i] = ((float)(rnd32() % 200000) - 100000.0f) / 997.0f;
		hb[i] = ((float)(rnd32() % 20000) - 10000.0f) / 313.0f;
		if (hb[i] == 0)
			hb[i] = 1.25f;
	}
	float *da = dev<float>(n), *db = dev<float>(n), *dout = dev<float>(n * NF);
	up(da, ha, n);
	up(db, hb, n);
	k_float<<<(n + 63) / 64, 64>>>(da, db, dout, n);
	static float hout[n * NF];
	down(hout, dout, n * NF);
	for (int i = 0; i < n; i++) {
		double want[NF];
		host_float(ha[i], hb[i], want);
		for (int k = 0; k < NF; k++) {
			char what[32];
			snprintf(what, sizeof what, "f32 op %d", k);
			double tol = float_tol[k];
			if (k == 9 ||
			    k == 10) // __sinf/__cosf: absolute error 2^-21.41 in [-pi, pi], more outside
				tol = 2e-4 * fmax(1.0, fabs(hb[i]));
			bool ok = k == 9 || k == 10 ? fabs(hout[i * NF + k] - want[k]) <= tol
						    : close_f(hout[i * NF + k], want[k], tol);
			check(ok, what, i, hout[i * NF + k], want[k]);
		}
	}
	double xa[n], xb[n];
	for (int i = 0; i < n; i++)
		xa[i] = ha[i] * 1.000001, xb[i] = hb[i] * 3.3;
	double *dxa = dev<double>(n), *dxb = dev<double>(n), *dxo = dev<double>(n * ND);
	up(dxa, xa, n);
	up(dxb, xb, n);
	k_double<<<(n + 127) / 128, 128>>>(dxa, dxb, dxo, n);
	static double xo[n * ND];
	down(xo, dxo, n * ND);
	for (int i = 0; i < n; i++) {
		double x = xa[i], y = xb[i];
		double want[ND] = {x + y,           x * y - x,     x / y,
				   fma(x, y, 0.25), sqrt(fabs(x)), fmin(x, y) + fmax(x, y) * 2.0,
				   -fabs(y),        1.0 / y};
		for (int k = 0; k < ND; k++) {
			char what[32];
			snprintf(what, sizeof what, "f64 op %d", k);
			check(close_f(xo[i * ND + k], want[k], k == 1 ? 1e-15 : 0), what, i, xo[i * ND + k],
			      want[k]);
		}
	}
	cudaFree(da), cudaFree(db), cudaFree(dout), cudaFree(dxa), cudaFree(dxb), cudaFree(dxo);
	printf("float: checked\n");
}

static float half_round(float x)
{
	// Round to the nearest f16 value (even on ties), within f16's normal range.
	if (x == 0)
		return x;
	int e;
	frexpf(fabsf(x), &e);
	if (e < -13)
		e = -13;
	float ulp = ldexpf(1.0f, e - 11);
	return nearbyintf(x / ulp) * ulp;
}

static void test_cvt(void)
{
	const int n = 500;
	float ha[n];
	double hd[n];
	int hs[n];
	for (int i = 0; i < n; i++) {
		ha[i] = ((float)(rnd32() % 200000) - 100000.0f) / 64.0f;
		if (i % 10 == 0)
			ha[i] = (float)(i / 10) - 25.5f; // ties
		hd[i] = ((double)(rnd32() % 2000000) - 1000000.0) / 3.0;
		hs[i] = (int)rnd32();
	}
	float *da = dev<float>(n);
	double *dd = dev<double>(n), *dout = dev<double>(n * NC);
	int *ds = dev<int>(n);
	up(da, ha, n);
	up(dd, hd, n);
	up(ds, hs, n);
	k_cvt<<<(n + 127) / 128, 128>>>(da, dd, ds, dout, n);
	static double ho[n * NC];
	down(ho, dout, n * NC);
	for (int i = 0; i < n; i++) {
		float x = ha[i];
		double want[NC] = {(double)(int)x,
				   (double)(int)nearbyintf(x),
				   floor(x),
				   ceil(x),
				   (double)(unsigned)fabsf(x),
				   (double)(float)hs[i],
				   (double)(unsigned)hs[i],
				   (double)(float)hd[i],
				   (double)(long long)hd[i],
				   (double)nearbyintf(x),
				   (double)half_round(x),
				   (double)(signed char)hs[i],
				   (double)(unsigned short)hs[i],
				   (double)(truncf(x) + floorf(x) + ceilf(x))};
		for (int k = 0; k < NC; k++) {
			char what[32];
			snprintf(what, sizeof what, "cvt %d", k);
			check(ho[i * NC + k] == want[k], what, i, ho[i * NC + k], want[k]);
		}
	}
	cudaFree(da), cudaFree(dd), cudaFree(dout), cudaFree(ds);
	printf("cvt: checked\n");
}

static void test_control(void)
{
	const int n = 1000;
	int ha[n];
	for (int i = 0; i < n; i++)
		ha[i] = (int)rnd32() >> (rnd32() % 24);
	int *da = dev<int>(n), *dout = dev<int>(n);
	up(da, ha, n);
	k_diverge<<<(n + 95) / 96, 96>>>(da, dout, n);
	int ho[n];
	down(ho, dout, n);
	for (int i = 0; i < n; i++)
		check(ho[i] == host_diverge(ha[i]), "diverge", i, ho[i], host_diverge(ha[i]));
	cudaFree(da), cudaFree(dout);
	printf("control flow: checked\n");
}

static void test_shared(void)
{
	const int n = 5000, bs = 256, nb = (n + bs - 1) / bs;
	float ha[n];
	int hi[n];
	for (int i = 0; i < n; i++)
		ha[i] = (float)(i % 17), hi[i] = (int)(rnd32() % 100000) - 50000;
	float *da = dev<float>(n), *dout = dev<float>(nb);
	int *di = dev<int>(n);
	long long *dl = dev<long long>(nb);
	up(da, ha, n);
	up(di, hi, n);
	k_reduce_static<<<nb, bs>>>(da, dout, n);
	k_reduce_dynamic<<<nb, bs, bs * sizeof(long long)>>>(di, dl, n);
	float ho[nb];
	long long hl[nb];
	down(ho, dout, nb);
	down(hl, dl, nb);
	for (int b = 0; b < nb; b++) {
		float fs = 0;
		long long ls = 0;
		for (int i = b * bs; i < n && i < (b + 1) * bs; i++)
			fs += ha[i], ls += hi[i];
		check(ho[b] == fs, "shared reduce", b, ho[b], fs);
		check(hl[b] == ls, "dynamic shared reduce", b, (double)hl[b], (double)ls);
	}
	// 3-D indices: grid (4, 3, 2) of blocks (8, 4, 2).
	const int w = 32, h = 12, d = 4;
	int *dx = dev<int>(w * h * d);
	k_index2d<<<dim3(4, 3, 2), dim3(8, 4, 2)>>>(dx, w);
	static int hx[w * h * d];
	down(hx, dx, w * h * d);
	for (int z = 0; z < d; z++)
		for (int y = 0; y < h; y++)
			for (int x = 0; x < w; x++) {
				int want = x * 1000000 + y * 1000 + z + 1;
				int got = hx[(z * h + y) * w + x];
				check(got == want, "index3d", (z * h + y) * w + x, got, want);
			}
	cudaFree(da), cudaFree(dout), cudaFree(di), cudaFree(dl), cudaFree(dx);
	printf("shared memory and indices: checked\n");
}

static void test_atomics(void)
{
	const int n = 3000;
	int ha[n];
	for (int i = 0; i < n; i++)
		ha[i] = (int)(rnd32() % 2000001) - 1000000;
	int *da = dev<int>(n), *di = dev<int>(9), *dh = dev<int>(16);
	float *df = dev<float>(1);
	double *dd = dev<double>(1);
	unsigned long long *du = dev<unsigned long long>(1);
	int init[9] = {0, INT32_MAX, INT32_MIN, -1, 0, 0, 0, 0, 0};
	up(da, ha, n);
	up(di, init, 9);
	unsigned zero = 0;
	CK(cudaMemcpyToSymbol(dev_counter, &zero, sizeof zero));
	k_atomics<<<(n + 127) / 128, 128>>>(da, di, df, dd, du, dh, n);
	int hi[9], hh[16];
	float hf;
	double hd;
	unsigned long long hu;
	unsigned counter;
	down(hi, di, 9);
	down(hh, dh, 16);
	down(&hf, df, 1);
	down(&hd, dd, 1);
	down(&hu, du, 1);
	CK(cudaMemcpyFromSymbol(&counter, dev_counter, sizeof counter));
	int want[9] = {0, INT32_MAX, INT32_MIN, -1, 0, 0, 0, 0, 0};
	unsigned umax = 0;
	unsigned long long wu = 0;
	int wh[16] = {0};
	for (int i = 0; i < n; i++) {
		int v = ha[i];
		want[0] += v;
		want[1] = v < want[1] ? v : want[1];
		want[2] = v > want[2] ? v : want[2];
		want[3] &= v | 0x10000;
		want[4] |= v & 0xff;
		want[5] ^= v;
		umax = (unsigned)v > umax ? (unsigned)v : umax;
		wu += (unsigned long long)(v & 0xffff);
		wh[v & 15]++;
	}
	want[6] = (int)umax;
	want[7] = n;
	for (int k = 0; k < 8; k++)
		check(hi[k] == want[k], "atomic int", k, hi[k], want[k]);
	// The CAS chain advances only as far as threads run in order: at least one step, at most n.
	check(hi[8] >= 1 && hi[8] <= n, "atomicCAS chain", 8, hi[8], 1);
	check(hf == 0.5f * n, "atomicAdd f32", 0, hf, 0.5 * n);
	check(hd == 0.25 * n, "atomicAdd f64", 0, hd, 0.25 * n);
	check(hu == wu, "atomicAdd u64", 0, (double)hu, (double)wu);
	check(counter == (unsigned)n, "__device__ counter", 0, counter, n);
	for (int k = 0; k < 16; k++)
		check(hh[k] == wh[k], "shared histogram", k, hh[k], wh[k]);
	cudaFree(da), cudaFree(di), cudaFree(dh), cudaFree(df), cudaFree(dd), cudaFree(du);
	printf("atomics: checked\n");
}

static void test_warp(void)
{
	const int n = 250; // a partial last warp
	int ha[n];
	for (int i = 0; i < n; i++)
		ha[i] = (int)(rnd32() % 200) - 90;
	ha[3] = 7;
	int *da = dev<int>(n), *dout = dev<int>(n * 9);
	up(da, ha, n);
	k_warp<<<(n + 127) / 128, 128>>>(da, dout, n);
	static int ho[n * 9];
	down(ho, dout, n * 9);
	for (int i = 0; i < n; i++) {
		int w0 = i & ~31, lane = i & 31;
		auto v = [&](int j) { return j < n ? ha[j] : 0; };
		int sum = 0, mx = INT32_MIN, scan = 0, any = 0, all = 1;
		unsigned ballot = 0, active = 0;
		for (int j = w0; j < w0 + 32; j++) {
			mx = v(j) > mx ? v(j) : mx;
			if (v(j) & 1)
				ballot |= 1u << (j - w0);
			if (v(j) & 2)
				active |= 1u << (j - w0);
			any |= v(j) == 7;
			all &= v(j) > -1000000;
			if (j <= i)
				scan += v(j);
		}
		// shfl_down sum: lane l gets the sum of lanes l.. in a tree; lane 0 has the full sum.
		int tree[32];
		for (int l = 0; l < 32; l++)
			tree[l] = v(w0 + l);
		for (int o = 16; o > 0; o >>= 1) {
			int nt[32];
			for (int l = 0; l < 32; l++)
				nt[l] = tree[l] + (l + o < 32 ? tree[l + o] : tree[l]);
			memcpy(tree, nt, sizeof tree);
		}
		sum = tree[lane];
		int dsh = (lane & 15) + 1 < 16 ? v(i + 1) : v(i);
		int want[9] = {sum, mx, scan, v(w0 + 5), (int)ballot, all, any, (v(i) & 2) ? (int)active : 0,
			       dsh};
		for (int k = 0; k < 9; k++) {
			char what[32];
			snprintf(what, sizeof what, "warp op %d", k);
			check(ho[i * 9 + k] == want[k], what, i, ho[i * 9 + k], want[k]);
		}
	}
	cudaFree(da), cudaFree(dout);
	printf("warp operations: checked\n");
}

static void test_spaces(void)
{
	const int n = 300;
	float4 h4[n];
	int2 h2[n];
	int hidx[n];
	for (int i = 0; i < n; i++) {
		h4[i] = make_float4((float)i, (float)(i * 2), (float)(i * 3), (float)(i % 7));
		h2[i] = make_int2(i, -i);
		hidx[i] = (int)(rnd32() % 1000);
	}
	float4 *d4 = dev<float4>(n), *o4 = dev<float4>(n);
	int2 *d2 = dev<int2>(n), *o2 = dev<int2>(n);
	int *didx = dev<int>(n);
	float *dout = dev<float>(n);
	up(d4, h4, n);
	up(d2, h2, n);
	up(didx, hidx, n);
	Params p = {3, 0.5f, 0.25, 'A'};
	k_spaces<<<(n + 63) / 64, 64>>>(d4, o4, d2, o2, didx, dout, p, n);
	float4 r4[n];
	int2 r2[n];
	float ro[n];
	down(r4, o4, n);
	down(r2, o2, n);
	down(ro, dout, n);
	for (int i = 0; i < n; i++) {
		check(r4[i].x == h4[i].x + (float)((i & 7) + 1), "float4 .x + __constant__", i, r4[i].x,
		      h4[i].x + (i & 7) + 1);
		check(r4[i].y == h4[i].y && r4[i].z == h4[i].z, "float4 .y .z", i, r4[i].y, h4[i].y);
		check(r4[i].w == h4[i].w * 3, "float4 .w * param", i, r4[i].w, h4[i].w * 3);
		check(r2[i].x == -i && r2[i].y == i + 'A', "int2", i, r2[i].y, i + 'A');
		float want = (float)((hidx[i] % 24) * i) + 0.5f + 0.25f;
		check(ro[i] == want, "local array", i, ro[i], want);
	}
	cudaFree(d4), cudaFree(o4), cudaFree(d2), cudaFree(o2), cudaFree(didx), cudaFree(dout);
	printf("memory spaces: checked\n");
}

static int run_fault(void)
{
	int *d = dev<int>(16);
	k_oob<<<1, 1>>>(d, 16);
	cudaError_t e = cudaDeviceSynchronize();
	printf("fault: %s (%d)\n", cudaGetErrorName(e), (int)e);
	return e == cudaErrorIllegalAddress ? 0 : 1;
}

static int run_assert(void)
{
	int h[32], *d = dev<int>(32);
	for (int i = 0; i < 32; i++)
		h[i] = i;
	up(d, h, 32);
	k_assert<<<1, 32>>>(d);
	cudaError_t e = cudaDeviceSynchronize();
	printf("assert: %s (%d)\n", cudaGetErrorName(e), (int)e);
	return e == cudaErrorAssert ? 0 : 1;
}

static int run_bench(int n)
{
	float *x = dev<float>(n), *y = dev<float>(n);
	float *h = (float *)malloc(n * sizeof(float));
	for (int i = 0; i < n; i++)
		h[i] = (float)i;
	up(x, h, n);
	up(y, h, n);
	k_saxpy<<<(n + 255) / 256, 256>>>(x, y, 2.0f, n);
	CK(cudaDeviceSynchronize());
	down(h, y, n);
	int bad = 0;
	for (int i = 0; i < n; i++)
		bad += h[i] != 3.0f * (float)i;
	printf("RESULT ptx_bench n=%d verified=%s\n", n, bad ? "no" : "yes");
	free(h);
	return bad != 0;
}

// ---- warp collectives, half pairs, textures and surfaces, cp.async, wmma ------------------

// redux over a data-dependent partition of the warp, match.any / match.all.
__global__ void k_ext_warp(const int *a, unsigned *out)
{
	int t = threadIdx.x, v = a[t];
	unsigned odd = __ballot_sync(0xffffffffu, v & 1), mine = (v & 1) ? odd : ~odd;
	int pred;
	out[t * 5 + 0] = __match_any_sync(0xffffffffu, v & 3);
	out[t * 5 + 1] = __reduce_add_sync(mine, (unsigned)v);
	out[t * 5 + 2] = __reduce_max_sync(mine, (unsigned)v);
	out[t * 5 + 3] = __match_all_sync(0xffffffffu, t < 32 ? 7 : v & 1, &pred);
	out[t * 5 + 4] = pred;
}

__global__ void k_ext_half(const __half2 *a, const __half2 *b, const __half2 *c, __half2 *out, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	out[i * 4 + 0] = __hadd2(a[i], b[i]);
	out[i * 4 + 1] = __hmul2(a[i], b[i]);
	out[i * 4 + 2] = __hfma2(a[i], b[i], c[i]);
	out[i * 4 + 3] = __hmax2(__hneg2(a[i]), __hsub2(b[i], c[i]));
}

// Linear and point fetches, a gather, and a surface round trip.
__global__ void k_ext_tex(cudaTextureObject_t lin, cudaTextureObject_t pt, cudaSurfaceObject_t s,
			  const float2 *crd, float *out, int n)
{
	int i = threadIdx.x;
	if (i >= n)
		return;
	float2 c = crd[i];
	float4 g = tex2Dgather<float4>(pt, c.x / 8, c.y / 8, 0);
	out[i * 7 + 0] = tex2D<float>(lin, c.x, c.y);
	out[i * 7 + 1] = tex2D<float>(pt, c.x / 8, c.y / 8);
	out[i * 7 + 2] = g.x, out[i * 7 + 3] = g.y, out[i * 7 + 4] = g.z, out[i * 7 + 5] = g.w;
	int x = i % 8, y = i / 8 % 8;
	float v = surf2Dread<float>(s, x * 4, y);
	surf2Dwrite(v * 2 + 1, s, x * 4, y);
	out[i * 7 + 6] = v;
}

// cp.async through the pipeline primitives, then wmma D = A B + C.
__global__ void k_ext_async(const int *g, int *out)
{
	__shared__ int sh[64];
	int t = threadIdx.x;
	__pipeline_memcpy_async(&sh[t], &g[t], 4);
	__pipeline_commit();
	__pipeline_wait_prior(0);
	__syncthreads();
	out[t] = sh[63 - t];
}

__global__ void k_ext_wmma(const __half *a, const __half *b, const float *c, float *d)
{
	using namespace nvcuda;
	wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> fa;
	wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major> fb;
	wmma::fragment<wmma::accumulator, 16, 16, 16, float> fc;
	wmma::load_matrix_sync(fa, a, 16);
	wmma::load_matrix_sync(fb, b, 16);
	wmma::load_matrix_sync(fc, c, 16, wmma::mem_row_major);
	wmma::mma_sync(fc, fa, fb, fc);
	for (int i = 0; i < fc.num_elements; i++)
		fc.x[i] = fc.x[i] * 0.5f;
	wmma::store_matrix_sync(d, fc, 16, wmma::mem_row_major);
}

static float h2f(__half h)
{
	return __half2float(h);
}

static void test_ext(void)
{
	// Warp collectives: 64 threads.
	int ha[64];
	unsigned ho[64 * 5];
	for (int i = 0; i < 64; i++)
		ha[i] = (int)(rnd32() % 1000);
	int *da = dev<int>(64);
	unsigned *dout = dev<unsigned>(64 * 5);
	up(da, ha, 64);
	k_ext_warp<<<1, 64>>>(da, dout);
	CK(cudaGetLastError());
	down(ho, dout, 64 * 5);
	for (int t = 0; t < 64; t++) {
		int w = t & ~31;
		unsigned any = 0, sum = 0, mx = 0, same = 1;
		for (int j = 0; j < 32; j++) {
			int v = ha[w + j];
			if ((v & 3) == (ha[t] & 3))
				any |= 1u << j;
			if ((v & 1) == (ha[t] & 1))
				sum += (unsigned)v, mx = (unsigned)v > mx ? (unsigned)v : mx;
			if (w && (v & 1) != (ha[w] & 1))
				same = 0;
		}
		check(ho[t * 5] == any, "match.any", t, ho[t * 5], any);
		check(ho[t * 5 + 1] == sum, "redux.add over a partition", t, ho[t * 5 + 1], sum);
		check(ho[t * 5 + 2] == mx, "redux.max over a partition", t, ho[t * 5 + 2], mx);
		check(ho[t * 5 + 3] == (same ? 0xffffffffu : 0), "match.all", t, ho[t * 5 + 3], same);
		check(ho[t * 5 + 4] == same, "match.all predicate", t, ho[t * 5 + 4], same);
	}
	cudaFree(da), cudaFree(dout);

	// Half pairs: multiples of 1/16 in [-8, 8), so every result before its
	// one rounding is exact in float.
	enum { NH = 256 };
	__half2 hx[3][NH], hr[NH * 4];
	for (int k = 0; k < 3; k++)
		for (int i = 0; i < NH; i++)
			hx[k][i] = __floats2half2_rn((float)((int)(rnd32() % 256) - 128) / 16,
						     (float)((int)(rnd32() % 256) - 128) / 16);
	__half2 *dh[4];
	for (int k = 0; k < 3; k++) {
		dh[k] = dev<__half2>(NH);
		up(dh[k], hx[k], NH);
	}
	dh[3] = dev<__half2>(NH * 4);
	k_ext_half<<<2, 128>>>(dh[0], dh[1], dh[2], dh[3], NH);
	CK(cudaGetLastError());
	down(hr, dh[3], NH * 4);
	for (int i = 0; i < NH; i++)
		for (int h = 0; h < 2; h++) {
			float x = h2f(h ? __high2half(hx[0][i]) : __low2half(hx[0][i]));
			float y = h2f(h ? __high2half(hx[1][i]) : __low2half(hx[1][i]));
			float z = h2f(h ? __high2half(hx[2][i]) : __low2half(hx[2][i]));
			float want[4] = {half_round(x + y), half_round(x * y), half_round(x * y + z),
					 fmaxf(-x, half_round(y - z))};
			for (int k = 0; k < 4; k++) {
				float got = h2f(h ? __high2half(hr[i * 4 + k]) : __low2half(hr[i * 4 + k]));
				check(got == want[k],
				      k == 0   ? "add.f16x2"
				      : k == 1 ? "mul.f16x2"
				      : k == 2 ? "fma.f16x2"
					       : "max/neg/sub.f16x2",
				      i * 2 + h, got, want[k]);
			}
		}
	for (int k = 0; k < 4; k++)
		cudaFree(dh[k]);

	// Textures over an 8 x 8 float array: linear filtering clamped, point
	// sampling normalized and wrapped, tld4; a surface over another.
	float tex[64], crd[2 * 64], to[64 * 7], sv[64];
	for (int i = 0; i < 64; i++)
		tex[i] = (float)(rnd32() % 100), sv[i] = (float)i;
	for (int i = 0; i < 64; i++)
		crd[2 * i] = (float)(rnd32() % 1200) / 100 - 2,
			crd[2 * i + 1] = (float)(rnd32() % 1200) / 100 - 2;
	cudaChannelFormatDesc cf = cudaCreateChannelDesc<float>();
	cudaArray_t arr, sarr;
	CK(cudaMallocArray(&arr, &cf, 8, 8));
	CK(cudaMallocArray(&sarr, &cf, 8, 8, cudaArraySurfaceLoadStore));
	CK(cudaMemcpy2DToArray(arr, 0, 0, tex, 32, 32, 8, cudaMemcpyHostToDevice));
	CK(cudaMemcpy2DToArray(sarr, 0, 0, sv, 32, 32, 8, cudaMemcpyHostToDevice));
	cudaResourceDesc rd = {};
	rd.resType = cudaResourceTypeArray;
	rd.res.array.array = arr;
	cudaTextureDesc td = {};
	td.addressMode[0] = td.addressMode[1] = cudaAddressModeClamp;
	td.filterMode = cudaFilterModeLinear;
	td.readMode = cudaReadModeElementType;
	cudaTextureObject_t tl, tp;
	CK(cudaCreateTextureObject(&tl, &rd, &td, NULL));
	td.filterMode = cudaFilterModePoint;
	td.addressMode[0] = td.addressMode[1] = cudaAddressModeWrap;
	td.normalizedCoords = 1;
	CK(cudaCreateTextureObject(&tp, &rd, &td, NULL));
	rd.res.array.array = sarr;
	cudaSurfaceObject_t so;
	CK(cudaCreateSurfaceObject(&so, &rd));
	float2 *dc = dev<float2>(64);
	float *dto = dev<float>(64 * 7);
	up(dc, (float2 *)crd, 64);
	k_ext_tex<<<1, 64>>>(tl, tp, so, dc, dto, 64);
	CK(cudaGetLastError());
	down(to, dto, 64 * 7);
	float back[64];
	CK(cudaMemcpy2DFromArray(back, 32, sarr, 0, 0, 32, 8, cudaMemcpyDeviceToHost));
	auto at = [&](int x, int y, bool wrap) {
		if (wrap)
			x = ((x % 8) + 8) % 8, y = ((y % 8) + 8) % 8;
		else
			x = x < 0 ? 0 : x > 7 ? 7 : x, y = y < 0 ? 0 : y > 7 ? 7 : y;
		return tex[y * 8 + x];
	};
	for (int i = 0; i < 64; i++) {
		float x = crd[2 * i], y = crd[2 * i + 1];
		float u = x - 0.5f, v = y - 0.5f, fu = floorf(u), fv = floorf(v), a = u - fu, b = v - fv;
		int iu = (int)fu, iv = (int)fv;
		float lin = (1 - a) * (1 - b) * at(iu, iv, false) + a * (1 - b) * at(iu + 1, iv, false) +
			    (1 - a) * b * at(iu, iv + 1, false) + a * b * at(iu + 1, iv + 1, false);
		// The GPU's filter weights have 8 fraction bits: within 1/256 of the texel range.
		check(fabsf(to[i * 7] - lin) <= 100.0f / 256 + 1e-3f, "tex.2d linear", i, to[i * 7], lin);
		float pt = at((int)floorf(x / 8 * 8), (int)floorf(y / 8 * 8), true);
		check(to[i * 7 + 1] == pt, "tex.2d point normalized wrap", i, to[i * 7 + 1], pt);
		// tld4 on unnormalized coordinates of a normalized texture: the
		// footprint of (x / 8, y / 8) scaled, wrapped.
		float gx = x - 0.5f, gy = y - 0.5f;
		int gi = (int)floorf(gx), gj = (int)floorf(gy);
		float gw[4] = {at(gi, gj + 1, true), at(gi + 1, gj + 1, true), at(gi + 1, gj, true),
			       at(gi, gj, true)};
		for (int k = 0; k < 4; k++)
			check(to[i * 7 + 2 + k] == gw[k], "tld4.r", i * 4 + k, to[i * 7 + 2 + k], gw[k]);
		check(to[i * 7 + 6] == sv[i], "suld.b", i, to[i * 7 + 6], sv[i]);
		check(back[i] == sv[i] * 2 + 1, "sust.b", i, back[i], sv[i] * 2 + 1);
	}
	CK(cudaDestroyTextureObject(tl));
	CK(cudaDestroyTextureObject(tp));
	CK(cudaDestroySurfaceObject(so));
	CK(cudaFreeArray(arr));
	CK(cudaFreeArray(sarr));
	cudaFree(dc), cudaFree(dto);

	// cp.async.
	int gi[64], go[64];
	for (int i = 0; i < 64; i++)
		gi[i] = (int)rnd32();
	int *dg = dev<int>(64), *dgo = dev<int>(64);
	up(dg, gi, 64);
	k_ext_async<<<1, 64>>>(dg, dgo);
	CK(cudaGetLastError());
	down(go, dgo, 64);
	for (int i = 0; i < 64; i++)
		check(go[i] == gi[63 - i], "cp.async", i, go[i], gi[63 - i]);
	cudaFree(dg), cudaFree(dgo);

	// wmma: small integers, exact in f16 and f32.
	__half wa[256], wb[256];
	float wc[256], wd[256];
	for (int i = 0; i < 256; i++)
		wa[i] = __float2half((float)((int)(rnd32() % 9) - 4)),
		wb[i] = __float2half((float)((int)(rnd32() % 9) - 4)),
		wc[i] = (float)((int)(rnd32() % 201) - 100);
	__half *dwa = dev<__half>(256), *dwb = dev<__half>(256);
	float *dwc = dev<float>(256), *dwd = dev<float>(256);
	up(dwa, wa, 256), up(dwb, wb, 256), up(dwc, wc, 256);
	k_ext_wmma<<<1, 32>>>(dwa, dwb, dwc, dwd);
	CK(cudaGetLastError());
	down(wd, dwd, 256);
	for (int i = 0; i < 16; i++)
		for (int j = 0; j < 16; j++) {
			float acc = wc[i * 16 + j];
			for (int k = 0; k < 16; k++)
				acc += h2f(wa[i * 16 + k]) * h2f(wb[j * 16 + k]);
			check(wd[i * 16 + j] == acc * 0.5f, "wmma m16n16k16 f16/f32", i * 16 + j,
			      wd[i * 16 + j], acc * 0.5f);
		}
	cudaFree(dwa), cudaFree(dwb), cudaFree(dwc), cudaFree(dwd);
	printf("ext (redux, match, f16x2, tex, tld4, suld/sust, cp.async, wmma): checked\n");
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--fault"))
		return run_fault();
	if (argc > 1 && !strcmp(argv[1], "--assert"))
		return run_assert();
	if (argc > 2 && !strcmp(argv[1], "--bench"))
		return run_bench(atoi(argv[2]));
	test_int();
	test_float();
	test_cvt();
	test_control();
	test_shared();
	test_atomics();
	test_warp();
	test_spaces();
	test_ext();
	CK(cudaDeviceSynchronize());
	printf("RESULT ptx_conformance failures=%d verified=%s\n", failures, failures ? "no" : "yes");
	return failures ? 1 : 0;
}
