/* SPDX-License-Identifier: Apache-2.0 */
/* objtab.c - per-domain handle tables. A handle is (generation << 32 | index);
 * freeing an entry bumps its generation, so a stale or guessed handle never
 * names a live object, and lookups also check kind and owning channel. */
#include "objtab.h"

#include <stdlib.h>
#include <string.h>

#define OBJTAB_MAX (1u << 24)

static xgpu_handle_t make_handle(uint32_t gen, uint32_t index)
{
	return ((uint64_t)gen << 32) | index;
}

xgpu_handle_t xgpu_obj_add(struct xgpu_objtab *t, enum xgpu_obj_kind kind, struct xgpu_channel *owner,
			   struct xgpu_obj **out)
{
	uint32_t i;
	if (t->free_head) {
		i = t->free_head - 1;
		t->free_head = t->v[i].next_free;
	} else {
		if (t->n == t->cap) {
			uint32_t cap = t->cap ? t->cap * 2 : 64;
			if (cap > OBJTAB_MAX)
				return 0;
			struct xgpu_obj *v = realloc(t->v, cap * sizeof *v);
			if (!v)
				return 0;
			t->v = v;
			t->cap = cap;
		}
		i = t->n++;
		t->v[i].gen = 0;
	}
	struct xgpu_obj *o = &t->v[i];
	uint32_t gen = o->gen + 1;
	if (gen == 0)
		gen = 1;
	memset(o, 0, sizeof *o);
	o->gen = gen;
	o->kind = (uint8_t)kind;
	o->owner = owner;
	t->live[kind]++;
	*out = o;
	return make_handle(gen, i);
}

struct xgpu_obj *xgpu_obj_get(struct xgpu_objtab *t, xgpu_handle_t h, enum xgpu_obj_kind kind,
			      const struct xgpu_channel *owner)
{
	uint32_t i = (uint32_t)h, gen = (uint32_t)(h >> 32);
	if (i >= t->n)
		return NULL;
	struct xgpu_obj *o = &t->v[i];
	if (o->kind != kind || o->gen != gen || gen == 0 || o->owner != owner)
		return NULL;
	return o;
}

struct xgpu_obj *xgpu_obj_get_shared(struct xgpu_objtab *t, xgpu_handle_t h, enum xgpu_obj_kind kind)
{
	uint32_t i = (uint32_t)h, gen = (uint32_t)(h >> 32);
	if (i >= t->n)
		return NULL;
	struct xgpu_obj *o = &t->v[i];
	if (o->kind != kind || o->gen != gen || gen == 0)
		return NULL;
	return o;
}

void xgpu_obj_del(struct xgpu_objtab *t, xgpu_handle_t h)
{
	uint32_t i = (uint32_t)h;
	if (i >= t->n || t->v[i].kind == OBJ_FREE || t->v[i].gen != (uint32_t)(h >> 32))
		return;
	t->live[t->v[i].kind]--;
	t->v[i].kind = OBJ_FREE;
	t->v[i].owner = NULL;
	t->v[i].next_free = t->free_head;
	t->free_head = i + 1;
}

int64_t xgpu_obj_next(struct xgpu_objtab *t, uint32_t *i, struct xgpu_obj **o, xgpu_handle_t *h)
{
	for (; *i < t->n; (*i)++)
		if (t->v[*i].kind != OBJ_FREE) {
			*o = &t->v[*i];
			*h = make_handle(t->v[*i].gen, *i);
			return *i;
		}
	return -1;
}

void xgpu_objtab_free(struct xgpu_objtab *t)
{
	free(t->v);
	memset(t, 0, sizeof *t);
}
