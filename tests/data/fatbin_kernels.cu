/* SPDX-License-Identifier: Apache-2.0 */
/* fatbin_kernels.cu - kernels whose parameter layouts test_fatbin.c checks:
 * nvcc builds this into fatbins with every compression mode, PTX only, and
 * two architectures, and the parser must report the same layout for each. */
#include <stdint.h>

struct s40 {
	double d;
	int i;
	char c;
	double e[3];
}; /* 40 bytes, 8-aligned */

struct big {
	unsigned char b[4096];
};

/* Past 16 KiB of parameters nvcc switches to another KPARAM_INFO record. */
struct huge {
	unsigned char b[20000];
};

__global__ void k_ptrs(const float *a, const float *b, float *c, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		c[i] = a[i] + b[i];
}

/* Mixed scalars so that the compiler has to pad between them. */
__global__ void k_mixed(char c, double d, short s, int i, float f, char c2, long long ll, short s2,
			double *out)
{
	out[0] = c + d + s + i + f + c2 + ll + s2;
}

__global__ void k_struct(int a, struct s40 s, char tail, double *out)
{
	out[0] = a + s.d + s.i + s.c + s.e[0] + s.e[1] + s.e[2] + tail;
}

__global__ void k_big(struct big b, int n, unsigned char *out)
{
	out[0] = b.b[n] + b.b[4095];
}

__global__ void k_huge(char c, struct huge h, short s, double *out)
{
	out[0] = c + h.b[0] + h.b[19999] + s;
}

__global__ void k_noparams(void)
{
}

__global__ void k_many(int p0, int p1, int p2, int p3, int p4, int p5, int p6, int p7, int p8, int p9,
		       int p10, int p11, int p12, int p13, int p14, int p15, int p16, int p17, int p18,
		       int p19, int p20, int p21, int p22, int p23, int p24, int p25, int p26, int p27,
		       int p28, int p29, int p30, int *out)
{
	out[0] = p0 + p1 + p2 + p3 + p4 + p5 + p6 + p7 + p8 + p9 + p10 + p11 + p12 + p13 + p14 + p15 + p16 +
		 p17 + p18 + p19 + p20 + p21 + p22 + p23 + p24 + p25 + p26 + p27 + p28 + p29 + p30;
}

template <typename T, int N> struct holder {
	T v[N];
};

template <typename T, int N> __global__ void k_templ(holder<T, N> h, T *out, uint8_t flag)
{
	out[0] = h.v[N - 1] + flag;
}

template __global__ void k_templ<double, 3>(holder<double, 3>, double *, uint8_t);
template __global__ void k_templ<short, 5>(holder<short, 5>, short *, uint8_t);

extern "C" __global__ void k_extern_c(float *out, float x, unsigned long long y)
{
	out[0] = x + (float)y;
}
