/* SPDX-License-Identifier: Apache-2.0 */
// graphs_capture.cu - stream capture, as NVIDIA's simpleCudaGraphs sample
// uses it: a pipeline over two streams (fork and join through events) with
// copies in from pinned and out to pageable memory, captured once and
// launched repeatedly with new input, every result checked. Then what CUDA
// refuses during a capture: a synchronous cudaMemcpy and a
// cudaStreamSynchronize of the capturing stream fail with
// cudaErrorStreamCaptureUnsupported and invalidate the capture; a forked
// stream that does not join back makes the capture unjoined; cudaMalloc is
// refused in global mode and allowed in relaxed mode; a pitched copy or
// memset (not a node yet) is refused and voids the capture without running.
// Host callbacks: a host
// function on a capturing stream would be a host node, which xgpu's graphs do
// not offer, so it fails with cudaErrorStreamCaptureUnsupported, is never
// called and invalidates the capture, while one on a stream that is not
// capturing runs; and a capture on a stream whose earlier host function has
// not returned records its work without waiting for it (capture comes before
// the callback gate: were it the other way round, this sample would hang).
// A cooperative launch on a capturing stream is refused the same way (a
// kernel node carries no launch attributes). cudaMallocAsync and cudaFreeAsync
// on a capturing stream become memory nodes, as cuBLAS needs inside a
// capture; the program may free the graph's memory itself between launches.
#include "graphs_kernels.cuh"
#include "sample.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unistd.h>

// Not sample.h's EXPECT: a wrong result ends the program.
#undef EXPECT
#define EXPECT(call, want)                                                                                   \
	do {                                                                                                 \
		cudaError_t e_ = (call);                                                                     \
		if (e_ != (want)) {                                                                          \
			fprintf(stderr, "graphs_capture: %s gave %s at line %d, want %s\n", #call,           \
				cudaGetErrorName(e_), __LINE__, cudaGetErrorName(want));                     \
			exit(1);                                                                             \
		}                                                                                            \
		cudaGetLastError();                                                                          \
	} while (0)

static const int N = 10000;

static std::atomic<int> host_calls;
static std::atomic<bool> host_release;

static void CUDART_CB count_call(void *)
{
	host_calls++;
}

static void CUDART_CB count_callback(cudaStream_t, cudaError_t, void *)
{
	host_calls++;
}

// Holds its stream (and everything the callback gate orders after it) until
// the main thread releases it.
static void CUDART_CB wait_for_release(void *)
{
	while (!host_release)
		usleep(1000);
	host_calls++;
}
static const dim3 GRID((N + 255) / 256), BLOCK(256);

