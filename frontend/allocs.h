/* allocs.h - the process's one registry of memory both API layers handed
 * out: device allocations (cudaMalloc, cuMemAlloc, pitched ones, module
 * globals whose address was asked for) and page-locked host blocks
 * (cudaHostAlloc, cuMemHostAlloc). It lives in our libcuda.so.1, which
 * exports it to our libcudart.so.13, so each layer answers pointer
 * attributes and infers copy directions (cudaMemcpyDefault, cuMemcpy) for
 * memory the other allocated, as unified addressing does in CUDA. */
#ifndef XGPU_FE_ALLOCS_H
#define XGPU_FE_ALLOCS_H

#include <stdbool.h>
#include <stdint.h>

enum xgpu_alloc_kind { XGPU_ALLOC_DEVICE = 1, XGPU_ALLOC_HOST = 2 };

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
/* The block wholly containing [addr, addr + len) (len 0: addr itself). */
bool xgpu_alloc_find(uint64_t addr, uint64_t len, struct xgpu_alloc *out);
/* Forgets every device block (cudaDeviceReset: the daemon freed them). */
void xgpu_alloc_clear_device(void);

#endif
