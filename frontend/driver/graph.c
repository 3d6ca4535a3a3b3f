/* SPDX-License-Identifier: Apache-2.0 */
/* graph.c - CUDA graphs and stream capture for both API layers.
 *
 * A graph lives here, in the process, as CUDA's does: nodes with their
 * parameters already in wire form (a kernel node holds the daemon's function
 * handle and its parameter buffer laid out from the fatbin) and their
 * dependencies. Instantiating sends the whole graph, child graphs flattened,
 * in one GRAPH_INSTANTIATE; the daemon validates it and builds a driver graph
 * on the domain's context. A launch is one GRAPH_LAUNCH carrying the host
 * memory that the graph's host-to-device copies read and returning what its
 * device-to-host copies wrote (such a launch therefore waits for the graph).
 *
 * Stream capture needs no help from the APIs' copy and launch paths: every
 * piece of stream work of either frontend is one xgpu_rpc, and the client
 * hands each request to capture_rpc() first (client.c), which turns work on
 * a capturing stream into nodes, refuses the calls CUDA refuses during a
 * capture, and lets everything else through. The runtime's cudaGraph* and
 * cudaStream*Capture* are these functions (api_graph.c).
 */
#include "allocs.h"
#include "driver.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define XGPU_ALIAS(name) __attribute__((alias(#name)))
#define GRAPH_MAGIC 0x78677270u /* "xgrp" */
#define NODE_MAGIC 0x786e6f64u  /* "xnod" */
#define EXEC_MAGIC 0x78657865u  /* "xexe" */
#define MAX_CHILD_DEPTH 16
#define MAX_CAPTURES 64
#define MAX_CAPTURE_STREAMS 256
#define MAX_CAPTURE_EVENTS 1024

struct CUgraphNode_st {
	uint32_t magic;
	struct CUgraph_st *graph;
	CUgraphNodeType type;
	struct xgpu_graph_node w; /* the wire form; w.type is XGPU_GN_* */
	void *host;               /* a host copy's host side */
	uint8_t *params;          /* a kernel's parameter buffer (w.param_len) */
	struct CUgraph_st *child; /* a child graph node's own copy */
	CUhostFn host_fn;         /* a host node's function and argument */
	void *host_user;
	struct graph_mem *mem; /* a memory allocation node's memory (held) */
	CUdeviceptr free_ptr;  /* a memory free node's address */
	struct CUgraphNode_st **deps;
	size_t ndeps;
	uint64_t seen; /* a walk's mark (joined()) */
	/* A conditional node: its handle, type and body graphs (owned; the
	 * array is the phGraph_out CUDA hands back). */
	uint64_t cond_handle;
	CUgraphConditionalNodeType cond_type;
	struct CUgraph_st **bodies;
	unsigned nbodies;
};

/* A conditional handle (cuGraphConditionalHandleCreate). Its value is what
 * the program passes its kernels, so it is unique in the process: the daemon
 * finds it among a kernel's parameters and puts its driver's handle there. */
struct cond_handle {
	uint64_t value;
	uint32_t default_value, flags;
};

struct CUgraph_st {
	uint32_t magic;
	struct CUgraphNode_st **nodes;
	size_t n, cap;
	struct cond_handle *conds; /* created for this graph */
	size_t nconds;
	bool body;                 /* a conditional node's body: the node owns it */
	struct CUgraph_st *parent; /* a body's: the graph of its node */
	unsigned cond_depth;       /* conditional nodes around it */
};

/* Tags handle values, so that a stray parameter is unlikely to equal one. */
#define COND_TAG 0x78636e6400000000ull /* "xcnd" */
static atomic_uint_fast64_t next_cond = 1;

struct host_copy {
	void *ptr;
	uint64_t size;
	bool to_device;
};

/* A graph with host nodes runs in parts, in one topological order of its
 * nodes: each run of device nodes between host nodes is a daemon graph of
 * its own (sub), each host node (host, the snapshot's node) a host function
 * enqueued on the launch's stream after the part before it, which the part
 * after it waits for (xgpu_hostfn_enqueue). A serial order of a DAG is one
 * CUDA may run it in; only the overlap of host nodes with device work that
 * does not depend on them is lost. */
struct exec_part {
	struct CUgraphExec_st *sub;
	struct CUgraphNode_st *host;
};

struct CUgraphExec_st {
	uint32_t magic;
	struct exec_part *parts; /* NULL: the graph is one daemon graph (remote) */
	size_t nparts;
	xgpu_handle_t remote;
	unsigned generation;
	uint64_t htod_bytes, dtoh_bytes;
	struct host_copy *copies; /* in node order, as the daemon lays them out */
	size_t ncopies;
	/* Updates (cuGraphExecKernelNodeSetParams, cuGraphExecUpdate) change
	 * this copy of the graph as instantiated, whose nodes pair with the
	 * source graph's by position; the next launch instantiates it again
	 * in the daemon (dirty), so any number of updates cost one round trip. */
	struct CUgraph_st *snapshot;
	const struct CUgraph_st *source;
	bool dirty;
};

_Thread_local int xgpu_graph_from_runtime;

/* Memory a graph's allocation node made. CUDA allocates it when the node
 * runs and a free node (or cuMemFreeAsync) gives it back; here it is made
 * when the node is added, at the address the node reports, and lives while
 * any graph or instantiated copy holds the node (refs), so every launch
 * finds it where the graph's kernels were told it is. Charged to the
 * domain's memory limit meanwhile, like any allocation. */
struct graph_mem {
	CUdeviceptr dptr;
	size_t size;
	unsigned refs;
	struct graph_mem *next; /* graph_mems */
};

static pthread_mutex_t graph_mem_lock = PTHREAD_MUTEX_INITIALIZER;
static struct graph_mem *graph_mems; /* every live graph_mem */
/* What graphs hold now and the most they held since the last reset: the
 * graph memory attributes (used and reserved are the same here, since each
 * allocation is its own). */
static uint64_t graph_mem_bytes, graph_mem_high;

static CUresult graph_mem_device(CUdevice device)
{
	int n = 0;
	CUresult r = cuDeviceGetCount(&n);
	return r ? r : device < 0 || device >= n ? CUDA_ERROR_INVALID_DEVICE : CUDA_SUCCESS;
}

CUresult cuDeviceGetGraphMemAttribute(CUdevice device, CUgraphMem_attribute attr, void *value)
{
	CUresult r = graph_mem_device(device);
	if (r)
		return r;
	if (!value)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&graph_mem_lock);
	uint64_t v =
	    attr == CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT || attr == CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT
		? graph_mem_bytes
		: graph_mem_high;
	pthread_mutex_unlock(&graph_mem_lock);
	if (attr < CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT || attr > CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH)
		return CUDA_ERROR_INVALID_VALUE;
	memcpy(value, &v, sizeof v);
	return CUDA_SUCCESS;
}

/* Only the high watermarks may be set, and only to 0 (a reset). */
CUresult cuDeviceSetGraphMemAttribute(CUdevice device, CUgraphMem_attribute attr, void *value)
{
	CUresult r = graph_mem_device(device);
	if (r)
		return r;
	uint64_t v;
	if (!value ||
	    (attr != CU_GRAPH_MEM_ATTR_USED_MEM_HIGH && attr != CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH))
		return CUDA_ERROR_INVALID_VALUE;
	memcpy(&v, value, sizeof v);
	if (v)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&graph_mem_lock);
	graph_mem_high = graph_mem_bytes;
	pthread_mutex_unlock(&graph_mem_lock);
	return CUDA_SUCCESS;
}

/* Nothing is cached beyond what live graphs hold: nothing to trim. */
CUresult cuDeviceGraphMemTrim(CUdevice device)
{
	return graph_mem_device(device);
}

/* The program frees a graph's memory (cuMemFree, cudaFree, cudaFreeAsync) as
 * CUDA lets it once the graph ran; CUDA allocates it again at the next
 * launch. Here the graph keeps it where its kernels were told it is: the
 * free only ends the program's use, and the memory goes when the last graph
 * holding it does. */
bool xgpu_graph_mem_keep(CUdeviceptr dptr)
{
	pthread_mutex_lock(&graph_mem_lock);
	struct graph_mem *m = graph_mems;
	while (m && m->dptr != dptr)
		m = m->next;
	pthread_mutex_unlock(&graph_mem_lock);
	return m != NULL;
}

static void graph_mem_put(struct graph_mem *m)
{
	pthread_mutex_lock(&graph_mem_lock);
	bool last = --m->refs == 0;
	if (last) {
		struct graph_mem **pp = &graph_mems;
		while (*pp && *pp != m)
			pp = &(*pp)->next;
		if (*pp)
			*pp = m->next;
		graph_mem_bytes -= m->size;
	}
	pthread_mutex_unlock(&graph_mem_lock);
	if (!last)
		return;
	/* Unless the program freed it itself (cuMemFree after the graph's
	 * free node, as CUDA allows for graph memory). */
	struct xgpu_alloc a;
	if (xgpu_alloc_find(m->dptr, 0, &a) && a.base == m->dptr && a.kind == XGPU_ALLOC_DEVICE) {
		struct xgpu_client *c;
		if (!xgpu_client_get(&c)) {
			struct xgpu_req_MEM_FREE req = {.dptr = m->dptr};
			struct xgpu_rsp_MEM_FREE rsp;
			if (!xgpu_call_MEM_FREE(c, &req, &rsp))
				xgpu_alloc_del(m->dptr, XGPU_ALLOC_DEVICE);
		}
	}
	free(m);
}

/* The channel. The runtime's graph calls come here without cuInit or a
 * current context, which CUDA's runtime sets up implicitly. */
static CUresult graph_client(struct xgpu_client **c)
{
	if (xgpu_graph_from_runtime)
		return xgpu_drv_result(xgpu_client_get(c));
	return xgpu_drv_client_ctx(c);
}

static bool valid_graph(CUgraph g)
{
	return g && g->magic == GRAPH_MAGIC;
}

static bool valid_node(CUgraphNode n)
{
	return n && n->magic == NODE_MAGIC;
}

static bool valid_exec(CUgraphExec x)
{
	return x && x->magic == EXEC_MAGIC;
}

/* ---- graphs and nodes ----------------------------------------------------- */

static void free_graph(struct CUgraph_st *g);

static void free_node(struct CUgraphNode_st *n)
{
	if (n->mem)
		graph_mem_put(n->mem);
	free(n->params);
	free(n->deps);
	if (n->child)
		free_graph(n->child);
	for (unsigned i = 0; n->bodies && i < n->nbodies; i++)
		if (n->bodies[i])
			free_graph(n->bodies[i]);
	free(n->bodies);
	n->magic = 0;
	free(n);
}

static void free_graph(struct CUgraph_st *g)
{
	for (size_t i = 0; i < g->n; i++)
		free_node(g->nodes[i]);
	free(g->nodes);
	free(g->conds);
	g->magic = 0;
	free(g);
}

static struct CUgraph_st *new_graph(void)
{
	struct CUgraph_st *g = calloc(1, sizeof *g);
	if (g)
		g->magic = GRAPH_MAGIC;
	return g;
}

CUresult cuGraphCreate(CUgraph *phGraph, unsigned int flags)
{
	if (!phGraph || flags)
		return CUDA_ERROR_INVALID_VALUE;
	struct CUgraph_st *g = new_graph();
	if (!g)
		return CUDA_ERROR_OUT_OF_MEMORY;
	*phGraph = g;
	return CUDA_SUCCESS;
}

CUresult cuGraphDestroy(CUgraph hGraph)
{
	/* A conditional body goes with its node. */
	if (!valid_graph(hGraph) || hGraph->body)
		return CUDA_ERROR_INVALID_VALUE;
	free_graph(hGraph);
	return CUDA_SUCCESS;
}

/* Adds node (built by the caller, owned from here on) to g after deps, which
 * must be nodes of g. */
static CUresult add_node(struct CUgraph_st *g, const CUgraphNode *deps, size_t ndeps,
			 struct CUgraphNode_st *node, CUgraphNode *out)
{
	CUresult r = CUDA_SUCCESS;
	if (!valid_graph(g) || (ndeps && !deps) || ndeps > XGPU_MAX_GRAPH_EDGES)
		r = CUDA_ERROR_INVALID_VALUE;
	for (size_t i = 0; !r && i < ndeps; i++) {
		if (!valid_node(deps[i]) || deps[i]->graph != g)
			r = CUDA_ERROR_INVALID_VALUE;
		for (size_t j = 0; !r && j < i; j++)
			if (deps[j] == deps[i])
				r = CUDA_ERROR_INVALID_VALUE;
	}
	if (!r && ndeps && !(node->deps = malloc(ndeps * sizeof *node->deps)))
		r = CUDA_ERROR_OUT_OF_MEMORY;
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
	if (r) {
		free_node(node);
		return r;
	}
	if (ndeps)
		memcpy(node->deps, deps, ndeps * sizeof *node->deps);
	node->ndeps = ndeps;
	node->graph = g;
	g->nodes[g->n++] = node;
	if (out)
		*out = node;
	return CUDA_SUCCESS;
}

static struct CUgraphNode_st *new_node(CUgraphNodeType type, uint32_t wire_type)
{
	struct CUgraphNode_st *n = calloc(1, sizeof *n);
	if (n) {
		n->magic = NODE_MAGIC;
		n->type = type;
		n->w.type = wire_type;
	}
	return n;
}

CUresult cuGraphAddEmptyNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
			     size_t numDependencies)
{
	if (!phGraphNode)
		return CUDA_ERROR_INVALID_VALUE;
	struct CUgraphNode_st *n = new_node(CU_GRAPH_NODE_TYPE_EMPTY, XGPU_GN_EMPTY);
	return n ? add_node(hGraph, dependencies, numDependencies, n, phGraphNode) : CUDA_ERROR_OUT_OF_MEMORY;
}

/* A kernel node from its wire form: the daemon's function handle and the
 * laid-out parameter buffer. Both frontends' kernel nodes end here. */
