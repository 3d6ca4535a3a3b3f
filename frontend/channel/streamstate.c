/* SPDX-License-Identifier: Apache-2.0 */
/* streamstate.c - per-stream state both API frontends share (linked into
 * libcuda.so.1 with the client, so a stream has one state whichever API
 * names it): host callbacks and stream attributes.
 *
 * Host callbacks (cudaLaunchHostFunc, cudaStreamAddCallback and the driver's
 * forms) run in the guest process on one callback thread, in the order they
 * were enqueued. Enqueuing records an event on the stream (after the work
 * before it) and returns at once; the callback thread polls that event
 * (EVENT_QUERY, never a blocking call that would hold the channel) and runs
 * the function once the stream has reached it. The stream must not run
 * later work before the callback returns: that later work is held back here,
 * in the submitting thread, until the callbacks it must follow have run (see
 * xgpu_stream_gate). So the daemon never waits on a guest, and a callback
 * that never returns stalls only its own process. What is weaker than CUDA:
 * a thread that submits work to a stream with a callback outstanding waits
 * in that call rather than returning at once (stream work before the
 * callback still runs asynchronously), and a callback starts up to about a
 * millisecond after its stream reaches it. */
#include "client.h"

#include <cuda.h>
#include <driver_types.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct hostfn_item {
	struct hostfn_item *next;
	struct xgpu_client *c;
	xgpu_handle_t stream, event;
	xgpu_hostfn_run_t run;
	void (*fn)(void);
	void *api_stream, *user;
};

/* Callbacks enqueued and not yet finished, per stream. */
struct pending {
	struct xgpu_client *c;
	xgpu_handle_t stream;
	unsigned count;
};

static pthread_mutex_t cb_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cb_work = PTHREAD_COND_INITIALIZER, cb_done = PTHREAD_COND_INITIALIZER;
static struct hostfn_item *cb_head, **cb_tail = &cb_head;
static struct pending *pend;
static size_t npend, cappend;
static atomic_uint cb_outstanding; /* fast path: no gate while 0 */
static bool cb_thread_running;
/* The callback thread, and a thread recording a callback's own event, pass
 * the gate: neither is stream work the callbacks must precede. */
static _Thread_local bool gate_exempt;

static struct pending *pending_find(struct xgpu_client *c, xgpu_handle_t stream, bool add)
{
	for (size_t i = 0; i < npend; i++)
		if (pend[i].c == c && pend[i].stream == stream)
			return &pend[i];
	if (!add)
		return NULL;
	if (npend == cappend) {
		size_t cap = cappend ? cappend * 2 : 8;
		struct pending *v = realloc(pend, cap * sizeof *v);
		if (!v)
			return NULL;
		pend = v;
		cappend = cap;
	}
	pend[npend] = (struct pending){c, stream, 0};
	return &pend[npend++];
}

/* Whether work on stream must still wait for callbacks (cb_lock held). The
 * legacy default stream follows every stream's callbacks, and every stream
 * follows the default stream's (also for non-blocking streams: stricter
 * than CUDA, never weaker). */
static bool must_wait(struct xgpu_client *c, xgpu_handle_t stream)
{
	for (size_t i = 0; i < npend; i++)
		if (pend[i].c == c && pend[i].count &&
		    (stream == XGPU_STREAM_DEFAULT || pend[i].stream == stream ||
		     pend[i].stream == XGPU_STREAM_DEFAULT))
			return true;
	return false;
}

static void sleep_ns(long ns)
{
	struct timespec ts = {0, ns};
	nanosleep(&ts, NULL);
}

/* The event's answer once it is no longer pending: cudaSuccess, or the
 * stream's (sticky) error, which is the status CUDA gives the callback. */
static int wait_reached(struct xgpu_client *c, xgpu_handle_t event)
{
	long backoff = 20000;
	for (;;) {
		struct xgpu_req_EVENT_QUERY req = {.event = event};
		struct xgpu_rsp_EVENT_QUERY rsp;
		int e = xgpu_call_EVENT_QUERY(c, &req, &rsp);
		if (e != cudaErrorNotReady)
			return e;
		sleep_ns(backoff);
		if (backoff < 1000000)
			backoff *= 2;
	}
}

