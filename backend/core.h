/* xgpud.h - the daemon's internal model: GPUs, domains, channels, and who
 * owns what.
 *
 * Threads: the main thread accepts channels (transport) and answers control
 * requests; each domain has one aVCPU poller thread that owns the domain's
 * channels, handle tables and device context and executes every call; each
 * gating GPU has a scheduler thread that grants the GPU slot. Counters read
 * by the control path are atomics; everything else is touched by the owning
 * poller only.
 */
#ifndef XGPU_XGPUD_H
#define XGPU_XGPUD_H

#include "exec/driver.h"
#include "fatbin.h"
#include "gpuspec.h"
#include "log.h"
#include "proto.h"
#include "scheduler.h"
#include "shm.h"
#include "taskq.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct xgpud;
struct xgpud_config;
struct xgpu_domain;
struct xgpu_channel;

/* ---- options ------------------------------------------------------------ */
struct xgpud_opts {
	const char *transport;  /* "local" (default) or "xen" */
	const char *executor;   /* "cuda", "sim", or NULL: cuda when usable, else sim */
	const char *policy;     /* scheduling policy name */
	const char *hyp_source; /* hypervisor schedule source spec, NULL: default */
	unsigned tick_ms;
	const char *socket_path; /* local transport */
	const char *config_path;
	const char *log_file;
	const char *sim_driver;  /* path of libxgpu-simdrv.so; default beside the binary */
	const char *cuda_driver; /* default libcuda.so.1 */
	bool foreground;
	int log_level;
	uint64_t mem_limit; /* per domain, bytes; 0 = the GPU's memory */
	uint64_t spin_ns;   /* pollers spin this long before sleeping */
	unsigned stall_timeout_s;
	unsigned max_channels_per_domain;
	unsigned max_domains_per_uid; /* for users other than root */
	unsigned max_domains;
	uint64_t pinned_limit; /* host segments per domain, bytes */
};

/* ---- GPUs ------------------------------------------------------------- */
struct xgpu_gpu {
	int index;
	CUdevice dev;
	char name[256];
	uint8_t uuid[16];
	uint64_t total_mem;
	int32_t attrs[XGPU_MAX_DEVICE_ATTRS];
	uint32_t nattrs;
	struct xgpu_sched *sched;
	char sched_label[16];
	_Atomic uint32_t ndomains;
};

/* ---- handles ---------------------------------------------------------- */
enum xgpu_obj_kind { OBJ_FREE = 0, OBJ_MODULE, OBJ_FUNC, OBJ_STREAM, OBJ_EVENT, OBJ_SEG };

struct xgpu_obj {
	uint32_t gen;
	uint8_t kind;
	struct xgpu_channel *owner;
	uint32_t next_free;
	union {
		struct {
			CUmodule mod;
			struct xgpu_fatbin_info info;
			uint64_t charge; /* its variables' device memory, in mem_bytes */
		} module;
		struct {
			CUfunction fn;
			xgpu_handle_t module;
			const struct xgpu_kernel_info *kinfo;
		} func;
		struct {
			CUstream s;
		} stream;
		struct {
			CUevent e;
		} event;
		struct {
			void *ptr;
			uint64_t size;
			bool registered; /* with the driver, for DMA */
		} seg;
	} u;
};

/* Per-domain table; handles are (generation << 32 | index), so a stale or
 * forged handle never names a live object and 0..2 are never handles. */
struct xgpu_objtab {
	struct xgpu_obj *v;
	uint32_t n, cap;
	uint32_t free_head; /* index + 1, 0 = none */
	uint32_t live[OBJ_SEG + 1];
};

xgpu_handle_t xgpu_obj_add(struct xgpu_objtab *t, enum xgpu_obj_kind kind, struct xgpu_channel *owner,
			   struct xgpu_obj **out);
/* The live object h of that kind owned by owner, or NULL. */
struct xgpu_obj *xgpu_obj_get(struct xgpu_objtab *t, xgpu_handle_t h, enum xgpu_obj_kind kind,
			      const struct xgpu_channel *owner);
