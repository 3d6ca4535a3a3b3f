#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# mkinitrd.sh - builds the initramfs of a testbed dom0 or PV domU.
#
#   mkinitrd.sh dom0|domu -o OUT [options] SCRIPT
#
#   SCRIPT              shell script (busybox sh) the VM runs as root; its exit
#                       status is reported (dom0: XTB-RC=n on the serial console;
#                       domU: XTB-DOMU-RC=n on its Xen console)
#   --file SRC[:DEST]   put file SRC at DEST (default: the same path) with the
#                       shared libraries it needs (found with ldd)
#   --dir SRC:DEST      put directory SRC's contents at DEST, with the libraries
#                       of every ELF file in it
#   --lib-path DIRS     search DIRS (colon separated) first for those libraries
#   --env NAME=VALUE    export NAME in the VM before SCRIPT runs
#
# The output is two newc archives back to back: a cached base (busybox, Xen
# drivers, for dom0 also the Xen tools and the guest kernel at /xtb/vmlinuz and
# helpers at /xtb/lib.sh) and the caller's part. Guest packages come from the
# cache (see lib.sh); nothing is installed on the host.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

kind=${1:-}
[ "$kind" = dom0 ] || [ "$kind" = domu ] || xtb_die "usage: mkinitrd.sh dom0|domu -o OUT [--file SRC[:DEST]] [--dir SRC:DEST] [--lib-path DIRS] [--env NAME=VALUE] SCRIPT"
shift
out='' script='' files=() dirs=() envs=()
XTB_LIB_PATH=
while (($#)); do
	case $1 in
	-o) out=$2; shift 2 ;;
	--file) files+=("$2"); shift 2 ;;
	--dir) dirs+=("$2"); shift 2 ;;
	--lib-path) XTB_LIB_PATH=$2; shift 2 ;;
	--env) envs+=("$2"); shift 2 ;;
	-*) xtb_die "mkinitrd.sh: unknown option $1" ;;
	*) [ -z "$script" ] || xtb_die "mkinitrd.sh: more than one script ($script, $1)"; script=$1; shift ;;
	esac
done
[ -n "$out" ] || xtb_die "mkinitrd.sh: -o OUT is required"
[ -n "$script" ] || xtb_die "mkinitrd.sh: no script given"
[ -f "$script" ] || xtb_die "mkinitrd.sh: no such script: $script"
export XTB_LIB_PATH

xtb_fetch
xtb_base "$kind"
XTB_HAVE=$XTB_BASE.list # read by xtb_add_libs
export XTB_HAVE

r=$(mktemp -d "${TMPDIR:-/tmp}/xtb-initrd.XXXXXX")
trap 'rm -rf "$r" "$r.cpio"' EXIT
mkdir -p "$r/xtb"
cp "$script" "$r/xtb/run"
for e in "${envs[@]}"; do
	[[ $e == *=* ]] || xtb_die "--env wants NAME=VALUE, not $e"
	printf 'export %s=%q\n' "${e%%=*}" "${e#*=}" >>"$r/xtb/env"
done
# Directories first: their libraries are then not copied again for files.
for d in "${dirs[@]}"; do
	[[ $d == *:/* ]] || xtb_die "--dir wants SRC:/DEST, not $d"
	xtb_add "$r" "${d%%:*}" "${d#*:}"
	XTB_SKIP_DIRS="${XTB_SKIP_DIRS:+$XTB_SKIP_DIRS:}$(cd "${d%%:*}" && pwd -P)"
done
for f in "${files[@]}"; do
	src=${f%%:*}
	dest=${f#*:}
	[ "$dest" != "$f" ] || dest=$(readlink -f "$src")
	[[ $dest == /* ]] || xtb_die "--file destination must be absolute: $f"
	xtb_add "$r" "$src" "$dest"
done
xtb_cpio "$r" "$r.cpio"
cat "$XTB_BASE" "$r.cpio" >"$out"
rm -f "$r.cpio"
