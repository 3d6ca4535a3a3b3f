/* SPDX-License-Identifier: Apache-2.0 */
/* test_simkernels.c - tests of the host implementations the bundled workloads
 * and tests/cuda/userapp ship for the simulated driver: each plugin is
 * dlopen'ed from $XGPU_BUILD, each kernel is run on host buffers behind a fake
 * device address space, and its results, grid semantics, address checks and
 * cost model are checked against straightforward CPU code.
 *
 * Parameter layouts are hard-coded as nvcc lays them out (8-byte pointers,
 * natural alignment). They were checked by decoding the EIATTR_KPARAM_INFO
 * records in the .nv.info.<kernel> sections of the cubins nvcc 13.0 builds for
 * sm_90 (the records `cuobjdump -elf build/bin/<name> | grep -A3 KPARAM`
 * prints; cuobjdump itself is not installed here).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "simdrv/simkernel.h"

#define ERR_MISALIGNED_ADDRESS 716 /* CUDA_ERROR_MISALIGNED_ADDRESS */

/* ---- plugins ------------------------------------------------------------ */

struct plugin {
	const char *name;
	const char *path; /* relative to $XGPU_BUILD */
	void *dl;
	const struct xgpu_simk_table *table;
};

static struct plugin plugins[] = {
    {"vectorAdd", "lib/simkernels/vectorAdd.so", NULL, NULL},
    {"BlackScholes", "lib/simkernels/BlackScholes.so", NULL, NULL},
    {"callLatency", "lib/simkernels/callLatency.so", NULL, NULL},
    {"userapp", "tests/simkernels/userapp.so", NULL, NULL},
};
#define NPLUGINS (sizeof(plugins) / sizeof(plugins[0]))

static int load_plugins(void **state)
{
	const char *build = getenv("XGPU_BUILD");
	if (!build || !*build)
		build = "build";
	for (size_t i = 0; i < NPLUGINS; i++) {
		char path[4096];
		snprintf(path, sizeof(path), "%s/%s", build, plugins[i].path);
		plugins[i].dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
		if (!plugins[i].dl) {
			fprintf(stderr, "cannot load %s: %s\n", path, dlerror());
			return -1;
		}
		plugins[i].table = dlsym(plugins[i].dl, "xgpu_simk_table");
		if (!plugins[i].table) {
			fprintf(stderr, "%s exports no xgpu_simk_table\n", path);
			return -1;
		}
	}
	return 0;
}

static int unload_plugins(void **state)
{
	for (size_t i = 0; i < NPLUGINS; i++) {
		if (plugins[i].dl)
			dlclose(plugins[i].dl);
		plugins[i].dl = NULL;
		plugins[i].table = NULL;
	}
	return 0;
}

static const struct xgpu_simk_kernel *kernel(const char *plugin, const char *name)
{
	for (size_t i = 0; i < NPLUGINS; i++) {
		if (strcmp(plugins[i].name, plugin))
			continue;
		const struct xgpu_simk_table *t = plugins[i].table;
		for (uint32_t k = 0; k < t->count; k++)
			if (!strcmp(t->kernels[k].name, name))
				return &t->kernels[k];
	}
	fail_msg("plugin %s has no kernel %s", plugin, name);
	return NULL;
}

/* ---- fake device memory --------------------------------------------------- */

#define MAX_REGIONS 8
#define DEV_BASE 0x7f1200000000ull

struct fake_mem {
	struct {
		uint64_t base, size;
		void *host;
	} r[MAX_REGIONS];
	unsigned n;
	uint64_t next;
};

/* A device allocation of bytes (zeroed), 256-byte aligned as cuMemAlloc's,
 * with unmapped gaps between allocations. */
static uint64_t dev_alloc(struct fake_mem *m, size_t bytes)
{
	assert_true(m->n < MAX_REGIONS);
	if (!m->next)
		m->next = DEV_BASE;
	size_t rounded = (bytes + 255) & ~(size_t)255;
	void *host = aligned_alloc(256, rounded ? rounded : 256);
	assert_non_null(host);
	memset(host, 0, rounded ? rounded : 256);
	uint64_t base = m->next;
	m->r[m->n].base = base;
	m->r[m->n].size = bytes;
	m->r[m->n].host = host;
	m->n++;
	m->next += rounded + (1u << 20);
	return base;
}

static void *dev_host(struct fake_mem *m, uint64_t addr)
{
	for (unsigned i = 0; i < m->n; i++)
		if (addr >= m->r[i].base && addr - m->r[i].base <= m->r[i].size)
			return (uint8_t *)m->r[i].host + (addr - m->r[i].base);
	fail_msg("no allocation at %#llx", (unsigned long long)addr);
	return NULL;
}

static void dev_free_all(struct fake_mem *m)
{
	for (unsigned i = 0; i < m->n; i++)
		free(m->r[i].host);
	memset(m, 0, sizeof(*m));
}

/* The map() the driver gives kernels: the whole range inside one allocation. */
static void *fake_map(const struct xgpu_simk_launch *l, uint64_t addr, uint64_t bytes)
{
	struct fake_mem *m = l->priv;
	for (unsigned i = 0; i < m->n; i++) {
		uint64_t base = m->r[i].base, size = m->r[i].size;
		if (addr >= base && bytes <= size && addr - base <= size - bytes)
			return (uint8_t *)m->r[i].host + (addr - base);
	}
	return NULL;
}

