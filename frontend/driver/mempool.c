/* SPDX-License-Identifier: Apache-2.0 */
/* mempool.c - stream-ordered allocation: the memory pools behind
 * cuMemAllocAsync/cudaMallocAsync and their family, one implementation both
 * frontends use (mempool.h).
 *
 * A pool is bookkeeping in the guest process over the daemon's ordinary
 * allocations (MEM_ALLOC/MEM_FREE): every byte a pool holds, in use or
 * cached, is charged to the domain's memory limit and checked like any
 * cudaMalloc pointer, and the daemon needs nothing new (docs/design.md,
 * "Stream-ordered memory"). A stream-ordered free records an event on its
 * stream and keeps the block cached. The block is handed out again
 *  - at once to an allocation on the stream it was freed on (stream order
 *    puts the new user after the free),
 *  - to another stream once its event has completed (opportunistic reuse),
 *  - or to another stream made to wait for the event first (internal
 *    dependencies),
 * as the pool's reuse attributes allow. Cached memory above a pool's release
 * threshold goes back to the daemon at synchronisation points, once the
 * frees are known complete; all of it goes back before an allocation fails
 * for the domain's limit, so cached memory never makes an allocation fail.
 *
 * One lock covers all pools and is held across the calls to the daemon a
 * pool operation makes; those are short (allocate, free, record, query),
 * except the waits of a release before failing for memory. */
#include "allocs.h"
#include "driver.h"
#include "mempool.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define XGPU_EXPORTED __attribute__((visibility("default")))

/* Sizes are rounded up to this, the alignment cudaMalloc guarantees. */
#define POOL_GRANULE 256u
/* Cached blocks an allocation asks the completion of, at most. */
#define POOL_REUSE_QUERIES 4
/* Events kept for the next frees instead of being destroyed. */
#define SPARE_EVENTS 32

struct pool;

struct pool_block {
	struct pool_block *next;
	struct pool *pool;
	uint64_t dptr, size;
	xgpu_handle_t freed_on; /* while cached: the stream of the free */
	xgpu_handle_t event;    /* while cached: recorded at the free; 0 once known complete */
};

struct pool {
	struct pool *next;
	bool destroyed; /* by the program; lives on until its blocks are back */
	uint64_t max_size;
	uint64_t release_threshold;
	int follow_event_deps, allow_opportunistic, allow_internal_deps;
	uint64_t reserved, used, reserved_high, used_high;
	struct pool_block *cached;
};

static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static struct pool default_pool = {
    .allow_opportunistic = 1, .allow_internal_deps = 1, .follow_event_deps = 1};
static struct pool *pools = &default_pool; /* every pool, the default last */
static struct pool *current_pool = &default_pool;
static struct pool_block *live; /* handed out, of every pool */
static xgpu_handle_t spare_events[SPARE_EVENTS];
static unsigned nspare;
/* The channel the blocks and events belong to: a forked child has another,
 * and the parent's handles mean nothing there. */
static struct xgpu_client *blocks_client;
static unsigned blocks_generation;

static struct pool *find_pool(void *handle)
{
	for (struct pool *p = pools; p; p = p->next)
		if (p == handle && !p->destroyed)
			return p;
	return NULL;
}

static void drop_all_blocks_locked(void)
{
	for (struct pool *p = pools; p; p = p->next) {
		for (struct pool_block *b = p->cached, *n; b; b = n) {
			n = b->next;
			xgpu_alloc_del(b->dptr, XGPU_ALLOC_DEVICE);
			free(b);
		}
		p->cached = NULL;
		p->reserved = p->used = 0;
	}
	for (struct pool_block *b = live, *n; b; b = n) {
		n = b->next;
		xgpu_alloc_del(b->dptr, XGPU_ALLOC_DEVICE);
		free(b);
	}
	live = NULL;
	nspare = 0;
}

