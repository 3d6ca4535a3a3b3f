/* SPDX-License-Identifier: Apache-2.0 */
/* xen.c - xl-gpu's Xen mode: reads a domain's `gpu = [ "..." ]` line with
 * libxlutil, writes the vgpu device's xenstore directories (BRIEF section 4,
 * common/xenvgpu.h) in one transaction, tears them down with xgpud's
 * Closing/Closed handshake, wraps `xl create`, and sets credit, SLA and
 * policy as xenstore keys that xgpud watches. xenstore is reached only
 * through common/xenif.h, so the same code runs on real Xen and on
 * xgpu-xenstub. */
#include "xen.h"
#include "gpuspec.h"
#include "policy.h"
#include "remote.h"
#include "scheduler.h"
#include "util.h"
#include "xenif.h"
#include "xenrole.h"
#include "xenvgpu.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <libxlutil.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* Transactions that lose to another writer (EAGAIN) are retried this often. */
#define XS_TX_TRIES 16
#define CFG_MAX_BYTES (4u << 20)
#define DETACH_TIMEOUT_DEFAULT 10
#define DETACH_TIMEOUT_MAX 3600
#define PATH_LEN 256

__attribute__((format(printf, 2, 3))) static int err(const char *cmd, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "xl-gpu: %s: ", cmd);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	return 1;
}

bool xlgpu_xen_selected(enum xlgpu_mode mode)
{
	if (mode != XLGPU_MODE_AUTO)
		return mode == XLGPU_MODE_XEN;
	const char *stub = getenv("XGPU_XEN_STUB");
	if (stub && *stub)
		return true;
	return xgpu_xen_role("", NULL, 0) == XGPU_XEN_DOM0;
}

/* ---- paths and values ----------------------------------------------------- */
struct dev_paths {
	char be_dom[PATH_LEN]; /* .../backend/vgpu/<domid> */
	char be[PATH_LEN];     /* .../backend/vgpu/<domid>/0 */
	char fe_dir[PATH_LEN]; /* /local/domain/<domid>/device/vgpu */
	char fe[PATH_LEN];     /* /local/domain/<domid>/device/vgpu/0 */
};

static void dev_paths(uint32_t domid, struct dev_paths *p)
{
	snprintf(p->be_dom, sizeof p->be_dom, XGPU_XS_BACKEND_ROOT "/%u", domid);
	snprintf(p->be, sizeof p->be, XGPU_XS_BACKEND_ROOT "/%u/0", domid);
	snprintf(p->fe_dir, sizeof p->fe_dir, "/local/domain/%u/device/vgpu", domid);
	snprintf(p->fe, sizeof p->fe, "/local/domain/%u/device/vgpu/0", domid);
}

/* One field of gpuspec's canonical form ("gpus=0:2-3" -> "0:2-3"), so the
 * keys say exactly what a config entry would. */
static void spec_field(const struct xgpu_gpuspec *field_only, const char *key, char *buf, size_t len)
{
	char t[512];
	xgpu_gpuspec_format(field_only, t, sizeof t);
	size_t kl = strlen(key);
	xgpu_strlcpy(buf, strncmp(t, key, kl) == 0 && t[kl] == '=' ? t + kl + 1 : t, len);
}

static void fmt_gpus(uint64_t mask, char *buf, size_t len)
{
	struct xgpu_gpuspec t;
	memset(&t, 0, sizeof t);
	t.has_gpus = true;
	t.gpus = mask;
	spec_field(&t, "gpus", buf, len);
}

static void fmt_sla(double sla, char *buf, size_t len)
{
	struct xgpu_gpuspec t;
	memset(&t, 0, sizeof t);
	t.has_sla = true;
	t.sla = sla;
	spec_field(&t, "sla", buf, len);
}

/* A domid as xl takes one: decimal, a guest's (1..DOMID_MAX) unless
 * allow_dom0. */
static int parse_domid(const char *cmd, const char *s, bool allow_dom0, uint32_t *out)
{
	long v;
	if (xgpu_parse_long(s, 0, XGPU_XEN_DOMID_MAX, &v) < 0)
		return err(cmd, "domain id '%s': need a number from 1 to %u", s, XGPU_XEN_DOMID_MAX);
	if (v == 0 && !allow_dom0)
		return err(cmd, "domain 0 is dom0, where xgpud runs; a GPU is attached to a guest domain");
	*out = (uint32_t)v;
	return 0;
}

/* ---- xenstore helpers ------------------------------------------------------ */
static struct xgpu_xs *xs_connect(const char *cmd)
{
	char e[256] = "";
	struct xgpu_xs *xs = xgpu_xs_open(e, sizeof e);
	if (!xs)
		err(cmd, "cannot open xenstore: %s", e[0] ? e : strerror(errno));
	return xs;
}

static bool xs_exists(struct xgpu_xs *xs, xgpu_xs_tx tx, const char *path)
{
	unsigned len;
	char *v = xs->ops->read(xs, tx, path, &len);
	free(v);
	return v != NULL;
}

/* Writes path = value and gives it perms; errno and a message naming the
 * path on failure. */
static int xs_put(struct xgpu_xs *xs, xgpu_xs_tx tx, const char *path, const char *value,
		  const struct xgpu_xs_perm *perms, unsigned nperms, struct xgpu_errbuf *e)
{
	if (xs->ops->write(xs, tx, path, value, (unsigned)strlen(value)) < 0) {
		int saved = errno;
		xgpu_fail(e, "cannot write %s = \"%s\": %s", path, value, strerror(saved));
		errno = saved;
		return -1;
	}
	if (perms && xs->ops->set_perms(xs, tx, path, perms, nperms) < 0) {
		int saved = errno;
		xgpu_fail(e, "cannot set the permissions of %s: %s", path, strerror(saved));
		errno = saved;
		return -1;
	}
	return 0;
}

