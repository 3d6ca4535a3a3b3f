/* SPDX-License-Identifier: Apache-2.0 */
/* simdrv.c - xgpu's simulated CUDA driver: initialisation, the simulated
 * devices' configuration, device queries, and contexts.
 *
 * The library exports the driver entry points xgpud's executor uses
 * (backend/driver.h) under the names the real libcuda.so.1 exports, so one
 * executor runs on a GPU host and in CI. Environment, read once by cuInit:
 *
 *   XGPU_SIM_DEVICES      number of devices (default 1, or as many as
 *                         XGPU_SIM_DEVICE_SPEC names)
 *   XGPU_SIM_MEM          memory of each device, "16G" style (default 16G)
 *   XGPU_SIM_DEVICE_SPEC  per-device overrides, "0:sms=132,mem=80G;1:sms=66"
 *                         keys: sms, mem, cc (e.g. 8.0), clock (MHz), memclock
 *                         (MHz), busw (bits), l2 (bytes), tpsm (threads/SM),
 *                         hbw / dbw (host<->device / device copy GB/s), name
 *   XGPU_SIM_SPEED        divides every modeled time (2 = twice as fast)
 *   XGPU_SIM_WATCHDOG_MS  longest time one operation occupies a device, after
 *                         XGPU_SIM_SPEED (default 10000; 0: no limit): one
 *                         modeled longer fails its context with
 *                         CUDA_ERROR_LAUNCH_TIMEOUT after that long (exec.c)
 *   XGPU_SIM_KERNELS      host kernel plugins (plugins.c)
 *   XGPU_SIM_PTX          on (default): kernels without a host implementation
 *                         run from their PTX (ptx_exec.c); strict: also refuse
 *                         modules with kernels it cannot run; off: never
 *                         (read at each module load, module.c)
 *   XGPU_SIM_PTX_THREADS  worker threads that run an interpreted kernel's
 *                         blocks at once (1 to 16; default the CPUs the
 *                         process may use, at most 16; read once, ptx_exec.c)
 */
#include "simdrv_int.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

struct sim_global sim = {.lock = PTHREAD_MUTEX_INITIALIZER};

static CUresult init_error; /* sim.lock: a failed cuInit's result, repeated */

/* The calling thread's current context. The id catches a context destroyed
 * and a new one allocated at the same address. */
static _Thread_local struct CUctx_st *tls_ctx;
static _Thread_local uint64_t tls_ctx_id;

void sim_log(const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	fprintf(stderr, "xgpu-simdrv: %s\n", msg);
}

/* ---- configuration --------------------------------------------------------- */

#define SIM_MAX_DEVICES 64

static void default_props(int ordinal, uint64_t mem, struct sim_devprops *p)
{
	memset(p, 0, sizeof *p);
	snprintf(p->name, sizeof p->name, "xgpu simulated GPU %d", ordinal);
	/* H100 SXM5. */
	p->cc_major = 9;
	p->cc_minor = 0;
	p->sms = 132;
	p->threads_per_sm = 2048;
	p->clock_khz = 1980000;
	p->mem_clock_khz = 2619000;
	p->bus_width = 5120;
	p->l2_bytes = 50 * 1024 * 1024;
	p->mem_bytes = mem;
	p->host_bw = 25000000000ull;  /* PCIe 5 x16, effective */
	p->dev_bw = 1500000000000ull; /* HBM3 copy bandwidth */
}

static int parse_int_range(const char *v, long min, long max, int *out)
{
	long x;
	if (xgpu_parse_long(v, min, max, &x) < 0)
		return -1;
	*out = (int)x;
	return 0;
}

static int parse_gbps(const char *v, uint64_t *out)
{
	char *end;
	errno = 0;
	double d = strtod(v, &end);
	if (errno || end == v || *end || !(d > 0) || d > 1e6)
		return -1;
	*out = (uint64_t)(d * 1e9);
	return 0;
}

