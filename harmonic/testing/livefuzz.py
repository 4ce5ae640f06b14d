"""The live fuzzer (issue 33): hostile objects created through the API while ``harmonic run`` and
``harmonic extender`` run against it, then judged.

The driver talks to the API server only through a kubeconfig, so the same run targets the API-server
double (``fuzz_against_double``) or a real kube-apiserver (``LiveFuzz(kubeconfig=...)``; for a real one
it also creates each namespace's ``default`` ServiceAccount and removes the ``not-ready`` taint
admission puts on new Nodes, since no kubelet or controller does). Objects come from
``harmonic.testing.hostile``, each with what Harmonic must do with it; ``LiveFuzz.run`` returns a
``FuzzReport`` with the counts and every violation:

- a process exited, or logged a traceback, or the extender answered 5xx (or dropped the connection);
- a pod that must bind is not bound; a pod that must be reported has neither a ``FailedScheduling``
  event nor exactly one log line naming it; a pod that may or may not fit is neither bound nor
  reported; a pod that must wait was bound;
- an object Harmonic refuses is not named by exactly one log line, or an object it uses is named by
  a warning or an error; any object is named by more than one such line (a flood).
"""

from __future__ import annotations

import contextlib
import http.client
import json
import re
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harmonic.cluster.transport import ApiStatusError, Transport, load_client, object_path
from harmonic.testing.hostile import (
    BATCH_SCHEDULER,
    BIND,
    HOLD,
    LOGGED,
    NAMESPACE,
    QUIET,
    REPORT,
    SCHEDULER,
    SETTLE,
    HostileObjects,
    Made,
)

Obj = dict[str, Any]

#: kind -> (apiVersion, plural, namespaced)
RESOURCES: dict[str, tuple[str, str, bool]] = {
    "Pod": ("v1", "pods", True),
    "Node": ("v1", "nodes", False),
    "Namespace": ("v1", "namespaces", False),
    "PodDisruptionBudget": ("policy/v1", "poddisruptionbudgets", True),
    "PodGroup": ("scheduling.x-k8s.io/v1alpha1", "podgroups", True),
    "ElasticQuota": ("scheduling.x-k8s.io/v1alpha1", "elasticquotas", True),
}
_NOT_READY = "node.kubernetes.io/not-ready"
#: How Harmonic's refusals name an object (``ObjectError``: "Node n1: status.allocatable.cpu: ...").
_SUBJECT = re.compile(
    r"\b(Pod|Node|PodGroup|ElasticQuota|PodDisruptionBudget) ([A-Za-z0-9._-]+(?:/[A-Za-z0-9._-]+)?):"
)
_BATCH_PLUGINS = {
    "multiPoint": {
        "enabled": [{"name": "Coscheduling"}, {"name": "CapacityScheduling"}],
        "disabled": [{"name": "PrioritySort"}],
    }
}


@dataclass
class FuzzReport:
    """What a run created, what Harmonic did with it, and what it did wrong."""

    objects: Counter[str] = field(default_factory=Counter)  # kind -> created
    expectations: Counter[str] = field(default_factory=Counter)  # expectation -> created
    refused_by_api: Counter[str] = field(default_factory=Counter)  # kind -> refused by the API server
    pods_bound: int = 0
    pods_to_bind: int = 0
    failed_scheduling_events: int = 0
    pods_with_failed_scheduling: int = 0
    #: process -> warning/error lines naming a created object as their subject ("Node n1: ..."); and all
    #: its warning/error lines
    lines_naming_objects: Counter[str] = field(default_factory=Counter)
    lines: Counter[str] = field(default_factory=Counter)
    tracebacks: Counter[str] = field(default_factory=Counter)
    extender_answers: Counter[str] = field(default_factory=Counter)  # "verb status" -> count
    exits: dict[str, int | None] = field(default_factory=dict)  # process -> exit code (None: running)
    violations: list[str] = field(default_factory=list)

    @property
    def bad_objects(self) -> int:
        return sum(n for e, n in self.expectations.items() if e not in (BIND, QUIET))

    def summary(self) -> str:
        return "\n".join(
            [
                f"objects created: {sum(self.objects.values())} ({_fmt(self.objects)})",
                f"by expectation: {_fmt(self.expectations)}; bad objects: {self.bad_objects}",
                f"refused by the API server: {sum(self.refused_by_api.values())} ({_fmt(self.refused_by_api)})",
                f"pods bound: {self.pods_bound} (of them required: {self.pods_to_bind})",
                f"FailedScheduling events: {self.failed_scheduling_events} "
                f"(pods with one: {self.pods_with_failed_scheduling})",
                f"warning/error log lines about an object: {_fmt(self.lines_naming_objects)}; "
                f"all warning/error lines: {_fmt(self.lines)}",
                f"tracebacks logged: {_fmt(self.tracebacks) or 0}",
                f"extender answers: {_fmt(self.extender_answers)}",
                f"exit codes: {self.exits}",
                f"violations: {len(self.violations)}",
                *(f"  {v}" for v in self.violations[:50]),
            ]
        )


