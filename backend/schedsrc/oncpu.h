/* SPDX-License-Identifier: Apache-2.0 */
/* oncpu.h - which thread is on each CPU right now, from the kernel's
 * sched_switch tracepoint (one perf ring per CPU), for the local schedule
 * source. /proc's state R cannot tell a thread on a CPU from one waiting on
 * a run queue; with more runnable threads than CPUs that is the difference
 * co-scheduling needs.
 *
 * Needs tracefs (/sys/kernel/tracing or /sys/kernel/debug/tracing) and the
 * right to trace every CPU (root, CAP_PERFMON, or perf_event_paranoid <= -1);
 * xgpu_oncpu_open says why when it cannot. */
#ifndef XGPU_ONCPU_H
#define XGPU_ONCPU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define XGPU_ONCPU_MAX_CPUS 1024u

struct xgpu_oncpu;

/* NULL with the reason in err when sched_switch cannot be read. */
struct xgpu_oncpu *xgpu_oncpu_open(char *err, size_t errlen);
void xgpu_oncpu_close(struct xgpu_oncpu *o);

/* Takes in the switches since the last call. */
void xgpu_oncpu_update(struct xgpu_oncpu *o);

/* Whether tid is on a CPU as of the last update. A CPU whose current thread
 * is not known yet (no switch seen since open, or records lost) answers
 * with unknown = true: the caller falls back to its own view for it. */
bool xgpu_oncpu_running(const struct xgpu_oncpu *o, pid_t tid, bool *unknown);

/* ---- the record decoding, separate for tests ------------------------------ */

/* One CPU's ring as perf lays it out: the control page's data_head and
 * data_tail, and data_size bytes of records (a power of two). */
struct xgpu_oncpu_ring {
	volatile uint64_t *head, *tail;
	const uint8_t *data;
	uint64_t data_size;
};

/* Reads the records between tail and head (wrapping at data_size), sets
 * *current to the next_pid of the last sched_switch sample (next_pid at
 * next_pid_off in its raw data) and *known accordingly
 * (false after lost records), then moves tail to head. Records that are
 * malformed end the read. Returns how many switches were read. */
unsigned xgpu_oncpu_drain(struct xgpu_oncpu_ring *r, uint32_t next_pid_off, pid_t *current, bool *known);

#endif
