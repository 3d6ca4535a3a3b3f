/* SPDX-License-Identifier: Apache-2.0 */
/* link.c - the driver's JIT linker, cuLinkCreate / AddData / AddFile /
 * Complete / Destroy (ptxjit, jitLto, numba-cuda, CuPy).
 *
 * The linker runs in the guest, as the driver's does in the process: the
 * image it produces goes to the daemon with cuModuleLoadData like any other.
 *
 * - One input that is a module image already (a cubin, a fatbin or PTX) is
 *   the result itself: cuModuleLoadData takes all three (PTX is compiled
 *   where the module is loaded). This is what ptxjit and most of numba's
 *   kernels need, and it needs nothing from NVIDIA.
 * - Anything else (several inputs, host objects and libraries with device
 *   code, LTO IR) is linked by NVIDIA's nvJitLink (libnvJitLink.so.13 from the
 *   toolkit, or the nvidia-nvjitlink wheel, found by the dynamic loader) for
 *   the device's architecture, into one cubin. Without it, cuLinkComplete is
 *   refused by name, saying so.
 *
 * The error and info log buffers of cuLinkCreate's options are filled as the
 * driver fills them; every other option is a hint to a compiler this linker
 * does not run, and is accepted and ignored. */
#include "driver.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LINK_MAGIC 0x6c6e6b78u /* "xknl" */
#define LINK_MAX_INPUTS 4096u
#define LINK_MAX_BYTES ((size_t)2 << 30) /* all inputs together */

struct link_input {
	CUjitInputType type;
	void *data;
	size_t size;
	char name[64];
};

struct CUlinkState_st {
	uint32_t magic;
	struct link_input *in;
	unsigned n;
	size_t bytes;
	char *error_log, *info_log;
	size_t error_size, info_size;
	void *out; /* cuLinkComplete's image, ours until destroy */
	size_t out_size;
};

static void put_log(char *buf, size_t size, const char *fmt, const char *text)
{
	if (buf && size)
		snprintf(buf, size, fmt, text);
}

/* Options are (name, value) pairs; the log buffers are the ones that
 * matter to a caller. */
static void take_options(struct CUlinkState_st *s, unsigned n, const CUjit_option *opts, void **vals)
{
	if (!opts || !vals)
		return;
	for (unsigned i = 0; i < n; i++) {
		switch (opts[i]) {
		case CU_JIT_ERROR_LOG_BUFFER:
			s->error_log = vals[i];
			break;
		case CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES:
			s->error_size = (size_t)(uintptr_t)vals[i];
			break;
		case CU_JIT_INFO_LOG_BUFFER:
			s->info_log = vals[i];
			break;
		case CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES:
			s->info_size = (size_t)(uintptr_t)vals[i];
			break;
		default:
			break;
		}
	}
	if (s->error_log && s->error_size)
		s->error_log[0] = '\0';
	if (s->info_log && s->info_size)
		s->info_log[0] = '\0';
}

static bool valid_state(CUlinkState s)
{
	return s && s->magic == LINK_MAGIC;
}

CUresult cuLinkCreate(unsigned int numOptions, CUjit_option *options, void **optionValues,
		      CUlinkState *stateOut)
{
	struct xgpu_client *c;
	if (!stateOut || (numOptions && (!options || !optionValues)))
		return CUDA_ERROR_INVALID_VALUE;
	CUresult r = xgpu_drv_client_ctx(&c);
	if (r)
		return r;
	struct CUlinkState_st *s = calloc(1, sizeof *s);
	if (!s)
		return CUDA_ERROR_OUT_OF_MEMORY;
	s->magic = LINK_MAGIC;
	take_options(s, numOptions, options, optionValues);
	*stateOut = s;
	return CUDA_SUCCESS;
}

CUresult cuLinkAddData(CUlinkState state, CUjitInputType type, void *data, size_t size, const char *name,
		       unsigned int numOptions, CUjit_option *options, void **optionValues)
{
	(void)numOptions, (void)options, (void)optionValues; /* per-input compiler hints */
	if (!valid_state(state))
		return CUDA_ERROR_INVALID_HANDLE;
	if (!data || !size || (unsigned)type >= CU_JIT_NUM_INPUT_TYPES)
		return CUDA_ERROR_INVALID_VALUE;
	if (state->n == LINK_MAX_INPUTS || size > LINK_MAX_BYTES - state->bytes)
		return CUDA_ERROR_OUT_OF_MEMORY;
	if (state->n % 16 == 0) {
		struct link_input *v = realloc(state->in, (state->n + 16) * sizeof *v);
		if (!v)
			return CUDA_ERROR_OUT_OF_MEMORY;
		state->in = v;
	}
	void *copy = malloc(size + 1);
	if (!copy)
		return CUDA_ERROR_OUT_OF_MEMORY;
	memcpy(copy, data, size);
	((char *)copy)[size] = '\0'; /* PTX without its NUL still reads as a string */
	struct link_input *in = &state->in[state->n++];
	*in = (struct link_input){.type = type, .data = copy, .size = size};
	snprintf(in->name, sizeof in->name, "%s", name ? name : "input");
	state->bytes += size;
	return CUDA_SUCCESS;
}

