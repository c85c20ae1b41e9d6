#!/usr/bin/env python3
"""Stress check for the refs cache under `trove serve`: many handles resolving the same
`refs-v1-*.parquet` at once. Serves BUNDLE (one of several segments: only those cache their
resolved references) with W workers, and N times removes the cache's refs files and sends P
concurrent `/refs` requests; every one must answer 200. Before the cache file was put in place
without replacing another handle's (see `Bundle::cache_refs`), about 1 request in 50–120 got a 500
("TProtocolException: Invalid data": DuckDB read one copy at another's offsets).

usage: scripts/refs-cache-race.py BUNDLE [--workers 4] [--rounds 100] [--parallel 6]
needs: a release build of trove ($TROVE or $CARGO_TARGET_DIR/release/trove)
"""
import argparse
import glob
import http.client
import os
import subprocess
import sys
import tempfile
import threading
from pathlib import Path


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("bundle")
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=100)
    ap.add_argument("--parallel", type=int, default=6)
    a = ap.parse_args()
    trove = os.environ.get("TROVE") or str(
        Path(os.environ.get("CARGO_TARGET_DIR", "target")) / "release/trove"
    )
    cache = tempfile.mkdtemp(prefix="trove-refs-race-")
    env = dict(os.environ, TROVE_CACHE_DIR=cache)
    srv = subprocess.Popen(
        [trove, "serve", a.bundle, "--workers", str(a.workers), "--listen", "127.0.0.1:0", "--no-access-log"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
        text=True,
    )
    port = int(srv.stdout.readline().strip().rsplit(":", 1)[1])
    names = ["Layout", "Usage", "Options", "NewServer", "total", "UserService", "main", "handler"]
    follows = ["callers", "callees", "imports", "uses", "all"]
    errors, ok = [], [0]

    def ask(k):
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        c.request("GET", f"/refs?name={names[k % len(names)]}&follow={follows[k % len(follows)]}")
        r = c.getresponse()
        body = r.read()
        if r.status == 200:
            ok[0] += 1
        else:
            errors.append((r.status, body[:200]))

    try:
        for i in range(a.rounds):
            for f in glob.glob(os.path.join(cache, "refs-v1-*")):
                os.remove(f)
            ts = [threading.Thread(target=ask, args=(i * a.parallel + j,)) for j in range(a.parallel)]
            for t in ts:
                t.start()
            for t in ts:
                t.join()
    finally:
        srv.terminate()
        srv.wait()
    print(f"ok={ok[0]} errors={len(errors)}")
    for e in errors[:5]:
        print(e)
    sys.exit(1 if errors else 0)


if __name__ == "__main__":
    main()
