/* SPDX-License-Identifier: Apache-2.0 */
/* launchattr.c - cuLaunchKernelEx's and cudaLaunchKernelExC's attributes (CUDA 13.0 defines 0 to 14 and 16).
 * Each is served, taken as the hint it is, or refused by name with the reason:
 *
 *   0  IGNORE                      nothing
 *   1  ACCESS_POLICY_WINDOW        an L2 persistence hint: checked, not used
 *   2  COOPERATIVE                 the daemon checks residency (LAUNCH_EX)
 *   3  SYNCHRONIZATION_POLICY      how a host waits: the daemon's to choose
 *   4  CLUSTER_DIMENSION           carried (LAUNCH_EX); the daemon checks
 *                                  the shape (INVALID_CLUSTER_SIZE)
 *   5  CLUSTER_SCHEDULING_POLICY   carried (LAUNCH_EX), 0 to 2
 *   6  PROGRAMMATIC_STREAM_SERIALIZATION  allows the kernel to overlap the
 *                                  one before it; xgpu never overlaps them,
 *                                  which every kernel must cope with
 *   7  PROGRAMMATIC_EVENT          the event is recorded after the kernel,
 *                                  later than CUDA may fire it, never earlier
 *   8  PRIORITY                    a hint the daemon does not use per launch
 *   9  MEM_SYNC_DOMAIN_MAP, 10 MEM_SYNC_DOMAIN  fence-scope hints
 *  11  PREFERRED_CLUSTER_DIMENSION a preference; without clusters the kernel
 *                                  runs with clusterDim, as CUDA's fallback
 *  12  LAUNCH_COMPLETION_EVENT     the event is recorded after the kernel
 *  13  DEVICE_UPDATABLE_KERNEL_NODE  graphs only: 0 accepted, else refused
 *  14  PREFERRED_SHARED_MEMORY_CARVEOUT  a hint, 0 to 100 (or -1: default)
 *  16  NVLINK_UTIL_CENTRIC_SCHEDULING    a hint, 0 or 1
 *
 * Anything else is refused by number (a newer CUDA's attribute). */
#include "launchattr.h"
#include "client.h"
#include "proto.h"

#include <driver_types.h>
#include <stdio.h>
#include <string.h>

static int refuse(const char *api, int id, const char *why)
{
	char what[224];
	snprintf(what, sizeof what, "%s (launch attribute %d: %s)", api, id, why);
	xgpu_client_note_unsupported(what, strncmp(api, "cuda", 4) ? "CUDA_ERROR_NOT_SUPPORTED"
								   : "cudaErrorNotSupported");
	return cudaErrorNotSupported;
}

int xgpu_launch_attrs_check(const CUlaunchAttribute *attrs, unsigned n, const char *api,
			    struct xgpu_launch_attrs *out)
{
	memset(out, 0, sizeof *out);
	for (unsigned i = 0; i < n; i++) {
		const CUlaunchAttribute *a = &attrs[i];
		const CUlaunchAttributeValue *v = &a->value;
		switch ((int)a->id) {
		case CU_LAUNCH_ATTRIBUTE_IGNORE:
		case CU_LAUNCH_ATTRIBUTE_PRIORITY:
		case CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION:
		case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP:
			break;
		case CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW:
			if (!(v->accessPolicyWindow.hitRatio >= 0.0f &&
			      v->accessPolicyWindow.hitRatio <= 1.0f))
				return cudaErrorInvalidValue;
			break;
		case CU_LAUNCH_ATTRIBUTE_COOPERATIVE:
			if (v->cooperative)
				out->flags |= XGPU_LAUNCH_COOPERATIVE;
			else
				out->flags &= ~XGPU_LAUNCH_COOPERATIVE;
			break;
		case CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY:
			if (v->syncPolicy < CU_SYNC_POLICY_AUTO ||
			    v->syncPolicy > CU_SYNC_POLICY_BLOCKING_SYNC)
				return cudaErrorInvalidValue;
			break;
		case CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION:
			if (!v->clusterDim.x || !v->clusterDim.y || !v->clusterDim.z)
				return cudaErrorInvalidValue;
			out->cluster[0] = v->clusterDim.x;
			out->cluster[1] = v->clusterDim.y;
			out->cluster[2] = v->clusterDim.z;
			break;
		case CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
			if ((unsigned)v->clusterSchedulingPolicyPreference >
			    CU_CLUSTER_SCHEDULING_POLICY_LOAD_BALANCING)
				return cudaErrorInvalidValue;
			out->cluster_policy = (uint32_t)v->clusterSchedulingPolicyPreference;
			break;
		case CU_LAUNCH_ATTRIBUTE_PREFERRED_CLUSTER_DIMENSION:
			if (!v->preferredClusterDim.x || !v->preferredClusterDim.y ||
			    !v->preferredClusterDim.z)
				return cudaErrorInvalidValue;
			break;
		case CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT:
		case CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT: {
			/* The two values share their layout: event, flags. */
			CUevent ev = a->id == CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT
					 ? v->programmaticEvent.event
					 : v->launchCompletionEvent.event;
			int evflags = a->id == CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT
					  ? v->programmaticEvent.flags
					  : v->launchCompletionEvent.flags;
			if (!ev)
				return cudaErrorInvalidResourceHandle;
			if (evflags & ~CU_EVENT_RECORD_DEFAULT)
				return cudaErrorInvalidValue;
			out->after[a->id == CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT ? 0 : 1] =
			    (uint64_t)(uintptr_t)ev;
			break;
		}
		case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN:
			if ((unsigned)v->memSyncDomain > CU_LAUNCH_MEM_SYNC_DOMAIN_REMOTE)
				return cudaErrorInvalidValue;
			break;
		case CU_LAUNCH_ATTRIBUTE_DEVICE_UPDATABLE_KERNEL_NODE:
			if (v->deviceUpdatableKernelNode.deviceUpdatable)
				return refuse(api, a->id,
					      "device-updatable kernel nodes need device-side "
					      "graph updates, which xgpu does not offer");
			break;
		case CU_LAUNCH_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
			if (v->sharedMemCarveout > 100 && v->sharedMemCarveout != (unsigned)-1)
				return cudaErrorInvalidValue;
			break;
		case CU_LAUNCH_ATTRIBUTE_NVLINK_UTIL_CENTRIC_SCHEDULING:
			if (v->nvlinkUtilCentricScheduling > 1)
				return cudaErrorInvalidValue;
			break;
		default:
			return refuse(api, a->id, "not one CUDA 13.0 defines");
		}
	}
	return cudaSuccess;
}
