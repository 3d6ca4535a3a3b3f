/* SPDX-License-Identifier: Apache-2.0 */
// rt13.cu - the runtime API forms of what tests/cuda/drvapi13.c checks in the
// driver API: cudaLaunchKernelEx's attributes, cudaStreamAttachMemAsync,
// graph host nodes and IPC memory handles. Built with xgpu's runtime
// (-cudart shared) it exercises frontend/runtime/; built with NVIDIA's
// static runtime, the driver entry points that runtime calls. Prints
// "RESULT workload=rt13 verified=yes" when every result is right.
#include <cstdio>
#include <cstring>

#define N 4096

extern "C" __global__ void rt13_iota(int *out, int base, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		out[i] = base + i;
}

// The same with a compile-time cluster shape: launched in pairs of blocks.
extern "C" __global__ void __cluster_dims__(2, 1, 1) rt13_iota_cluster(int *out, int base, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		out[i] = base + i;
}

static int failures;

#define EXPECT_E(call, want)                                                                                 \
	do {                                                                                                 \
		cudaError_t got_ = (call);                                                                   \
		if (got_ != (want)) {                                                                        \
			printf("FAIL line %d: %s returned %s, expected %s\n", __LINE__, #call,               \
			       cudaGetErrorName(got_), cudaGetErrorName(want));                              \
			failures++;                                                                          \
		}                                                                                            \
		cudaGetLastError();                                                                          \
	} while (0)

static int bad_iota(const int *h, int base, int n)
{
	int bad = 0;
	for (int i = 0; i < n; i++)
		bad += h[i] != base + i;
	return bad;
}

static int check_dev(const int *d, int base)
{
	static int h[N];
	if (cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost) != cudaSuccess)
		return 1;
	return bad_iota(h, base, N);
}

static cudaError_t launch(int *d, int base, cudaStream_t s, cudaLaunchAttribute *attrs, unsigned n)
{
	cudaLaunchConfig_t cfg = {};
	cfg.gridDim = dim3(N / 256);
	cfg.blockDim = dim3(256);
	cfg.stream = s;
	cfg.attrs = attrs;
	cfg.numAttrs = n;
	int count = N;
	return cudaLaunchKernelEx(&cfg, rt13_iota, d, base, count);
}

static int host_calls, host_seen;
static int host_buf[N];

static void CUDART_CB host_fn(void *)
{
	host_calls++;
	host_seen += host_buf[7] == 107;
}

