#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# spdx.sh - every source file of the tree carries its SPDX-License-Identifier
# line (tools/spdx.sh --check on the tree; docs/licensing.md), and the check
# does fail, naming each file, on a planted tree of every kind: a missing
# line, a misplaced one, the wrong licence, a kind the table does not know;
# --fix adds exactly the one line in the right place and nothing else, keeps
# the file's mode, leaves what it cannot decide alone, and a second --fix
# changes nothing. In a git work tree, new untracked files count and ignored
# ones do not.
set -euo pipefail

src=${XGPU_SRC:?}
tmp=${XGPU_TMP:?}
spdx=$src/tools/spdx.sh

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

"$spdx" --check "$src" || fail "source files without their SPDX line (above); run tools/spdx.sh --fix"
n=$("$spdx" --list "$src" | wc -l)
nc=$(cd "$src" && git ls-files '*.c' '*.h' '*.cu' | wc -l)
[ "$n" -gt "$nc" ] || fail "only $n source files listed, fewer than the $nc C and CUDA files"

# ---- a planted tree (no git: read with find) --------------------------------
t=$tmp/tree
mkdir -p "$t/xen-sched-patch" "$t/docs/man" "$t/tests/fuzz/corpus/x" "$t/build" "$t/ci"
printf '/* a.c - no line yet. */\nint a;\n' >"$t/a.c"
printf '#!/usr/bin/env bash\n# b.sh - no line yet.\necho b\n' >"$t/b.sh"
chmod 755 "$t/b.sh"
printf '# lib.bash - sourced, no shebang.\nx=1\n' >"$t/lib.bash"
printf 'x(8)\n\n# NAME\n\nx - y\n' >"$t/docs/man/x.8.scd"
printf '#!/bin/sh\necho run\n' >"$t/ci/run"
printf 'diff -ruN a/f b/f\n--- a/f\n+++ b/f\n' >"$t/xen-sched-patch/p.patch"
printf 'CC ?= gcc\n' >"$t/Makefile"
printf '' >"$t/empty.h"
# Fine already.
printf '/* SPDX-License-Identifier: Apache-2.0 */\nint ok;\n' >"$t/ok.c"
printf '#!/bin/sh\n# SPDX-License-Identifier: Apache-2.0\necho ok\n' >"$t/ok.sh"
# For a person: another licence, a misplaced line, an unknown kind.
printf '# SPDX-License-Identifier: Apache-2.0\ndiff -ruN a/g b/g\n' >"$t/xen-sched-patch/wrong.patch"
printf '/* misplaced.h */\n/* SPDX-License-Identifier: Apache-2.0 */\n' >"$t/misplaced.h"
printf 'key = value\n' >"$t/settings.toml"
# Exempt: data, and build/ (find mode leaves it out).
printf 'raw' >"$t/tests/fuzz/corpus/x/seed"
printf 'notes\n' >"$t/notes.md"
printf 'int built;\n' >"$t/build/gen.c"
cp -a "$t" "$tmp/orig"

if "$spdx" --check "$t" 2>"$tmp/check.err"; then
	fail "--check passed a tree without SPDX lines"
fi
cat "$tmp/check.err"
expect() { # FILE PATTERN
	grep -q "^$1: .*$2" "$tmp/check.err" || fail "--check did not report $1 ($2)"
}
expect a.c "line 1 must be '/\* SPDX-License-Identifier: Apache-2.0 \*/'"
expect b.sh "line 2 must be '# SPDX-License-Identifier: Apache-2.0'"
expect lib.bash "line 1 must be '# SPDX"
expect docs/man/x.8.scd "line 2 must be '; SPDX-License-Identifier: Apache-2.0'"
expect ci/run "line 2 must be '# SPDX"
expect xen-sched-patch/p.patch "line 1 must be '# SPDX-License-Identifier: GPL-2.0-only'"
expect Makefile "line 1 must be '# SPDX"
expect empty.h "no SPDX line"
expect xen-sched-patch/wrong.patch "expected '# SPDX-License-Identifier: GPL-2.0-only'"
expect misplaced.h "must be line 1"
expect settings.toml "no SPDX rule for this kind"
for quiet in ok.c ok.sh tests/fuzz/corpus/x/seed notes.md build/gen.c; do
	grep -q "^$quiet:" "$tmp/check.err" && fail "--check reported $quiet"
