#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/samples/smallcalls.cu: the small calls for one device (peers, PCI
# bus ids, peer copies, stream ids and attribute copies, no-op
# configuration), built with -cudart shared and with nvcc's default static
# runtime (NVIDIA's runtime over xgpu's libcuda.so.1); both verify their
# results, compute the same checksum and call nothing unsupported.
. "$(dirname "$0")/lib.bash"
. "$(dirname "$0")/samples.bash"
start_xgpud

run_both_builds smallcalls
no_unsupported_calls
stop_xgpud
