#!/usr/bin/env python3
"""Exports a sentence-transformers BERT or MPNet folder to ONNX, without PyTorch.

Usage: scripts/export-onnx.py MODEL_DIR [--out DIR] [--no-int8] [--check]

Reads MODEL_DIR/config.json and MODEL_DIR/model.safetensors and writes, next to them (or into
--out, with the tokenizer and pooling files copied so the folder stands alone):
  model.onnx       fp32: the encoder graph, built node by node from config.json with the weights
                   taken by name from the safetensors file; inputs input_ids, attention_mask,
                   token_type_ids (int64, [batch, seq]; MPNet has no token types: the first two);
                   output last_hidden_state ([batch, seq, hidden]). MPNet (all-mpnet-base-v2):
                   RoBERTa-style positions and one relative-position bias shared by every layer.
  model.int8.onnx  the same graph with dynamic, per-channel int8 weights on every weight MatMul
                   (onnxruntime.quantization.quantize_dynamic; activations are quantized per pass;
                   7-bit weights, so CPUs without VNNI do not saturate).
                   MPNet keeps every layer's feed-forward down-projection in fp32 (BERT: the first's).
                   The word-embedding table is stored int8 too, one scale per row (a Gather of
                   the int8 rows and their scales, then a multiply): all-MiniLM-L6-v2's file is
                   25 MB instead of 60, min cosine against sentence-transformers 0.9810 (0.9811
                   with the table in fp32).
Pooling and normalisation stay outside the graph: trove does them as the folder's
1_Pooling/config.json and modules.json say, as it does for the candle backend.

Needs onnx, numpy and safetensors (and onnxruntime for int8 and --check); never PyTorch.
--check runs both files on a few texts through onnxruntime and prints the cosine of each against
the fp32 graph's pooled vectors (a sanity check; the tests compare with the committed
sentence-transformers reference vectors).
"""
import argparse
import json
import math
import os
import shutil
import sys

try:
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    from safetensors.numpy import load_file
except ImportError as e:  # pragma: no cover - a message, not a traceback
    sys.exit(f"export-onnx.py: {e.name} is missing: pip install onnx numpy safetensors")

OPSET = 17  # LayerNormalization is a standard op from 17 on


class Graph:
    def __init__(self, weights, prefix):
        self.w = weights
        self.prefix = prefix
        self.nodes = []
        self.inits = {}
        self.n = 0

    def weight(self, name, transpose=False):
        """An initializer from the safetensors tensor `name` (a dense layer's weight is stored
        [out, in]; MatMul wants [in, out])."""
        key = self.prefix + name
        if key not in self.w:
            sys.exit(f"export-onnx.py: model.safetensors has no tensor {key!r}")
        if key not in self.inits:
            a = self.w[key].astype(np.float32)
            if transpose:
                a = np.ascontiguousarray(a.T)
            self.inits[key] = numpy_helper.from_array(a, key)
        return key

    def const(self, value, dtype=np.float32):
        self.n += 1
        name = f"const_{self.n}"
        self.inits[name] = numpy_helper.from_array(np.array(value, dtype=dtype), name)
        return name

    def op(self, op_type, inputs, node_name=None, **attrs):
        self.n += 1
        out = f"{op_type.lower()}_{self.n}"
        name = node_name or f"{op_type}_{self.n}"
        self.nodes.append(helper.make_node(op_type, inputs, [out], name=name, **attrs))
        return out

    def dense(self, x, name):
        # The MatMul is named after its layer, e.g. encoder.layer.0.output.dense.MatMul.
        y = self.op("MatMul", [x, self.weight(name + ".weight", transpose=True)], node_name=name + ".MatMul")
        return self.op("Add", [y, self.weight(name + ".bias")])

    def layer_norm(self, x, name, eps):
        return self.op(
            "LayerNormalization",
            [x, self.weight(name + ".weight"), self.weight(name + ".bias")],
            axis=-1,
            epsilon=eps,
        )


