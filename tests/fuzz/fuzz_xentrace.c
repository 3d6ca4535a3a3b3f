/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz_xentrace.c - libFuzzer harness for the xentrace record parser
 * (backend/schedsrc/xentrace_parse.c): records decoded one by one and as a
 * run, a run fed to the per-PCPU state machine both as one PCPU's ring and
 * as xentrace's file output (CPU-change records switching PCPUs), and the
 * same bytes drained as a mapped struct t_buf whose cons/prod the input sets.
 * Xen writes these buffers; the daemon must survive any of them. */
#include "schedsrc/xentrace_parse.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 12 || size > (1u << 20))
		return 0;
	/* Header of the input: PCPU count, TSC frequency, ring indexes. */
	unsigned npcpu = 1 + data[0] % 8;
	uint8_t mode = data[1];
	uint32_t cpu_khz = mode & 1 ? 0 : 2000000u + data[2] * 1000u;
	uint32_t cons, prod;
	memcpy(&cons, data + 4, 4);
	memcpy(&prod, data + 8, 4);
	data += 12;
	size -= 12;

	uint8_t *buf = malloc(size ? size : 1);
	if (!buf)
		return 0;
	memcpy(buf, data, size);

	struct xt_rec recs[64];
	size_t used = 0;
	enum xt_status how;
	size_t n = xt_decode_all(buf, size, recs, 64, &used, &how);
	if (used > size || n > 64)
		abort();

	struct xt_state st;
	if (xt_state_init(&st, npcpu, cpu_khz) == 0) {
		for (size_t i = 0; i < n; i++)
			xt_state_feed(&st, (unsigned)(i % (npcpu + 1)), &recs[i]); /* one PCPU beyond range */
		size_t took = xt_feed_bytes(&st, 0, buf, size, false, &how);
		took += xt_feed_bytes(&st, npcpu - 1, buf, size, true, &how);
		if (took > 2 * size)
			abort();

		/* The same bytes as a PCPU's ring: t_buf, then data_size bytes
		 * (Xen's need not be a power of two). */
		uint32_t data_size = 4;
		if (mode & 2)
			data_size = size < 4 ? 4 : (uint32_t)(size + 3) / 4 * 4;
		else
			while (data_size < size && data_size < (1u << 20))
				data_size <<= 1;
		struct t_buf *tb = calloc(1, sizeof *tb + data_size);
		uint8_t *scratch = malloc(data_size);
		if (tb && scratch) {
			memcpy((uint8_t *)(tb + 1), buf, size < data_size ? size : data_size);
			tb->cons = cons;
			tb->prod = prod;
			(void)xt_ring_drain(&st, 0, tb, data_size, scratch);
			(void)xt_ring_drain(&st, npcpu, tb, data_size, scratch);
		}
		free(tb);
		free(scratch);
		xt_state_free(&st);
	}
	free(buf);
	return 0;
}
