/* SPDX-License-Identifier: Apache-2.0 */
/* test_queue.c - the shared-memory queues and channel region layout: slot
 * and byte queues across index wrap-around, full and empty queues, corrupt
 * peer indexes, notify thresholds, a 1 GiB transfer through a 64 KiB data
 * area between two threads sleeping on eventfds, the uncached read of large
 * transfers against the plain one, and the region validation
 * the backend applies to a guest's header. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "proto.h"
#include "queue.h"
#include "shm.h"

#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

struct pair {
	struct xgpu_queue q;
	uint8_t *buf;
	struct xgpu_qend p, c;
};

static void pair_init(struct pair *pr, uint32_t size, uint32_t unit, uint32_t start)
{
	memset(&pr->q, 0, sizeof pr->q);
	pr->buf = calloc(size, unit);
	atomic_store(&pr->q.prod, start);
	atomic_store(&pr->q.cons, start);
	xgpu_qend_init(&pr->p, &pr->q, pr->buf, size, unit, start);
	xgpu_qend_init(&pr->c, &pr->q, pr->buf, size, unit, start);
}

static void slot_ring_wraps_around(void **state)
{
	struct pair pr;
	/* Start just below 2^32 so the free-running indexes wrap mid-test. */
	pair_init(&pr, 8, XGPU_SLOT_SIZE, UINT32_MAX - 20);
	for (uint32_t i = 0; i < 1000; i++) {
		uint32_t burst = 1 + i % 8;
		assert_true(xgpu_q_space(&pr.p) >= burst);
		for (uint32_t k = 0; k < burst; k++) {
			uint32_t v = i * 16 + k;
			memcpy(xgpu_q_unit(&pr.p, pr.p.idx + k), &v, sizeof v);
		}
		xgpu_q_publish(&pr.p, burst);
		assert_int_equal(xgpu_q_avail(&pr.c), burst);
		for (uint32_t k = 0; k < burst; k++) {
			uint32_t v;
			memcpy(&v, xgpu_q_unit(&pr.c, pr.c.idx), sizeof v);
			assert_int_equal(v, i * 16 + k);
			xgpu_q_release(&pr.c, 1);
		}
	}
	assert_true(pr.p.idx < 100000); /* it did wrap */
	free(pr.buf);
}

static void slot_tags_mark_complete_packets(void **state)
{
	struct pair pr;
	pair_init(&pr, 4, XGPU_SLOT_SIZE, UINT32_MAX - 1);
	/* A zeroed slot is never a packet. */
	assert_false(xgpu_slot_ready(&pr.c));
	for (int lap = 0; lap < 3; lap++) {
		for (int k = 0; k < 4; k++) {
			struct xgpu_req_hdr h = {.call = XGPU_CALL_NOP, .seq = (uint64_t)(lap * 4 + k)};
			memcpy(xgpu_q_unit(&pr.p, pr.p.idx), &h, sizeof h);
			/* Filled but not sealed: not there yet. */
			assert_false(xgpu_slot_ready(&pr.c) && pr.c.idx == pr.p.idx);
			xgpu_slot_seal(&pr.p);
			xgpu_q_publish(&pr.p, 1);
		}
		for (int k = 0; k < 4; k++) {
			assert_true(xgpu_slot_ready(&pr.c));
			struct xgpu_req_hdr h;
			memcpy(&h, xgpu_q_unit(&pr.c, pr.c.idx), sizeof h);
			assert_int_equal(h.seq, (uint64_t)(lap * 4 + k));
			xgpu_q_release(&pr.c, 1);
		}
		/* The slots now hold the last lap's tags, which do not match the
		 * next lap's indexes. */
		assert_false(xgpu_slot_ready(&pr.c));
	}
	free(pr.buf);
}

static void full_ring_has_no_space(void **state)
{
	struct pair pr;
	pair_init(&pr, 4, XGPU_SLOT_SIZE, 0);
	xgpu_q_publish(&pr.p, 4);
	assert_int_equal(xgpu_q_space(&pr.p), 0);
	assert_int_equal(xgpu_q_avail(&pr.c), 4);
	xgpu_q_release(&pr.c, 1);
	assert_int_equal(xgpu_q_space(&pr.p), 1);
	xgpu_q_release(&pr.c, 3);
	assert_int_equal(xgpu_q_space(&pr.p), 4);
	assert_int_equal(xgpu_q_avail(&pr.c), 0);
	free(pr.buf);
}

