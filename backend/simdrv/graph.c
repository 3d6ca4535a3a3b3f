/* SPDX-License-Identifier: Apache-2.0 */
/* graph.c - the simulated driver's graphs: the cuGraph* subset xgpud uses
 * to run a guest's graph as one driver graph (common/driver.h).
 *
 * A graph keeps its nodes in the order they were added. The API adds a node
 * only after the nodes it depends on, so that order is a topological order,
 * and a launch submits the nodes in it to the launch stream through the
 * ordinary entry points: the device worker runs a context's work in order
 * (exec.c), which satisfies every dependency, and each node takes the modeled
 * time that the same work submitted alone takes. Kernel parameters, copy and
 * memset descriptions are copied at add time, as the driver does. Graphs and
 * executables are registered handles (handles.c), so a stale or forged one
 * is refused; a node is accepted only if it is found in its graph.
 */
#include "simdrv_int.h"

#include <stdlib.h>
#include <string.h>

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
	struct sim_obj obj;
	struct CUgraphNode_st **nodes;
	size_t n, cap;
};

struct CUgraphExec_st {
	struct sim_obj obj;
	struct CUgraph_st *copy; /* the nodes as instantiated (not registered) */
};

static void free_nodes(struct CUgraph_st *g)
{
	for (size_t i = 0; i < g->n; i++) {
		if (g->nodes[i]->kind == N_KERNEL)
			free(g->nodes[i]->u.k.params);
		free(g->nodes[i]);
	}
	free(g->nodes);
}

static void graph_release(struct sim_obj *o)
{
	struct CUgraph_st *g = (struct CUgraph_st *)o;
	free_nodes(g);
	free(g);
}

static void exec_release(struct sim_obj *o)
{
	struct CUgraphExec_st *x = (struct CUgraphExec_st *)o;
	free_nodes(x->copy);
	free(x->copy);
	free(x);
}

/* Drops a registered object: the registry's reference and the caller's. */
static CUresult destroy(struct sim_obj *o)
{
	CUresult r = sim_obj_unregister(o) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
	if (!r)
		sim_obj_put(o);
	sim_obj_put(o);
	return r;
}

CUresult cuGraphCreate(CUgraph *phGraph, unsigned int flags)
{
	if (!phGraph || flags)
		return CUDA_ERROR_INVALID_VALUE;
	struct CUgraph_st *g = calloc(1, sizeof *g);
	if (!g)
		return CUDA_ERROR_OUT_OF_MEMORY;
	if (sim_obj_register(&g->obj, SIM_GRAPH, graph_release) < 0) {
		free(g);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	*phGraph = g;
	return CUDA_SUCCESS;
}

CUresult cuGraphDestroy(CUgraph hGraph)
{
	struct CUgraph_st *g = sim_obj_get(hGraph, SIM_GRAPH);
	return g ? destroy(&g->obj) : CUDA_ERROR_INVALID_VALUE;
}

static bool has_node(const struct CUgraph_st *g, const struct CUgraphNode_st *n)
{
	for (size_t i = 0; i < g->n; i++)
		if (g->nodes[i] == n)
			return true;
	return false;
}

/* Appends a node whose dependencies must all be nodes of the graph already.
 * Takes node (freed on failure). */
static CUresult add(CUgraph h, const CUgraphNode *deps, size_t ndeps, struct CUgraphNode_st *node,
		    CUgraphNode *out)
{
	struct CUgraph_st *g = sim_obj_get(h, SIM_GRAPH);
	CUresult r = g && out && (!ndeps || deps) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
	for (size_t i = 0; !r && i < ndeps; i++)
		if (!has_node(g, deps[i]))
			r = CUDA_ERROR_INVALID_VALUE;
	if (!r && g->n == g->cap) {
		size_t cap = g->cap ? 2 * g->cap : 16;
		struct CUgraphNode_st **v = realloc(g->nodes, cap * sizeof *v);
		if (!v)
			r = CUDA_ERROR_OUT_OF_MEMORY;
		else {
			g->nodes = v;
			g->cap = cap;
		}
	}
	if (!r) {
		node->graph = g;
		g->nodes[g->n++] = node;
		*out = node;
	} else {
		if (node->kind == N_KERNEL)
			free(node->u.k.params);
		free(node);
	}
	if (g)
		sim_obj_put(&g->obj);
	return r;
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
	return add(hGraph, dependencies, numDependencies, n, phGraphNode);
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
	if (!phGraphExec || flags)
		return CUDA_ERROR_INVALID_VALUE;
	struct CUgraph_st *src = sim_obj_get(hGraph, SIM_GRAPH);
	if (!src)
		return CUDA_ERROR_INVALID_VALUE;
	struct CUgraphExec_st *x = calloc(1, sizeof *x);
	struct CUgraph_st *g = calloc(1, sizeof *g);
	CUresult r = x && g && (!src->n || (g->nodes = calloc(src->n, sizeof *g->nodes)))
			 ? CUDA_SUCCESS
			 : CUDA_ERROR_OUT_OF_MEMORY;
	for (size_t i = 0; !r && i < src->n; i++) {
		const struct CUgraphNode_st *s = src->nodes[i];
		struct CUgraphNode_st *n = malloc(sizeof *n);
		if (!n) {
			r = CUDA_ERROR_OUT_OF_MEMORY;
			break;
		}
		*n = *s;
		n->graph = g;
		g->nodes[g->n++] = n;
		if (n->kind == N_KERNEL && s->u.k.param_bytes) {
			if (!(n->u.k.params = malloc(s->u.k.param_bytes))) {
				n->kind = N_EMPTY; /* nothing of its own to free */
				r = CUDA_ERROR_OUT_OF_MEMORY;
				break;
			}
			memcpy(n->u.k.params, s->u.k.params, s->u.k.param_bytes);
		}
	}
	sim_obj_put(&src->obj);
	if (!r) {
		x->copy = g;
		if (sim_obj_register(&x->obj, SIM_GRAPH_EXEC, exec_release) < 0)
			r = CUDA_ERROR_OUT_OF_MEMORY;
	}
	if (r) {
		if (g) {
			free_nodes(g);
			free(g);
		}
		free(x);
		return r;
	}
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
	struct CUgraphExec_st *x = sim_obj_get(hGraphExec, SIM_GRAPH_EXEC);
	if (!x)
		return CUDA_ERROR_INVALID_VALUE;
	CUresult r = CUDA_SUCCESS;
	for (size_t i = 0; !r && i < x->copy->n; i++)
		r = launch_node(x->copy->nodes[i], hStream);
	sim_obj_put(&x->obj);
	return r;
}

CUresult cuGraphExecDestroy(CUgraphExec hGraphExec)
{
	struct CUgraphExec_st *x = sim_obj_get(hGraphExec, SIM_GRAPH_EXEC);
	return x ? destroy(&x->obj) : CUDA_ERROR_INVALID_VALUE;
}