def _fmt(c: Counter[str]) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(c.items()))


class Api:
    """Creates and lists objects through a kubeconfig."""

    def __init__(self, kubeconfig: str) -> None:
        self.t = Transport(
            load_client(kubeconfig), qps=-1, burst=1000, user_agent="harmonic-fuzz", timeout=60
        )

    def create(self, made: Made) -> Obj | ApiStatusError:
        version, plural, namespaced = RESOURCES[made.kind]
        path = object_path(version, plural, made.namespace if namespaced else None)
        try:
            created: Obj = self.t.request("POST", path, body=made.obj)
        except ApiStatusError as e:
            return e
        if made.kind == "Node":
            self._usable(created)
        elif made.kind == "Namespace":
            self.service_account(made.name)
        return created

    def service_account(self, namespace: str) -> None:
        """kube-apiserver's ServiceAccount admission refuses pods in a namespace without one."""
        path = object_path("v1", "serviceaccounts", namespace)
        # Already there (409), or an API (the double) that has no ServiceAccounts: nothing to do.
        with contextlib.suppress(ApiStatusError):
            self.t.request("POST", path, body={"metadata": {"name": "default"}}, decode=False)

    def _usable(self, node: Obj) -> None:
        """Without a kubelet, a real cluster's new Node keeps admission's not-ready taint."""
        taints = (node.get("spec") or {}).get("taints") or []
        kept = [t for t in taints if t.get("key") != _NOT_READY]
        if len(kept) != len(taints):
            path = object_path("v1", "nodes", None, node["metadata"]["name"])
            body = {"spec": {"taints": kept}}
            self.t.request(
                "PATCH", path, body=body, content_type="application/merge-patch+json", decode=False
            )

    def items(self, kind: str) -> list[Obj]:
        version, plural, _ = RESOURCES.get(kind, ("events.k8s.io/v1", "events", True))
        out: list[Obj] = []
        cont = ""
        while True:
            query = {"limit": 2000, **({"continue": cont} if cont else {})}
            page = self.t.request("GET", object_path(version, plural), query=query)
            out.extend(page.get("items") or [])
            cont = (page.get("metadata") or {}).get("continue") or ""
            if not cont:
                return out


class Process:
    """A ``harmonic`` subcommand as a process, its JSON log in a file."""

    def __init__(self, name: str, args: list[str], log: Path) -> None:
        self.name, self.log = name, log
        self._out = log.open("w")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "harmonic", *args], stdout=subprocess.DEVNULL, stderr=self._out, text=True
        )

    def exited(self) -> int | None:
        return self.proc.poll()

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._out.close()
        return self.proc.returncode

    def records(self) -> list[Obj]:
        out = []
        for line in self.log.read_text(errors="replace").splitlines():
            if line.startswith("{"):
                try:
                    out.append(json.loads(line))
                except ValueError:
                    out.append({"level": "error", "msg": f"unparsable log line: {line[:200]}"})
            elif line.startswith("Traceback") or line.startswith("  File "):
                out.append({"level": "error", "msg": f"non-JSON output: {line[:200]}", "err": line})
            elif line.strip():
                # Lines written before logging is configured (start-up warnings about the profile).
                level = line.split(" ")[2].lower() if line.count(" ") > 2 else "error"
                out.append({"level": level, "msg": line})
        return out