void xgpu_obj_del(struct xgpu_objtab *t, xgpu_handle_t h);
void xgpu_objtab_free(struct xgpu_objtab *t);
/* Iterates live objects: returns the next index >= *i holding one, or -1. */
int64_t xgpu_obj_next(struct xgpu_objtab *t, uint32_t *i, struct xgpu_obj **o, xgpu_handle_t *h);

/* ---- device allocations --------------------------------------------------- */
struct xgpu_alloc {
	uint64_t base, size;
	struct xgpu_channel *owner;
	xgpu_handle_t module; /* a module global's module, 0 for cuMemAlloc memory */
};

struct xgpu_memmap {
	struct xgpu_alloc *v; /* sorted by base */
	uint32_t n, cap;
};

int xgpu_memmap_add(struct xgpu_memmap *m, uint64_t base, uint64_t size, struct xgpu_channel *owner,
		    xgpu_handle_t module);
/* Drops the module's globals from the map. */
void xgpu_memmap_drop_module(struct xgpu_memmap *m, xgpu_handle_t module);
/* The allocation owned by owner that contains all of [addr, addr + len), or
 * NULL (len 0 means just addr). */
const struct xgpu_alloc *xgpu_memmap_find(const struct xgpu_memmap *m, uint64_t addr, uint64_t len,
					  const struct xgpu_channel *owner);
/* Removes the allocation starting exactly at base owned by owner; returns its
 * size, or 0 if there is none. */
uint64_t xgpu_memmap_del(struct xgpu_memmap *m, uint64_t base, const struct xgpu_channel *owner);
void xgpu_memmap_free(struct xgpu_memmap *m);

/* ---- statistics --------------------------------------------------------- */
#define XGPU_LAT_BUCKETS 96
struct xgpu_dom_stats {
	_Atomic uint64_t calls, errors, h2d_bytes, d2h_bytes, mem_bytes;
	_Atomic uint64_t kernels, channels_total;
	_Atomic uint64_t queue_wait_ns, queue_waits; /* request taken off the ring -> run */
	_Atomic uint32_t channels;
	_Atomic uint64_t lat[XGPU_LAT_BUCKETS]; /* service time histogram, see stats.c */
};
void xgpu_stats_record_latency(struct xgpu_dom_stats *s, uint64_t ns);
/* For counters only the domain's poller writes (others only read them): a
 * relaxed load and store, no locked instruction on the call path. */
static inline void xgpu_stat_add(_Atomic uint64_t *counter, uint64_t v)
{
	atomic_store_explicit(counter, atomic_load_explicit(counter, memory_order_relaxed) + v,
			      memory_order_relaxed);
}
/* Percentile (0..100) of recorded latencies in microseconds; 0 if none. */
double xgpu_stats_latency_us(const struct xgpu_dom_stats *s, double pct);

/* ---- channels ---------------------------------------------------------- */
struct xgpu_channel;
struct xgpu_be_transport_ops {
	const char *name;
	void (*kick)(struct xgpu_channel *ch); /* signal the frontend; never blocks */
	/* The one fd that becomes readable when the guest kicks, sends an
	 * out-of-band message or goes away. */
	int (*wait_fd)(struct xgpu_channel *ch);
	/* wait_fd fired: consume kicks and out-of-band messages without ever
	 * blocking (whatever the guest did to shared descriptors); false once
	 * the guest's end is gone or it broke the transport's rules. */
	bool (*service)(struct xgpu_channel *ch);
	/* Maps the host segment the guest shared as token, exactly size bytes. */
	int (*import_segment)(struct xgpu_channel *ch, uint64_t token, uint64_t size, void **ptr, char *err,
			      size_t errlen);
	/* Forgets a shared segment that will not be imported (its request was
	 * refused), so its resources do not linger. */
	void (*drop_segment)(struct xgpu_channel *ch, uint64_t token);
	void (*release_segment)(struct xgpu_channel *ch, void *ptr, uint64_t size);
	void (*close)(struct xgpu_channel *ch);
};

