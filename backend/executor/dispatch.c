/* SPDX-License-Identifier: Apache-2.0 */
/* dispatch.c - decodes, validates and executes one request from a guest.
 *
 * The request has already been copied out of shared memory (poller.c); here
 * its header is checked against the call table, every handle field is looked
 * up in the domain's own table with the expected kind and owning channel
 * (generated from calls.def), every device range is checked against the
 * channel's own allocations, and only then does a handler call the driver.
 * Bulk data streams through the data areas; a handler that returns early
 * leaves the rest of its request's bulk to be skipped, so the stream stays in
 * step with the requests.
 */
#include "cuerr.h"
#include "fastclock.h"
#include "log.h"
#include "util.h"
#include "dispatch.h"
#include "channel.h"
#include "exec.h"
#include "graph.h"
#include "ipc.h"
#include "vmm.h"

#include <cuda_runtime_api.h>
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct call {
	struct xgpu_channel *ch;
	struct xgpu_domain *dom;
	struct xgpu_executor *x;
	struct xgpu_driver *drv;
	struct xgpu_req_hdr hdr;
	uint64_t bulk_left; /* request bytes still in the tx area */
	uint64_t bulk_sent; /* response bytes put in the rx area */
	const char *what;   /* for logs: the call's name */
	bool spin_ran_out;  /* a wait of this call outlasted its spin */
};

/* ---- waiting on one channel ---------------------------------------------- */

enum chan_wait { WAIT_TX_DATA, WAIT_RX_SPACE, WAIT_RSP_SPACE };

static bool chan_ready(struct xgpu_channel *ch, enum chan_wait w, uint32_t need)
{
	int64_t n;
	switch (w) {
	case WAIT_TX_DATA:
		n = xgpu_q_avail(&ch->v.tx);
		return n < 0 || n >= need;
	case WAIT_RX_SPACE:
		n = xgpu_q_space_for(&ch->v.rx, need);
		return n < 0 || n >= need;
	case WAIT_RSP_SPACE:
		return xgpu_q_space_for(&ch->v.rsp, 1) != 0;
	}
	return true;
}

static void chan_arm(struct xgpu_channel *ch, enum chan_wait w, uint32_t need)
{
	switch (w) {
	case WAIT_TX_DATA:
		xgpu_q_arm_data_for(&ch->v.tx, need);
		break;
	case WAIT_RX_SPACE:
		xgpu_q_arm_space(&ch->v.rx, need);
		break;
	case WAIT_RSP_SPACE:
		xgpu_q_arm_space(&ch->v.rsp, 1);
		break;
	}
}

static void chan_kill(struct xgpu_channel *ch, const char *why)
{
	if (!ch->dead) {
		ch->dead = true;
		ch->dead_reason = why;
	}
}

/* Waits for the guest to make progress on this channel, spinning briefly and
 * then sleeping on its kick and hang-up fds. Returns false (and marks the
 * channel dead) if the guest left, stalled past the timeout, or the daemon is
 * stopping. Only this domain's poller waits: other domains are unaffected. */
static bool chan_wait(struct call *c, enum chan_wait w, uint32_t need)
{
	struct xgpu_channel *ch = c->ch;
	uint64_t start = xgpu_now_ns();
	uint64_t stall_ns = (uint64_t)xgpu_stall_timeout_s(c->dom) * 1000000000ull;
	/* Spinning pays when the guest's side keeps up with ours, as a local
	 * guest copying at memory speed does. Bytes that come at a network's
	 * pace (a remote guest, through xgpud's relay) or from a busy guest
	 * leave each spin to run out, on a CPU the relay or the guest needs:
	 * after one wait of a call outlasted its spin, the call's later waits
	 * sleep at once. */
	if (!c->spin_ran_out) {
		while (xgpu_now_ns() - start < xgpu_spin_ns(c->dom)) {
			if (chan_ready(ch, w, need))
				return true;
			xgpu_cpu_relax();
		}
		c->spin_ran_out = xgpu_spin_ns(c->dom) > 0;
	}
	for (;;) {
		chan_arm(ch, w, need);
		if (chan_ready(ch, w, need))
			return true;
		if (atomic_load(&c->x->stopping)) {
			chan_kill(ch, "daemon stopping");
			return false;
		}
		if (xgpu_now_ns() - start > stall_ns) {
			dlog_warn(
			    c->dom,
			    "domain %s: channel %u (pid %d) made no progress for %u s in %s; closing it",
			    c->dom->name, ch->id, (int)ch->pid, xgpu_stall_timeout_s(c->dom), c->what);
			chan_kill(ch, "stalled");
			return false;
		}
		struct pollfd pfd = {ch->ops->wait_fd(ch), POLLIN, 0};
		int r = poll(&pfd, 1, 100);
		if (r < 0 && errno != EINTR) {
			chan_kill(ch, "poll failed");
			return false;
		}
		if (pfd.revents && !ch->ops->service(ch)) {
			chan_kill(ch, "guest disconnected");
			return false;
		}
	}
}

/* ---- bulk data ---------------------------------------------------------- */

/* Reads exactly len bytes of the request's bulk data. */
static int bulk_read(struct call *c, void *dst, uint64_t len)
{
	if (len > c->bulk_left)
		return cudaErrorInvalidValue;
	uint64_t got = 0;
	while (got < len) {
		bool kick;
		uint64_t want = len - got < XGPU_STREAM_SLICE ? len - got : XGPU_STREAM_SLICE;
		int64_t n = xgpu_stream_read(&c->ch->v.tx, (uint8_t *)dst + got, want, &kick);
		if (n < 0) {
			chan_kill(c->ch, "corrupt tx index");
			return cudaErrorInvalidValue;
		}
		if (kick)
			c->ch->ops->kick(c->ch);
		got += (uint64_t)n;
		c->bulk_left -= (uint64_t)n;
		if (got < len && n == 0) {
			/* Wake for a slice's worth, not for each piece the
			 * guest (or a remote guest's relay, a TLS record at a
			 * time) publishes. */
			uint64_t left = len - got, quarter = c->ch->v.data_size_tx / 4;
			uint64_t need = left < XGPU_STREAM_SLICE ? left : XGPU_STREAM_SLICE;
			if (!chan_wait(c, WAIT_TX_DATA, (uint32_t)(need < quarter ? need : quarter)))
				return cudaErrorInvalidValue;
		}
	}
	return cudaSuccess;
}

/* Discards what the handler did not consume, keeping the stream in step. */
static void bulk_skip(struct call *c)
{
	uint8_t sink[4096];
	while (c->bulk_left && !c->ch->dead) {
		uint64_t n = c->bulk_left < sizeof sink ? c->bulk_left : sizeof sink;
		if (bulk_read(c, sink, n))
			return;
	}
}

/* Appends len bytes to the response's bulk data. */
static int bulk_write(struct call *c, const void *src, uint64_t len)
{
	uint64_t put = 0;
	while (put < len) {
		bool kick;
		uint64_t want = len - put < XGPU_STREAM_SLICE ? len - put : XGPU_STREAM_SLICE;
		int64_t n = xgpu_stream_write(&c->ch->v.rx, (const uint8_t *)src + put, want, &kick);
		if (n < 0) {
			chan_kill(c->ch, "corrupt rx index");
			return cudaErrorInvalidValue;
		}
		if (kick)
			c->ch->ops->kick(c->ch);
		put += (uint64_t)n;
		c->bulk_sent += (uint64_t)n;
		if (put < len && n == 0) {
			uint64_t want = len - put;
			uint32_t quarter = c->ch->v.data_size_rx / 4;
			if (!chan_wait(c, WAIT_RX_SPACE, want < quarter ? (uint32_t)want : quarter))
				return cudaErrorInvalidValue;
		}
	}
	return cudaSuccess;
}

/* A NUL-terminated name streamed as the request's bulk data. */
static int read_name(struct call *c, char *name)
{
	uint64_t len = c->hdr.bulk_len;
	if (len == 0 || len > XGPU_MAX_NAME_BYTES)
		return cudaErrorInvalidValue;
	int r = bulk_read(c, name, len);
	if (r)
		return r;
	if (name[len - 1] != '\0' || strlen(name) != len - 1)
		return cudaErrorInvalidValue;
	/* Kernel and symbol names are printable ASCII; anything else would
	 * only end up forging lines in Dom0's log. */
	for (uint64_t i = 0; i + 1 < len; i++)
		if (name[i] < 0x20 || name[i] > 0x7e)
			return cudaErrorInvalidValue;
	return cudaSuccess;
}

/* ---- handle resolution (generated) ----------------------------------------- */

static int bad_handle(struct call *c, const char *field, uint64_t value)
{
	dlog_info(c->dom, "domain %s: %s refused: %s=0x%" PRIx64 " is not a handle of this process",
		  c->dom->name, c->what, field, value);
	return cudaErrorInvalidResourceHandle;
}

static bool resolve_stream(struct call *c, xgpu_handle_t h, CUstream *out)
{
	if (h == XGPU_STREAM_DEFAULT) {
		*out = NULL;
		return true;
	}
	struct xgpu_obj *o = xgpu_obj_get(&c->dom->objs, h, OBJ_STREAM, c->ch);
	*out = o ? o->u.stream.s : NULL;
	return o != NULL;
}

#define RES_U32(n)
#define RES_I32(n)
#define RES_U64(n)
#define RES_F32(n)
#define RES_DIM3(n)
#define RES_DPTR(n)
#define RES_STREAM(n) CUstream n;
#define RES_EVENT(n) struct xgpu_obj *n;
#define RES_MODULE(n) struct xgpu_obj *n;
#define RES_FUNC(n) struct xgpu_obj *n;
#define RES_SEG(n) struct xgpu_obj *n;
#define IN(type, name) RES_##type(name)
#define OUT(type, name)
#define XGPU_CALL(name, flags, bulk, fields)                                                                 \
	struct res_##name {                                                                                  \
		char none_;                                                                                  \
		fields                                                                                       \
	};
#include "calls.def"
#undef XGPU_CALL
#undef IN
#undef OUT

