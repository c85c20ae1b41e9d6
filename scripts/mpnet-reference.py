#!/usr/bin/env python3
"""A tiny MPNet model folder, and reference vectors for it from an independent implementation.

The `local` embedder runs MPNet encoders (all-mpnet-base-v2) on ONNX Runtime from the graph
scripts/export-onnx.py builds. Their weights are 440 MB, too much for the tests, so the tests
check the same code on a tiny MPNet (2 layers, hidden 32, a character-level word-piece
vocabulary) whose weights are a fixed formula of their index, no random numbers: every machine
writes the same folder.

    python3 scripts/mpnet-reference.py make DIR
        writes the folder (config.json, model.safetensors, tokenizer.json, 1_Pooling/config.json,
        modules.json, sentence_bert_config.json); needs numpy and safetensors.
    python3 scripts/mpnet-reference.py reference DIR
        embeds SNIPPETS with sentence-transformers (PyTorch: Hugging Face's MPNetModel, not
        trove's graph) from that folder and writes tests/fixtures/mpnet-reference.json. Run
        once; commit the output with this script.

tests/embedders.rs makes the folder, exports it with scripts/export-onnx.py, and requires
trove's vectors of every snippet within 0.9999 cosine of the reference.
"""
import json
import math
import os
import string
import sys

SNIPPETS = [
    "def retry(fn, attempts=5):\n    for i in range(attempts):\n        return fn()",
    "How do I configure the HTTP timeout for the client?",
    "a",
    "Ünïcödé ☃ text with emoji 🚀 mixed in",
    # Past 128 word pieces, so the far relative-position buckets are read, and past the model's
    # 384, so it is cut.
    " ".join(["the router matches each route in order; first match wins"] * 12),
    "x" * 40 + " " + "yz" * 9,
]

HIDDEN, LAYERS, HEADS, FFN, POSITIONS, BUCKETS = 32, 2, 4, 64, 514, 32
SPECIAL = ["<s>", "<pad>", "</s>", "[UNK]", "<mask>"]
CHARS = string.ascii_lowercase + string.digits + string.punctuation


def vocab():
    words = SPECIAL + list(CHARS) + ["##" + c for c in CHARS]
    return {w: i for i, w in enumerate(words)}


def tensor(np, shape, k, scale=0.4):
    """A weight as a fixed formula of its element's index (k tells tensors apart)."""
    n = int(np.prod(shape))
    i = np.arange(n, dtype=np.float64)
    return (scale * np.sin(i * 0.7311 + k * 1.37) * np.cos(i * 0.0131 + k)).astype(np.float32).reshape(shape)


