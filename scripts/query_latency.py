#!/usr/bin/env python3
"""Whole-process query latency of `trove query` (warm cache), p50 per mode.

Generates the same synthetic corpus as `benches/query.rs` (Rust files of small functions drawn from a
fixed vocabulary), indexes it with the given trove binary, then times `trove query` processes:

    scripts/query_latency.py --trove target/release/trove --chunks 100000 [--runs 21] [--work DIR]

The first run of each mode warms the query cache and the page cache and is not counted.
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

WORDS = ("parse config request session cookie retry backoff token buffer stream cache index query "
         "render widget payment invoice schema column vector matrix socket handler router encode "
         "decode compress shard merge commit branch manifest").split()
FUNCTIONS_PER_FILE = 50
MASK = (1 << 64) - 1


def generate(root, chunks):
    state = 0x9E3779B97F4A7C15

    def word():
        nonlocal state
        state ^= (state << 13) & MASK
        state ^= state >> 7
        state ^= (state << 17) & MASK
        return WORDS[state % len(WORDS)]

    files = -(-chunks // FUNCTIONS_PER_FILE)
    for f in range(files):
        src = []
        for i in range(FUNCTIONS_PER_FILE):
            a, b, c = word(), word(), word()
            src.append(f"/// {a} the {b} with {c}.\nfn {a}_{b}_{i}(x: u32) -> u32 {{\n"
                       f"    let {c} = x + {i};\n    {c} * 2\n}}\n\n")
        d = os.path.join(root, f"m{f // 100:03d}")
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, f"f{f}.rs"), "w") as fh:
            fh.write("".join(src))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trove", default="target/release/trove")
    ap.add_argument("--chunks", type=int, default=100_000)
    ap.add_argument("--runs", type=int, default=21)
    ap.add_argument("--work", help="keep the corpus and bundle here (reused when present)")
    ap.add_argument("--query", default="retry backoff session")
    a = ap.parse_args()
    work = a.work or tempfile.mkdtemp(prefix="trove-latency-")
    repo, bundle = os.path.join(work, "repo"), os.path.join(work, "bundle")
    if not os.path.isdir(repo):
        generate(repo, a.chunks)
    if not os.path.isfile(os.path.join(bundle, "manifest.json")):
        t = time.perf_counter()
        subprocess.run([a.trove, "index", repo, "-o", bundle, "--quiet"], check=True)
        print(f"indexed {a.chunks} chunks in {time.perf_counter() - t:.1f} s", file=sys.stderr)
    print(f"{'mode':8} {'p50 ms':>8} {'p90 ms':>8}   ({a.runs} runs, whole process, warm)")
    for mode in ("bm25", "vector", "hybrid"):
        cmd = [a.trove, "query", bundle, a.query, "--mode", mode, "--format", "jsonl"]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        times = []
        for _ in range(a.runs):
            t = time.perf_counter()
            subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
            times.append((time.perf_counter() - t) * 1000)
        times.sort()
        print(f"{mode:8} {statistics.median(times):8.1f} {times[int(len(times) * 0.9)]:8.1f}")


if __name__ == "__main__":
    main()
