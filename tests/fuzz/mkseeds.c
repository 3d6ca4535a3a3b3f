/* SPDX-License-Identifier: Apache-2.0 */
/* mkseeds.c - writes the fuzzers' seed inputs that need the real wire and
 * memory layouts: request sequences for fuzz_dispatch (as the frontend sends
 * them for the bundled test kernels), a channel region for fuzz_shm, and a
 * schedule export for fuzz_schedexp. Built against the same headers as the
 * harnesses, so the seeds follow any change of layout.
 *
 *   mkseeds OUTDIR FATBIN [SMALL_FATBIN]   (tests/data/simdrv_kernels.cu built,
 *                                          and built with every entry compressed)
 */
#include "proto.h"
#include "shm.h"
#include "xgpu_sched_export.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* fuzz_dispatch's record: u8 call, u8 mode, u16, u32 bulk, args, bulk. */
#define MARK(n) (0xF0F0F0F0F0F0F000ull | (n)) /* the nth newest value a response returned */

static FILE *out;
static const char *outdir;

static void open_seed(const char *harness, const char *name)
{
	char path[1024];
	snprintf(path, sizeof path, "%s/%s", outdir, harness);
	mkdir(path, 0755);
	snprintf(path, sizeof path, "%s/%s/%s", outdir, harness, name);
	out = fopen(path, "wb");
	if (!out) {
		perror(path);
		exit(1);
	}
}

static void close_seed(void)
{
	if (fclose(out) != 0)
		exit(1);
}

static void rec(uint32_t call, const void *args, size_t args_len, const void *bulk, uint32_t bulk_len)
{
	uint8_t head[8] = {(uint8_t)call, 0, 0, 0};
	memcpy(head + 4, &bulk_len, 4);
	uint8_t a[XGPU_SLOT_ARGS] = {0};
	memcpy(a, args, args_len);
	fwrite(head, 1, sizeof head, out);
	fwrite(a, 1, sizeof a, out);
	if (bulk_len)
		fwrite(bulk, 1, bulk_len, out);
}

#define REQ(NAME, ...)                                                                                       \
	do {                                                                                                 \
		struct xgpu_req_##NAME r_ = {__VA_ARGS__};                                                   \
		rec(XGPU_CALL_##NAME, &r_, sizeof r_, NULL, 0);                                              \
	} while (0)
#define REQ_BULK(NAME, bulk, len, ...)                                                                       \
	do {                                                                                                 \
		struct xgpu_req_##NAME r_ = {__VA_ARGS__};                                                   \
		rec(XGPU_CALL_##NAME, &r_, sizeof r_, bulk, len);                                            \
	} while (0)

static uint8_t *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		perror(path);
		exit(1);
	}
	static uint8_t buf[1 << 20];
	*len = fread(buf, 1, sizeof buf, f);
	fclose(f);
	return buf;
}

static void module_seed(const char *name, const char *fatbin_path);
static void graph_seed(void);
static void graph_cond_seed(void);

