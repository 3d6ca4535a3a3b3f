/* SPDX-License-Identifier: Apache-2.0 */
/* shm.c - channel region layout and the backend's validation of it. */
#include "shm.h"

#include "proto.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

_Static_assert(sizeof(struct xgpu_shm_header) <= XGPU_SHM_HEADER_SIZE, "header fits its page");

static bool pow2(uint64_t x)
{
	return x && !(x & (x - 1));
}

static uint64_t page_up(uint64_t x)
{
	return (x + 4095u) & ~(uint64_t)4095u;
}

size_t xgpu_shm_region_size(const struct xgpu_shm_params *p)
{
	if (!pow2(p->nr_slots) || p->nr_slots > XGPU_SHM_MAX_SLOTS || !pow2(p->data_size) ||
	    p->data_size < XGPU_SHM_MIN_DATA || p->data_size > XGPU_SHM_MAX_DATA)
		return 0;
	uint64_t slots = page_up((uint64_t)p->nr_slots * XGPU_SLOT_SIZE);
	return XGPU_SHM_HEADER_SIZE + slots + 2 * (uint64_t)p->data_size;
}

int xgpu_shm_init(void *base, size_t size, const struct xgpu_shm_params *p)
{
	size_t need = xgpu_shm_region_size(p);
	if (!need || size < need)
		return -1;
	struct xgpu_shm_header *h = base;
	uint64_t slots = page_up((uint64_t)p->nr_slots * XGPU_SLOT_SIZE);
	memset(h, 0, sizeof *h);
	h->magic = XGPU_SHM_MAGIC;
	h->version = XGPU_PROTO_VERSION;
	h->slot_size = XGPU_SLOT_SIZE;
	h->nr_slots = p->nr_slots;
	h->region_size = need;
	h->slot_off = XGPU_SHM_HEADER_SIZE;
	h->tx_off = h->slot_off + slots;
	h->tx_size = p->data_size;
	h->rx_off = h->tx_off + p->data_size;
	h->rx_size = p->data_size;
	return 0;
}

static void build_view(uint8_t *base, const struct xgpu_shm_header *h, struct xgpu_shm_header *shared,
		       struct xgpu_shm_view *v)
{
	xgpu_qend_init(&v->req, &shared->req, base + h->slot_off, h->nr_slots, XGPU_SLOT_SIZE, 0);
	xgpu_qend_init(&v->rsp, &shared->rsp, base + h->slot_off, h->nr_slots, XGPU_SLOT_SIZE, 0);
	v->rsp.tag_flip = XGPU_TAG_FLIP;
	xgpu_qend_init(&v->tx, &shared->tx, base + h->tx_off, (uint32_t)h->tx_size, 1, 0);
	xgpu_qend_init(&v->rx, &shared->rx, base + h->rx_off, (uint32_t)h->rx_size, 1, 0);
	v->nr_slots = h->nr_slots;
	v->data_size_tx = (uint32_t)h->tx_size;
	v->data_size_rx = (uint32_t)h->rx_size;
}

void xgpu_shm_view_frontend(void *base, struct xgpu_shm_view *v)
{
	struct xgpu_shm_header *h = base;
	build_view(base, h, h, v);
}

/* [off, off+len) lies inside [lo, size) and does not overlap [a, a+alen). */
static bool span_ok(uint64_t off, uint64_t len, uint64_t lo, uint64_t size)
{
	return off >= lo && len <= size && off <= size - len;
}

static bool disjoint(uint64_t a, uint64_t alen, uint64_t b, uint64_t blen)
{
	return a + alen <= b || b + blen <= a;
}

int xgpu_shm_attach(void *base, size_t size, struct xgpu_shm_view *v, char *err, size_t errlen)
{
	struct xgpu_shm_header h;
	if (size < XGPU_SHM_HEADER_SIZE) {
		snprintf(err, errlen, "region of %zu bytes is smaller than its header", size);
		return -1;
	}
	/* One copy out of shared memory; everything below checks the copy. */
	memcpy(&h, base, sizeof h);
	if (h.magic != XGPU_SHM_MAGIC) {
		snprintf(err, errlen, "region magic 0x%08x is not 0x%08x", h.magic, XGPU_SHM_MAGIC);
		return -1;
	}
	if (h.version != XGPU_PROTO_VERSION) {
		snprintf(err, errlen, "region speaks protocol %u, daemon speaks %u", h.version,
			 XGPU_PROTO_VERSION);
		return -1;
	}
	if (h.slot_size != XGPU_SLOT_SIZE) {
		snprintf(err, errlen, "slot size %u is not %u", h.slot_size, XGPU_SLOT_SIZE);
		return -1;
	}
	if (!pow2(h.nr_slots) || h.nr_slots > XGPU_SHM_MAX_SLOTS) {
		snprintf(err, errlen, "slot count %u is not a power of two up to %u", h.nr_slots,
			 XGPU_SHM_MAX_SLOTS);
		return -1;
	}
	if (h.region_size != size) {
		snprintf(err, errlen, "header says %llu bytes, region has %zu",
			 (unsigned long long)h.region_size, size);
		return -1;
	}
	for (int i = 0; i < 2; i++) {
		uint64_t ds = i ? h.rx_size : h.tx_size;
		if (!pow2(ds) || ds < XGPU_SHM_MIN_DATA || ds > XGPU_SHM_MAX_DATA) {
			snprintf(err, errlen, "%s area of %llu bytes is not a power of two in [%u, %u]",
				 i ? "rx" : "tx", (unsigned long long)ds, XGPU_SHM_MIN_DATA,
				 XGPU_SHM_MAX_DATA);
			return -1;
		}
	}
	uint64_t slots = (uint64_t)h.nr_slots * XGPU_SLOT_SIZE;
	const uint64_t off[3] = {h.slot_off, h.tx_off, h.rx_off};
	const uint64_t len[3] = {slots, h.tx_size, h.rx_size};
	static const char *const what[3] = {"slot array", "tx area", "rx area"};
	for (int i = 0; i < 3; i++) {
		if (!span_ok(off[i], len[i], XGPU_SHM_HEADER_SIZE, size) || off[i] % 64) {
			snprintf(err, errlen, "%s [%llu, +%llu) lies outside the region or is misaligned",
				 what[i], (unsigned long long)off[i], (unsigned long long)len[i]);
			return -1;
		}
		for (int j = 0; j < i; j++)
			if (!disjoint(off[i], len[i], off[j], len[j])) {
				snprintf(err, errlen, "%s overlaps %s", what[i], what[j]);
				return -1;
			}
	}
	/* All indexes start at 0 in a fresh region; a guest that moved them
	 * early only confuses its own channel, since every index the peer
	 * publishes is bounds-checked against ours. */
	build_view(base, &h, base, v);
	return 0;
}

int xgpu_shm_check_memfd(int fd, uint64_t size, char *err, size_t errlen)
{
	const int required = F_SEAL_SHRINK | F_SEAL_GROW;
	int seals = fcntl(fd, F_GET_SEALS);
	struct stat st;
	if (seals < 0 || (seals & required) != required) {
		snprintf(err, errlen, "shared memory is not a memfd sealed against resizing");
		return -1;
	}
	if (fstat(fd, &st) < 0 || (uint64_t)st.st_size != size) {
		snprintf(err, errlen, "shared memory has %lld bytes, %llu announced", (long long)st.st_size,
			 (unsigned long long)size);
		return -1;
	}
	return 0;
}