struct xgpu_channel {
	struct xgpu_domain *dom;
	uint32_t id;
	uint32_t task;
	pid_t pid;
	uid_t uid;
	const struct xgpu_be_transport_ops *ops;
	void *tpriv;
	void *region;
	size_t region_size;
	struct xgpu_shm_view v;
	bool dead;
	const char *dead_reason;
	/* A request taken off the ring but not yet run (waiting for the slot). */
	bool have_pending;
	uint8_t pending[XGPU_SLOT_SIZE];
	uint64_t pending_since_ns;
	struct xgpu_task *task_entry; /* its task's share of the domain's slot (poller) */
	bool had_work;                /* as of the poller's last look (wfq) */
	_Atomic uint64_t calls;
	struct xgpu_channel *next;
};

/* ---- domains ------------------------------------------------------------ */
#define XGPU_STAGING_MAX 8

struct xgpu_busy_mark {
	CUevent start, end;
	struct xgpu_task *task; /* the task whose work it measures */
};

struct xgpu_domain {
	struct xgpud *d;
	char name[XGPU_DOMAIN_NAME_MAX];
	uint32_t domid;
	bool xen; /* a Xen guest: domid is its Xen domid */
	uid_t owner_uid;
	struct xgpu_gpu *gpu;
	uint64_t mem_limit;
	uint64_t allowed_gpus; /* bit i: may be bound to GPU i */

	pthread_t thread;
	bool thread_started; /* joinable: started and not joined yet */
	bool thread_running; /* serving channels (incoming_lock) */
	int epfd;
	int wake_fd; /* eventfd: new channel, slot granted, shutdown */
	pthread_mutex_t incoming_lock;
	struct xgpu_channel *incoming;
	struct xgpu_channel *channels; /* poller only */

	/* Device state: poller only. */
	CUcontext ctx;
	int sticky_error; /* cudaError_t that broke the context, 0 if fine */
	struct xgpu_objtab objs;
	struct xgpu_memmap mem;
	struct xgpu_staging {
		void *buf;
		CUevent done; /* recorded after the last copy that used buf */
		bool held;    /* handed out and not yet put back */
	} staging[XGPU_STAGING_MAX];
	unsigned nstaging, staging_next;
	size_t staging_size;
	uint64_t pinned_bytes;        /* host segments mapped for the domain */
	uint64_t limit_charge[4];     /* device memory charged for the heap, printf FIFO, stacks, launches */
	struct xgpu_busy_mark *marks; /* ring of in-flight busy measurements */
	uint32_t marks_cap, marks_head, marks_count;
	struct xgpu_taskq tasks;         /* wfq: the slot shared among tasks (poller only) */
	const struct xgpu_gpuspec *spec; /* its --config entry, or NULL */
	struct xgpu_task *serving;       /* the task whose request is being run */

	struct xgpu_sched_dom sd; /* credit, SLO, slot accounting */
	struct xgpu_dom_stats stats;
	struct xgpu_ratelimit log_rl; /* lines this domain's guest can provoke */
	struct xgpu_domain *next;
};

/* Log lines a guest can provoke, against its domain's budget. */
#define dlog_err(dom, ...) xgpu_log_limited(&(dom)->log_rl, XGPU_LOG_ERROR, __VA_ARGS__)
#define dlog_warn(dom, ...) xgpu_log_limited(&(dom)->log_rl, XGPU_LOG_WARN, __VA_ARGS__)
#define dlog_info(dom, ...) xgpu_log_limited(&(dom)->log_rl, XGPU_LOG_INFO, __VA_ARGS__)

/* ---- the daemon -------------------------------------------------------- */
struct xgpud {
	struct xgpud_opts o;
	struct xgpu_driver drv;
	const char *executor_name; /* "cuda" or "sim" */
	int driver_version;
	struct xgpu_gpu *gpus;
	int ngpus;
	const struct xgpu_policy_ops *policy; /* initial policy of every GPU */
	const struct xgpu_hyp_ops *hyp_ops;
	const char *hyp_args;
	struct xgpud_config *conf; /* --config, or NULL */
	pthread_mutex_t domains_lock;
	struct xgpu_domain *domains;
	uint32_t ndomains;
	uint32_t next_domid;
	_Atomic uint32_t next_channel_id;
	_Atomic bool stopping;
	uint64_t start_ns;
};

