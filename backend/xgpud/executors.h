/* SPDX-License-Identifier: Apache-2.0 */
/* executors.h - the domains' executor processes as xgpud runs them: starting
 * one when a domain's first channel comes, handing it channels, reading its
 * link and log, ending it (idle, stop, kernel timeout), learning why it
 * ended and telling the domain's processes, and adopting the executors a
 * previous xgpud left running. Main thread only, but for the few readers
 * control.c has (under domains_lock). */
#ifndef XGPU_EXECUTORS_H
#define XGPU_EXECUTORS_H

#include "core.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Sets up the executors' epoll (one fd for the main loop, xgpu_executors_fd)
 * and their sockets' directory. 0, or -1 with the reason in err. */
int xgpu_executors_init(struct xgpud *d, char *err, size_t errlen);
int xgpu_executors_fd(struct xgpud *d);
/* The fd of xgpu_executors_fd is readable: links, logs, exits. */
void xgpu_executors_event(struct xgpud *d);
/* Every quarter second or so: the kernel timeout, idle executors, stops that
 * take too long, the control pages' records. */
void xgpu_executors_tick(struct xgpud *d, uint64_t now);

/* Hands a new channel to dom's executor, starting one if it has none (or
 * only one that is stopping). Takes h's descriptors either way; on success
 * h->ch is the domain's. -1 with the reason in err. */
int xgpu_executors_add_channel(struct xgpud_domain *dom, struct xgpud_handover *h, char *err, size_t errlen);
/* Asks dom's executor to close channel id (a Xen guest's detach). */
void xgpu_executors_close_channel(struct xgpud_domain *dom, uint32_t id, const char *why);
/* An adopted Xen channel n of dom still waiting for the Xen transport
 * (core.h nxfds), or NULL; the transport takes its descriptors. */
struct xgpud_channel *xgpu_executors_take_xen_channel(struct xgpud_domain *dom, uint32_t n);
/* Asks dom's executor to close the adopted Xen channels no transport took. */
void xgpu_executors_close_untaken(struct xgpud_domain *dom, const char *why);
/* Gives dom's executor fd, its end of a new grant broker for adopted Xen
 * channel id (XGPU_LINK_BROKER); fd stays the caller's. -1 with errno. */
int xgpu_executors_hand_broker(struct xgpud_domain *dom, uint32_t id, int fd);
/* A domain's memory limit, now and for its executor. */
void xgpu_executors_set_mem_limit(struct xgpud_domain *dom, uint64_t bytes);
/* Ends dom's executor at once (SIGKILL): end says why, for its processes. */
void xgpu_executors_kill(struct xgpud_domain *dom, enum xgpu_exec_end end, const char *why);
/* A domain leaves: its executor, if any, is killed and forgotten. */
void xgpu_executors_forget(struct xgpud_domain *dom);

/* Stopping xgpud: asks every executor to stop, kills those that have not
 * within a second, and reaps them all; their processes get
 * cudaErrorDevicesUnavailable. */
void xgpu_executors_stop_all(struct xgpud *d, const char *why);
/* Restarting xgpud in place: brings every control page's record up to date
 * and lets go of the executors, which go on serving until the next xgpud
 * adopts them. */
void xgpu_executors_release_all(struct xgpud *d);
/* At start, after the domains of the previous xgpud were restored
 * (state.h): adopts every executor it left running that answers on its
 * socket as the pid it recorded. Returns how many. */
int xgpu_executors_adopt(struct xgpud *d);

/* Readers (control.c, under domains_lock). */
pid_t xgpu_executor_pid(const struct xgpud_domain *dom);
const char *xgpu_executor_state(const struct xgpud_domain *dom);
/* The domain's counters: its earlier executors' plus the running one's. */
void xgpu_executor_stats(const struct xgpud_domain *dom, struct xgpu_dom_stats *out);

#endif
