#!/usr/bin/env python3
"""The body of scripts/bench-query.sh: query latency at 100k and 1M chunks, side by side.

For each size: generates a synthetic corpus (Rust files of small functions whose names, comments
and bodies draw from a fixed vocabulary, the same as benches/query.rs), indexes it with trove, and
times 50 queries (two to four vocabulary words each, fixed seed):
  - whole process: `trove query` started once per query, warm page and query caches, p50/p95;
  - warm in-process: the query_latency example (bundle opened once), BM25, vector and hybrid
    (the top 10 with their rows, no text, as the tantivy peer returns ids), BM25 with the hits'
    text (what the text output's snippets cost), and the vector floor, a brute-force f32 scan of
    every embedding;
  - tantivy: the same chunks (exported with `trove sql --format json`) in a tantivy index, the
    same queries.
Then the ratios the targets are stated in.

With --segments K (bundle v5): the same corpus committed in K steps — each adds the next K-th of the
files and edits a few files of earlier steps, so older segments carry dead rows — indexed with one
`trove index --since auto --no-compact` per step into a bundle of K segments, and a compacted copy
(`trove compact`, one segment, the same live rows). Both are timed as above (no tantivy), and the
ratio segmented / compacted p50 is printed per mode (target <= 1.5).

usage: bench_query.py --trove T --example E --tantivy P [--sizes 100000,1000000] [--work DIR]
                      [--segments K]
"""
import argparse
import json
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


class Words:
    """xorshift over WORDS, as benches/query.rs."""

    def __init__(self, seed=0x9E3779B97F4A7C15):
        self.state = seed

    def next(self):
        s = self.state
        s ^= (s << 13) & MASK
        s ^= s >> 7
        s ^= (s << 17) & MASK
        self.state = s
        return WORDS[s % len(WORDS)]


def generate(root, chunks):
    w = Words()
    for f in range(-(-chunks // FUNCTIONS_PER_FILE)):
        src = []
        for i in range(FUNCTIONS_PER_FILE):
            a, b, c = w.next(), w.next(), w.next()
            src.append(f"/// {a} the {b} with {c}.\nfn {a}_{b}_{i}(x: u32) -> u32 {{\n"
                       f"    let {c} = x + {i};\n    {c} * 2\n}}\n\n")
        d = os.path.join(root, f"m{f // 100:03d}")
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, f"f{f}.rs"), "w") as fh:
            fh.write("".join(src))


def git(repo, *args):
    subprocess.run(["git", "-C", repo, "-c", "user.name=bench", "-c", "user.email=bench@example.com",
                    *args], check=True, stdout=subprocess.DEVNULL)


