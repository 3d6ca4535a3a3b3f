/* SPDX-License-Identifier: Apache-2.0 */
/* drvapi13.c - the driver API calls of CUDA 13 that NVIDIA's samples and
 * libraries (NCCL, PyTorch) make beyond drvapi.c's, swept over their
 * parameters and call orders:
 *
 *   drvapi13 FATBIN [RDC_CUBIN PTX | limit BYTES | load]
 *
 * contexts (cuCtxCreate v4 with CUctxCreateParams and every context call of
 * CUDA 13), every launch attribute of cuLaunchKernelEx, cuStreamAttachMemAsync,
 * and virtual memory management (cuMemCreate, cuMemAddressReserve, cuMemMap,
 * cuMemSetAccess...). FATBIN is tests/data/drvapi_kernels.cu built with nvcc
 * -fatbin (drv_iota writes base + i); RDC_CUBIN and PTX, the same as a
 * relocatable cubin and tests/data/link_extra.cu's PTX, are linked with
 * cuLink* (which needs nvJitLink). With "limit BYTES" it checks instead
 * that cuMemCreate counts against a domain memory limit of BYTES; with
 * "load", only that FATBIN (a large one) loads and its drv_iota runs. Prints
 * "drvapi13: OK" and exits 0 when every result is right. */
#include <cuda.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define DRV_PROGRAM "drvapi13"
#include "drvcheck.h"

#define N 4096

static int failures;
static CUfunction iota;

/* Expects call to return want; names both when it does not. */
#define EXPECT_R(call, want)                                                                                 \
	do {                                                                                                 \
		CUresult got_ = (call);                                                                      \
		if (got_ != (want)) {                                                                        \
			fprintf(stderr, "%s: %s:%d: %s returned %d, expected %d\n", DRV_PROGRAM, __FILE__,   \
				__LINE__, #call, (int)got_, (int)(want));                                    \
			failures++;                                                                          \
		}                                                                                            \
	} while (0)

/* n ints at d are base, base + 1, ... */
static int check_iota(CUdeviceptr d, int base, int n)
{
	int *h = malloc((size_t)n * sizeof *h);
	if (!h)
		exit(2);
	CHECK(cuMemcpyDtoH(h, d, (size_t)n * sizeof *h));
	int bad = 0;
	for (int i = 0; i < n; i++)
		if (h[i] != base + i)
			bad++;
	free(h);
	return bad;
}

static CUresult launch_iota(CUdeviceptr d, int base, int n, CUstream s, CUlaunchAttribute *attrs,
			    unsigned nattrs)
{
	void *args[] = {&d, &base, &n};
	CUlaunchConfig cfg = {.gridDimX = (unsigned)(n + 255) / 256,
			      .gridDimY = 1,
			      .gridDimZ = 1,
			      .blockDimX = 256,
			      .blockDimY = 1,
			      .blockDimZ = 1,
			      .hStream = s,
			      .attrs = attrs,
			      .numAttrs = nattrs};
	return cuLaunchKernelEx(&cfg, iota, args, NULL);
}

/* ---- contexts --------------------------------------------------------------------------- */

static void contexts(CUdevice dev, CUcontext primary)
{
	CUcontext a, b, cur;
	/* cuCtxCreate as CUDA 13's samples call it: a zeroed CUctxCreateParams. */
	CUctxCreateParams zero;
	memset(&zero, 0, sizeof zero);
	CHECK(cuCtxCreate(&a, &zero, 0, dev));
	CHECK(cuCtxCreate(&b, NULL, CU_CTX_SCHED_BLOCKING_SYNC, dev));
	CHECK(cuCtxGetCurrent(&cur));
	EXPECT(cur == b);
	unsigned long long ida = 0, idb = 0;
	CHECK(cuCtxGetId(a, &ida));
	CHECK(cuCtxGetId(b, &idb));
	EXPECT(ida && idb && ida != idb);
	unsigned flags = 99;
	CHECK(cuCtxGetFlags(&flags));
	EXPECT(flags == CU_CTX_SCHED_BLOCKING_SYNC);
	CHECK(cuCtxSetFlags(CU_CTX_SCHED_SPIN | CU_CTX_SYNC_MEMOPS));
	CHECK(cuCtxGetFlags(&flags));
	EXPECT(flags == (CU_CTX_SCHED_SPIN | CU_CTX_SYNC_MEMOPS));
	EXPECT_R(cuCtxSetFlags(0x100), CUDA_ERROR_INVALID_VALUE);

	/* What CUctxCreateParams can ask for beyond a plain context. */
	CUexecAffinityParam aff = {.type = CU_EXEC_AFFINITY_TYPE_SM_COUNT, .param.smCount.val = 4};
	CUctxCreateParams p = {.execAffinityParams = &aff, .numExecAffinityParams = 1};
	CUcontext x = NULL;
	EXPECT_R(cuCtxCreate(&x, &p, 0, dev), CUDA_ERROR_NOT_SUPPORTED);
	CUctxCigParam cig = {0};
	p = (CUctxCreateParams){.cigParams = &cig};
	EXPECT_R(cuCtxCreate(&x, &p, 0, dev), CUDA_ERROR_NOT_SUPPORTED);
	p = (CUctxCreateParams){.numExecAffinityParams = -1};
	EXPECT_R(cuCtxCreate(&x, &p, 0, dev), CUDA_ERROR_INVALID_VALUE);
	p = (CUctxCreateParams){.numExecAffinityParams = 1};
	EXPECT_R(cuCtxCreate(&x, &p, 0, dev), CUDA_ERROR_INVALID_VALUE);
	EXPECT_R(cuCtxCreate(&x, NULL, 0x100, dev), CUDA_ERROR_INVALID_VALUE);
	EXPECT_R(cuCtxCreate(&x, NULL, 0, 99), CUDA_ERROR_INVALID_DEVICE);
	EXPECT_R(cuCtxCreate(NULL, NULL, 0, dev), CUDA_ERROR_INVALID_VALUE);

	/* The older ABIs, as cuGetProcAddress hands them out. */
	CUresult (*create_v3)(CUcontext *, CUexecAffinityParam *, int, unsigned, CUdevice) = NULL;
	CUresult (*create_v2)(CUcontext *, unsigned, CUdevice) = NULL;
	CHECK(cuGetProcAddress("cuCtxCreate", (void **)&create_v3, 11040, CU_GET_PROC_ADDRESS_DEFAULT, NULL));
	CHECK(cuGetProcAddress("cuCtxCreate", (void **)&create_v2, 3020, CU_GET_PROC_ADDRESS_DEFAULT, NULL));
	CUcontext c3 = NULL, c2 = NULL;
	EXPECT_R(create_v3(&c3, NULL, 0, 0, dev), CUDA_SUCCESS);
	EXPECT_R(create_v3(&x, &aff, 1, 0, dev), CUDA_ERROR_NOT_SUPPORTED);
	EXPECT_R(create_v2(&c2, 0, dev), CUDA_SUCCESS);
	if (c2)
		CHECK(cuCtxDestroy(c2));
	if (c3)
		CHECK(cuCtxDestroy(c3));

	CUdevice d2 = -1;
	CHECK(cuCtxGetDevice_v2(&d2, a));
	EXPECT(d2 == dev);
	CHECK(cuCtxGetDevice_v2(&d2, NULL));
	EXPECT(d2 == dev);
	CHECK(cuCtxSynchronize_v2(a));
	CHECK(cuCtxSynchronize_v2(NULL));

	CUfunc_cache cc = CU_FUNC_CACHE_PREFER_L1;
	CHECK(cuCtxGetCacheConfig(&cc));
	EXPECT(cc == CU_FUNC_CACHE_PREFER_NONE);
	CHECK(cuCtxSetCacheConfig(CU_FUNC_CACHE_PREFER_SHARED));
	CHECK(cuCtxGetCacheConfig(&cc));
	EXPECT(cc == CU_FUNC_CACHE_PREFER_SHARED);
	EXPECT_R(cuCtxSetCacheConfig((CUfunc_cache)7), CUDA_ERROR_INVALID_VALUE);

	CUexecAffinityParam got;
	int sms = 0;
	CHECK(cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev));
	CHECK(cuCtxGetExecAffinity(&got, CU_EXEC_AFFINITY_TYPE_SM_COUNT));
	EXPECT(got.param.smCount.val == (unsigned)sms && sms > 0);

	/* cuCtxRecordEvent / cuCtxWaitEvent over work queued on a stream. */
	CUdeviceptr d;
	CUstream s;
	CUevent ev;
	CHECK(cuMemAlloc(&d, N * sizeof(int)));
	CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	CHECK(cuEventCreate(&ev, 0));
	CHECK(launch_iota(d, 7, N, s, NULL, 0));
	CHECK(cuCtxRecordEvent(NULL, ev));
	CHECK(cuEventSynchronize(ev));
	EXPECT_R(cuEventQuery(ev), CUDA_SUCCESS);
	EXPECT_R(cuStreamQuery(s), CUDA_SUCCESS); /* the event came after the stream's kernel */
	CHECK(cuCtxWaitEvent(b, ev));
	EXPECT(check_iota(d, 7, N) == 0);
	EXPECT_R(cuCtxRecordEvent(NULL, NULL), CUDA_ERROR_INVALID_HANDLE);
	EXPECT_R(cuCtxWaitEvent((CUcontext)&zero, ev), CUDA_ERROR_INVALID_CONTEXT);
	CHECK(cuEventDestroy(ev));
	CHECK(cuStreamDestroy(s));
	CHECK(cuMemFree(d));

	/* Attach and detach, and the green-context calls refused by name. */
	CUcontext att = NULL;
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
	CHECK(cuCtxAttach(&att, 0));
	EXPECT(att == b);
	CHECK(cuCtxDetach(att));
#pragma GCC diagnostic pop
	CUdevResource res;
	EXPECT_R(cuCtxGetDevResource(NULL, &res, CU_DEV_RESOURCE_TYPE_SM), CUDA_ERROR_NOT_SUPPORTED);

	/* Push and pop in a sweep of orders: the stack is per thread. */
	for (int round = 0; round < 3; round++) {
		CHECK(cuCtxPushCurrent(round & 1 ? a : b));
		CHECK(cuCtxGetCurrent(&cur));
		EXPECT(cur == (round & 1 ? a : b));
		CHECK(cuCtxPopCurrent(&cur));
		EXPECT(cur == (round & 1 ? a : b));
	}
	CHECK(cuCtxDestroy(b));
	CHECK(cuCtxDestroy(a));
	CHECK(cuCtxGetCurrent(&cur));
	EXPECT(cur == primary);
}

