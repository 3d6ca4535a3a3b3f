/* SPDX-License-Identifier: Apache-2.0 */
/* test_devprop.c - cudaDeviceProp filling, cudaDeviceGetAttribute lookups
 * and launch configuration checks from a synthetic DEVICE_INFO attribute
 * table, and the cudaDeviceAttr ==
 * CUdevice_attribute correspondence against the installed CUDA headers.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <cuda.h>

#include "cuda_enums.h"
#include "../../frontend/runtime/devprop.h"

#define NATTRS ((uint32_t)CU_DEVICE_ATTRIBUTE_MAX)

/* Distinct, non-zero, with every byte set, so a field read from the wrong
 * attribute or left unfilled shows. */
static int32_t pattern(uint32_t i)
{
	return (int32_t)(0x01010101u * 0x11u + i * 0x00010203u);
}

static void fill_pattern(int32_t *attrs, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		attrs[i] = pattern(i);
}

static struct xgpu_device_blob make_blob(void)
{
	struct xgpu_device_blob b;
	memset(&b, 0, sizeof(b));
	snprintf(b.name, sizeof(b.name), "NVIDIA H100 80GB HBM3 (simulated)");
	for (int i = 0; i < 16; i++)
		b.uuid[i] = (uint8_t)(0xa0 + i);
	b.total_mem = 85520809984ull;
	return b;
}

/* Every attribute-backed field: scalar ints, size_t, unsigned bit fields and
 * array elements, with the CUdevice_attribute each one must come from. */
