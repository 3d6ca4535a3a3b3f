/* SPDX-License-Identifier: Apache-2.0 */
/* top.h - `xl-gpu top` (top.c) and `xl-gpu stats --prometheus`
 * (prometheus.c). */
#ifndef XLGPU_TOP_H
#define XLGPU_TOP_H

#include <jansson.h>
#include <stdio.h>

/* Runs top; argv holds its arguments only; fetch_stats returns the daemon's
 * stats object (a new reference) or NULL after saying why. Returns the exit
 * status. */
int xlgpu_top(int argc, char **argv, json_t *(*fetch_stats)(void));

/* Writes the stats object in Prometheus's text exposition format. */
void xlgpu_print_prometheus(FILE *out, json_t *stats);

#endif
