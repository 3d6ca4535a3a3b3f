/* SPDX-License-Identifier: Apache-2.0 */
/* ptx_exec.c - runs a decoded PTX kernel (ptx.h) on the host.
 *
 * Blocks run one after another; in a block, each warp runs until it reaches
 * a barrier or exits, and once every warp still running waits at the
 * barrier, they all go on. A warp executes one instruction at a time over
 * its active lanes. Divergence: each live lane has its own program counter
 * and the warp runs the lanes at the smallest one (the minimum-PC rule),
 * which reconverges structured code - what nvcc emits - at the immediate
 * post-dominator: a forward branch leaves the lanes that skip ahead waiting
 * until the others reach them, a loop's back edge runs the lanes that stay
 * in the loop first. Only control transfers and reaching the next waiting
 * lane's counter look at the lanes' counters, so straight-line code costs
 * nothing for it.
 *
 * Registers are 64-bit slots per lane, laid out [register][lane]; an
 * instruction reads its operands at its type (truncated or sign-extended)
 * and writes its result truncated to its type's width. Memory: global and
 * const addresses are looked up in the launch's allocations (a snapshot of
 * the context's table), shared memory is per block, local memory per thread,
 * param space the launch's parameter buffer; an access outside them faults
 * the kernel with CUDA_ERROR_ILLEGAL_ADDRESS, a misaligned one with
 * CUDA_ERROR_MISALIGNED_ADDRESS.
 */
#include "ptx.h"
#include "ptx_call.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define POLL_EVERY (1u << 16) /* warp-instructions between cancellation polls */

struct frame;

struct warp {
	uint32_t pc, active, live, next_wait;
	bool at_bar, done;
	uint32_t id;
	uint64_t *R;
	uint32_t lpc[32];
	struct frame *fr; /* calls in progress (ptx_call's) */
	uint32_t nfr, capfr;
	uint32_t exited;            /* lanes that ran exit inside a call */
	const struct ptx_insn *red; /* waiting at a bar.red: its result is written when it opens */
	uint32_t red_mask;
};

struct blk {
	const struct ptx_kernel *k;
	struct ptx_launch *l;
	uint8_t *shared;
	uint32_t shared_bytes;
	uint8_t *local;
	uint32_t nthreads, nwarps;
	uint32_t ctaid[3];
	const uint16_t *tid[3];
	size_t cache; /* index of the region last hit */
	CUresult err;
	uint64_t insns;
	uint64_t budget;    /* warp-instructions until the next cancellation poll */
	struct ptx_out out; /* device printf's, written out when the kernel ends */
	bool yield;         /* a grid that syncs: a warp gives way now and then */
	uint32_t red_popc;  /* bar.red's tallies over the waiting threads */
	bool red_all, red_any;
	uint8_t *gridws; /* its workspace */
};

/* ---- values ---------------------------------------------------------------------- */

static inline unsigned tbits(uint8_t t)
{
	switch (t) {
	case PT_B8:
	case PT_U8:
	case PT_S8:
		return 8;
	case PT_B16:
	case PT_U16:
	case PT_S16:
	case PT_F16:
	case PT_BF16:
		return 16;
	case PT_B32:
	case PT_U32:
	case PT_S32:
	case PT_F32:
	case PT_F16X2:
	case PT_BF16X2:
		return 32;
	case PT_PRED:
		return 1;
	default:
		return 64;
	}
}

static inline bool tsigned(uint8_t t)
{
	return t >= PT_S8 && t <= PT_S64;
}

static inline bool tfloat(uint8_t t)
{
	return t == PT_F32 || t == PT_F64;
}

static inline uint64_t zx(uint64_t v, unsigned bits)
{
	return bits >= 64 ? v : v & ((1ull << bits) - 1);
}

static inline int64_t sx(uint64_t v, unsigned bits)
{
	if (bits >= 64)
		return (int64_t)v;
	unsigned s = 64 - bits;
	return (int64_t)(v << s) >> s;
}

/* A value of type t as stored in a register. */
static inline uint64_t fit(uint64_t v, uint8_t t)
{
	if (t == PT_PRED)
		return v != 0;
	return zx(v, tbits(t));
}

static inline float f32(uint64_t v)
{
	uint32_t u = (uint32_t)v;
	float f;
	memcpy(&f, &u, 4);
	return f;
}

static inline uint64_t of32(float f)
{
	uint32_t u;
	memcpy(&u, &f, 4);
	return u;
}

static inline double f64(uint64_t v)
{
	double d;
	memcpy(&d, &v, 8);
	return d;
}

static inline uint64_t of64(double d)
{
	uint64_t u;
	memcpy(&u, &d, 8);
	return u;
}

static float half_to_float(uint16_t h)
{
	uint32_t s = (uint32_t)(h >> 15) << 31, e = (h >> 10) & 0x1f, m = h & 0x3ff;
	uint32_t u;
	if (e == 0) {
		if (!m)
			u = s;
		else {
			/* subnormal */
			float f = ldexpf((float)m, -24);
			return s ? -f : f;
		}
	} else if (e == 31)
		u = s | 0x7f800000u | (m << 13);
	else
		u = s | ((e - 15 + 127) << 23) | (m << 13);
	float f;
	memcpy(&f, &u, 4);
	return f;
}

static uint16_t float_to_half(float f)
{
	uint32_t u;
	memcpy(&u, &f, 4);
	uint16_t s = (uint16_t)((u >> 16) & 0x8000);
	if (isnan(f))
		return s | 0x7e00;
	float a = fabsf(f);
	if (a >= 65520.0f)
		return s | 0x7c00;
	if (a < 6.103515625e-05f) {
		/* subnormal or zero: units of 2^-24, round to nearest even */
		float q = nearbyintf(a * 16777216.0f);
		return s | (uint16_t)q;
	}
	int e;
	float fr = frexpf(a, &e); /* a = fr * 2^e, fr in [0.5, 1) */
	float mant = nearbyintf((fr * 2.0f - 1.0f) * 1024.0f);
	int he = e - 1 + 15;
	if (mant >= 1024.0f) {
		mant = 0;
		he++;
	}
	if (he >= 31)
		return s | 0x7c00;
	return s | (uint16_t)(he << 10) | (uint16_t)mant;
}

static float bf16_to_float(uint16_t h)
{
	uint32_t u = (uint32_t)h << 16;
	float f;
	memcpy(&f, &u, 4);
	return f;
}

static uint16_t float_to_bf16(float f)
{
	uint32_t u;
	memcpy(&u, &f, 4);
	if (isnan(f))
		return (uint16_t)((u >> 16) | 0x40);
	u += 0x7fff + ((u >> 16) & 1);
	return (uint16_t)(u >> 16);
}

/* A register value of type t as a double (floats) or integer. */
static double as_double(uint64_t v, uint8_t t)
{
	switch (t) {
	case PT_F32:
		return f32(v);
	case PT_F64:
		return f64(v);
	case PT_F16:
		return half_to_float((uint16_t)v);
	case PT_BF16:
		return bf16_to_float((uint16_t)v);
	default:
		return tsigned(t) ? (double)sx(v, tbits(t)) : (double)zx(v, tbits(t));
	}
}

/* ---- special registers ------------------------------------------------------------- */

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t sreg(const struct blk *b, const struct warp *w, uint32_t id, int lane)
{
	uint32_t t = w->id * 32 + (uint32_t)lane;
	const struct ptx_launch *l = b->l;
	switch (id) {
	case SR_TID_X:
	case SR_TID_Y:
	case SR_TID_Z:
		return t < b->nthreads ? b->tid[id - SR_TID_X][t] : 0;
	case SR_NTID_X:
	case SR_NTID_Y:
	case SR_NTID_Z:
		return l->block[id - SR_NTID_X];
	case SR_CTAID_X:
	case SR_CTAID_Y:
	case SR_CTAID_Z:
		return b->ctaid[id - SR_CTAID_X];
	case SR_NCTAID_X:
	case SR_NCTAID_Y:
	case SR_NCTAID_Z:
		return l->grid[id - SR_NCTAID_X];
	case SR_LANEID:
		return (uint64_t)lane;
	case SR_WARPID:
		return w->id;
	case SR_NWARPID:
		return 64;
	case SR_SMID:
	case SR_GRIDID:
		return 0;
	case SR_NSMID:
		return 132;
	case SR_LANEMASK_EQ:
		return 1u << lane;
	case SR_LANEMASK_LT:
		return (1u << lane) - 1;
	case SR_LANEMASK_LE:
		return lane == 31 ? 0xffffffffu : (2u << lane) - 1;
	case SR_LANEMASK_GT:
		return lane == 31 ? 0 : ~((2u << lane) - 1) & 0xffffffffu;
	case SR_LANEMASK_GE:
		return ~((1u << lane) - 1) & 0xffffffffu;
	case SR_CLOCK:
		return (uint32_t)b->insns;
	case SR_CLOCK64:
		return b->insns;
	case SR_GLOBALTIMER:
		return now_ns();
	case SR_DYN_SMEM:
		return l->shared_dyn;
	case SR_TOTAL_SMEM:
		return b->shared_bytes;
	case SR_RESERVED_SMEM:
		return b->shared_bytes - PTX_RESERVED_SMEM;
	case SR_ENVREG1:
		return b->gridws ? PTX_WIN_GRID >> 32 : 0;
	case SR_ENVREG2:
		return 0;
	default:
		return 0;
	}
}