class LiveFuzz:
    """One fuzzing session: ``harmonic run`` and ``harmonic extender`` against ``kubeconfig``."""

    def __init__(
        self, kubeconfig: str, workdir: Path, seed: int = 0, progress: Callable[[str], None] | None = None
    ):
        self.kubeconfig, self.workdir = kubeconfig, workdir
        self.api = Api(kubeconfig)
        self.objects = HostileObjects(seed)
        self.made: list[Made] = []
        self.report = FuzzReport()
        self.progress = progress or (lambda _: None)
        self.procs: list[Process] = []
        self.node_names: list[str] = []
        self._extender: http.client.HTTPConnection | None = None
        self._extender_port = 0

    # ------------------------------------------------------------------ processes
    def start(self) -> None:
        config = self.workdir / "scheduler.yaml"
        config.write_text(
            json.dumps(
                {
                    "apiVersion": "kubescheduler.config.k8s.io/v1",
                    "kind": "KubeSchedulerConfiguration",
                    "leaderElection": {"leaderElect": False},
                    "clientConnection": {"kubeconfig": self.kubeconfig},
                    "profiles": [
                        {"schedulerName": SCHEDULER, "plugins": _BATCH_PLUGINS},
                        {"schedulerName": BATCH_SCHEDULER, "plugins": _BATCH_PLUGINS},
                    ],
                }
            )
        )
        self.api.service_account(NAMESPACE)
        metrics, self._extender_port = _free_port(), _free_port()
        common = ["--config", str(config), "--log-format", "json"]
        self.procs = [
            Process(
                "run",
                ["run", *common, "--bind-address", "127.0.0.1", "--secure-port", str(metrics)],
                self.workdir / "run.log",
            ),
            Process(
                "extender",
                [
                    "extender",
                    *common,
                    "--kubeconfig",
                    self.kubeconfig,
                    "--bind",
                    "127.0.0.1",
                    "--port",
                    str(self._extender_port),
                ],
                self.workdir / "extender.log",
            ),
        ]
        # harmonic run serves kube-scheduler's secure port (HTTPS, a self-signed certificate); /readyz
        # needs no token there.
        try:
            for port, tls in ((metrics, True), (self._extender_port, False)):
                _wait(self._ready(port, tls), 120, f"readiness on port {port}")
        except BaseException:
            for p in self.procs:  # never leave them running when the start fails
                p.stop()
            raise
        if self._dead():
            raise RuntimeError(f"a harmonic process exited at start: see {self.workdir}")

    def _ready(self, port: int, tls: bool) -> Callable[[], bool]:
        return lambda: _get(port, "/readyz", tls) == 200 or self._dead()

    def _dead(self) -> bool:
        return any(p.exited() is not None for p in self.procs)

    def stop(self) -> None:
        for p in self.procs:
            running = p.exited() is None
            code = p.stop()
            self.report.exits[p.name] = code
            if not running:
                self.report.violations.append(f"harmonic {p.name} exited by itself with code {code}")
            elif code != 0:
                self.report.violations.append(f"harmonic {p.name} exited {code} on SIGTERM")

    # ------------------------------------------------------------------ creating
    def create(self, count: int, chunk: int = 250) -> None:
        """Create ``count`` objects; ask the extender about every pod as kube-scheduler would."""
        done = 0
        while done < count:
            for made in self.objects.take(min(chunk, count - done)):
                self._create(made)
            done = min(count, done + chunk)
            gone = [p.name for p in self.procs if p.exited() is not None]
            self.progress(f"{done}/{count} objects created" + (f"; exited: {gone}" if gone else ""))
            if gone:
                return

    def _create(self, made: Made) -> None:
        created = self.api.create(made)
        if isinstance(created, ApiStatusError):
            self.report.refused_by_api[made.kind] += 1
            if made.kind == "Node" or made.expect == BIND:
                self.report.violations.append(f"the API server refused {made.kind} {made.key}: {created}")
            return
        self.made.append(made)
        self.report.objects[made.kind] += 1
        self.report.expectations[made.expect] += 1
        if made.kind == "Node":
            self.node_names.append(made.name)
        elif made.kind == "Pod":
            self._ask_extender(made, created)

    def _ask_extender(self, made: Made, pod: Obj) -> None:
        body = json.dumps({"Pod": pod, "NodeNames": self.node_names}).encode()
        for verb in ("filter", "prioritize"):
            status, answer = self._post(f"/scheduler/{verb}", body)
            self.report.extender_answers[f"{verb} {status}"] += 1
            if status == 0 or status >= 500:
                self.report.violations.append(
                    f"extender {verb} of {made.key} ({made.why}): HTTP {status} {answer[:300]!r}"
                )
            elif status == 400 and made.expect == BIND:
                self.report.violations.append(
                    f"extender {verb} refused {made.key} ({made.why}), which must bind"
                )

    def _post(self, path: str, body: bytes) -> tuple[int, bytes]:
        """(status, body) of one extender call; status 0 when the connection failed twice."""
        for _ in range(2):
            if self._extender is None:
                self._extender = http.client.HTTPConnection("127.0.0.1", self._extender_port, timeout=60)
            try:
                self._extender.request("POST", path, body, {"Content-Type": "application/json"})
                resp = self._extender.getresponse()
                return resp.status, resp.read()
            except (OSError, http.client.HTTPException):
                self._extender.close()
                self._extender = None
        return 0, b""

    # ------------------------------------------------------------------ judging
    def settle(self, timeout: float) -> None:
        """Wait until nothing is wrong or ``timeout`` passes, then record what is wrong."""
        deadline = time.monotonic() + timeout
        while True:
            violations = self._judge()
            if not violations or time.monotonic() > deadline or self._dead():
                self.report.violations.extend(violations)
                return
            self.progress(f"waiting: {len(violations)} open (first: {violations[0]})")
            time.sleep(0.5)

    def _judge(self) -> list[str]:
        rep = self.report
        bound = {
            (p["metadata"].get("namespace"), p["metadata"]["name"]): p["spec"].get("nodeName")
            for p in self.api.items("Pod")
        }
        reported: Counter[tuple[str | None, str | None]] = Counter()
        for ev in self.api.items("Event"):
            if ev.get("reason") == "FailedScheduling":
                ref = ev.get("regarding") or {}
                reported[(ref.get("namespace"), ref.get("name"))] += 1
        named: dict[str, Counter[str]] = {}
        rep.lines.clear()
        rep.lines_naming_objects.clear()
        rep.tracebacks.clear()
        wanted = {f"{m.kind} {m.key}" for m in self.made}
        out: list[str] = []
        for p in self.procs:
            counts: Counter[str] = Counter()
            for rec in p.records():
                if rec.get("err"):
                    rep.tracebacks[p.name] += 1
                    out.append(
                        f"harmonic {p.name} logged a traceback: {rec.get('msg')}: {str(rec['err'])[-300:]}"
                    )
                if rec.get("level") not in ("warning", "error", "critical"):
                    continue
                rep.lines[p.name] += 1
                for kind, key in set(_SUBJECT.findall(str(rec.get("msg", "")))):
                    if f"{kind} {key}" in wanted:
                        counts[f"{kind} {key}"] += 1
            named[p.name] = counts
            rep.lines_naming_objects[p.name] = sum(counts.values())
        rep.pods_bound = sum(1 for m in self.made if m.kind == "Pod" and bound.get((m.namespace, m.name)))
        rep.pods_to_bind = sum(1 for m in self.made if m.expect == BIND)
        rep.failed_scheduling_events = sum(reported.values())
        rep.pods_with_failed_scheduling = len(reported)
        for m in self.made:
            out.extend(
                _judge_one(m, bound.get((m.namespace, m.name)), reported[(m.namespace, m.name)], named)
            )
        return out

    def run(self, count: int, settle: float | None = None) -> FuzzReport:
        self.start()
        try:
            self.create(count)
            self.settle(settle if settle is not None else 30 + count / 100)
        finally:
            self.stop()
        # Late log lines (shutdown) count too.
        self.report.violations.extend(v for v in self._judge_logs_only() if v not in self.report.violations)
        return self.report

    def _judge_logs_only(self) -> list[str]:
        return [
            f"harmonic {p.name} logged a traceback: {rec.get('msg')}"
            for p in self.procs
            for rec in p.records()
            if rec.get("err")
        ]


