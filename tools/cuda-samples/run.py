#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# run.py - builds NVIDIA's cuda-samples (a checkout kept outside this
# repository; none of its code is committed here) in four builds and runs each
# sample through xgpu on the simulated driver, one private xgpud per run.
#
#   tools/cuda-samples/run.py CHECKOUT [--builds a,b,c,d] [--only NAME,...]
#                             [--jobs 2] [--timeout 60] [--doc FILE]
#
# Builds (nvcc -arch=sm_90 only, to keep compile time down):
#   a  nvcc's default static runtime over xgpu's libcuda.so.1
#   b  the same with -rdc=true (what CMake's separable compilation does)
#   c  -cudart shared, over xgpu's libcudart.so.13
#   d  -rdc=true -cudart shared
# a/c and b/d share their objects (the runtime is chosen at link time), so
# each sample compiles at most twice. Objects and binaries are cached under
# BUILD/cuda-samples/ (keyed by variant) and rebuilt only when missing; a
# failed compile is remembered (delete its .failed file to retry).
#
# Each run is classified from its exit status, its output and the daemon's
# log: pass, ran (ran to its end, its result check failed: expected on the
# sim where the sim could not compute a kernel), unsupported (stopped at a
# call xgpu refuses), api-error, crash, timeout, waived (the sample itself
# declined the device: exit 2).
import argparse
import concurrent.futures as cf
import datetime
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NVCC = "/usr/local/cuda/bin/nvcc"
CUDA = "/usr/local/cuda"

# What a sample needs beyond the toolkit: such samples are not built.
NEEDS = re.compile(r"find_package\((OpenGL|GLUT|EGL|Vulkan|MPI|NVSCI|FreeImage)\b|d3d1[12]|dxgi", re.I)

LIBS = {
    "cuda_driver": ["-lcuda"],
    "cufft_static": ["-lcufft_static", "-lculibos"],
}

# Arguments a sample's README asks for, or that keep it to one device.
ARGS = {
    "cudaOpenMP": [],
}

# Samples not run, with why.
SKIP = {
    "ptxgen": "a compiler driver for libNVVM (no device use)",
    "cuda-c-linking": "needs LLVM's libraries, not the toolkit alone",
}

# Why a sample stops where the run cannot tell by itself (checked by hand).
NOTES = {
    "binomialOptions": "its CPU reference (binomialOptionsCPU, seen in gdb) runs past the limit on the "
    "shared 2-core machine; its GPU part finished",
}

# Samples whose own CPU work, not the device's, takes longer than --timeout
# on the shared 2-core build machine, with the limit they get instead (never
# less than --timeout). binomialOptions prices its options again on the host
# (binomialOptionsCPU, O(options x steps^2) in one thread, seen in gdb) after
# its GPU part has finished; the -rdc builds happen to finish within 60 s, the
# others not, so the same program's class depended on the machine's load.
# A per-sample limit keeps the global one short for every other sample, where
# a hang should still be caught quickly.
TIMEOUTS = {
    "binomialOptions": 300,
}

# libNVVM samples: driver-API programs over libnvvm, one .c each.
NVVM = {"simple": "simple", "device-side-launch": "dsl", "uvmlite": "uvmlite"}


