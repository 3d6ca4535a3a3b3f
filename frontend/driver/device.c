/* SPDX-License-Identifier: Apache-2.0 */
/* device.c - cuInit, the driver version, device queries, primary and
 * ordinary contexts.
 *
 * A guest sees the devices its domain is bound to (the handshake's count);
 * their description comes from the daemon once and is answered locally.
 * Every context of the process, primary or created, stands for the channel's
 * one context in the daemon: contexts here only carry CUDA's bookkeeping
 * (current per thread, the primary's retain count and flags), so programs
 * that juggle them keep working while their work lands in one place. */
#include "allocs.h"
#include "cuerr.h"
#include "driver.h"
#include "managed.h"
#include "mempool.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define CTX_MAGIC 0x78637478u /* "xctx" */
#define MAX_DEVICES 16
#define CTX_STACK_DEPTH 32

struct CUctx_st {
	uint32_t magic;
	CUdevice device;
	bool primary;
	unsigned flags;
	unsigned long long id; /* cuCtxGetId: never reused within the process */
};

static pthread_mutex_t drv_lock = PTHREAD_MUTEX_INITIALIZER;
static bool initialised;
static atomic_uint created_contexts; /* cuCtxCreate's, not destroyed yet */
static unsigned init_generation;     /* xgpu_fork_generation at cuInit */
static struct CUctx_st primaries[MAX_DEVICES];
static _Atomic unsigned long long last_ctx_id;
static unsigned primary_refs[MAX_DEVICES];

/* The calling thread's context stack; the top is the current context. */
static _Thread_local CUcontext ctx_stack[CTX_STACK_DEPTH];
static _Thread_local unsigned ctx_depth;

CUresult xgpu_drv_result(int rt)
{
	if (rt == cudaSuccess)
		return CUDA_SUCCESS;
	/* cuerr.c maps every CUresult to the cudaError_t of the same number. */
	if (xgpu_cuerr_to_rt(rt) == rt)
		return (CUresult)rt;
	switch (rt) {
	case cudaErrorInvalidConfiguration:
	case cudaErrorInvalidPitchValue:
	case cudaErrorInvalidDevicePointer:
	case cudaErrorInvalidMemcpyDirection:
	case cudaErrorInvalidSymbol:
		return CUDA_ERROR_INVALID_VALUE;
	case cudaErrorInvalidDeviceFunction:
		return CUDA_ERROR_INVALID_HANDLE;
	case cudaErrorInvalidKernelImage:
		return CUDA_ERROR_INVALID_IMAGE;
	default:
		return CUDA_ERROR_UNKNOWN;
	}
}

CUresult cuInit(unsigned int flags)
{
	if (flags)
		return CUDA_ERROR_INVALID_VALUE;
	struct xgpu_client *c;
	int e = xgpu_client_get(&c);
	if (e)
		return xgpu_drv_result(e);
	pthread_mutex_lock(&drv_lock);
	if (!initialised || init_generation != xgpu_fork_generation) {
		for (unsigned i = 0; i < MAX_DEVICES; i++) {
			primaries[i] = (struct CUctx_st){
			    .magic = CTX_MAGIC, .device = (CUdevice)i, .primary = true, .id = ++last_ctx_id};
			primary_refs[i] = 0;
		}
		init_generation = xgpu_fork_generation;
		initialised = true;
	}
	pthread_mutex_unlock(&drv_lock);
	return CUDA_SUCCESS;
}

CUresult xgpu_drv_client(struct xgpu_client **c)
{
	pthread_mutex_lock(&drv_lock);
	bool ok = initialised;
	pthread_mutex_unlock(&drv_lock);
	if (!ok)
		return CUDA_ERROR_NOT_INITIALIZED;
	return xgpu_drv_result(xgpu_client_get(c));
}

