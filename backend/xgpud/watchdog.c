/* SPDX-License-Identifier: Apache-2.0 */
/* watchdog.c - the per-domain kernel timeout (xgpud --kernel-timeout, the
 * kernel-timeout key of --config and xenstore).
 *
 * A GPU without a display runs a kernel for as long as it takes, and one
 * that never ends keeps its context's share of the GPU's time slices for
 * ever. One thread looks at each domain's measured operations (the busy
 * marks, timing events around each kernel and copy, exec.c) four times a
 * second: the oldest one whose end event has not completed is the
 * operation running now (or next). When the same one has been unfinished
 * for longer than the domain's timeout, the thread destroys the domain's
 * context, which ends its work on the GPU; the poller, usually waiting in
 * a synchronize for that work, returns, and exec.c answers that call and
 * every later one with cudaErrorLaunchTimeout until the domain's processes
 * have exited (the next process gets a new context). Other domains' contexts
 * are untouched.
 *
 * The destroy happens while the poller may be inside a driver call on the
 * same context. The simulated driver allows that (every call holds a
 * reference and sees the context destroyed). NVIDIA's does not: on an H100
 * (driver 580) cuCtxDestroy did not return while the kernel ran. Under
 * --fault-scope process (the default on NVIDIA's driver) the thread
 * therefore ends xgpud instead, which ends the kernel with the process, and
 * its service manager starts it again (docs/design.md).
 */
#include "log.h"
#include "util.h"
#include "domain.h"
#include "watchdog.h"

#include <errno.h>
#include <time.h>
#include <unistd.h>

#define WATCHDOG_PERIOD_NS 250000000ull

static pthread_mutex_t wd_stop_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wd_stop_cv;
static bool wd_stop;

/* Looks at dom's oldest unfinished operation; destroys its context if that
 * ran past the timeout. Called with d->domains_lock held, so dom stays. */
static void check_domain(struct xgpu_domain *dom, uint64_t now)
{
	uint32_t limit_s = atomic_load(&dom->kernel_timeout_s);
	struct xgpu_driver *drv = &dom->d->drv;
	pthread_mutex_lock(&dom->wd_lock);
	if (!limit_s || !dom->ctx || !dom->marks || atomic_load(&dom->timed_out)) {
		dom->wd_mark = UINT64_MAX;
		pthread_mutex_unlock(&dom->wd_lock);
		return;
	}
	uint64_t unfinished = UINT64_MAX;
	for (uint32_t i = 0; i < dom->marks_count; i++) {
		const struct xgpu_busy_mark *m = &dom->marks[(dom->marks_head + i) % dom->marks_cap];
		if (drv->cuEventQuery(m->end) == CUDA_ERROR_NOT_READY) {
			unfinished = dom->marks_done + i;
			break;
		}
	}
	if (unfinished != dom->wd_mark) {
		dom->wd_mark = unfinished;
		dom->wd_since_ns = now;
		pthread_mutex_unlock(&dom->wd_lock);
		return;
	}
	uint64_t ran = now - dom->wd_since_ns;
	if (unfinished == UINT64_MAX || ran < (uint64_t)limit_s * 1000000000ull) {
		pthread_mutex_unlock(&dom->wd_lock);
		return;
	}
	if (dom->d->fault_stops_daemon) {
		/* No clean stop: a poller waits in the driver for that kernel. */
		xlog_err("domain %s: an operation ran for %.1f s, past its kernel timeout of %u s; "
			 "NVIDIA's driver ends it only with the process (--fault-scope process): xgpud "
			 "exits with status 3, every guest's running CUDA processes lose the GPU, and a "
			 "restarted xgpud serves new ones",
			 dom->name, (double)ran / 1e9, limit_s);
		_exit(3);
	}
	atomic_store_explicit(&dom->timed_out, true, memory_order_release);
	drv->cuCtxDestroy(dom->ctx);
	dom->wd_mark = UINT64_MAX;
	pthread_mutex_unlock(&dom->wd_lock);
	atomic_fetch_add(&dom->stats.timeouts, 1);
	xlog_warn("domain %s: an operation ran for %.1f s, past its kernel timeout of %u s: its context "
		  "is destroyed and its calls fail with cudaErrorLaunchTimeout until its processes exit",
		  dom->name, (double)ran / 1e9, limit_s);
	/* A poller asleep (not in the driver) learns of it on its next call;
	 * wake it so that a guest waiting on a synchronize gets its answer. */
	xgpu_domain_wake(dom);
}

static void *watchdog_main(void *arg)
{
	struct xgpud *d = arg;
	pthread_setname_np(pthread_self(), "xgpud-watchdog");
	pthread_mutex_lock(&wd_stop_lock);
	while (!wd_stop) {
		pthread_mutex_unlock(&wd_stop_lock);
		uint64_t now = xgpu_now_ns();
		pthread_mutex_lock(&d->domains_lock);
		for (struct xgpu_domain *dom = d->domains; dom; dom = dom->next)
			check_domain(dom, now);
		pthread_mutex_unlock(&d->domains_lock);
		uint64_t until = xgpu_now_ns() + WATCHDOG_PERIOD_NS;
		struct timespec ts = {(time_t)(until / 1000000000u), (long)(until % 1000000000u)};
		pthread_mutex_lock(&wd_stop_lock);
		while (!wd_stop && xgpu_now_ns() < until)
			pthread_cond_timedwait(&wd_stop_cv, &wd_stop_lock, &ts);
	}
	pthread_mutex_unlock(&wd_stop_lock);
	return NULL;
}

int xgpu_watchdog_start(struct xgpud *d)
{
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&wd_stop_cv, &ca);
	pthread_condattr_destroy(&ca);
	wd_stop = false;
	int rc = pthread_create(&d->watchdog, NULL, watchdog_main, d);
	if (rc) {
		errno = rc;
		return -1;
	}
	d->watchdog_started = true;
	return 0;
}

void xgpu_watchdog_stop(struct xgpud *d)
{
	if (!d->watchdog_started)
		return;
	pthread_mutex_lock(&wd_stop_lock);
	wd_stop = true;
	pthread_cond_signal(&wd_stop_cv);
	pthread_mutex_unlock(&wd_stop_lock);
	pthread_join(d->watchdog, NULL);
	pthread_cond_destroy(&wd_stop_cv);
	d->watchdog_started = false;
}
