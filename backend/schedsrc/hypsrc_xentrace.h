/* SPDX-License-Identifier: Apache-2.0 */
/* hypsrc_xentrace.h - the `xentrace` hypervisor schedule source: what it
 * needs from the hypervisor (the trace buffers and their notification),
 * behind a small ops table so tests can run it over rings in memory, and
 * the per-PCPU detail its snapshots leave out. */
#ifndef XGPU_HYPSRC_XENTRACE_H
#define XGPU_HYPSRC_XENTRACE_H

#include "hypsrc.h"
#include "hypsrc_xen.h"
#include "xentrace_parse.h"

#define XGPU_XT_DEFAULT_PAGES 32u /* trace buffer pages per CPU */
#define XGPU_XT_MAX_PAGES 4096u
#define XGPU_XT_MAX_CPUS 4096u

struct xgpu_xt_ops {
	/* Enables tracing of scheduler events with `pages` pages per CPU and
	 * maps the buffers. Fills the number of CPUs, the TSC frequency (0 if
	 * unknown) and each buffer's data size. NULL with a message. */
	void *(*open)(unsigned pages, unsigned *ncpu, uint32_t *cpu_khz, uint32_t *data_size, char *err,
		      size_t errlen);
	void (*close)(void *b);
	/* CPU cpu's mapped struct t_buf (data_size bytes after it); NULL when
	 * that CPU has no buffer. */
	struct t_buf *(*buf)(void *b, unsigned cpu);
	/* Takes a pending VIRQ_TBUF without blocking: 1 if one was, 0 if not. */
	int (*ack)(void *b);
};

extern const struct xgpu_xt_ops xgpu_xt_real;

/* xgpu_hyp_xentrace.open over other trace buffers (xt) and another
 * hypervisor for weights and caps (xc; its `xen` source runs embedded). */
int xgpu_hyp_xentrace_open_with(const struct xgpu_xt_ops *xt, const struct xgpu_xenctl_ops *xc,
				const char *args, struct xgpu_hyp **out, char *err, size_t errlen);

/* A PCPU's state as of the last refresh; -1 if pcpu is out of range. */
int xgpu_hyp_xentrace_pcpu(struct xgpu_hyp *h, unsigned pcpu, struct xt_pcpu *out);
/* Counters: records, lost records, garbage, bogus rings. */
const struct xt_stats *xgpu_hyp_xentrace_stats(struct xgpu_hyp *h);

#endif
