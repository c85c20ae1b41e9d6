#!/usr/bin/env python3
"""Endpoint test of `trove serve` (the HTTP API), standard library only.

Usage:
  serve_client.py --base http://127.0.0.1:PORT --bundle NAME [--token T] [--curl]

Expects a server over one bundle NAME, an index of the repository's `fixtures/` folder. Every
endpoint is checked with good input (status, JSON shape, filters, line ranges) and bad input
(status, the JSON error body `{"error": {"status", "code", "message"}}`); symbol names and paths are
discovered through the API itself. With --token every request carries `Authorization: Bearer T`
and requests without it or with a wrong one must get 401. With --curl a few requests also go
through the `curl` binary. Prints one line per check; exits 1 on the first failure.
"""
import argparse
import http.client
import json
import os
import re
import select
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

T0 = time.monotonic()
ARGS = None
HOST = PORT = None
PREFIX = ""
TIMEOUT = 15
NOPE = object()  # "send no Authorization header" marker

HIT_KEYS = ["rank", "score", "bundle", "chunk_id", "path", "start_line", "end_line", "symbol",
            "symbol_path", "kind", "language", "source_type", "signature"]
SYMBOL_KEYS = ["path", "start_line", "end_line", "kind", "name", "symbol_path", "signature", "docs",
               "parent", "exported", "language", "symbol_id", "scip_symbol", "bundle"]
REF_KEYS = ["path", "line", "kind", "target", "in_symbol", "target_path", "target_line",
            "target_symbol", "resolution", "scip_symbol", "bundle"]
DEP_KEYS = ["path", "ecosystem", "name", "version", "scope", "bundle"]
MAP_KEYS = ["name", "files", "bytes", "symbols", "inbound", "languages"]
BUNDLE_KEYS = ["name", "path", "version", "generation", "loaded_at", "repo", "commit", "created_at",
               "files", "chunks", "symbols", "languages", "embedder"]
ERROR_CODES = {400: "bad_request", 401: "unauthorized", 404: ("not_found", "unknown_bundle"),
               405: "method_not_allowed", 413: "payload_too_large", 501: "not_configured",
               503: "overloaded", 504: "timeout", 500: "internal"}
MCP_TOOLS = ["search_code", "read_file", "read_map", "resolve_symbol", "list_bundles"]


def fail(msg, resp=None):
    if resp is not None:
        msg += f"\n  -> {resp.method} {resp.target}: HTTP {resp.status}\n  headers: {dict(resp.headers)}" \
               f"\n  body: {resp.text()[:1500]}"
    print(f"FAIL: {msg}", flush=True)
    sys.exit(1)


def ok(msg):
    print(f"ok: {msg}", flush=True)


class Resp:
    def __init__(self, method, target, status, headers, body):
        self.method, self.target, self.status = method, target, status
        self.headers = {k.lower(): v for k, v in headers}
        self.body = body

    def text(self):
        return self.body.decode("utf-8", "replace")

    def json(self):
        try:
            return json.loads(self.body)
        except ValueError as e:
            fail(f"{self.method} {self.target}: body is not JSON ({e})", self)

    def header(self, name):
        return self.headers.get(name.lower())


def auth_headers(token):
    if token is NOPE:
        return {}
    t = ARGS.token if token is None else token
    return {"Authorization": f"Bearer {t}"} if t else {}


def request(method, path, body=None, *, raw=None, headers=None, token=None, conn=None,
            content_type="application/json"):
    """One request on a fresh connection (or `conn`), the path sent byte for byte as given."""
    h = auth_headers(token)
    data = None
    if body is not None:
        data = json.dumps(body).encode()
    elif raw is not None:
        data = raw
    if data is not None and content_type:
        h["Content-Type"] = content_type
    h.update(headers or {})
    target = PREFIX + path
    own = conn is None
    c = conn or http.client.HTTPConnection(HOST, PORT, timeout=TIMEOUT)
    try:
        c.request(method, target, body=data, headers=h)
        r = c.getresponse()
        out = Resp(method, target, r.status, r.getheaders(), r.read())
    except (OSError, http.client.HTTPException) as e:
        fail(f"{method} {target}: no response: {type(e).__name__}: {e}")
    finally:
        if own:
            c.close()
    gen = out.header("x-trove-generation")
    if gen is None or not re.fullmatch(r"\d+", gen.strip()):
        fail(f"{method} {target}: x-trove-generation header missing or not a number: {gen!r}", out)
    return out


def get(path, **kw):
    return request("GET", path, **kw)


def post(path, body=None, **kw):
    return request("POST", path, body, **kw)


def q(**params):
    """A query string from params; list values repeat the key."""
    return "?" + urllib.parse.urlencode(params, doseq=True)


def fpath(p):
    return "/files/" + urllib.parse.quote(p, safe="/")


def expect_ok(resp, what, status=200):
    if resp.status != status:
        fail(f"{what}: expected HTTP {status}", resp)
    return resp


def expect_json(resp, what, typ, status=200):
    expect_ok(resp, what, status)
    ct = resp.header("content-type") or ""
    if "application/json" not in ct:
        fail(f"{what}: Content-Type {ct!r}, wanted application/json", resp)
    v = resp.json()
    if not isinstance(v, typ):
        fail(f"{what}: JSON is a {type(v).__name__}, wanted {typ.__name__}", resp)
    return v


def expect_error(resp, what, statuses, code=None):
    if isinstance(statuses, int):
        statuses = (statuses,)
    if resp.status not in statuses:
        fail(f"{what}: expected HTTP {' or '.join(map(str, statuses))}", resp)
    ct = resp.header("content-type") or ""
    if "application/json" not in ct:
        fail(f"{what}: error Content-Type {ct!r}, wanted application/json", resp)
    v = resp.json()
    err = v.get("error") if isinstance(v, dict) else None
    if not isinstance(err, dict):
        fail(f"{what}: error body has no \"error\" object", resp)
    if err.get("status") != resp.status:
        fail(f"{what}: error.status {err.get('status')!r} != HTTP status {resp.status}", resp)
    if not isinstance(err.get("code"), str) or not err["code"]:
        fail(f"{what}: error.code is not a string", resp)
    if not isinstance(err.get("message"), str):
        fail(f"{what}: error.message is not a string", resp)
    want = code or ERROR_CODES.get(resp.status)
    if want and err["code"] not in ((want,) if isinstance(want, str) else want):
        fail(f"{what}: error.code {err['code']!r}, wanted {want!r}", resp)
    ok(f"{what} -> {resp.status} {err['code']}: {err['message'][:100]}")
    return err


