#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Stream-ordered memory (tests/samples/mempool.cu): cudaMallocAsync and the
# memory pool family over both APIs, built with -cudart shared and with
# nvcc's default static runtime (NVIDIA's runtime over xgpu's libcuda.so.1);
# both builds verify their results and compute the same checksum. Then the
# same program under a 64 MiB domain limit: memory cached in pools goes back
# before an allocation fails, one beyond the limit fails cleanly.
. "$(dirname "$0")/lib.bash"
. "$(dirname "$0")/samples.bash"

start_xgpud
run_both_builds mempool
no_unsupported_calls
nothing_left_held
stop_xgpud

start_xgpud --mem-limit 64M
for prog in "$S/mempool" "$S/static/mempool"; do
	run_sample "$prog" mempool-limit limit
done
grep -q "cudaMalloc of .* refused: the domain holds" "$XGPUD_LOG" || fail "the daemon did not log the refusal"
nothing_left_held
stop_xgpud
