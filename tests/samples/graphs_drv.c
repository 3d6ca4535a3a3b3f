/* SPDX-License-Identifier: Apache-2.0 */
/* graphs_drv.c - graphs through the driver API only (linked against the
 * toolkit's stub libcuda.so, run against xgpu's): an explicit graph of
 * host-to-device copy, kernels (kernelParams and extra), memset, a child
 * graph and a device-to-host copy, then the same pipeline captured from a
 * stream with cuStreamBeginCapture; each launched several times with results
 * checked, and a synchronous copy during a capture refused.
 *   graphs_drv KERNELS.fatbin   (tests/samples/graphs.cu's device code) */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DRV_PROGRAM "graphs_drv"
#include "../cuda/drvcheck.h"

#define N 2048

static CUDA_KERNEL_NODE_PARAMS kparams(CUfunction f, void **args, void **extra)
{
	CUDA_KERNEL_NODE_PARAMS p;
	memset(&p, 0, sizeof p);
	p.func = f;
	p.gridDimX = (N + 127) / 128;
	p.gridDimY = p.gridDimZ = 1;
	p.blockDimX = 128;
	p.blockDimY = p.blockDimZ = 1;
	p.kernelParams = args;
	p.extra = extra;
	return p;
}

static CUDA_MEMCPY3D copy1d(CUmemorytype dt, void *dh, CUdeviceptr dd, CUmemorytype st, const void *sh,
			    CUdeviceptr sd, size_t bytes)
{
	CUDA_MEMCPY3D c;
	memset(&c, 0, sizeof c);
	c.dstMemoryType = dt;
	c.dstHost = dh;
	c.dstDevice = dd;
	c.srcMemoryType = st;
	c.srcHost = sh;
	c.srcDevice = sd;
	c.WidthInBytes = bytes;
	c.Height = c.Depth = 1;
	return c;
}

static int verify(const char *what, int it, const int *in, const int *out)
{
	for (int i = 0; i < N; i++)
		if (out[i] != 4 * in[i] + 9) {
			fprintf(stderr, "graphs_drv: %s launch %d: out[%d] = %d, want %d\n", what, it, i,
				out[i], 4 * in[i] + 9);
			return 1;
		}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: graphs_drv KERNELS.fatbin\n");
		return 2;
	}
	CUdevice dev;
	CUcontext ctx;
	CUmodule mod;
	CUfunction scale, add;
	CHECK(cuInit(0));
	CHECK(cuDeviceGet(&dev, 0));
	CHECK(cuCtxCreate(&ctx, NULL, 0, dev));
	void *image = read_file(argv[1]);
	CHECK(cuModuleLoadData(&mod, image));
	CHECK(cuModuleGetFunction(&scale, mod, "gk_scale"));
	CHECK(cuModuleGetFunction(&add, mod, "gk_add"));
	CUdeviceptr d;
	CHECK(cuMemAlloc(&d, N * sizeof(int)));
	CUstream s;
	CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	static int in[N], out[N];
	int n = N, four = 4, nine = 9;

	/* out = (in * 4) + 9, the + 9 in a child graph launched with extra. */
	CUgraph child, g;
	CUgraphNode k_add, h2d, k_scale, sub, d2h;
	CHECK(cuGraphCreate(&child, 0));
	struct {
		CUdeviceptr x;
		int c, n;
	} add_buf = {d, nine, n};
	size_t add_size = sizeof add_buf;
	void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &add_buf, CU_LAUNCH_PARAM_BUFFER_SIZE, &add_size,
			 CU_LAUNCH_PARAM_END};
	CUDA_KERNEL_NODE_PARAMS kp = kparams(add, NULL, extra);
	CHECK(cuGraphAddKernelNode(&k_add, child, NULL, 0, &kp));
	CHECK(cuGraphCreate(&g, 0));
	CUDA_MEMCPY3D cp = copy1d(CU_MEMORYTYPE_DEVICE, NULL, d, CU_MEMORYTYPE_HOST, in, 0, sizeof in);
	CHECK(cuGraphAddMemcpyNode(&h2d, g, NULL, 0, &cp, ctx));
	void *scale_args[] = {&d, &four, &n};
	kp = kparams(scale, scale_args, NULL);
	CHECK(cuGraphAddKernelNode(&k_scale, g, &h2d, 1, &kp));
	CHECK(cuGraphAddChildGraphNode(&sub, g, &k_scale, 1, child));
	cp = copy1d(CU_MEMORYTYPE_HOST, out, 0, CU_MEMORYTYPE_DEVICE, NULL, d, sizeof out);
	CHECK(cuGraphAddMemcpyNode(&d2h, g, &sub, 1, &cp, ctx));
	CUgraphExec exec;
	CHECK(cuGraphInstantiate(&exec, g, 0));
	for (int it = 0; it < 4; it++) {
		for (int i = 0; i < N; i++)
			in[i] = i * 3 - it;
		CHECK(cuGraphLaunch(exec, s));
		CHECK(cuStreamSynchronize(s));
		if (verify("explicit", it, in, out))
			return 1;
	}
	CHECK(cuGraphExecDestroy(exec));
	CHECK(cuGraphDestroy(g));
	CHECK(cuGraphDestroy(child));

	/* The same pipeline captured. */
	CHECK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
	CHECK(cuMemcpyHtoDAsync(d, in, sizeof in, s));
	CHECK(cuLaunchKernel(scale, (N + 127) / 128, 1, 1, 128, 1, 1, 0, s, scale_args, NULL));
	CHECK(cuLaunchKernel(add, (N + 127) / 128, 1, 1, 128, 1, 1, 0, s, NULL, extra));
	CHECK(cuMemcpyDtoHAsync(out, d, sizeof out, s));
	CUstreamCaptureStatus st;
	CHECK(cuStreamIsCapturing(s, &st));
	if (st != CU_STREAM_CAPTURE_STATUS_ACTIVE) {
		fprintf(stderr, "graphs_drv: the stream is not capturing\n");
		return 1;
	}
	CHECK(cuStreamEndCapture(s, &g));
	CHECK(cuGraphInstantiateWithFlags(&exec, g, 0));
	for (int it = 0; it < 4; it++) {
		for (int i = 0; i < N; i++)
			in[i] = 1000 - i + it;
		CHECK(cuGraphLaunch(exec, s));
		CHECK(cuStreamSynchronize(s));
		if (verify("captured", it, in, out))
			return 1;
	}
	CHECK(cuGraphExecDestroy(exec));
	CHECK(cuGraphDestroy(g));

	/* A synchronous copy beside a capture on a non-blocking stream runs
	 * (as on NVIDIA's driver 580); synchronizing the capturing stream is
	 * refused and voids the capture. */
	CHECK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
	CHECK(cuMemcpyDtoH(out, d, sizeof out));
	if (cuStreamSynchronize(s) != CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED ||
	    cuStreamEndCapture(s, &g) != CUDA_ERROR_STREAM_CAPTURE_INVALIDATED) {
		fprintf(stderr, "graphs_drv: synchronizing a capturing stream was not refused\n");
		return 1;
	}

	CHECK(cuStreamDestroy(s));
	CHECK(cuMemFree(d));
	CHECK(cuModuleUnload(mod));
	free(image);
	CHECK(cuCtxDestroy(ctx));
	printf("graphs_drv: OK\n");
	return 0;
}
