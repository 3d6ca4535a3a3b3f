/* SPDX-License-Identifier: Apache-2.0 */
/* cuimage.h - the device-code images cuModuleLoadData and cuLibraryLoadData
 * accept (a fatbin container, nvcc's __fatBinC_Wrapper_t around one, a bare
 * ELF cubin, or PTX text), turned into the one form the wire carries: a whole
 * fatbin container. Those calls take no length, so an image's size is read
 * from its own headers, at most max bytes. */
#ifndef XGPU_CUIMAGE_H
#define XGPU_CUIMAGE_H

#include <stddef.h>
#include <stdint.h>

struct xgpu_cuimage {
	const uint8_t *fatbin; /* the container to send */
	size_t len;
	uint8_t *owned; /* set when fatbin was built around a cubin or PTX: free() it */
};

/* Returns 0, or -1 with a reason in err. */
int xgpu_cuimage_read(const void *image, size_t max, struct xgpu_cuimage *out, char *err, size_t errlen);

/* Entry kinds of a fatbin container. */
#define XGPU_CUIMAGE_ENTRY_PTX 1
#define XGPU_CUIMAGE_ENTRY_ELF 2

/* payload (len bytes) in a new one-entry fatbin container, so that the fatbin
 * parser reads every image form the same way; free() it. NULL when out of
 * memory. */
uint8_t *xgpu_cuimage_wrap(uint16_t kind, const void *payload, size_t len, uint32_t arch, uint16_t major,
			   uint16_t minor, size_t *outlen);

/* The size of the ELF image at d from its headers and section table, or 0 if
 * it is not a 64-bit little-endian ELF within max bytes. */
size_t xgpu_cuimage_elf_size(const uint8_t *d, size_t max);

#endif
