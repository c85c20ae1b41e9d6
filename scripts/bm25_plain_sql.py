#!/usr/bin/env python3
"""Runs the plain-SQL BM25 of docs/bundle-format.md over a trove bundle's views (views.sql) with
Python's duckdb package — an engine trove does not embed — and prints the top hits as JSON lines
(path, start_line, score).

usage: bm25_plain_sql.py BUNDLE K TOKEN...

TOKENs are the query's BM25 tokens (lower-cased words, as trove's tokenizer gives them); k1, b,
avgdl and n_docs come from the bundle's manifest.json, exactly as that page's SQL says. The views
are read as `cd BUNDLE && duckdb -init views.sql` would: relative paths resolve in the bundle.
"""
import json
import sys
from pathlib import Path

import duckdb

SQL = """
WITH q AS (SELECT term, ln(1 + ($n - df + 0.5) / (df + 0.5)) AS idf
           FROM terms WHERE list_contains($tokens, term))
SELECT c.path, c.start_line,
       sum(q.idf * p.tf * ($k1 + 1) / (p.tf + $k1 * (1 - $b + $b * c.token_len / $avgdl))) AS score
FROM q JOIN postings p USING (term) JOIN chunks c USING (segment, chunk_ord)
GROUP BY ALL ORDER BY score DESC, c.path, c.start_line LIMIT $k
"""


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    bundle, k, tokens = Path(sys.argv[1]).resolve(), int(sys.argv[2]), sys.argv[3:]
    bm25 = json.loads((bundle / "manifest.json").read_text())["bm25"]
    con = duckdb.connect()
    con.execute(f"SET file_search_path = '{str(bundle).replace(chr(39), chr(39) * 2)}'")
    con.execute((bundle / "views.sql").read_text())
    params = {
        "n": bm25["n_docs"],
        "avgdl": bm25["avgdl"],
        "k1": bm25["k1"],
        "b": bm25["b"],
        "k": k,
        "tokens": tokens,
    }
    for path, start_line, score in con.execute(SQL, params).fetchall():
        print(json.dumps({"path": path, "start_line": start_line, "score": score}))


if __name__ == "__main__":
    main()
