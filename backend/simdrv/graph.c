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
 *
 * Conditional nodes (cuGraphAddNode) own body graphs, registered like any
 * graph so that nodes can be added to them. A launch decides a conditional
 * node where it comes in the order: it waits for the work submitted before
 * it (a kernel of that work may set the condition, cudaGraphSetConditional,
 * which the PTX interpreter hands to sim_cond_set) and then submits the
 * body to run, if any, the same way; a while node decides again after each
 * run of its body. So a graph with conditional handles runs to its end
 * inside cuGraphLaunch, which the executor's launch tolerates (it waits for
 * a graph that copies to the host anyway); the next launch can then apply
 * default values without racing a kernel of the last one.
 */
#include "simdrv_int.h"

#include <stdlib.h>
#include <string.h>

enum node_kind { N_EMPTY, N_KERNEL, N_COPY, N_MEMSET, N_EVENT_RECORD, N_EVENT_WAIT, N_COND };

#define SIM_MAX_COND_DEPTH 16              /* bodies within bodies */
#define SIM_MAX_COND_SIZE 4096u            /* bodies of one switch node */
#define SIM_MAX_WHILE (1u << 24)           /* runs of one while body in one launch */
#define SIM_COND_TAG 0x73636e6400000000ull /* "scnd": handle values */

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
		struct {
			uint64_t handle;
			CUgraphConditionalNodeType type;
			unsigned size;
			struct CUgraph_st **bodies; /* phGraph_out */
		} cond;
	} u;
};

struct cond_def {
	uint64_t handle;
	uint32_t default_value, flags;
};

struct CUgraph_st {
	struct sim_obj obj;
	struct CUgraphNode_st **nodes;
	size_t n, cap;
	struct cond_def *conds; /* its conditional handles */
	size_t nconds;
	unsigned depth;            /* conditional nodes around it */
	bool copy;                 /* an executable's (not registered) */
	bool body;                 /* its conditional node owns it */
	struct CUgraph_st *parent; /* a body's: the graph of its node (outlives it) */
};

struct CUgraphExec_st {
	struct sim_obj obj;
	struct CUgraph_st *copy;     /* the nodes as instantiated (not registered) */
	struct sim_cond_state *cond; /* its handles, or NULL when it has none */
};

static _Atomic uint64_t next_cond = 1;

void sim_cond_put(struct sim_cond_state *st)
{
	if (st && atomic_fetch_sub(&st->refs, 1) == 1)
		free(st);
}

int sim_cond_set(void *arg, uint64_t handle, uint32_t value)
{
	struct sim_cond_state *st = arg;
	for (size_t i = 0; i < st->n; i++)
		if (st->v[i].handle == handle) {
			atomic_store(&st->v[i].value, value);
			return 0;
		}
	return -1;
}

static void free_graph_copy(struct CUgraph_st *g);

static void free_node(struct CUgraphNode_st *n)
{
	if (n->kind == N_KERNEL)
		free(n->u.k.params);
	if (n->kind == N_COND && n->u.cond.bodies) {
		for (unsigned b = 0; b < n->u.cond.size; b++) {
			struct CUgraph_st *body = n->u.cond.bodies[b];
			if (body && body->copy)
				free_graph_copy(body);
			else if (body && sim_obj_unregister(&body->obj))
				sim_obj_put(&body->obj); /* the registry's reference */
		}
		free(n->u.cond.bodies);
	}
	free(n);
}

static void free_nodes(struct CUgraph_st *g)
{
	for (size_t i = 0; i < g->n; i++)
		free_node(g->nodes[i]);
	free(g->nodes);
	free(g->conds);
}

static void free_graph_copy(struct CUgraph_st *g)
{
	free_nodes(g);
	free(g);
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
	free_graph_copy(x->copy);
	sim_cond_put(x->cond);
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
	if (g && g->body) { /* it goes with its conditional node */
		sim_obj_put(&g->obj);
		return CUDA_ERROR_INVALID_VALUE;
	}
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
	} else
		free_node(node);
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

