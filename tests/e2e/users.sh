#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Users and domains: uid-N is N's own default domain and nobody else may take
# it; a named domain belongs to its creator; each user sees only its own
# domains in the statistics; domains that empty out give back their poller
# thread. Needs root to run processes as another user (nobody).
. "$(dirname "$0")/lib.bash"
[ "$(id -u)" -eq 0 ] || fail "this test switches users and must run as root"
# The other user must reach the socket and the build.
chmod a+x "$T" "$(dirname "$T")"
start_xgpud
as_nobody() {
	setpriv --reuid=65534 --regid=65534 --clear-groups env XGPU_SOCKET="$XGPU_SOCKET" "$@"
}

# Another user cannot take root's default domain, or any uid-N but its own.
out=$(as_nobody env XGPU_DOMAIN=uid-0 LD_LIBRARY_PATH="$B/lib" ${CUDA_PRELOAD:+LD_PRELOAD=$CUDA_PRELOAD} \
	"$B/bin/vectorAdd" -n 1000 2>&1) && fail "nobody ran in uid-0"
grep -q "domain uid-0 is reserved for uid 0" <<<"$out" || { echo "$out"; fail "no reason given for uid-0"; }
out=$(as_nobody env XGPU_DOMAIN=uid-1000 LD_LIBRARY_PATH="$B/lib" ${CUDA_PRELOAD:+LD_PRELOAD=$CUDA_PRELOAD} \
	"$B/bin/vectorAdd" -n 1000 2>&1) && fail "nobody ran in uid-1000"

# Its default domain is its own, and root's default is root's.
out=$(as_nobody env LD_LIBRARY_PATH="$B/lib" ${CUDA_PRELOAD:+LD_PRELOAD=$CUDA_PRELOAD} "$B/bin/vectorAdd" -n 1000 2>&1) ||
	{ echo "$out"; fail "nobody could not use its default domain"; }
run_cuda "$B/bin/vectorAdd" -n 1000 >/dev/null || fail "root could not use its default domain"
[ "$(dom_stat uid-65534 uid)" -eq 65534 ] || fail "uid-65534 is not nobody's"
[ "$(dom_stat uid-0 uid)" -eq 0 ] || fail "uid-0 is not root's"

# A named domain belongs to its creator.
XGPU_DOMAIN=rootsteam run_cuda "$B/bin/vectorAdd" -n 1000 >/dev/null || fail "root could not create rootsteam"
out=$(as_nobody env XGPU_DOMAIN=rootsteam LD_LIBRARY_PATH="$B/lib" ${CUDA_PRELOAD:+LD_PRELOAD=$CUDA_PRELOAD} \
	"$B/bin/vectorAdd" -n 1000 2>&1) && fail "nobody joined root's domain"
grep -q "domain rootsteam belongs to uid 0" <<<"$out" || { echo "$out"; fail "no reason given for rootsteam"; }

# Each user sees its own domains; root sees all.
seen=$(as_nobody "$B/bin/xl-gpu" stats --json | jq -r '[.domains[].name] | sort | join(",")')
[ "$seen" = "uid-65534" ] || fail "nobody sees domains '$seen'"
[ "$(stats | jq '.domains | length')" -eq 3 ] || fail "root does not see every domain"

# Domains whose processes are gone keep their statistics but no thread.
base=$(ls /proc/"$XGPUD_PID"/task | wc -l)
for i in $(seq 12); do
	XGPU_DOMAIN=churn$i run_cuda "$B/bin/vectorAdd" -n 1000 >/dev/null || fail "churn$i failed"
done
threads_back() { [ "$(ls /proc/"$XGPUD_PID"/task | wc -l)" -le "$base" ]; }
wait_for 10 threads_back ||
	fail "threads grew from $base to $(ls /proc/"$XGPUD_PID"/task | wc -l) after 12 short-lived domains"
[ "$(stats | jq '.domains | length')" -eq 15 ] || fail "short-lived domains lost their statistics"
stop_xgpud