/* Forgets the blocks of another channel (after fork). */
static void same_channel_locked(struct xgpu_client *c)
{
	if (blocks_client == c && blocks_generation == xgpu_fork_generation)
		return;
	drop_all_blocks_locked();
	blocks_client = c;
	blocks_generation = xgpu_fork_generation;
}

static int event_for_free(struct xgpu_client *c, xgpu_handle_t *ev)
{
	if (nspare) {
		*ev = spare_events[--nspare];
		return cudaSuccess;
	}
	struct xgpu_req_EVENT_CREATE req = {.flags = CU_EVENT_DISABLE_TIMING};
	struct xgpu_rsp_EVENT_CREATE rsp;
	int e = xgpu_call_EVENT_CREATE(c, &req, &rsp);
	if (!e)
		*ev = rsp.event;
	return e;
}

static void event_done(struct xgpu_client *c, xgpu_handle_t ev)
{
	if (!ev)
		return;
	if (nspare < SPARE_EVENTS) {
		spare_events[nspare++] = ev;
		return;
	}
	struct xgpu_req_EVENT_DESTROY req = {.event = ev};
	struct xgpu_rsp_EVENT_DESTROY rsp;
	xgpu_call_EVENT_DESTROY(c, &req, &rsp);
}

static bool event_complete(struct xgpu_client *c, xgpu_handle_t ev)
{
	struct xgpu_req_EVENT_QUERY req = {.event = ev};
	struct xgpu_rsp_EVENT_QUERY rsp;
	return xgpu_call_EVENT_QUERY(c, &req, &rsp) == cudaSuccess;
}

static void unlink_pool_locked(struct pool *p)
{
	for (struct pool **pp = &pools; *pp; pp = &(*pp)->next)
		if (*pp == p) {
			*pp = p->next;
			free(p);
			return;
		}
}

/* How a release knows that a cached block's free has completed. */
enum release_how {
	RELEASE_DEVICE_DONE, /* the device was synchronised: all have */
	RELEASE_STREAM_DONE, /* a stream was: those freed on it have */
	RELEASE_QUERY,       /* ask (EVENT_QUERY) */
	RELEASE_WAIT,        /* wait for each (EVENT_SYNC) */
};

/* Gives cached blocks of p back to the daemon until p reserves at most keep
 * bytes, those whose free is complete as how finds out. Returns the bytes
 * given back. */
static uint64_t release_locked(struct xgpu_client *c, struct pool *p, uint64_t keep, enum release_how how,
			       xgpu_handle_t stream_done)
{
	uint64_t released = 0;
	for (struct pool_block **bp = &p->cached; *bp && p->reserved > keep;) {
		struct pool_block *b = *bp;
		bool done = !b->event || how == RELEASE_DEVICE_DONE ||
			    (how == RELEASE_STREAM_DONE && b->freed_on == stream_done);
		if (!done && how == RELEASE_WAIT) {
			struct xgpu_req_EVENT_SYNC req = {.event = b->event};
			struct xgpu_rsp_EVENT_SYNC rsp;
			xgpu_call_EVENT_SYNC(c, &req, &rsp);
			done = true; /* an error breaks the context: the memory is no one's */
		} else if (!done && how == RELEASE_QUERY) {
			done = event_complete(c, b->event);
		}
		if (!done) {
			bp = &b->next;
			continue;
		}
		/* Forgotten before the free: after it, another thread's allocation
		 * may get the address and register it. */
		xgpu_alloc_del(b->dptr, XGPU_ALLOC_DEVICE);
		struct xgpu_req_MEM_FREE req = {.dptr = b->dptr};
		struct xgpu_rsp_MEM_FREE rsp;
		xgpu_call_MEM_FREE(c, &req, &rsp);
		event_done(c, b->event);
		p->reserved -= b->size;
		released += b->size;
		*bp = b->next;
		free(b);
	}
	if (p->destroyed && !p->reserved)
		unlink_pool_locked(p);
	return released;
}

