/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz_shm.c - libFuzzer harness for the channel region a guest lays out
 * (common/shm.c: the region header's validation at attach) and for the queue
 * indexes it keeps writing afterwards (common/queue.c), used as the poller
 * and the dispatcher use them.
 *
 * Input: the first 4096 bytes are the region's header page (what the guest
 * wrote, indexes included); the region is allocated at the size the header
 * claims when that is at most 4 MiB (else at the input's size, which the
 * header then contradicts); the rest of the input is a script of index
 * writes a guest makes between the daemon's steps. */
#include "proto.h"
#include "queue.h"
#include "shm.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define REGION_CAP (4u << 20)

static void step(struct xgpu_shm_view *v, uint8_t op)
{
	uint8_t buf[512];
	bool kick;
	switch (op % 8) {
	case 0: { /* the poller: take a request if its slot is sealed */
		int64_t n = xgpu_q_avail(&v->req);
		if (n > 0 && xgpu_slot_ready(&v->req)) {
			memcpy(buf, xgpu_q_unit(&v->req, v->req.idx), XGPU_SLOT_SIZE);
			xgpu_q_release(&v->req, 1);
		}
		break;
	}
	case 1: /* the dispatcher: request bulk */
		(void)xgpu_stream_read(&v->tx, buf, 1 + op % sizeof buf, &kick);
		break;
	case 2: { /* response bulk */
		memset(buf, op, sizeof buf);
		(void)xgpu_stream_write(&v->rx, buf, 1 + op % sizeof buf, &kick);
		break;
	}
	case 3: /* a response, into its request's slot, its kick checked later */
		if (xgpu_q_space_for(&v->rsp, 1) > 0) {
			memset(xgpu_q_unit(&v->rsp, v->rsp.idx), 0, XGPU_SLOT_SIZE);
			xgpu_slot_seal(&v->rsp);
			xgpu_q_publish_deferred(&v->rsp, 1);
		}
		break;
	case 4: /* going to sleep */
		xgpu_q_arm_data(&v->req);
		xgpu_q_arm_data(&v->tx);
		break;
	case 5:
		xgpu_q_arm_space(&v->rx, 1 + op);
		xgpu_q_arm_space(&v->rsp, 1);
		break;
	case 6: {
		const void *p;
		int64_t n = xgpu_stream_peek(&v->tx, &p, 4096);
		if (n > 0)
			memcpy(buf, p, n < (int64_t)sizeof buf ? (size_t)n : sizeof buf);
		break;
	}
	default:
		(void)xgpu_q_space(&v->rx);
		(void)xgpu_q_kick_due(&v->rsp);
		break;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < sizeof(struct xgpu_shm_header))
		return 0;
	struct xgpu_shm_header h;
	memcpy(&h, data, sizeof h);
	size_t head = size < XGPU_SHM_HEADER_SIZE ? size : XGPU_SHM_HEADER_SIZE;
	size_t region_size = h.region_size >= XGPU_SHM_HEADER_SIZE && h.region_size <= REGION_CAP
				 ? (size_t)h.region_size
				 : XGPU_SHM_HEADER_SIZE + size;
	uint8_t *region = aligned_alloc(4096, (region_size + 4095) / 4096 * 4096);
	if (!region)
		return 0;
	memset(region, 0, region_size);
	memcpy(region, data, head);

	struct xgpu_shm_view v;
	char err[256];
	if (xgpu_shm_attach(region, region_size, &v, err, sizeof err) == 0) {
		struct xgpu_shm_header *shared = (struct xgpu_shm_header *)region;
		/* Script: op byte, then for odd ops a new index the guest writes. */
		for (size_t i = head; i < size; i++) {
			uint8_t op = data[i];
			if ((op & 0x80) && i + 4 < size) {
				uint32_t val;
				memcpy(&val, data + i + 1, 4);
				_Atomic uint32_t *idx[8] = {&shared->req.prod,       &shared->rsp.cons,
							    &shared->tx.prod,        &shared->rx.cons,
							    &shared->req.cons_event, &shared->rsp.prod_event,
							    &shared->tx.cons_event,  &shared->rx.prod_event};
				atomic_store(idx[op & 7], val);
				i += 4;
			} else {
				step(&v, op);
			}
		}
	} else if (strnlen(err, sizeof err) == 0) {
		abort();
	}
	free(region);
	return 0;
}
