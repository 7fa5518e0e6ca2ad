#!/usr/bin/env bash
# One device call for the W4A8 MXFP4 expert GEMMs (thirty-first session): the kernel and model tests, the MoE rows,
# 20b / 120b mxfp4 prefill with and without --moe-mxfp4-w4a8, decode, then ncu on the W4A8 GEMMs. Carry
# carry/valfull (packed from the build under test).
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
grep -hE '^\[  (PASSED|FAILED) |FAILED  \]|\[relerr\] .*w4a8|W4A8 experts|W4A16 experts' "$out/kern.log" \
  "$out/model_gpu.log" "$out/engine_gpu.log" | head -40
grep -h -B3 -A12 'Failure' "$out/kern.log" "$out/model_gpu.log" "$out/engine_gpu.log" | head -40
echo "== moe-mxfp4 ($(date +%T))"
timeout 200 build/bench/kernels/gossamer_kernels_bench moe-mxfp4 2>&1 | grep '^| m' | cut -d'|' -f2-5
for preset in 20b 120b; do
  for flags in "--weights fp8" "--weights mxfp4" "--weights mxfp4 --no-moe-mxfp4-w4a8"; do
    [ "$preset $flags" = "120b --weights fp8" ] && continue  # 109 GiB: not on an 80 GB part
    echo "== prefill $preset $flags ($(date +%T))"
    timeout 100 build/gossamer bench prefill --load-format dummy --preset $preset --device cuda \
      --input-lens 1024 2048 4096 8192 --repeats 2 $flags 2>&1 | grep -E 'dummy|rror' | head -6
  done
done
echo "== decode 20b mxfp4 ($(date +%T))"
timeout 120 build/gossamer bench decode --load-format dummy --preset 20b --device cuda --weights mxfp4 \
  --batch-sizes 1 64 256 --contexts 1024 --steps 32 2>&1 | grep -E 'dummy|rror' | head -6
[ "${W4A8_PROFILE:-1}" = 1 ] && bash bench/run_validation_h200.sh profile-mxfp4 > "$out/profile.log" 2>&1
grep -E '^== |gpu__time|tensor_op_hmma|issue_active|inst_executed.sum|stalled_(wait|barrier|long|short|math|dispatch|selected|not_sel)' \
  "$out/profile.log" 2>/dev/null | head -60
cd "$out" && tar cf logs.tar *.log 2>/dev/null && rm -f kern.log model_gpu.log engine_gpu.log prep.log
