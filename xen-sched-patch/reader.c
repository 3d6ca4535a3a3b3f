/* SPDX-License-Identifier: Apache-2.0 */
/* reader.c - dom0's reader of the patched credit scheduler's exported
 * schedule (reader.h, xgpu_sched_export.h).
 *
 * Open maps one frame, copies and validates the header, then maps all
 * nr_frames and checks the header again. Every later read copies each record
 * between two loads of its seq (acquire ordering), keeps the copy only when
 * both are the same even value, retries a bounded number of times, and
 * validates what it kept; the hypervisor is never waited for. The pages are
 * read with relaxed 32-bit atomic loads (a writer stores 32-bit words too), so a concurrent writer (the
 * hypervisor, or a test's thread) is never a data race in C11 terms. */
#include "reader.h"

#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <xenforeignmemory.h>
#include <xentoollog.h>

_Static_assert(XGPU_SCHEDEXP_PCPU_SIZE % 4 == 0 && XGPU_SCHEDEXP_DOM_SIZE % 4 == 0 &&
		   sizeof(struct xgpu_schedexp_header) % 4 == 0,
	       "records are copied in 32-bit words");

struct xgpu_schedexp_reader {
	const struct xgpu_schedexp_map_ops *ops;
	void *h;
	void *res;
	const unsigned char *base;
	unsigned nr_frames;
	struct xgpu_schedexp_header hdr;
	uint64_t torn, stale;
};

/* ---- copying under the seqlock ------------------------------------------------ */

static void copy_words(void *dst, const void *src, size_t len)
{
	const uint32_t *s = src;
	uint32_t *d = dst;
	for (size_t i = 0; i < len / 4; i++)
		d[i] = __atomic_load_n(&s[i], __ATOMIC_RELAXED);
}

/* The record at src (whose first member is the 32-bit seq) into dst; true
 * when a consistent copy was made. *torn counts failed attempts. */
static bool seq_copy(void *dst, const void *src, size_t len, unsigned *torn)
{
	const uint32_t *seqp = src;
	for (unsigned t = 0; t < XGPU_SCHEDEXP_RETRIES; t++) {
		uint32_t s1 = __atomic_load_n(seqp, __ATOMIC_ACQUIRE);
		if (s1 & 1u) {
			(*torn)++;
			continue;
		}
		copy_words(dst, src, len);
		atomic_thread_fence(memory_order_acquire);
		uint32_t s2 = __atomic_load_n(seqp, __ATOMIC_RELAXED);
		if (s1 == s2) {
			*(uint32_t *)dst = s1;
			return true;
		}
		(*torn)++;
	}
	return false;
}

static bool domid_ok(uint32_t domid)
{
	return domid < XGPU_SCHEDEXP_DOMID_FIRST_RESERVED || domid == XGPU_SCHEDEXP_DOMID_IDLE;
}

static bool unit_ok(const struct xgpu_schedexp_unit *u)
{
	return domid_ok(u->domid);
}

/* 1 valid, 0 never written (all zero after boot), -1 invalid. */
static int pcpu_check(const struct xgpu_schedexp_pcpu *p, unsigned idx)
{
	if (p->pcpu != idx)
		return p->seq == 0 && p->pcpu == 0 ? 0 : -1;
	if (p->nrunq > XGPU_SCHEDEXP_RUNQ || !unit_ok(&p->cur))
		return -1;
	for (unsigned i = 0; i < p->nrunq; i++)
		if (!unit_ok(&p->runq[i]))
			return -1;
	return 1;
}

static int dom_check(const struct xgpu_schedexp_dom *d, unsigned idx, unsigned ndoms)
{
	if (d->domid == XGPU_SCHEDEXP_DOMID_FREE)
		return 1;
	if (d->domid >= XGPU_SCHEDEXP_DOMID_FIRST_RESERVED)
		return -1;
	if (d->domid % ndoms != idx)
		return d->seq == 0 && d->domid == 0 ? 0 : -1; /* zeroed, never written */
	return 1;
}