done
[ "$(wc -l <"$tmp/check.err")" -eq 11 ] || fail "--check reported $(wc -l <"$tmp/check.err") problems, expected 11"

if "$spdx" --fix "$t" >"$tmp/fix.out" 2>"$tmp/fix.err"; then
	fail "--fix succeeded though three files need a person"
fi
cat "$tmp/fix.out"
grep -q "added 8 line(s)" "$tmp/fix.out" || fail "--fix did not add 8 lines"
# Each fixed file is its old self with one line inserted at the right place.
inserted() { # FILE LINE_NUMBER TEXT
	local want
	want=$(
		head -n $(($2 - 1)) "$tmp/orig/$1"
		echo "$3"
		tail -n +"$2" "$tmp/orig/$1"
	)
	[ "$(cat "$t/$1")" = "$want" ] || fail "--fix made $1: $(cat "$t/$1")"
}
inserted a.c 1 '/* SPDX-License-Identifier: Apache-2.0 */'
inserted b.sh 2 '# SPDX-License-Identifier: Apache-2.0'
inserted lib.bash 1 '# SPDX-License-Identifier: Apache-2.0'
inserted docs/man/x.8.scd 2 '; SPDX-License-Identifier: Apache-2.0'
inserted ci/run 2 '# SPDX-License-Identifier: Apache-2.0'
inserted xen-sched-patch/p.patch 1 '# SPDX-License-Identifier: GPL-2.0-only'
inserted Makefile 1 '# SPDX-License-Identifier: Apache-2.0'
[ "$(cat "$t/empty.h")" = '/* SPDX-License-Identifier: Apache-2.0 */' ] || fail "--fix made empty.h: $(cat "$t/empty.h")"
[ -x "$t/b.sh" ] || fail "--fix lost b.sh's executable bit"
for same in ok.c ok.sh xen-sched-patch/wrong.patch misplaced.h settings.toml tests/fuzz/corpus/x/seed notes.md build/gen.c; do
	cmp -s "$t/$same" "$tmp/orig/$same" || fail "--fix changed $same"
done
if "$spdx" --check "$t" 2>"$tmp/check2.err"; then
	fail "--check passed with a wrong licence, a misplaced line and an unknown kind"
fi
[ "$(wc -l <"$tmp/check2.err")" -eq 3 ] || fail "after --fix: $(cat "$tmp/check2.err")"
rm "$t/xen-sched-patch/wrong.patch" "$t/misplaced.h" "$t/settings.toml"
"$spdx" --check "$t" || fail "--check fails on the fixed tree"
cp -a "$t" "$tmp/fixed"
"$spdx" --fix "$t" | grep -q "added 0 line(s)" || fail "a second --fix added lines"
diff -r "$tmp/fixed" "$t" || fail "a second --fix changed the tree"

# ---- a git work tree: untracked files count, ignored ones do not -------------
g=$tmp/git
mkdir -p "$g/build"
git -C "$g" init -q
printf '/build/\n' >"$g/.gitignore"
printf '/* SPDX-License-Identifier: Apache-2.0 */\nint t;\n' >"$g/tracked.c"
git -C "$g" add .gitignore tracked.c
printf 'int n;\n' >"$g/new.c"
printf 'int i;\n' >"$g/build/ignored.c"
if "$spdx" --check "$g" 2>"$tmp/git.err"; then
	fail "--check passed a git tree with an untracked file without its line"
fi
grep -q '^new.c: no SPDX line' "$tmp/git.err" || fail "untracked new.c not reported: $(cat "$tmp/git.err")"
grep -q 'ignored.c' "$tmp/git.err" && fail "ignored build/ignored.c reported"
rm "$g/tracked.c" # deleted in the work tree but still in the index
rm "$g/new.c"
"$spdx" --check "$g" || fail "--check fails on a git tree with a deleted file"

echo "ok: $n source files carry their SPDX line; planted misses, misplacements, a wrong licence and an unknown kind are named; --fix inserts one line"
