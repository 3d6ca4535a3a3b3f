/* SPDX-License-Identifier: Apache-2.0 */
/* ptx.h - the simulated driver's PTX interpreter: PTX text decoded once per
 * module into an instruction array per kernel (ptx_parse.c), executed warp by
 * warp over the launch's real arguments and the context's real memory
 * (ptx_exec.c).
 *
 * Addresses: global and const space are device addresses; shared, local and
 * param space are offsets in the block's shared memory, the thread's local
 * memory and the launch's parameter buffer. A generic address of those three
 * is the offset plus a window base (cvta adds it, cvta.to takes it off), far
 * above any device allocation.
 */
#ifndef XGPU_SIMDRV_PTX_H
#define XGPU_SIMDRV_PTX_H

#include <cuda.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PTX_WIN_SHARED 0xf000000000000000ull
#define PTX_WIN_LOCAL 0xf100000000000000ull
#define PTX_WIN_PARAM 0xf200000000000000ull
#define PTX_WIN_GRID 0xf300000000000000ull /* the grid-sync workspace (%envreg1:%envreg2) */
#define PTX_WIN_HEAP 0xf400000000000000ull /* the context's device malloc heap */
#define PTX_WIN_SIZE 0x0100000000000000ull
#define PTX_GRID_WS 64u /* bytes of it */

/* Bounds on what one module may ask for. */
#define PTX_MAX_TEXT ((size_t)64 << 20)
#define PTX_MAX_INSNS (1u << 22)    /* per kernel */
#define PTX_MAX_REGS 8192u          /* register slots per thread */
#define PTX_MAX_VREGS (1u << 18)    /* registers declared, before compaction */
#define PTX_MAX_KERNELS 4096u       /* per module */
#define PTX_MAX_LOCAL (64u << 10)   /* local bytes per thread */
#define PTX_MAX_SHARED (256u << 10) /* static shared bytes per block */
/* A grid that syncs has every block resident at once: at most this many,
 * holding at most this much memory. */
#define PTX_MAX_COOP_BLOCKS 4096u
#define PTX_MAX_COOP_BYTES ((size_t)1 << 30)

/* Operand types. */
enum ptx_kind { PK_B, PK_U, PK_S, PK_F, PK_P };
enum ptx_type {
	PT_NONE,
	PT_B8,
	PT_B16,
	PT_B32,
	PT_B64,
	PT_B128,
	PT_U8,
	PT_U16,
	PT_U32,
	PT_U64,
	PT_S8,
	PT_S16,
	PT_S32,
	PT_S64,
	PT_F16,
	PT_F16X2,
	PT_BF16,
	PT_BF16X2,
	PT_F32,
	PT_F64,
	PT_PRED,
	PT_NTYPES
};

enum ptx_space { PS_GENERIC, PS_GLOBAL, PS_SHARED, PS_LOCAL, PS_PARAM, PS_CONST };

enum ptx_opk {
	PO_NONE,
	PO_REG,   /* r */
	PO_IMM,   /* imm: raw bits in the instruction's type */
	PO_SREG,  /* r: special register id */
	PO_ADDR,  /* [r + imm], r = PTX_NOREG for an absolute one */
	PO_VEC,   /* v[0..n): registers, PTX_NOREG for a sink */
	PO_LABEL, /* imm: instruction index */
	PO_XVEC,  /* over 4 registers (wmma fragments): kernel's xregs[imm..imm+n) */
};
#define PTX_NOREG 0xffffffffu

