/* SPDX-License-Identifier: Apache-2.0 */
/* managed.c - managed memory (cudaMallocManaged, cuMemAllocManaged) for both
 * frontends.
 *
 * The daemon allocates device memory at a page-aligned user address D; the
 * guest maps anonymous memory at exactly D, so one pointer works on both
 * sides. The guest's copy is kept read-only: the first write to a page
 * faults, and the SIGSEGV handler marks the page host-dirty and makes it
 * writable (nothing else: it must be async-signal-safe). Before any device
 * work the host-dirty pages are copied to the device and protected again;
 * device work marks every allocation device-dirty, and the next
 * synchronisation point waits for the device and copies those back (pages the
 * host wrote since stay the host's). That is the coherence of a GPU without
 * concurrentManagedAccess; docs/design.md, "Managed memory", says what is and
 * is not coherent and why not userfaultfd.
 */
#include "managed.h"

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define MAX_MANAGED 4096

struct managed {
	/* Read by the signal handler without the lock: base is published last
	 * (release) and cleared first, so a non-zero base means len and dirty
	 * are valid. */
	_Atomic uint64_t base;
	uint64_t len;         /* bytes mapped: whole pages */
	unsigned char *dirty; /* per page: written by the host since last pushed */
	/* Under lock. */
	uint64_t dev; /* the device's address of the mapping's first byte: base,
		       * except for a __managed__ variable the guest could not
		       * map there */
	uint64_t lo;  /* the mapping's bytes [lo, size) are on the device: lo is
		       * a __managed__ variable's offset in its page */
	uint64_t size;
	bool allocated; /* by xgpu_managed_alloc: freed with cudaFree */
	bool used;
	bool device_dirty; /* device work ran since the last copy-back */
	int advice;        /* the last cudaMemAdvise, remembered, not acted on */
};

static struct managed table[MAX_MANAGED];
static atomic_uint slots_high; /* slots [0, slots_high) may be in use */
static atomic_uint live;       /* allocations: no work at all while 0 */
static atomic_bool any_host_dirty, any_device_dirty;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static _Thread_local bool inside; /* this thread is running our own exchanges */
static struct sigaction previous;
static bool handler_installed;
static uint64_t page;

/* ---- the fault handler ----------------------------------------------------- */

static void chain(int sig, siginfo_t *si, void *uc)
{
	if (previous.sa_flags & SA_SIGINFO) {
		previous.sa_sigaction(sig, si, uc);
		return;
	}
	if (previous.sa_handler == SIG_DFL || previous.sa_handler == SIG_IGN) {
		/* Returning re-runs the faulting access under the default
		 * action, which ends the process as it would have without us. */
		struct sigaction dfl = {.sa_handler = SIG_DFL};
		sigemptyset(&dfl.sa_mask);
		sigaction(sig, &dfl, NULL);
		return;
	}
	previous.sa_handler(sig);
}

static void on_fault(int sig, siginfo_t *si, void *uc)
{
	uint64_t addr = (uintptr_t)si->si_addr;
	unsigned n = atomic_load_explicit(&slots_high, memory_order_acquire);
	bool ours = false;
	/* Every entry over the page: __managed__ variables may share one. */
	for (unsigned i = 0; i < n; i++) {
		uint64_t base = atomic_load_explicit(&table[i].base, memory_order_acquire);
		if (!base || addr < base || addr - base >= table[i].len)
			continue;
		__atomic_store_n(&table[i].dirty[(addr - base) / page], 1, __ATOMIC_SEQ_CST);
		ours = true;
	}
	if (!ours) {
		chain(sig, si, uc);
		return;
	}
	atomic_store(&any_host_dirty, true);
	int saved = errno;
	mprotect((void *)(uintptr_t)(addr - addr % page), page, PROT_READ | PROT_WRITE);
	errno = saved;
}

static int install_handler_locked(void)
{
	if (handler_installed)
		return 0;
	page = (uint64_t)sysconf(_SC_PAGESIZE);
	struct sigaction sa = {.sa_sigaction = on_fault, .sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART};
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGSEGV, &sa, &previous) < 0)
		return -1;
	handler_installed = true;
	return 0;
}

