#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# spdx.sh - every source file of xgpu starts with its SPDX-License-Identifier
# line (docs/licensing.md): checks that, and adds the line where it is missing.
#
#   tools/spdx.sh --check [ROOT]  names each source file without its line (exit 1)
#   tools/spdx.sh --fix [ROOT]    adds the missing lines; changes nothing else
#   tools/spdx.sh --list [ROOT]   each source file with the line it must carry
#
# ROOT (default: this repository) is read with git ls-files when it is a git
# work tree (tracked files and new ones that are not ignored), else with find
# (build/ and .git/ left out). The kind of a file decides the line's form
# and place, in the table in kind_of: C-like files take
# "/* SPDX-License-Identifier: Apache-2.0 */" on line 1; files with #
# comments "# SPDX-License-Identifier: Apache-2.0" on line 1, or on line 2
# after a "#!" line; scdoc pages "; ..." on line 2, after the title line that
# scdoc wants first. xen-sched-patch/*.patch carry GPL-2.0-only (they modify
# Xen). Files that are data, not source, are exempt by kind; a kind that the
# table does not know fails --check, so that a new kind gets a decision.
# --fix only inserts the one line; a misplaced line or another licence is
# reported and left to a person.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
mode=${1:-}
root=${2:-$here}
case $mode in
--check | --fix | --list) ;;
*)
	sed -n '2,/^set -e/p' "$0" | sed '$d; /^# SPDX-License-Identifier:/d; s/^# \{0,1\}//'
	[ "$mode" = --help ] || [ "$mode" = -h ]
	exit
	;;
esac
[ -d "$root" ] || {
	echo "spdx.sh: $root is not a directory" >&2
	exit 2
}

# kind_of PATH: the comment form its line takes (c, hash, scd), "data" for
# files exempt from the rule, "" for a kind nobody has decided on. First
# match wins, so the data rules for whole directories come first.
kind_of() {
	local path=$1 base=${1##*/}
	case $path in
	# Fuzzing seeds: raw inputs, byte for byte.
	tests/fuzz/corpus/*) echo data ;;
	# Records of runs, test inputs and expected outputs, pictures.
	*.md | *.txt | *.tsv | *.json | *.png | *.bin | *.out | *.err | *.log | *.cfg | *.tree) echo data ;;
	# Lists of NVIDIA's exported names (and return types, ABI versions) that
	# tools/list-cud*-symbols.sh derive from the CUDA toolkit; read line by
	# line, .symbols without any comment syntax (docs/licensing.md).
	*.symbols | *.procs | *.nonerror) echo data ;;
	# Packaging metadata (debian/copyright states its licence); the licence
	# texts; the repository's own settings.
	LICENSE | debian/changelog | debian/control | debian/copyright | debian/source/format) echo data ;;
	debian/*.docs | debian/*.manpages | debian/*.triggers | debian/*.lintian-overrides) echo data ;;
	.gitignore | .clang-format) echo data ;;
	# C, C headers, CUDA, C preprocessor tables, linker version scripts.
	*.c | *.h | *.cu | *.cuh | *.def | *.map) echo c ;;
	# Shell, Python, make, and the configuration files that take # comments
	# (sanitizer suppressions, libFuzzer dictionaries, systemd units, the
	# example xgpud.conf), Xen patches (text before the first diff is
	# ignored by patch(1) and git apply).
	*.sh | *.bash | *.py | *.mk | Makefile | */Makefile | debian/rules) echo hash ;;
	*.supp | *.dict | *.service | *.example | *.patch) echo hash ;;
	*.scd) echo scd ;;
	*)
		# A script without an extension (.ci/run).
		if [[ $base != *.* ]] && [ "$(head -c 2 "$root/$path")" = '#!' ]; then
			echo hash
		else
			echo ""
		fi
		;;
	esac
}

licence_of() {
	case $1 in
	xen-sched-patch/*.patch) echo GPL-2.0-only ;;
	*) echo Apache-2.0 ;;
	esac
}

# The line a file of this kind and licence carries.
line_for() {
	case $1 in
	c) echo "/* SPDX-License-Identifier: $2 */" ;;
	hash) echo "# SPDX-License-Identifier: $2" ;;
	scd) echo "; SPDX-License-Identifier: $2" ;;
	esac
}

files() {
	if git -C "$root" rev-parse --is-inside-work-tree >/dev/null 2>&1 &&
		[ "$(git -C "$root" rev-parse --show-toplevel)" = "$(cd "$root" && pwd -P)" ]; then
		git -C "$root" ls-files -z --cached --others --exclude-standard
	else
		(cd "$root" && find . \( -path ./build -o -path ./.git \) -prune -o -type f -print0) |
			sed -z 's#^\./##'
	fi
}

bad=0
fixed=0
while IFS= read -r -d '' path; do
	f=$root/$path
	[ -f "$f" ] && [ ! -L "$f" ] || continue # deleted in the work tree, or a link
	kind=$(kind_of "$path")
	[ "$kind" = data ] && continue
	if [ -z "$kind" ]; then
		echo "$path: no SPDX rule for this kind of file: add it to kind_of in tools/spdx.sh" >&2
		bad=1
		continue
	fi
	want=$(line_for "$kind" "$(licence_of "$path")")
	mapfile -t -n 10 head <"$f"
	at=0 # index of the line that must be the SPDX line
	case $kind in
	scd) at=1 ;;
	hash) [[ ${head[0]:-} == '#!'* ]] && at=1 ;;
	esac
	if [ "$mode" = --list ]; then
		printf '%s\t%d\t%s\n' "$path" $((at + 1)) "$want"
		continue
	fi
	[ "${head[at]:-}" = "$want" ] && continue
	if printf '%s\n' "${head[@]}" | grep -q 'SPDX-License-Identifier'; then
		if [[ ${head[at]:-} == *SPDX-License-Identifier* ]]; then
			echo "$path: line $((at + 1)) is '${head[at]}', expected '$want'" >&2
		else
			echo "$path: its SPDX line must be line $((at + 1)): '$want'" >&2
		fi
		bad=1
	elif [ "$mode" = --fix ]; then
		if ((at == 0)); then
			sed -i "1i\\$want" "$f"
		else
			sed -i "${at}a\\$want" "$f"
		fi
		# An empty file has no line 1 for sed to insert before.
		[ -s "$f" ] || echo "$want" >"$f"
		echo "added to $path"
		fixed=$((fixed + 1))
	else
		echo "$path: no SPDX line (line $((at + 1)) must be '$want'; tools/spdx.sh --fix adds it)" >&2
		bad=1
	fi
done < <(files)
[ "$mode" = --fix ] && echo "spdx.sh: added $fixed line(s)"
exit $bad
