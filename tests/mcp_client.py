#!/usr/bin/env python3
"""Drives `trove mcp` with the official MCP Python SDK (`mcp` from PyPI) as the client.

Usage:
  mcp_client.py check TROVE BUNDLE [BUNDLE2]   every tool with good and bad arguments, in both
                                               protocol eras, then raw JSON-RPC abuse
  mcp_client.py latency TROVE BUNDLE QUERIES   p50/p95 per tool over the QUERIES file's lines

`check` expects the bundle of tests/agents.rs: the sample repository with `big/long.py` (450
lines) added. Prints one line per check; exits 1 on the first failure.
"""
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time

from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError


def fail(msg):
    print(f"FAIL: {msg}", flush=True)
    sys.exit(1)


def ok(msg):
    print(f"ok: {msg}", flush=True)


def text_of(result):
    return "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")


def server(trove, bundles):
    # The tests' query cache stays out of the user's.
    env = {k: v for k, v in os.environ.items() if k.startswith("TROVE_")}
    return StdioServerParameters(command=trove, args=["mcp", *bundles], env=env)


async def call(client, tool, args, *, error=False, contains=(), absent=()):
    r = await client.call_tool(tool, args)
    t = text_of(r)
    if r.is_error != error:
        fail(f"{tool}({args}): is_error={r.is_error}, wanted {error}: {t[:400]}")
    for c in contains:
        if c not in t:
            fail(f"{tool}({args}): {c!r} not in the result:\n{t[:1500]}")
    for c in absent:
        if c in t:
            fail(f"{tool}({args}): {c!r} in the result:\n{t[:1500]}")
    ok(f"{tool}({json.dumps(args)}) -> {'tool error' if error else 'result'} ({len(t.splitlines())} lines)")
    return t


async def check_tools(trove, bundles, mode):
    async with Client(server(trove, bundles), mode=mode) as client:
        ok(f"connected ({mode}): protocol {client.protocol_version}")
        tools = (await client.list_tools()).tools
        names = sorted(t.name for t in tools)
        want = sorted(["read_map", "search_code", "resolve_symbol", "read_file", "list_bundles"])
        if names != want:
            fail(f"tools/list gave {names}")
        for t in tools:
            if t.input_schema.get("type") != "object" or not t.description:
                fail(f"{t.name}: no object schema or description")
        ok("tools/list: five tools with schemas and descriptions")
        if mode == "legacy" and len(bundles) == 1:
            await single_bundle_checks(client)
        if len(bundles) > 1:
            lb = await call(client, "list_bundles", {})
            for b in bundles:
                if b not in lb:
                    fail(f"list_bundles does not name {b}")
            t = await call(client, "search_code", {"query": "invoice total tax"})
            if not all(line.startswith("[") for line in t.splitlines() if ":" in line and not line.startswith(" ")):
                fail(f"search results with two bundles do not name their bundle:\n{t}")
            named = {line[1:line.index("]")] for line in t.splitlines() if line.startswith("[")}
            if len(named) < 2:
                fail(f"search over two bundles found only {named}")
            await call(client, "read_map", {"bundle": bundles[1], "depth": 1}, absent=("# bundle",))
            await call(client, "read_map", {"bundle": "no-such-bundle"}, error=True, contains=("no bundle named",))