/* ---- copies in both directions (under lock, inside set) -------------------- */

/* The part of pages [p, p + run) that exists on the device: its offset in
 * the mapping (*start) and its length. */
static uint64_t run_bytes(const struct managed *m, uint64_t p, uint64_t run, uint64_t *start)
{
	uint64_t s = p * page, e = (p + run) * page;
	if (s < m->lo)
		s = m->lo;
	if (e > m->size)
		e = m->size;
	*start = s;
	return e > s ? e - s : 0;
}

/* Copies the host-dirty pages of every allocation to the device. */
static int push_locked(struct xgpu_client *c, uint64_t from, uint64_t to)
{
	/* The flag only saves a scan: cleared before a scan of everything (a
	 * fault during it sets it again), left alone by a prefetch of a part. */
	bool whole = from == 0 && to == UINT64_MAX;
	if (whole ? !atomic_exchange(&any_host_dirty, false) : !atomic_load(&any_host_dirty))
		return 0;
	int status = 0;
	bool pushed = false;
	unsigned n = atomic_load(&slots_high);
	for (unsigned i = 0; i < n && !status; i++) {
		struct managed *m = &table[i];
		if (!m->used)
			continue;
		uint64_t pages = m->len / page;
		for (uint64_t p = 0; p < pages && !status;) {
			uint64_t addr = m->base + p * page;
			if (!__atomic_load_n(&m->dirty[p], __ATOMIC_SEQ_CST) || addr + page <= from ||
			    addr >= to) {
				p++;
				continue;
			}
			uint64_t run = 0;
			/* Clear, then protect, then copy: a write before the
			 * protection is in the copy, one after it faults and is
			 * marked again. */
			while (p + run < pages &&
			       __atomic_exchange_n(&m->dirty[p + run], 0, __ATOMIC_SEQ_CST))
				run++;
			mprotect((void *)(uintptr_t)addr, run * page, PROT_READ);
			uint64_t start;
			uint64_t bytes = run_bytes(m, p, run, &start);
			if (bytes) {
				struct xgpu_req_MEMCPY_HTOD rq = {.dst = m->dev + start, .size = bytes};
				struct xgpu_rsp_MEMCPY_HTOD rs;
				struct xgpu_rpc r = xgpu_rpc_MEMCPY_HTOD(&rq, &rs);
				r.out = (const void *)(uintptr_t)(m->base + start);
				r.out_len = bytes;
				status = xgpu_rpc(c, &r);
			}
			pushed = true;
			p += run;
		}
	}
	if (status) {
		atomic_store(&any_host_dirty, true);
		return status;
	}
	if (pushed) {
		/* The copies went to the legacy stream; work on a non-blocking
		 * stream must see them too. */
		struct xgpu_req_DEVICE_SYNC rq = {0};
		struct xgpu_rsp_DEVICE_SYNC rs;
		status = xgpu_call_DEVICE_SYNC(c, &rq, &rs);
	}
	return status;
}

/* Copies one allocation back from the device, except the pages the host has
 * written since (those are newer than the device's and go the other way at
 * the next device work). The device is idle. */
static int pull_one_locked(struct xgpu_client *c, struct managed *m)
{
	uint64_t pages = m->len / page;
	for (uint64_t p = 0; p < pages;) {
		if (__atomic_load_n(&m->dirty[p], __ATOMIC_SEQ_CST)) {
			p++;
			continue;
		}
		uint64_t run = 1;
		while (p + run < pages && !__atomic_load_n(&m->dirty[p + run], __ATOMIC_SEQ_CST))
			run++;
		void *addr = (void *)(uintptr_t)(m->base + p * page);
		uint64_t start;
		uint64_t bytes = run_bytes(m, p, run, &start);
		mprotect(addr, run * page, PROT_READ | PROT_WRITE);
		int status = 0;
		if (bytes) {
			struct xgpu_req_MEMCPY_DTOH rq = {.src = m->dev + start, .size = bytes};
			struct xgpu_rsp_MEMCPY_DTOH rs;
			struct xgpu_rpc r = xgpu_rpc_MEMCPY_DTOH(&rq, &rs);
			r.in = (void *)(uintptr_t)(m->base + start);
			r.in_max = bytes;
			status = xgpu_rpc(c, &r);
		}
		mprotect(addr, run * page, PROT_READ);
		if (status)
			return status;
		p += run;
	}
	m->device_dirty = false;
	return 0;
}

