# SPDX-License-Identifier: Apache-2.0
"""CuPy, unmodified, through xgpu's libcuda.so.1 (run by tests/e2e/frameworks.sh).

CuPy compiles its elementwise, reduction and raw kernels at run time with
NVRTC. The wrapper sets CUPY_COMPILE_WITH_PTX=1 so that they reach the
driver as PTX, which the simulated driver's PTX interpreter runs: those
results are checked against NumPy. cuBLAS, CUB (sum, max) and cuFFT's
complex transforms bring SASS only, which the sim does not compute: there
only the API path (no exception) is checked; cuFFT's real transforms are
compiled at run time and computed, and checked.

Each step prints "CHECK NAME ok"; the wrapper counts them.
"""
import sys

import cupy as cp
import numpy as np


def check(name):
    cp.cuda.runtime.deviceSynchronize()
    print(f"CHECK {name} ok", flush=True)


def computed():
    # Whether the sim computes PTX kernels; the wrapper says (XGPU_PTX_COMPUTES).
    import os

    return os.environ.get("XGPU_PTX_COMPUTES") == "1"


def elementwise():
    a = cp.arange(1000, dtype=cp.float32)
    b = cp.full(1000, 2.0, dtype=cp.float32)
    c = a * b + 1.0
    host = cp.asnumpy(c)
    add = cp.ElementwiseKernel("float32 x, float32 y", "float32 z", "z = x * x - y", "xgpu_sq_minus")
    d = add(a, b)
    if computed():
        np.testing.assert_allclose(host, np.arange(1000, dtype=np.float32) * 2 + 1)
        np.testing.assert_allclose(cp.asnumpy(d), np.arange(1000, dtype=np.float32) ** 2 - 2)
    check("elementwise")


def reduction():
    # sum() and max() run CUB's kernels, which CuPy ships as SASS: not
    # computed by the sim. A ReductionKernel is compiled with NVRTC: checked.
    a = cp.arange(4096, dtype=cp.float64)
    s = a.sum()
    m = cp.max(a.reshape(64, 64), axis=1)
    float(s), cp.asnumpy(m)
    red = cp.ReductionKernel("float32 x", "float32 y", "x * x", "a + b", "y = a", "0", "xgpu_sumsq")
    q = red(cp.full(100, 2.0, dtype=cp.float32))
    if computed():
        assert float(q) == 400.0, float(q)
    else:
        float(q)
    check("reduction")


def rawkernel():
    src = r"""
    extern "C" __global__ void xgpu_saxpy(float a, const float *x, float *y, int n)
    {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n)
            y[i] = a * x[i] + y[i];
    }
    """
    k = cp.RawKernel(src, "xgpu_saxpy")
    n = 3000
    x = cp.arange(n, dtype=cp.float32)
    y = cp.ones(n, dtype=cp.float32)
    k(((n + 255) // 256,), (256,), (cp.float32(3.0), x, y, cp.int32(n)))
    mod = cp.RawModule(code=src)
    mod.get_function("xgpu_saxpy")((12,), (256,), (cp.float32(1.0), x, y, cp.int32(n)))
    if computed():
        np.testing.assert_allclose(cp.asnumpy(y), np.arange(n, dtype=np.float32) * 4 + 1)
    else:
        cp.asnumpy(y)
    check("rawkernel")


def matmul():
    for dtype in (cp.float32, cp.float16, cp.float64):
        for m, n, k in ((64, 64, 64), (128, 1, 96), (257, 96, 33)):
            a = cp.ones((m, k), dtype=dtype)
            b = cp.ones((k, n), dtype=dtype)
            c = a @ b
            assert c.shape == (m, n)
            cp.asnumpy(c)
    check("cublas-matmul")


def fft():
    x = cp.random.random(1024).astype(cp.complex64)
    f = cp.fft.fft(x)
    r = cp.fft.irfft(cp.fft.rfft(cp.ones((8, 256), dtype=cp.float32)), n=256)
    assert f.shape == (1024,) and r.shape == (8, 256)
    back = cp.asnumpy(r)
    if computed():
        # cuFFT compiles its real-to-complex kernels at run time (PTX), which
        # the sim computes; the complex one above is SASS, not computed.
        np.testing.assert_allclose(back, np.ones((8, 256), dtype=np.float32), rtol=1e-5)
    check("fft")


def streams():
    s = cp.cuda.Stream(non_blocking=True)
    e0, e1 = cp.cuda.Event(), cp.cuda.Event()
    host = np.arange(1 << 16, dtype=np.int32)
    with s:
        e0.record()
        d = cp.asarray(host)
        e1.record()
    s.synchronize()
    assert cp.cuda.get_elapsed_time(e0, e1) >= 0.0
    np.testing.assert_array_equal(cp.asnumpy(d), host)  # copies are real on the sim
    check("streams-events")


STEPS = {
    "elementwise": elementwise,
    "reduction": reduction,
    "rawkernel": rawkernel,
    "matmul": matmul,
    "fft": fft,
    "streams": streams,
}

if __name__ == "__main__":
    names = sys.argv[1:] or list(STEPS)
    print(f"cupy {cp.__version__} runtime {cp.cuda.runtime.runtimeGetVersion()} driver {cp.cuda.runtime.driverGetVersion()} nvrtc {cp.cuda.nvrtc.getVersion()}", flush=True)
    for name in names:
        STEPS[name]()
