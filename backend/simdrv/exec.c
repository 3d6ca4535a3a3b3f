/* SPDX-License-Identifier: Apache-2.0 */
/* exec.c - the simulated devices' execution engine: one worker thread per
 * device time-slicing between the contexts that have work, plus the stream,
 * event, host-function and synchronisation entry points built on it.
 *
 * Every operation (kernel, copy, memset, event record, host function, wait
 * for an event) gets a device-wide sequence number and goes into its
 * context's FIFO. A context's operations run one at a time in that order,
 * which is stricter than CUDA requires and satisfies at once per-stream
 * order and the legacy NULL stream's barrier semantics; a context's work is
 * complete up to its done_seq. An event of another context is waited for by
 * a wait operation in the waiting context's FIFO.
 *
 * Between contexts the device time-slices, as GPUs do: the contexts with
 * queued work take turns of XGPU_SIM_SLICE_MS (default 2 ms) of device time,
 * so that one context's long kernel delays the others but does not stop
 * them. A context that runs out of work ends its turn early; one alone on
 * the device keeps it. With a slice of 0 the device runs whole operations
 * in submission order across all contexts (one long operation then holds
 * everyone up).
 *
 * Each operation occupies the device for a modeled time. The worker does the
 * operation's real work (copying bytes, running a host kernel
 * implementation) when it first runs, then sleeps on CLOCK_MONOTONIC for the
 * modeled time, turn by turn; it never spins, so a simulated busy GPU costs
 * no CPU. Two things bound an operation:
 * - a watchdog (XGPU_SIM_WATCHDOG_MS, default 10 s; 0 turns it off): an
 *   operation modeled to take longer occupies the device for the watchdog
 *   time and then fails its context with CUDA_ERROR_LAUNCH_TIMEOUT, as a
 *   GPU's display watchdog kills a kernel that runs too long;
 * - the sleep is a timed wait that ends early when the operation's context
 *   fails (a fault in any context of the process fails them all, as on
 *   NVIDIA's driver) or the driver stops. A context being destroyed does not
 *   end it: cuCtxDestroy waits for the operation running, as NVIDIA's does
 *   for a running kernel (an endless one: forever), and the work queued
 *   behind it then runs (in order) with no modeled time.
 * Waiters block on a condition variable.
 */
#include "simdrv_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>

#include "util.h"

/* Fixed device-side cost of a copy or memset besides its bytes. */
#define SIM_COPY_LATENCY_NS 1500u
#define SIM_MEMSET_LATENCY_NS 1000u
#define SIM_COPY_NT_MIN (256u << 10) /* host-to-device pieces stored uncached from this size */

uint64_t sim_scale(uint64_t ns)
{
	double s = (double)ns / sim.speed;
	return s >= 1.8e19 ? UINT64_MAX / 2 : (uint64_t)s;
}

void sim_dev_kick(struct sim_device *dev)
{
	pthread_mutex_lock(&dev->lock);
	pthread_cond_broadcast(&dev->wake_cv);
	pthread_mutex_unlock(&dev->lock);
}

/* Whether op's modeled time should end now (dev->lock held). Whoever sets
 * one of these kicks the device after setting it, so a sleeping worker that
 * checked before sees it when woken. */
static bool op_cut_short(const struct sim_device *dev, const struct sim_op *op)
{
	return dev->stop || atomic_load(&op->ctx->sticky);
}

static uint64_t bytes_ns(size_t bytes, uint64_t bytes_per_s)
{
	return (uint64_t)((double)bytes * 1e9 / (double)bytes_per_s);
}

/* ---- operations ------------------------------------------------------------------ */

struct sim_op *sim_op_new(struct CUctx_st *ctx, enum sim_op_kind kind)
{
	struct sim_op *op = calloc(1, sizeof *op);
	if (!op)
		return NULL;
	op->kind = kind;
	op->ctx = ctx;
	sim_obj_ref(&ctx->obj);
	return op;
}

void sim_op_free(struct sim_op *op)
{
	if (!op)
		return;
	switch (op->kind) {
	case SIM_OP_COPY:
		free(op->u.copy.snapshot);
		break;
	case SIM_OP_EVENT:
		if (op->u.event.ev)
			sim_obj_put(&op->u.event.ev->obj);
		break;
	case SIM_OP_KERNEL:
		if (op->u.kernel.func)
			sim_obj_put(&op->u.kernel.func->obj);
		if (op->u.kernel.cond)
			sim_cond_put(op->u.kernel.cond);
		free(op->u.kernel.params);
		break;
	case SIM_OP_WAIT:
		if (op->u.wait.ctx)
			sim_ctx_put(op->u.wait.ctx);
		break;
	default:
		break;
	}
	sim_ctx_put(op->ctx);
	free(op);
}

