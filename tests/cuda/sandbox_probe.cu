/* SPDX-License-Identifier: Apache-2.0 */
// sandbox_probe.cu - a guest program whose kernel tries one thing the
// executor's sandbox forbids, for tests/e2e/executor_sandbox.sh. On the
// simulated driver the kernel's host implementation (sandbox_probe_simk.c)
// runs inside the domain's executor, as a hostile guest's code would, and
// makes the system call; on a GPU the kernel does nothing.
//
//   sandbox_probe WHAT ARG
//
// WHAT: connect (ARG: a unix socket's path), open (ARG: a file), ptrace,
// kill, vmread (ARG: a pid). One line on stdout:
//   PROBE what=WHAT outcome=allowed|denied errno=N
//   PROBE what=WHAT outcome=failed error=cudaError... (the executor died)
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

__global__ void probe(int what, char *arg, int *result)
{
	if (threadIdx.x == 0 && blockIdx.x == 0)
		result[0] = -1; // nothing tried on a GPU
	(void)what;
	(void)arg;
}

int main(int argc, char **argv)
{
	static const char *const names[] = {"", "connect", "open", "ptrace", "kill", "vmread"};
	int what = 0;
	for (int i = 1; argc == 3 && i < (int)(sizeof names / sizeof names[0]); i++)
		if (!strcmp(argv[1], names[i]))
			what = i;
	if (!what || strlen(argv[2]) >= 256) {
		fprintf(stderr, "usage: sandbox_probe connect|open|ptrace|kill|vmread ARG\n");
		return 2;
	}
	char *arg = nullptr;
	int *result = nullptr;
	char buf[256] = {0};
	snprintf(buf, sizeof buf, "%s", argv[2]);
	int res = -2;
	cudaError_t e = cudaMalloc(&arg, sizeof buf);
	if (e == cudaSuccess)
		e = cudaMalloc(&result, sizeof(int));
	if (e == cudaSuccess)
		e = cudaMemcpy(arg, buf, sizeof buf, cudaMemcpyHostToDevice);
	if (e == cudaSuccess) {
		probe<<<1, 1>>>(what, arg, result);
		e = cudaGetLastError();
	}
	if (e == cudaSuccess)
		e = cudaMemcpy(&res, result, sizeof res, cudaMemcpyDeviceToHost);
	if (e != cudaSuccess) {
		printf("PROBE what=%s outcome=failed error=%s\n", argv[1], cudaGetErrorName(e));
		return 1;
	}
	if (res < 0)
		printf("PROBE what=%s outcome=untried\n", argv[1]);
	else
		printf("PROBE what=%s outcome=%s errno=%d\n", argv[1], res == 0 ? "allowed" : "denied", res);
	return 0;
}
