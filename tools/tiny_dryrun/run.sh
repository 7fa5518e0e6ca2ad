#!/usr/bin/env bash
# Dry run, on a CPU without transformers, of the device call tools/tiny_train_h200.sh (docs/tiny-model.md):
#   1. the stand-in model (tools/tiny_dryrun/transformers) against the transformers float32 goldens of the
#      shipped checkpoint (skip with SKIP_GOLDEN_CHECK=1: about 4 minutes on 2 busy cores);
#   2. a small carry (tools/tiny_carry.sh, 2,000 conversations) in a scratch folder;
#   3. tools/tiny_train_h200.sh itself on it: a few steps from the shipped checkpoint, export, goldens,
#      evaluation, loss curve;
#   4. the exported checkpoint through gossamer's CPU backend (build/gossamer generate): its greedy
#      generations must be the stand-in's.
# Needs Debian's python3-torch and python3-numpy (apt-get install python3-torch python3-numpy) and a build.
# Usage: bash tools/tiny_dryrun/run.sh [SCRATCH_DIR]
set -euo pipefail
cd "$(dirname "$0")/../.."
py=${PYTHON:-/usr/bin/python3}
tmp=${1:-$(mktemp -d)}
mkdir -p "$tmp"
export PYTHONPATH=$PWD/tools/tiny_dryrun:$PWD/tools
"$py" -c 'import torch, numpy' || { echo "dry run: $py needs torch and numpy (apt-get install python3-torch python3-numpy)"; exit 1; }
if [ "${SKIP_GOLDEN_CHECK:-0}" != 1 ]; then
  mkdir -p "$tmp/shipped"
  zstd -q -dc models/tiny/model.safetensors.zst > "$tmp/shipped/model.safetensors"
  cp models/tiny/config.json "$tmp/shipped/"
  "$py" tools/tiny_dryrun/check_goldens.py "$tmp/shipped" tests/data/golden/tiny_trained.json \
    tests/data/golden/tiny_trained_logits.npy
fi
TINY_TRAIN=${TINY_TRAIN:-2000} TINY_CARRY=$tmp/carry bash tools/tiny_carry.sh build
OUT=$tmp/out PYTHON=$py TINY_CARRY=$tmp/carry TINY_DEADLINE=100000 \
  TINY_EXTRA="--max-steps ${TINY_STEPS:-4} --tokens-per-batch 4096 --eval-limit 6 --train-eval 2 --samples 6 --golden-greedy 4" \
  bash tools/tiny_train_h200.sh
n=$(find "$tmp/out" -type f | wc -l)
[ "$n" -le 8 ] || { echo "dry run: $n files in OUT, the device returns at most 8"; exit 1; }
mkdir -p "$tmp/model"
gzip -dc "$tmp/out/model.safetensors.gz" > "$tmp/model/model.safetensors"
cp "$tmp/out/config.json" "$tmp/model/"
"$py" - "$tmp/out/golden.json" "$tmp/model" <<'PY'
import json, subprocess, sys
golden = json.load(open(sys.argv[1]))
bad = 0
for case in golden["greedy"][:4]:
    run = subprocess.run(["build/gossamer", "generate", "--model", sys.argv[2], "--device", "cpu",
                          "--prompt-tokens", ",".join(map(str, case["prompt"])),
                          "--max-tokens", str(len(case["completion"]))], capture_output=True, text=True, check=True)
    ids = json.loads(run.stdout.strip().splitlines()[-1])["generated_tokens"]
    ok = ids[:len(case["completion"])] == case["completion"]
    bad += not ok
    print(f"{case['domain']:16s} gossamer cpu greedy {'==' if ok else '!='} stand-in greedy ({len(case['completion'])} ids)")
sys.exit(1 if bad else 0)
PY
echo "dry run passed: $tmp"
