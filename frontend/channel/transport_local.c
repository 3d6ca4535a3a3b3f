/* SPDX-License-Identifier: Apache-2.0 */
/* transport_local.c - the frontend's local transport: the channel region and
 * host segments are sealed memfds sent to xgpud over its AF_UNIX
 * SOCK_SEQPACKET socket with SCM_RIGHTS. The socket stays open for the
 * channel's life and carries the signals both ways as one-byte messages; its
 * hang-up is how each side learns that the other is gone. */
#include "transport.h"

#include "fdpass.h"
#include "util.h"

#include <cuda_runtime_api.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

struct local_chan {
	int sock;
	uint64_t next_token;
};

static const unsigned seals = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL;

/* A sealed, shared, zeroed memfd of size bytes, mapped. The seals let the
 * daemon trust the size: we cannot shrink it under its mapping. */
static int sealed_memfd(const char *name, size_t size, void **map)
{
	int fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return -1;
	if (ftruncate(fd, (off_t)size) < 0 || fcntl(fd, F_ADD_SEALS, seals) < 0) {
		close(fd);
		return -1;
	}
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		close(fd);
		return -1;
	}
	*map = p;
	return fd;
}

static int recv_ack(int sock, struct xgpu_hello_ack *ack, int timeout_ms)
{
	struct pollfd pfd = {sock, POLLIN, 0};
	int r;
	do
		r = poll(&pfd, 1, timeout_ms);
	while (r < 0 && errno == EINTR);
	if (r <= 0)
		return -1;
	memset(ack, 0, sizeof *ack);
	ssize_t n;
	do
		n = recv(sock, ack, sizeof *ack, 0);
	while (n < 0 && errno == EINTR);
	/* An older or newer daemon may send a different size; magic and
	 * version come first so we can still explain the mismatch. */
	return n >= 8 ? 0 : -1;
}

static int local_open(struct xgpu_fe_chan *ch, size_t region_size, int (*init)(void *, size_t, void *),
		      void *init_arg, const struct xgpu_hello *hello, struct xgpu_hello_ack *ack, char *err,
		      size_t errlen)
{
	char pathbuf[256];
	const char *path = xgpu_socket_path(NULL, pathbuf, sizeof pathbuf);
	struct local_chan *lc = calloc(1, sizeof *lc);
	void *region = NULL;
	int memfd = -1;
	int status = cudaErrorNoDevice;
	if (!lc) {
		snprintf(err, errlen, "out of memory");
		return cudaErrorMemoryAllocation;
	}
	lc->sock = -1;

	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	if (strlen(path) >= sizeof sa.sun_path) {
		snprintf(err, errlen, "socket path %s is too long", path);
		goto fail;
	}
	strcpy(sa.sun_path, path);
	lc->sock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (lc->sock < 0 || connect(lc->sock, (struct sockaddr *)&sa, sizeof sa) < 0) {
		snprintf(err, errlen,
			 "cannot reach xgpud at %s: %s (is xgpud running? XGPU_SOCKET names its socket)",
			 path, strerror(errno));
		goto fail;
	}
	memfd = sealed_memfd("xgpu-channel", region_size, &region);
	if (memfd < 0) {
		snprintf(err, errlen, "cannot create the channel's shared memory: %s", strerror(errno));
		status = cudaErrorMemoryAllocation;
		goto fail;
	}
	if (init(region, region_size, init_arg) < 0) {
		snprintf(err, errlen, "cannot lay out a channel region of %zu bytes", region_size);
		status = cudaErrorInvalidValue;
		goto fail;
	}
	if (xgpu_send_fds(lc->sock, hello, sizeof *hello, &memfd, 1) != (ssize_t)sizeof *hello) {
		snprintf(err, errlen, "cannot send the handshake to xgpud at %s: %s", path, strerror(errno));
		goto fail;
	}
	close(memfd);
	memfd = -1;
	if (recv_ack(lc->sock, ack, 10000) < 0) {
		snprintf(err, errlen, "xgpud at %s did not answer the handshake", path);
		goto fail;
	}
	char peer[300];
	snprintf(peer, sizeof peer, "%s is not an xgpud socket", path);
	if ((status = xgpu_fe_check_ack(ack, peer, err, errlen)) != 0)
		goto fail;
	ch->region = region;
	ch->region_size = region_size;
	ch->priv = lc;
	return 0;
fail:
	if (memfd >= 0)
		close(memfd);
	if (region)
		munmap(region, region_size);
	if (lc->sock >= 0)
		close(lc->sock);
	free(lc);
	return status;
}

static void local_kick(struct xgpu_fe_chan *ch)
{
	struct local_chan *lc = ch->priv;
	static const char kick = 'k';
	/* A full socket buffer means kicks are already pending. */
	send(lc->sock, &kick, 1, MSG_DONTWAIT | MSG_NOSIGNAL);
}

static enum xgpu_wait_result local_wait(struct xgpu_fe_chan *ch, int timeout_ms, bool answer)
{
	(void)answer;
	struct local_chan *lc = ch->priv;
	struct pollfd pfd = {lc->sock, POLLIN, 0};
	int r = poll(&pfd, 1, timeout_ms);
	if (r < 0)
		return errno == EINTR ? XGPU_WAIT_KICKED : XGPU_WAIT_PEER_GONE;
	if (r == 0)
		return XGPU_WAIT_TIMEOUT;
	/* The daemon sends nothing but kicks after the handshake. */
	for (int budget = 256; budget > 0; budget--) {
		char buf[16];
		ssize_t n = recv(lc->sock, buf, sizeof buf, MSG_DONTWAIT);
		if (n == 0)
			return XGPU_WAIT_PEER_GONE;
		if (n < 0)
			return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR
				   ? XGPU_WAIT_KICKED
				   : XGPU_WAIT_PEER_GONE;
	}
	return XGPU_WAIT_KICKED;
}

static int local_share_segment(struct xgpu_fe_chan *ch, size_t size, void **ptr, uint64_t *token)
{
	struct local_chan *lc = ch->priv;
	void *map;
	int fd = sealed_memfd("xgpu-pinned", size, &map);
	if (fd < 0)
		return cudaErrorMemoryAllocation;
	struct xgpu_seg_msg msg = {.magic = XGPU_PROTO_MAGIC, .token = ++lc->next_token, .size = size};
	ssize_t n = xgpu_send_fds(lc->sock, &msg, sizeof msg, &fd, 1);
	close(fd);
	if (n != (ssize_t)sizeof msg) {
		munmap(map, size);
		return cudaErrorDevicesUnavailable;
	}
	*ptr = map;
	*token = msg.token;
	return 0;
}

static void local_unshare_segment(struct xgpu_fe_chan *ch, void *ptr, size_t size)
{
	munmap(ptr, size);
}

static void local_close(struct xgpu_fe_chan *ch)
{
	struct local_chan *lc = ch->priv;
	if (!lc)
		return;
	close(lc->sock);
	if (ch->region)
		munmap(ch->region, ch->region_size);
	free(lc);
	ch->priv = NULL;
	ch->region = NULL;
}

static void local_abandon(struct xgpu_fe_chan *ch)
{
	/* The parent still owns the channel; closing our copies of its
	 * descriptors and mapping does not disturb it. */
	local_close(ch);
}

const struct xgpu_fe_transport_ops xgpu_fe_transport_local = {
    .name = "local",
    .open = local_open,
    .kick = local_kick,
    .wait = local_wait,
    .share_segment = local_share_segment,
    .unshare_segment = local_unshare_segment,
    .close = local_close,
    .abandon = local_abandon,
};
