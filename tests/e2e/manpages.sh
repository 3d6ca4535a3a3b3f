#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The manual pages (docs/man/*.scd, built into $B/man/ by make man) render
# with man, and cannot drift from the binaries: every option xgpud --help
# lists is in xgpud(8), every command of xl-gpu help and every option of
# xl-gpu top -h in xl-gpu(1), and every setting and domain key the config
# parser knows (as its own error messages list them) in xgpud.conf(5).
. "$(dirname "$0")/lib.bash"

render() {
	MANWIDTH=80 LC_ALL=C man -l "$B/man/$1" >"$T/$1.txt" 2>"$T/$1.err" || fail "man -l $1 failed"
	[ ! -s "$T/$1.err" ] || { cat "$T/$1.err"; fail "man -l $1 complained"; }
	grep -q "^NAME" "$T/$1.txt" || fail "$1 has no NAME section"
	grep -q "^SEE ALSO" "$T/$1.txt" || fail "$1 has no SEE ALSO section"
}
for page in xgpud.8 xl-gpu.1 xgpud.conf.5; do
	[ -s "$B/man/$page" ] || fail "$B/man/$page was not built (make man)"
	render "$page"
done
grep -q -- "--kernel-timeout S" "$T/xgpud.8.txt" || fail "xgpud.8 lacks --kernel-timeout"

# Every option of xgpud --help, as an entry of its own in OPTIONS.
"$B/bin/xgpud" --help >"$T/xgpud.help"
mapfile -t opts < <(grep -oE -- '--[a-z][a-z-]*' "$T/xgpud.help" | sort -u)
[ "${#opts[@]}" -ge 20 ] || fail "found only ${#opts[@]} options in xgpud --help"
for o in "${opts[@]}"; do
	grep -qE -- "^ +(--[a-z-]+, )*$o( |,|$)" "$T/xgpud.8.txt" || fail "xgpud.8 does not describe $o"
done

# Every xl-gpu command, its global options, and top's options and keys.
"$B/bin/xl-gpu" help >"$T/xl-gpu.help"
mapfile -t cmds < <(awk '/^Commands:/ { on = 1; next } /^$/ { on = 0 } on && /^  [a-z]/ { print $1 }' \
	"$T/xl-gpu.help")
[ "${#cmds[@]}" -ge 9 ] || fail "found only ${#cmds[@]} commands in xl-gpu help"
for c in "${cmds[@]}"; do
	grep -qE "^ +$c( |$)" "$T/xl-gpu.1.txt" || fail "xl-gpu.1 does not describe the command $c"
done
for o in $(grep -oE -- '--[a-z][a-z-]*' "$T/xl-gpu.help" | sort -u); do
	grep -q -- "$o" "$T/xl-gpu.1.txt" || fail "xl-gpu.1 lacks $o"
done
"$B/bin/xl-gpu" top -h >"$T/top.help"
for o in $(grep -oE -- ' -[a-z]( |$)' "$T/top.help" | sort -u); do
	grep -q -- "$o" "$T/xl-gpu.1.txt" || fail "xl-gpu.1 lacks top's $o"
done
for col in $(sed -n 's/.*sort by \(.*\)/\1/p' "$T/top.help" | tr -d ',' | sed 's/ or / /'); do
	grep -qw -- "$col" "$T/xl-gpu.1.txt" || fail "xl-gpu.1 lacks top's sort column $col"
done

# The config file's settings and domain keys, as the parser names them.
printf 'nosuch = 1\n' >"$T/bad.conf"
printf 'domain = [ "name=a, nosuch=1" ]\n' >"$T/bad-key.conf"
for f in bad.conf bad-key.conf; do
	if "$B/bin/xgpud" --foreground --executor sim --socket "$T/x.sock" --config "$T/$f" \
		>"$T/$f.out" 2>&1; then
		fail "xgpud accepted $f"
	fi
	check_clean "$T/$f.out" "xgpud --config $f"
	known=$(sed -n 's/.*(known: \(.*\)).*/\1/p' "$T/$f.out" | tr -d ',')
	[ -n "$known" ] || { cat "$T/$f.out"; fail "$f: the error lists no known keys"; }
	for k in $known; do
		k=${k%%.<id>} # task.<id> is written task.ID
		grep -qE -- "^ +$k( |\.|$)" "$T/xgpud.conf.5.txt" || fail "xgpud.conf.5 does not describe $k"
	done
done
echo "manual pages OK"
