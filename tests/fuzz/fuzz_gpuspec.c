/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz_gpuspec.c - libFuzzer harness for the GPU spec parser
 * (common/gpuspec.c): the text of an xl `gpu = [ "..." ]` entry, which a
 * guest's toolstack writes into xenstore, and of xgpud.conf's domain entries.
 * The first byte picks the flags; the rest is the spec. A spec that parses
 * must format to a canonical text that parses back to the same spec. */
#include "gpuspec.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool same_spec(const struct xgpu_gpuspec *a, const struct xgpu_gpuspec *b)
{
	if (a->has_gpus != b->has_gpus || a->has_credit != b->has_credit || a->has_sla != b->has_sla ||
	    a->has_mem != b->has_mem || a->ntasks != b->ntasks || strcmp(a->name, b->name) != 0)
		return false;
	if ((a->has_gpus && a->gpus != b->gpus) || (a->has_credit && a->credit != b->credit) ||
	    (a->has_mem && a->mem != b->mem))
		return false;
	/* sla is printed with finite precision; tasks come back sorted by id. */
	for (unsigned i = 0; i < a->ntasks; i++) {
		bool found = false;
		for (unsigned j = 0; j < b->ntasks; j++)
			found |=
			    a->tasks[i].task == b->tasks[j].task && a->tasks[i].weight == b->tasks[j].weight;
		if (!found)
			return false;
	}
	return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	unsigned flags = data[0] & 1 ? XGPU_GPUSPEC_ALLOW_NAME : 0;
	char *text = malloc(size);
	if (!text)
		return 0;
	memcpy(text, data + 1, size - 1);
	text[size - 1] = '\0';

	struct xgpu_gpuspec spec, again;
	char err[256], canon[1024];
	if (xgpu_gpuspec_parse(text, flags, &spec, err, sizeof err) == 0) {
		int n = xgpu_gpuspec_format(&spec, canon, sizeof canon);
		if (n < 0 || (size_t)n >= sizeof canon)
			abort();
		if (xgpu_gpuspec_parse(canon, flags, &again, err, sizeof err) != 0 ||
		    !same_spec(&spec, &again))
			abort(); /* the canonical form must read back as the same spec */
	} else if (strnlen(err, sizeof err) == 0) {
		abort();
	}
	free(text);
	return 0;
}
