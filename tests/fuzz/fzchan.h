/* SPDX-License-Identifier: Apache-2.0 */
/* fzchan.h - what the harnesses that drive the dispatcher share: a real
 * executor's domain in this process (over the instrumented simulated
 * driver, the slot always granted), and one channel whose region lives in
 * this process, attached afresh for each input and released at its end as
 * when a guest process exits. */
#ifndef XGPU_FZCHAN_H
#define XGPU_FZCHAN_H

#include "channel.h"
#include "shm.h"

#define FZ_DATA_SIZE (256u << 10) /* each direction's data area */

struct fz_chan {
	struct xgpu_channel ch;  /* the daemon's side */
	struct xgpu_shm_view fv; /* the guest's side */
};

/* The executor and its domain; exits with a message naming who on failure. */
void fz_daemon_init(const char *who);

/* A channel on a zeroed region, ready for xgpu_dispatch. */
void fz_chan_open(struct fz_chan *c);

/* Releases the channel's objects, and the domain's context if this input
 * broke it, so nothing carries to the next input. */
void fz_chan_close(struct fz_chan *c);

#endif
