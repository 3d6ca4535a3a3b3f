/* graph.c - the simulated driver's graphs: the cuGraph* subset xgpud uses
 * to run a guest's graph as one driver graph (backend/exec/driver.h).
 *
 * A graph keeps its nodes in the order they were added. The API adds a node
 * only after the nodes it depends on, so that order is a topological order,
 * and a launch submits the nodes in it to the launch stream through the
 * ordinary entry points: the device worker runs a context's work in order
 * (exec.c), which satisfies every dependency, and each node takes the modeled
 * time that the same work submitted alone takes. Kernel parameters, copy and
 * memset descriptions are copied at add time, as the driver does.
 */
#include "simdrv_int.h"

#include <stdlib.h>
#include <string.h>

#define GRAPH_MAGIC 0x73677270u /* "sgrp" */
#define EXEC_MAGIC 0x73657865u  /* "sexe" */

enum node_kind { N_EMPTY, N_KERNEL, N_COPY, N_MEMSET, N_EVENT_RECORD, N_EVENT_WAIT };

struct CUgraphNode_st {
	struct CUgraph_st *graph;
	enum node_kind kind;
	union {
		struct {
			CUfunction func;
			unsigned grid[3], block[3], shared;
			void *params;
			size_t param_bytes;
		} k;
		struct {
			CUmemorytype src_type, dst_type;
			const void *src_host;
			void *dst_host;
			CUdeviceptr src_dev, dst_dev;
			size_t bytes;
		} copy;
		struct {
			CUdeviceptr dst;
			unsigned char value;
			size_t bytes;
		} memset;
		CUevent event;
	} u;
};

struct CUgraph_st {
	uint32_t magic;
	struct CUgraphNode_st **nodes;
	size_t n, cap;
};

struct CUgraphExec_st {
	uint32_t magic;
	struct CUgraph_st *copy; /* the nodes as instantiated */
};

static bool valid_graph(CUgraph g)
{
	return g && g->magic == GRAPH_MAGIC;
}

static void free_graph(struct CUgraph_st *g)
{
	for (size_t i = 0; i < g->n; i++) {
		if (g->nodes[i]->kind == N_KERNEL)
			free(g->nodes[i]->u.k.params);
		free(g->nodes[i]);
	}
	free(g->nodes);
	g->magic = 0;
	free(g);
}

CUresult cuGraphCreate(CUgraph *phGraph, unsigned int flags)
{
	if (!phGraph || flags)
		return CUDA_ERROR_INVALID_VALUE;
	struct CUgraph_st *g = calloc(1, sizeof *g);
	if (!g)
		return CUDA_ERROR_OUT_OF_MEMORY;
	g->magic = GRAPH_MAGIC;
	*phGraph = g;
	return CUDA_SUCCESS;
}

CUresult cuGraphDestroy(CUgraph hGraph)
{
	if (!valid_graph(hGraph))
		return CUDA_ERROR_INVALID_VALUE;
	free_graph(hGraph);
	return CUDA_SUCCESS;
}

/* Appends a node whose dependencies must all be nodes of g already. */
static CUresult add(CUgraph g, const CUgraphNode *deps, size_t ndeps, struct CUgraphNode_st *node,
		    CUgraphNode *out)
{
	if (!valid_graph(g) || !out || (ndeps && !deps)) {
		free(node);
		return CUDA_ERROR_INVALID_VALUE;
	}
	for (size_t i = 0; i < ndeps; i++)
		if (!deps[i] || deps[i]->graph != g) {
			free(node);
			return CUDA_ERROR_INVALID_VALUE;
		}
	if (g->n == g->cap) {
		size_t cap = g->cap ? 2 * g->cap : 16;
		struct CUgraphNode_st **v = realloc(g->nodes, cap * sizeof *v);
		if (!v) {
			free(node);
			return CUDA_ERROR_OUT_OF_MEMORY;
		}
		g->nodes = v;
		g->cap = cap;
	}
	node->graph = g;
	g->nodes[g->n++] = node;
	*out = node;
	return CUDA_SUCCESS;
}

static struct CUgraphNode_st *new_node(enum node_kind kind)
{
	struct CUgraphNode_st *n = calloc(1, sizeof *n);
	if (n)
		n->kind = kind;
	return n;
}

CUresult cuGraphAddEmptyNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
			     size_t numDependencies)
{
	struct CUgraphNode_st *n = new_node(N_EMPTY);
	return n ? add(hGraph, dependencies, numDependencies, n, phGraphNode) : CUDA_ERROR_OUT_OF_MEMORY;
}

