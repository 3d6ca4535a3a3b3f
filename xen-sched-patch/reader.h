/* SPDX-License-Identifier: Apache-2.0 */
/* reader.h - dom0's reader of the schedule the patched Xen credit scheduler
 * exports (xgpu_sched_export.h): maps the pages read-only, validates the
 * header once, and takes snapshots of every PCPU record and domain slot with
 * the seqlock protocol, never blocking the hypervisor. The mapping sits behind
 * a tiny ops table so tests can hand it an ordinary memory region that a
 * test writer updates. */
#ifndef XGPU_SCHEDEXP_READER_H
#define XGPU_SCHEDEXP_READER_H

#include "xgpu_sched_export.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define XGPU_SCHEDEXP_PAGE 4096u
/* Header plus the largest record areas, rounded up to pages, with room for
 * a writer that pads: anything beyond is refused as corrupt. */
#define XGPU_SCHEDEXP_MAX_FRAMES 64u
/* Attempts at one record before its last good copy is kept as stale. */
#define XGPU_SCHEDEXP_RETRIES 64u
#define XGPU_SCHEDEXP_DOMID_FREE 0xffffu
#define XGPU_SCHEDEXP_DOMID_FIRST_RESERVED 0x7ff0u
#define XGPU_SCHEDEXP_DOMID_XEN 0x7ff2u

/* How the export is mapped. Every call that fails sets errno. */
struct xgpu_schedexp_map_ops {
	/* NULL with a message when the mapping interface is missing. */
	void *(*open)(void *ctx, char *err, size_t errlen);
	void (*close)(void *h);
	/* The first nr_frames pages of the export, read-only; *res is what
	 * unmap gets back. NULL with errno (EINVAL/EOPNOTSUPP: no such
	 * resource, i.e. an unpatched hypervisor). */
	const void *(*map)(void *h, unsigned nr_frames, void **res);
	void (*unmap)(void *h, void *res, unsigned nr_frames);
};

/* Over libxenforeignmemory: XENMEM_acquire_resource of DOMID_XEN. */
extern const struct xgpu_schedexp_map_ops xgpu_schedexp_map_real;

/* What one snapshot holds. Records are the last consistent copies: a record
 * whose read stayed torn through every retry (or whose copy was invalid)
 * keeps its previous copy and is marked stale; one never read consistently
 * is not valid. Zero it before the first read and keep passing the same
 * one, so stale records have their previous copies. */
struct xgpu_schedexp_snapshot {
	struct xgpu_schedexp_header hdr;
	struct xgpu_schedexp_pcpu pcpu[XGPU_SCHEDEXP_MAX_PCPUS];
	bool pcpu_valid[XGPU_SCHEDEXP_MAX_PCPUS];
	bool pcpu_stale[XGPU_SCHEDEXP_MAX_PCPUS];
	struct xgpu_schedexp_dom dom[XGPU_SCHEDEXP_MAX_DOMS];
	bool dom_valid[XGPU_SCHEDEXP_MAX_DOMS]; /* a consistent copy (possibly a free slot) */
	bool dom_stale[XGPU_SCHEDEXP_MAX_DOMS];
	/* This read: */
	unsigned torn;    /* attempts that saw an odd or changing seq */
	unsigned stale;   /* records that kept an older copy */
	unsigned invalid; /* consistent copies refused by validation */
};

struct xgpu_schedexp_reader;

/* The hypervisor's export. NULL with a message; *absent (if given) tells
 * whether the export does not exist here (no privcmd, or an unpatched or
 * non-credit hypervisor) as opposed to a broken one. */
struct xgpu_schedexp_reader *xgpu_schedexp_open(bool *absent, char *err, size_t errlen);
/* The same through other mapping ops (ctx is passed to ops->open). */
struct xgpu_schedexp_reader *xgpu_schedexp_open_with(const struct xgpu_schedexp_map_ops *ops, void *ctx,
						     bool *absent, char *err, size_t errlen);
/* A caller's memory region of len bytes laid out as the export (tests). */
struct xgpu_schedexp_reader *xgpu_schedexp_open_mem(const void *base, size_t len, char *err, size_t errlen);
void xgpu_schedexp_close(struct xgpu_schedexp_reader *r);

/* The validated header, copied at open. */
const struct xgpu_schedexp_header *xgpu_schedexp_header(const struct xgpu_schedexp_reader *r);

/* Checks a header against the ABI and a mapping of avail_frames pages
 * (0: do not check nr_frames against it); 0, or -1 with a message. */
int xgpu_schedexp_check_header(const struct xgpu_schedexp_header *h, unsigned avail_frames, char *err,
			       size_t errlen);

/* Updates snap from the pages; never blocks and never fails (a record that
 * cannot be read consistently is reported stale). */
void xgpu_schedexp_read(struct xgpu_schedexp_reader *r, struct xgpu_schedexp_snapshot *snap);

/* Torn attempts and stale records since open. */
void xgpu_schedexp_counters(const struct xgpu_schedexp_reader *r, uint64_t *torn, uint64_t *stale);

#endif
