#!/usr/bin/env bash
# Writes the compatibility bundles of one released bundle format into fixtures/compat/<FORMAT>/,
# ONCE per format: they are committed and never regenerated, so every later trove is tested
# against the bytes an older one wrote (tests/compat.rs).
#
#   scripts/make-compat-fixtures.sh TROVE_BINARY FORMAT     e.g. target/release/trove 1.0
#
# Bundles, all of fixtures/sample-repo: single (one segment), segmented (three segments, with
# tombstones: a change, a deletion, an addition), packed (single as a .trove file), merged (two
# shards merged); and answers.json, what that trove answered on them (the pinned answers).
set -euo pipefail
bin=$(realpath "$1")
format=$2
root=$(cd "$(dirname "$0")/.." && pwd)
out="$root/fixtures/compat/$format"
if [ -e "$out" ]; then
  echo "make-compat-fixtures: $out exists; fixtures of a released format are never regenerated" >&2
  exit 2
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export SOURCE_DATE_EPOCH=1767225600 GIT_AUTHOR_DATE=@1767225600 GIT_COMMITTER_DATE=@1767225600
repo="$work/repo"
cp -r "$root/fixtures/sample-repo" "$repo"
g() { git -C "$repo" -c user.name=trove -c user.email=trove@example.invalid "$@"; }
g init -q -b main && g add -A && g commit -q -m one
mkdir -p "$out"
"$bin" index "$repo" -o "$out/single" --quiet
"$bin" index "$repo" -o "$out/segmented" --quiet
printf '\ndef refund(invoice):\n    return invoice.total * -1\n' >> "$repo/billing/billing.py"
g commit -q -am two
"$bin" index "$repo" -o "$out/segmented" --since auto --no-compact --quiet
g rm -q web/package.json
printf 'def late_fee(days):\n    return days * 5\n' > "$repo/billing/late.py"
g add -A && g commit -q -m three
"$bin" index "$repo" -o "$out/segmented" --since auto --no-compact --quiet
"$bin" pack "$out/single" -o "$out/packed.trove" --quiet
"$bin" index "$repo" -o "$work/s1" --shard 1/2 --quiet
"$bin" index "$repo" -o "$work/s2" --shard 2/2 --quiet
"$bin" merge "$out/merged" "$work/s1" "$work/s2" --quiet
rm -f "$out"/*/.trove-lock "$out"/.*.lock 2>/dev/null || true
python3 "$root/scripts/compat_answers.py" "$bin" "$out" > "$out/answers.json"
echo "wrote $out:"; du -sh "$out"/*