static inline uint64_t val(const struct blk *b, const struct warp *w, const struct ptx_opnd *o, int lane)
{
	uint64_t v;
	switch (o->k) {
	case PO_REG:
		v = w->R[(size_t)o->r * 32 + (unsigned)lane];
		break;
	case PO_IMM:
		v = o->imm;
		break;
	case PO_SREG:
		v = sreg(b, w, o->r, lane);
		break;
	default:
		v = 0;
		break;
	}
	return o->neg ? !v : v;
}

/* ---- memory --------------------------------------------------------------------------- */

static void fault(struct blk *b, CUresult r, const char *what, uint64_t addr, uint32_t size)
{
	if (b->err)
		return;
	b->err = r;
	snprintf(b->l->fault, sizeof b->l->fault, "%s of %u bytes at 0x%llx in block (%u,%u,%u)", what, size,
		 (unsigned long long)addr, b->ctaid[0], b->ctaid[1], b->ctaid[2]);
}

static uint8_t *global_ptr(struct blk *b, uint64_t a, uint32_t size)
{
	const struct ptx_region *m = b->l->mem;
	size_t n = b->l->nmem;
	if (b->cache < n) {
		const struct ptx_region *r = &m[b->cache];
		if (a >= r->base && a - r->base <= r->size && size <= r->size - (a - r->base))
			return r->host + (a - r->base);
	}
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (m[mid].base <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return b->l->heap ? ptx_heap_ptr(b->l->heap, a, size) : NULL;
	const struct ptx_region *r = &m[lo - 1];
	if (a - r->base > r->size || size > r->size - (a - r->base))
		return b->l->heap ? ptx_heap_ptr(b->l->heap, a, size) : NULL;
	b->cache = lo - 1;
	return r->host + (a - r->base);
}

/* The host address of size bytes at a in space sp for a thread, or NULL
 * after raising the fault. */
static uint8_t *mem_ptr(struct blk *b, const struct warp *w, int lane, uint8_t sp, uint64_t a, uint32_t size,
			bool write)
{
	if (size > 1 && (a & (size - 1))) {
		fault(b, CUDA_ERROR_MISALIGNED_ADDRESS, write ? "misaligned write" : "misaligned read", a,
		      size);
		return NULL;
	}
	if (sp == PS_GENERIC) {
		if (a >= PTX_WIN_SHARED && a < PTX_WIN_SHARED + PTX_WIN_SIZE)
			sp = PS_SHARED, a -= PTX_WIN_SHARED;
		else if (a >= PTX_WIN_LOCAL && a < PTX_WIN_LOCAL + PTX_WIN_SIZE)
			sp = PS_LOCAL, a -= PTX_WIN_LOCAL;
		else if (a >= PTX_WIN_PARAM && a < PTX_WIN_PARAM + PTX_WIN_SIZE)
			sp = PS_PARAM, a -= PTX_WIN_PARAM;
		else if (b->gridws && a >= PTX_WIN_GRID && a - PTX_WIN_GRID < PTX_GRID_WS &&
			 size <= PTX_GRID_WS - (a - PTX_WIN_GRID)) {
			/* A warp at the grid barrier (its arrival, then each
			 * read of its spin) gives way at once: the others have
			 * to arrive. */
			b->budget = 1;
			return b->gridws + (a - PTX_WIN_GRID);
		} else
			sp = PS_GLOBAL;
	}
	uint8_t *p = NULL;
	switch (sp) {
	case PS_SHARED:
		if (a < b->shared_bytes && size <= b->shared_bytes - a)
			p = b->shared + a;
		break;
	case PS_LOCAL:
		if (a < b->k->local_bytes && size <= b->k->local_bytes - a)
			p = b->local + (size_t)(w->id * 32 + (uint32_t)lane) * b->k->local_bytes + a;
		break;
	case PS_PARAM:
		if (!write && a < b->l->param_bytes && size <= b->l->param_bytes - a)
			p = (uint8_t *)(uintptr_t)(b->l->params + a);
		break;
	default:
		p = global_ptr(b, a, size);
		break;
	}
	if (!p) {
		static const char *const names[] = {"generic", "global", "shared", "local", "param", "const"};
		char what[48];
		snprintf(what, sizeof what, "out-of-bounds %s %s", names[sp < 6 ? sp : 0],
			 write ? "write" : "read");
		fault(b, CUDA_ERROR_ILLEGAL_ADDRESS, what, a, size);
	}
	return p;
}

static inline uint64_t load(const uint8_t *p, uint32_t size)
{
	switch (size) {
	case 1:
		return *p;
	case 2: {
		uint16_t v;
		memcpy(&v, p, 2);
		return v;
	}
	case 4: {
		uint32_t v;
		memcpy(&v, p, 4);
		return v;
	}
	default: {
		uint64_t v;
		memcpy(&v, p, 8);
		return v;
	}
	}
}

static inline void store(uint8_t *p, uint32_t size, uint64_t v)
{
	switch (size) {
	case 1:
		*p = (uint8_t)v;
		break;
	case 2: {
		uint16_t x = (uint16_t)v;
		memcpy(p, &x, 2);
		break;
	}
	case 4: {
		uint32_t x = (uint32_t)v;
		memcpy(p, &x, 4);
		break;
	}
	default:
		memcpy(p, &v, 8);
		break;
	}
}

static inline uint64_t opaddr(const struct warp *w, const struct ptx_opnd *o, int lane)
{
	return (o->r == PTX_NOREG ? 0 : w->R[(size_t)o->r * 32 + (unsigned)lane]) + o->imm;
}

/* ---- divergence ----------------------------------------------------------------------- */

/* Picks the lanes to run next: those of the live ones at the smallest
 * counter. The active lanes' counters must be current. */
static void resched(struct warp *w)
{
	uint32_t min = UINT32_MAX, nxt = UINT32_MAX;
	for (uint32_t m = w->live; m; m &= m - 1) {
		uint32_t pc = w->lpc[__builtin_ctz(m)];
		if (pc < min) {
			nxt = min;
			min = pc;
		} else if (pc > min && pc < nxt)
			nxt = pc;
	}
	uint32_t act = 0;
	for (uint32_t m = w->live; m; m &= m - 1) {
		int L = __builtin_ctz(m);
		if (w->lpc[L] == min)
			act |= 1u << L;
	}
	w->active = act;
	w->pc = min;
	w->next_wait = nxt;
	if (!w->live)
		w->done = true;
}

static inline void set_active_pc(struct warp *w, uint32_t pc)
{
	for (uint32_t m = w->active; m; m &= m - 1)
		w->lpc[__builtin_ctz(m)] = pc;
}

static inline void advance(struct warp *w)
{
	if (++w->pc >= w->next_wait) {
		set_active_pc(w, w->pc);
		resched(w);
	}
}

static inline void jump(struct warp *w, uint32_t target)
{
	if (target < w->next_wait) {
		w->pc = target;
		return;
	}
	set_active_pc(w, target);
	resched(w);
}

/* ---- arithmetic ----------------------------------------------------------------------- */

static bool compare(uint8_t cmp, uint8_t t, uint64_t a, uint64_t b)
{
	if (tfloat(t) || t == PT_F16 || t == PT_BF16) {
		double x = as_double(a, t), y = as_double(b, t);
		bool un = isnan(x) || isnan(y);
		switch (cmp) {
		case C_EQ:
			return !un && x == y;
		case C_NE:
			return !un && x != y;
		case C_LT:
			return !un && x < y;
		case C_LE:
			return !un && x <= y;
		case C_GT:
			return !un && x > y;
		case C_GE:
			return !un && x >= y;
		case C_EQU:
			return un || x == y;
		case C_NEU:
			return un || x != y;
		case C_LTU:
			return un || x < y;
		case C_LEU:
			return un || x <= y;
		case C_GTU:
			return un || x > y;
		case C_GEU:
			return un || x >= y;
		case C_NUM:
			return !un;
		case C_NAN:
			return un;
		default:
			return false;
		}
	}
	unsigned bits = tbits(t);
	if (tsigned(t) && cmp <= C_GE) {
		int64_t x = sx(a, bits), y = sx(b, bits);
		switch (cmp) {
		case C_EQ:
			return x == y;
		case C_NE:
			return x != y;
		case C_LT:
			return x < y;
		case C_LE:
			return x <= y;
		case C_GT:
			return x > y;
		default:
			return x >= y;
		}
	}
	uint64_t x = zx(a, bits), y = zx(b, bits);
	switch (cmp) {
	case C_EQ:
		return x == y;
	case C_NE:
		return x != y;
	case C_LT:
	case C_LO:
		return x < y;
	case C_LE:
	case C_LS:
		return x <= y;
	case C_GT:
	case C_HI:
		return x > y;
	case C_GE:
	case C_HS:
		return x >= y;
	default:
		return false;
	}
}

static double round_mode(double v, uint8_t rnd)
{
	switch (rnd) {
	case R_RNI:
		return nearbyint(v);
	case R_RZI:
		return trunc(v);
	case R_RMI:
		return floor(v);
	case R_RPI:
		return ceil(v);
	default:
		return v;
	}
}

static uint64_t cvt(const struct ptx_insn *in, uint64_t v)
{
	uint8_t dt = in->type, st = in->type2;
	bool dfl = tfloat(dt) || dt == PT_F16 || dt == PT_BF16;
	bool sfl = tfloat(st) || st == PT_F16 || st == PT_BF16;
	if (!dfl && !sfl) {
		int64_t x = tsigned(st) ? sx(v, tbits(st)) : (int64_t)zx(v, tbits(st));
		if (in->sat) {
			unsigned db = tbits(dt);
			if (tsigned(dt)) {
				int64_t lo = db >= 64 ? INT64_MIN : -(1ll << (db - 1)),
					hi = db >= 64 ? INT64_MAX : (1ll << (db - 1)) - 1;
				if (!tsigned(st) && (uint64_t)x > (uint64_t)hi)
					x = hi;
				else if (tsigned(st))
					x = x < lo ? lo : x > hi ? hi : x;
			} else {
				uint64_t hi = db >= 64 ? UINT64_MAX : (1ull << db) - 1;
				if (tsigned(st) && x < 0)
					x = 0;
				else if ((uint64_t)x > hi)
					x = (int64_t)hi;
			}
		}
		return fit((uint64_t)x, dt);
	}
	if (sfl && !dfl) {
		double d = as_double(v, st);
		d = round_mode(d, in->rnd ? in->rnd : R_RZI);
		if (in->rnd == R_RN || in->rnd == R_RZ || in->rnd == R_RM || in->rnd == R_RP)
			d = round_mode(d, in->rnd + 4);
		unsigned db = tbits(dt);
		if (isnan(d))
			return 0;
		if (tsigned(dt)) {
			double lo = -ldexp(1.0, (int)db - 1), hi = ldexp(1.0, (int)db - 1);
			int64_t x = d <= lo   ? (db >= 64 ? INT64_MIN : -(1ll << (db - 1)))
				    : d >= hi ? (db >= 64 ? INT64_MAX : (1ll << (db - 1)) - 1)
					      : (int64_t)d;
			return fit((uint64_t)x, dt);
		}
		double hi = ldexp(1.0, (int)db);
		uint64_t x = d <= 0 ? 0 : d >= hi ? (db >= 64 ? UINT64_MAX : (1ull << db) - 1) : (uint64_t)d;
		return fit(x, dt);
	}
	double d;
	if (!sfl) {
		if (tsigned(st)) {
			int64_t x = sx(v, tbits(st));
			if (dt == PT_F32)
				return of32((float)x);
			d = (double)x;
		} else {
			uint64_t x = zx(v, tbits(st));
			if (dt == PT_F32)
				return of32((float)x);
			d = (double)x;
		}
	} else
		d = as_double(v, st);
	d = round_mode(d, in->rnd);
	if (in->sat)
		d = isnan(d) ? 0 : d < 0 ? 0 : d > 1 ? 1 : d;
	switch (dt) {
	case PT_F32:
		if (st == PT_F64 && in->rnd == R_RZ) {
			float f = (float)d;
			if (fabs((double)f) > fabs(d))
				f = nextafterf(f, 0.0f);
			return of32(f);
		}
		return of32((float)d);
	case PT_F64:
		return of64(d);
	case PT_F16:
		return float_to_half((float)d);
	default:
		return float_to_bf16((float)d);
	}
}

static uint64_t mulhi(uint64_t a, uint64_t b, uint8_t t)
{
	unsigned bits = tbits(t);
	if (bits == 64) {
		if (tsigned(t))
			return (uint64_t)(((__int128)(int64_t)a * (__int128)(int64_t)b) >> 64);
		return (uint64_t)(((unsigned __int128)a * b) >> 64);
	}
	if (tsigned(t))
		return (uint64_t)((sx(a, bits) * sx(b, bits)) >> bits);
	return (zx(a, bits) * zx(b, bits)) >> bits;
}

static uint64_t mulwide(uint64_t a, uint64_t b, uint8_t t)
{
	unsigned bits = tbits(t);
	if (tsigned(t))
		return (uint64_t)(sx(a, bits) * sx(b, bits));
	return zx(a, bits) * zx(b, bits);
}

static uint8_t wide_type(uint8_t t)
{
	switch (t) {
	case PT_U16:
		return PT_U32;
	case PT_S16:
		return PT_S32;
	case PT_U32:
		return PT_U64;
	case PT_S32:
		return PT_S64;
	default:
		return t;
	}
}

static uint64_t arith(uint8_t op, const struct ptx_insn *in, uint64_t a, uint64_t b)
{
	uint8_t t = in->type;
	unsigned bits = tbits(t);
	if (t == PT_F32) {
		float x = f32(a), y = f32(b), r;
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
		case OP_DIV:
			r = x / y;
			break;
		case OP_MIN:
			r = fminf(x, y);
			break;
		case OP_MAX:
			r = fmaxf(x, y);
			break;
		case OP_COPYSIGN:
			r = copysignf(y, x);
			break;
		default:
			r = 0;
			break;
		}
		if (in->sat)
			r = isnan(r) ? 0 : r < 0 ? 0 : r > 1 ? 1 : r;
		return of32(r);
	}
	if (t == PT_F64) {
		double x = f64(a), y = f64(b), r;
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
		case OP_DIV:
			r = x / y;
			break;
		case OP_MIN:
			r = fmin(x, y);
			break;
		case OP_MAX:
			r = fmax(x, y);
			break;
		case OP_COPYSIGN:
			r = copysign(y, x);
			break;
		default:
			r = 0;
			break;
		}
		return of64(r);
	}
	bool s = tsigned(t);
	switch (op) {
	case OP_ADD:
		if (in->sat && t == PT_S32) {
			int64_t r = sx(a, 32) + sx(b, 32);
			return fit((uint64_t)(r > INT32_MAX ? INT32_MAX : r < INT32_MIN ? INT32_MIN : r), t);
		}
		return fit(a + b, t);
	case OP_SUB:
		if (in->sat && t == PT_S32) {
			int64_t r = sx(a, 32) - sx(b, 32);
			return fit((uint64_t)(r > INT32_MAX ? INT32_MAX : r < INT32_MIN ? INT32_MIN : r), t);
		}
		return fit(a - b, t);
	case OP_MUL:
		if (in->mod == M_HI)
			return fit(mulhi(a, b, t), t);
		if (in->mod == M_WIDE)
			return fit(mulwide(a, b, t), wide_type(t));
		return fit(a * b, t);
	case OP_MUL24:
		return fit((uint64_t)(s ? sx(a, 24) * sx(b, 24) : (int64_t)(zx(a, 24) * zx(b, 24))), t);
	case OP_DIV:
	case OP_REM:
		if (s) {
			int64_t x = sx(a, bits), y = sx(b, bits);
			if (!y)
				return fit(op == OP_DIV ? UINT64_MAX : (uint64_t)x, t);
			if (y == -1)
				return fit(op == OP_DIV ? (uint64_t)0 - (uint64_t)x : 0, t);
			return fit((uint64_t)(op == OP_DIV ? x / y : x % y), t);
		} else {
			uint64_t x = zx(a, bits), y = zx(b, bits);
			if (!y)
				return fit(op == OP_DIV ? UINT64_MAX : x, t);
			return fit(op == OP_DIV ? x / y : x % y, t);
		}
	case OP_MIN:
	case OP_MAX:
		if (s) {
			int64_t x = sx(a, bits), y = sx(b, bits);
			return fit((uint64_t)((op == OP_MIN) == (x < y) ? x : y), t);
		} else {
			uint64_t x = zx(a, bits), y = zx(b, bits);
			return (op == OP_MIN) == (x < y) ? x : y;
		}
	case OP_AND:
		return fit(a & b, t);
	case OP_OR:
		return fit(a | b, t);
	case OP_XOR:
		return fit(a ^ b, t);
	case OP_SHL: {
		uint64_t n = zx(b, 32);
		return n >= bits ? 0 : fit(a << n, t);
	}
	case OP_SHR: {
		uint64_t n = zx(b, 32);
		if (s) {
			int64_t x = sx(a, bits);
			return fit((uint64_t)(x >> (n >= bits ? bits - 1 : n)), t);
		}
		return n >= bits ? 0 : zx(a, bits) >> n;
	}
	default:
		return 0;
	}
}

