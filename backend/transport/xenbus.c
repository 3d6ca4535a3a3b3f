/* SPDX-License-Identifier: Apache-2.0 */
/* xenbus.c - the vgpu split device's backend state machines over xenstore
 * (xenvgpu.h), run by xgpud's main thread:
 *
 *  - devices: adopting <root>/<domid>/0 once `xl-gpu attach` wrote it
 *    (Initialising), binding the Xen domain to an xgpud domain with its
 *    gpus/credit/sla/mem-limit/task keys, InitWait, Connected when the
 *    frontend is; detach (backend Closing) closes every channel and
 *    answers Closed;
 *  - channels: the handshake of each channel/<n>, the transport opening it
 *    (transport_xen.c), and its end, whichever side starts it;
 *  - live keys: credit, sla and mem-limit of a device, the policy keys;
 *  - the sweep: a domain that died loses its channels, backend directory
 *    and xgpud domain.
 *
 * Every event re-reads the keys of what it names (a device, one channel, the
 * policy) and compares them with what was last seen, so a lost or
 * coalesced event costs nothing and our own writes (which fire the same
 * watch) change nothing. Writes skip values that are already there, so they
 * cannot feed back into endless events. Everything under a guest's own
 * directory is hostile: read as bounded decimals, channel numbers bounded
 * before anything is allocated or written for them.
 */
#include "xenbus.h"

#include "gpuspec.h"
#include "log.h"
#include "transport_xen.h"
#include "util.h"
#include "xenif.h"
#include "xenvgpu.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PATH_MAX_LEN 160
#define MAX_POLICY_GPUS 64

enum ch_state {
	CH_NONE = 0, /* nothing of ours for this n */
	CH_WAIT,     /* we answered InitWait */
	CH_OPEN,     /* handed to the poller */
	CH_CLOSING,  /* asked the poller to close it; its notice is due */
	CH_CLOSED,   /* we answered Closed; waiting for the guest to remove its dir */
};

struct xb_dev;

struct xb_chan {
	struct xb_dev *dev;
	uint32_t n;
	enum ch_state st;
	struct xgpu_xen_chan *tc;
	struct xgpu_xen_chan_params p;
	char why[160];     /* the violation that closed it ("" for an orderly close) */
	const char *end;   /* why we asked the poller to close it */
	bool remove_after; /* the guest removed its directory: remove ours once closed */
};

struct xb_dev {
	struct xgpu_xenbus *x;
	struct xb_dev *next;
	uint32_t domid;
	bool adopted, detaching, dying;
	struct xgpud_domain *dom;
	struct xgpu_gpuspec spec; /* the domain's settings; dom->spec points here */
	char *raw[4];             /* credit, sla, mem-limit, kernel-timeout as last seen */
	char refused[192];        /* why adoption failed, as last logged */
	char be[PATH_MAX_LEN], fe[PATH_MAX_LEN];
	bool fe_watched;
	bool rescan; /* an event asked for scan_fe: done once per round */
	struct xb_chan ch[XGPU_XEN_MAX_CHANNELS];
};

struct xgpu_xenbus {
	const struct xgpu_transport_host *host;
	struct xgpu_xs *xs;
	struct xgpu_xen_transport *t;
	struct xb_dev *devs;
	unsigned ndevs;
	bool closing;
	char *raw_policy;
	char *raw_gpu_policy[MAX_POLICY_GPUS];
	/* Policy names as the host spells them (compared as pointers). */
	const char *global_policy, *gpu_policy[MAX_POLICY_GPUS], *applied[MAX_POLICY_GPUS];
	struct xgpu_ratelimit rl; /* lines guests can provoke before a domain is known */
};

static const char *const live_keys[4] = {"credit", "sla", "mem-limit", "kernel-timeout"};

/* ---- xenstore helpers ---------------------------------------------------------- */

/* The value at path as a C string; NULL with errno ENOENT when absent, EINVAL
 * when it holds a NUL or is too long to be anything we read. */
static char *xread(struct xgpu_xenbus *x, const char *path)
{
	unsigned len = 0;
	char *s = x->xs->ops->read(x->xs, 0, path, &len);
	if (!s)
		return NULL;
	if (strlen(s) != len || len > 256) {
		free(s);
		errno = EINVAL;
		return NULL;
	}
	return s;
}

