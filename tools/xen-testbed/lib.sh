# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# lib.sh - shared by the xen-testbed scripts (sourced, not run): the package
# cache (Debian's Xen 4.17, kernel and busybox, downloaded and extracted, never
# installed on the host) and the initramfs assembly (files + the shared
# libraries they need, packed as newc cpio archives).
#
# Cache layout, under XTB_CACHE (default ${XGPU_CACHE_DIR:-$XDG_CACHE_HOME/xgpu}/xen-testbed):
#   debs/                 the .deb files apt-get downloaded (names carry versions;
#                         $XGPU_PKG_CACHE/debs instead when that is set)
#   root-<key>/           those packages extracted; <key> hashes every name=version
#   root-<key>/xen.elf    the hypervisor, uncompressed (QEMU's multiboot wants ELF)
#   root-<key>/vmlinuz    the dom0/domU kernel
#   base-<kind>-<key2>.cpio  the part of an initramfs that does not depend on
#                         the caller (busybox, modules, Xen tools, init)

XTB_DIR=${XTB_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)}
XTB_CACHE=${XTB_CACHE:-${XGPU_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/xgpu}/xen-testbed}
# XGPU_PKG_CACHE, when set, keeps the downloaded .debs apart from the rest
# (CI keeps it between runs and starts every other cache empty).
XTB_DEBS=${XGPU_PKG_CACHE:+$XGPU_PKG_CACHE/debs}
XTB_DEBS=${XTB_DEBS:-$XTB_CACHE/debs}
XTB_ARCH_LIB=/usr/lib/x86_64-linux-gnu

# Guest-side packages. The runtime libraries xl and xenstored link against come
# from here too, so dom0 runs the packaged tools with matching libraries; plain
# system libraries (libc, libgcc_s, libz...) are taken from the host, which is
# Debian 12 as well.
XTB_PACKAGES=(xen-hypervisor-4.17-amd64 xen-utils-4.17 xen-utils-common xenstore-utils
	libxencall1 libxendevicemodel1 libxenevtchn1 libxenforeignmemory1 libxengnttab1
	libxenhypfs1 libxenmisc4.17 libxenstore4 libxentoolcore1 libxentoollog1 libyajl2
	libncurses6 busybox-static)

xtb_log() { echo "xen-testbed: $*" >&2; }
xtb_die() {
	echo "xen-testbed: error: $*" >&2
	exit 1
}

# Which versions apt would fetch now, one PKG=VERSION a line. Refreshes the
# package lists once if apt knows nothing about Xen yet (a fresh machine never
# ran apt-get update). XTB_PKG_LIST, when set, is the answer already (boot.sh
# passes it on so that mkinitrd.sh does not ask apt again: each apt-cache run
# costs most of a second).
_xtb_versions() {
	if [ -n "${XTB_PKG_LIST:-}" ]; then
		echo "$XTB_PKG_LIST"
		return 0
	fi
	if ! apt-cache show --no-all-versions xen-utils-4.17 >/dev/null 2>&1; then
		xtb_log "apt does not know xen-utils-4.17; running apt-get update"
		apt-get update -qq >&2 || xtb_die "apt-get update failed (needed to find the Xen packages)"
	fi
	local kpkg p v all
	kpkg=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/ {print $2; exit}')
	[ -n "$kpkg" ] || xtb_die "cannot tell which kernel package linux-image-amd64 depends on (apt-cache depends linux-image-amd64)"
	all=$(apt-cache show --no-all-versions "${XTB_PACKAGES[@]}" "$kpkg" 2>/dev/null |
		awk '/^Package: / {p = $2} /^Version: / {print p "=" $2}')
	for p in "${XTB_PACKAGES[@]}" "$kpkg"; do
		v=$(echo "$all" | awk -F= -v p="$p" '$1 == p {print substr($0, length(p) + 2); exit}')
		[ -n "$v" ] || xtb_die "apt knows no version of package $p"
		echo "$p=$v"
	done
}

# _xtb_deb PKG VER: the cached .deb of PKG at VER, or nothing. apt-get
# download names files PKG_VER_ARCH.deb with ':' as %3a.
_xtb_deb() {
	local f
	for f in "$XTB_DEBS/${1}_${2//:/%3a}_"*.deb; do
		[ -f "$f" ] && echo "$f" && return 0
	done
	return 0
}

