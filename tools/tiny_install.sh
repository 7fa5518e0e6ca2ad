#!/usr/bin/env bash
# Installs the outputs of tools/tiny_train.py (an OUT folder fetched from the GPU machine) as the embedded
# default: models/tiny/{config.json, model.safetensors.zst}, the goldens tests/data/golden/tiny_trained*
# (4 greedy cases) and the loss curve docs/img/tiny-model-loss.png. Then rebuild, run
# `ctest -R 'TinyModel|TinyCorpus'` and update docs/tiny-model.md (accuracy: OUT/metrics.json) and, where
# the new model answers differently, the expected answers of tests/server/tiny_model_e2e*.
# Usage: bash tools/tiny_install.sh OUT
set -euo pipefail
out=${1:?usage: tiny_install.sh OUT (the folder tools/tiny_train.py wrote)}
cd "$(dirname "$0")/.."
for f in config.json model.safetensors.gz golden.json golden_logits.npy metrics.json; do
  [ -f "$out/$f" ] || { echo "tiny_install: $out/$f is missing" >&2; exit 1; }
done
install -m 644 "$out/config.json" models/tiny/config.json
gzip -dc "$out/model.safetensors.gz" | zstd -q -19 -f -o models/tiny/model.safetensors.zst
install -m 644 "$out/golden_logits.npy" tests/data/golden/tiny_trained_logits.npy
python3 - "$out/golden.json" tests/data/golden/tiny_trained.json <<'PY'
import json, sys
golden = json.load(open(sys.argv[1]))
golden["greedy"] = golden["greedy"][:4]  # CI time: about 5 s each on 2 cores
json.dump(golden, open(sys.argv[2], "w"))
PY
[ -f "$out/loss.png" ] && install -m 644 "$out/loss.png" docs/img/tiny-model-loss.png
python3 -c "
import json, sys
m = json.load(open(sys.argv[1]))
print('held-out:', json.dumps(m.get('heldout', {}).get('overall')), ' train split:', json.dumps(m.get('train_accuracy', {}).get('overall')))
print('steps', m.get('steps'), 'epochs', m.get('epochs'), 'tokens', m.get('tokens'), 'used rows', m.get('used_rows'))
print()
print('| domain | n | answer | exact |')
print('|---|---|---|---|')
rows = sorted(m.get('heldout', {}).get('by_domain', {}).items(), key=lambda kv: (-kv[1]['answer'], kv[0]))
for d, v in rows:
    print(f\"| {d} | {v['n']} | {v['answer']:.0%} | {v['exact']:.0%} |\")
o = m.get('heldout', {}).get('overall')
if o:
    print(f\"| **all** | {o['n']} | **{o['answer']:.1%}** | **{o['exact']:.1%}** |\")
" "$out/metrics.json"
ls -l models/tiny/model.safetensors.zst
