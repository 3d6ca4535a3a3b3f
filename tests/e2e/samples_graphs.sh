#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# CUDA graphs and stream capture end to end (issue 17), through a real
# daemon (sim executor): tests/samples/graphs.cu (explicit graph API with a
# child graph) and graphs_capture.cu (a two-stream pipeline captured, and the
# calls CUDA refuses during a capture), each built with -cudart shared and
# with nvcc's default static runtime, graphs_drv.c (cuGraph* and
# cuStreamBeginCapture), and graphs_cond.cu (conditional nodes, built both
# ways too). Each program checks every launch's results. A graph
# launch is one request: the daemon's call count grows by one per launch,
# and the graph's kernels and device time are charged to the domain.
. "$(dirname "$0")/lib.bash"
start_xgpud

dom=uid-$(id -u)
S=$B/tests/samples

# run_ok PROGRAM ARGS...: runs it, checks it verified and tripped no sanitizer.
run_ok() {
	local out
	out=$(run_cuda "$@" 2>&1) || {
		echo "$out"
		fail "$* failed"
	}
	check_clean <(echo "$out") "$1"
	echo "$out" | grep -E "^(RESULT|graphs_drv:)"
	grep -qE "^RESULT .*verified=yes|^graphs_drv: OK" <<<"$out" || {
		echo "$out"
		fail "$1 did not verify its results"
	}
}

calls0=0 # a fresh daemon: the domain appears with the first program
kernels0=0
run_ok "$S/graphs"
note "graphs: $(dom_stat "$dom" calls) calls"
calls1=$(dom_stat "$dom" calls)
kernels1=$(dom_stat "$dom" kernels)
# 8 launches of a graph with 3 kernels: 24 kernels charged, and fewer calls
# in all than the nodes launched one by one would take (9 nodes x 8).
[ $((kernels1 - kernels0)) -eq 24 ] || fail "graphs: $((kernels1 - kernels0)) kernels charged, want 24"
[ $((calls1 - calls0)) -lt 72 ] || fail "graphs: $((calls1 - calls0)) calls: launches are not one request each"
[ "$(dom_stat "$dom" busy_ns)" -gt 0 ] || fail "no device time charged to the domain"
grep -q "graph refused: the dependencies form a cycle" "$XGPUD_LOG" || fail "the cyclic graph was not refused by the daemon"

run_ok "$S/graphs_capture"
run_ok "$S/static/graphs"
run_ok "$S/static/graphs_capture"
run_ok "$S/graphs_drv" "$B/tests/data/graphs.fatbin"
# Conditional nodes, their kernels computed by the PTX interpreter; each
# program ends with a kernel fault (a handle of another graph), which ends
# the domain's executor: the next program gets a new one.
run_ok "$S/graphs_cond"
grep -q "cudaGraphSetConditional: handle 0x.* is not the launching graph's" "$XGPUD_LOG" ||
	fail "graphs_cond: the foreign handle's fault was not named"
run_ok "$S/static/graphs_cond"

# Every exec and its pinned staging went with its process.
wait_for 10 dom_eq "$dom" channels 0 || fail "channel still open"
[ "$(dom_stat "$dom" mem_bytes)" -eq 0 ] || fail "memory still held after the programs exited"
stop_xgpud
check_clean "$XGPUD_LOG" xgpud
