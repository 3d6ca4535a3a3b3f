#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# install-deps.sh - install the Debian 12 packages xgpu needs to build and test,
# only those missing. Called by `make` (once; the stamp build/.deps-ok records
# success) and safe to run by hand. --packaging: what `make deb` needs;
# --runtimes DIR: NVIDIA's CUDA runtimes from PyPI for the runtime matrix;
# --frameworks [DIR]: the virtualenv of PyTorch, CuPy, numba-cuda and JAX for
# tests/e2e/frameworks.sh (both below).
set -euo pipefail

PACKAGES=(gcc make pkg-config libc6-dev libxen-dev libcmocka-dev libjansson-dev libzstd-dev liblz4-dev jq procps)
# The executor's sandbox (backend/executor/sandbox.c) filters system calls with libseccomp.
PACKAGES+=(libseccomp-dev)
# Remote GPUs (common/remote.c): GnuTLS for TLS 1.3 with pre-shared keys or certificates (loaded with
# dlopen at run time, so only hosts that use remote channels need libgnutls30); iproute2
# for tests/e2e/remote.sh's network namespaces.
PACKAGES+=(libgnutls28-dev iproute2)
# tests/e2e/remote_cert.sh makes its CA and certificates with the openssl CLI.
PACKAGES+=(openssl)
# The real-Xen test (tools/xen-testbed, tests/e2e/xen_real.sh) boots Xen under QEMU;
# the guest packages themselves are downloaded into a cache, never installed.
PACKAGES+=(qemu-system-x86 cpio)
# xen-sched-patch/build.sh builds Xen's hypervisor from Debian's source package
# (apt-get source, into a cache) for tests/e2e/xen_sched_patch.sh.
PACKAGES+=(dpkg-dev flex bison python3)
# The libFuzzer harnesses (tests/fuzz/, `make fuzz`, run briefly by `make test`):
# clang with its fuzzer and sanitizer runtimes.
PACKAGES+=(clang-14 libclang-rt-14-dev)
# The manual pages (docs/man/*.scd -> build/man/, `make man`, also built by tests-build).
PACKAGES+=(scdoc)
# The plots of `make experiment` (tools/experiment/run.sh --report).
PACKAGES+=(gnuplot-nox)

# `make deb` and `make deb-test` only (install-deps.sh --packaging), so that
# `make test` on a fresh machine does not pull them: debhelper builds the
# packages, lintian checks them, debootstrap makes the throwaway root that
# tests/pkg/run.sh installs them in, systemd-container's systemd-nspawn runs
# it where it can.
PACKAGING_PACKAGES=(dpkg-dev debhelper lintian debootstrap systemd-container)
packaging_only=false
if [ "${1:-}" = --packaging ]; then
	PACKAGES=("${PACKAGING_PACKAGES[@]}")
	packaging_only=true
fi

# --runtimes DIR: NVIDIA's CUDA runtime of every release in
# tests/data/runtime-releases.txt, from its PyPI wheel (nvidia-cuda-runtime-cu12,
# nvidia-cuda-runtime; about 1 to 3.5 MB each, some 25 MB in all), unpacked to
# DIR/RELEASE/libcudart.so.N for tests/e2e/runtime_matrix.sh. Releases already
# in DIR are kept; nothing is installed. Exits 1, naming them, when some could
# not be fetched (no network, or PyPI has dropped a version).
if [ "${1:-}" = --runtimes ]; then
	dir=${2:?usage: install-deps.sh --runtimes DIR}
	list=$(dirname "$0")/../tests/data/runtime-releases.txt
	mkdir -p "$dir"
	failed=()
	while read -r release package version; do
		case $release in '' | '#'*) continue ;; esac
		compgen -G "$dir/$release/libcudart.so.*" >/dev/null && continue
		tmp=$(mktemp -d "$dir/.fetch.XXXXXX")
		if python3 -m pip download --quiet --no-deps --disable-pip-version-check --only-binary=:all: \
			--platform manylinux2014_x86_64 --dest "$tmp" "$package==$version" >"$tmp/pip.log" 2>&1 &&
			python3 - "$tmp" "$dir/$release" <<'PY'; then
import glob, os, sys, zipfile
tmp, out = sys.argv[1], sys.argv[2]
wheel = glob.glob(os.path.join(tmp, "*.whl"))[0]
os.makedirs(out, exist_ok=True)
with zipfile.ZipFile(wheel) as z:
    names = [n for n in z.namelist() if os.path.basename(n).startswith("libcudart.so.")]
    if not names:
        sys.exit(f"{wheel} holds no libcudart.so")
    for n in names:
        with z.open(n) as src, open(os.path.join(out, os.path.basename(n)), "wb") as dst:
            dst.write(src.read())