CUresult xgpu_graph_add_kernel(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, size_t ndeps,
			       xgpu_handle_t func, const uint32_t grid[3], const uint32_t block[3],
			       uint32_t shared, const void *params, uint32_t param_len)
{
	if (!out || param_len > XGPU_MAX_PARAM_BYTES)
		return CUDA_ERROR_INVALID_VALUE;
	struct CUgraphNode_st *n = new_node(CU_GRAPH_NODE_TYPE_KERNEL, XGPU_GN_KERNEL);
	if (!n || (param_len && !(n->params = malloc(param_len)))) {
		free(n);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	if (param_len)
		memcpy(n->params, params, param_len);
	n->w.handle = func;
	n->w.grid = (struct xgpu_dim3){grid[0], grid[1], grid[2]};
	n->w.block = (struct xgpu_dim3){block[0], block[1], block[2]};
	n->w.shared_bytes = shared;
	n->w.param_len = param_len;
	return add_node(g, deps, ndeps, n, out);
}

static CUresult add_kernel(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, size_t ndeps,
			   CUfunction func, const unsigned grid[3], const unsigned block[3], unsigned shared,
			   void **kernelParams, void **extra)
{
	uint8_t params[XGPU_MAX_PARAM_BYTES];
	uint32_t len;
	xgpu_handle_t remote;
	CUresult r =
	    xgpu_drv_kernel_wire(func, grid, block, shared, kernelParams, extra, &remote, params, &len);
	return r ? r : xgpu_graph_add_kernel(out, g, deps, ndeps, remote, grid, block, shared, params, len);
}

CUresult cuGraphAddKernelNode_v2(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
				 size_t numDependencies, const CUDA_KERNEL_NODE_PARAMS *p)
{
	if (!p)
		return CUDA_ERROR_INVALID_VALUE;
	CUfunction f = p->func;
	if (!f && p->kern) {
		CUresult r = cuKernelGetFunction(&f, p->kern);
		if (r)
			return r;
	}
	const unsigned grid[3] = {p->gridDimX, p->gridDimY, p->gridDimZ};
	const unsigned block[3] = {p->blockDimX, p->blockDimY, p->blockDimZ};
	return add_kernel(phGraphNode, hGraph, dependencies, numDependencies, f, grid, block,
			  p->sharedMemBytes, p->kernelParams, p->extra);
}

/* The CUDA 10 ABI: the same parameters without kern and ctx. */
#undef cuGraphAddKernelNode
CUresult cuGraphAddKernelNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
			      size_t numDependencies, const CUDA_KERNEL_NODE_PARAMS_v1 *p);
CUresult cuGraphAddKernelNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
			      size_t numDependencies, const CUDA_KERNEL_NODE_PARAMS_v1 *p)
{
	if (!p)
		return CUDA_ERROR_INVALID_VALUE;
	const unsigned grid[3] = {p->gridDimX, p->gridDimY, p->gridDimZ};
	const unsigned block[3] = {p->blockDimX, p->blockDimY, p->blockDimZ};
	return add_kernel(phGraphNode, hGraph, dependencies, numDependencies, p->func, grid, block,
			  p->sharedMemBytes, p->kernelParams, p->extra);
}

/* A one-dimensional copy between host and device memory, or within the
 * device: the layouts xgpu's copies support outside graphs too. */
CUresult xgpu_graph_add_copy(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, size_t ndeps,
			     bool dst_host, uint64_t dst, bool src_host, uint64_t src, uint64_t size)
{
	if (!out || !size || !dst || !src)
		return CUDA_ERROR_INVALID_VALUE;
	if (dst_host && src_host)
		return xgpu_drv_unsupported("cuGraphAddMemcpyNode (host to host)");
	uint32_t type = src_host ? XGPU_GN_HTOD : dst_host ? XGPU_GN_DTOH : XGPU_GN_DTOD;
	struct CUgraphNode_st *n = new_node(CU_GRAPH_NODE_TYPE_MEMCPY, type);
	if (!n)
		return CUDA_ERROR_OUT_OF_MEMORY;
	n->w.size = size;
	if (src_host)
		n->host = (void *)(uintptr_t)src;
	else
		n->w.src = src;
	if (dst_host)
		n->host = (void *)(uintptr_t)dst;
	else
		n->w.dst = dst;
	return add_node(g, deps, ndeps, n, out);
}

CUresult cuGraphAddMemcpyNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
			      size_t numDependencies, const CUDA_MEMCPY3D *p, CUcontext ctx)
{
	(void)ctx;
	if (!p)
		return CUDA_ERROR_INVALID_VALUE;
	if (p->Height > 1 || p->Depth > 1 || p->srcY || p->srcZ || p->dstY || p->dstZ || p->srcLOD ||
	    p->dstLOD)
		return xgpu_drv_unsupported("cuGraphAddMemcpyNode (2D or 3D copies)");
	bool src_host = p->srcMemoryType == CU_MEMORYTYPE_HOST,
	     dst_host = p->dstMemoryType == CU_MEMORYTYPE_HOST;
	if ((!src_host && p->srcMemoryType != CU_MEMORYTYPE_DEVICE) ||
	    (!dst_host && p->dstMemoryType != CU_MEMORYTYPE_DEVICE))
		return xgpu_drv_unsupported("cuGraphAddMemcpyNode (arrays or unified memory)");
	uint64_t src = src_host ? (uintptr_t)p->srcHost : p->srcDevice;
	uint64_t dst = dst_host ? (uintptr_t)p->dstHost : p->dstDevice;
	return xgpu_graph_add_copy(phGraphNode, hGraph, dependencies, numDependencies, dst_host,
				   dst + p->dstXInBytes, src_host, src + p->srcXInBytes, p->WidthInBytes);
}

CUresult cuGraphAddMemsetNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
			      size_t numDependencies, const CUDA_MEMSET_NODE_PARAMS *p, CUcontext ctx)
{
	(void)ctx;
	if (!p || !phGraphNode || !p->width || !p->height ||
	    (p->elementSize != 1 && p->elementSize != 2 && p->elementSize != 4))
		return CUDA_ERROR_INVALID_VALUE;
	uint64_t row = (uint64_t)p->width * p->elementSize;
	/* Rows that touch each other are one range. */
	if (p->height > 1 && p->pitch != row)
		return xgpu_drv_unsupported("cuGraphAddMemsetNode (pitched 2D memset)");
	uint8_t b[4];
	memcpy(b, &p->value, sizeof b);
	if (p->elementSize > 1 && (b[0] != b[1] || (p->elementSize == 4 && (b[0] != b[2] || b[0] != b[3]))))
		return xgpu_drv_unsupported(
		    "cuGraphAddMemsetNode (a 16- or 32-bit pattern of different bytes)");
	struct CUgraphNode_st *n = new_node(CU_GRAPH_NODE_TYPE_MEMSET, XGPU_GN_MEMSET);
	if (!n)
		return CUDA_ERROR_OUT_OF_MEMORY;
	n->w.dst = p->dst;
	n->w.value = b[0];
	n->w.size = row * p->height;
	return add_node(hGraph, dependencies, numDependencies, n, phGraphNode);
}

static CUresult add_event_node(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, size_t ndeps, CUevent e,
			       bool record)
{
	if (!out || !e)
		return CUDA_ERROR_INVALID_VALUE;
	struct CUgraphNode_st *n =
	    new_node(record ? CU_GRAPH_NODE_TYPE_EVENT_RECORD : CU_GRAPH_NODE_TYPE_WAIT_EVENT,
		     record ? XGPU_GN_EVENT_RECORD : XGPU_GN_EVENT_WAIT);
	if (!n)
		return CUDA_ERROR_OUT_OF_MEMORY;
	n->w.handle = (xgpu_handle_t)(uintptr_t)e;
	return add_node(g, deps, ndeps, n, out);
}

CUresult cuGraphAddEventRecordNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
				   size_t numDependencies, CUevent event)
{
	return add_event_node(phGraphNode, hGraph, dependencies, numDependencies, event, true);
}

CUresult cuGraphAddEventWaitNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
				 size_t numDependencies, CUevent event)
{
	return add_event_node(phGraphNode, hGraph, dependencies, numDependencies, event, false);
}

/* A deep copy of g, node for node in the same order. Dependencies may point
 * at later nodes (cuGraphAddDependencies), so they are copied once every
 * node exists. */
/* Host nodes: the function runs in this process, on the callback thread of
 * the launch's stream (see struct exec_part). */
CUresult cuGraphAddHostNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
			    size_t numDependencies, const CUDA_HOST_NODE_PARAMS *nodeParams)
{
	if (!phGraphNode || !nodeParams || !nodeParams->fn)
		return CUDA_ERROR_INVALID_VALUE;
	struct CUgraphNode_st *n = new_node(CU_GRAPH_NODE_TYPE_HOST, XGPU_GN_EMPTY);
	if (!n)
		return CUDA_ERROR_OUT_OF_MEMORY;
	n->host_fn = nodeParams->fn;
	n->host_user = nodeParams->userData;
	return add_node(hGraph, dependencies, numDependencies, n, phGraphNode);
}

CUresult cuGraphHostNodeGetParams(CUgraphNode hNode, CUDA_HOST_NODE_PARAMS *nodeParams)
{
	if (!valid_node(hNode) || hNode->type != CU_GRAPH_NODE_TYPE_HOST || !nodeParams)
		return CUDA_ERROR_INVALID_VALUE;
	nodeParams->fn = hNode->host_fn;
	nodeParams->userData = hNode->host_user;
	return CUDA_SUCCESS;
}

CUresult cuGraphHostNodeSetParams(CUgraphNode hNode, const CUDA_HOST_NODE_PARAMS *nodeParams)
{
	if (!valid_node(hNode) || hNode->type != CU_GRAPH_NODE_TYPE_HOST || !nodeParams || !nodeParams->fn)
		return CUDA_ERROR_INVALID_VALUE;
	hNode->host_fn = nodeParams->fn;
	hNode->host_user = nodeParams->userData;
	return CUDA_SUCCESS;
}

/* Set while this thread allocates a graph's memory: the allocation belongs
 * to the graph, so a capture's refusal of cudaMalloc (capture_rpc) does not
 * apply. */
static _Thread_local bool graph_alloc_call;

/* A memory allocation node and its memory (struct graph_mem); a cudaError_t. */
static int mem_alloc_node(struct xgpu_client *c, size_t size, struct CUgraphNode_st **out)
{
	struct graph_mem *m = calloc(1, sizeof *m);
	struct CUgraphNode_st *n = m ? new_node(CU_GRAPH_NODE_TYPE_MEM_ALLOC, XGPU_GN_EMPTY) : NULL;
	if (!n) {
		free(m);
		return cudaErrorMemoryAllocation;
	}
	struct xgpu_req_MEM_ALLOC req = {.size = size};
	struct xgpu_rsp_MEM_ALLOC rsp;
	graph_alloc_call = true;
	int e = xgpu_call_MEM_ALLOC(c, &req, &rsp);
	graph_alloc_call = false;
	if (e) {
		free(m);
		free_node(n);
		return e;
	}
	xgpu_alloc_add(rsp.dptr, size, XGPU_ALLOC_DEVICE, 0);
	*m = (struct graph_mem){.dptr = rsp.dptr, .size = size, .refs = 1};
	pthread_mutex_lock(&graph_mem_lock);
	m->next = graph_mems;
	graph_mems = m;
	graph_mem_bytes += size;
	if (graph_mem_bytes > graph_mem_high)
		graph_mem_high = graph_mem_bytes;
	pthread_mutex_unlock(&graph_mem_lock);
	n->mem = m;
	*out = n;
	return cudaSuccess;
}

/* Memory nodes (see struct graph_mem): both are empty nodes on the wire. */
CUresult cuGraphAddMemAllocNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
				size_t numDependencies, CUDA_MEM_ALLOC_NODE_PARAMS *nodeParams)
{
	if (!phGraphNode || !nodeParams || !nodeParams->bytesize || !valid_graph(hGraph))
		return CUDA_ERROR_INVALID_VALUE;
	const CUmemPoolProps *pp = &nodeParams->poolProps;
	if (pp->allocType != CU_MEM_ALLOCATION_TYPE_PINNED ||
	    pp->location.type != CU_MEM_LOCATION_TYPE_DEVICE || pp->handleTypes != CU_MEM_HANDLE_TYPE_NONE)
		return CUDA_ERROR_INVALID_VALUE;
	int ndev = 0;
	CUresult r = cuDeviceGetCount(&ndev);
	if (r)
		return r;
	if (pp->location.id < 0 || pp->location.id >= ndev ||
	    (nodeParams->accessDescCount && !nodeParams->accessDescs))
		return CUDA_ERROR_INVALID_VALUE;
	struct xgpu_client *c;
	if ((r = graph_client(&c)))
		return r;
	struct CUgraphNode_st *n;
	int e = mem_alloc_node(c, nodeParams->bytesize, &n);
	if (e)
		return e == cudaErrorMemoryAllocation ? CUDA_ERROR_OUT_OF_MEMORY : xgpu_drv_result(e);
	nodeParams->dptr = n->mem->dptr;
	return add_node(hGraph, dependencies, numDependencies, n, phGraphNode);
}

CUresult cuGraphMemAllocNodeGetParams(CUgraphNode hNode, CUDA_MEM_ALLOC_NODE_PARAMS *params_out)
{
	if (!valid_node(hNode) || !hNode->mem || !params_out)
		return CUDA_ERROR_INVALID_VALUE;
	memset(params_out, 0, sizeof *params_out);
	params_out->poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
	params_out->poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	params_out->bytesize = hNode->mem->size;
	params_out->dptr = hNode->mem->dptr;
	return CUDA_SUCCESS;
}

/* The address must be one a graph's allocation node made. */
CUresult cuGraphAddMemFreeNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
			       size_t numDependencies, CUdeviceptr dptr)
{
	if (!phGraphNode || !valid_graph(hGraph) || !dptr)
		return CUDA_ERROR_INVALID_VALUE;
	bool known = false;
	for (size_t i = 0; i < hGraph->n && !known; i++)
		known = hGraph->nodes[i]->mem && hGraph->nodes[i]->mem->dptr == dptr;
	struct xgpu_alloc a;
	if (!known && !(xgpu_alloc_find(dptr, 0, &a) && a.base == dptr))
		return CUDA_ERROR_INVALID_VALUE;
	struct CUgraphNode_st *n = new_node(CU_GRAPH_NODE_TYPE_MEM_FREE, XGPU_GN_EMPTY);
	if (!n)
		return CUDA_ERROR_OUT_OF_MEMORY;
	n->free_ptr = dptr;
	return add_node(hGraph, dependencies, numDependencies, n, phGraphNode);
}

