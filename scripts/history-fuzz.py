#!/usr/bin/env python3
"""Random git histories, each commit indexed two ways: `trove index --since auto` on the bundle of
the commit before, and a full build of the same tree into a fresh directory. The two must agree:
the incremental bundle, compacted, holds byte for byte the full build's tables, and before the
compaction it answers `query`, `symbols`, `refs`, `deps`, `map` and `show` as the full build does
(built on 1–4 threads: the bytes do not depend on it). A copy kept up to date with `trove sync`, from
the directory or a pack of it, verifies and equals it; with shards (some seeds), each shard's own
`--since` bundle, merged, answers as the full build and compacts to its tables.

Each seed makes its own repository from the files under fixtures/ and applies STEPS rounds of
random changes — adds, edits, deletes, renames (also across languages and in case only), folder
moves, mode flips, links, binary and empty files, files past the size cap, duplicates, CRLF text,
ignore files (.gitignore, .ignore, .troveignore, nested too), .gitattributes, generated markers,
minified files, odd names, vendored folders, nested repositories — committing most rounds and
leaving some in the work tree for `--include-uncommitted`. Some rounds compact the incremental
bundle in place, some re-index it without --since (content-hash reuse). Some seeds index a folder
of the repository, some exclude a glob.

A mismatch prints the seed, the round, what the round did and the difference, keeps the seed's
directory, and the script exits 1; rerun one seed with `--seed N --steps K`.

usage: scripts/history-fuzz.py [--seeds N] [--first S] [--seed S] [--steps K] [--keep]
needs: git, a release build of trove ($TROVE or $CARGO_TARGET_DIR/release/trove)
"""
import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
CAP = 6000  # --max-file-bytes for both builds: some fixtures grow past it


def find_trove():
    t = os.environ.get("TROVE")
    if t:
        return t
    for c in (Path(os.environ.get("CARGO_TARGET_DIR", "target")) / "release/trove", HERE / "target/release/trove"):
        if c.is_file():
            return str(c)
    sys.exit("build trove first (cargo build --release) or set TROVE")


def run(cmd, cwd=None, ok=(0,)):
    p = subprocess.run(cmd, cwd=cwd, capture_output=True)
    if p.returncode not in ok:
        raise RuntimeError(f"{' '.join(map(str, cmd))} -> {p.returncode}\n{p.stderr.decode(errors='replace')}")
    return p


def git(repo, *args):
    return run(["git", *args], cwd=repo).stdout.decode(errors="replace")


POOL = sorted(
    p
    for p in (HERE / "fixtures").rglob("*")
    if p.is_file() and p.stat().st_size < 20000 and not {"snapshots", "scip", "compat"} & set(p.parts)
)
DIRS = ["", "src", "src/core", "lib", "pkg/util", "web/src", "docs", "tests", "Src", "a b", "deep/er/still"]


