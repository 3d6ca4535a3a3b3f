#!/usr/bin/env bash
# check-includes.sh - fails if backend/'s modules include each other in a
# circle. A module is a .c file and its .h (backend/domain.c + domain.h), so
# "domain.c includes poller.h, poller.c includes domain.h" counts as a circle
# even though no header includes itself. tsort finds the loops.
#
#   tools/check-includes.sh [REPO_ROOT]
set -u
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$root" || exit 2

# Resolves an #include "NAME" of FILE the way the compiler does for backend/
# (the file's folder first, then -Ibackend); prints the module or nothing.
resolve() {
	local file=$1 name=$2 dir
	dir=$(dirname "$file")
	for cand in "$dir/$name" "backend/$name"; do
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
if ! loops=$(tsort <<<"$edges" 2>&1 >/dev/null) || [ -n "$loops" ]; then
	echo "check-includes: backend/ modules include each other in a circle:" >&2
	echo "$loops" | grep -v 'input contains a loop' | sed 's/^tsort: /  /' >&2
	exit 1
fi
echo "check-includes: $(wc -l <<<"$edges") module includes under backend/, no circle"
