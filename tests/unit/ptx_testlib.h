/* SPDX-License-Identifier: Apache-2.0 */
/* ptx_testlib.h - what the PTX interpreter's unit tests (test_ptx,
 * test_ptx_call, test_ptx_ext) share. Include after cmocka.h and
 * simdrv/ptx.h. */
#ifndef XGPU_TESTS_PTX_TESTLIB_H
#define XGPU_TESTS_PTX_TESTLIB_H

/* Decodes text that must decode. */
static struct ptx_module *parse_ok(const char *text)
{
	struct ptx_module *m = NULL;
	char err[160];
	int rc = ptx_parse(text, strlen(text), NULL, NULL, &m, err, sizeof err);
	if (rc)
		fprintf(stderr, "parse: %s\n", err);
	assert_int_equal(rc, 0);
	assert_non_null(m);
	return m;
}

#endif