def gelu(g, x, act):
    if act in ("gelu", "gelu_python"):  # exact: 0.5 x (1 + erf(x / sqrt 2))
        e = g.op("Erf", [g.op("Div", [x, g.const(math.sqrt(2.0))])])
        return g.op("Mul", [g.op("Mul", [x, g.const(0.5)]), g.op("Add", [e, g.const(1.0)])])
    if act in ("gelu_new", "gelu_pytorch_tanh", "gelu_fast"):
        c = math.sqrt(2.0 / math.pi)
        x3 = g.op("Mul", [g.op("Mul", [x, x]), x])
        inner = g.op("Mul", [g.op("Add", [x, g.op("Mul", [x3, g.const(0.044715)])]), g.const(c)])
        return g.op("Mul", [g.op("Mul", [x, g.const(0.5)]), g.op("Add", [g.op("Tanh", [inner]), g.const(1.0)])])
    if act == "relu":
        return g.op("Relu", [x])
    sys.exit(f"export-onnx.py: hidden_act {act!r} is not supported (gelu, gelu_new, relu)")


def relative_buckets(n, num_buckets, max_distance=128):
    """MPNet's (T5's) bidirectional relative-position bucket of every (query, key) pair of a
    sequence of n tokens, [n, n], computed in float32 as the reference implementation does (an
    exact power of two, e.g. distance 16, must not land one bucket low)."""
    rel = np.arange(n)[None, :] - np.arange(n)[:, None]  # key - query
    d = -rel
    half = num_buckets // 2
    out = (d < 0).astype(np.int64) * half
    d = np.abs(d)
    exact = half // 2
    with np.errstate(divide="ignore"):
        far = np.log(d.astype(np.float32) / np.float32(exact))
        far = far / np.float32(math.log(max_distance / exact)) * np.float32(half - exact)
    far = exact + np.where(d < exact, 0, far).astype(np.int64)
    far = np.minimum(far, half - 1)
    return out + np.where(d < exact, d, far)


def is_mpnet(cfg):
    return cfg.get("model_type") == "mpnet"


