#!/usr/bin/env bash
# Compiles each crate of the workspace alone, with the features it has on its own — what a
# workspace build hides: a crate that compiles only because another crate turns a feature on —,
# the format crate without its default features (no HTTP), and the fuzz targets (their own
# workspace, built without the engine). Run by .ci/run after the tests.
#
# Usage: scripts/check-crates.sh
#
# The crates below the engine are type-checked (`cargo check`). trove-query and trove-service are
# not compiled alone: alone, DuckDB's build script gets its build dependencies with other features
# than in the workspace and compiles DuckDB's C++ a second time (~35 min on 2 cores, measured), in
# check mode as in build mode; the workspace build and the tests compile them with everything they
# stand on. The fuzz targets are checked with
# RUSTC_BOOTSTRAP=1 (cargo-fuzz's nightly flags are not needed to type-check them).
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"
export CARGO_TERM_COLOR=never
step() { echo "check-crates: $*" >&2; "$@"; }
for c in trove-base trove-bundle trove-lang trove-embed trove-index; do
  step cargo check --release --locked -p "$c" --lib
done
step cargo check --release --locked -p trove-base --lib --no-default-features
step cargo check --release --locked -p trove-bundle --lib --no-default-features
RUSTC_BOOTSTRAP=1 step cargo check --release --manifest-path fuzz/Cargo.toml --bins
echo "check-crates: the crates below the engine compile alone, the format crate without default features, and the fuzz targets" >&2
