#!/usr/bin/env bash
# Configures and builds gossamer into ./build (Release; CUDA for sm_90a when nvcc is found).
# Fails when ptxas reports a serialized wgmma pipeline ("(C751x) Potential Performance Loss": an accumulator
# touched by other instructions while its wgmma are in flight, a call inside the pipeline, too few registers) in
# anything this build compiled: the kernel would still be correct, only several times slower, so nothing else
# would catch it (docs/kernels-hopper.md, W4A16).
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${GOSSAMER_BUILD_DIR:-build}
jobs=${GOSSAMER_JOBS:-$(nproc)}
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release "$@"
log="$build_dir/build.log"
cmake --build "$build_dir" -j "$jobs" 2>&1 | tee "$log"
if grep -q "Potential Performance Loss" "$log"; then
  echo "build: ptxas serialized wgmma in these kernels (see $log):" >&2
  grep "Potential Performance Loss" "$log" | sort -u | cut -c1-300 >&2
  exit 1
fi
