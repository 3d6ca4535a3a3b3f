/* SPDX-License-Identifier: Apache-2.0 */
/* drvapi.c - a program that uses only the CUDA driver API, as NVIDIA's
 * samples do: it links against the toolkit's stub libcuda.so and runs
 * against whichever libcuda.so.1 the loader finds (xgpu's in the tests).
 *
 *   drvapi FATBIN CUBIN
 *
 * FATBIN and CUBIN are tests/data/drvapi_kernels.cu built with nvcc -fatbin
 * and -cubin. Checks device queries, cuGetProcAddress, contexts, copies,
 * memsets, modules from the fatbin and the cubin launched with kernelParams
 * (and cuLaunchKernelEx), a library from the cubin launched with extra, a module global, streams, events,
 * pitched memory and 2D/3D copies, and
 * that an unimplemented entry point answers CUDA_ERROR_NOT_SUPPORTED. Prints
 * "drvapi: OK" and exits 0 when every result is right. */
#include <cuda.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DRV_PROGRAM "drvapi"
#include "drvcheck.h"

#define N 1000

static int failures;

/* cuGetProcAddress answers with the function the library exports under the
 * name of that ABI. */
static void check_proc_address(void)
{
	void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
	EXPECT(lib != NULL);
	if (!lib)
		return;
	struct {
		const char *name;
		int version;
		cuuint64_t flags;
		const char *want;
	} cases[] = {
	    {"cuMemAlloc", 13000, CU_GET_PROC_ADDRESS_DEFAULT, "cuMemAlloc_v2"},
	    {"cuMemAlloc", 2000, CU_GET_PROC_ADDRESS_DEFAULT, "cuMemAlloc"},
	    {"cuMemcpyHtoD", 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, "cuMemcpyHtoD_v2_ptds"},
	    {"cuMemcpyHtoD", 13000, CU_GET_PROC_ADDRESS_LEGACY_STREAM, "cuMemcpyHtoD_v2"},
	    {"cuLaunchKernel", 12000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, "cuLaunchKernel_ptsz"},
	    {"cuCtxCreate", 12000, CU_GET_PROC_ADDRESS_DEFAULT, "cuCtxCreate_v3"},
	    {"cuCtxSynchronize", 13000, CU_GET_PROC_ADDRESS_DEFAULT, "cuCtxSynchronize_v2"},
	    {"cuCtxSynchronize", 12080, CU_GET_PROC_ADDRESS_DEFAULT, "cuCtxSynchronize"},
	    {"cuGetProcAddress", 13000, CU_GET_PROC_ADDRESS_DEFAULT, "cuGetProcAddress_v2"},
	    {"cuDeviceGetCount", 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, "cuDeviceGetCount"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		void *fn = NULL;
		CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
		CUresult r = cuGetProcAddress(cases[i].name, &fn, cases[i].version, cases[i].flags, &st);
		void *want = dlsym(lib, cases[i].want);
		if (r != CUDA_SUCCESS || st != CU_GET_PROC_ADDRESS_SUCCESS || !want || fn != want) {
			fprintf(stderr,
				"drvapi: cuGetProcAddress(%s, %d, %llu) gave %p (%d/%d), want %s at %p\n",
				cases[i].name, cases[i].version, (unsigned long long)cases[i].flags, fn,
				(int)r, (int)st, cases[i].want, want);
			failures++;
		}
	}
	void *fn = &fn;
	CUdriverProcAddressQueryResult st;
	/* cuda.h: not found is CUDA_SUCCESS with a NULL pointer and a status. */
	EXPECT(cuGetProcAddress("cuNoSuchFunction", &fn, 13000, 0, &st) == CUDA_SUCCESS);
	EXPECT(st == CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND && fn == NULL);
	fn = &fn;
	EXPECT(cuGetProcAddress("cuLibraryLoadData", &fn, 11000, 0, &st) == CUDA_SUCCESS);
	EXPECT(st == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT && fn == NULL);
	/* A version newer than the driver's is an error. */
	EXPECT(cuGetProcAddress("cuMemAlloc", &fn, 13010, 0, &st) == CUDA_ERROR_INVALID_VALUE);
	dlclose(lib);
}

/* The private tables NVIDIA's runtime uses (docs/driver-frontend.md),
 * called as it calls them; and a table xgpu does not know is refused. */
static void check_export_tables(CUdevice dev)
{
	static const CUuuid unknown = {
	    {0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef, 0xfe, 0xdc, 0xba, 0x98, 0x76, 0x54, 0x32, 0x10}};
	static const CUuuid cudart = {
	    {0x6b, 0xd5, 0xfb, 0x6c, 0x5b, 0xf4, 0xe7, 0x4a, 0x89, 0x87, 0xd9, 0x39, 0x12, 0xfd, 0x9d, 0xf9}};
	static const CUuuid cls = {
	    {0xc6, 0x93, 0x33, 0x6e, 0x11, 0x21, 0xdf, 0x11, 0xa8, 0xc3, 0x68, 0xf3, 0x55, 0xd8, 0x95, 0x93}};
	static const CUuuid integrity = {
	    {0xd4, 0x08, 0x20, 0x55, 0xbd, 0xe6, 0x70, 0x4b, 0x8d, 0x34, 0xba, 0x12, 0x3c, 0x66, 0xe1, 0xf2}};
	const void *table = &table;
	EXPECT(cuGetExportTable(&table, &unknown) == CUDA_ERROR_NOT_FOUND && table == NULL);
	EXPECT(cuGetExportTable(NULL, &cudart) == CUDA_ERROR_INVALID_VALUE);

	/* CUDART_INTERFACE: slot 0 its size (CUDA 13.1's 13 slots), slot 2 the
	 * primary context. */
	const void *const *t = NULL;
	CHECK(cuGetExportTable((const void **)&t, &cudart));
	EXPECT((uintptr_t)t[0] == 13 * sizeof(void *));
	CUcontext primary = NULL, retained = NULL;
	CHECK(((CUresult(*)(CUcontext *, CUdevice))t[2])(&primary, dev));
	CHECK(cuDevicePrimaryCtxRetain(&retained, dev));
	EXPECT(primary && primary == retained);
	CHECK(cuDevicePrimaryCtxRelease(dev));

	/* CONTEXT_LOCAL_STORAGE: put, get, delete, get again. */
	CHECK(cuGetExportTable((const void **)&t, &cls));
	CUresult (*put)(CUcontext, void *, void *, void *) =
	    (CUresult(*)(CUcontext, void *, void *, void *))t[0];
	CUresult (*del)(CUcontext, void *) = (CUresult(*)(CUcontext, void *))t[1];
	CUresult (*get)(void **, CUcontext, void *) = (CUresult(*)(void **, CUcontext, void *))t[2];
	int key, value;
	void *got = NULL;
	CHECK(put(primary, &key, &value, NULL));
	CHECK(get(&got, primary, &key));
	EXPECT(got == &value);
	CHECK(del(primary, &key));
	EXPECT(get(&got, primary, &key) != CUDA_SUCCESS);
	EXPECT(put(NULL, &key, &value, NULL) == CUDA_ERROR_INVALID_CONTEXT); /* none current */

	/* INTEGRITY_CHECK: the versions of a known release (13.0, 12.4) answer,
	 * another (13.10, variant 3 of 13.0, 11.8) is refused. */
	CHECK(cuGetExportTable((const void **)&t, &integrity));
	CUresult (*check)(uint32_t, uint64_t, uint64_t *) = (CUresult(*)(uint32_t, uint64_t, uint64_t *))t[1];
	uint64_t a[2] = {0}, b[2] = {0};
	CHECK(check(13002, 1700000000, a));
	CHECK(check(13002, 1700000001, b));
	EXPECT((a[0] || a[1]) && (a[0] != b[0] || a[1] != b[1])); /* the timestamp is hashed */
	CHECK(check(12041, 1700000000, b));
	EXPECT(check(13100, 1700000000, a) == CUDA_ERROR_NOT_SUPPORTED);
	EXPECT(check(13003, 1700000000, a) == CUDA_ERROR_NOT_SUPPORTED);
	EXPECT(check(11080, 1700000000, a) == CUDA_ERROR_NOT_SUPPORTED);
	/* A slot xgpu does not implement answers, and names itself. */
	CHECK(cuGetExportTable((const void **)&t, &cudart));
	EXPECT(((CUresult(*)(void))t[3])() == CUDA_ERROR_NOT_SUPPORTED);
}

/* What NVIDIA's libraries use beyond the runtime (docs/driver-frontend.md):
 * TOOLS_TLS slot 2, LIBRARY_RESOURCES slots 4, 51 and 39, MODULE_FUNCTIONS
 * slot 7 and the module's kernels, and pointer attributes. mod holds
 * drv_saxpy and drv_iota; dx and dy are cuMemAlloc'd, 4 * N bytes each. */
static void collect_function(void *user, CUfunction f, uint64_t unknown)
{
	(void)unknown;
	CUfunction *seen = user;
	seen[seen[0] ? 1 : 0] = f;
}

static void check_library_tables(CUcontext ctx, CUmodule mod, CUstream stream, CUdeviceptr dx, CUdeviceptr dy)
{
	static const CUuuid tools_tls = {
	    {0x42, 0xd8, 0x5a, 0x81, 0x23, 0xf6, 0xcb, 0x47, 0x82, 0x98, 0xf6, 0xe7, 0x8a, 0x3a, 0xec, 0xdc}};
	static const CUuuid library = {
	    {0x21, 0x31, 0x8c, 0x60, 0x97, 0x14, 0x32, 0x48, 0x8c, 0xa6, 0x41, 0xff, 0x73, 0x24, 0xc8, 0xf2}};
	static const CUuuid module_functions = {
	    {0x6e, 0x16, 0x3f, 0xbe, 0xb9, 0x58, 0x44, 0x4d, 0x83, 0x5c, 0xe1, 0x82, 0xaf, 0xf1, 0x99, 0x1e}};
	const void *const *t = NULL;
	CHECK(cuGetExportTable((const void **)&t, &tools_tls));
	CUcontext got = NULL;
	CHECK(((CUresult(*)(CUcontext *))t[2])(&got));
	EXPECT(got == ctx);

	CHECK(cuGetExportTable((const void **)&t, &library));
	CUresult (*context_id)(CUcontext, uint64_t *) = (CUresult(*)(CUcontext, uint64_t *))t[4];
	CUresult (*stream_object)(CUcontext, CUstream, void **, int) =
	    (CUresult(*)(CUcontext, CUstream, void **, int))t[51];
	CUresult (*stream_id)(CUcontext, void *, uint64_t *) =
	    (CUresult(*)(CUcontext, void *, uint64_t *))t[39];
	uint64_t id = 0, again = 0, sid = 0, default_sid = 0;
	CHECK(context_id(ctx, &id));
	CHECK(context_id(NULL, &again));
	unsigned long long ctx_id = 0;
	CHECK(cuCtxGetId(ctx, &ctx_id));
	EXPECT(id && id == again && id == ctx_id);
	void *object = NULL, *default_object = NULL;
	CHECK(stream_object(NULL, stream, &object, 0));
	CHECK(stream_object(NULL, CU_STREAM_PER_THREAD, &default_object, 1));
	CHECK(stream_id(NULL, object, &sid));
	CHECK(stream_id(NULL, default_object, &default_sid));
	EXPECT(sid && default_sid && sid != default_sid);
	EXPECT(context_id((CUcontext)&id, &id) == CUDA_ERROR_INVALID_CONTEXT);
	EXPECT(((CUresult(*)(void))t[5])() == CUDA_ERROR_NOT_SUPPORTED);

	/* MODULE_FUNCTIONS slot 7: each kernel of the module to the callback. */
	unsigned count = 0;
	CHECK(cuModuleGetFunctionCount(&count, mod));
	EXPECT(count == 2);
	CUfunction listed[2] = {NULL, NULL}, seen[2] = {NULL, NULL};
	CHECK(cuModuleEnumerateFunctions(listed, 2, mod));
	const char *first = "", *second = "";
	CHECK(cuFuncGetName(&first, listed[0]));
	CHECK(cuFuncGetName(&second, listed[1]));
	EXPECT((!strcmp(first, "drv_saxpy") && !strcmp(second, "drv_iota")) ||
	       (!strcmp(first, "drv_iota") && !strcmp(second, "drv_saxpy")));
	CHECK(cuGetExportTable((const void **)&t, &module_functions));
	EXPECT((uintptr_t)t[0] > 7 * sizeof(void *));
	unsigned (*each)(CUcontext, CUmodule, void (*)(void *, CUfunction, uint64_t), void *) =
	    (unsigned (*)(CUcontext, CUmodule, void (*)(void *, CUfunction, uint64_t), void *))t[7];
	EXPECT(each(ctx, mod, collect_function, seen) == 2);
	EXPECT(seen[0] == listed[0] && seen[1] == listed[1]);
	EXPECT(each(ctx, (CUmodule)&count, collect_function, seen) == 0);

	/* Pointer attributes of cuMemAlloc'd memory, an interior pointer
	 * included; host memory is not the driver's. */
	unsigned long long bx = 0, by = 0;
	CHECK(cuPointerGetAttribute(&bx, CU_POINTER_ATTRIBUTE_BUFFER_ID, dx));
	CHECK(cuPointerGetAttribute(&by, CU_POINTER_ATTRIBUTE_BUFFER_ID, dy + 8));
	EXPECT(bx && by && bx != by);
	CUdeviceptr start = 0;
	size_t range = 0;
	unsigned type = 0;
	CHECK(cuPointerGetAttribute(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, dy + 8));
	CHECK(cuPointerGetAttribute(&range, CU_POINTER_ATTRIBUTE_RANGE_SIZE, dy + 8));
	CHECK(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, dx));
	EXPECT(start == dy && range == N * sizeof(float) && type == CU_MEMORYTYPE_DEVICE);
	EXPECT(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
				     (CUdeviceptr)(uintptr_t)&type) == CUDA_ERROR_INVALID_VALUE);
	CUpointer_attribute which[2] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
					CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL};
	int ordinal = 7;
	type = 7;
	void *values[2] = {&type, &ordinal};
	CHECK(cuPointerGetAttributes(2, which, values, (CUdeviceptr)(uintptr_t)&type));
	EXPECT(type == 0 && ordinal == -2);
	CHECK(cuPointerGetAttributes(2, which, values, dx));
	EXPECT(type == CU_MEMORYTYPE_DEVICE && ordinal == 0);
}

