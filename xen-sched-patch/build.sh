#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# build.sh - builds Xen 4.17's hypervisor (Debian's source package, Debian's
# config) with xgpu-sched-export.patch applied, and caches the result keyed by
# the patch's hash. Prints the path of the uncompressed multiboot ELF on
# stdout (what QEMU's -kernel and tools/xen-testbed/boot.sh --xen-elf load).
#
#   build.sh [--no-patch | --measure] [--force]
#
# --no-patch builds Debian's hypervisor unchanged; --measure adds
# measure-cost.patch (prints the export's cost in cycles on the console every
# 4096 schedules of a PCPU; not for production).
#
# Cache: ${XGPU_CACHE_DIR:-${XDG_CACHE_HOME:-~/.cache}/xgpu}/xen-sched-patch
# (override with XSP_CACHE): src-<version>.dsc etc. (apt-get source
# --download-only), tree-<version>/ (the unpacked, patched tree: rebuilt
# incrementally when the patch changes), xen-<version>-<sha256 of patch>.elf
# (the result). XGPU_PKG_CACHE, when set, keeps the downloaded source package
# (dl/) there instead, so that a fresh cache (CI) skips only the download.
# Nothing is written into the repository; every folder is created here. Needs gcc, make, python3, dpkg-dev, flex, bison
# (tools/install-deps.sh) and apt sources carrying Debian 12 (main pool).
set -euo pipefail
shopt -s nullglob
here=$(cd "$(dirname "$0")" && pwd)
V=${XEN_SRC_VERSION:-4.17.5+72-g01140da4e8-1} # the main-pool version: the security pool's 404s
C=${XSP_CACHE:-${XGPU_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/xgpu}/xen-sched-patch}
patchf=$here/xgpu-sched-export.patch
log() { echo "xen-sched-patch: $*" >&2; }
die() { log "$*"; exit 1; }

nopatch=0 force=0 measure=0
while (($#)); do
	case $1 in
	--no-patch) nopatch=1; shift ;;
	--force) force=1; shift ;;
	--measure) measure=1; shift ;;
	*) die "unknown option $1" ;;
	esac
done
patches=("$patchf")
((!measure)) || patches+=("$here/measure-cost.patch")
if ((nopatch)); then key=stock; else key=$(cat "${patches[@]}" | sha256sum | cut -c1-16); fi
out=$C/xen-$V-$key.elf
if [ -s "$out" ] && ((!force)); then
	log "cached: $out"
	echo "$out"
	exit 0
fi
t0=$(date +%s.%N)
for p in gcc make python3 dpkg-source flex bison; do
	command -v $p >/dev/null || die "$p is not installed (tools/install-deps.sh installs the build deps)"
done
mkdir -p "$C" || die "cannot create the cache folder $C"
exec 9>"$C/.lock"
flock 9
dl=${XGPU_PKG_CACHE:+$XGPU_PKG_CACHE/xen-src}
dl=${dl:-$C/dl}
if [ ! -f "$dl/xen_$V.dsc" ]; then
	# The machine's apt sources may list binary packages only: add the
	# matching source lists privately (no change to the system's apt state).
	mkdir -p "$dl/lists/partial"
	: >"$dl/src.sources"
	for f in /etc/apt/sources.list.d/*.sources; do
		[ -f "$f" ] && sed -n 's/^Types: deb$/Types: deb-src/;/^Types:/,/^$/p' "$f" >>"$dl/src.sources"
	done
	o=(-o "Dir::Etc::SourceList=$dl/src.sources" -o Dir::Etc::SourceParts=/dev/null -o "Dir::State::Lists=$dl/lists")
	# As root apt would hand the download to user _apt, who cannot write here.
	[ "$(id -u)" -ne 0 ] || o+=(-o APT::Sandbox::User=root)
	if [ -f /etc/apt/sources.list ]; then
		sed -n 's/^deb /deb-src /p' /etc/apt/sources.list >"$dl/src.list"
		o+=(-o "Dir::Etc::SourceParts=$dl/parts")
		mkdir -p "$dl/parts" && cp "$dl/src.list" "$dl/parts/"
	fi
	apt-get "${o[@]}" update >/dev/null
	(cd "$dl" && apt-get "${o[@]}" source --download-only "xen=$V" >/dev/null)
fi
# One tree per version (and one unpatched); a new patch is applied after the
# one recorded in it is reversed, so that make rebuilds only what changed.
if ((nopatch)); then tree=$C/tree-$V-stock; else tree=$C/tree-$V; fi
if [ ! -d "$tree" ]; then
	rm -rf "$tree.tmp"
	dpkg-source -x "$dl/xen_$V.dsc" "$tree.tmp" >/dev/null # applies Debian's own patches
	cp "$tree.tmp/debian/xen-kconfig" "$tree.tmp/xen/.config"
	make -C "$tree.tmp/xen" XEN_TARGET_ARCH=x86_64 olddefconfig >/dev/null
	mv "$tree.tmp" "$tree"
fi
# The patches applied to the tree are kept in .xsp-applied/ (1.patch, ...);
# they are reversed last first. Files whose content ends up the same keep
# their old time stamps, so make rebuilds only what really changed.
applied() { cat /dev/null "$tree"/.xsp-applied/*.patch; }
if ((!nopatch)) && [ "$(applied | sha256sum)" != "$(cat "${patches[@]}" | sha256sum)" ]; then
	keep=$tree/.xsp-keep
	rm -rf "$keep" && mkdir -p "$keep"
	files=$(cat "${patches[@]}" "$tree"/.xsp-applied/*.patch | sed -n 's#^+++ b/##p' | sort -u)
	for f in $files; do
		[ -f "$tree/$f" ] && mkdir -p "$keep/$(dirname "$f")" && cp -p "$tree/$f" "$keep/$f"
	done
	old=("$tree"/.xsp-applied/*.patch)
	for ((i = ${#old[@]} - 1; i >= 0; i--)); do
		p=${old[i]}
		(cd "$tree" && patch -p1 -R --quiet <"$p") || die "cannot reverse $p in $tree (remove the tree)"
		rm -f "$p"
	done
	mkdir -p "$tree/.xsp-applied"
	n=0
	for p in "${patches[@]}"; do
		n=$((n + 1))
		(cd "$tree" && patch -p1 --quiet <"$p") || die "$p does not apply to $V (tree: $tree)"
		cp "$p" "$tree/.xsp-applied/$n.patch"
	done
	for f in $files; do
		if [ -f "$keep/$f" ] && cmp -s "$keep/$f" "$tree/$f"; then touch -r "$keep/$f" "$tree/$f"; fi
	done
	rm -rf "$keep"
fi
if ! make -C "$tree/xen" XEN_TARGET_ARCH=x86_64 -j"$(nproc)" >"$tree/build.log" 2>&1; then
	tail -n 40 "$tree/build.log" >&2
	die "build failed (log: $tree/build.log)"
fi
cp "$tree/xen/xen" "$out.tmp" && mv "$out.tmp" "$out"
log "built $out in $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')s"
echo "$out"
