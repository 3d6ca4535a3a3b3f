/* SPDX-License-Identifier: Apache-2.0 */
// simdrv_kernels.cu - device code for test_simdrv (the simulated driver's
// unit test). Built into a fatbin, a cubin and PTX; the host implementations
// the simulated driver runs are in simdrv_kernels_simk.c.

// Device variables: cuModuleGetGlobal must find them with these sizes and
// initial values.
__device__ int dev_counter;
__device__ float dev_table[4] = {1.0f, 2.0f, 3.0f, 4.0f};
__constant__ float dev_scale = 2.5f;

// y = a * x + y over n elements.
extern "C" __global__ void saxpy(int n, float a, const float *x, float *y)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		y[i] = a * x[i] + y[i];
}

// Writes v to p[0, n), after spinning about ns nanoseconds (the simulated
// driver models the kernel as taking ns).
extern "C" __global__ void fill_u32(unsigned *p, unsigned v, unsigned long long n, unsigned long long ns)
{
	unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
	if (i == 0) {
		unsigned long long t0 = clock64();
		while (clock64() - t0 < ns)
			;
	}
	__syncthreads();
	if (i < n)
		p[i] = v;
}

// Writes v through a pointer parameter (C++ name, mangled: _Z5storePii).
__global__ void store(int *p, int v)
{
	*p = v;
}

// No host implementation: takes its modeled time, computes nothing.
extern "C" __global__ void no_impl(float *p)
{
	p[blockIdx.x * blockDim.x + threadIdx.x] *= 2.0f;
}

// __launch_bounds__ caps the block size at 256 threads; reads the variables.
extern "C" __global__ void __launch_bounds__(256) bounded(float *p)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	p[i] = dev_table[i % 4] * dev_scale + dev_counter;
}

// 4 KiB of static shared memory.
extern "C" __global__ void shared_k(float *p)
{
	__shared__ float s[1024];
	s[threadIdx.x] = p[threadIdx.x];
	__syncthreads();
	p[threadIdx.x] = s[1023 - threadIdx.x];
}
