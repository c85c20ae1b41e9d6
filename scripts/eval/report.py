#!/usr/bin/env python3
"""Scores trove bundles on question sets and prints one table: set × chunker × embedder × mode,
with R@1, R@10 and MRR@10 (the scorer of ../shared/eval/run_eval.py, imported, so the figures are
the same as it prints).

usage: report.py --trove T --shared DIR --set NAME=QUERIES[@GROUP...] --bundle SET:LABEL=DIR...
                 [--halves A=dir1,dir2 B=...] [--json OUT]

Each --bundle names the set it is scored on and a label `chunker/embedder` (e.g. dev:ast/hash).
A set's halves are the questions whose answer lies under the listed top-level folders; each half
and the whole set are printed. Queries run several at a time (each is its own `trove query`).

After the table, paired comparisons on the same questions (--compare, on by default): each local
model's hybrid against its own vector arm and against BM25, and AST against `--chunker lines`
(BM25). Each line gives the questions one side has in its top 10 and the other not, the mean
difference of reciprocal ranks (ΔMRR@10) with a 95% paired bootstrap interval (10,000 resamples of
the questions), and a two-sided paired randomization p (10,000 sign flips). Seeded: the same ranks
print the same figures. An interval that holds 0 is a difference these questions cannot tell
from chance.
"""
import argparse
import concurrent.futures as cf
import json
import os
import random
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--trove", required=True)
    ap.add_argument("--shared", required=True)
    ap.add_argument("--set", action="append", default=[], help="NAME=QUERIES.jsonl")
    ap.add_argument("--bundle", action="append", default=[], help="SET:CHUNKER/EMBEDDER=DIR")
    ap.add_argument("--half", action="append", default=[], help="SET:HALF=dir1,dir2")
    ap.add_argument("--modes", default="bm25,vector,hybrid")
    ap.add_argument("--extra", default="", help="extra trove query arguments, space-separated")
    ap.add_argument("--jobs", type=int, default=max(2, os.cpu_count() or 2))
    ap.add_argument("--json", help="write per-query ranks here")
    ap.add_argument("--no-compare", dest="compare", action="store_false",
                    help="leave out the paired comparisons")
    a = ap.parse_args()
    sys.path.insert(0, os.path.join(a.shared, "eval"))
    import run_eval  # the shared scorer

    sets = {}
    for s in a.set:
        name, path = s.split("=", 1)
        sets[name] = [json.loads(l) for l in open(path) if l.strip()]
    halves = {}
    for h in a.half:
        key, dirs = h.split("=", 1)
        halves[key] = set(dirs.split(","))
    extra = a.extra.split()
    ranks_out = {}
    rows = []
    per_group = {}  # (group, chunker, embedder, mode) -> ranks, in the group's question order
    for b in a.bundle:
        head, bdir = b.split("=", 1)
        set_name, label = head.split(":", 1)
        chunker, embedder = label.split("/", 1)
        qs = sets[set_name]
        for mode in a.modes.split(","):
            if embedder != "hash" and mode == "bm25":
                continue  # BM25 does not depend on the embedder: the hash row says it
            def rank(q):
                res = run_query(a.trove, bdir, q["query"], 10, mode, extra)
                return run_eval.first_hit_rank(res[:10], q["answers"])
            with cf.ThreadPoolExecutor(a.jobs) as ex:
                ranks = list(ex.map(rank, qs))
            ranks_out[f"{set_name}:{label}:{mode}"] = {q["id"]: r for q, r in zip(qs, ranks)}
            groups = [(set_name, list(range(len(qs))))]
            for key, dirs in sorted(halves.items()):
                s, h = key.split(":", 1)
                if s == set_name:
                    idx = [i for i, q in enumerate(qs) if q["answers"][0]["path"].split("/")[0] in dirs]
                    groups.append((f"{set_name} half {h}", idx))
            for gname, idx in groups:
                rs = [ranks[i] for i in idx]
                per_group[(gname, chunker, embedder, mode)] = rs
                n = len(rs)
                r1 = sum(1 for x in rs if x is not None and x <= 1) / n
                r10 = sum(1 for x in rs if x is not None and x <= 10) / n
                mrr = sum(1.0 / x for x in rs if x is not None) / n
                rows.append((gname, n, chunker, embedder, mode, r1, r10, mrr))
    order = {}
    for r in rows:
        order.setdefault(r[0], len(order))
    rows.sort(key=lambda r: order[r[0]])
    print(f"{'questions':<22} {'n':>4} {'chunker':<7} {'embedder':<12} {'mode':<7} {'R@1':>6} {'R@10':>6} {'MRR@10':>7}")
    for g, n, c, e, m, r1, r10, mrr in rows:
        print(f"{g:<22} {n:>4} {c:<7} {e:<12} {m:<7} {r1:>6.3f} {r10:>6.3f} {mrr:>7.3f}")
    if a.compare:
        print_comparisons(per_group, list(order))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(ranks_out, f)


