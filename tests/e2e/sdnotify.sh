#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# systemd's Type=notify, without systemd: xgpud started with NOTIFY_SOCKET
# naming a datagram socket this test listens on sends READY=1 only once its
# control socket answers (the listener asks xl-gpu at the moment READY=1
# arrives), and STOPPING=1 at SIGTERM, before it exits; a NOTIFY_SOCKET that
# nobody listens on costs a warning, not the daemon. dist/systemd/xgpud.service
# passes systemd-analyze verify where that is installed.
. "$(dirname "$0")/lib.bash"
command -v python3 >/dev/null || fail "python3 is needed (tools/install-deps.sh)"

# The listener: records each message; on READY=1 checks that the daemon has
# logged that it is listening (it logs that after its start-up, where the
# socket already accepts but nothing answers yet) and asks it, with a short
# timeout.
cat >"$T/listen.py" <<'EOF'
import os, socket, subprocess, sys
path, log, xlgpu, daemon_log = sys.argv[1:5]
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(path)
s.settimeout(15)
open(path + ".bound", "w").close()
with open(log, "w", buffering=1) as out:
    while True:
        try:
            msg = s.recv(4096).decode()
        except socket.timeout:
            out.write("timeout\n")
            break
        out.write("msg " + msg.replace("\n", "|") + "\n")
        if "READY=1" in msg.split("\n"):
            logged = "listening on" in open(daemon_log).read()
            out.write("logged-listening-at-ready %s\n" % logged)
            try:
                rc = subprocess.run(["timeout", "2", xlgpu, "list"], stdout=subprocess.DEVNULL,
                                    stderr=subprocess.STDOUT).returncode
            except OSError:
                rc = -1
            out.write("list-at-ready rc=%d\n" % rc)
        if "STOPPING=1" in msg.split("\n"):
            break
EOF
python3 "$T/listen.py" "$T/notify.sock" "$T/notify.log" "$B/bin/xl-gpu" "$XGPUD_LOG" &
listener=$!
wait_for 5 test -e "$T/notify.sock.bound" || fail "the listener did not bind"

NOTIFY_SOCKET=$T/notify.sock "$B/bin/xgpud" --foreground --executor sim --socket "$XGPU_SOCKET" \
	--log-level info >"$XGPUD_LOG" 2>&1 &
XGPUD_PID=$!
wait_for 10 grep -q "^list-at-ready" "$T/notify.log" || { cat "$T/notify.log"; fail "no READY=1"; }
cat "$T/notify.log"
grep -q "^msg READY=1|STATUS=listening on $XGPU_SOCKET$" "$T/notify.log" || fail "READY=1 message malformed"
grep -q "^logged-listening-at-ready True$" "$T/notify.log" || fail "READY=1 came before start-up ended"
grep -q "^list-at-ready rc=0$" "$T/notify.log" || fail "READY=1 came before the control socket answered"
[ "$(grep -c READY=1 "$T/notify.log")" -eq 1 ] || fail "READY=1 sent more than once"
grep -q STOPPING "$T/notify.log" && fail "STOPPING=1 before any signal"

# SIGTERM: STOPPING=1, then a clean exit.
kill -TERM "$XGPUD_PID"
wait "$XGPUD_PID" || fail "xgpud exited with status $?"
XGPUD_PID=
check_clean "$XGPUD_LOG" xgpud
wait "$listener" || fail "the listener failed"
cat "$T/notify.log"
tail -n 1 "$T/notify.log" | grep -q "^msg STOPPING=1$" || fail "no STOPPING=1 at SIGTERM"
grep -q "timeout" "$T/notify.log" && fail "the listener timed out"

# Nobody listening: a warning, and the daemon serves as usual.
NOTIFY_SOCKET=$T/nobody.sock start_xgpud
grep -q 'cannot notify the service manager' "$XGPUD_LOG" || fail "no warning for a dead NOTIFY_SOCKET"
stop_xgpud

if command -v systemd-analyze >/dev/null; then
	# The unit names the installed path; point it at this build to verify.
	sed "s|/usr/sbin/xgpud|$B/bin/xgpud|" "$SRC/dist/systemd/xgpud.service" >"$T/xgpud.service"
	systemd-analyze verify --man=no "$T/xgpud.service" >"$T/verify.out" 2>&1 ||
		{ cat "$T/verify.out"; fail "systemd-analyze verify rejects xgpud.service"; }
	[ ! -s "$T/verify.out" ] || { cat "$T/verify.out"; fail "systemd-analyze verify warns"; }
else
	note "no systemd-analyze: the unit was not verified"
fi
echo "sd_notify OK"
