/* SPDX-License-Identifier: Apache-2.0 */
/* sandbox.c - confines the executor (sandbox.h): whatever a guest's kernel
 * does in this process, it acts with a uid of its own, no capabilities and
 * no_new_privs, may open only its driver's files (Landlock), and may make
 * only the system calls on the allow-list below (seccomp). docs/design.md,
 * "The executor's sandbox", says what is allowed and why.
 *
 * The steps, in order: sanitizer preparation (a sanitized build only), the
 * capability bounding set, the uid and gid (when started as root), the
 * remaining capabilities, not dumpable, no_new_privs, Landlock, seccomp.
 */
#include "sandbox.h"

#include "log.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <linux/capability.h>
#include <linux/landlock.h>
#include <sched.h>
#include <seccomp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

/* Landlock's rights past the ABI of older headers. */
#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14)
#endif
#ifndef LANDLOCK_ACCESS_FS_IOCTL_DEV
#define LANDLOCK_ACCESS_FS_IOCTL_DEV (1ULL << 15)
#endif
#define LL_NET_BIND_TCP (1ULL << 0)
#define LL_NET_CONNECT_TCP (1ULL << 1)
#define LL_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0)
#define LL_SCOPE_SIGNAL (1ULL << 1)

#define LL_READ (LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR)
#define LL_FILE_RIGHTS                                                                                       \
	(LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_READ_FILE |         \
	 LANDLOCK_ACCESS_FS_TRUNCATE | LANDLOCK_ACCESS_FS_IOCTL_DEV)

/* The sanitizers' runtime: caches what it would read from /proc later. */
#if defined(__SANITIZE_ADDRESS__)
#define XGPU_SANITIZED 1
void __sanitizer_sandbox_on_notify(void *args) __attribute__((weak));
#else
#define XGPU_SANITIZED 0
#endif

int xgpu_sandbox_parse(const char *s)
{
	if (!strcmp(s, "enforce"))
		return XGPU_SANDBOX_ENFORCE;
	if (!strcmp(s, "log"))
		return XGPU_SANDBOX_LOG;
	if (!strcmp(s, "off"))
		return XGPU_SANDBOX_OFF;
	return -1;
}

const char *xgpu_sandbox_mode_name(enum xgpu_sandbox_mode m)
{
	switch (m) {
	case XGPU_SANDBOX_OFF:
		return "off";
	case XGPU_SANDBOX_LOG:
		return "log";
	case XGPU_SANDBOX_ENFORCE:
		return "enforce";
	default:
		return "default";
	}
}

/* ---- capabilities and the uid ---------------------------------------------- */

/* The bounding set (needs CAP_SETPCAP: only root has it to drop) and the
 * ambient set: what no later execve could give back. */
static void drop_bounding(bool root)
{
	for (int cap = 0; root && cap <= 63; cap++)
		if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 && errno == EINVAL)
			break; /* past the kernel's last capability */
	prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
}

/* The effective, permitted and inheritable sets, emptied. */
static int drop_capabilities(char *err, size_t errlen)
{
	struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
	struct __user_cap_data_struct d[2];
	memset(d, 0, sizeof d);
	if (syscall(SYS_capset, &h, d) < 0) {
		snprintf(err, errlen, "cannot drop its capabilities: %s", strerror(errno));
		return -1;
	}
	return 0;
}

static int change_uid(long uid, char *err, size_t errlen)
{
	uid_t u = (uid_t)uid;
	gid_t g = (gid_t)uid;
	if (setgroups(0, NULL) < 0 || setresgid(g, g, g) < 0 || setresuid(u, u, u) < 0) {
		snprintf(err, errlen, "cannot become uid %ld: %s", uid, strerror(errno));
		return -1;
	}
	uid_t r, e, s;
	if (getresuid(&r, &e, &s) < 0 || r != u || e != u || s != u || setuid(0) == 0) {
		snprintf(err, errlen, "uid %ld did not stick", uid);
		return -1;
	}
	return 0;
}

/* ---- Landlock ------------------------------------------------------------- */