CUresult cuLinkAddFile(CUlinkState state, CUjitInputType type, const char *path, unsigned int numOptions,
		       CUjit_option *options, void **optionValues)
{
	if (!valid_state(state))
		return CUDA_ERROR_INVALID_HANDLE;
	if (!path)
		return CUDA_ERROR_INVALID_VALUE;
	FILE *f = fopen(path, "rb");
	if (!f) {
		put_log(state->error_log, state->error_size, "cannot open %s", path);
		return CUDA_ERROR_FILE_NOT_FOUND;
	}
	void *buf = NULL;
	long n = -1;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) > 0 && (size_t)n <= LINK_MAX_BYTES &&
	    fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)n)) &&
	    fread(buf, 1, (size_t)n, f) != (size_t)n) {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	if (!buf) {
		put_log(state->error_log, state->error_size, "cannot read %s", path);
		return n > 0 && (size_t)n > LINK_MAX_BYTES ? CUDA_ERROR_OUT_OF_MEMORY
							   : CUDA_ERROR_FILE_NOT_FOUND;
	}
	const char *base = strrchr(path, '/');
	CUresult r = cuLinkAddData(state, type, buf, (size_t)n, base ? base + 1 : path, numOptions, options,
				   optionValues);
	free(buf);
	return r;
}

/* ---- NVIDIA's nvJitLink, for real links ---------------------------------------- */

typedef struct nvjl *nvjl_handle;
static struct {
	pthread_once_t once;
	void *dl;
	int (*create)(nvjl_handle *, uint32_t, const char **);
	int (*destroy)(nvjl_handle *);
	int (*add_data)(nvjl_handle, int, const void *, size_t, const char *);
	int (*complete)(nvjl_handle);
	int (*cubin_size)(nvjl_handle, size_t *);
	int (*cubin)(nvjl_handle, void *);
	int (*log_size)(nvjl_handle, size_t *);
	int (*log)(nvjl_handle, char *);
} nvjl = {.once = PTHREAD_ONCE_INIT};

static void nvjl_load(void)
{
	/* The 13.0 ABI, the one this toolkit's header names. */
	void *dl = dlopen("libnvJitLink.so.13", RTLD_NOW | RTLD_LOCAL);
	if (!dl)
		return;
#define SYM(field, name) *(void **)&nvjl.field = dlsym(dl, name)
	SYM(create, "__nvJitLinkCreate_13_0");
	SYM(destroy, "__nvJitLinkDestroy_13_0");
	SYM(add_data, "__nvJitLinkAddData_13_0");
	SYM(complete, "__nvJitLinkComplete_13_0");
	SYM(cubin_size, "__nvJitLinkGetLinkedCubinSize_13_0");
	SYM(cubin, "__nvJitLinkGetLinkedCubin_13_0");
	SYM(log_size, "__nvJitLinkGetErrorLogSize_13_0");
	SYM(log, "__nvJitLinkGetErrorLog_13_0");
#undef SYM
	if (nvjl.create && nvjl.destroy && nvjl.add_data && nvjl.complete && nvjl.cubin_size && nvjl.cubin &&
	    nvjl.log_size && nvjl.log)
		nvjl.dl = dl;
	else
		dlclose(dl);
}

/* nvJitLink's input type for the driver's (NVJITLINK_INPUT_*). */
static int nvjl_type(CUjitInputType t)
{
	switch (t) {
	case CU_JIT_INPUT_CUBIN:
		return 1;
	case CU_JIT_INPUT_PTX:
		return 2;
	case CU_JIT_INPUT_NVVM:
		return 3; /* LTO IR */
	case CU_JIT_INPUT_FATBINARY:
		return 4;
	case CU_JIT_INPUT_OBJECT:
		return 5;
	case CU_JIT_INPUT_LIBRARY:
		return 6;
	default:
		return 0;
	}
}

