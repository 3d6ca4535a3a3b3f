/* SPDX-License-Identifier: Apache-2.0 */
/* oncpu.c - which thread is on each CPU, from sched_switch (see oncpu.h).
 *
 * One perf event per online CPU on the sched:sched_switch tracepoint,
 * sampling every switch with its raw record into a small ring that
 * xgpu_oncpu_update drains: the last switch on a CPU names the thread on
 * it. Nothing is written to tracefs; only the tracepoint's id and the
 * offset of next_pid are read from its format file. */
#include "oncpu.h"

#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define RING_PAGES 16u /* data pages per CPU: about 800 switches between updates */

struct cpu_ring {
	int fd;
	void *map;
	size_t map_len;
	struct xgpu_oncpu_ring r;
	pid_t current;
	bool known;
};

struct xgpu_oncpu {
	unsigned ncpu;
	uint32_t next_pid_off;
	struct cpu_ring cpu[];
};

static const char *const tracefs_dirs[] = {"/sys/kernel/tracing", "/sys/kernel/debug/tracing"};

/* The tracepoint's id and next_pid's offset from its format file. */
static int read_format(uint32_t *id, uint32_t *next_pid_off, char *err, size_t errlen)
{
	char path[128], buf[4096];
	for (size_t i = 0; i < XGPU_ARRAY_SIZE(tracefs_dirs); i++) {
		snprintf(path, sizeof path, "%s/events/sched/sched_switch/format", tracefs_dirs[i]);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		ssize_t n = read(fd, buf, sizeof buf - 1);
		close(fd);
		if (n <= 0)
			continue;
		buf[n] = '\0';
		const char *idp = strstr(buf, "\nID: "), *f = strstr(buf, "pid_t next_pid;");
		const char *off = f ? strstr(f, "offset:") : NULL;
		long v, o;
		char num[16];
		if (!idp || !off)
			break;
		snprintf(num, sizeof num, "%.*s", (int)strcspn(idp + 5, "\n"), idp + 5);
		if (xgpu_parse_long(num, 0, INT32_MAX, &v))
			break;
		snprintf(num, sizeof num, "%.*s", (int)strcspn(off + 7, ";"), off + 7);
		if (xgpu_parse_long(num, 0, 4096 - 4, &o))
			break;
		*id = (uint32_t)v;
		*next_pid_off = (uint32_t)o;
		return 0;
	}
	snprintf(err, errlen,
		 "no readable sched_switch format under %s or %s (tracefs not mounted, or not allowed)",
		 tracefs_dirs[0], tracefs_dirs[1]);
	return -1;
}

struct xgpu_oncpu *xgpu_oncpu_open(char *err, size_t errlen)
{
	uint32_t id, off;
	if (read_format(&id, &off, err, errlen) < 0)
		return NULL;
	long conf = sysconf(_SC_NPROCESSORS_CONF);
	unsigned ncpu = conf < 1 ? 1 : conf > XGPU_ONCPU_MAX_CPUS ? XGPU_ONCPU_MAX_CPUS : (unsigned)conf;
	struct xgpu_oncpu *o = calloc(1, sizeof *o + ncpu * sizeof o->cpu[0]);
	if (!o) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	o->ncpu = ncpu;
	o->next_pid_off = off;
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	unsigned opened = 0;
	int first_errno = 0;
	for (unsigned c = 0; c < ncpu; c++) {
		struct cpu_ring *cr = &o->cpu[c];
		cr->fd = -1;
		struct perf_event_attr a = {
		    .type = PERF_TYPE_TRACEPOINT,
		    .size = sizeof a,
		    .config = id,
		    .sample_period = 1,
		    .sample_type = PERF_SAMPLE_RAW,
		};
		int fd = (int)syscall(SYS_perf_event_open, &a, -1, (int)c, -1, PERF_FLAG_FD_CLOEXEC);
		if (fd < 0) {
			/* An offline CPU cannot be traced and runs nothing. */
			if (!first_errno && errno != ENODEV && errno != ENOENT)
				first_errno = errno;
			continue;
		}
		size_t len = (1 + RING_PAGES) * page;
		void *map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (map == MAP_FAILED) {
			if (!first_errno)
				first_errno = errno;
			close(fd);
			continue;
		}
		struct perf_event_mmap_page *mp = map;
		cr->fd = fd;
		cr->map = map;
		cr->map_len = len;
		cr->r = (struct xgpu_oncpu_ring){.head = (volatile uint64_t *)&mp->data_head,
						 .tail = (volatile uint64_t *)&mp->data_tail,
						 .data = (const uint8_t *)map + page,
						 .data_size = RING_PAGES * page};
		opened++;
	}
	if (first_errno || !opened) {
		snprintf(err, errlen, "perf_event_open on sched_switch: %s",
			 first_errno ? strerror(first_errno) : "no CPU could be traced");
		xgpu_oncpu_close(o);
		return NULL;
	}
	return o;
}

