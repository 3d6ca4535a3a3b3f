/* SPDX-License-Identifier: Apache-2.0 */
/* xen.h - xl-gpu's Xen mode: the commands that work on xenstore (attach,
 * detach, create) and the xenstore side of credit and policy, which xgpud
 * watches and applies live. */
#ifndef XLGPU_XEN_H
#define XLGPU_XEN_H

#include <stdbool.h>

/* Mode requested on the command line. */
enum xlgpu_mode { XLGPU_MODE_AUTO, XLGPU_MODE_LOCAL, XLGPU_MODE_XEN };

/* Whether credit and policy go to xenstore: --xen, else not with --local,
 * else when $XGPU_XEN_STUB is set or this is dom0 (common/xenrole.h). */
bool xlgpu_xen_selected(enum xlgpu_mode mode);

/* The commands; argv holds the command's arguments only. Each returns the
 * process exit status (0, 1: failed, 2: bad usage). */
int xlgpu_xen_attach(int argc, char **argv);
int xlgpu_xen_detach(int argc, char **argv);
int xlgpu_xen_create(int argc, char **argv);

/* Xen-mode credit: dom is a domid or a Xen domain name; credit <= 0 and
 * sla < 0 leave the value alone. Prints the domain's row as local mode does. */
int xlgpu_xen_credit(const char *dom, long credit, double sla);
/* Xen-mode policy: name NULL shows; gpu < 0 means every GPU. The name is
 * checked against the registered policies. */
int xlgpu_xen_policy(const char *name, long gpu);
/* Xen-mode list's second part: the domains whose GPU a remote xgpud serves
 * (their backend's remote key) and what became of each one's latest remote
 * channel, as its frontend wrote it (remote-state). Returns how many it
 * showed, or -1 when xenstore cannot be read. */
int xlgpu_xen_list_remote(void);

#endif