#define RSV_OBJ(n, kind)                                                                                     \
	if (!(res->n = xgpu_obj_get(&c->dom->objs, req->n, kind, c->ch)))                                    \
		return bad_handle(c, #n, req->n);
#define RSV_U32(n)
#define RSV_I32(n)
#define RSV_U64(n)
#define RSV_F32(n)
#define RSV_DIM3(n)
#define RSV_DPTR(n)
#define RSV_STREAM(n)                                                                                        \
	if (!resolve_stream(c, req->n, &res->n))                                                             \
		return bad_handle(c, #n, req->n);
#define RSV_EVENT(n) RSV_OBJ(n, OBJ_EVENT)
#define RSV_MODULE(n) RSV_OBJ(n, OBJ_MODULE)
#define RSV_FUNC(n) RSV_OBJ(n, OBJ_FUNC)
#define RSV_SEG(n) RSV_OBJ(n, OBJ_SEG)
#define IN(type, name) RSV_##type(name)
#define OUT(type, name)
#define XGPU_CALL(name, flags, bulk, fields)                                                                 \
	static int resolve_##name(struct call *c, const struct xgpu_req_##name *req, struct res_##name *res) \
	{                                                                                                    \
		(void)req;                                                                                   \
		(void)res;                                                                                   \
		fields return cudaSuccess;                                                                   \
	}
#include "calls.def"
#undef XGPU_CALL
#undef IN
#undef OUT

/* ---- checks shared by handlers -------------------------------------------- */

static int check_range(struct call *c, uint64_t dptr, uint64_t size, const char *field)
{
	if (xgpu_memmap_find(&c->dom->mem, dptr, size, c->ch))
		return cudaSuccess;
	dlog_info(c->dom,
		  "domain %s: %s refused: %s [0x%" PRIx64 ", +%" PRIu64
		  ") is not inside one of this process's "
		  "allocations",
		  c->dom->name, c->what, field, dptr, size);
	return cudaErrorInvalidValue;
}

static int check_seg_range(struct call *c, const struct xgpu_obj *seg, uint64_t off, uint64_t size)
{
	if (off <= seg->u.seg.size && size <= seg->u.seg.size - off)
		return cudaSuccess;
	dlog_info(c->dom,
		  "domain %s: %s refused: [%" PRIu64 ", +%" PRIu64 ") lies outside its %" PRIu64
		  "-byte host segment",
		  c->dom->name, c->what, off, size, seg->u.seg.size);
	return cudaErrorInvalidValue;
}

/* A driver result as the guest's error; a failure is logged with the call. */
/* Bounds on what one domain may hold, beyond its device memory. */
static const uint32_t max_objects[OBJ_KINDS] = {
    [OBJ_MODULE] = 4096,   [OBJ_FUNC] = 65536,      [OBJ_STREAM] = 4096, [OBJ_EVENT] = 65536,
    [OBJ_SEG] = 4096,      [OBJ_GRAPH_EXEC] = 1024, [OBJ_ARRAY] = 65536, [OBJ_TEXOBJ] = 65536,
    [OBJ_SURFOBJ] = 65536, [OBJ_VMM_PHYS] = 65536,  [OBJ_VMM_VA] = 4096,
};

static int room_for(struct call *c, enum xgpu_obj_kind kind)
{
	if (c->dom->objs.live[kind] < max_objects[kind])
		return cudaSuccess;
	dlog_info(c->dom, "domain %s: %s refused: the domain already holds %u such objects", c->dom->name,
		  c->what, max_objects[kind]);
	return cudaErrorMemoryAllocation;
}

static int drv(struct call *c, CUresult r)
{
	if (r != CUDA_SUCCESS)
		dlog_info(c->dom, "domain %s: pid %d: %s failed in the driver: %s", c->dom->name,
			  (int)c->ch->pid, c->what, xgpu_driver_error_name(c->drv, r));
	return xgpu_exec_check(c->dom, r, c->what);
}

/* ---- handlers ------------------------------------------------------------- */

#define HANDLER(name)                                                                                        \
	static int h_##name(struct call *c, const struct xgpu_req_##name *req, const struct res_##name *res, \
			    struct xgpu_rsp_##name *rsp)

HANDLER(NOP)
{
	return req->flags ? cudaErrorInvalidValue : cudaSuccess;
}

HANDLER(DEVICE_INFO)
{
	struct xgpu_gpu_desc *g = c->dom->gpu;
	if (req->device != 0)
		return cudaErrorInvalidDevice;
	struct xgpu_device_blob b;
	memset(&b, 0, sizeof b);
	memcpy(b.name, g->name, sizeof b.name);
	memcpy(b.uuid, g->uuid, sizeof b.uuid);
	/* A guest sees its memory limit as the device's size, so programs that
	 * size buffers from it stay within what they may allocate. */
	b.total_mem = g->total_mem < xgpu_mem_limit(c->dom) ? g->total_mem : xgpu_mem_limit(c->dom);
	rsp->total_mem = b.total_mem;
	rsp->attr_count = g->nattrs;
	rsp->driver_version = c->x->driver_version;
	/* Pinned memory lives in the guest: the device cannot address it, so
	 * the guest is told the device cannot map host memory (programs that
	 * check take their copying path; cudaHostGetDevicePointer refuses). */
	int32_t attrs[XGPU_MAX_DEVICE_ATTRS];
	memcpy(attrs, g->attrs, sizeof attrs);
	if (g->nattrs > CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY)
		attrs[CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY] = 0;
	/* Memory pools are the frontend's, over ordinary allocations: device
	 * pools whatever the driver says, no host pools, no IPC export. */
	if (g->nattrs > CU_DEVICE_ATTRIBUTE_HOST_MEMORY_POOLS_SUPPORTED) {
		attrs[CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED] = 1;
		attrs[CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES] = 0;
		attrs[CU_DEVICE_ATTRIBUTE_HOST_NUMA_MEMORY_POOLS_SUPPORTED] = 0;
		attrs[CU_DEVICE_ATTRIBUTE_HOST_MEMORY_POOLS_SUPPORTED] = 0;
	}
	int r = bulk_write(c, &b, sizeof b);
	if (!r)
		r = bulk_write(c, attrs, (uint64_t)g->nattrs * sizeof attrs[0]);
	return r;
}

HANDLER(MEM_GET_INFO)
{
	size_t free_b = 0, total = 0;
	int r = drv(c, c->drv->cuMemGetInfo(&free_b, &total));
	if (r)
		return r;
	uint64_t limit = xgpu_mem_limit(c->dom), used = atomic_load(&c->dom->stats->mem_bytes);
	uint64_t left = limit > used ? limit - used : 0;
	rsp->total = total < limit ? total : limit;
	rsp->free = free_b < left ? free_b : left;
	return cudaSuccess;
}

/* Checks the domain's memory limit for size more bytes; logs a refusal. */
static bool mem_limit_allows(struct call *c, uint64_t size, const char *what)
{
	struct xgpu_domain *dom = c->dom;
	uint64_t used = atomic_load(&dom->stats->mem_bytes);
	if (size > xgpu_mem_limit(dom) || used > xgpu_mem_limit(dom) - size) {
		char want[32], lim[32], held[32];
		xgpu_format_size(size, want, sizeof want);
		xgpu_format_size(xgpu_mem_limit(dom), lim, sizeof lim);
		xgpu_format_size(used, held, sizeof held);
		dlog_info(dom, "domain %s: %s of %s refused: the domain holds %s of its %s limit", dom->name,
			  what, want, held, lim);
		return false;
	}
	return true;
}

/* Records a fresh allocation as the calling process's and counts it. */
static int mem_track(struct call *c, CUdeviceptr p, uint64_t size)
{
	if (xgpu_memmap_add(&c->dom->mem, p, size, c->ch, 0) < 0) {
		c->drv->cuMemFree(p);
		return cudaErrorMemoryAllocation;
	}
	atomic_fetch_add(&c->dom->stats->mem_bytes, size);
	return cudaSuccess;
}

HANDLER(MEM_ALLOC)
{
	if (req->size == 0)
		return cudaErrorInvalidValue;
	if (!mem_limit_allows(c, req->size, "cudaMalloc"))
		return cudaErrorMemoryAllocation;
	CUdeviceptr p;
	int r = drv(c, c->drv->cuMemAlloc(&p, req->size));
	if (r)
		return r;
	r = mem_track(c, p, req->size);
	if (!r)
		rsp->dptr = p;
	return r;
}

/* The guest maps its copy of managed memory at the device address, so the
 * address must be page-aligned and its whole range a canonical user address
 * (below 2^47 on x86-64); a driver that answers otherwise gets the memory
 * back and the guest an error. */
#define XGPU_MANAGED_PAGE 4096ull
#define XGPU_MANAGED_VA_END (1ull << 47)

HANDLER(MEM_ALLOC_MANAGED)
{
	struct xgpu_domain *dom = c->dom;
	if (req->size == 0 || req->size > XGPU_MANAGED_VA_END ||
	    (req->flags != CU_MEM_ATTACH_GLOBAL && req->flags != CU_MEM_ATTACH_HOST))
		return cudaErrorInvalidValue;
	/* Whole pages: the guest's mapping is, and so is what a copy-back moves. */
	uint64_t size = (req->size + XGPU_MANAGED_PAGE - 1) & ~(XGPU_MANAGED_PAGE - 1);
	if (!mem_limit_allows(c, size, "cudaMallocManaged"))
		return cudaErrorMemoryAllocation;
	CUdeviceptr p;
	int r = drv(c, c->drv->cuMemAllocManaged(&p, size, req->flags));
	if (r)
		return r;
	if (p % XGPU_MANAGED_PAGE || p >= XGPU_MANAGED_VA_END || XGPU_MANAGED_VA_END - p < size) {
		dlog_info(dom,
			  "domain %s: managed allocation at 0x%" PRIx64
			  " refused: not a page-aligned user address",
			  dom->name, (uint64_t)p);
		c->drv->cuMemFree(p);
		return cudaErrorMemoryAllocation;
	}
	r = mem_track(c, p, size);
	if (!r)
		rsp->dptr = p;
	return r;
}

HANDLER(MEM_FREE)
{
	uint64_t size = xgpu_memmap_del(&c->dom->mem, req->dptr, c->ch);
	if (!size) {
		dlog_info(c->dom,
			  "domain %s: cudaFree of 0x%" PRIx64 " refused: not an allocation of this process",
			  c->dom->name, req->dptr);
		return cudaErrorInvalidValue;
	}
	atomic_fetch_sub(&c->dom->stats->mem_bytes, size);
	xgpu_ipc_forget(c->dom, req->dptr); /* other processes' opens of it end */
	return drv(c, c->drv->cuMemFree(req->dptr));
}

/* Between chunks of a long copy the domain may lose the GPU slot; it waits
 * for it again rather than run on past its share. A slot that ran out while
 * earlier work was marked in flight is drained before it ends, and only this
 * (the poller's) thread harvests the marks that say the work is done: left
 * unharvested, every slot end in a long copy would stall to the drain's 1 s
 * cap (cuda-samples' dmmaTensorCoreGemm took a minute for 1 GiB of copies). */
static bool keep_slot(struct call *c)
{
	struct xgpu_domain *dom = c->dom;
	xgpu_exec_take_ctl(dom);
	while (!xgpu_may_issue(dom)) {
		if (atomic_load(&c->x->stopping) || c->ch->dead)
			return false;
		xgpu_exec_take_ctl(dom);
		xgpu_exec_busy_harvest(dom, false);
		xgpu_slot_ask(&dom->slot);
		struct pollfd pfd = {dom->wake_fd, POLLIN, 0};
		if (poll(&pfd, 1, 100) > 0) {
			uint64_t v;
			if (read(dom->wake_fd, &v, sizeof v) < 0) {
				/* EAGAIN: another reader took it; look again */
			}
		}
	}
	return true;
}

/* Moves packed bytes [off, off + n) of a pitched device range to or from buf
 * (a staging buffer): one driver copy per row piece, queued on s. */
static int rows_copy(struct call *c, bool to_device, uint64_t dev, uint64_t pitch, uint64_t width,
		     uint64_t off, uint64_t n, uint8_t *buf, CUstream s)
{
	int r = cudaSuccess;
	for (uint64_t done = 0; done < n && !r;) {
		uint64_t row = (off + done) / width, col = (off + done) % width;
		uint64_t len = width - col < n - done ? width - col : n - done;
		CUdeviceptr at = dev + row * pitch + col;
		r = to_device ? drv(c, c->drv->cuMemcpyHtoDAsync(at, buf + done, len, s))
			      : drv(c, c->drv->cuMemcpyDtoHAsync(buf + done, at, len, s));
		done += len;
	}
	return r;
}

/* ---- copies straight between a data area and the device ------------------ */

/* A long copy skips the staging buffers: each chunk goes by DMA straight
 * from the tx area to the device, or from the device into the rx area, once
 * the channel's areas are registered with the driver (pinned, as a staging
 * buffer is). That spares the executor a memcpy of every byte, on the CPUs
 * the guest, xgpud's relay and the driver share. The guest's bytes are only
 * ever the guest's: one that rewrites its area under a DMA changes nothing
 * but its own copy. The ring bytes a chunk uses stay the executor's until
 * the chunk's event says the DMA is done: released (tx) or published (rx)
 * in order, as the events are recorded on the copy's stream. */
#define RING_DMA_CHUNK XGPU_STREAM_SLICE

struct ring_dma {
	uint32_t len[XGPU_RING_DMA_MAX]; /* ring bytes of each chunk in flight */
	unsigned head, n;
	uint64_t held; /* their sum: ring bytes past the index, in flight */
};

/* Registers the channel's data areas once per context; false (and copies
 * through the staging buffers) if the driver refuses, as NVIDIA's may for a
 * mapping of another domain's grants. */
static bool rings_registered(struct call *c)
{
	struct xgpu_channel *ch = c->ch;
	struct xgpu_domain *dom = c->dom;
	if (ch->rings_dma)
		return ch->rings_dma > 0;
	for (unsigned i = 0; i < XGPU_RING_DMA_MAX; i++)
		if (!dom->ring_dma_done[i] &&
		    c->drv->cuEventCreate(&dom->ring_dma_done[i], CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS) {
			dom->ring_dma_done[i] = NULL;
			return false; /* tried again next time */
		}
	CUresult r = c->drv->cuMemHostRegister(ch->v.tx.buf, ch->v.data_size_tx, CU_MEMHOSTREGISTER_PORTABLE);
	if (r == CUDA_SUCCESS) {
		r = c->drv->cuMemHostRegister(ch->v.rx.buf, ch->v.data_size_rx, CU_MEMHOSTREGISTER_PORTABLE);
		if (r != CUDA_SUCCESS)
			c->drv->cuMemHostUnregister(ch->v.tx.buf);
	}
	ch->rings_dma = r == CUDA_SUCCESS ? 1 : -1;
	if (r == CUDA_SUCCESS)
		dlog_info(
		    dom,
		    "domain %s: channel %u (pid %d): data areas registered with the driver; copies over "
		    "%u KiB go straight between them and the device",
		    dom->name, ch->id, (int)ch->pid, RING_DMA_CHUNK >> 10);
	else
		dlog_info(dom,
			  "domain %s: channel %u (pid %d): data areas not registered with the driver (%s); "
			  "its copies are staged",
			  dom->name, ch->id, (int)ch->pid, xgpu_driver_error_name(c->drv, r));
	return r == CUDA_SUCCESS;
}

/* Whether a copy of total bytes on stream goes straight through the ring.
 * One chunk or less stays staged: it costs one small memcpy, and a staged
 * host-to-device copy answers before its DMA has run. A longer one must wait
 * for its last DMA before it answers (its ring bytes are in use until
 * then), so host to device goes straight only when nothing is queued ahead
 * of it on the stream: the wait is then for its own DMA, never a kernel's.
 * (A pageable cudaMemcpy waits for the stream in CUDA too; an async one of
 * pageable memory does not, and keeps that here.) */
static bool ring_dma_fits(struct call *c, uint64_t total, CUstream stream, bool to_device)
{
	if (total <= RING_DMA_CHUNK || !rings_registered(c))
		return false;
	return !to_device || c->drv->cuStreamQuery(stream) == CUDA_SUCCESS;
}

/* Waits for the oldest chunk in flight (or only looks, if !wait); returns
 * its ring bytes through *len, 0 if it is not done yet. */
static int ring_dma_retire(struct call *c, struct ring_dma *q, bool wait, uint32_t *len)
{
	*len = 0;
	CUevent ev = c->dom->ring_dma_done[q->head];
	CUresult cr = wait ? c->drv->cuEventSynchronize(ev) : c->drv->cuEventQuery(ev);
	if (cr == CUDA_ERROR_NOT_READY)
		return cudaSuccess;
	int r = drv(c, cr);
	*len = q->len[q->head];
	q->head = (q->head + 1) % XGPU_RING_DMA_MAX;
	q->n--;
	q->held -= *len;
	return r;
}

/* Queues one chunk's event after its copies. */
static int ring_dma_push(struct call *c, struct ring_dma *q, uint32_t len, CUstream stream)
{
	unsigned at = (q->head + q->n) % XGPU_RING_DMA_MAX;
	int r = drv(c, c->drv->cuEventRecord(c->dom->ring_dma_done[at], stream));
	if (!r) {
		q->len[at] = len;
		q->n++;
		q->held += len;
	}
	return r;
}

/* Queues the next chunk of a copy: at most room bytes of the area past the
 * chunks in flight, and not past the area's end. Returns the bytes queued,
 * 0 with *r set on failure. */
static uint64_t ring_dma_next(struct call *c, struct ring_dma *q, struct xgpu_qend *area, bool to_device,
			      uint64_t dev, uint64_t pitch, uint64_t width, uint64_t done, uint64_t left,
			      uint64_t room, CUstream stream, int *r)
{
	uint32_t off = (area->idx + (uint32_t)q->held) & (area->size - 1);
	uint64_t n = area->size - off;
	n = n < room ? n : room;
	n = n < left ? n : left;
	n = n < RING_DMA_CHUNK ? n : RING_DMA_CHUNK;
	*r = rows_copy(c, to_device, dev, pitch, width, done, n, area->buf + off, stream);
	if (!*r)
		*r = ring_dma_push(c, q, (uint32_t)n, stream);
	return *r ? 0 : n;
}

/* Waits for every chunk in flight: the last one's event, as they were
 * recorded in order on one stream. */
static int ring_dma_drain(struct call *c, struct ring_dma *q)
{
	if (!q->n)
		return cudaSuccess;
	return drv(
	    c, c->drv->cuEventSynchronize(c->dom->ring_dma_done[(q->head + q->n - 1) % XGPU_RING_DMA_MAX]));
}

/* Host to device, straight from the tx area: each chunk is what the guest
 * has published past the chunks in flight, up to the area's end. */
static int ring_to_device(struct call *c, uint64_t dst, uint64_t pitch, uint64_t width, uint64_t total,
			  CUstream stream)
{
	struct xgpu_qend *tx = &c->ch->v.tx;
	struct ring_dma q = {0};
	uint64_t issued = 0;
	int r = cudaSuccess;
	if (total > c->bulk_left)
		return cudaErrorInvalidValue;
	while (issued < total && !r) {
		uint32_t len;
		/* Done chunks give their bytes back at once: the guest is
		 * writing the rest into them. */
		while (q.n) {
			r = ring_dma_retire(c, &q, q.n == XGPU_RING_DMA_MAX, &len);
			if (len && xgpu_q_release(tx, len))
				c->ch->ops->kick(c->ch);
			if (r || !len)
				break;
		}
		if (r)
			break;
		if (!keep_slot(c)) {
			r = cudaErrorDevicesUnavailable;
			break;
		}
		int64_t avail = xgpu_q_avail(tx);
		if (avail < 0 || (uint64_t)avail < q.held) {
			chan_kill(c->ch, "corrupt tx index");
			r = cudaErrorInvalidValue;
			break;
		}
		uint64_t ready = (uint64_t)avail - q.held;
		if (ready == 0) {
			/* The guest may be waiting for the bytes in flight to
			 * be given back: wait for the device, not for it. */
			if (q.n) {
				r = ring_dma_retire(c, &q, true, &len);
				if (len && xgpu_q_release(tx, len))
					c->ch->ops->kick(c->ch);
				continue;
			}
			uint64_t left = total - issued, quarter = c->ch->v.data_size_tx / 4;
			uint64_t need = left < RING_DMA_CHUNK ? left : RING_DMA_CHUNK;
			if (!chan_wait(c, WAIT_TX_DATA, (uint32_t)(need < quarter ? need : quarter)))
				r = cudaErrorInvalidValue;
			continue;
		}
		uint64_t n = ring_dma_next(c, &q, tx, true, dst, pitch, width, issued, total - issued, ready,
					   stream, &r);
		issued += n;
		c->bulk_left -= n;
	}
	/* Every chunk queued must land before its bytes go back to the guest
	 * (after a failure too: a DMA may still read them). */
	int e = ring_dma_drain(c, &q);
	r = r ? r : e;
	if (q.held && xgpu_q_release(tx, (uint32_t)q.held))
		c->ch->ops->kick(c->ch);
	return r;
}

/* Device to host, straight into the rx area: each chunk is DMA'd into the
 * free space past the chunks in flight, and published once it has landed. */
static int device_to_ring(struct call *c, uint64_t src, uint64_t pitch, uint64_t width, uint64_t total,
			  CUstream stream)
{
	struct xgpu_qend *rx = &c->ch->v.rx;
	struct ring_dma q = {0};
	uint64_t issued = 0;
	int r = cudaSuccess;
	while ((issued < total || q.n) && !r) {
		bool more = issued < total && q.n < XGPU_RING_DMA_MAX;
		uint64_t room = 0;
		if (more) {
			uint64_t want = q.held + RING_DMA_CHUNK;
			int64_t space = xgpu_q_space_for(rx, (uint32_t)(want < rx->size ? want : rx->size));
			if (space < 0 || (uint64_t)space < q.held) {
				chan_kill(c->ch, "corrupt rx index");
				r = cudaErrorInvalidValue;
				break;
			}
			room = (uint64_t)space - q.held;
		}
		/* Landed chunks go to the guest at once; with nothing more to
		 * queue, wait for the oldest. */
		if (q.n) {
			uint32_t len;
			r = ring_dma_retire(c, &q, !more || room == 0, &len);
			if (len && !r) {
				c->bulk_sent += len;
				if (xgpu_q_publish(rx, len))
					c->ch->ops->kick(c->ch);
				continue;
			}
			if (r || !more || room == 0)
				continue;
		}
		if (room == 0) {
			uint64_t left = total - issued, quarter = c->ch->v.data_size_rx / 4;
			if (!chan_wait(c, WAIT_RX_SPACE, (uint32_t)(left < quarter ? left : quarter)))
				r = cudaErrorInvalidValue;
			continue;
		}
		if (!keep_slot(c)) {
			r = cudaErrorDevicesUnavailable;
			break;
		}
		issued += ring_dma_next(c, &q, rx, false, src, pitch, width, issued, total - issued, room,
					stream, &r);
	}
	/* On failure a DMA may still be headed for the area: let it land
	 * before anything else is written there, and publish nothing more (the
	 * answer's error says the bytes are short). */
	ring_dma_drain(c, &q);
	return r;
}

/* Host-to-device through the tx area: each chunk lands in a pinned staging
 * buffer, whose DMA overlaps the guest filling the next chunk. The device
 * side is rows of width bytes, pitch apart (a linear range is one row);
 * the caller has checked them. */
static int staged_to_device(struct call *c, uint64_t dst, uint64_t pitch, uint64_t width, uint64_t total,
			    CUstream stream)
{
	struct xgpu_domain *dom = c->dom;
	int r = cudaSuccess;
	for (uint64_t done = 0; done < total && !r;) {
		uint64_t n = total - done < dom->staging_size ? total - done : dom->staging_size;
		unsigned b;
		if (!keep_slot(c))
			r = cudaErrorDevicesUnavailable;
		else
			r = xgpu_exec_staging_get(dom, &b);
		if (r)
			break;
		r = bulk_read(c, dom->staging[b].buf, n);
		if (!r)
			r = rows_copy(c, true, dst, pitch, width, done, n, dom->staging[b].buf, stream);
		int e = xgpu_exec_staging_put(dom, b, stream, !r);
		r = r ? r : e;
		done += n;
	}
	return r;
}

/* Device-to-host through the rx area: one staging buffer's DMA runs ahead of
 * the one being handed to the guest. The device side as staged_to_device's. */
static int staged_to_guest(struct call *c, uint64_t src, uint64_t pitch, uint64_t width, uint64_t total,
			   CUstream stream)
{
	struct xgpu_domain *dom = c->dom;
	int r = cudaSuccess;
	struct inflight {
		unsigned buf;
		uint64_t len;
	} q[2];
	unsigned nq = 0;
	uint64_t issued = 0, sent = 0;
	while (sent < total && !r) {
		while (issued < total && nq < 2 && !r) {
			uint64_t n = total - issued < dom->staging_size ? total - issued : dom->staging_size;
			unsigned b;
			if (!keep_slot(c))
				r = cudaErrorDevicesUnavailable;
			else
				r = xgpu_exec_staging_get(dom, &b);
			if (r)
				break;
			r = rows_copy(c, false, src, pitch, width, issued, n, dom->staging[b].buf, stream);
			if (!r)
				r = drv(c, c->drv->cuEventRecord(dom->staging[b].done, stream));
			if (r) {
				xgpu_exec_staging_put(dom, b, stream, false);
				break;
			}
			q[nq++] = (struct inflight){b, n};
			issued += n;
		}
		if (r || !nq)
			break;
		r = drv(c, c->drv->cuEventSynchronize(dom->staging[q[0].buf].done));
		if (!r)
			r = bulk_write(c, dom->staging[q[0].buf].buf, q[0].len);
		xgpu_exec_staging_put(dom, q[0].buf, NULL, false);
		sent += q[0].len;
		q[0] = q[1];
		nq--;
	}
	/* On failure a DMA may still be headed for a buffer: keep the buffer
	 * busy until it lands. */
	for (unsigned i = 0; i < nq; i++)
		xgpu_exec_staging_put(dom, q[i].buf, NULL, false);
	return r;
}

/* A pageable copy through the data areas, either way: straight when the
 * ring DMA fits it, else staged; measured as the domain's busy time and
 * counted once here, whichever path moved it. */
static int copy_to_device(struct call *c, uint64_t dst, uint64_t pitch, uint64_t width, uint64_t total,
			  CUstream stream)
{
	struct xgpu_busy_mark *mark;
	xgpu_exec_busy_begin(c->dom, stream, &mark);
	int r = ring_dma_fits(c, total, stream, true) ? ring_to_device(c, dst, pitch, width, total, stream)
						      : staged_to_device(c, dst, pitch, width, total, stream);
	xgpu_exec_busy_end(c->dom, stream, mark);
	if (!r)
		xgpu_stat_add(&c->dom->stats->h2d_bytes, total);
	return r;
}

static int copy_to_guest(struct call *c, uint64_t src, uint64_t pitch, uint64_t width, uint64_t total,
			 CUstream stream)
{
	struct xgpu_busy_mark *mark;
	xgpu_exec_busy_begin(c->dom, stream, &mark);
	int r = ring_dma_fits(c, total, stream, false) ? device_to_ring(c, src, pitch, width, total, stream)
						       : staged_to_guest(c, src, pitch, width, total, stream);
	xgpu_exec_busy_end(c->dom, stream, mark);
	if (!r)
		xgpu_stat_add(&c->dom->stats->d2h_bytes, total);
	return r;
}

HANDLER(MEMCPY_HTOD)
{
	int r = check_range(c, req->dst, req->size, "dst");
	if (r)
		return r;
	if (c->hdr.bulk_len != req->size)
		return cudaErrorInvalidValue;
	/* As with pageable memory in CUDA, the copy may still be in flight:
	 * the guest's buffer is free to reuse once the data is staged. */
	return copy_to_device(c, req->dst, req->size, req->size, req->size, res->stream);
}

HANDLER(MEMCPY_DTOH)
{
	int r = check_range(c, req->src, req->size, "src");
	if (r)
		return r;
	return copy_to_guest(c, req->src, req->size, req->size, req->size, res->stream);
}

HANDLER(MEMCPY_DTOD)
{
	int r = check_range(c, req->dst, req->size, "dst");
	if (!r)
		r = check_range(c, req->src, req->size, "src");
	if (r)
		return r;
	struct xgpu_busy_mark *mark;
	xgpu_exec_busy_begin(c->dom, res->stream, &mark);
	r = drv(c, c->drv->cuMemcpyDtoDAsync(req->dst, req->src, req->size, res->stream));
	xgpu_exec_busy_end(c->dom, res->stream, mark);
	if (!r && !(req->flags & XGPU_COPY_ASYNC))
		r = drv(c, c->drv->cuStreamSynchronize(res->stream));
	return r;
}

HANDLER(MEMCPY_HTOD_SEG)
{
	int r = check_range(c, req->dst, req->size, "dst");
	if (!r)
		r = check_seg_range(c, res->seg, req->offset, req->size);
	if (r)
		return r;
	struct xgpu_busy_mark *mark;
	xgpu_exec_busy_begin(c->dom, res->stream, &mark);
	r = drv(c, c->drv->cuMemcpyHtoDAsync(req->dst, (uint8_t *)res->seg->u.seg.ptr + req->offset,
					     req->size, res->stream));
	xgpu_exec_busy_end(c->dom, res->stream, mark);
	if (!r && !(req->flags & XGPU_COPY_ASYNC))
		r = drv(c, c->drv->cuStreamSynchronize(res->stream));
	if (!r)
		xgpu_stat_add(&c->dom->stats->h2d_bytes, req->size);
	return r;
}

HANDLER(MEMCPY_DTOH_SEG)
{
	int r = check_range(c, req->src, req->size, "src");
	if (!r)
		r = check_seg_range(c, res->seg, req->offset, req->size);
	if (r)
		return r;
	struct xgpu_busy_mark *mark;
	xgpu_exec_busy_begin(c->dom, res->stream, &mark);
	r = drv(c, c->drv->cuMemcpyDtoHAsync((uint8_t *)res->seg->u.seg.ptr + req->offset, req->src,
					     req->size, res->stream));
	xgpu_exec_busy_end(c->dom, res->stream, mark);
	if (!r && !(req->flags & XGPU_COPY_ASYNC))
		r = drv(c, c->drv->cuStreamSynchronize(res->stream));
	if (!r)
		xgpu_stat_add(&c->dom->stats->d2h_bytes, req->size);
	return r;
}

HANDLER(MEMSET)
{
	int r = check_range(c, req->dst, req->size, "dst");
	if (r)
		return r;
	struct xgpu_busy_mark *mark;
	xgpu_exec_busy_begin(c->dom, res->stream, &mark);
	r = drv(c, c->drv->cuMemsetD8Async(req->dst, (unsigned char)req->value, req->size, res->stream));
	xgpu_exec_busy_end(c->dom, res->stream, mark);
	if (!r && !(req->flags & XGPU_COPY_ASYNC))
		r = drv(c, c->drv->cuStreamSynchronize(res->stream));
	return r;
}

/* ---- pitched (2D) copies and memset -------------------------------------- */

/* A pitched range, height rows of width bytes pitch apart, must lie inside
 * one allocation of this process (a pitched allocation is one); its extent
 * is computed overflow-checked before the range check sees it. */
static int check_rows(struct call *c, uint64_t base, uint64_t pitch, uint64_t width, uint64_t height,
		      const char *field)
{
	uint64_t span;
	if (height > 1 && pitch < width) {
		dlog_info(c->dom,
			  "domain %s: %s refused: %s pitch %" PRIu64 " is less than the width %" PRIu64,
			  c->dom->name, c->what, field, pitch, width);
		return cudaErrorInvalidPitchValue;
	}
	if (__builtin_mul_overflow(height - 1, pitch, &span) || __builtin_add_overflow(span, width, &span)) {
		dlog_info(c->dom,
			  "domain %s: %s refused: %s rows (%" PRIu64 " of %" PRIu64 " bytes, pitch %" PRIu64
			  ") overflow the address space",
			  c->dom->name, c->what, field, height, width, pitch);
		return cudaErrorInvalidValue;
	}
	return check_range(c, base, span, field);
}

HANDLER(MEMCPY_2D_HTOD)
{
	uint64_t total;
	if (__builtin_mul_overflow(req->width, req->height, &total) || c->hdr.bulk_len != total)
		return cudaErrorInvalidValue;
	if (!total)
		return cudaSuccess;
	int r = check_rows(c, req->dst, req->dst_pitch, req->width, req->height, "dst");
	if (r)
		return r;
	return copy_to_device(c, req->dst, req->dst_pitch, req->width, total, res->stream);
}

HANDLER(MEMCPY_2D_DTOH)
{
	uint64_t total;
	if (__builtin_mul_overflow(req->width, req->height, &total))
		return cudaErrorInvalidValue;
	if (!total)
		return cudaSuccess;
	int r = check_rows(c, req->src, req->src_pitch, req->width, req->height, "src");
	if (r)
		return r;
	return copy_to_guest(c, req->src, req->src_pitch, req->width, total, res->stream);
}

HANDLER(MEMCPY_2D_DTOD)
{
	if (!req->width || !req->height)
		return cudaSuccess;
	int r = check_rows(c, req->dst, req->dst_pitch, req->width, req->height, "dst");
	if (!r)
		r = check_rows(c, req->src, req->src_pitch, req->width, req->height, "src");
	if (r)
		return r;
	CUDA_MEMCPY2D p = {.srcMemoryType = CU_MEMORYTYPE_DEVICE,
			   .srcDevice = req->src,
			   .srcPitch = req->src_pitch,
			   .dstMemoryType = CU_MEMORYTYPE_DEVICE,
			   .dstDevice = req->dst,
			   .dstPitch = req->dst_pitch,
			   .WidthInBytes = req->width,
			   .Height = req->height};
	struct xgpu_busy_mark *mark;
	xgpu_exec_busy_begin(c->dom, res->stream, &mark);
	r = drv(c, c->drv->cuMemcpy2DAsync(&p, res->stream));
	xgpu_exec_busy_end(c->dom, res->stream, mark);
	if (!r && !(req->flags & XGPU_COPY_ASYNC))
		r = drv(c, c->drv->cuStreamSynchronize(res->stream));
	return r;
}

HANDLER(MEMSET_2D)
{
	if (req->value > 0xff)
		return cudaErrorInvalidValue;
	if (!req->width || !req->height)
		return cudaSuccess;
	int r = check_rows(c, req->dst, req->pitch, req->width, req->height, "dst");
	if (r)
		return r;
	struct xgpu_busy_mark *mark;
	xgpu_exec_busy_begin(c->dom, res->stream, &mark);
	r = drv(c, c->drv->cuMemsetD2D8Async(req->dst, req->pitch, (unsigned char)req->value, req->width,
					     req->height, res->stream));
	xgpu_exec_busy_end(c->dom, res->stream, mark);
	if (!r && !(req->flags & XGPU_COPY_ASYNC))
		r = drv(c, c->drv->cuStreamSynchronize(res->stream));
	return r;
}

/* ---- CUDA arrays ------------------------------------------------------------ */

/* Bytes of one element of a format the daemon offers (the block-compressed
 * and video formats are not): 0 for any other. */
static uint64_t array_format_bytes(uint32_t format)
{
	switch (format) {
	case CU_AD_FORMAT_UNSIGNED_INT8:
	case CU_AD_FORMAT_SIGNED_INT8:
		return 1;
	case CU_AD_FORMAT_UNSIGNED_INT16:
	case CU_AD_FORMAT_SIGNED_INT16:
	case CU_AD_FORMAT_HALF:
		return 2;
	case CU_AD_FORMAT_UNSIGNED_INT32:
	case CU_AD_FORMAT_SIGNED_INT32:
	case CU_AD_FORMAT_FLOAT:
		return 4;
	default:
		return 0;
	}
}

/* Largest extent of any dimension the daemon accepts; the driver checks the
 * device's own (smaller) limits, this keeps the arithmetic far from overflow. */
#define ARRAY_MAX_EXTENT (1ull << 20)

HANDLER(ARRAY_CREATE)
{
	struct xgpu_domain *dom = c->dom;
	const uint32_t allowed = CUDA_ARRAY3D_LAYERED | CUDA_ARRAY3D_SURFACE_LDST | CUDA_ARRAY3D_CUBEMAP |
				 CUDA_ARRAY3D_TEXTURE_GATHER;
	uint64_t elem = array_format_bytes(req->format);
	if (!elem || (req->channels != 1 && req->channels != 2 && req->channels != 4) ||
	    (req->flags & ~allowed) || !req->width || req->width > ARRAY_MAX_EXTENT ||
	    req->height > ARRAY_MAX_EXTENT || req->depth > ARRAY_MAX_EXTENT)
		return cudaErrorInvalidValue;
	if ((req->flags & CUDA_ARRAY3D_CUBEMAP) &&
	    (req->width != req->height || !req->depth || req->depth % 6))
		return cudaErrorInvalidValue;
	if ((req->flags & CUDA_ARRAY3D_LAYERED) && !req->depth)
		return cudaErrorInvalidValue;
	uint64_t height = req->height ? req->height : 1, depth = req->depth ? req->depth : 1;
	uint64_t row = req->width * elem * req->channels, bytes;
	if (__builtin_mul_overflow(row, height, &bytes) || __builtin_mul_overflow(bytes, depth, &bytes))
		return cudaErrorMemoryAllocation;
	uint64_t used = atomic_load(&dom->stats->mem_bytes);
	if (bytes > xgpu_mem_limit(dom) || used > xgpu_mem_limit(dom) - bytes) {
		dlog_info(dom, "domain %s: %s of %" PRIu64 " bytes refused: over the domain's memory limit",
			  dom->name, c->what, bytes);
		return cudaErrorMemoryAllocation;
	}
	if (room_for(c, OBJ_ARRAY))
		return cudaErrorMemoryAllocation;
	CUDA_ARRAY3D_DESCRIPTOR d = {.Width = req->width,
				     .Height = req->height,
				     .Depth = req->depth,
				     .Format = (CUarray_format)req->format,
				     .NumChannels = req->channels,
				     .Flags = req->flags};
	CUarray a;
	int r = drv(c, c->drv->cuArray3DCreate(&a, &d));
	if (r)
		return r;
	struct xgpu_obj *o;
	xgpu_handle_t h = xgpu_obj_add(&dom->objs, OBJ_ARRAY, c->ch, &o);
	if (!h) {
		c->drv->cuArrayDestroy(a);
		return cudaErrorMemoryAllocation;
	}
	o->u.array.a = a;
	o->u.array.width_bytes = row;
	o->u.array.height = height;
	o->u.array.depth = depth;
	o->u.array.charge = bytes;
	atomic_fetch_add(&dom->stats->mem_bytes, bytes);
	rsp->array = h;
	return cudaSuccess;
}

HANDLER(ARRAY_DESTROY)
{
	struct xgpu_obj *o = xgpu_obj_get(&c->dom->objs, req->array, OBJ_ARRAY, c->ch);
	if (!o)
		return bad_handle(c, "array", req->array);
	/* Work queued on it may still read it, as for cuArrayDestroy. */
	int r = drv(c, c->drv->cuCtxSynchronize());
	if (!r)
		r = drv(c, c->drv->cuArrayDestroy(o->u.array.a));
	atomic_fetch_sub(&c->dom->stats->mem_bytes, o->u.array.charge);
	xgpu_obj_del(&c->dom->objs, req->array);
	return r;
}

/* One side of ARRAY_COPY: an array of this process with the box inside it,
 * or device memory whose whole box lies inside one of its allocations. */
static int array_copy_side(struct call *c, const char *field, bool is_array, uint64_t ref, uint64_t a,
			   uint64_t b, uint32_t z, const struct xgpu_req_ARRAY_COPY *req, CUarray *array)
{
	*array = NULL;
	if (is_array) {
		struct xgpu_obj *o = xgpu_obj_get(&c->dom->objs, ref, OBJ_ARRAY, c->ch);
		if (!o)
			return bad_handle(c, field, ref);
		if (a > o->u.array.width_bytes || req->width > o->u.array.width_bytes - a ||
		    b > o->u.array.height || req->height > o->u.array.height - b || z > o->u.array.depth ||
		    req->depth > o->u.array.depth - z) {
			dlog_info(c->dom,
				  "domain %s: %s refused: %s box (%" PRIu64 "+%" PRIu64 ", %" PRIu64
				  "+%u, %u+%u"
				  ") lies outside its array",
				  c->dom->name, c->what, field, a, req->width, b, req->height, z, req->depth);
			return cudaErrorInvalidValue;
		}
		*array = o->u.array.a;
		return cudaSuccess;
	}
	/* Device memory: a is the row pitch, b the rows between slices. */
	uint64_t rows;
	if (z || (req->depth > 1 && b < req->height))
		return cudaErrorInvalidValue;
	if (__builtin_mul_overflow((uint64_t)req->depth - 1, b, &rows) ||
	    __builtin_add_overflow(rows, (uint64_t)req->height, &rows))
		return cudaErrorInvalidValue;
	return check_rows(c, ref, a, req->width, rows, field);
}

HANDLER(ARRAY_COPY)
{
	const uint32_t dst_is = XGPU_ARRAY_COPY_DST_ARRAY, src_is = XGPU_ARRAY_COPY_SRC_ARRAY;
	if (req->flags & ~(XGPU_COPY_ASYNC | dst_is | src_is))
		return cudaErrorInvalidValue;
	if (!(req->flags & (dst_is | src_is)))
		return cudaErrorInvalidValue; /* linear to linear is MEMCPY_2D_DTOD */
	if (!req->width || !req->height || !req->depth)
		return cudaSuccess;
	CUarray dst_a, src_a;
	int r = array_copy_side(c, "dst", req->flags & dst_is, req->dst, req->dst_a, req->dst_b, req->dst_z,
				req, &dst_a);
	if (!r)
		r = array_copy_side(c, "src", req->flags & src_is, req->src, req->src_a, req->src_b,
				    req->src_z, req, &src_a);
	if (r)
		return r;
	CUDA_MEMCPY3D p = {.srcXInBytes = src_a ? req->src_a : 0,
			   .srcY = src_a ? req->src_b : 0,
			   .srcZ = req->src_z,
			   .srcMemoryType = src_a ? CU_MEMORYTYPE_ARRAY : CU_MEMORYTYPE_DEVICE,
			   .srcDevice = src_a ? 0 : req->src,
			   .srcArray = src_a,
			   .srcPitch = src_a ? 0 : req->src_a,
			   .srcHeight = src_a ? 0 : req->src_b,
			   .dstXInBytes = dst_a ? req->dst_a : 0,
			   .dstY = dst_a ? req->dst_b : 0,
			   .dstZ = req->dst_z,
			   .dstMemoryType = dst_a ? CU_MEMORYTYPE_ARRAY : CU_MEMORYTYPE_DEVICE,
			   .dstDevice = dst_a ? 0 : req->dst,
			   .dstArray = dst_a,
			   .dstPitch = dst_a ? 0 : req->dst_a,
			   .dstHeight = dst_a ? 0 : req->dst_b,
			   .WidthInBytes = req->width,
			   .Height = req->height,
			   .Depth = req->depth};
	struct xgpu_busy_mark *mark;
	xgpu_exec_busy_begin(c->dom, res->stream, &mark);
	r = drv(c, c->drv->cuMemcpy3DAsync(&p, res->stream));
	xgpu_exec_busy_end(c->dom, res->stream, mark);
	if (!r && !(req->flags & XGPU_COPY_ASYNC))
		r = drv(c, c->drv->cuStreamSynchronize(res->stream));
	return r;
}

/* ---- texture and surface objects ---------------------------------------- */

static int object_add(struct call *c, enum xgpu_obj_kind kind, uint64_t value, xgpu_handle_t *h)
{
	struct xgpu_obj *o;
	*h = xgpu_obj_add(&c->dom->objs, kind, c->ch, &o);
	if (!*h)
		return cudaErrorMemoryAllocation;
	o->u.texobj.value = value;
	return cudaSuccess;
}

HANDLER(TEXOBJ_CREATE)
{
	const uint32_t flags = CU_TRSF_READ_AS_INTEGER | CU_TRSF_NORMALIZED_COORDINATES | CU_TRSF_SRGB |
			       CU_TRSF_DISABLE_TRILINEAR_OPTIMIZATION | CU_TRSF_SEAMLESS_CUBEMAP;
	if ((req->flags & ~flags) || req->filter > CU_TR_FILTER_MODE_LINEAR)
		return cudaErrorInvalidValue;
	for (int i = 0; i < 3; i++)
		if (((req->address_modes >> (8 * i)) & 0xff) > CU_TR_ADDRESS_MODE_BORDER)
			return cudaErrorInvalidValue;
	if (req->address_modes >> 24)
		return cudaErrorInvalidValue;
	if (room_for(c, OBJ_TEXOBJ))
		return cudaErrorMemoryAllocation;
	CUDA_RESOURCE_DESC rd = {.resType = (CUresourcetype)req->res_type};
	uint64_t elem = array_format_bytes(req->format) * req->channels, bytes;
	bool channels_ok = req->channels == 1 || req->channels == 2 || req->channels == 4;
	switch (req->res_type) {
	case CU_RESOURCE_TYPE_ARRAY: {
		struct xgpu_obj *a = xgpu_obj_get(&c->dom->objs, req->res, OBJ_ARRAY, c->ch);
		if (!a)
			return bad_handle(c, "res", req->res);
		rd.res.array.hArray = a->u.array.a;
		break;
	}
	case CU_RESOURCE_TYPE_LINEAR:
		if (!elem || !channels_ok || !req->width || __builtin_mul_overflow(req->width, elem, &bytes))
			return cudaErrorInvalidValue;
		/* A range running past its allocation's end is cut there, whole
		 * elements kept: CUDA does not check the size, and programs
		 * (cuda-samples' convolutionFFT2D) describe more than they read;
		 * fetches past the end then read as out of range, never another
		 * allocation. */
		const struct xgpu_alloc *at = xgpu_memmap_find(&c->dom->mem, req->res, 1, c->ch);
		if (at && req->res - at->base + bytes > at->size) {
			bytes = (at->size - (req->res - at->base)) / elem * elem;
			if (!bytes)
				return cudaErrorInvalidValue;
		}
		if (check_range(c, req->res, bytes, "res"))
			return cudaErrorInvalidValue;
		rd.res.linear.devPtr = req->res;
		rd.res.linear.format = (CUarray_format)req->format;
		rd.res.linear.numChannels = req->channels;
		rd.res.linear.sizeInBytes = bytes;
		break;
	case CU_RESOURCE_TYPE_PITCH2D:
		if (!elem || !channels_ok || !req->width || !req->height ||
		    __builtin_mul_overflow(req->width, elem, &bytes))
			return cudaErrorInvalidValue;
		if (check_rows(c, req->res, req->pitch, bytes, req->height, "res"))
			return cudaErrorInvalidValue;
		rd.res.pitch2D.devPtr = req->res;
		rd.res.pitch2D.format = (CUarray_format)req->format;
		rd.res.pitch2D.numChannels = req->channels;
		rd.res.pitch2D.width = req->width;
		rd.res.pitch2D.height = req->height;
		rd.res.pitch2D.pitchInBytes = req->pitch;
		break;
	default:
		return cudaErrorInvalidValue; /* mipmapped arrays are not offered */
	}
	CUDA_TEXTURE_DESC td = {.filterMode = (CUfilter_mode)req->filter,
				.flags = req->flags,
				.borderColor = {req->border0, req->border1, req->border2, req->border3}};
	for (int i = 0; i < 3; i++)
		td.addressMode[i] = (CUaddress_mode)((req->address_modes >> (8 * i)) & 0xff);
	CUtexObject t;
	int r = drv(c, c->drv->cuTexObjectCreate(&t, &rd, &td, NULL));
	if (r)
		return r;
	xgpu_handle_t h;
	if ((r = object_add(c, OBJ_TEXOBJ, t, &h))) {
		c->drv->cuTexObjectDestroy(t);
		return r;
	}
	rsp->object = t;
	rsp->handle = h;
	return cudaSuccess;
}

HANDLER(TEXOBJ_DESTROY)
{
	struct xgpu_obj *o = xgpu_obj_get(&c->dom->objs, req->handle, OBJ_TEXOBJ, c->ch);
	if (!o)
		return bad_handle(c, "handle", req->handle);
	int r = drv(c, c->drv->cuTexObjectDestroy(o->u.texobj.value));
	xgpu_obj_del(&c->dom->objs, req->handle);
	return r;
}

HANDLER(SURFOBJ_CREATE)
{
	if (req->flags)
		return cudaErrorInvalidValue;
	struct xgpu_obj *a = xgpu_obj_get(&c->dom->objs, req->array, OBJ_ARRAY, c->ch);
	if (!a)
		return bad_handle(c, "array", req->array);
	if (room_for(c, OBJ_SURFOBJ))
		return cudaErrorMemoryAllocation;
	CUDA_RESOURCE_DESC rd = {.resType = CU_RESOURCE_TYPE_ARRAY, .res.array.hArray = a->u.array.a};
	CUsurfObject s;
	int r = drv(c, c->drv->cuSurfObjectCreate(&s, &rd));
	if (r)
		return r;
	xgpu_handle_t h;
	if ((r = object_add(c, OBJ_SURFOBJ, s, &h))) {
		c->drv->cuSurfObjectDestroy(s);
		return r;
	}
	rsp->object = s;
	rsp->handle = h;
	return cudaSuccess;
}

HANDLER(SURFOBJ_DESTROY)
{
	struct xgpu_obj *o = xgpu_obj_get(&c->dom->objs, req->handle, OBJ_SURFOBJ, c->ch);
	if (!o)
		return bad_handle(c, "handle", req->handle);
	int r = drv(c, c->drv->cuSurfObjectDestroy(o->u.texobj.value));
	xgpu_obj_del(&c->dom->objs, req->handle);
	return r;
}

/* ---- virtual memory management (issue 27) ------------------------------------ */

/* Physical memory of the domain's device, as every VMM_CREATE makes it. */
static CUmemAllocationProp vmm_prop(const struct call *c)
{
	CUmemAllocationProp p;
	memset(&p, 0, sizeof p);
	p.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	p.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	p.location.id = c->dom->gpu->dev;
	return p;
}

static int vmm_granularity(struct call *c, uint32_t flags, uint64_t *g)
{
	CUmemAllocationProp p = vmm_prop(c);
	size_t v = 0;
	int r =
	    drv(c, c->drv->cuMemGetAllocationGranularity(&v, &p, (CUmemAllocationGranularity_flags)flags));
	if (!r && v == 0)
		r = cudaErrorUnknown;
	*g = v;
	return r;
}

static int vmm_refuse(struct call *c, const char *why, uint64_t a, uint64_t b)
{
	dlog_info(c->dom, "domain %s: %s refused: %s (0x%" PRIx64 ", 0x%" PRIx64 ")", c->dom->name, c->what,
		  why, a, b);
	return cudaErrorInvalidValue;
}

HANDLER(VMM_GRANULARITY)
{
	if (req->flags != CU_MEM_ALLOC_GRANULARITY_MINIMUM &&
	    req->flags != CU_MEM_ALLOC_GRANULARITY_RECOMMENDED)
		return cudaErrorInvalidValue;
	return vmm_granularity(c, req->flags, &rsp->granularity);
}

HANDLER(VMM_CREATE)
{
	uint64_t g;
	int r = vmm_granularity(c, CU_MEM_ALLOC_GRANULARITY_MINIMUM, &g);
	if (r)
		return r;
	if (req->flags || !req->size || req->size % g)
		return vmm_refuse(c, "size not a multiple of the granularity, or flags", req->size,
				  req->flags);
	if (!mem_limit_allows(c, req->size, "cuMemCreate") || room_for(c, OBJ_VMM_PHYS))
		return cudaErrorMemoryAllocation;
	CUmemAllocationProp p = vmm_prop(c);
	CUmemGenericAllocationHandle h;
	if ((r = drv(c, c->drv->cuMemCreate(&h, req->size, &p, 0))))
		return r;
	struct xgpu_obj *o;
	xgpu_handle_t oh = xgpu_obj_add(&c->dom->objs, OBJ_VMM_PHYS, c->ch, &o);
	if (!oh) {
		c->drv->cuMemRelease(h);
		return cudaErrorMemoryAllocation;
	}
	o->u.vmm_phys.h = h;
	o->u.vmm_phys.size = req->size;
	o->u.vmm_phys.maps = 0;
	o->u.vmm_phys.released = false;
	atomic_fetch_add(&c->dom->stats->mem_bytes, req->size);
	rsp->handle = oh;
	return cudaSuccess;
}

HANDLER(VMM_RELEASE)
{
	struct xgpu_obj *o = xgpu_obj_get(&c->dom->objs, req->handle, OBJ_VMM_PHYS, c->ch);
	if (!o || o->u.vmm_phys.released)
		return bad_handle(c, "handle", req->handle);
	xgpu_vmm_phys_put(c->dom, c->ch, req->handle, true);
	return cudaSuccess;
}

HANDLER(VMM_RESERVE)
{
	uint64_t g;
	int r = vmm_granularity(c, CU_MEM_ALLOC_GRANULARITY_MINIMUM, &g);
	if (r)
		return r;
	if (req->flags || !req->size || req->size % g || (req->alignment & (req->alignment - 1)))
		return vmm_refuse(c, "size not a multiple of the granularity, alignment or flags", req->size,
				  req->alignment);
	if (room_for(c, OBJ_VMM_VA))
		return cudaErrorMemoryAllocation;
	CUdeviceptr p;
	if ((r = drv(c, c->drv->cuMemAddressReserve(&p, req->size, req->alignment, req->addr, 0))))
		return r;
	struct xgpu_obj *o;
	xgpu_handle_t oh = xgpu_obj_add(&c->dom->objs, OBJ_VMM_VA, c->ch, &o);
	if (!oh) {
		c->drv->cuMemAddressFree(p, req->size);
		return cudaErrorMemoryAllocation;
	}
	memset(&o->u.vmm_va, 0, sizeof o->u.vmm_va);
	o->u.vmm_va.base = p;
	o->u.vmm_va.size = req->size;
	rsp->ptr = p;
	rsp->va = oh;
	return cudaSuccess;
}

HANDLER(VMM_ADDRESS_FREE)
{
	if (!xgpu_obj_get(&c->dom->objs, req->va, OBJ_VMM_VA, c->ch))
		return bad_handle(c, "va", req->va);
	/* Work queued on its mappings may still use them. */
	int r = drv(c, c->drv->cuCtxSynchronize());
	int f = drv(c, xgpu_vmm_va_free(c->dom, c->ch, req->va));
	return r ? r : f;
}

/* The reservation va with [ptr, ptr + size) inside it, or NULL (refused). */
static struct xgpu_obj *vmm_va_range(struct call *c, xgpu_handle_t va, uint64_t ptr, uint64_t size, int *err)
{
	struct xgpu_obj *o = xgpu_obj_get(&c->dom->objs, va, OBJ_VMM_VA, c->ch);
	if (!o) {
		*err = bad_handle(c, "va", va);
		return NULL;
	}
	if (!size || ptr < o->u.vmm_va.base || ptr - o->u.vmm_va.base > o->u.vmm_va.size ||
	    size > o->u.vmm_va.size - (ptr - o->u.vmm_va.base)) {
		*err = vmm_refuse(c, "range outside its reservation", ptr, size);
		return NULL;
	}
	return o;
}

/* Mappings of va overlapping [ptr, ptr + size): first index and count; -1
 * if one of them is cut by the range's ends. */
static int vmm_maps_in(const struct xgpu_obj *va, uint64_t ptr, uint64_t size, uint32_t *first, uint32_t *n)
{
	*first = 0;
	*n = 0;
	for (uint32_t k = 0; k < va->u.vmm_va.nmaps; k++) {
		const struct xgpu_vmm_map *m = &va->u.vmm_va.maps[k];
		if (m->ptr + m->size <= ptr || m->ptr >= ptr + size)
			continue;
		if (m->ptr < ptr || m->ptr + m->size > ptr + size)
			return -1;
		if (!*n)
			*first = k;
		(*n)++;
	}
	return 0;
}

HANDLER(VMM_MAP)
{
	int err = 0;
	struct xgpu_obj *va = vmm_va_range(c, req->va, req->ptr, req->size, &err);
	if (!va)
		return err;
	struct xgpu_obj *ph = xgpu_obj_get(&c->dom->objs, req->handle, OBJ_VMM_PHYS, c->ch);
	if (!ph || ph->u.vmm_phys.released)
		return bad_handle(c, "handle", req->handle);
	if (req->flags || req->offset > ph->u.vmm_phys.size || req->size > ph->u.vmm_phys.size - req->offset)
		return vmm_refuse(c, "offset and size outside the physical memory, or flags", req->offset,
				  req->size);
	uint32_t first, n;
	if (vmm_maps_in(va, req->ptr, req->size, &first, &n) || n)
		return vmm_refuse(c, "range already mapped", req->ptr, req->size);
	if (va->u.vmm_va.nmaps == va->u.vmm_va.cap) {
		uint32_t cap = va->u.vmm_va.cap ? va->u.vmm_va.cap * 2 : 8;
		if (cap > 65536)
			return cudaErrorMemoryAllocation;
		struct xgpu_vmm_map *v = realloc(va->u.vmm_va.maps, cap * sizeof *v);
		if (!v)
			return cudaErrorMemoryAllocation;
		va->u.vmm_va.maps = v;
		va->u.vmm_va.cap = cap;
	}
	int r = drv(c, c->drv->cuMemMap(req->ptr, req->size, req->offset, ph->u.vmm_phys.h, 0));
	if (r)
		return r;
	/* Kept sorted by address. */
	uint32_t at = 0;
	while (at < va->u.vmm_va.nmaps && va->u.vmm_va.maps[at].ptr < req->ptr)
		at++;
	memmove(&va->u.vmm_va.maps[at + 1], &va->u.vmm_va.maps[at],
		(va->u.vmm_va.nmaps - at) * sizeof va->u.vmm_va.maps[0]);
	va->u.vmm_va.maps[at] = (struct xgpu_vmm_map){
	    .ptr = req->ptr, .size = req->size, .phys = req->handle, .accessible = false};
	va->u.vmm_va.nmaps++;
	ph->u.vmm_phys.maps++;
	return cudaSuccess;
}

HANDLER(VMM_UNMAP)
{
	int err = 0;
	struct xgpu_obj *va = vmm_va_range(c, req->va, req->ptr, req->size, &err);
	if (!va)
		return err;
	uint32_t first, n;
	if (vmm_maps_in(va, req->ptr, req->size, &first, &n) || !n)
		return vmm_refuse(c, "range not made of whole mappings", req->ptr, req->size);
	int r = drv(c, c->drv->cuCtxSynchronize());
	while (n--) {
		int u = drv(c, xgpu_vmm_unmap(c->dom, va, req->va, first));
		if (!r)
			r = u;
	}
	return r;
}

HANDLER(VMM_SET_ACCESS)
{
	int err = 0;
	struct xgpu_obj *va = vmm_va_range(c, req->va, req->ptr, req->size, &err);
	if (!va)
		return err;
	/* Copies and kernels are checked against the domain's map, which does
	 * not tell reading from writing: read-only mappings are refused. */
	if (req->flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE && req->flags != CU_MEM_ACCESS_FLAGS_PROT_NONE)
		return vmm_refuse(c, "access other than read-write or none", req->ptr, req->flags);
	uint32_t first, n;
	uint64_t covered = 0;
	if (vmm_maps_in(va, req->ptr, req->size, &first, &n) || !n)
		return vmm_refuse(c, "range not made of whole mappings", req->ptr, req->size);
	for (uint32_t k = first; k < first + n; k++)
		covered += va->u.vmm_va.maps[k].size;
	if (covered != req->size)
		return vmm_refuse(c, "range not wholly mapped", req->ptr, req->size);
	CUmemAccessDesc d;
	memset(&d, 0, sizeof d);
	d.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	d.location.id = c->dom->gpu->dev;
	d.flags = (CUmemAccess_flags)req->flags;
	int r = drv(c, c->drv->cuMemSetAccess(req->ptr, req->size, &d, 1));
	for (uint32_t k = first; !r && k < first + n; k++) {
		struct xgpu_vmm_map *m = &va->u.vmm_va.maps[k];
		bool want = req->flags == CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
		if (want && !m->accessible) {
			if (xgpu_memmap_add(&c->dom->mem, m->ptr, m->size, c->ch, req->va) < 0)
				return cudaErrorMemoryAllocation;
		} else if (!want && m->accessible) {
			xgpu_memmap_del_tagged(&c->dom->mem, m->ptr, req->va, c->ch);
		}
		m->accessible = want;
	}
	return r;
}

/* ---- IPC between processes of one domain (issue 27) ------------------------------ */

HANDLER(IPC_EXPORT)
{
	const struct xgpu_alloc *a = xgpu_memmap_find(&c->dom->mem, req->ptr, 0, c->ch);
	if (!a || a->module) {
		dlog_info(c->dom,
			  "domain %s: %s refused: 0x%" PRIx64
			  " is not in a cuMemAlloc allocation of this process",
			  c->dom->name, c->what, req->ptr);
		return cudaErrorInvalidValue;
	}
	uint64_t token = xgpu_ipc_export(c->dom, c->ch, a->base);
	if (!token)
		return cudaErrorMemoryAllocation;
	rsp->base = a->base;
	rsp->size = a->size;
	rsp->token = token;
	return cudaSuccess;
}

HANDLER(IPC_OPEN)
{
	struct xgpu_channel *owner = xgpu_ipc_exporter(c->dom, req->base, req->token);
	const struct xgpu_alloc *a = owner ? xgpu_memmap_find(&c->dom->mem, req->base, 0, owner) : NULL;
	if (!a || a->base != req->base || a->module) {
		dlog_info(c->dom,
			  "domain %s: %s refused: no allocation at 0x%" PRIx64
			  " was exported under that token",
			  c->dom->name, c->what, req->base);
		return cudaErrorInvalidValue;
	}
	if (owner == c->ch) {
		dlog_info(c->dom, "domain %s: %s refused: a process cannot open its own handle", c->dom->name,
			  c->what);
		return cudaErrorInvalidValue;
	}
	uint64_t size = a->size;
	/* Opened again: the same alias. */
	const struct xgpu_alloc *mine = xgpu_memmap_find(&c->dom->mem, req->base, 0, c->ch);
	if (!mine && xgpu_memmap_add(&c->dom->mem, req->base, size, c->ch, XGPU_MEMMAP_IPC) < 0)
		return cudaErrorMemoryAllocation;
	rsp->ptr = req->base;
	rsp->size = size;
	return cudaSuccess;
}

HANDLER(IPC_CLOSE)
{
	if (!xgpu_memmap_del_tagged(&c->dom->mem, req->ptr, XGPU_MEMMAP_IPC, c->ch)) {
		dlog_info(c->dom, "domain %s: %s refused: 0x%" PRIx64 " was not opened by this process",
			  c->dom->name, c->what, req->ptr);
		return cudaErrorInvalidValue;
	}
	return cudaSuccess;
}

HANDLER(SEG_REGISTER)
{
	struct xgpu_domain *dom = c->dom;
	if (req->flags || req->size == 0)
		return cudaErrorInvalidValue;
	int r = room_for(c, OBJ_SEG);
	if (r)
		return r;
	/* The daemon maps (and the driver pins) these pages: a budget per
	 * domain keeps a guest from pinning Dom0's memory without bound. */
	if (req->size > xgpu_pinned_limit(c->dom) ||
	    dom->pinned_bytes > xgpu_pinned_limit(c->dom) - req->size) {
		char want[32], lim[32];
		xgpu_format_size(req->size, want, sizeof want);
		xgpu_format_size(xgpu_pinned_limit(c->dom), lim, sizeof lim);
		dlog_info(
		    dom,
		    "domain %s: pinned allocation of %s refused: beyond the domain's %s of pinned memory",
		    dom->name, want, lim);
		return cudaErrorMemoryAllocation;
	}
	void *ptr;
	char err[160];
	if (c->ch->ops->import_segment(c->ch, req->token, req->size, &ptr, err, sizeof err) < 0) {
		dlog_info(dom, "domain %s: host segment %" PRIu64 " refused: %s", dom->name, req->token, err);
		return cudaErrorInvalidValue;
	}
	struct xgpu_obj *o;
	xgpu_handle_t h = xgpu_obj_add(&dom->objs, OBJ_SEG, c->ch, &o);
	if (!h) {
		c->ch->ops->release_segment(c->ch, ptr, req->size);
		return cudaErrorMemoryAllocation;
	}
	o->u.seg.ptr = ptr;
	o->u.seg.size = req->size;
	dom->pinned_bytes += req->size;
	/* Registered memory lets the driver DMA straight from the guest's
	 * pages; without it copies still work, through the driver's staging. */
	CUresult cr = c->drv->cuMemHostRegister(ptr, req->size, CU_MEMHOSTREGISTER_PORTABLE);
	o->u.seg.registered = cr == CUDA_SUCCESS;
	if (!o->u.seg.registered)
		dlog_info(dom,
			  "domain %s: host segment of %" PRIu64
			  " bytes not registered with the driver (%s); copies "
			  "from it are staged",
			  dom->name, req->size, xgpu_driver_error_name(c->drv, cr));
	rsp->seg = h;
	return cudaSuccess;
}

static void release_seg(struct xgpu_channel *ch, struct xgpu_obj *o, xgpu_handle_t h)
{
	struct xgpu_domain *dom = ch->dom;
	if (o->u.seg.registered)
		dom->x->drv.cuMemHostUnregister(o->u.seg.ptr);
	ch->ops->release_segment(ch, o->u.seg.ptr, o->u.seg.size);
	dom->pinned_bytes -= o->u.seg.size;
	xgpu_obj_del(&dom->objs, h);
}

HANDLER(SEG_UNREGISTER)
{
	/* Copies from the segment may still be in flight on any stream. */
	int r = drv(c, c->drv->cuCtxSynchronize());
	release_seg(c->ch, res->seg, req->seg);
	return r;
}

HANDLER(MODULE_LOAD)
{
	uint64_t len = c->hdr.bulk_len;
	if (req->flags || len == 0)
		return cudaErrorInvalidValue;
	if (room_for(c, OBJ_MODULE))
		return cudaErrorMemoryAllocation;
	uint8_t *image = malloc(len);
	if (!image)
		return cudaErrorMemoryAllocation;
	int r = bulk_read(c, image, len);
	struct xgpu_fatbin_info info = {0};
	char why[160];
	/* The driver takes an image's length from its own headers: only a
	 * fatbin whose header lies within what the guest sent may reach it. */
	if (!r && xgpu_fatbin_size(image, len) == 0) {
		dlog_info(c->dom,
			  "domain %s: module refused: %" PRIu64 " bytes that are not one whole fatbin",
			  c->dom->name, len);
		r = cudaErrorInvalidKernelImage;
	}
	if (!r && xgpu_fatbin_parse(image, len, &info, why, sizeof why) < 0) {
		dlog_info(c->dom, "domain %s: module refused: %s", c->dom->name, why);
		r = cudaErrorInvalidKernelImage;
	}
	/* A module's __device__ and __constant__ variables are device memory
	 * too (a few bytes of image can declare gigabytes): charged like
	 * cudaMalloc, before the driver allocates them. */
	uint64_t charge = info.global_bytes, held = atomic_load(&c->dom->stats->mem_bytes);
	if (!r && (charge > xgpu_mem_limit(c->dom) || held > xgpu_mem_limit(c->dom) - charge)) {
		dlog_info(c->dom,
			  "domain %s: module refused: its variables need %" PRIu64
			  " bytes of device memory beyond the domain's limit",
			  c->dom->name, charge);
		r = cudaErrorMemoryAllocation;
	}
	CUmodule mod = NULL;
	if (!r)
		r = drv(c, c->drv->cuModuleLoadData(&mod, image));
	free(image);
	struct xgpu_obj *o;
	xgpu_handle_t h = 0;
	if (!r && !(h = xgpu_obj_add(&c->dom->objs, OBJ_MODULE, c->ch, &o))) {
		c->drv->cuModuleUnload(mod);
		r = cudaErrorMemoryAllocation;
	}
	if (r) {
		xgpu_fatbin_free(&info);
		return r;
	}
	o->u.module.mod = mod;
	o->u.module.info = info;
	o->u.module.charge = charge;
	atomic_fetch_add(&c->dom->stats->mem_bytes, charge);
	rsp->module = h;
	xlog_debug("domain %s: module loaded (%" PRIu64 " bytes, %u kernels)", c->dom->name, len,
		   info.nkernels);
	return cudaSuccess;
}

static void unload_module(struct xgpu_channel *ch, struct xgpu_obj *mod, xgpu_handle_t h)
{
	struct xgpu_domain *dom = ch->dom;
	/* Functions die with their module. */
	uint32_t i = 0;
	struct xgpu_obj *o;
	xgpu_handle_t fh;
	while (xgpu_obj_next(&dom->objs, &i, &o, &fh) >= 0) {
		if (o->kind == OBJ_FUNC && o->u.func.module == h)
			xgpu_obj_del(&dom->objs, fh);
		i++;
	}
	xgpu_memmap_drop_module(&dom->mem, h);
	atomic_fetch_sub(&dom->stats->mem_bytes, mod->u.module.charge);
	dom->x->drv.cuModuleUnload(mod->u.module.mod);
	xgpu_fatbin_free(&mod->u.module.info);
	xgpu_obj_del(&dom->objs, h);
}

HANDLER(MODULE_UNLOAD)
{
	unload_module(c->ch, res->module, req->module);
	return cudaSuccess;
}

/* The driver's own view of the parameter layout, where it offers one, must
 * agree with what we parsed: a disagreement would mean marshalling wrong
 * bytes into a kernel. */
static int cross_check_params(struct call *c, CUfunction fn, const struct xgpu_kernel_info *k)
{
	for (uint32_t i = 0; i < k->nparams; i++) {
		size_t off, size;
		CUresult cr = c->drv->cuFuncGetParamInfo(fn, i, &off, &size);
		if (cr == CUDA_ERROR_NOT_SUPPORTED)
			return cudaSuccess;
		if (cr != CUDA_SUCCESS || off != k->params[i].offset || size != k->params[i].size) {
			dlog_err(c->dom,
				 "domain %s: kernel %s parameter %u: fatbin says offset %u size %u, driver "
				 "says %zu/%zu",
				 c->dom->name, k->name, i, k->params[i].offset, k->params[i].size,
				 cr == CUDA_SUCCESS ? off : 0, cr == CUDA_SUCCESS ? size : 0);
			return cudaErrorInvalidKernelImage;
		}
	}
	return cudaSuccess;
}

HANDLER(MODULE_GET_FUNCTION)
{
	char name[XGPU_MAX_NAME_BYTES];
	int r = read_name(c, name);
	if (r)
		return r;
	if (room_for(c, OBJ_FUNC))
		return cudaErrorMemoryAllocation;
	const struct xgpu_kernel_info *k = xgpu_fatbin_find(&res->module->u.module.info, name);
	if (!k) {
		dlog_info(c->dom, "domain %s: no kernel %s in the module", c->dom->name, name);
		return cudaErrorInvalidDeviceFunction;
	}
	CUfunction fn;
	r = drv(c, c->drv->cuModuleGetFunction(&fn, res->module->u.module.mod, name));
	if (!r)
		r = cross_check_params(c, fn, k);
	if (r)
		return r;
	struct xgpu_obj *o;
	xgpu_handle_t h = xgpu_obj_add(&c->dom->objs, OBJ_FUNC, c->ch, &o);
	if (!h)
		return cudaErrorMemoryAllocation;
	o->u.func.fn = fn;
	o->u.func.module = req->module;
	o->u.func.kinfo = k;
	rsp->func = h;
	rsp->param_bytes = k->param_bytes;
	rsp->nparams = k->nparams;
	return cudaSuccess;
}

HANDLER(MODULE_GET_GLOBAL)
{
	char name[XGPU_MAX_NAME_BYTES];
	int r = read_name(c, name);
	if (r)
		return r;
	CUdeviceptr p;
	size_t size;
	r = drv(c, c->drv->cuModuleGetGlobal(&p, &size, res->module->u.module.mod, name));
	if (r)
		return r;
	/* Module globals become ranges this process may copy to and from. */
	if (!xgpu_memmap_find(&c->dom->mem, p, size, c->ch) &&
	    xgpu_memmap_add(&c->dom->mem, p, size, c->ch, req->module) < 0)
		return cudaErrorMemoryAllocation;
	/* A driver that cannot say (or a plain variable) answers no. */
	unsigned managed = 0;
	if (c->drv->cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, p) != CUDA_SUCCESS)
		managed = 0;
	rsp->dptr = p;
	rsp->size = size;
	rsp->managed = managed != 0;
	return cudaSuccess;
}

HANDLER(FUNC_GET_ATTRIBUTE)
{
	int v;
	int r = drv(c, c->drv->cuFuncGetAttribute(&v, (CUfunction_attribute)req->attr, res->func->u.func.fn));
	rsp->value = v;
	return r;
}

HANDLER(FUNC_SET_ATTRIBUTE)
{
	return drv(
	    c, c->drv->cuFuncSetAttribute(res->func->u.func.fn, (CUfunction_attribute)req->attr, req->value));
}

/* A cooperative launch must have every block resident at once: more blocks
 * than the device's occupancy for this configuration x its SMs is refused
 * as CUDA refuses it, before the driver sees it. */
static int check_cooperative(struct call *c, CUfunction fn, const struct xgpu_dim3 *grid,
			     const struct xgpu_dim3 *block, uint32_t shared_bytes)
{
	const struct xgpu_gpu_desc *g = c->dom->gpu;
	if (!g->attrs[CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH])
		return cudaErrorNotSupported;
	uint64_t threads = (uint64_t)block->x * block->y * block->z;
	uint64_t blocks = (uint64_t)grid->x * grid->y * grid->z;
	int per_sm = 0;
	if (threads > INT32_MAX)
		return cudaErrorInvalidValue; /* as NVIDIA's driver answers it */
	int r = drv(
	    c, c->drv->cuOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, fn, (int)threads, shared_bytes));
	if (r)
		return r;
	uint64_t fit = (uint64_t)(per_sm > 0 ? per_sm : 0) *
		       (uint64_t)g->attrs[CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT];
	if (blocks > fit) {
		dlog_info(c->dom,
			  "domain %s: cooperative launch refused: %" PRIu64 " blocks, at most %" PRIu64
			  " fit on the device at once",
			  c->dom->name, blocks, fit);
		return cudaErrorCooperativeLaunchTooLarge;
	}
	return cudaSuccess;
}

/* A thread block cluster (LAUNCH_EX): each side nonzero and dividing the
 * grid's, at most XGPU_CLUSTER_MAX_PORTABLE blocks, or _NONPORTABLE where the
 * kernel allows it, on a device that launches clusters; checked before the
 * driver sees it, as NVIDIA's driver answers each (the shape comes from the
 * guest). *use: whether the launch carries the attribute (0x0x0 and 1x1x1
 * are launches without clusters). */
static int check_cluster(struct call *c, CUfunction fn, const struct xgpu_dim3 *grid,
			 const struct xgpu_dim3 *cl, uint32_t policy, bool *use)
{
	*use = false;
	if (policy > CU_CLUSTER_SCHEDULING_POLICY_LOAD_BALANCING)
		return cudaErrorInvalidValue;
	if (!cl->x && !cl->y && !cl->z)
		return cudaSuccess;
	if (!cl->x || !cl->y || !cl->z)
		return cudaErrorInvalidValue;
	if (cl->x == 1 && cl->y == 1 && cl->z == 1)
		return cudaSuccess;
	if (!c->dom->gpu->attrs[CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH])
		return cudaErrorNotSupported;
	uint64_t blocks = (uint64_t)cl->x * cl->y * cl->z;
	uint64_t most = XGPU_CLUSTER_MAX_PORTABLE;
	if (blocks > most) {
		int nonportable = 0;
		int r = drv(c, c->drv->cuFuncGetAttribute(
				   &nonportable, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, fn));
		if (r)
			return r;
		if (nonportable)
			most = XGPU_CLUSTER_MAX_NONPORTABLE;
	}
	if (blocks > most || grid->x % cl->x || grid->y % cl->y || grid->z % cl->z) {
		dlog_info(
		    c->dom,
		    "domain %s: cluster launch refused: cluster %ux%ux%u, grid %ux%ux%u, at most %" PRIu64
		    " blocks a cluster",
		    c->dom->name, cl->x, cl->y, cl->z, grid->x, grid->y, grid->z, most);
		return cudaErrorInvalidClusterSize;
	}
	*use = true;
	return cudaSuccess;
}

static int launch(struct call *c, const struct xgpu_obj *func, const struct xgpu_dim3 *grid,
		  const struct xgpu_dim3 *block, uint32_t shared_bytes, CUstream stream, uint32_t flags,
		  const struct xgpu_dim3 *cluster, uint32_t cluster_policy)
{
	const struct xgpu_kernel_info *k = func->u.func.kinfo;
	/* Up to the 32764 bytes CUDA 12.1 allows. */
	uint8_t params[XGPU_MAX_PARAM_BYTES];
	if (flags & ~XGPU_LAUNCH_COOPERATIVE)
		return cudaErrorInvalidValue;
	if (c->hdr.bulk_len != k->param_bytes) {
		dlog_info(c->dom,
			  "domain %s: launch of %s refused: %" PRIu64 " parameter bytes, the kernel takes %u",
			  c->dom->name, k->name, c->hdr.bulk_len, k->param_bytes);
		return cudaErrorInvalidValue;
	}
	if (!grid->x || !grid->y || !grid->z || !block->x || !block->y || !block->z)
		return cudaErrorInvalidValue; /* as NVIDIA's driver answers it */
	int r = bulk_read(c, params, k->param_bytes);
	if (r)
		return r;
	if (flags & XGPU_LAUNCH_COOPERATIVE) {
		r = check_cooperative(c, func->u.func.fn, grid, block, shared_bytes);
		if (r)
			return r;
	}
	bool clustered = false;
	if (cluster) {
		r = check_cluster(c, func->u.func.fn, grid, cluster, cluster_policy, &clustered);
		if (r)
			return r;
	}
	size_t size = k->param_bytes;
	void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, params, CU_LAUNCH_PARAM_BUFFER_SIZE, &size,
			 CU_LAUNCH_PARAM_END};
	struct xgpu_busy_mark *mark;
	xgpu_exec_busy_begin(c->dom, stream, &mark);
	if ((flags & XGPU_LAUNCH_COOPERATIVE) || clustered || (cluster && cluster_policy)) {
		CUlaunchAttribute attrs[3];
		unsigned n = 0;
		if (flags & XGPU_LAUNCH_COOPERATIVE)
			attrs[n++] = (CUlaunchAttribute){.id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE,
							 .value.cooperative = 1};
		if (clustered)
			attrs[n++] =
			    (CUlaunchAttribute){.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION,
						.value.clusterDim = {cluster->x, cluster->y, cluster->z}};
		if (cluster && cluster_policy)
			attrs[n++] = (CUlaunchAttribute){
			    .id = CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE,
			    .value.clusterSchedulingPolicyPreference =
				(CUclusterSchedulingPolicy)cluster_policy};
		CUlaunchConfig cfg = {.gridDimX = grid->x,
				      .gridDimY = grid->y,
				      .gridDimZ = grid->z,
				      .blockDimX = block->x,
				      .blockDimY = block->y,
				      .blockDimZ = block->z,
				      .sharedMemBytes = shared_bytes,
				      .hStream = stream,
				      .attrs = attrs,
				      .numAttrs = n};
		r = drv(c, c->drv->cuLaunchKernelEx(&cfg, func->u.func.fn, NULL, size ? extra : NULL));
	} else
		r = drv(c,
			c->drv->cuLaunchKernel(func->u.func.fn, grid->x, grid->y, grid->z, block->x, block->y,
					       block->z, shared_bytes, stream, NULL, size ? extra : NULL));
	xgpu_exec_busy_end(c->dom, stream, mark);
	if (!r)
		xgpu_stat_add(&c->dom->stats->kernels, 1);
	return r;
}

