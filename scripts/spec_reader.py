#!/usr/bin/env python3
"""A reader of trove bundle format 1.x written from docs/format.md alone: pyarrow and the Python
standard library, no trove code, no DuckDB, no views.sql. It proves that the specification says
enough to search a bundle and print its files as trove does.

usage:
  spec_reader.py search BUNDLE QUERY [--limit 10]
      The hits of `trove query BUNDLE QUERY --mode bm25 --limit N --format json`, as a JSON array
      in rank order, with the same fields (docs/format.md, "Search").
  spec_reader.py show BUNDLE PATH[:START[-END]] [--raw]
      The file's text as `trove show` prints it: numbered lines (docs/format.md, "File text");
      with --raw, the stored text exactly (with a line range: those lines as stored).

Options for both:
  --read-format-9   Read a pre-1.0 bundle of format_version 9 as format 1.0. Its tables are those
                    of 1.0 (only the manifest's version keys differ); a 1.x reader refuses such a
                    bundle by default, naming `trove upgrade`. For tests against bundles written
                    before 1.0.

Exit codes: 0 hits / shown, 1 no hits, 2 a bundle or path that cannot be read.
"""
import argparse
import bisect
import json
import math
import sys
import unicodedata
from pathlib import Path

import pyarrow.parquet as pq

# --- Versions (docs/format.md, "Versions and compatibility") --------------------------------

FORMAT_MAJOR = 1
FORMAT_MINOR = 0
# The named features this reader knows (`required_features`): none in 1.0.
KNOWN_FEATURES = frozenset()
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


class BundleError(Exception):
    """A bundle (or a path in it) this reader cannot read: exit code 2."""


# --- The code-v1 tokenizer (docs/format.md, "The code-v1 tokenizer") ------------------------

# Code points with Unicode's Other_Alphabetic property that are neither letters (Python's
# str.isalpha: categories Lu Ll Lt Lm Lo) nor Nl: with those, the Alphabetic property. From the
# Unicode Character Database (14.0, the version of this Python's unicodedata).
_OTHER_ALPHABETIC = """
    345 5B0-5BD 5BF 5C1-5C2 5C4-5C5 5C7 610-61A 64B-657 659-65F 670 6D6-6DC 6E1-6E4 6E7-6E8 6ED
    711 730-73F 7A6-7B0 816-817 81B-823 825-827 829-82C 8D4-8DF 8E3-8E9 8F0-903 93A-93B 93E-94C
    94E-94F 955-957 962-963 981-983 9BE-9C4 9C7-9C8 9CB-9CC 9D7 9E2-9E3 A01-A03 A3E-A42 A47-A48
    A4B-A4C A51 A70-A71 A75 A81-A83 ABE-AC5 AC7-AC9 ACB-ACC AE2-AE3 AFA-AFC B01-B03 B3E-B44
    B47-B48 B4B-B4C B56-B57 B62-B63 B82 BBE-BC2 BC6-BC8 BCA-BCC BD7 C00-C03 C3E-C44 C46-C48
    C4A-C4C C55-C56 C62-C63 C81-C83 CBE-CC4 CC6-CC8 CCA-CCC CD5-CD6 CE2-CE3 D00-D03 D3E-D44
    D46-D48 D4A-D4C D57 D62-D63 D81-D83 DCF-DD4 DD6 DD8-DDF DF2-DF3 E31 E34-E3A E4D EB1 EB4-EB9
    EBB-EBC ECD F71-F81 F8D-F97 F99-FBC 102B-1036 1038 103B-103E 1056-1059 105E-1060 1062-1064
    1067-106D 1071-1074 1082-108D 108F 109A-109D 1712-1713 1732-1733 1752-1753 1772-1773
    17B6-17C8 1885-1886 18A9 1920-192B 1930-1938 1A17-1A1B 1A55-1A5E 1A61-1A74 1ABF-1AC0
    1ACC-1ACE 1B00-1B04 1B35-1B43 1B80-1B82 1BA1-1BA9 1BAC-1BAD 1BE7-1BF1 1C24-1C36 1DE7-1DF4
    24B6-24E9 2DE0-2DFF A674-A67B A69E-A69F A802 A80B A823-A827 A880-A881 A8B4-A8C3 A8C5 A8FF
    A926-A92A A947-A952 A980-A983 A9B4-A9BF A9E5 AA29-AA36 AA43 AA4C-AA4D AA7B-AA7D AAB0
    AAB2-AAB4 AAB7-AAB8 AABE AAEB-AAEF AAF5 ABE3-ABEA FB1E 10376-1037A 10A01-10A03 10A05-10A06
    10A0C-10A0F 10D24-10D27 10EAB-10EAC 11000-11002 11038-11045 11073-11074 11082 110B0-110B8
    110C2 11100-11102 11127-11132 11145-11146 11180-11182 111B3-111BF 111CE-111CF 1122C-11234
    11237 1123E 112DF-112E8 11300-11303 1133E-11344 11347-11348 1134B-1134C 11357 11362-11363
    11435-11441 11443-11445 114B0-114C1 115AF-115B5 115B8-115BE 115DC-115DD 11630-1163E 11640
    116AB-116B5 1171D-1172A 1182C-11838 11930-11935 11937-11938 1193B-1193C 11940 11942
    119D1-119D7 119DA-119DF 119E4 11A01-11A0A 11A35-11A39 11A3B-11A3E 11A51-11A5B 11A8A-11A97
    11C2F-11C36 11C38-11C3E 11C92-11CA7 11CA9-11CB6 11D31-11D36 11D3A 11D3C-11D3D 11D3F-11D41
    11D43 11D47 11D8A-11D8E 11D90-11D91 11D93-11D96 11EF3-11EF6 16F4F 16F51-16F87 16F8F-16F92
    16FF0-16FF1 1BC9E 1E000-1E006 1E008-1E018 1E01B-1E021 1E023-1E024 1E026-1E02A 1E947
    1F130-1F149 1F150-1F169 1F170-1F189
"""


