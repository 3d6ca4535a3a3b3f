/* hypsrc.c - the registry of hypervisor schedule sources: maps the NAME of
 * --hyp-source NAME[:ARGS] to its ops, and says which names exist. */
#include "hypsrc.h"
#include "hypsrc_xenpatch.h"

#include <pthread.h>
#include <stdio.h>
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