#define INT_FIELDS(X)                                                                                        \
	X(regsPerBlock, MAX_REGISTERS_PER_BLOCK)                                                             \
	X(warpSize, WARP_SIZE)                                                                               \
	X(maxThreadsPerBlock, MAX_THREADS_PER_BLOCK)                                                         \
	X(major, COMPUTE_CAPABILITY_MAJOR)                                                                   \
	X(minor, COMPUTE_CAPABILITY_MINOR)                                                                   \
	X(multiProcessorCount, MULTIPROCESSOR_COUNT)                                                         \
	X(integrated, INTEGRATED)                                                                            \
	X(canMapHostMemory, CAN_MAP_HOST_MEMORY)                                                             \
	X(maxTexture1D, MAXIMUM_TEXTURE1D_WIDTH)                                                             \
	X(maxTexture1DMipmap, MAXIMUM_TEXTURE1D_MIPMAPPED_WIDTH)                                             \
	X(maxTextureCubemap, MAXIMUM_TEXTURECUBEMAP_WIDTH)                                                   \
	X(maxSurface1D, MAXIMUM_SURFACE1D_WIDTH)                                                             \
	X(maxSurfaceCubemap, MAXIMUM_SURFACECUBEMAP_WIDTH)                                                   \
	X(concurrentKernels, CONCURRENT_KERNELS)                                                             \
	X(ECCEnabled, ECC_ENABLED)                                                                           \
	X(pciBusID, PCI_BUS_ID)                                                                              \
	X(pciDeviceID, PCI_DEVICE_ID)                                                                        \
	X(pciDomainID, PCI_DOMAIN_ID)                                                                        \
	X(tccDriver, TCC_DRIVER)                                                                             \
	X(asyncEngineCount, ASYNC_ENGINE_COUNT)                                                              \
	X(unifiedAddressing, UNIFIED_ADDRESSING)                                                             \
	X(memoryBusWidth, GLOBAL_MEMORY_BUS_WIDTH)                                                           \
	X(l2CacheSize, L2_CACHE_SIZE)                                                                        \
	X(persistingL2CacheMaxSize, MAX_PERSISTING_L2_CACHE_SIZE)                                            \
	X(maxThreadsPerMultiProcessor, MAX_THREADS_PER_MULTIPROCESSOR)                                       \
	X(streamPrioritiesSupported, STREAM_PRIORITIES_SUPPORTED)                                            \
	X(globalL1CacheSupported, GLOBAL_L1_CACHE_SUPPORTED)                                                 \
	X(localL1CacheSupported, LOCAL_L1_CACHE_SUPPORTED)                                                   \
	X(regsPerMultiprocessor, MAX_REGISTERS_PER_MULTIPROCESSOR)                                           \
	X(managedMemory, MANAGED_MEMORY)                                                                     \
	X(isMultiGpuBoard, MULTI_GPU_BOARD)                                                                  \
	X(multiGpuBoardGroupID, MULTI_GPU_BOARD_GROUP_ID)                                                    \
	X(hostNativeAtomicSupported, HOST_NATIVE_ATOMIC_SUPPORTED)                                           \
	X(pageableMemoryAccess, PAGEABLE_MEMORY_ACCESS)                                                      \
	X(concurrentManagedAccess, CONCURRENT_MANAGED_ACCESS)                                                \
	X(computePreemptionSupported, COMPUTE_PREEMPTION_SUPPORTED)                                          \
	X(canUseHostPointerForRegisteredMem, CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM)                        \
	X(cooperativeLaunch, COOPERATIVE_LAUNCH)                                                             \
	X(pageableMemoryAccessUsesHostPageTables, PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES)              \
	X(directManagedMemAccessFromHost, DIRECT_MANAGED_MEM_ACCESS_FROM_HOST)                               \
	X(maxBlocksPerMultiProcessor, MAX_BLOCKS_PER_MULTIPROCESSOR)                                         \
	X(accessPolicyMaxWindowSize, MAX_ACCESS_POLICY_WINDOW_SIZE)                                          \
	X(hostRegisterSupported, HOST_REGISTER_SUPPORTED)                                                    \
	X(sparseCudaArraySupported, SPARSE_CUDA_ARRAY_SUPPORTED)                                             \
	X(hostRegisterReadOnlySupported, READ_ONLY_HOST_REGISTER_SUPPORTED)                                  \
	X(timelineSemaphoreInteropSupported, TIMELINE_SEMAPHORE_INTEROP_SUPPORTED)                           \
	X(memoryPoolsSupported, MEMORY_POOLS_SUPPORTED)                                                      \
	X(gpuDirectRDMASupported, GPU_DIRECT_RDMA_SUPPORTED)                                                 \
	X(gpuDirectRDMAWritesOrdering, GPU_DIRECT_RDMA_WRITES_ORDERING)                                      \
	X(deferredMappingCudaArraySupported, DEFERRED_MAPPING_CUDA_ARRAY_SUPPORTED)                          \
	X(ipcEventSupported, IPC_EVENT_SUPPORTED)                                                            \
	X(clusterLaunch, CLUSTER_LAUNCH)                                                                     \
	X(unifiedFunctionPointers, UNIFIED_FUNCTION_POINTERS)                                                \
	X(deviceNumaConfig, NUMA_CONFIG)                                                                     \
	X(deviceNumaId, NUMA_ID)                                                                             \
	X(mpsEnabled, MPS_ENABLED)                                                                           \
	X(hostNumaId, HOST_NUMA_ID)                                                                          \
	X(hostNumaMultinodeIpcSupported, HOST_NUMA_MULTINODE_IPC_SUPPORTED)

#define SIZE_FIELDS(X)                                                                                       \
	X(sharedMemPerBlock, MAX_SHARED_MEMORY_PER_BLOCK)                                                    \
	X(memPitch, MAX_PITCH)                                                                               \
	X(totalConstMem, TOTAL_CONSTANT_MEMORY)                                                              \
	X(textureAlignment, TEXTURE_ALIGNMENT)                                                               \
	X(texturePitchAlignment, TEXTURE_PITCH_ALIGNMENT)                                                    \
	X(surfaceAlignment, SURFACE_ALIGNMENT)                                                               \
	X(sharedMemPerMultiprocessor, MAX_SHARED_MEMORY_PER_MULTIPROCESSOR)                                  \
	X(sharedMemPerBlockOptin, MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)                                         \
	X(reservedSharedMemPerBlock, RESERVED_SHARED_MEMORY_PER_BLOCK)

#define BITS_FIELDS(X)                                                                                       \
	X(gpuDirectRDMAFlushWritesOptions, GPU_DIRECT_RDMA_FLUSH_WRITES_OPTIONS)                             \
	X(memoryPoolSupportedHandleTypes, MEMPOOL_SUPPORTED_HANDLE_TYPES)                                    \
	X(gpuPciDeviceID, GPU_PCI_DEVICE_ID)                                                                 \
	X(gpuPciSubsystemID, GPU_PCI_SUBSYSTEM_ID)

