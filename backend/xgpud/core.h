/* SPDX-License-Identifier: Apache-2.0 */
/* core.h - the control plane's model: GPUs, domains, their executors and
 * channels, the daemon and its options, and who owns what. Types only: each
 * module's functions are declared in its own header (domain.h,
 * executors.h, ...), so that including the model never pulls in the modules
 * that use it.
 *
 * xgpud does not run guests' calls: each domain with processes has an
 * executor, a process of its own (backend/executor/), which maps the
 * domain's channels and runs their calls on the GPU. xgpud accepts and
 * checks channels and hands them over, schedules the GPU slot, watches the
 * executors (kernel timeout, faults, deaths) and answers xl-gpu.
 *
 * Threads: the main thread owns the domain list's changes, the executors'
 * links and every channel record; control requests run on short-lived
 * threads that read under domains_lock; each gating GPU has a scheduler
 * thread that grants the slot and reads the executors' reports.
 */
#ifndef XGPU_CORE_H
#define XGPU_CORE_H

#include "driver.h"
#include "execlink.h"
#include "gpuspec.h"
#include "log.h"
#include "proto.h"
#include "scheduler.h"
#include "stats.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct xgpud;
struct xgpud_config;
struct xgpud_domain;
struct xgpud_executors;

/* ---- options ------------------------------------------------------------ */
struct xgpud_opts {
	const char *transport;  /* "local" (default) or "xen" */
	const char *executor;   /* "cuda", "sim", or NULL: cuda when usable, else sim */
	const char *policy;     /* scheduling policy name */
	const char *hyp_source; /* hypervisor schedule source spec, NULL: default */
	unsigned tick_ms;
	const char *socket_path;   /* local transport */
	const char *remote_listen; /* remote transport: ADDR:PORT, or NULL */
	const char *remote_psk;
	const char *remote_cert, *remote_cert_key, *remote_ca; /* this host's, and the guests' CA */
	bool remote_insecure;
	bool remote_zerocopy; /* plain TCP's bulk sends with MSG_ZEROCOPY */
	const char *config_path;
	const char *log_file;
	const char *sim_driver;    /* path of libxgpu-simdrv.so; default beside the binary */
	const char *cuda_driver;   /* default libcuda.so.1 */
	const char *executor_path; /* xgpu-executor; default beside the binary */
	bool foreground;
	int log_level;
	uint64_t mem_limit; /* per domain, bytes; 0 = the GPU's memory */
	/* Most bytes a module's compressed fatbin entries inflate to in all
	 * (fatbin.h), handed to each executor; 0: its default. */
	uint64_t fatbin_inflate_limit;
	uint64_t spin_ns; /* pollers spin this long before sleeping */
	unsigned stall_timeout_s;
	unsigned max_channels_per_domain;
	unsigned max_domains_per_uid; /* for users other than root */
	unsigned max_domains;
	uint64_t pinned_limit;        /* host segments per domain, bytes */
	unsigned kernel_timeout_s;    /* per domain: longest one device operation may run; 0 = none */
	unsigned executor_linger_ms;  /* an idle executor's life before xgpud stops it */
	uint32_t executor_uid_base;   /* executors run as base + domain slot; 0: as xgpud */
	const char *executor_sandbox; /* "enforce", "log", "off"; NULL: the executor's default */
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
/* A guest process's channel as xgpud keeps it once its executor serves it:
 * who it is, and what xgpud needs to tell the guest why its executor ended
 * (the end code in its region's header, then the socket's hang-up). */
struct xgpud_channel {
	uint32_t id;
	uint32_t task;
	pid_t pid; /* a local guest's, 0 under Xen */
	uid_t uid;
	void *region; /* xgpud's mapping of the region */
	size_t region_size;
	int sock; /* a local guest's socket, kept until the executor is done with it; -1 if none */
	/* A transport with state of its own for the channel (Xen), which then
	 * owns region: told once when the channel leaves the domain. handed_on:
	 * it goes on in its executor for the next xgpud (a restart). */
	void (*ended)(struct xgpud_channel *ch, bool handed_on);
	void *tpriv;
	/* A Xen channel adopted from a previous xgpud's executor, waiting for
	 * the Xen transport to take it (host.h take_xen_channel): what its
	 * executor said of it (checked against xenstore then) and the
	 * copies of its handles; nxfds 0 otherwise. */
	struct xgpu_link_xen xen;
	int xfds[XGPU_LINK_CHAN_FDS];
	int nxfds;
	uint64_t adopted_ns; /* when; one no transport took in time is closed */
	struct xgpud_channel *next;
};

/* What a transport hands to a domain's executor (domain.h). */
struct xgpud_handover {
	uint32_t kind; /* enum xgpu_link_chan_kind */
	struct xgpud_channel *ch;
	int fds[XGPU_LINK_CHAN_FDS]; /* by kind; the executor gets copies, xgpud keeps none of them */
	int nfds;
	struct xgpu_link_xen xen; /* XGPU_CHAN_XEN */
};

/* ---- executors ----------------------------------------------------------- */
/* Why an executor ended, as its domain's processes learn it. */
enum xgpu_exec_end {
	XGPU_END_NONE = 0,
	XGPU_END_STOPPED, /* xgpud stopped it (idle, or stopping itself) */
	XGPU_END_FAULT,   /* its context failed (it said so) */
	XGPU_END_TIMEOUT, /* killed by the kernel timeout */
	XGPU_END_DIED,    /* exited or was killed otherwise */
};

struct xgpud_executor {
	struct xgpud_domain *dom;
	pid_t pid;
	int pidfd;   /* readable once it has exited */
	int link_fd; /* SOCK_SEQPACKET; -1 once closed */
	int log_fd;  /* the read end of its stderr */
	int wake_fd, notify_fd;
	int ctl_fd, status_fd;
	struct xgpu_exec_ctl *ctl;         /* ours to write */
	const struct xgpu_exec_status *st; /* its to write: hostile */
	bool child;                        /* ours to reap (not adopted) */
	bool ready;                        /* it said READY */
	bool stopping;                     /* asked to stop; takes no new channel */
	uint64_t stop_at_ns;               /* when to kill it if it has not exited */
	uint64_t idle_since_ns;            /* no channels since then (0: it has some) */
	enum xgpu_exec_end end;
	int end_code; /* the cudaError_t its processes get */
	char end_why[192];
	char logbuf[1024]; /* a partial line of its log */
	size_t loglen;
	/* Its lines, under a budget of their own: the executor keeps the
	 * domain's budget for what a guest provokes; this one bounds what a
	 * broken executor could write into xgpud's log. */
	struct xgpu_ratelimit log_rl;
	/* The kernel timeout: the status page's busy_since_ns as last seen. */
	uint64_t wd_since_ns;
	struct xgpud_executor *next_dead; /* executors.c's list of those to reap */
};

/* ---- domains ------------------------------------------------------------ */
/* Counters that outlive an executor: the domain's own, and the totals of
 * its earlier executors' counters (struct xgpu_exec_record). */
struct xgpud_counters {
	_Atomic uint64_t channels_total, timeouts, faults, executors;
	_Atomic uint64_t calls, errors, h2d_bytes, d2h_bytes, kernels, queue_wait_ns, queue_waits;
	_Atomic uint64_t lat[XGPU_LAT_BUCKETS], wait[XGPU_LAT_BUCKETS];
};

struct xgpud_domain {
	struct xgpud *d;
	char name[XGPU_DOMAIN_NAME_MAX];
	uint32_t domid;
	bool xen; /* a Xen guest: domid is its Xen domid */
	uid_t owner_uid;
	struct xgpu_gpu *gpu;
	_Atomic uint64_t mem_limit;
	bool mem_default;                  /* mem_limit is the daemon's default */
	uint64_t allowed_gpus;             /* bit i: may be bound to GPU i */
	const struct xgpu_gpuspec *spec;   /* its --config entry, or NULL */
	_Atomic uint32_t kernel_timeout_s; /* 0: none */

