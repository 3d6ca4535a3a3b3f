/* SPDX-License-Identifier: Apache-2.0 */
/* ptx_ext.c - decoding hooks for the interpreter's larger instruction
 * families (ptx_ext.h), the warp collectives redux and match, and the
 * mbarrier state machine.
 *
 * mbarrier: the 64-bit object in shared memory is opaque to programs, so it
 * holds the interpreter's own encoding: pending arrivals (bits 0-20), the
 * expected count (21-41), the phase parity (42) and the pending transaction
 * bytes (43-63, signed). A phase completes when its arrivals reach zero with
 * no transaction bytes pending; the token arrive returns carries the phase
 * it arrived in, so a wait on it is done once the parity has moved on.
 */
#include "ptx_ext.h"

#include <string.h>

/* ---- decoding ---------------------------------------------------------------------- */

static bool one_of(const char *m, const char *const *names, int n, uint8_t *out)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(m, names[i])) {
			*out = (uint8_t)i;
			return true;
		}
	return false;
}

#define ONE_OF(m, arr, out) one_of(m, arr, (int)(sizeof arr / sizeof *arr), out)

static bool wmma_mod(struct ptx_insn *in, const char *m)
{
	static const char *const shp[] = {"", "m16n16k16", "m32n8k16", "m8n32k16", "m16n16k8", "m8n8k4"};
	uint8_t v;
	if (!strcmp(m, "load") || !strcmp(m, "store") || !strcmp(m, "mma")) {
		in->mod = m[0] == 'l' ? WM_LOAD_A : m[0] == 's' ? WM_STORE_D : WM_MMA;
		return true;
	}
	if (strlen(m) == 1 && strchr("abcd", m[0])) {
		if (in->mod == WM_LOAD_A && m[0] != 'd')
			in->mod = (uint8_t)(WM_LOAD_A + (m[0] - 'a'));
		else if (!(in->mod == WM_STORE_D && m[0] == 'd'))
			return false;
		return true;
	}
	if (!strcmp(m, "row") || !strcmp(m, "col")) {
		/* bit 2: the first layout was seen */
		unsigned bit = (in->to & 4) ? 2 : 1;
		if (m[0] == 'c')
			in->to |= (uint8_t)bit;
		in->to |= 4;
		return true;
	}
	if (ONE_OF(m, shp, &v) && v) {
		in->bop = v;
		return true;
	}
	if (!strcmp(m, "tf32")) {
		in->vec = 2;
		return true;
	}
	if (!strcmp(m, "satfinite")) {
		in->sat = 1;
		return true;
	}
	return false;
}

