/* SPDX-License-Identifier: Apache-2.0 */
/* ptx_ext.h - the PTX interpreter's larger instruction families, kept out of
 * the core decoder and run loop: warp collectives (redux, match), half
 * precision arithmetic, textures and surfaces (tex, tld4, suld, sust, txq,
 * suq), async copies and mbarriers. The decoder calls the ptx_ext_* hooks
 * for these opcodes; the run loop gathers their operands and calls the pure
 * functions below, which never touch memory except through what they are
 * given. */
#ifndef XGPU_SIMDRV_PTX_EXT_H
#define XGPU_SIMDRV_PTX_EXT_H

#include "ptx.h"

#define PTX_EXT __attribute__((visibility("hidden")))

/* Geometries (tex/tld4/suld/sust: insn.mod). */
enum { G_NONE, G_1D, G_2D, G_3D, G_A1D, G_A2D, G_CUBE, G_ACUBE };
/* Surface out-of-range modes (suld/sust: insn.to). */
enum { SU_TRAP, SU_CLAMP, SU_ZERO };
/* txq/suq queries (insn.mod). */
enum {
	Q_WIDTH,
	Q_HEIGHT,
	Q_DEPTH,
	Q_CHANNEL_TYPE,
	Q_CHANNEL_ORDER,
	Q_NORMALIZED,
	Q_FILTER,
	Q_ADDR0,
	Q_ADDR1,
	Q_ADDR2,
	Q_ARRAY_SIZE,
	Q_MIPLEVELS
};
/* cp.async forms (insn.mod). */
enum { CA_COPY, CA_COMMIT, CA_WAIT, CA_MBAR_ARRIVE, CA_BULK };
/* mbarrier operations (insn.mod). */
enum {
	MB_INIT,
	MB_ARRIVE,
	MB_ARRIVE_DROP,
	MB_EXPECT_TX,
	MB_COMPLETE_TX,
	MB_TEST_WAIT,
	MB_TRY_WAIT,
	MB_PENDING,
	MB_INVAL
};

/* Decoder hooks: a modifier of one of these opcodes (true: taken), whether
 * the instruction may compute with type t, and its operand check (NULL: fine). */
bool ptx_ext_mod(struct ptx_insn *in, const char *m) PTX_EXT;
bool ptx_ext_type_ok(const struct ptx_insn *in, uint8_t t) PTX_EXT;
const char *ptx_ext_check(const struct ptx_insn *in) PTX_EXT;

/* redux.sync: lane L's result over the lanes of members[L] & mask. */
void ptx_redux(uint8_t mod, uint8_t type, uint32_t mask, const uint64_t v[32], const uint32_t members[32],
	       uint64_t out[32]) PTX_EXT;
/* match.sync.any (all = false) / .all; pred[L]: every member had lane L's value. */
void ptx_match(bool all, uint8_t type, uint32_t mask, const uint64_t v[32], const uint32_t members[32],
	       uint64_t out[32], bool pred[32]) PTX_EXT;

/* Half types (f16, f16x2, bf16, bf16x2): op (OP_ADD, OP_SUB, OP_MUL, OP_FMA,
 * OP_MAD, OP_MIN, OP_MAX, OP_NEG, OP_ABS) on a, b, c as register bits. */
bool ptx_is_half(uint8_t t) PTX_EXT;
double ptx_h2d(uint16_t h, bool bf) PTX_EXT;
uint16_t ptx_d2h(double v, bool bf) PTX_EXT; /* to nearest even */
/* cvt to tf32 (its bits in a .b32), rnd R_NONE for .rna. */
uint64_t ptx_tf32(uint64_t v, uint8_t rnd) PTX_EXT;
uint64_t ptx_half_op(uint8_t op, uint8_t t, uint8_t rnd, bool sat, uint64_t a, uint64_t b,
		     uint64_t c) PTX_EXT;

/* Reads size bytes of device memory at addr, or NULL when outside it. */
typedef const uint8_t *(*ptx_mem_fn)(void *arg, uint64_t addr, uint32_t size);

/* tex (comp < 0) or tld4 (comp = the channel gathered): four results of
 * type dt from coordinates c (type ct) in geometry g. Returns false when a
 * texel lies outside device memory. */
bool ptx_tex_fetch(const struct ptx_tex *t, uint8_t g, int comp, uint8_t dt, uint8_t ct, const uint64_t c[4],
		   ptx_mem_fn mem, void *arg, uint64_t out[4]) PTX_EXT;
/* The byte address suld.b/sust.b reach for coordinates c (x in bytes), or
 * 1 for out of range under .zero (nothing read, zeros), 0 under .trap. */
uint64_t ptx_surf_addr(const struct ptx_tex *t, uint8_t g, uint8_t mode, const uint64_t c[4],
		       uint32_t size) PTX_EXT;
uint64_t ptx_tex_query(const struct ptx_tex *t, uint8_t q) PTX_EXT;

/* vabsdiff4.add (at: the sources' type). */
uint64_t ptx_vabsdiff4(uint8_t at, bool sat, uint64_t a, uint64_t b, uint64_t c) PTX_EXT;

/* mbarrier state word (64 bits in shared memory) transitions. */
uint64_t ptx_mbar_init(uint64_t count) PTX_EXT;
/* Arrives count times after adding tx expected bytes; returns the new
 * word, *token the phase token arrive returns. drop: the arrivals also
 * leave the barrier's expected count. */
uint64_t ptx_mbar_arrive(uint64_t s, uint32_t count, int64_t tx, bool drop, uint64_t *token) PTX_EXT;
/* Whether the phase token (or parity) names a completed phase. */
bool ptx_mbar_done(uint64_t s, uint64_t token, bool parity) PTX_EXT;

/* wmma (ptx_mma.c). insn.mod: WM_LOAD_A.. WM_MMA; bop: the shape; to: bit 0
 * a column-major first layout, bit 1 the second's (mma's b); vec: 2 for tf32
 * elements. A fragment's elements are spread over the warp's lanes in a
 * layout of the interpreter's own (programs cannot see it): slot s of lane L
 * holds element (L * slots + s) mod elements of the matrix in row-major
 * order, so each lane has a fixed set and element-wise code works. */
enum { WM_LOAD_A, WM_LOAD_B, WM_LOAD_C, WM_STORE_D, WM_MMA };
enum { WS_NONE, WS_M16N16K16, WS_M32N8K16, WS_M8N32K16, WS_M16N16K8, WS_M8N8K4 };
struct ptx_frag {
	uint32_t rows, cols; /* the matrix */
	uint32_t esize;      /* bytes of an element in memory */
	uint32_t per;        /* elements per register */
	uint32_t nregs;      /* registers per lane */
	uint8_t etype;       /* PT_*, PT_F32 for tf32 */
};
/* The fragment frag (WM_LOAD_A.. WM_STORE_D; a, b, c/d) of shape with
 * elements etype; false for one it does not know. */
bool ptx_frag_of(uint8_t shape, uint8_t frag, uint8_t etype, struct ptx_frag *f) PTX_EXT;
/* Element e (of register value v, slot sub) as a double, and back. */
double ptx_frag_get(const struct ptx_frag *f, uint64_t v, uint32_t sub) PTX_EXT;
uint64_t ptx_frag_put(const struct ptx_frag *f, uint64_t v, uint32_t sub, double x) PTX_EXT;
/* mma's types: d, a (b the same), c. */
void ptx_mma_types(const struct ptx_insn *in, uint8_t *dt, uint8_t *at, uint8_t *ct) PTX_EXT;
const char *ptx_wmma_check(const struct ptx_insn *in) PTX_EXT;

#endif
