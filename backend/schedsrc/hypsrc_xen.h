/* SPDX-License-Identifier: Apache-2.0 */
/* hypsrc_xen.h - the libxenctrl calls the `xen` hypervisor schedule source
 * makes, behind a tiny ops table so that tests can drive the source with a
 * fake hypervisor (xgpu_xenctl_real is the one over libxenctrl). */
#ifndef XGPU_HYPSRC_XEN_H
#define XGPU_HYPSRC_XEN_H

#include "hypsrc.h"

/* XEN_SCHEDULER_* of xen/domctl.h */
enum { XGPU_XEN_SCHED_CREDIT = 5, XGPU_XEN_SCHED_CREDIT2 = 6 };

/* Every call: 0, or -1 with errno (ESRCH: no such domain). */
struct xgpu_xenctl_ops {
	/* NULL with a message naming what is missing. */
	void *(*open)(char *err, size_t errlen);
	void (*close)(void *x);
	/* The scheduler of the host's default CPU pool (XEN_SCHEDULER_*). */
	int (*sched_id)(void *x, int *id);
	/* Weight and cap (percent of one PCPU, 0 = none) under scheduler
	 * sched (XGPU_XEN_SCHED_CREDIT or _CREDIT2). */
	int (*sched_get)(void *x, int sched, uint32_t domid, uint32_t *weight, uint32_t *cap);
	/* Whether the domain exists and is not dying, and its highest VCPU id
	 * (UINT32_MAX when it has none); -1 with ESRCH when it does not exist. */
	int (*domain)(void *x, uint32_t domid, bool *dying, uint32_t *max_vcpu_id);
	int (*vcpu)(void *x, uint32_t domid, uint32_t vcpu, bool *online, bool *running, uint32_t *pcpu);
};

extern const struct xgpu_xenctl_ops xgpu_xenctl_real;

/* xgpu_hyp_xen.open with another hypervisor behind it. */
int xgpu_hyp_xen_open_with(const struct xgpu_xenctl_ops *ops, const char *args, struct xgpu_hyp **out,
			   char *err, size_t errlen);

#endif
