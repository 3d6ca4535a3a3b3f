# SPDX-License-Identifier: Apache-2.0
# lib-daemon.sh - sourced by tools/demo.sh and tools/experiment/run.sh: one
# xgpud in local mode in a temporary folder, started and stopped around each
# measured run. Needs $B (the build folder); sets $work, $daemon and the
# clients' environment, and removes everything on exit.
work=$(mktemp -d "${TMPDIR:-/tmp}/xgpu-$(basename "$0" .sh).XXXXXX")
export XGPU_SOCKET=$work/xgpud.sock
# Clients use xgpu's libraries; the daemon must not: it loads NVIDIA's
# libcuda.so.1 (or the simulated one), and ours has the same name.
daemon_ldpath=${LD_LIBRARY_PATH-}
export LD_LIBRARY_PATH=$B/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
daemon=

daemon_cleanup() {
	if [ -n "$daemon" ]; then
		kill -TERM "$daemon" 2>/dev/null || true
		wait "$daemon" 2>/dev/null || true
	fi
	rm -rf "$work"
}
trap daemon_cleanup EXIT

# start_daemon LOG [xgpud options...]: starts xgpud and waits until it
# answers; exits the script with the log shown if it does not.
start_daemon() {
	local log=$1
	shift
	if [ -n "$daemon_ldpath" ]; then
		LD_LIBRARY_PATH=$daemon_ldpath "$B/bin/xgpud" --foreground "$@" >"$log" 2>&1 &
	else
		env -u LD_LIBRARY_PATH "$B/bin/xgpud" --foreground "$@" >"$log" 2>&1 &
	fi
	daemon=$!
	for _ in $(seq 100); do
		"$B/bin/xl-gpu" list >/dev/null 2>&1 && return 0
		kill -0 "$daemon" 2>/dev/null || { cat "$log" >&2; exit 1; }
		sleep 0.1
	done
	echo "$(basename "$0"): xgpud did not answer within 10 s (log: $log)" >&2
	exit 1
}

# stop_daemon: SIGTERM and wait; returns xgpud's exit status.
stop_daemon() {
	local rc=0
	kill -TERM "$daemon"
	wait "$daemon" || rc=$?
	daemon=
	return "$rc"
}
