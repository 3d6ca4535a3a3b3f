# SPDX-License-Identifier: Apache-2.0
# notes.sh - sourced by the bench scripts: a results file is what a run
# writes, then a marker line, then notes written by hand about earlier runs,
# which a later run keeps.

bench_notes_marker="<!-- Above: written by the bench script at each run. Below: kept by it. -->"

# write_keeping_notes OUT GENERATED: OUT becomes GENERATED's text, the marker
# and whatever OUT held below its marker before.
write_keeping_notes() {
	local out=$1 generated=$2 tmp
	tmp=$(mktemp "${out}.XXXXXX")
	{
		cat "$generated"
		echo
		echo "$bench_notes_marker"
		if [ -f "$out" ]; then awk -v m="$bench_notes_marker" 'kept {print} $0 == m {kept = 1}' "$out"; fi
	} >"$tmp"
	mv "$tmp" "$out"
}
