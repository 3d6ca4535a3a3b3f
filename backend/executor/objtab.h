/* SPDX-License-Identifier: Apache-2.0 */
/* objtab.h - per-domain handle tables: the objects a guest names by handle. */
#ifndef XGPU_EXEC_OBJTAB_H
#define XGPU_EXEC_OBJTAB_H

#include "fatbin.h"
#include "proto.h"
#include "driver.h"

#include <stdbool.h>
#include <stdint.h>

struct xgpu_channel;

enum xgpu_obj_kind {
	OBJ_FREE = 0,
	OBJ_MODULE,
	OBJ_FUNC,
	OBJ_STREAM,
	OBJ_EVENT,
	OBJ_SEG,
	OBJ_GRAPH_EXEC,
	OBJ_ARRAY,
	OBJ_TEXOBJ,
	OBJ_SURFOBJ,
	OBJ_VMM_PHYS, /* cuMemCreate's physical memory */
	OBJ_VMM_VA,   /* a cuMemAddressReserve range and its mappings */
	OBJ_KINDS
};

struct xgpu_graph_exec;

/* One mapping of physical memory into a reserved range (VMM_MAP). */
struct xgpu_vmm_map {
	uint64_t ptr, size;
	xgpu_handle_t phys;
	bool accessible; /* in the domain's memory map (VMM_SET_ACCESS) */
};

struct xgpu_obj {
	uint32_t gen;
	uint8_t kind;
	struct xgpu_channel *owner;
	uint32_t next_free;
	union {
		struct {
			CUmodule mod;
			struct xgpu_fatbin_info info;
			uint64_t charge; /* its variables' device memory, in mem_bytes */
		} module;
		struct {
			CUfunction fn;
			xgpu_handle_t module;
			const struct xgpu_kernel_info *kinfo;
		} func;
		struct {
			CUstream s;
		} stream;
		struct {
			CUevent e;
			/* CU_EVENT_INTERPROCESS events (IPC_EVENT_* in calls.def):
			 * every object naming e, the creator's and each opener's,
			 * shares refs; e goes with the last. token: this object's
			 * export, 0 until exported. */
			uint32_t *refs;
			uint64_t token;
			bool interprocess;
		} event;
		struct {
			void *ptr;
			uint64_t size;
			bool registered; /* with the driver, for DMA */
		} seg;
		struct {
			struct xgpu_graph_exec *x; /* exec/graph.c */
		} graph;
		struct {
			CUarray a;
			uint64_t width_bytes, height, depth; /* height, depth >= 1 */
			uint64_t charge;                     /* in mem_bytes */
		} array;
		struct {
			uint64_t value; /* CUtexObject or CUsurfObject */
		} texobj;
		struct {
			CUmemGenericAllocationHandle h;
			uint64_t size;
			uint32_t maps; /* mappings that hold it */
			bool released; /* by the guest: it goes with its last mapping */
		} vmm_phys;
		struct {
			uint64_t base, size;
			struct xgpu_vmm_map *maps;
			uint32_t nmaps, cap;
		} vmm_va;
	} u;
};

/* Per-domain table; handles are (generation << 32 | index), so a stale or
 * forged handle never names a live object and 0..2 are never handles. */
struct xgpu_objtab {
	struct xgpu_obj *v;
	uint32_t n, cap;
	uint32_t free_head; /* index + 1, 0 = none */
	uint32_t live[OBJ_KINDS];
};

xgpu_handle_t xgpu_obj_add(struct xgpu_objtab *t, enum xgpu_obj_kind kind, struct xgpu_channel *owner,
			   struct xgpu_obj **out);
/* The live object h of that kind owned by owner, or NULL. */
struct xgpu_obj *xgpu_obj_get(struct xgpu_objtab *t, xgpu_handle_t h, enum xgpu_obj_kind kind,
			      const struct xgpu_channel *owner);
/* The live object h of that kind whoever owns it, or NULL: only for an
 * object another process of the domain chose to share (IPC_EVENT_OPEN),
 * whose own check follows. */
struct xgpu_obj *xgpu_obj_get_shared(struct xgpu_objtab *t, xgpu_handle_t h, enum xgpu_obj_kind kind);
void xgpu_obj_del(struct xgpu_objtab *t, xgpu_handle_t h);
void xgpu_objtab_free(struct xgpu_objtab *t);
/* Iterates live objects: returns the next index >= *i holding one, or -1. */
int64_t xgpu_obj_next(struct xgpu_objtab *t, uint32_t *i, struct xgpu_obj **o, xgpu_handle_t *h);

#endif
