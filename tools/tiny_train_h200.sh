#!/usr/bin/env bash
# The one device call that trains the embedded tiny model (docs/tiny-model.md), on one H200: reads
# carry/tiny (tools/tiny_carry.sh made it here), trains with tools/tiny_train.py from the shipped checkpoint
# (TINY_INIT=scratch: from random weights), exports, evaluates held-out accuracy by domain and writes into
# $OUT: config.json, model.safetensors.gz, metrics.json, loss.png, golden.json, golden_logits.npy, train.log
# (7 files: the device returns at most 8). Everything is written by about 500 s (--deadline), so the
# call fits in 9 minutes. Install the result here with: bash tools/tiny_install.sh OUT
#   run: bash tools/tiny_train_h200.sh      carry: ["carry/tiny"]      timeout_s: 540
# Dry runs elsewhere (tools/tiny_dryrun/run.sh) set PYTHON, TINY_CARRY, TINY_DEADLINE and TINY_EXTRA (more
# arguments for tiny_train.py); the device call sets none of them.
set -uo pipefail
cd "$(dirname "$0")/.."
c=${TINY_CARRY:-carry/tiny}
out=${OUT:-/tmp/tiny-train-out}
mkdir -p "$out"
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0
for f in corpus.bin.gz corpus.domains.gz; do
  [ -f "$c/$f" ] || { echo "tiny_train_h200: $c/$f is missing (bash tools/tiny_carry.sh, then carry carry/tiny)"; exit 1; }
done
! command -v nvidia-smi > /dev/null || nvidia-smi --query-gpu=name,driver_version,memory.used --format=csv,noheader
args=(--corpus "$c/corpus.bin.gz" --out "$out" --deadline "${TINY_DEADLINE:-495}" --reserve 115
      --train-seconds 1000 --tokens-per-batch 32768 --eval-limit 400 --train-eval 200)
if [ "${TINY_INIT:-checkpoint}" = scratch ]; then
  args+=(--lr 3e-3 --warmup 100 --qat-from 0.6)
else
  [ -f "$c/init.safetensors.gz" ] || { echo "tiny_train_h200: $c/init.safetensors.gz is missing"; exit 1; }
  args+=(--init "$c/init.safetensors.gz" --lr 2e-3 --warmup 50 --qat-from 0)
fi
# shellcheck disable=SC2086  # TINY_EXTRA is a list of words
${PYTHON:-python3} tools/tiny_train.py "${args[@]}" ${TINY_EXTRA:-} 2>&1 | tee "$out/train.log"
status=${PIPESTATUS[0]}
ls -l "$out"
exit "$status"
