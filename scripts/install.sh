#!/usr/bin/env bash
# Installs one version of trove into a directory: the released binary, checked against its sha256,
# or (--source) a build from source. Either way a directory that already holds that version is left
# as it is, so a CI cache keyed by the version makes every run after the first a no-op.
#
# Usage: scripts/install.sh [--sha256 HEX] [--source GIT_URL|DIR] VERSION DIR
#   VERSION        the trove version, e.g. 0.1.0 (release tag vVERSION)
#   DIR            where `trove` goes (created if missing)
#   --sha256 HEX   the tarball's expected sha256; pin it in your CI config so a replaced release
#                  asset is refused (default: the .sha256 file published beside the tarball)
#   --source SRC   build from a git URL (tag vVERSION) or a local checkout with `cargo install`
#                  instead of downloading; the result must report VERSION
# Environment:
#   TROVE_RELEASE_URL   base URL of the releases (default:
#                       https://github.com/$TROVE_GITHUB_REPO/releases/download); the tarball is
#                       $TROVE_RELEASE_URL/vVERSION/trove-VERSION-PLATFORM.tar.gz (file:// works)
#   TROVE_GITHUB_REPO   owner/name of the GitHub repository that publishes the releases
#   TROVE_PLATFORM      linux-x86_64, linux-aarch64 or macos-arm64 (default: from uname)
set -euo pipefail

sha="" source=""
while [ $# -gt 0 ]; do
  case "$1" in
    --sha256) sha=${2:?--sha256 needs a hex digest}; shift 2 ;;
    --source) source=${2:?--source needs a git URL or a directory}; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) echo "install.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
    *) break ;;
  esac
done
[ $# -eq 2 ] || { echo "usage: install.sh [--sha256 HEX] [--source SRC] VERSION DIR" >&2; exit 2; }
version=${1#v} dir=$2

# Already there (a CI cache hit, or a second run): nothing to do.
if [ -x "$dir/trove" ] && "$dir/trove" --version 2>/dev/null | grep -q "^trove $version "; then
  echo "install.sh: trove $version already in $dir" >&2
  exit 0
fi
mkdir -p "$dir"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if [ -n "$source" ]; then
  if [ -d "$source" ]; then
    cargo install --locked --root "$work/root" --path "$source" trove
  else
    cargo install --locked --root "$work/root" --git "$source" --tag "v$version" trove
  fi
  got="$work/root/bin/trove"
else
  platform=${TROVE_PLATFORM:-}
  if [ -z "$platform" ]; then
    case "$(uname -s)-$(uname -m)" in
      Linux-x86_64) platform=linux-x86_64 ;;
      Linux-aarch64 | Linux-arm64) platform=linux-aarch64 ;;
      Darwin-arm64) platform=macos-arm64 ;;
      *) echo "install.sh: no release for $(uname -s) $(uname -m); use --source" >&2; exit 2 ;;
    esac
  fi
  if [ -z "${TROVE_RELEASE_URL:-}" ] && [ -z "${TROVE_GITHUB_REPO:-}" ]; then
    echo "install.sh: say where releases are: TROVE_GITHUB_REPO=owner/name or TROVE_RELEASE_URL=URL" >&2
    exit 2
  fi
  base=${TROVE_RELEASE_URL:-https://github.com/$TROVE_GITHUB_REPO/releases/download}
  name="trove-$version-$platform"
  url="$base/v$version/$name.tar.gz"
  curl -fsSL --retry 3 -o "$work/$name.tar.gz" "$url" || { echo "install.sh: cannot download $url" >&2; exit 2; }
  if [ -z "$sha" ]; then
    curl -fsSL --retry 3 -o "$work/$name.tar.gz.sha256" "$url.sha256" || { echo "install.sh: cannot download $url.sha256" >&2; exit 2; }
    sha=$(awk 'NR == 1 { print $1 }' "$work/$name.tar.gz.sha256")
  fi
  if command -v sha256sum >/dev/null; then
    actual=$(sha256sum "$work/$name.tar.gz" | awk '{ print $1 }')
  else
    actual=$(shasum -a 256 "$work/$name.tar.gz" | awk '{ print $1 }')
  fi
  sha=$(printf '%s' "$sha" | tr 'A-F' 'a-f')
  if [ "$actual" != "$sha" ]; then
    echo "install.sh: $url has sha256 $actual, expected $sha: refusing it" >&2
    exit 2
  fi
  tar -xzf "$work/$name.tar.gz" -C "$work"
  got="$work/$name/trove"
fi

"$got" --version | grep -q "^trove $version " || {
  echo "install.sh: the binary reports '$("$got" --version)', not trove $version" >&2
  exit 2
}
# The model and runtime a release ships beside the binary (share/trove/, lib/libonnxruntime.*),
# where the binary finds them; replaced before the binary, so a new binary never runs with old
# ones. Only trove's own files are touched: DIR may hold other programs' share/ and lib/.
from=$(dirname "$got")
if [ -d "$from/share/trove" ]; then
  mkdir -p "$dir/share"
  rm -rf "$dir/share/.trove.tmp.$$"
  cp -R "$from/share/trove" "$dir/share/.trove.tmp.$$"
  rm -rf "$dir/share/trove"
  mv "$dir/share/.trove.tmp.$$" "$dir/share/trove"
fi
if [ -d "$from/lib" ]; then
  mkdir -p "$dir/lib"
  rm -f "$dir/lib/"libonnxruntime.*
  cp "$from/lib/"libonnxruntime.* "$dir/lib/"
fi
# Atomic within DIR: a cache saved mid-install holds the old binary or the new one.
cp "$got" "$dir/.trove.tmp.$$"
chmod 0755 "$dir/.trove.tmp.$$"
mv -f "$dir/.trove.tmp.$$" "$dir/trove"
echo "install.sh: installed $("$dir/trove" --version) into $dir" >&2
