#!/usr/bin/env bash
# Sets up, builds and runs gossamer's main job. With no arguments it serves the OpenAI-compatible API on the
# embedded default (a tiny gpt-oss model trained to speak Harmony, on the CPU: docs/tiny-model.md); pass a model directory to
# run greedy generation on real weights (`gossamer serve DIR` serves them).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh >/dev/null
build_dir=${GOSSAMER_BUILD_DIR:-build}
if [ $# -eq 0 ]; then
  # The OpenAI-compatible server on the embedded default model (CPU), on http://127.0.0.1:8000 (Ctrl-C drains and exits).
  exec "$build_dir/gossamer" serve
fi
exec "$build_dir/gossamer" generate --model "$1" "${@:2}"
