/* SPDX-License-Identifier: Apache-2.0 */
/* domain.h - domains: finding or creating them, handing them channels,
 * removing them (main thread; control threads read under domains_lock). */
#ifndef XGPU_DOMAIN_H
#define XGPU_DOMAIN_H

#include "core.h"
#include "gpuspec.h"

#include <stddef.h>
#include <sys/types.h>

/* Finds the domain named name, creating it if needed. Names of the form
 * uid-N belong to uid N alone; other names to the uid that created them
 * (root may join any domain by name). Returns NULL with a reason in err if
 * uid may not join or create it. */
struct xgpud_domain *xgpu_domain_get(struct xgpud *d, const char *name, uid_t uid, char *err, size_t errlen);
/* The domain of Xen guest domid, creating it (owned by root) with name (or
 * "dom<domid>" when the name is bad or taken) and spec's settings (NULL:
 * its --config entry) if needed. spec must outlive the domain. NULL with a
 * reason in err. */
struct xgpud_domain *xgpu_domain_get_xen(struct xgpud *d, uint32_t domid, const char *name,
					 const struct xgpu_gpuspec *spec, char *err, size_t errlen);
/* Recreates a domain the previous xgpud left (state.h); 0 or -1 with a log
 * line. */
struct xgpu_state_record;
int xgpu_domain_restore(struct xgpud *d, const struct xgpu_state_record *r);
/* Drops a domain (a Xen guest's that went away): its executor, if any, is
 * ended; then it is unlisted and freed. */
void xgpu_domain_remove(struct xgpud *d, struct xgpud_domain *dom);
/* Hands a new channel to the domain's executor, starting one if needed;
 * takes h's descriptors. -1 with the reason in err. */
int xgpu_domain_add_channel(struct xgpud_domain *dom, struct xgpud_handover *h, char *err, size_t errlen);
/* Frees every domain (xgpud's end, after its executors). */
void xgpu_domain_free_all(struct xgpud *d);

#endif
