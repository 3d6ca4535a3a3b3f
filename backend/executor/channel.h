/* SPDX-License-Identifier: Apache-2.0 */
/* channel.h - ending a channel: releasing what its process holds. */
#ifndef XGPU_CHANNEL_H
#define XGPU_CHANNEL_H

#include "executor.h"

/* channel.c (poller thread): release_objects frees every device object the
 * channel's process holds; teardown also closes the channel and frees it. */
void xgpu_channel_release_objects(struct xgpu_channel *ch);
void xgpu_channel_teardown(struct xgpu_channel *ch);

#endif
