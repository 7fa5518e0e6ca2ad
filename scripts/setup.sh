#!/usr/bin/env bash
# Installs everything gossamer needs on a fresh Debian/Ubuntu machine: Debian packages (compiler, CMake,
# GoogleTest, headers, PCRE2, cairo and a font for the benchmark charts, clang-format 14 for
# scripts/check_format.sh) and the npm packages in package.json (tokenizer data, test clients).
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  build-essential cmake ninja-build pkg-config git
  libgtest-dev libgmock-dev libbenchmark-dev
  nlohmann-json3-dev libpcre2-dev libcli11-dev
  libboost1.81-dev
  libcairo2-dev fonts-dejavu-core
  clang-format-14
  zstd
)
missing=()
for package in "${packages[@]}"; do
  dpkg -s "$package" >/dev/null 2>&1 || missing+=("$package")
done
# Node.js may come from Debian or from elsewhere (a bundled npm): install Debian's only when absent.
command -v node >/dev/null 2>&1 || missing+=(nodejs)
command -v npm >/dev/null 2>&1 || missing+=(npm)
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing Debian packages: ${missing[*]}"
  sudo_cmd=""
  [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

if [ ! -f node_modules/tiktoken/encoders/o200k_base.json ] || [ ! -d node_modules/openai ] || [ ! -d node_modules/@openai/agents ]; then
  echo "setup: installing npm packages (package-lock.json)"
  npm ci --no-audit --no-fund --loglevel=error
fi
echo "setup: done"