def build(cfg, weights):
    kind = cfg.get("model_type") or "bert"
    if kind not in ("bert", "mpnet"):
        sys.exit(f"export-onnx.py: model_type {kind!r}: only BERT and MPNet encoders are supported")
    if cfg.get("position_embedding_type", "absolute") != "absolute":
        sys.exit("export-onnx.py: only absolute position embeddings are supported")
    prefix = next(
        (p for p in ("", "bert.", "model.", "mpnet.") if p + "embeddings.word_embeddings.weight" in weights), None
    )
    if prefix is None:
        sys.exit("export-onnx.py: model.safetensors has no embeddings.word_embeddings.weight (not a BERT encoder?)")
    mpnet = is_mpnet(cfg)
    hidden = cfg["hidden_size"]
    heads = cfg["num_attention_heads"]
    head = hidden // heads
    eps = float(cfg.get("layer_norm_eps", 1e-12))
    g = Graph(weights, prefix)

    # Embeddings: word + position (+ token type for BERT), then LayerNorm.
    ids, mask, types = "input_ids", "attention_mask", "token_type_ids"
    word = g.op("Gather", [g.weight("embeddings.word_embeddings.weight"), ids], axis=0)
    seq = g.op("Gather", [g.op("Shape", [ids]), g.const(1, np.int64)], axis=0)
    if mpnet:
        # RoBERTa-style positions: padding_idx + the token's place among the non-padding ones
        # (2, 3, ...); padding itself at padding_idx.
        pad = int(cfg.get("pad_token_id", 1))
        real = g.op("Cast", [g.op("Not", [g.op("Equal", [ids, g.const(pad, np.int64)])])], to=TensorProto.INT64)
        positions = g.op("Add", [g.op("Mul", [g.op("CumSum", [real, g.const(1, np.int64)]), real]), g.const(pad, np.int64)])
    else:
        positions = g.op("Range", [g.const(0, np.int64), seq, g.const(1, np.int64)])
    pos = g.op("Gather", [g.weight("embeddings.position_embeddings.weight"), positions], axis=0)
    if mpnet:
        x = g.op("Add", [word, pos])
    else:
        typ = g.op("Gather", [g.weight("embeddings.token_type_embeddings.weight"), types], axis=0)
        x = g.op("Add", [g.op("Add", [word, pos]), typ])
    x = g.layer_norm(x, "embeddings.LayerNorm", eps)

    # The attention mask as an additive bias: 0 where attended, -10000 on padding; [B, 1, 1, S].
    # (Two Unsqueezes, not one of two axes: the shape ONNX Runtime's attention fusion knows.)
    m = g.op("Unsqueeze", [g.op("Unsqueeze", [mask, g.const([1], np.int64)]), g.const([2], np.int64)])
    m = g.op("Cast", [m], to=TensorProto.FLOAT)
    bias = g.op("Mul", [g.op("Sub", [g.const(1.0), m]), g.const(-10000.0)])
    if mpnet:
        # One relative-position bias for every layer: the buckets of the longest sequence the
        # model takes, cut to this one's length, looked up per head; [1, H, S, S].
        n = int(cfg["max_position_embeddings"])
        table = g.const(relative_buckets(n, int(cfg.get("relative_attention_num_buckets", 32))), np.int64)
        zero, s1 = g.const([0, 0], np.int64), g.op("Unsqueeze", [seq, g.const([0], np.int64)])
        cut = g.op("Slice", [table, zero, g.op("Concat", [s1, s1], axis=0)])
        rel = g.op("Gather", [g.weight("encoder.relative_attention_bias.weight"), cut], axis=0)  # [S, S, H]
        rel = g.op("Unsqueeze", [g.op("Transpose", [rel], perm=[2, 0, 1]), g.const([0], np.int64)])
        bias = g.op("Add", [bias, rel])

    split_heads = g.const([0, 0, heads, head], np.int64)  # [B, S, H, D]
    merge_heads = g.const([0, 0, hidden], np.int64)
    scale = g.const(math.sqrt(head))
    # Where each layer's weights are: BERT's names, or MPNet's.
    qkvo, attn_norm = (
        (("attention.attn.q", "attention.attn.k", "attention.attn.v", "attention.attn.o"), "attention.LayerNorm")
        if mpnet
        else (
            ("attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense"),
            "attention.output.LayerNorm",
        )
    )
    for i in range(cfg["num_hidden_layers"]):
        p = f"encoder.layer.{i}."
        q = g.op("Transpose", [g.op("Reshape", [g.dense(x, p + qkvo[0]), split_heads])], perm=[0, 2, 1, 3])
        k = g.op("Transpose", [g.op("Reshape", [g.dense(x, p + qkvo[1]), split_heads])], perm=[0, 2, 3, 1])
        v = g.op("Transpose", [g.op("Reshape", [g.dense(x, p + qkvo[2]), split_heads])], perm=[0, 2, 1, 3])
        scores = g.op("Add", [g.op("Div", [g.op("MatMul", [q, k]), scale]), bias])
        probs = g.op("Softmax", [scores], axis=-1)
        ctx = g.op("Transpose", [g.op("MatMul", [probs, v])], perm=[0, 2, 1, 3])
        ctx = g.op("Reshape", [ctx, merge_heads])
        attn = g.dense(ctx, p + qkvo[3])
        x = g.layer_norm(g.op("Add", [attn, x]), p + attn_norm, eps)
        inter = gelu(g, g.dense(x, p + "intermediate.dense"), cfg.get("hidden_act", "gelu"))
        out = g.dense(inter, p + "output.dense")
        x = g.layer_norm(g.op("Add", [out, x]), p + "output.LayerNorm", eps)
    g.nodes.append(helper.make_node("Identity", [x], ["last_hidden_state"], name="output"))

    dims = ["batch", "sequence"]
    graph = helper.make_graph(
        g.nodes,
        "encoder",
        [helper.make_tensor_value_info(n, TensorProto.INT64, dims) for n in ((ids, mask) if mpnet else (ids, mask, types))],
        [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, dims + [hidden])],
        initializer=list(g.inits.values()),
    )
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", OPSET)],
        producer_name="trove-export-onnx",
        producer_version="1",
    )
    model.ir_version = 8  # readable by onnxruntime >= 1.14
    onnx.checker.check_model(model, full_check=True)
    return model


