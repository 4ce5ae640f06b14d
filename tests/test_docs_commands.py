"""Every fenced shell command of README.md and docs/*.md runs as written (issue 36).

Each block is run as a reader would paste it, top to bottom, from a folder that looks like a fresh
checkout (the repository's top-level entries linked into a temporary folder, so whatever a command
writes lands there), with this environment's ``harmonic`` and ``python`` first on ``PATH`` and a home
whose ``~/.kube/config`` points at the API-server double (``harmonic.testing.apiserver``), a real
HTTP kube-apiserver stand-in holding two nodes.

The only liberties taken, all listed here:

- Long-running commands (``harmonic run``, ``extender``, ``ui``) are started in the background,
  probed until they answer, left running for the rest of their block (so a later ``curl`` or
  ``harmonic model`` finds them), then stopped with SIGTERM, which must end them cleanly.
- The documented ports (10259, 8888, 8765) are swapped for free ones throughout a block, so blocks
  run in parallel and beside other servers; a default port the command relies on is passed explicitly.
- Slow commands run smaller (``SMALLER``), and the benchmarks that sweep whole scenarios over seeds
  have their arguments parsed by their own parser but are not run (``PARSE_ONLY``): the options, values
  and files they name are checked, the minutes of simulation are not spent.
- ``SKIPPED`` lists what cannot run here at all, with the reason.
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from harmonic.testing import node
from harmonic.testing.apiserver import ApiServerDouble

from .docs_commands import ROOT, Block, all_blocks

BIN = Path(sys.executable).parent
#: Generous bounds, for a machine shared with other jobs: the commands take seconds when it is not.
COMMAND_TIMEOUT = 900.0
READY_TIMEOUT = 180.0

#: Commands that cannot run in the test environment, by a pattern they match, and why.
SKIPPED: dict[str, str] = {
    r"^make test\b": "it is this test suite (CI runs it through .ci/run)",
    r"^harmonic simulate\s*(#|$)": "it is what `make simulate` runs (README's quick start), run there",
    r"--executor ray\b": "Ray is the harmonic[ray] extra, not installed with the dev dependencies",
    r"--config examples/harmony-ablation\.yaml --config": "fourteen profiles on the bundled scenario, minutes of "
    "CPU even at one seed; the same sweep runs on a small scenario (docs/simulator.md) and "
    "test_the_skipped_ablation_profiles_load loads every profile",
    r"scripts/fuzz\.py --live\b": "a live fuzzing run of thousands of objects (the second against a real "
    "kube-apiserver's admin kubeconfig); tests/cluster/test_live_fuzz.py runs the live fuzzer at a small size",
    r"^kubectl apply\b": "needs a real cluster (RBAC, Deployments, Services: more than the double serves); "
    "tests/deploy/test_manifests.py validates every manifest of deploy/ against Kubernetes' schemas",
}

#: Benchmarks that replay whole scenarios under several profiles and seeds (minutes each even at one
#: seed): their arguments are parsed by the script's own argparse parser and the files they name must
#: exist, but they are not run. Their logic is tested at a small size by the test named.
PARSE_ONLY: dict[str, str] = {
    "benchmarks/feedback.py": "tests/test_feedback_benchmark.py",
    "benchmarks/feedback_sensitive.py": "tests/feedback/ (the scenario examples/feedback/sensitive.yaml)",
    "benchmarks/feedback_moves.py": "tests/test_feedback_moves.py",
    "benchmarks/rightsizing.py": "tests/feedback/test_rightsizing*.py",
    "benchmarks/harmony_claims.py": "tests/test_harmony_claims.py",
    "benchmarks/harmony_ceiling.py": "tests/test_harmony_ceiling.py",
    "benchmarks/harmony_random.py": "tests/test_harmony_random.py",
}

#: Slow commands run smaller: (pattern, replacement) applied in order; a replacement that is a flag
#: list starting with " --" is appended when the pattern matches.
SMALLER: list[tuple[str, str]] = [
    (r"--seeds \S+", "--seeds 1"),
    (r"--nodes \d+", "--nodes 100"),
    (r"--init-pods \d+", "--init-pods 50"),
    (r"--pods \d+", "--pods 200"),
]
#: Benchmarks whose default size is large, given a small one when the command names none.
SMALL_DEFAULTS: dict[str, str] = {
    "benchmarks/scheduler_perf.py": "--nodes 100 --init-pods 50 --pods 200",
    "benchmarks/load_aware_perf.py": "--nodes 100 --init-pods 50 --pods 200",
    "benchmarks/simulate.py": "--nodes 60 --pods 600",
}

#: Long-running subcommands: how to tell they are up.
SERVERS = {"run": "/readyz", "extender": "/readyz", "ui": "/"}
#: How each may end on SIGTERM. run and extender finish in-flight work and exit 0 (as the kubelet's
#: SIGTERM wants); ui, a local tool with nothing in flight, may die of the signal.
CLEAN_EXITS = {"run": {0}, "extender": {0}, "ui": {0, -signal.SIGTERM}}
#: Each server's documented default port, and the flag that sets it.
DEFAULT_PORTS = {"run": ("--metrics-port", 10259), "extender": ("--port", 8888), "ui": ("--port", 8765)}
DOCUMENTED_PORTS = (10259, 8888, 8765)

BLOCKS = all_blocks()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def api() -> Iterator[ApiServerDouble]:
    with ApiServerDouble() as server:
        for name in ("node-a", "node-b"):
            server.create("nodes", node(name).obj())
        yield server


@pytest.fixture
def checkout(tmp_path: Path, api: ApiServerDouble) -> tuple[Path, dict[str, str]]:
    """(a folder that looks like the checkout, the environment to run commands in)."""
    work = tmp_path / "checkout"
    work.mkdir()
    for entry in ROOT.iterdir():
        if entry.name not in {".git", "harmonic-report", "report"}:
            (work / entry.name).symlink_to(entry)
    home = tmp_path / "home"
    (home / ".kube").mkdir(parents=True)
    api.kubeconfig(home / ".kube" / "config")
    env = {k: v for k, v in os.environ.items() if k not in {"KUBECONFIG", "PYTHONPATH"}}
    env |= {"HOME": str(home), "PATH": f"{BIN}{os.pathsep}{env.get('PATH', '')}", "NO_COLOR": "1"}
    return work, env


def _skip_reason(command: str) -> str | None:
    return next((why for pattern, why in SKIPPED.items() if re.search(pattern, command)), None)


def _argv(command: str) -> list[str]:
    return shlex.split(command, comments=True)


def _subcommand(argv: list[str]) -> str | None:
    if argv and Path(argv[0]).name == "harmonic":
        return next((a for a in argv[1:] if not a.startswith("-")), None)
    return None


def _benchmark(argv: list[str]) -> str | None:
    if len(argv) > 1 and Path(argv[0]).name.startswith("python") and argv[1].startswith("benchmarks/"):
        return argv[1]
    return None


def _smaller(command: str) -> str:
    argv = _argv(command)
    script = _benchmark(argv)
    if script in SMALL_DEFAULTS and not re.search(r"--nodes\b", command):
        command = f"{command.split('#')[0].rstrip()} {SMALL_DEFAULTS[script]}"
    for pattern, replacement in SMALLER:
        command = re.sub(pattern, replacement, command)
    return command


PARSE_ONLY_RUNNER = """
import argparse, os, runpy, sys
class Parsed(Exception):
    pass
