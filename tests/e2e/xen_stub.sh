#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Two domains end to end over the in-memory Xen (xgpu-xenstub: xenstore,
# grant pages backed by shared memory, event channels): xgpud runs as dom0
# with --transport xen, xl-gpu attaches the vgpu device to domains 1, 2 and
# 3, and the unchanged frontend runs CUDA programs in domains 1 and 2 at the
# same time while xenliar lies to xgpud from domain 3 in every way it
# knows. Then a program is killed mid-run (its channel must be swept and the
# domain must keep working) and domain 2 is destroyed (its backend directory
# must be swept).
. "$(dirname "$0")/lib.bash"

export XGPU_XEN_STUB=$T/xen.sock
unset XGPU_XEN_DOMID XGPU_TRANSPORT
STUB_LOG=$T/xenstub.log
STUB_PID=
LIAR=$B/tests/tools/xenliar
BE=/local/domain/0/backend/vgpu

stub_cleanup() {
	local rc=$?
	stop_xenstub "$rc"
	(exit "$rc")
	cleanup
}
trap stub_cleanup EXIT

start_xenstub "$XGPU_XEN_STUB" 1:guest1 2:guest2 3:liar 4:bare

# expect_error DOMID TEXT [VAR=value...]: a program in the domain fails
# and the frontend's message says TEXT.
expect_error() {
	local d=$1 text=$2 out
	shift 2
	if out=$(run_cuda XGPU_XEN_DOMID="$d" XGPU_XEN_TIMEOUT_MS=500 "$@" "$B/bin/vectorAdd" -n 1000 -i 1 2>&1); then
		echo "$out" >&2
		fail "vectorAdd in domain $d worked where it should say: $text"
	fi
	grep -qF "$text" <<<"$out" || {
		echo "$out" >&2
		fail "the frontend in domain $d did not say: $text"
	}
	note "domain $d: $(echo "$out" | grep -F "$text" | head -n 1)"
}

for d in 1 2 3; do
	"$B/bin/xl-gpu" attach "$d" || fail "xl-gpu attach $d failed"
done
# Before xgpud runs: the device is there but nobody adopted it.
expect_error 1 "xgpud in dom0 has not picked up the vgpu device of domain 1"
start_xgpud --transport xen
expect_error 4 "this domain has no vgpu device; run xl-gpu attach 4 in dom0"
expect_error 1 "XGPU_TRANSPORT=carrier-pigeon is not a transport" XGPU_TRANSPORT=carrier-pigeon
wait_for 10 "$LIAR" ls "$BE/1/0" || fail "no backend directory for domain 1 after attach"

# in_dom DOMID CMD...: runs CMD as a process of that domain.
in_dom() {
	local d=$1
	shift
	run_cuda XGPU_XEN_DOMID="$d" XGPU_TRANSPORT=xen "$@"
}

# channels DOMID: the channel numbers in both of the domain's directories.
channels() {
	{
		XGPU_XEN_DOMID=0 "$LIAR" ls "/local/domain/$1/device/vgpu/0/channel" 2>/dev/null || true
		XGPU_XEN_DOMID=0 "$LIAR" ls "$BE/$1/0/channel" 2>/dev/null || true
	} | grep -v '^absent$' || true
}
no_channels() {
	[ -z "$(channels "$1")" ]
}
has_channels() {
	[ -n "$(channels "$1")" ]
}

check_verified() {
	grep -q "^RESULT .*verified=yes" "$1" || {
		cat "$1" >&2
		fail "$2 did not verify its results"
	}
	check_clean "$1" "$2"
}

dom_stat_id() {
	stats | jq -e --argjson d "$1" ".domains[] | select(.domid == \$d) | .$2"
}

# ---- the honest guests in domains 1 and 2, with the liar in domain 3 ------
note "vectorAdd and BlackScholes in domains 1 and 2 while xenliar lies from domain 3"
pids=()
for d in 1 2; do
	in_dom "$d" "$B/bin/vectorAdd" -n 200000 -i 300 >"$T/va$d.out" 2>&1 &
	pids+=($!)
	in_dom "$d" "$B/bin/BlackScholes" -n 200000 -i 200 >"$T/bs$d.out" 2>&1 &
	pids+=($!)
done

