/* SPDX-License-Identifier: Apache-2.0 */
/* log.h - leveled logging shared by xgpud, xl-gpu and the frontend.
 *
 * Lines go to stderr (with a timestamp when running in the foreground) or to
 * syslog once the daemon has detached. Every backend line about a guest names
 * its domain, so callers pass the domain's name in the message.
 */
#ifndef XGPU_LOG_H
#define XGPU_LOG_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

enum xgpu_log_level { XGPU_LOG_ERROR = 0, XGPU_LOG_WARN, XGPU_LOG_INFO, XGPU_LOG_DEBUG };

void xgpu_log_init(const char *ident, enum xgpu_log_level level, bool use_syslog);
/* s cut to what may go into a log line from an untrusted source: every
 * byte outside printable ASCII becomes '?'. Returns s. */
const char *xgpu_log_clean(char *s);
/* Lines for another process to log (an executor's, which xgpud relays):
 * "<E|W|I|D> <message>" on stderr, without time or name. */
void xgpu_log_init_relay(enum xgpu_log_level level);
void xgpu_log_set_level(enum xgpu_log_level level);
bool xgpu_log_enabled(enum xgpu_log_level level);
/* Parses "error", "warn", "info", "debug"; returns -1 for anything else. */
int xgpu_log_parse_level(const char *s);
void xgpu_log(enum xgpu_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A budget of lines per window, for messages a guest can provoke: a guest
 * that misbehaves in a loop must not flood Dom0's log. Suppressed lines are
 * counted and reported when the next window opens. */
struct xgpu_ratelimit {
	pthread_mutex_t lock;
	uint64_t window_ns;
	uint32_t burst;
	uint32_t used;
	uint64_t start_ns;
	uint64_t suppressed;
};
#define XGPU_RATELIMIT_INIT(burst_, window_ms_)                                                              \
	{                                                                                                    \
		PTHREAD_MUTEX_INITIALIZER, (uint64_t)(window_ms_)*1000000u, (burst_), 0, 0, 0                \
	}
void xgpu_ratelimit_init(struct xgpu_ratelimit *rl, uint32_t burst, uint32_t window_ms);
/* Whether one more line may be logged now; *suppressed_before tells how many
 * were dropped in the windows before (to be reported). */
bool xgpu_ratelimit_ok(struct xgpu_ratelimit *rl, uint64_t *suppressed_before);
void xgpu_log_limited(struct xgpu_ratelimit *rl, enum xgpu_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#define xlog_err(...) xgpu_log(XGPU_LOG_ERROR, __VA_ARGS__)
#define xlog_warn(...) xgpu_log(XGPU_LOG_WARN, __VA_ARGS__)
#define xlog_info(...) xgpu_log(XGPU_LOG_INFO, __VA_ARGS__)
#define xlog_debug(...)                                                                                      \
	do {                                                                                                 \
		if (xgpu_log_enabled(XGPU_LOG_DEBUG))                                                        \
			xgpu_log(XGPU_LOG_DEBUG, __VA_ARGS__);                                               \
	} while (0)

#endif
