/* SPDX-License-Identifier: Apache-2.0 */
/* scheduler.h - the per-GPU scheduler core: ticks, the GPU slot, gating of
 * aVCPU pollers, accounting, live policy and credit changes. Policies
 * (policies/) decide only who is next and for how many ticks.
 *
 * The core has no thread or clock of its own: xgpu_sched_run(s, now) does
 * everything that is due at `now` and says when it must run again. The daemon
 * drives it from one thread per GPU on CLOCK_MONOTONIC (xgpu_sched_start);
 * tests drive it in virtual time with simulated domains, so every policy is
 * tested deterministically with the code the daemon runs.
 */
#ifndef XGPU_SCHEDULER_H
#define XGPU_SCHEDULER_H

#include "schedsrc/hypsrc.h"
#include "policy.h"
#include "slot.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define XGPU_CREDIT_MIN 1u
#define XGPU_CREDIT_MAX 65535u
#define XGPU_CREDIT_DEFAULT 256u
#define XGPU_MAX_SLOT_TICKS 100u /* longest slot a policy may grant */
#define XGPU_SCHED_PIDS_MAX 64u
#define XGPU_DRAIN_MAX_NS                                                                                    \
	1000000000ull /* longest wait for a holder's queued work */ /* client processes per domain the       \
								       schedule source follows */
/* Most device time past its slots a domain can owe (see pays_overrun in
 * policy.h): bounds how long it waits after running alone on an idle GPU. */
#define XGPU_DEBT_MAX_NS 5000000000ull

/* One domain as the scheduler of its GPU sees it. Embedded in the daemon's
 * struct xgpud_domain, or in a test's simulated domain. */
struct xgpu_sched_dom {
	/* Identity and wake-up, set before xgpu_sched_add. */
	uint32_t domid;
	const char *name;
	void (*wake)(struct xgpu_sched_dom *sd); /* granted the slot; must not block */
	void *owner;

	/* Parameters: written under the scheduler lock (xgpu_sched_set_params). */
	uint32_t credit; /* accelerator credit, XGPU_CREDIT_MIN..MAX */
	double sla;      /* SLO: expected share of the GPU, 0 (none) .. 1 */

	/* What the scheduler and the domain's poller share (slot.h): the
	 * scheduler writes *grant and reads *report. They point at own_grant
	 * and own_report unless the daemon set them, before xgpu_sched_add,
	 * at the pages shared with the domain's executor. */
	struct xgpu_slot_grant *grant;
	const struct xgpu_slot_report *report;
	struct xgpu_slot_grant own_grant;
	struct xgpu_slot_report own_report;
	/* The report's counters as last acted on (xgpu_sched_relay). */
	uint64_t seen_requests, seen_idles, seen_drains, seen_busy_ns;
	int notify_fd; /* the poller's eventfd (xgpu_sched_watch), -1 if none */

	/* Accounting, readable at any time. */
	_Atomic uint64_t held_ns; /* time holding the slot */
	_Atomic uint64_t ticks;   /* ticks granted */
	_Atomic uint64_t grants;  /* slots granted */
	_Atomic uint64_t yields;  /* slots given back idle before their ticks ran out */
	_Atomic uint64_t busy_ns; /* measured device busy time charged (xgpu_sched_charge) */
	_Atomic uint64_t wait_ns; /* sum over granted slots of the wait from ready to grant */
	_Atomic uint64_t max_wait_ns;
	_Atomic uint64_t overrun_ns;    /* device time its work ran past the end of its slots */
	_Atomic uint64_t turns_skipped; /* turns passed over to pay that back */
	_Atomic uint64_t preempted;     /* slots cut short for a domain the policy put first */

	/* Core state (scheduler lock). */
	bool attached;
	bool ready; /* reported ready to the policy and not granted since */
	uint64_t ready_since_ns;
	uint64_t slot_start_ns;
	uint64_t slot_end_ns;              /* when its last slot ended */
	bool slot_expired;                 /* that slot ran out with work left (not given back idle) */
	uint64_t slot_len_ns;              /* the length of the slot it was granted */
	uint64_t debt_ns;                  /* overrun not yet paid back by skipped turns */
	bool tail_pending;                 /* its work was still on the device when its slot ended */
	struct xgpu_sched_dom *next_ready; /* the core's FIFO helper (rr) */
	bool queued;
	struct xgpu_sched_dom *prev_all, *next_all; /* every attached domain */
	struct xgpu_sched_dom *hnext;               /* domid hash chain */