HANDLER(LAUNCH)
{
	return launch(c, res->func, &req->grid, &req->block, req->shared_bytes, res->stream, 0, NULL, 0);
}

HANDLER(LAUNCH_EX)
{
	return launch(c, res->func, &req->grid, &req->block, req->shared_bytes, res->stream, req->flags,
		      &req->cluster, req->cluster_policy);
}

/* The flags are cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags's:
 * CU_OCCUPANCY_DISABLE_CACHING_OVERRIDE (cuBLASLt's split-K path asks with it)
 * assumes global loads are cached in L1, which every GPU a CUDA 13 driver
 * runs (Turing on) always does, so the answer is the default one. */
HANDLER(OCCUPANCY)
{
	int blocks = 0;
	if (req->flags & ~(uint32_t)CU_OCCUPANCY_DISABLE_CACHING_OVERRIDE)
		return cudaErrorInvalidValue;
	int r = drv(c, c->drv->cuOccupancyMaxActiveBlocksPerMultiprocessor(
			   &blocks, res->func->u.func.fn, req->block_size, req->dynamic_smem));
	rsp->blocks = blocks;
	return r;
}

HANDLER(STREAM_CREATE)
{
	if (req->flags & ~(uint32_t)CU_STREAM_NON_BLOCKING)
		return cudaErrorInvalidValue;
	if (room_for(c, OBJ_STREAM))
		return cudaErrorMemoryAllocation;
	CUstream s;
	int r = drv(c, c->drv->cuStreamCreateWithPriority(&s, req->flags, req->priority));
	if (r)
		return r;
	struct xgpu_obj *o;
	xgpu_handle_t h = xgpu_obj_add(&c->dom->objs, OBJ_STREAM, c->ch, &o);
	if (!h) {
		c->drv->cuStreamDestroy(s);
		return cudaErrorMemoryAllocation;
	}
	o->u.stream.s = s;
	rsp->stream = h;
	return cudaSuccess;
}