CUresult xgpu_drv_client_ctx(struct xgpu_client **c)
{
	CUresult r = xgpu_drv_client(c);
	if (r)
		return r;
	return ctx_depth ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

CUresult cuDriverGetVersion(int *driverVersion)
{
	if (!driverVersion)
		return CUDA_ERROR_INVALID_VALUE;
	*driverVersion = XGPU_DRV_VERSION;
	return CUDA_SUCCESS;
}

/* ---- devices ------------------------------------------------------------ */

static CUresult device_count(int *count)
{
	struct xgpu_client *c;
	CUresult r = xgpu_drv_client(&c);
	if (r)
		return r;
	uint32_t n = xgpu_client_ack(c)->device_count;
	*count = n > MAX_DEVICES ? MAX_DEVICES : (int)n;
	return CUDA_SUCCESS;
}

static CUresult check_device(CUdevice dev)
{
	int n;
	CUresult r = device_count(&n);
	if (r)
		return r;
	return dev >= 0 && dev < n ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

static pthread_mutex_t devinfo_lock = PTHREAD_MUTEX_INITIALIZER;
static struct xgpu_device_info devinfo;
static bool devinfo_ok;
static unsigned devinfo_generation;

CUresult xgpu_drv_devinfo(const struct xgpu_device_info **out)
{
	struct xgpu_client *c;
	CUresult r = xgpu_drv_client(&c);
	if (r)
		return r;
	pthread_mutex_lock(&devinfo_lock);
	if (!devinfo_ok || devinfo_generation != xgpu_fork_generation) {
		r = xgpu_drv_result(xgpu_client_device_info(c, &devinfo));
		if (!r) {
			devinfo_ok = true;
			devinfo_generation = xgpu_fork_generation;
		}
	}
	pthread_mutex_unlock(&devinfo_lock);
	if (!r)
		*out = &devinfo;
	return r;
}

CUresult cuDeviceGetCount(int *count)
{
	if (!count)
		return CUDA_ERROR_INVALID_VALUE;
	return device_count(count);
}

CUresult cuDeviceGet(CUdevice *device, int ordinal)
{
	if (!device)
		return CUDA_ERROR_INVALID_VALUE;
	CUresult r = check_device(ordinal);
	if (!r)
		*device = ordinal;
	return r;
}

/* The description of dev (every device of a domain is the same GPU model). */
static CUresult describe(CUdevice dev, const struct xgpu_device_info **info)
{
	CUresult r = check_device(dev);
	return r ? r : xgpu_drv_devinfo(info);
}

CUresult cuDeviceGetName(char *name, int len, CUdevice dev)
{
	const struct xgpu_device_info *info;
	if (!name || len <= 0)
		return CUDA_ERROR_INVALID_VALUE;
	CUresult r = describe(dev, &info);
	if (r)
		return r;
	size_t n = strnlen(info->blob.name, sizeof info->blob.name);
	if (n >= (size_t)len)
		n = (size_t)len - 1;
	memcpy(name, info->blob.name, n);
	name[n] = '\0';
	return CUDA_SUCCESS;
}

CUresult cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev)
{
	const struct xgpu_device_info *info;
	if (!pi)
		return CUDA_ERROR_INVALID_VALUE;
	CUresult r = describe(dev, &info);
	if (r)
		return r;
	if ((int)attrib < 0 || (unsigned)attrib >= info->nattrs)
		return CUDA_ERROR_INVALID_VALUE;
	*pi = info->attrs[attrib];
	return CUDA_SUCCESS;
}

CUresult cuDeviceComputeCapability(int *major, int *minor, CUdevice dev)
{
	if (!major || !minor)
		return CUDA_ERROR_INVALID_VALUE;
	CUresult r = cuDeviceGetAttribute(major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
	return r ? r : cuDeviceGetAttribute(minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
}

CUresult cuDeviceTotalMem(size_t *bytes, CUdevice dev)
{
	const struct xgpu_device_info *info;
	if (!bytes)
		return CUDA_ERROR_INVALID_VALUE;
	CUresult r = describe(dev, &info);
	if (!r)
		*bytes = info->blob.total_mem;
	return r;
}

CUresult cuDeviceGetUuid(CUuuid *uuid, CUdevice dev)
{
	const struct xgpu_device_info *info;
	if (!uuid)
		return CUDA_ERROR_INVALID_VALUE;
	CUresult r = describe(dev, &info);
	if (!r)
		memcpy(uuid->bytes, info->blob.uuid, sizeof uuid->bytes);
	return r;
}

/* ---- contexts ----------------------------------------------------------- */

static bool valid_ctx(CUcontext ctx)
{
	return ctx && ctx->magic == CTX_MAGIC;
}

static CUcontext current(void)
{
	return ctx_depth ? ctx_stack[ctx_depth - 1] : NULL;
}

CUcontext xgpu_drv_current_ctx(void)
{
	return current();
}

bool xgpu_drv_ctx_valid(CUcontext ctx)
{
	return valid_ctx(ctx);
}

CUresult xgpu_drv_ctx_device(CUcontext ctx, CUdevice *dev)
{
	if (!valid_ctx(ctx))
		return CUDA_ERROR_INVALID_CONTEXT;
	*dev = ctx->device;
	return CUDA_SUCCESS;
}

CUresult xgpu_drv_primary_ctx(CUdevice dev, CUcontext *pctx)
{
	CUresult r = check_device(dev);
	if (!r)
		*pctx = &primaries[dev];
	return r;
}

CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
	if (!pctx)
		return CUDA_ERROR_INVALID_VALUE;
	CUresult r = check_device(dev);
	if (r)
		return r;
	pthread_mutex_lock(&drv_lock);
	primary_refs[dev]++;
	pthread_mutex_unlock(&drv_lock);
	*pctx = &primaries[dev];
	return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRelease(CUdevice dev)
{
	CUresult r = check_device(dev);
	if (r)
		return r;
	pthread_mutex_lock(&drv_lock);
	if (primary_refs[dev])
		primary_refs[dev]--;
	else
		r = CUDA_ERROR_INVALID_CONTEXT;
	pthread_mutex_unlock(&drv_lock);
	return r;
}

CUresult cuDevicePrimaryCtxSetFlags(CUdevice dev, unsigned int flags)
{
	CUresult r = check_device(dev);
	if (r)
		return r;
	/* Scheduling flags, CU_CTX_LMEM_RESIZE_TO_MAX, CU_CTX_SYNC_MEMOPS. */
	if (flags & ~(unsigned)(CU_CTX_SCHED_MASK | CU_CTX_LMEM_RESIZE_TO_MAX | CU_CTX_SYNC_MEMOPS))
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&drv_lock);
	primaries[dev].flags = flags;
	pthread_mutex_unlock(&drv_lock);
	return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active)
{
	if (!flags || !active)
		return CUDA_ERROR_INVALID_VALUE;
	CUresult r = check_device(dev);
	if (r)
		return r;
	pthread_mutex_lock(&drv_lock);
	*flags = primaries[dev].flags;
	*active = primary_refs[dev] > 0;
	pthread_mutex_unlock(&drv_lock);
	return CUDA_SUCCESS;
}

CUresult cuCtxGetCurrent(CUcontext *pctx)
{
	struct xgpu_client *c;
	if (!pctx)
		return CUDA_ERROR_INVALID_VALUE;
	CUresult r = xgpu_drv_client(&c);
	if (!r)
		*pctx = current();
	return r;
}

CUresult cuCtxSetCurrent(CUcontext ctx)
{
	struct xgpu_client *c;
	CUresult r = xgpu_drv_client(&c);
	if (r)
		return r;
	if (ctx && !valid_ctx(ctx))
		return CUDA_ERROR_INVALID_CONTEXT;
	if (!ctx) {
		/* CUDA: setting NULL pops the current context. */
		if (ctx_depth)
			ctx_depth--;
		return CUDA_SUCCESS;
	}
	if (ctx_depth)
		ctx_stack[ctx_depth - 1] = ctx;
	else
		ctx_stack[ctx_depth++] = ctx;
	return CUDA_SUCCESS;
}

CUresult cuCtxPushCurrent(CUcontext ctx)
{
	struct xgpu_client *c;
	CUresult r = xgpu_drv_client(&c);
	if (r)
		return r;
	if (!valid_ctx(ctx))
		return CUDA_ERROR_INVALID_CONTEXT;
	if (ctx_depth == CTX_STACK_DEPTH)
		return CUDA_ERROR_OUT_OF_MEMORY;
	ctx_stack[ctx_depth++] = ctx;
	return CUDA_SUCCESS;
}

CUresult cuCtxPopCurrent(CUcontext *pctx)
{
	struct xgpu_client *c;
	CUresult r = xgpu_drv_client(&c);
	if (r)
		return r;
	if (!ctx_depth)
		return CUDA_ERROR_INVALID_CONTEXT;
	CUcontext top = ctx_stack[--ctx_depth];
	if (pctx)
		*pctx = top;
	return CUDA_SUCCESS;
}

CUresult cuCtxGetDevice(CUdevice *device)
{
	struct xgpu_client *c;
	if (!device)
		return CUDA_ERROR_INVALID_VALUE;
	CUresult r = xgpu_drv_client_ctx(&c);
	if (!r)
		*device = current()->device;
	return r;
}

CUresult cuCtxGetDevice_v2(CUdevice *device, CUcontext ctx)
{
	if (!ctx)
		return cuCtxGetDevice(device);
	if (!device)
		return CUDA_ERROR_INVALID_VALUE;
	if (!valid_ctx(ctx))
		return CUDA_ERROR_INVALID_CONTEXT;
	*device = ctx->device;
	return CUDA_SUCCESS;
}

CUresult cuCtxGetFlags(unsigned int *flags)
{
	struct xgpu_client *c;
	if (!flags)
		return CUDA_ERROR_INVALID_VALUE;
	CUresult r = xgpu_drv_client_ctx(&c);
	if (!r)
		*flags = current()->flags;
	return r;
}

CUresult cuCtxGetApiVersion(CUcontext ctx, unsigned int *version)
{
	if (!version)
		return CUDA_ERROR_INVALID_VALUE;
	if (ctx ? !valid_ctx(ctx) : !current())
		return CUDA_ERROR_INVALID_CONTEXT;
	*version = 3020; /* what the driver reports for every context since CUDA 3.2 */
	return CUDA_SUCCESS;
}

CUresult cuCtxGetLimit(size_t *pvalue, CUlimit limit)
{
	struct xgpu_client *c;
	if (!pvalue)
		return CUDA_ERROR_INVALID_VALUE;
	CUresult r = xgpu_drv_client_ctx(&c);
	if (r)
		return r;
	struct xgpu_req_LIMIT_GET req = {.limit = (uint32_t)limit};
	struct xgpu_rsp_LIMIT_GET rsp;
	int e = xgpu_call_LIMIT_GET(c, &req, &rsp);
	if (!e)
		*pvalue = rsp.value;
	return e == cudaErrorNotSupported ? CUDA_ERROR_UNSUPPORTED_LIMIT : xgpu_drv_result(e);
}

CUresult cuCtxSetLimit(CUlimit limit, size_t value)
{
	struct xgpu_client *c;
	CUresult r = xgpu_drv_client_ctx(&c);
	if (r)
		return r;
	struct xgpu_req_LIMIT_SET req = {.limit = (uint32_t)limit, .value = value};
	struct xgpu_rsp_LIMIT_SET rsp;
	int e = xgpu_call_LIMIT_SET(c, &req, &rsp);
	return e == cudaErrorNotSupported ? CUDA_ERROR_UNSUPPORTED_LIMIT : xgpu_drv_result(e);
}

CUresult xgpu_drv_sync(struct xgpu_client *c)
{
	struct xgpu_req_DEVICE_SYNC req = {0};
	struct xgpu_rsp_DEVICE_SYNC rsp;
	int e = xgpu_call_DEVICE_SYNC(c, &req, &rsp);
	if (!e)
		xgpu_pool_synced(c, true, 0);
	return xgpu_drv_result(e);
}

CUresult cuCtxSynchronize(void)
{
	struct xgpu_client *c;
	CUresult r = xgpu_drv_client_ctx(&c);
	return r ? r : xgpu_drv_sync(c);
}

CUresult cuCtxSynchronize_v2(CUcontext ctx)
{
	if (ctx && !valid_ctx(ctx))
		return CUDA_ERROR_INVALID_CONTEXT;
	struct xgpu_client *c;
	CUresult r = ctx ? xgpu_drv_client(&c) : xgpu_drv_client_ctx(&c);
	return r ? r : xgpu_drv_sync(c);
}

CUresult cuCtxCreate(CUcontext *pctx, CUctxCreateParams *params, unsigned int flags, CUdevice dev)
{
	if (!pctx)
		return CUDA_ERROR_INVALID_VALUE;
	/* CUDA 13's samples pass a zeroed CUctxCreateParams: that is a plain
	 * context. What it can ask for beyond that is refused by name. */
	if (params && (params->numExecAffinityParams < 0 ||
		       (params->numExecAffinityParams > 0 && !params->execAffinityParams)))
		return CUDA_ERROR_INVALID_VALUE;
	if (params && params->numExecAffinityParams > 0)
		return xgpu_drv_unsupported("cuCtxCreate with execution affinity (CUctxCreateParams."
					    "execAffinityParams): a domain's share of the GPU is xgpud's "
					    "to set, not the guest's");
	if (params && params->cigParams)
		return xgpu_drv_unsupported("cuCtxCreate in CUDA-in-graphics mode (CUctxCreateParams."
					    "cigParams): xgpu has no graphics interop");
	/* Flags: scheduling, map-host, local-memory resize, sync memops,
	 * coredump and user-coredump (CU_CTX_FLAGS_MASK). */
	if (flags & ~(unsigned)CU_CTX_FLAGS_MASK)
		return CUDA_ERROR_INVALID_VALUE;
	CUresult r = check_device(dev);
	if (r)
		return r;
	if (ctx_depth == CTX_STACK_DEPTH)
		return CUDA_ERROR_OUT_OF_MEMORY;
	CUcontext ctx = calloc(1, sizeof *ctx);
	if (!ctx)
		return CUDA_ERROR_OUT_OF_MEMORY;
	*ctx = (struct CUctx_st){.magic = CTX_MAGIC, .device = dev, .flags = flags, .id = ++last_ctx_id};
	ctx_stack[ctx_depth++] = ctx;
	atomic_fetch_add(&created_contexts, 1);
	*pctx = ctx;
	return CUDA_SUCCESS;
}

CUresult cuCtxGetId(CUcontext ctx, unsigned long long *ctxId)
{
	if (!ctxId)
		return CUDA_ERROR_INVALID_VALUE;
	if (!ctx)
		ctx = current();
	if (!valid_ctx(ctx))
		return CUDA_ERROR_INVALID_CONTEXT;
	*ctxId = ctx->id;
	return CUDA_SUCCESS;
}

CUresult cuCtxDestroy(CUcontext ctx)
{
	if (!valid_ctx(ctx) || ctx->primary)
		return CUDA_ERROR_INVALID_CONTEXT;
	/* Off this thread's stack; other threads holding it current are the
	 * program's error, as in CUDA. */
	unsigned j = 0;
	for (unsigned i = 0; i < ctx_depth; i++)
		if (ctx_stack[i] != ctx)
			ctx_stack[j++] = ctx_stack[i];
	ctx_depth = j;
	xgpu_drv_cls_forget(ctx);
	ctx->magic = 0;
	free(ctx);
	atomic_fetch_sub(&created_contexts, 1);
	return CUDA_SUCCESS;
}

/* The primary context's reset. The daemon releases everything of this
 * process (DEVICE_RESET, as cudaDeviceReset); then every daemon handle the
 * frontends cached is stale, and xgpu_fork_generation is what they key them
 * on: bumped, modules and libraries load again, functions resolve again,
 * graphs instantiate again and host registrations and pools start over on
 * next use, as in a forked child, on the same channel. Streams and events
 * the program made are gone (their handles answer INVALID_HANDLE), as are its
 * allocations (here and in the managed mappings). The daemon holds one set of
 * objects per process, not per context, so while a context of cuCtxCreate's
 * lives its objects would go too: refused then, by name. */
CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev)
{
	CUresult r = check_device(dev);
	if (r)
		return r;
	struct xgpu_client *c;
	if ((r = xgpu_drv_client(&c)))
		return r;
	if (atomic_load(&created_contexts))
		return xgpu_drv_unsupported(
		    "cuDevicePrimaryCtxReset while a context made by cuCtxCreate lives "
		    "(the daemon holds one set of objects per process, which the reset "
		    "would take from that context too)");
	struct xgpu_req_DEVICE_RESET req = {0};
	struct xgpu_rsp_DEVICE_RESET rsp;
	r = xgpu_drv_result(xgpu_call_DEVICE_RESET(c, &req, &rsp));
	xgpu_fork_generation++;
	xgpu_managed_forget_all();
	xgpu_alloc_clear_device();
	xgpu_pool_reset();
	return r;
}

/* cuCtxSetFlags: the current context's flags (as cuCtxCreate takes them). */
CUresult cuCtxSetFlags(unsigned int flags)
{
	struct xgpu_client *c;
	CUresult r = xgpu_drv_client_ctx(&c);
	if (r)
		return r;
	if (flags & ~(unsigned)CU_CTX_FLAGS_MASK)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&drv_lock);
	current()->flags = flags;
	pthread_mutex_unlock(&drv_lock);
	return CUDA_SUCCESS;
}

