/* SPDX-License-Identifier: Apache-2.0 */
/* sdnotify.c - systemd's notification protocol: one datagram of
 * "KEY=VALUE" lines to the AF_UNIX socket named by $NOTIFY_SOCKET (a path, or
 * an abstract name written with a leading '@').
 *
 * Written out rather than linked from libsystemd: the protocol is this one
 * sendto, xgpud runs as often without systemd as with it, and the daemon
 * stays free of a library (and its transitive dependencies) it would need
 * for nothing else. */
#include "sdnotify.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

int xgpu_sd_notify(const char *state)
{
	const char *name = getenv("NOTIFY_SOCKET");
	if (!name || !*name)
		return 0;
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	size_t len = strlen(name);
	if ((name[0] != '/' && name[0] != '@') || len >= sizeof sa.sun_path) {
		errno = EINVAL;
		return -1;
	}
	memcpy(sa.sun_path, name, len);
	if (name[0] == '@')
		sa.sun_path[0] = '\0'; /* abstract namespace */
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	ssize_t n = sendto(fd, state, strlen(state), MSG_NOSIGNAL, (struct sockaddr *)&sa,
			   (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len));
	int saved = errno;
	close(fd);
	errno = saved;
	return n == (ssize_t)strlen(state) ? 1 : -1;
}
