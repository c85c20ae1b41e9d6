#!/usr/bin/env bash
# `trove index` side by side with its floors and a peer, on the same tree in the same run.
#
#   parse-only   trove index --parse-only: walk + read + decode + tree-sitter parse, nothing else
#   trove index  the full pipeline, hash embedder, bundle written
#   ctags -R     universal-ctags over the same tree (tags file written)
#   rg --files   ripgrep's walk, the floor of listing the tree
#   rg -c .      ripgrep reading every file, the floor of reading it
# and `trove index` on 25% and 50% of the tree (`--shard 1/4`, `--shard 1/2`) to show whether peak
# memory stays flat as the tree grows. Each row: wall time, MB/s and files/s over the tree's bytes
# and files (the same denominator for every tool), peak RSS (/usr/bin/time). Then the ratios the
# performance targets are stated in, and the bundle's bytes over the source bytes.
#
# Then the ratio the parse floor is stated in — full index wall / parse-only wall (goal <= 1.5x) —
# with peak RSS, and the full run's per-stage account (`timings` of its --json summary).
#
# Usage: scripts/bench-index.sh [DIR | --kernel]   (default: the corpus from scripts/bench-corpus.sh
#        in $BENCH_CORPUS or /tmp/trove-bench-corpus, assembled when missing)
#        --kernel: the Linux kernel 6.1 from Debian's linux-source-6.1 package (installed when
#        missing), unpacked into a git repository under $KERNEL_DIR (default
#        /tmp/trove-bench-linux-6.1) once
#        env: TROVE (binary), THREADS (default: all cores), KEEP=1 keeps the bundles.
# Installs Debian's universal-ctags, ripgrep and time when missing (as root).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
if [ "${1:-}" = "--kernel" ]; then
  kdir=${KERNEL_DIR:-/tmp/trove-bench-linux-6.1}
  if [ ! -d "$kdir/.git" ]; then
    tarball=/usr/src/linux-source-6.1.tar.xz
    if [ ! -f "$tarball" ]; then
      [ "$(id -u)" = 0 ] || { echo "needs: apt-get install linux-source-6.1" >&2; exit 2; }
      apt-get update -q >/dev/null && apt-get install -y -q linux-source-6.1 >/dev/null
    fi
    rm -rf "$kdir" && mkdir -p "$kdir"
    tar -xJf "$tarball" -C "$kdir" --strip-components=1
    # Debian's packaging ignores everything at the top level (`/*`, for its own repository):
    # without that rule the tree is the kernel's as upstream ships it.
    sed -i '/^\/\*$/d; /^!\/debian\/$/d' "$kdir/.gitignore"
    git -C "$kdir" init -q && git -C "$kdir" add -A \
      && git -C "$kdir" -c user.name=bench -c user.email=bench@example.com commit -qm linux-6.1
  fi
  set -- "$kdir"