struct ll_attr {
	uint64_t handled_access_fs;
	uint64_t handled_access_net; /* ABI 4 */
	uint64_t scoped;             /* ABI 6 */
};

#define LL_MAX_RULES 64

struct ll {
	int fd;
	uint64_t handled;
	int nrules;
	char *paths[LL_MAX_RULES]; /* allowed so far (each once) */
	char what[512];            /* the paths allowed, for the log */
};

static void ll_allow(struct ll *l, const char *path, uint64_t access)
{
	for (int i = 0; i < l->nrules; i++)
		if (!strcmp(l->paths[i], path))
			return;
	if (l->nrules == LL_MAX_RULES)
		return;
	int fd = open(path, O_PATH | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0) {
		if (fd >= 0)
			close(fd);
		return; /* absent: nothing to allow */
	}
	if (!S_ISDIR(st.st_mode))
		access &= LL_FILE_RIGHTS;
	struct landlock_path_beneath_attr pb = {.allowed_access = access & l->handled, .parent_fd = fd};
	if (syscall(SYS_landlock_add_rule, l->fd, LANDLOCK_RULE_PATH_BENEATH, &pb, 0) == 0 &&
	    (l->paths[l->nrules] = strdup(path))) {
		l->nrules++;
		size_t n = strlen(l->what);
		if (n + strlen(path) + 3 < sizeof l->what)
			snprintf(l->what + n, sizeof l->what - n, "%s%s", n ? ", " : "", path);
	} else
		xlog_warn("sandbox: Landlock refused a rule for %s: %s", path, strerror(errno));
	close(fd);
}

/* The directory a file is in (resolved), or the path itself if a directory. */
static void ll_allow_dir_of(struct ll *l, const char *path, uint64_t access)
{
	char real[PATH_MAX];
	if (!realpath(path, real))
		return;
	struct stat st;
	if (stat(real, &st) == 0 && !S_ISDIR(st.st_mode)) {
		char *slash = strrchr(real, '/');
		if (!slash)
			return;
		*(slash == real ? slash + 1 : slash) = '\0';
	}
	ll_allow(l, real, access);
}

/* The directories of the regular files mapped now (the program, its
 * libraries, the driver's): a library the driver or a plugin loads later is
 * looked for there. */
static void ll_allow_loaded(struct ll *l)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char line[PATH_MAX + 128], seen[16][PATH_MAX];
	int nseen = 0;
	while (f && fgets(line, sizeof line, f)) {
		char *path = strchr(line, '/');
		if (!path)
			continue;
		path[strcspn(path, "\n")] = '\0';
		struct stat st;
		char *slash = strrchr(path, '/');
		if (slash == path || stat(path, &st) < 0 || !S_ISREG(st.st_mode))
			continue;
		*slash = '\0';
		bool known = false;
		for (int i = 0; i < nseen && !known; i++)
			known = !strcmp(seen[i], path);
		if (known || nseen == 16)
			continue;
		snprintf(seen[nseen++], PATH_MAX, "%s", path);
		ll_allow(l, path, LL_READ | LANDLOCK_ACCESS_FS_EXECUTE);
	}
	if (f)
		fclose(f);
}

static void ll_allow_nvidia(struct ll *l)
{
	const uint64_t dev = LL_READ | LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_IOCTL_DEV;
	DIR *d = opendir("/dev");
	for (struct dirent *e = d ? readdir(d) : NULL; e; e = readdir(d))
		if (!strncmp(e->d_name, "nvidia", 6)) {
			char p[300];
			snprintf(p, sizeof p, "/dev/%s", e->d_name);
			ll_allow(l, p, dev);
		}
	if (d)
		closedir(d);
	ll_allow(l, "/dev/dri", dev);
	ll_allow(l, "/proc/driver/nvidia", LL_READ);
	ll_allow(l, "/sys/bus/pci", LL_READ);
	ll_allow(l, "/sys/devices", LL_READ);
	ll_allow(l, "/sys/module/nvidia", LL_READ);
}

