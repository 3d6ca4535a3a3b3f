/* SPDX-License-Identifier: Apache-2.0 */
// mempool.cu - stream-ordered allocation: cudaMallocAsync/cudaFreeAsync on
// several streams in a loop with kernels using the memory (results
// verified), pool attributes read back, reuse on the same stream, across
// streams after completion, behind internal and user event dependencies,
// the release threshold at synchronisation, trimming, pools of one's own,
// pointer attributes and cudaMemcpyDefault of pool memory, and the driver
// API's forms on the same pools (through cudaGetDriverEntryPoint, as a
// -cudart shared program reaches the driver).
//
//   mempool          the checks above
//   mempool limit    under a 64 MiB domain limit: cached pool memory goes
//                    back before an allocation fails, and one beyond the
//                    limit fails with cudaErrorMemoryAllocation
#include <atomic>
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda_runtime.h>
#include <thread>

#include "sample.h"

// Atomic: the threads check too.
static std::atomic<bool> ok{true};
static std::atomic<long long> checks;

__global__ void mp_fill(int *p, int n, int v)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		p[i] = v + i;
}

__global__ void mp_add(int *out, const int *a, const int *b, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		out[i] = a[i] + b[i];
}

// mp_fill that keeps the device busy for us microseconds (on the simulated
// driver; on a GPU it is as quick as mp_fill).
__global__ void mp_slow(int *p, int n, int v, int us)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		p[i] = v + i + 0 * us;
}

static unsigned blocks(int n)
{
	return (unsigned)((n + 255) / 256);
}

static uint64_t attr64(cudaMemPool_t pool, cudaMemPoolAttr attr)
{
	uint64_t v = ~0ull;
	EXPECT(cudaMemPoolGetAttribute(pool, attr, &v), cudaSuccess);
	return v;
}

static void set64(cudaMemPool_t pool, cudaMemPoolAttr attr, uint64_t v)
{
	EXPECT(cudaMemPoolSetAttribute(pool, attr, &v), cudaSuccess);
}

static void set_flag(cudaMemPool_t pool, cudaMemPoolAttr attr, int v)
{
	EXPECT(cudaMemPoolSetAttribute(pool, attr, &v), cudaSuccess);
}

// Device memory [p, p + n) holds v + i.
static bool holds(const int *p, int n, int v)
{
	int *h = (int *)malloc(n * sizeof(int));
	bool same = h && cudaMemcpy(h, p, n * sizeof(int), cudaMemcpyDeviceToHost) == cudaSuccess;
	for (int i = 0; same && i < n; i++)
		same = h[i] == v + i;
	free(h);
	return same;
}

static cudaMemPool_t new_pool(size_t max_size)
{
	cudaMemPoolProps props;
	memset(&props, 0, sizeof props);
	props.allocType = cudaMemAllocationTypePinned;
	props.location.type = cudaMemLocationTypeDevice;
	props.location.id = 0;
	props.maxSize = max_size;
	cudaMemPool_t pool = NULL;
	EXPECT(cudaMemPoolCreate(&pool, &props), cudaSuccess);
	return pool;
}

