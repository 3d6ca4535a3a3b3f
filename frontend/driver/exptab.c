/* SPDX-License-Identifier: Apache-2.0 */
/* exptab.c - cuGetExportTable: the driver's private tables that NVIDIA's own
 * runtime (libcudart_static.a, linked into every program nvcc builds by
 * default, and libcudart.so.13) requires before it makes its first call.
 *
 * The tables are undocumented. Their identities, slot numbers and argument
 * shapes are those NVIDIA's CUDA 13.0 runtime was observed to use (the
 * toolkit installed here; docs/driver-frontend.md lists each table and slot,
 * tests/e2e/driver_exptab.sh checks the toolkit still asks for exactly these).
 * A table this file does not know is refused with a message naming it, and a
 * slot we do not implement reports itself by table and number when called,
 * so a newer runtime fails loudly instead of calling through garbage.
 *
 * XGPU_TRACE_EXPORT_TABLES=1 prints each table requested and each slot
 * called (once each, in order) to stderr, prefixed "xgpu-exptab:". */
#include "driver.h"
#include "md2.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef void (*slot_fn)(void);

struct export_table {
	const char *name;
	uint8_t id[16];
	const slot_fn *slots; /* NULL: known, and deliberately answered "not found" */
	unsigned nslots;
	_Atomic unsigned long long traced_slots;   /* bit per slot already traced */
	_Atomic unsigned long long reported_slots; /* bit per unimplemented slot told to the daemon */
	_Atomic int traced;
};

enum {
	T_PREINIT,
	T_CUDART,
	T_HOOKS,
	T_TLS,
	T_CLS,
	T_CHECKS,
	T_INTEGRITY,
	T_LIBRARY,
	T_MODULE_FUNCS,
	T_CLUSTER,
	T_COMPUTE_CACHE,
	T_COUNT
};

static struct export_table tables[T_COUNT];

static int tracing(void)
{
	static int on = -1;
	if (on < 0) {
		const char *v = getenv("XGPU_TRACE_EXPORT_TABLES");
		on = v && *v && strcmp(v, "0");
	}
	return on;
}

static void format_uuid(const uint8_t *u, char out[37])
{
	snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0], u[1],
		 u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
}

static void trace_slot(unsigned table, unsigned slot)
{
	if (!tracing() || slot >= 64)
		return;
	unsigned long long bit = 1ull << slot;
	if (!(tables[table].traced_slots & bit)) {
		tables[table].traced_slots |= bit;
		fprintf(stderr, "xgpu-exptab: slot %s %u\n", tables[table].name, slot);
	}
}

/* A slot we offer no implementation for: the caller gets an error instead
 * of a jump through NULL, and the message says which slot it wanted. The
 * x86-64 calling convention lets a function ignore arguments it was passed. */
static CUresult unimplemented_slot(unsigned table, unsigned slot)
{
	char uuid[37], key[96];
	format_uuid(tables[table].id, uuid);
	snprintf(key, sizeof key, "exptab %s %u", uuid, slot);
	trace_slot(table, slot);
	xgpu_fe_warn_once(key,
			  "slot %u of the driver's private table %s (%s) is not implemented by xgpu; it "
			  "returns CUDA_ERROR_NOT_SUPPORTED (xgpu offers CUDA 13.0's tables)",
			  slot, tables[table].name, uuid);
	/* The daemon's log names it too, once: that is where an administrator
	 * (and the e2e tests) look for what a program needed and did not get. */
	unsigned long long bit = 1ull << (slot % 64);
	if (!(atomic_fetch_or(&tables[table].reported_slots, bit) & bit)) {
		char name[128];
		snprintf(name, sizeof name, "slot %u of private table %s (%s)", slot, uuid,
			 tables[table].name);
		xgpu_client_tell_unsupported(name);
	}
	return CUDA_ERROR_NOT_SUPPORTED;
}

#define UNIMPLEMENTED(table, slot)                                                                           \
	static CUresult unimpl_##table##_##slot(void)                                                        \
	{                                                                                                    \
		return unimplemented_slot(table, slot);                                                      \
	}

/* ---- CUDART_INTERFACE: the runtime's own entry into the driver ---------- */

/* Slots 1, 6 and 8 load nvcc's embedded fatbin (its __fatBinC_Wrapper_t, or
 * the container itself) as a module, as runtimes before cuLibrary* did. */
static CUresult cudart_load_wrapper(CUmodule *module, const void *wrapper)
{
	trace_slot(T_CUDART, 1);
	return cuModuleLoadData(module, wrapper);
}

static CUresult cudart_load_wrapper_ext(CUmodule *module, const void *wrapper, void *a3, void *a4,
					unsigned a5)
{
	trace_slot(T_CUDART, 6);
	/* The extra arguments' meaning is unknown; never seen non-zero. */
	if (a3 || a4 || a5)
		return unimplemented_slot(T_CUDART, 6);
	return cuModuleLoadData(module, wrapper);
}

