/* SPDX-License-Identifier: Apache-2.0 */
/* test_xenif_real.c - the real-Xen side of xenif.h where there is no Xen:
 * every real open fails with a message naming its device node and what to
 * do, without libxen printing anything of its own; without XGPU_XEN_STUB the
 * environment picks real Xen, and a bad XGPU_XEN_DOMID is refused before any
 * stub is tried (the stub side is test_xenstub's open_by_environment); and
 * the xenstore helpers: xgpu_xs_read_u64's strict parser (good values,
 * junk, signs, overflow, above max, absent) and xgpu_xs_printf, through a
 * small fake xenstore implemented here. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "util.h"
#include "xenif.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static bool have_xen(void)
{
	struct stat st;
	return stat("/dev/xen", &st) == 0;
}

/* ---- real opens without a hypervisor ----------------------------------------- */

/* Runs fn with stderr sent to a file; returns how many bytes it wrote. */
static long stderr_bytes_during(void (*fn)(void))
{
	char tmpl[] = "/tmp/test_xenif_real.stderr.XXXXXX";
	int fd = mkstemp(tmpl);
	assert_true(fd >= 0);
	unlink(tmpl);
	fflush(stderr);
	int saved = dup(STDERR_FILENO);
	assert_true(saved >= 0);
	assert_int_equal(dup2(fd, STDERR_FILENO), STDERR_FILENO);
	fn();
	fflush(stderr);
	assert_int_equal(dup2(saved, STDERR_FILENO), STDERR_FILENO);
	close(saved);
	long n = (long)lseek(fd, 0, SEEK_END);
	close(fd);
	return n;
}

static char msgs[4][512];

static void open_all_real(void)
{
	struct xgpu_xs *xs = xgpu_xs_open_real(msgs[0], sizeof msgs[0]);
	int e0 = errno;
	struct xgpu_evtchn *ev = xgpu_evtchn_open_real(msgs[1], sizeof msgs[1]);
	int e1 = errno;
	struct xgpu_gntshr *gs = xgpu_gntshr_open_real(msgs[2], sizeof msgs[2]);
	int e2 = errno;
	struct xgpu_gnttab *gt = xgpu_gnttab_open_real(msgs[3], sizeof msgs[3]);
	int e3 = errno;
	assert_null(xs);
	assert_null(ev);
	assert_null(gs);
	assert_null(gt);
	assert_int_not_equal(e0, 0);
	assert_int_not_equal(e1, 0);
	assert_int_not_equal(e2, 0);
	assert_int_not_equal(e3, 0);
}

static void real_opens_name_the_missing_device(void **state)
{
	if (have_xen()) {
		print_message("[ SKIPPED  ] /dev/xen exists: this host runs on Xen, the no-hypervisor "
			      "messages cannot be checked here\n");
		skip();
	}
	unsetenv("XENSTORED_PATH");
	memset(msgs, 0, sizeof msgs);
	/* libxen's default logger writes to stderr; ours must keep it quiet. */
	assert_int_equal(stderr_bytes_during(open_all_real), 0);
	print_message("xenstore: %s\nevtchn: %s\ngntshr: %s\ngnttab: %s\n", msgs[0], msgs[1], msgs[2],
		      msgs[3]);

	assert_non_null(strstr(msgs[0], "/run/xenstored/socket"));
	assert_non_null(strstr(msgs[0], "/dev/xen/xenbus"));
	assert_non_null(strstr(msgs[0], "xenfs"));
	assert_non_null(strstr(msgs[0], "Xen domain"));

	assert_non_null(strstr(msgs[1], "/dev/xen/evtchn does not exist"));
	assert_non_null(strstr(msgs[1], "modprobe xen-evtchn"));
	assert_non_null(strstr(msgs[1], "not running in a Xen domain"));

	assert_non_null(strstr(msgs[2], "/dev/xen/gntalloc does not exist"));
	assert_non_null(strstr(msgs[2], "modprobe xen-gntalloc"));

	assert_non_null(strstr(msgs[3], "/dev/xen/gntdev does not exist"));
	assert_non_null(strstr(msgs[3], "modprobe xen-gntdev"));

	/* A tiny error buffer truncates; it never overflows. */
	char small[8];
	memset(small, 'x', sizeof small);
	assert_null(xgpu_evtchn_open_real(small, sizeof small));
	assert_int_equal(small[7], '\0');
}

/* XENSTORED_PATH moves xenstored's socket; the message follows it. */
static void real_xs_open_names_xenstored_path(void **state)
{
	if (have_xen())
		skip();
	setenv("XENSTORED_PATH", "/nonexistent/xgpu-test/xenstored.sock", 1);
	char err[512] = "";
	assert_null(xgpu_xs_open_real(err, sizeof err));
	unsetenv("XENSTORED_PATH");
	assert_non_null(strstr(err, "/nonexistent/xgpu-test/xenstored.sock"));
	assert_non_null(strstr(err, "/dev/xen/xenbus"));
}

