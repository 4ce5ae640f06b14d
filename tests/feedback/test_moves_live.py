"""Moves carried out live, against the API-server double over HTTP: one pod evicted through the Eviction
API per accepted move; PodDisruptionBudgets (ours and the server's 429) keep the pod; the round's
budgets and the cool-down cap the rate; an Infeasible resize and the advisor's prediction ask for them;
each outcome is in the decision log and in harmonic_feedback_moves_total."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from prometheus_client import Counter as Counter_
from pydantic import ValidationError

from harmonic.api.node import parse_node
from harmonic.api.pod import parse_pod
from harmonic.cluster.transport import Transport, load_client
from harmonic.feedback.moves import MoveAdvisor, MoveSettings
from harmonic.feedback.moves_live import InfeasibleResizes, LiveMoves, MoveArgs, advice_asks
from harmonic.feedback.relocate import MoveAsk
from harmonic.feedback.service import FeedbackService
from harmonic.framework.config import load_config
from harmonic.framework.snapshot import Snapshot
from harmonic.plugins.registry import default_registry
from harmonic.signals.feedback.placement import PlacementView
from harmonic.signals.metrics import FEEDBACK_MOVES
from harmonic.testing import node, pod
from harmonic.testing.apiserver import ApiServerDouble
from tests.cluster.conftest import api, make_transport, transport
from tests.feedback.test_moves import learnt
from tests.rescheduler.helpers import pdb

__all__ = ["api", "make_transport", "transport"]

REGISTRY = default_registry()
EVICTIONS = "create pods/eviction"


class Clock:
    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now


def _node(name: str, cpu: str) -> dict[str, Any]:
    obj: dict[str, Any] = node(name).cap(cpu=cpu, memory="64Gi", pods="110").obj()
    obj.pop("kind", None)
    return obj


def _pod(name: str, on: str, cpu: str = "1", app: str = "web", **annotations: str) -> dict[str, Any]:
    obj: dict[str, Any] = (
        pod(name)
        .req(cpu=cpu, memory="1Gi")
        .label("app", app)
        .label("pod-template-hash", "5d8f7")
        .owner("ReplicaSet", f"{app}-5d8f7", uid=f"{app}-rs-uid")
        .node(on)
        .obj()
    )
    obj.pop("kind", None)
    obj["metadata"].pop("uid", None)
    if annotations:
        obj["metadata"]["annotations"] = annotations
    return obj


def load(api: ApiServerDouble, *objs: dict[str, Any]) -> None:
    for o in objs:
        if "nodeName" in o.get("spec", {}):
            api.create("pods", o)
            api.set_status("pods", o["metadata"]["name"], {"phase": "Running"}, namespace="default")
        elif o.get("apiVersion") == "policy/v1":
            api.create("poddisruptionbudgets", {k: v for k, v in o.items() if k != "kind"})
        else:
            api.create("nodes", o)


def cluster(api: ApiServerDouble, *extra: dict[str, Any]) -> None:
    """A full small node holding two web pods, a big empty one."""
    load(api, _node("small", "4"), _node("big", "16"), _pod("web-1", "small"), _pod("web-2", "small"), *extra)


def moves(transport: Any, clock: Clock | None = None, **args: Any) -> LiveMoves:
    profiles = load_config(None, REGISTRY, source="<test>").profiles
    return LiveMoves.build(
        transport, profiles, REGISTRY, MoveArgs.model_validate(args), clock=clock or Clock()
    )


def ask(name: str, why: str = "predicted to flourish on big") -> tuple[str, MoveAsk]:
    return "default/web", MoveAsk(f"default/{name}", why)


def counted(metric: Counter_ = FEEDBACK_MOVES) -> dict[str, float]:
    return {
        s.labels["outcome"]: s.value for m in metric.collect() for s in m.samples if s.name.endswith("_total")
    }


def delta(before: dict[str, float], metric: Counter_ = FEEDBACK_MOVES) -> dict[str, float]:
    return {k: v - before.get(k, 0.0) for k, v in counted(metric).items() if v != before.get(k, 0.0)}


def texts(m: LiveMoves) -> list[str]:
    return [t for _, t in m.decisions()]


def test_the_args_default_to_the_advisors_settings_and_refuse_nonsense():
    assert MoveArgs().settings() == MoveSettings()
    custom = MoveArgs.model_validate(
        {
            "minGain": 0.2,
            "restartSeconds": 60,
            "horizonSeconds": 600,
            "cooldownSeconds": 5,
            "priceNeighbours": False,
            "refillWindowSeconds": 0,
        }
    )
    assert custom.settings() == MoveSettings(0.2, 60, 600, 5, price_neighbours=False, refill_window_seconds=0)


@pytest.mark.parametrize(
    ("doc", "field"),
    [
        ({"maxPerRound": 0}, "maxPerRound"),
        ({"maxPerNode": 0}, "maxPerNode"),
        ({"horizonSeconds": 0}, "horizonSeconds"),
        ({"retrySeconds": -1}, "retrySeconds"),
        ({"maxPerPod": 1}, "maxPerPod"),
        ({"priceNeighbours": "sometimes"}, "priceNeighbours"),
        ({"refillWindowSeconds": -60}, "refillWindowSeconds"),
    ],
)
def test_bad_args_name_the_field(doc, field):
    with pytest.raises(ValidationError) as e:
        MoveArgs.model_validate(doc)
    assert e.value.errors()[0]["loc"] == (field,)


def test_an_executed_move_evicts_exactly_one_pod(api, transport):
    cluster(api)
    api.reset_stats()
    before = counted()
    m = moves(transport)
    m.round([ask("web-1"), ask("web-2")])
    assert api.stats().requests[EVICTIONS] == 1
    assert api.get("pods", "web-1", "default") is None and api.get("pods", "web-2", "default") is not None
    moved, refused = texts(m)
    assert "moved — default/web-1 evicted from small through the Eviction API" in moved
    assert "not reserved" in moved and "the what-if placed it on big" in moved
    assert "not moved (rate limit: eviction rate limit exceeded (1 per run))" in refused
    assert delta(before) == {"executed": 1, "budget": 1}


def test_a_pod_disruption_budget_with_no_disruption_left_keeps_the_pod(api, transport):
    cluster(api, pdb("web-pdb", "web", minAvailable=2))
    api.set_status("poddisruptionbudgets", "web-pdb", {"disruptionsAllowed": 0}, namespace="default")
    api.reset_stats()
    before = counted()
    m = moves(transport)
    m.round([ask("web-1")])
    # refused before asking the server: the budget is read as the Eviction API would apply it
    assert api.stats().requests[EVICTIONS] == 0 and api.get("pods", "web-1", "default") is not None
    assert (
        "not moved (Cannot evict pod as it would violate the pod's disruption budget default/web-pdb."
        in texts(m)[0]
    )
    assert delta(before) == {"pdb": 1}


def test_a_429_from_the_api_server_is_reported_and_retried_never_deleted(api, transport):
    # The controller has not written the budget's status yet: the spec allows one disruption, the
    # server (which reads only the status) none.
    cluster(api, pdb("web-pdb", "web", minAvailable=1))
    api.reset_stats()
    before = counted()
    clock = Clock()
    m = moves(transport, clock, retrySeconds=120)
    m.round([ask("web-1")])
    assert api.stats().requests[EVICTIONS] == 1 and api.get("pods", "web-1", "default") is not None
    assert (
        "eviction of default/web-1 refused (429)" in texts(m)[0] and "tried again next round" in texts(m)[0]
    )
    clock.now += 60
    m.round([])  # retried with no new ask, refused again
    assert api.stats().requests[EVICTIONS] == 2 and api.get("pods", "web-1", "default") is not None
    assert api.stats().requests["delete pods"] == 0
    api.set_status("poddisruptionbudgets", "web-pdb", {"disruptionsAllowed": 1}, namespace="default")
    clock.now += 30
    m.round([])
    assert api.get("pods", "web-1", "default") is None
    assert "moved — default/web-1" in texts(m)[-1]
    assert delta(before) == {"pdb": 2, "executed": 1}


def test_a_throttled_eviction_is_an_error_tried_again(api, transport):
    cluster(api)
    fault = api.inject(status=429, method="POST", path="/eviction$", times=1, message="too many requests")
    before = counted()
    clock = Clock()
    m = moves(transport, clock)
    m.round([ask("web-1")])
    assert fault.hits == 1 and api.get("pods", "web-1", "default") is not None
    assert "refused (429)" in texts(m)[0] and "tried again next round" in texts(m)[0]
    clock.now += 60
    m.round([])
    assert api.get("pods", "web-1", "default") is None
    assert delta(before) == {"error": 1, "executed": 1}


def test_a_refused_move_is_given_up_after_the_retry_window(api, transport):
    cluster(api, pdb("web-pdb", "web", minAvailable=1))
    clock = Clock()
    m = moves(transport, clock, retrySeconds=120)
    m.round([ask("web-1")])
    clock.now += 121
    api.reset_stats()
    m.round([])
    assert api.stats().requests[EVICTIONS] == 0
    assert "given up after 120 s of refusals" in texts(m)[-1]


def test_the_cooldown_holds_the_replacement_and_the_workload(api, transport):
    cluster(api)
    clock = Clock()
    m = moves(transport, clock)
    m.round([ask("web-1")])
    # the controller's replacement, bound where the what-if placed it
    load(api, _pod("web-3", "big"))
    clock.now += 60
    m.round([ask("web-2"), ("default/web", MoveAsk("default/web-3", "why"))])
    assert api.get("pods", "web-2", "default") is not None and api.get("pods", "web-3", "default") is not None
    log = texts(m)
    assert len(log) == 3 and all("not moved (moved within the cool-down)" in t for t in log[1:])
    clock.now += 600
    m.round([ask("web-2")])
    assert api.get("pods", "web-2", "default") is None


@pytest.mark.parametrize(
    ("limit", "refusal"),
    [
        ({"maxPerNode": 1}, "node eviction limit exceeded (1)"),
        ({"maxPerNamespace": 1}, "namespace eviction limit exceeded (1)"),
    ],
)
def test_node_and_namespace_limits_cap_a_round(api, transport, limit, refusal):
    load(
        api, _node("small", "4"), _node("big", "16"), _pod("web-1", "small"), _pod("db-1", "small", app="db")
    )
    m = moves(transport, maxPerRound=5, **limit)
    m.round([ask("web-1"), ("default/db", MoveAsk("default/db-1", "why"))])
    assert [api.get("pods", n, "default") is None for n in ("web-1", "db-1")] == [True, False]
    assert refusal in texts(m)[1]


def test_an_infeasible_resize_asks_for_a_move_where_the_resized_pod_fits(api, transport):
    load(
        api,
        _node("small", "4"),
        _node("big", "16"),
        _pod("web-1", "small", **{"harmonic.dev/resize": "auto"}),
    )
    actuator = InfeasibleResizes(transport)
    out = actuator.apply(api.get("pods", "web-1", "default") or {}, 6000, 2**30)
    assert out.state == "Infeasible"
    asks = actuator.take()
    assert [(w, a.pod, a.resources) for w, a in asks] == [("default/web", "default/web-1", (6000, 2**30))]
    m = moves(transport)
    m.round(asks)
    assert api.get("pods", "web-1", "default") is None
    [text] = texts(m)
    assert "its resize to cpu 6000m, memory 1024Mi is Infeasible there; cost a restart (30 s" in text
    assert "the what-if placed it on big" in text
    assert actuator.take() == []


def test_a_pod_of_another_scheduler_is_not_moved(api, transport):
    other = _pod("web-1", "small")
    other["spec"]["schedulerName"] = "someone-else"
    load(api, _node("small", "4"), _node("big", "16"), other)
    m = moves(transport)
    m.round([ask("web-1")])
    assert api.get("pods", "web-1", "default") is not None
    assert "its pods are placed by someone-else, not by this scheduler" in texts(m)[0]


def test_a_profile_whose_what_if_cannot_be_built_moves_nothing(api, transport):
    doc = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [
            {
                "schedulerName": "default-scheduler",
                "plugins": {
                    "multiPoint": {"enabled": [{"name": "Coscheduling"}]},
                    "queueSort": {"disabled": [{"name": "PrioritySort"}]},
                },
            }
        ],
    }
    profiles = load_config(doc, REGISTRY, source="<test>").profiles
    cluster(api)
    before = counted()
    # no "batch" service (PodGroups): Coscheduling cannot work, so neither can the what-if
    m = LiveMoves.build(transport, profiles, REGISTRY, MoveArgs(), clock=Clock())
    m.round([ask("web-1")])
    assert api.get("pods", "web-1", "default") is not None
    assert "the what-if scheduler of profile default-scheduler cannot be built" in texts(m)[0]
    assert delta(before) == {"error": 1}


# ---------------------------------------------------------------------- the loop's round, end to end


def _antagonised(api: ApiServerDouble) -> PlacementView:
    """web-1 beside a batch-memory Job on a, b empty: as the API server has it, and as the cache sees it."""
    objs = [
        _node("a", "8"),
        _node("b", "8"),
        _pod("web-1", "a"),
        _pod("scan-0", "a", cpu="4", app="scan"),
    ]
    objs[3]["metadata"]["ownerReferences"] = [
        {"apiVersion": "batch/v1", "kind": "Job", "name": "scan", "uid": "scan-uid", "controller": True}
    ]
    objs[3]["spec"]["containers"][0]["resources"]["requests"]["memory"] = "40Gi"
    load(api, *objs)
    snap = Snapshot()
    for n in ("a", "b"):
        snap.set_node(parse_node(api.get("nodes", n) or {}))
    for name in ("web-1", "scan-0"):
        p = parse_pod(api.get("pods", name, "default") or {})
        snap.add_pod(p, p.node_name)
    return PlacementView(snap)


@pytest.mark.parametrize("execute", [True, False])
def test_the_loop_moves_what_the_model_predicts_only_with_the_option(api, transport, execute):
    view = _antagonised(api)
    service = FeedbackService(learnt(3.0, 500), lambda fn: fn(view))
    service.moves = moves(transport) if execute else None
    before = counted()
    api.reset_stats()
    assert service.round(timeout=5)
    decisions = service.state()["workloads"]["default/web"]["decisions"]
    if execute:
        assert api.stats().requests[EVICTIONS] == 1 and api.get("pods", "web-1", "default") is None
        [text] = decisions
        assert "move default/web-1 from a (best: b)" in text and "gain" in text and "restart cost" in text
        assert "moved — default/web-1 evicted from a" in text and "the what-if placed it on b" in text
        assert delta(before) == {"executed": 1}
    else:
        assert api.stats().requests[EVICTIONS] == 0 and api.get("pods", "web-1", "default") is not None
        [text] = decisions
        assert text.endswith("(recommended; not executed)")
        assert delta(before) == {"recommended": 1}


def test_advice_asks_carry_the_nodes_worth_the_move(api):
    view = _antagonised(api)
    [advice] = MoveAdvisor().advise(view, learnt(3.0, 500), now=0.0)
    [(workload, a)] = advice_asks([advice])
    assert (workload, a.pod, a.nodes, a.resources) == ("default/web", "default/web-1", frozenset({"b"}), None)


# ---------------------------------------------------------------------- invariant 5, live
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    placed=st.lists(st.tuples(st.sampled_from(["web", "db"]), st.integers(0, 2)), min_size=1, max_size=6),
    allowed=st.integers(0, 2),
    per_round=st.integers(1, 4),
    per_node=st.none() | st.integers(1, 2),
    per_namespace=st.none() | st.integers(1, 3),
    order=st.randoms(use_true_random=False),
)
def test_a_round_never_evicts_past_a_budget(
    tmp_path, placed, allowed, per_round, per_node, per_namespace, order
):
    with ApiServerDouble() as server:
        load(server, *(_node(f"n{i}", "8") for i in range(3)), _node("spare", "64"))
        names = [f"{app}-{i}" for i, (app, _) in enumerate(placed)]
        load(server, *(_pod(n, f"n{at}", app=app) for n, (app, at) in zip(names, placed, strict=True)))
        load(server, pdb("web-pdb", "web", minAvailable=0))
        server.set_status(
            "poddisruptionbudgets", "web-pdb", {"disruptionsAllowed": allowed}, namespace="default"
        )
        server.reset_stats()
        kubeconfig = server.kubeconfig(tmp_path / f"kubeconfig-{order.random()}")
        conn = Transport(load_client(str(kubeconfig)), qps=-1, burst=100, timeout=10.0)
        limits = {"maxPerRound": per_round, "maxPerNode": per_node, "maxPerNamespace": per_namespace}
        m = moves(conn, **{k: v for k, v in limits.items() if v is not None})
        order.shuffle(names)
        before = counted()
        m.round([(f"default/{n.split('-')[0]}", MoveAsk(f"default/{n}", "why")) for n in names])
        gone = [n for n in names if server.get("pods", n, "default") is None]
        evicted = server.stats().requests[EVICTIONS]
    by_name = {f"{app}-{i}": (app, at) for i, (app, at) in enumerate(placed)}
    per_node_count = Counter(by_name[n][1] for n in gone)
    assert evicted == len(gone) <= min(per_round, per_namespace or per_round)
    assert sum(1 for n in gone if by_name[n][0] == "web") <= allowed
    assert per_node is None or max(per_node_count.values(), default=0) <= per_node
    # every ask has exactly one outcome, counted
    assert sum(delta(before).values()) == len(names)
    assert delta(before).get("executed", 0) == len(gone)
