#!/usr/bin/env bash
# One device call for the W4A8 MXFP4 expert GEMMs (thirty-first session, call 4): the ring depth A/B
# (GOSSAMER_W4A8_RING = 3 / 4 / 5 stages; the epilogue in 1 / 2 / 4 passes): tests at each, the MoE rows, 20b / 120b
# mxfp4 prefill. Carry carry/valfull (packed from the build under test).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/w4a8}
mkdir -p "$out"
rm -rf carry/val
bash bench/run_validation_h200.sh prep > "$out/prep.log" 2>&1
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$PWD/carry/val/lib
for ring in 3 4 5; do
  (GOSSAMER_W4A8_RING=$ring timeout 300 build/tests/gossamer_kernels_tests --gtest_color=no \
    --gtest_filter='GemmW4A8Kernel.*:MoeKernel.Mxfp4W4A8*' > "$out/kern_$ring.log" 2>&1
   echo "kernels ring $ring exit $?") &
done
(GOSSAMER_W4A8_RING=4 timeout 300 build/tests/gossamer_model_gpu_tests --gtest_color=no --gtest_filter='*Mxfp4*' \
  > "$out/model_gpu.log" 2>&1; echo "model_gpu ring 4 exit $?") &
wait
grep -hE '^\[  (PASSED|FAILED) |FAILED  \]' "$out"/kern_*.log "$out/model_gpu.log" | head -20
grep -h -B3 -A12 'Failure' "$out"/kern_*.log "$out/model_gpu.log" | head -40
for round in 1 2; do
  for ring in 3 4 5; do
    echo "== moe-mxfp4 w4a8 ring $ring round $round ($(date +%T))"
    GOSSAMER_W4A8_RING=$ring timeout 200 build/bench/kernels/gossamer_kernels_bench moe-mxfp4 2>&1 |
      grep '^| moe mxfp4 w4a8' | cut -d'|' -f3-5 | tr '\n' ';'
    echo
  done
done
for ring in 3 4 5; do
  for preset in 20b 120b; do
    echo "== prefill $preset mxfp4 ring $ring ($(date +%T))"
    GOSSAMER_W4A8_RING=$ring timeout 100 build/gossamer bench prefill --load-format dummy --preset $preset \
      --device cuda --input-lens 2048 4096 8192 16384 --repeats 2 --weights mxfp4 2>&1 | grep -E '\| dummy|rror' | head -6
  done
done
echo "== prefill 20b fp8 ($(date +%T))"
timeout 100 build/gossamer bench prefill --load-format dummy --preset 20b --device cuda --input-lens 2048 4096 8192 16384 \
  --repeats 2 --weights fp8 2>&1 | grep -E '\| dummy|rror' | head -6
cd "$out" && tar cf logs.tar *.log 2>/dev/null && rm -f kern_*.log model_gpu.log prep.log
