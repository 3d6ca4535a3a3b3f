/* SPDX-License-Identifier: Apache-2.0 */
// graphs_cond.cu - conditional graph nodes (CUDA 12.3+), as NVIDIA's
// graphConditionalNodes sample uses them: if (with and without else), while
// and switch nodes whose conditions kernels set from device code
// (cudaGraphSetConditional; on the simulated driver the PTX interpreter runs
// them, no host implementation), bodies filled with cudaGraphAddNode and by
// capturing into them (cudaStreamBeginCaptureToGraph), a conditional node
// added to a stream's capture (cudaStreamUpdateCaptureDependencies), a while
// node nested in a while node's body, handle default values applied at each
// launch or kept, and what is refused: a handle of another graph, nesting
// beyond xgpu's 8 levels (by name), and a kernel setting a handle its graph
// does not have (the launch fails; last, as it fails the context).
#include "sample.h"

#include <cstring>

static int checks;
static bool ok = true;

// hits[i] counts the runs of the bodies that mark i.
__global__ void mark(int *hits, int i)
{
	atomicAdd(&hits[i], 1);
}

// Sets the condition to *v (an if or switch node's value).
__global__ void set_from(const int *v, cudaGraphConditionalHandle h)
{
	cudaGraphSetConditional(h, (unsigned)*v);
}

// A loop's body: counts down *n and stops the loop at 0.
__global__ void count_down(int *n, int *hits, int i, cudaGraphConditionalHandle h)
{
	atomicAdd(&hits[i], 1);
	if (--*n <= 0)
		cudaGraphSetConditional(h, 0);
}

// Before the inner loop: it is to run times times.
__global__ void inner_start(int *inner, int times, cudaGraphConditionalHandle h)
{
	*inner = times;
	cudaGraphSetConditional(h, 1);
}

enum { M_THEN, M_ELSE, M_LOOP, M_SW0, M_SW1, M_SW2, M_AFTER, M_OUTER, M_INNER, M_CAP, NHITS };

static int *hits, *val, *cnt, *inner;

static void reset_hits()
{
	CHECK(cudaMemset(hits, 0, NHITS * sizeof(int)));
}

static int hit(int i)
{
	int h[NHITS];
	CHECK(cudaMemcpy(h, hits, sizeof h, cudaMemcpyDeviceToHost));
	return h[i];
}

static void set_int(int *p, int v)
{
	CHECK(cudaMemcpy(p, &v, sizeof v, cudaMemcpyHostToDevice));
}

static cudaGraphNode_t add_kernel(cudaGraph_t g, const cudaGraphNode_t *dep, void *func, void **args)
{
	cudaGraphNodeParams p = {cudaGraphNodeTypeKernel};
	p.kernel.func = func;
	p.kernel.gridDim = dim3(1);
	p.kernel.blockDim = dim3(1);
	p.kernel.kernelParams = args;
	cudaGraphNode_t n;
	CHECK(cudaGraphAddNode(&n, g, dep, NULL, dep ? 1 : 0, &p));
	return n;
}

static cudaError_t add_cond(cudaGraphNode_t *n, cudaGraph_t g, const cudaGraphNode_t *dep,
			    cudaGraphConditionalHandle h, cudaGraphConditionalNodeType type, unsigned size,
			    cudaGraph_t *bodies)
{
	cudaGraphNodeParams p = {cudaGraphNodeTypeConditional};
	p.conditional.handle = h;
	p.conditional.type = type;
	p.conditional.size = size;
	cudaError_t e = cudaGraphAddNode(n, g, dep, NULL, dep ? 1 : 0, &p);
	for (unsigned i = 0; !e && i < size; i++)
		bodies[i] = p.conditional.phGraph_out[i];
	return e;
}

static void launch(cudaGraphExec_t x)
{
	CHECK(cudaGraphLaunch(x, 0));
	CHECK(cudaDeviceSynchronize());
}

