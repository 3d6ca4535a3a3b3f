/* SPDX-License-Identifier: Apache-2.0 */
/* test_gpuspec.c - the GPU spec parser and formatter: every key at both ends
 * of its range and one past them, the syntax of items and GPU lists, the
 * exact wording of errors (they are what an administrator sees), and that
 * the canonical form parses back to the same spec. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "gpuspec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct xgpu_gpuspec parse_ok(const char *text, unsigned flags)
{
	struct xgpu_gpuspec s;
	char err[256] = "";
	int rc = xgpu_gpuspec_parse(text, flags, &s, err, sizeof err);
	if (rc)
		fail_msg("'%s' was refused: %s", text, err);
	assert_string_equal(err, "");
	return s;
}

/* Parses text expecting a refusal whose message contains every `want`
 * string (NULL-terminated list), and checks *out is left zeroed. */
static void parse_bad(const char *text, unsigned flags, ...)
{
	struct xgpu_gpuspec s, zero;
	memset(&s, 0x5a, sizeof s);
	memset(&zero, 0, sizeof zero);
	char err[512] = "";
	if (xgpu_gpuspec_parse(text, flags, &s, err, sizeof err) == 0)
		fail_msg("'%s' was accepted", text);
	assert_memory_equal(&s, &zero, sizeof s);
	va_list ap;
	va_start(ap, flags);
	for (const char *want; (want = va_arg(ap, const char *));)
		if (!strstr(err, want))
			fail_msg("'%s': error '%s' does not contain '%s'", text, err, want);
	va_end(ap);
}

static void error_is(const char *text, unsigned flags, const char *want)
{
	struct xgpu_gpuspec s;
	char err[512] = "";
	assert_int_equal(xgpu_gpuspec_parse(text, flags, &s, err, sizeof err), -1);
	assert_string_equal(err, want);
}

static void every_key(void **state)
{
	struct xgpu_gpuspec s = parse_ok("gpus=0, credit=512, sla=0.5, mem=4G", 0);
	assert_true(s.has_gpus && s.has_credit && s.has_sla && s.has_mem);
	assert_int_equal(s.gpus, 1);
	assert_int_equal(s.credit, 512);
	assert_true(s.sla == 0.5);
	assert_int_equal(s.mem, 4ull << 30);
	assert_int_equal(s.ntasks, 0);
	assert_string_equal(s.name, "");

	s = parse_ok("name=uid-1000, credit=1024, sla=0.5, gpus=0, mem=4G, task.2=512, task.7=3",
		     XGPU_GPUSPEC_ALLOW_NAME);
	assert_string_equal(s.name, "uid-1000");
	assert_int_equal(s.ntasks, 2);
	assert_int_equal(s.tasks[0].task, 2);
	assert_int_equal(s.tasks[0].weight, 512);
	assert_int_equal(s.tasks[1].task, 7);
	assert_int_equal(s.tasks[1].weight, 3);

	/* Only what is given is marked given. */
	s = parse_ok("credit=7", 0);
	assert_true(s.has_credit);
	assert_false(s.has_gpus || s.has_sla || s.has_mem);
	assert_int_equal(s.credit, 7);
}

static void whitespace_around_items_keys_and_values(void **state)
{
	struct xgpu_gpuspec s = parse_ok("  gpus = 1:3 ,credit=9\t,\tsla= 1 ,mem =1M  ", 0);
	assert_int_equal(s.gpus, 0xa);
	assert_int_equal(s.credit, 9);
	assert_true(s.sla == 1.0);
	assert_int_equal(s.mem, 1u << 20);
}

static void blank_spec_sets_nothing(void **state)
{
	struct xgpu_gpuspec zero;
	memset(&zero, 0, sizeof zero);
	struct xgpu_gpuspec s = parse_ok("", 0);
	assert_memory_equal(&s, &zero, sizeof s);
	s = parse_ok(" \t ", XGPU_GPUSPEC_ALLOW_NAME);
	assert_memory_equal(&s, &zero, sizeof s);
}