/* Returns the ABI in use (0: none, with why in note), or -1 on an error. */
static int apply_landlock(const struct xgpu_sandbox *sb, char *what, size_t whatlen, char *err, size_t errlen)
{
	int abi = (int)syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
	if (abi <= 0) {
		snprintf(what, whatlen, "no Landlock in this kernel (%s): files are kept by the uid alone",
			 strerror(errno));
		return 0;
	}
	struct ll l = {.fd = -1};
	l.handled = ((1ULL << 13) - 1) | (abi >= 2 ? LANDLOCK_ACCESS_FS_REFER : 0) |
		    (abi >= 3 ? LANDLOCK_ACCESS_FS_TRUNCATE : 0) |
		    (abi >= 5 ? LANDLOCK_ACCESS_FS_IOCTL_DEV : 0);
	struct ll_attr attr = {.handled_access_fs = l.handled};
	size_t attr_size = sizeof attr.handled_access_fs;
	if (abi >= 4) {
		attr.handled_access_net = LL_NET_BIND_TCP | LL_NET_CONNECT_TCP;
		attr_size = offsetof(struct ll_attr, scoped);
	}
	if (abi >= 6) {
		/* No signals to, and no abstract sockets of, processes outside
		 * this executor's own Landlock domain. */
		attr.scoped = LL_SCOPE_ABSTRACT_UNIX_SOCKET | LL_SCOPE_SIGNAL;
		attr_size = sizeof attr;
	}
	l.fd = (int)syscall(SYS_landlock_create_ruleset, &attr, attr_size, 0);
	if (l.fd < 0) {
		snprintf(err, errlen, "cannot create a Landlock ruleset: %s", strerror(errno));
		return -1;
	}
	/* The driver library, its plugins and every library already loaded
	 * (their dependencies are found there): read and map, never write. */
	const uint64_t ro = LL_READ | LANDLOCK_ACCESS_FS_EXECUTE;
	if (sb->driver_path)
		ll_allow_dir_of(&l, sb->driver_path, ro);
	const char *env = getenv("XGPU_SIM_KERNELS");
	if (!sb->nvidia && env && *env) {
		char *copy = strdup(env), *save = NULL;
		for (char *p = copy ? strtok_r(copy, ":", &save) : NULL; p; p = strtok_r(NULL, ":", &save)) {
			char real[PATH_MAX];
			if (realpath(p, real))
				ll_allow(&l, real, ro);
		}
		free(copy);
	}
	ll_allow_loaded(&l);
	ll_allow(&l, "/etc/ld.so.cache", LANDLOCK_ACCESS_FS_READ_FILE);
	if (sb->nvidia)
		ll_allow_nvidia(&l);
	if (XGPU_SANITIZED) {
		/* LeakSanitizer's check at exit lists this process's threads
		 * in /proc/<pid>/task (a sanitized build only). */
		char self[64];
		snprintf(self, sizeof self, "/proc/%d/task", (int)getpid());
		ll_allow(&l, self, LL_READ);
	}
	int r = (int)syscall(SYS_landlock_restrict_self, l.fd, 0);
	if (r < 0)
		snprintf(err, errlen, "cannot enter the Landlock domain: %s", strerror(errno));
	close(l.fd);
	for (int i = 0; i < l.nrules; i++)
		free(l.paths[i]);
	if (r < 0)
		return -1;
	snprintf(what, whatlen, "Landlock ABI %d: reads only %s", abi, l.what);
	return abi;
}

/* ---- seccomp --------------------------------------------------------------- */

