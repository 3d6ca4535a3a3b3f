#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Remote GPUs with X.509 certificates (issue 30): xgpud --remote-cert/-key/-ca
# beside --remote-psk, and guests with XGPU_REMOTE_CERT/_CERT_KEY/_CA, between
# two network namespaces joined by a veth pair (as tests/e2e/remote.sh). A CA,
# a second CA nobody trusts, and the certificates are made here with the
# openssl CLI. Checked:
#   - a good pair works, and the guest lands in remote-CN (its certificate's
#     common name), a PSK guest beside it in its key's domain;
#   - two tenants' certificates get two domains, and one cannot name the
#     other's;
#   - the GPU host's certificate is refused when the guest's CA did not sign
#     it, when it does not name the address the guest dialled, or when a
#     revocation list in the guest's CA file names it (a list that is not one
#     stops the guest with its reason); a guest's certificate named by a list in
#     xgpud's CA file is refused as revoked, another one admitted; SIGHUP
#     reads the CA file again (without the list the guest is admitted, with
#     it refused, while a connection it opened before goes on; a broken list
#     is refused and the credentials before it stay);
#   - a guest certificate from another CA, an expired one, and a TLS client
#     with no certificate at all are refused, each with its reason in xgpud's
#     log;
#   - a private key others may read stops xgpud at its start;
#   - a Xen guest (over xgpu-xenstub) whose gpu line names remote-cert=,
#     remote-cert-key= and remote-ca= reaches the GPU host with the PEM texts
#     xl-gpu wrote in its backend directory, and lands in its CN's domain.
. "$(dirname "$0")/lib.bash"

command -v openssl >/dev/null || { echo "SKIP: no openssl CLI (Debian package openssl)"; exit 0; }
netns_pair xgc
PORT=7447
# A second address of the GPU host, which its certificate does not name.
ALT_IP=10.$((100 + $$ % 100)).$(($$ / 100 % 250 + 1)).9
ip -n "$NSH" addr add "$ALT_IP/32" dev lo
ip -n "$NSG" route add "$ALT_IP/32" via "$GPU_IP"

# ---- certificates ----
C=$T/pki
mkdir -p "$C"
chmod 700 "$C"
# mkca NAME: a self-signed CA.
mkca() {
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$C/$1.key" \
		-out "$C/$1.pem" -days 2 -subj "/CN=xgpu test $1" -addext "basicConstraints=critical,CA:TRUE" \
		-addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null || fail "openssl: cannot make CA $1"
}
# mkcert NAME CN CA DAYS EXTENSIONS: a key and a certificate CA signed.
mkcert() {
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$C/$1.key" -out "$C/$1.csr" \
		-subj "/CN=$2" 2>/dev/null || fail "openssl: cannot make a key for $1"
	chmod 600 "$C/$1.key"
	printf '%b\n' "$5" >"$C/$1.ext"
	openssl x509 -req -in "$C/$1.csr" -CA "$C/$3.pem" -CAkey "$C/$3.key" -CAcreateserial -days "$4" \
		-out "$C/$1.pem" -extfile "$C/$1.ext" 2>/dev/null || fail "openssl: cannot sign $1"
}
# mkcrl CA REVOKED...: $C/CA.crl, CA's revocation list naming the
# certificates REVOKED.
mkcrl() {
	local ca=$1 d=$C/$1.db
	shift
	mkdir -p "$d"
	: >"$d/index.txt"
	echo 01 >"$d/crlnumber"
	printf '[ca]\ndefault_ca = d\n[d]\ndatabase = %s\ncrlnumber = %s\ndefault_md = sha256\ndefault_crl_days = 2\n' \
		"$d/index.txt" "$d/crlnumber" >"$d/cnf"
	for c in "$@"; do
		openssl ca -config "$d/cnf" -keyfile "$C/$ca.key" -cert "$C/$ca.pem" -revoke "$C/$c.pem" 2>/dev/null ||
			fail "openssl: cannot revoke $c"
	done
	openssl ca -config "$d/cnf" -keyfile "$C/$ca.key" -cert "$C/$ca.pem" -gencrl -out "$C/$ca.crl" 2>/dev/null ||
		fail "openssl: cannot make $ca's revocation list"
}
mkca ca
mkca rogue
SERVER_EXT="subjectAltName=IP:$GPU_IP\nextendedKeyUsage=serverAuth\nkeyUsage=critical,digitalSignature"
CLIENT_EXT="extendedKeyUsage=clientAuth\nkeyUsage=critical,digitalSignature"
mkcert host gpuhost ca 1 "$SERVER_EXT"
mkcert lab lab ca 1 "$CLIENT_EXT"
mkcert far far ca 1 "$CLIENT_EXT"
mkcert stranger lab rogue 1 "$CLIENT_EXT" # the right name, the wrong CA
mkcert old lab ca -1 "$CLIENT_EXT"        # expired yesterday
PSK=$T/psk1.psk
(umask 077 && echo "psk1:$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')" >"$PSK")