HANDLER(STREAM_DESTROY)
{
	if (req->stream == XGPU_STREAM_DEFAULT)
		return cudaErrorInvalidResourceHandle;
	int r = drv(c, c->drv->cuStreamDestroy(res->stream));
	xgpu_obj_del(&c->dom->objs, req->stream);
	return r;
}

HANDLER(STREAM_SYNC)
{
	return drv(c, c->drv->cuStreamSynchronize(res->stream));
}

HANDLER(STREAM_QUERY)
{
	CUresult cr = c->drv->cuStreamQuery(res->stream);
	return cr == CUDA_ERROR_NOT_READY ? cudaErrorNotReady : drv(c, cr);
}

HANDLER(STREAM_WAIT_EVENT)
{
	if (req->flags)
		return cudaErrorInvalidValue;
	return drv(c, c->drv->cuStreamWaitEvent(res->stream, res->event->u.event.e, 0));
}

HANDLER(STREAM_PRIORITY)
{
	int prio = 0, least = 0, greatest = 0;
	int r = drv(c, c->drv->cuCtxGetStreamPriorityRange(&least, &greatest));
	if (!r && res->stream)
		r = drv(c, c->drv->cuStreamGetPriority(res->stream, &prio));
	rsp->priority = prio;
	rsp->least = least;
	rsp->greatest = greatest;
	return r;
}