/* Allowed whatever their arguments. Reasons in docs/design.md. */
static const char *const allow_always[] = {
    /* memory */
    "brk",
    "mmap",
    "munmap",
    "mprotect",
    "mremap",
    "madvise",
    "msync",
    "mlock",
    "munlock",
    "mincore",
    "membarrier",
    "memfd_create",
    "get_mempolicy",
    "set_mempolicy",
    "mbind",
    /* threads, waiting and time */
    "futex",
    "futex_waitv",
    "set_robust_list",
    "get_robust_list",
    "rseq",
    "sched_yield",
    "sched_getaffinity",
    "sched_getparam",
    "sched_getscheduler",
    "sched_getattr",
    "getcpu",
    "nanosleep",
    "clock_nanosleep",
    "clock_gettime",
    "clock_getres",
    "gettimeofday",
    "time",
    "timerfd_create",
    "timerfd_settime",
    "timerfd_gettime",
    "set_tid_address",
    "arch_prctl",
    /* signals (delivery to itself only: kill and tgkill below) */
    "rt_sigaction",
    "rt_sigprocmask",
    "rt_sigreturn",
    "sigaltstack",
    "rt_sigtimedwait",
    "rt_sigpending",
    "rt_sigsuspend",
    "restart_syscall",
    /* who it is */
    "getpid",
    "gettid",
    "getppid",
    "getuid",
    "geteuid",
    "getgid",
    "getegid",
    "getresuid",
    "getresgid",
    "getgroups",
    "uname",
    "sysinfo",
    "getrandom",
    "getrusage",
    "times",
    "getrlimit",
    /* descriptors it has or opens (Landlock decides which files) */
    "read",
    "write",
    "readv",
    "writev",
    "pread64",
    "pwrite64",
    "preadv",
    "pwritev",
    "lseek",
    "close",
    "close_range",
    "dup",
    "dup2",
    "dup3",
    "fcntl",
    "fstat",
    "newfstatat",
    "stat",
    "lstat",
    "statx",
    "access",
    "faccessat",
    "faccessat2",
    "readlink",
    "readlinkat",
    "getdents",
    "getdents64",
    "getcwd",
    "open",
    "openat",
    "ftruncate",
    "fsync",
    "fdatasync",
    "fadvise64",
    /* waiting on them */
    "poll",
    "ppoll",
    "select",
    "pselect6",
    "epoll_create",
    "epoll_create1",
    "epoll_ctl",
    "epoll_wait",
    "epoll_pwait",
    "epoll_pwait2",
    "eventfd",
    "eventfd2",
    "pipe",
    "pipe2",
    /* sockets it was given (xgpud's link, the guests', the listening
     * one a restarted xgpud adopts it through): never socket() or
     * connect() */
    "recvmsg",
    "sendmsg",
    "recvfrom",
    "sendto",
    "recvmmsg",
    "sendmmsg",
    "accept",
    "accept4",
    "listen",
    "getsockopt",
    "setsockopt",
    "getsockname",
    "getpeername",
    "shutdown",
    /* the end */
    "exit",
    "exit_group",
};

static const int prctl_allowed[] = {
    PR_SET_NAME,
    PR_GET_NAME,
    PR_SET_TIMERSLACK,
    PR_GET_TIMERSLACK,
    PR_GET_DUMPABLE,
    PR_GET_SECCOMP,
    PR_GET_NO_NEW_PRIVS,
    PR_CAPBSET_READ,
    0x53564d41 /* PR_SET_VMA: glibc names its mappings */,
#if XGPU_SANITIZED
    /* LeakSanitizer's check at exit: a tracer task that stops this
     * process's threads and reads their registers. */
    PR_SET_DUMPABLE,
    PR_SET_PDEATHSIG,
    0x59616d61 /* PR_SET_PTRACER */,
#endif
};

static int rule(scmp_filter_ctx f, uint32_t action, const char *name, unsigned n, struct scmp_arg_cmp *cmp,
		char *err, size_t errlen)
{
	int nr = seccomp_syscall_resolve_name(name);
	if (nr == __NR_SCMP_ERROR)
		return 0; /* not a system call on this architecture */
	int r = seccomp_rule_add_array(f, action, nr, n, cmp);
	if (r < 0 && nr >= 0) {
		snprintf(err, errlen, "seccomp: cannot add a rule for %s: %s", name, strerror(-r));
		return -1;
	}
	return 0;
}

