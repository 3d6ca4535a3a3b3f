/* SPDX-License-Identifier: Apache-2.0 */
/* watchdog.h - the kernel timeout. One thread looks at every domain's
 * oldest unfinished device operation a few times a second; one that has run
 * longer than its domain's timeout gets the domain's context destroyed,
 * which ends its work on the GPU, and the domain's calls fail with
 * cudaErrorLaunchTimeout until its processes exit. */
#ifndef XGPU_WATCHDOG_H
#define XGPU_WATCHDOG_H

#include "core.h"

int xgpu_watchdog_start(struct xgpud *d);
void xgpu_watchdog_stop(struct xgpud *d);

#endif
