#!/usr/bin/env bash
# The W4A8 MXFP4 expert GEMMs' device call (thirty-first session): the kernel and model tests, the MoE rows, 20b / 120b
# mxfp4 prefill with and without --moe-mxfp4-w4a8, then ncu's source samples of the W4A8 gate_up at 8,192 tokens.
# Carry carry/valfull (packed from the build under test).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/w4a8}
mkdir -p "$out"
rm -rf carry/val
bash bench/run_validation_h200.sh prep > "$out/prep.log" 2>&1
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/carry/val/lib
(timeout 300 build/tests/gossamer_kernels_tests --gtest_color=no \
  --gtest_filter='GemmW4A8Kernel.*:MoeKernel.*:GemmW4A16Kernel.*:*DeferredCombine*:Mxfp4*' > "$out/kern.log" 2>&1
 echo "kernels exit $?") &
(for suite in model_gpu engine_gpu; do
   timeout 300 build/tests/gossamer_${suite}_tests --gtest_color=no > "$out/$suite.log" 2>&1
   echo "$suite exit $?"
 done) &
wait
grep -hE '^\[  (PASSED|FAILED) |FAILED  \]|W4A8 experts|W4A16 experts' "$out/kern.log" "$out/model_gpu.log" \
  "$out/engine_gpu.log" | head -30
grep -h -B3 -A12 'Failure' "$out/kern.log" "$out/model_gpu.log" "$out/engine_gpu.log" | head -40
echo "== moe-mxfp4 ($(date +%T))"
timeout 200 build/bench/kernels/gossamer_kernels_bench moe-mxfp4 2>&1 | grep '^| m' | cut -d'|' -f2-5 |
  sed 's/ (route..combine)//; s/, top-4//'
for preset in 20b 120b; do
  for flags in "--weights fp8" "--weights mxfp4" "--weights mxfp4 --no-moe-mxfp4-w4a8"; do
    [ "$preset $flags" = "120b --weights fp8" ] && continue  # 109 GiB: not on an 80 GB part
    echo "== prefill $preset $flags ($(date +%T))"
    timeout 100 build/gossamer bench prefill --load-format dummy --preset $preset --device cuda \
      --input-lens 2048 4096 8192 16384 --repeats 2 $flags 2>&1 | grep -E '\| dummy|rror' | head -6
  done
done
if [ "${W4A8_PROFILE:-1}" = 1 ]; then
  prefill=(bench prefill --load-format dummy --preset 20b --device cuda --weights mxfp4 --input-lens 8192 --repeats 1)
  timeout 150 ncu --clock-control none --section SourceCounters --section WarpStateStats --warp-sampling-interval 0 \
    -k regex:gemm_w4a8 -s 0 -c 1 -f -o /tmp/w4a8src build/gossamer "${prefill[@]}" > "$out/ncu.log" 2>&1
  ncu --import /tmp/w4a8src.ncu-rep --page source --csv --print-source sass > "$out/src_w4a8.csv" 2>&1
  echo "== ncu source: $(grep -c . "$out/src_w4a8.csv") lines"
fi
cd "$out" && tar cf logs.tar *.log 2>/dev/null && rm -f kern.log model_gpu.log engine_gpu.log prep.log
