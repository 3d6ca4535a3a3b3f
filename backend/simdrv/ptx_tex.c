/* SPDX-License-Identifier: Apache-2.0 */
/* ptx_tex.c - texture and surface instructions of the PTX interpreter over
 * the simulated driver's texture and surface objects (ptx.h's struct
 * ptx_tex): tex and tld4 with point and linear filtering, wrap, clamp,
 * mirror and border addressing, normalized coordinates, integer elements
 * read as normalized floats unless the object reads them as integers,
 * 1D/2D/3D, layered and cubemap resources; suld/sust's byte addressing with
 * .trap/.clamp/.zero; txq/suq. Linear filtering is computed in full float
 * where the GPU uses a 9-bit fraction, so filtered results agree to about
 * 1/256 of a texel step. Every texel read goes through the caller's memory
 * function, which bounds it to device memory.
 */
#include "ptx_ext.h"

#include <math.h>
#include <string.h>

/* One texel's channels as floats (the read mode applied) and as integers. */
struct texel {
	float f[4];
	uint32_t u[4];
};

static float half_f(uint16_t h)
{
	int e = (h >> 10) & 0x1f, m = h & 0x3ff;
	float v = e == 0    ? ldexpf((float)m, -24)
		  : e == 31 ? (m ? NAN : INFINITY)
			    : ldexpf((float)(m | 0x400), e - 25);
	return (h & 0x8000) ? -v : v;
}

static void decode(const struct ptx_tex *t, const uint8_t *p, struct texel *x)
{
	memset(x, 0, sizeof *x);
	for (uint32_t c = 0; c < t->channels && c < 4; c++) {
		float f;
		uint32_t u;
		switch (t->format) {
		case 0x01: /* CU_AD_FORMAT_UNSIGNED_INT8 */
			u = p[c];
			f = t->read_int ? (float)u : (float)u / 255.0f;
			break;
		case 0x02: {
			uint16_t v;
			memcpy(&v, p + 2 * c, 2);
			u = v;
			f = t->read_int ? (float)u : (float)u / 65535.0f;
			break;
		}
		case 0x08: {
			int8_t v = (int8_t)p[c];
			u = (uint32_t)(int32_t)v;
			f = t->read_int ? (float)v : fmaxf((float)v / 127.0f, -1.0f);
			break;
		}
		case 0x09: {
			int16_t v;
			memcpy(&v, p + 2 * c, 2);
			u = (uint32_t)(int32_t)v;
			f = t->read_int ? (float)v : fmaxf((float)v / 32767.0f, -1.0f);
			break;
		}
		case 0x10: {
			uint16_t v;
			memcpy(&v, p + 2 * c, 2);
			f = half_f(v);
			memcpy(&u, &f, 4);
			break;
		}
		case 0x03:
		case 0x0a:
		case 0x20:
		default:
			memcpy(&u, p + 4 * c, 4);
			if (t->format == 0x03)
				f = (float)u;
			else if (t->format == 0x0a)
				f = (float)(int32_t)u;
			else
				memcpy(&f, &u, 4);
			break;
		}
		x->f[c] = f;
		x->u[c] = u;
	}
}

/* Index i along a dimension of n texels under address mode m; -1: border. */
static int64_t wrap(int64_t i, uint32_t n, uint32_t m, bool normalized)
{
	int64_t N = n;
	if (!normalized && (m == 0 || m == 2)) /* wrap and mirror need normalized coordinates */
		m = 1;
	switch (m) {
	case 0: /* CU_TR_ADDRESS_MODE_WRAP */
		i %= N;
		return i < 0 ? i + N : i;
	case 2: { /* MIRROR */
		int64_t p = i % (2 * N);
		if (p < 0)
			p += 2 * N;
		return p < N ? p : 2 * N - 1 - p;
	}
	case 3: /* BORDER */
		return i < 0 || i >= N ? -1 : i;
	default:
		return i < 0 ? 0 : i >= N ? N - 1 : i;
	}
}

struct ctx {
	const struct ptx_tex *t;
	ptx_mem_fn mem;
	void *arg;
	uint64_t layer; /* slice of a layered or cubemap resource */
	bool bad;
};

