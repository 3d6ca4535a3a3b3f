#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# list-cuda-symbols.sh - what NVIDIA's libcuda.so.1 exports, and which
# function each cuGetProcAddress request resolves to, for our drop-in driver
# frontend (frontend/driver/) to do the same.
#
#   tools/list-cuda-symbols.sh [--symbols]  exported function names, one a line
#   tools/list-cuda-symbols.sh --map        linker version script for them
#   tools/list-cuda-symbols.sh --procs      "NAME VERSION SYMBOL" for every
#                                           cuGetProcAddress answer
#   tools/list-cuda-symbols.sh --write      all three into frontend/driver/:
#                                           cuda13.symbols, libcuda.map,
#                                           cuda13.procs
#   tools/list-cuda-symbols.sh --implemented STUBS.o
#                                           the entry points xgpu implements:
#                                           the committed cuda13.symbols less
#                                           the generated NOT_SUPPORTED stubs
#                                           that STUBS.o (the built
#                                           obj/gen/cuda_stubs.o) defines
#   tools/list-cuda-symbols.sh --doc STUBS.o  that list as docs/design.md's
#                                           block of it
#   tools/list-cuda-symbols.sh --write-doc STUBS.o  the block into docs/design.md
#
# There is no real libcuda.so.1 without a GPU driver, so the names come from
# the toolkit: lib64/stubs/libcuda.so (what programs link against) plus the
# graphics-interop functions cudaGL.h, cudaEGL.h and cudaVDPAU.h declare,
# which the driver exports but the stub leaves out. The stub carries no symbol
# versions (neither does the driver: cudart finds its entry points with
# dlsym), so neither does ours; this script fails if a toolkit adds some.
#
# cuGetProcAddress(NAME, VERSION) picks the ABI of NAME current at VERSION.
# cudaTypedefs.h (and the interop *Typedefs.h) declare one PFN_NAME_vNNNN per
# ABI; the k-th of them in version order is the export NAME (k = 1) or
# NAME_vk, which this script checks for every name. Per-thread-stream variants
# are NAME..._ptds / _ptsz exports, looked up by name at build time.
#
# Reads $CUDA_HOME (default /usr/local/cuda). Needs nm, readelf and gcc (for
# -aux-info); no GPU. tests/e2e/driver_symbols.sh checks the committed files.
set -euo pipefail

cuda_home=${CUDA_HOME:-/usr/local/cuda}
stub=$cuda_home/lib64/stubs/libcuda.so
inc=$cuda_home/include
cc=${CC:-gcc}
src=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=tools/lib-symbols.sh
. "$src/tools/lib-symbols.sh"

die() {
	echo "list-cuda-symbols: $*" >&2
	exit 1
}

[ -f "$stub" ] || die "$stub not found (set CUDA_HOME)"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# NAME<TAB>RETURN TYPE for every function the driver headers declare, under
# every spelling the headers' version macros produce.
declared() {
	local tmp=$work/headers
	mkdir -p "$tmp"
	write_window_system_standins "$tmp"
	cat >"$tmp/all.c" <<-'EOF'
		#include <cuda.h>
		#include <cudaProfiler.h>
		#include <cudaGL.h>
		#include <cudaEGL.h>
		#include <vdpau/vdpau.h>
		#include <cudaVDPAU.h>
	EOF
	# Per-thread-stream variants are declared only under
	# CUDA_API_PER_THREAD_DEFAULT_STREAM, the older ABIs only under
	# __CUDA_API_VERSION_INTERNAL.
	local pt old
	for pt in -U -D; do
		for old in -U -D; do
			"$cc" -std=c11 "${pt}CUDA_API_PER_THREAD_DEFAULT_STREAM" "${old}__CUDA_API_VERSION_INTERNAL" \
				-I"$tmp" -I"$inc" -fsyntax-only -aux-info "$tmp/aux" "$tmp/all.c" ||
				die "$cc cannot parse the CUDA driver headers"
			# Lines read: /* file:line:NC */ extern TYPE NAME (ARGS);
			sed -n 's|^/\* '"$inc"'/[^*]*\*/ extern \([^(]*[^ (]\) *\<\([A-Za-z_][A-Za-z0-9_]*\) (.*|\2\t\1|p' \
				"$tmp/aux"
		done
	done | LC_ALL=C sort -u
}

