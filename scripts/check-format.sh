#!/usr/bin/env bash
# Checks (or with --fix, applies) .clang-format on every C++ source tracked by git, then checks the
# citations of docs/ (scripts/check-citations.sh; --fix does not touch them).
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files '*.h' '*.cpp' '*.hpp' '*.cc' ; git ls-files --others --exclude-standard '*.h' '*.cpp')
[[ ${#files[@]} -eq 0 ]] && exit 0
if [[ "${1:-}" == "--fix" ]]; then
  clang-format -i "${files[@]}"
  exit 0
fi
bad=()
for f in "${files[@]}"; do
  [[ -f "$f" ]] || continue
  clang-format --dry-run --Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done
citations=0
scripts/check-citations.sh || citations=1
if [[ ${#bad[@]} -gt 0 ]]; then
  echo "clang-format: these files need formatting (run 'make format'):" >&2
  printf '  %s\n' "${bad[@]}" >&2
  exit 1
fi
echo "clang-format: ${#files[@]} files formatted"
exit "$citations"
