"""The in-memory cluster's Eviction API: PodDisruptionBudgets are honoured."""

from harmonic.api.pod import parse_pod
from harmonic.cluster.memory import InMemoryCluster
from harmonic.testing import node, pod


def cluster_with(allowed, *extra_pdbs):
    c = InMemoryCluster()
    c.add_node(node("n").obj())
    for name in ("w1", "w2"):
        c.create_pod(pod(name).label("app", "web").node("n").obj())
    c.create_pod(pod("pending").label("app", "web").obj())
    c.add_pdb(
        {
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {"selector": {"matchLabels": {"app": "web"}}},
            "status": {"disruptionsAllowed": allowed, "desiredHealthy": 2, "currentHealthy": 2},
        }
    )
    for raw in extra_pdbs:
        c.add_pdb(raw)
    return c


def evict(c, name):
    return c.evict(parse_pod(c.pods[f"default/{name}"]), "Preempted by pod x on node n")


def test_eviction_uses_up_the_budget_then_is_refused_with_429():
    c = cluster_with(1)
    assert evict(c, "w1") is None
    assert "default/w1" not in c.pods
    (budget,) = c.list_pdbs()
    assert budget.disruptions_allowed == 0 and budget.disrupted_pods == {"w1"}
    st = evict(c, "w2")
    assert st is not None
    assert st.message.startswith(
        "429 TooManyRequests: Cannot evict pod as it would violate the pod's disruption budget."
    )
    assert "The disruption budget web needs 2 healthy pods and has 2 currently" in st.message
    assert "default/w2" in c.pods
    assert [e.name for e in c.events if e.reason == "Preempted"] == ["w1"]


def test_pods_that_are_not_running_are_not_guarded():
    c = cluster_with(0)
    assert evict(c, "pending") is None


def test_more_than_one_budget_is_an_error_and_unknown_pods_are_not_found():
    c = cluster_with(
        5, {"metadata": {"name": "all"}, "spec": {"selector": {}}, "status": {"disruptionsAllowed": 5}}
    )
    st = evict(c, "w1")
    assert st is not None and "more than one PodDisruptionBudget" in st.message
    c.delete_pdb("default", "all")
    assert evict(c, "w1") is None
    assert c.evict(parse_pod(pod("ghost").obj()), "x").message == "pod default/ghost not found"


def test_negative_budget_is_forbidden():
    c = cluster_with(-1)
    assert "pdb disruptions allowed is negative" in evict(c, "w1").message