# apt-get download PKG=VER... into the cache, skipping those already there.
_xtb_download() {
	local pv p v f need=()
	mkdir -p "$XTB_DEBS"
	for pv in "$@"; do
		p=${pv%%=*}
		v=${pv#*=}
		f=$(_xtb_deb "$p" "$v")
		[ -n "$f" ] || need+=("$pv")
	done
	((${#need[@]})) || return 0
	xtb_log "downloading ${need[*]}"
	local tmp=$XTB_DEBS/.dl.$$
	rm -rf "$tmp"
	mkdir -p "$tmp"
	# As root apt would hand the download to user _apt, who cannot write
	# into root's cache (it warns and goes on unsandboxed).
	local opt=()
	[ "$(id -u)" -ne 0 ] || opt=(-o APT::Sandbox::User=root)
	if ! (cd "$tmp" && apt-get download -q "${opt[@]}" "${need[@]}" >&2); then
		rm -rf "$tmp"
		return 1
	fi
	mv "$tmp"/*.deb "$XTB_DEBS/"
	rm -rf "$tmp"
}

# xtb_fetch: makes sure the packages are downloaded and extracted; sets
# XTB_ROOT (the extracted tree), XTB_KEY, XTB_KVER (kernel release),
# XTB_XEN_ELF and XTB_VMLINUZ.
xtb_fetch() {
	local list lock
	# Two tests may fetch at once (tests/run.sh runs xen_real beside the
	# others): one downloads and extracts, the other waits and finds it done.
	mkdir -p "$XTB_CACHE"
	exec {lock}>"$XTB_CACHE/.fetch.lock"
	flock "$lock"
	list=$(_xtb_versions) || exit 1
	_xtb_key "$list"
	if [ ! -f "$XTB_ROOT/.complete" ]; then
		# shellcheck disable=SC2086
		if ! _xtb_download $list; then
			# Stale lists name versions the mirror no longer has (security
			# updates replace them): refresh, ask again, retry once.
			xtb_log "download failed; refreshing the package lists and trying once more"
			apt-get update -qq >&2 || xtb_die "apt-get update failed; cannot download the Xen packages"
			list=$(XTB_PKG_LIST='' _xtb_versions) || exit 1
			_xtb_key "$list"
			# shellcheck disable=SC2086
			_xtb_download $list || xtb_die "apt-get download failed for the packages above (network? apt sources with bookworm and bookworm-security?)"
		fi
	fi
	_xtb_extract "$list"
	exec {lock}>&-
	XTB_PKG_LIST=$list
	XTB_KVER=$(ls "$XTB_ROOT/lib/modules")
	export XTB_XEN_ELF=$XTB_ROOT/xen.elf
	XTB_VMLINUZ=$XTB_ROOT/vmlinuz
}

# _xtb_key LIST: the cache key of a package list, and its extraction dir.
_xtb_key() {
	XTB_KEY=$( (
		echo "$1"
		echo layout-1
	) | sha256sum | cut -c1-16)
	XTB_ROOT=$XTB_CACHE/root-$XTB_KEY
}

# _xtb_extract LIST: unpacks the downloaded packages into XTB_ROOT once.
_xtb_extract() {
	local list=$1
	if [ ! -f "$XTB_ROOT/.complete" ]; then
		local tmp=$XTB_ROOT.tmp.$$ pv p v deb
		rm -rf "$tmp"
		mkdir -p "$tmp"
		for pv in $list; do
			p=${pv%%=*}
			v=${pv#*=}
			deb=$(_xtb_deb "$p" "$v")
			[ -n "$deb" ] || xtb_die "downloaded $p=$v but found no .deb for it in $XTB_DEBS"
			case $p in
			linux-image-*)
				# Only the kernel and the Xen driver modules: the full
				# module tree is hundreds of megabytes.
				dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$tmp" --wildcards \
					'./boot/vmlinuz-*' './lib/modules/*/kernel/drivers/xen/*' ||
					xtb_die "cannot extract $deb"
				;;
			*) dpkg-deb -x "$deb" "$tmp" || xtb_die "cannot extract $deb" ;;
			esac
		done
		zcat "$tmp"/boot/xen-4.17-amd64.gz >"$tmp/xen.elf" || xtb_die "no /boot/xen-4.17-amd64.gz in xen-hypervisor-4.17-amd64"
		cp "$tmp"/boot/vmlinuz-* "$tmp/vmlinuz" || xtb_die "no kernel in the linux-image package"
		echo "$list" >"$tmp/packages.txt"
		touch "$tmp/.complete"
		rm -rf "$XTB_ROOT"
		mv "$tmp" "$XTB_ROOT"
		xtb_log "extracted into $XTB_ROOT"
	fi
}

# Library directories searched before the host's: the extracted Xen libraries
# (so dom0's tools and our binaries use the packaged ones) after any the caller
# names (XTB_LIB_PATH, colon separated, e.g. the build's lib/).
_xtb_ldpath() {
	local p=$XTB_ROOT$XTB_ARCH_LIB:$XTB_ROOT/lib/x86_64-linux-gnu
	echo "${XTB_LIB_PATH:+$XTB_LIB_PATH:}$p"
}

# _xtb_put ROOTFS SRC DEST: copies SRC (dereferenced) to ROOTFS/DEST.
_xtb_put() {
	mkdir -p "$1$(dirname "$3")"
	cp -L "$2" "$1$3"
}

# xtb_add_libs ROOTFS FILE...: copies the shared libraries each ELF FILE needs
# into ROOTFS. A library resolved inside the extracted packages lands at its
# path without the cache prefix; host libraries keep their path. Libraries
# under a directory in XTB_SKIP_DIRS (colon separated; already in the image)
# are left out. A library ldd cannot find is an error.
xtb_add_libs() {
	local rootfs=$1 f line lib dest d skip
	shift
	for f in "$@"; do
		[ -f "$f" ] && head -c4 "$f" | grep -q $'\x7fELF' || continue
		local out
		out=$(LD_LIBRARY_PATH=$(_xtb_ldpath) ldd "$f" 2>&1) || {
			# Static binaries and non-executables: nothing to add.
			echo "$out" | grep -qE 'not a dynamic executable|statically linked' && continue
			xtb_die "ldd $f failed: $out"
		}
		if echo "$out" | grep -q 'not found'; then
			xtb_die "$f needs libraries found neither in the Xen packages nor on the host: $(echo "$out" | grep 'not found' | tr -s ' \t\n' ' ')"
		fi
		while read -r line; do
			lib=$(echo "$line" | grep -oE '/[^ ]+' | head -n1) || true
			[ -n "$lib" ] || continue
			skip=0
			for d in $(echo "${XTB_SKIP_DIRS:-}" | tr : " "); do
				[[ $lib == "$d"/* ]] && skip=1
			done
			((skip)) && continue
			dest=${lib#"$XTB_ROOT"}
			[ -e "$rootfs$dest" ] && continue
			# Already in the base archive this one is appended to.
			[ -n "${XTB_HAVE:-}" ] && grep -qxF ".$dest" "$XTB_HAVE" && continue
			_xtb_put "$rootfs" "$lib" "$dest"
		done <<<"$out"
	done
}

# xtb_add ROOTFS SRC DEST: a file or a directory tree, plus the libraries of
# every ELF file in it.
xtb_add() {
	local rootfs=$1 src=$2 dest=$3
	[ -e "$src" ] || xtb_die "no such file to put into the VM: $src"
	if [ -d "$src" ]; then
		mkdir -p "$rootfs$dest"
		cp -rL "$src"/. "$rootfs$dest"/
		local elfs
		mapfile -t elfs < <(find "$rootfs$dest" -type f)
		XTB_SKIP_DIRS="${XTB_SKIP_DIRS:+$XTB_SKIP_DIRS:}$(cd "$src" && pwd -P)" xtb_add_libs "$rootfs" "${elfs[@]}"
	else
		_xtb_put "$rootfs" "$src" "$dest"
		xtb_add_libs "$rootfs" "$src"
	fi
}

# xtb_cpio DIR OUT: packs DIR as a newc archive (uncompressed: the kernel
# unpacks it faster under the emulated CPU than it would gunzip it).
xtb_cpio() {
	(cd "$1" && find . -mindepth 1 | LC_ALL=C sort | cpio -o -H newc --quiet -R 0:0) >"$2.tmp.$$" && mv "$2.tmp.$$" "$2"
}

# xtb_busybox ROOTFS: busybox (the static one from the package) and its applets.
xtb_busybox() {
	local r=$1 a
	mkdir -p "$r/bin"
	cp "$XTB_ROOT/bin/busybox" "$r/bin/busybox"
	for a in $("$XTB_ROOT/bin/busybox" --list); do
		[ "$a" = busybox ] || [ -e "$r/bin/$a" ] || ln -s busybox "$r/bin/$a"
	done
}

# xtb_base KIND: the cached caller-independent initramfs part for dom0 or
# domU; sets XTB_BASE to its path.
xtb_base() {
	local kind=$1 key r m
	key=$(cat "$XTB_DIR/lib.sh" "$XTB_DIR/init-$kind.sh" "$XTB_DIR/dom0-lib.sh" | sha256sum | cut -c1-12)
	XTB_BASE=$XTB_CACHE/base-$kind-$XTB_KEY-$key.cpio
	[ -f "$XTB_BASE" ] && [ -f "$XTB_BASE.list" ] && return 0
	r=$(mktemp -d "${TMPDIR:-/tmp}/xtb-base.XXXXXX")
	mkdir -p "$r"/{proc,sys,dev,tmp,run,mods,xtb,etc,root}
	xtb_busybox "$r"
	local km=$XTB_ROOT/lib/modules/$XTB_KVER/kernel/drivers/xen
	# A domU gets xenfs (and xen-privcmd, which it needs) too, to mount
	# when a test asks (init-domu.sh does not: many guest images never do).
	local mods="xen-evtchn xen-gntdev xen-gntalloc xen-privcmd xenfs/xenfs"
	[ "$kind" = dom0 ] && mods="xen-evtchn xen-privcmd xenfs/xenfs xen-gntdev xen-gntalloc"
	for m in $mods; do
		cp "$km/$m.ko" "$r/mods/" || xtb_die "kernel module $m.ko missing in $km"
	done
	cp "$XTB_DIR/init-$kind.sh" "$r/init"
	chmod 755 "$r/init"
	# Both kinds get the xenstore client (a domU reads and writes its own
	# directory through /dev/xen/xenbus); dom0 gets the toolstack.
	local xb=/usr/lib/xen-4.17/bin t tools=/usr/bin/xenstore
	[ "$kind" = dom0 ] && tools="$tools $xb/xl $xb/xenstored $xb/xenconsoled $xb/xen-init-dom0"
	mkdir -p "$r/usr/bin"
	for t in $tools; do
		[ -f "$XTB_ROOT$t" ] || xtb_die "$t missing from the extracted Xen packages"
		_xtb_put "$r" "$XTB_ROOT$t" "$t"
		xtb_add_libs "$r" "$XTB_ROOT$t"
	done
	for t in read write ls list rm exists watch chmod; do
		ln -s xenstore "$r/usr/bin/xenstore-$t"
	done
	# glibc loads libgcc_s at run time (pthread_cancel, unwinding); xl needs it.
	_xtb_put "$r" /lib/x86_64-linux-gnu/libgcc_s.so.1 /lib/x86_64-linux-gnu/libgcc_s.so.1
	if [ "$kind" = dom0 ]; then
		mkdir -p "$r"/{var/lib/xen,var/log/xen/console,etc/xen,run/xen}
		ln -s ../run "$r/var/run"
		cp "$XTB_ROOT/etc/xen/xl.conf" "$r/etc/xen/" 2>/dev/null || : >"$r/etc/xen/xl.conf"
		cp "$XTB_DIR/dom0-lib.sh" "$r/xtb/lib.sh"
		cp "$XTB_VMLINUZ" "$r/xtb/vmlinuz"
	fi
	# Another run may build the same base at the same time: each writes
	# its own temporary and renames it into place.
	(cd "$r" && find . -mindepth 1 -not -type d) >"$XTB_BASE.list.$$"
	mv "$XTB_BASE.list.$$" "$XTB_BASE.list"
	xtb_cpio "$r" "$XTB_BASE"
	rm -rf "$r"
}