PY
			echo "install-deps: CUDA runtime $release ($package $version) in $dir/$release"
		else
			tail -n 3 "$tmp/pip.log" >&2 || true
			failed+=("$release")
		fi
		rm -rf "$tmp"
	done <"$list"
	if ((${#failed[@]})); then
		echo "install-deps: could not fetch the CUDA runtime of release ${failed[*]} from PyPI" >&2
		exit 1
	fi
	exit 0
fi

# --frameworks [DIR]: a virtualenv in DIR (default
# ${XGPU_CACHE_DIR:-~/.cache/xgpu}/frameworks, where tests/e2e/frameworks.sh
# looks) with the frameworks of tests/data/frameworks-requirements.txt, every
# package pinned: PyTorch's default CUDA build, CuPy, numba-cuda. Some 4.2 GB of
# wheels from PyPI, 7.3 GB installed; about 3 minutes to download at 25-60 MB/s
# and 3.5 to install on 2 cores (8 in all while other builds ran). A virtualenv that holds exactly that list is
# kept (the file .xgpu-requirements in it records it); any other is made anew.
# XGPU_PKG_CACHE, when set, keeps pip's downloads (PIP_CACHE_DIR) between runs,
# as .ci/run does.
if [ "${1:-}" = --frameworks ]; then
	req=$(cd "$(dirname "$0")/.." && pwd)/tests/data/frameworks-requirements.txt
	dir=${2:-${XGPU_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/xgpu}/frameworks}
	if cmp -s "$req" "$dir/.xgpu-requirements"; then
		echo "install-deps: the frameworks' virtualenv in $dir is up to date"
		exit 0
	fi
	[ -n "${XGPU_PKG_CACHE:-}" ] && export PIP_CACHE_DIR=$XGPU_PKG_CACHE/pip
	if [ -e "$dir" ] && [ ! -f "$dir/pyvenv.cfg" ] && [ -n "$(ls -A "$dir")" ]; then
		echo "install-deps: $dir is not a virtualenv; not replacing it" >&2
		exit 1
	fi
	rm -rf "$dir"
	mkdir -p "$(dirname "$dir")"
	if ! python3 -m venv "$dir" 2>/dev/null; then
		# Debian's python3 makes virtualenvs only with python3-venv.
		rm -rf "$dir"
		if [ "$(id -u)" -eq 0 ]; then sudo=(); else sudo=(sudo); fi
		DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends python3-venv
		python3 -m venv "$dir"
	fi
	t0=$SECONDS
	"$dir/bin/python" -m pip install --quiet --disable-pip-version-check --only-binary=:all: -r "$req"
	cp "$req" "$dir/.xgpu-requirements"
	echo "install-deps: the frameworks' virtualenv in $dir ($((SECONDS - t0)) s): $("$dir/bin/python" -m pip list --disable-pip-version-check --format=freeze 2>/dev/null | grep -E '^(torch|cupy-cuda12x|numba-cuda|jax)==' | tr '\n' ' ')"
	exit 0
fi

missing=()
for p in "${PACKAGES[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]})); then
	echo "install-deps: installing ${missing[*]}"
	if [ "$(id -u)" -eq 0 ]; then
		sudo=()
	elif command -v sudo >/dev/null; then
		sudo=(sudo)
	else
		echo "install-deps: need root (or sudo) to apt-get install: ${missing[*]}" >&2
		exit 1
	fi
	export DEBIAN_FRONTEND=noninteractive
	"${sudo[@]}" apt-get update -qq || echo "install-deps: apt-get update failed; trying the install anyway" >&2
	"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

$packaging_only && exit 0

# The CUDA toolkit is not a Debian package at version 13; it must be present.
cuda_home=${CUDA_HOME:-/usr/local/cuda}
if [ ! -x "$cuda_home/bin/nvcc" ] || [ ! -f "$cuda_home/include/cuda.h" ]; then
	echo "install-deps: the CUDA 13 toolkit was not found in $cuda_home (nvcc, cuda.h)." >&2
	echo "install-deps: install it from NVIDIA or set CUDA_HOME; compiling needs no GPU." >&2
	exit 1
fi
ver=$("$cuda_home/bin/nvcc" --version | sed -n 's/.*release \([0-9]*\)\..*/\1/p')
if [ "${ver:-0}" -lt 13 ]; then
	echo "install-deps: nvcc in $cuda_home is CUDA $ver; xgpu's frontend is libcudart.so.13 and needs CUDA 13." >&2
	exit 1
fi