/* Applies "key=value,key=value" to p. */
static int apply_keys(char *keys, struct sim_devprops *p, int ordinal)
{
	char *save = NULL;
	for (char *kv = strtok_r(keys, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
		while (isspace((unsigned char)*kv))
			kv++;
		if (!*kv)
			continue;
		char *eq = strchr(kv, '=');
		if (!eq) {
			sim_log("XGPU_SIM_DEVICE_SPEC: device %d: \"%s\" is not key=value", ordinal, kv);
			return -1;
		}
		*eq = 0;
		const char *k = kv, *v = eq + 1;
		int rc = 0;
		if (!strcmp(k, "sms"))
			rc = parse_int_range(v, 1, 1024, &p->sms);
		else if (!strcmp(k, "mem"))
			rc = xgpu_parse_size(v, &p->mem_bytes) < 0 || p->mem_bytes < 1024 * 1024 ? -1 : 0;
		else if (!strcmp(k, "cc")) {
			int ma, mi, n = 0;
			rc = sscanf(v, "%d.%d%n", &ma, &mi, &n) == 2 && !v[n] && ma >= 3 && ma <= 20 &&
				     mi >= 0 && mi <= 9
				 ? 0
				 : -1;
			if (!rc) {
				p->cc_major = ma;
				p->cc_minor = mi;
			}
		} else if (!strcmp(k, "clock")) {
			rc = parse_int_range(v, 1, 10000, &p->clock_khz);
			p->clock_khz *= 1000;
		} else if (!strcmp(k, "memclock")) {
			rc = parse_int_range(v, 1, 100000, &p->mem_clock_khz);
			p->mem_clock_khz *= 1000;
		} else if (!strcmp(k, "busw"))
			rc = parse_int_range(v, 8, 65536, &p->bus_width);
		else if (!strcmp(k, "l2"))
			rc = parse_int_range(v, 0, 1 << 30, &p->l2_bytes);
		else if (!strcmp(k, "tpsm"))
			rc = parse_int_range(v, 32, 65536, &p->threads_per_sm);
		else if (!strcmp(k, "hbw"))
			rc = parse_gbps(v, &p->host_bw);
		else if (!strcmp(k, "dbw"))
			rc = parse_gbps(v, &p->dev_bw);
		else if (!strcmp(k, "name"))
			rc = xgpu_strlcpy(p->name, v, sizeof p->name) >= sizeof p->name || !*v ? -1 : 0;
		else {
			sim_log("XGPU_SIM_DEVICE_SPEC: device %d: unknown key \"%s\"", ordinal, k);
			return -1;
		}
		if (rc) {
			sim_log("XGPU_SIM_DEVICE_SPEC: device %d: bad value \"%s\" for %s", ordinal, v, k);
			return -1;
		}
	}
	return 0;
}

/* Calls fn(ordinal, keys) for each "N:keys" part of spec; returns -1 on a
 * malformed part or when fn fails. */
static int walk_spec(const char *spec, int (*fn)(int ordinal, char *keys, void *arg), void *arg)
{
	char *copy = strdup(spec);
	if (!copy)
		return -1;
	int rc = 0;
	char *save = NULL;
	for (char *part = strtok_r(copy, ";", &save); part && !rc; part = strtok_r(NULL, ";", &save)) {
		while (isspace((unsigned char)*part))
			part++;
		if (!*part)
			continue;
		char *colon = strchr(part, ':');
		long idx;
		if (colon)
			*colon = 0;
		if (!colon || xgpu_parse_long(part, 0, SIM_MAX_DEVICES - 1, &idx) < 0) {
			sim_log("XGPU_SIM_DEVICE_SPEC: \"%s\" does not start with a device index and ':'",
				part);
			rc = -1;
			break;
		}
		rc = fn((int)idx, colon + 1, arg);
	}
	free(copy);
	return rc;
}

static int spec_max_index(int ordinal, char *keys, void *arg)
{
	int *max = arg;
	if (ordinal > *max)
		*max = ordinal;
	return 0;
}

struct spec_apply {
	struct sim_device *devs;
	int ndev;
};

static int spec_apply(int ordinal, char *keys, void *arg)
{
	struct spec_apply *a = arg;
	if (ordinal >= a->ndev) {
		sim_log("XGPU_SIM_DEVICE_SPEC names device %d but XGPU_SIM_DEVICES is %d", ordinal, a->ndev);
		return -1;
	}
	return apply_keys(keys, &a->devs[ordinal].p, ordinal);
}

static void make_uuid(int ordinal, CUuuid *u)
{
	/* Stable across runs: a hash of the ordinal, shaped as a version-4 UUID
	 * so tools that parse it are content. */
	uint64_t h[2] = {0x78677075u ^ (uint64_t)ordinal * 0x9e3779b97f4a7c15ull,
			 0x73696d6775ull + (uint64_t)ordinal};
	for (int r = 0; r < 2; r++)
		for (int i = 0; i < 2; i++) {
			h[i] ^= h[i] >> 31;
			h[i] *= 0xbf58476d1ce4e5b9ull;
			h[i] ^= h[1 - i] >> 27;
		}
	memcpy(u->bytes, h, sizeof u->bytes);
	u->bytes[6] = (char)((u->bytes[6] & 0x0f) | 0x40);
	u->bytes[8] = (char)((u->bytes[8] & 0x3f) | 0x80);
}

/* A GPU's display watchdog allows a few seconds; a bit more here, so that no
 * workload that is merely slow under the model trips it. */
#define SIM_WATCHDOG_MS_DEFAULT 10000
#define SIM_WATCHDOG_MS_MAX (7L * 24 * 3600 * 1000)

/* GPUs switch contexts every few milliseconds when more than one has work
 * (time-slice scheduling); 2 ms is of that order. */
#define SIM_SLICE_MS_DEFAULT 2
#define SIM_SLICE_MS_MAX 60000

CUresult sim_config_devices(struct sim_device **devs_out, int *ndev_out, double *speed_out,
			    uint64_t *watchdog_ns_out, uint64_t *slice_ns_out)
{
	const char *env_n = getenv("XGPU_SIM_DEVICES");
	const char *env_mem = getenv("XGPU_SIM_MEM");
	const char *env_spec = getenv("XGPU_SIM_DEVICE_SPEC");
	const char *env_speed = getenv("XGPU_SIM_SPEED");
	const char *env_wd = getenv("XGPU_SIM_WATCHDOG_MS");
	const char *env_slice = getenv("XGPU_SIM_SLICE_MS");

	double speed = 1.0;
	if (env_speed && *env_speed) {
		char *end;
		errno = 0;
		speed = strtod(env_speed, &end);
		if (errno || end == env_speed || *end || !(speed > 0) || speed > 1e9) {
			sim_log("XGPU_SIM_SPEED=\"%s\" is not a positive number", env_speed);
			return CUDA_ERROR_INVALID_VALUE;
		}
	}
	long wd_ms = SIM_WATCHDOG_MS_DEFAULT;
	if (env_wd && *env_wd && xgpu_parse_long(env_wd, 0, SIM_WATCHDOG_MS_MAX, &wd_ms) < 0) {
		sim_log("XGPU_SIM_WATCHDOG_MS=\"%s\" is not a number of milliseconds in 0..%ld", env_wd,
			SIM_WATCHDOG_MS_MAX);
		return CUDA_ERROR_INVALID_VALUE;
	}
	long slice_ms = SIM_SLICE_MS_DEFAULT;
	if (env_slice && *env_slice && xgpu_parse_long(env_slice, 0, SIM_SLICE_MS_MAX, &slice_ms) < 0) {
		sim_log("XGPU_SIM_SLICE_MS=\"%s\" is not a number of milliseconds in 0..%d", env_slice,
			SIM_SLICE_MS_MAX);
		return CUDA_ERROR_INVALID_VALUE;
	}
	uint64_t mem = 16ull << 30;
	if (env_mem && *env_mem && (xgpu_parse_size(env_mem, &mem) < 0 || mem < (1u << 20))) {
		sim_log("XGPU_SIM_MEM=\"%s\" is not a size of at least 1M (like 16G)", env_mem);
		return CUDA_ERROR_INVALID_VALUE;
	}
	int ndev = 1;
	if (env_n && *env_n) {
		long n;
		if (xgpu_parse_long(env_n, 0, SIM_MAX_DEVICES, &n) < 0) {
			sim_log("XGPU_SIM_DEVICES=\"%s\" is not a number in 0..%d", env_n, SIM_MAX_DEVICES);
			return CUDA_ERROR_INVALID_VALUE;
		}
		ndev = (int)n;
	} else if (env_spec && *env_spec) {
		int max = 0;
		if (walk_spec(env_spec, spec_max_index, &max) < 0)
			return CUDA_ERROR_INVALID_VALUE;
		ndev = max + 1;
	}
	if (ndev == 0)
		return CUDA_ERROR_NO_DEVICE;

	struct sim_device *devs = calloc((size_t)ndev, sizeof *devs);
	if (!devs)
		return CUDA_ERROR_OUT_OF_MEMORY;
	for (int i = 0; i < ndev; i++) {
		devs[i].ordinal = i;
		default_props(i, mem, &devs[i].p);
		make_uuid(i, &devs[i].uuid);
	}
	if (env_spec && *env_spec) {
		struct spec_apply a = {devs, ndev};
		if (walk_spec(env_spec, spec_apply, &a) < 0) {
			free(devs);
			return CUDA_ERROR_INVALID_VALUE;
		}
	}
	*devs_out = devs;
	*ndev_out = ndev;
	*speed_out = speed;
	*watchdog_ns_out = (uint64_t)wd_ms * 1000000u;
	*slice_ns_out = (uint64_t)slice_ms * 1000000u;
	return CUDA_SUCCESS;
}

/* ---- initialisation and teardown --------------------------------------------- */

static void destroy_ctx(struct CUctx_st *c);

CUresult cuInit(unsigned int Flags)
{
	if (Flags)
		return CUDA_ERROR_INVALID_VALUE;
	if (atomic_load(&sim.initialized))
		return CUDA_SUCCESS;
	pthread_mutex_lock(&sim.lock);
	CUresult r = init_error;
	if (atomic_load(&sim.initialized) || r) {
		pthread_mutex_unlock(&sim.lock);
		return r;
	}
	sim_list_init(&sim.ctxs);
	r = sim_config_devices(&sim.devs, &sim.ndev, &sim.speed, &sim.watchdog_ns, &sim.slice_ns);
	for (int i = 0; r == CUDA_SUCCESS && i < sim.ndev; i++)
		if (sim_worker_init(&sim.devs[i]) < 0)
			r = CUDA_ERROR_OPERATING_SYSTEM;
	if (r) {
		for (int i = 0; sim.devs && i < sim.ndev; i++)
			sim_worker_stop(&sim.devs[i]);
		free(sim.devs);
		sim.devs = NULL;
		sim.ndev = 0;
		init_error = r;
		pthread_mutex_unlock(&sim.lock);
		return r;
	}
	sim_plugins_load();
	atomic_store(&sim.initialized, true);
	pthread_mutex_unlock(&sim.lock);
	return CUDA_SUCCESS;
}

/* Runs when the library is unloaded (dlclose, or process exit): the worker
 * threads must be gone before their code is unmapped. */
__attribute__((destructor)) static void sim_fini(void)
{
	if (!atomic_load(&sim.initialized))
		return;
	/* Drop queued work instead of running it out: only operations already
	 * running finish their real work. The driver is going away, as the
	 * error says. */
	pthread_mutex_lock(&sim.lock);
	for (struct sim_link *l = sim.ctxs.next; l != &sim.ctxs; l = l->next) {
		int none = 0;
		atomic_compare_exchange_strong(&sim_container_of(l, struct CUctx_st, glink)->sticky, &none,
					       (int)CUDA_ERROR_DEINITIALIZED);
	}
	pthread_mutex_unlock(&sim.lock);
	/* ... and operations already running stop occupying their device. */
	for (int i = 0; i < sim.ndev; i++)
		sim_dev_kick(&sim.devs[i]);
	for (;;) {
		pthread_mutex_lock(&sim.lock);
		struct CUctx_st *c = NULL;
		if (!sim_list_empty(&sim.ctxs)) {
			c = sim_container_of(sim.ctxs.next, struct CUctx_st, glink);
			sim_obj_ref(&c->obj);
		}
		pthread_mutex_unlock(&sim.lock);
		if (!c)
			break;
		if (sim_obj_unregister(&c->obj))
			destroy_ctx(c); /* puts the registry's reference */
		else {
			/* Another thread is destroying it: let it unlink. */
			pthread_mutex_lock(&sim.lock);
			if (c->glink.next != &c->glink)
				sim_list_del(&c->glink);
			pthread_mutex_unlock(&sim.lock);
		}
		sim_ctx_put(c);
	}
	for (int i = 0; i < sim.ndev; i++)
		sim_worker_stop(&sim.devs[i]);
	sim_plugins_unload();
	sim_module_fini();
	sim_pinned_fini();
	sim_arrays_fini();
	sim_registry_fini();
	free(sim.devs);
	sim.devs = NULL;
	sim.ndev = 0;
	atomic_store(&sim.initialized, false);
}

CUresult cuDriverGetVersion(int *driverVersion)
{
	if (!driverVersion)
		return CUDA_ERROR_INVALID_VALUE;
	*driverVersion = CUDA_VERSION;
	return CUDA_SUCCESS;
}

/* ---- devices ------------------------------------------------------------------ */

struct sim_device *sim_device(CUdevice dev)
{
	if (!atomic_load(&sim.initialized) || dev < 0 || dev >= sim.ndev)
		return NULL;
	return &sim.devs[dev];
}

/* NOT_INITIALIZED before cuInit, INVALID_DEVICE for a bad ordinal. */
static CUresult get_device(CUdevice dev, struct sim_device **out)
{
	if (!atomic_load(&sim.initialized))
		return CUDA_ERROR_NOT_INITIALIZED;
	*out = sim_device(dev);
	return *out ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

CUresult cuDeviceGetCount(int *count)
{
	if (!atomic_load(&sim.initialized))
		return CUDA_ERROR_NOT_INITIALIZED;
	if (!count)
		return CUDA_ERROR_INVALID_VALUE;
	*count = sim.ndev;
	return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice *device, int ordinal)
{
	if (!atomic_load(&sim.initialized))
		return CUDA_ERROR_NOT_INITIALIZED;
	if (!device)
		return CUDA_ERROR_INVALID_VALUE;
	if (ordinal < 0 || ordinal >= sim.ndev)
		return CUDA_ERROR_INVALID_DEVICE;
	*device = ordinal;
	return CUDA_SUCCESS;
}

CUresult cuDeviceGetName(char *name, int len, CUdevice dev)
{
	struct sim_device *d;
	CUresult r = get_device(dev, &d);
	if (r)
		return r;
	if (!name || len <= 0)
		return CUDA_ERROR_INVALID_VALUE;
	xgpu_strlcpy(name, d->p.name, (size_t)len);
	return CUDA_SUCCESS;
}

CUresult cuDeviceGetUuid(CUuuid *uuid, CUdevice dev)
{
	struct sim_device *d;
	CUresult r = get_device(dev, &d);
	if (r)
		return r;
	if (!uuid)
		return CUDA_ERROR_INVALID_VALUE;
	*uuid = d->uuid;
	return CUDA_SUCCESS;
}

CUresult cuDeviceTotalMem(size_t *bytes, CUdevice dev)
{
	struct sim_device *d;
	CUresult r = get_device(dev, &d);
	if (r)
		return r;
	if (!bytes)
		return CUDA_ERROR_INVALID_VALUE;
	*bytes = (size_t)d->p.mem_bytes;
	return CUDA_SUCCESS;
}

CUresult cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev)
{
	struct sim_device *d;
	CUresult r = get_device(dev, &d);
	if (r)
		return r;
	if (!pi)
		return CUDA_ERROR_INVALID_VALUE;
	return sim_dev_attribute(d, (int)attrib, pi) < 0 ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

/* ---- contexts ------------------------------------------------------------------ */

CUresult sim_ctx_enter(struct CUctx_st **out, bool allow_sticky)
{
	if (!atomic_load(&sim.initialized))
		return CUDA_ERROR_NOT_INITIALIZED;
	if (!tls_ctx)
		return CUDA_ERROR_INVALID_CONTEXT;
	struct CUctx_st *c = sim_obj_get(tls_ctx, SIM_CTX);
	if (!c || c->obj.id != tls_ctx_id) {
		if (c)
			sim_ctx_put(c);
		return CUDA_ERROR_CONTEXT_IS_DESTROYED;
	}
	int sticky = atomic_load(&c->sticky);
	if (!sticky)
		sticky = atomic_load(&sim.poisoned); /* its notice may be under way */
	if (sticky && !allow_sticky) {
		sim_ctx_put(c);
		return (CUresult)sticky;
	}
	*out = c;
	return CUDA_SUCCESS;
}

uint64_t sim_ctx_fence(struct CUctx_st *ctx)
{
	pthread_mutex_lock(&ctx->dev->lock);
	uint64_t s = ctx->last_seq;
	pthread_mutex_unlock(&ctx->dev->lock);
	return s;
}

bool sim_ctx_mark_failed(struct CUctx_st *ctx, CUresult r)
{
	int expected = 0;
	if (r != CUDA_ERROR_DEINITIALIZED) {
		int none = 0;
		atomic_compare_exchange_strong(&sim.poisoned, &none, (int)r);
	}
	return atomic_compare_exchange_strong(&ctx->sticky, &expected, (int)r);
}

/* Fails every live context with the process's fault (sim.poisoned), as
 * NVIDIA's driver does: an illegal address or a trap in one context is
 * every context's of the process (measured on an H100,
 * docs/results/gpu-validation-2026-11-26-h100). Their running operations
 * stop occupying their devices. */
static void poison_all(CUresult r)
{
	int failed = 0;
	pthread_mutex_lock(&sim.lock);
	for (struct sim_link *l = sim.ctxs.next; l != &sim.ctxs; l = l->next) {
		int none = 0;
		failed += atomic_compare_exchange_strong(&sim_container_of(l, struct CUctx_st, glink)->sticky,
							 &none, (int)r);
	}
	pthread_mutex_unlock(&sim.lock);
	if (failed)
		sim_log("the fault (error %d) fails %d other context%s of this process too, as on NVIDIA's "
			"driver",
			(int)r, failed, failed == 1 ? "" : "s");
	for (int i = 0; i < sim.ndev; i++)
		sim_dev_kick(&sim.devs[i]);
}

void sim_ctx_failed_notify(struct CUctx_st *ctx, CUresult r)
{
	sim_log("context %llu on device %d failed: error %d; it returns this error from now on",
		(unsigned long long)ctx->obj.id, ctx->dev->ordinal, (int)r);
	if (r != CUDA_ERROR_DEINITIALIZED)
		poison_all(r);
	else
		sim_dev_kick(ctx->dev); /* its running operation stops occupying the device */
}

void sim_ctx_fail(struct CUctx_st *ctx, CUresult r)
{
	if (sim_ctx_mark_failed(ctx, r))
		sim_ctx_failed_notify(ctx, r);
}

static void ctx_release(struct sim_obj *o)
{
	struct CUctx_st *c = (struct CUctx_st *)o;
	pthread_mutex_destroy(&c->lock);
	ptx_heap_free(c->heap);
	free(c->allocs.v);
	free(c);
}

static const size_t limit_defaults[SIM_NLIMITS] = {
    [CU_LIMIT_STACK_SIZE] = 1024,
    [CU_LIMIT_PRINTF_FIFO_SIZE] = 1 << 20,
    [CU_LIMIT_MALLOC_HEAP_SIZE] = 8 << 20,
    [CU_LIMIT_DEV_RUNTIME_SYNC_DEPTH] = 2,
    [CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT] = 2048,
    [CU_LIMIT_MAX_L2_FETCH_GRANULARITY] = 64,
    [CU_LIMIT_PERSISTING_L2_CACHE_SIZE] = 0,
    [CU_LIMIT_SHMEM_SIZE] = SIM_SHARED_PER_BLOCK_OPTIN,
    [CU_LIMIT_CIG_ENABLED] = 0,
    [CU_LIMIT_CIG_SHMEM_FALLBACK_ENABLED] = 0,
};

CUresult cuCtxCreate(CUcontext *pctx, CUctxCreateParams *ctxCreateParams, unsigned int flags, CUdevice dev)
{
	struct sim_device *d;
	CUresult r = get_device(dev, &d);
	if (r == CUDA_ERROR_NOT_INITIALIZED)
		return r;
	if (!pctx)
		return CUDA_ERROR_INVALID_VALUE;
	if (r)
		return r;
	/* After a fault the process can make no context (NVIDIA's driver). */
	if ((r = (CUresult)atomic_load(&sim.poisoned)))
		return r;
	if (sim_worker_ensure(d) < 0)
		return CUDA_ERROR_OPERATING_SYSTEM;
	/* Scheduling mode: AUTO, SPIN, YIELD or BLOCKING_SYNC (all block here). */
	unsigned sched = flags & CU_CTX_SCHED_MASK;
	if ((flags & ~(unsigned)CU_CTX_FLAGS_MASK) ||
	    (sched != CU_CTX_SCHED_AUTO && sched != CU_CTX_SCHED_SPIN && sched != CU_CTX_SCHED_YIELD &&
	     sched != CU_CTX_SCHED_BLOCKING_SYNC))
		return CUDA_ERROR_INVALID_VALUE;
	int sm_count = d->p.sms;
	if (ctxCreateParams) {
		const CUctxCreateParams *cp = ctxCreateParams;
		if (!cp->execAffinityParams == !cp->cigParams)
			return CUDA_ERROR_INVALID_VALUE;
		if (cp->cigParams)
			return CUDA_ERROR_NOT_SUPPORTED;
		if (cp->numExecAffinityParams <= 0)
			return CUDA_ERROR_INVALID_VALUE;
		for (int i = 0; i < cp->numExecAffinityParams; i++) {
			const CUexecAffinityParam *ap = &cp->execAffinityParams[i];
			if (ap->type != CU_EXEC_AFFINITY_TYPE_SM_COUNT)
				return CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY;
			if (ap->param.smCount.val == 0 || ap->param.smCount.val > (unsigned)d->p.sms)
				return CUDA_ERROR_INVALID_VALUE;
			sm_count = (int)ap->param.smCount.val;
		}
	}
	struct CUctx_st *c = calloc(1, sizeof *c);
	if (!c)
		return CUDA_ERROR_OUT_OF_MEMORY;
	c->dev = d;
	c->flags = flags;
	c->sm_count = sm_count;
	atomic_init(&c->sticky, 0);
	atomic_init(&c->dying, false);
	pthread_mutex_init(&c->lock, NULL);
	sim_list_init(&c->streams);
	sim_list_init(&c->events);
	sim_list_init(&c->modules);
	sim_list_init(&c->run_link);
	memcpy(c->limits, limit_defaults, sizeof c->limits);
	if (sim_obj_register(&c->obj, SIM_CTX, ctx_release) < 0) {
		ctx_release(&c->obj);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	/* Listed under sim.lock, where poison_all looks: either it sees this
	 * context or this sees the poison. */
	pthread_mutex_lock(&sim.lock);
	if ((r = (CUresult)atomic_load(&sim.poisoned))) {
		pthread_mutex_unlock(&sim.lock);
		if (sim_obj_unregister(&c->obj))
			sim_ctx_put(c);
		return r;
	}
	sim_list_add(&sim.ctxs, &c->glink);
	pthread_mutex_unlock(&sim.lock);
	tls_ctx = c;
	tls_ctx_id = c->obj.id;
	*pctx = c;
	return CUDA_SUCCESS;
}

/* Tears down c, which the caller has just unregistered (it owns the
 * registry's reference, which this puts, and holds one of its own). */
static void destroy_ctx(struct CUctx_st *c)
{
	/* From here on nothing new is queued or allocated in c: every path that
	 * does so checks destroyed under c->lock. */
	pthread_mutex_lock(&c->lock);
	c->destroyed = true;
	pthread_mutex_unlock(&c->lock);
	pthread_mutex_lock(&sim.lock);
	if (c->glink.next != &c->glink)
		sim_list_del(&c->glink);
	pthread_mutex_unlock(&sim.lock);
	/* Its work still runs, in order. The operation running now runs out
	 * its modeled time, as NVIDIA's cuCtxDestroy waits for a running
	 * kernel (an endless one: forever; the context failing or the driver
	 * stopping ends it); those queued behind it take none, so other
	 * contexts on the device go on after it, not after the rest. */
	atomic_store(&c->dying, true);
	sim_wait_ctx_seq(c, sim_ctx_fence(c));
	sim_module_release_ctx(c);
	sim_exec_release_ctx(c);
	sim_mem_release_all(c);
	sim_pinned_release_ctx(c);
	sim_arrays_release_ctx(c);
	sim_ctx_put(c);
}

CUresult cuCtxDestroy(CUcontext ctx)
{
	if (!atomic_load(&sim.initialized))
		return CUDA_ERROR_NOT_INITIALIZED;
	struct CUctx_st *c = sim_obj_get(ctx, SIM_CTX);
	if (!c)
		return CUDA_ERROR_INVALID_CONTEXT;
	if (!sim_obj_unregister(&c->obj)) {
		sim_ctx_put(c);
		return CUDA_ERROR_INVALID_CONTEXT;
	}
	destroy_ctx(c);
	if (tls_ctx == c && tls_ctx_id == c->obj.id)
		tls_ctx = NULL;
	sim_ctx_put(c);
	return CUDA_SUCCESS;
}

CUresult cuCtxSetCurrent(CUcontext ctx)
{
	if (!atomic_load(&sim.initialized))
		return CUDA_ERROR_NOT_INITIALIZED;
	if (!ctx) {
		tls_ctx = NULL;
		return CUDA_SUCCESS;
	}
	struct CUctx_st *c = sim_obj_get(ctx, SIM_CTX);
	if (!c)
		return CUDA_ERROR_INVALID_CONTEXT;
	tls_ctx = c;
	tls_ctx_id = c->obj.id;
	sim_ctx_put(c);
	return CUDA_SUCCESS;
}

CUresult cuCtxGetCurrent(CUcontext *pctx)
{
	if (!atomic_load(&sim.initialized))
		return CUDA_ERROR_NOT_INITIALIZED;
	if (!pctx)
		return CUDA_ERROR_INVALID_VALUE;
	struct CUctx_st *c = NULL;
	/* A context destroyed by another thread reads as none. */
	if (sim_ctx_enter(&c, true) == CUDA_SUCCESS) {
		*pctx = c;
		sim_ctx_put(c);
	} else
		*pctx = NULL;
	return CUDA_SUCCESS;
}

CUresult cuCtxSynchronize(void)
{
	struct CUctx_st *c;
	CUresult r = sim_ctx_enter(&c, false);
	if (r)
		return r;
	sim_wait_ctx_seq(c, sim_ctx_fence(c));
	r = (CUresult)atomic_load(&c->sticky);
	sim_ctx_put(c);
	return r;
}

CUresult cuCtxSetLimit(CUlimit limit, size_t value)
{
	struct CUctx_st *c;
	CUresult r = sim_ctx_enter(&c, false);
	if (r)
		return r;
	switch (limit) {
	case CU_LIMIT_STACK_SIZE:
	case CU_LIMIT_PRINTF_FIFO_SIZE:
	case CU_LIMIT_MALLOC_HEAP_SIZE:
	case CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT:
	case CU_LIMIT_CIG_SHMEM_FALLBACK_ENABLED:
		break;
	case CU_LIMIT_DEV_RUNTIME_SYNC_DEPTH:
		if (value > 24)
			r = CUDA_ERROR_INVALID_VALUE;
		break;
	case CU_LIMIT_MAX_L2_FETCH_GRANULARITY:
		if (value > 128)
			r = CUDA_ERROR_INVALID_VALUE;
		break;
	case CU_LIMIT_PERSISTING_L2_CACHE_SIZE: {
		/* As on a GPU: the set-aside is capped at the device's maximum. */
		int max = 0;
		sim_dev_attribute(c->dev, CU_DEVICE_ATTRIBUTE_MAX_PERSISTING_L2_CACHE_SIZE, &max);
		if (value > (size_t)max)
			value = (size_t)max;
		break;
	}
	case CU_LIMIT_SHMEM_SIZE:
	case CU_LIMIT_CIG_ENABLED:
		r = CUDA_ERROR_INVALID_VALUE; /* query-only */
		break;
	default:
		r = (unsigned)limit < SIM_NLIMITS ? CUDA_ERROR_UNSUPPORTED_LIMIT : CUDA_ERROR_INVALID_VALUE;
		break;
	}
	if (!r) {
		pthread_mutex_lock(&c->lock);
		c->limits[limit] = value;
		pthread_mutex_unlock(&c->lock);
	}
	sim_ctx_put(c);
	return r;
}

CUresult cuCtxGetLimit(size_t *pvalue, CUlimit limit)
{
	struct CUctx_st *c;
	CUresult r = sim_ctx_enter(&c, false);
	if (r)
		return r;
	if (!pvalue || (unsigned)limit >= SIM_NLIMITS)
		r = CUDA_ERROR_INVALID_VALUE;
	else {
		pthread_mutex_lock(&c->lock);
		*pvalue = c->limits[limit];
		pthread_mutex_unlock(&c->lock);
	}
	sim_ctx_put(c);
	return r;
}
