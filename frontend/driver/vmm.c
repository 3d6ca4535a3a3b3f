/* SPDX-License-Identifier: Apache-2.0 */
/* vmm.c - the driver API's virtual memory management: cuMemCreate,
 * cuMemAddressReserve, cuMemMap, cuMemSetAccess and their kin, which NCCL and
 * PyTorch's expandable segments use.
 *
 * The daemon holds the physical memory (charged to the domain's memory
 * limit), the reserved ranges and the mappings (VMM_* in calls.def); a
 * CUmemGenericAllocationHandle is the daemon's handle. This file keeps what
 * the queries need locally: each handle's properties and the references the
 * program holds on it (cuMemRetainAllocationHandle adds one, cuMemRelease
 * drops one, and the daemon is told once none is left), each reservation,
 * and each mapping with the access the program set. Mapped ranges are also
 * device memory in the allocation registry (allocs.h), so pointer queries,
 * cuMemGetAddressRange and copy directions know them.
 *
 * Refused by name: host-memory and managed allocation types, read-only
 * access, and exporting or importing shareable handles (the memory lives in
 * the domain's executor process, whose file descriptors and handles cannot
 * reach a guest; processes of one domain would share through IPC). */
#include "allocs.h"
#include "driver.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct vmm_handle {
	uint64_t h; /* the daemon's */
	uint64_t size;
	CUmemAllocationProp prop;
	unsigned refs;        /* the program's */
	bool daemon_released; /* VMM_RELEASE sent: the daemon keeps it while mapped */
};

struct vmm_range {
	uint64_t base, size, va; /* va: the daemon's handle */
};

struct vmm_map {
	uint64_t ptr, size, h;
	unsigned long long access; /* CUmemAccess_flags last set */
};

static pthread_mutex_t vmm_lock = PTHREAD_MUTEX_INITIALIZER;
static struct vmm_handle *handles;
static struct vmm_range *ranges;
static struct vmm_map *maps;
static size_t nhandles, nranges, nmaps;

/* Appends one element to a growing array (under vmm_lock). */
static bool push(void **v, size_t *n, size_t elem, const void *item)
{
	if ((*n & (*n - 1)) == 0) { /* 0, 1, 2, 4...: grow to double */
		void *nv = realloc(*v, (*n ? *n * 2 : 4) * elem);
		if (!nv)
			return false;
		*v = nv;
	}
	memcpy((char *)*v + *n * elem, item, elem);
	(*n)++;
	return true;
}

static void drop(void *v, size_t *n, size_t elem, size_t i)
{
	memmove((char *)v + i * elem, (char *)v + (i + 1) * elem, (*n - i - 1) * elem);
	(*n)--;
}

static struct vmm_handle *handle_find(uint64_t h)
{
	for (size_t i = 0; i < nhandles; i++)
		if (handles[i].h == h)
			return &handles[i];
	return NULL;
}

/* The reservation holding [ptr, ptr + size). */
static struct vmm_range *range_find(uint64_t ptr, uint64_t size)
{
	for (size_t i = 0; i < nranges; i++)
		if (ptr >= ranges[i].base && ptr - ranges[i].base < ranges[i].size &&
		    size <= ranges[i].size - (ptr - ranges[i].base))
			return &ranges[i];
	return NULL;
}

static struct vmm_map *map_find(uint64_t addr)
{
	for (size_t i = 0; i < nmaps; i++)
		if (addr >= maps[i].ptr && addr - maps[i].ptr < maps[i].size)
			return &maps[i];
	return NULL;
}

static CUresult check_location(const CUmemLocation *loc)
{
	int n = 0;
	CUresult r = cuDeviceGetCount(&n);
	if (r)
		return r;
	if (loc->type == CU_MEM_LOCATION_TYPE_HOST || loc->type == CU_MEM_LOCATION_TYPE_HOST_NUMA ||
	    loc->type == CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT)
		return xgpu_drv_unsupported(
		    "virtual memory management of host memory (CUmemLocation of a host "
		    "type): xgpu's guests reach host memory through pinned segments");
	if (loc->type != CU_MEM_LOCATION_TYPE_DEVICE || loc->id < 0 || loc->id >= n)
		return CUDA_ERROR_INVALID_DEVICE;
	return CUDA_SUCCESS;
}

