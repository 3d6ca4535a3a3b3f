/* SPDX-License-Identifier: Apache-2.0 */
/* vmm.h - a domain's virtual memory management objects (cuMemCreate,
 * cuMemAddressReserve, cuMemMap): what the handlers and the channel's
 * release share. A process maps only its own physical memory into its own
 * reservations, so every object here has the same owner. */
#ifndef XGPU_EXEC_VMM_H
#define XGPU_EXEC_VMM_H

#include "executor.h"

/* Unmaps mapping k of reservation va (handle vah): out of the domain's memory
 * map, out of the driver, and its physical memory's hold dropped (the memory
 * goes if the guest released it). Returns the driver's result. */
CUresult xgpu_vmm_unmap(struct xgpu_domain *dom, struct xgpu_obj *va, xgpu_handle_t vah, uint32_t k);
/* Drops a hold on physical memory ph of owner (a mapping's; or the guest's
 * when release is true): the driver's memory is released and uncharged once
 * neither holds it. */
void xgpu_vmm_phys_put(struct xgpu_domain *dom, const struct xgpu_channel *owner, xgpu_handle_t ph,
		       bool release);
/* Unmaps all of reservation vah of owner and gives its addresses back. */
CUresult xgpu_vmm_va_free(struct xgpu_domain *dom, const struct xgpu_channel *owner, xgpu_handle_t vah);

#endif