static int device_sync(struct xgpu_client *c)
{
	struct xgpu_req_DEVICE_SYNC rq = {0};
	struct xgpu_rsp_DEVICE_SYNC rs;
	return xgpu_call_DEVICE_SYNC(c, &rq, &rs);
}

/* Waits for the device and copies back every device-dirty allocation. Without
 * concurrentManagedAccess the host may touch managed memory only once the
 * device is idle, so waiting for all of it is what the model requires. */
static int pull_all_locked(struct xgpu_client *c)
{
	if (!atomic_exchange(&any_device_dirty, false))
		return 0;
	int status = device_sync(c);
	unsigned n = atomic_load(&slots_high);
	for (unsigned i = 0; i < n && !status; i++)
		if (table[i].used && table[i].device_dirty)
			status = pull_one_locked(c, &table[i]);
	if (status)
		atomic_store(&any_device_dirty, true);
	return status;
}

static void mark_device_dirty_locked(void)
{
	unsigned n = atomic_load(&slots_high);
	for (unsigned i = 0; i < n; i++)
		if (table[i].used)
			table[i].device_dirty = true;
	atomic_store(&any_device_dirty, true);
}

static struct managed *find_locked(uint64_t addr, uint64_t len)
{
	unsigned n = atomic_load(&slots_high);
	struct managed *page_only = NULL;
	for (unsigned i = 0; i < n; i++) {
		struct managed *m = &table[i];
		if (!m->used || addr < m->base || addr - m->base >= m->len || len > m->len - (addr - m->base))
			continue;
		/* Of the entries over a page __managed__ variables share, the
		 * one whose bytes these are. */
		if (addr - m->base >= m->lo && addr - m->base < m->size)
			return m;
		if (!page_only)
			page_only = m;
	}
	return page_only;
}

static void drop_locked(struct managed *m)
{
	uint64_t base = m->base;
	atomic_store_explicit(&m->base, 0, memory_order_release);
	munmap((void *)(uintptr_t)base, m->len);
	m->used = false;
	atomic_fetch_sub(&live, 1);
	/* m->dirty stays allocated until the slot is reused: a fault handler
	 * that loaded the base just before may still be reading it. */
}

/* ---- the hooks around every exchange --------------------------------------- */

/* Calls that may write device memory. Everything that needs the GPU slot does,
 * except these, so a new call that launches or copies is covered unless it is
 * listed here by mistake. */
static bool writes_device(uint32_t call)
{
	if (call >= XGPU_CALL_COUNT || (xgpu_calls[call].flags & XF_EXEMPT))
		return false;
	switch (call) {
	case XGPU_CALL_MEM_ALLOC:
	case XGPU_CALL_MEM_ALLOC_MANAGED:
	case XGPU_CALL_MEMCPY_DTOH:
	case XGPU_CALL_MEMCPY_DTOH_SEG:
	case XGPU_CALL_MEMCPY_2D_DTOH:
	case XGPU_CALL_SEG_REGISTER:
	case XGPU_CALL_MODULE_LOAD:
	case XGPU_CALL_MODULE_GET_FUNCTION:
	case XGPU_CALL_MODULE_GET_GLOBAL:
	case XGPU_CALL_FUNC_SET_ATTRIBUTE:
	case XGPU_CALL_STREAM_CREATE:
	case XGPU_CALL_STREAM_WAIT_EVENT:
	case XGPU_CALL_EVENT_CREATE:
	case XGPU_CALL_EVENT_RECORD:
	case XGPU_CALL_LIMIT_SET:
	case XGPU_CALL_GRAPH_INSTANTIATE:
		return false;
	default:
		return true;
	}
}

/* Calls after which the host may read what the device wrote. A successful
 * stream or event query is not one (see docs/design.md). */
