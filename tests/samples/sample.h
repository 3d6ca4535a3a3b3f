/* SPDX-License-Identifier: Apache-2.0 */
// sample.h - the checks the tests/samples/ programs share. CHECK ends the
// program at a call that must succeed, since nothing after it would mean
// anything. EXPECT and TRUE count a check in the including file's `checks`
// and clear its `ok` on a failure, so that a sample carries on, reports
// every wrong result, and prints "RESULT ... verified=no" at the end.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define CHECK(call)                                                                                          \
	do {                                                                                                 \
		cudaError_t e_ = (call);                                                                     \
		if (e_ != cudaSuccess) {                                                                     \
			fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,                        \
				cudaGetErrorString(e_));                                                     \
			exit(1);                                                                             \
		}                                                                                            \
	} while (0)

// Runtime or driver results alike: compared as ints. The sticky last error
// is cleared, so that an expected failure does not show up later.
#define EXPECT(call, want)                                                                                   \
	do {                                                                                                 \
		int e_ = (int)(call);                                                                        \
		checks++;                                                                                    \
		if (e_ != (int)(want)) {                                                                     \
			printf("%s:%d: %s returned %d, expected %d\n", __FILE__, __LINE__, #call, e_,        \
			       (int)(want));                                                                 \
			ok = false;                                                                          \
		}                                                                                            \
		cudaGetLastError();                                                                          \
	} while (0)

#define TRUE(cond)                                                                                           \
	do {                                                                                                 \
		checks++;                                                                                    \
		if (!(cond)) {                                                                               \
			printf("%s:%d: %s does not hold\n", __FILE__, __LINE__, #cond);                      \
			ok = false;                                                                          \
		}                                                                                            \
	} while (0)
