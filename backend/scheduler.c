/* scheduler.c - the per-GPU scheduler core (see scheduler.h).
 *
 * The scheduler thread sleeps until the holder's ticks run out or a poller
 * reports new work or idleness, then ends or grants slots. Gating is
 * cooperative but real: a poller runs no gated call while its may_issue flag
 * is clear, and sleeps on its wake fd until granted.
 */
#include "scheduler.h"

#include "log.h"
#include "util.h"

#include <errno.h>
#include <stdlib.h>
#include <time.h>

void xgpu_rq_push(struct xgpu_sched *s, struct xgpu_sched_dom *sd)
{
	if (sd->queued)
		return;
	sd->queued = true;
	sd->next_ready = NULL;
	if (s->rq_tail)
		s->rq_tail->next_ready = sd;
	else
		s->rq_head = sd;
	s->rq_tail = sd;
}

struct xgpu_sched_dom *xgpu_rq_pop(struct xgpu_sched *s)
{
	struct xgpu_sched_dom *sd = s->rq_head;
	if (!sd)
		return NULL;
	s->rq_head = sd->next_ready;
	if (!s->rq_head)
		s->rq_tail = NULL;
	sd->queued = false;
	sd->next_ready = NULL;
	return sd;
}

void xgpu_rq_remove(struct xgpu_sched *s, struct xgpu_sched_dom *sd)
{
	struct xgpu_sched_dom **pp = &s->rq_head, *prev = NULL;
	while (*pp && *pp != sd) {
		prev = *pp;
		pp = &(*pp)->next_ready;
	}
	if (!*pp)
		return;
	*pp = sd->next_ready;
	if (s->rq_tail == sd)
		s->rq_tail = prev;
	sd->queued = false;
	sd->next_ready = NULL;
}

static void end_slot(struct xgpu_sched *s, uint64_t now)
{
	struct xgpu_sched_dom *sd = s->holder;
	atomic_store_explicit(&sd->may_issue, false, memory_order_release);
	atomic_fetch_add(&sd->dom->stats.gpu_time_ns, now - sd->slot_start_ns);
	s->holder = NULL;
	s->holder_idle = false;
	/* Still has work: back in line behind the others. */
	if (atomic_load(&sd->wants_slot))
		s->ops->domain_ready(s, sd);
}

static void grant(struct xgpu_sched *s, struct xgpu_sched_dom *sd, unsigned ticks, uint64_t now)
{
	s->holder = sd;
	s->holder_idle = false;
	s->holder_until_ns = now + (uint64_t)(ticks ? ticks : 1) * s->tick_ns;
	sd->slot_start_ns = now;
	atomic_store(&sd->wants_slot, false);
	atomic_fetch_add(&sd->dom->stats.ticks, ticks ? ticks : 1);
	atomic_store_explicit(&sd->may_issue, true, memory_order_release);
	xgpu_domain_wake(sd->dom);
}

static void *sched_main(void *arg)
{
	struct xgpu_sched *s = arg;
	pthread_mutex_lock(&s->lock);
	while (!s->stop) {
		uint64_t now = xgpu_now_ns();
		if (s->holder && (s->holder_idle || now >= s->holder_until_ns))
			end_slot(s, now);
		if (!s->holder) {
			unsigned ticks = 1;
			struct xgpu_sched_dom *next = s->ops->pick_next(s, &ticks);
			if (next)
				grant(s, next, ticks, now);
		}
		if (s->holder) {
			struct timespec ts = {(time_t)(s->holder_until_ns / 1000000000u),
					      (long)(s->holder_until_ns % 1000000000u)};
			pthread_cond_timedwait(&s->cond, &s->lock, &ts);
		} else {
			pthread_cond_wait(&s->cond, &s->lock);
		}
	}
	if (s->holder)
		end_slot(s, xgpu_now_ns());
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

int xgpu_sched_start(struct xgpud *d, struct xgpu_gpu *gpu, const struct xgpu_policy_ops *ops,
		     uint64_t tick_ns, struct xgpu_sched **out)
{
	struct xgpu_sched *s = calloc(1, sizeof *s);
	if (!s)
		return -1;
	s->d = d;
	s->gpu = gpu;
	s->ops = ops;
	s->tick_ns = tick_ns;
	pthread_mutex_init(&s->lock, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&s->cond, &ca);
	pthread_condattr_destroy(&ca);
	if (ops->init && ops->init(s) < 0) {
		free(s);
		return -1;
	}
	if (ops->gates) {
		if (pthread_create(&s->thread, NULL, sched_main, s)) {
			if (ops->fini)
				ops->fini(s);
			free(s);
			return -1;
		}
		s->thread_started = true;
	}
	*out = s;
	return 0;
}

void xgpu_sched_stop(struct xgpu_sched *s)
{
	if (!s)
		return;
	pthread_mutex_lock(&s->lock);
	s->stop = true;
	pthread_cond_signal(&s->cond);
	pthread_mutex_unlock(&s->lock);
	if (s->thread_started)
		pthread_join(s->thread, NULL);
	if (s->ops->fini)
		s->ops->fini(s);
	pthread_cond_destroy(&s->cond);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

void xgpu_sched_add(struct xgpu_sched *s, struct xgpu_sched_dom *sd)
{
	pthread_mutex_lock(&s->lock);
	atomic_store(&sd->may_issue, !s->ops->gates);
	if (s->ops->domain_add)
		s->ops->domain_add(s, sd);
	pthread_mutex_unlock(&s->lock);
}

void xgpu_sched_remove(struct xgpu_sched *s, struct xgpu_sched_dom *sd)
{
	pthread_mutex_lock(&s->lock);
	if (s->holder == sd)
		end_slot(s, xgpu_now_ns());
	atomic_store(&sd->wants_slot, false);
	xgpu_rq_remove(s, sd);
	if (s->ops->domain_remove)
		s->ops->domain_remove(s, sd);
	pthread_cond_signal(&s->cond);
	pthread_mutex_unlock(&s->lock);
}

void xgpu_sched_request(struct xgpu_sched *s, struct xgpu_sched_dom *sd)
{
	if (!s->ops->gates || atomic_load(&sd->wants_slot))
		return;
	pthread_mutex_lock(&s->lock);
	atomic_store(&sd->wants_slot, true);
	if (s->holder != sd) {
		s->ops->domain_ready(s, sd);
		pthread_cond_signal(&s->cond);
	}
	pthread_mutex_unlock(&s->lock);
}

void xgpu_sched_idle(struct xgpu_sched *s, struct xgpu_sched_dom *sd)
{
	if (!s->ops->gates || !atomic_load_explicit(&sd->may_issue, memory_order_relaxed))
		return;
	pthread_mutex_lock(&s->lock);
	if (s->holder == sd && !s->holder_idle) {
		s->holder_idle = true;
		pthread_cond_signal(&s->cond);
	}
	pthread_mutex_unlock(&s->lock);
}
