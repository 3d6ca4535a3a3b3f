/* SPDX-License-Identifier: Apache-2.0 */
// bigglobal.cu - a module whose variables are bigger than the domain may
// hold: under xgpud --mem-limit 64M its first launch fails with
// cudaErrorMemoryAllocation instead of taking 128 MiB of the GPU, and the
// process goes on working.
#include <cstdio>

__device__ char big[128 << 20];
__global__ void touch(int v) { big[v] = 1; }

int main()
{
    touch<<<1, 1>>>(7);
    cudaError_t e = cudaGetLastError();
    void *p = nullptr;
    cudaError_t after = cudaMalloc(&p, 1 << 20);
    bool ok = e == cudaErrorMemoryAllocation && after == cudaSuccess;
    if (!ok)
        printf("FAIL: launch returned %s, a later cudaMalloc %s\n", cudaGetErrorName(e), cudaGetErrorName(after));
    cudaFree(p);
    printf("RESULT workload=bigglobal verified=%s\n", ok ? "yes" : "no");
    return ok ? 0 : 1;
}