interop_names() {
	local tmp=$1
	grep -h -oE '\<CUresult CUDAAPI (cu[A-Za-z0-9_]+)' "$inc/cudaGL.h" "$inc/cudaEGL.h" "$inc/cudaVDPAU.h" |
		awk '$3 !~ /^cuWGL/ {print $3}' # Windows only
	# The renamed ABIs, e.g. cuGLCtxCreate -> cuGLCtxCreate_v2.
	awk -F'\t' '$1 ~ /^cu(GL|EGL|VDPAU|GraphicsGL|GraphicsEGL|GraphicsVDPAU|EventCreateFromEGL|GraphicsResourceGetMappedEgl)/ {print $1}' \
		"$tmp"
}

symbols() {
	local ver stubnames types tmp
	ver=$(readelf -V "$stub" 2>/dev/null)
	grep -q 'No version information found' <<<"$ver" ||
		die "$stub now carries symbol versions: teach --map to give ours the same"
	stubnames=$(nm -D --defined-only "$stub" | awk '$2 ~ /^[TtWwiI]$/ {print $3}') || die "nm failed on $stub"
	[ -n "$stubnames" ] || die "no functions in $stub"
	tmp=$work/declared
	declared >"$tmp"
	types=$(awk -F'\t' '$2 != "CUresult" {print}' "$tmp")
	[ -z "$types" ] || die "functions not returning CUresult (stubs would return the wrong type): $types"
	local names
	names=$( (echo "$stubnames" && interop_names "$tmp") | LC_ALL=C sort -u)
	local undeclared
	undeclared=$(LC_ALL=C comm -23 <(echo "$names") <(cut -f1 "$tmp" | LC_ALL=C sort -u))
	[ -z "$undeclared" ] || die "exported but declared nowhere (return type unknown): $undeclared"
	echo "$names"
}

map() {
	echo "/* SPDX-License-Identifier: Apache-2.0 */"
	echo "/* libcuda.map - linker version script for xgpu's libcuda.so.1: the functions"
	echo " * NVIDIA's libcuda.so.1 exports, unversioned as there, and the client calls"
	echo " * our libcudart.so.13 shares. Generated by"
	echo " * tools/list-cuda-symbols.sh --map. */"
	echo "{"
	echo "global:"
	symbols | sed 's/^/\t/; s/$/;/'
	echo "	/* xgpu's channel client, for our libcudart.so.13 (one channel per process):"
	echo "	 * what frontend/channel/client.h and frontend/driver/mempool.h offer the runtime API files. */"
	printf '\t%s;\n' xgpu_client_get xgpu_client_ack xgpu_client_share xgpu_client_unshare xgpu_client_shares_host_memory xgpu_rpc \
		xgpu_client_settle xgpu_client_device_info xgpu_client_note_unsupported xgpu_launch_attrs_check xgpu_fe_warn_once \
		xgpu_fork_generation \
		xgpu_hostfn_enqueue xgpu_stream_attr_set xgpu_stream_attr_get xgpu_stream_get_priority \
		xgpu_pool_default xgpu_pool_current xgpu_pool_set_current xgpu_pool_create xgpu_pool_destroy \
		xgpu_pool_alloc xgpu_pool_free xgpu_pool_forget xgpu_pool_graph_memory xgpu_pool_set_attr xgpu_pool_get_attr xgpu_pool_trim \
		xgpu_pool_synced xgpu_pool_release_cached xgpu_pool_reset
	echo "	/* and managed memory, frontend/channel/managed.h. */"
	printf '\t%s;\n' xgpu_managed_alloc xgpu_managed_map_var xgpu_managed_free xgpu_managed_find \
		xgpu_managed_prefetch xgpu_managed_advise
	echo "	/* Graphs (graph.c), for our libcudart.so.13's cudaGraph* and capture. */"
	printf '\t%s;\n' xgpu_graph_add_kernel xgpu_graph_capturing xgpu_graph_capture_hostfn xgpu_graph_exec_set_kernel xgpu_graph_from_runtime
	echo "	/* The allocation registry both layers share (frontend/driver/allocs.h) and the"
	echo "	 * 2D copy both marshal the same way (frontend/driver/copy2d.h). */"
	printf '\t%s;\n' xgpu_alloc_add xgpu_alloc_del xgpu_alloc_find xgpu_alloc_clear_device xgpu_alloc_set_flags \
		xgpu_attach_mem xgpu_copy2d \
		xgpu_copy3d xgpu_memset2d
	echo "local:"
	echo "	*;"
	echo "};"
}