static int xs_mkdir_perms(struct xgpu_xs *xs, xgpu_xs_tx tx, const char *path,
			  const struct xgpu_xs_perm *perms, unsigned nperms, struct xgpu_errbuf *e)
{
	if (xs->ops->mkdir(xs, tx, path) < 0 || xs->ops->set_perms(xs, tx, path, perms, nperms) < 0) {
		int saved = errno;
		xgpu_fail(e, "cannot create %s: %s", path, strerror(saved));
		errno = saved;
		return -1;
	}
	return 0;
}

static int xs_rm_any(struct xgpu_xs *xs, xgpu_xs_tx tx, const char *path, struct xgpu_errbuf *e)
{
	if (xs->ops->rm(xs, tx, path) < 0 && errno != ENOENT) {
		int saved = errno;
		xgpu_fail(e, "cannot remove %s: %s", path, strerror(saved));
		errno = saved;
		return -1;
	}
	return 0;
}

/* Runs body inside a transaction, retried while another writer wins
 * (EAGAIN) up to XS_TX_TRIES times. body returns 0 to commit, -1 when an
 * op failed (errno says whether to retry), 1 to refuse (never retried);
 * both abort, and the message is in e. */
typedef int (*tx_body)(struct xgpu_xs *xs, xgpu_xs_tx tx, void *arg, struct xgpu_errbuf *e);

static int xs_transact(struct xgpu_xs *xs, tx_body body, void *arg, struct xgpu_errbuf *e)
{
	for (int attempt = 1;; attempt++) {
		xgpu_xs_tx tx = xs->ops->transaction_start(xs);
		if (!tx)
			return xgpu_fail(e, "cannot start a xenstore transaction: %s", strerror(errno));
		int r = body(xs, tx, arg, e);
		if (r != 0) {
			/* A failed op inside the transaction may itself be a
			 * conflict seen early; retry those like a failed commit. */
			int saved = errno;
			xs->ops->transaction_end(xs, tx, true);
			if (r < 0 && saved == EAGAIN && attempt < XS_TX_TRIES)
				continue;
			return -1;
		}
		if (xs->ops->transaction_end(xs, tx, false) == 0)
			return 0;
		if (errno != EAGAIN)
			return xgpu_fail(e, "cannot commit the xenstore transaction: %s", strerror(errno));
		if (attempt >= XS_TX_TRIES)
			return xgpu_fail(
			    e, "xenstore transaction kept conflicting with other writers (%d tries)",
			    attempt);
	}
}

/* 1: live, 0: not, -1: cannot tell (message in e). domain_exists is the
 * authority on real Xen; where it cannot answer, /local/domain/<id> (which
 * the toolstack writes for every domain it builds) is. */
static int domain_live(struct xgpu_xs *xs, uint32_t domid, struct xgpu_errbuf *e)
{
	int r = xs->ops->domain_exists(xs, domid);
	if (r >= 0)
		return r;
	char path[PATH_LEN];
	snprintf(path, sizeof path, "/local/domain/%u", domid);
	unsigned len;
	char *v = xs->ops->read(xs, 0, path, &len);
	if (v) {
		free(v);
		return 1;
	}
	if (errno == ENOENT)
		return 0;
	return xgpu_fail(e, "cannot tell whether domain %u exists: %s", domid, strerror(errno));
}

/* A domid, or the domid of the Xen domain named dom (/local/domain/<id>/name). */
static int resolve_domain(struct xgpu_xs *xs, const char *cmd, const char *dom, uint32_t *out)
{
	if (isdigit((unsigned char)dom[0]))
		return parse_domid(cmd, dom, true, out);
	unsigned n = 0;
	char **ids = xs->ops->directory(xs, 0, "/local/domain", &n);
	if (!ids)
		return err(cmd, "cannot list /local/domain to find domain '%s': %s", dom, strerror(errno));
	long found = -1;
	int rc = 0;
	for (unsigned i = 0; i < n && rc == 0; i++) {
		long id;
		if (xgpu_parse_long(ids[i], 0, XGPU_XEN_DOMID_MAX, &id) < 0)
			continue;
		char path[PATH_LEN];
		snprintf(path, sizeof path, "/local/domain/%ld/name", id);
		unsigned len;
		char *name = xs->ops->read(xs, 0, path, &len);
		if (name && strlen(name) == len && !strcmp(name, dom)) {
			if (found >= 0)
				rc = err(cmd,
					 "domain name '%s' is used by domains %ld and %ld; give the domid",
					 dom, found, id);
			found = id;
		}
		free(name);
	}
	free(ids);
	if (rc)
		return rc;
	if (found < 0)
		return err(cmd, "no Xen domain is named '%s' (no /local/domain/*/name says so)", dom);
	*out = (uint32_t)found;
	return 0;
}

/* ---- domain configuration ----------------------------------------------------- */
struct dom_cfg {
	bool has_spec; /* a gpu = [ "..." ] entry was given */
	struct xgpu_gpuspec spec;
	char name[128]; /* the cfg's name, "" if none */
};

