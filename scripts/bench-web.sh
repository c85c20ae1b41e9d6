#!/usr/bin/env bash
# The web pages of `trove serve`, timed on one machine with a warm server (beside
# scripts/bench-serve.sh, which times the JSON API under load): for the project's eval questions,
# the search page's results fragment (what the page fetches as one types: the first results a
# person sees) and the whole search page; and the file page of the bundle's largest file of
# 4,000 to 6,000 lines (with its outline and links). Prints p50/p95 in milliseconds, measured at
# the client (one at a time, so server time plus loopback), against the goals of issue 69
# (first results <= 100 ms p50 on a 1M-chunk bundle; a 5,000-line file <= 200 ms).
#
# Usage: scripts/bench-web.sh BUNDLE [--synthetic]     env: TROVE (binary), ROUNDS (3)
#        --synthetic: the queries of scripts/bench-query.sh's generated corpus (words it holds),
#        for the 1M-chunk bundle that script indexes (WORK=DIR keeps it), instead of the eval
#        questions
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/find-trove.sh
source scripts/find-trove.sh
bundle=$(realpath "$1")
exec python3 scripts/bench_web.py --trove "$trove" --bundle "$bundle" --rounds "${ROUNDS:-3}" "${@:2}"