static void gpus_syntax(void **state)
{
	static const struct {
		const char *v;
		uint64_t mask;
	} ok[] = {
	    {"all", UINT64_MAX},      {"0", 1},
	    {"63", 1ull << 63},       {"0:2-3", 0xd},
	    {"2-3:0", 0xd},           {"0-63", UINT64_MAX},
	    {"5-5", 1u << 5},         {"1:1", 2},
	    {"0-2:1-4", 0x1f},        {"007", 1u << 7},
	    {"0:63", 1 | 1ull << 63},
	};
	for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
		char text[64];
		snprintf(text, sizeof text, "gpus=%s", ok[i].v);
		struct xgpu_gpuspec s = parse_ok(text, 0);
		assert_true(s.has_gpus);
		assert_int_equal(s.gpus, ok[i].mask);
	}
	static const char *const bad[] = {
	    "64",  "-1",   "3-1",   "0::1", ":0",    "0:", "1-", "-",   "a",
	    "0x1", "0 :1", "1-2-3", "ALL",  "all:0", "",   "+1", "1.0", "99999999999999999999"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		char text[64], want[64];
		snprintf(text, sizeof text, "gpus=%s", bad[i]);
		snprintf(want, sizeof want, "gpus=%s: ", bad[i]);
		parse_bad(text, 0, want, "0 to 63", "e.g. 0:2-3", NULL);
	}
	error_is(
	    "gpus=64", 0,
	    "gpus=64: gpus must be 'all' or GPU indexes from 0 to 63, single or as ranges I-J with I <= J, "
	    "joined with ':' (e.g. 0:2-3)");
}

static void credit_range(void **state)
{
	assert_int_equal(parse_ok("credit=1", 0).credit, 1);
	assert_int_equal(parse_ok("credit=65535", 0).credit, 65535);
	assert_int_equal(parse_ok("credit=00512", 0).credit, 512);
	error_is("credit=0", 0, "credit=0: credit must be a whole number from 1 to 65535");
	error_is("credit=65536", 0, "credit=65536: credit must be a whole number from 1 to 65535");
	static const char *const bad[] = {"-1",  "+5",   "5x",  "",
					  "1.0", "0x10", "1 2", "99999999999999999999999"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		char text[64], want[64];
		snprintf(text, sizeof text, "credit=%s", bad[i]);
		snprintf(want, sizeof want, "credit=%s: ", bad[i]);
		parse_bad(text, 0, want, "from 1 to 65535", NULL);
	}
}

static void sla_range(void **state)
{
	static const struct {
		const char *v;
		double d;
	} ok[] = {{"0", 0},  {"1", 1},      {"0.5", 0.5}, {".5", 0.5},       {"1.0", 1},
		  {"0.", 0}, {"5e-1", 0.5}, {"1E0", 1},   {"0.000001", 1e-6}};
	for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
		char text[64];
		snprintf(text, sizeof text, "sla=%s", ok[i].v);
		struct xgpu_gpuspec s = parse_ok(text, 0);
		assert_true(s.has_sla);
		assert_true(s.sla == ok[i].d);
	}
	error_is("sla=1.01", 0, "sla=1.01: sla must be a number from 0 to 1 (e.g. 0.5)");
	static const char *const bad[] = {"-0.1", "nan", "inf",  "0x0.8", "0.5.5", "e5",    ".",   "",
					  "1e",   "2",   "+0.5", "0.5x",  " 0. 5", "1e400", "1e+1"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		char text[64], want[64];
		snprintf(text, sizeof text, "sla=%s", bad[i]);
		snprintf(want, sizeof want, "sla=%s: ", bad[i]);
		/* Leading blanks are trimmed before the value is judged. */
		if (bad[i][0] == ' ')
			snprintf(want, sizeof want, "sla=%s: ", bad[i] + 1);
		parse_bad(text, 0, want, "from 0 to 1", NULL);
	}
}