static uint64_t unary(const struct ptx_insn *in, uint64_t a)
{
	uint8_t t = in->type;
	unsigned bits = tbits(t);
	if (t == PT_F32) {
		float x = f32(a), r;
		switch (in->op) {
		case OP_NEG:
			return a ^ 0x80000000u;
		case OP_ABS:
			return a & 0x7fffffffu;
		case OP_SQRT:
			r = sqrtf(x);
			break;
		case OP_RSQRT:
			r = 1.0f / sqrtf(x);
			break;
		case OP_RCP:
			r = 1.0f / x;
			break;
		case OP_EX2:
			r = exp2f(x);
			break;
		case OP_LG2:
			r = log2f(x);
			break;
		case OP_SIN:
			r = sinf(x);
			break;
		case OP_COS:
			r = cosf(x);
			break;
		case OP_TANH:
			r = tanhf(x);
			break;
		default:
			r = 0;
			break;
		}
		return of32(r);
	}
	if (t == PT_F64) {
		double x = f64(a), r;
		switch (in->op) {
		case OP_NEG:
			return a ^ 0x8000000000000000ull;
		case OP_ABS:
			return a & 0x7fffffffffffffffull;
		case OP_SQRT:
			r = sqrt(x);
			break;
		case OP_RSQRT:
			r = 1.0 / sqrt(x);
			break;
		case OP_RCP:
			r = 1.0 / x;
			break;
		case OP_EX2:
			r = exp2(x);
			break;
		case OP_LG2:
			r = log2(x);
			break;
		case OP_SIN:
			r = sin(x);
			break;
		case OP_COS:
			r = cos(x);
			break;
		case OP_TANH:
			r = tanh(x);
			break;
		default:
			r = 0;
			break;
		}
		return of64(r);
	}
	switch (in->op) {
	case OP_NEG:
		return fit((uint64_t)0 - a, t);
	case OP_ABS: {
		int64_t x = sx(a, bits);
		return fit((uint64_t)(x < 0 ? -(uint64_t)x : (uint64_t)x), t);
	}
	case OP_NOT:
		return t == PT_PRED ? !a : fit(~a, t);
	case OP_CNOT:
		return fit(zx(a, bits) == 0, t);
	case OP_POPC:
		return (uint64_t)__builtin_popcountll(zx(a, bits));
	case OP_CLZ: {
		uint64_t x = zx(a, bits);
		return x ? (uint64_t)(__builtin_clzll(x) - (64 - (int)bits)) : bits;
	}
	case OP_BFIND: {
		/* The most significant bit that differs from the sign (signed)
		 * or is set (unsigned); .shiftamt counts from the top. */
		uint64_t x = zx(tsigned(t) && sx(a, bits) < 0 ? ~a : a, bits);
		if (!x)
			return 0xffffffffu;
		unsigned pos = 63 - (unsigned)__builtin_clzll(x);
		return in->bop ? bits - 1 - pos : pos;
	}
	case OP_BREV: {
		uint64_t x = zx(a, bits), r = 0;
		for (unsigned i = 0; i < bits; i++)
			if (x >> i & 1)
				r |= 1ull << (bits - 1 - i);
		return r;
	}
	default:
		return 0;
	}
}

