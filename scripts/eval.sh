#!/usr/bin/env bash
# Retrieval evaluation on the dev corpus: AST chunks vs the `--chunker lines` baseline, for the
# bm25, vector and hybrid query modes.
# usage: scripts/eval.sh [CORPUS_DIR]     (default: $TMPDIR/trove-eval-corpus; fetched once)
# env:   TROVE=path/to/trove (default: the release build), SHARED=../shared
set -euo pipefail
cd "$(dirname "$0")/.."
shared=${SHARED:-../shared}
corpus=${1:-${TMPDIR:-/tmp}/trove-eval-corpus}
target=${CARGO_TARGET_DIR:-target}
trove=${TROVE:-$target/release/trove}
[ -n "${TROVE:-}" ] || cargo build --release -q
bash "$shared/eval/fetch_corpus.sh" "$shared/eval/dev.manifest" "$corpus" >&2
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
"$trove" index "$corpus" -o "$work/ast" --quiet
"$trove" index "$corpus" -o "$work/lines" --chunker lines --quiet
printf '%-8s %-8s %7s %7s\n' chunker mode R@10 MRR@10
for chunker in ast lines; do
  for mode in bm25 vector hybrid; do
    line=$(python3 "$shared/eval/run_eval.py" "$shared/eval/dev_queries.jsonl" "$work/$chunker" --trove "$trove" --mode "$mode" | tail -1)
    r10=$(sed -E 's/^overall R@10=([0-9.]+) .*/\1/' <<<"$line"); mrr=$(sed -E 's/.*MRR@10=([0-9.]+).*/\1/' <<<"$line")
    printf '%-8s %-8s %7s %7s\n' "$chunker" "$mode" "$r10" "$mrr"
  done
done
