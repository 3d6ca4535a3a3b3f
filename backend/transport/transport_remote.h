/* SPDX-License-Identifier: Apache-2.0 */
/* transport_remote.h - xgpud's remote transport: guests on other hosts over
 * TCP (TLS 1.3 with pre-shared keys or certificates), each served like a local guest. */
#ifndef XGPU_TRANSPORT_REMOTE_H
#define XGPU_TRANSPORT_REMOTE_H

#include <stdbool.h>
#include <stddef.h>

struct xgpu_remote_listener;

/* How guests prove who they are: pre-shared keys (psk_file, one line per
 * tenant), certificates (cert_file and key_file, this host's, and ca_file,
 * the CA that signs the guests'), or both; all NULL: plain TCP (the caller
 * allows that only for --remote-insecure). */
struct xgpu_remote_auth {
	const char *psk_file;
	const char *cert_file, *key_file, *ca_file;
	bool zerocopy; /* plain TCP: bulk bytes sent with MSG_ZEROCOPY */
};

/* Listens on addr ("host:port", "[v6]:port" or ":port" for every address).
 * Each connection is served on threads of its own: once authenticated, its
 * channel reaches the daemon through local_socket as a local guest's does,
 * with a region and socket this process makes, in the domain "remote-NAME",
 * NAME being the identity the handshake proved (its key's identity, or its
 * certificate's common name; a guest naming another domain is refused).
 * NULL with the reason in err. */
struct xgpu_remote_listener *xgpu_remote_listen(const char *addr, const struct xgpu_remote_auth *auth,
						const char *local_socket, char *err, size_t errlen);
/* How many tenants' keys it holds (0: plain). */
unsigned xgpu_remote_key_count(const struct xgpu_remote_listener *l);
/* Whether it takes certificates. */
bool xgpu_remote_has_cert(const struct xgpu_remote_listener *l);
/* Reads auth's files again (an operator's SIGHUP to xgpud): a rotated
 * certificate, a CA file with a new revocation list, keys added or taken
 * away. Connections made from then on use them; those up keep the
 * credentials their handshake used. With the same kinds of credentials as
 * at the start only. 0, or -1 with the reason in err, the old credentials
 * kept. */
int xgpu_remote_reload(struct xgpu_remote_listener *l, const struct xgpu_remote_auth *auth, char *err,
		       size_t errlen);
/* Stops accepting and ends every remote channel. */
void xgpu_remote_close(struct xgpu_remote_listener *l);

#endif
