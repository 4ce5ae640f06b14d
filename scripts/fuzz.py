#!/usr/bin/env python3
"""Longer fuzzing of every input boundary than the test suite does.

The suite runs each fuzz test on a small fixed (derandomized) set of examples so it stays fast and
stable; this script runs the same tests on many fresh random examples each:

    .venv/bin/python scripts/fuzz.py                 # 2,000 examples per test
    .venv/bin/python scripts/fuzz.py --examples 20000 -k extender

Any failure is printed by hypothesis with the smallest input it found; add that input to the test's
table in the suite once fixed.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: The fuzz tests, one per input boundary.
TESTS = [
    "tests/sim/test_fuzz.py",  # scenario files, manifests, topology and trace files
    "tests/framework/test_config_fuzz.py",  # KubeSchedulerConfiguration
    "tests/extender/test_fuzz.py",  # extender request bodies over HTTP
    "tests/cluster/test_kubeconfig.py",  # kubeconfig
    "tests/test_cli_fuzz.py",  # CLI arguments
]


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--examples", type=int, default=2000, help="examples per fuzz test (default 2000)")
    parser.add_argument("-k", dest="select", default="", help="pytest -k expression to run some tests only")
    args = parser.parse_args()
    if args.examples < 1:
        parser.error("--examples must be at least 1")
    env = dict(os.environ, HARMONIC_FUZZ_EXAMPLES=str(args.examples))
    select = f"fuzz and ({args.select})" if args.select else "fuzz"
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-k", select, *TESTS]
    return subprocess.call(cmd, cwd=ROOT, env=env)


if __name__ == "__main__":
    sys.exit(main())