// Allocations and frees on several streams, every buffer used by kernels
// and checked; returns the sum of all results.
static long long stream_loop(cudaStream_t *streams, int nstreams)
{
	const int rounds = 24, maxn = 3 * 4096;
	int *results;
	EXPECT(cudaMallocHost(&results, (size_t)rounds * maxn * sizeof(int)), cudaSuccess);
	for (int r = 0; r < rounds; r++) {
		cudaStream_t s = streams[r % nstreams];
		int n = 4096 * (1 + r % 3);
		int *a = NULL, *b = NULL, *sum = NULL;
		EXPECT(cudaMallocAsync(&a, n * sizeof(int), s), cudaSuccess);
		EXPECT(cudaMallocAsync((void **)&b, n * sizeof(int), s), cudaSuccess);
		EXPECT(cudaMallocAsync(&sum, n * sizeof(int), s), cudaSuccess);
		mp_fill<<<blocks(n), 256, 0, s>>>(a, n, r);
		mp_fill<<<blocks(n), 256, 0, s>>>(b, n, 2 * r);
		mp_add<<<blocks(n), 256, 0, s>>>(sum, a, b, n);
		EXPECT(cudaMemcpyAsync(results + (size_t)r * maxn, sum, n * sizeof(int),
				       cudaMemcpyDeviceToHost, s),
		       cudaSuccess);
		EXPECT(cudaFreeAsync(a, s), cudaSuccess);
		EXPECT(cudaFreeAsync(b, s), cudaSuccess);
		EXPECT(cudaFreeAsync(sum, s), cudaSuccess);
	}
	EXPECT(cudaDeviceSynchronize(), cudaSuccess);
	long long total = 0;
	for (int r = 0; r < rounds; r++) {
		int n = 4096 * (1 + r % 3);
		bool right = true;
		for (int i = 0; i < n; i++) {
			int got = results[(size_t)r * maxn + i];
			right = right && got == 3 * r + 2 * i;
			total += got;
		}
		TRUE(right);
	}
	EXPECT(cudaFreeHost(results), cudaSuccess);
	return total;
}

