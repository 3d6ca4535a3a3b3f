/* SPDX-License-Identifier: Apache-2.0 */
/* test_xlgpu_xen.c - the real xl-gpu binary in Xen mode against an in-memory
 * Xen (xgpu-xenstub, in-process): attach writes exactly the xenstore tree of
 * BRIEF section 4 (tests/data/xen/sample.tree), with defaults when the
 * config says nothing; every bad config, domain or value is refused with a
 * message naming it and leaves xenstore untouched; transactions survive
 * conflicts; detach with and without an xgpud answering Closed; Xen-mode
 * credit and policy keys; create around a fake `xl`. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "util.h"
#include "xenif.h"
#include "../../tools/xenstub/xenstub.h"
#include "xenvgpu.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char dir[PATH_MAX];
static char sock[PATH_MAX + 16];
static struct xgpu_xenstub *stub;
static struct xgpu_xs *xs; /* the test's own view, as dom0 */

static const char *src(void)
{
	const char *s = getenv("XGPU_SRC");
	return s && *s ? s : ".";
}

static const char *build(void)
{
	const char *b = getenv("XGPU_BUILD");
	return b && *b ? b : "build/san";
}

static int setup(void **state)
{
	const char *tmp = getenv("XGPU_TMP");
	snprintf(dir, sizeof dir, "%s/test_xlgpu_xen.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(dir))
		return -1;
	snprintf(sock, sizeof sock, "%s/xs.sock", dir);
	char err[256] = "";
	stub = xgpu_xenstub_start(sock, err, sizeof err);
	if (!stub) {
		fprintf(stderr, "xenstub: %s\n", err);
		return -1;
	}
	if (xgpu_xenstub_introduce(stub, 5, "guest5") < 0)
		return -1;
	xs = xgpu_xs_open_stub(sock, 0, err, sizeof err);
	if (!xs) {
		fprintf(stderr, "xenstub client: %s\n", err);
		return -1;
	}
	return 0;
}

static int teardown(void **state)
{
	if (xs)
		xs->ops->close(xs);
	xs = NULL;
	if (stub)
		xgpu_xenstub_stop(stub);
	stub = NULL;
	char cmd[PATH_MAX + 16];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* ---- running xl-gpu ------------------------------------------------------- */
struct result {
	int rc;
	char out[8192];
	char err[8192];
};

static void slurp(const char *path, char *buf, size_t len)
{
	buf[0] = '\0';
	FILE *f = fopen(path, "r");
	if (!f)
		return;
	size_t n = fread(buf, 1, len - 1, f);
	buf[n] = '\0';
	fclose(f);
}

/* Runs build/bin/xl-gpu with args (NULL-terminated) as dom0 of the stub;
 * env holds extra NAME=VALUE settings (NULL-terminated, may be NULL). */
static struct result *run_env(const char *const *env, const char *arg0, ...)
{
	const char *argv[32];
	char bin[PATH_MAX];
	snprintf(bin, sizeof bin, "%s/bin/xl-gpu", build());
	unsigned n = 0;
	argv[n++] = bin;
	va_list ap;
	va_start(ap, arg0);
	for (const char *a = arg0; a && n < 31; a = va_arg(ap, const char *))
		argv[n++] = a;
	va_end(ap);
	argv[n] = NULL;

	char outp[PATH_MAX + 8], errp[PATH_MAX + 8];
	snprintf(outp, sizeof outp, "%s/out", dir);
	snprintf(errp, sizeof errp, "%s/err", dir);
	fflush(NULL);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int o = open(outp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		int e = open(errp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		if (o < 0 || e < 0 || dup2(o, 1) < 0 || dup2(e, 2) < 0)
			_exit(126);
		setenv("XGPU_XEN_STUB", sock, 1);
		unsetenv("XGPU_XEN_DOMID");
		char nosock[PATH_MAX + 16];
		snprintf(nosock, sizeof nosock, "%s/no-xgpud.sock", dir);
		setenv("XGPU_SOCKET", nosock, 1);
		for (unsigned i = 0; env && env[i]; i++)
			putenv((char *)env[i]);
		execv(bin, (char *const *)argv);
		_exit(127);
	}
	static struct result r;
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	slurp(outp, r.out, sizeof r.out);
	slurp(errp, r.err, sizeof r.err);
	if (strstr(r.err, "Sanitizer") || strstr(r.err, "runtime error:"))
		fail_msg("xl-gpu tripped a sanitizer:\n%s", r.err);
	return &r;
}

#define xl(...) run_env(NULL, __VA_ARGS__, NULL)
#define xl_env(env, ...) run_env(env, __VA_ARGS__, NULL)

static void expect_success(const struct result *r)
{
	if (r->rc != 0)
		fail_msg("xl-gpu failed (exit %d):\n%s", r->rc, r->err);
}

/* Fails unless the run failed with status rc and its stderr holds every
 * string given (NULL-terminated). */
static void expect_refused(const struct result *r, int rc, ...)
{
	if (r->rc != rc)
		fail_msg("xl-gpu exit %d, expected %d; stdout:\n%s\nstderr:\n%s", r->rc, rc, r->out, r->err);
	va_list ap;
	va_start(ap, rc);
	for (const char *want; (want = va_arg(ap, const char *));)
		if (!strstr(r->err, want))
			fail_msg("stderr lacks \"%s\":\n%s", want, r->err);
	va_end(ap);
}

/* ---- the store -------------------------------------------------------------- */
/* Both of domain domid's vgpu directories, as the stub dumps them ("" when
 * absent). */
static char *tree(uint32_t domid)
{
	char be[128], fe[128];
	snprintf(be, sizeof be, XGPU_XS_BACKEND_ROOT "/%u", domid);
	snprintf(fe, sizeof fe, "/local/domain/%u/device/vgpu", domid);
	char *a = xgpu_xenstub_dump(stub, be), *b = xgpu_xenstub_dump(stub, fe);
	size_t la = a ? strlen(a) : 0, lb = b ? strlen(b) : 0;
	char *t = malloc(la + lb + 1);
	assert_non_null(t);
	memcpy(t, a ? a : "", la);
	memcpy(t + la, b ? b : "", lb);
	t[la + lb] = '\0';
	free(a);
	free(b);
	return t;
}

static char *data_file(const char *name)
{
	static char p[PATH_MAX];
	snprintf(p, sizeof p, "%s/tests/data/xen/%s", src(), name);
	return p;
}

static void expect_tree(uint32_t domid, const char *expected_file)
{
	char want[8192];
	slurp(data_file(expected_file), want, sizeof want);
	assert_true(want[0]);
	char *got = tree(domid);
	static char copy[8192];
	xgpu_strlcpy(copy, got, sizeof copy);
	bool same = strcmp(got, want) == 0;
	free(got); /* before fail_msg, which does not return */
	if (!same)
		fail_msg("xenstore differs from %s\n--- got:\n%s--- expected:\n%s", expected_file, copy,
			 want);
}

static void expect_no_device(uint32_t domid)
{
	char *t = tree(domid);
	static char copy[8192];
	xgpu_strlcpy(copy, t, sizeof copy);
	free(t);
	if (copy[0])
		fail_msg("domain %u should have no vgpu nodes, has:\n%s", domid, copy);
}

/* path's value, or NULL (malloc'd). */
static char *get(const char *path)
{
	unsigned len;
	return xs->ops->read(xs, 0, path, &len);
}

static void expect_key(const char *path, const char *want)
{
	char *v = get(path);
	static char copy[512];
	xgpu_strlcpy(copy, v ? v : "(absent)", sizeof copy);
	bool same = v && !strcmp(v, want);
	free(v);
	if (!same)
		fail_msg("%s = %s, expected \"%s\"", path, copy, want);
}

static char *write_cfg(const char *name, const char *text)
{
	static char p[PATH_MAX + 64];
	snprintf(p, sizeof p, "%s/%s", dir, name);
	FILE *f = fopen(p, "w");
	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
	return p;
}

/* ---- attach ------------------------------------------------------------------ */
static void test_attach_sample(void **state)
{
	struct result *r = xl("attach", "5", data_file("sample.cfg"));
	expect_success(r);
	assert_non_null(strstr(r->out, "domain 5"));
	expect_tree(5, "sample.tree");
	/* Nothing else appears under the backend root. */
	unsigned n = 0;
	char **ents = xs->ops->directory(xs, 0, XGPU_XS_BACKEND_ROOT, &n);
	assert_non_null(ents);
	assert_int_equal(n, 1);
	assert_string_equal(ents[0], "5");
	free(ents);
}

static void test_attach_defaults(void **state)
{
	struct result *r = xl("attach", "5");
	expect_success(r);
	assert_non_null(strstr(r->out, "defaults"));
	assert_non_null(strstr(r->out, "no config file"));
	expect_tree(5, "defaults.tree");
	expect_success(xl("detach", "5", "-t", "0"));

	r = xl("attach", "5", data_file("nogpu.cfg"));
	expect_success(r);
	assert_non_null(strstr(r->out, "no gpu line"));
	expect_tree(5, "defaults.tree");
	expect_success(xl("detach", "5", "-t", "0"));

	/* An empty list and a blank entry also mean the defaults. */
	expect_success(xl("attach", "5", write_cfg("empty.cfg", "name = \"g\"\ngpu = [ ]\n")));
	expect_tree(5, "defaults.tree");
	expect_success(xl("detach", "5", "-t", "0"));
	expect_success(xl("attach", "5", write_cfg("blank.cfg", "gpu = [ \"\" ]\n")));
	expect_tree(5, "defaults.tree");
}

static void test_attach_bad_configs(void **state)
{
	char *p = write_cfg("unknown.cfg", "name = \"g\"\ngpu = [ \"gpus=0, colour=blue\" ]\n");
	expect_refused(xl("attach", "5", p), 1, p, "gpu[0]", "'colour'", NULL);
	p = write_cfg("credit.cfg", "gpu = [ \"credit=0\" ]\n");
	expect_refused(xl("attach", "5", p), 1, p, "credit=0", "1 to 65535", NULL);
	p = write_cfg("mem.cfg", "gpu = [ \"mem=12Q\" ]\n");
	expect_refused(xl("attach", "5", p), 1, "mem=12Q", NULL);
	p = write_cfg("gpus.cfg", "gpu = [ \"gpus=3-1\" ]\n");
	expect_refused(xl("attach", "5", p), 1, "gpus=3-1", NULL);
	p = write_cfg("name.cfg", "gpu = [ \"name=x\" ]\n");
	expect_refused(xl("attach", "5", p), 1, "'name'", NULL);
	p = write_cfg("two.cfg", "gpu = [ \"gpus=0\", \"gpus=1\" ]\n");
	expect_refused(xl("attach", "5", p), 1, p, "2 entries", NULL);
	p = write_cfg("notlist.cfg", "gpu = \"gpus=0\"\n");
	expect_refused(xl("attach", "5", p), 1, p, "list", NULL);
	p = write_cfg("syntax.cfg", "gpu = [ \"gpus=0\" \n");
	expect_refused(xl("attach", "5", p), 1, p, NULL);
	expect_refused(xl("attach", "5", "/nonexistent/dom.cfg"), 1, "/nonexistent/dom.cfg", NULL);
	expect_no_device(5);
}

static void test_attach_bad_domains(void **state)
{
	expect_refused(xl("attach", "9", data_file("sample.cfg")), 1, "domain 9 does not exist", NULL);
	expect_no_device(9);
	expect_refused(xl("attach", "0"), 1, "dom0", NULL);
	expect_no_device(0);
	expect_refused(xl("attach", "guest5"), 1, "'guest5'", NULL);
	expect_refused(xl("attach", "99999"), 1, "'99999'", NULL);
	expect_refused(xl("attach"), 2, "usage", NULL);
	expect_refused(xl("--local", "attach", "5"), 2, "--local", NULL);
	expect_no_device(5);
}

static void test_attach_twice(void **state)
{
	expect_success(xl("attach", "5", data_file("sample.cfg")));
	expect_refused(xl("attach", "5"), 1, "domain 5 already has a GPU device", "xl-gpu detach 5", NULL);
	expect_tree(5, "sample.tree");
}

/* The write is one transaction: conflicts are retried, and a transaction
 * that never commits leaves nothing behind. */
static void test_attach_conflicts(void **state)
{
	xgpu_xenstub_fail_transactions(stub, 3);
	expect_success(xl("attach", "5", data_file("sample.cfg")));
	expect_tree(5, "sample.tree");

	assert_int_equal(xgpu_xenstub_introduce(stub, 6, "guest6"), 0);
	xgpu_xenstub_fail_transactions(stub, 1000);
	expect_refused(xl("attach", "6"), 1, "conflicting", NULL);
	expect_no_device(6);
}

/* ---- detach ------------------------------------------------------------------ */
/* A stand-in for xgpud: answers the backend's Closing with Closed. */
struct fake_xgpud {
	pthread_t thread;
	atomic_bool stop;
	atomic_bool saw_closing;
};

static void *fake_xgpud_main(void *arg)
{
	struct fake_xgpud *f = arg;
	char err[256];
	struct xgpu_xs *x = xgpu_xs_open_stub(sock, 0, err, sizeof err);
	if (!x)
		return NULL;
	const char *state = XGPU_XS_BACKEND_ROOT "/5/0/state";
	x->ops->watch(x, state, "fake");
	int fd = x->ops->watch_fd(x);
	while (!atomic_load(&f->stop)) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		poll(&p, 1, 50);
		char *wp, *wt;
		while (x->ops->read_watch(x, &wp, &wt) == 0) {
			free(wp);
			free(wt);
		}
		uint64_t v;
		if (xgpu_xs_read_u64(x, 0, state, 64, &v) == 0 && v == XGPU_XB_CLOSING) {
			atomic_store(&f->saw_closing, true);
			xgpu_xs_printf(x, 0, state, "%d", XGPU_XB_CLOSED);
		}
	}
	x->ops->close(x);
	return NULL;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void test_detach_acknowledged(void **state)
{
	expect_success(xl("attach", "5", data_file("sample.cfg")));
	struct fake_xgpud f = {.stop = false, .saw_closing = false};
	assert_int_equal(pthread_create(&f.thread, NULL, fake_xgpud_main, &f), 0);
	double t0 = now_s();
	struct result *r = xl("detach", "5");
	double took = now_s() - t0;
	atomic_store(&f.stop, true);
	pthread_join(f.thread, NULL);
	expect_success(r);
	assert_true(atomic_load(&f.saw_closing));
	if (strstr(r->err, "warning"))
		fail_msg("unexpected warning:\n%s", r->err);
	assert_true(took < 5.0);
	expect_no_device(5);
	/* Attachable again. */
	expect_success(xl("attach", "5"));
}

static void test_detach_unacknowledged(void **state)
{
	expect_success(xl("attach", "5", data_file("sample.cfg")));
	double t0 = now_s();
	struct result *r = xl("detach", "5", "-t", "1");
	double took = now_s() - t0;
	expect_success(r);
	assert_non_null(strstr(r->err, "xgpud did not acknowledge"));
	assert_true(took >= 0.9 && took < 5.0);
	expect_no_device(5);
}

static void test_detach_errors(void **state)
{
	expect_refused(xl("detach", "5"), 1, "domain 5 has no GPU device", NULL);
	expect_refused(xl("detach", "5", "-t", "x"), 2, "-t x", NULL);
	expect_refused(xl("detach", "5", "-t", "99999"), 2, "-t 99999", NULL);
	expect_refused(xl("detach"), 2, "which domain", NULL);
	expect_refused(xl("detach", "0"), 1, "dom0", NULL);
}

/* ---- credit and policy ------------------------------------------------------- */
#define BE5 XGPU_XS_BACKEND_ROOT "/5/0"

static void test_credit_xen(void **state)
{
	expect_success(xl("attach", "5", data_file("sample.cfg")));
	struct result *r = xl("credit", "5", "-w", "700", "-s", "0.25");
	expect_success(r);
	assert_non_null(strstr(r->out, "guest5"));
	assert_non_null(strstr(r->out, "700"));
	expect_key(BE5 "/credit", "700");
	expect_key(BE5 "/sla", "0.25");
	/* By Xen name; an explicit --xen; the keys keep the guest's read access. */
	expect_success(xl("--xen", "credit", "guest5", "-w", "800"));
	expect_key(BE5 "/credit", "800");
	expect_key(BE5 "/sla", "0.25");
	char *t = tree(5);
	bool kept =
	    strstr(t, BE5 "/credit = \"800\" (n0,r5)\n") && strstr(t, BE5 "/sla = \"0.25\" (n0,r5)\n");
	free(t);
	assert_true(kept);
	/* Showing changes nothing. */
	r = xl("credit", "guest5");
	expect_success(r);
	assert_non_null(strstr(r->out, "800"));

	expect_refused(xl("credit", "5", "-w", "0"), 2, "-w 0", NULL);
	expect_refused(xl("credit", "5", "-w", "65536"), 2, "-w 65536", NULL);
	expect_refused(xl("credit", "5", "-s", "1.5"), 2, "-s 1.5", NULL);
	expect_refused(xl("credit", "5", "-s", "nan"), 2, "-s nan", NULL);
	expect_key(BE5 "/credit", "800");
	expect_key(BE5 "/sla", "0.25");

	expect_refused(xl("credit", "nosuch", "-w", "5"), 1, "'nosuch'", NULL);
	assert_int_equal(xgpu_xenstub_introduce(stub, 6, "guest6"), 0);
	expect_refused(xl("credit", "guest6", "-w", "5"), 1, "domain 6 has no GPU device", NULL);
	expect_no_device(6);
	/* Names are the guests' to write: a second "guest5" makes the name
	 * ambiguous, and control characters are not printed. */
	assert_int_equal(xs->ops->write(xs, 0, "/local/domain/6/name", "guest5", 6), 0);
	expect_refused(xl("credit", "guest5"), 1, "'guest5'", "5 and 6", NULL);
	assert_int_equal(xs->ops->write(xs, 0, "/local/domain/5/name", "ev\033[2Jil", 9), 0);
	r = xl("credit", "5");
	expect_success(r);
	assert_null(strchr(r->out, '\033'));
	assert_non_null(strstr(r->out, "ev?[2Jil"));
	/* --local goes to the (absent) daemon and leaves xenstore alone. */
	expect_refused(xl("--local", "credit", "5", "-w", "9"), 1, "cannot reach xgpud", NULL);
	expect_key(BE5 "/credit", "800");
}

#define GPU1_POLICY XGPU_XS_BACKEND_ROOT "/gpu/1/policy"

static void test_policy_xen(void **state)
{
	struct result *r = xl("policy");
	expect_success(r);
	assert_non_null(strstr(r->out, "default"));
	expect_success(xl("policy", "xc"));
	expect_key(XGPU_XS_POLICY, "xc");
	expect_success(xl("policy", "rr", "-g", "1"));
	expect_key(GPU1_POLICY, "rr");
	expect_key(XGPU_XS_POLICY, "xc");
	r = xl("policy");
	expect_success(r);
	assert_non_null(strstr(r->out, "all GPUs: xc\n"));
	assert_non_null(strstr(r->out, "GPU 1: rr\n"));
	r = xl("policy", "-g", "2");
	expect_success(r);
	assert_non_null(strstr(r->out, "GPU 2: xc\n"));

	expect_refused(xl("policy", "bogus"), 1, "'bogus'", "wfq", NULL);
	expect_refused(xl("policy", "xc", "-g", "x"), 2, "-g x", NULL);
	expect_key(XGPU_XS_POLICY, "xc");
	expect_key(GPU1_POLICY, "rr");

	/* Every GPU: the per-GPU choice goes. */
	expect_success(xl("policy", "wfq"));
	expect_key(XGPU_XS_POLICY, "wfq");
	char *v = get(GPU1_POLICY);
	assert_null(v);
}

/* ---- create ------------------------------------------------------------------ */
static const char fake_xl[] =
    "#!/bin/sh\n"
    "echo \"$*\" >> \"$FAKE_XL_LOG\"\n"
    "case \"$1\" in\n"
    "create) exit \"${FAKE_XL_CREATE_RC:-0}\" ;;\n"
    "domid) case \"$2\" in guest7) echo 7 ;; guest8) echo 8 ;; *) exit 1 ;; esac ;;\n"
    "*) exit 1 ;;\n"
    "esac\n";

static void test_create(void **state)
{
	char *xlp = strdup(write_cfg("xl", fake_xl));
	assert_int_equal(chmod(xlp, 0700), 0);
	char env_xl[PATH_MAX + 8], env_log[PATH_MAX + 32], logp[PATH_MAX + 16];
	snprintf(env_xl, sizeof env_xl, "XL=%s", xlp);
	snprintf(logp, sizeof logp, "%s/xl.log", dir);
	snprintf(env_log, sizeof env_log, "FAKE_XL_LOG=%s", logp);
	const char *env[] = {env_xl, env_log, NULL};
	char log[4096], want[PATH_MAX + 64];

	/* What xl create would have built. */
	assert_int_equal(xgpu_xenstub_introduce(stub, 7, "guest7"), 0);
	char *cfg = strdup(write_cfg("g7.cfg", "name = \"guest7\"\nmemory = 256\n"
					       "gpu = [ \"gpus=1, credit=100\" ]\n"));
	struct result *r = xl_env(env, "create", cfg, "-p", "extra=1");
	expect_success(r);
	slurp(logp, log, sizeof log);
	snprintf(want, sizeof want, "create %s -p extra=1\ndomid guest7\n", cfg);
	assert_string_equal(log, want);
	expect_key(XGPU_XS_BACKEND_ROOT "/7/0/gpus", "1");
	expect_key(XGPU_XS_BACKEND_ROOT "/7/0/credit", "100");
	expect_key("/local/domain/7/device/vgpu/0/state", "1");
	unlink(logp);

	/* VAR=VALUE arguments override the file, for xl and for xl-gpu. */
	expect_success(xl("detach", "7", "-t", "0"));
	char *other = strdup(write_cfg("other.cfg", "name = \"other\"\ngpu = [ \"credit=1\" ]\n"));
	expect_success(xl_env(env, "create", other, "name=\"guest7\"", "-q", "gpu=[\"credit=9\"]"));
	slurp(logp, log, sizeof log);
	snprintf(want, sizeof want, "create %s name=\"guest7\" -q gpu=[\"credit=9\"]\ndomid guest7\n", other);
	assert_string_equal(log, want);
	expect_key(XGPU_XS_BACKEND_ROOT "/7/0/credit", "9");
	expect_refused(xl_env(env, "create", other, "gpu=[\"credit=0\"]"), 1, "credit=0", NULL);
	free(other);
	unlink(logp);

	/* A bad gpu line stops everything before xl runs. */
	char *bad = write_cfg("bad.cfg", "name = \"guest7\"\ngpu = [ \"credit=1, speed=9\" ]\n");
	expect_refused(xl_env(env, "create", bad), 1, "'speed'", NULL);
	assert_int_equal(access(logp, F_OK), -1);
	bad = write_cfg("noname.cfg", "gpu = [ \"credit=1\" ]\n");
	expect_refused(xl_env(env, "create", bad), 1, "no name", NULL);
	assert_int_equal(access(logp, F_OK), -1);

	/* xl create fails: nothing to attach to. */
	const char *env_fail[] = {env_xl, env_log, "FAKE_XL_CREATE_RC=3", NULL};
	char *c8 = strdup(write_cfg("g8.cfg", "name = \"guest8\"\n"));
	expect_refused(xl_env(env_fail, "create", c8), 1, "exit status 3", NULL);
	slurp(logp, log, sizeof log);
	assert_null(strstr(log, "domid"));
	unlink(logp);

	/* The domain was created but the attach fails (domain 8 is not
	 * there): the domain is left alone and the user told how to remove it. */
	expect_refused(xl_env(env, "create", c8), 1, "domain 8 does not exist", "still running",
		       "destroy guest8", NULL);
	expect_no_device(8);

	/* No such xl. */
	const char *env_noxl[] = {"XL=/nonexistent/xl", NULL};
	expect_refused(xl_env(env_noxl, "create", cfg), 1, "/nonexistent/xl", NULL);
	free(c8);
	free(cfg);
	free(xlp);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_attach_sample, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_attach_defaults, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_attach_bad_configs, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_attach_bad_domains, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_attach_twice, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_attach_conflicts, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_detach_acknowledged, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_detach_unacknowledged, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_detach_errors, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_credit_xen, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_policy_xen, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_create, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