def samples(src):
    out = []
    root = os.path.join(src, "Samples")
    for cat in sorted(os.listdir(root)):
        cdir = os.path.join(root, cat)
        if not os.path.isdir(cdir) or not cat[0].isdigit() or cat.startswith("8_"):
            continue
        for name in sorted(os.listdir(cdir)):
            d = os.path.join(cdir, name)
            cm = os.path.join(d, "CMakeLists.txt")
            if not os.path.isfile(cm):
                continue
            text = open(cm, errors="replace").read()
            if NEEDS.search(text):
                continue
            if cat.startswith("7_"):
                if name not in NVVM:
                    continue
                out.append(
                    dict(name=name, dir=d, srcs=[f"{NVVM[name]}.c"], libs=["-lnvvm", "-lcuda"], nvvm=True, cat=cat)
                )
                continue
            m = re.search(r"add_executable\(\s*(\S+)\s+([^)]*)\)", text)
            if not m:
                continue
            srcs = [s for s in m.group(2).split() if not s.startswith("$")]
            libs = []
            for lib in re.findall(r"CUDA::(\w+)", text):
                if lib == "cudart":
                    continue
                for flag in LIBS.get(lib, ["-l" + lib]):
                    if flag not in libs:
                        libs.append(flag)
            extra = []
            ksrc = re.search(r'set\(CUDA_KERNEL_SOURCE\s+"\$\{CMAKE_CURRENT_SOURCE_DIR\}/([^"]+)"', text)
            for kind in ("FATBIN", "PTX"):
                m2 = re.search(r'set\(CUDA_%s_FILE\s+"\$\{CMAKE_CURRENT_BINARY_DIR\}/([^"]+)"' % kind, text)
                if m2 and ksrc:
                    extra.append((kind.lower(), ksrc.group(1), m2.group(1)))
            # What CMake's imported targets bring along.
            if "-lcusolver" in libs:
                libs += [f for f in ("-lcublas", "-lcublasLt", "-lcusparse") if f not in libs]
            if "nvJitLink" in text and "-lnvJitLink" not in libs:
                libs.append("-lnvJitLink")
            omp = "OpenMP" in text
            rdc = "cdp" in name.lower()
            out.append(dict(name=name, dir=d, srcs=srcs, libs=libs, omp=omp, rdc_always=rdc, cat=cat, extra=extra))
    return out


def sh(cmd, log, cwd=None):
    with open(log, "ab") as f:
        f.write((" ".join(cmd) + "\n").encode())
        f.flush()
        r = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, cwd=cwd)
    return r.returncode == 0


def compile_sample(s, objroot, rdc, common):
    """Compiles one sample's sources (rdc or not); returns the object list or None."""
    odir = os.path.join(objroot, "rdc" if rdc else "norm", s["name"])
    os.makedirs(odir, exist_ok=True)
    failed = os.path.join(odir, ".failed")
    if os.path.exists(failed):
        return None
    log = os.path.join(odir, "build.log")
    objs = []
    for src in s["srcs"]:
        obj = os.path.join(odir, os.path.basename(src) + ".o")
        objs.append(obj)
        if os.path.exists(obj):
            continue
        if s.get("nvvm"):
            cmd = ["gcc", "-O2", "-c", f'-DLIBCUDADEVRT="{CUDA}/lib64/libcudadevrt.a"', "-I", os.path.join(CUDA, "include"), "-I", os.path.join(CUDA, "nvvm/include"),
                   "-I", os.path.join(os.path.dirname(s["dir"]), "common/include"), "-o", obj, os.path.join(s["dir"], src)]
        else:
            cmd = [NVCC, "-arch=sm_90", "-O2", "-std=c++17", "--extended-lambda", "-Wno-deprecated-gpu-targets",
                   "-I", common, "-I", s["dir"], "-I", os.path.join(s["dir"], "inc"), "-c", "-o", obj,
                   os.path.join(s["dir"], src)]
            if rdc or s.get("rdc_always"):
                cmd.insert(1, "-rdc=true")
            if s.get("omp"):
                cmd[1:1] = ["-Xcompiler", "-fopenmp"]
        if not sh(cmd, log):
            open(failed, "w").close()
            return None
    # Device code the sample loads itself (CMake's custom commands).
    for kind, ksrc, outname in s.get("extra", []):
        out = os.path.join(odir, outname)
        if not os.path.exists(out):
            cmd = [NVCC, "-arch=sm_90", "-I", common, "-I", s["dir"], "-o", out, "-" + kind, os.path.join(s["dir"], ksrc)]
            if not sh(cmd, log):
                open(failed, "w").close()
                return None
    return objs