/* ---- launches ------------------------------------------------------------ */

struct launch {
	struct xgpu_simk_launch l;
	uint8_t params[128];
	struct xgpu_simk_param layout[16];
};

static void launch_init(struct launch *ln, struct fake_mem *m, const struct xgpu_simk_param *layout,
			uint32_t nparams, uint32_t param_bytes, uint32_t grid, uint32_t block)
{
	memset(ln, 0, sizeof(*ln));
	assert_true(nparams <= 16 && param_bytes <= sizeof(ln->params));
	if (nparams)
		memcpy(ln->layout, layout, nparams * sizeof(*layout));
	ln->l.grid[0] = grid;
	ln->l.grid[1] = ln->l.grid[2] = 1;
	ln->l.block[0] = block;
	ln->l.block[1] = ln->l.block[2] = 1;
	ln->l.params = ln->params;
	ln->l.param_bytes = param_bytes;
	ln->l.layout = ln->layout;
	ln->l.nparams = nparams;
	ln->l.map = fake_map;
	ln->l.priv = m;
}

static void launch_set(struct launch *ln, uint32_t i, const void *value, uint32_t size)
{
	assert_true(i < ln->l.nparams);
	assert_int_equal(ln->layout[i].size, size);
	memcpy(ln->params + ln->layout[i].offset, value, size);
}

static void set_ptr(struct launch *ln, uint32_t i, uint64_t addr)
{
	launch_set(ln, i, &addr, 8);
}

static void set_i32(struct launch *ln, uint32_t i, int32_t v)
{
	launch_set(ln, i, &v, 4);
}

static void set_f32(struct launch *ln, uint32_t i, float v)
{
	launch_set(ln, i, &v, 4);
}

static uint32_t blocks_for(uint64_t n, uint32_t threads)
{
	return (uint32_t)((n + threads - 1) / threads);
}

/* Deterministic inputs in [lo, hi). */
static float frand(uint64_t *s, float lo, float hi)
{
	*s = *s * 6364136223846793005ull + 1442695040888963407ull;
	float t = (float)(*s >> 40) / (float)(1u << 24);
	return lo + t * (hi - lo);
}

/* ---- parameter layouts (see the header comment) ------------------------- */

/* _Z9vectorAddPKfS0_Pfi(const float *A, const float *B, float *C, int n) */
static const struct xgpu_simk_param VA_LAYOUT[] = {{0, 8}, {8, 8}, {16, 8}, {24, 4}};
#define VA_BYTES 28
/* _Z15BlackScholesGPUPfS_PKfS1_S1_ffi(call, put, S, X, T, float R, float V, int optN) */
static const struct xgpu_simk_param BS_LAYOUT[] = {{0, 8},  {8, 8},  {16, 8}, {24, 8},
						   {32, 8}, {40, 4}, {44, 4}, {48, 4}};
#define BS_BYTES 52
/* _Z4bumpPj(unsigned *counter) */
static const struct xgpu_simk_param BUMP_LAYOUT[] = {{0, 8}};
#define BUMP_BYTES 8
/* _Z11scaleOffsetiPKfPfff(int n, const float *in, float *out, float scale, float offset) */
static const struct xgpu_simk_param SO_LAYOUT[] = {{0, 4}, {8, 8}, {16, 8}, {24, 4}, {28, 4}};
#define SO_BYTES 32
/* _Z8stencil3PKfPf13StencilParams(const float *in, float *out, StencilParams p),
 * StencilParams { int n @0; double bias @8; float w[3] @16; } (32 bytes) */
static const struct xgpu_simk_param ST_LAYOUT[] = {{0, 8}, {8, 8}, {16, 32}};
#define ST_BYTES 48
/* _Z8blockSumPKfPfi(const float *in, float *partial, int n) */
static const struct xgpu_simk_param BSUM_LAYOUT[] = {{0, 8}, {8, 8}, {16, 4}};
#define BSUM_BYTES 20

static const float SENTINEL = -12345.0f;

static void fill(float *p, size_t n, float v)
{
	for (size_t i = 0; i < n; i++)
		p[i] = v;
}

/* ---- tables --------------------------------------------------------------- */

static void test_tables(void **state)
{
	static const char *const expected[][3] = {
	    {"vectorAdd", "_Z9vectorAddPKfS0_Pfi", NULL},
	    {"BlackScholes", "_Z15BlackScholesGPUPfS_PKfS1_S1_ffi", NULL},
	    {"callLatency", "_Z11emptyKernelv", "_Z4bumpPj"},
	    {"userapp", "_Z11scaleOffsetiPKfPfff", "_Z8stencil3PKfPf13StencilParams"},
	    {"userapp", "_Z8blockSumPKfPfi", NULL},
	};
	for (size_t i = 0; i < NPLUGINS; i++) {
		const struct xgpu_simk_table *t = plugins[i].table;
		assert_int_equal(t->abi_version, XGPU_SIMK_ABI_VERSION);
		assert_true(t->count > 0);
		for (uint32_t k = 0; k < t->count; k++) {
			assert_non_null(t->kernels[k].name);
			assert_non_null(t->kernels[k].run);
			assert_non_null(t->kernels[k].cost_ns);
			for (uint32_t j = 0; j < k; j++)
				assert_string_not_equal(t->kernels[j].name, t->kernels[k].name);
		}
	}
	for (size_t i = 0; i < sizeof(expected) / sizeof(expected[0]); i++)
		for (int k = 1; k < 3 && expected[i][k]; k++)
			assert_non_null(kernel(expected[i][0], expected[i][k]));
}

