#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# remote.sh - the remote rows of `make bench` (issue 30): a guest program on
# one "host" using xgpud's GPU on another, each figure beside its floor
# measured in the same run over the same link:
#   - the null call (cudaStreamQuery, one round trip) against a one-byte TCP
#     round trip (tests/tools/tcprtt ping, TCP_NODELAY);
#   - 64 MiB copies each way against a plain TCP stream (tcprtt stream);
#   - with TLS 1.3 (PSK) and with plain TCP (--remote-insecure);
#   - TLS figures also against the same floors over TLS 1.3 with the same
#     key, GnuTLS settings and cipher (tcprtt with TCPRTT_PSK_FILE): what an
#     encrypted channel cannot beat, its crypto paid.
# The two hosts are network namespaces joined by a veth pair when this runs
# as root (the link remote.sh tests), else loopback. Writes
# ${BENCH_REMOTE_OUT:-docs/results/bench-remote.md} above its marker line,
# keeping what an earlier file has below it (notes.sh).
#   remote.sh BUILD_DIR TCPRTT
set -euo pipefail
B=$(cd "${1:?build dir}" && pwd)
TCPRTT=${2:?path to tests/tools/tcprtt}
src=$(cd "$(dirname "$0")/../.." && pwd)
. "$src/tools/bench/notes.sh"
out=${BENCH_REMOTE_OUT:-$src/docs/results/bench-remote.md}
rounds=${BENCH_REMOTE_ROUNDS:-3}
work=$(mktemp -d "${TMPDIR:-/tmp}/xgpu-bench-remote.XXXXXX")
export XGPU_SOCKET=$work/xgpud.sock
PORT=7447
daemon= NSH= NSG=
cleanup() {
	if [ -n "$daemon" ]; then
		kill -TERM "$daemon" 2>/dev/null || true
		wait "$daemon" 2>/dev/null || true
	fi
	[ -z "$NSG" ] || ip netns del "$NSG" 2>/dev/null || true
	[ -z "$NSH" ] || ip netns del "$NSH" 2>/dev/null || true
	[ -n "${BENCH_KEEP:-}" ] || rm -rf "$work"
}
trap cleanup EXIT

# "${host_side[@]}" / "${guest_side[@]}" CMD...: run on the GPU host's or the
# guest's side (ip netns exec execs, so $! is the program's own pid).
if [ "$(id -u)" = 0 ] && ip netns add "xgb-h-$$" 2>/dev/null; then
	NSH=xgb-h-$$ NSG=xgb-g-$$
	ip netns add "$NSG"
	net=10.$((100 + $$ % 100)).$(($$ / 100 % 250))
	GPU_IP=$net.1
	ip link add "xgbh$$" netns "$NSH" type veth peer name "xgbg$$" netns "$NSG"
	ip -n "$NSH" addr add "$GPU_IP/30" dev "xgbh$$"
	ip -n "$NSG" addr add "$net.2/30" dev "xgbg$$"
	for ns in "$NSH" "$NSG"; do ip -n "$ns" link set lo up; done
	ip -n "$NSH" link set "xgbh$$" up
	ip -n "$NSG" link set "xgbg$$" up
	link="a veth pair between two network namespaces"
	host_side=(ip netns exec "$NSH")
	guest_side=(ip netns exec "$NSG")
else
	GPU_IP=127.0.0.1
	link="loopback (not root: no network namespaces)"
	host_side=()
	guest_side=()
fi

PSK=$work/gpuhost.psk
(umask 077 && echo "bench:$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')" >"$PSK")

start() {
	"${host_side[@]}" "$B/bin/xgpud" --foreground --executor sim --policy none --socket "$XGPU_SOCKET" \
		--remote-listen "$GPU_IP:$PORT" "$@" >>"$work/xgpud.log" 2>&1 &
	daemon=$!
	for _ in $(seq 100); do
		grep -q "remote transport: listening" "$work/xgpud.log" 2>/dev/null && return 0
		sleep 0.1
	done
	cat "$work/xgpud.log"
	exit 1
}
stop() {
	kill -TERM "$daemon" 2>/dev/null || true
	wait "$daemon" 2>/dev/null || true
	daemon=
}

# guest MODE PROGRAM ARGS...: a program on the guest's side, TLS or plain.
guest() {
	local mode=$1
	shift
	local key=(XGPU_REMOTE_PSK_FILE="$PSK")
	[ "$mode" = plain ] && key=(XGPU_REMOTE_INSECURE=1)
	[ "$mode" = zc ] && key=(XGPU_REMOTE_INSECURE=1 XGPU_REMOTE_ZEROCOPY=1)
	"${guest_side[@]}" env XGPU_SOCKET="$work/none.sock" XGPU_REMOTE="$GPU_IP:$PORT" "${key[@]}" XGPU_DOMAIN=bench \
		LD_LIBRARY_PATH="$B/lib" "$@"
}

