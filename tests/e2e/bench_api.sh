#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench_api.sh - xgpu-bench-api, the program behind `make bench`'s table of
# the null call and launch through each frontend, measures what it says: run
# briefly through libcudart.so.13 and through libcuda.so.1 (each in a domain
# of its own), it prints every figure the table reads, and the daemon counted
# exactly the launches it timed (warm-up and two passes), so neither frontend
# was measured failing or short-circuiting.
. "$(dirname "$0")/lib.bash"
start_xgpud

count=1000
for fe in runtime driver; do
	run_cuda XGPU_DOMAIN=bench-$fe "$B/bin/xgpu-bench-api" $fe "$B/lib" "$B/bench/null_kernel.fatbin" $count \
		>"$T/$fe.out" 2>"$T/$fe.err" || {
		cat "$T/$fe.out" "$T/$fe.err"
		fail "xgpu-bench-api $fe failed"
	}
	check_clean "$T/$fe.err" "xgpu-bench-api $fe"
	for what in null launch; do
		for k in batch p50 p99; do
			key=api_${fe}_${what}_${k}_us
			awk -v k="$key" '$1 == k && $2 > 0 {found = 1} END {exit !found}' "$T/$fe.out" ||
				fail "$fe: no positive $key in: $(cat "$T/$fe.out")"
		done
	done
	# Warm-up (count), the batch pass and the per-call pass.
	dom_eq bench-$fe kernels $((3 * count)) || fail "$fe: the daemon ran $(dom_stat bench-$fe kernels) kernels, not $((3 * count))"
	# Null calls: warm-up and two passes, one round trip each.
	[ "$(dom_stat bench-$fe calls)" -ge $((6 * count)) ] || fail "$fe: only $(dom_stat bench-$fe calls) calls reached the daemon"
	note "$fe: $(tr '\n' ' ' <"$T/$fe.out")"
done
stop_xgpud
