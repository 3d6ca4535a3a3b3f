/* SPDX-License-Identifier: Apache-2.0 */
/* daemon.h - bringing the daemon up (driver, GPUs, schedulers, executors)
 * and down. */
#ifndef XGPU_DAEMON_H
#define XGPU_DAEMON_H

#include "core.h"

#include <stdbool.h>
#include <stddef.h>

struct xgpu_transport_host;

int xgpud_init(struct xgpud *d, char *err, size_t errlen);
/* keep_executors: restarting in place; the executors go on serving their
 * guests for the next xgpud to adopt. Otherwise they are stopped. */
void xgpud_shutdown(struct xgpud *d, bool keep_executors);
/* Restores the domains the previous xgpud left (its state file) and adopts
 * their executors; returns how many executors. */
int xgpud_adopt(struct xgpud *d);
/* The up-calls the transports make into d (transport/host.h); host keeps
 * pointing at d, so d must outlive every transport given it. */
void xgpud_transport_host(struct xgpud *d, struct xgpu_transport_host *host);

#endif
