/* SPDX-License-Identifier: Apache-2.0 */
/* gpuspec.c - the GPU spec parser and canonical formatter: the one place that
 * decides what a `gpu = [ "..." ]` entry (and an xgpud.conf domain entry) may
 * say and how each mistake is reported. */
#include "gpuspec.h"
#include "util.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KNOWN_KEYS "gpus, credit, sla, mem, kernel-timeout, task.<id>"

/* Decimal digits only: no sign, blank or base prefix, which strtoul would
 * let through and which a typo is more likely to produce than intent. */
static int parse_dec(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	if (!*s)
		return -1;
	uint64_t v = 0;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return -1;
		unsigned d = (unsigned)(*s - '0');
		if (d > max || v > (max - d) / 10)
			return -1;
		v = v * 10 + d;
	}
	if (v < min)
		return -1;
	*out = v;
	return 0;
}

static char *trim(char *s)
{
	while (isspace((unsigned char)*s))
		s++;
	size_t n = strlen(s);
	while (n && isspace((unsigned char)s[n - 1]))
		s[--n] = '\0';
	return s;
}

static int parse_gpus(const char *v, uint64_t *out)
{
	if (!strcmp(v, "all")) {
		*out = UINT64_MAX;
		return 0;
	}
	uint64_t mask = 0;
	const char *p = v;
	for (;;) {
		const char *end = strchr(p, ':');
		size_t n = end ? (size_t)(end - p) : strlen(p);
		char elem[32];
		if (n == 0 || n >= sizeof elem)
			return -1;
		memcpy(elem, p, n);
		elem[n] = '\0';
		char *dash = strchr(elem, '-');
		uint64_t lo, hi;
		if (dash) {
			*dash = '\0';
			if (parse_dec(elem, 0, 63, &lo) || parse_dec(dash + 1, 0, 63, &hi) || lo > hi)
				return -1;
		} else {
			if (parse_dec(elem, 0, 63, &lo))
				return -1;
			hi = lo;
		}
		for (uint64_t i = lo; i <= hi; i++)
			mask |= 1ull << i;
		if (!end)
			break;
		p = end + 1;
	}
	*out = mask;
	return 0;
}

/* A plain decimal (exponent allowed, since the formatter may write one for
 * tiny values); strtod alone would also take "nan", "inf", hex and blanks. */
static int parse_sla(const char *v, double *out)
{
	const char *p = v;
	unsigned digits = 0;
	while (isdigit((unsigned char)*p)) {
		p++;
		digits++;
	}
	if (*p == '.') {
		p++;
		while (isdigit((unsigned char)*p)) {
			p++;
			digits++;
		}
	}
	if (!digits)
		return -1;
	if (*p == 'e' || *p == 'E') {
		p++;
		if (*p == '+' || *p == '-')
			p++;
		if (!isdigit((unsigned char)*p))
			return -1;
		while (isdigit((unsigned char)*p))
			p++;
	}
	if (*p)
		return -1;
	char *end;
	double d = strtod(v, &end);
	if (*end || !(d >= 0.0 && d <= 1.0))
		return -1;
	*out = d;
	return 0;
}

static bool name_ok(const char *v)
{
	size_t n = strlen(v);
	if (n < 1 || n > XGPU_GPUSPEC_NAME_MAX)
		return false;
	for (; *v; v++)
		if (!isalnum((unsigned char)*v) && !strchr("_.:-", *v))
			return false;
	return true;
}

/* HOST, HOST:PORT or [V6]:PORT: what a resolver and a port number accept,
 * nothing a shell or a xenstore path would read otherwise. */
static bool remote_ok(const char *v)
{
	size_t n = strlen(v);
	if (n < 1 || n > XGPU_GPUSPEC_REMOTE_MAX)
		return false;
	for (const char *c = v; *c; c++)
		if (!isalnum((unsigned char)*c) && !strchr(".-:[]", *c))
			return false;
	const char *port = v[0] == '[' ? strchr(v, ']') : strrchr(v, ':');
	if (v[0] == '[') {
		if (!port || port == v + 1 || (port[1] && port[1] != ':'))
			return false;
		port = port[1] ? port + 1 : NULL;
	} else if (port && (port == v || strchr(v, ':') != port || strchr(v, '[') || strchr(v, ']'))) {
		/* An IPv6 address needs its brackets: "fd00::5" has no port. */
		return false;
	}
	uint64_t u;
	return !port || parse_dec(port + 1, 1, 65535, &u) == 0;
}