/* ---- vectorAdd ------------------------------------------------------------ */

struct va_fixture {
	struct fake_mem m;
	uint64_t a, b, c;
	float *A, *B, *C;
};

static void va_setup(struct va_fixture *f, size_t n)
{
	memset(f, 0, sizeof(*f));
	f->a = dev_alloc(&f->m, n * 4);
	f->b = dev_alloc(&f->m, n * 4);
	f->c = dev_alloc(&f->m, n * 4);
	f->A = dev_host(&f->m, f->a);
	f->B = dev_host(&f->m, f->b);
	f->C = dev_host(&f->m, f->c);
	uint64_t s = 42;
	for (size_t i = 0; i < n; i++) {
		f->A[i] = frand(&s, 0, 1);
		f->B[i] = frand(&s, -1, 1);
	}
	fill(f->C, n, SENTINEL);
}

static void va_launch(struct launch *ln, struct va_fixture *f, uint64_t a, uint64_t b, uint64_t c, int32_t n,
		      uint32_t grid, uint32_t block)
{
	launch_init(ln, &f->m, VA_LAYOUT, 4, VA_BYTES, grid, block);
	set_ptr(ln, 0, a);
	set_ptr(ln, 1, b);
	set_ptr(ln, 2, c);
	set_i32(ln, 3, n);
}

static void test_vectoradd_computes(void **state)
{
	const struct xgpu_simk_kernel *k = kernel("vectorAdd", "_Z9vectorAddPKfS0_Pfi");
	const int n = 50000;
	struct va_fixture f;
	va_setup(&f, n);
	struct launch ln;
	va_launch(&ln, &f, f.a, f.b, f.c, n, blocks_for(n, 256), 256);
	assert_int_equal(k->run(&ln.l), XGPU_SIMK_OK);
	for (int i = 0; i < n; i++)
		assert_true(f.C[i] == f.A[i] + f.B[i]);
	dev_free_all(&f.m);
}

static void test_vectoradd_grid_semantics(void **state)
{
	const struct xgpu_simk_kernel *k = kernel("vectorAdd", "_Z9vectorAddPKfS0_Pfi");
	const int n = 1000;
	struct va_fixture f;
	va_setup(&f, n);
	struct launch ln;
	/* 2 blocks of 256: elements 0..511 only */
	va_launch(&ln, &f, f.a, f.b, f.c, n, 2, 256);
	assert_int_equal(k->run(&ln.l), XGPU_SIMK_OK);
	for (int i = 0; i < n; i++) {
		if (i < 512)
			assert_true(f.C[i] == f.A[i] + f.B[i]);
		else
			assert_true(f.C[i] == SENTINEL);
	}
	/* n smaller than the grid: nothing past n, even though the buffers are larger */
	fill(f.C, n, SENTINEL);
	va_launch(&ln, &f, f.a, f.b, f.c, 100, 4, 256);
	assert_int_equal(k->run(&ln.l), XGPU_SIMK_OK);
	for (int i = 0; i < n; i++)
		assert_true(i < 100 ? f.C[i] == f.A[i] + f.B[i] : f.C[i] == SENTINEL);
	/* n <= 0 or an empty grid touches nothing, not even bad addresses */
	va_launch(&ln, &f, 0, 0, 0, 0, 4, 256);
	assert_int_equal(k->run(&ln.l), XGPU_SIMK_OK);
	va_launch(&ln, &f, 0, 0, 0, -5, 4, 256);
	assert_int_equal(k->run(&ln.l), XGPU_SIMK_OK);
	va_launch(&ln, &f, 0, 0, 0, n, 0, 256);
	assert_int_equal(k->run(&ln.l), XGPU_SIMK_OK);
	dev_free_all(&f.m);
}

static void test_vectoradd_bad_address(void **state)
{
	const struct xgpu_simk_kernel *k = kernel("vectorAdd", "_Z9vectorAddPKfS0_Pfi");
	const int n = 1000;
	struct va_fixture f;
	va_setup(&f, n);
	uint64_t small = dev_alloc(&f.m, 400); /* 100 floats */
	struct launch ln;
	/* unmapped, past the end, overrunning, and a range spanning two allocations */
	va_launch(&ln, &f, 0x1000, f.b, f.c, n, blocks_for(n, 256), 256);
	assert_int_equal(k->run(&ln.l), XGPU_SIMK_ERR_ILLEGAL_ADDRESS);
	va_launch(&ln, &f, f.a, f.b + n * 4, f.c, n, blocks_for(n, 256), 256);
	assert_int_equal(k->run(&ln.l), XGPU_SIMK_ERR_ILLEGAL_ADDRESS);
	va_launch(&ln, &f, f.a, f.b, small, n, blocks_for(n, 256), 256);
	assert_int_equal(k->run(&ln.l), XGPU_SIMK_ERR_ILLEGAL_ADDRESS);
	va_launch(&ln, &f, f.a + 4, f.b, f.c, n, blocks_for(n, 256), 256);
	assert_int_equal(k->run(&ln.l), XGPU_SIMK_ERR_ILLEGAL_ADDRESS);
	for (int i = 0; i < n; i++)
		assert_true(f.C[i] == SENTINEL);
	/* ... but the same overrun is fine when the grid covers only what exists */
	va_launch(&ln, &f, f.a, f.b, small, n, 1, 100);
	assert_int_equal(k->run(&ln.l), XGPU_SIMK_OK);
	float *S = dev_host(&f.m, small);
	for (int i = 0; i < 100; i++)
		assert_true(S[i] == f.A[i] + f.B[i]);
	/* misaligned float pointer */
	va_launch(&ln, &f, f.a + 2, f.b, f.c, 10, 1, 10);
	assert_int_equal(k->run(&ln.l), ERR_MISALIGNED_ADDRESS);
	dev_free_all(&f.m);
}