bool ptx_ext_mod(struct ptx_insn *in, const char *m)
{
	static const char *const red[] = {"add", "min", "max", "exch", "cas", "and", "or", "xor"};
	static const char *const geo[] = {"", "1d", "2d", "3d", "a1d", "a2d", "cube", "acube"};
	static const char *const su[] = {"trap", "clamp", "zero"};
	static const char *const q[] = {"width",         "height",
					"depth",         "channel_data_type",
					"channel_order", "normalized_coords",
					"filter_mode",   "addr_mode_0",
					"addr_mode_1",   "addr_mode_2",
					"array_size",    "num_mipmap_levels"};
	static const char *const mb[] = {"init",      "arrive",   "arrive_drop",   "expect_tx", "complete_tx",
					 "test_wait", "try_wait", "pending_count", "inval"};
	uint8_t v;
	switch (in->op) {
	case OP_REDUX:
		if (ONE_OF(m, red, &v) && v != A_EXCH && v != A_CAS) {
			in->mod = v;
			return true;
		}
		return false;
	case OP_MATCH:
		if (!strcmp(m, "any") || !strcmp(m, "all")) {
			in->mod = m[1] == 'l';
			return true;
		}
		return false;
	case OP_TEX:
	case OP_TLD4:
	case OP_SULD:
	case OP_SUST:
		if (ONE_OF(m, geo, &v) && v) {
			in->mod = v;
			return true;
		}
		if (in->op == OP_TLD4 && strlen(m) == 1 && strchr("rgba", m[0])) {
			in->bop = (uint8_t)(strchr("rgba", m[0]) - "rgba");
			return true;
		}
		if (in->op == OP_TEX && (!strcmp(m, "level") || !strcmp(m, "grad"))) {
			/* One level (the sim has no mipmaps): any lod or gradient
			 * selects it. */
			in->bop = m[0] == 'l' ? 1 : 2;
			return true;
		}
		if ((in->op == OP_SULD || in->op == OP_SUST) && ONE_OF(m, su, &v)) {
			in->to = v;
			return true;
		}
		return (in->op == OP_SULD || in->op == OP_SUST) && !strcmp(m, "b");
	case OP_TXQ:
	case OP_SUQ:
		if (ONE_OF(m, q, &v)) {
			in->mod = v;
			return true;
		}
		return false;
	case OP_CPASYNC:
		if (!strcmp(m, "async") && !in->bop) {
			in->bop = 1; /* seen */
			return true;
		}
		if (!strcmp(m, "commit_group"))
			in->mod = CA_COMMIT;
		else if (!strcmp(m, "wait_group") || !strcmp(m, "wait_all"))
			in->mod = CA_WAIT;
		else if (!strcmp(m, "mbarrier"))
			in->mod = CA_MBAR_ARRIVE;
		else if (!strcmp(m, "arrive") && in->mod == CA_MBAR_ARRIVE)
			;
		else if (!strcmp(m, "noinc") && in->mod == CA_MBAR_ARRIVE)
			in->to = 1;
		else if (!strcmp(m, "bulk"))
			in->mod = CA_BULK;
		else if (!strcmp(m, "mbarrier::complete_tx::bytes") && in->mod == CA_BULK)
			;
		else if (!strcmp(m, "shared") || !strcmp(m, "shared::cta") || !strcmp(m, "shared::cluster") ||
			 !strcmp(m, "global"))
			in->space = PS_SHARED; /* the destination's; the source is global */
		else
			return false;
		return true;
	case OP_MBAR:
		if (ONE_OF(m, mb, &v)) {
			if (v == MB_EXPECT_TX && in->mod == MB_ARRIVE)
				in->to = 1; /* arrive.expect_tx */
			else
				in->mod = v;
			return true;
		}
		if (!strcmp(m, "parity")) {
			in->bop = 1;
			return true;
		}
		if (!strcmp(m, "shared::cluster")) {
			in->space = PS_SHARED;
			return true;
		}
		return false;
	case OP_WMMA:
		return wmma_mod(in, m);
	case OP_VABSDIFF4:
		if (strcmp(m, "add"))
			return false; /* the per-byte forms are refused by name */
		in->mod = 1;
		return true;
	case OP_CVT:
		/* cvt.rna.tf32.f32 (tf32 is no register type: it marks vec) */
		if (!strcmp(m, "tf32"))
			in->vec = 2;
		else if (!strcmp(m, "rna"))
			in->mod = 1;
		else
			return false;
		return true;
	default:
		return false;
	}
}

bool ptx_ext_type_ok(const struct ptx_insn *in, uint8_t t)
{
	if (t == PT_B128)
		return false;
	if (!ptx_is_half(t))
		return true;
	switch (in->op) {
	case OP_CVT:
	case OP_LD:
	case OP_ST:
	case OP_MOV:
		return t == PT_F16 || t == PT_BF16;
	case OP_ADD:
	case OP_SUB:
	case OP_MUL:
	case OP_FMA:
	case OP_MIN:
	case OP_MAX:
	case OP_NEG:
	case OP_ABS:
	case OP_SETP:
		return true;
	case OP_WMMA:
		return true;
	default:
		return false;
	}
}

static bool is_reg(const struct ptx_opnd *o)
{
	return o->k == PO_REG;
}

static bool is_val(const struct ptx_opnd *o)
{
	return o->k == PO_REG || o->k == PO_IMM || o->k == PO_SREG;
}

/* [reg] or [reg, {coordinates}] with at least n coordinates. */
static bool is_handle(const struct ptx_opnd *o, unsigned n)
{
	return o->k == PO_ADDR && o->r != PTX_NOREG && o->n >= n && o->n <= 4;
}

static unsigned dims(uint8_t g)
{
	static const uint8_t d[] = {
	    [G_1D] = 1, [G_2D] = 2, [G_3D] = 3, [G_A1D] = 2, [G_A2D] = 3, [G_CUBE] = 3, [G_ACUBE] = 4};
	return g < sizeof d ? d[g] : 0;
}

static bool plain_addr(const struct ptx_opnd *o)
{
	return o->k == PO_ADDR && o->n == 0;
}

