"""Every subcommand, given arguments drawn by hypothesis from its own parameters (files that are
missing, empty, directories, not YAML, binary; numbers out of range; odd strings), exits with a usage
or error message, or succeeds: never a Python traceback. ``run`` and ``extender`` always get a broken
kubeconfig so a valid combination exits instead of serving."""

from __future__ import annotations

from pathlib import Path

import click
import pytest
import yaml
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from harmonic.cli import main
from tests.fuzzing import NASTY, fuzz_settings
from tests.sim.helpers import objects, scenario

TEXTS = [str(v) for v in NASTY if isinstance(v, str | int | float) and not isinstance(v, bool)]
TEXTS += [
    "-1",
    "0",
    "65536",
    "1e999",
    "10m",
    "http://127.0.0.1:1",
    "ftp://x",
    "default/web",
    "online-boutique",
]
FILES = [
    "missing.yaml",
    "empty.yaml",
    "list.yaml",
    "broken.yaml",
    "binary.bin",
    "folder",
    "config.yaml",
    "tiny.yaml",
]
BROKEN_KUBECONFIGS = [f for f in FILES if f != "tiny.yaml"]


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("cli")
    (d / "empty.yaml").write_text("")
    (d / "list.yaml").write_text("- a\n- b\n")
    (d / "broken.yaml").write_text("a: [\n  b: {\n")
    (d / "binary.bin").write_bytes(b"\xff\xfe\x00\x81garbage")
    (d / "folder").mkdir()
    (d / "config.yaml").write_text("leaderElection: {leaderElect: false}\n")
    (d / "tiny.yaml").write_text(
        yaml.safe_dump(scenario([objects()], nodes=1, duration=60) | {"workloads": []})
    )
    return d


def _values(param: click.Parameter) -> st.SearchStrategy[str]:
    kind = param.type
    if isinstance(param, click.Option) and param.name == "kubeconfig":
        return st.sampled_from(BROKEN_KUBECONFIGS)
    if isinstance(kind, click.Path):
        return st.sampled_from(FILES)
    if isinstance(kind, click.Choice):
        return st.one_of(st.sampled_from([str(c) for c in kind.choices]), st.sampled_from(TEXTS))
    return st.one_of(st.sampled_from(TEXTS), st.text(max_size=12))


def _commands(
    group: click.Group, prefix: tuple[str, ...] = ()
) -> list[tuple[tuple[str, ...], click.Command]]:
    out = []
    for name, cmd in sorted(group.commands.items()):
        if isinstance(cmd, click.Group):
            out += _commands(cmd, (*prefix, name))
        else:
            out.append(((*prefix, name), cmd))
    return out


COMMANDS = _commands(main)  # type: ignore[arg-type]


@st.composite
def _argv(draw: st.DrawFn) -> list[str]:
    path, cmd = draw(st.sampled_from(COMMANDS))
    argv = list(path)
    for param in cmd.params:
        if param.name == "help":
            continue
        must = (
            isinstance(param, click.Option) and param.name == "kubeconfig" and path[0] in ("run", "extender")
        )
        if not must and not draw(st.booleans()):
            continue
        if isinstance(param, click.Argument):
            argv.append(draw(st.sampled_from(FILES)))
        elif isinstance(param, click.Option) and param.is_flag:
            argv.append(param.opts[0])
        elif isinstance(param, click.Option):
            argv += [param.opts[0], draw(_values(param))]
    if path[0] == "simulate" and not any(a in FILES for a in argv[1:2]):
        argv.insert(1, "tiny.yaml")  # never the bundled scenario: it takes seconds
    return argv


@fuzz_settings(80)
@given(argv=_argv())
def test_fuzz_cli_never_prints_a_traceback(files, argv, monkeypatch):
    monkeypatch.chdir(files)
    monkeypatch.setenv("KUBECONFIG", str(files / "missing.yaml"))
    result = CliRunner().invoke(main, argv, catch_exceptions=True)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise AssertionError(
            f"harmonic {' '.join(argv)}: {result.exception!r}\n{result.output}"
        ) from result.exception
    assert "Traceback" not in result.output
    if result.exit_code != 0:
        assert result.output.strip(), argv