uint64_t sim_submit(struct sim_op *op, struct CUstream_st *s)
{
	struct CUctx_st *ctx = op->ctx;
	struct sim_device *dev = ctx->dev;
	pthread_mutex_lock(&dev->lock);
	uint64_t seq = op->seq = ++dev->submit_seq;
	op->next = NULL;
	if (ctx->q_tail)
		ctx->q_tail->next = op;
	else
		ctx->q_head = op;
	ctx->q_tail = op;
	if (sim_list_empty(&ctx->run_link)) {
		sim_list_add(&dev->runq, &ctx->run_link);
		/* A worker sleeping through another context's turn may have to
		 * end that turn now that someone else is waiting. */
		pthread_cond_broadcast(&dev->wake_cv);
	}
	ctx->last_seq = seq;
	if (s)
		s->last_seq = seq;
	else
		ctx->null_last_seq = seq;
	/* An event captures the work queued before it at record time. */
	if (op->kind == SIM_OP_EVENT)
		op->u.event.ev->seq = seq;
	pthread_cond_signal(&dev->work_cv);
	pthread_mutex_unlock(&dev->lock);
	return seq;
}

CUresult sim_submit_live(struct sim_op *op, struct CUstream_st *s)
{
	struct CUctx_st *c = op->ctx;
	CUresult r = CUDA_SUCCESS;
	/* Under the context's lock, so teardown either sees the op queued or
	 * the op sees the context going. */
	pthread_mutex_lock(&c->lock);
	if (c->destroyed)
		r = CUDA_ERROR_CONTEXT_IS_DESTROYED;
	else {
		sim_submit(op, s);
		op = NULL;
	}
	pthread_mutex_unlock(&c->lock);
	sim_op_free(op);
	return r;
}

bool sim_ctx_seq_done(struct CUctx_st *ctx, uint64_t seq)
{
	pthread_mutex_lock(&ctx->dev->lock);
	bool done = ctx->done_seq >= seq;
	pthread_mutex_unlock(&ctx->dev->lock);
	return done;
}

void sim_wait_ctx_seq(struct CUctx_st *ctx, uint64_t seq)
{
	struct sim_device *dev = ctx->dev;
	pthread_mutex_lock(&dev->lock);
	while (ctx->done_seq < seq)
		pthread_cond_wait(&dev->done_cv, &dev->lock);
	pthread_mutex_unlock(&dev->lock);
}

void sim_wait_dev_seq(struct sim_device *dev, uint64_t seq)
{
	pthread_mutex_lock(&dev->lock);
	while (dev->done_seq < seq)
		pthread_cond_wait(&dev->done_cv, &dev->lock);
	pthread_mutex_unlock(&dev->lock);
}

/* Does op's work and returns its modeled device time (after
 * XGPU_SIM_SPEED, before the watchdog). Runs without dev->lock. */
static uint64_t op_work(struct sim_device *dev, struct sim_op *op)
{
	/* A failed context's queued work is dropped, as on a GPU. */
	if (atomic_load(&op->ctx->sticky))
		return 0;
	uint64_t cost = 0;
	switch (op->kind) {
	case SIM_OP_COPY:
		/* Device ranges of one copy may overlap (cuMemcpyDtoD(p + 1, p,
		 * n)); host ones are another process's memory or a snapshot. */
		for (size_t row = 0, rows = op->u.copy.rows ? op->u.copy.rows : 1; row < rows; row++) {
			uint8_t *dst = (uint8_t *)op->u.copy.dst + row * op->u.copy.dst_pitch;
			const uint8_t *src = (const uint8_t *)op->u.copy.src + row * op->u.copy.src_pitch;
			/* A DMA engine writes device memory without passing it
			 * through the CPU's caches: large host-to-device pieces
			 * are stored so (the executor stages them 1 MiB at a time,
			 * into memory the host does not read back). */
			if (op->u.copy.dir == SIM_D2D)
				memmove(dst, src, op->u.copy.bytes);
			else if (op->u.copy.dir == SIM_H2D && op->u.copy.bytes >= SIM_COPY_NT_MIN)
				xgpu_memcpy_nt(dst, src, op->u.copy.bytes);
			else
				memcpy(dst, src, op->u.copy.bytes);
		}
		cost = SIM_COPY_LATENCY_NS +
		       bytes_ns(op->u.copy.bytes * (op->u.copy.rows ? op->u.copy.rows : 1),
				op->u.copy.dir == SIM_D2D ? dev->p.dev_bw : dev->p.host_bw);
		break;
	case SIM_OP_MEMSET:
		for (size_t row = 0, rows = op->u.memset.rows ? op->u.memset.rows : 1; row < rows; row++)
			memset((uint8_t *)op->u.memset.dst + row * op->u.memset.pitch, op->u.memset.value,
			       op->u.memset.bytes);
		cost =
		    SIM_MEMSET_LATENCY_NS +
		    bytes_ns(op->u.memset.bytes * (op->u.memset.rows ? op->u.memset.rows : 1), dev->p.dev_bw);
		break;
	case SIM_OP_EVENT:
		break;
	case SIM_OP_HOSTFN:
		op->u.hostfn.fn(op->u.hostfn.arg);
		break;
	case SIM_OP_WAIT:
		/* An event of another device: this device stalls until it is
		 * done (one of this device is waited for in pick_ctx). */
		if (op->u.wait.ctx->dev != dev)
			sim_wait_ctx_seq(op->u.wait.ctx, op->u.wait.seq);
		break;
	case SIM_OP_KERNEL: {
		CUresult r = sim_kernel_run(op, &cost);
		if (r)
			sim_ctx_fail(op->ctx, r);
		break;
	}
	}
	return cost ? sim_scale(cost) : 0;
}

