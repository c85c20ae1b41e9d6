#!/usr/bin/env bash
# Full `trove index` vs incremental `--since auto` runs on a real tree, side by side in one run.
#
# Copies SRC (default: the corpus of scripts/bench-corpus.sh in $BENCH_CORPUS or
# /tmp/trove-bench-corpus, assembled when missing) into a temp git repository — a clone when SRC is
# one, else a first commit of everything —, indexes it in full, then for each change — 1 file
# edited, 100 files edited, a directory renamed — commits and runs `trove index --since auto
# --no-compact` on the previous bundle, which adds one segment (bundle v5). After the 1-file step it
# also rebuilds in full and checks that a compacted copy of the segmented bundle has the full
# build's tables byte for byte. Prints wall time, peak RSS, files re-processed, chunks embedded,
# bytes written, and the ratio full / incremental.
#
# Usage: scripts/bench-incremental.sh [SRC]      env: TROVE (binary; default target/release/trove
#        or $CARGO_TARGET_DIR/release/trove), KEEP=1 keeps the temp dir.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
src=${1:-${BENCH_CORPUS:-/tmp/trove-bench-corpus}}
# shellcheck source=scripts/bench-repo.sh
source "$here/bench-repo.sh"
files=$(g ls-files | wc -l)
bytes=$(du -sb "$repo" --exclude=.git | cut -f1)

# run LABEL ARGS... : times one trove index, prints a row, remembers its seconds in $secs
run() {
  local label=$1; shift
  # The previous run's writes are flushed first, so that no run pays for the one before it.
  sync
  /usr/bin/time -f "%e %M" -o "$work/time" "$trove" index "$repo" --json --quiet "$@" > "$work/summary.json"
  read -r secs kb < "$work/time"
  python3 - "$label" "$secs" "$kb" "$work/summary.json" <<'PY'
import json, sys
label, secs, kb, path = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
s = json.load(open(path))
processed = s["files_indexed"] - s["files_reused"]
written = s.get("bytes_written", 0) / 1e6
print(f"{label:<28} {secs:>8.2f} s {kb/1024:>8.0f} MB {processed:>9} {s['chunks_embedded']:>9} {s['files_reused']:>9} {written:>9.2f} MB")
PY
}

printf '%s\n' "tree: $files files, $((bytes / 1000000)) MB"
printf '%-28s %10s %11s %9s %9s %9s %12s\n' run wall "peak RSS" processed embedded reused written
run "full" -o "$work/b"; full=$secs

first=$(g ls-files '*.rs' | sed -n 1p)
printf '\n// bench: one edit\npub fn trove_bench_edit() -> u32 { 42 }\n' >> "$repo/$first"
g commit -q -am "1 file"
run "1-file change --since auto" -o "$work/b" --since auto --no-compact; one=$secs

run "full rebuild (check)" -o "$work/full"
compacted_equals "$work/b" "$work/full" incremental
"$trove" verify "$work/b"

g ls-files '*.rs' | sed -n '2,101p' | while read -r f; do
  printf '\n// bench: many edits\n' >> "$repo/$f"
done
g commit -q -am "100 files"
run "100-file change --since auto" -o "$work/b" --since auto --no-compact; hundred=$secs

n=$(g ls-files '*.rs' | wc -l)
dir=$(g ls-files '*.rs' | sed -n "$((n / 2 + 1))p" | cut -d/ -f1-2)
g mv "$dir" "$dir-renamed"
g commit -q -m "rename $dir"
run "dir rename --since auto" -o "$work/b" --since auto --no-compact; renamed=$secs

python3 - "$full" "$one" "$hundred" "$renamed" <<'PY'
import sys
full, one, hundred, renamed = map(float, sys.argv[1:])
print()
print(f"ratio full / incremental:  1 file {full/one:.1f}x   100 files {full/hundred:.1f}x   dir rename {full/renamed:.1f}x")
PY
