# SPDX-License-Identifier: Apache-2.0
"""PyTorch, unmodified, through xgpu's libcuda.so.1 (run by tests/e2e/frameworks.sh).

On the simulated driver only the API path is checked: every step must run
without an exception. Torch's wheels carry SASS only (no PTX), so the sim
computes none of its kernels; what is checked numerically is what the daemon
really does on the sim: copies host to device, device to device and back.

Each step prints "CHECK NAME ok"; the wrapper counts them. With
XGPU_STEP_CALLS=PATH the training loop measures the daemon's call count (one
per round trip, from `xl-gpu stats --json`) around each of its steps and
writes them to PATH.
"""
import json
import os
import subprocess
import sys

import torch


def check(name):
    torch.cuda.synchronize()
    print(f"CHECK {name} ok", flush=True)


def domain_calls():
    """Round trips the daemon has served for this process's domain."""
    out = subprocess.run(
        [os.environ["XGPU_XL_GPU"], "stats", "--json"], check=True, capture_output=True, text=True
    ).stdout
    doms = json.loads(out)["domains"]
    return sum(d["calls"] for d in doms), sum(d.get("kernels", 0) for d in doms)


def tensors():
    assert torch.cuda.is_available() and torch.cuda.device_count() == 1
    host = torch.arange(4096, dtype=torch.float32).reshape(64, 64)
    dev = host.to("cuda")
    assert dev.is_cuda
    # Copies are carried out by the daemon on the sim: check the bits.
    assert torch.equal(dev.cpu(), host)
    other = torch.empty_like(dev)
    other.copy_(dev)  # device to device
    assert torch.equal(other.cpu(), host)
    pinned = host.pin_memory()
    back = torch.empty_like(host).pin_memory()
    d2 = pinned.to("cuda", non_blocking=True)
    back.copy_(d2, non_blocking=True)
    torch.cuda.synchronize()
    assert torch.equal(back, host)
    half = dev.half()
    assert half.dtype == torch.float16 and half.shape == (64, 64)
    check("tensors")


def matmul():
    for dtype in (torch.float32, torch.float16):
        for m, n, k in ((64, 64, 64), (128, 1, 96), (257, 96, 33), (1, 512, 512)):
            a = torch.randn(m, k, device="cuda", dtype=dtype)
            b = torch.randn(k, n, device="cuda", dtype=dtype)
            c = a @ b
            assert c.shape == (m, n) and c.dtype == dtype
        bat = torch.bmm(torch.randn(8, 32, 48, device="cuda", dtype=dtype), torch.randn(8, 48, 16, device="cuda", dtype=dtype))
        assert bat.shape == (8, 32, 16)
        lin = torch.nn.functional.linear(torch.randn(16, 128, device="cuda", dtype=dtype), torch.randn(64, 128, device="cuda", dtype=dtype), torch.randn(64, device="cuda", dtype=dtype))
        assert lin.shape == (16, 64)
    check("matmul-fp32-fp16")


def conv():
    for dtype in (torch.float32, torch.float16):
        x = torch.randn(4, 3, 32, 32, device="cuda", dtype=dtype)
        conv = torch.nn.Conv2d(3, 16, 3, padding=1).to("cuda", dtype)
        y = conv(x)
        assert y.shape == (4, 16, 32, 32)
        y2 = torch.nn.functional.conv2d(x, torch.randn(8, 3, 5, 5, device="cuda", dtype=dtype), stride=2)
        assert y2.shape == (4, 8, 14, 14)
    check("conv2d")