// set_from -> if [mark THEN | mark ELSE] -> mark AFTER
static void if_else()
{
	cudaGraph_t g, body[2];
	cudaGraphConditionalHandle h;
	CHECK(cudaGraphCreate(&g, 0));
	CHECK(cudaGraphConditionalHandleCreate(&h, g));
	void *a[] = {&val, &h};
	cudaGraphNode_t k = add_kernel(g, NULL, (void *)set_from, a), c;
	CHECK(add_cond(&c, g, &k, h, cudaGraphCondTypeIf, 2, body));
	int t = M_THEN, e = M_ELSE, af = M_AFTER;
	void *at[] = {&hits, &t}, *ae[] = {&hits, &e}, *aa[] = {&hits, &af};
	add_kernel(body[0], NULL, (void *)mark, at);
	add_kernel(body[1], NULL, (void *)mark, ae);
	add_kernel(g, &c, (void *)mark, aa);
	cudaGraphExec_t x;
	CHECK(cudaGraphInstantiate(&x, g, 0));
	reset_hits();
	for (int v : {0, 1, 6, 7, 1}) {
		set_int(val, v);
		launch(x);
	}
	TRUE(hit(M_THEN) == 4 && hit(M_ELSE) == 1 && hit(M_AFTER) == 5);
	printf("if/else: then %d, else %d, after %d\n", hit(M_THEN), hit(M_ELSE), hit(M_AFTER));
	CHECK(cudaGraphExecDestroy(x));
	CHECK(cudaGraphDestroy(g));
}

// An if node without else, a switch of 3 bodies (a value past them runs none).
static void if_switch()
{
	cudaGraph_t g, ib[1], sb[3];
	cudaGraphConditionalHandle hi, hs;
	CHECK(cudaGraphCreate(&g, 0));
	CHECK(cudaGraphConditionalHandleCreate(&hi, g));
	CHECK(cudaGraphConditionalHandleCreate(&hs, g));
	void *ai[] = {&val, &hi}, *as[] = {&val, &hs};
	cudaGraphNode_t k1 = add_kernel(g, NULL, (void *)set_from, ai);
	cudaGraphNode_t k2 = add_kernel(g, &k1, (void *)set_from, as), ci, cs;
	CHECK(add_cond(&ci, g, &k2, hi, cudaGraphCondTypeIf, 1, ib));
	CHECK(add_cond(&cs, g, &ci, hs, cudaGraphCondTypeSwitch, 3, sb));
	int idx[4] = {M_THEN, M_SW0, M_SW1, M_SW2};
	void *args[4][2] = {{&hits, &idx[0]}, {&hits, &idx[1]}, {&hits, &idx[2]}, {&hits, &idx[3]}};
	add_kernel(ib[0], NULL, (void *)mark, args[0]);
	for (int i = 0; i < 3; i++)
		add_kernel(sb[i], NULL, (void *)mark, args[i + 1]);
	cudaGraphExec_t x;
	CHECK(cudaGraphInstantiate(&x, g, 0));
	reset_hits();
	for (int v : {0, 1, 2, 2, 3, 9}) {
		set_int(val, v);
		launch(x);
	}
	printf("if: %d, switch: %d %d %d\n", hit(M_THEN), hit(M_SW0), hit(M_SW1), hit(M_SW2));
	TRUE(hit(M_THEN) == 5 && hit(M_SW0) == 1 && hit(M_SW1) == 1 && hit(M_SW2) == 2);
	CHECK(cudaGraphExecDestroy(x));
	CHECK(cudaGraphDestroy(g));
}

// A do-while (default 1, applied at each launch) whose body holds a while
// node of its own, which a kernel of the outer body starts (its handle is the
// body graph's) each time the outer body runs: 3 outer runs of 2 inner each.
static void nested_while()
{
	cudaGraph_t g, ob[1], ib[1];
	cudaGraphConditionalHandle ho, hin;
	CHECK(cudaGraphCreate(&g, 0));
	CHECK(cudaGraphConditionalHandleCreate(&ho, g, 1, cudaGraphCondAssignDefault));
	cudaGraphNode_t co, ci;
	CHECK(add_cond(&co, g, NULL, ho, cudaGraphCondTypeWhile, 1, ob));
	CHECK(cudaGraphConditionalHandleCreate(&hin, ob[0]));
	int lo = M_OUTER, li = M_INNER, two = 2;
	void *as[] = {&inner, &two, &hin}, *ao[] = {&cnt, &hits, &lo, &ho},
	     *ai[] = {&inner, &hits, &li, &hin};
	cudaGraphNode_t k0 = add_kernel(ob[0], NULL, (void *)inner_start, as);
	CHECK(add_cond(&ci, ob[0], &k0, hin, cudaGraphCondTypeWhile, 1, ib));
	add_kernel(ib[0], NULL, (void *)count_down, ai);
	add_kernel(ob[0], &ci, (void *)count_down, ao);
	cudaGraphExec_t x;
	CHECK(cudaGraphInstantiate(&x, g, 0));
	for (int launch_no = 0; launch_no < 2; launch_no++) {
		reset_hits();
		set_int(cnt, 3);
		launch(x);
		printf("nested while, launch %d: outer %d, inner %d\n", launch_no, hit(M_OUTER),
		       hit(M_INNER));
		TRUE(hit(M_OUTER) == 3 && hit(M_INNER) == 6);
	}
	CHECK(cudaGraphExecDestroy(x));
	CHECK(cudaGraphDestroy(g));
}

