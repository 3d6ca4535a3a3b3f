#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# include_cycles.sh - backend/'s modules include each other in no circle,
# the transports include no core module but core.h, and the frontend's
# channel client includes neither frontend (tools/check-includes.sh on the
# tree), and the check does fail on copies of backend/ where a transport and
# the model include each other, or a transport includes a core module
# (domain.h) or the policy registry (policy.h) directly, and on copies of
# frontend/ where the channel includes a frontend's header or the runtime
# the driver frontend's internals; and xgpud and the executor, two programs,
# include nothing of each other.
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
sed -i '0,/^#include "driver.h"$/s//#include "driver.h"\n#include "transport\/xenbus.h"/' \
	"$tmp/backend/xgpud/core.h"
grep -q 'transport/xenbus.h' "$tmp/backend/xgpud/core.h" || fail "could not plant the circle in core.h"
if "$check" "$tmp" 2>"$tmp/planted.err"; then
	fail "check-includes.sh accepted core.h -> xenbus.h -> core.h"
fi
grep -q 'backend/transport/xenbus' "$tmp/planted.err" || fail "the report does not name xenbus: $(cat "$tmp/planted.err")"

# A transport reaching past its up-call table, once into a core module and
# once into the policy registry: no circle, so only the layering rule
# catches them.
cp -r "$src/common" "$src/policies" "$tmp/"
for planted in domain.h policy.h; do
	rm -rf "$tmp/backend"
	cp -r "$src/backend" "$tmp/backend"
	sed -i "0,/^#include \"transport_local.h\"\$/s//#include \"transport_local.h\"\n#include \"$planted\"/" \
		"$tmp/backend/transport/transport_local.c"
	grep -q "^#include \"$planted\"" "$tmp/backend/transport/transport_local.c" ||
		fail "could not plant $planted in transport_local.c"
	if "$check" "$tmp" 2>"$tmp/layer.err"; then
		fail "check-includes.sh accepted transport_local.c including $planted"
	fi
	grep -q "backend/transport/transport_local.c includes .*$planted" "$tmp/layer.err" ||
		fail "the report does not name transport_local.c and $planted: $(cat "$tmp/layer.err")"
done

# The frontend's layering: the channel client including a frontend's header,
# and the runtime including the driver frontend's internals.
rm -rf "$tmp/backend"
cp -r "$src/backend" "$tmp/backend"
for planted in "frontend/channel/client.c:../driver/driver.h" "frontend/channel/managed.c:../runtime/runtime.h" \
	"frontend/runtime/api_stream.c:procs.h"; do
	file=${planted%%:*} name=${planted#*:}
	rm -rf "$tmp/frontend"
	cp -r "$src/frontend" "$tmp/frontend"
	sed -i "0,/^#include /s%^#include %#include \"$name\"\n&%" "$tmp/$file"
	grep -q "^#include \"$name\"" "$tmp/$file" || fail "could not plant $name in $file"
	if "$check" "$tmp" 2>"$tmp/fe.err"; then
		fail "check-includes.sh accepted $file including $name"
	fi
	grep -q "$file includes frontend/" "$tmp/fe.err" ||
		fail "the report does not name $file: $(cat "$tmp/fe.err")"
done
rm -rf "$tmp/frontend"
cp -r "$src/frontend" "$tmp/frontend"

# The executor reaching into the control plane (scheduler.h), and the
# control plane into the executor (dispatch.h): separate programs.
for planted in "backend/executor/poller.c scheduler.h" "backend/xgpud/domain.c dispatch.h"; do
	set -- $planted
	rm -rf "$tmp/backend"
	cp -r "$src/backend" "$tmp/backend"
	sed -i "0,/^#include \"log.h\"\$/s//#include \"log.h\"\n#include \"$2\"/" "$tmp/$1"
	grep -q "^#include \"$2\"" "$tmp/$1" || fail "could not plant $2 in $1"
	if "$check" "$tmp" 2>"$tmp/cross.err"; then
		fail "check-includes.sh accepted $1 including $2"
	fi
	grep -q "$1 includes .*$2" "$tmp/cross.err" || fail "the report does not name $1 and $2: $(cat "$tmp/cross.err")"
done
echo "ok: no circle in backend/, transport/ includes only core.h, xgpud and the executor share only common/," \
	"frontend/channel/ includes neither frontend; a planted circle and planted includes are caught"