static uint64_t release_everything_locked(struct xgpu_client *c)
{
	uint64_t released = 0;
	for (struct pool *p = pools, *n; p; p = n) {
		n = p->next; /* release may unlink a destroyed pool */
		released += release_locked(c, p, 0, RELEASE_WAIT, 0);
	}
	return released;
}

/* A cached block for size on stream, made safe to use there, or NULL (with
 * *err set if stream refused the wait: not a stream of this process). */
static struct pool_block *reuse_locked(struct xgpu_client *c, struct pool *p, uint64_t size,
				       xgpu_handle_t stream, int *err)
{
	/* A block at most twice the size, so a small allocation does not pin a
	 * large block. Same stream or known complete first; then complete by
	 * query; then any, behind a wait for its free. */
	struct pool_block **pick = NULL;
	int queries = 0;
	for (int pass = 0; pass < 3 && !pick; pass++) {
		if ((pass == 1 && !p->allow_opportunistic) || (pass == 2 && !p->allow_internal_deps))
			continue;
		for (struct pool_block **bp = &p->cached; *bp; bp = &(*bp)->next) {
			struct pool_block *b = *bp;
			if (b->size < size || b->size / 2 > size)
				continue;
			bool usable = true;
			if (pass == 0)
				usable = !b->event || b->freed_on == stream;
			else if (pass == 1) /* each query is a round trip: a few per allocation */
				usable = queries++ < POOL_REUSE_QUERIES && event_complete(c, b->event);
			if (usable && (!pick || b->size < (*pick)->size)) {
				pick = bp;
				if (pass == 1)
					break;
			}
		}
	}
	if (!pick)
		return NULL;
	struct pool_block *b = *pick;
	if (b->event && b->freed_on != stream) {
		/* Complete already (pass 1) or not: waiting costs nothing then. */
		struct xgpu_req_STREAM_WAIT_EVENT req = {.stream = stream, .event = b->event};
		struct xgpu_rsp_STREAM_WAIT_EVENT rsp;
		*err = xgpu_call_STREAM_WAIT_EVENT(c, &req, &rsp);
		if (*err)
			return NULL; /* not a stream of this process */
	}
	*pick = b->next;
	event_done(c, b->event);
	b->event = 0;
	return b;
}

static void note_used(struct pool *p)
{
	if (p->used > p->used_high)
		p->used_high = p->used;
	if (p->reserved > p->reserved_high)
		p->reserved_high = p->reserved;
}

XGPU_EXPORTED int xgpu_pool_alloc(struct xgpu_client *c, void *handle, uint64_t size, xgpu_handle_t stream,
				  uint64_t *dptr)
{
	if (!dptr || !size || size > UINT64_MAX - POOL_GRANULE)
		return cudaErrorInvalidValue;
	/* On a capturing stream: the capture's allocation node. */
	int captured = xgpu_graph_capture_alloc(stream, size, dptr);
	if (captured >= 0)
		return captured;
	size = (size + POOL_GRANULE - 1) / POOL_GRANULE * POOL_GRANULE;
	pthread_mutex_lock(&pool_lock);
	same_channel_locked(c);
	struct pool *p = handle ? find_pool(handle) : current_pool;
	int e = cudaSuccess;
	struct pool_block *b = p ? reuse_locked(c, p, size, stream, &e) : NULL;
	if (!p) {
		e = cudaErrorInvalidValue;
	} else if (!b && !e) {
		if (p->max_size && p->reserved + size > p->max_size)
			release_locked(c, p, 0, RELEASE_WAIT, 0);
		if (p->max_size && p->reserved + size > p->max_size)
			e = cudaErrorMemoryAllocation;
		b = e ? NULL : calloc(1, sizeof *b);
		if (!e && !b)
			e = cudaErrorMemoryAllocation;
		struct xgpu_req_MEM_ALLOC req = {.size = size};
		struct xgpu_rsp_MEM_ALLOC rsp;
		if (!e)
			e = xgpu_call_MEM_ALLOC(c, &req, &rsp);
		/* Over the domain's limit: what pools cache goes back first. */
		if (e == cudaErrorMemoryAllocation && b && release_everything_locked(c))
			e = xgpu_call_MEM_ALLOC(c, &req, &rsp);
		if (e) {
			free(b);
			b = NULL;
		} else {
			*b = (struct pool_block){.pool = p, .dptr = rsp.dptr, .size = size};
			p->reserved += size;
			/* Registered while the pool holds it, cached or handed out: the
			 * daemon counts it allocated all that time, so pointer
			 * attributes and unified copies know it as device memory. */
			xgpu_alloc_add(b->dptr, size, XGPU_ALLOC_DEVICE, 0);
		}
	}
	if (b) {
		b->next = live;
		live = b;
		p->used += b->size;
		note_used(p);
		*dptr = b->dptr;
	}
	pthread_mutex_unlock(&pool_lock);
	return e;
}

