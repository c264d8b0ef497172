"""Runs one of pev's Python test files with pytest (python/CMakeLists.txt: one ctest each).

Exits 77 (ctest: skipped) with a message when pytest is missing (Debian: python3-pytest)."""

import os
import sys

try:
    import pytest
except ImportError:
    print("python tests: SKIPPED: pytest is not installed (Debian: python3-pytest; "
          "scripts/install-deps.sh --test installs it)")
    sys.exit(77)

if __name__ == "__main__":
    here = os.path.dirname(os.path.abspath(__file__))
    args = ["-q", "-p", "no:cacheprovider", "--rootdir", here, "-c", os.path.join(here, "pytest.ini")]
    sys.exit(pytest.main(args + sys.argv[1:]))
