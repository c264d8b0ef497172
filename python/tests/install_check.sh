#!/bin/sh
# `make install`'s Python package (docs/python.md §1): installs the build into a temporary prefix,
# then imports pev from that prefix's site-packages (not the build tree) and computes with it.
# Usage: install_check.sh BUILD_DIR PYTHON SITE_DIR (relative to the prefix)
set -eu
build=$1 python=$2 site=$3
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" >/dev/null
test -f "$prefix/$site/pev/__init__.py" || { echo "no pev package in $prefix/$site" >&2; exit 1; }
cd "$prefix"
PYTHONPATH="$prefix/$site" "$python" -c '
import sys, pev
assert pev.__file__.startswith(sys.argv[1]), pev.__file__
t = pev.reference("rope:head_dim=8", range(3), dtype="fp32")
assert t.shape == (3, 4, 2), t.shape
print("installed pev", pev.__version__, "at", pev.__file__)
' "$prefix"