static CUresult cudart_primary_ctx(CUcontext *pctx, CUdevice dev)
{
	trace_slot(T_CUDART, 2);
	if (!pctx)
		return CUDA_ERROR_INVALID_VALUE;
	return xgpu_drv_primary_ctx(dev, pctx);
}

static void cudart_slot7(size_t ignored)
{
	/* Called with one word and its result unused; nothing to do here. */
	trace_slot(T_CUDART, 7);
}

static CUresult cudart_load_fatbin_ext(const void *fatbin, CUmodule *module, void *a3, void *a4, unsigned a5)
{
	trace_slot(T_CUDART, 8);
	if (a3 || a4 || a5)
		return unimplemented_slot(T_CUDART, 8);
	return cuModuleLoadData(module, fatbin);
}

/* Slot 12, CUresult (void), new in CUDA 13.1: the runtime calls it once at
 * start-up, after fetching this table and TOOLS_RUNTIME_CALLBACK_HOOKS and
 * asking cuDriverGetVersion (13.1's libcudart.so.13 at 0x3f0e4, the same in
 * every 13.x since), unless its environment holds an override, and fails
 * its initialisation when the answer is not CUDA_SUCCESS. Nothing is passed
 * and nothing is read back: a go-ahead from the driver, which xgpu gives.
 * 13.0's runtime does not call it, and reads only the slots it knows, so
 * the longer table serves both. */
static CUresult cudart_start_check(void)
{
	trace_slot(T_CUDART, 12);
	return CUDA_SUCCESS;
}

UNIMPLEMENTED(T_CUDART, 3)
UNIMPLEMENTED(T_CUDART, 4)
UNIMPLEMENTED(T_CUDART, 5)
UNIMPLEMENTED(T_CUDART, 9)
UNIMPLEMENTED(T_CUDART, 10)
UNIMPLEMENTED(T_CUDART, 11)

/* 10 slots in CUDA 12.0 to 13.0, 13 from 13.1 on. */
#define CUDART_SLOTS 13
static const slot_fn cudart_interface[CUDART_SLOTS] = {
    (slot_fn)(uintptr_t)(CUDART_SLOTS * sizeof(void *)),
    (slot_fn)cudart_load_wrapper,
    (slot_fn)cudart_primary_ctx,
    (slot_fn)unimpl_T_CUDART_3,
    (slot_fn)unimpl_T_CUDART_4,
    (slot_fn)unimpl_T_CUDART_5,
    (slot_fn)cudart_load_wrapper_ext,
    (slot_fn)cudart_slot7,
    (slot_fn)cudart_load_fatbin_ext,
    (slot_fn)unimpl_T_CUDART_9,
    (slot_fn)unimpl_T_CUDART_10,
    (slot_fn)unimpl_T_CUDART_11,
    (slot_fn)cudart_start_check,
};

/* ---- TOOLS_RUNTIME_CALLBACK_HOOKS: buffers the tools interface fills ---- */

/* The runtime asks for two buffers and their sizes and writes into them
 * (profiler callback state). They are larger than the sizes reported, so
 * reading the size as bytes, 32-bit or 64-bit words all stay inside. */
static uint64_t hooks_buffer_a[1024];
static uint64_t hooks_buffer_b[14];

static void hooks_buffer_2(void **ptr, size_t *size)
{
	trace_slot(T_HOOKS, 2);
	if (ptr)
		*ptr = hooks_buffer_a;
	if (size)
		*size = sizeof hooks_buffer_a / sizeof hooks_buffer_a[0];
}

static void hooks_buffer_6(void **ptr, size_t *size)
{
	trace_slot(T_HOOKS, 6);
	if (ptr)
		*ptr = hooks_buffer_b;
	if (size)
		*size = sizeof hooks_buffer_b / sizeof hooks_buffer_b[0];
}

UNIMPLEMENTED(T_HOOKS, 1)
UNIMPLEMENTED(T_HOOKS, 3)
UNIMPLEMENTED(T_HOOKS, 4)
UNIMPLEMENTED(T_HOOKS, 5)

#define HOOKS_SLOTS 7
static const slot_fn tools_runtime_callback_hooks[HOOKS_SLOTS] = {
    (slot_fn)(uintptr_t)(HOOKS_SLOTS * sizeof(void *)),
    (slot_fn)unimpl_T_HOOKS_1,
    (slot_fn)hooks_buffer_2,
    (slot_fn)unimpl_T_HOOKS_3,
    (slot_fn)unimpl_T_HOOKS_4,
    (slot_fn)unimpl_T_HOOKS_5,
    (slot_fn)hooks_buffer_6,
};

/* ---- TOOLS_TLS: the tools interface's per-thread state ------------------ */

/* The runtime only fetches it. cuBLAS and cuBLASLt call slot 2,
 * CUresult (CUcontext *out), and pass what it wrote as the context argument
 * of LIBRARY_RESOURCES' slots (objdump of libcublas.so.13 at 0x2183ab and of
 * libcublasLt.so.13 at 0x19408dc). That it is the calling thread's current
 * context is a guess, resting on cuFFT, which passes slot 4 a context it
 * got elsewhere (libcufft.so.12 0x31a144..0x31a169). An earlier xgpu
 * answered success without writing, and cuBLAS passed stack garbage on. */