#define ARRAY_FIELDS(X)                                                                                      \
	X(maxThreadsDim, 0, MAX_BLOCK_DIM_X)                                                                 \
	X(maxThreadsDim, 1, MAX_BLOCK_DIM_Y)                                                                 \
	X(maxThreadsDim, 2, MAX_BLOCK_DIM_Z)                                                                 \
	X(maxGridSize, 0, MAX_GRID_DIM_X)                                                                    \
	X(maxGridSize, 1, MAX_GRID_DIM_Y)                                                                    \
	X(maxGridSize, 2, MAX_GRID_DIM_Z)                                                                    \
	X(maxTexture2D, 0, MAXIMUM_TEXTURE2D_WIDTH)                                                          \
	X(maxTexture2D, 1, MAXIMUM_TEXTURE2D_HEIGHT)                                                         \
	X(maxTexture2DMipmap, 0, MAXIMUM_TEXTURE2D_MIPMAPPED_WIDTH)                                          \
	X(maxTexture2DMipmap, 1, MAXIMUM_TEXTURE2D_MIPMAPPED_HEIGHT)                                         \
	X(maxTexture2DLinear, 0, MAXIMUM_TEXTURE2D_LINEAR_WIDTH)                                             \
	X(maxTexture2DLinear, 1, MAXIMUM_TEXTURE2D_LINEAR_HEIGHT)                                            \
	X(maxTexture2DLinear, 2, MAXIMUM_TEXTURE2D_LINEAR_PITCH)                                             \
	X(maxTexture2DGather, 0, MAXIMUM_TEXTURE2D_GATHER_WIDTH)                                             \
	X(maxTexture2DGather, 1, MAXIMUM_TEXTURE2D_GATHER_HEIGHT)                                            \
	X(maxTexture3D, 0, MAXIMUM_TEXTURE3D_WIDTH)                                                          \
	X(maxTexture3D, 1, MAXIMUM_TEXTURE3D_HEIGHT)                                                         \
	X(maxTexture3D, 2, MAXIMUM_TEXTURE3D_DEPTH)                                                          \
	X(maxTexture3DAlt, 0, MAXIMUM_TEXTURE3D_WIDTH_ALTERNATE)                                             \
	X(maxTexture3DAlt, 1, MAXIMUM_TEXTURE3D_HEIGHT_ALTERNATE)                                            \
	X(maxTexture3DAlt, 2, MAXIMUM_TEXTURE3D_DEPTH_ALTERNATE)                                             \
	X(maxTexture1DLayered, 0, MAXIMUM_TEXTURE1D_LAYERED_WIDTH)                                           \
	X(maxTexture1DLayered, 1, MAXIMUM_TEXTURE1D_LAYERED_LAYERS)                                          \
	X(maxTexture2DLayered, 0, MAXIMUM_TEXTURE2D_LAYERED_WIDTH)                                           \
	X(maxTexture2DLayered, 1, MAXIMUM_TEXTURE2D_LAYERED_HEIGHT)                                          \
	X(maxTexture2DLayered, 2, MAXIMUM_TEXTURE2D_LAYERED_LAYERS)                                          \
	X(maxTextureCubemapLayered, 0, MAXIMUM_TEXTURECUBEMAP_LAYERED_WIDTH)                                 \
	X(maxTextureCubemapLayered, 1, MAXIMUM_TEXTURECUBEMAP_LAYERED_LAYERS)                                \
	X(maxSurface2D, 0, MAXIMUM_SURFACE2D_WIDTH)                                                          \
	X(maxSurface2D, 1, MAXIMUM_SURFACE2D_HEIGHT)                                                         \
	X(maxSurface3D, 0, MAXIMUM_SURFACE3D_WIDTH)                                                          \
	X(maxSurface3D, 1, MAXIMUM_SURFACE3D_HEIGHT)                                                         \
	X(maxSurface3D, 2, MAXIMUM_SURFACE3D_DEPTH)                                                          \
	X(maxSurface1DLayered, 0, MAXIMUM_SURFACE1D_LAYERED_WIDTH)                                           \
	X(maxSurface1DLayered, 1, MAXIMUM_SURFACE1D_LAYERED_LAYERS)                                          \
	X(maxSurface2DLayered, 0, MAXIMUM_SURFACE2D_LAYERED_WIDTH)                                           \
	X(maxSurface2DLayered, 1, MAXIMUM_SURFACE2D_LAYERED_HEIGHT)                                          \
	X(maxSurface2DLayered, 2, MAXIMUM_SURFACE2D_LAYERED_LAYERS)                                          \
	X(maxSurfaceCubemapLayered, 0, MAXIMUM_SURFACECUBEMAP_LAYERED_WIDTH)                                 \
	X(maxSurfaceCubemapLayered, 1, MAXIMUM_SURFACECUBEMAP_LAYERED_LAYERS)