def _judge_one(m: Made, node: str | None, events: int, named: dict[str, Counter[str]]) -> list[str]:
    """What is wrong with what Harmonic did about one object."""
    out = []
    subject = f"{m.kind} {m.key}"
    what = f"{subject} ({m.why})"
    run_lines = named.get("run", Counter())[subject]
    for proc, counts in named.items():
        if counts[subject] > 1:
            out.append(f"{what}: named by {counts[subject]} warning/error lines of harmonic {proc}")
    if m.kind == "Pod":
        if m.expect == BIND and not node:
            out.append(f"{what}: not bound")
        elif m.expect == REPORT and (node or not (events or run_lines == 1)):
            out.append(
                f"{what}: bound to {node}" if node else f"{what}: no FailedScheduling event, no log line"
            )
        elif m.expect == SETTLE and not (node or events or run_lines):
            out.append(f"{what}: neither bound nor reported")
        elif m.expect == HOLD and node:
            out.append(f"{what}: bound to {node}, but must wait")
    elif m.expect == LOGGED and run_lines != 1:
        out.append(f"{what}: named by {run_lines} log lines of harmonic run, not 1")
    elif m.expect == QUIET and run_lines:
        out.append(f"{what}: named by {run_lines} warning/error lines of harmonic run")
    return out


def fuzz_against_double(
    count: int,
    seed: int = 0,
    workdir: Path | None = None,
    progress: Callable[[str], None] | None = None,
    settle: float | None = None,
) -> FuzzReport:
    """A run against the API-server double, started here."""
    from harmonic.testing.apiserver import ApiServerDouble

    with tempfile.TemporaryDirectory(prefix="harmonic-fuzz-") as tmp:
        folder = workdir or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        with ApiServerDouble(bookmark_interval=1.0) as api:
            kubeconfig = api.kubeconfig(folder / "kubeconfig")
            return LiveFuzz(str(kubeconfig), folder, seed, progress).run(count, settle)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _get(port: int, path: str, tls: bool = False) -> int:
    try:
        conn = (
            http.client.HTTPSConnection(
                "127.0.0.1", port, timeout=5, context=ssl._create_unverified_context()
            )
            if tls
            else http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        )
        conn.request("GET", path)
        status = conn.getresponse().status
        conn.close()
        return status
    except (OSError, http.client.HTTPException):
        return 0


def _wait(cond: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(0.1)