def has_keys(obj, keys, what, resp=None):
    if not isinstance(obj, dict):
        fail(f"{what}: {obj!r} is not an object", resp)
    missing = [k for k in keys if k not in obj]
    if missing:
        fail(f"{what}: keys {missing} missing in {json.dumps(obj)[:600]}", resp)


def check_hits(resp, what, *, k=None, nonempty=True, content=False):
    hits = expect_json(resp, what, list)
    if nonempty and not hits:
        fail(f"{what}: no hits", resp)
    if k is not None and len(hits) > k:
        fail(f"{what}: {len(hits)} hits, more than k={k}", resp)
    for i, h in enumerate(hits):
        has_keys(h, HIT_KEYS, what, resp)
        if h["rank"] != i + 1:
            fail(f"{what}: hit {i} has rank {h['rank']}", resp)
        if h["bundle"] != ARGS.bundle:
            fail(f"{what}: hit bundle {h['bundle']!r}, wanted {ARGS.bundle!r}", resp)
        if not isinstance(h["path"], str) or not isinstance(h["start_line"], int) or \
                not isinstance(h["end_line"], int) or h["start_line"] < 1 or h["end_line"] < h["start_line"]:
            fail(f"{what}: bad path/lines in {h}", resp)
        # A 64-bit id as a string of digits: a JSON number past 2**53 is rounded by JavaScript.
        if not isinstance(h["chunk_id"], str) or not h["chunk_id"].isdigit():
            fail(f"{what}: chunk_id is not a string of digits in {h}", resp)
        if not isinstance(h["score"], (int, float)):
            fail(f"{what}: score {h['score']!r} is not a number", resp)
        if content:
            if not isinstance(h.get("content"), str) or not h["content"]:
                fail(f"{what}: content:true but hit {i} has no content", resp)
        elif h.get("content") is not None:
            fail(f"{what}: hit {i} has content without content:true", resp)
    return hits


def query(body, what, **kw):
    return check_hits(post("/query", body), what, **kw)


# ---------------------------------------------------------------------------------------------
# good input


def check_basics():
    h = expect_json(get("/health"), "GET /health", dict)
    has_keys(h, ["status", "generation", "uptime_s", "bundles"], "/health")
    if h["status"] != "ok":
        fail(f"/health status {h['status']!r}, wanted ok: {h}")
    if not isinstance(h["generation"], int) or not isinstance(h["bundles"], list):
        fail(f"/health: generation or bundles of the wrong type: {h}")
    names = [b.get("name") for b in h["bundles"]]
    if ARGS.bundle not in names:
        fail(f"/health bundles {names} do not include {ARGS.bundle!r}")
    for b in h["bundles"]:
        has_keys(b, ["name", "version", "loaded_at", "error"], "/health bundles[]")
        if b["error"] is not None:
            fail(f"/health: bundle {b['name']} has an error: {b['error']}")
    ok(f"GET /health -> status ok, generation {h['generation']}, bundles {names}")

    bs = expect_json(get("/bundles"), "GET /bundles", list)
    mine = [b for b in bs if isinstance(b, dict) and b.get("name") == ARGS.bundle]
    if not mine:
        fail(f"/bundles has no {ARGS.bundle!r}: {bs}")
    b = mine[0]
    has_keys(b, BUNDLE_KEYS, "/bundles[]")
    if not re.fullmatch(r"[0-9a-f]{16}", str(b["version"])):
        fail(f"/bundles version {b['version']!r} is not 16 hex digits")
    if not (isinstance(b["files"], int) and b["files"] > 0 and isinstance(b["chunks"], int) and b["chunks"] > 0):
        fail(f"/bundles: files/chunks not positive: {b}")
    ok(f"GET /bundles -> {ARGS.bundle}: version {b['version']}, {b['files']} files, {b['chunks']} chunks")

    r = expect_ok(get("/metrics"), "GET /metrics")
    t = r.text()
    if "trove_http_requests_total" not in t:
        fail("/metrics has no trove_http_requests_total", r)
    if not re.search(r"^trove_http_request_duration_seconds_bucket\{[^}]*le=\"[^\"]+\"[^}]*\} [0-9.eE+-]+$",
                     t, re.M):
        fail("/metrics has no trove_http_request_duration_seconds_bucket{...,le=...} line", r)
    ok(f"GET /metrics -> {len(t.splitlines())} lines with requests_total and histogram buckets")

    o = expect_json(get("/openapi.json"), "GET /openapi.json", dict)
    if not str(o.get("openapi", "")).startswith("3") or not isinstance(o.get("paths"), dict) \
            or "/query" not in o["paths"]:
        fail(f"/openapi.json: no openapi version or no /query in paths: {json.dumps(o)[:500]}")
    ok(f"GET /openapi.json -> openapi {o['openapi']}, {len(o['paths'])} paths")

    # urllib too: a different client
    req = urllib.request.Request(ARGS.base.rstrip("/") + "/bundles", headers=auth_headers(None))
    try:
        with urllib.request.urlopen(req, timeout=TIMEOUT) as r:
            if r.status != 200 or not isinstance(json.load(r), list):
                fail("urllib GET /bundles: not a 200 JSON array")
    except urllib.error.URLError as e:
        fail(f"urllib GET /bundles: {e}")
    ok("urllib GET /bundles -> 200")

    # keep-alive: three requests on one connection
    c = http.client.HTTPConnection(HOST, PORT, timeout=TIMEOUT)
    for p in ("/health", "/bundles", "/health"):
        expect_ok(get(p, conn=c), f"GET {p} on a kept-alive connection")
    c.close()
    ok("three requests on one kept-alive connection")


