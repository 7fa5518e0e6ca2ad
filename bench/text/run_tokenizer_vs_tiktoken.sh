#!/usr/bin/env bash
# Tokenizer throughput: gossamer vs tiktoken's Rust core (the Python package, `encode_ordinary`), one thread
# each, on the same corpus files (tokenizer_corpora.h: multilingual, english, code, cjk, mixed), in one call.
# Needs the repository, a build directory with gossamer_tokenizer_bench, and python3 with `tiktoken`; no
# network (the encoding is built from node_modules/tiktoken/encoders/o200k_base.json, as gossamer's is).
# Prints one table of MB/s with the ratio and whether the ids are identical (a checksum of every id), where
# gossamer's time goes, and the parallel encode of a 0.5 MB prompt.
#   bash bench/text/run_tokenizer_vs_tiktoken.sh [build-dir] [seconds] [MB per corpus] [threads]
set -euo pipefail
cd "$(dirname "$0")/../.."
build_dir=${1:-${GOSSAMER_BUILD_DIR:-build}}
seconds=${2:-3}
mb=${3:-2}
threads=${4:-$(( $(nproc) < 8 ? $(nproc) : 8 ))}
bench="$build_dir/gossamer_tokenizer_bench"
ranks=${GOSSAMER_TIKTOKEN_JSON:-node_modules/tiktoken/encoders/o200k_base.json}
[ -x "$bench" ] || { echo "missing $bench: cmake --build $build_dir --target gossamer_tokenizer_bench" >&2; exit 1; }
[ -f "$ranks" ] || { echo "missing $ranks: run bash scripts/setup.sh or set GOSSAMER_TIKTOKEN_JSON" >&2; exit 1; }
python3 -c 'import tiktoken' || { echo "python3 lacks the tiktoken package" >&2; exit 1; }

dir=$(mktemp -d /tmp/gossamer_tokenizer_corpora.XXXXXX)
trap 'rm -rf "$dir"' EXIT
"$bench" --corpus all --mb "$mb" --seconds "$seconds" --write-corpus "$dir" > "$dir/gossamer.jsonl"
mkdir "$dir/prompt"
"$bench" --corpus multilingual --mb 0.5 --seconds "$seconds" --threads "$threads" --write-corpus "$dir/prompt" \
  > "$dir/prompt.jsonl"
python3 bench/text/tiktoken_bench.py "$ranks" "$seconds" "$dir"/{multilingual,english,code,cjk,mixed}.txt \
  "$dir/prompt/multilingual.txt" > "$dir/tiktoken.jsonl"

python3 - "$dir" "$threads" <<'EOF'
import json, os, sys
d, threads = sys.argv[1], sys.argv[2]
ours = [json.loads(l) for l in open(os.path.join(d, 'gossamer.jsonl'))]
theirs = [json.loads(l) for l in open(os.path.join(d, 'tiktoken.jsonl'))]
prompt = json.loads(open(os.path.join(d, 'prompt.jsonl')).read())
ok = True
print(f"{'corpus':<13} {'MB':>5} {'tokens':>9} {'gossamer MB/s':>14} {'tiktoken MB/s':>14} {'ratio':>6}  ids")
for o, t in zip(ours, theirs):
    same = o['ids_fnv1a'] == t['ids_fnv1a'] and o['tokens'] == t['tokens'] and o['bytes'] == t['bytes']
    ok &= same
    print(f"{o['corpus']:<13} {o['bytes'] / 1e6:5.2f} {o['tokens']:9d} {o['encode_mb_per_s']:14.1f} "
          f"{t['mb_per_s']:14.1f} {o['encode_mb_per_s'] / t['mb_per_s']:5.2f}x  {'identical' if same else 'DIFFER'}")
print('(one thread each, best run by wall clock; CPU-time MB/s: ' +
      ', '.join(f"{o['corpus']} {o['encode_cpu_mb_per_s']:.1f} vs {t['cpu_mb_per_s']:.1f}" for o, t in zip(ours, theirs)) + ')')
print()
print(f"{'where gossamer goes (ms)':<25} {'encode':>8} {'scan':>8} {'+lookups':>9} {'merges':>8} {'json out':>9} {'PCRE2 scan':>11}")
for o in ours:
    m = o['ms']
    print(f"{o['corpus']:<25} {m['encode']:8.2f} {m['scan']:8.2f} {m['scan_plus_lookup'] - m['scan']:9.2f} "
          f"{m['encode'] - m['scan_plus_lookup']:8.2f} {m['json_output']:9.2f} {m['pcre2_scan']:11.2f}")
print()
t = theirs[-1]
same = prompt['ids_fnv1a'] == t['ids_fnv1a']
ok &= same
print(f"0.5 MB multilingual prompt ({prompt['bytes']} bytes): gossamer {prompt['ms']['encode']:.2f} ms on one thread, "
      f"{prompt['threaded_ms']:.2f} ms on {threads} threads; tiktoken {prompt['bytes'] / t['mb_per_s'] / 1e3:.2f} ms "
      f"on one; ids {'identical' if same else 'DIFFER'}")
sys.exit(0 if ok else 1)
EOF
