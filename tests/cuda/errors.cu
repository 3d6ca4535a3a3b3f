/* SPDX-License-Identifier: Apache-2.0 */
// errors.cu - CUDA's error semantics as a program sees them through xgpu:
// per-thread last error (cudaGetLastError resets, cudaPeekAtLastError does
// not), launch configuration errors reported by the launch (over the
// device's limits or the kernel's own: cudaErrorInvalidValue, as CUDA 13's
// runtime and driver 580 answer on an H100), each once and never sticky, invalid handles
// and pointers, cudaErrorNotReady not recorded, and a kernel's illegal
// address becoming sticky for the rest of the process.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

__global__ void fill(int *out, int n, int value)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		out[i] = value;
}

// Writes one element past what its caller allocates when asked to.
__global__ void poke(int *out, int where)
{
	out[where] = 1;
}

// Its launches may not have more than 128 threads per block.
__global__ void __launch_bounds__(128) bounded(int *out)
{
	out[blockIdx.x * blockDim.x + threadIdx.x] = 5;
}

static int failures;
#define EXPECT(expr, want)                                                                                   \
	do {                                                                                                 \
		cudaError_t got_ = (expr);                                                                   \
		if (got_ != (want)) {                                                                        \
			printf("FAIL line %d: %s returned %s, expected %s\n", __LINE__, #expr,               \
			       cudaGetErrorName(got_), cudaGetErrorName(want));                              \
			failures++;                                                                          \
		}                                                                                            \
	} while (0)

// Through cudaLaunchKernel, which returns the launch's own error.
static cudaError_t launch_fill(dim3 grid, dim3 block, size_t shared, int *out, int n, int value)
{
	void *args[] = {&out, &n, &value};
	return cudaLaunchKernel((const void *)fill, grid, block, args, shared, 0);
}

// After a refused launch the device still works: a valid launch writes value
// to all 64 elements of d.
static void expect_launch_works(int line, int *d, int value)
{
	int host[64];
	cudaError_t e = launch_fill(dim3(1), dim3(64), 0, d, 64, value);
	if (e == cudaSuccess)
		e = cudaMemcpy(host, d, sizeof host, cudaMemcpyDeviceToHost);
	if (e != cudaSuccess) {
		printf("FAIL line %d: a valid launch after a refused one: %s\n", line, cudaGetErrorName(e));
		failures++;
		return;
	}
	for (int i = 0; i < 64; i++)
		if (host[i] != value) {
			printf("FAIL line %d: after a refused launch element %d is %d\n", line, i, host[i]);
			failures++;
			return;
		}
}

// The launch returns want, the next cudaGetLastError returns it once, and
// the launch after works.
#define EXPECT_REFUSED(launch, want, d)                                                                      \
	do {                                                                                                 \
		EXPECT((launch), want);                                                                      \
		EXPECT(cudaPeekAtLastError(), want);                                                         \
		EXPECT(cudaGetLastError(), want);                                                            \
		EXPECT(cudaGetLastError(), cudaSuccess);                                                     \
		expect_launch_works(__LINE__, d, __LINE__);                                                  \
	} while (0)

// Refusals only the GPU's driver can make (the kernel's own limits). On a
// pipelined channel (xgpu's remote transport, or XGPU_PIPELINE=1) the launch
// is sent without waiting for its answer, so it returns cudaSuccess; the
// refusal comes with the next call that waits, cudaPeekAtLastError here, as
// CUDA reports an asynchronous failure.
static bool pipelined()
{
	const char *p = getenv("XGPU_PIPELINE");
	const char *r = getenv("XGPU_REMOTE");
	return p && *p ? strcmp(p, "0") != 0 : r && *r;
}
#define EXPECT_REFUSED_BY_DRIVER(launch, want, d)                                                            \
	do {                                                                                                 \
		cudaError_t launched_ = (launch);                                                            \
		EXPECT(launched_, pipelined() ? cudaSuccess : (want));                                       \
		EXPECT(cudaPeekAtLastError(), want);                                                         \
		EXPECT(cudaGetLastError(), want);                                                            \
		EXPECT(cudaGetLastError(), cudaSuccess);                                                     \
		expect_launch_works(__LINE__, d, __LINE__);                                                  \
	} while (0)

