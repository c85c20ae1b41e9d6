# Sourced by the scripts here: sets $trove to the binary to measure — $TROVE, else the release
# build in $CARGO_TARGET_DIR or target/ — or exits 2 saying how to get one.
trove=${TROVE:-}
if [ -z "$trove" ]; then
  for c in "${CARGO_TARGET_DIR:-target}/release/trove" target/release/trove; do
    [ -x "$c" ] && trove=$(realpath "$c") && break
  done
fi
[ -x "${trove:-}" ] || { echo "build trove first (cargo build --release) or set TROVE" >&2; exit 2; }
