"""Times the web pages of `trove serve` (see scripts/bench-web.sh)."""
import argparse
import json
import pathlib
import statistics
import subprocess
import time
import urllib.parse
import urllib.request


def timed(url):
    start = time.perf_counter()
    with urllib.request.urlopen(url) as r:
        r.read()
        status = r.status
    return (time.perf_counter() - start) * 1000, status


def row(name, ms, goal=None):
    ms = sorted(ms)
    p50, p95 = statistics.median(ms), ms[min(len(ms) - 1, int(0.95 * len(ms)))]
    verdict = "" if goal is None else f"  goal p50 <= {goal} ms: {'met' if p50 <= goal else 'NOT met'}"
    print(f"{name:<44} p50 {p50:7.1f} ms   p95 {p95:7.1f} ms   n={len(ms)}{verdict}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--trove", required=True)
    ap.add_argument("--bundle", required=True)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--synthetic", action="store_true",
                    help="the queries of scripts/bench_query.py (words of its generated corpus)")
    a = ap.parse_args()
    queries = []
    if a.synthetic:
        import bench_query
        queries = bench_query.queries(40)
    for f in sorted(pathlib.Path("scripts/eval/queries").glob("*.jsonl")):
        queries += [json.loads(l)["query"] for l in f.read_text().splitlines() if l.strip()]
    queries = queries[:40]
    big = subprocess.run(
        [a.trove, "sql", a.bundle, "--format", "csv",
         "SELECT path, lines FROM files WHERE lines BETWEEN 4000 AND 6000 ORDER BY lines DESC LIMIT 1"],
        capture_output=True, text=True, check=True).stdout.strip().splitlines()[1:]
    server = subprocess.Popen([a.trove, "serve", a.bundle, "--listen", "127.0.0.1:0", "--no-access-log"],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        line = server.stdout.readline().strip()
        base = line.removeprefix("trove serve: listening on ")
        chunks = json.loads(urllib.request.urlopen(base + "/bundles").read())
        print(f"bundle {a.bundle}: {chunks}"[:300])
        # Warm: the caches a first request builds (inverted index, vectors, rows).
        for q in queries[:3]:
            timed(base + "/?partial=1&q=" + urllib.parse.quote(q))
        frag, page = [], []
        for _ in range(a.rounds):
            for q in queries:
                ms, st = timed(base + "/?partial=1&q=" + urllib.parse.quote(q))
                assert st == 200
                frag.append(ms)
        for q in queries:
            page.append(timed(base + "/?q=" + urllib.parse.quote(q))[0])
        row("search: results fragment (first results)", frag, 100)
        row("search: whole page", page)
        if big:
            path, lines = big[0].rsplit(",", 1)
            ms = [timed(base + "/file/" + urllib.parse.quote(path))[0] for _ in range(10)]
            row(f"file page, {lines} lines", ms, 200)
        else:
            print("file page: no file of 4,000 to 6,000 lines in the bundle")
    finally:
        server.terminate()
        server.wait()


if __name__ == "__main__":
    main()
