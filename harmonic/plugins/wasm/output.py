"""A WASI guest's stdout and stderr, kept so a failed call's error can carry what the guest printed.

Each stream goes to an unlinked temporary file that wasmtime writes and the host reads by position:
``mark`` notes where the streams end before a call, ``since_mark`` reads what the call added.
(wasmtime-py's in-process output callbacks run on wasmtime's own threads and can abort the process
when it exits, so files it is.) wasmtime writes at its own offset, so a file that has grown large is
truncated to a sparse one rather than reset: later writes land past the hole and are read from the
mark as before.
"""

from __future__ import annotations

import os
import tempfile
import weakref

import wasmtime

#: The most output appended to an error.
MAX_BYTES = 8192
#: A stream file is emptied (made sparse) past this size.
TRUNCATE_AT = 1 << 20


class GuestOutput:
    """The two output files of one store."""

    def __init__(self, wasi: wasmtime.WasiConfig) -> None:
        self._fds: list[int] = []
        for which in ("stdout", "stderr"):
            fd, path = tempfile.mkstemp(prefix=f"harmonic-wasm-{which}-")
            try:
                setattr(wasi, f"{which}_file", path)
            finally:
                os.unlink(path)
            self._fds.append(fd)
        self._marks = [0, 0]
        weakref.finalize(self, _close, list(self._fds))

    def mark(self) -> None:
        for i, fd in enumerate(self._fds):
            size = os.fstat(fd).st_size
            if size > TRUNCATE_AT:
                os.ftruncate(fd, 0)
            self._marks[i] = size

    def since_mark(self) -> str:
        """What the guest wrote since ``mark`` (stdout, then stderr), at most ``MAX_BYTES``."""
        out = b""
        for fd, start in zip(self._fds, self._marks, strict=True):
            out += os.pread(fd, MAX_BYTES, start)
        return out[:MAX_BYTES].replace(b"\0", b"").decode(errors="replace").strip()


def _close(fds: list[int]) -> None:
    for fd in fds:
        os.close(fd)
