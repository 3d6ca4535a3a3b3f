/* SPDX-License-Identifier: Apache-2.0 */
/* chan_local.c - a local guest's channel as its executor serves it: the
 * region memfd mapped here, signals as one-byte messages on the guest's
 * SOCK_SEQPACKET socket (sent and received with MSG_DONTWAIT, so no flag the
 * guest sets on a shared descriptor can make the executor block), and host
 * segments (pinned memory) that arrive on the same socket as sealed memfds.
 *
 * xgpud accepted the connection, checked the guest's identity and region
 * and handed both descriptors over (execlink.h); the guest then talks to
 * this process alone, so its liveness no longer depends on xgpud.
 */
#include "chan_local.h"

#include "fdpass.h"
#include "log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_UNCLAIMED_SEGMENTS 16
/* Messages handled per wake-up: a guest that floods its socket costs only
 * its own poller's time, in bounded slices. */
#define SERVICE_BUDGET 256

struct seg_pending {
	uint64_t token, size;
	int fd;
};

struct local_be {
	int sock;
	struct seg_pending pending[MAX_UNCLAIMED_SEGMENTS];
	int npending;
};

static struct local_be *lb(struct xgpu_channel *ch)
{
	return ch->tpriv;
}

static void be_kick(struct xgpu_channel *ch)
{
	static const char kick = 'k';
	/* A full socket buffer means kicks are already pending. */
	send(lb(ch)->sock, &kick, 1, MSG_DONTWAIT | MSG_NOSIGNAL);
}

static int be_wait_fd(struct xgpu_channel *ch)
{
	return lb(ch)->sock;
}

static bool be_service(struct xgpu_channel *ch)
{
	struct local_be *b = lb(ch);
	for (int budget = SERVICE_BUDGET; budget > 0; budget--) {
		struct xgpu_seg_msg msg;
		int fds[1], nfds = 0;
		ssize_t n = xgpu_recv_fds(b->sock, &msg, sizeof msg, fds, &nfds, 1, MSG_DONTWAIT);
		if (n < 0)
			return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
		if (n == 0)
			return false; /* the process is gone */
		if (n == 1 && nfds == 0)
			continue; /* a kick: the caller looks at the rings next */
		if (n != (ssize_t)sizeof msg || nfds != 1 || msg.magic != XGPU_PROTO_MAGIC ||
		    b->npending == MAX_UNCLAIMED_SEGMENTS) {
			xgpu_close_fds(fds, nfds);
			dlog_warn(ch->dom, "domain %s: channel %u sent an invalid out-of-band message; closing it",
				  ch->dom->name, ch->id);
			return false;
		}
		b->pending[b->npending++] = (struct seg_pending){msg.token, msg.size, fds[0]};
	}
	return true;
}

/* Takes the pending segment named token out of the table; -1 if none. */
static int claim(struct local_be *b, uint64_t token, struct seg_pending *out)
{
	for (int i = 0; i < b->npending; i++)
		if (b->pending[i].token == token) {
			*out = b->pending[i];
			b->pending[i] = b->pending[--b->npending];
			return 0;
		}
	return -1;
}

static int be_import_segment(struct xgpu_channel *ch, uint64_t token, uint64_t size, void **ptr, char *err,
			     size_t errlen)
{
	struct local_be *b = lb(ch);
	struct seg_pending p;
	/* The frontend sends the fd before the request that names it, so it
	 * is in the socket already if we have not read it yet. */
	if (claim(b, token, &p) < 0 && (!be_service(ch) || claim(b, token, &p) < 0)) {
		snprintf(err, errlen, "no segment with that token was shared");
		return -1;
	}
	int r = -1;
	if (p.size != size) {
		snprintf(err, errlen, "segment announced %llu bytes, request says %llu", (unsigned long long)p.size,
			 (unsigned long long)size);
	} else if (xgpu_shm_check_memfd(p.fd, size, err, errlen) == 0) {
		void *m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, p.fd, 0);
		if (m == MAP_FAILED) {
			snprintf(err, errlen, "cannot map it: %s", strerror(errno));
		} else {
			*ptr = m;
			r = 0;
		}
	}
	close(p.fd);
	return r;
}

static void be_drop_segment(struct xgpu_channel *ch, uint64_t token)
{
	struct local_be *b = lb(ch);
	struct seg_pending p;
	be_service(ch);
	if (claim(b, token, &p) == 0)
		close(p.fd);
}

static void be_release_segment(struct xgpu_channel *ch, void *ptr, uint64_t size)
{
	(void)ch;
	munmap(ptr, size);
}

static void be_close(struct xgpu_channel *ch)
{
	struct local_be *b = lb(ch);
	for (int i = 0; i < b->npending; i++)
		close(b->pending[i].fd);
	close(b->sock);
	if (ch->region)
		munmap(ch->region, ch->region_size);
	free(b);
	ch->tpriv = NULL;
}

static const struct xgpu_be_transport_ops local_ops = {
    .name = "local",
    .kick = be_kick,
    .wait_fd = be_wait_fd,
    .service = be_service,
    .import_segment = be_import_segment,
    .drop_segment = be_drop_segment,
    .release_segment = be_release_segment,
    .close = be_close,
};

struct xgpu_channel *xgpu_chan_local_open(struct xgpu_domain *dom, uint32_t id, const struct xgpu_link_channel *lc,
					  int sock, int memfd, char *err, size_t errlen)
{
	uint64_t size = lc->region_size;
	if (size == 0 || size > XGPU_SHM_MAX_REGION || xgpu_shm_check_memfd(memfd, size, err, errlen) < 0) {
		if (size == 0 || size > XGPU_SHM_MAX_REGION)
			snprintf(err, errlen, "region of %llu bytes", (unsigned long long)size);
		return NULL;
	}
	void *region = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
	if (region == MAP_FAILED) {
		snprintf(err, errlen, "cannot map the region: %s", strerror(errno));
		return NULL;
	}
	struct xgpu_channel *ch = calloc(1, sizeof *ch);
	struct local_be *b = calloc(1, sizeof *b);
	char why[192];
	if (!ch || !b) {
		snprintf(err, errlen, "out of memory");
	} else if (xgpu_shm_attach(region, size, &ch->v, why, sizeof why) < 0) {
		snprintf(err, errlen, "region refused: %s", why);
	} else {
		b->sock = sock;
		ch->dom = dom;
		ch->id = id;
		ch->task = lc->task;
		ch->pid = lc->pid;
		ch->uid = lc->uid;
		ch->ops = &local_ops;
		ch->tpriv = b;
		ch->region = region;
		ch->region_size = size;
		return ch;
	}
	munmap(region, size);
	free(ch);
	free(b);
	return NULL;
}