original = argparse.ArgumentParser.parse_args
def parse_only(self, args=None, namespace=None):
    ns = original(self, args, namespace)
    raise Parsed(ns)
argparse.ArgumentParser.parse_args = parse_only
sys.argv = sys.argv[1:]
sys.path.insert(0, os.path.dirname(os.path.abspath(sys.argv[0])))  # as `python SCRIPT` does
try:
    runpy.run_path(sys.argv[0], run_name="__main__")
except Parsed as parsed:
    print(vars(parsed.args[0]))
else:
    sys.exit("the script parsed no arguments")
"""


def _parse_only(argv: list[str], work: Path, env: dict[str, str]) -> None:
    """The benchmark's own parser accepts the arguments, and every file-like argument exists."""
    out = subprocess.run(
        [sys.executable, "-c", PARSE_ONLY_RUNNER, *argv[1:]],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=COMMAND_TIMEOUT,
    )
    assert out.returncode == 0, f"{shlex.join(argv)}\n{out.stderr[-3000:]}"
    # Files the repository ships (an input, not an output the command or an earlier one writes).
    for arg in argv[2:]:
        for part in arg.split("="):
            shipped = "/" in part and (work / part.split("/")[0]).exists()
            if shipped and re.fullmatch(r"[\w./-]+\.(ya?ml|json)", part):
                assert (work / part).exists(), f"{shlex.join(argv)}: {part} does not exist"


def _helm_template(argv: list[str], work: Path) -> None:
    """``helm install`` without a cluster: the chart renders with the given values files, as ``helm
    template`` would (Helm's own library, tests/deploy/helm.py)."""
    import yaml

    from .deploy.helm import render_chart

    args = argv[2:]
    values: dict[str, object] = {}
    positional: list[str] = []
    namespace = "default"
    i = 0
    while i < len(args):
        if args[i] in ("-f", "--values"):
            values |= yaml.safe_load((work / args[i + 1]).read_text()) or {}
            i += 2
        elif args[i] in ("-n", "--namespace"):
            namespace = args[i + 1]
            i += 2
        elif args[i].startswith("-"):
            i += 1
        else:
            positional.append(args[i])
            i += 1
    _, chart = positional
    manifests = render_chart(work / chart, values, namespace=namespace)
    assert any(m["kind"] == "Deployment" for m in manifests)