def comparisons(per_group, groups):
    """(group, label of the first side, label of the second, its ranks, the other's) for every
    local model's hybrid against its vector arm and against BM25, and AST against lines."""
    out = []
    for g in groups:
        rows = {k[1:]: v for k, v in per_group.items() if k[0] == g}
        for (chunker, embedder, mode), ranks in rows.items():
            if mode != "hybrid" or embedder == "hash":
                continue
            for arm, key in (("vector", (chunker, embedder, "vector")),
                             ("bm25", (chunker, "hash", "bm25"))):
                if key in rows:
                    out.append((g, f"{chunker}/{embedder} hybrid", f"{arm}", ranks, rows[key]))
        if ("ast", "hash", "bm25") in rows and ("lines", "hash", "bm25") in rows:
            out.append((g, "ast bm25", "lines bm25", rows[("ast", "hash", "bm25")],
                        rows[("lines", "hash", "bm25")]))
    return out


def paired(x, y, draws=10000, seed=0):
    """Mean of x - y (reciprocal ranks), its 95% bootstrap interval and a two-sided sign-flip p."""
    d = [a - b for a, b in zip(x, y)]
    n = len(d)
    mean = sum(d) / n
    rng = random.Random(seed)
    boot = sorted(sum(d[rng.randrange(n)] for _ in range(n)) / n for _ in range(draws))
    lo, hi = boot[int(0.025 * draws)], boot[int(0.975 * draws) - 1]
    nz = [v for v in d if v]
    extreme = 0
    for _ in range(draws):
        s = sum(v if rng.random() < 0.5 else -v for v in nz)
        if abs(s) >= abs(mean * n) - 1e-12:
            extreme += 1
    return mean, lo, hi, (extreme + 1) / (draws + 1)


def print_comparisons(per_group, groups):
    rows = comparisons(per_group, groups)
    if not rows:
        return
    print()
    print(f"{'questions':<22} {'this':<24} {'against':<10} {'top 10 +/-':>10} "
          f"{'ΔMRR@10':>8} {'95% interval':>17} {'p':>6}")
    rr = lambda r: 1.0 / r if r is not None and r <= 10 else 0.0
    for g, this, other, xs, ys in rows:
        top = lambda r: r is not None and r <= 10
        won = sum(1 for a, b in zip(xs, ys) if top(a) and not top(b))
        lost = sum(1 for a, b in zip(xs, ys) if top(b) and not top(a))
        mean, lo, hi, p = paired([rr(r) for r in xs], [rr(r) for r in ys])
        print(f"{g:<22} {this:<24} {other:<10} {f'+{won}/-{lost}':>10} "
              f"{mean:>+8.3f} {f'[{lo:+.3f}, {hi:+.3f}]':>17} "
              f"{f'{p:.3f}' if p >= 0.001 else '<0.001':>6}")


def run_query(trove, bundle, q, k, mode, extra):
    import subprocess
    cmd = [trove, "query", bundle, q, "--format", "jsonl", "-k", str(k), "--mode", mode] + extra
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode not in (0, 1):
        raise SystemExit(f"query failed ({p.returncode}): {' '.join(cmd)}\n{p.stderr}")
    return [json.loads(l) for l in p.stdout.splitlines() if l.strip()]


if __name__ == "__main__":
    sys.exit(main())