static void *callback_thread(void *arg)
{
	(void)arg;
	gate_exempt = true;
	for (;;) {
		pthread_mutex_lock(&cb_lock);
		while (!cb_head)
			pthread_cond_wait(&cb_work, &cb_lock);
		struct hostfn_item *it = cb_head;
		cb_head = it->next;
		if (!cb_head)
			cb_tail = &cb_head;
		pthread_mutex_unlock(&cb_lock);

		int status = wait_reached(it->c, it->event);
		it->run(it->fn, it->api_stream, status, it->user);
		struct xgpu_req_EVENT_DESTROY dreq = {.event = it->event};
		struct xgpu_rsp_EVENT_DESTROY drsp;
		xgpu_call_EVENT_DESTROY(it->c, &dreq, &drsp);

		pthread_mutex_lock(&cb_lock);
		struct pending *p = pending_find(it->c, it->stream, false);
		if (p && p->count && !--p->count)
			*p = pend[--npend]; /* streams come and go: keep only busy ones */
		atomic_fetch_sub(&cb_outstanding, 1);
		pthread_cond_broadcast(&cb_done);
		pthread_mutex_unlock(&cb_lock);
		free(it);
	}
	return NULL;
}

int (*xgpu_hostfn_capture_hook)(xgpu_handle_t stream);

int xgpu_hostfn_enqueue(struct xgpu_client *c, xgpu_handle_t stream, xgpu_hostfn_run_t run, void (*fn)(void),
			void *api_stream, void *user)
{
	int (*capture)(xgpu_handle_t) = xgpu_hostfn_capture_hook;
	int e = capture ? capture(stream) : cudaSuccess;
	if (e)
		return e;
	struct hostfn_item *it = calloc(1, sizeof *it);
	if (!it)
		return cudaErrorMemoryAllocation;
	struct xgpu_req_EVENT_CREATE creq = {.flags = CU_EVENT_DISABLE_TIMING};
	struct xgpu_rsp_EVENT_CREATE crsp;
	e = xgpu_call_EVENT_CREATE(c, &creq, &crsp);
	if (e) {
		free(it);
		return e;
	}
	/* The callback point: after the stream's work so far. Earlier
	 * callbacks on it are ahead in the queue, so this record need not wait
	 * for them. */
	struct xgpu_req_EVENT_RECORD rreq = {.event = crsp.event, .stream = stream};
	struct xgpu_rsp_EVENT_RECORD rrsp;
	bool was_exempt = gate_exempt;
	gate_exempt = true;
	e = xgpu_call_EVENT_RECORD(c, &rreq, &rrsp);
	gate_exempt = was_exempt;
	if (e) {
		struct xgpu_req_EVENT_DESTROY dreq = {.event = crsp.event};
		struct xgpu_rsp_EVENT_DESTROY drsp;
		xgpu_call_EVENT_DESTROY(c, &dreq, &drsp);
		free(it);
		return e;
	}
	*it = (struct hostfn_item){NULL, c, stream, crsp.event, run, fn, api_stream, user};
	pthread_mutex_lock(&cb_lock);
	struct pending *p = pending_find(c, stream, true);
	if (!cb_thread_running) {
		pthread_attr_t attr;
		pthread_t t;
		pthread_attr_init(&attr);
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		cb_thread_running = p && pthread_create(&t, &attr, callback_thread, NULL) == 0;
		pthread_attr_destroy(&attr);
	}
	if (!p || !cb_thread_running) {
		pthread_mutex_unlock(&cb_lock);
		struct xgpu_req_EVENT_DESTROY dreq = {.event = crsp.event};
		struct xgpu_rsp_EVENT_DESTROY drsp;
		xgpu_call_EVENT_DESTROY(c, &dreq, &drsp);
		free(it);
		return cudaErrorMemoryAllocation;
	}
	p->count++;
	atomic_fetch_add(&cb_outstanding, 1);
	*cb_tail = it;
	cb_tail = &it->next;
	pthread_cond_signal(&cb_work);
	pthread_mutex_unlock(&cb_lock);
	return cudaSuccess;
}

static void attrs_forget(struct xgpu_client *c, xgpu_handle_t stream);