/* ---- launch attributes ------------------------------------------------------------------ */

/* Thread block clusters, carried to the daemon (the grid: N / 256 blocks). */
static void clusters(CUstream s, CUdeviceptr d)
{
	_Static_assert(N / 256 == 16, "the shapes below assume a grid of 16 blocks");
	CUlaunchAttribute a[2];
	memset(a, 0, sizeof a);
	a[0].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
	a[0].value.clusterDim.x = 2;
	a[0].value.clusterDim.y = a[0].value.clusterDim.z = 1;
	a[1].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE;
	a[1].value.clusterSchedulingPolicyPreference = CU_CLUSTER_SCHEDULING_POLICY_LOAD_BALANCING;
	CHECK(cuFuncSetAttribute(iota, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 0));
	static const struct {
		unsigned x, y, z;
		CUresult want;
	} shapes[] = {
	    {2, 1, 1, CUDA_SUCCESS},
	    {8, 1, 1, CUDA_SUCCESS},
	    {3, 1, 1, CUDA_ERROR_INVALID_CLUSTER_SIZE},  /* does not divide the grid */
	    {1, 2, 1, CUDA_ERROR_INVALID_CLUSTER_SIZE},  /* the grid's y is 1 */
	    {16, 1, 1, CUDA_ERROR_INVALID_CLUSTER_SIZE}, /* more than 8: not portable */
	    {0x80000000u, 1, 1, CUDA_ERROR_INVALID_CLUSTER_SIZE},
	    {1, 0, 1, CUDA_ERROR_INVALID_VALUE},
	};
	for (unsigned i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
		a[0].value.clusterDim.x = shapes[i].x;
		a[0].value.clusterDim.y = shapes[i].y;
		a[0].value.clusterDim.z = shapes[i].z;
		CHECK(cuMemsetD32(d, 0, N));
		EXPECT_R(launch_iota(d, 500 + (int)i, N, s, a, 2), shapes[i].want);
		CHECK(cuStreamSynchronize(s));
		if (shapes[i].want == CUDA_SUCCESS && check_iota(d, 500 + (int)i, N)) {
			fprintf(stderr, "drvapi13: cluster launch %u computed wrong values\n", i);
			failures++;
		}
	}
	/* 16 blocks once the kernel allows non-portable sizes, never 32. */
	int size = 0;
	CUlaunchConfig cfg = {
	    .gridDimX = 16, .gridDimY = 1, .gridDimZ = 1, .blockDimX = 256, .blockDimY = 1, .blockDimZ = 1};
	CHECK(cuOccupancyMaxPotentialClusterSize(&size, iota, &cfg));
	EXPECT_R(size == 8 ? CUDA_SUCCESS : CUDA_ERROR_UNKNOWN, CUDA_SUCCESS);
	CHECK(cuFuncSetAttribute(iota, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1));
	CHECK(cuOccupancyMaxPotentialClusterSize(&size, iota, &cfg));
	EXPECT_R(size == 16 ? CUDA_SUCCESS : CUDA_ERROR_UNKNOWN, CUDA_SUCCESS);
	a[0].value.clusterDim.x = 16;
	a[0].value.clusterDim.y = a[0].value.clusterDim.z = 1;
	EXPECT_R(launch_iota(d, 600, N, s, a, 1), CUDA_SUCCESS);
	CHECK(cuStreamSynchronize(s));
	if (check_iota(d, 600, N)) {
		fprintf(stderr, "drvapi13: a non-portable cluster launch computed wrong values\n");
		failures++;
	}
	int clusters = 0;
	cfg.attrs = a;
	cfg.numAttrs = 1;
	CHECK(cuOccupancyMaxActiveClusters(&clusters, iota, &cfg));
	EXPECT_R(clusters > 0 ? CUDA_SUCCESS : CUDA_ERROR_UNKNOWN, CUDA_SUCCESS);
	a[0].value.clusterDim.x = 32;
	EXPECT_R(launch_iota(d, 0, N, s, a, 1), CUDA_ERROR_INVALID_CLUSTER_SIZE);
	a[1].value.clusterSchedulingPolicyPreference = (CUclusterSchedulingPolicy)3;
	EXPECT_R(launch_iota(d, 0, N, s, &a[1], 1), CUDA_ERROR_INVALID_VALUE);
	CHECK(cuFuncSetAttribute(iota, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 0));
}