// A while node whose value is kept between launches (no
// cudaGraphCondAssignDefault): the first launch starts at the default 1 and
// runs until the kernel clears it, the second finds it 0 and runs nothing.
static void kept_value()
{
	cudaGraph_t g, b[1];
	cudaGraphConditionalHandle h;
	CHECK(cudaGraphCreate(&g, 0));
	CHECK(cudaGraphConditionalHandleCreate(&h, g, 1, 0));
	cudaGraphNode_t c;
	CHECK(add_cond(&c, g, NULL, h, cudaGraphCondTypeWhile, 1, b));
	int l = M_LOOP;
	void *a[] = {&cnt, &hits, &l, &h};
	add_kernel(b[0], NULL, (void *)count_down, a);
	cudaGraphExec_t x;
	CHECK(cudaGraphInstantiate(&x, g, 0));
	reset_hits();
	set_int(cnt, 4);
	launch(x);
	TRUE(hit(M_LOOP) == 4);
	set_int(cnt, 4);
	launch(x);
	printf("kept value: %d runs over two launches\n", hit(M_LOOP));
	TRUE(hit(M_LOOP) == 4);
	CHECK(cudaGraphExecDestroy(x));
	CHECK(cudaGraphDestroy(g));
}

// The capture pattern of graphConditionalNodes' capturedWhileGraph: a while
// node added to a capture, its body filled by a capture of its own.
static void captured()
{
	cudaStream_t s;
	CHECK(cudaStreamCreate(&s));
	CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
	cudaStreamCaptureStatus st;
	cudaGraph_t g;
	const cudaGraphNode_t *deps;
	size_t ndeps;
	CHECK(cudaStreamGetCaptureInfo(s, &st, NULL, &g, &deps, NULL, &ndeps));
	cudaGraphConditionalHandle h;
	CHECK(cudaGraphConditionalHandleCreate(&h, g, 1, cudaGraphCondAssignDefault));
	int l = M_CAP, af = M_AFTER;
	mark<<<1, 1, 0, s>>>(hits, af);
	CHECK(cudaStreamGetCaptureInfo(s, &st, NULL, &g, &deps, NULL, &ndeps));
	TRUE(ndeps == 1);
	cudaGraphNode_t c;
	cudaGraph_t body[1];
	CHECK(add_cond(&c, g, ndeps ? deps : NULL, h, cudaGraphCondTypeWhile, 1, body));
	CHECK(cudaStreamUpdateCaptureDependencies(s, &c, NULL, 1, cudaStreamSetCaptureDependencies));
	mark<<<1, 1, 0, s>>>(hits, af);
	CHECK(cudaStreamEndCapture(s, &g));
	CHECK(cudaStreamBeginCaptureToGraph(s, body[0], NULL, NULL, 0, cudaStreamCaptureModeGlobal));
	count_down<<<1, 1, 0, s>>>(cnt, hits, l, h);
	CHECK(cudaStreamEndCapture(s, NULL));
	size_t n = 0;
	CHECK(cudaGraphGetNodes(body[0], NULL, &n));
	TRUE(n == 1);
	cudaGraphExec_t x;
	CHECK(cudaGraphInstantiate(&x, g, 0));
	reset_hits();
	set_int(cnt, 5);
	launch(x);
	printf("captured: loop %d, around it %d\n", hit(M_CAP), hit(M_AFTER));
	TRUE(hit(M_CAP) == 5 && hit(M_AFTER) == 2);
	CHECK(cudaGraphExecDestroy(x));
	CHECK(cudaGraphDestroy(g));
	CHECK(cudaStreamDestroy(s));
}

