/* SPDX-License-Identifier: Apache-2.0 */
/* hypsrc_xenpatch.h - ways into the `xenpatch` hypervisor schedule source
 * other than --hyp-source: over another mapping of the export (a test
 * writer's memory) and with another stock-Xen fallback behind it. */
#ifndef XGPU_HYPSRC_XENPATCH_H
#define XGPU_HYPSRC_XENPATCH_H

#include "hypsrc.h"
#include "hypsrc_xen.h"
#include "reader.h"

/* xgpu_hyp_xenpatch.open with the export mapped through map (ctx for its
 * open) and, when the export is absent, the `xen` source over xenctl. */
int xgpu_hyp_xenpatch_open_with(const struct xgpu_schedexp_map_ops *map, void *ctx,
				const struct xgpu_xenctl_ops *xenctl, const char *args, struct xgpu_hyp **out,
				char *err, size_t errlen);
/* Over a memory region laid out as the export (no fallback). */
int xgpu_hyp_xenpatch_open_mem(const void *base, size_t len, struct xgpu_hyp **out, char *err, size_t errlen);
/* Whether the handle fell back to the stock `xen` source. */
bool xgpu_hyp_xenpatch_fell_back(struct xgpu_hyp *h);

#endif
