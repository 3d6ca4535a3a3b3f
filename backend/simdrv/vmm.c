/* SPDX-License-Identifier: Apache-2.0 */
/* vmm.c - the simulated driver's virtual memory management: cuMemCreate's
 * physical allocations, cuMemAddressReserve's address ranges and cuMemMap's
 * mappings between them.
 *
 * Physical memory is host memory, charged to the device like cuMemAlloc's.
 * Reserved ranges come from their own part of the fake device address space
 * (above 2^58: non-canonical, as every simulated device address is). A
 * mapping becomes an allocation of the calling context (SIM_ALLOC_VMM)
 * whose host view is the physical memory at the mapping's offset, so the
 * same physical memory mapped twice shows the same bytes at both addresses,
 * and copies and kernels find it as they find cuMemAlloc's memory. Each
 * mapping is an allocation of its own: an access that runs from one mapping
 * into the next is refused, where a GPU would allow it. cuMemSetAccess is
 * checked and recorded only: a mapping is usable at once here. */
#include "simdrv_int.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define SIM_VMM_GRANULARITY (2ull << 20)
#define SIM_VMM_VA_BASE (1ull << 58)
#define SIM_VMM_GUARD (2ull << 20)
#define SIM_VMM_MAX 16384u

struct vmm_phys {
	uint64_t id; /* the handle; 0: a free slot */
	size_t size;
	void *host;
	struct sim_device *dev;
	unsigned maps;
	bool released;
};

struct vmm_map {
	CUdeviceptr ptr;
	size_t size;
	uint64_t phys;
	struct CUctx_st *ctx; /* whose allocation table holds it (referenced) */
};

struct vmm_range {
	CUdeviceptr base;
	size_t size;
	struct vmm_map *maps;
	unsigned nmaps;
};

static pthread_mutex_t vmm_lock = PTHREAD_MUTEX_INITIALIZER;
static struct vmm_phys phys[SIM_VMM_MAX];
static struct vmm_range ranges[SIM_VMM_MAX];
static uint64_t next_id = 1;
static CUdeviceptr next_va = SIM_VMM_VA_BASE;

static struct vmm_phys *phys_find(uint64_t id)
{
	for (unsigned i = 0; i < SIM_VMM_MAX; i++)
		if (phys[i].id && phys[i].id == id)
			return &phys[i];
	return NULL;
}

/* The reservation holding [ptr, ptr + size), or NULL. */
static struct vmm_range *range_find(CUdeviceptr ptr, size_t size)
{
	for (unsigned i = 0; i < SIM_VMM_MAX; i++) {
		struct vmm_range *r = &ranges[i];
		if (r->size && ptr >= r->base && ptr - r->base < r->size && size <= r->size - (ptr - r->base))
			return r;
	}
	return NULL;
}

static void phys_free_if_unused(struct vmm_phys *p)
{
	if (!p->released || p->maps)
		return;
	munmap(p->host, p->size);
	atomic_fetch_sub(&p->dev->mem_used, p->size);
	memset(p, 0, sizeof *p);
}

