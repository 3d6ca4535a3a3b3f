/* SPDX-License-Identifier: Apache-2.0 */
/* ipchandle.h - the 64 bytes of a CUipcMemHandle / cudaIpcMemHandle_t as
 * xgpu fills them, for both frontends: a magic, the allocation's base and
 * size, and the daemon's token for it (IPC_EXPORT in calls.def). An event
 * handle (CUipcEventHandle) holds another magic, the exporter's event handle
 * in the domain's table and its token (IPC_EVENT_EXPORT). The daemon checks
 * both against its own table: the bytes come from another process. */
#ifndef XGPU_FE_IPCHANDLE_H
#define XGPU_FE_IPCHANDLE_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#define XGPU_IPC_MAGIC "xgpuipcm"

struct xgpu_ipc_handle {
	char magic[8];
	uint64_t base, token, size;
};
_Static_assert(sizeof(struct xgpu_ipc_handle) <= 64, "fits CU_IPC_HANDLE_SIZE");

static inline void xgpu_ipc_handle_put(char out[64], uint64_t base, uint64_t token, uint64_t size)
{
	struct xgpu_ipc_handle h;
	memcpy(h.magic, XGPU_IPC_MAGIC, 8);
	h.base = base;
	h.token = token;
	h.size = size;
	memset(out, 0, 64);
	memcpy(out, &h, sizeof h);
}

static inline bool xgpu_ipc_handle_get(const char in[64], struct xgpu_ipc_handle *h)
{
	memcpy(h, in, sizeof *h);
	return !memcmp(h->magic, XGPU_IPC_MAGIC, 8) && h->base && h->token;
}

#define XGPU_IPC_EVENT_MAGIC "xgpuipce"

struct xgpu_ipc_event_handle {
	char magic[8];
	uint64_t event, token;
};
_Static_assert(sizeof(struct xgpu_ipc_event_handle) <= 64, "fits CU_IPC_HANDLE_SIZE");

static inline void xgpu_ipc_event_handle_put(char out[64], uint64_t event, uint64_t token)
{
	struct xgpu_ipc_event_handle h;
	memcpy(h.magic, XGPU_IPC_EVENT_MAGIC, 8);
	h.event = event;
	h.token = token;
	memset(out, 0, 64);
	memcpy(out, &h, sizeof h);
}

static inline bool xgpu_ipc_event_handle_get(const char in[64], struct xgpu_ipc_event_handle *h)
{
	memcpy(h, in, sizeof *h);
	return !memcmp(h->magic, XGPU_IPC_EVENT_MAGIC, 8) && h->event && h->token;
}

#endif
