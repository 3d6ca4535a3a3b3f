/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz_remote.c - libFuzzer harness for remote channels' framing
 * (common/remote.c): what arrives from the network, checked and applied to
 * a relay's region, interleaved with what the relay's local peer does to the
 * same region (consume, produce, or write a hostile index), after each of
 * which the relay collects what it would send.
 *
 * Input: one byte for the end (even: the guest's, odd: the GPU host's), then
 * a script of one-byte operations:
 *   op % 4 == 0: a frame follows: a 16-byte header, then its payload (as
 *                many bytes as the header says, when it passes the check;
 *                zeros where the input ends first); with op/4 odd, the local
 *                consumer of the inbound bulk queue takes bulk bytes straight
 *                into a buffer of (op/8) * 64 bytes (struct xgpu_rdirect),
 *                as a remote guest's client does, and releases them;
 *   op % 4 == 1: the local consumer of an inbound queue reads up to op/4 units;
 *   op % 4 == 2: the local producer of an outbound queue publishes op/4 units;
 *   op % 4 == 3: the local peer writes the next 4 input bytes into one of the
 *                region's shared indexes (op/4 picks which).
 * The relay must stay inside its region whatever arrives, and stop at the
 * first frame it refuses. */
#include "proto.h"
#include "remote.h"
#include "shm.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The network's bytes from the input: a frame's header must be there
 * whole; payloads beyond libFuzzer's input sizes are what the input has,
 * then zeros. */
struct feed {
	const uint8_t *data;
	size_t size, i;
	bool at_header;
};