static int apply_seccomp(bool enforce, char *what, size_t whatlen, char *err, size_t errlen)
{
	scmp_filter_ctx f = seccomp_init(enforce ? SCMP_ACT_KILL_PROCESS : SCMP_ACT_LOG);
	if (!f) {
		snprintf(err, errlen, "seccomp: cannot make a filter");
		return -1;
	}
	/* Every thread, including the driver's own (the simulated one's worker
	 * runs the guest's kernels). */
	int r = seccomp_attr_set(f, SCMP_FLTATR_CTL_TSYNC, 1);
	/* A binary tree by call number rather than a list of 134 tests: every
	 * system call of the data path (a futex wake per launch) pays it. */
	if (!r && seccomp_attr_set(f, SCMP_FLTATR_CTL_OPTIMIZE, 2) < 0)
		xlog_info("seccomp: no binary-tree filter in this libseccomp; a linear one instead");
	const uint64_t pid = (uint64_t)getpid();
	unsigned n = 0;
	for (size_t i = 0; !r && i < sizeof allow_always / sizeof allow_always[0]; i++, n++)
		r = rule(f, SCMP_ACT_ALLOW, allow_always[i], 0, NULL, err, errlen);
	/* Threads only: clone with CLONE_THREAD; clone3 hides its flags in
	 * memory, so it answers ENOSYS and glibc falls back to clone. */
	struct scmp_arg_cmp thread = SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD, CLONE_THREAD);
	r = r ? r : rule(f, SCMP_ACT_ALLOW, "clone", 1, &thread, err, errlen);
	r = r ? r : rule(f, SCMP_ACT_ERRNO(ENOSYS), "clone3", 0, NULL, err, errlen);
	/* Signals to itself only (raise, abort, a thread of its own). */
	struct scmp_arg_cmp self = SCMP_A0(SCMP_CMP_EQ, pid, 0);
	const char *self_only[] = {"kill", "tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo"};
	for (size_t i = 0; !r && i < sizeof self_only / sizeof self_only[0]; i++, n++)
		r = rule(f, SCMP_ACT_ALLOW, self_only[i], 1, &self, err, errlen);
	/* Its own limits only (pid 0). */
	struct scmp_arg_cmp zero = SCMP_A0(SCMP_CMP_EQ, 0, 0);
	r = r ? r : rule(f, SCMP_ACT_ALLOW, "prlimit64", 1, &zero, err, errlen);
	r = r ? r : rule(f, SCMP_ACT_ALLOW, "sched_setaffinity", 1, &zero, err, errlen);
	for (size_t i = 0; !r && i < sizeof prctl_allowed / sizeof prctl_allowed[0]; i++) {
		struct scmp_arg_cmp opt = SCMP_A0(SCMP_CMP_EQ, (uint64_t)prctl_allowed[i], 0);
		r = rule(f, SCMP_ACT_ALLOW, "prctl", 1, &opt, err, errlen);
	}
	/* ioctl on its descriptors (a driver's device nodes, under Landlock's
	 * eye where it has the right), but not faking a terminal's input. */
	struct scmp_arg_cmp tiocsti = SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu, TIOCSTI);
	r = r ? r : rule(f, SCMP_ACT_ERRNO(EPERM), "ioctl", 1, &tiocsti, err, errlen);
	r = r ? r : rule(f, SCMP_ACT_ALLOW, "ioctl", 0, NULL, err, errlen);
	n += 5;
#if XGPU_SANITIZED
	/* LeakSanitizer's tracer task (clone without CLONE_THREAD, with these
	 * flags exactly) and what it does: attach to this process's threads
	 * (a sibling executor has another uid, or is not dumpable), wait. */
	struct scmp_arg_cmp tracer =
	    SCMP_A0(SCMP_CMP_MASKED_EQ, ~(uint64_t)0xff, CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_UNTRACED);
	r = r ? r : rule(f, SCMP_ACT_ALLOW, "clone", 1, &tracer, err, errlen);
	r = r ? r : rule(f, SCMP_ACT_ALLOW, "ptrace", 0, NULL, err, errlen);
	r = r ? r : rule(f, SCMP_ACT_ALLOW, "wait4", 0, NULL, err, errlen);