static void mem_range_and_units(void **state)
{
	static const struct {
		const char *v;
		uint64_t b;
	} ok[] = {
	    {"1M", 1ull << 20},    {"1048576", 1ull << 20},  {"1024K", 1ull << 20},
	    {"4G", 4ull << 30},    {"4GiB", 4ull << 30},     {"4gb", 4ull << 30},
	    {"1024T", 1ull << 50}, {"1536m", 1536ull << 20}, {"1048577", 1048577ull},
	    {"3t", 3ull << 40},    {"1048576B", 1ull << 20},
	};
	for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
		char text[64];
		snprintf(text, sizeof text, "mem=%s", ok[i].v);
		struct xgpu_gpuspec s = parse_ok(text, 0);
		assert_true(s.has_mem);
		assert_int_equal(s.mem, ok[i].b);
	}
	error_is("mem=1023K", 0,
		 "mem=1023K: mem must be a size from 1M to 1024T (K, M, G, T are binary units, e.g. 4G)");
	static const char *const bad[] = {
	    "1048575", "1025T", "0",   "4X",    "4 G",      "-4G", "+4G", "1P", "18446744073709551616",
	    "",        "G",     "4GG", "0x10M", "16777216T"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		char text[64], want[64];
		snprintf(text, sizeof text, "mem=%s", bad[i]);
		snprintf(want, sizeof want, "mem=%s: ", bad[i]);
		parse_bad(text, 0, want, "from 1M to 1024T", NULL);
	}
}

static void kernel_timeout_range(void **state)
{
	struct xgpu_gpuspec s = parse_ok("kernel-timeout=0", 0);
	assert_true(s.has_ktimeout);
	assert_int_equal(s.ktimeout, 0);
	s = parse_ok("kernel-timeout=86400", 0);
	assert_int_equal(s.ktimeout, 86400);
	s = parse_ok("credit=5, kernel-timeout=2", 0);
	assert_int_equal(s.ktimeout, 2);
	char buf[64];
	xgpu_gpuspec_format(&s, buf, sizeof buf);
	assert_string_equal(buf, "credit=5, kernel-timeout=2");
	error_is("kernel-timeout=1,kernel-timeout=2", 0,
		 "kernel-timeout=2: key 'kernel-timeout' given twice");
	static const char *const bad[] = {"86401", "-1", "2s", "", "1.5", "0x10", "18446744073709551617"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		char text[64], want[64];
		snprintf(text, sizeof text, "kernel-timeout=%s", bad[i]);
		snprintf(want, sizeof want, "kernel-timeout=%s: ", bad[i]);
		parse_bad(text, 0, want, "from 0 (none) to 86400", NULL);
	}
}

static void task_weights(void **state)
{
	struct xgpu_gpuspec s = parse_ok("task.0=1, task.4294967295=65535", 0);
	assert_int_equal(s.ntasks, 2);
	assert_int_equal(s.tasks[0].task, 0);
	assert_int_equal(s.tasks[0].weight, 1);
	assert_int_equal(s.tasks[1].task, UINT32_MAX);
	assert_int_equal(s.tasks[1].weight, 65535);

	parse_bad("task.4294967296=1", 0, "task.4294967296=1: ", "task id", "0 to 4294967295", NULL);
	parse_bad("task.=1", 0, "task.=1: ", "task id", NULL);
	parse_bad("task.x=1", 0, "task.x=1: ", "task id", NULL);
	parse_bad("task.-1=1", 0, "task.-1=1: ", "task id", NULL);
	error_is("task.1=0", 0, "task.1=0: a task weight must be a whole number from 1 to 65535");
	parse_bad("task.1=65536", 0, "task.1=65536: ", "1 to 65535", NULL);
	parse_bad("task.1=", 0, "task.1=: ", "1 to 65535", NULL);
	error_is("task.3=1, task.3=2", 0, "task.3=2: key 'task.3' given twice");
	/* 007 and 7 are the same task. */
	parse_bad("task.7=1, task.007=2", 0, "given twice", NULL);

	char text[1024];
	size_t n = 0;
	for (unsigned i = 0; i < XGPU_GPUSPEC_TASKS; i++)
		n += (size_t)snprintf(text + n, sizeof text - n, "%stask.%u=%u", i ? ", " : "", 100 + i,
				      i + 1);
	s = parse_ok(text, 0);
	assert_int_equal(s.ntasks, XGPU_GPUSPEC_TASKS);
	for (unsigned i = 0; i < XGPU_GPUSPEC_TASKS; i++) {
		assert_int_equal(s.tasks[i].task, 100 + i);
		assert_int_equal(s.tasks[i].weight, i + 1);
	}
	snprintf(text + n, sizeof text - n, ", task.1=1");
	parse_bad(text, 0, "task.1=1: too many task weights (at most 16)", NULL);
}

