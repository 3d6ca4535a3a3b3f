#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# make-seeds.sh - fills FUZZ_BUILD/seeds/<harness>/ with each harness's seed
# inputs: the bundled test data (fatbins the build makes from tests/data/,
# recorded xentrace buffers, configs), what mkseeds writes from the real wire
# layouts, and the committed seeds and regression inputs of
# tests/fuzz/corpus/<harness>/.
#
#   tests/fuzz/make-seeds.sh FUZZ_BUILD TEST_DATA_DIR
set -euo pipefail
fb=${1:?usage: make-seeds.sh FUZZ_BUILD TEST_DATA_DIR}
data=${2:?usage: make-seeds.sh FUZZ_BUILD TEST_DATA_DIR}
src=$(cd "$(dirname "$0")/../.." && pwd)
seeds=$fb/seeds
rm -rf "$seeds"
for h in "$src"/tests/fuzz/fuzz_*.c; do
	mkdir -p "$seeds/$(basename "$h" .c)"
done

# Fatbins of every compression mode and architecture mix the tests use.
cp "$data"/*.fatbin "$seeds/fuzz_fatbin/"

# The driver frontend's images: a form byte (0: as is, 1: inside a
# __fatBinC_Wrapper_t), then a fatbin, a bare cubin or PTX text (with the NUL
# that ends it in a program).
for f in "$data"/simdrv_kernels.fatbin "$data"/simdrv_kernels_zstd.fatbin "$data"/simdrv_kernels_ptx.fatbin \
	"$data"/drvapi_kernels.fatbin "$data"/simdrv_kernels.cubin "$data"/drvapi_kernels.cubin; do
	b=$(basename "$f")
	{ printf '\x00'; cat "$f"; } >"$seeds/fuzz_drvimage/$b"
done
{ printf '\x01'; cat "$data/drvapi_kernels.fatbin"; } >"$seeds/fuzz_drvimage/wrapped-drvapi_kernels.fatbin"
{ printf '\x00'; cat "$data/simdrv_kernels.ptx"; printf '\x00'; } >"$seeds/fuzz_drvimage/simdrv_kernels.ptx"

# PTX text: the test kernels and the interpreter's conformance suite.
cp "$data/simdrv_kernels.ptx" "$data/ptx_conformance.ptx" "$seeds/fuzz_ptx/"

# xentrace: the harness's 12-byte header (PCPUs, TSC kHz, ring cons/prod),
# then a recorded buffer.
for f in "$src"/tests/data/xentrace/*.bin; do
	n=$(stat -c %s "$f")
	{
		printf '\x02\x00\x10\x00\x00\x00\x00\x00'
		# prod = the buffer's length, rounded down to a multiple of 4
		printf "$(printf '\\x%02x\\x%02x\\x%02x\\x%02x' $((n / 4 * 4 & 255)) $((n / 4 * 4 >> 8 & 255)) $((n >> 16 & 255)) 0)"
		cat "$f"
	} >"$seeds/fuzz_xentrace/$(basename "$f" .bin)"
done

# xl configs name GPU specs; the spec harness takes a flags byte first.
cp "$src"/tests/data/xen/*.cfg "$seeds/fuzz_config/"

"$fb/bin/mkseeds" "$seeds" "$data/simdrv_kernels.fatbin" "$data/simdrv_kernels_zstd.fatbin"

# Committed seeds and regression inputs.
for d in "$src"/tests/fuzz/corpus/*/; do
	[ -d "$d" ] || continue
	h=$(basename "$d")
	mkdir -p "$seeds/$h"
	cp "$d"* "$seeds/$h/" 2>/dev/null || true
done