static char *slurp(const char *cmd, const char *path, size_t *len_r)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		err(cmd, "%s: cannot open: %s", path, strerror(errno));
		return NULL;
	}
	size_t cap = 4096, len = 0;
	char *data = malloc(cap);
	for (;;) {
		if (data && len == cap) {
			char *bigger = cap < CFG_MAX_BYTES ? realloc(data, cap * 2) : NULL;
			if (!bigger) {
				err(cmd, "%s: larger than %u bytes or out of memory; not a domain config?",
				    path, CFG_MAX_BYTES);
				free(data);
				data = NULL;
			}
			data = bigger;
			cap *= 2;
		}
		if (!data)
			break;
		ssize_t n = read(fd, data + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err(cmd, "%s: cannot read: %s", path, strerror(errno));
			free(data);
			data = NULL;
		}
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	*len_r = len;
	return data;
}

/* xl create's VAR=VALUE arguments: every argument with a '=' that is not an
 * option, as xl's main_create takes them. */
static bool is_cfg_var(const char *arg)
{
	return arg[0] != '-' && strchr(arg, '=');
}

/* Reads path as xl would, with xl create's VAR=VALUE arguments among
 * args[0..nargs) appended as further lines (later settings win, so they
 * override the file as they do for xl), and takes the gpu line (at most
 * one entry, a GPU spec without name=) and the name. */
static int load_cfg(const char *cmd, const char *path, char **args, int nargs, struct dom_cfg *out)
{
	memset(out, 0, sizeof *out);
	size_t len = 0;
	char *data = slurp(cmd, path, &len);
	if (!data)
		return 1;
	size_t extra = 0;
	for (int i = 0; i < nargs; i++)
		if (is_cfg_var(args[i]))
			extra += strlen(args[i]) + 1;
	if (extra) {
		char *more = realloc(data, len + extra + 2);
		if (!more) {
			free(data);
			return err(cmd, "%s: out of memory", path);
		}
		data = more;
		data[len++] = '\n';
		for (int i = 0; i < nargs; i++) {
			if (!is_cfg_var(args[i]))
				continue;
			size_t l = strlen(args[i]);
			memcpy(data + len, args[i], l);
			len += l;
			data[len++] = '\n';
		}
	}
	if (len > INT32_MAX) {
		free(data);
		return err(cmd, "%s: too large", path);
	}
	/* libxlutil asserts on a NUL inside a string. */
	if (memchr(data, '\0', len)) {
		free(data);
		return err(cmd, "%s: contains a NUL byte; not a domain config?", path);
	}
	/* libxlutil reports syntax errors itself, naming file and line. */
	XLU_Config *cfg = xlu_cfg_init(stderr, path);
	if (!cfg) {
		free(data);
		return err(cmd, "%s: out of memory", path);
	}
	int rc = 0;
	int xr = xlu_cfg_readdata(cfg, data, (int)len);
	free(data);
	if (xr) {
		rc = err(cmd, "%s: cannot parse the domain config (%s)", path, strerror(xr));
		goto out;
	}
	const char *name;
	if (xlu_cfg_get_string(cfg, "name", &name, 1) == 0) {
		if (strlen(name) >= sizeof out->name) {
			rc = err(cmd, "%s: name \"%.40s...\" is too long", path, name);
			goto out;
		}
		xgpu_strlcpy(out->name, name, sizeof out->name);
	}
	XLU_ConfigList *list;
	int n = 0;
	int r = xlu_cfg_get_list(cfg, "gpu", &list, &n, 1);
	if (r == ESRCH || (r == 0 && n == 0))
		goto out;
	if (r) {
		rc = err(cmd, "%s: gpu must be a list of one string, e.g. gpu = [ \"gpus=0, credit=512\" ]",
			 path);
		goto out;
	}
	if (n > 1) {
		rc = err(cmd,
			 "%s: gpu has %d entries; a domain has one GPU device (devid 0), whose gpus= "
			 "may name several GPUs",
			 path, n);
		goto out;
	}
	const char *item = xlu_cfg_get_listitem(list, 0);
	if (!item) {
		rc = err(cmd, "%s: gpu[0] is not a string", path);
		goto out;
	}
	char msg[512];
	if (xgpu_gpuspec_parse(item, XGPU_GPUSPEC_ALLOW_REMOTE, &out->spec, msg, sizeof msg)) {
		rc = err(cmd, "%s: gpu[0] \"%s\": %s", path, item, msg);
		goto out;
	}
	out->has_spec = true;
out:
	xlu_cfg_destroy(cfg);
	return rc;
}

/* ---- attach ----------------------------------------------------------------- */
/* A remote GPU's key as the domU reads it from its backend directory:
 * "identity:hex", the form XGPU_REMOTE_PSK_FILE holds. */
#define PSK_TEXT_MAX (128 + 1 + 2 * 64 + 1)
_Static_assert(PSK_TEXT_MAX <= XGPU_GPUSPEC_REMOTE_MAX + 1, "the key fits a backend value");

struct attach_args {
	uint32_t domid;
	const struct xgpu_gpuspec *spec;
	char psk[PSK_TEXT_MAX]; /* with spec->remote and remote_key */
	/* with spec->remote and remote_cert: PEM texts */
	char cert[XGPU_REMOTE_PEM_MAX + 1], cert_key[XGPU_REMOTE_PEM_MAX + 1], ca[XGPU_REMOTE_PEM_MAX + 1];
};

