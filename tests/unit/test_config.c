/* SPDX-License-Identifier: Apache-2.0 */
/* test_config.c - xgpud's --config reader on real files: the documented
 * example, comments and strings that look like settings, every optional
 * setting at its limits, each way a file can be wrong (missing, a directory,
 * libxlutil syntax and lexical errors, unknown or repeated settings, bad,
 * unnamed and duplicate domain entries, NUL bytes, huge files) with the
 * message it must give, and a config of 300 domains. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "config.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char dir[PATH_MAX];
static char path[PATH_MAX + 32];

/* Each test writes its file at `path`, in XGPU_TMP (tests/run.sh's scratch
 * directory) or a private temporary directory. */
static int setup_dir(void **state)
{
	const char *tmp = getenv("XGPU_TMP");
	snprintf(dir, sizeof dir, "%s/test_config.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(dir))
		return -1;
	snprintf(path, sizeof path, "%s/xgpud.conf", dir);
	return 0;
}

static int teardown_dir(void **state)
{
	unlink(path);
	return rmdir(dir);
}

static void write_bytes(const char *data, size_t len)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
}

static void write_file(const char *text)
{
	write_bytes(text, strlen(text));
}

static void load_ok(const char *text, struct xgpud_config *c)
{
	write_file(text);
	char err[1024] = "";
	if (xgpud_config_load(path, c, err, sizeof err))
		fail_msg("refused: %s\n--- file:\n%s", err, text);
	assert_string_equal(err, "");
}

/* Loads text expecting a refusal whose message holds every string given
 * (NULL-terminated; a leading '@' stands for the file's path), and an empty config. */
static void load_bad(const char *text, ...)
{
	write_file(text);
	struct xgpud_config c;
	memset(&c, 0x5a, sizeof c);
	char err[1024] = "";
	if (xgpud_config_load(path, &c, err, sizeof err) == 0)
		fail_msg("accepted:\n%s", text);
	assert_int_equal(c.ndomains, 0);
	assert_null(c.domains);
	assert_string_equal(c.policy, "");
	assert_int_equal(c.tick_ms, 0);
	va_list ap;
	va_start(ap, text);
	for (const char *want; (want = va_arg(ap, const char *));) {
		char full[PATH_MAX + 256];
		if (want[0] == '@') {
			snprintf(full, sizeof full, "%s%s", path, want + 1);
			want = full;
		}
		if (!strstr(err, want))
			fail_msg("error '%s' does not contain '%s'\n--- file:\n%s", err, want, text);
	}
	va_end(ap);
}

static void documented_example(void **state)
{
	struct xgpud_config c;
	load_ok("# /etc/xgpu/xgpud.conf\n"
		"policy = \"accc\"          # optional: default policy (command line wins)\n"
		"tick_ms = 10             # optional\n"
		"hyp_source = \"local\"     # optional\n"
		"domain = [ \"name=uid-1000, credit=1024, sla=0.5, gpus=0, mem=4G, task.2=512\",\n"
		"           \"name=batch, credit=256\" ]\n",
		&c);
	assert_string_equal(c.policy, "accc");
	assert_int_equal(c.tick_ms, 10);
	assert_string_equal(c.hyp_source, "local");
	assert_int_equal(c.ndomains, 2);

	const struct xgpu_gpuspec *d = xgpud_config_domain(&c, "uid-1000");
	assert_ptr_equal(d, &c.domains[0]);
	assert_true(d->has_credit && d->has_sla && d->has_gpus && d->has_mem);
	assert_int_equal(d->credit, 1024);
	assert_true(d->sla == 0.5);
	assert_int_equal(d->gpus, 1);
	assert_int_equal(d->mem, 4ull << 30);
	assert_int_equal(d->ntasks, 1);
	assert_int_equal(d->tasks[0].task, 2);
	assert_int_equal(d->tasks[0].weight, 512);

	d = xgpud_config_domain(&c, "batch");
	assert_ptr_equal(d, &c.domains[1]);
	assert_int_equal(d->credit, 256);
	assert_false(d->has_sla || d->has_gpus || d->has_mem);

	assert_null(xgpud_config_domain(&c, "nobody"));
	assert_null(xgpud_config_domain(&c, "Batch"));
	assert_null(xgpud_config_domain(&c, ""));

	xgpud_config_free(&c);
	assert_int_equal(c.ndomains, 0);
	assert_null(c.domains);
	xgpud_config_free(&c); /* twice is harmless */
}

