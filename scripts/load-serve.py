#!/usr/bin/env python3
"""Load test of `trove serve`, standard library only.

Usage:
  load-serve.py --base URL [--clients 32] [--seconds 30] [--token T] [--mode hybrid|mixed]
                [--queries FILE] [--query-extra JSON] [--reload-cmd "shell command" --reloads 5]
                [--server-pid PID] [--json OUT]

N client threads, each on its own persistent (keep-alive) HTTP/1.1 connection, send requests for
the duration. --mode hybrid: only POST /query {mode: hybrid}. --mode mixed (default): ~60% POST
/query (hybrid/bm25/vector, some with filters), ~15% GET /symbols, ~10% GET /refs, ~10% GET
/files/{path} (paths learned from query hits before the run), ~5% GET /map or /bundles.
--query-extra adds its fields to every POST /query body (e.g. '{"rerank": 0}').

Any non-2xx status, connection error or timeout (30 s) is an error. A connection the server closed
while it was idle (seen before the next request is sent) is reopened without counting an error;
a connection lost once a request was sent is an error.

--reload-cmd runs the shell command --reloads times at evenly spaced moments of the run; after each
it polls GET /health until the generation (x-trove-generation, or /health's "generation") goes up
(60 s at most) and records how long that took. --server-pid samples the server's VmRSS every
0.2 s and reports the peak, and the kernel's VmHWM.

Prints a summary; --json OUT writes the numbers. Exit 1 if any request failed or a reload did not
switch, else 0.
"""
import argparse
import http.client
import json
import math
import random
import select
import socket
import subprocess
import sys
import threading
import time
import urllib.parse

QUERIES = [
    "parse configuration file", "http request retry", "read json", "error handling", "Command",
    "flask route decorator", "goroutine worker pool", "open a database connection", "invoice total tax",
    "process payment", "user repository", "cache eviction", "rate limiter", "write a file atomically",
    "command line arguments", "logging setup", "unit test", "serialize to json", "parse date",
    "retry with backoff", "handle http request", "validate input", "queue push pop", "matrix multiply",
    "deploy script", "environment variables", "hash map lookup", "async await", "thread safe counter",
    "render button component", "sql schema create table", "dependency injection", "shopping cart",
    "stack implementation", "ring buffer", "main function", "read lines from stdin", "close the connection",
    "TODO", "config", "Invoice", "handler", "new", "init", "update",
]
FOLLOW = ["callers", "callees", "imports", "subtypes", "uses", "all"]
IDLE_CLOSED = "idle-closed"


def pct(sorted_vals, p):
    """Nearest-rank percentile of an ascending list (p in 0..100)."""
    if not sorted_vals:
        return None
    i = max(0, min(len(sorted_vals) - 1, math.ceil(p / 100 * len(sorted_vals)) - 1))
    return sorted_vals[i]


def summary(lat):
    s = sorted(lat)
    ms = lambda v: None if v is None else round(v * 1000, 3)
    return {"count": len(s), "p50_ms": ms(pct(s, 50)), "p90_ms": ms(pct(s, 90)), "p99_ms": ms(pct(s, 99)),
            "max_ms": ms(s[-1] if s else None), "mean_ms": ms(sum(s) / len(s) if s else None)}


class Target:
    def __init__(self, base, token):
        u = urllib.parse.urlsplit(base)
        if u.scheme != "http" or not u.hostname:
            sys.exit(f"--base {base!r}: want http://HOST:PORT")
        self.host, self.port, self.prefix = u.hostname, u.port or 80, u.path.rstrip("/")
        self.headers = {"Authorization": f"Bearer {token}"} if token else {}

    def conn(self, timeout=30):
        return http.client.HTTPConnection(self.host, self.port, timeout=timeout)

    def once(self, method, path, body=None, timeout=30):
        """One request on a fresh connection: (status, headers, body bytes)."""
        c = self.conn(timeout)
        try:
            h = dict(self.headers)
            data = None
            if body is not None:
                data = json.dumps(body).encode()
                h["Content-Type"] = "application/json"
            c.request(method, self.prefix + path, body=data, headers=h)
            r = c.getresponse()
            return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
        finally:
            c.close()