static CUresult check_prop(const CUmemAllocationProp *prop)
{
	if (!prop)
		return CUDA_ERROR_INVALID_VALUE;
	if (prop->type == CU_MEM_ALLOCATION_TYPE_MANAGED)
		return xgpu_drv_unsupported(
		    "cuMemCreate of managed memory (CU_MEM_ALLOCATION_TYPE_MANAGED): the "
		    "guest's managed memory is cuMemAllocManaged's");
	if (prop->type != CU_MEM_ALLOCATION_TYPE_PINNED)
		return CUDA_ERROR_INVALID_VALUE;
	/* The requested handle types matter only to an export, refused below;
	 * compression and RDMA are hints the daemon does not pass on. */
	return check_location(&prop->location);
}

CUresult cuMemGetAllocationGranularity(size_t *granularity, const CUmemAllocationProp *prop,
				       CUmemAllocationGranularity_flags option)
{
	static uint64_t cached[2];
	static unsigned cached_gen[2];
	if (!granularity ||
	    (option != CU_MEM_ALLOC_GRANULARITY_MINIMUM && option != CU_MEM_ALLOC_GRANULARITY_RECOMMENDED))
		return CUDA_ERROR_INVALID_VALUE;
	struct xgpu_client *c;
	CUresult r = xgpu_drv_client(&c);
	if (!r)
		r = check_prop(prop);
	if (r)
		return r;
	pthread_mutex_lock(&vmm_lock);
	uint64_t g = cached_gen[option] == xgpu_fork_generation + 1 ? cached[option] : 0;
	pthread_mutex_unlock(&vmm_lock);
	if (!g) {
		/* The daemon answers for the domain's context, which it holds
		 * whether or not the program made one current: CUDA answers
		 * after cuInit alone (memMapIPCDrv asks before cuCtxCreate). */
		struct xgpu_req_VMM_GRANULARITY req = {.flags = (uint32_t)option};
		struct xgpu_rsp_VMM_GRANULARITY rsp;
		r = xgpu_drv_result(xgpu_call_VMM_GRANULARITY(c, &req, &rsp));
		if (r)
			return r;
		g = rsp.granularity;
		pthread_mutex_lock(&vmm_lock);
		cached[option] = g;
		cached_gen[option] = xgpu_fork_generation + 1;
		pthread_mutex_unlock(&vmm_lock);
	}
	*granularity = (size_t)g;
	return CUDA_SUCCESS;
}

CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size, const CUmemAllocationProp *prop,
		     unsigned long long flags)
{
	if (!handle || flags || !size)
		return CUDA_ERROR_INVALID_VALUE;
	struct xgpu_client *c;
	CUresult r = xgpu_drv_client(&c);
	if (!r)
		r = check_prop(prop);
	if (r)
		return r;
	struct xgpu_req_VMM_CREATE req = {.size = size};
	struct xgpu_rsp_VMM_CREATE rsp;
	int e = xgpu_call_VMM_CREATE(c, &req, &rsp);
	if (e)
		return e == cudaErrorMemoryAllocation ? CUDA_ERROR_OUT_OF_MEMORY : xgpu_drv_result(e);
	struct vmm_handle rec = {.h = rsp.handle, .size = size, .prop = *prop, .refs = 1};
	pthread_mutex_lock(&vmm_lock);
	bool ok = push((void **)&handles, &nhandles, sizeof rec, &rec);
	pthread_mutex_unlock(&vmm_lock);
	if (!ok) {
		struct xgpu_req_VMM_RELEASE rq = {.handle = rsp.handle};
		struct xgpu_rsp_VMM_RELEASE rs;
		xgpu_call_VMM_RELEASE(c, &rq, &rs);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	*handle = rsp.handle;
	return CUDA_SUCCESS;
}

CUresult cuMemRelease(CUmemGenericAllocationHandle handle)
{
	struct xgpu_client *c;
	CUresult r = xgpu_drv_client(&c);
	if (r)
		return r;
	pthread_mutex_lock(&vmm_lock);
	struct vmm_handle *h = handle_find(handle);
	bool tell = false;
	if (!h || !h->refs) {
		r = CUDA_ERROR_INVALID_VALUE;
	} else if (--h->refs == 0) {
		tell = !h->daemon_released;
		h->daemon_released = true;
		/* Forgotten unless a mapping still names it (cuMemRetainAllocationHandle). */
		bool mapped = false;
		for (size_t i = 0; i < nmaps; i++)
			mapped |= maps[i].h == handle;
		if (!mapped)
			drop(handles, &nhandles, sizeof *handles, (size_t)(h - handles));
	}
	pthread_mutex_unlock(&vmm_lock);
	if (tell) {
		struct xgpu_req_VMM_RELEASE req = {.handle = handle};
		struct xgpu_rsp_VMM_RELEASE rsp;
		r = xgpu_drv_result(xgpu_call_VMM_RELEASE(c, &req, &rsp));
	}
	return r;
}

CUresult cuMemRetainAllocationHandle(CUmemGenericAllocationHandle *handle, void *addr)
{
	if (!handle)
		return CUDA_ERROR_INVALID_VALUE;
	struct xgpu_client *c;
	CUresult r = xgpu_drv_client(&c);
	if (r)
		return r;
	pthread_mutex_lock(&vmm_lock);
	struct vmm_map *m = map_find((uint64_t)(uintptr_t)addr);
	struct vmm_handle *h = m ? handle_find(m->h) : NULL;
	if (h) {
		h->refs++;
		*handle = h->h;
	}
	pthread_mutex_unlock(&vmm_lock);
	return h ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuMemGetAllocationPropertiesFromHandle(CUmemAllocationProp *prop,
						CUmemGenericAllocationHandle handle)
{
	if (!prop)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&vmm_lock);
	struct vmm_handle *h = handle_find(handle);
	if (h) {
		*prop = h->prop;
		/* What the daemon made: no compression, no RDMA. */
		prop->allocFlags.compressionType = CU_MEM_ALLOCATION_COMP_NONE;
		prop->allocFlags.gpuDirectRDMACapable = 0;
	}
	pthread_mutex_unlock(&vmm_lock);
	return h ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment, CUdeviceptr addr,
			     unsigned long long flags)
{
	if (!ptr || !size || flags)
		return CUDA_ERROR_INVALID_VALUE;
	struct xgpu_client *c;
	CUresult r = xgpu_drv_client(&c);
	if (r)
		return r;
	struct xgpu_req_VMM_RESERVE req = {.size = size, .alignment = alignment, .addr = addr};
	struct xgpu_rsp_VMM_RESERVE rsp;
	int e = xgpu_call_VMM_RESERVE(c, &req, &rsp);
	if (e)
		return e == cudaErrorMemoryAllocation ? CUDA_ERROR_OUT_OF_MEMORY : xgpu_drv_result(e);
	struct vmm_range rec = {.base = rsp.ptr, .size = size, .va = rsp.va};
	pthread_mutex_lock(&vmm_lock);
	bool ok = push((void **)&ranges, &nranges, sizeof rec, &rec);
	pthread_mutex_unlock(&vmm_lock);
	if (!ok) {
		struct xgpu_req_VMM_ADDRESS_FREE rq = {.va = rsp.va};
		struct xgpu_rsp_VMM_ADDRESS_FREE rs;
		xgpu_call_VMM_ADDRESS_FREE(c, &rq, &rs);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	*ptr = rsp.ptr;
	return CUDA_SUCCESS;
}

/* Forgets the mappings inside [ptr, ptr + size) (under vmm_lock). */
static void forget_maps(uint64_t ptr, uint64_t size)
{
	for (size_t i = 0; i < nmaps;) {
		if (maps[i].ptr >= ptr && maps[i].ptr - ptr < size) {
			xgpu_alloc_del(maps[i].ptr, XGPU_ALLOC_DEVICE);
			uint64_t h = maps[i].h;
			drop(maps, &nmaps, sizeof *maps, i);
			/* A handle the program released goes with its last mapping. */
			struct vmm_handle *rec = handle_find(h);
			bool mapped = false;
			for (size_t k = 0; k < nmaps; k++)
				mapped |= maps[k].h == h;
			if (rec && !rec->refs && !mapped)
				drop(handles, &nhandles, sizeof *handles, (size_t)(rec - handles));
		} else {
			i++;
		}
	}
}

CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
	struct xgpu_client *c;
	CUresult r = xgpu_drv_client(&c);
	if (r)
		return r;
	pthread_mutex_lock(&vmm_lock);
	struct vmm_range *rg = range_find(ptr, size);
	uint64_t va = rg && rg->base == ptr && rg->size == size ? rg->va : 0;
	if (va) {
		forget_maps(ptr, size);
		drop(ranges, &nranges, sizeof *ranges, (size_t)(rg - ranges));
	}
	pthread_mutex_unlock(&vmm_lock);
	if (!va)
		return CUDA_ERROR_INVALID_VALUE;
	struct xgpu_req_VMM_ADDRESS_FREE req = {.va = va};
	struct xgpu_rsp_VMM_ADDRESS_FREE rsp;
	return xgpu_drv_result(xgpu_call_VMM_ADDRESS_FREE(c, &req, &rsp));
}

CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
		  unsigned long long flags)
{
	if (!size || flags)
		return CUDA_ERROR_INVALID_VALUE;
	struct xgpu_client *c;
	CUresult r = xgpu_drv_client(&c);
	if (r)
		return r;
	pthread_mutex_lock(&vmm_lock);
	struct vmm_range *rg = range_find(ptr, size);
	struct vmm_handle *h = handle_find(handle);
	uint64_t va = rg && h && h->refs ? rg->va : 0;
	pthread_mutex_unlock(&vmm_lock);
	if (!va)
		return CUDA_ERROR_INVALID_VALUE;
	struct xgpu_req_VMM_MAP req = {
	    .va = va, .ptr = ptr, .size = size, .offset = offset, .handle = handle};
	struct xgpu_rsp_VMM_MAP rsp;
	r = xgpu_drv_result(xgpu_call_VMM_MAP(c, &req, &rsp));
	if (r)
		return r;
	struct vmm_map rec = {.ptr = ptr, .size = size, .h = handle};
	pthread_mutex_lock(&vmm_lock);
	bool ok = push((void **)&maps, &nmaps, sizeof rec, &rec);
	pthread_mutex_unlock(&vmm_lock);
	if (ok)
		xgpu_alloc_add(ptr, size, XGPU_ALLOC_DEVICE, 0);
	return CUDA_SUCCESS; /* an unrecorded mapping only loses the queries */
}