def segmented(trove, base, n, k):
    """A bundle of `k` segments over the corpus of `n` chunks (see the module docs), and its
    compacted copy; reused when present."""
    repo, stage = os.path.join(base, "repo"), os.path.join(base, f"seg{k}-repo")
    seg, comp = os.path.join(base, f"bundle-seg{k}"), os.path.join(base, f"bundle-seg{k}-compacted")
    if os.path.isfile(os.path.join(comp, "manifest.json")):
        return seg, comp
    subprocess.run(["rm", "-rf", stage, seg, comp], check=True)
    files = sorted(os.path.relpath(os.path.join(d, f), repo)
                   for d, _, fs in os.walk(repo) for f in fs)
    os.makedirs(stage)
    git(stage, "init", "-q")
    t = time.perf_counter()
    for step in range(k):
        for rel in files[step::k]:
            dst = os.path.join(stage, rel)
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            subprocess.run(["cp", os.path.join(repo, rel), dst], check=True)
        # A few files of the earlier steps change: their rows in older segments become dead.
        earlier = [f for i, f in enumerate(files) if i % k < step]
        for rel in earlier[::max(1, len(earlier) // 50)][:50]:
            with open(os.path.join(stage, rel), "a") as fh:
                fh.write(f"\n/// edited in step {step}\nfn edited_{step}() {{}}\n")
        git(stage, "add", "-A")
        git(stage, "commit", "-q", "-m", f"step {step}")
        args = [trove, "index", stage, "-o", seg, "--quiet", "--no-compact"]
        subprocess.run(args + (["--since", "auto"] if step else []), check=True)
    print(f"[{n}] {k} segments indexed in {time.perf_counter() - t:.1f} s", file=sys.stderr)
    subprocess.run(["cp", "-a", seg, comp], check=True)
    subprocess.run([trove, "compact", comp, "--quiet"], check=True)
    return seg, comp


def timed_pair(trove, example, bundles, qs, qfile):
    """Process and in-process p50/p95 of each of `bundles`; process runs alternate between the
    bundles query by query, so a noisy neighbour slows both alike."""
    rows = {b: {} for b in bundles}
    for mode in ("bm25", "vector", "hybrid"):
        for b, p in whole_process(trove, bundles, qs, mode).items():
            rows[b][f"{mode} (process)"] = p
    for b in bundles:
        out = subprocess.run([example, b, qfile], check=True, capture_output=True, text=True).stdout
        for line in out.splitlines():
            r = json.loads(line)
            if r["what"] != "vector-floor-f32":
                rows[b][f"{r['what']} (in-process)"] = (r["p50_ms"], r["p95_ms"])
    return rows


def queries(n=50):
    w = Words(0x2545F4914F6CDD1D)
    return [" ".join(w.next() for _ in range(2 + i % 3)) for i in range(n)]


def pct(ms, p):
    ms = sorted(ms)
    return ms[min(int(len(ms) * p), len(ms) - 1)]


def whole_process(trove, bundles, qs, mode):
    """`trove query` started once per query on each of `bundles` (alternating query by query, so a
    noisy neighbour slows them alike), warm: p50/p95 per bundle."""
    cmd = lambda b, q: [trove, "query", b, q, "--mode", mode, "--format", "jsonl", "-k", "10"]
    for b in bundles:
        subprocess.run(cmd(b, qs[0]), check=True, stdout=subprocess.DEVNULL)
    ms = {b: [] for b in bundles}
    for q in qs:
        for b in bundles:
            t = time.perf_counter()
            subprocess.run(cmd(b, q), check=True, stdout=subprocess.DEVNULL)
            ms[b].append((time.perf_counter() - t) * 1000)
    return {b: (pct(v, 0.5), pct(v, 0.95)) for b, v in ms.items()}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trove", required=True)
    ap.add_argument("--example", required=True, help="the query_latency example binary")
    ap.add_argument("--tantivy", required=True, help="the tantivy-bm25 peer binary")
    ap.add_argument("--sizes", default="100000,1000000")
    ap.add_argument("--work", help="keep corpora and bundles here (reused when present)")
    ap.add_argument("--segments", type=int, help="compare a bundle of this many segments with its compaction")
    a = ap.parse_args()
    work = a.work or tempfile.mkdtemp(prefix="trove-bench-query-")
    os.makedirs(work, exist_ok=True)
    qs = queries()
    qfile = os.path.join(work, "queries.txt")
    with open(qfile, "w") as fh:
        fh.write("\n".join(qs) + "\n")
    summary = []
    for n in map(int, a.sizes.split(",")):
        base = os.path.join(work, str(n))
        repo, bundle = os.path.join(base, "repo"), os.path.join(base, "bundle")
        if not os.path.isdir(repo):
            generate(repo, n)
        if a.segments:
            seg, comp = segmented(a.trove, base, n, a.segments)
            got = timed_pair(a.trove, a.example, (seg, comp), qs, qfile)
            m = json.load(open(os.path.join(seg, "manifest.json")))
            stored = sum(s["chunks"] for s in m["segments"])
            print(f"\n{n} chunks: {len(m['segments'])} segments ({m['counts']['chunks']} live chunks, "
                  f"{stored - m['counts']['chunks']} dead) vs compacted; {len(qs)} queries")
            print(f"  {'':28} {'segmented p50':>14} {'p95':>9} {'compacted p50':>14} {'p95':>9} {'ratio p50':>10}")
            worst = 0
            for k in got[seg]:
                (sp, s95), (cp, c95) = got[seg][k], got[comp][k]
                worst = max(worst, sp / cp)
                print(f"  {k:28} {sp:14.2f} {s95:9.2f} {cp:14.2f} {c95:9.2f} {sp / cp:9.2f}x")
            summary.append((n, f"  worst p50 ratio segmented / compacted {worst:.2f}x (target <= 1.5)"))
            continue
        # A kept bundle this trove cannot query (another format version) is indexed again.
        usable = os.path.isfile(os.path.join(bundle, "manifest.json")) and subprocess.run(
            [a.trove, "query", bundle, "parse", "--mode", "bm25", "-k", "1", "--format", "jsonl"],
            capture_output=True).returncode == 0
        if not usable:
            t = time.perf_counter()
            subprocess.run([a.trove, "index", repo, "-o", bundle, "--quiet"], check=True)
            print(f"[{n}] indexed in {time.perf_counter() - t:.1f} s", file=sys.stderr)
        rows = {}
        for mode in ("bm25", "vector", "hybrid"):
            rows[f"{mode} (process)"] = whole_process(a.trove, [bundle], qs, mode)[bundle]
        out = subprocess.run([a.example, bundle, qfile], check=True, capture_output=True, text=True).stdout
        for line in out.splitlines():
            r = json.loads(line)
            name = "vector floor (f32 scan)" if r["what"] == "vector-floor-f32" else f"{r['what']} (in-process)"
            rows[name] = (r["p50_ms"], r["p95_ms"])
        chunks = os.path.join(base, "chunks.json")
        if not os.path.isfile(chunks):
            with open(chunks + ".tmp", "w") as fh:
                subprocess.run([a.trove, "sql", bundle, "SELECT chunk_id, content FROM chunks", "--format", "json"],
                               check=True, stdout=fh)
            os.replace(chunks + ".tmp", chunks)
        tdir = os.path.join(base, "tantivy")
        subprocess.run(["rm", "-rf", tdir], check=True)
        r = json.loads(subprocess.run([a.tantivy, chunks, qfile, tdir], check=True, capture_output=True, text=True).stdout)
        rows["tantivy bm25 (in-process)"] = (r["p50_ms"], r["p95_ms"])
        print(f"\n{n} chunks ({len(qs)} queries; tantivy built its index in {r['build_secs']:.1f} s)")
        print(f"  {'':28} {'p50 ms':>9} {'p95 ms':>9}")
        for k, (p50, p95) in rows.items():
            print(f"  {k:28} {p50:9.2f} {p95:9.2f}")
        p = lambda k: rows[k][0]
        bm, vec, hyb = p("bm25 (in-process)"), p("vector (in-process)"), p("hybrid (in-process)")
        ratios = (f"  ratios (p50, in-process): vector / f32 floor {vec / p('vector floor (f32 scan)'):.2f}x (target <= 2)   "
                  f"bm25 / tantivy {bm / p('tantivy bm25 (in-process)'):.2f}x (target <= 3)   "
                  f"hybrid / (bm25 + vector) {hyb / (bm + vec):.2f}x (target <= 1)")
        print(ratios)
        summary.append((n, ratios))
    print()
    for n, r in summary:
        print(f"{n:>8} chunks:{r[1:]}")


if __name__ == "__main__":
    main()
