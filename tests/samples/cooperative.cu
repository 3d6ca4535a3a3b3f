/* SPDX-License-Identifier: Apache-2.0 */
// cooperative.cu - cooperative launches (cudaLaunchCooperativeKernel and
// cudaLaunchKernelEx with the cooperative attribute): a grid as large as
// fits on the device at once runs, with a grid-wide barrier between its two
// phases; one block more is refused with cudaErrorCooperativeLaunchTooLarge.
#include <cooperative_groups.h>
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#include "sample.h"

namespace cg = cooperative_groups;

static bool ok = true;
static int checks; // counted by TRUE

#define THREADS 256

// Phase 1: each block writes its index. Barrier. Phase 2: each block reads
// its neighbour's entry (written by another block: only correct if every
// block passed phase 1 first) and stores the sum.
__global__ void coop_neighbours(int *slots, int *sums, int blocks)
{
	cg::grid_group grid = cg::this_grid();
	if (threadIdx.x == 0)
		slots[blockIdx.x] = (int)blockIdx.x + 1;
	grid.sync();
	if (threadIdx.x == 0)
		sums[blockIdx.x] = slots[blockIdx.x] + slots[(blockIdx.x + 1) % blocks];
}

static bool verify(const int *sums, int blocks)
{
	for (int b = 0; b < blocks; b++)
		if (sums[b] != (b + 1) + ((b + 1) % blocks + 1)) {
			printf("block %d summed %d\n", b, sums[b]);
			return false;
		}
	return true;
}

int main()
{
	int coop = 0, sms = 0, per_sm = 0;
	CHECK(cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, 0));
	CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
	TRUE(coop == 1);
	CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, coop_neighbours, THREADS, 0));
	TRUE(per_sm > 0);
	int blocks = per_sm * sms;
	int *slots, *sums;
	CHECK(cudaMalloc(&slots, (blocks + 1) * sizeof(int)));
	CHECK(cudaMalloc(&sums, (blocks + 1) * sizeof(int)));
	int *h = (int *)calloc(blocks + 1, sizeof(int));

	void *args[] = {&slots, &sums, &blocks};
	CHECK(cudaLaunchCooperativeKernel((void *)coop_neighbours, blocks, THREADS, args, 0, 0));
	CHECK(cudaMemcpy(h, sums, blocks * sizeof(int), cudaMemcpyDeviceToHost));
	TRUE(verify(h, blocks));
	long long sum = 0;
	for (int b = 0; b < blocks; b++)
		sum += h[b];

	// One block more than fits: refused, and not sticky.
	int more = blocks + 1;
	void *args_more[] = {&slots, &sums, &more};
	TRUE(cudaLaunchCooperativeKernel((void *)coop_neighbours, more, THREADS, args_more, 0, 0) ==
	     cudaErrorCooperativeLaunchTooLarge);
	TRUE(cudaGetLastError() == cudaErrorCooperativeLaunchTooLarge);
	TRUE(cudaGetLastError() == cudaSuccess);

	// The same through cudaLaunchKernelEx and its cooperative attribute.
	CHECK(cudaMemset(sums, 0, blocks * sizeof(int)));
	cudaLaunchAttribute attr;
	attr.id = cudaLaunchAttributeCooperative;
	attr.val.cooperative = 1;
	cudaLaunchConfig_t cfg = {};
	cfg.gridDim = dim3(blocks);
	cfg.blockDim = dim3(THREADS);
	cfg.attrs = &attr;
	cfg.numAttrs = 1;
	CHECK(cudaLaunchKernelEx(&cfg, coop_neighbours, slots, sums, blocks));
	CHECK(cudaMemcpy(h, sums, blocks * sizeof(int), cudaMemcpyDeviceToHost));
	TRUE(verify(h, blocks));
	cfg.gridDim = dim3(more);
	TRUE(cudaLaunchKernelEx(&cfg, coop_neighbours, slots, sums, more) ==
	     cudaErrorCooperativeLaunchTooLarge);
	cudaGetLastError();
	// Without the attribute the same grid is an ordinary launch.
	attr.val.cooperative = 0;
	cfg.gridDim = dim3(1);
	int one = 1;
	CHECK(cudaLaunchKernelEx(&cfg, coop_neighbours, slots, sums, one));
	CHECK(cudaDeviceSynchronize());

	free(h);
	CHECK(cudaFree(slots));
	CHECK(cudaFree(sums));
	printf("RESULT cooperative verified=%s checksum=%lld\n", ok ? "yes" : "no", sum);
	return ok ? 0 : 1;
}