def check_query():
    """Runs queries, returns what was learned: a hit with a symbol, paths, languages, kinds."""
    hits = query({"query": "invoice total tax", "mode": "hybrid", "k": 20}, "POST /query hybrid", k=20)
    ok(f"POST /query hybrid -> {len(hits)} hits, first {hits[0]['path']}:{hits[0]['start_line']}")
    b = query({"query": "invoice total tax", "mode": "bm25", "k": 20}, "POST /query bm25", k=20)
    ok(f"POST /query bm25 -> {len(b)} hits")
    v = query({"query": "invoice total tax", "mode": "vector", "k": 5}, "POST /query vector", k=5)
    ok(f"POST /query vector -> {len(v)} hits")
    # default mode, alpha and both fusions
    d = query({"query": "invoice total tax"}, "POST /query defaults", k=10)
    ok(f"POST /query with defaults -> {len(d)} hits (k default 10)")
    for fusion in ("convex", "rrf"):
        query({"query": "invoice", "mode": "hybrid", "alpha": 0.5, "fusion": fusion, "k": 5},
              f"POST /query fusion={fusion} alpha=0.5", k=5)
        ok(f"POST /query fusion={fusion} alpha=0.5")
    query({"query": "invoice", "bundles": [ARGS.bundle]}, "POST /query bundles=[NAME]")
    ok(f"POST /query bundles=[{ARGS.bundle}]")

    # k limits the count
    broad = query({"query": "return", "mode": "bm25", "k": 50}, "POST /query k=50", k=50)
    if len(broad) < 3:
        fail(f"POST /query 'return' k=50 found only {len(broad)} hits in fixtures/")
    ok(f"POST /query 'return' bm25 k=50 -> {len(broad)} hits")
    for k in (1, 2):
        got = query({"query": "return", "mode": "bm25", "k": k}, f"POST /query k={k}", k=k)
        if len(got) != k:
            fail(f"POST /query k={k} gave {len(got)} hits (the same query with k=50 gave {len(broad)})")
        if any(abs(a["score"] - b["score"]) > 1e-6 * max(1.0, abs(b["score"])) for a, b in zip(got, broad)):
            fail(f"POST /query k={k}: scores {[h['score'] for h in got]} are not the top of k=50's "
                 f"{[h['score'] for h in broad[:k]]}")
        ok(f"POST /query k={k} -> exactly {k}, scored as the top {k} of k=50")

    # content
    c = query({"query": "invoice total tax", "k": 3, "content": True}, "POST /query content:true",
              k=3, content=True)
    ok(f"POST /query content:true -> {len(c)} hits with content ({len(c[0]['content'])} chars in the first)")
    query({"query": "invoice total tax", "k": 3, "content": False}, "POST /query content:false", k=3)
    ok("POST /query content:false -> no content")

    # learn languages / kinds / source types from a wide set of hits
    pool = hits + b + broad
    langs = sorted({h["language"] for h in pool if h["language"]})
    kinds = sorted({h["kind"] for h in pool if h["kind"]})
    stypes = sorted({h["source_type"] for h in pool if h["source_type"]})
    if len(langs) < 2:
        fail(f"queries over fixtures/ found fewer than two languages: {langs}")
    ok(f"learned {len(langs)} languages, {len(kinds)} kinds, source types {stypes}")

    def filtered(field, value, body_extra=None):
        body = {"query": "invoice total tax function class", "mode": "bm25", "k": 50, field: value}
        body.update(body_extra or {})
        got = query(body, f"POST /query {field}={json.dumps(value)}", nonempty=False)
        allowed = {value} if isinstance(value, str) else set(value)
        bad = [h for h in got if h[field] not in allowed]
        if bad:
            fail(f"POST /query {field}={value!r}: hits outside the filter: "
                 f"{[(h['path'], h[field]) for h in bad[:5]]}")
        return got

    # pick filter values that the query text actually finds
    base = query({"query": "invoice total tax function class", "mode": "bm25", "k": 50},
                 "POST /query filter baseline")
    bl = sorted({h["language"] for h in base if h["language"]})
    bk = sorted({h["kind"] for h in base if h["kind"]})
    bs = sorted({h["source_type"] for h in base if h["source_type"]})
    for field, vals in (("language", bl), ("kind", bk), ("source_type", bs)):
        if not vals:
            fail(f"the filter baseline has no {field} values")
        one = filtered(field, vals[0])
        if not one:
            fail(f"POST /query {field}={vals[0]!r}: no hits though the unfiltered query has some")
        ok(f"POST /query {field}={vals[0]!r} (string) -> {len(one)} hits, all {field}={vals[0]}")
        two = vals[:2] if len(vals) > 1 else vals[:1]
        many = filtered(field, two)
        if len(many) < len(one):
            fail(f"POST /query {field}={two}: {len(many)} hits, fewer than with {vals[0]!r} alone")
        ok(f"POST /query {field}={two} (list) -> {len(many)} hits, all in the list")

    # path glob: the directory of the first hit
    top = next(h for h in base if "/" in h["path"] and h["language"] and h["source_type"])
    d = top["path"].rsplit("/", 1)[0]
    got = query({"query": "invoice total tax function class", "mode": "bm25", "k": 50, "path": d + "/*"},
                f"POST /query path={d}/*")
    bad = [h["path"] for h in got if not h["path"].startswith(d + "/")]
    if bad:
        fail(f"POST /query path={d}/*: hits outside: {bad[:5]}")
    ok(f"POST /query path={d + '/*'!r} -> {len(got)} hits, all under {d}/")

    # a combination of filters
    got = filtered("language", top["language"], {"path": d + "/*", "source_type": [top["source_type"]]})
    if not got:
        fail(f"POST /query language+path+source_type of the hit {top['path']}: no hits")
    ok(f"POST /query language+path+source_type -> {len(got)} hits")
    return {"hits": hits, "pool": pool, "langs": langs, "kinds": kinds}


