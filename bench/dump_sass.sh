#!/usr/bin/env bash
# The SASS of a binary's kernels whose mangled names match a pattern (cuobjdump, on the device machine; this
# machine has no disassembler), zstd-compressed, for reading instruction mixes off the device:
#   bash bench/dump_sass.sh BINARY PATTERN OUTPUT.zst      e.g. PATTERN gemm_w4a16|gemm_fp8_tma
set -euo pipefail
binary=$1 pattern=$2 output=$3
z=$(command -v zstd || echo carry/valz/zstd)
cuobjdump -sass "$binary" | awk -v pat="$pattern" '/Function :/ { keep = ($0 ~ pat) } keep' | $z -q -19 -f -o "$output"
