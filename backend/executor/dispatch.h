/* SPDX-License-Identifier: Apache-2.0 */
/* dispatch.h - running one guest request. */
#ifndef XGPU_EXEC_DISPATCH_H
#define XGPU_EXEC_DISPATCH_H

#include "executor.h"

#include <stdbool.h>
#include <stdint.h>

/* dispatch.c: runs one request copied out of the ring. */
void xgpu_dispatch(struct xgpu_channel *ch, const uint8_t *slot);
/* Whether the request in slot may run without the GPU slot. */
bool xgpu_dispatch_exempt(const uint8_t *slot);

#endif
