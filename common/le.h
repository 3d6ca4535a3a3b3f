/* SPDX-License-Identifier: Apache-2.0 */
/* le.h - little-endian loads and stores at any alignment, for the binary
 * formats xgpu reads and writes (fatbins, ELF cubins): one copy for the
 * fatbin parser, the image wrapper and the simulated driver. */
#ifndef XGPU_LE_H
#define XGPU_LE_H

#include <stdint.h>

static inline uint16_t xgpu_ld16(const uint8_t *p)
{
	return (uint16_t)(p[0] | (p[1] << 8));
}

static inline uint32_t xgpu_ld32(const uint8_t *p)
{
	return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

static inline uint64_t xgpu_ld64(const uint8_t *p)
{
	return (uint64_t)xgpu_ld32(p) | ((uint64_t)xgpu_ld32(p + 4) << 32);
}

static inline void xgpu_st16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static inline void xgpu_st32(uint8_t *p, uint32_t v)
{
	xgpu_st16(p, (uint16_t)v);
	xgpu_st16(p + 2, (uint16_t)(v >> 16));
}

static inline void xgpu_st64(uint8_t *p, uint64_t v)
{
	xgpu_st32(p, (uint32_t)v);
	xgpu_st32(p + 4, (uint32_t)(v >> 32));
}

#endif