static CUresult link_nvjitlink(CUlinkState s)
{
	pthread_once(&nvjl.once, nvjl_load);
	if (!nvjl.dl) {
		char what[160];
		snprintf(
		    what, sizeof what,
		    "cuLinkComplete of %u inputs (a real link needs NVIDIA's nvJitLink, libnvJitLink.so.13, "
		    "which the dynamic loader does not find)",
		    s->n);
		put_log(s->error_log, s->error_size, "%s", what);
		return xgpu_drv_unsupported(what);
	}
	int major = 0, minor = 0;
	CUdevice dev = 0;
	CUresult r = cuCtxGetDevice(&dev);
	if (!r)
		r = cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
	if (!r)
		r = cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
	if (r)
		return r;
	char arch[32];
	snprintf(arch, sizeof arch, "-arch=sm_%d%d", major, minor);
	bool lto = false;
	for (unsigned i = 0; i < s->n; i++)
		lto |= s->in[i].type == CU_JIT_INPUT_NVVM;
	const char *opts[] = {arch, "-lto"};
	nvjl_handle h = NULL;
	if (nvjl.create(&h, lto ? 2 : 1, opts))
		return CUDA_ERROR_INVALID_VALUE;
	int e = 0;
	for (unsigned i = 0; i < s->n && !e; i++)
		e = nvjl.add_data(h, nvjl_type(s->in[i].type), s->in[i].data, s->in[i].size, s->in[i].name);
	if (!e)
		e = nvjl.complete(h);
	size_t size = 0;
	if (!e)
		e = nvjl.cubin_size(h, &size);
	void *out = !e && size ? malloc(size) : NULL;
	if (!e && out)
		e = nvjl.cubin(h, out);
	if (e || !out) {
		size_t ls = 0;
		char *log = NULL;
		if (!nvjl.log_size(h, &ls) && ls && (log = malloc(ls + 1)) && !nvjl.log(h, log)) {
			log[ls] = '\0';
			put_log(s->error_log, s->error_size, "%s", log);
		}
		free(log);
		free(out);
		nvjl.destroy(&h);
		return e ? CUDA_ERROR_INVALID_IMAGE : CUDA_ERROR_OUT_OF_MEMORY;
	}
	nvjl.destroy(&h);
	s->out = out;
	s->out_size = size;
	put_log(s->info_log, s->info_size, "%s", "linked by nvJitLink");
	return CUDA_SUCCESS;
}

CUresult cuLinkComplete(CUlinkState state, void **cubinOut, size_t *sizeOut)
{
	if (!valid_state(state))
		return CUDA_ERROR_INVALID_HANDLE;
	if (!cubinOut || !sizeOut || !state->n)
		return CUDA_ERROR_INVALID_VALUE;
	if (!state->out) {
		const struct link_input *in = &state->in[0];
		if (state->n == 1 && (in->type == CU_JIT_INPUT_CUBIN || in->type == CU_JIT_INPUT_FATBINARY ||
				      in->type == CU_JIT_INPUT_PTX)) {
			/* The image itself; PTX keeps its NUL, as cuModuleLoadData wants. */
			state->out = in->data;
			state->out_size = in->size + (in->type == CU_JIT_INPUT_PTX);
		} else {
			CUresult r = link_nvjitlink(state);
			if (r)
				return r;
		}
	}
	*cubinOut = state->out;
	*sizeOut = state->out_size;
	return CUDA_SUCCESS;
}

CUresult cuLinkDestroy(CUlinkState state)
{
	if (!valid_state(state))
		return CUDA_ERROR_INVALID_HANDLE;
	bool shared = state->n && state->out == state->in[0].data;
	for (unsigned i = 0; i < state->n; i++)
		free(state->in[i].data);
	if (!shared)
		free(state->out);
	free(state->in);
	state->magic = 0;
	free(state);
	return CUDA_SUCCESS;
}

/* The CUDA 5.5 ABI of the three calls cuda.h renames: the same arguments. */
#undef cuLinkCreate
#undef cuLinkAddData
#undef cuLinkAddFile
CUresult cuLinkCreate(unsigned int numOptions, CUjit_option *options, void **optionValues,
		      CUlinkState *stateOut);
CUresult cuLinkAddData(CUlinkState state, CUjitInputType type, void *data, size_t size, const char *name,
		       unsigned int numOptions, CUjit_option *options, void **optionValues);
CUresult cuLinkAddFile(CUlinkState state, CUjitInputType type, const char *path, unsigned int numOptions,
		       CUjit_option *options, void **optionValues);

CUresult cuLinkCreate(unsigned int numOptions, CUjit_option *options, void **optionValues,
		      CUlinkState *stateOut)
{
	return cuLinkCreate_v2(numOptions, options, optionValues, stateOut);
}

CUresult cuLinkAddData(CUlinkState state, CUjitInputType type, void *data, size_t size, const char *name,
		       unsigned int numOptions, CUjit_option *options, void **optionValues)
{
	return cuLinkAddData_v2(state, type, data, size, name, numOptions, options, optionValues);
}

CUresult cuLinkAddFile(CUlinkState state, CUjitInputType type, const char *path, unsigned int numOptions,
		       CUjit_option *options, void **optionValues)
{
	return cuLinkAddFile_v2(state, type, path, numOptions, options, optionValues);
}