static void corrupt_indexes_are_reported(void **state)
{
	struct pair pr;
	pair_init(&pr, 16, 1, 100);
	/* A producer index more than one queue ahead of the consumer. */
	atomic_store(&pr.q.prod, 100 + 17);
	assert_int_equal(xgpu_q_avail(&pr.c), -1);
	/* Behind the consumer by up to a queue length is a producer that has
	 * sealed slots but not yet published them: nothing to read. Further
	 * behind is corrupt. */
	atomic_store(&pr.q.prod, 99);
	assert_int_equal(xgpu_q_avail(&pr.c), 0);
	atomic_store(&pr.q.prod, 100 - 17);
	assert_int_equal(xgpu_q_avail(&pr.c), -1);
	/* A consumer index beyond what was produced, seen once the producer
	 * needs space (before that it has no reason to read it). */
	atomic_store(&pr.q.prod, 100);
	uint8_t b[16] = {0};
	bool kick;
	assert_int_equal(xgpu_stream_write(&pr.p, b, sizeof b, &kick), 16);
	atomic_store(&pr.q.cons, 117);
	assert_int_equal(xgpu_q_space(&pr.p), -1);
	assert_int_equal(xgpu_stream_write(&pr.p, b, 4, &kick), -1);
	atomic_store(&pr.q.prod, 300);
	assert_int_equal(xgpu_stream_read(&pr.c, b, sizeof b, &kick), -1);
	free(pr.buf);
}

static void kicks_only_when_peer_armed(void **state)
{
	struct pair pr;
	pair_init(&pr, 8, XGPU_SLOT_SIZE, 0);
	/* Consumer busy (not armed): no kick. */
	atomic_store(&pr.q.prod_event, UINT32_MAX / 2);
	assert_false(xgpu_q_publish(&pr.p, 1));
	/* Consumer about to sleep: the next publish kicks, once. */
	xgpu_q_release(&pr.c, 1);
	xgpu_q_arm_data(&pr.c);
	assert_true(xgpu_q_publish(&pr.p, 2));
	assert_false(xgpu_q_publish(&pr.p, 1));
	/* Producer waits for room for 2 of 8 with 3 queued... */
	xgpu_q_publish(&pr.p, 5); /* now full: 8 queued */
	xgpu_q_arm_space(&pr.p, 2);
	assert_false(xgpu_q_release(&pr.c, 1)); /* one free: not yet */
	assert_true(xgpu_q_release(&pr.c, 1));  /* two free: kick */
	assert_false(xgpu_q_release(&pr.c, 1));
	free(pr.buf);
}

/* A consumer that needs several units is kicked once, by the publish that
 * brings what it needs, not by the pieces before it; a need beyond the queue
 * is the whole queue's. */
static void data_threshold_kicks_once_enough_is_there(void **state)
{
	struct pair pr;
	pair_init(&pr, 64, 1, 0);
	xgpu_q_publish(&pr.p, 3);
	xgpu_q_release(&pr.c, 3);
	xgpu_q_arm_data_for(&pr.c, 10);
	assert_false(xgpu_q_publish(&pr.p, 4)); /* 4 of 10 */
	assert_false(xgpu_q_publish(&pr.p, 5)); /* 9 of 10 */
	assert_true(xgpu_q_publish(&pr.p, 1));  /* 10 */
	assert_false(xgpu_q_publish(&pr.p, 7));
	/* One publish that passes the threshold kicks too. */
	xgpu_q_release(&pr.c, 17);
	xgpu_q_arm_data_for(&pr.c, 8);
	assert_true(xgpu_q_publish(&pr.p, 20));
	/* More than the queue holds: armed for the queue's size. */
	xgpu_q_release(&pr.c, 20);
	xgpu_q_arm_data_for(&pr.c, 1000);
	assert_false(xgpu_q_publish(&pr.p, 63));
	assert_true(xgpu_q_publish(&pr.p, 1));
	/* 0 means 1: the next unit kicks. */
	xgpu_q_release(&pr.c, 64);
	xgpu_q_arm_data_for(&pr.c, 0);
	assert_true(xgpu_q_publish(&pr.p, 1));
	free(pr.buf);
}

/* A deferred publish kicks at the producer's later check, exactly once, and
 * only when the consumer armed; an ordinary publish after deferred ones
 * counts them too. A deferred release likewise on the consumer's side. */
