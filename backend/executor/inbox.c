/* SPDX-License-Identifier: Apache-2.0 */
/* inbox.c - new channels and wake-ups for the poller (inbox.h). */
#include "inbox.h"

#include "log.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

void xgpu_inbox_wake(struct xgpu_domain *dom)
{
	uint64_t one = 1;
	if (write(dom->wake_fd, &one, sizeof one) < 0 && errno != EAGAIN)
		xlog_err("domain %s: cannot wake its poller: %s", dom->name, strerror(errno));
}

void xgpu_inbox_add_channel(struct xgpu_domain *dom, struct xgpu_channel *ch)
{
	pthread_mutex_lock(&dom->incoming_lock);
	ch->next = dom->incoming;
	dom->incoming = ch;
	pthread_mutex_unlock(&dom->incoming_lock);
	xgpu_inbox_wake(dom);
}

struct xgpu_channel *xgpu_inbox_take(struct xgpu_domain *dom)
{
	/* A racy peek keeps the lock off the busy loop; a channel missed now
	 * is taken on the next pass, and its arrival wakes the poller anyway. */
	if (!__atomic_load_n(&dom->incoming, __ATOMIC_RELAXED))
		return NULL;
	pthread_mutex_lock(&dom->incoming_lock);
	struct xgpu_channel *list = dom->incoming;
	dom->incoming = NULL;
	pthread_mutex_unlock(&dom->incoming_lock);
	return list;
}
