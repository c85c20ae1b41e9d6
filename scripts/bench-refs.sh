#!/usr/bin/env bash
# Precision and recall of `trove refs --callers` without SCIP, against real SCIP indexes (issue 26).
#
# Usage: scripts/bench-refs.sh DEV_CORPUS EVAL2_CORPUS [BEFORE_TROVE]
#   DEV_CORPUS:   ../shared/eval/fetch_corpus.sh ../shared/eval/dev.manifest DIR (flask, commander)
#   EVAL2_CORPUS: fetch_corpus.sh scripts/eval/eval.manifest DIR (rxjs: TypeScript sources)
#   BEFORE_TROVE: another trove binary whose syntax-only edges are scored beside this one's
#
# Each project is copied to a scratch dir with the indexer config a source checkout would have:
# flask is a src/ layout (pyrightconfig.json extraPaths ["src"], so scip-python names src/flask
# `flask` as its tests import it); commander is JavaScript (a tsconfig.json with allowJs over its
# sources). scripts/scip-index.sh makes the SCIP index; this trove indexes each copy with it (the
# truth) and without it, and scripts/refs-precision.py scores the second against the first.
# globset (Rust) needs `rust-analyzer scip`, which this machine's toolchain lacks: it is skipped
# with a note when rust-analyzer is not on PATH.
set -euo pipefail
cd "$(dirname "$0")/.."
dev=${1:?usage: scripts/bench-refs.sh DEV_CORPUS EVAL2_CORPUS [BEFORE_TROVE]}
eval2=${2:?usage: scripts/bench-refs.sh DEV_CORPUS EVAL2_CORPUS [BEFORE_TROVE]}
before=${3:-}
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/trove-target}"
trove=${TROVE:-$CARGO_TARGET_DIR/release/trove}
py=${PYTHON:-$CARGO_TARGET_DIR/test-venv/bin/python3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

prepare() { # NAME SRC LANG
  cp -r "$2" "$work/$1"
  case "$1" in
    flask) echo '{"extraPaths": ["src"]}' >"$work/flask/pyrightconfig.json" ;;
    commander) echo '{"compilerOptions": {"allowJs": true, "noEmit": true, "target": "es2020", "module": "commonjs"}, "include": ["*.js", "lib/**/*.js"]}' >"$work/commander/tsconfig.json" ;;
  esac
  scripts/scip-index.sh "$3" "$work/$1" "$work/$1.scip" 2>/dev/null >/dev/null
  "$trove" index "$work/$1" -o "$work/$1.scip.bundle" --scip "$work/$1.scip" --quiet
  "$trove" index "$work/$1" -o "$work/$1.plain.bundle" --no-scip --quiet
  if [ -n "$before" ]; then
    "$before" index "$work/$1" -o "$work/$1.before.bundle" --quiet
  fi
}

for spec in "flask $dev/flask python" "commander $dev/commander typescript" "rxjs $eval2/rxjs typescript"; do
  set -- $spec
  prepare "$1" "$2" "$3"
  if [ -n "$before" ]; then
    echo "== $1, before ($before)"
    "$py" scripts/refs-precision.py "$work/$1.scip.bundle" "$work/$1.before.bundle"
  fi
  echo "== $1"
  "$py" scripts/refs-precision.py "$work/$1.scip.bundle" "$work/$1.plain.bundle"
done
if command -v rust-analyzer >/dev/null; then
  prepare globset "$dev/globset" rust
  echo "== globset"
  "$py" scripts/refs-precision.py "$work/globset.scip.bundle" "$work/globset.plain.bundle"
else
  echo "== globset: skipped (no rust-analyzer on PATH for rust-analyzer scip)"
fi
