import pytest

from harmonic.api.errors import ObjectError
from harmonic.api.pdb import parse_pdb
from harmonic.api.pod import parse_pod
from harmonic.testing import pod


def pdb(selector, allowed=1, ns="default", **status):
    raw = {
        "metadata": {"name": "b", "namespace": ns},
        "spec": {},
        "status": {"disruptionsAllowed": allowed, **status},
    }
    if selector is not None:
        raw["spec"]["selector"] = selector
    return parse_pdb(raw)


def test_fields():
    b = pdb(
        {"matchLabels": {"app": "web"}}, 2, disruptedPods={"w-1": "2024-01-01T00:00:00Z"}, desiredHealthy=3
    )
    assert (b.key, b.disruptions_allowed, b.disrupted_pods, b.desired_healthy) == ("default/b", 2, {"w-1"}, 3)


def test_selector_semantics_of_eviction_and_preemption_differ_as_upstream():
    web = parse_pod(pod("w").label("app", "web").obj())
    bare = parse_pod(pod("x").obj())
    other_ns = parse_pod(pod("o").ns("other").label("app", "web").obj())
    empty, missing, match = pdb({}), pdb(None), pdb({"matchLabels": {"app": "web"}})
    # Eviction API (policy/v1): an empty selector selects the whole namespace, a missing one nothing.
    assert (empty.covers(web), empty.covers(bare), missing.covers(web)) == (True, True, False)
    assert (match.covers(web), match.covers(other_ns)) == (True, False)
    # Preemption: empty or missing selectors and unlabelled pods match nothing.
    assert (empty.guards_against_preemption(web), missing.guards_against_preemption(web)) == (False, False)
    assert (match.guards_against_preemption(web), match.guards_against_preemption(other_ns)) == (True, False)


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        ({"metadata": {}}, "metadata.name"),
        ({"metadata": {"name": "b"}, "status": {"disruptionsAllowed": "1"}}, "status.disruptionsAllowed"),
        (
            {"metadata": {"name": "b"}, "spec": {"selector": {"matchExpressions": [{"key": "a"}]}}},
            "spec.selector",
        ),
        ({"metadata": {"name": "b"}, "status": {"disruptedPods": ["x"]}}, "status.disruptedPods"),
    ],
)
def test_malformed_budgets_name_the_field(raw, field):
    with pytest.raises(ObjectError) as e:
        parse_pdb(raw)
    assert field in str(e.value)