static void reuse(cudaStream_t s1, cudaStream_t s2)
{
	const int n = 16384; // 64 KiB
	const size_t bytes = n * sizeof(int);
	cudaMemPool_t pool = new_pool(0);
	set64(pool, cudaMemPoolAttrReleaseThreshold, UINT64_MAX);

	// Same stream: stream order makes the freed block usable at once, with
	// work still running before the free and no reuse across streams allowed.
	int *x = NULL, *y = NULL, *z = NULL, *w = NULL;
	set_flag(pool, cudaMemPoolReuseAllowOpportunistic, 0);
	set_flag(pool, cudaMemPoolReuseAllowInternalDependencies, 0);
	EXPECT(cudaMallocFromPoolAsync(&x, bytes, pool, s1), cudaSuccess);
	mp_slow<<<blocks(n), 256, 0, s1>>>(x, n, 1, 20000);
	EXPECT(cudaFreeAsync(x, s1), cudaSuccess);
	EXPECT(cudaMallocFromPoolAsync(&y, bytes, pool, s1), cudaSuccess);
	TRUE(y == x);

	// Another stream, no reuse allowed across streams: a new block.
	mp_slow<<<blocks(n), 256, 0, s1>>>(y, n, 1, 20000);
	EXPECT(cudaFreeAsync(y, s1), cudaSuccess);
	EXPECT(cudaMallocFromPoolAsync(&z, bytes, pool, s2), cudaSuccess);
	TRUE(z != y);
	TRUE(attr64(pool, cudaMemPoolAttrReservedMemCurrent) == 2 * bytes);
	TRUE(attr64(pool, cudaMemPoolAttrUsedMemCurrent) == bytes);

	// Opportunistic: once the free has completed, another stream gets it.
	set_flag(pool, cudaMemPoolReuseAllowOpportunistic, 1);
	EXPECT(cudaStreamSynchronize(s1), cudaSuccess);
	TRUE(attr64(pool, cudaMemPoolAttrReservedMemCurrent) == 2 * bytes); // above no threshold
	EXPECT(cudaMallocFromPoolAsync(&w, bytes, pool, s2), cudaSuccess);
	TRUE(w == y);
	EXPECT(cudaFreeAsync(z, s2), cudaSuccess);
	EXPECT(cudaFreeAsync(w, s2), cudaSuccess);

	// Internal dependencies: a block freed behind slow work on s1 goes to
	// s2 at once, and s2's use of it waits for s1's.
	set_flag(pool, cudaMemPoolReuseAllowOpportunistic, 0);
	set_flag(pool, cudaMemPoolReuseAllowInternalDependencies, 1);
	int *r = NULL, *q = NULL, *keep = NULL;
	EXPECT(cudaMalloc(&keep, 4 * bytes), cudaSuccess);
	EXPECT(cudaMallocFromPoolAsync(&r, 4 * bytes, pool, s1), cudaSuccess);
	mp_slow<<<blocks(4 * n), 256, 0, s1>>>(r, 4 * n, 5, 30000);
	EXPECT(cudaMemcpyAsync(keep, r, 4 * bytes, cudaMemcpyDeviceToDevice, s1), cudaSuccess);
	EXPECT(cudaFreeAsync(r, s1), cudaSuccess);
	EXPECT(cudaMallocFromPoolAsync(&q, 4 * bytes, pool, s2), cudaSuccess);
	TRUE(q == r);
	mp_fill<<<blocks(4 * n), 256, 0, s2>>>(q, 4 * n, 7);
	EXPECT(cudaStreamSynchronize(s2), cudaSuccess);
	TRUE(holds(keep, 4 * n, 5));
	TRUE(holds(q, 4 * n, 7));
	EXPECT(cudaFreeAsync(q, s2), cudaSuccess);

	// The program's own event dependency, default reuse flags.
	set_flag(pool, cudaMemPoolReuseAllowOpportunistic, 1);
	cudaEvent_t ev;
	EXPECT(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming), cudaSuccess);
	int *t = NULL, *u = NULL;
	EXPECT(cudaMallocFromPoolAsync(&t, 2 * bytes, pool, s1), cudaSuccess);
	mp_slow<<<blocks(2 * n), 256, 0, s1>>>(t, 2 * n, 11, 20000);
	EXPECT(cudaMemcpyAsync(keep, t, 2 * bytes, cudaMemcpyDeviceToDevice, s1), cudaSuccess);
	EXPECT(cudaFreeAsync(t, s1), cudaSuccess);
	EXPECT(cudaEventRecord(ev, s1), cudaSuccess);
	EXPECT(cudaStreamWaitEvent(s2, ev, 0), cudaSuccess);
	EXPECT(cudaMallocFromPoolAsync(&u, 2 * bytes, pool, s2), cudaSuccess);
	TRUE(u == t);
	mp_fill<<<blocks(2 * n), 256, 0, s2>>>(u, 2 * n, 13);
	EXPECT(cudaDeviceSynchronize(), cudaSuccess);
	TRUE(holds(keep, 2 * n, 11));
	TRUE(holds(u, 2 * n, 13));

	// Trim: everything but u is cached and complete. (u may have got a
	// larger cached block than it asked for, up to twice its size.)
	uint64_t used = attr64(pool, cudaMemPoolAttrUsedMemCurrent);
	TRUE(used >= 2 * bytes && used <= 4 * bytes);
	TRUE(attr64(pool, cudaMemPoolAttrReservedMemCurrent) > used);
	EXPECT(cudaMemPoolTrimTo(pool, 0), cudaSuccess);
	TRUE(attr64(pool, cudaMemPoolAttrReservedMemCurrent) == used);
	TRUE(attr64(pool, cudaMemPoolAttrUsedMemHigh) >= 4 * bytes);
	set64(pool, cudaMemPoolAttrUsedMemHigh, 0);
	TRUE(attr64(pool, cudaMemPoolAttrUsedMemHigh) == used);
	uint64_t bad = 1;
	EXPECT(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReservedMemHigh, &bad), cudaErrorInvalidValue);
	EXPECT(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &bad), cudaErrorInvalidValue);

	// Trim to a size: three blocks cached, one kept.
	int *m[3];
	EXPECT(cudaFreeAsync(u, s2), cudaSuccess);
	for (int i = 0; i < 3; i++)
		EXPECT(cudaMallocFromPoolAsync(&m[i], bytes, pool, s1), cudaSuccess);
	for (int i = 0; i < 3; i++)
		EXPECT(cudaFreeAsync(m[i], s1), cudaSuccess);
	EXPECT(cudaStreamSynchronize(s1), cudaSuccess);
	EXPECT(cudaStreamSynchronize(s2), cudaSuccess);
	EXPECT(cudaMemPoolTrimTo(pool, bytes), cudaSuccess);
	TRUE(attr64(pool, cudaMemPoolAttrReservedMemCurrent) <= bytes);
	TRUE(attr64(pool, cudaMemPoolAttrUsedMemCurrent) == 0);

	// Destroyed with an allocation outstanding: the allocation stays usable
	// until freed, the handle is gone at once.
	int *late = NULL;
	EXPECT(cudaMallocFromPoolAsync(&late, bytes, pool, s1), cudaSuccess);
	EXPECT(cudaMemPoolDestroy(pool), cudaSuccess);
	uint64_t v;
	EXPECT(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &v), cudaErrorInvalidValue);
	mp_fill<<<blocks(n), 256, 0, s1>>>(late, n, 17);
	TRUE(holds(late, n, 17));
	EXPECT(cudaFreeAsync(late, s1), cudaSuccess);
	EXPECT(cudaStreamSynchronize(s1), cudaSuccess);
	EXPECT(cudaEventDestroy(ev), cudaSuccess);
	EXPECT(cudaFree(keep), cudaSuccess);
}

