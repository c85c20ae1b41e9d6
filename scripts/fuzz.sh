#!/usr/bin/env bash
# Runs the cargo-fuzz targets (fuzz/fuzz_targets: chunk, rules, tokenize, manifest, redact), each
# for SECONDS (default 60), seeded from the fixtures; prints executions and crashes per target.
# A crash leaves its input in fuzz/artifacts/TARGET/: add it as a regression test, then fix.
# usage: scripts/fuzz.sh [SECONDS] [TARGET...]
# needs: cargo install cargo-fuzz; a stable toolchain works through RUSTC_BOOTSTRAP=1. No sanitizer
# (-s none): the Rust code is memory-safe and the grammars' C is not instrumented; libFuzzer still
# catches panics, aborts, timeouts (30 s an input) and memory blow-ups (4 GB).
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-60}; shift || true
targets=("$@"); [ ${#targets[@]} -gt 0 ] || targets=(chunk rules tokenize manifest redact)
# The trove binary (for the manifest seed), found before the fuzz build's own target dir is set.
source scripts/find-trove.sh
export RUSTC_BOOTSTRAP=1
export CARGO_TARGET_DIR=${FUZZ_TARGET_DIR:-$HOME/.cache/trove-fuzz-target}
seeds=$(mktemp -d); trap 'rm -rf "$seeds"' EXIT
for t in "${targets[@]}"; do
  mkdir -p "$seeds/$t" "fuzz/corpus/$t"
  case $t in
    chunk|rules)
      i=0; for f in fixtures/languages/*/* fixtures/sample-repo/*/*; do
        [ -f "$f" ] || continue; i=$((i+1)); { printf "\\x$(printf %x $((i % 256)))"; cat "$f"; } > "$seeds/$t/$i"; done ;;
    tokenize|redact) cp fixtures/sample-repo/*/*.* "$seeds/$t/" 2>/dev/null || true
      printf 'DB_PASSWORD = "hunter22secret"\nAKIAQWERTYUIOPASDFGH\n-----BEGIN RSA PRIVATE KEY-----\nabc\n-----END RSA PRIVATE KEY-----\n' > "$seeds/$t/secrets" ;;
    manifest) "$trove" index fixtures/sample-repo -o "$seeds/bundle" -q
      cp "$seeds/bundle/manifest.json" "$seeds/$t/" ;;
  esac
done
printf '%-10s %12s %8s\n' target execs crashes
for t in "${targets[@]}"; do
  log=$(mktemp)
  set +e
  cargo fuzz run --release -s none "$t" "fuzz/corpus/$t" "$seeds/$t" -- -max_total_time="$secs" -rss_limit_mb=4096 -timeout=30 >"$log" 2>&1
  rc=$?
  set -e
  execs=$(grep -oE '#[0-9]+' "$log" | tail -1 | tr -d '#' || true)
  crashes=$(find "fuzz/artifacts/$t" -type f 2>/dev/null | wc -l)
  printf '%-10s %12s %8s\n' "$t" "${execs:-0}" "$crashes"
  [ $rc -eq 0 ] || { echo "--- $t failed (rc $rc):"; tail -30 "$log"; }
  rm -f "$log"
done