static bool is_sync_point(const struct xgpu_rpc *r)
{
	switch (r->call) {
	case XGPU_CALL_STREAM_SYNC:
	case XGPU_CALL_EVENT_SYNC:
	case XGPU_CALL_DEVICE_SYNC:
	case XGPU_CALL_MEMCPY_DTOH:
	case XGPU_CALL_MEMCPY_2D_DTOH:
		return true;
	case XGPU_CALL_MEMCPY_2D_HTOD:
		return !(((const struct xgpu_req_MEMCPY_2D_HTOD *)r->req)->flags & XGPU_COPY_ASYNC);
	case XGPU_CALL_MEMCPY_2D_DTOD:
		return !(((const struct xgpu_req_MEMCPY_2D_DTOD *)r->req)->flags & XGPU_COPY_ASYNC);
	case XGPU_CALL_MEMCPY_HTOD:
		return !(((const struct xgpu_req_MEMCPY_HTOD *)r->req)->flags & XGPU_COPY_ASYNC);
	case XGPU_CALL_MEMCPY_DTOD:
		return !(((const struct xgpu_req_MEMCPY_DTOD *)r->req)->flags & XGPU_COPY_ASYNC);
	case XGPU_CALL_MEMCPY_HTOD_SEG:
		return !(((const struct xgpu_req_MEMCPY_HTOD_SEG *)r->req)->flags & XGPU_COPY_ASYNC);
	case XGPU_CALL_MEMCPY_DTOH_SEG:
		return !(((const struct xgpu_req_MEMCPY_DTOH_SEG *)r->req)->flags & XGPU_COPY_ASYNC);
	default:
		return false;
	}
}

int xgpu_managed_before(struct xgpu_client *c, const struct xgpu_rpc *r)
{
	if (inside || !atomic_load(&live) || r->call >= XGPU_CALL_COUNT ||
	    (xgpu_calls[r->call].flags & XF_EXEMPT) || !atomic_load(&any_host_dirty))
		return 0;
	pthread_mutex_lock(&lock);
	inside = true;
	int status = push_locked(c, 0, UINT64_MAX);
	inside = false;
	pthread_mutex_unlock(&lock);
	return status;
}

void xgpu_managed_after(struct xgpu_client *c, const struct xgpu_rpc *r, int status)
{
	if (inside || !atomic_load(&live))
		return;
	bool writes = !status && writes_device(r->call);
	bool sync = !status && is_sync_point(r);
	if (r->call == XGPU_CALL_DEVICE_RESET && !status) {
		/* The daemon freed every allocation of the process. */
		pthread_mutex_lock(&lock);
		for (unsigned i = 0; i < atomic_load(&slots_high); i++)
			if (table[i].used)
				drop_locked(&table[i]);
		atomic_store(&any_device_dirty, false);
		pthread_mutex_unlock(&lock);
		return;
	}
	if (!writes && !(sync && atomic_load(&any_device_dirty)))
		return;
	pthread_mutex_lock(&lock);
	inside = true;
	if (writes)
		mark_device_dirty_locked();
	if (sync)
		pull_all_locked(c); /* a failure leaves it device-dirty; the error is the next call's */
	inside = false;
	pthread_mutex_unlock(&lock);
}

/* ---- fork -------------------------------------------------------------------- */

/* A forked child gets a channel of its own, where none of the parent's
 * managed memory exists: its mappings become plain, writable memory (with
 * the parent's last view of the data), so that the child neither pushes to
 * addresses its channel does not have nor faults on them. */
static void managed_child(void)
{
	pthread_mutex_init(&lock, NULL);
	unsigned n = atomic_load(&slots_high);
	for (unsigned i = 0; i < n; i++) {
		struct managed *m = &table[i];
		if (!m->used)
			continue;
		uint64_t base = m->base;
		atomic_store(&m->base, 0);
		mprotect((void *)(uintptr_t)base, m->len, PROT_READ | PROT_WRITE);
		m->used = false;
	}
	atomic_store(&live, 0);
	atomic_store(&any_host_dirty, false);
	atomic_store(&any_device_dirty, false);
}

