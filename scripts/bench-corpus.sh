#!/usr/bin/env bash
# Assembles the benchmark corpus in DIR from package registries only, as a git repository.
#
# Fetches every package pinned in scripts/bench-corpus.manifest (crates through `cargo vendor`, Python
# sdists from PyPI, npm tarballs, Debian Go -dev packages), then commits it in four steps — Rust,
# Python, JavaScript/TypeScript, Go — so `--since HEAD~1` style runs have history to diff. About
# 30k+ files and 300+ MB of source; needs network to the registries and ~1 GB of disk. Idempotent:
# packages already in DIR are not fetched again; an existing repository is left as it is.
#
# Usage: scripts/bench-corpus.sh DIR [MANIFEST]
# Never commit the corpus into this repository.
set -euo pipefail

[ $# -ge 1 ] || { echo "usage: bench-corpus.sh DIR [MANIFEST]" >&2; exit 2; }
manifest=${2:-$(dirname "$0")/bench-corpus.manifest}
manifest=$(cd "$(dirname "$manifest")" && pwd)/$(basename "$manifest")
mkdir -p "$1"; out=$(cd "$1" && pwd)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
if [ -d "$out/.git" ]; then echo "$out is already a repository; left as it is" >&2; exit 0; fi

# The URL of NAME's VERSION source distribution, from PyPI's JSON simple index.
sdist_url() {
  python3 - "$1" "$2" <<'EOF'
import json, re, sys, urllib.request
name, ver = sys.argv[1], sys.argv[2]
req = urllib.request.Request(f"https://pypi.org/simple/{name}/",
                             headers={"Accept": "application/vnd.pypi.simple.v1+json"})
files = json.load(urllib.request.urlopen(req, timeout=120))["files"]
norm = lambda s: re.sub(r"[-_.]+", "_", s).lower()
for f in files:
    n = f["filename"]
    if n.endswith(".tar.gz") and norm(n[:-7]) == norm(f"{name}-{ver}"):
        print(f["url"]); break
else:
    sys.exit(f"no sdist for {name} {ver} on PyPI")
EOF
}

# Crates first, in one `cargo vendor` (one dependency table per crate, renamed so versions never clash).
crates=$(awk '$1 == "crate" { print }' "$manifest")
if [ -n "$crates" ]; then
  need=$(echo "$crates" | while read -r _ name version dir; do [ -d "$out/$dir" ] || echo "$name $version $dir"; done)
  if [ -n "$need" ]; then
    mkdir -p "$tmp/v/src"; touch "$tmp/v/src/lib.rs"
    { printf '[package]\nname = "corpus"\nversion = "0.0.0"\nedition = "2021"\n[dependencies]\n'
      i=0; echo "$need" | while read -r name version _; do i=$((i+1)); printf 'c%d = { package = "%s", version = "=%s" }\n' "$i" "$name" "$version"; done
    } > "$tmp/v/Cargo.toml"
    echo "vendoring $(echo "$need" | wc -l) crates ..." >&2
    (cd "$tmp/v" && cargo vendor -q --versioned-dirs vendor >/dev/null)
    echo "$need" | while read -r name version dir; do
      mkdir -p "$(dirname "$out/$dir")"; mv "$tmp/v/vendor/$name-$version" "$out/$dir"
      echo "fetched crate $name $version -> $dir" >&2
    done
  fi
fi

while read -r kind name version dir; do
  [[ -z "${kind:-}" || "$kind" == \#* || "$kind" == crate ]] && continue
  [ -d "$out/$dir" ] && continue
  w="$tmp/$kind-$(basename "$dir")"; mkdir -p "$w" "$(dirname "$out/$dir")"
  case "$kind" in
    pypi)
      curl -fsSL --retry 3 -o "$w/sdist.tar.gz" "$(sdist_url "$name" "$version")"
      tar xzf "$w/sdist.tar.gz" -C "$w"; rm "$w/sdist.tar.gz"
      mv "$w"/*/ "$out/$dir" ;;
    npm)
      (cd "$w" && npm pack --silent "$name@$version" >/dev/null 2>&1)
      tar xzf "$w"/*.tgz -C "$w"; mv "$w/package" "$out/$dir" ;;
    deb)
      (cd "$w" && { apt-get download -q "$name=$version" >/dev/null 2>&1 || apt-get download -q "$name" >/dev/null 2>&1; })
      dpkg-deb -x "$w"/*.deb "$w/x"
      mv "$w/x/usr/share/gocode/src" "$out/$dir" ;;
    *) echo "unknown kind in $manifest: $kind" >&2; exit 2 ;;
  esac
  echo "fetched $kind $name $version -> $dir" >&2
done < "$manifest"

# History: one commit per language group. Vendored packages carry their own ignore files and
# build outputs may be ignored by them; commit everything (-f) so the tree is the corpus.
g() { git -C "$out" -c user.name=bench -c user.email=bench@example.com -c core.autocrlf=false "$@"; }
g init -q
for group in rust python js go; do
  [ -d "$out/$group" ] || continue
  g add -A -f "$group" 2> >(grep -v "^warning: in the working copy" >&2)
  g commit -q -m "corpus: $group"
done
files=$(g ls-files | wc -l)
bytes=$(g ls-files -z | (cd "$out" && xargs -0 stat -c %s) | awk '{ s += $1 } END { print s }')
echo "corpus: $out  files=$files  bytes=$bytes ($((bytes / 1048576)) MiB)  commits=$(g rev-list --count HEAD)"