note "a private key others may read stops xgpud"
cp "$C/host.key" "$T/open.key"
chmod 644 "$T/open.key"
out=$(ip netns exec "$NSH" "$B/bin/xgpud" --foreground --executor sim --socket "$T/x.sock" \
	--remote-listen ":$PORT" --remote-cert "$C/host.pem" --remote-cert-key "$T/open.key" \
	--remote-ca "$C/ca.pem" 2>&1) && fail "xgpud started with a key others may read"
grep -q "is open to other users" <<<"$out" || { echo "$out"; fail "no reason given for the open key"; }
out=$("$B/bin/xgpud" --foreground --remote-listen ":$PORT" --remote-cert "$C/host.pem" 2>&1) &&
	fail "xgpud started with --remote-cert alone"
grep -q "go together" <<<"$out" || { echo "$out"; fail "no reason given for --remote-cert alone"; }

# Every address of the GPU host's namespace (GPU_IP and ALT_IP).
ip netns exec "$NSH" "$B/bin/xgpud" --foreground --executor sim --socket "$XGPU_SOCKET" --log-level info \
	--remote-listen ":$PORT" --remote-psk "$PSK" --remote-cert "$C/host.pem" --remote-cert-key "$C/host.key" \
	--remote-ca "$C/ca.pem" >>"$XGPUD_LOG" 2>&1 &
XGPUD_PID=$!
for _ in $(seq 100); do
	"$B/bin/xl-gpu" list >/dev/null 2>&1 && grep -q "remote transport: listening" "$XGPUD_LOG" && break
	kill -0 "$XGPUD_PID" 2>/dev/null || break
	sleep 0.1
done
grep -q "remote transport: listening on :$PORT (TLS 1.3, pre-shared keys of 1 tenant and certificates" \
	"$XGPUD_LOG" || fail "xgpud did not come up with keys and certificates"

# guest CERTNAME [VAR=value...] PROGRAM...: a program in the guest's namespace
# presenting certificate CERTNAME, trusting CA $GCA (default ca), dialling
# $DIAL (default GPU_IP).
guest() {
	local name=$1
	shift
	ip netns exec "$NSG" env XGPU_SOCKET="$T/none.sock" XGPU_REMOTE="${DIAL:-$GPU_IP}:$PORT" \
		XGPU_REMOTE_CERT="$C/$name.pem" XGPU_REMOTE_CERT_KEY="$C/$name.key" XGPU_REMOTE_CA="$C/${GCA:-ca}.pem" \
		LD_LIBRARY_PATH="$B/lib" ${CUDA_PRELOAD:+LD_PRELOAD=$CUDA_PRELOAD} "$@"
}
refused() { # refused WHAT OUTPUT PATTERN
	grep -q "the TLS handshake with remote xgpud at .*:$PORT failed: $3" <<<"$2" ||
		{ echo "$2"; fail "$1: the refusal does not say why"; }
}

