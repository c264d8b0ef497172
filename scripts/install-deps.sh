#!/usr/bin/env bash
# Installs the Debian packages pev needs when they are missing (docs/design.md §10). Nothing is
# downloaded outside Debian's package registry. Safe to run repeatedly: it only calls apt-get when a
# package is absent. Set PEV_DEPS_EXTRA="pkg ..." to add packages.
#
# Usage: scripts/install-deps.sh [--test]
#   (none)  what `make report` needs: the build and the report.
#   --test  also the test-only packages (`make test`, CI): chromium renders the report's and the
#           certificate's index.html in a test (headless; zlib1g-dev decodes its screenshot),
#           python3-torch computes the real-engine corpus (tests/corpus/), python3-pytest runs
#           the Python module's tests (python/tests/); the tests that need them skip with a
#           message where they are missing. pybind11-dev and python3-dev build the Python module
#           `pev` (python/, docs/python.md).
set -euo pipefail

with_tests=0
for arg in "$@"; do
  case "$arg" in
    --test) with_tests=1 ;;
    *)
      echo "usage: scripts/install-deps.sh [--test]" >&2
      exit 2
      ;;
  esac
done

packages=(
  build-essential cmake make git pkg-config
  libboost-dev libmpfr-dev libgmp-dev
  librapidcheck-dev libgtest-dev libgmock-dev libbenchmark-dev
  libcli11-dev nlohmann-json3-dev libfmt-dev libtbb-dev libssl-dev zlib1g-dev
  gnuplot-nox clang-format python3 python3-numpy python3-dev pybind11-dev python3-pybind11
  clang libclang-rt-14-dev
)
test_packages=(chromium zlib1g-dev python3-torch python3-pytest)
if [[ $with_tests -eq 1 ]]; then
  packages+=("${test_packages[@]}")
fi
# shellcheck disable=SC2206
packages+=(${PEV_DEPS_EXTRA:-})

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$p")
done

if [[ ${#missing[@]} -eq 0 ]]; then
  exit 0
fi

echo "pev: installing missing Debian packages: ${missing[*]}" >&2
runner=()
if [[ $(id -u) -ne 0 ]]; then
  if command -v sudo >/dev/null 2>&1; then
    runner=(sudo)
  else
    echo "pev: not root and no sudo; install these packages first: ${missing[*]}" >&2
    exit 1
  fi
fi
export DEBIAN_FRONTEND=noninteractive
"${runner[@]}" apt-get update -qq
"${runner[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
