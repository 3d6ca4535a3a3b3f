/* exec.c - the executor's per-domain device state: one CUDA context per
 * domain (isolation by the GPU's MMU), pinned staging buffers for copies
 * through the data areas, and measured device busy time.
 *
 * Busy time comes from timing events recorded around each kernel and copy on
 * its stream, harvested without blocking as they complete: the same code
 * measures a real GPU and the simulated one.
 */
#include "cuerr.h"
#include "log.h"
#include "xgpud.h"

#include <cuda_runtime_api.h>
#include <stdlib.h>

#define STAGING_BYTES (1u << 20)
#define BUSY_MARKS 256u

/* Errors after which the driver refuses every further call on the context. */
static bool sticky(CUresult r)
{
	switch (r) {
	case CUDA_ERROR_ILLEGAL_ADDRESS:
	case CUDA_ERROR_LAUNCH_FAILED:
	case CUDA_ERROR_LAUNCH_TIMEOUT:
	case CUDA_ERROR_HARDWARE_STACK_ERROR:
	case CUDA_ERROR_ILLEGAL_INSTRUCTION:
	case CUDA_ERROR_MISALIGNED_ADDRESS:
	case CUDA_ERROR_INVALID_ADDRESS_SPACE:
	case CUDA_ERROR_INVALID_PC:
	case CUDA_ERROR_ECC_UNCORRECTABLE:
	case CUDA_ERROR_CONTEXT_IS_DESTROYED:
		return true;
	default:
		return false;
	}
}

int xgpu_exec_check(struct xgpu_domain *dom, CUresult r, const char *what)
{
	if (r == CUDA_SUCCESS)
		return cudaSuccess;
	int err = xgpu_cuerr_to_rt(r);
	if (sticky(r) && !dom->sticky_error) {
		dom->sticky_error = err;
		dlog_warn(dom,
			  "domain %s: device context is broken by %s in %s; its calls fail until all its "
			  "processes exit",
			  dom->name, xgpu_driver_error_name(&dom->d->drv, r), what);
	}
	return err;
}

int xgpu_exec_context(struct xgpu_domain *dom)
{
	struct xgpu_driver *drv = &dom->d->drv;
	if (dom->ctx)
		return dom->sticky_error;
	CUcontext ctx;
	CUresult r = drv->cuCtxCreate(&ctx, NULL, 0, dom->gpu->dev);
	if (r != CUDA_SUCCESS) {
		xlog_err("domain %s: cannot create a context on GPU %d: %s", dom->name, dom->gpu->index,
			 xgpu_driver_error_name(drv, r));
		return xgpu_cuerr_to_rt(r);
	}
	/* The poller is the only thread that uses this context, so it stays
	 * current for the poller's lifetime. */
	drv->cuCtxSetCurrent(ctx);
	dom->ctx = ctx;
	dom->sticky_error = 0;
	dom->staging_size = STAGING_BYTES;
	for (int i = 0; i < 2; i++) {
		if (drv->cuMemAllocHost(&dom->staging[i], dom->staging_size) != CUDA_SUCCESS ||
		    drv->cuEventCreate(&dom->staging_done[i], CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS) {
			xlog_err("domain %s: cannot allocate pinned staging buffers", dom->name);
			xgpu_exec_release(dom);
			return cudaErrorMemoryAllocation;
		}
	}
	dom->marks = calloc(BUSY_MARKS, sizeof *dom->marks);
	if (!dom->marks) {
		xgpu_exec_release(dom);
		return cudaErrorMemoryAllocation;
	}
	dom->marks_cap = BUSY_MARKS;
	dom->marks_head = dom->marks_count = 0;
	dlog_info(dom, "domain %s: context created on GPU %d (%s)", dom->name, dom->gpu->index,
		  dom->gpu->name);
	return cudaSuccess;
}

void xgpu_exec_release(struct xgpu_domain *dom)
{
	struct xgpu_driver *drv = &dom->d->drv;
	if (!dom->ctx)
		return;
	xgpu_exec_busy_harvest(dom, true);
	for (uint32_t i = 0; dom->marks && i < dom->marks_cap; i++) {
		if (dom->marks[i].start)
			drv->cuEventDestroy(dom->marks[i].start);
		if (dom->marks[i].end)
			drv->cuEventDestroy(dom->marks[i].end);
	}
	free(dom->marks);
	dom->marks = NULL;
	dom->marks_cap = dom->marks_count = dom->marks_head = 0;
	for (int i = 0; i < 2; i++) {
		if (dom->staging_done[i])
			drv->cuEventDestroy(dom->staging_done[i]);
		if (dom->staging[i])
			drv->cuMemFreeHost(dom->staging[i]);
		dom->staging_done[i] = NULL;
		dom->staging[i] = NULL;
	}
	drv->cuCtxDestroy(dom->ctx);
	drv->cuCtxSetCurrent(NULL);
	dom->ctx = NULL;
	dom->sticky_error = 0;
	dlog_info(dom, "domain %s: context released", dom->name);
}

void xgpu_exec_busy_begin(struct xgpu_domain *dom, CUstream s, struct xgpu_busy_mark **mark)
{
	struct xgpu_driver *drv = &dom->d->drv;
	*mark = NULL;
	if (!dom->marks)
		return;
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
	*mark = m;
}

void xgpu_exec_busy_end(struct xgpu_domain *dom, CUstream s, struct xgpu_busy_mark *mark)
{
	if (!mark)
		return;
	if (dom->d->drv.cuEventRecord(mark->end, s) == CUDA_SUCCESS)
		dom->marks_count++;
}

void xgpu_exec_busy_harvest(struct xgpu_domain *dom, bool wait_all)
{
	struct xgpu_driver *drv = &dom->d->drv;
	while (dom->marks_count) {
		struct xgpu_busy_mark *m = &dom->marks[dom->marks_head];
		CUresult r = wait_all ? drv->cuEventSynchronize(m->end) : drv->cuEventQuery(m->end);
		if (r == CUDA_ERROR_NOT_READY)
			return;
		float ms = 0;
		if (r == CUDA_SUCCESS && drv->cuEventElapsedTime(&ms, m->start, m->end) == CUDA_SUCCESS &&
		    ms > 0)
			atomic_fetch_add(&dom->stats.busy_ns, (uint64_t)((double)ms * 1e6));
		dom->marks_head = (dom->marks_head + 1) % dom->marks_cap;
		dom->marks_count--;
	}
}
