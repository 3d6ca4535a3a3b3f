/* SPDX-License-Identifier: Apache-2.0 */
/* hypsrc.c - the registry of hypervisor schedule sources: maps the NAME of
 * --hyp-source NAME[:ARGS] to its ops, and says which names exist. */
#include "hypsrc.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct xgpu_hyp_ops *const sources[] = {&xgpu_hyp_sim, &xgpu_hyp_local, &xgpu_hyp_xen,
						     &xgpu_hyp_xenpatch, &xgpu_hyp_xentrace};

static char names[128];
static pthread_once_t names_once = PTHREAD_ONCE_INIT;

static void names_init(void)
{
	size_t off = 0;
	for (size_t i = 0; i < sizeof sources / sizeof sources[0] && off < sizeof names; i++)
		off += (size_t)snprintf(names + off, sizeof names - off, "%s%s", i ? ", " : "",
					sources[i]->name);
}

/* Built from the table once, so the list cannot drift from what find() accepts. */
const char *xgpu_hyp_names(void)
{
	pthread_once(&names_once, names_init);
	return names;
}

const struct xgpu_hyp_ops *xgpu_hyp_find(const char *spec, const char **args, char *err, size_t errlen)
{
	if (args)
		*args = NULL;
	if (!spec || !*spec) {
		snprintf(err, errlen, "empty hypervisor schedule source; available: %s", xgpu_hyp_names());
		return NULL;
	}
	const char *colon = strchr(spec, ':');
	size_t len = colon ? (size_t)(colon - spec) : strlen(spec);
	for (size_t i = 0; i < sizeof sources / sizeof sources[0]; i++) {
		if (strlen(sources[i]->name) == len && !strncmp(sources[i]->name, spec, len)) {
			if (args)
				*args = colon ? colon + 1 : NULL;
			return sources[i];
		}
	}
	snprintf(err, errlen, "unknown hypervisor schedule source '%.*s' (in '%s'); available: %s", (int)len,
		 spec, spec, xgpu_hyp_names());
	return NULL;
}

static bool entry_eq(const struct xgpu_hyp_entry *a, const struct xgpu_hyp_entry *b)
{
	return a->domid == b->domid && a->vcpu == b->vcpu && a->pcpu == b->pcpu && a->credit == b->credit &&
	       a->running == b->running;
}

void xgpu_hyp_publish(struct xgpu_hyp_published *v, struct xgpu_hyp_snapshot *snap, unsigned n, bool changed,
		      uint64_t now_ns)
{
	bool same = !changed && n == v->n;
	for (unsigned i = 0; same && i < n; i++)
		same = entry_eq(&snap->e[i], &v->e[i]);
	if (!same) {
		v->seq++;
		memcpy(v->e, snap->e, n * sizeof *snap->e);
		v->n = n;
	}
	snap->n = n;
	snap->seq = v->seq;
	snap->now_ns = now_ns;
}

static uint32_t domset_id(const struct xgpu_hyp_domset *s, size_t i)
{
	uint32_t id;
	memcpy(&id, (const char *)s->v + i * s->elem_size, sizeof id);
	return id;
}

/* Where domid is or would go. */
static size_t domset_index(const struct xgpu_hyp_domset *s, uint32_t domid)
{
	size_t lo = 0, hi = s->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (domset_id(s, mid) < domid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

void *xgpu_hyp_domset_find(const struct xgpu_hyp_domset *s, uint32_t domid)
{
	size_t i = domset_index(s, domid);
	return i < s->n && domset_id(s, i) == domid ? (char *)s->v + i * s->elem_size : NULL;
}

int xgpu_hyp_domset_add(struct xgpu_hyp_domset *s, uint32_t domid)
{
	size_t at = domset_index(s, domid);
	char *base = s->v;
	if (at < s->n && domset_id(s, at) == domid)
		return 0;
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 8;
		base = realloc(s->v, cap * s->elem_size);
		if (!base)
			return -1;
		s->v = base;
		s->cap = cap;
	}
	char *e = base + at * s->elem_size;
	memmove(e + s->elem_size, e, (s->n - at) * s->elem_size);
	memset(e, 0, s->elem_size);
	memcpy(e, &domid, sizeof domid);
	s->n++;
	return 1;
}

void xgpu_hyp_domset_remove(struct xgpu_hyp_domset *s, uint32_t domid)
{
	size_t at = domset_index(s, domid);
	if (at >= s->n || domset_id(s, at) != domid)
		return;
	char *e = (char *)s->v + at * s->elem_size;
	memmove(e, e + s->elem_size, (s->n - at - 1) * s->elem_size);
	s->n--;
}

void xgpu_hyp_domset_free(struct xgpu_hyp_domset *s)
{
	free(s->v);
	*s = (struct xgpu_hyp_domset){.elem_size = s->elem_size};
}