	/* Policy state (scheduler lock). Generic fields the policies share,
	 * so none of them allocates per domain. */
	uint32_t heap_idx;                        /* position in a policy's heap, UINT32_MAX if none */
	uint64_t key;                             /* a policy's sort key */
	uint64_t round;                           /* round-based policies: the round it is queued for */
	uint64_t vtime;                           /* wfq: virtual time, in ns of busy per unit weight */
	uint64_t carry;                           /* fractional ticks carried between slots */
	uint32_t extra;                           /* slaf: extra ticks per slot while violating */
	uint64_t window_held_ns, window_start_ns; /* slaf: held time in the current period */
	double share_ewma;                        /* slaf: recent held share */
	uint64_t slot_busy_ns;                    /* wfq: busy charged during the current slot */
	uint64_t seq;                             /* FIFO order among equal keys */
	pid_t pids[XGPU_SCHED_PIDS_MAX];          /* for the schedule source (local mode) */
	unsigned npids;
	uint64_t aug_stamp; /* augc: snapshot pass that summed aug */
	int64_t aug;        /* augc: remaining CPU credit in the upcoming schedule */
};

struct xgpu_sched {
	const struct xgpu_policy_ops *ops;
	void *priv; /* the policy's */
	pthread_mutex_t lock;
	uint64_t tick_ns;
	uint64_t now_ns;   /* time of the current xgpu_sched_run, for policies */
	const char *label; /* for log lines, e.g. "GPU 0" */

	struct xgpu_sched_dom *holder;
	uint64_t holder_until_ns;
	bool holder_idle;
	bool draining;         /* the holder's slot ran out; its work on the device drains */
	uint64_t next_tick_ns; /* the next periodic policy tick */

	struct xgpu_sched_dom *all; /* attached domains, a list for rare O(n) walks */
	uint32_t ndoms;
	uint32_t nready;     /* domains waiting for the slot */
	uint32_t min_credit; /* over attached domains, for credit/min_credit */
	/* The heaviest domain that wanted the slot lately, and when: a lighter
	 * holder keeps less on the device while it may come back and preempt
	 * (xgpu_sched_inflight_cap). Read without the lock. */
	_Atomic uint32_t heavy_credit;
	_Atomic uint64_t heavy_seen_ns;
	struct xgpu_sched_dom **htab; /* domid -> domain, for hypervisor snapshots */
	uint32_t hmask;
	uint64_t seq;

	/* A FIFO of ready domains that simple policies use (rr). */
	struct xgpu_sched_dom *rq_head, *rq_tail;

	/* Hypervisor schedule (coordinated policies), refreshed every tick. */
	const struct xgpu_hyp_ops *hyp_ops;
	struct xgpu_hyp *hyp;
	struct xgpu_hyp_snapshot *snap, *snap_spare; /* the current one, and the next to fill */
	bool snap_valid;
	bool kicked;   /* a domain reported work or idleness since the last run */
	bool sleeping; /* the real-time driver waits in epoll (under the lock) */

	/* The real-time driver (xgpu_sched_start): it sleeps in epfd on its
	 * wake_fd and the watched pollers' eventfds. */
	int epfd, wake_fd;
	pthread_t thread;
	bool thread_started, stop;
};

/* Sets up s for ops; hyp may be NULL (coordinated policies then see an empty
 * schedule and fall back as documented in each). No thread is started. */
int xgpu_sched_init(struct xgpu_sched *s, const struct xgpu_policy_ops *ops, uint64_t tick_ns,
		    const struct xgpu_hyp_ops *hyp_ops, struct xgpu_hyp *hyp, const char *label);
void xgpu_sched_fini(struct xgpu_sched *s);

/* Everything due at now: end the holder's slot if its ticks ran out or it
 * went idle, refresh the hypervisor schedule and tick the policy once per
 * tick, grant the slot to the next domain. Returns when to run again
 * (UINT64_MAX: only when a domain reports work). Takes the lock. */
uint64_t xgpu_sched_run(struct xgpu_sched *s, uint64_t now);

/* Domains (sd's identity, wake, credit and sla set by the caller). */
void xgpu_sched_add(struct xgpu_sched *s, struct xgpu_sched_dom *sd, uint64_t now);
void xgpu_sched_remove(struct xgpu_sched *s, struct xgpu_sched_dom *sd, uint64_t now);
/* Changes credit and SLO live; the policy re-sorts. */
void xgpu_sched_set_params(struct xgpu_sched *s, struct xgpu_sched_dom *sd, uint32_t credit, double sla);
/* The client processes that make up sd's domain (local mode), for the
 * schedule source. */