/* Whether ctx's next operation can run now: not a wait for an event of this
 * device that is still pending (dev->lock held). */
static bool ctx_runnable(const struct sim_device *dev, const struct CUctx_st *ctx)
{
	const struct sim_op *op = ctx->q_head;
	if (!op)
		return false;
	if (op->kind != SIM_OP_WAIT || op->started || op->u.wait.ctx->dev != dev)
		return true;
	return op->u.wait.ctx->done_seq >= op->u.wait.seq;
}

static struct CUctx_st *runq_ctx(struct sim_link *l)
{
	return sim_container_of(l, struct CUctx_st, run_link);
}

/* The context whose turn is next (dev->lock held), or NULL. Without time
 * slices: the one holding the oldest queued operation, so that the device
 * runs everything in submission order. With them: the first runnable one in
 * turn order. A wait is for an older operation, so the context holding the
 * oldest one is always runnable and waits cannot deadlock. */
static struct CUctx_st *pick_ctx(struct sim_device *dev)
{
	struct CUctx_st *best = NULL;
	for (struct sim_link *l = dev->runq.next; l != &dev->runq; l = l->next) {
		struct CUctx_st *c = runq_ctx(l);
		if (sim.slice_ns) {
			if (ctx_runnable(dev, c))
				return c;
		} else if (!best || c->q_head->seq < best->q_head->seq)
			best = c;
	}
	return best;
}

/* Whether a context other than ctx could run now (dev->lock held). */
static bool others_waiting(struct sim_device *dev, const struct CUctx_st *ctx)
{
	for (struct sim_link *l = dev->runq.next; l != &dev->runq; l = l->next)
		if (runq_ctx(l) != ctx && ctx_runnable(dev, runq_ctx(l)))
			return true;
	return false;
}

/* Moves dev->done_seq up to just below the oldest queued operation
 * (dev->lock held). */
static void update_done_mark(struct sim_device *dev)
{
	uint64_t oldest = dev->submit_seq + 1;
	for (struct sim_link *l = dev->runq.next; l != &dev->runq; l = l->next) {
		uint64_t s = runq_ctx(l)->q_head->seq;
		if (s < oldest)
			oldest = s;
	}
	dev->done_seq = oldest - 1;
}

/* Occupies the device with ctx's started head op until its modeled time is
 * over, it is cut short, or (with time slices) ctx's turn ends at turn_end
 * while another context waits. Returns true if the op is finished (dev->lock
 * held throughout, released while sleeping). The worker's timer slack
 * (worker_main) applies here too, so short operations keep their length. */
static bool occupy(struct sim_device *dev, struct sim_op *op, uint64_t turn_end)
{
	for (;;) {
		if (op_cut_short(dev, op) || !op->remaining_ns)
			return true;
		uint64_t now = xgpu_now_ns();
		bool contended = sim.slice_ns && others_waiting(dev, op->ctx);
		if (contended && now >= turn_end)
			return false;
		uint64_t until = now + op->remaining_ns;
		if (until < now)
			until = UINT64_MAX;
		if (contended && turn_end < until)
			until = turn_end;
		struct timespec ts = {.tv_sec = (time_t)(until / 1000000000u),
				      .tv_nsec = (long)(until % 1000000000u)};
		pthread_cond_timedwait(&dev->wake_cv, &dev->lock, &ts);
		uint64_t ran = xgpu_now_ns() - now;
		op->remaining_ns -= ran < op->remaining_ns ? ran : op->remaining_ns;
	}
}

/* Runs ctx's operations for one turn (dev->lock held; released while an
 * operation works or sleeps). */
