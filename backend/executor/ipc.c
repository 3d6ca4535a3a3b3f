/* SPDX-License-Identifier: Apache-2.0 */
/* ipc.c - allocations one process of a domain exports and others open. An
 * export is (base, token, exporter); the token is random, so a process can
 * open only what another chose to share. An open adds an alias entry to the
 * domain's memory map (XGPU_MEMMAP_IPC, owned by the opener), which copies
 * and launches check like any allocation and which no free reaches.
 * Event handles: an exported event object carries a random token, and an
 * open makes the opener its own object for the same CUevent, which a shared
 * count keeps until the last object naming it goes. */
#include "ipc.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

static uint64_t new_token(void)
{
	uint64_t t = 0;
	while (!t)
		if (getrandom(&t, sizeof t, 0) != (ssize_t)sizeof t)
			t = xgpu_now_ns() * 0x9e3779b97f4a7c15ull;
	return t;
}

uint64_t xgpu_ipc_export(struct xgpu_domain *dom, struct xgpu_channel *owner, uint64_t base)
{
	for (uint32_t i = 0; i < dom->nipc; i++)
		if (dom->ipc[i].base == base && dom->ipc[i].owner == owner)
			return dom->ipc[i].token;
	if (dom->nipc == dom->capipc) {
		uint32_t cap = dom->capipc ? dom->capipc * 2 : 16;
		if (cap > 65536)
			return 0;
		struct xgpu_ipc_export *v = realloc(dom->ipc, cap * sizeof *v);
		if (!v)
			return 0;
		dom->ipc = v;
		dom->capipc = cap;
	}
	uint64_t t = new_token();
	dom->ipc[dom->nipc++] = (struct xgpu_ipc_export){base, t, owner};
	return t;
}

struct xgpu_channel *xgpu_ipc_exporter(const struct xgpu_domain *dom, uint64_t base, uint64_t token)
{
	for (uint32_t i = 0; i < dom->nipc; i++)
		if (dom->ipc[i].base == base && dom->ipc[i].token == token)
			return dom->ipc[i].owner;
	return NULL;
}

void xgpu_ipc_forget(struct xgpu_domain *dom, uint64_t base)
{
	uint32_t kept = 0;
	for (uint32_t i = 0; i < dom->nipc; i++)
		if (dom->ipc[i].base != base)
			dom->ipc[kept++] = dom->ipc[i];
	dom->nipc = kept;
	while (xgpu_memmap_del_tagged(&dom->mem, base, XGPU_MEMMAP_IPC, NULL)) {
	}
}

void xgpu_ipc_release_channel(struct xgpu_domain *dom, struct xgpu_channel *ch)
{
	struct xgpu_memmap *m = &dom->mem;
	uint32_t kept = 0;
	for (uint32_t k = 0; k < m->n; k++)
		if (!(m->v[k].owner == ch && m->v[k].module == XGPU_MEMMAP_IPC))
			m->v[kept++] = m->v[k];
	m->n = kept;
	kept = 0;
	for (uint32_t i = 0; i < dom->nipc; i++) {
		if (dom->ipc[i].owner != ch) {
			dom->ipc[kept++] = dom->ipc[i];
			continue;
		}
		while (xgpu_memmap_del_tagged(m, dom->ipc[i].base, XGPU_MEMMAP_IPC, NULL)) {
		}
	}
	dom->nipc = kept;
}

uint64_t xgpu_ipc_event_export(struct xgpu_obj *o)
{
	if (!o->u.event.refs) {
		o->u.event.refs = malloc(sizeof *o->u.event.refs);
		if (!o->u.event.refs)
			return 0;
		*o->u.event.refs = 1;
	}
	if (!o->u.event.token)
		o->u.event.token = new_token();
	return o->u.event.token;
}

struct xgpu_obj *xgpu_ipc_event_find(struct xgpu_domain *dom, xgpu_handle_t handle, uint64_t token)
{
	struct xgpu_obj *o = xgpu_obj_get_shared(&dom->objs, handle, OBJ_EVENT);
	if (!o || !o->u.event.token || !o->u.event.refs || o->u.event.token != token)
		return NULL;
	return o;
}

CUresult xgpu_event_put(struct xgpu_driver *drv, struct xgpu_obj *o)
{
	uint32_t *refs = o->u.event.refs;
	o->u.event.refs = NULL;
	o->u.event.token = 0;
	if (refs && --*refs > 0)
		return CUDA_SUCCESS;
	free(refs);
	return drv->cuEventDestroy(o->u.event.e);
}