HANDLER(EVENT_CREATE)
{
	const uint32_t allowed = CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS;
	if (req->flags & ~allowed)
		return cudaErrorInvalidValue;
	bool interprocess = req->flags & CU_EVENT_INTERPROCESS;
	/* CUDA's rule: an interprocess event keeps no time. */
	if (interprocess && !(req->flags & CU_EVENT_DISABLE_TIMING))
		return cudaErrorInvalidValue;
	if (room_for(c, OBJ_EVENT))
		return cudaErrorMemoryAllocation;
	CUevent e;
	/* The domain's processes share this context, so the event the driver
	 * makes is local to it: no driver-level IPC event is needed. */
	int r = drv(c, c->drv->cuEventCreate(&e, req->flags & ~(uint32_t)CU_EVENT_INTERPROCESS));
	if (r)
		return r;
	struct xgpu_obj *o;
	xgpu_handle_t h = xgpu_obj_add(&c->dom->objs, OBJ_EVENT, c->ch, &o);
	if (!h) {
		c->drv->cuEventDestroy(e);
		return cudaErrorMemoryAllocation;
	}
	o->u.event.e = e;
	o->u.event.interprocess = interprocess;
	rsp->event = h;
	return cudaSuccess;
}

HANDLER(EVENT_DESTROY)
{
	int r = drv(c, xgpu_event_put(c->drv, res->event));
	xgpu_obj_del(&c->dom->objs, req->event);
	return r;
}

