/* SPDX-License-Identifier: Apache-2.0 */
/* transport_local.h - xgpud's local transport (UNIX socket, memfd). */
#ifndef XGPU_TRANSPORT_LOCAL_H
#define XGPU_TRANSPORT_LOCAL_H

#include "host.h"

#include <stdbool.h>
#include <stddef.h>

struct xgpu_local_listener;

/* Listens on path (replacing a stale socket file, refusing if another daemon
 * answers there) and registers with the main loop's epfd: the events it
 * registers carry data.ptr values that xgpu_local_owns recognises. Clients
 * reach the daemon through host, which must outlive the listener. Returns
 * NULL with err set on failure. */
struct xgpu_local_listener *xgpu_local_listen(const struct xgpu_transport_host *host, const char *path,
					      int epfd, char *err, size_t errlen);
bool xgpu_local_owns(const struct xgpu_local_listener *l, const void *ptr);
/* An epoll event for ptr: accepts new connections, or reads a hello and
 * hands the channel to its domain or the request to the control path. */
void xgpu_local_event(struct xgpu_local_listener *l, void *ptr);
/* Drops connections that did not send their hello in time. */
void xgpu_local_expire(struct xgpu_local_listener *l);
void xgpu_local_close(struct xgpu_local_listener *l);

#endif
