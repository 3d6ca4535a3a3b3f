#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# fetch.sh - downloads and extracts the guest packages into the cache (what
# boot.sh and mkinitrd.sh do on first use) and builds both cached base
# initramfs parts; prints where they are. For warming a CI cache.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
xtb_fetch
xtb_base dom0
echo "dom0 base: $XTB_BASE"
xtb_base domu
echo "domU base: $XTB_BASE"
echo "packages:  $XTB_ROOT/packages.txt"
echo "xen:       $XTB_XEN_ELF"
echo "kernel:    $XTB_VMLINUZ ($XTB_KVER)"
