/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz_drvimage.c - libFuzzer harness for what the driver frontend
 * (libcuda.so.1) does with an image a program hands to cuModuleLoadData or
 * cuLibraryLoadData, and for what the daemon then does with it, as one path:
 *
 *   1. common/cuimage.c takes the image (a fatbin container, nvcc's
 *      __fatBinC_Wrapper_t around one, a bare ELF cubin or PTX text) and
 *      makes the one fatbin container the wire carries;
 *   2. the frontend parses that container (common/fatbin.c) for the kernels'
 *      KPARAM_INFO layouts and lays out each kernel's arguments as
 *      cuLaunchKernel does (xgpu_fatbin_pack_params);
 *   3. the daemon, in this process over the simulated driver (fzchan.c),
 *      gets MODULE_LOAD with the container, MODULE_GET_FUNCTION for each
 *      kernel and a LAUNCH with the laid-out arguments.
 *
 * Input: one byte of form (bit 0: hand the image over inside a
 * __fatBinC_Wrapper_t), then the image. The image lies in a buffer of
 * exactly its size, which is also the most cuimage may read, so ASan sees
 * any read past it. Checked beyond the sanitizers: a refusal always says
 * why; a fatbin is sent as is and never claims more than it was given; the
 * daemon answers every request, and describes each kernel's parameters as
 * the frontend read them (else a launch would marshal the wrong bytes). */
#include "cuimage.h"
#include "fatbin.h"
#include "fzchan.h"
#include "proto.h"
#include "queue.h"
#include "util.h"
#include "dispatch.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Kernels of one image taken through the daemon (each costs a lookup and a
 * launch on the simulated device). */
#define KERNELS_MAX 8u

/* nvcc's __fatBinC_Wrapper_t. */
struct fatbin_wrapper {
	int32_t magic;
	int32_t version;
	const void *data;
	const void *filename;
};

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	fz_daemon_init("fuzz_drvimage");
	return 0;
}

/* One request and its answer, as the frontend's client makes them; the
 * status, with the response's fields in rsp. */
static int call(struct fz_chan *c, uint32_t id, const void *args, size_t args_len, const void *bulk,
		uint32_t bulk_len, void *rsp, size_t rsp_len)
{
	static uint64_t seq;
	struct xgpu_req_hdr h = {
	    .call = id, .len = xgpu_calls[id].req_len, .seq = ++seq, .bulk_len = bulk_len};
	uint8_t slot[XGPU_SLOT_SIZE] = {0};
	memcpy(slot, &h, sizeof h);
	memcpy(slot + sizeof h, args, args_len);
	bool kick;
	if (bulk_len && xgpu_stream_write(&c->fv.tx, bulk, bulk_len, &kick) != (int64_t)bulk_len)
		abort();
	c->ch.pending_since_ns = xgpu_now_ns();
	xgpu_dispatch(&c->ch, slot);
	if (c->ch.dead || xgpu_q_avail(&c->fv.rsp) != 1)
		abort(); /* well-formed requests: an answer, channel open */
	struct xgpu_rsp_hdr r;
	const uint8_t *rs = xgpu_q_unit(&c->fv.rsp, c->fv.rsp.idx);
	memcpy(&r, rs, sizeof r);
	if (r.seq != h.seq || r.call != id || r.len > XGPU_SLOT_SIZE - sizeof r)
		abort();
	memset(rsp, 0, rsp_len);
	memcpy(rsp, rs + sizeof r, r.len < rsp_len ? r.len : rsp_len);
	xgpu_q_release(&c->fv.rsp, 1);
	static uint8_t sink[FZ_DATA_SIZE];
	if (r.bulk_len > sizeof sink ||
	    xgpu_stream_read(&c->fv.rx, sink, r.bulk_len, &kick) != (int64_t)r.bulk_len)
		abort();
	return r.status;
}

