/* SPDX-License-Identifier: Apache-2.0 */
// graphs.cu - the explicit graph API, as NVIDIA's simpleCudaGraphs sample
// uses it: memset, host-to-device, kernel, child graph, device-to-device,
// device-to-host, event and empty nodes, instantiated once and launched
// several times with new host input each time (a graph's copies read and
// write host memory when it runs), every result checked. Also: a graph made
// cyclic with cudaGraphAddDependencies is refused at instantiate, and a
// destroyed exec is not launched again.
#include "graphs_kernels.cuh"
#include "sample.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

static const int N = 4096;

static cudaKernelNodeParams kernel_params(void *fn, void **args)
{
	cudaKernelNodeParams p;
	memset(&p, 0, sizeof p);
	p.func = fn;
	p.gridDim = dim3((N + 255) / 256);
	p.blockDim = dim3(256);
	p.kernelParams = args;
	return p;
}

int main()
{
	int *d_x, *d_y, *d_z;
	CHECK(cudaMalloc(&d_x, N * sizeof(int)));
	CHECK(cudaMalloc(&d_y, N * sizeof(int)));
	CHECK(cudaMalloc(&d_z, N * sizeof(int)));
	int *h_x = (int *)malloc(N * sizeof(int)), *h_y = (int *)malloc(N * sizeof(int));
	cudaStream_t s;
	CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	cudaEvent_t ready, done;
	CHECK(cudaEventCreate(&ready));
	CHECK(cudaEventCreate(&done));

	// child: y += 1 * x; y *= 3
	cudaGraph_t child;
	CHECK(cudaGraphCreate(&child, 0));
	int n = N, one = 1, three = 3, two = 2;
	void *axpy_args[] = {&d_y, &d_x, &one, &n};
	void *scale3_args[] = {&d_y, &three, &n};
	cudaKernelNodeParams kp = kernel_params((void *)gk_axpy, axpy_args);
	cudaGraphNode_t c_axpy, c_scale;
	CHECK(cudaGraphAddKernelNode(&c_axpy, child, NULL, 0, &kp));
	kp = kernel_params((void *)gk_scale, scale3_args);
	CHECK(cudaGraphAddKernelNode(&c_scale, child, &c_axpy, 1, &kp));

	// parent: wait(ready) -> [memset y = 0 | copy h_x -> x -> x *= 2] -> child
	//         -> copy y -> z -> copy z -> h_y -> record(done) -> empty
	cudaGraph_t g;
	CHECK(cudaGraphCreate(&g, 0));
	cudaGraphNode_t wait, mset, h2d, scale2, sub, d2d, d2h, rec, empty;
	CHECK(cudaGraphAddEventWaitNode(&wait, g, NULL, 0, ready));
	cudaMemsetParams mp;
	memset(&mp, 0, sizeof mp);
	mp.dst = d_y;
	mp.value = 0;
	mp.elementSize = 4;
	mp.width = N;
	mp.height = 1;
	CHECK(cudaGraphAddMemsetNode(&mset, g, &wait, 1, &mp));
	CHECK(cudaGraphAddMemcpyNode1D(&h2d, g, &wait, 1, d_x, h_x, N * sizeof(int), cudaMemcpyHostToDevice));
	void *scale2_args[] = {&d_x, &two, &n};
	kp = kernel_params((void *)gk_scale, scale2_args);
	CHECK(cudaGraphAddKernelNode(&scale2, g, &h2d, 1, &kp));
	cudaGraphNode_t before_child[] = {mset, scale2};
	CHECK(cudaGraphAddChildGraphNode(&sub, g, before_child, 2, child));
	// The child was copied: changing it now does not change g.
	cudaGraphNode_t late;
	CHECK(cudaGraphAddEmptyNode(&late, child, &c_scale, 1));
	CHECK(
	    cudaGraphAddMemcpyNode1D(&d2d, g, &sub, 1, d_z, d_y, N * sizeof(int), cudaMemcpyDeviceToDevice));
	CHECK(cudaGraphAddMemcpyNode1D(&d2h, g, &d2d, 1, h_y, d_z, N * sizeof(int), cudaMemcpyDeviceToHost));
	CHECK(cudaGraphAddEventRecordNode(&rec, g, &d2h, 1, done));
	CHECK(cudaGraphAddEmptyNode(&empty, g, &rec, 1));
	size_t count = 0;
	CHECK(cudaGraphGetNodes(g, NULL, &count));
	if (count != 9) {
		fprintf(stderr, "graphs: the graph has %zu nodes, not 9\n", count);
		return 1;
	}

	cudaGraphExec_t exec;
	CHECK(cudaGraphInstantiate(&exec, g, 0));
	CHECK(cudaGraphUpload(exec, s));
	const int launches = 5;
	for (int it = 0; it < launches; it++) {
		for (int i = 0; i < N; i++)
			h_x[i] = i * 7 + it;
		memset(h_y, 0xff, N * sizeof(int));
		CHECK(cudaEventRecord(ready, s));
		CHECK(cudaGraphLaunch(exec, s));
		CHECK(cudaStreamSynchronize(s));
		CHECK(cudaEventSynchronize(done));
		for (int i = 0; i < N; i++)
			if (h_y[i] != 6 * (i * 7 + it)) {
				fprintf(stderr, "graphs: launch %d: y[%d] = %d, want %d\n", it, i, h_y[i],
					6 * (i * 7 + it));
				return 1;
			}
	}
	// New parameters for an instantiated graph: x *= 4 instead of 2, so
	// y = 12 x; then an update from the graph itself restores x *= 2.
	int four = 4;
	void *scale4_args[] = {&d_x, &four, &n};
	kp = kernel_params((void *)gk_scale, scale4_args);
	CHECK(cudaGraphExecKernelNodeSetParams(exec, scale2, &kp));
	for (int want = 12, round = 0; round < 2; round++, want = 6) {
		for (int i = 0; i < N; i++)
			h_x[i] = i - 50;
		CHECK(cudaEventRecord(ready, s));
		CHECK(cudaGraphLaunch(exec, s));
		CHECK(cudaStreamSynchronize(s));
		for (int i = 0; i < N; i++)
			if (h_y[i] != want * (i - 50)) {
				fprintf(stderr, "graphs: updated launch %d: y[%d] = %d, want %d\n", round, i,
					h_y[i], want * (i - 50));
				return 1;
			}
		cudaGraphExecUpdateResultInfo info;
		CHECK(cudaGraphExecUpdate(exec, g, &info));
	}
	// An update that changes the topology is refused.
	cudaGraph_t other;
	CHECK(cudaGraphCreate(&other, 0));
	cudaGraphExecUpdateResultInfo info;
	if (cudaGraphExecUpdate(exec, other, &info) != cudaErrorGraphExecUpdateFailure ||
	    info.result != cudaGraphExecUpdateErrorTopologyChanged) {
		fprintf(stderr, "graphs: an update to another topology was accepted\n");
		return 1;
	}
	cudaGetLastError();
	CHECK(cudaGraphDestroy(other));
	for (int i = 0; i < N; i++)
		h_x[i] = i * 7 + launches - 1;
	CHECK(cudaEventRecord(ready, s));
	CHECK(cudaGraphLaunch(exec, s));
	CHECK(cudaStreamSynchronize(s));

	// The device side agrees with what came back.
	int z_last;
	CHECK(cudaMemcpy(&z_last, d_z + N - 1, sizeof z_last, cudaMemcpyDeviceToHost));
	if (z_last != 6 * ((N - 1) * 7 + launches - 1)) {
		fprintf(stderr, "graphs: z[N-1] = %d\n", z_last);
		return 1;
	}

	// A cycle: scale2 -> ... -> empty, then empty -> scale2.
	CHECK(cudaGraphAddDependencies(g, &empty, &scale2, NULL, 1));
	cudaGraphExec_t cyclic;
	cudaError_t e = cudaGraphInstantiate(&cyclic, g, 0);
	if (e == cudaSuccess) {
		fprintf(stderr, "graphs: a cyclic graph was instantiated\n");
		return 1;
	}
	cudaGetLastError();

	CHECK(cudaGraphExecDestroy(exec));
	CHECK(cudaGraphDestroy(g));

	// An empty graph launches as nothing.
	cudaGraph_t nothing;
	cudaGraphExec_t nothing_exec;
	CHECK(cudaGraphCreate(&nothing, 0));
	CHECK(cudaGraphInstantiate(&nothing_exec, nothing, 0));
	CHECK(cudaGraphLaunch(nothing_exec, s));
	CHECK(cudaStreamSynchronize(s));
	CHECK(cudaGraphExecUpdate(nothing_exec, nothing, &info));
	CHECK(cudaGraphExecDestroy(nothing_exec));
	CHECK(cudaGraphDestroy(nothing));
	CHECK(cudaGraphDestroy(child));
	CHECK(cudaEventDestroy(ready));
	CHECK(cudaEventDestroy(done));
	CHECK(cudaStreamDestroy(s));
	CHECK(cudaFree(d_x));
	CHECK(cudaFree(d_y));
	CHECK(cudaFree(d_z));
	free(h_x);
	free(h_y);
	printf("RESULT workload=graphs launches=%d nodes=%zu verified=yes\n", launches, count);
	return 0;
}