static void run_turn(struct sim_device *dev, struct CUctx_st *ctx)
{
	uint64_t turn_end = xgpu_now_ns() + sim.slice_ns;
	while (ctx_runnable(dev, ctx)) {
		struct sim_op *op = ctx->q_head;
		if (sim.slice_ns && !op->started && xgpu_now_ns() >= turn_end && others_waiting(dev, ctx))
			break;
		if (!op->started) {
			op->started = true;
			pthread_mutex_unlock(&dev->lock);
			op->start_ns = xgpu_now_ns();
			uint64_t t = op_work(dev, op);
			/* Started after its context began to go: no modeled time. */
			if (atomic_load(&ctx->dying))
				t = 0;
			op->too_long = sim.watchdog_ns && t > sim.watchdog_ns;
			op->remaining_ns = op->too_long ? sim.watchdog_ns : t;
			pthread_mutex_lock(&dev->lock);
		}
		if (!occupy(dev, op, turn_end))
			break; /* the turn is over; op goes on in a later one */
		bool timed_out = op->too_long && !op_cut_short(dev, op);
		/* Failed before anyone waiting sees the operation done, so that
		 * their synchronize answers the timeout (dev->lock held: the
		 * notice, which takes it, comes after). */
		bool failed_now = timed_out && sim_ctx_mark_failed(ctx, CUDA_ERROR_LAUNCH_TIMEOUT);
		ctx->q_head = op->next;
		if (!ctx->q_head) {
			ctx->q_tail = NULL;
			sim_list_del(&ctx->run_link);
		}
		if (op->kind == SIM_OP_EVENT)
			op->u.event.ev->time_ns = op->start_ns;
		ctx->done_seq = op->seq;
		update_done_mark(dev);
		pthread_cond_broadcast(&dev->done_cv);
		bool ctx_left = !ctx->q_head;
		pthread_mutex_unlock(&dev->lock);
		if (timed_out) {
			sim_log("an operation of context %llu ran into the %.3f s watchdog "
				"(XGPU_SIM_WATCHDOG_MS)",
				(unsigned long long)ctx->obj.id, (double)sim.watchdog_ns / 1e9);
			if (failed_now)
				sim_ctx_failed_notify(ctx, CUDA_ERROR_LAUNCH_TIMEOUT);
		}
		/* Outside the lock: this may drop the last reference to ctx. */
		sim_op_free(op);
		pthread_mutex_lock(&dev->lock);
		/* Without time slices the oldest operation of any context is
		 * next. */
		if (ctx_left || !sim.slice_ns)
			return;
	}
	/* Its turn is over with work left: to the back of the line. */
	if (!sim_list_empty(&ctx->run_link)) {
		sim_list_del(&ctx->run_link);
		sim_list_add(&dev->runq, &ctx->run_link);
	}
}

static void *worker_main(void *arg)
{
	struct sim_device *dev = arg;
	char name[16];
	snprintf(name, sizeof name, "xgpu-simgpu%d", dev->ordinal);
	prctl(PR_SET_NAME, name, 0, 0, 0);
	/* The default 50 us timer slack would stretch every short modeled
	 * operation (a small copy models as ~1.5 us) into a 50 us one. */
	prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
	pthread_mutex_lock(&dev->lock);
	for (;;) {
		struct CUctx_st *ctx = pick_ctx(dev);
		if (!ctx) {
			if (dev->stop && sim_list_empty(&dev->runq))
				break; /* stopping, and the queues are drained */
			pthread_cond_wait(&dev->work_cv, &dev->lock);
			continue;
		}
		run_turn(dev, ctx);
	}
	pthread_mutex_unlock(&dev->lock);
	return NULL;
}

int sim_worker_init(struct sim_device *dev)
{
	sim_list_init(&dev->runq);
	pthread_mutex_init(&dev->lock, NULL);
	pthread_cond_init(&dev->work_cv, NULL);
	pthread_cond_init(&dev->done_cv, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC); /* modeled ends are on it */
	pthread_cond_init(&dev->wake_cv, &ca);
	pthread_condattr_destroy(&ca);
	dev->inited = true;
	return 0;
}

/* Started with the device's first context, not by cuInit: a process that
 * confines itself between cuInit and its first context (the executor's
 * sandbox) has its worker, which runs kernels, confined as well. */
int sim_worker_ensure(struct sim_device *dev)
{
	pthread_mutex_lock(&dev->lock);
	int r = 0;
	if (!dev->started && !dev->stop) {
		if (pthread_create(&dev->thread, NULL, worker_main, dev) != 0)
			r = -1;
		else
			dev->started = true;
	}
	pthread_mutex_unlock(&dev->lock);
	return r;
}

