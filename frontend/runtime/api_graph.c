/* SPDX-License-Identifier: Apache-2.0 */
/* api_graph.c - the runtime's graphs and stream capture: the driver
 * frontend's implementation (frontend/driver/graph.c, in our libcuda.so.1,
 * which this library links), so both APIs share one graph, node and capture
 * model; a cudaGraph_t is a CUgraph. What is the runtime's own here is
 * turning a kernel's host stub and arguments into the wire form (registry.c)
 * and its memcpy kinds into memory types. */
#include "runtime.h"

#include <cuda.h>
#include <string.h>

/* graph.c's entry points for the runtime (libcuda.map exports them). */
CUresult xgpu_graph_add_kernel(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, size_t ndeps,
			       xgpu_handle_t func, const uint32_t grid[3], const uint32_t block[3],
			       uint32_t shared, const void *params, uint32_t param_len);
CUresult xgpu_graph_exec_set_kernel(CUgraphExec hGraphExec, CUgraphNode node, xgpu_handle_t func,
				    const uint32_t grid[3], const uint32_t block[3], uint32_t shared,
				    const void *params, uint32_t param_len);
extern _Thread_local int xgpu_graph_from_runtime;

/* Runs a driver graph call on the runtime's terms (no cuInit or current
 * context needed) and records its result as the runtime's last error; the
 * CUresults these calls return have the numbers of their cudaError_t. */
#define RT_CALL(expr)                                                                                        \
	do {                                                                                                 \
		struct xgpu_client *c_;                                                                      \
		cudaError_t e_ = xgpu_rt_client(&c_);                                                        \
		if (e_)                                                                                      \
			return e_;                                                                           \
		xgpu_graph_from_runtime++;                                                                   \
		CUresult r_ = (expr);                                                                        \
		xgpu_graph_from_runtime--;                                                                   \
		return xgpu_rt_ret((cudaError_t)r_);                                                         \
	} while (0)

XGPU_EXPORT cudaError_t cudaDeviceGetGraphMemAttribute(int device, enum cudaGraphMemAttributeType attr,
						       void *value)
{
	RT_CALL(cuDeviceGetGraphMemAttribute(device, (CUgraphMem_attribute)attr, value));
}

XGPU_EXPORT cudaError_t cudaDeviceSetGraphMemAttribute(int device, enum cudaGraphMemAttributeType attr,
						       void *value)
{
	RT_CALL(cuDeviceSetGraphMemAttribute(device, (CUgraphMem_attribute)attr, value));
}

XGPU_EXPORT cudaError_t cudaDeviceGraphMemTrim(int device)
{
	RT_CALL(cuDeviceGraphMemTrim(device));
}

XGPU_EXPORT cudaError_t cudaGraphCreate(cudaGraph_t *pGraph, unsigned int flags)
{
	RT_CALL(cuGraphCreate(pGraph, flags));
}

XGPU_EXPORT cudaError_t cudaGraphDestroy(cudaGraph_t graph)
{
	RT_CALL(cuGraphDestroy(graph));
}

XGPU_EXPORT cudaError_t cudaGraphAddEmptyNode(cudaGraphNode_t *pGraphNode, cudaGraph_t graph,
					      const cudaGraphNode_t *pDependencies, size_t numDependencies)
{
	RT_CALL(cuGraphAddEmptyNode(pGraphNode, graph, pDependencies, numDependencies));
}

/* A runtime kernel node's wire form: the daemon's function, its shape and the
 * arguments laid out as a launch lays them out. what names the caller when
 * the node cannot be offered. */
struct kernel_node_wire {
	xgpu_handle_t remote;
	uint32_t grid[3], block[3], len;
	uint8_t params[XGPU_MAX_PARAM_BYTES];
};

