#!/usr/bin/env bash
# Fails when a C++/CUDA file in the tree differs from what the root .clang-format makes of it.
# Pinned to Debian bookworm's clang-format 14 (package clang-format-14, installed by scripts/setup.sh):
# other versions format some constructs differently. `scripts/check_format.sh --fix` rewrites the files.
set -euo pipefail
cd "$(dirname "$0")/.."

clang_format=${GOSSAMER_CLANG_FORMAT:-clang-format-14}
if ! command -v "$clang_format" >/dev/null 2>&1; then
  echo "check_format: $clang_format not found (bash scripts/setup.sh installs it)"
  exit 1
fi
version=$("$clang_format" --version)
[[ $version == *"version 14."* ]] || { echo "check_format: need clang-format 14, got: $version"; exit 1; }

mapfile -t files < <(git ls-files -- 'apps/*' 'src/*' 'tests/*' 'bench/*' 'tools/*' |
                     grep -E '\.(h|hpp|cpp|cc|cu|cuh)$' || true)
[ ${#files[@]} -gt 0 ] || { echo "check_format: no C++ files found"; exit 1; }
if [ "${1:-}" = "--fix" ]; then
  "$clang_format" -i --style=file "${files[@]}"
  echo "check_format: formatted ${#files[@]} files"
  exit 0
fi
if ! "$clang_format" --dry-run -Werror --style=file "${files[@]}" 2>/tmp/gossamer-check-format.$$; then
  grep -E '^[^ ].*: error:' /tmp/gossamer-check-format.$$ | cut -d: -f1 | sort -u | sed 's/^/not formatted: /'
  echo "check_format: $(grep -cE ': error:' /tmp/gossamer-check-format.$$) difference(s); run scripts/check_format.sh --fix"
  rm -f /tmp/gossamer-check-format.$$
  exit 1
fi
rm -f /tmp/gossamer-check-format.$$
echo "check_format: ${#files[@]} files match .clang-format (clang-format 14)"