static CUresult tools_tls_2(CUcontext *out)
{
	trace_slot(T_TLS, 2);
	if (!out)
		return CUDA_ERROR_INVALID_VALUE;
	*out = xgpu_drv_current_ctx();
	return CUDA_SUCCESS;
}

UNIMPLEMENTED(T_TLS, 1)
UNIMPLEMENTED(T_TLS, 3)

#define TLS_SLOTS 4
static const slot_fn tools_tls[TLS_SLOTS] = {
    (slot_fn)(uintptr_t)(TLS_SLOTS * sizeof(void *)),
    (slot_fn)unimpl_T_TLS_1,
    (slot_fn)tools_tls_2,
    (slot_fn)unimpl_T_TLS_3,
};

/* ---- CONTEXT_LOCAL_STORAGE: the runtime's per-context state ------------ */

/* One value per (context, key). The runtime keeps its per-context record
 * here; a handful of entries per process, so a list is enough. */
struct cls_entry {
	CUcontext ctx;
	void *key;
	void *value;
	struct cls_entry *next;
};
static pthread_mutex_t cls_lock = PTHREAD_MUTEX_INITIALIZER;
static struct cls_entry *cls_entries;

static CUresult cls_context(CUcontext *ctx)
{
	if (!*ctx)
		*ctx = xgpu_drv_current_ctx();
	if (!*ctx || !xgpu_drv_ctx_valid(*ctx))
		return CUDA_ERROR_INVALID_CONTEXT;
	return CUDA_SUCCESS;
}

static struct cls_entry **cls_find(CUcontext ctx, void *key)
{
	struct cls_entry **e = &cls_entries;
	while (*e && ((*e)->ctx != ctx || (*e)->key != key))
		e = &(*e)->next;
	return e;
}

/* The destructor would run when the context is destroyed; the primary
 * context, the runtime's, lives as long as the process here, and for other
 * contexts the argument order of the callback is not known, so it is not
 * called: the runtime's record is freed with the process. */
static CUresult cls_put(CUcontext ctx, void *key, void *value, void (*destructor)(void))
{
	trace_slot(T_CLS, 0);
	CUresult r = cls_context(&ctx);
	if (r)
		return r;
	pthread_mutex_lock(&cls_lock);
	struct cls_entry **e = cls_find(ctx, key);
	if (!*e) {
		*e = calloc(1, sizeof **e);
		if (!*e) {
			pthread_mutex_unlock(&cls_lock);
			return CUDA_ERROR_OUT_OF_MEMORY;
		}
		(*e)->ctx = ctx;
		(*e)->key = key;
	}
	(*e)->value = value;
	pthread_mutex_unlock(&cls_lock);
	return CUDA_SUCCESS;
}

static CUresult cls_delete(CUcontext ctx, void *key)
{
	trace_slot(T_CLS, 1);
	CUresult r = cls_context(&ctx);
	if (r)
		return r;
	pthread_mutex_lock(&cls_lock);
	struct cls_entry **e = cls_find(ctx, key);
	if (*e) {
		struct cls_entry *gone = *e;
		*e = gone->next;
		free(gone);
	}
	pthread_mutex_unlock(&cls_lock);
	return CUDA_SUCCESS;
}

static CUresult cls_get(void **value, CUcontext ctx, void *key)
{
	trace_slot(T_CLS, 2);
	if (!value)
		return CUDA_ERROR_INVALID_VALUE;
	CUresult r = cls_context(&ctx);
	if (r)
		return r;
	pthread_mutex_lock(&cls_lock);
	struct cls_entry **e = cls_find(ctx, key);
	if (*e)
		*value = (*e)->value;
	else
		r = CUDA_ERROR_INVALID_HANDLE; /* "nothing stored": the runtime then puts */
	pthread_mutex_unlock(&cls_lock);
	return r;
}

void xgpu_drv_cls_forget(CUcontext ctx)
{
	pthread_mutex_lock(&cls_lock);
	for (struct cls_entry **e = &cls_entries; *e;) {
		if ((*e)->ctx == ctx) {
			struct cls_entry *gone = *e;
			*e = gone->next;
			free(gone);
		} else {
			e = &(*e)->next;
		}
	}
	pthread_mutex_unlock(&cls_lock);
}

UNIMPLEMENTED(T_CLS, 3)

/* This table has no size word: slot 0 is already a function. */
#define CLS_SLOTS 4
static const slot_fn context_local_storage[CLS_SLOTS] = {
    (slot_fn)cls_put,
    (slot_fn)cls_delete,
    (slot_fn)cls_get,
    (slot_fn)unimpl_T_CLS_3,
};

/* ---- CONTEXT_CHECKS ---------------------------------------------------- */

/* Asks about state of a context (flags that are 0 for every context we
 * make); both answers are "nothing special". */