// Threads allocating and freeing on streams of their own at once: the
// pools are shared by the whole process.
static long long threads_at_once()
{
	const int nthreads = 4, rounds = 16, n = 2048;
	long long sums[nthreads] = {0};
	std::thread workers[nthreads];
	for (int t = 0; t < nthreads; t++)
		workers[t] = std::thread([t, &sums] {
			cudaStream_t s;
			EXPECT(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
			int *h = (int *)malloc(n * sizeof(int));
			for (int r = 0; r < rounds && h; r++) {
				int *a = NULL, *b = NULL;
				EXPECT(cudaMallocAsync(&a, n * sizeof(int), s), cudaSuccess);
				EXPECT(cudaMallocAsync(&b, n * sizeof(int), s), cudaSuccess);
				mp_fill<<<blocks(n), 256, 0, s>>>(a, n, 100 * t + r);
				mp_add<<<blocks(n), 256, 0, s>>>(b, a, a, n);
				EXPECT(cudaFreeAsync(a, s), cudaSuccess);
				EXPECT(cudaMemcpyAsync(h, b, n * sizeof(int), cudaMemcpyDeviceToHost, s),
				       cudaSuccess);
				EXPECT(cudaFreeAsync(b, s), cudaSuccess);
				EXPECT(cudaStreamSynchronize(s), cudaSuccess);
				for (int i = 0; i < n; i++) {
					TRUE(h[i] == 2 * (100 * t + r + i));
					sums[t] += h[i];
				}
			}
			free(h);
			EXPECT(cudaStreamDestroy(s), cudaSuccess);
		});
	long long total = 0;
	for (int t = 0; t < nthreads; t++) {
		workers[t].join();
		total += sums[t];
	}
	return total;
}

template <typename T> static T entry(const char *name)
{
	void *fn = nullptr;
	cudaDriverEntryPointQueryResult st = cudaDriverEntryPointSymbolNotFound;
	EXPECT(cudaGetDriverEntryPointByVersion(name, &fn, 13000, cudaEnableDefault, &st), cudaSuccess);
	TRUE(st == cudaDriverEntryPointSuccess && fn);
	return (T)fn;
}

// The driver API's forms on the runtime's pools and streams.
static void driver_api(cudaStream_t s1, cudaStream_t s2)
{
	auto init = entry<PFN_cuInit_v2000>("cuInit");
	auto retain = entry<PFN_cuDevicePrimaryCtxRetain_v7000>("cuDevicePrimaryCtxRetain");
	auto ctxGetCurrent = entry<PFN_cuCtxGetCurrent_v4000>("cuCtxGetCurrent");
	auto ctxSetCurrent = entry<PFN_cuCtxSetCurrent_v4000>("cuCtxSetCurrent");
	auto getAttr = entry<PFN_cuDeviceGetAttribute_v2000>("cuDeviceGetAttribute");
	auto defaultPool = entry<PFN_cuDeviceGetDefaultMemPool_v11020>("cuDeviceGetDefaultMemPool");
	auto getPool = entry<PFN_cuDeviceGetMemPool_v11020>("cuDeviceGetMemPool");
	auto setPool = entry<PFN_cuDeviceSetMemPool_v11020>("cuDeviceSetMemPool");
	auto allocAsync = entry<PFN_cuMemAllocAsync_v11020>("cuMemAllocAsync");
	auto freeAsync = entry<PFN_cuMemFreeAsync_v11020>("cuMemFreeAsync");
	auto allocFromPool = entry<PFN_cuMemAllocFromPoolAsync_v11020>("cuMemAllocFromPoolAsync");
	auto poolCreate = entry<PFN_cuMemPoolCreate_v11020>("cuMemPoolCreate");
	auto poolDestroy = entry<PFN_cuMemPoolDestroy_v11020>("cuMemPoolDestroy");
	auto poolGet = entry<PFN_cuMemPoolGetAttribute_v11020>("cuMemPoolGetAttribute");
	auto poolSet = entry<PFN_cuMemPoolSetAttribute_v11020>("cuMemPoolSetAttribute");
	auto poolTrim = entry<PFN_cuMemPoolTrimTo_v11020>("cuMemPoolTrimTo");
	auto streamSync = entry<PFN_cuStreamSynchronize_v2000>("cuStreamSynchronize");
	auto pointerGetAttr = entry<PFN_cuPointerGetAttribute_v4000>("cuPointerGetAttribute");
	if (!ok)
		return;
	EXPECT(init(0), CUDA_SUCCESS);
	CUcontext ctx = nullptr, cur = nullptr;
	EXPECT(retain(&ctx, 0), CUDA_SUCCESS);
	EXPECT(ctxGetCurrent(&cur), CUDA_SUCCESS);
	if (!cur)
		EXPECT(ctxSetCurrent(ctx), CUDA_SUCCESS);

	int supported = 0;
	EXPECT(getAttr(&supported, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, 0), CUDA_SUCCESS);
	TRUE(supported == 1);
	CUmemoryPool dp = nullptr, cp = nullptr;
	cudaMemPool_t rp = nullptr;
	EXPECT(defaultPool(&dp, 0), CUDA_SUCCESS);
	EXPECT(cudaDeviceGetDefaultMemPool(&rp, 0), cudaSuccess);
	TRUE(dp && (void *)dp == (void *)rp);
	EXPECT(getPool(&cp, 0), CUDA_SUCCESS);
	TRUE(cp == dp);
	EXPECT(defaultPool(&dp, 1), CUDA_ERROR_INVALID_DEVICE);

	// Driver allocation on a runtime stream, used by a runtime kernel,
	// counted by the pool both APIs see.
	const int n = 65536;
	CUdeviceptr d = 0;
	uint64_t used_before = 0, used = 0;
	EXPECT(poolGet(dp, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &used_before), CUDA_SUCCESS);
	EXPECT(allocAsync(&d, n * sizeof(int), (CUstream)s1), CUDA_SUCCESS);
	EXPECT(poolGet(dp, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &used), CUDA_SUCCESS);
	TRUE(used == used_before + n * sizeof(int));
	mp_fill<<<blocks(n), 256, 0, s1>>>((int *)d, n, 21);
	EXPECT(cudaStreamSynchronize(s1), cudaSuccess);
	TRUE(holds((int *)d, n, 21));
	EXPECT(freeAsync(d, (CUstream)s1), CUDA_SUCCESS);
	EXPECT(freeAsync(0x1000, (CUstream)s1), CUDA_ERROR_INVALID_VALUE);

	// A driver pool, allocated from by both APIs, made current, trimmed.
	CUmemPoolProps props;
	memset(&props, 0, sizeof props);
	props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
	props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	props.location.id = 0;
	CUmemoryPool pool = nullptr;
	EXPECT(poolCreate(&pool, &props), CUDA_SUCCESS);
	cuuint64_t threshold = 1 << 20, got = 0;
	EXPECT(poolSet(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold), CUDA_SUCCESS);
	EXPECT(cudaMemPoolGetAttribute((cudaMemPool_t)pool, cudaMemPoolAttrReleaseThreshold, &got),
	       cudaSuccess);
	TRUE(got == threshold);
	CUdeviceptr e = 0;
	int *f = NULL;
	EXPECT(allocFromPool(&e, 4096, pool, (CUstream)s2), CUDA_SUCCESS);
	EXPECT(setPool(0, pool), CUDA_SUCCESS);
	EXPECT(cudaMallocAsync(&f, 8192, s2), cudaSuccess);
	EXPECT(poolGet(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &got), CUDA_SUCCESS);
	TRUE(got == 4096 + 8192);
	// Pool memory is device memory to both APIs' pointer queries, whichever
	// API allocated it, and to the direction cudaMemcpyDefault infers.
	cudaPointerAttributes pa;
	memset(&pa, 0, sizeof pa);
	EXPECT(cudaPointerGetAttributes(&pa, f + 100), cudaSuccess);
	TRUE(pa.type == cudaMemoryTypeDevice && pa.device == 0 && pa.devicePointer == (void *)(f + 100));
	memset(&pa, 0, sizeof pa);
	EXPECT(cudaPointerGetAttributes(&pa, (void *)e), cudaSuccess);
	TRUE(pa.type == cudaMemoryTypeDevice);
	unsigned int memory_type = 0;
	EXPECT(pointerGetAttr(&memory_type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)(f + 2047)),
	       CUDA_SUCCESS);
	TRUE(memory_type == CU_MEMORYTYPE_DEVICE);
	mp_fill<<<blocks(1024), 256, 0, s2>>>((int *)e, 1024, 23);
	mp_fill<<<blocks(2048), 256, 0, s2>>>(f, 2048, 29);
	TRUE(holds((int *)e, 1024, 23) && holds(f, 2048, 29));
	int tail[4] = {0, 0, 0, 0};
	EXPECT(cudaMemcpy(tail, f + 2044, sizeof tail, cudaMemcpyDefault), cudaSuccess);
	TRUE(tail[0] == 29 + 2044 && tail[3] == 29 + 2047);
	EXPECT(freeAsync(e, (CUstream)s2), CUDA_SUCCESS);
	EXPECT(cudaFreeAsync(f, s2), cudaSuccess);
	EXPECT(streamSync((CUstream)s2), CUDA_SUCCESS);
	// Below the threshold: kept at the synchronisation, trimmed on request.
	EXPECT(poolGet(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &got), CUDA_SUCCESS);
	TRUE(got == 4096 + 8192);
	EXPECT(poolTrim(pool, 0), CUDA_SUCCESS);
	EXPECT(poolGet(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &got), CUDA_SUCCESS);
	TRUE(got == 0);
	EXPECT(setPool(0, dp), CUDA_SUCCESS);
	EXPECT(poolDestroy(pool), CUDA_SUCCESS);
	EXPECT(poolDestroy(dp), CUDA_ERROR_INVALID_VALUE); // the default pool stays

	props.handleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
	EXPECT(poolCreate(&pool, &props), CUDA_ERROR_NOT_SUPPORTED);
}

