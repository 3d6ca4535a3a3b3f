/* SPDX-License-Identifier: Apache-2.0 */
/* queue.h - one-way queues in memory shared between a guest and Dom0.
 *
 * A queue is a power-of-two array of units (fixed-size packet slots, or single
 * bytes for the bulk data areas) with free-running 32-bit producer and
 * consumer indexes, as in Xen's xen/io/ring.h. Each index has an event
 * threshold written by the other side: a side about to sleep sets the
 * threshold just past the index it is waiting for, and the peer kicks it only
 * when its update crosses that threshold. So a busy peer is never signalled,
 * and a sleeping one always is.
 *
 * Each side keeps its own index privately and only ever writes it to shared
 * memory; it never trusts the peer's index without checking that it lies
 * within one queue length of its own. A corrupt index is reported, not
 * followed.
 */
#ifndef XGPU_QUEUE_H
#define XGPU_QUEUE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Lives in shared memory. Each field has a cache line of its own: the
 * indexes move on every packet, while a threshold changes only when its side
 * is about to sleep, so reading the peer's threshold after each publish costs
 * no cache-line transfer while the peer is busy. */
struct xgpu_queue {
	_Alignas(64) _Atomic uint32_t prod;
	_Alignas(64) _Atomic uint32_t cons;
	_Alignas(64) _Atomic uint32_t prod_event; /* consumer waiting for data: kick when prod passes this */
	_Alignas(64) _Atomic uint32_t cons_event; /* producer waiting for space: kick when cons passes this */
};

/* One side's private view of one queue. */
struct xgpu_qend {
	struct xgpu_queue *q;
	uint8_t *buf;      /* size * unit bytes */
	uint32_t size;     /* units; power of two */
	uint32_t unit;     /* bytes per unit */
	uint32_t idx;      /* our own index: prod for a producer, cons for a consumer */
	uint32_t peer;     /* producer: the consumer's index as last read */
	uint32_t tag_flip; /* slot queues: XOR-ed into every tag (see xgpu_qend_tag) */
	uint32_t checked;  /* index up to which the peer's threshold was read */
};

void xgpu_qend_init(struct xgpu_qend *e, struct xgpu_queue *q, void *buf, uint32_t size, uint32_t unit,
		    uint32_t start_idx);

/* Producer: units free to write, or -1 if the consumer's index is corrupt.
 * The consumer's index is reread only when the last value read leaves less
 * than `want` units free, so a producer that is not short of space does not
 * pull the consumer's cache line. */
int64_t xgpu_q_space_for(struct xgpu_qend *p, uint32_t want);
static inline int64_t xgpu_q_space(struct xgpu_qend *p)
{
	return xgpu_q_space_for(p, p->size);
}
/* Consumer: units ready to read, or -1 if the producer's index is corrupt
 * (more than a queue length ahead of ours or behind it). */
int64_t xgpu_q_avail(const struct xgpu_qend *c);

/* Make n units visible (producer) or free (consumer). Returns true when the
 * peer asked to be kicked and must be. */
bool xgpu_q_publish(struct xgpu_qend *p, uint32_t n);
bool xgpu_q_release(struct xgpu_qend *c, uint32_t n);

/* Producer: make n units visible now, and leave reading the consumer's
 * threshold for xgpu_q_kick_due. The barrier that reading needs waits for
 * the slot's store to leave the CPU, which takes a cache-line transfer when
 * the consumer is spinning on that slot: done after the producer's other
 * work, it usually costs nothing. The producer must call xgpu_q_kick_due
 * before anything that may block or take long, and before it sleeps, or a
 * consumer that went to sleep stays asleep. */
void xgpu_q_publish_deferred(struct xgpu_qend *p, uint32_t n);
/* Producer: whether what was published since the last check crossed the
 * consumer's threshold, so that the consumer must be kicked. */
bool xgpu_q_kick_due(struct xgpu_qend *p);
/* The same for a consumer's release and the producer's threshold: the
 * executor frees a request's slot before it runs the call, when a locked
 * exchange would cost it tens of cycles on the guest's round trip. */
