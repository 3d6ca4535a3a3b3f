/* SPDX-License-Identifier: Apache-2.0 */
/* plugins.c - host implementations of kernels (simkernel.h plugins).
 *
 * cuInit loads every plugin from the colon-separated files and directories
 * in $XGPU_SIM_KERNELS (a directory contributes its *.so in name order), then
 * from the `simkernels` directory beside this library, found with dladdr so
 * that an installed tree works without configuration. The first plugin to
 * name a kernel wins, so XGPU_SIM_KERNELS can override the bundled ones.
 * Plugins stay loaded until the driver is unloaded: modules hold pointers
 * into their tables.
 */
#include "simdrv_int.h"

#include <dirent.h>
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct plugin_kernel {
	const char *name;
	const struct xgpu_simk_kernel *k;
};

static void **handles;
static size_t nhandles;
static struct plugin_kernel *kernels;
static size_t nkernels;

static bool add_kernel(const struct xgpu_simk_kernel *k)
{
	if (sim_plugin_find(k->name))
		return true; /* an earlier plugin has it */
	struct plugin_kernel *nk = realloc(kernels, (nkernels + 1) * sizeof *nk);
	if (!nk)
		return false;
	kernels = nk;
	kernels[nkernels++] = (struct plugin_kernel){k->name, k};
	return true;
}

static void load_file(const char *path)
{
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		sim_log("cannot load kernel plugin %s: %s", path, dlerror());
		return;
	}
	const struct xgpu_simk_table *t = dlsym(h, "xgpu_simk_table");
	if (!t || t->abi_version != XGPU_SIMK_ABI_VERSION || (t->count && !t->kernels) || t->count > 65536) {
		sim_log("%s is not a kernel plugin of ABI version %u; ignored", path, XGPU_SIMK_ABI_VERSION);
		dlclose(h);
		return;
	}
	void **nh = realloc(handles, (nhandles + 1) * sizeof *nh);
	if (!nh) {
		dlclose(h);
		return;
	}
	handles = nh;
	handles[nhandles++] = h;
	for (uint32_t i = 0; i < t->count; i++) {
		const struct xgpu_simk_kernel *k = &t->kernels[i];
		if (!k->name || !k->run) {
			sim_log("%s: entry %u has no name or no run function; ignored", path, i);
			continue;
		}
		if (!add_kernel(k))
			return;
	}
}

static int so_filter(const struct dirent *d)
{
	size_t n = strlen(d->d_name);
	return n > 3 && !strcmp(d->d_name + n - 3, ".so");
}

/* A file is loaded; a directory contributes its *.so files. Missing paths are
 * fine for the default directory and reported for explicit ones. */
static void load_path(const char *path, bool explicit_path)
{
	struct stat st;
	if (stat(path, &st) < 0) {
		if (explicit_path)
			sim_log("XGPU_SIM_KERNELS: %s does not exist", path);
		return;
	}
	if (!S_ISDIR(st.st_mode)) {
		load_file(path);
		return;
	}
	struct dirent **list;
	int n = scandir(path, &list, so_filter, alphasort);
	if (n < 0)
		return;
	for (int i = 0; i < n; i++) {
		char file[PATH_MAX];
		if ((size_t)snprintf(file, sizeof file, "%s/%s", path, list[i]->d_name) < sizeof file)
			load_file(file);
		free(list[i]);
	}
	free(list);
}

void sim_plugins_load(void)
{
	const char *env = getenv("XGPU_SIM_KERNELS");
	/* "none": no host implementations at all, the bundled ones included
	 * (every kernel with PTX is then interpreted). */
	if (env && !strcmp(env, "none"))
		return;
	if (env && *env) {
		char *copy = strdup(env), *save = NULL;
		for (char *p = copy ? strtok_r(copy, ":", &save) : NULL; p; p = strtok_r(NULL, ":", &save))
			load_path(p, true);
		free(copy);
	}
	Dl_info info;
	if (dladdr((void *)sim_plugins_load, &info) && info.dli_fname) {
		char dir[PATH_MAX];
		const char *slash = strrchr(info.dli_fname, '/');
		int len = slash ? (int)(slash - info.dli_fname) : 1;
		const char *base = slash ? info.dli_fname : ".";
		if ((size_t)snprintf(dir, sizeof dir, "%.*s/simkernels", len, base) < sizeof dir)
			load_path(dir, false);
	}
}

const struct xgpu_simk_kernel *sim_plugin_find(const char *name)
{
	for (size_t i = 0; i < nkernels; i++)
		if (!strcmp(kernels[i].name, name))
			return kernels[i].k;
	return NULL;
}

void sim_plugins_unload(void)
{
	free(kernels);
	kernels = NULL;
	nkernels = 0;
	for (size_t i = 0; i < nhandles; i++)
		dlclose(handles[i]);
	free(handles);
	handles = NULL;
	nhandles = 0;
}