static void test_vectoradd_bad_params(void **state)
{
	const struct xgpu_simk_kernel *k = kernel("vectorAdd", "_Z9vectorAddPKfS0_Pfi");
	struct fake_mem m = {0};
	struct launch ln;
	/* a layout that disagrees with the kernel's signature */
	static const struct xgpu_simk_param wrong[] = {{0, 8}, {8, 8}, {16, 8}, {24, 8}};
	launch_init(&ln, &m, wrong, 4, 32, 1, 32);
	assert_int_equal(k->run(&ln.l), XGPU_SIMK_ERR_INVALID_VALUE);
	launch_init(&ln, &m, VA_LAYOUT, 3, 24, 1, 32);
	assert_int_equal(k->run(&ln.l), XGPU_SIMK_ERR_INVALID_VALUE);
	/* parameter buffer shorter than the layout says */
	launch_init(&ln, &m, VA_LAYOUT, 4, 26, 1, 32);
	assert_int_equal(k->run(&ln.l), XGPU_SIMK_ERR_INVALID_VALUE);
	/* the cost model still answers */
	assert_true(k->cost_ns(&ln.l) > 0);
}

/* ---- cost models ------------------------------------------------------- */

typedef void (*set_size_fn)(struct launch *ln, struct fake_mem *m, uint64_t n);

static void va_size(struct launch *ln, struct fake_mem *m, uint64_t n)
{
	launch_init(ln, m, VA_LAYOUT, 4, VA_BYTES, blocks_for(n, 256), 256);
	set_ptr(ln, 0, DEV_BASE);
	set_ptr(ln, 1, DEV_BASE);
	set_ptr(ln, 2, DEV_BASE);
	set_i32(ln, 3, (int32_t)n);
}

static void bs_size(struct launch *ln, struct fake_mem *m, uint64_t n)
{
	launch_init(ln, m, BS_LAYOUT, 8, BS_BYTES, blocks_for(n, 128), 128);
	for (uint32_t i = 0; i < 5; i++)
		set_ptr(ln, i, DEV_BASE);
	set_f32(ln, 5, 0.02f);
	set_f32(ln, 6, 0.3f);
	set_i32(ln, 7, (int32_t)n);
}

static void empty_size(struct launch *ln, struct fake_mem *m, uint64_t n)
{
	launch_init(ln, m, NULL, 0, 0, blocks_for(n, 256), 256);
}

static void bump_size(struct launch *ln, struct fake_mem *m, uint64_t n)
{
	launch_init(ln, m, BUMP_LAYOUT, 1, BUMP_BYTES, blocks_for(n, 256), 256);
	set_ptr(ln, 0, DEV_BASE);
}

static void so_size(struct launch *ln, struct fake_mem *m, uint64_t n)
{
	launch_init(ln, m, SO_LAYOUT, 5, SO_BYTES, blocks_for(n, 256), 256);
	set_i32(ln, 0, (int32_t)n);
	set_ptr(ln, 1, DEV_BASE);
	set_ptr(ln, 2, DEV_BASE);
	set_f32(ln, 3, 2.0f);
	set_f32(ln, 4, 1.0f);
}

static void st_params(uint8_t raw[32], int32_t n, double bias, const float w[3])
{
	memset(raw, 0, 32);
	memcpy(raw + 0, &n, 4);
	memcpy(raw + 8, &bias, 8);
	memcpy(raw + 16, w, 12);
}

static void st_size(struct launch *ln, struct fake_mem *m, uint64_t n)
{
	static const float w[3] = {1, 2, 3};
	uint8_t raw[32];
	st_params(raw, (int32_t)n, 0.5, w);
	launch_init(ln, m, ST_LAYOUT, 3, ST_BYTES, blocks_for(n, 256), 256);
	set_ptr(ln, 0, DEV_BASE);
	set_ptr(ln, 1, DEV_BASE);
	launch_set(ln, 2, raw, 32);
}

static void bsum_size(struct launch *ln, struct fake_mem *m, uint64_t n)
{
	launch_init(ln, m, BSUM_LAYOUT, 3, BSUM_BYTES, blocks_for(n, 256), 256);
	ln->l.shared_bytes = 256 * 4;
	set_ptr(ln, 0, DEV_BASE);
	set_ptr(ln, 1, DEV_BASE);
	set_i32(ln, 2, (int32_t)n);
}

