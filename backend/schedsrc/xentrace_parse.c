/* SPDX-License-Identifier: Apache-2.0 */
/* xentrace_parse.c - decoding Xen trace records, draining a per-CPU trace
 * ring, and the per-PCPU schedule state machine (see xentrace_parse.h).
 *
 * Record layout (xen/common/trace.c, Xen 4.17): a u32 header (event id in
 * bits 0-27, the number of extra u32 words in 28-30, bit 31 set when a
 * 64-bit TSC follows), then the TSC as two u32 (low, high) if present, then
 * the extra words. Records are u32-aligned and never straddle the end of
 * the ring's data: Xen pads with a TRC_TRACE_WRAP_BUFFER record instead.
 * cons and prod count bytes modulo 2 * data_size.
 *
 * The scheduler writes, per context switch on a PCPU (sched/core.c):
 *   INFPREV (prev domid, prev unit, ns it ran)
 *   INFNEXT (next domid, next unit, ns it waited, its time slice in ns)
 *   SWITCH  (prev domid, prev unit, next domid, next unit)
 * and INFCONT (domid, unit, ns since it started running, slice) when the
 * running unit goes on. Units are VCPUs with the default sched-gran=cpu. */
#include "xentrace_parse.h"

#include <stdlib.h>
#include <string.h>

static uint32_t rd32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, sizeof v);
	return v;
}

enum xt_status xt_decode(const void *buf, size_t len, struct xt_rec *r)
{
	const uint8_t *p = buf;
	memset(r, 0, sizeof *r);
	if (len < 4)
		return XT_SHORT;
	uint32_t hdr = rd32(p);
	uint32_t ev = TRC_HD_TO_EVENT(hdr);
	/* Every Xen event has a class (bits 16-27) and a subclass (12-15);
	 * zeroed or overwritten memory usually has neither. */
	if (hdr == 0 || (ev & 0x0fff0000u) == 0 || (ev & 0x0000f000u) == 0)
		return XT_GARBAGE;
	unsigned nextra = TRC_HD_EXTRA(hdr);
	bool tsc = TRC_HD_INCLUDES_CYCLE_COUNT(hdr);
	size_t size = 4 + (tsc ? 8 : 0) + 4 * (size_t)nextra;
	if (size > len)
		return XT_SHORT;
	r->event = ev;
	r->size = (uint32_t)size;
	r->nextra = nextra;
	r->has_tsc = tsc;
	size_t off = 4;
	if (tsc) {
		r->tsc = (uint64_t)rd32(p + 4) | (uint64_t)rd32(p + 8) << 32;
		off = 12;
	}
	for (unsigned i = 0; i < nextra; i++)
		r->extra[i] = rd32(p + off + 4 * i);
	return XT_OK;
}

size_t xt_decode_all(const void *buf, size_t len, struct xt_rec *out, size_t max, size_t *used,
		     enum xt_status *how)
{
	const uint8_t *p = buf;
	size_t off = 0, n = 0;
	enum xt_status st = XT_OK;
	while (off < len && n < max) {
		st = xt_decode(p + off, len - off, &out[n]);
		if (st != XT_OK)
			break;
		off += out[n].size;
		n++;
	}
	if (used)
		*used = off;
	if (how)
		*how = st;
	return n;
}

int xt_state_init(struct xt_state *s, unsigned npcpu, uint32_t cpu_khz)
{
	memset(s, 0, sizeof *s);
	s->pcpu = calloc(npcpu ? npcpu : 1, sizeof *s->pcpu);
	if (!s->pcpu)
		return -1;
	s->npcpu = npcpu;
	s->cpu_khz = cpu_khz;
	return 0;
}

void xt_state_free(struct xt_state *s)
{
	free(s->pcpu);
	s->pcpu = NULL;
	s->npcpu = 0;
}

uint64_t xt_tsc_to_ns(uint64_t tsc, uint32_t cpu_khz)
{
	if (!cpu_khz)
		return tsc;
	/* tsc * 1e6 / khz without overflowing: the remainder times 1e6 stays
	 * below 2^32 * 1e6. */
	return tsc / cpu_khz * 1000000u + tsc % cpu_khz * 1000000u / cpu_khz;
}

static void do_switch(struct xt_pcpu *p, uint64_t t, const struct xt_rec *r)
{
	uint32_t pdom = r->extra[0], pv = r->extra[1], ndom = r->extra[2], nv = r->extra[3];
	bool ran_known = false, own_known = false;
	uint64_t ran = 0, own = 0;
	if (p->known && !p->stale && p->domid == pdom && p->vcpu == pv && p->has_time && t >= p->since_ns) {
		own = t - p->since_ns;
		own_known = true;
	}
	if (p->ip && p->ip_dom == pdom && p->ip_vcpu == pv) {
		/* Xen's own figure, but cut to 32 bits: a run of 4.3 s or more
		 * (an idle PCPU) is only right in our times. */
		ran = own_known && own > UINT32_MAX ? own : p->ip_ran;
		ran_known = true;
	} else if (own_known) {
		ran = own;
		ran_known = true;
	}
	p->prev_domid = pdom;
	p->prev_vcpu = pv;
	p->prev_known = ran_known;
	p->prev_ran_ns = ran_known ? ran : 0;
	p->slice_ns = p->in && p->in_dom == ndom && p->in_vcpu == nv ? p->in_slice : 0;
	p->domid = ndom;
	p->vcpu = nv;
	p->since_ns = t;
	p->known = true;
	p->stale = false;
	p->switches++;
	p->ip = p->in = false;
}

