/* SPDX-License-Identifier: Apache-2.0 */
/* ptx_half.c - f16, f16x2, bf16 and bf16x2 arithmetic for the PTX
 * interpreter. Each half is widened to double, where add, sub and mul of two
 * halves are exact (and fma nearly so: its product is exact, so only the
 * final rounding can differ, for sums spanning over 53 bits), and rounded
 * once to the half type in the instruction's mode (round to nearest even by
 * default, as PTX says). .sat clamps to [0, 1]; NaN results are the
 * canonical NaN, as on the GPU. */
#include "ptx_ext.h"

#include <math.h>
#include <string.h>

bool ptx_is_half(uint8_t t)
{
	return t == PT_F16 || t == PT_F16X2 || t == PT_BF16 || t == PT_BF16X2;
}

static double h2d(uint16_t h, bool bf)
{
	if (bf) {
		uint32_t u = (uint32_t)h << 16;
		float f;
		memcpy(&f, &u, 4);
		return f;
	}
	int e = (h >> 10) & 0x1f, m = h & 0x3ff;
	double v;
	if (e == 0)
		v = ldexp(m, -24);
	else if (e == 31)
		v = m ? NAN : INFINITY;
	else
		v = ldexp(m | 0x400, e - 25);
	return (h & 0x8000) ? -v : v;
}

/* Rounds |a| (finite, >= 0) to a multiple of 2^q in mode rnd, sign s. */
static double round_to(double a, int q, uint8_t rnd, bool s)
{
	double x = ldexp(a, -q), r;
	switch (rnd) {
	case R_RZ:
		r = trunc(x);
		break;
	case R_RM:
		r = s ? ceil(x) : floor(x);
		break;
	case R_RP:
		r = s ? floor(x) : ceil(x);
		break;
	default:
		r = nearbyint(x); /* the host's default mode: to nearest even */
		break;
	}
	return ldexp(r, q);
}

static uint16_t d2h(double v, bool bf, uint8_t rnd)
{
	/* f16: 10 fraction bits, exponents -14..15; bf16: 7 bits, -126..127. */
	const int frac = bf ? 7 : 10, emin = bf ? -126 : -14, emax = bf ? 127 : 15, ebias = bf ? 127 : 15;
	if (isnan(v))
		return bf ? 0x7fff : 0x7fff;
	bool s = signbit(v);
	uint16_t sign = s ? 0x8000 : 0, inf = bf ? 0x7f80 : 0x7c00;
	double a = fabs(v);
	if (isinf(a))
		return sign | inf;
	if (a == 0)
		return sign;
	int e;
	frexp(a, &e); /* a in [2^(e-1), 2^e) */
	int ex = e - 1 < emin ? emin : e - 1;
	double r = round_to(a, ex - frac, rnd, s);
	if (r == 0)
		return sign;
	frexp(r, &e);
	ex = e - 1;
	if (ex > emax) {
		/* Overflow: infinity, or the largest finite toward zero. */
		bool to_inf = rnd == R_NONE || rnd == R_RN || (rnd == R_RP && !s) || (rnd == R_RM && s);
		return sign | (to_inf ? inf : (uint16_t)(inf - 1));
	}
	if (ex < emin) /* still subnormal */
		return sign | (uint16_t)ldexp(r, -(emin - frac));
	uint32_t m = (uint32_t)ldexp(r, frac - ex) - (1u << frac);
	return sign | (uint16_t)((uint32_t)(ex + ebias) << frac | m);
}

static uint16_t one(uint8_t op, bool bf, uint8_t rnd, bool sat, uint16_t a, uint16_t b, uint16_t c)
{
	if (op == OP_NEG)
		return a ^ 0x8000;
	if (op == OP_ABS)
		return a & 0x7fff;
	double x = h2d(a, bf), y = h2d(b, bf), z = h2d(c, bf), r;
	switch (op) {
	case OP_ADD:
		r = x + y;
		break;
	case OP_SUB:
		r = x - y;
		break;
	case OP_MUL:
		r = x * y;
		break;
	case OP_MIN:
		r = fmin(x, y);
		break;
	case OP_MAX:
		r = fmax(x, y);
		break;
	default: /* fma, mad */
		r = fma(x, y, z);
		break;
	}
	if (sat)
		r = isnan(r) ? 0 : r < 0 ? 0 : r > 1 ? 1 : r;
	return d2h(r, bf, rnd);
}

double ptx_h2d(uint16_t h, bool bf)
{
	return h2d(h, bf);
}

uint16_t ptx_d2h(double v, bool bf)
{
	return d2h(v, bf, R_RN);
}

uint64_t ptx_half_op(uint8_t op, uint8_t t, uint8_t rnd, bool sat, uint64_t a, uint64_t b, uint64_t c)
{
	bool bf = t == PT_BF16 || t == PT_BF16X2;
	uint64_t lo = one(op, bf, rnd, sat, (uint16_t)a, (uint16_t)b, (uint16_t)c);
	if (t == PT_F16 || t == PT_BF16)
		return lo;
	uint64_t hi = one(op, bf, rnd, sat, (uint16_t)(a >> 16), (uint16_t)(b >> 16), (uint16_t)(c >> 16));
	return hi << 16 | lo;
}

uint64_t ptx_tf32(uint64_t v, uint8_t rnd)
{
	/* f32 bits to tf32's 10 fraction bits, the low 13 bits cleared: .rna
	 * (R_NONE here) rounds half away from zero, .rn to even, .rz down. */
	uint32_t u = (uint32_t)v;
	if ((u & 0x7f800000u) == 0x7f800000u)
		return (u & 0x7fffffu) ? 0x7fffffffu : u;
	if (rnd == R_RZ)
		return u & ~0x1fffu;
	if (rnd == R_RN)
		u += 0xfffu + ((u >> 13) & 1);
	else
		u += 0x1000u;
	return u & ~0x1fffu;
}