static uint64_t atom_op(const struct ptx_insn *in, uint64_t old, uint64_t b, uint64_t c)
{
	uint8_t t = in->type;
	unsigned bits = tbits(t);
	switch (in->mod) {
	case A_ADD:
		if (t == PT_F32)
			return of32(f32(old) + f32(b));
		if (t == PT_F64)
			return of64(f64(old) + f64(b));
		return fit(old + b, t);
	case A_MIN:
	case A_MAX: {
		bool less;
		if (t == PT_F32)
			return of32(in->mod == A_MIN ? fminf(f32(old), f32(b)) : fmaxf(f32(old), f32(b)));
		if (t == PT_F64)
			return of64(in->mod == A_MIN ? fmin(f64(old), f64(b)) : fmax(f64(old), f64(b)));
		if (tsigned(t))
			less = sx(old, bits) < sx(b, bits);
		else
			less = zx(old, bits) < zx(b, bits);
		return fit((in->mod == A_MIN) == less ? old : b, t);
	}
	case A_EXCH:
		return fit(b, t);
	case A_CAS:
		return zx(old, bits) == zx(b, bits) ? fit(c, t) : old;
	case A_AND:
		return old & b;
	case A_OR:
		return fit(old | b, t);
	case A_XOR:
		return fit(old ^ b, t);
	case A_INC:
		return zx(old, bits) >= zx(b, bits) ? 0 : fit(old + 1, t);
	case A_DEC:
		return (zx(old, bits) == 0 || zx(old, bits) > zx(b, bits)) ? fit(b, t) : fit(old - 1, t);
	default:
		return old;
	}
}

/* ---- the interpreter loop ---------------------------------------------------------------- */

