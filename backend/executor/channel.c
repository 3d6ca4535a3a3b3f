/* SPDX-License-Identifier: Apache-2.0 */
/* channel.c - the end of a channel: when a guest process exits, crashes or
 * is closed for misbehaving, everything it held on the device is released
 * (after its queued work drains), and its domain's accounting shows it. */
#include "log.h"
#include "channel.h"
#include "exec.h"
#include "graph.h"
#include "ipc.h"
#include "vmm.h"

#include <inttypes.h>
#include <stdlib.h>

struct released {
	uint32_t allocs, modules, streams, events, segments, arrays, vmm;
	uint64_t bytes;
};

static void release(struct xgpu_channel *ch, struct released *out)
{
	struct xgpu_domain *dom = ch->dom;
	struct xgpu_driver *drv = &dom->x->drv;
	if (!dom->ctx)
		return;
	/* The process's queued work may still read its memory and segments;
	 * let it finish first (a broken context returns at once). */
	uint32_t i = 0;
	struct xgpu_obj *o;
	xgpu_handle_t h;
	while (xgpu_obj_next(&dom->objs, &i, &o, &h) >= 0) {
		if (o->kind == OBJ_STREAM && o->owner == ch)
			drv->cuStreamSynchronize(o->u.stream.s);
		i++;
	}
	drv->cuStreamSynchronize(NULL);
	xgpu_exec_busy_harvest(dom, true);
	if (ch->rings_dma > 0) {
		drv->cuMemHostUnregister(ch->v.tx.buf);
		drv->cuMemHostUnregister(ch->v.rx.buf);
	}
	ch->rings_dma = 0;

	/* Graphs first: they name the process's events and functions. */
	for (i = 0; xgpu_obj_next(&dom->objs, &i, &o, &h) >= 0; i++)
		if (o->owner == ch && o->kind == OBJ_GRAPH_EXEC) {
			xgpu_graph_exec_free(dom, o->u.graph.x);
			xgpu_obj_del(&dom->objs, h);
		}

	for (i = 0; xgpu_obj_next(&dom->objs, &i, &o, &h) >= 0; i++) {
		if (o->owner != ch)
			continue;
		switch (o->kind) {
		case OBJ_STREAM:
			drv->cuStreamDestroy(o->u.stream.s);
			out->streams++;
			break;
		case OBJ_EVENT:
			xgpu_event_put(drv, o);
			out->events++;
			break;
		case OBJ_SEG:
			if (o->u.seg.registered)
				drv->cuMemHostUnregister(o->u.seg.ptr);
			ch->ops->release_segment(ch, o->u.seg.ptr, o->u.seg.size);
			dom->pinned_bytes -= o->u.seg.size;
			out->segments++;
			break;
		case OBJ_TEXOBJ:
			drv->cuTexObjectDestroy(o->u.texobj.value);
			break;
		case OBJ_SURFOBJ:
			drv->cuSurfObjectDestroy(o->u.texobj.value);
			break;
		case OBJ_ARRAY:
			drv->cuArrayDestroy(o->u.array.a);
			out->bytes += o->u.array.charge;
			out->arrays++;
			break;
		default:
			continue; /* modules and functions below */
		}
		xgpu_obj_del(&dom->objs, h);
	}
	for (i = 0; xgpu_obj_next(&dom->objs, &i, &o, &h) >= 0; i++)
		if (o->owner == ch && o->kind == OBJ_FUNC)
			xgpu_obj_del(&dom->objs, h);
	for (i = 0; xgpu_obj_next(&dom->objs, &i, &o, &h) >= 0; i++)
		if (o->owner == ch && o->kind == OBJ_MODULE) {
			xgpu_memmap_drop_module(&dom->mem, h);
			out->bytes += o->u.module.charge;
			drv->cuModuleUnload(o->u.module.mod);
			xgpu_fatbin_free(&o->u.module.info);
			xgpu_obj_del(&dom->objs, h);
			out->modules++;
		}

	/* Its opens of other processes' memory, and theirs of its own. */
	xgpu_ipc_release_channel(dom, ch);

	/* Reservations with their mappings (which leave the map), then the
	 * physical memory no mapping holds any more. */
	for (i = 0; xgpu_obj_next(&dom->objs, &i, &o, &h) >= 0; i++)
		if (o->owner == ch && o->kind == OBJ_VMM_VA) {
			xgpu_vmm_va_free(dom, ch, h);
			out->vmm++;
		}
	for (i = 0; xgpu_obj_next(&dom->objs, &i, &o, &h) >= 0; i++)
		if (o->owner == ch && o->kind == OBJ_VMM_PHYS) {
			o->u.vmm_phys.maps = 0;
			xgpu_vmm_phys_put(dom, ch, h, true);
		}

	/* What is left of the channel's map is its cuMemAlloc'd memory: module
	 * globals left the map with their modules above. */
	struct xgpu_memmap *m = &dom->mem;
	uint32_t kept = 0;
	for (uint32_t k = 0; k < m->n; k++) {
		struct xgpu_alloc a = m->v[k];
		if (a.owner != ch) {
			m->v[kept++] = a;
			continue;
		}
		if (drv->cuMemFree(a.base) == CUDA_SUCCESS || dom->sticky_error) {
			out->allocs++;
			out->bytes += a.size;
		}
	}
	m->n = kept;
}

void xgpu_channel_release_objects(struct xgpu_channel *ch)
{
	struct released r = {0};
	release(ch, &r);
	uint64_t held = atomic_load(&ch->dom->stats->mem_bytes);
	atomic_fetch_sub(&ch->dom->stats->mem_bytes, r.bytes < held ? r.bytes : held);
}

void xgpu_channel_teardown(struct xgpu_channel *ch)
{
	struct xgpu_domain *dom = ch->dom;
	struct released r = {0};
	release(ch, &r);
	uint64_t held = atomic_load(&dom->stats->mem_bytes);
	atomic_fetch_sub(&dom->stats->mem_bytes, r.bytes < held ? r.bytes : held);
	dlog_info(
	    dom,
	    "domain %s: channel %u (pid %d) closed (%s): released %u allocations (%" PRIu64
	    " bytes), %u modules, %u streams, %u events, %u host segments, %u arrays, %u reserved ranges",
	    dom->name, ch->id, (int)ch->pid, ch->dead_reason ? ch->dead_reason : "exit", r.allocs, r.bytes,
	    r.modules, r.streams, r.events, r.segments, r.arrays, r.vmm);
	ch->ops->close(ch);
	atomic_fetch_sub(&dom->stats->channels, 1);
	free(ch);
}