static CUresult kernel_node_wire(const struct cudaKernelNodeParams *p, const char *what,
				 struct kernel_node_wire *w)
{
	if (!p || !p->func)
		return CUDA_ERROR_INVALID_VALUE;
	if (p->extra)
		return (CUresult)xgpu_unsupported(what);
	cudaError_t e = xgpu_rt_kernel_wire(p->func, p->gridDim, p->blockDim, p->kernelParams,
					    p->sharedMemBytes, &w->remote, w->params, &w->len);
	if (e)
		return (CUresult)e;
	w->grid[0] = p->gridDim.x, w->grid[1] = p->gridDim.y, w->grid[2] = p->gridDim.z;
	w->block[0] = p->blockDim.x, w->block[1] = p->blockDim.y, w->block[2] = p->blockDim.z;
	return CUDA_SUCCESS;
}

static CUresult add_kernel(cudaGraphNode_t *out, cudaGraph_t graph, const cudaGraphNode_t *deps, size_t ndeps,
			   const struct cudaKernelNodeParams *p)
{
	struct kernel_node_wire w;
	CUresult r = kernel_node_wire(p, "cudaGraphAddKernelNode (with extra)", &w);
	if (r)
		return r;
	return xgpu_graph_add_kernel(out, graph, deps, ndeps, w.remote, w.grid, w.block, p->sharedMemBytes,
				     w.params, w.len);
}

XGPU_EXPORT cudaError_t cudaGraphAddKernelNode(cudaGraphNode_t *pGraphNode, cudaGraph_t graph,
					       const cudaGraphNode_t *pDependencies, size_t numDependencies,
					       const struct cudaKernelNodeParams *pNodeParams)
{
	RT_CALL(add_kernel(pGraphNode, graph, pDependencies, numDependencies, pNodeParams));
}

/* A one-dimensional copy as the driver describes it. */
static CUresult add_copy(cudaGraphNode_t *out, cudaGraph_t graph, const cudaGraphNode_t *deps, size_t ndeps,
			 void *dst, const void *src, size_t count, enum cudaMemcpyKind kind)
{
	if (kind == cudaMemcpyDefault) {
		bool d = xgpu_rt_devmem_find((uintptr_t)dst, NULL, NULL);
		bool s = xgpu_rt_devmem_find((uintptr_t)src, NULL, NULL);
		kind = d ? (s ? cudaMemcpyDeviceToDevice : cudaMemcpyHostToDevice)
			 : (s ? cudaMemcpyDeviceToHost : cudaMemcpyHostToHost);
	}
	if (kind != cudaMemcpyHostToDevice && kind != cudaMemcpyDeviceToHost &&
	    kind != cudaMemcpyDeviceToDevice)
		return kind == cudaMemcpyHostToHost
			   ? (CUresult)xgpu_unsupported("cudaGraphAddMemcpyNode (host to host)")
			   : (CUresult)cudaErrorInvalidMemcpyDirection;
	CUDA_MEMCPY3D p;
	memset(&p, 0, sizeof p);
	p.WidthInBytes = count;
	p.Height = 1;
	p.Depth = 1;
	p.srcMemoryType = kind == cudaMemcpyHostToDevice ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
	p.dstMemoryType = kind == cudaMemcpyDeviceToHost ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
	p.srcHost = src;
	p.srcDevice = (uintptr_t)src;
	p.dstHost = dst;
	p.dstDevice = (uintptr_t)dst;
	return cuGraphAddMemcpyNode(out, graph, deps, ndeps, &p, NULL);
}

XGPU_EXPORT cudaError_t cudaGraphAddMemcpyNode1D(cudaGraphNode_t *pGraphNode, cudaGraph_t graph,
						 const cudaGraphNode_t *pDependencies, size_t numDependencies,
						 void *dst, const void *src, size_t count,
						 enum cudaMemcpyKind kind)
{
	RT_CALL(add_copy(pGraphNode, graph, pDependencies, numDependencies, dst, src, count, kind));
}