enum ptx_sreg {
	SR_TID_X,
	SR_TID_Y,
	SR_TID_Z,
	SR_NTID_X,
	SR_NTID_Y,
	SR_NTID_Z,
	SR_CTAID_X,
	SR_CTAID_Y,
	SR_CTAID_Z,
	SR_NCTAID_X,
	SR_NCTAID_Y,
	SR_NCTAID_Z,
	SR_LANEID,
	SR_WARPID,
	SR_NWARPID,
	SR_SMID,
	SR_NSMID,
	SR_GRIDID,
	SR_LANEMASK_EQ,
	SR_LANEMASK_LT,
	SR_LANEMASK_LE,
	SR_LANEMASK_GT,
	SR_LANEMASK_GE,
	SR_CLOCK,
	SR_CLOCK64,
	SR_GLOBALTIMER,
	SR_DYN_SMEM,
	SR_TOTAL_SMEM,
	SR_RESERVED_SMEM, /* %reserved_smem_offset_1: cooperative groups' scratch */
	SR_ENVREG1,       /* the grid-sync workspace's address, high half */
	SR_ENVREG2,       /* low half */
};

/* Shared memory the driver reserves per block after the dynamic area (as
 * sm_90's 1 KiB), which cooperative groups address through
 * %reserved_smem_offset_1. */
#define PTX_RESERVED_SMEM 1024u

struct ptx_opnd {
	uint8_t k;   /* enum ptx_opk */
	uint8_t neg; /* !%p */
	uint8_t n;   /* PO_VEC: elements */
	uint8_t pad;
	uint32_t r;
	uint64_t imm;
	uint32_t v[4];
};

enum ptx_op {
	OP_NOP,
	OP_LD,
	OP_ST,
	OP_MOV,
	OP_ADD,
	OP_SUB,
	OP_MUL,
	OP_MAD,
	OP_FMA,
	OP_DIV,
	OP_REM,
	OP_MIN,
	OP_MAX,
	OP_NEG,
	OP_ABS,
	OP_AND,
	OP_OR,
	OP_XOR,
	OP_NOT,
	OP_CNOT,
	OP_SHL,
	OP_SHR,
	OP_SETP,
	OP_SELP,
	OP_BRA,
	OP_CVT,
	OP_CVTA,
	OP_BAR,
	OP_ATOM,
	OP_RED,
	OP_SQRT,
	OP_RSQRT,
	OP_RCP,
	OP_EX2,
	OP_LG2,
	OP_SIN,
	OP_COS,
	OP_TANH,
	OP_RET,
	OP_EXIT,
	OP_SHFL,
	OP_VOTE,
	OP_ACTIVEMASK,
	OP_POPC,
	OP_CLZ,
	OP_BREV,
	OP_BFE,
	OP_BFI,
	OP_LOP3,
	OP_SHF,
	OP_PRMT,
	OP_COPYSIGN,
	OP_TESTP,
	OP_SET,
	OP_MUL24,
	OP_MAD24,
	OP_SAD,
	OP_FNS,
	OP_TRAP,
	OP_BFIND,
	OP_CALL, /* o[0].imm: index in the kernel's calls */
	OP_BMSK, /* mod: 1 = .clamp */
	/* From here on ptx_ext.c's (check_insn hands them to ptx_ext_check):
	 * warp collectives, textures and surfaces, async copies and mbarriers;
	 * their sub-operation is in mod. */
	OP_REDUX,
	OP_MATCH,
	OP_TEX,
	OP_TLD4,
	OP_SULD,
	OP_SUST,
	OP_TXQ,
	OP_SUQ,
	OP_CPASYNC,
	OP_MBAR,
	OP_WMMA, /* ptx_mma.c */
	OP_VABSDIFF4,
};

/* Modifiers (struct ptx_insn.mod). */
enum { M_LO = 1, M_HI, M_WIDE };                                     /* mul, mad */
enum { R_NONE, R_RN, R_RZ, R_RM, R_RP, R_RNI, R_RZI, R_RMI, R_RPI }; /* rnd */
enum {
	C_EQ,
	C_NE,
	C_LT,
	C_LE,
	C_GT,
	C_GE,
	C_LO,
	C_LS,
	C_HI,
	C_HS,
	C_EQU,
	C_NEU,
	C_LTU,
	C_LEU,
	C_GTU,
	C_GEU,
	C_NUM,
	C_NAN
};                                   /* setp */
enum { B_NONE, B_AND, B_OR, B_XOR }; /* setp bool op */
enum { A_ADD, A_MIN, A_MAX, A_EXCH, A_CAS, A_AND, A_OR, A_XOR, A_INC, A_DEC };
enum { SH_UP, SH_DOWN, SH_BFLY, SH_IDX };
enum { V_ALL, V_ANY, V_UNI, V_BALLOT };