static int attach_body(struct xgpu_xs *xs, xgpu_xs_tx tx, void *arg, struct xgpu_errbuf *e)
{
	struct attach_args *a = arg;
	const struct xgpu_gpuspec *s = a->spec;
	uint32_t domid = a->domid;
	struct dev_paths p;
	dev_paths(domid, &p);
	/* Checked inside the transaction, so two racing attaches cannot both
	 * write: the second's commit fails and its retry sees the first. */
	if (xs_exists(xs, tx, p.be) || xs_exists(xs, tx, p.fe)) {
		xgpu_fail(e,
			  "domain %u already has a GPU device (%s or %s exists); detach it first with: "
			  "xl-gpu detach %u",
			  domid, p.be, p.fe, domid);
		return 1;
	}
	/* dom0 owns the backend; the guest reads it (its config) and nothing
	 * else may. The guest owns its frontend; dom0 reads it anyway. */
	const struct xgpu_xs_perm be_perms[] = {{0, XGPU_XS_PERM_NONE}, {domid, XGPU_XS_PERM_READ}};
	const struct xgpu_xs_perm fe_perms[] = {{domid, XGPU_XS_PERM_NONE}, {0, XGPU_XS_PERM_READ}};
	const unsigned nbe = XGPU_ARRAY_SIZE(be_perms), nfe = XGPU_ARRAY_SIZE(fe_perms);

	char gpus[256], sla[64], num[32], path[PATH_LEN + 64];
	fmt_gpus(s->has_gpus ? s->gpus : UINT64_MAX, gpus, sizeof gpus);
	fmt_sla(s->has_sla ? s->sla : 0.0, sla, sizeof sla);
	if (xs_mkdir_perms(xs, tx, p.be_dom, be_perms, nbe, e) ||
	    xs_mkdir_perms(xs, tx, p.be, be_perms, nbe, e))
		return -1;
	struct {
		const char *key;
		char val[XGPU_GPUSPEC_REMOTE_MAX + 1 > PATH_LEN ? XGPU_GPUSPEC_REMOTE_MAX + 1 : PATH_LEN];
	} be_keys[10];
	unsigned nk = 0;
	be_keys[nk].key = "frontend";
	xgpu_strlcpy(be_keys[nk++].val, p.fe, sizeof be_keys[0].val);
	be_keys[nk].key = "frontend-id";
	snprintf(be_keys[nk++].val, sizeof be_keys[0].val, "%u", domid);
	be_keys[nk].key = "state";
	snprintf(be_keys[nk++].val, sizeof be_keys[0].val, "%d", XGPU_XB_INITIALISING);
	be_keys[nk].key = "gpus";
	xgpu_strlcpy(be_keys[nk++].val, gpus, sizeof be_keys[0].val);
	be_keys[nk].key = "credit";
	snprintf(be_keys[nk++].val, sizeof be_keys[0].val, "%u",
		 s->has_credit ? s->credit : (unsigned)XGPU_CREDIT_DEFAULT);
	be_keys[nk].key = "sla";
	xgpu_strlcpy(be_keys[nk++].val, sla, sizeof be_keys[0].val);
	be_keys[nk].key = "mem-limit";
	snprintf(be_keys[nk++].val, sizeof be_keys[0].val, "%llu",
		 (unsigned long long)(s->has_mem ? s->mem : 0));
	/* Only when the gpu line sets it: otherwise xgpud's --kernel-timeout. */
	if (s->has_ktimeout) {
		be_keys[nk].key = "kernel-timeout";
		snprintf(be_keys[nk++].val, sizeof be_keys[0].val, "%u", s->ktimeout);
	}
	/* A remote xgpud serves this domain: its frontend connects there with
	 * the key, which only dom0 and this domain can read (be_perms). */
	if (s->remote[0]) {
		be_keys[nk].key = "remote";
		xgpu_strlcpy(be_keys[nk++].val, s->remote, sizeof be_keys[0].val);
		if (s->remote_key[0]) {
			be_keys[nk].key = "remote-psk";
			xgpu_strlcpy(be_keys[nk++].val, a->psk, sizeof be_keys[0].val);
		}
	}
	for (unsigned i = 0; i < nk; i++) {
		snprintf(path, sizeof path, "%s/%s", p.be, be_keys[i].key);
		if (xs_put(xs, tx, path, be_keys[i].val, be_perms, nbe, e))
			return -1;
	}
	/* Certificates instead of a key: the PEM texts, as long as a value may be. */
	if (s->remote[0] && s->remote_cert[0]) {
		const struct {
			const char *key, *val;
		} pem[] = {{"remote-cert", a->cert}, {"remote-cert-key", a->cert_key}, {"remote-ca", a->ca}};
		for (unsigned i = 0; i < XGPU_ARRAY_SIZE(pem); i++) {
			snprintf(path, sizeof path, "%s/%s", p.be, pem[i].key);
			if (xs_put(xs, tx, path, pem[i].val, be_perms, nbe, e))
				return -1;
		}
	}
	if (s->ntasks) {
		snprintf(path, sizeof path, "%s/task", p.be);
		if (xs_mkdir_perms(xs, tx, path, be_perms, nbe, e))
			return -1;
		for (unsigned i = 0; i < s->ntasks && i < XGPU_GPUSPEC_TASKS; i++) {
			snprintf(path, sizeof path, "%s/task/%u", p.be, s->tasks[i].task);
			snprintf(num, sizeof num, "%u", s->tasks[i].weight);
			if (xs_put(xs, tx, path, num, be_perms, nbe, e))
				return -1;
		}
	}

	if (xs_mkdir_perms(xs, tx, p.fe_dir, fe_perms, nfe, e) ||
	    xs_mkdir_perms(xs, tx, p.fe, fe_perms, nfe, e))
		return -1;
	snprintf(path, sizeof path, "%s/backend", p.fe);
	if (xs_put(xs, tx, path, p.be, fe_perms, nfe, e))
		return -1;
	snprintf(path, sizeof path, "%s/backend-id", p.fe);
	if (xs_put(xs, tx, path, "0", fe_perms, nfe, e))
		return -1;
	snprintf(path, sizeof path, "%s/state", p.fe);
	snprintf(num, sizeof num, "%d", XGPU_XB_INITIALISING);
	return xs_put(xs, tx, path, num, fe_perms, nfe, e);
}