def idle_closed(conn):
    """True when the server closed (or wrote to) a kept-alive connection while it sat idle."""
    s = conn.sock
    if s is None:
        return False
    try:
        readable = select.select([s], [], [], 0)[0]
        if not readable:
            return False
        s.recv(1, socket.MSG_PEEK)  # b"" = FIN; data = an unsolicited answer (e.g. 408): either way stale
        return True
    except OSError:
        return True


class Workload:
    """What to ask: queries from a file or the built-in list; paths and symbols learned up front."""

    def __init__(self, target, mode, queries, query_extra=None):
        self.query_extra = query_extra or {}
        self.mode, self.queries = mode, queries
        self.paths, self.symbols, self.langs, self.kinds, self.dirs, self.bundles = [], [], [], [], [], []
        self.learn(target)

    def learn(self, target):
        st, _, body = target.once("GET", "/bundles")
        if st == 200:
            self.bundles = [b["name"] for b in json.loads(body) if isinstance(b, dict) and "name" in b]
        paths, syms, langs, kinds, dirs = {}, {}, set(), set(), set()
        for qt in self.queries[:25]:
            st, _, body = target.once("POST", "/query", {"query": qt, "k": 20, "mode": "bm25"})
            if st != 200:
                print(f"warning: learning: POST /query {qt!r} -> {st}: {body[:200]!r}", file=sys.stderr)
                continue
            for h in json.loads(body):
                paths[(h.get("bundle"), h["path"])] = max(paths.get((h.get("bundle"), h["path"]), 0), h["end_line"])
                if h.get("symbol"):
                    syms[h["symbol"]] = 1
                if h.get("language"):
                    langs.add(h["language"])
                if h.get("kind"):
                    kinds.add(h["kind"])
                if "/" in h["path"]:
                    dirs.add((h.get("bundle"), h["path"].rsplit("/", 1)[0]))
        self.paths = sorted(paths.items())
        self.symbols = sorted(syms)
        self.langs, self.kinds, self.dirs = sorted(langs), sorted(kinds), sorted(dirs)

    def bundle_param(self, rng, bundle=None):
        if bundle:
            return {"bundle": bundle}
        if len(self.bundles) > 1:
            return {"bundle": rng.choice(self.bundles)}
        return {}

    def next(self, rng):
        """(label, method, path, body)."""
        if self.mode == "hybrid":
            return "POST /query hybrid", "POST", "/query", {"query": rng.choice(self.queries), "mode": "hybrid",
                                                            **self.query_extra}
        x = rng.random()
        if x < 0.60 or (x < 0.75 and not self.symbols) or (0.85 <= x < 0.95 and not self.paths):
            mode = rng.choice(["hybrid", "hybrid", "bm25", "vector"])
            body = {"query": rng.choice(self.queries), "mode": mode, "k": rng.choice([5, 10, 10, 20])}
            f = rng.random()
            if f < 0.10 and self.langs:
                body["language"] = rng.choice(self.langs) if rng.random() < 0.5 else rng.sample(
                    self.langs, min(2, len(self.langs)))
            elif f < 0.18:
                body["source_type"] = rng.choice(["code", ["code", "test"], "doc"])
            elif f < 0.24 and self.kinds:
                body["kind"] = rng.choice(self.kinds)
            elif f < 0.30 and self.dirs:
                body["path"] = rng.choice(self.dirs)[1] + "/*"
            elif f < 0.33:
                body["content"] = True
            return f"POST /query {mode}", "POST", "/query", {**body, **self.query_extra}
        if x < 0.75:
            p = {"name": rng.choice(self.symbols)}
            if rng.random() < 0.3:
                p["k"] = 5
            return "GET /symbols", "GET", "/symbols?" + urllib.parse.urlencode(p), None
        if x < 0.85:
            p = {"name": rng.choice(self.symbols or self.queries), "follow": rng.choice(FOLLOW)}
            return "GET /refs", "GET", "/refs?" + urllib.parse.urlencode(p), None
        if x < 0.95:
            (bundle, path), end = rng.choice(self.paths)
            p = self.bundle_param(rng, bundle)
            if rng.random() < 0.5 and end > 1:
                s = rng.randint(1, end)
                p.update(start=s, end=min(end, s + rng.randint(0, 40)))
            q = ("?" + urllib.parse.urlencode(p)) if p else ""
            return "GET /files", "GET", "/files/" + urllib.parse.quote(path, safe="/") + q, None
        if x < 0.975:
            p = self.bundle_param(rng)
            if self.dirs and rng.random() < 0.5:
                bundle, d = rng.choice(self.dirs)
                p = self.bundle_param(rng, bundle if len(self.bundles) > 1 else None)
                p["path"] = d
            q = ("?" + urllib.parse.urlencode(p)) if p else ""
            return "GET /map", "GET", "/map" + q, None
        return "GET /bundles", "GET", "/bundles", None