def training():
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(1, 8, 3, padding=1),
        torch.nn.ReLU(),
        torch.nn.MaxPool2d(2),
        torch.nn.Flatten(),
        torch.nn.Linear(8 * 14 * 14, 64),
        torch.nn.ReLU(),
        torch.nn.Linear(64, 10),
    ).cuda()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x = torch.randn(32, 1, 28, 28, device="cuda")
    y = torch.randint(0, 10, (32,), device="cuda")
    path = os.environ.get("XGPU_STEP_CALLS")
    steps = []
    for i in range(5):
        torch.cuda.synchronize()
        c0, k0 = domain_calls() if path else (0, 0)
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        torch.cuda.synchronize()
        if path:
            c1, k1 = domain_calls()
            steps.append({"step": i, "calls": c1 - c0, "kernels": k1 - k0})
        # Parameters and gradients exist on the device for every layer.
        for p in model.parameters():
            assert p.is_cuda and p.grad is not None and p.grad.shape == p.shape
    loss.item()  # a copy back from the device
    if path:
        with open(path, "w") as f:
            json.dump(steps, f)
    check("training-autograd-adam")


def fft():
    x = torch.randn(4, 256, device="cuda")
    f = torch.fft.rfft(x)
    assert f.shape == (4, 129) and f.is_complex()
    assert torch.fft.irfft(f, n=256).shape == (4, 256)
    z = torch.fft.fft2(torch.randn(2, 32, 32, device="cuda", dtype=torch.complex64))
    assert z.shape == (2, 32, 32)
    check("fft")


def streams_events():
    s1 = torch.cuda.Stream()
    s2 = torch.cuda.Stream(priority=-1)
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    host = torch.arange(1 << 16, dtype=torch.float32)
    with torch.cuda.stream(s1):
        start.record()
        a = host.to("cuda", non_blocking=True)
        b = a * 3
        end.record()
    s2.wait_event(end)
    with torch.cuda.stream(s2):
        c = torch.empty_like(a)
        c.copy_(a)
    s2.wait_stream(s1)
    s2.synchronize()
    end.synchronize()
    # s2 waited for s1 (wait_stream records an event on s1): once s2 is
    # synchronized, s1 has nothing left either.
    assert end.query() and s1.query() and s2.query()
    assert start.elapsed_time(end) >= 0.0
    b.record_stream(s2)
    assert torch.equal(c.cpu(), host)
    check("streams-events")


def allocator():
    conf = os.environ.get("PYTORCH_ALLOC_CONF", os.environ.get("PYTORCH_CUDA_ALLOC_CONF", ""))
    torch.cuda.empty_cache()
    base = torch.cuda.memory_allocated()
    keep = []
    for i in range(40):
        # Sizes across the small (< 1 MiB) and large pools, some past 20 MiB.
        keep.append(torch.empty((1 << (10 + i % 16)) + i * 4096, dtype=torch.uint8, device="cuda"))
        if i % 3 == 0:
            keep.pop(0)
    assert torch.cuda.memory_allocated() > base
    reserved = torch.cuda.memory_reserved()
    assert reserved >= torch.cuda.memory_allocated()
    host = torch.arange(1 << 20, dtype=torch.int32)
    big = host.cuda()
    expandable = "expandable_segments:True" in conf
    # With expandable segments torch maps its pools with cuMemCreate /
    # cuMemMap and grows them in place; without, each segment is a cuMemAlloc.
    segs = torch.cuda.memory_snapshot()
    assert segs and all(bool(s.get("is_expandable")) == expandable for s in segs), [
        (s.get("is_expandable"), s["total_size"]) for s in segs
    ]
    del keep
    grown = torch.empty(64 << 20, dtype=torch.uint8, device="cuda")
    assert torch.equal(big.cpu(), host)
    del grown, big
    torch.cuda.empty_cache()
    assert torch.cuda.memory_allocated() == base
    stats = torch.cuda.memory_stats()
    assert stats["num_alloc_retries"] == 0 and stats["num_ooms"] == 0
    check("allocator" + ("-expandable" if expandable else ""))


STEPS = {
    "tensors": tensors,
    "matmul": matmul,
    "conv": conv,
    "training": training,
    "fft": fft,
    "streams": streams_events,
    "allocator": allocator,
}

if __name__ == "__main__":
    names = sys.argv[1:] or list(STEPS)
    print(f"torch {torch.__version__} cuda {torch.version.cuda} cudnn {torch.backends.cudnn.version()}", flush=True)
    for name in names:
        STEPS[name]()
