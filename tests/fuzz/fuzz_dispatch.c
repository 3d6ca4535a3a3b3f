/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz_dispatch.c - libFuzzer harness for the request decoder and dispatcher
 * (backend/executor/dispatch.c) over the simulated driver: a real struct xgpud
 * (sim executor, scheduler thread and all), one domain, and one channel whose
 * region lives in this process. Each input is a sequence of requests with
 * their bulk data, run in order on the same channel, so handles made by one
 * call (modules, functions, streams, events, segments, device pointers) are
 * used, freed and reused by later ones.
 *
 * The daemon, domain and channel are fzchan.c's.
 *
 * Input: records of
 *   u8 call, u8 mode, u16 unused, u32 bulk bytes (le), 96 argument bytes, bulk
 * mode bits: 0x01 the call id as is (not modulo the call count), 0x02 a wrong
 * argument length, 0x04 announce more bulk than is sent, 0x08 announce more
 * than the call may take, 0x10 leave the response's bulk data unread.
 * An 8-byte word of the arguments or the bulk (at a multiple of 8)
 * 0xF0F0F0F0F0F0F0NN becomes the NNth newest value (modulo how many) that
 * earlier responses returned, so handles and device pointers
 * the daemon chose are reachable though they vary from run to run.
 *
 * After each request, unless the daemon closed the channel, exactly one
 * response must be posted, for that request, with exactly the bulk bytes it
 * announces in the rx area. At the end of an input the channel's objects are
 * released as when a guest process exits, so nothing carries to the next. */
#include "fzchan.h"
#include "proto.h"
#include "queue.h"
#include "util.h"
#include "dispatch.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define RECORD_HEAD 8u
#define ARGS_BYTES ((size_t)XGPU_SLOT_ARGS)
#define DATA_SIZE FZ_DATA_SIZE
#define SEEN_MAX 32u
#define HANDLE_MARK 0xF0F0F0F0F0F0F000ull

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	fz_daemon_init("fuzz_dispatch");
	return 0;
}

/* ---- one input ------------------------------------------------------------- */

struct seen {
	uint64_t v[SEEN_MAX];
	unsigned n, next;
};

static void remember(struct seen *s, const uint8_t *payload, uint32_t len)
{
	for (uint32_t off = 0; off + 8 <= len; off += 8) {
		uint64_t v;
		memcpy(&v, payload + off, 8);
		if (!v)
			continue;
		s->v[s->next] = v;
		s->next = (s->next + 1) % SEEN_MAX;
		if (s->n < SEEN_MAX)
			s->n++;
	}
}

/* Mark NN names the NNth newest value remembered (0: the newest). */
static void substitute(const struct seen *s, uint8_t *p, size_t len)
{
	for (size_t off = 0; off + 8 <= len; off += 8) {
		uint64_t v;
		memcpy(&v, p + off, 8);
		if ((v & ~0xffull) == HANDLE_MARK && s->n) {
			v = s->v[(s->next + SEEN_MAX - 1 - (v & 0xff) % s->n) % SEEN_MAX];
			memcpy(p + off, &v, 8);
		}
	}
}

/* The guest's side of one request: bulk into tx, then the response and its
 * bulk out of rsp and rx. Returns false once the channel is closed. */
static bool one_request(struct xgpu_channel *ch, struct xgpu_shm_view *fv, struct seen *seen,
			uint64_t *rx_unread, uint64_t seq, const uint8_t *rec, const uint8_t *bulk,
			uint32_t bulk_len)
{
	uint8_t mode = rec[1];
	uint32_t call = (mode & 0x01) ? rec[0] : rec[0] % XGPU_CALL_COUNT;
	const struct xgpu_call_desc *desc = call < XGPU_CALL_COUNT ? &xgpu_calls[call] : NULL;
	struct xgpu_req_hdr h = {
	    .tag = 0, .call = call, .len = desc ? desc->req_len : 0, .seq = seq, .bulk_len = bulk_len};
	if (mode & 0x02)
		h.len ^= 1;
	if (mode & 0x04)
		h.bulk_len += 1 + rec[2];
	if ((mode & 0x08) && desc && desc->bulk_out_max != UINT64_MAX)
		h.bulk_len = desc->bulk_out_max + 1;

	uint8_t slot[XGPU_SLOT_SIZE];
	memcpy(slot, &h, sizeof h);
	memcpy(slot + sizeof h, rec + RECORD_HEAD, ARGS_BYTES);
	substitute(seen, slot + sizeof h, ARGS_BYTES);

	bool kick;
	/* Kernel parameters (and any bulk) may name device pointers too. */
	static uint8_t bulk_copy[DATA_SIZE];
	memcpy(bulk_copy, bulk, bulk_len);
	substitute(seen, bulk_copy, bulk_len);
	if (bulk_len && xgpu_stream_write(&fv->tx, bulk_copy, bulk_len, &kick) < 0)
		abort(); /* the daemon's consumer index must stay sane */
	ch->pending_since_ns = xgpu_now_ns();
	xgpu_dispatch(ch, slot);

	int64_t n = xgpu_q_avail(&fv->rsp);
	if (n < 0 || n > 1)
		abort(); /* one request, at most one response */
	if (n == 0) {
		if (!ch->dead)
			abort(); /* no answer on a channel still open */
		return false;
	}
	struct xgpu_rsp_hdr r;
	const uint8_t *rs = xgpu_q_unit(&fv->rsp, fv->rsp.idx);
	memcpy(&r, rs, sizeof r);
	if (r.seq != seq || r.call != call || r.len > XGPU_SLOT_SIZE - sizeof r)
		abort();
	if (r.status == 0)
		remember(seen, rs + sizeof r, r.len);
	xgpu_q_release(&fv->rsp, 1);
	/* Exactly the announced bulk (with what earlier responses left
	 * unread) must be in rx. */
	*rx_unread += r.bulk_len;
	if (*rx_unread > DATA_SIZE)
		abort();
	if (!(mode & 0x10)) {
		static uint8_t sink[DATA_SIZE];
		if (xgpu_stream_read(&fv->rx, sink, *rx_unread, &kick) != (int64_t)*rx_unread ||
		    xgpu_q_avail(&fv->rx) != 0)
			abort();
		*rx_unread = 0;
	}
	/* What the daemon left unread of this request's bulk it must have
	 * skipped: the tx area is empty again. */
	if (!ch->dead && xgpu_q_avail(&fv->tx) != 0)
		abort();
	return !ch->dead;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz_chan c;
	fz_chan_open(&c);
	struct xgpu_channel *ch = &c.ch;
	struct xgpu_shm_view *fv = &c.fv;

	struct seen seen = {0};
	uint64_t seq = 1, rx_unread = 0;
	size_t off = 0;
	while (size - off >= RECORD_HEAD + ARGS_BYTES) {
		const uint8_t *rec = data + off;
		uint32_t bulk_len;
		memcpy(&bulk_len, rec + 4, 4);
		off += RECORD_HEAD + ARGS_BYTES;
		if (bulk_len > size - off)
			bulk_len = (uint32_t)(size - off);
		if (bulk_len > DATA_SIZE)
			bulk_len = DATA_SIZE;
		const uint8_t *bulk = data + off;
		off += bulk_len;
		if (!one_request(ch, fv, &seen, &rx_unread, seq++, rec, bulk, bulk_len))
			break;
	}
	fz_chan_close(&c);
	return 0;
}
