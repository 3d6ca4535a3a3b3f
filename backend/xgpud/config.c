/* SPDX-License-Identifier: Apache-2.0 */
/* config.c - reads xgpud's --config file: the bytes from disk, the syntax
 * through libxlutil (so the file means what it would mean to xl), and the
 * checks libxlutil cannot make: which settings exist, that none is set
 * twice with '=', and that every domain entry is a named, valid GPU spec. */
#include "config.h"
#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <libxlutil.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Far beyond any real configuration; stops `--config /dev/zero` early. */
#define CONFIG_MAX_BYTES (4u << 20)

static const char *const known_settings[] = {"policy", "tick_ms", "hyp_source", "domain"};
#define KNOWN_SETTINGS "policy, tick_ms, hyp_source, domain"

static int read_file(const char *path, char **data_r, size_t *len_r, struct xgpu_errbuf *e)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return xgpu_fail(e, "%s: cannot open: %s", path, strerror(errno));
	size_t cap = 4096, len = 0;
	char *data = malloc(cap);
	int rc = data ? 0 : xgpu_fail(e, "%s: out of memory", path);
	while (rc == 0) {
		if (len == cap) {
			char *bigger = realloc(data, cap * 2);
			if (!bigger) {
				rc = xgpu_fail(e, "%s: out of memory", path);
				break;
			}
			data = bigger;
			cap *= 2;
		}
		ssize_t n = read(fd, data + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			rc = xgpu_fail(e, "%s: cannot read: %s", path, strerror(errno));
		if (n <= 0)
			break;
		len += (size_t)n;
		if (len > CONFIG_MAX_BYTES)
			rc = xgpu_fail(e, "%s: larger than %u bytes; not a configuration file?", path,
				       CONFIG_MAX_BYTES);
	}
	close(fd);
	if (rc) {
		free(data);
		return rc;
	}
	*data_r = data;
	*len_r = len;
	return 0;
}

/* libxlutil prints its complaints (one per line, each already naming the
 * file and line) to a stream; they become one line of err. */
static void report_to_err(const char *report, const char *path, int xlu_rc, struct xgpu_errbuf *e)
{
	char msg[1024];
	size_t n = 0;
	for (const char *p = report; *p && n + 1 < sizeof msg;) {
		const char *nl = strchr(p, '\n');
		size_t l = nl ? (size_t)(nl - p) : strlen(p);
		if (l) {
			if (n)
				n += (size_t)snprintf(msg + n, sizeof msg - n, "; ");
			if (n + 1 < sizeof msg)
				n += (size_t)snprintf(msg + n, sizeof msg - n, "%.*s", (int)l, p);
		}
		if (!nl)
			break;
		p = nl + 1;
	}
	if (n > sizeof msg - 1)
		n = sizeof msg - 1;
	msg[n] = '\0';
	if (n)
		xgpu_fail(e, "%s", msg);
	else
		xgpu_fail(e, "%s: cannot parse: %s", path, strerror(xlu_rc));
}

static unsigned known_setting(const char *name, size_t len)
{
	unsigned k = 0;
	while (k < XGPU_ARRAY_SIZE(known_settings) &&
	       !(strlen(known_settings[k]) == len && !memcmp(known_settings[k], name, len)))
		k++;
	return k;
}

/* libxlutil cannot list the settings it read, so the names come from a scan
 * of the text. It runs only on text libxlutil accepted, where every
 * identifier outside strings and comments is a setting's name (values are
 * strings, numbers or lists of them, never identifiers), so a tokenizer that
 * skips strings, numbers and comments sees exactly the settings. */
