#!/usr/bin/env python3
"""Reads every table of a trove bundle (each segment's Parquet files, as manifest.json lists them)
with pyarrow (a Parquet client trove did not write) and checks row counts against manifest.json and
the shapes of the embedding and windows columns.

usage: check_bundle.py BUNDLE
"""
import json
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq


def main():
    bundle = Path(sys.argv[1])
    manifest = json.loads((bundle / "manifest.json").read_text())
    dim = manifest["embedder"]["dim"]
    tables = [f for f in manifest["files"] if f["name"].endswith(".parquet")]
    for f in tables:
        name = f["name"].rsplit("/", 1)[-1]
        table = pq.read_table(bundle / f["name"])
        if table.num_rows != f["rows"]:
            sys.exit(f"{f['name']}: {table.num_rows} rows, manifest says {f['rows']}")
        if name == "embeddings.parquet":
            t = table.schema.field("embedding").type
            if not (pa.types.is_fixed_size_list(t) and t.list_size == dim) and table.num_rows:
                lens = set(len(v) for v in table.column("embedding").to_pylist())
                if lens != {dim}:
                    sys.exit(f"embeddings: vectors of sizes {lens}, expected {dim}")
            w = table.schema.field("windows").type
            if not (pa.types.is_list(w) and pa.types.is_fixed_size_list(w.value_type)
                    and w.value_type.list_size == dim):
                sys.exit(f"embeddings: windows is {w}, expected a list of {dim}-float vectors")
        if name == "chunks.parquet":
            for p in table.column("path").to_pylist():
                if p.startswith("/") or ".." in p.split("/"):
                    sys.exit(f"chunks: path {p!r} is not repo-relative")
    print(f"ok: {len(tables)} tables read by pyarrow {pa.__version__}")


if __name__ == "__main__":
    main()