static void limit_mode(cudaStream_t s)
{
	// 64 MiB domain limit. A pool keeping 40 MiB cached...
	const size_t big = 40u << 20;
	cudaMemPool_t pool = new_pool(0);
	set64(pool, cudaMemPoolAttrReleaseThreshold, UINT64_MAX);
	int *a = NULL, *b = NULL, *c = NULL;
	EXPECT(cudaMallocFromPoolAsync(&a, big, pool, s), cudaSuccess);
	mp_fill<<<blocks(1024), 256, 0, s>>>(a, 1024, 1);
	EXPECT(cudaFreeAsync(a, s), cudaSuccess);
	EXPECT(cudaStreamSynchronize(s), cudaSuccess);
	TRUE(attr64(pool, cudaMemPoolAttrReservedMemCurrent) == big);
	// ... gives it back for another pool's allocation that needs it.
	cudaMemPool_t def;
	EXPECT(cudaDeviceGetDefaultMemPool(&def, 0), cudaSuccess);
	set64(def, cudaMemPoolAttrReleaseThreshold, UINT64_MAX);
	EXPECT(cudaMallocAsync(&b, big, s), cudaSuccess);
	TRUE(attr64(pool, cudaMemPoolAttrReservedMemCurrent) == 0);
	mp_fill<<<blocks(4096), 256, 0, s>>>(b, 4096, 2);
	TRUE(holds(b, 4096, 2));
	// More than the limit fails cleanly, and the process goes on.
	EXPECT(cudaMallocAsync(&c, 100u << 20, s), cudaErrorMemoryAllocation);
	EXPECT(cudaMallocFromPoolAsync(&c, big, pool, s), cudaErrorMemoryAllocation); // b holds 40 MiB
	// cudaMalloc too finds the default pool's cached memory given back.
	EXPECT(cudaFreeAsync(b, s), cudaSuccess);
	EXPECT(cudaStreamSynchronize(s), cudaSuccess);
	TRUE(attr64(def, cudaMemPoolAttrReservedMemCurrent) == big);
	EXPECT(cudaMalloc(&c, big), cudaSuccess);
	TRUE(attr64(def, cudaMemPoolAttrReservedMemCurrent) == 0);
	mp_fill<<<blocks(4096), 256, 0, s>>>(c, 4096, 3);
	TRUE(holds(c, 4096, 3));
	EXPECT(cudaFree(c), cudaSuccess);
	EXPECT(cudaMemPoolDestroy(pool), cudaSuccess);
}

