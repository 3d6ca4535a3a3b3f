/* SPDX-License-Identifier: Apache-2.0 */
/* memory.c - device memory, pinned host memory and the async copy / memset
 * entry points of the simulated driver.
 *
 * Device memory is host memory (mmap with MAP_NORESERVE for large blocks, so
 * a big allocation costs nothing until touched) behind fake device addresses
 * from a range no host pointer can have: above 2^57, non-canonical on x86-64
 * even with 5-level paging, so dereferencing one by mistake faults at once
 * instead of corrupting host memory. Addresses are handed out in increasing
 * order and never reused, so a stale pointer can never alias a newer buffer.
 *
 * Every access is checked against the allocations of the context that makes
 * it: a range must lie entirely inside one live allocation, or the call fails
 * with CUDA_ERROR_INVALID_VALUE (and a kernel with ILLEGAL_ADDRESS). That is
 * what isolates guests that share a device.
 *
 * Freeing follows one rule so the worker never touches released memory: first
 * take the range out of the table (nothing new can reach it), then wait for
 * the work queued before that moment, then release it. cuMemFree and
 * cuModuleUnload also wait for the work queued before the call before they
 * take the range out, so that this work still finds it, as on a GPU.
 */
#include "simdrv_int.h"
#include "util.h"

#include <stdlib.h>
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define SIM_VA_BASE (1ull << 57)
#define SIM_VA_ALIGN (64ull << 10) /* every allocation starts 64 KiB aligned */
#define SIM_VA_GUARD (64ull << 10) /* and unmapped space follows it */
#define SIM_ACCT_ALIGN 256ull
#define SIM_MMAP_MIN (256u << 10)

static atomic_uint_least64_t next_va = SIM_VA_BASE;

/* Managed memory's device address must also be a valid host address in the
 * guest (the frontend maps the guest's copy at exactly that address), so
 * managed allocations come from a canonical user-space range instead, one that
 * processes seldom use (heaps and libraries live near 0x55.. and 0x7f..), as a
 * GPU's unified address space lies in a range the driver reserved. */
#define SIM_MANAGED_VA_BASE 0x300000000000ull
#define SIM_MANAGED_VA_END 0x400000000000ull
static atomic_uint_least64_t next_managed_va = SIM_MANAGED_VA_BASE;

static inline uint64_t round_up(uint64_t x, uint64_t a)
{
	return (x + a - 1) / a * a;
}

/* ---- device allocations ------------------------------------------------------- */

/* Index of the last allocation with base <= addr, or -1. */
static long floor_index(const struct sim_alloc_table *t, CUdeviceptr addr)
{
	_Static_assert(sizeof(CUdeviceptr) == sizeof(uint64_t), "keys are 64-bit");
	return (long)xgpu_floor_search(t->v, t->n, sizeof *t->v, offsetof(struct sim_alloc, base), addr);
}

static void compact(struct sim_alloc_table *t)
{
	size_t j = 0;
	for (size_t i = 0; i < t->n; i++)
		if (!t->v[i].dead)
			t->v[j++] = t->v[i];
	t->n = j;
	t->ndead = 0;
}

static void *host_alloc(size_t bytes, bool *mmapped)
{
	if (bytes >= SIM_MMAP_MIN) {
		void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		*mmapped = true;
		return p == MAP_FAILED ? NULL : p;
	}
	/* Small blocks from malloc: cheaper, and ASan sees overruns in host
	 * kernel implementations. 256-byte alignment keeps a device address's
	 * alignment visible in its host view. */
	void *p = aligned_alloc(SIM_ACCT_ALIGN, round_up(bytes, SIM_ACCT_ALIGN));
	if (p)
		memset(p, 0, round_up(bytes, SIM_ACCT_ALIGN));
	*mmapped = false;
	return p;
}

static void host_free(void *p, size_t bytes, bool mmapped)
{
	if (mmapped)
		munmap(p, bytes);
	else
		free(p);
}

