/* SPDX-License-Identifier: Apache-2.0 */
/* fdpass.c - SCM_RIGHTS helpers (see fdpass.h). */
#include "fdpass.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

ssize_t xgpu_send_fds(int sock, const void *buf, size_t len, const int *fds, int nfds)
{
	struct iovec iov = {(void *)buf, len};
	union {
		char buf[CMSG_SPACE(sizeof(int) * XGPU_MAX_PASSED_FDS)];
		struct cmsghdr align;
	} ctl;
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
	if (nfds < 0 || nfds > XGPU_MAX_PASSED_FDS) {
		errno = EINVAL;
		return -1;
	}
	if (nfds) {
		memset(&ctl, 0, sizeof ctl);
		msg.msg_control = ctl.buf;
		msg.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
		struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * (size_t)nfds);
	}
	ssize_t n;
	do
		n = sendmsg(sock, &msg, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	return n;
}

void xgpu_close_fds(int *fds, int n)
{
	for (int i = 0; i < n; i++)
		if (fds[i] >= 0) {
			close(fds[i]);
			fds[i] = -1;
		}
}

ssize_t xgpu_recv_fds(int sock, void *buf, size_t len, int *fds, int *nfds, int max_fds, int flags)
{
	struct iovec iov = {buf, len};
	/* Room for more than we keep, so extra descriptors arrive and get closed
	 * instead of being silently dropped by the kernel into MSG_CTRUNC. */
	union {
		char buf[CMSG_SPACE(sizeof(int) * 64)];
		struct cmsghdr align;
	} ctl;
	struct msghdr msg = {
	    .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf, .msg_controllen = sizeof ctl.buf};
	*nfds = 0;
	ssize_t n;
	do
		n = recvmsg(sock, &msg, flags | MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -1;
	int kept = 0;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < count; i++) {
			int fd;
			memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
			if (kept < max_fds && !(msg.msg_flags & (MSG_CTRUNC | MSG_TRUNC)))
				fds[kept++] = fd;
			else
				close(fd);
		}
	}
	if (msg.msg_flags & (MSG_CTRUNC | MSG_TRUNC)) {
		xgpu_close_fds(fds, kept);
		errno = EMSGSIZE;
		return -1;
	}
	*nfds = kept;
	return n;
}
