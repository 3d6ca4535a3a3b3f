/* SPDX-License-Identifier: Apache-2.0 */
/* devprop.c - struct cudaDeviceProp from the daemon's device description, and
 * cudaDeviceGetAttribute lookups in its attribute table.
 *
 * The real runtime fills cudaDeviceProp from the driver's cuDeviceGetName,
 * cuDeviceGetUuid, cuDeviceTotalMem and cuDeviceGetAttribute (one per field),
 * and passes cudaDeviceGetAttribute's number straight to the driver. We do the
 * same from the values the daemon queried for us. Fields with no attribute:
 *   name, uuid, totalGlobalMem  from the device blob (the driver's answers);
 *   luid, luidDeviceNodeMask    0: a LUID exists only on Windows; the header
 *                               leaves them undefined elsewhere and the Linux
 *                               runtime never asks the driver for one;
 *   reserved[]                  0.
 * Every other field is one attribute (two or three for array fields).
 *
 * Launch configurations are checked against the same table, as the runtime
 * checks them against its cached cudaDeviceProp.
 */
#include "devprop.h"

#include <stdbool.h>
#include <string.h>

#include <cuda.h>

/* Each cudaDeviceAttr equals the CUdevice_attribute of the same meaning. */
#define XGPU_DEVATTR(rt, cu) _Static_assert((int)(rt) == (int)(cu), #rt " differs from " #cu);
#include "devprop.def"
#undef XGPU_DEVATTR
_Static_assert((int)cudaDevAttrMax == (int)CU_DEVICE_ATTRIBUTE_MAX, "attribute ranges differ");

static int32_t attr(const int32_t *attrs, uint32_t nattrs, CUdevice_attribute a)
{
	return (uint32_t)a < nattrs ? attrs[a] : 0;
}

/* Sizes travel as int attributes; a negative one can only be a driver error. */
static size_t attr_size(const int32_t *attrs, uint32_t nattrs, CUdevice_attribute a)
{
	int32_t v = attr(attrs, nattrs, a);
	return v < 0 ? 0 : (size_t)v;
}

/* Bit masks and combined PCI ids fill unsigned fields bit for bit. */
static unsigned int attr_bits(const int32_t *attrs, uint32_t nattrs, CUdevice_attribute a)
{
	return (unsigned int)(uint32_t)attr(attrs, nattrs, a);
}

