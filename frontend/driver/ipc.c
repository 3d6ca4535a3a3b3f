/* SPDX-License-Identifier: Apache-2.0 */
/* ipc.c - cuIpcGetMemHandle, cuIpcOpenMemHandle, cuIpcCloseMemHandle between
 * processes of one domain (IPC_* in calls.def). The processes of a domain
 * share its executor's context, so an opened allocation has the exporter's
 * device address; the daemon admits it to the opener's memory map given the
 * token in the handle. Event handles (IPC_EVENT_* in calls.def) work alike:
 * the opener gets its own handle for the exporter's event in the executor. */
#include "allocs.h"
#include "driver.h"
#include "ipchandle.h"

CUresult cuIpcGetMemHandle(CUipcMemHandle *pHandle, CUdeviceptr dptr)
{
	struct xgpu_client *c;
	if (!pHandle || !dptr)
		return CUDA_ERROR_INVALID_VALUE;
	CUresult r = xgpu_drv_client_ctx(&c);
	if (r)
		return r;
	struct xgpu_req_IPC_EXPORT req = {.ptr = dptr};
	struct xgpu_rsp_IPC_EXPORT rsp;
	r = xgpu_drv_result(xgpu_call_IPC_EXPORT(c, &req, &rsp));
	if (!r)
		xgpu_ipc_handle_put(pHandle->reserved, rsp.base, rsp.token, rsp.size);
	return r;
}

CUresult cuIpcOpenMemHandle_v2(CUdeviceptr *pdptr, CUipcMemHandle handle, unsigned int Flags)
{
	struct xgpu_client *c;
	struct xgpu_ipc_handle h;
	if (!pdptr || (Flags & ~(unsigned)CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS) ||
	    !xgpu_ipc_handle_get(handle.reserved, &h))
		return CUDA_ERROR_INVALID_VALUE;
	CUresult r = xgpu_drv_client_ctx(&c);
	if (r)
		return r;
	struct xgpu_req_IPC_OPEN req = {.base = h.base, .token = h.token};
	struct xgpu_rsp_IPC_OPEN rsp;
	r = xgpu_drv_result(xgpu_call_IPC_OPEN(c, &req, &rsp));
	if (!r) {
		*pdptr = rsp.ptr;
		if (!xgpu_alloc_find(rsp.ptr, 0, NULL))
			xgpu_alloc_add(rsp.ptr, rsp.size, XGPU_ALLOC_DEVICE, 0);
	}
	return r;
}

CUresult cuIpcCloseMemHandle(CUdeviceptr dptr)
{
	struct xgpu_client *c;
	CUresult r = xgpu_drv_client_ctx(&c);
	if (r)
		return r;
	struct xgpu_req_IPC_CLOSE req = {.ptr = dptr};
	struct xgpu_rsp_IPC_CLOSE rsp;
	r = xgpu_drv_result(xgpu_call_IPC_CLOSE(c, &req, &rsp));
	if (!r)
		xgpu_alloc_del(dptr, XGPU_ALLOC_DEVICE);
	return r;
}

/* CUDA 4.1's ABI: the same arguments. */
#undef cuIpcOpenMemHandle
CUresult cuIpcOpenMemHandle(CUdeviceptr *pdptr, CUipcMemHandle handle, unsigned int Flags);
CUresult cuIpcOpenMemHandle(CUdeviceptr *pdptr, CUipcMemHandle handle, unsigned int Flags)
{
	return cuIpcOpenMemHandle_v2(pdptr, handle, Flags);
}

CUresult cuIpcGetEventHandle(CUipcEventHandle *pHandle, CUevent event)
{
	struct xgpu_client *c;
	if (!pHandle || !event)
		return CUDA_ERROR_INVALID_VALUE;
	CUresult r = xgpu_drv_client_ctx(&c);
	if (r)
		return r;
	struct xgpu_req_IPC_EVENT_EXPORT req = {.event = (xgpu_handle_t)(uintptr_t)event};
	struct xgpu_rsp_IPC_EVENT_EXPORT rsp;
	r = xgpu_drv_result(xgpu_call_IPC_EVENT_EXPORT(c, &req, &rsp));
	if (!r)
		xgpu_ipc_event_handle_put(pHandle->reserved, req.event, rsp.token);
	return r;
}

CUresult cuIpcOpenEventHandle(CUevent *phEvent, CUipcEventHandle handle)
{
	struct xgpu_client *c;
	struct xgpu_ipc_event_handle h;
	if (!phEvent || !xgpu_ipc_event_handle_get(handle.reserved, &h))
		return CUDA_ERROR_INVALID_VALUE;
	CUresult r = xgpu_drv_client_ctx(&c);
	if (r)
		return r;
	struct xgpu_req_IPC_EVENT_OPEN req = {.handle = h.event, .token = h.token};
	struct xgpu_rsp_IPC_EVENT_OPEN rsp;
	r = xgpu_drv_result(xgpu_call_IPC_EVENT_OPEN(c, &req, &rsp));
	if (!r)
		*phEvent = (CUevent)(uintptr_t)rsp.event;
	return r;
}