def make(d):
    import numpy as np
    from safetensors.numpy import save_file

    os.makedirs(os.path.join(d, "1_Pooling"), exist_ok=True)
    v = vocab()
    config = {
        "architectures": ["MPNetModel"],
        "model_type": "mpnet",
        "vocab_size": len(v),
        "hidden_size": HIDDEN,
        "num_hidden_layers": LAYERS,
        "num_attention_heads": HEADS,
        "intermediate_size": FFN,
        "hidden_act": "gelu",
        "hidden_dropout_prob": 0.1,
        "attention_probs_dropout_prob": 0.1,
        "max_position_embeddings": POSITIONS,
        "relative_attention_num_buckets": BUCKETS,
        "layer_norm_eps": 1e-5,
        "initializer_range": 0.02,
        "pad_token_id": 1,
        "bos_token_id": 0,
        "eos_token_id": 2,
    }
    w = {}
    k = [0]

    def put(name, shape, scale=0.4):
        k[0] += 1
        w[name] = tensor(np, shape, k[0], scale)

    def norm(name):
        w[name + ".weight"] = (1.0 + tensor(np, (HIDDEN,), k[0] + 100, 0.1)).astype(np.float32)
        w[name + ".bias"] = tensor(np, (HIDDEN,), k[0] + 200, 0.1)
        k[0] += 1

    put("embeddings.word_embeddings.weight", (len(v), HIDDEN), 1.0)
    put("embeddings.position_embeddings.weight", (POSITIONS, HIDDEN), 0.5)
    norm("embeddings.LayerNorm")
    # Large enough that a wrong bucket changes the vectors.
    put("encoder.relative_attention_bias.weight", (BUCKETS, HEADS), 8.0)
    for i in range(LAYERS):
        p = f"encoder.layer.{i}."
        for x in "qkvo":
            put(p + f"attention.attn.{x}.weight", (HIDDEN, HIDDEN))
            put(p + f"attention.attn.{x}.bias", (HIDDEN,), 0.1)
        norm(p + "attention.LayerNorm")
        put(p + "intermediate.dense.weight", (FFN, HIDDEN))
        put(p + "intermediate.dense.bias", (FFN,), 0.1)
        put(p + "output.dense.weight", (HIDDEN, FFN))
        put(p + "output.dense.bias", (HIDDEN,), 0.1)
        norm(p + "output.LayerNorm")
    save_file(w, os.path.join(d, "model.safetensors"))
    tokenizer = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [
            {"id": v[t], "content": t, "single_word": False, "lstrip": False, "rstrip": False,
             "normalized": False, "special": True}
            for t in SPECIAL
        ],
        "normalizer": {"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True,
                       "strip_accents": None, "lowercase": True},
        "pre_tokenizer": {"type": "BertPreTokenizer"},
        "post_processor": {"type": "RobertaProcessing", "sep": ["</s>", 2], "cls": ["<s>", 0],
                           "trim_offsets": True, "add_prefix_space": False},
        "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": True},
        "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
                  "max_input_chars_per_word": 100, "vocab": v},
    }
    files = {
        "config.json": config,
        "tokenizer.json": tokenizer,
        "tokenizer_config.json": {"do_lower_case": True, "bos_token": "<s>", "eos_token": "</s>",
                                  "sep_token": "</s>", "cls_token": "<s>", "unk_token": "[UNK]",
                                  "pad_token": "<pad>", "mask_token": "<mask>",
                                  "model_max_length": 512, "tokenizer_class": "MPNetTokenizer"},
        "sentence_bert_config.json": {"max_seq_length": 384, "do_lower_case": False},
        "1_Pooling/config.json": {"word_embedding_dimension": HIDDEN, "pooling_mode_cls_token": False,
                                  "pooling_mode_mean_tokens": True, "pooling_mode_max_tokens": False,
                                  "pooling_mode_mean_sqrt_len_tokens": False},
        "modules.json": [
            {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
            {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
            {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"},
        ],
    }
    for name, value in files.items():
        with open(os.path.join(d, name), "w") as f:
            json.dump(value, f, indent=1)
    print(f"wrote a tiny MPNet ({LAYERS} layers, hidden {HIDDEN}, {len(v)} word pieces) to {d}")


def reference(d):
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    import sentence_transformers
    import torch
    from sentence_transformers import SentenceTransformer

    m = SentenceTransformer(d, device="cpu")
    vectors = m.encode(SNIPPETS, normalize_embeddings=True, convert_to_numpy=True)
    out = {
        "generator": f"sentence-transformers {sentence_transformers.__version__}, torch {torch.__version__}, CPU",
        "model": "the tiny MPNet of scripts/mpnet-reference.py make",
        "max_seq_length": m.max_seq_length,
        "snippets": SNIPPETS,
        "vectors": [[round(float(x), 7) for x in v] for v in vectors],
    }
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures", "mpnet-reference.json")
    with open(path, "w") as f:
        json.dump(out, f)
        f.write("\n")
    print(f"wrote {os.path.normpath(path)} ({len(vectors)} vectors of {len(vectors[0])})")


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("make", "reference"):
        sys.exit("usage: scripts/mpnet-reference.py make|reference DIR")
    {"make": make, "reference": reference}[sys.argv[1]](sys.argv[2])