def check_symbols_refs(learned):
    with_sym = [h for h in learned["pool"] if h.get("symbol")]
    if not with_sym:
        fail("no query hit has a symbol")
    # prefer a symbol from the first query (invoice...), e.g. Invoice / total
    names = []
    for h in learned["hits"] + with_sym:
        if h.get("symbol") and h["symbol"] not in names:
            names.append(h["symbol"])
    found = None
    for name in names[:10]:
        syms = expect_json(get("/symbols" + q(name=name)), f"GET /symbols?name={name}", list)
        if syms:
            found = (name, syms)
            break
    if not found:
        fail(f"GET /symbols found none of the hits' symbols {names[:10]}")
    name, syms = found
    for s in syms:
        has_keys(s, SYMBOL_KEYS, f"/symbols?name={name}")
        if s["bundle"] != ARGS.bundle:
            fail(f"/symbols?name={name}: bundle {s['bundle']!r}")
        if not isinstance(s["symbol_id"], str) or not s["symbol_id"].isdigit():
            fail(f"/symbols?name={name}: symbol_id is not a string of digits in {s}")
    if not any(s["name"] == name for s in syms):
        fail(f"/symbols?name={name}: no row named {name!r}: {[s['name'] for s in syms]}")
    ok(f"GET /symbols?name={name} -> {len(syms)} rows, e.g. {syms[0]['path']}:{syms[0]['start_line']} {syms[0]['kind']}")
    kind = syms[0]["kind"]
    ks = expect_json(get("/symbols" + q(name=name, kind=kind, k=5, bundle=ARGS.bundle)),
                     f"GET /symbols?name={name}&kind={kind}&k=5&bundle=NAME", list)
    if not ks or any(s["kind"] != kind for s in ks) or len(ks) > 5:
        fail(f"/symbols?name={name}&kind={kind}&k=5: {[(s['name'], s['kind']) for s in ks]}")
    ok(f"GET /symbols?name={name}&kind={kind}&k=5&bundle -> {len(ks)} rows of kind {kind}")
    other = "class" if kind != "class" else "function"
    ks2 = expect_json(get("/symbols" + q(name=name, kind=[kind, other])),
                      f"GET /symbols kind repeated", list)
    if len(ks2) < len(ks) or any(s["kind"] not in (kind, other) for s in ks2):
        fail(f"/symbols?name={name}&kind={kind}&kind={other}: {[(s['name'], s['kind']) for s in ks2]}")
    ok(f"GET /symbols?name={name}&kind={kind}&kind={other} -> {len(ks2)} rows")
    k1 = expect_json(get("/symbols" + q(name=name, k=1)), "GET /symbols k=1", list)
    if len(k1) > 1:
        fail(f"/symbols?name={name}&k=1 gave {len(k1)} rows")
    ok("GET /symbols k=1 -> at most 1 row")

    # refs: every follow value; look for a name that has callers so one check sees rows
    total = 0
    for follow in ("callers", "callees", "imports", "subtypes", "uses", "all"):
        rows = expect_json(get("/refs" + q(name=name, follow=follow)), f"GET /refs?name={name}&follow={follow}", list)
        for r in rows:
            has_keys(r, REF_KEYS, f"/refs follow={follow}")
        total += len(rows)
        ok(f"GET /refs?name={name}&follow={follow} -> {len(rows)} rows")
    rows = expect_json(get("/refs" + q(name=name)), f"GET /refs?name={name} (default follow)", list)
    ok(f"GET /refs?name={name} (default callers) -> {len(rows)} rows")
    if total == 0:
        # some symbol of the fixtures is referenced: try the others
        for n in names[1:15]:
            rows = expect_json(get("/refs" + q(name=n, follow="all", k=5)), f"GET /refs?name={n}&follow=all", list)
            if rows:
                has_keys(rows[0], REF_KEYS, "/refs")
                if len(rows) > 5:
                    fail(f"/refs?name={n}&k=5 gave {len(rows)} rows")
                ok(f"GET /refs?name={n}&follow=all&k=5 -> {len(rows)} rows, e.g. {rows[0]['path']}:{rows[0]['line']}")
                break
        else:
            fail(f"no /refs rows for any of {names[:15]}")

    deps = expect_json(get("/deps"), "GET /deps", list)
    for d in deps:
        has_keys(d, DEP_KEYS, "/deps")
    ok(f"GET /deps -> {len(deps)} rows")
    if deps:
        eco = deps[0]["ecosystem"]
        de = expect_json(get("/deps" + q(ecosystem=eco, bundle=ARGS.bundle)), f"GET /deps?ecosystem={eco}", list)
        if not de or any(d["ecosystem"] != eco for d in de):
            fail(f"/deps?ecosystem={eco}: {de[:5]}")
        ok(f"GET /deps?ecosystem={eco}&bundle -> {len(de)} rows")
    return name


def check_map(learned):
    m = expect_json(get("/map"), "GET /map", dict)
    has_keys(m, MAP_KEYS, "/map")
    if not isinstance(m["files"], int) or m["files"] < 2:
        fail(f"/map: files {m['files']!r}")
    ok(f"GET /map -> {m['files']} files, {len(m.get('children') or [])} children at the top")
    p = learned["hits"][0]["path"]
    d = p.split("/")[0] if "/" in p else ""
    if d:
        sub = expect_json(get("/map" + q(path=d)), f"GET /map?path={d}", dict)
        has_keys(sub, MAP_KEYS, f"/map?path={d}")
        if not (0 < sub["files"] <= m["files"]):
            fail(f"/map?path={d}: {sub['files']} files, the whole map {m['files']}")
        ok(f"GET /map?path={d} -> {sub['files']} files")
        expect_json(get("/map" + q(path=d, depth=1, bundle=ARGS.bundle)), f"GET /map?path={d}&depth=1&bundle", dict)
        ok(f"GET /map?path={d}&depth=1&bundle")
    expect_error(get("/map" + q(path="no/such/dir/anywhere")), "GET /map?path=no/such/dir", 404)