__attribute__((constructor)) static void managed_setup(void)
{
	pthread_atfork(NULL, NULL, managed_child);
}

/* ---- the calls --------------------------------------------------------------- */

static struct managed *free_slot_locked(void)
{
	for (unsigned i = 0; i < MAX_MANAGED; i++)
		if (!table[i].used)
			return &table[i];
	return NULL;
}

/* Makes m, filled in but for base, visible to the fault handler. */
static void publish_locked(struct managed *m, uint64_t base)
{
	atomic_fetch_add(&live, 1);
	atomic_store_explicit(&m->base, base, memory_order_release);
	unsigned slot = (unsigned)(m - table) + 1;
	if (slot > atomic_load(&slots_high))
		atomic_store_explicit(&slots_high, slot, memory_order_release);
}

/* An entry over device page addr mapped at that same address here, if any. */
static struct managed *at_device_page_locked(uint64_t addr)
{
	unsigned n = atomic_load(&slots_high);
	for (unsigned i = 0; i < n; i++) {
		struct managed *m = &table[i];
		if (m->used && !m->allocated && m->base == m->dev && addr >= m->dev && addr - m->dev < m->len)
			return m;
	}
	return NULL;
}

/* Whether an entry over host page addr has it written since its last push. */
static bool page_dirty_locked(uint64_t addr)
{
	unsigned n = atomic_load(&slots_high);
	for (unsigned i = 0; i < n; i++) {
		struct managed *m = &table[i];
		if (m->used && addr >= m->base && addr - m->base < m->len &&
		    __atomic_load_n(&m->dirty[(addr - m->base) / page], __ATOMIC_SEQ_CST))
			return true;
	}
	return false;
}

/* Sets the protection of pages [from, to), ours; a page the host has
 * written since the last push stays writable. */
static void set_protection_locked(uint64_t from, uint64_t to, int prot)
{
	for (uint64_t p = from; p < to; p += page)
		if (prot != PROT_READ || !page_dirty_locked(p))
			mprotect((void *)(uintptr_t)p, page, prot);
}

