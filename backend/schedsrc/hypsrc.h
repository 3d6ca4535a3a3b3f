/* SPDX-License-Identifier: Apache-2.0 */
/* hypsrc.h - hypervisor schedule sources: what the CPU scheduler runs now and
 * next, and each domain's CPU weight, for the coordinated GPU policies (xc,
 * augc, cosched; BRIEF section 6, Pegasus Algorithm 2).
 *
 * One interface, several sources: `sim` (a deterministic simulated Xen credit
 * scheduler), `local` (Linux threads of a domain's client processes), `xen`
 * (stock Xen, polled through libxenctrl; hypsrc_xen.c), `xenpatch` (the
 * patched credit scheduler's export; hypsrc_xenpatch.c) and `xentrace` (stock
 * Xen's trace buffers: scheduler switch records; hypsrc_xentrace.c). A source
 * is used by one GPU scheduler thread at a
 * time and needs no locking of its own.
 */
#ifndef XGPU_HYPSRC_H
#define XGPU_HYPSRC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Xen credit scheduler's defaults, used by every source as the common scale. */
#define XGPU_HYP_DEFAULT_WEIGHT 256u
#define XGPU_HYP_MAX_WEIGHT 65535u
#define XGPU_HYP_MAX_ENTRIES 256u /* PCPUs (running and next) in one snapshot */

/* One VCPU the hypervisor runs now, or will run next, on a PCPU. */
struct xgpu_hyp_entry {
	uint32_t domid;
	uint32_t vcpu;
	uint32_t pcpu;
	int32_t credit; /* credit the VCPU has left (Xen credit units; may be negative) */
	bool running;   /* on the PCPU now; false: at the head of its run queue (upcoming) */
};

/* The schedule as of one refresh: at most one running and a few upcoming
 * entries per PCPU, so its size is bounded by the host, not by the number of
 * domains. */
struct xgpu_hyp_snapshot {
	uint64_t seq; /* changes whenever the source's view changes */
	uint64_t now_ns;
	unsigned n;
	struct xgpu_hyp_entry e[XGPU_HYP_MAX_ENTRIES];
};

struct xgpu_hyp;

struct xgpu_hyp_ops {
	const char *name;
	const char *description;
	/* args: the part after "NAME:" in --hyp-source (may be NULL). */
	int (*open)(const char *args, struct xgpu_hyp **out, char *err, size_t errlen);
	void (*close)(struct xgpu_hyp *h);
	/* A domain the GPU scheduler knows, by the id it uses in snapshots.
	 * Local mode also tells which processes make up the domain. */
	void (*track)(struct xgpu_hyp *h, uint32_t domid);
	void (*untrack)(struct xgpu_hyp *h, uint32_t domid);
	void (*set_pids)(struct xgpu_hyp *h, uint32_t domid, const pid_t *pids, unsigned n);
	/* Brings the view up to now_ns (virtual or real) and fills snap. */
	int (*refresh)(struct xgpu_hyp *h, uint64_t now_ns, struct xgpu_hyp_snapshot *snap);
	/* The domain's CPU weight and cap (0 = none) as of the last refresh;
	 * -1 if the source does not know the domain. */
	int (*weight)(struct xgpu_hyp *h, uint32_t domid, uint32_t *weight, uint32_t *cap);
};

/* What a source last published, kept by xgpu_hyp_publish. */
struct xgpu_hyp_published {
	uint64_t seq;
	unsigned n;
	struct xgpu_hyp_entry e[XGPU_HYP_MAX_ENTRIES];
};

/* Ends every source's refresh: snap->e[0..n) hold the entries; snap->seq
 * moves when they differ from the view's, or when changed says something
 * outside the entries (a weight) did. */
void xgpu_hyp_publish(struct xgpu_hyp_published *v, struct xgpu_hyp_snapshot *snap, unsigned n, bool changed,
		      uint64_t now_ns);

/* A source's tracked domains, sorted by domid: elements of elem_size bytes,
 * each starting with its uint32_t domid. Adding or removing moves the
 * elements after it, so pointers into v last until the next change. */
struct xgpu_hyp_domset {
	void *v;
	size_t n, cap, elem_size;
};

void *xgpu_hyp_domset_find(const struct xgpu_hyp_domset *s, uint32_t domid);
/* Adds domid's element, zeroed but for its domid: 1 if added, 0 if it was
 * there already, -1 if out of memory. */
int xgpu_hyp_domset_add(struct xgpu_hyp_domset *s, uint32_t domid);
void xgpu_hyp_domset_remove(struct xgpu_hyp_domset *s, uint32_t domid);
void xgpu_hyp_domset_free(struct xgpu_hyp_domset *s);

/* "NAME" or "NAME:ARGS"; NULL with a message naming the known sources. */
const struct xgpu_hyp_ops *xgpu_hyp_find(const char *spec, const char **args, char *err, size_t errlen);
const char *xgpu_hyp_names(void);

extern const struct xgpu_hyp_ops xgpu_hyp_sim;
extern const struct xgpu_hyp_ops xgpu_hyp_local;
extern const struct xgpu_hyp_ops xgpu_hyp_xen;
extern const struct xgpu_hyp_ops xgpu_hyp_xenpatch;
extern const struct xgpu_hyp_ops xgpu_hyp_xentrace;

#endif
