/* SPDX-License-Identifier: Apache-2.0 */
/* exec.h - the executor: a domain's CUDA context, staging buffers, busy
 * time, and the control page its slot grant is read from. */
#ifndef XGPU_EXEC_EXEC_H
#define XGPU_EXEC_EXEC_H

#include "executor.h"

#include <stdbool.h>

/* exec.c: the executor, a CUDA driver API client (poller thread). */
int xgpu_exec_context(struct xgpu_domain *dom); /* creates lazily; cudaError_t */
/* A pinned staging buffer that no queued copy uses and nobody holds,
 * growing the pool or waiting for the oldest use when all are busy;
 * cudaError_t. The buffer is held until put back. */
int xgpu_exec_staging_get(struct xgpu_domain *dom, unsigned *idx);
/* Puts buffer idx back; if s is not NULL, a copy just queued on s still uses
 * it until that copy completes. */
int xgpu_exec_staging_put(struct xgpu_domain *dom, unsigned idx, CUstream s, bool queued);
void xgpu_exec_release(struct xgpu_domain *dom); /* destroys the context and staging */
int xgpu_exec_check(struct xgpu_domain *dom, CUresult r, const char *what); /* maps, records stickiness */
void xgpu_exec_busy_begin(struct xgpu_domain *dom, CUstream s, struct xgpu_busy_mark **mark);
void xgpu_exec_busy_end(struct xgpu_domain *dom, CUstream s, struct xgpu_busy_mark *mark);
void xgpu_exec_busy_harvest(struct xgpu_domain *dom, bool wait_all);
/* Switches to a restarted xgpud's control page, if the link thread left one
 * in next_ctl: its grant is the one that counts from then on. Wherever the
 * poller waits for the slot, inside a call too, it must look: the old page
 * is nobody's any more, and its grant stays as the old xgpud left it. */
void xgpu_exec_take_ctl(struct xgpu_domain *dom);

#endif
