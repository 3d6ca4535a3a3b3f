/* SPDX-License-Identifier: Apache-2.0 */
/* graph.h - a guest's instantiated graph in the daemon: the driver graph
 * built from its validated description (dispatch.c builds and launches it)
 * and what its launches need. */
#ifndef XGPU_EXEC_GRAPH_H
#define XGPU_EXEC_GRAPH_H

#include "executor.h"

#include <stdbool.h>
#include <stdint.h>

/* The driver's graph and its executable, the nodes as validated (a launch
 * checks the handles and ranges they name again: those may have been freed
 * since), and the pinned staging of its host copies. */
struct xgpu_graph_exec {
	CUgraph g;
	CUgraphExec ge;
	CUevent done; /* recorded after each launch: the staging is free again */
	bool launched;
	uint32_t nnodes, nkernels;
	struct xgpu_graph_node *nodes; /* host copies' host side: offsets into host */
	uint64_t htod_bytes, dtoh_bytes;
	uint8_t *host; /* pinned: htod_bytes then dtoh_bytes */
	uint64_t host_charge;
	/* Conditional nodes: the handle table as validated and the number of
	 * bodies (node graph fields name them); their driver objects belong
	 * to the driver graph. */
	struct xgpu_graph_cond *conds;
	uint32_t nconds, nbodies;
};

/* Destroys an instantiated graph (its work is done) and returns its pinned
 * staging to the domain's budget; the caller deletes its handle. */
void xgpu_graph_exec_free(struct xgpu_domain *dom, struct xgpu_graph_exec *x);

#endif
