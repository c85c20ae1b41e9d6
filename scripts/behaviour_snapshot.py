#!/usr/bin/env python3
"""Behaviour snapshot of a trove binary, for proving a refactor changed nothing.

Driven by scripts/behaviour-snapshot.sh (see there for usage). Standard library only (plus the
`git`, `zstd` and `curl`-free Python HTTP client); never runs cargo.

  behaviour_snapshot.py snapshot TROVE OUTDIR   writes the snapshot of binary TROVE into OUTDIR
  behaviour_snapshot.py compare DIR_A DIR_B     prints the files that differ (short diffs); exit 1 if any

What a snapshot holds (OUTDIR):
  corpora.txt                 each corpus used (or SKIPPED), its commits and a hash of its tree
  bundles/<corpus>/<variant>.files          sha256, size and path of every file of the bundle
                                            (segments/*/*.parquet, tombstones, views.sql, ...);
                                            manifest.json by the sha256 of its normalized text
  bundles/<corpus>/<variant>.manifest.json  the manifest, normalized (see NORMALIZATION)
  bundles/<corpus>/<name>.trove.entries     a packed file: its tar entries (name, mode, size,
                                            mtime, owner, sha256), the manifest normalized
  bundles/<corpus>/equalities.txt           recorded (not asserted): since+compact vs full,
                                            merged(+compact) vs full, text-mode vs JSON-mode runs
  cmd/<id>.argv|.out|.err|.rc               one invocation: its command line, stdout, stderr and
                                            exit status, normalized
  top-help.txt                              `trove --help` and `trove` without arguments (the same
                                            help, exit 2): the only output the refactor changes on
                                            purpose, so it is kept out of cmd/
  normalization.txt                         the rules applied, verbatim from RULES below
  _meta/                                    identity (raw version, build hash, commit), timings:
                                            informational, never compared as a difference
  _raw/                                     the same outputs before normalization (not compared)

Corpora (environment variables; a missing corpus is skipped, loudly):
  TROVE_SNAPSHOT_FIXTURES     default <repo>/fixtures (copied into a fresh git repo, two commits)
  TROVE_SNAPSHOT_DEV_CORPUS   default /work/behaviour/dev-corpus (copied likewise, two commits)
  TROVE_SNAPSHOT_BENCH_CORPUS default /work/behaviour/bench-corpus (a git repo: cloned, HEAD~1/HEAD)
  TROVE_SNAPSHOT_CORPORA      default "fixtures,dev,bench": which to run
  TROVE_SNAPSHOT_WORK         parent of the scratch folder (default: $TMPDIR); removed after unless
                              TROVE_SNAPSHOT_KEEP_WORK=1
"""
import difflib
import hashlib
import http.client
import io
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
EPOCH = "1700000000"  # SOURCE_DATE_EPOCH of every run: manifests' created_at is fixed by it
GIT_DATES = ["2023-11-14T22:13:20+00:00", "2023-11-15T22:13:20+00:00"]
DEFAULT_TIMEOUT = 180
INDEX_TIMEOUT = 1200

# --------------------------------------------------------------------------------------------
# NORMALIZATION. Applied to every captured stdout/stderr and to manifests, in this order:
#  1. exact strings of this run, replaced wherever they occur:
#       the scratch folder                    -> <WORK>
#       the snapshot's output folder          -> <OUT>
#       the binary's build hash (manifest tool.build, a hash of its source files) -> <BUILD>
#       the binary's git commit (`trove --version`)                               -> <COMMIT>
#       the sha256 of each bundle's manifest.json (and its 16/8-digit prefixes: serve's bundle
#       "version", cache keys) -> <MANIFEST-SHA:corpus/variant>; of each packed .trove file ->
#       <PACK-SHA:name>. Both hash the manifest, which holds the build hash, so they differ
#       between two builds by construction.
#  2. the regular expressions of RULES (timings, rates, memory, ports, pids, wall-clock times).
#  Manifests: only `tool.build` and `tool.version` (rule 1 + MANIFEST_RULES); created_at is fixed
#  by SOURCE_DATE_EPOCH and is *not* normalized.
# --------------------------------------------------------------------------------------------
RULES = [
    # Each rule matches one of trove's own message shapes only (anchored where it can be), so text
    # of the indexed corpora that merely looks alike (a "retry in 5s" comment) is never touched.
    ("index progress lines (one every few seconds on a non-terminal: how many depends on speed)",
     r"(?m)^trove: \d+/\d+ files, [\d.]+/[\d.]+ MB, [\d.]+ MB/s.*\n", ""),
    ("index text summary: wall time, throughput, peak RSS",
     r"(?m)^(indexed \d+ files \([^)]*\) into \d+ chunks) in [\d.]+s \([\d.]+ MB/s\), peak memory .*$",
     r"\1 in <SECS>s (<RATE> MB/s), peak memory <RSS>"),
    ("index text summary: embedding busy time and rates",
     r"(?m)^(embedding: .*?), [\d.]+s busy \(\d+ texts/s, \d+ tokens/s\)",
     r"\1, <SECS>s busy (<N> texts/s, <N> tokens/s)"),
    ("merge text summary: wall time", r"(?m)^(merged \d+ bundles into .*) in [\d.]+s \(", r"\1 in <SECS>s ("),
    ("compact text summary: wall time", r"(?m)^(compacted \d+ segments of .*) in [\d.]+s \(", r"\1 in <SECS>s ("),
    ("sync text summary: wall time", r"(?m)^(synced .*), in [\d.]+s$", r"\1, in <SECS>s"),
    ("JSON summaries: wall and busy seconds", r'"(wall_secs|busy_secs)": -?[0-9.]+(?:e-?\d+)?', r'"\1": "<SECS>"'),
    ("JSON summaries: peak RSS", r'"peak_rss_bytes": \d+', '"peak_rss_bytes": "<RSS>"'),
    ("trove mcp call log: time of the call",
     r"(?m)^(trove mcp: \S+ (?:ok|failed)) in [\d.]+ ms$", r"\1 in <MS> ms"),
    ("trove serve: load time", r"(?m)^(trove serve: .* ready) in [\d.]+ s ", r"\1 in <SECS> s "),
    ("trove serve access log: wall-clock time, peer port, duration",
     r"(?m)^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ 127\.0\.0\.1:\d+ (\S+ \S+ \d+ \S+) [\d.]+ms$",
     r"<TIME> 127.0.0.1:<PEER> \1 <MS>ms"),
    ("trove serve JSON: loaded_at (wall clock) and uptime",
     r'"(loaded_at|at)": "\d{4}-\d\d-\d\dT[^"]*"', r'"\1": "<TIME>"'),
    ("trove serve JSON: uptime", r'"uptime_s": \d+', '"uptime_s": "<SECS>"'),
    ("trove serve /metrics: per-request duration histograms",
     r"(?m)^(trove_http_request_duration_seconds_(?:bucket|sum)\{.*\}) [0-9.e+-]+$", r"\1 <N>"),
    ("trove serve access log: body size of /metrics and /health (they hold times)",
     r"(?m)^(<TIME> 127\.0\.0\.1:<PEER> GET /(?:metrics|health)\S* \d+) \d+ ", r"\1 <BYTES> "),
    # A packed file's compressed size: the manifest inside holds the build hash, so the zstd stream
    # (and its size, by some bytes) differs between two builds of the same behaviour. The tar inside
    # is compared entry by entry (bundles/*/*.trove.entries) instead.
    ("pack summary: compressed size", r"(?m)^(packed \d+ files \([^)]*\) into .*) \([\d.]+ [kMGT]?B\), sha256 ",
     r"\1 (<PACKED-SIZE>), sha256 "),
    ("lock holders' pids", r"\(pid \d+\)", "(pid <PID>)"),
    ("serve snapshot folders named by pid", r"\.serve-\d+-", ".serve-<PID>-"),
]
MANIFEST_RULES = [
    ("manifest tool.version", r'("tool":\s*\{[^{}]*?"version":\s*)"[^"]*"', r'\1"<VERSION>"'),
]


def log(*a):
    print("[snapshot]", *a, file=sys.stderr, flush=True)


def loud(msg):
    bar = "!" * 78
    print(f"\n{bar}\n!!! {msg}\n{bar}\n", file=sys.stderr, flush=True)


def sha256_file(p):
    h = hashlib.sha256()
    with open(p, "rb") as f:
        for b in iter(lambda: f.read(1 << 20), b""):
            h.update(b)
    return h.hexdigest()


