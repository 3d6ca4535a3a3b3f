/* SPDX-License-Identifier: Apache-2.0 */
/* md2.h - MD2 (RFC 1319) and HMAC over it (RFC 2104, 16-byte blocks): the
 * digest NVIDIA's runtime expects from the driver's integrity-check table
 * (exptab.c). Not for anything that needs a secure hash. */
#ifndef XGPU_DRV_MD2_H
#define XGPU_DRV_MD2_H

#include <stddef.h>
#include <stdint.h>

#define XGPU_MD2_BYTES 16

struct xgpu_md2 {
	uint8_t state[48];
	uint8_t checksum[16];
	uint8_t block[16];
	unsigned used;    /* bytes in block */
	uint8_t last_sum; /* the checksum byte last written (RFC 1319's L) */
};

void xgpu_md2_init(struct xgpu_md2 *h);
void xgpu_md2_update(struct xgpu_md2 *h, const void *data, size_t len);
void xgpu_md2_final(struct xgpu_md2 *h, uint8_t digest[XGPU_MD2_BYTES]);

/* HMAC-MD2 with a key of exactly one block. The message is given as parts
 * so callers need not assemble it. */
struct xgpu_md2_part {
	const void *data;
	size_t len;
};
void xgpu_hmac_md2(const uint8_t key[16], const struct xgpu_md2_part *parts, size_t nparts,
		   uint8_t digest[XGPU_MD2_BYTES]);

#endif
