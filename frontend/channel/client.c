/* SPDX-License-Identifier: Apache-2.0 */
/* client.c - the frontend's channel to xgpud (see client.h).
 *
 * Connection is lazy, like the CUDA runtime's own initialisation: the first
 * call that needs the device connects, and a failure is sticky and explained
 * once on stderr. Each exchange holds the channel lock from posting the
 * request to consuming the response, so requests, their bulk data and the
 * responses stay in order without per-request framing in the data areas.
 */
#include "client.h"
#include "managed.h"
#include "xenrole.h"

#include "shm.h"
#include "transport.h"
#include "util.h"

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <search.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* How long a channel whose backend went waits for xgpud to write why. */
#define END_GRACE_NS 2000000000ull

struct xgpu_client {
	pthread_mutex_t lock;
	struct xgpu_fe_chan ch;
	struct xgpu_shm_view v;
	struct xgpu_hello_ack ack;
	uint64_t seq;
	uint64_t spin_ns;
	int dead_error; /* non-zero once the channel is unusable */
	/* Pipelining (remote channels by default, XGPU_PIPELINE=0|1): an
	 * asynchronous call whose answer is only its status returns once sent;
	 * its answer is settled before the next call that waits, which reports
	 * a deferred failure, as CUDA reports an asynchronous one. */
	bool pipeline;
	unsigned deferred; /* answers outstanding, oldest at deferred_head */
	unsigned deferred_head;
	struct {
		uint64_t seq;
		uint32_t call;
	} pending[XGPU_MAX_DEFERRED];
	int deferred_error; /* the first deferred failure not yet reported */
};

enum client_state { CLIENT_NEW, CLIENT_UP, CLIENT_FAILED };

/* The process's channel, used by the runtime API. */
static struct xgpu_client client = {.lock = PTHREAD_MUTEX_INITIALIZER};
static pthread_mutex_t init_lock = PTHREAD_MUTEX_INITIALIZER;
static enum client_state state = CLIENT_NEW;
static int init_error;
unsigned xgpu_fork_generation;

static bool quiet(void)
{
	const char *l = getenv("XGPU_LOG");
	return l && !strcmp(l, "error");
}

static pthread_mutex_t warn_lock = PTHREAD_MUTEX_INITIALIZER;
static void *warned; /* keys already warned about */

/* NVIDIA's runtime dlcloses libcuda.so.1 when it gives up on it; what it
 * warned about must not outlive the library. */
__attribute__((destructor)) static void forget_warnings(void)
{
	tdestroy(warned, free);
	warned = NULL;
}

