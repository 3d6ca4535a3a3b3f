#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Operating xgpu: with three domains running, `xl-gpu top -b -n 2 -d 1` prints
# two frames listing every domain with plausible rates (slot shares that add
# up to at most the whole GPU, calls/s, memory, p99 wait); interactive top
# under tmux shows every domain, re-sorts on a key and quits cleanly on q;
# `xl-gpu stats --prometheus` is well-formed exposition text whose counters
# never go backwards between two scrapes.
. "$(dirname "$0")/lib.bash"
start_xgpud --policy rr

TMUX_SOCK=$T/tmux.sock
# The tmux server and the workloads go too, whatever happens; then lib.bash's
# cleanup, with this script's status.
stop_all() {
	local rc=$?
	tmux -S "$TMUX_SOCK" kill-server 2>/dev/null || true
	[ ${#pids[@]} -eq 0 ] || kill "${pids[@]}" 2>/dev/null || true
	if [ "$rc" -ne 0 ]; then
		(exit "$rc") || cleanup
	fi
	cleanup
}
trap stop_all EXIT
pids=()
doms=(top-a top-b top-c)
for d in "${doms[@]}"; do
	XGPU_DOMAIN=$d run_cuda "$B/bin/vectorAdd" -n 200000 -i 100000 -t 8 >"$T/$d.out" 2>&1 &
	pids+=($!)
done
for d in "${doms[@]}"; do
	wait_for 10 dom_gt "$d" calls 20 || fail "$d never ran"
done

# Batch mode: two frames, one row per domain in each.
"$B/bin/xl-gpu" top -b -n 2 -d 1 >"$T/top.out" 2>"$T/top.err" || fail "xl-gpu top -b failed"
check_clean "$T/top.err" "xl-gpu top"
cat "$T/top.out"
[ "$(grep -c '^xl-gpu top - ' "$T/top.out")" -eq 2 ] || fail "top -b -n 2 did not print two frames"
grep -q '^NAME .*\[SLOT%\].*CALLS/S.*P99WAIT(us)' "$T/top.out" || fail "no header with the sort column marked"
# Columns: NAME GPU DOMID CREDIT SLOT% BUSY% MEM(MiB) CALLS/S P99WAIT(us) EXECUTOR.
awk -v doms="${doms[*]}" '
	/^xl-gpu top - / { frame++; slot[frame] = 0; next }
	$1 ~ /^top-/ {
		seen[frame, $1] = 1
		slot[frame] += $5
		if ($4 != 256) { print "credit of " $1 " is " $4; bad = 1 }
		if ($5 < 0 || $5 > 100 || $6 < 0 || $6 > 100) { print "share out of range: " $0; bad = 1 }
		if ($7 <= 0) { print "no memory shown for " $1; bad = 1 }
		if ($8 <= 0) { print "no calls/s for " $1; bad = 1 }
		if ($10 != "serving") { print "the executor of " $1 " is " $10 ", not serving"; bad = 1 }
		if ($9 <= 0 || $9 > 1e7) { print "implausible p99 wait for " $1 ": " $9; bad = 1 }
		# Over the interval, from the wait histograms: a bucket edge.
		if (frame == 2) { e = $9; while (e >= 8) e /= 2; if (e != 4 && e != 5 && e != 6 && e != 7 && $9 >= 8) { print "p99 wait " $9 " is no bucket edge"; bad = 1 } }
		if (frame == 2 && $5 <= 0) { print $1 " held no slot in the interval"; bad = 1 }
	}
	END {
		n = split(doms, want, " ")
		for (f = 1; f <= 2; f++) {
			for (i = 1; i <= n; i++)
				if (!seen[f, want[i]]) { print "frame " f " lacks " want[i]; bad = 1 }
			# One GPU: the slot is held by one domain at a time.
			if (slot[f] > 105) { print "frame " f " slot shares add up to " slot[f]; bad = 1 }
		}
		if (slot[2] < 20) { print "frame 2: three busy domains held the slot only " slot[2] "%"; bad = 1 }
		exit bad
	}' "$T/top.out" || fail "top -b frames are not plausible"
# xl-gpu list names each busy domain's executor and its pid.
"$B/bin/xl-gpu" list >"$T/list.out" || fail "xl-gpu list failed"
for d in "${doms[@]}"; do
	pid=$(dom_stat "$d" executor_pid)
	grep -q "^$d .* serving (pid $pid)\$" "$T/list.out" || { cat "$T/list.out"; fail "xl-gpu list does not show $d's executor (pid $pid)"; }
done
# The calls/s of a domain agrees with the daemon's counters: over 1 s it
# cannot exceed what the domain made in total.
total_calls=$(dom_stat top-a calls)
rate=$(awk '$1 == "top-a" { r = $8 } END { print int(r) }' "$T/top.out")
[ "$rate" -le "$total_calls" ] || fail "top-a: $rate calls/s but only $total_calls calls in all"
"$B/bin/xl-gpu" top -b -n 1 -s name -r | awk '$1 ~ /^top-/ { print $1 }' | tr '\n' ' ' >"$T/order"
[ "$(cat "$T/order")" = "top-c top-b top-a " ] || fail "top -s name -r sorted as: $(cat "$T/order")"
if "$B/bin/xl-gpu" top -b -s nosuch >/dev/null 2>"$T/bad.err"; then
	fail "top -s nosuch was accepted"
fi
grep -q "no such column" "$T/bad.err" || fail "top -s nosuch: $(cat "$T/bad.err")"
if "$B/bin/xl-gpu" top </dev/null >/dev/null 2>"$T/bad.err"; then
	fail "interactive top ran without a terminal"
fi
grep -q "use -b" "$T/bad.err" || fail "top without a terminal: $(cat "$T/bad.err")"

# Interactive, under tmux: every domain on screen; '1' sorts by name; q quits.
if command -v tmux >/dev/null; then
	tmux -S "$TMUX_SOCK" -f /dev/null new-session -d -x 120 -y 30 \
		"env XGPU_SOCKET='$XGPU_SOCKET' ASAN_OPTIONS='${ASAN_OPTIONS:-}' \
			'$B/bin/xl-gpu' top -d 0.5 2>'$T/itop.err'; echo \$? >'$T/itop.rc'"
	screen_has() {
		tmux -S "$TMUX_SOCK" capture-pane -p >"$T/screen" && grep -q -- "$1" "$T/screen" &&
			grep -q top-a "$T/screen" && grep -q top-b "$T/screen" && grep -q top-c "$T/screen"
	}
	wait_for 10 screen_has '\[SLOT%\]' || { cat "$T/screen"; fail "top's screen lacks a domain"; }
	tmux -S "$TMUX_SOCK" send-keys 1
	wait_for 5 screen_has '\[NAME\]' || { cat "$T/screen"; fail "key 1 did not sort by name"; }
	cat "$T/screen"
	[ "$(awk '$1 ~ /^top-/ { printf "%s ", $1 }' "$T/screen")" = "top-a top-b top-c " ] ||
		fail "screen not sorted by name"
	# A narrow terminal: rows are cut at its width, not wrapped into each
	# other (summary, GPU, header and three domains: six lines). tmux cuts
	# the old screen itself, so 'r' (reverse: top-c first) marks a redraw.
	tmux -S "$TMUX_SOCK" resize-window -x 50 -y 30
	tmux -S "$TMUX_SOCK" send-keys r
	narrow() {
		tmux -S "$TMUX_SOCK" capture-pane -p >"$T/screen" &&
			[ "$(awk '$1 ~ /^top-/ { print $1; exit }' "$T/screen")" = top-c ] &&
			[ "$(grep -c . "$T/screen")" -eq 6 ] &&
			[ "$(awk "{ print length }" "$T/screen" | sort -n | tail -1)" -le 50 ] &&
			[ "$(grep -c '^top-[abc] ' "$T/screen")" -eq 3 ]
	}
	wait_for 5 narrow || { cat "$T/screen"; fail "top's rows do not fit a 50-column terminal"; }
	tmux -S "$TMUX_SOCK" send-keys q
	wait_for 5 test -s "$T/itop.rc" || fail "top did not quit on q"
	[ "$(cat "$T/itop.rc")" = 0 ] || fail "interactive top exited with $(cat "$T/itop.rc")"
	check_clean "$T/itop.err" "interactive xl-gpu top"
else
	note "no tmux: interactive top not checked"
fi

# Prometheus: every line is a HELP/TYPE comment or a sample of a family
# declared above it; counters end in _total and, like the wait histograms'
# buckets, never decrease; a histogram's buckets grow with le and its
# +Inf bucket is its _count.
scrape() {
	"$B/bin/xl-gpu" stats --prometheus >"$1" || fail "xl-gpu stats --prometheus failed"
	awk '
		/^# HELP [a-zA-Z_:][a-zA-Z0-9_:]* / { next }
		/^# TYPE [a-zA-Z_:][a-zA-Z0-9_:]* (counter|gauge|histogram)$/ {
			if ($4 == "counter" && $3 !~ /_total$/) { print "counter without _total: " $3; bad = 1 }
			type[$3] = $4; next
		}
		/^[a-zA-Z_:][a-zA-Z0-9_:]*(\{[a-zA-Z_][a-zA-Z0-9_]*="([^"\\]|\\.)*"(,[a-zA-Z_][a-zA-Z0-9_]*="([^"\\]|\\.)*")*\})? -?[0-9][0-9.]*([eE][-+]?[0-9]+)?$/ {
			name = $0; sub(/[{ ].*/, "", name)
			base = name; sub(/_(bucket|sum|count)$/, "", base)
			if (!(name in type) && type[base] != "histogram") { print "sample before its TYPE: " $0; bad = 1 }
			# A histogram: buckets cumulative in le, +Inf equal to _count.
			if (name ~ /_bucket$/ && type[base] == "histogram") {
				series = $0; sub(/,?le="[^"]*"/, "", series); sub(/ [^ ]*$/, "", series)
				if (series != last_series) { last_series = series; last_count = 0 }
				if ($2 + 0 < last_count) { print "bucket below the one before: " $0; bad = 1 }
				last_count = $2 + 0
				if ($0 ~ /le="\+Inf"/) inf[series] = $2
			}
			if (name ~ /_count$/ && type[base] == "histogram") {
				series = $0; sub(/ [^ ]*$/, "", series); sub(/_count\{/, "_bucket{", series)
				if (!(series in inf) || inf[series] != $2) { print "_count is not the +Inf bucket: " $0; bad = 1 }
				histograms++
			}
			samples++; next
		}
		{ print "malformed line: " $0; bad = 1 }
		END {
			if (samples < 20) { print "only " samples " samples"; bad = 1 }
			if (histograms < 3) { print "only " histograms " wait histograms"; bad = 1 }
			exit bad
		}' "$1" ||
		fail "$1 is not Prometheus text"
}
scrape "$T/prom1"
sleep 0.5
scrape "$T/prom2"
for d in "${doms[@]}"; do
	grep -qE "^xgpu_domain_calls_total\{domain=\"$d\",domid=\"[0-9]+\",gpu=\"0\"\} [1-9]" "$T/prom2" ||
		fail "no calls_total for $d"
done
grep -q '^xgpu_gpu_info{gpu="0",.*policy="rr"} 1$' "$T/prom2" || fail "no xgpu_gpu_info for GPU 0"
awk '
	FNR == NR && / (counter|histogram)$/ { counter[$3] = 1 }
	/^#/ { next }
	{ name = $1; sub(/\{.*/, "", name); sub(/_(bucket|sum|count)$/, "", name); series = $1 }
	FNR == NR { if (name in counter) before[series] = $2; next }
	(series in before) && $2 + 0 < before[series] + 0 { print series ": " before[series] " -> " $2; bad = 1 }
	(series in before) { compared++ }
	END { if (compared < 30) { print "only " compared " counters compared"; bad = 1 }; exit bad }' \
	"$T/prom1" "$T/prom2" || fail "a counter went backwards between scrapes"

# A daemon that goes away ends top with status 1 and the reason.
if command -v tmux >/dev/null; then
	rm -f "$T/itop.rc"
	tmux -S "$TMUX_SOCK" -f /dev/null new-session -d -x 120 -y 30 \
		"env XGPU_SOCKET='$XGPU_SOCKET' ASAN_OPTIONS='${ASAN_OPTIONS:-}' \
			'$B/bin/xl-gpu' top -d 0.2 2>'$T/itop.err'; echo \$? >'$T/itop.rc'"
	wait_for 10 screen_has '\[SLOT%\]' || { cat "$T/screen"; fail "second top did not show the domains"; }
fi
kill "${pids[@]}" 2>/dev/null || true
wait "${pids[@]}" 2>/dev/null || true
pids=()
stop_xgpud
if command -v tmux >/dev/null; then
	wait_for 5 test -s "$T/itop.rc" || fail "top did not end when xgpud stopped"
	[ "$(cat "$T/itop.rc")" = 1 ] || fail "top exited with $(cat "$T/itop.rc") when xgpud stopped"
	grep -q "cannot reach xgpud" "$T/itop.err" || { cat "$T/itop.err"; fail "top did not say why it ended"; }
	check_clean "$T/itop.err" "xl-gpu top (daemon gone)"
fi
echo "top and metrics OK"
