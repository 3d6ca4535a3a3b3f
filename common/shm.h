/* SPDX-License-Identifier: Apache-2.0 */
/* shm.h - layout of one channel's shared region, and both sides' views of it.
 *
 * One region per channel (per guest process): a header page with the four
 * queues' indexes, then the slots, the tx data area (guest to Dom0) and the rx
 * data area (Dom0 to guest). The frontend lays it out and fills the header;
 * the backend copies the header once at attach, validates every size and
 * offset, and from then on uses only its own copy.
 *
 * Requests and responses share the slots: the backend writes each response
 * into its request's slot, once it has copied the request out. So a null
 * call moves one cache line to the backend and back, where a slot array for
 * each direction moved two. The slots rotate, so each side still writes a
 * line the other is polling, and the rings alone cost about twice the
 * single-line ping-pong (xgpu-bench floors: floor_ring_run_us). The request
 * and response queues keep their own indexes and thresholds; the frontend
 * reuses a slot only once it has read the slot's response, which it tracks
 * itself (it never has more requests unanswered than slots), so it never
 * reads the backend's request index to find room.
 */
#ifndef XGPU_SHM_H
#define XGPU_SHM_H

#include "queue.h"

#include <stddef.h>
#include <stdint.h>

#define XGPU_SHM_MAGIC 0x4d485358u /* "XSHM" */
#define XGPU_SHM_HEADER_SIZE 4096u
#define XGPU_SHM_MIN_DATA (64u << 10)
#define XGPU_SHM_MAX_DATA (256u << 20)
#define XGPU_SHM_MAX_SLOTS 1024u
#define XGPU_SHM_MAX_REGION (XGPU_SHM_HEADER_SIZE + XGPU_SHM_MAX_SLOTS * 128u + 2u * XGPU_SHM_MAX_DATA)

struct xgpu_shm_header {
	uint32_t magic;
	uint32_t version;   /* XGPU_PROTO_VERSION */
	uint32_t slot_size; /* XGPU_SLOT_SIZE */
	uint32_t nr_slots;  /* per ring */
	uint64_t region_size;
	uint64_t slot_off;        /* the slot array: requests, then their responses */
	uint64_t tx_off, tx_size; /* guest -> Dom0 bytes */
	uint64_t rx_off, rx_size; /* Dom0 -> guest bytes */
	struct xgpu_queue req;    /* producer: frontend */
	struct xgpu_queue rsp;    /* producer: backend */
	struct xgpu_queue tx;     /* producer: frontend */
	struct xgpu_queue rx;     /* producer: backend */
	/* Why the backend's end went away, set before it does: the
	 * cudaError_t every later call of the process gets (its domain's
	 * executor failed, timed out or was stopped), 0 if unknown. */
	_Alignas(64) _Atomic int32_t backend_end;
};

struct xgpu_shm_params {
	uint32_t nr_slots;  /* power of two */
	uint32_t data_size; /* per direction; power of two */
};

/* Bytes a region with these parameters needs (page-rounded), or 0 if the
 * parameters are out of range. */
size_t xgpu_shm_region_size(const struct xgpu_shm_params *p);

/* Frontend: lay out a zeroed region of xgpu_shm_region_size(p) bytes. */
int xgpu_shm_init(void *base, size_t size, const struct xgpu_shm_params *p);

/* Both sides' views. The frontend produces requests and tx bytes; the backend
 * produces responses and rx bytes. */
struct xgpu_shm_view {
	struct xgpu_qend req, rsp, tx, rx;
	uint32_t nr_slots;
	uint32_t data_size_tx, data_size_rx;
};

void xgpu_shm_view_frontend(void *base, struct xgpu_shm_view *v);

/* Backend: validate a region of `size` bytes the guest laid out, and build
 * the backend's view. On failure writes a reason into err and returns -1. */
int xgpu_shm_attach(void *base, size_t size, struct xgpu_shm_view *v, char *err, size_t errlen);
/* A guest's region memfd, before it is mapped: exactly size bytes and sealed
 * against shrinking and growing, so that it cannot be truncated under the
 * mapping and fault the mapper. 0, or -1 with a message. */
int xgpu_shm_check_memfd(int fd, uint64_t size, char *err, size_t errlen);

#endif
