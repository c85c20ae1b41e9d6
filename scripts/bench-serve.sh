#!/usr/bin/env bash
# `trove serve` under load, on one machine: the server and scripts/load-serve.py's clients share
# its cores (so the numbers are a floor). Three runs of SECONDS_RUN each:
#   1. hybrid: CLIENTS (16) clients sending only hybrid POST /query (our 128 eval questions);
#   2. mixed: 32 clients, the mix of load-serve.py (queries in every mode and with filters,
#      symbols, refs, files, maps);
#   3. reload (with ALT): run 2 again while the served bundle is switched 5 times between BUNDLE
#      and ALT (an atomic rename of a symlink, as a publisher would swap it): 0 failed requests.
# Then the same questions one at a time through the CLI (`trove query`, a process each) beside
# the server's latency at one client, as the reference.
#
# Usage: scripts/bench-serve.sh BUNDLE [ALT]   env: TROVE (binary), CLIENTS (16), SECONDS_RUN (30), OUT (dir)
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/find-trove.sh
source scripts/find-trove.sh
bundle=$(realpath "$1")
alt=${2:+$(realpath "$2")}
clients=${CLIENTS:-16}
secs=${SECONDS_RUN:-30}
out=${OUT:-$(mktemp -d)}
mkdir -p "$out"
queries=$out/queries.txt
python3 -c '
import json, pathlib, sys
for f in sorted(pathlib.Path("scripts/eval/queries").glob("*.jsonl")):
    for line in f.read_text().splitlines():
        if line.strip():
            print(json.loads(line)["query"])' > "$queries"
# The served path is a symlink, so a swap is one atomic rename.
work=$(mktemp -d "$(dirname "$bundle")/.bench-serve.XXXXXX")
trap 'kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; rm -rf "$work"' EXIT
ln -s "$bundle" "$work/served.bundle"
"$trove" serve "$work/served.bundle" --listen 127.0.0.1:0 --reload-interval 1 \
  > "$out/serve.out" 2> "$out/serve.log" &
pid=$!
for _ in $(seq 600); do
  grep -q "listening on" "$out/serve.out" 2>/dev/null && break
  kill -0 "$pid" 2>/dev/null || { cat "$out/serve.log" >&2; exit 1; }
  sleep 0.5
done
base=$(sed -n 's/.*listening on //p' "$out/serve.out")
echo "serving $bundle at $base (pid $pid; log $out/serve.log)" >&2
chunks=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]+"/manifest.json"))["counts"]["chunks"])' "$bundle")

load() { python3 scripts/load-serve.py --base "$base" --server-pid "$pid" --queries "$queries" "$@"; }
load --clients 1 --seconds 10 --mode hybrid --json "$out/one.json" > "$out/one.txt"
load --clients "$clients" --seconds "$secs" --mode hybrid --json "$out/hybrid.json" > "$out/hybrid.txt"
load --clients 32 --seconds "$secs" --mode mixed --json "$out/mixed.json" > "$out/mixed.txt"
if [ -n "$alt" ]; then
  swap="t=\$(readlink $work/served.bundle); n=$bundle; [ \"\$t\" = \"$bundle\" ] && n=$alt; ln -sfn \"\$n\" $work/next && mv -T $work/next $work/served.bundle"
  load --clients 32 --seconds "$secs" --mode mixed --reload-cmd "$swap" --reloads 5 \
    --json "$out/reload.json" > "$out/reload.txt"
fi
# The CLI, one process per question (what a script without the server pays).
cli=$(python3 - "$trove" "$bundle" "$queries" <<'EOF'
import subprocess, sys, time
trove, bundle, queries = sys.argv[1:]
qs = [q for q in open(queries).read().splitlines() if q.strip()][:40]
lat = []
for q in qs:
    t = time.perf_counter()
    subprocess.run([trove, "query", bundle, q, "--format", "json"], stdout=subprocess.DEVNULL, check=False)
    lat.append((time.perf_counter() - t) * 1e3)
lat.sort()
print(f"{lat[len(lat)//2]:.1f} {lat[int(len(lat)*0.99)]:.1f}")
EOF
)
python3 - "$out" "$chunks" "$clients" "$cli" <<'EOF'
import json, os, sys
out, chunks, clients, cli = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4].split()
def row(name, f):
    p = os.path.join(out, f)
    if not os.path.exists(p):
        return
    r = json.load(open(p))
    lat, hy = r["latency"], r["latency_query_hybrid"]
    rss = (r.get("server_rss_kb") or {}).get("peak") or 0
    print(f"{name:<28} {r['requests']:>8} {r['throughput_rps']:>8.1f} {lat['p50_ms']:>7.1f} "
          f"{lat['p99_ms']:>7.1f} {hy['p99_ms'] or 0:>10.1f} {r['errors']:>6} {rss / 1024:>8.0f}")
print(f"trove serve over {chunks:,} chunks")
print(f"{'run':<28} {'requests':>8} {'req/s':>8} {'p50 ms':>7} {'p99 ms':>7} {'hybrid p99':>10} {'errors':>6} {'RSS MB':>8}")
row("1 client, hybrid", "one.json")
row(f"{clients} clients, hybrid", "hybrid.json")
row("32 clients, mixed", "mixed.json")
row("32 clients, mixed, 5 reloads", "reload.json")
one = json.load(open(os.path.join(out, "one.json")))["latency"]
print(f"CLI `trove query` per question (a process each): p50 {cli[0]} ms, p99 {cli[1]} ms; "
      f"the server at 1 client: p50 {one['p50_ms']:.1f} ms ({float(cli[0]) / max(one['p50_ms'], 1e-9):.1f}x less)")
p = os.path.join(out, "reload.json")
if os.path.exists(p):
    r = json.load(open(p))
    print(f"reloads: {len(r.get('reloads') or [])}, failed {r.get('reload_failures')}, "
          f"switch seconds {r.get('reload_switch_s')}, generations seen {r.get('generations_seen')}")
EOF