static CUresult add_copy_3d(cudaGraphNode_t *out, cudaGraph_t graph, const cudaGraphNode_t *deps,
			    size_t ndeps, const struct cudaMemcpy3DParms *p)
{
	if (!p)
		return CUDA_ERROR_INVALID_VALUE;
	if (p->srcArray || p->dstArray || p->extent.height > 1 || p->extent.depth > 1 || p->srcPos.y ||
	    p->srcPos.z || p->dstPos.y || p->dstPos.z)
		return (CUresult)xgpu_unsupported("cudaGraphAddMemcpyNode (arrays, 2D or 3D copies)");
	return add_copy(out, graph, deps, ndeps, (char *)p->dstPtr.ptr + p->dstPos.x,
			(const char *)p->srcPtr.ptr + p->srcPos.x, p->extent.width, p->kind);
}

XGPU_EXPORT cudaError_t cudaGraphAddMemcpyNode(cudaGraphNode_t *pGraphNode, cudaGraph_t graph,
					       const cudaGraphNode_t *pDependencies, size_t numDependencies,
					       const struct cudaMemcpy3DParms *pCopyParams)
{
	RT_CALL(add_copy_3d(pGraphNode, graph, pDependencies, numDependencies, pCopyParams));
}

static CUresult add_memset(cudaGraphNode_t *out, cudaGraph_t graph, const cudaGraphNode_t *deps, size_t ndeps,
			   const struct cudaMemsetParams *p)
{
	if (!p)
		return CUDA_ERROR_INVALID_VALUE;
	CUDA_MEMSET_NODE_PARAMS d = {.dst = (uintptr_t)p->dst,
				     .pitch = p->pitch,
				     .value = p->value,
				     .elementSize = p->elementSize,
				     .width = p->width,
				     .height = p->height};
	return cuGraphAddMemsetNode(out, graph, deps, ndeps, &d, NULL);
}

XGPU_EXPORT cudaError_t cudaGraphAddMemsetNode(cudaGraphNode_t *pGraphNode, cudaGraph_t graph,
					       const cudaGraphNode_t *pDependencies, size_t numDependencies,
					       const struct cudaMemsetParams *pMemsetParams)
{
	RT_CALL(add_memset(pGraphNode, graph, pDependencies, numDependencies, pMemsetParams));
}

XGPU_EXPORT cudaError_t cudaGraphAddEventRecordNode(cudaGraphNode_t *pGraphNode, cudaGraph_t graph,
						    const cudaGraphNode_t *pDependencies,
						    size_t numDependencies, cudaEvent_t event)
{
	RT_CALL(cuGraphAddEventRecordNode(pGraphNode, graph, pDependencies, numDependencies, event));
}

XGPU_EXPORT cudaError_t cudaGraphAddEventWaitNode(cudaGraphNode_t *pGraphNode, cudaGraph_t graph,
						  const cudaGraphNode_t *pDependencies,
						  size_t numDependencies, cudaEvent_t event)
{
	RT_CALL(cuGraphAddEventWaitNode(pGraphNode, graph, pDependencies, numDependencies, event));
}

XGPU_EXPORT cudaError_t cudaGraphAddChildGraphNode(cudaGraphNode_t *pGraphNode, cudaGraph_t graph,
						   const cudaGraphNode_t *pDependencies,
						   size_t numDependencies, cudaGraph_t childGraph)
{
	RT_CALL(cuGraphAddChildGraphNode(pGraphNode, graph, pDependencies, numDependencies, childGraph));
}

XGPU_EXPORT cudaError_t cudaGraphAddDependencies(cudaGraph_t graph, const cudaGraphNode_t *from,
						 const cudaGraphNode_t *to, const cudaGraphEdgeData *edgeData,
						 size_t numDependencies)
{
	RT_CALL(
	    cuGraphAddDependencies_v2(graph, from, to, (const CUgraphEdgeData *)edgeData, numDependencies));
}