async def single_bundle_checks(client):
    # list_bundles
    await call(client, "list_bundles", {}, contains=("files", "embedder", "languages:"))
    await call(client, "list_bundles", {"x": 1}, error=True, contains=("unknown argument",))
    # read_map
    await call(client, "read_map", {}, contains=("files ·", "billing/"))
    await call(client, "read_map", {"path": "billing", "depth": 1}, contains=("billing.py",))
    await call(client, "read_map", {"path": "nope/nowhere"}, error=True, contains=("no indexed file",))
    await call(client, "read_map", {"depth": 0}, error=True, contains=("depth",))
    await call(client, "read_map", {"depth": "deep"}, error=True, contains=("depth",))
    # search_code
    await call(client, "search_code", {"query": "invoice tax total"}, contains=("billing/billing.py:",))
    await call(client, "search_code", {"query": "invoice", "language": "python", "k": 2, "mode": "bm25"},
               contains=(".py:",), absent=(".go:", ".ts:"))
    await call(client, "search_code", {"query": "handler", "path": "api"}, absent=("billing/",))
    await call(client, "search_code", {"query": "invoice", "kind": "class"}, contains=("class",))
    await call(client, "search_code", {}, error=True, contains=("query is required",))
    await call(client, "search_code", {"query": "x", "mode": "fuzzy"}, error=True, contains=("mode",))
    await call(client, "search_code", {"query": "x", "language": "klingon"}, error=True, contains=("klingon",))
    await call(client, "search_code", {"query": "x", "path": "["}, error=True, contains=("glob",))
    await call(client, "search_code", {"query": "x", "path": "**/*.{py"}, error=True, contains=("never closed",))
    await call(client, "search_code", {"query": "invoice handler", "path": "**/*.{py,go}", "k": 20},
               contains=(".py:", ".go:"), absent=(".ts:", ".rs:", ".md:"))
    await call(client, "search_code", {"query": "x", "path": "a\0"}, error=True, contains=("NUL",))
    await call(client, "resolve_symbol", {"name": "In\0voice"}, error=True, contains=("NUL",))
    await call(client, "search_code", {"query": "x", "k": 1000}, error=True, contains=("k must be",))
    await call(client, "search_code", {"query": "zzzqqqxxyy"}, contains=("No results",))
    # resolve_symbol
    await call(client, "resolve_symbol", {"name": "Invoice", "action": "definition"},
               contains=("billing/billing.py:", "class Invoice"))
    await call(client, "resolve_symbol", {"name": "total", "action": "callers"}, contains=("billing/billing.py:",))
    await call(client, "resolve_symbol", {"name": "process_payment", "action": "callees"}, contains=("call",))
    await call(client, "resolve_symbol", {"name": "Invoice", "action": "references"}, contains=("Invoice",))
    await call(client, "resolve_symbol", {"name": "NoSuchThingAnywhere", "action": "definition"},
               error=True, contains=("no symbol named",))
    await call(client, "resolve_symbol", {"name": "Invoice", "action": "explode"}, error=True, contains=("action",))
    await call(client, "resolve_symbol", {"name": "Invoice"}, error=True, contains=("action is required",))
    # read_file: the text as the repository has it, numbered, bounded
    t = await call(client, "read_file", {"path": "billing/billing.py", "start_line": 1, "end_line": 3},
                   contains=("(lines 1-3 of",))
    with open(os.environ["TROVE_MCP_REPO"] + "/billing/billing.py") as f:
        first = f.read().splitlines()[:3]
    got = [line.split("  ", 1)[1] if "  " in line else "" for line in t.splitlines()[1:4]]
    if got != first:
        fail(f"read_file lines 1-3: {got} != {first}")
    ok("read_file: lines match the repository's file")
    t = await call(client, "read_file", {"path": "big/long.py"},
                   contains=("(lines 1-200 of 450)", "start_line=201"))
    if len(t.splitlines()) != 202:
        fail(f"read_file of a 450-line file gave {len(t.splitlines())} lines, want 200 + header + note")
    await call(client, "read_file", {"path": "big/long.py", "start_line": 401}, contains=("(lines 401-450 of 450)",),
               absent=("more lines",))
    await call(client, "read_file", {"path": "big/long.py", "start_line": 999}, error=True, contains=("past the end",))
    await call(client, "read_file", {"path": "big/long.py", "start_line": 9, "end_line": 3}, error=True)
    await call(client, "read_file", {"path": "../../etc/passwd"}, error=True, contains=("not a file of the bundle",))
    await call(client, "read_file", {"path": "/etc/passwd"}, error=True, contains=("not a file of the bundle",))
    await call(client, "read_file", {"path": "billing.py"}, error=True, contains=("did you mean",))
    await call(client, "read_file", {}, error=True, contains=("path is required",))
    # an unknown tool is a protocol error; the server serves on
    try:
        await client.call_tool("drop_database", {})
        fail("an unknown tool gave a result")
    except MCPError as e:
        ok(f"unknown tool -> JSON-RPC error {e.error.code}: {e.error.message}")
    await call(client, "list_bundles", {})


