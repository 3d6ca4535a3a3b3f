/* SPDX-License-Identifier: Apache-2.0 */
/* xenrole.h - which kind of Xen domain this process runs in (dom0, a domU,
 * or no Xen at all), told from what every Xen kernel provides, with or
 * without xenfs mounted on /proc/xen. The frontend, xgpud and xl-gpu pick
 * their default transport from it. */
#ifndef XGPU_XENROLE_H
#define XGPU_XENROLE_H

#include <stddef.h>

enum xgpu_xen_role {
	XGPU_XEN_NONE,    /* not a Xen domain */
	XGPU_XEN_DOMU,    /* an unprivileged guest */
	XGPU_XEN_DOM0,    /* the control domain */
	XGPU_XEN_UNKNOWN, /* Xen, but whether dom0 or a domU cannot be told */
};

/* Looks under `root` ("" for the real system; a fake tree in tests). `how`
 * (may be NULL) receives what decided the answer, or for XGPU_XEN_UNKNOWN
 * every place that was looked at and what was found there. */
enum xgpu_xen_role xgpu_xen_role(const char *root, char *how, size_t howlen);

const char *xgpu_xen_role_name(enum xgpu_xen_role role);

#endif
