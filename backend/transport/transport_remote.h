/* SPDX-License-Identifier: Apache-2.0 */
/* transport_remote.h - xgpud's remote transport: guests on other hosts over
 * TCP (TLS 1.3 with a pre-shared key), each served like a local guest. */
#ifndef XGPU_TRANSPORT_REMOTE_H
#define XGPU_TRANSPORT_REMOTE_H

#include <stdbool.h>
#include <stddef.h>

struct xgpu_remote_listener;

/* Listens on addr ("host:port", "[v6]:port" or ":port" for every address)
 * with the key in psk_file, or in plain TCP when psk_file is NULL (the
 * caller allows that only for --remote-insecure). Each connection is served
 * on threads of its own: once authenticated, its channel reaches the daemon
 * through local_socket as a local guest's does, with a region and socket
 * this process makes, in the domain "remote-NAME" (NAME: what the guest
 * asked for, else its key's identity). NULL with the reason in err. */
struct xgpu_remote_listener *xgpu_remote_listen(const char *addr, const char *psk_file,
						const char *local_socket, char *err, size_t errlen);
/* Stops accepting and ends every remote channel. */
void xgpu_remote_close(struct xgpu_remote_listener *l);

#endif
