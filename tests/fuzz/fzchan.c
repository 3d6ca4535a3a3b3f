/* SPDX-License-Identifier: Apache-2.0 */
/* fzchan.c - the in-process executor, domain and channel of the dispatcher
 * harnesses (fzchan.h), with a transport that never blocks. */
#include "fzchan.h"

#include "log.h"
#include "exec.h"

#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#define SEG_MAX (1u << 20)

static struct xgpu_executor X;
static struct xgpu_domain *dom = &X.dom;
/* The pages xgpud would share: the slot always granted, as under `none`. */
static struct xgpu_exec_ctl ctl;
static struct xgpu_exec_status status;
static uint8_t *region;
static size_t region_size;
static int ready_fd = -1;

static void t_kick(struct xgpu_channel *ch)
{
}

/* Always readable: a wait that finds no progress comes straight back to its
 * stall check (the timeout is 0), so no input can hang the harness. */
static int t_wait_fd(struct xgpu_channel *ch)
{
	return ready_fd;
}

static bool t_service(struct xgpu_channel *ch)
{
	return true;
}

static int t_import_segment(struct xgpu_channel *ch, uint64_t token, uint64_t size, void **ptr, char *err,
			    size_t errlen)
{
	if (size == 0 || size > SEG_MAX || (token & 1)) {
		snprintf(err, errlen, "no segment with that token was shared");
		return -1;
	}
	*ptr = calloc(1, size);
	if (!*ptr) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	return 0;
}

static void t_drop_segment(struct xgpu_channel *ch, uint64_t token)
{
}

static void t_release_segment(struct xgpu_channel *ch, void *ptr, uint64_t size)
{
	free(ptr);
}

static void t_close(struct xgpu_channel *ch)
{
}

static const struct xgpu_be_transport_ops fuzz_ops = {
    .name = "fuzz",
    .kick = t_kick,
    .wait_fd = t_wait_fd,
    .service = t_service,
    .import_segment = t_import_segment,
    .drop_segment = t_drop_segment,
    .release_segment = t_release_segment,
    .close = t_close,
};

static void no_notify(void *arg)
{
}

void fz_daemon_init(const char *who)
{
	char err[512];
	/* The simulated GPU takes the time it models a kernel or copy to take:
	 * a million times faster here, and a runaway operation (a grid of
	 * billions of blocks) is stopped after 100 ms, so that no input costs
	 * more than that and the watchdog's path is reached too. */
	setenv("XGPU_SIM_SPEED", "1000000", 0);
	setenv("XGPU_SIM_WATCHDOG_MS", "100", 0);
	xgpu_log_init(who, getenv("FUZZ_LOG") ? XGPU_LOG_DEBUG : XGPU_LOG_ERROR, false);
	/* The instrumented simulated driver, as fuzz.mk lays it out:
	 * build/fuzz/bin/<harness> -> build/fuzz/lib/libxgpu-simdrv.so. */
	char drv[PATH_MAX + 32];
	ssize_t n = readlink("/proc/self/exe", drv, PATH_MAX - 1);
	drv[n > 0 ? n : 0] = '\0';
	snprintf(drv + strlen(dirname(drv)), 32, "/../lib/libxgpu-simdrv.so");
	if (xgpu_driver_load(&X.drv, drv, err, sizeof err) < 0 || X.drv.cuInit(0) != CUDA_SUCCESS ||
	    xgpu_driver_describe(&X.drv, 0, &X.gpu) < 0) {
		fprintf(stderr, "%s: the simulated driver %s: %s\n", who, drv, err);
		exit(1);
	}
	X.drv.cuDriverGetVersion(&X.driver_version);
	atomic_store(&ctl.mem_limit, 256ull << 20);
	atomic_store(&ctl.pinned_limit, 4ull << 20);
	atomic_store(&ctl.spin_ns, 0);
	/* No stall is waited for: the check comes at the first look. */
	atomic_store(&ctl.stall_timeout_s, 0);
	atomic_store(&ctl.slot.may_issue, 1);
	atomic_store(&X.ctl, &ctl);
	X.status = &status;
	snprintf(dom->name, sizeof dom->name, "fuzz");
	dom->x = &X;
	dom->gpu = &X.gpu;
	dom->stats = &status.stats;
	dom->slot = (struct xgpu_slot_client){.grant = &ctl.slot, .report = &status.slot, .notify = no_notify};
	pthread_mutex_init(&dom->marks_lock, NULL);
	pthread_mutex_init(&dom->incoming_lock, NULL);
	xgpu_ratelimit_init(&dom->log_rl, 50, 10000);
	ready_fd = eventfd(1, EFD_CLOEXEC);
	struct xgpu_shm_params p = {.nr_slots = 16, .data_size = FZ_DATA_SIZE};
	region_size = xgpu_shm_region_size(&p);
	region = aligned_alloc(4096, region_size);
	if (ready_fd < 0 || !region_size || !region) {
		fprintf(stderr, "%s: setup failed\n", who);
		exit(1);
	}
}

void fz_chan_open(struct fz_chan *c)
{
	char err[256];
	struct xgpu_shm_params p = {.nr_slots = 16, .data_size = FZ_DATA_SIZE};
	memset(region, 0, region_size);
	if (xgpu_shm_init(region, region_size, &p) < 0)
		abort();
	memset(c, 0, sizeof *c);
	if (xgpu_shm_attach(region, region_size, &c->ch.v, err, sizeof err) < 0)
		abort();
	xgpu_shm_view_frontend(region, &c->fv);
	c->ch.dom = dom;
	c->ch.id = 1;
	c->ch.task = 1;
	c->ch.pid = getpid();
	c->ch.uid = getuid();
	c->ch.ops = &fuzz_ops;
	c->ch.region = region;
	c->ch.region_size = region_size;
}

void fz_chan_close(struct fz_chan *c)
{
	xgpu_channel_release_objects(&c->ch);
	/* A context broken by this input must not decide the next one's fate. */
	if (dom->ctx && dom->sticky_error)
		xgpu_exec_release(dom);
}
