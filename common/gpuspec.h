/* SPDX-License-Identifier: Apache-2.0 */
/* gpuspec.h - one GPU spec: the value of an entry of xl's `gpu = [ "..." ]`
 * (and of xgpud.conf's `domain = [ "..." ]`), e.g. "gpus=0, credit=512, sla=0.5, mem=4G".
 *
 * Syntax: comma-separated key=value items, whitespace around items, keys and
 * values ignored. An empty (or all-blank) spec sets nothing, like xl's
 * `vif = [ "" ]`. Keys:
 *   gpus=all | I | I-J, joined with ':'   GPUs the domain may use, 0..63 ("0:2-3")
 *   credit=N                              1..65535
 *   sla=X                                 0..1 (decimal, e.g. 0.5)
 *   mem=SIZE                              1M..1024T, binary K/M/G/T suffixes (4G)
 *   task.ID=WEIGHT                        ID 0..4294967295, WEIGHT 1..65535, at most 16
 *   name=NAME                             1-63 of [A-Za-z0-9_.:-], only with XGPU_GPUSPEC_ALLOW_NAME
 *   remote=HOST[:PORT]                    a remote xgpud serves the domain (issue 30), only with
 *   remote-key=FILE                       XGPU_GPUSPEC_ALLOW_REMOTE; FILE (absolute) holds its
 *                                         pre-shared key; or, instead of remote-key,
 *   remote-cert=FILE, remote-cert-key=FILE, remote-ca=FILE  (absolute) the domain's
 *                                         certificate, its key, and the CA that signed the GPU
 *                                         host's; remote= needs one way, and one way needs it
 * A key given twice, an empty item ("a=1,,b=2"), an unknown key or a value
 * with trailing junk is an error whose message names the key and value.
 */
#ifndef XGPU_GPUSPEC_H
#define XGPU_GPUSPEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define XGPU_GPUSPEC_TASKS 16
#define XGPU_GPUSPEC_NAME_MAX 63

#define XGPU_GPUSPEC_CREDIT_MAX 65535u
#define XGPU_GPUSPEC_WEIGHT_MAX 65535u
#define XGPU_GPUSPEC_MEM_MIN (1ull << 20)
#define XGPU_GPUSPEC_MEM_MAX (1ull << 50)
#define XGPU_GPUSPEC_KTIMEOUT_MAX 86400u /* seconds */

/* Flags for xgpu_gpuspec_parse. */
#define XGPU_GPUSPEC_ALLOW_NAME 1u   /* accept `name=` (the daemon's config file) */
#define XGPU_GPUSPEC_ALLOW_REMOTE 2u /* accept `remote=`, `remote-key=`, `remote-cert=`... (xl's gpu) */
#define XGPU_GPUSPEC_REMOTE_MAX 263  /* "[v6 address]:port" or a DNS name and a port */
#define XGPU_GPUSPEC_PATH_MAX 255

struct xgpu_gpuspec {
	bool has_gpus, has_credit, has_sla, has_mem, has_ktimeout;
	uint64_t gpus;     /* allowed GPUs: bit i = GPU i (0..63) */
	uint32_t credit;   /* 1..65535 */
	double sla;        /* 0..1 */
	uint64_t mem;      /* bytes, 1 MiB .. 1 PiB */
	uint32_t ktimeout; /* kernel-timeout: seconds one operation may run, 0 (none) .. 86400 */
	unsigned ntasks;
	struct {
		uint32_t task;
		uint32_t weight;
	} tasks[XGPU_GPUSPEC_TASKS];          /* task.<id>=<weight>, in the order given */
	char name[XGPU_GPUSPEC_NAME_MAX + 1]; /* "" unless given (needs XGPU_GPUSPEC_ALLOW_NAME) */
	/* "" unless given (needs XGPU_GPUSPEC_ALLOW_REMOTE) */
	char remote[XGPU_GPUSPEC_REMOTE_MAX + 1];
	char remote_key[XGPU_GPUSPEC_PATH_MAX + 1];
	char remote_cert[XGPU_GPUSPEC_PATH_MAX + 1];
	char remote_cert_key[XGPU_GPUSPEC_PATH_MAX + 1];
	char remote_ca[XGPU_GPUSPEC_PATH_MAX + 1];
};

/* Parses `text` into *out. Returns 0, or -1 with a message in err (when
 * errlen > 0) and *out zeroed. */
int xgpu_gpuspec_parse(const char *text, unsigned flags, struct xgpu_gpuspec *out, char *err, size_t errlen);

/* Writes the canonical form ("name=a, gpus=0:2-3, credit=512, sla=0.5, mem=4G,
 * task.7=100"; tasks sorted by id), which parses back to the same spec.
 * Returns what snprintf would: the full length, so a result >= len means
 * the text was cut short (buf is still terminated when len > 0). */
int xgpu_gpuspec_format(const struct xgpu_gpuspec *s, char *buf, size_t len);

#endif