/* The cache split is a hint the driver may ignore; contexts here keep the
 * one the program set and the daemon's driver runs with its default. */
static _Thread_local CUfunc_cache ctx_cache_config = CU_FUNC_CACHE_PREFER_NONE;

CUresult cuCtxGetCacheConfig(CUfunc_cache *pconfig)
{
	struct xgpu_client *c;
	if (!pconfig)
		return CUDA_ERROR_INVALID_VALUE;
	CUresult r = xgpu_drv_client_ctx(&c);
	if (!r)
		*pconfig = ctx_cache_config;
	return r;
}

CUresult cuCtxSetCacheConfig(CUfunc_cache config)
{
	struct xgpu_client *c;
	CUresult r = xgpu_drv_client_ctx(&c);
	if (r)
		return r;
	if ((unsigned)config > CU_FUNC_CACHE_PREFER_EQUAL)
		return CUDA_ERROR_INVALID_VALUE;
	ctx_cache_config = config;
	return CUDA_SUCCESS;
}

/* A context without execution affinity has the whole device's SMs (as far
 * as the guest can tell: the daemon time-slices the GPU between domains). */
CUresult cuCtxGetExecAffinity(CUexecAffinityParam *pExecAffinity, CUexecAffinityType type)
{
	struct xgpu_client *c;
	if (!pExecAffinity || type != CU_EXEC_AFFINITY_TYPE_SM_COUNT)
		return CUDA_ERROR_INVALID_VALUE;
	CUresult r = xgpu_drv_client_ctx(&c);
	int sms = 0;
	if (!r)
		r = cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, current()->device);
	if (!r) {
		pExecAffinity->type = CU_EXEC_AFFINITY_TYPE_SM_COUNT;
		pExecAffinity->param.smCount.val = (unsigned)sms;
	}
	return r;
}