const char *ptx_ext_check(const struct ptx_insn *in)
{
	unsigned n = in->nops;
	switch (in->op) {
	case OP_REDUX:
		if (n < 3 || !is_reg(&in->o[0]) || !is_val(&in->o[1]) || !is_val(&in->o[2]))
			return "redux operands";
		if (in->type != PT_U32 && in->type != PT_S32 && in->type != PT_B32)
			return "redux type";
		return NULL;
	case OP_MATCH:
		if (n < 3 || !is_reg(&in->o[0]) || !is_val(&in->o[1]) || !is_val(&in->o[2]))
			return "match operands";
		return in->type == PT_B32 || in->type == PT_B64 ? NULL : "match type";
	case OP_TEX:
	case OP_TLD4:
		if (!dims(in->mod) || (in->op == OP_TLD4 && in->mod != G_2D && in->mod != G_A2D &&
				       in->mod != G_CUBE && in->mod != G_ACUBE))
			return "tex geometry";
		if (n < 2 || in->o[0].k != PO_VEC || in->o[0].n != 4 || !is_handle(&in->o[1], dims(in->mod)))
			return "tex operands";
		if (in->type != PT_F32 && in->type != PT_S32 && in->type != PT_U32)
			return "tex type";
		if (in->type2 != PT_F32 && in->type2 != PT_S32)
			return "tex coordinate type";
		if (in->bop == 1 && in->op == OP_TEX && n != 3)
			return "tex.level operands";
		if (in->bop == 2 && in->op == OP_TEX &&
		    (n != 4 || in->o[2].k != PO_VEC || in->o[3].k != PO_VEC))
			return "tex.grad operands";
		if (!in->bop && in->op == OP_TEX && n > 2)
			return "tex operands";
		return NULL;
	case OP_SULD:
	case OP_SUST: {
		if (!dims(in->mod) || in->mod == G_CUBE || in->mod == G_ACUBE)
			return "surface geometry";
		int hi = in->op == OP_SULD ? 1 : 0, vi = 1 - hi;
		if (n != 2 || !is_handle(&in->o[hi], dims(in->mod)))
			return "surface operands";
		const struct ptx_opnd *v = &in->o[vi];
		if (!(v->k == PO_VEC && v->n == in->vec) && !(in->vec == 1 && v->k == PO_REG))
			return "surface operands";
		uint8_t t = in->type;
		if (t != PT_B8 && t != PT_B16 && t != PT_B32 && t != PT_B64)
			return "surface type";
		return NULL;
	}
	case OP_TXQ:
	case OP_SUQ:
		if (n != 2 || !is_reg(&in->o[0]) || !is_handle(&in->o[1], 0) || in->o[1].n)
			return "txq operands";
		return NULL;
	case OP_CPASYNC:
		if (!in->bop)
			return "cp";
		switch (in->mod) {
		case CA_COPY:
			if (n < 3 || !plain_addr(&in->o[0]) || !plain_addr(&in->o[1]) ||
			    in->o[2].k != PO_IMM ||
			    (in->o[2].imm != 4 && in->o[2].imm != 8 && in->o[2].imm != 16) ||
			    (n > 3 && !is_val(&in->o[3])))
				return "cp.async operands";
			return NULL;
		case CA_COMMIT:
		case CA_WAIT:
			return NULL;
		case CA_MBAR_ARRIVE:
			return n == 1 && plain_addr(&in->o[0]) ? NULL : "cp.async.mbarrier operands";
		default:
			if (n < 4 || !plain_addr(&in->o[0]) || !plain_addr(&in->o[1]) || !is_val(&in->o[2]) ||
			    !plain_addr(&in->o[3]))
				return "cp.async.bulk operands";
			return NULL;
		}
	case OP_MBAR:
		switch (in->mod) {
		case MB_INIT:
		case MB_EXPECT_TX:
		case MB_COMPLETE_TX:
			return n == 2 && plain_addr(&in->o[0]) && is_val(&in->o[1]) ? NULL
										    : "mbarrier operands";
		case MB_ARRIVE:
		case MB_ARRIVE_DROP:
			if (n < 2 || n > 3 || !is_reg(&in->o[0]) || !plain_addr(&in->o[1]) ||
			    (n == 3 && !is_val(&in->o[2])) || (in->to && n != 3))
				return "mbarrier.arrive operands";
			return NULL;
		case MB_TEST_WAIT:
		case MB_TRY_WAIT:
			if (n < 3 || !is_reg(&in->o[0]) || !plain_addr(&in->o[1]) || !is_val(&in->o[2]) ||
			    (n > 3 && !is_val(&in->o[3])))
				return "mbarrier wait operands";
			return NULL;
		case MB_PENDING:
			return n == 2 && is_reg(&in->o[0]) && is_val(&in->o[1]) ? NULL : "mbarrier operands";
		default:
			return n == 1 && plain_addr(&in->o[0]) ? NULL : "mbarrier operands";
		}
	case OP_WMMA:
		return ptx_wmma_check(in);
	case OP_VABSDIFF4:
		if (!in->mod)
			return "vabsdiff4 without .add";
		if (n != 4 || !is_reg(&in->o[0]) || !is_val(&in->o[1]) || !is_val(&in->o[2]) ||
		    !is_val(&in->o[3]))
			return "vabsdiff4 operands";
		return (in->type == PT_U32 || in->type == PT_S32) &&
			       (in->type2 == PT_U32 || in->type2 == PT_S32)
			   ? NULL
			   : "vabsdiff4 type";
	default:
		return "opcode";
	}
}

