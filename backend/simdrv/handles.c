/* SPDX-License-Identifier: Apache-2.0 */
/* handles.c - the registry of live handles of the simulated driver.
 *
 * Every CUcontext, CUstream, CUevent, CUmodule and CUfunction the driver
 * hands out is registered here, and every handle a caller passes back is
 * looked up before anything dereferences it. A handle that was destroyed,
 * never existed, or names an object of another kind is simply not found, so
 * the entry points answer INVALID_HANDLE / INVALID_CONTEXT rather than
 * touching freed memory. Lookups take a reference, so an object stays alive
 * while a call or a queued operation uses it even if another thread destroys
 * the handle meanwhile.
 *
 * The table is an open-addressing hash set of object addresses (linear
 * probing, backward-shift deletion) behind one mutex; lookups are a few
 * instructions, far below the cost of the calls they guard.
 */
#include "simdrv_int.h"

#include <stdlib.h>

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static struct sim_obj **reg_slots;
static size_t reg_cap; /* power of two, or 0 */
static size_t reg_count;
static atomic_uint_least64_t reg_next_id = 1;

static size_t slot_of(const void *p, size_t cap)
{
	uint64_t x = (uint64_t)(uintptr_t)p;
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	return (size_t)x & (cap - 1);
}

static int grow(void)
{
	size_t ncap = reg_cap ? reg_cap * 2 : 256;
	struct sim_obj **n = calloc(ncap, sizeof *n);
	if (!n)
		return -1;
	for (size_t i = 0; i < reg_cap; i++) {
		struct sim_obj *o = reg_slots[i];
		if (!o)
			continue;
		size_t j = slot_of(o, ncap);
		while (n[j])
			j = (j + 1) & (ncap - 1);
		n[j] = o;
	}
	free(reg_slots);
	reg_slots = n;
	reg_cap = ncap;
	return 0;
}

/* Slot holding p, or SIZE_MAX. reg_lock held. */
static size_t find(const void *p)
{
	if (!reg_cap)
		return SIZE_MAX;
	for (size_t j = slot_of(p, reg_cap);; j = (j + 1) & (reg_cap - 1)) {
		if (!reg_slots[j])
			return SIZE_MAX;
		if ((const void *)reg_slots[j] == p)
			return j;
	}
}

int sim_obj_register(struct sim_obj *o, enum sim_kind kind, void (*release)(struct sim_obj *))
{
	o->kind = kind;
	atomic_init(&o->refs, 1);
	o->id = atomic_fetch_add(&reg_next_id, 1);
	o->release = release;
	pthread_mutex_lock(&reg_lock);
	/* Keep the load under 1/2 so probe sequences stay short. */
	if ((reg_count + 1) * 2 > reg_cap && grow() < 0) {
		pthread_mutex_unlock(&reg_lock);
		return -1;
	}
	size_t j = slot_of(o, reg_cap);
	while (reg_slots[j])
		j = (j + 1) & (reg_cap - 1);
	reg_slots[j] = o;
	reg_count++;
	pthread_mutex_unlock(&reg_lock);
	return 0;
}

void *sim_obj_get(const void *handle, enum sim_kind kind)
{
	if (!handle)
		return NULL;
	pthread_mutex_lock(&reg_lock);
	size_t j = find(handle);
	struct sim_obj *o = j == SIZE_MAX ? NULL : reg_slots[j];
	/* Registered objects hold the registry's reference, so refs >= 1 here. */
	if (o && o->kind == kind)
		atomic_fetch_add(&o->refs, 1);
	else
		o = NULL;
	pthread_mutex_unlock(&reg_lock);
	return o;
}

void sim_obj_ref(struct sim_obj *o)
{
	atomic_fetch_add(&o->refs, 1);
}

void sim_obj_put(struct sim_obj *o)
{
	if (o && atomic_fetch_sub(&o->refs, 1) == 1)
		o->release(o);
}

bool sim_obj_unregister(struct sim_obj *o)
{
	pthread_mutex_lock(&reg_lock);
	size_t j = find(o);
	if (j == SIZE_MAX) {
		pthread_mutex_unlock(&reg_lock);
		return false;
	}
	reg_slots[j] = NULL;
	reg_count--;
	/* Backward-shift: move later members of the probe run into the hole so
	 * that lookups can stop at the first empty slot. */
	size_t hole = j;
	for (size_t k = (j + 1) & (reg_cap - 1); reg_slots[k]; k = (k + 1) & (reg_cap - 1)) {
		size_t home = slot_of(reg_slots[k], reg_cap);
		/* Movable if home is not in the cyclic range (hole, k]. */
		bool in_range = hole <= k ? (home > hole && home <= k) : (home > hole || home <= k);
		if (!in_range) {
			reg_slots[hole] = reg_slots[k];
			reg_slots[k] = NULL;
			hole = k;
		}
	}
	pthread_mutex_unlock(&reg_lock);
	return true;
}

void sim_registry_fini(void)
{
	pthread_mutex_lock(&reg_lock);
	free(reg_slots);
	reg_slots = NULL;
	reg_cap = reg_count = 0;
	pthread_mutex_unlock(&reg_lock);
}