#define LANES                                                                                                \
	for (uint32_t m_ = mask; m_; m_ &= m_ - 1) {                                                         \
		const int L = __builtin_ctz(m_);
#define END_LANES }
/* ---- calls -------------------------------------------------------------------------- */

/* A .func call in progress: the warp runs only the lanes that made it until
 * they all return, then the others resume. */
struct frame {
	uint32_t ret_pc, saved_live, called;
	uint32_t cs;    /* the call site */
	uint64_t *save; /* a recursive call: the callee's registers and local bytes before it */
};

static inline uint8_t *lane_local(const struct blk *b, const struct warp *w, int L, uint32_t off)
{
	return b->local + (size_t)(w->id * 32 + (uint32_t)L) * b->k->local_bytes + off;
}

struct rdctx {
	struct blk *b;
	const struct warp *w;
	int lane;
};

static bool guest_read(void *arg, uint64_t a, void *dst, uint32_t n)
{
	struct rdctx *c = arg;
	const uint8_t *p = mem_ptr(c->b, c->w, c->lane, PS_GENERIC, a, n, false);
	if (!p)
		return false;
	memcpy(dst, p, n);
	return true;
}

static uint64_t slot_u64(const struct blk *b, const struct warp *w, int L, const struct ptx_pslot *s)
{
	uint64_t v = 0;
	memcpy(&v, lane_local(b, w, L, s->off), s->size < 8 ? s->size : 8);
	return v;
}

/* The driver's own device functions: printf and assert. */
static void call_extern(struct blk *b, struct warp *w, const struct ptx_callsite *cs, uint32_t mask)
{
	for (uint32_t m = mask; m && !b->err; m &= m - 1) {
		const int L = __builtin_ctz(m);
		const struct ptx_pslot *a = cs->caller + cs->nrets;
		struct rdctx rc = {b, w, L};
		int64_t ret = 0;
		switch (cs->kind) {
		case PC_VPRINTF:
			if (!b->out.buf) {
				b->out.buf = malloc(PTX_PRINTF_FIFO);
				b->out.cap = b->out.buf ? PTX_PRINTF_FIFO : 0;
			}
			ret = ptx_vprintf(&b->out, slot_u64(b, w, L, &a[0]), slot_u64(b, w, L, &a[1]),
					  guest_read, &rc);
			break;
		case PC_MALLOC:
			ret = (int64_t)ptx_heap_malloc(b->l->heap, slot_u64(b, w, L, &a[0]));
			break;
		case PC_FREE:
			ptx_heap_release(b->l->heap, slot_u64(b, w, L, &a[0]));
			break;
		case PC_SETCOND: {
			uint64_t hnd = slot_u64(b, w, L, &a[0]);
			uint32_t v = (uint32_t)slot_u64(b, w, L, &a[1]);
			if (!b->l->set_conditional) {
				b->err = CUDA_ERROR_NOT_SUPPORTED;
				snprintf(
				    b->l->fault, sizeof b->l->fault,
				    "cudaGraphSetConditional: the sim's graphs have no conditional nodes");
				return;
			}
			if (b->l->set_conditional(b->l->cond_arg, hnd, v)) {
				b->err = CUDA_ERROR_INVALID_VALUE;
				snprintf(
				    b->l->fault, sizeof b->l->fault,
				    "cudaGraphSetConditional: handle 0x%llx is not the launching graph's",
				    (unsigned long long)hnd);
				return;
			}
			break;
		}
		case PC_ASSERTFAIL: {
			/* What the device prints, then the launch fails with
			 * CUDA_ERROR_ASSERT as NVIDIA's driver reports it. */
			char msg[256] = "", file[256] = "", fn[256] = "";
			char *dst[3] = {msg, file, fn};
			for (int s = 0; s < 3; s++) {
				uint64_t p = slot_u64(b, w, L, &a[s == 0 ? 0 : s == 1 ? 1 : 3]);
				for (size_t i = 0; p && i + 1 < 256; i++) {
					if (!guest_read(&rc, p + i, &dst[s][i], 1) || !dst[s][i])
						break;
				}
				dst[s][255] = 0;
			}
			if (b->err)
				return;
			uint32_t t = w->id * 32 + (uint32_t)L;
			fprintf(stderr,
				"%s:%u: %s: block: [%u,%u,%u], thread: [%u,%u,%u] Assertion `%s` failed.\n",
				file, (unsigned)slot_u64(b, w, L, &a[2]), fn, b->ctaid[0], b->ctaid[1],
				b->ctaid[2], b->tid[0][t], b->tid[1][t], b->tid[2][t], msg);
			b->err = CUDA_ERROR_ASSERT;
			snprintf(b->l->fault, sizeof b->l->fault,
				 "assert: %.60s:%u: Assertion `%.60s` failed", file,
				 (unsigned)slot_u64(b, w, L, &a[2]), msg);
			return;
		}
		default:
			break;
		}
		if (cs->nrets)
			memcpy(lane_local(b, w, L, cs->caller[0].off), &ret,
			       cs->caller[0].size < 8 ? cs->caller[0].size : 8);
	}
}

/* Executes call instruction in for the lanes of mask: true when the warp
 * now runs the callee, false when the call is done (an extern) or faulted. */
static bool call_enter(struct blk *b, struct warp *w, const struct ptx_insn *in, uint32_t mask)
{
	const struct ptx_callsite *cs = &b->k->calls[in->o[0].imm];
	if (cs->kind != PC_FUNC) {
		call_extern(b, w, cs, mask);
		return false;
	}
	if (w->nfr >= PTX_MAX_CALL_DEPTH) {
		fault(b, CUDA_ERROR_ILLEGAL_ADDRESS, "call stack overflow", w->pc, 0);
		return false;
	}
	if (w->nfr == w->capfr) {
		uint32_t nc = w->capfr ? w->capfr * 2 : 4;
		struct frame *nf = realloc(w->fr, nc * sizeof *nf);
		if (!nf) {
			fault(b, CUDA_ERROR_ILLEGAL_ADDRESS, "call stack overflow", w->pc, 0);
			return false;
		}
		w->fr = nf;
		w->capfr = nc;
	}
	/* The arguments, read before a recursive call's save and overwrite. */
	uint32_t argb = 0;
	for (uint32_t j = 0; j < cs->nargs; j++)
		argb += cs->callee[cs->nrets + j].size;
	uint8_t *tmp = malloc((size_t)argb * 32 + 1);
	bool rec = false;
	for (uint32_t i = 0; i < w->nfr; i++)
		rec |= b->k->calls[w->fr[i].cs].entry == cs->entry;
	size_t rbytes = (size_t)cs->nregs * 32 * sizeof *w->R, lbytes = (size_t)cs->localsize * 32;
	uint64_t *save = rec ? malloc(rbytes + lbytes + 8) : NULL;
	if (!tmp || (rec && !save)) {
		free(tmp);
		free(save);
		fault(b, CUDA_ERROR_ILLEGAL_ADDRESS, "call stack overflow", w->pc, 0);
		return false;
	}
	for (uint32_t m = mask; m; m &= m - 1) {
		const int L = __builtin_ctz(m);
		uint8_t *t = tmp + (size_t)L * argb;
		for (uint32_t j = 0; j < cs->nargs; j++) {
			const struct ptx_pslot *from = &cs->caller[cs->nrets + j],
					       *to = &cs->callee[cs->nrets + j];
			memset(t, 0, to->size);
			memcpy(t, lane_local(b, w, L, from->off),
			       from->size < to->size ? from->size : to->size);
			t += to->size;
		}
	}
	if (save) {
		memcpy(save, w->R + (size_t)cs->regbase * 32, rbytes);
		for (int L = 0; L < 32; L++)
			if (w->id * 32 + (uint32_t)L < b->nthreads)
				memcpy((uint8_t *)save + rbytes + (size_t)L * cs->localsize,
				       lane_local(b, w, L, cs->localbase), cs->localsize);
	}
	for (uint32_t m = mask; m; m &= m - 1) {
		const int L = __builtin_ctz(m);
		const uint8_t *t = tmp + (size_t)L * argb;
		for (uint32_t j = 0; j < cs->nargs; j++) {
			const struct ptx_pslot *to = &cs->callee[cs->nrets + j];
			memcpy(lane_local(b, w, L, to->off), t, to->size);
			t += to->size;
		}
	}
	free(tmp);
	/* The lanes the guard left out wait after the call with the others. */
	for (uint32_t m = w->active & ~mask; m; m &= m - 1)
		w->lpc[__builtin_ctz(m)] = w->pc + 1;
	w->fr[w->nfr++] = (struct frame){w->pc + 1, w->live, mask, (uint32_t)in->o[0].imm, save};
	w->live = mask;
	for (uint32_t m = mask; m; m &= m - 1)
		w->lpc[__builtin_ctz(m)] = cs->entry;
	resched(w);
	return true;
}

/* The top call returns to its caller: its return values copied out, a
 * recursive call's caller state restored. */
static void call_pop(struct blk *b, struct warp *w)
{
	struct frame *f = &w->fr[--w->nfr];
	const struct ptx_callsite *cs = &b->k->calls[f->cs];
	uint32_t ret = f->called & ~w->exited;
	uint32_t retb = 0;
	for (uint32_t j = 0; j < cs->nrets; j++)
		retb += cs->callee[j].size;
	uint8_t *tmp = retb && ret ? malloc((size_t)retb * 32) : NULL;
	if (tmp)
		for (uint32_t m = ret; m; m &= m - 1) {
			const int L = __builtin_ctz(m);
			uint8_t *t = tmp + (size_t)L * retb;
			for (uint32_t j = 0; j < cs->nrets; j++) {
				memcpy(t, lane_local(b, w, L, cs->callee[j].off), cs->callee[j].size);
				t += cs->callee[j].size;
			}
		}
	if (f->save) {
		size_t rbytes = (size_t)cs->nregs * 32 * sizeof *w->R;
		memcpy(w->R + (size_t)cs->regbase * 32, f->save, rbytes);
		for (int L = 0; L < 32; L++)
			if (w->id * 32 + (uint32_t)L < b->nthreads)
				memcpy(lane_local(b, w, L, cs->localbase),
				       (uint8_t *)f->save + rbytes + (size_t)L * cs->localsize,
				       cs->localsize);
		free(f->save);
	}
	if (tmp) {
		for (uint32_t m = ret; m; m &= m - 1) {
			const int L = __builtin_ctz(m);
			const uint8_t *t = tmp + (size_t)L * retb;
			for (uint32_t j = 0; j < cs->nrets; j++) {
				uint32_t n = cs->caller[j].size < cs->callee[j].size ? cs->caller[j].size
										     : cs->callee[j].size;
				memcpy(lane_local(b, w, L, cs->caller[j].off), t, n);
				t += cs->callee[j].size;
			}
		}
		free(tmp);
	} else if (retb && ret)
		fault(b, CUDA_ERROR_ILLEGAL_ADDRESS, "call stack overflow", w->pc, 0);
	w->live = f->saved_live & ~w->exited;
	for (uint32_t m = ret; m; m &= m - 1)
		w->lpc[__builtin_ctz(m)] = f->ret_pc;
}

/* ret or exit (exited) inside a call, for the lanes of mask: true when the
 * warp's remaining active lanes go on to the next instruction. */
static bool call_leave(struct blk *b, struct warp *w, uint32_t mask, bool exited)
{
	if (exited)
		w->exited |= mask;
	w->live &= ~mask;
	w->active &= ~mask;
	if (w->active)
		return true;
	while (!w->live && w->nfr && !b->err)
		call_pop(b, w);
	resched(w);
	return false;
}

static void free_frames(struct warp *w)
{
	for (uint32_t i = 0; i < w->nfr; i++)
		free(w->fr[i].save);
	free(w->fr);
	w->fr = NULL;
	w->nfr = w->capfr = 0;
}

#define V(i) val(b, w, &in->o[i], L)
#define REG(r) w->R[(size_t)(r)*32 + (unsigned)L]
#define W(i, x) REG(in->o[i].r) = (x)

/* Runs warp w until it exits, reaches a barrier or faults. */
static void run_warp(struct blk *b, struct warp *w)
{
	const struct ptx_insn *code = b->k->code;
	const uint32_t ninsns = b->k->ninsns;
	while (!w->done && !b->err) {
		if (!--b->budget) {
			b->budget = POLL_EVERY;
			if (b->l->cancelled) {
				CUresult r = b->l->cancelled(b->l->arg);
				if (r) {
					b->err = r;
					snprintf(b->l->fault, sizeof b->l->fault, "cancelled");
					return;
				}
			}
			if (b->yield)
				return; /* another block's turn: one may wait for ours */
		}
		if (w->pc >= ninsns) {
			fault(b, CUDA_ERROR_ILLEGAL_INSTRUCTION, "ran past the end of the kernel", w->pc, 0);
			return;
		}
		const struct ptx_insn *in = &code[w->pc];
		uint32_t mask = w->active;
		if (in->guard != PTX_NOREG) {
			uint32_t g = 0;
			for (uint32_t m_ = mask; m_; m_ &= m_ - 1) {
				const int L = __builtin_ctz(m_);
				if ((REG(in->guard) != 0) != in->gneg)
					g |= 1u << L;
			}
			mask = g;
		}
		b->insns += (uint64_t)__builtin_popcount(mask);
		switch (in->op) {
		case OP_NOP:
			break;
		case OP_LD: {
			uint32_t size = tbits(in->type) / 8;
			bool sgn = tsigned(in->type);
			LANES
			uint64_t a = opaddr(w, &in->o[1], L);
			for (unsigned e = 0; e < in->vec; e++) {
				const uint8_t *p = mem_ptr(b, w, L, in->space, a + e * size, size, false);
				if (!p)
					return;
				uint64_t v = load(p, size);
				if (sgn)
					v = (uint64_t)sx(v, size * 8);
				REG(in->vec > 1 ? in->o[0].v[e] : in->o[0].r) = v;
			}
			END_LANES
			break;
		}
		case OP_ST: {
			uint32_t size = tbits(in->type) / 8;
			LANES
			uint64_t a = opaddr(w, &in->o[0], L);
			for (unsigned e = 0; e < in->vec; e++) {
				uint8_t *p = mem_ptr(b, w, L, in->space, a + e * size, size, true);
				if (!p)
					return;
				uint64_t v = in->vec > 1 ? REG(in->o[1].v[e]) : V(1);
				store(p, size, v);
			}
			END_LANES
			break;
		}
		case OP_MOV:
			if (in->o[0].k == PO_VEC) {
				/* Unpack: mov.b64 {lo, hi}, x. */
				unsigned part = tbits(in->type) / in->o[0].n;
				LANES
				uint64_t v = V(1);
				for (unsigned e = 0; e < in->o[0].n; e++)
					REG(in->o[0].v[e]) = zx(v >> (e * part), part);
				END_LANES
			} else if (in->o[1].k == PO_VEC) {
				unsigned part = tbits(in->type) / in->o[1].n;
				LANES
				uint64_t v = 0;
				for (unsigned e = 0; e < in->o[1].n; e++)
					v |= zx(REG(in->o[1].v[e]), part) << (e * part);
				W(0, v);
				END_LANES
			} else {
				LANES
				W(0, fit(V(1), in->type));
				END_LANES
			}
			break;
		case OP_ADD:
		case OP_SUB:
		case OP_MUL:
		case OP_DIV:
		case OP_REM:
		case OP_MIN:
		case OP_MAX:
		case OP_AND:
		case OP_OR:
		case OP_XOR:
		case OP_SHL:
		case OP_SHR:
		case OP_COPYSIGN:
		case OP_MUL24: {
			const uint8_t op = in->op;
			if (in->type == PT_U32 || in->type == PT_S32 || in->type == PT_B32) {
				if (op == OP_ADD && !in->sat) {
					LANES
					W(0, (uint32_t)(V(1) + V(2)));
					END_LANES
					break;
				}
				if (op == OP_MUL && in->mod == M_LO) {
					LANES
					W(0, (uint32_t)(V(1) * V(2)));
					END_LANES
					break;
				}
			}
			LANES
			W(0, arith(op, in, V(1), V(2)));
			END_LANES
			break;
		}
		case OP_MAD:
		case OP_MAD24:
			LANES
			uint64_t a = V(1), c = V(2), d = V(3);
			uint64_t r;
			if (in->type == PT_F32)
				r = of32(fmaf(f32(a), f32(c), f32(d)));
			else if (in->type == PT_F64)
				r = of64(fma(f64(a), f64(c), f64(d)));
			else if (in->mod == M_WIDE)
				r = fit(mulwide(a, c, in->type) + d, wide_type(in->type));
			else if (in->mod == M_HI)
				r = fit(mulhi(a, c, in->type) + d, in->type);
			else if (in->op == OP_MAD24)
				r = fit(arith(OP_MUL24, in, a, c) + d, in->type);
			else
				r = fit(a * c + d, in->type);
			W(0, r);
			END_LANES
			break;
		case OP_FMA:
			LANES
			uint64_t a = V(1), c = V(2), d = V(3);
			W(0, in->type == PT_F32 ? of32(fmaf(f32(a), f32(c), f32(d)))
						: of64(fma(f64(a), f64(c), f64(d))));
			END_LANES
			break;
		case OP_NEG:
		case OP_ABS:
		case OP_NOT:
		case OP_CNOT:
		case OP_SQRT:
		case OP_RSQRT:
		case OP_RCP:
		case OP_EX2:
		case OP_LG2:
		case OP_SIN:
		case OP_COS:
		case OP_TANH:
		case OP_POPC:
		case OP_CLZ:
		case OP_BREV:
		case OP_BFIND:
			LANES
			W(0, unary(in, V(1)));
			END_LANES
			break;
		case OP_SETP:
			LANES
			bool t = compare(in->mod, in->type, V(1), V(2));
			bool p = t, q = !t;
			if (in->bop) {
				bool c = V(3) != 0;
				if (in->bop == B_AND)
					p = p && c, q = q && c;
				else if (in->bop == B_OR)
					p = p || c, q = q || c;
				else
					p = p != c, q = q != c;
			}
			W(0, p);
			if (in->pipe)
				W(5, q);
			END_LANES
			break;
		case OP_SET:
			LANES
			bool t = compare(in->mod, in->type2, V(1), V(2));
			if (in->bop) {
				bool c = V(3) != 0;
				t = in->bop == B_AND ? t && c : in->bop == B_OR ? t || c : t != c;
			}
			W(0, in->type == PT_F32 ? (t ? of32(1.0f) : 0) : t ? fit(UINT64_MAX, in->type) : 0);
			END_LANES
			break;
		case OP_SELP:
			LANES
			W(0, fit(V(3) ? V(1) : V(2), in->type));
			END_LANES
			break;
		case OP_CVT:
			LANES
			W(0, cvt(in, V(1)));
			END_LANES
			break;
		case OP_CVTA: {
			uint64_t win = in->space == PS_SHARED  ? PTX_WIN_SHARED
				       : in->space == PS_LOCAL ? PTX_WIN_LOCAL
				       : in->space == PS_PARAM ? PTX_WIN_PARAM
							       : 0;
			LANES
			uint64_t v = V(1);
			W(0, fit(in->to ? v - win : v + win, in->type ? in->type : PT_U64));
			END_LANES
			break;
		}
		case OP_BFE: {
			unsigned bits = tbits(in->type);
			LANES
			uint64_t a = V(1), pos = zx(V(2), 8), len = zx(V(3), 8);
			uint64_t r;
			bool sgn = tsigned(in->type);
			if (len == 0)
				r = 0;
			else {
				uint64_t x = zx(a, bits);
				uint64_t sbit = pos + len - 1 >= bits ? bits - 1 : pos + len - 1;
				bool sign = sgn && (x >> sbit & 1);
				r = pos >= bits ? 0 : x >> pos;
				if (len < 64)
					r &= (1ull << len) - 1;
				if (sgn && sign && len < 64)
					r |= ~((1ull << len) - 1);
				if (sgn && pos >= bits)
					r = sign ? UINT64_MAX : 0;
			}
			W(0, fit(r, in->type));
			END_LANES
			break;
		}
		case OP_BFI: {
			unsigned bits = tbits(in->type);
			LANES
			uint64_t f = V(1), base = V(2), pos = zx(V(3), 8), len = zx(V(4), 8);
			uint64_t r = zx(base, bits);
			for (uint64_t i = 0; i < len && pos + i < bits; i++)
				r = (r & ~(1ull << (pos + i))) | ((f >> i & 1) << (pos + i));
			W(0, r);
			END_LANES
			break;
		}
		case OP_LOP3: {
			uint32_t lut = (uint32_t)in->o[4].imm;
			LANES
			uint64_t a = V(1), c = V(2), d = V(3), r = 0;
			for (int i = 0; i < 8; i++)
				if (lut >> i & 1)
					r |= ((i & 4) ? a : ~a) & ((i & 2) ? c : ~c) & ((i & 1) ? d : ~d);
			W(0, fit(r, in->type));
			END_LANES
			break;
		}
		case OP_SHF:
			LANES
			uint64_t lo = zx(V(1), 32), hi = zx(V(2), 32), n = zx(V(3), 32);
			n = in->mod ? (n > 32 ? 32 : n) : (n & 31);
			uint64_t x = hi << 32 | lo;
			W(0, in->bop ? zx((x << n) >> 32, 32) : zx(x >> n, 32));
			END_LANES
			break;
		case OP_PRMT:
			LANES
			uint64_t x = zx(V(2), 32) << 32 | zx(V(1), 32), c = V(3), r = 0;
			for (int i = 0; i < 4; i++) {
				unsigned sel = (unsigned)(c >> (4 * i)) & 0xf;
				uint64_t byte = (x >> (8 * (sel & 7))) & 0xff;
				if (sel & 8)
					byte = (byte & 0x80) ? 0xff : 0;
				r |= byte << (8 * i);
			}
			W(0, r);
			END_LANES
			break;
		case OP_ATOM:
		case OP_RED: {
			uint32_t size = tbits(in->type) / 8;
			int ai = in->op == OP_ATOM ? 1 : 0;
			LANES
			uint64_t a = opaddr(w, &in->o[ai], L);
			uint8_t *p = mem_ptr(b, w, L, in->space, a, size, true);
			if (!p)
				return;
			uint64_t old = load(p, size);
			uint64_t nv = atom_op(in, old, V(ai + 1), in->mod == A_CAS ? V(ai + 2) : 0);
			store(p, size, nv);
			if (in->op == OP_ATOM)
				W(0, fit(tsigned(in->type) ? (uint64_t)sx(old, size * 8) : old, in->type));
			END_LANES
			break;
		}
		case OP_SHFL: {
			uint64_t src[32];
			for (int L = 0; L < 32; L++)
				src[L] = val(b, w, &in->o[1], L);
			LANES
			uint32_t bv = (uint32_t)V(2) & 0x1f, c = (uint32_t)V(3);
			uint32_t cv = c & 0x1f, seg = (c >> 8) & 0x1f;
			uint32_t lane = (uint32_t)L, maxl = (lane & seg) | (cv & ~seg), minl = lane & seg;
			uint32_t j;
			bool ok;
			switch (in->mod) {
			case SH_UP:
				j = lane - bv;
				ok = (int32_t)j >= (int32_t)maxl;
				break;
			case SH_DOWN:
				j = lane + bv;
				ok = j <= maxl;
				break;
			case SH_BFLY:
				j = lane ^ bv;
				ok = j <= maxl;
				break;
			default:
				j = minl | (bv & ~seg);
				ok = j <= maxl;
				break;
			}
			if (!ok || j > 31)
				j = lane;
			W(0, zx(src[j], 32));
			if (in->pipe)
				W(5, ok);
			END_LANES
			break;
		}
		case OP_VOTE: {
			uint32_t ballot = 0;
			LANES
			if (V(1))
				ballot |= 1u << L;
			END_LANES
			uint64_t r;
			switch (in->mod) {
			case V_ALL:
				r = ballot == mask;
				break;
			case V_ANY:
				r = ballot != 0;
				break;
			case V_UNI:
				r = ballot == 0 || ballot == mask;
				break;
			default:
				r = ballot;
				break;
			}
			LANES
			W(0, r);
			END_LANES
			break;
		}
		case OP_ACTIVEMASK:
			LANES
			W(0, w->active);
			END_LANES
			break;
		case OP_BAR:
			if (!mask)
				break;
			if (in->bop == 2) {
				LANES
				bool p = V(in->nops - 1) != 0;
				b->red_popc += p;
				b->red_all &= p;
				b->red_any |= p;
				END_LANES
				w->red = in;
				w->red_mask = mask;
			}
			advance(w);
			if (in->bop != 1) /* bar.arrive does not wait */
				w->at_bar = true;
			return;
		case OP_BRA: {
			uint32_t target = (uint32_t)in->o[0].imm;
			if (mask == w->active) {
				jump(w, target);
				continue;
			}
			if (!mask)
				break;
			for (uint32_t m_ = w->active; m_; m_ &= m_ - 1) {
				const int L = __builtin_ctz(m_);
				w->lpc[L] = (mask >> L & 1) ? target : w->pc + 1;
			}
			resched(w);
			continue;
		}
		case OP_BMSK:
			LANES
			W(0, ptx_bmsk((uint32_t)V(1), (uint32_t)V(2), in->mod));
			END_LANES
			break;
		case OP_CALL:
			if (!mask)
				break;
			if (call_enter(b, w, in, mask))
				continue;
			if (b->err)
				return;
			break;
		case OP_RET:
		case OP_EXIT:
			if (!mask)
				break;
			if (w->nfr) {
				if (call_leave(b, w, mask, in->op == OP_EXIT))
					break;
				if (b->err)
					return;
				continue;
			}
			w->live &= ~mask;
			w->active &= ~mask;
			if (!w->active) {
				resched(w);
				continue;
			}
			break;
		case OP_TRAP:
		default:
			if (!mask)
				break;
			fault(b, CUDA_ERROR_ILLEGAL_INSTRUCTION, "trap", w->pc, 0);
			return;
		}
		advance(w);
	}
}

/* Every live warp of block b waits at the barrier: it opens, bar.red's
 * waiters get the tallies. False if none was waiting. */
static bool bar_open(struct blk *b, struct warp *w, uint32_t nwarps)
{
	bool waiting = false;
	for (uint32_t i = 0; i < nwarps; i++) {
		if (w[i].done || !w[i].at_bar)
			continue;
		w[i].at_bar = false;
		waiting = true;
		const struct ptx_insn *in = w[i].red;
		if (!in)
			continue;
		uint64_t v = in->mod == 1 ? b->red_popc : in->mod == 2 ? b->red_all : b->red_any;
		for (uint32_t m = w[i].red_mask; m; m &= m - 1)
			w[i].R[(size_t)in->o[0].r * 32 + (unsigned)__builtin_ctz(m)] = v;
		w[i].red = NULL;
	}
	b->red_popc = 0;
	b->red_all = true;
	b->red_any = false;
	return waiting;
}

/* Runs the warps of block b that can run, once each; false once all exited. */
static bool step_block(struct blk *b, struct warp *w)
{
	bool live = false, running = false;
	for (uint32_t i = 0; i < b->nwarps && !b->err; i++) {
		if (!w[i].done && !w[i].at_bar)
			run_warp(b, &w[i]);
		live |= !w[i].done;
		running |= !w[i].done && !w[i].at_bar;
	}
	if (live && !running)
		bar_open(b, w, b->nwarps); /* all that live wait: the barrier opens */
	return live;
}

/* A kernel that syncs its grid (cooperative groups' grid.sync: an atomic on
 * the workspace %envreg1:%envreg2 names, then a spin until every block has
 * arrived): every block is resident, and they take turns, a warp giving way
 * every POLL_EVERY instructions, so that a block spinning lets the others
 * reach the barrier. The sim gives the workspace to any launch of such a
 * kernel; cooperative launches are bounded by occupancy, and anything
 * beyond PTX_MAX_COOP_* is refused. */
static CUresult run_grid(const struct blk *t)
{
	const struct ptx_kernel *k = t->k;
	struct ptx_launch *l = t->l;
	uint64_t nblocks = (uint64_t)l->grid[0] * l->grid[1] * l->grid[2];
	size_t regs = (size_t)t->nwarps * k->nregs * 32 * sizeof(uint64_t);
	size_t local = (size_t)t->nwarps * 32 * (k->local_bytes ? k->local_bytes : 1);
	size_t per = regs + local + t->shared_bytes + t->nwarps * sizeof(struct warp) + sizeof(struct blk);
	if (nblocks > PTX_MAX_COOP_BLOCKS || nblocks * per > PTX_MAX_COOP_BYTES) {
		snprintf(l->fault, sizeof l->fault,
			 "a grid of %llu blocks that syncs: more than the sim holds at once",
			 (unsigned long long)nblocks);
		return CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE;
	}
	uint8_t ws[PTX_GRID_WS] = {0};
	struct blk *bs = calloc(nblocks, sizeof *bs);
	struct warp **ws_w = calloc(nblocks, sizeof *ws_w);
	bool *fin = calloc(nblocks, sizeof *fin);
	CUresult err = bs && ws_w && fin ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
	for (uint64_t i = 0; i < nblocks && !err; i++) {
		struct blk *b = &bs[i];
		*b = *t;
		b->budget = POLL_EVERY;
		b->yield = true;
		b->gridws = ws;
		b->out = (struct ptx_out){0};
		b->ctaid[0] = (uint32_t)(i % l->grid[0]);
		b->ctaid[1] = (uint32_t)(i / l->grid[0] % l->grid[1]);
		b->ctaid[2] = (uint32_t)(i / l->grid[0] / l->grid[1]);
		b->shared = calloc(1, t->shared_bytes);
		b->local = calloc(1, local);
		struct warp *w = ws_w[i] = calloc(t->nwarps, sizeof *w);
		uint64_t *R = calloc(1, regs ? regs : 1);
		if (!b->shared || !b->local || !w || !R) {
			free(R);
			err = CUDA_ERROR_OUT_OF_MEMORY;
			break;
		}
		for (uint32_t j = 0; j < t->nwarps; j++) {
			uint32_t n = t->nthreads - j * 32 < 32 ? t->nthreads - j * 32 : 32;
			w[j] = (struct warp){.live = n == 32 ? 0xffffffffu : (1u << n) - 1,
					     .id = j,
					     .R = R + (size_t)j * k->nregs * 32,
					     .next_wait = UINT32_MAX};
			w[j].active = w[j].live;
		}
	}
	for (bool left = true; left && !err;) {
		left = false;
		for (uint64_t i = 0; i < nblocks && !err; i++) {
			if (fin[i])
				continue;
			fin[i] = !step_block(&bs[i], ws_w[i]);
			left |= !fin[i];
			err = bs[i].err;
		}
	}
	l->insns = 0;
	for (uint64_t i = 0; bs && i < nblocks; i++) {
		struct blk *b = &bs[i];
		l->insns += b->insns;
		if (b->out.len) {
			fwrite(b->out.buf, 1, b->out.len, stdout);
			fflush(stdout);
		}
		free(b->out.buf);
		free(b->shared);
		free(b->local);
		if (ws_w && ws_w[i]) {
			for (uint32_t j = 0; j < t->nwarps; j++)
				free_frames(&ws_w[i][j]);
			free(ws_w[i][0].R);
			free(ws_w[i]);
		}
	}
	free(bs);
	free(ws_w);
	free(fin);
	return err;
}

CUresult ptx_run(const struct ptx_kernel *k, struct ptx_launch *l)
{
	l->insns = 0;
	l->fault[0] = 0;
	if (k->unsupported[0])
		return CUDA_ERROR_NOT_SUPPORTED;
	uint64_t nthreads = (uint64_t)l->block[0] * l->block[1] * l->block[2];
	if (!nthreads || nthreads > 1024)
		return CUDA_ERROR_INVALID_VALUE;
	uint32_t nwarps = (uint32_t)((nthreads + 31) / 32);
	uint64_t shared_bytes =
	    (((uint64_t)k->shared_static + l->shared_dyn + 15) & ~(uint64_t)15) + PTX_RESERVED_SMEM;
	struct blk b = {.k = k,
			.l = l,
			.nthreads = (uint32_t)nthreads,
			.nwarps = nwarps,
			.budget = POLL_EVERY,
			.red_all = true};
	b.shared_bytes = (uint32_t)shared_bytes;
	b.shared = calloc(1, shared_bytes ? shared_bytes : 1);
	b.local = calloc((size_t)nwarps * 32, k->local_bytes ? k->local_bytes : 1);
	struct warp *w = calloc(nwarps, sizeof *w);
	uint64_t *R = calloc((size_t)nwarps * k->nregs * 32, sizeof *R);
	uint16_t *tid = calloc(3 * (size_t)nthreads, sizeof *tid);
	if (!b.shared || !b.local || !w || !R || !tid) {
		free(b.shared);
		free(b.local);
		free(w);
		free(R);
		free(tid);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	for (uint32_t t = 0; t < nthreads; t++) {
		tid[t] = (uint16_t)(t % l->block[0]);
		tid[nthreads + t] = (uint16_t)(t / l->block[0] % l->block[1]);
		tid[2 * nthreads + t] = (uint16_t)(t / l->block[0] / l->block[1]);
	}
	b.tid[0] = tid;
	b.tid[1] = tid + nthreads;
	b.tid[2] = tid + 2 * nthreads;
	if (k->grid_sync) {
		free(b.shared);
		free(b.local);
		free(w);
		free(R);
		CUresult r = run_grid(&b);
		free(tid);
		return r;
	}
	for (uint32_t z = 0; z < l->grid[2] && !b.err; z++)
		for (uint32_t y = 0; y < l->grid[1] && !b.err; y++)
			for (uint32_t x = 0; x < l->grid[0] && !b.err; x++) {
				b.ctaid[0] = x, b.ctaid[1] = y, b.ctaid[2] = z;
				memset(b.shared, 0, shared_bytes ? shared_bytes : 1);
				memset(R, 0, (size_t)nwarps * k->nregs * 32 * sizeof *R);
				for (uint32_t i = 0; i < nwarps; i++) {
					free_frames(&w[i]);
					uint32_t n =
					    (uint32_t)(nthreads - i * 32 < 32 ? nthreads - i * 32 : 32);
					w[i] = (struct warp){.live = n == 32 ? 0xffffffffu : (1u << n) - 1,
							     .id = i,
							     .R = R + (size_t)i * k->nregs * 32};
					w[i].active = w[i].live;
					w[i].next_wait = UINT32_MAX;
				}
				for (;;) {
					bool any = false;
					for (uint32_t i = 0; i < nwarps && !b.err; i++)
						if (!w[i].done && !w[i].at_bar) {
							run_warp(&b, &w[i]);
							any = true;
						}
					if (b.err)
						break;
					bool waiting = bar_open(&b, w, nwarps);
					if (!waiting && !any)
						break;
					if (!waiting) {
						bool left = false;
						for (uint32_t i = 0; i < nwarps; i++)
							left |= !w[i].done;
						if (!left)
							break;
					}
				}
			}
	l->insns = b.insns;
	for (uint32_t i = 0; i < nwarps; i++)
		free_frames(&w[i]);
	if (b.out.len) {
		/* The device's printf buffer, flushed when the kernel is done. */
		fwrite(b.out.buf, 1, b.out.len, stdout);
		fflush(stdout);
	}
	free(b.out.buf);
	free(b.shared);
	free(b.local);
	free(w);
	free(R);
	free(tid);
	return b.err;
}