struct ptx_insn {
	uint8_t op;    /* enum ptx_op */
	uint8_t type;  /* enum ptx_type: the instruction's (destination) type */
	uint8_t type2; /* cvt's source type, setp/set's compare type */
	uint8_t space; /* enum ptx_space */
	uint8_t mod;   /* M_*, A_*, SH_*, V_*, C_* (setp) */
	uint8_t rnd;   /* R_* */
	uint8_t vec;   /* ld/st: 1, 2, 4 */
	uint8_t bop;   /* setp: B_* ; shf: 1 = left; bar: 1 = arrive only */
	uint8_t sat;   /* .sat */
	uint8_t nops;
	uint8_t to;     /* cvta.to */
	uint8_t gneg;   /* guard negated */
	uint8_t pipe;   /* o[5] holds a second destination (d|p) */
	uint32_t guard; /* predicate register, PTX_NOREG if none */
	struct ptx_opnd o[6];
};

/* A call's parameter or return value: bytes in the thread's local memory
 * (the PTX ABI's .param space of a call is kept there). */
struct ptx_pslot {
	uint32_t off, size;
};

enum ptx_callee { PC_FUNC, PC_VPRINTF, PC_ASSERTFAIL, PC_MALLOC, PC_FREE, PC_SETCOND };
#define PTX_MAX_CALL_DEPTH 256u /* frames per warp: deeper faults */
#define PTX_MAX_CALL_ARGS 64u
#define PTX_PRINTF_FIFO (1u << 20) /* printf bytes per launch kept, as cudaLimitPrintfFifoSize */

struct ptx_callsite {
	char *name;   /* the callee */
	uint8_t kind; /* enum ptx_callee */
	uint32_t nrets, nargs;
	struct ptx_pslot *caller; /* rets then args, in the caller's frame */
	/* Linked (PC_FUNC): the callee's body in this kernel's code. */
	uint32_t entry;
	uint32_t regbase, nregs;       /* its register slots */
	uint32_t localbase, localsize; /* its local bytes */
	struct ptx_pslot *callee;      /* its rets then args */
};

struct ptx_kernel {
	char *name;
	struct ptx_insn *code;
	uint32_t ninsns;
	uint32_t nregs;         /* register slots */
	uint32_t shared_static; /* bytes of .shared declared, dynamic goes after */
	uint32_t local_bytes;   /* per thread */
	uint32_t param_bytes;   /* as declared */
	uint32_t *xregs;        /* PO_XVEC operands' registers */
	uint32_t nxregs;
	char unsupported[96]; /* the first construct it cannot run, or "" */
	/* Its instructions' fast forms (ptx_exec.c), made at its first launch
	 * and kept: a cache, freed with the module. */
	_Atomic(uint8_t *) fast;
	bool grid_sync; /* reads the grid-sync workspace: its blocks run interleaved */
	bool heap;      /* calls malloc or free */
	struct ptx_callsite *calls;
	uint32_t ncalls;
	/* A .func's own parameters (in its local bytes): rets then args. */
	struct ptx_pslot *sig;
	uint32_t nsigrets, nsigargs;
};

struct ptx_module {
	struct ptx_kernel *kernels;
	uint32_t nkernels;
	struct ptx_kernel *funcs; /* .func bodies, linked into the kernels calling them */
	uint32_t nfuncs;
};

