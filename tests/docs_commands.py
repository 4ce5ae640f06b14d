"""The fenced shell commands of README.md and docs/*.md, as a reader would copy them.

A block fenced as ``sh``, ``bash``, ``shell`` or ``console`` is a script: its lines, with ``\\``
continuations and quoted strings that span lines joined, comment-only and blank lines dropped (a ``$`` prompt, in ``console`` blocks, is
removed). ``tests/test_docs_commands.py`` runs them.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHELL_FENCES = {"sh", "bash", "shell", "console"}
_FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*([\w+-]*)")


@dataclass(frozen=True)
class Block:
    """One fenced shell block: where it is and its commands, in order."""

    file: str  # relative to the repository
    line: int  # of the opening fence, 1-based
    commands: tuple[str, ...]

    @property
    def id(self) -> str:
        return f"{self.file}:{self.line}"


def documents() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def shell_blocks(path: Path) -> list[Block]:
    """Every shell block of a Markdown file."""
    out: list[Block] = []
    fence: str | None = None
    lang = ""
    start = 0
    body: list[str] = []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        m = _FENCE.match(line)
        if fence is None:
            if m:
                fence, lang, start, body = m.group(2), m.group(3).lower(), number, []
            continue
        if m and m.group(2).startswith(fence) and not m.group(3):
            if lang in SHELL_FENCES:
                commands = _commands(body)
                if commands:
                    out.append(Block(str(path.relative_to(ROOT)), start, commands))
            fence = None
            continue
        body.append(line)
    return out


def _commands(lines: list[str]) -> tuple[str, ...]:
    commands: list[str] = []
    pending = ""
    for raw in lines:
        line = raw.rstrip()
        if not pending:
            line = line.strip().removeprefix("$ ")
            if not line or line.startswith("#"):
                continue
        if line.endswith("\\"):
            pending += line[:-1].rstrip() + " "
            continue
        command = (pending + line.strip()).strip()
        if not _complete(command):  # a quoted string goes on over the next line, as in a shell
            pending = command + "\n"
            continue
        commands.append(command)
        pending = ""
    if pending:
        commands.append(pending.strip())
    return tuple(commands)


def _complete(command: str) -> bool:
    try:
        shlex.split(command, comments=True)
    except ValueError:
        return False
    return True


def all_blocks() -> list[Block]:
    return [b for path in documents() for b in shell_blocks(path)]