static CUresult context_check(CUcontext ctx, uint32_t *flags, const void **detail)
{
	trace_slot(T_CHECKS, 2);
	if (flags)
		*flags = 0;
	return CUDA_SUCCESS;
}

static uint32_t context_check_3(void)
{
	trace_slot(T_CHECKS, 3);
	return 0;
}

UNIMPLEMENTED(T_CHECKS, 1)

#define CHECKS_SLOTS 4
static const slot_fn context_checks[CHECKS_SLOTS] = {
    (slot_fn)(uintptr_t)(CHECKS_SLOTS * sizeof(void *)),
    (slot_fn)unimpl_T_CHECKS_1,
    (slot_fn)context_check,
    (slot_fn)context_check_3,
};

/* ---- INTEGRITY_CHECK: the runtime's proof that it talks to a driver ---- */

/* The runtime calls slot 1 with a version, its own release's CUDA_VERSION
 * plus a variant in its last digit (13000, 13001, 13002 from CUDA 13.0;
 * 12040 to 12042 from 12.4; 13010 to 13012 from 13.1), and a timestamp, and
 * compares the answer with its own computation. Variants 0 and 1 answer
 * fixed words; variant 2 is HMAC-MD2 under a fixed key over the process and
 * thread, the addresses of this table, of CUDART_INTERFACE and of this
 * function, the timestamp, and each device's UUID and PCI location (public
 * in ZLUDA, vosen/ZLUDA dark_api; implemented here from RFC 1319/2104). The
 * algorithm is the same for every release from 12.0 to 13.5: what a release
 * asks for is data, below. */
#define INTEGRITY_SLOTS 3
static const slot_fn integrity_check_table[INTEGRITY_SLOTS];

/* The runtime releases whose start-up xgpu serves, as the first version
 * each passes to the integrity check (its CUDA_VERSION), with the
 * variants it asks for (the CUDART_INTERFACE slots differ too: 10 up to
 * 13.0, 13 from 13.1, and the table above serves both). Every
 * release here is run by tests/e2e/runtime_matrix.sh from NVIDIA's wheels
 * (the tables and slots each asks for are in tests/data/exptab-runtime-*.txt);
 * CUDA 12.7 was never released. A version not listed is refused by name, so
 * a new release shows up as a clear message rather than as a wrong answer
 * the runtime would turn into cudaErrorSoftwareValidityNotEstablished. */
static const struct runtime_release {
	unsigned version;  /* major * 1000 + minor * 10 */
	unsigned variants; /* integrity variants asked for: 0 to variants - 1 */
} runtime_releases[] = {
    {12000, 3}, {12010, 3}, {12020, 3}, {12030, 3}, {12040, 3}, {12050, 3}, {12060, 3}, {12080, 3},
    {12090, 3}, {13000, 3}, {13010, 3}, {13020, 3}, {13030, 3}, {13040, 3}, {13050, 3},
};

static const struct runtime_release *runtime_release(unsigned version)
{
	for (size_t i = 0; i < sizeof runtime_releases / sizeof runtime_releases[0]; i++)
		if (version >= runtime_releases[i].version &&
		    version < runtime_releases[i].version + runtime_releases[i].variants)
			return &runtime_releases[i];
	return NULL;
}

#define INTEGRITY_SLOTS 3
static const slot_fn integrity_check_table[INTEGRITY_SLOTS];

static const uint8_t integrity_key[16] = {0x14, 0x6a, 0xdd, 0xae, 0x53, 0xa9, 0xa7, 0x52,
					  0xaa, 0x08, 0x41, 0x36, 0x0b, 0xf5, 0x5a, 0x9f};

static CUresult integrity_device_info(CUdevice dev, uint8_t out[28])
{
	CUuuid uuid;
	int32_t pci[3];
	CUresult r = cuDeviceGetUuid_v2(&uuid, dev);
	if (!r)
		r = cuDeviceGetAttribute(&pci[0], CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, dev);
	if (!r)
		r = cuDeviceGetAttribute(&pci[1], CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, dev);
	if (!r)
		r = cuDeviceGetAttribute(&pci[2], CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, dev);
	if (!r) {
		memcpy(out, uuid.bytes, 16);
		memcpy(out + 16, pci, sizeof pci);
	}
	return r;
}

