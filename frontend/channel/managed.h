/* SPDX-License-Identifier: Apache-2.0 */
/* managed.h - managed memory for both frontends: one address valid in the
 * guest process and on the device, kept coherent at launches and
 * synchronisation points (docs/design.md, "Managed memory"). Linked into
 * libcuda.so.1 with the channel client and exported to libcudart.so.13. */
#ifndef XGPU_FE_MANAGED_H
#define XGPU_FE_MANAGED_H

#include "client.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Allocates size bytes of managed memory (flags: CU_MEM_ATTACH_*) and maps the
 * guest's copy at the device address. Returns a cudaError_t. */
int xgpu_managed_alloc(struct xgpu_client *c, size_t size, unsigned flags, uint64_t *dptr);
/* A __managed__ variable at device address dptr: maps the guest's copy (at
 * dptr where it can), fills it with the variable's current value and sets
 * *host. Again for the same variable: the same *host. */
int xgpu_managed_map_var(struct xgpu_client *c, uint64_t dptr, size_t size, void **host);
/* The daemon released everything of this process (cuDevicePrimaryCtxReset):
 * every managed allocation and variable is unmapped, as CUDA frees them. */
void xgpu_managed_forget_all(void);
/* The module of the __managed__ variable mapped at host was unloaded: its
 * entry goes (a later synchronisation would copy back from freed memory),
 * with the pages no other variable shares. */
void xgpu_managed_unmap_var(uint64_t host);
/* If dptr starts a managed allocation: unmaps it, frees it in the daemon and
 * sets *status; returns false for any other pointer. */
bool xgpu_managed_free(struct xgpu_client *c, uint64_t dptr, int *status);
/* Whether [addr, addr + len) lies in one managed allocation; its base and
 * size if so (either may be NULL). */
bool xgpu_managed_find(uint64_t addr, size_t len, uint64_t *base, size_t *size);
/* cudaMemPrefetchAsync: to the device (to_host false) pushes the range's
 * host-written pages; to the host waits for the device and copies the
 * allocation back. A range outside managed memory is cudaErrorInvalidValue. */
int xgpu_managed_prefetch(struct xgpu_client *c, uint64_t addr, size_t len, bool to_host);
/* cudaMemAdvise: checks the range and remembers the last advice given. */
int xgpu_managed_advise(uint64_t addr, size_t len, int advice);

/* Called by xgpu_rpc around every exchange: before device work the guest's
 * writes go to the device; after a synchronisation point the device's
 * writes come back. No cost while the process has no managed memory. */
int xgpu_managed_before(struct xgpu_client *c, const struct xgpu_rpc *r);
void xgpu_managed_after(struct xgpu_client *c, const struct xgpu_rpc *r, int status);

#endif