static void deferred_publish_kicks_at_the_check(void **state)
{
	struct pair pr;
	pair_init(&pr, 8, XGPU_SLOT_SIZE, 0);
	atomic_store(&pr.q.prod_event, UINT32_MAX / 2);
	xgpu_q_publish_deferred(&pr.p, 1);
	assert_int_equal(atomic_load(&pr.q.prod), 1); /* visible at once */
	assert_false(xgpu_q_kick_due(&pr.p));         /* consumer busy */
	/* The consumer arms for index 2 and sleeps; two answers go out
	 * deferred, the check kicks once. */
	xgpu_q_release(&pr.c, 1);
	xgpu_q_arm_data(&pr.c);
	xgpu_q_publish_deferred(&pr.p, 1);
	xgpu_q_publish_deferred(&pr.p, 1);
	assert_true(xgpu_q_kick_due(&pr.p));
	assert_false(xgpu_q_kick_due(&pr.p));
	/* Armed again; a deferred publish and then an ordinary one: the
	 * ordinary one's check covers both. */
	xgpu_q_release(&pr.c, 2);
	xgpu_q_arm_data(&pr.c);
	xgpu_q_publish_deferred(&pr.p, 1);
	assert_true(xgpu_q_publish(&pr.p, 1));
	assert_false(xgpu_q_kick_due(&pr.p));
	/* The consumer's side: 4 of 8 queued; the producer waits for room
	 * for 6, so the second deferred release crosses its threshold. */
	xgpu_q_publish(&pr.p, 2);
	assert_int_equal(pr.p.idx - pr.c.idx, 4);
	xgpu_q_arm_space(&pr.p, 6);
	xgpu_q_release_deferred(&pr.c, 1);
	assert_false(xgpu_q_release_kick_due(&pr.c));
	xgpu_q_release_deferred(&pr.c, 1);
	assert_int_equal(atomic_load(&pr.q.cons), pr.c.idx); /* visible at once */
	assert_true(xgpu_q_release_kick_due(&pr.c));
	assert_false(xgpu_q_release_kick_due(&pr.c));
	free(pr.buf);
}

static void byte_stream_round_trips_across_wrap(void **state)
{
	struct pair pr;
	pair_init(&pr, 4096, 1, UINT32_MAX - 5000);
	uint8_t src[3000], dst[3000];
	uint32_t seed = 7;
	uint64_t sent = 0, got = 0;
	for (int round = 0; round < 2000; round++) {
		size_t n = 1 + (seed = seed * 1103515245 + 12345) % sizeof src;
		for (size_t i = 0; i < n; i++)
			src[i] = (uint8_t)(sent + i);
		size_t done = 0;
		while (done < n) {
			bool kick;
			int64_t w = xgpu_stream_write(&pr.p, src + done, n - done, &kick);
			assert_true(w >= 0);
			done += (size_t)w;
			int64_t r = xgpu_stream_read(&pr.c, dst, sizeof dst, &kick);
			assert_true(r >= 0);
			for (int64_t i = 0; i < r; i++)
				assert_int_equal(dst[i], (uint8_t)(got + (uint64_t)i));
			got += (uint64_t)r;
		}
		sent += n;
	}
	bool kick;
	int64_t r = xgpu_stream_read(&pr.c, dst, sizeof dst, &kick);
	got += (uint64_t)r;
	assert_int_equal(got, sent);
	free(pr.buf);
}

/* ---- a 1 GiB transfer through a 64 KiB area, sleeping on eventfds ---- */

struct xfer {
	struct pair pr;
	int kick_consumer, kick_producer;
	uint64_t total;
	uint64_t producer_kicks, consumer_kicks;
	uint64_t checksum_in, checksum_out;
};

static void sleep_on(int fd)
{
	struct pollfd p = {fd, POLLIN, 0};
	poll(&p, 1, 1000);
	uint64_t v;
	if (read(fd, &v, sizeof v) < 0) {
		/* EAGAIN: a spurious wake-up; the caller rechecks. */
	}
}

static void kick(int fd)
{
	uint64_t one = 1;
	if (write(fd, &one, sizeof one) < 0) {
		/* Saturated counter: a kick is pending anyway. */
	}
}

