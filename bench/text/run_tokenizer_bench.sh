#!/usr/bin/env bash
# Tokenizer throughput: gossamer vs the npm `tiktoken` package (OpenAI's Rust core as WASM) on the same
# corpora (tokenizer_corpora.h), in the same run. Prints MB/s and the ratio per corpus, by wall time and by
# process CPU time (the CPU figures are the steadier ones when other jobs share the cores).
# run_tokenizer_vs_tiktoken.sh does the same against tiktoken's native Rust core (the Python package).
#   bash bench/text/run_tokenizer_bench.sh [build-dir] [seconds] [MB per corpus]
set -euo pipefail
cd "$(dirname "$0")/../.."
build_dir=${1:-${GOSSAMER_BUILD_DIR:-build}}
seconds=${2:-3}
mb=${3:-1.5}
bench="$build_dir/gossamer_tokenizer_bench"
[ -x "$bench" ] || { echo "missing $bench: cmake --build $build_dir --target gossamer_tokenizer_bench" >&2; exit 1; }
command -v node >/dev/null || { echo "node not found: run bash scripts/setup.sh" >&2; exit 1; }

dir=$(mktemp -d /tmp/gossamer_tokenizer_corpora.XXXXXX)
trap 'rm -rf "$dir"' EXIT
"$bench" --corpus all --mb "$mb" --seconds "$seconds" --encode-only --write-corpus "$dir" > "$dir/gossamer.jsonl"
for name in multilingual english code cjk mixed; do
  node tools/tiktoken_reference.mjs --bench "$dir/$name.txt" --seconds "$seconds"
done > "$dir/npm.jsonl"
node -e '
const fs = require("fs");
const read = (f) => fs.readFileSync(f, "utf8").trim().split("\n").map((l) => JSON.parse(l));
const ours = read(process.argv[1]), theirs = read(process.argv[2]);
let ok = true;
console.log("corpus        MB    gossamer MB/s (wall / CPU)  npm tiktoken MB/s (wall / CPU)  ratio (wall / CPU)");
ours.forEach((o, i) => {
  const t = theirs[i];
  if (o.tokens !== t.tokens) { ok = false; console.error(`${o.corpus}: token counts differ: ${o.tokens} vs ${t.tokens}`); }
  console.log(`${o.corpus.padEnd(12)} ${(o.bytes / 1e6).toFixed(2)}  ${o.encode_mb_per_s.toFixed(1).padStart(10)} / ${o.encode_cpu_mb_per_s.toFixed(1).padEnd(14)}` +
              `${t.mb_per_s.toFixed(1).padStart(10)} / ${t.cpu_mb_per_s.toFixed(1).padEnd(18)}` +
              `${(o.encode_mb_per_s / t.mb_per_s).toFixed(1)}x / ${(o.encode_cpu_mb_per_s / t.cpu_mb_per_s).toFixed(1)}x`);
});
process.exit(ok ? 0 : 1);
' "$dir/gossamer.jsonl" "$dir/npm.jsonl"
