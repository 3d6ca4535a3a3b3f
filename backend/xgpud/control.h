/* SPDX-License-Identifier: Apache-2.0 */
/* control.h - the control socket's requests (stats, policy, credit). */
#ifndef XGPU_CONTROL_H
#define XGPU_CONTROL_H

#include "core.h"

#include <sys/types.h>

/* Renders the stats object of BRIEF section 4 as viewer may see it; caller
 * frees. */
char *xgpu_control_stats_json(struct xgpud *d, uid_t viewer);
/* Answers a control request on conn (which it takes) on a thread of its own. */
void xgpu_control_spawn(struct xgpud *d, int conn, uid_t uid);
/* Waits for control threads still answering (at shutdown). */
void xgpu_control_drain(void);

#endif