static int check_settings(const char *path, const char *d, size_t n, struct xgpu_errbuf *e)
{
	unsigned first_line[XGPU_ARRAY_SIZE(known_settings)];
	memset(first_line, 0, sizeof first_line);
	unsigned line = 1;
	size_t i = 0;
	while (i < n) {
		char c = d[i];
		if (c == '\n') {
			line++;
			i++;
		} else if (c == '#') {
			while (i < n && d[i] != '\n')
				i++;
		} else if (c == '"' || c == '\'') {
			for (i++; i < n && d[i] != c; i++)
				if (d[i] == '\\')
					i++;
			i++;
		} else if (isdigit((unsigned char)c)) {
			while (i < n && (isalnum((unsigned char)d[i]) || d[i] == '.' || d[i] == '_'))
				i++;
		} else if (isalpha((unsigned char)c)) {
			size_t start = i;
			while (i < n && (isalnum((unsigned char)d[i]) || d[i] == '.' || d[i] == '_'))
				i++;
			size_t len = i - start;
			size_t j = i;
			while (j < n && (d[j] == ' ' || d[j] == '\t'))
				j++;
			bool assign = j < n && d[j] == '=';
			unsigned k = known_setting(d + start, len);
			if (k == XGPU_ARRAY_SIZE(known_settings))
				return xgpu_fail(e, "%s:%u: unknown setting '%.*s' (known: %s)", path, line,
						 (int)(len > 64 ? 64 : len), d + start, KNOWN_SETTINGS);
			/* A second '=' would silently replace what came before
			 * (xl lets the last one win); '+=' is how lists grow. */
			if (assign && first_line[k])
				return xgpu_fail(
				    e,
				    "%s:%u: '%s' is set again with '=' (first set on line %u; use += "
				    "to append)",
				    path, line, known_settings[k], first_line[k]);
			if (!first_line[k])
				first_line[k] = line;
		} else {
			i++;
		}
	}
	return 0;
}

