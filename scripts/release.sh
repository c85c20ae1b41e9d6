#!/usr/bin/env bash
# Builds a versioned release tarball of trove, with its sha256, and optionally checks it.
#
# Usage: scripts/release.sh [--bin PATH] [--target TRIPLE] [--platform NAME] [--out DIR] [--no-model]
#                           [--check]
#   --bin PATH       package this trove binary (default: build it with `cargo build --release --locked`)
#   --target TRIPLE  cross-build for this rustc target (ignored with --bin)
#   --platform NAME  the platform part of the file name (default: from uname, e.g. linux-x86_64,
#                    linux-aarch64, macos-arm64)
#   --out DIR        where the tarball and its .sha256 go (default: dist/)
#   --no-model       leave out the local embedder's model and ONNX Runtime (a 39 MB tarball
#                    instead of 72 MB; `--embedder local` then needs --model-dir and a runtime)
#   --check          unpack the tarball into a temp dir outside the checkout and run it there,
#                    with a clean environment and no Python on PATH: `trove --version` and
#                    `trove models`, the example job (index, verify, query the bundled example
#                    repository), and — unless --no-model — the same with `--embedder local`
#
# Output: DIR/trove-VERSION-PLATFORM.tar.gz and DIR/trove-VERSION-PLATFORM.tar.gz.sha256
# (`sha256sum -c` format). VERSION is what the binary itself reports. The tarball holds one folder,
# trove-VERSION-PLATFORM/, with the binary, README.md, CHANGELOG.md, the docs/ pages, the
# licences, the nightly script and example/sample-repo, and (unless --no-model) the local
# embedder's model and runtime as scripts/fetch-model.sh lays them out: share/trove/models/
# all-MiniLM-L6-v2/ (int8 ONNX), lib/libonnxruntime.*, share/trove/licenses/. The release workflow
# (.github/workflows/release.yml) runs this per platform.
set -euo pipefail
cd "$(dirname "$0")/.."

bin="" target="" platform="" out=dist check=0 model=1
while [ $# -gt 0 ]; do
  case "$1" in
    --bin) bin=${2:?--bin needs a path}; shift 2 ;;
    --target) target=${2:?--target needs a triple}; shift 2 ;;
    --platform) platform=${2:?--platform needs a name}; shift 2 ;;
    --out) out=${2:?--out needs a directory}; shift 2 ;;
    --check) check=1; shift ;;
    --no-model) model=0; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "release.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done

sha256() { if command -v sha256sum >/dev/null; then sha256sum "$@"; else shasum -a 256 "$@"; fi; }

if [ -z "$bin" ]; then
  cargo build --release --locked ${target:+--target "$target"}
  tdir=${CARGO_TARGET_DIR:-target}
  bin="$tdir/${target:+$target/}release/trove"
fi
[ -x "$bin" ] || { echo "release.sh: no trove binary at $bin" >&2; exit 2; }

if [ -z "$platform" ]; then
  case "${target:-$(uname -s)-$(uname -m)}" in
    *linux*x86_64* | Linux-x86_64) platform=linux-x86_64 ;;
    *aarch64*linux* | Linux-aarch64 | Linux-arm64) platform=linux-aarch64 ;;
    *aarch64*apple* | Darwin-arm64) platform=macos-arm64 ;;
    *x86_64*apple* | Darwin-x86_64) platform=macos-x86_64 ;;
    *) platform=$(uname -s | tr '[:upper:]' '[:lower:]')-$(uname -m) ;;
  esac
fi