void xgpu_sched_set_pids(struct xgpu_sched *s, struct xgpu_sched_dom *sd, const pid_t *pids, unsigned n);
/* The current policy, for readers outside the lock. */
static inline const struct xgpu_policy_ops *xgpu_sched_policy(struct xgpu_sched *s)
{
	return __atomic_load_n(&s->ops, __ATOMIC_ACQUIRE);
}
/* Switches policy live: the holder's slot ends, every domain moves to the
 * new policy with its pending work, no channel or packet is touched. */
void xgpu_sched_set_policy(struct xgpu_sched *s, const struct xgpu_policy_ops *ops, uint64_t now);

/* Poller side. Return true when the scheduler must run: the real-time
 * driver's thread is signalled already; a simulation calls xgpu_sched_run. */
/* sd has gated work and may not issue it; wake() is called when granted. */
bool xgpu_sched_request(struct xgpu_sched *s, struct xgpu_sched_dom *sd, uint64_t now);
/* sd has nothing queued and nothing on the device: if it holds the slot,
 * the slot ends now (work-conserving). */
bool xgpu_sched_idle(struct xgpu_sched *s, struct xgpu_sched_dom *sd);
/* sd's work on the device completed (inflight went false, at now) while it
 * did not hold the right to issue: a draining slot can end, and work that
 * outlasted sd's slot is charged to it. */
bool xgpu_sched_drained(struct xgpu_sched *s, struct xgpu_sched_dom *sd, uint64_t now);
/* Measured device busy time of sd's work (wfq's charge). */
void xgpu_sched_charge(struct xgpu_sched *s, struct xgpu_sched_dom *sd, uint64_t busy_ns);

/* How many operations sd may have on the device at once while it holds the
 * slot: max, or 1 under a preempting policy while a heavier domain wanted
 * the slot within the last two ticks, so that its preemption waits for at
 * most one operation to drain. What the holder's grant says
 * (xgpu_slot_inflight_cap), which the scheduler keeps up to date. */
unsigned xgpu_sched_inflight_cap(struct xgpu_sched *s, const struct xgpu_sched_dom *sd, unsigned max,
				 uint64_t now);

static inline bool xgpu_sched_may_issue(const struct xgpu_sched_dom *sd)
{
	return xgpu_slot_may_issue(sd->grant);
}

/* Acts on what sd's poller reported since the last look (idle, drained,
 * asked for the slot, in that order, and its measured busy time), when the
 * poller is in another process and reports through sd->report alone. */
void xgpu_sched_relay(struct xgpu_sched *s, struct xgpu_sched_dom *sd, uint64_t now);

/* The real-time driver: a thread per GPU running xgpu_sched_run on
 * CLOCK_MONOTONIC. The poller-side calls above then signal it themselves. */
int xgpu_sched_start(struct xgpu_sched *s);
void xgpu_sched_stop(struct xgpu_sched *s);
/* The real-time driver relays sd's report (xgpu_sched_relay) whenever fd,
 * an eventfd sd's poller writes after reporting, is readable; unwatch
 * before closing fd or removing sd. */
int xgpu_sched_watch(struct xgpu_sched *s, struct xgpu_sched_dom *sd, int fd);
void xgpu_sched_unwatch(struct xgpu_sched *s, struct xgpu_sched_dom *sd);

/* For policies (lock held). */
void xgpu_rq_push(struct xgpu_sched *s, struct xgpu_sched_dom *sd);
struct xgpu_sched_dom *xgpu_rq_pop(struct xgpu_sched *s);
void xgpu_rq_remove(struct xgpu_sched *s, struct xgpu_sched_dom *sd);
/* Ticks for a slot of credit-proportional length, credit / min_credit, with
 * the fraction carried to the domain's next slot so long-run ratios are
 * exact; 1 for a domain without context (Pegasus Algorithm 1). */
unsigned xgpu_sched_credit_ticks(struct xgpu_sched *s, struct xgpu_sched_dom *sd);
/* The same for any credit x against the smallest xmin (xc's CPU weights). */
unsigned xgpu_sched_ratio_ticks(struct xgpu_sched_dom *sd, uint32_t x, uint32_t xmin);
/* The hypervisor's view of sd's domain in the current snapshot: whether a
 * VCPU runs now, whether one is running or upcoming, and their remaining
 * credit (0 when absent). */
struct xgpu_hyp_view {
	bool running, scheduled;
	int64_t credit;
};
struct xgpu_hyp_view xgpu_sched_hyp_view(struct xgpu_sched *s, uint32_t domid);
/* The attached domain with that domid, or NULL. */
struct xgpu_sched_dom *xgpu_sched_find(struct xgpu_sched *s, uint32_t domid);
/* The domain's CPU weight from the source, or its accelerator credit when
 * the source does not know it. */
uint32_t xgpu_sched_cpu_weight(struct xgpu_sched *s, struct xgpu_sched_dom *sd);

#endif
