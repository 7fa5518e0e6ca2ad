#!/usr/bin/env bash
# On the dev machine, after scripts/build.sh: packs what bench/run_validation_h200.sh and
# bench/run_load_h200.sh read into carry/ (ignored; name the folders in the device call's carry list):
#   carry/valfull/val.tar.zst  stripped gossamer, the GPU test suites and their workers, the kernel and
#                              tokenizer benches, the kernel timeline tracer, and lib/ (the non-glibc, non-CUDA
#                              shared objects they load: the device image has no cairo; and CUPTI)
#   carry/valz/val.tar.zst     the lean pack: gossamer, the kernels bench, the workers, the tracer and lib/ (no test
#                              suites: ≈ 13 MiB, so that a candidate branch's binaries fit beside it)
#   carry/*/zstd               to unpack them there
# and node_modules/tiktoken/encoders/o200k_base.json stays where the load generator reads it (tracked by
# npm, ignored by git: also name it in carry). Prints the sizes; the carry limit is 64 MiB in all.
#   bash bench/pack_for_device.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/lib" carry/valz carry/valfull
binaries=("$build/gossamer" "$build/bench/kernels/gossamer_kernels_bench")
[ -f "$build/gossamer_tokenizer_bench" ] && binaries+=("$build/gossamer_tokenizer_bench")
for suite in kernels model_gpu engine_gpu comm_gpu server_gpu; do binaries+=("$build/tests/gossamer_${suite}_tests"); done
binaries+=("$build/tests/gossamer_comm_gpu_worker" "$build/tests/gossamer_tp_model_worker")
for binary in "${binaries[@]}"; do
  [ -f "$binary" ] || { echo "pack_for_device: $binary is missing (build with CUDA first)"; exit 1; }
  strip -o "$stage/$(basename "$binary")" "$binary"
done
# The shared objects outside glibc and CUDA (the device has both).
for binary in "${binaries[@]}"; do ldd "$binary"; done | awk '$3 ~ /^\// {print $3}' | sort -u |
  grep -v -E '/(libc|libm|libpthread|librt|libdl|ld-linux[^/]*)\.so|/usr/local/cuda' |
  while read -r object; do cp -L "$object" "$stage/lib/"; done
# The kernel timeline tracer (a shared object, kept unstripped of its dynamic symbols) and CUPTI, which it
# loads: the device's CUDA may lack CUPTI's library (bench/run_validation_h200.sh timeline).
if [ -f "$build/bench/kernels/libgossamer_kernel_trace.so" ]; then
  strip --strip-unneeded -o "$stage/libgossamer_kernel_trace.so" "$build/bench/kernels/libgossamer_kernel_trace.so"
  ldd "$build/bench/kernels/libgossamer_kernel_trace.so" | awk '$1 ~ /^libcupti/ && $3 ~ /^\// {print $3}' |
    while read -r object; do cp -L "$object" "$stage/lib/"; done
fi
tar cf - -C "$stage" . | zstd -q -19 -T0 -f -o carry/valfull/val.tar.zst
(cd "$stage" && tar cf - ./gossamer ./gossamer_kernels_bench ./gossamer_tp_model_worker ./gossamer_comm_gpu_worker \
  $(ls libgossamer_kernel_trace.so 2>/dev/null) ./lib) | zstd -q -19 -T0 -f -o carry/valz/val.tar.zst
cp "$(command -v zstd)" carry/valz/zstd
cp "$(command -v zstd)" carry/valfull/zstd
du -b carry/valz/val.tar.zst carry/valfull/val.tar.zst carry/valz/zstd node_modules/tiktoken/encoders/o200k_base.json |
  awk '{printf "%8.1f MiB  %s\n", $1 / 1048576, $2; total += $1} END {printf "%8.1f MiB  in all (limit 64)\n", total / 1048576}'