note "a good pair: the guest lands in remote-CN"
out=$(guest lab "$B/bin/vectorAdd" -n 200000 -i 3 2>&1) || { echo "$out"; fail "vectorAdd failed with a good certificate"; }
grep -q "^RESULT .*verified=yes" <<<"$out" || { echo "$out"; fail "vectorAdd did not verify"; }
grep -q "remote: $NET.2:[0-9]* joined domain remote-lab (channel [0-9]*, TLS1.3-X509)" "$XGPUD_LOG" ||
	fail "the GPU host did not log the guest joining remote-lab with its certificate"

note "a second tenant's certificate: a domain of its own"
out=$(guest far "$B/bin/vectorAdd" -n 1000 2>&1) || { echo "$out"; fail "vectorAdd failed with far's certificate"; }
grep -q "joined domain remote-far (channel [0-9]*, TLS1.3-X509)" "$XGPUD_LOG" || fail "far did not land in remote-far"
[ "$(dom_stat remote-far calls)" -gt 0 ] || fail "no calls recorded in remote-far"
[ "$(dom_stat remote-lab calls)" -gt "$(dom_stat remote-far calls)" ] || fail "remote-lab and remote-far share counts"
out=$(guest far env XGPU_DOMAIN=lab "$B/bin/vectorAdd" -n 1000 2>&1) && fail "far's certificate joined remote-lab"
grep -q "domain lab refused: this certificate belongs to domain remote-far" <<<"$out" ||
	{ echo "$out"; fail "no reason given for a domain the certificate does not name"; }

note "a PSK guest beside them"
out=$(ip netns exec "$NSG" env XGPU_SOCKET="$T/none.sock" XGPU_REMOTE="$GPU_IP:$PORT" XGPU_REMOTE_PSK_FILE="$PSK" \
	LD_LIBRARY_PATH="$B/lib" ${CUDA_PRELOAD:+LD_PRELOAD=$CUDA_PRELOAD} "$B/bin/vectorAdd" -n 1000 2>&1) ||
	{ echo "$out"; fail "a PSK guest failed beside certificates"; }
grep -q "joined domain remote-psk1 (channel [0-9]*, TLS1.3-PSK)" "$XGPUD_LOG" || fail "the PSK guest did not land in remote-psk1"
NOBODY=$T/nobody.psk
(umask 077 && echo "nobody:$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')" >"$NOBODY")
out=$(ip netns exec "$NSG" env XGPU_SOCKET="$T/none.sock" XGPU_REMOTE="$GPU_IP:$PORT" XGPU_REMOTE_PSK_FILE="$NOBODY" \
	LD_LIBRARY_PATH="$B/lib" ${CUDA_PRELOAD:+LD_PRELOAD=$CUDA_PRELOAD} "$B/bin/vectorAdd" -n 1000 2>&1) &&
	fail "a PSK identity the host does not hold was served"
wait_for 5 grep -q "not admitted: TLS: the client's pre-shared key identity is not one of --remote-psk" \
	"$XGPUD_LOG" || fail "the GPU host did not log why it refused an unknown PSK identity"

note "the GPU host's certificate, not signed by the guest's CA"
out=$(GCA=rogue guest lab "$B/bin/vectorAdd" -n 1000 2>&1) && fail "the guest accepted a GPU host its CA did not sign"
refused "wrong CA" "$out" "TLS: the GPU host's certificate was refused: .*issuer is unknown"

note "the GPU host dialled by an address its certificate does not name"
out=$(DIAL=$ALT_IP guest lab "$B/bin/vectorAdd" -n 1000 2>&1) && fail "the guest accepted a certificate for another host"
refused "wrong host" "$out" "TLS: the GPU host's certificate was refused: .*name in the certificate does not match"

note "the GPU host's certificate revoked by a list in the guest's CA file"
mkcrl ca host
cat "$C/ca.pem" "$C/ca.crl" >"$C/ca-crl.pem"
out=$(GCA=ca-crl guest lab "$B/bin/vectorAdd" -n 1000 2>&1) && fail "the guest accepted a revoked GPU host certificate"
refused "revoked" "$out" "TLS: the GPU host's certificate was refused: .*revoked"
{ cat "$C/ca.pem"; printf -- '-----BEGIN X509 CRL-----\nbm90IGEgbGlzdA==\n-----END X509 CRL-----\n'; } >"$C/ca-badcrl.pem"
out=$(GCA=ca-badcrl guest lab "$B/bin/vectorAdd" -n 1000 2>&1) && fail "the guest ran with a CA file whose list is not one"
grep -q "the CA's revocation list" <<<"$out" || { echo "$out"; fail "a broken revocation list: no reason given"; }

