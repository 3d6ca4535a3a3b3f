/* SPDX-License-Identifier: Apache-2.0 */
/* nvml_check.c - drives xgpu's libnvidia-ml.so.1 as NVML's clients do
 * (dlopen, then the entry points by name) and checks every answer against
 * what libcuda.so.1 says of the same device, plus the refusals: calls before
 * nvmlInit, bad handles, short buffers, unknown bus ids.
 *
 *   nvml_check          the checks; prints "nvml: N checks passed" or fails
 *   nvml_check init     only nvmlInit_v2's result, as a number (no xgpud)
 */
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../frontend/nvml/nvml.h"

static int checks;

#define CHECK(cond, ...)                                                                                     \
	do {                                                                                                 \
		if (!(cond)) {                                                                               \
			fprintf(stderr, "nvml_check: line %d: %s: ", __LINE__, #cond);                       \
			fprintf(stderr, __VA_ARGS__);                                                        \
			fprintf(stderr, "\n");                                                               \
			exit(1);                                                                             \
		}                                                                                            \
		checks++;                                                                                    \
	} while (0)

static void *lib;

static void *sym(const char *name)
{
	void *p = dlsym(lib, name);
	if (!p) {
		fprintf(stderr, "nvml_check: libnvidia-ml.so.1 lacks %s\n", name);
		exit(1);
	}
	return p;
}

#define NVML(name) ((__typeof__(&name))sym(#name))

int main(int argc, char **argv)
{
	lib = dlopen("libnvidia-ml.so.1", RTLD_NOW);
	if (!lib) {
		fprintf(stderr, "nvml_check: %s\n", dlerror());
		return 1;
	}
	if (argc > 1 && !strcmp(argv[1], "init")) {
		printf("%d\n", (int)NVML(nvmlInit_v2)());
		return 0;
	}
	unsigned n = 0;
	nvmlDevice_t d;
	char buf[128];
	/* Before nvmlInit, as NVIDIA's library answers. */
	CHECK(NVML(nvmlDeviceGetCount_v2)(&n) == NVML_ERROR_UNINITIALIZED, "count before init");
	CHECK(NVML(nvmlDeviceGetHandleByIndex_v2)(0, &d) == NVML_ERROR_UNINITIALIZED, "handle before init");
	CHECK(NVML(nvmlShutdown)() == NVML_ERROR_UNINITIALIZED, "shutdown before init");
	CHECK(NVML(nvmlInit_v2)() == NVML_SUCCESS, "init");
	CHECK(NVML(nvmlInit)() == NVML_SUCCESS, "a second init counts");

	int cn = 0;
	CHECK(cuInit(0) == CUDA_SUCCESS && cuDeviceGetCount(&cn) == CUDA_SUCCESS, "libcuda");
	CHECK(NVML(nvmlDeviceGetCount_v2)(&n) == NVML_SUCCESS && n == (unsigned)cn, "count %u, libcuda %d", n,
	      cn);
	CHECK(n >= 1, "no device");
	int ver = 0, cver = 0;
	CHECK(NVML(nvmlSystemGetCudaDriverVersion_v2)(&ver) == NVML_SUCCESS &&
		  cuDriverGetVersion(&cver) == 0 && ver == cver,
	      "cuda version %d, libcuda %d", ver, cver);
	CHECK(NVML(nvmlSystemGetDriverVersion)(buf, sizeof buf) == NVML_SUCCESS && atoi(buf) >= 525,
	      "driver version '%s'", buf);
	CHECK(NVML(nvmlSystemGetDriverVersion)(buf, 2) == NVML_ERROR_INSUFFICIENT_SIZE,
	      "short version buffer");

	for (unsigned i = 0; i < n; i++) {
		CHECK(NVML(nvmlDeviceGetHandleByIndex_v2)(i, &d) == NVML_SUCCESS, "handle %u", i);
		unsigned idx = 99;
		CHECK(NVML(nvmlDeviceGetIndex)(d, &idx) == NVML_SUCCESS && idx == i, "index %u of %u", idx,
		      i);
		char cname[128];
		CHECK(NVML(nvmlDeviceGetName)(d, buf, sizeof buf) == NVML_SUCCESS &&
			  cuDeviceGetName(cname, sizeof cname, (CUdevice)i) == 0 && !strcmp(buf, cname),
		      "name '%s', libcuda '%s'", buf, cname);
		CUuuid u;
		char want[80];
		CHECK(cuDeviceGetUuid(&u, (CUdevice)i) == 0, "uuid");
		const unsigned char *b = (const unsigned char *)u.bytes;
		snprintf(want, sizeof want,
			 "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
			 b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
			 b[14], b[15]);
		CHECK(NVML(nvmlDeviceGetUUID)(d, buf, sizeof buf) == NVML_SUCCESS && !strcmp(buf, want),
		      "uuid '%s', libcuda '%s'", buf, want);
		nvmlDevice_t by_uuid = NULL;
		CHECK(NVML(nvmlDeviceGetHandleByUUID)(want, &by_uuid) == NVML_SUCCESS && by_uuid == d,
		      "by uuid");
		int p2p = 0;
		CHECK(NVML(nvmlDeviceGetP2PStatus)(d, d, 0, &p2p) == NVML_SUCCESS &&
			  p2p == NVML_P2P_STATUS_NOT_SUPPORTED,
		      "p2p status %d", p2p);
		int maj = 0, min = 0, cmaj = -1, cmin = -1;
		cuDeviceGetAttribute(&cmaj, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, (CUdevice)i);
		cuDeviceGetAttribute(&cmin, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, (CUdevice)i);
		CHECK(NVML(nvmlDeviceGetCudaComputeCapability)(d, &maj, &min) == NVML_SUCCESS &&
			  maj == cmaj && min == cmin,
		      "capability %d.%d, libcuda %d.%d", maj, min, cmaj, cmin);
		/* The bus id libcuda gives finds this handle again, in NVML's
		 * and CUDA's spellings. */
		nvmlPciInfo_t pci;
		char cbus[64];
		CHECK(NVML(nvmlDeviceGetPciInfo_v3)(d, &pci) == NVML_SUCCESS, "pci info");
		CHECK(cuDeviceGetPCIBusId(cbus, sizeof cbus, (CUdevice)i) == 0, "libcuda bus id");
		CHECK(!strcasecmp(pci.busId, cbus), "bus id '%s', libcuda '%s'", pci.busId, cbus);
		nvmlDevice_t again = NULL;
		CHECK(NVML(nvmlDeviceGetHandleByPciBusId_v2)(cbus, &again) == NVML_SUCCESS && again == d,
		      "by bus id '%s'", cbus);
		CHECK(NVML(nvmlDeviceGetHandleByPciBusId_v2)(pci.busIdLegacy, &again) == NVML_SUCCESS &&
			  again == d,
		      "by legacy bus id '%s'", pci.busIdLegacy);
		/* Memory: the domain's, as its context sees it. */
		nvmlMemory_t m;
		size_t cfree = 0, ctotal = 0;
		CUcontext ctx;
		CHECK(cuDevicePrimaryCtxRetain(&ctx, (CUdevice)i) == 0 && cuCtxPushCurrent(ctx) == 0,
		      "context");
		CUdeviceptr p;
		CHECK(cuMemAlloc(&p, 64 << 20) == 0, "alloc");
		CHECK(cuMemGetInfo(&cfree, &ctotal) == 0, "libcuda memory");
		CHECK(NVML(nvmlDeviceGetMemoryInfo)(d, &m) == NVML_SUCCESS, "memory");
		CHECK(m.total == ctotal && m.free == cfree && m.used == m.total - m.free &&
			  m.used >= (64u << 20),
		      "memory total %llu free %llu used %llu, libcuda %zu %zu", m.total, m.free, m.used,
		      ctotal, cfree);
		cuMemFree(p);
		cuCtxPopCurrent(&ctx);
		cuDevicePrimaryCtxRelease((CUdevice)i);
		unsigned gen = 0;
		CHECK(NVML(nvmlDeviceGetCurrPcieLinkGeneration)(d, &gen) == NVML_ERROR_NOT_SUPPORTED, "pcie");
		nvmlEnableState_t st;
		CHECK(NVML(nvmlDeviceGetNvLinkState)(d, 0, &st) == NVML_ERROR_NOT_SUPPORTED, "nvlink");
	}

	/* Hostile or mistaken arguments. */
	CHECK(NVML(nvmlDeviceGetHandleByIndex_v2)(n, &d) == NVML_ERROR_INVALID_ARGUMENT,
	      "index past the end");
	CHECK(NVML(nvmlDeviceGetHandleByIndex_v2)(0, NULL) == NVML_ERROR_INVALID_ARGUMENT, "NULL out");
	struct {
		unsigned magic, index;
	} forged = {0x6e766d6cu, 0};
	CHECK(NVML(nvmlDeviceGetName)((nvmlDevice_t)(void *)&forged, buf, sizeof buf) ==
		  NVML_ERROR_INVALID_ARGUMENT,
	      "a forged handle");
	CHECK(NVML(nvmlDeviceGetName)(NULL, buf, sizeof buf) == NVML_ERROR_INVALID_ARGUMENT, "NULL handle");
	CHECK(NVML(nvmlDeviceGetHandleByIndex_v2)(0, &d) == NVML_SUCCESS, "handle");
	CHECK(NVML(nvmlDeviceGetName)(d, buf, 3) == NVML_ERROR_INSUFFICIENT_SIZE, "short name buffer");
	CHECK(NVML(nvmlDeviceGetHandleByPciBusId_v2)("0000:ff:1f.0", &d) == NVML_ERROR_NOT_FOUND,
	      "unknown bus id");
	CHECK(NVML(nvmlDeviceGetHandleByPciBusId_v2)("not a bus id", &d) != NVML_SUCCESS, "garbage bus id");
	CHECK(NVML(nvmlDeviceGetHandleByUUID)("GPU-00000000-0000-0000-0000-000000000000", &d) ==
		  NVML_ERROR_NOT_FOUND,
	      "unknown uuid");
	/* What PyTorch resolves by name when it loads NVML (c10/cuda/driver_api.cpp). */
	sym("nvmlDeviceGetNvLinkRemoteDeviceType");
	sym("nvmlDeviceGetNvLinkRemotePciInfo_v2");
	sym("nvmlDeviceGetComputeRunningProcesses");
	sym("nvmlDeviceGetGpuFabricInfoV");
	CHECK(strlen(NVML(nvmlErrorString)(NVML_ERROR_NOT_SUPPORTED)) > 0, "error string");

	CHECK(NVML(nvmlShutdown)() == NVML_SUCCESS && NVML(nvmlShutdown)() == NVML_SUCCESS, "two shutdowns");
	CHECK(NVML(nvmlShutdown)() == NVML_ERROR_UNINITIALIZED, "a third shutdown");
	printf("nvml: %d checks passed on %u device(s)\n", checks, n);
	return 0;
}