CUresult cuGraphMemFreeNodeGetParams(CUgraphNode hNode, CUdeviceptr *dptr_out)
{
	if (!valid_node(hNode) || hNode->type != CU_GRAPH_NODE_TYPE_MEM_FREE || !dptr_out)
		return CUDA_ERROR_INVALID_VALUE;
	*dptr_out = hNode->free_ptr;
	return CUDA_SUCCESS;
}

static struct CUgraph_st *clone_graph(const struct CUgraph_st *g, int depth)
{
	struct CUgraph_st *c = depth <= MAX_CHILD_DEPTH ? new_graph() : NULL;
	if (!c)
		return NULL;
	/* Handles keep their values: the kernels cloned hold them. */
	c->cond_depth = g->cond_depth;
	if ((g->n && !(c->nodes = calloc(g->n, sizeof *c->nodes))) ||
	    (g->nconds && !(c->conds = malloc(g->nconds * sizeof *c->conds)))) {
		free_graph(c);
		return NULL;
	}
	if (g->nconds)
		memcpy(c->conds, g->conds, g->nconds * sizeof *c->conds);
	c->nconds = g->nconds;
	c->cap = g->n;
	for (size_t i = 0; i < g->n; i++) {
		const struct CUgraphNode_st *s = g->nodes[i];
		struct CUgraphNode_st *n = malloc(sizeof *n);
		if (!n) {
			free_graph(c);
			return NULL;
		}
		*n = *s;
		n->graph = c;
		if (n->mem) {
			pthread_mutex_lock(&graph_mem_lock);
			n->mem->refs++;
			pthread_mutex_unlock(&graph_mem_lock);
		}
		n->params = NULL;
		n->child = NULL;
		n->deps = NULL;
		n->ndeps = 0;
		n->bodies = NULL;
		c->nodes[c->n++] = n;
		if ((s->params && !(n->params = malloc(s->w.param_len))) ||
		    (s->child && !(n->child = clone_graph(s->child, depth + 1))) ||
		    (s->ndeps && !(n->deps = malloc(s->ndeps * sizeof *n->deps))) ||
		    (s->bodies && !(n->bodies = calloc(s->nbodies, sizeof *n->bodies)))) {
			free_graph(c);
			return NULL;
		}
		for (unsigned b = 0; s->bodies && b < s->nbodies; b++)
			if (!(n->bodies[b] = clone_graph(s->bodies[b], depth + 1))) {
				free_graph(c);
				return NULL;
			} else {
				n->bodies[b]->body = true;
				n->bodies[b]->parent = c;
			}
		if (s->params)
			memcpy(n->params, s->params, s->w.param_len);
	}
	for (size_t i = 0; i < g->n; i++) {
		const struct CUgraphNode_st *s = g->nodes[i];
		for (size_t k = 0; k < s->ndeps; k++) {
			size_t j = 0;
			while (j < g->n && g->nodes[j] != s->deps[k])
				j++;
			if (j == g->n) { /* cannot be: deps are nodes of g */
				free_graph(c);
				return NULL;
			}
			c->nodes[i]->deps[c->nodes[i]->ndeps++] = c->nodes[j];
		}
	}
	return c;
}

CUresult cuGraphClone(CUgraph *phGraphClone, CUgraph originalGraph)
{
	if (!phGraphClone || !valid_graph(originalGraph))
		return CUDA_ERROR_INVALID_VALUE;
	struct CUgraph_st *c = clone_graph(originalGraph, 0);
	if (!c)
		return CUDA_ERROR_OUT_OF_MEMORY;
	*phGraphClone = c;
	return CUDA_SUCCESS;
}

CUresult cuGraphAddChildGraphNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
				  size_t numDependencies, CUgraph childGraph)
{
	if (!phGraphNode || !valid_graph(childGraph) || childGraph == hGraph)
		return CUDA_ERROR_INVALID_VALUE;
	struct CUgraphNode_st *n = new_node(CU_GRAPH_NODE_TYPE_GRAPH, 0);
	if (!n)
		return CUDA_ERROR_OUT_OF_MEMORY;
	if (!(n->child = clone_graph(childGraph, 1))) {
		free_node(n);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	return add_node(hGraph, dependencies, numDependencies, n, phGraphNode);
}

/* ---- conditional nodes ---------------------------------------------------- */

CUresult cuGraphConditionalHandleCreate(CUgraphConditionalHandle *pHandle_out, CUgraph hGraph, CUcontext ctx,
					unsigned int defaultLaunchValue, unsigned int flags)
{
	(void)ctx; /* the process has one context on its GPU */
	if (!pHandle_out || !valid_graph(hGraph) || (flags & ~(unsigned)CU_GRAPH_COND_ASSIGN_DEFAULT))
		return CUDA_ERROR_INVALID_VALUE;
	if (hGraph->nconds >= XGPU_MAX_GRAPH_CONDS)
		return xgpu_drv_unsupported(
		    "cuGraphConditionalHandleCreate (more than 128 handles in one graph)");
	struct cond_handle *v = realloc(hGraph->conds, (hGraph->nconds + 1) * sizeof *v);
	if (!v)
		return CUDA_ERROR_OUT_OF_MEMORY;
	hGraph->conds = v;
	uint64_t id = atomic_fetch_add(&next_cond, 1);
	v[hGraph->nconds++] = (struct cond_handle){COND_TAG | (id & 0xffffffffu), defaultLaunchValue, flags};
	*pHandle_out = v[hGraph->nconds - 1].value;
	return CUDA_SUCCESS;
}

/* Whether value is a handle of g or of a graph around it (g being a body). */
static bool find_cond(const struct CUgraph_st *g, uint64_t value)
{
	for (; g; g = g->parent)
		for (size_t i = 0; i < g->nconds; i++)
			if (g->conds[i].value == value)
				return true;
	return false;
}

/* A conditional node with p->size empty bodies, handed back in
 * p->phGraph_out. Its handle must be one of g's or of a graph g is a body
 * of, as CUDA requires. */
static CUresult add_conditional(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, size_t ndeps,
				CUDA_CONDITIONAL_NODE_PARAMS *p)
{
	if (!out || !valid_graph(g) || !find_cond(g, p->handle))
		return CUDA_ERROR_INVALID_VALUE;
	bool ok = (p->type == CU_GRAPH_COND_TYPE_IF && (p->size == 1 || p->size == 2)) ||
		  (p->type == CU_GRAPH_COND_TYPE_WHILE && p->size == 1) ||
		  (p->type == CU_GRAPH_COND_TYPE_SWITCH && p->size >= 1);
	if (!ok)
		return CUDA_ERROR_INVALID_VALUE;
	if (p->size > XGPU_MAX_GRAPH_BODIES)
		return xgpu_drv_unsupported("cuGraphAddNode (a switch node of more than 1024 bodies)");
	if (g->cond_depth >= XGPU_MAX_GRAPH_COND_DEPTH)
		return xgpu_drv_unsupported("cuGraphAddNode (conditional nodes nested more than 8 deep)");
	struct CUgraphNode_st *n = new_node(CU_GRAPH_NODE_TYPE_CONDITIONAL, XGPU_GN_COND);
	if (!n || !(n->bodies = calloc(p->size, sizeof *n->bodies))) {
		free(n);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	n->nbodies = p->size;
	n->cond_handle = p->handle;
	n->cond_type = p->type;
	for (unsigned i = 0; i < p->size; i++) {
		if (!(n->bodies[i] = new_graph())) {
			free_node(n);
			return CUDA_ERROR_OUT_OF_MEMORY;
		}
		n->bodies[i]->body = true;
		n->bodies[i]->parent = g;
		n->bodies[i]->cond_depth = g->cond_depth + 1;
	}
	CUgraph *bodies = n->bodies;
	CUresult r = add_node(g, deps, ndeps, n, out);
	if (!r)
		p->phGraph_out = bodies;
	return r;
}

/* Edge data: a programmatic edge (programmatic dependent launch) lets the
 * dependent kernel start before its predecessor ends; waiting for the end,
 * as a plain edge does, is a valid schedule of it, as stream order is for
 * the launch attribute. So every valid edge is kept as a plain one. */
static CUresult check_edges(const CUgraphEdgeData *e, size_t n)
{
	for (size_t i = 0; e && i < n; i++) {
		if (e[i].to_port || (e[i].type != CU_GRAPH_DEPENDENCY_TYPE_DEFAULT &&
				     e[i].type != CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC))
			return CUDA_ERROR_INVALID_VALUE;
		if (e[i].from_port != CU_GRAPH_KERNEL_NODE_PORT_DEFAULT &&
		    e[i].from_port != CU_GRAPH_KERNEL_NODE_PORT_PROGRAMMATIC &&
		    e[i].from_port != CU_GRAPH_KERNEL_NODE_PORT_LAUNCH_ORDER)
			return CUDA_ERROR_INVALID_VALUE;
		for (size_t j = 0; j < sizeof e[i].reserved; j++)
			if (e[i].reserved[j])
				return CUDA_ERROR_INVALID_VALUE;
	}
	return CUDA_SUCCESS;
}

/* The generic form (cuGraphAddNode, which XLA's command buffers use): each
 * type goes to its own adder, so it is checked and described the same way.
 * Unused bytes must be zero, as CUDA requires; batch-memop and
 * external-semaphore nodes are refused by name as their typed forms are. */
static CUresult add_generic_node(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
				 size_t numDependencies, CUgraphNodeParams *p)
{
	if (!p || p->reserved0[0] || p->reserved0[1] || p->reserved0[2] || p->reserved2)
		return CUDA_ERROR_INVALID_VALUE;
	switch (p->type) {
	case CU_GRAPH_NODE_TYPE_EMPTY:
		return cuGraphAddEmptyNode(phGraphNode, hGraph, dependencies, numDependencies);
	case CU_GRAPH_NODE_TYPE_KERNEL:
		return cuGraphAddKernelNode_v2(phGraphNode, hGraph, dependencies, numDependencies,
					       (const CUDA_KERNEL_NODE_PARAMS *)&p->kernel);
	case CU_GRAPH_NODE_TYPE_MEMCPY:
		if (p->memcpy.flags || p->memcpy.reserved)
			return CUDA_ERROR_INVALID_VALUE;
		return cuGraphAddMemcpyNode(phGraphNode, hGraph, dependencies, numDependencies,
					    &p->memcpy.copyParams, p->memcpy.copyCtx);
	case CU_GRAPH_NODE_TYPE_MEMSET:
		return cuGraphAddMemsetNode(phGraphNode, hGraph, dependencies, numDependencies,
					    (const CUDA_MEMSET_NODE_PARAMS *)&p->memset, p->memset.ctx);
	case CU_GRAPH_NODE_TYPE_HOST: {
		CUDA_HOST_NODE_PARAMS h = {.fn = p->host.fn, .userData = p->host.userData};
		return cuGraphAddHostNode(phGraphNode, hGraph, dependencies, numDependencies, &h);
	}
	case CU_GRAPH_NODE_TYPE_GRAPH:
		/* Moving a graph's ownership into the node (for graphs with memory
		 * nodes) is not offered; cloning is what cuGraphAddChildGraphNode does. */
		if (p->graph.ownership != CU_GRAPH_CHILD_GRAPH_OWNERSHIP_CLONE)
			return xgpu_drv_unsupported("cuGraphAddNode (a child graph moved into its node)");
		return cuGraphAddChildGraphNode(phGraphNode, hGraph, dependencies, numDependencies,
						p->graph.graph);
	case CU_GRAPH_NODE_TYPE_WAIT_EVENT:
		return cuGraphAddEventWaitNode(phGraphNode, hGraph, dependencies, numDependencies,
					       p->eventWait.event);
	case CU_GRAPH_NODE_TYPE_EVENT_RECORD:
		return cuGraphAddEventRecordNode(phGraphNode, hGraph, dependencies, numDependencies,
						 p->eventRecord.event);
	case CU_GRAPH_NODE_TYPE_MEM_ALLOC:
		return cuGraphAddMemAllocNode(phGraphNode, hGraph, dependencies, numDependencies,
					      (CUDA_MEM_ALLOC_NODE_PARAMS *)&p->alloc);
	case CU_GRAPH_NODE_TYPE_MEM_FREE:
		return cuGraphAddMemFreeNode(phGraphNode, hGraph, dependencies, numDependencies,
					     p->free.dptr);
	case CU_GRAPH_NODE_TYPE_CONDITIONAL:
		return add_conditional(phGraphNode, hGraph, dependencies, numDependencies, &p->conditional);
	case CU_GRAPH_NODE_TYPE_EXT_SEMAS_SIGNAL:
	case CU_GRAPH_NODE_TYPE_EXT_SEMAS_WAIT:
		return xgpu_drv_unsupported("cuGraphAddNode (external semaphore nodes)");
	case CU_GRAPH_NODE_TYPE_BATCH_MEM_OP:
		return xgpu_drv_unsupported("cuGraphAddNode (batch memory operation nodes)");
	default:
		return CUDA_ERROR_INVALID_VALUE;
	}
}

#undef cuGraphAddNode
CUresult cuGraphAddNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
			size_t numDependencies, CUgraphNodeParams *nodeParams);
CUresult cuGraphAddNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
			size_t numDependencies, CUgraphNodeParams *nodeParams)
{
	return add_generic_node(phGraphNode, hGraph, dependencies, numDependencies, nodeParams);
}

CUresult cuGraphAddNode_v2(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
			   const CUgraphEdgeData *dependencyData, size_t numDependencies,
			   CUgraphNodeParams *nodeParams)
{
	CUresult r = check_edges(dependencyData, numDependencies);
	return r ? r : add_generic_node(phGraphNode, hGraph, dependencies, numDependencies, nodeParams);
}

/* Adds edges after the fact, so a graph may gain a cycle here; the daemon
 * refuses such a graph at instantiate. */
