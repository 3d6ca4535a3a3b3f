/* SPDX-License-Identifier: Apache-2.0 */
/* daemon.c - bringing xgpud up and down: choosing the executors' driver
 * (NVIDIA's when a GPU is usable, the simulated one otherwise, and saying
 * which), describing each GPU (xgpud loads the driver for that alone: it
 * makes no context, so no guest's kernel ever runs in this process),
 * starting a scheduler per GPU, and the up-calls the transports make. */
#include "log.h"
#include "policy.h"
#include "scheduler.h"
#include "util.h"
#include "daemon.h"
#include "control.h"
#include "domain.h"
#include "executors.h"
#include "state.h"
#include "transport/host.h"

#include <cuda_runtime_api.h>
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A file of xgpu's found from the running binary as `make` lays them out
 * (build/bin/xgpud -> build/<as_built>), else in ../lib/xgpu/ (the Debian
 * package's private directory: /usr/sbin/xgpud -> /usr/lib/xgpu/), kept off
 * the library path and out of PATH. */
static void beside_binary(const char *as_built, const char *name, char *buf, size_t len)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (n <= 0) {
		snprintf(buf, len, "%s", name);
		return;
	}
	exe[n] = '\0';
	const char *dir = dirname(exe);
	snprintf(buf, len, "%s/%s", dir, as_built);
	if (access(buf, F_OK) == 0)
		return;
	char packaged[PATH_MAX];
	if ((size_t)snprintf(packaged, sizeof packaged, "%s/../lib/xgpu/%s", dir, name) < sizeof packaged &&
	    access(packaged, F_OK) == 0)
		snprintf(buf, len, "%s", packaged);
}

/* Loads and initialises a driver; returns its device count or -1. */
static int try_driver(struct xgpud *d, const char *path, char *why, size_t whylen)
{
	if (xgpu_driver_load(&d->drv, path, why, whylen) < 0)
		return -1;
	CUresult r = d->drv.cuInit(0);
	int count = 0;
	if (r == CUDA_SUCCESS)
		r = d->drv.cuDeviceGetCount(&count);
	if (r != CUDA_SUCCESS || count <= 0) {
		snprintf(why, whylen, "%s: %s", path,
			 r != CUDA_SUCCESS ? xgpu_driver_error_name(&d->drv, r) : "no devices");
		xgpu_driver_unload(&d->drv);
		return -1;
	}
	return count;
}

static int describe_gpu(struct xgpud *d, struct xgpu_gpu *g, int index)
{
	static struct xgpu_gpu_desc desc;
	if (xgpu_driver_describe(&d->drv, index, &desc) < 0)
		return -1;
	g->index = index;
	g->dev = desc.dev;
	memcpy(g->name, desc.name, sizeof g->name);
	memcpy(g->uuid, desc.uuid, sizeof g->uuid);
	g->total_mem = desc.total_mem;
	memcpy(g->attrs, desc.attrs, sizeof g->attrs);
	g->nattrs = desc.nattrs;
	return 0;
}

static void stop_scheduler(struct xgpu_gpu *g)
{
	struct xgpu_sched *s = g->sched;
	if (!s)
		return;
	xgpu_sched_stop(s);
	struct xgpu_hyp *hyp = s->hyp;
	const struct xgpu_hyp_ops *hyp_ops = s->hyp_ops;
	xgpu_sched_fini(s);
	if (hyp)
		hyp_ops->close(hyp);
	free(s);
	g->sched = NULL;
}

/* One scheduler per GPU, each with its own instance of the hypervisor
 * schedule source (a source serves one scheduler thread). */
static int start_scheduler(struct xgpud *d, struct xgpu_gpu *g, char *err, size_t errlen)
{
	struct xgpu_hyp *hyp = NULL;
	char why[256];
	if (d->hyp_ops && d->hyp_ops->open(d->hyp_args, &hyp, why, sizeof why) < 0) {
		snprintf(err, errlen, "hypervisor schedule source %s: %s", d->hyp_ops->name, why);
		return -1;
	}
	struct xgpu_sched *s = calloc(1, sizeof *s);
	snprintf(g->sched_label, sizeof g->sched_label, "GPU %d", g->index);
	if (!s || xgpu_sched_init(s, d->policy, (uint64_t)d->o.tick_ms * 1000000u, d->hyp_ops, hyp,
				  g->sched_label) < 0) {
		free(s);
		if (hyp)
			d->hyp_ops->close(hyp);
		snprintf(err, errlen, "cannot set up the scheduler of GPU %d", g->index);
		return -1;
	}
	g->sched = s;
	if (xgpu_sched_start(s) < 0) {
		stop_scheduler(g);
		snprintf(err, errlen, "cannot start the scheduler thread of GPU %d", g->index);
		return -1;
	}
	return 0;
}

