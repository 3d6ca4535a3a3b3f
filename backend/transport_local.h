/* transport_local.h - xgpud's local transport (UNIX socket, memfd, eventfd). */
#ifndef XGPU_TRANSPORT_LOCAL_H
#define XGPU_TRANSPORT_LOCAL_H

#include "xgpud.h"

#include <stddef.h>

/* Listens on path (replacing a stale socket file, refusing if another daemon
 * answers there). Returns the non-blocking listening fd or -1 with err set. */
int xgpu_local_listen(const char *path, char *err, size_t errlen);
/* Accepts every pending connection: channels are handed to their domains,
 * control requests are answered. */
void xgpu_local_accept(struct xgpud *d, int lfd);

#endif
