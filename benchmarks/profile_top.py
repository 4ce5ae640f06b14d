"""Summarise a py-spy collapsed-stack profile (``--format raw``): share of samples by thread, by
function where the sample was taken (self), and by function anywhere on the stack (inclusive).

    python benchmarks/live_scheduler.py --profile /tmp/live.txt
    python benchmarks/profile_top.py /tmp/live.txt --top 25

With ``py-spy --gil`` only the thread holding the GIL is sampled, so the shares are where the
process's Python CPU went. ``start_profiler`` is how the benchmarks start py-spy (``--profile``).
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path


def py_spy() -> str:
    """The py-spy executable (on PATH or beside this interpreter); exits with a hint when missing."""
    spy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    if not Path(spy).exists():
        raise SystemExit("--profile needs py-spy: pip install -e '.[profile]'")
    return spy


def start_profiler(pid: int, out: str) -> subprocess.Popen[bytes]:
    """py-spy sampling process ``pid`` (only threads holding the GIL), collapsed stacks to ``out``;
    stop it with SIGINT, then summarise ``out`` with this script."""
    cmd = [py_spy(), "record", "--pid", str(pid), "--threads", "--gil", "--format", "raw", "-r", "200"]
    proc = subprocess.Popen([*cmd, "-o", out], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    time.sleep(1.0)  # let it attach before the measured window opens
    return proc


def summarise(lines: list[str]) -> tuple[int, Counter[str], Counter[str], Counter[str]]:
    threads: Counter[str] = Counter()
    own: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    total = 0
    for line in lines:
        line = line.rstrip()
        if not line:
            continue
        stack, count = line.rsplit(" ", 1)
        n = int(count)
        frames = stack.split(";")
        # "thread (tid): bind_7" -> "bind_N": pool threads are one row
        threads[re.sub(r"_\d+$", "_N", frames[0].split(": ", 1)[-1])] += n
        total += n
        funcs = [re.sub(r":\d+\)$", ")", f) for f in frames[1:]]
        if funcs:
            own[funcs[-1]] += n
        for f in set(funcs):
            inclusive[f] += n
    return total, threads, own, inclusive


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("profile")
    ap.add_argument("--top", type=int, default=20)
    args = ap.parse_args()
    total, threads, own, inclusive = summarise(Path(args.profile).read_text().splitlines())
    if not total:
        print("no samples")
        return 1
    print(f"{total} samples")
    for title, counter in (("by thread", threads), ("self", own), ("inclusive", inclusive)):
        print(f"{title}:")
        for name, n in counter.most_common(args.top):
            print(f"  {n / total:6.1%}  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
