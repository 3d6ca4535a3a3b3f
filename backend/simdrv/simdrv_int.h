/* SPDX-License-Identifier: Apache-2.0 */
/* simdrv_int.h - internal interfaces of xgpu's simulated CUDA driver
 * (libxgpu-simdrv.so). Nothing here is exported; the library's only public
 * face is the cu* entry points of backend/driver.h, under cuda.h's names.
 *
 * Object model, shared by every file:
 * - Handles (CUcontext, CUstream, CUevent, CUmodule, CUfunction) point at our
 *   own structs, and every handle a caller passes is looked up in a registry
 *   (handles.c) before it is touched, so a stale or forged handle gets
 *   CUDA_ERROR_INVALID_HANDLE / INVALID_CONTEXT instead of a crash.
 * - Objects are reference counted: the registry holds one reference, and each
 *   API call or queued operation that uses an object holds another, so a
 *   destroy racing with a use never frees memory under it.
 * - Each device has one worker thread running a FIFO of operations
 *   (exec.c). Every operation gets a device-wide sequence number; "done"
 *   means the worker's done_seq has reached it, which gives stream order,
 *   event completion and context synchronisation from one counter.
 *
 * Lock order: ctx->lock, then the pinned-host table lock (memory.c), then
 * dev->lock, then the registry lock. The worker holds no lock while it runs
 * an operation; it sleeps for the modeled time in a timed wait on
 * dev->wake_cv (which releases dev->lock), so that whatever ends that time
 * early (the context failing or being destroyed, the driver stopping) can
 * wake it.
 */
#ifndef XGPU_SIMDRV_INT_H
#define XGPU_SIMDRV_INT_H

#include <cuda.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fatbin.h"
#include "ptx.h"
#include "simkernel.h"

#define SIM_HIDDEN __attribute__((visibility("hidden")))

void sim_log(const char *fmt, ...) __attribute__((format(printf, 1, 2))) SIM_HIDDEN;
/* Whether r is a CUresult cuda.h defines. */
bool sim_error_known(CUresult r) SIM_HIDDEN;

/* ---- intrusive lists ----------------------------------------------------- */
struct sim_link {
	struct sim_link *prev, *next;
};
static inline void sim_list_init(struct sim_link *head)
{
	head->prev = head->next = head;
}
static inline void sim_list_add(struct sim_link *head, struct sim_link *l)
{
	l->next = head;
	l->prev = head->prev;
	head->prev->next = l;
	head->prev = l;
}
static inline void sim_list_del(struct sim_link *l)
{
	l->prev->next = l->next;
	l->next->prev = l->prev;
	l->prev = l->next = l;
}
static inline bool sim_list_empty(const struct sim_link *head)
{
	return head->next == head;
}
#define sim_container_of(p, type, member) ((type *)((char *)(p)-offsetof(type, member)))

/* ---- handles (handles.c) ------------------------------------------------- */
enum sim_kind { SIM_CTX = 1, SIM_STREAM, SIM_EVENT, SIM_MODULE, SIM_FUNC, SIM_GRAPH, SIM_GRAPH_EXEC };

struct sim_obj {
	enum sim_kind kind;
	atomic_uint refs;
	uint64_t id; /* unique for the process's life, unlike the address */
	void (*release)(struct sim_obj *o);
};

/* Sets up o with one reference (the registry's) and registers it. Returns 0,
 * or -1 when out of memory (o is then not registered, refs is 1). */
int sim_obj_register(struct sim_obj *o, enum sim_kind kind, void (*release)(struct sim_obj *)) SIM_HIDDEN;
/* The live object of that kind at handle with a new reference, or NULL. */
void *sim_obj_get(const void *handle, enum sim_kind kind) SIM_HIDDEN;
void sim_obj_ref(struct sim_obj *o) SIM_HIDDEN;
void sim_obj_put(struct sim_obj *o) SIM_HIDDEN;
/* Removes o from the registry. True for exactly one caller, which then owns
 * the registry's reference and must put it. */
bool sim_obj_unregister(struct sim_obj *o) SIM_HIDDEN;
void sim_registry_fini(void) SIM_HIDDEN;

