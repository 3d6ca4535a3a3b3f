#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# domu-busy.sh - domU payload of tests/e2e/xen_sched_patch.sh: keeps its VCPU
# busy (a shell loop that never blocks) so that the credit scheduler runs it
# and burns its credit, until dom0 destroys the domain.
echo "BUSY-DOMU: spinning on $(grep -c ^processor /proc/cpuinfo) VCPU(s)"
while :; do :; done