def _ranges(text):
    out = []
    for item in text.split():
        lo, _, hi = item.partition("-")
        out.append((int(lo, 16), int(hi or lo, 16)))
    return out


_OA = _ranges(_OTHER_ALPHABETIC)
_OA_STARTS = [lo for lo, _ in _OA]


def is_alphabetic(c):
    """Unicode's Alphabetic property (Rust's char::is_alphabetic)."""
    if c.isalpha() or unicodedata.category(c) == "Nl":
        return True
    n = ord(c)
    i = bisect.bisect_right(_OA_STARTS, n) - 1
    return i >= 0 and _OA[i][0] <= n <= _OA[i][1]


def is_alphanumeric(c):
    """Alphabetic, or of general category Nd, Nl or No (Rust's char::is_alphanumeric)."""
    if c < "\x80":
        return "a" <= c <= "z" or "A" <= c <= "Z" or "0" <= c <= "9"
    return is_alphabetic(c) or unicodedata.category(c) in ("Nd", "Nl", "No")


def words(text):
    """The maximal runs of word characters (alphanumeric or `_`)."""
    out, cur = [], []
    for c in text:
        if c == "_" or is_alphanumeric(c):
            cur.append(c)
        elif cur:
            out.append("".join(cur))
            cur = []
    if cur:
        out.append("".join(cur))
    return out


def lower(s):
    """Each character's full Unicode lowercase mapping, character by character (no context)."""
    return "".join(c.lower() for c in s)


UNDERSCORE, LOWER, UPPER, DIGIT, OTHER = range(5)


def _case(c):
    if c == "_":
        return UNDERSCORE
    if c.islower():  # Unicode's Lowercase property, for one character
        return LOWER
    if c.isupper():  # Unicode's Uppercase property
        return UPPER
    if "0" <= c <= "9":  # ASCII digits only
        return DIGIT
    return OTHER


def split_parts(word):
    """(start, end) character ranges of the sub-words of `word`."""
    cases = [_case(c) for c in word]
    out, start, prev = [], None, OTHER
    for i, c in enumerate(cases):
        was, prev = prev, c
        if c == UNDERSCORE:
            if start is not None:
                out.append((start, i))
                start = None
            continue
        if start is None:
            start = i
            continue
        nxt = cases[i + 1] if i + 1 < len(cases) else None
        if (was in (LOWER, DIGIT) and c == UPPER) or (was == UPPER and c == UPPER and nxt == LOWER):
            out.append((start, i))
            start = i
    if start is not None:
        out.append((start, len(word)))
    return out