/* ---- devices -------------------------------------------------------------- */
struct sim_devprops {
	char name[64];
	int cc_major, cc_minor;
	int sms;
	int threads_per_sm;
	int clock_khz;
	int mem_clock_khz;
	int bus_width;
	int l2_bytes;
	uint64_t mem_bytes;
	uint64_t host_bw; /* bytes/s, host <-> device copies */
	uint64_t dev_bw;  /* bytes/s, device <-> device copies and memsets */
};

/* Shared-memory and register figures of the modeled (Hopper) SM. */
#define SIM_SHARED_PER_BLOCK (48 * 1024)
#define SIM_SHARED_PER_BLOCK_OPTIN (227 * 1024)
#define SIM_SHARED_PER_SM (228 * 1024)
#define SIM_SHARED_RESERVED 1024
#define SIM_REGS_PER_SM 65536
#define SIM_MAX_BLOCKS_PER_SM 32
#define SIM_MAX_THREADS_PER_BLOCK 1024

struct sim_op;

/* A CUDA array of the simulated driver (arrays.c): its elements packed in
 * the allocation at base. */
struct sim_array_info {
	CUdeviceptr base;
	uint64_t width_bytes, height, depth; /* height, depth >= 1 */
	CUDA_ARRAY3D_DESCRIPTOR desc;
};
bool sim_array_find(CUarray h, struct sim_array_info *out) SIM_HIDDEN;
/* Forgets every array (the driver is shutting down; their memory went with
 * their contexts). */
void sim_arrays_fini(void) SIM_HIDDEN;
/* Forgets the arrays and objects of a context being destroyed (their memory
 * goes with it), so that no id outlives what it names. */
void sim_arrays_release_ctx(const struct CUctx_st *ctx) SIM_HIDDEN;
struct xgpu_simk_texture;
/* The texture (surface: 1) object id of context ctx, for a kernel. */
bool sim_object_find(const struct CUctx_st *ctx, uint64_t id, int surface,
		     struct xgpu_simk_texture *out) SIM_HIDDEN;
/* The same object as the PTX interpreter samples it (ptx.h). */
struct ptx_tex;
bool sim_object_find_ptx(const struct CUctx_st *ctx, uint64_t id, int surface,
			 struct ptx_tex *out) SIM_HIDDEN;

struct sim_device {
	int ordinal;
	struct sim_devprops p;
	CUuuid uuid;
	atomic_uint_least64_t mem_used; /* bytes of device memory handed out */

	pthread_mutex_t lock; /* everything below */
	pthread_cond_t work_cv;
	pthread_cond_t done_cv;
	pthread_cond_t wake_cv; /* CLOCK_MONOTONIC: ends a modeled sleep early */
	struct sim_link runq;   /* contexts with queued operations, in turn order */
	uint64_t submit_seq;    /* last sequence number handed out */
	/* Every operation at or below this sequence number is complete (those
	 * above may be too: contexts' work interleaves). */
	uint64_t done_seq;
	bool stop;
	bool inited;  /* sim_worker_init ran */
	bool started; /* the worker thread runs (from the first context on) */
	pthread_t thread;
};

struct sim_global {
	atomic_bool initialized;
	int ndev;
	struct sim_device *devs;
	double speed;         /* modeled times are divided by this */
	uint64_t watchdog_ns; /* longest an operation occupies a device; 0: none */
	uint64_t slice_ns;    /* a context's turn on a busy device; 0: whole operations */
	pthread_mutex_t lock;
	struct sim_link ctxs; /* live contexts, for shutdown and poisoning */
	/* The CUresult of the first kernel fault (a launch-failure-class error)
	 * of any context, 0 while none: as on NVIDIA's driver, a fault is the
	 * whole process's. Every context then fails with it, and so does every
	 * context creation, for the rest of the process's life. */
	atomic_int poisoned;
};
extern struct sim_global sim SIM_HIDDEN;

/* The device with that ordinal, or NULL (also before cuInit). */
struct sim_device *sim_device(CUdevice dev) SIM_HIDDEN;
/* Parses XGPU_SIM_* into devs; returns the CUresult cuInit gives. */
CUresult sim_config_devices(struct sim_device **devs, int *ndev, double *speed, uint64_t *watchdog_ns,
			    uint64_t *slice_ns) SIM_HIDDEN;