static struct pool_block *take_live_locked(uint64_t dptr)
{
	for (struct pool_block **bp = &live; *bp; bp = &(*bp)->next)
		if ((*bp)->dptr == dptr) {
			struct pool_block *b = *bp;
			*bp = b->next;
			return b;
		}
	return NULL;
}

XGPU_EXPORTED int xgpu_pool_free(struct xgpu_client *c, uint64_t dptr, xgpu_handle_t stream)
{
	if (!dptr)
		return cudaErrorInvalidValue;
	/* On a capturing stream: the capture's free node. */
	int captured = xgpu_graph_capture_free(stream, dptr);
	if (captured >= 0)
		return captured;
	pthread_mutex_lock(&pool_lock);
	same_channel_locked(c);
	struct pool_block *b = take_live_locked(dptr);
	int e = cudaSuccess;
	if (b) {
		xgpu_handle_t ev = 0;
		e = event_for_free(c, &ev);
		if (!e) {
			struct xgpu_req_EVENT_RECORD req = {.event = ev, .stream = stream};
			struct xgpu_rsp_EVENT_RECORD rsp;
			e = xgpu_call_EVENT_RECORD(c, &req, &rsp);
			if (e)
				event_done(c, ev);
		}
		if (e) {
			/* Bad stream: the block stays the program's. */
			b->next = live;
			live = b;
		} else {
			struct pool *p = b->pool;
			b->event = ev;
			b->freed_on = stream;
			b->next = p->cached;
			p->cached = b;
			p->used -= b->size;
		}
	}
	bool was_pools = b != NULL;
	pthread_mutex_unlock(&pool_lock);
	if (was_pools)
		return e;
	if (xgpu_graph_mem_keep(dptr))
		return cudaSuccess;
	/* Not a pool's: an ordinary allocation, freed after the stream's work
	 * before this call, as the free would have been ordered. */
	struct xgpu_req_STREAM_SYNC sq = {.stream = stream};
	struct xgpu_rsp_STREAM_SYNC ss;
	e = xgpu_call_STREAM_SYNC(c, &sq, &ss);
	if (e)
		return e;
	struct xgpu_req_MEM_FREE req = {.dptr = dptr};
	struct xgpu_rsp_MEM_FREE rsp;
	e = xgpu_call_MEM_FREE(c, &req, &rsp);
	if (!e)
		xgpu_alloc_del(dptr, XGPU_ALLOC_DEVICE);
	return e;
}

XGPU_EXPORTED bool xgpu_pool_graph_memory(uint64_t dptr)
{
	return xgpu_graph_mem_keep((CUdeviceptr)dptr);
}

XGPU_EXPORTED bool xgpu_pool_forget(uint64_t dptr)
{
	pthread_mutex_lock(&pool_lock);
	struct pool_block *b = take_live_locked(dptr);
	bool was_pools = b != NULL;
	if (b) {
		struct pool *p = b->pool;
		p->used -= b->size;
		p->reserved -= b->size;
		free(b);
		if (p->destroyed && !p->reserved)
			unlink_pool_locked(p);
	}
	pthread_mutex_unlock(&pool_lock);
	return was_pools;
}