void xgpu_schedexp_read(struct xgpu_schedexp_reader *r, struct xgpu_schedexp_snapshot *snap)
{
	snap->hdr = r->hdr;
	snap->torn = snap->stale = snap->invalid = 0;
	const unsigned char *pc = r->base + r->hdr.pcpu_off;
	for (unsigned i = 0; i < r->hdr.npcpus; i++) {
		struct xgpu_schedexp_pcpu c;
		bool ok = seq_copy(&c, pc + (size_t)i * XGPU_SCHEDEXP_PCPU_SIZE, sizeof c, &snap->torn);
		int v = ok ? pcpu_check(&c, i) : -1;
		if (v < 0 && ok)
			snap->invalid++;
		if (v > 0) {
			snap->pcpu[i] = c;
			snap->pcpu_valid[i] = true;
			snap->pcpu_stale[i] = false;
		} else if (v == 0) {
			snap->pcpu_valid[i] = snap->pcpu_stale[i] = false;
		} else {
			snap->pcpu_stale[i] = snap->pcpu_valid[i];
			snap->stale += snap->pcpu_valid[i];
		}
	}
	const unsigned char *dm = r->base + r->hdr.dom_off;
	for (unsigned i = 0; i < r->hdr.ndoms; i++) {
		struct xgpu_schedexp_dom c;
		bool ok = seq_copy(&c, dm + (size_t)i * XGPU_SCHEDEXP_DOM_SIZE, sizeof c, &snap->torn);
		int v = ok ? dom_check(&c, i, r->hdr.ndoms) : -1;
		if (v < 0 && ok)
			snap->invalid++;
		if (v > 0) {
			snap->dom[i] = c;
			snap->dom_valid[i] = true;
			snap->dom_stale[i] = false;
		} else if (v == 0) {
			snap->dom_valid[i] = snap->dom_stale[i] = false;
		} else {
			snap->dom_stale[i] = snap->dom_valid[i];
			snap->stale += snap->dom_valid[i];
		}
	}
	r->torn += snap->torn;
	r->stale += snap->stale;
}

void xgpu_schedexp_counters(const struct xgpu_schedexp_reader *r, uint64_t *torn, uint64_t *stale)
{
	if (torn)
		*torn = r->torn;
	if (stale)
		*stale = r->stale;
}

const struct xgpu_schedexp_header *xgpu_schedexp_header(const struct xgpu_schedexp_reader *r)
{
	return &r->hdr;
}

/* ---- the header ------------------------------------------------------------------ */

static bool area_ok(uint64_t off, uint64_t n, uint64_t size, uint64_t total)
{
	return off % 8 == 0 && off >= sizeof(struct xgpu_schedexp_header) && off + n * size <= total;
}

int xgpu_schedexp_check_header(const struct xgpu_schedexp_header *h, unsigned avail_frames, char *err,
			       size_t errlen)
{
	if (h->magic != XGPU_SCHEDEXP_MAGIC) {
		snprintf(err, errlen, "bad magic 0x%08x (expected 0x%08x)", h->magic, XGPU_SCHEDEXP_MAGIC);
		return -1;
	}
	if (h->version != XGPU_SCHEDEXP_VERSION) {
		snprintf(err, errlen, "ABI version %u, this reader knows %u", h->version,
			 XGPU_SCHEDEXP_VERSION);
		return -1;
	}
	if (h->nr_frames < 1 || h->nr_frames > XGPU_SCHEDEXP_MAX_FRAMES) {
		snprintf(err, errlen, "nr_frames %u outside 1..%u", h->nr_frames, XGPU_SCHEDEXP_MAX_FRAMES);
		return -1;
	}
	if (avail_frames && h->nr_frames > avail_frames) {
		snprintf(err, errlen, "nr_frames %u but only %u mapped", h->nr_frames, avail_frames);
		return -1;
	}
	if (h->npcpus < 1 || h->npcpus > XGPU_SCHEDEXP_MAX_PCPUS) {
		snprintf(err, errlen, "npcpus %u outside 1..%u", h->npcpus, XGPU_SCHEDEXP_MAX_PCPUS);
		return -1;
	}
	if (h->ndoms > XGPU_SCHEDEXP_MAX_DOMS) {
		snprintf(err, errlen, "ndoms %u above %u", h->ndoms, XGPU_SCHEDEXP_MAX_DOMS);
		return -1;
	}
	uint64_t total = (uint64_t)h->nr_frames * XGPU_SCHEDEXP_PAGE;
	if (!area_ok(h->pcpu_off, h->npcpus, XGPU_SCHEDEXP_PCPU_SIZE, total)) {
		snprintf(err, errlen,
			 "PCPU records (offset %u, %u of %u bytes) outside the %u frames or misaligned",
			 h->pcpu_off, h->npcpus, XGPU_SCHEDEXP_PCPU_SIZE, h->nr_frames);
		return -1;
	}
	if (h->ndoms && !area_ok(h->dom_off, h->ndoms, XGPU_SCHEDEXP_DOM_SIZE, total)) {
		snprintf(err, errlen,
			 "domain slots (offset %u, %u of %u bytes) outside the %u frames or misaligned",
			 h->dom_off, h->ndoms, XGPU_SCHEDEXP_DOM_SIZE, h->nr_frames);
		return -1;
	}
	uint64_t p0 = h->pcpu_off, p1 = p0 + (uint64_t)h->npcpus * XGPU_SCHEDEXP_PCPU_SIZE;
	uint64_t d0 = h->dom_off, d1 = d0 + (uint64_t)h->ndoms * XGPU_SCHEDEXP_DOM_SIZE;
	if (h->ndoms && p0 < d1 && d0 < p1) {
		snprintf(err, errlen, "PCPU records [%llu, %llu) and domain slots [%llu, %llu) overlap",
			 (unsigned long long)p0, (unsigned long long)p1, (unsigned long long)d0,
			 (unsigned long long)d1);
		return -1;
	}
	return 0;
}

