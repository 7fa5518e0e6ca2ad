#!/usr/bin/env bash
# On the GPU machine: the cuda model's correctness suite and benchmarks in one call.
#  1. goldens from transformers (tools/golden_logits.py): the conditioned tiny checkpoint (2 × 200 tokens,
#     every position; copied to $OUT/golden to be committed) and a 20b-shaped one (20b-2layers, 2 × 3000
#     tokens, 40 positions each) made in float32 on the CPU (GOLDEN_DEVICE=cuda for the GPU);
#  2. tests/model_gpu against them (fp8 and bf16 weights, CUDA graphs on and off);
#  3. `gossamer bench decode` and `bench prefill` on dummy 20b weights (PLOTS/PHASES below).
# Expects carry/bin/{gossamer,gossamer_model_gpu_tests}. Usage: bench/run_model_gpu.sh [phases]
# phases: any of golden tests decode prefill (default: all). Logs go to $OUT (default /tmp/gossamer-model).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/gossamer-model}
phases=${1:-"golden tests decode prefill"}
bin=carry/bin
mkdir -p "$out/golden"
export GOSSAMER_TEST_DATA_DIR=$PWD/tests/data
work=/tmp/gossamer-golden
mkdir -p "$work"
has() { [[ " $phases " == *" $1 "* ]]; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee "$out/gpu.txt"
echo "commit ${GOSSAMER_COMMIT:-unknown}" | tee -a "$out/gpu.txt"

if has golden; then
  echo "== goldens =="
  "$bin/gossamer" make-dummy --preset tiny --init conditioned --seed 0 --out "$work/tiny_conditioned" > /dev/null
  python3 tools/golden_logits.py --case tiny_conditioned --checkpoint "$work/tiny_conditioned" --batch 2 --length 200 \
    --seed 1 --out tests/data/golden 2>&1 | tail -3
  cp tests/data/golden/tiny_conditioned_* "$out/golden/"
  "$bin/gossamer" make-dummy --preset 20b-2layers --init conditioned --seed 0 --out "$work/shaped20b/checkpoint" > /dev/null
  time python3 tools/golden_logits.py --case shaped20b --checkpoint "$work/shaped20b/checkpoint" --batch 2 --length 3000 \
    --rows 40 --seed 7 --device "${GOLDEN_DEVICE:-cpu}" --out "$work/shaped20b" 2>&1 | tail -3
  cp "$work"/shaped20b/shaped20b_* "$out/golden/"
fi

if has tests; then
  echo "== tests/model_gpu =="
  GOSSAMER_GOLDEN_20B=$work/shaped20b timeout 500 "$bin/gossamer_model_gpu_tests" --gtest_color=no > "$out/model_gpu.log" 2>&1
  echo "model_gpu exit: $?"
  grep -E '^\[ +(OK|FAILED|SKIPPED) +\]|\[cuda golden\]|\[cuda graphs\]|Failure|Expected|Which is|what\(\)' "$out/model_gpu.log" | head -60
fi

if has decode; then
  echo "== bench decode (dummy 20b) =="
  timeout 400 "$bin/gossamer" bench decode --load-format dummy --preset 20b --device cuda --batch-sizes 1,2,4,8,16,32,64,128 \
    --contexts 8192,32768 --plot "$out/decode_cost_vs_speed.png" 2>&1 | tee "$out/decode.log" | grep -v "^loading weights"
fi

if has prefill; then
  echo "== bench prefill (dummy 20b) =="
  timeout 300 "$bin/gossamer" bench prefill --load-format dummy --preset 20b --device cuda 2>&1 | tee "$out/prefill.log" |
    grep -v "^loading weights"
fi
