#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# gen_unsupported.sh - the exported-symbol contract of our libcudart.so.13:
#  1. frontend/runtime/cudart13.symbols, libcudart.map and cudart13.nonerror match what
#     tools/list-cudart-symbols.sh derives from the installed CUDA toolkit;
#  2. tools/gen-unsupported.sh stubs exactly the undefined names, its output
#     compiles warning-free, and it refuses when a function that does not
#     return cudaError_t is missing;
#  3. a library linked from those stubs with frontend/runtime/libcudart.map exports the
#     same versioned symbols as NVIDIA's, and a program linked against
#     NVIDIA's library loads against it (every symbol bound at load time) and
#     gets cudaErrorNotSupported from a stub;
#  4. if the build has a real build/lib/libcudart.so.13, it exports the same.
# Needs the CUDA toolkit (headers and lib64/libcudart.so.13), gcc and nm.
set -euo pipefail

src=${XGPU_SRC:?}
tmp=${XGPU_TMP:?}
cuda_home=${CUDA_HOME:-/usr/local/cuda}
real=$cuda_home/lib64/libcudart.so.13
cc=${CC:-gcc}
cflags=(-std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -fPIC -I"$cuda_home/include" -I"$src/common" -I"$src/frontend/runtime")

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

[ -f "$real" ] || fail "$real not found (set CUDA_HOME)"

# Exported functions of a library as "NAME@@VERSION", sorted.
exports() {
	nm -D --defined-only --with-symbol-versions "$1" | awk '$2 ~ /^[TtWwiI]$/ {print $3}' | LC_ALL=C sort
}

echo "== 1. committed lists match the toolkit"
for what in symbols map nonerror; do
	case $what in
	symbols) file=$src/frontend/runtime/cudart13.symbols ;;
	map) file=$src/frontend/runtime/libcudart.map ;;
	nonerror) file=$src/frontend/runtime/cudart13.nonerror ;;
	esac
	"$src/tools/list-cudart-symbols.sh" --$what >"$tmp/$what.now"
	diff -u "$file" "$tmp/$what.now" ||
		fail "$file is out of date: run tools/list-cudart-symbols.sh --write"
done
nsyms=$(grep -c . "$src/frontend/runtime/cudart13.symbols")
echo "$nsyms exported functions, $(grep -vc '^#' "$src/frontend/runtime/cudart13.nonerror") not returning cudaError_t"

echo "== 2. generator"
# Stand-in for the frontend's own objects: every non-cudaError_t function
# (two of them from the real errors.c), one ordinary call, and the
# xgpu_unsupported hook the stubs call.
cat >"$tmp/impl.c" <<'EOF'
#include <stdio.h>
#include <cuda_runtime_api.h>

typedef struct CUstream_st *stream_t;
void *__cudaGetProcAddress(void) { return NULL; }
char __cudaInitModule(void **h) { return 0; }
unsigned __cudaPushCallConfiguration(dim3 g, dim3 b, size_t s, stream_t st) { return 0; }
void **__cudaRegisterFatBinary(void *fatbin) { return NULL; }
void __cudaRegisterFatBinaryEnd(void **h) {}
void __cudaRegisterFunction(void **h, const char *hf, char *df, const char *dn, int tl, uint3 *tid,
			    uint3 *bid, dim3 *bd, dim3 *gd, int *ws) {}
void __cudaRegisterHostVar(void **h, const char *dn, char *hv, size_t sz) {}
void __cudaRegisterManagedVar(void **h, void **hv, char *da, const char *dn, int ext, size_t sz, int c,
			      int g) {}
void __cudaRegisterUnifiedTable(void **h, void *ft, size_t fs, void *dt, size_t ds) {}
void __cudaRegisterVar(void **h, char *hv, char *da, const char *dn, int ext, size_t sz, int c, int g) {}
void __cudaUnregisterFatBinary(void **h) {}
#ifndef OMIT_CHANNEL_DESC
struct cudaChannelFormatDesc cudaCreateChannelDesc(int x, int y, int z, int w, enum cudaChannelFormatKind f)
{
	struct cudaChannelFormatDesc d = {x, y, z, w, f};
	return d;
}
#endif
cudaError_t cudaMalloc(void **p, size_t n) { *p = NULL; return cudaSuccess; }

cudaError_t xgpu_unsupported(const char *name)
{
	fprintf(stderr, "unsupported call: %s\n", name);
	return cudaErrorNotSupported;
}
EOF
"$cc" "${cflags[@]}" -Wno-unused-parameter -c "$tmp/impl.c" -o "$tmp/impl.o"
"$cc" "${cflags[@]}" -c "$src/frontend/runtime/errors.c" -o "$tmp/errors.o"
"$cc" "${cflags[@]}" -Wno-unused-parameter -DOMIT_CHANNEL_DESC -c "$tmp/impl.c" -o "$tmp/impl-short.o"
ar rcs "$tmp/libimpl.a" "$tmp/impl.o" # archives work as well as objects

"$src/tools/gen-unsupported.sh" "$tmp/unsupported.c" "$src/frontend/runtime/cudart13.symbols" \
	"$tmp/libimpl.a" "$tmp/errors.o"
grep -q 'cudaError_t cudaGraphCreate(void)' "$tmp/unsupported.c" || fail "no stub for cudaGraphCreate"
grep -q 'return xgpu_unsupported("cudaGraphCreate");' "$tmp/unsupported.c" || fail "stub body"
for defined in cudaMalloc cudaGetErrorName __cudaRegisterFatBinary cudaCreateChannelDesc; do
	! grep -q "[ *]$defined(void)" "$tmp/unsupported.c" || fail "stubbed $defined although it is defined"
