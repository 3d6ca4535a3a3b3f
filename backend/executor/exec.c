/* SPDX-License-Identifier: Apache-2.0 */
/* exec.c - the domain's device state: its CUDA context (isolation by the
 * GPU's MMU, and by the process: this executor serves one domain), pinned
 * staging buffers for copies through the data areas, and measured device
 * busy time.
 *
 * Busy time comes from timing events recorded around each kernel and copy on
 * its stream, harvested without blocking as they complete: the same code
 * measures a real GPU and the simulated one.
 */
#include "cuerr.h"
#include "log.h"
#include "util.h"
#include "exec.h"

#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>

#define STAGING_BYTES (1u << 20)
/* Device work measured at once. When all are in flight the next launch waits
 * for the oldest to complete, so fewer than a GPU's own launch queue (about
 * 1024 entries) makes launches block where CUDA's would not: with 256, a
 * program queueing 1000 empty kernels waited on every launch past the 256th
 * (xgpu-bench-api's launch mean 16-28 us against a p50 of 1.5-2 us). */
#define BUSY_MARKS 1024u

/* Errors after which the driver refuses every further call on the context:
 * a kernel's failure, and two that break the context without one (an
 * uncorrectable memory error, a context already torn down). */
static bool sticky(CUresult r)
{
	return xgpu_cuerr_is_launch_failure(r) || r == CUDA_ERROR_ECC_UNCORRECTABLE ||
	       r == CUDA_ERROR_CONTEXT_IS_DESTROYED;
}

int xgpu_exec_check(struct xgpu_domain *dom, CUresult r, const char *what)
{
	if (r == CUDA_SUCCESS)
		return cudaSuccess;
	int err = xgpu_cuerr_to_rt(r);
	if (sticky(r) && !dom->sticky_error) {
		dom->sticky_error = err;
		atomic_store(&dom->x->status->sticky_error, err);
		/* On NVIDIA's driver such an error is the whole process's: no
		 * context of it works again, and no new one can be made (an
		 * H100, docs/results/gpu-validation-2026-11-26-h100). This
		 * process serves only this domain, so the domain alone loses
		 * it: the poller answers this call, tells xgpud and exits, and
		 * the domain's next process gets a new executor. */
		snprintf(dom->fault_what, sizeof dom->fault_what, "%s in %s", xgpu_driver_error_name(&dom->x->drv, r),
			 what);
		dlog_warn(dom, "domain %s: its device context failed with %s; this executor ends once it has "
			       "answered",
			  dom->name, dom->fault_what);
	}
	return err;
}

int xgpu_exec_context(struct xgpu_domain *dom)
{
	struct xgpu_driver *drv = &dom->x->drv;
	if (dom->ctx || dom->sticky_error)
		return dom->sticky_error;
	CUcontext ctx;
	CUresult r = drv->cuCtxCreate(&ctx, NULL, 0, dom->gpu->dev);
	if (r != CUDA_SUCCESS) {
		xlog_err("domain %s: cannot create a context on GPU %d: %s", dom->name, dom->gpu->index,
			 xgpu_driver_error_name(drv, r));
		return xgpu_exec_check(dom, r, "cuCtxCreate");
	}
	/* The poller is the only thread that uses this context, so it stays
	 * current for the poller's lifetime. */
	drv->cuCtxSetCurrent(ctx);
	struct xgpu_busy_mark *marks = calloc(BUSY_MARKS, sizeof *marks);
	pthread_mutex_lock(&dom->marks_lock);
	dom->ctx = ctx;
	dom->marks = marks;
	dom->marks_cap = marks ? BUSY_MARKS : 0;
	dom->marks_head = dom->marks_count = 0;
	dom->marks_done = 0;
	pthread_mutex_unlock(&dom->marks_lock);
	dom->staging_size = STAGING_BYTES;
	dom->nstaging = dom->staging_next = 0;
	if (!marks) {
		xgpu_exec_release(dom);
		return cudaErrorMemoryAllocation;
	}
	dlog_info(dom, "domain %s: context created on GPU %d (%s)", dom->name, dom->gpu->index,
		  dom->gpu->name);
	return cudaSuccess;
}