void xt_state_feed(struct xt_state *s, unsigned pcpu, const struct xt_rec *r)
{
	if (pcpu >= s->npcpu) {
		s->st.bad_pcpu++;
		return;
	}
	struct xt_pcpu *p = &s->pcpu[pcpu];
	s->st.records++;
	if (r->has_tsc) {
		p->last_ns = xt_tsc_to_ns(r->tsc, s->cpu_khz);
		p->has_time = true;
		if (p->last_ns > s->newest_ns)
			s->newest_ns = p->last_ns;
	}
	uint64_t t = p->last_ns; /* a record without TSC happened after the last one with */
	switch (r->event) {
	case TRC_LOST_RECORDS:
		s->st.lost_markers++;
		if (r->nextra >= 1)
			s->st.lost_records += r->extra[0];
		p->stale = true;
		p->ip = p->in = false;
		break;
	case TRC_SCHED_SWITCH_INFPREV:
		s->st.sched_records++;
		if (r->nextra < 3)
			break;
		p->ip = true;
		p->ip_dom = r->extra[0];
		p->ip_vcpu = r->extra[1];
		p->ip_ran = r->extra[2];
		break;
	case TRC_SCHED_SWITCH_INFNEXT:
		s->st.sched_records++;
		if (r->nextra < 4)
			break;
		p->in = true;
		p->in_dom = r->extra[0];
		p->in_vcpu = r->extra[1];
		/* prev->next_time is an s_time_t cut to 32 bits: a slice below 4.3 s */
		p->in_slice = r->extra[3];
		break;
	case TRC_SCHED_SWITCH:
		s->st.sched_records++;
		if (r->nextra < 4)
			break;
		do_switch(p, t, r);
		break;
	case TRC_SCHED_SWITCH_INFCONT:
		s->st.sched_records++;
		if (r->nextra < 4)
			break;
		/* The unit goes on running; its run started extra[2] ns ago. */
		if (!p->known || p->stale || p->domid != r->extra[0] || p->vcpu != r->extra[1]) {
			p->domid = r->extra[0];
			p->vcpu = r->extra[1];
			p->since_ns = t >= r->extra[2] ? t - r->extra[2] : 0;
			p->known = true;
			p->stale = false;
			p->prev_known = false;
		}
		p->slice_ns = r->extra[3];
		p->ip = p->in = false;
		break;
	default:
		break;
	}
}

size_t xt_feed_bytes(struct xt_state *s, unsigned pcpu, const void *buf, size_t len, bool file,
		     enum xt_status *how)
{
	const uint8_t *p = buf;
	size_t off = 0;
	enum xt_status st = XT_OK;
	while (off < len) {
		struct xt_rec r;
		st = xt_decode(p + off, len - off, &r);
		if (st != XT_OK)
			break;
		off += r.size;
		if (file && r.event == TRC_TRACE_CPU_CHANGE && r.nextra >= 1) {
			/* xentrace's marker: extra[0] = cpu (bits 0-15) | dom << 16 */
			pcpu = r.extra[0] & 0xffffu;
			continue;
		}
		xt_state_feed(s, pcpu, &r);
	}
	if (st == XT_SHORT)
		s->st.truncated++;
	else if (st == XT_GARBAGE)
		s->st.garbage++;
	if (how)
		*how = st;
	return off;
}

long xt_ring_drain(struct xt_state *s, unsigned pcpu, struct t_buf *tb, uint32_t data_size, uint8_t *scratch)
{
	/* prod before the data it covers (Xen: smp_wmb before storing prod). */
	uint32_t prod = __atomic_load_n(&tb->prod, __ATOMIC_ACQUIRE);
	uint32_t cons = __atomic_load_n(&tb->cons, __ATOMIC_RELAXED);
	uint64_t wrap = 2 * (uint64_t)data_size;
	if (data_size < 4 || (data_size & 3) || (prod & 3) || (cons & 3) || prod >= wrap || cons >= wrap) {
		s->st.bogus_index++;
		return -1;
	}
	uint64_t avail = prod >= cons ? prod - cons : prod + wrap - cons;
	if (avail > data_size) {
		s->st.bogus_index++;
		return -1;
	}
	if (!avail)
		return 0;
	const uint8_t *data = (const uint8_t *)(tb + 1);
	uint32_t start = cons >= data_size ? cons - data_size : cons;
	uint64_t first = data_size - start;
	if (first > avail)
		first = avail;
	memcpy(scratch, data + start, (size_t)first);
	if (avail > first)
		memcpy(scratch + first, data, (size_t)(avail - first));
	enum xt_status how;
	size_t used = xt_feed_bytes(s, pcpu, scratch, (size_t)avail, false, &how);
	if (how != XT_OK && pcpu < s->npcpu) {
		/* What follows the bad record is lost; the running unit may be stale. */
		s->pcpu[pcpu].stale = true;
		s->pcpu[pcpu].ip = s->pcpu[pcpu].in = false;
	}
	(void)used;
	uint64_t ncons = cons + avail;
	if (ncons >= wrap)
		ncons -= wrap;
	/* Our reads of the window before Xen may reuse it. */
	__atomic_store_n(&tb->cons, (uint32_t)ncons, __ATOMIC_RELEASE);
	s->st.bytes += avail;
	return (long)avail;
}