done
nstubs=$(grep -c '^cudaError_t [A-Za-z_0-9]*(void)$' "$tmp/unsupported.c")
nonerr=$(grep -vc '^#' "$src/frontend/runtime/cudart13.nonerror")
[ "$nstubs" -eq $((nsyms - nonerr - 1)) ] || fail "$nstubs stubs, expected $((nsyms - nonerr - 1))"
"$cc" "${cflags[@]}" -c "$tmp/unsupported.c" -o "$tmp/unsupported.o" || fail "generated stubs do not compile"
echo "$nstubs stubs generated and compiled"

# Refusal: a non-cudaError_t function left undefined.
rm -f "$tmp/refused.c"
if "$src/tools/gen-unsupported.sh" "$tmp/refused.c" "$src/frontend/runtime/cudart13.symbols" \
	"$tmp/impl-short.o" "$tmp/errors.o" 2>"$tmp/refused.err"; then
	fail "generator accepted objects without cudaCreateChannelDesc"
fi
cat "$tmp/refused.err"
grep -q cudaCreateChannelDesc "$tmp/refused.err" || fail "refusal does not name cudaCreateChannelDesc"
! grep -q cudaGetErrorName "$tmp/refused.err" || fail "refusal names a defined function"
[ ! -e "$tmp/refused.c" ] || fail "refused run left an output file"
ls "$tmp"/refused.c.* >/dev/null 2>&1 && fail "refused run left a temporary file"
# Refusal also when no objects define anything.
if "$src/tools/gen-unsupported.sh" "$tmp/refused.c" "$src/frontend/runtime/cudart13.symbols" 2>/dev/null; then
	fail "generator accepted no objects at all"
fi

echo "== 3. a library built this way stands in for NVIDIA's"
mkdir -p "$tmp/lib"
"$cc" -shared -Wl,-soname,libcudart.so.13 -Wl,--version-script="$src/frontend/runtime/libcudart.map" \
	"$tmp/impl.o" "$tmp/errors.o" "$tmp/unsupported.o" -o "$tmp/lib/libcudart.so.13"
exports "$real" >"$tmp/real.exports"
exports "$tmp/lib/libcudart.so.13" >"$tmp/ours.exports"
diff -u "$tmp/real.exports" "$tmp/ours.exports" || fail "exported symbols or versions differ from $real"
nm -D --defined-only "$tmp/lib/libcudart.so.13" | grep -q ' xgpu_unsupported$' && fail "xgpu_unsupported is exported"
readelf -V "$tmp/lib/libcudart.so.13" | grep -q 'Name: libcudart.so.13' || fail "no libcudart.so.13 version node"

# A program built against NVIDIA's library that references every export, run
# with ours and LD_BIND_NOW so any missing symbol or version fails the load.
# The references live in a file of their own, away from the headers' real
# prototypes.
{
	sed 's/.*/extern void &(void);/' "$src/frontend/runtime/cudart13.symbols"
	echo 'void (*const all_exports[])(void) = {'
	sed 's/.*/\t&,/' "$src/frontend/runtime/cudart13.symbols"
	echo '};'
	echo 'const unsigned long n_exports = sizeof(all_exports) / sizeof(all_exports[0]);'
} >"$tmp/refs.c"
cat >"$tmp/app.c" <<'EOF'
#include <stdio.h>
#include <cuda_runtime_api.h>

extern void (*const all_exports[])(void);
extern const unsigned long n_exports;

int main(void)
{
	cudaGraph_t g;
	cudaError_t e = cudaGraphCreate(&g, 0);
	printf("cudaGraphCreate: %d %s (%lu exports bound)\n", (int)e, cudaGetErrorName(e), n_exports);
	for (unsigned long i = 0; i < n_exports; i++)
		if (!all_exports[i])
			return 2;
	return e == cudaErrorNotSupported ? 0 : 1;
}
EOF
"$cc" -std=c11 -w -I"$cuda_home/include" "$tmp/app.c" "$tmp/refs.c" -o "$tmp/app" -L"$cuda_home/lib64" -lcudart
readelf -d "$tmp/app" | grep -q 'NEEDED.*libcudart.so.13' || fail "app does not need libcudart.so.13"
LD_BIND_NOW=1 LD_LIBRARY_PATH="$tmp/lib" "$tmp/app" >"$tmp/app.out" 2>"$tmp/app.err" ||
	fail "app failed against our library: $(cat "$tmp/app.out" "$tmp/app.err")"
cat "$tmp/app.out" "$tmp/app.err"
grep -q 'cudaErrorNotSupported' "$tmp/app.out" || fail "stub did not return cudaErrorNotSupported"
grep -q 'unsupported call: cudaGraphCreate' "$tmp/app.err" || fail "stub did not name cudaGraphCreate"

echo "== 4. the built frontend"
built=${XGPU_BUILD:-}/lib/libcudart.so.13
if [ -n "${XGPU_BUILD:-}" ] && [ -f "$built" ]; then
	exports "$built" >"$tmp/built.exports"
	diff -u "$tmp/real.exports" "$tmp/built.exports" || fail "$built exports differ from $real"
	echo "$built exports match"
else
	echo "no $built yet; skipped"
fi
echo "ok"