static void launch_attributes(void)
{
	CUdeviceptr d;
	CUstream s;
	CUevent ev;
	CHECK(cuMemAlloc(&d, N * sizeof(int)));
	CHECK(cuStreamCreate(&s, 0));
	CHECK(cuEventCreate(&ev, 0));
	/* Each id of CUDA 13.0 with a valid value: served or taken as a hint,
	 * except where expected says refused. */
	for (int id = 0; id <= 18; id++) {
		CUlaunchAttribute a;
		memset(&a, 0, sizeof a);
		a.id = (CUlaunchAttributeID)id;
		CUresult want = CUDA_SUCCESS;
		bool event = false;
		switch (id) {
		case CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW:
			a.value.accessPolicyWindow.base_ptr = (void *)(uintptr_t)d;
			a.value.accessPolicyWindow.num_bytes = N;
			a.value.accessPolicyWindow.hitRatio = 0.5f;
			a.value.accessPolicyWindow.hitProp = CU_ACCESS_PROPERTY_PERSISTING;
			break;
		case CU_LAUNCH_ATTRIBUTE_COOPERATIVE:
			a.value.cooperative = 1;
			break;
		case CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY:
			a.value.syncPolicy = CU_SYNC_POLICY_BLOCKING_SYNC;
			break;
		case CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION:
		case CU_LAUNCH_ATTRIBUTE_PREFERRED_CLUSTER_DIMENSION:
			a.value.clusterDim.x = a.value.clusterDim.y = a.value.clusterDim.z = 1;
			break;
		case CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION:
			a.value.programmaticStreamSerializationAllowed = 1;
			break;
		case CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT:
			a.value.programmaticEvent.event = ev;
			a.value.programmaticEvent.triggerAtBlockStart = 1;
			event = true;
			break;
		case CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT:
			a.value.launchCompletionEvent.event = ev;
			event = true;
			break;
		case CU_LAUNCH_ATTRIBUTE_PRIORITY:
			a.value.priority = -1;
			break;
		case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN:
			a.value.memSyncDomain = CU_LAUNCH_MEM_SYNC_DOMAIN_REMOTE;
			break;
		case CU_LAUNCH_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
			a.value.sharedMemCarveout = 50;
			break;
		case CU_LAUNCH_ATTRIBUTE_NVLINK_UTIL_CENTRIC_SCHEDULING:
			a.value.nvlinkUtilCentricScheduling = 1;
			break;
		case 15:
		case 17:
		case 18:
			want = CUDA_ERROR_NOT_SUPPORTED; /* not ids CUDA 13.0 defines */
			break;
		default:
			break;
		}
		CHECK(cuMemsetD32(d, 0, N));
		EXPECT_R(launch_iota(d, id * 1000, N, s, &a, 1), want);
		if (want == CUDA_SUCCESS) {
			if (event) {
				CHECK(cuEventSynchronize(ev));
				EXPECT_R(cuEventQuery(ev), CUDA_SUCCESS);
			}
			CHECK(cuStreamSynchronize(s));
			if (check_iota(d, id * 1000, N)) {
				fprintf(stderr, "drvapi13: launch with attribute %d computed wrong values\n",
					id);
				failures++;
			}
		}
	}
	clusters(s, d);
	/* Refused by name, and bad values. */
	CUlaunchAttribute a[3];
	memset(a, 0, sizeof a);
	a[0].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
	a[0].value.clusterDim.x = 0;
	a[0].value.clusterDim.y = a[0].value.clusterDim.z = 1;
	EXPECT_R(launch_iota(d, 0, N, s, a, 1), CUDA_ERROR_INVALID_VALUE);
	a[0].id = CU_LAUNCH_ATTRIBUTE_DEVICE_UPDATABLE_KERNEL_NODE;
	memset(&a[0].value, 0, sizeof a[0].value);
	a[0].value.deviceUpdatableKernelNode.deviceUpdatable = 1;
	EXPECT_R(launch_iota(d, 0, N, s, a, 1), CUDA_ERROR_NOT_SUPPORTED);
	a[0].id = CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY;
	a[0].value.syncPolicy = (CUsynchronizationPolicy)0;
	EXPECT_R(launch_iota(d, 0, N, s, a, 1), CUDA_ERROR_INVALID_VALUE);
	a[0].id = CU_LAUNCH_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT;
	a[0].value.sharedMemCarveout = 101;
	EXPECT_R(launch_iota(d, 0, N, s, a, 1), CUDA_ERROR_INVALID_VALUE);
	a[0].id = CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT;
	memset(&a[0].value, 0, sizeof a[0].value);
	EXPECT_R(launch_iota(d, 0, N, s, a, 1), CUDA_ERROR_INVALID_HANDLE);
	a[0].value.launchCompletionEvent.event = ev;
	a[0].value.launchCompletionEvent.flags = CU_EVENT_RECORD_EXTERNAL;
	EXPECT_R(launch_iota(d, 0, N, s, a, 1), CUDA_ERROR_INVALID_VALUE);
	/* Several at once, as cuBLASLt and CUTLASS pass them. */
	memset(a, 0, sizeof a);
	a[0].id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
	a[0].value.programmaticStreamSerializationAllowed = 1;
	a[1].id = CU_LAUNCH_ATTRIBUTE_PRIORITY;
	a[1].value.priority = 0;
	a[2].id = CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT;
	a[2].value.launchCompletionEvent.event = ev;
	EXPECT_R(launch_iota(d, 42, N, s, a, 3), CUDA_SUCCESS);
	CHECK(cuEventSynchronize(ev));
	EXPECT(check_iota(d, 42, N) == 0);
	CHECK(cuEventDestroy(ev));
	CHECK(cuStreamDestroy(s));
	CHECK(cuMemFree(d));
}

/* ---- managed memory attachment ------------------------------------------------------ */

static void attach_mem(void)
{
	CUdeviceptr m, dev;
	CUstream s;
	size_t bytes = N * sizeof(int);
	CHECK(cuMemAllocManaged(&m, bytes, CU_MEM_ATTACH_GLOBAL));
	CHECK(cuMemAlloc(&dev, bytes));
	CHECK(cuStreamCreate(&s, 0));
	const unsigned flags[] = {CU_MEM_ATTACH_SINGLE, CU_MEM_ATTACH_HOST, CU_MEM_ATTACH_GLOBAL};
	for (int i = 0; i < 3; i++) {
		CHECK(cuStreamAttachMemAsync(s, m, i == 1 ? bytes : 0, flags[i]));
		CHECK(launch_iota(m, 100 * i, N, s, NULL, 0));
		CHECK(cuStreamSynchronize(s));
		const int *h = (const int *)(uintptr_t)m;
		int bad = 0;
		for (int k = 0; k < N; k++)
			bad += h[k] != 100 * i + k;
		EXPECT(bad == 0);
	}
	EXPECT_R(cuStreamAttachMemAsync(s, m, bytes / 2, CU_MEM_ATTACH_GLOBAL), CUDA_ERROR_INVALID_VALUE);
	EXPECT_R(cuStreamAttachMemAsync(s, m + 64, 0, CU_MEM_ATTACH_GLOBAL), CUDA_ERROR_INVALID_VALUE);
	EXPECT_R(cuStreamAttachMemAsync(s, dev, 0, CU_MEM_ATTACH_GLOBAL), CUDA_ERROR_INVALID_VALUE);
	EXPECT_R(cuStreamAttachMemAsync(s, m, 0, 0), CUDA_ERROR_INVALID_VALUE);
	EXPECT_R(cuStreamAttachMemAsync(s, m, 0, 3), CUDA_ERROR_INVALID_VALUE);
	EXPECT_R(cuStreamAttachMemAsync(NULL, m, 0, CU_MEM_ATTACH_SINGLE), CUDA_ERROR_INVALID_VALUE);
	CHECK(cuStreamDestroy(s));
	CHECK(cuMemFree(dev));
	CHECK(cuMemFree(m));
}

/* ---- graph host nodes ------------------------------------------------------------------- */

static int host_buf[N];
static int host_seen[16], host_calls;

/* Records what the copy before it brought back. */
static void host_node_fn(void *user)
{
	int slot = (int)(uintptr_t)user;
	if (host_calls < 16)
		host_seen[host_calls] = host_buf[10] + slot * 100000;
	host_calls++;
}

static void host_node_other(void *user)
{
	(void)user;
	host_calls += 1000;
}

