"""Turns a bundle into one of a "future minor" of its format, for tests/compat.rs: what a newer
trove of the same major may add, which this one must read and ignore.

    python3 scripts/future_minor.py BUNDLE [--feature NAME=RELEASE]

Adds a column `future_note` to every segment's chunks.parquet, a table `future.parquet` to every
segment, a manifest key `future_key`, and sets `format_minor` to 99 (the files' entries get their
new rows, bytes and sha256). With --feature, also names NAME in `required_features`: a feature a
reader must know, which this one does not.
"""
import argparse
import hashlib
import json
import os

import pyarrow as pa
import pyarrow.parquet as pq


def entry(bundle, name, rows):
    data = open(os.path.join(bundle, name), "rb").read()
    return {"name": name, "rows": rows, "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("bundle")
    ap.add_argument("--feature")
    a = ap.parse_args()
    mpath = os.path.join(a.bundle, "manifest.json")
    m = json.load(open(mpath))
    files = {f["name"]: f for f in m["files"]}
    for s in m["segments"]:
        chunks = f"segments/{s['id']}/chunks.parquet"
        t = pq.read_table(os.path.join(a.bundle, chunks))
        t = t.append_column("future_note", pa.array(["later"] * t.num_rows, pa.string()))
        pq.write_table(t, os.path.join(a.bundle, chunks), compression="zstd")
        files[chunks].update(entry(a.bundle, chunks, t.num_rows))
        future = f"segments/{s['id']}/future.parquet"
        pq.write_table(pa.table({"x": pa.array([1, 2, 3], pa.int64())}),
                       os.path.join(a.bundle, future), compression="zstd")
        files[future] = entry(a.bundle, future, 3)
    m["files"] = list(files.values())
    m["format_minor"] = 99
    m["future_key"] = {"anything": [1, 2, 3]}
    if a.feature:
        name, release = a.feature.split("=", 1)
        m["required_features"] = {name: release}
    json.dump(m, open(mpath, "w"), indent=2)


if __name__ == "__main__":
    main()