int main()
{
	int *d;
	cudaStream_t s;
	cudaEvent_t ev;
	if (cudaMalloc(&d, N * sizeof(int)) != cudaSuccess || cudaStreamCreate(&s) != cudaSuccess ||
	    cudaEventCreate(&ev) != cudaSuccess) {
		printf("FAIL: set-up\n");
		return 1;
	}

	// Launch attributes: served or hints, and refused by name.
	cudaLaunchAttribute a[3] = {};
	a[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
	a[0].val.programmaticStreamSerializationAllowed = 1;
	a[1].id = cudaLaunchAttributeLaunchCompletionEvent;
	a[1].val.launchCompletionEvent.event = ev;
	a[2].id = cudaLaunchAttributePriority;
	EXPECT_E(launch(d, 3, s, a, 3), cudaSuccess);
	EXPECT_E(cudaEventSynchronize(ev), cudaSuccess);
	failures += check_dev(d, 3) != 0;
	cudaLaunchAttribute c = {};
	c.id = cudaLaunchAttributeClusterDimension;
	c.val.clusterDim.x = 1;
	c.val.clusterDim.y = c.val.clusterDim.z = 1;
	EXPECT_E(launch(d, 9, s, &c, 1), cudaSuccess);
	EXPECT_E(cudaStreamSynchronize(s), cudaSuccess);
	failures += check_dev(d, 9) != 0;

	// Thread block clusters (grid: 16 blocks): carried to the daemon.
	cudaLaunchAttribute cl[2] = {};
	cl[0].id = cudaLaunchAttributeClusterDimension;
	cl[0].val.clusterDim.x = 4;
	cl[0].val.clusterDim.y = cl[0].val.clusterDim.z = 1;
	cl[1].id = cudaLaunchAttributeClusterSchedulingPolicyPreference;
	cl[1].val.clusterSchedulingPolicyPreference = cudaClusterSchedulingPolicySpread;
	EXPECT_E(launch(d, 11, s, cl, 2), cudaSuccess);
	EXPECT_E(cudaStreamSynchronize(s), cudaSuccess);
	failures += check_dev(d, 11) != 0;
	cl[0].val.clusterDim.x = 3; // does not divide the grid
	EXPECT_E(launch(d, 0, s, cl, 1), cudaErrorInvalidClusterSize);
	cl[0].val.clusterDim.x = 16; // more than 8 without the non-portable attribute
	EXPECT_E(launch(d, 0, s, cl, 1), cudaErrorInvalidClusterSize);
	cudaLaunchConfig_t occ = {};
	occ.gridDim = dim3(N / 256);
	occ.blockDim = dim3(256);
	int csize = 0, nclusters = 0;
	EXPECT_E(cudaOccupancyMaxPotentialClusterSize(&csize, (void *)rt13_iota, &occ), cudaSuccess);
	if (csize != 8) {
		printf("FAIL: cudaOccupancyMaxPotentialClusterSize answered %d, expected 8\n", csize);
		failures++;
	}
	EXPECT_E(cudaFuncSetAttribute(rt13_iota, cudaFuncAttributeNonPortableClusterSizeAllowed, 1),
		 cudaSuccess);
	EXPECT_E(cudaOccupancyMaxPotentialClusterSize(&csize, (void *)rt13_iota, &occ), cudaSuccess);
	if (csize != 16) {
		printf("FAIL: cudaOccupancyMaxPotentialClusterSize answered %d, expected 16\n", csize);
		failures++;
	}
	occ.attrs = cl;
	occ.numAttrs = 1;
	EXPECT_E(cudaOccupancyMaxActiveClusters(&nclusters, (void *)rt13_iota, &occ), cudaSuccess);
	if (nclusters <= 0) {
		printf("FAIL: cudaOccupancyMaxActiveClusters answered %d\n", nclusters);
		failures++;
	}
	EXPECT_E(launch(d, 12, s, cl, 1), cudaSuccess);
	EXPECT_E(cudaStreamSynchronize(s), cudaSuccess);
	failures += check_dev(d, 12) != 0;
	cl[0].val.clusterDim.x = 1;
	cl[0].val.clusterDim.y = 32; // more than 16, and the grid's y is 1
	EXPECT_E(launch(d, 0, s, cl, 1), cudaErrorInvalidClusterSize);
	cl[1].val.clusterSchedulingPolicyPreference = (cudaClusterSchedulingPolicy)7;
	EXPECT_E(launch(d, 0, s, &cl[1], 1), cudaErrorInvalidValue);
	// A kernel with a compile-time cluster shape, launched as any other.
	rt13_iota_cluster<<<N / 256, 256, 0, s>>>(d, 13, N);
	EXPECT_E(cudaGetLastError(), cudaSuccess);
	EXPECT_E(cudaStreamSynchronize(s), cudaSuccess);
	failures += check_dev(d, 13) != 0;

	// Managed memory attached to one stream.
	int *m;
	EXPECT_E(cudaMallocManaged(&m, N * sizeof(int)), cudaSuccess);
	EXPECT_E(cudaStreamAttachMemAsync(s, m, 0, cudaMemAttachSingle), cudaSuccess);
	EXPECT_E(launch(m, 50, s, nullptr, 0), cudaSuccess);
	EXPECT_E(cudaStreamSynchronize(s), cudaSuccess);
	failures += bad_iota(m, 50, N) != 0;
	EXPECT_E(cudaStreamAttachMemAsync(s, d, 0, cudaMemAttachGlobal), cudaErrorInvalidValue);
	EXPECT_E(cudaFree(m), cudaSuccess);

	// A graph: kernel -> copy to the host -> host node.
	cudaGraph_t g;
	cudaGraphExec_t x;
	cudaGraphNode_t k, cp, h;
	EXPECT_E(cudaGraphCreate(&g, 0), cudaSuccess);
	cudaKernelNodeParams kp = {};
	int base = 100, n = N;
	void *args[] = {&d, &base, &n};
	kp.func = (void *)rt13_iota;
	kp.gridDim = dim3(N / 256);
	kp.blockDim = dim3(256);
	kp.kernelParams = args;
	EXPECT_E(cudaGraphAddKernelNode(&k, g, nullptr, 0, &kp), cudaSuccess);
	EXPECT_E(
	    cudaGraphAddMemcpyNode1D(&cp, g, &k, 1, host_buf, d, sizeof host_buf, cudaMemcpyDeviceToHost),
	    cudaSuccess);
	cudaHostNodeParams hp = {};
	hp.fn = host_fn;
	EXPECT_E(cudaGraphAddHostNode(&h, g, &cp, 1, &hp), cudaSuccess);
	EXPECT_E(cudaGraphInstantiate(&x, g, 0), cudaSuccess);
	for (int i = 0; i < 2; i++) {
		memset(host_buf, 0, sizeof host_buf);
		EXPECT_E(cudaGraphLaunch(x, s), cudaSuccess);
		EXPECT_E(cudaStreamSynchronize(s), cudaSuccess);
	}
	if (host_calls != 2 || host_seen != 2) {
		printf("FAIL: host node ran %d times, saw the copy %d times\n", host_calls, host_seen);
		failures++;
	}
	EXPECT_E(cudaGraphExecDestroy(x), cudaSuccess);
	EXPECT_E(cudaGraphDestroy(g), cudaSuccess);

	// IPC: a handle is made; the process that made it cannot open it.
	cudaIpcMemHandle_t ih;
	EXPECT_E(cudaIpcGetMemHandle(&ih, d), cudaSuccess);
	void *p = nullptr;
	cudaError_t e = cudaIpcOpenMemHandle(&p, ih, cudaIpcMemLazyEnablePeerAccess);
	if (e == cudaSuccess) {
		printf("FAIL: a process opened its own IPC handle\n");
		failures++;
	}
	cudaGetLastError();
	// An event handle (drvapi13 opens one in a second process): its handle
	// opened again is a second event for the same one, which outlives the
	// first's destroy; a plain event exports nothing.
	cudaEvent_t ie, opened;
	cudaIpcEventHandle_t eh;
	EXPECT_E(cudaEventCreateWithFlags(&ie, cudaEventDisableTiming | cudaEventInterprocess), cudaSuccess);
	EXPECT_E(cudaIpcGetEventHandle(&eh, ie), cudaSuccess);
	EXPECT_E(cudaIpcOpenEventHandle(&opened, eh), cudaSuccess);
	EXPECT_E(cudaEventRecord(ie, s), cudaSuccess);
	EXPECT_E(cudaEventDestroy(ie), cudaSuccess);
	EXPECT_E(cudaStreamWaitEvent(s, opened, 0), cudaSuccess);
	EXPECT_E(cudaEventSynchronize(opened), cudaSuccess);
	EXPECT_E(cudaEventDestroy(opened), cudaSuccess);
	EXPECT_E(cudaIpcOpenEventHandle(&opened, eh), cudaErrorInvalidValue); // its exporter is gone
	if (cudaIpcGetEventHandle(&eh, ev) == cudaSuccess) {
		printf("FAIL: an event made without cudaEventInterprocess was exported\n");
		failures++;
	}
	cudaGetLastError();

	cudaEventDestroy(ev);
	cudaStreamDestroy(s);
	cudaFree(d);
	printf("RESULT workload=rt13 verified=%s\n", failures ? "no" : "yes");
	return failures ? 1 : 0;
}