static void dispatch_seeds(const char *fatbin_path, const char *small_fatbin_path)
{

	open_seed("fuzz_dispatch", "info");
	REQ(NOP, .flags = 0);
	REQ(DEVICE_INFO, .device = 0);
	REQ(MEM_GET_INFO, .flags = 0);
	REQ(LIMIT_GET, .limit = 0);
	REQ(LIMIT_SET, .limit = 0, .value = 4096);
	REQ(DEVICE_SYNC, .flags = 0);
	REQ_BULK(NOTE_UNSUPPORTED, "cudaGraphLaunch", 16, .flags = 0);
	close_seed();

	/* Memory: alloc, copies both ways and on the device, memset, free. */
	uint8_t data[64];
	for (unsigned i = 0; i < sizeof data; i++)
		data[i] = (uint8_t)i;
	open_seed("fuzz_dispatch", "memory");
	REQ(MEM_ALLOC, .size = 4096);
	REQ_BULK(MEMCPY_HTOD, data, sizeof data, .dst = MARK(0), .size = sizeof data, .stream = 0);
	REQ(MEMCPY_DTOH, .src = MARK(0), .size = sizeof data, .stream = 0);
	REQ(MEMSET, .dst = MARK(0), .value = 7, .size = 128, .stream = 0);
	REQ(MEMCPY_DTOD, .dst = MARK(0), .src = MARK(0), .size = 0, .stream = 0);
	REQ(MEM_FREE, .dptr = MARK(0));
	REQ(MEM_FREE, .dptr = MARK(0)); /* twice: refused */
	close_seed();

	/* Pitched copies and memset: inside the allocation, then rows that
	 * leave it and a pitch whose extent overflows (refused). */
	open_seed("fuzz_dispatch", "pitched");
	REQ(MEM_ALLOC, .size = 4096);
	REQ_BULK(MEMCPY_2D_HTOD, data, sizeof data, .dst = MARK(0), .dst_pitch = 512, .width = 16,
		 .height = 4, .stream = 0);
	REQ(MEMCPY_2D_DTOH, .src = MARK(0), .src_pitch = 512, .width = 16, .height = 4, .stream = 0);
	REQ(MEMCPY_2D_DTOD, .dst = MARK(0), .dst_pitch = 256, .src = MARK(0), .src_pitch = 512, .width = 16,
	    .height = 8, .stream = 0);
	REQ(MEMSET_2D, .dst = MARK(0), .pitch = 1024, .value = 3, .width = 100, .height = 4, .stream = 0);
	REQ(MEMCPY_2D_DTOD, .dst = MARK(0), .dst_pitch = 1024, .src = MARK(0), .src_pitch = 1024, .width = 64,
	    .height = 5, .stream = 0);
	REQ(MEMSET_2D, .dst = MARK(0), .pitch = UINT64_MAX / 2, .value = 1, .width = 8, .height = 3,
	    .stream = 0);
	REQ(MEM_FREE, .dptr = MARK(0));
	close_seed();

	/* CUDA arrays and texture objects: a copy into an array and out, a box
	 * past its end, a texture over it and over pitched memory, a surface,
	 * a forged handle, destroy twice. Each response's nonzero words are
	 * remembered, so a texture object counts two marks (value, handle). */
	open_seed("fuzz_dispatch", "arrays");
	REQ(MEM_ALLOC, .size = 4096);
	REQ(ARRAY_CREATE, .format = 0x20, .channels = 1, .width = 16, .height = 8, .depth = 0, .flags = 2);
	REQ(ARRAY_COPY, .dst = MARK(0), .src = MARK(1), .src_a = 64, .src_b = 8, .width = 64, .height = 8,
	    .depth = 1, .stream = 0, .flags = XGPU_ARRAY_COPY_DST_ARRAY);
	REQ(ARRAY_COPY, .dst = MARK(1), .dst_a = 128, .dst_b = 8, .src = MARK(0), .src_a = 4, .src_b = 2,
	    .width = 32, .height = 4, .depth = 1, .stream = 0, .flags = XGPU_ARRAY_COPY_SRC_ARRAY);
	REQ(ARRAY_COPY, .dst = MARK(0), .dst_b = 7, .src = MARK(1), .src_a = 64, .src_b = 8, .width = 64,
	    .height = 2, .depth = 1, .stream = 0, .flags = XGPU_ARRAY_COPY_DST_ARRAY);
	REQ(TEXOBJ_CREATE, .res = MARK(0), .res_type = 0, .address_modes = 0x010101, .filter = 1, .flags = 2);
	REQ(TEXOBJ_CREATE, .res = MARK(3), .res_type = 3, .format = 0x20, .channels = 1, .width = 16,
	    .height = 8, .pitch = 256);
	REQ(SURFOBJ_CREATE, .array = MARK(4));
	REQ(TEXOBJ_DESTROY, .handle = MARK(2));
	REQ(TEXOBJ_DESTROY, .handle = 0x100000003ull);
	REQ(SURFOBJ_DESTROY, .handle = MARK(0));
	REQ(ARRAY_DESTROY, .array = MARK(6));
	REQ(ARRAY_DESTROY, .array = MARK(6));
	close_seed();

	/* A module, as nvcc packs it and compressed (small inputs fuzz faster). */
	module_seed("module", fatbin_path);
	if (small_fatbin_path)
		module_seed("module-zstd", small_fatbin_path);
	graph_seed();
	graph_cond_seed();

	/* Streams and events. */
	open_seed("fuzz_dispatch", "streams");
	REQ(STREAM_CREATE, .flags = 1, .priority = 0);
	REQ(EVENT_CREATE, .flags = 0);
	REQ(EVENT_CREATE, .flags = 0);
	REQ(EVENT_RECORD, .event = MARK(1), .stream = MARK(2));
	REQ(STREAM_WAIT_EVENT, .stream = MARK(2), .event = MARK(1), .flags = 0);
	REQ(EVENT_RECORD, .event = MARK(0), .stream = MARK(2));
	REQ(STREAM_QUERY, .stream = MARK(2));
	REQ(STREAM_SYNC, .stream = MARK(2));
	REQ(EVENT_SYNC, .event = MARK(0));
	REQ(EVENT_QUERY, .event = MARK(0));
	REQ(EVENT_ELAPSED, .start = MARK(1), .end = MARK(0));
	REQ(EVENT_DESTROY, .event = MARK(0));
	REQ(STREAM_DESTROY, .stream = MARK(2));
	REQ(EVENT_DESTROY, .event = MARK(1));
	REQ(STREAM_SYNC, .stream = MARK(2)); /* destroyed: refused */
	close_seed();

	/* Stream priorities: a clamped one, the default stream's, a forged
	 * handle. */
	open_seed("fuzz_dispatch", "stream-priority");
	REQ(STREAM_CREATE, .flags = 0, .priority = -100);
	REQ(STREAM_PRIORITY, .stream = MARK(0));
	REQ(STREAM_PRIORITY, .stream = 0);
	REQ(STREAM_PRIORITY, .stream = 0x100000005ull);
	close_seed();

	/* Managed memory: an allocation used like any other, then forged ones
	 * (bad flags, sizes past the address space), a forged free, a free twice. */
	open_seed("fuzz_dispatch", "managed");
	REQ(MEM_ALLOC_MANAGED, .size = 5000, .flags = 1);
	REQ_BULK(MEMCPY_HTOD, data, sizeof data, .dst = MARK(0), .size = sizeof data, .stream = 0);
	REQ(MEMSET, .dst = MARK(0), .value = 0, .size = 8192, .stream = 0);
	REQ(MEM_ALLOC_MANAGED, .size = 4096, .flags = 3);
	REQ(MEM_ALLOC_MANAGED, .size = UINT64_MAX - 4095, .flags = 1);
	REQ(MEM_ALLOC_MANAGED, .size = 1ull << 46, .flags = 2);
	REQ(MEM_FREE, .dptr = 0x300000001000ull); /* inside the simulated managed range */
	REQ(MEM_FREE, .dptr = MARK(0));
	REQ(MEM_FREE, .dptr = MARK(0));
	close_seed();

	/* A host segment: register, copy through it both ways, unregister. */
	open_seed("fuzz_dispatch", "segment");
	REQ(MEM_ALLOC, .size = 8192);
	REQ(SEG_REGISTER, .token = 2, .size = 4096, .flags = 0);
	REQ(MEMCPY_HTOD_SEG, .dst = MARK(1), .seg = MARK(0), .offset = 0, .size = 4096, .stream = 0);
	REQ(MEMCPY_DTOH_SEG, .seg = MARK(0), .offset = 1024, .src = MARK(1), .size = 2048, .stream = 0);
	REQ(SEG_UNREGISTER, .seg = MARK(0));
	REQ(MEM_FREE, .dptr = MARK(1));
	close_seed();
}

