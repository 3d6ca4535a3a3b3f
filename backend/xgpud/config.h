/* SPDX-License-Identifier: Apache-2.0 */
/* config.h - the `xgpud --config FILE` reader.
 *
 * The file is in xl's syntax and is read with libxlutil, the parser xl
 * itself uses:
 *
 *   # /etc/xgpu/xgpud.conf
 *   policy = "rr"            # optional: default policy (the command line wins)
 *   tick_ms = 10             # optional: 1 to 1000
 *   hyp_source = "local"     # optional
 *   domain = [ "name=uid-1000, credit=1024, sla=0.5, gpus=0, mem=4G, task.2=512",
 *              "name=batch, credit=256" ]
 *
 * Each domain entry is a GPU spec (gpuspec.h) that must have a name; names
 * are unique. Unknown settings, a setting set again with '=' and
 * anything libxlutil rejects are errors; `+=` appends as it does for xl.
 */
#ifndef XGPU_CONFIG_H
#define XGPU_CONFIG_H

#include "gpuspec.h"

#include <stddef.h>

struct xgpud_config {
	char policy[32];      /* "" = not set; 1-31 of [a-z0-9] (the caller checks the name) */
	char hyp_source[128]; /* "" = not set */
	unsigned tick_ms;     /* 0 = not set, else 1..1000 */
	unsigned ndomains;
	struct xgpu_gpuspec *domains; /* each with name set, in file order */
};

/* Reads and checks the whole file. Returns 0, or -1 with *out empty and a
 * message in err that names the file (and line, or domain[i] entry). */
int xgpud_config_load(const char *path, struct xgpud_config *out, char *err, size_t errlen);
/* Releases what load allocated and empties *c; safe on an empty config. */
void xgpud_config_free(struct xgpud_config *c);
/* The domain entry named `name`, or NULL. */
const struct xgpu_gpuspec *xgpud_config_domain(const struct xgpud_config *c, const char *name);

#endif