/* ---- warp collectives ---------------------------------------------------------------- */

void ptx_redux(uint8_t mod, uint8_t type, uint32_t mask, const uint64_t v[32], const uint32_t members[32],
	       uint64_t out[32])
{
	for (uint32_t m = mask; m; m &= m - 1) {
		int L = __builtin_ctz(m);
		uint32_t g = members[L] & mask;
		bool first = true;
		uint32_t r = 0;
		for (uint32_t k = g; k; k &= k - 1) {
			uint32_t x = (uint32_t)v[__builtin_ctz(k)];
			if (first) {
				r = x;
				first = false;
				continue;
			}
			switch (mod) {
			case A_ADD:
				r += x;
				break;
			case A_MIN:
				if (type == PT_S32 ? (int32_t)x < (int32_t)r : x < r)
					r = x;
				break;
			case A_MAX:
				if (type == PT_S32 ? (int32_t)x > (int32_t)r : x > r)
					r = x;
				break;
			case A_AND:
				r &= x;
				break;
			case A_OR:
				r |= x;
				break;
			default:
				r ^= x;
				break;
			}
		}
		out[L] = r;
	}
}

void ptx_match(bool all, uint8_t type, uint32_t mask, const uint64_t v[32], const uint32_t members[32],
	       uint64_t out[32], bool pred[32])
{
	uint64_t vm = type == PT_B64 ? UINT64_MAX : 0xffffffffu;
	for (uint32_t m = mask; m; m &= m - 1) {
		int L = __builtin_ctz(m);
		uint32_t g = members[L] & mask, same = 0;
		for (uint32_t k = g; k; k &= k - 1) {
			int j = __builtin_ctz(k);
			if (((v[j] ^ v[L]) & vm) == 0)
				same |= 1u << j;
		}
		if (all) {
			pred[L] = same == g;
			out[L] = same == g ? members[L] : 0;
		} else {
			pred[L] = true;
			out[L] = same;
		}
	}
}

/* vabsdiff4 ... .add: c plus the four bytes' absolute differences (signed
 * bytes when the sources are .s32), saturated to the destination with .sat
 * (an unsigned one: the sum only grows). */
uint64_t ptx_vabsdiff4(uint8_t at, bool sat, uint64_t a, uint64_t b, uint64_t c)
{
	int64_t s = 0;
	for (int i = 0; i < 4; i++) {
		int x = (int)(a >> (8 * i) & 0xff), y = (int)(b >> (8 * i) & 0xff);
		if (at == PT_S32)
			x = (int8_t)x, y = (int8_t)y;
		s += x > y ? x - y : y - x;
	}
	uint64_t r = (uint32_t)c + (uint64_t)s;
	if (sat && r > 0xffffffffu)
		r = 0xffffffffu;
	return (uint32_t)r;
}

/* ---- mbarrier ------------------------------------------------------------------------- */

#define MB_CNT 0x1fffffull
#define MB_PEND(s) ((s)&MB_CNT)
#define MB_EXP(s) (((s) >> 21) & MB_CNT)
#define MB_PHASE(s) (((s) >> 42) & 1)
#define MB_TX(s) ((int64_t)(s) >> 43)

static uint64_t mb_pack(uint64_t pend, uint64_t exp, uint64_t phase, int64_t tx)
{
	return (pend & MB_CNT) | (exp & MB_CNT) << 21 | (phase & 1) << 42 | (uint64_t)tx << 43;
}

uint64_t ptx_mbar_init(uint64_t count)
{
	count &= MB_CNT;
	return mb_pack(count, count, 0, 0);
}

uint64_t ptx_mbar_arrive(uint64_t s, uint32_t count, int64_t tx, bool drop, uint64_t *token)
{
	uint64_t pend = MB_PEND(s), exp = MB_EXP(s), phase = MB_PHASE(s);
	int64_t t = MB_TX(s) + tx;
	if (t > (int64_t)MB_CNT || t < -(int64_t)MB_CNT)
		t = 0;
	*token = phase;
	pend = count >= pend ? 0 : pend - count;
	if (drop)
		exp = count >= exp ? 0 : exp - count;
	if (!pend && !t) {
		phase ^= 1;
		pend = exp;
	}
	return mb_pack(pend, exp, phase, t);
}

bool ptx_mbar_done(uint64_t s, uint64_t token, bool parity)
{
	(void)parity; /* a token carries the parity of the phase it arrived in */
	return MB_PHASE(s) != (token & 1);
}
