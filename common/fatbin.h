/* SPDX-License-Identifier: Apache-2.0 */
/* fatbin.h - reading the device code nvcc embeds in a program: fatbin
 * containers, the ELF cubins inside them (kernel parameter layout from
 * .nv.info EIATTR_KPARAM_INFO records), and PTX as a fall-back.
 *
 * Used by the frontend (to marshal a kernel's arguments), by the backend (to
 * check a guest's parameter buffer against the module it loaded) and by the
 * simulated driver (to know a module's kernels). Input may be hostile: every
 * offset and length is checked against the buffer, and decompression is
 * bounded.
 */
#ifndef XGPU_FATBIN_H
#define XGPU_FATBIN_H

#include <stddef.h>
#include <stdint.h>

#define XGPU_FATBIN_MAGIC 0xBA55ED50u         /* fatbin container header */
#define XGPU_FATBIN_WRAPPER_MAGIC 0x466243B1u /* __fatBinC_Wrapper_t */

/* Caps applied while parsing untrusted input. */
#define XGPU_FATBIN_MAX_KERNELS 65536u
#define XGPU_FATBIN_MAX_PARAMS 4096u
#define XGPU_FATBIN_MAX_UNCOMPRESSED (512u << 20) /* one entry, inflated */
/* All compressed entries of one container together, inflated: a bound on
 * the time a parse takes, however many entries it packs (each may claim
 * XGPU_FATBIN_MAX_UNCOMPRESSED; entries are inflated one at a time, so memory
 * stays at one entry's). A setting, not a constant: xgpud's
 * --fatbin-inflate-limit passes it to each executor (default: twice
 * XGPU_MAX_MODULE_BYTES, proto.h, so that inflating a module costs about what
 * reading two of the largest would); NCCL's fatbin inflates to more. */
#define XGPU_FATBIN_DEFAULT_MAX_INFLATED (512ull << 20)
/* What a guest's own frontends allow (the cost is the guest's): NCCL's and
 * PyTorch's fatbins pass. */
#define XGPU_FATBIN_GUEST_MAX_INFLATED (16ull << 30)
/* The environment variable that sets the bound in a process (bytes, or a
 * size such as 2G), read when xgpu_fatbin_set_max_inflated was not called:
 * how the executor hands its setting to the simulated driver's copy of this
 * code, and how a guest changes its own. */
#define XGPU_FATBIN_INFLATE_ENV "XGPU_FATBIN_MAX_INFLATED"
/* The bound in force in this process. */
uint64_t xgpu_fatbin_max_inflated(void);
/* Sets it (0: back to the environment's or the default). */
void xgpu_fatbin_set_max_inflated(uint64_t bytes);
/* Kernel names, mangled; longer ones are refused. */
#define XGPU_FATBIN_MAX_NAME (64u << 10)

struct xgpu_kparam {
	uint32_t offset; /* byte offset in the parameter buffer */
	uint32_t size;   /* bytes */
};

struct xgpu_kernel_info {
	char *name; /* mangled entry name, e.g. _Z9vectorAddPKfS0_Pfi */
	uint32_t nparams;
	struct xgpu_kparam *params; /* by ordinal */
	uint32_t param_bytes;       /* size of the whole parameter buffer */
};

struct xgpu_fatbin_info {
	struct xgpu_kernel_info *kernels;
	uint32_t nkernels;
	/* An upper bound of the device memory the module's variables take once
	 * loaded (__device__, __constant__, __managed__, initialised or not),
	 * which the image itself need not carry: the largest figure of any of
	 * its entries, since the driver loads one. For a cubin, the sizes of
	 * .nv.global, .nv.global.*, the module's constant banks (.nv.constant<N>,
	 * not a kernel's parameter bank .nv.constant0.<kernel>) and any other
	 * allocated NOBITS section except shared memory, each at least as large
	 * as the symbols placed in it say, with the .nv.merc copies of sm_100+
	 * cubins counted as an alternative to what they copy; for PTX, the sizes
	 * of its .global and .const variables. Saturates at UINT64_MAX; the
	 * driver's own overhead (allocation granularity, constant banks a JIT
	 * compile adds) is not included. */
	uint64_t global_bytes;
};

/* Total size in bytes of the fatbin container starting at data (its header
 * plus payload), or 0 if data does not start with a fatbin header or the
 * header claims more than max bytes. */
size_t xgpu_fatbin_size(const void *data, size_t max);

/* Parses a fatbin container of len bytes: every kernel found in its ELF
 * entries (any architecture; the first entry describing a kernel wins) and,
 * for kernels no ELF entry describes, in its PTX entries, and the device
 * memory its variables need. Compressed entries are decompressed, at most
 * xgpu_fatbin_max_inflated() bytes in all. Returns 0, or -1 with a reason in
 * err. */
int xgpu_fatbin_parse(const void *data, size_t len, struct xgpu_fatbin_info *out, char *err, size_t errlen);

/* The kernel named name, or NULL. */
const struct xgpu_kernel_info *xgpu_fatbin_find(const struct xgpu_fatbin_info *info, const char *name);

void xgpu_fatbin_free(struct xgpu_fatbin_info *info);

/* Lays a launch's arguments out as kernel k's parameter space (the
 * frontends' cudaLaunchKernel and cuLaunchKernel): args[i] points at
 * parameter i, buf receives k->param_bytes bytes, zero where no parameter
 * lies. Returns 0; XGPU_KPARAMS_TOO_BIG when k->param_bytes exceeds bufsize;
 * XGPU_KPARAMS_DAMAGED when a parameter lies outside k->param_bytes, which
 * only a damaged image (the program's own) can make happen. */
#define XGPU_KPARAMS_TOO_BIG (-1)
#define XGPU_KPARAMS_DAMAGED (-2)
int xgpu_fatbin_pack_params(const struct xgpu_kernel_info *k, void *const *args, uint8_t *buf,
			    size_t bufsize);

#endif