static void *producer(void *arg)
{
	struct xfer *x = arg;
	uint8_t chunk[24576];
	uint64_t sent = 0;
	while (sent < x->total) {
		size_t n = sizeof chunk;
		if (n > x->total - sent)
			n = (size_t)(x->total - sent);
		for (size_t i = 0; i < n; i += 8) {
			uint64_t v = (sent + i) * 0x9E3779B97F4A7C15ull;
			memcpy(chunk + i, &v, 8);
			x->checksum_in += v;
		}
		size_t done = 0;
		while (done < n) {
			bool k;
			int64_t w = xgpu_stream_write(&x->pr.p, chunk + done, n - done, &k);
			if (w < 0)
				return NULL;
			if (k) {
				x->producer_kicks++;
				kick(x->kick_consumer);
			}
			done += (size_t)w;
			if (done < n && w == 0) {
				xgpu_q_arm_space(&x->pr.p, 16384);
				if (xgpu_q_space(&x->pr.p) < 16384)
					sleep_on(x->kick_producer);
			}
		}
		sent += n;
	}
	return NULL;
}

static void *consumer(void *arg)
{
	struct xfer *x = arg;
	uint8_t buf[8192];
	uint64_t got = 0;
	while (got < x->total) {
		bool k;
		int64_t r = xgpu_stream_read(&x->pr.c, buf, sizeof buf, &k);
		if (r < 0)
			return NULL;
		if (k) {
			x->consumer_kicks++;
			kick(x->kick_producer);
		}
		for (int64_t i = 0; i + 8 <= r; i += 8) {
			uint64_t v;
			memcpy(&v, buf + i, 8);
			x->checksum_out += v;
		}
		got += (uint64_t)r;
		if (r == 0) {
			xgpu_q_arm_data(&x->pr.c);
			if (xgpu_q_avail(&x->pr.c) == 0)
				sleep_on(x->kick_consumer);
		}
	}
	return NULL;
}

static void one_gib_streams_through_small_area(void **state)
{
	struct xfer x = {.total = 1ull << 30};
	pair_init(&x.pr, 64 << 10, 1, 0);
	x.kick_consumer = eventfd(0, EFD_NONBLOCK);
	x.kick_producer = eventfd(0, EFD_NONBLOCK);
	pthread_t tp, tc;
	pthread_create(&tp, NULL, producer, &x);
	pthread_create(&tc, NULL, consumer, &x);
	pthread_join(tp, NULL);
	pthread_join(tc, NULL);
	assert_int_equal(x.pr.c.idx - 0, (uint32_t)x.total);
	assert_true(x.checksum_in == x.checksum_out);
	assert_true(x.checksum_in != 0);
	/* Both sides slept at times (the area is 1/16384 of the transfer), yet
	 * kicks stay far below one per chunk: a side is only kicked when it
	 * said it would sleep. */
	assert_true(x.producer_kicks + x.consumer_kicks > 0);
	assert_true(x.producer_kicks + x.consumer_kicks < (x.total / 8192));
	close(x.kick_consumer);
	close(x.kick_producer);
	free(x.pr.buf);
}

/* ---- region layout ------------------------------------------------------ */

/* The uncached read (large transfers into a program's buffer) moves the same
 * bytes as the plain one: unaligned destinations, pieces that wrap the area,
 * and lengths around its vector loop's edges. */
static void nt_stream_read_matches_plain(void **state)
{
	const uint32_t area = 1u << 16;
	const size_t lens[] = {1, 15, 16, 63, 64, 255, 256, 257, 271, 1000, 4096 + 13, 40000, area};
	struct pair pr;
	pair_init(&pr, area, 1, 0xffff0000u);
	uint8_t *src = malloc(area), *dst = malloc(area + 64);
	for (uint32_t i = 0; i < area; i++)
		src[i] = (uint8_t)(i * 131u + 7u);
	for (size_t k = 0; k < sizeof lens / sizeof lens[0]; k++)
		for (size_t mis = 0; mis < 3; mis++) {
			size_t n = lens[k], at = mis * 7;
			bool kick;
			/* Start each write near the end of the area, so longer
			 * pieces wrap. */
			assert_int_equal(xgpu_stream_write(&pr.p, src, area - 1000, &kick), area - 1000);
			assert_int_equal(xgpu_stream_read(&pr.c, dst, area - 1000, &kick), area - 1000);
			assert_int_equal(xgpu_stream_write(&pr.p, src, n, &kick), (int64_t)n);
			memset(dst, 0xee, area + 64);
			assert_int_equal(xgpu_stream_read_nt(&pr.c, dst + at, n, &kick), (int64_t)n);
			assert_memory_equal(dst + at, src, n);
			for (size_t i = 0; i < at; i++)
				assert_int_equal(dst[i], 0xee);
			assert_int_equal(dst[at + n], 0xee);
		}
	/* A corrupt producer index is reported, as by the plain read. */
	atomic_store(&pr.q.prod, pr.c.idx + 2 * area);
	bool kick;
	assert_int_equal(xgpu_stream_read_nt(&pr.c, dst, 10, &kick), -1);
	free(src);
	free(dst);
	free(pr.buf);
}

