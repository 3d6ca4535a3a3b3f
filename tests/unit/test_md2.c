/* SPDX-License-Identifier: Apache-2.0 */
/* test_md2.c - the MD2 and HMAC-MD2 behind the driver frontend's integrity
 * check (frontend/driver/md2.c): RFC 1319's test suite, input split at every
 * block boundary, and HMAC built from the hash as RFC 2104 defines it. A wrong
 * digest here makes NVIDIA's runtime refuse every program built with nvcc's
 * default static runtime (cudaErrorSoftwareValidityNotEstablished). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "../../frontend/driver/md2.h"

static void hex(const uint8_t *d, char out[33])
{
	for (int i = 0; i < 16; i++)
		snprintf(out + 2 * i, 3, "%02x", d[i]);
}

static void md2_hex(const void *data, size_t len, char out[33])
{
	struct xgpu_md2 h;
	uint8_t d[XGPU_MD2_BYTES];
	xgpu_md2_init(&h);
	xgpu_md2_update(&h, data, len);
	xgpu_md2_final(&h, d);
	hex(d, out);
}

/* RFC 1319, appendix A.5. */
static void test_rfc1319_suite(void **state)
{
	static const struct {
		const char *in, *digest;
	} suite[] = {
	    {"", "8350e5a3e24c153df2275c9f80692773"},
	    {"a", "32ec01ec4a6dac72c0ab96fb34c0b5d1"},
	    {"abc", "da853b0d3f88d99b30283a69e6ded6bb"},
	    {"message digest", "ab4f496bfb2a530b219ff33031fe06b0"},
	    {"abcdefghijklmnopqrstuvwxyz", "4e8ddff3650292ab5a4108c3aa47940b"},
	    {"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
	     "da33def2a42df13975352846c30338cd"},
	    {"12345678901234567890123456789012345678901234567890123456789012345678901234567890",
	     "d5976f79d83d3a0dc9806c3c66f3efd8"},
	};
	for (size_t i = 0; i < sizeof suite / sizeof suite[0]; i++) {
		char got[33];
		md2_hex(suite[i].in, strlen(suite[i].in), got);
		assert_string_equal(got, suite[i].digest);
	}
}

/* Feeding the input in pieces gives the digest of the whole. */
static void test_split_updates(void **state)
{
	uint8_t msg[100];
	for (size_t i = 0; i < sizeof msg; i++)
		msg[i] = (uint8_t)(i * 37 + 11);
	char whole[33];
	md2_hex(msg, sizeof msg, whole);
	for (size_t cut = 0; cut <= sizeof msg; cut++) {
		struct xgpu_md2 h;
		uint8_t d[XGPU_MD2_BYTES];
		char got[33];
		xgpu_md2_init(&h);
		xgpu_md2_update(&h, msg, cut);
		xgpu_md2_update(&h, msg + cut, sizeof msg - cut);
		xgpu_md2_final(&h, d);
		hex(d, got);
		assert_string_equal(got, whole);
	}
}

/* HMAC(K, m) = H((K ^ opad) || H((K ^ ipad) || m)), 16-byte blocks. */
static void test_hmac_composition(void **state)
{
	uint8_t key[16], buf[16 + 48];
	for (int i = 0; i < 16; i++)
		key[i] = (uint8_t)(0xa0 + i);
	const char *m1 = "the runtime's header, 48 bytes of it, more or less";
	const char *m2 = "and a device";
	for (int i = 0; i < 16; i++)
		buf[i] = key[i] ^ 0x36;
	struct xgpu_md2 h;
	uint8_t inner[16], expect[16], got[16];
	xgpu_md2_init(&h);
	xgpu_md2_update(&h, buf, 16);
	xgpu_md2_update(&h, m1, strlen(m1));
	xgpu_md2_update(&h, m2, strlen(m2));
	xgpu_md2_final(&h, inner);
	for (int i = 0; i < 16; i++)
		buf[i] = key[i] ^ 0x5c;
	memcpy(buf + 16, inner, 16);
	xgpu_md2_init(&h);
	xgpu_md2_update(&h, buf, 32);
	xgpu_md2_final(&h, expect);

	struct xgpu_md2_part parts[] = {{m1, strlen(m1)}, {m2, strlen(m2)}};
	xgpu_hmac_md2(key, parts, 2, got);
	assert_memory_equal(got, expect, 16);
	/* And the key matters. */
	key[0] ^= 1;
	xgpu_hmac_md2(key, parts, 2, got);
	assert_memory_not_equal(got, expect, 16);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_rfc1319_suite),
	    cmocka_unit_test(test_split_updates),
	    cmocka_unit_test(test_hmac_composition),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