void xgpu_devprop_fill(struct cudaDeviceProp *p, const struct xgpu_device_blob *b, const int32_t *attrs,
		       uint32_t nattrs)
{
	const int32_t *A = attrs;
	uint32_t N = attrs ? nattrs : 0;
#define I(a) attr(A, N, CU_DEVICE_ATTRIBUTE_##a)
#define Z(a) attr_size(A, N, CU_DEVICE_ATTRIBUTE_##a)
#define U(a) attr_bits(A, N, CU_DEVICE_ATTRIBUTE_##a)

	memset(p, 0, sizeof(*p));
	/* The blob's name came from shared memory: never trust it to end. */
	memcpy(p->name, b->name, sizeof(p->name) < sizeof(b->name) ? sizeof(p->name) : sizeof(b->name));
	p->name[sizeof(p->name) - 1] = '\0';
	_Static_assert(sizeof(p->uuid.bytes) == sizeof(b->uuid), "uuid sizes differ");
	memcpy(p->uuid.bytes, b->uuid, sizeof(p->uuid.bytes));
	p->totalGlobalMem = (size_t)b->total_mem;

	p->sharedMemPerBlock = Z(MAX_SHARED_MEMORY_PER_BLOCK);
	p->regsPerBlock = I(MAX_REGISTERS_PER_BLOCK);
	p->warpSize = I(WARP_SIZE);
	p->memPitch = Z(MAX_PITCH);
	p->maxThreadsPerBlock = I(MAX_THREADS_PER_BLOCK);
	p->maxThreadsDim[0] = I(MAX_BLOCK_DIM_X);
	p->maxThreadsDim[1] = I(MAX_BLOCK_DIM_Y);
	p->maxThreadsDim[2] = I(MAX_BLOCK_DIM_Z);
	p->maxGridSize[0] = I(MAX_GRID_DIM_X);
	p->maxGridSize[1] = I(MAX_GRID_DIM_Y);
	p->maxGridSize[2] = I(MAX_GRID_DIM_Z);
	p->totalConstMem = Z(TOTAL_CONSTANT_MEMORY);
	p->major = I(COMPUTE_CAPABILITY_MAJOR);
	p->minor = I(COMPUTE_CAPABILITY_MINOR);
	p->textureAlignment = Z(TEXTURE_ALIGNMENT);
	p->texturePitchAlignment = Z(TEXTURE_PITCH_ALIGNMENT);
	p->multiProcessorCount = I(MULTIPROCESSOR_COUNT);
	p->integrated = I(INTEGRATED);
	p->canMapHostMemory = I(CAN_MAP_HOST_MEMORY);

	p->maxTexture1D = I(MAXIMUM_TEXTURE1D_WIDTH);
	p->maxTexture1DMipmap = I(MAXIMUM_TEXTURE1D_MIPMAPPED_WIDTH);
	p->maxTexture2D[0] = I(MAXIMUM_TEXTURE2D_WIDTH);
	p->maxTexture2D[1] = I(MAXIMUM_TEXTURE2D_HEIGHT);
	p->maxTexture2DMipmap[0] = I(MAXIMUM_TEXTURE2D_MIPMAPPED_WIDTH);
	p->maxTexture2DMipmap[1] = I(MAXIMUM_TEXTURE2D_MIPMAPPED_HEIGHT);
	p->maxTexture2DLinear[0] = I(MAXIMUM_TEXTURE2D_LINEAR_WIDTH);
	p->maxTexture2DLinear[1] = I(MAXIMUM_TEXTURE2D_LINEAR_HEIGHT);
	p->maxTexture2DLinear[2] = I(MAXIMUM_TEXTURE2D_LINEAR_PITCH);
	p->maxTexture2DGather[0] = I(MAXIMUM_TEXTURE2D_GATHER_WIDTH);
	p->maxTexture2DGather[1] = I(MAXIMUM_TEXTURE2D_GATHER_HEIGHT);
	p->maxTexture3D[0] = I(MAXIMUM_TEXTURE3D_WIDTH);
	p->maxTexture3D[1] = I(MAXIMUM_TEXTURE3D_HEIGHT);
	p->maxTexture3D[2] = I(MAXIMUM_TEXTURE3D_DEPTH);
	p->maxTexture3DAlt[0] = I(MAXIMUM_TEXTURE3D_WIDTH_ALTERNATE);
	p->maxTexture3DAlt[1] = I(MAXIMUM_TEXTURE3D_HEIGHT_ALTERNATE);
	p->maxTexture3DAlt[2] = I(MAXIMUM_TEXTURE3D_DEPTH_ALTERNATE);
	p->maxTextureCubemap = I(MAXIMUM_TEXTURECUBEMAP_WIDTH);
	p->maxTexture1DLayered[0] = I(MAXIMUM_TEXTURE1D_LAYERED_WIDTH);
	p->maxTexture1DLayered[1] = I(MAXIMUM_TEXTURE1D_LAYERED_LAYERS);
	p->maxTexture2DLayered[0] = I(MAXIMUM_TEXTURE2D_LAYERED_WIDTH);
	p->maxTexture2DLayered[1] = I(MAXIMUM_TEXTURE2D_LAYERED_HEIGHT);
	p->maxTexture2DLayered[2] = I(MAXIMUM_TEXTURE2D_LAYERED_LAYERS);
	p->maxTextureCubemapLayered[0] = I(MAXIMUM_TEXTURECUBEMAP_LAYERED_WIDTH);
	p->maxTextureCubemapLayered[1] = I(MAXIMUM_TEXTURECUBEMAP_LAYERED_LAYERS);
	p->maxSurface1D = I(MAXIMUM_SURFACE1D_WIDTH);
	p->maxSurface2D[0] = I(MAXIMUM_SURFACE2D_WIDTH);
	p->maxSurface2D[1] = I(MAXIMUM_SURFACE2D_HEIGHT);
	p->maxSurface3D[0] = I(MAXIMUM_SURFACE3D_WIDTH);
	p->maxSurface3D[1] = I(MAXIMUM_SURFACE3D_HEIGHT);
	p->maxSurface3D[2] = I(MAXIMUM_SURFACE3D_DEPTH);
	p->maxSurface1DLayered[0] = I(MAXIMUM_SURFACE1D_LAYERED_WIDTH);
	p->maxSurface1DLayered[1] = I(MAXIMUM_SURFACE1D_LAYERED_LAYERS);
	p->maxSurface2DLayered[0] = I(MAXIMUM_SURFACE2D_LAYERED_WIDTH);
	p->maxSurface2DLayered[1] = I(MAXIMUM_SURFACE2D_LAYERED_HEIGHT);
	p->maxSurface2DLayered[2] = I(MAXIMUM_SURFACE2D_LAYERED_LAYERS);
	p->maxSurfaceCubemap = I(MAXIMUM_SURFACECUBEMAP_WIDTH);
	p->maxSurfaceCubemapLayered[0] = I(MAXIMUM_SURFACECUBEMAP_LAYERED_WIDTH);
	p->maxSurfaceCubemapLayered[1] = I(MAXIMUM_SURFACECUBEMAP_LAYERED_LAYERS);
	p->surfaceAlignment = Z(SURFACE_ALIGNMENT);

	p->concurrentKernels = I(CONCURRENT_KERNELS);
	p->ECCEnabled = I(ECC_ENABLED);
	p->pciBusID = I(PCI_BUS_ID);
	p->pciDeviceID = I(PCI_DEVICE_ID);
	p->pciDomainID = I(PCI_DOMAIN_ID);
	p->tccDriver = I(TCC_DRIVER);
	p->asyncEngineCount = I(ASYNC_ENGINE_COUNT);
	p->unifiedAddressing = I(UNIFIED_ADDRESSING);
	p->memoryBusWidth = I(GLOBAL_MEMORY_BUS_WIDTH);
	p->l2CacheSize = I(L2_CACHE_SIZE);
	p->persistingL2CacheMaxSize = I(MAX_PERSISTING_L2_CACHE_SIZE);
	p->maxThreadsPerMultiProcessor = I(MAX_THREADS_PER_MULTIPROCESSOR);
	p->streamPrioritiesSupported = I(STREAM_PRIORITIES_SUPPORTED);
	p->globalL1CacheSupported = I(GLOBAL_L1_CACHE_SUPPORTED);
	p->localL1CacheSupported = I(LOCAL_L1_CACHE_SUPPORTED);
	p->sharedMemPerMultiprocessor = Z(MAX_SHARED_MEMORY_PER_MULTIPROCESSOR);
	p->regsPerMultiprocessor = I(MAX_REGISTERS_PER_MULTIPROCESSOR);
	p->managedMemory = I(MANAGED_MEMORY);
	p->isMultiGpuBoard = I(MULTI_GPU_BOARD);
	p->multiGpuBoardGroupID = I(MULTI_GPU_BOARD_GROUP_ID);
	p->hostNativeAtomicSupported = I(HOST_NATIVE_ATOMIC_SUPPORTED);
	p->pageableMemoryAccess = I(PAGEABLE_MEMORY_ACCESS);
	p->concurrentManagedAccess = I(CONCURRENT_MANAGED_ACCESS);
	p->computePreemptionSupported = I(COMPUTE_PREEMPTION_SUPPORTED);
	p->canUseHostPointerForRegisteredMem = I(CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM);
	p->cooperativeLaunch = I(COOPERATIVE_LAUNCH);
	p->sharedMemPerBlockOptin = Z(MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
	p->pageableMemoryAccessUsesHostPageTables = I(PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES);
	p->directManagedMemAccessFromHost = I(DIRECT_MANAGED_MEM_ACCESS_FROM_HOST);
	p->maxBlocksPerMultiProcessor = I(MAX_BLOCKS_PER_MULTIPROCESSOR);
	p->accessPolicyMaxWindowSize = I(MAX_ACCESS_POLICY_WINDOW_SIZE);
	p->reservedSharedMemPerBlock = Z(RESERVED_SHARED_MEMORY_PER_BLOCK);
	p->hostRegisterSupported = I(HOST_REGISTER_SUPPORTED);
	p->sparseCudaArraySupported = I(SPARSE_CUDA_ARRAY_SUPPORTED);
	p->hostRegisterReadOnlySupported = I(READ_ONLY_HOST_REGISTER_SUPPORTED);
	p->timelineSemaphoreInteropSupported = I(TIMELINE_SEMAPHORE_INTEROP_SUPPORTED);
	p->memoryPoolsSupported = I(MEMORY_POOLS_SUPPORTED);
	p->gpuDirectRDMASupported = I(GPU_DIRECT_RDMA_SUPPORTED);
	p->gpuDirectRDMAFlushWritesOptions = U(GPU_DIRECT_RDMA_FLUSH_WRITES_OPTIONS);
	p->gpuDirectRDMAWritesOrdering = I(GPU_DIRECT_RDMA_WRITES_ORDERING);
	p->memoryPoolSupportedHandleTypes = U(MEMPOOL_SUPPORTED_HANDLE_TYPES);
	p->deferredMappingCudaArraySupported = I(DEFERRED_MAPPING_CUDA_ARRAY_SUPPORTED);
	p->ipcEventSupported = I(IPC_EVENT_SUPPORTED);
	p->clusterLaunch = I(CLUSTER_LAUNCH);
	p->unifiedFunctionPointers = I(UNIFIED_FUNCTION_POINTERS);
	p->deviceNumaConfig = I(NUMA_CONFIG);
	p->deviceNumaId = I(NUMA_ID);
	p->mpsEnabled = I(MPS_ENABLED);
	p->hostNumaId = I(HOST_NUMA_ID);
	p->gpuPciDeviceID = U(GPU_PCI_DEVICE_ID);
	p->gpuPciSubsystemID = U(GPU_PCI_SUBSYSTEM_ID);
	p->hostNumaMultinodeIpcSupported = I(HOST_NUMA_MULTINODE_IPC_SUPPORTED);
#undef I
#undef Z
#undef U
}

int xgpu_devattr_lookup(int cuda_device_attr, const int32_t *attrs, uint32_t nattrs, int *value)
{
	/* CUdevice_attribute numbers run from 1 to CU_DEVICE_ATTRIBUTE_MAX - 1
	 * without gaps; the driver refuses anything else with
	 * CUDA_ERROR_INVALID_VALUE, which the runtime reports unchanged. */
	if (!value || cuda_device_attr < 1 || cuda_device_attr >= CU_DEVICE_ATTRIBUTE_MAX)
		return cudaErrorInvalidValue;
	*value = attr(attrs, attrs ? nattrs : 0, (CUdevice_attribute)cuda_device_attr);
	return cudaSuccess;
}

/* A limit the driver did not report reads as 0; a negative one is nonsense.
 * Neither may reject a launch: the driver still checks it. */
static bool over_limit(uint64_t value, const int32_t *attrs, uint32_t nattrs, CUdevice_attribute a)
{
	int32_t limit = attr(attrs, nattrs, a);
	return limit > 0 && value > (uint64_t)limit;
}

int xgpu_launch_config_check(const int32_t *attrs, uint32_t nattrs, const uint32_t grid[3],
			     const uint32_t block[3], uint64_t shared_bytes)
{
	static const CUdevice_attribute max_block[3] = {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X,
							CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y,
							CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z};
	static const CUdevice_attribute max_grid[3] = {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X,
						       CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y,
						       CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z};
	if (!attrs)
		nattrs = 0;
	uint64_t threads = 1;
	for (int i = 0; i < 3; i++) {
		if (!grid[i] || !block[i] || over_limit(block[i], attrs, nattrs, max_block[i]) ||
		    over_limit(grid[i], attrs, nattrs, max_grid[i]))
			return cudaErrorInvalidValue;
		threads *= block[i];
	}
	if (over_limit(threads, attrs, nattrs, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK))
		return cudaErrorInvalidValue;
	/* cuLaunchKernel takes the size as an unsigned int, whatever the
	 * device reports. */
	if (shared_bytes > UINT32_MAX ||
	    over_limit(shared_bytes, attrs, nattrs, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN))
		return cudaErrorInvalidValue;
	return cudaSuccess;
}
