/* SPDX-License-Identifier: Apache-2.0 */
/* execlink.c - the link between xgpud and an executor (execlink.h): its
 * messages, the two shared pages and where an executor listens. */
#include "execlink.h"

#include "fdpass.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

int xgpu_link_send(int sock, uint32_t type, struct xgpu_link_msg *msg, const int *fds, int nfds)
{
	msg->magic = XGPU_EXEC_MAGIC;
	msg->type = type;
	msg->text[XGPU_LINK_TEXT - 1] = '\0';
	ssize_t n = xgpu_send_fds(sock, msg, sizeof *msg, fds, nfds);
	if (n == (ssize_t)sizeof *msg)
		return 0;
	if (n >= 0)
		errno = EMSGSIZE;
	return -1;
}

int xgpu_link_recv(int sock, struct xgpu_link_msg *msg, int *fds, int *nfds, int max_fds, bool nonblock)
{
	*nfds = 0;
	ssize_t n = xgpu_recv_fds(sock, msg, sizeof *msg, fds, nfds, max_fds, nonblock ? MSG_DONTWAIT : 0);
	if (n <= 0)
		return n == 0 ? 0 : -1;
	if (n != (ssize_t)sizeof *msg || msg->magic != XGPU_EXEC_MAGIC) {
		xgpu_close_fds(fds, *nfds);
		*nfds = 0;
		errno = EPROTO;
		return -1;
	}
	msg->text[XGPU_LINK_TEXT - 1] = '\0';
	return 1;
}

void *xgpu_exec_page_map(int fd, bool writable)
{
	void *p = mmap(NULL, XGPU_EXEC_PAGE_BYTES, PROT_READ | (writable ? PROT_WRITE : 0), MAP_SHARED, fd, 0);
	return p == MAP_FAILED ? NULL : p;
}

int xgpu_exec_page_create(const char *name, bool seal_writes, void **page)
{
	int fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return -1;
	void *p = NULL;
	if (ftruncate(fd, XGPU_EXEC_PAGE_BYTES) < 0 || !(p = xgpu_exec_page_map(fd, true)))
		goto fail;
	/* Both kinds start with magic and version. */
	((uint32_t *)p)[0] = XGPU_EXEC_MAGIC;
	((uint32_t *)p)[1] = XGPU_EXEC_VERSION;
	/* Our mapping stays writable; nobody can add one (nor resize it, so
	 * no reader's mapping can fault). */
	unsigned seals = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL | (seal_writes ? F_SEAL_FUTURE_WRITE : 0);
	if (fcntl(fd, F_ADD_SEALS, seals) < 0)
		goto fail;
	*page = p;
	return fd;
fail:
	if (p)
		munmap(p, XGPU_EXEC_PAGE_BYTES);
	close(fd);
	return -1;
}

int xgpu_exec_socket_dir(const char *xgpud_socket, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%s.exec", xgpud_socket);
	return n > 0 && (size_t)n < len ? 0 : -1;
}

int xgpu_exec_socket_path(const char *xgpud_socket, uint32_t domid, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%s.exec/%u", xgpud_socket, domid);
	return n > 0 && (size_t)n < len ? 0 : -1;
}