/* cuCtxRecordEvent captures all work of the context. Every context here is
 * the channel's one context in the daemon, whose streams the frontend does
 * not list, so the call waits for that work (cuCtxSynchronize) and records
 * the event on the default stream: the event completes no earlier than CUDA's
 * would, at the cost of the host waiting here. */
CUresult cuCtxRecordEvent(CUcontext hCtx, CUevent hEvent)
{
	if (hCtx && !valid_ctx(hCtx))
		return CUDA_ERROR_INVALID_CONTEXT;
	if (!hEvent)
		return CUDA_ERROR_INVALID_HANDLE;
	struct xgpu_client *c;
	CUresult r = hCtx ? xgpu_drv_client(&c) : xgpu_drv_client_ctx(&c);
	if (!r)
		r = xgpu_drv_sync(c);
	return r ? r : cuEventRecord(hEvent, NULL);
}

/* cuCtxWaitEvent makes the context's later work wait for the event: here
 * the host waits for it, after which any later work comes after it. */
CUresult cuCtxWaitEvent(CUcontext hCtx, CUevent hEvent)
{
	if (hCtx && !valid_ctx(hCtx))
		return CUDA_ERROR_INVALID_CONTEXT;
	if (!hEvent)
		return CUDA_ERROR_INVALID_HANDLE;
	struct xgpu_client *c;
	CUresult r = hCtx ? xgpu_drv_client(&c) : xgpu_drv_client_ctx(&c);
	return r ? r : cuEventSynchronize(hEvent);
}