static CUresult add_dependencies(const CUgraphNode *from, const CUgraphNode *to, size_t n)
{
	if (n && (!from || !to))
		return CUDA_ERROR_INVALID_VALUE;
	for (size_t i = 0; i < n; i++) {
		if (!valid_node(from[i]) || !valid_node(to[i]) || from[i]->graph != to[i]->graph ||
		    from[i] == to[i])
			return CUDA_ERROR_INVALID_VALUE;
		struct CUgraphNode_st *t = to[i];
		for (size_t k = 0; k < t->ndeps; k++)
			if (t->deps[k] == from[i])
				return CUDA_ERROR_INVALID_VALUE;
		struct CUgraphNode_st **v = realloc(t->deps, (t->ndeps + 1) * sizeof *v);
		if (!v)
			return CUDA_ERROR_OUT_OF_MEMORY;
		v[t->ndeps++] = from[i];
		t->deps = v;
	}
	return CUDA_SUCCESS;
}

#undef cuGraphAddDependencies
CUresult cuGraphAddDependencies(CUgraph hGraph, const CUgraphNode *from, const CUgraphNode *to,
				size_t numDependencies);
CUresult cuGraphAddDependencies(CUgraph hGraph, const CUgraphNode *from, const CUgraphNode *to,
				size_t numDependencies)
{
	return valid_graph(hGraph) ? add_dependencies(from, to, numDependencies) : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuGraphAddDependencies_v2(CUgraph hGraph, const CUgraphNode *from, const CUgraphNode *to,
				   const CUgraphEdgeData *edgeData, size_t numDependencies)
{
	CUresult r = check_edges(edgeData, numDependencies);
	return r ? r : cuGraphAddDependencies(hGraph, from, to, numDependencies);
}

CUresult cuGraphGetNodes(CUgraph hGraph, CUgraphNode *nodes, size_t *numNodes)
{
	if (!valid_graph(hGraph) || !numNodes)
		return CUDA_ERROR_INVALID_VALUE;
	if (nodes) {
		size_t n = *numNodes < hGraph->n ? *numNodes : hGraph->n;
		for (size_t i = 0; i < n; i++)
			nodes[i] = hGraph->nodes[i];
		for (size_t i = n; i < *numNodes; i++)
			nodes[i] = NULL;
	} else
		*numNodes = hGraph->n;
	return CUDA_SUCCESS;
}

CUresult cuGraphNodeGetType(CUgraphNode hNode, CUgraphNodeType *type)
{
	if (!valid_node(hNode) || !type)
		return CUDA_ERROR_INVALID_VALUE;
	*type = hNode->type;
	return CUDA_SUCCESS;
}

CUresult cuGraphChildGraphNodeGetGraph(CUgraphNode hNode, CUgraph *phGraph)
{
	if (!valid_node(hNode) || !phGraph || !hNode->child)
		return CUDA_ERROR_INVALID_VALUE;
	*phGraph = hNode->child;
	return CUDA_SUCCESS;
}

/* ---- instantiate, launch ---------------------------------------------------- */

/* The wire description being built: nodes, edges, kernel parameters, and
 * the host side of each host copy in node order. */
struct desc {
	struct xgpu_graph_node *nodes;
	size_t nn, capn;
	struct xgpu_graph_edge *edges;
	size_t ne, cape;
	uint8_t *params;
	size_t np, capp;
	struct host_copy *copies;
	size_t nc, capc;
	struct xgpu_graph_cond *conds;
	size_t ncd, capcd;
	uint32_t nbodies;
};

static bool grow(void **v, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return true;
	size_t cap2 = *cap ? *cap : 16;
	while (cap2 < need)
		cap2 *= 2;
	void *p = realloc(*v, cap2 * elem);
	if (!p)
		return false;
	*v = p;
	*cap = cap2;
	return true;
}

static CUresult desc_node(struct desc *d, const struct xgpu_graph_node *w, uint32_t *index)
{
	if (d->nn >= XGPU_MAX_GRAPH_NODES)
		return CUDA_ERROR_INVALID_VALUE;
	if (!grow((void **)&d->nodes, &d->capn, d->nn + 1, sizeof *d->nodes))
		return CUDA_ERROR_OUT_OF_MEMORY;
	d->nodes[d->nn] = *w;
	*index = (uint32_t)d->nn++;
	return CUDA_SUCCESS;
}

static CUresult desc_edge(struct desc *d, uint32_t from, uint32_t to)
{
	if (d->ne >= XGPU_MAX_GRAPH_EDGES)
		return CUDA_ERROR_INVALID_VALUE;
	if (!grow((void **)&d->edges, &d->cape, d->ne + 1, sizeof *d->edges))
		return CUDA_ERROR_OUT_OF_MEMORY;
	d->edges[d->ne++] = (struct xgpu_graph_edge){from, to};
	return CUDA_SUCCESS;
}

/* Enters g's conditional handles into d's table as handles of wire graph
 * body (g is that graph or a child graph flattened into it). */
static CUresult desc_conds(struct desc *d, const struct CUgraph_st *g, uint32_t body)
{
	for (size_t i = 0; i < g->nconds; i++) {
		for (size_t k = 0; k < d->ncd; k++)
			if (d->conds[k].guest == g->conds[i].value)
				return xgpu_drv_unsupported("cuGraphInstantiate of a graph holding one "
							    "conditional handle twice (a graph "
							    "and its clone)");
		if (d->ncd >= XGPU_MAX_GRAPH_CONDS)
			return xgpu_drv_unsupported(
			    "cuGraphInstantiate (more than 128 conditional handles in one graph)");
		if (!grow((void **)&d->conds, &d->capcd, d->ncd + 1, sizeof *d->conds))
			return CUDA_ERROR_OUT_OF_MEMORY;
		d->conds[d->ncd++] = (struct xgpu_graph_cond){.guest = g->conds[i].value,
							      .default_value = g->conds[i].default_value,
							      .flags = g->conds[i].flags,
							      .graph = body};
	}
	return CUDA_SUCCESS;
}

/* Flattens g into d as nodes of wire graph body (cdepth conditional nodes
 * around it). Each node becomes one wire node, a child graph an empty entry
 * node before its nodes and an empty exit node after them; first[i] and
 * last[i] are node i's first and last wire node. A conditional node's bodies
 * become wire graphs of their own, numbered in the order they are met. */
static CUresult flatten(struct desc *d, const struct CUgraph_st *g, const uint32_t *entry, int depth,
			uint32_t *exit_out, uint32_t body, unsigned cdepth)
{
	if (depth > MAX_CHILD_DEPTH)
		return CUDA_ERROR_INVALID_VALUE;
	if (cdepth > XGPU_MAX_GRAPH_COND_DEPTH)
		return xgpu_drv_unsupported("cuGraphInstantiate (conditional nodes nested more than 8 deep)");
	CUresult r = desc_conds(d, g, body);
	if (r)
		return r;
	uint32_t *first = malloc((g->n ? g->n : 1) * sizeof *first),
		 *last = malloc((g->n ? g->n : 1) * sizeof *last);
	r = first && last ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
	for (size_t i = 0; !r && i < g->n; i++) {
		const struct CUgraphNode_st *n = g->nodes[i];
		struct xgpu_graph_node w = n->w;
		if (n->type == CU_GRAPH_NODE_TYPE_GRAPH)
			w = (struct xgpu_graph_node){.type = XGPU_GN_EMPTY};
		w.graph = body;
		uint32_t first_body = 0;
		if (n->type == CU_GRAPH_NODE_TYPE_CONDITIONAL) {
			size_t k = 0;
			while (k < d->ncd && d->conds[k].guest != n->cond_handle)
				k++;
			if (k == d->ncd || n->nbodies > XGPU_MAX_GRAPH_BODIES - d->nbodies) {
				r = k == d->ncd ? CUDA_ERROR_INVALID_VALUE
						: xgpu_drv_unsupported("cuGraphInstantiate (more than 1024 "
								       "conditional bodies in one graph)");
				break;
			}
			first_body = d->nbodies + 1;
			d->nbodies += n->nbodies;
			w.handle = k;
			w.value = (uint32_t)n->cond_type;
			w.src = first_body;
			w.size = n->nbodies;
		}
		if (n->type == CU_GRAPH_NODE_TYPE_KERNEL) {
			if (!grow((void **)&d->params, &d->capp, d->np + n->w.param_len, 1)) {
				r = CUDA_ERROR_OUT_OF_MEMORY;
				break;
			}
			if (d->np + n->w.param_len > XGPU_MAX_GRAPH_PARAM_BYTES) {
				r = CUDA_ERROR_INVALID_VALUE;
				break;
			}
			if (n->w.param_len)
				memcpy(d->params + d->np, n->params, n->w.param_len);
			w.param_off = (uint32_t)d->np;
			d->np += n->w.param_len;
		}
		if (n->w.type == XGPU_GN_HTOD || n->w.type == XGPU_GN_DTOH) {
			if (!grow((void **)&d->copies, &d->capc, d->nc + 1, sizeof *d->copies)) {
				r = CUDA_ERROR_OUT_OF_MEMORY;
				break;
			}
			d->copies[d->nc++] =
			    (struct host_copy){n->host, n->w.size, n->w.type == XGPU_GN_HTOD};
		}
		if ((r = desc_node(d, &w, &first[i])))
			break;
		last[i] = first[i];
		/* Dependencies: within g, on earlier or later nodes (edges added
		 * afterwards may point anywhere; the daemon finds cycles). */
		for (size_t k = 0; !r && k < n->ndeps; k++) {
			size_t j = 0;
			while (j < g->n && g->nodes[j] != n->deps[k])
				j++;
			/* Only earlier nodes have their wire index yet: later
			 * ones are linked below. */
			if (j < i)
				r = desc_edge(d, last[j], first[i]);
		}
		if (!r && !n->ndeps && entry)
			r = desc_edge(d, *entry, first[i]);
		if (!r && n->type == CU_GRAPH_NODE_TYPE_GRAPH) {
			uint32_t exit_node;
			r = flatten(d, n->child, &first[i], depth + 1, &exit_node, body, cdepth);
			last[i] = exit_node;
		}
		for (unsigned b = 0; !r && b < n->nbodies; b++)
			r = flatten(d, n->bodies[b], NULL, depth + 1, NULL, first_body + b, cdepth + 1);
	}
	/* Edges to nodes that come later in g (cuGraphAddDependencies). */
	for (size_t i = 0; !r && i < g->n; i++) {
		const struct CUgraphNode_st *n = g->nodes[i];
		for (size_t k = 0; !r && k < n->ndeps; k++) {
			size_t j = 0;
			while (j < g->n && g->nodes[j] != n->deps[k])
				j++;
			if (j >= i && j < g->n)
				r = desc_edge(d, last[j], first[i]);
		}
	}
	if (!r && exit_out) {
		struct xgpu_graph_node w = {.type = XGPU_GN_EMPTY, .graph = body};
		r = desc_node(d, &w, exit_out);
		for (size_t i = 0; !r && i < g->n; i++)
			r = desc_edge(d, last[i], *exit_out);
		if (!r && !g->n && entry)
			r = desc_edge(d, *entry, *exit_out);
	}
	free(first);
	free(last);
	return r;
}

static void desc_free(struct desc *d)
{
	free(d->nodes);
	free(d->edges);
	free(d->params);
	free(d->copies);
	free(d->conds);
}

/* The daemon's side of x from graph g: one GRAPH_INSTANTIATE.
 * On success x's remote handle, byte counts and host copies are g's. */
static CUresult send_graph(struct xgpu_client *c, const struct CUgraph_st *g, struct CUgraphExec_st *x)
{
	struct desc d = {0};
	CUresult r = flatten(&d, g, NULL, 0, NULL, 0, 0);
	/* The daemon needs a node: an empty graph launches as one empty node. */
	uint32_t only;
	struct xgpu_graph_node empty = {.type = XGPU_GN_EMPTY};
	if (!r && !d.nn)
		r = desc_node(&d, &empty, &only);
	struct xgpu_graph_desc h = {.nnodes = (uint32_t)d.nn,
				    .nedges = (uint32_t)d.ne,
				    .param_bytes = (uint32_t)d.np,
				    .nconds = (uint32_t)d.ncd,
				    .nbodies = d.nbodies};
	size_t len =
	    sizeof h + d.nn * sizeof *d.nodes + d.ne * sizeof *d.edges + d.ncd * sizeof *d.conds + d.np;
	uint8_t *buf = r ? NULL : malloc(len);
	if (!r && !buf)
		r = CUDA_ERROR_OUT_OF_MEMORY;
	if (!r) {
		uint8_t *p = buf;
		memcpy(p, &h, sizeof h);
		p += sizeof h;
		memcpy(p, d.nodes, d.nn * sizeof *d.nodes);
		p += d.nn * sizeof *d.nodes;
		if (d.ne)
			memcpy(p, d.edges, d.ne * sizeof *d.edges);
		p += d.ne * sizeof *d.edges;
		if (d.ncd)
			memcpy(p, d.conds, d.ncd * sizeof *d.conds);
		p += d.ncd * sizeof *d.conds;
		if (d.np)
			memcpy(p, d.params, d.np);
		struct xgpu_req_GRAPH_INSTANTIATE req = {0};
		struct xgpu_rsp_GRAPH_INSTANTIATE rsp;
		struct xgpu_rpc rpc = xgpu_rpc_GRAPH_INSTANTIATE(&req, &rsp);
		rpc.out = buf;
		rpc.out_len = len;
		r = xgpu_drv_result(xgpu_rpc(c, &rpc));
		if (!r) {
			x->remote = rsp.exec;
			x->generation = xgpu_fork_generation;
			x->htod_bytes = rsp.htod_bytes;
			x->dtoh_bytes = rsp.dtoh_bytes;
			free(x->copies);
			x->copies = d.copies;
			x->ncopies = d.nc;
			d.copies = NULL;
		}
	}
	free(buf);
	desc_free(&d);
	return r;
}

static void destroy_remote(struct xgpu_client *c, xgpu_handle_t remote)
{
	struct xgpu_req_GRAPH_EXEC_DESTROY req = {.exec = remote};
	struct xgpu_rsp_GRAPH_EXEC_DESTROY rsp;
	xgpu_call_GRAPH_EXEC_DESTROY(c, &req, &rsp);
}

/* Whether g holds host nodes at its top level (1), in a child graph (-1,
 * refused), or none (0). */
static int host_nodes(const struct CUgraph_st *g, int depth)
{
	int found = 0;
	for (size_t i = 0; i < g->n && found >= 0; i++) {
		const struct CUgraphNode_st *n = g->nodes[i];
		if (n->type == CU_GRAPH_NODE_TYPE_HOST)
			found = depth ? -1 : 1;
		else if (n->child && depth < MAX_CHILD_DEPTH && host_nodes(n->child, depth + 1))
			found = -1;
		for (unsigned b = 0; b < n->nbodies && found >= 0; b++)
			if (depth < MAX_CHILD_DEPTH && host_nodes(n->bodies[b], depth + 1))
				found = -1;
	}
	return found;
}

static void free_parts(struct xgpu_client *c, struct CUgraphExec_st *x)
{
	for (size_t i = 0; i < x->nparts; i++) {
		struct CUgraphExec_st *sub = x->parts[i].sub;
		if (!sub)
			continue;
		if (c && sub->generation == xgpu_fork_generation)
			destroy_remote(c, sub->remote);
		free(sub->copies);
		free(sub);
	}
	free(x->parts);
	x->parts = NULL;
	x->nparts = 0;
}

static CUresult add_part(struct CUgraphExec_st *x, struct exec_part p)
{
	struct exec_part *v = realloc(x->parts, (x->nparts + 1) * sizeof *v);
	if (!v)
		return CUDA_ERROR_OUT_OF_MEMORY;
	x->parts = v;
	x->parts[x->nparts++] = p;
	return CUDA_SUCCESS;
}

/* The daemon graph of the device nodes seg[0..n) (their edges among
 * themselves; the others are ordered by the stream), as a part of x. */
static CUresult add_segment(struct xgpu_client *c, struct CUgraphExec_st *x, struct CUgraphNode_st **seg,
			    size_t n)
{
	/* Its conditional nodes use the whole graph's handles. */
	struct CUgraph_st tmp = {.magic = GRAPH_MAGIC,
				 .nodes = seg,
				 .n = n,
				 .cap = n,
				 .conds = x->snapshot->conds,
				 .nconds = x->snapshot->nconds};
	struct CUgraphExec_st *sub = calloc(1, sizeof *sub);
	if (!sub)
		return CUDA_ERROR_OUT_OF_MEMORY;
	CUresult r = send_graph(c, &tmp, sub);
	if (!r)
		r = add_part(x, (struct exec_part){.sub = sub});
	if (r) {
		if (sub->remote)
			destroy_remote(c, sub->remote);
		free(sub->copies);
		free(sub);
	}
	return r;
}

/* Builds x's parts from its snapshot: a topological order (Kahn's, nodes
 * taken in their order where free to), cut at each host node. */
static CUresult build_parts(struct xgpu_client *c, struct CUgraphExec_st *x)
{
	const struct CUgraph_st *g = x->snapshot;
	size_t n = g->n;
	size_t *indeg = calloc(n ? n : 1, sizeof *indeg);
	bool *done = calloc(n ? n : 1, sizeof *done);
	struct CUgraphNode_st **seg = malloc((n ? n : 1) * sizeof *seg);
	CUresult r = indeg && done && seg ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
	for (size_t i = 0; !r && i < n; i++)
		indeg[i] = g->nodes[i]->ndeps;
	size_t nseg = 0;
	for (size_t taken = 0; !r && taken < n; taken++) {
		size_t i = 0;
		while (i < n && (done[i] || indeg[i]))
			i++;
		if (i == n) {
			r = CUDA_ERROR_INVALID_VALUE; /* a cycle */
			break;
		}
		done[i] = true;
		struct CUgraphNode_st *node = g->nodes[i];
		for (size_t j = 0; j < n; j++)
			for (size_t k = 0; k < g->nodes[j]->ndeps; k++)
				if (g->nodes[j]->deps[k] == node)
					indeg[j]--;
		if (node->type != CU_GRAPH_NODE_TYPE_HOST) {
			seg[nseg++] = node;
			continue;
		}
		if (nseg)
			r = add_segment(c, x, seg, nseg);
		nseg = 0;
		if (!r)
			r = add_part(x, (struct exec_part){.host = node});
	}
	if (!r && nseg)
		r = add_segment(c, x, seg, nseg);
	free(indeg);
	free(done);
	free(seg);
	if (r)
		free_parts(c, x);
	return r;
}

/* x's daemon side from its snapshot, in parts if it has host nodes. */
static CUresult send_exec(struct xgpu_client *c, struct CUgraphExec_st *x)
{
	int h = host_nodes(x->snapshot, 0);
	if (h < 0)
		return xgpu_drv_unsupported(
		    "cuGraphInstantiate of a child graph holding a host node, or a conditional "
		    "body holding one (xgpu serves host nodes at a graph's top level)");
	if (h) {
		free_parts(c, x);
		x->generation = xgpu_fork_generation;
		return build_parts(c, x);
	}
	return send_graph(c, x->snapshot, x);
}

static CUresult instantiate(CUgraphExec *out, CUgraph g, unsigned long long flags)
{
	struct xgpu_client *c;
	if (!out || !valid_graph(g))
		return CUDA_ERROR_INVALID_VALUE;
	/* Node priorities are hints, and ignoring them is a valid schedule.
	 * Freeing a launch's leftover allocations at the next launch and device
	 * launches are not offered. */
	if (flags & ~(unsigned long long)CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY)
		return xgpu_drv_unsupported("cuGraphInstantiate (with auto-free or device-launch flags)");
	CUresult r = graph_client(&c);
	if (r)
		return r;
	struct CUgraphExec_st *x = calloc(1, sizeof *x);
	if (!x)
		return CUDA_ERROR_OUT_OF_MEMORY;
	x->snapshot = clone_graph(g, 0);
	if (!x->snapshot)
		r = CUDA_ERROR_OUT_OF_MEMORY;
	if (!r)
		r = send_exec(c, x);
	if (r) {
		if (x->snapshot)
			free_graph(x->snapshot);
		free(x);
		return r;
	}
	x->magic = EXEC_MAGIC;
	x->source = g;
	*out = x;
	return CUDA_SUCCESS;
}

CUresult cuGraphInstantiateWithFlags(CUgraphExec *phGraphExec, CUgraph hGraph, unsigned long long flags)
{
	return instantiate(phGraphExec, hGraph, flags);
}

CUresult cuGraphInstantiateWithParams(CUgraphExec *phGraphExec, CUgraph hGraph,
				      CUDA_GRAPH_INSTANTIATE_PARAMS *instantiateParams)
{
	if (!instantiateParams)
		return CUDA_ERROR_INVALID_VALUE;
	if (instantiateParams->hUploadStream)
		return xgpu_drv_unsupported("cuGraphInstantiateWithParams (upload stream)");
	CUresult r = instantiate(phGraphExec, hGraph, instantiateParams->flags);
	instantiateParams->result_out = r ? CUDA_GRAPH_INSTANTIATE_ERROR : CUDA_GRAPH_INSTANTIATE_SUCCESS;
	instantiateParams->hErrNode_out = NULL;
	return r;
}
CUresult cuGraphInstantiateWithParams_ptsz(CUgraphExec *phGraphExec, CUgraph hGraph,
					   CUDA_GRAPH_INSTANTIATE_PARAMS *instantiateParams)
    XGPU_ALIAS(cuGraphInstantiateWithParams);

/* The pre-CUDA-11.4 ABIs: an error node and a log buffer. */
#undef cuGraphInstantiate
CUresult cuGraphInstantiate(CUgraphExec *phGraphExec, CUgraph hGraph, CUgraphNode *phErrorNode,
			    char *logBuffer, size_t bufferSize);
CUresult cuGraphInstantiate(CUgraphExec *phGraphExec, CUgraph hGraph, CUgraphNode *phErrorNode,
			    char *logBuffer, size_t bufferSize)
{
	if (phErrorNode)
		*phErrorNode = NULL;
	if (logBuffer && bufferSize)
		logBuffer[0] = '\0';
	return instantiate(phGraphExec, hGraph, 0);
}
CUresult cuGraphInstantiate_v2(CUgraphExec *phGraphExec, CUgraph hGraph, CUgraphNode *phErrorNode,
			       char *logBuffer, size_t bufferSize);
CUresult cuGraphInstantiate_v2(CUgraphExec *phGraphExec, CUgraph hGraph, CUgraphNode *phErrorNode,
			       char *logBuffer, size_t bufferSize) XGPU_ALIAS(cuGraphInstantiate);

static CUresult exec_client(CUgraphExec x, struct xgpu_client **c)
{
	if (!valid_exec(x))
		return CUDA_ERROR_INVALID_VALUE;
	CUresult r = graph_client(c);
	if (!r && x->generation != xgpu_fork_generation)
		r = CUDA_ERROR_INVALID_HANDLE; /* the parent's daemon object */
	return r;
}

static CUresult launch_remote(struct xgpu_client *c, struct CUgraphExec_st *x, CUstream hStream);

static void run_host_node(void (*fn)(void), void *api_stream, int status, void *user)
{
	(void)api_stream;
	if (!status)
		((CUhostFn)fn)(user);
}

CUresult cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream)
{
	struct xgpu_client *c;
	CUresult r = exec_client(hGraphExec, &c);
	if (r)
		return r;
	struct CUgraphExec_st *x = hGraphExec;
	if (x->dirty) {
		if (x->parts) {
			/* Each part's old graph waits for its launches (in the daemon). */
			free_parts(c, x);
			if ((r = send_exec(c, x)))
				return r;
		} else {
			xgpu_handle_t old = x->remote;
			if ((r = send_graph(c, x->snapshot, x)))
				return r;
			/* Waits for the old graph's launches (in the daemon). */
			destroy_remote(c, old);
		}
		x->dirty = false;
	}
	if (!x->parts)
		return launch_remote(c, x, hStream);
	for (size_t i = 0; !r && i < x->nparts; i++) {
		const struct exec_part *p = &x->parts[i];
		if (p->sub)
			r = launch_remote(c, p->sub, hStream);
		else
			r = xgpu_drv_result(xgpu_hostfn_enqueue(c, xgpu_drv_stream(hStream), run_host_node,
								(void (*)(void))p->host->host_fn, hStream,
								p->host->host_user));
	}
	return r;
}

