/* SPDX-License-Identifier: Apache-2.0 */
/* execlink.h - what xgpud and a domain's executor share.
 *
 * Each domain's executor (xgpu-executor) is a process of its own. It shares
 * with xgpud two pages, each written by one side only, and a SOCK_SEQPACKET
 * link for everything that carries descriptors or happens once:
 *
 *  - the control page (struct xgpu_exec_ctl): xgpud writes the GPU slot's
 *    grant and the domain's limits. It is a memfd sealed against further
 *    writable mappings (F_SEAL_FUTURE_WRITE) before the executor sees it,
 *    so the executor can only read it;
 *  - the status page (struct xgpu_exec_status): the executor writes the
 *    slot's report, its counters and its oldest unfinished operation;
 *  - two eventfds: "wake" (xgpud to executor: granted, a message, stop) and
 *    "notify" (executor to xgpud's scheduler thread: the report changed).
 *
 * Everything xgpud reads from an executor (the status page, link messages)
 * is as hostile as a guest's ring: an executor runs guest-chosen kernels.
 * Messages are fixed structs checked for magic, type and size, every string
 * is bounded and terminated by the reader, every number is checked before it
 * names anything.
 */
#ifndef XGPU_EXECLINK_H
#define XGPU_EXECLINK_H

#include "proto.h"
#include "slot.h"
#include "stats.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define XGPU_EXEC_MAGIC 0x43455847u /* "GXEC" */
#define XGPU_EXEC_VERSION 2u
#define XGPU_EXEC_PAGE_BYTES 8192u

/* Descriptors an executor starts with (posix_spawn puts them there). */
enum {
	XGPU_EXEC_FD_LINK = 3,   /* its end of the link */
	XGPU_EXEC_FD_LISTEN = 4, /* where a restarted xgpud finds it (xgpu_exec_socket_path) */
};

struct xgpu_exec_ctl {
	uint32_t magic, version;
	uint8_t pad0[56];
	struct xgpu_slot_grant slot; /* its own cache lines */
	uint8_t pad1[64];
	_Atomic uint64_t mem_limit;    /* device memory the domain may hold */
	_Atomic uint64_t pinned_limit; /* host segments the domain may map */
	_Atomic uint64_t spin_ns;      /* spin before sleeping */
	_Atomic uint32_t stall_timeout_s;
	_Atomic uint32_t log_level;
};

/* The executor's life, as its status page says. */
enum xgpu_exec_state {
	XGPU_EXEC_STARTING = 0,
	XGPU_EXEC_SERVING,
	XGPU_EXEC_STOPPING,
};

struct xgpu_exec_status {
	uint32_t magic, version;
	uint8_t pad0[56];
	struct xgpu_slot_report slot;
	uint8_t pad1[64];
	/* When the domain's oldest unfinished device operation began
	 * (CLOCK_MONOTONIC ns), 0 when none: xgpud's kernel timeout. */
	_Atomic uint64_t busy_since_ns;
	_Atomic uint32_t state; /* enum xgpu_exec_state */
	_Atomic int32_t sticky_error;
	_Atomic uint32_t channels;
	uint32_t reserved;
	struct xgpu_dom_stats stats;
};

_Static_assert(sizeof(struct xgpu_exec_ctl) <= XGPU_EXEC_PAGE_BYTES, "control page too small");
_Static_assert(sizeof(struct xgpu_exec_status) <= XGPU_EXEC_PAGE_BYTES, "status page too small");

/* ---- the link ---------------------------------------------------------------- */

enum xgpu_link_type {
	/* xgpud to executor */
	XGPU_LINK_START = 1, /* fds: control page, status page, wake, notify, [log] */
	XGPU_LINK_CHANNEL,   /* a new channel; fds by transport (struct xgpu_link_channel) */
	XGPU_LINK_CLOSE,     /* close channel chan_id (text: why) */
	XGPU_LINK_STOP,      /* close every channel and exit (text: why) */
	XGPU_LINK_ADOPT,     /* on a connection to the listening socket: hand yourself over */
	/* executor to xgpud */
	XGPU_LINK_READY,     /* serving (text: what it runs on, its sandbox) */
	XGPU_LINK_CLOSED,    /* channel chan_id ended (text: why) */
	XGPU_LINK_FAULT,     /* its device context failed with code; it exits (text: the call) */
	XGPU_LINK_ADOPTING,  /* answer to ADOPT: fds: status page, wake, notify */
	XGPU_LINK_HELD,      /* one of its channels, for an adopting xgpud; fds by transport */
	XGPU_LINK_HELD_DONE, /* that was all its channels */
	/* xgpud to executor, after an adoption: the executor's end of a new
	 * grant broker for Xen channel chan_id (real Xen; fds: the socket) */
	XGPU_LINK_BROKER,
};

