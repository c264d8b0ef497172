#!/usr/bin/env bash
# Compares what two pev builds write (docs/design.md §11.12): the real-engine corpus's certificates
# (tests/corpus, every dump certified under every claim it runs) and the default report, each
# build's outputs normalised for what differs between any two runs — the git revision, "seconds",
# "generated_at" and other timestamps, "N.NN s" timings, the work directory, and the SHA-256 of the
# corpus's own `pev reference` inputs (they carry the revision in their metadata) — then diffed.
# For a refactoring that must not change behaviour: run it with the build before and after.
#
# usage: scripts/compare-builds.sh OLD_PEV NEW_PEV [EXCLUDE_REGEX]
#   EXCLUDE_REGEX: diff lines to ignore (e.g. 'report/index.html' when the page changed on purpose)
# Prints the differing files and, for certificate.json files, which JSON fields differ and the
# largest relative difference of a number among them. Exit 0 when nothing differs. Needs
# /usr/bin/python3 with torch and numpy (scripts/install-deps.sh --test); ~4 minutes on 2 cores.
set -uo pipefail
cd "$(dirname "$0")/.."
if [[ $# -lt 2 ]]; then
  sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
fi
old=$(realpath "$1") new=$(realpath "$2") exclude=${3:-'^$'}
out=$(mktemp -d /tmp/pev-compare-XXXXXX)

run() {  # $1 pev, $2 directory
  /usr/bin/python3 tests/corpus/run_corpus.py --pev "$1" --jobs 2 --workdir "$2/corpus" \
    > "$2/corpus.log" 2>&1
  echo "$1: corpus exit $? (log: $2/corpus.log)"
  "$1" report --out "$2/report" > "$2/report.log" 2>&1
  echo "$1: report exit $?"
}

norm() {  # $1 tree -> $2 normalised copy of its text files; $3 the path to replace by WORKDIR
  (cd "$1" && find . -type f \( -name '*.json' -o -name '*.md' -o -name '*.xml' -o -name '*.csv' \
    -o -name '*.html' -o -name '*.svg' -o -name '*.gp' \)) | while read -r f; do
    mkdir -p "$2/$(dirname "$f")"
    local sha=(-e 's/^$//')
    [[ $f == *reference-*-cr* ]] && sha=(-e 's/[0-9a-f]{64}/SHA/g')
    sed -E -e 's/"git_revision": "[^"]*"/"git_revision": "REV"/' \
      -e 's/git [0-9a-f]{12}(-dirty)?/git REV/g' \
      -e 's/"seconds": [-0-9.e+]+/"seconds": 0/' -e 's/"generated_at": "[^"]*"/"generated_at": ""/' \
      -e 's/\b[0-9]+\.[0-9]+ s\b/T s/g' -e 's/time="[0-9.]+"/time="T"/g' -e "s#$3#WORKDIR#g" \
      -e 's/[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z/DATE/g' "${sha[@]}" \
      "$1/$f" > "$2/$f"
  done
}

mkdir -p "$out/old" "$out/new"
run "$old" "$out/old"
run "$new" "$out/new"
for side in old new; do
  norm "$out/$side/corpus/certs" "$out/norm/$side/corpus" "$out/$side/corpus"
  norm "$out/$side/report" "$out/norm/$side/report" "$out/$side/report"
done
diff -rq "$out/norm/old" "$out/norm/new" | grep -Ev "$exclude" > "$out/diff.txt"
n=$(wc -l < "$out/diff.txt")
echo "differing files: $n (list: $out/diff.txt; normalised trees under $out/norm)"
head -20 "$out/diff.txt"
/usr/bin/python3 - "$out/diff.txt" <<'PY'
import json, sys
fields, largest, n = set(), 0.0, 0
def walk(a, b, path):
    global largest
    if isinstance(a, dict) and isinstance(b, dict):
        if a.keys() != b.keys():
            fields.add(path + " (keys)")
            return
        for k in a:
            walk(a[k], b[k], path + "." + k)
    elif isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            fields.add(path + " (length)")
            return
        for x, y in zip(a, b):
            walk(x, y, path + "[]")
    elif a != b:
        fields.add(path)
        if isinstance(a, (int, float)) and isinstance(b, (int, float)) and a:
            largest = max(largest, abs(a - b) / abs(a))
for line in open(sys.argv[1]):
    parts = line.split()
    if len(parts) >= 4 and parts[1].endswith("certificate.json"):
        n += 1
        walk(json.load(open(parts[1])), json.load(open(parts[3])), "")
if n:
    print(f"{n} certificate.json differ in: {', '.join(sorted(fields))}; "
          f"largest relative difference of a number: {largest:.3g}")
PY
[[ $n -eq 0 ]]