static int get_policy(XLU_Config *cfg, const char *path, struct xgpud_config *out, struct xgpu_errbuf *e)
{
	const char *v;
	int r = xlu_cfg_get_string(cfg, "policy", &v, 1);
	if (r == ESRCH)
		return 0;
	if (r)
		return xgpu_fail(e, "%s: policy must be a string, e.g. policy = \"rr\"", path);
	size_t n = strlen(v);
	bool ok = n >= 1 && n < sizeof out->policy;
	for (const char *p = v; ok && *p; p++)
		ok = (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9');
	if (!ok)
		return xgpu_fail(e, "%s: policy=\"%s\": a policy name is 1 to %zu characters of a-z 0-9",
				 path, v, sizeof out->policy - 1);
	xgpu_strlcpy(out->policy, v, sizeof out->policy);
	return 0;
}

static int get_hyp_source(XLU_Config *cfg, const char *path, struct xgpud_config *out, struct xgpu_errbuf *e)
{
	const char *v;
	int r = xlu_cfg_get_string(cfg, "hyp_source", &v, 1);
	if (r == ESRCH)
		return 0;
	if (r)
		return xgpu_fail(e, "%s: hyp_source must be a string, e.g. hyp_source = \"local\"", path);
	size_t n = strlen(v);
	bool ok = n >= 1 && n < sizeof out->hyp_source;
	for (const char *p = v; ok && *p; p++)
		ok = isprint((unsigned char)*p);
	if (!ok)
		return xgpu_fail(e, "%s: hyp_source=\"%s\": hyp_source must be 1 to %zu printable characters",
				 path, v, sizeof out->hyp_source - 1);
	xgpu_strlcpy(out->hyp_source, v, sizeof out->hyp_source);
	return 0;
}

static int get_tick_ms(XLU_Config *cfg, const char *path, struct xgpud_config *out, struct xgpu_errbuf *e)
{
	const char *text;
	int r = xlu_cfg_get_string(cfg, "tick_ms", &text, 1);
	if (r == ESRCH)
		return 0;
	if (r)
		return xgpu_fail(e, "%s: tick_ms must be a number, e.g. tick_ms = 10", path);
	long v;
	if (xlu_cfg_get_long(cfg, "tick_ms", &v, 1) || v < 1 || v > 1000)
		return xgpu_fail(e, "%s: tick_ms=%s: tick_ms must be a whole number from 1 to 1000", path,
				 text);
	out->tick_ms = (unsigned)v;
	return 0;
}

static int get_domains(XLU_Config *cfg, const char *path, struct xgpud_config *out, struct xgpu_errbuf *e)
{
	XLU_ConfigList *list;
	int n;
	int r = xlu_cfg_get_list(cfg, "domain", &list, &n, 1);
	if (r == ESRCH)
		return 0;
	if (r)
		return xgpu_fail(
		    e, "%s: domain must be a list of strings, e.g. domain = [ \"name=a, credit=512\" ]",
		    path);
	if (n <= 0)
		return 0;
	out->domains = calloc((size_t)n, sizeof *out->domains);
	if (!out->domains)
		return xgpu_fail(e, "%s: out of memory for %d domain entries", path, n);
	char msg[512];
	for (int i = 0; i < n; i++) {
		const char *item = xlu_cfg_get_listitem(list, i);
		if (!item)
			return xgpu_fail(e, "%s: domain[%d] is a list; each domain entry is a string", path,
					 i);
		struct xgpu_gpuspec *s = &out->domains[i];
		if (xgpu_gpuspec_parse(item, XGPU_GPUSPEC_ALLOW_NAME, s, msg, sizeof msg))
			return xgpu_fail(e, "%s: domain[%d]: %s", path, i, msg);
		if (!s->name[0])
			return xgpu_fail(
			    e, "%s: domain[%d] \"%s\": no name= (every domain entry names its domain)", path,
			    i, item);
		/* Quadratic, but only at startup and over at most a few thousand
		 * entries; it reports duplicates in file order. */
		for (int j = 0; j < i; j++)
			if (!strcmp(out->domains[j].name, s->name))
				return xgpu_fail(e, "%s: domain[%d]: name '%s' is already used by domain[%d]",
						 path, i, s->name, j);
		out->ndomains = (unsigned)i + 1;
	}
	return 0;
}

int xgpud_config_load(const char *path, struct xgpud_config *out, char *err, size_t errlen)
{
	struct xgpu_errbuf e = {err, errlen};
	memset(out, 0, sizeof *out);
	if (err && errlen)
		err[0] = '\0';

	char *data = NULL;
	size_t len = 0;
	if (read_file(path, &data, &len, &e))
		return -1;
	/* libxlutil asserts (aborts the daemon) on a NUL inside a string. */
	const char *nul = memchr(data, '\0', len);
	if (nul) {
		unsigned line = 1;
		for (const char *p = data; p < nul; p++)
			line += *p == '\n';
		free(data);
		return xgpu_fail(&e, "%s:%u: contains a NUL byte; not a text file?", path, line);
	}

	char *report = NULL;
	size_t report_len = 0;
	FILE *rf = open_memstream(&report, &report_len);
	XLU_Config *cfg = rf ? xlu_cfg_init(rf, path) : NULL;
	int rc = 0;
	if (!cfg) {
		rc = xgpu_fail(&e, "%s: out of memory", path);
	} else {
		int xr = xlu_cfg_readdata(cfg, data, (int)len);
		if (xr) {
			fflush(rf);
			report_to_err(report ? report : "", path, xr, &e);
			rc = -1;
		}
	}
	if (rc == 0)
		rc = check_settings(path, data, len, &e);
	if (rc == 0)
		rc = get_policy(cfg, path, out, &e);
	if (rc == 0)
		rc = get_tick_ms(cfg, path, out, &e);
	if (rc == 0)
		rc = get_hyp_source(cfg, path, out, &e);
	if (rc == 0)
		rc = get_domains(cfg, path, out, &e);

	if (cfg)
		xlu_cfg_destroy(cfg);
	if (rf)
		fclose(rf);
	free(report);
	free(data);
	if (rc)
		xgpud_config_free(out);
	return rc;
}

void xgpud_config_free(struct xgpud_config *c)
{
	free(c->domains);
	memset(c, 0, sizeof *c);
}

const struct xgpu_gpuspec *xgpud_config_domain(const struct xgpud_config *c, const char *name)
{
	for (unsigned i = 0; i < c->ndomains; i++)
		if (!strcmp(c->domains[i].name, name))
			return &c->domains[i];
	return NULL;
}