	/* The executor serving it, if any (main thread; domains_lock to
	 * change, so that control threads may read it). */
	struct xgpud_executor *ex;
	struct xgpud_channel *channels; /* served by ex (main thread) */
	pid_t adopt_pid;                /* restored: the executor it had, to be adopted (0: none) */
	_Atomic uint32_t nchannels;

	struct xgpu_sched_dom sd; /* credit, SLO, slot accounting; attached while ex runs */
	struct xgpud_counters c;
	struct xgpu_ratelimit log_rl; /* lines this domain's guest can provoke */
	struct xgpud_domain *next;
};

/* Log lines a guest can provoke, against its domain's budget. */
#define dlog_err(dom, ...) xgpu_log_limited(&(dom)->log_rl, XGPU_LOG_ERROR, __VA_ARGS__)
#define dlog_warn(dom, ...) xgpu_log_limited(&(dom)->log_rl, XGPU_LOG_WARN, __VA_ARGS__)
#define dlog_info(dom, ...) xgpu_log_limited(&(dom)->log_rl, XGPU_LOG_INFO, __VA_ARGS__)

/* ---- the daemon -------------------------------------------------------- */
struct xgpud {
	struct xgpud_opts o;
	struct xgpu_driver drv;    /* to describe the GPUs only: xgpud makes no context */
	const char *executor_name; /* "cuda" or "sim" */
	const char *driver_path;   /* what executors load */
	char executor_path[512];
	char socket_path[256];
	int driver_version;
	struct xgpu_gpu *gpus;
	int ngpus;
	const struct xgpu_policy_ops *policy; /* initial policy of every GPU */
	const struct xgpu_hyp_ops *hyp_ops;
	const char *hyp_args;
	struct xgpud_config *conf; /* --config, or NULL */
	pthread_mutex_t domains_lock;
	struct xgpud_domain *domains;
	uint32_t ndomains;
	uint32_t next_domid;
	_Atomic uint32_t next_channel_id;
	_Atomic bool stopping;
	struct xgpud_executors *executors; /* executors.c's */
	uint64_t start_ns;
};

#endif