/* A graph as the frontend sends it: a memset, a copy back, an event record
 * and an empty node in a chain; launched, then a cyclic graph (refused). */
static void graph_seed(void)
{
	open_seed("fuzz_dispatch", "graph");
	REQ(MEM_ALLOC, .size = 4096);
	REQ(EVENT_CREATE, .flags = 0);
	struct {
		struct xgpu_graph_desc d;
		struct xgpu_graph_node n[4];
		struct xgpu_graph_edge e[3];
	} g = {
	    .d = {.nnodes = 4, .nedges = 3},
	    .n = {{.type = XGPU_GN_MEMSET, .dst = MARK(1), .value = 9, .size = 64},
		  {.type = XGPU_GN_DTOH, .src = MARK(1), .size = 64},
		  {.type = XGPU_GN_EVENT_RECORD, .handle = MARK(0)},
		  {.type = XGPU_GN_EMPTY}},
	    .e = {{0, 1}, {1, 2}, {2, 3}},
	};
	REQ_BULK(GRAPH_INSTANTIATE, &g, sizeof g, .flags = 0);
	/* The newest values: its device-to-host bytes, then the exec. */
	REQ(GRAPH_LAUNCH, .exec = MARK(1), .stream = 0, .flags = 0);
	REQ(GRAPH_LAUNCH, .exec = MARK(1), .stream = 0, .flags = 0);
	g.e[2] = (struct xgpu_graph_edge){3, 0};
	g.e[1] = (struct xgpu_graph_edge){2, 3};
	g.e[0] = (struct xgpu_graph_edge){0, 2};
	REQ_BULK(GRAPH_INSTANTIATE, &g, sizeof g, .flags = 0);
	REQ(GRAPH_EXEC_DESTROY, .exec = MARK(1));
	REQ(GRAPH_LAUNCH, .exec = MARK(1), .stream = 0, .flags = 0); /* destroyed: refused */
	close_seed();
}