def lines_of(text):
    """Lines as `str::lines` splits them: on \n, a \r before it dropped, no empty last line."""
    if text.endswith("\n"):
        text = text[:-1]
    if not text:
        return []
    return [line[:-1] if line.endswith("\r") else line for line in text.split("\n")]


def check_files(learned):
    h = learned["hits"][0]
    path = h["path"]
    whole = expect_json(get(fpath(path)), f"GET /files/{path}", dict)
    has_keys(whole, ["bundle", "path", "start_line", "end_line", "total_lines", "text"], "/files")
    n = whole["total_lines"]
    lines = lines_of(whole["text"])
    if whole["path"] != path or whole["bundle"] != ARGS.bundle or whole["start_line"] != 1 \
            or whole["end_line"] != n or len(lines) != n:
        fail(f"/files/{path}: start {whole['start_line']} end {whole['end_line']} total {n}, "
             f"{len(lines)} lines of text, path {whole['path']!r}, bundle {whole['bundle']!r}")
    ok(f"GET /files/{path} -> {n} lines")
    # the text is the file's (when the fixtures are where this script expects them)
    disk = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures", path)
    if os.path.isfile(disk):
        with open(disk, encoding="utf-8", errors="replace", newline="") as f:
            want = lines_of(f.read())
        if want != lines:
            fail(f"/files/{path}: the text differs from {disk}")
        ok(f"GET /files/{path}: text equals fixtures/{path}")
    # a range
    if n >= 3:
        s, e = 2, min(n, 4)
    else:
        s, e = 1, n
    part = expect_json(get(fpath(path) + q(start=s, end=e)), f"GET /files/{path}?start={s}&end={e}", dict)
    if part["start_line"] != s or part["end_line"] != e or part["total_lines"] != n:
        fail(f"/files/{path}?start={s}&end={e}: got lines {part['start_line']}..{part['end_line']} of {part['total_lines']}")
    if lines_of(part["text"]) != lines[s - 1:e]:
        fail(f"/files/{path}?start={s}&end={e}: text {part['text']!r} != lines {lines[s - 1:e]!r}")
    ok(f"GET /files/{path}?start={s}&end={e} -> the lines asked for")
    # the hit's own lines
    hs, he = h["start_line"], h["end_line"]
    part = expect_json(get(fpath(path) + q(start=hs, end=he, bundle=ARGS.bundle)), "GET /files hit range", dict)
    if part["start_line"] != hs or part["end_line"] != he or lines_of(part["text"]) != lines[hs - 1:he]:
        fail(f"/files/{path}?start={hs}&end={he}: lines {part['start_line']}..{part['end_line']} / text mismatch")
    ok(f"GET /files/{path}?start={hs}&end={he}&bundle (the hit's lines) -> matching text")
    # start only: to the end
    part = expect_json(get(fpath(path) + q(start=n)), f"GET /files/{path}?start={n}", dict)
    if part["start_line"] != n or part["end_line"] != n or lines_of(part["text"]) != lines[n - 1:]:
        fail(f"/files/{path}?start={n}: {part}")
    ok(f"GET /files/{path}?start={n} -> the last line")
    expect_error(get(fpath(path) + q(start=n + 1)), f"GET /files/{path}?start={n + 1} (past the end)", 400)
    expect_error(get(fpath(path) + q(start="abc")), f"GET /files/{path}?start=abc", 400)
    # a path with a space or other character needing escapes: any hit path with a dot works too
    return path


def check_mcp():
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    session = {}

    def rpc(msg, what, *, expect_reply=True):
        h = dict(headers)
        h.update(auth_headers(None))
        if session.get("id"):
            h["Mcp-Session-Id"] = session["id"]
            h["MCP-Protocol-Version"] = "2025-06-18"
        c = http.client.HTTPConnection(HOST, PORT, timeout=TIMEOUT)
        try:
            c.request("POST", PREFIX + "/mcp", body=json.dumps(msg).encode(), headers=h)
            r = c.getresponse()
            hdrs = {k.lower(): v for k, v in r.getheaders()}
            if not expect_reply:
                body = r.read()
                if r.status not in (200, 202, 204):
                    fail(f"MCP {what}: HTTP {r.status}: {body[:500]!r}")
                return r.status, hdrs, None
            if r.status != 200:
                fail(f"MCP {what}: HTTP {r.status}, headers {hdrs}: {r.read()[:1000]!r}")
            ct = hdrs.get("content-type", "")
            reply = read_jsonrpc(r, ct, msg.get("id"), what)
        except (OSError, http.client.HTTPException) as e:
            fail(f"MCP {what}: no response: {type(e).__name__}: {e}")
        finally:
            c.close()
        if reply.get("jsonrpc") != "2.0" or reply.get("id") != msg.get("id"):
            fail(f"MCP {what}: not a JSON-RPC 2.0 reply to id {msg.get('id')}: {reply}")
        if "error" in reply:
            fail(f"MCP {what}: JSON-RPC error {reply['error']}")
        return r.status, hdrs, reply, ct

    _, hdrs, reply, ct = rpc({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "serve_client.py", "version": "0"}}}, "initialize")
    res = reply.get("result") or {}
    if not res.get("protocolVersion") or "capabilities" not in res or "serverInfo" not in res:
        fail(f"MCP initialize: result lacks protocolVersion/capabilities/serverInfo: {reply}")
    session["id"] = hdrs.get("mcp-session-id")
    ok(f"MCP initialize -> protocol {res['protocolVersion']}, server {res['serverInfo'].get('name')}, "
       f"session {session['id']!r}, reply as {ct.split(';')[0]}")
    if not session["id"]:
        fail("MCP initialize: no Mcp-Session-Id header in the response")
    st, _, _ = rpc({"jsonrpc": "2.0", "method": "notifications/initialized"}, "notifications/initialized",
                   expect_reply=False)
    ok(f"MCP notifications/initialized -> HTTP {st}")
    _, _, reply, ct = rpc({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}, "tools/list")
    tools = (reply.get("result") or {}).get("tools") or []
    names = sorted(t.get("name") for t in tools)
    missing = [t for t in MCP_TOOLS if t not in names]
    if missing:
        fail(f"MCP tools/list lacks {missing}: {names}")
    ok(f"MCP tools/list -> {names} ({ct.split(';')[0]})")
    _, _, reply, ct = rpc({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                           "params": {"name": "search_code", "arguments": {"query": "invoice total tax"}}},
                          "tools/call search_code")
    res = reply.get("result") or {}
    texts = [c.get("text") for c in res.get("content") or [] if c.get("type") == "text"]
    if res.get("isError") or not texts or not texts[0]:
        fail(f"MCP tools/call search_code: no text result: {reply}")
    ok(f"MCP tools/call search_code -> text result ({len(texts[0].splitlines())} lines, {ct.split(';')[0]})")
    _, _, reply, _ = rpc({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
                          "params": {"name": "list_bundles", "arguments": {}}}, "tools/call list_bundles")
    t = "".join(c.get("text", "") for c in (reply.get("result") or {}).get("content") or [])
    if ARGS.bundle not in t:
        fail(f"MCP list_bundles does not name {ARGS.bundle}: {t[:500]}")
    ok("MCP tools/call list_bundles -> names the bundle")

    # At most 256 sessions are kept: 256 more close the first (its client gets 404), the newest
    # answers. (Sessions that clients open and leave must not grow the server without bound.)
    first = session["id"]
    newest = None
    for i in range(256):
        session["id"] = None
        _, hdrs, _, _ = rpc({"jsonrpc": "2.0", "id": 10, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "serve_client.py", "version": str(i)}}}, f"initialize #{i}")
        newest = hdrs.get("mcp-session-id")

    def ping(sid):
        h = dict(headers)
        h.update(auth_headers(None))
        h["Mcp-Session-Id"] = sid
        h["MCP-Protocol-Version"] = "2025-06-18"
        c = http.client.HTTPConnection(HOST, PORT, timeout=TIMEOUT)
        try:
            c.request("POST", PREFIX + "/mcp", body=json.dumps({"jsonrpc": "2.0", "id": 11, "method": "ping"}).encode(),
                      headers=h)
            r = c.getresponse()
            r.read()
            return r.status
        finally:
            c.close()
    if ping(first) != 404 or ping(newest) != 200:
        fail(f"MCP session cap: the first session answers {ping(first)} (404 wanted), the newest {ping(newest)}")
    ok("MCP sessions capped at 256: the oldest closed (404), the newest answers")


