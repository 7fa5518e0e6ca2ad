#!/usr/bin/env bash
# Configures and builds gossamer into ./build (Release; CUDA for sm_90a when nvcc is found).
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${GOSSAMER_BUILD_DIR:-build}
jobs=${GOSSAMER_JOBS:-$(nproc)}
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release "$@"
cmake --build "$build_dir" -j "$jobs"