int sim_dev_attribute(const struct sim_device *d, int attrib, int *value) SIM_HIDDEN;

/* ---- contexts (simdrv.c) --------------------------------------------------- */
enum { SIM_NLIMITS = CU_LIMIT_MAX };

struct sim_alloc {
	CUdeviceptr base;
	size_t size;  /* as asked for */
	size_t acct;  /* as charged to the device */
	void *host;   /* backing memory */
	uint8_t kind; /* SIM_ALLOC_* */
	bool dead;
	bool mmapped;
};
/* SIM_ALLOC_VMM: a cuMemMap mapping, whose host memory is its physical
 * allocation's (vmm.c), not the entry's to free. */
enum { SIM_ALLOC_USER = 1, SIM_ALLOC_GLOBAL = 2, SIM_ALLOC_VMM = 3 };

/* A context's allocations, sorted by base: addresses only grow (memory.c),
 * and a context hands them out under its lock, so insertion is an append.
 * Frees mark entries dead; the array is compacted when half are dead. */
struct sim_alloc_table {
	struct sim_alloc *v;
	size_t n, cap, ndead;
};

struct CUctx_st {
	struct sim_obj obj;
	struct sim_device *dev;
	unsigned flags;
	int sm_count;      /* SMs this context's kernels run on (execution affinity) */
	atomic_int sticky; /* CUresult of a failed kernel; 0 while healthy */
	atomic_bool dying; /* being destroyed: work it starts from now takes no modeled time */

	pthread_mutex_t lock; /* everything below, except the seq fields */
	bool destroyed;
	struct sim_alloc_table allocs;
	struct sim_link streams, events, modules;
	size_t limits[SIM_NLIMITS];
	struct ptx_heap *heap; /* device malloc's, made when a kernel first needs it (lock) */
	struct sim_link glink; /* in sim.ctxs, under sim.lock */

	uint64_t last_seq;      /* dev->lock: last op this context queued */
	uint64_t null_last_seq; /* dev->lock: last op on its NULL stream */
	/* dev->lock: its queued operations (in order; the head may be running),
	 * its place in dev->runq while it has any, and the last one completed. */
	struct sim_op *q_head, *q_tail;
	struct sim_link run_link;
	uint64_t done_seq;
};

/* The calling thread's current context, with a reference. Errors:
 * NOT_INITIALIZED, INVALID_CONTEXT (none current), CONTEXT_IS_DESTROYED, and
 * unless allow_sticky the context's sticky error (or the process's). */
CUresult sim_ctx_enter(struct CUctx_st **out, bool allow_sticky) SIM_HIDDEN;
static inline void sim_ctx_put(struct CUctx_st *ctx)
{
	sim_obj_put(&ctx->obj);
}
/* The sequence number every operation ctx queued so far is below or at. */
uint64_t sim_ctx_fence(struct CUctx_st *ctx) SIM_HIDDEN;
/* Marks ctx failed with r unless it already failed; r, a kernel's fault,
 * poisons the process (sim.poisoned): the notice fails every other context
 * with it too. */
void sim_ctx_fail(struct CUctx_st *ctx, CUresult r) SIM_HIDDEN;
/* sim_ctx_fail in two steps, for a caller holding dev->lock: the mark
 * (true if this made it fail), then, without the lock, the notice. */
bool sim_ctx_mark_failed(struct CUctx_st *ctx, CUresult r) SIM_HIDDEN;
void sim_ctx_failed_notify(struct CUctx_st *ctx, CUresult r) SIM_HIDDEN;
/* Wakes dev's worker from a modeled sleep so that it sees a change to the
 * sleeping operation's context (failed) or to dev->stop. */
void sim_dev_kick(struct sim_device *dev) SIM_HIDDEN;

/* ---- memory (memory.c) ----------------------------------------------------- */
/* Allocates size bytes of device memory for ctx (ctx->lock held). */
/* The same, at an address in the range managed memory comes from. */
CUresult sim_mem_alloc_managed_locked(struct CUctx_st *ctx, size_t size, int kind, CUdeviceptr *dptr,
				      void **host) SIM_HIDDEN;
CUresult sim_mem_alloc_locked(struct CUctx_st *ctx, size_t size, int kind, CUdeviceptr *dptr,
			      void **host) SIM_HIDDEN;