/* Conditional nodes as the frontend sends them: a while node whose body
 * holds an if node on a handle of the body, after a memset; launched. */
static void graph_cond_seed(void)
{
	open_seed("fuzz_dispatch", "graph-cond");
	REQ(MEM_ALLOC, .size = 4096);
	struct {
		struct xgpu_graph_desc d;
		struct xgpu_graph_node n[4];
		struct xgpu_graph_edge e[1];
		struct xgpu_graph_cond c[2];
	} g = {
	    .d = {.nnodes = 4, .nedges = 1, .nconds = 2, .nbodies = 2},
	    .n = {{.type = XGPU_GN_MEMSET, .dst = MARK(0), .value = 9, .size = 64},
		  {.type = XGPU_GN_COND, .value = 1 /* while */, .handle = 0, .src = 1, .size = 1},
		  {.type = XGPU_GN_COND, .value = 0 /* if */, .handle = 1, .src = 2, .size = 1, .graph = 1},
		  {.type = XGPU_GN_EMPTY, .graph = 2}},
	    .e = {{0, 1}},
	    .c = {{.guest = 0x78636e6400000001ull, .graph = 0},
		  {.guest = 0x78636e6400000002ull, .default_value = 1, .flags = 1, .graph = 1}},
	};
	REQ_BULK(GRAPH_INSTANTIATE, &g, sizeof g, .flags = 0);
	REQ(GRAPH_LAUNCH, .exec = MARK(1), .stream = 0, .flags = 0);
	close_seed();
}

/* A module: load, look up a kernel and a variable, launch, unload. */
static void module_seed(const char *name, const char *fatbin_path)
{
	size_t fatbin_len;
	const uint8_t *fatbin = slurp(fatbin_path, &fatbin_len);
	open_seed("fuzz_dispatch", name);
	REQ_BULK(MODULE_LOAD, fatbin, (uint32_t)fatbin_len, .flags = 0);
	REQ_BULK(MODULE_GET_FUNCTION, "saxpy", 6, .module = MARK(0));
	REQ(FUNC_GET_ATTRIBUTE, .func = MARK(1), .attr = 0);
	REQ(OCCUPANCY, .func = MARK(1), .block_size = 128, .dynamic_smem = 0);
	REQ(MEM_ALLOC, .size = 4096);
	/* The newest values now: the allocation, then GET_FUNCTION's
	 * parameter size and count, its function, the module. */
	struct {
		int32_t n;
		float a;
		uint64_t x, y;
	} params = {16, 2.0f, MARK(0), MARK(0)};
	REQ_BULK(LAUNCH, &params, sizeof params, .func = MARK(2), .grid = {1, 1, 1}, .block = {16, 1, 1},
		 .shared_bytes = 0, .stream = 0);
	/* Launches with attributes (their responses add no values): a
	 * cooperative one that fits, one far too large, an unknown flag. */
	REQ_BULK(LAUNCH_EX, &params, sizeof params, .func = MARK(2), .grid = {1, 1, 1}, .block = {16, 1, 1},
		 .shared_bytes = 0, .stream = 0, .flags = XGPU_LAUNCH_COOPERATIVE);
	REQ_BULK(LAUNCH_EX, &params, sizeof params, .func = MARK(2), .grid = {1u << 30, 65535, 1},
		 .block = {1024, 1, 1}, .shared_bytes = 0, .stream = 0, .flags = XGPU_LAUNCH_COOPERATIVE);
	REQ_BULK(LAUNCH_EX, &params, sizeof params, .func = MARK(2), .grid = {1, 1, 1}, .block = {16, 1, 1},
		 .shared_bytes = 0, .stream = 0, .flags = 0x80);
	/* Thread block clusters: one that divides the grid (with a policy),
	 * one that does not, one too large, one with a zero side, an unknown
	 * policy, and a cooperative launch of clusters. */
	REQ_BULK(LAUNCH_EX, &params, sizeof params, .func = MARK(2), .grid = {4, 2, 1}, .block = {16, 1, 1},
		 .shared_bytes = 0, .stream = 0, .flags = 0, .cluster = {2, 2, 1}, .cluster_policy = 1);
	REQ_BULK(LAUNCH_EX, &params, sizeof params, .func = MARK(2), .grid = {4, 1, 1}, .block = {16, 1, 1},
		 .shared_bytes = 0, .stream = 0, .flags = 0, .cluster = {3, 1, 1});
	REQ_BULK(LAUNCH_EX, &params, sizeof params, .func = MARK(2), .grid = {64, 1, 1}, .block = {16, 1, 1},
		 .shared_bytes = 0, .stream = 0, .flags = 0, .cluster = {0xffffffffu, 0xffffffffu, 16});
	REQ_BULK(LAUNCH_EX, &params, sizeof params, .func = MARK(2), .grid = {4, 1, 1}, .block = {16, 1, 1},
		 .shared_bytes = 0, .stream = 0, .flags = 0, .cluster = {2, 0, 1});
	REQ_BULK(LAUNCH_EX, &params, sizeof params, .func = MARK(2), .grid = {4, 1, 1}, .block = {16, 1, 1},
		 .shared_bytes = 0, .stream = 0, .flags = 0, .cluster_policy = 9);
	REQ_BULK(LAUNCH_EX, &params, sizeof params, .func = MARK(2), .grid = {8, 1, 1}, .block = {16, 1, 1},
		 .shared_bytes = 0, .stream = 0, .flags = XGPU_LAUNCH_COOPERATIVE, .cluster = {8, 1, 1});
	REQ_BULK(MODULE_GET_GLOBAL, "dev_table", 10, .module = MARK(3));
	/* GET_GLOBAL added its size and pointer. */
	REQ(FUNC_SET_ATTRIBUTE, .func = MARK(4), .attr = 8, .value = 1024);
	REQ(MODULE_UNLOAD, .module = MARK(5));
	close_seed();
}

