/* SPDX-License-Identifier: Apache-2.0 */
/* ptx_exec.c - runs a decoded PTX kernel (ptx.h) on the host.
 *
 * Blocks run on worker threads (ptx_run, XGPU_SIM_PTX_THREADS), each
 * taking the next block and running it to its end; in a block, each warp runs until it reaches
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
 * CUDA_ERROR_MISALIGNED_ADDRESS. The hottest instruction shapes also have a
 * fast form each (fast_form, run_fast), which the general path backs.
 */
#include "ptx.h"
#include "ptx_ext.h"
#include "ptx_call.h"

#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
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

/* What the workers of one launch share. */
struct grid {
	const struct ptx_kernel *k;
	struct ptx_launch *l;
	const uint8_t *fast;
	const uint16_t *tid;
	uint32_t nthreads, nwarps, shared_bytes;
	uint64_t nblocks;
	_Atomic uint64_t next;  /* the next block to start */
	_Atomic int err;        /* the first fault, which stops every worker */
	_Atomic uint64_t insns; /* summed as workers finish */
};

struct blk {
	const struct ptx_kernel *k;
	struct grid *g;
	struct ptx_launch *l;
	uint8_t *shared;
	uint32_t shared_bytes;
	uint8_t *local;
	uint32_t nthreads, nwarps;
	uint32_t ctaid[3];
	const uint16_t *tid[3];
	size_t cache;        /* index of the region last hit */
	const uint8_t *fast; /* per instruction: its fast form, F_NONE for none */
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

static inline unsigned pop32(uint32_t x)
{
	if (x == 0xffffffffu)
		return 32;
	x = x - ((x >> 1) & 0x55555555u);
	x = (x & 0x33333333u) + ((x >> 2) & 0x33333333u);
	return (((x + (x >> 4)) & 0x0f0f0f0fu) * 0x01010101u) >> 24;
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

/* Ends block b's worker with r; true when r is the launch's first fault,
 * whose caller then says what it was (the others are only stopped). */
static bool claim(struct blk *b, CUresult r)
{
	if (b->err)
		return false;
	b->err = r;
	int none = 0;
	return atomic_compare_exchange_strong(&b->g->err, &none, (int)r);
}

static void stop(struct blk *b, CUresult r, const char *what)
{
	if (claim(b, r))
		snprintf(b->l->fault, sizeof b->l->fault, "%s", what);
}

static void fault(struct blk *b, CUresult r, const char *what, uint64_t addr, uint32_t size)
{
	if (claim(b, r))
		snprintf(b->l->fault, sizeof b->l->fault, "%s of %u bytes at 0x%llx in block (%u,%u,%u)",
			 what, size, (unsigned long long)addr, b->ctaid[0], b->ctaid[1], b->ctaid[2]);
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
	/* The shared, local and param windows are 32-bit: a GPU computes their
	 * addresses modulo 2^32, and nvcc's code may reach an offset from a
	 * base that wrapped below zero (cuSOLVER's ipiv_lower_small does). */
	if (sp == PS_SHARED || sp == PS_LOCAL || sp == PS_PARAM)
		a = (uint32_t)a;
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
	if (in->vec == 2) /* to tf32 */
		return ptx_tf32(v, in->mod ? R_NONE : in->rnd);
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
	if (ptx_is_half(t))
		return ptx_half_op(op, t, in->rnd, in->sat, a, b, 0);
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
	if (ptx_is_half(t))
		return ptx_half_op(in->op, t, in->rnd, false, a, 0, 0);
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

/* atom / red at host address p (size bytes, aligned): the old value. In
 * the block's own shared or local memory no other worker can see it; global
 * memory other blocks reach from other workers at once, so there it is a
 * host atomic (a compare-and-swap loop over atom_op for what has no
 * instruction of its own). */
static uint64_t atomic_rmw(struct blk *b, const struct ptx_insn *in, uint8_t *p, uint32_t size, uint64_t v,
			   uint64_t c)
{
	uintptr_t a = (uintptr_t)p, sh = (uintptr_t)b->shared, lo = (uintptr_t)b->local;
	size_t local_size = (size_t)b->nwarps * 32 * (b->k->local_bytes ? b->k->local_bytes : 1);
	if ((a >= sh && a - sh < b->shared_bytes) || (a >= lo && a - lo < local_size) || size == 1) {
		uint64_t old = load(p, size);
		store(p, size, atom_op(in, old, v, c));
		return old;
	}
	const bool add = in->mod == A_ADD && in->type != PT_F32 && in->type != PT_F64;
	switch (size) {
	case 2: {
		uint16_t *q = (uint16_t *)(void *)p, old = __atomic_load_n(q, __ATOMIC_RELAXED);
		while (!__atomic_compare_exchange_n(q, &old, (uint16_t)atom_op(in, old, v, c), false,
						    __ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
			;
		return old;
	}
	case 4: {
		uint32_t *q = (uint32_t *)(void *)p;
		if (add)
			return __atomic_fetch_add(q, (uint32_t)v, __ATOMIC_SEQ_CST);
		uint32_t old = __atomic_load_n(q, __ATOMIC_RELAXED);
		while (!__atomic_compare_exchange_n(q, &old, (uint32_t)atom_op(in, old, v, c), false,
						    __ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
			;
		return old;
	}
	default: {
		uint64_t *q = (uint64_t *)(void *)p;
		if (add)
			return __atomic_fetch_add(q, v, __ATOMIC_SEQ_CST);
		uint64_t old = __atomic_load_n(q, __ATOMIC_RELAXED);
		while (!__atomic_compare_exchange_n(q, &old, atom_op(in, old, v, c), false, __ATOMIC_SEQ_CST,
						    __ATOMIC_RELAXED))
			;
		return old;
	}
	}
}

/* ---- fast forms ---------------------------------------------------------------------------- */

/* The hottest instructions of what nvcc emits, picked once per launch
 * (fast_form): each gets a loop of its own with its type and operation
 * fixed, over register rows rather than operand by operand and lane by lane,
 * and over all 32 lanes at once when the warp is whole (which the compiler
 * vectorises). Each computes exactly what the general path in run_warp
 * does for that instruction; anything else takes the general path, and so
 * does a load or store whose lanes do not all fall in one allocation. */
enum {
	F_NONE,
	F_MOV32,
	F_MOV64,
	F_ADD32,
	F_SUB32,
	F_MUL32,
	F_AND32,
	F_OR32,
	F_XOR32,
	F_SHL32,
	F_SHRU32,
	F_SHRS32,
	F_MAD32,
	F_ADD64,
	F_SUB64,
	F_MUL64,
	F_AND64,
	F_OR64,
	F_XOR64,
	F_SHL64,
	F_SHRU64,
	F_SHRS64,
	F_MAD64,
	F_MULWU32,
	F_MULWS32,
	F_MADWU32,
	F_MADWS32,
	F_ADDF32,
	F_SUBF32,
	F_MULF32,
	F_FMAF32,
	F_ADDF64,
	F_SUBF64,
	F_MULF64,
	F_FMAF64,
	F_SELP32,
	F_SELP64,
	F_CVT_ZX32,    /* u32 -> 64-bit integer */
	F_CVT_SX32,    /* s32 -> 64-bit integer */
	F_CVT_TRUNC32, /* integer -> 32-bit integer */
	F_CVT_F32_S32,
	F_CVT_F32_U32,
	F_CVT_S32_F32, /* .rzi */
	F_CVT_F64_F32,
	F_CVT_F32_F64, /* .rn */
	F_SETP_S32,
	F_SETP_U32,
	F_SETP_S64,
	F_SETP_U64,
	F_SETP_F32,
	F_SETP_F64,
	F_CVTA,
	F_MINS32,
	F_MAXS32,
	F_MINU32,
	F_MAXU32,
	F_DIVS32,
	F_REMS32,
	F_DIVU32,
	F_REMU32,
	F_DIVF32,
	F_DIVF64,
	F_NEG32, /* integer */
	F_NOT32,
	F_NOT64,
	F_NEGF32,
	F_ABSF32,
	F_SQRTF32,
	F_RCPF32,
	F_ATOMS_ADD32, /* atom/red.shared.add at 32 bits */
	F_LD,
	F_ST,
};

static inline bool int32t(uint8_t t)
{
	return t == PT_B32 || t == PT_U32 || t == PT_S32;
}

static inline bool int64t(uint8_t t)
{
	return t == PT_B64 || t == PT_U64 || t == PT_S64;
}

static uint8_t fast_form(const struct ptx_insn *in)
{
	const uint8_t t = in->type, op = in->op;
	if ((op == OP_ATOM || op == OP_RED) && in->space == PS_SHARED && in->mod == A_ADD && int32t(t) &&
	    in->o[op == OP_ATOM ? 1 : 0].k == PO_ADDR && (op == OP_RED || in->o[0].k == PO_REG) &&
	    in->o[op == OP_ATOM ? 2 : 1].k != PO_VEC)
		return F_ATOMS_ADD32;
	if (op == OP_LD || op == OP_ST) {
		unsigned bits = tbits(t);
		if (t == PT_NONE || t == PT_B128 || t == PT_PRED || bits < 8)
			return F_NONE;
		if (in->vec != 1 && in->vec != 2 && in->vec != 4)
			return F_NONE;
		if (in->space != PS_GLOBAL && in->space != PS_GENERIC && in->space != PS_SHARED &&
		    in->space != PS_CONST && !(in->space == PS_PARAM && op == OP_LD))
			return F_NONE;
		const struct ptx_opnd *a = &in->o[op == OP_ST ? 0 : 1], *v = &in->o[op == OP_ST ? 1 : 0];
		if (a->k != PO_ADDR)
			return F_NONE;
		if (in->vec > 1 ? v->k != PO_VEC || v->n < in->vec : v->k != PO_REG && op == OP_LD)
			return F_NONE;
		if (op == OP_ST && in->vec == 1 && v->k == PO_VEC)
			return F_NONE;
		return op == OP_LD ? F_LD : F_ST;
	}
	if (in->o[0].k != PO_REG)
		return F_NONE;
	for (unsigned i = 1; i < 4; i++)
		if (in->o[i].k == PO_VEC)
			return F_NONE;
	const bool i32 = int32t(t), i64 = int64t(t);
	switch (op) {
	case OP_MOV:
		return i32 || t == PT_F32 ? F_MOV32 : i64 || t == PT_F64 ? F_MOV64 : F_NONE;
	case OP_ADD:
	case OP_SUB:
		if (in->sat)
			return F_NONE;
		if (i32 || i64)
			return (op == OP_ADD ? F_ADD32 : F_SUB32) + (i64 ? F_ADD64 - F_ADD32 : 0);
		if (t == PT_F32)
			return op == OP_ADD ? F_ADDF32 : F_SUBF32;
		if (t == PT_F64)
			return op == OP_ADD ? F_ADDF64 : F_SUBF64;
		return F_NONE;
	case OP_MUL:
		if (t == PT_F32)
			return in->sat ? F_NONE : F_MULF32;
		if (t == PT_F64)
			return F_MULF64;
		if (in->mod == M_WIDE)
			return t == PT_U32 ? F_MULWU32 : t == PT_S32 ? F_MULWS32 : F_NONE;
		if (in->mod == M_HI)
			return F_NONE;
		return i32 ? F_MUL32 : i64 ? F_MUL64 : F_NONE;
	case OP_MAD:
		if (t == PT_F32)
			return F_FMAF32;
		if (t == PT_F64)
			return F_FMAF64;
		if (in->mod == M_WIDE)
			return t == PT_U32 ? F_MADWU32 : t == PT_S32 ? F_MADWS32 : F_NONE;
		if (in->mod == M_HI)
			return F_NONE;
		return i32 ? F_MAD32 : i64 ? F_MAD64 : F_NONE;
	case OP_FMA:
		return t == PT_F32 ? F_FMAF32 : t == PT_F64 ? F_FMAF64 : F_NONE;
	case OP_AND:
	case OP_OR:
	case OP_XOR: {
		uint8_t f = op == OP_AND ? F_AND32 : op == OP_OR ? F_OR32 : F_XOR32;
		return i32 ? f : i64 ? f + (F_AND64 - F_AND32) : F_NONE;
	}
	case OP_SHL:
		return i32 ? F_SHL32 : i64 ? F_SHL64 : F_NONE;
	case OP_SHR:
		if (i32)
			return t == PT_S32 ? F_SHRS32 : F_SHRU32;
		if (i64)
			return t == PT_S64 ? F_SHRS64 : F_SHRU64;
		return F_NONE;
	case OP_CVTA:
		return t == PT_NONE || i64 ? F_CVTA : F_NONE;
	case OP_MIN:
	case OP_MAX:
		/* Not f32: vectorised, fminf / fmaxf may pick either zero of
		 * -0 and +0, so the general path's answer could differ. */
		if (!i32)
			return F_NONE;
		return t == PT_S32 ? (op == OP_MIN ? F_MINS32 : F_MAXS32)
				   : (op == OP_MIN ? F_MINU32 : F_MAXU32);
	case OP_DIV:
	case OP_REM:
		if (op == OP_DIV && t == PT_F32 && !in->sat)
			return F_DIVF32;
		if (op == OP_DIV && t == PT_F64)
			return F_DIVF64;
		if (!i32)
			return F_NONE;
		return t == PT_S32 ? (op == OP_DIV ? F_DIVS32 : F_REMS32)
				   : (op == OP_DIV ? F_DIVU32 : F_REMU32);
	case OP_NEG:
		return t == PT_F32 ? F_NEGF32 : i32 ? F_NEG32 : F_NONE;
	case OP_ABS:
		return t == PT_F32 ? F_ABSF32 : F_NONE;
	case OP_NOT:
		return i32 ? F_NOT32 : i64 ? F_NOT64 : F_NONE;
	case OP_SQRT:
		return t == PT_F32 ? F_SQRTF32 : F_NONE;
	case OP_RCP:
		return t == PT_F32 ? F_RCPF32 : F_NONE;
	case OP_SELP:
		return i32 || t == PT_F32 ? F_SELP32 : i64 || t == PT_F64 ? F_SELP64 : F_NONE;
	case OP_CVT: {
		const uint8_t s = in->type2;
		if ((i32 || i64) && (int32t(s) || int64t(s)) && !in->sat) {
			if (i32)
				return F_CVT_TRUNC32;
			return s == PT_S32 ? F_CVT_SX32 : int32t(s) ? F_CVT_ZX32 : F_MOV64;
		}
		if (t == PT_F32 && s == PT_S32)
			return F_CVT_F32_S32;
		if (t == PT_F32 && (s == PT_U32 || s == PT_B32))
			return F_CVT_F32_U32;
		if (t == PT_S32 && s == PT_F32 && (in->rnd == R_RZI || in->rnd == R_NONE))
			return F_CVT_S32_F32;
		if (t == PT_F64 && s == PT_F32 && in->rnd <= R_RP && !in->sat)
			return F_CVT_F64_F32;
		if (t == PT_F32 && s == PT_F64 && (in->rnd == R_RN || in->rnd == R_NONE) && !in->sat)
			return F_CVT_F32_F64;
		return F_NONE;
	}
	case OP_SETP:
		if (in->bop)
			return F_NONE;
		if (t == PT_F32 || t == PT_F64) {
			if (in->mod > C_GE)
				return F_NONE;
			return t == PT_F32 ? F_SETP_F32 : F_SETP_F64;
		}
		if (in->mod > C_HS)
			return F_NONE;
		if (i32)
			return t == PT_S32 ? F_SETP_S32 : F_SETP_U32;
		if (i64)
			return t == PT_S64 ? F_SETP_S64 : F_SETP_U64;
		return F_NONE;
	default:
		return F_NONE;
	}
}

/* Over the instruction's lanes: all 32 in a plain loop when the warp is
 * whole. */
#define LOOP(...)                                                                                            \
	do {                                                                                                 \
		if (mask == 0xffffffffu) {                                                                   \
			for (int L = 0; L < 32; L++) {                                                       \
				__VA_ARGS__;                                                                 \
			}                                                                                    \
		} else {                                                                                     \
			for (uint32_t m_ = mask; m_; m_ &= m_ - 1) {                                         \
				const int L = __builtin_ctz(m_);                                             \
				__VA_ARGS__;                                                                 \
			}                                                                                    \
		}                                                                                            \
	} while (0)

/* Operand o's value in each lane: its register row, or tmp filled. */
static inline const uint64_t *lanes(const struct blk *b, const struct warp *w, const struct ptx_opnd *o,
				    uint32_t mask, uint64_t *tmp)
{
	if (o->k == PO_REG && !o->neg)
		return &w->R[(size_t)o->r * 32];
	if (o->k == PO_IMM && !o->neg) {
		for (int L = 0; L < 32; L++)
			tmp[L] = o->imm;
		return tmp;
	}
	if (o->k == PO_SREG && !o->neg) {
		if (o->r <= SR_TID_Z) {
			const uint16_t *t = b->tid[o->r - SR_TID_X] + w->id * 32;
			const uint32_t n = b->nthreads - w->id * 32;
			LOOP(tmp[L] = (uint32_t)L < n ? t[L] : 0);
			return tmp;
		}
		if (o->r >= SR_NTID_X && o->r <= SR_NCTAID_Z) {
			const uint64_t v = sreg(b, w, o->r, 0);
			for (int L = 0; L < 32; L++)
				tmp[L] = v;
			return tmp;
		}
	}
	LOOP(tmp[L] = val(b, w, o, L));
	return tmp;
}

/* A comparison loop for each condition of setp at one type. */
#define SETP_LOOP(T, X)                                                                                      \
	do {                                                                                                 \
		switch (in->mod) {                                                                           \
		case C_EQ:                                                                                   \
			LOOP(T x = X(A[L]), y = X(B[L]); t[L] = x == y);                                     \
			break;                                                                               \
		case C_NE:                                                                                   \
			LOOP(T x = X(A[L]), y = X(B[L]); t[L] = x < y || x > y);                             \
			break;                                                                               \
		case C_LT:                                                                                   \
		case C_LO:                                                                                   \
			LOOP(T x = X(A[L]), y = X(B[L]); t[L] = x < y);                                      \
			break;                                                                               \
		case C_LE:                                                                                   \
		case C_LS:                                                                                   \
			LOOP(T x = X(A[L]), y = X(B[L]); t[L] = x <= y);                                     \
			break;                                                                               \
		case C_GT:                                                                                   \
		case C_HI:                                                                                   \
			LOOP(T x = X(A[L]), y = X(B[L]); t[L] = x > y);                                      \
			break;                                                                               \
		default:                                                                                     \
			LOOP(T x = X(A[L]), y = X(B[L]); t[L] = x >= y);                                     \
			break;                                                                               \
		}                                                                                            \
	} while (0)
#define AS_S32(v) ((int32_t)(uint32_t)(v))
#define AS_U32(v) ((uint32_t)(v))
#define AS_S64(v) ((int64_t)(v))
#define AS_U64(v) ((uint64_t)(v))

/* A load or store whose lanes all fall in one allocation (or in shared
 * memory), aligned; false, having done nothing, for the general path to
 * take it (and raise any fault). */
static bool fast_mem(struct blk *b, struct warp *w, const struct ptx_insn *in, uint32_t mask)
{
	const bool st = in->op == OP_ST;
	const struct ptx_opnd *ao = &in->o[st ? 0 : 1];
	const uint32_t size = tbits(in->type) / 8, vec = in->vec;
	uint64_t addr[32], lo = UINT64_MAX, hi = 0, ors = 0;
	if (ao->r == PTX_NOREG) {
		lo = hi = ors = ao->imm;
		LOOP(addr[L] = ao->imm);
	} else {
		const uint64_t *base = &w->R[(size_t)ao->r * 32];
		LOOP(uint64_t a = base[L] + ao->imm; addr[L] = a; lo = a < lo ? a : lo; hi = a > hi ? a : hi;
		     ors |= a);
	}
	if ((ors & (size - 1)) || hi - lo > UINT32_MAX / 2)
		return false;
	const uint32_t span = (uint32_t)(hi - lo) + vec * size;
	uint8_t sp = in->space;
	uint64_t off = 0; /* the space's offset of lo */
	if (sp == PS_GENERIC) {
		if (hi < PTX_WIN_SHARED)
			sp = PS_GLOBAL;
		else if (lo >= PTX_WIN_SHARED && hi < PTX_WIN_SHARED + PTX_WIN_SIZE)
			sp = PS_SHARED, off = PTX_WIN_SHARED;
		else
			return false;
	}
	uint8_t *h;
	if (sp == PS_SHARED) {
		uint64_t a = lo - off;
		if (a >= b->shared_bytes || span > b->shared_bytes - a)
			return false;
		h = b->shared + a;
	} else if (sp == PS_PARAM) {
		if (st || lo >= b->l->param_bytes || span > b->l->param_bytes - lo)
			return false;
		h = (uint8_t *)(uintptr_t)(b->l->params + lo);
	} else if (st && sp == PS_CONST)
		return false;
	else if (!(h = global_ptr(b, lo, span)))
		return false;
	LOOP(addr[L] -= lo); /* h + addr[L]: the lane's host address */
	if (!st) {
		const bool sgn = tsigned(in->type);
		for (unsigned e = 0; e < vec; e++) {
			uint64_t *D = &w->R[(size_t)(vec > 1 ? in->o[0].v[e] : in->o[0].r) * 32];
			const uint32_t eo = e * size;
			switch (size) {
			case 1:
				if (sgn)
					LOOP(D[L] = (uint64_t)(int64_t)(int8_t)h[addr[L] + eo]);
				else
					LOOP(D[L] = h[addr[L] + eo]);
				break;
			case 2:
				LOOP(uint16_t v; memcpy(&v, h + addr[L] + eo, 2);
				     D[L] = sgn ? (uint64_t)(int64_t)(int16_t)v : v);
				break;
			case 4:
				if (sgn)
					LOOP(int32_t v; memcpy(&v, h + addr[L] + eo, 4);
					     D[L] = (uint64_t)(int64_t)v);
				else
					LOOP(uint32_t v; memcpy(&v, h + addr[L] + eo, 4); D[L] = v);
				break;
			default:
				LOOP(memcpy(&D[L], h + addr[L] + eo, 8));
				break;
			}
		}
		return true;
	}
	uint64_t tmp[32];
	for (unsigned e = 0; e < vec; e++) {
		const uint64_t *S =
		    vec > 1 ? &w->R[(size_t)in->o[1].v[e] * 32] : lanes(b, w, &in->o[1], mask, tmp);
		const uint32_t eo = e * size;
		switch (size) {
		case 1:
			LOOP(h[addr[L] + eo] = (uint8_t)S[L]);
			break;
		case 2:
			LOOP(uint16_t v = (uint16_t)S[L]; memcpy(h + addr[L] + eo, &v, 2));
			break;
		case 4:
			LOOP(uint32_t v = (uint32_t)S[L]; memcpy(h + addr[L] + eo, &v, 4));
			break;
		default:
			LOOP(memcpy(h + addr[L] + eo, &S[L], 8));
			break;
		}
	}
	return true;
}

/* atom/red.shared.add at 32 bits, every lane's address in bounds and
 * aligned (else false, having done nothing): lane by lane in lane order, as
 * the general path, on the block's own shared memory. */
static bool fast_atom_shared(struct blk *b, struct warp *w, const struct ptx_insn *in, uint32_t mask)
{
	const int ai = in->op == OP_ATOM ? 1 : 0;
	const struct ptx_opnd *ao = &in->o[ai];
	const uint64_t *base = ao->r == PTX_NOREG ? NULL : &w->R[(size_t)ao->r * 32];
	uint64_t addr[32], bad = 0, tmp[32];
	const uint64_t lim = b->shared_bytes < 4 ? 0 : b->shared_bytes - 4;
	LOOP(uint64_t a = (base ? base[L] : 0) + ao->imm; addr[L] = a; bad |= (a & 3) | (uint64_t)(a > lim));
	if (bad || b->shared_bytes < 4)
		return false;
	const uint64_t *V = lanes(b, w, &in->o[ai + 1], mask, tmp);
	uint64_t *D = ai ? &w->R[(size_t)in->o[0].r * 32] : NULL;
	for (uint32_t m_ = mask; m_; m_ &= m_ - 1) {
		const int L = __builtin_ctz(m_);
		uint32_t old;
		memcpy(&old, b->shared + addr[L], 4);
		uint32_t nv = old + (uint32_t)V[L];
		memcpy(b->shared + addr[L], &nv, 4);
		if (D)
			D[L] = old;
	}
	return true;
}

/* Runs in's fast form f over mask; false for the general path to run it. */
static bool run_fast(struct blk *b, struct warp *w, const struct ptx_insn *in, uint8_t f, uint32_t mask)
{
	if (f >= F_LD)
		return fast_mem(b, w, in, mask);
	if (f == F_ATOMS_ADD32)
		return fast_atom_shared(b, w, in, mask);
	uint64_t ta[32], tb[32], tc[32];
	uint64_t *D = &w->R[(size_t)in->o[0].r * 32];
	const uint64_t *A = lanes(b, w, &in->o[1], mask, ta);
	const bool unary = (f >= F_MOV32 && f <= F_MOV64) || (f >= F_CVT_ZX32 && f <= F_CVT_F32_F64) ||
			   f == F_CVTA || (f >= F_NEG32 && f <= F_RCPF32);
	const uint64_t *B = unary ? NULL : lanes(b, w, &in->o[2], mask, tb);
	const uint64_t *C = NULL;
	if (f == F_MAD32 || f == F_MAD64 || (f >= F_MADWU32 && f <= F_MADWS32) || f == F_FMAF32 ||
	    f == F_FMAF64 || f == F_SELP32 || f == F_SELP64)
		C = lanes(b, w, &in->o[3], mask, tc);
	switch (f) {
	case F_MOV32:
	case F_CVT_TRUNC32:
		LOOP(D[L] = (uint32_t)A[L]);
		break;
	case F_MOV64:
		LOOP(D[L] = A[L]);
		break;
	case F_MINS32:
		LOOP(D[L] = AS_S32(A[L]) < AS_S32(B[L]) ? (uint32_t)A[L] : (uint32_t)B[L]);
		break;
	case F_MAXS32:
		LOOP(D[L] = AS_S32(A[L]) < AS_S32(B[L]) ? (uint32_t)B[L] : (uint32_t)A[L]);
		break;
	case F_MINU32:
		LOOP(D[L] = (uint32_t)A[L] < (uint32_t)B[L] ? (uint32_t)A[L] : (uint32_t)B[L]);
		break;
	case F_MAXU32:
		LOOP(D[L] = (uint32_t)A[L] < (uint32_t)B[L] ? (uint32_t)B[L] : (uint32_t)A[L]);
		break;
	case F_DIVS32:
		LOOP(int64_t x = AS_S32(A[L]), y = AS_S32(B[L]);
		     D[L] = !y ? 0xffffffffu : (uint32_t)(y == -1 ? -x : x / y));
		break;
	case F_REMS32:
		LOOP(int64_t x = AS_S32(A[L]), y = AS_S32(B[L]); D[L] = !y        ? (uint32_t)x
									: y == -1 ? 0
										  : (uint32_t)(x % y));
		break;
	case F_DIVU32:
		LOOP(uint32_t x = (uint32_t)A[L], y = (uint32_t)B[L]; D[L] = !y ? 0xffffffffu : x / y);
		break;
	case F_REMU32:
		LOOP(uint32_t x = (uint32_t)A[L], y = (uint32_t)B[L]; D[L] = !y ? x : x % y);
		break;
	case F_DIVF32:
		LOOP(D[L] = of32(f32(A[L]) / f32(B[L])));
		break;
	case F_DIVF64:
		LOOP(D[L] = of64(f64(A[L]) / f64(B[L])));
		break;
	case F_NEG32:
		LOOP(D[L] = (uint32_t)(0 - A[L]));
		break;
	case F_NOT32:
		LOOP(D[L] = (uint32_t)~A[L]);
		break;
	case F_NOT64:
		LOOP(D[L] = ~A[L]);
		break;
	case F_NEGF32:
		LOOP(D[L] = A[L] ^ 0x80000000u);
		break;
	case F_ABSF32:
		LOOP(D[L] = A[L] & 0x7fffffffu);
		break;
	case F_SQRTF32:
		LOOP(D[L] = of32(sqrtf(f32(A[L]))));
		break;
	case F_RCPF32:
		LOOP(D[L] = of32(1.0f / f32(A[L])));
		break;
	case F_CVTA: {
		uint64_t win = in->space == PS_SHARED  ? PTX_WIN_SHARED
			       : in->space == PS_LOCAL ? PTX_WIN_LOCAL
			       : in->space == PS_PARAM ? PTX_WIN_PARAM
						       : 0;
		if (in->to)
			win = (uint64_t)0 - win;
		LOOP(D[L] = A[L] + win);
		break;
	}
	case F_ADD32:
		LOOP(D[L] = (uint32_t)(A[L] + B[L]));
		break;
	case F_SUB32:
		LOOP(D[L] = (uint32_t)(A[L] - B[L]));
		break;
	case F_MUL32:
		LOOP(D[L] = (uint32_t)(A[L] * B[L]));
		break;
	case F_AND32:
		LOOP(D[L] = (uint32_t)(A[L] & B[L]));
		break;
	case F_OR32:
		LOOP(D[L] = (uint32_t)(A[L] | B[L]));
		break;
	case F_XOR32:
		LOOP(D[L] = (uint32_t)(A[L] ^ B[L]));
		break;
	case F_SHL32:
		LOOP(uint32_t n = (uint32_t)B[L]; D[L] = n >= 32 ? 0 : (uint32_t)(A[L] << n));
		break;
	case F_SHRU32:
		LOOP(uint32_t n = (uint32_t)B[L]; D[L] = n >= 32 ? 0 : (uint32_t)A[L] >> n);
		break;
	case F_SHRS32:
		LOOP(uint32_t n = (uint32_t)B[L]; D[L] = (uint32_t)(AS_S32(A[L]) >> (n >= 32 ? 31 : n)));
		break;
	case F_MAD32:
		LOOP(D[L] = (uint32_t)(A[L] * B[L] + C[L]));
		break;
	case F_ADD64:
		LOOP(D[L] = A[L] + B[L]);
		break;
	case F_SUB64:
		LOOP(D[L] = A[L] - B[L]);
		break;
	case F_MUL64:
		LOOP(D[L] = A[L] * B[L]);
		break;
	case F_AND64:
		LOOP(D[L] = A[L] & B[L]);
		break;
	case F_OR64:
		LOOP(D[L] = A[L] | B[L]);
		break;
	case F_XOR64:
		LOOP(D[L] = A[L] ^ B[L]);
		break;
	case F_SHL64:
		LOOP(uint32_t n = (uint32_t)B[L]; D[L] = n >= 64 ? 0 : A[L] << n);
		break;
	case F_SHRU64:
		LOOP(uint32_t n = (uint32_t)B[L]; D[L] = n >= 64 ? 0 : A[L] >> n);
		break;
	case F_SHRS64:
		LOOP(uint32_t n = (uint32_t)B[L]; D[L] = (uint64_t)(AS_S64(A[L]) >> (n >= 64 ? 63 : n)));
		break;
	case F_MAD64:
		LOOP(D[L] = A[L] * B[L] + C[L]);
		break;
	case F_MULWU32:
		LOOP(D[L] = (uint64_t)(uint32_t)A[L] * (uint32_t)B[L]);
		break;
	case F_MULWS32:
		LOOP(D[L] = (uint64_t)((int64_t)AS_S32(A[L]) * AS_S32(B[L])));
		break;
	case F_MADWU32:
		LOOP(D[L] = (uint64_t)(uint32_t)A[L] * (uint32_t)B[L] + C[L]);
		break;
	case F_MADWS32:
		LOOP(D[L] = (uint64_t)((int64_t)AS_S32(A[L]) * AS_S32(B[L])) + C[L]);
		break;
	case F_ADDF32:
		LOOP(D[L] = of32(f32(A[L]) + f32(B[L])));
		break;
	case F_SUBF32:
		LOOP(D[L] = of32(f32(A[L]) - f32(B[L])));
		break;
	case F_MULF32:
		LOOP(D[L] = of32(f32(A[L]) * f32(B[L])));
		break;
	case F_FMAF32:
		LOOP(D[L] = of32(fmaf(f32(A[L]), f32(B[L]), f32(C[L]))));
		break;
	case F_ADDF64:
		LOOP(D[L] = of64(f64(A[L]) + f64(B[L])));
		break;
	case F_SUBF64:
		LOOP(D[L] = of64(f64(A[L]) - f64(B[L])));
		break;
	case F_MULF64:
		LOOP(D[L] = of64(f64(A[L]) * f64(B[L])));
		break;
	case F_FMAF64:
		LOOP(D[L] = of64(fma(f64(A[L]), f64(B[L]), f64(C[L]))));
		break;
	case F_SELP32:
		LOOP(D[L] = (uint32_t)(C[L] ? A[L] : B[L]));
		break;
	case F_SELP64:
		LOOP(D[L] = C[L] ? A[L] : B[L]);
		break;
	case F_CVT_ZX32:
		LOOP(D[L] = (uint32_t)A[L]);
		break;
	case F_CVT_SX32:
		LOOP(D[L] = (uint64_t)(int64_t)AS_S32(A[L]));
		break;
	case F_CVT_F32_S32:
		LOOP(D[L] = of32((float)AS_S32(A[L])));
		break;
	case F_CVT_F32_U32:
		LOOP(D[L] = of32((float)(uint32_t)A[L]));
		break;
	case F_CVT_S32_F32:
		LOOP(double d = trunc((double)f32(A[L])); D[L] = isnan(d)             ? 0
								 : d <= -2147483648.0 ? 0x80000000u
								 : d >= 2147483648.0  ? 0x7fffffffu
										      : (uint32_t)(int32_t)d);
		break;
	case F_CVT_F64_F32:
		LOOP(D[L] = of64((double)f32(A[L])));
		break;
	case F_CVT_F32_F64:
		LOOP(D[L] = of32((float)f64(A[L])));
		break;
	default: {
		/* setp */
		uint8_t t[32];
		switch (f) {
		case F_SETP_S32:
			if (in->mod <= C_GE) {
				SETP_LOOP(int32_t, AS_S32);
				break;
			}
			/* .lo/.ls/.hi/.hs compare unsigned */
			__attribute__((fallthrough));
		case F_SETP_U32:
			SETP_LOOP(uint32_t, AS_U32);
			break;
		case F_SETP_S64:
			if (in->mod <= C_GE) {
				SETP_LOOP(int64_t, AS_S64);
				break;
			}
			__attribute__((fallthrough));
		case F_SETP_U64:
			SETP_LOOP(uint64_t, AS_U64);
			break;
		case F_SETP_F32:
			SETP_LOOP(float, f32);
			break;
		case F_SETP_F64:
			SETP_LOOP(double, f64);
			break;
		default:
			return false;
		}
		LOOP(D[L] = t[L]);
		if (in->pipe) {
			uint64_t *Q = &w->R[(size_t)in->o[5].r * 32];
			LOOP(Q[L] = !t[L]);
		}
		break;
	}
	}
	return true;
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
				stop(b, CUDA_ERROR_LAUNCH_FAILED,
				     "cudaGraphSetConditional: the kernel was not launched by a graph with "
				     "conditional handles");
				return;
			}
			if (b->l->set_conditional(b->l->cond_arg, hnd, v)) {
				if (claim(b, CUDA_ERROR_LAUNCH_FAILED))
					snprintf(b->l->fault, sizeof b->l->fault,
						 "cudaGraphSetConditional: handle 0x%llx is not the "
						 "launching graph's",
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
			if (claim(b, CUDA_ERROR_ASSERT))
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

/* ---- ptx_ext.h's families --------------------------------------------------------------- */

/* setp on f16x2/bf16x2: p compares the low halves, q the high ones. */
static void setp_x2(const struct ptx_insn *in, uint64_t a, uint64_t b, bool *p, bool *q)
{
	uint8_t h = in->type == PT_F16X2 ? PT_F16 : PT_BF16;
	*p = compare(in->mod, h, a & 0xffff, b & 0xffff);
	*q = compare(in->mod, h, a >> 16 & 0xffff, b >> 16 & 0xffff);
}

static const uint8_t *ext_mem(void *arg, uint64_t a, uint32_t size)
{
	return global_ptr(arg, a, size);
}

/* The object handle h names, through a one-entry cache. */
static bool ext_object(struct blk *b, uint64_t h, int surface, struct ptx_tex *t, uint64_t *last,
		       int *last_kind)
{
	if (*last_kind == surface && *last == h)
		return true;
	if (!b->l->object || !b->l->object(b->l->arg, h, surface, t)) {
		fault(b, CUDA_ERROR_ILLEGAL_ADDRESS,
		      surface ? "surface access through a handle that is no surface"
			      : "texture fetch through a handle that is no texture",
		      h, 0);
		return false;
	}
	*last = h;
	*last_kind = surface;
	return true;
}

/* n bytes at a in space sp, bounded and within one allocation, no alignment
 * asked; NULL after the fault. */
static uint8_t *ext_span(struct blk *b, const struct warp *w, int lane, uint8_t sp, uint64_t a, uint64_t n,
			 bool write)
{
	if (!n || n > (1u << 24)) {
		fault(b, CUDA_ERROR_ILLEGAL_ADDRESS, write ? "oversized write" : "oversized read", a,
		      (uint32_t)n);
		return NULL;
	}
	uint8_t *p = mem_ptr(b, w, lane, sp, a, 1, write);
	uint8_t *q = p ? mem_ptr(b, w, lane, sp, a + n - 1, 1, write) : NULL;
	if (p && q != p + n - 1) {
		fault(b, CUDA_ERROR_ILLEGAL_ADDRESS, write ? "out-of-bounds write" : "out-of-bounds read", a,
		      (uint32_t)n);
		return NULL;
	}
	return p && q ? p : NULL;
}

/* The mbarrier operand's word. */
static uint8_t *ext_mbar(struct blk *b, const struct warp *w, int L, const struct ptx_insn *in, int i)
{
	return mem_ptr(b, w, L, in->space, opaddr(w, &in->o[i], L), 8, true);
}

static uint32_t frag_reg(const struct blk *b, const struct ptx_opnd *o, uint32_t i)
{
	return o->k == PO_XVEC ? b->k->xregs[o->imm + i] : o->v[i];
}

/* wmma over the warp: loads and stores move each lane's elements (the
 * layout is ptx_ext.h's); mma gathers the matrices from every lane. */
static int run_wmma(struct blk *b, struct warp *w, const struct ptx_insn *in, uint32_t mask)
{
	struct ptx_frag f;
	if (in->mod != WM_MMA) {
		bool st = in->mod == WM_STORE_D;
		uint8_t et = in->mod <= WM_LOAD_B && in->vec == 2 ? PT_F32 : in->type;
		if (!ptx_frag_of(in->bop, in->mod, et, &f))
			return 0;
		const struct ptx_opnd *ao = &in->o[st ? 0 : 1], *vo = &in->o[st ? 1 : 0];
		uint32_t S = f.nregs * f.per, E = f.rows * f.cols, bits = f.esize * 8;
		LANES
		uint64_t base = opaddr(w, ao, L), ldm = zx(V(2), 32);
		for (uint32_t r = 0; r < f.nregs; r++) {
			uint32_t reg = frag_reg(b, vo, r);
			uint64_t v = st ? REG(reg) : 0;
			for (uint32_t s = 0; s < f.per; s++) {
				uint32_t e = ((uint32_t)L * S + r * f.per + s) % E, row = e / f.cols,
					 col = e % f.cols;
				uint64_t off =
				    (in->to & 1) ? (uint64_t)col * ldm + row : (uint64_t)row * ldm + col;
				uint8_t *p = mem_ptr(b, w, L, in->space, base + off * f.esize, f.esize, st);
				if (!p)
					return -1;
				if (st)
					store(p, f.esize, bits >= 64 ? v : v >> (s * bits));
				else
					v |= load(p, f.esize) << (s * bits);
			}
			if (!st)
				REG(reg) = v;
		}
		END_LANES
		return 0;
	}
	uint8_t dt, at, ct;
	ptx_mma_types(in, &dt, &at, &ct);
	struct ptx_frag fr[4];
	if (!ptx_frag_of(in->bop, WM_STORE_D, dt, &fr[0]) || !ptx_frag_of(in->bop, WM_LOAD_A, at, &fr[1]) ||
	    !ptx_frag_of(in->bop, WM_LOAD_B, at, &fr[2]) || !ptx_frag_of(in->bop, WM_LOAD_C, ct, &fr[3]))
		return 0;
	double *m[4];
	double buf[4][512];
	for (int i = 1; i < 4; i++) {
		const struct ptx_frag *q = &fr[i];
		uint32_t S = q->nregs * q->per, E = q->rows * q->cols;
		m[i] = buf[i];
		for (uint32_t L = 0; L < 32; L++)
			for (uint32_t r = 0; r < q->nregs; r++) {
				uint64_t v = w->R[(size_t)frag_reg(b, &in->o[i], r) * 32 + L];
				for (uint32_t s = 0; s < q->per; s++)
					m[i][(L * S + r * q->per + s) % E] = ptx_frag_get(q, v, s);
			}
	}
	uint32_t M = fr[0].rows, N = fr[0].cols, K = fr[1].cols;
	m[0] = buf[0];
	for (uint32_t i = 0; i < M; i++)
		for (uint32_t j = 0; j < N; j++) {
			double acc = m[3][i * N + j];
			for (uint32_t k = 0; k < K; k++)
				acc += m[1][i * K + k] * m[2][k * N + j];
			m[0][i * N + j] = acc;
		}
	const struct ptx_frag *q = &fr[0];
	uint32_t S = q->nregs * q->per, E = q->rows * q->cols;
	LANES
	for (uint32_t r = 0; r < q->nregs; r++) {
		uint32_t reg = frag_reg(b, &in->o[0], r);
		uint64_t v = REG(reg);
		for (uint32_t s = 0; s < q->per; s++)
			v = ptx_frag_put(q, v, s, m[0][((uint32_t)L * S + r * q->per + s) % E]);
		REG(reg) = v;
	}
	END_LANES
	return 0;
}

/* Runs one of ptx_ext.h's instructions over the lanes in mask: 0 to go on,
 * 1 when a lane waits on others (the warp yields), -1 after a fault. */
static int run_ext(struct blk *b, struct warp *w, const struct ptx_insn *in, uint32_t mask)
{
	uint64_t last = 0;
	int last_kind = -1;
	struct ptx_tex t;
	switch (in->op) {
	case OP_REDUX:
	case OP_MATCH: {
		uint64_t v[32] = {0}, out[32] = {0};
		uint32_t members[32] = {0};
		bool pred[32] = {0};
		LANES
		v[L] = V(1);
		members[L] = (uint32_t)V(2);
		END_LANES
		if (in->op == OP_REDUX)
			ptx_redux(in->mod, in->type, mask, v, members, out);
		else
			ptx_match(in->mod, in->type, mask, v, members, out, pred);
		LANES
		W(0, out[L]);
		if (in->pipe)
			W(5, pred[L]);
		END_LANES
		return 0;
	}
	case OP_TEX:
	case OP_TLD4:
		LANES
		if (!ext_object(b, opaddr(w, &in->o[1], L), 0, &t, &last, &last_kind))
			return -1;
		uint64_t c[4] = {0, 0, 0, 0}, out[4];
		for (unsigned e = 0; e < in->o[1].n; e++)
			c[e] = REG(in->o[1].v[e]);
		if (!ptx_tex_fetch(&t, in->mod, in->op == OP_TLD4 ? in->bop : -1, in->type, in->type2, c,
				   ext_mem, b, out)) {
			fault(b, CUDA_ERROR_ILLEGAL_ADDRESS, "texture read outside device memory", t.base, 0);
			return -1;
		}
		for (unsigned e = 0; e < 4; e++)
			REG(in->o[0].v[e]) = out[e];
		END_LANES
		return 0;
	case OP_SULD:
	case OP_SUST: {
		int hi = in->op == OP_SULD ? 1 : 0;
		const struct ptx_opnd *vo = &in->o[1 - hi];
		uint32_t size = tbits(in->type) / 8;
		LANES
		if (!ext_object(b, opaddr(w, &in->o[hi], L), 1, &t, &last, &last_kind))
			return -1;
		uint64_t c[4] = {0, 0, 0, 0};
		for (unsigned e = 0; e < in->o[hi].n; e++)
			c[e] = REG(in->o[hi].v[e]);
		uint64_t a = ptx_surf_addr(&t, in->mod, in->to, c, size * in->vec);
		if (!a) {
			fault(b, CUDA_ERROR_ILLEGAL_ADDRESS, "surface access out of range", c[0],
			      size * in->vec);
			return -1;
		}
		for (unsigned e = 0; e < in->vec; e++) {
			uint32_t r = vo->k == PO_VEC ? vo->v[e] : vo->r;
			uint8_t *p = a == 1 ? NULL : (uint8_t *)(uintptr_t)global_ptr(b, a + e * size, size);
			if (a != 1 && !p) {
				fault(b, CUDA_ERROR_ILLEGAL_ADDRESS, "surface outside device memory", a,
				      size);
				return -1;
			}
			if (hi)
				REG(r) = p ? load(p, size) : 0;
			else if (p)
				store(p, size, REG(r));
		}
		END_LANES
		return 0;
	}
	case OP_TXQ:
	case OP_SUQ:
		LANES
		if (!ext_object(b, opaddr(w, &in->o[1], L), in->op == OP_SUQ, &t, &last, &last_kind))
			return -1;
		W(0, fit(ptx_tex_query(&t, in->mod), in->type ? in->type : PT_B32));
		END_LANES
		return 0;
	case OP_CPASYNC:
		switch (in->mod) {
		case CA_COPY: {
			/* The copy completes at issue: a valid schedule of an
			 * asynchronous one, so every wait finds it done. */
			uint32_t n = (uint32_t)in->o[2].imm;
			LANES
			uint64_t src = in->nops > 3 ? V(3) : n;
			if (src > n)
				src = n;
			uint8_t *d = mem_ptr(b, w, L, PS_SHARED, opaddr(w, &in->o[0], L), n, true);
			if (!d)
				return -1;
			if (src) {
				const uint8_t *s =
				    ext_span(b, w, L, PS_GLOBAL, opaddr(w, &in->o[1], L), src, false);
				if (!s)
					return -1;
				memmove(d, s, src);
			}
			memset(d + src, 0, n - src);
			END_LANES
			return 0;
		}
		case CA_MBAR_ARRIVE:
			/* Without .noinc the arrival is pre-counted: no change. */
			if (!in->to)
				return 0;
			LANES
			uint8_t *p = ext_mbar(b, w, L, in, 0);
			uint64_t tok;
			if (!p)
				return -1;
			store(p, 8, ptx_mbar_arrive(load(p, 8), 1, 0, false, &tok));
			END_LANES
			return 0;
		case CA_BULK:
			LANES
			uint64_t n = V(2);
			uint8_t *d = ext_span(b, w, L, PS_SHARED, opaddr(w, &in->o[0], L), n, true);
			const uint8_t *s =
			    d ? ext_span(b, w, L, PS_GLOBAL, opaddr(w, &in->o[1], L), n, false) : NULL;
			uint8_t *p = s ? ext_mbar(b, w, L, in, 3) : NULL;
			uint64_t tok;
			if (!p)
				return -1;
			memmove(d, s, n);
			store(p, 8, ptx_mbar_arrive(load(p, 8), 0, -(int64_t)n, false, &tok));
			END_LANES
			return 0;
		default: /* commit_group, wait_group, wait_all: every copy is done */
			return 0;
		}
	case OP_MBAR: {
		bool wait = false;
		int ai = in->mod == MB_ARRIVE || in->mod == MB_ARRIVE_DROP || in->mod == MB_TEST_WAIT ||
				 in->mod == MB_TRY_WAIT
			     ? 1
			     : 0;
		if (in->mod == MB_PENDING) {
			LANES
			W(0, 0);
			END_LANES
			return 0;
		}
		LANES
		uint8_t *p = ext_mbar(b, w, L, in, ai);
		uint64_t tok = 0;
		if (!p)
			return -1;
		uint64_t s = load(p, 8);
		switch (in->mod) {
		case MB_INIT:
			store(p, 8, ptx_mbar_init(V(1)));
			break;
		case MB_ARRIVE:
		case MB_ARRIVE_DROP: {
			uint32_t cnt = in->nops > 2 && !in->to ? (uint32_t)V(2) : 1;
			int64_t tx = in->to ? (int64_t)(uint32_t)V(2) : 0;
			store(p, 8, ptx_mbar_arrive(s, cnt, tx, in->mod == MB_ARRIVE_DROP, &tok));
			W(0, tok);
			break;
		}
		case MB_EXPECT_TX:
		case MB_COMPLETE_TX: {
			int64_t tx = (int64_t)(uint32_t)V(1);
			store(p, 8, ptx_mbar_arrive(s, 0, in->mod == MB_EXPECT_TX ? tx : -tx, false, &tok));
			break;
		}
		case MB_TEST_WAIT:
		case MB_TRY_WAIT: {
			bool done = ptx_mbar_done(s, V(2), in->bop);
			W(0, done);
			wait |= !done;
			break;
		}
		default: /* inval */
			break;
		}
		END_LANES
		return wait ? 1 : 0;
	}
	case OP_WMMA:
		return run_wmma(b, w, in, mask);
	case OP_VABSDIFF4:
		LANES
		W(0, ptx_vabsdiff4(in->type2, in->sat, V(1), V(2), V(3)));
		END_LANES
		return 0;
	default:
		return 0;
	}
}

/* Runs warp w until it exits, reaches a barrier or faults. */
static void run_warp(struct blk *b, struct warp *w)
{
	const struct ptx_insn *code = b->k->code;
	const uint32_t ninsns = b->k->ninsns;
	const uint8_t *fast = b->fast;
	while (!w->done && !b->err) {
		if (!--b->budget) {
			b->budget = POLL_EVERY;
			/* Another worker's fault stops this one too. */
			int other = atomic_load_explicit(&b->g->err, memory_order_relaxed);
			if (other) {
				b->err = (CUresult)other;
				return;
			}
			if (b->l->cancelled) {
				CUresult r = b->l->cancelled(b->l->arg);
				if (r) {
					stop(b, r, "cancelled");
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
		if (in->guard != PTX_NOREG && mask == 0xffffffffu) {
			/* A whole warp: every lane's predicate, without the bit scan. */
			const uint64_t *P = &w->R[(size_t)in->guard * 32];
			uint32_t g = 0;
			for (int L = 0; L < 32; L++)
				g |= (uint32_t)(P[L] != 0) << L;
			mask = in->gneg ? ~g : g;
		} else if (in->guard != PTX_NOREG) {
			uint32_t g = 0;
			for (uint32_t m_ = mask; m_; m_ &= m_ - 1) {
				const int L = __builtin_ctz(m_);
				if ((REG(in->guard) != 0) != in->gneg)
					g |= 1u << L;
			}
			mask = g;
		}
		b->insns += pop32(mask);
		if (mask && fast[w->pc] && run_fast(b, w, in, fast[w->pc], mask)) {
			advance(w);
			continue;
		}
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
			     : ptx_is_half(in->type)
				 ? ptx_half_op(OP_FMA, in->type, in->rnd, in->sat, a, c, d)
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
			if (in->type == PT_F16X2 || in->type == PT_BF16X2)
				setp_x2(in, V(1), V(2), &p, &q);
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
			uint64_t old =
			    atomic_rmw(b, in, p, size, V(ai + 1), in->mod == A_CAS ? V(ai + 2) : 0);
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
		case OP_REDUX:
		case OP_MATCH:
		case OP_TEX:
		case OP_TLD4:
		case OP_SULD:
		case OP_SUST:
		case OP_TXQ:
		case OP_SUQ:
		case OP_CPASYNC:
		case OP_MBAR:
		case OP_WMMA:
		case OP_VABSDIFF4: {
			int r = mask ? run_ext(b, w, in, mask) : 0;
			if (r < 0)
				return;
			if (r > 0) { /* waiting on others: let the block's other warps run */
				advance(w);
				return;
			}
			break;
		}
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

/* The device's printf buffer of a block or a worker, written out when the
 * kernel is done (whole writes: workers' buffers do not interleave). */
static void flush_out(struct blk *b)
{
	if (b->out.len) {
		fwrite(b->out.buf, 1, b->out.len, stdout);
		fflush(stdout);
	}
	free(b->out.buf);
	b->out = (struct ptx_out){0};
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
		flush_out(b);
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

/* Runs one block to its end in b (its shared memory, registers, warps). */
static void run_block(struct blk *b, struct warp *w, uint64_t *R)
{
	const struct ptx_kernel *k = b->k;
	const uint32_t nthreads = b->nthreads, nwarps = b->nwarps;
	memset(b->shared, 0, b->shared_bytes ? b->shared_bytes : 1);
	memset(R, 0, (size_t)nwarps * k->nregs * 32 * sizeof *R);
	b->red_popc = 0;
	b->red_all = true;
	b->red_any = false;
	for (uint32_t i = 0; i < nwarps; i++) {
		free_frames(&w[i]);
		uint32_t n = (uint32_t)(nthreads - i * 32 < 32 ? nthreads - i * 32 : 32);
		w[i] = (struct warp){.live = n == 32 ? 0xffffffffu : (1u << n) - 1,
				     .id = i,
				     .R = R + (size_t)i * k->nregs * 32};
		w[i].active = w[i].live;
		w[i].next_wait = UINT32_MAX;
	}
	while (!b->err && step_block(b, w))
		;
}

/* A worker: takes blocks in order from the launch's counter until none are
 * left or some worker faulted. Each has its own shared memory, local memory,
 * registers and warps, as blocks on different SMs do. */
static void *run_blocks(void *arg)
{
	struct grid *g = arg;
	const struct ptx_kernel *k = g->k;
	struct ptx_launch *l = g->l;
	struct blk b = {.k = k,
			.l = l,
			.g = g,
			.fast = g->fast,
			.nthreads = g->nthreads,
			.nwarps = g->nwarps,
			.shared_bytes = g->shared_bytes,
			.budget = POLL_EVERY};
	b.tid[0] = g->tid;
	b.tid[1] = g->tid + g->nthreads;
	b.tid[2] = g->tid + 2 * (size_t)g->nthreads;
	b.shared = calloc(1, g->shared_bytes ? g->shared_bytes : 1);
	b.local = calloc((size_t)g->nwarps * 32, k->local_bytes ? k->local_bytes : 1);
	struct warp *w = calloc(g->nwarps, sizeof *w);
	uint64_t *R = calloc((size_t)g->nwarps * k->nregs * 32, sizeof *R);
	if (!b.shared || !b.local || !w || !R)
		stop(&b, CUDA_ERROR_OUT_OF_MEMORY, "out of host memory");
	while (!b.err) {
		if (atomic_load_explicit(&g->err, memory_order_relaxed))
			break;
		uint64_t i = atomic_fetch_add_explicit(&g->next, 1, memory_order_relaxed);
		if (i >= g->nblocks)
			break;
		b.ctaid[0] = (uint32_t)(i % l->grid[0]);
		b.ctaid[1] = (uint32_t)(i / l->grid[0] % l->grid[1]);
		b.ctaid[2] = (uint32_t)(i / l->grid[0] / l->grid[1]);
		run_block(&b, w, R);
	}
	atomic_fetch_add(&g->insns, b.insns);
	for (uint32_t i = 0; w && i < g->nwarps; i++)
		free_frames(&w[i]);
	flush_out(&b);
	free(b.shared);
	free(b.local);
	free(w);
	free(R);
	return NULL;
}

static _Atomic uint32_t default_threads;

uint32_t ptx_threads(void)
{
	uint32_t n = atomic_load(&default_threads);
	if (n)
		return n;
	const char *e = getenv("XGPU_SIM_PTX_THREADS");
	char *end;
	unsigned long v = e && *e ? strtoul(e, &end, 10) : 0;
	if (e && *e && !*end && v >= 1)
		n = v > PTX_MAX_THREADS ? PTX_MAX_THREADS : (uint32_t)v;
	else {
		cpu_set_t set;
		int c = sched_getaffinity(0, sizeof set, &set) ? 1 : CPU_COUNT(&set);
		n = c < 1 ? 1 : c > (int)PTX_MAX_THREADS ? PTX_MAX_THREADS : (uint32_t)c;
	}
	atomic_store(&default_threads, n);
	return n;
}

/* Whether k's blocks must all be resident at once: a kernel that syncs its
 * whole grid (a cooperative launch's grid.sync) would wait for ever on a
 * block that a busy worker has not started. Such kernels run in run_grid,
 * their blocks interleaved on the calling thread. */
static bool needs_coresident(const struct ptx_kernel *k)
{
	return k->grid_sync;
}

/* k's fast forms, made once: a launch of a big kernel would otherwise pay
 * for them each time. NULL when out of memory. */
static const uint8_t *forms(const struct ptx_kernel *k)
{
	/* The cache is the only thing a launch writes in the kernel. */
	struct ptx_kernel *mk = (struct ptx_kernel *)(uintptr_t)k;
	uint8_t *f = atomic_load(&mk->fast);
	if (f)
		return f;
	uint8_t *nf = malloc(k->ninsns ? k->ninsns : 1);
	if (!nf)
		return NULL;
	for (uint32_t i = 0; i < k->ninsns; i++)
		nf[i] = fast_form(&k->code[i]);
	if (atomic_compare_exchange_strong(&mk->fast, &f, nf))
		return nf;
	free(nf); /* another launch made them first */
	return f;
}

/* Launches of fewer threads than this run on the calling thread alone:
 * starting workers would cost more than they save. */
#define PAR_MIN_THREADS 4096u

CUresult ptx_run(const struct ptx_kernel *k, struct ptx_launch *l)
{
	l->insns = 0;
	l->fault[0] = 0;
	if (k->unsupported[0])
		return CUDA_ERROR_NOT_SUPPORTED;
	uint64_t nthreads = (uint64_t)l->block[0] * l->block[1] * l->block[2];
	if (!nthreads || nthreads > 1024)
		return CUDA_ERROR_INVALID_VALUE;
	uint64_t nblocks = (uint64_t)l->grid[0] * l->grid[1] * l->grid[2];
	if (!nblocks)
		return CUDA_SUCCESS;
	uint64_t shared_bytes =
	    (((uint64_t)k->shared_static + l->shared_dyn + 15) & ~(uint64_t)15) + PTX_RESERVED_SMEM;
	/* slow: no fast forms, each instruction's entry F_NONE. */
	uint8_t *none = l->slow ? calloc(k->ninsns ? k->ninsns : 1, 1) : NULL;
	const uint8_t *fast = l->slow ? none : forms(k);
	uint16_t *tid = calloc(3 * (size_t)nthreads, sizeof *tid);
	if (!fast || !tid) {
		free(none);
		free(tid);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	for (uint32_t t = 0; t < nthreads; t++) {
		tid[t] = (uint16_t)(t % l->block[0]);
		tid[nthreads + t] = (uint16_t)(t / l->block[0] % l->block[1]);
		tid[2 * nthreads + t] = (uint16_t)(t / l->block[0] / l->block[1]);
	}
	struct grid g = {.k = k,
			 .l = l,
			 .fast = fast,
			 .tid = tid,
			 .nthreads = (uint32_t)nthreads,
			 .nwarps = (uint32_t)((nthreads + 31) / 32),
			 .shared_bytes = (uint32_t)shared_bytes,
			 .nblocks = nblocks};
	if (needs_coresident(k)) {
		struct blk t = {.k = k,
				.g = &g,
				.l = l,
				.fast = fast,
				.nthreads = g.nthreads,
				.nwarps = g.nwarps,
				.shared_bytes = g.shared_bytes,
				.budget = POLL_EVERY,
				.red_all = true,
				.tid = {tid, tid + nthreads, tid + 2 * nthreads}};
		CUresult r = run_grid(&t);
		free(none);
		free(tid);
		return r ? r : (CUresult)atomic_load(&g.err);
	}
	uint32_t nw = l->threads ? l->threads : ptx_threads();
	if (nw > PTX_MAX_THREADS)
		nw = PTX_MAX_THREADS;
	if (nw > nblocks)
		nw = (uint32_t)nblocks;
	if (nblocks * nthreads < PAR_MIN_THREADS)
		nw = 1;
	pthread_t th[PTX_MAX_THREADS];
	uint32_t started = 0;
	while (started + 1 < nw && !pthread_create(&th[started], NULL, run_blocks, &g))
		started++;
	run_blocks(&g);
	for (uint32_t i = 0; i < started; i++)
		pthread_join(th[i], NULL);
	l->insns = atomic_load(&g.insns);
	free(none);
	free(tid);
	return (CUresult)atomic_load(&g.err);
}
