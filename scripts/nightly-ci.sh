#!/usr/bin/env bash
# Nightly CI job for trove: restore yesterday's bundle, index only what changed since its commit,
# verify, pack, and publish — the job of docs/ci.md ("Nightly CI").
#
# Usage: scripts/nightly-ci.sh REPO PUBLISH_DIR
#   REPO         a git checkout with enough history to reach yesterday's commit
#                (GitHub Actions: actions/checkout with fetch-depth: 0)
#   PUBLISH_DIR  where bundles are published (a mounted share, a synced bucket, an artifact dir);
#                yesterday's REPO_NAME.trove is read from here and today's replaces it, and the
#                bundle directory REPO_NAME/ beside it is brought up to today's with `trove sync`
#                (only the new segments are written), for consumers that `trove sync` from it
# Environment:
#   TROVE             the trove binary to use (default: trove on PATH, or the one TROVE_VERSION installs)
#   TROVE_VERSION     install this released version first with scripts/install.sh, into
#                     TROVE_BIN_CACHE/VERSION (default ~/.cache/trove-bin/VERSION): cache that folder
#                     keyed by the version and only the first night downloads (or compiles) anything
#   TROVE_SHA256      the release tarball's sha256, pinned (default: the published .sha256)
#   TROVE_SOURCE      build that version from this git URL or checkout instead of downloading it
#   TROVE_GITHUB_REPO / TROVE_RELEASE_URL   where releases are published (see scripts/install.sh)
#   TROVE_INDEX_ARGS  extra index flags
#
# The first night (nothing published yet) is a full build; after that `--since auto` re-processes only
# the files changed since the commit stamped in the bundle, and carries everything else over. If the
# history was rewritten, the config changed or the old bundle is damaged, trove says so and this job
# falls back to a full build rather than publishing nothing.
set -euo pipefail

repo=${1:?usage: nightly-ci.sh REPO PUBLISH_DIR}
publish=${2:?usage: nightly-ci.sh REPO PUBLISH_DIR}
trove=${TROVE:-trove}
if [ -z "${TROVE:-}" ] && [ -n "${TROVE_VERSION:-}" ]; then
  bin_dir="${TROVE_BIN_CACHE:-$HOME/.cache/trove-bin}/${TROVE_VERSION#v}"
  "$(dirname "$0")/install.sh" ${TROVE_SHA256:+--sha256 "$TROVE_SHA256"} \
    ${TROVE_SOURCE:+--source "$TROVE_SOURCE"} "$TROVE_VERSION" "$bin_dir"
  trove="$bin_dir/trove"
fi
"$trove" --version >&2
name=$(basename "$(cd "$repo" && pwd)")
latest="$publish/$name.trove"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
bundle="$work/$name.bundle"

# 1. Restore yesterday's bundle (checked entry by entry and by sha256 while unpacking).
if [ -f "$latest" ]; then
  "$trove" unpack "$latest" -o "$bundle" --quiet || {
    echo "nightly: yesterday's bundle is unusable; building in full" >&2
    rm -rf "$bundle"
  }
fi

# 2. Index what changed since the bundle's commit (a full build when there is no bundle yet).
# shellcheck disable=SC2086
if ! "$trove" index "$repo" -o "$bundle" --since auto ${TROVE_INDEX_ARGS:-}; then
  echo "nightly: incremental run refused (see above); building in full" >&2
  rm -rf "$bundle"
  # shellcheck disable=SC2086
  "$trove" index "$repo" -o "$bundle" ${TROVE_INDEX_ARGS:-}
fi

# 3. Verify every table against the manifest before anything is shipped.
"$trove" verify "$bundle"

# 4. Pack and publish atomically: readers see yesterday's file or today's, never half of one.
"$trove" pack "$bundle" -o "$work/$name.trove"
mkdir -p "$publish"
cp "$work/$name.trove" "$publish/.$name.trove.tmp"
mv -f "$publish/.$name.trove.tmp" "$latest"
# 5. The bundle directory for `trove sync` consumers: new segments and the manifest are added, the
#    whole swapped in at once (a consumer mid-sync sees a file vanish and simply tries again later).
"$trove" sync "$bundle" "$publish/$name" --quiet
echo "nightly: published $latest and $publish/$name/" >&2
