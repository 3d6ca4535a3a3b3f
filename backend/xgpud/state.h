/* SPDX-License-Identifier: Apache-2.0 */
/* state.h - xgpud's own record of its domains, for the xgpud that follows
 * it to adopt their executors (state.c). Main thread. */
#ifndef XGPU_STATE_H
#define XGPU_STATE_H

#include "core.h"

#include <stdint.h>
#include <sys/types.h>

/* One domain as the file keeps it. */
struct xgpu_state_record {
	char name[XGPU_DOMAIN_NAME_MAX];
	uint32_t domid;
	uid_t owner_uid;
	bool xen;
	int gpu;
	uint32_t credit;
	double sla;
	uint64_t mem_limit;
	bool mem_default;
	uint32_t kernel_timeout_s;
	pid_t executor_pid; /* 0: it had none */
	uint64_t held_ns, ticks, grants, yields, busy_ns, slot_wait_ns, slot_wait_max_ns, overrun_ns;
	uint64_t turns_skipped, preempted, channels_total, timeouts, faults, executors;
	uint64_t calls, errors, h2d_bytes, d2h_bytes, kernels, queue_wait_ns, queue_waits;
};

/* Recreates one domain from its record; 0 or -1 (with a log line). */
typedef int (*xgpu_state_restore_fn)(struct xgpud *d, const struct xgpu_state_record *r);

/* Reads the file the previous xgpud left, if any, and restores each domain
 * in it. Returns how many, or -1 if there was a file it could not believe. */
int xgpu_state_load(struct xgpud *d, xgpu_state_restore_fn restore);
/* Sets dom's accounts and counters to r's (a restored domain). */
void xgpu_state_apply(const struct xgpu_state_record *r, struct xgpud_domain *dom);
/* Writes the file now (a restart in place, or an operator's change, saved
 * before it is answered so that a crash right after loses nothing), or at
 * most every two seconds (the tick); executor_pid names each domain's
 * executor. Any thread. */
int xgpu_state_save(struct xgpud *d, pid_t (*executor_pid)(const struct xgpud_domain *));
void xgpu_state_tick(struct xgpud *d, uint64_t now, pid_t (*executor_pid)(const struct xgpud_domain *));
/* A clean stop: the next xgpud starts afresh. */
void xgpu_state_remove(struct xgpud *d);

#endif
