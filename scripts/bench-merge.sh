#!/usr/bin/env bash
# `trove merge` of N shards beside a full index of the same tree, in one run.
#
# Copies SRC (default: the corpus of scripts/bench-corpus.sh in $BENCH_CORPUS or
# /tmp/trove-bench-corpus, assembled when missing) into a temp git repository, indexes it in full,
# then as N shards (`--shard I/N`, one after another, as N CI jobs would run them), and merges the
# shards twice: with the sha256 memo warm (the shards were written on this machine), and cold
# (an empty cache: every byte of every shard hashed, as when the shards arrive as CI artifacts).
# Checks that the merged bundle answers as the full one (query in three modes with scores,
# symbols, refs --callers, deps, map) and that its compaction has the full build's tables byte for
# byte. Prints wall times and the ratio merge / full index.
#
# Usage: scripts/bench-merge.sh [SRC]    env: N (shards, default 8), TROVE (binary), KEEP=1 keeps
#        the temp dir.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
src=${1:-${BENCH_CORPUS:-/tmp/trove-bench-corpus}}
n=${N:-8}
# shellcheck source=scripts/bench-repo.sh
source "$here/bench-repo.sh"
echo "tree: $(g ls-files | wc -l) files, $(( $(du -sb "$repo" --exclude=.git | cut -f1) / 1000000 )) MB"

# secs CMD... : runs CMD, prints its wall seconds
secs() {
  local t0 t1
  t0=$(date +%s.%N)
  "$@" >/dev/null
  t1=$(date +%s.%N)
  python3 -c "print(f'{$t1 - $t0:.3f}')"
}

full=$(secs "$trove" index "$repo" -o "$work/full" --quiet)
printf '%-34s %9s s\n' "full index" "$full"
shards=()
for i in $(seq 1 "$n"); do
  s=$(secs "$trove" index "$repo" -o "$work/shard-$i" --shard "$i/$n" --quiet)
  printf '%-34s %9s s\n' "shard $i/$n" "$s"
  shards+=("$work/shard-$i")
done
warm=$(secs "$trove" merge "$work/merged" "${shards[@]}" --quiet)
printf '%-34s %9s s\n' "merge, sha256 memo warm" "$warm"
rm -rf "$work/merged"
cold=$(TROVE_CACHE_DIR="$work/empty-cache" secs "$trove" merge "$work/merged" "${shards[@]}" --quiet)
printf '%-34s %9s s\n' "merge, cold (every byte hashed)" "$cold"

# The same answers as the full build.
python3 - "$trove" "$work/full" "$work/merged" <<'PY'
import json, subprocess, sys
trove, full, merged = sys.argv[1:]
def ask(b):
    out = []
    for q in ["parse the config file", "retry with backoff", "http request handler", "render a template"]:
        for mode in ["bm25", "vector", "hybrid"]:
            out.append(subprocess.run([trove, "query", b, q, "--mode", mode, "-k", "10", "--format", "jsonl"],
                                      capture_output=True, text=True).stdout.replace(b, "B"))
    for args in (["symbols", b, "parse"], ["symbols", b, "main"], ["refs", b, "new", "--callers"],
                 ["refs", b, "main", "--callers"], ["deps", b], ["map", b]):
        out.append(subprocess.run([trove, *args, "--format", "json"], capture_output=True, text=True).stdout.replace(b, "B"))
    return out
a, m = ask(full), ask(merged)
assert a == m, "merged answers differ from the full build's"
print(f"check: merged answers == full build answers ({len(a)} asks)")
PY
compacted_equals "$work/merged" "$work/full" merge
python3 - "$full" "$warm" "$cold" "$n" <<'PY'
import sys
full, warm, cold, n = float(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
print(f"\nmerge of {n} shards / full index: warm {100 * warm / full:.2f}%   cold {100 * cold / full:.2f}%   (target <= 2%)")
PY
