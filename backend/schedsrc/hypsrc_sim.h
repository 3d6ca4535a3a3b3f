/* SPDX-License-Identifier: Apache-2.0 */
/* hypsrc_sim.h - hooks into the simulated credit scheduler (`sim` source) for
 * tests and experiments: change a domain's load or weight while it runs, and
 * ask whether it is on a PCPU. Only valid on a handle opened by xgpu_hyp_sim. */
#ifndef XGPU_HYPSRC_SIM_H
#define XGPU_HYPSRC_SIM_H

#include "hypsrc.h"

/* Percent of each 100 ms window the domain's VCPUs are runnable (0..100,
 * larger values are clamped); applies from the next refresh. */
void xgpu_hyp_sim_set_duty(struct xgpu_hyp *h, uint32_t domid, unsigned duty);
/* Credit-scheduler weight (clamped to 1..65535) and cap in percent of one
 * PCPU (0 = none; clamped to 100 * PCPUs). */
void xgpu_hyp_sim_set_weight(struct xgpu_hyp *h, uint32_t domid, uint32_t weight, uint32_t cap);
/* Whether any VCPU of the domain was on a PCPU as of the last refresh. */
bool xgpu_hyp_sim_running(struct xgpu_hyp *h, uint32_t domid);

#endif
