/* SPDX-License-Identifier: Apache-2.0 */
/* allocs.h - the process's one registry of memory both API layers handed
 * out: device allocations (cudaMalloc, cuMemAlloc, pitched ones, module
 * globals whose address was asked for, memory-pool blocks), managed memory
 * (cudaMallocManaged, cuMemAllocManaged, __managed__ variables mapped at
 * their device address) and
 * page-locked host blocks (cudaHostAlloc, cuMemHostAlloc). It lives in our libcuda.so.1, which
 * exports it to our libcudart.so.13, so each layer answers pointer
 * attributes and infers copy directions (cudaMemcpyDefault, cuMemcpy) for
 * memory the other allocated, as unified addressing does in CUDA. */
#ifndef XGPU_FE_ALLOCS_H
#define XGPU_FE_ALLOCS_H

#include <stdbool.h>
#include <stdint.h>

/* Managed memory has one address for the host and the device; copies treat
 * it as device memory (managed.c keeps the two sides coherent). */
enum xgpu_alloc_kind { XGPU_ALLOC_DEVICE = 1, XGPU_ALLOC_HOST = 2, XGPU_ALLOC_MANAGED = 3 };

struct xgpu_alloc {
	uint64_t base, size;
	int kind;
	unsigned flags;               /* host blocks: the allocation's flags */
	unsigned long long buffer_id; /* never reused within the process */
	void *ctx;                    /* the driver context current at allocation */
};

/* Records [base, base + size) of kind, under the calling thread's current
 * driver context. A failure to record (out of memory) only loses the
 * inference for that block. */
void xgpu_alloc_add(uint64_t base, uint64_t size, int kind, unsigned flags);
/* Forgets the block of kind starting at base; false if there is none. */
bool xgpu_alloc_del(uint64_t base, int kind);
/* Replaces the flags of the block of kind starting at base (a managed
 * block's attachment, cuStreamAttachMemAsync); false if there is none. */
bool xgpu_alloc_set_flags(uint64_t base, int kind, unsigned flags);
/* cuStreamAttachMemAsync for both frontends (stream.c): checks that ptr
 * starts a managed block and length covers it, records the attachment;
 * stream is a wire handle. Returns a cudaError_t number. */
int xgpu_attach_mem(uint64_t stream, uint64_t ptr, uint64_t length, unsigned flags);
/* The block wholly containing [addr, addr + len) (len 0: addr itself). */
bool xgpu_alloc_find(uint64_t addr, uint64_t len, struct xgpu_alloc *out);
/* Forgets every device and managed block (cudaDeviceReset: the daemon freed
 * them). */
void xgpu_alloc_clear_device(void);

/* Whether addr lies in memory a copy reaches on the device: a device or a
 * managed allocation. */
static inline bool xgpu_alloc_on_device(uint64_t addr)
{
	struct xgpu_alloc a;
	return xgpu_alloc_find(addr, 0, &a) && (a.kind == XGPU_ALLOC_DEVICE || a.kind == XGPU_ALLOC_MANAGED);
}

/* Enters a __managed__ variable that frontend/channel/managed.c mapped at host as
 * managed memory, where one address serves both sides (elsewhere the host
 * copy is not the device's address), and once however often it is asked. */
static inline void xgpu_alloc_add_managed_var(uint64_t dev, const void *host, uint64_t size)
{
	if ((uintptr_t)host == dev && !xgpu_alloc_find(dev, 0, 0))
		xgpu_alloc_add(dev, size, XGPU_ALLOC_MANAGED, 0);
}

/* Whether addr lies in managed memory. */
static inline bool xgpu_alloc_is_managed(uint64_t addr)
{
	struct xgpu_alloc a;
	return xgpu_alloc_find(addr, 0, &a) && a.kind == XGPU_ALLOC_MANAGED;
}

#endif
