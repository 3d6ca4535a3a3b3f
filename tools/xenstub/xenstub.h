/* SPDX-License-Identifier: Apache-2.0 */
/* xenstub.h - xgpu-xenstub in-process: an in-memory Xen (xenstore, event
 * channels, grant tables for several domains) served on an AF_UNIX socket
 * from a thread, for unit tests of modules that talk to Xen through
 * xenif.h (point xgpu_*_open_stub() or XGPU_XEN_STUB at the socket). */
#ifndef XGPU_XENSTUB_H
#define XGPU_XENSTUB_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct xgpu_xenstub;

/* Listens on socket_path (replacing a stale socket) and serves from a new
 * thread. Domain 0 always exists. NULL with a message on failure. */
struct xgpu_xenstub *xgpu_xenstub_start(const char *socket_path, char *err, size_t errlen);
/* Stops the thread, closes every connection, removes the socket. */
void xgpu_xenstub_stop(struct xgpu_xenstub *s);
/* One line per connection and domain event to log (NULL: silent, the default). */
void xgpu_xenstub_set_log(struct xgpu_xenstub *s, FILE *log);
/* As xl does: /local/domain/<domid> owned by domid with name and domid
 * keys; fires @introduceDomain. -1 with errno (EEXIST, EINVAL). */
int xgpu_xenstub_introduce(struct xgpu_xenstub *s, uint32_t domid, const char *name);
/* Domain death: closes every connection of domid (unbinding its ports,
 * ending its grants with their notifications), removes
 * /local/domain/<domid>, fires @releaseDomain. -1 with errno (ENOENT). */
int xgpu_xenstub_release(struct xgpu_xenstub *s, uint32_t domid);
/* The next n transaction commits fail with EAGAIN. */
void xgpu_xenstub_fail_transactions(struct xgpu_xenstub *s, unsigned n);
/* malloc'd text, one line per node at and below path in sorted order:
 * `<path> = "<value>" (<perms as xenstore-ls -p>)`. NULL with errno. */
char *xgpu_xenstub_dump(struct xgpu_xenstub *s, const char *path);

#endif
