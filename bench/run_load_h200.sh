#!/usr/bin/env bash
# On the GPU machine, after bench/run_validation_h200.sh has put the binaries in place: throughput at
# load (#14), prefix caching and constrained decoding (#16) with dummy 20b weights (GOSSAMER_LIB_DIR: the
# carried chart libraries). A short concurrency sweep (1000 in / 200 out), the multi-turn workload with and without prefix caching, then batch 64 with every
# request under response_format json_object against none (alternating pairs). Logs go to $OUT.
#   bash bench/run_load_h200.sh   (carry node_modules/tiktoken/encoders/o200k_base.json; SWEEP=64,256 picks the
#   concurrencies, OUTLEN the output length, PPC the prompts per concurrency (2), PRESET the model (20b), SERVE_FLAGS extra serve flags for
#   every server (e.g. --weights fp8), MULTITURN=none skips the prefix-caching pair, CONSTRAINED=none the constrained pairs)
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/gossamer-load}
mkdir -p "$out"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}:${GOSSAMER_LIB_DIR:-$PWD/carry/val/lib}
ranks=node_modules/tiktoken/encoders/o200k_base.json  # the load generator tokenizes its prompts
[ -f "$ranks" ] || [ -n "${GOSSAMER_TIKTOKEN_JSON:-}" ] || { echo "run_load_h200: carry $ranks"; exit 1; }
port=8000
serve() {  # serve LOGNAME FLAGS...: start the server and wait for /health (give up if it exits)
  local log=$1; shift
  build/gossamer serve --load-format dummy --preset ${PRESET:-20b} --device cuda --port $port ${SERVE_FLAGS:-} "$@" > "$out/$log" 2>&1 &
  server=$!
  for _ in $(seq 1 180); do
    [ "$(curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:$port/health)" = 200 ] && return
    kill -0 $server 2> /dev/null || { echo "server exited:"; tail -5 "$out/$log"; return 1; }
    sleep 1
  done
}
stop() { kill -TERM $server; wait $server; }
echo "== sweep ($(date +%T))"
serve serve_sweep.log --max-num-seqs 1024
timeout ${SWEEP_TIMEOUT:-240} build/gossamer bench serve --port $port --concurrency-sweep ${SWEEP:-64,256,512,1024} \
  --prompts-per-concurrency ${PPC:-2} --random-input-len 1000 --random-output-len ${OUTLEN:-200} --ignore-eos --seed 1 \
  --sweep-json "$out/sweep.json" --sweep-plot "$out/sweep.png" --sweep-label "dummy-${PRESET:-20b}${SERVE_FLAGS:+ $SERVE_FLAGS}" 2>&1 | tail -20
stop
for pc in ${MULTITURN:-enable no-enable}; do
  [ "$pc" = none ] && continue
  echo "== multiturn, --$pc-prefix-caching ($(date +%T))"
  serve serve_mt_$pc.log --max-num-seqs 64 --$pc-prefix-caching
  timeout 120 build/gossamer bench serve --port $port --dataset-name multiturn --num-prompts 32 --multiturn-turns 10 \
    --random-input-len 200 --random-output-len 64 --max-concurrency 32 --ignore-eos --seed 1 2>&1 | tail -14
  curl -s http://127.0.0.1:$port/metrics | grep -E "prefix_cache_(queries|hits)" | head -4
  stop
done
[ "${CONSTRAINED:-json_object}" = none ] && { echo "== done ($(date +%T))"; exit 0; }
echo "== constrained vs unconstrained, batch 64 ($(date +%T))"
serve serve_constrained.log --max-num-seqs 64
for rf in none json_object none json_object; do
  flag=""; [ "$rf" = none ] || flag="--response-format $rf"
  echo "-- response format: $rf"
  timeout 120 build/gossamer bench serve --port $port --num-prompts 128 --random-input-len 256 --random-output-len 128 \
    --max-concurrency 64 --ignore-eos --seed 1 $flag 2>&1 | grep -E "Output token throughput|Mean TPOT|Failed"
done
stop
echo "== done ($(date +%T))"
