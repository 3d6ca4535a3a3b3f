/* SPDX-License-Identifier: Apache-2.0 */
/* poller.h - the domain's accelerator VCPU: the executor's main loop. */
#ifndef XGPU_POLLER_H
#define XGPU_POLLER_H

#include "executor.h"

/* Serves the domain's channels until xgpud stops the executor, or a fault
 * ends its device context; returns the process's exit status. */
int xgpu_poller_run(struct xgpu_domain *dom);

/* Switches to a restarted xgpud's control page, if the link thread left one
 * in next_ctl: its grant is the one that counts from then on. Wherever the
 * poller waits for the slot, inside a call too, it must look: the old page
 * is nobody's any more, and its grant stays as the old xgpud left it. */
void xgpu_poller_take_ctl(struct xgpu_domain *dom);

#endif