/* One daemon graph's launch, with the host memory its copies move. */
static CUresult launch_remote(struct xgpu_client *c, struct CUgraphExec_st *x, CUstream hStream)
{
	CUresult r;
	uint8_t *out = x->htod_bytes ? malloc(x->htod_bytes) : NULL;
	uint8_t *in = x->dtoh_bytes ? malloc(x->dtoh_bytes) : NULL;
	if ((x->htod_bytes && !out) || (x->dtoh_bytes && !in)) {
		free(out);
		free(in);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	/* The host memory is read now, when the launch is issued. */
	for (size_t i = 0, at = 0; i < x->ncopies; i++)
		if (x->copies[i].to_device) {
			memcpy(out + at, x->copies[i].ptr, x->copies[i].size);
			at += x->copies[i].size;
		}
	struct xgpu_req_GRAPH_LAUNCH req = {.exec = x->remote, .stream = xgpu_drv_stream(hStream)};
	struct xgpu_rsp_GRAPH_LAUNCH rsp;
	struct xgpu_rpc rpc = xgpu_rpc_GRAPH_LAUNCH(&req, &rsp);
	rpc.out = out;
	rpc.out_len = x->htod_bytes;
	rpc.in = in;
	rpc.in_max = x->dtoh_bytes;
	r = xgpu_drv_result(xgpu_rpc(c, &rpc));
	if (!r && rpc.in_len != x->dtoh_bytes)
		r = CUDA_ERROR_UNKNOWN;
	for (size_t i = 0, at = 0; !r && i < x->ncopies; i++)
		if (!x->copies[i].to_device) {
			memcpy(x->copies[i].ptr, in + at, x->copies[i].size);
			at += x->copies[i].size;
		}
	free(out);
	free(in);
	return r;
}
CUresult cuGraphLaunch_ptsz(CUgraphExec hGraphExec, CUstream hStream) XGPU_ALIAS(cuGraphLaunch);

/* The daemon built the whole graph at instantiate: nothing is left to upload. */
CUresult cuGraphUpload(CUgraphExec hGraphExec, CUstream hStream)
{
	(void)hStream;
	struct xgpu_client *c;
	return exec_client(hGraphExec, &c);
}
CUresult cuGraphUpload_ptsz(CUgraphExec hGraphExec, CUstream hStream) XGPU_ALIAS(cuGraphUpload);

CUresult cuGraphExecDestroy(CUgraphExec hGraphExec)
{
	struct xgpu_client *c;
	if (!valid_exec(hGraphExec))
		return CUDA_ERROR_INVALID_VALUE;
	CUresult r = CUDA_SUCCESS;
	bool ours = !graph_client(&c) && hGraphExec->generation == xgpu_fork_generation;
	if (hGraphExec->parts) {
		free_parts(ours ? c : NULL, hGraphExec);
	} else if (ours) {
		struct xgpu_req_GRAPH_EXEC_DESTROY req = {.exec = hGraphExec->remote};
		struct xgpu_rsp_GRAPH_EXEC_DESTROY rsp;
		r = xgpu_drv_result(xgpu_call_GRAPH_EXEC_DESTROY(c, &req, &rsp));
	}
	free_graph(hGraphExec->snapshot);
	free(hGraphExec->copies);
	hGraphExec->magic = 0;
	free(hGraphExec);
	return r;
}

/* ---- updating an instantiated graph -------------------------------------- */

/* The snapshot's node that pairs with node of the exec's source graph. */
static struct CUgraphNode_st *exec_node(struct CUgraphExec_st *x, CUgraphNode node)
{
	if (!valid_node(node) || node->graph != x->source)
		return NULL;
	for (size_t i = 0; i < x->source->n && i < x->snapshot->n; i++)
		if (x->source->nodes[i] == node)
			return x->snapshot->nodes[i]->type == node->type ? x->snapshot->nodes[i] : NULL;
	return NULL;
}

/* A host node's function for the next launches: the parts call the
 * snapshot's node, so nothing goes to the daemon. */
CUresult cuGraphExecHostNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
				      const CUDA_HOST_NODE_PARAMS *nodeParams)
{
	if (!valid_exec(hGraphExec) || !nodeParams || !nodeParams->fn)
		return CUDA_ERROR_INVALID_VALUE;
	struct CUgraphNode_st *n = exec_node(hGraphExec, hNode);
	if (!n || n->type != CU_GRAPH_NODE_TYPE_HOST)
		return CUDA_ERROR_INVALID_VALUE;
	n->host_fn = nodeParams->fn;
	n->host_user = nodeParams->userData;
	return CUDA_SUCCESS;
}