void sim_worker_stop(struct sim_device *dev)
{
	if (!dev->inited)
		return;
	pthread_mutex_lock(&dev->lock);
	dev->stop = true;
	bool started = dev->started;
	pthread_cond_signal(&dev->work_cv);
	pthread_cond_broadcast(&dev->wake_cv);
	pthread_mutex_unlock(&dev->lock);
	if (started)
		pthread_join(dev->thread, NULL);
	pthread_cond_destroy(&dev->work_cv);
	pthread_cond_destroy(&dev->done_cv);
	pthread_cond_destroy(&dev->wake_cv);
	pthread_mutex_destroy(&dev->lock);
	dev->started = dev->inited = false;
}

/* ---- streams ----------------------------------------------------------------------- */

static bool is_null_stream(CUstream h)
{
	return !h || h == CU_STREAM_LEGACY || h == CU_STREAM_PER_THREAD;
}

CUresult sim_stream_get(CUstream h, struct CUctx_st *ctx, struct CUstream_st **out)
{
	*out = NULL;
	if (is_null_stream(h))
		return CUDA_SUCCESS;
	struct CUstream_st *s = sim_obj_get(h, SIM_STREAM);
	if (!s)
		return CUDA_ERROR_INVALID_HANDLE;
	if (s->ctx != ctx) {
		sim_obj_put(&s->obj);
		return CUDA_ERROR_INVALID_HANDLE;
	}
	*out = s;
	return CUDA_SUCCESS;
}

void sim_stream_put(struct CUstream_st *s)
{
	if (s)
		sim_obj_put(&s->obj);
}

/* Publishes a new stream or event obj of c: registers it, then links it
 * into list (of c) unless c was destroyed meanwhile. The check and the add
 * share c->lock so that context teardown, which sets destroyed under it and
 * then drops what the lists hold, cannot miss the object. On failure the
 * caller's hold on obj, and with it the context reference obj carries, is
 * given up: neither obj nor c may be used after. */
