#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The executor's sandbox (backend/executor/sandbox.c): a guest's kernel runs
# inside its domain's executor (on the simulated driver, a plugin's host
# function; tests/cuda/sandbox_probe*), so it is hostile code there. It tries
# what the sandbox forbids, each in a program of its own:
# - connecting to xgpud's control socket,
# - opening another domain's memfd through /proc/<its executor>/fd/N,
# - opening /etc/shadow,
# - ptrace, kill and process_vm_readv of a sibling executor;
# every attempt is refused or kills the prober's executor (SIGSYS, the
# seccomp filter's answer), never succeeds, and the sibling domain's program
# goes on unharmed. The executors run under a uid of their own (as root),
# with no capabilities, no_new_privs and the filter on; an allowed file
# (its plugin) still opens and a workload verifies under the filter. As
# root the round runs again with --executor-uid-base 0 (root without
# capabilities), where Landlock and the filter alone must refuse (root owns
# /etc/shadow). Then the same probes with --executor-sandbox off must get
# through: the test can fail.
# xgpu-test-timeout: 240
. "$(dirname "$0")/lib.bash"
# The filter kills a prober's executor with SIGSYS (31): that end is the point.
export EXECUTOR_ENDS_OK="was killed by signal 31"
prog=$B/tests/cuda/sandbox_probe
base=1879048192

# probe WHAT ARG: the prober's PROBE line (its domain, dom-probe).
probe() {
	local out
	out=$(XGPU_DOMAIN=dom-probe run_cuda "$prog" "$@" 2>&1) || true
	grep -m1 '^PROBE' <<<"$out" || echo "PROBE what=$1 outcome=noline ($(tail -n1 <<<"$out"))"
}

# A sibling domain: one process holding memory for the whole test.
start_victim() {
	XGPU_DOMAIN=dom-victim run_cuda "$B/tests/cuda/guestload" hold 16 "$1" >"$T/victim.out" 2>&1 &
	victim=$!
	wait_for 20 dom_gt dom-victim mem_bytes 16000000 || fail "the sibling never held its memory"
	vpid=$(dom_stat dom-victim executor_pid)
	[ "$vpid" -gt 0 ] || fail "no executor pid for the sibling"
	# A memfd of the sibling executor's (the guest's region, its pages).
	# Not root, this script cannot list a sandboxed executor's descriptors
	# either (it is not dumpable): then fd 6, a memfd as the executor's
	# start-up goes.
	vfd=
	for f in /proc/"$vpid"/fd/*; do
		case "$(readlink "$f" 2>/dev/null)" in /memfd:*) vfd=${f##*/} ;; esac
	done
	if [ -z "$vfd" ]; then
		[ "$(id -u)" -ne 0 ] || fail "the sibling executor $vpid holds no memfd"
		vfd=6
	fi
	note "sibling executor pid $vpid (uid $(stat -c %u /proc/"$vpid")), memfd on fd $vfd"
}

run_probes() {
	: >"$T/probes"
	{
		probe connect "$XGPU_SOCKET"
		probe open "/proc/$vpid/fd/$vfd"
		probe open /etc/shadow
		probe ptrace "$vpid"
		probe kill "$vpid"
		probe vmread "$vpid"
	} | tee "$T/probes"
}