static int feed_read(void *ctx, void *buf, size_t len, char *err, size_t errlen)
{
	struct feed *f = ctx;
	size_t have = f->size - f->i < len ? f->size - f->i : len;
	if (f->at_header && have < len) {
		snprintf(err, errlen, "end of input");
		return -1;
	}
	f->at_header = false;
	memcpy(buf, f->data + f->i, have);
	memset((uint8_t *)buf + have, 0, len - have);
	f->i += have;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static unsigned kicks;

static void count_kick(void *arg)
{
	(void)arg;
	kicks++;
}

static void collect(struct xgpu_relay *r, uint8_t *out, size_t cap, size_t region_size)
{
	char err[256];
	bool more;
	struct iovec iov[XGPU_REMOTE_TURN_IOV];
	size_t total;
	do {
		int n = xgpu_remote_collect(r, out, cap, XGPU_REMOTE_TURN_BULK, iov, XGPU_REMOTE_TURN_IOV,
					    &total, &more, err, sizeof err);
		if (n < 0)
			return;
		/* Every piece lies in the region or in out, and adds up. */
		size_t sum = 0;
		for (int k = 0; k < n; k++) {
			const uint8_t *b = iov[k].iov_base;
			if (!((b >= out && b + iov[k].iov_len <= out + cap) ||
			      (b >= (const uint8_t *)r->hdr &&
			       b + iov[k].iov_len <= (const uint8_t *)r->hdr + region_size)))
				abort();
			sum += iov[k].iov_len;
		}
		if (sum != total)
			abort();
	} while (more);
	xgpu_remote_arm(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	static uint8_t *region, *payload, *out;
	static size_t region_size;
	const struct xgpu_shm_params p = {.nr_slots = 8, .data_size = XGPU_SHM_MIN_DATA};
	const size_t out_cap = 8192; /* small, so that collecting takes several rounds */
	if (!region) {
		region_size = xgpu_shm_region_size(&p);
		region = aligned_alloc(4096, region_size);
		payload = malloc(XGPU_REMOTE_MAX_PAYLOAD);
		out = malloc(out_cap);
	}
	memset(region, 0, region_size);
	xgpu_shm_init(region, region_size, &p);
	struct xgpu_relay r;
	char err[256];
	bool guest = !(data[0] & 1);
	if (xgpu_relay_init(&r, guest, region, region_size, err, sizeof err) < 0)
		abort(); /* our own layout */
	r.kick = count_kick;
	r.kick_arg = NULL;
	/* The local peer's own view, as the client or executor keeps it. */
	struct xgpu_shm_view v;
	xgpu_shm_view_frontend(region, &v);
	struct xgpu_qend *in[2], *outq[2];
	if (guest) {
		in[0] = &v.rsp, in[1] = &v.rx, outq[0] = &v.req, outq[1] = &v.tx;
	} else {
		in[0] = &v.req, in[1] = &v.tx, outq[0] = &v.rsp, outq[1] = &v.rx;
	}
	bool honest = true; /* the local peer wrote no index of its own */
	size_t i = 1;
	while (i < size) {
		uint8_t op = data[i++];
		unsigned n = op >> 2;
		if (op % 4 == 0) {
			/* One frame through the receive path the relays use, its
			 * bulk bytes straight into the ring. */
			struct feed f = {data, size, i, true};
			int32_t end;
			static uint8_t dst[32 * 64];
			struct xgpu_qend *bulk_in = in[1];
			struct xgpu_rdirect d = {.queue = guest ? XGPU_RQ_RX : XGPU_RQ_TX,
						 .at = bulk_in->idx,
						 .dst = dst,
						 .len = (size_t)(op >> 3) * 64};
			bool direct = (op >> 2) & 1;
			int a = xgpu_remote_receive(&r, feed_read, &f, payload, direct ? &d : NULL, &end, err,
						    sizeof err);
			i = f.i;
			if (a != 0)
				break; /* refused, or the end */
			if (d.got > d.len)
				abort();
			/* What went straight to the buffer is released unread;
			 * the ring's producer index had to pass it first. */
			if (d.got) {
				if (honest && xgpu_q_avail(bulk_in) < (int64_t)d.got)
					abort();
				xgpu_q_release(bulk_in, (uint32_t)d.got);
			}
			/* However the network lies, an honest local consumer's
			 * queue never holds more than it can. */
			for (unsigned k = 0; k < XGPU_RQ_COUNT && honest; k++) {
				const struct xgpu_rqueue *q = &r.qs[k];
				if (!q->outbound &&
				    (uint32_t)(atomic_load(&q->prod) - atomic_load(&q->q->cons)) > q->size)
					abort();
			}
		} else if (op % 4 == 1) {
			struct xgpu_qend *c = in[n & 1];
			int64_t avail = xgpu_q_avail(c);
			if (avail > 0) {
				uint32_t k = (uint32_t)avail < n / 2 + 1 ? (uint32_t)avail : n / 2 + 1;
				xgpu_q_release(c, k);
			}
		} else if (op % 4 == 2) {
			struct xgpu_qend *pq = outq[n & 1];
			int64_t space = xgpu_q_space(pq);
			uint32_t k = n / 2 + 1;
			if (pq->unit == 1)
				k *= 997; /* bulk: enough to wrap and to split frames */
			if (space > 0) {
				if ((int64_t)k > space)
					k = (uint32_t)space;
				for (uint32_t j = 0; j < k && pq->unit > 1; j++) {
					memset(xgpu_q_unit(pq, pq->idx), op, pq->unit);
					xgpu_slot_seal(pq);
					xgpu_q_publish(pq, 1);
				}
				if (pq->unit == 1)
					xgpu_q_publish(pq, k);
			}
			collect(&r, out, out_cap, region_size);
		} else {
			if (size - i < 4)
				break;
			uint32_t val;
			memcpy(&val, data + i, 4);
			i += 4;
			honest = false;
			struct xgpu_shm_header *hdr = (struct xgpu_shm_header *)region;
			struct xgpu_queue *qs[4] = {&hdr->req, &hdr->rsp, &hdr->tx, &hdr->rx};
			struct xgpu_queue *q = qs[n % 4];
			switch ((n / 4) % 4) {
			case 0:
				atomic_store(&q->prod, val);
				break;
			case 1:
				atomic_store(&q->cons, val);
				break;
			case 2:
				atomic_store(&q->prod_event, val);
				break;
			default:
				atomic_store(&q->cons_event, val);
				break;
			}
			collect(&r, out, out_cap, region_size);
		}
	}
	return 0;
}