static void graph_host_nodes(void)
{
	CUdeviceptr d, d2;
	CUstream s;
	CHECK(cuMemAlloc(&d, N * sizeof(int)));
	CHECK(cuMemAlloc(&d2, N * sizeof(int)));
	CHECK(cuStreamCreate(&s, 0));
	CUgraph g;
	CHECK(cuGraphCreate(&g, 0));
	/* A: kernel -> C: copy to host -> H1: reads it -> B: kernel, and H2
	 * on a branch of its own. */
	int base = 5, n = N;
	void *args[] = {&d, &base, &n};
	CUDA_KERNEL_NODE_PARAMS kp = {.func = iota,
				      .gridDimX = N / 256,
				      .gridDimY = 1,
				      .gridDimZ = 1,
				      .blockDimX = 256,
				      .blockDimY = 1,
				      .blockDimZ = 1,
				      .kernelParams = args};
	CUgraphNode a, c, h1, b, h2;
	CHECK(cuGraphAddKernelNode(&a, g, NULL, 0, &kp));
	CUDA_MEMCPY3D cp;
	memset(&cp, 0, sizeof cp);
	cp.srcMemoryType = CU_MEMORYTYPE_DEVICE;
	cp.srcDevice = d;
	cp.dstMemoryType = CU_MEMORYTYPE_HOST;
	cp.dstHost = host_buf;
	cp.WidthInBytes = sizeof host_buf;
	cp.Height = cp.Depth = 1;
	CUcontext ctx;
	CHECK(cuCtxGetCurrent(&ctx));
	CHECK(cuGraphAddMemcpyNode(&c, g, &a, 1, &cp, ctx));
	CUDA_HOST_NODE_PARAMS hp = {.fn = host_node_fn, .userData = (void *)(uintptr_t)0};
	CHECK(cuGraphAddHostNode(&h1, g, &c, 1, &hp));
	int base2 = 100;
	void *args2[] = {&d2, &base2, &n};
	kp.kernelParams = args2;
	CHECK(cuGraphAddKernelNode(&b, g, &h1, 1, &kp));
	hp.userData = (void *)(uintptr_t)1;
	CHECK(cuGraphAddHostNode(&h2, g, NULL, 0, &hp));
	CUDA_HOST_NODE_PARAMS got;
	CHECK(cuGraphHostNodeGetParams(h2, &got));
	EXPECT(got.fn == host_node_fn && got.userData == (void *)(uintptr_t)1);
	EXPECT_R(cuGraphAddHostNode(&h2, g, NULL, 0, &(CUDA_HOST_NODE_PARAMS){0}), CUDA_ERROR_INVALID_VALUE);

	CUgraphExec x;
	CHECK(cuGraphInstantiateWithFlags(&x, g, 0));
	for (int launch = 0; launch < 3; launch++) {
		memset(host_buf, 0, sizeof host_buf);
		CHECK(cuGraphLaunch(x, s));
		CHECK(cuStreamSynchronize(s));
	}
	EXPECT(host_calls == 6);
	int h1_seen = 0;
	for (int i = 0; i < 6; i++)
		h1_seen += host_seen[i] == 15; /* H1 saw C's copy of A's result */
	EXPECT(h1_seen == 3);
	EXPECT(check_iota(d2, 100, N) == 0);
	/* A new function for one host node of the instantiated graph. */
	hp.fn = host_node_other;
	CHECK(cuGraphExecHostNodeSetParams(x, h2, &hp));
	CHECK(cuGraphLaunch(x, s));
	CHECK(cuStreamSynchronize(s));
	EXPECT(host_calls == 6 + 1 + 1000);
	CHECK(cuGraphExecDestroy(x));

	/* Captured: a kernel, a copy back and a host function become a graph
	 * with a host node; a stream callback cannot be captured. */
	CUgraph cg;
	CUgraphExec cx;
	host_calls = 0;
	memset(host_seen, 0, sizeof host_seen);
	CHECK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
	CHECK(launch_iota(d, 5, N, s, NULL, 0));
	CHECK(cuMemcpyDtoHAsync(host_buf, d, sizeof host_buf, s));
	CHECK(cuLaunchHostFunc(s, host_node_fn, (void *)(uintptr_t)0));
	CHECK(cuStreamEndCapture(s, &cg));
	EXPECT(host_calls == 0); /* captured, not run */
	size_t nn = 0;
	CHECK(cuGraphGetNodes(cg, NULL, &nn));
	EXPECT(nn == 3);
	CHECK(cuGraphInstantiateWithFlags(&cx, cg, 0));
	for (int launch = 0; launch < 2; launch++) {
		memset(host_buf, 0, sizeof host_buf);
		CHECK(cuGraphLaunch(cx, s));
		CHECK(cuStreamSynchronize(s));
	}
	EXPECT(host_calls == 2 && host_seen[0] == 15 && host_seen[1] == 15);
	CHECK(cuGraphExecDestroy(cx));
	CHECK(cuGraphDestroy(cg));

	/* A host node inside a child graph is refused by name. */
	CUgraph outer;
	CUgraphNode child;
	CHECK(cuGraphCreate(&outer, 0));
	CHECK(cuGraphAddChildGraphNode(&child, outer, NULL, 0, g));
	EXPECT_R(cuGraphInstantiateWithFlags(&x, outer, 0), CUDA_ERROR_NOT_SUPPORTED);
	CHECK(cuGraphDestroy(outer));
	CHECK(cuGraphDestroy(g));
	CHECK(cuStreamDestroy(s));
	CHECK(cuMemFree(d2));
	CHECK(cuMemFree(d));
}

/* ---- graph memory nodes ---------------------------------------------------------------------- */

/* alloc -> kernel into it -> copy to the host -> free, launched twice; the
 * memory is charged while the graph holds it and given back with it. */
/* The generic cuGraphAddNode, as XLA's command buffers build graphs: a
 * memset, then two kernels joined by a programmatic edge (kept as a plain
 * one), a host node, instantiated with node priorities; the refusals of
 * nonzero reserved bytes, unknown edge data and conditional nodes. */
static void graph_generic_nodes(void)
{
	CUdeviceptr d;
	CUstream s;
	CHECK(cuMemAlloc(&d, N * sizeof(int)));
	CHECK(cuStreamCreate(&s, 0));
	CUcontext ctx;
	CHECK(cuCtxGetCurrent(&ctx));
	CUgraph g;
	CHECK(cuGraphCreate(&g, 0));
	CUgraphNodeParams p;
	memset(&p, 0, sizeof p);
	p.type = CU_GRAPH_NODE_TYPE_MEMSET;
	p.memset = (CUDA_MEMSET_NODE_PARAMS_v2){
	    .dst = d, .value = 0x01010101, .elementSize = 4, .width = N, .height = 1, .ctx = ctx};
	CUgraphNode m, k1, k2, h;
	CHECK(cuGraphAddNode(&m, g, NULL, NULL, 0, &p));
	int base = 9, n = N / 2, base2 = 1000;
	CUdeviceptr hi = d + (N / 2) * sizeof(int);
	void *args[] = {&d, &base, &n}, *args2[] = {&hi, &base2, &n};
	memset(&p, 0, sizeof p);
	p.type = CU_GRAPH_NODE_TYPE_KERNEL;
	p.kernel = (CUDA_KERNEL_NODE_PARAMS_v3){.func = iota,
						.gridDimX = N / 2 / 256,
						.gridDimY = 1,
						.gridDimZ = 1,
						.blockDimX = 256,
						.blockDimY = 1,
						.blockDimZ = 1,
						.kernelParams = args};
	CHECK(cuGraphAddNode(&k1, g, &m, NULL, 1, &p));
	p.kernel.kernelParams = args2;
	CUgraphEdgeData prog = {.from_port = CU_GRAPH_KERNEL_NODE_PORT_PROGRAMMATIC,
				.type = CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC};
	CHECK(cuGraphAddNode(&k2, g, &k1, &prog, 1, &p));
	memset(&p, 0, sizeof p);
	p.type = CU_GRAPH_NODE_TYPE_HOST;
	p.host.fn = host_node_other;
	p.host.userData = (void *)(uintptr_t)7;
	int calls = host_calls;
	CHECK(cuGraphAddNode(&h, g, &k2, NULL, 1, &p));
	CUgraphExec x;
	CHECK(cuGraphInstantiateWithFlags(&x, g, CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY));
	CHECK(cuGraphLaunch(x, s));
	CHECK(cuStreamSynchronize(s));
	if (check_iota(d, base, N / 2) || check_iota(hi, base2, N / 2)) {
		fprintf(stderr, "%s: a graph of generic nodes computed wrong results\n", DRV_PROGRAM);
		failures++;
	}
	if (host_calls != calls + 1000) {
		fprintf(stderr, "%s: a generic host node ran %d times\n", DRV_PROGRAM,
			(host_calls - calls) / 1000);
		failures++;
	}
	EXPECT_R(cuGraphInstantiateWithFlags(&x, g, CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH),
		 CUDA_ERROR_NOT_SUPPORTED);
	memset(&p, 0, sizeof p);
	p.type = CU_GRAPH_NODE_TYPE_EMPTY;
	p.reserved2 = 1;
	EXPECT_R(cuGraphAddNode(&h, g, NULL, NULL, 0, &p), CUDA_ERROR_INVALID_VALUE);
	p.reserved2 = 0;
	CUgraphEdgeData bad = {.to_port = 3};
	EXPECT_R(cuGraphAddNode(&h, g, &k2, &bad, 1, &p), CUDA_ERROR_INVALID_VALUE);
	p.type = CU_GRAPH_NODE_TYPE_CONDITIONAL; /* handle 0: none of g's */
	EXPECT_R(cuGraphAddNode(&h, g, NULL, NULL, 0, &p), CUDA_ERROR_INVALID_VALUE);
	p.type = CU_GRAPH_NODE_TYPE_BATCH_MEM_OP;
	EXPECT_R(cuGraphAddNode(&h, g, NULL, NULL, 0, &p), CUDA_ERROR_NOT_SUPPORTED);
	CHECK(cuGraphExecDestroy(x));
	CHECK(cuGraphDestroy(g));
	CHECK(cuStreamDestroy(s));
	CHECK(cuMemFree(d));
}

