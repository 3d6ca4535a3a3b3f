/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz_ptx.c - libFuzzer harness for the simulated driver's PTX interpreter
 * (backend/simdrv/ptx_parse.c, ptx_exec.c, ptx_ext.c and the rest): PTX text is guest input (a
 * fatbin's PTX entry, cuModuleLoadData's text). What decodes is run: every
 * kernel it can run, two blocks of 40 threads over one small allocation
 * that every pointer parameter points into, stopped after a few polls so
 * that loops end. Nothing may crash or read outside its buffers; a refusal
 * must say why. */
#include "simdrv/ptx.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define REGION_BASE 0x10000000ull

static bool resolve(void *arg, const char *name, uint64_t *addr)
{
	(void)arg;
	*addr = REGION_BASE + (strlen(name) % 8) * 64;
	return name[0] != 'x'; /* some names stay unresolved */
}

static CUresult stop_soon(void *arg)
{
	int *n = arg;
	return ++*n > 2 ? CUDA_ERROR_LAUNCH_TIMEOUT : CUDA_SUCCESS;
}

/* The first two pointer parameters also name a texture and a surface
 * object over the allocation's upper half (layered, so that every geometry
 * has something to read). */
static bool object(void *arg, uint64_t h, int surface, struct ptx_tex *out)
{
	(void)arg;
	if (h != REGION_BASE + (surface ? 64 : 0))
		return false;
	*out = (struct ptx_tex){.base = REGION_BASE + 1024,
				.pitch = 128,
				.slice = 512,
				.width = 8,
				.height = 4,
				.depth = 2,
				.format = surface ? 0x01 : 0x20,
				.channels = 4,
				.element_bytes = surface ? 4 : 16,
				.address_mode = {0, 2, 3},
				.linear_filter = !surface,
				.normalized = !surface,
				.layered = true};
	return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* A private copy of exactly size bytes, so ASan sees any read past it. */
	char *buf = malloc(size ? size : 1);
	if (!buf)
		return 0;
	memcpy(buf, data, size);
	struct ptx_module *m = NULL;
	char err[160];
	err[0] = 0;
	if (ptx_parse(buf, size, resolve, NULL, &m, err, sizeof err) < 0) {
		if (m || !err[0])
			abort();
		free(buf);
		return 0;
	}
	static uint8_t mem[4096];
	struct ptx_region region = {REGION_BASE, sizeof mem, mem};
	uint64_t params[8];
	for (int i = 0; i < 8; i++)
		params[i] = REGION_BASE + 64 * (uint64_t)i;
	for (uint32_t i = 0; i < m->nkernels; i++) {
		const struct ptx_kernel *k = &m->kernels[i];
		if (!k->name || (uint32_t)(ptx_find(m, k->name) - m->kernels) > i)
			abort();
		int polls = 0;
		struct ptx_launch l = {.grid = {2, 1, 1},
				       .block = {40, 1, 1},
				       .shared_dyn = 64,
				       .params = (const uint8_t *)params,
				       .param_bytes = sizeof params,
				       .mem = &region,
				       .nmem = 1,
				       .cancelled = stop_soon,
				       .object = object,
				       .arg = &polls};
		(void)ptx_run(k, &l);
	}
	ptx_free(m);
	free(buf);
	return 0;
}