class Snapshot:
    def __init__(self, trove, out):
        self.t0 = time.monotonic()
        self.out = Path(out).resolve()
        if self.out.exists() and any(self.out.iterdir()):
            sys.exit(f"{self.out} exists and is not empty")
        self.out.mkdir(parents=True, exist_ok=True)
        parent = os.environ.get("TROVE_SNAPSHOT_WORK") or None
        if parent:
            Path(parent).mkdir(parents=True, exist_ok=True)
        self.work = Path(tempfile.mkdtemp(prefix="trove-snap-", dir=parent)).resolve()
        # Invoked through a link named `trove`: clap prints argv[0]'s file name in usage lines.
        (self.work / "bin").mkdir()
        self.trove = self.work / "bin" / "trove"
        os.symlink(Path(trove).resolve(), self.trove)
        self.home = self.work / "home"
        (self.home / ".config").mkdir(parents=True)
        self.cache = self.work / "cache"
        self.cache.mkdir()
        (self.work / "small-chunks.toml").write_text(CONFIG)  # a pipeline config of other values
        self.env = {
            "PATH": f"{self.work / 'bin'}:/usr/local/bin:/usr/bin:/bin",
            "HOME": str(self.home),
            "XDG_CONFIG_HOME": str(self.home / ".config"),
            "XDG_CACHE_HOME": str(self.home / ".cache"),
            "TROVE_CACHE_DIR": str(self.cache),
            "SOURCE_DATE_EPOCH": EPOCH,
            "LANG": "C.UTF-8",
            "LC_ALL": "C.UTF-8",
            "TZ": "UTC",
            "RUST_BACKTRACE": "0",
            "GIT_CONFIG_NOSYSTEM": "1",
            "TERM": "dumb",
        }
        self.raw = self.out / "_raw"
        self.meta = self.out / "_meta"
        for d in (self.out / "cmd", self.out / "bundles", self.raw / "cmd", self.meta):
            d.mkdir(parents=True, exist_ok=True)
        self.records = []  # (id, argv, stdout bytes, stderr bytes, rc) normalized at the end
        self.exact = {}  # exact string -> placeholder
        self.ports = []  # ports this run listened on (serve, the HTTP server of sync)
        self.bundle_manifests = []  # (corpus/variant, path) for manifest-sha placeholders
        self.timings = []
        self.ids = set()
        self.bundles_done = []  # (corpus, variant, dir)
        self.packs = []  # (label, path)

    # ---------------------------------------------------------------- running commands
    def run(self, cid, args, *, stdin=None, cwd=None, timeout=DEFAULT_TIMEOUT, env=None):
        """Runs trove ARGS (a list; the binary is prepended) and records it under id CID."""
        return self.run_argv(cid, [str(self.trove), *map(str, args)], stdin=stdin, cwd=cwd,
                             timeout=timeout, env=env)

    def run_argv(self, cid, argv, *, stdin=None, cwd=None, timeout=DEFAULT_TIMEOUT, env=None):
        assert cid not in self.ids, f"duplicate id {cid}"
        assert re.fullmatch(r"[A-Za-z0-9_.+-]+", cid), cid
        self.ids.add(cid)
        e = dict(self.env)
        if env:
            e.update(env)
        t = time.monotonic()
        try:
            p = subprocess.run(argv, input=stdin.encode() if isinstance(stdin, str) else stdin,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               stdin=None if stdin is not None else subprocess.DEVNULL,
                               cwd=cwd or self.work, env=e, timeout=timeout)
            out, err, rc = p.stdout, p.stderr, str(p.returncode)
        except subprocess.TimeoutExpired as x:
            out, err, rc = x.stdout or b"", x.stderr or b"", f"timeout after {timeout}s"
            loud(f"{cid}: timed out after {timeout}s")
        self.timings.append((cid, time.monotonic() - t))
        self.record(cid, argv, out, err, rc)
        return rc, out.decode("utf-8", "replace"), err.decode("utf-8", "replace")

    def record(self, cid, argv, out, err, rc):
        if isinstance(out, str):
            out = out.encode()
        if isinstance(err, str):
            err = err.encode()
        shown = [("trove" if a == str(self.trove) else a) for a in argv]
        self.records.append((cid, " ".join(shlex_quote(a) for a in shown), out, err, rc))
        for ext, data in (("argv", " ".join(shown).encode()), ("out", out), ("err", err), ("rc", rc.encode())):
            (self.raw / "cmd" / f"{cid}.{ext}").write_bytes(data)

    def phase(self, name):
        self.timings.append((f"== phase {name}", time.monotonic() - self.t0))
        log(f"{name} (t={time.monotonic() - self.t0:.0f}s)")

    # ---------------------------------------------------------------- git corpora
    def git(self, repo, *args, date=0):
        e = dict(self.env)
        e.update({
            "GIT_AUTHOR_NAME": "snapshot", "GIT_AUTHOR_EMAIL": "snapshot@example.com",
            "GIT_COMMITTER_NAME": "snapshot", "GIT_COMMITTER_EMAIL": "snapshot@example.com",
            "GIT_AUTHOR_DATE": GIT_DATES[date], "GIT_COMMITTER_DATE": GIT_DATES[date],
        })
        p = subprocess.run(["git", "-c", "core.autocrlf=false", "-c", "init.defaultBranch=main",
                            "-c", "commit.gpgsign=false", "-c", "advice.detachedHead=false",
                            "-C", str(repo), *args], env=e, capture_output=True, text=True)
        if p.returncode != 0:
            raise RuntimeError(f"git {' '.join(args)} in {repo} failed: {p.stderr}")
        return p.stdout.strip()

    def two_commit_repo(self, src, dest, changes):
        """Copies SRC into DEST (no .git), commits it, applies CHANGES, commits again."""
        # fixtures/compat holds bundles, no source: snapshots of any commit index the same tree.
        shutil.copytree(src, dest, symlinks=True, ignore=shutil.ignore_patterns(".git", "compat"))
        self.git(dest, "init", "-q")
        self.git(dest, "add", "-A", "-f")
        self.git(dest, "commit", "-q", "-m", "base", date=0)
        for ch in changes:
            kind, path = ch[0], dest / ch[1]
            if kind != "add" and not path.exists():
                raise RuntimeError(f"corpus change {ch[:2]}: {path} is missing (corpus changed?)")
            if kind == "edit":
                with open(path, "a", encoding="utf-8") as f:
                    f.write(ch[2])
            elif kind == "add":
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(ch[2], encoding="utf-8")
            elif kind == "delete":
                path.unlink()
            elif kind in ("rename", "rename_edit"):
                to = dest / ch[2]
                to.parent.mkdir(parents=True, exist_ok=True)
                path.rename(to)
                if kind == "rename_edit":
                    with open(to, "a", encoding="utf-8") as f:
                        f.write(ch[3])
        self.git(dest, "add", "-A", "-f")
        self.git(dest, "commit", "-q", "-m", "change", date=1)
        return "main"

    # ---------------------------------------------------------------- bundles
    def bundle_listing(self, corpus, variant, d):
        d = Path(d)
        lines = []
        for p in sorted(x for x in d.rglob("*") if x.is_file() or x.is_symlink()):
            rel = p.relative_to(d).as_posix()
            if p.is_symlink():
                lines.append(f"symlink -> {os.readlink(p)}  {rel}")
            elif rel == "manifest.json":
                self.bundle_manifests.append((f"{corpus}/{variant}", p))
                lines.append(f"manifest  {rel}")  # filled at normalization time
            else:
                lines.append(f"{sha256_file(p)}  {p.stat().st_size:>12}  {rel}")
        self.bundles_done.append((corpus, variant, d, lines))

    def tables(self, d):
        """{relative path: sha256} of a bundle's files but the manifest."""
        d = Path(d)
        return {p.relative_to(d).as_posix(): sha256_file(p) for p in d.rglob("*")
                if p.is_file() and p.name != "manifest.json"}

    def pack_entries(self, label, trove_file):
        self.packs.append((label, Path(trove_file)))

    def copy_bundle(self, src, dest):
        shutil.copytree(src, dest, symlinks=True)

    # ---------------------------------------------------------------- the corpora
    def index(self, cid, repo, out, *extra, json_out=True, timeout=INDEX_TIMEOUT, expect_ok=True):
        args = ["index", repo, "-o", out, *extra] + (["--json"] if json_out else [])
        rc, so, se = self.run(cid, args, timeout=timeout)
        if expect_ok and rc != "0":
            loud(f"{cid}: trove index failed (rc {rc}):\n{se[-3000:]}")
            raise SystemExit(3)
        return rc, so, se

    def check_incremental(self, cid, so, out):
        """--since must really run incrementally: files reused, no full-build note, and the
        manifest's base says the git diff named the files (not a content-hash fallback)."""
        try:
            s = json.loads(so)
        except ValueError:
            loud(f"{cid}: no JSON summary to check the incremental run against")
            raise SystemExit(3)
        note = s.get("incremental") or ""
        if s.get("files_reused", 0) <= 0 or note.lower().startswith("full"):
            loud(f"{cid}: --since did NOT run incrementally (files_reused={s.get('files_reused')}, "
                 f"incremental={note!r}); the snapshot would not test incremental runs")
            raise SystemExit(3)
        base = json.loads((Path(out) / "manifest.json").read_text()).get("base") or {}
        if base.get("mode") != "git-diff":
            loud(f"{cid}: --since ran in mode {base.get('mode')!r}, not 'git-diff' (base: {base})")
            raise SystemExit(3)
        return note

    def corpus(self, name, repo, branch, cheap):
        """Every bundle variant of one corpus. Returns {variant: dir}."""
        b = self.work / "bundles" / name
        b.mkdir(parents=True)
        v = {}
        cid = lambda s: f"{name}.index.{s}"  # noqa: E731
        # 1. full at HEAD~1 (detached), the base of --since
        self.git(repo, "checkout", "-q", "--detach", "HEAD~1")
        self.index(cid("full-prev"), repo, b / "full-prev")
        v["full-prev"] = b / "full-prev"
        self.git(repo, "checkout", "-q", branch)
        # 2. --since HEAD~1 (no compaction), on a copy of the base
        self.copy_bundle(b / "full-prev", b / "since")
        _, so, _ = self.index(cid("since"), repo, b / "since", "--since", "HEAD~1", "--no-compact")
        self.check_incremental(cid("since"), so, b / "since")
        v["since"] = b / "since"
        # 3. full at HEAD
        self.index(cid("full"), repo, b / "full")
        v["full"] = b / "full"
        # 4. shards and their merge
        self.index(cid("shard1"), repo, b / "shard1", "--shard", "1/2")
        self.index(cid("shard2"), repo, b / "shard2", "--shard", "2/2")
        v["shard1"], v["shard2"] = b / "shard1", b / "shard2"
        self.run(f"{name}.merge", ["merge", b / "merged", b / "shard1", b / "shard2", "--json"],
                 timeout=INDEX_TIMEOUT)
        v["merged"] = b / "merged"
        # 5. compactions: of the since bundle and of the merged one
        self.copy_bundle(b / "since", b / "since-compacted")
        self.run(f"{name}.compact.since", ["compact", b / "since-compacted", "--json"], timeout=INDEX_TIMEOUT)
        v["since-compacted"] = b / "since-compacted"
        self.copy_bundle(b / "merged", b / "merged-compacted")
        self.run(f"{name}.compact.merged", ["compact", b / "merged-compacted", "--json"], timeout=INDEX_TIMEOUT)
        v["merged-compacted"] = b / "merged-compacted"
        if cheap:
            # text-mode summaries, the other compaction policies, --since auto, other index flags
            self.git(repo, "checkout", "-q", "--detach", "HEAD~1")
            self.index(cid("full-prev-text"), repo, b / "full-prev-text", json_out=False)
            self.git(repo, "checkout", "-q", branch)
            self.copy_bundle(b / "full-prev", b / "since-text")
            self.index(cid("since-text"), repo, b / "since-text", "--since", "HEAD~1", "--no-compact",
                       json_out=False)
            self.copy_bundle(b / "full-prev", b / "since-auto")
            _, so, _ = self.index(cid("since-auto"), repo, b / "since-auto", "--since", "auto")
            self.check_incremental(cid("since-auto"), so, b / "since-auto")
            self.copy_bundle(b / "full-prev", b / "since-compactflag")
            self.index(cid("since-compactflag"), repo, b / "since-compactflag", "--since", "HEAD~1",
                       "--compact")
            self.copy_bundle(b / "full-prev", b / "reuse-by-content")
            self.index(cid("reuse-by-content"), repo, b / "reuse-by-content", "--no-compact")
            self.index(cid("full-text"), repo, b / "full-text", json_out=False)
            self.run(f"{name}.merge-text", ["merge", b / "merged-text", b / "shard1", b / "shard2"])
            self.copy_bundle(b / "since", b / "since-compacted-text")
            self.run(f"{name}.compact.since-text", ["compact", b / "since-compacted-text"])
            self.run(f"{name}.compact.already-one", ["compact", b / "full-text"])
            self.run(f"{name}.compact.already-one-json", ["compact", b / "full-text", "--json"])
            self.index(cid("chunker-lines"), repo, b / "chunker-lines", "--chunker", "lines")
            self.index(cid("include-exclude"), repo, b / "include-exclude",
                       "--include", INCLUDE[name], "--exclude", EXCLUDE[name])
            self.index(cid("max-file-bytes"), repo, b / "max-file-bytes", "--max-file-bytes", "1500")
            self.index(cid("no-ignore-no-redact"), repo, b / "no-ignore-no-redact", "--no-ignore",
                       "--no-redact")
            self.index(cid("threads1"), repo, b / "threads1", "--threads", "1")
            cfg = self.work / "small-chunks.toml"
            self.index(cid("config"), repo, b / "config", "--config", cfg)
            self.index(cid("quiet"), repo, b / "quiet", "--quiet", json_out=False)
            for k in ("full-prev-text", "since-text", "since-auto", "since-compactflag", "reuse-by-content",
                      "full-text", "merged-text", "since-compacted-text", "chunker-lines",
                      "include-exclude", "max-file-bytes", "no-ignore-no-redact", "threads1", "quiet", "config"):
                v[k] = b / k
        for k, d in v.items():
            self.bundle_listing(name, k, d)
        # Recorded equalities (not asserted).
        full = self.tables(v["full"])
        eq = []
        pairs = [("since-compacted", "full"), ("merged-compacted", "full"), ("merged", "full"),
                 ("since", "full")]
        if cheap:
            pairs += [("full-text", "full"), ("since-text", "since"), ("full-prev-text", "full-prev"),
                      ("since-auto", "full"), ("since-compactflag", "full"), ("reuse-by-content", "full"),
                      ("since-compacted-text", "since-compacted"), ("merged-text", "merged"),
                      ("threads1", "full"), ("quiet", "full")]
        for a, c in pairs:
            ta, tc = self.tables(v[a]), (full if c == "full" else self.tables(v[c]))
            if ta == tc:
                eq.append(f"{a} vs {c}: tables identical ({len(ta)} files)")
            else:
                segs = lambda t: sorted({k.split("/")[1] for k in t if k.startswith("segments/")})  # noqa: E731
                diff = sorted(k for k in set(ta) & set(tc) if ta[k] != tc[k])
                eq.append(f"{a} vs {c}: tables DIFFER: segments {segs(ta)} vs {segs(tc)}; "
                          f"{len(set(ta) ^ set(tc))} files in one only; common files that differ: {diff}")
        (self.out / "bundles" / name).mkdir(parents=True, exist_ok=True)
        (self.out / "bundles" / name / "equalities.txt").write_text("\n".join(eq) + "\n")
        return v

    # ---------------------------------------------------------------- normalization
    def finish_identity(self, version_out):
        m = re.search(r"commit ([0-9a-f]{7,40}|unknown)", version_out)
        commit = m.group(1) if m else None
        build = version = None
        for _, p in self.bundle_manifests:
            t = json.loads(p.read_text())
            build, version = t["tool"].get("build"), t["tool"]["version"]
            break
        ident = {"version_line": version_out.strip(), "commit": commit, "build": build, "version": version,
                 "binary_sha256": sha256_file(self.trove.resolve()), "binary": str(self.trove.resolve())}
        (self.meta / "identity.json").write_text(json.dumps(ident, indent=2) + "\n")
        if commit and commit != "unknown":
            self.exact[commit] = "<COMMIT>"
        if build:
            self.exact[build] = "<BUILD>"
        # manifests' and packs' sha256 (they hash the build hash in)
        for label, p in self.bundle_manifests:
            if p.exists():
                h = sha256_file(p)
                for n in (64, 16):
                    self.exact.setdefault(h[:n], f"<MANIFEST-SHA:{label}>" if n == 64 else f"<MANIFEST-SHA{n}:{label}>")
        for label, p in self.packs:
            h = sha256_file(p)
            for n in (64, 16):
                self.exact.setdefault(h[:n], f"<PACK-SHA:{label}>" if n == 64 else f"<PACK-SHA{n}:{label}>")
        self.exact[str(self.work)] = "<WORK>"
        self.exact[str(self.out)] = "<OUT>"

    def norm(self, text):
        # longest first: a path holds its parent's path
        for s in sorted(self.exact, key=len, reverse=True):
            if len(s) >= 8 or s.startswith("/"):
                text = text.replace(s, self.exact[s])
        for port in self.ports:
            text = re.sub(rf"\b(127\.0\.0\.1|localhost):{port}\b", r"\1:<PORT>", text)
        for _, rx, rep in RULES:
            text = re.sub(rx, rep, text)
        return text

    def norm_manifest(self, text):
        for s in sorted(self.exact, key=len, reverse=True):
            text = text.replace(s, self.exact[s])
        for _, rx, rep in MANIFEST_RULES:
            text = re.sub(rx, rep, text)
        return text

    def write_all(self):
        cmd = self.out / "cmd"
        for cid, argv, out, err, rc in self.records:
            (cmd / f"{cid}.argv").write_text(self.norm(argv) + "\n")
            (cmd / f"{cid}.out").write_text(self.norm(out.decode("utf-8", "replace")))
            (cmd / f"{cid}.err").write_text(self.norm(err.decode("utf-8", "replace")))
            (cmd / f"{cid}.rc").write_text(rc + "\n")
        mshas = {}
        for label, p in self.bundle_manifests:
            if not p.exists():
                continue
            t = self.norm_manifest(p.read_text())
            mshas[label] = hashlib.sha256(t.encode()).hexdigest()
            corpus, variant = label.split("/", 1)
            (self.out / "bundles" / corpus / f"{variant}.manifest.json").write_text(t)
        for corpus, variant, d, lines in self.bundles_done:
            lab = f"{corpus}/{variant}"
            lines = [(f"{mshas.get(lab, '?')} (normalized)  manifest.json" if ln == "manifest  manifest.json"
                      else ln) for ln in lines]
            (self.out / "bundles" / corpus).mkdir(parents=True, exist_ok=True)
            (self.out / "bundles" / corpus / f"{variant}.files").write_text("\n".join(lines) + "\n")
        for label, p in self.packs:
            corpus, name = label.split("/", 1)
            raw = subprocess.run(["zstd", "-dc", str(p)], capture_output=True, check=True).stdout
            info = subprocess.run(["zstd", "-lv", str(p)], capture_output=True, text=True).stdout
            frame = [ln.strip() for ln in info.splitlines()
                     if ln.startswith(("# Zstandard Frames", "DictID", "Window Size"))]
            frame += [ln.split(" ")[0] + " " + ln.split(" ")[1] for ln in info.splitlines() if ln.startswith("Check:")]
            lines = [f"zstd frame: {'; '.join(frame)}  (compressed size and checksum: see _meta)",
                     f"decompressed tar: {len(raw)} bytes"]
            with open(self.meta / "packs.txt", "a") as f:
                f.write(f"{label}: {p.stat().st_size} bytes, sha256 {sha256_file(p)}\n{info}\n")
            with tarfile.open(fileobj=io.BytesIO(raw), mode="r:") as tf:
                for m in tf.getmembers():
                    data = tf.extractfile(m).read() if m.isfile() else b""
                    if m.name.endswith("manifest.json"):
                        h = hashlib.sha256(self.norm_manifest(data.decode()).encode()).hexdigest() + " (normalized)"
                    else:
                        h = hashlib.sha256(data).hexdigest()
                    lines.append(f"{m.type!r} {m.mode:o} {m.uid}:{m.gid} {m.uname}:{m.gname} mtime={m.mtime} "
                                 f"size={m.size} {h}  {m.name}")
            (self.out / "bundles" / corpus / f"{name}.entries").write_text("\n".join(lines) + "\n")
        rules = ["Exact strings replaced first (see the header of scripts/behaviour_snapshot.py),",
                 "then 127.0.0.1:<port this run listened on> -> 127.0.0.1:<PORT>:"]
        rules += [f"  {v}" for v in sorted(set(self.exact.values()), key=str) if not v.startswith("<MANIFEST") and not v.startswith("<PACK")]
        rules += ["  <MANIFEST-SHA*:corpus/variant>, <PACK-SHA*:name> (sha256 of manifests / packed files, and prefixes)",
                  "Then these regular expressions (python re.sub), in order:"]
        rules += [f"  {d}: {rx!r} -> {rep!r}" for d, rx, rep in RULES]
        rules += ["Manifests: exact strings above, and:"] + [f"  {d}: {rx!r} -> {rep!r}" for d, rx, rep in MANIFEST_RULES]
        (self.out / "normalization.txt").write_text("\n".join(rules) + "\n")
        (self.meta / "exact-replacements.json").write_text(json.dumps(self.exact, indent=1, sort_keys=True) + "\n")
        total = time.monotonic() - self.t0
        lines = [f"{t:9.2f}s  {c}" for c, t in self.timings]
        lines.append(f"total {total:.1f}s")
        (self.meta / "timings.txt").write_text("\n".join(lines) + "\n")
        log(f"done: {len(self.records)} invocations, {len(self.bundles_done)} bundles, {total:.0f}s")