/* Host address of [addr, addr + bytes) if it lies inside one live allocation
 * of ctx, else NULL (ctx->lock held). bytes 0 asks for addr itself. */
void *sim_mem_translate_locked(struct CUctx_st *ctx, CUdeviceptr addr, size_t bytes) SIM_HIDDEN;
/* Takes the allocation at base (of that kind) out of ctx's table, so that
 * nothing new can reach it; the caller releases it once earlier work is done.
 * Returns false if there is no such allocation (ctx->lock held). */
bool sim_mem_remove_locked(struct CUctx_st *ctx, CUdeviceptr base, int kind,
			   struct sim_alloc *out) SIM_HIDDEN;
void sim_mem_release(struct sim_device *dev, struct sim_alloc *a) SIM_HIDDEN;
/* Enters [base, base + size) backed by host as an allocation of kind that
 * charges nothing (ctx->lock held); the caller checked it overlaps none. */
CUresult sim_mem_insert_locked(struct CUctx_st *ctx, CUdeviceptr base, size_t size, void *host,
			       int kind) SIM_HIDDEN;
/* Releases every allocation of ctx (its queued work is done). */
void sim_mem_release_all(struct CUctx_st *ctx) SIM_HIDDEN;
/* Unpins the host memory ctx allocated or registered (at its destroy). */
void sim_pinned_release_ctx(struct CUctx_st *ctx) SIM_HIDDEN;
void sim_pinned_fini(void) SIM_HIDDEN;

/* ---- execution (exec.c) ----------------------------------------------------- */
struct CUstream_st {
	struct sim_obj obj;
	struct CUctx_st *ctx; /* referenced */
	unsigned flags;
	int priority;
	uint64_t last_seq;    /* dev->lock */
	struct sim_link link; /* in ctx->streams, under ctx->lock */
};

struct CUevent_st {
	struct sim_obj obj;
	struct CUctx_st *ctx; /* referenced */
	unsigned flags;
	uint64_t seq;     /* dev->lock: op of the latest record, 0 if never */
	uint64_t time_ns; /* dev->lock: device clock when that record ran */
	struct sim_link link;
};

struct CUfunc_st;

enum sim_op_kind { SIM_OP_KERNEL, SIM_OP_COPY, SIM_OP_MEMSET, SIM_OP_EVENT, SIM_OP_HOSTFN, SIM_OP_WAIT };
enum sim_copy_dir { SIM_H2D, SIM_D2H, SIM_D2D };

struct sim_op {
	struct sim_op *next;
	enum sim_op_kind kind;
	struct CUctx_st *ctx; /* referenced */
	uint64_t seq;
	/* The worker's, once the op has started: its modeled device time left,
	 * the device clock at its start, and whether the watchdog cut it. */
	bool started;
	bool too_long;
	uint64_t remaining_ns;
	uint64_t start_ns;
	union {
		struct {
			void *dst;
			const void *src;
			size_t bytes;
			void *snapshot; /* owned copy of a pageable source */
			enum sim_copy_dir dir;
			/* Pitched copies: rows of bytes, pitches apart (0: one row). */
			size_t rows, dst_pitch, src_pitch;
		} copy;
		struct {
			void *dst;
			unsigned char value;
			size_t bytes;
			size_t rows, pitch; /* pitched memset (0: one row) */
		} memset;
		struct {
			struct CUevent_st *ev; /* referenced */
		} event;
		struct {
			CUhostFn fn;
			void *arg;
		} hostfn;
		struct {
			struct CUctx_st *ctx; /* referenced: an event's context */
			uint64_t seq;
		} wait;
		struct {
			struct CUfunc_st *func; /* referenced */
			uint32_t grid[3], block[3];
			uint32_t shared;
			uint8_t *params;
			uint32_t param_bytes;
			struct sim_cond_state *cond; /* referenced, or NULL */
		} kernel;
	} u;
};

/* The conditional handles an instantiated graph's kernels may set
 * (graph.c): shared by the executable and each kernel it launched until that
 * kernel is done. */
struct sim_cond {
	uint64_t handle;
	uint32_t default_value, flags;
	_Atomic uint32_t value;
};
struct sim_cond_state {
	atomic_uint refs;
	size_t n;
	struct sim_cond v[];
};
void sim_cond_put(struct sim_cond_state *st) SIM_HIDDEN;
/* cudaGraphSetConditional from a kernel of st's graph: 0, or -1 when handle
 * is none of its graph's. */
