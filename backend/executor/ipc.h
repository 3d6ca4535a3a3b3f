/* SPDX-License-Identifier: Apache-2.0 */
/* ipc.h - cuIpcGetMemHandle / OpenMemHandle between processes of one domain
 * (IPC_* in calls.def): the exports and the aliases in the memory map. */
#ifndef XGPU_EXEC_IPC_H
#define XGPU_EXEC_IPC_H

#include "executor.h"

/* The token of base exported by owner, made on first export; 0 if out of
 * memory. */
uint64_t xgpu_ipc_export(struct xgpu_domain *dom, struct xgpu_channel *owner, uint64_t base);
/* The exporter of base under token, or NULL. */
struct xgpu_channel *xgpu_ipc_exporter(const struct xgpu_domain *dom, uint64_t base, uint64_t token);
/* base was freed: its exports and every alias of it go. */
void xgpu_ipc_forget(struct xgpu_domain *dom, uint64_t base);
/* ch is ending: its aliases go, and its allocations' exports and aliases. */
void xgpu_ipc_release_channel(struct xgpu_domain *dom, struct xgpu_channel *ch);

#endif
