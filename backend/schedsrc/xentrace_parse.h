/* SPDX-License-Identifier: Apache-2.0 */
/* xentrace_parse.h - Xen trace buffer records (struct t_rec of xen/trace.h,
 * as Xen 4.17 writes them) decoded without trusting a byte, the per-CPU
 * ring (struct t_buf) drained the way tools/xentrace does, and the per-PCPU
 * state machine that turns TRC_SCHED_SWITCH* records into "who runs now,
 * since when, and how long the previous one ran". Pure: no hypercalls; the
 * `xentrace` schedule source (hypsrc_xentrace.c) feeds it mapped buffers and
 * tests feed it recorded ones. */
#ifndef XGPU_XENTRACE_PARSE_H
#define XGPU_XENTRACE_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <xen/trace.h>

#define XT_DOMID_IDLE 0x7fffu /* DOMID_IDLE: the PCPU runs its idle VCPU */
/* The largest record: header, TSC and TRACE_EXTRA_MAX words. */
#define XT_MAX_REC_BYTES (4u + 8u + 4u * TRACE_EXTRA_MAX)

/* One decoded record. */
struct xt_rec {
	uint32_t event; /* TRC_HD_TO_EVENT of the header: the 28-bit event id */
	uint32_t size;  /* bytes the record takes in the buffer */
	unsigned nextra;
	bool has_tsc;
	uint64_t tsc;
	uint32_t extra[TRACE_EXTRA_MAX];
};

enum xt_status {
	XT_OK = 0,
	XT_SHORT,   /* the record runs past the end of the bytes given */
	XT_GARBAGE, /* not a record: zero header or an event id without class or subclass */
};

/* Decodes the record at the start of buf, reading at most len bytes. */
enum xt_status xt_decode(const void *buf, size_t len, struct xt_rec *r);

/* Decodes records one after another; stops at the end, at max records, or at
 * the first short or garbage record (*how says which; XT_OK if none). Returns
 * the number decoded; *used (may be NULL) the bytes they take. */
size_t xt_decode_all(const void *buf, size_t len, struct xt_rec *out, size_t max, size_t *used,
		     enum xt_status *how);

/* What one PCPU runs, as far as the trace has told. Times are trace time in
 * ns: the record's TSC converted with the host's TSC frequency. */
struct xt_pcpu {
	bool known; /* a switch (or continue) record said who runs */
	uint32_t domid, vcpu;
	uint64_t since_ns; /* when it started running */
	uint64_t slice_ns; /* the time slice the scheduler gave it (0: unknown) */
	bool prev_known;   /* the previous run's length is known */
	uint32_t prev_domid, prev_vcpu;
	uint64_t prev_ran_ns; /* how long the previous unit ran before this one */
	uint64_t last_ns;     /* trace time of the newest timestamped record */
	bool has_time;        /* last_ns is set */
	bool stale;           /* records were lost since the last switch: who runs may be wrong */
	uint64_t switches;
	/* A switch in progress: INFPREV and INFNEXT come before SWITCH. */
	bool ip, in;
	uint32_t ip_dom, ip_vcpu, ip_ran, in_dom, in_vcpu, in_slice;
};

struct xt_stats {
	uint64_t records;       /* decoded and fed */
	uint64_t sched_records; /* of them TRC_SCHED_SWITCH* */
	uint64_t lost_markers;  /* TRC_LOST_RECORDS records */
	uint64_t lost_records;  /* records Xen dropped, as those markers count them */
	uint64_t garbage;       /* windows abandoned at a record that is not one */
	uint64_t truncated;     /* windows or files that end inside a record */
	uint64_t bogus_index;   /* rings whose cons/prod were out of range */
	uint64_t bytes;         /* bytes consumed from rings */
	uint64_t bad_pcpu;      /* records for a PCPU beyond npcpu */
};

struct xt_state {
	uint32_t cpu_khz; /* TSC frequency; 0: TSC ticks are taken as ns */
	unsigned npcpu;
	struct xt_pcpu *pcpu;
	uint64_t newest_ns; /* newest trace time seen on any PCPU */
	struct xt_stats st;
};

int xt_state_init(struct xt_state *s, unsigned npcpu, uint32_t cpu_khz);
void xt_state_free(struct xt_state *s);
uint64_t xt_tsc_to_ns(uint64_t tsc, uint32_t cpu_khz);

/* One record from PCPU pcpu's buffer, in the order Xen wrote it. */
void xt_state_feed(struct xt_state *s, unsigned pcpu, const struct xt_rec *r);

/* Feeds a flat run of records. With file set, the bytes are xentrace's
 * output: TRC_TRACE_CPU_CHANGE records say which PCPU the records after them
 * came from (pcpu is the one before the first). Returns the bytes consumed;
 * *how is XT_OK when all were, else why it stopped. */
size_t xt_feed_bytes(struct xt_state *s, unsigned pcpu, const void *buf, size_t len, bool file,
		     enum xt_status *how);

/* Drains one PCPU's ring: tb is the mapped struct t_buf with data_size data
 * bytes right after it (Xen's layout; cons written back, prod only read).
 * The unconsumed window is copied into scratch (data_size bytes) before any
 * of it is decoded, so Xen writing on cannot change what is parsed. A window
 * with a short or garbage record is dropped from there on (records carry no
 * sync marker to resume at) and counted. Returns the bytes consumed, or -1
 * when cons/prod are out of range (the ring is left alone). */
long xt_ring_drain(struct xt_state *s, unsigned pcpu, struct t_buf *tb, uint32_t data_size, uint8_t *scratch);

#endif
