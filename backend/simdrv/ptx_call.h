/* SPDX-License-Identifier: Apache-2.0 */
/* ptx_call.h - the PTX interpreter's device-side library calls (ptx_call.c):
 * what nvcc's printf, assert and malloc become, with guest memory read
 * through a bounded reader. */
#ifndef XGPU_SIMDRV_PTX_CALL_H
#define XGPU_SIMDRV_PTX_CALL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ptx.h"

/* Reads n bytes of guest memory at a generic address; false on a fault
 * (which the reader has raised). */
typedef bool (*ptx_read_fn)(void *ctx, uint64_t addr, void *dst, uint32_t n);

/* Bounded output: what does not fit is dropped. */
struct ptx_out {
	char *buf;
	size_t len, cap;
};

/* vprintf(fmt, args): appends the formatted text to o; the count of
 * arguments it used, or -1 after a fault reading guest memory. */
int ptx_vprintf(struct ptx_out *o, uint64_t fmt, uint64_t args, ptx_read_fn rd, void *ctx)
    __attribute__((visibility("hidden")));

/* malloc: the heap address of size bytes (16-aligned), or 0 when they do
 * not fit; free: of an address malloc gave (anything else is ignored). */
uint64_t ptx_heap_malloc(struct ptx_heap *h, uint64_t size) __attribute__((visibility("hidden")));
void ptx_heap_release(struct ptx_heap *h, uint64_t addr) __attribute__((visibility("hidden")));
/* The host bytes of [addr, addr + n) in the heap, or NULL. */
uint8_t *ptx_heap_ptr(struct ptx_heap *h, uint64_t addr, uint32_t n) __attribute__((visibility("hidden")));

/* bmsk.{wrap,clamp}.b32 d, a, b: b bits set from bit a. */
uint32_t ptx_bmsk(uint32_t a, uint32_t b, bool clamp) __attribute__((visibility("hidden")));

#endif