# "trove 0.1.0 (commit …, features: …)": the version is the binary's own.
version_line=$("$bin" --version)
version=$(printf '%s\n' "$version_line" | awk 'NR == 1 { print $2 }')
[ -n "$version" ] || { echo "release.sh: '$bin --version' printed no version" >&2; exit 2; }
name="trove-$version-$platform"

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
dir="$stage/$name"
mkdir -p "$dir/example" "$dir/scripts"
cp "$bin" "$dir/trove"
# Symbols are most of the binary's size and nothing a user runs needs them.
if command -v strip >/dev/null; then strip "$dir/trove" 2>/dev/null || true; fi
cp README.md CHANGELOG.md LICENSE-MIT LICENSE-APACHE "$dir/"
cp -R docs "$dir/docs"
cp scripts/nightly-ci.sh scripts/install.sh "$dir/scripts/"
cp -R fixtures/sample-repo "$dir/example/sample-repo"
chmod 0755 "$dir/trove" "$dir/scripts/"*.sh
if [ "$model" = 1 ]; then
  scripts/fetch-model.sh --dest "$dir"
fi

mkdir -p "$out"
tarball="$out/$name.tar.gz"
# Reproducible where GNU tar is at hand: sorted names, fixed owner and times, no gzip timestamp.
epoch=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || echo 0)}
gtar=$(command -v gtar || command -v tar)
if "$gtar" --version 2>/dev/null | grep -q 'GNU tar'; then
  "$gtar" -C "$stage" --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$epoch" -cf - "$name" | gzip -n -9 >"$tarball"
else
  "$gtar" -C "$stage" -cf - "$name" | gzip -n -9 >"$tarball"
fi
(cd "$out" && sha256 "$name.tar.gz" >"$name.tar.gz.sha256")
bytes=$(wc -c <"$tarball" | tr -d ' ')
echo "release.sh: $tarball, $((bytes / 1000000)) MB ($(printf '%s\n' "$version_line" | head -n 1))" >&2

if [ "$check" = 1 ]; then
  t=$(mktemp -d)
  trap 'rm -rf "$stage" "$t"' EXIT
  cp "$tarball" "$tarball.sha256" "$t/"
  (
    cd "$t"
    sha256 -c "$name.tar.gz.sha256" >/dev/null
    tar -xzf "$name.tar.gz"
    cd "$name"
    # A clean environment: nothing from the checkout or the build reaches the run, and PATH is
    # an empty folder: no Python (nor anything else) to fall back on.
    mkdir -p "$t/empty-path"
    run() { env -i HOME="$t/home" PATH="$t/empty-path" TROVE_CACHE_DIR="$t/cache" "$@"; }
    run ./trove --version >"$t/version.out"
    grep -q "^trove $version " "$t/version.out" || { echo "release.sh: unpacked trove reports another version" >&2; exit 1; }
    run ./trove models
    run ./trove index example/sample-repo -o "$t/sample.bundle" --quiet
    run ./trove verify "$t/sample.bundle" >/dev/null
    run ./trove query "$t/sample.bundle" "how is an invoice charged" -k 3
    if [ "$model" = 1 ]; then
      run ./trove models >"$t/models.out"
      grep -q "all-MiniLM-L6-v2 (int8)" "$t/models.out" || { echo "release.sh: trove models does not list the shipped model" >&2; exit 1; }
      grep -q "onnxruntime .*shipped beside trove" "$t/models.out" || { echo "release.sh: trove models does not find the shipped runtime" >&2; exit 1; }
      run ./trove index example/sample-repo -o "$t/semantic.bundle" --embedder local --quiet
      # The tarball has no model.safetensors, so candle cannot have run it: ONNX Runtime did.
      run ./trove inspect "$t/semantic.bundle" >"$t/inspect.out"
      grep -q "^embedder *local " "$t/inspect.out" || { echo "release.sh: the semantic bundle is not a local embedder's" >&2; cat "$t/inspect.out" >&2; exit 1; }
      run ./trove query "$t/semantic.bundle" "how is an invoice charged" -k 3 | tee "$t/semantic.out"
      grep -q "billing/" "$t/semantic.out" || { echo "release.sh: the semantic query did not find billing/" >&2; exit 1; }
    fi
  )
  echo "release.sh: checked $name: --version, models, index, verify and query ran from $t$([ "$model" = 1 ] && echo ', with --embedder local too')" >&2
fi
echo "$tarball"