static void name_only_when_allowed(void **state)
{
	error_is("name=a", 0,
		 "unknown key 'name' (known: gpus, credit, sla, mem, kernel-timeout, task.<id>)");
	assert_string_equal(parse_ok("name=A.b:c_d-9", XGPU_GPUSPEC_ALLOW_NAME).name, "A.b:c_d-9");

	char text[128], name[80];
	memset(name, 'n', 63);
	name[63] = '\0';
	snprintf(text, sizeof text, "name=%s", name);
	assert_string_equal(parse_ok(text, XGPU_GPUSPEC_ALLOW_NAME).name, name);
	snprintf(text, sizeof text, "name=%sn", name);
	parse_bad(text, XGPU_GPUSPEC_ALLOW_NAME, "name=nnnn", "1 to 63 characters", NULL);

	error_is("name=", XGPU_GPUSPEC_ALLOW_NAME,
		 "name=: name must be 1 to 63 characters of A-Z a-z 0-9 _ . : -");
	parse_bad("name=a b", XGPU_GPUSPEC_ALLOW_NAME, "name=a b: ", NULL);
	parse_bad("name=a/b", XGPU_GPUSPEC_ALLOW_NAME, "name=a/b: ", NULL);
	parse_bad("name=\xc3\xa9", XGPU_GPUSPEC_ALLOW_NAME, "name=\xc3\xa9: ", NULL);
	error_is("name=a, name=b", XGPU_GPUSPEC_ALLOW_NAME, "name=b: key 'name' given twice");
}

static void remote_only_when_allowed(void **state)
{
	const unsigned R = XGPU_GPUSPEC_ALLOW_REMOTE;
	error_is("remote=h:1, remote-key=/k", 0,
		 "unknown key 'remote' (known: gpus, credit, sla, mem, kernel-timeout, task.<id>)");
	error_is("remote=h:1, remote-key=/k", XGPU_GPUSPEC_ALLOW_NAME,
		 "unknown key 'remote' (known: gpus, credit, sla, mem, kernel-timeout, task.<id>, name)");
	static const char *const good[] = {"gpuhost",        "gpuhost:7447", "10.0.0.5:1",   "10.0.0.5:65535",
					   "[fd00::5]:7447", "[::1]",        "a-b.c.example"};
	for (unsigned i = 0; i < sizeof good / sizeof *good; i++) {
		char text[320];
		snprintf(text, sizeof text, "credit=9, remote=%s, remote-key=/etc/xgpu/k.psk", good[i]);
		struct xgpu_gpuspec s = parse_ok(text, R);
		assert_string_equal(s.remote, good[i]);
		assert_string_equal(s.remote_key, "/etc/xgpu/k.psk");
		/* The canonical form carries both, and reads back the same. */
		char back[512];
		assert_true(xgpu_gpuspec_format(&s, back, sizeof back) < (int)sizeof back);
		struct xgpu_gpuspec again = parse_ok(back, R);
		assert_memory_equal(&s, &again, sizeof s);
	}
	static const char *const bad[] = {"h:0",      "h:65536", "h:",     ":7447", "fd00::5",
					  "[fd00::5", "[]:1",    "[::1]x", "h;rm",  "h/x:1",
					  "h:1 2",    "h:-1",    "h:0x10"};
	for (unsigned i = 0; i < sizeof bad / sizeof *bad; i++) {
		char text[320];
		snprintf(text, sizeof text, "remote=%s, remote-key=/k", bad[i]);
		parse_bad(text, R, "remote must be HOST, HOST:PORT or [IPV6]:PORT", NULL);
	}
	char text[600], host[300];
	memset(host, 'h', 264);
	host[264] = '\0';
	snprintf(text, sizeof text, "remote=%s, remote-key=/k", host);
	parse_bad(text, R, "remote must be", NULL);
	parse_bad("remote=h:1, remote-key=k.psk", R, "remote-key=k.psk: remote-key must be an absolute path",
		  NULL);
	error_is("remote=h:1", R,
		 "remote=h:1 needs remote-key=FILE, the GPU host's pre-shared key, or remote-cert=, "
		 "remote-cert-key= and remote-ca=");
	error_is("remote-key=/k", R, "remote-key=/k or remote-cert= is given without remote=HOST:PORT");
	error_is("remote=h:1, remote=h:2, remote-key=/k", R, "remote=h:2: key 'remote' given twice");
}

