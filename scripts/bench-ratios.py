#!/usr/bin/env python3
"""Prints trove's chunking throughput beside text-splitter's, per fixture, from the criterion
results of `cargo bench --bench pipeline` (group chunk-vs-text-splitter), and the ratio.

    cargo bench --bench pipeline -- chunk-vs-text-splitter
    scripts/bench-ratios.py [CRITERION_DIR]   (default: $CARGO_TARGET_DIR/criterion or target/criterion)

Target: trove >= 2x text-splitter's throughput. Both sides chunk the same text with the same
tree-sitter grammar; trove also extracts symbols, docs, signatures and references while it chunks.
"""
import glob
import json
import os
import statistics
import sys

root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.environ.get("CARGO_TARGET_DIR", "target"), "criterion")
rows = {}
for bj in glob.glob(os.path.join(root, "**", "new", "benchmark.json"), recursive=True):
    b = json.load(open(bj))
    if b.get("group_id") != "chunk-vs-text-splitter":
        continue
    est = json.load(open(os.path.join(os.path.dirname(bj), "estimates.json")))
    fixture, _, side = b["function_id"].rpartition("/")
    bytes_ = (b.get("throughput") or {}).get("Bytes")
    ns = est["median"]["point_estimate"]
    rows.setdefault(fixture, {})[side] = (bytes_ / ns * 1e3) if bytes_ else None  # MB/s
if not rows:
    sys.exit(f"no chunk-vs-text-splitter results under {root}: run `cargo bench --bench pipeline -- chunk-vs-text-splitter` first")
print(f"{'fixture':34} {'trove MB/s':>11} {'text-splitter MB/s':>19} {'ratio':>7}")
ratios = []
for fixture in sorted(rows):
    r = rows[fixture]
    t, s = r.get("trove"), r.get("text-splitter")
    if not t or not s:
        continue
    ratios.append(t / s)
    print(f"{fixture:34} {t:11.1f} {s:19.1f} {t / s:6.2f}x")
print(f"{'geometric mean':34} {'':11} {'':19} {statistics.geometric_mean(ratios):6.2f}x   (target >= 2.00)")
