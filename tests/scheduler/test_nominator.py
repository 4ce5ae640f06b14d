from harmonic.api.pod import parse_pod
from harmonic.scheduler.nominator import Nominator
from harmonic.testing import pod


def P(name, nominated="", **spec):
    b = pod(name)
    if nominated:
        b = b.nominated(nominated)
    return parse_pod(b.obj())


def names(pods):
    return [p.name for p in pods]


def test_add_uses_status_or_override_and_empty_clears():
    n = Nominator()
    n.add(P("a", "n1"))
    n.add(P("b"), "n1")
    n.add(P("c", "n2"), "n3")
    assert names(n.nominated_pods_for_node("n1")) == ["a", "b"]
    assert names(n.nominated_pods_for_node("n3")) == ["c"]
    assert n.nominated_pods_for_node("n2") == ()
    n.add(P("a", "n1"), "")
    assert names(n.nominated_pods_for_node("n1")) == ["b"]
    assert len(n) == 2
    assert sorted(n.nodes()) == ["n1", "n3"]


def test_readding_moves_the_pod_never_duplicates_it():
    n = Nominator()
    n.add(P("a"), "n1")
    n.add(P("a"), "n1")
    n.add(P("a"), "n2")
    assert n.nominated_pods_for_node("n1") == ()
    assert names(n.nominated_pods_for_node("n2")) == ["a"]
    assert n.node_of("uid-a") == "n2"


def test_update_keeps_an_in_memory_nomination_until_the_api_catches_up():
    n = Nominator()
    n.add(P("a"), "n1")  # set by the scheduler; the pod object has no nominatedNodeName yet
    n.update(P("a"))  # an unrelated update, still without it
    assert n.node_of("uid-a") == "n1"
    n.update(P("a", "n1"))  # the API update arrives
    assert n.node_of("uid-a") == "n1"
    n.update(P("a"))  # then the nomination is cleared through the API
    assert n.node_of("uid-a") is None


def test_update_of_an_unknown_pod_follows_its_status():
    n = Nominator()
    n.update(P("a", "n2"))
    assert n.node_of("uid-a") == "n2"
    n.update(P("b"))
    assert n.node_of("uid-b") is None


def test_delete():
    n = Nominator()
    n.add(P("a"), "n1")
    n.delete(P("a"))
    n.delete(P("zzz"))
    assert len(n) == 0 and n.nodes() == []