def read_jsonrpc(r, ct, want_id, what):
    """The JSON-RPC reply to `want_id` from a plain JSON body or an SSE stream."""
    if "text/event-stream" in ct:
        data, seen = [], []
        while True:
            raw = r.readline()
            line = raw.decode("utf-8", "replace").rstrip("\r\n") if raw else None
            if line is None or line == "":
                if data:
                    payload = "\n".join(data)
                    data = []
                    seen.append(payload)
                    try:
                        msg = json.loads(payload)
                    except ValueError:
                        msg = None  # e.g. an empty priming event
                    if isinstance(msg, dict) and msg.get("id") == want_id and ("result" in msg or "error" in msg):
                        return msg
                if line is None:
                    fail(f"MCP {what}: SSE stream ended without the reply to id {want_id}; events: {seen}")
                continue
            if line.startswith(":"):
                continue
            field, _, value = line.partition(":")
            if value.startswith(" "):
                value = value[1:]
            if field == "data":
                data.append(value)
    if "application/json" not in ct:
        fail(f"MCP {what}: Content-Type {ct!r} is neither JSON nor an event stream")
    body = r.read()
    try:
        msg = json.loads(body)
    except ValueError:
        fail(f"MCP {what}: reply is not JSON: {body[:500]!r}")
    if isinstance(msg, list):  # a batch
        msg = next((m for m in msg if m.get("id") == want_id), {})
    return msg


# ---------------------------------------------------------------------------------------------
# bad input


def check_bad_query():
    bad = [
        (b'{"query": "invoice", ', "malformed JSON"),
        (b'not json at all', "a body that is not JSON"),
        (b'', "an empty body"),
        (b'[]', "a JSON array body"),
        (b'"invoice"', "a JSON string body"),
    ]
    for raw, what in bad:
        expect_error(post("/query", raw=raw), f"POST /query {what}", 400)
    cases = [
        ({"query": "invoice", "bogus": 1}, "an unknown field"),
        ({}, "no query"),
        ({"query": ""}, "an empty query"),
        ({"query": "   "}, "a blank query"),
        ({"query": "invoice", "k": 0}, "k=0"),
        ({"query": "invoice", "k": 1001}, "k=1001"),
        ({"query": "invoice", "k": -1}, "k=-1"),
        ({"query": 42}, "query a number"),
        ({"query": ["invoice"]}, "query a list"),
        ({"query": "invoice", "k": "ten"}, "k a string"),
        ({"query": "invoice", "k": 2.5}, "k a fraction"),
        ({"query": "invoice", "content": "yes"}, "content a string"),
        ({"query": "invoice", "mode": "fuzzy"}, "an unknown mode"),
        ({"query": "invoice", "fusion": "average"}, "an unknown fusion"),
        ({"query": "invoice", "rerank": -1}, "rerank=-1"),
        ({"query": "invoice", "rerank": 1001}, "rerank=1001"),
        ({"query": "invoice", "rerank": "all"}, "rerank a string"),
        ({"query": "invoice", "alpha": -1}, "alpha < 0"),
        ({"query": "invoice", "alpha": "high"}, "alpha a string"),
        ({"query": "invoice", "language": 7}, "language a number"),
        ({"query": "invoice", "language": [1, 2]}, "language a list of numbers"),
        ({"query": "invoice", "source_type": "binary"}, "an unknown source_type"),
        ({"query": "invoice", "bundles": ARGS.bundle}, "bundles a string"),
        ({"query": "invoice", "path": 3}, "path a number"),
        ({"query": "invoice", "path": "**/*.{py"}, "path an unclosed {"),
        ({"query": "invoice", "path": "[z-a]*"}, "path a reversed range"),
        ({"query": "invoice", "path": "a\u0000"}, "path with a NUL"),
        ({"query": "invo\u0000ice"}, "a query with a NUL"),
        ({"query": "invoice", "kind": ["function", "f\u0000"]}, "a kind with a NUL"),
    ]
    for body, what in cases:
        err = expect_error(post("/query", body), f"POST /query {what}", 400)
        if "NUL" in what and "NUL" not in err["message"]:
            fail(f"POST /query {what}: the message does not name the NUL: {err['message']!r}")
    expect_error(post("/query", {"query": "invoice", "bundles": ["no-such.bundle"]}),
                 "POST /query an unknown bundle", 404, "unknown_bundle")
    expect_error(post("/query", {"query": "invoice", "bundles": [ARGS.bundle, "no-such.bundle"]}),
                 "POST /query a known and an unknown bundle", 404, "unknown_bundle")
    # 2 MB body, above the 1 MiB default limit
    big = json.dumps({"query": "x" * (2 * 1024 * 1024)}).encode()
    r = post_big("/query", big)
    expect_error(r, f"POST /query a {len(big) // 1024} KiB body", 413, "payload_too_large")


