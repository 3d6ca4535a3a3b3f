// errors.cu - CUDA's error semantics as a program sees them through xgpu:
// per-thread last error (cudaGetLastError resets, cudaPeekAtLastError does
// not), launch configuration errors reported by the launch, invalid handles
// and pointers, cudaErrorNotReady not recorded, and a kernel's illegal
// address becoming sticky for the rest of the process.
#include <cstdio>
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

int main()
{
	int *d = nullptr;
	EXPECT(cudaMalloc(&d, 64 * sizeof(int)), cudaSuccess);
	EXPECT(cudaGetLastError(), cudaSuccess);

	// A zero-sized block is a configuration error: the launch records it.
	fill<<<1, 0>>>(d, 64, 1);
	EXPECT(cudaPeekAtLastError(), cudaErrorInvalidConfiguration);
	EXPECT(cudaPeekAtLastError(), cudaErrorInvalidConfiguration);
	EXPECT(cudaGetLastError(), cudaErrorInvalidConfiguration);
	EXPECT(cudaGetLastError(), cudaSuccess);

	// The last error is per thread.
	fill<<<1, 0>>>(d, 64, 1);
	std::thread other([] {
		if (cudaGetLastError() != cudaSuccess) {
			printf("FAIL: another thread saw this thread's error\n");
			failures++;
		}
	});
	other.join();
	EXPECT(cudaGetLastError(), cudaErrorInvalidConfiguration);

	// Bad arguments and handles.
	EXPECT(cudaFree((void *)0x1234), cudaErrorInvalidValue);
	EXPECT(cudaGetLastError(), cudaErrorInvalidValue);
	cudaStream_t bogus = (cudaStream_t)0x7777000000001ull;
	EXPECT(cudaStreamSynchronize(bogus), cudaErrorInvalidResourceHandle);
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