/* Pitched memory and the copies that name memory types: cuMemAllocPitch,
 * cuMemcpy2D from host rows, device to device (as UNIFIED) at an offset and
 * back, cuMemcpy3D of two slices, cuMemsetD2D32 with a pattern and
 * cuMemsetD2D8Async, all checked against the host's own arithmetic; a CUDA
 * array is refused as not supported. */
static void check_pitched(CUstream stream)
{
	enum { W = 40, H = 9 }; /* bytes, rows */
	int align = 0;
	CHECK(cuDeviceGetAttribute(&align, CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT, 0));
	CUdeviceptr a, b;
	size_t pa = 0, pb = 0;
	EXPECT(cuMemAllocPitch(&a, &pa, W, H, 3) == CUDA_ERROR_INVALID_VALUE);
	CHECK(cuMemAllocPitch(&a, &pa, W, H, 4));
	CHECK(cuMemAllocPitch(&b, &pb, W, H * 2, 8));
	EXPECT(pa >= W && align > 0 && pa % (size_t)align == 0 && pb == pa);
	static unsigned char host[H][W + 3], back[H][W + 3];
	for (int y = 0; y < H; y++)
		for (int x = 0; x < W + 3; x++)
			host[y][x] = (unsigned char)(y * 31 + x);
	CUDA_MEMCPY2D up = {.srcMemoryType = CU_MEMORYTYPE_HOST,
			    .srcHost = host,
			    .srcPitch = W + 3,
			    .dstMemoryType = CU_MEMORYTYPE_DEVICE,
			    .dstDevice = a,
			    .dstPitch = pa,
			    .WidthInBytes = W,
			    .Height = H};
	CHECK(cuMemcpy2D(&up));
	CHECK(cuMemsetD2D8Async(b, pb, 0, pb, H * 2, stream));
	CUDA_MEMCPY2D across = {.srcMemoryType = CU_MEMORYTYPE_UNIFIED,
				.srcDevice = a,
				.srcXInBytes = 2,
				.srcY = 1,
				.srcPitch = pa,
				.dstMemoryType = CU_MEMORYTYPE_UNIFIED,
				.dstDevice = b,
				.dstY = 3,
				.dstPitch = pb,
				.WidthInBytes = W - 2,
				.Height = H - 1};
	CHECK(cuMemcpy2DAsync(&across, stream));
	CUDA_MEMCPY2D down = {.srcMemoryType = CU_MEMORYTYPE_DEVICE,
			      .srcDevice = b,
			      .srcY = 3,
			      .srcPitch = pb,
			      .dstMemoryType = CU_MEMORYTYPE_HOST,
			      .dstHost = back,
			      .dstPitch = W + 3,
			      .WidthInBytes = W - 2,
			      .Height = H - 1};
	CHECK(cuMemcpy2DAsync(&down, stream));
	CHECK(cuStreamSynchronize(stream));
	int bad = 0;
	for (int y = 0; y < H - 1; y++)
		for (int x = 0; x < W - 2; x++)
			bad += back[y][x] != host[y + 1][x + 2];
	EXPECT(bad == 0);

	/* The host rows (again, through the Unaligned form) into both slices of
	 * a volume, device to device, then the whole volume to the host. */
	CHECK(cuMemcpy2DUnaligned(&up));
	CUDA_MEMCPY3D vol = {.srcMemoryType = CU_MEMORYTYPE_DEVICE,
			     .srcDevice = a,
			     .srcPitch = pa,
			     .srcHeight = H,
			     .dstMemoryType = CU_MEMORYTYPE_DEVICE,
			     .dstDevice = b,
			     .dstPitch = pb,
			     .dstHeight = H,
			     .WidthInBytes = W,
			     .Height = H,
			     .Depth = 1};
	CHECK(cuMemcpy3D(&vol));
	vol.dstZ = 1;
	CHECK(cuMemcpy3DAsync(&vol, stream));
	static unsigned char slices[2][H][W];
	CUDA_MEMCPY3D out = {.srcMemoryType = CU_MEMORYTYPE_DEVICE,
			     .srcDevice = b,
			     .srcPitch = pb,
			     .srcHeight = H,
			     .dstMemoryType = CU_MEMORYTYPE_HOST,
			     .dstHost = slices,
			     .dstPitch = W,
			     .dstHeight = H,
			     .WidthInBytes = W,
			     .Height = H,
			     .Depth = 2};
	CHECK(cuMemcpy3DAsync(&out, stream));
	CHECK(cuStreamSynchronize(stream));
	bad = 0;
	for (int z = 0; z < 2; z++)
		for (int y = 0; y < H; y++)
			bad += memcmp(slices[z][y], host[y], W) != 0;
	EXPECT(bad == 0);

	/* A 32-bit pattern over the rows, then read through the unified cuMemcpy. */
	CHECK(cuMemsetD2D32(a, pa, 0xa1b2c3d4u, W / 4, H));
	static uint32_t words[H][W / 4];
	for (int y = 0; y < H; y++)
		CHECK(cuMemcpy((CUdeviceptr)words[y], a + y * pa, W));
	bad = 0;
	for (int y = 0; y < H; y++)
		for (int x = 0; x < W / 4; x++)
			bad += words[y][x] != 0xa1b2c3d4u;
	EXPECT(bad == 0);

	/* An array that is none, and rows past the allocation, are refused
	 * (CUDA arrays themselves: tests/samples/drvsample.c). */
	CUDA_MEMCPY2D array = up;
	array.dstMemoryType = CU_MEMORYTYPE_ARRAY;
	EXPECT(cuMemcpy2D(&array) == CUDA_ERROR_INVALID_HANDLE);
	CUDA_MEMCPY2D past = across;
	past.Height = H * 2;
	EXPECT(cuMemcpy2D(&past) == CUDA_ERROR_INVALID_VALUE);
	CHECK(cuMemFree(a));
	CHECK(cuMemFree(b));
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: drvapi FATBIN CUBIN\n");
		return 2;
	}
	void *fatbin = read_file(argv[1]), *cubin = read_file(argv[2]);

	int count = -1;
	EXPECT(cuDeviceGetCount(&count) == CUDA_ERROR_NOT_INITIALIZED);
	EXPECT(cuInit(1) == CUDA_ERROR_INVALID_VALUE);
	CHECK(cuInit(0));
	int version = 0;
	CHECK(cuDriverGetVersion(&version));
	EXPECT(version >= 13000);
	CHECK(cuDeviceGetCount(&count));
	EXPECT(count >= 1);
	CUdevice dev;
	CHECK(cuDeviceGet(&dev, 0));
	EXPECT(cuDeviceGet(&dev, count) == CUDA_ERROR_INVALID_DEVICE);
	char name[256];
	CHECK(cuDeviceGetName(name, sizeof name, dev));
	int major = 0, minor = -1;
	CHECK(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev));
	CHECK(cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev));
	EXPECT(major >= 1 && minor >= 0);
	size_t total = 0;
	CHECK(cuDeviceTotalMem(&total, dev));
	EXPECT(total > 0);
	CUuuid uuid;
	CHECK(cuDeviceGetUuid(&uuid, dev));
	printf("drvapi: device 0: %s, sm_%d%d, %zu MiB\n", name, major, minor, total >> 20);
	check_proc_address();
	check_export_tables(dev);

	/* Without a current context, memory calls fail as CUDA's do. */
	CUdeviceptr none;
	EXPECT(cuMemAlloc(&none, 16) == CUDA_ERROR_INVALID_CONTEXT);
	CUcontext ctx, cur = NULL;
	CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
	CHECK(cuCtxSetCurrent(ctx));
	CHECK(cuCtxGetCurrent(&cur));
	EXPECT(cur == ctx);
	CUdevice ctxdev = -1;
	CHECK(cuCtxGetDevice(&ctxdev));
	EXPECT(ctxdev == dev);
	unsigned flags;
	int active = 0;
	CHECK(cuDevicePrimaryCtxGetState(dev, &flags, &active));
	EXPECT(active == 1);
	size_t free_mem = 0, total_mem = 0;
	CHECK(cuMemGetInfo(&free_mem, &total_mem));
	EXPECT(free_mem > 0 && free_mem <= total_mem);

	/* saxpy from the fatbin, parameters through kernelParams. */
	CUmodule mod;
	CHECK(cuModuleLoadData(&mod, fatbin));
	CUfunction saxpy;
	CHECK(cuModuleGetFunction(&saxpy, mod, "drv_saxpy"));
	EXPECT(cuModuleGetFunction(&saxpy, mod, "no_such_kernel") == CUDA_ERROR_NOT_FOUND);
	size_t off = 0, size = 0;
	CHECK(cuFuncGetParamInfo(saxpy, 3, &off, &size));
	EXPECT(off == 24 && size == 4);
	/* Occupancy as libraries ask for it: shared memory left per block, and
	 * clusters (of one block, and of two) that fit at once. */
	int per_sm_smem = 0, reserved = 0, optin = 0, sms = 0, static_smem = -1, blocks = 0, clusters = 0;
	CHECK(cuDeviceGetAttribute(&per_sm_smem, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR,
				   dev));
	CHECK(cuDeviceGetAttribute(&reserved, CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK, dev));
	CHECK(cuDeviceGetAttribute(&optin, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, dev));
	CHECK(cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev));
	CHECK(cuFuncGetAttribute(&static_smem, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, saxpy));
	size_t dyn = 0;
	CHECK(cuOccupancyAvailableDynamicSMemPerBlock(&dyn, saxpy, 4, 128));
	size_t want_dyn = (size_t)(per_sm_smem / 4 - reserved < optin ? per_sm_smem / 4 - reserved : optin) -
			  (size_t)static_smem;
	EXPECT(per_sm_smem > 0 && dyn == want_dyn);
	CHECK(cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, saxpy, 128, 0));
	/* The frontend keeps the answers per function, block size, shared memory
	 * and flags: five keys, more than it keeps, asked twice, each answer its
	 * own; shared memory for 4 blocks allows fewer than none does. */
	int first[5], again[5];
	for (int round = 0; round < 2; round++)
		for (int k = 0; k < 5; k++)
			CHECK(cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(
			    round ? &again[k] : &first[k], saxpy, 128 << (k % 3), k == 4 ? dyn : 0,
			    k == 3 ? CU_OCCUPANCY_DISABLE_CACHING_OVERRIDE : 0));
	for (int k = 0; k < 5; k++)
		EXPECT(first[k] == again[k] && first[k] > 0);
	EXPECT(first[0] == blocks && first[4] < blocks && first[1] <= blocks);
	CUlaunchConfig occ = {
	    .gridDimX = 1, .gridDimY = 1, .gridDimZ = 1, .blockDimX = 128, .blockDimY = 1, .blockDimZ = 1};
	CHECK(cuOccupancyMaxActiveClusters(&clusters, saxpy, &occ));
	EXPECT(blocks > 0 && clusters == blocks * sms);
	CUlaunchAttribute pair = {.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION};
	pair.value.clusterDim.x = 2;
	pair.value.clusterDim.y = pair.value.clusterDim.z = 1;
	occ.attrs = &pair;
	occ.numAttrs = 1;
	CHECK(cuOccupancyMaxActiveClusters(&clusters, saxpy, &occ));
	EXPECT(clusters == blocks * sms / 2);
	static float x[N], y[N], out[N];
	for (int i = 0; i < N; i++) {
		x[i] = (float)i;
		y[i] = 1.0f;
	}
	CUdeviceptr dx, dy;
	CHECK(cuMemAlloc(&dx, sizeof x));
	CHECK(cuMemAlloc(&dy, sizeof y));
	CUstream stream;
	CHECK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
	check_library_tables(ctx, mod, stream, dx, dy);
	/* No stream is ever capturing (xgpu offers no graphs), in every ABI. */
	CUstreamCaptureStatus cap = CU_STREAM_CAPTURE_STATUS_ACTIVE;
	CHECK(cuStreamIsCapturing(stream, &cap));
	EXPECT(cap == CU_STREAM_CAPTURE_STATUS_NONE);
	cuuint64_t cap_id = 7;
	size_t ndeps = 7;
	cap = CU_STREAM_CAPTURE_STATUS_ACTIVE;
	CHECK(cuStreamGetCaptureInfo(stream, &cap, &cap_id, NULL, NULL, NULL, &ndeps));
	EXPECT(cap == CU_STREAM_CAPTURE_STATUS_NONE && ndeps == 0);
	CUevent start, stop;
	CHECK(cuEventCreate(&start, CU_EVENT_DEFAULT));
	CHECK(cuEventCreate(&stop, CU_EVENT_DEFAULT));
	CHECK(cuMemcpyHtoDAsync(dx, x, sizeof x, stream));
	CHECK(cuMemcpyHtoD(dy, y, sizeof y));
	float a = 2.0f;
	int n = N;
	void *params[] = {&a, &dx, &dy, &n};
	CHECK(cuEventRecord(start, stream));
	CHECK(cuLaunchKernel(saxpy, (N + 127) / 128, 1, 1, 128, 1, 1, 0, stream, params, NULL));
	CHECK(cuEventRecord(stop, stream));
	CHECK(cuStreamSynchronize(stream));
	CHECK(cuEventSynchronize(stop));
	float ms = -1;
	CHECK(cuEventElapsedTime(&ms, start, stop));
	EXPECT(ms >= 0);
	/* NVIDIA's runtime records every event with the flags form (PyTorch's). */
	CHECK(cuEventRecordWithFlags(stop, stream, CU_EVENT_RECORD_EXTERNAL));
	EXPECT(cuEventRecordWithFlags(stop, stream, 0x80) == CUDA_ERROR_INVALID_VALUE);
	CHECK(cuEventSynchronize(stop));
	CHECK(cuMemcpyDtoH(out, dy, sizeof out));
	int bad = 0;
	for (int i = 0; i < N; i++)
		bad += out[i] != 2.0f * (float)i + 1.0f;
	EXPECT(bad == 0);

	/* cuLaunchKernelEx without attributes: y = 1 * x + y once more. */
	a = 1.0f;
	CUlaunchConfig cfg = {.gridDimX = (N + 127) / 128,
			      .gridDimY = 1,
			      .gridDimZ = 1,
			      .blockDimX = 128,
			      .blockDimY = 1,
			      .blockDimZ = 1,
			      .hStream = stream};
	CHECK(cuLaunchKernelEx(&cfg, saxpy, params, NULL));
	CHECK(cuStreamSynchronize(stream));
	CHECK(cuMemcpyDtoH(out, dy, sizeof out));
	bad = 0;
	for (int i = 0; i < N; i++)
		bad += out[i] != 3.0f * (float)i + 1.0f;
	EXPECT(bad == 0);

	/* The same kernel from the bare cubin through cuModuleLoadData. */
	CUmodule cubin_mod;
	CHECK(cuModuleLoadData(&cubin_mod, cubin));
	CUfunction saxpy2;
	CHECK(cuModuleGetFunction(&saxpy2, cubin_mod, "drv_saxpy"));
	CHECK(cuLaunchKernel(saxpy2, (N + 127) / 128, 1, 1, 128, 1, 1, 0, NULL, params, NULL));
	CHECK(cuMemcpyDtoH(out, dy, sizeof out));
	bad = 0;
	for (int i = 0; i < N; i++)
		bad += out[i] != 4.0f * (float)i + 1.0f;
	EXPECT(bad == 0);
	CHECK(cuModuleUnload(cubin_mod));

	/* Error names and descriptions. */
	const char *str = NULL;
	CHECK(cuGetErrorName(CUDA_ERROR_INVALID_VALUE, &str));
	EXPECT(str && !strcmp(str, "CUDA_ERROR_INVALID_VALUE"));
	CHECK(cuGetErrorString(CUDA_ERROR_OUT_OF_MEMORY, &str));
	EXPECT(str && *str && strcmp(str, "unrecognized error code") &&
	       strcmp(str, "CUDA_ERROR_OUT_OF_MEMORY"));
	EXPECT(cuGetErrorName((CUresult)12345, &str) == CUDA_ERROR_INVALID_VALUE);

	/* iota from the bare cubin as a library, parameters through extra. */
	CUlibrary lib;
	CHECK(cuLibraryLoadData(&lib, cubin, NULL, NULL, 0, NULL, NULL, 0));
	CUkernel kern;
	CHECK(cuLibraryGetKernel(&kern, lib, "drv_iota"));
	CUfunction iota;
	CHECK(cuKernelGetFunction(&iota, kern));
	CUdeviceptr table;
	size_t table_bytes = 0;
	CHECK(cuLibraryGetGlobal(&table, &table_bytes, lib, "drv_table"));
	EXPECT(table_bytes == 256 * sizeof(int));
	struct {
		CUdeviceptr out;
		int base, n;
	} args = {table, 100, 256};
	size_t args_size = sizeof args;
	void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &args, CU_LAUNCH_PARAM_BUFFER_SIZE, &args_size,
			 CU_LAUNCH_PARAM_END};
	CHECK(cuLaunchKernel(iota, 2, 1, 1, 128, 1, 1, 0, NULL, NULL, extra));
	CHECK(cuCtxSynchronize());
	static int ints[256];
	CHECK(cuMemcpyDtoH(ints, table, sizeof ints));
	bad = 0;
	for (int i = 0; i < 256; i++)
		bad += ints[i] != 100 + i;
	EXPECT(bad == 0);

	/* Device-to-device copy and the memset family. */
	CUdeviceptr dz;
	CHECK(cuMemAlloc(&dz, sizeof ints));
	CHECK(cuMemcpyDtoD(dz, table, sizeof ints));
	CHECK(cuMemsetD32(table, 0x01020304u, 128));
	CHECK(cuMemsetD8Async(table + 512, 0x7f, 512, stream));
	CHECK(cuStreamSynchronize(stream));
	CHECK(cuMemcpyDtoH(ints, table, sizeof ints));
	bad = 0;
	for (int i = 0; i < 128; i++)
		bad += ints[i] != 0x01020304;
	for (int i = 128; i < 256; i++)
		bad += ints[i] != 0x7f7f7f7f;
	EXPECT(bad == 0);
	CHECK(cuMemcpyDtoH(ints, dz, sizeof ints));
	EXPECT(ints[0] == 100 && ints[255] == 355);

	check_pitched(stream);

	/* An entry point xgpu does not implement answers NOT_SUPPORTED. */
	/* (graphics interop: a guest has no display to share) */
	EXPECT(cuGraphicsUnregisterResource(NULL) == CUDA_ERROR_NOT_SUPPORTED);
	EXPECT(cuGraphicsUnregisterResource(NULL) == CUDA_ERROR_NOT_SUPPORTED);

	CHECK(cuEventDestroy(start));
	CHECK(cuEventDestroy(stop));
	CHECK(cuStreamDestroy(stream));
	CHECK(cuMemFree(dx));
	CHECK(cuMemFree(dy));
	CHECK(cuMemFree(dz));
	CHECK(cuLibraryUnload(lib));
	CHECK(cuModuleUnload(mod));
	CHECK(cuDevicePrimaryCtxRelease(dev));
	free(fatbin);
	free(cubin);
	if (failures) {
		fprintf(stderr, "drvapi: %d checks failed\n", failures);
		return 1;
	}
	printf("drvapi: OK\n");
	return 0;
}