class Client(threading.Thread):
    def __init__(self, i, target, work, deadline, timeout, t0):
        super().__init__(daemon=True, name=f"client-{i}")
        self.rng = random.Random(1000 + i)
        self.target, self.work, self.deadline, self.timeout, self.t0 = target, work, deadline, timeout, t0
        self.lat = {}            # label -> [seconds] (requests that got an answer)
        self.statuses = {}       # status or error kind -> count
        self.errors = []         # (t, label, message), the first few
        self.nerr = 0
        self.n = 0
        self.reconnects_idle = 0
        self.gens = {}           # x-trove-generation -> count

    def error(self, label, msg):
        self.nerr += 1
        if len(self.errors) < 10:
            self.errors.append((round(time.monotonic() - self.t0, 3), label, msg))

    def run(self):
        conn = self.target.conn(self.timeout)
        while time.monotonic() < self.deadline:
            label, method, path, body = self.work.next(self.rng)
            if idle_closed(conn):
                self.reconnects_idle += 1
                conn.close()
            h = dict(self.target.headers)
            data = None
            if body is not None:
                data = json.dumps(body).encode()
                h["Content-Type"] = "application/json"
            self.n += 1
            t = time.perf_counter()
            try:
                conn.request(method, self.target.prefix + path, body=data, headers=h)
                r = conn.getresponse()
                payload = r.read()
                dt = time.perf_counter() - t
            except socket.timeout:
                self.statuses["timeout"] = self.statuses.get("timeout", 0) + 1
                self.error(label, f"{method} {path}: timeout after {time.perf_counter() - t:.1f}s")
                conn.close()
                continue
            except (OSError, http.client.HTTPException) as e:
                kind = type(e).__name__
                self.statuses[kind] = self.statuses.get(kind, 0) + 1
                self.error(label, f"{method} {path}: {kind}: {e}")
                conn.close()
                if isinstance(e, ConnectionRefusedError):
                    time.sleep(0.05)  # do not spin while the server is gone
                continue
            self.lat.setdefault(label, []).append(dt)
            self.statuses[r.status] = self.statuses.get(r.status, 0) + 1
            g = r.getheader("x-trove-generation")
            self.gens[g] = self.gens.get(g, 0) + 1
            if not 200 <= r.status < 300:
                self.error(label, f"{method} {path} -> {r.status}: {payload[:300].decode('utf-8', 'replace')}")
            # http.client reopens by itself after a response with Connection: close
        conn.close()


class RssSampler(threading.Thread):
    def __init__(self, pid):
        super().__init__(daemon=True, name="rss")
        self.pid, self.stop = pid, threading.Event()
        self.peak_rss_kb = self.hwm_kb = self.first_rss_kb = self.last_rss_kb = None
        self.samples = 0
        self.gone = False

    def read(self):
        try:
            with open(f"/proc/{self.pid}/status") as f:
                v = {}
                for line in f:
                    k, _, rest = line.partition(":")
                    if k in ("VmRSS", "VmHWM"):
                        v[k] = int(rest.split()[0])
                return v
        except (OSError, ValueError, IndexError):
            return None

    def run(self):
        while True:
            v = self.read()
            if v is None:
                self.gone = True
            else:
                self.samples += 1
                rss = v.get("VmRSS")
                if rss is not None:
                    if self.first_rss_kb is None:
                        self.first_rss_kb = rss
                    self.last_rss_kb = rss
                    self.peak_rss_kb = max(self.peak_rss_kb or 0, rss)
                if v.get("VmHWM") is not None:
                    self.hwm_kb = v["VmHWM"]
            if self.stop.wait(0.2):
                return


def generation(target):
    st, h, body = target.once("GET", "/health", timeout=10)
    g = h.get("x-trove-generation")
    if g is not None and g.strip().isdigit():
        return int(g)
    try:
        return int(json.loads(body)["generation"])
    except (ValueError, KeyError, TypeError):
        raise RuntimeError(f"GET /health -> {st}: no generation: {body[:200]!r}")