/* daemon.c */
int xgpud_init(struct xgpud *d, char *err, size_t errlen);
void xgpud_shutdown(struct xgpud *d);

/* domain.c */
/* Finds the domain named name, creating it if needed. Names of the form
 * uid-N belong to uid N alone; other names to the uid that created them
 * (root may join any domain by name). Returns NULL with a reason in err if
 * uid may not join or create it. */
struct xgpu_domain *xgpu_domain_get(struct xgpud *d, const char *name, uid_t uid, char *err, size_t errlen);
/* The domain of Xen guest domid, creating it (owned by root) with name (or
 * "dom<domid>" when the name is bad or taken) and spec's settings (NULL:
 * its --config entry) if needed. spec must outlive the domain (the poller
 * reads its task weights). NULL with a reason in err. */
struct xgpu_domain *xgpu_domain_get_xen(struct xgpud *d, uint32_t domid, const char *name,
					const struct xgpu_gpuspec *spec, char *err, size_t errlen);
/* Drops a domain that has no channels left: unlists it, stops its poller
 * and frees it (main thread). */
void xgpu_domain_remove(struct xgpud *d, struct xgpu_domain *dom);
/* Hands a new channel to its domain's poller, starting the poller if the
 * domain had none. Returns -1 if no thread could be started. */
int xgpu_domain_add_channel(struct xgpu_domain *dom, struct xgpu_channel *ch);
void xgpu_domain_wake(struct xgpu_domain *dom);
void xgpu_domain_stop(struct xgpu_domain *dom);
void xgpu_domain_free(struct xgpu_domain *dom);

/* poller.c */
void *xgpu_poller_main(void *arg);

/* channel.c (poller thread): release_objects frees every device object the
 * channel's process holds; teardown also closes the channel and frees it. */
void xgpu_channel_release_objects(struct xgpu_channel *ch);
void xgpu_channel_teardown(struct xgpu_channel *ch);

/* dispatch.c: runs one request copied out of the ring. */
void xgpu_dispatch(struct xgpu_channel *ch, const uint8_t *slot);
/* Whether the request in slot may run without the GPU slot. */
bool xgpu_dispatch_exempt(const uint8_t *slot);

/* exec.c: the executor, a CUDA driver API client (poller thread). */
int xgpu_exec_context(struct xgpu_domain *dom); /* creates lazily; cudaError_t */
/* A pinned staging buffer that no queued copy uses and nobody holds,
 * growing the pool or waiting for the oldest use when all are busy;
 * cudaError_t. The buffer is held until put back. */
int xgpu_exec_staging_get(struct xgpu_domain *dom, unsigned *idx);
/* Puts buffer idx back; if s is not NULL, a copy just queued on s still uses
 * it until that copy completes. */
int xgpu_exec_staging_put(struct xgpu_domain *dom, unsigned idx, CUstream s, bool queued);
void xgpu_exec_release(struct xgpu_domain *dom); /* destroys the context and staging */
int xgpu_exec_check(struct xgpu_domain *dom, CUresult r, const char *what); /* maps, records stickiness */
void xgpu_exec_busy_begin(struct xgpu_domain *dom, CUstream s, struct xgpu_busy_mark **mark);
void xgpu_exec_busy_end(struct xgpu_domain *dom, CUstream s, struct xgpu_busy_mark *mark);
void xgpu_exec_busy_harvest(struct xgpu_domain *dom, bool wait_all);

/* control.c */
/* Renders the stats object of BRIEF section 4 as viewer may see it; caller
 * frees. */
char *xgpu_control_stats_json(struct xgpud *d, uid_t viewer);
/* Answers a control request on conn (which it takes) on a thread of its own. */
void xgpu_control_spawn(struct xgpud *d, int conn, uid_t uid);
/* Waits for control threads still answering (at shutdown). */
void xgpu_control_drain(void);

#endif
