"""The one ``framework.Handle`` implementation the scheduler and the extender give their plugins.

What differs between the two is where each piece comes from (the scheduler's cache or the extender's
request snapshot, a live client or none, pods waiting at Permit or none), so the handle is built from
getters rather than subclassed; the getters are called on each access because the owner may swap a
piece (a new snapshot, a client set after construction).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from harmonic.framework.interface import Clock, ClusterClient, PluginsRunner
from harmonic.framework.services import ServiceAccess
from harmonic.framework.snapshot import Snapshot


class ProfileHandle(ServiceAccess):
    """framework.Handle for the plugins of the profile ``profile_name``."""

    def __init__(
        self,
        profile_name: str,
        *,
        snapshot: Callable[[], Snapshot],
        client: Callable[[], ClusterClient],
        clock: Callable[[], Clock],
        runner: Callable[[], PluginsRunner],
        services: Mapping[str, Any],
        waiting_pod: Callable[[str], Any] = lambda uid: None,
    ) -> None:
        self._profile = profile_name
        self._snapshot = snapshot
        self._client = client
        self._clock = clock
        self._runner = runner
        self._services = services
        self._waiting_pod = waiting_pod

    @property
    def snapshot(self) -> Snapshot:
        return self._snapshot()

    @property
    def client(self) -> ClusterClient:
        return self._client()

    @property
    def clock(self) -> Clock:
        return self._clock()

    @property
    def profile_name(self) -> str:
        return self._profile

    @property
    def runner(self) -> PluginsRunner:
        """The profile's framework, for plugins that run other plugins (preemption)."""
        return self._runner()

    def waiting_pod(self, uid: str) -> Any:
        """The pod waiting at Permit with this uid (``WaitingPod``), or None."""
        return self._waiting_pod(uid)

    def service_map(self) -> Mapping[str, Any]:
        return self._services
