/* SPDX-License-Identifier: Apache-2.0 */
/* drvcheck.h - what the driver-API-only test programs (tests/cuda/drvapi.c,
 * tests/samples/drvsample.c and graphs_drv.c) share. CHECK ends the program
 * at a call that must succeed, since nothing after it would mean anything;
 * EXPECT counts a wrong result in the including file's `failures` and
 * carries on, so that one run reports every one. Define DRV_PROGRAM (the
 * program's name, for the messages) before including. */
#pragma once

#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>

#define CHECK(call)                                                                                          \
	do {                                                                                                 \
		CUresult r_ = (call);                                                                        \
		if (r_ != CUDA_SUCCESS) {                                                                    \
			const char *name_ = "?";                                                             \
			cuGetErrorName(r_, &name_);                                                          \
			fprintf(stderr, "%s: %s:%d: %s returned %s (%d)\n", DRV_PROGRAM, __FILE__, __LINE__, \
				#call, name_, (int)r_);                                                      \
			exit(1);                                                                             \
		}                                                                                            \
	} while (0)

#define EXPECT(cond)                                                                                         \
	do {                                                                                                 \
		if (!(cond)) {                                                                               \
			fprintf(stderr, "%s: %s:%d: expected %s\n", DRV_PROGRAM, __FILE__, __LINE__, #cond); \
			failures++;                                                                          \
		}                                                                                            \
	} while (0)

/* The whole file, NUL-terminated (a PTX image is text). A module image the
 * test cannot read ends it: nothing could be checked. */
static void *read_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		perror(path);
		exit(2);
	}
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *buf = n < 0 ? NULL : malloc((size_t)n + 1);
	if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) {
		perror(path);
		exit(2);
	}
	buf[n] = '\0';
	fclose(f);
	return buf;
}
