/* SPDX-License-Identifier: Apache-2.0 */
/* cubin.c - what the simulated driver reads from a module's cubin (ELF)
 * beyond kernel parameter layouts (which common/fatbin.c provides):
 *
 * - device variables (__device__, __constant__): OBJECT symbols in the
 *   .nv.global* and .nv.constant* sections, with their sizes and, for
 *   PROGBITS sections (.nv.global.init, .nv.constant3), initial bytes;
 * - per-kernel figures cuFuncGetAttribute reports: registers (EIATTR_REGCOUNT
 *   in .nv.info), local memory (EIATTR_FRAME_SIZE), static shared memory (the
 *   .nv.shared.<kernel> section) and __launch_bounds__ (EIATTR_MAX_THREADS /
 *   EIATTR_REQNTID in .nv.info.<kernel>).
 *
 * Input is untrusted (it comes from a guest): every offset, size, index and
 * string is checked against the buffer before use.
 */
#include "simdrv_int.h"
#include "le.h"

#include <lz4.h>
#include <zstd.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ELF_EHDR 64u
#define ELF_SHDR 64u
#define ELF_SYM 24u
#define EM_CUDA 190u
#define SHT_SYMTAB 2u
#define SHT_NOBITS 8u
#define STT_OBJECT 1u
#define STT_FUNC 2u
#define STO_CUDA_ENTRY 0x10u
#define STO_CUDA_MANAGED 0x04u /* a __managed__ variable (what nvcc 13 emits) */
#define SHN_LORESERVE 0xff00u

#define EIFMT_SVAL 4u
#define EIATTR_MAX_THREADS 0x05u
#define EIATTR_REQNTID 0x10u
#define EIATTR_FRAME_SIZE 0x11u
#define EIATTR_REGCOUNT 0x2fu

#define FATBIN_KIND_PTX 1u
#define FATBIN_KIND_ELF 2u
#define FATBIN_FLAG_LZ4 0x2000u
#define FATBIN_FLAG_ZSTD 0x8000u
#define FATBIN_ENTRY_MIN 64u

