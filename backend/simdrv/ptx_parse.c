/* SPDX-License-Identifier: Apache-2.0 */
/* ptx_parse.c - PTX text to the interpreter's decoded form (ptx.h).
 *
 * Reads the module-scope declarations (shared variables; .global and .const
 * ones are resolved to the module's device variables by name), and each
 * .entry: its parameters (laid out as CUDA lays out a parameter buffer), its
 * .reg, .shared and .local declarations and its instructions, each decoded
 * once into a struct ptx_insn with registers as slot numbers, symbols as
 * addresses and branch targets as instruction indices. .func bodies are
 * skipped (a kernel that calls one is unsupported).
 *
 * The text is guest input: every read is bounded by its length, every count
 * by the PTX_MAX_* caps, and nothing in it can make decoding fail other than
 * by an error return. An instruction or modifier the interpreter does not
 * know marks its kernel unsupported (by name) instead of failing the parse.
 */
#include "ptx.h"
#include "ptx_ext.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TOK_MAX 8192 /* cub/thrust kernel names run to thousands of characters */
#define MAX_REGDECLS 65536u
#define MAX_SYMS 65536u
#define MAX_LABELS (1u << 20)

struct regdecl {
	char *prefix;   /* "%r" */
	uint32_t count; /* %r<count>; 0: a single register named prefix */
	uint32_t base;  /* first slot */
};

struct sym {
	char *name;
	uint8_t space; /* PS_SHARED, PS_LOCAL, PS_PARAM */
	bool dynamic;  /* extern shared: its offset is the dynamic area's */
	uint64_t off;
	bool callparam; /* a call's .param, kept in local memory */
	uint32_t size;
};

struct label {
	char *name;
	uint32_t at;
};

struct fixup {
	uint32_t insn, opnd;
	char *name;
};

struct parser {
	const char *p, *end;
	char tok[TOK_MAX];
	size_t len;
	bool toolong;
	char *err;
	size_t errlen;
	bool failed;
	ptx_resolve_fn resolve;
	void *arg;
	/* module scope */
	struct sym *msyms;
	uint32_t nmsyms, capmsyms;
	uint64_t mshared; /* bytes of module-scope shared */
	/* the kernel being read */
	struct ptx_kernel *k;
	struct regdecl *regs;
	uint32_t nregs, capregs;
	uint32_t nextslot; /* the next free register slot */
	/* Braces in a body open a scope: the registers declared in it (inline
	 * asm's, cuda_fp16.hpp's "{.reg .f16 low; ...}") die at its '}', and
	 * their slots are reused. Scopes deeper than this keep their slots. */
	struct {
		uint32_t nregs, nextslot;
	} scope[64];
	struct sym *syms;
	uint32_t nsyms, capsyms;
	uint64_t shared, local, param;
	bool dyn_fixed;
	uint64_t dyn_off;
	struct label *labels;
	uint32_t nlabels, caplabels;
	struct fixup *fix;
	uint32_t nfix, capfix;
	uint32_t capcode;
	uint32_t capx; /* k->xregs */
	bool infunc;   /* reading a .func */
	bool to_local; /* the instruction's .param operand is a call's, in local memory */
	bool reloc;    /* the operand just read is a local offset */
	uint32_t capcalls, capsig;
};

