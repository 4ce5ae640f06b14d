"""The one error type of the simulator's inputs: it names the file and the path inside it."""

from __future__ import annotations


class ScenarioError(ValueError):
    """A scenario (or a file it refers to) the simulator cannot honour.

    ``source`` is the file (``scenario.yaml``, ``manifests/web.yaml:3`` for a document or line),
    ``path`` the field inside it (``workloads[2].userRate``, ``spec.template.spec.volumes[0]``).
    """

    def __init__(self, source: str, path: str, message: str) -> None:
        self.source = source
        self.path = path
        self.message = message
        where = f"{source}: {path}" if path else source
        super().__init__(f"{where}: {message}")