static void check_cost(const char *plugin, const char *name, set_size_fn size)
{
	const struct xgpu_simk_kernel *k = kernel(plugin, name);
	static const uint64_t sizes[] = {1, 10, 1000, 100000, 1u << 20, 10000000, 100000000, 1u << 30};
	struct fake_mem m = {0};
	struct launch ln;
	uint64_t prev = 0, first = 0;
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		size(&ln, &m, sizes[i]);
		uint64_t c = k->cost_ns(&ln.l);
		assert_true(c > 0);
		if (i == 0)
			first = c;
		if (c < prev)
			fail_msg("%s: cost of %llu (%llu ns) below cost of a smaller launch (%llu ns)", name,
				 (unsigned long long)sizes[i], (unsigned long long)c,
				 (unsigned long long)prev);
		prev = c;
		/* the model is deterministic */
		assert_true(k->cost_ns(&ln.l) == c);
	}
	/* a billion elements costs far more than one */
	if (prev <= 10 * first)
		fail_msg("%s: cost of 2^30 elements %llu ns, of one %llu ns", name, (unsigned long long)prev,
			 (unsigned long long)first);
	/* a launch never costs less than a few microseconds on an H100 */
	assert_true(first >= 1000 && first <= 20000);
}

static void test_costs(void **state)
{
	check_cost("vectorAdd", "_Z9vectorAddPKfS0_Pfi", va_size);
	check_cost("BlackScholes", "_Z15BlackScholesGPUPfS_PKfS1_S1_ffi", bs_size);
	check_cost("callLatency", "_Z11emptyKernelv", empty_size);
	check_cost("callLatency", "_Z4bumpPj", bump_size);
	check_cost("userapp", "_Z11scaleOffsetiPKfPfff", so_size);
	check_cost("userapp", "_Z8stencil3PKfPf13StencilParams", st_size);
	check_cost("userapp", "_Z8blockSumPKfPfi", bsum_size);

	/* plausible H100 figures: 1M-element vectorAdd (12 MB moved) in 5-20 us,
	 * 1M BlackScholes options (20 MB) in 5-30 us */
	struct fake_mem m = {0};
	struct launch ln;
	va_size(&ln, &m, 1u << 20);
	uint64_t va = kernel("vectorAdd", "_Z9vectorAddPKfS0_Pfi")->cost_ns(&ln.l);
	assert_true(va >= 5000 && va <= 20000);
	bs_size(&ln, &m, 1u << 20);
	uint64_t bs = kernel("BlackScholes", "_Z15BlackScholesGPUPfS_PKfS1_S1_ffi")->cost_ns(&ln.l);
	assert_true(bs >= 5000 && bs <= 30000);
	/* the same problem with fewer elements covered costs less */
	va_size(&ln, &m, 1u << 20);
	uint64_t full = kernel("vectorAdd", "_Z9vectorAddPKfS0_Pfi")->cost_ns(&ln.l);
	ln.l.grid[0] = 16;
	assert_true(kernel("vectorAdd", "_Z9vectorAddPKfS0_Pfi")->cost_ns(&ln.l) < full);
}

/* ---- BlackScholes ------------------------------------------------------- */

static double cnd_ref(double d)
{
	const double A1 = 0.31938153, A2 = -0.356563782, A3 = 1.781477937, A4 = -1.821255978,
		     A5 = 1.330274429, RSQRT2PI = 0.39894228040143267793994605993438;
	double K = 1.0 / (1.0 + 0.2316419 * fabs(d));
	double c = RSQRT2PI * exp(-0.5 * d * d) * (K * (A1 + K * (A2 + K * (A3 + K * (A4 + K * A5)))));
	return d > 0 ? 1.0 - c : c;
}

static void bs_ref(double S, double X, double T, double R, double V, double *call, double *put)
{
	double sqrtT = sqrt(T);
	double d1 = (log(S / X) + (R + 0.5 * V * V) * T) / (V * sqrtT);
	double d2 = d1 - V * sqrtT;
	double expRT = exp(-R * T);
	*call = S * cnd_ref(d1) - X * expRT * cnd_ref(d2);
	*put = X * expRT * (1.0 - cnd_ref(d2)) - S * (1.0 - cnd_ref(d1));
}

struct bs_fixture {
	struct fake_mem m;
	uint64_t call, put, s, x, t;
	float *C, *P, *S, *X, *T;
};

static void bs_setup(struct bs_fixture *f, size_t n)
{
	memset(f, 0, sizeof(*f));
	f->call = dev_alloc(&f->m, n * 4);
	f->put = dev_alloc(&f->m, n * 4);
	f->s = dev_alloc(&f->m, n * 4);
	f->x = dev_alloc(&f->m, n * 4);
	f->t = dev_alloc(&f->m, n * 4);
	f->C = dev_host(&f->m, f->call);
	f->P = dev_host(&f->m, f->put);
	f->S = dev_host(&f->m, f->s);
	f->X = dev_host(&f->m, f->x);
	f->T = dev_host(&f->m, f->t);
	uint64_t seed = 5347;
	for (size_t i = 0; i < n; i++) {
		f->S[i] = frand(&seed, 5.0f, 30.0f);
		f->X[i] = frand(&seed, 1.0f, 100.0f);
		f->T[i] = frand(&seed, 0.25f, 10.0f);
	}
	fill(f->C, n, SENTINEL);
	fill(f->P, n, SENTINEL);
}

static void bs_launch(struct launch *ln, struct bs_fixture *f, const uint64_t addr[5], int32_t n,
		      uint32_t grid, uint32_t block)
{
	launch_init(ln, &f->m, BS_LAYOUT, 8, BS_BYTES, grid, block);
	for (uint32_t i = 0; i < 5; i++)
		set_ptr(ln, i, addr[i]);
	set_f32(ln, 5, 0.02f);
	set_f32(ln, 6, 0.30f);
	set_i32(ln, 7, n);
}