void xgpu_q_release_deferred(struct xgpu_qend *c, uint32_t n);
bool xgpu_q_release_kick_due(struct xgpu_qend *c);

/* Before sleeping: ask the peer to kick us once data (consumer) or space for
 * `need` units (producer) may be there. The caller must check the condition
 * again after arming and before sleeping. */
void xgpu_q_arm_data(struct xgpu_qend *c);
/* The same for a consumer that needs `need` units (at most the queue's size)
 * before it has use for any: it is kicked once, not for every piece. */
void xgpu_q_arm_data_for(struct xgpu_qend *c, uint32_t need);
void xgpu_q_arm_space(struct xgpu_qend *p, uint32_t need);

/* Slot queues: a packet's first 32 bits are its tag. The producer fills the
 * slot, then stores xgpu_slot_tag(index) with release order, then publishes
 * its index as for any queue. A consumer that spins polls the tag of the slot
 * at its own index: a packet is there when the tag matches, which costs one
 * cache-line transfer per packet instead of one for the slot and one for the
 * producer's index. The index still drives the sleep thresholds and is
 * checked for corruption whenever a consumer goes to sleep. Tags are odd, so
 * a zeroed slot never matches, and a slot left from an earlier lap carries
 * another index's tag. */
static inline uint32_t xgpu_slot_tag(uint32_t idx)
{
	return (idx << 1) | 1u;
}

/* Two queues may share one slot array: a channel's responses are written
 * into their requests' slots (shm.h). The response queue's tags then carry
 * XGPU_TAG_FLIP, so that neither side takes the other's packet for its own:
 * a flipped tag of index i equals a plain one only for i + 2^30, which no
 * slot array of up to 2^30 slots holds at once. */
#define XGPU_TAG_FLIP 0x80000000u
static inline uint32_t xgpu_qend_tag(const struct xgpu_qend *e, uint32_t idx)
{
	return xgpu_slot_tag(idx) ^ e->tag_flip;
}

/* Consumer: whether the packet at our index is complete. */
bool xgpu_slot_ready(const struct xgpu_qend *c);
/* Producer: marks the packet at our index complete (before publishing). */
void xgpu_slot_seal(struct xgpu_qend *p);

/* Address of the unit at free-running index i. */
static inline void *xgpu_q_unit(const struct xgpu_qend *e, uint32_t i)
{
	return e->buf + (size_t)(i & (e->size - 1)) * e->unit;
}

/* Bulk copies publish in slices of at most this many bytes, so the peer
 * starts copying out while the rest is still being copied in. */
#define XGPU_STREAM_SLICE (256u << 10)

/* Byte streams (unit == 1). Copy up to len bytes in or out, wrapping as
 * needed; return how many were copied (bounded by space/avail) and set *kick
 * when the peer must be kicked. Return -1 on a corrupt peer index. */
int64_t xgpu_stream_write(struct xgpu_qend *p, const void *src, size_t len, bool *kick);
int64_t xgpu_stream_read(struct xgpu_qend *c, void *dst, size_t len, bool *kick);
/* The same, storing into dst without caching it (non-temporal stores where
 * the CPU has them): for large destinations that are not read back at once,
 * such as a program's buffer receiving many MiB. */
int64_t xgpu_stream_read_nt(struct xgpu_qend *c, void *dst, size_t len, bool *kick);
/* Transfers from this size up are read with xgpu_stream_read_nt: they exceed
 * a core's L2 several times over, so caching the destination only costs a
 * read of every line before it is written (on this project's 2-core VM, a
 * consumer writing 1 GiB in 256 KiB slices moved 2.5-3.2 GB/s uncached and
 * 1.9-2.2 GB/s cached, alternately in one run). */
#define XGPU_STREAM_NT_MIN (8u << 20)
/* Consumer: the contiguous readable run at the current index (at most max
 * bytes), without consuming it. Returns its length, 0 if none, -1 if corrupt. */
int64_t xgpu_stream_peek(const struct xgpu_qend *c, const void **ptr, size_t max);

#endif
