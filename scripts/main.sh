#!/usr/bin/env bash
# Sets up, builds and runs gossamer's main job. With no arguments it runs on the embedded default
# (a small random-weight gpt-oss-architecture model on the CPU); pass a model directory to use real weights.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh >/dev/null
build_dir=${GOSSAMER_BUILD_DIR:-build}
if [ $# -eq 0 ]; then
  model_dir="$build_dir/tiny-model"
  [ -f "$model_dir/config.json" ] || "$build_dir/gossamer" make-dummy --preset tiny --out "$model_dir"
  exec "$build_dir/gossamer" generate --model "$model_dir" --prompt-tokens 200006,17360,200008 --max-tokens 16
fi
exec "$build_dir/gossamer" generate --model "$1" "${@:2}"
