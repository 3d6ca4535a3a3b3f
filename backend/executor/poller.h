/* SPDX-License-Identifier: Apache-2.0 */
/* poller.h - the domain's accelerator VCPU: the executor's main loop. */
#ifndef XGPU_POLLER_H
#define XGPU_POLLER_H

#include "executor.h"

/* Serves the domain's channels until xgpud stops the executor, or a fault
 * ends its device context; returns the process's exit status. */
int xgpu_poller_run(struct xgpu_domain *dom);

#endif