def run_dir(s, exe, work, variant):
    """The directory a sample runs in, laid out as CMake's build leaves it:
    the program, its source directory's files (data, kernels NVRTC reads),
    the device code it loads and the toolkit headers NVRTC samples copy."""
    d = os.path.join(work, "run", variant, s["name"])
    os.makedirs(d, exist_ok=True)
    links = {s["name"]: exe}
    for e in os.listdir(s["dir"]):
        links.setdefault(e, os.path.join(s["dir"], e))
    odir = os.path.join(work, "obj", "norm", s["name"])
    for _, _, outname in s.get("extra", []):
        links[outname] = os.path.join(odir, outname)
    inc = os.path.join(CUDA, "include")
    for n, t in (("cooperative_groups.h", "cooperative_groups.h"), ("cooperative_groups", "cooperative_groups"),
                 ("nv", "cccl/nv"), ("cuda", "cccl/cuda")):
        links.setdefault(n, os.path.join(inc, t))
    for n, t in links.items():
        p = os.path.join(d, n)
        if os.path.lexists(p):
            os.unlink(p)
        os.symlink(t, p)
    return os.path.join(d, s["name"])


def link_sample(s, objs, bindir, variant):
    rdc = variant in "bd"
    shared = variant in "cd"
    out = os.path.join(bindir, variant, s["name"])
    os.makedirs(os.path.dirname(out), exist_ok=True)
    failed = out + ".failed"
    if os.path.exists(out):
        return out
    if os.path.exists(failed):
        return None
    log = out + ".log"
    if s.get("nvvm"):
        cmd = ["gcc", "-o", out, *objs, "-L", os.path.join(CUDA, "nvvm/lib64"), "-L", os.path.join(CUDA, "lib64/stubs"),
               f"-Wl,-rpath,{CUDA}/nvvm/lib64", *s["libs"]]
    else:
        cmd = [NVCC, "-arch=sm_90", "-o", out, *objs, "-cudart", "shared" if shared else "static",
               "-L", os.path.join(CUDA, "lib64/stubs"), *s["libs"]]
        if rdc or s.get("rdc_always"):
            cmd.insert(1, "-rdc=true")
        if s.get("omp"):
            cmd[1:1] = ["-Xcompiler", "-fopenmp"]
    if not sh(cmd, log):
        open(failed, "w").close()
        return None
    return out


ERR = re.compile(
    r"CUDA error|CUDA Error|cuda error|code=\d+\s*\(|CUDA_ERROR_|cudaError\w+|"
    r"returned error|failed with error|error code|API [Ee]rror|CUBLAS_STATUS_|CUSOLVER_STATUS_|CUSPARSE_STATUS_|"
    r"CUFFT_|NVRTC_ERROR|NPP_|checkCudaErrors|API error|error = \d+|status = \d+"
)
UNSUP = re.compile(r"is not supported by xgpu|is not implemented by xgpu|cudaErrorNotSupported|CUDA_ERROR_NOT_SUPPORTED|"
                   r"operation not supported")
FAILED_CHECK = re.compile(r"FAIL|[Ff]ailed|mismatch|MISMATCH|Error!|error|Result = FAIL|INCORRECT|incorrect")
PASSED = re.compile(r"PASS|[Pp]assed|Result = PASS|Test passed")


def classify(rc, out, dlog):
    """Returns (class, reason) for one run."""
    tail = out[-20000:]
    unsup_d = [l for l in dlog.splitlines() if "which xgpu does not support" in l]
    if rc == "timeout":
        return "timeout", ""
    if rc < 0 or rc in (134, 139, 136, 135):
        sig = -rc if rc < 0 else rc - 128
        try:
            nm = signal.Signals(sig).name
        except ValueError:
            nm = str(sig)
        return "crash", nm
    if rc == 0:
        if re.search(r"FAILED|Test failed|TEST FAILED|Result = FAIL", tail):
            return "ran", "check failed (exit 0)"
        return "pass", ""
    # EXIT_WAIVED (2) in the samples' helpers; some say so and exit 1.
    if rc == 2 or re.search(r"[Ww]aiving|GPUs are required|requires (at least )?two", tail):
        return "waived", first_line(tail, r"[Ww]aiv|[Rr]equire|not support|[Nn]o .*device")
    u = first_line(tail, UNSUP.pattern)
    if u or unsup_d:
        return "unsupported", u or unsup_d[0].split("]")[-1].strip()
    e = first_line(tail, ERR.pattern)
    if e:
        return "api-error", e
    return "ran", first_line(tail, FAILED_CHECK.pattern) or f"exit {rc}"


