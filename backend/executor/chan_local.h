/* SPDX-License-Identifier: Apache-2.0 */
/* chan_local.h - a local guest's channel as its executor serves it. */
#ifndef XGPU_CHAN_LOCAL_H
#define XGPU_CHAN_LOCAL_H

#include "executor.h"

#include <stddef.h>

/* A channel over the guest's socket and region memfd, both checked by xgpud
 * at the handshake and checked again here (the region is mapped and laid
 * out anew). Takes sock on success (the caller keeps memfd); NULL with the
 * reason in err otherwise. */
struct xgpu_channel *xgpu_chan_local_open(struct xgpu_domain *dom, uint32_t id, const struct xgpu_link_channel *lc,
					  int sock, int memfd, char *err, size_t errlen);

#endif
