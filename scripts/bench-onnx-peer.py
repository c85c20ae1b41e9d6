#!/usr/bin/env python3
"""The peer of trove's ONNX embedder: the onnxruntime Python package on the same model files.

Usage: scripts/bench-onnx-peer.py MODEL_DIR [--threads N] [--seconds S] [--json]

Embeds the texts benches/embed.rs embeds (code-like text of about 128 and 256 WordPiece tokens)
with model.onnx and model.int8.onnx from MODEL_DIR the way a Python service would: the `tokenizers`
package (the same Rust tokenizer trove uses), onnxruntime InferenceSession, mean pooling and L2
normalisation in numpy, one text per pass. Two ways of using N cores:
  pool:  N Python threads sharing one session of 1 intra-op thread (session.run drops the GIL);
  intra: one call at a time on a session of N intra-op threads;
each with onnxruntime's default graph optimizations and with the ones trove's sessions use
(SkipLayerNormFusion off, see crates/embed/src/onnx.rs); the best of the four is the peer's figure.
Prints chunks/s per file and length (--json: one JSON object) for scripts/bench-embed.sh.
"""
import argparse
import json
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor

try:
    import numpy as np
    import onnxruntime as ort
    from tokenizers import Tokenizer
except ImportError as e:
    sys.exit(f"bench-onnx-peer.py: {e.name} is missing: pip install onnxruntime tokenizers numpy")

WORDS = [
    "fn", "parse_config", "(", "path", ":", "&", "Path", ")", "->", "Result", "<", "Config", ">",
    "{", "let", "text", "=", "std", "::", "fs", "::", "read_to_string", "(", "path", ")", "?",
    ";", "}", "retry", "backoff", "connection", "pool",
]


def text_of(tokens, seed):
    """benches/embed.rs's text_of, word for word."""
    return "".join(WORDS[(i * 7 + seed) % len(WORDS)] + " " for i in range(tokens * 3 // 4))


# What trove's sessions turn off (crates/embed/src/onnx.rs: DISABLED_OPTIMIZERS).
TROVE_DISABLED = "SkipLayerNormFusion"


def session(path, intra, disabled=""):
    so = ort.SessionOptions()
    so.intra_op_num_threads = intra
    so.inter_op_num_threads = 1
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    if disabled:
        so.add_session_config_entry("optimization.disable_specified_optimizers", disabled)
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])


def embed(sess, tok, text):
    ids = np.array([tok.encode(text).ids], dtype=np.int64)
    mask = np.ones_like(ids)
    h = sess.run(None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)})[0][0]
    v = h.mean(axis=0)
    return v / max(np.linalg.norm(v), 1e-12)


def rate(fn, texts, seconds):
    """Chunks/s of fn over texts, repeated for about `seconds` after one warm-up pass."""
    fn(texts)
    done, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        fn(texts)
        done += len(texts)
    return done / (time.perf_counter() - start)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("model_dir")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    tok = Tokenizer.from_file(os.path.join(a.model_dir, "tokenizer.json"))
    tok.enable_truncation(256)
    tok.no_padding()
    out = {"onnxruntime": ort.__version__, "threads": a.threads, "results": {}}
    for name, file in (("onnx-fp32", "model.onnx"), ("onnx-int8", "model.int8.onnx")):
        path = os.path.join(a.model_dir, file)
        if not os.path.isfile(path):
            print(f"bench-onnx-peer.py: {path} missing (scripts/export-onnx.py writes it)", file=sys.stderr)
            continue
        pool = ThreadPoolExecutor(a.threads)
        sessions = {
            opts: (session(path, 1, disabled), session(path, a.threads, disabled))
            for opts, disabled in (("default", ""), ("trove", TROVE_DISABLED))
        }
        for tokens in (128, 256):
            texts = [text_of(tokens, i) for i in range(a.threads * 32)]
            row = {}
            for opts, (single, wide) in sessions.items():
                row[f"pool/{opts}"] = rate(
                    lambda ts: list(pool.map(lambda t: embed(single, tok, t), ts)), texts, a.seconds
                )
                row[f"intra/{opts}"] = rate(lambda ts: [embed(wide, tok, t) for t in ts], texts, a.seconds)
            row["best"] = max(row.values())
            out["results"][f"{name}/{tokens}tok"] = row
            if not a.json:
                cells = "  ".join(f"{k} {v:7.1f}" for k, v in row.items())
                print(f"{name:10} {tokens:4} tokens: {cells}  chunks/s")
        pool.shutdown()
    if a.json:
        print(json.dumps(out))


if __name__ == "__main__":
    main()
