#!/usr/bin/env bash
# One device call for the W4A8 candidate (branch candidate/w4a8): its tests, the MoE rows, 20b / 120b mxfp4 prefill
# with and without --moe-mxfp4-w4a8. Carry carry/valfull (packed from the branch's build).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/w4a8}
rm -rf carry/val
bash bench/run_validation_h200.sh prep > "$out/prep.log" 2>&1
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/carry/val/lib
(timeout 240 build/tests/gossamer_kernels_tests --gtest_color=no \
  --gtest_filter='GemmW4A8Kernel.*:MoeKernel.Mxfp4*:GemmW4A16Kernel.*:*DeferredCombine*' > "$out/kern.log" 2>&1
 echo "kernels exit $?") &
(timeout 240 build/tests/gossamer_model_gpu_tests --gtest_color=no --gtest_filter='*Mxfp4*' > "$out/model.log" 2>&1
 echo "model exit $?") &
wait
grep -E '^\[  (PASSED|FAILED) |FAILED  \]|\[relerr\] .*w4a8|W4A8 experts' "$out/kern.log" "$out/model.log" | head -40
grep -B3 -A12 'Failure' "$out/kern.log" "$out/model.log" | head -60
echo "== moe-mxfp4 ($(date +%T))"
timeout 200 build/bench/kernels/gossamer_kernels_bench moe-mxfp4 2>&1 | grep '^| moe' | cut -d'|' -f2-5
for preset in 20b 120b; do
  lens="2048 4096 8192"
  for flags in "--weights fp8" "--weights mxfp4" "--weights mxfp4 --moe-mxfp4-w4a8"; do
    [ "$preset $flags" = "120b --weights fp8" ] && continue  # 109 GiB: not on an 80 GB part
    echo "== prefill $preset $flags ($(date +%T))"
    timeout 100 build/gossamer bench prefill --load-format dummy --preset $preset --device cuda --input-lens $lens \
      --repeats 2 $flags 2>&1 | grep -E 'dummy|rror' | head -6
  done
done