procs() {
	local names=$work/names
	symbols >"$names"
	cat "$inc"/cudaTypedefs.h "$inc"/cudaGLTypedefs.h "$inc"/cudaEGLTypedefs.h "$inc"/cudaVDPAUTypedefs.h \
		"$inc"/cudaProfilerTypedefs.h |
		grep -oE '\<PFN_cu[A-Za-z0-9]+_v[0-9]+\>' | sed -E 's/^PFN_(cu[A-Za-z0-9]+)_v([0-9]+)$/\1 \2/' |
		LC_ALL=C sort -u -k1,1 -k2,2n |
		awk '
			FILENAME == ARGV[1] { exported[$1] = 1; next }
			$1 != prev { k = 0; prev = $1 }
			{
				k++
				sym = k == 1 ? $1 : $1 "_v" k
				# Windows-only names have typedefs but no Linux export.
				if ($1 ~ /^cuWGL/) next
				if (!(sym in exported)) { print "no export " sym " for PFN_" $1 "_v" $2 > "/dev/stderr"; bad = 1 }
				print $1, $2, sym
			}
			END { exit bad }' "$names" - || die "cudaTypedefs.h versions do not map onto the exports"
}

# Every export not reached through cuGetProcAddress must be a per-thread
# variant of one that is (found by name at build time) or a pre-versioning
# name without a typedef.
check_procs() {
	local reached
	reached=$(procs | awk '{print $3}' | LC_ALL=C sort -u)
	symbols | LC_ALL=C comm -23 - <(echo "$reached") | grep -vE '_pt(ds|sz)$' || true
}

# The committed list (not the toolkit's: the build's stubs came from it).
implemented() {
	local stubs=${1:?--implemented needs the built obj/gen/cuda_stubs.o}
	[ -r "$stubs" ] || die "cannot read $stubs"
	local defined
	defined=$(nm --defined-only "$stubs" | awk '$2 == "T" && $3 ~ /^cu/ {print $3}' | LC_ALL=C sort) ||
		die "nm failed on $stubs"
	[ -n "$defined" ] || die "$stubs defines no stubs"
	LC_ALL=C comm -23 "$src/frontend/driver/cuda13.symbols" <(echo "$defined")
}

doc_begin='<!-- implemented driver entry points: generated by tools/list-cuda-symbols.sh --write-doc, checked by tests/e2e/driver_symbols.sh -->'
doc_end='<!-- end of implemented driver entry points -->'

doc_block() {
	local names n total
	names=$(implemented "$1")
	n=$(wc -l <<<"$names")
	total=$(wc -l <"$src/frontend/driver/cuda13.symbols")
	echo "$doc_begin"
	echo "Implemented: $n of the $total exports (each ABI and \`_ptds\`/\`_ptsz\` form counted):"
	sed 's/.*/`&`,/; $s/,$/./' <<<"$names" | tr '\n' ' ' | sed 's/ $//' | fold -s -w 100 | sed 's/ $//'
	echo
	echo "$doc_end"
}

write_doc() {
	local doc=$src/docs/design.md block
	grep -qxF "$doc_begin" "$doc" && grep -qxF "$doc_end" "$doc" || die "$doc has no block to replace"
	block=$(doc_block "$1")
	awk -v b="$doc_begin" -v e="$doc_end" -v f="$work/block" '
		$0 == b { while ((getline l < f) > 0) print l; skip = 1; next }
		$0 == e { skip = 0; next }
		!skip' "$doc" >"$work/doc" < /dev/null
	[ -s "$work/doc" ] || die "could not rewrite $doc"
	cp "$work/doc" "$doc"
}

case ${1:---symbols} in
--symbols) symbols ;;
--map) map ;;
--procs) procs ;;
--unreached) check_procs ;;
--implemented) implemented "${2:-}" ;;
--doc) doc_block "${2:-}" ;;
--write-doc)
	doc_block "${2:-}" >"$work/block"
	write_doc "${2:-}"
	;;
--write)
	mkdir -p "$src/frontend/driver"
	symbols >"$src/frontend/driver/cuda13.symbols"
	map >"$src/frontend/driver/libcuda.map"
	{
		echo "# cuda13.procs - cuGetProcAddress's answers: NAME, the CUDA version that"
		echo "# introduced this ABI of it (cudaTypedefs.h's PFN_NAME_vVERSION), and the"
		echo "# exported function. Generated by tools/list-cuda-symbols.sh --procs."
		procs
	} >"$src/frontend/driver/cuda13.procs"
	;;
*)
	sed -n '2,/^set -e/p' "$0" | sed '$d; /^# SPDX-License-Identifier:/d; s/^# \{0,1\}//' >&2
	exit 2
	;;
esac