static CUresult check_prop(const CUmemAllocationProp *prop, struct sim_device **dev)
{
	if (!prop || prop->type != CU_MEM_ALLOCATION_TYPE_PINNED ||
	    prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
		return CUDA_ERROR_INVALID_VALUE;
	*dev = sim_device(prop->location.id);
	return *dev ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

CUresult cuMemGetAllocationGranularity(size_t *granularity, const CUmemAllocationProp *prop,
				       CUmemAllocationGranularity_flags option)
{
	if (!atomic_load(&sim.initialized))
		return CUDA_ERROR_NOT_INITIALIZED;
	struct sim_device *dev;
	if (!granularity ||
	    (option != CU_MEM_ALLOC_GRANULARITY_MINIMUM && option != CU_MEM_ALLOC_GRANULARITY_RECOMMENDED))
		return CUDA_ERROR_INVALID_VALUE;
	CUresult r = check_prop(prop, &dev);
	if (!r)
		*granularity = SIM_VMM_GRANULARITY;
	return r;
}

CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size, const CUmemAllocationProp *prop,
		     unsigned long long flags)
{
	if (!atomic_load(&sim.initialized))
		return CUDA_ERROR_NOT_INITIALIZED;
	struct sim_device *dev;
	if (!handle || flags || !size || size % SIM_VMM_GRANULARITY)
		return CUDA_ERROR_INVALID_VALUE;
	CUresult r = check_prop(prop, &dev);
	if (r)
		return r;
	uint64_t used = atomic_load(&dev->mem_used);
	do {
		if (size > dev->p.mem_bytes || used > dev->p.mem_bytes - size)
			return CUDA_ERROR_OUT_OF_MEMORY;
	} while (!atomic_compare_exchange_weak(&dev->mem_used, &used, used + size));
	void *host =
	    mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (host == MAP_FAILED) {
		atomic_fetch_sub(&dev->mem_used, size);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	pthread_mutex_lock(&vmm_lock);
	struct vmm_phys *p = NULL;
	for (unsigned i = 0; i < SIM_VMM_MAX && !p; i++)
		if (!phys[i].id)
			p = &phys[i];
	if (p) {
		*p = (struct vmm_phys){.id = next_id++, .size = size, .host = host, .dev = dev};
		*handle = p->id;
	}
	pthread_mutex_unlock(&vmm_lock);
	if (!p) {
		munmap(host, size);
		atomic_fetch_sub(&dev->mem_used, size);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	return CUDA_SUCCESS;
}

CUresult cuMemRelease(CUmemGenericAllocationHandle handle)
{
	if (!atomic_load(&sim.initialized))
		return CUDA_ERROR_NOT_INITIALIZED;
	pthread_mutex_lock(&vmm_lock);
	struct vmm_phys *p = phys_find(handle);
	CUresult r = p && !p->released ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
	if (!r) {
		p->released = true;
		phys_free_if_unused(p);
	}
	pthread_mutex_unlock(&vmm_lock);
	return r;
}

CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment, CUdeviceptr addr,
			     unsigned long long flags)
{
	(void)addr; /* a hint */
	if (!atomic_load(&sim.initialized))
		return CUDA_ERROR_NOT_INITIALIZED;
	if (!ptr || flags || !size || size % SIM_VMM_GRANULARITY || (alignment & (alignment - 1)) ||
	    size > (1ull << 48) || alignment > (1ull << 40))
		return CUDA_ERROR_INVALID_VALUE;
	uint64_t align = alignment > SIM_VMM_GRANULARITY ? alignment : SIM_VMM_GRANULARITY;
	pthread_mutex_lock(&vmm_lock);
	struct vmm_range *r = NULL;
	for (unsigned i = 0; i < SIM_VMM_MAX && !r; i++)
		if (!ranges[i].size)
			r = &ranges[i];
	if (r) {
		CUdeviceptr base = (next_va + align - 1) & ~(align - 1);
		next_va = base + size + SIM_VMM_GUARD;
		*r = (struct vmm_range){.base = base, .size = size};
		*ptr = base;
	}
	pthread_mutex_unlock(&vmm_lock);
	return r ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
	if (!atomic_load(&sim.initialized))
		return CUDA_ERROR_NOT_INITIALIZED;
	pthread_mutex_lock(&vmm_lock);
	struct vmm_range *r = range_find(ptr, size);
	CUresult res = CUDA_ERROR_INVALID_VALUE;
	/* The whole reservation, with nothing mapped in it any more. */
	if (r && r->base == ptr && r->size == size && !r->nmaps) {
		free(r->maps);
		memset(r, 0, sizeof *r);
		res = CUDA_SUCCESS;
	}
	pthread_mutex_unlock(&vmm_lock);
	return res;
}

CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
		  unsigned long long flags)
{
	struct CUctx_st *c;
	CUresult res = sim_ctx_enter(&c, false);
	if (res)
		return res;
	if (flags || !size || size % SIM_VMM_GRANULARITY || offset % SIM_VMM_GRANULARITY ||
	    ptr % SIM_VMM_GRANULARITY) {
		sim_ctx_put(c);
		return CUDA_ERROR_INVALID_VALUE;
	}
	pthread_mutex_lock(&vmm_lock);
	struct vmm_range *r = range_find(ptr, size);
	struct vmm_phys *p = phys_find(handle);
	res = CUDA_ERROR_INVALID_VALUE;
	if (r && p && !p->released && offset <= p->size && size <= p->size - offset) {
		res = CUDA_SUCCESS;
		for (unsigned i = 0; i < r->nmaps; i++)
			if (r->maps[i].ptr < ptr + size && ptr < r->maps[i].ptr + r->maps[i].size)
				res = CUDA_ERROR_INVALID_VALUE; /* already mapped */
	}
	struct vmm_map *nv = NULL;
	if (!res && !(nv = realloc(r->maps, (r->nmaps + 1) * sizeof *nv)))
		res = CUDA_ERROR_OUT_OF_MEMORY;
	if (!res) {
		r->maps = nv;
		pthread_mutex_lock(&c->lock);
		res = sim_mem_insert_locked(c, ptr, size, (char *)p->host + offset, SIM_ALLOC_VMM);
		pthread_mutex_unlock(&c->lock);
	}
	if (!res) {
		sim_obj_ref(&c->obj);
		r->maps[r->nmaps++] = (struct vmm_map){.ptr = ptr, .size = size, .phys = handle, .ctx = c};
		p->maps++;
	}
	pthread_mutex_unlock(&vmm_lock);
	sim_ctx_put(c);
	return res;
}

CUresult cuMemUnmap(CUdeviceptr ptr, size_t size)
{
	if (!atomic_load(&sim.initialized))
		return CUDA_ERROR_NOT_INITIALIZED;
	pthread_mutex_lock(&vmm_lock);
	struct vmm_range *r = range_find(ptr, size);
	CUresult res = r ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
	unsigned found = 0;
	for (unsigned i = 0; r && i < r->nmaps; i++) {
		const struct vmm_map *m = &r->maps[i];
		if (m->ptr + m->size <= ptr || m->ptr >= ptr + size)
			continue;
		if (m->ptr < ptr || m->ptr + m->size > ptr + size)
			res = CUDA_ERROR_INVALID_VALUE; /* would cut a mapping */
		found++;
	}
	if (!found)
		res = CUDA_ERROR_INVALID_VALUE;
	for (unsigned i = 0; !res && i < r->nmaps;) {
		struct vmm_map m = r->maps[i];
		if (m.ptr + m.size <= ptr || m.ptr >= ptr + size) {
			i++;
			continue;
		}
		/* As cuMemFree: work queued before still finds the memory. */
		sim_wait_ctx_seq(m.ctx, sim_ctx_fence(m.ctx));
		struct sim_alloc a;
		pthread_mutex_lock(&m.ctx->lock);
		sim_mem_remove_locked(m.ctx, m.ptr, SIM_ALLOC_VMM, &a);
		uint64_t fence = sim_ctx_fence(m.ctx);
		pthread_mutex_unlock(&m.ctx->lock);
		sim_wait_ctx_seq(m.ctx, fence);
		sim_ctx_put(m.ctx);
		r->maps[i] = r->maps[--r->nmaps];
		struct vmm_phys *p = phys_find(m.phys);
		if (p) {
			p->maps--;
			phys_free_if_unused(p);
		}
	}
	pthread_mutex_unlock(&vmm_lock);
	return res;
}

CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc, size_t count)
{
	if (!atomic_load(&sim.initialized))
		return CUDA_ERROR_NOT_INITIALIZED;
	if (!desc || !count || count > 64)
		return CUDA_ERROR_INVALID_VALUE;
	for (size_t i = 0; i < count; i++)
		if (desc[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
		    !sim_device(desc[i].location.id) ||
		    (desc[i].flags != CU_MEM_ACCESS_FLAGS_PROT_NONE &&
		     desc[i].flags != CU_MEM_ACCESS_FLAGS_PROT_READ &&
		     desc[i].flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE))
			return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&vmm_lock);
	struct vmm_range *r = range_find(ptr, size);
	/* The range must be mapped throughout. */
	uint64_t covered = 0;
	for (unsigned i = 0; r && i < r->nmaps; i++) {
		const struct vmm_map *m = &r->maps[i];
		if (m->ptr >= ptr && m->ptr + m->size <= ptr + size)
			covered += m->size;
	}
	pthread_mutex_unlock(&vmm_lock);
	return r && covered == size ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