def shlex_quote(s):
    import shlex
    return shlex.quote(s)


# ------------------------------------------------------------------------------------------------
# Corpus edits of the second commit, applied to the copies (never to the sources).
FIXTURES_CHANGES = [
    ("edit", "sample-repo/billing/billing.py",
     '\n\ndef refund_invoice(service, invoice):\n    """Refund a paid invoice through the same gateway."""\n'
     '    PaymentService.validate(invoice)\n    return service.gateway.refund(invoice.customer, invoice.total())\n'),
    ("add", "sample-repo/billing/refunds.py",
     '"""Refund policies."""\n\nfrom billing.billing import Invoice, format_amount\n\n\n'
     'class RefundPolicy:\n    """Decides how much of an invoice is refunded."""\n\n'
     '    def __init__(self, ratio):\n        self.ratio = ratio\n\n'
     '    def amount(self, invoice: Invoice):\n        """The refunded amount, formatted."""\n'
     '        return format_amount(invoice.total() * self.ratio)\n\n\n'
     'DB_PASSWORD = "s3cr3t-Refund-Pa55word-9f8e7d"\n'),
    ("add", "sample-repo/.env", "STRIPE_KEY=sk_live_51HxYzAbCdEfGhIjKlMnOpQrStUvWx\n"),
    ("delete", "languages/lua/config.lua"),
    ("rename", "languages/go/names.go", "languages/go/naming.go"),
    ("rename_edit", "sample-repo/web/src/users.ts", "sample-repo/web/src/accounts.ts",
     "\nexport function accountLabel(u: User): string {\n  return `${u.name} <${normalizeEmail(u.email)}>`;\n}\n"),
    ("edit", "sample-repo/docs/guide.md", "\n## Refunds\n\nCall `refund_invoice(service, invoice)` to refund.\n"),
]
DEV_CHANGES = [
    ("edit", "flask/src/flask/sessions.py",
     '\n\ndef session_cookie_names(app):\n    """Every cookie name the app\'s session interface may write."""\n'
     '    iface = app.session_interface\n    return [iface.get_cookie_name(app)]\n'),
    ("edit", "globset/src/lib.rs", "\n/// Whether a glob is a literal path.\npub fn is_literal_glob(s: &str) -> bool {\n"
     "    !s.contains(['*', '?', '[', '{'])\n}\n"),
    ("add", "commander/lib/extra.js",
     "'use strict';\n\n/** Formats an option's flags for the help text. */\nfunction formatFlags(option) {\n"
     "  return [option.short, option.long].filter(Boolean).join(', ');\n}\n\nexports.formatFlags = formatFlags;\n"),
    ("add", "cobra/extra_cmd.go",
     "package cobra\n\n// VisibleCommands returns the subcommands that are not hidden.\n"
     "func (c *Command) VisibleCommands() []*Command {\n\tvar out []*Command\n\tfor _, s := range c.Commands() {\n"
     "\t\tif !s.Hidden {\n\t\t\tout = append(out, s)\n\t\t}\n\t}\n\treturn out\n}\n"),
    ("delete", "flask/docs/signals.rst"),
    ("delete", "cobra/args_test.go"),
    ("rename", "globset/src/fnv.rs", "globset/src/fnv_hash.rs"),
    ("rename_edit", "commander/lib/suggestSimilar.js", "commander/lib/suggest.js",
     "\n// renamed from suggestSimilar.js\n"),
]
CONFIG = "[chunk]\nmax_chars = 400\nmin_block_chars = 40\n\n[bm25]\nk1 = 1.5\nb = 0.6\n\n[embed]\ndim = 64\n"
INCLUDE = {"fixtures": "sample-repo", "dev": "flask/src/**", "bench": "rust"}
EXCLUDE = {"fixtures": "sample-repo/tests", "dev": "flask/src/flask/json", "bench": "rust/ring"}