static void empty_and_comment_only_files(void **state)
{
	struct xgpud_config c;
	load_ok("", &c);
	assert_string_equal(c.policy, "");
	assert_string_equal(c.hyp_source, "");
	assert_int_equal(c.tick_ms, 0);
	assert_int_equal(c.ndomains, 0);
	assert_null(c.domains);
	assert_null(xgpud_config_domain(&c, "a"));
	xgpud_config_free(&c);

	load_ok("# nothing here\n\n   # policy = \"rr\"\n;\n", &c);
	assert_string_equal(c.policy, "");
	xgpud_config_free(&c);

	load_ok("domain = [ ]\n", &c);
	assert_int_equal(c.ndomains, 0);
	xgpud_config_free(&c);
}

/* Comments and strings that look like settings are not settings; xl's
 * other separators and quoting work. */
static void comments_strings_and_separators(void **state)
{
	struct xgpud_config c;
	load_ok("# gpu = [ \"x\" ]\n"
		"hyp_source = 'foo = 1 # not a comment' # bar = 2\n"
		"policy = \"rr\"; tick_ms = 0x14\n"
		"domain = [\n"
		"  # unknown = 3\n"
		"  \"name=a, credit=1\",   # first\n"
		"\n"
		"  'name=b',\n"
		"]\n"
		"domain += [ \"name=c, gpus=all\" ]\n",
		&c);
	assert_string_equal(c.hyp_source, "foo = 1 # not a comment");
	assert_string_equal(c.policy, "rr");
	assert_int_equal(c.tick_ms, 20);
	assert_int_equal(c.ndomains, 3);
	assert_string_equal(c.domains[0].name, "a");
	assert_string_equal(c.domains[1].name, "b");
	assert_string_equal(c.domains[2].name, "c");
	assert_int_equal(c.domains[2].gpus, UINT64_MAX);
	xgpud_config_free(&c);

	/* An escaped quote does not end the string. */
	load_ok("hyp_source = \"a\\\" nope = 1\"\n", &c);
	assert_string_equal(c.hyp_source, "a\" nope = 1");
	xgpud_config_free(&c);
	load_ok("hyp_source = 'a\\' nope = 1'\n", &c);
	assert_string_equal(c.hyp_source, "a' nope = 1");
	xgpud_config_free(&c);
}

static void missing_file_and_directory(void **state)
{
	struct xgpud_config c;
	char err[512];
	char missing[PATH_MAX + 32];
	snprintf(missing, sizeof missing, "%s/no-such.conf", dir);
	assert_int_equal(xgpud_config_load(missing, &c, err, sizeof err), -1);
	char want[2 * PATH_MAX];
	snprintf(want, sizeof want, "%s: cannot open: No such file or directory", missing);
	assert_string_equal(err, want);
	assert_int_equal(c.ndomains, 0);

	assert_int_equal(xgpud_config_load(dir, &c, err, sizeof err), -1);
	snprintf(want, sizeof want, "%s: cannot read: Is a directory", dir);
	assert_string_equal(err, want);

	/* No error buffer: still refused. */
	assert_int_equal(xgpud_config_load(missing, &c, NULL, 0), -1);
}

static void libxlutil_errors_are_passed_on(void **state)
{
	/* Syntax error, on line 2: libxlutil's own message, with file and line. */
	load_bad("policy = \"rr\"\ntick_ms = = 10\n", "@", ":2:", "config parsing error", "syntax error",
		 NULL);
	/* Lexical error: xl's identifiers are lower case. */
	load_bad("Policy = \"rr\"\n", "@", ":1:", "lexical error", NULL);
	/* Unterminated string and list. */
	load_bad("policy = \"rr\n", "@", "lexical error", NULL);
	load_bad("domain = [ \"name=a\",\n", "@", "syntax error", NULL);
	/* Two settings on one line without ';'. */
	load_bad("policy = \"rr\" tick_ms = 5\n", "@", "syntax error", NULL);
	/* Windows line ends are not xl syntax. */
	load_bad("policy = \"rr\"\r\n", "@", "lexical error", NULL);
}