# Left in fp32: the first layer's feed-forward down-projection, whose input (the GELU output of
# the embeddings' first pass) has the widest range in BERT-family encoders, so one per-pass int8
# scale loses the most there. On all-MiniLM-L6-v2 against the sentence-transformers reference
# vectors: min cosine 0.980 with it quantized, 0.984 without, for ~5% of the int8 speed (figures
# from exact int8 arithmetic, before reduce_range below).
KEEP_FP32 = ["encoder.layer.0.output.dense.MatMul"]


def kept_fp32(cfg):
    """The MatMuls int8 leaves in fp32. MPNet keeps every layer's feed-forward down-projection:
    on all-mpnet-base-v2 against its fp32 vectors, cosine 0.82-0.91 on real texts with them
    quantized, 0.989-0.994 without, at 1.8x fp32's speed (one thread, 384 word pieces)."""
    if is_mpnet(cfg):
        return [f"encoder.layer.{i}.output.dense.MatMul" for i in range(cfg["num_hidden_layers"])]
    return KEEP_FP32


def quantize(fp32, int8, keep):
    try:
        import logging

        from onnxruntime.quantization import QuantType, quantize_dynamic

        logging.getLogger().setLevel(logging.ERROR)  # "consider pre-processing": not for a BERT graph
    except ImportError:
        sys.exit("export-onnx.py: int8 needs onnxruntime: pip install onnxruntime (or pass --no-int8)")
    quantize_dynamic(
        fp32,
        int8,
        per_channel=True,
        # 7-bit weights: a CPU without VNNI (AVX2 only) multiplies uint8 activations by int8
        # weights in int16 pairs that saturate; with 7 bits they cannot, so such a CPU computes
        # what exact int8 arithmetic (VNNI) does, to float rounding. On the 20 reference texts,
        # min cosine against sentence-transformers: 0.974 (AVX2) / 0.984 (exact) with 8 bits,
        # 0.981 on both with 7.
        reduce_range=True,
        weight_type=QuantType.QInt8,
        op_types_to_quantize=["MatMul"],
        nodes_to_exclude=keep,
        # Only MatMuls by a weight: the attention products of two activations stay fp32.
        extra_options={"MatMulConstBOnly": True},
    )