static void *make_region(struct xgpu_shm_params *p, size_t *size)
{
	*size = xgpu_shm_region_size(p);
	assert_true(*size > 0);
	void *r = calloc(1, *size);
	assert_int_equal(xgpu_shm_init(r, *size, p), 0);
	return r;
}

/* A region laid out by the frontend, and both sides' views of it. */
static void *make_views(struct xgpu_shm_params p, struct xgpu_shm_view *fe, struct xgpu_shm_view *be)
{
	size_t size;
	void *r = make_region(&p, &size);
	char err[160];
	xgpu_shm_view_frontend(r, fe);
	assert_int_equal(xgpu_shm_attach(r, size, be, err, sizeof err), 0);
	return r;
}

static void region_round_trip(void **state)
{
	struct xgpu_shm_view fe, be;
	void *r = make_views((struct xgpu_shm_params){.nr_slots = 64, .data_size = 1 << 20}, &fe, &be);
	/* A request and its bulk data cross from one view to the other. */
	struct xgpu_req_hdr h = {.call = XGPU_CALL_NOP, .len = sizeof(struct xgpu_req_NOP), .seq = 42};
	memcpy(xgpu_q_unit(&fe.req, fe.req.idx), &h, sizeof h);
	xgpu_q_publish(&fe.req, 1);
	assert_int_equal(xgpu_q_avail(&be.req), 1);
	struct xgpu_req_hdr got;
	memcpy(&got, xgpu_q_unit(&be.req, be.req.idx), sizeof got);
	assert_int_equal(got.seq, 42);
	bool kick;
	assert_int_equal(xgpu_stream_write(&fe.tx, "hello", 5, &kick), 5);
	char buf[8];
	assert_int_equal(xgpu_stream_read(&be.tx, buf, sizeof buf, &kick), 5);
	assert_memory_equal(buf, "hello", 5);
	free(r);
}

/* Responses go into their requests' slots (shm.h), tagged so that neither
 * side takes the other's packet for its own, over several laps of the slots
 * and with requests pipelined. */
static void responses_share_request_slots(void **state)
{
	struct xgpu_shm_view fe, be;
	void *r = make_views((struct xgpu_shm_params){.nr_slots = 8, .data_size = 64 << 10}, &fe, &be);
	assert_ptr_equal(xgpu_q_unit(&fe.req, 3), xgpu_q_unit(&fe.rsp, 3));
	uint64_t seq = 0, answered = 0;
	for (int round = 0; round < 40; round++) {
		unsigned burst = 1 + round % 5; /* up to five in flight */
		for (unsigned i = 0; i < burst; i++) {
			struct xgpu_req_hdr h = {.call = XGPU_CALL_NOP, .len = 8, .seq = ++seq};
			memcpy(xgpu_q_unit(&fe.req, fe.req.idx), &h, sizeof h);
			xgpu_slot_seal(&fe.req);
			xgpu_q_publish(&fe.req, 1);
			/* A request is no answer. */
			assert_false(xgpu_slot_ready(&fe.rsp));
		}
		for (unsigned i = 0; i < burst; i++) {
			assert_true(xgpu_slot_ready(&be.req));
			struct xgpu_req_hdr got;
			memcpy(&got, xgpu_q_unit(&be.req, be.req.idx), sizeof got);
			assert_int_equal(got.seq, answered + 1);
			xgpu_q_release(&be.req, 1);
			struct xgpu_rsp_hdr a = {.call = got.call, .seq = got.seq};
			memcpy(xgpu_q_unit(&be.rsp, be.rsp.idx), &a, sizeof a);
			xgpu_slot_seal(&be.rsp);
			xgpu_q_publish_deferred(&be.rsp, 1);
			answered++;
		}
		/* An answer is no new request. */
		assert_false(xgpu_slot_ready(&be.req));
		for (unsigned i = 0; i < burst; i++) {
			assert_true(xgpu_slot_ready(&fe.rsp));
			struct xgpu_rsp_hdr a;
			memcpy(&a, xgpu_q_unit(&fe.rsp, fe.rsp.idx), sizeof a);
			assert_int_equal(a.seq, answered - burst + i + 1);
			xgpu_q_release(&fe.rsp, 1);
		}
		assert_false(xgpu_slot_ready(&fe.rsp));
	}
	assert_true(fe.req.idx > 2 * 8);
	free(r);
}

