# SPDX-License-Identifier: Apache-2.0
# samples.bash - shared by the tests/e2e/samples*.sh tests: each sample in
# tests/samples/ is built twice (-cudart shared, through xgpu's runtime, and
# nvcc's default static runtime over xgpu's libcuda.so.1) and checks its own
# results, printing "RESULT NAME verified=yes|no checksum=...". Source after
# lib.bash.

S=$B/tests/samples

# run_sample PROGRAM RESULT-NAME [ARGS...]: runs the program, which must exit
# 0, trip no sanitizer and print "RESULT RESULT-NAME verified=yes". Its
# output (stdout and stderr) is left in SAMPLE_OUT.
run_sample() {
	local prog=$1 name=$2
	shift 2
	SAMPLE_OUT=$(run_cuda "$prog" "$@" 2>&1) || {
		echo "$SAMPLE_OUT"
		fail "$prog${*:+ $*} failed"
	}
	check_clean <(echo "$SAMPLE_OUT") "$prog${*:+ $*}"
	echo "$SAMPLE_OUT" | tail -n 1
	echo "$SAMPLE_OUT" | grep -q "^RESULT $name verified=yes" || {
		echo "$SAMPLE_OUT"
		fail "$prog${*:+ $*} did not verify its results"
	}
}

# run_both_builds NAME [RESULT-NAME [ARGS...]]: run_sample on the shared and
# the static build of tests/samples/NAME; both must print a checksum, the
# same one, since the two runtimes must compute the same results.
run_both_builds() {
	local name=$1 result=${2:-$1} prog sum want=
	shift $(($# < 2 ? $# : 2))
	for prog in "$S/$name" "$S/static/$name"; do
		run_sample "$prog" "$result" "$@"
		sum=$(echo "$SAMPLE_OUT" | sed -n 's/^RESULT .*\(checksum=[^ ]*\).*/\1/p')
		[ -n "$sum" ] || fail "$prog${*:+ $*} printed no checksum"
		[ -z "$want" ] || [ "$sum" = "$want" ] || fail "$prog${*:+ $*} computed $sum, the shared build $want"
		want=$sum
	done
}

# no_unsupported_calls: the daemon logged no call that xgpu does not support.
no_unsupported_calls() {
	if grep -q "which xgpu does not support" "$XGPUD_LOG"; then
		grep "which xgpu does not support" "$XGPUD_LOG"
		fail "a sample called an unsupported function"
	fi
}

# nothing_left_held: once every program has exited, the domain has no channel
# open and no device memory held.
nothing_left_held() {
	local dom
	dom=uid-$(id -u)
	wait_for 10 dom_eq "$dom" channels 0 || fail "channels still open"
	[ "$(dom_stat "$dom" mem_bytes)" -eq 0 ] || fail "memory still held after every program exited"
}

# no_foreign_calls: a sample's output names nothing xgpu does not offer.
no_foreign_calls() {
	if echo "$SAMPLE_OUT" | grep -E "is not supported by xgpu|is not implemented by xgpu"; then
		fail "$1 called something xgpu does not offer (above)"
	fi
}