/* ---- open and close ---------------------------------------------------------------- */

struct xgpu_schedexp_reader *xgpu_schedexp_open_with(const struct xgpu_schedexp_map_ops *ops, void *ctx,
						     bool *absent, char *err, size_t errlen)
{
	if (absent)
		*absent = false;
	struct xgpu_schedexp_reader *r = calloc(1, sizeof *r);
	if (!r) {
		snprintf(err, errlen, "schedule export: out of memory");
		return NULL;
	}
	r->ops = ops;
	char why[256];
	r->h = ops->open(ctx, why, sizeof why);
	if (!r->h) {
		snprintf(err, errlen, "%s", why);
		if (absent)
			*absent = true;
		free(r);
		return NULL;
	}
	void *res = NULL;
	const void *p = ops->map(r->h, 1, &res);
	if (!p) {
		int e = errno;
		/* Unpatched 4.17 answers ESRCH: its acquire_resource cannot look up
		 * DOMID_XEN; other versions may say the type is unknown. */
		bool none =
		    e == EINVAL || e == EOPNOTSUPP || e == ENOENT || e == ENOTTY || e == ENOSYS || e == ESRCH;
		if (none)
			snprintf(
			    err, errlen,
			    "this hypervisor has no xgpu schedule export (unpatched Xen, or not booted with "
			    "sched=credit): XENMEM_acquire_resource type 0x%x failed: %s",
			    XGPU_SCHEDEXP_RESOURCE, strerror(e));
		else
			snprintf(
			    err, errlen,
			    "cannot map the xgpu schedule export (XENMEM_acquire_resource type 0x%x): %s%s",
			    XGPU_SCHEDEXP_RESOURCE, strerror(e), e == EPERM ? " (run as root in dom0)" : "");
		if (absent)
			*absent = none;
		goto fail;
	}
	struct xgpu_schedexp_header h1, h2;
	copy_words(&h1, p, sizeof h1);
	ops->unmap(r->h, res, 1);
	if (xgpu_schedexp_check_header(&h1, 0, why, sizeof why)) {
		snprintf(err, errlen, "the xgpu schedule export's header is not usable: %s", why);
		goto fail;
	}
	p = ops->map(r->h, h1.nr_frames, &res);
	if (!p) {
		snprintf(err, errlen, "cannot map the xgpu schedule export's %u frames: %s", h1.nr_frames,
			 strerror(errno));
		goto fail;
	}
	copy_words(&h2, p, sizeof h2);
	if (memcmp(&h1, &h2, sizeof h1)) {
		snprintf(err, errlen, "the xgpu schedule export's header changed while it was mapped");
		ops->unmap(r->h, res, h1.nr_frames);
		goto fail;
	}
	r->res = res;
	r->base = p;
	r->nr_frames = h1.nr_frames;
	r->hdr = h1;
	return r;
fail:
	ops->close(r->h);
	free(r);
	return NULL;
}