int sim_cond_set(void *st, uint64_t handle, uint32_t value) SIM_HIDDEN;
/* cuLaunchKernel for a graph's kernel node whose kernel may set st's
 * conditions (NULL: none). */
CUresult sim_launch_kernel(CUfunction f, const unsigned grid[3], const unsigned block[3], unsigned shared,
			   CUstream hStream, void **extra, struct sim_cond_state *st) SIM_HIDDEN;

/* The stream handle h of ctx: *out is NULL for the NULL stream (also
 * CU_STREAM_LEGACY / CU_STREAM_PER_THREAD), else a referenced stream of ctx.
 * INVALID_HANDLE for anything else. */
CUresult sim_stream_get(CUstream h, struct CUctx_st *ctx, struct CUstream_st **out) SIM_HIDDEN;
void sim_stream_put(struct CUstream_st *s) SIM_HIDDEN;
struct sim_op *sim_op_new(struct CUctx_st *ctx, enum sim_op_kind kind) SIM_HIDDEN;
void sim_op_free(struct sim_op *op) SIM_HIDDEN;
/* Queues op as the next operation of stream s of op->ctx (NULL: its NULL
 * stream) and returns its sequence number. The caller holds ctx->lock and
 * has checked that the context is not destroyed. */
uint64_t sim_submit(struct sim_op *op, struct CUstream_st *s) SIM_HIDDEN;
/* Queues op on s unless its context is being destroyed
 * (CUDA_ERROR_CONTEXT_IS_DESTROYED); either way op is no longer the
 * caller's. Takes ctx->lock itself. */
CUresult sim_submit_live(struct sim_op *op, struct CUstream_st *s) SIM_HIDDEN;
/* Whether ctx's operation seq (and so all of ctx's before it) is complete;
 * waits for that. */
bool sim_ctx_seq_done(struct CUctx_st *ctx, uint64_t seq) SIM_HIDDEN;
void sim_wait_ctx_seq(struct CUctx_st *ctx, uint64_t seq) SIM_HIDDEN;
/* Waits until every operation of dev at or below seq, of any context, is
 * complete. */
void sim_wait_dev_seq(struct sim_device *dev, uint64_t seq) SIM_HIDDEN;
/* The device's locks and queues (cuInit); its worker thread, started at
 * its first context (sim_worker_ensure: 0, or -1 if it cannot start); both
 * undone by sim_worker_stop. */
int sim_worker_init(struct sim_device *dev) SIM_HIDDEN;
int sim_worker_ensure(struct sim_device *dev) SIM_HIDDEN;
void sim_worker_stop(struct sim_device *dev) SIM_HIDDEN;
/* Modeled nanoseconds, after XGPU_SIM_SPEED. */
uint64_t sim_scale(uint64_t ns) SIM_HIDDEN;
/* Drops the streams and events of a destroyed context. */
void sim_exec_release_ctx(struct CUctx_st *ctx) SIM_HIDDEN;

/* ---- modules and kernels (module.c, cubin.c, plugins.c) --------------------- */
struct sim_global_var {
	char *name;
	CUdeviceptr addr;
	size_t size;
	bool owns; /* addr starts an allocation of its own (the module's
		    * __managed__ variables share one, the first owning it) */
};

struct CUmod_st {
	struct sim_obj obj;
	struct CUctx_st *ctx; /* referenced */
	struct xgpu_fatbin_info info;
	struct CUfunc_st **funcs; /* ctx->lock; NULL once unloaded */
	uint32_t nfuncs;
	struct sim_global_var *globals;
	uint32_t nglobals;
	uint32_t arch;
	bool unloaded; /* ctx->lock */
	struct sim_link link;
	struct ptx_module *ptx; /* its kernels decoded for the interpreter, or NULL */
};

