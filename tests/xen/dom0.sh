#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# dom0.sh - dom0 payload of tests/e2e/xen_real.sh (run by
# tools/xen-testbed/boot.sh). Each check prints "CHECK ok NAME" or
# "CHECK FAIL NAME: why"; the exit status is the number of failures.
#   always:      our sanitized binaries run in dom0 (libraries and the ASan
#                runtime travelled);
#   stage smoke: a PV domU boots, runs its script (our frontend loads) and
#                its console output reaches dom0.
#   stage xgpu:  (XEN_STAGE=xgpu) see dom0-xgpu.sh; XEN_STAGE=isolation
#                runs only its fault and restart rounds.
. /xtb/lib.sh
fails=0
ok() { echo "CHECK ok $1"; }
bad() {
	echo "CHECK FAIL $1: $2"
	fails=$((fails + 1))
}
# Our build's bin/ (xgpud, xl-gpu) is /xgpu/bin; sanitized, they carry their
# ASan runtime (ldd put it in the image).
export PATH=/xgpu/bin:$PATH

echo "== smoke at $(up)s"
if out=$(xgpud --help 2>&1) && echo "$out" | grep -q -- '--transport'; then
	ok xgpud-help
else
	bad xgpud-help "$(echo "$out" | tail -n 5)"
fi
if out=$(xl-gpu --help 2>&1) && echo "$out" | grep -q 'Usage: xl-gpu'; then
	ok xl-gpu-help
else
	bad xl-gpu-help "$(echo "$out" | tail -n 5)"
fi

# The xgpu stage boots domUs of its own; the smoke domU only costs time there.
if [ "${XEN_STAGE:-smoke}" = smoke ]; then
	cfg=$(xtb_domu_cfg smoke /xtb/domu-smoke.cpio)
	t=$(up)
	if out=$(xl create "$cfg" 2>&1); then
		ok xl-create
		if xtb_domu_wait smoke 60; then
			echo "domU smoke ran from ${t}s to $(up)s"
			xtb_domu_show smoke | grep -v '^\[smoke\] *$'
			if grep -q 'SMOKE-DOMU: hello from domU' "$(xtb_domu_log smoke)" && [ "$(xtb_domu_rc smoke)" = 0 ]; then
				ok domu-console
			else
				bad domu-console "no hello / status $(xtb_domu_rc smoke) in $(xtb_domu_log smoke)"
			fi
		else
			xtb_domu_show smoke | tail -n 20
			bad domu-console "domU smoke still running after 60 s"
			xl destroy smoke
		fi
	else
		bad xl-create "$out"
	fi
fi

if [ "${XEN_STAGE:-smoke}" = xgpu ] || [ "${XEN_STAGE:-smoke}" = isolation ]; then
	. /xtb/dom0-xgpu.sh
fi
echo "== done at $(up)s, $fails failed"
exit "$fails"