static int parse_item(char *key, char *val, unsigned flags, struct xgpu_gpuspec *s, struct xgpu_errbuf *e)
{
	uint64_t u;
	if (!strcmp(key, "gpus")) {
		if (s->has_gpus)
			return xgpu_fail(e, "gpus=%s: key 'gpus' given twice", val);
		if (parse_gpus(val, &s->gpus))
			return xgpu_fail(
			    e,
			    "gpus=%s: gpus must be 'all' or GPU indexes from 0 to 63, single or as "
			    "ranges I-J with I <= J, joined with ':' (e.g. 0:2-3)",
			    val);
		s->has_gpus = true;
	} else if (!strcmp(key, "credit")) {
		if (s->has_credit)
			return xgpu_fail(e, "credit=%s: key 'credit' given twice", val);
		if (parse_dec(val, 1, XGPU_GPUSPEC_CREDIT_MAX, &u))
			return xgpu_fail(e, "credit=%s: credit must be a whole number from 1 to %u", val,
					 XGPU_GPUSPEC_CREDIT_MAX);
		s->credit = (uint32_t)u;
		s->has_credit = true;
	} else if (!strcmp(key, "sla")) {
		if (s->has_sla)
			return xgpu_fail(e, "sla=%s: key 'sla' given twice", val);
		if (parse_sla(val, &s->sla))
			return xgpu_fail(e, "sla=%s: sla must be a number from 0 to 1 (e.g. 0.5)", val);
		s->has_sla = true;
	} else if (!strcmp(key, "mem")) {
		if (s->has_mem)
			return xgpu_fail(e, "mem=%s: key 'mem' given twice", val);
		/* xgpu_parse_size skips leading blanks and signs itself; a value
		 * starting with anything but a digit is junk here. */
		if (!isdigit((unsigned char)val[0]) || xgpu_parse_size(val, &u) || u < XGPU_GPUSPEC_MEM_MIN ||
		    u > XGPU_GPUSPEC_MEM_MAX)
			return xgpu_fail(
			    e,
			    "mem=%s: mem must be a size from 1M to 1024T (K, M, G, T are binary units, "
			    "e.g. 4G)",
			    val);
		s->mem = u;
		s->has_mem = true;
	} else if (!strcmp(key, "kernel-timeout")) {
		if (s->has_ktimeout)
			return xgpu_fail(e, "kernel-timeout=%s: key 'kernel-timeout' given twice", val);
		if (parse_dec(val, 0, XGPU_GPUSPEC_KTIMEOUT_MAX, &u))
			return xgpu_fail(
			    e,
			    "kernel-timeout=%s: kernel-timeout must be a whole number of seconds "
			    "from 0 (none) to %u",
			    val, XGPU_GPUSPEC_KTIMEOUT_MAX);
		s->ktimeout = (uint32_t)u;
		s->has_ktimeout = true;
	} else if (!strncmp(key, "task.", 5)) {
		uint64_t id, w;
		if (parse_dec(key + 5, 0, UINT32_MAX, &id))
			return xgpu_fail(
			    e, "%s=%s: the task id in task.<id> must be a whole number from 0 to %u", key,
			    val, UINT32_MAX);
		for (unsigned i = 0; i < s->ntasks; i++)
			if (s->tasks[i].task == id)
				return xgpu_fail(e, "%s=%s: key '%s' given twice", key, val, key);
		if (parse_dec(val, 1, XGPU_GPUSPEC_WEIGHT_MAX, &w))
			return xgpu_fail(e, "%s=%s: a task weight must be a whole number from 1 to %u", key,
					 val, XGPU_GPUSPEC_WEIGHT_MAX);
		if (s->ntasks == XGPU_GPUSPEC_TASKS)
			return xgpu_fail(e, "%s=%s: too many task weights (at most %d)", key, val,
					 XGPU_GPUSPEC_TASKS);
		s->tasks[s->ntasks].task = (uint32_t)id;
		s->tasks[s->ntasks].weight = (uint32_t)w;
		s->ntasks++;
	} else if (!strcmp(key, "name") && (flags & XGPU_GPUSPEC_ALLOW_NAME)) {
		if (s->name[0])
			return xgpu_fail(e, "name=%s: key 'name' given twice", val);
		if (!name_ok(val))
			return xgpu_fail(e, "name=%s: name must be 1 to %d characters of A-Z a-z 0-9 _ . : -",
					 val, XGPU_GPUSPEC_NAME_MAX);
		xgpu_strlcpy(s->name, val, sizeof s->name);
	} else if (!strcmp(key, "remote") && (flags & XGPU_GPUSPEC_ALLOW_REMOTE)) {
		if (s->remote[0])
			return xgpu_fail(e, "remote=%s: key 'remote' given twice", val);
		if (!remote_ok(val))
			return xgpu_fail(e,
					 "remote=%s: remote must be HOST, HOST:PORT or [IPV6]:PORT (a port "
					 "from 1 to 65535)",
					 val);
		xgpu_strlcpy(s->remote, val, sizeof s->remote);
	} else if (!strcmp(key, "remote-key") && (flags & XGPU_GPUSPEC_ALLOW_REMOTE)) {
		if (s->remote_key[0])
			return xgpu_fail(e, "remote-key=%s: key 'remote-key' given twice", val);
		if (val[0] != '/' || strlen(val) > XGPU_GPUSPEC_PATH_MAX)
			return xgpu_fail(e,
					 "remote-key=%s: remote-key must be an absolute path of at most %d "
					 "characters",
					 val, XGPU_GPUSPEC_PATH_MAX);
		xgpu_strlcpy(s->remote_key, val, sizeof s->remote_key);
	} else if ((!strcmp(key, "remote-cert") || !strcmp(key, "remote-cert-key") ||
		    !strcmp(key, "remote-ca")) &&
		   (flags & XGPU_GPUSPEC_ALLOW_REMOTE)) {
		char *dst = !strcmp(key, "remote-cert")       ? s->remote_cert
			    : !strcmp(key, "remote-cert-key") ? s->remote_cert_key
							      : s->remote_ca;
		if (dst[0])
			return xgpu_fail(e, "%s=%s: key '%s' given twice", key, val, key);
		if (val[0] != '/' || strlen(val) > XGPU_GPUSPEC_PATH_MAX)
			return xgpu_fail(e, "%s=%s: %s must be an absolute path of at most %d characters",
					 key, val, key, XGPU_GPUSPEC_PATH_MAX);
		xgpu_strlcpy(dst, val, XGPU_GPUSPEC_PATH_MAX + 1);
	} else {
		return xgpu_fail(e, "unknown key '%s' (known: %s%s%s)", key, KNOWN_KEYS,
				 (flags & XGPU_GPUSPEC_ALLOW_NAME) ? ", name" : "",
				 (flags & XGPU_GPUSPEC_ALLOW_REMOTE)
				     ? ", remote, remote-key, remote-cert, remote-cert-key, remote-ca"
				     : "");
	}
	return 0;
}

