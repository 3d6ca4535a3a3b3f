/* SPDX-License-Identifier: Apache-2.0 */
/* link.h - the executor's side of its link to xgpud (execlink.h). */
#ifndef XGPU_EXEC_LINK_H
#define XGPU_EXEC_LINK_H

#include "executor.h"

#include <stddef.h>

/* Reads xgpud's START from the inherited link and sets up x->dom with the
 * shared pages and eventfds it names. 0, or -1 with the reason in err. */
int xgpu_link_start(struct xgpu_executor *x, char *err, size_t errlen);
/* Tells xgpud the executor serves now (what says on what), and starts the
 * link thread. 0, or -1 with the reason in err. */
int xgpu_link_run(struct xgpu_executor *x, const char *what, char *err, size_t errlen);
/* Stops the link thread (after the poller returned). */
void xgpu_link_stop(struct xgpu_executor *x);

/* From the poller: a channel ended (after its teardown), the domain's
 * context failed (the executor exits next). */
void xgpu_link_closed(struct xgpu_executor *x, uint32_t id, const char *why);
void xgpu_link_fault(struct xgpu_executor *x, int code, const char *what);
/* From the poller, before it frees ch: the link thread forgets it. */
void xgpu_link_unlist_channel(struct xgpu_executor *x, struct xgpu_channel *ch);

#endif