/* CUDA 11.4 to 12.4's cuCtxCreate with execution affinity. */
CUresult cuCtxCreate_v3(CUcontext *pctx, CUexecAffinityParam *paramsArray, int numParams, unsigned int flags,
			CUdevice dev);
CUresult cuCtxCreate_v3(CUcontext *pctx, CUexecAffinityParam *paramsArray, int numParams, unsigned int flags,
			CUdevice dev)
{
	CUctxCreateParams p = {.execAffinityParams = paramsArray, .numExecAffinityParams = numParams};
	return cuCtxCreate_v4(pctx, numParams || paramsArray ? &p : NULL, flags, dev);
}

/* The deprecated attach/detach pair: attach answers the current context and
 * detach checks the one it is given; no usage count is kept, so a context
 * the program created stays until cuCtxDestroy (a leak at worst). */
CUresult cuCtxAttach(CUcontext *pctx, unsigned int flags)
{
	struct xgpu_client *c;
	if (!pctx || flags)
		return CUDA_ERROR_INVALID_VALUE;
	CUresult r = xgpu_drv_client_ctx(&c);
	if (!r)
		*pctx = current();
	return r;
}

CUresult cuCtxDetach(CUcontext ctx)
{
	if (!valid_ctx(ctx))
		return CUDA_ERROR_INVALID_CONTEXT;
	return CUDA_SUCCESS;
}