static void perr(struct parser *P, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void perr(struct parser *P, const char *fmt, ...)
{
	if (P->failed)
		return;
	P->failed = true;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(P->err, P->errlen, fmt, ap);
	va_end(ap);
}

static void unsup(struct parser *P, const char *what)
{
	if (P->k && !P->k->unsupported[0])
		snprintf(P->k->unsupported, sizeof P->k->unsupported, "%s", what[0] ? what : "?");
}

static bool ptx_ext_coords(struct parser *P, struct ptx_opnd *o);
/* A symbol it cannot place, by name (cut to what the reason holds). */
static void unsup_sym(struct parser *P, const char *name)
{
	char b[sizeof P->k->unsupported];
	snprintf(b, sizeof b, "unresolved symbol %.77s", name);
	unsup(P, b);
}

/* ---- lexer -------------------------------------------------------------------------- */

static void skip_space(struct parser *P)
{
	for (;;) {
		while (P->p < P->end && (isspace((unsigned char)*P->p) || !*P->p))
			P->p++;
		if (P->end - P->p >= 2 && P->p[0] == '/' && P->p[1] == '/') {
			while (P->p < P->end && *P->p != '\n')
				P->p++;
		} else if (P->end - P->p >= 2 && P->p[0] == '/' && P->p[1] == '*') {
			P->p += 2;
			while (P->end - P->p >= 2 && !(P->p[0] == '*' && P->p[1] == '/'))
				P->p++;
			P->p = P->end - P->p >= 2 ? P->p + 2 : P->end;
		} else
			return;
	}
}

static bool wchar(char c)
{
	return isalnum((unsigned char)c) || c == '_' || c == '$' || c == '.' || c == '%';
}

static void next(struct parser *P)
{
	skip_space(P);
	P->len = 0;
	P->toolong = false;
	P->tok[0] = 0;
	if (P->p >= P->end)
		return;
	const char *s = P->p;
	if (*s == '"') {
		for (P->p++; P->p < P->end && *P->p != '"'; P->p++)
			;
		P->p = P->p < P->end ? P->p + 1 : P->end;
	} else if (wchar(*s)) {
		/* "::" inside a word belongs to it (ld.shared::cta). */
		while (P->p < P->end && (wchar(*P->p) || (P->end - P->p >= 3 && P->p[0] == ':' &&
							  P->p[1] == ':' && wchar(P->p[2]))))
			P->p += (*P->p == ':') ? 2 : 1;
	} else
		P->p++;
	size_t n = (size_t)(P->p - s);
	if (n >= TOK_MAX) {
		P->toolong = true;
		n = TOK_MAX - 1;
	}
	memcpy(P->tok, s, n);
	P->tok[n] = 0;
	P->len = n ? n : 1;
}

static bool is(const struct parser *P, const char *s)
{
	return P->len && !strcmp(P->tok, s);
}

static bool at_end(const struct parser *P)
{
	return P->len == 0;
}

static void skip_line(struct parser *P)
{
	while (P->p < P->end && *P->p != '\n')
		P->p++;
}

/* Skips to the ';' ending the statement (inclusive), over balanced braces. */
static void skip_stmt(struct parser *P)
{
	int depth = 0;
	while (!at_end(P)) {
		if (is(P, "{"))
			depth++;
		else if (is(P, "}")) {
			if (--depth <= 0 && depth < 0)
				return;
		} else if (is(P, ";") && depth <= 0) {
			next(P);
			return;
		}
		next(P);
	}
}

/* Skips a balanced { ... } starting at the current '{'. */
static void skip_block(struct parser *P)
{
	int depth = 0;
	while (!at_end(P)) {
		if (is(P, "{"))
			depth++;
		else if (is(P, "}") && --depth == 0) {
			next(P);
			return;
		}
		next(P);
	}
}

static bool parse_u64(const char *s, uint64_t *out)
{
	if (!*s)
		return false;
	char *e;
	unsigned long long v;
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		v = strtoull(s + 2, &e, 16);
	else if (s[0] == '0' && s[1] && isdigit((unsigned char)s[1]))
		v = strtoull(s + 1, &e, 8);
	else if (s[0] == '0' && (s[1] == 'b' || s[1] == 'B'))
		v = strtoull(s + 2, &e, 2);
	else
		v = strtoull(s, &e, 10);
	if (*e == 'U' || *e == 'u')
		e++;
	if (*e || e == s)
		return false;
	*out = v;
	return true;
}

/* ---- types ------------------------------------------------------------------------ */

static const struct {
	const char *name;
	uint8_t t;
} type_names[] = {
    {"b8", PT_B8},     {"b16", PT_B16},       {"b32", PT_B32}, {"b64", PT_B64}, {"b128", PT_B128},
    {"u8", PT_U8},     {"u16", PT_U16},       {"u32", PT_U32}, {"u64", PT_U64}, {"s8", PT_S8},
    {"s16", PT_S16},   {"s32", PT_S32},       {"s64", PT_S64}, {"f16", PT_F16}, {"f16x2", PT_F16X2},
    {"bf16", PT_BF16}, {"bf16x2", PT_BF16X2}, {"f32", PT_F32}, {"f64", PT_F64}, {"pred", PT_PRED},
};

static uint8_t type_of(const char *s)
{
	for (size_t i = 0; i < sizeof type_names / sizeof *type_names; i++)
		if (!strcmp(s, type_names[i].name))
			return type_names[i].t;
	return PT_NONE;
}

static uint32_t type_bytes(uint8_t t)
{
	switch (t) {
	case PT_B8:
	case PT_U8:
	case PT_S8:
	case PT_PRED:
		return 1;
	case PT_B16:
	case PT_U16:
	case PT_S16:
	case PT_F16:
	case PT_BF16:
		return 2;
	case PT_B32:
	case PT_U32:
	case PT_S32:
	case PT_F32:
	case PT_F16X2:
	case PT_BF16X2:
		return 4;
	case PT_B64:
	case PT_U64:
	case PT_S64:
	case PT_F64:
		return 8;
	case PT_B128:
		return 16;
	default:
		return 0;
	}
}

/* ---- tables ---------------------------------------------------------------------- */

static bool grow(void **v, uint32_t *cap, uint32_t n, size_t el, uint32_t max)
{
	if (n < *cap)
		return true;
	if (n >= max)
		return false;
	uint32_t nc = *cap ? *cap * 2 : 16;
	if (nc > max)
		nc = max;
	void *nv = realloc(*v, (size_t)nc * el);
	if (!nv)
		return false;
	*v = nv;
	*cap = nc;
	return true;
}

static uint32_t reg_lookup(const struct parser *P, const char *name)
{
	/* The latest declaration first: an inner scope's shadows an outer one. */
	for (uint32_t i = P->nregs; i-- > 0;) {
		const struct regdecl *d = &P->regs[i];
		size_t pl = strlen(d->prefix);
		if (strncmp(name, d->prefix, pl))
			continue;
		if (!d->count) {
			if (!name[pl])
				return d->base;
			continue;
		}
		const char *n = name + pl;
		if (!isdigit((unsigned char)*n))
			continue;
		char *e;
		unsigned long v = strtoul(n, &e, 10);
		if (!*e && v < d->count)
			return d->base + (uint32_t)v;
	}
	return PTX_NOREG;
}

static const struct sym *sym_find(const struct sym *v, uint32_t n, const char *name)
{
	for (uint32_t i = n; i-- > 0;)
		if (!strcmp(v[i].name, name))
			return &v[i];
	return NULL;
}

static const struct {
	const char *name;
	uint8_t id;
} sregs[] = {
    {"%tid.x", SR_TID_X},
    {"%tid.y", SR_TID_Y},
    {"%tid.z", SR_TID_Z},
    {"%ntid.x", SR_NTID_X},
    {"%ntid.y", SR_NTID_Y},
    {"%ntid.z", SR_NTID_Z},
    {"%ctaid.x", SR_CTAID_X},
    {"%ctaid.y", SR_CTAID_Y},
    {"%ctaid.z", SR_CTAID_Z},
    {"%nctaid.x", SR_NCTAID_X},
    {"%nctaid.y", SR_NCTAID_Y},
    {"%nctaid.z", SR_NCTAID_Z},
    {"%laneid", SR_LANEID},
    {"%warpid", SR_WARPID},
    {"%nwarpid", SR_NWARPID},
    {"%smid", SR_SMID},
    {"%nsmid", SR_NSMID},
    {"%gridid", SR_GRIDID},
    {"%lanemask_eq", SR_LANEMASK_EQ},
    {"%lanemask_lt", SR_LANEMASK_LT},
    {"%lanemask_le", SR_LANEMASK_LE},
    {"%lanemask_gt", SR_LANEMASK_GT},
    {"%lanemask_ge", SR_LANEMASK_GE},
    {"%clock", SR_CLOCK},
    {"%clock64", SR_CLOCK64},
    {"%globaltimer", SR_GLOBALTIMER},
    {"%dynamic_smem_size", SR_DYN_SMEM},
    {"%total_smem_size", SR_TOTAL_SMEM},
    {"%reserved_smem_offset_1", SR_RESERVED_SMEM},
    {"%envreg1", SR_ENVREG1},
    {"%envreg2", SR_ENVREG2},
};

/* ---- declarations ---------------------------------------------------------------- */

struct decl {
	uint64_t align, size;
	bool dynamic;
	char name[TOK_MAX];
};

/* Reads "[.align N] [.vN] .type name[dims]... [= init]" up to and including
 * ';' (the current token is the first after the state space). */
static bool read_decl(struct parser *P, struct decl *d)
{
	memset(d, 0, sizeof *d);
	uint64_t vec = 1;
	uint8_t t = PT_NONE;
	while (!at_end(P) && P->tok[0] == '.') {
		if (is(P, ".align")) {
			next(P);
			if (!parse_u64(P->tok, &d->align) || d->align > 4096)
				return false;
		} else if (is(P, ".v2") || is(P, ".v4") || is(P, ".v8"))
			vec = (uint64_t)(P->tok[2] - '0');
		else if (type_of(P->tok + 1))
			t = type_of(P->tok + 1);
		next(P);
	}
	if (!t || at_end(P) || P->toolong || !wchar(P->tok[0]))
		return false;
	snprintf(d->name, sizeof d->name, "%s", P->tok);
	d->size = type_bytes(t) * vec;
	if (!d->align)
		d->align = d->size;
	next(P);
	while (is(P, "[")) {
		next(P);
		uint64_t n;
		if (is(P, "]"))
			d->dynamic = true, n = 0;
		else if (!parse_u64(P->tok, &n) || n > ((uint64_t)1 << 40))
			return false;
		else
			next(P);
		if (!is(P, "]"))
			return false;
		next(P);
		d->size = n && d->size > UINT64_MAX / n ? UINT64_MAX : d->size * n;
	}
	skip_stmt(P); /* an initializer, then ';' */
	return true;
}

static uint64_t align_up(uint64_t v, uint64_t a)
{
	if (!a)
		return v;
	return (v + a - 1) / a * a;
}

static bool add_sym(struct parser *P __attribute__((unused)), struct sym **v, uint32_t *n, uint32_t *cap,
		    const char *name, uint8_t space, uint64_t off, bool dynamic)
{
	if (!grow((void **)v, cap, *n, sizeof **v, MAX_SYMS))
		return false;
	char *c = strdup(name);
	if (!c)
		return false;
	(*v)[(*n)++] = (struct sym){c, space, dynamic, off, false, 0};
	return true;
}

/* ---- operands ---------------------------------------------------------------------- */

/* An immediate's bits for an operand of type t: hex floats (0f, 0d), decimal
 * floats and integers. */
static bool imm_bits(const char *s, bool negate, uint8_t t, uint64_t *out)
{
	bool isf = t == PT_F32 || t == PT_F64 || t == PT_F16 || t == PT_BF16;
	double dv;
	bool have_d = false;
	uint64_t iv = 0;
	if ((s[0] == '0') && (s[1] == 'f' || s[1] == 'F') && strlen(s) == 10) {
		uint32_t b = (uint32_t)strtoul(s + 2, NULL, 16);
		float f;
		memcpy(&f, &b, 4);
		dv = f;
		have_d = true;
		if (t == PT_F32 && !negate) {
			*out = b;
			return true;
		}
	} else if ((s[0] == '0') && (s[1] == 'd' || s[1] == 'D') && strlen(s) == 18) {
		uint64_t b = strtoull(s + 2, NULL, 16);
		memcpy(&dv, &b, 8);
		have_d = true;
		if (t == PT_F64 && !negate) {
			*out = b;
			return true;
		}
	} else if (parse_u64(s, &iv)) {
		if (negate)
			iv = (uint64_t)0 - iv;
		if (!isf) {
			*out = iv;
			return true;
		}
		dv = negate ? -(double)(0 - iv) : (double)iv;
		negate = false;
	} else {
		char *e;
		dv = strtod(s, &e);
		if (*e || e == s || !isdigit((unsigned char)s[0]))
			return false;
		have_d = true;
	}
	(void)have_d;
	if (negate)
		dv = -dv;
	if (t == PT_F64) {
		memcpy(out, &dv, 8);
	} else if (isf) {
		float f = (float)dv;
		uint32_t b;
		memcpy(&b, &f, 4);
		*out = b;
	} else if (!(dv > -9.2e18 && dv < 9.2e18))
		return false; /* a float literal no integer holds (or NaN) */
	else
		*out = (uint64_t)(int64_t)dv;
	return true;
}

#define SP_RAW 0xff

/* The symbol's value in space sp (an instruction's), or false. */
static bool sym_value(struct parser *P, const char *name, uint8_t sp, uint64_t *out)
{
	if (!strcmp(name, "WARP_SZ")) { /* PTX's one predefined constant */
		*out = 32;
		return true;
	}
	const struct sym *s = sym_find(P->syms, P->nsyms, name);
	if (!s)
		s = sym_find(P->msyms, P->nmsyms, name);
	uint8_t space;
	uint64_t v;
	if (s && s->callparam && (sp == PS_PARAM || sp == PS_LOCAL || sp == SP_RAW)) {
		/* A call's parameter: local memory, the instruction follows. */
		P->to_local |= sp == PS_PARAM;
		P->reloc = true;
		*out = s->off;
		return true;
	}
	if (s) {
		space = s->space;
		v = s->off;
		if (s->dynamic) {
			if (!P->dyn_fixed) {
				P->dyn_fixed = true;
				P->dyn_off = align_up(P->shared, 16);
			}
			v = P->dyn_off;
		}
	} else {
		if (!P->resolve || !P->resolve(P->arg, name, &v))
			return false;
		space = PS_GLOBAL;
	}
	*out = v;
	P->reloc = space == PS_LOCAL;
	if (space == PS_GLOBAL || space == PS_CONST || sp == space)
		return true;
	if (sp == PS_GENERIC) {
		*out = v + (space == PS_SHARED  ? PTX_WIN_SHARED
			    : space == PS_LOCAL ? PTX_WIN_LOCAL
						: PTX_WIN_PARAM);
		return true;
	}
	return sp == 0xff; /* raw, for mov */
}

static bool add_fixup(struct parser *P, uint32_t insn, uint32_t opnd, const char *name)
{
	if (!grow((void **)&P->fix, &P->capfix, P->nfix, sizeof *P->fix, MAX_LABELS))
		return false;
	char *c = strdup(name);
	if (!c)
		return false;
	P->fix[P->nfix++] = (struct fixup){insn, opnd, c};
	return true;
}

/* A register operand's slot; PTX_NOREG for '_' (a sink, mapped later). */
static bool reg_operand(struct parser *P, uint32_t *r)
{
	if (is(P, "_")) {
		*r = PTX_NOREG;
		next(P);
		return true;
	}
	uint32_t s = reg_lookup(P, P->tok);
	if (s == PTX_NOREG)
		return false;
	*r = s;
	next(P);
	return true;
}

/* The rest of a vector operand of over 4 registers (the first 4 are in
 * o->v): into the kernel's xregs, o a PO_XVEC. */
static bool ptx_ext_xvec(struct parser *P, struct ptx_opnd *o)
{
	uint32_t r[32], n = 4;
	memcpy(r, o->v, sizeof o->v);
	while (!is(P, "}")) {
		if (n == 32 || !reg_operand(P, &r[n]) || r[n] == PTX_NOREG) {
			unsup(P, "vector operand");
			return false;
		}
		n++;
		if (is(P, ","))
			next(P);
		else if (!is(P, "}")) {
			unsup(P, "vector operand");
			return false;
		}
	}
	next(P);
	struct ptx_kernel *k = P->k;
	for (uint32_t i = 0; i < 4; i++)
		if (r[i] == PTX_NOREG) {
			unsup(P, "vector operand");
			return false;
		}
	for (uint32_t i = 0; i < n; i++) {
		if (!grow((void **)&k->xregs, &P->capx, k->nxregs, sizeof *k->xregs, PTX_MAX_INSNS * 4u)) {
			perr(P, "out of memory");
			return false;
		}
		if (!i)
			o->imm = k->nxregs;
		k->xregs[k->nxregs++] = r[i];
	}
	o->k = PO_XVEC;
	o->n = (uint8_t)n;
	return true;
}

/* "r0, r1, ... }" after a '{': registers into o->v. A vector operand
 * may hold sinks ('_') and go on past 4 into the kernel's xregs; texture
 * coordinates may not. what names the operand in a refusal. */
static bool reg_list(struct parser *P, struct ptx_opnd *o, const char *what, bool vector)
{
	while (!is(P, "}")) {
		if (o->n == 4 && vector)
			return ptx_ext_xvec(P, o);
		if (o->n == 4 || !reg_operand(P, &o->v[o->n]) || (!vector && o->v[o->n] == PTX_NOREG)) {
			unsup(P, what);
			return false;
		}
		o->n++;
		if (is(P, ","))
			next(P);
		else if (!is(P, "}")) {
			unsup(P, what);
			return false;
		}
	}
	next(P);
	return o->n > 0;
}

/* ", {c0, c1, ...}" after a texture or surface handle: the coordinates,
 * registers only, into o->v. */
static bool ptx_ext_coords(struct parser *P, struct ptx_opnd *o)
{
	next(P);
	if (!is(P, "{")) {
		unsup(P, "texture coordinates");
		return false;
	}
	next(P);
	return reg_list(P, o, "texture coordinates", false);
}

/* Parses one operand into o. immt: type for immediates; sp: the space
 * symbols resolve in (SP_RAW: their own). Returns false on text it cannot
 * read (the kernel is then unsupported, with the reason set). */
static bool parse_operand(struct parser *P, struct ptx_opnd *o, uint8_t immt, uint8_t sp, uint32_t at,
			  uint32_t idx, bool label_ok)
{
	memset(o, 0, sizeof *o);
	if (P->toolong) {
		unsup(P, "overlong token");
		return false;
	}
	if (is(P, "!")) {
		o->neg = 1;
		next(P);
	}
	if (is(P, "[")) {
		next(P);
		o->k = PO_ADDR;
		o->r = PTX_NOREG;
		if (P->tok[0] == '%') {
			if (!reg_operand(P, &o->r) || o->r == PTX_NOREG) {
				unsup(P, "address register");
				return false;
			}
		} else if (isdigit((unsigned char)P->tok[0])) {
			if (!parse_u64(P->tok, &o->imm)) {
				unsup(P, "address");
				return false;
			}
			next(P);
		} else if (wchar(P->tok[0])) {
			P->reloc = false;
			if (!sym_value(P, P->tok, sp, &o->imm)) {
				unsup_sym(P, P->tok);
				return false;
			}
			o->pad = P->reloc;
			next(P);
		} else {
			unsup(P, "address");
			return false;
		}
		if (is(P, "+") || is(P, "-")) {
			bool neg = is(P, "-");
			next(P);
			if (is(P, "-")) {
				neg = !neg;
				next(P);
			}
			uint64_t v;
			if (!parse_u64(P->tok, &v)) {
				unsup(P, "address offset");
				return false;
			}
			o->imm += neg ? (uint64_t)0 - v : v;
			next(P);
		}
		if (is(P, ",") && !ptx_ext_coords(P, o)) /* [handle, {coordinates}] */
			return false;
		if (!is(P, "]")) {
			unsup(P, "address");
			return false;
		}
		next(P);
		return true;
	}
	if (is(P, "{")) {
		next(P);
		o->k = PO_VEC;
		return reg_list(P, o, "vector operand", true);
	}
	if (is(P, "-")) {
		next(P);
		o->k = PO_IMM;
		if (!imm_bits(P->tok, true, immt, &o->imm)) {
			unsup(P, "immediate");
			return false;
		}
		next(P);
		return true;
	}
	if (P->tok[0] == '%') {
		for (size_t i = 0; i < sizeof sregs / sizeof *sregs; i++)
			if (!strcmp(P->tok, sregs[i].name)) {
				o->k = PO_SREG;
				o->r = sregs[i].id;
				if (o->r == SR_ENVREG1 || o->r == SR_ENVREG2)
					P->k->grid_sync = true;
				next(P);
				return true;
			}
		o->k = PO_REG;
		if (!reg_operand(P, &o->r)) {
			char b[48];
			snprintf(b, sizeof b, "register %.30s", P->tok);
			unsup(P, b);
			return false;
		}
		return true;
	}
	if (is(P, "_")) {
		o->k = PO_REG;
		o->r = PTX_NOREG;
		next(P);
		return true;
	}
	if (isdigit((unsigned char)P->tok[0])) {
		o->k = PO_IMM;
		if (!imm_bits(P->tok, false, immt, &o->imm)) {
			unsup(P, "immediate");
			return false;
		}
		next(P);
		return true;
	}
	if (wchar(P->tok[0]) && !label_ok) {
		/* A register declared without '%' (inline asm's), or WARP_SZ,
		 * PTX's one predefined constant. */
		uint32_t r = reg_lookup(P, P->tok);
		if (r != PTX_NOREG) {
			o->k = PO_REG;
			o->r = r;
			next(P);
			return true;
		}
		if (is(P, "WARP_SZ")) {
			o->k = PO_IMM;
			o->imm = 32;
			next(P);
			return true;
		}
	}
	if (wchar(P->tok[0])) {
		if (label_ok) {
			o->k = PO_LABEL;
			if (!add_fixup(P, at, idx, P->tok)) {
				perr(P, "out of memory");
				return false;
			}
			next(P);
			return true;
		}
		o->k = PO_IMM;
		P->reloc = false;
		if (!sym_value(P, P->tok, sp, &o->imm)) {
			unsup_sym(P, P->tok);
			return false;
		}
		o->pad = P->reloc;
		next(P);
		return true;
	}
	unsup(P, "operand");
	return false;
}

/* ---- instructions ------------------------------------------------------------------- */

static const struct {
	const char *name;
	uint8_t op;
} ops[] = {
    {"ld", OP_LD},
    {"ldu", OP_LD},
    {"st", OP_ST},
    {"mov", OP_MOV},
    {"add", OP_ADD},
    {"sub", OP_SUB},
    {"mul", OP_MUL},
    {"mad", OP_MAD},
    {"fma", OP_FMA},
    {"div", OP_DIV},
    {"rem", OP_REM},
    {"min", OP_MIN},
    {"max", OP_MAX},
    {"neg", OP_NEG},
    {"abs", OP_ABS},
    {"and", OP_AND},
    {"or", OP_OR},
    {"xor", OP_XOR},
    {"not", OP_NOT},
    {"cnot", OP_CNOT},
    {"shl", OP_SHL},
    {"shr", OP_SHR},
    {"setp", OP_SETP},
    {"selp", OP_SELP},
    {"bra", OP_BRA},
    {"cvt", OP_CVT},
    {"cvta", OP_CVTA},
    {"bar", OP_BAR},
    {"barrier", OP_BAR},
    {"atom", OP_ATOM},
    {"red", OP_RED},
    {"sqrt", OP_SQRT},
    {"rsqrt", OP_RSQRT},
    {"rcp", OP_RCP},
    {"ex2", OP_EX2},
    {"lg2", OP_LG2},
    {"sin", OP_SIN},
    {"cos", OP_COS},
    {"tanh", OP_TANH},
    {"ret", OP_RET},
    {"exit", OP_EXIT},
    {"shfl", OP_SHFL},
    {"vote", OP_VOTE},
    {"activemask", OP_ACTIVEMASK},
    {"popc", OP_POPC},
    {"clz", OP_CLZ},
    {"brev", OP_BREV},
    {"bfe", OP_BFE},
    {"bfi", OP_BFI},
    {"lop3", OP_LOP3},
    {"shf", OP_SHF},
    {"prmt", OP_PRMT},
    {"copysign", OP_COPYSIGN},
    {"membar", OP_NOP},
    {"fence", OP_NOP},
    {"trap", OP_TRAP},
    {"bfind", OP_BFIND},
    {"call", OP_CALL},
    {"bmsk", OP_BMSK},
    {"griddepcontrol", OP_NOP},
    {"mul24", OP_MUL24},
    {"mad24", OP_MAD24},
    {"nanosleep", OP_NOP},
    {"pmevent", OP_NOP},
    {"prefetch", OP_NOP},
    {"prefetchu", OP_NOP},
    {"discard", OP_NOP},
    {"set", OP_SET},
    {"redux", OP_REDUX},
    {"match", OP_MATCH},
    {"tex", OP_TEX},
    {"tld4", OP_TLD4},
    {"suld", OP_SULD},
    {"sust", OP_SUST},
    {"txq", OP_TXQ},
    {"suq", OP_SUQ},
    {"cp", OP_CPASYNC},
    {"mbarrier", OP_MBAR},
    {"wmma", OP_WMMA},
    {"vabsdiff4", OP_VABSDIFF4},
};

static const char *const cmp_names[] = {"eq", "ne",  "lt",  "le",  "gt",  "ge",  "lo",  "ls",  "hi",
					"hs", "equ", "neu", "ltu", "leu", "gtu", "geu", "num", "nan"};

/* Modifiers with no meaning for a sequential interpreter. */
static const char *const ignored_mods[] = {
    "ftz",
    "approx",
    "full",
    "uni",
    "sync",
    "aligned",
    "nc",
    "volatile",
    "relaxed",
    "acquire",
    "release",
    "acq_rel",
    "sc",
    "weak",
    "gpu",
    "sys",
    "cta",
    "cluster",
    "ca",
    "cg",
    "cs",
    "lu",
    "cv",
    "wb",
    "wt",
    "noftz",
    "ptr",
    "L1::no_allocate",
    "L1::evict_last",
    "L1::evict_first",
    "L1::evict_normal",
    "L1::evict_unchanged",
    "L2::64B",
    "L2::128B",
    "L2::256B",
    "L2::evict_last",
    "L2::evict_first",
    "L2::evict_normal",
    "mmio",
    "shared::cta",
    "L2::cache_hint",
    "gl", /* membar.gl: a sequential interpreter orders everything */
};

static bool ignored(const char *m)
{
	for (size_t i = 0; i < sizeof ignored_mods / sizeof *ignored_mods; i++)
		if (!strcmp(m, ignored_mods[i]))
			return true;
	return false;
}

static bool emit(struct parser *P, struct ptx_insn **in)
{
	struct ptx_kernel *k = P->k;
	if (!grow((void **)&k->code, &P->capcode, k->ninsns, sizeof *k->code, PTX_MAX_INSNS)) {
		perr(P, k->ninsns >= PTX_MAX_INSNS ? "kernel too long" : "out of memory");
		return false;
	}
	*in = &k->code[k->ninsns++];
	memset(*in, 0, sizeof **in);
	(*in)->guard = PTX_NOREG;
	return true;
}

/* "(p0, p1, ...)": a call's parameters, each a .param declared in the
 * caller (the current token is '('). */
static bool call_list(struct parser *P, struct ptx_pslot *v, uint32_t *n)
{
	next(P);
	while (!is(P, ")")) {
		if (at_end(P) || *n == PTX_MAX_CALL_ARGS)
			return false;
		const struct sym *s = sym_find(P->syms, P->nsyms, P->tok);
		if (!s || !s->callparam)
			return false;
		v[(*n)++] = (struct ptx_pslot){(uint32_t)s->off, s->size};
		next(P);
		if (is(P, ","))
			next(P);
		else if (!is(P, ")"))
			return false;
	}
	next(P);
	return true;
}

/* "call[.uni] [(ret),] name[, (args)][, prototype];" (the current token is
 * the first after the opcode): a call site, its callee linked by name once
 * the module is read. */
static void parse_call(struct parser *P, struct ptx_insn *in)
{
	struct ptx_kernel *k = P->k;
	struct ptx_pslot v[2 * PTX_MAX_CALL_ARGS];
	uint32_t nr = 0, na = 0;
	char name[TOK_MAX];
	in->op = OP_TRAP;
	if (is(P, "(")) {
		if (!call_list(P, v, &nr) || !is(P, ","))
			goto bad;
		next(P);
	}
	if (P->toolong || !wchar(P->tok[0]))
		goto bad;
	if (P->tok[0] == '%') {
		unsup(P, "indirect call");
		skip_stmt(P);
		return;
	}
	snprintf(name, sizeof name, "%s", P->tok);
	next(P);
	if (is(P, ",")) {
		next(P);
		if (is(P, "(") && !call_list(P, v + nr, &na))
			goto bad;
	}
	skip_stmt(P); /* a prototype, then ';' */
	if (!grow((void **)&k->calls, &P->capcalls, k->ncalls, sizeof *k->calls, PTX_MAX_INSNS)) {
		perr(P, "out of memory");
		return;
	}
	struct ptx_callsite *cs = &k->calls[k->ncalls];
	memset(cs, 0, sizeof *cs);
	cs->name = strdup(name);
	cs->caller = malloc((nr + na ? nr + na : 1) * sizeof *cs->caller);
	if (!cs->name || !cs->caller) {
		free(cs->name);
		free(cs->caller);
		perr(P, "out of memory");
		return;
	}
	memcpy(cs->caller, v, (nr + na) * sizeof *v);
	cs->nrets = nr;
	cs->nargs = na;
	in->op = OP_CALL;
	in->o[0].imm = k->ncalls++;
	return;
bad:
	unsup(P, "call syntax");
	skip_stmt(P);
}

/* Decodes one instruction statement; the current token is its opcode.
 * Consumes up to and including ';'. */
static void parse_insn(struct parser *P, uint32_t guard, bool gneg)
{
	char opc[TOK_MAX];
	snprintf(opc, sizeof opc, "%s", P->tok);
	bool toolong = P->toolong;
	next(P);
	struct ptx_insn *in;
	if (!emit(P, &in))
		return;
	in->guard = guard;
	in->gneg = gneg;
	uint32_t at = P->k->ninsns - 1;
	char *save = NULL;
	char *base = strtok_r(opc, ".", &save);
	bool ok = base && !toolong;
	if (ok) {
		ok = false;
		for (size_t i = 0; i < sizeof ops / sizeof *ops; i++)
			if (!strcmp(base, ops[i].name)) {
				in->op = ops[i].op;
				ok = true;
				break;
			}
	}
	char what[48];
	snprintf(what, sizeof what, "%s", ok ? base : (base ? base : "?"));
	uint8_t types[2] = {0, 0};
	int ntypes = 0;
	in->vec = 1;
	for (char *m; ok && (m = strtok_r(NULL, ".", &save));) {
		uint8_t t = type_of(m);
		if (t) {
			if (ntypes < 2)
				types[ntypes++] = t;
			continue;
		}
		if ((in->op >= OP_REDUX || in->op == OP_CVT) && ptx_ext_mod(in, m))
			continue;
		if (!strcmp(m, "global"))
			in->space = PS_GLOBAL;
		else if (!strcmp(m, "shared") || !strcmp(m, "shared::cta"))
			in->space = PS_SHARED;
		else if (!strcmp(m, "local"))
			in->space = PS_LOCAL;
		else if (!strcmp(m, "param") || !strcmp(m, "param::entry"))
			in->space = PS_PARAM;
		else if (!strcmp(m, "const"))
			in->space = PS_CONST;
		else if (!strcmp(m, "v2") || !strcmp(m, "v4"))
			in->vec = (uint8_t)(m[1] - '0');
		else if (!strcmp(m, "to"))
			in->to = 1;
		else if (!strcmp(m, "sat"))
			in->sat = 1;
		else if (!strcmp(m, "lo"))
			in->mod = in->op == OP_SETP || in->op == OP_SET ? C_LO : M_LO;
		else if (!strcmp(m, "hi"))
			in->mod = in->op == OP_SETP || in->op == OP_SET ? C_HI : M_HI;
		else if (!strcmp(m, "wide"))
			in->mod = M_WIDE;
		else if (!strcmp(m, "rn") || !strcmp(m, "rz") || !strcmp(m, "rm") || !strcmp(m, "rp"))
			in->rnd = m[1] == 'n' ? R_RN : m[1] == 'z' ? R_RZ : m[1] == 'm' ? R_RM : R_RP;
		else if (!strcmp(m, "rni") || !strcmp(m, "rzi") || !strcmp(m, "rmi") || !strcmp(m, "rpi"))
			in->rnd = m[1] == 'n' ? R_RNI : m[1] == 'z' ? R_RZI : m[1] == 'm' ? R_RMI : R_RPI;
		else if (ignored(m))
			;
		else if (in->op == OP_SETP || in->op == OP_SET) {
			bool found = false;
			for (int c = 0; c < (int)(sizeof cmp_names / sizeof *cmp_names); c++)
				if (!strcmp(m, cmp_names[c])) {
					in->mod = (uint8_t)c;
					found = true;
				}
			if (!strcmp(m, "and"))
				in->bop = B_AND, found = true;
			else if (!strcmp(m, "or"))
				in->bop = B_OR, found = true;
			else if (!strcmp(m, "xor"))
				in->bop = B_XOR, found = true;
			ok = found;
		} else if (in->op == OP_ATOM || in->op == OP_RED) {
			static const char *const an[] = {"add", "min", "max", "exch", "cas",
							 "and", "or",  "xor", "inc",  "dec"};
			ok = false;
			for (int a = 0; a < 10; a++)
				if (!strcmp(m, an[a]))
					in->mod = (uint8_t)a, ok = true;
		} else if (in->op == OP_SHFL) {
			ok = true;
			if (!strcmp(m, "up"))
				in->mod = SH_UP;
			else if (!strcmp(m, "down"))
				in->mod = SH_DOWN;
			else if (!strcmp(m, "bfly"))
				in->mod = SH_BFLY;
			else if (!strcmp(m, "idx"))
				in->mod = SH_IDX;
			else
				ok = false;
		} else if (in->op == OP_VOTE) {
			ok = true;
			if (!strcmp(m, "all"))
				in->mod = V_ALL;
			else if (!strcmp(m, "any"))
				in->mod = V_ANY;
			else if (!strcmp(m, "uni"))
				in->mod = V_UNI;
			else if (!strcmp(m, "ballot"))
				in->mod = V_BALLOT;
			else
				ok = false;
		} else if (in->op == OP_SHF && (!strcmp(m, "l") || !strcmp(m, "r")))
			in->bop = m[0] == 'l';
		else if (in->op == OP_SHF && (!strcmp(m, "wrap") || !strcmp(m, "clamp")))
			in->mod = m[0] == 'c';
		else if (in->op == OP_BAR && !strcmp(m, "arrive"))
			in->bop = 1;
		else if (in->op == OP_BAR && !strcmp(m, "cta"))
			;
		else if (in->op == OP_BAR && !strcmp(m, "red"))
			in->bop = 2; /* bar.red: a barrier that reduces a predicate */
		else if (in->op == OP_BAR && in->bop == 2 &&
			 (!strcmp(m, "popc") || !strcmp(m, "and") || !strcmp(m, "or")))
			in->mod = m[0] == 'p' ? 1 : m[0] == 'a' ? 2 : 3;
		else if (in->op == OP_BAR && !strcmp(m, "warp"))
			/* bar.warp.sync: the lanes of a warp run together
			 * already (the minimum-PC rule), so nothing waits. */
			in->op = OP_NOP;
		else if (in->op == OP_BFIND && !strcmp(m, "shiftamt"))
			in->bop = 1;
		else if (in->op == OP_BMSK && (!strcmp(m, "wrap") || !strcmp(m, "clamp")))
			in->mod = m[0] == 'c';
		else if (in->op == OP_NOP && !strcmp(base, "griddepcontrol") &&
			 (!strcmp(m, "wait") || !strcmp(m, "launch_dependents")))
			/* Programmatic dependent launch: the grid before has
			 * finished when this one runs, nothing waits. */
			;
		else {
			snprintf(what, sizeof what, "%s.%s", base, m);
			ok = false;
		}
	}
	in->type = types[0];
	in->type2 = ntypes > 1 ? types[1] : types[0];
	if (in->op == OP_SET && ntypes < 2)
		ok = false;
	/* Types the interpreter does not compute with. */
	for (int i = 0; ok && i < ntypes; i++)
		if (!ptx_ext_type_ok(in, types[i])) {
			snprintf(what, sizeof what, "%s.%s", base, type_names[0].name);
			for (size_t j = 0; j < sizeof type_names / sizeof *type_names; j++)
				if (type_names[j].t == types[i])
					snprintf(what, sizeof what, "%s.%s", base, type_names[j].name);
			ok = false;
		}
	if (!ok) {
		unsup(P, what);
		in->op = OP_TRAP;
		skip_stmt(P);
		return;
	}
	if (in->op == OP_CALL) {
		parse_call(P, in);
		return;
	}
	/* Operands. */
	P->to_local = false;
	uint8_t sp = in->op == OP_MOV || in->op == OP_CVTA ? SP_RAW : in->space;
	while (!is(P, ";") && !at_end(P)) {
		if (in->nops == 5) {
			unsup(P, "operand count");
			in->op = OP_TRAP;
			skip_stmt(P);
			return;
		}
		uint32_t i = in->nops;
		uint8_t immt = in->type;
		if ((in->op == OP_CVT && i == 1) || in->op == OP_SETP || (in->op == OP_SET && i > 0))
			immt = in->type2;
		if ((in->op == OP_SHL || in->op == OP_SHR) && i == 2)
			immt = PT_U32;
		if (in->op == OP_SHFL || in->op == OP_VOTE || in->op == OP_BFE || in->op == OP_BFI ||
		    in->op == OP_LOP3 || in->op == OP_PRMT || in->op == OP_SHF)
			immt = i >= 2 || in->op != OP_BFE
				   ? (in->op == OP_LOP3 || in->op == OP_PRMT ? in->type : PT_U32)
				   : in->type;
		if (in->op == OP_SELP && i == 3)
			immt = PT_PRED;
		if (in->op >= OP_REDUX && in->op != OP_REDUX && in->op != OP_MATCH)
			immt = PT_U64; /* counts, sizes, strides */
		if (!parse_operand(P, &in->o[i], immt, sp, at, i, in->op == OP_BRA)) {
			in->op = OP_TRAP;
			skip_stmt(P);
			return;
		}
		in->nops++;
		if (i == 0 && is(P, "|") && in->nops == 1) {
			next(P);
			if (!parse_operand(P, &in->o[5], PT_PRED, sp, at, 5, false) || in->o[5].k != PO_REG) {
				in->op = OP_TRAP;
				skip_stmt(P);
				return;
			}
			in->pipe = 1;
		}
		if (is(P, ","))
			next(P);
		else if (!is(P, ";")) {
			unsup(P, "operand syntax");
			in->op = OP_TRAP;
			skip_stmt(P);
			return;
		}
	}
	if (P->to_local)
		in->space = PS_LOCAL; /* a call's .param */
	next(P);
}

/* Checks an instruction's operands against what the executor assumes, so
 * that running it cannot go wrong. */
static const char *check_insn(const struct ptx_insn *in)
{
	static const uint8_t need[] = {
	    [OP_NOP] = 0,   [OP_LD] = 2,       [OP_ST] = 2,         [OP_MOV] = 2,  [OP_ADD] = 3,
	    [OP_SUB] = 3,   [OP_MUL] = 3,      [OP_MAD] = 4,        [OP_FMA] = 4,  [OP_DIV] = 3,
	    [OP_REM] = 3,   [OP_MIN] = 3,      [OP_MAX] = 3,        [OP_NEG] = 2,  [OP_ABS] = 2,
	    [OP_AND] = 3,   [OP_OR] = 3,       [OP_XOR] = 3,        [OP_NOT] = 2,  [OP_CNOT] = 2,
	    [OP_SHL] = 3,   [OP_SHR] = 3,      [OP_SETP] = 3,       [OP_SELP] = 4, [OP_BRA] = 1,
	    [OP_CVT] = 2,   [OP_CVTA] = 2,     [OP_BAR] = 0,        [OP_ATOM] = 3, [OP_RED] = 2,
	    [OP_SQRT] = 2,  [OP_RSQRT] = 2,    [OP_RCP] = 2,        [OP_EX2] = 2,  [OP_LG2] = 2,
	    [OP_SIN] = 2,   [OP_COS] = 2,      [OP_TANH] = 2,       [OP_RET] = 0,  [OP_EXIT] = 0,
	    [OP_SHFL] = 4,  [OP_VOTE] = 2,     [OP_ACTIVEMASK] = 1, [OP_POPC] = 2, [OP_CLZ] = 2,
	    [OP_BREV] = 2,  [OP_BFE] = 4,      [OP_BFI] = 5,        [OP_LOP3] = 5, [OP_SHF] = 4,
	    [OP_PRMT] = 4,  [OP_COPYSIGN] = 3, [OP_TESTP] = 2,      [OP_SET] = 3,  [OP_MUL24] = 3,
	    [OP_MAD24] = 4, [OP_SAD] = 4,      [OP_FNS] = 4,        [OP_TRAP] = 0, [OP_BFIND] = 2,
	    [OP_CALL] = 0,  [OP_BMSK] = 3,
	};
	if (in->op >= OP_REDUX)
		return ptx_ext_check(in);
	if (in->op >= sizeof need)
		return "opcode";
	uint8_t n = need[in->op];
	if (in->nops < n)
		return "too few operands";
	if (in->op == OP_ATOM && in->mod == A_CAS && in->nops < 4)
		return "too few operands";
	if (in->op == OP_SETP && in->bop && in->nops < 4)
		return "too few operands";
	if (in->op == OP_BAR && in->bop == 2 && (in->nops < 3 || in->o[0].k != PO_REG || !in->mod))
		return "bar.red operands";
	switch (in->op) {
	case OP_NOP:
	case OP_BAR:
	case OP_CALL:
	case OP_RET:
	case OP_EXIT:
	case OP_TRAP:
		return NULL;
	case OP_BRA:
		return in->o[0].k == PO_LABEL ? NULL : "branch target";
	case OP_ST:
		if (in->o[0].k != PO_ADDR)
			return "st address";
		if (in->vec > 1 ? in->o[1].k != PO_VEC || in->o[1].n != in->vec : in->o[1].k == PO_VEC)
			return "st operand";
		return type_bytes(in->type) ? NULL : "st type";
	case OP_RED:
		return in->o[0].k == PO_ADDR && type_bytes(in->type) ? NULL : "red operands";
	case OP_LD:
		if (in->o[1].k != PO_ADDR)
			return "ld address";
		if (in->vec > 1 ? in->o[0].k != PO_VEC || in->o[0].n != in->vec : in->o[0].k != PO_REG)
			return "ld operand";
		return type_bytes(in->type) ? NULL : "ld type";
	case OP_ATOM:
		if (in->o[1].k != PO_ADDR || in->o[0].k != PO_REG || !type_bytes(in->type))
			return "atom operands";
		return NULL;
	case OP_MOV:
		if (in->o[0].k == PO_VEC)
			return in->o[1].k == PO_REG ? NULL : "mov operands";
		if (in->o[0].k != PO_REG)
			return "mov destination";
		return in->o[1].k == PO_ADDR || in->o[1].k == PO_LABEL ? "mov source" : NULL;
	default:
		break;
	}
	if (in->o[0].k != PO_REG)
		return "destination";
	for (int i = 1; i < in->nops; i++)
		if (in->o[i].k == PO_ADDR || in->o[i].k == PO_VEC || in->o[i].k == PO_LABEL ||
		    in->o[i].k == PO_XVEC)
			return "operand kind";
	return NULL;
}

/* ---- kernels ----------------------------------------------------------------------------- */

static void reset_kernel_state(struct parser *P)
{
	for (uint32_t i = 0; i < P->nregs; i++)
		free(P->regs[i].prefix);
	for (uint32_t i = 0; i < P->nsyms; i++)
		free(P->syms[i].name);
	for (uint32_t i = 0; i < P->nlabels; i++)
		free(P->labels[i].name);
	for (uint32_t i = 0; i < P->nfix; i++)
		free(P->fix[i].name);
	P->nregs = P->nsyms = P->nlabels = P->nfix = 0;
	P->nextslot = 0;
	P->capcalls = P->capsig = 0;
	P->shared = P->mshared;
	P->local = P->param = 0;
	P->dyn_fixed = false;
	P->capcode = 0;
	P->capx = 0;
	P->k = NULL;
}

/* ".reg .type %r<N>, %x, ..." (current token after .reg). */
static void parse_reg(struct parser *P)
{
	while (!at_end(P) && P->tok[0] == '.')
		next(P); /* .b32, .v2, ... */
	while (!at_end(P) && !is(P, ";")) {
		if (P->tok[0] != '%' && P->tok[0] != '_' && !isalpha((unsigned char)P->tok[0])) {
			perr(P, "bad .reg declaration");
			return;
		}
		char name[TOK_MAX];
		snprintf(name, sizeof name, "%s", P->tok);
		next(P);
		uint64_t count = 0;
		if (is(P, "<")) {
			next(P);
			if (!parse_u64(P->tok, &count) || count == 0) {
				perr(P, "bad register count");
				return;
			}
			next(P);
			if (!is(P, ">")) {
				perr(P, "bad .reg declaration");
				return;
			}
			next(P);
		}
		uint32_t slots = count ? (uint32_t)(count > PTX_MAX_VREGS ? PTX_MAX_VREGS + 1 : count) : 1;
		if (P->nextslot + (uint64_t)slots > PTX_MAX_VREGS) {
			unsup(P, "too many registers");
			skip_stmt(P);
			return;
		}
		if (!grow((void **)&P->regs, &P->capregs, P->nregs, sizeof *P->regs, MAX_REGDECLS) ||
		    !(P->regs[P->nregs].prefix = strdup(name))) {
			perr(P, "out of memory or too many .reg declarations");
			return;
		}
		P->regs[P->nregs].count = (uint32_t)count;
		P->regs[P->nregs].base = P->nextslot;
		P->nregs++;
		P->nextslot += slots;
		if (P->k->nregs < P->nextslot)
			P->k->nregs = P->nextslot;
		if (is(P, ","))
			next(P);
	}
	next(P);
}

/* A state-space declaration inside a kernel body or at module scope. */
static void parse_space_decl(struct parser *P, uint8_t space, bool module)
{
	struct decl d;
	if (!read_decl(P, &d)) {
		perr(P, "bad variable declaration");
		return;
	}
	if (space == PS_SHARED) {
		if (d.dynamic || (d.size == 0)) {
			if (!add_sym(P, module ? &P->msyms : &P->syms, module ? &P->nmsyms : &P->nsyms,
				     module ? &P->capmsyms : &P->capsyms, d.name, PS_SHARED, 0, true))
				perr(P, "out of memory");
			return;
		}
		uint64_t *at = module ? &P->mshared : &P->shared;
		uint64_t off = align_up(*at, d.align);
		if (off + d.size > PTX_MAX_SHARED || d.size > PTX_MAX_SHARED) {
			if (module)
				*at = PTX_MAX_SHARED + 1;
			else
				unsup(P, "shared memory size");
			return;
		}
		if (!module && P->dyn_fixed) {
			unsup(P, "shared declared after use");
			return;
		}
		*at = off + d.size;
		if (!add_sym(P, module ? &P->msyms : &P->syms, module ? &P->nmsyms : &P->nsyms,
			     module ? &P->capmsyms : &P->capsyms, d.name, PS_SHARED, off, false))
			perr(P, "out of memory");
	} else if (space == PS_LOCAL) {
		if (module) {
			return; /* module-scope .local: not supported, never referenced by nvcc */
		}
		uint64_t off = align_up(P->local, d.align);
		if (d.size > PTX_MAX_LOCAL || off + d.size > PTX_MAX_LOCAL) {
			unsup(P, "local memory size");
			return;
		}
		P->local = off + d.size;
		if (!add_sym(P, &P->syms, &P->nsyms, &P->capsyms, d.name, PS_LOCAL, off, false))
			perr(P, "out of memory");
	}
}

enum { PP_KERNEL, PP_RET, PP_ARG, PP_CALL };

/* ".param .type [.ptr ...] name" or ".param .align N .b8 name[N]": a
 * kernel's parameter (PP_KERNEL: in the launch's buffer), or a .func's
 * return value or parameter or a call's (in local memory). */
static bool parse_param(struct parser *P, int kind)
{
	uint64_t align = 0, size = 0;
	bool seen_type = false;
	next(P); /* past .param */
	while (!at_end(P) && P->tok[0] == '.') {
		if (is(P, ".align")) {
			next(P);
			uint64_t a;
			if (!parse_u64(P->tok, &a) || a > 4096)
				return false;
			if (!seen_type)
				align = a;
		} else if (!seen_type && type_of(P->tok + 1)) {
			size = type_bytes(type_of(P->tok + 1));
			seen_type = true;
		}
		next(P);
	}
	if (!seen_type || at_end(P) || P->toolong || !wchar(P->tok[0]))
		return false;
	char name[TOK_MAX];
	snprintf(name, sizeof name, "%s", P->tok);
	next(P);
	if (!align)
		align = size;
	if (is(P, "[")) {
		next(P);
		uint64_t n;
		if (!parse_u64(P->tok, &n) || n > 65536)
			return false;
		next(P);
		if (!is(P, "]"))
			return false;
		next(P);
		size *= n;
	}
	if (kind != PP_KERNEL) {
		uint64_t off = align_up(P->local, align ? align : 1);
		if (off + size > PTX_MAX_LOCAL) {
			unsup(P, "local memory size");
			return true;
		}
		P->local = off + size;
		if (!add_sym(P, &P->syms, &P->nsyms, &P->capsyms, name, PS_LOCAL, off, false))
			return false;
		P->syms[P->nsyms - 1].callparam = true;
		P->syms[P->nsyms - 1].size = (uint32_t)size;
		if (kind == PP_CALL)
			return true;
		struct ptx_kernel *k = P->k;
		if (!grow((void **)&k->sig, &P->capsig, k->nsigrets + k->nsigargs, sizeof *k->sig,
			  PTX_MAX_CALL_ARGS))
			return false;
		k->sig[k->nsigrets + k->nsigargs] = (struct ptx_pslot){(uint32_t)off, (uint32_t)size};
		if (kind == PP_RET)
			k->nsigrets++;
		else
			k->nsigargs++;
		return true;
	}
	uint64_t off = align_up(P->param, align);
	if (off + size > 65536)
		return false;
	P->param = off + size;
	return add_sym(P, &P->syms, &P->nsyms, &P->capsyms, name, PS_PARAM, off, false);
}

/* ---- register compaction ------------------------------------------------------------ */

/* Calls f on every register operand of in: plain, an address's base and a
 * texture's coordinates (o->v of a PO_ADDR), a vector's, and a long
 * vector's in the kernel's xregs (k must name the kernel where it is used). */
#define FOR_REGS(in, f)                                                                                      \
	do {                                                                                                 \
		if ((in)->guard != PTX_NOREG)                                                                \
			f((in)->guard);                                                                      \
		if ((in)->op != OP_CALL)                                                                     \
			for (int j_ = 0; j_ < 6; j_++) {                                                     \
				struct ptx_opnd *o_ = (struct ptx_opnd *)&(in)->o[j_];                       \
				if (o_->k == PO_REG)                                                         \
					f(o_->r);                                                            \
				else if (o_->k == PO_ADDR || o_->k == PO_VEC) {                              \
					if (o_->k == PO_ADDR && o_->r != PTX_NOREG)                          \
						f(o_->r);                                                    \
					for (int e_ = 0; e_ < o_->n && e_ < 4; e_++)                         \
						f(o_->v[e_]);                                                \
				} else if (o_->k == PO_XVEC)                                                 \
					for (int e_ = 0; e_ < o_->n; e_++)                                   \
						f(k->xregs[o_->imm + (uint64_t)e_]);                         \
			}                                                                                    \
	} while (0)

static int by_start(const void *a, const void *b, void *arg)
{
	const uint32_t *s = arg;
	uint32_t x = s[*(const uint32_t *)a], y = s[*(const uint32_t *)b];
	return x < y ? -1 : x > y;
}

/* Whether the instruction writes its destination operands (o[0], and o[5]
 * for a d|p pair) without reading them, unguarded: only then does a write
 * end a register's earlier life. Anything else counts as a read too, which
 * only makes ranges longer. */
static bool kills(const struct ptx_insn *in)
{
	if (in->guard != PTX_NOREG)
		return false;
	switch (in->op) {
	case OP_MOV:
		return in->o[0].k == PO_REG || in->o[0].k == PO_VEC;
	case OP_LD:
	case OP_ADD:
	case OP_SUB:
	case OP_MUL:
	case OP_MAD:
	case OP_FMA:
	case OP_DIV:
	case OP_REM:
	case OP_MIN:
	case OP_MAX:
	case OP_NEG:
	case OP_ABS:
	case OP_AND:
	case OP_OR:
	case OP_XOR:
	case OP_NOT:
	case OP_CNOT:
	case OP_SHL:
	case OP_SHR:
	case OP_SETP:
	case OP_SELP:
	case OP_CVT:
	case OP_CVTA:
	case OP_SQRT:
	case OP_RSQRT:
	case OP_RCP:
	case OP_EX2:
	case OP_LG2:
	case OP_SIN:
	case OP_COS:
	case OP_TANH:
	case OP_POPC:
	case OP_CLZ:
	case OP_BREV:
	case OP_BFE:
	case OP_BFI:
	case OP_LOP3:
	case OP_SHF:
	case OP_PRMT:
	case OP_COPYSIGN:
	case OP_TESTP:
	case OP_SET:
	case OP_MUL24:
	case OP_MAD24:
	case OP_SAD:
	case OP_BFIND:
	case OP_BMSK:
	case OP_ATOM:
	case OP_SHFL:
	case OP_VOTE:
	case OP_ACTIVEMASK:
		return in->o[0].k == PO_REG || (in->op == OP_LD && in->o[0].k == PO_VEC);
	default:
		return false;
	}
}

#define LIVE_MAX_BYTES ((size_t)128 << 20)

/* Stretches each register's range [s, e] over every instruction where it is
 * live (liveness over basic blocks, iterated to its fixpoint). False when
 * the body is too large for it (or memory runs out). */
static bool live_ranges(const struct ptx_kernel *k, uint32_t nv, uint32_t *s, uint32_t *e)
{
	uint32_t n = k->ninsns;
	const struct ptx_insn *code = k->code;
	uint8_t *lead = calloc(n + 1, 1);
	uint32_t *bof = malloc((size_t)(n + 1) * sizeof *bof);
	if (!lead || !bof) {
		free(lead);
		free(bof);
		return false;
	}
	lead[0] = 1;
	for (uint32_t i = 0; i < n; i++) {
		const struct ptx_insn *in = &code[i];
		if (in->op == OP_BRA && in->o[0].k == PO_LABEL && in->o[0].imm < n)
			lead[in->o[0].imm] = 1;
		if (in->op == OP_BRA || in->op == OP_RET || in->op == OP_EXIT || in->op == OP_TRAP)
			lead[i + 1] = 1;
	}
	uint32_t nb = 0;
	for (uint32_t i = 0; i < n; i++) {
		nb += lead[i];
		bof[i] = nb - 1;
	}
	size_t words = ((size_t)nv + 63) / 64;
	bool ok = nb && (size_t)nb * words * 8 * 4 <= LIVE_MAX_BYTES;
	uint64_t *use = NULL, *def = NULL, *lin = NULL, *lout = NULL;
	uint32_t *bstart = NULL, *succ = NULL;
	if (ok) {
		use = calloc((size_t)nb * words, 8);
		def = calloc((size_t)nb * words, 8);
		lin = calloc((size_t)nb * words, 8);
		lout = calloc((size_t)nb * words, 8);
		bstart = malloc(((size_t)nb + 1) * sizeof *bstart);
		succ = malloc((size_t)nb * 2 * sizeof *succ);
		ok = use && def && lin && lout && bstart && succ;
	}
	if (ok) {
		for (uint32_t i = 0; i < n; i++)
			if (lead[i])
				bstart[bof[i]] = i;
		bstart[nb] = n;
		for (uint32_t b = 0; b < nb; b++) {
			uint32_t last = bstart[b + 1] - 1;
			const struct ptx_insn *in = &code[last];
			bool cond = in->guard != PTX_NOREG;
			uint32_t next = last + 1 < n ? bof[last + 1] : PTX_NOREG;
			succ[2 * b] = succ[2 * b + 1] = PTX_NOREG;
			if (in->op == OP_BRA) {
				succ[2 * b] = in->o[0].k == PO_LABEL && in->o[0].imm < n ? bof[in->o[0].imm]
											 : PTX_NOREG;
				if (cond)
					succ[2 * b + 1] = next;
			} else if (in->op == OP_RET || in->op == OP_EXIT || in->op == OP_TRAP) {
				if (cond)
					succ[2 * b] = next;
			} else
				succ[2 * b] = next;
			/* use and def, walking the block backwards. */
			uint64_t *u = use + (size_t)b * words, *d = def + (size_t)b * words;
			for (uint32_t i = last + 1; i-- > bstart[b];) {
				const struct ptx_insn *x = &code[i];
				if (kills(x)) {
#define KILL(r)                                                                                              \
	do {                                                                                                 \
		if ((r) < nv) {                                                                              \
			d[(r) / 64] |= 1ull << ((r) % 64);                                                   \
			u[(r) / 64] &= ~(1ull << ((r) % 64));                                                \
		}                                                                                            \
	} while (0)
					const struct ptx_opnd *o = &x->o[0];
					if (o->k == PO_REG)
						KILL(o->r);
					else if (o->k == PO_VEC)
						for (int v = 0; v < o->n && v < 4; v++)
							KILL(o->v[v]);
					if (x->pipe && x->o[5].k == PO_REG)
						KILL(x->o[5].r);
#undef KILL
				}
				/* Every operand but the destinations just killed reads. */
				struct ptx_insn y = *x;
				if (kills(x)) {
					y.o[0].k = PO_NONE;
					if (y.pipe)
						y.o[5].k = PO_NONE;
				}
#define GEN(r)                                                                                               \
	do {                                                                                                 \
		if ((r) < nv)                                                                                \
			u[(r) / 64] |= 1ull << ((r) % 64);                                                   \
	} while (0)
				FOR_REGS(&y, GEN);
#undef GEN
			}
		}
		/* Backwards to the fixpoint: out = the successors' in, in = use +
		 * (out - def). */
		bool changed = true;
		for (int round = 0; changed && round < 64; round++) {
			changed = false;
			for (uint32_t b = nb; b-- > 0;) {
				uint64_t *o = lout + (size_t)b * words, *i = lin + (size_t)b * words;
				const uint64_t *u = use + (size_t)b * words, *d = def + (size_t)b * words;
				for (int j = 0; j < 2; j++) {
					uint32_t sb = succ[2 * b + j];
					if (sb == PTX_NOREG)
						continue;
					const uint64_t *si = lin + (size_t)sb * words;
					for (size_t w = 0; w < words; w++)
						o[w] |= si[w];
				}
				for (size_t w = 0; w < words; w++) {
					uint64_t v = u[w] | (o[w] & ~d[w]);
					if (v != i[w]) {
						i[w] = v;
						changed = true;
					}
				}
			}
		}
		ok = !changed;
	}
	if (ok)
		for (uint32_t b = 0; b < nb; b++) {
			const uint64_t *i = lin + (size_t)b * words, *o = lout + (size_t)b * words;
			uint32_t first = bstart[b], last = bstart[b + 1] - 1;
			for (size_t w = 0; w < words; w++) {
				for (uint64_t m = i[w]; m; m &= m - 1) {
					uint32_t r = (uint32_t)(w * 64 + (unsigned)__builtin_ctzll(m));
					if (s[r] > first)
						s[r] = first;
					if (e[r] < first)
						e[r] = first;
				}
				for (uint64_t m = o[w]; m; m &= m - 1) {
					uint32_t r = (uint32_t)(w * 64 + (unsigned)__builtin_ctzll(m));
					if (s[r] > last)
						s[r] = last;
					if (e[r] < last)
						e[r] = last;
				}
			}
		}
	free(lead);
	free(bof);
	free(use);
	free(def);
	free(lin);
	free(lout);
	free(bstart);
	free(succ);
	return ok;
}

/* Maps the body's registers (PTX's virtual ones: nvcc declares thousands)
 * onto as few slots as their live ranges need. A register's range is its
 * first to its last occurrence in the code's order, stretched over each loop
 * (back edge) it meets until nothing moves; ranges that do not overlap share
 * a slot (linear scan). A body it cannot bring under PTX_MAX_REGS is
 * refused by name. */
static void compact_regs(struct parser *P, struct ptx_kernel *k)
{
	uint32_t nv = k->nregs, n = k->ninsns;
	uint32_t *s = malloc((size_t)nv * sizeof *s), *e = malloc((size_t)nv * sizeof *e);
	uint32_t *map = malloc((size_t)nv * sizeof *map), *ord = malloc((size_t)nv * sizeof *ord);
	uint32_t *heap = malloc((size_t)nv * sizeof *heap), *freel = malloc((size_t)nv * sizeof *freel);
	uint32_t *be = NULL, nbe = 0;
	bool ok = s && e && map && ord && heap && freel;
	for (uint32_t r = 0; ok && r < nv; r++)
		s[r] = UINT32_MAX, e[r] = 0, map[r] = PTX_NOREG;
	for (uint32_t i = 0; ok && i < n; i++) {
		struct ptx_insn *in = &k->code[i];
#define OCC(r)                                                                                               \
	do {                                                                                                 \
		if ((r) < nv) {                                                                              \
			if (s[r] > i)                                                                        \
				s[r] = i;                                                                    \
			if (e[r] < i)                                                                        \
				e[r] = i;                                                                    \
		}                                                                                            \
	} while (0)
		FOR_REGS(in, OCC);
#undef OCC
		if (in->op == OP_BRA && in->o[0].k == PO_LABEL && in->o[0].imm <= i)
			nbe++;
	}
	if (ok && nbe) {
		be = malloc((size_t)nbe * 2 * sizeof *be);
		ok = be != NULL;
		nbe = 0;
		for (uint32_t i = 0; ok && i < n; i++) {
			const struct ptx_insn *in = &k->code[i];
			if (in->op == OP_BRA && in->o[0].k == PO_LABEL && in->o[0].imm <= i) {
				be[2 * nbe] = (uint32_t)in->o[0].imm;
				be[2 * nbe++ + 1] = i;
			}
		}
	}
	/* Where each register is live; failing that (a body too large for
	 * the bitsets), loops: a range that meets one covers it all (its value
	 * may go round). Bounded rounds; a body that does not settle keeps its
	 * registers as declared. */
	bool moved = !(ok && live_ranges(k, nv, s, e));
	for (int round = 0; ok && moved && round < 64; round++) {
		moved = false;
		for (uint32_t j = 0; j < nbe; j++) {
			uint32_t t = be[2 * j], b = be[2 * j + 1];
			for (uint32_t r = 0; r < nv; r++) {
				if (s[r] == UINT32_MAX || s[r] > b || e[r] < t)
					continue;
				if (s[r] > t)
					s[r] = t, moved = true;
				if (e[r] < b)
					e[r] = b, moved = true;
			}
		}
	}
	ok &= !moved;
	/* Linear scan: ranges by start; a slot is free again once its range
	 * ended before the next one starts (one that ends where another
	 * starts keeps its slot: an instruction may read after it writes). */
	uint32_t nused = 0, nord = 0, nheap = 0, nfree = 0;
	if (ok) {
		for (uint32_t r = 0; r < nv; r++)
			if (s[r] != UINT32_MAX)
				ord[nord++] = r;
		qsort_r(ord, nord, sizeof *ord, by_start, s);
		for (uint32_t x = 0; x < nord; x++) {
			uint32_t r = ord[x];
			/* Expire: heap of live registers keyed by end. */
			while (nheap && e[heap[0]] < s[r]) {
				freel[nfree++] = map[heap[0]];
				heap[0] = heap[--nheap];
				for (uint32_t h = 0;;) {
					uint32_t c = 2 * h + 1, m = h;
					if (c < nheap && e[heap[c]] < e[heap[m]])
						m = c;
					if (c + 1 < nheap && e[heap[c + 1]] < e[heap[m]])
						m = c + 1;
					if (m == h)
						break;
					uint32_t tmp = heap[h];
					heap[h] = heap[m];
					heap[m] = tmp;
					h = m;
				}
			}
			map[r] = nfree ? freel[--nfree] : nused++;
			uint32_t h = nheap++;
			heap[h] = r;
			while (h && e[heap[(h - 1) / 2]] > e[heap[h]]) {
				uint32_t p = (h - 1) / 2, tmp = heap[h];
				heap[h] = heap[p];
				heap[p] = tmp;
				h = p;
			}
		}
	}
	if (ok && nused <= nv) {
		for (uint32_t i = 0; i < n; i++) {
			struct ptx_insn *in = &k->code[i];
#define MAP(r) ((r) = (r) < nv ? map[r] : (r))
			FOR_REGS(in, MAP);
#undef MAP
		}
		k->nregs = nused ? nused : 1;
	}
	if (k->nregs > PTX_MAX_REGS) {
		char b[64];
		snprintf(b, sizeof b, "too many registers (%u live)", k->nregs);
		unsup(P, b);
	}
	free(s);
	free(e);
	free(map);
	free(ord);
	free(heap);
	free(freel);
	free(be);
}

static void finish_kernel(struct parser *P)
{
	struct ptx_kernel *k = P->k;
	/* Branch targets. */
	for (uint32_t i = 0; i < P->nfix && !P->failed; i++) {
		uint32_t at = PTX_NOREG;
		for (uint32_t j = 0; j < P->nlabels; j++)
			if (!strcmp(P->labels[j].name, P->fix[i].name)) {
				at = P->labels[j].at;
				break;
			}
		if (at == PTX_NOREG) {
			unsup(P, "branch to an unknown label");
			k->code[P->fix[i].insn].op = OP_TRAP;
			continue;
		}
		k->code[P->fix[i].insn].o[P->fix[i].opnd].imm = at;
	}
	/* The sink register '_' gets a slot of its own. */
	uint32_t sink = k->nregs++;
	for (uint32_t i = 0; i < k->ninsns; i++) {
		struct ptx_insn *in = &k->code[i];
		for (int j = 0; j < 6; j++) {
			struct ptx_opnd *o = &in->o[j];
			if (o->k == PO_REG && o->r == PTX_NOREG)
				o->r = sink;
			if (o->k == PO_VEC)
				for (int e = 0; e < o->n; e++)
					if (o->v[e] == PTX_NOREG)
						o->v[e] = sink;
		}
		const char *why = in->op == OP_TRAP ? NULL : check_insn(in);
		if (why) {
			unsup(P, why);
			in->op = OP_TRAP;
		}
	}
	if (!k->ninsns || k->code[k->ninsns - 1].op != (P->infunc ? OP_RET : OP_EXIT)) {
		/* Falling off the end exits (returns, from a .func). */
		struct ptx_insn *in;
		if (emit(P, &in))
			in->op = P->infunc ? OP_RET : OP_EXIT;
	}
	if (!P->failed)
		compact_regs(P, k);
	k->shared_static = (uint32_t)(P->dyn_fixed ? P->dyn_off : align_up(P->shared, 16));
	if (P->shared > PTX_MAX_SHARED)
		unsup(P, "shared memory size");
	k->local_bytes = (uint32_t)align_up(P->local, 16);
	k->param_bytes = (uint32_t)P->param;
}

static void free_kernel(struct ptx_kernel *k);

/* ".entry name ( params ) directives { body }", or ".func [( rets )] name
 * ( params ) { body }"; the current token is the first after .entry or
 * .func. */
static void parse_entry(struct parser *P, struct ptx_module *m, bool func)
{
	struct ptx_kernel **v = func ? &m->funcs : &m->kernels;
	uint32_t *n = func ? &m->nfuncs : &m->nkernels;
	if (*n >= PTX_MAX_KERNELS) {
		perr(P, "too many kernels");
		return;
	}
	struct ptx_kernel *nk = realloc(*v, (*n + 1) * sizeof *nk);
	if (!nk) {
		perr(P, "out of memory");
		return;
	}
	*v = nk;
	struct ptx_kernel *k = &nk[(*n)++];
	memset(k, 0, sizeof *k);
	reset_kernel_state(P);
	P->k = k;
	P->infunc = func;
	if (func && is(P, "(")) {
		next(P);
		while (!is(P, ")") && !at_end(P) && !P->failed) {
			if (!is(P, ".param") || !parse_param(P, PP_RET)) {
				perr(P, "bad return value of a .func");
				return;
			}
			if (is(P, ","))
				next(P);
		}
		next(P);
	}
	if (P->toolong || !wchar(P->tok[0])) {
		perr(P, func ? "bad .func name" : "bad .entry name");
		return;
	}
	if (!(k->name = strdup(P->tok))) {
		perr(P, "out of memory");
		return;
	}
	next(P);
	if (is(P, "(")) {
		next(P);
		while (!is(P, ")") && !at_end(P) && !P->failed) {
			if (!is(P, ".param") || !parse_param(P, P->infunc ? PP_ARG : PP_KERNEL)) {
				perr(P, "bad parameter of %s", k->name);
				return;
			}
			if (is(P, ","))
				next(P);
		}
		next(P);
	}
	/* Performance directives up to the body (or ';' for a prototype). */
	while (!at_end(P) && !is(P, "{") && !is(P, ";"))
		next(P);
	if (is(P, ";")) {
		/* A declaration without a body: no kernel. */
		free_kernel(k);
		(*n)--;
		P->k = NULL;
		next(P);
		return;
	}
	next(P); /* { */
	int depth = 1;
	const char *before = NULL;
	while (!P->failed) {
		if (P->p == before && !at_end(P) && !is(P, "}")) {
			perr(P, "cannot read the body of %s", k->name);
			return;
		}
		before = P->p;
		if (at_end(P)) {
			perr(P, "unterminated body of %s", k->name);
			return;
		}
		if (is(P, "{")) {
			if ((uint32_t)depth <= sizeof P->scope / sizeof *P->scope) {
				P->scope[depth - 1].nregs = P->nregs;
				P->scope[depth - 1].nextslot = P->nextslot;
			}
			depth++;
			next(P);
		} else if (is(P, "}")) {
			next(P);
			if (--depth == 0)
				break;
			if ((uint32_t)depth <= sizeof P->scope / sizeof *P->scope) {
				while (P->nregs > P->scope[depth - 1].nregs)
					free(P->regs[--P->nregs].prefix);
				P->nextslot = P->scope[depth - 1].nextslot;
			}
		} else if (is(P, ";")) {
			next(P);
		} else if (is(P, ".reg")) {
			next(P);
			parse_reg(P);
		} else if (is(P, ".shared") || is(P, ".local")) {
			uint8_t sp = is(P, ".shared") ? PS_SHARED : PS_LOCAL;
			next(P);
			parse_space_decl(P, sp, false);
		} else if (is(P, ".extern") || is(P, ".visible") || is(P, ".weak")) {
			next(P);
		} else if (is(P, ".loc") || is(P, ".file")) {
			skip_line(P);
			next(P);
		} else if (is(P, ".param")) {
			/* A call's argument or return value. */
			if (!parse_param(P, PP_CALL))
				unsup(P, "call parameter");
			skip_stmt(P);
		} else if (is(P, ".pragma") || is(P, ".global") || is(P, ".const")) {
			if (is(P, ".global") || is(P, ".const"))
				unsup(P, "declaration in a kernel body");
			skip_stmt(P);
		} else if (P->tok[0] == '.') {
			char b[48];
			snprintf(b, sizeof b, "directive %.30s", P->tok);
			unsup(P, b);
			skip_stmt(P);
		} else if (is(P, "@")) {
			next(P);
			bool neg = false;
			if (is(P, "!")) {
				neg = true;
				next(P);
			}
			uint32_t g = reg_lookup(P, P->tok);
			if (g == PTX_NOREG) {
				unsup(P, "guard predicate");
				skip_stmt(P);
				continue;
			}
			next(P);
			if (P->toolong || !wchar(P->tok[0])) {
				perr(P, "bad instruction");
				return;
			}
			parse_insn(P, g, neg);
		} else if (wchar(P->tok[0])) {
			/* A label, or an instruction. */
			skip_space(P);
			if (P->p < P->end && *P->p == ':') {
				if (!grow((void **)&P->labels, &P->caplabels, P->nlabels, sizeof *P->labels,
					  MAX_LABELS) ||
				    !(P->labels[P->nlabels].name = strdup(P->tok))) {
					perr(P, "out of memory or too many labels");
					return;
				}
				P->labels[P->nlabels++].at = k->ninsns;
				next(P); /* : */
				next(P);
			} else
				parse_insn(P, PTX_NOREG, false);
		} else {
			perr(P, "unexpected '%s' in %s", P->tok, k->name);
			return;
		}
	}
	if (!P->failed)
		finish_kernel(P);
}

/* ---- linking calls ------------------------------------------------------------------ */

static void kunsup(struct ptx_kernel *k, const char *what, const char *name)
{
	if (k->unsupported[0])
		return;
	char b[256];
	snprintf(b, sizeof b, "%.120s%s%.120s", what, name ? " " : "", name ? name : "");
	size_t n = strlen(b);
	if (n >= sizeof k->unsupported)
		n = sizeof k->unsupported - 1; /* cut */
	memcpy(k->unsupported, b, n);
	k->unsupported[n] = 0;
}

static const struct {
	const char *name;
	uint8_t kind;
	uint8_t nargs; /* at least */
} externs[] = {
    {"vprintf", PC_VPRINTF, 2}, {"__assertfail", PC_ASSERTFAIL, 4},         {"malloc", PC_MALLOC, 1},
    {"free", PC_FREE, 1},       {"cudaGraphSetConditional", PC_SETCOND, 2},
};

/* Where a .func was placed in the kernel being linked. */
struct placed {
	uint32_t entry, regbase, localbase;
};

/* Appends .func f to k: its code after k's, its registers and local bytes
 * after k's, its call sites added to k's. */
static bool place(struct ptx_kernel *k, const struct ptx_kernel *f, struct placed *pl)
{
	uint64_t localbase = align_up(k->local_bytes, 16);
	if ((uint64_t)k->ninsns + f->ninsns > PTX_MAX_INSNS || (uint64_t)k->nregs + f->nregs > PTX_MAX_REGS ||
	    localbase + f->local_bytes > PTX_MAX_LOCAL || (uint64_t)k->ncalls + f->ncalls > PTX_MAX_INSNS) {
		kunsup(k, "calls beyond the interpreter's bounds:", f->name);
		return false;
	}
	struct ptx_insn *code = realloc(k->code, ((size_t)k->ninsns + f->ninsns) * sizeof *code);
	if (!code)
		return false;
	k->code = code;
	struct ptx_callsite *calls = realloc(k->calls, ((size_t)k->ncalls + f->ncalls + 1) * sizeof *calls);
	if (!calls)
		return false;
	k->calls = calls;
	for (uint32_t i = 0; i < f->ncalls; i++) {
		const struct ptx_callsite *c = &f->calls[i];
		struct ptx_callsite *d = &k->calls[k->ncalls + i];
		*d = (struct ptx_callsite){.nrets = c->nrets, .nargs = c->nargs};
		d->name = strdup(c->name);
		d->caller = malloc(((size_t)c->nrets + c->nargs + 1) * sizeof *d->caller);
		if (!d->name || !d->caller) {
			free(d->name);
			free(d->caller);
			k->ncalls += i;
			return false;
		}
		for (uint32_t j = 0; j < c->nrets + c->nargs; j++)
			d->caller[j] =
			    (struct ptx_pslot){c->caller[j].off + (uint32_t)localbase, c->caller[j].size};
	}
	pl->entry = k->ninsns;
	pl->regbase = k->nregs;
	pl->localbase = (uint32_t)localbase;
	for (uint32_t i = 0; i < f->ninsns; i++) {
		struct ptx_insn *in = &k->code[k->ninsns + i];
		*in = f->code[i];
		if (in->guard != PTX_NOREG)
			in->guard += pl->regbase;
		if (in->op == OP_CALL) {
			in->o[0].imm += k->ncalls;
			continue;
		}
		for (int j = 0; j < 6; j++) {
			struct ptx_opnd *o = &in->o[j];
			if (o->k == PO_REG || (o->k == PO_ADDR && o->r != PTX_NOREG))
				o->r += pl->regbase;
			else if (o->k == PO_VEC)
				for (int e = 0; e < o->n; e++)
					o->v[e] += pl->regbase;
			else if (o->k == PO_LABEL)
				o->imm += pl->entry;
			if (o->pad)
				o->imm += localbase;
		}
	}
	k->ninsns += f->ninsns;
	k->ncalls += f->ncalls;
	k->nregs += f->nregs;
	k->local_bytes = (uint32_t)align_up(localbase + f->local_bytes, 16);
	return true;
}

/* Resolves k's call sites (and its callees', transitively): each .func is
 * placed once per kernel, so recursion reuses its body. */
static void link_kernel(const struct ptx_module *m, struct ptx_kernel *k)
{
	struct placed *pl = malloc((m->nfuncs ? m->nfuncs : 1) * sizeof *pl);
	if (!pl) {
		kunsup(k, "calls (out of memory)", NULL);
		return;
	}
	for (uint32_t i = 0; i < m->nfuncs; i++)
		pl[i].entry = PTX_NOREG;
	for (uint32_t i = 0; i < k->ncalls && !k->unsupported[0]; i++) {
		struct ptx_callsite *cs = &k->calls[i];
		uint32_t fi = PTX_NOREG;
		for (uint32_t j = 0; j < m->nfuncs; j++)
			if (!strcmp(m->funcs[j].name, cs->name)) {
				fi = j;
				break;
			}
		if (fi == PTX_NOREG) {
			for (size_t e = 0; e < sizeof externs / sizeof *externs; e++)
				if (!strcmp(cs->name, externs[e].name)) {
					cs->kind = externs[e].kind;
					k->heap |= cs->kind == PC_MALLOC || cs->kind == PC_FREE;
					if (cs->nargs < externs[e].nargs)
						kunsup(k, "call arguments of", cs->name);
					fi = 0;
				}
			if (fi == PTX_NOREG)
				kunsup(k, "call to", cs->name);
			continue;
		}
		const struct ptx_kernel *f = &m->funcs[fi];
		if (f->unsupported[0]) {
			char b[sizeof k->unsupported];
			snprintf(b, sizeof b, "%.60s, in", f->unsupported);
			kunsup(k, b, f->name);
			break;
		}
		if (cs->nrets > f->nsigrets || cs->nargs != f->nsigargs) {
			kunsup(k, "call arguments of", cs->name);
			break;
		}
		if (pl[fi].entry == PTX_NOREG && !place(k, f, &pl[fi])) {
			kunsup(k, "calls (out of memory)", NULL);
			break;
		}
		cs = &k->calls[i]; /* place() moved the array */
		cs->kind = PC_FUNC;
		cs->entry = pl[fi].entry;
		cs->regbase = pl[fi].regbase;
		cs->nregs = f->nregs;
		cs->localbase = pl[fi].localbase;
		cs->localsize = f->local_bytes;
		cs->callee = malloc(((size_t)f->nsigrets + f->nsigargs + 1) * sizeof *cs->callee);
		if (!cs->callee) {
			kunsup(k, "calls (out of memory)", NULL);
			break;
		}
		/* The callee's rets the call site names, then all its args. */
		for (uint32_t j = 0; j < cs->nrets; j++)
			cs->callee[j] = (struct ptx_pslot){f->sig[j].off + cs->localbase, f->sig[j].size};
		for (uint32_t j = 0; j < cs->nargs; j++)
			cs->callee[cs->nrets + j] = (struct ptx_pslot){
			    f->sig[f->nsigrets + j].off + cs->localbase, f->sig[f->nsigrets + j].size};
	}
	/* Every slot inside the thread's local bytes, so that a call cannot
	 * reach past them. */
	for (uint32_t i = 0; i < k->ncalls && !k->unsupported[0]; i++) {
		const struct ptx_callsite *cs = &k->calls[i];
		for (uint32_t j = 0; j < cs->nrets + cs->nargs; j++) {
			const struct ptx_pslot *a = &cs->caller[j];
			const struct ptx_pslot *b = cs->callee ? &cs->callee[j] : a;
			if ((uint64_t)a->off + a->size > k->local_bytes ||
			    (uint64_t)b->off + b->size > k->local_bytes)
				kunsup(k, "call parameter outside local memory", NULL);
		}
	}
	free(pl);
}

static void free_kernel(struct ptx_kernel *k)
{
	free(k->name);
	free(k->code);
	free(k->fast);
	free(k->xregs);
	for (uint32_t i = 0; i < k->ncalls; i++) {
		free(k->calls[i].name);
		free(k->calls[i].caller);
		free(k->calls[i].callee);
	}
	free(k->calls);
	free(k->sig);
}

void ptx_free(struct ptx_module *m)
{
	if (!m)
		return;
	for (uint32_t i = 0; i < m->nkernels; i++)
		free_kernel(&m->kernels[i]);
	free(m->kernels);
	for (uint32_t i = 0; i < m->nfuncs; i++)
		free_kernel(&m->funcs[i]);
	free(m->funcs);
	free(m);
}

int ptx_parse(const char *text, size_t len, ptx_resolve_fn resolve, void *arg, struct ptx_module **out,
	      char *err, size_t errlen)
{
	*out = NULL;
	if (errlen)
		err[0] = 0;
	if (len > PTX_MAX_TEXT) {
		snprintf(err, errlen, "PTX text too large");
		return -1;
	}
	struct ptx_module *m = calloc(1, sizeof *m);
	if (!m) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	struct parser P = {
	    .p = text, .end = text + len, .err = err, .errlen = errlen, .resolve = resolve, .arg = arg};
	next(&P);
	while (!at_end(&P) && !P.failed) {
		const char *before = P.p;
		if (is(&P, "}") || is(&P, ")")) {
			next(&P);
			continue;
		}
		if (is(&P, ".version") || is(&P, ".address_size")) {
			next(&P);
			next(&P);
		} else if (is(&P, ".target")) {
			next(&P);
			next(&P);
			while (is(&P, ",")) {
				next(&P);
				next(&P);
			}
		} else if (is(&P, ".file") || is(&P, ".loc")) {
			skip_line(&P);
			next(&P);
		} else if (is(&P, ".section")) {
			while (!at_end(&P) && !is(&P, "{"))
				next(&P);
			skip_block(&P);
		} else if (is(&P, ".visible") || is(&P, ".extern") || is(&P, ".weak") || is(&P, ".common")) {
			next(&P);
		} else if (is(&P, ".entry")) {
			next(&P);
			parse_entry(&P, m, false);
		} else if (is(&P, ".func")) {
			/* Decoded for the kernels that call it; one it cannot
			 * read is skipped whole (its prototype, then a body or
			 * ';'), and calls to it are refused. */
			next(&P);
			struct parser saved = P;
			parse_entry(&P, m, true);
			if (P.failed) {
				if (m->nfuncs && P.k == &m->funcs[m->nfuncs - 1]) {
					free_kernel(P.k);
					m->nfuncs--;
				}
				P.k = NULL;
				reset_kernel_state(&P);
				/* The tables it grew stay; the lexer goes back. */
				P.p = saved.p;
				memcpy(P.tok, saved.tok, sizeof P.tok);
				P.len = saved.len;
				P.toolong = saved.toolong;
				P.failed = false;
				if (errlen)
					err[0] = 0;
				while (!at_end(&P) && !is(&P, "{") && !is(&P, ";"))
					next(&P);
				if (is(&P, "{"))
					skip_block(&P);
				else
					next(&P);
			}
			P.infunc = false;
		} else if (is(&P, ".shared")) {
			next(&P);
			parse_space_decl(&P, PS_SHARED, true);
		} else if (is(&P, ";")) {
			next(&P);
		} else
			skip_stmt(&P); /* .global, .const, .tex, .surf, .pragma, ... */
		if (P.p == before && !at_end(&P))
			next(&P); /* whatever it was, go past it */
	}
	P.k = NULL;
	reset_kernel_state(&P);
	for (uint32_t i = 0; i < P.nmsyms; i++)
		free(P.msyms[i].name);
	free(P.msyms);
	free(P.regs);
	free(P.syms);
	free(P.labels);
	free(P.fix);
	if (P.failed) {
		ptx_free(m);
		return -1;
	}
	for (uint32_t i = 0; i < m->nkernels; i++)
		if (m->kernels[i].ncalls && !m->kernels[i].unsupported[0])
			link_kernel(m, &m->kernels[i]);
	*out = m;
	return 0;
}

const struct ptx_kernel *ptx_find(const struct ptx_module *m, const char *name)
{
	for (uint32_t i = 0; m && i < m->nkernels; i++)
		if (!strcmp(m->kernels[i].name, name))
			return &m->kernels[i];
	return NULL;
}