note "a guest certificate from another CA"
out=$(guest stranger "$B/bin/vectorAdd" -n 1000 2>&1) && fail "a certificate of another CA was admitted"
grep -q "remote xgpud at $GPU_IP:$PORT refused this host.s certificate: the other end sent TLS alert" <<<"$out" ||
	{ echo "$out"; fail "stranger: the refusal does not say why"; }
# (A GnuTLS client keeps back a certificate no CA the server named signed.)
wait_for 5 grep -q "remote: $NET.2:[0-9]* not admitted: TLS: the client presented no certificate (none, or none signed by the CA of --remote-ca)" \
	"$XGPUD_LOG" || fail "the GPU host did not log why it refused another CA's certificate"

note "an expired guest certificate"
out=$(guest old "$B/bin/vectorAdd" -n 1000 2>&1) && fail "an expired certificate was admitted"
grep -q "remote xgpud at $GPU_IP:$PORT refused this host.s certificate: the other end sent TLS alert" <<<"$out" ||
	{ echo "$out"; fail "expired: the refusal does not say why"; }
wait_for 5 grep -q "not admitted: TLS: the client's certificate was refused: .*expired" "$XGPUD_LOG" ||
	fail "the GPU host did not log why it refused an expired certificate"

note "a TLS client with no certificate"
n=$(grep -c "not admitted: TLS: the client presented no certificate" "$XGPUD_LOG")
ip netns exec "$NSG" timeout 10 openssl s_client -connect "$GPU_IP:$PORT" -tls1_3 -CAfile "$C/ca.pem" \
	</dev/null >"$T/s_client.out" 2>&1 || true
more_no_cert() { [ "$(grep -c "not admitted: TLS: the client presented no certificate" "$XGPUD_LOG")" -gt "$n" ]; }
wait_for 5 more_no_cert ||
	{ cat "$T/s_client.out"; fail "the GPU host did not log a client without a certificate"; }
out=$(ip netns exec "$NSG" env XGPU_SOCKET="$T/none.sock" XGPU_REMOTE="$GPU_IP:$PORT" XGPU_REMOTE_CA="$C/ca.pem" \
	LD_LIBRARY_PATH="$B/lib" ${CUDA_PRELOAD:+LD_PRELOAD=$CUDA_PRELOAD} "$B/bin/vectorAdd" -n 1000 2>&1) &&
	fail "the frontend ran with a CA but no certificate"
grep -q "XGPU_REMOTE_CERT, XGPU_REMOTE_CERT_KEY and XGPU_REMOTE_CA go together" <<<"$out" ||
	{ echo "$out"; fail "no reason given for a CA without a certificate"; }

note "a guest certificate revoked by a list in xgpud's CA file (a second xgpud), read at its start and on SIGHUP"
mkcrl ca far
cat "$C/ca.pem" "$C/ca.crl" >"$C/ca-nofar.pem"
cp "$C/ca-nofar.pem" "$C/ca-live.pem"
# swap_ca FILE: the live CA file replaced as an operator would (whole).
swap_ca() { cp "$1" "$C/ca-live.tmp" && mv "$C/ca-live.tmp" "$C/ca-live.pem"; }
ip netns exec "$NSH" "$B/bin/xgpud" --foreground --executor sim --socket "$T/x2.sock" --log-level info \
	--remote-listen ":$((PORT + 1))" --remote-cert "$C/host.pem" --remote-cert-key "$C/host.key" \
	--remote-ca "$C/ca-live.pem" >"$T/x2.log" 2>&1 &
