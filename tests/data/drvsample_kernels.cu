/* SPDX-License-Identifier: Apache-2.0 */
// drvsample_kernels.cu - kernels for tests/samples/drvsample.c, loaded as a
// fatbin through the driver API (ds_work's modeled time: drvsample_simk.c).
#include <cooperative_groups.h>

// Writes v + i after about spin cycles (on the simulated driver: spin ns),
// i the thread's index over the whole grid, whatever its shape.
extern "C" __global__ void ds_work(int *p, int n, int v, long long spin)
{
	long long start = clock64();
	while (clock64() - start < spin) {
	}
	int block = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
	int i = block * blockDim.x * blockDim.y * blockDim.z + threadIdx.x +
		blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
	if (i < n)
		p[i] = v + i;
}

// Grid-wide: every block writes its slot, then reads its neighbour's.
extern "C" __global__ void ds_coop(int *slots, int *sums, int blocks)
{
	cooperative_groups::grid_group grid = cooperative_groups::this_grid();
	if (threadIdx.x == 0)
		slots[blockIdx.x] = (int)blockIdx.x + 1;
	grid.sync();
	if (threadIdx.x == 0)
		sums[blockIdx.x] = slots[blockIdx.x] + slots[(blockIdx.x + 1) % blocks];
}

// out[y * w + x] = the texel at (x, y), point-sampled.
extern "C" __global__ void ds_tex(unsigned long long tex, float *out, int w, int h)
{
	int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
	if (x < w && y < h)
		out[y * w + x] = tex2D<float>(tex, x + 0.5f, y + 0.5f);
}