static bool same(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

/* Writes val unless path holds it already (our writes fire our own watch). */
static void xset(struct xgpu_xenbus *x, const char *path, const char *val)
{
	char *cur = xread(x, path);
	bool eq = cur && !strcmp(cur, val);
	free(cur);
	if (!eq && x->xs->ops->write(x->xs, 0, path, val, (unsigned)strlen(val)) < 0)
		xlog_warn("xenstore: cannot write %s = %s: %s", path, val, strerror(errno));
}

static void xrm(struct xgpu_xenbus *x, const char *path)
{
	if (x->xs->ops->rm(x->xs, 0, path) < 0 && errno != ENOENT)
		xlog_warn("xenstore: cannot remove %s: %s", path, strerror(errno));
}

static void chan_path(const struct xb_dev *dev, bool fe, uint32_t n, const char *key, char *buf, size_t len)
{
	snprintf(buf, len, "%s/channel/%u%s%s", fe ? dev->fe : dev->be, n, key ? "/" : "", key ? key : "");
}

/* A plain decimal domid 1..XGPU_XEN_DOMID_MAX at the start of s, ended by
 * '\0' or '/'; -1 if s is anything else. */
static long parse_domid(const char *s, const char **rest)
{
	long v = 0;
	const char *p = s;
	for (; *p >= '0' && *p <= '9' && p - s < 6; p++)
		v = v * 10 + (*p - '0');
	if (p == s || (*p && *p != '/') || v < 1 || v > (long)XGPU_XEN_DOMID_MAX)
		return -1;
	if (rest)
		*rest = p;
	return v;
}

/* ---- devices ------------------------------------------------------------------- */

static struct xb_dev *find_dev(struct xgpu_xenbus *x, uint32_t domid)
{
	for (struct xb_dev *dev = x->devs; dev; dev = dev->next)
		if (dev->domid == domid)
			return dev;
	return NULL;
}

static struct xb_dev *new_dev(struct xgpu_xenbus *x, uint32_t domid)
{
	if (x->ndevs >= x->host->max_domains)
		return NULL;
	struct xb_dev *dev = calloc(1, sizeof *dev);
	if (!dev)
		return NULL;
	dev->x = x;
	dev->domid = domid;
	snprintf(dev->be, sizeof dev->be, XGPU_XS_BACKEND_ROOT "/%u/0", (unsigned)domid);
	snprintf(dev->fe, sizeof dev->fe, "/local/domain/%u/device/vgpu/0", (unsigned)domid);
	for (uint32_t n = 0; n < XGPU_XEN_MAX_CHANNELS; n++) {
		dev->ch[n].dev = dev;
		dev->ch[n].n = n;
	}
	dev->next = x->devs;
	x->devs = dev;
	x->ndevs++;
	return dev;
}

static void free_dev(struct xgpu_xenbus *x, struct xb_dev *dev)
{
	struct xb_dev **pp = &x->devs;
	while (*pp && *pp != dev)
		pp = &(*pp)->next;
	if (*pp) {
		*pp = dev->next;
		x->ndevs--;
	}
	for (int i = 0; i < 4; i++)
		free(dev->raw[i]);
	free(dev);
}

static const char *dev_name(const struct xb_dev *dev, char *buf, size_t len)
{
	if (dev->dom)
		snprintf(buf, len, "%s (domid %u)", dev->dom->name, dev->domid);
	else
		snprintf(buf, len, "domid %u", dev->domid);
	return buf;
}

/* A line about what a guest did, against its domain's log budget. */
#define glog(dev, level, fmt, ...)                                                                           \
	do {                                                                                                 \
		char nm_[96];                                                                                \
		xgpu_log_limited((dev)->dom ? &(dev)->dom->log_rl : &(dev)->x->rl, level, "domain %s: " fmt, \
				 dev_name(dev, nm_, sizeof nm_), __VA_ARGS__);                               \
	} while (0)

static void watch_fe(struct xb_dev *dev, bool on)
{
	struct xgpu_xs *xs = dev->x->xs;
	if (on == dev->fe_watched)
		return;
	int r = on ? xs->ops->watch(xs, dev->fe, "fe") : xs->ops->unwatch(xs, dev->fe, "fe");
	if (r < 0)
		xlog_warn("xenstore: cannot %swatch %s: %s", on ? "" : "un", dev->fe, strerror(errno));
	else
		dev->fe_watched = on;
}

/* Parses one key's value as the gpu= spec item `item=value` into spec;
 * a value with separators of its own is refused, so it cannot smuggle in
 * other items. */
static int parse_item(const char *item, const char *value, struct xgpu_gpuspec *spec, char *err,
		      size_t errlen)
{
	if (strpbrk(value, ",=") || strlen(value) > 64) {
		snprintf(err, errlen, "not a single value");
		return -1;
	}
	char text[160];
	snprintf(text, sizeof text, "%s=%s", item, value);
	return xgpu_gpuspec_parse(text, 0, spec, err, errlen);
}

static const char *spec_item(const char *key)
{
	return !strcmp(key, "mem-limit") ? "mem" : key;
}

/* Reads credit, sla, mem-limit and kernel-timeout; on adoption (dom NULL) into dev->spec,
 * afterwards applied to the domain live. Unchanged values are skipped; bad
 * ones logged, naming key and value, and ignored. */
static void read_live_keys(struct xb_dev *dev)
{
	struct xgpu_xenbus *x = dev->x;
	struct xgpud_domain *dom = dev->dom;
	for (int i = 0; i < 4; i++) {
		char path[PATH_MAX_LEN + 16];
		snprintf(path, sizeof path, "%s/%s", dev->be, live_keys[i]);
		char *raw = xread(x, path);
		bool garbage = !raw && errno == EINVAL;
		if (same(raw, dev->raw[i]) && !garbage) {
			free(raw);
			continue;
		}
		free(dev->raw[i]);
		dev->raw[i] = raw;
		if (!raw && !garbage)
			continue; /* removed: the value stays */
		struct xgpu_gpuspec s;
		char err[192];
		/* mem-limit "0" is what xl-gpu writes for "no limit": the daemon's default. */
		if (!garbage && !strcmp(live_keys[i], "mem-limit") && !strcmp(raw, "0")) {
			dev->spec.has_mem = false;
			if (dom) {
				char origin[PATH_MAX_LEN + 32];
				snprintf(origin, sizeof origin, "xenstore %s = 0", path);
				x->host->set_mem_limit(x->host->core, dom, true, 0, origin);
			}
			continue;
		}
		if (garbage || parse_item(spec_item(live_keys[i]), raw, &s, err, sizeof err) < 0) {
			xlog_warn("%s = '%.64s': %s; ignored", path, raw ? raw : "(unreadable)",
				  garbage ? "unreadable" : err);
			continue;
		}
		if (!dom) {
			if (s.has_credit)
				dev->spec.has_credit = true, dev->spec.credit = s.credit;
			if (s.has_sla)
				dev->spec.has_sla = true, dev->spec.sla = s.sla;
			if (s.has_mem)
				dev->spec.has_mem = true, dev->spec.mem = s.mem;
			if (s.has_ktimeout)
				dev->spec.has_ktimeout = true, dev->spec.ktimeout = s.ktimeout;
			continue;
		}
		char origin[PATH_MAX_LEN + 32];
		snprintf(origin, sizeof origin, "xenstore %s", path);
		if (s.has_credit || s.has_sla)
			x->host->set_share(x->host->core, dom, s.has_credit ? &s.credit : NULL,
					   s.has_sla ? &s.sla : NULL, origin);
		else if (s.has_ktimeout)
			x->host->set_kernel_timeout(x->host->core, dom, s.ktimeout, origin);
		else if (s.has_mem)
			x->host->set_mem_limit(x->host->core, dom, false, s.mem, origin);
	}
}

/* gpus and task/<id> weights: read once, at adoption (they place the domain). */
static void read_place_keys(struct xb_dev *dev)
{
	struct xgpu_xenbus *x = dev->x;
	char path[PATH_MAX_LEN + 32], err[192];
	snprintf(path, sizeof path, "%s/gpus", dev->be);
	char *raw = xread(x, path);
	struct xgpu_gpuspec s;
	if (raw && parse_item("gpus", raw, &s, err, sizeof err) == 0) {
		dev->spec.has_gpus = true;
		dev->spec.gpus = s.gpus;
	} else if (raw || errno == EINVAL) {
		xlog_warn("%s = '%.64s': %s; ignored", path, raw ? raw : "(unreadable)",
			  raw ? err : "unreadable");
	}
	free(raw);
	snprintf(path, sizeof path, "%s/task", dev->be);
	unsigned num = 0;
	char **ids = x->xs->ops->directory(x->xs, 0, path, &num);
	dev->spec.ntasks = 0;
	for (unsigned i = 0; ids && i < num && dev->spec.ntasks < XGPU_GPUSPEC_TASKS; i++) {
		snprintf(path, sizeof path, "%s/task/%.16s", dev->be, ids[i]);
		raw = xread(x, path);
		char item[32];
		snprintf(item, sizeof item, "task.%.16s", ids[i]);
		if (raw && strlen(ids[i]) <= 10 && parse_item(item, raw, &s, err, sizeof err) == 0 &&
		    s.ntasks == 1) {
			dev->spec.tasks[dev->spec.ntasks].task = s.tasks[0].task;
			dev->spec.tasks[dev->spec.ntasks].weight = s.tasks[0].weight;
			dev->spec.ntasks++;
		} else {
			xlog_warn("%s = '%.64s': %s; ignored", path, raw ? raw : "(unreadable)",
				  raw ? err : "unreadable");
		}
		free(raw);
	}
	free(ids);
}

static void refuse_dev(struct xb_dev *dev, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void refuse_dev(struct xb_dev *dev, const char *fmt, ...)
{
	char msg[sizeof dev->refused];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (strcmp(msg, dev->refused))
		xlog_warn("domain %u: vgpu device not adopted: %s", dev->domid, msg);
	snprintf(dev->refused, sizeof dev->refused, "%s", msg);
	char path[PATH_MAX_LEN + 16];
	snprintf(path, sizeof path, "%s/error", dev->be);
	xset(dev->x, path, msg);
}

static int read_params(struct xb_chan *c, struct xgpu_xen_chan_params *p, char *err, size_t errlen);

/* The channels of dev's domain that a restarted xgpud's adopted executor
 * still serves, taken again where the guest's keys still say what the
 * executor's record says; the others' backend directories go, and their
 * executor closes them. Whether any was taken. */
static bool adopt_channels(struct xgpu_xenbus *x, struct xb_dev *dev)
{
	const struct xgpu_transport_host *host = x->host;
	bool any = false;
	for (uint32_t n = 0; n < XGPU_XEN_MAX_CHANNELS; n++) {
		struct xgpud_channel *ch = host->take_xen_channel(host->core, dev->dom, n);
		struct xb_chan *c = &dev->ch[n];
		char err[256];
		struct xgpu_xen_chan_params p;
		if (!ch)
			continue;
		if (c->st != CH_NONE) {
			snprintf(err, sizeof err, "it is in use");
		} else if (read_params(c, &p, err, sizeof err) == 0 &&
			   (c->tc = xgpu_xen_channel_adopt(x->t, dev->dom, ch, &p, c, err, sizeof err))) {
			c->p = p;
			c->why[0] = '\0';
			c->remove_after = false;
			c->st = CH_OPEN;
			any = true;
			continue;
		}
		glog(dev, XGPU_LOG_WARN, "vgpu channel %u of the adopted executor not taken again: %s", n,
		     err);
	}
	host->close_untaken(host->core, dev->dom, "not found again after xgpud restarted");
	if (any)
		for (uint32_t n = 0; n < XGPU_XEN_MAX_CHANNELS; n++)
			if (dev->ch[n].st != CH_OPEN) {
				char path[PATH_MAX_LEN + 32];
				chan_path(dev, false, n, NULL, path, sizeof path);
				xrm(x, path);
			}
	return any;
}

static void adopt(struct xgpu_xenbus *x, uint32_t domid)
{
	struct xb_dev *dev = find_dev(x, domid);
	if (!dev && !(dev = new_dev(x, domid))) {
		static struct xgpu_ratelimit rl = XGPU_RATELIMIT_INIT(10, 10000);
		xgpu_log_limited(&rl, XGPU_LOG_WARN, "domain %u: vgpu device not adopted: %u devices already",
				 domid, x->ndevs);
		return;
	}
	char path[PATH_MAX_LEN + 32];
	snprintf(path, sizeof path, "%s/frontend", dev->be);
	char *fe = xread(x, path);
	uint64_t feid = 0;
	snprintf(path, sizeof path, "%s/frontend-id", dev->be);
	int r = xgpu_xs_read_u64(x->xs, 0, path, XGPU_XEN_DOMID_MAX, &feid);
	bool fe_ok = fe && !strcmp(fe, dev->fe);
	if (!fe_ok || r < 0 || feid != domid) {
		refuse_dev(dev, "frontend '%.64s' / frontend-id %s: must be %s and %u", fe ? fe : "(none)",
			   r < 0 ? "(bad)" : "ok", dev->fe, domid);
		free(fe);
		return;
	}
	free(fe);
	int alive = x->xs->ops->domain_exists(x->xs, domid);
	if (alive != 1) {
		refuse_dev(dev, "domain %u does not exist", domid);
		return;
	}
	struct xgpu_gpuspec fresh = {0};
	if (!dev->dom) {
		dev->spec = fresh;
		for (int i = 0; i < 4; i++) {
			free(dev->raw[i]);
			dev->raw[i] = NULL;
		}
		read_place_keys(dev);
	}
	read_live_keys(dev); /* into spec before the domain exists, live after */
	if (!dev->dom) {
		char npath[64];
		snprintf(npath, sizeof npath, "/local/domain/%u/name", domid);
		char *name = xread(x, npath);
		char err[192];
		dev->dom = x->host->adopt_xen_domain(x->host->core, domid, name, &dev->spec, err, sizeof err);
		free(name);
		if (!dev->dom) {
			refuse_dev(dev, "%s", err);
			return;
		}
	}
	dev->adopted = true;
	dev->refused[0] = '\0';
	snprintf(path, sizeof path, "%s/error", dev->be);
	xrm(x, path);
	/* Channels of an earlier attach (or an earlier xgpud) are gone, but
	 * for those an adopted executor still serves (xgpud restarted). */
	if (!adopt_channels(x, dev)) {
		snprintf(path, sizeof path, "%s/channel", dev->be);
		xrm(x, path);
	}
	snprintf(path, sizeof path, "%s/state", dev->be);
	xset(x, path, "2");
	xlog_info("domain %s (domid %u): vgpu device adopted on GPU %d", dev->dom->name, domid,
		  dev->dom->gpu->index);
	watch_fe(dev, true);
}

/* Closes every channel; once all are closed, completes the detach (answer
 * Closed) or the sweep (drop everything). Called again as notices arrive. */
static void wind_down(struct xgpu_xenbus *x, struct xb_dev *dev)
{
	bool busy = false;
	for (uint32_t n = 0; n < XGPU_XEN_MAX_CHANNELS; n++) {
		struct xb_chan *c = &dev->ch[n];
		if (c->st == CH_OPEN) {
			c->end = dev->dying ? "domain gone" : "device detached";
			xgpu_xen_channel_kill(c->tc, c->end);
			c->st = CH_CLOSING;
		}
		if (c->st == CH_CLOSING)
			busy = true;
		else
			c->st = CH_NONE;
	}
	if (busy || x->closing)
		return;
	char path[PATH_MAX_LEN + 16];
	watch_fe(dev, false);
	if (dev->dying) {
		snprintf(path, sizeof path, XGPU_XS_BACKEND_ROOT "/%u", dev->domid);
		xrm(x, path);
		if (dev->dom)
			x->host->drop_domain(x->host->core, dev->dom);
		xlog_info("domain %u: gone; its vgpu device and state are swept", dev->domid);
		free_dev(x, dev);
		return;
	}
	snprintf(path, sizeof path, "%s/channel", dev->be);
	xrm(x, path);
	snprintf(path, sizeof path, "%s/state", dev->be);
	char *st = xread(x, path);
	if (st) /* xl-gpu detach may have removed the whole directory already */
		xset(x, path, "6");
	free(st);
	dev->adopted = false;
	dev->detaching = false;
	xlog_info("domain %s (domid %u): vgpu device detached", dev->dom ? dev->dom->name : "?", dev->domid);
}

static void scan_dev(struct xgpu_xenbus *x, uint32_t domid)
{
	struct xb_dev *dev = find_dev(x, domid);
	if (dev && (dev->dying || dev->detaching))
		return;
	char path[PATH_MAX_LEN + 16];
	snprintf(path, sizeof path, XGPU_XS_BACKEND_ROOT "/%u/0/state", domid);
	uint64_t st = 0;
	int r = xgpu_xs_read_u64(x->xs, 0, path, XGPU_XB_CLOSED, &st);
	if (!dev || !dev->adopted) {
		if (r == 0 && st >= XGPU_XB_INITIALISING && st <= XGPU_XB_CONNECTED)
			adopt(x, domid);
		return;
	}
	if (r < 0 || st == XGPU_XB_CLOSING || st == XGPU_XB_CLOSED || st == XGPU_XB_UNKNOWN) {
		xlog_info("domain %s (domid %u): vgpu device %s; closing its channels", dev->dom->name, domid,
			  r < 0 ? "removed" : "detached");
		dev->detaching = true;
		wind_down(x, dev);
		return;
	}
	read_live_keys(dev);
}

/* ---- channels -------------------------------------------------------------------- */

static void sweep(struct xgpu_xenbus *x);

static void chan_set_state(struct xb_dev *dev, uint32_t n, int st)
{
	char path[PATH_MAX_LEN + 32], val[4];
	chan_path(dev, false, n, "state", path, sizeof path);
	snprintf(val, sizeof val, "%d", st);
	xset(dev->x, path, val);
}

/* Refuses (or, closed already, ends) channel n with error why. */
static void chan_refuse(struct xb_chan *c, const char *why)
{
	struct xb_dev *dev = c->dev;
	char path[PATH_MAX_LEN + 32];
	glog(dev, XGPU_LOG_WARN, "vgpu channel %u refused: %s", c->n, why);
	chan_path(dev, false, c->n, "error", path, sizeof path);
	xset(dev->x, path, why);
	chan_set_state(dev, c->n, XGPU_XB_CLOSED);
	c->st = CH_CLOSED;
}

/* Closes an open channel for a violation: the poller closes it, the notice
 * writes the error. */
static void chan_violation(struct xb_chan *c, const char *why)
{
	snprintf(c->why, sizeof c->why, "%s", why);
	c->end = "violation";
	glog(c->dev, XGPU_LOG_WARN, "vgpu channel %u: %s; closing it", c->n, why);
	xgpu_xen_channel_kill(c->tc, why);
	c->st = CH_CLOSING;
}

static unsigned live_channels(const struct xb_dev *dev)
{
	unsigned k = 0;
	for (uint32_t n = 0; n < XGPU_XEN_MAX_CHANNELS; n++)
		k += dev->ch[n].st != CH_NONE;
	return k;
}

/* Reads channel n's key as a decimal in [lo, hi]; -1 with a message naming
 * key and value otherwise. */
static int chan_key(struct xb_chan *c, const char *key, uint64_t lo, uint64_t hi, uint32_t *out, char *err,
		    size_t errlen)
{
	char path[PATH_MAX_LEN + 32];
	chan_path(c->dev, true, c->n, key, path, sizeof path);
	uint64_t v;
	int r = xgpu_xs_read_u64(c->dev->x->xs, 0, path, UINT64_MAX, &v);
	if (r < 0 || v < lo || v > hi) {
		/* errno is the read's only when it failed. */
		bool missing = r < 0 && errno == ENOENT;
		char *raw = missing ? NULL : xread(c->dev->x, path);
		/* The guest's bytes go into a log line and an error key:
		 * printable ones only, so it cannot forge lines. */
		char shown[25] = "";
		for (size_t i = 0; raw && raw[i] && i < sizeof shown - 1; i++)
			shown[i] = raw[i] >= 0x20 && raw[i] < 0x7f ? raw[i] : '?';
		if (raw)
			snprintf(err, errlen, "%s = '%s': need %llu to %llu", key, shown,
				 (unsigned long long)lo, (unsigned long long)hi);
		else
			snprintf(err, errlen, "%s: %s", key, missing ? "missing" : "not a number in range");
		free(raw);
		return -1;
	}
	*out = (uint32_t)v;
	return 0;
}

static int read_params(struct xb_chan *c, struct xgpu_xen_chan_params *p, char *err, size_t errlen)
{
	uint32_t proto;
	*p = (struct xgpu_xen_chan_params){.domid = c->dev->domid, .n = c->n};
	if (chan_key(c, "protocol", 0, UINT32_MAX, &proto, err, errlen) < 0)
		return -1;
	if (proto != XGPU_PROTO_VERSION) {
		snprintf(err, errlen,
			 "protocol version mismatch: the guest speaks xgpu protocol %u, xgpud speaks %u",
			 proto, XGPU_PROTO_VERSION);
		return -1;
	}
	if (chan_key(c, "ring-ref", 0, UINT32_MAX, &p->ring_ref, err, errlen) < 0 ||
	    chan_key(c, "ring-pages", 1, XGPU_XEN_MAX_REGION_PAGES, &p->ring_pages, err, errlen) < 0 ||
	    chan_key(c, "event-channel", 1, XGPU_XEN_MAX_EVTCHN, &p->port, err, errlen) < 0 ||
	    chan_key(c, "task", 1, UINT32_MAX, &p->task, err, errlen) < 0)
		return -1;
	return 0;
}

static void connect_chan(struct xgpu_xenbus *x, struct xb_chan *c)
{
	struct xb_dev *dev = c->dev;
	char err[256];
	if (read_params(c, &c->p, err, sizeof err) < 0) {
		chan_refuse(c, err);
		return;
	}
	c->why[0] = '\0';
	c->remove_after = false;
	c->tc = xgpu_xen_channel_open(x->t, dev->dom, &c->p, c, err, sizeof err);
	if (!c->tc) {
		chan_refuse(c, err);
		return;
	}
	c->st = CH_OPEN;
	chan_set_state(dev, c->n, XGPU_XB_CONNECTED);
}

/* Whether the guest's ring-ref, ring-pages and event-channel still say what
 * they said at Initialised. */
static bool params_unchanged(struct xb_chan *c, char *err, size_t errlen)
{
	struct xgpu_xen_chan_params now = {0};
	char e[128];
	if (chan_key(c, "ring-ref", 0, UINT32_MAX, &now.ring_ref, e, sizeof e) < 0 ||
	    chan_key(c, "ring-pages", 1, XGPU_XEN_MAX_REGION_PAGES, &now.ring_pages, e, sizeof e) < 0 ||
	    chan_key(c, "event-channel", 1, XGPU_XEN_MAX_EVTCHN, &now.port, e, sizeof e) < 0) {
		snprintf(err, errlen, "changed after Initialised: %s", e);
		return false;
	}
	const char *key = now.ring_ref != c->p.ring_ref       ? "ring-ref"
			  : now.ring_pages != c->p.ring_pages ? "ring-pages"
			  : now.port != c->p.port             ? "event-channel"
							      : NULL;
	if (key)
		snprintf(err, errlen, "%s changed after Initialised", key);
	return !key;
}

static void scan_chan(struct xgpu_xenbus *x, struct xb_dev *dev, uint32_t n)
{
	if (!dev->adopted || dev->detaching || dev->dying || n >= XGPU_XEN_MAX_CHANNELS)
		return;
	struct xb_chan *c = &dev->ch[n];
	char path[PATH_MAX_LEN + 32], err[256];
	chan_path(dev, true, n, "state", path, sizeof path);
	uint64_t fs = 0;
	int r = xgpu_xs_read_u64(x->xs, 0, path, UINT32_MAX, &fs);
	if (r < 0 && errno == ENOENT) {
		chan_path(dev, true, n, NULL, path, sizeof path);
		unsigned vlen = 0;
		char *v = x->xs->ops->read(x->xs, 0, path, &vlen);
		bool gone = !v && errno == ENOENT;
		free(v);
		if (!gone)
			return; /* being created: the state comes next */
		if (c->st == CH_OPEN && x->xs->ops->domain_exists(x->xs, dev->domid) == 0) {
			/* The domain is going: its directory goes first. */
			sweep(x);
		} else if (c->st == CH_OPEN) {
			c->remove_after = true;
			chan_violation(c, "guest removed the channel while it was open");
			c->why[0] = '\0';
		} else if (c->st == CH_CLOSING) {
			c->remove_after = true;
		} else if (c->st != CH_NONE) {
			chan_path(dev, false, n, NULL, path, sizeof path);
			xrm(x, path);
			c->st = CH_NONE;
		}
		return;
	}
	if (r < 0) {
		/* Garbage in the state key. */
		if (c->st == CH_OPEN)
			chan_violation(c, "state is not a number");
		else if (c->st == CH_NONE || c->st == CH_WAIT)
			chan_refuse(c, "state is not a number");
		return;
	}
	switch (c->st) {
	case CH_NONE:
		if (fs == XGPU_XB_INITIALISING) {
			if (live_channels(dev) >= x->host->max_channels_per_domain) {
				snprintf(err, sizeof err, "the domain already has %u channels",
					 x->host->max_channels_per_domain);
				chan_refuse(c, err);
				return;
			}
			chan_path(dev, false, n, "error", path, sizeof path);
			xrm(x, path);
			c->st = CH_WAIT;
			chan_set_state(dev, n, XGPU_XB_INITWAIT);
		} else if (fs != XGPU_XB_CLOSING && fs != XGPU_XB_CLOSED && fs != XGPU_XB_UNKNOWN) {
			snprintf(err, sizeof err, "state %llu before the backend said InitWait",
				 (unsigned long long)fs);
			chan_refuse(c, err);
		}
		break;
	case CH_WAIT:
		if (fs == XGPU_XB_INITIALISING)
			break;
		if (fs == XGPU_XB_INITIALISED) {
			connect_chan(x, c);
		} else if (fs == XGPU_XB_CLOSING || fs == XGPU_XB_CLOSED) {
			chan_set_state(dev, n, XGPU_XB_CLOSED);
			c->st = CH_CLOSED;
		} else {
			snprintf(err, sizeof err, "state %llu while the backend waits for Initialised",
				 (unsigned long long)fs);
			chan_refuse(c, err);
		}
		break;
	case CH_OPEN:
		if (fs == XGPU_XB_INITIALISED || fs == XGPU_XB_CONNECTED) {
			if (!params_unchanged(c, err, sizeof err))
				chan_violation(c, err);
		} else if (fs == XGPU_XB_CLOSING || fs == XGPU_XB_CLOSED) {
			/* Closed: a guest that gave up waiting for us; as orderly. */
			c->end = "guest closing";
			xgpu_xen_channel_kill(c->tc, c->end);
			c->st = CH_CLOSING;
		} else {
			snprintf(err, sizeof err, "state %llu on a connected channel",
				 (unsigned long long)fs);
			chan_violation(c, err);
		}
		break;
	case CH_CLOSING:
	case CH_CLOSED:
		break; /* until the notice, or until the guest removes its directory */
	}
}

/* The frontend device state and every channel the guest lists (bounded). */
static void scan_fe(struct xgpu_xenbus *x, struct xb_dev *dev)
{
	if (!dev->adopted || dev->detaching || dev->dying)
		return;
	char path[PATH_MAX_LEN + 32];
	snprintf(path, sizeof path, "%s/state", dev->fe);
	uint64_t st;
	if (xgpu_xs_read_u64(x->xs, 0, path, UINT32_MAX, &st) == 0 && st == XGPU_XB_CONNECTED) {
		/* InitWait -> Connected only: never over the toolstack's Closing
		 * (a guest writing in a loop would otherwise undo a detach whose
		 * event is still queued), hence the transaction. */
		snprintf(path, sizeof path, "%s/state", dev->be);
		for (int attempt = 0; attempt < 8; attempt++) {
			xgpu_xs_tx tx = x->xs->ops->transaction_start(x->xs);
			if (!tx)
				break;
			uint64_t be = 0;
			bool wr = xgpu_xs_read_u64(x->xs, tx, path, XGPU_XB_CLOSED, &be) == 0 &&
				  be == XGPU_XB_INITWAIT;
			if (wr && x->xs->ops->write(x->xs, tx, path, "4", 1) < 0) {
				xlog_warn("xenstore: cannot write %s = 4: %s", path, strerror(errno));
				x->xs->ops->transaction_end(x->xs, tx, true);
				break;
			}
			if (x->xs->ops->transaction_end(x->xs, tx, !wr) == 0 || errno != EAGAIN)
				break;
		}
	}
	bool listed[XGPU_XEN_MAX_CHANNELS] = {false};
	snprintf(path, sizeof path, "%s/channel", dev->fe);
	unsigned num = 0;
	char **names = x->xs->ops->directory(x->xs, 0, path, &num);
	for (unsigned i = 0; names && i < num; i++) {
		long n;
		if (xgpu_parse_long(names[i], 0, XGPU_XEN_MAX_CHANNELS - 1, &n) == 0)
			listed[n] = true;
		else
			glog(dev, XGPU_LOG_WARN, "ignoring channel '%.16s': not a channel number below %u",
			     names[i], XGPU_XEN_MAX_CHANNELS);
	}
	free(names);
	for (uint32_t n = 0; n < XGPU_XEN_MAX_CHANNELS; n++)
		if (listed[n] || dev->ch[n].st != CH_NONE)
			scan_chan(x, dev, n);
}

/* A channel the poller closed. */
static void channel_closed(struct xgpu_xenbus *x, struct xgpu_xen_chan *tc, struct xb_chan *c,
			   enum xgpu_xen_end why)
{
	struct xb_dev *dev = c->dev;
	xgpu_xen_chan_free(tc);
	c->tc = NULL;
	char path[PATH_MAX_LEN + 32];
	const char *end = why == XGPU_XEN_END_FE_DEAD            ? "the guest process is gone"
			  : why == XGPU_XEN_END_KILLED && c->end ? c->end
			  : x->closing                           ? "xgpud stopped"
								 : "closed by xgpud: broken ring";
	c->end = NULL;
	glog(dev, XGPU_LOG_INFO, "vgpu channel %u closed: %s", c->n, end);
	if (why == XGPU_XEN_END_FE_DEAD || c->remove_after || dev->dying || dev->detaching) {
		if (why == XGPU_XEN_END_FE_DEAD) {
			chan_path(dev, true, c->n, NULL, path, sizeof path);
			xrm(x, path);
		}
		chan_path(dev, false, c->n, NULL, path, sizeof path);
		xrm(x, path);
		c->st = CH_NONE;
	} else {
		if (why == XGPU_XEN_END_BROKEN && !c->why[0])
			snprintf(c->why, sizeof c->why, "%s", end);
		if (c->why[0]) {
			chan_path(dev, false, c->n, "error", path, sizeof path);
			xset(x, path, c->why);
		}
		chan_set_state(dev, c->n, XGPU_XB_CLOSED);
		c->st = CH_CLOSED;
	}
	if (dev->dying || dev->detaching)
		wind_down(x, dev);
	else if (!x->closing)
		scan_chan(x, dev, c->n); /* the guest may have moved on meanwhile */
}

/* ---- policy ----------------------------------------------------------------------- */

static const char *policy_key(struct xgpu_xenbus *x, const char *path, char **raw_slot, const char *cur,
			      bool *changed)
{
	const struct xgpu_transport_host *host = x->host;
	char *raw = xread(x, path);
	bool garbage = !raw && errno == EINVAL;
	*changed = !same(raw, *raw_slot) || garbage;
	if (!*changed) {
		free(raw);
		return cur;
	}
	free(*raw_slot);
	*raw_slot = raw;
	if (!raw && !garbage)
		return NULL;
	const char *name = raw ? host->find_policy(host->core, raw) : NULL;
	if (!name) {
		xlog_warn("%s = '%.32s': unknown policy (known: %s); ignored", path,
			  raw ? raw : "(unreadable)", host->policy_names(host->core));
		return cur;
	}
	return name;
}

static void scan_policy(struct xgpu_xenbus *x)
{
	const struct xgpu_transport_host *host = x->host;
	bool changed;
	x->global_policy = policy_key(x, XGPU_XS_POLICY, &x->raw_policy, x->global_policy, &changed);
	int ngpus = host->gpu_count(host->core);
	for (int g = 0; g < ngpus && g < MAX_POLICY_GPUS; g++) {
		char path[PATH_MAX_LEN];
		snprintf(path, sizeof path, XGPU_XS_BACKEND_ROOT "/gpu/%d/policy", g);
		x->gpu_policy[g] = policy_key(x, path, &x->raw_gpu_policy[g], x->gpu_policy[g], &changed);
		const char *want = x->gpu_policy[g] ? x->gpu_policy[g] : x->global_policy;
		if (!want || want == x->applied[g])
			continue;
		x->applied[g] = want;
		char origin[PATH_MAX_LEN + 16];
		snprintf(origin, sizeof origin, "xenstore %s", x->gpu_policy[g] ? path : XGPU_XS_POLICY);
		host->set_policy(host->core, g, want, origin);
	}
}

/* ---- the sweep ---------------------------------------------------------------------- */

static void sweep(struct xgpu_xenbus *x)
{
	for (struct xb_dev *dev = x->devs, *next; dev; dev = next) {
		next = dev->next;
		if (dev->dying || x->xs->ops->domain_exists(x->xs, dev->domid) != 0)
			continue;
		dev->dying = true;
		wind_down(x, dev); /* may free dev */
	}
	/* Directories of dead domains we never adopted. */
	unsigned num = 0;
	char **names = x->xs->ops->directory(x->xs, 0, XGPU_XS_BACKEND_ROOT, &num);
	for (unsigned i = 0; names && i < num; i++) {
		long domid = parse_domid(names[i], NULL);
		if (domid < 0 || find_dev(x, (uint32_t)domid) ||
		    x->xs->ops->domain_exists(x->xs, (uint32_t)domid) != 0)
			continue;
		char path[PATH_MAX_LEN];
		snprintf(path, sizeof path, XGPU_XS_BACKEND_ROOT "/%ld", domid);
		xrm(x, path);
		xlog_info("domain %ld: gone; removed its stale %s", domid, path);
	}
	free(names);
}

/* ---- events --------------------------------------------------------------------------- */

static void scan_all(struct xgpu_xenbus *x)
{
	unsigned num = 0;
	char **names = x->xs->ops->directory(x->xs, 0, XGPU_XS_BACKEND_ROOT, &num);
	for (unsigned i = 0; names && i < num; i++) {
		long domid = parse_domid(names[i], NULL);
		if (domid > 0)
			scan_dev(x, (uint32_t)domid);
	}
	free(names);
	scan_policy(x);
}

static void backend_event(struct xgpu_xenbus *x, const char *path)
{
	static const char root[] = XGPU_XS_BACKEND_ROOT;
	if (strncmp(path, root, sizeof root - 1))
		return;
	const char *rest = path + sizeof root - 1;
	if (!*rest) {
		scan_all(x);
		return;
	}
	if (*rest != '/')
		return;
	rest++;
	if (!strncmp(rest, "policy", 6) || !strncmp(rest, "gpu", 3)) {
		scan_policy(x);
		return;
	}
	long domid = parse_domid(rest, NULL);
	if (domid > 0)
		scan_dev(x, (uint32_t)domid);
}

static void frontend_event(struct xgpu_xenbus *x, const char *path)
{
	const char *rest;
	if (strncmp(path, "/local/domain/", 14))
		return;
	long domid = parse_domid(path + 14, &rest);
	struct xb_dev *dev = domid > 0 ? find_dev(x, (uint32_t)domid) : NULL;
	if (!dev || strncmp(path, dev->fe, strlen(dev->fe)))
		return;
	rest = path + strlen(dev->fe);
	long n;
	char num[16];
	if (!strncmp(rest, "/channel/", 9)) {
		size_t k = strcspn(rest + 9, "/");
		if (k > 0 && k < sizeof num) {
			memcpy(num, rest + 9, k);
			num[k] = '\0';
			if (xgpu_parse_long(num, 0, XGPU_XEN_MAX_CHANNELS - 1, &n) == 0) {
				scan_chan(x, dev, (uint32_t)n);
				return;
			}
		}
		if (k > 0) {
			glog(dev, XGPU_LOG_WARN, "ignoring channel '%.*s': not a channel number below %u",
			     (int)(k < 16 ? k : 16), rest + 9, XGPU_XEN_MAX_CHANNELS);
			return;
		}
	}
	/* A whole-device scan costs a read per channel: one per round, however
	 * many writes of the guest asked for it. */
	dev->rescan = true;
}

/* Events handled per call: a flood of them waits for the next round of the
 * main loop, behind signals and local clients. */
#define EVENT_BUDGET 512

void xgpu_xenbus_process(struct xgpu_xenbus *x)
{
	enum xgpu_xen_end why;
	void *cookie;
	struct xgpu_xen_chan *tc;
	/* Executors' grant requests (real Xen) first: one may wait on them. */
	xgpu_xen_transport_serve(x->t);
	while ((tc = xgpu_xen_next_closed(x->t, &cookie, &why)))
		channel_closed(x, tc, cookie, why);
	for (int k = 0; k < EVENT_BUDGET; k++) {
		char *path = NULL, *token = NULL;
		if (x->xs->ops->read_watch(x->xs, &path, &token) < 0)
			break;
		if (!strcmp(token, "be"))
			backend_event(x, path);
		else if (!strcmp(token, "fe"))
			frontend_event(x, path);
		else if (!strcmp(token, "rel"))
			sweep(x);
		free(path);
		free(token);
	}
	/* From the head each time: a scan may sweep (free) other devices. */
	for (;;) {
		struct xb_dev *dev = x->devs;
		while (dev && !dev->rescan)
			dev = dev->next;
		if (!dev)
			break;
		dev->rescan = false;
		scan_fe(x, dev);
	}
}

int xgpu_xenbus_fds(const struct xgpu_xenbus *x, int fds[2])
{
	fds[0] = x->xs->ops->watch_fd(x->xs);
	fds[1] = xgpu_xen_transport_fd(x->t);
	return 2;
}

struct xgpu_xenbus *xgpu_xenbus_open(const struct xgpu_transport_host *host, char *err, size_t errlen)
{
	struct xgpu_xenbus *x = calloc(1, sizeof *x);
	if (!x) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	x->host = host;
	xgpu_ratelimit_init(&x->rl, 50, 10000);
	char why[256];
	/* Each channel opens its own event-channel and grant-table handles;
	 * find out now, not at the first guest, if they cannot be had. */
	struct xgpu_evtchn *e = xgpu_evtchn_open(why, sizeof why);
	struct xgpu_gnttab *g = e ? xgpu_gnttab_open(why, sizeof why) : NULL;
	if (e)
		e->ops->close(e);
	if (g)
		g->ops->close(g);
	if (!e || !g || !(x->xs = xgpu_xs_open(why, sizeof why))) {
		snprintf(err, errlen, "Xen transport: %s", why);
		goto fail;
	}
	if (!(x->t = xgpu_xen_transport_new(host, why, sizeof why))) {
		snprintf(err, errlen, "Xen transport: %s", why);
		goto fail;
	}
	if (x->xs->ops->watch(x->xs, XGPU_XS_BACKEND_ROOT, "be") < 0 ||
	    x->xs->ops->watch(x->xs, "@releaseDomain", "rel") < 0) {
		snprintf(err, errlen, "Xen transport: cannot watch %s and @releaseDomain: %s",
			 XGPU_XS_BACKEND_ROOT, strerror(errno));
		goto fail;
	}
	/* Local domains' ids stay clear of Xen domids in the statistics. */
	host->reserve_domids_below(host->core, XGPU_XEN_DOMID_MAX);
	return x;
fail:
	if (x->xs)
		x->xs->ops->close(x->xs);
	xgpu_xen_transport_free(x->t);
	pthread_mutex_destroy(&x->rl.lock);
	free(x);
	return NULL;
}

void xgpu_xenbus_close(struct xgpu_xenbus *x)
{
	if (!x)
		return;
	x->closing = true;
	/* xgpud_shutdown freed the domains. */
	for (struct xb_dev *dev = x->devs; dev; dev = dev->next)
		dev->dom = NULL;
	enum xgpu_xen_end why;
	void *cookie;
	struct xgpu_xen_chan *tc;
	while ((tc = xgpu_xen_next_closed(x->t, &cookie, &why)))
		channel_closed(x, tc, cookie, why);
	while (x->devs) {
		struct xb_dev *dev = x->devs;
		for (uint32_t n = 0; n < XGPU_XEN_MAX_CHANNELS; n++)
			if (dev->ch[n].tc) /* never handed over, or its poller is gone */
				xgpu_xen_chan_free(dev->ch[n].tc);
		free_dev(x, dev);
	}
	x->xs->ops->close(x->xs);
	xgpu_xen_transport_free(x->t);
	free(x->raw_policy);
	for (int g = 0; g < MAX_POLICY_GPUS; g++)
		free(x->raw_gpu_policy[g]);
	pthread_mutex_destroy(&x->rl.lock);
	free(x);
}