/* New parameters for a kernel node of an instantiated graph, in wire form;
 * they take effect from the next launch. */
CUresult xgpu_graph_exec_set_kernel(CUgraphExec hGraphExec, CUgraphNode node, xgpu_handle_t func,
				    const uint32_t grid[3], const uint32_t block[3], uint32_t shared,
				    const void *params, uint32_t param_len)
{
	if (!valid_exec(hGraphExec) || param_len > XGPU_MAX_PARAM_BYTES)
		return CUDA_ERROR_INVALID_VALUE;
	struct CUgraphNode_st *n = exec_node(hGraphExec, node);
	if (!n || n->type != CU_GRAPH_NODE_TYPE_KERNEL)
		return CUDA_ERROR_INVALID_VALUE;
	uint8_t *copy = param_len ? malloc(param_len) : NULL;
	if (param_len && !copy)
		return CUDA_ERROR_OUT_OF_MEMORY;
	if (param_len)
		memcpy(copy, params, param_len);
	free(n->params);
	n->params = copy;
	n->w.handle = func;
	n->w.grid = (struct xgpu_dim3){grid[0], grid[1], grid[2]};
	n->w.block = (struct xgpu_dim3){block[0], block[1], block[2]};
	n->w.shared_bytes = shared;
	n->w.param_len = param_len;
	hGraphExec->dirty = true;
	return CUDA_SUCCESS;
}

CUresult cuGraphExecKernelNodeSetParams_v2(CUgraphExec hGraphExec, CUgraphNode hNode,
					   const CUDA_KERNEL_NODE_PARAMS *p)
{
	if (!p)
		return CUDA_ERROR_INVALID_VALUE;
	CUfunction f = p->func;
	if (!f && p->kern) {
		CUresult r = cuKernelGetFunction(&f, p->kern);
		if (r)
			return r;
	}
	const unsigned grid[3] = {p->gridDimX, p->gridDimY, p->gridDimZ};
	const unsigned block[3] = {p->blockDimX, p->blockDimY, p->blockDimZ};
	uint8_t params[XGPU_MAX_PARAM_BYTES];
	uint32_t len;
	xgpu_handle_t remote;
	CUresult r = xgpu_drv_kernel_wire(f, grid, block, p->sharedMemBytes, p->kernelParams, p->extra,
					  &remote, params, &len);
	return r ? r
		 : xgpu_graph_exec_set_kernel(hGraphExec, hNode, remote, grid, block, p->sharedMemBytes,
					      params, len);
}

#undef cuGraphExecKernelNodeSetParams
CUresult cuGraphExecKernelNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
					const CUDA_KERNEL_NODE_PARAMS_v1 *p);
CUresult cuGraphExecKernelNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
					const CUDA_KERNEL_NODE_PARAMS_v1 *p)
{
	if (!p)
		return CUDA_ERROR_INVALID_VALUE;
	CUDA_KERNEL_NODE_PARAMS v2;
	memset(&v2, 0, sizeof v2);
	memcpy(&v2, p, sizeof *p); /* v2 extends v1 */
	return cuGraphExecKernelNodeSetParams_v2(hGraphExec, hNode, &v2);
}

/* Whether a and b have the same nodes (by type) and edges, recursively;
 * *bad is the first node of b that differs. */
static bool same_topology(const struct CUgraph_st *a, const struct CUgraph_st *b, CUgraphNode *bad)
{
	if (a->n != b->n) {
		*bad = NULL;
		return false;
	}
	for (size_t i = 0; i < a->n; i++) {
		const struct CUgraphNode_st *x = a->nodes[i], *y = b->nodes[i];
		bool same = x->type == y->type && x->w.type == y->w.type && x->ndeps == y->ndeps;
		for (size_t k = 0; same && k < x->ndeps; k++) {
			size_t j = 0, l = 0;
			while (j < a->n && a->nodes[j] != x->deps[k])
				j++;
			while (l < b->n && b->nodes[l] != y->deps[k])
				l++;
			same = j == l;
		}
		CUgraphNode inner;
		if (same && x->child)
			same = same_topology(x->child, y->child, &inner);
		same = same && x->nbodies == y->nbodies && x->cond_type == y->cond_type;
		for (unsigned b = 0; same && b < x->nbodies; b++)
			same = same_topology(x->bodies[b], y->bodies[b], &inner);
		if (!same) {
			*bad = b->nodes[i];
			return false;
		}
	}
	return true;
}

/* The parameters of hGraph, whose topology must be the instantiated one's,
 * take effect from the next launch. */
CUresult cuGraphExecUpdate_v2(CUgraphExec hGraphExec, CUgraph hGraph, CUgraphExecUpdateResultInfo *resultInfo)
{
	if (!valid_exec(hGraphExec) || !valid_graph(hGraph))
		return CUDA_ERROR_INVALID_VALUE;
	CUgraphNode bad = NULL;
	if (resultInfo)
		memset(resultInfo, 0, sizeof *resultInfo);
	if (!same_topology(hGraphExec->snapshot, hGraph, &bad)) {
		if (resultInfo) {
			resultInfo->result = CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED;
			resultInfo->errorNode = bad;
		}
		return CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE;
	}
	struct CUgraph_st *copy = clone_graph(hGraph, 0);
	if (!copy)
		return CUDA_ERROR_OUT_OF_MEMORY;
	free_graph(hGraphExec->snapshot);
	hGraphExec->snapshot = copy;
	hGraphExec->dirty = true;
	if (resultInfo)
		resultInfo->result = CU_GRAPH_EXEC_UPDATE_SUCCESS;
	return CUDA_SUCCESS;
}

/* The CUDA 10.2 ABI. */
#undef cuGraphExecUpdate
CUresult cuGraphExecUpdate(CUgraphExec hGraphExec, CUgraph hGraph, CUgraphNode *hErrorNode_out,
			   CUgraphExecUpdateResult *updateResult_out);
CUresult cuGraphExecUpdate(CUgraphExec hGraphExec, CUgraph hGraph, CUgraphNode *hErrorNode_out,
			   CUgraphExecUpdateResult *updateResult_out)
{
	CUgraphExecUpdateResultInfo info;
	CUresult r = cuGraphExecUpdate_v2(hGraphExec, hGraph, &info);
	if (hErrorNode_out)
		*hErrorNode_out = r ? info.errorNode : NULL;
	if (updateResult_out)
		*updateResult_out = r ? info.result : CU_GRAPH_EXEC_UPDATE_SUCCESS;
	return r;
}

/* ---- stream capture ----------------------------------------------------------- */

struct capture {
	bool used, invalidated;
	bool into; /* into the program's graph (cuStreamBeginCaptureToGraph) */
	uint64_t id;
	struct CUgraph_st *graph;
	CUstreamCaptureMode mode;
	pthread_t thread;
	xgpu_handle_t origin;
};

/* A stream taking part in a capture (its origin or one that joined through
 * an event) and the nodes its next work depends on. */
struct capture_stream {
	xgpu_handle_t stream;
	struct capture *cap;
	CUgraphNode *frontier;
	size_t n, cap_n;
};

/* An event recorded on a capturing stream: where a stream that waits for it
 * joins the capture. */
struct capture_event {
	xgpu_handle_t event;
	struct capture *cap;
	CUgraphNode *nodes;
	size_t n;
};

static pthread_mutex_t capture_lock = PTHREAD_MUTEX_INITIALIZER;
static struct capture captures[MAX_CAPTURES];
static struct capture_stream cstreams[MAX_CAPTURE_STREAMS];
static struct capture_event cevents[MAX_CAPTURE_EVENTS];
static uint64_t next_capture_id = 1;
static atomic_int live_captures;
static _Thread_local CUstreamCaptureMode thread_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;

static struct capture_stream *find_stream(xgpu_handle_t s)
{
	for (size_t i = 0; i < MAX_CAPTURE_STREAMS; i++)
		if (cstreams[i].cap && cstreams[i].stream == s)
			return &cstreams[i];
	return NULL;
}

static struct capture_event *find_event(xgpu_handle_t e)
{
	for (size_t i = 0; i < MAX_CAPTURE_EVENTS; i++)
		if (cevents[i].cap && cevents[i].event == e)
			return &cevents[i];
	return NULL;
}

static CUresult set_frontier(struct capture_stream *cs, const CUgraphNode *nodes, size_t n)
{
	if (!grow((void **)&cs->frontier, &cs->cap_n, n ? n : 1, sizeof *cs->frontier))
		return CUDA_ERROR_OUT_OF_MEMORY;
	if (n)
		memmove(cs->frontier, nodes, n * sizeof *nodes);
	cs->n = n;
	return CUDA_SUCCESS;
}

static void drop_stream(struct capture_stream *cs)
{
	free(cs->frontier);
	memset(cs, 0, sizeof *cs);
}

static void drop_event(struct capture_event *ce)
{
	free(ce->nodes);
	memset(ce, 0, sizeof *ce);
}

/* Ends cap: every stream and event of it leaves the capture. */
static void end_capture(struct capture *cap)
{
	for (size_t i = 0; i < MAX_CAPTURE_STREAMS; i++)
		if (cstreams[i].cap == cap)
			drop_stream(&cstreams[i]);
	for (size_t i = 0; i < MAX_CAPTURE_EVENTS; i++)
		if (cevents[i].cap == cap)
			drop_event(&cevents[i]);
	memset(cap, 0, sizeof *cap);
	atomic_fetch_sub(&live_captures, 1);
}

/* Whether the calling thread may make a call CUDA calls potentially unsafe
 * during a capture (a synchronous copy, cudaMalloc, a device-wide
 * synchronize); the captures that forbid it are invalidated, as in CUDA. */
static bool unsafe_call_refused(void)
{
	if (thread_mode == CU_STREAM_CAPTURE_MODE_RELAXED)
		return false;
	bool refused = false;
	pthread_t me = pthread_self();
	for (size_t i = 0; i < MAX_CAPTURES; i++) {
		struct capture *cap = &captures[i];
		if (!cap->used)
			continue;
		bool own = pthread_equal(cap->thread, me) && cap->mode != CU_STREAM_CAPTURE_MODE_RELAXED;
		bool global = thread_mode == CU_STREAM_CAPTURE_MODE_GLOBAL &&
			      cap->mode == CU_STREAM_CAPTURE_MODE_GLOBAL;
		if (own || global) {
			cap->invalidated = true;
			refused = true;
		}
	}
	return refused;
}

/* Appends a node built from wire form w to cs's capture after its frontier. */
static int capture_node(struct capture_stream *cs, const struct xgpu_graph_node *w, void *host,
			const void *params)
{
	CUgraphNode node = NULL;
	CUresult r;
	struct CUgraph_st *g = cs->cap->graph;
	switch (w->type) {
	case XGPU_GN_KERNEL: {
		const uint32_t grid[3] = {w->grid.x, w->grid.y, w->grid.z};
		const uint32_t block[3] = {w->block.x, w->block.y, w->block.z};
		r = xgpu_graph_add_kernel(&node, g, cs->frontier, cs->n, w->handle, grid, block,
					  w->shared_bytes, params, w->param_len);
		break;
	}
	case XGPU_GN_HTOD:
		r = xgpu_graph_add_copy(&node, g, cs->frontier, cs->n, false, w->dst, true, (uintptr_t)host,
					w->size);
		break;
	case XGPU_GN_DTOH:
		r = xgpu_graph_add_copy(&node, g, cs->frontier, cs->n, true, (uintptr_t)host, false, w->src,
					w->size);
		break;
	default: {
		struct CUgraphNode_st *n =
		    new_node(w->type == XGPU_GN_DTOD         ? CU_GRAPH_NODE_TYPE_MEMCPY
			     : w->type == XGPU_GN_MEMSET     ? CU_GRAPH_NODE_TYPE_MEMSET
			     : w->type == XGPU_GN_EVENT_WAIT ? CU_GRAPH_NODE_TYPE_WAIT_EVENT
							     : CU_GRAPH_NODE_TYPE_EMPTY,
			     w->type);
		if (!n)
			return cudaErrorMemoryAllocation;
		n->w = *w;
		r = add_node(g, cs->frontier, cs->n, n, &node);
	}
	}
	if (r) {
		cs->cap->invalidated = true;
		return (int)r;
	}
	r = set_frontier(cs, &node, 1);
	return (int)r;
}

/* Joins the nodes of an event recorded in cs's capture into its frontier. */
static int capture_join(struct capture_stream *cs, const struct capture_event *ce)
{
	size_t n = cs->n + ce->n;
	if (!grow((void **)&cs->frontier, &cs->cap_n, n ? n : 1, sizeof *cs->frontier))
		return cudaErrorMemoryAllocation;
	for (size_t i = 0; i < ce->n; i++) {
		bool have = false;
		for (size_t k = 0; k < cs->n; k++)
			have |= cs->frontier[k] == ce->nodes[i];
		if (!have)
			cs->frontier[cs->n++] = ce->nodes[i];
	}
	return cudaSuccess;
}

static int capture_stream_work(struct xgpu_rpc *r, xgpu_handle_t stream);

/* client.c's hook, called with every request before it is sent. Returns -1
 * to send it, or the request's result when capture took it. */
