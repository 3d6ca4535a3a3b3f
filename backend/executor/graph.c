/* SPDX-License-Identifier: Apache-2.0 */
/* graph.c - freeing a guest's instantiated graph, shared by its destroy
 * (dispatch.c) and the cleanup of its process (channel.c). */
#include "graph.h"

#include <stdlib.h>

void xgpu_graph_exec_free(struct xgpu_domain *dom, struct xgpu_graph_exec *x)
{
	struct xgpu_driver *drv = &dom->x->drv;
	if (x->ge)
		drv->cuGraphExecDestroy(x->ge);
	if (x->g)
		drv->cuGraphDestroy(x->g);
	if (x->done)
		drv->cuEventDestroy(x->done);
	if (x->host)
		drv->cuMemFreeHost(x->host);
	dom->pinned_bytes -= x->host_charge;
	free(x->nodes);
	free(x->conds);
	free(x);
}
