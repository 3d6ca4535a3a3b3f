/* SPDX-License-Identifier: Apache-2.0 */
/* sandbox_probe_simk.c - the host implementation of tests/cuda/
 * sandbox_probe.cu's kernel: in the executor's process, on the simulated
 * driver's worker thread, it makes the system call a hostile guest would
 * and writes 0 (it worked) or the errno into the result. Under the
 * executor's sandbox a forbidden call is refused, or kills the executor. */
#include "simdrv/simkernel.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

static int try_it(int what, const char *arg)
{
	int fd;
	pid_t pid = (pid_t)atoi(arg);
	char byte;
	switch (what) {
	case 1: { /* connect to a unix socket (xgpud's control socket) */
		struct sockaddr_un sa = {.sun_family = AF_UNIX};
		if ((size_t)snprintf(sa.sun_path, sizeof sa.sun_path, "%s", arg) >= sizeof sa.sun_path)
			return ENAMETOOLONG;
		int r = EPROTOTYPE;
		for (int type = SOCK_SEQPACKET; r == EPROTOTYPE && type;
		     type = type == SOCK_SEQPACKET ? SOCK_STREAM : 0) {
			if ((fd = socket(AF_UNIX, type | SOCK_CLOEXEC, 0)) < 0)
				return errno;
			r = connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0 ? errno : 0;
			close(fd);
		}
		return r;
	}
	case 2: /* open a file (another domain's memfd by /proc, /etc/shadow) */
		if ((fd = open(arg, O_RDONLY | O_CLOEXEC)) < 0)
			return errno;
		close(fd);
		return 0;
	case 3: /* trace another process (a sibling executor); no stop */
		return ptrace(PTRACE_SEIZE, pid, NULL, NULL) < 0 ? errno : 0;
	case 4: /* signal another process */
		return kill(pid, 0) < 0 ? errno : 0;
	case 5: { /* read another process's memory: EFAULT means it was let in */
		struct iovec local = {&byte, 1}, remote = {(void *)16, 1};
		if (process_vm_readv(pid, &local, 1, &remote, 1, 0) < 0)
			return errno == EFAULT ? 0 : errno;
		return 0;
	}
	default:
		return EINVAL;
	}
}

static int probe(const struct xgpu_simk_launch *l)
{
	int32_t what;
	uint64_t argp, resp;
	if (xgpu_simk_param(l, 0, &what, 4) || xgpu_simk_param(l, 1, &argp, 8) ||
	    xgpu_simk_param(l, 2, &resp, 8))
		return XGPU_SIMK_ERR_INVALID_VALUE;
	const char *a = l->map(l, argp, 256);
	int32_t *res = l->map(l, resp, 4);
	if (!a || !res)
		return XGPU_SIMK_ERR_ILLEGAL_ADDRESS;
	char arg[256];
	memcpy(arg, a, sizeof arg);
	arg[sizeof arg - 1] = '\0';
	*res = try_it(what, arg);
	return XGPU_SIMK_OK;
}

static const struct xgpu_simk_kernel kernels[] = {
    {"_Z5probeiPcPi", probe, NULL},
};
XGPU_SIMK_EXPORT(kernels);
