# SPDX-License-Identifier: Apache-2.0
"""numba-cuda, unmodified, through xgpu's libcuda.so.1 (run by tests/e2e/frameworks.sh).

numba compiles @cuda.jit kernels with NVVM to PTX and links them with
nvJitLink into SASS (cuda.core's Linker), which the simulated driver does not
compute: on the sim only the API path is checked (no exception, the daemon ran
the launches). XGPU_CHECK_RESULTS=1 (a real GPU behind the daemon) checks the
results too.
"""
import os

import numpy as np
from numba import cuda


@cuda.jit
def axpy(a, x, y, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = a * x[i] + y[i]


@cuda.jit
def block_sum(x, out):
    tmp = cuda.shared.array(128, dtype=np.float32)
    t = cuda.threadIdx.x
    tmp[t] = x[cuda.grid(1)]
    cuda.syncthreads()
    s = 64
    while s > 0:
        if t < s:
            tmp[t] += tmp[t + s]
        cuda.syncthreads()
        s //= 2
    if t == 0:
        cuda.atomic.add(out, 0, tmp[0])


if __name__ == "__main__":
    from importlib.metadata import version

    print(f"numba-cuda {version('numba-cuda')} device {cuda.get_current_device().name}", flush=True)
    n = 1000
    x = np.arange(n, dtype=np.float32)
    y = np.ones(n, dtype=np.float32)
    dx, dy = cuda.to_device(x), cuda.to_device(y)
    dout = cuda.device_array_like(x)
    axpy[(n + 127) // 128, 128](np.float32(2.0), dx, dy, dout)
    results = os.environ.get("XGPU_CHECK_RESULTS") == "1"
    out = dout.copy_to_host()
    if results:
        np.testing.assert_allclose(out, 2 * x + 1)
    v = cuda.to_device(np.ones(512, dtype=np.float32))
    acc = cuda.to_device(np.zeros(1, dtype=np.float32))
    block_sum[4, 128](v, acc)
    total = acc.copy_to_host()[0]
    if results:
        assert total == 512.0, total
    cuda.synchronize()
    print("CHECK numba-jit ok", flush=True)