static void refusals()
{
	cudaGraph_t g, other, b[1];
	cudaGraphConditionalHandle h, foreign;
	CHECK(cudaGraphCreate(&g, 0));
	CHECK(cudaGraphCreate(&other, 0));
	CHECK(cudaGraphConditionalHandleCreate(&foreign, other));
	cudaGraphNode_t c;
	EXPECT(add_cond(&c, g, NULL, foreign, cudaGraphCondTypeIf, 1, b), cudaErrorInvalidValue);
	CHECK(cudaGraphConditionalHandleCreate(&h, g));
	EXPECT(add_cond(&c, g, NULL, h, cudaGraphCondTypeWhile, 2, b), cudaErrorInvalidValue);
	EXPECT(cudaGraphConditionalHandleCreate(&h, g, 0, 8), cudaErrorInvalidValue);
	// 8 levels are served, the 9th is refused by name.
	cudaGraph_t at = g;
	cudaError_t e = cudaSuccess;
	int depth = 0;
	for (; depth < 9; depth++) {
		cudaGraphConditionalHandle hd;
		CHECK(cudaGraphConditionalHandleCreate(&hd, at));
		if ((e = add_cond(&c, at, NULL, hd, cudaGraphCondTypeIf, 1, b)))
			break;
		at = b[0];
	}
	printf("nesting: %d levels, then %s\n", depth, cudaGetErrorName(e));
	TRUE(depth == 8 && e == cudaErrorNotSupported);
	cudaGetLastError();
	EXPECT(cudaGraphDestroy(at), cudaErrorInvalidValue); // a body goes with its node
	CHECK(cudaGraphDestroy(g));
	CHECK(cudaGraphDestroy(other));
}

// A kernel setting a handle its graph does not have: the launch fails (as a
// kernel fault does on a GPU), and the program goes on to its report.
static void foreign_set()
{
	cudaGraph_t g, other;
	cudaGraphConditionalHandle own, foreign;
	CHECK(cudaGraphCreate(&g, 0));
	CHECK(cudaGraphCreate(&other, 0));
	CHECK(cudaGraphConditionalHandleCreate(&own, g));
	CHECK(cudaGraphConditionalHandleCreate(&foreign, other));
	void *a[] = {&val, &foreign};
	add_kernel(g, NULL, (void *)set_from, a);
	cudaGraphExec_t x;
	CHECK(cudaGraphInstantiate(&x, g, 0));
	cudaError_t e = cudaGraphLaunch(x, 0);
	if (!e)
		e = cudaDeviceSynchronize();
	printf("a kernel setting another graph's handle: %s\n", cudaGetErrorName(e));
	TRUE(e == cudaErrorLaunchFailure);
	// The process's context is gone; what is the program's goes all the same.
	cudaGraphExecDestroy(x);
	cudaGraphDestroy(g);
	cudaGraphDestroy(other);
}

// A while loop whose body never clears its condition (default 1): on a GPU
// it runs until something ends it. Run by tests/e2e/kernel_timeout.sh, which
// expects the domain's kernel timeout to end it with cudaErrorLaunchTimeout.
static int endless()
{
	cudaGraph_t g, body;
	cudaGraphConditionalHandle h;
	CHECK(cudaGraphCreate(&g, 0));
	CHECK(cudaGraphConditionalHandleCreate(&h, g, 1, cudaGraphCondAssignDefault));
	cudaGraphNode_t c;
	CHECK(add_cond(&c, g, NULL, h, cudaGraphCondTypeWhile, 1, &body));
	int l = M_LOOP;
	void *a[] = {&hits, &l};
	add_kernel(body, NULL, (void *)mark, a);
	cudaGraphExec_t x;
	CHECK(cudaGraphInstantiate(&x, g, 0));
	cudaError_t e = cudaGraphLaunch(x, 0);
	if (!e)
		e = cudaDeviceSynchronize();
	printf("RESULT graphs_cond endless=%s\n", cudaGetErrorName(e));
	// The context is gone; these free what the process holds of the graphs.
	cudaGraphExecDestroy(x);
	cudaGraphDestroy(g);
	return e == cudaErrorLaunchTimeout ? 0 : 1;
}

int main(int argc, char **argv)
{
	CHECK(cudaMalloc(&hits, NHITS * sizeof(int)));
	CHECK(cudaMalloc(&val, sizeof(int)));
	CHECK(cudaMalloc(&cnt, sizeof(int)));
	CHECK(cudaMalloc(&inner, sizeof(int)));
	if (argc > 1 && !strcmp(argv[1], "endless"))
		return endless();
	if_else();
	if_switch();
	nested_while();
	kept_value();
	captured();
	refusals();
	foreign_set();
	printf("RESULT graphs_cond checks=%d verified=%s\n", checks, ok ? "yes" : "no");
	return ok ? 0 : 1;
}