int xgpud_init(struct xgpud *d, char *err, size_t errlen)
{
	char why[512] = "", simpath[PATH_MAX];
	int count = -1;
	d->start_ns = xgpu_now_ns();
	pthread_mutex_init(&d->domains_lock, NULL);

	d->policy = xgpu_policy_find(d->o.policy);
	if (!d->policy) {
		snprintf(err, errlen, "unknown policy '%s' (known: %s)", d->o.policy, xgpu_policy_names());
		return -1;
	}
	const char *cuda = d->o.cuda_driver ? d->o.cuda_driver : "libcuda.so.1";
	if (!d->o.sim_driver) {
		beside_binary("../lib/libxgpu-simdrv.so", "libxgpu-simdrv.so", simpath, sizeof simpath);
		d->o.sim_driver = simpath;
	}
	if (d->o.executor_path)
		snprintf(d->executor_path, sizeof d->executor_path, "%s", d->o.executor_path);
	else
		beside_binary("xgpu-executor", "xgpu-executor", d->executor_path, sizeof d->executor_path);
	if (access(d->executor_path, X_OK) < 0) {
		snprintf(err, errlen, "cannot run the executor %s: %s (--executor-path)", d->executor_path,
			 strerror(errno));
		return -1;
	}
	if (!d->o.executor || !strcmp(d->o.executor, "cuda")) {
		count = try_driver(d, cuda, why, sizeof why);
		if (count > 0)
			d->executor_name = "cuda";
		else if (d->o.executor) {
			snprintf(err, errlen, "--executor cuda: no usable GPU (%s)", why);
			return -1;
		}
	}
	if (count <= 0) {
		if (d->o.executor && strcmp(d->o.executor, "sim")) {
			snprintf(err, errlen, "unknown executor '%s' (known: cuda, sim)", d->o.executor);
			return -1;
		}
		char simwhy[512];
		count = try_driver(d, d->o.sim_driver, simwhy, sizeof simwhy);
		if (count <= 0) {
			snprintf(err, errlen, "cannot start the simulated driver: %s", simwhy);
			return -1;
		}
		d->executor_name = "sim";
		d->o.sim_driver = strdup(d->o.sim_driver);
	}
	/* Executors load it by the same name, so that they find what we did. */
	d->driver_path = !strcmp(d->executor_name, "sim") ? d->o.sim_driver : cuda;
	d->drv.cuDriverGetVersion(&d->driver_version);
	if (!strcmp(d->executor_name, "sim"))
		xlog_info("executor sim: simulated CUDA driver %s (%s)", d->drv.path,
			  d->o.executor ? "as asked"
			  : why[0]      ? why
					: "no GPU found");
	else
		xlog_info("executor cuda: NVIDIA driver %s, version %d.%d", d->drv.path,
			  d->driver_version / 1000, d->driver_version % 1000 / 10);

	d->gpus = calloc((size_t)count, sizeof *d->gpus);
	if (!d->gpus) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	for (int i = 0; i < count; i++) {
		if (describe_gpu(d, &d->gpus[i], i) < 0) {
			snprintf(err, errlen, "cannot describe GPU %d", i);
			return -1;
		}
		if (start_scheduler(d, &d->gpus[i], err, errlen) < 0)
			return -1;
		d->ngpus++;
		char mem[32];
		xgpu_format_size(d->gpus[i].total_mem, mem, sizeof mem);
		xlog_info("GPU %d: %s, %s, policy %s, tick %u ms, hypervisor schedule from %s", i,
			  d->gpus[i].name, mem, d->policy->name, d->o.tick_ms,
			  d->hyp_ops ? d->hyp_ops->name : "nowhere");
	}
	return xgpu_executors_init(d, err, errlen);
}