static void unknown_and_repeated_settings(void **state)
{
	load_bad("policy = \"rr\"\n\ngpu = [ \"gpus=0\" ]\n",
		 "@:3: unknown setting 'gpu' (known: policy, tick_ms, hyp_source, domain)", NULL);
	load_bad("tick_ms = 5; tick = 5\n", "@:1: unknown setting 'tick'", NULL);
	load_bad("policy.x = \"rr\"\n", "unknown setting 'policy.x'", NULL);
	load_bad("policy = \"rr\"\n# c\npolicy = \"none\"\n",
		 "@:3: 'policy' is set again with '=' (first set on line 1; use += to append)", NULL);
	load_bad("domain += [ \"name=a\" ]\ntick_ms = 5\ndomain = [ \"name=c\" ]\n",
		 "@:3: 'domain' is set again with '=' (first set on line 1", NULL);
	load_bad("domain = [ \"name=a\" ]\ndomain += [ \"name=b\" ]\ndomain = [ \"name=c\" ]\n",
		 "@:3: 'domain' is set again with '=' (first set on line 1", NULL);
}

static void tick_ms_limits(void **state)
{
	struct xgpud_config c;
	load_ok("tick_ms = 1\n", &c);
	assert_int_equal(c.tick_ms, 1);
	load_ok("tick_ms = 1000\n", &c);
	assert_int_equal(c.tick_ms, 1000);
	load_ok("tick_ms = \"25\"\n", &c);
	assert_int_equal(c.tick_ms, 25);
	load_bad("tick_ms = 0\n", "@: tick_ms=0: tick_ms must be a whole number from 1 to 1000", NULL);
	load_bad("tick_ms = 1001\n", "tick_ms=1001: ", "1 to 1000", NULL);
	load_bad("tick_ms = \"ten\"\n", "tick_ms=ten: ", "1 to 1000", NULL);
	load_bad("tick_ms = \"10ms\"\n", "tick_ms=10ms: ", NULL);
	load_bad("tick_ms = 99999999999999999999\n", "tick_ms=99999999999999999999: ", NULL);
	load_bad("tick_ms = [ 10 ]\n", "@: tick_ms must be a number", NULL);
}

static void policy_and_hyp_source(void **state)
{
	struct xgpud_config c;
	load_ok("policy = \"abcdefghijklmnopqrstuvwxyz01234\"\n", &c); /* 31 */
	assert_string_equal(c.policy, "abcdefghijklmnopqrstuvwxyz01234");
	load_bad("policy = \"abcdefghijklmnopqrstuvwxyz012345\"\n",
		 "@: policy=\"abcdefghijklmnopqrstuvwxyz012345\": ", "1 to 31 characters of a-z 0-9", NULL);
	load_bad("policy = \"\"\n", "policy=\"\": ", NULL);
	load_bad("policy = \"RR\"\n", "policy=\"RR\": ", NULL);
	load_bad("policy = \"r-r\"\n", "policy=\"r-r\": ", NULL);
	load_bad("policy = [ \"rr\" ]\n", "@: policy must be a string", NULL);

	char text[400];
	char v[200];
	memset(v, 'h', 127);
	v[127] = '\0';
	snprintf(text, sizeof text, "hyp_source = \"%s\"\n", v);
	load_ok(text, &c);
	assert_string_equal(c.hyp_source, v);
	snprintf(text, sizeof text, "hyp_source = \"%sh\"\n", v);
	load_bad(text, "1 to 127 printable characters", NULL);
	load_bad("hyp_source = \"\"\n", "@: hyp_source=\"\": ", NULL);
	load_bad("hyp_source = \"a\\tb\"\n", "hyp_source=", "printable", NULL);
	load_bad("hyp_source = [ ]\n", "@: hyp_source must be a string", NULL);
}

static void bad_domain_entries(void **state)
{
	load_bad("domain = [ \"name=a\", \"credit=5\" ]\n",
		 "@: domain[1] \"credit=5\": no name= (every domain entry names its domain)", NULL);
	load_bad("domain = [ \"\" ]\n", "@: domain[0] \"\": no name=", NULL);
	load_bad("domain = [ \"name=a, foo=1\" ]\n",
		 "@: domain[0]: unknown key 'foo' (known: gpus, credit, sla, mem, kernel-timeout, task.<id>, name)", NULL);
	load_bad("domain = [ \"name=a\", \"name=b, credit=0\" ]\n",
		 "@: domain[1]: credit=0: credit must be a whole number from 1 to 65535", NULL);
	load_bad("domain = [ \"name=a b\" ]\n", "@: domain[0]: name=a b: ", NULL);
	load_bad("domain = [ \"name=a,,credit=1\" ]\n", "@: domain[0]: empty item 2", NULL);
	load_bad("domain = [ \"name=a\", \"name=b\", \"name=a, credit=3\" ]\n",
		 "@: domain[2]: name 'a' is already used by domain[0]", NULL);
	load_bad("domain = [ \"name=a\" ]\ndomain += [ \"name=a\" ]\n",
		 "domain[1]: name 'a' is already used by domain[0]", NULL);
	load_bad("domain = [ [ \"name=a\" ] ]\n", "@: domain[0] is a list; each domain entry is a string",
		 NULL);
	load_bad("domain = \"name=a\"\n", "@: domain must be a list of strings", NULL);
}