void xgpu_schedexp_close(struct xgpu_schedexp_reader *r)
{
	if (!r)
		return;
	r->ops->unmap(r->h, r->res, r->nr_frames);
	r->ops->close(r->h);
	free(r);
}

/* ---- a memory region (tests) --------------------------------------------------------- */

struct mem_region {
	const void *base;
	size_t len;
};

static void *mem_open(void *ctx, char *err, size_t errlen)
{
	return ctx;
}

static void mem_close(void *h)
{
	free(h);
}

static const void *mem_map(void *h, unsigned nr_frames, void **res)
{
	const struct mem_region *m = h;
	if ((uint64_t)nr_frames * XGPU_SCHEDEXP_PAGE > m->len) {
		errno = ERANGE;
		return NULL;
	}
	*res = NULL;
	return m->base;
}

static void mem_unmap(void *h, void *res, unsigned nr_frames)
{
}

static const struct xgpu_schedexp_map_ops mem_ops = {
    .open = mem_open, .close = mem_close, .map = mem_map, .unmap = mem_unmap};

struct xgpu_schedexp_reader *xgpu_schedexp_open_mem(const void *base, size_t len, char *err, size_t errlen)
{
	if (!base || (uintptr_t)base % 8) {
		snprintf(err, errlen, "schedule export: region missing or not 8-byte aligned");
		return NULL;
	}
	struct mem_region *m = malloc(sizeof *m);
	if (!m) {
		snprintf(err, errlen, "schedule export: out of memory");
		return NULL;
	}
	*m = (struct mem_region){base, len};
	struct xgpu_schedexp_reader *r = xgpu_schedexp_open_with(&mem_ops, m, NULL, err, errlen);
	/* On failure open_with has closed (freed) m already. */
	return r;
}

/* ---- libxenforeignmemory ---------------------------------------------------------------- */

static void quiet_vmessage(struct xentoollog_logger *lg, xentoollog_level level, int errnoval,
			   const char *context, const char *format, va_list al)
{
}

static void quiet_destroy(struct xentoollog_logger *lg)
{
}

/* The library logs failures to stderr; the caller's message is the one to read. */
static struct xentoollog_logger quiet_logger = {.vmessage = quiet_vmessage, .destroy = quiet_destroy};

static bool exists(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0;
}

static void *real_open(void *ctx, char *err, size_t errlen)
{
	xenforeignmemory_handle *f = xenforeignmemory_open(&quiet_logger, 0);
	if (f)
		return f;
	int e = errno;
	if (!exists("/dev/xen/privcmd") && !exists("/proc/xen/privcmd"))
		snprintf(
		    err, errlen,
		    "cannot map the xgpu schedule export: neither /dev/xen/privcmd nor /proc/xen/privcmd "
		    "exists: not running in a Xen dom0 (load xen-privcmd or mount xenfs on /proc/xen)");
	else
		snprintf(err, errlen,
			 "cannot open /dev/xen/privcmd (xenforeignmemory_open): %s (run as root in dom0)",
			 strerror(e ? e : EIO));
	errno = e;
	return NULL;
}

static void real_close(void *h)
{
	xenforeignmemory_close(h);
}

static const void *real_map(void *h, unsigned nr_frames, void **res)
{
	void *addr = NULL;
	xenforeignmemory_resource_handle *fres = xenforeignmemory_map_resource(
	    h, XGPU_SCHEDEXP_DOMID_XEN, XGPU_SCHEDEXP_RESOURCE, 0, 0, nr_frames, &addr, PROT_READ, 0);
	if (!fres)
		return NULL;
	*res = fres;
	return addr;
}

static void real_unmap(void *h, void *res, unsigned nr_frames)
{
	if (res)
		xenforeignmemory_unmap_resource(h, res);
}

const struct xgpu_schedexp_map_ops xgpu_schedexp_map_real = {
    .open = real_open, .close = real_close, .map = real_map, .unmap = real_unmap};

struct xgpu_schedexp_reader *xgpu_schedexp_open(bool *absent, char *err, size_t errlen)
{
	return xgpu_schedexp_open_with(&xgpu_schedexp_map_real, NULL, absent, err, errlen);
}
