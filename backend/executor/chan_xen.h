/* SPDX-License-Identifier: Apache-2.0 */
/* chan_xen.h - a Xen guest's channel as its executor serves it. */
#ifndef XGPU_CHAN_XEN_H
#define XGPU_CHAN_XEN_H

#include "executor.h"

#include <stddef.h>

/* A channel over the handles xgpud made for it (execlink.h XGPU_CHAN_XEN:
 * an event-channel handle with the guest's port bound, a grant handle that
 * reaches the guest's domain alone). The region is mapped and laid out anew
 * here. Takes the descriptors it uses (setting them to -1), on failure too;
 * NULL with the reason in err. */
struct xgpu_channel *xgpu_chan_xen_open(struct xgpu_domain *dom, uint32_t id,
					const struct xgpu_link_channel *lc, int *fds, int nfds, char *err,
					size_t errlen);
/* The grant broker of an xgpud that adopted this executor (the previous
 * one's went with it): takes fd on success; -1 with errno otherwise. */
int xgpu_chan_xen_renew_broker(struct xgpu_channel *ch, int fd);

#endif