#define PROP_SIZE sizeof(struct cudaDeviceProp)

/* Marks the bytes of one field as accounted for. */
static void cover(unsigned char *covered, size_t off, size_t len)
{
	assert_true(off + len <= PROP_SIZE);
	for (size_t i = 0; i < len; i++) {
		assert_int_equal(covered[off + i], 0); /* listed twice? */
		covered[off + i] = 1;
	}
}

static void test_fill_every_field(void **state)
{
	static int32_t attrs[NATTRS];
	fill_pattern(attrs, NATTRS);
	struct xgpu_device_blob b = make_blob();
	struct cudaDeviceProp p;
	memset(&p, 0x5a, sizeof(p)); /* fill must not leave any of this behind */
	xgpu_devprop_fill(&p, &b, attrs, NATTRS);

	unsigned char covered[PROP_SIZE];
	memset(covered, 0, sizeof(covered));
#define FIELD_AT(f) offsetof(struct cudaDeviceProp, f)
#define CHECK_INT(f, a)                                                                                      \
	assert_int_equal(p.f, pattern(CU_DEVICE_ATTRIBUTE_##a));                                             \
	cover(covered, FIELD_AT(f), sizeof(p.f));
#define CHECK_SIZE(f, a)                                                                                     \
	assert_int_equal(p.f, (size_t)pattern(CU_DEVICE_ATTRIBUTE_##a));                                     \
	cover(covered, FIELD_AT(f), sizeof(p.f));
#define CHECK_BITS(f, a)                                                                                     \
	assert_int_equal(p.f, (unsigned int)pattern(CU_DEVICE_ATTRIBUTE_##a));                               \
	cover(covered, FIELD_AT(f), sizeof(p.f));
#define CHECK_ELEM(f, i, a)                                                                                  \
	assert_int_equal(p.f[i], pattern(CU_DEVICE_ATTRIBUTE_##a));                                          \
	cover(covered, FIELD_AT(f) + (i) * sizeof(p.f[0]), sizeof(p.f[0]));
	INT_FIELDS(CHECK_INT)
	SIZE_FIELDS(CHECK_SIZE)
	BITS_FIELDS(CHECK_BITS)
	ARRAY_FIELDS(CHECK_ELEM)

	/* Fields with no attribute. */
	assert_string_equal(p.name, b.name);
	cover(covered, FIELD_AT(name), sizeof(p.name));
	assert_memory_equal(p.uuid.bytes, b.uuid, 16);
	cover(covered, FIELD_AT(uuid), sizeof(p.uuid));
	assert_int_equal(p.totalGlobalMem, b.total_mem);
	cover(covered, FIELD_AT(totalGlobalMem), sizeof(p.totalGlobalMem));
	cover(covered, FIELD_AT(luid), sizeof(p.luid));
	cover(covered, FIELD_AT(luidDeviceNodeMask), sizeof(p.luidDeviceNodeMask));
	cover(covered, FIELD_AT(reserved), sizeof(p.reserved));
	assert_int_equal(p.luidDeviceNodeMask, 0);
	for (size_t i = 0; i < sizeof(p.luid); i++)
		assert_int_equal(p.luid[i], 0);
	for (size_t i = 0; i < sizeof(p.reserved) / sizeof(p.reserved[0]); i++)
		assert_int_equal(p.reserved[i], 0);

	/* Whatever is not a listed field is padding and must be cleared; a
	 * field this test does not know holds a pattern value instead. */
	const unsigned char *raw = (const unsigned char *)&p;
	for (size_t i = 0; i < PROP_SIZE; i++)
		if (!covered[i] && raw[i] != 0)
			fail_msg("byte %zu of cudaDeviceProp is set but belongs to no known field", i);

	/* CUDA 13.0's layout: a new field would be carved out of reserved[]
	 * (or grow the struct) and needs a line in devprop.c and here. */
	assert_int_equal(sizeof(p.reserved) / sizeof(p.reserved[0]), 56);
	assert_int_equal(FIELD_AT(reserved) + sizeof(p.reserved), PROP_SIZE);
}

static void test_fill_short_table(void **state)
{
	/* An older driver reports fewer attributes: the rest read as 0. */
	static int32_t attrs[NATTRS];
	fill_pattern(attrs, NATTRS);
	struct xgpu_device_blob b = make_blob();
	struct cudaDeviceProp p;
	xgpu_devprop_fill(&p, &b, attrs, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
	assert_int_equal(p.maxThreadsPerBlock, pattern(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK));
	assert_int_equal(p.pciDomainID, pattern(CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID));
	assert_int_equal(p.major, 0);
	assert_int_equal(p.minor, 0);
	assert_int_equal(p.hostNumaMultinodeIpcSupported, 0);
	assert_int_equal(p.totalGlobalMem, b.total_mem);

	xgpu_devprop_fill(&p, &b, NULL, 7);
	assert_int_equal(p.maxThreadsPerBlock, 0);
	assert_int_equal(p.warpSize, 0);
	assert_string_equal(p.name, b.name);
}

static void test_fill_realistic_values(void **state)
{
	/* H100-like numbers, including ones whose sign or width matters. */
	static int32_t attrs[NATTRS];
	memset(attrs, 0, sizeof(attrs));
	attrs[CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK] = 1024;
	attrs[CU_DEVICE_ATTRIBUTE_WARP_SIZE] = 32;
	attrs[CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X] = 2147483647;
	attrs[CU_DEVICE_ATTRIBUTE_MAX_PITCH] = 2147483647;
	attrs[CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR] = 9;
	attrs[CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN] = 232448;
	attrs[CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID] = -1;
	attrs[CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY] = -5; /* nonsense from a broken driver */
	attrs[CU_DEVICE_ATTRIBUTE_GPU_PCI_DEVICE_ID] = (int32_t)0x233110deu;
	attrs[CU_DEVICE_ATTRIBUTE_GPU_PCI_SUBSYSTEM_ID] = (int32_t)0x16c110deu;
	struct xgpu_device_blob b = make_blob();
	memset(b.name, 'x', sizeof(b.name)); /* no terminator from the daemon */
	struct cudaDeviceProp p;
	xgpu_devprop_fill(&p, &b, attrs, NATTRS);
	assert_int_equal(p.maxThreadsPerBlock, 1024);
	assert_int_equal(p.warpSize, 32);
	assert_int_equal(p.maxGridSize[0], 2147483647);
	assert_int_equal(p.memPitch, 2147483647u);
	assert_int_equal(p.major, 9);
	assert_int_equal(p.sharedMemPerBlockOptin, 232448);
	assert_int_equal(p.hostNumaId, -1);
	assert_int_equal(p.totalConstMem, 0);
	assert_int_equal(p.gpuPciDeviceID, 0x233110deu);
	assert_int_equal(p.gpuPciSubsystemID, 0x16c110deu);
	assert_int_equal(strlen(p.name), sizeof(p.name) - 1);
}

static void test_lookup(void **state)
{
	static int32_t attrs[NATTRS];
	fill_pattern(attrs, NATTRS);
	int v = 12345;
	assert_int_equal(xgpu_devattr_lookup(cudaDevAttrMaxThreadsPerBlock, attrs, NATTRS, &v), cudaSuccess);
	assert_int_equal(v, pattern(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK));
	assert_int_equal(xgpu_devattr_lookup(cudaDevAttrComputeCapabilityMajor, attrs, NATTRS, &v),
			 cudaSuccess);
	assert_int_equal(v, pattern(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR));
	assert_int_equal(
	    xgpu_devattr_lookup(cudaDevAttrOnlyPartialHostNativeAtomicSupported, attrs, NATTRS, &v),
	    cudaSuccess);
	assert_int_equal(v, pattern(CU_DEVICE_ATTRIBUTE_ONLY_PARTIAL_HOST_NATIVE_ATOMIC_SUPPORTED));
	/* Driver attributes with no cudaDevAttr name pass through, as the real
	 * runtime hands any number to cuDeviceGetAttribute. */
	assert_int_equal(xgpu_devattr_lookup(CU_DEVICE_ATTRIBUTE_CAN_TEX2D_GATHER, attrs, NATTRS, &v),
			 cudaSuccess);
	assert_int_equal(v, pattern(CU_DEVICE_ATTRIBUTE_CAN_TEX2D_GATHER));

	/* Not attributes. */
	static const int bad[] = {0, -1, -1000, CU_DEVICE_ATTRIBUTE_MAX, cudaDevAttrMax, 100000, INT32_MAX};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		v = 777;
		assert_int_equal(xgpu_devattr_lookup(bad[i], attrs, NATTRS, &v), cudaErrorInvalidValue);
		assert_int_equal(v, 777);
	}
	assert_int_equal(xgpu_devattr_lookup(cudaDevAttrWarpSize, attrs, NATTRS, NULL),
			 cudaErrorInvalidValue);

	/* Known to us, not reported by the daemon's driver. */
	assert_int_equal(xgpu_devattr_lookup(cudaDevAttrNumaId, attrs, 20, &v), cudaSuccess);
	assert_int_equal(v, 0);
	assert_int_equal(xgpu_devattr_lookup(cudaDevAttrWarpSize, NULL, 50, &v), cudaSuccess);
	assert_int_equal(v, 0);
}

/* Our list of runtime attributes, beside their driver twins. */
static const struct {
	const char *rt_name;
	long rt;
	long cu;
} pairs[] = {
#define XGPU_DEVATTR(rt, cu) {#rt, (long)(rt), (long)(cu)},
#include "../../frontend/runtime/devprop.def"
#undef XGPU_DEVATTR
};

static void test_attr_numbers_match_headers(void **state)
{
	static struct cuda_enumerator rt[512], cu[512];
	int nrt = cuda_enums_parse("driver_types.h", "enum __device_builtin__ cudaDeviceAttr", rt, 512);
	int ncu = cuda_enums_parse("cuda.h", "typedef enum CUdevice_attribute_enum", cu, 512);
	assert_true(nrt > 100);
	assert_true(ncu > 100);

	/* Every cudaDeviceAttr is in frontend/runtime/devprop.def, whose compile-time
	 * checks hold it equal to its CUdevice_attribute. */
	for (int i = 0; i < nrt; i++) {
		if (!strcmp(rt[i].name, "cudaDevAttrMax"))
			continue;
		size_t j;
		for (j = 0; j < sizeof(pairs) / sizeof(pairs[0]); j++)
			if (!strcmp(pairs[j].rt_name, rt[i].name))
				break;
		if (j == sizeof(pairs) / sizeof(pairs[0]))
			fail_msg("%s (%ld) is missing from frontend/runtime/devprop.def", rt[i].name, rt[i].value);
		assert_int_equal(pairs[j].rt, rt[i].value);
		assert_int_equal(pairs[j].cu, pairs[j].rt);
		int v;
		assert_int_equal(xgpu_devattr_lookup((int)rt[i].value, NULL, 0, &v), cudaSuccess);
	}
	assert_int_equal(sizeof(pairs) / sizeof(pairs[0]), nrt - 1);

	/* The lookup's range check assumes driver attributes 1 .. MAX-1 with
	 * no holes; a hole would be accepted wrongly. */
	static unsigned char seen[CU_DEVICE_ATTRIBUTE_MAX + 1];
	for (int i = 0; i < ncu; i++) {
		if (!strcmp(cu[i].name, "CU_DEVICE_ATTRIBUTE_MAX")) {
			assert_int_equal(cu[i].value, CU_DEVICE_ATTRIBUTE_MAX);
			continue;
		}
		assert_true(cu[i].value >= 1 && cu[i].value < CU_DEVICE_ATTRIBUTE_MAX);
		seen[cu[i].value] = 1;
	}
	for (int a = 1; a < CU_DEVICE_ATTRIBUTE_MAX; a++)
		if (!seen[a])
			fail_msg("CUdevice_attribute %d does not exist; xgpu_devattr_lookup accepts it", a);
}

static void h100_limits(int32_t *attrs)
{
	memset(attrs, 0, NATTRS * sizeof *attrs);
	attrs[CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK] = 1024;
	attrs[CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X] = 1024;
	attrs[CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y] = 1024;
	attrs[CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z] = 64;
	attrs[CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X] = 2147483647;
	attrs[CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y] = 65535;
	attrs[CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z] = 65535;
	attrs[CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK] = 49152;
	attrs[CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN] = 232448;
}

static int check(const int32_t *attrs, uint32_t nattrs, uint32_t gx, uint32_t gy, uint32_t gz, uint32_t bx,
		 uint32_t by, uint32_t bz, uint64_t shared)
{
	const uint32_t grid[3] = {gx, gy, gz}, block[3] = {bx, by, bz};
	return xgpu_launch_config_check(attrs, nattrs, grid, block, shared);
}

static void test_launch_config(void **state)
{
	static int32_t attrs[NATTRS];
	h100_limits(attrs);
	const int bad = cudaErrorInvalidValue;
	/* Every limit reached exactly is fine; one more is not. */
	assert_int_equal(check(attrs, NATTRS, 2147483647u, 65535, 65535, 1024, 1, 1, 232448), cudaSuccess);
	assert_int_equal(check(attrs, NATTRS, 1, 1, 1, 1, 1024, 1, 0), cudaSuccess);
	assert_int_equal(check(attrs, NATTRS, 1, 1, 1, 16, 1, 64, 0), cudaSuccess);
	assert_int_equal(check(attrs, NATTRS, 1, 1, 1, 32, 32, 1, 0), cudaSuccess);
	assert_int_equal(check(attrs, NATTRS, 0x80000000u, 1, 1, 1, 1, 1, 0), bad);
	assert_int_equal(check(attrs, NATTRS, 1, 65536, 1, 1, 1, 1, 0), bad);
	assert_int_equal(check(attrs, NATTRS, 1, 1, 65536, 1, 1, 1, 0), bad);
	assert_int_equal(check(attrs, NATTRS, 1, 1, 1, 1025, 1, 1, 0), bad);
	assert_int_equal(check(attrs, NATTRS, 1, 1, 1, 1, 1025, 1, 0), bad);
	assert_int_equal(check(attrs, NATTRS, 1, 1, 1, 1, 1, 65, 0), bad);
	assert_int_equal(check(attrs, NATTRS, 1, 1, 1, 4096, 1, 1, 0), bad);
	/* Each dimension within its maximum, the product over the block's. */
	assert_int_equal(check(attrs, NATTRS, 1, 1, 1, 64, 32, 1, 0), bad);
	assert_int_equal(check(attrs, NATTRS, 1, 1, 1, 1024, 1024, 64, 0), bad);
	assert_int_equal(check(attrs, NATTRS, 1, 1, 1, 1, 1, 1, 232449), bad);
	/* Over the default 48 KiB but within the opt-in maximum: the kernel's
	 * own limit, which only the driver knows. */
	assert_int_equal(check(attrs, NATTRS, 1, 1, 1, 1, 1, 1, 49153), cudaSuccess);
	for (int i = 0; i < 6; i++) {
		uint32_t d[6] = {1, 1, 1, 1, 1, 1};
		d[i] = 0;
		assert_int_equal(check(attrs, NATTRS, d[0], d[1], d[2], d[3], d[4], d[5], 0), bad);
	}

	/* Limits the daemon did not report (missing, 0 or negative) are left to
	 * the driver; zero dimensions and sizes cuLaunchKernel cannot take are
	 * refused all the same. */
	assert_int_equal(check(NULL, 0, 0x80000000u, 1, 1, 4096, 1, 1, 1 << 20), cudaSuccess);
	assert_int_equal(check(NULL, 0, 1, 1, 1, 0, 1, 1, 0), bad);
	assert_int_equal(check(NULL, 0, 1, 1, 1, 1, 1, 1, (uint64_t)UINT32_MAX + 1), bad);
	assert_int_equal(check(attrs, CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X, 1, 1, 1, 1, 2048, 1, 0), bad);
	assert_int_equal(check(attrs, CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X, 1, 1, 1, 1, 1024, 1, 0),
			 cudaSuccess);
	attrs[CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK] = -1;
	attrs[CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y] = 0;
	assert_int_equal(check(attrs, NATTRS, 1, 1, 1, 1, 2048, 1, 0), cudaSuccess);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_fill_every_field),           cmocka_unit_test(test_fill_short_table),
	    cmocka_unit_test(test_fill_realistic_values),      cmocka_unit_test(test_lookup),
	    cmocka_unit_test(test_attr_numbers_match_headers), cmocka_unit_test(test_launch_config),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
