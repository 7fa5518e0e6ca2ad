#!/usr/bin/env bash
# Fails when a file includes a header of a layer it must not know (docs/architecture.md, "The layers").
#
# A quoted include "LAYER/..." names the layer of the header; a file in src/<layer>/ may include its own
# layer and the ones listed for it below (the arrows of the layer map, followed down). bench/<layer>/ and
# tests/<layer>/ may include what src/<layer> may, plus <layer> itself and the test doubles (testing/).
# Includes without a folder ("command.h", "kernel_test_utils.h") are local and always allowed.
set -euo pipefail
cd "$(dirname "$0")/.."

declare -A allowed=(
  [core]=""
  [kernels]="core"
  [comm]="core"
  [model]="kernels comm core"
  [engine]="model kernels comm core"
  [text]="core"
  [server]="engine model comm text core"
  [bench]="server text core"
  [testing]="engine model kernels comm text core"
  [apps]="server bench testing engine model comm text core"
)
# Test folders that are not a layer's name: which layer's rules they follow.
declare -A test_layer=([kernels_ref]=kernels [model_gpu]=model [engine_gpu]=engine [comm_gpu]=comm)
# Test folders that may also use a tool library (tests/server drives a server with the load generator's client).
declare -A test_extra=([server]="bench")

violations=0
check_file() {  # file, layer, allowed layers (space separated)
  local file=$1 layer=$2 ok=" $2 $3 "
  local line=0 text target
  while IFS= read -r text; do
    line=$((line + 1))
    [[ $text =~ ^[[:space:]]*#[[:space:]]*include[[:space:]]*\"([a-z_]+)/ ]] || continue
    target=${BASH_REMATCH[1]}
    [[ $ok == *" $target "* ]] && continue
    echo "$file:$line: includes a '$target' header; '$layer' may include only:$(printf ' %s' $3)"
    violations=$((violations + 1))
  done < "$file"
}

sources() { find "$@" -type f \( -name '*.h' -o -name '*.cpp' -o -name '*.cu' -o -name '*.cuh' \) 2>/dev/null | sort; }

for dir in src/*/; do
  layer=$(basename "$dir")
  [[ -v "allowed[$layer]" ]] || { echo "check_layers: src/$layer is not in the layer map (scripts/check_layers.sh)"; violations=$((violations + 1)); continue; }
  while IFS= read -r file; do check_file "$file" "$layer" "${allowed[$layer]}"; done < <(sources "$dir")
done
while IFS= read -r file; do check_file "$file" apps "${allowed[apps]}"; done < <(sources apps)
for root in bench tests; do
  for dir in "$root"/*/; do
    name=$(basename "$dir")
    layer=${test_layer[$name]:-$name}
    [[ -v "allowed[$layer]" ]] || continue  # data folders
    extra="testing ${test_extra[$name]:-}"
    [[ $root == bench ]] && extra=""
    while IFS= read -r file; do check_file "$file" "$layer" "${allowed[$layer]} $extra"; done < <(sources "$dir")
  done
done

if [ "$violations" -gt 0 ]; then
  echo "check_layers: $violations include(s) against the layer map"
  exit 1
fi
echo "check_layers: includes follow the layer map"