XGPU_EXPORT cudaError_t cudaGraphClone(cudaGraph_t *pGraphClone, cudaGraph_t originalGraph)
{
	RT_CALL(cuGraphClone(pGraphClone, originalGraph));
}

XGPU_EXPORT cudaError_t cudaGraphGetNodes(cudaGraph_t graph, cudaGraphNode_t *nodes, size_t *numNodes)
{
	RT_CALL(cuGraphGetNodes(graph, nodes, numNodes));
}

XGPU_EXPORT cudaError_t cudaGraphNodeGetType(cudaGraphNode_t node, enum cudaGraphNodeType *pType)
{
	RT_CALL(cuGraphNodeGetType(node, (CUgraphNodeType *)pType));
}

XGPU_EXPORT cudaError_t cudaGraphChildGraphNodeGetGraph(cudaGraphNode_t node, cudaGraph_t *pGraph)
{
	RT_CALL(cuGraphChildGraphNodeGetGraph(node, pGraph));
}

XGPU_EXPORT cudaError_t cudaGraphInstantiate(cudaGraphExec_t *pGraphExec, cudaGraph_t graph,
					     unsigned long long flags)
{
	RT_CALL(cuGraphInstantiateWithFlags(pGraphExec, graph, flags));
}

XGPU_EXPORT cudaError_t cudaGraphInstantiateWithFlags(cudaGraphExec_t *pGraphExec, cudaGraph_t graph,
						      unsigned long long flags)
{
	RT_CALL(cuGraphInstantiateWithFlags(pGraphExec, graph, flags));
}

static CUresult instantiate_with_params(cudaGraphExec_t *pGraphExec, cudaGraph_t graph,
					cudaGraphInstantiateParams *p)
{
	if (!p)
		return CUDA_ERROR_INVALID_VALUE;
	CUDA_GRAPH_INSTANTIATE_PARAMS d = {.flags = p->flags, .hUploadStream = (CUstream)p->uploadStream};
	CUresult r = cuGraphInstantiateWithParams(pGraphExec, graph, &d);
	p->result_out = (enum cudaGraphInstantiateResult)d.result_out;
	p->errNode_out = d.hErrNode_out;
	return r;
}

XGPU_EXPORT cudaError_t cudaGraphInstantiateWithParams(cudaGraphExec_t *pGraphExec, cudaGraph_t graph,
						       cudaGraphInstantiateParams *instantiateParams)
{
	RT_CALL(instantiate_with_params(pGraphExec, graph, instantiateParams));
}

XGPU_EXPORT cudaError_t cudaGraphInstantiateWithParams_ptsz(cudaGraphExec_t *pGraphExec, cudaGraph_t graph,
							    cudaGraphInstantiateParams *instantiateParams)
{
	return cudaGraphInstantiateWithParams(pGraphExec, graph, instantiateParams);
}

XGPU_EXPORT cudaError_t cudaGraphLaunch(cudaGraphExec_t graphExec, cudaStream_t stream)
{
	RT_CALL(cuGraphLaunch(graphExec, (CUstream)stream));
}

XGPU_EXPORT cudaError_t cudaGraphLaunch_ptsz(cudaGraphExec_t graphExec, cudaStream_t stream)
{
	return cudaGraphLaunch(graphExec, stream);
}

XGPU_EXPORT cudaError_t cudaGraphUpload(cudaGraphExec_t graphExec, cudaStream_t stream)
{
	RT_CALL(cuGraphUpload(graphExec, (CUstream)stream));
}

XGPU_EXPORT cudaError_t cudaGraphUpload_ptsz(cudaGraphExec_t graphExec, cudaStream_t stream)
{
	return cudaGraphUpload(graphExec, stream);
}

