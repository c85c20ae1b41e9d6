#!/usr/bin/env bash
# How many of universal-ctags' function/class/method definitions trove's symbols.parquet also has
# (same file, same name, same line), per language, on the same trees in the same run.
#
# Usage: scripts/compare-ctags.sh DIR...      env: TROVE (binary; default target/release/trove or
#        $CARGO_TARGET_DIR/release/trove), MISSES=N prints N missed tags per language.
# Installs Debian's universal-ctags when it is missing (as root). Kinds compared: ctags' function,
# func (Go), class, method, and member for Python (its methods); prototypes, fields and variables are
# not definitions trove chunks; ctags' AnonymousFunction* tags name nothing, and its JavaScript
# "classes" that are object literals (`const x = {`) are variables. Paths trove skips (vendored, generated, minified, too large, ignored)
# are left out of both sides.
set -euo pipefail

[ $# -ge 1 ] || { echo "usage: compare-ctags.sh DIR..." >&2; exit 2; }
if ! ctags --version 2>/dev/null | grep -q Universal; then
  if [ "$(id -u)" = 0 ]; then
    apt-get update -q >/dev/null && apt-get install -y -q universal-ctags >/dev/null
  else
    echo "needs universal-ctags (apt-get install universal-ctags)" >&2; exit 2
  fi
fi
# shellcheck source=scripts/find-trove.sh
source "$(dirname "$0")/find-trove.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

for dir in "$@"; do
  dir=$(cd "$dir" && pwd)
  name=$(basename "$dir")
  "$trove" index "$dir" -o "$work/$name.bundle" --quiet
  "$trove" sql "$work/$name.bundle" \
    "COPY (SELECT s.path, s.name, s.name_line, s.language FROM symbols s) TO '$work/$name.trove.csv' (HEADER)" >/dev/null
  "$trove" sql "$work/$name.bundle" \
    "COPY (SELECT path, language FROM files) TO '$work/$name.files.csv' (HEADER)" >/dev/null
  (cd "$dir" && ctags -R --output-format=json --fields=+nKl --extras=-F -f - . 2>/dev/null) > "$work/$name.ctags.json"
done

python3 - "$work" "${MISSES:-0}" "$@" <<'PY'
import csv, json, os, sys
from collections import defaultdict
work, misses = sys.argv[1], int(sys.argv[2])
KINDS = {"function", "func", "class", "method"}
stats = defaultdict(lambda: [0, 0])  # language -> [ctags defs, also in trove]
missed = defaultdict(list)
for d in sys.argv[3:]:
    name = os.path.basename(os.path.abspath(d))
    files = {r["path"]: r["language"] for r in csv.DictReader(open(f"{work}/{name}.files.csv"))}
    have = defaultdict(set)
    for r in csv.DictReader(open(f"{work}/{name}.trove.csv")):
        have[(r["path"], r["name"])].add(int(r["name_line"]))
    for line in open(f"{work}/{name}.ctags.json"):
        try:
            t = json.loads(line)
        except ValueError:
            continue
        if t.get("_type") != "tag":
            continue
        kind, lang = t.get("kind"), t.get("language", "?")
        if not (kind in KINDS or (kind == "member" and lang == "Python")):
            continue
        if t["name"].startswith("AnonymousFunction"):
            continue  # ctags' name for a function expression: nothing to look up by name
        if lang == "JavaScript" and kind == "class" and "= {" in t.get("pattern", ""):
            continue  # ctags calls an object literal (`const x = {`) a class: a variable
        path = t["path"][2:] if t["path"].startswith("./") else t["path"]
        if path not in files:
            continue  # trove skipped the file (and says why in skipped.parquet)
        key = files[path] or lang
        stats[key][0] += 1
        if t.get("line") in have.get((path, t["name"]), ()):
            stats[key][1] += 1
        else:
            missed[key].append(f"{path}:{t.get('line')} {kind} {t['name']}")
print(f"{'language':<12} {'ctags defs':>10} {'in trove':>9} {'share':>7}")
tot = [0, 0]
for lang, (n, k) in sorted(stats.items(), key=lambda x: -x[1][0]):
    tot[0] += n; tot[1] += k
    print(f"{lang:<12} {n:>10} {k:>9} {100 * k / max(n, 1):>6.1f}%")
print(f"{'all':<12} {tot[0]:>10} {tot[1]:>9} {100 * tot[1] / max(tot[0], 1):>6.1f}%")
for lang, m in sorted(missed.items()):
    for x in m[:misses]:
        print(f"  missed [{lang}] {x}")
PY