CUresult cuMemUnmap(CUdeviceptr ptr, size_t size)
{
	if (!size)
		return CUDA_ERROR_INVALID_VALUE;
	struct xgpu_client *c;
	CUresult r = xgpu_drv_client(&c);
	if (r)
		return r;
	pthread_mutex_lock(&vmm_lock);
	struct vmm_range *rg = range_find(ptr, size);
	uint64_t va = rg ? rg->va : 0;
	pthread_mutex_unlock(&vmm_lock);
	if (!va)
		return CUDA_ERROR_INVALID_VALUE;
	struct xgpu_req_VMM_UNMAP req = {.va = va, .ptr = ptr, .size = size};
	struct xgpu_rsp_VMM_UNMAP rsp;
	r = xgpu_drv_result(xgpu_call_VMM_UNMAP(c, &req, &rsp));
	if (!r) {
		pthread_mutex_lock(&vmm_lock);
		forget_maps(ptr, size);
		pthread_mutex_unlock(&vmm_lock);
	}
	return r;
}

CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc, size_t count)
{
	if (!desc || !count || !size)
		return CUDA_ERROR_INVALID_VALUE;
	struct xgpu_client *c;
	CUresult r = xgpu_drv_client(&c);
	if (r)
		return r;
	/* Every device of a domain is its one GPU: the last word wins. */
	unsigned long long flags = 0;
	for (size_t i = 0; i < count; i++) {
		if ((r = check_location(&desc[i].location)))
			return r;
		if (desc[i].flags == CU_MEM_ACCESS_FLAGS_PROT_READ)
			return xgpu_drv_unsupported(
			    "cuMemSetAccess read-only (CU_MEM_ACCESS_FLAGS_PROT_READ): "
			    "xgpu's checks of device ranges do not tell reads from writes");
		if (desc[i].flags != CU_MEM_ACCESS_FLAGS_PROT_NONE &&
		    desc[i].flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
			return CUDA_ERROR_INVALID_VALUE;
		flags = desc[i].flags;
	}
	pthread_mutex_lock(&vmm_lock);
	struct vmm_range *rg = range_find(ptr, size);
	uint64_t va = rg ? rg->va : 0;
	pthread_mutex_unlock(&vmm_lock);
	if (!va)
		return CUDA_ERROR_INVALID_VALUE;
	struct xgpu_req_VMM_SET_ACCESS req = {.va = va, .ptr = ptr, .size = size, .flags = (uint32_t)flags};
	struct xgpu_rsp_VMM_SET_ACCESS rsp;
	r = xgpu_drv_result(xgpu_call_VMM_SET_ACCESS(c, &req, &rsp));
	if (!r) {
		pthread_mutex_lock(&vmm_lock);
		for (size_t i = 0; i < nmaps; i++)
			if (maps[i].ptr >= ptr && maps[i].ptr - ptr < size)
				maps[i].access = flags;
		pthread_mutex_unlock(&vmm_lock);
	}
	return r;
}

CUresult cuMemGetAccess(unsigned long long *flags, const CUmemLocation *location, CUdeviceptr ptr)
{
	if (!flags || !location)
		return CUDA_ERROR_INVALID_VALUE;
	CUresult r = check_location(location);
	if (r)
		return r;
	pthread_mutex_lock(&vmm_lock);
	struct vmm_map *m = map_find(ptr);
	if (m)
		*flags = m->access;
	pthread_mutex_unlock(&vmm_lock);
	return m ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* The allocation holding dptr: cuMemAlloc's, a managed block, or a VMM
 * mapping (its own range, as CUDA answers for one). */
CUresult cuMemGetAddressRange(CUdeviceptr *pbase, size_t *psize, CUdeviceptr dptr)
{
	struct xgpu_client *c;
	CUresult r = xgpu_drv_client(&c);
	if (r)
		return r;
	struct xgpu_alloc a;
	if (!xgpu_alloc_find(dptr, 0, &a) || a.kind == XGPU_ALLOC_HOST)
		return CUDA_ERROR_NOT_FOUND;
	if (pbase)
		*pbase = a.base;
	if (psize)
		*psize = a.size;
	return CUDA_SUCCESS;
}

CUresult cuMemExportToShareableHandle(void *shareableHandle, CUmemGenericAllocationHandle handle,
				      CUmemAllocationHandleType handleType, unsigned long long flags)
{
	(void)shareableHandle, (void)handle, (void)handleType, (void)flags;
	return xgpu_drv_unsupported("cuMemExportToShareableHandle (the memory lives in the domain's executor "
				    "process, whose file descriptors and handles cannot reach a guest)");
}

CUresult cuMemImportFromShareableHandle(CUmemGenericAllocationHandle *handle, void *osHandle,
					CUmemAllocationHandleType shHandleType)
{
	(void)handle, (void)osHandle, (void)shHandleType;
	return xgpu_drv_unsupported("cuMemImportFromShareableHandle (no shareable handle of xgpu memory can "
				    "exist: see cuMemExportToShareableHandle)");
}