def first_line(text, pat):
    for line in text.splitlines():
        if re.search(pat, line):
            return line.strip()[:200]
    return ""


def run_one(s, exe, build, timeout, keep):
    """Runs one sample; one the interpreter is too slow for runs again with
    XGPU_SIM_PTX=off (kernels take modeled time and compute nothing), so that
    its API path is still measured to its end."""
    if not PTX_FIRST:
        r = run_once(s, exe, build, timeout, keep, {"XGPU_SIM_PTX": "off"})
        r.pop("interp", None)
        r.pop("slow", None)
        if r["cls"] not in STOPS or r["cls"] == "timeout":
            return r
        # A stop: again with the interpreter, which computes every kernel
        # that has PTX. If the program then gets further, the stop was the
        # sim's; if it still stops after kernels nothing could compute
        # (NVIDIA's libraries ship no PTX for most), the sim is named.
        r2 = run_once(s, exe, build, timeout, keep, {}, suffix=".ptx")
        nocomp = r2.pop("nocompute", 0)
        r2.pop("interp", None)
        if r2["cls"] not in STOPS:
            r2.pop("slow", None)
            r2["why"] = ("[with PTX] " + r2["why"]).strip()
            return r2
        if "xgpu" in r["why"]:
            pass  # xgpu named what it refused: its own stop, whatever the sim computed
        elif nocomp:
            r["cause"] = f"sim: {nocomp} kernels without PTX computed nothing before the stop"
        elif r2.pop("slow", False):
            r["cause"] = "sim: the interpreter is too slow for its kernels (the sim's watchdog ends them)"
        return r
    r = run_once(s, exe, build, timeout, keep, {})
    interp = r.pop("interp", False)
    if r["cls"] == "timeout" or (interp and r["cls"] not in ("pass", "ran", "waived")):
        # Its own log names: the interpreter run's output and daemon log stay.
        r2 = run_once(s, exe, build, timeout, keep, {"XGPU_SIM_PTX": "off"}, ".ptx-off")
        r2.pop("interp", None)
        r2["why"] = (f"[PTX off; with PTX: {r['cls']}: {r['why'][:80]}] " + r2["why"]).strip()
        r2["ptx"] = "off"
        return r2
    return r


STOPS = ("unsupported", "api-error", "crash", "timeout")