def quantize_embeddings(path):
    """Stores the word-embedding table of the graph at `path` as int8 with one fp32 scale per row
    (symmetric, 127 steps): its Gather becomes a Gather of the int8 rows, a Cast, a Gather of the
    rows' scales and a Mul. The table is most of a small encoder's bytes (MiniLM: 47 of 60 MB)."""
    m = onnx.load(path)
    g = m.graph
    inits = {i.name: i for i in g.initializer}
    node = next((n for n in g.node if n.op_type == "Gather" and n.input[0] in inits
                 and n.input[0].endswith("word_embeddings.weight")), None)
    if node is None:
        sys.exit("export-onnx.py: the graph has no word-embedding Gather to quantize")
    name, ids, out = node.input[0], node.input[1], node.output[0]
    table = numpy_helper.to_array(inits[name]).astype(np.float32)
    scale = np.abs(table).max(axis=1, keepdims=True) / 127.0
    scale[scale == 0] = 1.0
    rows = np.clip(np.round(table / scale), -127, 127).astype(np.int8)
    g.initializer.remove(inits[name])
    g.initializer.extend([numpy_helper.from_array(rows, name + ".int8"),
                          numpy_helper.from_array(scale.astype(np.float32), name + ".scale")])
    at = list(g.node).index(node)
    g.node.remove(node)
    for k, n in enumerate([
        helper.make_node("Gather", [name + ".int8", ids], [out + ".int8"], axis=0),
        helper.make_node("Cast", [out + ".int8"], [out + ".rows"], to=TensorProto.FLOAT),
        helper.make_node("Gather", [name + ".scale", ids], [out + ".scale"], axis=0),
        helper.make_node("Mul", [out + ".rows", out + ".scale"], [out]),
    ]):
        g.node.insert(at + k, n)
    onnx.save(m, path)


def pooled(sess, enc):
    ids = np.array([enc["ids"]], dtype=np.int64)
    feed = {
        "input_ids": ids,
        "attention_mask": np.ones_like(ids),
        "token_type_ids": np.zeros_like(ids),
    }
    feed = {i.name: feed[i.name] for i in sess.get_inputs()}
    h = sess.run(["last_hidden_state"], feed)[0][0]
    v = h.mean(axis=0)
    return v / np.linalg.norm(v)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("model_dir")
    ap.add_argument("--out", help="write here (default: MODEL_DIR); the folder's other files are copied")
    ap.add_argument("--no-int8", action="store_true", help="write model.onnx only")
    ap.add_argument("--check", action="store_true", help="compare int8 with fp32 on a few token sequences")
    a = ap.parse_args()
    src = a.model_dir
    for f in ("config.json", "model.safetensors"):
        if not os.path.isfile(os.path.join(src, f)):
            sys.exit(f"export-onnx.py: {src} has no {f} (a sentence-transformers model folder?)")
    out = a.out or src
    if out != src:
        shutil.copytree(src, out, dirs_exist_ok=True, ignore=shutil.ignore_patterns("*.onnx"))
    with open(os.path.join(src, "config.json")) as f:
        cfg = json.load(f)
    model = build(cfg, load_file(os.path.join(src, "model.safetensors")))
    fp32 = os.path.join(out, "model.onnx")
    tmp = fp32 + ".tmp"
    onnx.save(model, tmp)
    os.replace(tmp, fp32)
    print(f"wrote {fp32} ({os.path.getsize(fp32) / 1e6:.1f} MB)")
    if not a.no_int8:
        int8 = os.path.join(out, "model.int8.onnx")
        tmp = int8 + ".tmp"
        quantize(fp32, tmp, kept_fp32(cfg))
        quantize_embeddings(tmp)
        os.replace(tmp, int8)
        print(f"wrote {int8} ({os.path.getsize(int8) / 1e6:.1f} MB)")
        if a.check:
            import onnxruntime as ort

            rng = np.random.default_rng(7)
            s32 = ort.InferenceSession(fp32, providers=["CPUExecutionProvider"])
            s8 = ort.InferenceSession(int8, providers=["CPUExecutionProvider"])
            worst = 1.0
            for n in (8, 32, 128, 256):
                # Between the model's own start and end tokens ([CLS] [SEP], or <s> </s>).
                first, last = (0, 2) if is_mpnet(cfg) else (101, 102)
                ids = [first] + list(rng.integers(min(1000, cfg["vocab_size"] // 2), cfg["vocab_size"], n - 2)) + [last]
                c = float(pooled(s32, {"ids": ids}) @ pooled(s8, {"ids": ids}))
                worst = min(worst, c)
                print(f"  {n:4} tokens: int8 vs fp32 cosine {c:.4f}")
            print(f"  min cosine {worst:.4f}")


if __name__ == "__main__":
    main()
