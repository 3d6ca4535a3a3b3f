#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# check-includes.sh - fails if backend/'s modules include each other in a
# circle, if a transport includes more of the daemon than it may, or if the
# frontend's channel client includes either frontend.
#
# A module is a .c file and its .h (backend/xgpud/domain.c + domain.h), so
# "domain.c includes poller.h, poller.c includes domain.h" counts as a circle
# even though no header includes itself. tsort finds the loops.
#
# backend/transport/ reaches the core only through the up-call table in
# transport/host.h: its files may include the model (core.h), each other and
# common/, but no other module of backend/ and nothing of policies/.
#
#   tools/check-includes.sh [REPO_ROOT]
set -u
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$root" || exit 2

# Resolves an #include "NAME" of FILE the way the compiler does for backend/
# (the file's folder first, then -Ibackend, -Ibackend/xgpud, -Ibackend/executor); prints the module or nothing.
resolve() {
	local file=$1 name=$2 dir
	dir=$(dirname "$file")
	for cand in "$dir/$name" "backend/$name" "backend/xgpud/$name" "backend/executor/$name"; do
		if [ -f "$cand" ]; then
			cand=$(realpath --relative-to=. "$cand")
			echo "${cand%.*}"
			return
		fi
	done
}

edges=$(
	for file in $(find backend -name '*.[ch]' | sort); do
		from=${file%.*}
		sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$file" |
			while read -r name; do
				to=$(resolve "$file" "$name")
				[ -n "$to" ] && [ "$to" != "$from" ] && echo "$from $to"
			done
	done | sort -u
)
if [ -z "$edges" ]; then
	echo "check-includes: found no includes under backend/ (wrong root?)" >&2
	exit 2
fi
status=0
if ! loops=$(tsort <<<"$edges" 2>&1 >/dev/null) || [ -n "$loops" ]; then
	echo "check-includes: backend/ modules include each other in a circle:" >&2
	echo "$loops" | grep -v 'input contains a loop' | sed 's/^tsort: /  /' >&2
	status=1
fi

# Where the compiler finds #include "NAME" of FILE: the file's folder, then
# -Icommon -Ibackend -Ibackend/xgpud -Ibackend/executor -Ipolicies in the Makefile's order; prints the path.
locate() {
	local file=$1 name=$2
	for cand in "$(dirname "$file")/$name" "common/$name" "backend/$name" "backend/xgpud/$name" "backend/executor/$name" "policies/$name"; do
		if [ -f "$cand" ]; then
			realpath --relative-to=. "$cand"
			return
		fi
	done
}

forbidden=$(
	for file in $(find backend/transport -name '*.[ch]' | sort); do
		sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$file" |
			while read -r name; do
				to=$(locate "$file" "$name")
				case $to in
				backend/xgpud/core.h | backend/transport/*) ;;
				backend/* | policies/*) echo "  $file includes $to" ;;
				esac
			done
	done
)
if [ -n "$forbidden" ]; then
	echo "check-includes: backend/transport/ may include only core.h and transport/ of the daemon" \
		"(it calls up through struct xgpu_transport_host, transport/host.h):" >&2
	echo "$forbidden" >&2
	status=1
fi

# frontend/channel/ is the client both frontends link (in libcuda.so.1,
# exported to libcudart.so.13): it includes common/ and itself, nothing of
# either frontend. The runtime reaches into frontend/driver/ only for what
# libcuda.so.1 exports beside the client (the headers listed here). Where the
# compiler finds #include "NAME" of a frontend file: its folder, common/, then
# the -I folders the Makefile gives that part (channel/, driver/, runtime/).
DRIVER_EXPORTS="allocs.h copy2d.h mempool.h"
flocate() {
	local file=$1 name=$2 cand
	for cand in "$(dirname "$file")/$name" "common/$name" "frontend/channel/$name" \
		"frontend/driver/$name" "frontend/runtime/$name"; do
		if [ -f "$cand" ]; then
			realpath --relative-to=. "$cand"
			return
		fi
	done
}
frontend_forbidden=$(
	for file in $(find frontend -name '*.[ch]' | sort); do
		sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$file" |
			while read -r name; do
				to=$(flocate "$file" "$name")
				case $file:$to in
				frontend/channel/*:frontend/channel/* | *:common/* | *:) ;;
				frontend/channel/*:*) echo "  $file includes $to" ;;
				frontend/runtime/*:frontend/driver/*)
					[[ " $DRIVER_EXPORTS " == *" $(basename "$to") "* ]] ||
						echo "  $file includes $to" ;;
				esac
			done
	done
)
if [ -n "$frontend_forbidden" ]; then
	echo "check-includes: frontend/channel/ may include only itself and common/, and" \
		"frontend/runtime/ only what libcuda.so.1 exports of frontend/driver/ ($DRIVER_EXPORTS):" >&2
	echo "$frontend_forbidden" >&2
	status=1
fi

# The two programs share only common/ (and the executor policies/taskq.h,
# its domain's tasks): the executor includes nothing of the control plane,
# the control plane nothing of the executor.
crossed=$(
	for file in $(find backend/executor backend/xgpud backend/transport backend/schedsrc -name '*.[ch]' | sort); do
		sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$file" |
			while read -r name; do
				to=$(locate "$file" "$name")
				case $file:$to in
				backend/executor/*:backend/xgpud/* | backend/executor/*:backend/transport/* | \
					backend/executor/*:backend/schedsrc/*) echo "  $file includes $to" ;;
				backend/executor/*:policies/taskq.h) ;;
				backend/executor/*:policies/*) echo "  $file includes $to" ;;
				backend/executor/*) ;;
				*:backend/executor/*) echo "  $file includes $to" ;;
				esac
			done
	done
)
if [ -n "$crossed" ]; then
	echo "check-includes: xgpud (backend/xgpud, transport, schedsrc) and the executor (backend/executor)" \
		"are separate programs and share only common/:" >&2
	echo "$crossed" >&2
	status=1
fi
[ $status -eq 0 ] || exit $status
echo "check-includes: $(wc -l <<<"$edges") module includes under backend/, no circle;" \
	"transport/ includes only core.h of the daemon; xgpud and the executor share only common/;" \
	"frontend/channel/ includes neither frontend"