/* A conditional node of g on handle h, its bodies in body[]. */
static CUresult add_cond(CUgraph g, CUgraphConditionalHandle h, CUgraphConditionalNodeType type,
			 unsigned size, CUgraph *body)
{
	CUgraphNodeParams p;
	memset(&p, 0, sizeof p);
	p.type = CU_GRAPH_NODE_TYPE_CONDITIONAL;
	p.conditional.handle = h;
	p.conditional.type = type;
	p.conditional.size = size;
	CUgraphNode n;
	CUresult r = cuGraphAddNode(&n, g, NULL, NULL, 0, &p);
	for (unsigned i = 0; !r && i < size; i++)
		body[i] = p.conditional.phGraph_out[i];
	return r;
}

static void set_byte(CUgraph g, CUdeviceptr at, unsigned char v)
{
	CUDA_MEMSET_NODE_PARAMS m = {.dst = at, .value = v, .elementSize = 1, .width = 1, .height = 1};
	CUgraphNode n;
	CHECK(cuGraphAddMemsetNode(&n, g, NULL, 0, &m, NULL));
}

/* Conditional nodes through the driver API, decided by their handles'
 * defaults (graphs_cond.cu has kernels set them): an if node at 1 runs its
 * body (one node added, one captured into it), a switch at 2 its third
 * body, an if/else at 0 its else, a while at 0 nothing. */
static void graph_conditionals(void)
{
	CUdeviceptr d;
	CUstream s;
	CHECK(cuMemAlloc(&d, 8));
	CHECK(cuStreamCreate(&s, 0));
	CUgraph g, ifb[1], swb[3], ieb[2], wb[1];
	CUgraphConditionalHandle h1, h2, h0, hw;
	CHECK(cuGraphCreate(&g, 0));
	CHECK(cuGraphConditionalHandleCreate(&h1, g, NULL, 1, CU_GRAPH_COND_ASSIGN_DEFAULT));
	CHECK(cuGraphConditionalHandleCreate(&h2, g, NULL, 2, CU_GRAPH_COND_ASSIGN_DEFAULT));
	CHECK(cuGraphConditionalHandleCreate(&h0, g, NULL, 0, 0));
	CHECK(cuGraphConditionalHandleCreate(&hw, g, NULL, 0, CU_GRAPH_COND_ASSIGN_DEFAULT));
	EXPECT_R(cuGraphConditionalHandleCreate(&hw, g, NULL, 0, 2), CUDA_ERROR_INVALID_VALUE);
	CHECK(add_cond(g, h1, CU_GRAPH_COND_TYPE_IF, 1, ifb));
	CHECK(add_cond(g, h2, CU_GRAPH_COND_TYPE_SWITCH, 3, swb));
	CHECK(add_cond(g, h0, CU_GRAPH_COND_TYPE_IF, 2, ieb));
	CHECK(add_cond(g, hw, CU_GRAPH_COND_TYPE_WHILE, 1, wb));
	EXPECT_R(add_cond(g, h1, CU_GRAPH_COND_TYPE_IF, 3, ifb), CUDA_ERROR_INVALID_VALUE);
	set_byte(ifb[0], d, 0x11);
	for (int i = 0; i < 3; i++)
		set_byte(swb[i], d + 1 + i, (unsigned char)(0x20 + i));
	set_byte(ieb[0], d + 4, 0x41);
	set_byte(ieb[1], d + 5, 0x42);
	set_byte(wb[0], d + 7, 0x77);
	CHECK(cuStreamBeginCaptureToGraph(s, ifb[0], NULL, NULL, 0, CU_STREAM_CAPTURE_MODE_GLOBAL));
	CHECK(cuMemsetD8Async(d + 6, 0x66, 1, s));
	CHECK(cuStreamEndCapture(s, NULL));
	size_t nodes = 0;
	CHECK(cuGraphGetNodes(ifb[0], NULL, &nodes));
	EXPECT(nodes == 2);
	EXPECT_R(cuGraphDestroy(ifb[0]), CUDA_ERROR_INVALID_VALUE); /* it goes with its node */
	CUgraphExec x;
	CHECK(cuGraphInstantiateWithFlags(&x, g, 0));
	CHECK(cuMemsetD8(d, 0, 8));
	CHECK(cuGraphLaunch(x, s));
	CHECK(cuStreamSynchronize(s));
	unsigned char got[8], want[8] = {0x11, 0, 0, 0x22, 0, 0x42, 0x66, 0};
	CHECK(cuMemcpyDtoH(got, d, sizeof got));
	EXPECT(!memcmp(got, want, sizeof got));
	CHECK(cuGraphExecDestroy(x));
	CHECK(cuGraphDestroy(g));
	CHECK(cuStreamDestroy(s));
	CHECK(cuMemFree(d));
}

static void graph_mem_nodes(CUdevice dev)
{
	size_t free0, free1, total;
	CHECK(cuMemGetInfo(&free0, &total));
	CUgraph g;
	CHECK(cuGraphCreate(&g, 0));
	CUDA_MEM_ALLOC_NODE_PARAMS ap;
	memset(&ap, 0, sizeof ap);
	ap.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
	ap.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	ap.poolProps.location.id = dev;
	ap.bytesize = N * sizeof(int);
	CUgraphNode al, k, c, fr;
	CHECK(cuGraphAddMemAllocNode(&al, g, NULL, 0, &ap));
	EXPECT(ap.dptr != 0);
	CUDA_MEM_ALLOC_NODE_PARAMS got;
	CHECK(cuGraphMemAllocNodeGetParams(al, &got));
	EXPECT(got.dptr == ap.dptr && got.bytesize == ap.bytesize);
	CHECK(cuMemGetInfo(&free1, &total));
	EXPECT(free0 - free1 >= ap.bytesize);
	CUdeviceptr d = ap.dptr;
	int base = 300, n = N;
	void *args[] = {&d, &base, &n};
	CUDA_KERNEL_NODE_PARAMS kp = {.func = iota,
				      .gridDimX = N / 256,
				      .gridDimY = 1,
				      .gridDimZ = 1,
				      .blockDimX = 256,
				      .blockDimY = 1,
				      .blockDimZ = 1,
				      .kernelParams = args};
	CHECK(cuGraphAddKernelNode(&k, g, &al, 1, &kp));
	CUDA_MEMCPY3D cp;
	memset(&cp, 0, sizeof cp);
	cp.srcMemoryType = CU_MEMORYTYPE_DEVICE;
	cp.srcDevice = d;
	cp.dstMemoryType = CU_MEMORYTYPE_HOST;
	cp.dstHost = host_buf;
	cp.WidthInBytes = sizeof host_buf;
	cp.Height = cp.Depth = 1;
	CUcontext ctx;
	CHECK(cuCtxGetCurrent(&ctx));
	CHECK(cuGraphAddMemcpyNode(&c, g, &k, 1, &cp, ctx));
	CHECK(cuGraphAddMemFreeNode(&fr, g, &c, 1, d));
	CUdeviceptr fp = 0;
	CHECK(cuGraphMemFreeNodeGetParams(fr, &fp));
	EXPECT(fp == d);
	EXPECT_R(cuGraphAddMemFreeNode(&fr, g, NULL, 0, 0x1234), CUDA_ERROR_INVALID_VALUE);
	ap.poolProps.location.type = CU_MEM_LOCATION_TYPE_HOST;
	EXPECT_R(cuGraphAddMemAllocNode(&al, g, NULL, 0, &ap), CUDA_ERROR_INVALID_VALUE);
	CUgraphExec x;
	CHECK(cuGraphInstantiateWithFlags(&x, g, 0));
	CHECK(cuGraphDestroy(g)); /* the instantiated graph still holds the memory */
	for (int launch = 0; launch < 2; launch++) {
		memset(host_buf, 0, sizeof host_buf);
		CHECK(cuGraphLaunch(x, NULL));
		CHECK(cuCtxSynchronize());
		int bad = 0;
		for (int i = 0; i < N; i++)
			bad += host_buf[i] != 300 + i;
		EXPECT(bad == 0);
	}
	CHECK(cuGraphExecDestroy(x));
	CHECK(cuMemGetInfo(&free1, &total));
	EXPECT(free1 == free0);
}

/* ---- IPC between processes of one domain --------------------------------------------------- */

/* The child: another process of the same domain opens the parent's
 * allocation, sees its data, overwrites it, and loses it at close. */
