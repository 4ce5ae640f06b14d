"""Resource names and pod requests computed the way kube-scheduler computes them.

Integer units: CPU in millicores, everything else in whole units (bytes for memory and storage),
each rounded away from zero as ``Quantity.MilliValue()`` / ``Quantity.Value()`` do.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from harmonic.api.errors import ObjectError, as_list, as_mapping
from harmonic.api.quantity import QuantityError, milli_value, parse_quantity, value

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
    """One quantity in the scheduler's integer unit for resource ``name``. It must not be negative
    (kube-apiserver refuses negative requests, overhead, capacity and allocatable alike) and must fit
    in int64 (the node arrays' type, and what kube-scheduler's ``Quantity.Value()`` returns)."""
    if isinstance(raw, str):
        return _units(name == CPU, raw)
    q = parse_quantity(raw)
    return _checked(raw, milli_value(q) if name == CPU else value(q))


@lru_cache(maxsize=65536)
def _units(milli: bool, raw: str) -> int:
    # Manifests repeat a handful of quantity strings; each is parsed once.
    q = parse_quantity(raw)
    return _checked(raw, milli_value(q) if milli else value(q))


def _checked(raw: object, units: int) -> int:
    if not 0 <= units < 2**63:
        if units < 0:
            # kube-apiserver's ValidateNonnegativeQuantity, word for word.
            raise QuantityError(f"{raw!r}: must be greater than or equal to 0")
        raise QuantityError(f"{raw!r} is too large (the amount must fit in a 64-bit integer)")
    return units


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


def _container_requests(obj: str, field: str, container: Any) -> Resources:
    res = as_mapping(obj, f"{field}.resources", as_mapping(obj, field, container).get("resources"))
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
    return pod_requests_and_nonzero(obj, spec, nonzero_defaults or {})[1 if nonzero_defaults else 0]


def pod_requests_and_nonzero(
    obj: str, spec: Mapping[str, Any], nonzero_defaults: Mapping[str, int]
) -> tuple[Resources, Resources]:
    """``pod_requests`` without and with ``nonzero_defaults``, reading the manifest once."""
    containers = [
        _container_requests(obj, f"spec.containers[{i}]", c)
        for i, c in enumerate(as_list(obj, "spec.containers", spec.get("containers")))
    ]
    inits = [
        (_container_requests(obj, f"spec.initContainers[{i}]", c), c.get("restartPolicy") == "Always")
        for i, c in enumerate(as_list(obj, "spec.initContainers", spec.get("initContainers")))
    ]
    pod_resources = as_mapping(obj, "spec.resources", spec.get("resources"))
    pod_level = resource_list(obj, "spec.resources.requests", pod_resources.get("requests"))
    overhead = resource_list(obj, "spec.overhead", spec.get("overhead"))
    plain = _aggregate(containers, inits, pod_level, overhead)
    if not nonzero_defaults:
        return plain, plain
    filled = [_with_defaults(r, nonzero_defaults) for r in containers]
    filled_inits = [(_with_defaults(r, nonzero_defaults), sidecar) for r, sidecar in inits]
    return plain, _aggregate(filled, filled_inits, pod_level, overhead)


def _with_defaults(requests: Resources, defaults: Mapping[str, int]) -> Resources:
    if all(k in requests for k in defaults):
        return requests
    return {**defaults, **requests}


def _aggregate(
    containers: list[Resources],
    inits: list[tuple[Resources, bool]],
    pod_level: Resources,
    overhead: Resources,
) -> Resources:
    total: Resources = {}
    for r in containers:
        add_into(total, r)
    sidecars: Resources = {}
    init_peak: Resources = {}
    for r, sidecar in inits:
        if sidecar:
            add_into(total, r)
            add_into(sidecars, r)
            step = dict(sidecars)
        else:
            step = dict(r)
            add_into(step, sidecars)
        max_into(init_peak, step)
    max_into(total, init_peak)
    for k, v in pod_level.items():
        if k in (CPU, MEMORY) or k.startswith("hugepages-"):
            total[k] = v
    add_into(total, overhead)
    return total
