#!/usr/bin/env bash
# Makes a SCIP index of a project with a real SCIP indexer, for `trove index --scip`.
#
# Usage: scripts/scip-index.sh typescript DIR OUT   scip-typescript on DIR (a tsconfig.json, or
#                                                   JavaScript with --infer-tsconfig when none)
#        scripts/scip-index.sh python DIR OUT       scip-python on DIR
#        scripts/scip-index.sh rust DIR OUT         rust-analyzer scip on DIR (a Cargo workspace)
#        scripts/scip-index.sh --install            installs the npm indexers, prints their bin folder
#
# The npm indexers (pinned below) are installed once into $TROVE_SCIP_TOOLS_DIR, by default
# $CARGO_TARGET_DIR/scip-tools (else ~/.cache/trove-target/scip-tools), never globally; they need
# Node.js and npm (Debian/Ubuntu: apt-get install nodejs npm). rust-analyzer comes from the Rust
# toolchain (rustup component add rust-analyzer). OUT is written whole or not at all.
set -euo pipefail
pins="@sourcegraph/scip-typescript@0.4.0 @sourcegraph/scip-python@0.6.6"
tools="${TROVE_SCIP_TOOLS_DIR:-${CARGO_TARGET_DIR:-$HOME/.cache/trove-target}/scip-tools}"

install() {
  if [ "$(cat "$tools/.trove-stamp" 2>/dev/null)" != "$pins" ]; then
    command -v npm >/dev/null || {
      echo "scip-index.sh: npm not found; install Node.js and npm (Debian/Ubuntu: apt-get install nodejs npm)" >&2
      exit 2
    }
    echo "scip-index.sh: installing $pins into $tools" >&2
    rm -rf "$tools"
    mkdir -p "$tools"
    # shellcheck disable=SC2086
    npm install --silent --no-audit --no-fund --prefix "$tools" $pins >&2
    printf '%s' "$pins" >"$tools/.trove-stamp"
  fi
}

if [ "${1:-}" = "--install" ]; then
  install
  echo "$tools/node_modules/.bin"
  exit 0
fi
[ $# -eq 3 ] || {
  sed -n '4,9p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}
lang=$1
dir=$(cd "$2" && pwd)
out=$(mkdir -p "$(dirname "$3")" && cd "$(dirname "$3")" && pwd)/$(basename "$3")
tmp="$out.tmp.$$"
trap 'rm -f "$tmp"' EXIT
case "$lang" in
  typescript)
    install
    args=()
    [ -f "$dir/tsconfig.json" ] || args+=(--infer-tsconfig)
    (cd "$dir" && "$tools/node_modules/.bin/scip-typescript" index "${args[@]}" --output "$tmp" >&2)
    ;;
  python)
    install
    # --project-version: the version in the symbols; scip-python otherwise asks git for one.
    (cd "$dir" && "$tools/node_modules/.bin/scip-python" index . --quiet \
      --project-name "$(basename "$dir")" --project-version 0 --output "$tmp" >&2)
    ;;
  rust)
    command -v rust-analyzer >/dev/null || {
      echo "scip-index.sh: rust-analyzer not found; rustup component add rust-analyzer" >&2
      exit 2
    }
    (cd "$dir" && rust-analyzer scip . --output "$tmp" >&2)
    ;;
  *)
    echo "scip-index.sh: unknown language $lang (typescript, python or rust)" >&2
    exit 2
    ;;
esac
mv "$tmp" "$out"