static CUresult alloc_from(struct CUctx_st *ctx, size_t size, int kind, CUdeviceptr *dptr, void **host,
			   atomic_uint_least64_t *va, uint64_t va_end)
{
	struct sim_device *dev = ctx->dev;
	if (ctx->destroyed)
		return CUDA_ERROR_CONTEXT_IS_DESTROYED;
	if (size == 0)
		return CUDA_ERROR_INVALID_VALUE;
	if (size > dev->p.mem_bytes)
		return CUDA_ERROR_OUT_OF_MEMORY;
	uint64_t acct = round_up(size, SIM_ACCT_ALIGN);
	uint64_t used = atomic_load(&dev->mem_used);
	do {
		if (used + acct > dev->p.mem_bytes)
			return CUDA_ERROR_OUT_OF_MEMORY;
	} while (!atomic_compare_exchange_weak(&dev->mem_used, &used, used + acct));

	struct sim_alloc_table *t = &ctx->allocs;
	if (t->n == t->cap) {
		size_t ncap = t->cap ? t->cap * 2 : 64;
		struct sim_alloc *nv = realloc(t->v, ncap * sizeof *nv);
		if (!nv) {
			atomic_fetch_sub(&dev->mem_used, acct);
			return CUDA_ERROR_OUT_OF_MEMORY;
		}
		t->v = nv;
		t->cap = ncap;
	}
	bool mmapped;
	void *p = host_alloc(size, &mmapped);
	if (!p) {
		atomic_fetch_sub(&dev->mem_used, acct);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	CUdeviceptr base = atomic_fetch_add(va, round_up(size, SIM_VA_ALIGN) + SIM_VA_GUARD);
	if (base >= va_end || va_end - base < size) {
		host_free(p, size, mmapped);
		atomic_fetch_sub(&dev->mem_used, acct);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	/* Under ctx->lock; bases from one range only grow, but the two ranges
	 * interleave, so insert in order. */
	size_t at = (size_t)(floor_index(t, base) + 1);
	memmove(&t->v[at + 1], &t->v[at], (t->n - at) * sizeof *t->v);
	t->n++;
	t->v[at] = (struct sim_alloc){
	    .base = base, .size = size, .acct = acct, .host = p, .kind = (uint8_t)kind, .mmapped = mmapped};
	*dptr = base;
	if (host)
		*host = p;
	return CUDA_SUCCESS;
}

CUresult sim_mem_alloc_locked(struct CUctx_st *ctx, size_t size, int kind, CUdeviceptr *dptr, void **host)
{
	return alloc_from(ctx, size, kind, dptr, host, &next_va, UINT64_MAX);
}

CUresult sim_mem_alloc_managed_locked(struct CUctx_st *ctx, size_t size, int kind, CUdeviceptr *dptr,
				      void **host)
{
	return alloc_from(ctx, size, kind, dptr, host, &next_managed_va, SIM_MANAGED_VA_END);
}

void *sim_mem_translate_locked(struct CUctx_st *ctx, CUdeviceptr addr, size_t bytes)
{
	long i = floor_index(&ctx->allocs, addr);
	if (i < 0)
		return NULL;
	const struct sim_alloc *a = &ctx->allocs.v[i];
	uint64_t off = addr - a->base;
	if (a->dead || off > a->size || bytes > a->size - off || (bytes == 0 && off == a->size && a->size))
		return NULL;
	return (char *)a->host + off;
}

bool sim_mem_remove_locked(struct CUctx_st *ctx, CUdeviceptr base, int kind, struct sim_alloc *out)
{
	struct sim_alloc_table *t = &ctx->allocs;
	long i = floor_index(t, base);
	if (i < 0 || t->v[i].base != base || t->v[i].dead || t->v[i].kind != kind)
		return false;
	*out = t->v[i];
	t->v[i].dead = true;
	if (++t->ndead * 2 > t->n)
		compact(t);
	return true;
}

CUresult sim_mem_insert_locked(struct CUctx_st *ctx, CUdeviceptr base, size_t size, void *host, int kind)
{
	struct sim_alloc_table *t = &ctx->allocs;
	if (t->n == t->cap) {
		size_t ncap = t->cap ? t->cap * 2 : 64;
		struct sim_alloc *nv = realloc(t->v, ncap * sizeof *nv);
		if (!nv)
			return CUDA_ERROR_OUT_OF_MEMORY;
		t->v = nv;
		t->cap = ncap;
	}
	size_t at = (size_t)(floor_index(t, base) + 1);
	memmove(&t->v[at + 1], &t->v[at], (t->n - at) * sizeof *t->v);
	t->n++;
	t->v[at] = (struct sim_alloc){.base = base, .size = size, .host = host, .kind = (uint8_t)kind};
	return CUDA_SUCCESS;
}

void sim_mem_release(struct sim_device *dev, struct sim_alloc *a)
{
	if (a->kind == SIM_ALLOC_VMM)
		return; /* the physical allocation's memory (vmm.c) */
	host_free(a->host, a->size, a->mmapped);
	atomic_fetch_sub(&dev->mem_used, a->acct);
}

void sim_mem_release_all(struct CUctx_st *ctx)
{
	pthread_mutex_lock(&ctx->lock);
	struct sim_alloc_table *t = &ctx->allocs;
	for (size_t i = 0; i < t->n; i++)
		if (!t->v[i].dead)
			sim_mem_release(ctx->dev, &t->v[i]);
	t->n = t->ndead = 0;
	pthread_mutex_unlock(&ctx->lock);
}

CUresult cuMemAlloc(CUdeviceptr *dptr, size_t bytesize)
{
	struct CUctx_st *c;
	CUresult r = sim_ctx_enter(&c, false);
	if (r)
		return r;
	if (!dptr) {
		sim_ctx_put(c);
		return CUDA_ERROR_INVALID_VALUE;
	}
	pthread_mutex_lock(&c->lock);
	r = sim_mem_alloc_locked(c, bytesize, SIM_ALLOC_USER, dptr, NULL);
	pthread_mutex_unlock(&c->lock);
	sim_ctx_put(c);
	return r;
}

/* Managed memory is ordinary simulated device memory at an address a guest
 * can map (above); coherence with the guest's copy is the frontend's. Freed
 * with cuMemFree. */
CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags)
{
	struct CUctx_st *c;
	CUresult r = sim_ctx_enter(&c, false);
	if (r)
		return r;
	if (!dptr || (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST)) {
		sim_ctx_put(c);
		return CUDA_ERROR_INVALID_VALUE;
	}
	pthread_mutex_lock(&c->lock);
	r = sim_mem_alloc_managed_locked(c, bytesize, SIM_ALLOC_USER, dptr, NULL);
	pthread_mutex_unlock(&c->lock);
	sim_ctx_put(c);
	return r;
}

/* Only CU_POINTER_ATTRIBUTE_IS_MANAGED, which the executor asks of a module
 * variable to learn whether it is __managed__: managed memory is what lies in
 * the managed range (a module's managed variables share one allocation
 * there). Other attributes are the frontend's to answer. */
CUresult cuPointerGetAttribute(void *data, CUpointer_attribute attribute, CUdeviceptr ptr)
{
	if (!data)
		return CUDA_ERROR_INVALID_VALUE;
	if (attribute != CU_POINTER_ATTRIBUTE_IS_MANAGED)
		return CUDA_ERROR_NOT_SUPPORTED;
	struct CUctx_st *c;
	CUresult r = sim_ctx_enter(&c, false);
	if (r)
		return r;
	pthread_mutex_lock(&c->lock);
	bool known = sim_mem_translate_locked(c, ptr, 1) != NULL;
	pthread_mutex_unlock(&c->lock);
	sim_ctx_put(c);
	if (!known)
		return CUDA_ERROR_INVALID_VALUE;
	*(unsigned *)data = ptr >= SIM_MANAGED_VA_BASE && ptr < SIM_MANAGED_VA_END;
	return CUDA_SUCCESS;
}

/* Like every release call, this releases even in a failed context (and then
 * reports its sticky error), so a caller can clean up before destroying it. */
CUresult cuMemFree(CUdeviceptr dptr)
{
	struct CUctx_st *c;
	CUresult r = sim_ctx_enter(&c, true);
	if (r)
		return r;
	struct sim_alloc a;
	bool found = false;
	if (dptr) {
		/* As on a GPU, work queued before the free still sees the
		 * memory (kernel<<<>>>(p); cuMemFree(p) is fine): a kernel
		 * translates its addresses when it runs, so wait for that work
		 * before the range leaves the table. */
		sim_wait_ctx_seq(c, sim_ctx_fence(c));
		pthread_mutex_lock(&c->lock);
		found = sim_mem_remove_locked(c, dptr, SIM_ALLOC_USER, &a);
		/* Another thread may have queued work on it meanwhile. */
		uint64_t fence = sim_ctx_fence(c);
		pthread_mutex_unlock(&c->lock);
		if (found) {
			sim_wait_ctx_seq(c, fence);
			sim_mem_release(c->dev, &a);
		}
	}
	r = (CUresult)atomic_load(&c->sticky);
	if (!r && dptr && !found)
		r = CUDA_ERROR_INVALID_VALUE;
	sim_ctx_put(c);
	return r;
}

CUresult cuMemGetInfo(size_t *free_bytes, size_t *total)
{
	struct CUctx_st *c;
	CUresult r = sim_ctx_enter(&c, false);
	if (r)
		return r;
	if (!free_bytes || !total)
		r = CUDA_ERROR_INVALID_VALUE;
	else {
		uint64_t used = atomic_load(&c->dev->mem_used);
		*total = (size_t)c->dev->p.mem_bytes;
		*free_bytes = (size_t)(used < c->dev->p.mem_bytes ? c->dev->p.mem_bytes - used : 0);
	}
	sim_ctx_put(c);
	return r;
}

/* ---- pinned host memory --------------------------------------------------------- */

/* Page-locked host ranges (cuMemAllocHost and cuMemHostRegister), sorted by
 * start and disjoint. Async copies read or write them when they execute,
 * as DMA would; copies from any other host memory follow the pageable rules.
 *
 * Freeing or unregistering one must wait for the queued copies that use it,
 * and only for those: each range keeps, per context that used it, the
 * sequence number of the last copy that context queued on it (contexts'
 * work interleaves on a device, so a number alone says nothing about other
 * contexts' copies). A copy is queued and noted under the read lock and a
 * range is removed under the write lock, so once removed no new copy can
 * use it and the noted numbers cover every one that did. (Copies are the
 * driver's only operations on host memory; what a host function touches is
 * its caller's business, as with any host memory.) */
struct sim_pin_use {
	struct CUctx_st *ctx; /* referenced */
	uint64_t seq;
};
struct sim_pin_uses {
	pthread_mutex_t lock; /* copies note uses under the read lock, concurrently */
	struct sim_pin_use *v;
	size_t n, cap;
	/* Per device, the last copy that could not be noted above (out of
	 * memory): waited for with everything queued before it. */
	uint64_t *overflow_seq;
};
struct sim_pinned {
	uintptr_t start;
	size_t len;
	const struct CUctx_st *owner;
	bool allocated;            /* by cuMemAllocHost: we unmap it */
	struct sim_pin_uses *uses; /* separate so entries can move */
};

static pthread_rwlock_t pin_lock = PTHREAD_RWLOCK_INITIALIZER;
static struct sim_pinned *pins;
static size_t npins, pincap;

static long pin_floor(uintptr_t p)
{
	long lo = 0, hi = (long)npins - 1, best = -1;
	while (lo <= hi) {
		long mid = lo + (hi - lo) / 2;
		if (pins[mid].start <= p) {
			best = mid;
			lo = mid + 1;
		} else
			hi = mid - 1;
	}
	return best;
}

/* The range that holds all of [p, p + n), or NULL (pin_lock held). */
static struct sim_pinned *pinned_covers(const void *p, size_t n)
{
	uintptr_t s = (uintptr_t)p;
	long i = pin_floor(s);
	bool in = i >= 0 && s - pins[i].start < pins[i].len && n <= pins[i].len - (s - pins[i].start);
	return in ? &pins[i] : NULL;
}

/* Notes that ctx's copy seq uses pin (pin_lock held for reading, which
 * other copies may hold too). */
static void pin_note_use(struct sim_pinned *pin, struct CUctx_st *ctx, uint64_t seq)
{
	struct sim_pin_uses *u = pin->uses;
	pthread_mutex_lock(&u->lock);
	size_t i = 0;
	while (i < u->n && u->v[i].ctx != ctx)
		i++;
	if (i == u->n && u->n == u->cap) {
		size_t ncap = u->cap ? u->cap * 2 : 2;
		struct sim_pin_use *nv = realloc(u->v, ncap * sizeof *nv);
		if (nv) {
			u->v = nv;
			u->cap = ncap;
		}
	}
	if (i < u->n) {
		if (u->v[i].seq < seq)
			u->v[i].seq = seq;
	} else if (u->n < u->cap) {
		sim_obj_ref(&ctx->obj);
		u->v[u->n++] = (struct sim_pin_use){ctx, seq};
	} else if (u->overflow_seq[ctx->dev->ordinal] < seq)
		u->overflow_seq[ctx->dev->ordinal] = seq;
	pthread_mutex_unlock(&u->lock);
}

static struct sim_pin_uses *pin_uses_new(void)
{
	struct sim_pin_uses *u = calloc(1, sizeof *u);
	if (!u)
		return NULL;
	u->overflow_seq = calloc((size_t)sim.ndev, sizeof *u->overflow_seq);
	if (!u->overflow_seq) {
		free(u);
		return NULL;
	}
	pthread_mutex_init(&u->lock, NULL);
	return u;
}

static void pin_uses_free(struct sim_pin_uses *u)
{
	if (!u)
		return;
	for (size_t i = 0; i < u->n; i++)
		sim_ctx_put(u->v[i].ctx);
	free(u->v);
	free(u->overflow_seq);
	pthread_mutex_destroy(&u->lock);
	free(u);
}

/* Waits for the copies that used a removed range, then forgets them. */
static void pin_wait_uses(struct sim_pinned *pin)
{
	struct sim_pin_uses *u = pin->uses;
	for (size_t i = 0; i < u->n; i++)
		sim_wait_ctx_seq(u->v[i].ctx, u->v[i].seq);
	for (int i = 0; i < sim.ndev; i++)
		if (u->overflow_seq[i])
			sim_wait_dev_seq(&sim.devs[i], u->overflow_seq[i]);
	pin_uses_free(u);
	pin->uses = NULL;
}

static bool pinned_overlaps(uintptr_t s, size_t n)
{
	long i = pin_floor(s + n - 1);
	return i >= 0 && pins[i].start + pins[i].len > s;
}

/* pin_lock held for writing. */
static CUresult pin_insert(uintptr_t s, size_t n, const struct CUctx_st *owner, bool allocated)
{
	if (n > UINTPTR_MAX - s)
		return CUDA_ERROR_INVALID_VALUE;
	if (pinned_overlaps(s, n))
		return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
	if (npins == pincap) {
		size_t ncap = pincap ? pincap * 2 : 32;
		struct sim_pinned *np = realloc(pins, ncap * sizeof *np);
		if (!np)
			return CUDA_ERROR_OUT_OF_MEMORY;
		pins = np;
		pincap = ncap;
	}
	struct sim_pin_uses *uses = pin_uses_new();
	if (!uses)
		return CUDA_ERROR_OUT_OF_MEMORY;
	size_t at = (size_t)(pin_floor(s) + 1);
	memmove(&pins[at + 1], &pins[at], (npins - at) * sizeof *pins);
	pins[at] = (struct sim_pinned){s, n, owner, allocated, uses};
	npins++;
	return CUDA_SUCCESS;
}

static void unpin_release(struct sim_pinned *p)
{
	pin_uses_free(p->uses);
	p->uses = NULL;
	if (p->allocated)
		munmap((void *)p->start, p->len);
}

/* Removes the range starting at p of that type; false if there is none. */
static bool pin_remove(const void *p, bool allocated, struct sim_pinned *out)
{
	pthread_rwlock_wrlock(&pin_lock);
	long i = pin_floor((uintptr_t)p);
	bool ok = i >= 0 && pins[i].start == (uintptr_t)p && pins[i].allocated == allocated;
	if (ok) {
		*out = pins[i];
		memmove(&pins[i], &pins[i + 1], (npins - (size_t)i - 1) * sizeof *pins);
		npins--;
	}
	pthread_rwlock_unlock(&pin_lock);
	if (ok)
		pin_wait_uses(out);
	return ok;
}

void sim_pinned_release_ctx(struct CUctx_st *ctx)
{
	struct sim_pinned *gone = NULL;
	size_t ngone = 0;
	pthread_rwlock_wrlock(&pin_lock);
	size_t j = 0;
	for (size_t i = 0; i < npins; i++) {
		if (pins[i].owner != ctx) {
			pins[j++] = pins[i];
			continue;
		}
		struct sim_pinned *ng = realloc(gone, (ngone + 1) * sizeof *ng);
		if (!ng) {
			pins[j++] = pins[i]; /* keep it pinned rather than lose track */
			continue;
		}
		gone = ng;
		gone[ngone++] = pins[i];
	}
	npins = j;
	pthread_rwlock_unlock(&pin_lock);
	for (size_t i = 0; i < ngone; i++) {
		pin_wait_uses(&gone[i]);
		unpin_release(&gone[i]);
	}
	free(gone);
}

void sim_pinned_fini(void)
{
	pthread_rwlock_wrlock(&pin_lock);
	for (size_t i = 0; i < npins; i++)
		unpin_release(&pins[i]); /* the workers are gone */
	free(pins);
	pins = NULL;
	npins = pincap = 0;
	pthread_rwlock_unlock(&pin_lock);
}

/* Records a pinned range of context c unless c is being destroyed; under
 * c's lock, so teardown never misses a range it must release. */
static CUresult pin_insert_live(struct CUctx_st *c, uintptr_t addr, size_t len, bool owned)
{
	CUresult r;
	pthread_mutex_lock(&c->lock);
	if (c->destroyed)
		r = CUDA_ERROR_CONTEXT_IS_DESTROYED;
	else {
		pthread_rwlock_wrlock(&pin_lock);
		r = pin_insert(addr, len, c, owned);
		pthread_rwlock_unlock(&pin_lock);
	}
	pthread_mutex_unlock(&c->lock);
	return r;
}

CUresult cuMemAllocHost(void **pp, size_t bytesize)
{
	struct CUctx_st *c;
	CUresult r = sim_ctx_enter(&c, false);
	if (r)
		return r;
	if (!pp || !bytesize) {
		sim_ctx_put(c);
		return CUDA_ERROR_INVALID_VALUE;
	}
	size_t len = round_up(bytesize, (uint64_t)sysconf(_SC_PAGESIZE));
	void *p = len < bytesize
		      ? MAP_FAILED
		      : mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		sim_ctx_put(c);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	r = pin_insert_live(c, (uintptr_t)p, len, true);
	if (r) {
		munmap(p, len);
		/* A stale registration of memory since unmapped can overlap. */
		if (r == CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED)
			r = CUDA_ERROR_OUT_OF_MEMORY;
	} else
		*pp = p;
	sim_ctx_put(c);
	return r;
}

CUresult cuMemFreeHost(void *p)
{
	if (!atomic_load(&sim.initialized))
		return CUDA_ERROR_NOT_INITIALIZED;
	struct sim_pinned gone;
	if (!p || !pin_remove(p, true, &gone))
		return CUDA_ERROR_INVALID_VALUE;
	unpin_release(&gone);
	return CUDA_SUCCESS;
}

CUresult cuMemHostRegister(void *p, size_t bytesize, unsigned int Flags)
{
	struct CUctx_st *c;
	CUresult r = sim_ctx_enter(&c, false);
	if (r)
		return r;
	const unsigned known = CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP |
			       CU_MEMHOSTREGISTER_IOMEMORY | CU_MEMHOSTREGISTER_READ_ONLY;
	if (!p || !bytesize || (Flags & ~known)) {
		sim_ctx_put(c);
		return CUDA_ERROR_INVALID_VALUE;
	}
	r = pin_insert_live(c, (uintptr_t)p, bytesize, false);
	sim_ctx_put(c);
	return r;
}

CUresult cuMemHostUnregister(void *p)
{
	if (!atomic_load(&sim.initialized))
		return CUDA_ERROR_NOT_INITIALIZED;
	struct sim_pinned gone;
	if (!p)
		return CUDA_ERROR_INVALID_VALUE;
	return pin_remove(p, false, &gone) ? CUDA_SUCCESS : CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
}

/* ---- async copies and memset ------------------------------------------------------ */

static void end_async(struct CUctx_st *c, struct CUstream_st *s)
{
	sim_stream_put(s);
	sim_ctx_put(c);
}

/* Common start of the async entry points: the current context (healthy), the
 * stream, which must belong to it, and a new op of kind. args_ok false (a
 * NULL host pointer) is an error even for zero bytes; otherwise zero bytes
 * queue nothing and succeed. *op NULL means the call is over: its result is
 * returned and nothing is held. Else c and s are held for end_async and the
 * op is the caller's to submit or free. */
static CUresult begin_async(CUstream h, bool args_ok, size_t bytes, enum sim_op_kind kind,
			    struct CUctx_st **c, struct CUstream_st **s, struct sim_op **op)
{
	*op = NULL;
	CUresult r = sim_ctx_enter(c, false);
	if (r)
		return r;
	r = sim_stream_get(h, *c, s);
	if (r) {
		sim_ctx_put(*c);
		return r;
	}
	if (!args_ok || !bytes) {
		end_async(*c, *s);
		return args_ok ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
	}
	*op = sim_op_new(*c, kind);
	if (!*op) {
		end_async(*c, *s);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	return CUDA_SUCCESS;
}

static bool host_is_pinned(const void *p, size_t n)
{
	pthread_rwlock_rdlock(&pin_lock);
	bool pinned = pinned_covers(p, n) != NULL;
	pthread_rwlock_unlock(&pin_lock);
	return pinned;
}

CUresult cuMemcpyHtoDAsync(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount, CUstream hStream)
{
	struct CUctx_st *c;
	struct CUstream_st *s;
	struct sim_op *op;
	CUresult r = begin_async(hStream, srcHost != NULL, ByteCount, SIM_OP_COPY, &c, &s, &op);
	if (!op)
		return r;
	op->u.copy.dir = SIM_H2D;
	op->u.copy.bytes = ByteCount;
	/* Check the destination first: a bad range must not cost a snapshot. */
	pthread_mutex_lock(&c->lock);
	bool dst_ok = sim_mem_translate_locked(c, dstDevice, ByteCount) != NULL;
	pthread_mutex_unlock(&c->lock);
	if (!dst_ok) {
		sim_op_free(op);
		end_async(c, s);
		return CUDA_ERROR_INVALID_VALUE;
	}
	/* Pageable source: the driver stages it before returning, so later
	 * writes by the caller do not change what is copied. The snapshot is
	 * taken before any lock: it may be large. */
	if (!host_is_pinned(srcHost, ByteCount)) {
		op->u.copy.snapshot = malloc(ByteCount);
		if (!op->u.copy.snapshot) {
			sim_op_free(op);
			end_async(c, s);
			return CUDA_ERROR_OUT_OF_MEMORY;
		}
		memcpy(op->u.copy.snapshot, srcHost, ByteCount);
	}
	pthread_mutex_lock(&c->lock);
	void *dst = c->destroyed ? NULL : sim_mem_translate_locked(c, dstDevice, ByteCount);
	if (!dst)
		r = c->destroyed ? CUDA_ERROR_CONTEXT_IS_DESTROYED : CUDA_ERROR_INVALID_VALUE;
	else {
		pthread_rwlock_rdlock(&pin_lock);
		struct sim_pinned *pin = op->u.copy.snapshot ? NULL : pinned_covers(srcHost, ByteCount);
		if (!op->u.copy.snapshot && !pin) {
			/* Unpinned since the check above (rare): stage it now. */
			op->u.copy.snapshot = malloc(ByteCount);
			if (op->u.copy.snapshot)
				memcpy(op->u.copy.snapshot, srcHost, ByteCount);
			else
				r = CUDA_ERROR_OUT_OF_MEMORY;
		}
		if (!r) {
			op->u.copy.dst = dst;
			op->u.copy.src = op->u.copy.snapshot ? op->u.copy.snapshot : srcHost;
			uint64_t seq = sim_submit(op, s);
			op = NULL;
			if (pin)
				pin_note_use(pin, c, seq);
		}
		pthread_rwlock_unlock(&pin_lock);
	}
	pthread_mutex_unlock(&c->lock);
	if (op)
		sim_op_free(op);
	end_async(c, s);
	return r;
}

CUresult cuMemcpyDtoHAsync(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream)
{
	struct CUctx_st *c;
	struct CUstream_st *s;
	struct sim_op *op;
	CUresult r = begin_async(hStream, dstHost != NULL, ByteCount, SIM_OP_COPY, &c, &s, &op);
	if (!op)
		return r;
	op->u.copy.dir = SIM_D2H;
	op->u.copy.bytes = ByteCount;
	op->u.copy.dst = dstHost;
	bool pinned = false;
	uint64_t seq = 0;
	pthread_mutex_lock(&c->lock);
	const void *src = c->destroyed ? NULL : sim_mem_translate_locked(c, srcDevice, ByteCount);
	if (!src)
		r = c->destroyed ? CUDA_ERROR_CONTEXT_IS_DESTROYED : CUDA_ERROR_INVALID_VALUE;
	else {
		op->u.copy.src = src;
		pthread_rwlock_rdlock(&pin_lock);
		struct sim_pinned *pin = pinned_covers(dstHost, ByteCount);
		pinned = pin != NULL;
		seq = sim_submit(op, s);
		op = NULL;
		if (pin)
			pin_note_use(pin, c, seq);
		pthread_rwlock_unlock(&pin_lock);
	}
	pthread_mutex_unlock(&c->lock);
	if (op)
		sim_op_free(op);
	else if (!pinned) {
		/* Pageable destination: the call returns once the copy is done. */
		sim_wait_ctx_seq(c, seq);
		r = (CUresult)atomic_load(&c->sticky);
	}
	end_async(c, s);
	return r;
}

/* One row of ByteCount bytes: the pitched copy does the checks and the
 * submit. */
CUresult cuMemcpyDtoDAsync(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream)
{
	CUDA_MEMCPY2D row = {.srcMemoryType = CU_MEMORYTYPE_DEVICE,
			     .srcDevice = srcDevice,
			     .srcPitch = ByteCount,
			     .dstMemoryType = CU_MEMORYTYPE_DEVICE,
			     .dstDevice = dstDevice,
			     .dstPitch = ByteCount,
			     .WidthInBytes = ByteCount,
			     .Height = 1};
	return cuMemcpy2DAsync(&row, hStream);
}

/* One row of N bytes: the pitched memset does the checks and the submit. */
CUresult cuMemsetD8Async(CUdeviceptr dstDevice, unsigned char uc, size_t N, CUstream hStream)
{
	return cuMemsetD2D8Async(dstDevice, N, uc, N, 1, hStream);
}

/* ---- pitched (2D) copies and memset ------------------------------------------ */

/* The extent of height rows of width bytes, pitch apart; false when it
 * overflows or the pitch is below the width. */
static bool pitched_span(size_t pitch, size_t width, size_t height, size_t *span)
{
	if (height > 1 && pitch < width)
		return false;
	return !__builtin_mul_overflow(height - 1, pitch, span) &&
	       !__builtin_add_overflow(*span, width, span);
}

/* Device-to-device only: what xgpud asks of it (its host rows go through
 * the 1D copies, from staging buffers). Offsets (srcXInBytes, srcY) apply
 * as in CUDA. */
CUresult cuMemcpy2DAsync(const CUDA_MEMCPY2D *p, CUstream hStream)
{
	if (!p)
		return CUDA_ERROR_INVALID_VALUE;
	if (p->srcMemoryType != CU_MEMORYTYPE_DEVICE || p->dstMemoryType != CU_MEMORYTYPE_DEVICE)
		return CUDA_ERROR_NOT_SUPPORTED;
	size_t sspan, dspan, bytes;
	if (!pitched_span(p->srcPitch, p->WidthInBytes, p->Height, &sspan) ||
	    !pitched_span(p->dstPitch, p->WidthInBytes, p->Height, &dspan) ||
	    __builtin_mul_overflow(p->WidthInBytes, p->Height, &bytes))
		return CUDA_ERROR_INVALID_VALUE;
	CUdeviceptr src0 = p->srcDevice + p->srcY * p->srcPitch + p->srcXInBytes;
	CUdeviceptr dst0 = p->dstDevice + p->dstY * p->dstPitch + p->dstXInBytes;
	struct CUctx_st *c;
	struct CUstream_st *s;
	struct sim_op *op;
	CUresult r = begin_async(hStream, true, bytes, SIM_OP_COPY, &c, &s, &op);
	if (!op)
		return r;
	op->u.copy.dir = SIM_D2D;
	op->u.copy.bytes = p->WidthInBytes;
	op->u.copy.rows = p->Height;
	op->u.copy.dst_pitch = p->dstPitch;
	op->u.copy.src_pitch = p->srcPitch;
	pthread_mutex_lock(&c->lock);
	void *dst = c->destroyed ? NULL : sim_mem_translate_locked(c, dst0, dspan);
	const void *src = dst ? sim_mem_translate_locked(c, src0, sspan) : NULL;
	if (!src)
		r = c->destroyed ? CUDA_ERROR_CONTEXT_IS_DESTROYED : CUDA_ERROR_INVALID_VALUE;
	else {
		op->u.copy.dst = dst;
		op->u.copy.src = src;
		sim_submit(op, s);
		op = NULL;
	}
	pthread_mutex_unlock(&c->lock);
	if (op)
		sim_op_free(op);
	end_async(c, s);
	return r;
}

CUresult cuMemsetD2D8Async(CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc, size_t Width,
			   size_t Height, CUstream hStream)
{
	size_t span, bytes;
	if (!pitched_span(dstPitch, Width, Height, &span) || __builtin_mul_overflow(Width, Height, &bytes))
		return CUDA_ERROR_INVALID_VALUE;
	struct CUctx_st *c;
	struct CUstream_st *s;
	struct sim_op *op;
	CUresult r = begin_async(hStream, true, bytes, SIM_OP_MEMSET, &c, &s, &op);
	if (!op)
		return r;
	op->u.memset.value = uc;
	op->u.memset.bytes = Width;
	op->u.memset.rows = Height;
	op->u.memset.pitch = dstPitch;
	pthread_mutex_lock(&c->lock);
	void *dst = c->destroyed ? NULL : sim_mem_translate_locked(c, dstDevice, span);
	if (!dst)
		r = c->destroyed ? CUDA_ERROR_CONTEXT_IS_DESTROYED : CUDA_ERROR_INVALID_VALUE;
	else {
		op->u.memset.dst = dst;
		sim_submit(op, s);
		op = NULL;
	}
	pthread_mutex_unlock(&c->lock);
	if (op)
		sim_op_free(op);
	end_async(c, s);
	return r;
}