int main()
{
	int *d = nullptr;
	EXPECT(cudaMalloc(&d, 64 * sizeof(int)), cudaSuccess);
	EXPECT(cudaGetLastError(), cudaSuccess);

	// A zero-sized block is a configuration error: the launch records it.
	fill<<<1, 0>>>(d, 64, 1);
	EXPECT(cudaPeekAtLastError(), cudaErrorInvalidValue);
	EXPECT(cudaPeekAtLastError(), cudaErrorInvalidValue);
	EXPECT(cudaGetLastError(), cudaErrorInvalidValue);
	EXPECT(cudaGetLastError(), cudaSuccess);

	// Configurations no kernel can run with on this device.
	cudaDeviceProp prop;
	EXPECT(cudaGetDeviceProperties(&prop, 0), cudaSuccess);
	fill<<<1, 4096>>>(d, 64, 1);
	EXPECT(cudaGetLastError(), cudaErrorInvalidValue);
	EXPECT(cudaGetLastError(), cudaSuccess);
	expect_launch_works(__LINE__, d, 2);
	const cudaError_t config = cudaErrorInvalidValue;
	const unsigned max_threads = (unsigned)prop.maxThreadsPerBlock;
	EXPECT_REFUSED(launch_fill(dim3(1), dim3(4096), 0, d, 64, 1), config, d);
	EXPECT_REFUSED(launch_fill(dim3(0), dim3(64), 0, d, 64, 1), config, d);
	EXPECT_REFUSED(launch_fill(dim3(1, 0), dim3(64), 0, d, 64, 1), config, d);
	EXPECT_REFUSED(launch_fill(dim3(1), dim3(64, 1, 0), 0, d, 64, 1), config, d);
	EXPECT_REFUSED(launch_fill(dim3(1), dim3(prop.maxThreadsDim[0] + 1), 0, d, 64, 1), config, d);
	EXPECT_REFUSED(launch_fill(dim3(1), dim3(1, prop.maxThreadsDim[1] + 1), 0, d, 64, 1), config, d);
	EXPECT_REFUSED(launch_fill(dim3(1), dim3(1, 1, prop.maxThreadsDim[2] + 1), 0, d, 64, 1), config, d);
	// Every dimension within its maximum, too many threads in all.
	EXPECT_REFUSED(launch_fill(dim3(1), dim3(max_threads / 16, 16, 2), 0, d, 64, 1), config, d);
	EXPECT_REFUSED(launch_fill(dim3((unsigned)prop.maxGridSize[0] + 1), dim3(64), 0, d, 64, 1), config,
		       d);
	EXPECT_REFUSED(launch_fill(dim3(1, prop.maxGridSize[1] + 1), dim3(64), 0, d, 64, 1), config, d);
	EXPECT_REFUSED(launch_fill(dim3(1, 1, prop.maxGridSize[2] + 1), dim3(64), 0, d, 64, 1), config, d);
	// More shared memory than any block may have, opted in or not.
	EXPECT_REFUSED(launch_fill(dim3(1), dim3(64), prop.sharedMemPerBlockOptin + 1, d, 64, 1), config, d);
	// Within the device's limits but over the kernel's own: the driver
	// refuses them. Dynamic shared memory beyond the default needs opting in.
	const size_t beyond_default = prop.sharedMemPerBlock + 1024;
	EXPECT_REFUSED_BY_DRIVER(launch_fill(dim3(1), dim3(64), beyond_default, d, 64, 1), cudaErrorInvalidValue,
				 d);
	EXPECT(cudaFuncSetAttribute((const void *)fill, cudaFuncAttributeMaxDynamicSharedMemorySize,
				    (int)beyond_default),
	       cudaSuccess);
	EXPECT(launch_fill(dim3(1), dim3(64), beyond_default, d, 64, 3), cudaSuccess);
	EXPECT(cudaGetLastError(), cudaSuccess);
	// More threads than __launch_bounds__ allows.
	void *bounded_args[] = {&d};
	EXPECT_REFUSED_BY_DRIVER(cudaLaunchKernel((const void *)bounded, dim3(1), dim3(256), bounded_args, 0, 0),
				 cudaErrorInvalidValue, d);
	bounded<<<1, 64>>>(d);
	EXPECT(cudaGetLastError(), cudaSuccess);
	int bounded_out[64];
	EXPECT(cudaMemcpy(bounded_out, d, sizeof bounded_out, cudaMemcpyDeviceToHost), cudaSuccess);
	for (int i = 0; i < 64; i++)
		if (bounded_out[i] != 5) {
			printf("FAIL: bounded left element %d at %d\n", i, bounded_out[i]);
			failures++;
			break;
		}

	// The last error is per thread.
	fill<<<1, 0>>>(d, 64, 1);
	std::thread other([] {
		if (cudaGetLastError() != cudaSuccess) {
			printf("FAIL: another thread saw this thread's error\n");
			failures++;
		}
	});
	other.join();
	EXPECT(cudaGetLastError(), cudaErrorInvalidValue);

	// Bad arguments and handles.
	EXPECT(cudaFree((void *)0x1234), cudaErrorInvalidValue);
	EXPECT(cudaGetLastError(), cudaErrorInvalidValue);
	// A made-up stream handle: xgpu looks every handle up, NVIDIA's runtime
	// follows it as a pointer and crashes, so gpu-validate's native
	// reference run (XGPU_VALIDATE_NATIVE) leaves it out.
	if (!getenv("XGPU_VALIDATE_NATIVE")) {
		cudaStream_t bogus = (cudaStream_t)0x7777000000001ull;
		EXPECT(cudaStreamSynchronize(bogus), cudaErrorInvalidResourceHandle);
	}
	int host[64];
	EXPECT(cudaMemcpy(host, d + 60, 16 * sizeof(int), cudaMemcpyDeviceToHost), cudaErrorInvalidValue);
	EXPECT(cudaMemcpy(host, d, sizeof host, (cudaMemcpyKind)42), cudaErrorInvalidMemcpyDirection);
	EXPECT(cudaSetDevice(1), cudaErrorInvalidDevice);
	cudaGetLastError();

	// A good launch and its result.
	fill<<<1, 64>>>(d, 64, 7);
	EXPECT(cudaGetLastError(), cudaSuccess);
	EXPECT(cudaMemcpy(host, d, sizeof host, cudaMemcpyDeviceToHost), cudaSuccess);
	for (int i = 0; i < 64; i++)
		if (host[i] != 7) {
			printf("FAIL: element %d is %d\n", i, host[i]);
			failures++;
			break;
		}

	// cudaErrorNotReady is an answer, not an error: never recorded.
	cudaEvent_t ev;
	EXPECT(cudaEventCreate(&ev), cudaSuccess);
	cudaError_t q = cudaEventQuery(ev);
	if (q != cudaSuccess && q != cudaErrorNotReady) {
		printf("FAIL: cudaEventQuery on an unrecorded event: %s\n", cudaGetErrorName(q));
		failures++;
	}
	EXPECT(cudaGetLastError(), cudaSuccess);
	EXPECT(cudaEventDestroy(ev), cudaSuccess);

	// Names and strings.
	if (strcmp(cudaGetErrorName(cudaErrorMemoryAllocation), "cudaErrorMemoryAllocation") != 0 ||
	    strlen(cudaGetErrorString(cudaErrorMemoryAllocation)) == 0) {
		printf("FAIL: error names\n");
		failures++;
	}

	// An illegal address inside a kernel is sticky: every later call that
	// touches the device fails with it.
	poke<<<1, 1>>>(d, 1 << 28);
	EXPECT(cudaDeviceSynchronize(), cudaErrorIllegalAddress);
	EXPECT(cudaMemcpy(host, d, sizeof(int), cudaMemcpyDeviceToHost), cudaErrorIllegalAddress);
	int *d2 = nullptr;
	EXPECT(cudaMalloc(&d2, 16), cudaErrorIllegalAddress);

	printf("RESULT workload=errors verified=%s failures=%d\n", failures ? "no" : "yes", failures);
	return failures ? 1 : 0;
}
