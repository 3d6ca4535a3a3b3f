/* SPDX-License-Identifier: Apache-2.0 */
/* launchattr.h - the launch attributes of cuLaunchKernelEx and
 * cudaLaunchKernelExC (the two APIs share ids and value layout), checked in
 * one place for both frontends. */
#ifndef XGPU_FE_LAUNCHATTR_H
#define XGPU_FE_LAUNCHATTR_H

#include <cuda.h>
#include <stdint.h>

/* What a launch's attributes ask of the wire. */
struct xgpu_launch_attrs {
	uint32_t flags;    /* XGPU_LAUNCH_* for LAUNCH_EX */
	uint32_t cluster[3];     /* the cluster's shape (0x0x0: none given) */
	uint32_t cluster_policy; /* CUclusterSchedulingPolicy, 0: default */
	uint64_t after[2]; /* events (wire handles, 0: none) to record on the
			    * launch's stream once it is queued: the
			    * programmatic event and the completion event */
};

/* Checks n attributes for a launch by api ("cuLaunchKernelEx"): 0 (success),
 * cudaErrorInvalidValue / InvalidResourceHandle for a bad value (numbered
 * as the CUresult of the same meaning), or cudaErrorNotSupported for an
 * attribute refused, reported by name and reason (xgpu_client_note_unsupported). */
/* Whether a launch must go as LAUNCH_EX (flags, a cluster or its policy). */
static inline int xgpu_launch_attrs_ex(const struct xgpu_launch_attrs *a)
{
	return a->flags || a->cluster_policy ||
	       ((a->cluster[0] | a->cluster[1] | a->cluster[2]) &&
		(a->cluster[0] != 1 || a->cluster[1] != 1 || a->cluster[2] != 1));
}

int xgpu_launch_attrs_check(const CUlaunchAttribute *attrs, unsigned n, const char *api,
			    struct xgpu_launch_attrs *out);

#endif