int xgpu_stream_gate(struct xgpu_client *c, const struct xgpu_rpc *r)
{
	if (r->call == XGPU_CALL_STREAM_DESTROY && r->req_len >= sizeof(struct xgpu_req_STREAM_DESTROY)) {
		struct xgpu_req_STREAM_DESTROY req;
		memcpy(&req, r->req, sizeof req);
		attrs_forget(c, req.stream);
	}
	if (!atomic_load(&cb_outstanding) || gate_exempt)
		return cudaSuccess;
	xgpu_handle_t stream = XGPU_STREAM_DEFAULT;
	if (!xgpu_req_stream(r->call, r->req, r->req_len, &stream) && r->call != XGPU_CALL_DEVICE_SYNC)
		return cudaSuccess;
	pthread_mutex_lock(&cb_lock);
	int e = cudaSuccess;
	if (r->call == XGPU_CALL_STREAM_QUERY)
		e = must_wait(c, stream) ? cudaErrorNotReady : cudaSuccess;
	else
		while (must_wait(c, stream))
			pthread_cond_wait(&cb_done, &cb_lock);
	pthread_mutex_unlock(&cb_lock);
	return e;
}

/* ---- stream attributes ------------------------------------------------------ */

/* The attributes CUDA allows on a stream, by CUlaunchAttributeID. */
#define ATTR_MAX (CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN + 1)

struct stream_attrs {
	struct xgpu_client *c;
	xgpu_handle_t stream;
	uint32_t set; /* bit per attribute id */
	CUlaunchAttributeValue v[ATTR_MAX];
};

static pthread_mutex_t attrs_lock = PTHREAD_MUTEX_INITIALIZER;
static struct stream_attrs *attrs;
static size_t nattrs, capattrs;

static void attrs_forget(struct xgpu_client *c, xgpu_handle_t stream)
{
	pthread_mutex_lock(&attrs_lock);
	for (size_t i = 0; i < nattrs; i++)
		if (attrs[i].c == c && attrs[i].stream == stream) {
			attrs[i] = attrs[--nattrs];
			break;
		}
	pthread_mutex_unlock(&attrs_lock);
}

static bool stream_attr_allowed(int attr)
{
	switch (attr) {
	case CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW:
	case CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY:
	case CU_LAUNCH_ATTRIBUTE_PRIORITY:
	case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP:
	case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN:
		return true;
	default:
		return false;
	}
}

/* The stream's priority and the device's range; also proves the handle is
 * one of this process's streams. */
static int stream_priority(struct xgpu_client *c, xgpu_handle_t stream, struct xgpu_rsp_STREAM_PRIORITY *out)
{
	struct xgpu_req_STREAM_PRIORITY req = {.stream = stream};
	return xgpu_call_STREAM_PRIORITY(c, &req, out);
}

int xgpu_stream_attr_set(struct xgpu_client *c, xgpu_handle_t stream, int attr, const void *value)
{
	if (!value || !stream_attr_allowed(attr))
		return cudaErrorInvalidValue;
	CUlaunchAttributeValue v;
	memcpy(&v, value, sizeof v);
	struct xgpu_rsp_STREAM_PRIORITY pr;
	int e = stream_priority(c, stream, &pr);
	if (e)
		return e;
	switch (attr) {
	case CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW: {
		const CUaccessPolicyWindow *w = &v.accessPolicyWindow;
		/* A hint for the L2 cache; the values must be ones CUDA accepts. */
		if (!(w->hitRatio >= 0.0f && w->hitRatio <= 1.0f) ||
		    w->hitProp > CU_ACCESS_PROPERTY_PERSISTING || w->missProp > CU_ACCESS_PROPERTY_PERSISTING)
			return cudaErrorInvalidValue;
		break;
	}
	case CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY:
		if (v.syncPolicy < CU_SYNC_POLICY_AUTO || v.syncPolicy > CU_SYNC_POLICY_BLOCKING_SYNC)
			return cudaErrorInvalidValue;
		break;
	case CU_LAUNCH_ATTRIBUTE_PRIORITY:
		/* Clamped into the device's range, as stream creation clamps. */
		if (v.priority > pr.least)
			v.priority = pr.least;
		if (v.priority < pr.greatest)
			v.priority = pr.greatest;
		break;
	case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN:
		if (v.memSyncDomain > CU_LAUNCH_MEM_SYNC_DOMAIN_REMOTE)
			return cudaErrorInvalidValue;
		break;
	default:
		break;
	}
	pthread_mutex_lock(&attrs_lock);
	struct stream_attrs *a = NULL;
	for (size_t i = 0; i < nattrs && !a; i++)
		if (attrs[i].c == c && attrs[i].stream == stream)
			a = &attrs[i];
	if (!a && nattrs == capattrs) {
		size_t cap = capattrs ? capattrs * 2 : 8;
		struct stream_attrs *n = realloc(attrs, cap * sizeof *n);
		if (n) {
			attrs = n;
			capattrs = cap;
		}
	}
	if (!a && nattrs < capattrs) {
		a = &attrs[nattrs++];
		memset(a, 0, sizeof *a);
		a->c = c;
		a->stream = stream;
	}
	if (a) {
		a->v[attr] = v;
		a->set |= 1u << attr;
	}
	pthread_mutex_unlock(&attrs_lock);
	return a ? cudaSuccess : cudaErrorMemoryAllocation;
}

