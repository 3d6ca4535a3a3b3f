/* SPDX-License-Identifier: Apache-2.0 */
/* inbox.h - what reaches the poller from the executor's other threads: new
 * channels and wake-ups (a grant, a request from xgpud, stop). */
#ifndef XGPU_INBOX_H
#define XGPU_INBOX_H

#include "executor.h"

/* Hands a channel to the poller. */
void xgpu_inbox_add_channel(struct xgpu_domain *dom, struct xgpu_channel *ch);
/* Wakes the poller. */
void xgpu_inbox_wake(struct xgpu_domain *dom);
/* The poller: the channels handed over since it last looked, or NULL. */
struct xgpu_channel *xgpu_inbox_take(struct xgpu_domain *dom);

#endif