/* Only the parameter buffer form (extra), which is what xgpud passes. */
CUresult cuGraphAddKernelNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
			      size_t numDependencies, const CUDA_KERNEL_NODE_PARAMS *p)
{
	if (!p || !p->func || p->kernelParams)
		return p && p->kernelParams ? CUDA_ERROR_NOT_SUPPORTED : CUDA_ERROR_INVALID_VALUE;
	const void *buf = NULL;
	size_t size = 0;
	for (unsigned i = 0; p->extra && p->extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
		if (i >= 64)
			return CUDA_ERROR_INVALID_VALUE;
		if (p->extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER)
			buf = p->extra[i + 1];
		else if (p->extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE && p->extra[i + 1])
			size = *(const size_t *)p->extra[i + 1];
		else
			return CUDA_ERROR_INVALID_VALUE;
	}
	if (size && !buf)
		return CUDA_ERROR_INVALID_VALUE;
	struct CUgraphNode_st *n = new_node(N_KERNEL);
	void *copy = size ? malloc(size) : NULL;
	if (!n || (size && !copy)) {
		free(n);
		free(copy);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	if (size)
		memcpy(copy, buf, size);
	n->u.k.func = p->func;
	n->u.k.grid[0] = p->gridDimX;
	n->u.k.grid[1] = p->gridDimY;
	n->u.k.grid[2] = p->gridDimZ;
	n->u.k.block[0] = p->blockDimX;
	n->u.k.block[1] = p->blockDimY;
	n->u.k.block[2] = p->blockDimZ;
	n->u.k.shared = p->sharedMemBytes;
	n->u.k.params = copy;
	n->u.k.param_bytes = size;
	CUresult r = add(hGraph, dependencies, numDependencies, n, phGraphNode);
	if (r)
		free(copy);
	return r;
}

/* One-dimensional copies between host and device memory. */
CUresult cuGraphAddMemcpyNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
			      size_t numDependencies, const CUDA_MEMCPY3D *p, CUcontext ctx)
{
	(void)ctx;
	if (!p || !p->WidthInBytes)
		return CUDA_ERROR_INVALID_VALUE;
	if (p->Height > 1 || p->Depth > 1 || p->srcXInBytes || p->srcY || p->srcZ || p->dstXInBytes ||
	    p->dstY || p->dstZ || p->srcLOD || p->dstLOD)
		return CUDA_ERROR_NOT_SUPPORTED;
	bool src_host = p->srcMemoryType == CU_MEMORYTYPE_HOST,
	     dst_host = p->dstMemoryType == CU_MEMORYTYPE_HOST;
	if ((!src_host && p->srcMemoryType != CU_MEMORYTYPE_DEVICE) ||
	    (!dst_host && p->dstMemoryType != CU_MEMORYTYPE_DEVICE) || (src_host && dst_host))
		return CUDA_ERROR_NOT_SUPPORTED;
	struct CUgraphNode_st *n = new_node(N_COPY);
	if (!n)
		return CUDA_ERROR_OUT_OF_MEMORY;
	n->u.copy.src_type = p->srcMemoryType;
	n->u.copy.dst_type = p->dstMemoryType;
	n->u.copy.src_host = p->srcHost;
	n->u.copy.dst_host = p->dstHost;
	n->u.copy.src_dev = p->srcDevice;
	n->u.copy.dst_dev = p->dstDevice;
	n->u.copy.bytes = p->WidthInBytes;
	return add(hGraph, dependencies, numDependencies, n, phGraphNode);
}

/* Byte memsets of one row. */
CUresult cuGraphAddMemsetNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
			      size_t numDependencies, const CUDA_MEMSET_NODE_PARAMS *p, CUcontext ctx)
{
	(void)ctx;
	if (!p || !p->width)
		return CUDA_ERROR_INVALID_VALUE;
	if (p->elementSize != 1 || p->height > 1)
		return CUDA_ERROR_NOT_SUPPORTED;
	struct CUgraphNode_st *n = new_node(N_MEMSET);
	if (!n)
		return CUDA_ERROR_OUT_OF_MEMORY;
	n->u.memset.dst = p->dst;
	n->u.memset.value = (unsigned char)p->value;
	n->u.memset.bytes = p->width;
	return add(hGraph, dependencies, numDependencies, n, phGraphNode);
}

static CUresult add_event_node(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, size_t ndeps, CUevent e,
			       enum node_kind kind)
{
	if (!e)
		return CUDA_ERROR_INVALID_VALUE;
	struct CUgraphNode_st *n = new_node(kind);
	if (!n)
		return CUDA_ERROR_OUT_OF_MEMORY;
	n->u.event = e;
	return add(g, deps, ndeps, n, out);
}

CUresult cuGraphAddEventRecordNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
				   size_t numDependencies, CUevent event)
{
	return add_event_node(phGraphNode, hGraph, dependencies, numDependencies, event, N_EVENT_RECORD);
}

CUresult cuGraphAddEventWaitNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
				 size_t numDependencies, CUevent event)
{
	return add_event_node(phGraphNode, hGraph, dependencies, numDependencies, event, N_EVENT_WAIT);
}

/* The executable is a snapshot: later changes to the graph do not reach it. */
CUresult cuGraphInstantiateWithFlags(CUgraphExec *phGraphExec, CUgraph hGraph, unsigned long long flags)
{
	if (!phGraphExec || !valid_graph(hGraph) || flags)
		return CUDA_ERROR_INVALID_VALUE;
	struct CUgraphExec_st *x = calloc(1, sizeof *x);
	struct CUgraph_st *g = calloc(1, sizeof *g);
	if (!x || !g || (hGraph->n && !(g->nodes = calloc(hGraph->n, sizeof *g->nodes)))) {
		free(x);
		free(g);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	g->magic = GRAPH_MAGIC;
	g->cap = hGraph->n;
	for (size_t i = 0; i < hGraph->n; i++) {
		struct CUgraphNode_st *n = malloc(sizeof *n);
		void *params = NULL;
		if (n && hGraph->nodes[i]->kind == N_KERNEL && hGraph->nodes[i]->u.k.param_bytes &&
		    (params = malloc(hGraph->nodes[i]->u.k.param_bytes)))
			memcpy(params, hGraph->nodes[i]->u.k.params, hGraph->nodes[i]->u.k.param_bytes);
		if (!n ||
		    (hGraph->nodes[i]->kind == N_KERNEL && hGraph->nodes[i]->u.k.param_bytes && !params)) {
			free(n);
			free_graph(g);
			free(x);
			return CUDA_ERROR_OUT_OF_MEMORY;
		}
		*n = *hGraph->nodes[i];
		n->graph = g;
		if (n->kind == N_KERNEL)
			n->u.k.params = params;
		g->nodes[g->n++] = n;
	}
	x->magic = EXEC_MAGIC;
	x->copy = g;
	*phGraphExec = x;
	return CUDA_SUCCESS;
}

static CUresult launch_node(const struct CUgraphNode_st *n, CUstream s)
{
	switch (n->kind) {
	case N_EMPTY:
		return CUDA_SUCCESS;
	case N_KERNEL: {
		size_t size = n->u.k.param_bytes;
		void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, n->u.k.params, CU_LAUNCH_PARAM_BUFFER_SIZE,
				 &size, CU_LAUNCH_PARAM_END};
		return cuLaunchKernel(n->u.k.func, n->u.k.grid[0], n->u.k.grid[1], n->u.k.grid[2],
				      n->u.k.block[0], n->u.k.block[1], n->u.k.block[2], n->u.k.shared, s,
				      NULL, size ? extra : NULL);
	}
	case N_COPY:
		if (n->u.copy.src_type == CU_MEMORYTYPE_HOST)
			return cuMemcpyHtoDAsync(n->u.copy.dst_dev, n->u.copy.src_host, n->u.copy.bytes, s);
		if (n->u.copy.dst_type == CU_MEMORYTYPE_HOST)
			return cuMemcpyDtoHAsync(n->u.copy.dst_host, n->u.copy.src_dev, n->u.copy.bytes, s);
		return cuMemcpyDtoDAsync(n->u.copy.dst_dev, n->u.copy.src_dev, n->u.copy.bytes, s);
	case N_MEMSET:
		return cuMemsetD8Async(n->u.memset.dst, n->u.memset.value, n->u.memset.bytes, s);
	case N_EVENT_RECORD:
		return cuEventRecord(n->u.event, s);
	case N_EVENT_WAIT:
		return cuStreamWaitEvent(s, n->u.event, 0);
	}
	return CUDA_ERROR_INVALID_VALUE;
}

CUresult cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream)
{
	if (!hGraphExec || hGraphExec->magic != EXEC_MAGIC)
		return CUDA_ERROR_INVALID_VALUE;
	const struct CUgraph_st *g = hGraphExec->copy;
	for (size_t i = 0; i < g->n; i++) {
		CUresult r = launch_node(g->nodes[i], hStream);
		if (r)
			return r;
	}
	return CUDA_SUCCESS;
}

CUresult cuGraphExecDestroy(CUgraphExec hGraphExec)
{
	if (!hGraphExec || hGraphExec->magic != EXEC_MAGIC)
		return CUDA_ERROR_INVALID_VALUE;
	free_graph(hGraphExec->copy);
	hGraphExec->magic = 0;
	free(hGraphExec);
	return CUDA_SUCCESS;
}