/* Certificates instead of a pre-shared key: all three files, never with a key. */
static void remote_certificates(void **state)
{
	const unsigned R = XGPU_GPUSPEC_ALLOW_REMOTE;
	struct xgpu_gpuspec s = parse_ok(
	    "remote=10.0.0.5:7447, remote-cert=/c.pem, remote-cert-key=/c.key, remote-ca=/ca.pem", R);
	assert_string_equal(s.remote_cert, "/c.pem");
	assert_string_equal(s.remote_cert_key, "/c.key");
	assert_string_equal(s.remote_ca, "/ca.pem");
	assert_string_equal(s.remote_key, "");
	char back[1024];
	assert_true(xgpu_gpuspec_format(&s, back, sizeof back) < (int)sizeof back);
	struct xgpu_gpuspec again = parse_ok(back, R);
	assert_memory_equal(&s, &again, sizeof s);
	error_is(
	    "remote=h:1, remote-cert=/c.pem, remote-ca=/ca.pem", R,
	    "remote-cert=, remote-cert-key= and remote-ca= go together (the domain's certificate, its key, "
	    "and the CA that signed the GPU host's)");
	error_is("remote=h:1, remote-key=/k, remote-cert=/c, remote-cert-key=/k2, remote-ca=/a", R,
		 "remote-key=/k and remote-cert=/c: a remote GPU takes a pre-shared key or certificates, not "
		 "both");
	error_is("remote-cert=/c, remote-cert-key=/k2, remote-ca=/a", R,
		 "remote-key= or remote-cert= is given without remote=HOST:PORT");
	parse_bad("remote=h:1, remote-cert=c.pem, remote-cert-key=/k, remote-ca=/a", R,
		  "remote-cert=c.pem: remote-cert must be an absolute path", NULL);
	error_is("remote=h:1, remote-ca=/a, remote-ca=/b", R, "remote-ca=/b: key 'remote-ca' given twice");
	parse_bad("remote-cert=/c", 0, "unknown key 'remote-cert'", NULL);
}

static void unknown_keys(void **state)
{
	error_is("foo=1", 0, "unknown key 'foo' (known: gpus, credit, sla, mem, kernel-timeout, task.<id>)");
	error_is("gpus=0, Credit=5", 0,
		 "unknown key 'Credit' (known: gpus, credit, sla, mem, kernel-timeout, task.<id>)");
	error_is("foo=1", XGPU_GPUSPEC_ALLOW_NAME,
		 "unknown key 'foo' (known: gpus, credit, sla, mem, kernel-timeout, task.<id>, name)");
	/* "task" alone is not a task key. */
	parse_bad("task=1", 0, "unknown key 'task'", NULL);
}

static void duplicate_keys(void **state)
{
	error_is("credit=1, credit=2", 0, "credit=2: key 'credit' given twice");
	error_is("gpus=0, gpus=0", 0, "gpus=0: key 'gpus' given twice");
	error_is("sla=0, sla=1", 0, "sla=1: key 'sla' given twice");
	error_is("mem=1G,mem=2G", 0, "mem=2G: key 'mem' given twice");
}

static void item_syntax(void **state)
{
	error_is("gpus=0,,credit=1", 0,
		 "empty item 2 in 'gpus=0,,credit=1' (items are key=value, separated by single commas)");
	parse_bad(",gpus=0", 0, "empty item 1", NULL);
	parse_bad("gpus=0,", 0, "empty item 2", NULL);
	parse_bad("gpus=0, ,credit=1", 0, "empty item 2", NULL);
	parse_bad(",", 0, "empty item 1", NULL);
	error_is("gpus", 0, "item 'gpus' is not key=value");
	error_is("gpus=0, credit 5", 0, "item 'credit 5' is not key=value");
	error_is(" = 5", 0, "item '=5' has no key");
	/* '=' inside a value is junk in that value. */
	parse_bad("credit=5=5", 0, "credit=5=5: ", NULL);
	/* The first error wins. */
	error_is("foo=1, credit=0", 0,
		 "unknown key 'foo' (known: gpus, credit, sla, mem, kernel-timeout, task.<id>)");
}