void xgpud_shutdown(struct xgpud *d, bool keep_executors)
{
	atomic_store(&d->stopping, true);
	if (d->executors) {
		if (keep_executors) {
			xgpu_state_save(d, xgpu_executor_pid);
			xgpu_executors_release_all(d);
		} else {
			xgpu_state_remove(d);
			xgpu_executors_stop_all(d, "xgpud stopped");
		}
	}
	xgpu_domain_free_all(d);
	for (int i = 0; i < d->ngpus; i++)
		stop_scheduler(&d->gpus[i]);
	free(d->gpus);
	d->gpus = NULL;
	if (d->executor_name && !strcmp(d->executor_name, "sim"))
		free((char *)d->o.sim_driver);
	xgpu_driver_unload(&d->drv);
	pthread_mutex_destroy(&d->domains_lock);
}

int xgpud_adopt(struct xgpud *d)
{
	int domains = xgpu_state_load(d, xgpu_domain_restore);
	if (domains > 0)
		xlog_info("restored %d domain%s of the previous xgpud", domains, domains == 1 ? "" : "s");
	return xgpu_executors_adopt(d);
}

/* ---- the up-calls the transports make (transport/host.h) -------------------- */

static struct xgpud_domain *host_join_domain(void *core, const char *name, uid_t uid, char *err,
					     size_t errlen)
{
	return xgpu_domain_get(core, name, uid, err, errlen);
}

static struct xgpud_domain *host_adopt_xen_domain(void *core, uint32_t domid, const char *name,
						  const struct xgpu_gpuspec *spec, char *err, size_t errlen)
{
	return xgpu_domain_get_xen(core, domid, name, spec, err, errlen);
}

static void host_drop_domain(void *core, struct xgpud_domain *dom)
{
	xgpu_domain_remove(core, dom);
}

static void host_reserve_domids_below(void *core, uint32_t first)
{
	struct xgpud *d = core;
	pthread_mutex_lock(&d->domains_lock);
	if (d->next_domid < first)
		d->next_domid = first;
	pthread_mutex_unlock(&d->domains_lock);
}

static int host_admit_channel(void *core, struct xgpud_domain *dom, struct xgpud_channel *ch,
			      struct xgpu_hello_ack *ack, int *status, char *err, size_t errlen)
{
	struct xgpud *d = core;
	if (atomic_load(&dom->nchannels) >= d->o.max_channels_per_domain) {
		snprintf(err, errlen, "domain %s already has %u channels", dom->name,
			 d->o.max_channels_per_domain);
		*status = cudaErrorDevicesUnavailable;
		return -1;
	}
	ch->id = atomic_fetch_add(&d->next_channel_id, 1) + 1;
	*ack = (struct xgpu_hello_ack){.magic = XGPU_PROTO_MAGIC,
				       .version = XGPU_PROTO_VERSION,
				       .driver_version = d->driver_version,
				       .domid = dom->domid,
				       .channel_id = ch->id,
				       .device_count = 1};
	return 0;
}

static int host_add_channel(void *core, struct xgpud_domain *dom, struct xgpud_handover *h, char *err,
			    size_t errlen)
{
	(void)core;
	return xgpu_domain_add_channel(dom, h, err, errlen);
}

static void host_close_channel(void *core, struct xgpud_domain *dom, uint32_t id, const char *why)
{
	(void)core;
	xgpu_executors_close_channel(dom, id, why);
}

static struct xgpud_channel *host_take_xen_channel(void *core, struct xgpud_domain *dom, uint32_t n)
{
	(void)core;
	return xgpu_executors_take_xen_channel(dom, n);
}

static void host_close_untaken(void *core, struct xgpud_domain *dom, const char *why)
{
	(void)core;
	xgpu_executors_close_untaken(dom, why);
}

static int host_hand_broker(void *core, struct xgpud_domain *dom, uint32_t chan_id, int fd)
{
	(void)core;
	return xgpu_executors_hand_broker(dom, chan_id, fd);
}

static void host_control_request(void *core, int conn, uid_t uid)
{
	xgpu_control_spawn(core, conn, uid);
}