static CUresult exec_set_kernel(cudaGraphExec_t exec, cudaGraphNode_t node,
				const struct cudaKernelNodeParams *p)
{
	struct kernel_node_wire w;
	CUresult r = kernel_node_wire(p, "cudaGraphExecKernelNodeSetParams (with extra)", &w);
	if (r)
		return r;
	return xgpu_graph_exec_set_kernel(exec, node, w.remote, w.grid, w.block, p->sharedMemBytes, w.params,
					  w.len);
}

XGPU_EXPORT cudaError_t cudaGraphExecKernelNodeSetParams(cudaGraphExec_t hGraphExec, cudaGraphNode_t node,
							 const struct cudaKernelNodeParams *pNodeParams)
{
	RT_CALL(exec_set_kernel(hGraphExec, node, pNodeParams));
}

XGPU_EXPORT cudaError_t cudaGraphExecUpdate(cudaGraphExec_t hGraphExec, cudaGraph_t hGraph,
					    cudaGraphExecUpdateResultInfo *resultInfo)
{
	RT_CALL(cuGraphExecUpdate_v2(hGraphExec, hGraph, (CUgraphExecUpdateResultInfo *)resultInfo));
}

XGPU_EXPORT cudaError_t cudaGraphExecDestroy(cudaGraphExec_t graphExec)
{
	RT_CALL(cuGraphExecDestroy(graphExec));
}

/* ---- stream capture ------------------------------------------------------ */

XGPU_EXPORT cudaError_t cudaStreamBeginCapture(cudaStream_t stream, enum cudaStreamCaptureMode mode)
{
	RT_CALL(cuStreamBeginCapture_v2((CUstream)stream, (CUstreamCaptureMode)mode));
}

XGPU_EXPORT cudaError_t cudaStreamBeginCapture_ptsz(cudaStream_t stream, enum cudaStreamCaptureMode mode)
{
	return cudaStreamBeginCapture(stream, mode);
}

XGPU_EXPORT cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t *pGraph)
{
	RT_CALL(cuStreamEndCapture((CUstream)stream, pGraph));
}

XGPU_EXPORT cudaError_t cudaStreamEndCapture_ptsz(cudaStream_t stream, cudaGraph_t *pGraph)
{
	return cudaStreamEndCapture(stream, pGraph);
}

XGPU_EXPORT cudaError_t cudaStreamIsCapturing(cudaStream_t stream,
					      enum cudaStreamCaptureStatus *pCaptureStatus)
{
	RT_CALL(cuStreamIsCapturing((CUstream)stream, (CUstreamCaptureStatus *)pCaptureStatus));
}

XGPU_EXPORT cudaError_t cudaStreamIsCapturing_ptsz(cudaStream_t stream,
						   enum cudaStreamCaptureStatus *pCaptureStatus)
{
	return cudaStreamIsCapturing(stream, pCaptureStatus);
}

XGPU_EXPORT cudaError_t cudaStreamGetCaptureInfo(cudaStream_t stream,
						 enum cudaStreamCaptureStatus *captureStatus_out,
						 unsigned long long *id_out, cudaGraph_t *graph_out,
						 const cudaGraphNode_t **dependencies_out,
						 const cudaGraphEdgeData **edgeData_out,
						 size_t *numDependencies_out)
{
	RT_CALL(cuStreamGetCaptureInfo_v3((CUstream)stream, (CUstreamCaptureStatus *)captureStatus_out,
					  (cuuint64_t *)id_out, graph_out, dependencies_out,
					  (const CUgraphEdgeData **)edgeData_out, numDependencies_out));
}

XGPU_EXPORT cudaError_t cudaStreamGetCaptureInfo_ptsz(cudaStream_t stream,
						      enum cudaStreamCaptureStatus *captureStatus_out,
						      unsigned long long *id_out, cudaGraph_t *graph_out,
						      const cudaGraphNode_t **dependencies_out,
						      const cudaGraphEdgeData **edgeData_out,
						      size_t *numDependencies_out)
{
	return cudaStreamGetCaptureInfo(stream, captureStatus_out, id_out, graph_out, dependencies_out,
					edgeData_out, numDependencies_out);
}

