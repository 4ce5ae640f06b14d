"""The affinity graph service ``harmonic run`` and ``harmonic extender`` build from the profiles'
CommunicationAffinity telemetry args."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from harmonic.framework.config import ConfigError, load_config
from harmonic.plugins.communicationaffinity.plugin import GRAPH_SERVICE
from harmonic.plugins.communicationaffinity.setup import graph_services
from harmonic.plugins.registry import default_registry
from harmonic.signals.identity import WorkloadKey

BOUTIQUE = str(
    Path(__file__).resolve().parents[2] / "harmonic" / "data" / "topologies" / "online-boutique.json"
)


def _profile(name: str, telemetry: dict[str, Any] | None) -> dict[str, Any]:
    p: dict[str, Any] = {
        "schedulerName": name,
        "plugins": {"multiPoint": {"enabled": [{"name": "CommunicationAffinity"}]}},
    }
    if telemetry is not None:
        p["pluginConfig"] = [{"name": "CommunicationAffinity", "args": {"telemetry": telemetry}}]
    return p


def _config(*profiles: dict[str, Any]):
    return load_config({"profiles": list(profiles)}, default_registry(), source="sched.yaml")


def test_no_telemetry_means_no_service():
    assert graph_services(_config({"schedulerName": "default-scheduler"})) == {}
    assert graph_services(_config(_profile("harmonic", None))) == {}


def test_profiles_share_one_graph_built_from_their_telemetry():
    telemetry = {"topologies": [{"file": BOUTIQUE, "namespace": "shop"}], "refreshSeconds": 15}
    services = graph_services(_config(_profile("a", telemetry), _profile("b", telemetry)))
    service = services[GRAPH_SERVICE]
    assert service.refresh_seconds == 15
    service.refresh(0.0)
    peers, _ = service.view.neighbours(WorkloadKey("shop", "frontend"))
    assert WorkloadKey("shop", "productcatalogservice") in peers


def test_profiles_with_different_telemetry_are_an_error():
    with pytest.raises(
        ConfigError, match="profiles 'a' and 'b' give CommunicationAffinity different telemetry"
    ):
        graph_services(
            _config(
                _profile("a", {"topologies": [{"file": BOUTIQUE, "namespace": "shop"}]}),
                _profile("b", {"topologies": [{"file": BOUTIQUE, "namespace": "other"}]}),
            )
        )
