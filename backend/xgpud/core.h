/* SPDX-License-Identifier: Apache-2.0 */
/* core.h - the daemon's model: GPUs, domains, channels, the daemon and its
 * options, and who owns what. Types only: each module's functions are
 * declared in its own header (domain.h, channel.h, exec/exec.h, ...), so
 * that including the model never pulls in the modules that use it.
 *
 * Threads: the main thread accepts channels (transport) and answers control
 * requests; each domain has one aVCPU poller thread that owns the domain's
 * channels, handle tables and device context and executes every call; each
 * gating GPU has a scheduler thread that grants the GPU slot. Counters read
 * by the control path are atomics; everything else is touched by the owning
 * poller only.
 */
#ifndef XGPU_CORE_H
#define XGPU_CORE_H

#include "driver.h"
#include "memmap.h"
#include "objtab.h"
#include "fatbin.h"
#include "gpuspec.h"
#include "log.h"
#include "proto.h"
#include "scheduler.h"
#include "shm.h"
#include "stats.h"
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
	uint64_t pinned_limit;     /* host segments per domain, bytes */
	unsigned kernel_timeout_s; /* per domain: longest one device operation may run; 0 = none */
	const char *fault_scope;   /* "process", "context", or NULL: process on cuda, context on sim */
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
	uint64_t marks_done; /* marks taken off the ring so far: names the head */

	/* The kernel timeout (watchdog.c). wd_lock guards ctx and the marks
	 * ring's extent against the watchdog thread, which reads the ring and
	 * may destroy the context; the poller holds it only to change them. */
	pthread_mutex_t wd_lock;
	_Atomic uint32_t kernel_timeout_s; /* 0: none */
	_Atomic bool timed_out;            /* the watchdog destroyed ctx */
	uint64_t wd_mark;                  /* watchdog: the unfinished operation it watches */
	uint64_t wd_since_ns;              /* and since when */
	struct xgpu_taskq tasks;           /* wfq: the slot shared among tasks (poller only) */
	const struct xgpu_gpuspec *spec;   /* its --config entry, or NULL */
	struct xgpu_task *serving;         /* the task whose request is being run */

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
	/* A kernel's fault breaks every context of the process (NVIDIA's
	 * driver), not only its own: the daemon stops at the first, so that
	 * its service manager starts it afresh (exec.c). */
	bool fault_stops_daemon;
	_Atomic bool stopped_by_fault;
	/* The domain whose poller stops the daemon once the faulting call's
	 * answer is out (poller.c). */
	_Atomic(struct xgpu_domain *) fault_domain;
	uint64_t start_ns;
	pthread_t watchdog; /* the kernel timeout's thread (watchdog.c) */
	bool watchdog_started;
};

#endif