XGPU_EXPORT cudaError_t cudaThreadExchangeStreamCaptureMode(enum cudaStreamCaptureMode *mode)
{
	RT_CALL(cuThreadExchangeStreamCaptureMode((CUstreamCaptureMode *)mode));
}

/* Host nodes: cudaHostNodeParams has the driver's layout. */
_Static_assert(sizeof(struct cudaHostNodeParams) == sizeof(CUDA_HOST_NODE_PARAMS), "one host node layout");

XGPU_EXPORT cudaError_t cudaGraphAddHostNode(cudaGraphNode_t *pGraphNode, cudaGraph_t graph,
					     const cudaGraphNode_t *pDependencies, size_t numDependencies,
					     const struct cudaHostNodeParams *pNodeParams)
{
	RT_CALL(cuGraphAddHostNode(pGraphNode, graph, pDependencies, numDependencies,
				   (const CUDA_HOST_NODE_PARAMS *)(const void *)pNodeParams));
}

XGPU_EXPORT cudaError_t cudaGraphHostNodeGetParams(cudaGraphNode_t node,
						   struct cudaHostNodeParams *pNodeParams)
{
	RT_CALL(cuGraphHostNodeGetParams(node, (CUDA_HOST_NODE_PARAMS *)(void *)pNodeParams));
}

XGPU_EXPORT cudaError_t cudaGraphHostNodeSetParams(cudaGraphNode_t node,
						   const struct cudaHostNodeParams *pNodeParams)
{
	RT_CALL(cuGraphHostNodeSetParams(node, (const CUDA_HOST_NODE_PARAMS *)(const void *)pNodeParams));
}

XGPU_EXPORT cudaError_t cudaGraphExecHostNodeSetParams(cudaGraphExec_t hGraphExec, cudaGraphNode_t node,
						       const struct cudaHostNodeParams *pNodeParams)
{
	RT_CALL(cuGraphExecHostNodeSetParams(hGraphExec, node,
					     (const CUDA_HOST_NODE_PARAMS *)(const void *)pNodeParams));
}

/* Memory nodes: the runtime's parameters have the driver's layout. */
_Static_assert(sizeof(struct cudaMemAllocNodeParams) == sizeof(CUDA_MEM_ALLOC_NODE_PARAMS), "one layout");

XGPU_EXPORT cudaError_t cudaGraphAddMemAllocNode(cudaGraphNode_t *pGraphNode, cudaGraph_t graph,
						 const cudaGraphNode_t *pDependencies, size_t numDependencies,
						 struct cudaMemAllocNodeParams *nodeParams)
{
	RT_CALL(cuGraphAddMemAllocNode(pGraphNode, graph, pDependencies, numDependencies,
				       (CUDA_MEM_ALLOC_NODE_PARAMS *)(void *)nodeParams));
}

XGPU_EXPORT cudaError_t cudaGraphMemAllocNodeGetParams(cudaGraphNode_t node,
						       struct cudaMemAllocNodeParams *params_out)
{
	RT_CALL(cuGraphMemAllocNodeGetParams(node, (CUDA_MEM_ALLOC_NODE_PARAMS *)(void *)params_out));
}

XGPU_EXPORT cudaError_t cudaGraphAddMemFreeNode(cudaGraphNode_t *pGraphNode, cudaGraph_t graph,
						const cudaGraphNode_t *pDependencies, size_t numDependencies,
						void *dptr)
{
	RT_CALL(cuGraphAddMemFreeNode(pGraphNode, graph, pDependencies, numDependencies,
				      (CUdeviceptr)(uintptr_t)dptr));
}

XGPU_EXPORT cudaError_t cudaGraphMemFreeNodeGetParams(cudaGraphNode_t node, void *dptr_out)
{
	RT_CALL(cuGraphMemFreeNodeGetParams(node, (CUdeviceptr *)dptr_out));
}