int main()
{
	int *d_a, *d_b, *d_c;
	CHECK(cudaMalloc(&d_a, N * sizeof(int)));
	CHECK(cudaMalloc(&d_b, N * sizeof(int)));
	CHECK(cudaMalloc(&d_c, N * sizeof(int)));
	// Input in pinned memory, output pageable: a capture records both.
	int *in, *out = (int *)malloc(N * sizeof(int));
	CHECK(cudaMallocHost(&in, N * sizeof(int)));
	cudaStream_t s1, s2;
	CHECK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
	CHECK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
	cudaEvent_t fork, join;
	CHECK(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
	CHECK(cudaEventCreateWithFlags(&join, cudaEventDisableTiming));

	cudaStreamCaptureStatus st;
	CHECK(cudaStreamIsCapturing(s1, &st));
	if (st != cudaStreamCaptureStatusNone) {
		fprintf(stderr, "graphs_capture: a fresh stream is capturing\n");
		return 1;
	}

	// a = in; a *= 3; fork: [s2: b = 0; b += 2a] [s1: c = a; c += 5]; join;
	// b += c; out = b   =>  out = 2*3x + 3x + 5 = 9x + 5. The branches only
	// read a, so they may run in either order or together.
	CHECK(cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal));
	CHECK(cudaMemcpyAsync(d_a, in, N * sizeof(int), cudaMemcpyHostToDevice, s1));
	gk_scale<<<GRID, BLOCK, 0, s1>>>(d_a, 3, N);
	CHECK(cudaEventRecord(fork, s1));
	CHECK(cudaStreamWaitEvent(s2, fork, 0));
	CHECK(cudaStreamIsCapturing(s2, &st));
	if (st != cudaStreamCaptureStatusActive) {
		fprintf(stderr, "graphs_capture: the forked stream did not join the capture\n");
		return 1;
	}
	CHECK(cudaMemsetAsync(d_b, 0, N * sizeof(int), s2));
	gk_axpy<<<GRID, BLOCK, 0, s2>>>(d_b, d_a, 2, N);
	CHECK(cudaMemcpyAsync(d_c, d_a, N * sizeof(int), cudaMemcpyDeviceToDevice, s1));
	gk_add<<<GRID, BLOCK, 0, s1>>>(d_c, 5, N);
	CHECK(cudaEventRecord(join, s2));
	CHECK(cudaStreamWaitEvent(s1, join, 0));
	gk_axpy<<<GRID, BLOCK, 0, s1>>>(d_b, d_c, 1, N);
	CHECK(cudaMemcpyAsync(out, d_b, N * sizeof(int), cudaMemcpyDeviceToHost, s1));
	CHECK(cudaGetLastError());
	unsigned long long id = 0;
	size_t ndeps = 0;
	const cudaGraphNode_t *deps = NULL;
	cudaGraph_t capturing = NULL;
	CHECK(cudaStreamGetCaptureInfo(s1, &st, &id, &capturing, &deps, NULL, &ndeps));
	if (st != cudaStreamCaptureStatusActive || !id || !capturing || ndeps != 1) {
		fprintf(stderr, "graphs_capture: capture info: status %d id %llu deps %zu\n", (int)st, id,
			ndeps);
		return 1;
	}
	cudaGraph_t g;
	CHECK(cudaStreamEndCapture(s1, &g));
	CHECK(cudaStreamIsCapturing(s1, &st));
	if (st != cudaStreamCaptureStatusNone) {
		fprintf(stderr, "graphs_capture: still capturing after cudaStreamEndCapture\n");
		return 1;
	}
	size_t nodes = 0;
	CHECK(cudaGraphGetNodes(g, NULL, &nodes));
	if (nodes != 8) {
		fprintf(stderr, "graphs_capture: captured %zu nodes, want 8\n", nodes);
		return 1;
	}
	cudaGraphExec_t exec;
	CHECK(cudaGraphInstantiate(&exec, g, 0));
	const int launches = 20;
	for (int it = 0; it < launches; it++) {
		for (int i = 0; i < N; i++)
			in[i] = i - it * 100;
		CHECK(cudaGraphLaunch(exec, s1));
		CHECK(cudaStreamSynchronize(s1));
		for (int i = 0; i < N; i++)
			if (out[i] != 9 * in[i] + 5) {
				fprintf(stderr, "graphs_capture: launch %d: out[%d] = %d, want %d\n", it, i,
					out[i], 9 * in[i] + 5);
				return 1;
			}
	}
	CHECK(cudaGraphExecDestroy(exec));
	CHECK(cudaGraphDestroy(g));

	// A synchronous copy on the legacy stream leaves a capture on a
	// non-blocking stream alone (NVIDIA's driver 580 runs it); synchronizing
	// the capturing stream is illegal and voids the capture.
	cudaGraph_t bad = (cudaGraph_t)1;
	CHECK(cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal));
	gk_add<<<GRID, BLOCK, 0, s1>>>(d_a, 1, N);
	EXPECT(cudaMemcpy(out, d_a, sizeof(int), cudaMemcpyDeviceToHost), cudaSuccess);
	CHECK(cudaStreamIsCapturing(s1, &st));
	if (st != cudaStreamCaptureStatusActive) {
		fprintf(stderr, "graphs_capture: a synchronous copy beside the capture ended it\n");
		return 1;
	}
	EXPECT(cudaStreamSynchronize(s1), cudaErrorStreamCaptureUnsupported);
	CHECK(cudaStreamIsCapturing(s1, &st));
	if (st != cudaStreamCaptureStatusInvalidated) {
		fprintf(stderr, "graphs_capture: the capture was not invalidated\n");
		return 1;
	}
	EXPECT(cudaStreamEndCapture(s1, &bad), cudaErrorStreamCaptureInvalidated);
	if (bad) {
		fprintf(stderr, "graphs_capture: an invalidated capture returned a graph\n");
		return 1;
	}

	// A forked stream that does not join back.
	CHECK(cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal));
	CHECK(cudaEventRecord(fork, s1));
	CHECK(cudaStreamWaitEvent(s2, fork, 0));
	gk_add<<<GRID, BLOCK, 0, s2>>>(d_c, 1, N);
	EXPECT(cudaStreamEndCapture(s1, &bad), cudaErrorStreamCaptureUnjoined);
	CHECK(cudaStreamIsCapturing(s2, &st));
	if (bad || st != cudaStreamCaptureStatusNone) {
		fprintf(stderr,
			"graphs_capture: an unjoined capture returned a graph or left a stream capturing\n");
		return 1;
	}

	// Synchronizing the capturing stream.
	CHECK(cudaStreamBeginCapture(s1, cudaStreamCaptureModeThreadLocal));
	EXPECT(cudaStreamSynchronize(s1), cudaErrorStreamCaptureUnsupported);
	EXPECT(cudaStreamEndCapture(s1, &bad), cudaErrorStreamCaptureInvalidated);

	// A pitched copy or memset on a capturing stream: not a node in xgpu's
	// graphs, so refused, and the capture is void (it must not run outside
	// the capture).
	CHECK(cudaMemset(d_c, 0x11, 64));
	CHECK(cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal));
	EXPECT(cudaMemcpy2DAsync(d_c, 32, d_a, 32, 16, 2, cudaMemcpyDeviceToDevice, s1),
	       cudaErrorStreamCaptureUnsupported);
	EXPECT(cudaStreamEndCapture(s1, &bad), cudaErrorStreamCaptureInvalidated);
	CHECK(cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal));
	EXPECT(cudaMemset2DAsync(d_c, 32, 0x22, 16, 2, s1), cudaErrorStreamCaptureUnsupported);
	EXPECT(cudaStreamEndCapture(s1, &bad), cudaErrorStreamCaptureInvalidated);
	unsigned char untouched[64];
	CHECK(cudaMemcpy(untouched, d_c, sizeof untouched, cudaMemcpyDeviceToHost));
	for (int i = 0; i < 64; i++)
		if (untouched[i] != 0x11) {
			fprintf(stderr, "graphs_capture: a refused pitched call on a capturing stream ran\n");
			return 1;
		}

	// A host function on a capturing stream becomes a host node: not called
	// at capture, called at each launch; one on a stream that is not
	// capturing runs. A stream callback cannot be captured (refused, the
	// capture void), as in CUDA.
	CHECK(cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal));
	CHECK(cudaLaunchHostFunc(s2, count_call, NULL));
	CHECK(cudaLaunchHostFunc(s1, count_call, NULL));
	CHECK(cudaStreamIsCapturing(s1, &st));
	if (st != cudaStreamCaptureStatusActive) {
		fprintf(stderr, "graphs_capture: a captured host function ended the capture\n");
		return 1;
	}
	CHECK(cudaStreamEndCapture(s1, &g));
	CHECK(cudaStreamSynchronize(s2));
	if (host_calls != 1) {
		fprintf(stderr, "graphs_capture: a captured host function ran at capture (%d calls)\n",
			host_calls.load());
		return 1;
	}
	cudaGraphExec_t hx;
	CHECK(cudaGraphInstantiate(&hx, g, 0));
	CHECK(cudaGraphLaunch(hx, s1));
	CHECK(cudaStreamSynchronize(s1));
	CHECK(cudaGraphExecDestroy(hx));
	CHECK(cudaGraphDestroy(g));
	CHECK(cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal));
	gk_add<<<GRID, BLOCK, 0, s1>>>(d_a, 1, N);
	EXPECT(cudaStreamAddCallback(s1, count_callback, NULL, 0), cudaErrorStreamCaptureUnsupported);
	CHECK(cudaStreamIsCapturing(s1, &st));
	if (st != cudaStreamCaptureStatusInvalidated) {
		fprintf(stderr, "graphs_capture: a stream callback did not invalidate the capture\n");
		return 1;
	}
	bad = (cudaGraph_t)1;
	EXPECT(cudaStreamEndCapture(s1, &bad), cudaErrorStreamCaptureInvalidated);
	CHECK(cudaStreamSynchronize(s1));
	if (bad || host_calls != 2) {
		fprintf(stderr, "graphs_capture: host functions during a capture: %d called, want 2%s\n",
			host_calls.load(), bad ? "; a graph returned" : "");
		return 1;
	}

	// A capture while the stream's earlier host function has not returned:
	// the captured work is recorded at once, not held back behind it.
	CHECK(cudaLaunchHostFunc(s1, wait_for_release, NULL));
	CHECK(cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal));
	gk_add<<<GRID, BLOCK, 0, s1>>>(d_a, 1, N);
	CHECK(cudaGetLastError());
	CHECK(cudaStreamEndCapture(s1, &g));
	host_release = true;
	CHECK(cudaStreamSynchronize(s1));
	size_t held_nodes = 0;
	CHECK(cudaGraphGetNodes(g, NULL, &held_nodes));
	if (held_nodes != 1 || host_calls != 3) {
		fprintf(stderr,
			"graphs_capture: behind a host function: %zu nodes (want 1), %d calls (want 3)\n",
			held_nodes, host_calls.load());
		return 1;
	}
	CHECK(cudaGraphDestroy(g));

	// A cooperative launch on a capturing stream: refused (before any device
	// check), the capture void.
	int one = 1, n = N;
	void *coop_args[] = {&d_a, &one, &n};
	CHECK(cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal));
	EXPECT(cudaLaunchCooperativeKernel((void *)gk_add, dim3(1), BLOCK, coop_args, 0, s1),
	       cudaErrorStreamCaptureUnsupported);
	bad = (cudaGraph_t)1;
	EXPECT(cudaStreamEndCapture(s1, &bad), cudaErrorStreamCaptureInvalidated);
	if (bad) {
		fprintf(stderr, "graphs_capture: a capture with a cooperative launch returned a graph\n");
		return 1;
	}

	// Stream-ordered allocation and free on a capturing stream (global mode,
	// as cuBLAS allocates its dot workspace): a memory allocation node and a
	// free node. Each launch fills the graph's memory, adds to it and copies
	// it out. The graph memory attributes count it while the graph lives.
	{
		int *h_out = (int *)malloc(N * sizeof(int));
		int *gmem = NULL;
		cudaGraphExec_t ge;
		CHECK(cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal));
		CHECK(cudaMallocAsync((void **)&gmem, N * sizeof(int), s1));
		CHECK(cudaMemsetAsync(gmem, 0, N * sizeof(int), s1));
		gk_add<<<GRID, BLOCK, 0, s1>>>(gmem, 7, N);
		CHECK(cudaMemcpyAsync(h_out, gmem, N * sizeof(int), cudaMemcpyDeviceToHost, s1));
		CHECK(cudaFreeAsync(gmem, s1));
		CHECK(cudaStreamEndCapture(s1, &g));
		CHECK(cudaGraphInstantiate(&ge, g, NULL, NULL, 0));
		unsigned long long used = 0;
		CHECK(cudaDeviceGetGraphMemAttribute(0, cudaGraphMemAttrUsedMemCurrent, &used));
		if (!gmem || used < N * sizeof(int)) {
			fprintf(stderr, "graphs_capture: captured allocation %p, %llu graph bytes in use\n",
				(void *)gmem, used);
			return 1;
		}
		for (int round = 0; round < 2; round++) {
			memset(h_out, 0, N * sizeof(int));
			CHECK(cudaGraphLaunch(ge, s1));
			CHECK(cudaStreamSynchronize(s1));
			for (int i = 0; i < N; i++)
				if (h_out[i] != 7) {
					fprintf(stderr,
						"graphs_capture: captured allocation, launch %d: [%d] = %d\n",
						round, i, h_out[i]);
					return 1;
				}
		}
		CHECK(cudaGraphExecDestroy(ge));
		CHECK(cudaGraphDestroy(g));
		CHECK(cudaDeviceGetGraphMemAttribute(0, cudaGraphMemAttrUsedMemCurrent, &used));
		if (used) {
			fprintf(stderr, "graphs_capture: %llu graph bytes in use after the graph went\n",
				used);
			return 1;
		}

		// Graph memory the graph does not free: the program frees it after
		// a launch, as CUDA allows, and the next launch still runs.
		CHECK(cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal));
		CHECK(cudaMallocAsync((void **)&gmem, N * sizeof(int), s1));
		CHECK(cudaMemsetAsync(gmem, 0, N * sizeof(int), s1));
		gk_add<<<GRID, BLOCK, 0, s1>>>(gmem, 5, N);
		CHECK(cudaMemcpyAsync(h_out, gmem, N * sizeof(int), cudaMemcpyDeviceToHost, s1));
		CHECK(cudaStreamEndCapture(s1, &g));
		CHECK(cudaGraphInstantiate(&ge, g, NULL, NULL, 0));
		CHECK(cudaGraphLaunch(ge, s1));
		CHECK(cudaStreamSynchronize(s1));
		CHECK(cudaFree(gmem));
		memset(h_out, 0, N * sizeof(int));
		CHECK(cudaGraphLaunch(ge, s1));
		CHECK(cudaStreamSynchronize(s1));
		if (h_out[0] != 5 || h_out[N - 1] != 5) {
			fprintf(stderr, "graphs_capture: after the program freed graph memory: %d %d\n",
				h_out[0], h_out[N - 1]);
			return 1;
		}
		CHECK(cudaGraphExecDestroy(ge));
		CHECK(cudaGraphDestroy(g));

		// An allocation node's memory, freed on a stream after a launch and
		// then by a free node of another graph, as cuda-samples'
		// graphMemoryNodes does.
		cudaMemAllocNodeParams ap = {};
		ap.poolProps.allocType = cudaMemAllocationTypePinned;
		ap.poolProps.location.type = cudaMemLocationTypeDevice;
		ap.poolProps.location.id = 0;
		ap.bytesize = N * sizeof(int);
		cudaGraphNode_t anode;
		CHECK(cudaGraphCreate(&g, 0));
		CHECK(cudaGraphAddMemAllocNode(&anode, g, NULL, 0, &ap));
		gmem = (int *)ap.dptr;
		CHECK(cudaGraphInstantiate(&ge, g, NULL, NULL, 0));
		CHECK(cudaGraphLaunch(ge, s1));
		CHECK(cudaFreeAsync(gmem, s1));
		CHECK(cudaStreamSynchronize(s1));
		cudaGraph_t fg;
		cudaGraphNode_t fnode;
		cudaGraphExec_t fge;
		CHECK(cudaGraphCreate(&fg, 0));
		CHECK(cudaGraphAddMemFreeNode(&fnode, fg, NULL, 0, gmem));
		CHECK(cudaGraphInstantiate(&fge, fg, NULL, NULL, 0));
		CHECK(cudaGraphLaunch(fge, s1));
		CHECK(cudaStreamSynchronize(s1));
		CHECK(cudaGraphExecDestroy(fge));
		CHECK(cudaGraphDestroy(fg));
		CHECK(cudaGraphExecDestroy(ge));
		CHECK(cudaGraphDestroy(g));
		free(h_out);
	}

	// cudaMalloc: refused in global mode, allowed in relaxed mode.
	int *tmp = NULL;
	CHECK(cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal));
	EXPECT(cudaMalloc(&tmp, 64), cudaErrorStreamCaptureUnsupported);
	EXPECT(cudaStreamEndCapture(s1, &bad), cudaErrorStreamCaptureInvalidated);
	CHECK(cudaStreamBeginCapture(s1, cudaStreamCaptureModeRelaxed));
	CHECK(cudaMalloc(&tmp, 64));
	gk_add<<<GRID, BLOCK, 0, s1>>>(d_a, 1, N);
	CHECK(cudaStreamEndCapture(s1, &g));
	CHECK(cudaGraphDestroy(g));
	CHECK(cudaFree(tmp));
	// Nothing captured ran: a is still 3 * in from the last launch.
	CHECK(cudaMemcpy(out, d_a, N * sizeof(int), cudaMemcpyDeviceToHost));
	for (int i = 0; i < N; i++)
		if (out[i] != 3 * in[i]) {
			fprintf(stderr, "graphs_capture: captured work ran outside its graph (a[%d] = %d)\n",
				i, out[i]);
			return 1;
		}

	CHECK(cudaEventDestroy(fork));
	CHECK(cudaEventDestroy(join));
	CHECK(cudaStreamDestroy(s1));
	CHECK(cudaStreamDestroy(s2));
	CHECK(cudaFree(d_a));
	CHECK(cudaFree(d_b));
	CHECK(cudaFree(d_c));
	CHECK(cudaFreeHost(in));
	free(out);
	printf("RESULT workload=graphs_capture launches=%d nodes=%zu verified=yes\n", launches, nodes);
	return 0;
}