/* Green contexts partition a GPU's SMs among contexts; under xgpu the
 * partition of the GPU between domains is the daemon's (its shares and
 * slots), so a guest cannot take SMs for itself. */
CUresult cuCtxGetDevResource(CUcontext hCtx, CUdevResource *resource, CUdevResourceType type)
{
	(void)hCtx, (void)resource, (void)type;
	return xgpu_drv_unsupported(
	    "cuCtxGetDevResource (green contexts: the GPU's partition between domains "
	    "is xgpud's, a guest cannot take SMs for itself)");
}

CUresult cuCtxFromGreenCtx(CUcontext *pContext, CUgreenCtx hCtx)
{
	(void)pContext, (void)hCtx;
	return xgpu_drv_unsupported("cuCtxFromGreenCtx (green contexts: the GPU's partition between domains "
				    "is xgpud's, a guest cannot take SMs for itself)");
}

/* ---- older ABIs that equal the current one ------------------------------ */

/* cuda.h renames these to their current ABI (cuCtxDestroy -> cuCtxDestroy_v2);
 * the old names take the same arguments, and binaries built against older
 * headers still call them. */
#undef cuDeviceGetUuid
#undef cuDevicePrimaryCtxRelease
#undef cuDevicePrimaryCtxSetFlags
#undef cuCtxDestroy
#undef cuCtxPushCurrent
#undef cuCtxPopCurrent
CUresult cuDeviceGetUuid(CUuuid *uuid, CUdevice dev);
CUresult cuDevicePrimaryCtxRelease(CUdevice dev);
CUresult cuDevicePrimaryCtxSetFlags(CUdevice dev, unsigned int flags);
CUresult cuCtxDestroy(CUcontext ctx);
CUresult cuCtxPushCurrent(CUcontext ctx);
CUresult cuCtxPopCurrent(CUcontext *pctx);
CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev);

