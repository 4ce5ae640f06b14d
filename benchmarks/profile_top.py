"""Summarise a py-spy collapsed-stack profile (``--format raw``): share of samples by thread, by
function where the sample was taken (self), and by function anywhere on the stack (inclusive).

    python benchmarks/live_scheduler.py --profile /tmp/live.txt
    python benchmarks/profile_top.py /tmp/live.txt --top 25

With ``py-spy --gil`` only the thread holding the GIL is sampled, so the shares are where the
process's Python CPU went.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter
from pathlib import Path


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