/* The child's side of an event handle: it opens the parent's event twice
 * (two handles for one event), records it after its own work, and destroys
 * one of its handles, which must leave the other (and the parent's) working.
 * A handle with a forged token or naming a non-interprocess event opens
 * nothing. */
static int ipc_event_child(CUipcEventHandle eh, CUipcEventHandle plain, CUdeviceptr p)
{
	CUevent e1, e2, x;
	CHECK(cuIpcOpenEventHandle(&e1, eh));
	CHECK(cuIpcOpenEventHandle(&e2, eh));
	EXPECT(e1 != e2);
	CUstream s;
	CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	CHECK(cuMemsetD32Async(p, 55, N, s));
	CHECK(cuEventRecord(e1, s));
	CHECK(cuStreamWaitEvent(NULL, e2, 0));
	CHECK(cuEventDestroy(e1));
	CHECK(cuEventSynchronize(e2));
	EXPECT_R(cuEventQuery(e2), CUDA_SUCCESS);
	int got[N], bad = 0;
	CHECK(cuMemcpyDtoH(got, p, sizeof got));
	for (int i = 0; i < N; i++)
		bad += got[i] != 55;
	EXPECT(bad == 0);
	CUipcEventHandle forged = eh;
	forged.reserved[16] ^= 1; /* the token */
	EXPECT_R(cuIpcOpenEventHandle(&x, forged), CUDA_ERROR_INVALID_VALUE);
	forged = eh;
	forged.reserved[8] ^= 1; /* the handle: another slot of the table */
	EXPECT_R(cuIpcOpenEventHandle(&x, forged), CUDA_ERROR_INVALID_VALUE);
	EXPECT_R(cuIpcOpenEventHandle(&x, plain), CUDA_ERROR_INVALID_VALUE);
	CHECK(cuStreamDestroy(s));
	return failures; /* e2 goes with the process */
}

static int ipc_child(CUdevice dev, CUipcMemHandle h, CUipcMemHandle freed, CUdeviceptr want,
		     CUipcEventHandle eh, CUipcEventHandle plain)
{
	CUcontext cc;
	CHECK(cuInit(0));
	CHECK(cuDevicePrimaryCtxRetain(&cc, dev));
	CHECK(cuCtxSetCurrent(cc));
	CUdeviceptr p = 0, q = 0;
	CHECK(cuIpcOpenMemHandle(&p, h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS));
	EXPECT(p == want);
	EXPECT(check_iota(p, 21, N) == 0);
	CHECK(cuMemsetD32(p, 77, N));
	CHECK(cuCtxSynchronize());
	EXPECT_R(cuMemFree(p), CUDA_ERROR_INVALID_VALUE); /* not the opener's to free */
	CHECK(cuIpcCloseMemHandle(p));
	EXPECT(cuMemsetD32(p, 1, N) != CUDA_SUCCESS); /* gone from this process */
	EXPECT_R(cuIpcCloseMemHandle(p), CUDA_ERROR_INVALID_VALUE);
	EXPECT_R(cuIpcOpenMemHandle(&q, freed, 0), CUDA_ERROR_INVALID_VALUE); /* freed before */
	CUipcMemHandle forged = h;
	forged.reserved[16] ^= 1; /* the token */
	EXPECT_R(cuIpcOpenMemHandle(&q, forged, 0), CUDA_ERROR_INVALID_VALUE);
	CUdeviceptr e;
	CHECK(cuMemAlloc(&e, N * sizeof(int)));
	ipc_event_child(eh, plain, e);
	CHECK(cuMemFree(e));
	return failures;
}

static void ipc(CUdevice dev)
{
	CUdeviceptr d, d2;
	CHECK(cuMemAlloc(&d, N * sizeof(int)));
	CHECK(cuMemAlloc(&d2, N * sizeof(int)));
	CHECK(launch_iota(d, 21, N, NULL, NULL, 0));
	CHECK(cuCtxSynchronize());
	CUipcMemHandle h, h2, again;
	CHECK(cuIpcGetMemHandle(&h, d));
	CHECK(cuIpcGetMemHandle(&again, d + 64)); /* inside it: the same allocation */
	EXPECT(!memcmp(&h, &again, sizeof h));
	CHECK(cuIpcGetMemHandle(&h2, d2));
	CHECK(cuMemFree(d2));
	CUdeviceptr p;
	EXPECT_R(cuIpcOpenMemHandle(&p, h, 0), CUDA_ERROR_INVALID_VALUE); /* one's own */
	CUipcMemHandle junk;
	memset(&junk, 0, sizeof junk);
	EXPECT_R(cuIpcOpenMemHandle(&p, junk, 0), CUDA_ERROR_INVALID_VALUE);
	/* Event handles: only an interprocess event (which keeps no time) is
	 * exported. */
	CUevent ev, plain_ev, bad_ev;
	CUipcEventHandle eh, plain;
	EXPECT_R(cuEventCreate(&bad_ev, CU_EVENT_INTERPROCESS), CUDA_ERROR_INVALID_VALUE);
	CHECK(cuEventCreate(&ev, CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING));
	CHECK(cuEventCreate(&plain_ev, CU_EVENT_DISABLE_TIMING));
	CHECK(cuIpcGetEventHandle(&eh, ev));
	EXPECT_R(cuIpcGetEventHandle(&plain, plain_ev), CUDA_ERROR_INVALID_HANDLE);
	memset(&plain, 0, sizeof plain);
	memcpy(plain.reserved, eh.reserved, sizeof plain.reserved);
	memcpy(plain.reserved + 8, &plain_ev, sizeof plain_ev); /* a real event, never exported */
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0)
		_exit(ipc_child(dev, h, h2, d, eh, plain) ? 1 : 0);
	int st = 0;
	EXPECT(pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
	/* The child's handles went with it, the event stays the parent's. */
	CHECK(cuEventRecord(ev, NULL));
	CHECK(cuEventSynchronize(ev));
	EXPECT_R(cuEventQuery(ev), CUDA_SUCCESS);
	CHECK(cuEventDestroy(ev));
	CHECK(cuEventDestroy(plain_ev));
	int *got = malloc(N * sizeof *got);
	CHECK(cuMemcpyDtoH(got, d, N * sizeof *got));
	int bad = 0;
	for (int i = 0; i < N; i++)
		bad += got[i] != 77;
	EXPECT(bad == 0); /* the child's memset landed in the parent's memory */
	free(got);
	CHECK(cuMemFree(d));
}

/* ---- a __managed__ variable through cuModuleGetGlobal ---------------------------------------- */

/* As libNVVM's uvmlite sample has it: a PTX module's managed variable, which
 * the host reads and writes through its host pointer around a kernel that
 * adds to it. */
static const char managed_ptx[] = ".version 8.0\n.target sm_90\n.address_size 64\n"
				  ".global .attribute(.managed) .align 4 .u32 mvar = 10;\n"
				  ".visible .entry add_managed(.param .u32 add_managed_param_0)\n{\n"
				  "\t.reg .b32 %r<4>;\n"
				  "\tld.param.u32 %r1, [add_managed_param_0];\n"
				  "\tld.global.u32 %r2, [mvar];\n"
				  "\tadd.s32 %r3, %r2, %r1;\n"
				  "\tst.global.u32 [mvar], %r3;\n"
				  "\tret;\n}\n";

static void managed_module_var(void)
{
	CUmodule mod;
	CUfunction fn;
	CHECK(cuModuleLoadData(&mod, managed_ptx));
	CHECK(cuModuleGetFunction(&fn, mod, "add_managed"));
	CUdeviceptr d = 0;
	size_t size = 0;
	CHECK(cuModuleGetGlobal(&d, &size, mod, "mvar"));
	EXPECT(size == sizeof(unsigned));
	unsigned managed = 0;
	CHECK(cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, d));
	EXPECT(managed == 1);
	unsigned *p = NULL;
	CHECK(cuPointerGetAttribute(&p, CU_POINTER_ATTRIBUTE_HOST_POINTER, d));
	if (!p) {
		EXPECT(p != NULL);
		return;
	}
	EXPECT(*p == 10); /* the module's initial value */
	*p += 1;
	unsigned add = 20;
	void *args[] = {&add};
	CHECK(cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL));
	CHECK(cuCtxSynchronize());
	EXPECT(*p == 31); /* the host's write reached the kernel, and its result came back */
	CUdeviceptr again = 0;
	CHECK(cuModuleGetGlobal(&again, NULL, mod, "mvar"));
	EXPECT(again == d);
	CHECK(cuModuleUnload(mod));
}