/* The channel kinds an executor serves (the transport that opened them). */
enum xgpu_link_chan_kind {
	XGPU_CHAN_LOCAL = 1, /* fds: the guest's socket, its region memfd */
	/* fds: the channel's event-channel handle's (xen.evt_fds of them), then
	 * its grant handle's (xenif.h: reaching domain xen.domid alone) */
	XGPU_CHAN_XEN,
};

/* The most descriptors a channel comes with. */
#define XGPU_LINK_CHAN_FDS 4

/* XGPU_CHAN_XEN: what the guest published (xenvgpu.h) and xgpud checked,
 * the local port xgpud bound on the event-channel handle, and how many of
 * the descriptors are that handle's. */
struct xgpu_link_xen {
	uint32_t impl; /* enum xgpu_xen_impl */
	uint32_t domid, ring_ref, ring_pages, port;
	uint32_t evt_fds;
	uint32_t n, guest_port, task; /* the vgpu channel number, its event-channel key */
	uint32_t reserved;
};

struct xgpu_link_channel {
	uint32_t kind; /* enum xgpu_link_chan_kind */
	uint32_t task;
	int32_t pid; /* a local guest's pid (SO_PEERCRED), 0 under Xen */
	uint32_t uid;
	uint64_t region_size;
	struct xgpu_link_xen xen;
};

/* START: who the executor serves. */
struct xgpu_link_start {
	char domain[XGPU_DOMAIN_NAME_MAX];
	uint32_t domid;
	int32_t gpu;        /* the device ordinal in the executor's driver */
	uint32_t xgpud_uid; /* who may adopt it (besides root) */
	uint32_t ntasks;    /* task weights inside the domain (wfq) */
	struct {
		uint32_t task, weight;
	} tasks[16];
};

/* ADOPTING: what an adopting xgpud needs beyond the control page's record. */
struct xgpu_link_adopting {
	int32_t pid;
	uint32_t nchannels;
	int32_t sticky_error;
	uint32_t reserved;
};

#define XGPU_LINK_TEXT 256u

struct xgpu_link_msg {
	uint32_t magic; /* XGPU_EXEC_MAGIC */
	uint32_t type;  /* enum xgpu_link_type */
	uint32_t chan_id;
	int32_t code; /* a cudaError_t where the type has one */
	union {
		struct xgpu_link_start start;
		struct xgpu_link_channel channel;
		struct xgpu_link_adopting adopting;
	} u;
	char text[XGPU_LINK_TEXT];
};

/* Sends msg (magic set here) with nfds descriptors; 0 or -1 with errno. */
int xgpu_link_send(int sock, uint32_t type, struct xgpu_link_msg *msg, const int *fds, int nfds);
/* Receives one message without blocking when nonblock: 1 with *msg and its
 * descriptors (at most max_fds; *nfds set), 0 at the peer's end, -1 with
 * errno (EAGAIN: none waiting; EPROTO: not a whole message of ours, its
 * descriptors closed). msg->text comes back NUL-terminated. */
int xgpu_link_recv(int sock, struct xgpu_link_msg *msg, int *fds, int *nfds, int max_fds, bool nonblock);

/* Maps a page of either kind: writable only for its writer. NULL on
 * failure. */
void *xgpu_exec_page_map(int fd, bool writable);
/* Makes a page memfd for xgpud: zeroed, sized, magic and version set, and
 * for the control page sealed so that no one else can map it writable.
 * Returns the fd and the writable mapping in *page, or -1. */
int xgpu_exec_page_create(const char *name, bool seal_writes, void **page);

/* Where an executor of domid listens for a restarted xgpud, under xgpud's
 * socket path: "<socket>.exec/<domid>". The directory alone with dir. */
int xgpu_exec_socket_path(const char *xgpud_socket, uint32_t domid, char *buf, size_t len);
int xgpu_exec_socket_dir(const char *xgpud_socket, char *buf, size_t len);

#endif