void xgpu_exec_release(struct xgpu_domain *dom)
{
	struct xgpu_driver *drv = &dom->x->drv;
	if (!dom->ctx)
		return;
	xgpu_exec_busy_harvest(dom, true);
	pthread_mutex_lock(&dom->marks_lock);
	struct xgpu_busy_mark *marks = dom->marks;
	uint32_t cap = dom->marks_cap;
	dom->marks = NULL;
	dom->marks_cap = dom->marks_count = dom->marks_head = 0;
	pthread_mutex_unlock(&dom->marks_lock);
	for (uint32_t i = 0; marks && i < cap; i++) {
		if (marks[i].start)
			drv->cuEventDestroy(marks[i].start);
		if (marks[i].end)
			drv->cuEventDestroy(marks[i].end);
	}
	free(marks);
	for (unsigned i = 0; i < dom->nstaging; i++) {
		drv->cuEventDestroy(dom->staging[i].done);
		drv->cuMemFreeHost(dom->staging[i].buf);
		dom->staging[i] = (struct xgpu_staging){NULL, NULL, false};
	}
	dom->nstaging = 0;
	for (unsigned i = 0; i < XGPU_RING_DMA_MAX; i++)
		if (dom->ring_dma_done[i]) {
			drv->cuEventDestroy(dom->ring_dma_done[i]);
			dom->ring_dma_done[i] = NULL;
		}
	/* Limits die with the context, and so does what they were charged. */
	for (unsigned i = 0; i < XGPU_ARRAY_SIZE(dom->limit_charge); i++) {
		atomic_fetch_sub(&dom->stats->mem_bytes, dom->limit_charge[i]);
		dom->limit_charge[i] = 0;
	}
	drv->cuCtxDestroy(dom->ctx);
	dom->ctx = NULL;
	drv->cuCtxSetCurrent(NULL);
	dlog_info(dom, "domain %s: context released", dom->name);
}

/* A buffer of the pool no queued copy uses and nobody holds, or -1. */
static int free_staging(struct xgpu_domain *dom)
{
	for (unsigned k = 0; k < dom->nstaging; k++) {
		unsigned i = (dom->staging_next + k) % dom->nstaging;
		if (!dom->staging[i].held && dom->x->drv.cuEventQuery(dom->staging[i].done) == CUDA_SUCCESS)
			return (int)i;
	}
	return -1;
}