void xgpu_fe_warn_once(const char *key, const char *fmt, ...)
{
	if (quiet())
		return;
	pthread_mutex_lock(&warn_lock);
	bool fresh = false;
	if (!tfind(key, &warned, (int (*)(const void *, const void *))strcmp)) {
		char *copy = strdup(key);
		fresh = copy && tsearch(copy, &warned, (int (*)(const void *, const void *))strcmp);
		if (copy && !fresh)
			free(copy);
	}
	pthread_mutex_unlock(&warn_lock);
	if (!fresh)
		return;
	va_list ap;
	va_start(ap, fmt);
	fputs("xgpu: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

static void child_after_fork(void)
{
	/* The parent keeps its channel; the child gets its own on first use. */
	pthread_mutex_init(&client.lock, NULL);
	pthread_mutex_init(&init_lock, NULL);
	pthread_mutex_init(&warn_lock, NULL);
	if (state == CLIENT_UP)
		client.ch.ops->abandon(&client.ch);
	state = CLIENT_NEW;
	init_error = 0;
	client.dead_error = 0;
	xgpu_fork_generation++;
}

__attribute__((constructor)) static void client_setup(void)
{
	pthread_atfork(NULL, NULL, child_after_fork);
}

static int layout_region(void *region, size_t size, void *arg)
{
	return xgpu_shm_init(region, size, arg);
}

static uint64_t env_size(const char *name, uint64_t dflt)
{
	const char *s = getenv(name);
	uint64_t v;
	if (!s || !*s)
		return dflt;
	if (xgpu_parse_size(s, &v) < 0) {
		xgpu_fe_warn_once(name, "ignoring %s=%s: not a size", name, s);
		return dflt;
	}
	return v;
}

int xgpu_fe_check_ack(struct xgpu_hello_ack *ack, const char *peer, char *err, size_t errlen)
{
	if (ack->magic != XGPU_PROTO_MAGIC) {
		snprintf(err, errlen, "%s (bad handshake magic)", peer);
		return cudaErrorNoDevice;
	}
	if (ack->version != XGPU_PROTO_VERSION) {
		snprintf(err, errlen,
			 "protocol version mismatch: this libcudart.so.13 speaks xgpu protocol %u, xgpud "
			 "speaks %u; install matching versions",
			 XGPU_PROTO_VERSION, ack->version);
		return cudaErrorInsufficientDriver;
	}
	if (ack->status != 0) {
		ack->message[sizeof ack->message - 1] = '\0';
		snprintf(err, errlen, "xgpud refused the channel: %s", ack->message);
		return ack->status;
	}
	return 0;
}

/* XGPU_TRANSPORT=local|xen|remote wins; else remote when XGPU_REMOTE names
 * a GPU host, Xen in a domU (or on xgpu-xenstub), local everywhere else,
 * dom0 included. A domU is recognised with or
 * without xenfs (common/xenrole.c); where Xen cannot say which domain this
 * is, the one message names what was looked at. */
static const struct xgpu_fe_transport_ops *pick_transport(bool loud)
{
	const char *t = getenv("XGPU_TRANSPORT");
	if (t && *t) {
		if (!strcmp(t, "local"))
			return &xgpu_fe_transport_local;
		if (!strcmp(t, "xen"))
			return &xgpu_fe_transport_xen;
		if (!strcmp(t, "remote"))
			return &xgpu_fe_transport_remote;
		if (loud && !quiet())
			fprintf(stderr, "xgpu: XGPU_TRANSPORT=%s is not a transport (local, xen or remote)\n",
				t);
		return NULL;
	}
	const char *remote = getenv("XGPU_REMOTE");
	if (remote && *remote)
		return &xgpu_fe_transport_remote;
	const char *stub = getenv("XGPU_XEN_STUB");
	if (stub && *stub)
		return &xgpu_fe_transport_xen;
	char how[512];
	switch (xgpu_xen_role("", how, sizeof how)) {
	case XGPU_XEN_DOMU:
		return &xgpu_fe_transport_xen;
	case XGPU_XEN_NONE:
	case XGPU_XEN_DOM0:
		return &xgpu_fe_transport_local;
	case XGPU_XEN_UNKNOWN:
		break;
	}
	if (loud && !quiet())
		fprintf(stderr,
			"xgpu: cannot choose a transport: %s; set XGPU_TRANSPORT=xen in a Xen guest "
			"or XGPU_TRANSPORT=local, or mount xenfs on /proc/xen\n",
			how);
	return NULL;
}

static int connect_to(struct xgpu_client *c, const char *dom, uint32_t task, bool loud)
{
	const struct xgpu_fe_transport_ops *ops = pick_transport(loud);
	if (!ops)
		return cudaErrorInvalidValue;
	/* Xen: every region page is a grant, and gntalloc's default budget is
	 * 1024 of them for the whole domain, so a smaller default data area. */
	uint32_t dflt_data = ops == &xgpu_fe_transport_xen ? (512u << 10) : (4u << 20);
	struct xgpu_shm_params p = {.nr_slots = XGPU_CLIENT_SLOTS, .data_size = dflt_data};
	uint64_t data = env_size("XGPU_DATA_SIZE", p.data_size);
	if (data >= XGPU_SHM_MIN_DATA && data <= XGPU_SHM_MAX_DATA && !(data & (data - 1)))
		p.data_size = (uint32_t)data;
	else
		xgpu_fe_warn_once("XGPU_DATA_SIZE",
				  "ignoring XGPU_DATA_SIZE: need a power of two in [64K, 256M]");
	size_t region = xgpu_shm_region_size(&p);

	struct xgpu_hello hello = {
	    .magic = XGPU_PROTO_MAGIC,
	    .version = XGPU_PROTO_VERSION,
	    .kind = XGPU_CONN_CHANNEL,
	    .runtime_version = CUDART_VERSION,
	    .task = task,
	};
	if (dom && strlen(dom) >= sizeof hello.domain) {
		if (loud)
			fprintf(stderr, "xgpu: XGPU_DOMAIN is longer than %zu characters\n",
				sizeof hello.domain - 1);
		return cudaErrorInvalidValue;
	}
	if (dom)
		xgpu_strlcpy(hello.domain, dom, sizeof hello.domain);
	c->spin_ns = env_size("XGPU_SPIN_US", 50) * 1000;
	c->ch.ops = ops;
	char err[512];
	int r = c->ch.ops->open(&c->ch, region, layout_region, &p, &hello, &c->ack, err, sizeof err);
	if (r) {
		if (loud && !quiet())
			fprintf(stderr, "xgpu: %s\n", err);
		return r;
	}
	xgpu_shm_view_frontend(c->ch.region, &c->v);
	c->seq = 0;
	c->dead_error = 0;
	c->deferred = c->deferred_head = 0;
	c->deferred_error = 0;
	/* A remote answer takes a network round trip and comes through this
	 * process's own reader thread, which a spinning caller would keep off
	 * a small machine's CPUs: a remote channel sleeps at once by default. */
	if (c->ch.ops == &xgpu_fe_transport_remote && !getenv("XGPU_SPIN_US"))
		c->spin_ns = 0;
	const char *pl = getenv("XGPU_PIPELINE");
	c->pipeline = pl && *pl ? strcmp(pl, "0") != 0 : c->ch.ops == &xgpu_fe_transport_remote;
	return cudaSuccess;
}

static int connect_client(void)
{
	uint32_t task = (uint32_t)getpid();
	const char *t = getenv("XGPU_TASK");
	long v;
	if (t && xgpu_parse_long(t, 0, UINT32_MAX, &v) == 0)
		task = (uint32_t)v;
	return connect_to(&client, getenv("XGPU_DOMAIN"), task, true);
}

int xgpu_client_open(const char *domain, uint32_t task, struct xgpu_client **out)
{
	struct xgpu_client *c = calloc(1, sizeof *c);
	if (!c)
		return cudaErrorMemoryAllocation;
	pthread_mutex_init(&c->lock, NULL);
	int r = connect_to(c, domain, task, false);
	if (r) {
		pthread_mutex_destroy(&c->lock);
		free(c);
		return r;
	}
	*out = c;
	return cudaSuccess;
}

void xgpu_client_close(struct xgpu_client *c)
{
	c->ch.ops->close(&c->ch);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

struct xgpu_shm_view *xgpu_client_view(struct xgpu_client *c)
{
	return &c->v;
}

void xgpu_client_kick(struct xgpu_client *c)
{
	c->ch.ops->kick(&c->ch);
}

bool xgpu_client_wait_closed(struct xgpu_client *c, int timeout_ms)
{
	uint64_t until = xgpu_now_ns() + (uint64_t)timeout_ms * 1000000u;
	while (xgpu_now_ns() < until)
		if (c->ch.ops->wait(&c->ch, 100, false) == XGPU_WAIT_PEER_GONE)
			return true;
	return false;
}

int xgpu_client_get(struct xgpu_client **c)
{
	if (__atomic_load_n(&state, __ATOMIC_ACQUIRE) == CLIENT_UP) {
		*c = &client;
		return cudaSuccess;
	}
	pthread_mutex_lock(&init_lock);
	if (state == CLIENT_NEW) {
		init_error = connect_client();
		__atomic_store_n(&state, init_error ? CLIENT_FAILED : CLIENT_UP, __ATOMIC_RELEASE);
	}
	int r = init_error;
	pthread_mutex_unlock(&init_lock);
	*c = r ? NULL : &client;
	return r;
}

const struct xgpu_hello_ack *xgpu_client_ack(struct xgpu_client *c)
{
	return &c->ack;
}

enum wait_for { WAIT_TX_SPACE, WAIT_RESPONSE };

static bool ready(struct xgpu_client *c, enum wait_for w, uint32_t need)
{
	switch (w) {
	case WAIT_TX_SPACE: {
		int64_t n = xgpu_q_space_for(&c->v.tx, need);
		return n < 0 || n >= need;
	}
	case WAIT_RESPONSE: /* need: whether we also take rx data */
		return xgpu_slot_ready(&c->v.rsp) || (need && xgpu_q_avail(&c->v.rx) != 0);
	}
	return true;
}

static void arm(struct xgpu_client *c, enum wait_for w, uint32_t need)
{
	switch (w) {
	case WAIT_TX_SPACE:
		xgpu_q_arm_space(&c->v.tx, need);
		break;
	case WAIT_RESPONSE:
		xgpu_q_arm_data(&c->v.rsp);
		if (need)
			xgpu_q_arm_data(&c->v.rx);
		break;
	}
}

/* Why the backend went away: the executor's code, or "unavailable". */
static int peer_gone_error(struct xgpu_client *c)
{
	const struct xgpu_shm_header *hdr = c->ch.region;
	int end = atomic_load(&hdr->backend_end);
	/* Under Xen the executor's death clears be_alive in the kernel at
	 * once, before xgpud has reaped it and written why: give xgpud a
	 * moment (only on this dying path). */
	for (uint64_t t0 = xgpu_now_ns(); end == 0 && xgpu_now_ns() - t0 < END_GRACE_NS;) {
		struct timespec ts = {0, 10000000};
		nanosleep(&ts, NULL);
		end = atomic_load(&hdr->backend_end);
	}
	return end > 0 && end < 10000 ? end : cudaErrorDevicesUnavailable;
}

/* Spin briefly (the backend usually answers within microseconds), then
 * sleep until kicked. Returns 0, or cudaErrorDevicesUnavailable when the
 * daemon went away. */
static int wait_until(struct xgpu_client *c, enum wait_for w, uint32_t need)
{
	/* The clock is read only after a first burst of polls: a reading
	 * costs as much as a cache miss on some hosts (80 ns on a KVM guest),
	 * and most answers come within the first burst. */
	uint64_t start = 0, now;
	do {
		for (int i = 0; i < 64; i++) {
			if (ready(c, w, need))
				return 0;
			xgpu_cpu_relax();
		}
		now = xgpu_now_ns();
		if (!start)
			start = now;
	} while (now - start < c->spin_ns);
	for (;;) {
		arm(c, w, need);
		/* A corrupt response index returns too, for the caller to
		 * see: it is read only here, before sleeping, so that the
		 * spinning caller pulls no line but the response slot's. */
		if (ready(c, w, need) || (w == WAIT_RESPONSE && xgpu_q_avail(&c->v.rsp) < 0))
			return 0;
		/* The timeout only bounds how long a lost kick could hurt. */
		/* What the backend published before it went (a faulting call's
		 * answer) still counts; otherwise the reason it left. */
		if (c->ch.ops->wait(&c->ch, 1000, w == WAIT_RESPONSE && !need) == XGPU_WAIT_PEER_GONE)
			return ready(c, w, need) ? 0 : peer_gone_error(c);
	}
}

static int channel_dead(struct xgpu_client *c, int err, const char *why)
{
	c->dead_error = err;
	if (err != cudaErrorDevicesUnavailable && err != cudaErrorUnknown)
		xgpu_fe_warn_once("channel-dead",
				  "the channel to xgpud ended: its domain's executor stopped with %s",
				  cudaGetErrorName(err));
	else
		xgpu_fe_warn_once("channel-dead", "the channel to xgpud is unusable: %s", why);
	return err;
}

static int post_request(struct xgpu_client *c, const struct xgpu_rpc *r, uint64_t seq)
{
	/* A slot is free once we have read its response (shm.h), which we
	 * track ourselves: no read of the backend's request index. At most
	 * XGPU_MAX_DEFERRED answers wait, fewer than there are slots. */
	if (c->v.req.idx - c->v.rsp.idx >= c->v.nr_slots)
		return channel_dead(c, cudaErrorUnknown, "every request slot still holds an unread answer");
	uint8_t *slot = xgpu_q_unit(&c->v.req, c->v.req.idx);
	struct xgpu_req_hdr h = {.call = r->call, .len = r->req_len, .seq = seq, .bulk_len = r->out_len};
	memcpy(slot, &h, sizeof h);
	memcpy(slot + sizeof h, r->req, r->req_len);
	xgpu_slot_seal(&c->v.req);
	if (xgpu_q_publish(&c->v.req, 1))
		c->ch.ops->kick(&c->ch);
	return 0;
}

static int stream_out(struct xgpu_client *c, const uint8_t *data, uint64_t len)
{
	uint64_t sent = 0;
	while (sent < len) {
		bool kick = false;
		int64_t n = c->ch.ops->write_bulk
				? c->ch.ops->write_bulk(&c->ch, &c->v.tx, data + sent, len - sent)
				: XGPU_BULK_VIA_RING;
		if (n == XGPU_BULK_VIA_RING) {
			uint64_t want = len - sent < XGPU_STREAM_SLICE ? len - sent : XGPU_STREAM_SLICE;
			n = xgpu_stream_write(&c->v.tx, data + sent, want, &kick);
			if (n < 0)
				return channel_dead(c, cudaErrorUnknown, "corrupt tx index");
		} else if (n < 0) {
			return channel_dead(c, peer_gone_error(c), "xgpud went away during a transfer");
		}
		if (kick)
			c->ch.ops->kick(&c->ch);
		sent += (uint64_t)n;
		if (sent < len && n == 0) {
			/* Wake when a quarter of the area is free: enough to
			 * keep both sides copying in parallel. */
			uint64_t want = len - sent;
			uint32_t need = want < c->v.data_size_tx / 4 ? (uint32_t)want : c->v.data_size_tx / 4;
			int e = wait_until(c, WAIT_TX_SPACE, need);
			if (e)
				return channel_dead(c, e, "xgpud went away during a transfer");
		}
	}
	return 0;
}

/* Moves whatever rx bytes are there into the caller's buffer. */
static int drain_in(struct xgpu_client *c, struct xgpu_rpc *r)
{
	if (!r->in || r->in_len >= r->in_max)
		return 0;
	for (;;) {
		bool kick;
		uint64_t want =
		    r->in_max - r->in_len < XGPU_STREAM_SLICE ? r->in_max - r->in_len : XGPU_STREAM_SLICE;
		int64_t n = r->in_max >= XGPU_STREAM_NT_MIN
				? xgpu_stream_read_nt(&c->v.rx, (uint8_t *)r->in + r->in_len, want, &kick)
				: xgpu_stream_read(&c->v.rx, (uint8_t *)r->in + r->in_len, want, &kick);
		if (n < 0)
			return channel_dead(c, cudaErrorUnknown, "corrupt rx index");
		if (kick)
			c->ch.ops->kick(&c->ch);
		r->in_len += (uint64_t)n;
		if (n == 0 || r->in_len == r->in_max)
			return 0;
	}
}

/* Bulk bytes the transport takes straight into the caller's buffer
 * (read_bulk), waiting for them as wait_until would: the ring's producer
 * index passed them, and they are released from the ring unread. */
static int read_in_direct(struct xgpu_client *c, struct xgpu_rpc *r)
{
	int64_t n =
	    c->ch.ops->read_bulk(&c->ch, &c->v.rx, (uint8_t *)r->in + r->in_len, r->in_max - r->in_len, 1000);
	if (n < 0)
		return channel_dead(c, peer_gone_error(c), "xgpud went away during a transfer");
	if (n > 0) {
		r->in_len += (uint64_t)n;
		if (xgpu_q_release(&c->v.rx, (uint32_t)n))
			c->ch.ops->kick(&c->ch);
	}
	return 0;
}

static int await_response(struct xgpu_client *c, struct xgpu_rpc *r, uint64_t seq)
{
	for (;;) {
		int e = drain_in(c, r);
		if (e)
			return e;
		if (xgpu_slot_ready(&c->v.rsp))
			break;
		if (c->ch.ops->read_bulk && r->in && r->in_len < r->in_max && xgpu_q_avail(&c->v.rx) == 0) {
			/* Armed as for a sleep: when another thread holds the
			 * reading role, its frames must kick this one awake. */
			arm(c, WAIT_RESPONSE, 1);
			if (!xgpu_slot_ready(&c->v.rsp) && xgpu_q_avail(&c->v.rx) == 0 &&
			    (e = read_in_direct(c, r)) != 0)
				return e;
			continue;
		}
		e = wait_until(c, WAIT_RESPONSE, r->in && r->in_len < r->in_max);
		if (e)
			return channel_dead(c, e, "xgpud went away");
		if (!xgpu_slot_ready(&c->v.rsp) && xgpu_q_avail(&c->v.rsp) < 0)
			return channel_dead(c, cudaErrorUnknown, "corrupt response ring index");
	}
	/* Copy only what the response uses, usually one cache line, straight
	 * to the caller, before the slot is released. A failure below ends
	 * the channel, and the caller then reads no answer. */
	const uint8_t *shared = xgpu_q_unit(&c->v.rsp, c->v.rsp.idx);
	struct xgpu_rsp_hdr h;
	memcpy(&h, shared, sizeof h);
	if (h.status == 0 && h.len == r->rsp_len)
		memcpy(r->rsp, shared + sizeof h, r->rsp_len);
	if (xgpu_q_release(&c->v.rsp, 1))
		c->ch.ops->kick(&c->ch);
	if (h.seq != seq || h.call != r->call)
		return channel_dead(c, cudaErrorUnknown, "response out of sequence");
	if (h.bulk_len > (r->in ? r->in_max : 0))
		return channel_dead(c, cudaErrorUnknown, "response carries more data than asked for");
	/* The backend publishes its data before the response. */
	while (r->in_len < h.bulk_len) {
		uint64_t before = r->in_len;
		int e = drain_in(c, r);
		if (e)
			return e;
		if (r->in_len == before)
			return channel_dead(c, cudaErrorUnknown, "response data missing");
	}
	if (r->in_len != h.bulk_len)
		return channel_dead(c, cudaErrorUnknown, "response data longer than announced");
	if (h.status == 0 && h.len != r->rsp_len)
		return channel_dead(c, cudaErrorUnknown, "response of the wrong size");
	return h.status;
}

int (*xgpu_rpc_capture_hook)(struct xgpu_rpc *r);

/* Calls whose answer carries nothing but their status and that CUDA lets
 * run after they return: launches, stream-ordered memsets and copies that
 * need no data back, event records and waits. */
static bool deferrable(const struct xgpu_client *c, const struct xgpu_rpc *r)
{
	if (!c->pipeline || r->in || r->rsp_len > sizeof(uint32_t))
		return false;
	switch (r->call) {
	case XGPU_CALL_LAUNCH:
	case XGPU_CALL_LAUNCH_EX:
	case XGPU_CALL_EVENT_RECORD:
	case XGPU_CALL_STREAM_WAIT_EVENT:
		return true;
	case XGPU_CALL_MEMSET:
		return ((const struct xgpu_req_MEMSET *)r->req)->flags & XGPU_COPY_ASYNC;
	case XGPU_CALL_MEMCPY_HTOD:
		return ((const struct xgpu_req_MEMCPY_HTOD *)r->req)->flags & XGPU_COPY_ASYNC;
	case XGPU_CALL_MEMCPY_DTOD:
		return ((const struct xgpu_req_MEMCPY_DTOD *)r->req)->flags & XGPU_COPY_ASYNC;
	default:
		return false;
	}
}

/* Takes the oldest deferred answer; its failure is kept to be reported. */
static int settle_one(struct xgpu_client *c)
{
	uint32_t scratch;
	unsigned i = c->deferred_head;
	struct xgpu_rpc r = {.call = c->pending[i].call, .rsp = &scratch, .rsp_len = sizeof scratch};
	c->deferred_head = (i + 1) % XGPU_MAX_DEFERRED;
	c->deferred--;
	int status = await_response(c, &r, c->pending[i].seq);
	if (status && !c->deferred_error)
		c->deferred_error = status;
	return c->dead_error;
}

/* Every deferred answer; then the first deferred failure, reported once. */
static int settle_all(struct xgpu_client *c)
{
	while (c->deferred)
		if (settle_one(c))
			return c->dead_error;
	int e = c->deferred_error;
	c->deferred_error = 0;
	return e;
}

int xgpu_client_settle(void)
{
	if (__atomic_load_n(&state, __ATOMIC_ACQUIRE) != CLIENT_UP)
		return cudaSuccess;
	struct xgpu_client *c = &client;
	pthread_mutex_lock(&c->lock);
	int status = c->dead_error ? c->dead_error : settle_all(c);
	pthread_mutex_unlock(&c->lock);
	return status;
}

int xgpu_rpc(struct xgpu_client *c, struct xgpu_rpc *r)
{
	/* Capture first: a capturing stream's work becomes a graph node and does
	 * not run now, so it neither waits for the stream's outstanding host
	 * callbacks nor is held back behind them (graph.c). */
	int (*hook)(struct xgpu_rpc *) = xgpu_rpc_capture_hook;
	if (hook) {
		int taken = hook(r);
		if (taken >= 0)
			return taken;
	}
	/* Before the channel lock: a held-back submission must not stop the
	 * callback thread's own exchanges. */
	int status = xgpu_stream_gate(c, r);
	if (!status)
		status = xgpu_managed_before(c, r);
	if (status)
		return status;
	pthread_mutex_lock(&c->lock);
	status = c->dead_error;
	if (status)
		goto out;
	bool defer = deferrable(c, r);
	/* The response ring holds more answers than may wait here, so the
	 * executor never blocks on one this thread is not reading. */
	if (defer && c->deferred == XGPU_MAX_DEFERRED && (status = settle_one(c)) != 0)
		goto out;
	if (!defer && (status = settle_all(c)) != 0)
		goto out;
	uint64_t seq = ++c->seq;
	r->in_len = 0;
	status = post_request(c, r, seq);
	if (!status)
		status = stream_out(c, r->out, r->out_len);
	if (!status && defer) {
		unsigned tail = (c->deferred_head + c->deferred) % XGPU_MAX_DEFERRED;
		c->pending[tail].seq = seq;
		c->pending[tail].call = r->call;
		c->deferred++;
	} else if (!status) {
		status = await_response(c, r, seq);
	}
out:
	pthread_mutex_unlock(&c->lock);
	xgpu_managed_after(c, r, status);
	return status;
}

int xgpu_client_share(struct xgpu_client *c, size_t size, void **ptr, uint64_t *token)
{
	pthread_mutex_lock(&c->lock);
	int r = c->dead_error ? c->dead_error : c->ch.ops->share_segment(&c->ch, size, ptr, token);
	pthread_mutex_unlock(&c->lock);
	return r;
}

bool xgpu_client_shares_host_memory(const struct xgpu_client *c)
{
	return !c->ch.ops->host_memory_private;
}

void xgpu_client_unshare(struct xgpu_client *c, void *ptr, size_t size)
{
	c->ch.ops->unshare_segment(&c->ch, ptr, size);
}

int xgpu_client_device_info(struct xgpu_client *c, struct xgpu_device_info *out)
{
	struct {
		struct xgpu_device_blob blob;
		int32_t attrs[XGPU_MAX_DEVICE_ATTRS];
	} in;
	struct xgpu_req_DEVICE_INFO req = {.device = 0};
	struct xgpu_rsp_DEVICE_INFO rsp;
	struct xgpu_rpc r = xgpu_rpc_DEVICE_INFO(&req, &rsp);
	r.in = &in;
	r.in_max = sizeof in;
	int e = xgpu_rpc(c, &r);
	if (!e && (rsp.attr_count > XGPU_MAX_DEVICE_ATTRS ||
		   r.in_len != sizeof in.blob + rsp.attr_count * sizeof(int32_t)))
		e = cudaErrorUnknown;
	if (e)
		return e;
	memset(out, 0, sizeof *out);
	out->blob = in.blob;
	out->blob.name[sizeof out->blob.name - 1] = '\0';
	memcpy(out->attrs, in.attrs, rsp.attr_count * sizeof(int32_t));
	out->nattrs = rsp.attr_count;
	out->driver_version = rsp.driver_version;
	/* Managed memory is the frontend's (managed.c), whatever the GPU offers:
	 * it is supported, but coherent only at launches and synchronisation
	 * points, so the host may not touch it while the device runs, which is
	 * what concurrentManagedAccess 0 tells a program; and the guest's pages
	 * are never the device's (no direct access, no pageable access). */
	static const struct {
		int attr, value;
	} managed_attrs[] = {
	    {CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY, 1},
	    {CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS, 0},
	    {CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS, 0},
	    {CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES, 0},
	    {CU_DEVICE_ATTRIBUTE_DIRECT_MANAGED_MEM_ACCESS_FROM_HOST, 0},
	    /* No shareable handle of xgpu memory can reach a guest
	     * (cuMemExportToShareableHandle is refused): programs that ask,
	     * as cuda-samples' memMapIPCDrv does, then skip IPC. */
	    {CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED, 0},
	    {CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_WIN32_HANDLE_SUPPORTED, 0},
	    {CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_WIN32_KMT_HANDLE_SUPPORTED, 0},
	    {CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED, 0},
	};
	for (size_t i = 0; i < sizeof managed_attrs / sizeof *managed_attrs; i++)
		if ((uint32_t)managed_attrs[i].attr < out->nattrs)
			out->attrs[managed_attrs[i].attr] = managed_attrs[i].value;
	return cudaSuccess;
}

void xgpu_client_note_unsupported(const char *name, const char *returns)
{
	xgpu_fe_warn_once(name, "%s is not supported by xgpu; it returns %s", name, returns);
	xgpu_client_tell_unsupported(name);
}

void xgpu_client_tell_unsupported(const char *name)
{
	struct xgpu_client *c;
	if (xgpu_client_get(&c) == cudaSuccess) {
		struct xgpu_req_NOTE_UNSUPPORTED req = {0};
		struct xgpu_rsp_NOTE_UNSUPPORTED rsp;
		struct xgpu_rpc r = xgpu_rpc_NOTE_UNSUPPORTED(&req, &rsp);
		size_t len = strlen(name) + 1;
		r.out = name;
		r.out_len = len <= XGPU_MAX_NAME_BYTES ? len : 0;
		if (r.out_len)
			xgpu_rpc(c, &r);
	}
}