/* Attaches device 0 with spec (defaults for what it leaves out). */
static int attach_dev(struct xgpu_xs *xs, const char *cmd, uint32_t domid, const struct xgpu_gpuspec *spec)
{
	char msg[768];
	struct xgpu_errbuf e = {msg, sizeof msg};
	int live = domain_live(xs, domid, &e);
	if (live < 0)
		return err(cmd, "%s", msg);
	if (!live)
		return err(cmd, "domain %u does not exist", domid);
	struct attach_args *a = calloc(1, sizeof *a); /* three PEM texts: not on the stack */
	if (!a)
		return err(cmd, "out of memory");
	a->domid = domid;
	a->spec = spec;
	char why[400];
	int rc = 0;
	if (spec->remote[0] && spec->remote_cert[0]) {
		/* Only their shape is checked here (the guest's frontend loads
		 * them and says what is wrong): loading GnuTLS into xl-gpu's
		 * main thread leaves dynamic TLS that gcc 12's LeakSanitizer
		 * cannot walk at exit. */
		if (xgpu_remote_read_pem(spec->remote_cert, false, a->cert, sizeof a->cert, why, sizeof why) <
			0 ||
		    xgpu_remote_read_pem(spec->remote_cert_key, true, a->cert_key, sizeof a->cert_key, why,
					 sizeof why) < 0 ||
		    xgpu_remote_read_pem(spec->remote_ca, false, a->ca, sizeof a->ca, why, sizeof why) < 0)
			rc = err(cmd, "%s", why);
		else if (!strstr(a->cert, "-----BEGIN CERTIFICATE-----"))
			rc = err(cmd, "remote-cert=%s holds no PEM certificate", spec->remote_cert);
		else if (!strstr(a->cert_key, "PRIVATE KEY-----"))
			rc = err(cmd, "remote-cert-key=%s holds no PEM private key", spec->remote_cert_key);
		else if (!strstr(a->ca, "-----BEGIN CERTIFICATE-----"))
			rc = err(cmd, "remote-ca=%s holds no PEM certificate", spec->remote_ca);
	} else if (spec->remote[0]) {
		char identity[128];
		uint8_t key[64];
		size_t keylen = sizeof key;
		if (xgpu_remote_read_psk(spec->remote_key, identity, sizeof identity, key, &keylen, why,
					 sizeof why) < 0) {
			rc = err(cmd, "remote-key=%s: %s", spec->remote_key, why);
		} else {
			size_t n = (size_t)snprintf(a->psk, sizeof a->psk, "%s:", identity);
			for (size_t i = 0; i < keylen && n + 2 < sizeof a->psk; i++, n += 2)
				snprintf(a->psk + n, sizeof a->psk - n, "%02x", key[i]);
		}
		explicit_bzero(key, sizeof key);
	}
	if (rc == 0 && xs_transact(xs, attach_body, a, &e))
		rc = err(cmd, "%s", msg);
	explicit_bzero(a, sizeof *a);
	free(a);
	return rc;
}

static void describe(uint32_t domid, const struct xgpu_gpuspec *s, bool from_cfg, const char *cfgpath)
{
	char gpus[256], sla[64];
	fmt_gpus(s->has_gpus ? s->gpus : UINT64_MAX, gpus, sizeof gpus);
	fmt_sla(s->has_sla ? s->sla : 0.0, sla, sizeof sla);
	printf("domain %u: GPU device attached: gpus=%s credit=%u sla=%s mem-limit=%llu", domid, gpus,
	       s->has_credit ? s->credit : (unsigned)XGPU_CREDIT_DEFAULT, sla,
	       (unsigned long long)(s->has_mem ? s->mem : 0));
	if (s->remote[0])
		printf(" remote=%s (served by the GPU host there, not by this host's xgpud)", s->remote);
	if (!from_cfg)
		printf(" (defaults: %s)", cfgpath ? "the config has no gpu line" : "no config file given");
	putchar('\n');
}

int xlgpu_xen_attach(int argc, char **argv)
{
	const char *cmd = "attach";
	if (argc < 1 || argc > 2 || argv[0][0] == '-')
		return err(cmd, "usage: attach DOMID [CFGFILE]"), 2;
	uint32_t domid;
	if (parse_domid(cmd, argv[0], false, &domid))
		return 1;
	struct dom_cfg cfg;
	memset(&cfg, 0, sizeof cfg);
	if (argc == 2 && load_cfg(cmd, argv[1], NULL, 0, &cfg))
		return 1;
	struct xgpu_xs *xs = xs_connect(cmd);
	if (!xs)
		return 1;
	int rc = attach_dev(xs, cmd, domid, &cfg.spec);
	xs->ops->close(xs);
	if (rc == 0)
		describe(domid, &cfg.spec, cfg.has_spec, argc == 2 ? argv[1] : NULL);
	return rc;
}

/* ---- detach ----------------------------------------------------------------- */
static int detach_body(struct xgpu_xs *xs, xgpu_xs_tx tx, void *arg, struct xgpu_errbuf *e)
{
	const struct dev_paths *p = arg;
	return xs_rm_any(xs, tx, p->be_dom, e) || xs_rm_any(xs, tx, p->fe_dir, e) ? -1 : 0;
}

/* The backend state, -1 when the device is gone, -2 when unreadable. */
static int backend_state(struct xgpu_xs *xs, const struct dev_paths *p)
{
	char path[PATH_LEN + 16];
	snprintf(path, sizeof path, "%s/state", p->be);
	uint64_t v;
	if (xgpu_xs_read_u64(xs, 0, path, 64, &v) == 0)
		return (int)v;
	return errno == ENOENT ? -1 : -2;
}

