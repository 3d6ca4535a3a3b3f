#!/usr/bin/env bash
# Stream-ordered memory (tests/samples/mempool.cu): cudaMallocAsync and the
# memory pool family over both APIs, built with -cudart shared and with
# nvcc's default static runtime (NVIDIA's runtime over xgpu's libcuda.so.1);
# both builds verify their results and compute the same checksum. Then the
# same program under a 64 MiB domain limit: memory cached in pools goes back
# before an allocation fails, one beyond the limit fails cleanly.
. "$(dirname "$0")/lib.bash"

S=$B/tests/samples
run_sample() { # PROG RESULT-NAME [ARGS]
	local prog=$1 name=$2 out
	shift 2
	out=$(run_cuda "$prog" "$@" 2>&1) || {
		echo "$out"
		fail "$prog $* failed"
	}
	check_clean <(echo "$out") "$prog $*"
	echo "$out" | tail -n 1
	echo "$out" | grep -q "^RESULT $name verified=yes" || {
		echo "$out"
		fail "$prog $* did not verify its results"
	}
	LAST_OUT=$out
}

start_xgpud
want=
for prog in "$S/mempool" "$S/static/mempool"; do
	run_sample "$prog" mempool
	sum=$(echo "$LAST_OUT" | sed -n 's/^RESULT .*\(checksum=[^ ]*\).*/\1/p')
	[ -n "$sum" ] || fail "$prog printed no checksum"
	[ -z "$want" ] || [ "$sum" = "$want" ] || fail "$prog computed $sum, the shared build $want"
	want=$sum
done
if grep -q "which xgpu does not support" "$XGPUD_LOG"; then
	grep "which xgpu does not support" "$XGPUD_LOG"
	fail "the sample called an unsupported function"
fi
dom=uid-$(id -u)
wait_for 10 dom_eq "$dom" channels 0 || fail "channels still open"
[ "$(dom_stat "$dom" mem_bytes)" -eq 0 ] || fail "memory still held after every program exited"
stop_xgpud

start_xgpud --mem-limit 64M
for prog in "$S/mempool" "$S/static/mempool"; do
	run_sample "$prog" mempool-limit limit
done
grep -q "cudaMalloc of .* refused: the domain holds" "$XGPUD_LOG" || fail "the daemon did not log the refusal"
wait_for 10 dom_eq "$dom" channels 0 || fail "channels still open"
[ "$(dom_stat "$dom" mem_bytes)" -eq 0 ] || fail "memory still held after every program exited"
stop_xgpud