static void test_blackscholes_computes(void **state)
{
	const struct xgpu_simk_kernel *k = kernel("BlackScholes", "_Z15BlackScholesGPUPfS_PKfS1_S1_ffi");
	const int n = 100000;
	struct bs_fixture f;
	bs_setup(&f, n);
	const uint64_t addr[5] = {f.call, f.put, f.s, f.x, f.t};
	struct launch ln;
	bs_launch(&ln, &f, addr, n, blocks_for(n, 128), 128);
	assert_int_equal(k->run(&ln.l), XGPU_SIMK_OK);
	/* the tolerances BlackScholes.cu applies: L1 norm 1e-6, max abs 1e-3 */
	double sum_delta = 0, sum_ref = 0, max_abs = 0;
	for (int i = 0; i < n; i++) {
		double c, p;
		bs_ref(f.S[i], f.X[i], f.T[i], (double)0.02f, (double)0.30f, &c, &p);
		double dc = fabs(c - f.C[i]), dp = fabs(p - f.P[i]);
		assert_true(dc <= 1e-3 && dp <= 1e-3);
		max_abs = fmax(max_abs, fmax(dc, dp));
		sum_delta += dc + dp;
		sum_ref += fabs(c) + fabs(p);
	}
	double l1 = sum_delta / sum_ref;
	if (!(l1 < 1e-6))
		fail_msg("L1 norm %g (max abs error %g)", l1, max_abs);
	dev_free_all(&f.m);
}

static void test_blackscholes_grid_and_addresses(void **state)
{
	const struct xgpu_simk_kernel *k = kernel("BlackScholes", "_Z15BlackScholesGPUPfS_PKfS1_S1_ffi");
	const int n = 1000;
	struct bs_fixture f;
	bs_setup(&f, n);
	uint64_t addr[5] = {f.call, f.put, f.s, f.x, f.t};
	struct launch ln;
	/* 3 blocks of 128 price options 0..383 */
	bs_launch(&ln, &f, addr, n, 3, 128);
	assert_int_equal(k->run(&ln.l), XGPU_SIMK_OK);
	for (int i = 0; i < n; i++) {
		if (i < 384) {
			double c, p;
			bs_ref(f.S[i], f.X[i], f.T[i], (double)0.02f, (double)0.30f, &c, &p);
			assert_true(fabs(c - f.C[i]) <= 1e-3 && fabs(p - f.P[i]) <= 1e-3);
		} else {
			assert_true(f.C[i] == SENTINEL && f.P[i] == SENTINEL);
		}
	}
	/* each of the five arrays out of range in turn */
	for (int a = 0; a < 5; a++) {
		uint64_t bad[5];
		memcpy(bad, addr, sizeof(bad));
		bad[a] += 8; /* the last two options fall past the end */
		fill(f.C, n, SENTINEL);
		bs_launch(&ln, &f, bad, n, blocks_for(n, 128), 128);
		assert_int_equal(k->run(&ln.l), XGPU_SIMK_ERR_ILLEGAL_ADDRESS);
		for (int i = 0; i < n; i++)
			assert_true(f.C[i] == SENTINEL);
	}
	addr[2] = 0;
	bs_launch(&ln, &f, addr, n, blocks_for(n, 128), 128);
	assert_int_equal(k->run(&ln.l), XGPU_SIMK_ERR_ILLEGAL_ADDRESS);
	dev_free_all(&f.m);
}

/* ---- callLatency ---------------------------------------------------------- */

static void test_calllatency(void **state)
{
	const struct xgpu_simk_kernel *empty = kernel("callLatency", "_Z11emptyKernelv");
	const struct xgpu_simk_kernel *bump = kernel("callLatency", "_Z4bumpPj");
	struct fake_mem m = {0};
	struct launch ln;
	launch_init(&ln, &m, NULL, 0, 0, 1, 1);
	assert_int_equal(empty->run(&ln.l), XGPU_SIMK_OK);
	assert_true(empty->cost_ns(&ln.l) > 0);

	uint64_t counter = dev_alloc(&m, 4);
	uint32_t *c = dev_host(&m, counter);
	*c = 5;
	launch_init(&ln, &m, BUMP_LAYOUT, 1, BUMP_BYTES, 2, 64);
	set_ptr(&ln, 0, counter);
	for (int i = 0; i < 8; i++)
		assert_int_equal(bump->run(&ln.l), XGPU_SIMK_OK);
	assert_int_equal(*c, 5 + 8 * 2 * 64);
	/* every thread of a 3-D grid adds one */
	ln.l.grid[1] = 3;
	ln.l.block[2] = 2;
	*c = 0;
	assert_int_equal(bump->run(&ln.l), XGPU_SIMK_OK);
	assert_int_equal(*c, 2 * 3 * 64 * 2);
	/* wraps like a 32-bit atomicAdd */
	*c = 0xffffffffu;
	launch_init(&ln, &m, BUMP_LAYOUT, 1, BUMP_BYTES, 1, 2);
	set_ptr(&ln, 0, counter);
	assert_int_equal(bump->run(&ln.l), XGPU_SIMK_OK);
	assert_int_equal(*c, 1);
	/* bad and misaligned counters */
	set_ptr(&ln, 0, counter + 4);
	assert_int_equal(bump->run(&ln.l), XGPU_SIMK_ERR_ILLEGAL_ADDRESS);
	set_ptr(&ln, 0, 0);
	assert_int_equal(bump->run(&ln.l), XGPU_SIMK_ERR_ILLEGAL_ADDRESS);
	set_ptr(&ln, 0, counter + 1);
	assert_int_equal(bump->run(&ln.l), ERR_MISALIGNED_ADDRESS);
	assert_int_equal(*c, 1);
	dev_free_all(&m);
}