/* The texel at (i, j, k), addressed; the border colour outside. */
static void fetch(struct ctx *c, int64_t i, int64_t j, int64_t k, struct texel *x)
{
	const struct ptx_tex *t = c->t;
	i = wrap(i, t->width, t->address_mode[0], t->normalized);
	j = wrap(j, t->height, t->address_mode[1], t->normalized);
	k = wrap(k, t->depth, t->address_mode[2], t->normalized);
	if (i < 0 || j < 0 || k < 0) {
		for (int e = 0; e < 4; e++) {
			x->f[e] = t->border[e];
			memcpy(&x->u[e], &t->border[e], 4);
		}
		return;
	}
	uint64_t a = t->base + (c->layer + (uint64_t)k) * t->slice + (uint64_t)j * t->pitch +
		     (uint64_t)i * t->element_bytes;
	const uint8_t *p = c->mem(c->arg, a, t->element_bytes);
	if (!p) {
		c->bad = true;
		memset(x, 0, sizeof *x);
		return;
	}
	decode(t, p, x);
}

static float clampf(float v)
{
	return v < -1e9f ? -1e9f : v > 1e9f ? 1e9f : isnan(v) ? 0 : v;
}

/* Cube direction (x, y, z) to face and normalized face coordinates. */
static int cube_face(float x, float y, float z, float *s, float *t)
{
	float ax = fabsf(x), ay = fabsf(y), az = fabsf(z), sc, tc, ma;
	int f;
	if (ax >= ay && ax >= az) {
		f = x >= 0 ? 0 : 1;
		sc = x >= 0 ? -z : z;
		tc = -y;
		ma = ax;
	} else if (ay >= az) {
		f = y >= 0 ? 2 : 3;
		sc = x;
		tc = y >= 0 ? z : -z;
		ma = ay;
	} else {
		f = z >= 0 ? 4 : 5;
		sc = z >= 0 ? x : -x;
		tc = -y;
		ma = az;
	}
	if (ma == 0)
		ma = 1;
	*s = (sc / ma + 1) * 0.5f;
	*t = (tc / ma + 1) * 0.5f;
	return f;
}

bool ptx_tex_fetch(const struct ptx_tex *t, uint8_t g, int comp, uint8_t dt, uint8_t ct, const uint64_t c[4],
		   ptx_mem_fn mem, void *arg, uint64_t out[4])
{
	struct ctx cx = {.t = t, .mem = mem, .arg = arg};
	if (!t->width || !t->height || !t->depth || !t->element_bytes)
		return false; /* nothing to address (a guest's pitch2D of height 0) */
	float crd[3] = {0, 0, 0};
	int64_t icrd[3] = {0, 0, 0};
	unsigned n = 0, first = 0;
	switch (g) {
	case G_1D:
		n = 1;
		break;
	case G_2D:
		n = 2;
		break;
	case G_3D:
		n = 3;
		break;
	case G_A1D:
		n = 1, first = 1;
		break;
	case G_A2D:
		n = 2, first = 1;
		break;
	default: /* cube, acube */
		n = 3, first = g == G_ACUBE;
		break;
	}
	if (first)
		cx.layer = (uint32_t)c[0];
	for (unsigned i = 0; i < n; i++) {
		uint32_t v = (uint32_t)c[first + i];
		if (ct == PT_F32) {
			memcpy(&crd[i], &v, 4);
			crd[i] = clampf(crd[i]);
		} else
			icrd[i] = (int32_t)v;
	}
	bool layered = first || g == G_CUBE;
	uint32_t depth = t->depth;
	struct ptx_tex ft;
	if (g == G_CUBE || g == G_ACUBE) {
		/* Sample the face as a clamped, normalized 2D layer. */
		float s, tt;
		int f = cube_face(crd[0], crd[1], crd[2], &s, &tt);
		cx.layer = cx.layer * 6 + (uint64_t)f;
		ft = *t;
		ft.normalized = true;
		ft.address_mode[0] = ft.address_mode[1] = 1;
		cx.t = t = &ft;
		crd[0] = s, crd[1] = tt, n = 2;
		ct = PT_F32;
	}
	if (layered) {
		if (cx.layer >= depth)
			cx.layer = depth ? depth - 1 : 0;
		ft = *t;
		ft.depth = 1;
		cx.t = t = &ft;
	}
	uint32_t size[3] = {t->width, n > 1 ? t->height : 1, n > 2 ? t->depth : 1};
	struct texel x[8];
	float w[3] = {0, 0, 0};
	int64_t base[3] = {0, 0, 0};
	bool lin = ct == PT_F32 && (t->linear_filter || comp >= 0);
	if (ct != PT_F32) {
		for (unsigned i = 0; i < 3; i++)
			base[i] = icrd[i];
	} else {
		for (unsigned i = 0; i < n; i++) {
			float u = t->normalized ? crd[i] * (float)size[i] : crd[i];
			if (lin)
				u -= 0.5f;
			float fl = floorf(u);
			base[i] = (int64_t)fl;
			w[i] = u - fl;
		}
	}
	if (comp >= 0) {
		/* tld4: the footprint's four texels, channel comp, in the order
		 * (0,1), (1,1), (1,0), (0,0). */
		static const int ord[4][2] = {{0, 1}, {1, 1}, {1, 0}, {0, 0}};
		for (int q = 0; q < 4; q++) {
			fetch(&cx, base[0] + ord[q][0], base[1] + ord[q][1], 0, &x[0]);
			uint32_t b = x[0].u[comp];
			if (dt == PT_F32)
				memcpy(&b, &x[0].f[comp], 4);
			out[q] = b;
		}
		return !cx.bad;
	}
	if (!lin || dt != PT_F32) {
		fetch(&cx, base[0], base[1], base[2], &x[0]);
		for (int e = 0; e < 4; e++) {
			if (dt == PT_F32) {
				uint32_t b;
				memcpy(&b, &x[0].f[e], 4);
				out[e] = b;
			} else
				out[e] = x[0].u[e];
		}
		return !cx.bad;
	}
	unsigned corners = 1u << n, nch = t->channels < 4 ? t->channels : 4;
	float k[8];
	for (unsigned q = 0; q < corners; q++) {
		fetch(&cx, base[0] + (q & 1), base[1] + (q >> 1 & 1), base[2] + (q >> 2 & 1), &x[q]);
		k[q] = 1;
		for (unsigned i = 0; i < n; i++)
			k[q] *= (q >> i & 1) ? w[i] : 1 - w[i];
	}
	for (unsigned e = 0; e < 4; e++) {
		float acc = 0;
		if (e < nch)
			for (unsigned q = 0; q < corners; q++)
				acc += k[q] * x[q].f[e];
		uint32_t b;
		memcpy(&b, &acc, 4);
		out[e] = b;
	}
	return !cx.bad;
}

