/* SPDX-License-Identifier: Apache-2.0 */
// guestload.cu - what one guest does to the GPU in the robustness tests: long
// or endless kernels, faulting kernels, and a process that keeps calling
// while its daemon goes away. One mode per run; prints one RESULT line.
//
//   guestload spin MS SECONDS [BATCH]  kernels of MS ms (as modeled by the
//                               simulated driver) one after another for
//                               SECONDS, synchronizing after every BATCH of
//                               them (default 1); the kernel count is checked
//                               against the device's
//   guestload coupled CPU_MS MS BATCH SECONDS  a coupled loop as Pegasus's
//                               BlackScholes: CPU_MS ms of the thread's own
//                               CPU time (so it stretches when the thread is
//                               descheduled), then BATCH kernels of MS ms
//                               whose count the next CPU work reads back and
//                               depends on; reports loops and loops_per_s
//   guestload latency PERIOD_MS US SECONDS  Pegasus's FWT-like latency-
//                               sensitive guest: every PERIOD_MS one small
//                               call (a kernel of US microseconds and the
//                               copy of its result), timed in the client;
//                               reports calls and the latency p50/p99/max
//   guestload runaway           one launch of a kernel that never ends
//   guestload fault illegal|trap  a kernel that writes to an illegal address
//                               or traps
//   guestload calls SECONDS     small calls every 20 ms for SECONDS, reporting
//                               the first error and when it came
//   guestload hold MB SECONDS [pinned]  holds MB MiB of device memory and copies a
//                               pattern into each MiB of it and back, checking
//                               every byte, round after round for SECONDS;
//                               reports rounds, the first error and mismatches;
//                               with "pinned", every 16 MiB (and at each
//                               round's end) it also copies the MiB just
//                               written into a page-locked buffer it
//                               allocates and frees (a new host segment for
//                               the backend to map); SIGTERM ends it early, as
//                               its time would, within a MiB's copies;
//                               verified once some copies ran, all matching
//   guestload idle SECONDS      makes its context, then sleeps SECONDS
// runaway and fault report the error of the synchronization and of later calls
// (CUDA's sticky context errors), and exit 0 when both are the expected ones.
//
// GUESTLOAD_CPU_SLICE_MS=N: the process runs under SCHED_BATCH with a CPU
// slice of N ms (Linux 6.12+ custom slices): no wake-up preemption and long
// turns, like a Xen VCPU under the credit scheduler (30 ms), for make
// experiment's EXP_CPU_SCHED=xen. Its nice level is kept.
#include <algorithm>
#include <cerrno>
#include <csignal>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <vector>

// Counts its launches in *count; the simulated driver models it as taking ns
// (or, with ns 0, one nanosecond per thread: for a huge grid, forever).
__global__ void spin(unsigned long long *count, unsigned long long ns)
{
	if (blockIdx.x == 0 && blockIdx.y == 0 && threadIdx.x == 0) {
		unsigned long long t0 = clock64();
		while (ns && clock64() - t0 < ns)
			;
		atomicAdd(count, 1ull);
	}
	// Endless, but not a loop without side effects (which C++ lets the
	// compiler drop): it waits for a count no launch reaches.
	if (!ns)
		while (*(volatile unsigned long long *)count != ~0ull)
			;
}

// Writes through p + offset: an address no allocation holds.
__global__ void poke(int *p, long long offset)
{
	p[offset] = 1;
}

__global__ void trap_k(int *p)
{
	if (*p == 0)
		__trap();
}