class Reloader(threading.Thread):
    def __init__(self, target, cmd, n, t0, seconds):
        super().__init__(daemon=True, name="reloader")
        self.target, self.cmd, self.n, self.t0, self.seconds = target, cmd, n, t0, seconds
        self.records, self.failures = [], []

    def run(self):
        for i in range(self.n):
            at = self.t0 + self.seconds * (i + 1) / (self.n + 1)
            time.sleep(max(0.0, at - time.monotonic()))
            rec = {"n": i + 1, "at_s": round(time.monotonic() - self.t0, 3)}
            try:
                before = generation(self.target)
            except (OSError, http.client.HTTPException, RuntimeError) as e:
                self.failures.append(f"reload {i + 1}: generation before: {e}")
                before = None
            rec["generation_before"] = before
            t = time.monotonic()
            p = subprocess.run(self.cmd, shell=True, capture_output=True, text=True)
            done = time.monotonic()
            rec["cmd_s"] = round(done - t, 3)
            rec["cmd_rc"] = p.returncode
            after, err = None, None
            rec["generation_after"] = None
            if p.returncode != 0:
                self.failures.append(f"reload {i + 1}: command exited {p.returncode}: {p.stderr.strip()[:300]}")
                self.records.append(rec)
                continue  # nothing to wait for
            while time.monotonic() - done < 60:
                try:
                    g = generation(self.target)
                    if before is not None and g > before:
                        after = g
                        break
                    if before is None:
                        before = g
                except (OSError, http.client.HTTPException, RuntimeError) as e:
                    err = str(e)
                time.sleep(0.05)
            rec["generation_after"] = after
            if after is None:
                self.failures.append(f"reload {i + 1}: the generation stayed {before} for 60 s"
                                     + (f" (last error: {err})" if err else ""))
            else:
                rec["switch_s"] = round(time.monotonic() - done, 3)  # from the command's end to the new generation
            self.records.append(rec)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", required=True)
    ap.add_argument("--clients", type=int, default=32)
    ap.add_argument("--seconds", type=float, default=30)
    ap.add_argument("--token")
    ap.add_argument("--mode", choices=["hybrid", "mixed"], default="mixed")
    ap.add_argument("--queries", help="a file of query texts, one a line")
    ap.add_argument("--reload-cmd")
    ap.add_argument("--reloads", type=int, default=5)
    ap.add_argument("--server-pid", type=int)
    ap.add_argument("--timeout", type=float, default=30, help="client timeout per request (s)")
    ap.add_argument("--query-extra", type=json.loads, default={},
                    help="a JSON object whose fields every POST /query body gets, e.g. '{\"rerank\": 0}'")
    ap.add_argument("--json", dest="json_out")
    a = ap.parse_args()
    if not isinstance(a.query_extra, dict):
        sys.exit("--query-extra must be a JSON object")
    if a.clients < 1 or a.seconds <= 0:
        sys.exit("--clients and --seconds must be positive")

    queries = QUERIES
    if a.queries:
        with open(a.queries, encoding="utf-8") as f:
            queries = [line.strip() for line in f if line.strip()]
        if not queries:
            sys.exit(f"{a.queries}: no queries")
    target = Target(a.base, a.token)
    try:
        g0 = generation(target)
        work = Workload(target, a.mode, queries, a.query_extra)
    except (OSError, http.client.HTTPException, RuntimeError) as e:
        print(f"error: the server at {a.base} does not answer: {e}", file=sys.stderr)
        sys.exit(1)
    print(f"load-serve: {a.clients} clients, {a.seconds:g}s, mode {a.mode}, {len(queries)} queries, "
          f"generation {g0}; learned {len(work.paths)} paths, {len(work.symbols)} symbols, "
          f"bundles {work.bundles}", flush=True)

    sampler = None
    if a.server_pid:
        sampler = RssSampler(a.server_pid)
        if sampler.read() is None:
            sys.exit(f"--server-pid {a.server_pid}: no /proc/{a.server_pid}/status")
        sampler.start()
    t0 = time.monotonic()
    deadline = t0 + a.seconds
    clients = [Client(i, target, work, deadline, a.timeout, t0) for i in range(a.clients)]
    reloader = Reloader(target, a.reload_cmd, a.reloads, t0, a.seconds) if a.reload_cmd and a.reloads > 0 else None
    for c in clients:
        c.start()
    if reloader:
        reloader.start()
    for c in clients:
        c.join()
    elapsed = time.monotonic() - t0
    if reloader:
        reloader.join()
    if sampler:
        sampler.stop.set()
        sampler.join()

    # merge
    lat, statuses, gens, errors = {}, {}, {}, []
    total = nerr = idle = 0
    for c in clients:
        total += c.n
        nerr += c.nerr
        idle += c.reconnects_idle
        for k, v in c.lat.items():
            lat.setdefault(k, []).extend(v)
        for k, v in c.statuses.items():
            statuses[str(k)] = statuses.get(str(k), 0) + v
        for k, v in c.gens.items():
            gens[str(k)] = gens.get(str(k), 0) + v
        errors.extend(c.errors)
    errors.sort()
    all_lat = [x for v in lat.values() for x in v]
    out = {
        "base": a.base, "mode": a.mode, "clients": a.clients, "seconds": a.seconds, "elapsed_s": round(elapsed, 3),
        "requests": total, "throughput_rps": round(total / elapsed, 1) if elapsed > 0 else None,
        "errors": nerr, "status_counts": dict(sorted(statuses.items())), "first_errors": [
            {"t_s": t, "label": l, "message": m} for t, l, m in errors[:10]],
        "idle_reconnects": idle,
        "latency": summary(all_lat),
        "latency_query_hybrid": summary(lat.get("POST /query hybrid", [])),
        "latency_by_route": {k: summary(v) for k, v in sorted(lat.items())},
        "generations_seen": {k: gens[k] for k in sorted(gens, key=lambda g: (not g.isdigit(), int(g) if g.isdigit() else 0, g))},
        "generation_start": g0,
    }
    if reloader:
        out["reloads"] = reloader.records
        out["reload_failures"] = reloader.failures
        sw = [r["switch_s"] for r in reloader.records if "switch_s" in r]
        out["reload_switch_s"] = {"max": max(sw) if sw else None, "mean": round(sum(sw) / len(sw), 3) if sw else None}
    if sampler:
        out["server_pid"] = a.server_pid
        out["server_rss_kb"] = {"first": sampler.first_rss_kb, "peak": sampler.peak_rss_kb,
                                "last": sampler.last_rss_kb, "hwm": sampler.hwm_kb, "samples": sampler.samples,
                                "process_gone": sampler.gone}

    # human summary
    def line(name, s):
        if not s["count"]:
            return f"  {name:<22} (none)"
        return (f"  {name:<22} n={s['count']:<7} p50 {s['p50_ms']:.2f} ms  p90 {s['p90_ms']:.2f} ms  "
                f"p99 {s['p99_ms']:.2f} ms  max {s['max_ms']:.2f} ms")
    print(f"requests: {total} in {elapsed:.2f}s = {out['throughput_rps']} req/s; errors: {nerr}; "
          f"idle reconnects: {idle}")
    print(f"statuses: {out['status_counts']}")
    print("latency:")
    print(line("all", out["latency"]))
    for k, s in out["latency_by_route"].items():
        print(line(k, s))
    print(f"generations seen by the clients: {out['generations_seen']}")
    if reloader:
        for r in reloader.records:
            print(f"reload {r['n']} at {r['at_s']}s: cmd {r['cmd_s']}s rc {r['cmd_rc']}, generation "
                  f"{r['generation_before']} -> {r['generation_after']}"
                  + (f" after {r['switch_s']}s" if "switch_s" in r else " (no switch)"))
        for f in reloader.failures:
            print(f"reload FAILURE: {f}")
    if sampler:
        mb = lambda kb: "?" if kb is None else f"{kb / 1024:.1f} MiB"
        print(f"server RSS: first {mb(sampler.first_rss_kb)}, peak {mb(sampler.peak_rss_kb)} "
              f"(sampled every 0.2 s, {sampler.samples} samples), VmHWM {mb(sampler.hwm_kb)}"
              + ("; the process went away" if sampler.gone else ""))
    for e in out["first_errors"]:
        print(f"error at {e['t_s']}s [{e['label']}]: {e['message']}")
    if a.json_out:
        with open(a.json_out, "w") as f:
            json.dump(out, f, indent=2)
            f.write("\n")
    failed = nerr > 0 or (reloader is not None and reloader.failures)
    print("FAILED" if failed else "OK", flush=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