/* ---- the generic node form and conditional nodes --------------------------- */

XGPU_EXPORT cudaError_t cudaGraphConditionalHandleCreate(cudaGraphConditionalHandle *pHandle_out,
							 cudaGraph_t graph, unsigned int defaultLaunchValue,
							 unsigned int flags)
{
	_Static_assert(sizeof *pHandle_out == sizeof(CUgraphConditionalHandle), "one handle size");
	RT_CALL(cuGraphConditionalHandleCreate((CUgraphConditionalHandle *)(void *)pHandle_out, graph, NULL,
					       defaultLaunchValue, flags));
}

/* A conditional node: the driver's parameters, then the bodies handed back. */
static CUresult add_conditional(cudaGraphNode_t *out, cudaGraph_t graph, const cudaGraphNode_t *deps,
				size_t ndeps, struct cudaConditionalNodeParams *p)
{
	CUgraphNodeParams d;
	memset(&d, 0, sizeof d);
	d.type = CU_GRAPH_NODE_TYPE_CONDITIONAL;
	d.conditional.handle = p->handle;
	d.conditional.type = (CUgraphConditionalNodeType)p->type;
	d.conditional.size = p->size;
	CUresult r = cuGraphAddNode(out, graph, deps, NULL, ndeps, &d);
	if (!r)
		p->phGraph_out = d.conditional.phGraph_out;
	return r;
}

/* Each type goes to the runtime's own adder of it, so it is checked the same
 * way; unused bytes must be zero, as CUDA requires. */
static CUresult add_generic(cudaGraphNode_t *out, cudaGraph_t graph, const cudaGraphNode_t *deps,
			    const cudaGraphEdgeData *edges, size_t ndeps, struct cudaGraphNodeParams *p)
{
	if (!p || p->reserved0[0] || p->reserved0[1] || p->reserved0[2] || p->reserved2)
		return CUDA_ERROR_INVALID_VALUE;
	/* Edge data is checked by the driver's form, with an empty node. */
	for (size_t i = 0; edges && i < ndeps; i++)
		if (edges[i].to_port || edges[i].type > cudaGraphDependencyTypeProgrammatic)
			return CUDA_ERROR_INVALID_VALUE;
	switch (p->type) {
	case cudaGraphNodeTypeEmpty:
		return cuGraphAddEmptyNode(out, graph, deps, ndeps);
	case cudaGraphNodeTypeKernel: {
		struct cudaKernelNodeParams k = {.func = p->kernel.func,
						 .gridDim = p->kernel.gridDim,
						 .blockDim = p->kernel.blockDim,
						 .sharedMemBytes = p->kernel.sharedMemBytes,
						 .kernelParams = p->kernel.kernelParams,
						 .extra = p->kernel.extra};
		struct kernel_node_wire w;
		CUresult r = kernel_node_wire(&k, "cudaGraphAddNode (a kernel node with extra)", &w);
		return r ? r
			 : xgpu_graph_add_kernel(out, graph, deps, ndeps, w.remote, w.grid, w.block,
						 k.sharedMemBytes, w.params, w.len);
	}
	case cudaGraphNodeTypeMemcpy:
		if (p->memcpy.flags || p->memcpy.reserved[0] || p->memcpy.reserved[1] ||
		    p->memcpy.reserved[2])
			return CUDA_ERROR_INVALID_VALUE;
		return add_copy_3d(out, graph, deps, ndeps, &p->memcpy.copyParams);
	case cudaGraphNodeTypeMemset: {
		struct cudaMemsetParams m = {.dst = p->memset.dst,
					     .pitch = p->memset.pitch,
					     .value = p->memset.value,
					     .elementSize = p->memset.elementSize,
					     .width = p->memset.width,
					     .height = p->memset.height};
		return add_memset(out, graph, deps, ndeps, &m);
	}
	case cudaGraphNodeTypeHost: {
		CUDA_HOST_NODE_PARAMS h = {.fn = p->host.fn, .userData = p->host.userData};
		return cuGraphAddHostNode(out, graph, deps, ndeps, &h);
	}
	case cudaGraphNodeTypeGraph:
		if (p->graph.ownership != cudaGraphChildGraphOwnershipClone)
			return (CUresult)xgpu_unsupported(
			    "cudaGraphAddNode (a child graph moved into its node)");
		return cuGraphAddChildGraphNode(out, graph, deps, ndeps, p->graph.graph);
	case cudaGraphNodeTypeWaitEvent:
		return cuGraphAddEventWaitNode(out, graph, deps, ndeps, p->eventWait.event);
	case cudaGraphNodeTypeEventRecord:
		return cuGraphAddEventRecordNode(out, graph, deps, ndeps, p->eventRecord.event);
	case cudaGraphNodeTypeConditional:
		return add_conditional(out, graph, deps, ndeps, &p->conditional);
	case cudaGraphNodeTypeMemAlloc:
	case cudaGraphNodeTypeMemFree:
		return (CUresult)xgpu_unsupported("cudaGraphAddNode (memory nodes: cudaGraphAddMemAllocNode "
						  "and cudaGraphAddMemFreeNode are served)");
	default:
		return (CUresult)xgpu_unsupported("cudaGraphAddNode (external semaphore or batch memory "
						  "operation nodes)");
	}
}