static int capture_rpc(struct xgpu_rpc *r)
{
	if (!atomic_load(&live_captures))
		return -1;
	pthread_mutex_lock(&capture_lock);
	int res = -1;
	/* The stream the call works on, where it has one (calls.def). */
	xgpu_handle_t s = XGPU_STREAM_DEFAULT;
	xgpu_req_stream(r->call, r->req, r->req_len, &s);
	switch (r->call) {
	case XGPU_CALL_LAUNCH:
	case XGPU_CALL_LAUNCH_EX:
	case XGPU_CALL_MEMCPY_HTOD:
	case XGPU_CALL_MEMCPY_DTOH:
	case XGPU_CALL_MEMCPY_DTOD:
	case XGPU_CALL_MEMSET:
	case XGPU_CALL_GRAPH_LAUNCH:
	case XGPU_CALL_EVENT_RECORD:
	case XGPU_CALL_STREAM_WAIT_EVENT:
		res = capture_stream_work(r, s);
		break;
	case XGPU_CALL_MEMCPY_HTOD_SEG:
	case XGPU_CALL_MEMCPY_DTOH_SEG: {
		/* The frontends copy through the wire when the stream captures
		 * (xgpu_graph_capturing); a segment copy here is synchronous. */
		struct capture_stream *cs = find_stream(s);
		if (cs) {
			cs->cap->invalidated = true;
			res = cudaErrorStreamCaptureUnsupported;
		}
		break;
	}
	case XGPU_CALL_MEMCPY_2D_HTOD:
	case XGPU_CALL_MEMCPY_2D_DTOH:
	case XGPU_CALL_MEMCPY_2D_DTOD:
	case XGPU_CALL_MEMSET_2D: {
		/* Pitched copies and memsets are not graph nodes yet: on a
		 * capturing stream they void the capture rather than run outside
		 * it. */
		struct capture_stream *cs = find_stream(s);
		if (cs) {
			cs->cap->invalidated = true;
			res = cudaErrorStreamCaptureUnsupported;
		}
		break;
	}
	case XGPU_CALL_STREAM_SYNC:
	case XGPU_CALL_STREAM_QUERY: {
		struct capture_stream *cs = find_stream(s);
		if (cs) {
			cs->cap->invalidated = true;
			res = cudaErrorStreamCaptureUnsupported;
		} else if (s == XGPU_STREAM_DEFAULT && r->call == XGPU_CALL_STREAM_SYNC &&
			   unsafe_call_refused())
			res = cudaErrorStreamCaptureUnsupported;
		break;
	}
	case XGPU_CALL_EVENT_SYNC:
	case XGPU_CALL_EVENT_QUERY: {
		xgpu_handle_t e = r->call == XGPU_CALL_EVENT_SYNC
				      ? ((const struct xgpu_req_EVENT_SYNC *)r->req)->event
				      : ((const struct xgpu_req_EVENT_QUERY *)r->req)->event;
		struct capture_event *ce = find_event(e);
		if (ce) {
			ce->cap->invalidated = true;
			res = cudaErrorStreamCaptureUnsupported;
		}
		break;
	}
	case XGPU_CALL_DEVICE_SYNC:
	case XGPU_CALL_MEM_ALLOC:
		if (!graph_alloc_call && unsafe_call_refused())
			res = cudaErrorStreamCaptureUnsupported;
		break;
	default:
		break;
	}
	pthread_mutex_unlock(&capture_lock);
	return res;
}

/* Work on one stream: a node if the stream captures; otherwise sent, unless
 * it is a synchronous copy that a capture forbids. */
static int capture_stream_work(struct xgpu_rpc *r, xgpu_handle_t stream)
{
	struct capture_stream *cs = find_stream(stream);
	struct xgpu_graph_node w = {0};
	if (r->call == XGPU_CALL_STREAM_WAIT_EVENT) {
		const struct xgpu_req_STREAM_WAIT_EVENT *q = r->req;
		struct capture_event *ce = find_event(q->event);
		if (!ce) {
			if (!cs)
				return -1;
			w.type = XGPU_GN_EVENT_WAIT;
			w.handle = q->event;
			return cs->cap->invalidated ? cudaErrorStreamCaptureInvalidated
						    : capture_node(cs, &w, NULL, NULL);
		}
		if (cs && cs->cap != ce->cap) {
			cs->cap->invalidated = ce->cap->invalidated = true;
			return cudaErrorStreamCaptureIsolation;
		}
		if (!cs) {
			/* The stream joins the event's capture. */
			for (size_t i = 0; i < MAX_CAPTURE_STREAMS && !cs; i++)
				if (!cstreams[i].cap)
					cs = &cstreams[i];
			if (!cs)
				return cudaErrorMemoryAllocation;
			cs->stream = stream;
			cs->cap = ce->cap;
			cs->n = 0;
		}
		return capture_join(cs, ce);
	}
	bool async = true;
	switch (r->call) {
	case XGPU_CALL_MEMCPY_HTOD:
		async = ((const struct xgpu_req_MEMCPY_HTOD *)r->req)->flags & XGPU_COPY_ASYNC;
		break;
	case XGPU_CALL_MEMCPY_DTOH:
		async = ((const struct xgpu_req_MEMCPY_DTOH *)r->req)->flags & XGPU_COPY_ASYNC;
		break;
	case XGPU_CALL_MEMCPY_DTOD:
		async = ((const struct xgpu_req_MEMCPY_DTOD *)r->req)->flags & XGPU_COPY_ASYNC;
		break;
	case XGPU_CALL_MEMSET:
		async = ((const struct xgpu_req_MEMSET *)r->req)->flags & XGPU_COPY_ASYNC;
		break;
	default:
		break;
	}
	if (!cs && r->call == XGPU_CALL_EVENT_RECORD) {
		/* Recorded outside a capture, the event no longer marks one. */
		struct capture_event *ce = find_event(((const struct xgpu_req_EVENT_RECORD *)r->req)->event);
		if (ce)
			drop_event(ce);
		return -1;
	}
	/* A synchronous copy on a stream that does not capture runs: NVIDIA's
	 * driver 580 runs one on the legacy stream beside a global capture on
	 * a non-blocking stream (docs/results/gpu-validation). Beside a
	 * capture on a blocking stream it would join the capture implicitly;
	 * xgpu does not track which streams block, and runs it too. */
	if (!cs)
		return -1;
	if (cs->cap->invalidated)
		return cudaErrorStreamCaptureInvalidated;
	if (!async) {
		cs->cap->invalidated = true;
		return cudaErrorStreamCaptureUnsupported;
	}
	switch (r->call) {
	case XGPU_CALL_LAUNCH: {
		const struct xgpu_req_LAUNCH *q = r->req;
		w.type = XGPU_GN_KERNEL;
		w.handle = q->func;
		w.grid = q->grid;
		w.block = q->block;
		w.shared_bytes = q->shared_bytes;
		w.param_len = (uint32_t)r->out_len;
		return capture_node(cs, &w, NULL, r->out);
	}
	case XGPU_CALL_MEMCPY_HTOD: {
		const struct xgpu_req_MEMCPY_HTOD *q = r->req;
		w.type = XGPU_GN_HTOD;
		w.dst = q->dst;
		w.size = q->size;
		return capture_node(cs, &w, (void *)r->out, NULL);
	}
	case XGPU_CALL_MEMCPY_DTOH: {
		const struct xgpu_req_MEMCPY_DTOH *q = r->req;
		w.type = XGPU_GN_DTOH;
		w.src = q->src;
		w.size = q->size;
		/* The frontends check in_len against what they asked for. */
		r->in_len = q->size;
		return capture_node(cs, &w, r->in, NULL);
	}
	case XGPU_CALL_MEMCPY_DTOD: {
		const struct xgpu_req_MEMCPY_DTOD *q = r->req;
		w.type = XGPU_GN_DTOD;
		w.dst = q->dst;
		w.src = q->src;
		w.size = q->size;
		return capture_node(cs, &w, NULL, NULL);
	}
	case XGPU_CALL_MEMSET: {
		const struct xgpu_req_MEMSET *q = r->req;
		w.type = XGPU_GN_MEMSET;
		w.dst = q->dst;
		w.value = q->value & 0xff;
		w.size = q->size;
		return capture_node(cs, &w, NULL, NULL);
	}
	case XGPU_CALL_EVENT_RECORD: {
		/* A record in a capture marks where waiting streams join. */
		const struct xgpu_req_EVENT_RECORD *q = r->req;
		struct capture_event *ce = find_event(q->event);
		for (size_t i = 0; i < MAX_CAPTURE_EVENTS && !ce; i++)
			if (!cevents[i].cap)
				ce = &cevents[i];
		if (!ce)
			return cudaErrorMemoryAllocation;
		CUgraphNode *nodes = cs->n ? malloc(cs->n * sizeof *nodes) : NULL;
		if (cs->n && !nodes)
			return cudaErrorMemoryAllocation;
		if (cs->n)
			memcpy(nodes, cs->frontier, cs->n * sizeof *nodes);
		free(ce->nodes);
		ce->event = q->event;
		ce->cap = cs->cap;
		ce->nodes = nodes;
		ce->n = cs->n;
		return cudaSuccess;
	}
	default:
		/* A graph launched into a capture (a child graph node) is not
		 * offered: the daemon's instantiated graph has no description
		 * here to copy. Nor is a cooperative launch (LAUNCH_EX): a
		 * kernel node has no launch attributes on the wire. */
		cs->cap->invalidated = true;
		return cudaErrorStreamCaptureUnsupported;
	}
}

int xgpu_graph_capture_refuse(xgpu_handle_t stream)
{
	if (!atomic_load(&live_captures))
		return cudaSuccess;
	pthread_mutex_lock(&capture_lock);
	struct capture_stream *cs = find_stream(stream);
	int res = cudaSuccess;
	if (cs) {
		res = cs->cap->invalidated ? cudaErrorStreamCaptureInvalidated
					   : cudaErrorStreamCaptureUnsupported;
		cs->cap->invalidated = true;
	}
	pthread_mutex_unlock(&capture_lock);
	return res;
}

int xgpu_graph_capture_alloc(xgpu_handle_t stream, uint64_t size, uint64_t *dptr)
{
	if (!atomic_load(&live_captures))
		return -1;
	pthread_mutex_lock(&capture_lock);
	struct capture_stream *cs = find_stream(stream);
	int res = !cs ? -1 : cs->cap->invalidated ? cudaErrorStreamCaptureInvalidated : cudaSuccess;
	pthread_mutex_unlock(&capture_lock);
	if (res)
		return res;
	/* Allocated outside the lock: the request passes capture_rpc. */
	struct xgpu_client *c;
	struct CUgraphNode_st *n;
	res = xgpu_client_get(&c);
	if (!res)
		res = mem_alloc_node(c, size, &n);
	if (res)
		return res;
	pthread_mutex_lock(&capture_lock);
	cs = find_stream(stream);
	CUgraphNode node = NULL;
	if (!cs || cs->cap->invalidated) {
		res = cudaErrorStreamCaptureInvalidated;
		free_node(n);
	} else {
		uint64_t p = n->mem->dptr;
		CUresult r = add_node(cs->cap->graph, cs->frontier, cs->n, n, &node);
		if (!r)
			r = set_frontier(cs, &node, 1);
		if (r)
			cs->cap->invalidated = true;
		res = r ? cudaErrorMemoryAllocation : cudaSuccess;
		if (!r)
			*dptr = p;
	}
	pthread_mutex_unlock(&capture_lock);
	return res;
}

int xgpu_graph_capture_free(xgpu_handle_t stream, uint64_t dptr)
{
	if (!atomic_load(&live_captures))
		return -1;
	pthread_mutex_lock(&capture_lock);
	struct capture_stream *cs = find_stream(stream);
	int res = -1;
	if (cs && cs->cap->invalidated) {
		res = cudaErrorStreamCaptureInvalidated;
	} else if (cs) {
		CUgraphNode node = NULL;
		CUresult r = cuGraphAddMemFreeNode(&node, cs->cap->graph, cs->frontier, cs->n, dptr);
		if (!r)
			r = set_frontier(cs, &node, 1);
		if (r)
			cs->cap->invalidated = true;
		res = r == CUDA_ERROR_INVALID_VALUE ? cudaErrorInvalidValue
		      : r                           ? cudaErrorMemoryAllocation
						    : cudaSuccess;
	}
	pthread_mutex_unlock(&capture_lock);
	return res;
}

int xgpu_graph_capture_hostfn(xgpu_handle_t stream, void (*fn)(void *), void *user)
{
	if (!atomic_load(&live_captures))
		return -1;
	pthread_mutex_lock(&capture_lock);
	struct capture_stream *cs = find_stream(stream);
	int res = -1;
	if (cs && cs->cap->invalidated) {
		res = cudaErrorStreamCaptureInvalidated;
	} else if (cs) {
		struct CUgraphNode_st *n = new_node(CU_GRAPH_NODE_TYPE_HOST, XGPU_GN_EMPTY);
		CUgraphNode node = NULL;
		CUresult r = CUDA_ERROR_OUT_OF_MEMORY;
		if (n) {
			n->host_fn = fn;
			n->host_user = user;
			r = add_node(cs->cap->graph, cs->frontier, cs->n, n, &node);
		}
		if (!r)
			r = set_frontier(cs, &node, 1);
		if (r)
			cs->cap->invalidated = true;
		res = (int)r;
	}
	pthread_mutex_unlock(&capture_lock);
	return res;
}

bool xgpu_graph_capturing(xgpu_handle_t stream)
{
	if (!atomic_load(&live_captures))
		return false;
	pthread_mutex_lock(&capture_lock);
	bool yes = find_stream(stream) != NULL;
	pthread_mutex_unlock(&capture_lock);
	return yes;
}