/* ---- choosing by environment --------------------------------------------------- */

static int env_reset(void **state)
{
	unsetenv("XGPU_XEN_STUB");
	unsetenv("XGPU_XEN_DOMID");
	return 0;
}

static void env_without_stub_is_real_xen(void **state)
{
	assert_false(xgpu_xen_stub_selected());
	setenv("XGPU_XEN_STUB", "", 1);
	assert_false(xgpu_xen_stub_selected());
	/* XGPU_XEN_DOMID means nothing without a stub: Xen says who we are. */
	setenv("XGPU_XEN_DOMID", "junk", 1);
	if (!have_xen()) {
		char err[512] = "";
		assert_null(xgpu_evtchn_open(err, sizeof err));
		assert_non_null(strstr(err, "/dev/xen/evtchn"));
		assert_null(xgpu_gnttab_open(err, sizeof err));
		assert_non_null(strstr(err, "/dev/xen/gntdev"));
		assert_null(xgpu_gntshr_open(err, sizeof err));
		assert_non_null(strstr(err, "/dev/xen/gntalloc"));
		assert_null(xgpu_xs_open(err, sizeof err));
		assert_non_null(strstr(err, "/dev/xen/xenbus"));
	}
}

static void env_bad_domid_is_refused(void **state)
{
	setenv("XGPU_XEN_STUB", "/run/xgpu/stub.sock", 1);
	const char *bad[] = {"-1",         "+1",  " 1",    "1 ",    "1x",
			     "0x10",       "1e3", "32752", "65535", "99999999999999999999",
			     "4294967297", "1.0", "\t3"};
	for (size_t i = 0; i < XGPU_ARRAY_SIZE(bad); i++) {
		char err[256] = "";
		setenv("XGPU_XEN_DOMID", bad[i], 1);
		errno = 0;
		assert_null(xgpu_xs_open(err, sizeof err));
		assert_int_equal(errno, EINVAL);
		assert_non_null(strstr(err, "XGPU_XEN_DOMID"));
		assert_non_null(strstr(err, bad[i]));
		/* Refused before the (absent) stub socket is tried. */
		assert_null(strstr(err, "stub.sock"));
		assert_null(xgpu_evtchn_open(err, sizeof err));
		assert_non_null(strstr(err, "XGPU_XEN_DOMID"));
		assert_null(xgpu_gntshr_open(err, sizeof err));
		assert_non_null(strstr(err, "XGPU_XEN_DOMID"));
		assert_null(xgpu_gnttab_open(err, sizeof err));
		assert_non_null(strstr(err, "XGPU_XEN_DOMID"));
	}
}

/* ---- helpers over a fake xenstore ----------------------------------------------- */

struct fake_xs {
	struct xgpu_xs base;
	const char *value; /* NULL: absent */
	unsigned value_len;
	int read_errno;
	xgpu_xs_tx last_tx;
	char last_path[128];
	char written[8192];
	unsigned written_len, writes;
	bool write_fails;
};

static char *fake_read(struct xgpu_xs *xs, xgpu_xs_tx tx, const char *path, unsigned *len)
{
	struct fake_xs *f = (struct fake_xs *)xs;
	f->last_tx = tx;
	snprintf(f->last_path, sizeof f->last_path, "%s", path);
	if (!f->value) {
		errno = f->read_errno;
		return NULL;
	}
	char *s = malloc(f->value_len + 1);
	assert_non_null(s);
	memcpy(s, f->value, f->value_len);
	s[f->value_len] = '\0';
	*len = f->value_len;
	return s;
}

static int fake_write(struct xgpu_xs *xs, xgpu_xs_tx tx, const char *path, const void *data, unsigned len)
{
	struct fake_xs *f = (struct fake_xs *)xs;
	f->writes++;
	f->last_tx = tx;
	snprintf(f->last_path, sizeof f->last_path, "%s", path);
	if (f->write_fails) {
		errno = EACCES;
		return -1;
	}
	assert_true(len <= sizeof f->written);
	memcpy(f->written, data, len);
	f->written_len = len;
	return 0;
}

static const struct xgpu_xs_ops fake_ops = {.read = fake_read, .write = fake_write};

static int read_with(struct fake_xs *f, const char *v, unsigned len, uint64_t max, uint64_t *out)
{
	f->value = v;
	f->value_len = len;
	*out = 0xdeadbeef;
	errno = 0;
	return xgpu_xs_read_u64(&f->base, 5, "backend/vgpu/3/0/credit", max, out);
}

