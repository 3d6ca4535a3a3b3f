# SPDX-License-Identifier: Apache-2.0
# lib.bash - shared by the end-to-end tests: a private xgpud per test on its own
# socket (sim executor), CUDA programs run through the built frontend, and
# checks that neither the daemon nor a program tripped a sanitizer.
#
# Tests source this, call start_xgpud, and exit non-zero on failure; the
# trap stops the daemon and prints its log when something went wrong.

set -euo pipefail
B=${XGPU_BUILD:?run through tests/run.sh}
SRC=${XGPU_SRC:?}
T=${XGPU_TMP:?}
export XGPU_SOCKET=$T/xgpud.sock
export XGPU_SIM_KERNELS=$B/lib/simkernels:$B/tests/simkernels
XGPUD_PID=
XGPUD_LOG=$T/xgpud.log

# A sanitized frontend must have the ASan runtime loaded first. (grep reads
# all of ldd's output: with -q, ldd could die of SIGPIPE and pipefail would
# call the library unsanitized.)
CUDA_PRELOAD=
if ldd "$B/lib/libcudart.so.13" 2>/dev/null | grep libasan >/dev/null; then
	CUDA_PRELOAD=$(gcc -print-file-name=libasan.so)
fi

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

note() {
	echo "-- $*"
}

# start_xgpud [xgpud options...]
start_xgpud() {
	"$B/bin/xgpud" --foreground --executor sim --socket "$XGPU_SOCKET" --log-level info "$@" \
		>"$XGPUD_LOG" 2>&1 &
	XGPUD_PID=$!
	for _ in $(seq 100); do
		if "$B/bin/xl-gpu" list >/dev/null 2>&1; then
			return 0
		fi
		kill -0 "$XGPUD_PID" 2>/dev/null || break
		sleep 0.1
	done
	cat "$XGPUD_LOG" >&2
	fail "xgpud did not come up"
}

# Stops the daemon with SIGTERM and checks it exited cleanly.
stop_xgpud() {
	[ -n "$XGPUD_PID" ] || return 0
	kill -TERM "$XGPUD_PID" 2>/dev/null || true
	local rc=0
	wait "$XGPUD_PID" || rc=$?
	XGPUD_PID=
	check_clean "$XGPUD_LOG" xgpud
	check_executor_ends "$XGPUD_LOG"
	[ "$rc" -eq 0 ] || fail "xgpud exited with status $rc"
}

# check_executor_ends LOG: every executor in xgpud's LOG ended as an
# executor may: status 0, status 3 (its context failed: a guest's fault), or
# SIGKILL (a kernel timeout, a test's kill -9). Any other status or signal is
# a crash of xgpu's own; a test that provokes one on purpose names it in
# EXECUTOR_ENDS_OK (an extended regular expression of lines to pass).
check_executor_ends() {
	local bad
	bad=$(grep -E "executor pid [0-9]+ (exited with status ([124-9]|[0-9]{2,})|was killed by signal ([0-8]|[1-9][0-9]))" "$1" |
		grep -vE "${EXECUTOR_ENDS_OK:-^\$}") || true
	if [ -n "$bad" ]; then
		echo "$bad" >&2
		fail "an executor ended as no executor should (see above)"
	fi
}

# check_clean LOG WHAT: no sanitizer report in LOG.
check_clean() {
	if grep -qE "ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:" "$1"; then
		grep -nE -A30 "ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:" "$1" | head -80 >&2
		fail "$2: sanitizer report in $1"
	fi
}

# run_cuda [VAR=value...] PROGRAM [ARGS...]: runs a CUDA program through the
# frontend; its output goes to stdout.
run_cuda() {
	env LD_LIBRARY_PATH="$B/lib" ${CUDA_PRELOAD:+LD_PRELOAD=$CUDA_PRELOAD} "$@"
}

stats() {
	"$B/bin/xl-gpu" stats --json
}

# dom_stat DOMAIN KEY: one number from xl-gpu stats --json.
dom_stat() {
	stats | jq -e --arg d "$1" ".domains[] | select(.name == \$d) | .$2"
}

# dom_eq / dom_gt DOMAIN KEY N: compare a statistic (evaluated each call, so
# they work with wait_for).
dom_eq() {
	[ "$(dom_stat "$1" "$2")" -eq "$3" ]
}
dom_gt() {
	[ "$(dom_stat "$1" "$2")" -gt "$3" ]
}

# wait_for SECONDS COMMAND...: retries COMMAND until it succeeds.
wait_for() {
	local limit=$1
	shift
	for _ in $(seq $((limit * 10))); do
		"$@" >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	return 1
}

cleanup() {
	local rc=$?
	if [ -n "$XGPUD_PID" ]; then
		kill -TERM "$XGPUD_PID" 2>/dev/null || true
		wait "$XGPUD_PID" 2>/dev/null || true
	fi
	if [ "$rc" -ne 0 ] && [ -f "$XGPUD_LOG" ]; then
		echo "---- xgpud log (last 60 lines) ----" >&2
		tail -n 60 "$XGPUD_LOG" >&2
	fi
	exit "$rc"
}
trap cleanup EXIT

