#!/usr/bin/env bash
# include_cycles.sh - backend/'s modules include each other in no circle
# (tools/check-includes.sh on the tree), and the check does fail on a copy
# of backend/ where a transport and the daemon's main include each other.
set -euo pipefail

src=${XGPU_SRC:?}
tmp=${XGPU_TMP:?}
check=$src/tools/check-includes.sh

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

"$check" "$src" || fail "backend/ has an include circle (see above)"

# The circle this layout removed: the model header including a transport
# that includes the model.
cp -r "$src/backend" "$tmp/backend"
sed -i '0,/^#include "exec\/driver.h"$/s//#include "exec\/driver.h"\n#include "transport\/xenbus.h"/' \
	"$tmp/backend/core.h"
grep -q 'transport/xenbus.h' "$tmp/backend/core.h" || fail "could not plant the circle in core.h"
if "$check" "$tmp" 2>"$tmp/planted.err"; then
	fail "check-includes.sh accepted core.h -> xenbus.h -> core.h"
fi
grep -q 'backend/transport/xenbus' "$tmp/planted.err" || fail "the report does not name xenbus: $(cat "$tmp/planted.err")"
echo "ok: no circle in backend/, and a planted one is caught"