liar_failed=()
for mode in bad-ref-count huge-ref-count foreign-port out-of-order rewrite-ring-ref vanish bad-protocol; do
	if XGPU_XEN_DOMID=3 "$LIAR" "$mode" >"$T/liar-$mode.out" 2>&1; then
		note "xenliar $mode: $(grep '^backend' "$T/liar-$mode.out" | head -n 2 | tr '\n' ' ')"
	else
		cat "$T/liar-$mode.out" >&2
		liar_failed+=("$mode")
	fi
	check_clean "$T/liar-$mode.out" "xenliar $mode"
	kill -0 "$XGPUD_PID" 2>/dev/null || fail "xgpud died during xenliar $mode"
done

for p in "${pids[@]}"; do
	wait "$p" || true
done
for d in 1 2; do
	check_verified "$T/va$d.out" "vectorAdd in domain $d"
	check_verified "$T/bs$d.out" "BlackScholes in domain $d"
done
[ ${#liar_failed[@]} -eq 0 ] || fail "xgpud did not refuse xenliar ${liar_failed[*]}"

# Channels opened and closed by the library's own client (graceful
# Closing/Closed), and channels xgpud closes on a broken ring: the
# frontend must see the backend go.
for m in "nops 200" malformed corrupt-ring; do
	# shellcheck disable=SC2086
	XGPU_XEN_DOMID=1 XGPU_TRANSPORT=xen "$B/tests/tools/rawclient" $m >"$T/raw.out" 2>&1 || {
		cat "$T/raw.out" >&2
		fail "rawclient $m in domain 1 failed"
	}
	check_clean "$T/raw.out" "rawclient $m"
	note "rawclient $m in domain 1: ok"
done

# Threads and a fork: the child drops the parent's channel without
# touching it and opens its own.
in_dom 2 "$B/tests/cuda/threads" >"$T/threads.out" 2>&1 || {
	cat "$T/threads.out" >&2
	fail "threads (with fork) in domain 2 failed"
}
check_verified "$T/threads.out" "threads in domain 2"
note "threads (with fork) in domain 2: ok"

for d in 1 2; do
	calls=$(dom_stat_id "$d" calls) || fail "xl-gpu stats shows no domain with domid $d"
	note "domid $d ($(dom_stat_id "$d" name)): $calls calls"
	[ "$calls" -gt 0 ] || fail "domid $d made no calls"
done
wait_for 10 no_channels 1 || fail "channels of domain 1 left behind: $(channels 1 | tr '\n' ' ')"
wait_for 10 no_channels 3 || fail "channels of domain 3 left behind: $(channels 3 | tr '\n' ' ')"

# ---- a program killed mid-run ----------------------------------------------
note "kill -9 a program in domain 1 mid-run"
# env execs the program, so $! is the program itself.
env LD_LIBRARY_PATH="$B/lib" ${CUDA_PRELOAD:+LD_PRELOAD=$CUDA_PRELOAD} XGPU_XEN_DOMID=1 XGPU_TRANSPORT=xen \
	"$B/bin/vectorAdd" -n 200000 -i 100000 >"$T/killed.out" 2>&1 &
victim=$!
wait_for 20 has_channels 1 || fail "the victim's channel never appeared"
sleep 0.5
kill -9 "$victim"
wait "$victim" 2>/dev/null || true
wait_for 10 no_channels 1 || fail "the killed program's channel was not swept: $(channels 1 | tr '\n' ' ')"
kill -0 "$XGPUD_PID" 2>/dev/null || fail "xgpud died after the kill"
in_dom 1 "$B/bin/vectorAdd" -n 100000 -i 2 >"$T/after.out" 2>&1 || {
	cat "$T/after.out" >&2
	fail "a new program in domain 1 failed after the kill"
}
check_verified "$T/after.out" "vectorAdd in domain 1 after the kill"

# ---- a domain destroyed ----------------------------------------------------
note "destroy domain 2"
"$B/bin/xgpu-xenstub" ctl release 2 || fail "xgpu-xenstub ctl release 2 failed"
wait_for 10 bash -c "! XGPU_XEN_DOMID=0 '$LIAR' ls '$BE/2' >/dev/null 2>&1" ||
	fail "the backend directory of domain 2 was not swept"

# ---- what the daemon and the stub logged -----------------------------------
stop_xgpud
kill -0 "$STUB_PID" 2>/dev/null || fail "xgpu-xenstub died"
check_clean "$STUB_LOG" xgpu-xenstub
