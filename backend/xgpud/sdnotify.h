/* SPDX-License-Identifier: Apache-2.0 */
/* sdnotify.h - tells a service manager (systemd's Type=notify) how xgpud is
 * doing, through $NOTIFY_SOCKET. */
#ifndef XGPU_SDNOTIFY_H
#define XGPU_SDNOTIFY_H

/* Sends state ("READY=1", "STOPPING=1", newline-separated assignments) to
 * $NOTIFY_SOCKET. Returns 1 when sent, 0 without $NOTIFY_SOCKET, -1 (errno
 * set) when it could not be sent. */
int xgpu_sd_notify(const char *state);

#endif
