/* SPDX-License-Identifier: Apache-2.0 */
/* vmm.c - virtual memory management objects of a domain. A VMM_PHYS object
 * is cuMemCreate's physical memory, charged to the domain's memory limit
 * while it exists; a VMM_VA object a reserved address range with its
 * mappings. Physical memory lives while the guest holds its handle or any
 * mapping does, as in CUDA. */
#include "vmm.h"

#include <stdlib.h>
#include <string.h>

void xgpu_vmm_phys_put(struct xgpu_domain *dom, const struct xgpu_channel *owner, xgpu_handle_t ph,
		       bool release)
{
	struct xgpu_obj *p = xgpu_obj_get(&dom->objs, ph, OBJ_VMM_PHYS, owner);
	if (!p)
		return;
	if (release)
		p->u.vmm_phys.released = true;
	else if (p->u.vmm_phys.maps)
		p->u.vmm_phys.maps--;
	if (!p->u.vmm_phys.released || p->u.vmm_phys.maps)
		return;
	dom->x->drv.cuMemRelease(p->u.vmm_phys.h);
	uint64_t held = atomic_load(&dom->stats->mem_bytes), size = p->u.vmm_phys.size;
	atomic_fetch_sub(&dom->stats->mem_bytes, size < held ? size : held);
	xgpu_obj_del(&dom->objs, ph);
}

CUresult xgpu_vmm_unmap(struct xgpu_domain *dom, struct xgpu_obj *va, xgpu_handle_t vah, uint32_t k)
{
	struct xgpu_vmm_map m = va->u.vmm_va.maps[k];
	if (m.accessible)
		xgpu_memmap_del_tagged(&dom->mem, m.ptr, vah, va->owner);
	CUresult r = dom->x->drv.cuMemUnmap(m.ptr, m.size);
	memmove(&va->u.vmm_va.maps[k], &va->u.vmm_va.maps[k + 1],
		(va->u.vmm_va.nmaps - k - 1) * sizeof va->u.vmm_va.maps[0]);
	va->u.vmm_va.nmaps--;
	xgpu_vmm_phys_put(dom, va->owner, m.phys, false);
	return r;
}

CUresult xgpu_vmm_va_free(struct xgpu_domain *dom, const struct xgpu_channel *owner, xgpu_handle_t vah)
{
	struct xgpu_obj *va = xgpu_obj_get(&dom->objs, vah, OBJ_VMM_VA, owner);
	if (!va)
		return CUDA_ERROR_INVALID_VALUE;
	CUresult r = CUDA_SUCCESS;
	while (va->u.vmm_va.nmaps) {
		CUresult u = xgpu_vmm_unmap(dom, va, vah, va->u.vmm_va.nmaps - 1);
		if (!r)
			r = u;
	}
	CUresult f = dom->x->drv.cuMemAddressFree(va->u.vmm_va.base, va->u.vmm_va.size);
	free(va->u.vmm_va.maps);
	va->u.vmm_va.maps = NULL;
	xgpu_obj_del(&dom->objs, vah);
	return r ? r : f;
}
