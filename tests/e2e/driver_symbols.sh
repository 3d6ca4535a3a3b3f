#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# driver_symbols.sh - the exported-symbol contract of our libcuda.so.1:
#  1. the committed lists (frontend/driver/cuda13.symbols, cuda13.procs,
#     libcuda.map) are what tools/list-cuda-symbols.sh derives from the
#     installed toolkit, so a toolkit change shows up here;
#  2. the built library exports exactly those entry points, unversioned as
#     NVIDIA's, plus the channel client, allocation registry, 2D copies and
#     graph helpers our libcudart.so.13 takes from it;
#  3. our libcudart.so.13 needs it and finds it beside itself;
#  4. docs/design.md lists exactly the entry points the build implements
#     (the exports less the generated NOT_SUPPORTED stubs).
set -euo pipefail
B=${XGPU_BUILD:?run through tests/run.sh}
SRC=${XGPU_SRC:?}
T=${XGPU_TMP:?}

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

"$SRC/tools/list-cuda-symbols.sh" --symbols >"$T/symbols"
"$SRC/tools/list-cuda-symbols.sh" --procs >"$T/procs"
"$SRC/tools/list-cuda-symbols.sh" --map >"$T/map"
diff -u "$SRC/frontend/driver/cuda13.symbols" "$T/symbols" ||
	fail "cuda13.symbols is stale: run tools/list-cuda-symbols.sh --write"
diff -u <(grep -v '^#' "$SRC/frontend/driver/cuda13.procs") "$T/procs" ||
	fail "cuda13.procs is stale: run tools/list-cuda-symbols.sh --write"
diff -u "$SRC/frontend/driver/libcuda.map" "$T/map" || fail "libcuda.map is stale: run tools/list-cuda-symbols.sh --write"
n=$(wc -l <"$T/symbols")
[ "$n" -gt 600 ] || fail "only $n driver entry points listed"
echo "-- $n entry points, $(wc -l <"$T/procs") cuGetProcAddress rows"

lib=$B/lib/libcuda.so.1
nm -D --defined-only --with-symbol-versions "$lib" >"$T/nm"
awk '$2 ~ /^[TtWwiI]$/ {print $3}' "$T/nm" | grep '@' && fail "libcuda.so.1 exports versioned symbols"
awk '$2 ~ /^[TtWwiIBD]$/ {print $3}' "$T/nm" | LC_ALL=C sort >"$T/exports"
client="xgpu_client_ack xgpu_client_device_info xgpu_client_get xgpu_client_note_unsupported xgpu_client_settle xgpu_client_shares_host_memory xgpu_launch_attrs_check xgpu_client_share xgpu_client_unshare xgpu_fe_warn_once xgpu_fork_generation xgpu_rpc xgpu_hostfn_enqueue xgpu_stream_attr_get xgpu_stream_attr_set xgpu_stream_get_priority
	xgpu_pool_default xgpu_pool_current xgpu_pool_set_current xgpu_pool_create xgpu_pool_destroy xgpu_pool_alloc xgpu_pool_free xgpu_pool_forget xgpu_pool_graph_memory xgpu_pool_set_attr xgpu_pool_get_attr xgpu_pool_trim xgpu_pool_synced xgpu_pool_release_cached xgpu_pool_reset
	xgpu_alloc_add xgpu_alloc_del xgpu_alloc_find xgpu_alloc_clear_device xgpu_alloc_set_flags xgpu_attach_mem xgpu_copy2d xgpu_copy3d xgpu_memset2d
	xgpu_managed_alloc xgpu_managed_map_var xgpu_managed_free xgpu_managed_find xgpu_managed_prefetch xgpu_managed_advise
	xgpu_graph_add_kernel xgpu_graph_capturing xgpu_graph_capture_hostfn xgpu_graph_exec_set_kernel xgpu_graph_from_runtime"
(cat "$T/symbols" && printf '%s\n' $client) | LC_ALL=C sort >"$T/want"
diff -u "$T/want" "$T/exports" || fail "libcuda.so.1 exports differ from cuda13.symbols plus the client"
readelf -d "$lib" | grep -q 'SONAME.*\[libcuda.so.1\]' || fail "libcuda.so.1 has the wrong SONAME"

rt=$B/lib/libcudart.so.13
readelf -d "$rt" | grep -q 'NEEDED.*\[libcuda.so.1\]' || fail "libcudart.so.13 does not need libcuda.so.1"
found=$(env -u LD_LIBRARY_PATH ldd "$rt" | awk '$1 == "libcuda.so.1" {print $3}')
[ "$found" = "$(cd "$B/lib" && pwd)/libcuda.so.1" ] || fail "libcudart.so.13 resolves libcuda.so.1 to '$found', not ours beside it"
echo "-- libcuda.so.1 exports match; libcudart.so.13 finds it beside itself"

stubs=$B/obj/gen/cuda_stubs.o
"$SRC/tools/list-cuda-symbols.sh" --doc "$stubs" >"$T/doc-want"
begin=$(head -1 "$T/doc-want")
end=$(tail -1 "$T/doc-want")
awk -v b="$begin" -v e="$end" '$0 == b {on = 1} on {print} $0 == e {on = 0}' "$SRC/docs/design.md" >"$T/doc-have"
diff -u "$T/doc-want" "$T/doc-have" ||
	fail "docs/design.md's list of implemented driver entry points is stale: run tools/list-cuda-symbols.sh --write-doc $stubs"
impl=$("$SRC/tools/list-cuda-symbols.sh" --implemented "$stubs" | wc -l)
[ "$impl" -gt 100 ] && [ "$impl" -lt "$n" ] || fail "$impl implemented entry points of $n: the stubs object looks wrong"
echo "-- docs/design.md lists the $impl implemented entry points"