int xgpu_stream_attr_get(struct xgpu_client *c, xgpu_handle_t stream, int attr, void *value)
{
	if (!value || !stream_attr_allowed(attr))
		return cudaErrorInvalidValue;
	struct xgpu_rsp_STREAM_PRIORITY pr;
	int e = stream_priority(c, stream, &pr);
	if (e)
		return e;
	CUlaunchAttributeValue v;
	memset(&v, 0, sizeof v);
	bool found = false;
	pthread_mutex_lock(&attrs_lock);
	for (size_t i = 0; i < nattrs && !found; i++)
		if (attrs[i].c == c && attrs[i].stream == stream && (attrs[i].set & (1u << attr))) {
			v = attrs[i].v[attr];
			found = true;
		}
	pthread_mutex_unlock(&attrs_lock);
	if (!found) {
		/* What a stream has before anything was set. */
		if (attr == CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY)
			v.syncPolicy = CU_SYNC_POLICY_AUTO;
		else if (attr == CU_LAUNCH_ATTRIBUTE_PRIORITY)
			v.priority = pr.priority;
		else if (attr == CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP) {
			v.memSyncDomainMap.default_ = 0;
			v.memSyncDomainMap.remote = 1;
		}
	}
	memcpy(value, &v, sizeof v);
	return cudaSuccess;
}

int xgpu_stream_get_priority(struct xgpu_client *c, xgpu_handle_t stream, int *priority, int *least,
			     int *greatest)
{
	struct xgpu_rsp_STREAM_PRIORITY pr;
	int e = stream_priority(c, stream, &pr);
	if (e)
		return e;
	int prio = pr.priority;
	pthread_mutex_lock(&attrs_lock);
	for (size_t i = 0; i < nattrs; i++)
		if (attrs[i].c == c && attrs[i].stream == stream &&
		    (attrs[i].set & (1u << CU_LAUNCH_ATTRIBUTE_PRIORITY)))
			prio = attrs[i].v[CU_LAUNCH_ATTRIBUTE_PRIORITY].priority;
	pthread_mutex_unlock(&attrs_lock);
	if (priority)
		*priority = prio;
	if (least)
		*least = pr.least;
	if (greatest)
		*greatest = pr.greatest;
	return cudaSuccess;
}

/* A forked child has no callback thread and none of the parent's streams. */
static void streamstate_child(void)
{
	pthread_mutex_init(&cb_lock, NULL);
	pthread_cond_init(&cb_work, NULL);
	pthread_cond_init(&cb_done, NULL);
	pthread_mutex_init(&attrs_lock, NULL);
	cb_head = NULL;
	cb_tail = &cb_head;
	npend = 0;
	nattrs = 0;
	atomic_store(&cb_outstanding, 0);
	cb_thread_running = false;
}

__attribute__((constructor)) static void streamstate_setup(void)
{
	pthread_atfork(NULL, NULL, streamstate_child);
}
