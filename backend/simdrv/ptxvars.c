/* SPDX-License-Identifier: Apache-2.0 */
/* ptxvars.c - device variables of modules that carry only PTX (no cubin for
 * the device), read from the PTX text's module-scope declarations:
 *
 *   .visible .global .align 4 .u32 dev_counter;
 *   .global .align 4 .b8 dev_table[16] = {0, 0, 128, 63, ...};
 *   .const .align 4 .f32 dev_scale = 0f40200000;
 *
 * Sizes come from the type, vector width and array dimensions; initial
 * values from the initializer (integers, 0f / 0d hex floats, decimal floats;
 * address initializers such as generic(x) read as 0). .extern declarations
 * define nothing and are skipped, as are function bodies. The text is
 * untrusted: every read is bounded by its length and sizes are capped.
 */
#include "simdrv_int.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define PTX_MAX_TOKEN 256
#define PTX_MAX_INIT (64u << 20) /* bytes of initial value kept per variable */
#define PTX_MAX_VAR (1ull << 40)
/* Brace levels of an initializer: one per array dimension plus one for a
 * vector, so real PTX uses a handful. The parser recurses per level, so a
 * bound keeps hostile text from exhausting the calling thread's stack. */
#define PTX_MAX_NEST 64

struct lex {
	const char *p, *end;
	char tok[PTX_MAX_TOKEN];
	size_t len; /* 0 at the end of the text */
	bool bad;   /* text we refuse outright (PTX_MAX_NEST exceeded) */
};

static void skip_space(struct lex *l)
{
	for (;;) {
		while (l->p < l->end && isspace((unsigned char)*l->p))
			l->p++;
		if (l->end - l->p >= 2 && l->p[0] == '/' && l->p[1] == '/') {
			while (l->p < l->end && *l->p != '\n')
				l->p++;
		} else if (l->end - l->p >= 2 && l->p[0] == '/' && l->p[1] == '*') {
			l->p += 2;
			while (l->end - l->p >= 2 && !(l->p[0] == '*' && l->p[1] == '/'))
				l->p++;
			l->p = l->end - l->p >= 2 ? l->p + 2 : l->end;
		} else
			return;
	}
}

static bool word_char(char c)
{
	return isalnum((unsigned char)c) || c == '_' || c == '$' || c == '.' || c == '%';
}

/* Next token: a word (directive, name, number) or one punctuation mark;
 * strings are skipped whole. */
static void next(struct lex *l)
{
	skip_space(l);
	l->len = 0;
	if (l->p >= l->end || !*l->p) {
		l->p = l->end;
		return;
	}
	const char *s = l->p;
	if (*s == '"') {
		for (l->p++; l->p < l->end && *l->p != '"'; l->p++)
			;
		l->p = l->p < l->end ? l->p + 1 : l->end;
	} else if (word_char(*s))
		while (l->p < l->end && word_char(*l->p))
			l->p++;
	else
		l->p++;
	size_t n = (size_t)(l->p - s);
	if (n >= PTX_MAX_TOKEN)
		n = PTX_MAX_TOKEN - 1;
	memcpy(l->tok, s, n);
	l->tok[n] = 0;
	l->len = n ? n : 1;
}

static bool is(const struct lex *l, const char *t)
{
	return l->len && !strcmp(l->tok, t);
}

/* Skips the rest of a statement: to its ';', or over a body in braces. */
static void skip_statement(struct lex *l)
{
	int depth = 0;
	for (; l->len; next(l)) {
		if (is(l, "{"))
			depth++;
		else if (is(l, "}")) {
			if (--depth <= 0) {
				next(l);
				return;
			}
		} else if (is(l, ";") && depth == 0) {
			next(l);
			return;
		}
	}
}

static unsigned type_size(const char *t)
{
	static const struct {
		const char *name;
		unsigned size;
	} types[] = {{".b8", 1},    {".u8", 1},   {".s8", 1},  {".b16", 2}, {".u16", 2}, {".s16", 2},
		     {".f16", 2},   {".bf16", 2}, {".b32", 4}, {".u32", 4}, {".s32", 4}, {".f32", 4},
		     {".f16x2", 4}, {".b64", 8},  {".u64", 8}, {".s64", 8}, {".f64", 8}};
	for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
		if (!strcmp(t, types[i].name))
			return types[i].size;
	return 0;
}

/* The bits of one initializer value for an element of size bytes. */
static uint64_t literal(const char *t, bool neg, unsigned size, bool is_float)
{
	uint64_t v = 0;
	if ((t[0] == '0' && (t[1] == 'f' || t[1] == 'F')) || (t[0] == '0' && (t[1] == 'd' || t[1] == 'D')))
		v = strtoull(t + 2, NULL, 16); /* raw IEEE bits */
	else if (is_float || strchr(t, '.') || ((strchr(t, 'e') || strchr(t, 'E')) && !strchr(t, 'x'))) {
		double d = strtod(t, NULL);
		if (neg)
			d = -d;
		neg = false;
		if (size == 4) {
			float f = (float)d;
			uint32_t b;
			memcpy(&b, &f, 4);
			v = b;
		} else if (size == 8)
			memcpy(&v, &d, 8);
	} else
		v = strtoull(t, NULL, 0);
	return neg ? (uint64_t)0 - v : v;
}

/* Parses an initializer (a value or nested braces of values) into buf,
 * element by element; *k counts the scalar values seen. depth is the number
 * of braces already open. */
