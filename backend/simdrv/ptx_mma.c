/* SPDX-License-Identifier: Apache-2.0 */
/* ptx_mma.c - wmma fragments for the PTX interpreter: shapes, element types
 * and the interpreter's own fragment layout (ptx_ext.h), element reads and
 * writes at a fragment register's bits. Products are summed in double, which
 * holds every f16, bf16, tf32 and 8-bit product exactly, and rounded once to
 * the accumulator's type: at least as accurate as the tensor cores. */
#include "ptx_ext.h"

#include <math.h>
#include <string.h>

static const uint8_t shapes[][3] = {
    [WS_M16N16K16] = {16, 16, 16}, [WS_M32N8K16] = {32, 8, 16}, [WS_M8N32K16] = {8, 32, 16},
    [WS_M16N16K8] = {16, 16, 8},   [WS_M8N8K4] = {8, 8, 4},
};

bool ptx_frag_of(uint8_t shape, uint8_t frag, uint8_t etype, struct ptx_frag *f)
{
	if (shape == WS_NONE || shape > WS_M8N8K4 || frag > WM_STORE_D)
		return false;
	uint32_t m = shapes[shape][0], n = shapes[shape][1], k = shapes[shape][2];
	bool ab = frag == WM_LOAD_A || frag == WM_LOAD_B;
	switch (etype) {
	case PT_F16:
	case PT_BF16:
		f->esize = 2, f->per = 2;
		break;
	case PT_U8:
	case PT_S8:
		f->esize = 1, f->per = 4;
		break;
	case PT_F32:
	case PT_S32:
		f->esize = 4, f->per = 1;
		break;
	case PT_F64:
		f->esize = 8, f->per = 1;
		break;
	default:
		return false;
	}
	/* Which element types go with which shapes and fragments. */
	if ((shape == WS_M8N8K4) != (etype == PT_F64))
		return false;
	if (shape == WS_M16N16K8 && etype != PT_F32)
		return false;
	if (shape != WS_M16N16K8 && shape != WS_M8N8K4 &&
	    (ab ? etype == PT_F32 || etype == PT_S32 : etype != PT_F16 && etype != PT_F32 && etype != PT_S32))
		return false;
	f->rows = frag == WM_LOAD_A ? m : frag == WM_LOAD_B ? k : m;
	f->cols = frag == WM_LOAD_A ? k : n;
	f->etype = etype;
	uint32_t e = f->rows * f->cols;
	if (etype == PT_F16 && ab)
		f->nregs = 8;
	else if (e % (32 * f->per))
		return false;
	else
		f->nregs = e / (32 * f->per);
	return true;
}

double ptx_frag_get(const struct ptx_frag *f, uint64_t v, uint32_t sub)
{
	uint64_t x = f->esize >= 8 ? v : (v >> (sub * f->esize * 8)) & ((1ull << (f->esize * 8)) - 1);
	switch (f->etype) {
	case PT_F16:
		return ptx_h2d((uint16_t)x, false);
	case PT_BF16:
		return ptx_h2d((uint16_t)x, true);
	case PT_U8:
		return (double)(uint8_t)x;
	case PT_S8:
		return (double)(int8_t)(uint8_t)x;
	case PT_S32:
		return (double)(int32_t)(uint32_t)x;
	case PT_F32: {
		uint32_t u = (uint32_t)x;
		float fl;
		memcpy(&fl, &u, 4);
		return fl;
	}
	default: {
		double d;
		memcpy(&d, &x, 8);
		return d;
	}
	}
}

uint64_t ptx_frag_put(const struct ptx_frag *f, uint64_t v, uint32_t sub, double x)
{
	uint64_t bits;
	switch (f->etype) {
	case PT_F16:
		bits = ptx_d2h(x, false);
		break;
	case PT_S32: {
		/* Wraps as the integer sum does. */
		double r = isnan(x) ? 0 : fmod(x, 4294967296.0);
		bits = (uint32_t)(int64_t)r;
		break;
	}
	case PT_F32: {
		float fl = (float)x;
		uint32_t u;
		memcpy(&u, &fl, 4);
		bits = u;
		break;
	}
	default:
		memcpy(&bits, &x, 8);
		return bits;
	}
	unsigned sh = sub * f->esize * 8, w = f->esize * 8;
	uint64_t m = ((1ull << w) - 1) << sh;
	return (v & ~m) | (bits << sh & m);
}

void ptx_mma_types(const struct ptx_insn *in, uint8_t *dt, uint8_t *at, uint8_t *ct)
{
	*dt = in->type;
	if (in->vec == 2) {
		*at = PT_F32, *ct = PT_F32;
		return;
	}
	switch (in->type2) {
	case PT_BF16:
		*at = PT_BF16, *ct = PT_F32;
		break;
	case PT_U8:
	case PT_S8:
		*at = in->type2, *ct = PT_S32;
		break;
	case PT_F64:
		*at = PT_F64, *ct = PT_F64;
		break;
	default: /* .dtype.ctype: f16 inputs */
		*at = PT_F16, *ct = in->type2;
		break;
	}
}

static bool frag_opnd(const struct ptx_opnd *o, uint32_t n)
{
	return (o->k == PO_XVEC || o->k == PO_VEC) && o->n == n;
}

static bool plain_addr(const struct ptx_opnd *o)
{
	return o->k == PO_ADDR && o->n == 0;
}

static bool is_val(const struct ptx_opnd *o)
{
	return o->k == PO_REG || o->k == PO_IMM || o->k == PO_SREG;
}

const char *ptx_wmma_check(const struct ptx_insn *in)
{
	struct ptx_frag f;
	if (in->mod == WM_MMA) {
		uint8_t dt, at, ct;
		ptx_mma_types(in, &dt, &at, &ct);
		struct ptx_frag fa, fb, fc, fd;
		if (!ptx_frag_of(in->bop, WM_LOAD_A, at, &fa) || !ptx_frag_of(in->bop, WM_LOAD_B, at, &fb) ||
		    !ptx_frag_of(in->bop, WM_LOAD_C, ct, &fc) || !ptx_frag_of(in->bop, WM_STORE_D, dt, &fd))
			return "wmma.mma shape or type";
		if (in->nops != 4 || !frag_opnd(&in->o[0], fd.nregs) || !frag_opnd(&in->o[1], fa.nregs) ||
		    !frag_opnd(&in->o[2], fb.nregs) || !frag_opnd(&in->o[3], fc.nregs))
			return "wmma.mma operands";
		return NULL;
	}
	uint8_t et = in->mod <= WM_LOAD_B && in->vec == 2 ? PT_F32 : in->type;
	if (!ptx_frag_of(in->bop, in->mod, et, &f))
		return "wmma shape or type";
	int ai = in->mod == WM_STORE_D ? 0 : 1;
	if (in->nops != 3 || !plain_addr(&in->o[ai]) || !frag_opnd(&in->o[1 - ai], f.nregs) ||
	    !is_val(&in->o[2]))
		return "wmma operands";
	return NULL;
}
