"""The report folder of ``harmonic simulate --out``: checked before a run, so a simulation of minutes
is not lost to a folder it cannot write."""

from __future__ import annotations

import tempfile
from pathlib import Path


class OutDirError(ValueError):
    """The folder cannot hold the report; the message names it and says why."""


def check_writable(out_dir: str | Path) -> Path:
    """Create ``out_dir`` if needed and prove a file can be written in it (a probe file, removed at
    once: permission bits alone do not tell, e.g. for root or a read-only mount). Raises OutDirError."""
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise OutDirError(f"--out {out}: exists and is not a folder")
    try:
        out.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=out, prefix=".harmonic-probe-"):
            pass
    except OSError as e:
        raise OutDirError(f"--out {out}: cannot write there: {e.strerror or e}") from None
    return out