static void shm_seeds(void)
{
	struct xgpu_shm_params p = {.nr_slots = 16, .data_size = XGPU_SHM_MIN_DATA};
	size_t size = xgpu_shm_region_size(&p);
	uint8_t *region = aligned_alloc(4096, size);
	if (!region || xgpu_shm_init(region, size, &p) < 0)
		exit(1);
	open_seed("fuzz_shm", "fresh");
	fwrite(region, 1, XGPU_SHM_HEADER_SIZE, out);
	/* Each step once, then a guest moving indexes between them. */
	static const uint8_t script[] = {0, 1,    2,    3,    4,    5,    6,    7,    0x80, 1,    0, 0,
					 0, 0,    0x82, 0,    1,    0,    0,    1,    6,    0x83, 0, 0,
					 0, 0x80, 2,    0x81, 0xff, 0xff, 0xff, 0xff, 3,    3};
	fwrite(script, 1, sizeof script, out);
	close_seed();
	free(region);
}

static void schedexp_seeds(void)
{
	static uint64_t page[512];
	struct xgpu_schedexp_header *h = (void *)page;
	*h = (struct xgpu_schedexp_header){.magic = XGPU_SCHEDEXP_MAGIC,
					   .version = XGPU_SCHEDEXP_VERSION,
					   .nr_frames = 1,
					   .npcpus = 2,
					   .ndoms = 4,
					   .pcpu_off = 128,
					   .dom_off = 512,
					   .tick_us = 10000,
					   .tslice_us = 30000,
					   .boot_ns = 1000};
	struct xgpu_schedexp_pcpu *pc = (void *)((uint8_t *)page + h->pcpu_off);
	for (unsigned i = 0; i < 2; i++) {
		pc[i].seq = 2;
		pc[i].pcpu = i;
		pc[i].cur = (struct xgpu_schedexp_unit){.domid = (uint16_t)(i + 1), .vcpu = 0, .credit = 100};
		pc[i].slice_start_ns = 5000;
		pc[i].slice_len_ns = 30000000;
		pc[i].nrunq = 1;
		pc[i].runq[0] = (struct xgpu_schedexp_unit){.domid = 0, .vcpu = i, .credit = -5, .pri = -2};
	}
	struct xgpu_schedexp_dom *dm = (void *)((uint8_t *)page + h->dom_off);
	for (unsigned i = 0; i < 4; i++)
		dm[i] = (struct xgpu_schedexp_dom){
		    .seq = 4, .domid = i < 3 ? (uint16_t)i : 0xffff, .nr_vcpus = 2, .weight = 256, .cap = 0};
	open_seed("fuzz_schedexp", "two-pcpus");
	fwrite(page, 1, sizeof page, out);
	close_seed();
}

int main(int argc, char **argv)
{
	if (argc != 3 && argc != 4) {
		fprintf(stderr, "usage: mkseeds OUTDIR FATBIN [SMALL_FATBIN]\n");
		return 2;
	}
	outdir = argv[1];
	dispatch_seeds(argv[2], argc > 3 ? argv[3] : NULL);
	shm_seeds();
	schedexp_seeds();
	return 0;
}