HANDLER(IPC_EVENT_EXPORT)
{
	if (!res->event->u.event.interprocess) {
		dlog_info(c->dom, "domain %s: %s refused: the event was not made with CU_EVENT_INTERPROCESS",
			  c->dom->name, c->what);
		return cudaErrorInvalidResourceHandle;
	}
	rsp->token = xgpu_ipc_event_export(res->event);
	return rsp->token ? cudaSuccess : cudaErrorMemoryAllocation;
}

HANDLER(IPC_EVENT_OPEN)
{
	struct xgpu_obj *src = xgpu_ipc_event_find(c->dom, req->handle, req->token);
	if (!src) {
		dlog_info(c->dom,
			  "domain %s: %s refused: no event of the domain was exported under that handle",
			  c->dom->name, c->what);
		return cudaErrorInvalidValue;
	}
	if (room_for(c, OBJ_EVENT))
		return cudaErrorMemoryAllocation;
	/* Copied out first: adding to the table may move src. */
	CUevent e = src->u.event.e;
	uint32_t *refs = src->u.event.refs;
	struct xgpu_obj *o;
	xgpu_handle_t h = xgpu_obj_add(&c->dom->objs, OBJ_EVENT, c->ch, &o);
	if (!h)
		return cudaErrorMemoryAllocation;
	o->u.event.e = e;
	o->u.event.refs = refs;
	o->u.event.interprocess = true;
	++*refs;
	rsp->event = h;
	return cudaSuccess;
}

HANDLER(EVENT_RECORD)
{
	return drv(c, c->drv->cuEventRecord(res->event->u.event.e, res->stream));
}

HANDLER(EVENT_SYNC)
{
	return drv(c, c->drv->cuEventSynchronize(res->event->u.event.e));
}

HANDLER(EVENT_QUERY)
{
	CUresult cr = c->drv->cuEventQuery(res->event->u.event.e);
	return cr == CUDA_ERROR_NOT_READY ? cudaErrorNotReady : drv(c, cr);
}

HANDLER(EVENT_ELAPSED)
{
	float ms = 0;
	CUresult cr = c->drv->cuEventElapsedTime(&ms, res->start->u.event.e, res->end->u.event.e);
	rsp->ms = ms;
	return cr == CUDA_ERROR_NOT_READY ? cudaErrorNotReady : drv(c, cr);
}

/* Waits for this process's own work: its streams, then the legacy stream. */
static int sync_channel(struct call *c)
{
	uint32_t i = 0;
	struct xgpu_obj *o;
	xgpu_handle_t h;
	int r = cudaSuccess;
	while (xgpu_obj_next(&c->dom->objs, &i, &o, &h) >= 0) {
		if (o->kind == OBJ_STREAM && o->owner == c->ch) {
			int e = drv(c, c->drv->cuStreamSynchronize(o->u.stream.s));
			r = r ? r : e;
		}
		i++;
	}
	int e = drv(c, c->drv->cuStreamSynchronize(NULL));
	return r ? r : e;
}

HANDLER(DEVICE_SYNC)
{
	return req->flags ? cudaErrorInvalidValue : sync_channel(c);
}

HANDLER(DEVICE_RESET)
{
	if (req->flags)
		return cudaErrorInvalidValue;
	dlog_info(c->dom, "domain %s: pid %d reset its device state", c->dom->name, (int)c->ch->pid);
	xgpu_channel_release_objects(c->ch);
	return cudaSuccess;
}

HANDLER(LIMIT_GET)
{
	size_t v = 0;
	int r = drv(c, c->drv->cuCtxGetLimit(&v, (CUlimit)req->limit));
	rsp->value = v;
	return r;
}

/* Limits that make the driver reserve device memory, and how much: it is
 * charged to the domain like its allocations. */
static bool limit_charge(const struct xgpu_gpu_desc *g, uint32_t limit, uint64_t value, unsigned *slot,
			 uint64_t *charge)
{
	uint64_t threads = (uint64_t)g->attrs[CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR] *
			   (uint64_t)g->attrs[CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT];
	switch (limit) {
	case CU_LIMIT_MALLOC_HEAP_SIZE:
		*slot = 0;
		*charge = value;
		return true;
	case CU_LIMIT_PRINTF_FIFO_SIZE:
		*slot = 1;
		*charge = value;
		return true;
	case CU_LIMIT_STACK_SIZE:
		/* Every thread that can be resident gets a stack. */
		*slot = 2;
		*charge = threads && value > UINT64_MAX / threads ? UINT64_MAX : value * threads;
		return true;
	case CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT:
		/* A conservative 4 KiB of launch state each. */
		*slot = 3;
		*charge = value > (UINT64_MAX >> 12) ? UINT64_MAX : value << 12;
		return true;
	default:
		return false;
	}
}

