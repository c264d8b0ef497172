#!/usr/bin/env bash
# Checks that the repository stands alone (issue 13): no file cites a document outside it, and
# every `§` citation names a heading that exists in docs/. Run by scripts/check-format.sh (CI).
#
# Fails on
#   - a citation of a document outside the repository: the notes directory, the design and style
#     documents the project started from, or the sibling directory they lived in (the patterns are
#     in `outside` below, built from pieces);
#   - `docs/<name>.md §N[.M]` (and, inside docs/, `<name>.md §N`) whose section number is not a
#     numbered heading (`## N.`, `### N.M`, `#### N.M.K`) of that file; lists and ranges after the
#     file name (`§5.1, §9.2`, `§8–§10`, `§4.0–4.9`) are checked item by item, also across comment
#     line breaks;
#   - outside docs/, a `§N` that names no file (`(§2.2)` after another citation) or a
#     `<name>.md §N` without `docs/`; inside docs/, a bare `§N` that is not a heading of the same
#     file. Sections of outside works are allowed after `et al.`, `paper` or a quoted title.
set -euo pipefail
cd "$(dirname "$0")/.."
{ git ls-files; git ls-files --others --exclude-standard; } | python3 -c '
import os, re, sys

SELF = "scripts/check-citations.sh"
DOCS = sorted(os.path.splitext(n)[0] for n in os.listdir("docs") if n.endswith(".md"))

def headings(path):
    nums = set()
    with open(path, encoding="utf-8") as f:
        for line in f:
            m = re.match(r"#{2,4} (\d+(?:\.\d+)*)\.? ", line)
            if m:
                nums.add(m.group(1))
    return nums

heads = {d: headings(f"docs/{d}.md") for d in DOCS}

# Old outside documents. Built from pieces so that this script does not match itself.
outside = re.compile("|".join([
    r"\bnotes" + "/", r"\bnotes" + r" §", r"\bDESIGN" + r" §", r"\bSTYLE" + r" §",
    r"\.\./" + r"shared"]))
sec = r"\d+(?:\.\d+)*"
# More sections after the first: `, §N`, `and §N`, `or §N`, `-§N`, and ranges `–§N` or `–N`.
more = r"(?:\s*(?:,|\band\b|\bor\b|-)\s*§" + sec + r"|\s*–\s*§?" + sec + r")"
name = "|".join(map(re.escape, DOCS))
cite = re.compile(r"(?<![\w-])(?P<docs>docs/)?(?P<doc>" + name + r")\.md\s+(?P<list>§" + sec +
                  more + r"*)")
bare = re.compile(r"§\s*(" + sec + r")")
foreign = re.compile(r"(?:et al\.|paper|\")\s*$")
# Comment leaders removed when lines are joined, so that a citation may wrap.
leader = re.compile(r"\n[ \t]*(?://+|#+|\*+|/\*+)?[ \t]*")

errors = []
for path in (l.strip() for l in sys.stdin):
    if not path or path == SELF or not os.path.isfile(path):
        continue
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError:
        continue
    if b"\0" in raw:
        continue
    text = raw.decode("utf-8", errors="replace")
    in_docs = path.startswith("docs/") and path.endswith(".md")
    here = os.path.splitext(os.path.basename(path))[0] if in_docs else None
    line_starts = [0] + [m.end() for m in re.finditer(r"\n", text)]

    def line_of(offset):
        lo, hi = 0, len(line_starts) - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if line_starts[mid] <= offset:
                lo = mid
            else:
                hi = mid - 1
        return lo + 1

    for m in outside.finditer(text):
        errors.append(f"{path}:{line_of(m.start())}: cites an outside document: "
                      f"{text[m.start():m.start() + 40].splitlines()[0]!r}")

    # Join wrapped lines (keeping a map back to the original offsets).
    joined, where, pos = [], [], 0
    for m in leader.finditer(text):
        joined.append(text[pos:m.start()]); where.extend(range(pos, m.start()))
        joined.append(" "); where.append(m.start())
        pos = m.end()
    joined.append(text[pos:]); where.extend(range(pos, len(text)))
    flat = "".join(joined)

    covered = set()
    for m in cite.finditer(flat):
        doc, ln = m.group("doc"), line_of(where[m.start()])
        covered.update(range(m.start(), m.end()))
        if not in_docs and not m.group("docs"):
            errors.append(f"{path}:{ln}: write docs/{doc}.md, not {doc}.md")
        for n in re.findall(sec, m.group("list")):
            if n not in heads.get(doc, set()):
                errors.append(f"{path}:{ln}: docs/{doc}.md has no heading §{n}")
    for m in bare.finditer(flat):
        if m.start() in covered or foreign.search(flat[max(0, m.start() - 40):m.start()]):
            continue
        ln = line_of(where[m.start()])
        if in_docs:
            if m.group(1) not in heads.get(here, set()):
                errors.append(f"{path}:{ln}: {here}.md has no heading §{m.group(1)}")
        else:
            errors.append(f"{path}:{ln}: §{m.group(1)} names no document "
                          f"(write docs/<name>.md §{m.group(1)})")

if errors:
    print("check-citations: citations to fix:", file=sys.stderr)
    for e in errors:
        print("  " + e, file=sys.stderr)
    sys.exit(1)
print("check-citations: every citation names a heading of docs/")
'