class Repo:
    def __init__(self, root, rng):
        self.root = root
        self.rng = rng
        self.log = []
        # A folder that is indexed on its own (it must not move away).
        self.keep = None

    def files(self):
        out = []
        for p in self.root.rglob("*"):
            rel = p.relative_to(self.root).as_posix()
            if ".git" in rel.split("/"):
                continue
            if p.is_symlink() or p.is_file():
                out.append(rel)
        return sorted(out)

    def texts(self):
        return [f for f in self.files() if not (self.root / f).is_symlink() and not f.rsplit("/", 1)[-1].startswith(".")]

    def new_path(self, ext=None):
        src = self.rng.choice(POOL)
        ext = ext if ext is not None else "".join(src.suffixes[-1:])
        name = self.rng.choice(["main", "util", "helpers", "service", "model", "index", "Widget", "parse", "x"])
        d = self.rng.choice(DIRS)
        rel = f"{d}/{name}{self.rng.randrange(100)}{ext}".lstrip("/")
        return rel, src

    def write(self, rel, data):
        p = self.root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        if p.is_symlink():
            p.unlink()
        p.write_bytes(data)

    def mutate(self, data):
        lines = data.split(b"\n")
        r = self.rng
        k = r.randrange(6)
        if k == 0 and len(lines) > 2:  # delete a range
            a = r.randrange(len(lines))
            del lines[a : a + r.randint(1, 8)]
        elif k == 1:  # insert lines from another fixture
            other = r.choice(POOL).read_bytes().split(b"\n")
            a = r.randrange(len(other))
            at = r.randrange(len(lines) + 1)
            lines[at:at] = other[a : a + r.randint(1, 30)]
        elif k == 2:  # duplicate a block
            a = r.randrange(len(lines))
            lines[a:a] = lines[a : a + r.randint(1, 15)]
        elif k == 3:  # rename an identifier-ish word
            words = [w for w in b" ".join(lines).split() if w.isalpha() and len(w) > 3]
            if words:
                w = r.choice(words)
                lines = [l.replace(w, w + b"Renamed") for l in lines]
        elif k == 4:  # append a whole other fixture
            lines += r.choice(POOL).read_bytes().split(b"\n")
        else:  # one changed character
            if lines and lines[0]:
                i = r.randrange(len(lines))
                lines[i] = lines[i] + b" // touched"
        return b"\n".join(lines)

    def step(self):
        r = self.rng
        ops = [
            (10, self.op_add), (12, self.op_edit), (4, self.op_delete), (5, self.op_rename),
            (2, self.op_rename_ext), (2, self.op_case), (2, self.op_move_dir), (2, self.op_chmod),
            (2, self.op_link), (2, self.op_binary), (2, self.op_empty), (2, self.op_big),
            (2, self.op_copy), (2, self.op_crlf), (3, self.op_ignore), (1, self.op_attributes),
            (1, self.op_nul_tail), (1, self.op_secret), (1, self.op_generated),
            (1, self.op_minified), (2, self.op_odd_name), (1, self.op_vendored),
            (1, self.op_nested_repo), (2, self.op_checkout_again),
        ]
        total = sum(w for w, _ in ops)
        for _ in range(r.randint(1, 4)):
            x = r.randrange(total)
            for w, f in ops:
                if x < w:
                    f()
                    break
                x -= w

    def pick(self):
        t = self.texts()
        return self.rng.choice(t) if t else None

    def op_add(self):
        rel, src = self.new_path()
        data = src.read_bytes()
        if self.rng.random() < 0.5:
            data = self.mutate(data)
        self.write(rel, data)
        self.log.append(f"add {rel} from {src.relative_to(HERE)}")

    def rewrite(self, what, change):
        # A file picked at random, its bytes replaced by change(bytes).
        rel = self.pick()
        if rel:
            self.write(rel, change((self.root / rel).read_bytes()))
            self.log.append(f"{what} {rel}")

    def op_edit(self):
        self.rewrite("edit", self.mutate)

    def op_delete(self):
        rel = self.pick()
        if rel:
            (self.root / rel).unlink()
            self.log.append(f"delete {rel}")

    def _move(self, rel, to):
        if (self.root / to).exists() or (self.root / to).is_symlink():
            return False
        (self.root / to).parent.mkdir(parents=True, exist_ok=True)
        os.rename(self.root / rel, self.root / to)
        return True

    def op_rename(self):
        rel = self.pick()
        if rel:
            to, _ = self.new_path(ext="".join(Path(rel).suffixes[-1:]))
            if self._move(rel, to):
                if self.rng.random() < 0.4:
                    self.write(to, self.mutate((self.root / to).read_bytes()))
                self.log.append(f"rename {rel} -> {to}")

    def op_rename_ext(self):
        rel = self.pick()
        if rel:
            to, _ = self.new_path()
            if self._move(rel, to):
                self.log.append(f"rename (other language) {rel} -> {to}")

    def op_case(self):
        rel = self.pick()
        if rel:
            d, _, n = rel.rpartition("/")
            to = (d + "/" if d else "") + n.swapcase()
            if to != rel and self._move(rel, to):
                self.log.append(f"case rename {rel} -> {to}")

    def op_move_dir(self):
        dirs = sorted({f.rsplit("/", 1)[0] for f in self.files() if "/" in f})
        if dirs:
            d = self.rng.choice(dirs)
            to = self.rng.choice(["moved", "lib2", "src/core2", "x/y"]) + str(self.rng.randrange(10))
            held = self.keep and (self.keep == d or self.keep.startswith(d + "/"))
            if not held and not (self.root / to).exists() and not to.startswith(d + "/"):
                (self.root / to).parent.mkdir(parents=True, exist_ok=True)
                os.rename(self.root / d, self.root / to)
                self.log.append(f"move folder {d} -> {to}")

    def op_chmod(self):
        rel = self.pick()
        if rel:
            p = self.root / rel
            p.chmod(p.stat().st_mode ^ 0o111)
            self.log.append(f"chmod {rel}")

    def op_link(self):
        rel = self.pick()
        if not rel:
            return
        if self.rng.random() < 0.5:
            to, _ = self.new_path(ext="".join(Path(rel).suffixes[-1:]))
            if (self.root / to).exists():
                return
            (self.root / to).parent.mkdir(parents=True, exist_ok=True)
            os.symlink(os.path.relpath(self.root / rel, (self.root / to).parent), self.root / to)
            self.log.append(f"link {to} -> {rel}")
        else:  # a file replaced by a link to another
            other = self.pick()
            if other and other != rel:
                (self.root / rel).unlink()
                os.symlink(os.path.relpath(self.root / other, (self.root / rel).parent), self.root / rel)
                self.log.append(f"file {rel} replaced by a link to {other}")

    def op_binary(self):
        rel, _ = self.new_path(ext=self.rng.choice([".py", ".bin", ".rs"]))
        self.write(rel, bytes(self.rng.randrange(256) for _ in range(self.rng.randint(10, 3000))))
        self.log.append(f"binary {rel}")

    def op_empty(self):
        rel = self.pick() if self.rng.random() < 0.5 else self.new_path()[0]
        if rel:
            self.write(rel, b"")
            self.log.append(f"empty {rel}")

    def op_big(self):
        def grow(data):
            while len(data) <= CAP:
                data += b"\n" + self.rng.choice(POOL).read_bytes()
            return data

        self.rewrite("grow past the cap", grow)

    def op_copy(self):
        rel = self.pick()
        if rel:
            to, _ = self.new_path(ext="".join(Path(rel).suffixes[-1:]))
            if not (self.root / to).exists():
                self.write(to, (self.root / rel).read_bytes())
                self.log.append(f"copy {rel} -> {to}")

    def op_crlf(self):
        self.rewrite("line endings", lambda d: d.replace(b"\r\n", b"\n") if b"\r\n" in d else d.replace(b"\n", b"\r\n"))

    def op_ignore(self):
        name = self.rng.choice([".gitignore", ".ignore", ".troveignore"])
        d = self.rng.choice([""] + sorted({f.rsplit("/", 1)[0] for f in self.files() if "/" in f}))
        rel = f"{d}/{name}".lstrip("/")
        files = self.files()
        pats = []
        for _ in range(self.rng.randint(0, 3)):
            f = self.rng.choice(files) if files else "x"
            base = f.rsplit("/", 1)[-1]
            pats.append(self.rng.choice([base, "*" + "".join(Path(base).suffixes[-1:]), "!" + base, f.split("/")[0] + "/"]))
        self.write(rel, ("\n".join(pats) + "\n").encode())
        self.log.append(f"{rel}: {pats}")

    def op_attributes(self):
        d = self.rng.choice(["", "src", "docs"])
        rel = f"{d}/.gitattributes".lstrip("/")
        line = self.rng.choice(["*.md text eol=crlf", "*.py -text", "* text=auto", "*.txt binary", ""])
        self.write(rel, (line + "\n").encode())
        self.log.append(f"{rel}: {line!r}")

    def op_nul_tail(self):
        self.rewrite("NUL appended", lambda d: d + b"\x00\x01")

    def op_secret(self):
        rel, _ = self.new_path(ext=".py")
        self.write(rel, b'API_KEY = "AKIAQWERTYUIOPASDFGH"\n\ndef f():\n    return API_KEY\n')
        self.log.append(f"secret-bearing {rel}")

    def op_generated(self):
        head = b"// Code generated by protoc-gen-go. DO NOT EDIT.\n"
        self.rewrite("generated marker toggled", lambda d: d[len(head) :] if d.startswith(head) else head + d)

    def op_minified(self):
        rel, _ = self.new_path(ext=self.rng.choice([".js", ".css", ".py"]))
        line = ";".join(f"var a{i}=function(b){{return b*{i}}}" for i in range(self.rng.randint(50, 400)))
        self.write(rel, line.encode())
        self.log.append(f"minified {rel}")

    def op_odd_name(self):
        src = self.rng.choice(POOL)
        name = self.rng.choice(["sp ace", "ünïcödé", "[br]acket", "star*", "q?", "dash-", "#hash", "semi;colon"])
        rel = f"{self.rng.choice(DIRS)}/{name}{''.join(src.suffixes[-1:])}".lstrip("/")
        self.write(rel, src.read_bytes())
        self.log.append(f"odd name {rel!r}")

    def op_vendored(self):
        src = self.rng.choice(POOL)
        d = self.rng.choice(["node_modules/pkg", "vendor/lib", "target/debug", "dist", "build", "__pycache__", ".venv/lib"])
        rel = f"{d}/{src.name}"
        self.write(rel, src.read_bytes())
        self.log.append(f"vendored {rel}")

    def op_nested_repo(self):
        d = self.rng.choice(["nested", "src/inner", "third_party/x"])
        src = self.rng.choice(POOL)
        fresh = not (self.root / d / ".git").exists()
        if fresh and (self.root / d).exists():
            return
        # A new one, or a new commit in it (the outer repository's gitlink moves).
        self.write(f"{d}/{self.rng.randrange(100)}{src.name}", src.read_bytes())
        if fresh:
            run(["git", "init", "-q", str(self.root / d)])
        # With a commit, so that the outer repository takes it as a gitlink.
        for args in (["add", "-A"], ["commit", "-qm", "n"]):
            run(["git", "-c", "user.email=f@x", "-c", "user.name=f", "-C", str(self.root / d), *args])
        self.log.append(f"nested repository {d}{'' if fresh else ': a commit in it'}")


    def op_checkout_again(self):
        # Files written anew by git under the attributes of now (line endings may change).
        tracked = [p for p in git(self.root, "ls-files", "-z").split("\0") if p and (self.root / p).is_file() and not (self.root / p).is_symlink()]
        if tracked:
            some = self.rng.sample(tracked, min(len(tracked), self.rng.randint(1, 3)))
            for p in some:
                (self.root / p).unlink()
            git(self.root, "checkout", "--", *some)
            self.log.append(f"checked out again {some}")


