/* SPDX-License-Identifier: Apache-2.0 */
/* host.h - the daemon core as the transports see it: the up-calls a
 * transport makes (find or adopt a domain, admit and hand over a channel,
 * pass on a control request, apply a guest's live settings) as one table the
 * core fills (xgpud_transport_host in daemon.c) and hands in when a transport
 * starts. Modelled on Xen's scheduler core, which reaches a policy only
 * through its ops: a transport never includes the core's module headers
 * (domain.h, control.h, scheduler.h, the policy registry), only the model
 * (core.h) and this table, and tools/check-includes.sh holds it to that.
 *
 * Every call is made from the main thread, as the transports' setup is;
 * a channel's I/O is its domain's executor's once it is handed over
 * (backend/executor/).
 */
#ifndef XGPU_TRANSPORT_HOST_H
#define XGPU_TRANSPORT_HOST_H

#include "core.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct xgpu_transport_host {
	void *core; /* the first argument of every call */

	/* Options fixed before any transport starts. */
	unsigned max_domains;
	unsigned max_channels_per_domain;
	/* A directory only xgpud may enter, kept across its restarts (the
	 * executors' socket directory): records that must outlive xgpud. */
	char record_dir[256];

	/* The domain named name for a local client of uid, created if needed;
	 * NULL with the reason in err if uid may not join or create it. */
	struct xgpud_domain *(*join_domain)(void *core, const char *name, uid_t uid, char *err,
					    size_t errlen);
	/* The domain of Xen guest domid, created with name and spec (which
	 * must outlive it) if needed; NULL with the reason in err. */
	struct xgpud_domain *(*adopt_xen_domain)(void *core, uint32_t domid, const char *name,
						 const struct xgpu_gpuspec *spec, char *err, size_t errlen);
	/* Drops a domain that has no channels left. */
	void (*drop_domain)(void *core, struct xgpud_domain *dom);
	/* Local domains get ids from first on, clear of a hypervisor's. */
	void (*reserve_domids_below)(void *core, uint32_t first);

	/* Whether dom may take one more channel: if so, gives ch its id and
	 * fills ack (the accepted answer to the guest's hello) and returns 0;
	 * otherwise -1 with the CUDA status and reason for the refusal. */
	int (*admit_channel)(void *core, struct xgpud_domain *dom, struct xgpud_channel *ch,
			     struct xgpu_hello_ack *ack, int *status, char *err, size_t errlen);
	/* Hands an admitted channel to its domain's executor, starting one if
	 * needed; takes h's descriptors, and h->ch is the domain's on success.
	 * -1 with the reason in err. */
	int (*add_channel)(void *core, struct xgpud_domain *dom, struct xgpud_handover *h, char *err,
			   size_t errlen);
	/* Asks dom's executor to close channel id (a Xen guest's detach):
	 * the channel's ended() follows once it is gone. */
	void (*close_channel)(void *core, struct xgpud_domain *dom, uint32_t id, const char *why);
	/* A restarted xgpud's adopted executor still serves dom's Xen
	 * channel n: the channel, its descriptors (ch->xfds) and what the
	 * executor said of it (ch->xen, to be checked), or NULL. The
	 * transport takes it (sets ch->ended) or leaves it; close_untaken
	 * then closes those left. */
	struct xgpud_channel *(*take_xen_channel)(void *core, struct xgpud_domain *dom, uint32_t n);
	void (*close_untaken)(void *core, struct xgpud_domain *dom, const char *why);
	/* Gives the executor of dom fd, its end of a new grant broker for
	 * the adopted channel chan_id (fd stays the caller's); -1 with errno. */
	int (*hand_broker)(void *core, struct xgpud_domain *dom, uint32_t chan_id, int fd);

	/* Answers a control request on conn (which it takes). */
	void (*control_request)(void *core, int conn, uid_t uid);

	/* Live settings a guest's toolstack changed; origin says where they
	 * came from in the core's log line. NULL credit or sla: unchanged. */
	void (*set_share)(void *core, struct xgpud_domain *dom, const uint32_t *credit, const double *sla,
			  const char *origin);
	/* to_default: the daemon's own limit, bytes ignored. */
	void (*set_mem_limit)(void *core, struct xgpud_domain *dom, bool to_default, uint64_t bytes,
			      const char *origin);
	/* The kernel timeout in seconds, 0 for none. */
	void (*set_kernel_timeout)(void *core, struct xgpud_domain *dom, uint32_t seconds,
				   const char *origin);

	/* Scheduling policies by name: the transport never sees one. */
	int (*gpu_count)(void *core);
	/* The registry's own spelling of name (stable for the daemon's
	 * life, so two results compare as pointers), or NULL if unknown. */
	const char *(*find_policy)(void *core, const char *name);
	const char *(*policy_names)(void *core);
	/* Switches GPU gpu to the policy named name if it runs another. */
	void (*set_policy)(void *core, int gpu, const char *name, const char *origin);
};

#endif