static void host_set_share(void *core, struct xgpud_domain *dom, const uint32_t *credit, const double *sla,
			   const char *origin)
{
	(void)core;
	struct xgpu_sched_dom *sd = &dom->sd;
	uint32_t old_credit = sd->credit, new_credit = credit ? *credit : sd->credit;
	double old_sla = sd->sla, new_sla = sla ? *sla : sd->sla;
	xgpu_sched_set_params(dom->gpu->sched, sd, new_credit, new_sla);
	xlog_info("domain %s: credit %u -> %u, SLO %.3f -> %.3f (%s)", dom->name, old_credit, new_credit,
		  old_sla, new_sla, origin);
}

static void host_set_mem_limit(void *core, struct xgpud_domain *dom, bool to_default, uint64_t bytes,
			       const char *origin)
{
	struct xgpud *d = core;
	uint64_t total = dom->gpu->total_mem;
	if (to_default) {
		uint64_t lim = d->o.mem_limit && d->o.mem_limit < total ? d->o.mem_limit : total;
		dom->mem_default = true;
		xgpu_executors_set_mem_limit(dom, lim);
		xlog_info("domain %s: memory limit back to the default (%s)", dom->name, origin);
		return;
	}
	uint64_t lim = bytes < total ? bytes : total;
	char a[32], b[32];
	xgpu_format_size(atomic_load(&dom->mem_limit), a, sizeof a);
	xgpu_format_size(lim, b, sizeof b);
	dom->mem_default = false;
	xgpu_executors_set_mem_limit(dom, lim);
	xlog_info("domain %s: memory limit %s -> %s (%s)", dom->name, a, b, origin);
}

static void host_set_kernel_timeout(void *core, struct xgpud_domain *dom, uint32_t seconds,
				    const char *origin)
{
	(void)core;
	uint32_t old = atomic_exchange(&dom->kernel_timeout_s, seconds);
	xlog_info("domain %s: kernel timeout %u s -> %u s (0: none; %s)", dom->name, old, seconds, origin);
}

static int host_gpu_count(void *core)
{
	return ((struct xgpud *)core)->ngpus;
}

static const char *host_find_policy(void *core, const char *name)
{
	(void)core;
	const struct xgpu_policy_ops *ops = xgpu_policy_find(name);
	return ops ? ops->name : NULL;
}

static const char *host_policy_names(void *core)
{
	(void)core;
	return xgpu_policy_names();
}

static void host_set_policy(void *core, int gpu, const char *name, const char *origin)
{
	struct xgpud *d = core;
	const struct xgpu_policy_ops *want = xgpu_policy_find(name);
	if (gpu < 0 || gpu >= d->ngpus || !want)
		return;
	struct xgpu_sched *s = d->gpus[gpu].sched;
	const char *old = xgpu_sched_policy(s)->name;
	if (want != xgpu_sched_policy(s)) {
		xgpu_sched_set_policy(s, want, xgpu_now_ns());
		xlog_info("GPU %d: policy %s -> %s (%s)", gpu, old, want->name, origin);
	}
}

void xgpud_transport_host(struct xgpud *d, struct xgpu_transport_host *host)
{
	*host = (struct xgpu_transport_host){
	    .core = d,
	    .max_domains = d->o.max_domains,
	    .max_channels_per_domain = d->o.max_channels_per_domain,
	    .join_domain = host_join_domain,
	    .adopt_xen_domain = host_adopt_xen_domain,
	    .drop_domain = host_drop_domain,
	    .reserve_domids_below = host_reserve_domids_below,
	    .admit_channel = host_admit_channel,
	    .add_channel = host_add_channel,
	    .close_channel = host_close_channel,
	    .take_xen_channel = host_take_xen_channel,
	    .close_untaken = host_close_untaken,
	    .hand_broker = host_hand_broker,
	    .control_request = host_control_request,
	    .set_share = host_set_share,
	    .set_mem_limit = host_set_mem_limit,
	    .set_kernel_timeout = host_set_kernel_timeout,
	    .gpu_count = host_gpu_count,
	    .find_policy = host_find_policy,
	    .policy_names = host_policy_names,
	    .set_policy = host_set_policy,
	};
	if (xgpu_exec_socket_dir(d->socket_path, host->record_dir, sizeof host->record_dir) < 0)
		host->record_dir[0] = '\0';
}
