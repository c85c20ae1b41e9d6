#!/usr/bin/env bash
# Behaviour snapshot of a trove binary, to prove a refactor changed nothing.
#
#   scripts/behaviour-snapshot.sh TROVE_BINARY OUTDIR     write the snapshot of TROVE_BINARY into OUTDIR
#   scripts/behaviour-snapshot.sh --compare DIR_A DIR_B   print the files that differ, with a short diff;
#                                                         exit 1 if any differ, 0 if none
#
# A snapshot indexes three corpora — the repository's fixtures/ (copied into a git repository with
# a second commit that edits, adds, deletes and renames files), the dev corpus and the bench corpus —
# as: a full build at HEAD~1, `--since HEAD~1` on it (checked to run incrementally), a full build at
# HEAD, `--shard 1/2` + `--shard 2/2` merged, and `trove compact` of the since and merged bundles
# (plus, on the two small corpora, text-mode runs, --since auto, --compact, reuse by content and a
# few index flags). It records the sha256 of every file of every bundle and the manifests
# (normalized: tool.build/version only), then runs a fixed list of ~560 invocations of every
# subcommand (query in each mode and format, sql, map, symbols, refs, deps, show, inspect, verify,
# chunks, languages, pack/unpack and the packed file, sync from a folder/.trove/HTTP, mcp over stdio,
# serve over HTTP, ask against a scripted chat server, every --help, ~60 error cases) and records
# stdout, stderr and exit code of each,
# normalized only where output is genuinely volatile (times, rates, RSS, scratch paths, ports, pids,
# the binary's own build hash/commit: see normalization.txt in a snapshot and RULES in
# scripts/behaviour_snapshot.py). `trove --help` (and `trove` alone, which prints it) goes to
# top-help.txt on its own: the refactor may change it on purpose.
# Typical use: snapshot the old binary (copied out of target/), build, snapshot the new one, compare;
# a first check of the script itself is two snapshots of one binary, which must compare equal.
#
# Corpora come from (a missing one is skipped, loudly, and named in corpora.txt):
#   TROVE_SNAPSHOT_FIXTURES       default: <repo>/fixtures
#   TROVE_SNAPSHOT_DEV_CORPUS     default: /work/behaviour/dev-corpus
#                                 (bash ../shared/eval/fetch_corpus.sh ../shared/eval/dev.manifest DIR)
#   TROVE_SNAPSHOT_BENCH_CORPUS   default: /work/behaviour/bench-corpus (scripts/bench-corpus.sh DIR)
#   TROVE_SNAPSHOT_CORPORA        default: fixtures,dev,bench (a subset for a quick run)
#   TROVE_SNAPSHOT_WORK           where the scratch folder goes (default $TMPDIR; ~3 GB with bench);
#                                 TROVE_SNAPSHOT_KEEP_WORK=1 keeps it
# Every run is hermetic: SOURCE_DATE_EPOCH fixed, HOME/XDG/TROVE_CACHE_DIR in a fresh scratch
# folder, fixed git identities and dates, default --threads. Needs git, python3 (3.8+) and zstd.
# Never commit corpora or snapshots into this repository.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
usage() { sed -n '2,6p' "$0" >&2; exit 2; }
if [ "${1:-}" = "--compare" ]; then
  [ $# -eq 3 ] || usage
  exec python3 "$here/behaviour_snapshot.py" compare "$2" "$3"
fi
[ $# -eq 2 ] || usage
[ -x "$1" ] || { echo "behaviour-snapshot: $1 is not an executable" >&2; exit 2; }
command -v zstd >/dev/null || { echo "behaviour-snapshot: needs zstd" >&2; exit 2; }
exec python3 "$here/behaviour_snapshot.py" snapshot "$1" "$2"