/* What the daemon does with the module the frontend would send. */
static void through_daemon(const struct xgpu_cuimage *img, const struct xgpu_fatbin_info *info,
			   uint8_t (*packed)[XGPU_MAX_PARAM_BYTES], const int *pack_rc)
{
	if (img->len > FZ_DATA_SIZE)
		return; /* more than the harness's data area holds at once */
	struct fz_chan c;
	fz_chan_open(&c);
	struct xgpu_req_MODULE_LOAD lr = {0};
	struct xgpu_rsp_MODULE_LOAD lrsp;
	if (call(&c, XGPU_CALL_MODULE_LOAD, &lr, sizeof lr, img->fatbin, (uint32_t)img->len, &lrsp,
		 sizeof lrsp) == 0) {
		for (uint32_t k = 0; k < info->nkernels && k < KERNELS_MAX; k++) {
			const struct xgpu_kernel_info *ki = &info->kernels[k];
			size_t name_len = strlen(ki->name) + 1;
			if (name_len > XGPU_MAX_NAME_BYTES)
				continue;
			struct xgpu_req_MODULE_GET_FUNCTION fr = {.module = lrsp.module};
			struct xgpu_rsp_MODULE_GET_FUNCTION frsp;
			if (call(&c, XGPU_CALL_MODULE_GET_FUNCTION, &fr, sizeof fr, ki->name,
				 (uint32_t)name_len, &frsp, sizeof frsp))
				continue;
			if (frsp.param_bytes != ki->param_bytes || frsp.nparams != ki->nparams)
				abort(); /* the two sides read the layout differently */
			if (pack_rc[k])
				continue;
			struct xgpu_req_LAUNCH lq = {.func = frsp.func,
						     .grid = {1, 1, 1},
						     .block = {1, 1, 1},
						     .stream = XGPU_STREAM_DEFAULT};
			struct xgpu_rsp_LAUNCH lqr;
			(void)call(&c, XGPU_CALL_LAUNCH, &lq, sizeof lq, packed[k], ki->param_bytes, &lqr,
				   sizeof lqr);
		}
		struct xgpu_req_DEVICE_SYNC sr = {0};
		struct xgpu_rsp_DEVICE_SYNC srsp;
		(void)call(&c, XGPU_CALL_DEVICE_SYNC, &sr, sizeof sr, NULL, 0, &srsp, sizeof srsp);
	}
	fz_chan_close(&c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	uint8_t form = data[0];
	size_t n = size - 1;
	/* A private copy of exactly n bytes, so ASan sees any read past it. */
	uint8_t *image = malloc(n ? n : 1);
	if (!image)
		return 0;
	memcpy(image, data + 1, n);
	/* An image that starts as a wrapper does carries a pointer, which
	 * cuimage follows as the driver does; the harness's own wrapper
	 * (form bit 0) is the only one whose pointer is real. */
	if (n >= 4 && !memcmp(image, &(uint32_t){XGPU_FATBIN_WRAPPER_MAGIC}, 4)) {
		free(image);
		return 0;
	}
	struct fatbin_wrapper wrapper = {(int32_t)XGPU_FATBIN_WRAPPER_MAGIC, 1, image, NULL};
	const void *handed = (form & 1) ? (const void *)&wrapper : image;

	struct xgpu_cuimage img;
	char err[256] = "";
	if (xgpu_cuimage_read(handed, n, &img, err, sizeof err) < 0) {
		if (!strnlen(err, sizeof err))
			abort(); /* a refusal always says why */
		free(image);
		return 0;
	}
	/* A fatbin goes out as the program's own bytes, within what it gave;
	 * a cubin or PTX in a container of our own. */
	if (img.owned ? img.fatbin != img.owned : (img.fatbin != image || img.len > n))
		abort();

	struct xgpu_fatbin_info info;
	memset(&info, 0, sizeof info);
	if (xgpu_fatbin_parse(img.fatbin, img.len, &info, err, sizeof err) == 0) {
		/* Every argument's value is read from one pattern buffer of the
		 * largest parameter space, so ASan checks each parameter's size
		 * against it. */
		static uint8_t pattern[XGPU_MAX_PARAM_BYTES];
		static void *args[XGPU_FATBIN_MAX_PARAMS];
		static uint8_t packed[KERNELS_MAX][XGPU_MAX_PARAM_BYTES];
		int pack_rc[KERNELS_MAX] = {0};
		memset(pattern, 0xA5, sizeof pattern);
		for (uint32_t i = 0; i < XGPU_FATBIN_MAX_PARAMS; i++)
			args[i] = pattern;
		for (uint32_t k = 0; k < info.nkernels && k < KERNELS_MAX; k++) {
			const struct xgpu_kernel_info *ki = &info.kernels[k];
			if (!ki->name || ki->nparams > XGPU_FATBIN_MAX_PARAMS)
				abort();
			pack_rc[k] = xgpu_fatbin_pack_params(ki, args, packed[k], sizeof packed[k]);
			if (pack_rc[k] != 0 && pack_rc[k] != XGPU_KPARAMS_TOO_BIG &&
			    pack_rc[k] != XGPU_KPARAMS_DAMAGED)
				abort();
		}
		through_daemon(&img, &info, packed, pack_rc);
		xgpu_fatbin_free(&info);
	} else if (!strnlen(err, sizeof err)) {
		abort();
	}
	free(img.owned);
	free(image);
	return 0;
}
