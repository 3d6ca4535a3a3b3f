/* SPDX-License-Identifier: Apache-2.0 */
/* executor.h - the executor's model: the one domain an xgpu-executor process
 * serves, its channels, its device state and its link to xgpud. Types only:
 * each module's functions are in its own header.
 *
 * An executor is a domain's accelerator VCPU in a process of its own, so that
 * a kernel's fault or a kernel that never ends (both the whole process's on
 * NVIDIA's driver) reach only its domain. Threads: the main thread is the
 * poller (poller.c), which owns the channels, the handle tables and the
 * context and executes every call; the link thread (link.c) talks to xgpud,
 * hands new channels to the poller and publishes the oldest unfinished
 * operation for xgpud's kernel timeout; the driver may run threads of its
 * own.
 */
#ifndef XGPU_EXECUTOR_H
#define XGPU_EXECUTOR_H

#include "driver.h"
#include "execlink.h"
#include "fatbin.h"
#include "log.h"
#include "memmap.h"
#include "objtab.h"
#include "proto.h"
#include "shm.h"
#include "slot.h"
#include "stats.h"
#include "taskq.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct xgpu_domain;
struct xgpu_channel;

/* ---- channels ---------------------------------------------------------- */
/* A channel's transport, as the executor serves it (chan_local.c). */
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
	bool close_asked; /* xgpud asked (the link thread set it; the poller acts) */
	/* A request taken off the ring but not yet run (waiting for the slot). */
	bool have_pending;
	uint8_t pending[XGPU_SLOT_SIZE];
	uint64_t pending_since_ns; /* xgpu_fast_ns() */
	struct xgpu_task *task_entry; /* its task's share of the domain's slot */
	bool had_work;                /* as of the poller's last look (wfq) */
	_Atomic uint64_t calls;
	/* Its data areas registered with the driver, so that long copies run
	 * straight between them and the device (dispatch.c's ring DMA): 1 yes,
	 * -1 refused (copies go through the staging buffers), 0 not tried in
	 * this context. */
	int8_t rings_dma;
	struct xgpu_channel *next;
};

/* ---- the domain ------------------------------------------------------- */
#define XGPU_STAGING_MAX 8
#define XGPU_RING_DMA_MAX 16 /* chunks of a ring DMA in flight at once */

struct xgpu_busy_mark {
	CUevent start, end;
	struct xgpu_task *task; /* the task whose work it measures */
};

struct xgpu_executor;

struct xgpu_domain {
	struct xgpu_executor *x;
	char name[XGPU_DOMAIN_NAME_MAX];
	uint32_t domid;
	struct xgpu_gpu_desc *gpu;

	int epfd;
	int wake_fd; /* eventfd: a message from xgpud, the slot granted, stop */
	pthread_mutex_t incoming_lock;
	struct xgpu_channel *incoming; /* from the link thread */
	struct xgpu_channel *channels; /* poller only */

	/* Device state: poller only. */
	CUcontext ctx;
	int sticky_error;    /* cudaError_t that broke the context, 0 if fine */
	char fault_what[160]; /* what broke it, for xgpud's log */
	struct xgpu_objtab objs;
	struct xgpu_memmap mem;
	/* Allocations exported for IPC (ipc.c): base, token, exporter. */
	struct xgpu_ipc_export {
		uint64_t base, token;
		struct xgpu_channel *owner;
	} * ipc;
	uint32_t nipc, capipc;
	struct xgpu_staging {
		void *buf;
		CUevent done; /* recorded after the last copy that used buf */
		bool held;    /* handed out and not yet put back */
	} staging[XGPU_STAGING_MAX];
	unsigned nstaging, staging_next;
	size_t staging_size;
	/* Recorded after each chunk of a copy straight between a data area and
	 * the device, in order on the copy's stream (created on first use). */
	CUevent ring_dma_done[XGPU_RING_DMA_MAX];
	uint64_t pinned_bytes;        /* host segments mapped for the domain */
	uint64_t limit_charge[4];     /* device memory charged for the heap, printf FIFO, stacks, launches */
	struct xgpu_busy_mark *marks; /* ring of in-flight busy measurements */
	uint32_t marks_cap, marks_head, marks_count;
	uint64_t marks_done; /* marks taken off the ring so far: names the head */
	/* Guards the marks ring's extent against the link thread, which
	 * reads the oldest unfinished one for xgpud's kernel timeout. */
	pthread_mutex_t marks_lock;
	/* Odd while a measured operation is being issued (between busy_begin
	 * and busy_end): a driver call that does not return (the simulated
	 * driver runs a graph's conditional nodes inside cuGraphLaunch) is
	 * unfinished work for the kernel timeout before it has a mark. */
	_Atomic uint64_t issuing;
	struct xgpu_taskq tasks; /* the slot shared among tasks (wfq) */
	struct {
		uint32_t task, weight;
	} task_weights[16];
	unsigned ntask_weights;
	struct xgpu_task *serving; /* the task whose request is being run */