int xgpu_gpuspec_parse(const char *text, unsigned flags, struct xgpu_gpuspec *out, char *err, size_t errlen)
{
	struct xgpu_errbuf e = {err, errlen};
	struct xgpu_gpuspec s;
	memset(&s, 0, sizeof s);
	memset(out, 0, sizeof *out);
	if (err && errlen)
		err[0] = '\0';
	if (!text)
		return xgpu_fail(&e, "no GPU spec given");

	char *copy = strdup(text);
	if (!copy)
		return xgpu_fail(&e, "out of memory parsing '%s'", text);
	int rc = 0;
	/* A blank spec is a valid one that sets nothing, as `vif = [ "" ]` is
	 * a default NIC to xl. */
	if (*trim(copy)) {
		char *p = copy;
		for (unsigned n = 1; rc == 0; n++) {
			char *comma = strchr(p, ',');
			if (comma)
				*comma = '\0';
			char *item = trim(p);
			char *eq = strchr(item, '=');
			if (!*item) {
				rc = xgpu_fail(
				    &e,
				    "empty item %u in '%s' (items are key=value, separated by single commas)",
				    n, text);
			} else if (!eq) {
				rc = xgpu_fail(&e, "item '%s' is not key=value", item);
			} else {
				*eq = '\0';
				char *key = trim(item), *val = trim(eq + 1);
				if (!*key)
					rc = xgpu_fail(&e, "item '=%s' has no key", val);
				else
					rc = parse_item(key, val, flags, &s, &e);
			}
			if (!comma)
				break;
			p = comma + 1;
		}
	}
	free(copy);
	/* A remote GPU without its key would be plain TCP, which only an
	 * operator's explicit test setting may ask for; a key alone is a typo. */
	bool cert = s.remote_cert[0] || s.remote_cert_key[0] || s.remote_ca[0];
	bool all_cert = s.remote_cert[0] && s.remote_cert_key[0] && s.remote_ca[0];
	if (rc == 0 && cert && !all_cert)
		rc = xgpu_fail(&e, "remote-cert=, remote-cert-key= and remote-ca= go together (the domain's "
				   "certificate, its key, and the CA that signed the GPU host's)");
	else if (rc == 0 && cert && s.remote_key[0])
		rc = xgpu_fail(&e,
			       "remote-key=%s and remote-cert=%s: a remote GPU takes a pre-shared key or "
			       "certificates, not both",
			       s.remote_key, s.remote_cert);
	else if (rc == 0 && !s.remote[0] != !(s.remote_key[0] || cert))
		rc = xgpu_fail(&e,
			       s.remote[0]
				   ? "remote=%s needs remote-key=FILE, the GPU host's pre-shared key, or "
				     "remote-cert=, remote-cert-key= and remote-ca="
				   : "remote-key=%s or remote-cert= is given without remote=HOST:PORT",
			       s.remote[0] ? s.remote : s.remote_key);
	if (rc == 0)
		*out = s;
	return rc;
}