uint64_t ptx_surf_addr(const struct ptx_tex *t, uint8_t g, uint8_t mode, const uint64_t c[4], uint32_t size)
{
	int64_t crd[3] = {0, 0, 0}, layer = 0;
	if (!t->width || !t->height || !t->depth)
		return mode == SU_ZERO;
	unsigned n = g == G_1D || g == G_A1D ? 1 : g == G_3D ? 3 : 2, first = g == G_A1D || g == G_A2D;
	if (first)
		layer = (int32_t)(uint32_t)c[0];
	for (unsigned i = 0; i < n; i++)
		crd[i] = (int32_t)(uint32_t)c[first + i];
	int64_t lim[3] = {(int64_t)t->width * t->element_bytes - size, n > 1 ? (int64_t)t->height - 1 : 0,
			  n > 2 ? (int64_t)t->depth - 1 : 0};
	if (lim[0] < 0)
		return mode == SU_ZERO;
	bool out = false;
	for (int i = 0; i < 3; i++)
		if (crd[i] < 0 || crd[i] > lim[i]) {
			out = true;
			crd[i] = crd[i] < 0 ? 0 : lim[i];
		}
	if (first && (layer < 0 || layer >= (int64_t)t->depth)) {
		out = true;
		layer = layer < 0 ? 0 : (int64_t)t->depth - 1;
	}
	if (out && mode != SU_CLAMP)
		return mode == SU_ZERO;
	return t->base + (uint64_t)(first ? layer : crd[2]) * t->slice + (uint64_t)crd[1] * t->pitch +
	       (uint64_t)crd[0];
}

uint64_t ptx_tex_query(const struct ptx_tex *t, uint8_t q)
{
	switch (q) {
	case Q_WIDTH:
		return t->width;
	case Q_HEIGHT:
		return t->height;
	case Q_DEPTH:
		return t->layered || t->cubemap ? 1 : t->depth;
	case Q_CHANNEL_TYPE:
		return t->format;
	case Q_CHANNEL_ORDER:
		return t->channels;
	case Q_NORMALIZED:
		return t->normalized;
	case Q_FILTER:
		return t->linear_filter;
	case Q_ADDR0:
	case Q_ADDR1:
	case Q_ADDR2:
		return t->address_mode[q - Q_ADDR0];
	case Q_ARRAY_SIZE:
		return t->layered ? t->depth : t->cubemap ? t->depth / 6 : 0;
	default:
		return 1;
	}
}
