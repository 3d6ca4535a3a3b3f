/* SPDX-License-Identifier: Apache-2.0 */
/* daemon.h - bringing the daemon up (driver, GPUs, schedulers) and down. */
#ifndef XGPU_DAEMON_H
#define XGPU_DAEMON_H

#include "core.h"

#include <stddef.h>

struct xgpu_transport_host;

int xgpud_init(struct xgpud *d, char *err, size_t errlen);
void xgpud_shutdown(struct xgpud *d);
/* The up-calls the transports make into d (transport/host.h); host keeps
 * pointing at d, so d must outlive every transport given it. */
void xgpud_transport_host(struct xgpud *d, struct xgpu_transport_host *host);

#endif
