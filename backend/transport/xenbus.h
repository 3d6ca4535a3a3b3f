/* SPDX-License-Identifier: Apache-2.0 */
/* xenbus.h - xgpud's side of the vgpu split device over xenstore (main
 * thread): adopting devices that `xl-gpu attach` wrote, walking each
 * channel's handshake (xenvgpu.h), applying credit/sla/mem-limit and policy
 * keys live, and sweeping the state of domains that died. */
#ifndef XGPU_XENBUS_H
#define XGPU_XENBUS_H

#include "host.h"

#include <stddef.h>

struct xgpu_xenbus;

/* Opens xenstore (and checks that event channels and grant tables can be
 * opened), registers the watches. Domains, channels and live settings reach
 * the daemon through host, which must outlive the xenbus. NULL with a
 * message that names what is missing. */
struct xgpu_xenbus *xgpu_xenbus_open(const struct xgpu_transport_host *host, char *err, size_t errlen);
/* The fds the main loop waits on (2): xenstore's watch fd and the queue of
 * channels the pollers closed. When either is readable, call
 * xgpu_xenbus_process. */
int xgpu_xenbus_fds(const struct xgpu_xenbus *x, int fds[2]);
/* Handles every queued watch event and closed channel, without blocking. */
void xgpu_xenbus_process(struct xgpu_xenbus *x);
/* After xgpud_shutdown (the pollers have closed every channel): tidies
 * xenstore for the closed channels and frees everything. */
void xgpu_xenbus_close(struct xgpu_xenbus *x);

#endif
