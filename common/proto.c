/* SPDX-License-Identifier: Apache-2.0 */
/* proto.c - the call table and request formatting derived from calls.def. */
#include "proto.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

const struct xgpu_call_desc xgpu_calls[XGPU_CALL_COUNT] = {
#define XGPU_CALL(name, flags, bulk, fields)                                                                 \
	[XGPU_CALL_##name] = {#name, (flags), sizeof(struct xgpu_req_##name),                                \
			      sizeof(struct xgpu_rsp_##name), (bulk)},
#include "calls.def"
#undef XGPU_CALL
};

const char *xgpu_call_name(uint32_t call)
{
	return call < XGPU_CALL_COUNT ? xgpu_calls[call].name : "unknown";
}

struct fmt {
	char *buf;
	size_t len, used;
};

static void put(struct fmt *f, const char *fmtstr, ...) __attribute__((format(printf, 2, 3)));

#include <stdarg.h>
static void put(struct fmt *f, const char *fmtstr, ...)
{
	if (f->used >= f->len)
		return;
	va_list ap;
	va_start(ap, fmtstr);
	int n = vsnprintf(f->buf + f->used, f->len - f->used, fmtstr, ap);
	va_end(ap);
	if (n > 0)
		f->used += (size_t)n;
}

#define FMT_U32(r, n) put(&f, " " #n "=%" PRIu32, (r)->n);
#define FMT_I32(r, n) put(&f, " " #n "=%" PRId32, (r)->n);
#define FMT_U64(r, n) put(&f, " " #n "=%" PRIu64, (r)->n);
#define FMT_F32(r, n) put(&f, " " #n "=%g", (double)(r)->n);
#define FMT_DIM3(r, n) put(&f, " " #n "=(%" PRIu32 ",%" PRIu32 ",%" PRIu32 ")", (r)->n.x, (r)->n.y, (r)->n.z);
#define FMT_DPTR(r, n) put(&f, " " #n "=0x%" PRIx64, (r)->n);
#define FMT_STREAM FMT_DPTR
#define FMT_EVENT FMT_DPTR
#define FMT_MODULE FMT_DPTR
#define FMT_FUNC FMT_DPTR
#define FMT_SEG FMT_DPTR

void xgpu_format_req(uint32_t call, const void *req, char *buf, size_t buflen)
{
	struct fmt f = {buf, buflen, 0};
	if (buflen)
		buf[0] = '\0';
	switch (call) {
#define IN(type, name) FMT_##type(r, name)
#define OUT(type, name)
#define XGPU_CALL(name, flags, bulk, fields)                                                                 \
	case XGPU_CALL_##name: {                                                                             \
		struct xgpu_req_##name rcopy;                                                                \
		memcpy(&rcopy, req, sizeof rcopy);                                                           \
		const struct xgpu_req_##name *r = &rcopy;                                                    \
		(void)r;                                                                                     \
		fields break;                                                                                \
	}
#include "calls.def"
#undef XGPU_CALL
#undef IN
#undef OUT
	default:
		break;
	}
	/* Drop the leading space. */
	if (f.used && buf[0] == ' ')
		memmove(buf, buf + 1, strlen(buf));
}

/* The offset of the request's STREAM field (every call has at most one). */
static int stream_offset(uint32_t call)
{
#define IN_U32(n)
#define IN_I32(n)
#define IN_U64(n)
#define IN_F32(n)
#define IN_DIM3(n)
#define IN_DPTR(n)
#define IN_EVENT(n)
#define IN_MODULE(n)
#define IN_FUNC(n)
#define IN_SEG(n)
#define IN_STREAM(n) return (int)offsetof(req_t, n);
#define IN(type, name) IN_##type(name)
#define OUT(type, name)
#define XGPU_CALL(NAME, flags, bulk, fields)                                                                 \
	case XGPU_CALL_##NAME: {                                                                             \
		typedef struct xgpu_req_##NAME req_t;                                                        \
		(void)sizeof(req_t);                                                                         \
		fields break;                                                                                \
	}
	switch (call) {
#include "calls.def"
	}
#undef XGPU_CALL
#undef IN
#undef OUT
#undef IN_U32
#undef IN_I32
#undef IN_U64
#undef IN_F32
#undef IN_DIM3
#undef IN_DPTR
#undef IN_EVENT
#undef IN_MODULE
#undef IN_FUNC
#undef IN_SEG
#undef IN_STREAM
	return -1;
}

bool xgpu_req_stream(uint32_t call, const void *req, uint32_t req_len, xgpu_handle_t *stream)
{
	int off = stream_offset(call);
	if (off < 0 || (uint32_t)off + sizeof *stream > req_len)
		return false;
	memcpy(stream, (const uint8_t *)req + off, sizeof *stream);
	return true;
}

/* Every request and response must fit a slot with its header. */
#define IN(type, name)
#define OUT(type, name)
#define XGPU_CALL(name, flags, bulk, fields)                                                                 \
	_Static_assert(sizeof(struct xgpu_req_##name) <= XGPU_SLOT_ARGS, #name " request too big");          \
	_Static_assert(sizeof(struct xgpu_rsp_##name) <= XGPU_SLOT_SIZE - sizeof(struct xgpu_rsp_hdr),       \
		       #name " response too big");
#include "calls.def"
#undef XGPU_CALL
#undef IN
#undef OUT
_Static_assert(sizeof(struct xgpu_req_hdr) == sizeof(struct xgpu_rsp_hdr), "headers share a slot layout");