/* Adds a buffer to the pool; its index, or -1. */
static int grow_staging(struct xgpu_domain *dom)
{
	struct xgpu_driver *drv = &dom->x->drv;
	if (dom->nstaging == XGPU_STAGING_MAX)
		return -1;
	struct xgpu_staging *st = &dom->staging[dom->nstaging];
	if (drv->cuMemAllocHost(&st->buf, dom->staging_size) != CUDA_SUCCESS)
		return -1;
	if (drv->cuEventCreate(&st->done, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS) {
		drv->cuMemFreeHost(st->buf);
		st->buf = NULL;
		return -1;
	}
	return (int)dom->nstaging++;
}

int xgpu_exec_staging_get(struct xgpu_domain *dom, unsigned *idx)
{
	int i = free_staging(dom);
	/* All busy (copies queued behind other work): another buffer, so a
	 * copy on one stream does not wait for a different stream's kernels. */
	if (i < 0)
		i = grow_staging(dom);
	/* The pool is full: wait for the oldest buffer nobody holds. */
	for (unsigned k = 0; i < 0 && k < dom->nstaging; k++) {
		unsigned j = (dom->staging_next + k) % dom->nstaging;
		if (dom->staging[j].held)
			continue;
		CUresult r = dom->x->drv.cuEventSynchronize(dom->staging[j].done);
		if (r != CUDA_SUCCESS)
			return xgpu_exec_check(dom, r, "staging");
		i = (int)j;
	}
	if (i < 0)
		return cudaErrorMemoryAllocation;
	dom->staging[i].held = true;
	dom->staging_next = ((unsigned)i + 1) % dom->nstaging;
	*idx = (unsigned)i;
	return cudaSuccess;
}

int xgpu_exec_staging_put(struct xgpu_domain *dom, unsigned idx, CUstream s, bool queued)
{
	dom->staging[idx].held = false;
	if (!queued)
		return cudaSuccess;
	return xgpu_exec_check(dom, dom->x->drv.cuEventRecord(dom->staging[idx].done, s), "staging");
}

void xgpu_exec_busy_begin(struct xgpu_domain *dom, CUstream s, struct xgpu_busy_mark **mark)
{
	struct xgpu_driver *drv = &dom->x->drv;
	*mark = NULL;
	if (!dom->marks)
		return;
	/* Only this thread writes it: a plain store, no locked add. */
	uint64_t issuing = atomic_load_explicit(&dom->issuing, memory_order_relaxed);
	atomic_store_explicit(&dom->issuing, issuing | 1, memory_order_relaxed);
	if (dom->marks_count == dom->marks_cap)
		xgpu_exec_busy_harvest(dom, false);
	if (dom->marks_count == dom->marks_cap) {
		/* Too many measurements in flight: wait for the oldest rather
		 * than drop one. */
		struct xgpu_busy_mark *oldest = &dom->marks[dom->marks_head];
		drv->cuEventSynchronize(oldest->end);
		xgpu_exec_busy_harvest(dom, false);
		if (dom->marks_count == dom->marks_cap)
			return;
	}
	struct xgpu_busy_mark *m = &dom->marks[(dom->marks_head + dom->marks_count) % dom->marks_cap];
	if (!m->start && drv->cuEventCreate(&m->start, CU_EVENT_DEFAULT) != CUDA_SUCCESS)
		return;
	if (!m->end && drv->cuEventCreate(&m->end, CU_EVENT_DEFAULT) != CUDA_SUCCESS)
		return;
	if (drv->cuEventRecord(m->start, s) != CUDA_SUCCESS)
		return;
	m->task = dom->serving;
	*mark = m;
}

void xgpu_exec_busy_end(struct xgpu_domain *dom, CUstream s, struct xgpu_busy_mark *mark)
{
	uint64_t issuing = atomic_load_explicit(&dom->issuing, memory_order_relaxed);
	if (issuing & 1)
		atomic_store_explicit(&dom->issuing, issuing + 1, memory_order_relaxed);
	if (!mark)
		return;
	if (dom->x->drv.cuEventRecord(mark->end, s) == CUDA_SUCCESS) {
		pthread_mutex_lock(&dom->marks_lock);
		dom->marks_count++;
		pthread_mutex_unlock(&dom->marks_lock);
		xgpu_slot_set_inflight(dom->slot.report, true);
	}
}

/* Measured busy time goes to the scheduler (wfq's charge) in one batch per
 * pass, and to the task that issued the work (its share inside the domain). */
void xgpu_exec_busy_harvest(struct xgpu_domain *dom, bool wait_all)
{
	struct xgpu_driver *drv = &dom->x->drv;
	uint64_t total = 0;
	while (dom->marks_count) {
		struct xgpu_busy_mark *m = &dom->marks[dom->marks_head];
		/* Only this thread takes marks off, so m stays the head while
		 * it waits without the lock. */
		CUresult r = wait_all ? drv->cuEventSynchronize(m->end) : drv->cuEventQuery(m->end);
		if (r == CUDA_ERROR_NOT_READY)
			break;
		float ms = 0;
		if (r == CUDA_SUCCESS && drv->cuEventElapsedTime(&ms, m->start, m->end) == CUDA_SUCCESS &&
		    ms > 0) {
			uint64_t ns = (uint64_t)((double)ms * 1e6);
			total += ns;
			if (m->task)
				xgpu_taskq_charge(m->task, ns);
		}
		pthread_mutex_lock(&dom->marks_lock);
		dom->marks_head = (dom->marks_head + 1) % dom->marks_cap;
		dom->marks_count--;
		dom->marks_done++;
		pthread_mutex_unlock(&dom->marks_lock);
	}
	if (total)
		xgpu_slot_charge(&dom->slot, total);
	if (!dom->marks_count && xgpu_slot_inflight(dom->slot.report)) {
		xgpu_slot_set_inflight(dom->slot.report, false);
		if (!xgpu_may_issue(dom))
			xgpu_slot_drained(&dom->slot);
	}
}

void xgpu_exec_take_ctl(struct xgpu_domain *dom)
{
	struct xgpu_executor *x = dom->x;
	const struct xgpu_exec_ctl *next = atomic_load_explicit(&x->next_ctl, memory_order_acquire);
	if (!next)
		return;
	atomic_store(&x->next_ctl, NULL);
	atomic_store_explicit(&x->ctl, next, memory_order_release);
	dom->slot.grant = &next->slot;
	dom->slot.idle_told = 0;
}