int main(int argc, char **argv)
{
	bool limit = argc > 1 && !strcmp(argv[1], "limit");
	cudaStream_t streams[4];
	for (int i = 0; i < 4; i++)
		EXPECT(
		    cudaStreamCreateWithFlags(&streams[i], i % 2 ? cudaStreamNonBlocking : cudaStreamDefault),
		    cudaSuccess);
	if (limit) {
		limit_mode(streams[0]);
		printf("RESULT mempool-limit verified=%s checks=%lld\n", ok ? "yes" : "no", checks.load());
		return ok ? 0 : 1;
	}

	int supported = 0;
	EXPECT(cudaDeviceGetAttribute(&supported, cudaDevAttrMemoryPoolsSupported, 0), cudaSuccess);
	TRUE(supported == 1);
	cudaDeviceProp prop;
	EXPECT(cudaGetDeviceProperties(&prop, 0), cudaSuccess);
	TRUE(prop.memoryPoolsSupported == 1);

	cudaMemPool_t def = NULL, cur = NULL;
	EXPECT(cudaDeviceGetDefaultMemPool(&def, 0), cudaSuccess);
	EXPECT(cudaDeviceGetMemPool(&cur, 0), cudaSuccess);
	TRUE(def && cur == def);
	int flag = 0;
	EXPECT(cudaMemPoolGetAttribute(def, cudaMemPoolReuseAllowOpportunistic, &flag), cudaSuccess);
	TRUE(flag == 1);
	EXPECT(cudaMemPoolGetAttribute(def, cudaMemPoolReuseAllowInternalDependencies, &flag), cudaSuccess);
	TRUE(flag == 1);
	TRUE(attr64(def, cudaMemPoolAttrReleaseThreshold) == 0);

	long long total = stream_loop(streams, 4);
	// Threshold 0: the synchronisation gave everything back.
	TRUE(attr64(def, cudaMemPoolAttrReservedMemCurrent) == 0);
	TRUE(attr64(def, cudaMemPoolAttrUsedMemCurrent) == 0);
	TRUE(attr64(def, cudaMemPoolAttrUsedMemHigh) >= 3 * 4096 * sizeof(int));
	TRUE(attr64(def, cudaMemPoolAttrReservedMemHigh) >= attr64(def, cudaMemPoolAttrUsedMemHigh));

	// A threshold keeps that much cached across synchronisation.
	const size_t blk = 65536;
	set64(def, cudaMemPoolAttrReleaseThreshold, 2 * blk);
	int *p[4];
	for (int i = 0; i < 4; i++)
		EXPECT(cudaMallocAsync(&p[i], blk, streams[0]), cudaSuccess);
	for (int i = 0; i < 4; i++)
		EXPECT(cudaFreeAsync(p[i], streams[0]), cudaSuccess);
	EXPECT(cudaDeviceSynchronize(), cudaSuccess);
	TRUE(attr64(def, cudaMemPoolAttrReservedMemCurrent) == 2 * blk);
	set64(def, cudaMemPoolAttrReleaseThreshold, 0);
	// An event's synchronisation gives back what the event covers.
	cudaEvent_t done;
	EXPECT(cudaEventCreate(&done), cudaSuccess);
	EXPECT(cudaMallocAsync(&p[0], blk, streams[1]), cudaSuccess);
	mp_fill<<<blocks(1024), 256, 0, streams[1]>>>(p[0], 1024, 9);
	EXPECT(cudaFreeAsync(p[0], streams[1]), cudaSuccess);
	EXPECT(cudaEventRecord(done, streams[1]), cudaSuccess);
	EXPECT(cudaEventSynchronize(done), cudaSuccess);
	TRUE(attr64(def, cudaMemPoolAttrReservedMemCurrent) == 0);
	EXPECT(cudaEventDestroy(done), cudaSuccess);

	total += threads_at_once();
	reuse(streams[0], streams[1]);
	reuse(streams[2], streams[3]);

	// cudaFree of a pool's allocation, cudaFreeAsync of cudaMalloc's.
	int *pa = NULL, *ma = NULL;
	EXPECT(cudaMallocAsync(&pa, blk, streams[1]), cudaSuccess);
	EXPECT(cudaStreamSynchronize(streams[1]), cudaSuccess);
	EXPECT(cudaFree(pa), cudaSuccess);
	TRUE(attr64(def, cudaMemPoolAttrUsedMemCurrent) == 0);
	EXPECT(cudaMalloc(&ma, blk), cudaSuccess);
	mp_fill<<<blocks(1024), 256, 0, streams[2]>>>(ma, 1024, 3);
	EXPECT(cudaFreeAsync(ma, streams[2]), cudaSuccess);
	EXPECT(cudaFreeAsync(ma, streams[2]), cudaErrorInvalidValue);

	// Refusals.
	cudaMemPoolProps props;
	memset(&props, 0, sizeof props);
	props.allocType = cudaMemAllocationTypePinned;
	props.location.type = cudaMemLocationTypeDevice;
	props.location.id = 3;
	cudaMemPool_t bad;
	EXPECT(cudaMemPoolCreate(&bad, &props), cudaErrorInvalidDevice);
	props.location.id = 0;
	props.handleTypes = cudaMemHandleTypePosixFileDescriptor;
	EXPECT(cudaMemPoolCreate(&bad, &props), cudaErrorNotSupported);
	uint64_t v;
	EXPECT(cudaMemPoolGetAttribute((cudaMemPool_t)&v, cudaMemPoolAttrUsedMemCurrent, &v),
	       cudaErrorInvalidValue);
	EXPECT(cudaMemPoolDestroy(def), cudaErrorInvalidValue);
	EXPECT(cudaDeviceSetMemPool(0, (cudaMemPool_t)&v), cudaErrorInvalidValue);
	EXPECT(cudaDeviceGetDefaultMemPool(&bad, 7), cudaErrorInvalidDevice);

	driver_api(streams[0], streams[3]);

	// A small pool: maxSize bounds what it reserves.
	cudaMemPool_t small = new_pool(2 * blk);
	int *s1 = NULL, *s2 = NULL, *s3 = NULL;
	EXPECT(cudaMallocFromPoolAsync(&s1, blk, small, streams[0]), cudaSuccess);
	EXPECT(cudaMallocFromPoolAsync(&s2, blk, small, streams[0]), cudaSuccess);
	EXPECT(cudaMallocFromPoolAsync(&s3, blk, small, streams[0]), cudaErrorMemoryAllocation);
	EXPECT(cudaFreeAsync(s2, streams[0]), cudaSuccess);
	EXPECT(cudaMallocFromPoolAsync(&s3, blk, small, streams[0]), cudaSuccess);
	EXPECT(cudaFreeAsync(s1, streams[0]), cudaSuccess);
	EXPECT(cudaFreeAsync(s3, streams[0]), cudaSuccess);
	EXPECT(cudaMemPoolDestroy(small), cudaSuccess);

	EXPECT(cudaDeviceSynchronize(), cudaSuccess);
	for (int i = 0; i < 4; i++)
		EXPECT(cudaStreamDestroy(streams[i]), cudaSuccess);
	printf("RESULT mempool verified=%s checksum=%lld checks=%lld\n", ok ? "yes" : "no", total,
	       checks.load());
	return ok ? 0 : 1;
}
