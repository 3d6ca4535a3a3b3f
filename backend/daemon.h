/* daemon.h - bringing the daemon up (driver, GPUs, schedulers) and down. */
#ifndef XGPU_DAEMON_H
#define XGPU_DAEMON_H

#include "core.h"

#include <stddef.h>

int xgpud_init(struct xgpud *d, char *err, size_t errlen);
void xgpud_shutdown(struct xgpud *d);

#endif