int xlgpu_xen_detach(int argc, char **argv)
{
	const char *cmd = "detach";
	const char *dom = NULL;
	long timeout = DETACH_TIMEOUT_DEFAULT;
	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "-t") && i + 1 < argc) {
			if (xgpu_parse_long(argv[++i], 0, DETACH_TIMEOUT_MAX, &timeout) < 0)
				return err(cmd, "-t %s: need whole seconds from 0 to %d", argv[i],
					   DETACH_TIMEOUT_MAX),
				       2;
		} else if (argv[i][0] != '-' && !dom) {
			dom = argv[i];
		} else {
			return err(cmd, "unexpected argument '%s' (usage: detach DOMID [-t SECS])", argv[i]),
			       2;
		}
	}
	if (!dom)
		return err(cmd, "which domain? (usage: detach DOMID [-t SECS])"), 2;
	uint32_t domid;
	if (parse_domid(cmd, dom, false, &domid))
		return 1;
	struct xgpu_xs *xs = xs_connect(cmd);
	if (!xs)
		return 1;
	struct dev_paths p;
	dev_paths(domid, &p);
	int rc = 0;
	char state_path[PATH_LEN + 16];
	snprintf(state_path, sizeof state_path, "%s/state", p.be);
	if (!xs_exists(xs, 0, p.be) && !xs_exists(xs, 0, p.fe)) {
		rc = err(cmd, "domain %u has no GPU device (no %s)", domid, p.be);
		goto out;
	}
	bool acked = false;
	int state = backend_state(xs, &p);
	if (state >= 0 && state != XGPU_XB_CLOSED) {
		char five[8];
		snprintf(five, sizeof five, "%d", XGPU_XB_CLOSING);
		if (xs->ops->write(xs, 0, state_path, five, (unsigned)strlen(five)) < 0) {
			rc = err(cmd, "cannot write %s = %s: %s", state_path, five, strerror(errno));
			goto out;
		}
		/* Watch, and also re-read on a short period, so a lost or
		 * coalesced event costs at most that period. */
		static const char token[] = "xl-gpu-detach";
		bool watching = xs->ops->watch(xs, state_path, token) == 0;
		int wfd = watching ? xs->ops->watch_fd(xs) : -1;
		uint64_t deadline = xgpu_now_ns() + (uint64_t)timeout * 1000000000ull;
		for (;;) {
			state = backend_state(xs, &p);
			if (state == XGPU_XB_CLOSED || state == -1) {
				acked = true;
				break;
			}
			uint64_t now = xgpu_now_ns();
			if (now >= deadline)
				break;
			uint64_t left_ms = (deadline - now + 999999) / 1000000;
			struct pollfd pfd = {.fd = wfd, .events = POLLIN};
			poll(&pfd, wfd >= 0 ? 1 : 0, (int)(left_ms < 200 ? left_ms : 200));
			char *wpath, *wtok;
			while (watching && xs->ops->read_watch(xs, &wpath, &wtok) == 0) {
				free(wpath);
				free(wtok);
			}
		}
		if (watching)
			xs->ops->unwatch(xs, state_path, token);
	} else {
		/* Already Closed, or no backend left for xgpud to close. */
		acked = state == XGPU_XB_CLOSED || state == -1;
	}
	if (!acked) {
		char seen[32];
		if (state == -2)
			xgpu_strlcpy(seen, "unreadable", sizeof seen);
		else
			snprintf(seen, sizeof seen, "still %d", state);
		fprintf(
		    stderr,
		    "xl-gpu: detach: warning: xgpud did not acknowledge: %s is %s, not %d (Closed), after "
		    "%ld s; removing the device anyway\n",
		    state_path, seen, XGPU_XB_CLOSED, timeout);
	}
	char msg[512];
	struct xgpu_errbuf e = {msg, sizeof msg};
	if (xs_transact(xs, detach_body, &p, &e)) {
		rc = err(cmd, "domain %u: %s", domid, msg);
		goto out;
	}
	printf("domain %u: GPU device detached\n", domid);
out:
	xs->ops->close(xs);
	return rc;
}

/* ---- create ----------------------------------------------------------------- */
/* Runs argv; with out, captures up to outlen-1 bytes of its stdout.
 * Returns its exit status, or -1 when it could not run (said why). */
static int run(const char *cmd, char *const argv[], char *out, size_t outlen)
{
	int pfd[2] = {-1, -1};
	if (out && pipe2(pfd, O_CLOEXEC) < 0)
		return err(cmd, "pipe: %s", strerror(errno)), -1;
	fflush(stdout);
	fflush(stderr);
	pid_t pid = fork();
	if (pid < 0) {
		err(cmd, "cannot start %s: %s", argv[0], strerror(errno));
		if (out) {
			close(pfd[0]);
			close(pfd[1]);
		}
		return -1;
	}
	if (pid == 0) {
		if (out)
			dup2(pfd[1], STDOUT_FILENO);
		execvp(argv[0], argv);
		fprintf(stderr, "xl-gpu: %s: cannot run %s: %s\n", cmd, argv[0], strerror(errno));
		_exit(127);
	}
	if (out) {
		close(pfd[1]);
		size_t n = 0;
		for (;;) {
			char tmp[256];
			ssize_t r = read(pfd[0], tmp, sizeof tmp);
			if (r < 0 && errno == EINTR)
				continue;
			if (r <= 0)
				break;
			size_t take = (size_t)r < outlen - 1 - n ? (size_t)r : outlen - 1 - n;
			memcpy(out + n, tmp, take);
			n += take;
		}
		out[n] = '\0';
		close(pfd[0]);
	}
	int status;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return err(cmd, "waiting for %s: %s", argv[0], strerror(errno)), -1;
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return WEXITSTATUS(status);
}