# start_xenstub SOCKET ID:NAME...: xgpu-xenstub (the in-memory Xen) on
# SOCKET with those domains, logging to STUB_LOG ($T/xenstub.log unless set);
# sets STUB_PID. stop_xenstub RC stops it, and shows its log's end when RC
# says the test failed.
start_xenstub() {
	local sock=$1 d args=()
	shift
	for d in "$@"; do args+=(--domain "$d"); done
	STUB_LOG=${STUB_LOG:-$T/xenstub.log}
	"$B/bin/xgpu-xenstub" --socket "$sock" "${args[@]}" >"$STUB_LOG" 2>&1 &
	STUB_PID=$!
	wait_for 10 test -S "$sock" || fail "xgpu-xenstub did not come up"
}
stop_xenstub() {
	if [ -n "${STUB_PID:-}" ]; then
		kill -TERM "$STUB_PID" 2>/dev/null || true
		wait "$STUB_PID" 2>/dev/null || true
		STUB_PID=
	fi
	if [ "$1" -ne 0 ] && [ -f "${STUB_LOG:-}" ]; then
		echo "---- xgpu-xenstub log (last 30 lines) ----" >&2
		tail -n 30 "$STUB_LOG" >&2
	fi
}

# frameworks_env: when the frameworks' virtualenv (tools/install-deps.sh
# --frameworks) is there and matches its pins, sets FW_VENV and FW_ENV, the
# environment a framework's python needs to load our libcuda.so.1, and
# returns 0; else returns 1 with the reason in FW_WHY. A sanitized frontend
# needs libstdc++ preloaded beside libasan (python does not link it, and
# torch's exceptions would abort) and the wheels' nvidia/*/lib on the path
# (ASan's dlopen hides their $ORIGIN run paths).
frameworks_env() {
	FW_VENV=${XGPU_FRAMEWORKS_VENV:-${XGPU_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/xgpu}/frameworks}
	local req=$SRC/tests/data/frameworks-requirements.txt libpath=$B/lib preload= d
	if [ ! -x "$FW_VENV/bin/python" ] || [ ! -f "$FW_VENV/.xgpu-requirements" ]; then
		FW_WHY="no frameworks virtualenv in $FW_VENV (tools/install-deps.sh --frameworks makes it)"
		return 1
	fi
	if ! cmp -s "$req" "$FW_VENV/.xgpu-requirements"; then
		FW_WHY="the virtualenv in $FW_VENV holds other versions than $req: run tools/install-deps.sh --frameworks"
		return 1
	fi
	if [ -n "$CUDA_PRELOAD" ]; then
		for d in "$FW_VENV"/lib/python3*/site-packages/nvidia/*/lib; do
			libpath=$libpath:$d
		done
		preload="$CUDA_PRELOAD $(gcc -print-file-name=libstdc++.so.6)"
	fi
	# Leaks are not checked: the interpreter and the frameworks keep theirs
	# at exit, and LeakSanitizer would report them as xgpu's.
	FW_ENV=(LD_LIBRARY_PATH="$libpath" ${preload:+LD_PRELOAD="$preload"}
		ASAN_OPTIONS=detect_leaks=0:halt_on_error=1 PYTHONUNBUFFERED=1)
}

# netns_pair PREFIX: the two hosts of a remote test, as network namespaces:
# NSH (the GPU host) and NSG (the guest's host), joined by a veth pair
# (HDEV in NSH, GDEV in NSG) on NET.0/30, GPU_IP=NET.1 and the guest NET.2,
# loopbacks and links up. Skips the test where namespaces cannot be made.
# The EXIT trap kills the guest's processes, stops xgpud (it may live in
# NSH) and then removes both namespaces.
netns_pair() {
	local p=$1
	if ! ip netns add "$p-probe-$$" 2>/dev/null; then
		echo "SKIP: cannot create network namespaces here (ip netns add needs CAP_SYS_ADMIN)"
		exit 0
	fi
	ip netns del "$p-probe-$$"
	NSH=$p-h-$$
	NSG=$p-g-$$
	HDEV=${p}h$$
	GDEV=${p}g$$
	NET=10.$((100 + $$ % 100)).$(($$ / 100 % 250)) # 10.x.y.0/30, only in the namespaces
	GPU_IP=$NET.1
	ip netns add "$NSH"
	ip netns add "$NSG"
	trap netns_pair_cleanup EXIT
	ip link add "$HDEV" netns "$NSH" type veth peer name "$GDEV" netns "$NSG"
	ip -n "$NSH" addr add "$GPU_IP/30" dev "$HDEV"
	ip -n "$NSG" addr add "$NET.2/30" dev "$GDEV"
	for ns in "$NSH" "$NSG"; do
		ip -n "$ns" link set lo up
	done
	ip -n "$NSH" link set "$HDEV" up
	ip -n "$NSG" link set "$GDEV" up
}

netns_pair_cleanup() {
	local rc=$?
	ip netns pids "$NSG" 2>/dev/null | xargs -r kill -9 2>/dev/null || true
	ip netns del "$NSG" 2>/dev/null || true
	# xgpud first (lib.bash's cleanup would stop it too), then its namespace.
	if [ -n "$XGPUD_PID" ]; then
		kill -TERM "$XGPUD_PID" 2>/dev/null || true
		wait "$XGPUD_PID" 2>/dev/null || true
		XGPUD_PID=
	fi
	ip netns del "$NSH" 2>/dev/null || true
	(exit "$rc")
	cleanup
}
