# SPDX-License-Identifier: Apache-2.0
"""JAX with its CUDA 12 plugin through xgpu's libcuda.so.1 and
libnvidia-ml.so.1 (run by tests/e2e/frameworks.sh).

XLA compiles to SASS with its own PTX compiler, which the simulated driver
does not compute: on the sim the API path is checked (the device is a CUDA
device, no exception, the daemon ran the launches) and the copies are checked
bit for bit. XGPU_CHECK_RESULTS=1 (a real GPU behind the daemon) checks the
computed results too.

Two settings, both explained in docs/driver-frontend.md:
- JAX looks for /dev/nvidia* before it loads its CUDA plugin, and a guest of
  xgpu has no NVIDIA device node; the probe is answered here, as a guest
  image would by creating the node.
- XLA's autotuner checks its buffers' red zones with a memset on page-locked
  host memory through unified addressing, which xgpu refuses by design (guest
  memory is not the device's); tests/e2e/frameworks.sh runs with
  XLA_FLAGS=--xla_gpu_autotune_level=0.
"""
import os

import jax._src.hardware_utils as hardware_utils

hardware_utils.has_visible_nvidia_gpu = lambda: True

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402


def check(name):
    print(f"CHECK {name} ok", flush=True)


if __name__ == "__main__":
    results = os.environ.get("XGPU_CHECK_RESULTS") == "1"
    devs = jax.devices()
    print(f"jax {jax.__version__} devices {devs}", flush=True)
    assert devs and devs[0].platform == "gpu", devs
    check("device")

    # Copies both ways, bit for bit, at sizes around page and chunk edges.
    rng = np.random.default_rng(7)
    for n in (1, 255, 4097, 1 << 20):
        host = rng.standard_normal(n).astype(np.float32)
        back = np.asarray(jax.device_put(host, devs[0]))
        assert np.array_equal(back, host), n
    check("copies")

    @jax.jit
    def f(x, y):
        return jnp.sin(x) * y + x @ y.T

    x = jnp.arange(64.0, dtype=jnp.float32).reshape(8, 8)
    r = f(x, x).block_until_ready()
    if results:
        xn = np.arange(64.0, dtype=np.float32).reshape(8, 8)
        np.testing.assert_allclose(np.asarray(r), np.sin(xn) * xn + xn @ xn.T, rtol=1e-5)
    check("jit")

    # A training step: grad of a small MLP's loss, then an update.
    def loss(w, xb, yb):
        h = jnp.tanh(xb @ w["a"])
        return jnp.mean((h @ w["b"] - yb) ** 2)

    w = {"a": jnp.ones((16, 32)) * 0.01, "b": jnp.ones((32, 1)) * 0.01}
    xb = jnp.asarray(rng.standard_normal((64, 16)).astype(np.float32))
    yb = jnp.asarray(rng.standard_normal((64, 1)).astype(np.float32))
    step = jax.jit(lambda w: jax.tree_util.tree_map(lambda p, g: p - 0.1 * g, w, jax.grad(loss)(w, xb, yb)))
    for _ in range(3):
        w = step(w)
    jax.block_until_ready(w)
    check("grad")