# enforcing ARGS...: an xgpud with ARGS, its sandbox enforcing (the default on
# the simulated driver); every probe refused, the sibling unharmed.
enforcing() {
	start_xgpud "$@"
	start_victim 20
	grep -q "domain dom-victim: executor sandbox enforce: .*no capabilities, no_new_privs" "$XGPUD_LOG" ||
		fail "the sibling executor's log does not say it is sandboxed"
	local st=/proc/$vpid/status
	grep -q "^NoNewPrivs:[[:space:]]*1" "$st" || fail "the sibling executor lacks no_new_privs"
	grep -q "^Seccomp:[[:space:]]*2" "$st" || fail "the sibling executor has no seccomp filter"
	grep -q "^CapEff:[[:space:]]*0*$" "$st" && grep -q "^CapPrm:[[:space:]]*0*$" "$st" &&
		grep -q "^CapBnd:[[:space:]]*0*$" "$st" || [ "$(id -u)" -ne 0 ] ||
		fail "the sibling executor has capabilities"

	# The probe works where it is allowed: its own plugin opens.
	local out
	out=$(probe open "$B/tests/simkernels/sandbox_probe.so")
	note "allowed file: $out"
	grep -q "outcome=allowed" <<<"$out" || fail "the prober could not open its own plugin: $out"

	run_probes
	local kills
	kills=$(grep -c "was killed by signal 31" "$XGPUD_LOG" || true)
	! grep -q "outcome=allowed" "$T/probes" || fail "a forbidden thing worked under the sandbox"
	! grep -q "outcome=untried\|outcome=noline" "$T/probes" || fail "a probe did not run"
	[ "$(grep -c '^PROBE' "$T/probes")" -eq 6 ] || fail "not every probe answered"
	[ "$kills" -ge 3 ] || fail "only $kills executors were killed by the filter (SIGSYS)"
	note "$kills prober executors killed by SIGSYS"

	# A workload verifies under the sandbox, and the sibling saw nothing.
	XGPU_DOMAIN=dom-probe run_cuda "$B/bin/vectorAdd" -n 100000 -i 2 >"$T/va.out" 2>&1 || {
		cat "$T/va.out"
		fail "vectorAdd failed under the sandbox"
	}
	grep -q "verified=yes" "$T/va.out" || fail "vectorAdd did not verify under the sandbox"
	kill -0 "$vpid" || fail "the sibling executor died"
	[ "$(dom_stat dom-victim executor_pid)" = "$vpid" ] || fail "the sibling's executor changed"
	wait "$victim" || { cat "$T/victim.out"; fail "the sibling's program failed"; }
	grep -q "mismatches=0 .*verified=yes error=cudaSuccess" "$T/victim.out" || {
		cat "$T/victim.out"
		fail "the sibling's program saw an error"
	}
	stop_xgpud
	# Every executor that was not a prober's ended on its own at the stop:
	# the filter lets the exit path (a sanitized build's leak check
	# included) run.
	! grep -q "did not stop within a second" "$XGPUD_LOG" || fail "an executor hung at its exit under the filter"
	grep -q "domain dom-victim: executor pid $vpid exited with status 0" "$XGPUD_LOG" ||
		fail "the sibling executor did not exit cleanly under the filter"
	rm -f "$XGPU_SOCKET"
}

# ---- each domain's executor under a uid of its own ------------------------------
XGPUD_LOG=$T/xgpud-enforce.log
enforcing
if [ "$(id -u)" -eq 0 ]; then
	vuid=$(grep -o "domain dom-victim: executor sandbox enforce: uid and gid [0-9]*" "$XGPUD_LOG" | grep -o "[0-9]*$")
	[ "${vuid:-0}" -ge "$base" ] || fail "the sibling executor ran as uid ${vuid:-?}, not one of its own"

	# ---- as root, without capabilities: Landlock and the filter alone -----------
	# (root owns /etc/shadow, and the sibling has the same uid.)
	if grep -q "Landlock ABI" "$XGPUD_LOG"; then
		XGPUD_LOG=$T/xgpud-uid0.log
		enforcing --executor-uid-base 0
	else
		note "no Landlock in this kernel: the filter-alone round is skipped"
	fi
fi
XGPUD_LOG=$T/xgpud.log

# ---- off: the same probes get through, so the test above can fail ------------
start_xgpud --executor-sandbox off
start_victim 20
grep -q "executor's sandbox is off" "$XGPUD_LOG" || fail "an unsandboxed executor does not say so"
run_probes
allowed=$(grep -c "outcome=allowed" "$T/probes" || true)
note "$allowed of 6 probes got through with the sandbox off"
grep -q "what=connect outcome=allowed" "$T/probes" || fail "connect failed even without the sandbox"
sed -n 2p "$T/probes" | grep -q "outcome=allowed" || fail "the sibling's memfd did not open even without the sandbox"
[ "$(id -u)" -ne 0 ] || [ "$allowed" -eq 6 ] || fail "only $allowed probes got through without the sandbox"
wait "$victim" || true
stop_xgpud