int xlgpu_xen_create(int argc, char **argv)
{
	const char *cmd = "create";
	if (argc < 1 || argv[0][0] == '-')
		return err(cmd, "usage: create CFGFILE [xl create options] [VAR=VALUE]..."), 2;
	const char *path = argv[0];
	struct dom_cfg cfg;
	/* Everything that can be checked is, before a domain exists. */
	if (load_cfg(cmd, path, argv + 1, argc - 1, &cfg))
		return 1;
	if (!cfg.name[0])
		return err(cmd, "%s: no name = \"...\"; xl-gpu create needs it to find the new domain", path);
	struct xgpu_xs *xs = xs_connect(cmd);
	if (!xs)
		return 1;
	const char *xl = getenv("XL");
	if (!xl || !*xl)
		xl = "xl";
	char **xargv = calloc((size_t)argc + 3, sizeof *xargv);
	if (!xargv) {
		xs->ops->close(xs);
		return err(cmd, "out of memory");
	}
	xargv[0] = (char *)xl;
	xargv[1] = "create";
	for (int i = 0; i < argc; i++)
		xargv[2 + i] = argv[i];
	int rc = 1;
	int st = run(cmd, xargv, NULL, 0);
	free(xargv);
	if (st != 0) {
		if (st > 0)
			err(cmd, "'%s create %s' failed (exit status %d); no domain to attach a GPU to", xl,
			    path, st);
		goto out;
	}
	char out[64];
	char *dargv[] = {(char *)xl, "domid", cfg.name, NULL};
	st = run(cmd, dargv, out, sizeof out);
	uint32_t domid = 0;
	long v;
	out[strcspn(out, "\n")] = '\0';
	if (st != 0 || xgpu_parse_long(out, 1, XGPU_XEN_DOMID_MAX, &v) < 0) {
		err(cmd,
		    "domain '%s' was created but '%s domid %s' did not give its domid (%s); no GPU attached",
		    cfg.name, xl, cfg.name, st != 0 ? "it failed" : "unexpected output");
		fprintf(stderr,
			"xl-gpu: create: the domain is still running; remove it with: %s destroy %s\n", xl,
			cfg.name);
		goto out;
	}
	domid = (uint32_t)v;
	if (attach_dev(xs, cmd, domid, &cfg.spec)) {
		fprintf(
		    stderr,
		    "xl-gpu: create: domain '%s' (domid %u) was created but attaching its GPU failed; it is "
		    "still running (remove it with: %s destroy %s)\n",
		    cfg.name, domid, xl, cfg.name);
		goto out;
	}
	describe(domid, &cfg.spec, cfg.has_spec, path);
	rc = 0;
out:
	xs->ops->close(xs);
	return rc;
}

/* ---- credit and policy ------------------------------------------------------------ */
struct credit_args {
	const struct dev_paths *p;
	uint32_t domid;
	long credit;
	double sla;
};

static int credit_body(struct xgpu_xs *xs, xgpu_xs_tx tx, void *arg, struct xgpu_errbuf *e)
{
	struct credit_args *a = arg;
	char path[PATH_LEN + 16], val[64];
	if (!xs_exists(xs, tx, a->p->be)) {
		xgpu_fail(e, "domain %u has no GPU device (no %s); attach one with: xl-gpu attach %u",
			  a->domid, a->p->be, a->domid);
		return 1;
	}
	/* Existing keys keep the permissions attach gave them. */
	if (a->credit > 0) {
		snprintf(path, sizeof path, "%s/credit", a->p->be);
		snprintf(val, sizeof val, "%ld", a->credit);
		if (xs_put(xs, tx, path, val, NULL, 0, e))
			return -1;
	}
	if (a->sla >= 0) {
		snprintf(path, sizeof path, "%s/sla", a->p->be);
		fmt_sla(a->sla, val, sizeof val);
		if (xs_put(xs, tx, path, val, NULL, 0, e))
			return -1;
	}
	return 0;
}

/* A guest writes its remote-state: only printable ASCII reaches the
 * terminal, at most len - 1 bytes of it. */
static void printable(const char *in, unsigned n, char *out, size_t len)
{
	size_t k = 0;
	for (unsigned i = 0; i < n && in[i] && k + 1 < len; i++)
		out[k++] = in[i] >= 0x20 && in[i] < 0x7f ? in[i] : '?';
	out[k] = '\0';
}

int xlgpu_xen_list_remote(void)
{
	char why[256];
	struct xgpu_xs *xs = xgpu_xs_open(why, sizeof why);
	if (!xs) {
		fprintf(stderr, "xl-gpu: list: cannot reach xenstore: %s\n", why);
		return -1;
	}
	unsigned n = 0, shown = 0;
	char **doms = xs->ops->directory(xs, 0, XGPU_XS_BACKEND_ROOT, &n);
	for (unsigned i = 0; doms && i < n; i++) {
		long domid;
		if (xgpu_parse_long(doms[i], 1, UINT32_MAX, &domid) < 0)
			continue;
		char path[160], remote[XGPU_GPUSPEC_REMOTE_MAX + 1], state[240] = "no channel yet";
		unsigned len = 0;
		snprintf(path, sizeof path, "%s/%ld/0/remote", XGPU_XS_BACKEND_ROOT, domid);
		char *v = xs->ops->read(xs, 0, path, &len);
		if (!v)
			continue;
		printable(v, len, remote, sizeof remote);
		free(v);
		snprintf(path, sizeof path, "/local/domain/%ld/device/vgpu/0/remote-state", domid);
		if ((v = xs->ops->read(xs, 0, path, &len))) {
			printable(v, len, state, sizeof state);
			free(v);
		}
		if (!shown++)
			printf("\nRemote GPUs (served by xgpud on another host; the channel as the guest "
			       "reports "
			       "it):\n%5s  %-24s %s\n",
			       "ID", "Remote", "Channel");
		printf("%5ld  %-24s %s\n", domid, remote, state);
	}
	free(doms);
	xs->ops->close(xs);
	return (int)shown;
}