class Server:
    """A long-running command started in the background."""

    def __init__(
        self, command: str, port: int, probe: str, work: Path, env: dict[str, str], clean: set[int]
    ) -> None:
        self.command = command
        self.clean = clean
        self.log = work / f"server-{port}.log"
        with self.log.open("w") as log:
            self.proc = subprocess.Popen(
                ["bash", "-c", f"exec {command}"], cwd=work, env=env, stdout=log, stderr=subprocess.STDOUT
            )
        self.url = f"http://127.0.0.1:{port}{probe}"

    def wait_ready(self, timeout: float = READY_TIMEOUT) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                pytest.fail(f"{self.command} exited {self.proc.returncode}:\n{self.output()}")
            try:
                with urllib.request.urlopen(self.url, timeout=2) as r:
                    if r.status == 200:
                        return
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            time.sleep(0.2)
        pytest.fail(f"{self.command}: {self.url} did not answer 200 within {timeout} s:\n{self.output()}")

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                return -9
        return self.proc.returncode

    def output(self) -> str:
        return self.log.read_text()[-3000:]


def _run_block(block: Block, work: Path, env: dict[str, str]) -> None:
    ports = {p: _free_port() for p in DOCUMENTED_PORTS}
    servers: list[Server] = []
    try:
        for original in block.commands:
            if _skip_reason(original):
                continue
            command = _smaller(original)
            for documented, free in ports.items():
                command = re.sub(rf"\b{documented}\b", str(free), command)
            argv = _argv(command)
            script = _benchmark(argv)
            if script in PARSE_ONLY:
                _parse_only(argv, work, env)
                continue
            if argv[:2] == ["helm", "install"]:
                _helm_template(argv, work)
                continue
            sub = _subcommand(argv)
            if sub in SERVERS:
                flag, default = DEFAULT_PORTS[sub]
                if flag not in argv:
                    command = f"{command.split('#')[0].rstrip()} {flag} {ports[default]}"
                port = int(_argv(command)[_argv(command).index(flag) + 1])
                server = Server(command, port, SERVERS[sub], work, env, CLEAN_EXITS[sub])
                servers.append(server)
                server.wait_ready()
                continue
            out = subprocess.run(
                ["bash", "-c", command],
                cwd=work,
                env=env,
                capture_output=True,
                text=True,
                timeout=COMMAND_TIMEOUT,
            )
            assert out.returncode == 0, (
                f"{block.id}: {command}\nexit {out.returncode}\n{out.stdout[-2000:]}\n{out.stderr[-3000:]}"
            )
            assert not _unactionable_warnings(out.stderr), (command, _unactionable_warnings(out.stderr))
    finally:
        codes = [(s.command, s.stop(), s) for s in servers]
    for command, code, server in codes:
        assert code in server.clean, f"{command} did not stop cleanly on SIGTERM ({code}):\n{server.output()}"
        assert not _unactionable_warnings(server.log.read_text()), command


def _unactionable_warnings(log: str) -> list[str]:
    """Warnings that a service the command's adapter does not offer is missing: nothing the reader of
    these docs can change, so they must not be warnings (framework/services.check_needs)."""
    return [
        line
        for line in log.splitlines()
        if "runs without the" in line
        and "WARNING" in line.upper()
        and re.search(r"'(volumes|workloads|namespaces|pdbs|nominator|pods|activate|waiting_pods)'", line)
    ]


@pytest.mark.parametrize("block", BLOCKS, ids=[b.id for b in BLOCKS])
def test_documented_commands_run_as_written(
    block: Block, checkout: tuple[Path, dict[str, str]], api: ApiServerDouble
) -> None:
    work, env = checkout
    _run_block(block, work, env)


def test_every_document_has_its_commands_found() -> None:
    """The extractor sees the blocks a reader sees: the README's three ways to run Harmonic at least."""
    readme = [c for b in BLOCKS if b.file == "README.md" for c in b.commands]
    for sub in ("run", "extender", "simulate"):
        assert any(_subcommand(_argv(c)) == sub for c in readme), sub


def test_skips_and_shortcuts_name_real_commands() -> None:
    """Every entry of SKIPPED and PARSE_ONLY matches a documented command: no stale exemptions."""
    commands = [c for b in BLOCKS for c in b.commands]
    for pattern in SKIPPED:
        assert any(re.search(pattern, c) for c in commands), pattern
    for script in PARSE_ONLY:
        assert any(_benchmark(_argv(c)) == script for c in commands), script


def test_the_readme_points_nowhere_outside_the_repository() -> None:
    readme = (ROOT / "README.md").read_text()
    for url in re.findall(r"[a-z][a-z0-9+.-]*://[^\s)`'\"]+", readme):
        assert url.startswith("http://127.0.0.1"), url
    for target in re.findall(r"\]\(([^)]+)\)", readme):
        assert (ROOT / target.split("#")[0]).exists(), target


def test_the_skipped_ablation_profiles_load() -> None:
    """What the skipped ablation sweep reads (docs/harmony.md) is a valid configuration."""
    from harmonic.framework.config import load_config
    from harmonic.plugins.registry import in_tree_registry

    config = yaml.safe_load((ROOT / "examples" / "harmony-ablation.yaml").read_text())
    assert len(load_config(config, in_tree_registry()).profiles) > 1
