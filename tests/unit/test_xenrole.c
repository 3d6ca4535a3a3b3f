/* SPDX-License-Identifier: Apache-2.0 */
/* test_xenrole.c - xgpu_xen_role over fake /proc, /sys and /dev trees: dom0
 * and domU with and without xenfs, kernels without sys-hypervisor, another
 * hypervisor, no Xen at all, and the undecidable cases, whose message must
 * name every place looked at. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "xenrole.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char root[256];

static void mkdirs(char *path)
{
	for (char *p = path + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(path, 0755) && errno != EEXIST)
			fail_msg("mkdir %s: %s", path, strerror(errno));
		*p = '/';
	}
	if (mkdir(path, 0755) && errno != EEXIST)
		fail_msg("mkdir %s: %s", path, strerror(errno));
}

/* Creates root/rel holding text (a file) or, with text NULL, a folder. */
static void put(const char *rel, const char *text)
{
	char path[512];
	snprintf(path, sizeof path, "%s%s", root, rel);
	if (!text) {
		mkdirs(path);
		return;
	}
	char *slash = strrchr(path, '/');
	*slash = '\0';
	mkdirs(path);
	*slash = '/';
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static int setup(void **state)
{
	(void)state;
	const char *tmp = getenv("XGPU_TMP");
	snprintf(root, sizeof root, "%s/xenroleXXXXXX", tmp && *tmp ? tmp : "/tmp");
	assert_non_null(mkdtemp(root));
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	char cmd[300];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
	return system(cmd);
}

static enum xgpu_xen_role role(char *how, size_t len)
{
	return xgpu_xen_role(root, how, len);
}

/* The sysfs a PV domU kernel shows: sys-hypervisor, a xenbus device and a
 * frontend device; xenfs is not mounted. */
static void domu_sysfs(void)
{
	put("/sys/hypervisor/type", "xen\n");
	put("/sys/hypervisor/properties/features", "00002705\n"); /* bit 11 clear */
	put("/dev/xen/xenbus", "");
	put("/sys/bus/xen/devices/vbd-51712", NULL);
}

static void dom0_sysfs(void)
{
	put("/sys/hypervisor/type", "xen\n");
	put("/sys/hypervisor/properties/features", "00002f05\n"); /* bit 11 set */
	put("/dev/xen/xenbus", "");
	put("/sys/bus/xen-backend/devices/vbd-1-51712", NULL);
}

static void test_no_xen(void **state)
{
	(void)state;
	char how[512];
	put("/proc/cpuinfo", "x\n");
	assert_int_equal(role(how, sizeof how), XGPU_XEN_NONE);
	assert_non_null(strstr(how, "/sys/hypervisor/type"));
}

static void test_other_hypervisor(void **state)
{
	(void)state;
	char how[512];
	put("/sys/hypervisor/type", "kvm\n");
	assert_int_equal(role(how, sizeof how), XGPU_XEN_NONE);
	assert_non_null(strstr(how, "kvm"));
}

static void test_xenfs_dom0(void **state)
{
	(void)state;
	char how[512];
	put("/proc/xen/capabilities", "control_d\n");
	domu_sysfs(); /* xenfs wins over everything else */
	assert_int_equal(role(how, sizeof how), XGPU_XEN_DOM0);
	assert_non_null(strstr(how, "control_d"));
}

static void test_xenfs_domu(void **state)
{
	(void)state;
	put("/proc/xen/capabilities", ""); /* a domU's capabilities are empty */
	assert_int_equal(role(NULL, 0), XGPU_XEN_DOMU);
}

static void test_domu_without_xenfs(void **state)
{
	(void)state;
	char how[512];
	put("/proc/xen", NULL); /* the mount point, nothing mounted */
	domu_sysfs();
	assert_int_equal(role(how, sizeof how), XGPU_XEN_DOMU);
	assert_non_null(strstr(how, "XENFEAT_dom0 is clear"));
}

static void test_dom0_without_xenfs(void **state)
{
	(void)state;
	char how[512];
	dom0_sysfs();
	assert_int_equal(role(how, sizeof how), XGPU_XEN_DOM0);
	assert_non_null(strstr(how, "XENFEAT_dom0 is set"));
}

/* Two submaps (a future hypervisor): the dom0 bit is in the last 8 digits. */
static void test_features_two_submaps(void **state)
{
	(void)state;
	put("/sys/hypervisor/type", "xen\n");
	put("/sys/hypervisor/properties/features", "0000080000000000\n");
	assert_int_equal(role(NULL, 0), XGPU_XEN_DOMU);
	put("/sys/hypervisor/properties/features", "0000000000000800\n");
	assert_int_equal(role(NULL, 0), XGPU_XEN_DOM0);
}

static void test_domu_features_unreadable(void **state)
{
	(void)state;
	put("/sys/hypervisor/type", "xen\n");
	put("/dev/xen/xenbus", "");
	put("/sys/bus/xen/devices/vif-0", NULL);
	assert_int_equal(role(NULL, 0), XGPU_XEN_DOMU);
}

static void test_undecidable_names_what_it_read(void **state)
{
	(void)state;
	char how[512];
	put("/sys/hypervisor/type", "xen\n");
	put("/sys/hypervisor/properties/features", "garbage\n");
	assert_int_equal(role(how, sizeof how), XGPU_XEN_UNKNOWN);
	const char *named[] = {
	    "/proc/xen/capabilities", "/sys/hypervisor/properties/features", "not a hex bitmap",
	    "/sys/bus/xen/devices",   "/sys/bus/xen-backend/devices",        "/dev/xen/xenbus"};
	for (size_t i = 0; i < sizeof named / sizeof named[0]; i++)
		if (!strstr(how, named[i]))
			fail_msg("'%s' not named in: %s", named[i], how);
}

/* No sys-hypervisor: the xenbus device with frontends is a guest; with
 * backends it cannot be told. */
static void test_without_sys_hypervisor(void **state)
{
	(void)state;
	char how[512];
	put("/dev/xen/xenbus", "");
	put("/sys/bus/xen/devices/vbd-51712", NULL);
	assert_int_equal(role(how, sizeof how), XGPU_XEN_DOMU);
	put("/sys/bus/xen-backend/devices/vbd-1-51712", NULL);
	assert_int_equal(role(how, sizeof how), XGPU_XEN_UNKNOWN);
	assert_non_null(strstr(how, "/sys/bus/xen-backend/devices has devices"));
}

static void test_names(void **state)
{
	(void)state;
	assert_string_equal(xgpu_xen_role_name(XGPU_XEN_DOMU), "Xen domU");
	assert_string_equal(xgpu_xen_role_name(XGPU_XEN_DOM0), "Xen dom0");
	assert_string_equal(xgpu_xen_role_name(XGPU_XEN_NONE), "not Xen");
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
	const struct CMUnitTest tests[] = {
	    T(test_no_xen),
	    T(test_other_hypervisor),
	    T(test_xenfs_dom0),
	    T(test_xenfs_domu),
	    T(test_domu_without_xenfs),
	    T(test_dom0_without_xenfs),
	    T(test_features_two_submaps),
	    T(test_domu_features_unreadable),
	    T(test_undecidable_names_what_it_read),
	    T(test_without_sys_hypervisor),
	    T(test_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
