"""Child processes that cannot outlive the test run: each in its own process group (stopped as a group,
SIGTERM then SIGKILL), and on Linux killed by the kernel if the thread that started them dies, so a
test process killed outright (SIGKILL, an OOM kill) leaves no etcd or kube-apiserver behind."""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

_PR_SET_PDEATHSIG = 1


def _death_signal() -> Callable[[], None] | None:
    if not sys.platform.startswith("linux"):
        return None
    libc = ctypes.CDLL(None, use_errno=True)  # loaded before fork: the child only makes the call
    parent = os.getpid()

    def arm() -> None:
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != parent:  # the parent died before prctl took effect
            os._exit(1)

    return arm


class Process:
    """One long-running binary, its output appended to ``log``."""

    def __init__(self, name: str, argv: Sequence[str], log: Path) -> None:
        self.name, self.argv, self.log = name, list(argv), log
        self.popen: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with self.log.open("ab") as out:
            self.popen = subprocess.Popen(
                self.argv,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=_death_signal(),
            )

    def alive(self) -> bool:
        return self.popen is not None and self.popen.poll() is None

    def stop(self, grace: float = 20.0) -> None:
        """SIGTERM the process group, SIGKILL it after ``grace`` seconds; idempotent."""
        p = self.popen
        if p is None:
            return
        for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 10.0)):
            if p.poll() is not None:
                break
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, sig)
            with contextlib.suppress(subprocess.TimeoutExpired):
                p.wait(wait)
        self.popen = None

    def tail(self, lines: int = 20) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""
