/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz_fatbin.c - libFuzzer harness for the fatbin parser (common/fatbin.c):
 * the container, its compressed (LZ4, zstd) entries, the ELF cubins and their
 * .nv.info KPARAM records, and the PTX fall-back, as a guest's MODULE_LOAD
 * hands them to the backend. What parses is read back in full (so ASan
 * checks every array it returned) and looked up by name, as the dispatcher
 * does; a refusal must say why. */
#include "fatbin.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* A private copy of exactly size bytes, so ASan sees any read past it. */
	uint8_t *buf = malloc(size ? size : 1);
	if (!buf)
		return 0;
	memcpy(buf, data, size);

	(void)xgpu_fatbin_size(buf, size);
	struct xgpu_fatbin_info info;
	char err[256];
	memset(&info, 0, sizeof info);
	if (xgpu_fatbin_parse(buf, size, &info, err, sizeof err) == 0) {
		volatile uint64_t sum = info.global_bytes;
		for (uint32_t k = 0; k < info.nkernels; k++) {
			const struct xgpu_kernel_info *ki = &info.kernels[k];
			if (!ki->name || ki->nparams > XGPU_FATBIN_MAX_PARAMS)
				abort();
			sum += (uintptr_t)xgpu_fatbin_find(&info, ki->name);
			for (uint32_t p = 0; p < ki->nparams; p++)
				sum += ki->params[p].offset + ki->params[p].size;
		}
		(void)sum;
		xgpu_fatbin_free(&info);
	} else if (strnlen(err, sizeof err) == 0) {
		abort(); /* a refusal always says why */
	}
	free(buf);
	return 0;
}