	/* The GPU slot (slot.h) through the pages shared with xgpud. */
	struct xgpu_slot_client slot;
	_Atomic bool orphan; /* xgpud is gone: no one grants, so nothing is gated */

	struct xgpu_dom_stats *stats; /* in the status page */
	struct xgpu_ratelimit log_rl; /* lines this domain's guest can provoke */
};

/* The executor process. */
struct xgpu_executor {
	struct xgpu_driver drv;
	int driver_version;
	struct xgpu_gpu_desc gpu;
	struct xgpu_domain dom;
	_Atomic bool stopping;
	const char *stop_reason;

	/* The pages shared with xgpud (execlink.h). ctl is read-only here and
	 * replaced whole when a restarted xgpud adopts the executor: the link
	 * thread leaves the new one in next_ctl and the poller switches. */
	_Atomic(const struct xgpu_exec_ctl *) ctl;
	_Atomic(const struct xgpu_exec_ctl *) next_ctl;
	struct xgpu_exec_status *status;
	int ctl_fd, status_fd, wake_fd, notify_fd;

	/* The link (link.c): a SOCK_SEQPACKET to xgpud, replaced at adoption;
	 * sends from either thread hold link_lock. */
	pthread_mutex_t link_lock;
	int link_fd;
	int listen_fd;
	uid_t xgpud_uid;
};

/* Log lines a guest can provoke, against its domain's budget. */
#define dlog_err(dom, ...) xgpu_log_limited(&(dom)->log_rl, XGPU_LOG_ERROR, __VA_ARGS__)
#define dlog_warn(dom, ...) xgpu_log_limited(&(dom)->log_rl, XGPU_LOG_WARN, __VA_ARGS__)
#define dlog_info(dom, ...) xgpu_log_limited(&(dom)->log_rl, XGPU_LOG_INFO, __VA_ARGS__)

/* The control page's values, as they are now (xgpud may change them live). */
static inline const struct xgpu_exec_ctl *xgpu_exec_ctl(const struct xgpu_domain *dom)
{
	return atomic_load_explicit(&dom->x->ctl, memory_order_acquire);
}
static inline uint64_t xgpu_mem_limit(const struct xgpu_domain *dom)
{
	return atomic_load_explicit(&xgpu_exec_ctl(dom)->mem_limit, memory_order_relaxed);
}
static inline uint64_t xgpu_pinned_limit(const struct xgpu_domain *dom)
{
	return atomic_load_explicit(&xgpu_exec_ctl(dom)->pinned_limit, memory_order_relaxed);
}
static inline uint64_t xgpu_spin_ns(const struct xgpu_domain *dom)
{
	return atomic_load_explicit(&xgpu_exec_ctl(dom)->spin_ns, memory_order_relaxed);
}
static inline unsigned xgpu_stall_timeout_s(const struct xgpu_domain *dom)
{
	return atomic_load_explicit(&xgpu_exec_ctl(dom)->stall_timeout_s, memory_order_relaxed);
}
/* Whether gated work may be issued: the slot is ours, the policy does not
 * gate, or no xgpud is there to grant it. */
static inline bool xgpu_may_issue(const struct xgpu_domain *dom)
{
	return xgpu_slot_may_issue(dom->slot.grant) || atomic_load_explicit(&dom->orphan, memory_order_relaxed);
}
static inline uint32_t xgpu_slot_flags(const struct xgpu_domain *dom)
{
	return atomic_load_explicit(&dom->orphan, memory_order_relaxed) ? 0 : xgpu_slot_policy(dom->slot.grant);
}

#endif
