/* SPDX-License-Identifier: Apache-2.0 */
/* dispatch.h - running one guest request. */
#ifndef XGPU_EXEC_DISPATCH_H
#define XGPU_EXEC_DISPATCH_H

#include "executor.h"

#include <stdbool.h>
#include <stdint.h>

/* dispatch.c: runs one request copied out of the ring. */
void xgpu_dispatch(struct xgpu_channel *ch, const uint8_t *slot);
/* Kicks the guest if an answer published, or a request slot freed, since the
 * last flush crossed its threshold: both happen without that check (which
 * waits for the answer's store to reach the spinning guest, and costs a
 * locked instruction on the request's way), so the poller calls this once it
 * is done with a channel, and xgpu_dispatch before each call. */
void xgpu_dispatch_flush(struct xgpu_channel *ch);
/* Whether the request in slot may run without the GPU slot. */
bool xgpu_dispatch_exempt(const uint8_t *slot);

#endif
