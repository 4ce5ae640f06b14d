#!/usr/bin/env python3
"""Longer fuzzing of every input boundary than the test suite does.

The suite runs each fuzz test on a small fixed (derandomized) set of examples so it stays fast and
stable; this script runs the same tests on many fresh random examples each:

    .venv/bin/python scripts/fuzz.py                 # 2,000 examples per test
    .venv/bin/python scripts/fuzz.py --examples 20000 -k extender

With --live N it runs the live fuzzer instead (harmonic.testing.livefuzz): N random and hostile Pods,
Nodes, PodDisruptionBudgets, PodGroups and ElasticQuotas created through the API while `harmonic run`
and `harmonic extender` run, then judged (exit status 1 if anything was wrong):

    .venv/bin/python scripts/fuzz.py --live 10000 --seed 1
    .venv/bin/python scripts/fuzz.py --live 2000 --kubeconfig admin.kubeconfig   # a real kube-apiserver

Any failure is printed by hypothesis with the smallest input it found; add that input to the test's
table in the suite once fixed.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
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
    parser.add_argument("--live", type=int, metavar="N", help="run the live fuzzer over N objects instead")
    parser.add_argument("--seed", type=int, default=0, help="--live: seed of the object stream (default 0)")
    parser.add_argument(
        "--kubeconfig", help="--live: fuzz the API server of this kubeconfig (default: the API-server double)"
    )
    parser.add_argument("--workdir", type=Path, help="--live: keep the config and logs of the run here")
    parser.add_argument(
        "--settle", type=float, help="--live: seconds to wait for Harmonic to catch up (default 30 + N/100)"
    )
    args = parser.parse_args()
    if args.examples < 1:
        parser.error("--examples must be at least 1")
    if args.live is not None:
        return live(args.live, args.seed, args.kubeconfig, args.workdir, args.settle)
    env = dict(os.environ, HARMONIC_FUZZ_EXAMPLES=str(args.examples))
    select = f"fuzz and ({args.select})" if args.select else "fuzz"
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-k", select, *TESTS]
    return subprocess.call(cmd, cwd=ROOT, env=env)


def live(count: int, seed: int, kubeconfig: str | None, workdir: Path | None, settle: float | None) -> int:
    sys.path.insert(0, str(ROOT))
    from harmonic.testing.livefuzz import LiveFuzz, fuzz_against_double

    started = time.monotonic()

    def progress(line: str) -> None:
        print(f"[{time.monotonic() - started:6.0f} s] {line}", flush=True)

    if kubeconfig is None:
        report = fuzz_against_double(count, seed, workdir, progress, settle)
    else:
        folder = workdir or Path(tempfile.mkdtemp(prefix="harmonic-fuzz-"))
        folder.mkdir(parents=True, exist_ok=True)
        report = LiveFuzz(kubeconfig, folder, seed, progress).run(count, settle)
    print(report.summary())
    print(f"took {time.monotonic() - started:.0f} s")
    return 1 if report.violations else 0


if __name__ == "__main__":
    sys.exit(main())