static CUresult integrity_check(uint32_t version, uint64_t unix_seconds, uint64_t result[2])
{
	trace_slot(T_INTEGRITY, 1);
	if (!result)
		return CUDA_ERROR_INVALID_VALUE;
	if (tracing()) {
		/* Each version once, in the order asked; the bit is the version
		 * modulo 256, and a process's runtime asks for three in a row. */
		static _Atomic unsigned long long traced[4];
		unsigned bit = version % 256;
		if (!(atomic_fetch_or(&traced[bit / 64], 1ull << (bit % 64)) & (1ull << (bit % 64))))
			fprintf(stderr, "xgpu-exptab: integrity %u\n", version);
	}
	if (!runtime_release(version)) {
		char key[48];
		snprintf(key, sizeof key, "integrity %u", version);
		xgpu_fe_warn_once(
		    key,
		    "the CUDA runtime asked for integrity check version %u (CUDA %u.%u, variant "
		    "%u), which xgpu does not know; xgpu serves the runtimes of CUDA 12.0 to 13.5 "
		    "(docs/driver-frontend.md): use one of those, or update xgpu",
		    version, version / 1000, version % 1000 / 10, version % 10);
		char name[96];
		snprintf(name, sizeof name, "integrity check version %u of private table INTEGRITY_CHECK",
			 version);
		xgpu_client_tell_unsupported(name);
		return CUDA_ERROR_NOT_SUPPORTED;
	}
	if (version % 10 == 0) {
		result[0] = 0x3341181c03cb675cull;
		result[1] = 0x8ed383aa1f4cd1e8ull;
		return CUDA_SUCCESS;
	}
	if (version % 10 == 1) {
		result[0] = 0x1841181c03cb675cull;
		result[1] = 0x8ed383aa1f4cd1e8ull;
		return CUDA_SUCCESS;
	}
	int count;
	CUresult r = cuDeviceGetCount(&count);
	if (r)
		return r;
	/* The message, in the runtime's layout (x86-64, native byte order). */
	struct {
		uint32_t driver_version, version, pid, thread;
		const void *cudart_table, *integrity_table, *function;
		uint64_t unix_seconds;
	} head = {
	    .driver_version = XGPU_DRV_VERSION,
	    .version = version,
	    .pid = (uint32_t)getpid(),
	    .thread = (uint32_t)(uintptr_t)pthread_self(),
	    .cudart_table = cudart_interface,
	    .integrity_table = integrity_check_table,
	    .function = (const void *)integrity_check_table[1],
	    .unix_seconds = unix_seconds,
	};
	_Static_assert(sizeof head == 48, "the runtime hashes 48 bytes of header");
	enum { MAX_DEVICES = 16 };
	uint8_t devices[MAX_DEVICES][28];
	if (count > MAX_DEVICES)
		count = MAX_DEVICES;
	for (int d = 0; d < count; d++)
		if ((r = integrity_device_info(d, devices[d])))
			return r;
	struct xgpu_md2_part parts[1 + MAX_DEVICES] = {{&head, sizeof head}};
	for (int d = 0; d < count; d++)
		parts[1 + d] = (struct xgpu_md2_part){devices[d], sizeof devices[d]};
	uint8_t digest[XGPU_MD2_BYTES];
	xgpu_hmac_md2(integrity_key, parts, 1 + (size_t)count, digest);
	memcpy(result, digest, sizeof digest);
	return CUDA_SUCCESS;
}

UNIMPLEMENTED(T_INTEGRITY, 2)

static const slot_fn integrity_check_table[INTEGRITY_SLOTS] = {
    (slot_fn)(uintptr_t)(INTEGRITY_SLOTS * sizeof(void *)),
    (slot_fn)integrity_check,
    (slot_fn)unimpl_T_INTEGRITY_2,
};

/* ---- LIBRARY_RESOURCES (21318c60): what libraries ask of contexts, streams */

/* Unnamed by ZLUDA; the name is ours. cuBLAS (libcublas.so.13), cuBLASLt
 * (libcublasLt.so.13) and cuFFT (libcufft.so.12) use three slots, each with
 * a context first (TOOLS_TLS slot 2's, or one cuFFT has); signatures from
 * the call sites (docs/driver-frontend.md). NULL means the current one. */
