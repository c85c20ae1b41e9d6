# Sourced by the bench scripts that change a tree: given $src (a corpus folder, default the one of
# scripts/bench-corpus.sh in $BENCH_CORPUS or /tmp/trove-bench-corpus, assembled when missing, when
# the script's first argument $1 names none) and $here (the scripts folder), sets $trove (through
# find-trove.sh), $work (a temp dir, removed on exit unless KEEP=1) and $repo (a git repository
# in it holding the corpus: a clone when SRC is a clean git repository, else a first commit of
# everything), and defines g (git in $repo) and compacted_equals.
[ -d "$src" ] || [ -n "${1:-}" ] || "$here/bench-corpus.sh" "$src"
# shellcheck source=scripts/find-trove.sh
source "$here/find-trove.sh"
command -v python3 >/dev/null || { echo "needs python3" >&2; exit 2; }
work=$(mktemp -d)
[ "${KEEP:-}" = 1 ] || trap 'rm -rf "$work"' EXIT
repo="$work/repo"
g() { git -C "$repo" -c user.name=bench -c user.email=bench@example.com -c core.autocrlf=false "$@"; }

echo "copying $src ..." >&2
if git -C "$src" rev-parse --verify -q HEAD >/dev/null 2>&1 && [ -z "$(git -C "$src" status --porcelain | head -1)" ]; then
  git clone -q "$src" "$repo"
else
  cp -a "$src" "$repo"
  # Vendored crates carry their own .gitignore files; index what git tracks either way.
  rm -rf "$repo/.git"
  g init -q && g add -A -f 2> >(grep -v "^warning: in the working copy" >&2) && g commit -q -m base
fi

# compacted_equals BUNDLE FULL WHAT: compacts a copy of BUNDLE and checks that its tables are FULL's,
# byte for byte (rows and sha256 of every file in the manifests); WHAT names BUNDLE in messages.
compacted_equals() {
  cp -a "$1" "$work/compacted"
  "$trove" compact "$work/compacted" --quiet
  python3 - "$work/compacted/manifest.json" "$2/manifest.json" "$3" <<'PY'
import json, sys
a, b = (json.load(open(p))["files"] for p in sys.argv[1:3])
assert a == b, f"compacted {sys.argv[3]} and full bundles differ"
print(f"check: compacted {sys.argv[3]} tables == full build tables (rows and sha256 of every file)")
PY
}