def post_big(path, data):
    """POST a large body; the server may answer 413 before reading it all and close."""
    c = http.client.HTTPConnection(HOST, PORT, timeout=TIMEOUT)
    h = auth_headers(None)
    h["Content-Type"] = "application/json"
    h["Content-Length"] = str(len(data))
    try:
        c.putrequest("POST", PREFIX + path)
        for k, v in h.items():
            c.putheader(k, v)
        c.endheaders()
        try:
            for i in range(0, len(data), 65536):
                if select.select([c.sock], [], [], 0)[0]:
                    break  # the server has answered already: stop sending, read the answer
                c.send(data[i:i + 65536])
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server answered and stopped reading: read that answer
        r = c.getresponse()
        return Resp("POST", PREFIX + path, r.status, r.getheaders(), r.read())
    except (OSError, http.client.HTTPException) as e:
        fail(f"POST {path} with a {len(data)}-byte body: no response (wanted 413): {type(e).__name__}: {e}")
    finally:
        c.close()


def check_bad_other(name, path):
    expect_error(get("/symbols"), "GET /symbols without name", 400)
    expect_error(get("/symbols?name="), "GET /symbols?name= (empty)", 400)
    expect_error(get("/symbols" + q(name=name, k="many")), "GET /symbols k=many", 400)
    expect_error(get("/symbols" + q(name=name, bundle="no-such.bundle")), "GET /symbols unknown bundle", 404,
                 "unknown_bundle")
    expect_error(get("/refs"), "GET /refs without name", 400)
    expect_error(get("/refs" + q(name=name, follow="sideways")), "GET /refs follow=sideways", 400)
    expect_error(get("/refs" + q(name=name, bundle="no-such.bundle")), "GET /refs unknown bundle", 404,
                 "unknown_bundle")
    expect_error(get("/deps" + q(bundle="no-such.bundle")), "GET /deps unknown bundle", 404, "unknown_bundle")
    expect_error(get("/map" + q(bundle="no-such.bundle")), "GET /map unknown bundle", 404, "unknown_bundle")
    expect_error(get("/map" + q(depth="deep")), "GET /map depth=deep", 400)
    # filters with no such value, and NUL characters (no bundle holds one; DuckDB refuses them)
    expect_error(get("/symbols" + q(name=name, kind="functoin")), "GET /symbols kind=functoin", 400)
    expect_error(get("/deps" + q(ecosystem="nmp")), "GET /deps ecosystem=nmp", 400)
    expect_error(get("/deps" + q(scope="devv")), "GET /deps scope=devv", 400)
    for route, params in (("/symbols", {"name": "\0"}), ("/symbols", {"name": name, "kind": "\0"}),
                          ("/refs", {"name": "\0"}), ("/deps", {"name": "\0"}),
                          ("/deps", {"ecosystem": "\0"})):
        expect_error(get(route + q(**params)), f"GET {route} {sorted(params)} with a NUL", 400)
    expect_error(get(fpath(path) + q(bundle="no-such.bundle")), "GET /files unknown bundle", 404, "unknown_bundle")

    # paths that leave the bundle: sent raw, byte for byte
    for raw in ("/files/../etc/passwd", "/files/%2e%2e/x", "/files/%2E%2E/%2E%2E/etc/passwd",
                "/files//etc/passwd", "/files/%2Fetc%2Fpasswd", "/files/a/../../etc/passwd",
                "/files/" + path.split("/")[0] + "%5C..%5C..%5Cetc%5Cpasswd", "/files/a%00b",
                "/files/" + path.replace("/", "%5C")):
        r = get(raw)
        if "root:" in r.text():
            fail(f"GET {raw}: the body looks like /etc/passwd", r)
        expect_error(r, f"GET {raw}", (400, 404))
    expect_error(get("/files/no/such/file.py"), "GET /files/no/such/file.py (not in the bundle)", 404)
    expect_error(get("/files/"), "GET /files/ (no path)", (400, 404))

    expect_error(get("/no/such/route"), "GET /no/such/route", 404, "not_found")
    expect_error(post("/nope", {"query": "x"}), "POST /nope", 404, "not_found")
    expect_error(get("/query"), "GET /query", 405, "method_not_allowed")
    expect_error(request("DELETE", "/bundles"), "DELETE /bundles", 405, "method_not_allowed")
    expect_error(post("/health", {}), "POST /health", 405, "method_not_allowed")

    r = post("/ask", {"question": "where is the invoice total computed?"})
    if r.status == 501:
        expect_error(r, "POST /ask without --ask-url", 501, "not_configured")
    elif r.status != 200:
        fail("POST /ask: wanted 501 (no --ask-url) or 200", r)
    else:
        ok("POST /ask -> 200 (an --ask-url is configured)")
    # checked before or after the configuration: either is fine
    expect_error(post("/ask", {"question": "x", "bogus": True}), "POST /ask an unknown field", (400, 501))


