"""The system's Chromium for the browser tests (installed by scripts/test-deps.sh)."""

from __future__ import annotations

import os
import shutil

import pytest


def chromium() -> str:
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is not installed: `make test` installs it (scripts/test-deps.sh)")
        pytest.skip("chromium is not installed and could not be (run scripts/test-deps.sh as root)")
    return exe