def tables(bundle):
    m = json.loads((bundle / "manifest.json").read_text())
    return [(f["name"], f["rows"], f["sha256"]) for f in m["files"]]


def answers(trove, bundle, words, paths):
    out = {}

    def call(key, *args):
        p = subprocess.run([trove, *args], capture_output=True)
        lines = []
        for l in p.stdout.decode(errors="replace").splitlines():
            try:
                v = json.loads(l)
            except ValueError:
                lines.append(l)
                continue
            if isinstance(v, dict):
                v.pop("bundle", None)
            lines.append(json.dumps(v, sort_keys=True))
        out[key] = (p.returncode, lines)

    b = str(bundle)
    for w in words:
        call(f"query {w}", "query", b, w, "--format", "jsonl", "-k", "8")
        call(f"symbols {w}", "symbols", b, w, "--format", "jsonl")
        call(f"refs {w}", "refs", b, w, "--format", "jsonl")
    call("deps", "deps", b, "--format", "jsonl")
    call("map", "map", b, "--format", "json")
    for p in paths:
        call(f"show {p}", "show", b, p)
    return out


def one_seed(trove, seed, steps, keep):
    rng = random.Random(seed)
    tmp = Path(tempfile.mkdtemp(prefix=f"trove-hf-{seed}-"))
    root = tmp / "repo"
    root.mkdir()
    git(root, "init", "-q")
    for k, v in [("user.email", "f@x"), ("user.name", "f"), ("core.autocrlf", "false"), ("commit.gpgsign", "false")]:
        git(root, "config", k, v)
    repo = Repo(root, rng)
    for _ in range(rng.randint(4, 10)):
        repo.op_add()
    git(root, "add", "-A")
    git(root, "commit", "-qm", "start")
    incr, full, scratch = tmp / "incr.bundle", tmp / "full.bundle", tmp / "copy.bundle"
    consumer = tmp / "consumer.bundle"
    common = ["--max-file-bytes", str(CAP), "-q"]
    # Per seed: the whole repository or one folder of it, an exclude glob or none, shards or not.
    target = root
    if rng.random() < 0.25:
        target = root / "src"
        repo.keep = "src"
        repo.write("src/seed.py", b"def seeded():\n    return 1\n")
        git(root, "add", "-A")
        git(root, "commit", "-qm", "src")
    if rng.random() < 0.25:
        common += ["--exclude", rng.choice(["docs/**", "**/*.md", "tests/**", "*.json"])]
    shards = rng.choice([0, 0, 0, 2, 3])
    variant = f"root {target.relative_to(tmp)}, {' '.join(common[3:]) or 'no exclude'}, shards {shards}"
    run([trove, "index", target, "-o", incr, *common])
    for k in range(1, shards + 1):
        run([trove, "index", target, "-o", tmp / f"shard{k}.bundle", "--shard", f"{k}/{shards}", *common])
    for i in range(1, steps + 1):
        repo.log = []
        repo.step()
        commit = rng.random() < 0.8
        if commit:
            git(root, "add", "-A")
            git(root, "commit", "-qm", f"round {i}", "--allow-empty")
        how = rng.random()
        args = [trove, "index", target, "-o", incr, *common]
        if how < 0.85:
            args += ["--since", "auto"]
            if not commit or rng.random() < 0.2:
                args.append("--include-uncommitted")
            if rng.random() < 0.5:
                args.append("--no-compact")
        mode = (" ".join(map(str, args[5 + len(common) :])) or "content-hash") + f"; {variant}"
        p = subprocess.run(args, capture_output=True)
        err = p.stderr.decode(errors="replace")
        if p.returncode != 0:
            expected = "uncommitted change" in err and "--include-uncommitted" not in args
            if not expected:
                return fail(tmp, seed, i, repo.log, mode, f"index failed ({p.returncode}):\n{err}", keep=True)
            # Refused as it must be: commit and go on with the next round.
            git(root, "add", "-A")
            git(root, "commit", "-qm", f"round {i} committed")
            run([trove, "index", target, "-o", incr, *common, "--since", "auto"])
        for k in range(1, shards + 1):
            extra = ["--since", "auto"] + (["--include-uncommitted"] if "--include-uncommitted" in args else [])
            if "--since" not in args:
                extra = []
            run([trove, "index", target, "-o", tmp / f"shard{k}.bundle", "--shard", f"{k}/{shards}", *common, *extra])
        if full.exists():
            shutil.rmtree(full)
        # The full build on another thread count: the bytes do not depend on it.
        run([trove, "index", target, "-o", full, *common, "--threads", str(rng.randint(1, 4))])
        words = set()
        for f in rng.sample(repo.texts(), min(3, len(repo.texts()))):
            ws = [w for w in (root / f).read_bytes().decode(errors="replace").replace("(", " ").split() if w.isidentifier() and len(w) > 3]
            if ws:
                words.add(rng.choice(ws))
        paths = rng.sample(repo.files(), min(2, len(repo.files())))
        a, b = answers(trove, incr, sorted(words), paths), answers(trove, full, sorted(words), paths)
        if a != b:
            diff = [f"{k}:\n  incremental {a[k]}\n  full        {b[k]}" for k in a if a[k] != b.get(k)]
            return fail(tmp, seed, i, repo.log, mode, "answers differ\n" + "\n".join(diff)[:4000], keep=True)
        # A receiving team keeps a copy up to date with `trove sync`, from the directory or a pack.
        src = incr
        if rng.random() < 0.3:
            src = tmp / "incr.trove"
            run([trove, "pack", incr, "-o", src, "-q"])
        run([trove, "sync", src, consumer, "-q"])
        run([trove, "verify", consumer, "-q"])
        if tables(consumer) != tables(incr):
            return fail(tmp, seed, i, repo.log, mode, f"a copy synced from {src.name} differs from it", keep=True)
        if scratch.exists():
            shutil.rmtree(scratch)
        shutil.copytree(incr, scratch, symlinks=True)
        run([trove, "compact", scratch, "-q"])
        ta, tb = tables(scratch), tables(full)
        if ta != tb:
            diff = [f"  {x} vs {y}" for x, y in zip(ta, tb) if x != y]
            return fail(tmp, seed, i, repo.log, mode, "compacted tables differ (incremental vs full):\n" + "\n".join(diff), keep=True)
        if shards:
            merged = tmp / "merged.bundle"
            if merged.exists():
                shutil.rmtree(merged)
            run([trove, "merge", merged, *[tmp / f"shard{k}.bundle" for k in range(1, shards + 1)], "-q"])
            m = answers(trove, merged, sorted(words), paths)
            if m != b:
                diff = [f"{k}:\n  merged {m[k]}\n  full   {b[k]}" for k in m if m[k] != b.get(k)]
                return fail(tmp, seed, i, repo.log, mode, "merged shards answer otherwise\n" + "\n".join(diff)[:4000], keep=True)
            run([trove, "compact", merged, "-q"])
            if tables(merged) != tb:
                diff = [f"  {x} vs {y}" for x, y in zip(tables(merged), tb) if x != y]
                return fail(tmp, seed, i, repo.log, mode, "merged shards, compacted, differ from full:\n" + "\n".join(diff), keep=True)
        if rng.random() < 0.15:
            run([trove, "compact", incr, "-q"])
    print(f"seed {seed} ({variant}): {steps} rounds agree", flush=True)
    if not keep:
        shutil.rmtree(tmp)
    return True


def fail(tmp, seed, i, log, mode, what, keep):
    print(f"seed {seed} round {i} ({mode}): {what}\n  the round did: {log}\n  kept: {tmp}", flush=True)
    return False


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=20, help="how many seeds (default 20)")
    ap.add_argument("--first", type=int, default=1, help="the first seed (default 1)")
    ap.add_argument("--seed", type=int, help="run this one seed")
    ap.add_argument("--steps", type=int, default=12, help="rounds per seed (default 12)")
    ap.add_argument("--keep", action="store_true", help="keep every seed's directory")
    a = ap.parse_args()
    trove = find_trove()
    seeds = [a.seed] if a.seed is not None else range(a.first, a.first + a.seeds)
    bad = 0
    for s in seeds:
        ok = one_seed(trove, s, a.steps, a.keep)
        bad += not ok
    print(f"{len(seeds) - bad}/{len(seeds)} seeds agree")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
