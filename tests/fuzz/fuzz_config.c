/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz_config.c - libFuzzer harness for `xgpud --config FILE`
 * (backend/xgpud/config.c over libxlutil, and the GPU spec parser for each domain
 * entry). The input is the file's text, read from a memfd by its
 * /proc/self/fd path exactly as the daemon reads a path. */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int conf_fd = -1;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (conf_fd < 0)
		conf_fd = memfd_create("fuzz-xgpud.conf", MFD_CLOEXEC);
	if (conf_fd < 0 || ftruncate(conf_fd, 0) < 0 || pwrite(conf_fd, data, size, 0) != (ssize_t)size)
		abort();
	char path[64];
	snprintf(path, sizeof path, "/proc/self/fd/%d", conf_fd);

	struct xgpud_config c;
	char err[512];
	if (xgpud_config_load(path, &c, err, sizeof err) == 0) {
		for (unsigned i = 0; i < c.ndomains; i++)
			if (xgpud_config_domain(&c, c.domains[i].name) == NULL ||
			    c.domains[i].name[0] == '\0')
				abort(); /* every domain entry has a name it is found by */
		if (c.tick_ms > 1000)
			abort();
		xgpud_config_free(&c);
	} else if (strnlen(err, sizeof err) == 0) {
		abort();
	}
	return 0;
}