static void error_buffer_handling(void **state)
{
	struct xgpu_gpuspec s;
	/* No buffer: still refused, nothing written. */
	assert_int_equal(xgpu_gpuspec_parse("credit=0", 0, &s, NULL, 0), -1);
	char small[8];
	memset(small, 'x', sizeof small);
	assert_int_equal(xgpu_gpuspec_parse("credit=0", 0, &s, small, sizeof small), -1);
	assert_string_equal(small, "credit=");
	char err[64] = "stale";
	assert_int_equal(xgpu_gpuspec_parse("credit=1", 0, &s, err, sizeof err), 0);
	assert_string_equal(err, "");
	assert_int_equal(xgpu_gpuspec_parse(NULL, 0, &s, err, sizeof err), -1);
}

static void format_is_canonical(void **state)
{
	char buf[512];
	struct xgpu_gpuspec s =
	    parse_ok("task.9=1, mem=4096M, sla=.50, credit=0512, gpus=2-3:0:3, name=a, task.2=7",
		     XGPU_GPUSPEC_ALLOW_NAME);
	int n = xgpu_gpuspec_format(&s, buf, sizeof buf);
	assert_string_equal(buf, "name=a, gpus=0:2-3, credit=512, sla=0.5, mem=4G, task.2=7, task.9=1");
	assert_int_equal(n, (int)strlen(buf));

	s = parse_ok("", 0);
	assert_int_equal(xgpu_gpuspec_format(&s, buf, sizeof buf), 0);
	assert_string_equal(buf, "");

	static const struct {
		const char *in, *out;
	} cases[] = {
	    {"gpus=0-63", "gpus=all"},
	    {"gpus=0:1:2:5:7-9:63", "gpus=0-2:5:7-9:63"},
	    {"gpus=62-63", "gpus=62-63"},
	    {"mem=1536M", "mem=1536M"},
	    {"mem=1048577", "mem=1048577"},
	    {"mem=1025K", "mem=1025K"},
	    {"mem=1024T", "mem=1024T"},
	    {"mem=2048G", "mem=2T"},
	    {"sla=0.1", "sla=0.1"},
	    {"sla=1", "sla=1"},
	    {"sla=0", "sla=0"},
	    {"sla=0.00001", "sla=1e-05"},
	    {"sla=0.3333333333333333", "sla=0.3333333333333333"},
	    {"task.4294967295=65535", "task.4294967295=65535"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		s = parse_ok(cases[i].in, 0);
		xgpu_gpuspec_format(&s, buf, sizeof buf);
		assert_string_equal(buf, cases[i].out);
	}
}

static void format_reports_full_length(void **state)
{
	struct xgpu_gpuspec s = parse_ok("gpus=0, credit=512, sla=0.5, mem=4G", 0);
	const char *full = "gpus=0, credit=512, sla=0.5, mem=4G";
	int want = (int)strlen(full);
	assert_int_equal(xgpu_gpuspec_format(&s, NULL, 0), want);
	char buf[10];
	memset(buf, 'x', sizeof buf);
	assert_int_equal(xgpu_gpuspec_format(&s, buf, sizeof buf), want);
	assert_string_equal(buf, "gpus=0, c");
	/* Cut exactly at an item boundary. */
	char buf2[8];
	assert_int_equal(xgpu_gpuspec_format(&s, buf2, sizeof buf2), want);
	assert_string_equal(buf2, "gpus=0,");
	char big[64];
	assert_int_equal(xgpu_gpuspec_format(&s, big, (size_t)want + 1), want);
	assert_string_equal(big, full);
}

static void assert_same_spec(const struct xgpu_gpuspec *a, const struct xgpu_gpuspec *b)
{
	assert_int_equal(a->has_gpus, b->has_gpus);
	assert_int_equal(a->has_credit, b->has_credit);
	assert_int_equal(a->has_sla, b->has_sla);
	assert_int_equal(a->has_mem, b->has_mem);
	if (a->has_gpus)
		assert_int_equal(a->gpus, b->gpus);
	if (a->has_credit)
		assert_int_equal(a->credit, b->credit);
	if (a->has_sla)
		assert_true(a->sla == b->sla);
	if (a->has_mem)
		assert_int_equal(a->mem, b->mem);
	assert_string_equal(a->name, b->name);
	assert_int_equal(a->ntasks, b->ntasks);
	/* The canonical form sorts tasks by id; compare as sets. */
	for (unsigned i = 0; i < a->ntasks; i++) {
		unsigned j = 0;
		while (j < b->ntasks && b->tasks[j].task != a->tasks[i].task)
			j++;
		assert_true(j < b->ntasks);
		assert_int_equal(a->tasks[i].weight, b->tasks[j].weight);
	}
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

/* Random valid specs survive format -> parse unchanged, and formatting the
 * result again gives the same text. */
static void round_trip(void **state)
{
	static const char name_chars[] = "ABCxyz019_.:-";
	for (int iter = 0; iter < 5000; iter++) {
		struct xgpu_gpuspec s;
		memset(&s, 0, sizeof s);
		if ((s.has_gpus = rnd() & 1)) {
			switch (rnd() % 3) {
			case 0:
				s.gpus = UINT64_MAX;
				break;
			case 1:
				s.gpus = 1ull << (rnd() % 64);
				break;
			default:
				s.gpus = rnd() | 1ull << (rnd() % 64);
			}
		}
		if ((s.has_credit = rnd() & 1))
			s.credit = 1 + (uint32_t)(rnd() % 65535);
		if ((s.has_sla = rnd() & 1))
			s.sla = (rnd() % 4 == 0) ? (double)(rnd() % 3) / 2
						 : (double)(rnd() >> 11) / (double)(1ull << 53);
		if ((s.has_mem = rnd() & 1)) {
			uint64_t min = XGPU_GPUSPEC_MEM_MIN, max = XGPU_GPUSPEC_MEM_MAX;
			s.mem = min + rnd() % (max - min + 1);
			if (rnd() & 1)
				s.mem &= ~((1ull << (10 * (1 + rnd() % 4))) - 1);
			if (s.mem < min)
				s.mem = min;
		}
		s.ntasks = (unsigned)(rnd() % (XGPU_GPUSPEC_TASKS + 1));
		for (unsigned i = 0; i < s.ntasks; i++) {
			s.tasks[i].task = (uint32_t)(i * 1000003u + (rnd() % 1000));
			s.tasks[i].weight = 1 + (uint32_t)(rnd() % 65535);
		}
		if (rnd() & 1) {
			size_t len = 1 + rnd() % XGPU_GPUSPEC_NAME_MAX;
			for (size_t i = 0; i < len; i++)
				s.name[i] = name_chars[rnd() % (sizeof name_chars - 1)];
		}

		char text[1024], again[1024];
		int n = xgpu_gpuspec_format(&s, text, sizeof text);
		assert_true(n > 0 || (!s.has_gpus && !s.has_credit && !s.has_sla && !s.has_mem && !s.ntasks &&
				      !s.name[0]));
		assert_true((size_t)n < sizeof text);
		struct xgpu_gpuspec back = parse_ok(text, XGPU_GPUSPEC_ALLOW_NAME);
		assert_same_spec(&s, &back);
		xgpu_gpuspec_format(&back, again, sizeof again);
		assert_string_equal(text, again);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(every_key),
	    cmocka_unit_test(whitespace_around_items_keys_and_values),
	    cmocka_unit_test(blank_spec_sets_nothing),
	    cmocka_unit_test(gpus_syntax),
	    cmocka_unit_test(credit_range),
	    cmocka_unit_test(sla_range),
	    cmocka_unit_test(mem_range_and_units),
	    cmocka_unit_test(kernel_timeout_range),
	    cmocka_unit_test(task_weights),
	    cmocka_unit_test(name_only_when_allowed),
	    cmocka_unit_test(remote_only_when_allowed),
	    cmocka_unit_test(remote_certificates),
	    cmocka_unit_test(unknown_keys),
	    cmocka_unit_test(duplicate_keys),
	    cmocka_unit_test(item_syntax),
	    cmocka_unit_test(error_buffer_handling),
	    cmocka_unit_test(format_is_canonical),
	    cmocka_unit_test(format_reports_full_length),
	    cmocka_unit_test(round_trip),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