int xgpu_managed_map_var(struct xgpu_client *c, uint64_t dptr, size_t size, void **host)
{
	if (!size)
		return cudaErrorInvalidValue;
	pthread_mutex_lock(&lock);
	inside = true;
	int status = cudaErrorMemoryAllocation;
	unsigned n = atomic_load(&slots_high);
	for (unsigned i = 0; i < n; i++)
		if (table[i].used && !table[i].allocated && table[i].dev + table[i].lo == dptr) {
			*host = (void *)(uintptr_t)(table[i].base + table[i].lo);
			status = cudaSuccess;
			goto out;
		}
	if (install_handler_locked() < 0)
		goto out;
	/* At the device's address: the variable's pages mapped where the
	 * device has them, if they are free here or already mapped so for a
	 * variable before it (NVIDIA's driver puts __managed__ variables at
	 * the daemon's addresses, several to a page; each keeps an entry of
	 * its own over the pages it touches); otherwise anywhere, and the
	 * variable's host address differs from its device address. */
	struct managed *m = free_slot_locked();
	if (!m)
		goto out;
	uint64_t end = dptr + size, start = dptr - dptr % page;
	uint64_t first = start; /* the first page not mapped here yet */
	struct managed *e;
	while (first < end && (e = at_device_page_locked(first)))
		first = e->dev + e->len;
	uint64_t last = (end + page - 1) / page * page;
	uint64_t base = start, lo = dptr - start, len = last - start;
	void *got = NULL; /* the pages mapped for it, got_len bytes */
	uint64_t got_len = 0;
	if (first < end) {
		void *want = (void *)(uintptr_t)first;
		got_len = last - first;
		got = mmap(want, got_len, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
		int why = got == MAP_FAILED ? errno : 0;
		if (got != want) {
			if (got != MAP_FAILED)
				munmap(got, got_len);
			lo = 0;
			got_len = len = ((uint64_t)size + page - 1) / page * page;
			got = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			if (got == MAP_FAILED)
				goto out;
			base = (uintptr_t)got;
			first = start = last = base; /* nothing shared */
			xgpu_fe_warn_once("managed-var-address",
					  "a __managed__ variable's host address differs from its device "
					  "address 0x%" PRIx64 " (its page here: %s); pass it to kernels by "
					  "name, not by a host-taken pointer",
					  dptr, why ? strerror(why) : "the kernel placed it elsewhere");
		}
	}
	unsigned char *dirty = calloc(len / page, 1);
	if (!dirty) {
		if (got)
			munmap(got, got_len);
		goto out;
	}
	/* The variable's current value (its initializer, or what kernels
	 * left), with the pages it shares with variables before it open. */
	set_protection_locked(start, first, PROT_READ | PROT_WRITE);
	status = device_sync(c);
	if (!status) {
		struct xgpu_req_MEMCPY_DTOH rq = {.src = dptr, .size = size};
		struct xgpu_rsp_MEMCPY_DTOH rs;
		struct xgpu_rpc r = xgpu_rpc_MEMCPY_DTOH(&rq, &rs);
		r.in = (void *)(uintptr_t)(base + lo);
		r.in_max = size;
		status = xgpu_rpc(c, &r);
	}
	set_protection_locked(start, first, PROT_READ);
	if (status) {
		if (got)
			munmap(got, got_len);
		free(dirty);
		goto out;
	}
	if (got)
		mprotect(got, got_len, PROT_READ);
	free(m->dirty);
	*m = (struct managed){
	    .len = len, .dirty = dirty, .dev = dptr - lo, .lo = lo, .size = lo + size, .used = true};
	publish_locked(m, base);
	*host = (void *)(uintptr_t)(base + lo);
out:
	inside = false;
	pthread_mutex_unlock(&lock);
	return status;
}

void xgpu_managed_forget_all(void)
{
	pthread_mutex_lock(&lock);
	unsigned n = atomic_load(&slots_high);
	for (unsigned i = 0; i < n; i++)
		if (table[i].used)
			drop_locked(&table[i]);
	atomic_store(&any_host_dirty, false);
	atomic_store(&any_device_dirty, false);
	pthread_mutex_unlock(&lock);
}

void xgpu_managed_unmap_var(uint64_t host)
{
	if (!atomic_load(&live))
		return;
	pthread_mutex_lock(&lock);
	unsigned n = atomic_load(&slots_high);
	struct managed *m = NULL;
	for (unsigned i = 0; i < n && !m; i++)
		if (table[i].used && !table[i].allocated && table[i].base + table[i].lo == host)
			m = &table[i];
	if (m) {
		uint64_t base = m->base, len = m->len;
		atomic_store_explicit(&m->base, 0, memory_order_release);
		m->used = false;
		atomic_fetch_sub(&live, 1);
		/* Only the pages no other variable's entry lies over. */
		for (uint64_t p = base; p < base + len; p += page) {
			bool shared = false;
			for (unsigned i = 0; i < n && !shared; i++)
				shared =
				    table[i].used && p >= table[i].base && p - table[i].base < table[i].len;
			if (!shared)
				munmap((void *)(uintptr_t)p, page);
		}
	}
	pthread_mutex_unlock(&lock);
}

int xgpu_managed_alloc(struct xgpu_client *c, size_t size, unsigned flags, uint64_t *dptr)
{
	if (size == 0 || (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST))
		return cudaErrorInvalidValue;
	pthread_mutex_lock(&lock);
	inside = true;
	int status = cudaErrorMemoryAllocation;
	if (install_handler_locked() < 0)
		goto out;
	struct managed *m = free_slot_locked();
	if (!m)
		goto out;
	uint64_t len = ((uint64_t)size + page - 1) / page * page;
	unsigned char *dirty = calloc(len / page, 1);
	if (!dirty)
		goto out;
	struct xgpu_req_MEM_ALLOC_MANAGED rq = {.size = size, .flags = flags};
	struct xgpu_rsp_MEM_ALLOC_MANAGED rs;
	status = xgpu_call_MEM_ALLOC_MANAGED(c, &rq, &rs);
	if (status) {
		free(dirty);
		goto out;
	}
	void *want = (void *)(uintptr_t)rs.dptr;
	void *got =
	    mmap(want, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (got != want) {
		fprintf(stderr,
			"xgpu: cannot place managed memory at 0x%" PRIx64 " (%" PRIu64
			" bytes): that address is taken in this process (%s)\n",
			rs.dptr, len, got == MAP_FAILED ? strerror(errno) : "mapped elsewhere");
		if (got != MAP_FAILED)
			munmap(got, len);
		struct xgpu_req_MEM_FREE fq = {.dptr = rs.dptr};
		struct xgpu_rsp_MEM_FREE fs;
		xgpu_call_MEM_FREE(c, &fq, &fs);
		free(dirty);
		status = cudaErrorMemoryAllocation;
		goto out;
	}
	/* Both copies start as zeros, as a GPU's managed pages do on first touch. */
	struct xgpu_req_MEMSET zq = {.dst = rs.dptr, .value = 0, .size = len};
	struct xgpu_rsp_MEMSET zs;
	status = xgpu_call_MEMSET(c, &zq, &zs);
	if (status) {
		munmap(want, len);
		struct xgpu_req_MEM_FREE fq = {.dptr = rs.dptr};
		struct xgpu_rsp_MEM_FREE fs;
		xgpu_call_MEM_FREE(c, &fq, &fs);
		free(dirty);
		goto out;
	}
	mprotect(want, len, PROT_READ);
	free(m->dirty);
	*m = (struct managed){
	    .len = len, .dirty = dirty, .dev = rs.dptr, .size = len, .allocated = true, .used = true};
	publish_locked(m, rs.dptr);
	*dptr = rs.dptr;
out:
	inside = false;
	pthread_mutex_unlock(&lock);
	return status;
}

bool xgpu_managed_free(struct xgpu_client *c, uint64_t dptr, int *status)
{
	if (!atomic_load(&live))
		return false;
	pthread_mutex_lock(&lock);
	struct managed *m = find_locked(dptr, 0);
	if (!m || m->base != dptr || !m->allocated) {
		pthread_mutex_unlock(&lock);
		return false;
	}
	inside = true;
	/* cudaFree waits for the device, as CUDA's does. */
	*status = device_sync(c);
	struct xgpu_req_MEM_FREE rq = {.dptr = dptr};
	struct xgpu_rsp_MEM_FREE rs;
	int e = xgpu_call_MEM_FREE(c, &rq, &rs);
	if (!*status)
		*status = e;
	if (!e)
		drop_locked(m);
	inside = false;
	pthread_mutex_unlock(&lock);
	return true;
}

bool xgpu_managed_find(uint64_t addr, size_t len, uint64_t *base, size_t *size)
{
	if (!atomic_load(&live))
		return false;
	pthread_mutex_lock(&lock);
	struct managed *m = find_locked(addr, len);
	if (m) {
		if (base)
			*base = m->base;
		if (size)
			*size = m->len;
	}
	pthread_mutex_unlock(&lock);
	return m != NULL;
}

int xgpu_managed_prefetch(struct xgpu_client *c, uint64_t addr, size_t len, bool to_host)
{
	pthread_mutex_lock(&lock);
	struct managed *m = find_locked(addr, len);
	int status = cudaErrorInvalidValue;
	if (m) {
		inside = true;
		if (to_host) {
			status = device_sync(c);
			if (!status && m->device_dirty)
				status = pull_one_locked(c, m);
		} else {
			status = push_locked(c, addr, addr + len);
		}
		inside = false;
	}
	pthread_mutex_unlock(&lock);
	return status;
}

int xgpu_managed_advise(uint64_t addr, size_t len, int advice)
{
	if (advice < CU_MEM_ADVISE_SET_READ_MOSTLY || advice > CU_MEM_ADVISE_UNSET_ACCESSED_BY)
		return cudaErrorInvalidValue;
	pthread_mutex_lock(&lock);
	struct managed *m = find_locked(addr, len);
	if (m)
		m->advice = advice;
	pthread_mutex_unlock(&lock);
	return m ? cudaSuccess : cudaErrorInvalidValue;
}
