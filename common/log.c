/* SPDX-License-Identifier: Apache-2.0 */
/* log.c - leveled logging to stderr or syslog. */
#include "log.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <syslog.h>
#include <time.h>

static const char *log_ident = "xgpu";
static _Atomic int log_level = XGPU_LOG_INFO;
static bool log_syslog;
static bool log_relay;
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;

static const char *const level_names[] = {"error", "warn", "info", "debug"};

void xgpu_log_init(const char *ident, enum xgpu_log_level level, bool use_syslog)
{
	log_ident = ident;
	log_level = level;
	log_syslog = use_syslog;
	if (use_syslog)
		openlog(ident, LOG_PID, LOG_DAEMON);
}

void xgpu_log_init_relay(enum xgpu_log_level level)
{
	log_level = level;
	log_relay = true;
}

const char *xgpu_log_clean(char *s)
{
	for (char *p = s; *p; p++)
		if (*p < 0x20 || *p > 0x7e)
			*p = '?';
	return s;
}

void xgpu_log_set_level(enum xgpu_log_level level)
{
	log_level = level;
}

bool xgpu_log_enabled(enum xgpu_log_level level)
{
	return (int)level <= log_level;
}

int xgpu_log_parse_level(const char *s)
{
	for (int i = 0; i < 4; i++)
		if (!strcmp(s, level_names[i]))
			return i;
	return -1;
}

static void emit(enum xgpu_log_level level, const char *msg);

void xgpu_log(enum xgpu_log_level level, const char *fmt, ...)
{
	if (!xgpu_log_enabled(level))
		return;
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	emit(level, msg);
}

void xgpu_ratelimit_init(struct xgpu_ratelimit *rl, uint32_t burst, uint32_t window_ms)
{
	pthread_mutex_init(&rl->lock, NULL);
	rl->window_ns = (uint64_t)window_ms * 1000000u;
	rl->burst = burst;
	rl->used = 0;
	rl->start_ns = 0;
	rl->suppressed = 0;
}

bool xgpu_ratelimit_ok(struct xgpu_ratelimit *rl, uint64_t *suppressed_before)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	uint64_t now = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	pthread_mutex_lock(&rl->lock);
	*suppressed_before = 0;
	if (!rl->start_ns || now - rl->start_ns >= rl->window_ns) {
		*suppressed_before = rl->suppressed;
		rl->suppressed = 0;
		rl->used = 0;
		rl->start_ns = now;
	}
	bool ok = rl->used < rl->burst;
	if (ok)
		rl->used++;
	else
		rl->suppressed++;
	pthread_mutex_unlock(&rl->lock);
	return ok;
}

void xgpu_log_limited(struct xgpu_ratelimit *rl, enum xgpu_log_level level, const char *fmt, ...)
{
	if (!xgpu_log_enabled(level))
		return;
	uint64_t dropped;
	if (!xgpu_ratelimit_ok(rl, &dropped))
		return;
	char msg[1024];
	if (dropped) {
		snprintf(msg, sizeof msg, "(%llu similar messages suppressed)", (unsigned long long)dropped);
		emit(level, msg);
	}
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	emit(level, msg);
}

static void emit(enum xgpu_log_level level, const char *msg)
{
	if (log_syslog) {
		static const int prio[] = {LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG};
		syslog(prio[level], "%s", msg);
		return;
	}
	if (log_relay) {
		/* One line per message for the reader to stamp: its level's
		 * initial, a space, the text without line breaks. */
		char line[1100];
		int n = snprintf(line, sizeof line, "%c %s", "EWID"[level], msg);
		for (int i = 0; i < n && i < (int)sizeof line - 1; i++)
			if (line[i] == '\n')
				line[i] = ' ';
		pthread_mutex_lock(&log_lock);
		fprintf(stderr, "%s\n", line);
		pthread_mutex_unlock(&log_lock);
		return;
	}
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	struct tm tm;
	localtime_r(&ts.tv_sec, &tm);
	char when[32];
	strftime(when, sizeof when, "%H:%M:%S", &tm);
	pthread_mutex_lock(&log_lock);
	fprintf(stderr, "%s.%03ld %s %s: %s\n", when, ts.tv_nsec / 1000000, log_ident, level_names[level],
		msg);
	pthread_mutex_unlock(&log_lock);
}