XGPU_EXPORTED void xgpu_pool_synced(struct xgpu_client *c, bool device, xgpu_handle_t stream)
{
	enum release_how how = device                           ? RELEASE_DEVICE_DONE
			       : stream == XGPU_POOL_ANY_STREAM ? RELEASE_QUERY
								: RELEASE_STREAM_DONE;
	pthread_mutex_lock(&pool_lock);
	if (blocks_client == c && blocks_generation == xgpu_fork_generation)
		for (struct pool *p = pools, *n; p; p = n) {
			n = p->next;
			uint64_t keep = p->destroyed ? 0 : p->release_threshold;
			if (p->reserved > keep && p->cached)
				release_locked(c, p, keep, how, stream);
		}
	pthread_mutex_unlock(&pool_lock);
}

XGPU_EXPORTED bool xgpu_pool_release_cached(struct xgpu_client *c)
{
	pthread_mutex_lock(&pool_lock);
	bool any = false;
	if (blocks_client == c && blocks_generation == xgpu_fork_generation)
		any = release_everything_locked(c) > 0;
	pthread_mutex_unlock(&pool_lock);
	return any;
}

XGPU_EXPORTED void xgpu_pool_reset(void)
{
	pthread_mutex_lock(&pool_lock);
	drop_all_blocks_locked();
	pthread_mutex_unlock(&pool_lock);
}

XGPU_EXPORTED int xgpu_pool_trim(struct xgpu_client *c, void *handle, uint64_t keep)
{
	pthread_mutex_lock(&pool_lock);
	same_channel_locked(c);
	struct pool *p = find_pool(handle);
	if (p)
		release_locked(c, p, keep, RELEASE_QUERY, 0);
	pthread_mutex_unlock(&pool_lock);
	return p ? cudaSuccess : cudaErrorInvalidValue;
}

/* ---- pools as objects ----------------------------------------------- */

XGPU_EXPORTED int xgpu_pool_default(int device, void **out)
{
	if (!out)
		return cudaErrorInvalidValue;
	if (device != 0)
		return cudaErrorInvalidDevice;
	*out = &default_pool;
	return cudaSuccess;
}

XGPU_EXPORTED int xgpu_pool_current(int device, void **out)
{
	if (!out)
		return cudaErrorInvalidValue;
	if (device != 0)
		return cudaErrorInvalidDevice;
	pthread_mutex_lock(&pool_lock);
	*out = current_pool;
	pthread_mutex_unlock(&pool_lock);
	return cudaSuccess;
}

XGPU_EXPORTED int xgpu_pool_set_current(int device, void *handle)
{
	if (device != 0)
		return cudaErrorInvalidDevice;
	pthread_mutex_lock(&pool_lock);
	struct pool *p = find_pool(handle);
	if (p)
		current_pool = p;
	pthread_mutex_unlock(&pool_lock);
	return p ? cudaSuccess : cudaErrorInvalidValue;
}

XGPU_EXPORTED int xgpu_pool_create(const struct xgpu_pool_props *props, void **out)
{
	if (!props || !out || props->alloc_type != CU_MEM_ALLOCATION_TYPE_PINNED || props->has_reserved_bytes)
		return cudaErrorInvalidValue;
	if (props->location_type != CU_MEM_LOCATION_TYPE_DEVICE)
		return cudaErrorNotSupported; /* host pools: a named gap */
	if (props->location_id != 0)
		return cudaErrorInvalidDevice;
	if (props->handle_types != CU_MEM_HANDLE_TYPE_NONE)
		return cudaErrorNotSupported; /* IPC export of pools: a named gap */
	struct pool *p = calloc(1, sizeof *p);
	if (!p)
		return cudaErrorMemoryAllocation;
	p->max_size = props->max_size;
	p->allow_opportunistic = p->allow_internal_deps = p->follow_event_deps = 1;
	pthread_mutex_lock(&pool_lock);
	p->next = pools;
	pools = p;
	pthread_mutex_unlock(&pool_lock);
	*out = p;
	return cudaSuccess;
}