def run_once(s, exe, build, timeout, keep, extra, suffix=""):
    tmp = tempfile.mkdtemp(prefix="xgpu-cs-")
    sock = os.path.join(tmp, "xgpud.sock")
    dlogf = os.path.join(tmp, "xgpud.log")
    env = dict(os.environ)
    env["XGPU_SOCKET"] = sock
    env["XGPU_SIM_KERNELS"] = f"{build}/lib/simkernels"
    env.update(extra)
    limits = []
    if PTX_FIRST and extra.get("XGPU_SIM_PTX") != "off":
        # An interpreted kernel runs thousands of times slower than on a GPU:
        # the sample's own time limit bounds the run, not the sim's watchdog
        # (30 s for interpreted kernels) or xgpud's kernel timeout (30 s).
        env.setdefault("XGPU_SIM_WATCHDOG_MS", str(timeout * 1000))
        limits = ["--kernel-timeout", str(timeout)]
    d = subprocess.Popen(
        [f"{build}/bin/xgpud", "--foreground", "--executor", "sim", "--socket", sock, "--log-level", "info",
         *limits],
        stdout=open(dlogf, "wb"), stderr=subprocess.STDOUT, env=env, start_new_session=True,
    )
    for _ in range(100):
        if subprocess.run([f"{build}/bin/xl-gpu", "list"], env=env, capture_output=True).returncode == 0:
            break
        time.sleep(0.1)
    renv = dict(env)
    renv["LD_LIBRARY_PATH"] = f"{build}/lib"
    t0 = time.time()
    p = subprocess.Popen([exe, *ARGS.get(s["name"], [])], cwd=os.path.dirname(exe), env=renv, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        out, _ = p.communicate(timeout=timeout)
        rc = p.returncode
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, _ = p.communicate()
        rc = "timeout"
    secs = time.time() - t0
    d.send_signal(signal.SIGTERM)
    try:
        d.wait(timeout=10)
    except subprocess.TimeoutExpired:
        os.killpg(d.pid, signal.SIGKILL)
        d.wait()
    out = out.decode(errors="replace")
    dlog = open(dlogf, errors="replace").read()
    cls, why = classify(rc, out, dlog)
    # The interpreter ran a kernel and failed it (too slow for the sim's
    # watchdog, or a fault of its own): the run is repeated without it.
    interp = bool(re.search(r"xgpu-simdrv: kernel \S+ faulted|interpreted in", dlog))
    slow = "faulted: cancelled (CUDA_ERROR_LAUNCH_TIMEOUT)" in dlog
    with open(os.path.join(keep, s["name"] + suffix + ".out"), "w") as f:
        f.write(out)
    with open(os.path.join(keep, s["name"] + suffix + ".xgpud.log"), "w") as f:
        f.write(dlog)
    shutil.rmtree(tmp, ignore_errors=True)
    if s["name"] in NOTES and cls in ("timeout", "crash", "api-error"):
        why = (why + " " + NOTES[s["name"]]).strip()
    return dict(name=s["name"], cat=s["cat"], rc=rc, cls=cls, why=why, secs=round(secs, 1), interp=interp, slow=slow,
                nocompute=len(set(re.findall(r"kernel (\S+) has no host implementation: it takes its modeled time but computes nothing", dlog))))


# With --ptx, kernels run through the sim's PTX interpreter first (slow: many
# samples then need minutes); by default they take modeled time only, which
# measures the API path, the thing counted here.
PTX_FIRST = False

CLASSES = ["pass", "ran", "waived", "unsupported", "api-error", "crash", "timeout"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("checkout")
    ap.add_argument("--builds", default="a,c")
    ap.add_argument("--only", default="")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=int, default=60)
    ap.add_argument("--build-dir", default=os.path.join(REPO, "build"))
    ap.add_argument("--doc", default="")
    ap.add_argument("--no-run", action="store_true")
    ap.add_argument("--ptx", action="store_true", help="compute kernels with the sim's PTX interpreter first")
    a = ap.parse_args()
    global PTX_FIRST
    PTX_FIRST = a.ptx
    src = os.path.abspath(a.checkout)
    build = os.path.abspath(a.build_dir)
    work = os.path.join(build, "cuda-samples")
    common = os.path.join(src, "Common")
    allsamples = samples(src)
    only = set(a.only.split(",")) if a.only else None
    todo = [s for s in allsamples if (only is None or s["name"] in only) and s["name"] not in SKIP]
    variants = a.builds.split(",")

    # Compile: objects once per (sample, rdc), then link each variant.
    exes = {v: {} for v in variants}
    buildfail = {v: [] for v in variants}

    def build_one(s):
        res = {}
        for v in variants:
            objs = compile_sample(s, os.path.join(work, "obj"), v in "bd", common)
            exe = link_sample(s, objs, os.path.join(work, "bin"), v) if objs else None
            res[v] = exe
        return s, res

    with cf.ThreadPoolExecutor(a.jobs) as ex:
        for s, res in ex.map(build_one, todo):
            for v, exe in res.items():
                if exe:
                    exes[v][s["name"]] = (s, run_dir(s, exe, work, v))
                else:
                    buildfail[v].append(s["name"])
    for v in variants:
        print(f"build {v}: {len(exes[v])} built, {len(buildfail[v])} failed: {' '.join(buildfail[v])}", flush=True)
    if a.no_run:
        return

    results = {}
    for v in variants:
        keep = os.path.join(work, "runs", v)
        os.makedirs(keep, exist_ok=True)
        items = sorted(exes[v].values(), key=lambda t: t[0]["name"])
        with cf.ThreadPoolExecutor(a.jobs) as ex:
            futs = [ex.submit(run_one, s, exe, build, max(a.timeout, TIMEOUTS.get(s["name"], 0)), keep)
                    for s, exe in items]
            res = [f.result() for f in futs]
        for r in res:
            print(f"{v} {r['name']:40s} {r['cls']:12s} {r['secs']:6.1f}s {r['why']}", flush=True)
        # Merge into the variant's stored results (a partial rerun updates only its samples).
        store = os.path.join(work, f"results-{v}.json")
        old = json.load(open(store)) if os.path.exists(store) else {}
        for r in res:
            old[r["name"]] = r
        for n in buildfail[v]:
            old[n] = dict(name=n, cls="build-failed", why="", rc=None, secs=0, cat="")
        json.dump(old, open(store, "w"), indent=1)
        results[v] = old
        counts = {c: sum(1 for r in old.values() if r["cls"] == c) for c in CLASSES + ["build-failed"]}
        print(f"build {v}: " + ", ".join(f"{c} {n}" for c, n in counts.items()), flush=True)
    if a.doc:
        write_doc(a.doc, src, work)


def write_doc(path, src, work):
    commit = open(os.path.join(src, ".cuda-samples-commit")).read().strip() if os.path.exists(
        os.path.join(src, ".cuda-samples-commit")) else "unknown"
    names = {"a": "static runtime", "b": "static, -rdc=true", "c": "-cudart shared", "d": "-rdc=true -cudart shared"}
    res = {}
    for v in "abcd":
        f = os.path.join(work, f"results-{v}.json")
        if os.path.exists(f):
            res[v] = json.load(open(f))
    lines = [f"# cuda-samples through xgpu on the simulated driver ({datetime.date.today()})", "",
             f"NVIDIA/cuda-samples commit `{commit}`, built and run by `tools/cuda-samples/run.py` "
             "(`nvcc -arch=sm_90 -O2`, one xgpud `--executor sim` per run, 60 s per sample; "
             + ", ".join(f"{n} {t} s" for n, t in sorted(TIMEOUTS.items()))
             + ", whose own CPU reference takes longer: run.py's TIMEOUTS).", "",
             "| build | " + " | ".join(CLASSES) + " | total | stops after uncomputed kernels |",
             "|---|" + "---|" * (len(CLASSES) + 2)]
    for v, r in res.items():
        counts = [sum(1 for x in r.values() if x["cls"] == c) for c in CLASSES]
        sim = sum(1 for x in r.values() if x["cls"] in STOPS and x.get("cause"))
        lines.append(f"| ({v}) {names[v]} | " + " | ".join(map(str, counts)) + f" | {sum(counts)} | {sim} |")
    lines += ["", "Per sample (class; for a stop or a waiver, the first line that names it, and where the "
              "sim is the cause, which):", "",
              "| sample | " + " | ".join(f"({v})" for v in res) + " | why (first build that stopped) |",
              "|---|" + "---|" * (len(res) + 1)]
    allnames = sorted(set().union(*[set(r) for r in res.values()])) if res else []
    for n in allnames:
        cl = [res[v].get(n, {}).get("cls", "-") for v in res]
        why = ""
        for v in res:
            x = res[v].get(n)
            if x and x["cls"] in ("unsupported", "api-error", "crash", "timeout", "waived"):
                why = f"({v}) {x['why']}".replace("|", "\\|")
                if x.get("cause"):
                    why += f" [{x['cause']}]"
                break
        lines.append(f"| {n} | " + " | ".join(cl) + f" | {why} |")
    open(path, "w").write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