DEV_QUERIES = [
    "How does the cookie-based session get written back to the browser?",
    "where is the secret key checked for sessions",
    "match a path against a set of globs",
    "GlobSetBuilder build",
    "parse command line options and subcommands",
    "suggest similar command names on a typo",
    "cobra bash completion script generation",
    "register an error handler for a blueprint",
    "json provider dumps",
    "escape a glob literal",
]
FX_QUERIES = [
    "how is an invoice charged",
    "refund an invoice",
    "process_payment",
    "normalize email address",
    "matrix multiplication",
    "deploy script",
]


# ------------------------------------------------------------------------------------------------
def commands(s, fx, dev, bench):
    """The fixed list of invocations. fx/dev/bench: {variant: dir} or None."""
    W = s.work
    s.phase("help")
    subs = ["index", "inspect", "verify", "languages", "chunks", "query", "sql", "merge", "compact",
            "sync", "pack", "unpack", "map", "show", "mcp", "serve", "ask", "symbols", "refs", "deps", "help"]
    for sub in subs:
        s.run(f"help.{sub}", [sub, "--help"])
    s.run("help.query-short", ["query", "-h"])
    s.run("help.help-query", ["help", "query"])
    s.run("version", ["--version"])

    s.phase("languages/chunks")
    s.run("languages.text", ["languages"])
    s.run("languages.json", ["languages", "--format", "json"])
    fixtures_src = Path(os.environ.get("TROVE_SNAPSHOT_FIXTURES", REPO / "fixtures"))
    if fixtures_src.is_dir():
        files = sorted(p for p in (fixtures_src / "languages").rglob("*") if p.is_file())
        for p in files:
            rel = p.relative_to(fixtures_src).as_posix()
            slug = re.sub(r"[^A-Za-z0-9]+", "-", rel).strip("-")
            s.run(f"chunks.json.{slug}", ["chunks", rel, "--format", "json"], cwd=fixtures_src)
        for rel in ("languages/rust/shapes.rs", "languages/python/billing.py", "languages/markdown/guide.md",
                    "sample-repo/web/src/users.ts"):
            slug = re.sub(r"[^A-Za-z0-9]+", "-", rel).strip("-")
            s.run(f"chunks.text.{slug}", ["chunks", rel], cwd=fixtures_src)
            s.run(f"chunks.explain.{slug}", ["chunks", rel, "--explain"], cwd=fixtures_src)
        s.run("chunks.config", ["chunks", "languages/python/billing.py", "--config", s.work / "small-chunks.toml"],
              cwd=fixtures_src)
        s.run("chunks.lang-override", ["chunks", "languages/text/NOTES.txt", "--lang", "markdown"], cwd=fixtures_src)
        s.run("chunks.json-explain", ["chunks", "languages/go/server.go", "--format", "json", "--explain"],
              cwd=fixtures_src)

    if fx:
        F, FS, FM = fx["full"], fx["since"], fx["merged"]
        s.phase("fixtures: query")
        for i, q in enumerate(FX_QUERIES):
            s.run(f"fx.query.hybrid.{i}", ["query", F, q])
            s.run(f"fx.query.bm25-json.{i}", ["query", F, q, "--mode", "bm25", "--format", "json"])
            s.run(f"fx.query.vector-jsonl.{i}", ["query", F, q, "--mode", "vector", "--format", "jsonl"])
            s.run(f"fx.query.since-jsonl.{i}", ["query", FS, q, "--format", "jsonl"])
            s.run(f"fx.query.merged-jsonl.{i}", ["query", FM, q, "--format", "jsonl"])
        s.run("fx.query.filters", ["query", F, "invoice payment", "--lang", "python", "--kind", "function",
                                   "--kind", "method", "-k", "3", "--format", "json"])
        s.run("fx.query.type-doc", ["query", F, "payments guide installation", "--type", "doc"])
        s.run("fx.query.type-test-config", ["query", F, "billing", "--type", "test", "--type", "config",
                                            "--format", "jsonl"])
        s.run("fx.query.path-content", ["query", F, "invoice", "--path", "sample-repo/**", "--content"])
        s.run("fx.query.path-folder", ["query", F, "server handler", "--path", "languages/go", "--format", "json"])
        s.run("fx.query.path-brace", ["query", F, "class", "--path", "languages/{java,kotlin,scala}/**"])
        s.run("fx.query.rrf", ["query", F, "cache eviction", "--fusion", "rrf", "--format", "json"])
        s.run("fx.query.convex-weight", ["query", F, "cache eviction", "--fusion", "convex", "--vector-weight",
                                         "0.5", "--format", "json"])
        s.run("fx.query.rerank0", ["query", F, "order service", "--rerank", "0", "-k", "4"])
        s.run("fx.query.color", ["query", F, "invoice total tax", "--color", "always", "-k", "3"])
        s.run("fx.query.color-never-content", ["query", F, "invoice total tax", "--color", "never", "--content", "-k", "2"])
        s.run("fx.query.k1000", ["query", F, "the", "-k", "1000", "--format", "jsonl"])
        s.run("fx.query.nohits", ["query", F, "zzqqxxnonexistentword"])
        s.run("fx.query.unicode", ["query", F, "größe café ünïcödé"])
        s.run("fx.query.camel", ["query", F, "processPayment UserService", "--mode", "bm25"])
        s.run("fx.query.prefix", ["query", F, "configuration parameters", "--mode", "bm25", "--format", "json"])
        s.run("fx.query.secret", ["query", FS, "DB_PASSWORD refund", "--content", "--format", "json"])

        s.phase("fixtures: sql")
        sqls = {
            "count": "SELECT count(*) AS n FROM chunks",
            "files": "SELECT path, language, source_type FROM files ORDER BY path",
            "kinds": "SELECT kind, count(*) AS n FROM chunks GROUP BY kind ORDER BY kind",
            "bm25": "SELECT * FROM bm25_search('invoice tax', 5)",
            "definitions": "SELECT * FROM definitions('process_payment')",
            "callers": "SELECT * FROM callers('validate')",
            "callees": "SELECT * FROM callees('process_payment')",
            "symbols": "SELECT path, name, kind, start_line, end_line FROM symbols ORDER BY path, start_line, name",
            "refs": "SELECT path, line, kind, target FROM refs ORDER BY path, line, target, kind",
            "deps": "SELECT * FROM deps ORDER BY ALL",
            "skipped": "SELECT * FROM skipped ORDER BY ALL",
            "chunks-sample": "SELECT chunk_id, path, symbol_path, start_line, end_line, kind FROM chunks ORDER BY path, start_line, chunk_id LIMIT 40",
            "terms": "SELECT count(*) AS terms FROM terms",
            "summaries": "SELECT path, summary FROM files ORDER BY path",
        }
        for k, q in sqls.items():
            s.run(f"fx.sql.{k}", ["sql", F, q])
            s.run(f"fx.sql.since.{k}", ["sql", FS, q, "--format", "csv"])
        s.run("fx.sql.json", ["sql", F, sqls["files"], "--format", "json"])
        s.run("fx.sql.csv", ["sql", F, sqls["kinds"], "--format", "csv"])
        s.run("fx.sql.stdin", ["sql", F], stdin="SELECT count(*) AS files FROM files;\n")
        s.run("fx.sql.tables", ["sql", F, "SELECT table_name FROM information_schema.tables ORDER BY table_name"])
        s.run("fx.sql.merged-count", ["sql", FM, "SELECT count(*) AS n FROM chunks"])

        s.phase("fixtures: structure")
        for tag, B in (("full", F), ("since", FS), ("merged", FM)):
            s.run(f"fx.map.{tag}", ["map", B])
            s.run(f"fx.map.{tag}.json", ["map", B, "--format", "json"])
        s.run("fx.map.jsonl", ["map", F, "--format", "jsonl"])
        s.run("fx.map.path", ["map", F, "sample-repo"])
        s.run("fx.map.depth", ["map", F, "--depth", "2"])
        s.run("fx.map.entries-lines", ["map", F, "--entries", "3", "--lines", "20"])
        s.run("fx.map.depth1-path", ["map", F, "languages", "--depth", "1", "--format", "json"])
        for tag, B in (("full", F), ("since", FS)):
            s.run(f"fx.symbols.{tag}", ["symbols", B, "process_payment"])
            s.run(f"fx.symbols.{tag}.json", ["symbols", B, "Invoice", "--format", "json"])
            s.run(f"fx.refs.{tag}", ["refs", B, "validate"])
            s.run(f"fx.refs.{tag}.callers", ["refs", B, "format_amount", "--callers", "--format", "json"])
            s.run(f"fx.deps.{tag}", ["deps", B])
        s.run("fx.symbols.kind", ["symbols", F, "Names", "--kind", "class"])
        s.run("fx.symbols.k", ["symbols", F, "names", "-k", "2", "--format", "jsonl"])
        s.run("fx.symbols.qualified", ["symbols", F, "PaymentService > process_payment"])
        s.run("fx.symbols.unknown", ["symbols", F, "noSuchSymbolAnywhere"])
        s.run("fx.refs.callees", ["refs", F, "process_payment", "--callees"])
        s.run("fx.refs.qualified", ["refs", F, "PaymentService.validate", "--callers"])
        s.run("fx.refs.imports", ["refs", F, "decimal", "--imports", "--format", "jsonl"])
        s.run("fx.refs.subtypes", ["refs", F, "Shape", "--subtypes"])
        s.run("fx.refs.uses", ["refs", F, "User", "--uses", "--format", "json"])
        s.run("fx.refs.k", ["refs", F, "new", "-k", "3"])
        s.run("fx.deps.json", ["deps", F, "--format", "json"])
        s.run("fx.deps.jsonl-npm", ["deps", F, "--ecosystem", "npm", "--format", "jsonl"])
        s.run("fx.deps.scope-module", ["deps", F, "--scope", "module"])
        s.run("fx.deps.scope-dev", ["deps", F, "--scope", "dev", "--format", "json"])
        s.run("fx.deps.name", ["deps", F, "--name", "serde"])

        s.phase("fixtures: show/inspect/verify")
        s.run("fx.show.file", ["show", F, "sample-repo/billing/billing.py"])
        s.run("fx.show.range", ["show", F, "sample-repo/billing/billing.py:10-20"])
        s.run("fx.show.from", ["show", F, "sample-repo/billing/billing.py:40"])
        s.run("fx.show.raw", ["show", F, "sample-repo/billing/refunds.py", "--raw"])
        s.run("fx.show.redacted", ["show", F, "sample-repo/billing/refunds.py"])
        s.run("fx.show.since-renamed", ["show", FS, "sample-repo/web/src/accounts.ts"])
        s.run("fx.show.since-deleted", ["show", FS, "languages/lua/config.lua"])
        s.run("fx.show.didyoumean", ["show", F, "billing.py"])
        s.run("fx.show.skipped-secret", ["show", F, "sample-repo/.env"])
        s.run("fx.show.past-end", ["show", F, "sample-repo/README.md:500-600"])
        for tag in ("full", "full-prev", "since", "merged", "since-compacted", "shard1", "since-compactflag"):
            s.run(f"fx.inspect.{tag}", ["inspect", fx[tag]])
            s.run(f"fx.inspect.{tag}.json", ["inspect", fx[tag], "--format", "json"])
        for tag in ("full", "since", "merged", "merged-compacted"):
            s.run(f"fx.verify.{tag}", ["verify", fx[tag]])
        s.run("fx.verify.quiet", ["verify", F, "-q"])

        s.phase("fixtures: pack/unpack/sync")
        packs = W / "packs"
        packs.mkdir()
        s.run("fx.pack", ["pack", F, "-o", packs / "fx.trove"])
        s.pack_entries("fixtures/fx.trove", packs / "fx.trove")
        s.run("fx.pack.since-json-quiet", ["pack", FS, "-o", packs / "fx-since.trove", "-q"])
        s.pack_entries("fixtures/fx-since.trove", packs / "fx-since.trove")
        s.run("fx.pack.again", ["pack", F, "-o", packs / "fx.trove"])
        s.run("fx.pack.default-output", ["pack", F], cwd=packs)
        for p in sorted(set(packs.glob("*.trove")) | set(Path(F).parent.glob("*.trove"))):
            if p.parent != packs or p.name not in ("fx.trove", "fx-since.trove"):
                s.pack_entries(f"fixtures/default-{p.name}", p)
        T = packs / "fx.trove"
        s.run("fx.trove.query", ["query", T, "how is an invoice charged", "--format", "json"])
        s.run("fx.trove.inspect", ["inspect", T])
        s.run("fx.trove.verify", ["verify", T])
        s.run("fx.trove.map", ["map", T])
        s.run("fx.trove.symbols", ["symbols", T, "Invoice"])
        s.run("fx.trove.refs", ["refs", T, "validate"])
        s.run("fx.trove.deps", ["deps", T])
        s.run("fx.trove.show", ["show", T, "sample-repo/README.md"])
        s.run("fx.trove.sql", ["sql", T, "SELECT count(*) AS n FROM chunks"])
        s.run("fx.unpack", ["unpack", T, "-o", W / "unpacked.bundle"])
        s.bundle_listing("fixtures", "unpacked", W / "unpacked.bundle")
        s.run("fx.unpack.again-quiet", ["unpack", packs / "fx-since.trove", "-o", W / "unpacked.bundle", "-q"])
        s.bundle_listing("fixtures", "unpacked-since", W / "unpacked.bundle")
        dest = W / "sync-dest.bundle"
        s.run("fx.sync.fresh", ["sync", fx["full-prev"], dest, "--json"])
        s.bundle_listing("fixtures", "sync-1", dest)
        s.run("fx.sync.incremental", ["sync", FS, dest])
        s.bundle_listing("fixtures", "sync-2", dest)
        s.run("fx.sync.nothing", ["sync", FS, dest, "--json"])
        s.run("fx.sync.from-trove", ["sync", T, W / "sync-trove.bundle"])
        s.bundle_listing("fixtures", "sync-from-trove", W / "sync-trove.bundle")
        s.run("fx.sync.quiet", ["sync", F, W / "sync-quiet.bundle", "-q"])
        # over HTTP: a plain static file server over the bundles folder
        httpd, port = start_http_server(W / "bundles" / "fixtures")
        s.ports.append(port)
        try:
            s.run("fx.sync.http", ["sync", f"http://127.0.0.1:{port}/since", W / "sync-http.bundle", "--json"])
            s.bundle_listing("fixtures", "sync-http", W / "sync-http.bundle")
            s.run("fx.sync.http-missing", ["sync", f"http://127.0.0.1:{port}/nope", W / "sync-http2.bundle",
                                           "--retries", "0", "--timeout", "5"])
        finally:
            httpd.terminate()
            httpd.wait()

        s.phase("fixtures: ask (scripted chat server)")
        ask_session(s, F)

        s.phase("fixtures: mcp")
        mcp_session(s, "fx.mcp", [F])
        mcp_session(s, "fx.mcp.trove", [T], short=True)
        if dev:
            mcp_session(s, "fxdev.mcp.two", [F, dev["full"]], short=True, two=True)

        s.phase("fixtures: serve")
        serve_session(s, "fx.serve", fx, dev)

        s.phase("error cases")
        errors(s, fx, T)

    if dev:
        D, DS = dev["full"], dev["since"]
        s.phase("dev: commands")
        qs = list(DEV_QUERIES)
        qfile = Path(os.environ.get("TROVE_SNAPSHOT_DEV_QUERIES", REPO.parent / "shared/eval/dev_queries.jsonl"))
        if qfile.is_file():
            qs += [json.loads(l)["query"] for l in qfile.read_text().splitlines() if l.strip()]
        else:
            loud(f"dev queries file {qfile} missing: only the built-in dev queries run")
        for i, q in enumerate(qs):
            s.run(f"dev.query.hybrid-jsonl.{i:02d}", ["query", D, q, "-k", "5", "--format", "jsonl"])
        for i, q in enumerate(DEV_QUERIES):
            s.run(f"dev.query.text.{i:02d}", ["query", D, q, "-k", "5"])
            s.run(f"dev.query.bm25-json.{i:02d}", ["query", D, q, "--mode", "bm25", "--format", "json", "-k", "8"])
            s.run(f"dev.query.vector.{i:02d}", ["query", D, q, "--mode", "vector", "-k", "5"])
            s.run(f"dev.query.since.{i:02d}", ["query", DS, q, "-k", "5", "--format", "jsonl"])
            s.run(f"dev.query.merged.{i:02d}", ["query", dev["merged"], q, "-k", "5", "--format", "jsonl"])
        s.run("dev.query.lang-go", ["query", D, "execute command", "--lang", "go", "--format", "json"])
        s.run("dev.query.path", ["query", D, "session", "--path", "flask/src/flask", "--kind", "class"])
        s.run("dev.query.two-bundles", ["query", D, fx["full"] if fx else D, "parse glob pattern", "--format", "json"])
        for tag, B in (("full", D), ("since", DS), ("merged", dev["merged"]), ("since-compacted", dev["since-compacted"])):
            s.run(f"dev.map.{tag}", ["map", B])
            s.run(f"dev.symbols.{tag}", ["symbols", B, "save_session", "--format", "json"])
            s.run(f"dev.refs.{tag}.callers", ["refs", B, "get_cookie_name", "--callers"])
            s.run(f"dev.refs.{tag}.callees", ["refs", B, "Flask.__init__", "--callees", "--format", "jsonl"])
            s.run(f"dev.deps.{tag}", ["deps", B, "--format", "json"])
            s.run(f"dev.inspect.{tag}", ["inspect", B, "--format", "json"])
            s.run(f"dev.sql.{tag}", ["sql", B, "SELECT language, count(*) AS n, sum(end_line - start_line + 1) AS lines "
                                              "FROM chunks GROUP BY language ORDER BY language"])
        s.run("dev.map.flask-depth3", ["map", D, "flask/src", "--depth", "3", "--format", "json"])
        s.run("dev.refs.subtypes", ["refs", D, "Command", "--subtypes"])
        s.run("dev.refs.imports", ["refs", D, "regex", "--imports", "-k", "20"])
        s.run("dev.refs.uses", ["refs", D, "GlobSet", "--uses", "-k", "20"])
        s.run("dev.symbols.kind", ["symbols", D, "Command", "--kind", "struct", "--kind", "class"])
        s.run("dev.show", ["show", D, "globset/src/lib.rs:1-40"])
        s.run("dev.show.since", ["show", DS, "commander/lib/suggest.js"])
        s.run("dev.sql.bm25", ["sql", D, "SELECT * FROM bm25_search('glob match path', 10)"])
        s.run("dev.sql.callers", ["sql", D, "SELECT * FROM callers('get_cookie_name') ORDER BY ALL"])
        s.run("dev.sql.refs-resolution", ["sql", D, "SELECT resolution, count(*) AS n FROM refs GROUP BY ALL ORDER BY ALL"])
        s.run("dev.sql.since.refs-resolution", ["sql", DS, "SELECT resolution, count(*) AS n FROM refs GROUP BY ALL ORDER BY ALL"])
        s.run("dev.verify", ["verify", DS])

    # Read-only commands must leave the bundles as they were.
    for name, v in (("fixtures", fx), ("dev", dev)):
        if v:
            for k in ("full", "since"):
                s.bundle_listing(name, f"{k}-after-commands", v[k])

    if bench:
        B, BS = bench["full"], bench["since"]
        s.phase("bench: commands")
        for i, q in enumerate(["retry backoff", "parse configuration file", "tokio spawn blocking task",
                               "django queryset filter", "typescript type checker"]):
            s.run(f"bench.query.hybrid.{i}", ["query", B, q, "--format", "jsonl"])
            s.run(f"bench.query.since.{i}", ["query", BS, q, "--format", "jsonl"])
            s.run(f"bench.query.merged.{i}", ["query", bench["merged"], q, "--format", "jsonl"])
            s.run(f"bench.query.bm25-lang.{i}", ["query", B, q, "--mode", "bm25", "--lang", "go", "-k", "5"])
        s.run("bench.map", ["map", B])
        s.run("bench.map.since", ["map", BS])
        s.run("bench.symbols", ["symbols", B, "spawn_blocking", "--format", "json"])
        s.run("bench.symbols.since", ["symbols", BS, "spawn_blocking", "--format", "json"])
        s.run("bench.refs", ["refs", B, "NewServer", "--callers", "-k", "30"])
        s.run("bench.refs.since", ["refs", BS, "NewServer", "--callers", "-k", "30"])
        s.run("bench.deps", ["deps", B, "--format", "jsonl"])
        s.run("bench.inspect.since", ["inspect", BS, "--format", "json"])
        s.run("bench.inspect.merged", ["inspect", bench["merged"]])
        s.run("bench.sql", ["sql", B, "SELECT language, count(*) AS n FROM chunks GROUP BY ALL ORDER BY ALL"])
        s.run("bench.sql.since", ["sql", BS, "SELECT language, count(*) AS n FROM chunks GROUP BY ALL ORDER BY ALL"])
        for k in ("full", "since"):
            s.bundle_listing("bench", f"{k}-after-commands", bench[k])