struct sbuf {
	char *buf;
	size_t len, n;
};

__attribute__((format(printf, 2, 3))) static void put(struct sbuf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int r =
	    b->n < b->len ? vsnprintf(b->buf + b->n, b->len - b->n, fmt, ap) : vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (r > 0)
		b->n += (size_t)r;
}

static void sep(struct sbuf *b)
{
	if (b->n)
		put(b, ", ");
}

static void put_gpus(struct sbuf *b, uint64_t mask)
{
	if (mask == UINT64_MAX) {
		put(b, "all");
		return;
	}
	bool first = true;
	for (unsigned i = 0; i < 64; i++) {
		if (!(mask >> i & 1))
			continue;
		unsigned j = i;
		while (j + 1 < 64 && (mask >> (j + 1) & 1))
			j++;
		put(b, first ? "" : ":");
		if (j == i)
			put(b, "%u", i);
		else
			put(b, "%u-%u", i, j);
		first = false;
		i = j;
	}
}

static void put_mem(struct sbuf *b, uint64_t mem)
{
	static const char units[] = "TGMK";
	for (unsigned k = 0; k < 4; k++) {
		unsigned shift = 40 - 10 * k;
		if (mem && mem % (1ull << shift) == 0) {
			put(b, "%llu%c", (unsigned long long)(mem >> shift), units[k]);
			return;
		}
	}
	put(b, "%llu", (unsigned long long)mem);
}

/* The shortest text that reads back as the same double, so the canonical
 * form is both short (0.5) and exact. */
static void put_sla(struct sbuf *b, double v)
{
	char t[40];
	for (int prec = 1; prec <= 17; prec++) {
		snprintf(t, sizeof t, "%.*g", prec, v);
		if (strtod(t, NULL) == v)
			break;
	}
	put(b, "%s", t);
}

int xgpu_gpuspec_format(const struct xgpu_gpuspec *s, char *buf, size_t len)
{
	struct sbuf b = {buf, len, 0};
	if (buf && len)
		buf[0] = '\0';
	else
		b.len = 0;
	if (s->name[0]) {
		sep(&b);
		put(&b, "name=%s", s->name);
	}
	/* No GPU at all has no spelling; such a spec only comes from code. */
	if (s->has_gpus && s->gpus) {
		sep(&b);
		put(&b, "gpus=");
		put_gpus(&b, s->gpus);
	}
	if (s->has_credit) {
		sep(&b);
		put(&b, "credit=%u", s->credit);
	}
	if (s->has_sla) {
		sep(&b);
		put(&b, "sla=");
		put_sla(&b, s->sla);
	}
	if (s->has_mem) {
		sep(&b);
		put(&b, "mem=");
		put_mem(&b, s->mem);
	}
	if (s->has_ktimeout) {
		sep(&b);
		put(&b, "kernel-timeout=%u", s->ktimeout);
	}
	if (s->remote[0]) {
		sep(&b);
		put(&b, "remote=%s", s->remote);
	}
	if (s->remote_key[0]) {
		sep(&b);
		put(&b, "remote-key=%s", s->remote_key);
	}
	if (s->remote_cert[0]) {
		sep(&b);
		put(&b, "remote-cert=%s, remote-cert-key=%s, remote-ca=%s", s->remote_cert,
		    s->remote_cert_key, s->remote_ca);
	}
	unsigned n = s->ntasks < XGPU_GPUSPEC_TASKS ? s->ntasks : XGPU_GPUSPEC_TASKS;
	unsigned order[XGPU_GPUSPEC_TASKS];
	for (unsigned i = 0; i < n; i++) {
		unsigned j = i;
		while (j > 0 && s->tasks[order[j - 1]].task > s->tasks[i].task) {
			order[j] = order[j - 1];
			j--;
		}
		order[j] = i;
	}
	for (unsigned i = 0; i < n; i++) {
		sep(&b);
		put(&b, "task.%u=%u", s->tasks[order[i]].task, s->tasks[order[i]].weight);
	}
	return b.n > INT32_MAX ? INT32_MAX : (int)b.n;
}
