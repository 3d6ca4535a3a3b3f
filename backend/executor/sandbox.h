/* SPDX-License-Identifier: Apache-2.0 */
/* sandbox.h - confines the executor process, the equivalent of Xen's
 * device-model deprivileging: a uid of its own, no capabilities,
 * no_new_privs, Landlock for the files it may open and a seccomp allow-list
 * of the system calls a CUDA driver process needs (docs/design.md,
 * "The executor's sandbox", lists them and says why).
 *
 * Applied once the executor has xgpud's descriptors and its driver is
 * initialised (cuInit: the driver's files read, the simulated driver's
 * plugins loaded), before any context. The uid, the capabilities and the
 * seccomp filter cover every thread; Landlock binds only the calling thread
 * and threads started later, which is why the simulated driver starts its
 * worker (where the guest's kernels run) with the first context. Threads a
 * driver started in cuInit are named in the log.
 */
#ifndef XGPU_EXECUTOR_SANDBOX_H
#define XGPU_EXECUTOR_SANDBOX_H

#include <stdbool.h>
#include <stddef.h>

enum xgpu_sandbox_mode {
	XGPU_SANDBOX_DEFAULT = 0, /* enforce on the sim, log on NVIDIA's driver */
	XGPU_SANDBOX_OFF,         /* none of it: xgpud's uid, no filter (debugging) */
	XGPU_SANDBOX_LOG,         /* the seccomp filter logs what it would refuse; no Landlock */
	XGPU_SANDBOX_ENFORCE,     /* refused system calls kill the process */
};

struct xgpu_sandbox {
	enum xgpu_sandbox_mode mode;
	long uid;                /* run as this uid and gid; -1: keep the caller's */
	bool nvidia;             /* NVIDIA's driver: its device nodes, procfs and sysfs */
	const char *driver_path; /* the driver library as loaded */
	const char *domain;      /* for the log */
};

/* "enforce", "log" or "off"; -1 for anything else. */
int xgpu_sandbox_parse(const char *s);
const char *xgpu_sandbox_mode_name(enum xgpu_sandbox_mode m);

/* Confines the calling process for good. -1 with err set when a step that
 * was asked for failed (the executor must not then serve anyone). */
int xgpu_sandbox_apply(const struct xgpu_sandbox *sb, char *err, size_t errlen);

#endif
