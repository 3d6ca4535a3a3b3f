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

/* Event handles (IPC_EVENT_* in calls.def). An interprocess event's CUevent
 * is shared by its creator's object and every opener's; it is destroyed with
 * the last of them, so neither an opener's cuEventDestroy nor its exit
 * reaches the creator's event, and an opener keeps a working event after
 * the creator destroyed its own (as CUDA keeps it). */

/* o's token, made on its first export; 0 if out of memory. */
uint64_t xgpu_ipc_event_export(struct xgpu_obj *o);
/* The event object that handle names in the domain's table if it was
 * exported under token, or NULL. */
struct xgpu_obj *xgpu_ipc_event_find(struct xgpu_domain *dom, xgpu_handle_t handle, uint64_t token);
/* o gives up its CUevent: destroyed unless another object still shares it.
 * The caller deletes o from the table. */
CUresult xgpu_event_put(struct xgpu_driver *drv, struct xgpu_obj *o);

#endif
