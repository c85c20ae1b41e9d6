#!/usr/bin/env python3
"""Module dependency graph of every crate of the workspace, and a check that it is acyclic.

    scripts/module_graph.py [--edges] [ROOT]
    scripts/module_graph.py --self-test

Reads every crate's `src/` (the workspace root's and `crates/*/`), maps each `.rs` file to its
module path (`a/b.rs` and `a/b/mod.rs` are `a::b`), and records an edge A -> B when file A names a
path into module B: `crate::b::...`, `super::...`, `self::...` and bare `use b::...` inside the root
file, including grouped imports (`use crate::{a::X, b::{Y, Z}}`). A module's own children are not
edges (`mod.rs` -> its submodules is how Rust nests them). Edges are collapsed to the modules that
exist: `crate::a::b::Item` is an edge to `a::b` when `a/b.rs` exists, else to `a`.

Exits 1 and prints every cycle (strongly connected component of more than one module) when a
crate's module graph has one, 0 when all are acyclic. `--edges` prints the edges as well.
Comments and string literals are skipped, so a path in a doc comment is not an edge.
"""
import os
import re
import sys


def strip(src):
    out, i, n = [], 0, len(src)
    while i < n:
        c = src[i]
        if src.startswith("//", i):
            j = src.find("\n", i)
            i = n if j < 0 else j
        elif src.startswith("/*", i):
            depth, i = 1, i + 2
            while i < n and depth:
                if src.startswith("/*", i):
                    depth, i = depth + 1, i + 2
                elif src.startswith("*/", i):
                    depth, i = depth - 1, i + 2
                else:
                    i += 1
        elif c == "r" and re.match(r'r#*"', src[i:i + 10]) and (i == 0 or not (src[i - 1].isalnum() or src[i - 1] == "_")):
            m = re.match(r'r(#*)"', src[i:])
            end = '"' + m.group(1)
            j = src.find(end, i + len(m.group(0)))
            i = n if j < 0 else j + len(end)
            out.append('""')
        elif c == '"':
            j = i + 1
            while j < n and src[j] != '"':
                j += 2 if src[j] == "\\" else 1
            i = j + 1
            out.append('""')
        elif c == "'" and re.match(r"'(\\.|[^\\'])'", src[i:i + 4]) or (c == "'" and re.match(r"'\\[ux]", src[i:i + 3])):
            j = src.find("'", i + 2)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def modules(src_dir):
    mods = {}
    for dirpath, _, files in os.walk(src_dir):
        for f in files:
            if not f.endswith(".rs"):
                continue
            rel = os.path.relpath(os.path.join(dirpath, f), src_dir)[:-3].split(os.sep)
            if rel[-1] == "mod":
                rel = rel[:-1]
            if rel == ["main"] and os.path.exists(os.path.join(src_dir, "lib.rs")):
                # A package with a library and a binary: two crates. The binary's root is
                # `main.rs` (its modules are the files it declares); the library's modules are
                # the rest. Both cannot be `()`; the binary's root is named `(bin)`.
                rel = ["(bin)"]
            elif rel in (["lib"], ["main"]):
                rel = []
            if rel and rel[0] in ("bin",):
                continue
            mods[tuple(rel)] = os.path.join(dirpath, f)
    return mods


def expand_use(tree):
    """`a::{b::C, d}` -> ["a::b::C", "a::d"]."""
    tree = tree.strip()
    m = re.match(r"^(.*?)\{(.*)\}$", tree, re.S)
    if not m:
        return [tree]
    prefix, inner = m.group(1), m.group(2)
    parts, depth, cur = [], 0, ""
    for ch in inner:
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    out = []
    for p in parts:
        if p.strip():
            out += [prefix + q for q in expand_use(p)]
    return out


def resolve(mods, segs, reexports=None):
    best, k_best = (), 0
    for k in range(1, len(segs) + 1):
        if tuple(segs[:k]) in mods:
            best, k_best = tuple(segs[:k]), k
    # An item a module re-exports from a child (`pub use manifest::Manifest` in lib.rs) is the
    # child's: `crate::Manifest` is an edge to `manifest`, not to the root.
    seen = set()
    while reexports and k_best < len(segs) and (best, segs[k_best]) in reexports and best not in seen:
        seen.add(best)
        best = reexports[(best, segs[k_best])]
    return best


def reexports_of(mods):
    """(module, item) -> the child module a `pub use` in that module takes the item from."""
    out = {}
    for mod, path in mods.items():
        src = strip(open(path, encoding="utf-8").read())
        for m in re.finditer(r"\bpub(?:\([a-z]+\))?\s+use\s+([^;]+);", src):
            for p in expand_use(re.sub(r"\s+", "", re.sub(r"\s+as\s+", "@", m.group(1)))):
                segs = [s for s in p.split("::") if s]
                if segs and segs[0] == "self":
                    segs = segs[1:]
                if segs and segs[0] == "crate":
                    base, segs = [], segs[1:]
                else:
                    base = list(mod)
                if len(segs) < 2:
                    continue
                target = resolve(mods, base + segs[:-1])
                name = segs[-1].split("@")[-1]
                segs[-1] = segs[-1].split("@")[0]
                if target and target != mod and target[: len(mod)] == mod:
                    out[(mod, name)] = target
    return out