fi
dir=${1:-${BENCH_CORPUS:-/tmp/trove-bench-corpus}}
[ -d "$dir/.git" ] || [ $# -ge 1 ] || "$here/bench-corpus.sh" "$dir"
dir=$(cd "$dir" && pwd)

need=()
ctags --version 2>/dev/null | grep -q Universal || need+=(universal-ctags)
command -v rg >/dev/null || need+=(ripgrep)
[ -x /usr/bin/time ] || need+=(time)
if [ ${#need[@]} -gt 0 ]; then
  [ "$(id -u)" = 0 ] || { echo "needs: apt-get install ${need[*]}" >&2; exit 2; }
  apt-get update -q >/dev/null && apt-get install -y -q "${need[@]}" >/dev/null
fi
# shellcheck source=scripts/find-trove.sh
source "$here/find-trove.sh"
threads=${THREADS:-0}
work=$(mktemp -d)
[ "${KEEP:-}" = 1 ] && echo "keeping $work" >&2 || trap 'rm -rf "$work"' EXIT

# The tree as the tools see it: every file under DIR but .git.
files=$(cd "$dir" && find . -path ./.git -prune -o -type f -print | wc -l)
bytes=$(cd "$dir" && find . -path ./.git -prune -o -type f -printf '%s\n' | awk '{ s += $1 } END { print s }')
echo "tree: $dir  $files files  $((bytes / 1000000)) MB   trove: $("$trove" --version)   cores: $(nproc)"
# Warm the page cache once, so no row pays for the first read of the tree.
rg -c . "$dir" >/dev/null 2>&1 || true

# row LABEL CMD... : runs CMD under /usr/bin/time, prints the row, sets $secs and $kb
row() {
  local label=$1; shift
  /usr/bin/time -f "%e %M" -o "$work/time" "$@" >"$work/out" 2>"$work/err" || {
    echo "$label failed:" >&2; tail -5 "$work/err" >&2; exit 1; }
  read -r secs kb < "$work/time"
  awk -v l="$label" -v s="$secs" -v kb="$kb" -v b="$bytes" -v f="$files" 'BEGIN {
    if (s < 0.01) s = 0.01
    printf "%-22s %8.2f s %8.1f MB/s %9.0f files/s %8.0f MB\n", l, s, b / 1e6 / s, f / s, kb / 1024 }'
}

printf '%-22s %10s %13s %15s %11s\n' run wall throughput files "peak RSS"
row "rg --files" rg --files --no-ignore --hidden "$dir"; rg_files=$secs
row "rg -c ." rg -c --no-ignore --hidden . "$dir"; rg_read=$secs
row "ctags -R" ctags -R -f "$work/tags" "$dir"; ctags=$secs
row "trove parse-only" "$trove" index "$dir" --parse-only --threads "$threads"; parse=$secs
row "trove index 25%" "$trove" index "$dir" -o "$work/b25" --shard 1/4 --quiet --threads "$threads"; kb25=$kb
row "trove index 50%" "$trove" index "$dir" -o "$work/b50" --shard 1/2 --quiet --threads "$threads"; kb50=$kb
row "trove index" "$trove" index "$dir" -o "$work/b" --json --quiet --threads "$threads"; index=$secs; kb100=$kb
cp "$work/out" "$work/summary.json"

python3 - "$work/summary.json" "$work/b" "$parse" "$index" "$ctags" "$rg_files" "$rg_read" "$kb25" "$kb50" "$kb100" <<'PY'
import json, os, sys
s = json.load(open(sys.argv[1])); b = sys.argv[2]
parse, index, ctags, rg_files, rg_read = map(float, sys.argv[3:8])
kb25, kb50, kb100 = map(int, sys.argv[8:11])
m = json.load(open(os.path.join(b, "manifest.json")))
sizes = {os.path.basename(f["name"]): f["bytes"] for f in m["files"] if f["name"].endswith(".parquet")}
total = sum(sizes.values())
emb = sizes.get("embeddings.parquet", 0)
src = s["source_bytes"]
print()
print(f"trove index: {s['files_indexed']} files, {src / 1e6:.1f} MB indexed, {s['chunks']} chunks")
print("ratios (same run, same tree):")
print(f"  index / parse-only wall          {index / parse:5.2f}x   (goal <= 1.50; peak RSS {kb100 / 1024:.0f} MB)")
print(f"  index / parse-only throughput   {parse / index:5.2f}x   (target >= 0.80)")
print(f"  index / ctags -R throughput     {ctags / index:5.2f}x")
print(f"  index / rg -c . throughput      {rg_read / index:5.2f}x   (rg --files {rg_files:.2f} s)")
print(f"  peak RSS 25% / 50% / 100%       {kb25 / 1024:.0f} / {kb50 / 1024:.0f} / {kb100 / 1024:.0f} MB   (target: flat, <= 1024)")
print(f"  bundle / source bytes           {total / src:5.2f}x   without embeddings {(total - emb) / src:5.2f}x   (target <= 0.60)")
print("  bundle tables: " + ", ".join(f"{k.removesuffix('.parquet')} {v / 1e6:.1f} MB" for k, v in sorted(sizes.items(), key=lambda kv: -kv[1])))
t = s.get("timings")
if t:
    print()
    print(f"where the full index's time went (seconds summed over threads; wall {t['wall_secs']:.2f} s, "
          f"cpu {t['cpu_secs'] or 0:.2f} s, {t['workers']} workers):")
    for st in t["stages"]:
        print(f"  {st['stage']:<10} {st['secs']:8.2f} s  {st['share']:5.2f}x wall")
    print(f"  workers busy {t['worker_busy_secs']:.2f} s, idle {t['worker_idle_secs']:.2f} s; "
          f"writer busy {t['writer_busy_secs']:.2f} s, idle {t['writer_idle_secs']:.2f} s")
PY