static void read_u64_accepts_plain_decimals(void **state)
{
	struct fake_xs f = {.base.ops = &fake_ops};
	uint64_t v;
	const struct {
		const char *s;
		uint64_t max, want;
	} good[] = {
	    {"0", 0, 0},
	    {"42", 100, 42},
	    {"100", 100, 100},
	    {"00042", 100, 42},
	    {"256", UINT64_MAX, 256},
	    {"18446744073709551615", UINT64_MAX, UINT64_MAX},
	    {"4294967296", UINT64_MAX, 4294967296ull},
	};
	for (size_t i = 0; i < XGPU_ARRAY_SIZE(good); i++) {
		assert_int_equal(read_with(&f, good[i].s, (unsigned)strlen(good[i].s), good[i].max, &v), 0);
		assert_true(v == good[i].want);
	}
	assert_int_equal(f.last_tx, 5);
	assert_string_equal(f.last_path, "backend/vgpu/3/0/credit");
}

static void read_u64_refuses_junk_signs_overflow_and_above_max(void **state)
{
	struct fake_xs f = {.base.ops = &fake_ops};
	uint64_t v;
	const struct {
		const char *s;
		uint64_t max;
	} bad[] = {
	    {"", 100},
	    {"-1", 100},
	    {"+1", 100},
	    {" 1", 100},
	    {"1 ", 100},
	    {"1\n", 100},
	    {"0x10", 100},
	    {"1e3", 10000},
	    {"12a", 1000},
	    {"1.5", 100},
	    {"101", 100},
	    {"1", 0},
	    {"4294967296", UINT32_MAX},
	    {"18446744073709551616", UINT64_MAX},
	    {"99999999999999999999", UINT64_MAX},
	    {"000000000000000000000000000000001", UINT64_MAX}, /* 33 characters */
	    {"١", 100},                                        /* a digit, but not ASCII */
	};
	for (size_t i = 0; i < XGPU_ARRAY_SIZE(bad); i++) {
		assert_int_equal(read_with(&f, bad[i].s, (unsigned)strlen(bad[i].s), bad[i].max, &v), -1);
		assert_int_equal(errno, EINVAL);
		assert_true(v == 0xdeadbeef);
	}
	/* A NUL inside: "1" is not the value, "1\0" "2" is. */
	assert_int_equal(read_with(&f, "1\0002", 3, 100, &v), -1);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(read_with(&f, "7\0", 2, 100, &v), -1);
	assert_int_equal(errno, EINVAL);
	assert_true(v == 0xdeadbeef);
}

static void read_u64_absent_is_enoent(void **state)
{
	struct fake_xs f = {.base.ops = &fake_ops, .read_errno = ENOENT};
	uint64_t v = 9;
	assert_int_equal(read_with(&f, NULL, 0, 100, &v), -1);
	assert_int_equal(errno, ENOENT);
	assert_true(v == 0xdeadbeef);
	/* Other read errors come through as they are. */
	f.read_errno = EACCES;
	assert_int_equal(read_with(&f, NULL, 0, 100, &v), -1);
	assert_int_equal(errno, EACCES);
}

static void printf_writes_exact_bytes(void **state)
{
	struct fake_xs f = {.base.ops = &fake_ops};
	assert_int_equal(xgpu_xs_printf(&f.base, 9, "device/vgpu/0/channel/3/ring-ref", "%u", 12345u), 0);
	assert_int_equal(f.written_len, 5);
	assert_memory_equal(f.written, "12345", 5);
	assert_int_equal(f.last_tx, 9);
	assert_string_equal(f.last_path, "device/vgpu/0/channel/3/ring-ref");

	assert_int_equal(xgpu_xs_printf(&f.base, 0, "x", "%s", ""), 0);
	assert_int_equal(f.written_len, 0);

	/* Larger than one xenstore value: refused before any write. */
	char big[5000];
	memset(big, 'a', sizeof big - 1);
	big[sizeof big - 1] = '\0';
	unsigned writes = f.writes;
	errno = 0;
	assert_int_equal(xgpu_xs_printf(&f.base, 0, "x", "%s", big), -1);
	assert_int_equal(errno, E2BIG);
	assert_int_equal(f.writes, writes);
	big[4096] = '\0';
	assert_int_equal(xgpu_xs_printf(&f.base, 0, "x", "%s", big), 0);
	assert_int_equal(f.written_len, 4096);

	f.write_fails = true;
	errno = 0;
	assert_int_equal(xgpu_xs_printf(&f.base, 0, "x", "%d", -3), -1);
	assert_int_equal(errno, EACCES);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(real_opens_name_the_missing_device),
	    cmocka_unit_test(real_xs_open_names_xenstored_path),
	    cmocka_unit_test_setup(env_without_stub_is_real_xen, env_reset),
	    cmocka_unit_test_setup(env_bad_domid_is_refused, env_reset),
	    cmocka_unit_test(read_u64_accepts_plain_decimals),
	    cmocka_unit_test(read_u64_refuses_junk_signs_overflow_and_above_max),
	    cmocka_unit_test(read_u64_absent_is_enoent),
	    cmocka_unit_test(printf_writes_exact_bytes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
