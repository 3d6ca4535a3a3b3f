/* SPDX-License-Identifier: Apache-2.0 */
/* fatbin_globals.cu - device variables whose sizes test_fatbin.c checks
 * against xgpu_fatbin_info.global_bytes: __device__, __constant__ and
 * __managed__ ones, initialised and not, scalars, arrays, structs, vectors,
 * a function's static, and a 1 GiB array that costs the image nothing.
 * With XGPU_HUGE also a 4 GiB one, past what ptxas's 32-bit section sizes
 * hold. k_globals uses every variable so that none is dropped. */
#include <stdint.h>

struct rec {
	double d;
	int i;
	char c;
}; /* 16 bytes */

__device__ int g_int;                          /* 4 */
__device__ int g_int_init = 5;                 /* 4 */
__device__ float g_arr[1000];                  /* 4000 */
__device__ double g_arr_init[3] = {1, 2, 3};   /* 24 */
__device__ struct rec g_rec;                   /* 16 */
__device__ struct rec g_rec_init = {1, 2, 3};  /* 16 */
__device__ float4 g_vec[3];                    /* 48 */
__device__ int *g_ptr = &g_int_init;           /* 8 */
__device__ char big[1 << 30];                  /* 1 GiB */
__managed__ int m_int;                         /* 4 */
__managed__ int m_arr[100] = {1};              /* 400 */
__constant__ int c_int;                        /* 4 */
__constant__ int c_int_init = 7;               /* 4 */
__constant__ float c_arr[256];                 /* 1024 */
__constant__ double c_arr_init[3] = {1, 2, 3}; /* 24 */
#ifdef XGPU_HUGE
__device__ char huge[1ull << 32]; /* 4 GiB */
#endif

__global__ void k_globals(long long *out, int n)
{
	static __device__ int calls; /* 4 */
	calls++;
	long long s = g_int + g_int_init + (long long)g_arr[n] + (long long)g_arr_init[n] + g_rec.i +
		      g_rec_init.c + (long long)g_vec[n].x + *g_ptr + big[n] + m_int + m_arr[n] + c_int +
		      c_int_init + (long long)c_arr[n] + (long long)c_arr_init[n] + calls;
#ifdef XGPU_HUGE
	s += huge[(size_t)n << 31];
#endif
	out[0] = s;
}