CUresult cuDeviceGetUuid(CUuuid *uuid, CUdevice dev)
{
	return cuDeviceGetUuid_v2(uuid, dev);
}

CUresult cuDevicePrimaryCtxRelease(CUdevice dev)
{
	return cuDevicePrimaryCtxRelease_v2(dev);
}

#undef cuDevicePrimaryCtxReset
CUresult cuDevicePrimaryCtxReset(CUdevice dev);
CUresult cuDevicePrimaryCtxReset(CUdevice dev)
{
	return cuDevicePrimaryCtxReset_v2(dev);
}

CUresult cuDevicePrimaryCtxSetFlags(CUdevice dev, unsigned int flags)
{
	return cuDevicePrimaryCtxSetFlags_v2(dev, flags);
}

CUresult cuCtxDestroy(CUcontext ctx)
{
	return cuCtxDestroy_v2(ctx);
}

CUresult cuCtxPushCurrent(CUcontext ctx)
{
	return cuCtxPushCurrent_v2(ctx);
}

CUresult cuCtxPopCurrent(CUcontext *pctx)
{
	return cuCtxPopCurrent_v2(pctx);
}

/* CUDA 3.2 to 12.4's cuCtxCreate, still what most driver-API programs call. */
CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
	return cuCtxCreate_v4(pctx, NULL, flags, dev);
}
