#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bundle.sh - packs what `make gpu-validate` runs into one folder for a GPU
# machine that has NVIDIA's driver and toolkit but none of this project's
# Debian packages (libxen, jansson, jq ...) and cannot fetch them: the built
# programs, the shared libraries they load besides glibc's, NVIDIA's and
# their own, and jq with its libraries.
#
#   tools/gpu-validate/bundle.sh [BUILD_DIR [DEST]]  (defaults build, gpuval-bundle;
#                                                     `make gpu-validate-build` first)
# Then, on the GPU machine, in a copy of this repository:
#   DEST/start.sh [run.sh's environment ...]
# start.sh puts on the loader's path only the bundled libraries that machine
# lacks (its own zlib or libzstd stay in use for NVIDIA's programs), uses the
# bundled jq only when it has none, and runs tools/gpu-validate/run.sh on the
# bundled build.
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
B=${1:-build}
dest=${2:-gpuval-bundle}
[ -x "$B/bin/xgpud" ] && [ -x "$B/bin/gpuval-libs" ] || {
	echo "bundle.sh: $B lacks the programs: run \`make gpu-validate-build\` first" >&2
	exit 1
}
rm -rf "$dest"
mkdir -p "$dest/build/tests" "$dest/deps" "$dest/tools"
# The programs run.sh runs; not the rdc variants, the sanitized or unit-test builds.
cp -a "$B/bin" "$B/lib" "$dest/build/"
rm -rf "$dest/build/bin/rdc" "$dest/build/bin/rdc-shared"
for d in cuda samples data simkernels; do
	cp -a "$B/tests/$d" "$dest/build/tests/"
done
rm -rf "$dest/build/tests/cuda/rdc" "$dest/build/tests/cuda/static"
cp "$(command -v jq)" "$dest/tools/jq"

# Every library the bundle's programs and jq load, except the C library's
# own, the C++ runtime, NVIDIA's and ours, which the GPU machine has.
{
	find "$dest/build" "$dest/tools" -type f -perm -u+x -print0
	find "$dest/build/lib" -name '*.so*' -type f -print0
} | xargs -0 ldd 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// {print $3}' | sort -u |
	grep -vE '/(libc|libm|libdl|libpthread|librt|libgcc_s|libstdc\+\+|libresolv)\.so|/libcu|/libnv|'"$B"'/' |
	while read -r lib; do
		cp -L "$lib" "$dest/deps/"
	done
git -C "$src" rev-parse --short HEAD >"$dest/COMMIT" 2>/dev/null || echo unknown >"$dest/COMMIT"
git -C "$src" diff --quiet HEAD 2>/dev/null || sed -i 's/$/ (with uncommitted changes)/' "$dest/COMMIT"

cat >"$dest/start.sh" <<'EOF'
#!/usr/bin/env bash
# Written by tools/gpu-validate/bundle.sh: runs tools/gpu-validate/run.sh on
# this bundle's build, from the repository root.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
active=$(mktemp -d)
missing=()
for f in "$here"/deps/*; do
	n=$(basename "$f")
	if ! ldconfig -p | grep -q "^[[:space:]]*$n "; then
		ln -s "$f" "$active/$n"
		missing+=("$n")
	fi
done
echo "bundle: this machine lacks ${missing[*]:-nothing}; those come from the bundle"
export LD_LIBRARY_PATH=$active${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
command -v jq >/dev/null || export PATH=$here/tools:$PATH
export GPU_VALIDATE_COMMIT=${GPU_VALIDATE_COMMIT:-$(cat "$here/COMMIT")}
exec tools/gpu-validate/run.sh "$here/build"
EOF
chmod +x "$dest/start.sh"
echo "bundle.sh: $dest ($(du -sh "$dest" | cut -f1)), $(find "$dest/deps" -type f | wc -l) libraries, commit $(cat "$dest/COMMIT")"
