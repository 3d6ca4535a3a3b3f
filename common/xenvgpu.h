/* SPDX-License-Identifier: Apache-2.0 */
/* xenvgpu.h - the vgpu split device's ABI between a guest's frontend library
 * and xgpud in dom0: the xenstore layout (BRIEF section 4), the xenbus states
 * each side walks, and the layout of the grant-shared root page that
 * describes a channel's region.
 *
 * Device (written by `xl-gpu attach`, adopted by xgpud):
 *   /local/domain/0/backend/vgpu/<domid>/<devid>/  (dom0's; the guest may read)
 *       frontend, frontend-id, state, gpus, credit, sla, mem-limit
 *       channel/<n>/state            backend's state of channel n
 *       channel/<n>/error            why the backend refused or closed it
 *   /local/domain/<domid>/device/vgpu/<devid>/     (the guest's to write)
 *       backend, backend-id, state
 *       channel/<n>/{state, ring-ref, ring-pages, event-channel, task, protocol}
 *   /local/domain/0/backend/vgpu/policy            policy of every GPU
 *   /local/domain/0/backend/vgpu/gpu/<g>/policy    policy of GPU g (wins)
 *
 * Device states: attach writes Initialising on both sides; xgpud moves the
 * backend to InitWait when it adopts the device and to Connected once the
 * frontend says Connected (the guest library does on first use); detach
 * writes backend Closing, xgpud tears the device down and answers Closed.
 *
 * Channel n (one per guest process), every step by watch:
 *   guest    creates channel/<n>/state = Initialising (n free on both sides)
 *   xgpud    backend channel/<n>/state = InitWait
 *   guest    binds an unbound event channel for dom0, shares the region and
 *            its root page, writes ring-ref, ring-pages, event-channel, task,
 *            protocol, then state = Initialised
 *   xgpud    validates, binds, maps, answers in the root page's ack, then
 *            backend state = Connected (or Closed with channel/<n>/error)
 *   guest    state = Connected
 *   guest    state = Closing when the process closes the channel; xgpud
 *            unmaps, unbinds and answers Closed; the guest removes its
 *            channel/<n>, xgpud then removes its own channel/<n>.
 * A state out of this order, a change to ring-ref, ring-pages or
 * event-channel after Initialised, or a bad value closes that channel alone.
 * Process death: the root page was shared with an unmap notification that
 * clears fe_alive and signals the channel's port; xgpud closes the channel
 * and removes both channel/<n> directories. Domain death (@releaseDomain):
 * xgpud drops the domain and its backend directory.
 */
#ifndef XGPU_XENVGPU_H
#define XGPU_XENVGPU_H

#include "proto.h"
#include "xenif.h"

#include <stdint.h>

#define XGPU_XS_BACKEND_ROOT "/local/domain/0/backend/vgpu"
#define XGPU_XS_POLICY XGPU_XS_BACKEND_ROOT "/policy"
/* XGPU_XS_BACKEND_ROOT "/gpu/<g>/policy" per GPU */

/* enum xenbus_state of xen/io/xenbus.h */
enum xgpu_xenbus_state {
	XGPU_XB_UNKNOWN = 0,
	XGPU_XB_INITIALISING = 1,
	XGPU_XB_INITWAIT = 2,
	XGPU_XB_INITIALISED = 3,
	XGPU_XB_CONNECTED = 4,
	XGPU_XB_CLOSING = 5,
	XGPU_XB_CLOSED = 6,
};

#define XGPU_XEN_MAX_DEVS 1u                 /* devid 0 only, for now */
#define XGPU_XEN_MAX_CHANNELS 64u            /* per device: n in [0, 64) */
#define XGPU_XEN_MAX_EVTCHN 131071u          /* highest port number accepted (FIFO ABI) */
#define XGPU_XEN_MAX_REGION_PAGES (1u << 18) /* 1 GiB: the largest channel region or segment */
#define XGPU_XEN_REFS_PER_DIR (XGPU_XEN_PAGE_SIZE / 4u)

#define XGPU_XEN_ROOT_MAGIC 0x44524758u /* "XGRD" */

/* The root page of a shared region (a channel's, or a host segment's):
 * shared by the guest, mapped by xgpud. It lists ndir directory pages, each
 * holding XGPU_XEN_REFS_PER_DIR refs of region pages in order; the last one
 * only npages % REFS_PER_DIR (or all) of them. Everything in it but ack
 * and be_alive is the guest's and is copied before use. */
struct xgpu_xen_root {
	uint32_t magic;   /* XGPU_XEN_ROOT_MAGIC */
	uint32_t version; /* XGPU_PROTO_VERSION */
	uint32_t npages;  /* region pages; equals ring-pages for a channel */
	uint32_t ndir;    /* ceil(npages / XGPU_XEN_REFS_PER_DIR) */
	/* 1 while the guest process lives: its share of this page carries an
	 * unmap notification that clears it (and signals the channel's port). */
	uint8_t fe_alive;
	/* 1 while xgpud maps the channel: its map of this page carries an unmap
	 * notification that clears it. */
	uint8_t be_alive;
	uint8_t reserved[6];
	struct xgpu_hello hello;   /* guest -> dom0; hello.task equals the task key */
	struct xgpu_hello_ack ack; /* dom0 -> guest, valid once the backend says Connected */
	uint32_t dir_refs[];       /* ndir refs */
};

#define XGPU_XEN_ROOT_FE_ALIVE_OFFSET 16u
#define XGPU_XEN_ROOT_BE_ALIVE_OFFSET 17u
#define XGPU_XEN_ROOT_MAX_DIRS ((XGPU_XEN_PAGE_SIZE - sizeof(struct xgpu_xen_root)) / sizeof(uint32_t))

_Static_assert(__builtin_offsetof(struct xgpu_xen_root, fe_alive) == XGPU_XEN_ROOT_FE_ALIVE_OFFSET,
	       "fe_alive offset is ABI");
_Static_assert(__builtin_offsetof(struct xgpu_xen_root, be_alive) == XGPU_XEN_ROOT_BE_ALIVE_OFFSET,
	       "be_alive offset is ABI");
_Static_assert(XGPU_XEN_ROOT_MAX_DIRS *XGPU_XEN_REFS_PER_DIR >= XGPU_XEN_MAX_REGION_PAGES,
	       "one root page must describe the largest region");

#endif