/* ---- userapp ---------------------------------------------------------------- */

static void so_launch(struct launch *ln, struct fake_mem *m, int32_t n, uint64_t in, uint64_t out,
		      float scale, float offset, uint32_t grid, uint32_t block)
{
	launch_init(ln, m, SO_LAYOUT, 5, SO_BYTES, grid, block);
	set_i32(ln, 0, n);
	set_ptr(ln, 1, in);
	set_ptr(ln, 2, out);
	set_f32(ln, 3, scale);
	set_f32(ln, 4, offset);
}

static void test_userapp_scale_offset(void **state)
{
	const struct xgpu_simk_kernel *k = kernel("userapp", "_Z11scaleOffsetiPKfPfff");
	const int n = 10000;
	struct fake_mem m = {0};
	uint64_t in = dev_alloc(&m, n * 4), out = dev_alloc(&m, n * 4);
	float *I = dev_host(&m, in), *O = dev_host(&m, out);
	uint64_t s = 7;
	for (int i = 0; i < n; i++)
		I[i] = frand(&s, -0.5f, 0.5f);
	fill(O, n, SENTINEL);
	struct launch ln;
	so_launch(&ln, &m, n, in, out, 2.5f, 0.75f, blocks_for(n, 256), 256);
	assert_int_equal(k->run(&ln.l), XGPU_SIMK_OK);
	for (int i = 0; i < n; i++)
		assert_true(fabs(O[i] - ((double)I[i] * 2.5 + 0.75)) <= 1e-6);
	/* grid covers 1024 */
	fill(O, n, SENTINEL);
	so_launch(&ln, &m, n, in, out, 2.5f, 0.75f, 4, 256);
	assert_int_equal(k->run(&ln.l), XGPU_SIMK_OK);
	for (int i = 0; i < n; i++)
		assert_true(i < 1024 ? O[i] != SENTINEL : O[i] == SENTINEL);
	/* in place works; out of range does not */
	so_launch(&ln, &m, n, in, in, 1.0f, 1.0f, blocks_for(n, 256), 256);
	float first = I[0];
	assert_int_equal(k->run(&ln.l), XGPU_SIMK_OK);
	assert_true(I[0] == first + 1.0f);
	so_launch(&ln, &m, n + 1, in, out, 1.0f, 0.0f, blocks_for(n + 1, 256), 256);
	assert_int_equal(k->run(&ln.l), XGPU_SIMK_ERR_ILLEGAL_ADDRESS);
	so_launch(&ln, &m, n, in, out + 6, 1.0f, 0.0f, 1, 1);
	assert_int_equal(k->run(&ln.l), ERR_MISALIGNED_ADDRESS);
	dev_free_all(&m);
}

static void st_launch(struct launch *ln, struct fake_mem *m, uint64_t in, uint64_t out, int32_t n,
		      double bias, const float w[3], uint32_t grid, uint32_t block)
{
	uint8_t raw[32];
	st_params(raw, n, bias, w);
	launch_init(ln, m, ST_LAYOUT, 3, ST_BYTES, grid, block);
	set_ptr(ln, 0, in);
	set_ptr(ln, 1, out);
	launch_set(ln, 2, raw, 32);
}

static void test_userapp_stencil(void **state)
{
	const struct xgpu_simk_kernel *k = kernel("userapp", "_Z8stencil3PKfPf13StencilParams");
	const int n = 5000;
	const float w[3] = {0.25f, 0.5f, -0.125f};
	const double bias = 0.125;
	struct fake_mem m = {0};
	uint64_t in = dev_alloc(&m, n * 4), out = dev_alloc(&m, n * 4);
	float *I = dev_host(&m, in), *O = dev_host(&m, out);
	uint64_t s = 99;
	for (int i = 0; i < n; i++)
		I[i] = frand(&s, -0.5f, 2.0f);
	fill(O, n, SENTINEL);
	struct launch ln;
	st_launch(&ln, &m, in, out, n, bias, w, blocks_for(n, 256), 256);
	assert_int_equal(k->run(&ln.l), XGPU_SIMK_OK);
	assert_true(O[0] == SENTINEL && O[n - 1] == SENTINEL);
	for (int i = 1; i < n - 1; i++) {
		double want = (double)w[0] * I[i - 1] + (double)w[1] * I[i] + (double)w[2] * I[i + 1] + bias;
		if (!(fabs(O[i] - want) <= 1e-5))
			fail_msg("out[%d] = %.9g, expected %.9g", i, O[i], want);
	}
	/* grid of 2 x 256: points 1..511 */
	fill(O, n, SENTINEL);
	st_launch(&ln, &m, in, out, n, bias, w, 2, 256);
	assert_int_equal(k->run(&ln.l), XGPU_SIMK_OK);
	for (int i = 0; i < n; i++)
		assert_true((i >= 1 && i < 512) ? O[i] != SENTINEL : O[i] == SENTINEL);
	/* n < 3 has no interior */
	fill(O, n, SENTINEL);
	st_launch(&ln, &m, 0, 0, 2, bias, w, 1, 256);
	assert_int_equal(k->run(&ln.l), XGPU_SIMK_OK);
	/* in is one element short: the last interior point reads past it */
	uint64_t short_in = dev_alloc(&m, (n - 1) * 4);
	st_launch(&ln, &m, short_in, out, n, bias, w, blocks_for(n, 256), 256);
	assert_int_equal(k->run(&ln.l), XGPU_SIMK_ERR_ILLEGAL_ADDRESS);
	/* out starting two elements late: the last point lands past the end */
	st_launch(&ln, &m, in, out + 8, n, bias, w, blocks_for(n, 256), 256);
	assert_int_equal(k->run(&ln.l), XGPU_SIMK_ERR_ILLEGAL_ADDRESS);
	/* ... but out[0] itself is never touched, so out may start one element early */
	uint64_t out2 = dev_alloc(&m, (n - 1) * 4);
	st_launch(&ln, &m, in, out2 - 4, n, bias, w, blocks_for(n, 256), 256);
	assert_int_equal(k->run(&ln.l), XGPU_SIMK_OK);
	assert_true(fabs(((float *)dev_host(&m, out2))[0] -
			 ((double)w[0] * I[0] + (double)w[1] * I[1] + (double)w[2] * I[2] + bias)) <= 1e-5);
	dev_free_all(&m);
}

