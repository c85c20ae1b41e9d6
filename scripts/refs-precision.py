#!/usr/bin/env python3
"""Precision and recall of trove's call edges without SCIP, against a SCIP index's.

Usage: refs-precision.py SCIP_BUNDLE PLAIN_BUNDLE [--show N]

SCIP_BUNDLE was indexed with `--scip` (a real indexer's facts), PLAIN_BUNDLE from the same tree
without. Only files whose SCIP document was applied count (their `refs` rows have resolution
`scip`). A definition has the same symbol_id in both bundles (path, kind, symbol path, start).

- truth: the SCIP bundle's `call` rows whose target is a definition in the bundle, of a kind a
  call lands on (function, method, constructor, class, struct, macro).
- a heuristic edge: a `call` row of the plain bundle with a target_symbol_id.
  It is right when the SCIP bundle has a call of the same name on the same line landing on the
  same definition; wrong when SCIP has calls of that name on that line and none lands there
  (elsewhere, or outside the bundle); unknown when SCIP has no call of that name there (a call
  the type checker could not type: such edges are counted, and left out of precision).
- precision = right / (right + wrong); recall = truth edges the plain bundle has / truth edges.
Prints one line per language family and the total, as JSON lines with --json.
"""
import json
import os
import sys

import duckdb

CALLABLE = ("function", "method", "macro", "constructor", "class", "struct")


def connect(bundle):
    con = duckdb.connect()
    root = os.path.abspath(bundle)
    views = open(os.path.join(root, "views.sql")).read()
    # views.sql reads its tables relative to the bundle.
    con.execute(views.replace("'segments/", f"'{root}/segments/"))
    return con


def rows(con, sql):
    return con.execute(sql).fetchall()


def main():
    args = sys.argv[1:]
    show = 0
    if "--show" in args:
        i = args.index("--show")
        show = int(args[i + 1])
        del args[i : i + 2]
    as_json = "--json" in args
    args = [a for a in args if a != "--json"]
    if len(args) != 2:
        sys.exit(__doc__)
    scip_b, plain_b = args
    s, p = connect(scip_b), connect(plain_b)
    kinds = ", ".join(f"'{k}'" for k in CALLABLE)
    fam = "CASE WHEN language IN ('javascript','typescript','tsx') THEN 'js' ELSE language END"
    covered = {
        r[0]: r[1]
        for r in rows(
            s,
            f"SELECT DISTINCT r.path, {fam} FROM refs r JOIN files f USING (path) WHERE r.resolution = 'scip'",
        )
    }
    # SCIP calls: (path, line, name) -> the definitions they land on (None: outside the bundle).
    # A constructor stands for its class too: `new Circle()` lands on Circle's constructor in
    # SCIP and on the class Circle by name, and both are right.
    scip_calls = {}
    truth = {}
    for path, line, target, tid, tkind, tname, tparent in rows(
        s,
        f"""SELECT r.path, r.line, r.target, r.target_symbol_id, t.kind, t.name, t.parent_id
            FROM refs r LEFT JOIN symbols t ON t.symbol_id = r.target_symbol_id
            WHERE r.kind = 'call' AND r.resolution = 'scip'""",
    ):
        ok = {tid}
        if (tname in ("constructor", "__init__") or tkind == "constructor") and tparent is not None:
            ok.add(tparent)
        scip_calls.setdefault((path, line, target), set()).update(ok)
        if tid is not None and tkind in CALLABLE:
            truth.setdefault((path, line, target), set()).update(ok)
    heur = [
        r
        for r in rows(
            p,
            """SELECT r.path, r.line, r.target, r.target_symbol_id, r.resolution FROM refs r
               WHERE r.kind = 'call' AND r.target_symbol_id IS NOT NULL""",
        )
        if r[0] in covered
    ]
    stats = {}

    def st(path):
        return stats.setdefault(
            covered[path],
            {"right": 0, "wrong": 0, "unknown": 0, "truth": 0, "found": 0, "by": {}},
        )

    wrong_examples = []
    found = set()
    for path, line, target, tid, how in heur:
        x = st(path)
        targets = scip_calls.get((path, line, target))
        by = x["by"].setdefault(how, {"right": 0, "wrong": 0, "unknown": 0})
        if targets is None:
            x["unknown"] += 1
            by["unknown"] += 1
        elif tid in targets:
            x["right"] += 1
            by["right"] += 1
            if tid in truth.get((path, line, target), ()):
                found.add((path, line, target))
        else:
            x["wrong"] += 1
            by["wrong"] += 1
            wrong_examples.append((path, line, target, how))
    for e in truth:
        x = st(e[0])
        x["truth"] += 1
        x["found"] += e in found
    total = {"right": 0, "wrong": 0, "unknown": 0, "truth": 0, "found": 0}
    out = []
    for lang in sorted(stats):
        x = stats[lang]
        for k in total:
            total[k] += x[k]
        out.append((lang, x))
    out.append(("all", total))
    for lang, x in out:
        judged = x["right"] + x["wrong"]
        prec = x["right"] / judged if judged else float("nan")
        rec = x["found"] / x["truth"] if x["truth"] else float("nan")
        if as_json:
            print(json.dumps({"family": lang, "precision": prec, "recall": rec, **x}))
        else:
            print(
                f"{lang:6} precision {prec:.3f} ({x['right']}/{judged}, {x['unknown']} unknown)  "
                f"recall {rec:.3f} ({x['found']}/{x['truth']})"
                + (f"  by resolution: {x['by']}" if 'by' in x else "")
            )
    for w in wrong_examples[:show]:
        print("wrong:", *w)


if __name__ == "__main__":
    main()