static CUresult adopt(struct CUctx_st *c, struct sim_obj *obj, enum sim_kind kind,
		      void (*release)(struct sim_obj *), struct sim_link *link, struct sim_link *list)
{
	if (sim_obj_register(obj, kind, release) < 0) {
		release(obj);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	pthread_mutex_lock(&c->lock);
	bool dead = c->destroyed;
	if (!dead)
		sim_list_add(list, link);
	pthread_mutex_unlock(&c->lock);
	if (dead) {
		if (sim_obj_unregister(obj))
			sim_obj_put(obj);
		return CUDA_ERROR_CONTEXT_IS_DESTROYED;
	}
	return CUDA_SUCCESS;
}

static void stream_release(struct sim_obj *o)
{
	struct CUstream_st *s = (struct CUstream_st *)o;
	sim_ctx_put(s->ctx);
	free(s);
}

/* Stream priorities of the modeled GPU: 0 (least) to -5 (greatest). */
#define SIM_PRIO_LEAST 0
#define SIM_PRIO_GREATEST (-5)

/* Internal so that cuStreamCreate never goes through the PLT to an
 * interposed cuStreamCreateWithPriority. */
static CUresult stream_create(CUstream *phStream, unsigned int flags, int priority)
{
	struct CUctx_st *c;
	CUresult r = sim_ctx_enter(&c, false);
	if (r)
		return r;
	if (!phStream || (flags & ~(unsigned)CU_STREAM_NON_BLOCKING)) {
		sim_ctx_put(c);
		return CUDA_ERROR_INVALID_VALUE;
	}
	struct CUstream_st *s = calloc(1, sizeof *s);
	if (!s) {
		sim_ctx_put(c);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	s->ctx = c; /* takes over the reference from sim_ctx_enter */
	s->flags = flags;
	/* Out-of-range priorities are clamped, as documented. */
	s->priority = priority > SIM_PRIO_LEAST      ? SIM_PRIO_LEAST
		      : priority < SIM_PRIO_GREATEST ? SIM_PRIO_GREATEST
						     : priority;
	sim_list_init(&s->link);
	r = adopt(c, &s->obj, SIM_STREAM, stream_release, &s->link, &c->streams);
	if (r)
		return r;
	*phStream = s;
	return CUDA_SUCCESS;
}

CUresult cuStreamCreateWithPriority(CUstream *phStream, unsigned int flags, int priority)
{
	return stream_create(phStream, flags, priority);
}

CUresult cuStreamCreate(CUstream *phStream, unsigned int Flags)
{
	return stream_create(phStream, Flags, 0);
}

CUresult cuCtxGetStreamPriorityRange(int *leastPriority, int *greatestPriority)
{
	struct CUctx_st *c;
	CUresult r = sim_ctx_enter(&c, true);
	if (r)
		return r;
	sim_ctx_put(c);
	/* Either pointer may be NULL, as with the real driver. */
	if (leastPriority)
		*leastPriority = SIM_PRIO_LEAST;
	if (greatestPriority)
		*greatestPriority = SIM_PRIO_GREATEST;
	return CUDA_SUCCESS;
}

CUresult cuStreamGetPriority(CUstream hStream, int *priority)
{
	struct CUctx_st *c;
	CUresult r = sim_ctx_enter(&c, true);
	if (r)
		return r;
	struct CUstream_st *s = NULL;
	if (!priority)
		r = CUDA_ERROR_INVALID_VALUE;
	else
		r = sim_stream_get(hStream, c, &s);
	if (!r)
		*priority = s ? s->priority : SIM_PRIO_LEAST;
	sim_stream_put(s);
	sim_ctx_put(c);
	return r;
}

/* Unlinks obj (a stream or event of ctx) after the caller unregistered it,
 * and drops the registry's reference. */
static void unlink_and_put(struct CUctx_st *ctx, struct sim_link *link, struct sim_obj *obj)
{
	pthread_mutex_lock(&ctx->lock);
	sim_list_del(link);
	pthread_mutex_unlock(&ctx->lock);
	sim_obj_put(obj);
}

CUresult cuStreamDestroy(CUstream hStream)
{
	if (!atomic_load(&sim.initialized))
		return CUDA_ERROR_NOT_INITIALIZED;
	struct CUstream_st *s = is_null_stream(hStream) ? NULL : sim_obj_get(hStream, SIM_STREAM);
	if (!s)
		return CUDA_ERROR_INVALID_HANDLE;
	CUresult r = CUDA_ERROR_INVALID_HANDLE;
	/* Work already queued in it still runs: operations do not refer to
	 * the stream once submitted. */
	if (sim_obj_unregister(&s->obj)) {
		unlink_and_put(s->ctx, &s->link, &s->obj);
		r = (CUresult)atomic_load(&s->ctx->sticky);
	}
	sim_obj_put(&s->obj);
	return r;
}

/* The context and last sequence number of stream h: the current context's
 * NULL stream, or a stream of any context. */
static CUresult stream_target(CUstream h, struct CUctx_st **ctx, uint64_t *seq)
{
	if (is_null_stream(h)) {
		CUresult r = sim_ctx_enter(ctx, true);
		if (r)
			return r;
		pthread_mutex_lock(&(*ctx)->dev->lock);
		*seq = (*ctx)->null_last_seq;
		pthread_mutex_unlock(&(*ctx)->dev->lock);
		return CUDA_SUCCESS;
	}
	if (!atomic_load(&sim.initialized))
		return CUDA_ERROR_NOT_INITIALIZED;
	struct CUstream_st *s = sim_obj_get(h, SIM_STREAM);
	if (!s)
		return CUDA_ERROR_INVALID_HANDLE;
	*ctx = s->ctx;
	sim_obj_ref(&s->ctx->obj);
	pthread_mutex_lock(&s->ctx->dev->lock);
	*seq = s->last_seq;
	pthread_mutex_unlock(&s->ctx->dev->lock);
	sim_obj_put(&s->obj);
	return CUDA_SUCCESS;
}

CUresult cuStreamSynchronize(CUstream hStream)
{
	struct CUctx_st *c;
	uint64_t seq;
	CUresult r = stream_target(hStream, &c, &seq);
	if (r)
		return r;
	if (!atomic_load(&c->sticky))
		sim_wait_ctx_seq(c, seq);
	r = (CUresult)atomic_load(&c->sticky);
	sim_ctx_put(c);
	return r;
}

CUresult cuStreamQuery(CUstream hStream)
{
	struct CUctx_st *c;
	uint64_t seq;
	CUresult r = stream_target(hStream, &c, &seq);
	if (r)
		return r;
	r = (CUresult)atomic_load(&c->sticky);
	if (!r && !sim_ctx_seq_done(c, seq))
		r = CUDA_ERROR_NOT_READY;
	sim_ctx_put(c);
	return r;
}

/* ---- events -------------------------------------------------------------------------- */

static void event_release(struct sim_obj *o)
{
	struct CUevent_st *e = (struct CUevent_st *)o;
	sim_ctx_put(e->ctx);
	free(e);
}

CUresult cuEventCreate(CUevent *phEvent, unsigned int Flags)
{
	struct CUctx_st *c;
	CUresult r = sim_ctx_enter(&c, false);
	if (r)
		return r;
	const unsigned known = CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS;
	if (!phEvent || (Flags & ~known) ||
	    ((Flags & CU_EVENT_INTERPROCESS) && !(Flags & CU_EVENT_DISABLE_TIMING))) {
		sim_ctx_put(c);
		return CUDA_ERROR_INVALID_VALUE;
	}
	struct CUevent_st *e = calloc(1, sizeof *e);
	if (!e) {
		sim_ctx_put(c);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	e->ctx = c;
	e->flags = Flags;
	sim_list_init(&e->link);
	r = adopt(c, &e->obj, SIM_EVENT, event_release, &e->link, &c->events);
	if (r)
		return r;
	*phEvent = e;
	return CUDA_SUCCESS;
}

CUresult cuEventDestroy(CUevent hEvent)
{
	if (!atomic_load(&sim.initialized))
		return CUDA_ERROR_NOT_INITIALIZED;
	struct CUevent_st *e = sim_obj_get(hEvent, SIM_EVENT);
	if (!e)
		return CUDA_ERROR_INVALID_HANDLE;
	CUresult r = CUDA_ERROR_INVALID_HANDLE;
	/* A pending record keeps its own reference: the event's memory goes
	 * when that completes, as documented for the real driver. */
	if (sim_obj_unregister(&e->obj)) {
		unlink_and_put(e->ctx, &e->link, &e->obj);
		r = (CUresult)atomic_load(&e->ctx->sticky);
	}
	sim_obj_put(&e->obj);
	return r;
}

CUresult cuEventRecord(CUevent hEvent, CUstream hStream)
{
	struct CUctx_st *c;
	CUresult r = sim_ctx_enter(&c, false);
	if (r)
		return r;
	struct CUevent_st *e = sim_obj_get(hEvent, SIM_EVENT);
	if (!e || e->ctx != c) {
		if (e)
			sim_obj_put(&e->obj);
		sim_ctx_put(c);
		return CUDA_ERROR_INVALID_HANDLE;
	}
	struct CUstream_st *s;
	r = sim_stream_get(hStream, c, &s);
	struct sim_op *op = r ? NULL : sim_op_new(c, SIM_OP_EVENT);
	if (!r && !op)
		r = CUDA_ERROR_OUT_OF_MEMORY;
	if (op) {
		op->u.event.ev = e; /* the op takes our reference */
		e = NULL;
		r = sim_submit_live(op, s);
	}
	if (e)
		sim_obj_put(&e->obj);
	sim_stream_put(s);
	sim_ctx_put(c);
	return r;
}

/* Looks up an event for a query; fails with the context's sticky error. */
static CUresult event_get(CUevent h, struct CUevent_st **out)
{
	if (!atomic_load(&sim.initialized))
		return CUDA_ERROR_NOT_INITIALIZED;
	struct CUevent_st *e = sim_obj_get(h, SIM_EVENT);
	if (!e)
		return CUDA_ERROR_INVALID_HANDLE;
	CUresult r = (CUresult)atomic_load(&e->ctx->sticky);
	if (r) {
		sim_obj_put(&e->obj);
		return r;
	}
	*out = e;
	return CUDA_SUCCESS;
}

/* The event's captured sequence number, its timestamp and whether it is done. */
static bool event_state(struct CUevent_st *e, uint64_t *seq, uint64_t *time_ns)
{
	struct sim_device *dev = e->ctx->dev;
	pthread_mutex_lock(&dev->lock);
	*seq = e->seq;
	*time_ns = e->time_ns;
	bool done = e->ctx->done_seq >= e->seq;
	pthread_mutex_unlock(&dev->lock);
	return done;
}

CUresult cuEventQuery(CUevent hEvent)
{
	struct CUevent_st *e;
	CUresult r = event_get(hEvent, &e);
	if (r)
		return r;
	uint64_t seq, t;
	/* Never recorded: an empty set of work, which is complete. */
	r = event_state(e, &seq, &t) ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
	sim_obj_put(&e->obj);
	return r;
}

CUresult cuEventSynchronize(CUevent hEvent)
{
	struct CUevent_st *e;
	CUresult r = event_get(hEvent, &e);
	if (r)
		return r;
	uint64_t seq, t;
	event_state(e, &seq, &t);
	sim_wait_ctx_seq(e->ctx, seq);
	r = (CUresult)atomic_load(&e->ctx->sticky);
	sim_obj_put(&e->obj);
	return r;
}

CUresult cuEventElapsedTime(float *pMilliseconds, CUevent hStart, CUevent hEnd)
{
	if (!atomic_load(&sim.initialized))
		return CUDA_ERROR_NOT_INITIALIZED;
	if (!pMilliseconds)
		return CUDA_ERROR_INVALID_VALUE;
	struct CUevent_st *a, *b;
	CUresult r = event_get(hStart, &a);
	if (r)
		return r;
	r = event_get(hEnd, &b);
	if (r) {
		sim_obj_put(&a->obj);
		return r;
	}
	uint64_t sa, ta, sb, tb;
	bool da = event_state(a, &sa, &ta), db = event_state(b, &sb, &tb);
	if ((a->flags | b->flags) & CU_EVENT_DISABLE_TIMING)
		r = CUDA_ERROR_INVALID_HANDLE;
	else if (!sa || !sb)
		r = CUDA_ERROR_INVALID_HANDLE; /* never recorded */
	else if (!da || !db)
		r = CUDA_ERROR_NOT_READY;
	else
		*pMilliseconds = (float)(((double)tb - (double)ta) / 1e6);
	sim_obj_put(&a->obj);
	sim_obj_put(&b->obj);
	return r;
}

CUresult cuStreamWaitEvent(CUstream hStream, CUevent hEvent, unsigned int Flags)
{
	struct CUctx_st *c;
	CUresult r = sim_ctx_enter(&c, false);
	if (r)
		return r;
	struct CUstream_st *s;
	r = sim_stream_get(hStream, c, &s);
	if (r) {
		sim_ctx_put(c);
		return r;
	}
	struct CUevent_st *e = sim_obj_get(hEvent, SIM_EVENT);
	if (!e)
		r = CUDA_ERROR_INVALID_HANDLE;
	else if (Flags != CU_EVENT_WAIT_DEFAULT)
		r = CUDA_ERROR_INVALID_VALUE;
	else if (e->ctx == c) {
		/* The same context's FIFO already orders the work; but the
		 * stream's own synchronize and query must now cover what it
		 * waits for too, as on a GPU (PyTorch's wait_stream, then
		 * synchronize, then a query of the other stream). */
		pthread_mutex_lock(&c->dev->lock);
		uint64_t *last = s ? &s->last_seq : &c->null_last_seq;
		if (e->seq > *last)
			*last = e->seq;
		pthread_mutex_unlock(&c->dev->lock);
	} else {
		/* Another context's work runs on its own: queue a wait for
		 * the work the event captured now. */
		uint64_t seq, t;
		if (!event_state(e, &seq, &t)) {
			struct sim_op *op = sim_op_new(c, SIM_OP_WAIT);
			if (!op)
				r = CUDA_ERROR_OUT_OF_MEMORY;
			else {
				op->u.wait.ctx = e->ctx;
				sim_obj_ref(&e->ctx->obj);
				op->u.wait.seq = seq;
				r = sim_submit_live(op, s);
			}
		}
	}
	if (e)
		sim_obj_put(&e->obj);
	sim_stream_put(s);
	sim_ctx_put(c);
	return r;
}

CUresult cuLaunchHostFunc(CUstream hStream, CUhostFn fn, void *userData)
{
	struct CUctx_st *c;
	CUresult r = sim_ctx_enter(&c, false);
	if (r)
		return r;
	struct CUstream_st *s;
	r = sim_stream_get(hStream, c, &s);
	if (r) {
		sim_ctx_put(c);
		return r;
	}
	struct sim_op *op = fn ? sim_op_new(c, SIM_OP_HOSTFN) : NULL;
	if (!fn)
		r = CUDA_ERROR_INVALID_VALUE;
	else if (!op)
		r = CUDA_ERROR_OUT_OF_MEMORY;
	else {
		op->u.hostfn.fn = fn;
		op->u.hostfn.arg = userData;
		r = sim_submit_live(op, s);
	}
	sim_stream_put(s);
	sim_ctx_put(c);
	return r;
}

/* Drops every stream and event of ctx (being destroyed, its work done). */
void sim_exec_release_ctx(struct CUctx_st *ctx)
{
	struct sim_link *lists[2] = {&ctx->streams, &ctx->events};
	for (int k = 0; k < 2; k++) {
		for (;;) {
			struct sim_obj *victim = NULL;
			pthread_mutex_lock(&ctx->lock);
			for (struct sim_link *l = lists[k]->next; l != lists[k]; l = l->next) {
				struct sim_obj *o = k == 0
							? &sim_container_of(l, struct CUstream_st, link)->obj
							: &sim_container_of(l, struct CUevent_st, link)->obj;
				/* One being destroyed by another thread right now is
				 * unlinked by that thread. */
				if (sim_obj_unregister(o)) {
					sim_list_del(l);
					victim = o;
					break;
				}
			}
			bool more = victim != NULL;
			pthread_mutex_unlock(&ctx->lock);
			if (!more)
				break;
			sim_obj_put(victim);
		}
	}
}
