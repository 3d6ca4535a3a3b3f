/* dispatch.h - running one guest request. */
#ifndef XGPU_EXEC_DISPATCH_H
#define XGPU_EXEC_DISPATCH_H

#include "core.h"

#include <stdbool.h>
#include <stdint.h>

/* dispatch.c: runs one request copied out of the ring. */
void xgpu_dispatch(struct xgpu_channel *ch, const uint8_t *slot);
/* Whether the request in slot may run without the GPU slot. */
bool xgpu_dispatch_exempt(const uint8_t *slot);

struct xgpu_graph_exec;
/* Destroys an instantiated graph (its work is done) and returns its pinned
 * staging to the domain's budget; the caller deletes its handle. */
void xgpu_graph_exec_free(struct xgpu_domain *dom, struct xgpu_graph_exec *x);

#endif
