/* SPDX-License-Identifier: Apache-2.0 */
/* domain.h - domains: finding or creating them, handing them channels,
 * stopping and freeing them (main thread). */
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
struct xgpu_domain *xgpu_domain_get(struct xgpud *d, const char *name, uid_t uid, char *err, size_t errlen);
/* The domain of Xen guest domid, creating it (owned by root) with name (or
 * "dom<domid>" when the name is bad or taken) and spec's settings (NULL:
 * its --config entry) if needed. spec must outlive the domain (the poller
 * reads its task weights). NULL with a reason in err. */
struct xgpu_domain *xgpu_domain_get_xen(struct xgpud *d, uint32_t domid, const char *name,
					const struct xgpu_gpuspec *spec, char *err, size_t errlen);
/* Drops a domain that has no channels left: unlists it, stops its poller
 * and frees it (main thread). */
void xgpu_domain_remove(struct xgpud *d, struct xgpu_domain *dom);
/* Hands a new channel to its domain's poller, starting the poller if the
 * domain had none. Returns -1 if no thread could be started. */
int xgpu_domain_add_channel(struct xgpu_domain *dom, struct xgpu_channel *ch);
void xgpu_domain_wake(struct xgpu_domain *dom);
void xgpu_domain_stop(struct xgpu_domain *dom);
void xgpu_domain_free(struct xgpu_domain *dom);

#endif