X2=$!
GL=''
x2_fail() {
	[ -z "$GL" ] || kill "$GL" 2>/dev/null || true
	kill -TERM "$X2" 2>/dev/null || true
	wait "$X2" 2>/dev/null || true
	fail "$@"
}
# at_least N PATTERN: the second xgpud's log has N lines matching PATTERN.
at_least() { test "$(grep -c "$2" "$T/x2.log")" -ge "$1"; }
# reloads N: the Nth reload line of either kind is there.
reloads() { at_least "$1" "signal 1: remote credentials"; }
wait_for 10 grep -q "remote transport: listening" "$T/x2.log" || { cat "$T/x2.log"; x2_fail "the second xgpud did not start"; }
out=$(PORT=$((PORT + 1)) guest far "$B/bin/vectorAdd" -n 1000 2>&1) && x2_fail "a revoked guest certificate was admitted"
wait_for 5 grep -q "not admitted: TLS: the client's certificate was refused: .*revoked" "$T/x2.log" ||
	{ cat "$T/x2.log"; x2_fail "the GPU host did not log the guest's certificate as revoked"; }
out=$(PORT=$((PORT + 1)) guest lab "$B/bin/vectorAdd" -n 1000 2>&1) ||
	{ echo "$out"; x2_fail "a certificate the list does not name was refused"; }

# SIGHUP reads the files again: without the list far is admitted, and a
# connection it opens then keeps working after the list comes back.
swap_ca "$C/ca.pem"
kill -HUP "$X2"
wait_for 10 reloads 1 || { cat "$T/x2.log"; x2_fail "no log line for SIGHUP"; }
grep -q "signal 1: remote credentials reloaded (certificate, key and CA file $C/ca-live.pem)" "$T/x2.log" ||
	{ cat "$T/x2.log"; x2_fail "the credentials were not reloaded"; }
out=$(PORT=$((PORT + 1)) guest far "$B/bin/vectorAdd" -n 1000 2>&1) ||
	{ echo "$out"; x2_fail "far was refused after SIGHUP read a CA file without the list"; }
PORT=$((PORT + 1)) guest far "$B/tests/cuda/guestload" calls 8 >"$T/far-open.out" 2>&1 &
GL=$!
wait_for 10 at_least 2 "joined domain remote-far" ||
	{ cat "$T/x2.log"; x2_fail "the long-running far guest did not join"; }
swap_ca "$C/ca-nofar.pem"
kill -HUP "$X2"
wait_for 10 reloads 2 || { cat "$T/x2.log"; x2_fail "no log line for the second SIGHUP"; }
n=$(grep -c "the client's certificate was refused: .*revoked" "$T/x2.log")
out=$(PORT=$((PORT + 1)) guest far "$B/bin/vectorAdd" -n 1000 2>&1) && x2_fail "the list SIGHUP read back did not refuse far"
wait_for 5 at_least $((n + 1)) "the client's certificate was refused: .*revoked" ||
	{ cat "$T/x2.log"; x2_fail "the GPU host did not log far as revoked after SIGHUP"; }
out=$(PORT=$((PORT + 1)) guest lab "$B/bin/vectorAdd" -n 1000 2>&1) ||
	{ echo "$out"; x2_fail "lab was refused after SIGHUP"; }

# A list that cannot be read is refused, and the credentials before it stay.
{ cat "$C/ca.pem"; printf -- '-----BEGIN X509 CRL-----\nbm90IGEgbGlzdA==\n-----END X509 CRL-----\n'; } >"$C/ca-bad.tmp"
swap_ca "$C/ca-bad.tmp"
kill -HUP "$X2"
wait_for 10 reloads 3 || { cat "$T/x2.log"; x2_fail "no log line for the third SIGHUP"; }
grep -q "signal 1: remote credentials not reloaded, the old ones stay: --remote-cert: the CA's revocation list" "$T/x2.log" ||
	{ cat "$T/x2.log"; x2_fail "a CA file with a broken list was not refused with its reason"; }
out=$(PORT=$((PORT + 1)) guest far "$B/bin/vectorAdd" -n 1000 2>&1) && x2_fail "far was admitted after a refused reload"
out=$(PORT=$((PORT + 1)) guest lab "$B/bin/vectorAdd" -n 1000 2>&1) ||
	{ echo "$out"; x2_fail "lab was refused after a refused reload"; }
