/* SPDX-License-Identifier: Apache-2.0 */
/* cuda_enums.h - test helper: reads an enum's enumerators out of the installed
 * CUDA headers, so tests can check our hand-written tables against every
 * enumerator the toolkit has (and fail when a new CUDA adds one).
 *
 * The headers are found in $CUDA_HOME/include, default /usr/local/cuda, the
 * same toolkit the Makefile compiles against.
 */
#ifndef XGPU_TEST_CUDA_ENUMS_H
#define XGPU_TEST_CUDA_ENUMS_H

#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct cuda_enumerator {
	char name[96];
	long value;
};

static inline char *cuda_enums_read_header(const char *header)
{
	const char *home = getenv("CUDA_HOME");
	char path[1024];
	snprintf(path, sizeof(path), "%s/include/%s", home && *home ? home : "/usr/local/cuda", header);
	FILE *f = fopen(path, "rb");
	if (!f) {
		fprintf(stderr, "cuda_enums: cannot open %s\n", path);
		return NULL;
	}
	size_t cap = 1 << 20, len = 0;
	char *buf = malloc(cap + 1);
	size_t n;
	while (buf && (n = fread(buf + len, 1, cap - len, f)) > 0) {
		len += n;
		if (len == cap) {
			char *bigger = realloc(buf, cap * 2 + 1);
			if (!bigger) {
				free(buf);
				buf = NULL;
				break;
			}
			buf = bigger;
			cap *= 2;
		}
	}
	fclose(f);
	if (buf)
		buf[len] = '\0';
	return buf;
}

/* Blanks out comments and preprocessor lines in place. */
static inline void cuda_enums_strip(char *s)
{
	bool line_start = true;
	for (char *p = s; *p; p++) {
		if (p[0] == '/' && p[1] == '*') {
			char *e = strstr(p + 2, "*/");
			char *end = e ? e + 2 : p + strlen(p);
			for (; p < end; p++)
				if (*p != '\n')
					*p = ' ';
			p--;
			continue;
		}
		if ((p[0] == '/' && p[1] == '/') || (line_start && *p == '#')) {
			for (; *p && *p != '\n'; p++)
				*p = ' ';
			if (!*p)
				break;
		}
		if (*p == '\n')
			line_start = true;
		else if (!isspace((unsigned char)*p))
			line_start = false;
	}
}

/* Parses the enumerators of the enum whose declaration starts with `marker`
 * (followed by optional space and '{') in `header`. Handles NAME, NAME = int
 * and NAME = earlier NAME. Returns the count, or -1 when the header or the
 * enum cannot be read or has more than max enumerators. */
static inline int cuda_enums_parse(const char *header, const char *marker, struct cuda_enumerator *out,
				   int max)
{
	char *text = cuda_enums_read_header(header);
	if (!text)
		return -1;
	int count = -1;
	char *at = text, *body = NULL;
	while ((at = strstr(at, marker)) != NULL) {
		char *q = at + strlen(marker);
		while (isspace((unsigned char)*q))
			q++;
		if (*q == '{') {
			body = q + 1;
			break;
		}
		at = q;
	}
	if (!body)
		goto out;
	char *end = strchr(body, '}');
	if (!end)
		goto out;
	*end = '\0';
	cuda_enums_strip(body);
	count = 0;
	long next = 0;
	char *save = NULL;
	for (char *item = strtok_r(body, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
		char name[96], rhs[96];
		int fields = sscanf(item, " %95[A-Za-z0-9_] = %95[A-Za-z0-9_]", name, rhs);
		if (fields < 1) {
			/* Only whitespace (a trailing comma) may carry no enumerator. */
			for (char *c = item; *c; c++)
				if (!isspace((unsigned char)*c)) {
					fprintf(stderr, "cuda_enums: cannot parse '%s' in %s\n", item,
						header);
					count = -1;
					goto out;
				}
			continue;
		}
		long value = next;
		if (fields == 2) {
			char *e;
			value = strtol(rhs, &e, 0);
			if (*e) {
				int i;
				for (i = 0; i < count && strcmp(out[i].name, rhs); i++)
					;
				if (i == count) {
					fprintf(stderr, "cuda_enums: unknown value %s in %s\n", rhs, header);
					count = -1;
					goto out;
				}
				value = out[i].value;
			}
		}
		if (count == max) {
			fprintf(stderr, "cuda_enums: more than %d enumerators in %s\n", max, header);
			count = -1;
			goto out;
		}
		snprintf(out[count].name, sizeof(out[count].name), "%s", name);
		out[count].value = value;
		count++;
		next = value + 1;
	}
out:
	free(text);
	return count;
}

#endif