/* ---- cuDevicePrimaryCtxReset ---------------------------------------------------------------- */

/* The reset takes the process's allocations, streams and events with it (their
 * handles are refused after) and gives its memory back; a module loaded before
 * works after (loaded again on use) and computes. Refused, by name, while a
 * context of cuCtxCreate's lives. */
static void primary_reset(CUdevice dev, CUcontext primary)
{
	CUcontext made;
	CHECK(cuCtxCreate(&made, NULL, 0, dev));
	EXPECT_R(cuDevicePrimaryCtxReset(dev), CUDA_ERROR_NOT_SUPPORTED);
	CHECK(cuCtxDestroy(made));
	CHECK(cuCtxSetCurrent(primary));
	size_t free0, free1, total;
	CHECK(cuMemGetInfo(&free0, &total));
	CUdeviceptr d, after;
	CUstream s;
	CUevent e;
	CHECK(cuMemAlloc(&d, 1 << 20));
	CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	CHECK(cuEventCreate(&e, CU_EVENT_DISABLE_TIMING));
	CHECK(launch_iota(d, 5, N, s, NULL, 0));
	CHECK(cuDevicePrimaryCtxReset(dev));
	CHECK(cuMemGetInfo(&free1, &total));
	EXPECT(free1 == free0 + (1 << 20) || free1 > free0); /* the allocation went with it */
	EXPECT(cuStreamSynchronize(s) != CUDA_SUCCESS);
	EXPECT(cuEventRecord(e, NULL) != CUDA_SUCCESS);
	EXPECT_R(cuMemFree(d), CUDA_ERROR_INVALID_VALUE);
	CHECK(cuCtxSetCurrent(primary));
	CHECK(cuMemAlloc(&after, N * sizeof(int)));
	CHECK(launch_iota(after, 9, N, NULL, NULL, 0));
	EXPECT(check_iota(after, 9, N) == 0);
	CHECK(cuMemFree(after));
}

/* ---- the JIT linker ------------------------------------------------------------------------ */

/* Loads a linked image and runs its drv_iota. */
static void run_linked(const void *image, const char *also)
{
	CUmodule mod;
	CUfunction f, saved = iota;
	CHECK(cuModuleLoadData(&mod, image));
	CHECK(cuModuleGetFunction(&iota, mod, "drv_iota"));
	if (also)
		EXPECT_R(cuModuleGetFunction(&f, mod, also), CUDA_SUCCESS);
	CUdeviceptr d;
	CHECK(cuMemAlloc(&d, N * sizeof(int)));
	CHECK(launch_iota(d, 11, N, NULL, NULL, 0));
	EXPECT(check_iota(d, 11, N) == 0);
	CHECK(cuMemFree(d));
	CHECK(cuModuleUnload(mod));
	iota = saved;
}

static void jit_link(const char *fatbin_path, const void *fatbin, size_t fatbin_size, const char *rdc_cubin,
		     const char *ptx)
{
	char err[1024] = "", info[256] = "";
	CUjit_option opts[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
			       CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
			       CU_JIT_OPTIMIZATION_LEVEL};
	void *vals[] = {err, (void *)(uintptr_t)sizeof err, info, (void *)(uintptr_t)sizeof info,
			(void *)(uintptr_t)3};
	/* One image, as data and as a file: it is the result. */
	for (int how = 0; how < 2; how++) {
		CUlinkState ls;
		void *out;
		size_t size;
		CHECK(cuLinkCreate(5, opts, vals, &ls));
		if (how)
			CHECK(cuLinkAddFile(ls, CU_JIT_INPUT_FATBINARY, fatbin_path, 0, NULL, NULL));
		else
			CHECK(cuLinkAddData(ls, CU_JIT_INPUT_FATBINARY, (void *)fatbin, fatbin_size, "k", 0,
					    NULL, NULL));
		CHECK(cuLinkComplete(ls, &out, &size));
		EXPECT(size == fatbin_size && !memcmp(out, fatbin, size));
		run_linked(out, NULL);
		CHECK(cuLinkDestroy(ls));
	}
	/* Two inputs, one calling the other: a real link (nvJitLink). */
	CUlinkState ls;
	void *out;
	size_t size;
	CHECK(cuLinkCreate(5, opts, vals, &ls));
	CHECK(cuLinkAddFile(ls, CU_JIT_INPUT_CUBIN, rdc_cubin, 0, NULL, NULL));
	char *text = read_file(ptx);
	CHECK(cuLinkAddData(ls, CU_JIT_INPUT_PTX, text, strlen(text) + 1, "link_extra.ptx", 0, NULL, NULL));
	free(text);
	CUresult r = cuLinkComplete(ls, &out, &size);
	if (r != CUDA_SUCCESS) {
		fprintf(stderr, "drvapi13: cuLinkComplete returned %d: %s\n", (int)r, err);
		failures++;
	} else {
		EXPECT(size > 64 && !memcmp(out, "\177ELF", 4));
		run_linked(out, "link_twice");
	}
	CHECK(cuLinkDestroy(ls));
	/* Errors. */
	EXPECT_R(cuLinkCreate(1, NULL, NULL, &ls), CUDA_ERROR_INVALID_VALUE);
	CHECK(cuLinkCreate(0, NULL, NULL, &ls));
	EXPECT_R(cuLinkComplete(ls, &out, &size), CUDA_ERROR_INVALID_VALUE); /* nothing added */
	EXPECT_R(cuLinkAddData(ls, (CUjitInputType)9, (void *)fatbin, fatbin_size, NULL, 0, NULL, NULL),
		 CUDA_ERROR_INVALID_VALUE);
	EXPECT_R(cuLinkAddFile(ls, CU_JIT_INPUT_CUBIN, "/nonexistent/x.cubin", 0, NULL, NULL),
		 CUDA_ERROR_FILE_NOT_FOUND);
	CHECK(cuLinkDestroy(ls));
	EXPECT_R(cuLinkDestroy(NULL), CUDA_ERROR_INVALID_HANDLE);
}

/* ---- virtual memory management -------------------------------------------------------- */

static CUmemAllocationProp device_prop(CUdevice dev)
{
	CUmemAllocationProp p;
	memset(&p, 0, sizeof p);
	p.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	p.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	p.location.id = dev;
	p.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR; /* as NCCL asks */
	return p;
}

static void set_rw(CUdeviceptr p, size_t size, CUdevice dev)
{
	CUmemAccessDesc a = {.location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = dev},
			     .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
	CHECK(cuMemSetAccess(p, size, &a, 1));
}