wait "$GL" || true
GL=''
grep -q "RESULT workload=guestload mode=calls calls=[1-9][0-9]* error=cudaSuccess" "$T/far-open.out" ||
	{ cat "$T/far-open.out"; x2_fail "far's connection opened before its revocation did not run to its end"; }
kill -TERM "$X2" && wait "$X2" || true
check_clean "$T/x2.log" "the second xgpud"

note "xgpud still serves"
out=$(guest lab "$B/bin/vectorAdd" -n 1000 2>&1) || { echo "$out"; fail "vectorAdd failed after the refusals"; }
wait_for 10 dom_eq remote-lab channels 0 || fail "remote channels still open after the programs ended"

note "a Xen guest whose gpu line names certificates (xgpu-xenstub as its Xen)"
STUB_SOCK=$T/xen.sock
start_xenstub "$STUB_SOCK" 1:far 2:other
printf 'gpu = [ "remote=%s:%s, remote-cert=%s, remote-cert-key=%s, remote-ca=%s" ]\n' "$GPU_IP" "$PORT" \
	"$C/far.pem" "$C/far.key" "$C/ca.pem" >"$T/far.cfg"
XGPU_XEN_STUB=$STUB_SOCK "$B/bin/xl-gpu" attach 1 "$T/far.cfg" || fail "xl-gpu attach with remote-cert= failed"
# A file that is not what its key says fails the attach, not the guest.
printf 'gpu = [ "remote=%s:%s, remote-cert=%s, remote-cert-key=%s, remote-ca=%s" ]\n' "$GPU_IP" "$PORT" \
	"$C/lab.pem" "$C/far.key" "$PSK" >"$T/mixed.cfg"
out=$(XGPU_XEN_STUB=$STUB_SOCK "$B/bin/xl-gpu" attach 2 "$T/mixed.cfg" 2>&1) && fail "a key file was attached as a CA"
grep -q "remote-ca=$PSK holds no PEM certificate" <<<"$out" || { echo "$out"; fail "no reason given for a CA that is not one"; }
# The private key is the guest's and dom0's alone.
XGPU_XEN_STUB=$STUB_SOCK XGPU_XEN_DOMID=1 "$B/tests/tools/xenliar" ls /local/domain/0/backend/vgpu/1/0 |
	grep -x remote-cert-key >/dev/null || fail "domain 1 cannot see its certificate's key"
XGPU_XEN_STUB=$STUB_SOCK XGPU_XEN_DOMID=2 "$B/tests/tools/xenliar" ls /local/domain/0/backend/vgpu/1/0 >/dev/null 2>&1 &&
	fail "another domain can read domain 1's certificate key"
before=$(grep -c "joined domain remote-far (channel [0-9]*, TLS1.3-X509)" "$XGPUD_LOG")
# (Leak checks off for the Xen guest's programs: gcc 12's LeakSanitizer
# crashes in its tracer ("Tracer caught signal 11") at these programs' exit,
# walking the dynamic TLS of the GnuTLS they dlopen, here where xenstore
# stays open beside it; the programs above run the same code with it on.)
XEN_ASAN=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0
out=$(ip netns exec "$NSG" env ASAN_OPTIONS="$XEN_ASAN" XGPU_SOCKET="$T/none.sock" XGPU_XEN_STUB="$STUB_SOCK" XGPU_XEN_DOMID=1 \
	LD_LIBRARY_PATH="$B/lib" ${CUDA_PRELOAD:+LD_PRELOAD=$CUDA_PRELOAD} \
	"$B/bin/vectorAdd" -n 200000 -i 2 2>&1) || { echo "$out"; fail "the Xen guest's vectorAdd failed remotely"; }
grep -q "^RESULT .*verified=yes" <<<"$out" || { echo "$out"; fail "the Xen guest's vectorAdd did not verify"; }
[ "$(grep -c "joined domain remote-far (channel [0-9]*, TLS1.3-X509)" "$XGPUD_LOG")" -gt "$before" ] ||
	fail "the Xen guest did not join remote-far with its certificate"