static CUresult library_context(CUcontext *ctx)
{
	if (!*ctx)
		*ctx = xgpu_drv_current_ctx();
	return *ctx && xgpu_drv_ctx_valid(*ctx) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

/* Slot 4, CUresult (CUcontext, uint64_t *id): cuBLASLt, before every
 * operation, looks id up in a std::map of contexts it has set up
 * (libcublasLt.so.13 0x194091b), cuFFT compares it with the one a plan was
 * made for (libcufft.so.12 0x31a169). An identity per context, never 0:
 * cuCtxGetId's (a guess at what the driver answers; LUPINE answers 1 for a
 * context, 0 for none). */
static CUresult library_context_id(CUcontext ctx, uint64_t *id)
{
	trace_slot(T_LIBRARY, 4);
	if (!id)
		return CUDA_ERROR_INVALID_VALUE;
	CUresult r = library_context(&ctx);
	unsigned long long ctx_id = 0;
	if (!r)
		r = cuCtxGetId(ctx, &ctx_id);
	if (!r)
		*id = ctx_id;
	return r;
}

/* Slot 51, CUresult (CUcontext, CUstream, void **stream_object, int
 * per_thread): cuBLAS, choosing a workspace for a stream that is not being
 * captured (libcublas.so.13 0x2183de; per_thread is stream == 2,
 * cudaStreamPerThread), turns the stream into an object it only passes to
 * slot 39. The object here is the stream's wire handle; an unknown stream
 * fails later, at its first use. */
static CUresult library_stream_object(CUcontext ctx, CUstream stream, void **object, int per_thread)
{
	trace_slot(T_LIBRARY, 51);
	(void)per_thread; /* every thread's default stream is the channel's one */
	if (!object)
		return CUDA_ERROR_INVALID_VALUE;
	CUresult r = library_context(&ctx);
	if (!r)
		*object = (void *)(uintptr_t)xgpu_drv_stream(stream);
	return r;
}

/* Slot 39, CUresult (CUcontext, stream_object, uint64_t *id): the key cuBLAS
 * files a stream's workspace under (compared with the keys of its pool,
 * libcublas.so.13 0x2183fb); fresh pool entries hold 0, so the identity is
 * never 0: the wire handle plus one. */
static CUresult library_stream_id(CUcontext ctx, const void *object, uint64_t *id)
{
	trace_slot(T_LIBRARY, 39);
	if (!id)
		return CUDA_ERROR_INVALID_VALUE;
	CUresult r = library_context(&ctx);
	if (!r)
		*id = (uint64_t)(uintptr_t)object + 1;
	return r;
}

/* The slots not implemented, each its own function so that it can name
 * itself when called. */
/* clang-format off */
#define LIBRARY_UNIMPLEMENTED(X)                                                    \
	X(1) X(2) X(3) X(5) X(6) X(7) X(8) X(9) X(10) X(11) X(12) X(13) X(14)       \
	X(15) X(16) X(17) X(18) X(19) X(20) X(21) X(22) X(23) X(24) X(25) X(26)     \
	X(27) X(28) X(29) X(30) X(31) X(32) X(33) X(34) X(35) X(36) X(37) X(38)     \
	X(40) X(41) X(42) X(43) X(44) X(45) X(46) X(47) X(48) X(49) X(50)
#define LIBRARY_DEFINE(n) UNIMPLEMENTED(T_LIBRARY, n)
#define LIBRARY_ENTRY(n) [n] = (slot_fn)unimpl_T_LIBRARY_##n,
LIBRARY_UNIMPLEMENTED(LIBRARY_DEFINE)

/* How many slots the table has is not known; 51 is the highest seen used,
 * and slot 0 is taken to be the size as in the other tables (a guess:
 * cuBLAS does not read it). */
#define LIBRARY_SLOTS 52
static const slot_fn library_resources[LIBRARY_SLOTS] = {
	[0] = (slot_fn)(uintptr_t)(LIBRARY_SLOTS * sizeof(void *)),
	LIBRARY_UNIMPLEMENTED(LIBRARY_ENTRY)
	[4] = (slot_fn)library_context_id,
	[39] = (slot_fn)library_stream_id,
	[51] = (slot_fn)library_stream_object,
};
/* clang-format on */

/* ---- MODULE_FUNCTIONS (6e163fbe): a module's kernels, for cuFFT -------- */

/* Unnamed by ZLUDA; the name is ours. cuFFT asks for it at start-up beside
 * LIBRARY_RESOURCES and refuses to plan without it; it checks that slot 0,
 * the size, covers slot 7 (libcufft.so.12 0x350fca) and calls only that:
 *   unsigned (CUcontext, CUmodule, void (*each)(void *user, CUfunction,
 *   uint64_t), void *user)
 * when it wants a module's kernel without naming it (0x350fde; with a name
 * it calls cuModuleGetFunction). It takes the function its callback was last
 * given and requires the answer 1: the answer is taken to be the number of
 * functions passed to the callback (a guess; cuFFT's modules hold one
 * kernel). The callback's third argument is not known (cuFFT's ignores it;
 * 0 here). Any failure answers 0. */
typedef void (*module_function_cb)(void *user, CUfunction function, uint64_t unknown);

static unsigned module_functions_each(CUcontext ctx, CUmodule module, module_function_cb each, void *user)
{
	trace_slot(T_MODULE_FUNCS, 7);
	if (!each || (ctx && !xgpu_drv_ctx_valid(ctx)))
		return 0;
	unsigned count;
	if (cuModuleGetFunctionCount(&count, module) || !count)
		return 0;
	CUfunction *functions = calloc(count, sizeof *functions);
	if (!functions)
		return 0;
	if (cuModuleEnumerateFunctions(functions, count, module))
		count = 0;
	for (unsigned i = 0; i < count; i++)
		each(user, functions[i], 0);
	free(functions);
	return count;
}

UNIMPLEMENTED(T_MODULE_FUNCS, 1)
UNIMPLEMENTED(T_MODULE_FUNCS, 2)
UNIMPLEMENTED(T_MODULE_FUNCS, 3)
UNIMPLEMENTED(T_MODULE_FUNCS, 4)
UNIMPLEMENTED(T_MODULE_FUNCS, 5)
UNIMPLEMENTED(T_MODULE_FUNCS, 6)

#define MODULE_FUNCS_SLOTS 8
static const slot_fn module_functions[MODULE_FUNCS_SLOTS] = {
    (slot_fn)(uintptr_t)(MODULE_FUNCS_SLOTS * sizeof(void *)),
    (slot_fn)unimpl_T_MODULE_FUNCS_1,
    (slot_fn)unimpl_T_MODULE_FUNCS_2,
    (slot_fn)unimpl_T_MODULE_FUNCS_3,
    (slot_fn)unimpl_T_MODULE_FUNCS_4,
    (slot_fn)unimpl_T_MODULE_FUNCS_5,
    (slot_fn)unimpl_T_MODULE_FUNCS_6,
    (slot_fn)module_functions_each,
};

/* ---- CLUSTER_PROTOTYPE (1734dc26): clusters and the GPC layout, cuBLASLt - */

/* The name is the one NVIDIA's own code gives it (CU_ETID_CLUSTER_PROTOTYPE,
 * seen in public sources); slot 0 is the size. cuBLASLt's matmul heuristic
 * (libcublasLt.so.13 0x330f96d, e.g. from cublasGemmEx at fp16 n=96) fetches
 * it once, calls slot 4, CUresult (unsigned char **vgpc, unsigned char
 * **mtpc): the map of the GPU's TPCs to virtual GPCs, arrays the driver
 * allocates, and, when it got one, hands both back to slot 13, CUresult
 * (unsigned char *vgpc, unsigned char *mtpc), to be freed. With no map
 * (success and NULL, or a failure) it takes the path it takes when its own
 * settings say not to ask (0x330f87d): the heuristic without the layout.
 * xgpu does not know the layout of the GPU behind the daemon (and the sim
 * has none), so it answers that: no map. Before this table existed cuBLASLt
 * called through the NULL it got for it and crashed. */
static CUresult cluster_tpc_map(unsigned char **vgpc, unsigned char **mtpc)
{
	trace_slot(T_CLUSTER, 4);
	if (vgpc)
		*vgpc = NULL;
	if (mtpc)
		*mtpc = NULL;
	return CUDA_SUCCESS;
}

static CUresult cluster_tpc_map_free(unsigned char *vgpc, unsigned char *mtpc)
{
	trace_slot(T_CLUSTER, 13);
	/* Slot 4 never hands out a map. */
	return vgpc || mtpc ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

/* clang-format off */
#define CLUSTER_UNIMPLEMENTED(X) X(1) X(2) X(3) X(5) X(6) X(7) X(8) X(9) X(10) X(11) X(12) X(14) X(15) X(16)
#define CLUSTER_DEFINE(n) UNIMPLEMENTED(T_CLUSTER, n)
#define CLUSTER_ENTRY(n) [n] = (slot_fn)unimpl_T_CLUSTER_##n,
CLUSTER_UNIMPLEMENTED(CLUSTER_DEFINE)

/* 16 functions after the size in CUDA 12 and 13's drivers. */
#define CLUSTER_SLOTS 17
static const slot_fn cluster_prototype[CLUSTER_SLOTS] = {
	[0] = (slot_fn)(uintptr_t)(CLUSTER_SLOTS * sizeof(void *)),
	CLUSTER_UNIMPLEMENTED(CLUSTER_ENTRY)
	[4] = (slot_fn)cluster_tpc_map,
	[13] = (slot_fn)cluster_tpc_map_free,
};
/* clang-format on */

/* ---- the directory ----------------------------------------------------- */

/* Names as ZLUDA calls them, where it does. */
static struct export_table tables[T_COUNT] = {
    /* Asked for before cuInit; NVIDIA's runtime carries on when it is not
     * found, and what it would hold is not known. */
    [T_PREINIT] = {"UNNAMED_PREINIT",
		   {0xf8, 0xcf, 0xf9, 0x51, 0x21, 0x46, 0x8b, 0x4e, 0xb9, 0xe2, 0xfb, 0x46, 0x9e, 0x7c, 0x0d,
		    0xd9},
		   NULL,
		   0},
    [T_CUDART] = {"CUDART_INTERFACE",
		  {0x6b, 0xd5, 0xfb, 0x6c, 0x5b, 0xf4, 0xe7, 0x4a, 0x89, 0x87, 0xd9, 0x39, 0x12, 0xfd, 0x9d,
		   0xf9},
		  cudart_interface,
		  CUDART_SLOTS},
    [T_HOOKS] = {"TOOLS_RUNTIME_CALLBACK_HOOKS",
		 {0xa0, 0x94, 0x79, 0x8c, 0x2e, 0x74, 0x2e, 0x74, 0x93, 0xf2, 0x08, 0x00, 0x20, 0x0c, 0x0a,
		  0x66},
		 tools_runtime_callback_hooks,
		 HOOKS_SLOTS},
    [T_TLS] = {"TOOLS_TLS",
	       {0x42, 0xd8, 0x5a, 0x81, 0x23, 0xf6, 0xcb, 0x47, 0x82, 0x98, 0xf6, 0xe7, 0x8a, 0x3a, 0xec,
		0xdc},
	       tools_tls,
	       TLS_SLOTS},
    [T_CLS] = {"CONTEXT_LOCAL_STORAGE",
	       {0xc6, 0x93, 0x33, 0x6e, 0x11, 0x21, 0xdf, 0x11, 0xa8, 0xc3, 0x68, 0xf3, 0x55, 0xd8, 0x95,
		0x93},
	       context_local_storage,
	       CLS_SLOTS},
    [T_CHECKS] = {"CONTEXT_CHECKS",
		  {0x26, 0x3e, 0x88, 0x60, 0x7c, 0xd2, 0x61, 0x43, 0x92, 0xf6, 0xbb, 0xd5, 0x00, 0x6d, 0xfa,
		   0x7e},
		  context_checks,
		  CHECKS_SLOTS},
    [T_INTEGRITY] = {"INTEGRITY_CHECK",
		     {0xd4, 0x08, 0x20, 0x55, 0xbd, 0xe6, 0x70, 0x4b, 0x8d, 0x34, 0xba, 0x12, 0x3c, 0x66,
		      0xe1, 0xf2},
		     integrity_check_table,
		     INTEGRITY_SLOTS},
    [T_LIBRARY] = {"LIBRARY_RESOURCES",
		   {0x21, 0x31, 0x8c, 0x60, 0x97, 0x14, 0x32, 0x48, 0x8c, 0xa6, 0x41, 0xff, 0x73, 0x24, 0xc8,
		    0xf2},
		   library_resources,
		   LIBRARY_SLOTS},
    [T_MODULE_FUNCS] = {"MODULE_FUNCTIONS",
			{0x6e, 0x16, 0x3f, 0xbe, 0xb9, 0x58, 0x44, 0x4d, 0x83, 0x5c, 0xe1, 0x82, 0xaf, 0xf1,
			 0x99, 0x1e},
			module_functions,
			MODULE_FUNCS_SLOTS},
    [T_CLUSTER] = {"CLUSTER_PROTOTYPE",
		   {0x17, 0x34, 0xdc, 0x26, 0x80, 0x0d, 0x47, 0x45, 0x87, 0x26, 0xc0, 0xf1, 0xe7, 0xdd, 0x8b,
		    0xca},
		   cluster_prototype,
		   CLUSTER_SLOTS},
    /* Asked for by NVRTC (libnvrtc.so.13 0x9e3df4) for the driver's compute
     * cache of compiled code (our name, from NVRTC's messages); without it
     * NVRTC says "[nvrtc cache] failed to get cuda export table" to its
     * trace and compiles without a cache, which is what xgpu wants: it has
     * no such cache. */
    [T_COMPUTE_CACHE] = {"COMPUTE_CACHE",
			 {0xda, 0x91, 0x51, 0xd3, 0x3a, 0xe6, 0xcc, 0x41, 0xa5, 0xc0, 0x4f, 0x26, 0xd5, 0x33,
			  0xe3, 0x28},
			 NULL,
			 0},
};

/* Whether an unknown table is traced for the first time (the trace lists
 * each table once, known or not; a few unknown ones are remembered). */
static bool first_unknown(const char id[16])
{
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	static char seen[16][16];
	static unsigned nseen;
	bool first = true;
	pthread_mutex_lock(&lock);
	for (unsigned i = 0; i < nseen && first; i++)
		first = memcmp(seen[i], id, 16) != 0;
	if (first && nseen < 16)
		memcpy(seen[nseen++], id, 16);
	pthread_mutex_unlock(&lock);
	return first;
}

CUresult cuGetExportTable(const void **ppExportTable, const CUuuid *pExportTableId)
{
	if (!ppExportTable || !pExportTableId)
		return CUDA_ERROR_INVALID_VALUE;
	*ppExportTable = NULL;
	char uuid[37];
	format_uuid((const uint8_t *)pExportTableId->bytes, uuid);
	struct export_table *t = NULL;
	for (unsigned i = 0; i < T_COUNT; i++)
		if (!memcmp(tables[i].id, pExportTableId->bytes, 16))
			t = &tables[i];
	bool first = t ? !atomic_exchange(&t->traced, 1) : first_unknown(pExportTableId->bytes);
	if (tracing() && first)
		fprintf(stderr, "xgpu-exptab: table %s %s %s\n", uuid, t ? t->name : "UNKNOWN",
			t && t->slots ? "offered" : "refused");
	if (!t) {
		xgpu_fe_warn_once(uuid,
				  "cuGetExportTable: the driver's private table %s is not one xgpu offers "
				  "(xgpu offers CUDA 13.0's tables; see docs/driver-frontend.md)",
				  uuid);
		if (first) {
			char name[80];
			snprintf(name, sizeof name, "cuGetExportTable of private table %s", uuid);
			xgpu_client_tell_unsupported(name);
		}
		return CUDA_ERROR_NOT_FOUND;
	}
	if (!t->slots)
		return CUDA_ERROR_NOT_FOUND;
	*ppExportTable = t->slots;
	return CUDA_SUCCESS;
}
