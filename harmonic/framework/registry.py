"""Plugin registry: names as users write them in KubeSchedulerConfiguration -> plugin classes.

In-tree plugins are listed in ``harmonic.plugins.registry``; out-of-tree plugins are Python entry
points in the ``harmonic.plugins`` group, each naming a ``Plugin`` subclass, loaded without rebuilding.
A registry also holds *templates*: makers of plugin classes whose shape depends on their args (a
WebAssembly guest implements the extension points it exports), one class per configured name.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from importlib.metadata import entry_points
from typing import Any, Protocol

from harmonic.framework.args import NoArgs, PluginArgs
from harmonic.framework.interface import Plugin

ENTRY_POINT_GROUP = "harmonic.plugins"


class PluginTemplate(Protocol):
    """Makes a plugin class from a pluginConfig entry whose name no registered plugin has."""

    #: The args model of the classes it makes (validated by the config loader, errors naming the field).
    Args: type[PluginArgs]
    #: What users may write as the args' ``kind``.
    KIND: str

    def claims(self, raw_args: Mapping[str, Any]) -> bool:
        """Whether these raw args are meant for this template (e.g. they carry ``guestURL``)."""
        ...

    def make(self, name: str, args: Any) -> type[Plugin]:
        """The plugin class configured as ``name``; ``ValueError("<field>: <problem>")`` if the args
        cannot make one."""
        ...


class Registry(Mapping[str, type[Plugin]]):
    def __init__(
        self, plugins: Iterable[type[Plugin]] = (), templates: Iterable[PluginTemplate] = ()
    ) -> None:
        self._plugins: dict[str, type[Plugin]] = {}
        self.templates: tuple[PluginTemplate, ...] = tuple(templates)
        for p in plugins:
            self.register(p)

    def register(self, plugin: type[Plugin]) -> None:
        if not plugin.NAME:
            raise ValueError(f"{plugin.__qualname__} has no NAME")
        if plugin.NAME in self._plugins and self._plugins[plugin.NAME] is not plugin:
            raise ValueError(f"plugin {plugin.NAME!r} is registered twice")
        self._plugins[plugin.NAME] = plugin

    def merged(self, other: Iterable[type[Plugin]]) -> Registry:
        r = Registry(self._plugins.values(), self.templates)
        for p in other:
            r.register(p)
        return r

    def __getitem__(self, name: str) -> type[Plugin]:
        return self._plugins[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._plugins)

    def __len__(self) -> int:
        return len(self._plugins)


def args_model(plugin: type[Plugin]) -> type[PluginArgs]:
    """The plugin's args model: its ``Args`` class attribute, or ``NoArgs``."""
    model = getattr(plugin, "Args", None)
    return model if model is not None else NoArgs


def entry_point_plugins() -> list[type[Plugin]]:
    """Plugins installed as ``harmonic.plugins`` entry points (out-of-tree, no rebuild needed)."""
    found: list[type[Plugin]] = []
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        obj = ep.load()
        if not (isinstance(obj, type) and issubclass(obj, Plugin)):
            raise TypeError(f"entry point {ep.name} = {ep.value} is not a harmonic Plugin subclass")
        found.append(obj)
    return found