# xl-gpu list on the guest's host (no xgpud there) says what became of the
# guest's remote channel, from what its frontend wrote in xenstore.
# (It exits 1 all the same: no xgpud answered.)
xen_list() { XGPU_XEN_STUB=$STUB_SOCK XGPU_SOCKET=$T/none.sock "$B/bin/xl-gpu" list 2>/dev/null || true; }
xen_list | grep -qE "^ +1  $GPU_IP:$PORT +ended $GPU_IP:$PORT: pid [0-9]+ exited$" ||
	{ xen_list; fail "xl-gpu list does not show the Xen guest's channel ended with its program"; }
# Domain 2 trusts another CA: its channel failed, and says why.
printf 'gpu = [ "remote=%s:%s, remote-cert=%s, remote-cert-key=%s, remote-ca=%s" ]\n' "$GPU_IP" "$PORT" \
	"$C/lab.pem" "$C/lab.key" "$C/rogue.pem" >"$T/rogue.cfg"
XGPU_XEN_STUB=$STUB_SOCK "$B/bin/xl-gpu" attach 2 "$T/rogue.cfg" >/dev/null || fail "xl-gpu attach of domain 2 failed"
xen_list | grep -qE "^ +2  $GPU_IP:$PORT +no channel yet$" || { xen_list; fail "xl-gpu list does not show domain 2 unused"; }
ip netns exec "$NSG" env ASAN_OPTIONS="$XEN_ASAN" XGPU_SOCKET="$T/none.sock" XGPU_XEN_STUB="$STUB_SOCK" XGPU_XEN_DOMID=2 \
	LD_LIBRARY_PATH="$B/lib" ${CUDA_PRELOAD:+LD_PRELOAD=$CUDA_PRELOAD} "$B/bin/vectorAdd" -n 1000 >/dev/null 2>&1 &&
	fail "domain 2 ran against a GPU host its CA did not sign"
xen_list | grep -qE "^ +2  $GPU_IP:$PORT +failed $GPU_IP:$PORT: the TLS handshake .* issuer is unknown.* \(pid [0-9]+\)$" ||
	{ xen_list; fail "xl-gpu list does not say why domain 2's channel failed"; }
# The GPU host goes away under a running program: "lost", with why.
ip netns exec "$NSG" env ASAN_OPTIONS="$XEN_ASAN" XGPU_SOCKET="$T/none.sock" XGPU_XEN_STUB="$STUB_SOCK" XGPU_XEN_DOMID=1 \
	LD_LIBRARY_PATH="$B/lib" ${CUDA_PRELOAD:+LD_PRELOAD=$CUDA_PRELOAD} "$B/tests/cuda/guestload" idle 30 >"$T/idle.out" 2>&1 &
client=$!
wait_for 20 sh -c "XGPU_XEN_STUB=$STUB_SOCK XGPU_SOCKET=$T/none.sock $B/bin/xl-gpu list 2>/dev/null | grep -q ' connected $GPU_IP:$PORT (TLS1.3-X509'" ||
	{ xen_list; fail "xl-gpu list does not show the running guest connected"; }
kill -9 "$XGPUD_PID"
wait "$XGPUD_PID" 2>/dev/null || true
XGPUD_PID=
check_clean "$XGPUD_LOG" xgpud
# The guest's reader thread notices at once (the program sleeps on).
wait_for 15 sh -c "XGPU_XEN_STUB=$STUB_SOCK XGPU_SOCKET=$T/none.sock $B/bin/xl-gpu list 2>/dev/null | grep -qE '^ +1  $GPU_IP:$PORT +lost $GPU_IP:$PORT: .+ \(pid [0-9]+\)$'" ||
	{ xen_list; cat "$T/idle.out"; fail "xl-gpu list does not show the channel lost"; }
kill -9 "$client" 2>/dev/null || true
wait "$client" 2>/dev/null || true
note "xl-gpu list on the guest's host: $(xen_list | grep -E '^ +1 ' | sed 's/  */ /g')"
stop_xenstub 0