def tokens(text, max_len):
    """The code-v1 tokens of `text`, in order, repeats kept."""
    out = []
    for w in words(text):
        w = w.strip("_")
        if not w or len(w.encode("utf-8")) > max_len:
            continue
        out.append(lower(w))
        if w.isascii() and "_" not in w and not any("A" <= c <= "Z" for c in w):
            continue
        parts = split_parts(w)
        if len(parts) > 1:
            for s, e in parts:
                if e - s >= 2:
                    out.append(lower(w[s:e]))
    return out


# --- Query terms (docs/format.md, "Search: query terms") -----------------------------------

STOPWORDS = frozenset(
    "a an and are as at be by can do does for from how i in is it its of on or that the this to "
    "what when where which who why with there it's get gets instead".split()
)
COMPOUND_WEIGHT = 2.0
PREFIX_WEIGHT = 0.5
PREFIX_MIN_WORD = 5
PREFIX_MIN = 3
CANDIDATES = 200
SYMBOL_BOOST = 0.3
TEST_WEIGHT = 0.7
DOC_WEIGHT = 0.85
FILE_CONTEXT = 0.25
WHOLE_FUNCTION_BYTES = 7200
SIGNAL_MAX_TOKEN_LEN = 64


def query_terms(query, max_len):
    """[(term, weight)] of a query: deduplicated, stop words dropped unless nothing else is left."""
    out, seen = [], set()
    for w in words(query):
        toks = tokens(w, max_len)
        for i, t in enumerate(toks):
            if t not in seen:
                seen.add(t)
                out.append((t, COMPOUND_WEIGHT if i == 0 and len(toks) > 1 else 1.0))
    content = [(t, w) for t, w in out if t not in STOPWORDS]
    return content if content else out


def prefix_candidates(terms):
    """[(prefix, weight, word)] a query's words may expand to, before the bundle is asked."""
    own = {t for t, _ in terms}
    out, seen = [], set()
    for word, w in terms:
        letters = len(word)
        if letters < PREFIX_MIN_WORD or word in STOPWORDS or not all(map(is_alphabetic, word)):
            continue
        for end in range(PREFIX_MIN, letters):
            p = word[:end]
            if p in STOPWORDS or p in own:
                continue
            out.append((p, w * PREFIX_WEIGHT, word))
    return out


def name_parts(query):
    """The parts of a query that is a name or a path of up to four names; None for text."""
    q = query.strip()
    parts, cur = [], []
    for c in q:
        if c in ".:> ":
            if cur:
                parts.append("".join(cur))
            cur = []
        else:
            cur.append(c)
    if cur:
        parts.append("".join(cur))

    def ident(p):
        return (is_alphabetic(p[0]) or p[0] in "_$") and all(
            is_alphanumeric(c) or c in "_$" for c in p
        )

    joined_ok = all(is_alphanumeric(c) or c in "_$.:> " for c in q)
    if not parts or len(parts) > 4 or not joined_ok or not all(ident(p) for p in parts):
        return None
    if " " in q and ">" not in q:
        return None
    return parts


def idf(n, df):
    return math.log(1.0 + (n - df + 0.5) / (df + 0.5))


# --- The bundle ---------------------------------------------------------------------------


def check_manifest(m, where, read_format_9):
    if m.get("format") != "trove-bundle":
        raise BundleError(f"{where}: manifest.json does not describe a trove-bundle bundle")
    major = m.get("format_major")
    if major is None:
        old = m.get("format_version")
        if old == 9 and read_format_9:
            return
        if old == 9:
            raise BundleError(
                f"{where}: is format_version 9, from before bundle format 1.0: run "
                f"`trove upgrade {where}` to convert it (or pass --read-format-9)"
            )
        raise BundleError(
            f"{where}: is format_version {old}, from before bundle format 1.0: re-index it"
        )
    if major != FORMAT_MAJOR:
        raise BundleError(f"{where}: is bundle format {major}.{m.get('format_minor', 0)}: not 1.x")
    for name, release in (m.get("required_features") or {}).items():
        if name not in KNOWN_FEATURES:
            raise BundleError(
                f"{where}: needs the bundle feature `{name}`, which this reader does not read: "
                f"read it with {release} or later"
            )