static int fail(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(char *err, size_t errlen, const char *fmt, ...)
{
	if (err && errlen) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return -1;
}

/* Names are bounded so that no lookup or comparison scans further than a
 * name (a real one is at most a few KiB: a long mangled C++ name), and all
 * the names of one image are bounded too, which bounds the sort and the
 * lookups (each name takes part in O(log n) comparisons). */
#define SIM_MAX_NAME (64u << 10)
#define SIM_NAME_BUDGET ((uint64_t)64 << 20)

struct shdr {
	uint32_t name, type, link, info;
	uint64_t offset, size;
};

/* A name read from the image: p[len] is its terminating NUL. */
struct name {
	const char *p;
	size_t len;
};

struct elf {
	const uint8_t *d;
	size_t len;
	struct shdr *sh;
	uint32_t nsh;
	uint32_t shstrndx;
	struct name *names; /* each section's name, read once */
	uint32_t *by_name;  /* section indices sorted by name, for lookups */
};

/* The NUL-terminated string at off inside section sec: 1 and *out when there
 * is one, 0 when off is outside the section or the string runs off its end,
 * -1 when it is longer than SIM_MAX_NAME. Reads at most SIM_MAX_NAME + 1
 * bytes. */
static int sec_string(const struct elf *e, uint32_t sec, uint64_t off, struct name *out)
{
	if (sec >= e->nsh || e->sh[sec].type == SHT_NOBITS || off >= e->sh[sec].size)
		return 0;
	const char *s = (const char *)e->d + e->sh[sec].offset + off;
	uint64_t room = e->sh[sec].size - off;
	const char *nul = memchr(s, 0, room > SIM_MAX_NAME ? SIM_MAX_NAME + 1 : (size_t)room);
	if (!nul)
		return room > SIM_MAX_NAME ? -1 : 0;
	*out = (struct name){s, (size_t)(nul - s)};
	return 1;
}

/* strcmp order (bytes as unsigned char, a prefix first) of a and of the
 * concatenation of b1 and b2. */
static int cmp_name(const struct name *a, const char *b1, size_t n1, const char *b2, size_t n2)
{
	size_t m = a->len < n1 ? a->len : n1;
	int r = m ? memcmp(a->p, b1, m) : 0;
	if (r || a->len <= n1)
		return r ? r : (a->len < n1 + n2 ? -1 : 0);
	size_t rest = a->len - n1;
	m = rest < n2 ? rest : n2;
	r = m ? memcmp(a->p + n1, b2, m) : 0;
	return r ? r : (rest > n2) - (rest < n2);
}

static int cmp_sections(const void *a, const void *b, void *arg)
{
	const struct name *names = arg;
	const struct name *nb = &names[*(const uint32_t *)b];
	return cmp_name(&names[*(const uint32_t *)a], nb->p, nb->len, "", 0);
}

/* Section named prefix + suffix, or -1 (binary search: a hostile cubin may
 * have tens of thousands of sections and kernels). */
static long find_section(const struct elf *e, const char *prefix, const char *suffix, size_t slen)
{
	size_t plen = strlen(prefix);
	uint32_t lo = 0, hi = e->nsh;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		int r = cmp_name(&e->names[e->by_name[mid]], prefix, plen, suffix, slen);
		if (!r)
			return e->by_name[mid];
		if (r < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

static void free_sections(struct elf *e);

static int load_sections(struct elf *e, const uint8_t *d, size_t len, char *err, size_t errlen)
{
	memset(e, 0, sizeof *e);
	e->d = d;
	e->len = len;
	if (len < ELF_EHDR ||
	    memcmp(d,
		   "\x7f"
		   "ELF",
		   4) ||
	    d[4] != 2 || d[5] != 1)
		return fail(err, errlen, "not a 64-bit little-endian ELF image");
	if (xgpu_ld16(d + 18) != EM_CUDA)
		return fail(err, errlen, "ELF image is not a CUDA cubin (machine %u)", xgpu_ld16(d + 18));
	uint64_t shoff = xgpu_ld64(d + 0x28);
	uint32_t shentsize = xgpu_ld16(d + 0x3a), shnum = xgpu_ld16(d + 0x3c);
	e->shstrndx = xgpu_ld16(d + 0x3e);
	if (shentsize != ELF_SHDR || shnum == 0 || shoff > len || (uint64_t)shnum * ELF_SHDR > len - shoff ||
	    e->shstrndx >= shnum)
		return fail(err, errlen, "cubin section table out of bounds");
	e->sh = calloc(shnum, sizeof *e->sh);
	e->names = calloc(shnum, sizeof *e->names);
	e->by_name = malloc(shnum * sizeof *e->by_name);
	if (!e->sh || !e->names || !e->by_name) {
		free_sections(e);
		return fail(err, errlen, "out of memory");
	}
	e->nsh = shnum;
	for (uint32_t i = 0; i < shnum; i++) {
		const uint8_t *h = d + shoff + (uint64_t)i * ELF_SHDR;
		struct shdr *s = &e->sh[i];
		s->name = xgpu_ld32(h);
		s->type = xgpu_ld32(h + 4);
		s->offset = xgpu_ld64(h + 24);
		s->size = xgpu_ld64(h + 32);
		s->link = xgpu_ld32(h + 40);
		s->info = xgpu_ld32(h + 44);
		if (s->type != SHT_NOBITS && (s->offset > len || s->size > len - s->offset)) {
			free_sections(e);
			return fail(err, errlen, "cubin section %u out of bounds", i);
		}
	}
	uint64_t total = 0;
	for (uint32_t i = 0; i < shnum; i++) {
		e->by_name[i] = i;
		int rc = sec_string(e, e->shstrndx, e->sh[i].name, &e->names[i]);
		if (rc < 0 || (total += e->names[i].len) > SIM_NAME_BUDGET) {
			free_sections(e);
			return fail(err, errlen,
				    rc < 0 ? "cubin section name longer than %u bytes"
					   : "cubin section names longer than %u bytes in all",
				    rc < 0 ? SIM_MAX_NAME : (unsigned)SIM_NAME_BUDGET);
		}
		if (!rc)
			e->names[i] = (struct name){"", 0}; /* unnamed, as a lookup sees it */
	}
	/* qsort_r: the names travel with the call, so concurrent loads need no
	 * shared state and no lock. */
	qsort_r(e->by_name, shnum, sizeof *e->by_name, cmp_sections, e->names);
	return 0;
}

static void free_sections(struct elf *e)
{
	free(e->sh);
	free(e->names);
	free(e->by_name);
	e->sh = NULL;
	e->names = NULL;
	e->by_name = NULL;
}

/* The kernel whose symbol index is sym; syms is ascending. */
static struct sim_cubin_func *func_by_sym(struct sim_cubin *c, const uint32_t *syms, uint32_t sym)
{
	uint32_t lo = 0, hi = c->nfuncs;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (syms[mid] == sym)
			return &c->funcs[mid];
		if (syms[mid] < sym)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* Calls fn for each record of the .nv.info-style section sec. */
static void walk_nvinfo(const struct elf *e, uint32_t sec,
			void (*fn)(uint8_t fmt, uint8_t attr, const uint8_t *val, uint32_t len, void *arg),
			void *arg)
{
	const uint8_t *p = e->d + e->sh[sec].offset;
	uint64_t n = e->sh[sec].size, off = 0;
	while (n - off >= 4) {
		uint8_t fmt = p[off], attr = p[off + 1];
		uint16_t v = xgpu_ld16(p + off + 2);
		off += 4;
		if (fmt == EIFMT_SVAL) {
			if (v > n - off)
				return;
			fn(fmt, attr, p + off, v, arg);
			off += v;
		} else
			fn(fmt, attr, p + off - 2, 2, arg);
	}
}

struct global_info_arg {
	struct sim_cubin *c;
	const uint32_t *syms;
};

static void global_info_rec(uint8_t fmt, uint8_t attr, const uint8_t *val, uint32_t len, void *arg)
{
	struct global_info_arg *a = arg;
	if (fmt != EIFMT_SVAL || len < 8)
		return;
	struct sim_cubin_func *f = func_by_sym(a->c, a->syms, xgpu_ld32(val));
	if (!f)
		return;
	if (attr == EIATTR_REGCOUNT)
		f->regs = xgpu_ld32(val + 4);
	else if (attr == EIATTR_FRAME_SIZE)
		f->local_bytes = xgpu_ld32(val + 4);
}

static void func_info_rec(uint8_t fmt, uint8_t attr, const uint8_t *val, uint32_t len, void *arg)
{
	struct sim_cubin_func *f = arg;
	if (fmt != EIFMT_SVAL || len < 12 || (attr != EIATTR_MAX_THREADS && attr != EIATTR_REQNTID))
		return;
	uint64_t t = (uint64_t)xgpu_ld32(val) * xgpu_ld32(val + 4) * xgpu_ld32(val + 8);
	if (t && t <= SIM_MAX_THREADS_PER_BLOCK && (!f->max_threads || t < f->max_threads))
		f->max_threads = (uint32_t)t;
}

static int cmp_funcs(const void *a, const void *b)
{
	return strcmp(((const struct sim_cubin_func *)a)->name, ((const struct sim_cubin_func *)b)->name);
}

static bool is_var_section(const struct name *n)
{
	return (n->len >= 10 && !memcmp(n->p, ".nv.global", 10)) ||
	       (n->len >= 12 && !memcmp(n->p, ".nv.constant", 12));
}

static char *dup_name(const struct name *n)
{
	char *s = malloc(n->len + 1);
	if (s) {
		memcpy(s, n->p, n->len);
		s[n->len] = 0;
	}
	return s;
}

/* Reads the figures of each kernel from its own sections; funcs are sorted by
 * name and distinct, so each section is read at most once. */
static void read_func_sections(const struct elf *e, struct sim_cubin *out, bool reserved)
{
	for (uint32_t k = 0; k < out->nfuncs; k++) {
		struct sim_cubin_func *f = &out->funcs[k];
		size_t nlen = strlen(f->name);
		long sh = find_section(e, ".nv.shared.", f->name, nlen);
		if (sh >= 0) {
			uint64_t sz = e->sh[sh].size;
			/* sm_90 cubins place a kernel's shared variables after the
			 * 1 KiB the system reserves per block (marked by a
			 * .nv.shared.reserved.N section); what the function
			 * attribute reports is the user part. */
			if (reserved && sz >= SIM_SHARED_RESERVED)
				sz -= SIM_SHARED_RESERVED;
			f->static_shared = (uint32_t)(sz > UINT32_MAX ? UINT32_MAX : sz);
		}
		long fi = find_section(e, ".nv.info.", f->name, nlen);
		if (fi >= 0 && e->sh[fi].type != SHT_NOBITS)
			walk_nvinfo(e, (uint32_t)fi, func_info_rec, f);
	}
}

int sim_cubin_parse_elf(const uint8_t *d, size_t len, struct sim_cubin *out, char *err, size_t errlen)
{
	struct elf e;
	uint32_t *fsyms = NULL;
	if (load_sections(&e, d, len, err, errlen) < 0)
		return -1;
	long symtab = -1;
	for (uint32_t i = 1; i < e.nsh; i++)
		if (e.sh[i].type == SHT_SYMTAB) {
			symtab = i;
			break;
		}
	long c3 = find_section(&e, ".nv.constant3", "", 0);
	if (c3 >= 0)
		out->const_bytes = (uint32_t)(e.sh[c3].size > UINT32_MAX ? UINT32_MAX : e.sh[c3].size);
	if (symtab < 0 || e.sh[symtab].type == SHT_NOBITS) {
		free_sections(&e);
		return 0; /* nothing named: no variables, no kernels */
	}
	const struct shdr *st = &e.sh[symtab];
	uint64_t nsym = st->size / ELF_SYM;
	if (nsym > (1u << 24)) {
		free_sections(&e);
		return fail(err, errlen, "cubin symbol table too large");
	}
	const uint8_t *sym0 = d + st->offset;
	bool reserved = find_section(&e, ".nv.shared.reserved.", "0", 1) >= 0;
	uint64_t name_bytes = 0; /* of the symbols kept, against SIM_NAME_BUDGET */
	out->vars = calloc(nsym ? nsym : 1, sizeof *out->vars);
	out->funcs = calloc(nsym ? nsym : 1, sizeof *out->funcs);
	fsyms = calloc(nsym ? nsym : 1, sizeof *fsyms);
	if (!out->vars || !out->funcs || !fsyms)
		goto oom;
	for (uint64_t i = 1; i < nsym; i++) {
		const uint8_t *s = sym0 + i * ELF_SYM;
		uint32_t name_off = xgpu_ld32(s);
		uint8_t info = s[4], other = s[5];
		uint16_t shndx = xgpu_ld16(s + 6);
		uint64_t value = xgpu_ld64(s + 8), size = xgpu_ld64(s + 16);
		if (shndx == 0 || shndx >= SHN_LORESERVE || shndx >= e.nsh)
			continue;
		/* Only the symbols kept have their names read: the reading is
		 * charged to the budget, so a table of millions of symbols
		 * with long names costs no more than the budget. */
		unsigned type = info & 0xf;
		bool is_var = type == STT_OBJECT && is_var_section(&e.names[shndx]);
		bool is_entry = type == STT_FUNC && (other & STO_CUDA_ENTRY);
		if (!is_var && !is_entry)
			continue;
		struct name name;
		int rc = sec_string(&e, st->link, name_off, &name);
		if (rc < 0 || (rc > 0 && (name_bytes += name.len + 1) > SIM_NAME_BUDGET)) {
			free(fsyms);
			free_sections(&e);
			return fail(err, errlen,
				    rc < 0 ? "cubin symbol name longer than %u bytes"
					   : "cubin symbol names longer than %u bytes in all",
				    rc < 0 ? SIM_MAX_NAME : (unsigned)SIM_NAME_BUDGET);
		}
		if (!rc || !name.len)
			continue;
		if (is_var) {
			const struct shdr *vs = &e.sh[shndx];
			if (value > vs->size || size > vs->size - value)
				continue; /* a variable outside its section: ignore it */
			if (out->nvars >= SIM_MAX_MODULE_VARS) {
				free(fsyms);
				free_sections(&e);
				return fail(err, errlen, "more than %u device variables",
					    SIM_MAX_MODULE_VARS);
			}
			struct sim_cubin_var *v = &out->vars[out->nvars];
			if (!(v->name = dup_name(&name)))
				goto oom;
			v->size = size;
			v->init = vs->type == SHT_NOBITS ? NULL : d + vs->offset + value;
			v->init_len = v->init ? size : 0;
			v->managed = (other & STO_CUDA_MANAGED) != 0;
			out->nvars++;
		} else {
			struct sim_cubin_func *f = &out->funcs[out->nfuncs];
			if (!(f->name = dup_name(&name)))
				goto oom;
			/* Fallback register count: the top byte of .text's sh_info. */
			f->regs = e.sh[shndx].info >> 24;
			fsyms[out->nfuncs++] = (uint32_t)i;
		}
	}
	long gi = find_section(&e, ".nv.info", "", 0);
	if (gi >= 0 && e.sh[gi].type != SHT_NOBITS) {
		struct global_info_arg a = {out, fsyms};
		walk_nvinfo(&e, (uint32_t)gi, global_info_rec, &a);
	}
	/* By name from here on, for sim_cubin_func's binary search. A name
	 * twice (no linker makes that) is kept once: each kernel's sections
	 * are then read once, however many symbols repeat a name. */
	if (out->nfuncs > 1) {
		qsort(out->funcs, out->nfuncs, sizeof *out->funcs, cmp_funcs);
		uint32_t j = 1;
		for (uint32_t k = 1; k < out->nfuncs; k++) {
			if (!strcmp(out->funcs[k].name, out->funcs[j - 1].name))
				free(out->funcs[k].name);
			else
				out->funcs[j++] = out->funcs[k];
		}
		out->nfuncs = j;
	}
	read_func_sections(&e, out, reserved);
	free(fsyms);
	free_sections(&e);
	return 0;
oom:
	free(fsyms);
	free_sections(&e);
	return fail(err, errlen, "out of memory");
}

/* The payload of fatbin entry e, inflated into *owned if compressed. */
static int entry_payload(const uint8_t *e, uint64_t ehsz, uint64_t psz, const uint8_t **out, size_t *outlen,
			 uint8_t **owned, char *err, size_t errlen)
{
	const uint8_t *pl = e + ehsz;
	uint64_t flags = xgpu_ld64(e + 40), csz = xgpu_ld32(e + 16), usz = xgpu_ld64(e + 56);
	*owned = NULL;
	if (!(flags & (FATBIN_FLAG_LZ4 | FATBIN_FLAG_ZSTD))) {
		*out = pl;
		*outlen = (size_t)psz;
		return 0;
	}
	if (csz == 0 || csz > psz || csz > INT32_MAX || usz == 0 || usz > XGPU_FATBIN_MAX_UNCOMPRESSED ||
	    ((flags & FATBIN_FLAG_LZ4) && (flags & FATBIN_FLAG_ZSTD)))
		return fail(err, errlen, "bad compressed fatbin entry");
	uint8_t *buf = malloc((size_t)usz);
	if (!buf)
		return fail(err, errlen, "out of memory");
	long got;
	if (flags & FATBIN_FLAG_ZSTD) {
		size_t r = ZSTD_decompress(buf, (size_t)usz, pl, (size_t)csz);
		got = ZSTD_isError(r) ? -1 : (long)r;
	} else
		got = LZ4_decompress_safe((const char *)pl, (char *)buf, (int)csz, (int)usz);
	if (got < 0) {
		free(buf);
		return fail(err, errlen, "corrupt compressed cubin");
	}
	*out = buf;
	*outlen = (size_t)got;
	*owned = buf;
	return 0;
}

struct pick {
	const uint8_t *e;
	uint32_t arch;
	uint64_t ehsz, psz;
};

static int cubin_from_pick(const struct pick *p, bool is_ptx, struct sim_cubin *out, char *err, size_t errlen);

/* Keeps the entry a GPU of this arch would use: the exact architecture,
 * else the newest older one (SASS runs on later revisions, PTX is JIT
 * compiled forward). */
static void consider(struct pick *p, const uint8_t *e, uint32_t a, uint64_t ehsz, uint64_t psz, uint32_t arch)
{
	if (!psz || a > arch || (p->e && (p->arch == arch || a <= p->arch)))
		return;
	*p = (struct pick){e, a, ehsz, psz};
}

int sim_cubin_from_fatbin(const uint8_t *fb, size_t len, uint32_t arch, struct sim_cubin *out, char *err,
			  size_t errlen)
{
	memset(out, 0, sizeof *out);
	size_t total = xgpu_fatbin_size(fb, len);
	if (!total)
		return fail(err, errlen, "not a fatbin");
	struct pick elf_pick = {0}, ptx_pick = {0};
	for (uint64_t off = xgpu_ld16(fb + 6); off < total;) {
		const uint8_t *e = fb + off;
		if (total - off < FATBIN_ENTRY_MIN)
			return fail(err, errlen, "truncated fatbin entry");
		uint64_t ehsz = xgpu_ld32(e + 4), psz = xgpu_ld64(e + 8);
		if (ehsz < FATBIN_ENTRY_MIN || ehsz > total - off || psz > total - off - ehsz)
			return fail(err, errlen, "fatbin entry overruns its container");
		uint32_t a = xgpu_ld32(e + 28);
		if (xgpu_ld16(e) == FATBIN_KIND_ELF) {
			out->has_elf = true;
			consider(&elf_pick, e, a, ehsz, psz, arch);
		} else if (xgpu_ld16(e) == FATBIN_KIND_PTX)
			consider(&ptx_pick, e, a, ehsz, psz, arch);
		off += ehsz + psz;
	}
	out->has_ptx = ptx_pick.e != NULL;
	/* The PTX text itself, for the interpreter (ptx_exec.c). */
	char *ptx = NULL;
	size_t ptxlen = 0;
	const uint8_t *tl = NULL;
	size_t tlen = 0;
	uint8_t *town = NULL;
	if (ptx_pick.e) {
		if (entry_payload(ptx_pick.e, ptx_pick.ehsz, ptx_pick.psz, &tl, &tlen, &town, err, errlen) < 0) {
			if (!elf_pick.e)
				return -1;
			tl = NULL; /* the cubin is what gets loaded; no interpretation */
		}
	}
	if (tl) {
		tlen = strnlen((const char *)tl, tlen);
		ptx = malloc(tlen + 1);
		if (!ptx) {
			free(town);
			return fail(err, errlen, "out of memory");
		}
		memcpy(ptx, tl, tlen);
		ptx[tlen] = 0;
		ptxlen = tlen;
		free(town);
	}
	int rc = cubin_from_pick(elf_pick.e ? &elf_pick : &ptx_pick, elf_pick.e == NULL, out, err, errlen);
	if (rc < 0) {
		free(ptx);
		return rc;
	}
	out->ptx = ptx;
	out->ptxlen = ptxlen;
	return 0;
}

static int cubin_from_pick(const struct pick *p, bool is_ptx, struct sim_cubin *out, char *err, size_t errlen)
{
	if (!p->e)
		return 0;
	const uint8_t *pl = NULL;
	size_t pllen = 0;
	uint8_t *owned = NULL;
	if (entry_payload(p->e, p->ehsz, p->psz, &pl, &pllen, &owned, err, errlen) < 0)
		return -1;
	if (is_ptx) {
		/* Variables own their initial values: the text can go. */
		int rc = sim_ptx_vars((const char *)pl, pllen, out);
		free(owned);
		if (rc < 0) {
			out->bad_ptx = true;
			return fail(err, errlen, "PTX initializer nested more deeply than supported");
		}
		return 0;
	}
	out->owned = owned;
	out->arch = p->arch;
	bool has_ptx = out->has_ptx, has_elf = out->has_elf;
	if (sim_cubin_parse_elf(pl, pllen, out, err, errlen) < 0) {
		sim_cubin_free(out);
		return -1;
	}
	out->has_ptx = has_ptx;
	out->has_elf = has_elf;
	return 0;
}

const struct sim_cubin_func *sim_cubin_func(const struct sim_cubin *c, const char *name)
{
	uint32_t lo = 0, hi = c->nfuncs;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		int r = strcmp(name, c->funcs[mid].name);
		if (!r)
			return &c->funcs[mid];
		if (r < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return NULL;
}

void sim_cubin_free(struct sim_cubin *c)
{
	for (uint32_t i = 0; c->vars && i < c->nvars; i++) {
		free(c->vars[i].name);
		free(c->vars[i].owned_init);
	}
	for (uint32_t i = 0; c->funcs && i < c->nfuncs; i++)
		free(c->funcs[i].name);
	free(c->vars);
	free(c->funcs);
	free(c->owned);
	free(c->ptx);
	memset(c, 0, sizeof *c);
}
