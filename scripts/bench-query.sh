#!/usr/bin/env bash
# Query latency side by side: trove (BM25, vector, hybrid; whole process and warm in-process) at
# 100k and 1M chunks, beside tantivy on the same chunks and queries and a brute-force f32 scan of
# the same embeddings (the vector floor). Prints p50/p95 per row and the ratios.
#
# Usage: scripts/bench-query.sh [SIZES] [--segments K]
#        SIZES default 100000,1000000 (e.g. 100000 for a quick run); --segments 10 compares a bundle
#        of 10 segments (incremental runs, some rows dead) with its compaction instead of tantivy.
#        env: TROVE (binary), WORK=DIR keeps the generated corpora and bundles for the next run.
# Builds the query_latency example (cargo, this repository's target dir) and the tantivy peer
# (benches/peers, its own target dir $HOME/.cache/trove-peers-target: tantivy never enters
# trove's own build). The 1M-chunk bundle takes a few minutes to index and ~2 GB of disk.
set -euo pipefail
cd "$(dirname "$0")/.."
sizes=${1:-100000,1000000}
shift $(( $# > 0 ? 1 : 0 ))
# shellcheck source=scripts/find-trove.sh
source scripts/find-trove.sh
target=${CARGO_TARGET_DIR:-target}
echo "building the query_latency example and the tantivy peer ..." >&2
cargo build -q --release --example query_latency
# The segments comparison has no peer: tantivy is only built for the default run.
case " $* " in *" --segments "*) ;; *)
  CARGO_TARGET_DIR=${PEERS_TARGET_DIR:-$HOME/.cache/trove-peers-target} \
    cargo build -q --release --manifest-path benches/peers/Cargo.toml ;;
esac
peers=${PEERS_TARGET_DIR:-$HOME/.cache/trove-peers-target}
exec python3 scripts/bench_query.py --trove "$trove" --example "$target/release/examples/query_latency" \
  --tantivy "$peers/release/tantivy-bm25" --sizes "$sizes" ${WORK:+--work "$WORK"} "$@"