static void nul_bytes_and_huge_files(void **state)
{
	/* libxlutil would abort the process on this; the reader refuses it. */
	static const char nul[] = "policy = \"rr\"\nhyp_source = \"a\0b\"\n";
	write_bytes(nul, sizeof nul - 1);
	struct xgpud_config c;
	char err[512];
	assert_int_equal(xgpud_config_load(path, &c, err, sizeof err), -1);
	char want[2 * PATH_MAX];
	snprintf(want, sizeof want, "%s:2: contains a NUL byte; not a text file?", path);
	assert_string_equal(err, want);

	size_t big = (4u << 20) + 1;
	char *data = malloc(big);
	assert_non_null(data);
	memset(data, '\n', big);
	write_bytes(data, big);
	free(data);
	assert_int_equal(xgpud_config_load(path, &c, err, sizeof err), -1);
	assert_non_null(strstr(err, path));
	assert_non_null(strstr(err, "larger than"));

	/* Exactly at the limit is still read. */
	data = malloc(4u << 20);
	assert_non_null(data);
	memset(data, '\n', 4u << 20);
	memcpy(data, "tick_ms = 7", 11);
	write_bytes(data, 4u << 20);
	free(data);
	assert_int_equal(xgpud_config_load(path, &c, err, sizeof err), 0);
	assert_int_equal(c.tick_ms, 7);
	xgpud_config_free(&c);
}

static void small_error_buffer(void **state)
{
	write_file("bogus = 1\n");
	struct xgpud_config c;
	char err[6];
	memset(err, 'x', sizeof err);
	assert_int_equal(xgpud_config_load(path, &c, err, sizeof err), -1);
	assert_int_equal(strlen(err), 5);
	assert_memory_equal(err, path, 5);
}

static void three_hundred_domains(void **state)
{
	enum { N = 300 };
	size_t cap = N * 128 + 64, n = 0;
	char *text = malloc(cap);
	assert_non_null(text);
	n += (size_t)snprintf(text + n, cap - n, "policy = \"rr\"\ndomain = [\n");
	for (int i = 0; i < N; i++)
		n += (size_t)snprintf(text + n, cap - n,
				      "  \"name=dom%03d, credit=%d, gpus=%d, mem=%dM, task.%d=%d\",\n", i,
				      i + 1, i % 64, 1 + i, i, 1 + i % 100);
	n += (size_t)snprintf(text + n, cap - n, "]\n");
	assert_true(n < cap);

	struct xgpud_config c;
	load_ok(text, &c);
	free(text);
	assert_int_equal(c.ndomains, N);
	for (int i = 0; i < N; i++) {
		char name[16];
		snprintf(name, sizeof name, "dom%03d", i);
		const struct xgpu_gpuspec *d = xgpud_config_domain(&c, name);
		assert_ptr_equal(d, &c.domains[i]);
		assert_int_equal(d->credit, i + 1);
		assert_int_equal(d->gpus, 1ull << (i % 64));
		assert_int_equal(d->mem, (uint64_t)(1 + i) << 20);
		assert_int_equal(d->ntasks, 1);
		assert_int_equal(d->tasks[0].task, i);
		assert_int_equal(d->tasks[0].weight, 1 + i % 100);
	}
	assert_null(xgpud_config_domain(&c, "dom300"));
	xgpud_config_free(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(documented_example),
	    cmocka_unit_test(empty_and_comment_only_files),
	    cmocka_unit_test(comments_strings_and_separators),
	    cmocka_unit_test(missing_file_and_directory),
	    cmocka_unit_test(libxlutil_errors_are_passed_on),
	    cmocka_unit_test(unknown_and_repeated_settings),
	    cmocka_unit_test(tick_ms_limits),
	    cmocka_unit_test(policy_and_hyp_source),
	    cmocka_unit_test(bad_domain_entries),
	    cmocka_unit_test(nul_bytes_and_huge_files),
	    cmocka_unit_test(small_error_buffer),
	    cmocka_unit_test(three_hundred_domains),
	};
	return cmocka_run_group_tests(tests, setup_dir, teardown_dir);
}
