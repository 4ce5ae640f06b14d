"""WasmPluginArgs: where a guest comes from, what it is told, and the limits it runs under."""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic.alias_generators import to_camel

from harmonic.framework.args import PluginArgs
from harmonic.framework.config import parse_duration

#: A wasm page is 64 KiB; 256 pages = 16 MiB.
DEFAULT_MEMORY_PAGES = 256
#: Roughly one unit per wasm instruction: enough for a few thousand operations per node at 5,000
#: nodes, far short of what an endless loop burns before anyone notices.
DEFAULT_FUEL_PER_CALL = 2_000_000_000


class Preopen(BaseModel):
    """A host directory the operator grants the guest through WASI (none by default)."""

    model_config = ConfigDict(frozen=True, extra="forbid", alias_generator=to_camel, populate_by_name=True)

    host_path: str = Field(min_length=1)
    guest_path: str = Field(min_length=1)
    read_only: bool = True

    @field_validator("guest_path")
    @classmethod
    def _absolute(cls, v: str) -> str:
        if not PurePosixPath(v).is_absolute():
            raise ValueError(f"{v!r} must be an absolute path inside the guest")
        return v


class WasmPluginArgs(PluginArgs):
    """Args of a WebAssembly guest plugin (kube-scheduler-wasm-extension's PluginConfig, plus limits)."""

    #: A file path (or ``file://`` URL) of a ``.wasm`` or ``.wat`` module; ``http(s)://`` only with
    #: ``allowRemoteGuest``.
    guest_url: str = Field(alias="guestURL", min_length=1)
    #: Handed verbatim to the guest (``k8s.io/scheduler.get_config``).
    guest_config: str = ""
    allow_remote_guest: bool = False
    #: Linear memory the guest may grow to, in 64 KiB pages.
    max_memory_pages: int = Field(default=DEFAULT_MEMORY_PAGES, ge=1, le=65536)
    #: Fuel (about one unit per wasm instruction) one call may burn.
    max_fuel_per_call: int = Field(default=DEFAULT_FUEL_PER_CALL, ge=1)
    #: Wall-clock deadline of one call (Go duration).
    call_timeout: str = "1s"
    #: Wall-clock time all of the guest's calls for one pod's scheduling cycle may take together.
    cycle_budget: str = "2s"
    #: WASI grants; a guest gets no files, no environment and no arguments unless listed here.
    preopens: tuple[Preopen, ...] = ()
    env: dict[str, str] = Field(default_factory=dict)
    #: Which ABI the guest speaks: ``auto`` tells from its imports and exports (``docs/wasm.md``).
    abi: Literal["auto", "harmonic", "upstream"] = "auto"
    #: kube-scheduler-wasm-extension's ``logSeverity``: the guest's log lines below it are dropped
    #: (0 info, 1 warning, 2 error, 3 fatal); guests read it with ``k8s.io/klog.severity``.
    log_severity: int = Field(default=0, ge=0, le=3)
    #: The guest's WASI argv (upstream's ``args``, which its test guests read to pick a behaviour).
    args: tuple[str, ...] = ()

    @field_validator("call_timeout", "cycle_budget")
    @classmethod
    def _duration(cls, v: str) -> str:
        if parse_duration(v) <= 0:
            raise ValueError(f"{v!r} must be a positive duration")
        return v

    @property
    def call_timeout_seconds(self) -> float:
        return parse_duration(self.call_timeout)

    @property
    def cycle_budget_seconds(self) -> float:
        return parse_duration(self.cycle_budget)
