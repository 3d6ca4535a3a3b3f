/* SPDX-License-Identifier: Apache-2.0 */
/* xgpu_sched_export.h - the ABI of the pages in which the patched Xen credit
 * scheduler publishes its schedule to dom0 (read-only there), shared by the
 * hypervisor patch and xgpu's dom0 reader.
 *
 * Layout (all little-endian, naturally aligned): a header, then npcpus
 * pcpu records of XGPU_SCHEDEXP_PCPU_SIZE bytes at pcpu_off, then ndoms
 * domain slots of XGPU_SCHEDEXP_DOM_SIZE bytes at dom_off; nr_frames pages
 * in all. The hypervisor is the only writer.
 *
 * Every record is a seqlock: the writer makes seq odd, writes the fields,
 * then makes seq even again (a release barrier before each seq store). A
 * reader copies the record between two reads of seq and keeps the copy only
 * if both reads are the same even number (an acquire barrier after the first
 * read and before the second); otherwise the read was torn and it retries a
 * bounded number of times. seq is 32 bits and wraps; readers compare it for
 * equality only. The writer never waits for a reader.
 */
#ifndef XGPU_SCHED_EXPORT_H
#define XGPU_SCHED_EXPORT_H

#include <stdint.h>

#define XGPU_SCHEDEXP_MAGIC 0x50455358u /* "XSEP" */
#define XGPU_SCHEDEXP_VERSION 1u
#define XGPU_SCHEDEXP_RUNQ 4u /* head of each PCPU's run queue exported */
#define XGPU_SCHEDEXP_PCPU_SIZE 128u
#define XGPU_SCHEDEXP_DOM_SIZE 32u
#define XGPU_SCHEDEXP_MAX_PCPUS 256u
#define XGPU_SCHEDEXP_MAX_DOMS 1024u

/* XENMEM_acquire_resource type of the export (mapped with
 * xenforeignmemory_map_resource(fmem, DOMID_XEN, XGPU_SCHEDEXP_RESOURCE, 0,
 * 0, nr_frames, ...)); outside the range upstream Xen uses. */
#define XGPU_SCHEDEXP_RESOURCE 0x7867u

/* Credit scheduler priorities (CSCHED_PRI_*). */
enum {
	XGPU_SCHEDEXP_PRI_IDLE = -64,
	XGPU_SCHEDEXP_PRI_TS_OVER = -2,
	XGPU_SCHEDEXP_PRI_TS_UNDER = -1,
	XGPU_SCHEDEXP_PRI_TS_BOOST = 0,
};

#define XGPU_SCHEDEXP_DOMID_IDLE 0x7fffu /* DOMID_IDLE: the PCPU is idle */

struct xgpu_schedexp_unit {
	uint16_t domid;
	uint16_t vcpu;
	int32_t credit; /* credit left (Xen credit units; may be negative) */
	int16_t pri;    /* XGPU_SCHEDEXP_PRI_* */
	uint16_t pad;
};

struct xgpu_schedexp_header {
	uint32_t magic;   /* XGPU_SCHEDEXP_MAGIC */
	uint32_t version; /* XGPU_SCHEDEXP_VERSION */
	uint32_t nr_frames;
	uint32_t npcpus; /* <= XGPU_SCHEDEXP_MAX_PCPUS */
	uint32_t ndoms;  /* domain slots, <= XGPU_SCHEDEXP_MAX_DOMS */
	uint32_t pcpu_off;
	uint32_t dom_off;
	uint32_t tick_us;   /* the credit scheduler's accounting tick */
	uint32_t tslice_us; /* its time slice */
	uint32_t pad;
	uint64_t boot_ns; /* NOW() when the export started */
};

/* One per PCPU: what runs now, since when and for how long, and the head of
 * the run queue. Written when the scheduler picks a unit for the PCPU and at
 * each accounting tick. */
struct xgpu_schedexp_pcpu {
	uint32_t seq;
	uint32_t pcpu;
	struct xgpu_schedexp_unit cur; /* domid XGPU_SCHEDEXP_DOMID_IDLE: idle */
	uint32_t pad0;
	uint64_t slice_start_ns; /* Xen's NOW() */
	uint64_t slice_len_ns;
	uint32_t nrunq; /* valid entries in runq, <= XGPU_SCHEDEXP_RUNQ */
	uint32_t pad;
	struct xgpu_schedexp_unit runq[XGPU_SCHEDEXP_RUNQ]; /* next first */
	uint8_t reserved[XGPU_SCHEDEXP_PCPU_SIZE - 48 - 12 * XGPU_SCHEDEXP_RUNQ];
};

/* One per domain slot (a domain takes the slot domid % ndoms while it
 * lives; domid tells whose it is; 0xffff = free). */
struct xgpu_schedexp_dom {
	uint32_t seq;
	uint16_t domid;
	uint16_t nr_vcpus;
	uint32_t weight;
	uint32_t cap;
	uint8_t reserved[XGPU_SCHEDEXP_DOM_SIZE - 16];
};

_Static_assert(sizeof(struct xgpu_schedexp_unit) == 12, "unit is ABI");
_Static_assert(sizeof(struct xgpu_schedexp_header) == 48, "header is ABI");
_Static_assert(sizeof(struct xgpu_schedexp_pcpu) == XGPU_SCHEDEXP_PCPU_SIZE, "pcpu record is ABI");
_Static_assert(sizeof(struct xgpu_schedexp_dom) == XGPU_SCHEDEXP_DOM_SIZE, "domain record is ABI");

#endif
