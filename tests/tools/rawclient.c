/* SPDX-License-Identifier: Apache-2.0 */
/* rawclient.c - a guest that speaks xgpu's protocol directly, to test how the
 * daemon treats clients that misbehave: wrong protocol versions, malformed
 * packets, corrupt ring indexes, handles from another domain, malformed
 * graphs, memory limits,
 * a client killed mid-transfer, random packets. Each mode prints what it saw
 * and exits 0 only if the daemon behaved.
 *
 *   rawclient version | fake-daemon PATH | malformed | corrupt-ring |
 *             cross-domain | graphs | memlimit BYTES | stream DOMAIN | fuzz SEED COUNT |
 *             silent COUNT SECONDS | kick-flood COUNT | old-hello | nops COUNT | managed
 */
#include "client.h"
#include "fdpass.h"
#include "proto.h"
#include "shm.h"
#include "util.h"

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static int failures;

#define CHECK(cond, ...)                                                                                     \
	do {                                                                                                 \
		if (!(cond)) {                                                                               \
			fprintf(stderr, "rawclient: FAILED %s: ", #cond);                                    \
			fprintf(stderr, __VA_ARGS__);                                                        \
			fputc('\n', stderr);                                                                 \
			failures++;                                                                          \
		}                                                                                            \
	} while (0)

static struct xgpu_client *open_or_die(const char *domain)
{
	struct xgpu_client *c;
	int r = xgpu_client_open(domain, (uint32_t)getpid(), &c);
	if (r) {
		fprintf(stderr, "rawclient: cannot open a channel into %s: error %d\n",
			domain ? domain : "default", r);
		exit(2);
	}
	return c;
}

static int unix_connect(void)
{
	char buf[256];
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	snprintf(sa.sun_path, sizeof sa.sun_path, "%s", xgpu_socket_path(NULL, buf, sizeof buf));
	int fd = socket(AF_UNIX, SOCK_SEQPACKET, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
		perror("rawclient: connect");
		exit(2);
	}
	return fd;
}

/* Posts a raw request slot and waits (bounded) for a response or hang-up.
 * Returns the response status, or INT32_MIN if the daemon closed the channel. */
static int raw_request(struct xgpu_client *c, const void *slot, size_t len)
{
	struct xgpu_shm_view *v = xgpu_client_view(c);
	uint8_t buf[XGPU_SLOT_SIZE] = {0};
	memcpy(buf, slot, len < sizeof buf ? len : sizeof buf);
	memcpy(xgpu_q_unit(&v->req, v->req.idx), buf, sizeof buf);
	xgpu_slot_seal(&v->req);
	xgpu_q_publish(&v->req, 1);
	xgpu_client_kick(c);
	uint64_t until = xgpu_now_ns() + 5000000000ull;
	while (xgpu_now_ns() < until) {
		if (xgpu_slot_ready(&v->rsp)) {
			struct xgpu_rsp_hdr h;
			memcpy(&h, xgpu_q_unit(&v->rsp, v->rsp.idx), sizeof h);
			xgpu_q_release(&v->rsp, 1);
			return h.status;
		}
		usleep(1000);
	}
	return INT32_MIN;
}

/* Whether the daemon hung up on this channel within a few seconds. */
static bool channel_closed(struct xgpu_client *c)
{
	return xgpu_client_wait_closed(c, 5000);
}

static int mode_version(void)
{
	int fd = unix_connect();
	struct xgpu_hello h = {.magic = XGPU_PROTO_MAGIC, .version = 99, .kind = XGPU_CONN_CHANNEL};
	send(fd, &h, sizeof h, 0);
	struct xgpu_hello_ack ack = {0};
	ssize_t n = recv(fd, &ack, sizeof ack, 0);
	ack.message[sizeof ack.message - 1] = '\0';
	printf("daemon said: %s\n", ack.message);
	CHECK(n == (ssize_t)sizeof ack, "ack of %zd bytes", n);
	CHECK(ack.status == cudaErrorInsufficientDriver, "status %d", ack.status);
	CHECK(strstr(ack.message, "protocol version mismatch") && strstr(ack.message, "99"), "message '%s'",
	      ack.message);
	close(fd);
	return failures;
}

/* A daemon from the future: answers every handshake with protocol 99. */
static int mode_fake_daemon(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
	unlink(path);
	int l = socket(AF_UNIX, SOCK_SEQPACKET, 0);
	if (l < 0 || bind(l, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(l, 4) < 0) {
		perror("rawclient: fake daemon");
		return 2;
	}
	printf("ready\n");
	fflush(stdout);
	for (int served = 0; served < 4; served++) {
		int conn = accept(l, NULL, NULL);
		if (conn < 0)
			break;
		struct xgpu_hello h;
		int fds[4], nfds;
		xgpu_recv_fds(conn, &h, sizeof h, fds, &nfds, 4, 0);
		xgpu_close_fds(fds, nfds);
		struct xgpu_hello_ack ack = {.magic = XGPU_PROTO_MAGIC, .version = 99};
		send(conn, &ack, sizeof ack, 0);
		close(conn);
	}
	close(l);
	return 0;
}

static int mode_malformed(void)
{
	struct xgpu_client *c = open_or_die("raw-malformed");
	/* An unknown call: answered with an error, then the channel closes
	 * (its bulk length cannot be trusted). */
	struct xgpu_req_hdr h = {.call = 9999, .len = 8, .seq = 1};
	int st = raw_request(c, &h, sizeof h);
	printf("unknown call -> status %d\n", st);
	CHECK(st == cudaErrorInvalidValue, "status %d", st);
	CHECK(channel_closed(c), "channel still open after an unknown call");
	xgpu_client_close(c);

	/* A known call with the wrong argument length. */
	c = open_or_die("raw-malformed");
	struct xgpu_req_hdr h2 = {.call = XGPU_CALL_MEM_ALLOC, .len = 3, .seq = 1};
	st = raw_request(c, &h2, sizeof h2);
	printf("short MEM_ALLOC -> status %d\n", st);
	CHECK(st == cudaErrorInvalidValue, "status %d", st);
	CHECK(channel_closed(c), "channel still open after a malformed request");
	xgpu_client_close(c);

	/* A bulk length beyond the call's maximum. */
	c = open_or_die("raw-malformed");
	struct {
		struct xgpu_req_hdr h;
		struct xgpu_req_LAUNCH a;
	} l = {{.call = XGPU_CALL_LAUNCH, .len = sizeof l.a, .seq = 1, .bulk_len = 1ull << 40}, {0}};
	st = raw_request(c, &l, sizeof l);
	printf("oversized launch -> status %d\n", st);
	CHECK(st == cudaErrorInvalidValue, "status %d", st);
	xgpu_client_close(c);

	/* Well-formed but wrong: a launch of a function that does not exist
	 * is an ordinary error and the channel stays usable. */
	c = open_or_die("raw-malformed");
	struct {
		struct xgpu_req_hdr h;
		struct xgpu_req_LAUNCH a;
	} l2 = {{.call = XGPU_CALL_LAUNCH, .len = sizeof l2.a, .seq = 1}, {.func = 0x100000005ull}};
	st = raw_request(c, &l2, sizeof l2);
	printf("launch of a forged function -> status %d\n", st);
	CHECK(st == cudaErrorInvalidResourceHandle, "status %d", st);
	struct xgpu_req_NOP nreq = {0};
	struct xgpu_rsp_NOP nrsp;
	/* The raw request did not advance the client's own sequence; skip its
	 * view of the slot we used. */
	st = xgpu_call_NOP(c, &nreq, &nrsp);
	CHECK(st == cudaSuccess, "NOP after an ordinary error: %d", st);
	xgpu_client_close(c);
	return failures;
}

static int mode_corrupt_ring(void)
{
	struct xgpu_client *c = open_or_die("raw-corrupt");
	struct xgpu_shm_view *v = xgpu_client_view(c);
	atomic_store(&v->req.q->prod, v->req.idx + 5000);
	xgpu_client_kick(c);
	CHECK(channel_closed(c), "channel open after a corrupt request index");
	xgpu_client_close(c);

	/* A bulk transfer whose data-area index runs far ahead of the area:
	 * the daemon reads it while consuming the data and must not follow it. */
	c = open_or_die("raw-corrupt");
	v = xgpu_client_view(c);
	struct xgpu_req_MEM_ALLOC ar = {.size = 4096};
	struct xgpu_rsp_MEM_ALLOC arsp;
	CHECK(xgpu_call_MEM_ALLOC(c, &ar, &arsp) == cudaSuccess, "alloc");
	atomic_store(&v->tx.q->prod, v->tx.idx + (1u << 30));
	struct {
		struct xgpu_req_hdr h;
		struct xgpu_req_MEMCPY_HTOD a;
	} m = {{.call = XGPU_CALL_MEMCPY_HTOD, .len = sizeof m.a, .seq = 2, .bulk_len = 4096},
	       {.dst = arsp.dptr, .size = 4096}};
	raw_request(c, &m, sizeof m);
	CHECK(channel_closed(c), "channel open after a corrupt data-area index");
	xgpu_client_close(c);
	return failures;
}

static int mode_cross_domain(void)
{
	struct xgpu_client *a = open_or_die("raw-a"), *b = open_or_die("raw-b");
	struct xgpu_req_MEM_ALLOC ar = {.size = 4096};
	struct xgpu_rsp_MEM_ALLOC arsp;
	CHECK(xgpu_call_MEM_ALLOC(a, &ar, &arsp) == cudaSuccess, "alloc in A");
	struct xgpu_req_STREAM_CREATE sr = {0};
	struct xgpu_rsp_STREAM_CREATE srsp;
	CHECK(xgpu_call_STREAM_CREATE(a, &sr, &srsp) == cudaSuccess, "stream in A");
	printf("A holds memory 0x%llx and stream 0x%llx\n", (unsigned long long)arsp.dptr,
	       (unsigned long long)srsp.stream);

	uint8_t buf[64];
	struct xgpu_req_MEMCPY_DTOH cr = {.src = arsp.dptr, .size = sizeof buf};
	struct xgpu_rsp_MEMCPY_DTOH crsp;
	struct xgpu_rpc r = xgpu_rpc_MEMCPY_DTOH(&cr, &crsp);
	r.in = buf;
	r.in_max = sizeof buf;
	int st = xgpu_rpc(b, &r);
	printf("B reads A's memory -> %d\n", st);
	CHECK(st == cudaErrorInvalidValue, "B read A's memory: %d", st);

	struct xgpu_req_MEMSET ms = {.dst = arsp.dptr, .value = 1, .size = 16};
	struct xgpu_rsp_MEMSET msr;
	st = xgpu_call_MEMSET(b, &ms, &msr);
	CHECK(st == cudaErrorInvalidValue, "B wrote A's memory: %d", st);

	struct xgpu_req_MEM_FREE fr = {.dptr = arsp.dptr};
	struct xgpu_rsp_MEM_FREE frsp;
	st = xgpu_call_MEM_FREE(b, &fr, &frsp);
	CHECK(st == cudaErrorInvalidValue, "B freed A's memory: %d", st);

	struct xgpu_req_STREAM_SYNC ss = {.stream = srsp.stream};
	struct xgpu_rsp_STREAM_SYNC ssr;
	st = xgpu_call_STREAM_SYNC(b, &ss, &ssr);
	printf("B syncs A's stream -> %d\n", st);
	CHECK(st == cudaErrorInvalidResourceHandle, "B used A's stream: %d", st);

	/* A stale generation of A's own handle is refused too. */
	struct xgpu_req_STREAM_DESTROY sd = {.stream = srsp.stream};
	struct xgpu_rsp_STREAM_DESTROY sdr;
	CHECK(xgpu_call_STREAM_DESTROY(a, &sd, &sdr) == cudaSuccess, "A destroys its stream");
	st = xgpu_call_STREAM_SYNC(a, &ss, &ssr);
	CHECK(st == cudaErrorInvalidResourceHandle, "stale handle accepted: %d", st);

	/* An interior range is fine for the owner, overruns are not. */
	struct xgpu_req_MEMSET ok = {.dst = arsp.dptr + 100, .value = 7, .size = 100};
	CHECK(xgpu_call_MEMSET(a, &ok, &msr) == cudaSuccess, "A memsets inside its allocation");
	struct xgpu_req_MEMSET over = {.dst = arsp.dptr + 4000, .value = 7, .size = 200};
	CHECK(xgpu_call_MEMSET(a, &over, &msr) == cudaErrorInvalidValue, "A overruns its allocation");
	struct xgpu_req_MEMSET wrap = {.dst = arsp.dptr + 8, .value = 7, .size = UINT64_MAX - 4};
	CHECK(xgpu_call_MEMSET(a, &wrap, &msr) == cudaErrorInvalidValue, "A wraps the address space");

	/* Pitched copies: every row must stay inside the allocation, and the
	 * extent is computed without overflow; B may not touch A's rows. */
	struct xgpu_req_MEMSET_2D m2 = {
	    .dst = arsp.dptr, .pitch = 1024, .value = 9, .width = 100, .height = 4};
	struct xgpu_rsp_MEMSET_2D m2r;
	CHECK(xgpu_call_MEMSET_2D(a, &m2, &m2r) == cudaSuccess, "A sets rows inside its allocation");
	struct xgpu_req_MEMCPY_2D_DTOH d2 = {.src = arsp.dptr, .src_pitch = 1024, .width = 16, .height = 4};
	struct xgpu_rsp_MEMCPY_2D_DTOH d2r;
	uint8_t rows[64];
	r = xgpu_rpc_MEMCPY_2D_DTOH(&d2, &d2r);
	r.in = rows;
	r.in_max = sizeof rows;
	CHECK(xgpu_rpc(a, &r) == cudaSuccess && r.in_len == sizeof rows && rows[0] == 9 && rows[63] == 9,
	      "A reads its rows back");
	st = xgpu_rpc(b, &r);
	CHECK(st == cudaErrorInvalidValue, "B read A's rows: %d", st);
	struct xgpu_req_MEMCPY_2D_DTOD past = {.dst = arsp.dptr,
					       .dst_pitch = 1024,
					       .src = arsp.dptr + 2048,
					       .src_pitch = 1024,
					       .width = 64,
					       .height = 3};
	struct xgpu_rsp_MEMCPY_2D_DTOD pastr;
	CHECK(xgpu_call_MEMCPY_2D_DTOD(a, &past, &pastr) == cudaErrorInvalidValue,
	      "A's rows left its allocation");
	struct xgpu_req_MEMSET_2D huge = {
	    .dst = arsp.dptr, .pitch = UINT64_MAX / 2, .value = 1, .width = 8, .height = 3};
	CHECK(xgpu_call_MEMSET_2D(a, &huge, &m2r) == cudaErrorInvalidValue,
	      "a pitch that overflows was accepted");
	struct xgpu_req_MEMSET_2D narrow = {
	    .dst = arsp.dptr, .pitch = 8, .value = 1, .width = 16, .height = 2};
	CHECK(xgpu_call_MEMSET_2D(a, &narrow, &m2r) == cudaErrorInvalidPitchValue, "a pitch below the width");
	struct xgpu_req_MEMCPY_2D_HTOD h2 = {
	    .dst = arsp.dptr, .dst_pitch = 1024, .width = (uint64_t)1 << 33, .height = (uint64_t)1 << 33};
	struct xgpu_rsp_MEMCPY_2D_HTOD h2r;
	r = xgpu_rpc_MEMCPY_2D_HTOD(&h2, &h2r);
	r.out = rows;
	r.out_len = sizeof rows;
	CHECK(xgpu_rpc(a, &r) == cudaErrorInvalidValue, "width * height overflowing was accepted");
	printf("pitched copies past an allocation, overflowing or across domains -> refused\n");

	/* CUDA arrays and texture objects: handles checked like every other
	 * (another domain's, forged, stale), boxes and resources bounded. */
	struct xgpu_req_ARRAY_CREATE ac = {
	    .format = CU_AD_FORMAT_FLOAT, .channels = 1, .width = 64, .height = 16};
	struct xgpu_rsp_ARRAY_CREATE acr;
	CHECK(xgpu_call_ARRAY_CREATE(a, &ac, &acr) == cudaSuccess, "A creates an array");
	struct xgpu_req_ARRAY_CREATE bad_ac = ac;
	bad_ac.format = 0x77;
	CHECK(xgpu_call_ARRAY_CREATE(a, &bad_ac, &acr) == cudaErrorInvalidValue,
	      "an unknown format accepted");
	bad_ac = ac;
	bad_ac.width = UINT64_MAX;
	CHECK(xgpu_call_ARRAY_CREATE(a, &bad_ac, &acr) == cudaErrorInvalidValue, "a huge width accepted");
	CHECK(xgpu_call_ARRAY_CREATE(a, &ac, &acr) == cudaSuccess, "A creates an array");
	struct xgpu_req_ARRAY_COPY in = {.dst = acr.array,
					 .src = arsp.dptr,
					 .src_a = 256,
					 .src_b = 16,
					 .width = 256,
					 .height = 16,
					 .depth = 1,
					 .flags = XGPU_ARRAY_COPY_DST_ARRAY};
	struct xgpu_rsp_ARRAY_COPY inr;
	CHECK(xgpu_call_ARRAY_COPY(a, &in, &inr) == cudaSuccess, "A fills its array from its memory");
	st = xgpu_call_ARRAY_COPY(b, &in, &inr);
	CHECK(st == cudaErrorInvalidResourceHandle, "B used A's array: %d", st);
	struct xgpu_req_ARRAY_COPY forged = in;
	forged.dst = 0x100000002ull;
	CHECK(xgpu_call_ARRAY_COPY(a, &forged, &inr) == cudaErrorInvalidResourceHandle,
	      "a forged array accepted");
	struct xgpu_req_ARRAY_COPY box = in;
	box.dst_b = 1;
	CHECK(xgpu_call_ARRAY_COPY(a, &box, &inr) == cudaErrorInvalidValue,
	      "a box past the last row accepted");
	box = in;
	box.dst_a = UINT64_MAX - 8;
	CHECK(xgpu_call_ARRAY_COPY(a, &box, &inr) == cudaErrorInvalidValue, "a wrapping column accepted");
	box = in;
	box.src_a = 1024 * 1024;
	CHECK(xgpu_call_ARRAY_COPY(a, &box, &inr) == cudaErrorInvalidValue,
	      "device rows past the allocation");
	box = in;
	box.flags = 0;
	CHECK(xgpu_call_ARRAY_COPY(a, &box, &inr) == cudaErrorInvalidValue, "a copy with no array accepted");
	struct xgpu_req_TEXOBJ_CREATE tc = {.res = acr.array, .res_type = CU_RESOURCE_TYPE_ARRAY};
	struct xgpu_rsp_TEXOBJ_CREATE tcr;
	st = xgpu_call_TEXOBJ_CREATE(b, &tc, &tcr);
	CHECK(st == cudaErrorInvalidResourceHandle, "B made a texture of A's array: %d", st);
	struct xgpu_req_TEXOBJ_CREATE tp = {.res = arsp.dptr,
					    .res_type = CU_RESOURCE_TYPE_PITCH2D,
					    .format = CU_AD_FORMAT_FLOAT,
					    .channels = 1,
					    .width = 256,
					    .height = 8,
					    .pitch = 1024};
	CHECK(xgpu_call_TEXOBJ_CREATE(a, &tp, &tcr) == cudaErrorInvalidValue,
	      "a texture past the allocation");
	CHECK(xgpu_call_TEXOBJ_CREATE(a, &tc, &tcr) == cudaSuccess, "A makes a texture of its array");
	struct xgpu_req_TEXOBJ_DESTROY td = {.handle = tcr.handle};
	struct xgpu_rsp_TEXOBJ_DESTROY tdr;
	CHECK(xgpu_call_TEXOBJ_DESTROY(b, &td, &tdr) == cudaErrorInvalidResourceHandle,
	      "B destroyed A's texture");
	struct xgpu_req_TEXOBJ_DESTROY tv = {.handle = tcr.object};
	CHECK(xgpu_call_TEXOBJ_DESTROY(a, &tv, &tdr) == cudaErrorInvalidResourceHandle,
	      "the driver's value taken for a handle");
	CHECK(xgpu_call_TEXOBJ_DESTROY(a, &td, &tdr) == cudaSuccess, "A destroys its texture");
	CHECK(xgpu_call_TEXOBJ_DESTROY(a, &td, &tdr) == cudaErrorInvalidResourceHandle,
	      "a texture destroyed twice");
	struct xgpu_req_SURFOBJ_CREATE sc = {.array = acr.array};
	struct xgpu_rsp_SURFOBJ_CREATE scr;
	CHECK(xgpu_call_SURFOBJ_CREATE(a, &sc, &scr) != cudaSuccess,
	      "a surface of an array not made for one");
	struct xgpu_req_ARRAY_DESTROY ad = {.array = acr.array};
	struct xgpu_rsp_ARRAY_DESTROY adr;
	CHECK(xgpu_call_ARRAY_DESTROY(b, &ad, &adr) == cudaErrorInvalidResourceHandle,
	      "B destroyed A's array");
	CHECK(xgpu_call_ARRAY_DESTROY(a, &ad, &adr) == cudaSuccess, "A destroys its array");
	CHECK(xgpu_call_ARRAY_COPY(a, &in, &inr) == cudaErrorInvalidResourceHandle, "a stale array accepted");
	printf("arrays and texture objects forged, foreign, stale or past their bounds -> refused\n");

	CHECK(xgpu_call_MEM_FREE(a, &fr, &frsp) == cudaSuccess, "A frees its memory");
	xgpu_client_close(a);
	xgpu_client_close(b);
	return failures;
}

/* ---- graphs ------------------------------------------------------------ */

/* Sends header d and, whatever it claims, at most max nodes and max edges
 * (so a header may lie about its counts); returns the status and the exec
 * handle in *exec. */
static int graph_instantiate(struct xgpu_client *c, struct xgpu_graph_desc d,
			     const struct xgpu_graph_node *nodes, const struct xgpu_graph_edge *edges,
			     size_t max, uint64_t *exec, uint64_t *dtoh)
{
	size_t nn = d.nnodes < max ? d.nnodes : max, ne = d.nedges < max ? d.nedges : max;
	uint8_t buf[sizeof d + 16 * sizeof *nodes + 16 * sizeof *edges];
	if (max > 16)
		return -1;
	size_t len = 0;
	memcpy(buf, &d, sizeof d);
	len += sizeof d;
	memcpy(buf + len, nodes, nn * sizeof *nodes);
	len += nn * sizeof *nodes;
	if (ne)
		memcpy(buf + len, edges, ne * sizeof *edges);
	len += ne * sizeof *edges;
	struct xgpu_req_GRAPH_INSTANTIATE req = {0};
	struct xgpu_rsp_GRAPH_INSTANTIATE rsp = {0};
	struct xgpu_rpc r = xgpu_rpc_GRAPH_INSTANTIATE(&req, &rsp);
	r.out = buf;
	r.out_len = len;
	int st = xgpu_rpc(c, &r);
	*exec = rsp.exec;
	if (dtoh)
		*dtoh = rsp.dtoh_bytes;
	return st;
}

static int graph_launch(struct xgpu_client *c, uint64_t exec, void *in, uint64_t in_len)
{
	struct xgpu_req_GRAPH_LAUNCH req = {.exec = exec};
	struct xgpu_rsp_GRAPH_LAUNCH rsp;
	struct xgpu_rpc r = xgpu_rpc_GRAPH_LAUNCH(&req, &rsp);
	r.in = in;
	r.in_max = in_len;
	return xgpu_rpc(c, &r);
}

/* Sends a description with conditional handles: d's counts of nodes, edges
 * and handles, no parameters. */
static int cond_instantiate(struct xgpu_client *c, struct xgpu_graph_desc d,
			    const struct xgpu_graph_node *nodes, const struct xgpu_graph_edge *edges,
			    const struct xgpu_graph_cond *conds)
{
	uint8_t buf[sizeof d + 16 * sizeof *nodes + 16 * sizeof *edges + 16 * sizeof *conds];
	if (d.nnodes > 16 || d.nedges > 16 || d.nconds > 16)
		return -1;
	size_t len = 0;
	memcpy(buf, &d, sizeof d);
	len += sizeof d;
	memcpy(buf + len, nodes, d.nnodes * sizeof *nodes);
	len += d.nnodes * sizeof *nodes;
	if (d.nedges)
		memcpy(buf + len, edges, d.nedges * sizeof *edges);
	len += d.nedges * sizeof *edges;
	if (d.nconds)
		memcpy(buf + len, conds, d.nconds * sizeof *conds);
	len += d.nconds * sizeof *conds;
	struct xgpu_req_GRAPH_INSTANTIATE req = {0};
	struct xgpu_rsp_GRAPH_INSTANTIATE rsp = {0};
	struct xgpu_rpc r = xgpu_rpc_GRAPH_INSTANTIATE(&req, &rsp);
	r.out = buf;
	r.out_len = len;
	return xgpu_rpc(c, &r);
}

/* Conditional nodes nested depth deep: node i is in graph i (0: the graph
 * itself) and owns body i + 1, with handle i of graph i. */
static int cond_nested(struct xgpu_client *c, uint32_t depth)
{
	struct xgpu_graph_node n[16];
	struct xgpu_graph_cond h[16];
	memset(n, 0, sizeof n);
	memset(h, 0, sizeof h);
	for (uint32_t i = 0; i < depth; i++) {
		n[i] = (struct xgpu_graph_node){.type = XGPU_GN_COND,
						.value = CU_GRAPH_COND_TYPE_WHILE,
						.handle = i,
						.src = i + 1,
						.size = 1,
						.graph = i};
		h[i] = (struct xgpu_graph_cond){.guest = 0x1000 + i, .graph = i};
	}
	struct xgpu_graph_desc d = {.nnodes = depth, .nconds = depth, .nbodies = depth};
	return cond_instantiate(c, d, n, NULL, h);
}

/* Conditional nodes' descriptions: handles and bodies that do not fit
 * together are refused, nesting is bounded, and a well-formed one runs. */
static int mode_graph_conds(void)
{
	struct xgpu_client *a = open_or_die("raw-cond");
	struct xgpu_graph_cond h0 = {.guest = 0x77, .default_value = 0, .graph = 0};
	struct xgpu_graph_node if_node = {
	    .type = XGPU_GN_COND, .value = CU_GRAPH_COND_TYPE_IF, .handle = 0, .src = 1, .size = 1};
	struct xgpu_graph_node in_body = {.type = XGPU_GN_EMPTY, .graph = 1};
	struct xgpu_graph_node pair[2] = {if_node, in_body};
	struct xgpu_graph_desc d = {.nnodes = 2, .nconds = 1, .nbodies = 1};
	CHECK(cond_instantiate(a, d, pair, NULL, &h0) == cudaSuccess, "a well-formed if node");

	struct xgpu_graph_desc no_handle = {.nnodes = 2, .nbodies = 1};
	CHECK(cond_instantiate(a, no_handle, pair, NULL, NULL) == cudaErrorInvalidValue,
	      "a conditional node naming no handle");
	struct xgpu_graph_cond body_handle = {.guest = 0x77, .graph = 1};
	CHECK(cond_instantiate(a, d, pair, NULL, &body_handle) == cudaErrorInvalidValue,
	      "a conditional node with a handle of another graph");
	struct xgpu_graph_cond two[2] = {h0, h0};
	struct xgpu_graph_desc d2 = {.nnodes = 2, .nconds = 2, .nbodies = 1};
	CHECK(cond_instantiate(a, d2, pair, NULL, two) == cudaErrorInvalidValue, "two handles of one value");
	struct xgpu_graph_node wide = if_node;
	wide.size = 3;
	struct xgpu_graph_node wide_pair[2] = {wide, in_body};
	struct xgpu_graph_desc d3 = {.nnodes = 2, .nconds = 1, .nbodies = 3};
	CHECK(cond_instantiate(a, d3, wide_pair, NULL, &h0) == cudaErrorInvalidValue,
	      "an if node of 3 bodies");
	struct xgpu_graph_node beyond = if_node;
	beyond.src = 2;
	struct xgpu_graph_node beyond_pair[2] = {beyond, in_body};
	CHECK(cond_instantiate(a, d, beyond_pair, NULL, &h0) == cudaErrorInvalidValue,
	      "a body past the description's");
	struct xgpu_graph_node twice[3] = {if_node, if_node, in_body};
	struct xgpu_graph_desc d4 = {.nnodes = 3, .nconds = 1, .nbodies = 1};
	CHECK(cond_instantiate(a, d4, twice, NULL, &h0) == cudaErrorInvalidValue, "one body of two nodes");
	struct xgpu_graph_edge across = {0, 1};
	struct xgpu_graph_desc d5 = {.nnodes = 2, .nedges = 1, .nconds = 1, .nbodies = 1};
	CHECK(cond_instantiate(a, d5, pair, &across, &h0) == cudaErrorInvalidValue,
	      "a dependency between a graph and a body");
	/* Body 1 inside itself. */
	struct xgpu_graph_node self = if_node;
	self.graph = 1;
	struct xgpu_graph_cond h1 = {.guest = 0x77, .graph = 1};
	struct xgpu_graph_desc d1 = {.nnodes = 1, .nconds = 1, .nbodies = 1};
	CHECK(cond_instantiate(a, d1, &self, NULL, &h1) == cudaErrorInvalidValue, "a body inside itself");
	int st = cond_nested(a, XGPU_MAX_GRAPH_COND_DEPTH);
	printf("conditional nodes nested %u deep -> %d\n", XGPU_MAX_GRAPH_COND_DEPTH, st);
	CHECK(st == cudaSuccess, "nesting at the limit: %d", st);
	st = cond_nested(a, XGPU_MAX_GRAPH_COND_DEPTH + 1);
	printf("conditional nodes nested %u deep -> %d\n", XGPU_MAX_GRAPH_COND_DEPTH + 1, st);
	CHECK(st == cudaErrorInvalidValue, "nesting beyond the limit: %d", st);
	xgpu_client_close(a);
	return failures;
}

/* Malformed and foreign graph descriptions are refused, one by one, and the
 * daemon goes on running the well-formed graph. */
static int mode_graphs(void)
{
	struct xgpu_client *a = open_or_die("raw-ga"), *b = open_or_die("raw-gb");
	struct xgpu_req_MEM_ALLOC ar = {.size = 4096};
	struct xgpu_rsp_MEM_ALLOC arsp;
	CHECK(xgpu_call_MEM_ALLOC(a, &ar, &arsp) == cudaSuccess, "alloc in A");
	struct xgpu_req_EVENT_CREATE er = {0};
	struct xgpu_rsp_EVENT_CREATE ersp;
	CHECK(xgpu_call_EVENT_CREATE(a, &er, &ersp) == cudaSuccess, "event in A");

	/* A well-formed graph: memset 64 bytes to 0x5a, then copy them out. */
	struct xgpu_graph_node good[3] = {
	    {.type = XGPU_GN_MEMSET, .dst = arsp.dptr, .value = 0x5a, .size = 64},
	    {.type = XGPU_GN_DTOH, .src = arsp.dptr, .size = 64},
	    {.type = XGPU_GN_EVENT_RECORD, .handle = ersp.event},
	};
	struct xgpu_graph_edge good_e[2] = {{0, 1}, {1, 2}};
	struct xgpu_graph_desc d = {.nnodes = 3, .nedges = 2};
	uint64_t exec = 0, dtoh = 0, x;
	CHECK(graph_instantiate(a, d, good, good_e, 3, &exec, &dtoh) == cudaSuccess && dtoh == 64,
	      "A instantiates a well-formed graph");
	uint8_t out[64];
	memset(out, 0, sizeof out);
	CHECK(graph_launch(a, exec, out, sizeof out) == cudaSuccess && out[0] == 0x5a && out[63] == 0x5a,
	      "A's graph ran");

	struct {
		const char *what;
		struct xgpu_graph_desc d;
		struct xgpu_graph_node n[3];
		struct xgpu_graph_edge e[3];
		int want;
	} bad[] = {
	    {"a cycle",
	     {3, 3, 0, 0, 0, 0},
	     {{.type = XGPU_GN_EMPTY}, {.type = XGPU_GN_EMPTY}, {.type = XGPU_GN_EMPTY}},
	     {{0, 1}, {1, 2}, {2, 0}},
	     cudaErrorInvalidValue},
	    {"a self-dependency",
	     {1, 1, 0, 0, 0, 0},
	     {{.type = XGPU_GN_EMPTY}},
	     {{0, 0}},
	     cudaErrorInvalidValue},
	    {"a dependency on no node",
	     {2, 1, 0, 0, 0, 0},
	     {{.type = XGPU_GN_EMPTY}, {.type = XGPU_GN_EMPTY}},
	     {{0, 7}},
	     cudaErrorInvalidValue},
	    {"no nodes", {0, 0, 0, 0, 0, 0}, {{0}}, {{0}}, cudaErrorInvalidValue},
	    {"more nodes than allowed",
	     {XGPU_MAX_GRAPH_NODES + 1, 0, 0, 0, 0, 0},
	     {{.type = XGPU_GN_EMPTY}},
	     {{0}},
	     cudaErrorInvalidValue},
	    {"more nodes than sent",
	     {2000, 0, 0, 0, 0, 0},
	     {{.type = XGPU_GN_EMPTY}},
	     {{0}},
	     cudaErrorInvalidValue},
	    {"flags", {1, 0, 0, 1, 0, 0}, {{.type = XGPU_GN_EMPTY}}, {{0}}, cudaErrorInvalidValue},
	    {"a node in a body that does not exist",
	     {1, 0, 0, 0, 0, 0},
	     {{.type = XGPU_GN_EMPTY, .graph = 1}},
	     {{0}},
	     cudaErrorInvalidValue},
	    {"an unknown node type", {1, 0, 0, 0, 0, 0}, {{.type = 99}}, {{0}}, cudaErrorInvalidValue},
	    {"a memset value wider than a byte",
	     {1, 0, 0, 0, 0, 0},
	     {{.type = XGPU_GN_MEMSET, .dst = arsp.dptr, .value = 0x1234, .size = 8}},
	     {{0}},
	     cudaErrorInvalidValue},
	    {"a copy past the allocation",
	     {1, 0, 0, 0, 0, 0},
	     {{.type = XGPU_GN_DTOD, .dst = arsp.dptr, .src = arsp.dptr + 4000, .size = 200}},
	     {{0}},
	     cudaErrorInvalidValue},
	    {"a forged function",
	     {1, 0, 0, 0, 0, 0},
	     {{.type = XGPU_GN_KERNEL, .handle = 0x500000003ull, .grid = {1, 1, 1}, .block = {1, 1, 1}}},
	     {{0}},
	     cudaErrorInvalidResourceHandle},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		int st = graph_instantiate(a, bad[i].d, bad[i].n, bad[i].e, 3, &x, NULL);
		printf("graph with %s -> %d\n", bad[i].what, st);
		CHECK(st == bad[i].want, "graph with %s: %d", bad[i].what, st);
	}

	/* B names A's memory, event and exec. */
	struct xgpu_graph_node foreign_mem = {
	    .type = XGPU_GN_MEMSET, .dst = arsp.dptr, .value = 1, .size = 16};
	struct xgpu_graph_node foreign_event = {.type = XGPU_GN_EVENT_WAIT, .handle = ersp.event};
	struct xgpu_graph_desc one = {.nnodes = 1};
	CHECK(graph_instantiate(b, one, &foreign_mem, NULL, 1, &x, NULL) == cudaErrorInvalidValue,
	      "B's graph wrote A's memory");
	CHECK(graph_instantiate(b, one, &foreign_event, NULL, 1, &x, NULL) == cudaErrorInvalidResourceHandle,
	      "B's graph waited on A's event");
	CHECK(graph_launch(b, exec, out, sizeof out) == cudaErrorInvalidResourceHandle,
	      "B launched A's graph");
	struct xgpu_req_GRAPH_EXEC_DESTROY gd = {.exec = exec};
	struct xgpu_rsp_GRAPH_EXEC_DESTROY gdr;
	CHECK(xgpu_call_GRAPH_EXEC_DESTROY(b, &gd, &gdr) == cudaErrorInvalidResourceHandle,
	      "B destroyed A's graph");

	/* A launch whose host data does not match the graph's copies. */
	struct xgpu_req_GRAPH_LAUNCH lr = {.exec = exec};
	struct xgpu_rsp_GRAPH_LAUNCH lrsp;
	struct xgpu_rpc r = xgpu_rpc_GRAPH_LAUNCH(&lr, &lrsp);
	uint8_t extra[32] = {0};
	r.out = extra;
	r.out_len = sizeof extra;
	CHECK(xgpu_rpc(a, &r) == cudaErrorInvalidValue, "a launch with host data the graph does not copy");

	/* What a graph names may go away: its launch is then refused. */
	struct xgpu_req_EVENT_DESTROY ed = {.event = ersp.event};
	struct xgpu_rsp_EVENT_DESTROY edr;
	CHECK(xgpu_call_EVENT_DESTROY(a, &ed, &edr) == cudaSuccess, "A destroys its event");
	CHECK(graph_launch(a, exec, out, sizeof out) == cudaErrorInvalidResourceHandle,
	      "a graph launched after its event was destroyed");
	CHECK(xgpu_call_GRAPH_EXEC_DESTROY(a, &gd, &gdr) == cudaSuccess, "A destroys its graph");
	CHECK(graph_launch(a, exec, out, sizeof out) == cudaErrorInvalidResourceHandle,
	      "a destroyed graph launched");

	/* The daemon still runs a good graph (left for process exit to free). */
	good[2].type = XGPU_GN_EMPTY;
	CHECK(graph_instantiate(a, d, good, good_e, 3, &exec, &dtoh) == cudaSuccess, "A instantiates again");
	memset(out, 0, sizeof out);
	CHECK(graph_launch(a, exec, out, sizeof out) == cudaSuccess && out[10] == 0x5a,
	      "A's graph ran again");
	xgpu_client_close(a);
	xgpu_client_close(b);
	return failures;
}

static int mode_memlimit(uint64_t limit)
{
	struct xgpu_client *c = open_or_die("raw-limit");
	struct xgpu_req_MEM_ALLOC big = {.size = limit + 1};
	struct xgpu_rsp_MEM_ALLOC rsp;
	int st = xgpu_call_MEM_ALLOC(c, &big, &rsp);
	printf("allocating limit+1 -> %d\n", st);
	CHECK(st == cudaErrorMemoryAllocation, "over-limit allocation: %d", st);
	struct xgpu_req_ARRAY_CREATE arr = {.format = CU_AD_FORMAT_FLOAT,
					    .channels = 4,
					    .width = 1 << 20,
					    .height = 1 << 20,
					    .depth = 1 << 10};
	struct xgpu_rsp_ARRAY_CREATE arr_rsp;
	CHECK(xgpu_call_ARRAY_CREATE(c, &arr, &arr_rsp) == cudaErrorMemoryAllocation,
	      "an array over the limit");
	struct xgpu_req_MEM_ALLOC half = {.size = limit / 2};
	uint64_t p1, p2;
	CHECK(xgpu_call_MEM_ALLOC(c, &half, &rsp) == cudaSuccess, "first half");
	p1 = rsp.dptr;
	CHECK(xgpu_call_MEM_ALLOC(c, &half, &rsp) == cudaSuccess, "second half");
	p2 = rsp.dptr;
	struct xgpu_req_MEM_ALLOC one = {.size = 4096};
	st = xgpu_call_MEM_ALLOC(c, &one, &rsp);
	CHECK(st == cudaErrorMemoryAllocation, "allocation past the limit: %d", st);
	struct xgpu_req_MEM_GET_INFO mi = {0};
	struct xgpu_rsp_MEM_GET_INFO mir;
	CHECK(xgpu_call_MEM_GET_INFO(c, &mi, &mir) == cudaSuccess, "mem info");
	CHECK(mir.total == limit, "total %llu", (unsigned long long)mir.total);
	CHECK(mir.free < 4096, "free %llu", (unsigned long long)mir.free);
	struct xgpu_req_MEM_FREE f = {.dptr = p1};
	struct xgpu_rsp_MEM_FREE fr;
	CHECK(xgpu_call_MEM_FREE(c, &f, &fr) == cudaSuccess, "free");
	CHECK(xgpu_call_MEM_ALLOC(c, &one, &rsp) == cudaSuccess, "allocation after a free");
	(void)p2;
	xgpu_client_close(c);
	return failures;
}

/* Forged managed-memory requests: bad flags and sizes, sizes past the
 * address space and the domain's limit, frees of addresses inside an
 * allocation, twice, and from another domain. */
static int mode_managed(void)
{
	struct xgpu_client *c = open_or_die("raw-managed"), *other = open_or_die("raw-managed-b");
	struct xgpu_rsp_MEM_ALLOC_MANAGED rsp;
	static const struct {
		uint64_t size;
		uint32_t flags;
		int want;
	} bad[] = {
	    {4096, 0, cudaErrorInvalidValue},
	    {4096, 3, cudaErrorInvalidValue},
	    {4096, 4, cudaErrorInvalidValue},
	    {4096, UINT32_MAX, cudaErrorInvalidValue},
	    {0, 1, cudaErrorInvalidValue},
	    {UINT64_MAX, 1, cudaErrorInvalidValue},
	    {UINT64_MAX - 4095, 1, cudaErrorInvalidValue},
	    {1ull << 63, 2, cudaErrorInvalidValue},
	    {1ull << 46, 1, cudaErrorMemoryAllocation}, /* past the domain's limit */
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		struct xgpu_req_MEM_ALLOC_MANAGED rq = {.size = bad[i].size, .flags = bad[i].flags};
		int st = xgpu_call_MEM_ALLOC_MANAGED(c, &rq, &rsp);
		CHECK(st == bad[i].want, "managed size %llu flags %u: %d, want %d",
		      (unsigned long long)bad[i].size, bad[i].flags, st, bad[i].want);
	}
	struct xgpu_req_MEM_ALLOC_MANAGED ok = {.size = 5000, .flags = 1};
	CHECK(xgpu_call_MEM_ALLOC_MANAGED(c, &ok, &rsp) == cudaSuccess, "managed allocation");
	uint64_t d = rsp.dptr;
	printf("managed memory at 0x%llx\n", (unsigned long long)d);
	CHECK(d % 4096 == 0 && d < (1ull << 47), "managed address 0x%llx is not a page-aligned user address",
	      (unsigned long long)d);
	struct xgpu_rsp_MEM_FREE fr;
	struct xgpu_req_MEM_FREE inner = {.dptr = d + 4096};
	CHECK(xgpu_call_MEM_FREE(c, &inner, &fr) == cudaErrorInvalidValue, "freed inside an allocation");
	struct xgpu_req_MEM_FREE whole = {.dptr = d};
	CHECK(xgpu_call_MEM_FREE(other, &whole, &fr) == cudaErrorInvalidValue, "another domain freed it");
	struct xgpu_req_MEMSET past = {.dst = d + 4096, .size = 8192};
	struct xgpu_rsp_MEMSET msr;
	CHECK(xgpu_call_MEMSET(c, &past, &msr) == cudaErrorInvalidValue,
	      "memset past the allocation's pages");
	CHECK(xgpu_call_MEM_FREE(c, &whole, &fr) == cudaSuccess, "free");
	CHECK(xgpu_call_MEM_FREE(c, &whole, &fr) == cudaErrorInvalidValue, "freed twice");
	xgpu_client_close(other);
	xgpu_client_close(c);
	return failures;
}

/* Copies 64 MiB to the device over and over until killed. */
static int mode_stream(const char *domain)
{
	struct xgpu_client *c = open_or_die(domain);
	const uint64_t size = 64u << 20;
	struct xgpu_req_MEM_ALLOC ar = {.size = size};
	struct xgpu_rsp_MEM_ALLOC arsp;
	if (xgpu_call_MEM_ALLOC(c, &ar, &arsp))
		return 2;
	uint8_t *buf = malloc(size);
	memset(buf, 0x5a, size);
	printf("streaming\n");
	fflush(stdout);
	for (;;) {
		struct xgpu_req_MEMCPY_HTOD req = {.dst = arsp.dptr, .size = size};
		struct xgpu_rsp_MEMCPY_HTOD rsp;
		struct xgpu_rpc r = xgpu_rpc_MEMCPY_HTOD(&req, &rsp);
		r.out = buf;
		r.out_len = size;
		if (xgpu_rpc(c, &r))
			return 2;
	}
}

/* Random requests: valid and invalid call ids, lengths, handles and small
 * bulk lengths. The daemon may refuse or close; it must never crash. */
static int mode_fuzz(unsigned seed, unsigned count)
{
	struct xgpu_client *c = open_or_die("raw-fuzz");
	uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
	unsigned reopened = 0, answered = 0;
	for (unsigned i = 0; i < count; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		uint8_t slot[XGPU_SLOT_SIZE];
		for (size_t k = 0; k < sizeof slot; k += 8) {
			uint64_t y = x * (k + 1) * 0xD6E8FEB86659FD93ull;
			memcpy(slot + k, &y, 8);
		}
		struct xgpu_req_hdr h;
		memcpy(&h, slot, sizeof h);
		h.call = (uint32_t)(x % (XGPU_CALL_COUNT + 2));
		if (h.call < XGPU_CALL_COUNT && x % 3)
			h.len = xgpu_calls[h.call].req_len;
		/* Bulk data is never sent: keep it to zero so requests do not
		 * stall their channel until the timeout. */
		h.bulk_len = 0;
		h.seq = i;
		if (h.call == XGPU_CALL_DEVICE_RESET || h.call == XGPU_CALL_STREAM_SYNC ||
		    h.call == XGPU_CALL_EVENT_SYNC || h.call == XGPU_CALL_DEVICE_SYNC)
			h.call = XGPU_CALL_NOP;
		memcpy(slot, &h, sizeof h);
		int st = raw_request(c, slot, sizeof slot);
		if (st == INT32_MIN || (h.call >= XGPU_CALL_COUNT || h.len != xgpu_calls[h.call].req_len)) {
			xgpu_client_close(c);
			c = open_or_die("raw-fuzz");
			reopened++;
		} else {
			answered++;
		}
	}
	printf("fuzz: %u requests, %u answered, %u channels closed by the daemon\n", count, answered,
	       reopened);
	xgpu_client_close(c);
	return failures;
}

/* Connects count times and says nothing for seconds: the daemon must go on
 * serving everyone else. */
static int mode_silent(int count, int seconds)
{
	int *fds = calloc((size_t)count, sizeof *fds);
	for (int i = 0; i < count; i++)
		fds[i] = unix_connect();
	printf("holding %d silent connections\n", count);
	fflush(stdout);
	sleep((unsigned)seconds);
	for (int i = 0; i < count; i++)
		close(fds[i]);
	free(fds);
	return 0;
}

/* Floods its channel's socket with kicks, then checks the channel still
 * answers. */
static int mode_kick_flood(int count)
{
	struct xgpu_client *c = open_or_die("raw-flood");
	for (int i = 0; i < count; i++)
		xgpu_client_kick(c);
	struct xgpu_req_NOP req = {0};
	struct xgpu_rsp_NOP rsp;
	CHECK(xgpu_call_NOP(c, &req, &rsp) == cudaSuccess, "NOP after %d kicks", count);
	xgpu_client_close(c);
	return failures;
}

/* Back-to-back null calls: the consumer of each ring keeps taking packets
 * the instant they are sealed, ahead of the producer's published index. */
static int mode_nops(int count)
{
	struct xgpu_client *c = open_or_die("raw-nops");
	struct xgpu_req_NOP req = {0};
	struct xgpu_rsp_NOP rsp;
	for (int i = 0; i < count; i++) {
		int r = xgpu_call_NOP(c, &req, &rsp);
		if (r) {
			CHECK(r == 0, "NOP %d of %d failed with %d", i, count, r);
			break;
		}
	}
	xgpu_client_close(c);
	return failures;
}

/* A hello of the first protocol drafts: three descriptors (region and two
 * eventfds). Refused, never served. */
static int mode_old_hello(void)
{
	int fd = unix_connect();
	struct xgpu_hello h = {
	    .magic = XGPU_PROTO_MAGIC, .version = XGPU_PROTO_VERSION, .kind = XGPU_CONN_CHANNEL};
	int fds[3] = {dup(1), dup(1), dup(1)};
	xgpu_send_fds(fd, &h, sizeof h, fds, 3);
	xgpu_close_fds(fds, 3);
	struct xgpu_hello_ack ack = {0};
	ssize_t n = recv(fd, &ack, sizeof ack, 0);
	ack.message[sizeof ack.message - 1] = '\0';
	printf("daemon said: %s\n", ack.message);
	CHECK(n == (ssize_t)sizeof ack && ack.status != 0, "a three-descriptor hello was accepted");
	close(fd);
	return failures;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		goto usage;
	const char *m = argv[1];
	if (!strcmp(m, "version"))
		return mode_version();
	if (!strcmp(m, "fake-daemon") && argc == 3)
		return mode_fake_daemon(argv[2]);
	if (!strcmp(m, "malformed"))
		return mode_malformed();
	if (!strcmp(m, "corrupt-ring"))
		return mode_corrupt_ring();
	if (!strcmp(m, "graphs"))
		return mode_graphs();
	if (!strcmp(m, "graph-conds"))
		return mode_graph_conds();
	if (!strcmp(m, "cross-domain"))
		return mode_cross_domain();
	if (!strcmp(m, "memlimit") && argc == 3) {
		uint64_t lim;
		if (xgpu_parse_size(argv[2], &lim) < 0)
			goto usage;
		return mode_memlimit(lim);
	}
	if (!strcmp(m, "stream") && argc == 3)
		return mode_stream(argv[2]);
	if (!strcmp(m, "fuzz") && argc == 4)
		return mode_fuzz((unsigned)atoi(argv[2]), (unsigned)atoi(argv[3]));
	if (!strcmp(m, "silent") && argc == 4)
		return mode_silent(atoi(argv[2]), atoi(argv[3]));
	if (!strcmp(m, "kick-flood") && argc == 3)
		return mode_kick_flood(atoi(argv[2]));
	if (!strcmp(m, "old-hello"))
		return mode_old_hello();
	if (!strcmp(m, "nops") && argc == 3)
		return mode_nops(atoi(argv[2]));
	if (!strcmp(m, "managed"))
		return mode_managed();
usage:
	fprintf(stderr,
		"usage: rawclient version | fake-daemon PATH | malformed | corrupt-ring | cross-domain |\n"
		"                 memlimit BYTES | stream DOMAIN | fuzz SEED COUNT | managed\n");
	return 2;
}