static void bsum_launch(struct launch *ln, struct fake_mem *m, uint64_t in, uint64_t part, int32_t n,
			uint32_t grid, uint32_t block, uint32_t shared)
{
	launch_init(ln, m, BSUM_LAYOUT, 3, BSUM_BYTES, grid, block);
	ln->l.shared_bytes = shared;
	set_ptr(ln, 0, in);
	set_ptr(ln, 1, part);
	set_i32(ln, 2, n);
}

static void test_userapp_block_sum(void **state)
{
	const struct xgpu_simk_kernel *k = kernel("userapp", "_Z8blockSumPKfPfi");
	const int n = 10000, bd = 256, blocks = (n + bd - 1) / bd;
	struct fake_mem m = {0};
	uint64_t in = dev_alloc(&m, n * 4), part = dev_alloc(&m, (size_t)blocks * 4);
	float *I = dev_host(&m, in), *P = dev_host(&m, part);
	uint64_t s = 3;
	for (int i = 0; i < n; i++)
		I[i] = frand(&s, -0.5f, 2.0f);
	fill(P, blocks, SENTINEL);
	struct launch ln;
	bsum_launch(&ln, &m, in, part, n, blocks, bd, bd * 4);
	assert_int_equal(k->run(&ln.l), XGPU_SIMK_OK);
	for (int b = 0; b < blocks; b++) {
		double want = 0;
		for (int i = b * bd; i < n && i < (b + 1) * bd; i++)
			want += I[i];
		if (!(fabs(P[b] - want) <= 1e-4))
			fail_msg("partial[%d] = %.9g, expected %.9g", b, P[b], want);
	}
	/* grid of 4 blocks over n elements: 4 partials of full blocks, rest untouched */
	fill(P, blocks, SENTINEL);
	bsum_launch(&ln, &m, in, part, n, 4, bd, bd * 4);
	assert_int_equal(k->run(&ln.l), XGPU_SIMK_OK);
	for (int b = 0; b < blocks; b++)
		assert_true(b < 4 ? P[b] != SENTINEL : P[b] == SENTINEL);
	/* n = 0: every block writes 0 */
	bsum_launch(&ln, &m, 0, part, 0, 2, bd, bd * 4);
	assert_int_equal(k->run(&ln.l), XGPU_SIMK_OK);
	assert_true(P[0] == 0.0f && P[1] == 0.0f);
	/* too little dynamic shared memory faults */
	bsum_launch(&ln, &m, in, part, n, blocks, bd, bd * 4 - 4);
	assert_int_equal(k->run(&ln.l), XGPU_SIMK_ERR_ILLEGAL_ADDRESS);
	/* partial array too short for the grid */
	bsum_launch(&ln, &m, in, part, n, blocks + 1, bd, bd * 4);
	assert_int_equal(k->run(&ln.l), XGPU_SIMK_ERR_ILLEGAL_ADDRESS);
	/* input too short for n */
	bsum_launch(&ln, &m, in, part, n + 1, blocks, bd, bd * 4);
	assert_int_equal(k->run(&ln.l), XGPU_SIMK_ERR_ILLEGAL_ADDRESS);
	dev_free_all(&m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_tables),
	    cmocka_unit_test(test_vectoradd_computes),
	    cmocka_unit_test(test_vectoradd_grid_semantics),
	    cmocka_unit_test(test_vectoradd_bad_address),
	    cmocka_unit_test(test_vectoradd_bad_params),
	    cmocka_unit_test(test_costs),
	    cmocka_unit_test(test_blackscholes_computes),
	    cmocka_unit_test(test_blackscholes_grid_and_addresses),
	    cmocka_unit_test(test_calllatency),
	    cmocka_unit_test(test_userapp_scale_offset),
	    cmocka_unit_test(test_userapp_stencil),
	    cmocka_unit_test(test_userapp_block_sum),
	};
	return cmocka_run_group_tests_name("simkernels", tests, load_plugins, unload_plugins);
}
