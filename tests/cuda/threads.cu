/* SPDX-License-Identifier: Apache-2.0 */
// threads.cu - one process, many host threads, each with its own stream,
// memory and kernels, all through the process's single channel; then a
// fork: the child gets a channel of its own and computes on its own, while
// the parent's state stays valid in the parent.
#include <cstdio>
#include <cstdlib>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

__global__ void scale(float *x, float factor, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        x[i] *= factor;
}

#define CHECK(call)                                                                           \
    do {                                                                                      \
        cudaError_t e_ = (call);                                                              \
        if (e_ != cudaSuccess) {                                                              \
            printf("FAIL line %d: %s: %s\n", __LINE__, #call, cudaGetErrorString(e_));       \
            return false;                                                                     \
        }                                                                                     \
    } while (0)

// Scales n values by (k + 1) `rounds` times on a private stream and checks them.
static bool worker(int k, int n, int rounds)
{
    std::vector<float> h(n);
    for (int i = 0; i < n; i++)
        h[i] = (float)(i % 97);
    float *d;
    cudaStream_t s;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CHECK(cudaMalloc(&d, n * sizeof(float)));
    CHECK(cudaMemcpyAsync(d, h.data(), n * sizeof(float), cudaMemcpyHostToDevice, s));
    for (int r = 0; r < rounds; r++) {
        scale<<<(n + 255) / 256, 256, 0, s>>>(d, (float)(k + 1), n);
        CHECK(cudaGetLastError());
    }
    CHECK(cudaMemcpyAsync(h.data(), d, n * sizeof(float), cudaMemcpyDeviceToHost, s));
    CHECK(cudaStreamSynchronize(s));
    float f = 1;
    for (int r = 0; r < rounds; r++)
        f *= (float)(k + 1);
    for (int i = 0; i < n; i++)
        if (h[i] != (float)(i % 97) * f) {
            printf("FAIL: thread %d element %d is %g, expected %g\n", k, i, h[i], (i % 97) * f);
            return false;
        }
    CHECK(cudaFree(d));
    CHECK(cudaStreamDestroy(s));
    return true;
}

int main()
{
    const int nthreads = 8;
    std::vector<std::thread> ts;
    std::vector<char> ok(nthreads, 0);
    for (int k = 0; k < nthreads; k++)
        ts.emplace_back([k, &ok] { ok[k] = worker(k, 50000 + 1000 * k, 3); });
    for (auto &t : ts)
        t.join();
    int failures = 0;
    for (int k = 0; k < nthreads; k++)
        failures += !ok[k];

    // State made before the fork stays the parent's.
    float *kept;
    if (cudaMalloc(&kept, 1024) != cudaSuccess)
        failures++;
    pid_t child = fork();
    if (child == 0)
        _exit(worker(1, 10000, 2) ? 0 : 1);
    int st = 0;
    waitpid(child, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        printf("FAIL: the forked child could not use CUDA\n");
        failures++;
    }
    if (!worker(2, 10000, 1) || cudaFree(kept) != cudaSuccess) {
        printf("FAIL: the parent lost its channel to the fork\n");
        failures++;
    }
    printf("RESULT workload=threads verified=%s threads=%d\n", failures ? "no" : "yes", nthreads);
    return failures ? 1 : 0;
}