static double now_s()
{
	return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// CPU seconds the calling thread has used.
static double thread_cpu_s()
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

// Burns cpu_s of this thread's CPU time on arithmetic seeded by seed; the
// result feeds the next launch, so the work cannot be skipped.
static unsigned long long cpu_work(double cpu_s, unsigned long long seed)
{
	double until = thread_cpu_s() + cpu_s;
	unsigned long long x = seed | 1;
	while (thread_cpu_s() < until)
		for (int i = 0; i < 4096; i++)
			x = x * 6364136223846793005ull + 1442695040888963407ull;
	return x;
}

// The layout of the kernel's struct sched_attr (include/uapi/linux/sched/types.h).
struct slice_attr {
	unsigned size, policy;
	unsigned long long flags;
	int nice;
	unsigned priority;
	unsigned long long runtime, deadline, period;
};

// GUESTLOAD_CPU_SLICE_MS, above; returns false (with a message) when the
// kernel refuses it.
static bool set_cpu_slice()
{
	const char *ms = getenv("GUESTLOAD_CPU_SLICE_MS");
	if (!ms || !*ms)
		return true;
	struct slice_attr a = {};
	a.size = sizeof a;
	a.policy = SCHED_BATCH;
	errno = 0;
	a.nice = getpriority(PRIO_PROCESS, 0);
	a.runtime = strtoull(ms, nullptr, 10) * 1000000ull;
	if (errno || syscall(SYS_sched_setattr, 0, &a, 0) != 0) {
		fprintf(stderr,
			"guestload: GUESTLOAD_CPU_SLICE_MS=%s: sched_setattr: %s (needs Linux 6.12)\n", ms,
			strerror(errno));
		return false;
	}
	return true;
}

static volatile sig_atomic_t stop_asked;
static void ask_stop(int)
{
	stop_asked = 1;
}

static int usage()
{
	fprintf(stderr,
		"usage: guestload spin MS SECONDS [BATCH] | coupled CPU_MS MS BATCH SECONDS |\n"
		"       latency PERIOD_MS US SECONDS | runaway |\n"
		"       fault illegal|trap | calls SECONDS | hold MB SECONDS [pinned] | idle SECONDS\n");
	return 2;
}

// The error of synchronizing after a bad kernel and of a later call; exit 0
// when both are want.
static int report_sticky(const char *what, cudaError_t want)
{
	cudaError_t sync = cudaDeviceSynchronize();
	void *p = nullptr;
	cudaError_t after = cudaMalloc(&p, 16);
	cudaError_t last = cudaGetLastError();
	bool ok = sync == want && after == want && last == want;
	printf("RESULT workload=guestload mode=%s sync=%s after=%s last=%s ok=%s\n", what,
	       cudaGetErrorName(sync), cudaGetErrorName(after), cudaGetErrorName(last), ok ? "yes" : "no");
	return ok ? 0 : 1;
}

// guestload hold's page-locked copy: the MiB at dev, just written from
// expect, into a page-locked buffer allocated and freed for it (a new host
// segment for the backend to map each time).
#define PINNED_EVERY 16
static cudaError_t copy_out_pinned(const unsigned char *dev, const unsigned char *expect, size_t len,
				   unsigned long long *copies, unsigned long long *bad)
{
	unsigned char *locked = nullptr;
	cudaError_t err = cudaMallocHost(&locked, len);
	if (err != cudaSuccess)
		return err;
	err = cudaMemcpy(locked, dev, len, cudaMemcpyDeviceToHost);
	if (err == cudaSuccess && memcmp(locked, expect, len))
		(*bad)++;
	(*copies)++;
	cudaError_t f = cudaFreeHost(locked);
	return err != cudaSuccess ? err : f;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return usage();
	if (!set_cpu_slice())
		return 2;
	setvbuf(stdout, nullptr, _IOLBF, 0);
	unsigned long long *count = nullptr;
	cudaError_t err = cudaMalloc(&count, sizeof *count);
	if (err == cudaSuccess)
		err = cudaMemset(count, 0, sizeof *count);
	if (err != cudaSuccess) {
		printf("RESULT workload=guestload error=%s\n", cudaGetErrorName(err));
		return 1;
	}
	if (!strcmp(argv[1], "spin") && (argc == 4 || argc == 5)) {
		unsigned long long ns = strtoull(argv[2], nullptr, 10) * 1000000ull;
		double secs = atof(argv[3]), t0 = now_s();
		int batch = argc == 5 ? atoi(argv[4]) : 1;
		if (batch < 1)
			return usage();
		unsigned long long launched = 0;
		while (now_s() - t0 < secs) {
			for (int i = 0; i < batch; i++)
				spin<<<1, 32>>>(count, ns);
			launched += (unsigned)batch;
			if ((err = cudaDeviceSynchronize()) != cudaSuccess)
				break;
		}
		unsigned long long counted = 0;
		if (err == cudaSuccess)
			err = cudaMemcpy(&counted, count, sizeof counted, cudaMemcpyDeviceToHost);
		bool ok = err == cudaSuccess && counted == launched;
		printf("RESULT workload=guestload mode=spin kernels=%llu counted=%llu elapsed_s=%.3f "
		       "verified=%s "
		       "error=%s\n",
		       launched, counted, now_s() - t0, ok ? "yes" : "no", cudaGetErrorName(err));
		return ok ? 0 : 1;
	}
	if (!strcmp(argv[1], "coupled") && argc == 6) {
		double cpu_s = atof(argv[2]) / 1e3;
		unsigned long long ns = strtoull(argv[3], nullptr, 10) * 1000000ull;
		int batch = atoi(argv[4]);
		double secs = atof(argv[5]), t0 = now_s();
		if (batch < 1 || cpu_s < 0 || secs <= 0)
			return usage();
		unsigned long long launched = 0, counted = 0, loops = 0, x = 0;
		double cpu_wall = 0, gpu_wall = 0; // where a loop's time goes
		while (now_s() - t0 < secs) {
			double c0 = now_s();
			x = cpu_work(cpu_s, x ^ counted);
			double g0 = now_s();
			cpu_wall += g0 - c0;
			// The kernels' length depends on the CPU result (by at
			// most one nanosecond): the launch needs the CPU work.
			for (int i = 0; i < batch; i++)
				spin<<<1, 32>>>(count, ns + (x & 1));
			launched += (unsigned)batch;
			if ((err = cudaMemcpy(&counted, count, sizeof counted, cudaMemcpyDeviceToHost)) !=
			    cudaSuccess)
				break;
			gpu_wall += now_s() - g0;
			loops++;
		}
		double elapsed = now_s() - t0;
		bool ok = err == cudaSuccess && counted == launched;
		printf("RESULT workload=guestload mode=coupled loops=%llu loops_per_s=%.3f kernels=%llu "
		       "counted=%llu elapsed_s=%.3f cpu_phase_ms=%.3f gpu_phase_ms=%.3f verified=%s "
		       "error=%s\n",
		       loops, loops / elapsed, launched, counted, elapsed,
		       loops ? 1e3 * cpu_wall / loops : 0.0, loops ? 1e3 * gpu_wall / loops : 0.0,
		       ok ? "yes" : "no", cudaGetErrorName(err));
		return ok ? 0 : 1;
	}
	if (!strcmp(argv[1], "latency") && argc == 5) {
		double period_s = atof(argv[2]) / 1e3;
		unsigned long long ns = strtoull(argv[3], nullptr, 10) * 1000ull;
		double secs = atof(argv[4]), t0 = now_s(), next = t0;
		if (period_s <= 0 || ns == 0 || secs <= 0)
			return usage();
		std::vector<double> lat_us;
		unsigned long long counted = 0;
		while (now_s() - t0 < secs) {
			next += period_s;
			double c0 = now_s();
			spin<<<1, 32>>>(count, ns);
			if ((err = cudaMemcpy(&counted, count, sizeof counted, cudaMemcpyDeviceToHost)) !=
			    cudaSuccess)
				break;
			lat_us.push_back((now_s() - c0) * 1e6);
			// A fixed schedule: a late call does not push the later ones back.
			double wait = next - now_s();
			if (wait > 0)
				std::this_thread::sleep_for(std::chrono::duration<double>(wait));
		}
		bool ok = err == cudaSuccess && !lat_us.empty() && counted == lat_us.size();
		std::sort(lat_us.begin(), lat_us.end());
		auto pct = [&](double q) {
			return lat_us.empty() ? 0.0 : lat_us[(size_t)(q * (double)(lat_us.size() - 1))];
		};
		printf("RESULT workload=guestload mode=latency calls=%zu p50_us=%.1f p99_us=%.1f "
		       "max_us=%.1f verified=%s error=%s\n",
		       lat_us.size(), pct(0.50), pct(0.99), pct(1.0), ok ? "yes" : "no",
		       cudaGetErrorName(err));
		return ok ? 0 : 1;
	}
	if (!strcmp(argv[1], "runaway") && argc == 2) {
		spin<<<dim3(2147483647u, 65535u), 1024>>>(count, 0);
		if ((err = cudaGetLastError()) != cudaSuccess) {
			printf("RESULT workload=guestload mode=runaway launch=%s ok=no\n",
			       cudaGetErrorName(err));
			return 1;
		}
		return report_sticky("runaway", cudaErrorLaunchTimeout);
	}
	if (!strcmp(argv[1], "fault") && argc == 3) {
		int *p = reinterpret_cast<int *>(count);
		if (!strcmp(argv[2], "illegal")) {
			poke<<<1, 1>>>(p, 1ll << 36);
			return report_sticky("fault-illegal", cudaErrorIllegalAddress);
		}
		if (!strcmp(argv[2], "trap")) {
			trap_k<<<1, 1>>>(p);
			return report_sticky("fault-trap", cudaErrorLaunchFailure);
		}
		return usage();
	}
	if (!strcmp(argv[1], "calls") && argc == 3) {
		double secs = atof(argv[2]), t0 = now_s();
		unsigned long long calls = 0;
		while (now_s() - t0 < secs) {
			if ((err = cudaMemset(count, 1, sizeof *count)) != cudaSuccess)
				break;
			calls++;
			std::this_thread::sleep_for(std::chrono::milliseconds(20));
		}
		printf("RESULT workload=guestload mode=calls calls=%llu error=%s at_s=%.3f\n", calls,
		       cudaGetErrorName(err), now_s() - t0);
		return 0;
	}
	// A process that has its context and does nothing: what an idle guest
	// costs the host (make bench-compare).
	if (!strcmp(argv[1], "idle") && argc == 3) {
		std::this_thread::sleep_for(std::chrono::duration<double>(atof(argv[2])));
		err = cudaStreamQuery(0);
		printf("RESULT workload=guestload mode=idle error=%s\n", cudaGetErrorName(err));
		return err == cudaSuccess ? 0 : 1;
	}
	if (!strcmp(argv[1], "hold") && (argc == 4 || (argc == 5 && !strcmp(argv[4], "pinned")))) {
		size_t mb = strtoull(argv[2], nullptr, 10), chunk = 1u << 20;
		double secs = atof(argv[3]), t0 = now_s();
		bool pinned = argc == 5;
		if (mb < 1 || secs <= 0)
			return usage();
		signal(SIGTERM, ask_stop);
		unsigned char *dev = nullptr;
		std::vector<unsigned char> out(chunk), in(chunk);
		unsigned long long rounds = 0, copies = 0, bad = 0;
		err = cudaMalloc(&dev, mb * chunk);
		while (err == cudaSuccess && now_s() - t0 < secs && !stop_asked) {
			// The time and SIGTERM are looked at every MiB, and the
			// page-locked copy comes every PINNED_EVERY MiB: a round of a
			// large hold under a slow CPU (QEMU's, in xen_real) takes
			// minutes, and a restart of xgpud in it must see new host
			// segments mapped soon after, as the end must come soon after
			// it is asked for.
			size_t i = 0;
			for (; i < mb && err == cudaSuccess && !stop_asked && now_s() - t0 < secs; i++) {
				for (size_t k = 0; k < chunk; k += 4096)
					out[k] = (unsigned char)(rounds * 131 + i * 7 + k / 4096);
				err = cudaMemcpy(dev + i * chunk, out.data(), chunk, cudaMemcpyHostToDevice);
				if (err == cudaSuccess)
					err = cudaMemcpy(in.data(), dev + i * chunk, chunk,
							 cudaMemcpyDeviceToHost);
				if (err == cudaSuccess && memcmp(in.data(), out.data(), chunk))
					bad++;
				copies += 2;
				if (pinned && err == cudaSuccess &&
				    ((i + 1) % PINNED_EVERY == 0 || i + 1 == mb))
					err = copy_out_pinned(dev + i * chunk, out.data(), chunk, &copies,
							      &bad);
			}
			if (i == mb)
				rounds++; // a round counts only whole
		}
		bool ok = err == cudaSuccess && !bad && copies > 0;
		printf("RESULT workload=guestload mode=hold mb=%zu rounds=%llu copies=%llu mismatches=%llu "
		       "elapsed_s=%.3f verified=%s error=%s\n",
		       mb, rounds, copies, bad, now_s() - t0, ok ? "yes" : "no", cudaGetErrorName(err));
		return ok ? 0 : 1;
	}
	return usage();
}