def errors(s, fx, T):
    """~30 error cases: exit code and message."""
    W, F = s.work, fx["full"]
    e = "err"
    s.run(f"{e}.query-missing-bundle", ["query", W / "nope.bundle", "x"])
    s.run(f"{e}.query-bad-glob", ["query", F, "x", "--path", "a/[b"])
    s.run(f"{e}.query-k0", ["query", F, "x", "-k", "0"])
    s.run(f"{e}.query-k-abc", ["query", F, "x", "-k", "abc"])
    s.run(f"{e}.query-bad-mode", ["query", F, "x", "--mode", "fuzzy"])
    s.run(f"{e}.query-bad-type", ["query", F, "x", "--type", "binary"])
    s.run(f"{e}.query-bad-weight", ["query", F, "x", "--vector-weight=-3"])
    s.run(f"{e}.query-no-text", ["query", F])
    s.run(f"{e}.map-depth0", ["map", F, "--depth", "0"])
    s.run(f"{e}.map-missing-path", ["map", F, "no/such/dir"])
    s.run(f"{e}.show-missing", ["show", F, "no/such/file.py"])
    s.run(f"{e}.show-bad-range", ["show", F, "sample-repo/README.md:20-10"])
    s.run(f"{e}.sql-syntax", ["sql", F, "SELEC nothing FROM"])
    s.run(f"{e}.sql-missing-table", ["sql", F, "SELECT * FROM no_such_table"])
    s.run(f"{e}.refs-conflict", ["refs", F, "x", "--callers", "--callees"])
    s.run(f"{e}.unknown-subcommand", ["frobnicate"])
    s.run(f"{e}.unknown-flag", ["query", F, "x", "--frobnicate"])
    s.run(f"{e}.chunks-missing", ["chunks", W / "no-such-file.rs"])
    s.run(f"{e}.inspect-not-bundle", ["inspect", W / "home"])
    # corrupt manifest
    c = W / "err-corrupt.bundle"
    s.copy_bundle(F, c)
    (c / "manifest.json").write_text("{not json")
    s.run(f"{e}.corrupt-manifest.inspect", ["inspect", c])
    s.run(f"{e}.corrupt-manifest.query", ["query", c, "invoice"])
    c2 = W / "err-manifest-field.bundle"
    s.copy_bundle(F, c2)
    m = json.loads((c2 / "manifest.json").read_text())
    del m["bm25"]
    (c2 / "manifest.json").write_text(json.dumps(m))
    s.run(f"{e}.manifest-missing-field", ["verify", c2])
    # a missing segment file
    c3 = W / "err-missing-segment.bundle"
    s.copy_bundle(F, c3)
    victim = sorted(c3.glob("segments/*/chunks.parquet"))[0]
    victim.unlink()
    s.run(f"{e}.missing-segment.query", ["query", c3, "invoice"])
    s.run(f"{e}.missing-segment.verify", ["verify", c3])
    s.run(f"{e}.missing-segment.sql", ["sql", c3, "SELECT count(*) FROM chunks"])
    # a tampered table (one byte flipped in the middle)
    c4 = W / "err-tampered.bundle"
    s.copy_bundle(F, c4)
    victim = sorted(c4.glob("segments/*/terms.parquet"))[0]
    data = bytearray(victim.read_bytes())
    data[len(data) // 2] ^= 0xFF
    victim.write_bytes(bytes(data))
    s.run(f"{e}.tampered.verify", ["verify", c4])
    # index errors
    repo = W / "repos" / "fixtures"
    s.run(f"{e}.index-missing-path", ["index", W / "no-such-tree", "-o", W / "x.bundle"])
    s.run(f"{e}.index-since-unknown-rev", ["index", repo, "-o", W / "err-since.bundle", "--since", "nosuchrev"])
    s.copy_bundle(fx["full-prev"], W / "err-dirty.bundle")
    (repo / "UNCOMMITTED.txt").write_text("dirty\n")
    s.run(f"{e}.index-since-dirty", ["index", repo, "-o", W / "err-dirty.bundle", "--since", "HEAD~1"])
    (repo / "UNCOMMITTED.txt").unlink()
    s.run(f"{e}.index-since-wrong-base", ["index", repo, "-o", W / "err-dirty.bundle", "--since", "HEAD"])
    s.run(f"{e}.index-shard-out-of-range", ["index", repo, "-o", W / "x.bundle", "--shard", "3/2"])
    s.run(f"{e}.index-shard-auto-unset", ["index", repo, "-o", W / "x.bundle", "--shard", "auto"])
    notb = W / "not-a-bundle"
    notb.mkdir()
    (notb / "precious.txt").write_text("keep me\n")
    s.run(f"{e}.index-over-non-bundle", ["index", repo, "-o", notb])
    s.run(f"{e}.index-bad-chunker", ["index", repo, "-o", W / "x.bundle", "--chunker", "words"])
    badcfg = W / "bad-config.toml"
    badcfg.write_text("[chunk]\nmax_chars = \"many\"\n")
    s.run(f"{e}.index-bad-config-type", ["index", repo, "-o", W / "x.bundle", "--config", badcfg])
    badcfg2 = W / "bad-config2.toml"
    badcfg2.write_text("[chunk]\nno_such_key = 1\n")
    s.run(f"{e}.index-bad-config-key", ["index", repo, "-o", W / "x.bundle", "--config", badcfg2])
    s.run(f"{e}.index-missing-config", ["index", repo, "-o", W / "x.bundle", "--config", W / "nope.toml"])
    s.run(f"{e}.index-bad-embedder", ["index", repo, "-o", W / "x.bundle", "--embedder", "nope"])
    s.run(f"{e}.merge-overlap", ["merge", W / "err-merge.bundle", fx["shard1"], fx["shard1"]])
    s.run(f"{e}.merge-one-input", ["merge", W / "err-merge.bundle"])
    s.run(f"{e}.merge-mismatch", ["merge", W / "err-merge.bundle", fx["shard1"], fx["full-prev"]])
    s.run(f"{e}.compact-not-bundle", ["compact", notb])
    s.run(f"{e}.compact-trove", ["compact", T])
    s.run(f"{e}.pack-over-other-file", ["pack", F, "-o", notb / "precious.txt"])
    trunc = W / "truncated.trove"
    trunc.write_bytes(T.read_bytes()[: T.stat().st_size // 2])
    s.run(f"{e}.unpack-truncated", ["unpack", trunc, "-o", W / "err-unpack.bundle"])
    s.run(f"{e}.query-truncated-trove", ["query", trunc, "invoice"])
    s.run(f"{e}.sync-missing-source", ["sync", W / "no-such.bundle", W / "err-sync.bundle"])
    s.run(f"{e}.sync-over-non-bundle", ["sync", F, notb])
    s.run(f"{e}.ask-no-server", ["ask", F, "how are invoices charged?"])
    s.run(f"{e}.serve-nonloopback-no-token", ["serve", F, "--listen", "0.0.0.0:0"], timeout=30)
    s.run(f"{e}.serve-bad-listen", ["serve", F, "--listen", "not-an-address"], timeout=30)
    s.run(f"{e}.mcp-missing-bundle", ["mcp", W / "nope.bundle"], stdin="", timeout=30)
    s.run(f"{e}.languages-bad-dir", ["languages", "--languages", W / "no-such-dir"])
    bad_lang = W / "bad-lang"
    bad_lang.mkdir()
    (bad_lang / "broken.toml").write_text("id = \n[[[")
    s.run(f"{e}.languages-bad-toml", ["languages", "--languages", bad_lang])
    s.run(f"{e}.symbols-k0", ["symbols", F, "x", "-k", "0"])
    s.run(f"{e}.deps-format", ["deps", F, "--format", "xml"])


# ------------------------------------------------------------------------------------------------
def free_port():
    with socket.socket() as so:
        so.bind(("127.0.0.1", 0))
        return so.getsockname()[1]


def start_http_server(root):
    port = free_port()
    p = subprocess.Popen([sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1",
                          "--directory", str(root)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            time.sleep(0.05)
    return p, port


def mcp_session(s, cid, bundles, short=False, two=False):
    """Drives `trove mcp` over stdio with newline-delimited JSON-RPC; records the transcript."""
    argv = [str(s.trove), "mcp", *map(str, bundles)]
    reqs = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                    "clientInfo": {"name": "behaviour-snapshot", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    ]
    calls = [("list_bundles", {})]
    if two:
        calls += [("search_code", {"query": "glob pattern match"}),
                  ("read_map", {"bundle": Path(bundles[1]).name}),
                  ("read_file", {"path": "sample-repo/README.md", "bundle": Path(bundles[0]).name})]
    else:
        calls += [("search_code", {"query": "how is an invoice charged"}),
                  ("read_map", {})]
        if not short:
            calls += [
                ("search_code", {"query": "invoice", "mode": "bm25", "k": 3, "language": "python"}),
                ("search_code", {"query": "server", "path": "languages/go", "kind": "function"}),
                ("read_map", {"path": "sample-repo", "depth": 2}),
                ("resolve_symbol", {"name": "process_payment", "action": "definition"}),
                ("resolve_symbol", {"name": "validate", "action": "references"}),
                ("resolve_symbol", {"name": "format_amount", "action": "callers"}),
                ("resolve_symbol", {"name": "process_payment", "action": "callees"}),
                ("resolve_symbol", {"name": "Shape", "action": "subtypes"}),
                ("resolve_symbol", {"name": "noSuchThing", "action": "definition"}),
                ("resolve_symbol", {"name": "validate", "action": "explode"}),
                ("read_file", {"path": "sample-repo/billing/billing.py", "start_line": 10, "end_line": 25}),
                ("read_file", {"path": "no/such/file.py"}),
                ("read_file", {"path": "sample-repo/billing/billing.py", "start_line": "ten"}),
                ("search_code", {}),
                ("no_such_tool", {}),
            ]
    rid = 10
    for name, args in calls:
        reqs.append({"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": {"name": name, "arguments": args}})
        rid += 1
    raw_lines = [json.dumps(r) for r in reqs]
    n_normal = len(raw_lines)
    if not short:
        # protocol abuse: not JSON (skipped, no reply), unknown method, bad params, jsonrpc 1.0, a batch
        raw_lines += [
            "this is not json",
            json.dumps({"jsonrpc": "2.0", "id": 90, "method": "no/such/method"}),
            json.dumps({"jsonrpc": "2.0", "id": 91, "method": "tools/call", "params": {"name": "read_map", "arguments": "str"}}),
            json.dumps({"jsonrpc": "1.0", "id": 92, "method": "tools/list"}),
            json.dumps([{"jsonrpc": "2.0", "id": 93, "method": "tools/list"}]),
            json.dumps({"jsonrpc": "2.0", "id": 94, "method": "ping"}),
        ]
    # One request at a time: write a line, wait for the reply to an id (none for notifications).
    e = dict(s.env)
    t = time.monotonic()
    p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         cwd=s.work, env=e)
    err_chunks = []
    th = threading.Thread(target=lambda: err_chunks.append(p.stderr.read()), daemon=True)
    th.start()
    transcript = []
    import selectors
    sel = selectors.DefaultSelector()
    sel.register(p.stdout, selectors.EVENT_READ)
    buf = b""

    def read_reply(deadline):
        nonlocal buf
        while b"\n" not in buf:
            left = deadline - time.monotonic()
            if left <= 0 or not sel.select(timeout=left):
                return None
            chunk = os.read(p.stdout.fileno(), 1 << 16)
            if not chunk:
                return None
            buf += chunk
        line, buf = buf.split(b"\n", 1)
        return line.decode("utf-8", "replace")

    for i, line in enumerate(raw_lines):
        transcript.append(">>> " + line)
        try:
            p.stdin.write(line.encode() + b"\n")
            p.stdin.flush()
        except BrokenPipeError:
            transcript.append("!!! server closed stdin")
            break
        wants = True
        try:
            o = json.loads(line)
            wants = not (isinstance(o, dict) and "id" not in o)
        except ValueError:
            wants = False  # not JSON: skipped without a reply
        wait = (60 if i < n_normal else 5) if wants else 0.3
        rep = read_reply(time.monotonic() + wait)
        if rep is None:
            transcript.append("<<< (no reply)" if not wants else "<<< (NO REPLY within 60 s)")
        else:
            try:
                rep = json.dumps(json.loads(rep), indent=1, sort_keys=False, ensure_ascii=False)
            except ValueError:
                pass
            transcript.append("<<< " + rep)
    p.stdin.close()
    try:
        rc = p.wait(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()
        rc = "killed after stdin closed + 30 s"
    rest = p.stdout.read()
    if rest:
        transcript.append("<<< (after close) " + rest.decode("utf-8", "replace"))
    th.join(5)
    s.timings.append((cid, time.monotonic() - t))
    s.ids.add(cid)
    s.record(cid, argv, "\n".join(transcript) + "\n", b"".join(c for c in err_chunks if c), str(rc))


def start_chat_server():
    """A scripted OpenAI-compatible chat server: the first request of a conversation gets two tool
    calls, a request that carries tool results gets an answer citing a good, a missing and an
    out-of-range location. Returns (server, port, log of the requests it got)."""
    import http.server
    log_lines = []

    class H(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *a):
            pass

        def do_POST(self):
            n = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(n) or b"{}")
            log_lines.append(f"POST {self.path} " + json.dumps(body, sort_keys=True, ensure_ascii=False))
            msgs = body.get("messages", [])
            if body.get("tools") and not any(m.get("role") == "tool" for m in msgs):
                msg = {"role": "assistant", "content": None, "tool_calls": [
                    {"id": "call_1", "type": "function",
                     "function": {"name": "search_code", "arguments": json.dumps({"query": "invoice charged"})}},
                    {"id": "call_2", "type": "function",
                     "function": {"name": "read_file", "arguments": json.dumps(
                         {"path": "sample-repo/billing/billing.py", "start_line": 30, "end_line": 45})}},
                    {"id": "call_3", "type": "function", "function": {"name": "no_such_tool", "arguments": "{}"}},
                ]}
            else:
                msg = {"role": "assistant", "content":
                       "Invoices are charged by PaymentService.process_payment "
                       "(sample-repo/billing/billing.py:34-45), which validates first "
                       "(sample-repo/billing/billing.py:28). Not in the bundle: sample-repo/nowhere.py:3, "
                       "sample-repo/billing/billing.py:900."}
            out = json.dumps({"id": "chatcmpl-1", "object": "chat.completion", "model": body.get("model"),
                              "choices": [{"index": 0, "message": msg, "finish_reason": "stop"}],
                              "usage": {"prompt_tokens": 1000, "completion_tokens": 50, "total_tokens": 1050}}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv, srv.server_address[1], log_lines


def ask_session(s, F):
    chat, port, chat_log = start_chat_server()
    s.ports.append(port)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        s.run("fx.ask.text", ["ask", F, "How are invoices charged?", "--url", url, "--model", "scripted"])
        s.run("fx.ask.json", ["ask", F, "How are invoices charged?", "--url", url, "--model", "scripted",
                              "--format", "json"])
        s.run("fx.ask.max-steps1", ["ask", F, "How are invoices charged?", "--url", url, "--model", "scripted",
                                    "--max-steps", "1", "--format", "json"])
    finally:
        chat.shutdown()
        chat.server_close()
    s.ids.add("fx.ask.chat-requests")
    s.record("fx.ask.chat-requests", ["(scripted chat server)"], "\n".join(chat_log) + "\n", b"", "0")
    s.run("err.ask-server-down", ["ask", F, "How?", "--url", url, "--model", "scripted", "--retries", "0",
                                  "--timeout", "5"])
    s.run("err.ask-max-steps0", ["ask", F, "How?", "--url", url, "--max-steps", "0"])
    s.run("err.ask-empty-question", ["ask", F, "  ", "--url", url])


def serve_session(s, cid, fx, dev):
    """Starts `trove serve` on copies of the fixtures (and dev) bundles, sends requests, stops it."""
    root = s.work / "serve"
    root.mkdir()
    s.copy_bundle(fx["full"], root / "fx.bundle")
    names = ["fx.bundle"]
    if dev:
        s.copy_bundle(dev["full"], root / "dev.bundle")
        names.append("dev.bundle")
    port = free_port()
    s.ports.append(port)
    chat, chat_port, chat_log = start_chat_server()
    s.ports.append(chat_port)
    argv = [str(s.trove), "serve", *[str(root / n) for n in names], "--listen", f"127.0.0.1:{port}",
            "--ask-url", f"http://127.0.0.1:{chat_port}/v1", "--ask-model", "scripted"]
    errf = open(s.work / "serve.err", "wb")
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=errf, cwd=s.work, env=dict(s.env))
    first = p.stdout.readline().decode()
    transcript = [f"stdout: {first.rstrip()}"]
    reqs = [
        ("GET", "/health", None), ("GET", "/bundles", None), ("GET", "/openapi.json", None),
        ("POST", "/query", {"query": "how is an invoice charged", "k": 5}),
        ("POST", "/query", {"query": "invoice", "mode": "bm25", "language": ["python"], "kind": "function",
                            "bundles": ["fx.bundle"]}),
        ("POST", "/query", {"query": "glob", "mode": "vector", "k": 3, "content": True}),
        ("POST", "/query", {"query": "cache", "fusion": "rrf", "alpha": 0.3, "path": "languages/**",
                            "source_type": "code"}),
        ("GET", "/symbols?name=process_payment", None),
        ("GET", "/symbols?name=PaymentService.process_payment&bundle=fx.bundle", None),
        ("GET", "/refs?name=validate&follow=callers", None),
        ("GET", "/refs?name=process_payment&follow=callees", None),
        ("GET", "/refs?name=Shape&follow=subtypes", None),
        ("GET", "/refs?name=decimal&follow=imports", None),
        ("GET", "/refs?name=User&follow=all", None),
        ("GET", "/map?bundle=fx.bundle&path=sample-repo&depth=2", None),
        ("GET", "/map?bundle=fx.bundle", None),
        ("GET", "/deps?ecosystem=npm", None),
        ("GET", "/deps?scope=dev", None),
        ("GET", "/files/sample-repo/billing/billing.py?start=10&end=20", None),
        ("GET", "/files/sample-repo/billing/refunds.py?bundle=fx.bundle", None),
        # errors
        ("GET", "/files/../etc/passwd", None),
        ("GET", "/files/no/such/file.py", None),
        ("GET", "/files/", None),
        ("GET", "/map?bundle=nope.bundle", None),
        ("POST", "/query", "{not json"),
        ("POST", "/query", {"query": "x", "k": 100000}),
        ("POST", "/query", {"query": "x", "mode": "fuzzy"}),
        ("POST", "/query", {"query": "x", "path": "a/[b"}),
        ("GET", "/query", None),
        ("POST", "/health", None),
        ("GET", "/nope", None),
        ("POST", "/ask", {"question": "how are invoices charged?", "bundles": ["fx.bundle"]}),
        ("POST", "/ask", {}),
        ("GET", "/symbols", None),
        ("GET", "/metrics", None),
    ]
    try:
        if "listening on" not in first:
            transcript.append("!!! no 'listening on' line")
        else:
            for method, path, body in reqs:
                c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
                data = None
                hdrs = {}
                if body is not None:
                    data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
                    hdrs["Content-Type"] = "application/json"
                c.request(method, path, body=data, headers=hdrs)
                r = c.getresponse()
                text = r.read().decode("utf-8", "replace")
                ctype = r.getheader("content-type")
                gen = r.getheader("x-trove-generation")
                c.close()
                if ctype and "json" in ctype:
                    try:
                        text = json.dumps(json.loads(text), indent=1, ensure_ascii=False)
                    except ValueError:
                        pass
                transcript.append(f"=== {method} {path} {json.dumps(body) if body is not None and not isinstance(body, str) else (body or '')}")
                transcript.append(f"status {r.status}; content-type {ctype}; x-trove-generation {gen}")
                transcript.append(text)
    finally:
        p.send_signal(signal.SIGTERM)
        try:
            rc = p.wait(timeout=60)
        except subprocess.TimeoutExpired:
            p.kill()
            rc = "killed"
        errf.close()
        chat.shutdown()
        chat.server_close()
    transcript.append("=== requests the chat server got (/ask)")
    transcript += chat_log
    rest = p.stdout.read().decode("utf-8", "replace")
    if rest:
        transcript.append("stdout after: " + rest)
    s.ids.add(cid)
    s.record(cid, argv, "\n".join(transcript) + "\n", (s.work / "serve.err").read_bytes(), str(rc))


# ------------------------------------------------------------------------------------------------
def snapshot(trove, out):
    s = Snapshot(trove, out)
    try:
        return _snapshot(s)
    finally:
        if os.environ.get("TROVE_SNAPSHOT_KEEP_WORK") == "1":
            log(f"work folder kept: {s.work}")
        else:
            shutil.rmtree(s.work, ignore_errors=True)


def _snapshot(s):
    want = [c.strip() for c in os.environ.get("TROVE_SNAPSHOT_CORPORA", "fixtures,dev,bench").split(",") if c.strip()]
    src = {
        "fixtures": Path(os.environ.get("TROVE_SNAPSHOT_FIXTURES", REPO / "fixtures")),
        "dev": Path(os.environ.get("TROVE_SNAPSHOT_DEV_CORPUS", "/work/behaviour/dev-corpus")),
        "bench": Path(os.environ.get("TROVE_SNAPSHOT_BENCH_CORPUS", "/work/behaviour/bench-corpus")),
    }
    corpora_txt = []
    repos = s.work / "repos"
    repos.mkdir()
    done = {}
    s.phase("version")
    _, version_out, _ = s.run("version.raw", ["--version"])
    rc, top, toperr = s.run("top-help.raw", ["--help"])
    rc0, top0, toperr0 = s.run("top-noargs.raw", [])  # no subcommand: clap prints the same help
    for name in ("fixtures", "dev", "bench"):
        if name not in want:
            corpora_txt.append(f"{name}: not selected (TROVE_SNAPSHOT_CORPORA)")
            continue
        p = src[name]
        ok = p.is_dir() and (name != "bench" or (p / ".git").exists())
        if not ok:
            loud(f"CORPUS {name} MISSING at {p}: SKIPPED (set TROVE_SNAPSHOT_{name.upper()}... to its folder)")
            corpora_txt.append(f"{name}: SKIPPED, missing at {p}")
            continue
        s.phase(f"corpus {name}")
        dest = repos / name
        if name == "bench":
            subprocess.run(["git", "clone", "-q", str(p), str(dest)], check=True, env=s.env)
            branch = s.git(dest, "rev-parse", "--abbrev-ref", "HEAD")
            if int(s.git(dest, "rev-list", "--count", "HEAD")) < 2:
                raise SystemExit("bench corpus needs at least two commits")
        else:
            branch = s.two_commit_repo(p, dest, FIXTURES_CHANGES if name == "fixtures" else DEV_CHANGES)
        head = s.git(dest, "rev-parse", "HEAD")
        prev = s.git(dest, "rev-parse", "HEAD~1")
        tree = s.git(dest, "rev-parse", "HEAD^{tree}")
        nfiles = len(s.git(dest, "ls-files").splitlines())
        corpora_txt.append(f"{name}: HEAD~1 {prev} HEAD {head} tree {tree} files {nfiles} branch {branch}")
        corpora_txt.append(f"{name}: diff HEAD~1..HEAD: " + " | ".join(
            s.git(dest, "diff", "--name-status", "-M", "HEAD~1", "HEAD").splitlines()[:20]))
        done[name] = s.corpus(name, dest, branch, cheap=(name != "bench"))
    (s.out / "corpora.txt").write_text("\n".join(corpora_txt) + "\n")
    commands(s, done.get("fixtures"), done.get("dev"), done.get("bench"))
    s.phase("normalize + write")
    s.finish_identity(version_out)
    (s.out / "top-help.txt").write_text(
        "=== trove --help\n" + s.norm(top + toperr) + f"[exit {rc}]\n"
        + "=== trove (no arguments)\n" + s.norm(top0 + toperr0) + f"[exit {rc0}]\n")
    # the raw records of --version / --help live in top-help.txt and cmd/version.*; drop duplicates
    s.records = [r for r in s.records if r[0] not in ("version.raw", "top-help.raw", "top-noargs.raw")]
    s.write_all()
    if any("SKIPPED" in l for l in corpora_txt):
        loud("some corpora were SKIPPED: see corpora.txt; this snapshot does not cover them")
    return 0


# ------------------------------------------------------------------------------------------------
def compare(a, b):
    a, b = Path(a), Path(b)
    for d in (a, b):
        if not (d / "cmd").is_dir():
            sys.exit(f"{d} is not a snapshot (no cmd/ folder)")

    def files(d):
        return {p.relative_to(d).as_posix() for p in d.rglob("*") if p.is_file()
                and p.relative_to(d).parts[0] not in ("_raw", "_meta")}
    fa, fb = files(a), files(b)
    bad = 0
    for rel in sorted(fa - fb):
        print(f"ONLY IN A: {rel}")
        bad += 1
    for rel in sorted(fb - fa):
        print(f"ONLY IN B: {rel}")
        bad += 1
    for rel in sorted(fa & fb):
        x, y = (a / rel).read_bytes(), (b / rel).read_bytes()
        if x == y:
            continue
        bad += 1
        print(f"DIFFERS: {rel}")
        xl = x.decode("utf-8", "replace").splitlines()
        yl = y.decode("utf-8", "replace").splitlines()
        d = list(difflib.unified_diff(xl, yl, f"A/{rel}", f"B/{rel}", n=1, lineterm=""))
        for line in d[:30]:
            print("    " + (line if len(line) < 300 else line[:300] + " ..."))
        if len(d) > 30:
            print(f"    ... ({len(d) - 30} more diff lines)")
    # informational: identities
    try:
        ia = json.loads((a / "_meta/identity.json").read_text())
        ib = json.loads((b / "_meta/identity.json").read_text())
        for k in ("version", "build", "commit", "binary_sha256"):
            if ia.get(k) != ib.get(k):
                print(f"(info, not a difference) {k}: {ia.get(k)} -> {ib.get(k)}")
    except (OSError, ValueError):
        pass
    for d in (a, b):
        c = d / "corpora.txt"
        if c.exists() and "SKIPPED" in c.read_text():
            print(f"WARNING: {d} skipped a corpus (see its corpora.txt)")
    n = len(fa | fb)
    if bad:
        print(f"{bad} of {n} files differ")
        return 1
    print(f"no differences ({n} files compared)")
    return 0


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "snapshot":
        sys.exit(snapshot(sys.argv[2], sys.argv[3]))
    if len(sys.argv) == 4 and sys.argv[1] == "compare":
        sys.exit(compare(sys.argv[2], sys.argv[3]))
    sys.exit(__doc__)


if __name__ == "__main__":
    main()
