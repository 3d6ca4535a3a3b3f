/* SPDX-License-Identifier: Apache-2.0 */
/* transport_remote.h - xgpud's remote transport: guests on other hosts over
 * TCP (TLS 1.3 with a pre-shared key), each served like a local guest. */
#ifndef XGPU_TRANSPORT_REMOTE_H
#define XGPU_TRANSPORT_REMOTE_H

#include <stdbool.h>
#include <stddef.h>

struct xgpu_remote_listener;

/* Listens on addr ("host:port", "[v6]:port" or ":port" for every address)
 * with the keys in psk_file (one line per tenant), or in plain TCP when psk_file is NULL (the
 * caller allows that only for --remote-insecure). Each connection is served
 * on threads of its own: once authenticated, its channel reaches the daemon
 * through local_socket as a local guest's does, with a region and socket
 * this process makes, in the domain "remote-NAME", NAME being the identity
 * of the key it proved (a guest naming another domain is refused). NULL
 * with the reason in err. */
struct xgpu_remote_listener *xgpu_remote_listen(const char *addr, const char *psk_file,
						const char *local_socket, char *err, size_t errlen);
/* How many tenants' keys it holds (0: plain). */
unsigned xgpu_remote_key_count(const struct xgpu_remote_listener *l);
/* Stops accepting and ends every remote channel. */
void xgpu_remote_close(struct xgpu_remote_listener *l);

#endif
