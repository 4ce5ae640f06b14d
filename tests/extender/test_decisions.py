"""The extender's recorded filter / prioritize calls at GET /debug/decisions (off unless asked)."""

from __future__ import annotations

import json
from typing import Any

from harmonic.extender.server import ServerSettings
from harmonic.framework.decisions import DecisionLog
from tests.extender.conftest import Client, fixture, running
from tests.extender.test_server import CONFIG, N1, N2, N3, TAINTED


def _get(client: Client, path: str, headers: dict[str, str] | None = None) -> tuple[int, Any]:
    status, _, data = client.raw("GET", path, None, headers)
    return status, json.loads(data)


def test_filter_and_prioritize_are_recorded_and_served():
    with running(config=CONFIG) as server:
        server.app.extender.decisions = DecisionLog(10)
        c = Client(server)
        assert c.post("filter", fixture("filter-nodes.json"))[0] == 200
        args = fixture("filter-nodes.json")
        assert c.post("prioritize", args)[0] == 200
        status, body = _get(c, "/debug/decisions")
        c.close()
    assert status == 200
    assert body["capacity"] == 10 and body["recorded"] == 2
    filt, prio = body["decisions"]
    assert (filt["source"], filt["result"]) == ("extender/filter", "Filtered")
    assert filt["nodes"] == {"all": 3, "evaluated": 3, "feasible": 1}
    assert {r["node"]: (r["plugin"], r["reasons"]) for r in filt["filter"]} == {
        N2: ("TaintToleration", [TAINTED]),
        N3: ("NodeResourcesFit", ["Insufficient cpu"]),
    }
    assert (prio["source"], prio["result"]) == ("extender/prioritize", "Prioritized")
    # Prioritize ran no filter: its record must not say the nodes the filter call rejected passed one.
    assert prio["nodes"]["evaluated"] == 0 and prio["filter"] == []
    assert prio["verdict"].startswith("scored the 3 nodes kube-scheduler sent (no filter ran): ")
    assert [p["name"] for p in prio["scores"]["plugins"]] == ["TaintToleration", "NodeResourcesFit"]
    scores = prio["scores"]
    assert scores["nodes"] == [N1, N2, N3]
    taint, fit = scores["normalized"]
    assert scores["weighted"] == [[3 * v for v in taint], fit]
    assert scores["total"] == [3 * t + f for t, f in zip(taint, fit, strict=True)]


def test_not_served_unless_recording():
    with running(config=CONFIG) as server:
        c = Client(server)
        status, _ = _get(c, "/debug/decisions")
        c.close()
    assert status == 404


def test_behind_the_token_and_bad_parameters_are_400():
    with running(config=CONFIG, settings=ServerSettings(token="s3cret")) as server:
        server.app.extender.decisions = DecisionLog(10)
        c = Client(server)
        assert _get(c, "/debug/decisions")[0] == 401
        auth = {"Authorization": "Bearer s3cret"}
        assert _get(c, "/debug/decisions", auth) == (200, {"capacity": 10, "recorded": 0, "decisions": []})
        status, body = _get(c, "/debug/decisions?limit=ten", auth)
        c.close()
    assert status == 400
    assert body == {"error": "/debug/decisions: query parameter limit: not an integer: 'ten'"}
