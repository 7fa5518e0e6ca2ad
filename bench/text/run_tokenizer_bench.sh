#!/usr/bin/env bash
# Tokenizer throughput: gossamer vs the npm `tiktoken` package (OpenAI's Rust core as WASM) on the same
# ~1.5 MB mixed corpus, in the same run. Prints both MB/s and the ratio, by wall time and by process CPU time
# (the CPU figures are the steadier ones when other jobs share the cores).
#   bash bench/text/run_tokenizer_bench.sh [build-dir] [seconds]
set -euo pipefail
cd "$(dirname "$0")/../.."
build_dir=${1:-${GOSSAMER_BUILD_DIR:-build}}
seconds=${2:-3}
bench="$build_dir/gossamer_tokenizer_bench"
[ -x "$bench" ] || { echo "missing $bench: cmake --build $build_dir --target gossamer_tokenizer_bench" >&2; exit 1; }
command -v node >/dev/null || { echo "node not found: run bash scripts/setup.sh" >&2; exit 1; }

corpus=$(mktemp /tmp/gossamer_tokenizer_corpus.XXXXXX)
trap 'rm -f "$corpus"' EXIT
ours=$("$bench" --write-corpus "$corpus" --seconds "$seconds")
theirs=$(node tools/tiktoken_reference.mjs --bench "$corpus" --seconds "$seconds")
echo "gossamer: $ours"
echo "tiktoken: $theirs"
node -e '
const ours = JSON.parse(process.argv[1]), theirs = JSON.parse(process.argv[2]);
if (ours.tokens !== theirs.tokens) { console.error(`token counts differ: ${ours.tokens} vs ${theirs.tokens}`); process.exit(1); }
console.log(`corpus ${(ours.bytes / 1e6).toFixed(2)} MB, ${ours.tokens} tokens (equal counts)`);
console.log(`encode (wall): gossamer ${ours.encode_mb_per_s.toFixed(1)} MB/s, npm tiktoken ${theirs.mb_per_s.toFixed(1)} MB/s, ratio ${(ours.encode_mb_per_s / theirs.mb_per_s).toFixed(2)}x`);
console.log(`encode (CPU): gossamer ${ours.encode_cpu_mb_per_s.toFixed(1)} MB/s, npm tiktoken ${theirs.cpu_mb_per_s.toFixed(1)} MB/s, ratio ${(ours.encode_cpu_mb_per_s / theirs.cpu_mb_per_s).toFixed(2)}x`);
console.log(`gossamer pre-tokenizer alone ${ours.pretokenize_mb_per_s.toFixed(1)} MB/s wall, ${ours.pretokenize_cpu_mb_per_s.toFixed(1)} MB/s CPU; decode ${ours.decode_mb_per_s.toFixed(0)} MB/s wall`);
' "$ours" "$theirs"