def edges_of(mods):
    edges = set()
    reexports = reexports_of(mods)
    top = {m[0] for m in mods if m}
    for mod, path in mods.items():
        src = strip(open(path, encoding="utf-8").read())
        # An inline `mod tests` (at a file's end, by convention) sees the file's module as
        # `super`: its paths are the file's own, not its parent's.
        cut = re.search(r"#\[cfg\(test\)\]\s*mod\s+\w+\s*\{", src)
        if cut:
            src = src[: cut.start()]
        paths = []
        for m in re.finditer(r"\buse\s+([^;]+);", src):
            paths += [p.split("@")[0] for p in expand_use(re.sub(r"\s+", "", re.sub(r"\s+as\s+", "@", m.group(1))))]
        paths += re.findall(r"\b((?:crate|super|self)(?:::\w+)+)", src)
        is_mod_rs = path.endswith("mod.rs") or mod == ()
        for p in paths:
            p = re.sub(r"\bas\w+$", "", p.split(" as ")[0])
            segs = [s for s in p.split("::") if s]
            if not segs:
                continue
            if segs[0] == "crate":
                base = []
                segs = segs[1:]
            elif segs[0] in ("super", "self"):
                base = list(mod)
                while segs and segs[0] in ("super", "self"):
                    if segs[0] == "super":
                        base = base[:-1]
                    segs = segs[1:]
            elif mod == () and segs[0] in top:
                base = []
            else:
                continue
            target = resolve(mods, base + segs, reexports)
            if not target or target == mod:
                continue
            if target[: len(mod)] == mod:  # a module reaching into its own children
                continue
            edges.add((mod, target))
    return edges


def sccs(nodes, edges):
    adj = {n: [] for n in nodes}
    for a, b in edges:
        adj.setdefault(a, []).append(b)
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]
    sys.setrecursionlimit(10000)

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in adj.get(v, []):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(comp)

    for n in list(adj):
        if n not in index:
            visit(n)
    return out


def name(m):
    return "::".join(m) or "(root)"


def self_test():
    """The check must fail on a cycle, also one that runs through a re-export."""
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "crates", "x", "src")
        os.makedirs(src)
        files = {
            "lib.rs": "mod a;\nmod b;\npub use a::Thing;\n",
            "a.rs": "/// crate::b::Other in a comment is no edge\npub struct Thing(crate::b::Other);\n",
            "b.rs": "pub struct Other;\nfn f(_: crate::Thing) {}\n",
        }
        for name, text in files.items():
            with open(os.path.join(src, name), "w") as f:
                f.write(text)
        mods = modules(src)
        found = sccs(mods, edges_of(mods))
        assert found and sorted(found[0]) == [("a",), ("b",)], found
        # Siblings in a folder that name each other through `super::`.
        os.makedirs(os.path.join(src, "d"))
        for name, text in {
            "d/mod.rs": "mod e;\nmod f;\n",
            "d/e.rs": "pub struct E(super::f::F);\n",
            "d/f.rs": "pub struct F;\nfn g(_: super::e::E) {}\n#[cfg(test)]\nmod tests {\n    use super::*;\n}\n",
        }.items():
            with open(os.path.join(src, name), "w") as f:
                f.write(text)
        with open(os.path.join(src, "lib.rs"), "a") as f:
            f.write("mod d;\n")
        mods = modules(src)
        found = sorted(sorted(c) for c in sccs(mods, edges_of(mods)))
        assert [("d", "e"), ("d", "f")] in found, found
        os.remove(os.path.join(src, "d", "f.rs"))
        with open(os.path.join(src, "d", "f.rs"), "w") as f:
            f.write("pub struct F;\n")
        with open(os.path.join(src, "b.rs"), "w") as f:
            f.write("pub struct Other;\n")
        mods = modules(src)
        assert not sccs(mods, edges_of(mods))
    print("module_graph self-test: cycles through a re-export and through super:: are found, their removal passes")


def main():
    if "--self-test" in sys.argv:
        self_test()
        return
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    root = args[0] if args else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    crates = []
    if os.path.isdir(os.path.join(root, "src")):
        crates.append(("trove", os.path.join(root, "src")))
    cdir = os.path.join(root, "crates")
    if os.path.isdir(cdir):
        for c in sorted(os.listdir(cdir)):
            if os.path.isdir(os.path.join(cdir, c, "src")):
                crates.append((c, os.path.join(cdir, c, "src")))
    bad = 0
    for crate, src in crates:
        mods = modules(src)
        edges = edges_of(mods)
        # A module inside a folder may use its parent (`super::X` from a/b.rs names a); the parent
        # holding the child is nesting, not use, so only the child's edge counts.
        if "--edges" in sys.argv:
            for a, b in sorted(edges):
                print(f"{crate}: {name(a)} -> {name(b)}")
        for comp in sccs(mods, edges):
            bad += 1
            inner = sorted((a, b) for a, b in edges if a in comp and b in comp)
            print(f"{crate}: cycle among {', '.join(sorted(name(m) for m in comp))}")
            for a, b in inner:
                print(f"    {name(a)} -> {name(b)}")
    if bad:
        sys.exit(1)
    print(f"module graphs acyclic: {', '.join(c for c, _ in crates)}")


if __name__ == "__main__":
    main()
