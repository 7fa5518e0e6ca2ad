#!/usr/bin/env bash
# On the GPU machine: `gossamer serve` with dummy gpt-oss-20b weights on the H200, the official `openai`
# npm client's conformance checks against it, then `gossamer bench serve`. Expects, under carry/:
#   bin/gossamer, serve/node.xz (a node binary), serve/openai.tar.xz (node_modules/openai),
#   serve/o200k_base.json (npm tiktoken's ranks). Logs go to $OUT (or ./serve-logs).
# Environment: PRESET (20b), SERVE_ARGS (extra `gossamer serve` flags, e.g. --host-sampling for an A/B),
# SDK=0 skips the openai client's checks.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-serve-logs}
mkdir -p "$out" /tmp/nodebin node_modules/tiktoken/encoders
xz -dc carry/serve/node.xz > /tmp/nodebin/node && chmod +x /tmp/nodebin/node
export PATH=/tmp/nodebin:$PATH
tar xJf carry/serve/openai.tar.xz -C node_modules
cp carry/serve/o200k_base.json node_modules/tiktoken/encoders/
port=8000
carry/bin/gossamer serve --load-format dummy --preset "${PRESET:-20b}" --device cuda --port $port --api-key sdk-key \
  --max-num-seqs 64 --kv-cache-memory-bytes $((24 << 30)) ${SERVE_ARGS:-} > "$out/serve.log" 2>&1 &
server=$!
for _ in $(seq 1 180); do
  [ "$(curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:$port/health)" = 200 ] && break
  sleep 1
done
curl -s http://127.0.0.1:$port/health; echo
if [ "${SDK:-1}" != 0 ]; then
  GOSSAMER_BASE_URL=http://127.0.0.1:$port/v1 GOSSAMER_API_KEY=sdk-key GOSSAMER_MODE=embedded \
    timeout 180 node tests/server/openai_sdk_test.mjs 2>&1 | tee "$out/sdk.log"
  echo "sdk exit: ${PIPESTATUS[0]}"
fi
OPENAI_API_KEY=sdk-key timeout 200 carry/bin/gossamer bench serve --port $port --num-prompts 256 --random-input-len 1024 \
  --random-output-len 128 --max-concurrency 64 --ignore-eos --seed 1 --save-result \
  --result-filename "$out/bench_serve.json" 2>&1 | tee "$out/bench_serve.log"
kill -TERM $server; wait $server; echo "serve exit: $?"
tail -5 "$out/serve.log"
