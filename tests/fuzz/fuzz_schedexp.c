/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz_schedexp.c - libFuzzer harness for the reader of the patched Xen's
 * schedule export (xen-sched-patch/reader.c): the input is the exported
 * pages, which the hypervisor writes and dom0 maps read-only. The header is
 * validated at open; then snapshots are taken (twice, so that stale copies
 * of records are kept and compared as the daemon does every tick). */
#include "reader.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > XGPU_SCHEDEXP_MAX_FRAMES * XGPU_SCHEDEXP_PAGE)
		return 0;
	/* The reader wants 8-byte alignment, as a mapping has. */
	uint64_t *pages = malloc(size ? (size + 7) / 8 * 8 : 8);
	if (!pages)
		return 0;
	memcpy(pages, data, size);

	char err[256];
	if (size >= sizeof(struct xgpu_schedexp_header))
		(void)xgpu_schedexp_check_header((const struct xgpu_schedexp_header *)pages,
						 (unsigned)(size / XGPU_SCHEDEXP_PAGE), err, sizeof err);
	struct xgpu_schedexp_reader *r = xgpu_schedexp_open_mem(pages, size, err, sizeof err);
	if (r) {
		static struct xgpu_schedexp_snapshot snap;
		memset(&snap, 0, sizeof snap);
		xgpu_schedexp_read(r, &snap);
		xgpu_schedexp_read(r, &snap);
		uint64_t torn, stale;
		xgpu_schedexp_counters(r, &torn, &stale);
		const struct xgpu_schedexp_header *h = xgpu_schedexp_header(r);
		if (h->npcpus > XGPU_SCHEDEXP_MAX_PCPUS || h->ndoms > XGPU_SCHEDEXP_MAX_DOMS)
			abort(); /* open validated these */
		xgpu_schedexp_close(r);
	} else if (strnlen(err, sizeof err) == 0) {
		abort();
	}
	free(pages);
	return 0;
}
