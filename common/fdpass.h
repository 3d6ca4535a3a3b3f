/* SPDX-License-Identifier: Apache-2.0 */
/* fdpass.h - sending and receiving file descriptors with a message over an
 * AF_UNIX socket (SCM_RIGHTS), as the local transport does for channel
 * regions, eventfds and host segments. */
#ifndef XGPU_FDPASS_H
#define XGPU_FDPASS_H

#include <stddef.h>
#include <sys/types.h>

#define XGPU_MAX_PASSED_FDS 4

/* Sends len bytes and nfds descriptors in one message. Returns bytes sent or -1. */
ssize_t xgpu_send_fds(int sock, const void *buf, size_t len, const int *fds, int nfds);

/* Receives one message into buf and up to max_fds descriptors (close-on-exec).
 * Descriptors beyond max_fds, or any that arrived with a truncated message,
 * are closed, never leaked. *nfds is set to the number kept. Returns bytes
 * received (0 at end of stream) or -1 with errno set. */
ssize_t xgpu_recv_fds(int sock, void *buf, size_t len, int *fds, int *nfds, int max_fds, int flags);

/* Closes fds[0..n) that are >= 0 and sets them to -1. */
void xgpu_close_fds(int *fds, int n);

#endif