def raw_abuse(trove, bundle):
    """Malformed JSON-RPC straight into the server's stdin: a request that is not JSON-RPC, an
    unknown method or tool gets a JSON-RPC error; a line that is not JSON (or not UTF-8) is skipped
    without a reply, as the official SDKs do; serving goes on after each."""
    p = subprocess.Popen([trove, "mcp", bundle], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL)
    lines = [
        b"this is not json\n",
        b'{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}}\n',
        b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n',
        b'[{"jsonrpc": "2.0", "id": 2, "method": "ping"}]\n',
        b'{"jsonrpc": "1.0", "id": 3, "method": "ping"}\n',
        b'{"jsonrpc": "2.0", "id": 4, "method": "no/such/method"}\n',
        b'{"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"arguments": {}}}\n',
        b'{"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": "not an object"}\n',
        b'\xff\xfe garbage bytes\n',
        b'{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "read_file", "arguments": {"path": 42}}}\n',
        b'{"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "drop_tables", "arguments": {}}}\n',
        b'{"jsonrpc": "2.0", "id": 8, "method": "ping"}\n',
    ]
    out, _ = p.communicate(b"".join(lines), timeout=60)
    replies = [json.loads(x) for x in out.decode().splitlines()]
    by_id = {json.dumps(r.get("id")): r for r in replies if "id" in r}
    invalid = [r for r in replies if r.get("error", {}).get("code") == -32600]
    want = {
        "initialized": by_id.get("1", {}).get("result", {}).get("protocolVersion") == "2025-11-25",
        "a batch, jsonrpc 1.0 and params that are not an object are Invalid Request": len(invalid) == 3,
        "unknown method": by_id.get("4", {}).get("error", {}).get("code") == -32601,
        "tools/call without a name is an error": "error" in by_id.get("5", {}),
        "a bad argument is a tool error": by_id.get("7", {}).get("result", {}).get("isError") is True,
        "an unknown tool is a JSON-RPC error": by_id.get("9", {}).get("error", {}).get("code") == -32602,
        "still serving after all of it": by_id.get("8", {}).get("result") == {},
        "exit 0 at the end of input": p.returncode == 0,
        "no reply to a notification or a line that is not JSON": len(replies) == 9,
    }
    for what, good in want.items():
        if not good:
            fail(f"raw JSON-RPC: {what}: replies {replies}")
        ok(f"raw JSON-RPC: {what}")


async def latency(trove, bundle, queries_file):
    with open(queries_file) as f:
        queries = [q.strip() for q in f if q.strip()]
    times = {}
    async with Client(server(trove, [bundle]), mode="legacy") as client:
        async def timed(tool, args):
            t0 = time.perf_counter()
            r = await client.call_tool(tool, args)
            times.setdefault(tool, []).append((time.perf_counter() - t0) * 1000)
            return r

        await timed("list_bundles", {})
        for q in queries:
            r = await timed("search_code", {"query": q, "k": 10})
            hits = [line for line in text_of(r).splitlines() if line and not line.startswith(" ")]
            path = hits[0].split(":")[0] if hits else None
            await timed("read_map", {})
            if path:
                await timed("read_map", {"path": path.rsplit("/", 1)[0]} if "/" in path else {})
                await timed("read_file", {"path": path, "start_line": 1})
            word = max(q.split(), key=len).strip("?.,")
            await timed("resolve_symbol", {"name": word, "action": "definition"})
            await timed("resolve_symbol", {"name": word, "action": "callers"})
            await timed("list_bundles", {})
    print("tool              calls    p50 ms    p95 ms")
    for tool, ts in sorted(times.items()):
        ts.sort()
        p95 = ts[min(len(ts) - 1, int(len(ts) * 0.95))]
        print(f"{tool:<16} {len(ts):>6} {statistics.median(ts):>9.1f} {p95:>9.1f}")


def main():
    if len(sys.argv) >= 4 and sys.argv[1] == "check":
        trove, bundles = sys.argv[2], sys.argv[3:]
        asyncio.run(check_tools(trove, bundles[:1], "legacy"))
        asyncio.run(check_tools(trove, bundles[:1], "auto"))
        if len(bundles) > 1:
            asyncio.run(check_tools(trove, bundles, "legacy"))
        raw_abuse(trove, bundles[0])
        print("all checks passed")
    elif len(sys.argv) == 5 and sys.argv[1] == "latency":
        asyncio.run(latency(sys.argv[2], sys.argv[3], sys.argv[4]))
    else:
        print(__doc__, file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