/* Resolves a module-scope .global / .const variable to its device address. */
typedef bool (*ptx_resolve_fn)(void *arg, const char *name, uint64_t *addr);

/* Decodes PTX text (len bytes, need not be NUL-terminated). Returns 0, or -1
 * with a reason in err for text it cannot read at all; a kernel using
 * something the interpreter lacks is decoded with ->unsupported set. */
int ptx_parse(const char *text, size_t len, ptx_resolve_fn resolve, void *arg, struct ptx_module **out,
	      char *err, size_t errlen) __attribute__((visibility("hidden")));
const struct ptx_kernel *ptx_find(const struct ptx_module *m, const char *name)
    __attribute__((visibility("hidden")));
void ptx_free(struct ptx_module *m) __attribute__((visibility("hidden")));

/* A texture or surface object as the interpreter samples it. */
struct ptx_tex {
	uint64_t base;                 /* element (0, 0, 0) */
	uint64_t pitch, slice;         /* bytes between rows, slices (layers, cube faces) */
	uint32_t width, height, depth; /* elements; height, depth >= 1 */
	uint32_t format;               /* CUarray_format */
	uint32_t channels, element_bytes;
	uint32_t address_mode[3]; /* CUaddress_mode */
	bool linear_filter, normalized, read_int, layered, cubemap;
	float border[4];
};

/* One device allocation a kernel may reach. */
struct ptx_region {
	uint64_t base, size;
	uint8_t *host;
};

/* A context's device malloc heap (ptx_call.c): its bytes at PTX_WIN_HEAP,
 * the allocator's books on the host, where the guest cannot reach them. */
struct ptx_heap;
struct ptx_heap *ptx_heap_new(size_t size) __attribute__((visibility("hidden")));
void ptx_heap_free(struct ptx_heap *h) __attribute__((visibility("hidden")));

struct ptx_launch {
	uint32_t grid[3], block[3];
	uint32_t shared_dyn;
	const uint8_t *params;
	uint32_t param_bytes;
	const struct ptx_region *mem; /* sorted by base, disjoint */
	size_t nmem;
	/* Polled now and then: nonzero ends the kernel with that error. */
	CUresult (*cancelled)(void *arg);
	void *arg;
	/* Worker threads that run independent blocks at once: 0 takes
	 * ptx_threads() (XGPU_SIM_PTX_THREADS, else the CPUs this process may
	 * use, at most PTX_MAX_THREADS). cancelled may be called from any. */
	uint32_t threads;
	/* The general path only: no decode-time fast forms (tests compare the
	 * two, the bench measures what they gain). */
	bool slow;
	/* The texture (surface: 1) object handle h names, or false when it is
	 * none of that kind in the launching context; NULL: none exist. */
	bool (*object)(void *arg, uint64_t h, int surface, struct ptx_tex *out);
	struct ptx_heap *heap; /* for malloc and free; NULL: malloc returns NULL */
	/* cudaGraphSetConditional(handle, value) from the kernel: the graph
	 * that launched it takes the value. NULL (not a graph's kernel, or
	 * its graph has no handles) and nonzero (a handle not the graph's)
	 * fault the kernel (CUDA_ERROR_LAUNCH_FAILED, naming the call): a
	 * program error, which fails the context as a GPU's fault does. */
	int (*set_conditional)(void *cond_arg, uint64_t handle, uint32_t value);
	void *cond_arg;
	uint64_t insns;  /* out: thread-instructions executed */
	char fault[160]; /* out: what faulted */
};

#define PTX_MAX_THREADS 16u

/* The worker threads a launch gets by default (see ptx_launch.threads). */
uint32_t ptx_threads(void) __attribute__((visibility("hidden")));

/* Runs kernel k to its end; CUDA_SUCCESS, or the fault it raised. */
CUresult ptx_run(const struct ptx_kernel *k, struct ptx_launch *l) __attribute__((visibility("hidden")));

#endif