XGPU_EXPORTED int xgpu_pool_destroy(struct xgpu_client *c, void *handle)
{
	pthread_mutex_lock(&pool_lock);
	struct pool *p = find_pool(handle);
	int e = !p || p == &default_pool ? cudaErrorInvalidValue : cudaSuccess;
	if (!e) {
		/* Outstanding allocations keep it alive until they come back. */
		p->destroyed = true;
		if (current_pool == p)
			current_pool = &default_pool;
		if (c) {
			same_channel_locked(c);
			release_locked(c, p, 0, RELEASE_QUERY, 0);
		} else if (!p->reserved) {
			unlink_pool_locked(p);
		}
	}
	pthread_mutex_unlock(&pool_lock);
	return e;
}

XGPU_EXPORTED int xgpu_pool_set_attr(void *handle, int attr, const void *value)
{
	if (!value)
		return cudaErrorInvalidValue;
	int e = cudaSuccess;
	pthread_mutex_lock(&pool_lock);
	struct pool *p = find_pool(handle);
	if (!p) {
		e = cudaErrorInvalidValue;
	} else {
		int flag;
		uint64_t u64;
		switch (attr) {
		case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
		case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
		case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
			memcpy(&flag, value, sizeof flag);
			*(attr == CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES ? &p->follow_event_deps
			  : attr == CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC     ? &p->allow_opportunistic
										  : &p->allow_internal_deps) =
			    flag != 0;
			break;
		case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
			memcpy(&p->release_threshold, value, sizeof p->release_threshold);
			break;
		case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
		case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
			/* Only a reset to the current value is allowed. */
			memcpy(&u64, value, sizeof u64);
			if (u64)
				e = cudaErrorInvalidValue;
			else if (attr == CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH)
				p->reserved_high = p->reserved;
			else
				p->used_high = p->used;
			break;
		default:
			e = cudaErrorInvalidValue;
		}
	}
	pthread_mutex_unlock(&pool_lock);
	return e;
}

XGPU_EXPORTED int xgpu_pool_get_attr(void *handle, int attr, void *value)
{
	if (!value)
		return cudaErrorInvalidValue;
	int e = cudaSuccess;
	pthread_mutex_lock(&pool_lock);
	struct pool *p = find_pool(handle);
	if (!p) {
		e = cudaErrorInvalidValue;
	} else {
		int flag;
		uint64_t u64 = 0;
		switch (attr) {
		case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
		case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
		case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
			flag = attr == CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES ? p->follow_event_deps
			       : attr == CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC ? p->allow_opportunistic
										   : p->allow_internal_deps;
			memcpy(value, &flag, sizeof flag);
			break;
		case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
			u64 = p->release_threshold;
			break;
		case CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT:
			u64 = p->reserved;
			break;
		case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
			u64 = p->reserved_high;
			break;
		case CU_MEMPOOL_ATTR_USED_MEM_CURRENT:
			u64 = p->used;
			break;
		case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
			u64 = p->used_high;
			break;
		default:
			e = cudaErrorInvalidValue;
		}
		if (!e && attr >= CU_MEMPOOL_ATTR_RELEASE_THRESHOLD)
			memcpy(value, &u64, sizeof u64);
	}
	pthread_mutex_unlock(&pool_lock);
	return e;
}

/* ---- the driver API ------------------------------------------------- */

#define XGPU_ALIAS(name) __attribute__((alias(#name)))

static CUresult pool_client(struct xgpu_client **c)
{
	return xgpu_drv_client_ctx(c);
}

CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream)
{
	struct xgpu_client *c;
	if (!dptr || !pool)
		return CUDA_ERROR_INVALID_VALUE;
	CUresult r = pool_client(&c);
	if (r)
		return r;
	uint64_t p = 0;
	r = xgpu_drv_result(xgpu_pool_alloc(c, pool, bytesize, xgpu_drv_stream(hStream), &p));
	if (!r)
		*dptr = (CUdeviceptr)p;
	return r;
}
CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream)
    XGPU_ALIAS(cuMemAllocFromPoolAsync);

CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
	struct xgpu_client *c;
	if (!dptr)
		return CUDA_ERROR_INVALID_VALUE;
	CUresult r = pool_client(&c);
	if (r)
		return r;
	uint64_t p = 0;
	r = xgpu_drv_result(xgpu_pool_alloc(c, NULL, bytesize, xgpu_drv_stream(hStream), &p));
	if (!r)
		*dptr = (CUdeviceptr)p;
	return r;
}
CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
    XGPU_ALIAS(cuMemAllocAsync);

CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream)
{
	struct xgpu_client *c;
	CUresult r = pool_client(&c);
	if (r)
		return r;
	return xgpu_drv_result(xgpu_pool_free(c, dptr, xgpu_drv_stream(hStream)));
}
CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream) XGPU_ALIAS(cuMemFreeAsync);

/* Asks lookup (the device's default or its current pool) for dev's pool. */
static CUresult device_pool(CUmemoryPool *pool_out, CUdevice dev, int (*lookup)(int device, void **pool))
{
	struct xgpu_client *c;
	if (!pool_out)
		return CUDA_ERROR_INVALID_VALUE;
	CUresult r = xgpu_drv_client(&c);
	if (r)
		return r;
	void *p = NULL;
	r = xgpu_drv_result(lookup(dev, &p));
	if (!r)
		*pool_out = p;
	return r;
}

CUresult cuDeviceGetDefaultMemPool(CUmemoryPool *pool_out, CUdevice dev)
{
	return device_pool(pool_out, dev, xgpu_pool_default);
}

CUresult cuDeviceGetMemPool(CUmemoryPool *pool, CUdevice dev)
{
	return device_pool(pool, dev, xgpu_pool_current);
}

CUresult cuDeviceSetMemPool(CUdevice dev, CUmemoryPool pool)
{
	struct xgpu_client *c;
	CUresult r = xgpu_drv_client(&c);
	if (r)
		return r;
	return xgpu_drv_result(xgpu_pool_set_current(dev, pool));
}

static bool any_nonzero(const unsigned char *bytes, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (bytes[i])
			return true;
	return false;
}

CUresult cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *poolProps)
{
	struct xgpu_client *c;
	if (!pool || !poolProps)
		return CUDA_ERROR_INVALID_VALUE;
	CUresult r = xgpu_drv_client(&c);
	if (r)
		return r;
	struct xgpu_pool_props props = {
	    .alloc_type = poolProps->allocType,
	    .handle_types = poolProps->handleTypes,
	    .location_type = poolProps->location.type,
	    .location_id = poolProps->location.id,
	    .max_size = poolProps->maxSize,
	    .has_reserved_bytes = any_nonzero(poolProps->reserved, sizeof poolProps->reserved) ||
				  poolProps->win32SecurityAttributes != NULL,
	};
	void *p = NULL;
	r = xgpu_drv_result(xgpu_pool_create(&props, &p));
	if (!r)
		*pool = p;
	return r;
}

CUresult cuMemPoolDestroy(CUmemoryPool pool)
{
	struct xgpu_client *c;
	CUresult r = xgpu_drv_client(&c);
	if (r)
		return r;
	return xgpu_drv_result(xgpu_pool_destroy(c, pool));
}

CUresult cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value)
{
	return xgpu_drv_result(xgpu_pool_set_attr(pool, (int)attr, value));
}

CUresult cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value)
{
	return xgpu_drv_result(xgpu_pool_get_attr(pool, (int)attr, value));
}

CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t minBytesToKeep)
{
	struct xgpu_client *c;
	CUresult r = xgpu_drv_client(&c);
	if (r)
		return r;
	return xgpu_drv_result(xgpu_pool_trim(c, pool, minBytesToKeep));
}