median() { sort -g | awk '{v[NR] = $1} END {print (NR ? v[int((NR + 1) / 2)] : "")}'; }
field() { awk -v k="$1" '$1 == k {print $2}'; }

# tcp_floor SERVER_MODE CLIENT_MODE PORT [ARG]: tcprtt's server on the GPU
# host's side, its client on the guest's, over the same link.
# TCPRTT_PSK_FILE set: the same over TLS.
tcp_floor() {
	"${host_side[@]}" env TCPRTT_PSK_FILE="${TCPRTT_PSK_FILE:-}" "$TCPRTT" "$1" "$GPU_IP" "$3" &
	local pid=$!
	sleep 0.2
	"${guest_side[@]}" env TCPRTT_PSK_FILE="${TCPRTT_PSK_FILE:-}" "$TCPRTT" "$2" "$GPU_IP" "$3" "$4"
	wait "$pid"
}
rtt_floor() { tcp_floor serve ping $((PORT + 1)) 2000 | sed 's/.*_rtt_p50_us=\([0-9.]*\).*/\1/'; }
stream_floor() { tcp_floor sink stream $((PORT + 2)) 256 | sed -n 's/.*_stream_gbps=\([0-9.]*\).*/\1/p'; }
# The stream of a GiB, for its rate and the machine's CPU time per GB
# (tcprtt: "..._stream_gbps=R cpu_s_per_gb=C"), printed as "R C".
stream_cpu() { tcp_floor sink stream $((PORT + 3)) 1024 | sed -n 's/.*_stream_gbps=\([0-9.]*\) cpu_s_per_gb=\([-0-9.]*\).*/\1 \2/p'; }

echo "bench: remote null call and copies over $link"
declare -A null h2d d2h launch launch_batch
for mode in tls plain zc; do
	case $mode in
	tls) start --remote-psk "$PSK" ;;
	plain) start --remote-insecure ;;
	zc) start --remote-insecure --remote-zerocopy ;;
	esac
	for r in $(seq "$rounds"); do
		# Plain sends against MSG_ZEROCOPY: only the copies differ.
		if [ "$mode" = zc ]; then
			guest "$mode" "$B/bin/xgpu-bench" copy 64 >"$work/copy.$mode.$r" 2>>"$work/zc.err"
			continue
		fi
		guest "$mode" "$B/bin/xgpu-bench-api" runtime "$B/lib" "$B/bench/null_kernel.fatbin" 2000 \
			>"$work/api.$mode.$r"
		guest "$mode" XGPU_PIPELINE=0 "$B/bin/xgpu-bench-api" runtime "$B/lib" "$B/bench/null_kernel.fatbin" \
			2000 >"$work/apisync.$mode.$r"
		guest "$mode" "$B/bin/xgpu-bench" copy 64 >"$work/copy.$mode.$r"
	done
	# The machine's CPU time per byte over a GiB each way (xgpu-bench cpu).
	[ "$mode" = zc ] || guest "$mode" "$B/bin/xgpu-bench" cpu 64 16 >"$work/cpu.$mode"
	if [ "$mode" != zc ]; then
		null[$mode]=$(cat "$work"/api."$mode".* | field api_runtime_null_p50_us | median)
		launch[$mode]=$(cat "$work"/api."$mode".* | field api_runtime_launch_p50_us | median)
		launch_batch[$mode]=$(cat "$work"/api."$mode".* | field api_runtime_launch_batch_us | median)
		launch[$mode.sync]=$(cat "$work"/apisync."$mode".* | field api_runtime_launch_p50_us | median)
		launch_batch[$mode.sync]=$(cat "$work"/apisync."$mode".* | field api_runtime_launch_batch_us | median)
	fi
	h2d[$mode]=$(cat "$work"/copy."$mode".* | awk '$1 ~ /h2d_gbps/ {print $2}' | median)
	d2h[$mode]=$(cat "$work"/copy."$mode".* | awk '$1 ~ /d2h_gbps/ {print $2}' | median)
	stop