CUresult cuGraphConditionalHandleCreate(CUgraphConditionalHandle *pHandle_out, CUgraph hGraph, CUcontext ctx,
					unsigned int defaultLaunchValue, unsigned int flags)
{
	(void)ctx;
	if (!pHandle_out || (flags & ~(unsigned)CU_GRAPH_COND_ASSIGN_DEFAULT))
		return CUDA_ERROR_INVALID_VALUE;
	struct CUgraph_st *g = sim_obj_get(hGraph, SIM_GRAPH);
	if (!g)
		return CUDA_ERROR_INVALID_VALUE;
	struct cond_def *v = realloc(g->conds, (g->nconds + 1) * sizeof *v);
	CUresult r = v ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
	if (v) {
		g->conds = v;
		uint64_t h = SIM_COND_TAG | (atomic_fetch_add(&next_cond, 1) & 0xffffffffu);
		v[g->nconds++] = (struct cond_def){h, defaultLaunchValue, flags};
		*pHandle_out = h;
	}
	sim_obj_put(&g->obj);
	return r;
}

/* Only conditional nodes come this way (xgpud adds the others with their
 * typed calls); the handle must be one of the graph's own. */
CUresult cuGraphAddNode_v2(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
			   const CUgraphEdgeData *dependencyData, size_t numDependencies,
			   CUgraphNodeParams *p)
{
	if (!p || dependencyData)
		return CUDA_ERROR_INVALID_VALUE;
	if (p->type != CU_GRAPH_NODE_TYPE_CONDITIONAL)
		return CUDA_ERROR_NOT_SUPPORTED;
	const CUDA_CONDITIONAL_NODE_PARAMS *c = &p->conditional;
	bool sized = (c->type == CU_GRAPH_COND_TYPE_IF && (c->size == 1 || c->size == 2)) ||
		     (c->type == CU_GRAPH_COND_TYPE_WHILE && c->size == 1) ||
		     (c->type == CU_GRAPH_COND_TYPE_SWITCH && c->size >= 1 && c->size <= SIM_MAX_COND_SIZE);
	struct CUgraph_st *g = sim_obj_get(hGraph, SIM_GRAPH);
	if (!g)
		return CUDA_ERROR_INVALID_VALUE;
	/* The handle of the graph or of one it is a body of. */
	bool own = false;
	for (const struct CUgraph_st *a = g; a && !own; a = a->parent)
		for (size_t i = 0; i < a->nconds; i++)
			own |= a->conds[i].handle == c->handle;
	unsigned depth = g->depth;
	sim_obj_put(&g->obj);
	if (!sized || !own || depth >= SIM_MAX_COND_DEPTH)
		return CUDA_ERROR_INVALID_VALUE;
	struct CUgraphNode_st *n = new_node(N_COND);
	if (!n || !(n->u.cond.bodies = calloc(c->size, sizeof *n->u.cond.bodies))) {
		free(n);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	n->u.cond.handle = c->handle;
	n->u.cond.type = c->type;
	n->u.cond.size = c->size;
	for (unsigned b = 0; b < c->size; b++) {
		CUgraph body;
		if (cuGraphCreate(&body, 0)) {
			free_node(n);
			return CUDA_ERROR_OUT_OF_MEMORY;
		}
		body->depth = depth + 1;
		body->body = true;
		body->parent = hGraph;
		n->u.cond.bodies[b] = body;
	}
	CUgraph *bodies = n->u.cond.bodies;
	CUresult r = add(hGraph, dependencies, numDependencies, n, phGraphNode);
	if (!r)
		p->conditional.phGraph_out = bodies;
	return r;
}

/* A deep copy of src (not registered) whose conditional handles are added
 * to *cl (*ncl of them). */
static struct CUgraph_st *copy_graph(const struct CUgraph_st *src, struct cond_def **cl, size_t *ncl,
				     CUresult *r)
{
	struct CUgraph_st *g = calloc(1, sizeof *g);
	if (!g || (src->n && !(g->nodes = calloc(src->n, sizeof *g->nodes)))) {
		free(g);
		*r = CUDA_ERROR_OUT_OF_MEMORY;
		return NULL;
	}
	g->copy = true;
	if (src->nconds) {
		struct cond_def *v = realloc(*cl, (*ncl + src->nconds) * sizeof *v);
		if (!v) {
			free_graph_copy(g);
			*r = CUDA_ERROR_OUT_OF_MEMORY;
			return NULL;
		}
		memcpy(v + *ncl, src->conds, src->nconds * sizeof *v);
		*cl = v;
		*ncl += src->nconds;
	}
	for (size_t i = 0; i < src->n; i++) {
		const struct CUgraphNode_st *s = src->nodes[i];
		struct CUgraphNode_st *n = malloc(sizeof *n);
		if (!n) {
			*r = CUDA_ERROR_OUT_OF_MEMORY;
			break;
		}
		*n = *s;
		n->graph = g;
		if (n->kind == N_KERNEL)
			n->u.k.params = NULL;
		if (n->kind == N_COND)
			n->u.cond.bodies = NULL;
		g->nodes[g->n++] = n;
		if (n->kind == N_KERNEL && s->u.k.param_bytes) {
			if (!(n->u.k.params = malloc(s->u.k.param_bytes))) {
				*r = CUDA_ERROR_OUT_OF_MEMORY;
				break;
			}
			memcpy(n->u.k.params, s->u.k.params, s->u.k.param_bytes);
		}
		if (n->kind == N_COND) {
			if (!(n->u.cond.bodies = calloc(s->u.cond.size, sizeof *n->u.cond.bodies))) {
				*r = CUDA_ERROR_OUT_OF_MEMORY;
				break;
			}
			for (unsigned b = 0; b < s->u.cond.size && !*r; b++)
				n->u.cond.bodies[b] = copy_graph(s->u.cond.bodies[b], cl, ncl, r);
			if (*r)
				break;
		}
	}
	if (*r) {
		free_graph_copy(g);
		return NULL;
	}
	return g;
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
	CUresult r = x ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
	struct cond_def *cl = NULL;
	size_t ncl = 0;
	struct CUgraph_st *g = r ? NULL : copy_graph(src, &cl, &ncl, &r);
	sim_obj_put(&src->obj);
	if (!r && ncl) {
		x->cond = calloc(1, sizeof *x->cond + ncl * sizeof x->cond->v[0]);
		if (!x->cond)
			r = CUDA_ERROR_OUT_OF_MEMORY;
		else {
			atomic_init(&x->cond->refs, 1);
			x->cond->n = ncl;
			for (size_t i = 0; i < ncl; i++) {
				x->cond->v[i].handle = cl[i].handle;
				x->cond->v[i].default_value = cl[i].default_value;
				x->cond->v[i].flags = cl[i].flags;
				atomic_init(&x->cond->v[i].value, cl[i].default_value);
			}
		}
	}
	free(cl);
	if (!r) {
		x->copy = g;
		if (sim_obj_register(&x->obj, SIM_GRAPH_EXEC, exec_release) < 0)
			r = CUDA_ERROR_OUT_OF_MEMORY;
	}
	if (r) {
		if (g)
			free_graph_copy(g);
		if (x)
			sim_cond_put(x->cond);
		free(x);
		return r;
	}
	*phGraphExec = x;
	return CUDA_SUCCESS;
}

static CUresult launch_node(const struct CUgraphNode_st *n, CUstream s, struct sim_cond_state *cond)
{
	switch (n->kind) {
	case N_EMPTY:
	case N_COND: /* run_graph's */
		return CUDA_SUCCESS;
	case N_KERNEL: {
		size_t size = n->u.k.param_bytes;
		void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, n->u.k.params, CU_LAUNCH_PARAM_BUFFER_SIZE,
				 &size, CU_LAUNCH_PARAM_END};
		return sim_launch_kernel(n->u.k.func, n->u.k.grid, n->u.k.block, n->u.k.shared, s,
					 size ? extra : NULL, cond);
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

/* The value of conditional handle h once the work submitted so far is done
 * (its kernels may set it). */
static CUresult cond_value(const struct sim_cond_state *st, uint64_t h, CUstream s, uint32_t *v)
{
	CUresult r = cuStreamSynchronize(s);
	if (r)
		return r;
	for (size_t i = 0; i < st->n; i++)
		if (st->v[i].handle == h) {
			*v = atomic_load(&st->v[i].value);
			return CUDA_SUCCESS;
		}
	return CUDA_ERROR_INVALID_VALUE; /* cannot be: the node was checked */
}

static CUresult run_graph(const struct CUgraph_st *g, CUstream s, struct sim_cond_state *st);

/* Whether a kernel of g (or of a body in it) is computed, by a host
 * implementation or the PTX interpreter: only such a kernel can set a
 * condition. */
static bool computes(const struct CUgraph_st *g)
{
	for (size_t i = 0; i < g->n; i++) {
		const struct CUgraphNode_st *n = g->nodes[i];
		if (n->kind == N_KERNEL && (n->u.k.func->impl || n->u.k.func->pk))
			return true;
		for (unsigned b = 0; n->kind == N_COND && b < n->u.cond.size; b++)
			if (computes(n->u.cond.bodies[b]))
				return true;
	}
	return false;
}

static CUresult run_cond(const struct CUgraphNode_st *n, CUstream s, struct sim_cond_state *st)
{
	uint32_t v;
	CUresult r = cond_value(st, n->u.cond.handle, s, &v);
	switch (n->u.cond.type) {
	case CU_GRAPH_COND_TYPE_IF:
		if (!r && (v || n->u.cond.size == 2))
			r = run_graph(n->u.cond.bodies[v ? 0 : 1], s, st);
		return r;
	case CU_GRAPH_COND_TYPE_SWITCH:
		if (!r && v < n->u.cond.size)
			r = run_graph(n->u.cond.bodies[v], s, st);
		return r;
	case CU_GRAPH_COND_TYPE_WHILE:
		for (uint32_t runs = 0; !r && v; runs++) {
			/* A loop its kernels never end: as a GPU's watchdog would. */
			if (runs == SIM_MAX_WHILE)
				return CUDA_ERROR_LAUNCH_TIMEOUT;
			r = run_graph(n->u.cond.bodies[0], s, st);
			if (!r)
				r = cond_value(st, n->u.cond.handle, s, &v);
			/* A body whose kernels the sim cannot compute (no PTX, no
			 * host implementation) never ends its loop here, though it
			 * would on a GPU: it runs once, as a do-while that stops. */
			if (!r && v && !runs && !computes(n->u.cond.bodies[0])) {
				sim_log(
				    "a while node's body computes nothing (its kernels have no PTX or host "
				    "implementation): its loop ends after one run");
				break;
			}
		}
		return r;
	}
	return CUDA_ERROR_INVALID_VALUE;
}

static CUresult run_graph(const struct CUgraph_st *g, CUstream s, struct sim_cond_state *st)
{
	CUresult r = CUDA_SUCCESS;
	for (size_t i = 0; !r && i < g->n; i++)
		r = g->nodes[i]->kind == N_COND ? run_cond(g->nodes[i], s, st)
						: launch_node(g->nodes[i], s, st);
	return r;
}

CUresult cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream)
{
	struct CUgraphExec_st *x = sim_obj_get(hGraphExec, SIM_GRAPH_EXEC);
	if (!x)
		return CUDA_ERROR_INVALID_VALUE;
	struct sim_cond_state *st = x->cond;
	for (size_t i = 0; st && i < st->n; i++)
		if (st->v[i].flags & CU_GRAPH_COND_ASSIGN_DEFAULT)
			atomic_store(&st->v[i].value, st->v[i].default_value);
	CUresult r = run_graph(x->copy, hStream, st);
	/* Done before the next launch sets the defaults again. */
	if (!r && st)
		r = cuStreamSynchronize(hStream);
	sim_obj_put(&x->obj);
	return r;
}

CUresult cuGraphExecDestroy(CUgraphExec hGraphExec)
{
	struct CUgraphExec_st *x = sim_obj_get(hGraphExec, SIM_GRAPH_EXEC);
	return x ? destroy(&x->obj) : CUDA_ERROR_INVALID_VALUE;
}
