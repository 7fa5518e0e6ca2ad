#!/usr/bin/env bash
# Builds a branch's gossamer, kernels bench and kernel tests in a worktree at /work/<name> (name: the branch without
# its "candidate/" or "exp/" prefix) and packs them, stripped and zstd, into carry/variants/<name>/ for
# `bench/run_validation_h200.sh variants` (which links /work/<name> to the device's checkout), with the branch's
# bench/variant/ files (the bench section, rows and environments to run it with) if it has them.
#   bash bench/pack_variant.sh BRANCH [TARGET...]   (targets: default gossamer gossamer_kernels_bench
#                                                    tests/gossamer_kernels_tests)
set -euo pipefail
cd "$(dirname "$0")/.."
branch=$1
shift
name=${branch#candidate/}
name=${name#exp/}
tree=/work/$name
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(gossamer gossamer_kernels_bench tests/gossamer_kernels_tests)
[ -L "$tree" ] && rm "$tree"  # a link left by a local run of run_validation_h200.sh variants
[ -d "$tree" ] || git worktree add -f "$tree" "$branch"
git -C "$tree" checkout -q "$branch"
cmake -S "$tree" -B "$tree/build" -G Ninja -DCMAKE_BUILD_TYPE=Release > /dev/null
log="$tree/build/build.log"
cmake --build "$tree/build" -j "$(nproc)" --target "${targets[@]}" 2>&1 | tee "$log" | tail -1
if grep -q "Potential Performance Loss" "$log"; then
  echo "pack_variant: ptxas serialized wgmma in $branch (see $log)" >&2
  exit 1
fi
mkdir -p "carry/variants/$name"
for target in "${targets[@]}"; do
  binary=$(find "$tree/build" -name "$(basename "$target")" -type f -perm -u+x | head -1)
  strip -o "/tmp/pack_variant_$name" "$binary"
  zstd -q -19 -T0 -f "/tmp/pack_variant_$name" -o "carry/variants/$name/$(basename "$target").zst"
done
rm -f "/tmp/pack_variant_$name"
# An experiment's bench switches (run_validation_h200.sh variants: section, rows, envs), if the branch has them.
[ -d "$tree/bench/variant" ] && cp "$tree"/bench/variant/* "carry/variants/$name/"
du -sh "carry/variants/$name"
