/* SPDX-License-Identifier: Apache-2.0 */
// limits.cu - what a domain may hold besides cudaMalloc memory, as a program
// sees it under xgpud --mem-limit 64M --pinned-limit 8M: pinned allocations
// past the budget fail with cudaErrorMemoryAllocation, again and again, and
// the process goes on working; device heap size beyond the domain's memory
// is refused; and an illegal address stays the answer of cudaGetLastError.
#include <cstdio>
#include <cstring>

static int failures;
#define EXPECT(expr, want)                                                                        \
    do {                                                                                          \
        cudaError_t got_ = (expr);                                                                \
        if (got_ != (want)) {                                                                     \
            printf("FAIL line %d: %s returned %s, expected %s\n", __LINE__, #expr,                \
                   cudaGetErrorName(got_), cudaGetErrorName(want));                               \
            failures++;                                                                           \
        }                                                                                         \
    } while (0)

int main()
{
    // Twenty refusals in a row (more than the daemon keeps unclaimed
    // shares for) must not cost the process its channel.
    for (int i = 0; i < 20; i++) {
        void *big = nullptr;
        EXPECT(cudaMallocHost(&big, 16 << 20), cudaErrorMemoryAllocation);
        if (big)
            failures++;
    }
    cudaGetLastError();
    char *pinned = nullptr;
    EXPECT(cudaMallocHost((void **)&pinned, 1 << 20), cudaSuccess);
    char *dev = nullptr;
    EXPECT(cudaMalloc(&dev, 1 << 20), cudaSuccess);
    if (pinned && dev) {
        memset(pinned, 0x5a, 1 << 20);
        EXPECT(cudaMemcpy(dev, pinned, 1 << 20, cudaMemcpyHostToDevice), cudaSuccess);
        memset(pinned, 0, 1 << 20);
        EXPECT(cudaMemcpy(pinned, dev, 1 << 20, cudaMemcpyDeviceToHost), cudaSuccess);
        if (pinned[0] != 0x5a || pinned[(1 << 20) - 1] != 0x5a) {
            printf("FAIL: pinned round trip\n");
            failures++;
        }
    }

    // The device heap is device memory: it counts against the domain.
    EXPECT(cudaDeviceSetLimit(cudaLimitMallocHeapSize, 256u << 20), cudaErrorMemoryAllocation);
    EXPECT(cudaDeviceSetLimit(cudaLimitMallocHeapSize, 16u << 20), cudaSuccess);
    size_t heap = 0;
    EXPECT(cudaDeviceGetLimit(&heap, cudaLimitMallocHeapSize), cudaSuccess);
    if (heap < (16u << 20)) {
        printf("FAIL: heap limit reads %zu\n", heap);
        failures++;
    }
    // With 16M of heap charged, 60M more is over the 64M limit.
    void *more = nullptr;
    EXPECT(cudaMalloc(&more, 60u << 20), cudaErrorMemoryAllocation);
    cudaGetLastError();

    cudaFree(dev);
    cudaFreeHost(pinned);
    printf("RESULT workload=limits verified=%s\n", failures ? "no" : "yes");
    return failures ? 1 : 0;
}