static void vmm(CUdevice dev)
{
	CUmemAllocationProp prop = device_prop(dev);
	size_t g = 0, rec = 0;
	CHECK(cuMemGetAllocationGranularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
	CHECK(cuMemGetAllocationGranularity(&rec, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED));
	EXPECT(g && rec >= g && (g & (g - 1)) == 0);
	EXPECT_R(cuMemGetAllocationGranularity(&g, &prop, (CUmemAllocationGranularity_flags)2),
		 CUDA_ERROR_INVALID_VALUE);
	CUmemAllocationProp bad = prop;
	bad.location.type = CU_MEM_LOCATION_TYPE_HOST;
	EXPECT_R(cuMemGetAllocationGranularity(&rec, &bad, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
		 CUDA_ERROR_NOT_SUPPORTED);
	bad = prop;
	bad.location.id = 99;
	EXPECT_R(cuMemGetAllocationGranularity(&rec, &bad, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
		 CUDA_ERROR_INVALID_DEVICE);

	size_t free0, free1, total;
	CHECK(cuMemGetInfo(&free0, &total));

	/* Two physical allocations mapped side by side in one reservation, the
	 * first again in a second one: in both orders of release and unmap. */
	for (int order = 0; order < 2; order++) {
		CUmemGenericAllocationHandle h1, h2, r;
		CHECK(cuMemCreate(&h1, g, &prop, 0));
		CHECK(cuMemCreate(&h2, 2 * g, &prop, 0));
		CHECK(cuMemGetInfo(&free1, &total));
		EXPECT(free0 - free1 >= 3 * g);
		CUmemAllocationProp got;
		CHECK(cuMemGetAllocationPropertiesFromHandle(&got, h2));
		EXPECT(got.type == CU_MEM_ALLOCATION_TYPE_PINNED && got.location.id == dev);

		CUdeviceptr va, va2;
		CHECK(cuMemAddressReserve(&va, 4 * g, 0, 0, 0));
		CHECK(cuMemAddressReserve(&va2, g, g, 0, 0));
		EXPECT(va % g == 0 && va2 % g == 0);
		CHECK(cuMemMap(va, g, 0, h1, 0));
		CHECK(cuMemMap(va + g, 2 * g, 0, h2, 0));
		CHECK(cuMemMap(va2, g, 0, h1, 0));
		EXPECT_R(cuMemMap(va + g, g, 0, h1, 0), CUDA_ERROR_INVALID_VALUE); /* already mapped */
		EXPECT_R(cuMemMap(va + 3 * g, 2 * g, 0, h2, 0), CUDA_ERROR_INVALID_VALUE); /* past its end */

		/* Not usable before cuMemSetAccess: the daemon refuses the copy. */
		int probe = 1;
		EXPECT(cuMemcpyHtoD(va2, &probe, sizeof probe) != CUDA_SUCCESS);
		set_rw(va, 3 * g, dev);
		set_rw(va2, g, dev);
		unsigned long long acc = 0;
		CUmemLocation loc = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = dev};
		CHECK(cuMemGetAccess(&acc, &loc, va + g + 4));
		EXPECT(acc == CU_MEM_ACCESS_FLAGS_PROT_READWRITE);

		/* A kernel writes through one mapping, and the same physical
		 * memory reads the same through the other. */
		int n = (int)(g / sizeof(int));
		CHECK(launch_iota(va, 5 + order, n, NULL, NULL, 0));
		CHECK(launch_iota(va + g, 9, 2 * n, NULL, NULL, 0));
		CHECK(cuCtxSynchronize());
		EXPECT(check_iota(va, 5 + order, n) == 0);
		EXPECT(check_iota(va2, 5 + order, n) == 0);
		EXPECT(check_iota(va + g, 9, 2 * n) == 0);
		CHECK(cuMemsetD32(va2, 0, 16));
		int first = -1;
		CHECK(cuMemcpyDtoH(&first, va, sizeof first));
		EXPECT(first == 0);

		CUdeviceptr base = 0;
		size_t size = 0;
		CHECK(cuMemGetAddressRange(&base, &size, va + g + 100));
		EXPECT(base == va + g && size == 2 * g);
		CHECK(cuMemRetainAllocationHandle(&r, (void *)(uintptr_t)(va + g + 8)));
		EXPECT(r == h2);
		CHECK(cuMemRelease(r));

		/* Refused by name. */
		int fd = -1;
		EXPECT_R(cuMemExportToShareableHandle(&fd, h1, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
			 CUDA_ERROR_NOT_SUPPORTED);
		CUmemAccessDesc ro = {.location = loc, .flags = CU_MEM_ACCESS_FLAGS_PROT_READ};
		EXPECT_R(cuMemSetAccess(va2, g, &ro, 1), CUDA_ERROR_NOT_SUPPORTED);
		/* An unmap must not cut a mapping; cuMemFree is not for mappings. */
		EXPECT_R(cuMemUnmap(va + g, g), CUDA_ERROR_INVALID_VALUE);
		EXPECT(cuMemFree(va) != CUDA_SUCCESS);

		if (order == 0) {
			CHECK(cuMemRelease(h1));
			CHECK(cuMemRelease(h2));
			/* Released but still mapped: still there. */
			EXPECT(check_iota(va + g, 9, 2 * n) == 0);
			CHECK(cuMemUnmap(va, 3 * g)); /* both mappings at once */
			CHECK(cuMemUnmap(va2, g));
		} else {
			CHECK(cuMemUnmap(va, g));
			CHECK(cuMemUnmap(va + g, 2 * g));
			CHECK(cuMemUnmap(va2, g));
			CHECK(cuMemRelease(h1));
			CHECK(cuMemRelease(h2));
		}
		EXPECT_R(cuMemRelease(h1), CUDA_ERROR_INVALID_VALUE);
		CHECK(cuMemAddressFree(va, 4 * g));
		CHECK(cuMemAddressFree(va2, g));
		EXPECT_R(cuMemAddressFree(va2, g), CUDA_ERROR_INVALID_VALUE);
	}
	CHECK(cuMemGetInfo(&free1, &total));
	EXPECT(free1 == free0);

	/* Sizes that are not a multiple of the granularity. */
	CUmemGenericAllocationHandle h;
	CUdeviceptr va;
	EXPECT_R(cuMemCreate(&h, g + 1, &prop, 0), CUDA_ERROR_INVALID_VALUE);
	EXPECT_R(cuMemAddressReserve(&va, g / 2, 0, 0, 0), CUDA_ERROR_INVALID_VALUE);

	/* Left mapped at exit: the daemon releases it with the process. */
	CHECK(cuMemCreate(&h, g, &prop, 0));
	CHECK(cuMemAddressReserve(&va, g, 0, 0, 0));
	CHECK(cuMemMap(va, g, 0, h, 0));
	set_rw(va, g, dev);
}

/* cuMemCreate counts against the domain's memory limit. */
static void vmm_limit(CUdevice dev, size_t limit)
{
	CUmemAllocationProp prop = device_prop(dev);
	size_t g;
	CHECK(cuMemGetAllocationGranularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
	size_t over = (limit / g + 1) * g;
	CUmemGenericAllocationHandle h, h2;
	EXPECT_R(cuMemCreate(&h, over, &prop, 0), CUDA_ERROR_OUT_OF_MEMORY);
	size_t half = (limit / 2 / g) * g;
	CHECK(cuMemCreate(&h, half, &prop, 0));
	CHECK(cuMemCreate(&h2, half, &prop, 0));
	CUdeviceptr d;
	EXPECT_R(cuMemAlloc(&d, limit - 2 * half + g), CUDA_ERROR_OUT_OF_MEMORY);
	CHECK(cuMemRelease(h2));
	CHECK(cuMemAlloc(&d, g));
	CHECK(cuMemFree(d));
	CHECK(cuMemRelease(h));
}

int main(int argc, char **argv)
{
	if (argc != 2 && argc != 4 && !(argc == 3 && !strcmp(argv[2], "load"))) {
		fprintf(stderr, "usage: %s FATBIN [RDC_CUBIN PTX | limit BYTES | load]\n", argv[0]);
		return 2;
	}
	CUdevice dev;
	CUcontext ctx;
	CUmodule mod;
	CHECK(cuInit(0));
	CHECK(cuDeviceGet(&dev, 0));
	if (argc == 4 && !strcmp(argv[2], "limit")) {
		CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
		CHECK(cuCtxSetCurrent(ctx));
		vmm_limit(dev, strtoull(argv[3], NULL, 0));
		printf("drvapi13: limit %s\n", failures ? "FAILED" : "OK");
		return failures ? 1 : 0;
	}
	void *image = read_file(argv[1]);
	CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
	CHECK(cuCtxSetCurrent(ctx));
	CHECK(cuModuleLoadData(&mod, image));
	CHECK(cuModuleGetFunction(&iota, mod, "drv_iota"));
	if (argc == 3) {
		CUdeviceptr d;
		CHECK(cuMemAlloc(&d, N * sizeof(int)));
		CHECK(launch_iota(d, 3, N, NULL, NULL, 0));
		EXPECT(check_iota(d, 3, N) == 0);
		CHECK(cuMemFree(d));
		CHECK(cuModuleUnload(mod));
		free(image);
		printf("drvapi13: load %s\n", failures ? "FAILED" : "OK");
		return failures ? 1 : 0;
	}
	contexts(dev, ctx);
	launch_attributes();
	graph_host_nodes();
	graph_generic_nodes();
	graph_conditionals();
	graph_mem_nodes(dev);
	ipc(dev);
	managed_module_var();
	if (argc == 4 && strcmp(argv[2], "limit")) {
		FILE *f = fopen(argv[1], "rb");
		fseek(f, 0, SEEK_END);
		size_t fsize = (size_t)ftell(f);
		fclose(f);
		jit_link(argv[1], image, fsize, argv[2], argv[3]);
	}
	attach_mem();
	primary_reset(dev, ctx); /* before vmm(), whose reservation the exit must release */
	vmm(dev);
	CHECK(cuModuleUnload(mod));
	free(image);
	if (failures) {
		printf("drvapi13: %d FAILED\n", failures);
		return 1;
	}
	printf("drvapi13: OK\n");
	return 0;
}
