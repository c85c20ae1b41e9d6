"""What a trove answers on the compatibility bundles of fixtures/compat/<FORMAT>/, as JSON: the
pinned answers every later trove must give on them (tests/compat.rs).

    python3 scripts/compat_answers.py TROVE_BINARY FIXTURE_DIR > FIXTURE_DIR/answers.json

Commands run in FIXTURE_DIR with relative bundle names, so no absolute path is pinned.
"""
import json
import subprocess
import sys

BUNDLES = ["single", "segmented", "packed.trove", "merged"]


def invocations():
    """The pinned invocations, as argument lists after the bundle; the test runs the same."""
    for q in ["charge the customer", "invoice total", "refund", "late fee", "PaymentService"]:
        yield ["query", "{b}", q, "--mode", "bm25", "--format", "json", "--limit", "5"]
    for target in ["billing/billing.py", "billing/billing.py:1-12", "billing/late.py", "README.md"]:
        yield ["show", "{b}", target]
    for name in ["PaymentService", "charge"]:
        yield ["symbols", "{b}", name]
        yield ["refs", "{b}", name]
    yield ["map", "{b}"]


def main():
    binary, fixture = sys.argv[1], sys.argv[2]
    out = {}
    for b in BUNDLES:
        for args in invocations():
            argv = [a.replace("{b}", b) for a in args]
            p = subprocess.run([binary, *argv], cwd=fixture, capture_output=True, text=True)
            out[" ".join(argv)] = {"code": p.returncode, "stdout": p.stdout}
    json.dump(out, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