def check_auth():
    if not ARGS.token:
        ok("no --token: auth checks skipped")
        return
    wrong = ARGS.token + "x"
    for method, path, body in (("POST", "/query", {"query": "invoice"}), ("GET", "/bundles", None),
                               ("GET", "/health", None), ("GET", "/metrics", None),
                               ("GET", "/files/x", None), ("GET", "/openapi.json", None)):
        for tok, what in ((NOPE, "without a token"), (wrong, "with a wrong token")):
            r = request(method, path, body, token=tok)
            expect_error(r, f"{method} {path} {what}", 401, "unauthorized")
            if "bearer" not in (r.header("www-authenticate") or "").lower():
                fail(f"{method} {path} {what}: no WWW-Authenticate: Bearer header", r)
    for hdr, what in (({"Authorization": ARGS.token}, "the token without Bearer"),
                      ({"Authorization": f"Basic {ARGS.token}"}, "a Basic scheme")):
        expect_error(request("GET", "/bundles", token=NOPE, headers=hdr), f"GET /bundles with {what}", 401)
    r = request("POST", "/mcp", {"jsonrpc": "2.0", "id": 1, "method": "ping"}, token=NOPE,
                headers={"Accept": "application/json, text/event-stream"})
    expect_error(r, "POST /mcp without a token", 401, "unauthorized")
    expect_ok(get("/bundles"), "GET /bundles with the right token")
    ok("GET /bundles with the right token -> 200")


def check_curl(path):
    if not ARGS.curl:
        return
    exe = shutil.which("curl")
    if not exe:
        fail("--curl given but no curl binary on PATH")
    base = ARGS.base.rstrip("/")
    auth = ["-H", f"Authorization: Bearer {ARGS.token}"] if ARGS.token else []

    def curl(*args, what):
        cmd = [exe, "-sS", "--max-time", "10", "-o", "-", "-w", "\n%{http_code}", *auth, *args]
        p = subprocess.run(cmd, capture_output=True, timeout=20)
        if p.returncode != 0:
            fail(f"curl {what}: exit {p.returncode}: {p.stderr.decode(errors='replace')}")
        out = p.stdout.decode("utf-8", "replace")
        body, _, code = out.rpartition("\n")
        return int(code), body

    st, body = curl(base + "/health", what="GET /health")
    if st != 200 or json.loads(body).get("status") != "ok":
        fail(f"curl GET /health: {st} {body[:500]}")
    ok("curl GET /health -> 200 ok")
    st, body = curl("-X", "POST", "-H", "Content-Type: application/json", "--data-binary",
                    json.dumps({"query": "invoice total tax", "k": 3}), base + "/query", what="POST /query")
    hits = json.loads(body) if st == 200 else None
    if st != 200 or not isinstance(hits, list) or not hits or len(hits) > 3:
        fail(f"curl POST /query: {st} {body[:500]}")
    ok(f"curl POST /query -> {len(hits)} hits")
    st, body = curl("--compressed", base + fpath(path) + "?start=1&end=2", what="GET /files")
    if st != 200 or json.loads(body).get("end_line") != 2:
        fail(f"curl GET /files/{path}?start=1&end=2: {st} {body[:500]}")
    ok(f"curl --compressed GET /files/{path}?start=1&end=2 -> 200")
    st, body = curl("--path-as-is", base + "/files/../../etc/passwd", what="GET /files/../../etc/passwd")
    if st not in (400, 404) or "root:" in body or json.loads(body)["error"]["status"] != st:
        fail(f"curl --path-as-is GET /files/../../etc/passwd: {st} {body[:500]}")
    ok(f"curl --path-as-is GET /files/../../etc/passwd -> {st}")
    st, body = curl("-X", "POST", "-H", "Content-Type: application/json", "--data-binary", "{bad",
                    base + "/query", what="POST /query malformed")
    if st != 400 or json.loads(body)["error"]["status"] != 400:
        fail(f"curl POST /query malformed JSON: {st} {body[:500]}")
    ok("curl POST /query malformed JSON -> 400")
    if ARGS.token:
        p = subprocess.run([exe, "-sS", "-o", "/dev/null", "-w", "%{http_code}", base + "/bundles"],
                           capture_output=True, timeout=20)
        if p.stdout.decode().strip() != "401":
            fail(f"curl GET /bundles without a token: {p.stdout!r} {p.stderr!r}")
        ok("curl GET /bundles without a token -> 401")


def main():
    global ARGS, HOST, PORT, PREFIX
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", required=True, help="http://HOST:PORT")
    ap.add_argument("--bundle", required=True, help="the served bundle's name, e.g. fx.bundle")
    ap.add_argument("--token")
    ap.add_argument("--curl", action="store_true", help="also send a few requests with the curl binary")
    ARGS = ap.parse_args()
    u = urllib.parse.urlsplit(ARGS.base)
    if u.scheme != "http" or not u.hostname:
        fail(f"--base {ARGS.base!r}: want http://HOST:PORT")
    HOST, PORT, PREFIX = u.hostname, u.port or 80, u.path.rstrip("/")

    check_basics()
    learned = check_query()
    name = check_symbols_refs(learned)
    check_map(learned)
    path = check_files(learned)
    check_mcp()
    check_curl(path)
    # bad input, then the server still answers
    check_auth()
    check_bad_query()
    check_bad_other(name, path)
    h = expect_json(get("/health"), "GET /health after the bad requests", dict)
    if h.get("status") != "ok":
        fail(f"/health after the bad requests: {h}")
    ok("GET /health after the bad requests -> ok")
    m = expect_ok(get("/metrics"), "GET /metrics at the end").text()
    if not re.search(r'^trove_http_requests_total\{[^}]*status="4\d\d"[^}]*\} \d', m, re.M):
        fail("/metrics counts no 4xx request after the bad ones:\n" +
             "\n".join(l for l in m.splitlines() if l.startswith("trove_http_requests_total"))[:2000])
    ok("GET /metrics counts the 4xx answers")
    print(f"all checks passed in {time.monotonic() - T0:.2f}s", flush=True)


if __name__ == "__main__":
    main()