void xgpu_oncpu_close(struct xgpu_oncpu *o)
{
	if (!o)
		return;
	for (unsigned c = 0; c < o->ncpu; c++) {
		if (o->cpu[c].map)
			munmap(o->cpu[c].map, o->cpu[c].map_len);
		if (o->cpu[c].fd >= 0)
			close(o->cpu[c].fd);
	}
	free(o);
}

/* Copies len bytes at ring offset pos, across the wrap. */
static void ring_copy(const struct xgpu_oncpu_ring *r, uint64_t pos, void *dst, size_t len)
{
	uint64_t at = pos & (r->data_size - 1);
	size_t first = len < r->data_size - at ? len : (size_t)(r->data_size - at);
	memcpy(dst, r->data + at, first);
	memcpy((uint8_t *)dst + first, r->data, len - first);
}

unsigned xgpu_oncpu_drain(struct xgpu_oncpu_ring *r, uint32_t next_pid_off, pid_t *current, bool *known)
{
	uint64_t head = __atomic_load_n(r->head, __ATOMIC_ACQUIRE), tail = *r->tail;
	unsigned switches = 0;
	/* The kernel never has more than the ring unread; more means the
	 * control page is not what we think, so nothing is read. */
	if (head - tail > r->data_size) {
		tail = head;
		*known = false;
	}
	while (head - tail >= sizeof(struct perf_event_header)) {
		struct perf_event_header h;
		ring_copy(r, tail, &h, sizeof h);
		if (h.size < sizeof h || h.size > head - tail)
			break;
		if (h.type == PERF_RECORD_LOST) {
			*known = false;
		} else if (h.type == PERF_RECORD_SAMPLE && h.size >= sizeof h + sizeof(uint32_t)) {
			uint8_t rec[512];
			size_t len = h.size - sizeof h < sizeof rec ? h.size - sizeof h : sizeof rec;
			ring_copy(r, tail + sizeof h, rec, len);
			uint32_t raw;
			memcpy(&raw, rec, sizeof raw);
			if (raw >= (uint64_t)next_pid_off + sizeof(int32_t) && sizeof raw + raw <= len) {
				int32_t next;
				memcpy(&next, rec + sizeof raw + next_pid_off, sizeof next);
				*current = (pid_t)next;
				*known = true;
				switches++;
			}
		}
		tail += h.size;
	}
	__atomic_store_n(r->tail, head, __ATOMIC_RELEASE);
	return switches;
}

void xgpu_oncpu_update(struct xgpu_oncpu *o)
{
	for (unsigned c = 0; c < o->ncpu; c++) {
		struct cpu_ring *cr = &o->cpu[c];
		if (cr->map)
			xgpu_oncpu_drain(&cr->r, o->next_pid_off, &cr->current, &cr->known);
	}
}

bool xgpu_oncpu_running(const struct xgpu_oncpu *o, pid_t tid, bool *unknown)
{
	*unknown = false;
	for (unsigned c = 0; c < o->ncpu; c++) {
		const struct cpu_ring *cr = &o->cpu[c];
		if (!cr->map)
			continue;
		if (!cr->known)
			*unknown = true;
		else if (cr->current == tid) {
			*unknown = false;
			return true;
		}
	}
	return false;
}
