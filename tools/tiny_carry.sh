#!/usr/bin/env bash
# Prepares carry/tiny for the one device call of tools/tiny_train_h200.sh (docs/tiny-model.md): the
# corpus (tools/tiny_corpus.py, rendered by build/tools/tiny_render, gzip'd) and the shipped checkpoint
# gzip'd as the starting point (the device has no zstd to read models/tiny). carry/ is ignored by git; the
# device call names it in `carry`. About 25 MB; the working tree that travels (tracked files, 26 MB, plus
# carried paths) must stay under 64 MiB.
# Usage: bash tools/tiny_carry.sh [BUILD_DIR]   (TINY_TRAIN, TINY_SEED: corpus size and seed; TINY_CARRY:
# another folder, for dry runs)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
train=${TINY_TRAIN:-240000}
seed=${TINY_SEED:-1}
render=$build/tools/tiny_render
[ -x "$render" ] || ninja -C "$build" tiny_render
dir=${TINY_CARRY:-carry/tiny}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$dir"
python3 tools/tiny_corpus.py --seed "$seed" --train "$train" --eval 400 --out "$tmp/corpus.jsonl" --stats
"$render" "$tmp/corpus.jsonl" "$tmp/corpus.bin"
gzip -6 -c "$tmp/corpus.bin" > "$dir/corpus.bin.gz"
gzip -6 -c "$tmp/corpus.bin.domains" > "$dir/corpus.domains.gz"
zstd -q -dc models/tiny/model.safetensors.zst | gzip -6 > "$dir/init.safetensors.gz"
cp models/tiny/config.json "$dir/init.config.json"
sha256sum "$tmp/corpus.jsonl" | sed "s|$tmp/||" > "$dir/corpus.sha256"
du -ch "$dir"/* | tail -1
ls -l "$dir"