HANDLER(LIMIT_SET)
{
	struct xgpu_domain *dom = c->dom;
	unsigned slot;
	uint64_t charge;
	if (!limit_charge(dom->gpu, req->limit, req->value, &slot, &charge))
		return drv(c, c->drv->cuCtxSetLimit((CUlimit)req->limit, req->value));
	uint64_t held = atomic_load(&dom->stats->mem_bytes) - dom->limit_charge[slot];
	if (charge > xgpu_mem_limit(dom) || held > xgpu_mem_limit(dom) - charge) {
		dlog_info(dom,
			  "domain %s: cudaDeviceSetLimit(%u, %" PRIu64 ") refused: it would take %" PRIu64
			  " bytes of device memory beyond the domain's limit",
			  dom->name, req->limit, req->value, charge);
		return cudaErrorMemoryAllocation;
	}
	int r = drv(c, c->drv->cuCtxSetLimit((CUlimit)req->limit, req->value));
	if (!r) {
		atomic_fetch_add(&dom->stats->mem_bytes, charge - dom->limit_charge[slot]);
		dom->limit_charge[slot] = charge;
	}
	return r;
}

HANDLER(NOTE_UNSUPPORTED)
{
	char name[XGPU_MAX_NAME_BYTES];
	if (read_name(c, name) == cudaSuccess)
		dlog_warn(c->dom,
			  "domain %s: pid %d called %s, which xgpu does not support (returned "
			  "cudaErrorNotSupported)",
			  c->dom->name, (int)c->ch->pid, name);
	return cudaSuccess;
}

/* ---- graphs ---------------------------------------------------------------- */

static int graph_refuse(struct call *c, const char *why, uint32_t node)
{
	dlog_info(c->dom, "domain %s: graph refused: %s (node %u)", c->dom->name, why, node);
	return cudaErrorInvalidValue;
}

/* Checks one node against this process's objects and memory; used at
 * instantiate and again at every launch. */
static int graph_check_node(struct call *c, const struct xgpu_graph_exec *x, const struct xgpu_graph_node *n,
			    uint32_t i, uint32_t param_bytes)
{
	if (n->graph > x->nbodies)
		return graph_refuse(c, "a node in a conditional body that does not exist", i);
	switch (n->type) {
	case XGPU_GN_EMPTY:
		return cudaSuccess;
	case XGPU_GN_COND: {
		/* Its bodies must exist; that each has one owner and the nesting
		 * stays within bounds is checked for the whole graph. */
		bool sized = (n->value == CU_GRAPH_COND_TYPE_IF && (n->size == 1 || n->size == 2)) ||
			     (n->value == CU_GRAPH_COND_TYPE_WHILE && n->size == 1) ||
			     (n->value == CU_GRAPH_COND_TYPE_SWITCH && n->size >= 1);
		if (!sized || n->src < 1 || n->src > x->nbodies || n->size > x->nbodies - n->src + 1)
			return graph_refuse(c,
					    "a conditional node of an unknown type or with bodies that "
					    "do not exist",
					    i);
		if (n->handle >= x->nconds)
			return graph_refuse(c, "a conditional node names no handle", i);
		return cudaSuccess;
	}
	case XGPU_GN_KERNEL: {
		struct xgpu_obj *f = xgpu_obj_get(&c->dom->objs, n->handle, OBJ_FUNC, c->ch);
		if (!f)
			return bad_handle(c, "kernel node function", n->handle);
		const struct xgpu_kernel_info *k = f->u.func.kinfo;
		if (n->param_len != k->param_bytes || n->param_off > param_bytes ||
		    n->param_len > param_bytes - n->param_off)
			return graph_refuse(
			    c, "kernel parameters of the wrong size or outside the description", i);
		if (!n->grid.x || !n->grid.y || !n->grid.z || !n->block.x || !n->block.y || !n->block.z)
			return cudaErrorInvalidValue; /* as NVIDIA's driver answers it */
		return cudaSuccess;
	}
	case XGPU_GN_HTOD:
		return n->size ? check_range(c, n->dst, n->size, "copy node dst")
			       : graph_refuse(c, "empty copy", i);
	case XGPU_GN_DTOH:
		return n->size ? check_range(c, n->src, n->size, "copy node src")
			       : graph_refuse(c, "empty copy", i);
	case XGPU_GN_DTOD: {
		if (!n->size)
			return graph_refuse(c, "empty copy", i);
		int r = check_range(c, n->dst, n->size, "copy node dst");
		return r ? r : check_range(c, n->src, n->size, "copy node src");
	}
	case XGPU_GN_MEMSET:
		if (!n->size || n->value > 0xff)
			return graph_refuse(c, "empty memset or a value wider than a byte", i);
		return check_range(c, n->dst, n->size, "memset node dst");
	case XGPU_GN_EVENT_RECORD:
	case XGPU_GN_EVENT_WAIT:
		/* CUDA allows no event nodes in a conditional body. */
		if (n->graph)
			return graph_refuse(c, "an event node in a conditional body", i);
		return xgpu_obj_get(&c->dom->objs, n->handle, OBJ_EVENT, c->ch)
			   ? cudaSuccess
			   : bad_handle(c, "event node event", n->handle);
	default:
		return graph_refuse(c, "unknown node type", i);
	}
}

/* Orders the nodes so that each comes after every node it depends on (Kahn),
 * and lists each node's dependencies (deps_at[i] .. deps_at[i + 1] in deps).
 * Fails on a cycle. */
static int graph_order(struct call *c, uint32_t nn, const struct xgpu_graph_edge *e, uint32_t ne,
		       uint32_t *order, uint32_t *deps_at, uint32_t *deps)
{
	uint32_t *out_at = calloc((size_t)nn + 1, sizeof *out_at),
		 *outs = malloc(((size_t)ne + 1) * sizeof *outs);
	uint32_t *indeg = calloc(nn, sizeof *indeg);
	int r = cudaSuccess;
	if (!out_at || !outs || !indeg) {
		r = cudaErrorMemoryAllocation;
		goto out;
	}
	memset(deps_at, 0, ((size_t)nn + 1) * sizeof *deps_at);
	for (uint32_t k = 0; k < ne; k++) {
		if (e[k].from >= nn || e[k].to >= nn || e[k].from == e[k].to) {
			r = graph_refuse(c, "a dependency names no node or the node itself", k);
			goto out;
		}
		out_at[e[k].from + 1]++;
		deps_at[e[k].to + 1]++;
	}
	for (uint32_t i = 0; i < nn; i++) {
		out_at[i + 1] += out_at[i];
		deps_at[i + 1] += deps_at[i];
	}
	uint32_t *fill_out = indeg; /* reused as a cursor, then recomputed */
	for (uint32_t i = 0; i < nn; i++)
		fill_out[i] = 0;
	for (uint32_t k = 0; k < ne; k++)
		outs[out_at[e[k].from] + fill_out[e[k].from]++] = e[k].to;
	for (uint32_t i = 0; i < nn; i++)
		fill_out[i] = 0;
	for (uint32_t k = 0; k < ne; k++)
		deps[deps_at[e[k].to] + fill_out[e[k].to]++] = e[k].from;
	for (uint32_t i = 0; i < nn; i++)
		indeg[i] = deps_at[i + 1] - deps_at[i];
	uint32_t head = 0, tail = 0;
	for (uint32_t i = 0; i < nn; i++)
		if (!indeg[i])
			order[tail++] = i;
	while (head < tail) {
		uint32_t v = order[head++];
		for (uint32_t k = out_at[v]; k < out_at[v + 1]; k++)
			if (--indeg[outs[k]] == 0)
				order[tail++] = outs[k];
	}
	if (tail != nn) {
		uint32_t stuck = 0;
		while (stuck < nn && !indeg[stuck])
			stuck++;
		r = graph_refuse(c, "the dependencies form a cycle", stuck);
	}
out:
	free(out_at);
	free(outs);
	free(indeg);
	return r;
}

/* The driver graphs being built: the graph itself (0) and each conditional
 * body (made by its node), and the driver's handle for each guest handle
 * (0 until the graph it belongs to exists). */
struct graph_build {
	CUgraph *g;
	CUgraphConditionalHandle *h;
	bool *made; /* h[k] exists */
};

/* Adds node n to its driver graph after its dependencies. */
static int graph_add_node(struct call *c, struct xgpu_graph_exec *x, struct graph_build *b,
			  const struct xgpu_graph_node *n, const uint8_t *params, CUgraphNode *out,
			  const CUgraphNode *deps, size_t ndeps)
{
	struct xgpu_driver *dv = c->drv;
	CUcontext ctx = c->dom->ctx;
	CUgraph g = b->g[n->graph];
	switch (n->type) {
	case XGPU_GN_EMPTY:
		return drv(c, dv->cuGraphAddEmptyNode(out, g, deps, ndeps));
	case XGPU_GN_COND: {
		CUgraphNodeParams p;
		memset(&p, 0, sizeof p);
		p.type = CU_GRAPH_NODE_TYPE_CONDITIONAL;
		p.conditional.handle = b->h[n->handle];
		p.conditional.type = (CUgraphConditionalNodeType)n->value;
		p.conditional.size = (unsigned)n->size;
		p.conditional.ctx = ctx;
		int r = drv(c, dv->cuGraphAddNode(out, g, deps, NULL, ndeps, &p));
		for (uint64_t k = 0; !r && k < n->size; k++)
			b->g[n->src + k] = p.conditional.phGraph_out[k];
		/* The handles of the bodies, which exist from now on. */
		for (uint32_t k = 0; !r && k < x->nconds; k++) {
			const struct xgpu_graph_cond *hc = &x->conds[k];
			if (hc->graph >= n->src && hc->graph - n->src < n->size) {
				r = drv(c, dv->cuGraphConditionalHandleCreate(&b->h[k], b->g[hc->graph], ctx,
									      hc->default_value, hc->flags));
				b->made[k] = !r;
			}
		}
		return r;
	}
	case XGPU_GN_KERNEL: {
		struct xgpu_obj *f = xgpu_obj_get(&c->dom->objs, n->handle, OBJ_FUNC, c->ch);
		size_t size = n->param_len;
		uint8_t own[XGPU_MAX_PARAM_BYTES];
		const uint8_t *at = params + n->param_off;
		/* A kernel that sets a condition has the guest's handle among its
		 * parameters (8-byte aligned, as CUDA lays out 64-bit values):
		 * the driver's handle takes its place. Handles of graphs not built
		 * yet stay the guest's, which the driver refuses at the set. */
		if (x->nconds && size <= sizeof own) {
			memcpy(own, at, size);
			for (size_t off = 0; off + 8 <= size; off += 8) {
				uint64_t v;
				memcpy(&v, own + off, 8);
				for (uint32_t k = 0; k < x->nconds; k++)
					if (b->made[k] && v == x->conds[k].guest) {
						uint64_t h = b->h[k];
						memcpy(own + off, &h, 8);
						break;
					}
			}
			at = own;
		}
		void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, (void *)at, CU_LAUNCH_PARAM_BUFFER_SIZE,
				 &size, CU_LAUNCH_PARAM_END};
		CUDA_KERNEL_NODE_PARAMS p;
		memset(&p, 0, sizeof p);
		p.func = f->u.func.fn;
		p.gridDimX = n->grid.x;
		p.gridDimY = n->grid.y;
		p.gridDimZ = n->grid.z;
		p.blockDimX = n->block.x;
		p.blockDimY = n->block.y;
		p.blockDimZ = n->block.z;
		p.sharedMemBytes = n->shared_bytes;
		p.extra = size ? extra : NULL;
		return drv(c, dv->cuGraphAddKernelNode(out, g, deps, ndeps, &p));
	}
	case XGPU_GN_HTOD:
	case XGPU_GN_DTOH:
	case XGPU_GN_DTOD: {
		CUDA_MEMCPY3D p;
		memset(&p, 0, sizeof p);
		p.WidthInBytes = n->size;
		p.Height = 1;
		p.Depth = 1;
		if (n->type == XGPU_GN_HTOD) {
			p.srcMemoryType = CU_MEMORYTYPE_HOST;
			p.srcHost = x->host + n->src;
		} else {
			p.srcMemoryType = CU_MEMORYTYPE_DEVICE;
			p.srcDevice = n->src;
		}
		if (n->type == XGPU_GN_DTOH) {
			p.dstMemoryType = CU_MEMORYTYPE_HOST;
			p.dstHost = x->host + n->dst;
		} else {
			p.dstMemoryType = CU_MEMORYTYPE_DEVICE;
			p.dstDevice = n->dst;
		}
		return drv(c, dv->cuGraphAddMemcpyNode(out, g, deps, ndeps, &p, ctx));
	}
	case XGPU_GN_MEMSET: {
		CUDA_MEMSET_NODE_PARAMS p = {
		    .dst = n->dst, .value = n->value, .elementSize = 1, .width = n->size, .height = 1};
		return drv(c, dv->cuGraphAddMemsetNode(out, g, deps, ndeps, &p, ctx));
	}
	case XGPU_GN_EVENT_RECORD:
	case XGPU_GN_EVENT_WAIT: {
		struct xgpu_obj *e = xgpu_obj_get(&c->dom->objs, n->handle, OBJ_EVENT, c->ch);
		return n->type == XGPU_GN_EVENT_RECORD
			   ? drv(c, dv->cuGraphAddEventRecordNode(out, g, deps, ndeps, e->u.event.e))
			   : drv(c, dv->cuGraphAddEventWaitNode(out, g, deps, ndeps, e->u.event.e));
	}
	}
	return cudaErrorInvalidValue;
}

/* Validates the whole description before the driver sees any of it, then
 * builds and instantiates the driver graph in dependency order. */
/* The conditional structure: handles name existing graphs, distinct values
 * and known flags; every body has exactly one conditional node, bodies nest
 * at most XGPU_MAX_GRAPH_COND_DEPTH deep (no body inside itself); edges join
 * nodes of one graph. The nodes are checked already. */
static int graph_check_conds(struct call *c, const struct xgpu_graph_exec *x,
			     const struct xgpu_graph_edge *edges, uint32_t nedges)
{
	for (uint32_t k = 0; k < x->nconds; k++) {
		const struct xgpu_graph_cond *h = &x->conds[k];
		if (h->graph > x->nbodies || h->reserved ||
		    (h->flags & ~(uint32_t)CU_GRAPH_COND_ASSIGN_DEFAULT))
			return graph_refuse(c, "a conditional handle of no graph, or with unknown flags", k);
		for (uint32_t j = 0; j < k; j++)
			if (x->conds[j].guest == h->guest)
				return graph_refuse(c, "two conditional handles of one value", k);
	}
	for (uint32_t k = 0; k < nedges; k++)
		if (edges[k].from < x->nnodes && edges[k].to < x->nnodes && /* else graph_order refuses */
		    x->nodes[edges[k].from].graph != x->nodes[edges[k].to].graph)
			return graph_refuse(c, "a dependency between nodes of different graphs", k);
	if (!x->nbodies)
		return cudaSuccess;
	uint32_t *owner = malloc(((size_t)x->nbodies + 1) * sizeof *owner);
	if (!owner)
		return cudaErrorMemoryAllocation;
	for (uint32_t b = 0; b <= x->nbodies; b++)
		owner[b] = UINT32_MAX;
	int r = cudaSuccess;
	for (uint32_t i = 0; i < x->nnodes && !r; i++) {
		const struct xgpu_graph_node *n = &x->nodes[i];
		for (uint64_t k = 0; n->type == XGPU_GN_COND && k < n->size && !r; k++) {
			if (owner[n->src + k] != UINT32_MAX)
				r = graph_refuse(c, "a conditional body of two conditional nodes", i);
			owner[n->src + k] = i;
		}
	}
	/* Up from each body to the graph itself, through the graphs of the
	 * conditional nodes that own them. */
	for (uint32_t b = 1; b <= x->nbodies && !r; b++) {
		uint32_t at = b, depth = 0;
		while (at && depth < XGPU_MAX_GRAPH_COND_DEPTH && owner[at] != UINT32_MAX) {
			at = x->nodes[owner[at]].graph;
			depth++;
		}
		if (at)
			r = graph_refuse(c,
					 owner[at] == UINT32_MAX
					     ? "a conditional body of no conditional node"
					     : "conditional nodes nested beyond the limit",
					 b);
	}
	/* A conditional node's handle belongs to its graph or to one its graph
	 * is a body of (the nesting is bounded and acyclic by now). */
	for (uint32_t i = 0; i < x->nnodes && !r; i++) {
		const struct xgpu_graph_node *n = &x->nodes[i];
		if (n->type != XGPU_GN_COND)
			continue;
		uint32_t want = x->conds[n->handle].graph, at = n->graph;
		while (at != want && at)
			at = x->nodes[owner[at]].graph;
		if (at != want)
			r = graph_refuse(c, "a conditional node's handle is not one of its graph's", i);
	}
	free(owner);
	return r;
}