int xlgpu_xen_credit(const char *dom, long credit, double sla)
{
	const char *cmd = "credit";
	struct xgpu_xs *xs = xs_connect(cmd);
	if (!xs)
		return 1;
	int rc = 0;
	uint32_t domid;
	char *name = NULL, *cv = NULL, *sv = NULL;
	if (resolve_domain(xs, cmd, dom, &domid)) {
		rc = 1;
		goto out;
	}
	struct dev_paths p;
	dev_paths(domid, &p);
	char msg[512], path[PATH_LEN + 16];
	struct xgpu_errbuf e = {msg, sizeof msg};
	struct credit_args a = {&p, domid, credit, sla};
	if (xs_transact(xs, credit_body, &a, &e)) {
		rc = err(cmd, "%s", msg);
		goto out;
	}
	unsigned len;
	snprintf(path, sizeof path, "/local/domain/%u/name", domid);
	name = xs->ops->read(xs, 0, path, &len);
	snprintf(path, sizeof path, "%s/credit", p.be);
	cv = xs->ops->read(xs, 0, path, &len);
	snprintf(path, sizeof path, "%s/sla", p.be);
	sv = xs->ops->read(xs, 0, path, &len);
	printf("%-20s %5s %7s %6s\n", "Name", "ID", "Credit", "SLA");
	/* The name is the guest's to write: shown bounded and printable only. */
	char shown[65] = "-";
	for (unsigned i = 0; name && name[i] && i + 1 < sizeof shown; i++) {
		shown[i] = isprint((unsigned char)name[i]) ? name[i] : '?';
		shown[i + 1] = '\0';
	}
	printf("%-20s %5u %7s %6.3f\n", shown, domid, cv ? cv : "-", sv ? strtod(sv, NULL) : 0.0);
out:
	free(name);
	free(cv);
	free(sv);
	xs->ops->close(xs);
	return rc;
}

struct policy_args {
	const char *name;
	long gpu;
};

static int policy_body(struct xgpu_xs *xs, xgpu_xs_tx tx, void *arg, struct xgpu_errbuf *e)
{
	struct policy_args *a = arg;
	char path[PATH_LEN];
	if (a->gpu >= 0) {
		snprintf(path, sizeof path, XGPU_XS_BACKEND_ROOT "/gpu/%ld/policy", a->gpu);
		return xs_put(xs, tx, path, a->name, NULL, 0, e);
	}
	/* "Every GPU", as in local mode: per-GPU choices would otherwise
	 * still win over the new global one. */
	if (xs_rm_any(xs, tx, XGPU_XS_BACKEND_ROOT "/gpu", e))
		return -1;
	return xs_put(xs, tx, XGPU_XS_POLICY, a->name, NULL, 0, e);
}

static int cmp_gpu(const void *a, const void *b)
{
	long x = strtol(*(char *const *)a, NULL, 10), y = strtol(*(char *const *)b, NULL, 10);
	return (x > y) - (x < y);
}

int xlgpu_xen_policy(const char *name, long gpu)
{
	const char *cmd = "policy";
	if (name && !xgpu_policy_find(name))
		return err(cmd, "unknown policy '%s' (known: %s)", name, xgpu_policy_names());
	struct xgpu_xs *xs = xs_connect(cmd);
	if (!xs)
		return 1;
	int rc = 0;
	char msg[512], path[PATH_LEN];
	struct xgpu_errbuf e = {msg, sizeof msg};
	if (name) {
		struct policy_args a = {name, gpu};
		if (xs_transact(xs, policy_body, &a, &e)) {
			rc = err(cmd, "%s", msg);
			goto out;
		}
	}
	unsigned len;
	char *global = xs->ops->read(xs, 0, XGPU_XS_POLICY, &len);
	const char *dflt = "(xgpud's default)";
	if (gpu >= 0) {
		snprintf(path, sizeof path, XGPU_XS_BACKEND_ROOT "/gpu/%ld/policy", gpu);
		char *v = xs->ops->read(xs, 0, path, &len);
		printf("GPU %ld: %s\n", gpu, v ? v : global ? global : dflt);
		free(v);
	} else {
		printf("all GPUs: %s\n", global ? global : dflt);
		unsigned n = 0;
		char **gpus = xs->ops->directory(xs, 0, XGPU_XS_BACKEND_ROOT "/gpu", &n);
		if (gpus) {
			qsort(gpus, n, sizeof *gpus, cmp_gpu);
			for (unsigned i = 0; i < n; i++) {
				long g;
				if (xgpu_parse_long(gpus[i], 0, 4095, &g) < 0)
					continue;
				snprintf(path, sizeof path, XGPU_XS_BACKEND_ROOT "/gpu/%ld/policy", g);
				char *v = xs->ops->read(xs, 0, path, &len);
				if (v)
					printf("GPU %ld: %s\n", g, v);
				free(v);
			}
			free(gpus);
		}
	}
	free(global);
out:
	xs->ops->close(xs);
	return rc;
}
