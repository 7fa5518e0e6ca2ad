#!/usr/bin/env bash
# Sets up, builds and runs the whole CPU test suite (CTest). GPU tests skip visibly without a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
build_dir=${GOSSAMER_BUILD_DIR:-build}
ctest --test-dir "$build_dir" --output-on-failure -j "${GOSSAMER_JOBS:-$(nproc)}" --timeout 900