#endif
	if (!r && (r = seccomp_load(f)) < 0)
		snprintf(err, errlen, "seccomp: cannot load the filter: %s", strerror(-r));
	seccomp_release(f);
	if (r)
		return -1;
	snprintf(
	    what, whatlen, "seccomp allow-list of %u calls (%s)%s", n,
	    enforce ? "any other kills the process" : "any other is only logged, by the kernel's audit log",
	    XGPU_SANITIZED ? ", with ptrace and a tracer clone for LeakSanitizer (a sanitized build)" : "");
	return 0;
}

/* ---- all of it ------------------------------------------------------------- */

/* Threads in this process now (1 when unknown). */
static int count_threads(void)
{
	FILE *f = fopen("/proc/self/status", "re");
	char line[128];
	int n = 1;
	while (f && fgets(line, sizeof line, f))
		if (sscanf(line, "Threads: %d", &n) == 1)
			break;
	if (f)
		fclose(f);
	return n;
}

int xgpu_sandbox_apply(const struct xgpu_sandbox *sb, char *err, size_t errlen)
{
	enum xgpu_sandbox_mode mode = sb->mode;
	if (mode == XGPU_SANDBOX_DEFAULT)
		mode = sb->nvidia ? XGPU_SANDBOX_LOG : XGPU_SANDBOX_ENFORCE;
	const char *dom = sb->domain && *sb->domain ? sb->domain : "?";
	if (mode == XGPU_SANDBOX_OFF) {
		xlog_warn("domain %s: the executor's sandbox is off (--sandbox off): it runs as uid %u with "
			  "xgpud's privileges and no system call filter",
			  dom, (unsigned)geteuid());
		return 0;
	}
#if XGPU_SANITIZED
	if (__sanitizer_sandbox_on_notify)
		__sanitizer_sandbox_on_notify(NULL);
#endif
	bool root = geteuid() == 0;
	char who[96];
	drop_bounding(root);
	if (root && sb->uid >= 0) {
		if (change_uid(sb->uid, err, errlen) < 0)
			return -1;
		snprintf(who, sizeof who, "uid and gid %ld", sb->uid);
	} else if (root)
		snprintf(who, sizeof who, "uid 0 (xgpud's; --executor-uid-base 0)");
	else
		snprintf(who, sizeof who, "the caller's uid %u (not started as root)", (unsigned)geteuid());
	/* The uid change cleared them; root without one still has them. */
	if (drop_capabilities(err, errlen) < 0)
		return -1;
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0); /* no /proc/<pid>/fd or ptrace for its own uid either */
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) {
		snprintf(err, errlen, "cannot set no_new_privs: %s", strerror(errno));
		return -1;
	}
	int threads = count_threads(); /* before Landlock hides /proc/self */
	char files[700] = "no Landlock in log mode (the files NVIDIA's driver opens are not yet confirmed)";
	if (mode == XGPU_SANDBOX_ENFORCE && apply_landlock(sb, files, sizeof files, err, errlen) < 0)
		return -1;
	if (mode == XGPU_SANDBOX_ENFORCE && threads > 1)
		xlog_warn("domain %s: %d threads the driver started in cuInit run outside Landlock (it binds "
			  "this thread and later ones only); the uid, capabilities and system call filter "
			  "cover them",
			  dom, threads - 1);
	char calls[256];
	if (apply_seccomp(mode == XGPU_SANDBOX_ENFORCE, calls, sizeof calls, err, errlen) < 0)
		return -1;
	if (mode == XGPU_SANDBOX_LOG)
		xlog_warn(
		    "domain %s: the executor's system call filter only logs what it would refuse (--sandbox "
		    "log%s): its list is not yet confirmed on a GPU",
		    dom, sb->mode == XGPU_SANDBOX_DEFAULT ? ", the default on NVIDIA's driver" : "");
	xlog_info("domain %s: executor sandbox %s: %s, no capabilities, no_new_privs; %s; %s", dom,
		  xgpu_sandbox_mode_name(mode), who, files, calls);
	return 0;
}