static void parse_init(struct lex *l, uint8_t *buf, uint64_t nelem, unsigned esize, bool is_float,
		       uint64_t *k, unsigned depth)
{
	if (is(l, "{")) {
		if (depth >= PTX_MAX_NEST) {
			l->bad = true;
			return;
		}
		for (next(l); l->len && !is(l, "}") && !l->bad;) {
			if (is(l, ","))
				next(l);
			else if (is(l, ";"))
				return;
			else
				parse_init(l, buf, nelem, esize, is_float, k, depth + 1);
		}
		if (l->bad)
			return;
		if (is(l, "}"))
			next(l);
		return;
	}
	bool neg = false;
	if (is(l, "-")) {
		neg = true;
		next(l);
	}
	uint64_t v = 0;
	if (l->len && isdigit((unsigned char)l->tok[0]))
		v = literal(l->tok, neg, esize, is_float);
	else if (l->len && (isalpha((unsigned char)l->tok[0]) || l->tok[0] == '_')) {
		/* An address (name, generic(name), name+offset): unknown here. */
		next(l);
		if (is(l, "(")) {
			while (l->len && !is(l, ")"))
				next(l);
		} else
			while (is(l, "+") || (l->len && isdigit((unsigned char)l->tok[0])))
				next(l);
	}
	if (*k < nelem)
		memcpy(buf + *k * esize, &v, esize); /* little-endian host, as the GPU */
	(*k)++;
	if (l->len && !is(l, ",") && !is(l, "}") && !is(l, ";"))
		next(l);
}

/* Parses a declaration after its state space (.global / .const). */
static int parse_var(struct lex *l, struct sim_cubin *out)
{
	unsigned vec = 1, esize = 0;
	bool is_float = false, managed = false;
	for (; l->len && l->tok[0] == '.'; next(l)) {
		if (is(l, ".align")) {
			next(l);
			continue;
		}
		if (is(l, ".attribute")) { /* .attribute(.managed): a __managed__ variable */
			next(l);
			if (!is(l, "("))
				return -1;
			for (next(l); l->len && !is(l, ")"); next(l))
				managed |= is(l, ".managed");
			if (!is(l, ")"))
				return -1;
			continue;
		}
		if (is(l, ".v2") || is(l, ".v4") || is(l, ".v8")) {
			vec = (unsigned)(l->tok[2] - '0');
			continue;
		}
		unsigned s = type_size(l->tok);
		if (s) {
			esize = s;
			is_float = l->tok[1] == 'f';
		}
	}
	if (!esize || !l->len || !(isalpha((unsigned char)l->tok[0]) || l->tok[0] == '_' || l->tok[0] == '$'))
		return -1;
	char name[PTX_MAX_TOKEN];
	memcpy(name, l->tok, l->len + 1);
	next(l);
	/* Scalars per element of the outermost dimension: the vector width
	 * times every sized dimension (an unsized one takes its length from
	 * the initializer). */
	uint64_t count = vec;
	bool unsized = false;
	while (is(l, "[")) {
		next(l);
		if (is(l, "]"))
			unsized = true;
		else {
			uint64_t d = strtoull(l->tok, NULL, 0);
			if (!d || count > PTX_MAX_VAR / d)
				return -1;
			count *= d;
			next(l);
		}
		if (!is(l, "]"))
			return -1;
		next(l);
	}
	uint64_t size = count * esize;
	uint8_t *init = NULL;
	uint64_t init_len = 0;
	if (is(l, "=")) {
		next(l);
		/* An unsized array takes its length from the initializer: parse
		 * into a buffer of the cap, then trim. */
		uint64_t cap = unsized ? PTX_MAX_INIT : size;
		if (cap > PTX_MAX_INIT || !cap)
			return -1;
		init = calloc(1, (size_t)cap);
		if (!init)
			return -1;
		uint64_t k = 0;
		parse_init(l, init, cap / esize, esize, is_float, &k, 0);
		if (l->bad) {
			free(init);
			return -1;
		}
		uint64_t kept = k < cap / esize ? k : cap / esize; /* scalars in init */
		init_len = kept * esize;
		if (unsized) {
			/* k counts scalars, vector components included: whole
			 * outer elements of count scalars each, the last one
			 * completed with zeroes. */
			size = (kept + count - 1) / count * count * esize;
			if (init_len < cap) {
				uint8_t *trimmed = realloc(init, init_len ? (size_t)init_len : 1);
				if (trimmed)
					init = trimmed;
			}
		}
	}
	if (!is(l, ";") || !size || out->nvars >= SIM_MAX_MODULE_VARS) {
		free(init);
		return -1;
	}
	struct sim_cubin_var *nv = realloc(out->vars, (out->nvars + 1) * sizeof *nv);
	char *dup = strdup(name);
	if (!nv || !dup) {
		if (nv)
			out->vars = nv;
		free(dup);
		free(init);
		return -1;
	}
	out->vars = nv;
	out->vars[out->nvars++] = (struct sim_cubin_var){dup, size, init, init_len, init, managed};
	return 0;
}

int sim_ptx_vars(const char *ptx, size_t len, struct sim_cubin *out)
{
	struct lex l = {ptx, ptx + len, {0}, 0, false};
	next(&l);
	while (l.len) {
		/* Directives that end at the end of their line, with no ';'. */
		if (is(&l, ".version") || is(&l, ".target") || is(&l, ".address_size") || is(&l, ".file")) {
			while (l.p < l.end && *l.p != '\n')
				l.p++;
			next(&l);
			continue;
		}
		bool ext = false;
		while (is(&l, ".visible") || is(&l, ".weak") || is(&l, ".extern") || is(&l, ".common")) {
			ext |= is(&l, ".extern");
			next(&l);
		}
		if (!ext && (is(&l, ".global") || is(&l, ".const"))) {
			next(&l);
			if (parse_var(&l, out) == 0) {
				next(&l); /* the ';' */
				continue;
			}
			if (l.bad)
				return -1;
		}
		skip_statement(&l);
	}
	return 0;
}