struct CUfunc_st {
	struct sim_obj obj;
	struct CUmod_st *mod; /* referenced */
	const struct xgpu_kernel_info *ki;
	const struct xgpu_simk_kernel *impl; /* host implementation or NULL */
	const struct ptx_kernel *pk;         /* its PTX, when the interpreter can run it */
	struct xgpu_simk_param *layout;      /* ki's layout in the plugin ABI's form */
	uint32_t regs;
	uint32_t static_shared;
	uint32_t local_bytes;
	uint32_t const_bytes;
	uint32_t max_threads;
	/* Settable attributes (cuFuncSetAttribute), read at launch. */
	atomic_int max_dynamic_shared;
	atomic_int carveout;
	atomic_int cluster[3];
	atomic_int non_portable_cluster;
	atomic_int cluster_policy;
};

/* Runs a kernel op on the worker: computes with the host implementation if
 * there is one, and returns (in *cost_ns) its modeled device time. */
CUresult sim_kernel_run(struct sim_op *op, uint64_t *cost_ns) SIM_HIDDEN;
void sim_module_release_ctx(struct CUctx_st *ctx) SIM_HIDDEN;
void sim_module_fini(void) SIM_HIDDEN;

/* cubin.c: what the simulated driver reads from a module's ELF image. */
#define SIM_MAX_MODULE_VARS 65536u /* each one is an allocation */
struct sim_cubin_var {
	char *name;
	uint64_t size;
	const uint8_t *init; /* initial bytes, or NULL for zeroes */
	uint64_t init_len;   /* bytes at init (at most size); the rest are zeroes */
	uint8_t *owned_init; /* init, when it is not inside the ELF image */
	bool managed;        /* __managed__: placed where a guest can map it */
};
struct sim_cubin_func {
	char *name;
	uint32_t regs;
	uint32_t static_shared;
	uint32_t local_bytes;
	uint32_t max_threads; /* from __launch_bounds__ / reqntid, 0 if none */
};
struct sim_cubin {
	uint8_t *owned; /* decompressed ELF the pointers above may point into */
	struct sim_cubin_var *vars;
	uint32_t nvars;
	struct sim_cubin_func *funcs;
	uint32_t nfuncs;
	uint32_t const_bytes; /* user __constant__ bank size */
	uint32_t arch;        /* SM version of the ELF read, e.g. 90; 0 if none */
	bool has_ptx;         /* the container carries PTX this device can JIT */
	bool has_elf;         /* it carries a cubin (of any architecture) */
	bool bad_ptx;         /* set when sim_cubin_from_fatbin failed on the PTX */
	char *ptx;            /* the PTX text the device would JIT (NUL-terminated), or NULL */
	size_t ptxlen;
};
/* Reads the ELF entry of fatbin container fb that best fits arch (exact,
 * else the newest older one). Without one, reads the device variables of
 * its PTX (ptxvars.c). Returns -1 with a reason in err for malformed input. */
int sim_cubin_from_fatbin(const uint8_t *fb, size_t len, uint32_t arch, struct sim_cubin *out, char *err,
			  size_t errlen) SIM_HIDDEN;
int sim_cubin_parse_elf(const uint8_t *elf, size_t len, struct sim_cubin *out, char *err,
			size_t errlen) SIM_HIDDEN;
const struct sim_cubin_func *sim_cubin_func(const struct sim_cubin *c, const char *name) SIM_HIDDEN;
void sim_cubin_free(struct sim_cubin *c) SIM_HIDDEN;
/* Adds the device variables declared in PTX text to out->vars. Returns -1
 * for text it refuses (initializers nested too deeply), else 0; other
 * declarations it cannot read are skipped. */
int sim_ptx_vars(const char *ptx, size_t len, struct sim_cubin *out) SIM_HIDDEN;

/* XGPU_SIM_PTX: interpret kernels without a host implementation from their
 * PTX (default), refuse modules with kernels it cannot run (strict), or
 * never interpret (off). */
enum sim_ptx_mode { SIM_PTX_ON, SIM_PTX_STRICT, SIM_PTX_OFF };
enum sim_ptx_mode sim_ptx_mode(void) SIM_HIDDEN;
/* Totals of the interpreter, for benchmarks and logs. */
extern atomic_uint_least64_t sim_ptx_insns, sim_ptx_ns;

void sim_plugins_load(void) SIM_HIDDEN;
const struct xgpu_simk_kernel *sim_plugin_find(const char *name) SIM_HIDDEN;
void sim_plugins_unload(void) SIM_HIDDEN;

#endif