static int graph_build(struct call *c, struct xgpu_graph_exec *x, const uint8_t *buf)
{
	struct xgpu_graph_desc d;
	memcpy(&d, buf, sizeof d);
	const struct xgpu_graph_edge *edges =
	    (const struct xgpu_graph_edge *)(buf + sizeof d +
					     (size_t)d.nnodes * sizeof(struct xgpu_graph_node));
	const uint8_t *conds = (const uint8_t *)(edges + d.nedges);
	const uint8_t *params = conds + (size_t)d.nconds * sizeof(struct xgpu_graph_cond);
	memcpy(x->nodes, buf + sizeof d, (size_t)d.nnodes * sizeof *x->nodes);
	x->nconds = d.nconds;
	x->nbodies = d.nbodies;
	if (d.nconds) {
		if (!(x->conds = malloc((size_t)d.nconds * sizeof *x->conds)))
			return cudaErrorMemoryAllocation;
		memcpy(x->conds, conds, (size_t)d.nconds * sizeof *x->conds);
	}
	uint64_t host = 0;
	for (uint32_t i = 0; i < d.nnodes; i++) {
		struct xgpu_graph_node *n = &x->nodes[i];
		int r = graph_check_node(c, x, n, i, d.param_bytes);
		if (r)
			return r;
		if (n->type == XGPU_GN_KERNEL)
			x->nkernels++;
		if (n->type == XGPU_GN_HTOD || n->type == XGPU_GN_DTOH) {
			if (n->size > XGPU_MAX_GRAPH_HOST_BYTES - host)
				return graph_refuse(c, "host copies beyond what one graph may stage", i);
			host += n->size;
			if (n->type == XGPU_GN_HTOD)
				x->htod_bytes += n->size;
			else
				x->dtoh_bytes += n->size;
		}
	}
	/* Host copies are staged in pinned memory, paid for like cudaMallocHost. */
	if (host) {
		if (host > xgpu_pinned_limit(c->dom) ||
		    c->dom->pinned_bytes > xgpu_pinned_limit(c->dom) - host) {
			dlog_info(c->dom,
				  "domain %s: graph refused: its %" PRIu64
				  " bytes of host copies exceed the pinned-memory limit",
				  c->dom->name, host);
			return cudaErrorMemoryAllocation;
		}
		int r = drv(c, c->drv->cuMemAllocHost((void **)&x->host, host));
		if (r)
			return r;
		x->host_charge = host;
		c->dom->pinned_bytes += host;
		uint64_t in = 0, out = x->htod_bytes;
		for (uint32_t i = 0; i < d.nnodes; i++) {
			struct xgpu_graph_node *n = &x->nodes[i];
			if (n->type == XGPU_GN_HTOD) {
				n->src = in;
				in += n->size;
			} else if (n->type == XGPU_GN_DTOH) {
				n->dst = out;
				out += n->size;
			}
		}
	}
	int r = graph_check_conds(c, x, edges, d.nedges);
	if (r)
		return r;
	uint32_t *order = malloc((size_t)d.nnodes * sizeof *order);
	uint32_t *deps_at = malloc(((size_t)d.nnodes + 1) * sizeof *deps_at);
	uint32_t *deps = malloc(((size_t)d.nedges + 1) * sizeof *deps);
	CUgraphNode *dn = calloc(d.nnodes, sizeof *dn),
		    *dep_nodes = malloc(((size_t)d.nedges + 1) * sizeof *dep_nodes);
	struct graph_build b = {calloc((size_t)d.nbodies + 1, sizeof *b.g),
				calloc(d.nconds ? d.nconds : 1, sizeof *b.h),
				calloc(d.nconds ? d.nconds : 1, sizeof *b.made)};
	r = order && deps_at && deps && dn && dep_nodes && b.g && b.h && b.made ? cudaSuccess
										: cudaErrorMemoryAllocation;
	if (!r)
		r = graph_order(c, d.nnodes, edges, d.nedges, order, deps_at, deps);
	if (!r)
		r = drv(c, c->drv->cuGraphCreate(&x->g, 0));
	if (!r)
		b.g[0] = x->g;
	for (uint32_t k = 0; k < d.nconds && !r; k++)
		if (!x->conds[k].graph) {
			r = drv(c, c->drv->cuGraphConditionalHandleCreate(&b.h[k], x->g, c->dom->ctx,
									  x->conds[k].default_value,
									  x->conds[k].flags));
			b.made[k] = !r;
		}
	/* In dependency order, a graph's nodes once its conditional node made
	 * it: one pass per nesting level. */
	for (uint32_t added = 0, pass = 0; added < d.nnodes && !r; pass++) {
		if (pass > XGPU_MAX_GRAPH_COND_DEPTH) {
			r = graph_refuse(c, "conditional bodies that cannot be built", 0);
			break;
		}
		for (uint32_t k = 0; k < d.nnodes && !r; k++) {
			uint32_t i = order[k], nd = deps_at[i + 1] - deps_at[i];
			if (dn[i] || !b.g[x->nodes[i].graph])
				continue;
			for (uint32_t j = 0; j < nd; j++)
				dep_nodes[j] = dn[deps[deps_at[i] + j]];
			r = graph_add_node(c, x, &b, &x->nodes[i], params, &dn[i], dep_nodes, nd);
			added++;
		}
	}
	if (!r)
		r = drv(c, c->drv->cuGraphInstantiateWithFlags(&x->ge, x->g, 0));
	if (!r)
		r = drv(c, c->drv->cuEventCreate(&x->done, CU_EVENT_DISABLE_TIMING));
	free(order);
	free(deps_at);
	free(deps);
	free(dn);
	free(dep_nodes);
	free(b.g);
	free(b.h);
	free(b.made);
	return r;
}

HANDLER(GRAPH_INSTANTIATE)
{
	uint64_t len = c->hdr.bulk_len;
	struct xgpu_graph_desc d;
	if (req->flags || len < sizeof d)
		return cudaErrorInvalidValue;
	int r = bulk_read(c, &d, sizeof d);
	if (r)
		return r;
	if (d.flags || d.nnodes == 0 || d.nnodes > XGPU_MAX_GRAPH_NODES || d.nedges > XGPU_MAX_GRAPH_EDGES ||
	    d.param_bytes > XGPU_MAX_GRAPH_PARAM_BYTES || d.nconds > XGPU_MAX_GRAPH_CONDS ||
	    d.nbodies > XGPU_MAX_GRAPH_BODIES ||
	    len != sizeof d + (uint64_t)d.nnodes * sizeof(struct xgpu_graph_node) +
		       (uint64_t)d.nedges * sizeof(struct xgpu_graph_edge) +
		       (uint64_t)d.nconds * sizeof(struct xgpu_graph_cond) + d.param_bytes) {
		dlog_info(c->dom,
			  "domain %s: graph refused: %u nodes, %u dependencies, %u conditional handles, %u "
			  "bodies, %u parameter bytes in %" PRIu64 " bytes",
			  c->dom->name, d.nnodes, d.nedges, d.nconds, d.nbodies, d.param_bytes, len);
		return cudaErrorInvalidValue;
	}
	if ((r = room_for(c, OBJ_GRAPH_EXEC)))
		return r;
	uint8_t *buf = malloc(len);
	struct xgpu_graph_exec *x = calloc(1, sizeof *x);
	if (x)
		x->nodes = calloc(d.nnodes, sizeof *x->nodes);
	if (!buf || !x || !x->nodes) {
		free(buf);
		if (x)
			free(x->nodes);
		free(x);
		return cudaErrorMemoryAllocation;
	}
	x->nnodes = d.nnodes;
	memcpy(buf, &d, sizeof d);
	r = bulk_read(c, buf + sizeof d, len - sizeof d);
	if (!r)
		r = graph_build(c, x, buf);
	free(buf);
	struct xgpu_obj *o;
	xgpu_handle_t h = 0;
	if (!r && !(h = xgpu_obj_add(&c->dom->objs, OBJ_GRAPH_EXEC, c->ch, &o)))
		r = cudaErrorMemoryAllocation;
	if (r) {
		xgpu_graph_exec_free(c->dom, x);
		return r;
	}
	o->u.graph.x = x;
	rsp->exec = h;
	rsp->htod_bytes = x->htod_bytes;
	rsp->dtoh_bytes = x->dtoh_bytes;
	return cudaSuccess;
}

HANDLER(GRAPH_LAUNCH)
{
	struct xgpu_obj *o = xgpu_obj_get(&c->dom->objs, req->exec, OBJ_GRAPH_EXEC, c->ch);
	if (!o)
		return bad_handle(c, "exec", req->exec);
	struct xgpu_graph_exec *x = o->u.graph.x;
	if (req->flags || c->hdr.bulk_len != x->htod_bytes)
		return cudaErrorInvalidValue;
	/* What the nodes name may have been freed or unloaded since. */
	for (uint32_t i = 0; i < x->nnodes; i++) {
		/* Host copies' staging offsets replaced their host side only. */
		int r = graph_check_node(c, x, &x->nodes[i], i, UINT32_MAX);
		if (r)
			return r;
	}
	int r = cudaSuccess;
	if (x->htod_bytes) {
		/* The previous launch may still be reading the staging. */
		if (x->launched)
			r = drv(c, c->drv->cuEventSynchronize(x->done));
		if (!r)
			r = bulk_read(c, x->host, x->htod_bytes);
		if (r)
			return r;
	}
	struct xgpu_busy_mark *mark;
	xgpu_exec_busy_begin(c->dom, res->stream, &mark);
	r = drv(c, c->drv->cuGraphLaunch(x->ge, res->stream));
	if (!r)
		r = drv(c, c->drv->cuEventRecord(x->done, res->stream));
	xgpu_exec_busy_end(c->dom, res->stream, mark);
	if (r)
		return r;
	x->launched = true;
	xgpu_stat_add(&c->dom->stats->kernels, x->nkernels);
	if (x->dtoh_bytes) {
		r = drv(c, c->drv->cuEventSynchronize(x->done));
		if (!r)
			r = bulk_write(c, x->host + x->htod_bytes, x->dtoh_bytes);
		if (!r)
			xgpu_stat_add(&c->dom->stats->d2h_bytes, x->dtoh_bytes);
	}
	if (!r)
		xgpu_stat_add(&c->dom->stats->h2d_bytes, x->htod_bytes);
	return r;
}

HANDLER(GRAPH_EXEC_DESTROY)
{
	struct xgpu_obj *o = xgpu_obj_get(&c->dom->objs, req->exec, OBJ_GRAPH_EXEC, c->ch);
	if (!o)
		return bad_handle(c, "exec", req->exec);
	/* A launch of it may still be running. */
	int r = o->u.graph.x->launched ? drv(c, c->drv->cuEventSynchronize(o->u.graph.x->done)) : cudaSuccess;
	xgpu_graph_exec_free(c->dom, o->u.graph.x);
	xgpu_obj_del(&c->dom->objs, req->exec);
	return r;
}

/* ---- the dispatcher ---------------------------------------------------------- */

bool xgpu_dispatch_exempt(const uint8_t *slot)
{
	struct xgpu_req_hdr h;
	memcpy(&h, slot, sizeof h);
	/* Malformed requests are answered without the slot: they run nothing. */
	return h.call >= XGPU_CALL_COUNT || (xgpu_calls[h.call].flags & XF_EXEMPT);
}

static void respond(struct call *c, int status, const void *rsp, uint32_t rsp_len)
{
	struct xgpu_channel *ch = c->ch;
	if (ch->dead)
		return;
	if (xgpu_q_space_for(&ch->v.rsp, 1) == 0 && !chan_wait(c, WAIT_RSP_SPACE, 1))
		return;
	if (xgpu_q_space_for(&ch->v.rsp, 1) < 0) {
		chan_kill(ch, "corrupt response ring index");
		return;
	}
	uint8_t *slot = xgpu_q_unit(&ch->v.rsp, ch->v.rsp.idx);
	struct xgpu_rsp_hdr h = {.call = c->hdr.call,
				 .status = status,
				 .seq = c->hdr.seq,
				 .bulk_len = c->bulk_sent,
				 .len = status ? 0 : rsp_len};
	memcpy(slot, &h, sizeof h);
	if (!status)
		memcpy(slot + sizeof h, rsp, rsp_len);
	xgpu_slot_seal(&ch->v.rsp);
	/* The guest usually spins on this slot: see xgpu_dispatch_flush. */
	xgpu_q_publish_deferred(&ch->v.rsp, 1);
}

void xgpu_dispatch_flush(struct xgpu_channel *ch)
{
	bool answered = xgpu_q_kick_due(&ch->v.rsp);
	if (xgpu_q_release_kick_due(&ch->v.req) || answered)
		ch->ops->kick(ch);
}

void xgpu_dispatch(struct xgpu_channel *ch, const uint8_t *slot)
{
	struct xgpu_domain *dom = ch->dom;
	struct call c = {.ch = ch, .dom = dom, .x = dom->x, .drv = &dom->x->drv};
	/* A call may block (a synchronisation, a wait for the guest's data):
	 * the answers before it must have their kicks first. */
	xgpu_dispatch_flush(ch);
	memcpy(&c.hdr, slot, sizeof c.hdr);
	const uint8_t *args = slot + sizeof c.hdr;
	uint8_t rsp[XGPU_SLOT_SIZE];
	uint32_t rsp_len = 0;
	int status;

	c.what = xgpu_call_name(c.hdr.call);
	if (c.hdr.call >= XGPU_CALL_COUNT || c.hdr.len != xgpu_calls[c.hdr.call].req_len ||
	    c.hdr.bulk_len > xgpu_calls[c.hdr.call].bulk_out_max) {
		dlog_warn(dom,
			  "domain %s: malformed request from pid %d: call %u, %u argument bytes, %" PRIu64
			  " bulk bytes; closing the channel",
			  dom->name, (int)ch->pid, c.hdr.call, c.hdr.len, c.hdr.bulk_len);
		xgpu_stat_add(&dom->stats->errors, 1);
		/* Its bulk length cannot be trusted, so the data stream cannot be
		 * resynchronised: answer, then close. */
		respond(&c, cudaErrorInvalidValue, NULL, 0);
		chan_kill(ch, "malformed request");
		return;
	}
	c.bulk_left = c.hdr.bulk_len;
	const struct xgpu_call_desc *desc = &xgpu_calls[c.hdr.call];
	status = (desc->flags & XF_CONTEXT) ? xgpu_exec_context(dom) : cudaSuccess;

	switch (c.hdr.call) {
#define IN(type, name)
#define OUT(type, name)
#define XGPU_CALL(NAME, flags, bulk, fields)                                                                 \
	case XGPU_CALL_##NAME: {                                                                             \
		struct xgpu_req_##NAME req;                                                                  \
		struct res_##NAME res;                                                                       \
		struct xgpu_rsp_##NAME out;                                                                  \
		memcpy(&req, args, sizeof req);                                                              \
		memset(&res, 0, sizeof res);                                                                 \
		memset(&out, 0, sizeof out);                                                                 \
		if (!status)                                                                                 \
			status = resolve_##NAME(&c, &req, &res);                                             \
		if (!status)                                                                                 \
			status = h_##NAME(&c, &req, &res, &out);                                             \
		memcpy(rsp, &out, sizeof out);                                                               \
		rsp_len = sizeof out;                                                                        \
		if (xgpu_log_enabled(XGPU_LOG_DEBUG)) {                                                      \
			char f[256];                                                                         \
			xgpu_format_req(c.hdr.call, &req, f, sizeof f);                                      \
			xlog_debug("domain %s pid %d: %s %s -> %d", dom->name, (int)ch->pid, #NAME, f,       \
				   status);                                                                  \
		}                                                                                            \
		break;                                                                                       \
	}
#include "calls.def"
#undef XGPU_CALL
#undef IN
#undef OUT
	}
	bulk_skip(&c);
	/* A refused registration must not leave the guest's shared segment
	 * behind, whatever refused it. */
	if (status && c.hdr.call == XGPU_CALL_SEG_REGISTER) {
		struct xgpu_req_SEG_REGISTER sr;
		memcpy(&sr, args, sizeof sr);
		ch->ops->drop_segment(ch, sr.token);
	}
	respond(&c, status, rsp, rsp_len);

	/* One clock read per call: it closes both the service time (since the
	 * poller took the request) and, ungated, the time spent issuing. */
	uint64_t dt = xgpu_fast_ns() - ch->pending_since_ns;
	xgpu_stat_add(&dom->stats->calls, 1);
	xgpu_stat_add(&ch->calls, 1);
	if (status && status != cudaErrorNotReady)
		xgpu_stat_add(&dom->stats->errors, 1);
	/* Without gating nobody holds a slot; the time spent issuing work is
	 * the domain's share of the GPU (requests never wait for a slot then,
	 * so service time is issuing time). */
	if (!(xgpu_slot_flags(dom) & XGPU_SLOT_GATES) && !(desc->flags & XF_EXEMPT))
		xgpu_slot_count(&dom->slot.report->ungated_ns, dt);
	xgpu_stats_record_latency(dom->stats, dt);
}
