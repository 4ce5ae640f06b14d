"""Resource names and pod requests computed the way kube-scheduler computes them.

Integer units: CPU in millicores, everything else in whole units (bytes for memory and storage),
each rounded away from zero as ``Quantity.MilliValue()`` / ``Quantity.Value()`` do.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harmonic.api.errors import ObjectError
from harmonic.api.quantity import QuantityError, milli_value, parse_cached, value

CPU = "cpu"
MEMORY = "memory"
EPHEMERAL_STORAGE = "ephemeral-storage"
PODS = "pods"

#: Requests assumed for containers that set none, used only by scoring (schedutil.DefaultMilliCPURequest
#: and DefaultMemoryRequest).
DEFAULT_MILLI_CPU_REQUEST = 100
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024

Resources = dict[str, int]


def to_units(name: str, raw: object) -> int:
    """One quantity in the scheduler's integer unit for resource ``name``."""
    q = parse_cached(raw)
    return milli_value(q) if name == CPU else value(q)


def resource_list(obj: str, field: str, raw: object) -> Resources:
    """Parse a ``ResourceList`` map; errors name ``obj`` and ``field.<resource>``."""
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise ObjectError(obj, field, f"must be a map of resource name to quantity, not {type(raw).__name__}")
    out: Resources = {}
    for name, q in raw.items():
        try:
            out[str(name)] = to_units(str(name), q)
        except QuantityError as e:
            raise ObjectError(obj, f"{field}.{name}", str(e)) from None
    return out


def add_into(total: Resources, extra: Mapping[str, int]) -> None:
    for k, v in extra.items():
        total[k] = total.get(k, 0) + v


def max_into(total: Resources, other: Mapping[str, int]) -> None:
    for k, v in other.items():
        if v > total.get(k, 0):
            total[k] = v


def is_scalar_resource(name: str) -> bool:
    """Extended resources, hugepages and attachable volumes: counted by NodeResourcesFit as whole units."""
    return name not in (CPU, MEMORY, EPHEMERAL_STORAGE, PODS)


def is_scalar_resource_name(name: str) -> bool:
    """Resources NodeInfo tracks as scalars (schedutil.IsScalarResourceName): extended resources,
    hugepages, ``kubernetes.io/``-prefixed native resources and attachable volumes."""
    return (
        is_extended_resource(name)
        or name.startswith("hugepages-")
        or "kubernetes.io/" in name
        or name.startswith("attachable-volumes-")
    )


def is_extended_resource(name: str) -> bool:
    """A fully qualified name outside ``kubernetes.io/`` (v1helper.IsExtendedResourceName)."""
    return "/" in name and "kubernetes.io/" not in name and not name.startswith("requests.")


def _container_requests(obj: str, field: str, container: Mapping[str, Any]) -> Resources:
    res = container.get("resources") or {}
    return resource_list(obj, f"{field}.resources.requests", res.get("requests"))


def pod_requests(
    obj: str, spec: Mapping[str, Any], nonzero_defaults: Mapping[str, int] | None = None
) -> Resources:
    """Effective requests of a pod (component-helpers resource.PodRequests).

    Regular containers add up; restartable init containers (sidecars) add to them and to every later
    init container; the result is the max of that and the largest init-container step; pod-level
    ``spec.resources.requests`` replace the aggregate for the resources it names; overhead is added.
    ``nonzero_defaults`` fills in requests a container does not set at all (used for scoring only).
    """

    def requests_of(field: str, c: Mapping[str, Any]) -> Resources:
        r = _container_requests(obj, field, c)
        if nonzero_defaults:
            for k, v in nonzero_defaults.items():
                r.setdefault(k, v)
        return r

    total: Resources = {}
    for i, c in enumerate(spec.get("containers") or ()):
        add_into(total, requests_of(f"spec.containers[{i}]", c))

    sidecars: Resources = {}
    init_peak: Resources = {}
    for i, c in enumerate(spec.get("initContainers") or ()):
        step = requests_of(f"spec.initContainers[{i}]", c)
        if c.get("restartPolicy") == "Always":
            add_into(total, step)
            add_into(sidecars, step)
            step = dict(sidecars)
        else:
            add_into(step, sidecars)
        max_into(init_peak, step)
    max_into(total, init_peak)

    pod_level = resource_list(obj, "spec.resources.requests", (spec.get("resources") or {}).get("requests"))
    for k, v in pod_level.items():
        if k in (CPU, MEMORY) or k.startswith("hugepages-"):
            total[k] = v

    add_into(total, resource_list(obj, "spec.overhead", spec.get("overhead")))
    return total