static void region_rejects(void **state, void (*spoil)(struct xgpu_shm_header *, size_t *),
			   const char *expect)
{
	struct xgpu_shm_params p = {.nr_slots = 16, .data_size = 64 << 10};
	size_t size;
	void *r = make_region(&p, &size);
	spoil(r, &size);
	struct xgpu_shm_view v;
	char err[160] = "";
	assert_int_equal(xgpu_shm_attach(r, size, &v, err, sizeof err), -1);
	if (!strstr(err, expect))
		fail_msg("error '%s' does not mention '%s'", err, expect);
	free(r);
}

static void spoil_version(struct xgpu_shm_header *h, size_t *size)
{
	h->version = XGPU_PROTO_VERSION + 1;
}
static void spoil_magic(struct xgpu_shm_header *h, size_t *size)
{
	h->magic = 0;
}
static void spoil_slots(struct xgpu_shm_header *h, size_t *size)
{
	h->nr_slots = 24;
}
static void spoil_size(struct xgpu_shm_header *h, size_t *size)
{
	*size -= 4096;
}
static void spoil_overlap(struct xgpu_shm_header *h, size_t *size)
{
	h->rx_off = h->tx_off;
}
static void spoil_outside(struct xgpu_shm_header *h, size_t *size)
{
	h->rx_off = h->region_size - 4096;
}
static void spoil_data(struct xgpu_shm_header *h, size_t *size)
{
	h->tx_size = 3 << 16;
}
static void spoil_huge_offset(struct xgpu_shm_header *h, size_t *size)
{
	h->slot_off = UINT64_MAX - 100;
}

static void region_validation(void **state)
{
	region_rejects(state, spoil_version, "protocol");
	region_rejects(state, spoil_magic, "magic");
	region_rejects(state, spoil_slots, "power of two");
	region_rejects(state, spoil_size, "bytes");
	region_rejects(state, spoil_overlap, "overlaps");
	region_rejects(state, spoil_outside, "outside");
	region_rejects(state, spoil_data, "power of two");
	region_rejects(state, spoil_huge_offset, "outside");
	struct xgpu_shm_params bad = {.nr_slots = 3, .data_size = 1 << 20};
	assert_int_equal(xgpu_shm_region_size(&bad), 0);
	bad = (struct xgpu_shm_params){.nr_slots = 4, .data_size = 1 << 10};
	assert_int_equal(xgpu_shm_region_size(&bad), 0);
}

static void call_table_is_consistent(void **state)
{
	for (uint32_t c = 0; c < XGPU_CALL_COUNT; c++) {
		assert_non_null(xgpu_calls[c].name);
		assert_true(xgpu_calls[c].req_len > 0 && xgpu_calls[c].req_len <= XGPU_SLOT_ARGS);
		assert_true(xgpu_calls[c].rsp_len > 0);
	}
	assert_string_equal(xgpu_call_name(XGPU_CALL_LAUNCH), "LAUNCH");
	assert_string_equal(xgpu_call_name(XGPU_CALL_COUNT + 5), "unknown");
	struct xgpu_req_MEMCPY_HTOD r = {.dst = 0x1000, .size = 4096, .stream = 0x100000002ull};
	char buf[128];
	xgpu_format_req(XGPU_CALL_MEMCPY_HTOD, &r, buf, sizeof buf);
	assert_string_equal(buf, "dst=0x1000 size=4096 stream=0x100000002 flags=0");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(slot_ring_wraps_around),
	    cmocka_unit_test(slot_tags_mark_complete_packets),
	    cmocka_unit_test(full_ring_has_no_space),
	    cmocka_unit_test(corrupt_indexes_are_reported),
	    cmocka_unit_test(kicks_only_when_peer_armed),
	    cmocka_unit_test(data_threshold_kicks_once_enough_is_there),
	    cmocka_unit_test(deferred_publish_kicks_at_the_check),
	    cmocka_unit_test(byte_stream_round_trips_across_wrap),
	    cmocka_unit_test(one_gib_streams_through_small_area),
	    cmocka_unit_test(nt_stream_read_matches_plain),
	    cmocka_unit_test(region_round_trip),
	    cmocka_unit_test(region_validation),
	    cmocka_unit_test(responses_share_request_slots),
	    cmocka_unit_test(call_table_is_consistent),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