XGPU_EXPORT cudaError_t cudaGraphAddNode(cudaGraphNode_t *pGraphNode, cudaGraph_t graph,
					 const cudaGraphNode_t *pDependencies,
					 const cudaGraphEdgeData *dependencyData, size_t numDependencies,
					 struct cudaGraphNodeParams *nodeParams)
{
	RT_CALL(add_generic(pGraphNode, graph, pDependencies, dependencyData, numDependencies, nodeParams));
}

XGPU_EXPORT cudaError_t cudaStreamBeginCaptureToGraph(cudaStream_t stream, cudaGraph_t graph,
						      const cudaGraphNode_t *dependencies,
						      const cudaGraphEdgeData *dependencyData,
						      size_t numDependencies, enum cudaStreamCaptureMode mode)
{
	RT_CALL(cuStreamBeginCaptureToGraph((CUstream)stream, graph, dependencies,
					    (const CUgraphEdgeData *)dependencyData, numDependencies,
					    (CUstreamCaptureMode)mode));
}

XGPU_EXPORT cudaError_t cudaStreamBeginCaptureToGraph_ptsz(cudaStream_t stream, cudaGraph_t graph,
							   const cudaGraphNode_t *dependencies,
							   const cudaGraphEdgeData *dependencyData,
							   size_t numDependencies,
							   enum cudaStreamCaptureMode mode)
{
	return cudaStreamBeginCaptureToGraph(stream, graph, dependencies, dependencyData, numDependencies,
					     mode);
}

XGPU_EXPORT cudaError_t cudaStreamUpdateCaptureDependencies(cudaStream_t stream,
							    cudaGraphNode_t *dependencies,
							    const cudaGraphEdgeData *dependencyData,
							    size_t numDependencies, unsigned int flags)
{
	RT_CALL(cuStreamUpdateCaptureDependencies_v2(
	    (CUstream)stream, dependencies, (const CUgraphEdgeData *)dependencyData, numDependencies, flags));
}

XGPU_EXPORT cudaError_t cudaStreamUpdateCaptureDependencies_ptsz(cudaStream_t stream,
								 cudaGraphNode_t *dependencies,
								 const cudaGraphEdgeData *dependencyData,
								 size_t numDependencies, unsigned int flags)
{
	return cudaStreamUpdateCaptureDependencies(stream, dependencies, dependencyData, numDependencies,
						   flags);
}