/* A capture into a new graph, or into graph into after its nodes deps. */
static CUresult begin_capture(CUstream hStream, CUstreamCaptureMode mode, struct CUgraph_st *into,
			      const CUgraphNode *deps, size_t ndeps)
{
	struct xgpu_client *c;
	CUresult r = graph_client(&c);
	if (r)
		return r;
	if (mode != CU_STREAM_CAPTURE_MODE_GLOBAL && mode != CU_STREAM_CAPTURE_MODE_THREAD_LOCAL &&
	    mode != CU_STREAM_CAPTURE_MODE_RELAXED)
		return CUDA_ERROR_INVALID_VALUE;
	xgpu_handle_t s = xgpu_drv_stream(hStream);
	/* The legacy stream synchronises with every other: it cannot be
	 * captured. */
	if (s == XGPU_STREAM_DEFAULT)
		return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
	xgpu_rpc_capture_hook = capture_rpc;
	xgpu_hostfn_capture_hook = xgpu_graph_capture_refuse;
	pthread_mutex_lock(&capture_lock);
	struct capture *cap = NULL;
	struct capture_stream *cs = NULL;
	if (find_stream(s))
		r = CUDA_ERROR_ILLEGAL_STATE;
	for (size_t i = 0; !r && i < MAX_CAPTURES && !cap; i++)
		if (!captures[i].used)
			cap = &captures[i];
	for (size_t i = 0; !r && i < MAX_CAPTURE_STREAMS && !cs; i++)
		if (!cstreams[i].cap)
			cs = &cstreams[i];
	if (!r && (!cap || !cs))
		r = CUDA_ERROR_OUT_OF_MEMORY;
	for (size_t i = 0; !r && i < ndeps; i++)
		if (!valid_node(deps[i]) || deps[i]->graph != into)
			r = CUDA_ERROR_INVALID_VALUE;
	struct CUgraph_st *g = r ? NULL : into ? into : new_graph();
	if (!r && !g)
		r = CUDA_ERROR_OUT_OF_MEMORY;
	if (!r) {
		*cs = (struct capture_stream){.stream = s, .cap = cap};
		if ((r = set_frontier(cs, deps, ndeps))) {
			memset(cs, 0, sizeof *cs);
			if (!into)
				free_graph(g);
		}
	}
	if (!r) {
		*cap = (struct capture){.used = true,
					.into = into != NULL,
					.id = next_capture_id++,
					.graph = g,
					.mode = mode,
					.thread = pthread_self(),
					.origin = s};
		atomic_fetch_add(&live_captures, 1);
	}
	pthread_mutex_unlock(&capture_lock);
	return r;
}

CUresult cuStreamBeginCapture_v2(CUstream hStream, CUstreamCaptureMode mode)
{
	return begin_capture(hStream, mode, NULL, NULL, 0);
}

/* Capturing into an existing graph, which is how a conditional node's body
 * is filled from a stream. */
CUresult cuStreamBeginCaptureToGraph(CUstream hStream, CUgraph hGraph, const CUgraphNode *dependencies,
				     const CUgraphEdgeData *dependencyData, size_t numDependencies,
				     CUstreamCaptureMode mode)
{
	if (!valid_graph(hGraph) || (numDependencies && !dependencies))
		return CUDA_ERROR_INVALID_VALUE;
	CUresult r = check_edges(dependencyData, numDependencies);
	return r ? r : begin_capture(hStream, mode, hGraph, dependencies, numDependencies);
}
CUresult cuStreamBeginCaptureToGraph_ptsz(CUstream hStream, CUgraph hGraph, const CUgraphNode *dependencies,
					  const CUgraphEdgeData *dependencyData, size_t numDependencies,
					  CUstreamCaptureMode mode) XGPU_ALIAS(cuStreamBeginCaptureToGraph);
CUresult cuStreamBeginCapture_v2_ptsz(CUstream hStream, CUstreamCaptureMode mode)
    XGPU_ALIAS(cuStreamBeginCapture_v2);

/* The CUDA 10.0 ABI: global mode. */
#undef cuStreamBeginCapture
CUresult cuStreamBeginCapture(CUstream hStream);
CUresult cuStreamBeginCapture(CUstream hStream)
{
	return begin_capture(hStream, CU_STREAM_CAPTURE_MODE_GLOBAL, NULL, NULL, 0);
}
CUresult cuStreamBeginCapture_ptsz(CUstream hStream) XGPU_ALIAS(cuStreamBeginCapture);

/* Whether every stream of cs's capture joined back into cs: each of their
 * frontier nodes is one cs's frontier depends on (or is in it). */
static bool joined(const struct capture_stream *cs)
{
	static uint64_t walk;
	struct CUgraph_st *g = cs->cap->graph;
	struct CUgraphNode_st **stack = malloc((g->n + 1) * sizeof *stack);
	if (!stack)
		return true; /* cannot tell: do not refuse */
	uint64_t mark = ++walk;
	size_t top = 0;
	for (size_t i = 0; i < cs->n; i++)
		if (cs->frontier[i]->seen != mark) {
			cs->frontier[i]->seen = mark;
			stack[top++] = cs->frontier[i];
		}
	while (top) {
		struct CUgraphNode_st *n = stack[--top];
		for (size_t k = 0; k < n->ndeps; k++)
			if (n->deps[k]->seen != mark) {
				n->deps[k]->seen = mark;
				stack[top++] = n->deps[k];
			}
	}
	free(stack);
	for (size_t i = 0; i < MAX_CAPTURE_STREAMS; i++)
		if (cstreams[i].cap == cs->cap && &cstreams[i] != cs)
			for (size_t k = 0; k < cstreams[i].n; k++)
				if (cstreams[i].frontier[k]->seen != mark)
					return false;
	return true;
}

CUresult cuStreamEndCapture(CUstream hStream, CUgraph *phGraph)
{
	struct xgpu_client *c;
	CUresult r = graph_client(&c);
	if (r)
		return r;
	xgpu_handle_t s = xgpu_drv_stream(hStream);
	pthread_mutex_lock(&capture_lock);
	struct capture_stream *cs = find_stream(s);
	if (!cs)
		r = CUDA_ERROR_ILLEGAL_STATE;
	/* A capture into the program's graph needs nowhere to put it. */
	else if (!phGraph && !cs->cap->into)
		r = CUDA_ERROR_INVALID_VALUE;
	else if (cs->cap->origin != s)
		r = CUDA_ERROR_STREAM_CAPTURE_UNMATCHED;
	else if (cs->cap->mode != CU_STREAM_CAPTURE_MODE_RELAXED &&
		 !pthread_equal(cs->cap->thread, pthread_self()))
		r = CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD;
	if (!r) {
		struct capture *cap = cs->cap;
		CUgraph got = cap->graph;
		if (!cap->invalidated && !joined(cs))
			r = CUDA_ERROR_STREAM_CAPTURE_UNJOINED;
		else if (cap->invalidated)
			r = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
		/* The program's own graph stays the program's. */
		if (r && !cap->into)
			free_graph(cap->graph);
		if (phGraph)
			*phGraph = r ? NULL : got;
		end_capture(cap);
	}
	pthread_mutex_unlock(&capture_lock);
	return r;
}
CUresult cuStreamEndCapture_ptsz(CUstream hStream, CUgraph *phGraph) XGPU_ALIAS(cuStreamEndCapture);

CUresult cuStreamIsCapturing(CUstream hStream, CUstreamCaptureStatus *captureStatus)
{
	return cuStreamGetCaptureInfo_v3(hStream, captureStatus, NULL, NULL, NULL, NULL, NULL);
}
CUresult cuStreamIsCapturing_ptsz(CUstream hStream, CUstreamCaptureStatus *captureStatus)
    XGPU_ALIAS(cuStreamIsCapturing);

CUresult cuStreamGetCaptureInfo_v3(CUstream hStream, CUstreamCaptureStatus *captureStatus_out,
				   cuuint64_t *id_out, CUgraph *graph_out,
				   const CUgraphNode **dependencies_out, const CUgraphEdgeData **edgeData_out,
				   size_t *numDependencies_out)
{
	struct xgpu_client *c;
	if (!captureStatus_out)
		return CUDA_ERROR_INVALID_VALUE;
	CUresult r = graph_client(&c);
	if (r)
		return r;
	pthread_mutex_lock(&capture_lock);
	struct capture_stream *cs = find_stream(xgpu_drv_stream(hStream));
	*captureStatus_out = !cs                    ? CU_STREAM_CAPTURE_STATUS_NONE
			     : cs->cap->invalidated ? CU_STREAM_CAPTURE_STATUS_INVALIDATED
						    : CU_STREAM_CAPTURE_STATUS_ACTIVE;
	/* Outside a capture only the status is defined; the rest reads empty. */
	if (id_out)
		*id_out = cs ? cs->cap->id : 0;
	if (graph_out)
		*graph_out = cs ? cs->cap->graph : NULL;
	if (dependencies_out)
		*dependencies_out = cs ? cs->frontier : NULL;
	if (edgeData_out)
		*edgeData_out = NULL;
	if (numDependencies_out)
		*numDependencies_out = cs ? cs->n : 0;
	pthread_mutex_unlock(&capture_lock);
	return CUDA_SUCCESS;
}
CUresult cuStreamGetCaptureInfo_v3_ptsz(CUstream hStream, CUstreamCaptureStatus *captureStatus_out,
					cuuint64_t *id_out, CUgraph *graph_out,
					const CUgraphNode **dependencies_out,
					const CUgraphEdgeData **edgeData_out, size_t *numDependencies_out)
    XGPU_ALIAS(cuStreamGetCaptureInfo_v3);

/* The older ABIs of the same question. */
#undef cuStreamGetCaptureInfo
CUresult cuStreamGetCaptureInfo(CUstream hStream, CUstreamCaptureStatus *captureStatus_out,
				cuuint64_t *id_out);
CUresult cuStreamGetCaptureInfo(CUstream hStream, CUstreamCaptureStatus *captureStatus_out,
				cuuint64_t *id_out)
{
	return cuStreamGetCaptureInfo_v3(hStream, captureStatus_out, id_out, NULL, NULL, NULL, NULL);
}
CUresult cuStreamGetCaptureInfo_ptsz(CUstream hStream, CUstreamCaptureStatus *captureStatus_out,
				     cuuint64_t *id_out) XGPU_ALIAS(cuStreamGetCaptureInfo);

CUresult cuStreamGetCaptureInfo_v2(CUstream hStream, CUstreamCaptureStatus *captureStatus_out,
				   cuuint64_t *id_out, CUgraph *graph_out,
				   const CUgraphNode **dependencies_out, size_t *numDependencies_out)
{
	return cuStreamGetCaptureInfo_v3(hStream, captureStatus_out, id_out, graph_out, dependencies_out,
					 NULL, numDependencies_out);
}
CUresult cuStreamGetCaptureInfo_v2_ptsz(CUstream hStream, CUstreamCaptureStatus *captureStatus_out,
					cuuint64_t *id_out, CUgraph *graph_out,
					const CUgraphNode **dependencies_out, size_t *numDependencies_out)
    XGPU_ALIAS(cuStreamGetCaptureInfo_v2);

/* Replaces (CU_STREAM_SET_CAPTURE_DEPENDENCIES) or adds to the nodes the
 * stream's next captured work depends on, as after a node the program added
 * to the capture's graph itself. */
static CUresult update_capture_deps(CUstream hStream, CUgraphNode *deps, size_t n, unsigned flags)
{
	struct xgpu_client *c;
	CUresult r = graph_client(&c);
	if (r)
		return r;
	if ((n && !deps) ||
	    (flags != CU_STREAM_ADD_CAPTURE_DEPENDENCIES && flags != CU_STREAM_SET_CAPTURE_DEPENDENCIES))
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&capture_lock);
	struct capture_stream *cs = find_stream(xgpu_drv_stream(hStream));
	if (!cs)
		r = CUDA_ERROR_ILLEGAL_STATE;
	for (size_t i = 0; !r && i < n; i++)
		if (!valid_node(deps[i]) || deps[i]->graph != cs->cap->graph)
			r = CUDA_ERROR_INVALID_VALUE;
	if (!r && flags == CU_STREAM_SET_CAPTURE_DEPENDENCIES)
		r = set_frontier(cs, deps, n);
	else if (!r) {
		if (!grow((void **)&cs->frontier, &cs->cap_n, cs->n + n ? cs->n + n : 1,
			  sizeof *cs->frontier))
			r = CUDA_ERROR_OUT_OF_MEMORY;
		for (size_t i = 0; !r && i < n; i++) {
			bool have = false;
			for (size_t k = 0; k < cs->n; k++)
				have |= cs->frontier[k] == deps[i];
			if (!have)
				cs->frontier[cs->n++] = deps[i];
		}
	}
	pthread_mutex_unlock(&capture_lock);
	return r;
}

#undef cuStreamUpdateCaptureDependencies
CUresult cuStreamUpdateCaptureDependencies(CUstream hStream, CUgraphNode *dependencies,
					   size_t numDependencies, unsigned int flags);
CUresult cuStreamUpdateCaptureDependencies(CUstream hStream, CUgraphNode *dependencies,
					   size_t numDependencies, unsigned int flags)
{
	return update_capture_deps(hStream, dependencies, numDependencies, flags);
}
CUresult cuStreamUpdateCaptureDependencies_ptsz(CUstream hStream, CUgraphNode *dependencies,
						size_t numDependencies, unsigned int flags);
CUresult cuStreamUpdateCaptureDependencies_ptsz(CUstream hStream, CUgraphNode *dependencies,
						size_t numDependencies, unsigned int flags)
    XGPU_ALIAS(cuStreamUpdateCaptureDependencies);

CUresult cuStreamUpdateCaptureDependencies_v2(CUstream hStream, CUgraphNode *dependencies,
					      const CUgraphEdgeData *dependencyData, size_t numDependencies,
					      unsigned int flags)
{
	CUresult r = check_edges(dependencyData, numDependencies);
	return r ? r : update_capture_deps(hStream, dependencies, numDependencies, flags);
}
CUresult cuStreamUpdateCaptureDependencies_v2_ptsz(CUstream hStream, CUgraphNode *dependencies,
						   const CUgraphEdgeData *dependencyData,
						   size_t numDependencies, unsigned int flags)
    XGPU_ALIAS(cuStreamUpdateCaptureDependencies_v2);

CUresult cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode *mode)
{
	if (!mode ||
	    (*mode != CU_STREAM_CAPTURE_MODE_GLOBAL && *mode != CU_STREAM_CAPTURE_MODE_THREAD_LOCAL &&
	     *mode != CU_STREAM_CAPTURE_MODE_RELAXED))
		return CUDA_ERROR_INVALID_VALUE;
	CUstreamCaptureMode old = thread_mode;
	thread_mode = *mode;
	*mode = old;
	return CUDA_SUCCESS;
}