done
# What the kernel did with the zerocopy sends: the frontend's (host to
# device) and xgpud's (device to host) counts of completions it copied.
zc_fe=$(awk '/MSG_ZEROCOPY:/ {sub(/.*MSG_ZEROCOPY: /, ""); s += $1; c += $3; k += $5} END {printf "%d sends, %d completed, %d copied", s, c, k}' "$work/zc.err")
zc_be=$(awk '/left domain remote-bench.*MSG_ZEROCOPY:/ {sub(/.*MSG_ZEROCOPY: /, ""); s += $1; c += $3; k += $5} END {printf "%d sends, %d completed, %d copied", s, c, k}' "$work/xgpud.log")
rtts=() streams=() tls_rtts=() tls_streams=()
declare -A cpu_stream_gbps cpu_stream_cost
for r in $(seq "$rounds"); do
	rtts+=("$(rtt_floor)")
	streams+=("$(stream_floor)")
	tls_rtts+=("$(TCPRTT_PSK_FILE=$PSK rtt_floor)")
	tls_streams+=("$(TCPRTT_PSK_FILE=$PSK stream_floor)")
done
read -r cpu_stream_gbps[plain] cpu_stream_cost[plain] <<<"$(stream_cpu)"
read -r cpu_stream_gbps[tls] cpu_stream_cost[tls] <<<"$(TCPRTT_PSK_FILE=$PSK stream_cpu)"
rtt=$(printf '%s\n' "${rtts[@]}" | median)
stream=$(printf '%s\n' "${streams[@]}" | median)
tls_rtt=$(printf '%s\n' "${tls_rtts[@]}" | median)
tls_stream=$(printf '%s\n' "${tls_streams[@]}" | median)
ncpu=$(nproc)
# cpu_row LABEL GBPS COST FLOOR_GBPS: a row of the CPU table; the most the
# path could reach here is every CPU busy with it, ncpu / COST GB/s.
cpu_row() {
	awk -v l="$1" -v g="$2" -v c="$3" -v f="$4" -v n="$ncpu" 'BEGIN {
		if (c <= 0) { printf "| %s | %s | - | - | - |\n", l, g; exit }
		printf "| %s | %s | %.3f | %.2f | %.0f%% |\n", l, g, c, n / c, 100 * n / c / f }'
}
cpu_field() { awk -v k="$2" '$1 == k {print $2}' "$work/cpu.$1"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {if (b > 0) printf "%.2fx", a / b; else print "-"}'; }
share() { awk -v a="$1" -v b="$2" 'BEGIN {if (b > 0) printf "%.0f%%", 100 * a / b; else print "-"}'; }

{
	echo "<!-- SPDX-License-Identifier: Apache-2.0 -->"
	echo "# Benchmarks, remote GPUs"
	echo
	echo "Measured by \`make bench\` (alone: \`tools/bench/remote.sh BUILD TCPRTT\`), $(date -u +%Y-%m-%d),"
	echo "commit $(git -C "$src" rev-parse --short HEAD 2>/dev/null || echo unknown), $(nproc) CPUs, sim executor,"
	echo "over $link. Each figure is the median of $rounds runs; the floors were measured in the same"
	echo "run over the same link: a one-byte TCP round trip (TCP_NODELAY) and a plain TCP stream of"
	echo "256 MiB. The guest program, its relay threads, xgpud's relay and the domain's executor share"
	echo "this machine's CPUs, which two hosts would not. Targets (issue 30): a null call within 2x the"
	echo "round trip, copies at 90 % of the stream. A launch is pipelined on remote channels (it returns"
	echo "once sent; its answer is taken before the next call that waits); XGPU_PIPELINE=0 makes each"
	echo "launch a round trip, as before. The batch mean times runs of launches each followed by a"
	echo "synchronisation, which is where the pipelined answers are taken."
	echo
	echo "The TLS floors are the same measurements over TLS 1.3 with the same key, GnuTLS settings"
	echo "and cipher (\`tcprtt\` with \`TCPRTT_PSK_FILE\`): a $tls_rtt us round trip and a $tls_stream GB/s stream"
	echo "here. TLS / TLS floor is what the relay costs beyond the encryption itself."
	echo
	echo "| | TLS 1.3 (PSK) | plain TCP | floor | TLS / floor | plain / floor | TLS / TLS floor |"
	echo "|---|---|---|---|---|---|---|"
	echo "| null call p50 (us) | ${null[tls]} | ${null[plain]} | $rtt (TCP round trip) | $(ratio "${null[tls]}" "$rtt") | $(ratio "${null[plain]}" "$rtt") | $(ratio "${null[tls]}" "$tls_rtt") |"
	echo "| empty launch p50 (us), pipelined | ${launch[tls]} | ${launch[plain]} | $rtt (TCP round trip) | $(ratio "${launch[tls]}" "$rtt") | $(ratio "${launch[plain]}" "$rtt") | $(ratio "${launch[tls]}" "$tls_rtt") |"
	echo "| empty launch p50 (us), XGPU_PIPELINE=0 | ${launch[tls.sync]} | ${launch[plain.sync]} | $rtt (TCP round trip) | $(ratio "${launch[tls.sync]}" "$rtt") | $(ratio "${launch[plain.sync]}" "$rtt") | $(ratio "${launch[tls.sync]}" "$tls_rtt") |"
	echo "| empty launch, batch mean (us), pipelined | ${launch_batch[tls]} | ${launch_batch[plain]} | | | | |"
	echo "| empty launch, batch mean (us), XGPU_PIPELINE=0 | ${launch_batch[tls.sync]} | ${launch_batch[plain.sync]} | | | | |"
	echo "| 64 MiB host to device (GB/s) | ${h2d[tls]} | ${h2d[plain]} | $stream (TCP stream) | $(share "${h2d[tls]}" "$stream") | $(share "${h2d[plain]}" "$stream") | $(share "${h2d[tls]}" "$tls_stream") |"
	echo "| 64 MiB device to host (GB/s) | ${d2h[tls]} | ${d2h[plain]} | $stream (TCP stream) | $(share "${d2h[tls]}" "$stream") | $(share "${d2h[plain]}" "$stream") | $(share "${d2h[tls]}" "$tls_stream") |"
	echo
	echo "Where the CPUs go: the whole machine's busy CPU time (/proc/stat) per GB moved, over a GiB"
	echo "each way (\`xgpu-bench cpu 64 16\`: 16 copies of 64 MiB back to back; \`tcprtt stream\` of"
	echo "1024 MiB for the floors). Both ends run on these $ncpu CPUs, so no pipelining lets a path"
	echo "move more than $ncpu / (CPU s per GB) GB/s here; the last column sets that ceiling against"
	echo "the stream floor of its kind (plain or TLS), measured here the same way. A ceiling under"
	echo "90 % puts the target out of this machine's reach for the path as it is; the simulated GPU's"
	echo "own copy into device memory, which a GPU's DMA engine would make, is part of its cost. A"
	echo "floor's own row says how near the plain stream itself comes to using every CPU."
	echo
	echo "| path | GB/s over the GiB | CPU s per GB | most on $ncpu CPUs (GB/s) | that / the stream floor |"
	echo "|---|---|---|---|---|"
	for k in plain tls; do
		kind=$([ $k = tls ] && echo "TLS" || echo "plain TCP")
		cpu_row "$kind stream (floor)" "${cpu_stream_gbps[$k]}" "${cpu_stream_cost[$k]}" "${cpu_stream_gbps[$k]}"
		cpu_row "$kind, host to device" "$(cpu_field $k cpu_64MiB_h2d_gbps)" "$(cpu_field $k cpu_64MiB_h2d_cpu_s_per_gb)" "${cpu_stream_gbps[$k]}"
		cpu_row "$kind, device to host" "$(cpu_field $k cpu_64MiB_d2h_gbps)" "$(cpu_field $k cpu_64MiB_d2h_cpu_s_per_gb)" "${cpu_stream_gbps[$k]}"
	done
	echo
	echo "Plain TCP's bulk sends with MSG_ZEROCOPY (XGPU_REMOTE_ZEROCOPY=1 and xgpud --remote-zerocopy)"
	echo "against plain \`sendmsg\`, in the same run (TLS cannot: it encrypts into buffers of its own)."
	echo "What the kernel did with the zerocopy sends, from their completions: host to device"
	echo "(the frontend sends) $zc_fe; device to host (xgpud sends) $zc_be."
	echo "A completion flagged as copied (SO_EE_CODE_ZEROCOPY_COPIED) means the kernel copied the"
	echo "pages after all: over loopback or a veth pair the packet goes to a socket on this machine,"
	echo "which must own its data, so the copy is only deferred, and pinning pages and reaping the"
	echo "completions come on top. A NIC with scatter-gather DMA is where the copy can vanish; this"
	echo "machine has none to measure. Two CPUs shared by both ends, the executor and other jobs make"
	echo "these figures noisy: compare the ratio, taken in one run, not the figures across runs."
	echo
	echo "| | plain send | MSG_ZEROCOPY | zerocopy / plain |"
	echo "|---|---|---|---|"
	echo "| 64 MiB host to device (GB/s) | ${h2d[plain]} | ${h2d[zc]} | $(ratio "${h2d[zc]}" "${h2d[plain]}") |"
	echo "| 64 MiB device to host (GB/s) | ${d2h[plain]} | ${d2h[zc]} | $(ratio "${d2h[zc]}" "${d2h[plain]}") |"
	echo
	echo "Since 507cdcb a plain host-to-device copy is sent from the caller's buffer, where a zerocopy"
	echo "channel still copies into its ring first (its pages must stay unchanged until the kernel is"
	echo "done with them), so that row compares more than the send."
} >"$work/generated.md"
write_keeping_notes "$out" "$work/generated.md"
cat "$work/generated.md"
