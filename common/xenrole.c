/* SPDX-License-Identifier: Apache-2.0 */
/* xenrole.c - tells dom0 from a domU from no Xen at all.
 *
 * The sources, in the order they are trusted:
 *  1. /proc/xen/capabilities (xenfs): "control_d" in dom0, empty in a domU.
 *     Many guest images never mount xenfs, so its absence says nothing.
 *  2. /sys/hypervisor/type = "xen" (the kernel's sys-hypervisor driver, built
 *     into Debian's kernels) and /sys/hypervisor/properties/features, the
 *     hypervisor's feature bitmap in hex: bit XENFEAT_dom0 (11) is set only
 *     in the control domain (systemd's detect-virt reads the same bit).
 *  3. The xenbus device /dev/xen/xenbus with frontend devices under
 *     /sys/bus/xen/devices: a PV guest kernel without sys-hypervisor.
 * A domU needs none of xenfs: /dev/xen/xenbus, evtchn, gntdev and gntalloc
 * are the kernel's own devices. */
#include "xenrole.h"

#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#define XENFEAT_DOM0 11

/* Reads the first line of root/rel into buf without its newline; false when
 * the file cannot be read. */
static bool read_line(const char *root, const char *rel, char *buf, size_t len)
{
	char path[4096];
	snprintf(path, sizeof path, "%s%s", root, rel);
	FILE *f = fopen(path, "re");
	if (!f)
		return false;
	bool ok = fgets(buf, (int)len, f) != NULL;
	if (!ok && !ferror(f)) {
		buf[0] = '\0'; /* an empty file (a domU's capabilities) */
		ok = true;
	}
	fclose(f);
	buf[strcspn(buf, "\n")] = '\0';
	return ok;
}

static bool exists(const char *root, const char *rel)
{
	char path[4096];
	struct stat st;
	snprintf(path, sizeof path, "%s%s", root, rel);
	return stat(path, &st) == 0;
}

static bool dir_has_entries(const char *root, const char *rel)
{
	char path[4096];
	snprintf(path, sizeof path, "%s%s", root, rel);
	DIR *d = opendir(path);
	if (!d)
		return false;
	bool any = false;
	struct dirent *e;
	while (!any && (e = readdir(d)))
		any = strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	closedir(d);
	return any;
}

/* The feature bitmap is printed most significant submap first, 8 hex digits
 * each; XENFEAT_dom0 lives in the last 8. -1 when it is not hex. */
static int features_dom0_bit(const char *hex)
{
	size_t n = strlen(hex);
	if (n == 0 || n % 8 || strspn(hex, "0123456789abcdefABCDEF") != n)
		return -1;
	unsigned long low = 0;
	if (sscanf(hex + n - 8, "%8lx", &low) != 1)
		return -1;
	return (int)((low >> XENFEAT_DOM0) & 1);
}

#define SAY(...) (how ? snprintf(how, howlen, __VA_ARGS__) : 0)

enum xgpu_xen_role xgpu_xen_role(const char *root, char *how, size_t howlen)
{
	char caps[256], type[64], feat[160];
	if (how && howlen)
		how[0] = '\0';

	if (read_line(root, "/proc/xen/capabilities", caps, sizeof caps)) {
		bool dom0 = strstr(caps, "control_d") != NULL;
		SAY("/proc/xen/capabilities is '%s'", caps);
		return dom0 ? XGPU_XEN_DOM0 : XGPU_XEN_DOMU;
	}

	bool have_type = read_line(root, "/sys/hypervisor/type", type, sizeof type);
	if (have_type && strcmp(type, "xen")) {
		SAY("/sys/hypervisor/type is '%s'", type);
		return XGPU_XEN_NONE;
	}
	if (have_type) {
		bool have_feat = read_line(root, "/sys/hypervisor/properties/features", feat, sizeof feat);
		int bit = have_feat ? features_dom0_bit(feat) : -1;
		if (bit >= 0) {
			SAY("/sys/hypervisor/type is 'xen' and XENFEAT_dom0 is %s in "
			    "/sys/hypervisor/properties/features (%s)",
			    bit ? "set" : "clear", feat);
			return bit ? XGPU_XEN_DOM0 : XGPU_XEN_DOMU;
		}
		/* Without the bitmap: a backend bus is dom0's (or a driver
		 * domain's); frontend devices alone are a guest's. */
		bool backend = dir_has_entries(root, "/sys/bus/xen-backend/devices");
		bool frontend = dir_has_entries(root, "/sys/bus/xen/devices");
		if (frontend && !backend && exists(root, "/dev/xen/xenbus")) {
			SAY("/sys/hypervisor/type is 'xen', /dev/xen/xenbus exists and "
			    "/sys/bus/xen/devices lists frontend devices but no backends");
			return XGPU_XEN_DOMU;
		}
		SAY("Xen (/sys/hypervisor/type is 'xen') but not which domain: no "
		    "/proc/xen/capabilities (xenfs not mounted), "
		    "/sys/hypervisor/properties/features %s, /sys/bus/xen/devices %s, "
		    "/sys/bus/xen-backend/devices %s, /dev/xen/xenbus %s",
		    !have_feat ? "unreadable" : "not a hex bitmap",
		    frontend ? "has devices" : "empty or absent", backend ? "has devices" : "empty or absent",
		    exists(root, "/dev/xen/xenbus") ? "exists" : "absent");
		return XGPU_XEN_UNKNOWN;
	}

	/* A kernel without sys-hypervisor: the xenbus device exists only under
	 * Xen, and frontend devices without backends mark a PV guest. */
	if (!exists(root, "/dev/xen/xenbus")) {
		SAY("no /proc/xen/capabilities, no /sys/hypervisor/type, no /dev/xen/xenbus");
		return XGPU_XEN_NONE;
	}
	bool backend = dir_has_entries(root, "/sys/bus/xen-backend/devices");
	bool frontend = dir_has_entries(root, "/sys/bus/xen/devices");
	if (frontend && !backend) {
		SAY("/dev/xen/xenbus exists and /sys/bus/xen/devices lists frontend devices "
		    "but no backends (no /sys/hypervisor/type, no /proc/xen/capabilities)");
		return XGPU_XEN_DOMU;
	}
	SAY("Xen (/dev/xen/xenbus exists) but not which domain: no /proc/xen/capabilities "
	    "(xenfs not mounted), no /sys/hypervisor/type, /sys/bus/xen/devices %s, "
	    "/sys/bus/xen-backend/devices %s",
	    frontend ? "has devices" : "empty or absent", backend ? "has devices" : "empty or absent");
	return XGPU_XEN_UNKNOWN;
}

const char *xgpu_xen_role_name(enum xgpu_xen_role role)
{
	switch (role) {
	case XGPU_XEN_NONE:
		return "not Xen";
	case XGPU_XEN_DOMU:
		return "Xen domU";
	case XGPU_XEN_DOM0:
		return "Xen dom0";
	case XGPU_XEN_UNKNOWN:
		break;
	}
	return "Xen, domain kind unknown";
}