class Bundle:
    def __init__(self, path, read_format_9=False):
        self.label = path
        self.dir = Path(path)
        if self.dir.is_file():
            with open(self.dir, "rb") as f:
                head = f.read(4)
            if head == ZSTD_MAGIC:
                raise BundleError(
                    f"{path}: is a packed bundle (a zstd-compressed tar): unpack it first "
                    "(`trove unpack`, or `tar --zstd -xf`)"
                )
            raise BundleError(f"{path}: is a file, not a bundle directory")
        try:
            self.manifest = json.loads((self.dir / "manifest.json").read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            raise BundleError(f"{path}: cannot read manifest.json: {e}")
        check_manifest(self.manifest, path, read_format_9)
        self.segments = [s["id"] for s in self.manifest["segments"]]
        if not self.segments:
            raise BundleError(f"{path}: its manifest lists no segment")
        # Every file the manifest lists: a bundle path, present, at its recorded size.
        for e in self.manifest["files"]:
            name = e["name"]
            parts = name.split("/")
            ok = name == "views.sql" or (
                len(parts) == 3 and parts[0] == "segments" and parts[1] in self.segments
                and parts[2].endswith(".parquet") and len(parts[2]) > len(".parquet")
            )
            p = self.dir / name
            if not ok or p.is_symlink() or not p.is_file() or p.stat().st_size != e["bytes"]:
                raise BundleError(f"{path}: {name} is not the file the manifest lists")
        # dead[i]: the paths whose rows in segment i are dead (tombstoned by a later segment).
        tomb = []
        for s in self.manifest["segments"]:
            paths = set()
            if s.get("tombstones", 0) > 0:
                paths = set(self._read(s["id"], "tombstones", ["path"])["path"])
            tomb.append(paths)
        self.dead = []
        for i in range(len(self.segments)):
            d = set()
            for later in tomb[i + 1 :]:
                d |= later
            self.dead.append(d)
        self._chunks = {}
        self._wholes = {}

    def _read(self, seg, table, columns, filters=None):
        p = self.dir / "segments" / seg / f"{table}.parquet"
        t = pq.read_table(p, columns=columns, filters=filters)
        return {c: t.column(c).to_pylist() for c in columns}

    def chunks(self, i):
        """Segment i's chunk rows (all columns the search needs, no text), by chunk_ord."""
        if i not in self._chunks:
            cols = [
                "chunk_id", "chunk_ord", "path", "language", "source_type", "kind", "symbol",
                "symbol_path", "signature", "start_line", "end_line", "start_byte", "end_byte",
                "token_len",
            ]
            c = self._read(self.segments[i], "chunks", cols)
            if c["chunk_ord"] != list(range(len(c["chunk_ord"]))):
                raise BundleError(
                    f"{self.label}: segment {self.segments[i]}: chunk_ord is not the row"
                )
            dead = self.dead[i]
            c["live"] = [p not in dead for p in c["path"]]
            c["by_id"] = {cid: o for o, cid in enumerate(c["chunk_id"]) if c["live"][o]}
            self._chunks[i] = c
        return self._chunks[i]

    def locate(self, chunk_id):
        """(segment, ordinal) of the live chunk `chunk_id`."""
        for i in reversed(range(len(self.segments))):
            o = self.chunks(i)["by_id"].get(chunk_id)
            if o is not None:
                return i, o
        return None

    def wholes(self, i):
        """Segment i: chunk_ord -> (start_line, end_line, name, symbol_path, kind) of the split
        function or method the chunk is a piece of (docs/format.md, "Whole functions")."""
        if i in self._wholes:
            return self._wholes[i]
        cols = ["path", "kind", "name", "symbol_path", "start_line", "end_line", "start_byte",
                "end_byte"]
        s = self._read(self.segments[i], "symbols", cols)
        defs = {}
        for r in range(len(s["path"])):
            if s["kind"][r] in ("function", "method") and \
                    s["end_byte"][r] - s["start_byte"][r] <= WHOLE_FUNCTION_BYTES:
                defs.setdefault(s["path"][r], []).append(r)
        for v in defs.values():
            v.sort(key=lambda r: (s["start_byte"][r], -s["end_byte"][r]))
        c = self.chunks(i)
        files = {}
        for o, p in enumerate(c["path"]):
            if p in defs:
                files.setdefault(p, []).append((c["start_byte"][o], c["end_byte"][o], o))
        used = {}  # symbols row -> [first line, last line, [ords]]
        for p, spans in files.items():
            spans.sort()
            fd = defs[p]
            opened, nxt = [], 0
            for cs, ce, o in spans:
                while nxt < len(fd) and s["start_byte"][fd[nxt]] < ce:
                    while opened and s["end_byte"][fd[opened[-1]]] < s["start_byte"][fd[nxt]]:
                        opened.pop()
                    opened.append(nxt)
                    nxt += 1
                while opened and s["end_byte"][fd[opened[-1]]] < ce:
                    opened.pop()
                for t in reversed(opened):
                    r = fd[t]
                    if cs > s["start_byte"][r] or ce < s["end_byte"][r]:
                        e = used.setdefault(r, [s["start_line"][r], s["end_line"][r], []])
                        e[0] = min(e[0], c["start_line"][o])
                        e[2].append(o)
                        break
        out = {}
        for r, (first, last, ords) in used.items():
            for o in ords:
                out[o] = (first, last, s["name"][r], s["symbol_path"][r], s["kind"][r])
        self._wholes[i] = out
        return out

    # --- search -----------------------------------------------------------------------

    def search(self, query, k):
        bm = self.manifest["bm25"]
        k1, b, n_docs, max_len = bm["k1"], bm["b"], bm["n_docs"], bm["max_token_len"]
        avgdl = max(bm["avgdl"], 1e-9)
        terms = query_terms(query, max_len)
        prefixes = prefix_candidates(terms)
        wanted = sorted({t for t, _ in terms} | {p for p, _, _ in prefixes})
        # Per segment: term -> [(chunk_ord, tf)] for the terms and prefixes asked about.
        postings = []
        for i, seg in enumerate(self.segments):
            per = {}
            if wanted:
                rows = self._read(seg, "postings", ["term", "chunk_ord", "tf"],
                                  filters=[("term", "in", wanted)])
                for t, o, tf in zip(rows["term"], rows["chunk_ord"], rows["tf"]):
                    per.setdefault(t, []).append((o, tf))
            postings.append(per)

        def live_df(t):
            n = 0
            for i, per in enumerate(postings):
                live = self.chunks(i)["live"]
                n += sum(1 for o, _ in per.get(t, ()) if live[o])
            return n

        weighted = []
        for t, w in terms:
            d = live_df(t)
            if d > 0:
                weighted.append((t, w * idf(n_docs, d)))
        taken, caps = set(), {}
        for p, w, word in prefixes:
            if p in taken:
                continue
            d = live_df(p)
            if d > 0:
                taken.add(p)
                if word not in caps:
                    caps[word] = idf(n_docs, max(live_df(word), 1))
                weighted.append((p, w * min(idf(n_docs, d), caps[word])))

        # BM25 over every segment's live chunks; the best CANDIDATES, ties by chunk id.
        found = []
        for i, per in enumerate(postings):
            c = self.chunks(i)
            acc = {}
            for t, w in weighted:
                for o, tf in per.get(t, ()):
                    norm = k1 * (1.0 - b + b * c["token_len"][o] / avgdl)
                    acc[o] = acc.get(o, 0.0) + w * tf * (k1 + 1.0) / (tf + norm)
            for o, s in acc.items():
                if s != 0.0 and c["live"][o]:
                    found.append((c["chunk_id"][o], s, i, o))
        found.sort(key=lambda x: (-x[1], x[0]))
        found = found[:CANDIDATES]
        where = {cid: (i, o) for cid, _, i, o in found}

        # Signals, then file context.
        term_set = {t for t, _ in terms}

        def signal(i, o):
            c = self.chunks(i)
            w = 1.0
            st, sp = c["source_type"][o], c["symbol_path"][o]
            if st in ("code", "test") and sp is not None:
                sym = set(tokens(sp, SIGNAL_MAX_TOKEN_LEN))
                w *= 1.0 + SYMBOL_BOOST * sum(1 for t in term_set if t in sym)
            if st == "test":
                return w * TEST_WEIGHT
            if st == "doc":
                return w * DOC_WEIGHT
            return w

        ranked = [(cid, s * signal(i, o)) for cid, s, i, o in found]
        ranked.sort(key=lambda x: (-x[1], x[0]))
        best = {}
        for cid, s in ranked:
            p = self.chunks(where[cid][0])["path"][where[cid][1]]
            best[p] = max(best.get(p, s), s)
        ranked = [
            (cid, (1.0 - FILE_CONTEXT) * s
             + FILE_CONTEXT * best[self.chunks(where[cid][0])["path"][where[cid][1]]])
            for cid, s in ranked
        ]
        ranked.sort(key=lambda x: (-x[1], x[0]))

        # A query that is a name: the chunks defining it first.
        named = []
        parts = name_parts(query)
        if parts:
            named = self.definitions(parts)
            for cid in named:
                if cid not in where:
                    loc = self.locate(cid)
                    if loc is not None:
                        where[cid] = loc
            top = max(ranked[0][1] if ranked else 1.0, 1e-9)
            n = float(len(named))
            promoted = [(cid, top * (1.0 + 0.01 * (n - j))) for j, cid in enumerate(named)]
            drop = set(named)
            ranked = promoted + [(cid, s) for cid, s in ranked if cid not in drop]
        named_set = set(named)

        # Rows, whole functions, and the first k.
        hits, widened = [], []
        for cid, score in ranked:
            if len(hits) == k:
                break
            if cid not in where:
                continue
            i, o = where[cid]
            c = self.chunks(i)
            h = {
                "rank": 0,
                "score": score,
                "bundle": self.label,
                "chunk_id": str(cid),
                "path": c["path"][o],
                "start_line": c["start_line"][o],
                "end_line": c["end_line"][o],
                "symbol": c["symbol"][o],
                "symbol_path": c["symbol_path"][o],
                "kind": c["kind"][o],
                "language": c["language"][o],
                "source_type": c["source_type"][o],
                "signature": c["signature"][o],
            }
            whole = self.wholes(i).get(o)
            if whole is not None and cid in named_set and h["symbol_path"] != whole[3]:
                whole = None
            if whole is not None:
                first, last, name, sp, kind = whole
                if h["symbol_path"] != sp:
                    h["signature"] = None
                h.update(start_line=first, end_line=last, symbol=name, symbol_path=sp, kind=kind)
            inside = any(
                hits[j]["path"] == h["path"]
                and hits[j]["start_line"] <= h["start_line"]
                and h["end_line"] <= hits[j]["end_line"]
                for j in widened
            )
            if inside:
                continue
            if whole is not None:
                widened.append(len(hits))
            hits.append(h)
        for r, h in enumerate(hits, 1):
            h["rank"] = r
        return hits

    def definitions(self, parts):
        """Chunk ids of the live definitions a name query names, best first, at most 10."""
        name = parts[-1]
        path = " > ".join(parts)
        single = len(parts) == 1
        rows = []
        for i, seg in enumerate(self.segments):
            cols = ["path", "name", "symbol_path", "start_line", "exported", "chunk_id"]
            s = self._read(seg, "symbols", cols)
            dead = self.dead[i]
            for r in range(len(s["path"])):
                if s["name"][r] != name or s["chunk_id"][r] is None or s["path"][r] in dead:
                    continue
                sp = s["symbol_path"][r]
                if not (sp == path or sp.endswith("> " + path) or single):
                    continue
                exported = True if s["exported"][r] is None else s["exported"][r]
                rows.append((sp != path, not exported, s["path"][r].encode("utf-8"),
                             s["start_line"][r], s["chunk_id"][r]))
        rows.sort(key=lambda x: x[:4])
        out, seen = [], set()
        for row in rows[:10]:
            if row[4] not in seen:
                seen.add(row[4])
                out.append(row[4])
        return out

    # --- file text --------------------------------------------------------------------

    def file_text(self, path):
        """The text of the live file `path` (None: the bundle holds no such live file)."""
        for i in reversed(range(len(self.segments))):
            if path in self.dead[i]:
                continue
            seg = self.segments[i]
            f = self._read(seg, "files", ["path", "tail"], filters=[("path", "=", path)])
            if not f["path"]:
                continue
            c = self._read(seg, "chunks", ["path", "start_byte", "lead", "content"],
                           filters=[("path", "=", path)])
            pieces = sorted(zip(c["start_byte"], c["lead"], c["content"]), key=lambda x: x[0])
            text = "".join((lead or "") + content for _, lead, content in pieces)
            return text + (f["tail"][0] or "")
        return None


# --- show ---------------------------------------------------------------------------------


def visible(s):
    """Control characters (category Cc) but tab written as \\xNN escapes."""
    out = []
    for c in s:
        if c != "\t" and unicodedata.category(c) == "Cc":
            n = ord(c)
            out.append(f"\\x{n:02x}" if n < 0x100 else f"\\u{{{n:x}}}")
        else:
            out.append(c)
    return "".join(out)


def parse_target(s, exists):
    """(path, start, end) of `path[:start[-end]]`, as `trove show` splits it."""
    if ":" not in s:
        return s, None, None
    path, rng = s.rsplit(":", 1)
    if exists(s) or not rng or (not rng[0].isascii() or not rng[0].isdigit()) and not exists(path):
        return s, None, None

    def num(t):
        if not t.isascii() or not t.isdigit() or int(t) < 1:
            raise BundleError(
                f"bad line range {rng!r}: write START or START-END, lines numbered from 1"
            )
        return int(t)

    if "-" in rng:
        a, b = rng.split("-", 1)
        start, end = num(a), num(b)
        if end < start:
            raise BundleError(f"bad line range {rng!r}: the end comes before the start")
    else:
        start, end = num(rng), None
    return path, start, end


def show(bundle, target, raw):
    while target.startswith("./"):
        target = target[2:]
    whole = bundle.file_text(target)
    path, start, end = parse_target(
        target, lambda p: whole is not None if p == target else bundle.file_text(p) is not None
    )
    text = whole if whole is not None else (bundle.file_text(path) if start else None)
    if text is None:
        raise BundleError(f"{path} is not a file of the bundle {bundle.label}")
    out = sys.stdout.buffer
    if raw and start is None:
        out.write(text.encode("utf-8"))
        return
    lines = _split_inclusive(text)
    total = len(lines)
    if start is not None and start > total:
        raise BundleError(f"line {start} is past the end of the file ({total} lines)")
    first = start or 1
    last = min(end or total, total)
    if raw:
        out.write("".join(lines[first - 1 : last]).encode("utf-8"))
        return
    width = len(str(max(total, 1)))
    for n in range(first, last + 1):
        line = lines[n - 1].rstrip("\n\r")
        out.write(f"{n:>{width}}  {visible(line)}\n".encode("utf-8"))


def _split_inclusive(text):
    """Lines ending at each `\\n` (kept); a last line without one; none for an empty text."""
    parts = text.split("\n")
    lines = [p + "\n" for p in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("search", help="BM25 search, as `trove query --mode bm25 --format json`")
    s.add_argument("bundle")
    s.add_argument("query")
    s.add_argument("--limit", "-k", type=int, default=10)
    s.add_argument("--read-format-9", action="store_true")
    w = sub.add_parser("show", help="a file's text, as `trove show`")
    w.add_argument("bundle")
    w.add_argument("path")
    w.add_argument("--raw", action="store_true", help="the stored text, without line numbers")
    w.add_argument("--read-format-9", action="store_true")
    a = ap.parse_args(argv)
    try:
        b = Bundle(a.bundle, a.read_format_9)
        if a.cmd == "search":
            if not a.query.strip():
                raise BundleError("the query text is empty")
            hits = b.search(a.query, a.limit)
            print(json.dumps(hits, indent=2, ensure_ascii=False))
            return 0 if hits else 1
        show(b, a.path, a.raw)
        return 0
    except BundleError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
